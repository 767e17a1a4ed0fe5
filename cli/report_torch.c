// SPDX-License-Identifier: MIT
/*
 * cli/report_torch.c - a trace's CUDA memory as PyTorch's snapshot.
 *
 * A trace holds the blocks a program asked for, not the allocator's
 * segments, so the segments are made again: the blocks of every "cuda:N"
 * series are replayed, in order, on a caching allocator of their own over
 * a simulated device (the policy is the same code as cuda_caching's), up
 * to the moment asked for, and that allocator's segments and blocks are
 * then walked.  A replayed block keeps its trace stack, so the viewer
 * shows where each block was made when the trace recorded stacks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <alloy/cuda.h>

#include "analysis/symbols.h"
#include "analysis/torch_snapshot.h"
#include "report_torch.h"

/* 64 GiB of simulated device: mapped without reserve, untouched is free. */
#define SIM_CAPACITY ((size_t)64 << 30)
#define SIM_NAME     "alloy_report_torch"

/* The CUDA device of a series ("cuda:3" -> 3), or -1 for any other. */
static int series_device(const struct trace_series *s)
{
	char *end;
	long d;

	if (strncmp(s->device, "cuda:", 5))
		return -1;
	d = strtol(s->device + 5, &end, 10);
	if (end == s->device + 5 || *end || d < 0 || d > 15)
		return -1;
	return (int)d;
}

/*
 * The index of the last event to replay: the first at which the live
 * bytes of the CUDA series reach their highest, or the last event at or
 * before t_ns.  SIZE_MAX when no event is in range.
 */
static size_t moment(const struct trace *tr, const int *dev, bool at_peak,
		     uint64_t t_ns)
{
	uint64_t live = 0, best = 0;
	size_t at = SIZE_MAX;

	for (size_t i = 0; i < tr->nev; i++) {
		const struct trace_event *e = &tr->ev[i];

		if (!at_peak) {
			if (e->t_ns > t_ns)
				break;
			at = i;
			continue;
		}
		if (dev[e->series] < 0)
			continue;
		if (e->op == TRACE_ALLOC)
			live += e->size;
		else if (e->op == TRACE_FREE)
			live -= e->size;
		if (live > best) {
			best = live;
			at = i;
		}
	}
	return at;
}

struct walk {
	struct tsnap *s;
	struct blockmap *stacks; /* block address -> trace stack */
	int rc;
};

static int walk_block(const struct alloy_cuda_block_info *b, void *arg)
{
	struct walk *w = arg;
	struct blockmap_slot *slot;
	struct tsnap_block tb = { .address = b->address,
				  .size = b->size,
				  .requested = b->requested_size };

	if (b->segment_start) {
		struct tsnap_segment seg = {
			.device = b->device,
			.address = b->segment,
			.total_size = b->segment_size,
			.stream = (uint64_t)(uintptr_t)b->stream,
			.small = b->pool == ALLOY_CUDA_POOL_SMALL,
			.expandable = b->expandable,
			.pool_id = b->pool_id,
		};

		w->rc = tsnap_add_segment(w->s, &seg);
		if (w->rc)
			return w->rc;
	}
	switch (b->state) {
	case ALLOY_CUDA_BLOCK_ACTIVE_ALLOCATED:
		tb.state = TSNAP_ACTIVE_ALLOCATED;
		slot = blockmap_find(w->stacks, b->address);
		if (slot && trace_stack_known((uint32_t)slot->value))
			tb.stack = (uint32_t)slot->value;
		break;
	case ALLOY_CUDA_BLOCK_ACTIVE_PENDING_FREE:
		tb.state = TSNAP_ACTIVE_PENDING_FREE;
		break;
	default:
		tb.state = TSNAP_INACTIVE;
		break;
	}
	w->rc = tsnap_add_block(w->s, &tb);
	return w->rc;
}

static int set_options(struct alloy_allocator *a,
		       const struct torch_snap_opts *o)
{
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);

	for (size_t i = 0; i < o->noptions; i++) {
		char key[128];
		const char *colon = strchr(o->options[i], ':');
		size_t n = colon ? (size_t)(colon - o->options[i]) : 0;

		if (!colon || !n || n >= sizeof(key)) {
			fprintf(stderr,
				"alloy report: --option wants KEY:VALUE, not \"%s\"\n",
				o->options[i]);
			return -1;
		}
		memcpy(key, o->options[i], n);
		key[n] = '\0';
		if (ops->set_option(alloy_allocator_ctx(a), key, colon + 1)) {
			fprintf(stderr, "alloy report: --option %s: %s\n",
				o->options[i], alloy_last_error());
			return -1;
		}
	}
	return 0;
}

