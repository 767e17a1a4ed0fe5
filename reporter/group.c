// SPDX-License-Identifier: MIT
/*
 * reporter/group.c - the live blocks grouped by call site or by owner,
 * those holding the most bytes first: the leak summary at exit and the
 * live views (alloy_reporter_top, `alloy top`) read the same grouping.
 *
 * A group table is an open-addressing table in alloy's arena, sized from
 * a first count of the live blocks; blocks allocated between the count
 * and the grouping only find the table fuller, never overfull, because
 * it holds twice the count and a group needs a slot, not a block.  The
 * few largest are moved to the front by selection: the caller wants a
 * handful, and qsort() may call malloc.
 */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "kernel/arena.h"

struct grouping {
	struct rep_groups *t;
	size_t cap; /* a power of two */
	enum rep_group_by by;
	uint32_t since; /* blocks made under this mark or a later one */
};

static int count_block(const struct rep_block *b, void *arg)
{
	(void)b;
	(*(size_t *)arg)++;
	return 0;
}

static int add_block(const struct rep_block *b, void *arg)
{
	struct grouping *g = arg;
	struct rep_groups *t = g->t;
	uint64_t key = b->stack;
	size_t i, probes = 0;

	if (b->mark < g->since)
		return 0;
	if (g->by == REP_BY_OWNER)
		key = b->owner;
	else if (g->by == REP_BY_FRAME && key)
		key = alloy__rep_node(b->stack)->frame;
	if (!key)
		key = REP_GROUP_NONE;
	i = (size_t)(alloy__rep_mix(0, key) >> 32) & (g->cap - 1);
	while (t->g[i].key && t->g[i].key != key) {
		/* Full: the table outgrew its count; stop rather than spin. */
		if (++probes == g->cap)
			return 1;
		i = (i + 1) & (g->cap - 1);
	}
	t->g[i].key = key;
	t->g[i].bytes += b->size;
	t->g[i].blocks++;
	t->blocks++;
	t->bytes += b->size;
	return 0;
}

/* The first k of g[0..n) in order of bytes, ties by key. */
static void largest_first(struct rep_group *g, size_t n, size_t k)
{
	for (size_t i = 0; i < k && i < n; i++) {
		size_t best = i;

		for (size_t j = i + 1; j < n; j++)
			if (g[j].bytes > g[best].bytes ||
			    (g[j].bytes == g[best].bytes &&
			     g[j].key < g[best].key))
				best = j;
		struct rep_group tmp = g[i];

		g[i] = g[best];
		g[best] = tmp;
	}
}

int alloy__rep_group_live(struct rep_groups *t, enum rep_group_by by, size_t k)
{
	return alloy__rep_group_since(t, by, k, 0);
}

int alloy__rep_group_since(struct rep_groups *t, enum rep_group_by by, size_t k,
			   uint32_t since)
{
	struct grouping g = { .t = t, .cap = 64, .by = by, .since = since };
	size_t live = 0;

	memset(t, 0, sizeof(*t));
	alloy__ptrtable_foreach(count_block, &live);
	while (g.cap < 2 * live + 2)
		g.cap *= 2;
	t->room = g.cap * sizeof(*t->g);
	t->g = alloy__arena_alloc(t->room);
	if (!t->g) {
		t->room = 0;
		return -ENOMEM;
	}
	alloy__ptrtable_foreach(add_block, &g);
	for (size_t i = 0; i < g.cap; i++)
		if (t->g[i].key)
			t->g[t->n++] = t->g[i];
	largest_first(t->g, t->n, k);
	return 0;
}

void alloy__rep_groups_free(struct rep_groups *t)
{
	if (t->g)
		alloy__arena_free(t->g, t->room);
	memset(t, 0, sizeof(*t));
}

static void group_label(const struct rep_group *g, bool by_owner, char *buf,
			size_t len)
{
	if (g->key == REP_GROUP_NONE)
		snprintf(
			buf, len, "%s",
			by_owner
				? "(no owner)"
				: "(no call stack: backtrace on records them)");
	else if (by_owner)
		snprintf(buf, len, "%s",
			 alloy__rep_owner((uint32_t)g->key)->label);
	else
		alloy__rep_frame_str((uintptr_t)g->key, buf, len);
}

int alloy_reporter_top(enum alloy_reporter_group_by by,
		       struct alloy_reporter_group *groups, size_t n)
{
	bool by_owner = by == ALLOY_REPORTER_BY_OWNER;
	struct rep_groups t;
	size_t i;

	if ((by != ALLOY_REPORTER_BY_SITE && !by_owner) || (n && !groups))
		return -EINVAL;
	if (!alloy_reporter_enabled())
		return 0;
	if (alloy__rep_group_live(&t, by_owner ? REP_BY_OWNER : REP_BY_FRAME,
				  n) < 0)
		return -ENOMEM;
	for (i = 0; i < n && i < t.n; i++) {
		groups[i].bytes = t.g[i].bytes;
		groups[i].blocks = t.g[i].blocks;
		group_label(&t.g[i], by_owner, groups[i].label,
			    sizeof(groups[i].label));
	}
	alloy__rep_groups_free(&t);
	return (int)i;
}
