/* SPDX-License-Identifier: MIT */
/*
 * analysis/torch_snapshot.h - a caching allocator's segments and blocks
 * at one moment, written as the snapshot PyTorch's
 * torch.cuda.memory_snapshot() returns, pickled, so that PyTorch's own
 * viewer (torch.cuda._memory_viz) reads it.
 *
 * Whoever walks the allocator fills a struct tsnap (the analysis does not
 * know the allocators); a block may name the trace stack that made it.
 */
#ifndef ALLOY_ANALYSIS_TORCH_SNAPSHOT_H
#define ALLOY_ANALYSIS_TORCH_SNAPSHOT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "symbols.h"
#include "trace.h"

/* PyTorch's block states. */
enum tsnap_state {
	TSNAP_INACTIVE = 0,
	TSNAP_ACTIVE_ALLOCATED,
	TSNAP_ACTIVE_PENDING_FREE,
};

struct tsnap_block {
	uint64_t address, size, requested;
	int state;	/* enum tsnap_state */
	uint32_t stack; /* trace node id, 0: none recorded */
};

struct tsnap_segment {
	int device;
	uint64_t address, total_size, stream;
	bool small;	  /* the small pool's */
	bool expandable;  /* a mapped range that grows and shrinks */
	uint64_t pool_id; /* its graph pool, 0: none */
	size_t first, n;  /* its blocks in tsnap.blk, in address order */
};

struct tsnap {
	struct tsnap_segment *seg;
	size_t nseg, segcap;
	struct tsnap_block *blk;
	size_t nblk, blkcap;
};

/* Append a segment (its blocks follow); 0 or -ENOMEM. */
int tsnap_add_segment(struct tsnap *s, const struct tsnap_segment *seg);
/* Append a block to the last segment; 0, -ENOMEM or -EINVAL (none). */
int tsnap_add_block(struct tsnap *s, const struct tsnap_block *b);
void tsnap_free(struct tsnap *s);

/* The sums a reader of the snapshot sees (PyTorch's stats). */
struct tsnap_totals {
	uint64_t segments, reserved, allocated, requested, pending, inactive;
	uint64_t blocks_allocated;
};
void tsnap_totals(const struct tsnap *s, struct tsnap_totals *t);

/*
 * Write s as a pickled list of segment dictionaries (the keys and states
 * of PyTorch's snapshot).  A block's frames come from tr's stack of it,
 * named by sym (both may be NULL: no frames).  0, or -ENOMEM.
 */
int tsnap_write_pickle(FILE *out, const struct tsnap *s, const struct trace *tr,
		       struct symbols *sym);

#endif /* ALLOY_ANALYSIS_TORCH_SNAPSHOT_H */
