// SPDX-License-Identifier: MIT
/*
 * kernel/alloc.c - the allocation path: alloy_alloc, DataPtr and deleters.
 *
 * This is the hot path.  alloy_alloc_default reads the device's default
 * and counts the block on it inside a window (kernel/count.h), calls the
 * allocator's alloc op and fills the DataPtr; the reporter's hooks are
 * called only when it is on.  The DataPtr names the allocator itself as
 * the deleter's context, so the block goes back where it came from.
 * Everything unusual (no record for this thread yet, bad arguments, a
 * size that would wrap, a failure) leaves through a cold function, so
 * the common case is a straight line.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <alloy/cuda.h> /* alloy_cuda_record_stream */

#include "base.h"
#include "count.h"
#include "hooks.h"
#include "registry.h"
#include "conf.h"

/*
 * Two neighbouring 8-byte stores (size, align) are cheaper as two moves
 * than as the vector shuffle GCC would build them with.
 */
#pragma GCC optimize("no-tree-slp-vectorize")

_Atomic(const struct alloy__hooks *) alloy__hooks;

void alloy__set_hooks(const struct alloy__hooks *h)
{
	atomic_store_explicit(&alloy__hooks, h, memory_order_release);
	alloy__slow_mask_set(ALLOY__SLOW_HOOKS, h != NULL);
}

/*
 * The free of a thread without a record, out of line and cold where the
 * deleters below inline alloy__free_and_count; its counting is
 * alloy__count_free_slow's (kernel/count.c).
 */
__attribute__((noinline, cold)) void
alloy__free_unrecorded(struct alloy_allocator *a, void *block, size_t size,
		       size_t align, size_t counted)
{
	a->ops.free(a->ctx, block, size, align);
	alloy__count_free_slow(a, counted);
}

/*
 * Deleter of blocks made while no hooks were installed, counted as
 * alloy__free_counted says.  alloy_data_ptr_free does the same inline
 * (alloy/allocator.h), from the layout asserted here.
 */
_Static_assert(offsetof(struct alloy_allocator, ctx) ==
			       offsetof(struct alloy__allocator_head, ctx) &&
		       offsetof(struct alloy_allocator, acct_offset) ==
			       offsetof(struct alloy__allocator_head,
					acct_offset) &&
		       offsetof(struct alloy_allocator, ops) ==
			       offsetof(struct alloy__allocator_head, ops),
	       "struct alloy_allocator starts as struct alloy__allocator_head");

void alloy__allocator_deleter(struct alloy_data_ptr *dp)
{
	alloy__free_and_count(dp->ctx, dp->ptr, dp->size, dp->align, dp->size);
}

/* Deleter of blocks that were reported at allocation. */
static void reported_deleter(struct alloy_data_ptr *dp)
{
	const struct alloy__hooks *h = alloy__hooks_now();

	if (h)
		h->on_free(dp->ctx, dp);
	alloy__allocator_deleter(dp);
}

/*
 * The alignment a valid request (0 or a power of two up to
 * ALLOY_ALIGN_MAX) gets: 0 is the configured one, others at least a
 * pointer's.  Raised without a compare: 0 wraps to 0 again, which the
 * conditional move that follows replaces.
 */
static inline __attribute__((always_inline)) size_t
effective_align(size_t align)
{
	align = alloy__align_raised(align);
	return align ? align : (size_t)alloy__conf.align;
}

/*
 * The largest block: 2^62 bytes.  With alignments up to ALLOY_ALIGN_MAX
 * (2^40) an allocator can round size up by align without passing
 * PTRDIFF_MAX.  size - 1 wraps for 0, so one test catches both ends.
 */
#define SIZE_MAX_BLOCK ((size_t)1 << 62)

static inline bool size_unusual(size_t size)
{
	return (size - 1) >= SIZE_MAX_BLOCK;
}

