// SPDX-License-Identifier: MIT
/*
 * cli/alloy.c - the alloy command: dispatch to a subcommand.
 */
#include <string.h>

#include <alloy/alloy.h>

#include "cli.h"

static const struct cli_command *const commands[] = {
	&cmd_list,   &cmd_conf, &cmd_demo, &cmd_bench, &cmd_report,
	&cmd_replay, &cmd_run,	&cmd_ctl,  &cmd_top,
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
