// SPDX-License-Identifier: MIT
/*
 * tools/alloy.c - the alloy command: dispatch to a subcommand.
 */
#include <stdarg.h>
#include <string.h>

#include <alloy/alloy.h>

#include "cli.h"

static const struct cli_command *const commands[] = {
	&cmd_list,   &cmd_conf,	  &cmd_demo, &cmd_bench,
	&cmd_report, &cmd_replay, &cmd_run,
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_help(FILE *out)
{
	fprintf(out,
		"usage: alloy COMMAND [OPTIONS]\n"
		"\n"
		"alloy %s - pluggable memory allocators for tensor runtimes.\n"
		"\n"
		"Commands:\n",
		alloy_version());
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i]->name,
			commands[i]->summary);
	fprintf(out,
		"\n"
		"`alloy COMMAND --help` describes one command.\n"
		"Environment: ALLOY_CONF (settings), ALLOY_PLUGINS (modules to load).\n"
		"Exit status: 0 success, 1 a problem was found, 2 usage error.\n");
}

/*
 * The search stops at "--": no command that comes here takes operands
 * after one, so what follows is no request for help, and the command
 * then refuses the "--" as a usage error.
 */
bool cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return true;
	return false;
}

int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "alloy %s: ", cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry `alloy %s --help`.\n", cmd->name);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		print_help(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		print_help(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("alloy %s\n", alloy_version());
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], commands[i]->name) != 0)
			continue;
		if (!commands[i]->own_help &&
		    cli_wants_help(argc - 1, argv + 1)) {
			fputs(commands[i]->usage, stdout);
			return 0;
		}
		return commands[i]->run(argc - 1, argv + 1);
	}
	fprintf(stderr, "alloy: unknown command \"%s\"\n", argv[1]);
	print_help(stderr);
	return EXIT_USAGE;
}
