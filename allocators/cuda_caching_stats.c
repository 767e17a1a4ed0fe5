// SPDX-License-Identifier: MIT
/*
 * allocators/cuda_caching_stats.c - the caching allocator's statistics,
 * block walk and JSON snapshot.
 *
 * The statistics are kept incrementally by the policy (cuda_caching.c);
 * the walk reads the segments themselves, so a test can check that the
 * two agree, as PyTorch's own tests do.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/cuda_caching.h"

int alloy__cc_stats_op(void *ctx, struct alloy_allocator_stats *st)
{
	struct cc *cc = ctx;
	const int all = ALLOY_CUDA_POOL_ALL;

	/* The registry counted calls and bytes asked; we know the rest. */
	st->allocated = st->reserved = st->active = 0;
	st->peak_allocated = st->peak_reserved = 0;
	pthread_mutex_lock(&cc->b.lock);
	for (int i = 0; i < CC_MAX_DEVICES; i++) {
		const struct alloy_cuda_stats *s = &cc->dev[i].st;

		if (!cc->dev[i].ready)
			continue;
		st->allocated += (uint64_t)s->allocated_bytes[all].current;
		st->reserved += (uint64_t)s->reserved_bytes[all].current;
		st->active += (uint64_t)s->active_bytes[all].current;
		st->peak_allocated += (uint64_t)s->allocated_bytes[all].peak;
		st->peak_reserved += (uint64_t)s->reserved_bytes[all].peak;
		st->num_system_allocs += s->num_device_alloc;
		st->num_system_frees += s->num_device_free;
		st->num_ooms += s->num_ooms;
	}
	pthread_mutex_unlock(&cc->b.lock);
	st->mapped = st->reserved;
	return 0;
}

int alloy_cuda_caching_stats(struct alloy_allocator *a, int device,
			     struct alloy_cuda_stats *st)
{
	struct cc *cc = alloy__cc_of(a);
	struct alloy_cuda_stats mine;
	size_t n;

	if (!cc)
		return -EINVAL;
	ALLOY_ENFORCE(st, -EINVAL, "stats is NULL");
	ALLOY_ENFORCE(st->size >= 2 * sizeof(uint32_t), -EINVAL,
		      "stats header size %u is too small", st->size);
	ALLOY_ENFORCE(device >= 0 && device < CC_MAX_DEVICES, -ENODEV,
		      "device %d out of range 0..%d", device,
		      CC_MAX_DEVICES - 1);
	n = st->size < sizeof(mine) ? st->size : sizeof(mine);
	pthread_mutex_lock(&cc->b.lock);
	mine = cc->dev[device].st;
	if (!cc->dev[device].ready)
		mine.max_split_size =
			cc->max_split_size == SIZE_MAX ? 0 : cc->max_split_size;
	pthread_mutex_unlock(&cc->b.lock);
	mine.size = (uint32_t)n;
	mine.version = ALLOY_CUDA_STATS_VERSION;
	memcpy(st, &mine, n);
	return 0;
}

static void reset_peak(struct alloy_cuda_stat *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		s[i].peak = s[i].current;
}

int alloy_cuda_caching_reset_peaks(struct alloy_allocator *a, int device)
{
	struct cc *cc = alloy__cc_of(a);
	struct alloy_cuda_stats *s;

	if (!cc)
		return -EINVAL;
	ALLOY_ENFORCE(device >= 0 && device < CC_MAX_DEVICES, -ENODEV,
		      "device %d out of range 0..%d", device,
		      CC_MAX_DEVICES - 1);
	pthread_mutex_lock(&cc->b.lock);
	s = &cc->dev[device].st;
	reset_peak(s->allocation, ALLOY_CUDA_POOL_COUNT);
	reset_peak(s->segment, ALLOY_CUDA_POOL_COUNT);
	reset_peak(s->active, ALLOY_CUDA_POOL_COUNT);
	reset_peak(s->inactive_split, ALLOY_CUDA_POOL_COUNT);
	reset_peak(s->allocated_bytes, ALLOY_CUDA_POOL_COUNT);
	reset_peak(s->reserved_bytes, ALLOY_CUDA_POOL_COUNT);
	reset_peak(s->active_bytes, ALLOY_CUDA_POOL_COUNT);
	reset_peak(s->inactive_split_bytes, ALLOY_CUDA_POOL_COUNT);
	reset_peak(s->requested_bytes, ALLOY_CUDA_POOL_COUNT);
	reset_peak(&s->oversize_allocations, 1);
	reset_peak(&s->oversize_segments, 1);
	pthread_mutex_unlock(&cc->b.lock);
	return 0;
}

