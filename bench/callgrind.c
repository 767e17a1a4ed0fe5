// SPDX-License-Identifier: MIT
/*
 * bench/callgrind.c - instructions per alloc+free pair, counted by
 * valgrind's callgrind in a child run of this very program.
 *
 * perf's instruction counter is not available on every machine (it is
 * not on the project's VM); callgrind counts instructions anywhere, at
 * some 50 times the run time, which only the loops being counted pay.
 *
 * The parent runs `valgrind --tool=callgrind ... alloy bench
 * --callgrind-child NAME`.  The child warms each case up, then calls
 * bench_cg_measure() twice, for pairs and for 2 x pairs: callgrind zeroes
 * its counts on entering that function (--zero-before) and writes them
 * out on leaving it (--dump-after), one file per call, in order.  The
 * difference of a case's two dumps divided by pairs (and threads) is its
 * cost per pair, without what the run costs once (thread start, first-use
 * set-up, lazy binding).
 *
 * Counting is on only inside bench_cg_measure and bench_cg_thread (the
 * body of each extra thread): --toggle-collect flips it on entry and exit,
 * per thread.  It is flipped off again inside functions named bench_noop_*
 * (the no-op allocator of bench core), so that their own instructions are
 * left out of the framework's figure.  The names are looked up in the
 * program's symbol table: a stripped alloy yields no dumps and says so.
 *
 * A case may count alloy's own code only (COUNT_ALLOY): the instructions
 * of liballoy and of the fast paths its public headers inline into the
 * caller, told apart by the object (ob=) and source file (fl=, fi=, fe=)
 * callgrind attributes each cost line to - the benchmark loop's own
 * counting, touching and checking drop out, as they would not with an
 * "empty loop" subtracted, whose code is never quite the same.  Where the
 * compiler interleaves inlined header code with the caller's, the line
 * table may give an instruction or two to either side; liballoy's own
 * (COUNT_LIBALLOY) has no such seam.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include "bench.h"

extern char **environ;

/* Called by name from valgrind's options: keep them out-of-line. */
__attribute__((noinline, noclone, used)) void
bench_cg_measure(const struct bench_cg_case *c, long pairs);
__attribute__((noinline, noclone, used)) void
bench_cg_thread(void (*fn)(void *), void *arg);

void bench_cg_measure(const struct bench_cg_case *c, long pairs)
{
	c->run(c, pairs);
	/* Code after the call: no tail call, which callgrind would miss. */
	__asm__ volatile("" ::: "memory");
}

void bench_cg_thread(void (*fn)(void *), void *arg)
{
	fn(arg);
	__asm__ volatile("" ::: "memory");
}

struct cg_thread {
	pthread_t tid;
	void (*fn)(void *);
	void *arg;
};

static void *cg_thread_main(void *p)
{
	struct cg_thread *t = p;

	bench_cg_thread(t->fn, t->arg);
	return NULL;
}

int bench_cg_threads(int threads, void (*fn)(void *), void *arg)
{
	struct cg_thread t[16];
	int started = 0, rc = 0;

	if (threads < 1 || threads > 16)
		return -1;
	for (; started < threads; started++) {
		t[started] = (struct cg_thread){ .fn = fn, .arg = arg };
		if (pthread_create(&t[started].tid, NULL, cg_thread_main,
				   &t[started])) {
			rc = -1;
			break;
		}
	}
	while (started-- > 0)
		pthread_join(t[started].tid, NULL);
	return rc;
}

static long case_pairs(const struct bench_cg_case *c)
{
	return c->pairs ? c->pairs : BENCH_CG_PAIRS;
}

int bench_cg_cases(const struct bench_cg_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct bench_cg_case *c = &cases[i];

		c->run(c, case_pairs(c));
		bench_cg_measure(c, case_pairs(c));
		bench_cg_measure(c, 2 * case_pairs(c));
	}
	return 0;
}

/* A name of the dump: "(id) name" defines id, "(id)" refers to it. */
#define MAX_IDS 8192

