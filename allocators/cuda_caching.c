// SPDX-License-Identifier: MIT
/*
 * allocators/cuda_caching.c - the CUDA caching allocator's policy.
 *
 * The policy of PyTorch's CUDACachingAllocator, written afresh over the
 * device-memory source of devsrc.h so that it runs unchanged on a GPU and
 * on the simulated device in CI:
 *
 *  - sizes round up to 512 B (or to a power-of-two division, option
 *    roundup_power2_divisions);
 *  - blocks of at most 1 MiB come from the small pool, carved from 2 MiB
 *    segments; larger ones from the large pool, carved from 20 MiB
 *    segments below 10 MiB and from segments rounded to 2 MiB above;
 *  - best fit among the free blocks of the same stream; the rest of a
 *    block is split off when it is worth keeping (>= 512 B small,
 *    > 1 MiB large), never from blocks of max_split_size or more;
 *  - freed blocks merge with free neighbours of their segment;
 *  - a block used on other streams (record_stream) is reused only after
 *    events recorded on those streams at free time have completed;
 *  - on out-of-memory: free cached segments and retry, then wait for all
 *    events, free again and retry, then fail with a message giving the
 *    request, device total and free, allocated, reserved-but-unallocated
 *    and the largest free block.
 *
 * The free blocks of a pool are kept in an array sorted by (stream, size,
 * address): best fit is a binary search, and the array stays short (it
 * holds cached fragments, not live blocks).  Live blocks are found by
 * address in an open-addressing map.  One lock per allocator.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "allocators/cuda_caching.h"

static void *cc_alloc(void *ctx, size_t size, size_t align, unsigned flags);

/* ---- the sorted free lists ------------------------------------------- */

static int key_cmp(const struct cc_block *b, uintptr_t stream, size_t size,
		   uintptr_t ptr)
{
	uintptr_t bs = cc_seg_key(b->seg);

	if (bs != stream)
		return bs < stream ? -1 : 1;
	if (b->size != size)
		return b->size < size ? -1 : 1;
	if (b->ptr != ptr)
		return b->ptr < ptr ? -1 : 1;
	return 0;
}