/* An empty block (valid) or a size that would wrap. */
static __attribute__((noinline, cold)) int
size_refused(const char *func, int device_type, size_t size, size_t align,
	     struct alloy_data_ptr *out)
{
	*out = ALLOY_DATA_PTR_INIT;
	if (size == 0) {
		/* A valid empty block: nothing to free, nothing counted. */
		out->device.type = (int16_t)device_type;
		return 0;
	}
	/* Leave room for any rounding an allocator does: never wrap. */
	return alloy__error(
		-EOVERFLOW, func,
		"size %zu (alignment %zu) exceeds the largest block alloy makes (%zu bytes)",
		size, align, SIZE_MAX_BLOCK);
}

/*
 * The allocator's own explanation, when it gave one, is kept.  out holds
 * the allocator, size and alignment of the request.
 */
static __attribute__((noinline, cold)) int
alloc_failed(struct alloy_data_ptr *out)
{
	struct alloy_allocator *a = out->ctx;
	bool explained = *alloy__error_mark_of() != 0;
	size_t size = out->size, align = out->align;

	alloy__uncount_alloc(a, size);
	*out = ALLOY_DATA_PTR_INIT;
	return alloy__error(
		-ENOMEM, "alloy_alloc",
		"allocator \"%s\" could not allocate %zu bytes (alignment %zu)%s%s",
		a->name, size, align, explained ? ": " : "",
		explained ? alloy_last_error() : "");
}

/*
 * Call a's alloc op for the block already counted on it and described in
 * *out (ctx, size, align, device, deleter filled).  The DataPtr is
 * filled before the call so that only out stays live across it: fewer
 * registers to save on the hottest path alloy has.
 */
static inline __attribute__((always_inline)) int
alloc_call(struct alloy_allocator *a, unsigned *error_mark, unsigned flags,
	   struct alloy_data_ptr *out)
{
	void *p;

	*error_mark = 0;
	p = a->ops.alloc(a->ctx, out->size, out->align, flags);
	if (unlikely(!p))
		return alloc_failed(out);
	out->ptr = p;
	return 0;
}

/*
 * Fill all of *out but ptr.  device_type is a valid type, so the device
 * {type, index 0} is one 32-bit store of it.
 */
static inline __attribute__((always_inline)) void
describe(struct alloy_data_ptr *out, struct alloy_allocator *a, int device_type,
	 size_t size, size_t align)
{
	uint32_t device = (uint32_t)device_type;

	_Static_assert(sizeof(out->device) == sizeof(device) &&
			       offsetof(struct alloy_device, type) == 0,
		       "struct alloy_device is {int16 type, int16 index}");
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	device <<= 16;
#endif
	out->ctx = a;
	out->deleter = alloy__allocator_deleter;
	memcpy(&out->device, &device, sizeof(device));
	out->size = size;
	out->align = align;
}

/*
 * The reporter is on: record the block inside a section, so that turning
 * it off (which waits for sections) knows no thread still records with
 * the hooks it replaced.  The hooks are read again inside: they may have
 * gone since the caller looked.
 */
static void report_alloc(struct alloy_allocator *a, struct alloy_data_ptr *out)
{
	struct alloy__tls *t = alloy__section_enter();
	const struct alloy__hooks *h;

	h = alloy__hooks_now();
	if (h) {
		out->deleter = reported_deleter;
		h->on_alloc(a, out);
	}
	alloy__section_leave(t);
}

/*
 * Everything off the fast path: bad arguments, a thread without a record
 * (its first allocation), no membarrier, the reporter on, no default.
 */
static __attribute__((noinline, cold)) int
alloc_default_slow(int device_type, size_t size, unsigned flags,
		   struct alloy_data_ptr *out)
{
	struct alloy_allocator *a;
	size_t align;
	int rc;