/* Replay events 0..last of the CUDA series; blocks stay live in dp. */
static int replay(const struct trace *tr, const int *dev, size_t last,
		  struct alloy_allocator *a, struct blockmap *ids,
		  struct blockmap *stacks, struct alloy_data_ptr **dps,
		  size_t *ndp)
{
	size_t cap = 0;

	for (size_t i = 0; last != SIZE_MAX && i <= last; i++) {
		const struct trace_event *e = &tr->ev[i];
		struct blockmap_slot *s;
		struct alloy_data_ptr *dp;

		if (dev[e->series] < 0)
			continue;
		if (e->op == TRACE_ALLOC) {
			if (*ndp == cap) {
				size_t c = cap ? 2 * cap : 1024;
				struct alloy_data_ptr *v =
					realloc(*dps, c * sizeof(*v));

				if (!v)
					return -ENOMEM;
				*dps = v;
				cap = c;
			}
			dp = &(*dps)[*ndp];
			alloy_cuda_set_device(dev[e->series]);
			if (alloy_alloc(a, e->size, e->align, 0, dp))
				return -EIO;
			if (blockmap_insert(ids, e->block, *ndp + 1) ||
			    blockmap_insert(stacks, (uintptr_t)dp->ptr,
					    e->stack))
				return -ENOMEM;
			(*ndp)++;
		} else if (e->op == TRACE_FREE) {
			s = blockmap_find(ids, e->block);
			if (!s)
				continue;
			dp = &(*dps)[s->value - 1];
			blockmap_remove(ids, s);
			s = blockmap_find(stacks, (uintptr_t)dp->ptr);
			if (s)
				blockmap_remove(stacks, s);
			alloy_data_ptr_free(dp);
			dp->ptr = NULL;
		}
	}
	return 0;
}

int report_torch_snapshot(FILE *out, const struct torch_snap_opts *o,
			  const struct trace *tr)
{
	struct blockmap ids = { 0 }, stacks = { 0 };
	struct alloy_data_ptr *dps = NULL;
	struct alloy_cuda_sim *sim;
	struct alloy_allocator *a = NULL;
	struct tsnap s = { 0 };
	struct tsnap_totals t;
	struct symbols *sym = NULL;
	struct walk w = { .s = &s, .stacks = &stacks };
	int dev[TRACE_MAX_SERIES], ndev = 1, rc = -1;
	size_t ndp = 0, last;

	for (size_t i = 0; i < TRACE_MAX_SERIES; i++)
		dev[i] = i < tr->nseries ? series_device(&tr->series[i]) : -1;
	for (size_t i = 0; i < tr->nseries; i++)
		if (dev[i] + 1 > ndev)
			ndev = dev[i] + 1;
	if (!o->at_peak && o->t_ns > tr->end_ns) {
		fprintf(stderr,
			"alloy report: %s: --at is past the end of the trace (%llu ns)\n",
			o->path, (unsigned long long)tr->end_ns);
		return -1;
	}
	last = moment(tr, dev, o->at_peak, o->t_ns);
	if (alloy_cuda_sim_create(SIM_CAPACITY, &sim) ||
	    alloy_cuda_sim_set_device_count(sim, ndev) ||
	    alloy_cuda_caching_register_sim(sim, SIM_NAME, &a)) {
		fprintf(stderr,
			"alloy report: cannot make the simulated device: %s\n",
			alloy_last_error());
		return -1;
	}
	if (set_options(a, o))
		goto out;
	rc = replay(tr, dev, last, a, &ids, &stacks, &dps, &ndp);
	if (rc) {
		fprintf(stderr,
			"alloy report: %s: replaying for the snapshot: %s\n",
			o->path,
			rc == -EIO ? alloy_last_error() : "out of memory");
		rc = -1;
		goto out_blocks;
	}
	if (alloy_cuda_caching_foreach_block(a, walk_block, &w) || w.rc) {
		fprintf(stderr, "alloy report: out of memory\n");
		rc = -1;
		goto out_blocks;
	}
	sym = symbols_new(tr, false);
	if (!sym || tsnap_write_pickle(out, &s, tr, sym)) {
		fprintf(stderr, "alloy report: out of memory\n");
		rc = -1;
		goto out_blocks;
	}
	tsnap_totals(&s, &t);
	fprintf(stderr,
		"alloy report: torch snapshot of %s after event %zu: %llu segments, "
		"reserved %llu bytes, allocated %llu bytes in %llu blocks "
		"(requested %llu bytes), inactive %llu bytes\n",
		o->path, last == SIZE_MAX ? 0 : last + 1,
		(unsigned long long)t.segments, (unsigned long long)t.reserved,
		(unsigned long long)t.allocated,
		(unsigned long long)t.blocks_allocated,
		(unsigned long long)t.requested,
		(unsigned long long)t.inactive);
	rc = 0;
out_blocks:
	for (size_t i = 0; i < ndp; i++)
		if (dps[i].ptr)
			alloy_data_ptr_free(&dps[i]);
	symbols_free(sym);
	tsnap_free(&s);
	free(dps);
	blockmap_free(&ids);
	blockmap_free(&stacks);
out:
	alloy_unregister_allocator(SIM_NAME);
	return rc;
}