static size_t lower_bound(const struct cc_pool *p, uintptr_t stream,
			  size_t size, uintptr_t ptr)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (key_cmp(p->v[mid], stream, size, ptr) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Make room for one more entry, so later inserts cannot fail. */
static int pool_reserve(struct cc_pool *p)
{
	size_t cap;
	struct cc_block **v;

	if (p->n + 1 <= p->cap)
		return 0;
	cap = p->cap ? p->cap * 2 : 64;
	v = realloc(p->v, cap * sizeof(*v));
	if (!v)
		return -ENOMEM;
	p->v = v;
	p->cap = cap;
	return 0;
}

/* The caller has made room with pool_reserve since the last insert. */
static void pool_insert(struct cc_pool *p, struct cc_block *b)
{
	size_t i = lower_bound(p, cc_seg_key(b->seg), b->size, b->ptr);

	memmove(&p->v[i + 1], &p->v[i], (p->n - i) * sizeof(*p->v));
	p->v[i] = b;
	p->n++;
}

static void pool_remove_at(struct cc_pool *p, size_t i)
{
	memmove(&p->v[i], &p->v[i + 1], (p->n - i - 1) * sizeof(*p->v));
	p->n--;
}

/* The index of b, a free block in its pool. */
static size_t pool_index(const struct cc_pool *p, const struct cc_block *b)
{
	size_t i = p->hint;

	/* The slot last reused is usually the one asked for next. */
	if (i < p->n && p->v[i] == b)
		return i;
	i = lower_bound(p, cc_seg_key(b->seg), b->size, b->ptr);
	/* Internal invariant: a free block is in its pool. */
	assert(i < p->n && p->v[i] == b);
	return i;
}

static void pool_remove(struct cc_pool *p, struct cc_block *b)
{
	pool_remove_at(p, pool_index(p, b));
}

/*
 * Put b in slot i in place of the entry there, which leaves the pool; b
 * sorts above that entry when grown, below it otherwise, so only the
 * neighbour on that side needs a look.  A split or a merge usually
 * leaves the block between the same neighbours (one stream's few free
 * blocks, far apart in size), so the slot is reused as it is and the
 * pool neither searched nor moved; otherwise b goes where it sorts.
 * Needs no room: one entry goes, one comes.
 */
static inline void pool_replace(struct cc_pool *p, size_t i, struct cc_block *b,
				bool grown)
{
	uintptr_t key = cc_seg_key(b->seg);
	bool stays;

	if (grown)
		stays = i + 1 == p->n ||
			key_cmp(p->v[i + 1], key, b->size, b->ptr) > 0;
	else
		stays = i == 0 ||
			key_cmp(p->v[i - 1], key, b->size, b->ptr) < 0;

	if (likely(stays)) {
		p->v[i] = b;
		p->hint = i;
		return;
	}
	pool_remove_at(p, i);
	pool_insert(p, b);
}

/* ---- block and event records ----------------------------------------- */

static struct cc_block *get_block(struct cc *cc)
{
	struct cc_block *b = cc->spare_blocks;

	if (b) {
		cc->spare_blocks = b->next;
		/*
		 * Field by field: a memset of the record becomes a string
		 * store, slow to start for so few bytes on the path that
		 * splits a block at every allocation.
		 */
		b->seg = NULL;
		b->prev = b->next = NULL;
		b->ptr = 0;
		b->size = b->requested = 0;
		b->state = CC_FREE;
		b->event_count = 0;
		b->uses = (struct alloy__ptrvec){ NULL, 0, 0 };
		b->freed_tick = 0;
		b->oversize = false;
		return b;
	}
	return calloc(1, sizeof(*b));
}

static void put_block(struct cc *cc, struct cc_block *b)
{
	if (b->uses.v)
		alloy__ptrvec_free(&b->uses);
	b->next = cc->spare_blocks;
	cc->spare_blocks = b;
}

static int get_event(struct cc *cc, int device, void **ev)
{
	if (cc->spare_events.n) {
		*ev = cc->spare_events.v[--cc->spare_events.n];
		return 0;
	}
	return cc->b.src.ops->event_create(cc->b.src.ctx, device, ev);
}

static void put_event(struct cc *cc, void *ev)
{
	if (alloy__ptrvec_push(&cc->spare_events, ev))
		cc->b.src.ops->event_destroy(cc->b.src.ctx, ev);
}

/* ---- sizes ------------------------------------------------------------ */

static size_t round_size(const struct cc *cc, size_t size)
{
	size_t r;

	if (size < CC_MIN_BLOCK)
		return CC_MIN_BLOCK;
	/*
	 * Power-of-two divisions: split [2^k, 2^(k+1)) into `divisions`
	 * equal steps and round up to a step, so that varying sizes (e.g.
	 * sequence lengths) land on few distinct block sizes.
	 */
	if (cc->divisions > 1 && size > CC_MIN_BLOCK) {
		size_t floor2 = (size_t)1 << (63 - __builtin_clzll(size));
		size_t step = floor2 / cc->divisions;

		if (step > CC_MIN_BLOCK && floor2 != size) {
			r = (size + step - 1) / step * step;
			return r;
		}
	}
	r = (size + CC_MIN_BLOCK - 1) / CC_MIN_BLOCK * CC_MIN_BLOCK;
	return r;
}

static size_t segment_size(size_t size)
{
	if (size <= CC_SMALL_SIZE)
		return CC_SMALL_BUFFER;
	if (size < CC_MIN_LARGE_ALLOC)
		return CC_LARGE_BUFFER;
	return (size + CC_ROUND_LARGE - 1) / CC_ROUND_LARGE * CC_ROUND_LARGE;
}

static bool should_split(const struct cc *cc, const struct cc_block *b,
			 size_t size)
{
	size_t rest = b->size - size;

	/* An expandable segment grows instead: split what it holds finely. */
	if (b->seg->pool == CC_SMALL || cc->expandable)
		return rest >= CC_MIN_BLOCK;
	return size < cc->max_split_size && rest > CC_SMALL_SIZE;
}

static const char *fmt_bytes(char *buf, size_t len, size_t n)
{
	if (n >= (1ull << 30))
		snprintf(buf, len, "%.2f GiB", (double)n / (1ull << 30));
	else if (n >= (1u << 20))
		snprintf(buf, len, "%.2f MiB", (double)n / (1u << 20));
	else if (n >= 1024)
		snprintf(buf, len, "%.2f KiB", (double)n / 1024);
	else
		snprintf(buf, len, "%zu bytes", n);
	return buf;
}

/* ---- devices ---------------------------------------------------------- */

static size_t fraction_limit(const struct cc *cc, size_t total)
{
	return cc->fraction >= 1.0 ? SIZE_MAX
				   : (size_t)(cc->fraction * (double)total);
}

static struct cc_device *device_get(struct cc *cc, int device)
{
	struct cc_device *d;
	size_t fr, total;
	int rc;

	if (unlikely(device < 0 || device >= CC_MAX_DEVICES)) {
		alloy__error(-ENODEV, cc->b.name,
			     "device %d out of range 0..%d", device,
			     CC_MAX_DEVICES - 1);
		return NULL;
	}
	d = &cc->dev[device];
	if (likely(d->ready))
		return d;
	if (!cc->ndevices) {
		rc = cc->b.src.ops->device_count(cc->b.src.ctx, &cc->ndevices);
		if (rc)
			return NULL;
	}
	if (device >= cc->ndevices) {
		alloy__error(-ENODEV, cc->b.name,
			     "device %d does not exist (%d devices)", device,
			     cc->ndevices);
		return NULL;
	}
	if (cc->b.src.ops->mem_info(cc->b.src.ctx, device, &fr, &total))
		return NULL;
	d->total = total;
	d->limit = fraction_limit(cc, total);
	d->st.max_split_size =
		cc->max_split_size == SIZE_MAX ? 0 : cc->max_split_size;
	d->ready = true;
	return d;
}

/* ---- segments ----------------------------------------------------------- */

/* A new segment record for device memory at ptr: set up, on d's list. */
static void segment_link(struct cc_device *d, struct cc_segment *seg,
			 uintptr_t ptr, void *stream, int pool, int device)
{
	seg->ptr = ptr;
	seg->stream = stream;
	seg->pool = pool;
	seg->device = device;
	seg->next = d->segments;
	d->segments = seg;
}

static void segment_unlink(struct cc_device *d, struct cc_segment *seg)
{
	for (struct cc_segment **pp = &d->segments; *pp; pp = &(*pp)->next) {
		if (*pp == seg) {
			*pp = seg->next;
			break;
		}
	}
}

static struct cc_block *alloc_segment(struct cc *cc, struct cc_device *d,
				      int device, int pool, bool huge,
				      void *stream, size_t size, int *rc)
{
	int64_t reserved = d->st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current;
	struct cc_segment *seg;
	struct cc_block *b;
	void *p;
	int sp = cc_stat_pool(pool);

	if ((size_t)reserved + size > d->limit) {
		char a[32], l[32];

		*rc = alloy__error(
			-ENOMEM, cc->b.name,
			"a %s segment would pass the memory_fraction limit of %s",
			fmt_bytes(a, sizeof(a), size),
			fmt_bytes(l, sizeof(l), d->limit));
		return NULL;
	}
	seg = calloc(1, sizeof(*seg));
	b = get_block(cc);
	if (!seg || !b) {
		free(seg);
		if (b)
			put_block(cc, b);
		*rc = alloy__error(-ENOMEM, cc->b.name,
				   "no host memory for a segment record");
		return NULL;
	}
	*rc = cc->b.src.ops->dev_malloc(cc->b.src.ctx, device, size, &p);
	if (*rc) {
		free(seg);
		put_block(cc, b);
		return NULL;
	}
	d->st.num_device_alloc++;
	segment_link(d, seg, (uintptr_t)p, stream, pool, device);
	seg->size = size;
	seg->gp = cc->cur_gp;
	seg->huge = huge;
	seg->head = b;
	b->seg = seg;
	b->ptr = seg->ptr;
	b->size = size;
	b->state = CC_FREE;
	alloy__cc_stat_add(d->st.segment, sp, 1);
	alloy__cc_stat_add(d->st.reserved_bytes, sp, (int64_t)size);
	seg->oversize = size >= cc->max_split_size;
	if (seg->oversize)
		alloy__cc_stat_add1(&d->st.oversize_segments, 1);
	return b;
}

/* Give a wholly free segment back to the device. */
static size_t release_segment(struct cc *cc, struct cc_device *d,
			      struct cc_segment *seg)
{
	struct cc_block *b = seg->head;
	size_t size = seg->size;
	int sp = cc_stat_pool(seg->pool);

	pool_remove(&d->pools[seg->pool], b);
	cc->b.src.ops->dev_free(cc->b.src.ctx, seg->device, (void *)seg->ptr);
	d->st.num_device_free++;
	alloy__cc_stat_add(d->st.segment, sp, -1);
	alloy__cc_stat_add(d->st.reserved_bytes, sp, -(int64_t)size);
	if (seg->oversize)
		alloy__cc_stat_add1(&d->st.oversize_segments, -1);
	segment_unlink(d, seg);
	free(seg);
	put_block(cc, b);
	return size;
}

/* Unused, and not kept for a graph pool that may still replay. */
static bool segment_unused(const struct cc_segment *seg)
{
	return !seg->expandable && (!seg->gp || seg->gp->released) &&
	       seg->head->state == CC_FREE && !seg->head->next;
}

/* ---- expandable segments ------------------------------------------------ */

/*
 * With expandable_segments, a pool of a stream has one segment: a range
 * of addresses reserved once (a little more than the device holds, so
 * it never fills), with memory mapped into its bottom in pieces as it
 * grows (2 MiB for the small pool, 20 MiB for the large) and unmapped
 * from its top when what lies there is free and the cache is trimmed.
 * Blocks of varying sizes then share one growing range instead of
 * leaving holes between fixed segments.  The blocks tile the mapped part
 * only, so everything that walks a segment's blocks works unchanged.
 */

static size_t exp_chunk(int pool)
{
	return pool == CC_SMALL ? CC_SMALL_BUFFER : CC_LARGE_BUFFER;
}

static size_t round_up(size_t n, size_t to)
{
	return (n + to - 1) / to * to;
}

static struct cc_block *last_block(const struct cc_segment *seg)
{
	struct cc_block *b = seg->head;

	while (b && b->next)
		b = b->next;
	return b;
}

/* Count b in or out of the inactive split statistics (sign 1 or -1). */
static void count_split(struct cc_device *d, const struct cc_block *b, int sign)
{
	int sp = cc_stat_pool(b->seg->pool);

	if (!cc_inactive_split(b))
		return;
	alloy__cc_stat_add(d->st.inactive_split, sp, sign);
	alloy__cc_stat_add(d->st.inactive_split_bytes, sp,
			   sign * (int64_t)b->size);
}

/* Unmap and release the pieces [from, to) of seg. */
static void exp_unmap(struct cc *cc, struct cc_device *d,
		      struct cc_segment *seg, size_t from, size_t to)
{
	const struct alloy__devsrc_ops *o = cc->b.src.ops;

	if (from == to)
		return;
	o->mem_unmap(cc->b.src.ctx, (void *)(seg->ptr + from * seg->chunk),
		     (to - from) * seg->chunk);
	for (size_t i = from; i < to; i++) {
		o->mem_release(cc->b.src.ctx, seg->handles[i]);
		seg->handles[i] = NULL;
		d->st.num_device_free++;
	}
	d->st.num_unmaps++;
}

/* Give seg's addresses back (nothing is mapped in it any more). */
static void exp_release(struct cc *cc, struct cc_device *d,
			struct cc_segment *seg)
{
	cc->b.src.ops->va_release(cc->b.src.ctx, (void *)seg->ptr,
				  seg->va_size);
	d->st.expandable_address_bytes -= seg->va_size;
	alloy__cc_stat_add(d->st.segment, cc_stat_pool(seg->pool), -1);
	segment_unlink(d, seg);
	free(seg->handles);
	free(seg);
}

/*
 * Unmap the whole pieces of the free block at seg's top; the bytes
 * unmapped.  The segment goes when nothing is left mapped.
 */
static size_t exp_trim(struct cc *cc, struct cc_device *d,
		       struct cc_segment *seg)
{
	struct cc_block *b = last_block(seg);
	size_t start, top = seg->size / seg->chunk, from, bytes;
	int sp = cc_stat_pool(seg->pool);

	if (!b || b->state != CC_FREE)
		return 0;
	start = b->ptr - seg->ptr;
	from = round_up(start, seg->chunk) / seg->chunk;
	if (from >= top)
		return 0;
	bytes = (top - from) * seg->chunk;
	count_split(d, b, -1);
	pool_remove(&d->pools[seg->pool], b);
	exp_unmap(cc, d, seg, from, top);
	seg->size -= bytes;
	alloy__cc_stat_add(d->st.reserved_bytes, sp, -(int64_t)bytes);
	if (b->size == bytes) {
		if (b->prev)
			b->prev->next = NULL;
		else
			seg->head = NULL;
		put_block(cc, b);
	} else {
		/* Room: the block was just taken out of this pool. */
		b->size -= bytes;
		pool_insert(&d->pools[seg->pool], b);
		count_split(d, b, 1);
	}
	if (!seg->size)
		exp_release(cc, d, seg);
	return bytes;
}

/* The expandable segment of (stream, pool), made when there is none. */
static struct cc_segment *exp_segment(struct cc *cc, struct cc_device *d,
				      int device, int pool, void *stream,
				      int *rc)
{
	struct cc_segment *seg;
	size_t chunk = exp_chunk(pool);
	void *va;

	for (seg = d->segments; seg; seg = seg->next)
		if (seg->expandable && seg->pool == pool &&
		    seg->stream == stream && !seg->gp)
			return seg;
	seg = calloc(1, sizeof(*seg));
	if (!seg) {
		*rc = alloy__error(-ENOMEM, cc->b.name,
				   "no host memory for a segment record");
		return NULL;
	}
	/* A little more than the device: pieces unmapped below the top
	 * never make it run out of addresses (PyTorch reserves as much). */
	seg->va_size = round_up(d->total + d->total / 8, chunk);
	*rc = cc->b.src.ops->va_reserve(cc->b.src.ctx, device, seg->va_size,
					&va);
	if (*rc) {
		free(seg);
		return NULL;
	}
	segment_link(d, seg, (uintptr_t)va, stream, pool, device);
	seg->expandable = true;
	seg->chunk = chunk;
	d->st.expandable_address_bytes += seg->va_size;
	alloy__cc_stat_add(d->st.segment, cc_stat_pool(pool), 1);
	return seg;
}

/* Map bytes (whole pieces) at seg's top; 0 or a negative errno. */
static int exp_map(struct cc *cc, struct cc_device *d, struct cc_segment *seg,
		   size_t bytes)
{
	const struct alloy__devsrc_ops *o = cc->b.src.ops;
	int64_t reserved = d->st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current;
	size_t from = seg->size / seg->chunk, n = bytes / seg->chunk, i;
	void *at = (void *)(seg->ptr + seg->size);
	int rc = 0;

	if ((size_t)reserved + bytes > d->limit) {
		char a[32], l[32];

		return alloy__error(
			-ENOMEM, cc->b.name,
			"mapping %s more would pass the memory_fraction limit of %s",
			fmt_bytes(a, sizeof(a), bytes),
			fmt_bytes(l, sizeof(l), d->limit));
	}
	if (seg->size + bytes > seg->va_size)
		return alloy__error(
			-ENOMEM, cc->b.name,
			"the expandable segment's addresses are all mapped");
	if (from + n > seg->handles_cap) {
		size_t cap = seg->handles_cap ? seg->handles_cap : 16;
		void **v;

		while (cap < from + n)
			cap *= 2;
		v = realloc(seg->handles, cap * sizeof(*v));
		if (!v)
			return alloy__error(-ENOMEM, cc->b.name,
					    "no host memory for handles");
		seg->handles = v;
		seg->handles_cap = cap;
	}
	/* i ends as the number of pieces mapped. */
	for (i = 0; i < n; i++) {
		rc = o->mem_create(cc->b.src.ctx, seg->device, seg->chunk,
				   &seg->handles[from + i]);
		if (rc)
			break;
		d->st.num_device_alloc++;
		rc = o->mem_map(cc->b.src.ctx, (char *)at + i * seg->chunk,
				seg->chunk, seg->handles[from + i]);
		if (rc) {
			o->mem_release(cc->b.src.ctx, seg->handles[from + i]);
			d->st.num_device_free++;
			break;
		}
	}
	if (!rc)
		rc = o->mem_set_access(cc->b.src.ctx, seg->device, at, bytes);
	if (rc) {
		/* All or nothing: give back what this call mapped. */
		exp_unmap(cc, d, seg, from, from + i);
		return rc;
	}
	d->st.num_maps++;
	seg->size += bytes;
	alloy__cc_stat_add(d->st.reserved_bytes, cc_stat_pool(seg->pool),
			   (int64_t)bytes);
	return 0;
}

/*
 * Room for size bytes at the top of the expandable segment of (stream,
 * pool): the free block there grown by the pieces it lacks, or a new
 * block above a used one.  The block is out of its pool, for use_block.
 */
static struct cc_block *exp_grow(struct cc *cc, struct cc_device *d, int device,
				 int pool, void *stream, size_t size, int *rc)
{
	struct cc_segment *seg = exp_segment(cc, d, device, pool, stream, rc);
	struct cc_block *last, *b;
	size_t have, need;

	if (!seg)
		return NULL;
	last = last_block(seg);
	have = last && last->state == CC_FREE ? last->size : 0;
	need = round_up(size - have, seg->chunk);
	b = have ? NULL : get_block(cc);
	if (!have && !b) {
		*rc = alloy__error(-ENOMEM, cc->b.name,
				   "no host memory for a block record");
		return NULL;
	}
	*rc = exp_map(cc, d, seg, need);
	if (*rc) {
		if (b)
			put_block(cc, b);
		if (!seg->size)
			exp_release(cc, d, seg);
		return NULL;
	}
	if (have) {
		count_split(d, last, -1);
		pool_remove(&d->pools[pool], last);
		last->size += need;
		count_split(d, last, 1);
		return last;
	}
	b->seg = seg;
	b->ptr = seg->ptr + seg->size - need;
	b->size = need;
	b->state = CC_FREE;
	b->prev = last;
	if (last)
		last->next = b;
	else
		seg->head = b;
	count_split(d, b, 1);
	return b;
}

/* Release every cached segment nothing uses; the bytes released. */
static size_t release_cached(struct cc *cc, struct cc_device *d)
{
	struct cc_segment *seg = d->segments, *next;
	size_t freed = 0;

	for (; seg; seg = next) {
		next = seg->next;
		if (seg->expandable)
			freed += exp_trim(cc, d, seg);
		else if (segment_unused(seg))
			freed += release_segment(cc, d, seg);
	}
	return freed;
}

/* ---- freeing into the pools -------------------------------------------- */

/* Absorb the free neighbour nb into b (the caller sees to the pool). */
static void merge(struct cc *cc, struct cc_block *b, struct cc_block *nb)
{
	if (nb == b->prev) {
		b->ptr = nb->ptr;
		b->prev = nb->prev;
		if (b->prev)
			b->prev->next = b;
		else
			b->seg->head = b;
	} else {
		b->next = nb->next;
		if (b->next)
			b->next->prev = b;
	}
	b->size += nb->size;
	put_block(cc, nb);
}

/*
 * b (allocated or pending) becomes free: merge it with free neighbours and
 * cache it.  The caller has reserved room in the pool.  Merged, b takes
 * the pool slot of the neighbour above it (else of the one below), so
 * the free top of a segment that a block is split off and merged back
 * into stays where it is in the pool.
 */
static void free_block(struct cc *cc, struct cc_device *d, struct cc_block *b)
{
	struct cc_pool *p = &d->pools[b->seg->pool];
	int sp = cc_stat_pool(b->seg->pool);
	int64_t dn = 0, dbytes = 0;
	struct cc_block *nbs[2] = { b->next, b->prev }, *merged[2];
	size_t i = 0, n = 0;

	alloy__cc_stat_add(d->st.active, sp, -1);
	alloy__cc_stat_add(d->st.active_bytes, sp, -(int64_t)b->size);
	b->state = CC_FREE;
	b->freed_tick = ++cc->tick;
	for (int k = 0; k < 2; k++) {
		if (!nbs[k] || nbs[k]->state != CC_FREE)
			continue;
		dn--;
		dbytes -= (int64_t)nbs[k]->size;
		merged[n++] = nbs[k];
	}
	if (n == 2)
		pool_remove(p, merged[1]);
	if (n)
		i = pool_index(p, merged[0]);
	for (size_t k = 0; k < n; k++)
		merge(cc, b, merged[k]);
	if (cc_inactive_split(b)) {
		dn++;
		dbytes += (int64_t)b->size;
	}
	if (n)
		pool_replace(p, i, b, true);
	else
		pool_insert(p, b);
	alloy__cc_stat_add(d->st.inactive_split, sp, dn);
	alloy__cc_stat_add(d->st.inactive_split_bytes, sp, dbytes);
}

/* Free the blocks whose events have all completed. */
static void process_events(struct cc *cc)
{
	struct cc_event **pp = &cc->events, *e;

	cc->events_tail = NULL;
	while ((e = *pp)) {
		struct cc_block *b = e->block;
		struct cc_device *d = &cc->dev[b->seg->device];

		/*
		 * Keep the event while its work runs, and also when its block
		 * is the last to wait for and there is no room in the free
		 * list for it yet (no host memory): the next call tries again.
		 */
		if (cc->b.src.ops->event_query(cc->b.src.ctx, e->ev) != 1 ||
		    (b->event_count == 1 &&
		     pool_reserve(&d->pools[b->seg->pool]))) {
			cc->events_tail = e;
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		put_event(cc, e->ev);
		free(e);
		if (--b->event_count == 0)
			free_block(cc, d, b);
	}
}

/* Wait for every outstanding event, then free what they held. */
static void synchronize_events(struct cc *cc)
{
	for (struct cc_event *e = cc->events; e; e = e->next)
		cc->b.src.ops->event_synchronize(cc->b.src.ctx, e->ev);
	process_events(cc);
}

/*
 * Record an event on each stream b was used on; b is freed when all have
 * completed.  0, or < 0 when an event could not be recorded (then the
 * device has been synchronised, so whatever was recorded is done).
 */
static int insert_events(struct cc *cc, struct cc_block *b)
{
	int device = b->seg->device;

	for (size_t i = 0; i < b->uses.n; i++) {
		struct cc_event *e = malloc(sizeof(*e));
		void *ev = NULL;

		if (!e || get_event(cc, device, &ev) ||
		    cc->b.src.ops->event_record(cc->b.src.ctx, ev,
						b->uses.v[i])) {
			free(e);
			if (ev)
				put_event(cc, ev);
			b->uses.n = 0;
			cc->b.src.ops->device_synchronize(cc->b.src.ctx,
							  device);
			return -EIO;
		}
		e->ev = ev;
		e->block = b;
		e->next = NULL;
		if (cc->events_tail)
			cc->events_tail->next = e;
		else
			cc->events = e;
		cc->events_tail = e;
		b->event_count++;
	}
	b->uses.n = 0;
	return 0;
}

/* ---- garbage collection and out-of-memory ------------------------------- */

static int by_age(const void *x, const void *y)
{
	const struct cc_segment *a = *(struct cc_segment *const *)x;
	const struct cc_segment *b = *(struct cc_segment *const *)y;

	return (a->head->freed_tick > b->head->freed_tick) -
	       (a->head->freed_tick < b->head->freed_tick);
}

/*
 * Above garbage_collection_threshold of the limit, release unused
 * segments, least recently freed first, until under it again: memory
 * goes back before an allocation has to fail, not after.
 */
static void garbage_collect(struct cc *cc, struct cc_device *d)
{
	size_t cap = d->limit == SIZE_MAX ? d->total : d->limit;
	double target = cc->gc_threshold * (double)cap;
	struct cc_segment **v;
	size_t n = 0;

	if ((double)d->st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current <= target)
		return;
	for (struct cc_segment *s = d->segments; s; s = s->next)
		n += segment_unused(s);
	v = n ? malloc(n * sizeof(*v)) : NULL;
	if (n && !v)
		return;
	n = 0;
	for (struct cc_segment *s = d->segments; s; s = s->next)
		if (segment_unused(s))
			v[n++] = s;
	qsort(v, n, sizeof(*v), by_age);
	for (size_t i = 0; i < n; i++) {
		if ((double)d->st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current <=
		    target)
			break;
		release_segment(cc, d, v[i]);
	}
	free(v);
	/* Then the free tops of expandable segments. */
	for (struct cc_segment *s = d->segments, *next; s; s = next) {
		next = s->next;
		if ((double)d->st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current <=
		    target)
			break;
		if (s->expandable)
			exp_trim(cc, d, s);
	}
}

static size_t largest_free(const struct cc_device *d)
{
	size_t m = 0;

	for (int p = 0; p < 2; p++)
		for (size_t i = 0; i < d->pools[p].n; i++)
			if (d->pools[p].v[i]->size > m)
				m = d->pools[p].v[i]->size;
	return m;
}

/*
 * The cap memory_fraction puts on what may be reserved, when it is what
 * refused a segment of seg_size, into buf ("" otherwise).  Named first in
 * the message: with a cap in force the device's own figures (much memory
 * free) would otherwise point the wrong way.
 */
static const char *fraction_reason(const struct cc *cc,
				   const struct cc_device *d, size_t seg_size,
				   char *buf, size_t len)
{
	size_t resv = (size_t)d->st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current;
	char b[3][32];

	buf[0] = '\0';
	if (d->limit == SIZE_MAX || resv + seg_size <= d->limit)
		return buf;
	snprintf(
		buf, len,
		": memory_fraction %.2f allows %s of %s, and reserved %s + this segment would pass it",
		cc->fraction, fmt_bytes(b[0], sizeof(b[0]), d->limit),
		fmt_bytes(b[1], sizeof(b[1]), d->total),
		fmt_bytes(b[2], sizeof(b[2]), resv));
	return buf;
}

/*
 * The final word on a failed request: it replaces the intermediate
 * reasons of the attempts (a segment refused by the cap, by the device)
 * that grow() made before it gave up, so it must carry the one that
 * decided.
 */
static void oom_message(struct cc *cc, struct cc_device *d, int device,
			size_t req, size_t seg_size)
{
	char b[8][32], cap[200];
	size_t fr = 0, total = 0;
	int64_t alloc = d->st.allocated_bytes[ALLOY_CUDA_POOL_ALL].current;
	int64_t resv = d->st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current;

	cc->b.src.ops->mem_info(cc->b.src.ctx, device, &fr, &total);
	if (cc->expandable) {
		/*
		 * Memory is mapped into reserved addresses: say both, as the
		 * mapped bytes are what the device gave and the addresses
		 * cost nothing.
		 */
		alloy__error(
			-ENOMEM, cc->b.name,
			"out of memory: tried to allocate %s on device %d%s; "
			"device total %s, free %s; allocated %s, mapped but unallocated %s; "
			"expandable segments: %s mapped in %s of reserved addresses; "
			"largest free block %s",
			fmt_bytes(b[0], sizeof(b[0]), req), device,
			fraction_reason(cc, d, seg_size, cap, sizeof(cap)),
			fmt_bytes(b[2], sizeof(b[2]), total),
			fmt_bytes(b[3], sizeof(b[3]), fr),
			fmt_bytes(b[4], sizeof(b[4]), (size_t)alloc),
			fmt_bytes(b[5], sizeof(b[5]), (size_t)(resv - alloc)),
			fmt_bytes(b[1], sizeof(b[1]), (size_t)resv),
			fmt_bytes(b[7], sizeof(b[7]),
				  (size_t)d->st.expandable_address_bytes),
			fmt_bytes(b[6], sizeof(b[6]), largest_free(d)));
		return;
	}
	alloy__error(
		-ENOMEM, cc->b.name,
		"out of memory: tried to allocate %s (segment %s)on device %d%s; "
		"device total %s, free %s; allocated %s, reserved but unallocated %s; "
		"largest free block %s%s",
		fmt_bytes(b[0], sizeof(b[0]), req),
		fmt_bytes(b[1], sizeof(b[1]), seg_size), device,
		fraction_reason(cc, d, seg_size, cap, sizeof(cap)),
		fmt_bytes(b[2], sizeof(b[2]), total),
		fmt_bytes(b[3], sizeof(b[3]), fr),
		fmt_bytes(b[4], sizeof(b[4]), (size_t)alloc),
		fmt_bytes(b[5], sizeof(b[5]), (size_t)(resv - alloc)),
		fmt_bytes(b[6], sizeof(b[6]), largest_free(d)),
		resv > alloc
			? " (if reserved but unallocated is large, "
			  "set cuda_caching.max_split_size to limit fragmentation)"
			: "");
}

static struct cc_block *find_free(struct cc *cc, struct cc_device *d, int pool,
				  void *stream, size_t size, bool strict,
				  size_t *at);

/* A new segment of seg_size, or an expandable segment grown for size. */
static struct cc_block *new_room(struct cc *cc, struct cc_device *d, int device,
				 int pool, bool huge, void *stream, size_t size,
				 size_t seg_size, int *rc)
{
	struct cc_block *b;

	/* Graph pools keep fixed segments of their own. */
	if (cc->expandable && !cc->cur_gp) {
		b = exp_grow(cc, d, device, pool, stream, size, rc);
		/* A driver without virtual memory: fixed segments, as before.
		 */
		if (b || *rc != -ENOTSUP)
			return b;
	}
	return alloc_segment(cc, d, device, pool, huge, stream, seg_size, rc);
}

/* A new segment for size bytes, trying harder each time the device says no. */
static struct cc_block *grow(struct cc *cc, struct cc_device *d, int device,
			     int pool, void *stream, size_t size, size_t req)
{
	size_t seg_size = segment_size(size);
	bool huge = size >= CC_MIN_LARGE_ALLOC;
	struct cc_block *b;
	size_t at;
	int rc;

	/* A capture underway may see no free and no synchronisation. */
	if (cc->gc_threshold > 0 && !cc->nroutes)
		garbage_collect(cc, d);
	b = new_room(cc, d, device, pool, huge, stream, size, seg_size, &rc);
	if (b || rc != -ENOMEM)
		return b;
	if (cc->nroutes)
		goto last_resort;
	/* Cached segments first: cheap, no waiting. */
	d->st.num_alloc_retries++;
	if (release_cached(cc, d))
		b = new_room(cc, d, device, pool, huge, stream, size, seg_size,
			     &rc);
	if (b || rc != -ENOMEM)
		return b;
	/* Then wait for blocks held by other streams' work, and again. */
	d->st.num_sync_all_streams++;
	synchronize_events(cc);
	if (release_cached(cc, d))
		b = new_room(cc, d, device, pool, huge, stream, size, seg_size,
			     &rc);
	if (b || rc != -ENOMEM)
		return b;
last_resort:
	/* Last, free room in the other class of segments (see find_free). */
	b = find_free(cc, d, pool, cc->cur_gp ? (void *)cc->cur_gp : stream,
		      size, false, &at);
	if (b) {
		pool_remove_at(&d->pools[pool], at);
		return b;
	}
	d->st.num_ooms++;
	oom_message(cc, d, device, req, seg_size);
	return NULL;
}

/* ---- the allocator ops ------------------------------------------------- */

/* Best fit for size; the block stays in its pool, at *at. */
static struct cc_block *find_free(struct cc *cc, struct cc_device *d, int pool,
				  void *stream, size_t size, bool strict,
				  size_t *at)
{
	struct cc_pool *p = &d->pools[pool];
	size_t i = lower_bound(p, (uintptr_t)stream, size, 0);
	struct cc_block *b;

	/*
	 * Beyond PyTorch: segments made for a request of 10 MiB or more (its
	 * own segment) and the 20 MiB ones that smaller large blocks share
	 * serve only their own class while the device has room.  Otherwise
	 * on the next step, with every segment free, best fit carves small
	 * blocks out of a big request's segment, the big request needs a new
	 * one, and the cache only settles one step later (and holds more).
	 */
	if (strict && !cc->expandable)
		while (i < p->n &&
		       cc_seg_key(p->v[i]->seg) == (uintptr_t)stream &&
		       p->v[i]->seg->huge != (size >= CC_MIN_LARGE_ALLOC))
			i++;
	if (i == p->n)
		return NULL;
	b = p->v[i];
	if (cc_seg_key(b->seg) != (uintptr_t)stream)
		return NULL;
	/*
	 * Oversize blocks serve only requests of about their own size (not
	 * in expandable segments, which split every block).
	 */
	if (!cc->expandable && size < cc->max_split_size &&
	    b->size >= cc->max_split_size)
		return NULL;
	if (!cc->expandable && size >= cc->max_split_size &&
	    b->size >= size + CC_LARGE_BUFFER)
		return NULL;
	*at = i;
	return b;
}

#define CC_NOT_IN_POOL SIZE_MAX

/*
 * Hand out b for size bytes; split off the rest.  b is in its pool at
 * index at, or out of it (CC_NOT_IN_POOL): the rest of a split takes its
 * slot, so a block split off the same free block each time costs no
 * search or move in the pool.
 */
static void use_block(struct cc *cc, struct cc_device *d, struct cc_block *b,
		      size_t size, size_t req, size_t at)
{
	struct cc_pool *p = &d->pools[b->seg->pool];
	int sp = cc_stat_pool(b->seg->pool);

	if (cc_inactive_split(b)) {
		alloy__cc_stat_add(d->st.inactive_split, sp, -1);
		alloy__cc_stat_add(d->st.inactive_split_bytes, sp,
				   -(int64_t)b->size);
	}
	/*
	 * The rest goes back to the free list, which needs room for it.
	 * Without room or a record, hand out the whole block: still correct.
	 */
	if (should_split(cc, b, size) &&
	    (at != CC_NOT_IN_POOL || pool_reserve(p) == 0)) {
		struct cc_block *rest = get_block(cc);

		if (rest) {
			rest->seg = b->seg;
			rest->ptr = b->ptr + size;
			rest->size = b->size - size;
			rest->state = CC_FREE;
			rest->freed_tick = b->freed_tick;
			rest->prev = b;
			rest->next = b->next;
			if (b->next)
				b->next->prev = rest;
			b->next = rest;
			b->size = size;
			if (at != CC_NOT_IN_POOL)
				pool_replace(p, at, rest, false);
			else
				pool_insert(p, rest);
			at = CC_NOT_IN_POOL;
			alloy__cc_stat_add(d->st.inactive_split, sp, 1);
			alloy__cc_stat_add(d->st.inactive_split_bytes, sp,
					   (int64_t)rest->size);
		}
	}
	if (at != CC_NOT_IN_POOL)
		pool_remove_at(p, at);
	b->state = CC_ALLOCATED;
	b->requested = req;
	alloy__cc_stat_add(d->st.allocation, sp, 1);
	alloy__cc_stat_add(d->st.allocated_bytes, sp, (int64_t)b->size);
	alloy__cc_stat_add(d->st.active, sp, 1);
	alloy__cc_stat_add(d->st.active_bytes, sp, (int64_t)b->size);
	alloy__cc_stat_add(d->st.requested_bytes, sp, (int64_t)req);
	b->oversize = b->size >= cc->max_split_size;
	if (b->oversize)
		alloy__cc_stat_add1(&d->st.oversize_allocations, 1);
}

/* Undo use_block's accounting for a block being returned by the user. */
static void unuse_block(struct cc *cc, struct cc_device *d, struct cc_block *b)
{
	int sp = cc_stat_pool(b->seg->pool);

	alloy__cc_stat_add(d->st.allocation, sp, -1);
	alloy__cc_stat_add(d->st.allocated_bytes, sp, -(int64_t)b->size);
	alloy__cc_stat_add(d->st.requested_bytes, sp, -(int64_t)b->requested);
	if (b->oversize)
		alloy__cc_stat_add1(&d->st.oversize_allocations, -1);
	b->requested = 0;
}

/* ---- graph pools ------------------------------------------------------- */

/* The graph pool stream allocates into on device, or NULL. */
static struct cc_graph_pool *route_of(struct cc *cc, int device, void *stream)
{
	for (int i = 0; i < cc->nroutes; i++)
		if (cc->routes[i].device == device &&
		    cc->routes[i].stream == stream)
			return cc->routes[i].gp;
	return NULL;
}

/*
 * Give a released pool's unused segments back, and forget the pool once
 * none is left.  Never while a capture is underway (that would free).
 */
static void gp_collect(struct cc *cc, struct cc_graph_pool *gp)
{
	struct cc_device *d = &cc->dev[gp->device];
	struct cc_segment *seg, *next;
	bool left = false;

	if (!gp->released || gp->routes || cc->nroutes)
		return;
	for (seg = d->segments; seg; seg = next) {
		next = seg->next;
		if (seg->gp != gp)
			continue;
		if (segment_unused(seg))
			release_segment(cc, d, seg);
		else
			left = true;
	}
	if (left)
		return;
	for (struct cc_graph_pool **pp = &cc->graph_pools; *pp;
	     pp = &(*pp)->next) {
		if (*pp == gp) {
			*pp = gp->next;
			break;
		}
	}
	free(gp);
}

int alloy_cuda_caching_begin_pool(struct alloy_allocator *a, int device,
				  void *stream, uint64_t pool_id)
{
	struct cc *cc = alloy__cc_of(a);
	struct cc_graph_pool *gp;
	int rc = 0;

	if (!cc)
		return -EINVAL;
	if (!pool_id)
		return alloy__error(-EINVAL, cc->b.name,
				    "begin_pool: pool id 0 is not a pool");
	pthread_mutex_lock(&cc->b.lock);
	if (!device_get(cc, device)) {
		rc = alloy_last_error_code();
		goto out;
	}
	if (route_of(cc, device, stream)) {
		rc = alloy__error(
			-EBUSY, cc->b.name,
			"begin_pool: stream %p of device %d already allocates into a pool",
			stream, device);
		goto out;
	}
	if (cc->nroutes == (int)(sizeof(cc->routes) / sizeof(cc->routes[0]))) {
		rc = alloy__error(
			-ENOSPC, cc->b.name,
			"begin_pool: %d captures are underway already",
			cc->nroutes);
		goto out;
	}
	for (gp = cc->graph_pools; gp; gp = gp->next)
		if (gp->id == pool_id && gp->device == device)
			break;
	if (gp && gp->released) {
		rc = alloy__error(-EINVAL, cc->b.name,
				  "begin_pool: pool %llu was released",
				  (unsigned long long)pool_id);
		goto out;
	}
	if (!gp) {
		gp = calloc(1, sizeof(*gp));
		if (!gp) {
			rc = alloy__error(-ENOMEM, cc->b.name,
					  "no host memory for a graph pool");
			goto out;
		}
		gp->id = pool_id;
		gp->device = device;
		gp->next = cc->graph_pools;
		cc->graph_pools = gp;
	}
	gp->routes++;
	cc->routes[cc->nroutes++] = (struct cc_route){ .device = device,
						       .stream = stream,
						       .gp = gp };
out:
	pthread_mutex_unlock(&cc->b.lock);
	return rc;
}

int alloy_cuda_caching_end_pool(struct alloy_allocator *a, int device,
				void *stream)
{
	struct cc *cc = alloy__cc_of(a);
	int rc = -ENOENT;

	if (!cc)
		return -EINVAL;
	pthread_mutex_lock(&cc->b.lock);
	for (int i = 0; i < cc->nroutes; i++) {
		struct cc_route *r = &cc->routes[i];

		if (r->device != device || r->stream != stream)
			continue;
		r->gp->routes--;
		*r = cc->routes[--cc->nroutes];
		rc = 0;
		break;
	}
	if (rc)
		alloy__error(
			rc, cc->b.name,
			"end_pool: stream %p of device %d allocates into no pool",
			stream, device);
	else if (!cc->nroutes)
		/* Captures over: released pools may go now. */
		for (struct cc_graph_pool *gp = cc->graph_pools, *n; gp;
		     gp = n) {
			n = gp->next;
			gp_collect(cc, gp);
		}
	pthread_mutex_unlock(&cc->b.lock);
	return rc;
}

int alloy_cuda_caching_release_pool(struct alloy_allocator *a, int device,
				    uint64_t pool_id)
{
	struct cc *cc = alloy__cc_of(a);
	struct cc_graph_pool *gp;
	int rc = 0;

	if (!cc)
		return -EINVAL;
	pthread_mutex_lock(&cc->b.lock);
	for (gp = cc->graph_pools; gp; gp = gp->next)
		if (gp->id == pool_id && gp->device == device)
			break;
	if (!gp || gp->released)
		rc = alloy__error(-ENOENT, cc->b.name,
				  "release_pool: no pool %llu on device %d",
				  (unsigned long long)pool_id, device);
	else if (gp->routes)
		rc = alloy__error(
			-EBUSY, cc->b.name,
			"release_pool: pool %llu is being captured into",
			(unsigned long long)pool_id);
	else {
		gp->released = true;
		gp_collect(cc, gp);
	}
	pthread_mutex_unlock(&cc->b.lock);
	return rc;
}

/* A block of req bytes on device, ordered on stream (a stream of it). */
static void *alloc_on(void *ctx, int device, size_t req, size_t align,
		      unsigned flags, void *stream)
{
	struct cc *cc = ctx;
	struct cc_device *d;
	struct cc_block *b = NULL;
	size_t size, at = CC_NOT_IN_POOL;
	void *key;
	int pool;

	if (unlikely(align > CC_MIN_BLOCK)) {
		alloy__error(
			-EINVAL, cc->b.name,
			"alignment %zu is above the %u bytes every block has",
			align, CC_MIN_BLOCK);
		return NULL;
	}
	if (unlikely(req > SIZE_MAX / 2)) {
		alloy__error(-EOVERFLOW, cc->b.name, "size %zu is too large",
			     req);
		return NULL;
	}
	pthread_mutex_lock(&cc->b.lock);
	d = device_get(cc, device);
	if (unlikely(!d))
		goto out_unlock;
	/* Events are queried once no capture is underway. */
	if (cc->events && !cc->nroutes)
		process_events(cc);
	size = round_size(cc, req);
	pool = size <= CC_SMALL_SIZE ? CC_SMALL : CC_LARGE;
	cc->cur_gp = cc->nroutes ? route_of(cc, device, stream) : NULL;
	key = cc->cur_gp ? (void *)cc->cur_gp : stream;
	b = find_free(cc, d, pool, key, size, true, &at);
	if (!b)
		b = grow(cc, d, device, pool, stream, size, req);
	cc->cur_gp = NULL;
	if (unlikely(!b))
		goto out_unlock;
	use_block(cc, d, b, size, req, at);
	if (unlikely(alloy__ptrmap_put(&cc->live, (void *)b->ptr, b))) {
		unuse_block(cc, d, b);
		/* Back to the free list, which needs room for one entry. */
		if (pool_reserve(&d->pools[b->seg->pool]) == 0)
			free_block(cc, d, b);
		else
			b->state =
				CC_PENDING; /* out of the cache, see free_ptr */
		alloy__error(-ENOMEM, cc->b.name,
			     "no host memory for the block map");
		b = NULL;
	}
out_unlock:
	pthread_mutex_unlock(&cc->b.lock);
	if (!b)
		return NULL;
	if (flags & ALLOY_ALLOC_ZERO)
		cc->b.src.ops->dev_memset(cc->b.src.ctx, device, (void *)b->ptr,
					  0, req, stream);
	return (void *)b->ptr;
}

static void *cc_alloc_async(void *ctx, size_t req, size_t align, unsigned flags,
			    void *stream)
{
	return alloc_on(ctx, alloy_cuda_current_device(), req, align, flags,
			stream);
}

static void *cc_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	return cc_alloc_async(ctx, size, align, flags,
			      alloy_cuda_current_stream());
}

/* Return ptr; used_on is a stream it was used on (has_stream), if any. */
static void free_ptr(struct cc *cc, void *ptr, bool has_stream, void *used_on)
{
	struct cc_device *d;
	struct cc_block *b;

	pthread_mutex_lock(&cc->b.lock);
	b = alloy__ptrmap_take(&cc->live, ptr);
	if (unlikely(!b)) {
		pthread_mutex_unlock(&cc->b.lock);
		alloy__error(-EINVAL, cc->b.name,
			     "%p was not allocated here (double free?)", ptr);
		return;
	}
	d = &cc->dev[b->seg->device];
	unuse_block(cc, d, b);
	/* No memory to remember the stream: wait for it instead. */
	if (has_stream && used_on != b->seg->stream &&
	    alloy__ptrvec_add_unique(&b->uses, used_on))
		cc->b.src.ops->stream_synchronize(cc->b.src.ctx, used_on);
	if (b->uses.n && insert_events(cc, b) == 0 && b->event_count) {
		b->state = CC_PENDING;
	} else if (b->event_count) {
		/* Synchronised after a failed record: what was recorded is
		 * done. */
		b->state = CC_PENDING;
		if (!cc->nroutes)
			process_events(cc);
	} else if (likely(pool_reserve(&d->pools[b->seg->pool]) == 0)) {
		struct cc_graph_pool *gp = b->seg->gp;

		free_block(cc, d, b);
		/* The last block of a released pool's segment. */
		if (gp && gp->released)
			gp_collect(cc, gp);
	} else {
		/*
		 * The host is out of memory: the block stays out of the
		 * cache (reserved, never reused) rather than corrupt it.
		 */
		b->state = CC_PENDING;
		alloy__error(-ENOMEM, cc->b.name, "no host memory to cache %p",
			     ptr);
	}
	pthread_mutex_unlock(&cc->b.lock);
}

static void cc_free_async(void *ctx, void *ptr, size_t size, size_t align,
			  void *stream)
{
	free_ptr(ctx, ptr, true, stream);
}

static void cc_free(void *ctx, void *ptr, size_t size, size_t align)
{
	free_ptr(ctx, ptr, false, NULL);
}

static int cc_record_stream(void *ctx, void *ptr, void *stream)
{
	struct cc *cc = ctx;
	struct cc_block *b;
	int rc = 0;

	pthread_mutex_lock(&cc->b.lock);
	b = alloy__ptrmap_get(&cc->live, ptr);
	if (!b)
		rc = alloy__error(
			-EINVAL, cc->b.name,
			"record_stream: %p is not a live block of this allocator",
			ptr);
	else if (stream != b->seg->stream &&
		 alloy__ptrvec_add_unique(&b->uses, stream))
		rc = alloy__error(-ENOMEM, cc->b.name,
				  "record_stream: no host memory");
	pthread_mutex_unlock(&cc->b.lock);
	return rc;
}

static size_t cc_usable_size(void *ctx, const void *ptr, size_t size)
{
	struct cc *cc = ctx;
	struct cc_block *b;

	pthread_mutex_lock(&cc->b.lock);
	b = alloy__ptrmap_get(&cc->live, ptr);
	if (b)
		size = b->size;
	pthread_mutex_unlock(&cc->b.lock);
	return size;
}

static long long cc_trim(void *ctx)
{
	struct cc *cc = ctx;
	long long freed = 0;

	pthread_mutex_lock(&cc->b.lock);
	/* A capture underway may see no free: nothing goes back now. */
	if (cc->nroutes) {
		pthread_mutex_unlock(&cc->b.lock);
		return 0;
	}
	if (cc->events) {
		for (int i = 0; i < CC_MAX_DEVICES; i++)
			if (cc->dev[i].ready)
				cc->dev[i].st.num_sync_all_streams++;
		synchronize_events(cc);
	}
	for (int i = 0; i < CC_MAX_DEVICES; i++)
		if (cc->dev[i].ready)
			freed += (long long)release_cached(cc, &cc->dev[i]);
	pthread_mutex_unlock(&cc->b.lock);
	return freed;
}

/* ---- options ------------------------------------------------------------ */

/* Devices already in use follow new options.  The lock is held. */
static void refresh_limits(struct cc *cc)
{
	for (int i = 0; i < CC_MAX_DEVICES; i++) {
		struct cc_device *d = &cc->dev[i];

		if (!d->ready)
			continue;
		if (cc->sim) {
			size_t fr;

			cc->b.src.ops->mem_info(cc->b.src.ctx, i, &fr,
						&d->total);
		}
		d->limit = fraction_limit(cc, d->total);
		d->st.max_split_size =
			cc->max_split_size == SIZE_MAX ? 0 : cc->max_split_size;
	}
}

static int parse_fraction(const char *name, const char *key, const char *value,
			  bool one_ok, double *out)
{
	char *end;
	double v = strtod(value, &end);

	if (end == value || *end || !(v > 0) || v > 1 || (!one_ok && v >= 1))
		return alloy__error(-ERANGE, name,
				    "%s \"%s\" must be a number in (0, 1%c",
				    key, value, one_ok ? ']' : ')');
	*out = v;
	return 0;
}

static int cc_set_option(void *ctx, const char *key, const char *value)
{
	struct cc *cc = ctx;
	uint64_t n;
	int rc = 0;

	pthread_mutex_lock(&cc->b.lock);
	if (!strcmp(key, "max_split_size")) {
		rc = alloy_parse_size(value, &n);
		if (rc || n <= CC_LARGE_BUFFER)
			rc = alloy__error(
				-ERANGE, cc->b.name,
				"max_split_size \"%s\" must be a size above 20M (or \"unlimited\")",
				value);
		else
			cc->max_split_size =
				n >= SIZE_MAX ? SIZE_MAX : (size_t)n;
	} else if (!strcmp(key, "roundup_power2_divisions")) {
		rc = alloy_parse_size(value, &n);
		if (rc || n > 1024 || (n & (n - 1)))
			rc = alloy__error(
				-ERANGE, cc->b.name,
				"roundup_power2_divisions \"%s\" must be 0 or a power of two up to 1024",
				value);
		else
			cc->divisions = (unsigned)n;
	} else if (!strcmp(key, "garbage_collection_threshold")) {
		rc = parse_fraction(cc->b.name, key, value, false,
				    &cc->gc_threshold);
	} else if (!strcmp(key, "memory_fraction")) {
		rc = parse_fraction(cc->b.name, key, value, true,
				    &cc->fraction);
	} else if (!strcmp(key, "expandable_segments")) {
		if (strcmp(value, "0") && strcmp(value, "1") &&
		    strcmp(value, "true") && strcmp(value, "false") &&
		    strcmp(value, "True") && strcmp(value, "False"))
			rc = alloy__error(
				-ERANGE, cc->b.name,
				"expandable_segments \"%s\" must be 0 or 1",
				value);
		else if (!cc->b.src.ops->va_reserve &&
			 (!strcmp(value, "1") || !strcasecmp(value, "true")))
			rc = alloy__error(
				-ENOTSUP, cc->b.name,
				"expandable_segments: the %s device source has no virtual-memory calls",
				cc->b.src.ops->name);
		else
			cc->expandable = !strcmp(value, "1") ||
					 !strcasecmp(value, "true");
	} else if (!strcmp(key, "capacity") && cc->sim) {
		rc = alloy_parse_size(value, &n);
		if (rc || n >= SIZE_MAX)
			rc = alloy__error(-ERANGE, cc->b.name,
					  "capacity \"%s\" must be a size",
					  value);
		else
			alloy_cuda_sim_set_capacity(cc->sim, (size_t)n);
	} else {
		rc = alloy__error(
			-EINVAL, cc->b.name,
			"unknown option \"%s\" (max_split_size, roundup_power2_divisions, "
			"garbage_collection_threshold, memory_fraction, expandable_segments%s)",
			key, cc->sim ? ", capacity" : "");
	}
	if (!rc)
		refresh_limits(cc);
	pthread_mutex_unlock(&cc->b.lock);
	return rc;
}

int alloy_cuda_caching_set_memory_fraction(struct alloy_allocator *a,
					   double fraction)
{
	struct cc *cc = alloy__cc_of(a);

	if (!cc)
		return -EINVAL;
	/* Written so that NaN fails too. */
	if (!(fraction > 0 && fraction <= 1))
		return alloy__error(-ERANGE, cc->b.name,
				    "memory_fraction %g must be in (0, 1]",
				    fraction);
	pthread_mutex_lock(&cc->b.lock);
	cc->fraction = fraction;
	refresh_limits(cc);
	pthread_mutex_unlock(&cc->b.lock);
	return 0;
}

/* Unregistered (no live blocks): give the whole cache back. */
static void cc_fini(void *ctx)
{
	cc_trim(ctx);
}

/*
 * Grow or shrink keeping the contents: a new block on the old one's
 * device and stream, a device-to-device copy ordered on that stream, then
 * the old block freed (reused only by later work on the same stream).
 * Never a host memcpy: the bytes are on the device.
 */
static void *cc_realloc(void *ctx, void *ptr, size_t old_size, size_t new_size,
			size_t align)
{
	struct cc *cc = ctx;
	struct cc_block *b;
	void *stream;
	int device;

	pthread_mutex_lock(&cc->b.lock);
	b = alloy__ptrmap_get(&cc->live, ptr);
	stream = b ? b->seg->stream : NULL;
	device = b ? b->seg->device : 0;
	pthread_mutex_unlock(&cc->b.lock);
	if (!b) {
		alloy__error(-EINVAL, cc->b.name,
			     "realloc: %p is not a live block", ptr);
		return NULL;
	}
	/* On the block's device, whichever the calling thread is on. */
	return alloy__cuda_realloc_on(&cc->b, alloc_on, device, stream, false,
				      ptr, old_size, new_size, align);
}

static const struct alloy_allocator_ops cc_template = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.device_type = ALLOY_DEVICE_CUDA,
	.alloc = cc_alloc,
	.free = cc_free,
	.fini = cc_fini,
	.realloc = cc_realloc,
	.usable_size = cc_usable_size,
	.trim = cc_trim,
	.stats = alloy__cc_stats_op,
	.set_option = cc_set_option,
	.alloc_async = cc_alloc_async,
	.free_async = cc_free_async,
	.record_stream = cc_record_stream,
	.snapshot_json = alloy__cc_snapshot_op,
};

struct cc *alloy__cc_of(struct alloy_allocator *a)
{
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);

	if (!ops || ops->alloc != cc_alloc) {
		alloy__error(-EINVAL, "alloy_cuda_caching",
			     "allocator \"%s\" is not a CUDA caching allocator",
			     alloy_allocator_name(a));
		return NULL;
	}
	return alloy_allocator_ctx(a);
}

int alloy__cuda_caching_new(const struct alloy__devsrc *src, const char *name,
			    const struct alloy_allocator_ops **ops, void **ctx)
{
	struct cc *cc;
	int rc = alloy__cuda_base_new(sizeof(*cc), src, name, &cc_template, ops,
				      ctx);

	if (rc)
		return rc;
	cc = *ctx;
	/* The simulated source's context is its simulator. */
	if (!strcmp(src->ops->name, "sim"))
		cc->sim = src->ctx;
	cc->max_split_size = SIZE_MAX;
	cc->fraction = 1.0;
	return 0;
}

long long alloy_cuda_caching_empty_cache(struct alloy_allocator *a)
{
	struct cc *cc = alloy__cc_of(a);

	return cc ? cc_trim(cc) : -EINVAL;
}
