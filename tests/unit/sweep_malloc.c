// SPDX-License-Identifier: MIT
/*
 * tests/unit/sweep_malloc.c - the fault sweep one level down: libc's malloc.
 *
 * tests/unit/test_sweep.c fails allocations made through alloy's allocators;
 * the library and its layers also take memory from libc for their own
 * structures (tensors, storages, blobs, workspaces, the reporter's
 * tables, the debug allocator's records).  This program replaces malloc,
 * calloc, realloc, posix_memalign, aligned_alloc and memalign with thin
 * forwarders to glibc (glibc supports replacing its allocator this way)
 * that can fail the k-th call, and runs every workload of
 * tests/unit/sweep_workloads.c once for each k: with the reporter off, on,
 * and on with its trace and log streams and per-block backtraces, each
 * configuration in a process of its own.
 *
 * Every run must end in success or a negative code with a message, must
 * not crash, and must not leak: the forwarders count the blocks live, and
 * of the runs repeated with the same k one must leave that count where it
 * found it (a run may fill a cache for good; a leak recurs).  The registry's
 * live count of the CPU default must be zero after each run.
 *
 * Sanitizer builds own malloc themselves: there the program skips (77).
 * Without libunwind the streams are swept without backtraces (backtrace:1
 * is an ALLOY_CONF error there), and the program says so.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sweep_workloads.h"

#include "kernel/sanitizer.h"

#ifdef ALLOY_SANITIZER_OWNS_MALLOC
int main(void)
{
	puts("sweep_malloc: skipped: the sanitizer owns malloc");
	return 77;
}
#else

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void __libc_free(void *ptr);
void *__libc_memalign(size_t align, size_t size);

/* The workloads are single-threaded: plain counters will do. */
static bool armed;	/* counting and maybe failing */
static long nth;	/* the call to fail, from 1; 0: none */
static bool persistent; /* ... and every one after it */
static long seen;	/* calls since armed */
static long injected;	/* of which failed */
static long live;	/* blocks handed out minus blocks freed */

static bool inject(void)
{
	if (!armed)
		return false;
	seen++;
	if (nth && (seen == nth || (persistent && seen > nth))) {
		injected++;
		return true;
	}
	return false;
}

