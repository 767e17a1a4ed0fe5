// SPDX-License-Identifier: MIT
/*
 * bench/preload_workloads.c - allocation-bound programs for `alloy bench
 * preload`: `preload-workloads NAME SCALE`.
 *
 * A standalone program on purpose: it links nothing of alloy, so that
 * running it plain, with a malloc preloaded, or under `alloy run` differs
 * only in whose malloc it calls.  Each workload is one allocation shape
 * a program whose user would swap allocators has: a server's pool of
 * threads replacing blocks, a producer and a consumer, small-block churn,
 * a bare pair loop, random sizes with a live set, mixed sizes freed by
 * the other thread, aligned requests, and what a million small or a
 * hundred thousand page-sized blocks keep resident.
 *
 * Every block carries a tag from a seeded generator, written when it is
 * made and read back when it is freed; the tags freed are summed.  The
 * sum does not depend on which thread frees a block nor in what order, so
 * every run of a workload at one scale prints the same checksum line,
 * whichever allocator ran it: a differing line is a wrong result, not
 * noise.  Blocks that came back misaligned, or whose two tags disagree,
 * are counted on a line of their own.  The footprint workloads also print what
 * is resident while their blocks are live (/proc/self/statm), which the
 * checksum leaves out.
 *
 * SCALE multiplies the work (1 is the timed size; a smaller one is a
 * smoke run).
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- what every workload shares --------------------------------------- */

/* splitmix64: small, fast, and the same sequence everywhere. */
static uint64_t next_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A number in [lo, hi]. */
static size_t rand_range(uint64_t *s, size_t lo, size_t hi)
{
	return lo + (size_t)(next_rand(s) % (hi - lo + 1));
}

static double scale = 1;

/* n scaled, at least 1. */
static long scaled(long n)
{
	long v = (long)((double)n * scale);

	return v > 0 ? v : 1;
}

static void out_of_memory(const char *what, size_t size)
{
	fprintf(stderr, "preload-workloads: %s of %zu bytes failed\n", what,
		size);
	exit(1);
}

/*
 * A block's tag: in its first word and, where it has room, in its last,
 * so that both ends of the block are touched.  Blocks under 8 bytes hold
 * the tag's low byte only.
 */
static void *tag_block(void *p, size_t size, uint64_t tag)
{
	if (!p)
		out_of_memory("an allocation", size);
	if (size < sizeof(tag)) {
		*(unsigned char *)p = (unsigned char)tag;
		return p;
	}
	memcpy(p, &tag, sizeof(tag));
	if (size >= 2 * sizeof(tag))
		memcpy((char *)p + size - sizeof(tag), &tag, sizeof(tag));
	return p;
}

/*
 * What a freed block adds to the checksum: its tag, and a mismatch of its
 * two copies counted apart, so that a block whose end was overwritten
 * shows in the line.
 */
struct sum {
	uint64_t tags;
	uint64_t blocks;
	uint64_t damaged;
};

static void read_block(struct sum *s, const void *p, size_t size)
{
	uint64_t head, tail;

	s->blocks++;
	if (size < sizeof(head)) {
		s->tags += *(const unsigned char *)p;
		return;
	}
	memcpy(&head, p, sizeof(head));
	s->tags += head;
	if (size >= 2 * sizeof(head)) {
		memcpy(&tail, (const char *)p + size - sizeof(tail),
		       sizeof(tail));
		s->damaged += tail != head;
	}
}

static void add_sum(struct sum *to, const struct sum *from)
{
	to->tags += from->tags;
	to->blocks += from->blocks;
	to->damaged += from->damaged;
}

/*
 * The checksum line, the same under every malloc, then the blocks that
 * came back misaligned or whose ends disagreed, which should be none: a
 * line apart, so that a malloc's own flaw is told from a wrong result.
 */
static void print_sum(const char *name, const struct sum *s)
{
	printf("%s checksum %016llx blocks %llu\n", name,
	       (unsigned long long)s->tags, (unsigned long long)s->blocks);
	printf("%s damaged %llu\n", name, (unsigned long long)s->damaged);
}

/* A block and its size, as the workloads keep them. */
struct slot {
	void *p;
	size_t size;
};

/* Free the block of s, if any, into the sum; s is empty after. */
static void drop_slot(struct sum *sum, struct slot *s)
{
	if (s->p) {
		read_block(sum, s->p, s->size);
		free(s->p);
	}
	s->p = NULL;
}

static void drop_slots(struct sum *sum, struct slot *slots, size_t n)
{
	for (size_t i = 0; i < n; i++)
		drop_slot(sum, &slots[i]);
}

