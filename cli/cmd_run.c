// SPDX-License-Identifier: MIT
/*
 * cli/cmd_run.c - `alloy run`: an unmodified program with its memory
 * through alloy (docs/PRELOAD.md).
 *
 * The command checks the configuration in its own process (the same
 * parser, modules and plugins the program will get), puts the front,
 * liballoy_preload.so, first in LD_PRELOAD and the settings in ALLOY_CONF,
 * and execs the program.  Both variables are inherited, so every child the
 * program forks or execs runs with the front too.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <alloy/alloy.h>

#include "cli.h"

#define PRELOAD_NAME "liballoy_preload.so"

/* What a shell says for a program it cannot run. */
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND	 127

/*
 * jemalloc's library uses initial-exec TLS (2.6 KiB), which a library
 * loaded after start can only have from glibc's optional static TLS
 * reserve (512 bytes by default): the jemalloc module would fail to load
 * with "cannot allocate memory in static TLS block".  4096 bytes hold it
 * and leave the program the default 512 for what it loads itself
 * (docs/PRELOAD.md has the measurements).
 */
#define STATIC_TLS_TUNABLE "glibc.rtld.optional_static_tls"
#define STATIC_TLS_BYTES   "4096"

/* The leak report of a foreign program: a count and the top sites. */
#define FOREIGN_LEAKS "leaks:summary"

struct run_opts {
	const char *conf, *report, *trace;
};

/* liballoy_preload.so lies next to liballoy, in the build tree or not. */
static int preload_path(char *buf, size_t len)
{
	Dl_info info;
	const char *slash;

	if (!dladdr((void *)alloy_version, &info) || !info.dli_fname ||
	    !(slash = strrchr(info.dli_fname, '/'))) {
		fprintf(stderr, "alloy run: cannot tell where liballoy is\n");
		return -1;
	}
	if (snprintf(buf, len, "%.*s/%s", (int)(slash - info.dli_fname),
		     info.dli_fname, PRELOAD_NAME) >= (int)len ||
	    access(buf, R_OK)) {
		fprintf(stderr,
			"alloy run: %s not found next to liballoy (%s)\n",
			PRELOAD_NAME, info.dli_fname);
		return -1;
	}
	/* ld.so splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(buf, " :")) {
		fprintf(stderr,
			"alloy run: the path of the front, \"%s\", has a space or a colon, which LD_PRELOAD cannot carry\n",
			buf);
		return -1;
	}
	return 0;
}

/* Append ",key:value" (or "key:value") to the configuration in cfg. */
static int conf_add(char *cfg, size_t len, const char *key, const char *value)
{
	size_t at = strlen(cfg);
	int n;

	if (key && strchr(value, ',')) {
		fprintf(stderr,
			"alloy run: --%s %s: a path with a comma cannot go into ALLOY_CONF\n",
			key, value);
		return -1;
	}
	n = snprintf(cfg + at, len - at, "%s%s%s%s", at ? "," : "",
		     key ? key : "", key ? ":" : "", value);
	if (n < 0 || (size_t)n >= len - at) {
		fprintf(stderr,
			"alloy run: the configuration is longer than ALLOY_CONF allows (%d bytes)\n",
			ALLOY_CONF_MAX_LENGTH);
		return -1;
	}
	return 0;
}

/*
 * alloy_init() with its own lines on stderr held back: the errors are
 * said once, below, with what they mean for the program.
 */
static int init_quietly(void)
{
	int saved = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
	int nerr;

	fflush(stderr);
	if (saved >= 0 && null >= 0)
		dup2(null, STDERR_FILENO);
	nerr = alloy_init();
	fflush(stderr);
	if (saved >= 0 && null >= 0)
		dup2(saved, STDERR_FILENO);
	if (saved >= 0)
		close(saved);
	if (null >= 0)
		close(null);
	return nerr;
}

/*
 * ALLOY_CONF for the program: leaks:summary, then the environment's, then
 * --conf, then --report and --trace, then run_pid (later items win).
 * Checked here, where a bad part is a usage error: alloy's own start
 * prints one line for each.
 *
 * run_pid is this process's id, which the program keeps across the exec:
 * its report, trace and log take their paths as given, and every process
 * it starts writes PATH.PID instead of truncating them or mixing events
 * into them (docs/PRELOAD.md, "A report per process").
 *
 * leaks:summary first: a program nobody wrote against alloy keeps most of
 * what it allocates until exit without freeing it, and a list of every
 * such block would bury the report; the count and the sites holding the
 * most say what a leak list would.  An own leaks item (leaks:full) comes
 * later and wins.
 */
static int set_conf(const struct run_opts *o, const char *prog)
{
	const char *env = getenv("ALLOY_CONF");
	char cfg[ALLOY_CONF_MAX_LENGTH + 1] = "", pid[24];
	int nerr;

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());

	/* A nested alloy run finds it first in the environment's already. */
	if ((!env || strncmp(env, FOREIGN_LEAKS, strlen(FOREIGN_LEAKS))) &&
	    conf_add(cfg, sizeof(cfg), NULL, FOREIGN_LEAKS))
		return EXIT_USAGE;
	if ((env && *env && conf_add(cfg, sizeof(cfg), NULL, env)) ||
	    (o->conf && *o->conf &&
	     conf_add(cfg, sizeof(cfg), NULL, o->conf)) ||
	    (o->report && conf_add(cfg, sizeof(cfg), "report", o->report)) ||
	    (o->trace && conf_add(cfg, sizeof(cfg), "trace", o->trace)) ||
	    conf_add(cfg, sizeof(cfg), "run_pid", pid))
		return EXIT_USAGE;
	if (setenv("ALLOY_CONF", cfg, 1)) {
		perror("alloy run: setenv");
		return EXIT_PROBLEM;
	}
	nerr = init_quietly();
	for (int i = 0; i < nerr; i++)
		fprintf(stderr, "alloy run: ALLOY_CONF: %s; not running %s\n",
			alloy_conf_error(i), prog);
	return nerr ? EXIT_USAGE : 0;
}

