// SPDX-License-Identifier: MIT
/*
 * allocators/cuda_host.c - the pinned host caching allocator (cuda_host).
 *
 * Page-locked memory is slow to get (cudaHostAlloc maps and pins pages)
 * and is what makes host<->device copies asynchronous, so blocks are
 * cached: sizes round up to a power of two and each power has a free
 * list.  A block a copy used is not handed out again until that copy has
 * finished: whoever queues a copy from or to the block (or any part of
 * it) calls record_stream (the CUDA context does it for its async copies),
 * which notes the copy's stream on the block.  When the block is freed an
 * event is recorded on each of its streams, so that everything queued on
 * them until then is waited for (as cuda_caching does), and the block
 * waits on a pending list until the events have all completed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/base.h"
#include "allocators/cuda_policy.h"
#include "allocators/ptrmap.h"

#define CH_MIN_BLOCK 512u
#define CH_BINS	     64

enum ch_state { CH_FREE = 0, CH_ALLOCATED, CH_PENDING };

struct ch_block {
	void *ptr;
	size_t size; /* a power of two */
	int state;
	struct alloy__ptrvec streams; /* it was used on, while allocated */
	struct alloy__ptrvec events;  /* recorded at free, not yet done */
	struct ch_block *next;	      /* in a free list or the pending list */
};

struct ch {
	struct alloy__cuda_base b;   /* lock, src, ops, name */
	struct alloy__ptrmap blocks; /* every block it holds, by address */
	/*
	 * The same blocks sorted by address, to find the one that contains
	 * a pointer: copies are queued from or to the middle of a block too.
	 * Its elements are struct ch_block pointers.
	 */
	struct alloy__ptrvec sorted;
	struct ch_block *bins[CH_BINS];
	struct ch_block *pending;
	struct alloy__ptrvec spare_events; /* done events, for reuse */
	uint64_t allocated, reserved, peak_allocated, peak_reserved;
	uint64_t host_allocs, host_frees;
};

static int bin_of(size_t size)
{
	return 63 - __builtin_clzll(size);
}

static void put_event(struct ch *ch, void *ev)
{
	if (alloy__ptrvec_push(&ch->spare_events, ev))
		ch->b.src.ops->event_destroy(ch->b.src.ctx, ev);
}

/* Drop the completed events of b; true when none is left. */
static bool events_done(struct ch *ch, struct ch_block *b)
{
	size_t keep = 0;

	for (size_t i = 0; i < b->events.n; i++) {
		if (ch->b.src.ops->event_query(ch->b.src.ctx, b->events.v[i]) ==
		    1)
			put_event(ch, b->events.v[i]);
		else
			b->events.v[keep++] = b->events.v[i];
	}
	b->events.n = keep;
	return keep == 0;
}

