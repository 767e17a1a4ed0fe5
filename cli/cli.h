/* SPDX-License-Identifier: MIT */
/*
 * cli/cli.h - the subcommands of the alloy command.
 *
 * Exit codes, the same for every subcommand:
 *   0  success
 *   1  the command ran and found a problem (bad ALLOY_CONF for `conf`,
 *      a failed operation, a malformed input file)
 *   2  usage error (unknown command or option, missing argument)
 */
#ifndef ALLOY_CLI_CLI_H
#define ALLOY_CLI_CLI_H

#include <stdbool.h>
#include <stdio.h>

#define EXIT_PROBLEM 1
#define EXIT_USAGE   2

struct cli_command {
	const char *name;
	const char *summary; /* one line for `alloy --help` */
	const char *usage;   /* full help for `alloy CMD --help` */
	int (*run)(int argc, char **argv);
	/*
	 * The command finds -h and --help among its options itself: where
	 * they end is its own to say (run: at the program, whose arguments
	 * are the program's, -h and --help included).
	 */
	bool own_help;
};

extern const struct cli_command cmd_list;
extern const struct cli_command cmd_conf;
extern const struct cli_command cmd_demo;
extern const struct cli_command cmd_bench;
extern const struct cli_command cmd_report;
extern const struct cli_command cmd_replay;
extern const struct cli_command cmd_run;
extern const struct cli_command cmd_ctl;
extern const struct cli_command cmd_top;

/*
 * True if argv has --help or -h before any "--"; the command then prints
 * its usage.  Past a "--" nothing is looked at: the commands that come
 * here take no operands after one, and refuse it as a usage error.
 */
bool cli_wants_help(int argc, char **argv);

/* Print "alloy CMD: message" and the usage hint; returns EXIT_USAGE. */
int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* ALLOY_CLI_CLI_H */