/* fa(a) in a new thread and fb(b) in this one, both to their end. */
static void run_two(void *(*fa)(void *), void *a, void *(*fb)(void *), void *b)
{
	pthread_t t;

	if (pthread_create(&t, NULL, fa, a)) {
		fprintf(stderr, "preload-workloads: pthread_create failed\n");
		exit(1);
	}
	fb(b);
	pthread_join(t, NULL);
}

/* A bounded queue of pointers between two threads. */
#define CHAN_LEN 4

struct chan {
	pthread_mutex_t lock;
	pthread_cond_t changed;
	void *item[CHAN_LEN];
	int head, n;
};

static void chan_init(struct chan *c)
{
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->changed, NULL);
	c->head = c->n = 0;
}

/* Add p, waiting while the queue is full. */
static void chan_put(struct chan *c, void *p)
{
	pthread_mutex_lock(&c->lock);
	while (c->n == CHAN_LEN)
		pthread_cond_wait(&c->changed, &c->lock);
	c->item[(c->head + c->n++) % CHAN_LEN] = p;
	pthread_cond_broadcast(&c->changed);
	pthread_mutex_unlock(&c->lock);
}

/*
 * The oldest item, waiting for one if wait; NULL when there is none (or
 * the item is NULL).
 */
static void *chan_get(struct chan *c, bool wait)
{
	void *p = NULL;

	pthread_mutex_lock(&c->lock);
	while (wait && !c->n)
		pthread_cond_wait(&c->changed, &c->lock);
	if (c->n) {
		p = c->item[c->head];
		c->head = (c->head + 1) % CHAN_LEN;
		c->n--;
		pthread_cond_broadcast(&c->changed);
	}
	pthread_mutex_unlock(&c->lock);
	return p;
}

/* ---- larson: a server's threads replacing shared blocks ---------------- */

#define LARSON_SLOTS 4096

/*
 * A block with its size in its first word, the rest tagged: the slot is
 * one pointer, swapped whole.
 */
struct sized {
	size_t size;
};

static _Atomic(struct sized *) larson_slots[LARSON_SLOTS];

struct larson_arg {
	uint64_t seed;
	long iters;
	struct sum sum;
};

static void free_sized(struct sum *s, struct sized *b)
{
	read_block(s, b + 1, b->size - sizeof(*b));
	free(b);
}

static void *larson_thread(void *p)
{
	struct larson_arg *a = p;
	uint64_t r = a->seed;

	for (long i = 0; i < a->iters; i++) {
		size_t size = rand_range(&r, 16, 1024);
		struct sized *b = malloc(size), *old;

		if (!b)
			out_of_memory("malloc", size);
		b->size = size;
		tag_block(b + 1, size - sizeof(*b), next_rand(&r));
		old = atomic_exchange(
			&larson_slots[next_rand(&r) % LARSON_SLOTS], b);
		if (old)
			free_sized(&a->sum, old);
	}
	return NULL;
}

static void larson(void)
{
	struct larson_arg a = { .seed = 1, .iters = scaled(4000000) };
	struct larson_arg b = { .seed = 2, .iters = a.iters };

	run_two(larson_thread, &a, larson_thread, &b);
	add_sum(&a.sum, &b.sum);
	for (int i = 0; i < LARSON_SLOTS; i++)
		if (larson_slots[i])
			free_sized(&a.sum, larson_slots[i]);
	print_sum("larson", &a.sum);
}

/* ---- prodcons: one thread allocates, the other frees ------------------- */

/*
 * The blocks go over in batches, so that the threads wait for each other
 * once a batch, not once a block: on a loaded machine a per-block handoff
 * would time the scheduler, not the allocator.
 */
#define PC_BATCH 256

struct pc_batch {
	int n;
	struct slot b[PC_BATCH];
};

static struct chan pc_chan;

static void *producer(void *p)
{
	long batches = *(const long *)p;
	uint64_t r = 3;

	for (long k = 0; k < batches; k++) {
		struct pc_batch *b = malloc(sizeof(*b));

		if (!b)
			out_of_memory("malloc", sizeof(*b));
		for (b->n = 0; b->n < PC_BATCH; b->n++) {
			size_t size = rand_range(&r, 64, 512);

			b->b[b->n].p =
				tag_block(malloc(size), size, next_rand(&r));
			b->b[b->n].size = size;
		}
		chan_put(&pc_chan, b);
	}
	chan_put(&pc_chan, NULL);
	return NULL;
}

