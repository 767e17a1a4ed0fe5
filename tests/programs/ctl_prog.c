// SPDX-License-Identifier: MIT
/*
 * tests/programs/ctl_prog.c - a server-like workload for the control
 * tests (tests/cli/test_ctl.sh): threads that allocate, fill, check and
 * free blocks of mixed sizes, each keeping a ring of live blocks so that
 * blocks made before a swap are freed after it.
 *
 *   ctl_prog STOPFILE [THREADS]
 *
 * Each thread runs at least MIN_ROUNDS rounds and then until STOPFILE
 * exists (at most MAX_SECONDS).  What it prints depends only on the first
 * MIN_ROUNDS rounds and on whether every block read back what was
 * written, so a run under alloy, swapped and traced while it runs,
 * prints the same as a run without it.  Exit 1 on a block that read
 * back wrong, 3 when STOPFILE never came.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MIN_ROUNDS  20000
#define MAX_SECONDS 120
#define RING	    64
#define MAX_THREADS 16
#define PAUSE_EVERY 64

struct slot {
	unsigned char *p;
	size_t size;
	unsigned char fill;
};

struct worker {
	int id;
	uint64_t rng;
	uint64_t checksum; /* over the first MIN_ROUNDS rounds */
	unsigned long long bad;
	bool timed_out;
	struct slot ring[RING];
};

static const char *stop_file;
static time_t started;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t pick_size(uint64_t r)
{
	switch (r % 16) {
	case 0:
		return 65536 + r % 200000; /* large: mapped blocks */
	case 1:
	case 2:
		return 1024 + r % 15000;
	default:
		return 1 + r % 512;
	}
}

static bool check(const struct slot *s)
{
	for (size_t i = 0; i < s->size; i++)
		if (s->p[i] != s->fill)
			return false;
	return true;
}

static void drop(struct worker *w, struct slot *s)
{
	if (!s->p)
		return;
	if (!check(s))
		w->bad++;
	free(s->p);
	s->p = NULL;
}

static void round_of(struct worker *w, unsigned long long round)
{
	uint64_t r = next(&w->rng);
	struct slot *s = &w->ring[r % RING];
	size_t size = pick_size(r >> 8);
	unsigned char fill = (unsigned char)(r >> 40);

	if (s->p && (r >> 32) % 4 == 0) {
		/* Grow or shrink in place or elsewhere; the prefix stays. */
		unsigned char *q;
		size_t keep = s->size < size ? s->size : size;

		if (!check(s))
			w->bad++;
		q = realloc(s->p, size);
		if (!q) {
			w->bad++;
			return;
		}
		for (size_t i = 0; i < keep; i++)
			if (q[i] != s->fill)
				w->bad++;
		s->p = q;
	} else {
		drop(w, s);
		s->p = (r >> 32) % 5 == 0 ? calloc(1, size) : malloc(size);
		if (!s->p) {
			w->bad++;
			return;
		}
		if ((r >> 32) % 5 == 0)
			for (size_t i = 0; i < size; i++)
				if (s->p[i])
					w->bad++;
	}
	memset(s->p, fill, size);
	s->size = size;
	s->fill = fill;
	if (round < MIN_ROUNDS)
		w->checksum = w->checksum * 31 + size * 7 + fill;
}

static void *work(void *arg)
{
	struct worker *w = arg;

	for (unsigned long long round = 0;; round++) {
		round_of(w, round);
		/* A server waits for work now and then: leave the CPU. */
		if (round % PAUSE_EVERY == 0)
			usleep(1000);
		if (round >= MIN_ROUNDS && round % 1024 == 0) {
			if (!access(stop_file, F_OK))
				break;
			if (time(NULL) - started > MAX_SECONDS) {
				w->timed_out = true;
				break;
			}
		}
	}
	for (int i = 0; i < RING; i++)
		drop(w, &w->ring[i]);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	pthread_t threads[MAX_THREADS];
	int n = argc > 2 ? atoi(argv[2]) : 4;
	unsigned long long bad = 0;
	bool timed_out = false;
	uint64_t sum = 0;

	if (argc < 2 || n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "usage: ctl_prog STOPFILE [THREADS 1-%d]\n",
			MAX_THREADS);
		return 2;
	}
	stop_file = argv[1];
	started = time(NULL);
	for (int i = 0; i < n; i++) {
		workers[i].id = i;
		workers[i].rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		if (pthread_create(&threads[i], NULL, work, &workers[i])) {
			perror("ctl_prog: pthread_create");
			return 2;
		}
	}
	for (int i = 0; i < n; i++) {
		pthread_join(threads[i], NULL);
		bad += workers[i].bad;
		timed_out |= workers[i].timed_out;
		sum = sum * 1000003 + workers[i].checksum;
	}
	printf("ctl_prog: %d threads, %d rounds each checked, checksum %016llx\n",
	       n, MIN_ROUNDS, (unsigned long long)sum);
	printf("ctl_prog: blocks that read back wrong: %llu\n", bad);
	if (timed_out) {
		fprintf(stderr, "ctl_prog: %s never appeared\n", stop_file);
		return 3;
	}
	return bad ? 1 : 0;
}