/* ---- the walk ----------------------------------------------------------- */

static int by_address(const void *x, const void *y)
{
	const struct cc_segment *a = *(struct cc_segment *const *)x;
	const struct cc_segment *b = *(struct cc_segment *const *)y;

	return (a->ptr > b->ptr) - (a->ptr < b->ptr);
}

static int block_state(const struct cc_block *b)
{
	switch (b->state) {
	case CC_ALLOCATED:
		return ALLOY_CUDA_BLOCK_ACTIVE_ALLOCATED;
	case CC_PENDING:
		return ALLOY_CUDA_BLOCK_ACTIVE_PENDING_FREE;
	default:
		return ALLOY_CUDA_BLOCK_INACTIVE;
	}
}

/* Walk the blocks of one device; the lock is held. */
static int walk_device(struct cc *cc, int device,
		       int (*fn)(const struct alloy_cuda_block_info *b,
				 void *arg),
		       void *arg)
{
	struct cc_segment **v, *s;
	size_t n = 0;
	int rc = 0;

	for (s = cc->dev[device].segments; s; s = s->next)
		n++;
	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	ALLOY_ENFORCE(v, -ENOMEM, "no memory to sort %zu segments", n);
	n = 0;
	for (s = cc->dev[device].segments; s; s = s->next)
		v[n++] = s;
	qsort(v, n, sizeof(*v), by_address);
	for (size_t i = 0; i < n && !rc; i++) {
		for (struct cc_block *b = v[i]->head; b && !rc; b = b->next) {
			struct alloy_cuda_block_info info = {
				.device = device,
				.pool = cc_stat_pool(v[i]->pool),
				.segment = v[i]->ptr,
				.segment_size = v[i]->size,
				.stream = v[i]->stream,
				.address = b->ptr,
				.size = b->size,
				.requested_size = b->requested,
				.state = block_state(b),
				.segment_start = b == v[i]->head,
				.expandable = v[i]->expandable,
				.pool_id = v[i]->gp ? v[i]->gp->id : 0,
			};

			rc = fn(&info, arg);
		}
	}
	free(v);
	return rc;
}

int alloy_cuda_caching_foreach_block(
	struct alloy_allocator *a,
	int (*fn)(const struct alloy_cuda_block_info *b, void *arg), void *arg)
{
	struct cc *cc = alloy__cc_of(a);
	int rc = 0;

	if (!cc)
		return -EINVAL;
	ALLOY_ENFORCE(fn, -EINVAL, "fn is NULL");
	pthread_mutex_lock(&cc->b.lock);
	for (int d = 0; d < CC_MAX_DEVICES && !rc; d++)
		if (cc->dev[d].ready)
			rc = walk_device(cc, d, fn, arg);
	pthread_mutex_unlock(&cc->b.lock);
	return rc;
}

/* ---- JSON ---------------------------------------------------------------- */

struct jw {
	void (*write)(void *arg, const char *s);
	void *arg;
	bool first_block;
	size_t seg_alloc, seg_active; /* sums of the segment being written */
};

