// SPDX-License-Identifier: MIT
/*
 * reporter/intern.c - the growing tables the stack table and the owner
 * labels are made of: records numbered from 1 that never move, and hash
 * indexes over them that readers walk without a lock.
 *
 * Both are written rarely (a new call stack, a new label) and read on
 * every recorded allocation, so reads are plain acquire loads and writes
 * happen under their owner's lock.  Memory comes from alloy's arena: the
 * reporter runs inside allocations and must not call the process's
 * malloc.  An index that grows leaves its old array to threads that may
 * still be reading it; the old arrays together are smaller than the new.
 */
#include "internal.h"
#include "kernel/arena.h"

#define CHUNK_RECORDS (1u << REP_VEC_CHUNK_SHIFT)

void *alloy__rep_vec_next(struct rep_vec *v)
{
	uint32_t i = atomic_load_explicit(&v->n, memory_order_relaxed);
	uint32_t c = i >> REP_VEC_CHUNK_SHIFT;
	char *chunk;

	if (c >= REP_VEC_CHUNKS)
		return NULL;
	chunk = atomic_load_explicit(&v->chunk[c], memory_order_relaxed);
	if (!chunk) {
		chunk = alloy__arena_alloc(CHUNK_RECORDS * v->elem);
		if (!chunk)
			return NULL;
		atomic_store_explicit(&v->chunk[c], chunk,
				      memory_order_release);
	}
	return chunk + (size_t)(i & (CHUNK_RECORDS - 1)) * v->elem;
}

uint32_t alloy__rep_vec_publish(struct rep_vec *v)
{
	uint32_t n = atomic_load_explicit(&v->n, memory_order_relaxed) + 1;

	atomic_store_explicit(&v->n, n, memory_order_release);
	return n;
}

uint32_t alloy__rep_index_find(struct rep_index *x, uint32_t hash,
			       bool (*same)(uint32_t id, const void *key),
			       const void *key)
{
	struct rep_slots *s =
		atomic_load_explicit(&x->cur, memory_order_acquire);
	size_t mask, i;

	if (!s)
		return 0;
	mask = s->cap - 1;
	for (i = hash & mask;; i = (i + 1) & mask) {
		uint64_t v =
			atomic_load_explicit(&s->slot[i], memory_order_acquire);

		if (!v)
			return 0;
		if ((uint32_t)(v >> 32) == hash && same((uint32_t)v, key))
			return (uint32_t)v;
	}
}

static void place(struct rep_slots *s, uint64_t v)
{
	size_t mask = s->cap - 1, i;

	for (i = (uint32_t)(v >> 32) & mask;
	     atomic_load_explicit(&s->slot[i], memory_order_relaxed);
	     i = (i + 1) & mask)
		;
	atomic_store_explicit(&s->slot[i], v, memory_order_release);
	s->used++;
}

int alloy__rep_index_add(struct rep_index *x, uint32_t hash, uint32_t id)
{
	struct rep_slots *s =
		atomic_load_explicit(&x->cur, memory_order_relaxed);

	/* At most half full, so that probes stay short. */
	if (!s || 2 * (s->used + 1) > s->cap) {
		size_t cap = s ? 2 * s->cap : 1024;
		struct rep_slots *n = alloy__arena_alloc(
			sizeof(*n) + cap * sizeof(n->slot[0]));

		if (!n)
			return -ENOMEM;
		n->cap = cap;
		for (size_t i = 0; s && i < s->cap; i++) {
			uint64_t v = atomic_load_explicit(&s->slot[i],
							  memory_order_relaxed);

			if (v)
				place(n, v);
		}
		atomic_store_explicit(&x->cur, n, memory_order_release);
		s = n;
	}
	place(s, (uint64_t)hash << 32 | id);
	return 0;
}
