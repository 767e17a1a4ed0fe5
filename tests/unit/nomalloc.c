// SPDX-License-Identifier: MIT
/*
 * tests/unit/nomalloc.c - alloy's allocation path never calls the process's
 * malloc: a program that replaces the malloc family with
 * versions that abort while this thread is "armed", then allocates and
 * frees through every path a malloc front would use.
 *
 * If any of it reached malloc, calloc, realloc, free or the aligned
 * variants, a front that serves malloc with alloy would recurse into
 * itself, possibly holding one of alloy's locks.
 *
 * The allocator behind alloy here takes glibc's memory by its own entry
 * points (__libc_memalign, __libc_free), which no front replaces, so what
 * is checked is alloy's own code.
 *
 * Usage: nomalloc [--reporter | --traced]
 *   --reporter  the reporter on (alloy_reporter_enable)
 *   --traced    ALLOY_CONF with a trace, an event log, an exit report
 *               (paths with %p, so the forked child writes its own) and
 *               call stacks (where built with libunwind); armed
 *               through the exit report too; the files are checked
 *               afterwards
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <alloy/alloy.h>

/*
 * A sanitizer replaces malloc itself: two replacements cannot both be the
 * process's.  Under one, this test has nothing to check (exit 77, a skip);
 * the normal build runs it.
 */
#include "kernel/sanitizer.h"

#ifdef ALLOY_SANITIZER_OWNS_MALLOC
int main(void)
{
	puts("nomalloc: skipped: the sanitizer owns malloc");
	return 77;
}
#else

/* ---- the malloc family, refused while armed --------------------------- */

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);

static __thread int armed;
static _Atomic int violations;

static void refuse(const char *what)
{
	static const char msg[] = "nomalloc: alloy called the process malloc: ";

	if (!armed)
		return;
	armed = 0; /* what follows may allocate */
	atomic_fetch_add(&violations, 1);
	if (write(2, msg, sizeof(msg) - 1) < 0 ||
	    write(2, what, strlen(what)) < 0 || write(2, "\n", 1) < 0)
		_exit(3);
	abort();
}

void *malloc(size_t n)
{
	refuse("malloc");
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
	refuse("calloc");
	return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
	refuse("realloc");
	return __libc_realloc(p, n);
}

void free(void *p)
{
	refuse("free");
	__libc_free(p);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	refuse("posix_memalign");
	*out = __libc_memalign(align, n);
	return *out ? 0 : 12;
}

void *aligned_alloc(size_t align, size_t n)
{
	refuse("aligned_alloc");
	return __libc_memalign(align, n);
}

void *memalign(size_t align, size_t n)
{
	refuse("memalign");
	return __libc_memalign(align, n);
}

/* ---- the allocator behind alloy: glibc's, by its own entry points ---- */

/*
 * __libc_memalign and __libc_free are glibc's allocator under names no
 * front replaces: what is checked is alloy's own code, not its backend.
 */
static void *libc_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	void *p = __libc_memalign(align, size);

	(void)ctx;
	if (p && (flags & ALLOY_ALLOC_ZERO))
		memset(p, 0, size);
	return p;
}

static void libc_free(void *ctx, void *p, size_t size, size_t align)
{
	(void)ctx;
	(void)size;
	(void)align;
	__libc_free(p);
}

static const struct alloy_allocator_ops libc_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "libc_direct",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = libc_alloc,
	.free = libc_free,
};

/* ---- the paths a front takes ------------------------------------------ */

#define ROUNDS 2000

static void *shared[64];

/* Everything an allocation or a free can do, armed. */
static void *workload(void *arg)
{
	struct alloy_data_ptr dp;

	(void)arg;
	armed = 1; /* from this thread's very first allocation */
	for (int i = 0; i < ROUNDS; i++) {
		size_t n = 1 + (size_t)i * 37 % 5000;
		void *p = alloy_malloc(n), *q;

		if (!p || alloy_alloc_default(ALLOY_DEVICE_CPU, n, 0, &dp))
			abort();
		q = alloy_calloc(3, n);
		if (alloy_usable_size(q) < 3 * n)
			abort();
		p = alloy_realloc(p, n * 2);
		alloy_free(alloy_aligned_alloc(256, n));
		/* Blocks another thread made and this one frees. */
		alloy_free(__atomic_exchange_n(&shared[i % 64], q,
					       __ATOMIC_ACQ_REL));
		alloy_free(p);
		alloy_data_ptr_free(&dp);
	}
	armed = 0;
	return NULL;
}