static void *consumer(void *p)
{
	struct sum *sum = p;
	struct pc_batch *b;

	while ((b = chan_get(&pc_chan, true))) {
		drop_slots(sum, b->b, (size_t)b->n);
		free(b);
	}
	return NULL;
}

static void prodcons(void)
{
	long batches = scaled(16000);
	struct sum sum = { 0 };

	chan_init(&pc_chan);
	run_two(producer, &batches, consumer, &sum);
	print_sum("prodcons", &sum);
}

/* ---- cfrac: small-block churn in linked lists -------------------------- */

/*
 * Lists of small nodes, the digits of a number, combined pairwise into a
 * new list as a bignum routine would, the old list dropped; each digit
 * also makes and drops a short-lived scratch block.
 */
struct digit {
	struct digit *next;
	uint32_t value;
	uint32_t size;
};

#define CFRAC_LISTS 16

static struct digit *new_digit(uint64_t *r, uint32_t value)
{
	size_t size = rand_range(r, sizeof(struct digit), 64);
	struct digit *d = malloc(size);

	if (!d)
		out_of_memory("malloc", size);
	d->next = NULL;
	d->value = value;
	d->size = (uint32_t)size;
	return d;
}

static void free_list(struct sum *s, struct digit *d)
{
	while (d) {
		struct digit *next = d->next;

		s->tags += d->value;
		s->blocks++;
		free(d);
		d = next;
	}
}

static struct digit *make_list(uint64_t *r, int len)
{
	struct digit *head = NULL;

	while (len-- > 0) {
		struct digit *d = new_digit(r, (uint32_t)next_rand(r));

		d->next = head;
		head = d;
	}
	return head;
}

static void cfrac(void)
{
	struct digit *lists[CFRAC_LISTS];
	struct sum sum = { 0 };
	uint64_t r = 4;
	long steps = scaled(400000);

	for (int i = 0; i < CFRAC_LISTS; i++)
		lists[i] = make_list(&r, (int)rand_range(&r, 4, 24));
	for (long s = 0; s < steps; s++) {
		const struct digit *a = lists[next_rand(&r) % CFRAC_LISTS];
		const struct digit *b = lists[next_rand(&r) % CFRAC_LISTS];
		struct digit *head = NULL, **tail = &head;
		uint64_t carry = 0;
		int len = 0, k;

		while ((a || b || carry) && len < 32) {
			size_t scratch = rand_range(&r, 8, 32);
			uint64_t v = carry + (a ? a->value : 0) * 3ULL +
				     (b ? b->value : 0);
			void *tmp = tag_block(malloc(scratch), scratch, v);

			read_block(&sum, tmp, scratch);
			free(tmp);
			*tail = new_digit(&r, (uint32_t)v);
			tail = &(*tail)->next;
			carry = v >> 32;
			a = a ? a->next : NULL;
			b = b ? b->next : NULL;
			len++;
		}
		k = (int)(next_rand(&r) % CFRAC_LISTS);
		free_list(&sum, lists[k]);
		lists[k] = head;
	}
	for (int i = 0; i < CFRAC_LISTS; i++)
		free_list(&sum, lists[i]);
	print_sum("cfrac", &sum);
}

/* ---- pairs: malloc(64) and free at once -------------------------------- */

static void pairs(void)
{
	long n = scaled(30000000);
	struct sum sum = { 0 };

	for (long i = 0; i < n; i++) {
		void *p = tag_block(malloc(64), 64, (uint64_t)i);

		read_block(&sum, p, 64);
		free(p);
	}
	print_sum("pairs", &sum);
}

/* ---- alloctest: random sizes, a live set, some realloc ----------------- */

#define ALLOCTEST_LIVE 10000

/*
 * A live set of nslots blocks: steps times, a slot picked at random is
 * handed to replace(), which puts another block there; what is left is
 * freed at the end.
 */
static void live_set(const char *name, uint64_t seed, long steps, size_t nslots,
		     void (*replace)(uint64_t *r, struct slot *s,
				     struct sum *sum))
{
	struct slot *live = calloc(nslots, sizeof(*live));
	struct sum sum = { 0 };
	uint64_t r = seed;

	if (!live)
		out_of_memory("calloc", nslots * sizeof(*live));
	for (long i = 0; i < steps; i++)
		replace(&r, &live[next_rand(&r) % nslots], &sum);
	drop_slots(&sum, live, nslots);
	free(live);
	print_sum(name, &sum);
}