/* Index of the first block starting above p. */
static size_t upper_bound(const struct ch *ch, uintptr_t p)
{
	size_t lo = 0, hi = ch->sorted.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct ch_block *b = ch->sorted.v[mid];

		if ((uintptr_t)b->ptr <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The block whose bytes include ptr, or NULL. */
static struct ch_block *block_containing(const struct ch *ch, const void *ptr)
{
	size_t i = upper_bound(ch, (uintptr_t)ptr);
	struct ch_block *b;

	if (!i)
		return NULL;
	b = ch->sorted.v[i - 1];
	return (uintptr_t)ptr - (uintptr_t)b->ptr < b->size ? b : NULL;
}

/* Push to grow the vector (or fail, leaving it as it was), then shift. */
static int sorted_insert(struct ch *ch, struct ch_block *b)
{
	struct alloy__ptrvec *pv = &ch->sorted;
	size_t i = upper_bound(ch, (uintptr_t)b->ptr);

	if (alloy__ptrvec_push(pv, b))
		return -ENOMEM;
	memmove(&pv->v[i + 1], &pv->v[i], (pv->n - 1 - i) * sizeof(*pv->v));
	pv->v[i] = b;
	return 0;
}

static void sorted_remove(struct ch *ch, struct ch_block *b)
{
	struct alloy__ptrvec *pv = &ch->sorted;
	size_t i = upper_bound(ch, (uintptr_t)b->ptr) - 1;

	memmove(&pv->v[i], &pv->v[i + 1], (pv->n - i - 1) * sizeof(*pv->v));
	pv->n--;
}

static void cache_block(struct ch *ch, struct ch_block *b)
{
	int bin = bin_of(b->size);

	b->state = CH_FREE;
	b->next = ch->bins[bin];
	ch->bins[bin] = b;
}

/* Move pending blocks whose copies have finished to the free lists. */
static void process_pending(struct ch *ch)
{
	struct ch_block **pp = &ch->pending, *b;

	while ((b = *pp)) {
		if (!events_done(ch, b)) {
			pp = &b->next;
			continue;
		}
		*pp = b->next;
		cache_block(ch, b);
	}
}

/* Give every cached (free) block back to the source; bytes released. */
static size_t release_cached(struct ch *ch)
{
	size_t freed = 0;

	for (int i = 0; i < CH_BINS; i++) {
		struct ch_block *b, *next;

		for (b = ch->bins[i]; b; b = next) {
			next = b->next;
			alloy__ptrmap_take(&ch->blocks, b->ptr);
			sorted_remove(ch, b);
			ch->b.src.ops->host_free(ch->b.src.ctx, b->ptr);
			ch->host_frees++;
			ch->reserved -= b->size;
			freed += b->size;
			alloy__ptrvec_free(&b->events);
			alloy__ptrvec_free(&b->streams);
			free(b);
		}
		ch->bins[i] = NULL;
	}
	return freed;
}

static struct ch_block *new_block(struct ch *ch, size_t size)
{
	struct ch_block *b = calloc(1, sizeof(*b));
	int rc;

	if (!b) {
		alloy__error(-ENOMEM, ch->b.name,
			     "no memory for a block record");
		return NULL;
	}
	rc = ch->b.src.ops->host_malloc(ch->b.src.ctx, size, &b->ptr);
	if (rc == -ENOMEM && release_cached(ch))
		rc = ch->b.src.ops->host_malloc(ch->b.src.ctx, size, &b->ptr);
	if (rc) {
		free(b);
		return NULL;
	}
	if (alloy__ptrmap_put(&ch->blocks, b->ptr, b)) {
		rc = -ENOMEM;
	} else if (sorted_insert(ch, b)) {
		alloy__ptrmap_take(&ch->blocks, b->ptr);
		rc = -ENOMEM;
	}
	if (rc) {
		ch->b.src.ops->host_free(ch->b.src.ctx, b->ptr);
		alloy__error(-ENOMEM, ch->b.name,
			     "no memory for the block map");
		free(b);
		return NULL;
	}
	ch->host_allocs++;
	b->size = size;
	ch->reserved += size;
	if (ch->reserved > ch->peak_reserved)
		ch->peak_reserved = ch->reserved;
	return b;
}

static void *ch_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	struct ch *ch = ctx;
	struct ch_block *b;
	size_t rounded = CH_MIN_BLOCK;
	int bin;

	if (unlikely(align > CH_MIN_BLOCK || size > ((size_t)1 << 62))) {
		alloy__error(
			-EINVAL, ch->b.name,
			"size %zu / alignment %zu beyond what pinned blocks give",
			size, align);
		return NULL;
	}
	while (rounded < size)
		rounded <<= 1;
	bin = bin_of(rounded);
	pthread_mutex_lock(&ch->b.lock);
	if (ch->pending)
		process_pending(ch);
	b = ch->bins[bin];
	if (b)
		ch->bins[bin] = b->next;
	else
		b = new_block(ch, rounded);
	if (b) {
		b->state = CH_ALLOCATED;
		b->next = NULL;
		ch->allocated += b->size;
		if (ch->allocated > ch->peak_allocated)
			ch->peak_allocated = ch->allocated;
	}
	pthread_mutex_unlock(&ch->b.lock);
	if (!b)
		return NULL;
	if (flags & ALLOY_ALLOC_ZERO)
		memset(b->ptr, 0, size);
	return b->ptr;
}

/*
 * b is being freed: record an event on each stream it was used on, now,
 * so that all the work queued there so far is waited for.  The lock is
 * held.  A stream on which no event can be recorded is waited for here
 * instead: then its work is over and the block needs no event for it.
 */
static void record_events(struct ch *ch, struct ch_block *b)
{
	for (size_t i = 0; i < b->streams.n; i++) {
		void *stream = b->streams.v[i];
		void *ev = NULL;
		int rc = 0;

		if (ch->spare_events.n)
			ev = ch->spare_events.v[--ch->spare_events.n];
		else
			rc = ch->b.src.ops->event_create(ch->b.src.ctx, 0, &ev);
		if (!rc)
			rc = ch->b.src.ops->event_record(ch->b.src.ctx, ev,
							 stream);
		if (!rc)
			rc = alloy__ptrvec_push(&b->events, ev);
		if (rc) {
			if (ev)
				put_event(ch, ev);
			ch->b.src.ops->stream_synchronize(ch->b.src.ctx,
							  stream);
		}
	}
	b->streams.n = 0;
}

static void ch_free(void *ctx, void *ptr, size_t size, size_t align)
{
	struct ch *ch = ctx;
	struct ch_block *b;

	pthread_mutex_lock(&ch->b.lock);
	b = alloy__ptrmap_get(&ch->blocks, ptr);
	if (unlikely(!b || b->state != CH_ALLOCATED)) {
		pthread_mutex_unlock(&ch->b.lock);
		alloy__error(-EINVAL, ch->b.name,
			     "%p is not a live pinned block (double free?)",
			     ptr);
		return;
	}
	ch->allocated -= b->size;
	record_events(ch, b);
	/*
	 * Events just recorded are rarely done yet: querying them here
	 * would cost a driver call per stream for nothing.  The pending list
	 * is looked at by the next alloc, trim or fini (process_pending).
	 */
	if (b->events.n) {
		b->state = CH_PENDING;
		b->next = ch->pending;
		ch->pending = b;
	} else {
		cache_block(ch, b);
	}
	pthread_mutex_unlock(&ch->b.lock);
}

/*
 * ptr may point anywhere inside a block (a copy from or to a slice of it).
 * -ENOENT when no block of this allocator holds ptr (ordinary host memory,
 * nothing to protect), -EINVAL when its block has been freed.
 */
static int ch_record_stream(void *ctx, void *ptr, void *stream)
{
	struct ch *ch = ctx;
	struct ch_block *b;
	int rc = 0;

	pthread_mutex_lock(&ch->b.lock);
	b = block_containing(ch, ptr);
	if (!b) {
		rc = alloy__error(
			-ENOENT, ch->b.name,
			"record_stream: %p is not in a pinned block of this allocator",
			ptr);
		goto out_unlock;
	}
	if (b->state != CH_ALLOCATED) {
		rc = alloy__error(
			-EINVAL, ch->b.name,
			"record_stream: %p is in pinned block %p, which is not live (used after free?)",
			ptr, b->ptr);
		goto out_unlock;
	}
	/* The event comes at free time (record_events), after this work. */
	if (alloy__ptrvec_add_unique(&b->streams, stream))
		rc = alloy__error(-ENOMEM, ch->b.name,
				  "record_stream: no memory");
out_unlock:
	pthread_mutex_unlock(&ch->b.lock);
	return rc;
}

/* Cache the pending blocks that are done, then free every cached one. */
static size_t trim_locked(struct ch *ch)
{
	process_pending(ch);
	return release_cached(ch);
}

static long long ch_trim(void *ctx)
{
	struct ch *ch = ctx;
	long long freed;

	pthread_mutex_lock(&ch->b.lock);
	freed = (long long)trim_locked(ch);
	pthread_mutex_unlock(&ch->b.lock);
	return freed;
}

static int ch_stats(void *ctx, struct alloy_allocator_stats *st)
{
	struct ch *ch = ctx;

	pthread_mutex_lock(&ch->b.lock);
	st->allocated = ch->allocated;
	st->reserved = ch->reserved;
	st->active = ch->allocated;
	st->peak_allocated = ch->peak_allocated;
	st->peak_reserved = ch->peak_reserved;
	st->num_system_allocs = ch->host_allocs;
	st->num_system_frees = ch->host_frees;
	pthread_mutex_unlock(&ch->b.lock);
	return 0;
}

static size_t ch_usable_size(void *ctx, const void *ptr, size_t size)
{
	struct ch *ch = ctx;
	struct ch_block *b;

	pthread_mutex_lock(&ch->b.lock);
	b = alloy__ptrmap_get(&ch->blocks, ptr);
	if (b)
		size = b->size;
	pthread_mutex_unlock(&ch->b.lock);
	return size;
}

/*
 * Wait for every event of the pending blocks.  The lock is held.  A wait
 * that fails leaves its event not done, so that block stays pending: its
 * copy may still run.
 */
static void sync_pending(struct ch *ch)
{
	for (struct ch_block *b = ch->pending; b; b = b->next)
		for (size_t i = 0; i < b->events.n; i++)
			ch->b.src.ops->event_synchronize(ch->b.src.ctx,
							 b->events.v[i]);
}

/*
 * Unregistered (no live blocks): give every block back.  Freed blocks
 * still waiting for copies are waited for here, since nothing would ever
 * look at the pending list again: trimming alone leaked them.
 */
static void ch_fini(void *ctx)
{
	struct ch *ch = ctx;

	pthread_mutex_lock(&ch->b.lock);
	sync_pending(ch);
	trim_locked(ch);
	pthread_mutex_unlock(&ch->b.lock);
}

static const struct alloy_allocator_ops ch_template = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.device_type = ALLOY_DEVICE_CUDA_HOST,
	.alloc = ch_alloc,
	.free = ch_free,
	.fini = ch_fini,
	.usable_size = ch_usable_size,
	.trim = ch_trim,
	.stats = ch_stats,
	.record_stream = ch_record_stream,
};

int alloy__cuda_host_new(const struct alloy__devsrc *src, const char *name,
			 const struct alloy_allocator_ops **ops, void **ctx)
{
	return alloy__cuda_base_new(sizeof(struct ch), src, name, &ch_template,
				    ops, ctx);
}
