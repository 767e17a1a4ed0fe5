// SPDX-License-Identifier: MIT
/*
 * core/alloc.c - the allocation path: alloy_alloc, DataPtr and deleters.
 *
 * This is the hot path.  An allocation enters a grace-period section (two
 * plain stores), checks the allocator is live, calls its alloc op, bumps
 * the thread's own counters and, only when the reporter is on, calls the
 * hooks.  The DataPtr it returns names the allocator itself as the
 * deleter's context, so the block goes back where it came from.
 */
#include <stdint.h>
#include <string.h>
#include <alloy/cuda.h> /* alloy_cuda_record_stream */

#include "internal.h"
#include "conf.h"

static _Atomic(const struct alloy__hooks *) hooks;

void alloy__set_hooks(const struct alloy__hooks *h)
{
	atomic_store_explicit(&hooks, h, memory_order_release);
}

static inline void count(struct alloy__tls *t, struct alloy_allocator *a,
			 int event, int64_t bytes)
{
	alloy__tcount_add(t, a->counters + event, 1);
	alloy__tcount_add(t, a->counters + ALLOY__C_BYTES, bytes);
}

int64_t alloy__live_blocks(const struct alloy_allocator *a)
{
	/* Frees first: a racing alloc+free can then only make it larger. */
	int64_t frees = alloy__tcount_sum(a->counters + ALLOY__C_FREES);

	return alloy__tcount_sum(a->counters + ALLOY__C_ALLOCS) - frees;
}

/* Deleter of blocks made while no hooks were installed. */
static void allocator_deleter(struct alloy_data_ptr *dp)
{
	struct alloy_allocator *a = dp->ctx;

	a->ops.free(a->ctx, dp->ptr, dp->size, dp->align);
	/* After the free: unregister must not see 0 while it is running. */
	count(alloy__tls_self, a, ALLOY__C_FREES, -(int64_t)dp->size);
}

/* Deleter of blocks that were reported at allocation. */
static void reported_deleter(struct alloy_data_ptr *dp)
{
	const struct alloy__hooks *h =
		atomic_load_explicit(&hooks, memory_order_acquire);

	if (h)
		h->on_free(dp->ctx, dp);
	allocator_deleter(dp);
}

static bool is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

/*
 * Everything unusual about a request, kept out of the hot path: an empty
 * block (valid), a size that would wrap, an allocator on its way out.
 */
static __attribute__((noinline, cold)) int
alloc_unusual(struct alloy_allocator *a, size_t size, size_t align,
	      struct alloy_data_ptr *out)
{
	*out = ALLOY_DATA_PTR_INIT;
	if (atomic_load_explicit(&a->state, memory_order_relaxed) != ALLOC_LIVE)
		return alloy__error(-ENODEV, "alloy_alloc",
				    "allocator \"%s\" is being unregistered",
				    a->name);
	if (size == 0) {
		/* A valid empty block: nothing to free, nothing counted. */
		out->device.type = (int16_t)a->ops.device_type;
		return 0;
	}
	/* Leave room for any rounding an allocator does: never wrap. */
	return alloy__error(
		-EOVERFLOW, "alloy_alloc",
		"size %zu with alignment %zu exceeds the largest object (%td bytes)",
		size, align, PTRDIFF_MAX);
}

/* The allocator's own explanation, when it gave one, is kept. */
static __attribute__((noinline, cold)) int
alloc_failed(struct alloy_allocator *a, size_t size, size_t align,
	     unsigned error_seq, struct alloy_data_ptr *out)
{
	bool explained = alloy__error_seq != error_seq;

	*out = ALLOY_DATA_PTR_INIT;
	return alloy__error(
		-ENOMEM, "alloy_alloc",
		"allocator \"%s\" could not allocate %zu bytes (alignment %zu)%s%s",
		a->name, size, align, explained ? ": " : "",
		explained ? alloy_last_error() : "");
}

/*
 * Allocate from a.  The caller is inside an enter/leave section, t is not
 * NULL and align is a power of two >= sizeof(void *).
 */
static inline __attribute__((always_inline)) int
alloc_entered(struct alloy__tls *t, struct alloy_allocator *a, size_t size,
	      size_t align, unsigned flags, struct alloy_data_ptr *out)
{
	const struct alloy__hooks *h;
	unsigned error_seq;
	void *p;

	/* size - 1 wraps for 0, so one test catches both ends. */
	if (unlikely(atomic_load_explicit(&a->state, memory_order_relaxed) !=
			     ALLOC_LIVE ||
		     size - 1 >= (size_t)PTRDIFF_MAX - align))
		return alloc_unusual(a, size, align, out);
	error_seq = alloy__error_seq;
	p = a->ops.alloc(a->ctx, size, align, flags);
	if (unlikely(!p))
		return alloc_failed(a, size, align, error_seq, out);
	count(t, a, ALLOY__C_ALLOCS, (int64_t)size);
	h = atomic_load_explicit(&hooks, memory_order_acquire);
	*out = (struct alloy_data_ptr){
		.ptr = p,
		.ctx = a,
		.deleter = unlikely(h) ? reported_deleter : allocator_deleter,
		.device = { .type = (int16_t)a->ops.device_type },
		.size = size,
		.align = align,
	};
	if (unlikely(h))
		h->on_alloc(a, out);
	return 0;
}

