// SPDX-License-Identifier: MIT
/*
 * cli/cli.c - what every subcommand shares: finding a request for help
 * and saying what was wrong with the command line.
 *
 * Apart from alloy.c, which names every subcommand, so that a subcommand
 * and the dispatcher never call each other both ways.
 */
#include <stdarg.h>
#include <string.h>

#include "cli.h"

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
