// SPDX-License-Identifier: MIT
/*
 * cli/cmd_ctl.c - `alloy ctl PID COMMAND`: one request to a running
 * program's control socket (docs/PRELOAD.md, "Controlling a running
 * program").
 *
 * The program checks and refuses what it does not understand; the
 * client only makes a relative trace path absolute, since the program's
 * working directory is not the caller's.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "ctl_client.h"

/* The request line: the words joined, a relative trace FILE made absolute. */
static int build(int argc, char **argv, char *out, size_t len)
{
	size_t o = 0;

	for (int i = 0; i < argc; i++) {
		char abs[PATH_MAX + 1];
		const char *w = argv[i];
		int n;

		if (i == 2 && !strcmp(argv[0], "trace") &&
		    !strcmp(argv[1], "start") && w[0] != '/' &&
		    strcmp(w, "stderr") && strcmp(w, "stdout")) {
			if (!getcwd(abs, sizeof(abs) - 1) ||
			    strlen(abs) + strlen(w) + 2 > sizeof(abs))
				return -1;
			strcat(abs, "/");
			strcat(abs, w);
			w = abs;
		}
		n = snprintf(out + o, len - o, "%s%s", i ? " " : "", w);
		if (n < 0 || (size_t)n >= len - o)
			return -1;
		o += (size_t)n;
	}
	return 0;
}

static int run_ctl(int argc, char **argv)
{
	struct ctl_reply r;
	struct ctl_conn c;
	char request[4096], err[1024];
	char *end;
	long pid;
	int rc;

	if (argc < 3)
		return cli_usage_error(&cmd_ctl, "needs a PID and a COMMAND");
	pid = strtol(argv[1], &end, 10);
	if (*end || pid <= 0)
		return cli_usage_error(&cmd_ctl, "\"%s\" is not a process id",
				       argv[1]);
	if (build(argc - 2, argv + 2, request, sizeof(request)))
		return cli_usage_error(&cmd_ctl, "the request is too long");
	if (ctl_connect(&c, pid, err, sizeof(err))) {
		fprintf(stderr, "alloy ctl: %s\n", err);
		return EXIT_PROBLEM;
	}
	rc = ctl_request(&c, request, &r);
	ctl_close(&c);
	if (r.body)
		fwrite(r.body, 1, r.body_len, stdout);
	free(r.body);
	if (rc || !r.ok) {
		fprintf(stderr, "alloy ctl: %ld: %s\n", pid, r.status);
		return EXIT_PROBLEM;
	}
	if (!r.body_len)
		printf("%s\n", r.status);
	return 0;
}

const struct cli_command cmd_ctl = {
	.name = "ctl",
	.summary = "control a running program: swap, trace, report",
	.usage =
		"usage: alloy ctl PID COMMAND [ARGS]\n"
		"\n"
		"Sends one command to process PID, a program under `alloy run` or\n"
		"`python3 -m alloy` (or one that called alloy_control_start()),\n"
		"over its control socket, and prints the answer.\n"
		"\n"
		"Commands:\n"
		"  swap DEVICE:ALLOCATOR   new blocks of DEVICE from ALLOCATOR (loaded\n"
		"                          as a module if needed); old blocks still go\n"
		"                          back to their maker\n"
		"  trace start FILE        write a trace from now on (a relative FILE is\n"
		"                          taken from this directory); trace stop ends it\n"
		"  backtrace on|off        record each block's call stack, or stop\n"
		"  report [--at peak|now] [--format text|json]\n"
		"                          the program's reporter: what is live now (the\n"
		"                          default), or the peaks\n"
		"  conf                    the program's effective settings and defaults\n"
		"  reset-peaks             every peak set to the current value\n"
		"  stats                   one sample of what `alloy top` shows\n"
		"\n"
		"Exit status: 0 done, 1 refused or failed (the reason on stderr),\n"
		"2 usage error.\n",
	.run = run_ctl,
};