void *malloc(size_t size)
{
	void *p;

	if (inject()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_malloc(size);
	live += p != NULL;
	return p;
}

void *calloc(size_t n, size_t size)
{
	void *p;

	if (inject()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_calloc(n, size);
	live += p != NULL;
	return p;
}

void *realloc(void *ptr, size_t size)
{
	void *p;

	if (size && inject()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_realloc(ptr, size);
	if (!ptr && p)
		live++;
	else if (ptr && !size)
		live--;
	return p;
}

void free(void *ptr)
{
	live -= ptr != NULL;
	__libc_free(ptr);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (align < sizeof(void *) || (align & (align - 1)))
		return EINVAL;
	if (inject())
		return ENOMEM;
	p = __libc_memalign(align, size);
	if (!p)
		return ENOMEM;
	live++;
	*out = p;
	return 0;
}

void *aligned_alloc(size_t align, size_t size)
{
	void *p;

	if (inject()) {
		errno = ENOMEM;
		return NULL;
	}
	p = __libc_memalign(align, size);
	live += p != NULL;
	return p;
}

void *memalign(size_t align, size_t size)
{
	return aligned_alloc(align, size);
}

static int failures;

#define EXPECT(cond, ...)                                              \
	do {                                                           \
		if (!(cond)) {                                         \
			fprintf(stderr, "sweep_malloc: " __VA_ARGS__); \
			fputc('\n', stderr);                           \
			failures++;                                    \
		}                                                      \
	} while (0)

/* One run with call k failing (0: none); the change in live blocks. */
static long run_once(const struct sweep_workload *w, long k, bool all, int *rc)
{
	long before;

	alloy_clear_error();
	nth = k;
	persistent = all;
	seen = 0;
	injected = 0;
	before = live;
	armed = true;
	*rc = w->run(alloy_get_default(ALLOY_DEVICE_CPU));
	armed = false;
	return live - before;
}

static void sweep(const struct sweep_workload *w, bool all, const char *label)
{
	struct alloy_allocator *cpu = alloy_get_default(ALLOY_DEVICE_CPU);
	long total, sites = 0, errors = 0, handled = 0, grew;
	int rc;

	/* Warm up: first uses fill caches for good (dlopen does, twice). */
	for (int i = 0; i < 4 && run_once(w, 0, false, &rc) != 0; i++)
		;
	EXPECT(rc == 0, "%s: clean run returned %d: %s", w->name, rc,
	       alloy_last_error());
	grew = run_once(w, 0, false, &rc);
	total = seen;
	EXPECT(rc == 0 && grew == 0,
	       "%s: clean run returned %d, %ld blocks leaked", w->name, rc,
	       grew);
	for (long k = 1; k <= total; k++) {
		run_once(w, k, all, &rc);
		if (!injected)
			continue; /* this run took another path; not a site */
		sites++;
		if (rc) {
			EXPECT(rc < 0 && alloy_last_error()[0],
			       "%s: call %ld failing: returned %d, message \"%s\"",
			       w->name, k, rc, alloy_last_error());
			errors++;
		} else {
			handled++;
		}
		/*
		 * A leak recurs on every run; a cache that grows (the
		 * reporter's table meeting a new address region) does not:
		 * of three more runs, one must leave the count unchanged.
		 */
		grew = run_once(w, k, all, &rc);
		for (int i = 0; i < 2 && grew; i++)
			grew = run_once(w, k, all, &rc);
		EXPECT(grew == 0,
		       "%s: call %ld failing: blocks leaked on every run (%ld on the last)",
		       w->name, k, grew);
		EXPECT(alloy_allocator_live_blocks(cpu) == 0,
		       "%s: call %ld failing: %lld blocks live in \"%s\"",
		       w->name, k, alloy_allocator_live_blocks(cpu),
		       alloy_allocator_name(cpu));
	}
	printf("sweep_malloc: %-10s %-10s %-8s %4ld sites: %ld failed cleanly, %ld handled, 0 leaks\n",
	       w->name, all ? "persistent" : "single", label, sites, errors,
	       handled);
	fflush(stdout);
}

/* The library's configurations swept, each in a process of its own. */
static const struct config {
	const char *label;
	bool enable_reporter;
	/* the reporter's streams and per-block backtraces allocate too */
	bool streams;
} configs[] = {
	{ "plain", false, false },
	{ "reporter", true, false },
	{ "trace", false, true },
};

static int run_config(const struct config *c, const char *dir)
{
	char conf[512];

	if (c->streams) {
#ifdef HAVE_LIBUNWIND
		const char *bt = ",backtrace:1";
#else
		const char *bt = "";
		printf("sweep_malloc: %s: skipped: per-block backtraces (built without libunwind)\n",
		       c->label);
		fflush(stdout);
#endif
		snprintf(conf, sizeof(conf),
			 "trace:%s/sweep.trace,log:%s/sweep.log%s", dir, dir,
			 bt);
		setenv("ALLOY_CONF", conf, 1);
	} else {
		unsetenv("ALLOY_CONF");
	}
	if (alloy_init()) {
		fprintf(stderr, "sweep_malloc: %s: ALLOY_CONF problems: %s\n",
			c->label, alloy_conf_error(0));
		return 1;
	}
	for (size_t i = 0; i < sweep_nworkloads; i++)
		if (sweep_workloads[i].setup && sweep_workloads[i].setup()) {
			fprintf(stderr, "sweep_malloc: %s: setup: %s\n",
				sweep_workloads[i].name, alloy_last_error());
			return 1;
		}
	if (c->enable_reporter && alloy_reporter_enable()) {
		fprintf(stderr, "sweep_malloc: reporter: %s\n",
			alloy_last_error());
		return 1;
	}
	for (size_t i = 0; i < sweep_nworkloads; i++)
		for (int all = 0; all <= 1; all++)
			sweep(&sweep_workloads[i], all, c->label);
	if (failures)
		fprintf(stderr, "sweep_malloc: %s: %d problems\n", c->label,
			failures);
	return failures ? 1 : 0;
}

int main(void)
{
	char dir[] = "/tmp/alloy-sweep-XXXXXX";
	char path[64];
	int bad = 0, status;

	if (!mkdtemp(dir)) {
		perror("sweep_malloc: mkdtemp");
		return 1;
	}
	for (size_t i = 0; i < sizeof(configs) / sizeof(configs[0]); i++) {
		pid_t pid;

		fflush(stdout);
		pid = fork();
		if (pid < 0) {
			perror("sweep_malloc: fork");
			return 1;
		}
		if (pid == 0) {
			status = run_config(&configs[i], dir);
			fflush(stdout);
			exit(status);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status)) {
			fprintf(stderr,
				"sweep_malloc: %s: FAILED (status %#x)\n",
				configs[i].label, status);
			bad++;
		}
	}
	snprintf(path, sizeof(path), "%s/sweep.trace", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/sweep.log", dir);
	unlink(path);
	rmdir(dir);
	return bad ? 1 : 0;
}
#endif /* ALLOY_SANITIZER_OWNS_MALLOC */