static const char *dump_name(char **names, const char *ref)
{
	char *end;
	long id = strtol(ref + 1, &end, 10);

	if (ref[0] != '(' || *end != ')' || id < 0 || id >= MAX_IDS)
		return ref;
	if (end[1] == ' ') {
		free(names[id]);
		names[id] = strdup(end + 2);
		names[id][strcspn(names[id], "\n")] = '\0';
	}
	return names[id] ? names[id] : "";
}

static bool counts(enum bench_count count, const char *object, const char *file)
{
	if (strstr(object, "/liballoy."))
		return true;
	return count == COUNT_ALLOY && strstr(file, "/include/alloy/");
}

/*
 * The self cost of alloy's code in one dump (see the top of this file):
 * cost lines under an ob= of liballoy or a source file of alloy's public
 * headers; the line after calls= is the callee's inclusive cost, which is
 * counted where the callee's own lines are.  -1 if the dump is unreadable.
 */
static double read_alloy_cost(const char *path, enum bench_count count)
{
	static char *objects[MAX_IDS], *files[MAX_IDS];
	const char *object = "", *fn_file = "", *file = "";
	FILE *f = fopen(path, "r");
	bool call_cost = false;
	char line[4096];
	double sum = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "ob=", 3)) {
			object = dump_name(objects, line + 3);
		} else if (!strncmp(line, "fl=", 3)) {
			fn_file = file = dump_name(files, line + 3);
		} else if (!strncmp(line, "fi=", 3) ||
			   !strncmp(line, "fe=", 3)) {
			file = dump_name(files, line + 3);
		} else if (!strncmp(line, "cfi=", 4) ||
			   !strncmp(line, "cfl=", 4)) {
			dump_name(files, line + 4);
		} else if (!strncmp(line, "cob=", 4)) {
			dump_name(objects, line + 4);
		} else if (!strncmp(line, "fn=", 3)) {
			file = fn_file;
		} else if (!strncmp(line, "calls=", 6)) {
			call_cost = true;
		} else if (strchr("0123456789+-*", line[0])) {
			char *last = strrchr(line, ' ');

			if (!call_cost && last && counts(count, object, file))
				sum += strtod(last + 1, NULL);
			call_cost = false;
		}
	}
	fclose(f);
	return sum;
}

/* The "totals:" figure of one dump, or alloy's part; -1 if none. */
static double read_cost(const char *path, enum bench_count count)
{
	char line[512];
	double v = -1;
	FILE *f;

	if (count != COUNT_ALL)
		return read_alloy_cost(path, count);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "totals:", 7)) {
			v = strtod(line + 7, NULL);
			break;
		}
	fclose(f);
	return v;
}

/* The last lines of the child's output, to show why it failed. */
static void print_tail(const char *path)
{
	FILE *f = fopen(path, "r");
	char lines[6][256] = { { 0 } };
	int n = 0;

	if (!f)
		return;
	while (fgets(lines[n % 6], sizeof(lines[0]), f))
		n++;
	fclose(f);
	for (int i = n > 6 ? n - 6 : 0; i < n; i++)
		fprintf(stderr, "    %s", lines[i % 6]);
}