static __attribute__((noinline, cold)) int
no_thread_state(const char *func, struct alloy_data_ptr *out)
{
	*out = ALLOY_DATA_PTR_INIT;
	return alloy__error(-ENOMEM, func,
			    "no memory for this thread's accounting");
}

int alloy_alloc(struct alloy_allocator *a, size_t size, size_t align,
		unsigned flags, struct alloy_data_ptr *out)
{
	struct alloy__tls *t;
	int rc;

	if (unlikely(!out))
		return alloy__error(-EINVAL, __func__, "out is NULL");
	if (unlikely(!a)) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(-EINVAL, __func__, "allocator is NULL");
	}
	alloy__ensure_init();
	if (align == 0) {
		align = (size_t)alloy__conf.align;
	} else if (unlikely(!is_pow2(align))) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(-EINVAL, __func__,
				    "alignment %zu is not a power of two",
				    align);
	} else if (align < sizeof(void *)) {
		align = sizeof(void *);
	}
	t = alloy__tls_get();
	if (unlikely(!t))
		return no_thread_state(__func__, out);
	alloy__enter(t);
	rc = alloc_entered(t, a, size, align, flags, out);
	alloy__leave(t);
	return rc;
}

int alloy_alloc_default(int device_type, size_t size, unsigned flags,
			struct alloy_data_ptr *out)
{
	struct alloy_allocator *a;
	struct alloy__tls *t;
	int rc;

	if (unlikely(!out))
		return alloy__error(-EINVAL, __func__, "out is NULL");
	if (unlikely((unsigned)device_type >= ALLOY_DEVICE_TYPE_COUNT)) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(-EINVAL, __func__, "unknown device type %d",
				    device_type);
	}
	alloy__ensure_init();
	t = alloy__tls_get();
	if (unlikely(!t))
		return no_thread_state(__func__, out);
	/*
	 * Read the default inside the section: an unregister that races
	 * with a swap then waits for us, so the allocator we read stays
	 * usable until we have counted our block.
	 */
	alloy__enter(t);
	a = atomic_load_explicit(&alloy__defaults[device_type],
				 memory_order_acquire);
	if (likely(a)) {
		/* The configured alignment was validated when parsed. */
		rc = alloc_entered(t, a, size, (size_t)alloy__conf.align, flags,
				   out);
	} else {
		*out = ALLOY_DATA_PTR_INIT;
		rc = alloy__error(
			-ENODEV, __func__,
			"no default allocator for %s (is its module loaded?)",
			alloy_device_type_name(device_type));
	}
	alloy__leave(t);
	return rc;
}

void alloy_data_ptr_free(struct alloy_data_ptr *dp)
{
	if (!dp)
		return;
	if (dp->deleter)
		dp->deleter(dp);
	*dp = ALLOY_DATA_PTR_INIT;
}

static bool made_by_registry(const struct alloy_data_ptr *dp)
{
	return dp->deleter == allocator_deleter ||
	       dp->deleter == reported_deleter;
}

struct alloy_allocator *
alloy_data_ptr_allocator(const struct alloy_data_ptr *dp)
{
	return dp && made_by_registry(dp) ? dp->ctx : NULL;
}

int alloy_data_ptr_realloc(struct alloy_data_ptr *dp, size_t new_size)
{
	struct alloy_allocator *a;
	struct alloy_data_ptr n;
	int rc;

	ALLOY_ENFORCE(dp, -EINVAL, "dp is NULL");
	a = alloy_data_ptr_allocator(dp);
	ALLOY_ENFORCE(a || !dp->ptr, -EINVAL,
		      "block %p was not made by an alloy allocator", dp->ptr);
	ALLOY_ENFORCE(a, -EINVAL,
		      "empty DataPtr has no allocator to grow from");
	if (a->ops.realloc && new_size > 0 &&
	    new_size <= (size_t)PTRDIFF_MAX - dp->align) {
		const struct alloy__hooks *h =
			dp->deleter == reported_deleter
				? atomic_load_explicit(&hooks,
						       memory_order_acquire)
				: NULL;
		void *p;

		/* The reporter sees the old block go and the new one come. */
		if (h)
			h->on_free(a, dp);
		p = a->ops.realloc(a->ctx, dp->ptr, dp->size, new_size,
				   dp->align);
		if (!p) {
			if (h)
				h->on_alloc(a, dp);
			return alloy__error(
				-ENOMEM, __func__,
				"allocator \"%s\" could not grow %zu to %zu bytes",
				a->name, dp->size, new_size);
		}
		alloy__tcount_add(alloy__tls_get(),
				  a->counters + ALLOY__C_BYTES,
				  (int64_t)new_size - (int64_t)dp->size);
		dp->ptr = p;
		dp->size = new_size;
		if (h)
			h->on_alloc(a, dp);
		return 0;
	}
	/*
	 * Fallback: allocate, copy, free.  The copy goes through the
	 * device's context: the block may not be host memory.
	 */
	rc = alloy_alloc(a, new_size, dp->align, 0, &n);
	if (rc)
		return rc;
	n.device = dp->device;
	rc = alloy_copy_bytes(dp->size < new_size ? dp->size : new_size,
			      dp->ptr, dp->device, n.ptr, n.device);
	if (rc) {
		alloy_data_ptr_free(&n);
		return rc;
	}
	alloy_data_ptr_free(dp);
	*dp = n;
	return 0;
}