/* One block in eight grows or shrinks in place of being replaced. */
static void alloctest_replace(uint64_t *r, struct slot *s, struct sum *sum)
{
	size_t size = rand_range(r, 16, 8192);
	uint64_t tag = next_rand(r);

	if (s->p && tag % 8 == 0) {
		/* The first word moves with the block, the last not. */
		uint64_t kept;
		void *q = realloc(s->p, size);

		if (!q)
			out_of_memory("realloc", size);
		memcpy(&kept, q, sizeof(kept));
		s->p = tag_block(q, size, kept);
	} else {
		drop_slot(sum, s);
		s->p = tag_block(malloc(size), size, tag);
	}
	s->size = size;
}

static void alloctest(void)
{
	live_set("alloctest", 5, scaled(1200000), ALLOCTEST_LIVE,
		 alloctest_replace);
}

/* ---- sh6: mixed sizes, half of each batch freed by the other thread ---- */

#define SH6_BATCH 512

struct sh6_batch {
	int n;
	struct slot b[SH6_BATCH];
};

struct sh6_arg {
	uint64_t seed;
	long batches;
	struct chan inbox; /* batches from the other thread */
	struct sh6_arg *other;
	struct sum sum;
};

static atomic_int sh6_running = 2;

/* Mostly small, some medium, a few large: each step up half as likely. */
static size_t sh6_size(uint64_t *r)
{
	int k = __builtin_ctzll(next_rand(r) | (1ULL << 10));

	return rand_range(r, (size_t)8 << k, (size_t)16 << k);
}

static void sh6_free_batch(struct sum *s, struct sh6_batch *b)
{
	drop_slots(s, b->b, (size_t)b->n);
	free(b);
}

static void *sh6_thread(void *p)
{
	struct sh6_arg *a = p;
	struct sh6_batch *got;
	uint64_t r = a->seed;

	for (long k = 0; k < a->batches; k++) {
		struct sh6_batch *mine = malloc(sizeof(*mine));
		struct sh6_batch *give = malloc(sizeof(*give));

		if (!mine || !give)
			out_of_memory("malloc", sizeof(*mine));
		mine->n = give->n = 0;
		for (int i = 0; i < SH6_BATCH; i++) {
			size_t size = sh6_size(&r);
			struct sh6_batch *to = next_rand(&r) & 1 ? mine : give;

			to->b[to->n].p =
				tag_block(malloc(size), size, next_rand(&r));
			to->b[to->n++].size = size;
		}
		/* The newest first, as a stack of temporaries unwinds. */
		for (int i = mine->n - 1; i >= 0; i--)
			drop_slot(&a->sum, &mine->b[i]);
		free(mine);
		/*
		 * Empty the inbox before filling the other's: of two threads
		 * each waiting for room, one has just made it.
		 */
		while ((got = chan_get(&a->inbox, false)))
			sh6_free_batch(&a->sum, got);
		chan_put(&a->other->inbox, give);
	}
	/*
	 * The other thread, a few batches behind at most, may wait for room
	 * in this one's inbox: take its batches until it is done too.
	 */
	atomic_fetch_sub(&sh6_running, 1);
	while (atomic_load(&sh6_running)) {
		while ((got = chan_get(&a->inbox, false)))
			sh6_free_batch(&a->sum, got);
		sched_yield();
	}
	return NULL;
}

static void sh6(void)
{
	static struct sh6_arg a = { .seed = 6 }, b = { .seed = 7 };
	struct sh6_batch *got;

	a.batches = b.batches = scaled(6000);
	a.other = &b;
	b.other = &a;
	chan_init(&a.inbox);
	chan_init(&b.inbox);
	run_two(sh6_thread, &a, sh6_thread, &b);
	add_sum(&a.sum, &b.sum);
	while ((got = chan_get(&a.inbox, false)))
		sh6_free_batch(&a.sum, got);
	while ((got = chan_get(&b.inbox, false)))
		sh6_free_batch(&a.sum, got);
	print_sum("sh6", &a.sum);
}

/* ---- aligned: the aligned calls with a live set ------------------------ */

#define ALIGNED_LIVE 2000

static void *aligned_one(uint64_t *r, size_t *size, struct sum *sum)
{
	static const size_t aligns[] = { 64, 256, 4096 };
	size_t align = aligns[next_rand(r) % 3];
	void *p = NULL;

	*size = rand_range(r, 16, 8192);
	switch (next_rand(r) % 4) {
	case 0:
		if (posix_memalign(&p, align, *size))
			p = NULL;
		break;
	case 1:
		*size = (*size + align - 1) / align * align;
		p = aligned_alloc(align, *size);
		break;
	case 2:
		p = memalign(align, *size);
		break;
	default:
		align = 4096;
		p = valloc(*size);
		break;
	}
	if (p && (uintptr_t)p % align)
		sum->damaged++;
	return tag_block(p, *size, next_rand(r));
}

