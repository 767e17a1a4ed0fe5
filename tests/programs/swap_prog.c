// SPDX-License-Identifier: MIT
/*
 * tests/programs/swap_prog.c - an unmodified program's blocks across hot
 * swaps of the CPU default under `alloy run` (tests/cli/test_front_swap.sh).
 *
 * It links nothing of alloy's.  Under the front it finds
 * alloy_set_default_by_name with dlsym and swaps the CPU default between
 * rounds; without alloy the same rounds run with no swap, so the output
 * (a checksum of every block's bytes, read back after later rounds, from
 * other threads, after realloc) must be the same both ways.
 *
 * Usage: swap_prog swap NAME...   rounds on each named allocator in turn
 *        swap_prog sizes          malloc_usable_size of a range of sizes
 *        swap_prog footprint KIND resident KiB after 1M x malloc(16)
 *                                 (small), 100k x malloc(4096) (page),
 *                                 100k x valloc / memalign /
 *                                 posix_memalign of 4096 (valloc, memalign,
 *                                 posix)
 */
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define KEEP	4096 /* blocks kept live from each round */
#define NTHREAD 3

static int (*set_default)(int device_type, const char *name);

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

struct round {
	unsigned char *block[KEEP];
	size_t len[KEEP];
};

/* Fill a round's blocks: sizes 1..4 KiB and some aligned, each one byte. */
static void make_round(struct round *r, uint64_t seed)
{
	uint64_t s = seed;

	for (int i = 0; i < KEEP; i++) {
		size_t n = next(&s) % 4096 + 1;
		void *p;

		switch (next(&s) % 4) {
		case 0:
			p = calloc(1, n);
			break;
		case 1:
			if (posix_memalign(&p, 64, n))
				p = NULL;
			break;
		default:
			p = malloc(n);
		}
		if (!p)
			abort();
		memset(p, (int)(seed + (uint64_t)i) & 0xff, n);
		r->block[i] = p;
		r->len[i] = n;
	}
}

/* The sum of a round's bytes, each block grown by realloc on the way. */
static uint64_t check_round(struct round *r)
{
	uint64_t sum = 0;

	for (int i = 0; i < KEEP; i++) {
		unsigned char *p = realloc(r->block[i], r->len[i] + 100);

		if (!p)
			abort();
		for (size_t j = 0; j < r->len[i]; j++)
			sum = sum * 31 + p[j];
		r->block[i] = p;
	}
	return sum;
}

struct freer {
	pthread_t thread;
	struct round *r;
	int first;
};

/* Another thread frees every NTHREAD-th block of a round. */
static void *free_some(void *arg)
{
	struct freer *f = arg;

	for (int i = f->first; i < KEEP; i += NTHREAD)
		free(f->r->block[i]);
	return NULL;
}

static int swap_rounds(int n, char **names)
{
	struct round *rounds = calloc((size_t)n, sizeof(*rounds));
	struct freer f[NTHREAD];
	uint64_t sum = 0;

	if (!rounds)
		return 1;
	for (int i = 0; i < n; i++) {
		if (set_default && set_default(0, names[i])) {
			fprintf(stderr,
				"swap_prog: could not make %s the default\n",
				names[i]);
			return 1;
		}
		make_round(&rounds[i], (uint64_t)i + 1);
		/* The rounds made before this swap are read, grown, kept. */
		for (int j = 0; j <= i; j++)
			sum ^= check_round(&rounds[j]);
	}
	/* Back to the first: every block still goes to its maker. */
	if (set_default && set_default(0, names[0]))
		return 1;
	for (int i = 0; i < n; i++) {
		for (int t = 0; t < NTHREAD; t++) {
			f[t].r = &rounds[i];
			f[t].first = t;
			if (pthread_create(&f[t].thread, NULL, free_some,
					   &f[t]))
				return 1;
		}
		for (int t = 0; t < NTHREAD; t++)
			pthread_join(f[t].thread, NULL);
	}
	free(rounds);
	printf("swap_prog: %d rounds, sum %016llx\n", n,
	       (unsigned long long)sum);
	return 0;
}

static int sizes(void)
{
	static const size_t asked[] = {
		0,   1,	  8,	16,   24,   32,	  48,	64,    100,
		128, 256, 1000, 1024, 4096, 5000, 8192, 65536, 1 << 20
	};

	for (size_t i = 0; i < sizeof(asked) / sizeof(asked[0]); i++) {
		void *p = malloc(asked[i]);

		printf("%zu %zu\n", asked[i], malloc_usable_size(p));
		free(p);
	}
	return 0;
}

static long resident_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static int footprint(const char *kind)
{
	int small = !strcmp(kind, "small");
	size_t n = small ? 1000000 : 100000;
	void **keep = calloc(n, sizeof(*keep));

	if (!keep)
		return 1;
	for (size_t i = 0; i < n; i++) {
		void *p = NULL;

		if (small)
			p = malloc(16);
		else if (!strcmp(kind, "page"))
			p = malloc(4096);
		else if (!strcmp(kind, "valloc"))
			p = valloc(4096);
		else if (!strcmp(kind, "memalign"))
			p = memalign(4096, 4096);
		else if (posix_memalign(&p, 4096, 4096))
			p = NULL;
		if (!p)
			return 1;
		memset(p, 1, small ? 16 : 4096);
		keep[i] = p;
	}
	printf("%ld\n", resident_kib());
	for (size_t i = 0; i < n; i++)
		free(keep[i]);
	free(keep);
	return 0;
}

int main(int argc, char **argv)
{
	*(void **)&set_default =
		dlsym(RTLD_DEFAULT, "alloy_set_default_by_name");
	if (argc > 2 && !strcmp(argv[1], "swap"))
		return swap_rounds(argc - 2, argv + 2);
	if (argc > 1 && !strcmp(argv[1], "sizes"))
		return sizes();
	if (argc > 2 && !strcmp(argv[1], "footprint"))
		return footprint(argv[2]);
	fprintf(stderr,
		"usage: swap_prog swap NAME... | sizes | footprint small|page|valloc|memalign|posix\n");
	return 2;
}
