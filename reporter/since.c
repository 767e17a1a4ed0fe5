// SPDX-License-Identifier: MIT
/*
 * reporter/since.c - what a long-running program made after a point and
 * still holds, by the interpreted lines that made it: the memory a loop
 * that should be flat keeps.
 *
 * A mark is a number every recorded block carries (the one in force
 * when it was made); alloy_reporter_mark() moves it on, so blocks made
 * after a mark carry it or a later one.  The live blocks are grouped by
 * stack (group.c), and stacks whose interpreted frames name the same
 * lines (native frames apart, or calls at several places of one line)
 * are summed into one group.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "kernel/arena.h"

_Atomic uint32_t alloy__rep_mark;

uint64_t alloy_reporter_mark(void)
{
	return atomic_fetch_add(&alloy__rep_mark, 1) + 1;
}

/* The interpreted frames of stack id, innermost first, into l. */
static void lines_of(uint32_t id, struct alloy_reporter_line *l)
{
	for (int n = 0; id && n < REP_MAX_FRAMES &&
			l->nframes < ALLOY_REPORTER_LINE_FRAMES;
	     n++) {
		const struct rep_node *nd = alloy__rep_node(id);
		struct alloy_reporter_frame_info *f = &l->frames[l->nframes];

		if (alloy__rep_frame_interp(nd->frame) &&
		    !alloy__rep_frame_describe(nd->frame, f) && f->function)
			l->nframes++;
		id = nd->parent;
	}
}

static bool same_lines(const struct alloy_reporter_line *a,
		       const struct alloy_reporter_line *b)
{
	if (a->nframes != b->nframes)
		return false;
	for (uint32_t i = 0; i < a->nframes; i++)
		if (a->frames[i].code != b->frames[i].code ||
		    a->frames[i].line != b->frames[i].line)
			return false;
	return true;
}

int alloy_reporter_live_since(uint64_t mark, struct alloy_reporter_line *out,
			      size_t max)
{
	struct alloy_reporter_line *all;
	struct rep_groups t;
	size_t n = 0, room;

	if ((max && !out) || mark > UINT32_MAX)
		return -EINVAL;
	if (!alloy_reporter_enabled())
		return 0;
	/* Every stack: several of them may sum into one group of lines. */
	if (alloy__rep_group_since(&t, REP_BY_STACK, 0, (uint32_t)mark) < 0)
		return -ENOMEM;
	room = (t.n ? t.n : 1) * sizeof(*all);
	all = alloy__arena_alloc(room);
	if (!all) {
		alloy__rep_groups_free(&t);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t.n; i++) {
		struct alloy_reporter_line l = { .bytes = t.g[i].bytes,
						 .blocks = t.g[i].blocks };
		size_t j;

		if (t.g[i].key != REP_GROUP_NONE)
			lines_of((uint32_t)t.g[i].key, &l);
		for (j = 0; j < n && !same_lines(&all[j], &l); j++)
			;
		if (j < n) {
			all[j].bytes += l.bytes;
			all[j].blocks += l.blocks;
		} else {
			all[n++] = l;
		}
	}
	alloy__rep_groups_free(&t);
	/* The most bytes first: selection, as qsort() may call malloc. */
	for (size_t i = 0; i < max && i < n; i++) {
		size_t best = i;

		for (size_t j = i + 1; j < n; j++)
			if (all[j].bytes > all[best].bytes)
				best = j;
		out[i] = all[best];
		all[best] = all[i];
	}
	alloy__arena_free(all, room);
	return n > INT32_MAX ? INT32_MAX : (int)n;
}