static void aligned_replace(uint64_t *r, struct slot *s, struct sum *sum)
{
	drop_slot(sum, s);
	s->p = aligned_one(r, &s->size, sum);
}

static void aligned(void)
{
	live_set("aligned", 8, scaled(1000000), ALIGNED_LIVE, aligned_replace);
}

/* ---- footprints: what many live blocks keep resident ------------------- */

enum footprint_call { FP_MALLOC, FP_VALLOC, FP_MEMALIGN, FP_POSIX_MEMALIGN };

static long resident_kib(void)
{
	long size, resident;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &resident) != 2)
		resident = -1;
	fclose(f);
	return resident < 0 ? -1 : resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/*
 * count blocks of size, all live at once, then freed; the tag at both
 * ends of a block touches every page of a page-sized one, and all of a
 * 16-byte one.
 */
static void footprint(const char *name, enum footprint_call call, size_t size,
		      long count)
{
	void **blocks;
	struct sum sum = { 0 };
	long n = scaled(count);

	blocks = malloc(sizeof(*blocks) * (size_t)n);
	if (!blocks)
		out_of_memory("malloc", sizeof(*blocks) * (size_t)n);
	for (long i = 0; i < n; i++) {
		void *p = NULL;

		switch (call) {
		case FP_MALLOC:
			p = malloc(size);
			break;
		case FP_VALLOC:
			p = valloc(size);
			break;
		case FP_MEMALIGN:
			p = memalign(4096, size);
			break;
		case FP_POSIX_MEMALIGN:
			if (posix_memalign(&p, 4096, size))
				p = NULL;
			break;
		}
		if (!p)
			out_of_memory("an allocation", size);
		if (call != FP_MALLOC && (uintptr_t)p % 4096)
			sum.damaged++;
		blocks[i] = tag_block(p, size, (uint64_t)i);
	}
	printf("%s resident_kib %ld\n", name, resident_kib());
	for (long i = 0; i < n; i++) {
		read_block(&sum, blocks[i], size);
		free(blocks[i]);
	}
	free(blocks);
	print_sum(name, &sum);
}

static void footprint16(void)
{
	footprint("footprint16", FP_MALLOC, 16, 1000000);
}

static void footprint4k(void)
{
	footprint("footprint4k", FP_MALLOC, 4096, 100000);
}

static void footprintvalloc(void)
{
	footprint("footprintvalloc", FP_VALLOC, 4096, 100000);
}

static void footprintmemalign(void)
{
	footprint("footprintmemalign", FP_MEMALIGN, 4096, 100000);
}

static void footprintposix(void)
{
	footprint("footprintposix", FP_POSIX_MEMALIGN, 4096, 100000);
}

/* ---- the command ------------------------------------------------------- */

static const struct {
	const char *name;
	void (*run)(void);
} workloads[] = {
	{ "larson", larson },
	{ "prodcons", prodcons },
	{ "cfrac", cfrac },
	{ "pairs", pairs },
	{ "alloctest", alloctest },
	{ "sh6", sh6 },
	{ "aligned", aligned },
	{ "footprint16", footprint16 },
	{ "footprint4k", footprint4k },
	{ "footprintvalloc", footprintvalloc },
	{ "footprintmemalign", footprintmemalign },
	{ "footprintposix", footprintposix },
};

#define NWORKLOADS (sizeof(workloads) / sizeof(workloads[0]))

static int usage(void)
{
	fprintf(stderr, "usage: preload-workloads NAME SCALE\n"
			"  SCALE: a number > 0 multiplying the work (1: the "
			"timed size)\n"
			"  NAME:");
	for (size_t i = 0; i < NWORKLOADS; i++)
		fprintf(stderr, " %s", workloads[i].name);
	fprintf(stderr, "\n");
	return 2;
}

int main(int argc, char **argv)
{
	char *end;

	if (argc != 3)
		return usage();
	errno = 0;
	scale = strtod(argv[2], &end);
	if (errno || end == argv[2] || *end || !(scale > 0) || scale > 1000) {
		fprintf(stderr, "preload-workloads: bad SCALE '%s'\n", argv[2]);
		return usage();
	}
	for (size_t i = 0; i < NWORKLOADS; i++)
		if (!strcmp(argv[1], workloads[i].name)) {
			workloads[i].run();
			return fflush(stdout) ? 1 : 0;
		}
	fprintf(stderr, "preload-workloads: no workload '%s'\n", argv[1]);
	return usage();
}