	if (unlikely(!out))
		return alloy__error(-EINVAL, "alloy_alloc_default",
				    "out is NULL");
	if (unlikely((unsigned)device_type >= ALLOY_DEVICE_TYPE_COUNT)) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(-EINVAL, "alloy_alloc_default",
				    "unknown device type %d", device_type);
	}
	alloy__ensure_init();
	align = (size_t)alloy__conf.align;
	if (unlikely(size_unusual(size)))
		return size_refused("alloy_alloc_default", device_type, size,
				    align, out);
	a = alloy__pick_default_any(device_type, size);
	if (unlikely(!a)) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(
			-ENODEV, "alloy_alloc_default",
			"no default allocator for %s (is its module loaded?)",
			alloy_device_type_name(device_type));
	}
	describe(out, a, device_type, size, align);
	rc = alloc_call(a, alloy__error_mark_of(), flags, out);
	if (!rc && alloy__hooks_now())
		report_alloc(a, out);
	return rc;
}

/*
 * gcc's scheduling before register allocation (off by default on x86-64)
 * lets it load the op's arguments where the tail call below wants them:
 * two instructions fewer on the hottest path (gcc 12).
 */
#if defined(__GNUC__) && !defined(__clang__)
#define SCHEDULE_BEFORE_RA __attribute__((optimize("schedule-insns")))
#else
#define SCHEDULE_BEFORE_RA
#endif

/*
 * The arguments were checked by the caller (the inline wrapper).  A
 * device without a default gets alloy__no_default here, whose alloc op
 * fails: no test for it on this path.  out->ctx NULL or that allocator
 * tells alloy__alloc_default_settle that the whole call is still to be
 * made; any other, that *out describes the block its allocator refused.
 * describe() is always_inline: gcc inlines nothing into a function whose
 * optimisation options differ unless told to.
 */
SCHEDULE_BEFORE_RA void *alloy__alloc_default_fast(size_t device_type,
						   size_t size,
						   struct alloy_data_ptr *out,
						   unsigned flags)
{
	struct alloy__tls *t = alloy__tls_fast;
	struct alloy_allocator *a;

	if (unlikely(alloy__slow_now(t))) {
		out->ctx = NULL;
		return NULL;
	}
	a = alloy__pick_default(t, device_type, size, true);
	describe(out, a, device_type, size, (size_t)alloy__conf.align);
	return a->ops.alloc(a->ctx, size, out->align, flags);
}

int alloy__alloc_default_settle(int device_type, size_t size, unsigned flags,
				struct alloy_data_ptr *out)
{
	if (alloy__default_of(out->ctx))
		return alloc_failed(out);
	return alloc_default_slow(device_type, size, flags, out);
}

/* liballoy 1.0's header entry: the header's inline wrapper, out of line. */
int alloy__alloc_default_checked(int device_type, size_t size,
				 struct alloy_data_ptr *out, unsigned flags)
{
	return alloy_alloc_default(device_type, size, flags, out);
}

/*
 * The fast path could not start: alloy__alloc_settle makes the whole
 * call.  A function of its own, called last, so that the fast path keeps
 * out in no callee-saved register (no push and pop a pair).
 */
static __attribute__((noinline, cold)) void *
fast_refused(struct alloy_data_ptr *out)
{
	out->ctx = NULL;
	return NULL;
}

/*
 * The arguments were checked by the caller (the inline wrapper), align
 * is the effective one.  Counts first, then looks at a's state, as
 * alloy_alloc does; a dying allocator is uncounted and left to the slow
 * path, which says so.
 */
static inline __attribute__((always_inline)) void *
alloc_fast(struct alloy_allocator *a, size_t size, size_t align, unsigned flags,
	   struct alloy_data_ptr *out)
{
	struct alloy__tls *t = alloy__tls_fast;

	if (unlikely(alloy__slow_now(t)))
		return fast_refused(out);
	if (unlikely(!alloy__count_on_live(t, a, size, true)))
		return fast_refused(out);
	describe(out, a, a->ops.device_type, size, align);
	return a->ops.alloc(a->ctx, size, align, flags);
}

SCHEDULE_BEFORE_RA void *alloy__alloc_fast(struct alloy_allocator *a,
					   size_t size, size_t align,
					   unsigned flags,
					   struct alloy_data_ptr *out)
{
	return alloc_fast(a, size, effective_align(align), flags, out);
}

SCHEDULE_BEFORE_RA void *alloy__alloc_fast_raised(struct alloy_allocator *a,
						  size_t size, size_t align,
						  unsigned flags,
						  struct alloy_data_ptr *out)
{
	return alloc_fast(a, size, align, flags, out);
}

