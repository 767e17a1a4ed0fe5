// SPDX-License-Identifier: MIT
/*
 * analysis/torch_snapshot.c - the snapshot PyTorch's memory viewer reads.
 *
 * torch.cuda.memory_snapshot() returns a list of segments, each a
 * dictionary with its device, address, total_size, allocated_size,
 * active_size, requested_size, stream, segment_type ("small" or "large"),
 * segment_pool_id, is_expandable, frames and blocks; a block has its
 * address, size, requested_size, state ("active_allocated",
 * "active_pending_free" or "inactive") and frames, innermost first, each
 * {filename, line, name}.  Older viewers read a block's frames from its
 * "history" (one entry per allocation in the block, with real_size), so
 * an allocated block carries both.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pickle.h"
#include "torch_snapshot.h"

/* Frames written per block: the viewer shows call paths, not recursion. */
#define MAX_FRAMES 64

static int grow(void **v, size_t *cap, size_t n, size_t elem)
{
	size_t c;
	void *nv;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	nv = realloc(*v, c * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = c;
	return 0;
}

int tsnap_add_segment(struct tsnap *s, const struct tsnap_segment *seg)
{
	if (grow((void **)&s->seg, &s->segcap, s->nseg, sizeof(*s->seg)))
		return -ENOMEM;
	s->seg[s->nseg] = *seg;
	s->seg[s->nseg].first = s->nblk;
	s->seg[s->nseg].n = 0;
	s->nseg++;
	return 0;
}

int tsnap_add_block(struct tsnap *s, const struct tsnap_block *b)
{
	if (!s->nseg)
		return -EINVAL;
	if (grow((void **)&s->blk, &s->blkcap, s->nblk, sizeof(*s->blk)))
		return -ENOMEM;
	s->blk[s->nblk++] = *b;
	s->seg[s->nseg - 1].n++;
	return 0;
}

void tsnap_free(struct tsnap *s)
{
	free(s->seg);
	free(s->blk);
	memset(s, 0, sizeof(*s));
}

void tsnap_totals(const struct tsnap *s, struct tsnap_totals *t)
{
	memset(t, 0, sizeof(*t));
	t->segments = s->nseg;
	for (size_t i = 0; i < s->nseg; i++)
		t->reserved += s->seg[i].total_size;
	for (size_t i = 0; i < s->nblk; i++) {
		const struct tsnap_block *b = &s->blk[i];

		if (b->state == TSNAP_ACTIVE_ALLOCATED) {
			t->allocated += b->size;
			t->requested += b->requested;
			t->blocks_allocated++;
		} else if (b->state == TSNAP_ACTIVE_PENDING_FREE) {
			t->pending += b->size;
		} else {
			t->inactive += b->size;
		}
	}
}

static const char *const state_names[] = {
	"inactive",
	"active_allocated",
	"active_pending_free",
};

static void write_frames(struct pickle *p, const struct trace *tr,
			 struct symbols *sym, uint32_t stack)
{
	char buf[512];
	int depth = 0;

	pickle_list_open(p);
	while (tr && sym && stack && stack < tr->nnodes &&
	       tr->nodes[stack].defined && depth++ < MAX_FRAMES) {
		const struct sym_frame *f = symbols_frame(sym, stack);

		pickle_dict_open(p);
		pickle_key_str(p, "filename",
			       f && f->file	? f->file
			       : f && f->module ? f->module
						: "??");
		pickle_key_uint(p, "line", f ? f->line : 0);
		pickle_key_str(p, "name",
			       symbols_func(sym, stack, buf, sizeof(buf)));
		pickle_dict_close(p);
		stack = tr->nodes[stack].parent;
	}
	pickle_list_close(p);
}

static void write_block(struct pickle *p, const struct tsnap_block *b,
			const struct trace *tr, struct symbols *sym)
{
	pickle_dict_open(p);
	pickle_key_uint(p, "address", b->address);
	pickle_key_uint(p, "size", b->size);
	pickle_key_uint(p, "requested_size", b->requested);
	pickle_key_str(p, "state", state_names[b->state]);
	pickle_str(p, "frames");
	write_frames(p, tr, sym, b->stack);
	if (b->state == TSNAP_ACTIVE_ALLOCATED) {
		pickle_str(p, "history");
		pickle_list_open(p);
		pickle_dict_open(p);
		pickle_key_uint(p, "addr", b->address);
		pickle_key_uint(p, "real_size", b->requested);
		pickle_str(p, "frames");
		write_frames(p, tr, sym, b->stack);
		pickle_dict_close(p);
		pickle_list_close(p);
	}
	pickle_dict_close(p);
}

static void write_segment(struct pickle *p, const struct tsnap *s,
			  const struct tsnap_segment *seg,
			  const struct trace *tr, struct symbols *sym)
{
	uint64_t allocated = 0, active = 0, requested = 0;

	for (size_t i = seg->first; i < seg->first + seg->n; i++) {
		const struct tsnap_block *b = &s->blk[i];

		if (b->state == TSNAP_ACTIVE_ALLOCATED) {
			allocated += b->size;
			requested += b->requested;
		}
		if (b->state != TSNAP_INACTIVE)
			active += b->size;
	}
	pickle_dict_open(p);
	pickle_key_int(p, "device", seg->device);
	pickle_key_uint(p, "address", seg->address);
	pickle_key_uint(p, "total_size", seg->total_size);
	pickle_key_uint(p, "allocated_size", allocated);
	pickle_key_uint(p, "active_size", active);
	pickle_key_uint(p, "requested_size", requested);
	pickle_key_uint(p, "stream", seg->stream);
	pickle_key_str(p, "segment_type", seg->small ? "small" : "large");
	pickle_str(p, "segment_pool_id");
	pickle_tuple_open(p);
	pickle_int(p, 0);
	pickle_uint(p, seg->pool_id);
	pickle_tuple_close(p);
	pickle_str(p, "is_expandable");
	pickle_bool(p, seg->expandable);
	pickle_str(p, "frames");
	pickle_list_open(p);
	pickle_list_close(p);
	pickle_str(p, "blocks");
	pickle_list_open(p);
	for (size_t i = seg->first; i < seg->first + seg->n; i++)
		write_block(p, &s->blk[i], tr, sym);
	pickle_list_close(p);
	pickle_dict_close(p);
}

int tsnap_write_pickle(FILE *out, const struct tsnap *s, const struct trace *tr,
		       struct symbols *sym)
{
	struct pickle p;

	if (tr && sym && s->nblk) {
		uint32_t *stacks = malloc(s->nblk * sizeof(*stacks));
		size_t n = 0;

		if (!stacks)
			return -ENOMEM;
		for (size_t i = 0; i < s->nblk; i++)
			if (s->blk[i].stack)
				stacks[n++] = s->blk[i].stack;
		symbols_resolve(sym, stacks, n);
		free(stacks);
	}
	pickle_begin(&p, out);
	pickle_list_open(&p);
	for (size_t i = 0; i < s->nseg; i++)
		write_segment(&p, s, &s->seg[i], tr, sym);
	pickle_list_close(&p);
	pickle_end(&p);
	return 0;
}