static int run(bool reporter)
{
	struct alloy_allocator *backend;
	pthread_t t[3];
	pid_t pid;
	int st;

	if (alloy_register_allocator(&libc_ops, NULL, "test", &backend) ||
	    alloy_set_default(ALLOY_DEVICE_CPU, backend)) {
		fprintf(stderr, "nomalloc: %s\n", alloy_last_error());
		return 1;
	}
	if (reporter && alloy_reporter_enable()) {
		fprintf(stderr, "nomalloc: %s\n", alloy_last_error());
		return 1;
	}
	/* New threads: each makes its per-thread record on first use. */
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, workload, NULL);
	workload(NULL);
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	/* A swap of the default and back, armed. */
	armed = 1;
	alloy_set_default_by_name(ALLOY_DEVICE_CPU, "default");
	alloy_set_default(ALLOY_DEVICE_CPU, backend);
	armed = 0;
	/* fork: the child allocates and frees too. */
	pid = fork();
	if (pid == 0) {
		workload(NULL);
		_exit(atomic_load(&violations) ? 3 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		fprintf(stderr, "nomalloc: the forked child failed (%d)\n", st);
		return 1;
	}
	for (int k = 0; k < 64; k++)
		alloy_free(shared[k]);
	if (alloy_allocator_live_blocks(backend) != 0) {
		fprintf(stderr, "nomalloc: %lld blocks left\n",
			alloy_allocator_live_blocks(backend));
		return 1;
	}
	printf("nomalloc: %d rounds on 4 threads and a forked child%s: no call into malloc\n",
	       ROUNDS, reporter ? " with the reporter" : "");
	return 0;
}

/* The last line of a file, or "" */
static void last_line(const char *path, char *out, size_t len)
{
	char line[512];
	FILE *f = fopen(path, "r");

	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f))
		snprintf(out, len, "%s", line);
	if (f)
		fclose(f);
}

static bool file_has(const char *path, const char *prefix)
{
	char line[512];
	FILE *f = fopen(path, "r");
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f))
		found = !strncmp(line, prefix, strlen(prefix));
	if (f)
		fclose(f);
	return found;
}

/*
 * The reporter as ALLOY_CONF starts it, in a child process so that its
 * exit (the end record, the exit report) runs armed as well and the
 * files can be read here once it is gone.
 */
#ifdef HAVE_LIBUNWIND
static const bool have_stacks = true;
#else
static const bool have_stacks = false;
#endif

static int run_traced(void)
{
	char dir[] = "/tmp/alloy-nomalloc.XXXXXX", conf[512], path[256];
	char last[512];
	pid_t pid;
	int st, rc = 1;

	if (!mkdtemp(dir))
		return 1;
	/* backtrace:1 is an ALLOY_CONF error without libunwind. */
	snprintf(conf, sizeof(conf),
		 "trace:%s/t.%%p,log:%s/log.%%p,report:%s/report.%%p,"
		 "%sleaks:summary",
		 dir, dir, dir, have_stacks ? "backtrace:1," : "");
	setenv("ALLOY_CONF", conf, 1);
	pid = fork();
	if (pid == 0) {
		if (run(true))
			_exit(1);
		armed = 1; /* the exit report and the trace's end, armed */
		exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0) {
		fprintf(stderr, "nomalloc: the traced run failed (%d)\n", st);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/t.%d", dir, (int)pid);
	last_line(path, last, sizeof(last));
	if (strncmp(last, "end ", 4) ||
	    (have_stacks && !file_has(path, "s ")) || !file_has(path, "a ")) {
		fprintf(stderr,
			"nomalloc: %s: no end record, stacks or events (last line \"%s\")\n",
			path, last);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/report.%d", dir, (int)pid);
	if (!file_has(path, "blocks live at exit: 0 blocks")) {
		fprintf(stderr, "nomalloc: %s: no exit report\n", path);
		goto out;
	}
	snprintf(path, sizeof(path), "%s/log.%d", dir, (int)pid);
	if (!file_has(path, "alloy: alloc ")) {
		fprintf(stderr, "nomalloc: %s: no event log\n", path);
		goto out;
	}
	if (have_stacks)
		printf("nomalloc: trace, log, exit report and call stacks: no call into malloc\n");
	else
		printf("nomalloc: trace, log and exit report: no call into malloc; "
		       "skipped: call stacks (built without libunwind)\n");
	rc = 0;
out:
	if (!rc) {
		snprintf(conf, sizeof(conf), "rm -rf '%s'", dir);
		if (system(conf))
			rc = 1;
	}
	return rc;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--traced"))
		return run_traced();
	return run(argc > 1 && !strcmp(argv[1], "--reporter"));
}
#endif /* ALLOY_SANITIZER_OWNS_MALLOC */