int alloy__alloc_settle(struct alloy_allocator *a, size_t size, size_t align,
			unsigned flags, struct alloy_data_ptr *out)
{
	if (out->ctx)
		return alloc_failed(out);
	return (alloy_alloc)(a, size, align, flags, out);
}

static bool made_by_registry(const struct alloy_data_ptr *dp)
{
	return dp->deleter == alloy__allocator_deleter ||
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
		const struct alloy__hooks *h = dp->deleter == reported_deleter
						       ? alloy__hooks_now()
						       : NULL;
		void *p;

		/*
		 * The reporter sees the old block go and the new one come.
		 * The hooks are read again for the coming one, in a section
		 * (report_alloc): the reporter may have been switched off
		 * and unhooked during the op, and the hooks read before it
		 * would record a block no free would ever take out.
		 */
		if (h)
			h->on_free(a, dp);
		p = a->ops.realloc(a->ctx, dp->ptr, dp->size, new_size,
				   dp->align);
		if (!p) {
			if (h)
				report_alloc(a, dp);
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
			report_alloc(a, dp);
		return 0;
	}
	/*
	 * Fallback: allocate, copy, free.  The copy goes through the
	 * device's context: the block may not be host memory.
	 */
	rc = alloy_alloc(a, new_size, dp->align, 0, &n);
	if (rc)
		return rc;
	/*
	 * This label is right only when the allocator allocates on
	 * dp->device.  One that allocates on the calling thread's current
	 * device instead puts the new block elsewhere when the caller is on
	 * another device, and then the label (and the device the copy below
	 * is given) is wrong: such an allocator needs its own realloc op
	 * (alloy's CUDA allocators have one).
	 */
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

/*
 * ---- the out-of-line entry points --------------------------------------
 *
 * The public headers define alloy_alloc, alloy_alloc_default and
 * alloy_data_ptr_free as macros over their inline wrappers, and the
 * functions above call them that way, as any caller does.  The functions
 * of the same names come last and with the macros undefined, so that
 * their definitions read as plain C (and tools that index C, ctags and
 * cscope, find them); the exported names are the same either way.
 */
#undef alloy_alloc_default
#undef alloy_alloc
#undef alloy_data_ptr_free

int alloy_alloc_default(int device_type, size_t size, unsigned flags,
			struct alloy_data_ptr *out)
{
	if (unlikely(!out || (unsigned)device_type >= ALLOY_DEVICE_TYPE_COUNT ||
		     size_unusual(size)))
		return alloc_default_slow(device_type, size, flags, out);
	return alloy__alloc_default_inline(device_type, size, flags, out);
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
	/* 0 passes: it asks for the configured alignment. */
	if (unlikely(align & (align - 1))) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(-EINVAL, __func__,
				    "alignment %zu is not a power of two",
				    align);
	}
	if (unlikely(align > ALLOY_ALIGN_MAX)) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(-EINVAL, __func__,
				    "alignment %zu is larger than %zu", align,
				    ALLOY_ALIGN_MAX);
	}
	align = effective_align(align);
	if (unlikely(size_unusual(size)))
		return size_refused(__func__, a->ops.device_type, size, align,
				    out);
	t = alloy__tls_get();
	if (unlikely(!t)) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(-ENOMEM, __func__,
				    "no memory for this thread's accounting");
	}
	if (unlikely(!alloy__count_on_live(t, a, size, false))) {
		*out = ALLOY_DATA_PTR_INIT;
		return alloy__error(-ENODEV, __func__,
				    "allocator \"%s\" is being unregistered",
				    a->name);
	}
	describe(out, a, a->ops.device_type, size, align);
	rc = alloc_call(a, &t->error_mark, flags, out);
	if (!rc && unlikely(alloy__hooks_now()))
		report_alloc(a, out);
	return rc;
}

void alloy_data_ptr_free(struct alloy_data_ptr *dp)
{
	alloy__data_ptr_free_inline(dp);
}