static void jprintf(struct jw *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void jprintf(struct jw *w, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	w->write(w->arg, buf);
}

static const char *const state_names[] = {
	[ALLOY_CUDA_BLOCK_INACTIVE] = "inactive",
	[ALLOY_CUDA_BLOCK_ACTIVE_ALLOCATED] = "active_allocated",
	[ALLOY_CUDA_BLOCK_ACTIVE_PENDING_FREE] = "active_pending_free",
};

static void segment_close(struct jw *w)
{
	jprintf(w, "],\"allocated_size\":%zu,\"active_size\":%zu}",
		w->seg_alloc, w->seg_active);
}

static int json_block(const struct alloy_cuda_block_info *b, void *arg)
{
	struct jw *w = arg;

	if (b->segment_start) {
		if (!w->first_block)
			segment_close(w);
		jprintf(w,
			"%s{\"address\":%" PRIuPTR ",\"total_size\":%zu,"
			"\"stream\":%" PRIuPTR
			",\"segment_type\":\"%s\",\"is_expandable\":%s,\"blocks\":[",
			w->first_block ? "" : ",", b->segment, b->segment_size,
			(uintptr_t)b->stream,
			b->pool == ALLOY_CUDA_POOL_SMALL ? "small" : "large",
			b->expandable ? "true" : "false");
		w->seg_alloc = w->seg_active = 0;
	}
	jprintf(w,
		"%s{\"address\":%" PRIuPTR
		",\"size\":%zu,\"requested_size\":%zu,"
		"\"state\":\"%s\"}",
		b->segment_start ? "" : ",", b->address, b->size,
		b->requested_size, state_names[b->state]);
	if (b->state == ALLOY_CUDA_BLOCK_ACTIVE_ALLOCATED)
		w->seg_alloc += b->size;
	if (b->state != ALLOY_CUDA_BLOCK_INACTIVE)
		w->seg_active += b->size;
	w->first_block = false;
	return 0;
}

static void json_stat(struct jw *w, const char *name,
		      const struct alloy_cuda_stat *s, bool comma)
{
	jprintf(w,
		"\"%s\":{\"current\":%" PRId64 ",\"peak\":%" PRId64
		",\"allocated\":%" PRId64 ",\"freed\":%" PRId64 "}%s",
		name, s->current, s->peak, s->allocated, s->freed,
		comma ? "," : "");
}

static void json_stats(struct jw *w, const struct alloy_cuda_stats *s)
{
	static const char *const pools[] = { "all", "small_pool",
					     "large_pool" };
	char name[64];

	w->write(w->arg, "\"stats\":{");
	for (int p = 0; p < ALLOY_CUDA_POOL_COUNT; p++) {
#define STAT(field)                                           \
	snprintf(name, sizeof(name), #field ".%s", pools[p]); \
	json_stat(w, name, &s->field[p], true);
		STAT(allocation)
		STAT(segment)
		STAT(active)
		STAT(inactive_split)
		STAT(allocated_bytes)
		STAT(reserved_bytes)
		STAT(active_bytes)
		STAT(inactive_split_bytes)
		STAT(requested_bytes)
#undef STAT
	}
	json_stat(w, "oversize_allocations", &s->oversize_allocations, true);
	json_stat(w, "oversize_segments", &s->oversize_segments, true);
	jprintf(w,
		"\"num_alloc_retries\":%" PRIu64 ",\"num_ooms\":%" PRIu64
		",\"num_sync_all_streams\":%" PRIu64
		",\"num_device_alloc\":%" PRIu64 ",\"num_device_free\":%" PRIu64
		",\"max_split_size\":%" PRIu64
		",\"expandable_address_bytes\":%" PRIu64
		",\"num_maps\":%" PRIu64 ",\"num_unmaps\":%" PRIu64 "}",
		s->num_alloc_retries, s->num_ooms, s->num_sync_all_streams,
		s->num_device_alloc, s->num_device_free, s->max_split_size,
		s->expandable_address_bytes, s->num_maps, s->num_unmaps);
}

int alloy__cc_snapshot_op(void *ctx, void (*write)(void *arg, const char *s),
			  void *arg)
{
	struct cc *cc = ctx;
	struct jw w = { .write = write, .arg = arg };
	bool first_dev = true;
	int rc = 0;

	ALLOY_ENFORCE(write, -EINVAL, "write is NULL");
	pthread_mutex_lock(&cc->b.lock);
	jprintf(&w, "{\"allocator\":\"%s\",\"devices\":[", cc->b.name);
	for (int d = 0; d < CC_MAX_DEVICES && !rc; d++) {
		if (!cc->dev[d].ready)
			continue;
		jprintf(&w, "%s{\"device\":%d,", first_dev ? "" : ",", d);
		json_stats(&w, &cc->dev[d].st);
		w.write(w.arg, ",\"segments\":[");
		w.first_block = true;
		rc = walk_device(cc, d, json_block, &w);
		if (!w.first_block)
			segment_close(&w);
		w.write(w.arg, "]}");
		first_dev = false;
	}
	w.write(w.arg, "]}");
	pthread_mutex_unlock(&cc->b.lock);
	return rc;
}

int alloy_cuda_caching_snapshot_json(struct alloy_allocator *a,
				     void (*write)(void *arg, const char *s),
				     void *arg)
{
	struct cc *cc = alloy__cc_of(a);

	return cc ? alloy__cc_snapshot_op(cc, write, arg) : -EINVAL;
}