struct alloy_data_ptr alloy_data_ptr_wrap(void *ptr, size_t size,
					  struct alloy_device device,
					  alloy_deleter_fn deleter, void *ctx)
{
	struct alloy_data_ptr dp = {
		.ptr = ptr,
		.ctx = ctx,
		.deleter = deleter,
		.device = device,
		.size = size,
		.align = 1,
	};

	return dp;
}

/* ---- accessors and optional ops with their fallbacks ---------------- */

const char *alloy_allocator_name(const struct alloy_allocator *a)
{
	return a ? a->name : "(null)";
}

int alloy_allocator_device_type(const struct alloy_allocator *a)
{
	return a ? a->ops.device_type : -EINVAL;
}

const char *alloy_allocator_origin(const struct alloy_allocator *a)
{
	return a ? a->origin : "(null)";
}

long long alloy_allocator_live_blocks(const struct alloy_allocator *a)
{
	return a ? alloy__live_blocks(a) : 0;
}

long long alloy_allocator_live_bytes(const struct alloy_allocator *a)
{
	return a ? alloy__tcount_sum(a->counters + ALLOY__C_BYTES) : 0;
}

const struct alloy_allocator_ops *
alloy_allocator_ops(const struct alloy_allocator *a)
{
	return a ? &a->ops : NULL;
}

void *alloy_allocator_ctx(const struct alloy_allocator *a)
{
	return a ? a->ctx : NULL;
}

size_t alloy_allocator_usable_size(struct alloy_allocator *a, const void *ptr,
				   size_t size)
{
	if (a && a->ops.usable_size && ptr)
		return a->ops.usable_size(a->ctx, ptr, size);
	return size;
}

/* The optional record_stream op (declared in alloy/cuda.h). */
int alloy_cuda_record_stream(const struct alloy_data_ptr *dp, void *stream)
{
	struct alloy_allocator *a;
	const struct alloy_allocator_ops *ops;

	ALLOY_ENFORCE(dp, -EINVAL, "dp is NULL");
	if (!dp->ptr)
		return 0;
	a = alloy_data_ptr_allocator(dp);
	ALLOY_ENFORCE(a, -EINVAL, "block %p was not made by an alloy allocator",
		      dp->ptr);
	ops = alloy_allocator_ops(a);
	ALLOY_ENFORCE(ops->record_stream, -ENOTSUP,
		      "allocator \"%s\" has no record_stream",
		      alloy_allocator_name(a));
	return ops->record_stream(alloy_allocator_ctx(a), dp->ptr, stream);
}

long long alloy_allocator_trim(struct alloy_allocator *a)
{
	ALLOY_ENFORCE(a, -EINVAL, "allocator is NULL");
	return a->ops.trim ? a->ops.trim(a->ctx) : 0;
}

int alloy_allocator_stats(struct alloy_allocator *a,
			  struct alloy_allocator_stats *st)
{
	struct alloy_allocator_stats mine = { 0 };
	uint32_t size;

	ALLOY_ENFORCE(a, -EINVAL, "allocator is NULL");
	ALLOY_ENFORCE(st, -EINVAL, "stats is NULL");
	ALLOY_ENFORCE(st->size >= 2 * sizeof(uint32_t), -EINVAL,
		      "stats header size %u is too small", st->size);
	size = st->size < sizeof(mine) ? st->size : (uint32_t)sizeof(mine);
	/* What the registry itself knows; the allocator may refine it. */
	mine.size = sizeof(mine);
	mine.version = ALLOY_STATS_VERSION;
	mine.allocated =
		(uint64_t)alloy__tcount_sum(a->counters + ALLOY__C_BYTES);
	mine.reserved = mine.allocated;
	mine.num_allocs =
		(uint64_t)alloy__tcount_sum(a->counters + ALLOY__C_ALLOCS);
	mine.num_frees =
		(uint64_t)alloy__tcount_sum(a->counters + ALLOY__C_FREES);
	if (a->ops.stats) {
		int rc = a->ops.stats(a->ctx, &mine);

		if (rc)
			return rc;
	}
	mine.size = size;
	memcpy(st, &mine, size);
	return 0;
}