/* Put path first in LD_PRELOAD, keeping what was there. */
static int set_preload(const char *path)
{
	const char *old = getenv("LD_PRELOAD");
	char *val;
	int rc;

	if (!old || !*old)
		return setenv("LD_PRELOAD", path, 1);
	if (!strncmp(old, path, strlen(path)) &&
	    (!old[strlen(path)] || strchr(" :", old[strlen(path)])))
		return 0; /* already first: a nested alloy run */
	if (asprintf(&val, "%s:%s", path, old) < 0)
		return -1;
	rc = setenv("LD_PRELOAD", val, 1);
	free(val);
	return rc;
}

/* Room in static TLS for the jemalloc module, unless the user said. */
static int set_tunables(void)
{
	const char *old = getenv("GLIBC_TUNABLES");
	char *val;
	int rc;

	if (old && strstr(old, STATIC_TLS_TUNABLE))
		return 0;
	if (asprintf(&val, "%s%s%s=%s", old && *old ? old : "",
		     old && *old ? ":" : "", STATIC_TLS_TUNABLE,
		     STATIC_TLS_BYTES) < 0)
		return -1;
	rc = setenv("GLIBC_TUNABLES", val, 1);
	free(val);
	return rc;
}

/* What parse() returns instead of the program's index. */
#define PARSE_NO_PROG -1 /* no program named */
#define PARSE_BAD     -2 /* a bad option (message printed) */
#define PARSE_HELP    -3 /* -h or --help among alloy's options */

/*
 * Options up to the program; its index in argv, or a PARSE_ code.  -h and
 * --help are looked for here, not by the dispatcher, and only before the
 * program: after it they are the program's (alloy run -- grep -h ...).
 */
static int parse(int argc, char **argv, struct run_opts *o)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char **slot = NULL;
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			return i + 1 < argc ? i + 1 : PARSE_NO_PROG;
		if (a[0] != '-')
			return i;
		if (!strcmp(a, "-h") || !strcmp(a, "--help"))
			return PARSE_HELP;
		if (!strcmp(a, "--conf"))
			slot = &o->conf;
		else if (!strcmp(a, "--report"))
			slot = &o->report;
		else if (!strcmp(a, "--trace"))
			slot = &o->trace;
		if (!slot) {
			cli_usage_error(&cmd_run, "unknown option \"%s\"", a);
			return PARSE_BAD;
		}
		if (++i >= argc) {
			cli_usage_error(&cmd_run, "%s needs a value", a);
			return PARSE_BAD;
		}
		*slot = argv[i];
	}
	return PARSE_NO_PROG;
}

static int run_run(int argc, char **argv)
{
	struct run_opts o = { 0 };
	char preload[PATH_MAX];
	int prog = parse(argc, argv, &o), rc;

	if (prog == PARSE_HELP) {
		fputs(cmd_run.usage, stdout);
		return 0;
	}
	if (prog == PARSE_BAD)
		return EXIT_USAGE;
	if (prog < 0)
		return cli_usage_error(&cmd_run, "no program to run");
	rc = set_conf(&o, argv[prog]);
	if (rc)
		return rc;
	if (preload_path(preload, sizeof(preload)))
		return EXIT_PROBLEM;
	if (set_preload(preload) || set_tunables()) {
		perror("alloy run: setting the environment");
		return EXIT_PROBLEM;
	}
	fflush(NULL);
	execvp(argv[prog], argv + prog);
	rc = errno;
	fprintf(stderr, "alloy run: %s: %s\n", argv[prog],
		rc == ENOENT ? "command not found" : strerror(rc));
	return rc == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}

const struct cli_command cmd_run = {
	.name = "run",
	.summary = "run an unmodified program with its memory through alloy",
	.usage =
		"usage: alloy run [--conf CONF] [--report FILE] [--trace FILE] [--] PROG [ARGS...]\n"
		"\n"
		"Runs PROG with alloy's LD_PRELOAD front (liballoy_preload.so): its\n"
		"malloc, free, calloc, realloc, the aligned variants and\n"
		"malloc_usable_size go to alloy's CPU default allocator.  Children\n"
		"it forks or execs inherit the front and the settings.\n"
		"\n"
		"  --conf CONF    ALLOY_CONF items for the program (cpu:jemalloc,\n"
		"                 cpu:debug, backtrace:1, ...), after the environment's\n"
		"  --report FILE  the exit report: a path, stderr or stdout; %p in a\n"
		"                 path is the process id, a report per process\n"
		"  --trace FILE   the event trace (docs/TRACE-FORMAT.md)\n"
		"\n"
		"Options end at PROG: what follows is PROG's, -h and --help too.\n"
		"\n"
		"Without %p, FILE is PROG's own: each process PROG starts writes\n"
		"FILE.PID (ALLOY_CONF's run_pid names PROG's process).\n"
		"\n"
		"Blocks live at exit are reported as a count and the sites holding\n"
		"the most (with backtrace:1); --conf leaks:full lists each.\n"
		"A bad configuration is refused before the program runs (exit 2).\n"
		"Exit status: the program's; 127 when it is not found, 126 when it\n"
		"cannot be run, as a shell says.  Limits (static binaries, programs\n"
		"with their own malloc): docs/PRELOAD.md.\n",
	.run = run_run,
	.own_help = true,
};
