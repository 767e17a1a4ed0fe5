/* SPDX-License-Identifier: MIT */
/*
 * reporter/ptrtable.h - the table of live blocks, in 64 shards: the hot
 * operations, inline so that recording a block costs no extra calls.
 *
 * A pointer's region picks its shard (see shard_of); each shard is an
 * open-addressing table with linear probing and its own spinlock, so two
 * threads only meet when their blocks come from the same regions.
 * Deletion shifts the following run back instead of leaving tombstones,
 * so the table never fills with dead slots.  Each shard also remembers
 * its last REP_RECENT frees, which is how a second free of the same
 * pointer is told from a pointer the reporter never saw.
 *
 * The table's memory comes from alloy's arena (kernel/arena.h), never from
 * an allocator the reporter watches or from the process's malloc: the
 * reporter must not report itself, nor recurse into a malloc that alloy
 * serves.  Growing, listing and the rest are in ptrtable.c.
 */
#ifndef ALLOY_REPORTER_PTRTABLE_H
#define ALLOY_REPORTER_PTRTABLE_H

#include <sched.h>
#include <string.h>

#include "kernel/hash.h"
#include "internal.h"

#define REP_NSHARDS 64
#define REP_RECENT  32
_Static_assert(REP_NSHARDS == 64, "shard_of takes the top 6 bits");

struct rep_shard {
	atomic_flag lock;
	size_t cap; /* power of two, or 0 */
	size_t used;
	struct rep_block *slots;
	unsigned recent_next;
	uintptr_t recent[REP_RECENT];
} __attribute__((aligned(64)));

extern ALLOY_HIDDEN struct rep_shard alloy__rep_shards[REP_NSHARDS];

/* Make room for one more block in s (under its lock): 0 or -ENOMEM. */
ALLOY_HIDDEN int alloy__ptrtable_grow(struct rep_shard *s);

/*
 * The shard comes from the 2 MiB region the block lies in, not from the
 * block itself.  Allocators hand each thread (glibc arenas, jemalloc and
 * mimalloc thread caches) memory from regions of its own, so a thread
 * mostly meets only its own shards and their lines stay in its cache.
 */
#define REGION_SHIFT 21

/*
 * The slot key of a block: a mix of the 1 KiB chunk it lies in, then its
 * place in the chunk in 16-byte units, so that blocks in one chunk get
 * neighbouring slots.  An allocator hands out neighbouring blocks one
 * after another and their frees come in runs too; a well-mixed hash of
 * the whole address sent each to a cache line of its own in a table of
 * 64 bytes per live block, a miss at every allocation and every free once
 * the table outgrew the cache.  Chunks are still spread at random, so
 * blocks at a fixed stride (page-aligned ones) do not pile up on a few
 * slots as raw address bits would make them.
 */
#define CHUNK_SHIFT 10

static inline uint64_t hash_ptr(uintptr_t p)
{
	uint64_t chunk = alloy__hash_top((uint64_t)p >> CHUNK_SHIFT) >> 32;

	return chunk << (CHUNK_SHIFT - 4) |
	       (((uint64_t)p >> 4) & ((1u << (CHUNK_SHIFT - 4)) - 1));
}

static inline void shard_lock(struct rep_shard *s)
{
	int spins = 0;

	while (atomic_flag_test_and_set_explicit(&s->lock,
						 memory_order_acquire))
		if (++spins > 64) {
			sched_yield();
			spins = 0;
		}
}

static inline void shard_unlock(struct rep_shard *s)
{
	atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

static inline struct rep_shard *shard_of(uintptr_t p, uint64_t *h)
{
	*h = hash_ptr(p);
	/* The top 6 bits: one of 64 shards. */
	return &alloy__rep_shards[alloy__hash_top(p >> REGION_SHIFT) >> 58];
}

/* The home slot: the low bits of the key, as many as cap needs. */
static inline size_t home(uint64_t h, size_t cap)
{
	return (size_t)h & (cap - 1);
}

/*
 * Record a live block; 0, or -ENOMEM (then it is simply not recorded).
 * A pointer already live can only be one the reporter missed freeing:
 * its record is replaced.  *traced is the trace's generation when the
 * block went in (0: no trace), read under the shard's lock: a trace that
 * starts (with every shard locked, events.c) has each block either in
 * its list of blocks live at its start or as an event after it, and an
 * event of an earlier trace is never written into a later one.
 */
static inline __attribute__((always_inline)) int
alloy__ptrtable_insert(const struct rep_block *b, uint32_t *traced)
{
	uint64_t h;
	struct rep_shard *s = shard_of(b->ptr, &h);
	size_t i;

	shard_lock(s);
	/* Keep the load at most one half: probes stay short. */
	if (unlikely(2 * (s->used + 1) > s->cap) && alloy__ptrtable_grow(s)) {
		shard_unlock(s);
		return -ENOMEM;
	}
	for (i = home(h, s->cap); s->slots[i].ptr; i = (i + 1) & (s->cap - 1))
		if (s->slots[i].ptr == b->ptr)
			break;
	if (s->slots[i].ptr != b->ptr)
		s->used++;
	s->slots[i] = *b;
	*traced = atomic_load_explicit(&alloy__rep_trace_gen,
				       memory_order_relaxed);
	shard_unlock(s);
	return 0;
}

/* Remove slot i and shift back the run that follows it. */
static inline void rep_delete_at(struct rep_shard *s, size_t i)
{
	size_t mask = s->cap - 1;
	size_t j = i;

	for (;;) {
		j = (j + 1) & mask;
		if (!s->slots[j].ptr)
			break;
		size_t k = home(hash_ptr(s->slots[j].ptr), s->cap);

		/* Move j to the hole at i unless its home lies in (i, j]. */
		if ((j > i && (k <= i || k > j)) ||
		    (j < i && (k <= i && k > j))) {
			s->slots[i] = s->slots[j];
			i = j;
		}
	}
	memset(&s->slots[i], 0, sizeof(s->slots[i]));
	s->used--;
}

/*
 * Remove ptr and copy its record to *out: 0; -ENOENT never seen;
 * -EALREADY freed recently (a double free).  *traced as for insert.
 */
static inline __attribute__((always_inline)) int
alloy__ptrtable_remove(uintptr_t ptr, struct rep_block *out, uint32_t *traced)
{
	uint64_t h;
	struct rep_shard *s = shard_of(ptr, &h);
	int rc = -ENOENT;

	shard_lock(s);
	if (s->cap) {
		for (size_t i = home(h, s->cap); s->slots[i].ptr;
		     i = (i + 1) & (s->cap - 1)) {
			if (s->slots[i].ptr != ptr)
				continue;
			*out = s->slots[i];
			rep_delete_at(s, i);
			s->recent[s->recent_next++ % REP_RECENT] = ptr;
			rc = 0;
			break;
		}
	}
	/*
	 * Not live but freed lately: a double free.  A pointer freed and
	 * made again would have been found live above, so the ring needs no
	 * cleaning when blocks are made.
	 */
	if (rc) {
		for (int i = 0; i < REP_RECENT; i++)
			if (s->recent[i] == ptr && ptr)
				rc = -EALREADY;
	}
	*traced = atomic_load_explicit(&alloy__rep_trace_gen,
				       memory_order_relaxed);
	shard_unlock(s);
	return rc;
}

#endif /* ALLOY_REPORTER_PTRTABLE_H */
