// SPDX-License-Identifier: MIT
/*
 * tests/programs/memprog.c - a traced program for the compressed-trace
 * and resident-memory tests (tests/cli/test_trace_mem.sh).
 *
 *   memprog churn N      N steps of two allocations and two frees through
 *                        alloy_malloc, a few hundred blocks live, with a
 *                        flush of the trace every 4096 steps: a trace of
 *                        many write-outs
 *   memprog mmap MIB     a heap of about 1 MiB, then MIB MiB mapped with
 *                        mmap and every page touched (memory outside
 *                        malloc, as a collected heap is), held for 400 ms
 *                        while a few blocks come and go, then unmapped
 *   memprog kill N       churn N steps, then SIGKILL itself: a trace that
 *                        ends without its end record
 *
 * Run with ALLOY_CONF=trace:PATH (and backtrace:1 for stacks).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <alloy/alloy.h>
#include <alloy/reporter.h>

#define LIVE 256

static void *live[LIVE];

static void churn(long steps)
{
	for (long i = 0; i < steps; i++) {
		size_t k = (size_t)(i * 7) % LIVE, j = (size_t)(i * 13) % LIVE;
		size_t sz = 16 + (size_t)(i % 61) * 8;

		if (live[k])
			alloy_free(live[k]);
		live[k] = alloy_malloc(sz);
		if (live[j])
			alloy_free(live[j]);
		live[j] = alloy_malloc(sz * 2);
		if (!(i % 4096))
			alloy_reporter_flush();
	}
}

static void release(void)
{
	for (int i = 0; i < LIVE; i++) {
		if (live[i])
			alloy_free(live[i]);
		live[i] = NULL;
	}
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

static int outside_malloc(long mib)
{
	size_t len = (size_t)mib << 20;
	void *heap[16];
	char *p;

	for (int i = 0; i < 16; i++)
		heap[i] = alloy_malloc(64 * 1024);
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED) {
		perror("memprog: mmap");
		return 1;
	}
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
	/* Events while the mapping is resident: the writer samples then. */
	for (int i = 0; i < 8; i++) {
		void *b = alloy_malloc(100);

		sleep_ms(50);
		alloy_free(b);
	}
	munmap(p, len);
	for (int i = 0; i < 16; i++)
		alloy_free(heap[i]);
	return 0;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;

	if (argc != 3 || n <= 0) {
		fprintf(stderr, "usage: memprog churn|mmap|kill N\n");
		return 2;
	}
	if (!strcmp(argv[1], "churn")) {
		churn(n);
		release();
	} else if (!strcmp(argv[1], "mmap")) {
		if (outside_malloc(n))
			return 1;
	} else if (!strcmp(argv[1], "kill")) {
		churn(n);
		kill(getpid(), SIGKILL);
	} else {
		fprintf(stderr, "memprog: unknown mode %s\n", argv[1]);
		return 2;
	}
	puts("done");
	return 0;
}
