// SPDX-License-Identifier: MIT
/*
 * tests/programs/front_prog.c - a multi-threaded program of our own that forks
 * and execs, for tests/cli/test_run.sh and tests/cli/test_front.sh to run with
 * glibc's malloc and under `alloy run`: the output must be the same.
 *
 * Usage: front_prog [work]      4 threads allocate while the main thread
 *                               forks children: two exec this program
 *                               again, one allocates and exits; prints
 *                               checksums and exit statuses
 *        front_prog child N     the exec'd child: allocates, prints
 *        front_prog threads N   N rounds of 8 short-lived threads; under
 *                               the front, alloy's own memory must not
 *                               grow with them (records given back)
 *        front_prog locale      setlocale, newlocale and friends from
 *                               several threads, the first allocation of
 *                               main() inside setlocale; checks that alloy
 *                               was ready before main() (its backend's
 *                               module already loaded)
 */
#include <dlfcn.h>
#include <link.h>
#include <locale.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define NTHREADS 4
#define ROUNDS	 20000

/* A deterministic stream of numbers (xorshift), one per thread. */
static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Allocation work whose result depends only on seed: a table of blocks
 * of varying sizes, grown with realloc, freed out of order.
 */
static uint64_t churn(uint64_t seed, int rounds)
{
	enum { SLOTS = 64 };
	unsigned char *slot[SLOTS] = { 0 };
	size_t len[SLOTS] = { 0 };
	uint64_t s = seed, sum = 0;

	for (int r = 0; r < rounds; r++) {
		int i = (int)(next(&s) % SLOTS);
		size_t n = (size_t)(next(&s) % 2048) + 1;
		unsigned char *p;

		if (slot[i]) {
			sum += slot[i][len[i] - 1] + len[i];
			if (next(&s) & 1) {
				free(slot[i]);
				slot[i] = NULL;
				continue;
			}
			p = realloc(slot[i], n);
		} else {
			p = (next(&s) & 1) ? malloc(n) : calloc(1, n);
		}
		if (!p)
			abort();
		memset(p, (int)(r & 0xff), n);
		slot[i] = p;
		len[i] = n;
	}
	for (int i = 0; i < SLOTS; i++)
		free(slot[i]);
	return sum;
}

struct worker {
	pthread_t thread;
	uint64_t seed, sum;
};

static void *work_thread(void *arg)
{
	struct worker *w = arg;

	w->sum = churn(w->seed, ROUNDS);
	return NULL;
}

/* fork while the workers allocate; the children exec us or just exit. */
static int work(const char *self)
{
	struct worker w[NTHREADS];
	int failed = 0;

	for (int i = 0; i < NTHREADS; i++) {
		w[i].seed = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (pthread_create(&w[i].thread, NULL, work_thread, &w[i]))
			return 1;
	}
	for (int c = 0; c < 3; c++) {
		pid_t pid = fork();
		int status;

		if (pid < 0)
			return 1;
		if (pid == 0) {
			/* The child has only this thread; alloy must work. */
			uint64_t sum = churn(1000 + (uint64_t)c, 2000);
			char arg[32];

			if (c == 2)
				_exit(sum ? 7 : 1);
			snprintf(arg, sizeof(arg), "%d", c);
			execl(self, self, "child", arg, (char *)NULL);
			_exit(127);
		}
		if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) {
			failed = 1;
			continue;
		}
		printf("child %d exited %d\n", c, WEXITSTATUS(status));
		fflush(stdout);
	}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(w[i].thread, NULL);
		printf("thread %d: %llu\n", i, (unsigned long long)w[i].sum);
	}
	return failed;
}

static int child(const char *n)
{
	printf("exec'd child %s: %llu\n", n,
	       (unsigned long long)churn(strtoull(n, NULL, 10) + 7, 5000));
	return 0;
}

/* ---- threads that come and go ----------------------------------------- */

/*
 * All 8 threads of a round hold their per-thread records at once (the
 * barrier), so every round needs as many as the first: alloy's own memory
 * after the first round is all that any round needs.
 */
static pthread_barrier_t all_started;

static void *brief_thread(void *arg)
{
	void *p = malloc(100);

	pthread_barrier_wait(&all_started);
	free(p);
	*(uint64_t *)arg = churn((uint64_t)(uintptr_t)arg | 1, 200);
	return NULL;
}

static int one_round(void)
{
	pthread_t t[8];
	uint64_t sums[8];

	for (int i = 0; i < 8; i++)
		if (pthread_create(&t[i], NULL, brief_thread, &sums[i]))
			return 1;
	for (int i = 0; i < 8; i++)
		pthread_join(t[i], NULL);
	return 0;
}

static int threads(int rounds)
{
	void (*own_memory)(size_t *, size_t *);
	size_t first = 0, last = 0;

	*(void **)&own_memory = dlsym(RTLD_DEFAULT, "alloy_own_memory");
	pthread_barrier_init(&all_started, NULL, 8);
	if (one_round())
		return 1;
	if (own_memory)
		own_memory(NULL, &first);
	for (int r = 1; r < rounds; r++)
		if (one_round())
			return 1;
	if (own_memory)
		own_memory(NULL, &last);
	printf("%d rounds of 8 threads\n", rounds);
	if (own_memory && last > first) {
		/* Every thread's record is kept: they were not given back. */
		fprintf(stderr,
			"front_prog: alloy's own memory grew from %zu to %zu bytes over %d rounds of threads\n",
			first, last, rounds);
		return 1;
	}
	return 0;
}

/* ---- locales: the first allocation inside setlocale ------------------- */

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	return strstr(info->dlpi_name, (const char *)arg) != NULL;
}

static void *locale_thread(void *arg)
{
	locale_t l = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
	locale_t d;

	(void)arg;
	if (!l)
		return (void *)1;
	for (int i = 0; i < 200; i++) {
		d = duplocale(l);
		uselocale(d);
		free(strdup("ünïcödé"));
		uselocale(LC_GLOBAL_LOCALE);
		freelocale(d);
		setlocale(LC_NUMERIC, i & 1 ? "C" : "C.UTF-8");
	}
	freelocale(l);
	return NULL;
}

static int locale(void)
{
	const char *module = getenv("FRONT_PROG_MODULE");
	pthread_t t[4];
	void *rc;
	int failed = 0;

	/* Before main allocated anything: was the backend loaded already? */
	if (module && *module &&
	    !dl_iterate_phdr(find_object, (void *)module)) {
		fprintf(stderr, "front_prog: %s not loaded before main()\n",
			module);
		failed = 1;
	}
	if (!setlocale(LC_ALL, "C.UTF-8"))
		return 1;
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, locale_thread, NULL))
			return 1;
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], &rc);
		failed |= rc != NULL;
	}
	printf("locales: %s\n", failed ? "failed" : "ok");
	return failed;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "work";

	if (!strcmp(mode, "locale"))
		return locale();
	if (!strcmp(mode, "child") && argc > 2)
		return child(argv[2]);
	if (!strcmp(mode, "threads"))
		return threads(argc > 2 ? atoi(argv[2]) : 100);
	if (!strcmp(mode, "work"))
		return work("/proc/self/exe");
	fprintf(stderr, "usage: front_prog [work|child N|threads N|locale]\n");
	return 2;
}