/* Run the child under callgrind with its output in dir; 0 or -1. */
static int run_child(const char *bench, const char *dir)
{
	char exe[PATH_MAX], out[PATH_MAX + 64], log[PATH_MAX + 16];
	char out_opt[PATH_MAX + 96];
	char *argv[] = {
		"valgrind",
		"--tool=callgrind",
		out_opt,
		"--zero-before=bench_cg_measure",
		"--dump-after=bench_cg_measure",
		"--toggle-collect=bench_cg_measure",
		"--toggle-collect=bench_cg_thread",
		"--toggle-collect=bench_noop_*",
		exe,
		"bench",
		"--callgrind-child",
		(char *)bench,
		NULL,
	};
	posix_spawn_file_actions_t fa;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int status, rc;
	pid_t pid;

	if (len <= 0) {
		fprintf(stderr, "  instructions: /proc/self/exe: %s\n",
			strerror(errno));
		return -1;
	}
	exe[len] = '\0';
	snprintf(out, sizeof(out), "%s/cg.out", dir);
	snprintf(out_opt, sizeof(out_opt), "--callgrind-out-file=%s", out);
	snprintf(log, sizeof(log), "%s/log", dir);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, log,
					 O_WRONLY | O_CREAT | O_TRUNC, 0600);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);
	rc = posix_spawnp(&pid, "valgrind", &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (rc) {
		bench_note(
			"instructions: not counted: cannot run valgrind (%s); install it for instruction counts (time ratios only)",
			strerror(rc));
		return -1;
	}
	if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
	    WEXITSTATUS(status)) {
		/*
		 * posix_spawnp said valgrind itself was found; 127 is its
		 * child that could not start (or a shell's "not found"):
		 * the log says which.
		 */
		if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
			bench_note(
				"instructions: not counted: the callgrind run of %s could not start its program (exit 127; time ratios only):",
				bench);
		else
			fprintf(stderr,
				"  instructions: the callgrind run of %s failed:\n",
				bench);
		print_tail(log);
		return -1;
	}
	return 0;
}

/* Per-pair counts from dumps 1 .. 2n of the child; 0, or -1 if missing. */
static int read_dumps(const char *dir, const struct bench_cg_case *cases,
		      size_t n, double *out)
{
	char path[PATH_MAX + 64];

	for (size_t i = 0; i < n; i++) {
		double once, twice;
		int threads = cases[i].threads ? cases[i].threads : 1;

		snprintf(path, sizeof(path), "%s/cg.out.%zu", dir, 2 * i + 1);
		once = read_cost(path, cases[i].count);
		snprintf(path, sizeof(path), "%s/cg.out.%zu", dir, 2 * i + 2);
		twice = read_cost(path, cases[i].count);
		if (once < 0 || twice < 0) {
			bench_note(
				"instructions: not counted: callgrind wrote no dump for \"%s\" (is the alloy binary stripped?)",
				cases[i].label);
			return -1;
		}
		out[i] = twice > once
				 ? (twice - once) / (double)threads /
					   (double)(cases[i].pairs
							    ? cases[i].pairs
							    : BENCH_CG_PAIRS)
				 : NAN;
	}
	return 0;
}

/* Remove the child's files and dir; keep them when ALLOY_BENCH_KEEP_CG. */
static void remove_dir(const char *dir, size_t ndumps)
{
	char path[PATH_MAX + 64];

	if (getenv("ALLOY_BENCH_KEEP_CG")) {
		bench_note("instructions: dumps kept in %s", dir);
		return;
	}
	for (size_t i = 0; i <= ndumps + 1; i++) {
		if (i)
			snprintf(path, sizeof(path), "%s/cg.out.%zu", dir, i);
		else
			snprintf(path, sizeof(path), "%s/cg.out", dir);
		unlink(path);
	}
	snprintf(path, sizeof(path), "%s/log", dir);
	unlink(path);
	rmdir(dir);
}

int bench_instructions(const struct bench_opts *opts, const char *bench,
		       const struct bench_cg_case *cases, size_t n, double *out)
{
	char dir[] = "/tmp/alloy-callgrind-XXXXXX";
	int rc;

	for (size_t i = 0; i < n; i++)
		out[i] = NAN;
	if (!opts->instructions) {
		bench_note(
			"instructions: not counted (--quick or --no-instructions; --instructions counts them)");
		return -1;
	}
	if (!mkdtemp(dir)) {
		fprintf(stderr, "  instructions: mkdtemp: %s\n",
			strerror(errno));
		return -1;
	}
	fflush(stdout);
	rc = run_child(bench, dir);
	if (!rc)
		rc = read_dumps(dir, cases, n, out);
	remove_dir(dir, 2 * n);
	return rc;
}

const char *bench_instr_text(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "n/a");
	else
		snprintf(buf, len, "%.0f", v);
	return buf;
}
