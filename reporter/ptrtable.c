// SPDX-License-Identifier: MIT
/*
 * reporter/ptrtable.c - the table of live blocks: growing a shard, and
 * the slow operations over all shards.  The hot path is ptrtable.h.
 */
#include "ptrtable.h"
#include "kernel/arena.h"

#define MIN_CAP 64

struct rep_shard alloy__rep_shards[REP_NSHARDS];

/* Place b in slots (known not to hold it); cap has room. */
static void place(struct rep_block *slots, size_t cap,
		  const struct rep_block *b)
{
	size_t i = home(hash_ptr(b->ptr), cap);

	while (slots[i].ptr)
		i = (i + 1) & (cap - 1);
	slots[i] = *b;
}

int alloy__ptrtable_grow(struct rep_shard *s)
{
	size_t cap = s->cap ? 2 * s->cap : MIN_CAP;
	struct rep_block *n = alloy__arena_alloc(cap * sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i].ptr)
			place(n, cap, &s->slots[i]);
	/* Under the shard's lock, which every reader of slots takes. */
	alloy__arena_free(s->slots, s->cap * sizeof(*n));
	s->slots = n;
	s->cap = cap;
	return 0;
}

int alloy__ptrtable_foreach(int (*fn)(const struct rep_block *b, void *arg),
			    void *arg)
{
	int rc = 0;

	for (int n = 0; n < REP_NSHARDS && !rc; n++) {
		struct rep_shard *s = &alloy__rep_shards[n];

		shard_lock(s);
		for (size_t i = 0; i < s->cap && !rc; i++)
			if (s->slots[i].ptr)
				rc = fn(&s->slots[i], arg);
		shard_unlock(s);
	}
	return rc;
}

int alloy__ptrtable_foreach_locked(int (*fn)(const struct rep_block *b,
					     void *arg),
				   void *arg)
{
	int rc = 0;

	for (int n = 0; n < REP_NSHARDS && !rc; n++) {
		struct rep_shard *s = &alloy__rep_shards[n];

		for (size_t i = 0; i < s->cap && !rc; i++)
			if (s->slots[i].ptr)
				rc = fn(&s->slots[i], arg);
	}
	return rc;
}

bool alloy__ptrtable_empty(void)
{
	bool empty = true;

	for (int n = 0; n < REP_NSHARDS && empty; n++) {
		shard_lock(&alloy__rep_shards[n]);
		empty = !alloy__rep_shards[n].used;
		shard_unlock(&alloy__rep_shards[n]);
	}
	return empty;
}

void alloy__ptrtable_lock_all(void)
{
	for (int n = 0; n < REP_NSHARDS; n++)
		shard_lock(&alloy__rep_shards[n]);
}

void alloy__ptrtable_unlock_all(void)
{
	for (int n = REP_NSHARDS - 1; n >= 0; n--)
		shard_unlock(&alloy__rep_shards[n]);
}
