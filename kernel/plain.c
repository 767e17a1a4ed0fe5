// SPDX-License-Identifier: MIT
/*
 * kernel/plain.c - the plain-pointer API: alloy_malloc, alloy_free(ptr) and
 * the rest of the malloc family on a device's default allocator.
 *
 * A caller that keeps only a pointer cannot hand back the allocator, size
 * and alignment that a sized free needs, so each block carries them in a
 * 16-byte header just before the pointer (docs/ARCHITECTURE.md, "The
 * plain-pointer API", says why a header and not a table):
 *
 *   allocator's block: [ ... padding ... | header | user bytes ... ]
 *                      ^ base             ^ user - 16  ^ user = base + off
 *
 * off is the alignment of the block (16 at least), so the user pointer
 * has that alignment and the header fits just before it.  The check word
 * ties the header to its address: a pointer alloy did not make, a block
 * freed already (its check is cleared at free) or a header overwritten by
 * a buffer underrun fails it, and nothing is handed to an allocator.
 *
 * Accounting and the reporter see the size the caller asked for.  The
 * allocation takes the same path as alloy_alloc_default: pick the default
 * and count the block in a window, then call the allocator.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <alloy/plain.h>

#include "base.h"
#include "count.h"
#include "hooks.h"
#include "registry.h"
#include "conf.h"

#define HDR_MAGIC 0xa110c8edu

struct plain_hdr {
	uint64_t size;	/* bytes asked for */
	uint32_t check; /* see hdr_check(); 0 once freed */
	uint32_t tag;	/* hdr_tag(): allocator's slot, shift, flags */
};

_Static_assert(sizeof(struct plain_hdr) == ALLOY_PLAIN_ALIGN,
	       "the header fills the 16 bytes before the user pointer");
_Static_assert(ALLOY_MAX_ALLOCATORS <= 65536 &&
		       (ALLOY_MAX_ALLOCATORS & (ALLOY_MAX_ALLOCATORS - 1)) == 0,
	       "the index fits 16 bits and masks into the table");

enum { PLAIN_REPORTED = 1 };

#define MIN_SHIFT 4 /* 16 */
/* The largest size: 2^62 bytes, as for DataPtrs, header and all. */
#define PLAIN_SIZE_MAX (((size_t)1 << 62) - ALLOY_ALIGN_MAX)

static _Atomic unsigned long long bad_frees;

static inline struct plain_hdr *hdr_of(const void *user)
{
	return (struct plain_hdr *)user - 1;
}

/*
 * The fields but size and check, packed in one word: the allocator's
 * slot in the table, the shift (off = 1 << shift: user - base, the
 * alignment) and the flags.  One word, so that the check reads it with
 * one load and needs no unpacking.
 */
static inline uint32_t hdr_tag(unsigned index, unsigned shift, unsigned flags)
{
	return index | shift << 16 | flags << 24;
}

/*
 * The fields of a tag, masked into range: a header that passes the check
 * is alloy's, and the masks keep even one forged to pass it from
 * indexing outside the table or shifting past a word - the range tests
 * the check word makes redundant, in two instructions.
 */
static inline unsigned tag_index(uint32_t tag)
{
	return tag & (ALLOY_MAX_ALLOCATORS - 1);
}

static inline unsigned tag_shift(uint32_t tag)
{
	return (tag >> 16) & 63;
}

static inline unsigned tag_flags(uint32_t tag)
{
	return tag >> 24;
}

/* The check word of a header at user with that tag. */
static inline uint32_t hdr_check(const void *user, uint32_t tag)
{
	uint64_t a = (uint64_t)(uintptr_t)user >> MIN_SHIFT;

	return HDR_MAGIC ^ (uint32_t)a ^ (uint32_t)(a >> 32) ^ tag;
}

/*
 * The header as it is in memory.  Reading the header of a block freed
 * already is how a second free is refused, so the sanitizers are told
 * this one read is deliberate; everything else reads a live header.
 */
static inline __attribute__((no_sanitize_address,
			     no_sanitize_thread)) struct plain_hdr
load_hdr(const void *user)
{
	const volatile uint64_t *w = (const volatile uint64_t *)hdr_of(user);
	uint64_t words[2] = { w[0], w[1] }; /* loads, never a memcpy call */
	struct plain_hdr h;

	memcpy(&h, words, sizeof(h));
	return h;
}

/* The allocator of a plain block whose header reads h, or NULL. */
static inline struct alloy_allocator *owner_in(const void *user,
					       const struct plain_hdr *h)
{
	if (unlikely(h->check != hdr_check(user, h->tag)))
		return NULL;
	return &alloy__allocators[tag_index(h->tag)];
}

/* The allocator of a live plain block, or NULL. */
static inline struct alloy_allocator *owner_of(const void *user)
{
	struct plain_hdr h = load_hdr(user);

	return owner_in(user, &h);
}

static void *fail(int err, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void *fail(int err, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	alloy__verror(-err, func, fmt, ap);
	va_end(ap);
	errno = err;
	return NULL;
}

/* Write the header of a block of a at base and return the user pointer. */
static inline void *finish(struct alloy_allocator *a, void *base, size_t size,
			   unsigned shift, unsigned flags)
{
	void *user = (char *)base + ((size_t)1 << shift);
	struct plain_hdr *h = hdr_of(user);

	uint32_t tag = hdr_tag(a->index, shift, flags);
	struct plain_hdr v = {
		.size = size,
		.check = hdr_check(user, tag),
		.tag = tag,
	};

	/*
	 * One copy of the whole header, not a store per field: the free
	 * reads it back as two words, and a load that spans two separate
	 * smaller stores still in flight cannot be forwarded from them (the
	 * CPU waits for them to reach the cache, which costs far more than
	 * the few instructions saved).
	 */
	memcpy(h, &v, sizeof(v));
	return user;
}

/*
 * The reporter is on: tell it, inside a section (as kernel/alloc.c does).
 *
 * A zero-byte block (malloc(0); only this API makes them, the DataPtr
 * API refuses size 0 before) is neither recorded nor traced: it holds
 * no bytes, and a trace's SIZE starts at 1.  It is still marked
 * reported, so that a realloc of it is, and its free is skipped by its
 * size too (report_free), so that it is not taken for the free of a
 * block made while off.
 */
static void report_alloc(struct alloy_allocator *a, int device_type, void *user,
			 size_t size, size_t align)
{
	struct alloy__tls *t = alloy__section_enter();
	const struct alloy__hooks *h;
	struct alloy_data_ptr dp = {
		.ptr = user,
		.ctx = a,
		.device = { .type = (int16_t)device_type },
		.size = size,
		.align = align,
	};

	h = alloy__hooks_now();
	if (h) {
		if (size)
			h->on_alloc(a, &dp);
		/* The flag is part of the check word: write both. */
		hdr_of(user)->tag |= (uint32_t)PLAIN_REPORTED << 24;
		hdr_of(user)->check = hdr_check(user, hdr_of(user)->tag);
	}
	alloy__section_leave(t);
}

static void *plain_slow(int device_type, size_t size, size_t align,
			unsigned flags, const char *func);

/*
 * Allocate from a, on which size bytes are already counted: the
 * allocator's block is size + off bytes aligned to off.  The thread's
 * error mark was cleared since (alloy__pick_default clears it).
 */
static inline __attribute__((always_inline)) void *
alloc_from(struct alloy_allocator *a, int device_type, size_t size,
	   unsigned shift, unsigned flags, const char *func)
{
	size_t off = (size_t)1 << shift;
	bool explained;
	void *base;

	base = a->ops.alloc(a->ctx, size + off, off, flags);
	if (likely(base)) {
		void *user = finish(a, base, size, shift, 0);

		if (unlikely(alloy__hooks_now()))
			report_alloc(a, device_type, user, size, off);
		return user;
	}
	if (unlikely(a == &alloy__no_default)) /* see plain_alloc */
		return plain_slow(device_type, size, off, flags, func);
	explained = *alloy__error_mark_of() != 0;
	alloy__uncount_alloc(a, size);
	return fail(
		ENOMEM, func,
		"allocator \"%s\" could not allocate %zu bytes (alignment %zu)%s%s",
		a->name, size, off, explained ? ": " : "",
		explained ? alloy_last_error() : "");
}

/* The log2 of an alignment already checked to be a power of two. */
static inline unsigned shift_of(size_t align)
{
	return align <= ALLOY_PLAIN_ALIGN ? MIN_SHIFT
					  : (unsigned)__builtin_ctzl(align);
}

static bool host_device(int device_type)
{
	return device_type == ALLOY_DEVICE_CPU ||
	       device_type == ALLOY_DEVICE_CUDA_HOST;
}

/*
 * Everything but the common case: bad arguments, a thread without a
 * record, the reporter on, no membarrier, no default.
 */
static __attribute__((noinline)) void *plain_slow(int device_type, size_t size,
						  size_t align, unsigned flags,
						  const char *func)
{
	struct alloy_allocator *a;

	if (!host_device(device_type))
		return fail(
			EINVAL, func,
			"device type %d: plain blocks live in host memory (cpu or cuda_host)",
			device_type);
	if (align && (align & (align - 1)))
		return fail(EINVAL, func, "alignment %zu is not a power of two",
			    align);
	if (align > ALLOY_ALIGN_MAX)
		return fail(EINVAL, func, "alignment %zu is larger than %zu",
			    align, ALLOY_ALIGN_MAX);
	if (size > PLAIN_SIZE_MAX)
		return fail(
			ENOMEM, func,
			"size %zu exceeds the largest block alloy makes (%zu bytes)",
			size, PLAIN_SIZE_MAX);
	alloy__ensure_init();
	a = alloy__pick_default_any(device_type, size);
	if (!a)
		return fail(
			ENODEV, func,
			"no default allocator for %s (is its module loaded?)",
			alloy_device_type_name(device_type));
	return alloc_from(a, device_type, size, shift_of(align), flags, func);
}

/*
 * The callers checked device_type and align.  The reporter being on is
 * no reason to leave this path: alloc_from tells it of the block (only
 * a missing membarrier is, see alloy__window_open_fast).
 */
static inline __attribute__((always_inline)) void *
plain_alloc(int device_type, size_t size, size_t align, unsigned flags,
	    const char *func)
{
	struct alloy__tls *t = alloy__tls_fast;
	struct alloy_allocator *a;

	if (unlikely(size > PLAIN_SIZE_MAX ||
		     (atomic_load_explicit(&t->slow, memory_order_relaxed) &
		      ~(unsigned)ALLOY__SLOW_HOOKS)))
		return plain_slow(device_type, size, align, flags, func);
	/*
	 * No default: alloy__no_default fails in alloc_from, which goes slow.
	 */
	a = alloy__pick_default(t, device_type, size, true);
	return alloc_from(a, device_type, size, shift_of(align), flags, func);
}

void *alloy_malloc(size_t size)
{
	return plain_alloc(ALLOY_DEVICE_CPU, size, 0, 0, __func__);
}

void *alloy_calloc(size_t nmemb, size_t size)
{
	size_t n;

	if (unlikely(__builtin_mul_overflow(nmemb, size, &n)))
		return fail(ENOMEM, __func__,
			    "%zu x %zu bytes overflows the size type", nmemb,
			    size);
	return plain_alloc(ALLOY_DEVICE_CPU, n, 0, ALLOY_ALLOC_ZERO, __func__);
}

void *alloy_aligned_alloc(size_t alignment, size_t size)
{
	if (unlikely(!alignment || (alignment & (alignment - 1)) ||
		     alignment > ALLOY_ALIGN_MAX))
		return fail(EINVAL, __func__,
			    "alignment %zu is not a power of two up to %zu",
			    alignment, ALLOY_ALIGN_MAX);
	return plain_alloc(ALLOY_DEVICE_CPU, size, alignment, 0, __func__);
}

int alloy_posix_memalign(void **out, size_t alignment, size_t size)
{
	int saved = errno;
	void *p;

	if (!out || !alignment || (alignment & (alignment - 1)) ||
	    alignment % sizeof(void *)) {
		alloy__error(
			-EINVAL, __func__,
			"alignment %zu is not a power of two multiple of %zu%s",
			alignment, sizeof(void *),
			out ? "" : " (or out is NULL)");
		return EINVAL;
	}
	/* A valid alignment alloy cannot give is a lack of memory. */
	if (alignment > ALLOY_ALIGN_MAX) {
		alloy__error(-ENOMEM, __func__,
			     "alignment %zu is larger than alloy gives (%zu)",
			     alignment, ALLOY_ALIGN_MAX);
		return ENOMEM;
	}
	p = plain_alloc(ALLOY_DEVICE_CPU, size, alignment, 0, __func__);
	if (!p) {
		int err = errno;

		errno = saved; /* posix_memalign reports, it does not set */
		return err;
	}
	*out = p;
	return 0;
}

void *alloy_malloc_on(int device_type, size_t size, size_t alignment,
		      unsigned flags)
{
	return plain_slow(device_type, size, alignment, flags, __func__);
}

/*
 * Not a live plain block, given to func: say so once, count it, touch
 * nothing.
 */
static __attribute__((noinline, cold)) void bad_free(const void *ptr,
						     const char *func)
{
	if (atomic_fetch_add(&bad_frees, 1) == 0)
		fprintf(stderr,
			"alloy: %s(%p): not a block of alloy's plain-pointer API, or freed already; ignored (later ones are counted, not shown)\n",
			func, ptr);
	alloy__error(-EINVAL, func,
		     "%p is not a live block of the plain-pointer API", ptr);
}

static void report_free(struct alloy_allocator *a, void *user, size_t size,
			unsigned shift)
{
	const struct alloy__hooks *hooks = alloy__hooks_now();
	struct alloy_data_ptr dp = {
		.ptr = user,
		.ctx = a,
		.device = { .type = (int16_t)a->ops.device_type },
		.size = size,
		.align = (size_t)1 << shift,
	};

	/* Zero bytes were never recorded: see report_alloc. */
	if (hooks && size)
		hooks->on_free(a, &dp);
}

/* Mark the block at user freed and give it back to a. */
static inline __attribute__((always_inline)) void
release(struct alloy_allocator *a, void *user, size_t size, unsigned shift)
{
	size_t off = (size_t)1 << shift;

	hdr_of(user)->check = 0; /* a second free of this block fails */
	alloy__free_and_count(a, (char *)user - off, size + off, off, size);
}

/* The reporter saw this block made: it sees it go, then it goes. */
static __attribute__((noinline)) void
release_reported(struct alloy_allocator *a, void *user, size_t size,
		 unsigned shift)
{
	report_free(a, user, size, shift);
	release(a, user, size, shift);
}

void alloy_free(void *ptr)
{
	struct plain_hdr h;
	struct alloy_allocator *a;

	if (!ptr)
		return;
	h = load_hdr(ptr);
	a = owner_in(ptr, &h);
	if (unlikely(!a)) {
		bad_free(ptr, __func__);
		return;
	}
	if (unlikely(tag_flags(h.tag) & PLAIN_REPORTED))
		release_reported(a, ptr, h.size, tag_shift(h.tag));
	else
		release(a, ptr, h.size, tag_shift(h.tag));
}

/*
 * The size asked for, not the backend's rounded-up block: programs grow
 * buffers into all the bytes this says, and a realloc keeps exactly
 * these, so the two must agree.
 */
size_t alloy_usable_size(const void *ptr)
{
	struct plain_hdr h;

	if (!ptr)
		return 0;
	h = load_hdr(ptr);
	return owner_in(ptr, &h) ? h.size : 0;
}

/*
 * Grow or shrink in place with the allocator's own realloc, when it has
 * one and the block has no extra alignment (its header moves with the
 * bytes).  NULL when it could not; the old block is then untouched.
 */
static void *realloc_in_place(struct alloy_allocator *a, void *ptr,
			      struct plain_hdr *h, size_t size)
{
	size_t old = h->size, off = (size_t)1 << tag_shift(h->tag);
	bool reported = tag_flags(h->tag) & PLAIN_REPORTED;
	void *base, *user;

	if (!a->ops.realloc || off != ALLOY_PLAIN_ALIGN)
		return NULL;
	if (reported)
		report_free(a, ptr, h->size, tag_shift(h->tag));
	/*
	 * Where the op moves the block, the old header stays behind in
	 * freed memory: void it first, so that a stale free of ptr fails.
	 */
	h->check = 0;
	base = a->ops.realloc(a->ctx, (char *)ptr - off, old + off, size + off,
			      off);
	if (!base) {
		/* The old block is still there, not reported. */
		h->tag &= ~((uint32_t)PLAIN_REPORTED << 24);
		h->check = hdr_check(ptr, h->tag);
		if (reported)
			report_alloc(a, a->ops.device_type, ptr, old, off);
		return NULL;
	}
	user = finish(a, base, size, MIN_SHIFT, 0);
	alloy__tcount_add(alloy__tls_get(), a->counters + ALLOY__C_BYTES,
			  (int64_t)size - (int64_t)old);
	if (reported)
		report_alloc(a, a->ops.device_type, user, size, off);
	return user;
}

void *alloy_realloc(void *ptr, size_t size)
{
	struct alloy__tls *t;
	struct alloy_allocator *a;
	struct plain_hdr *h;
	size_t old, align;
	void *n;

	if (!ptr)
		return alloy_malloc(size);
	h = hdr_of(ptr);
	a = owner_of(ptr);
	if (!a) {
		bad_free(ptr, __func__);
		errno = EINVAL;
		return NULL;
	}
	if (size == 0) {
		alloy_free(ptr);
		return NULL;
	}
	if (size > PLAIN_SIZE_MAX)
		return fail(
			ENOMEM, __func__,
			"size %zu exceeds the largest block alloy makes (%zu bytes)",
			size, PLAIN_SIZE_MAX);
	n = realloc_in_place(a, ptr, h, size);
	if (n)
		return n;
	/*
	 * Move: a new block of the same allocator and alignment, the bytes,
	 * then the old block goes.  The same allocator, so that the block
	 * keeps to its maker as a DataPtr's does; the default of the moment
	 * when the maker is on its way out.
	 */
	old = h->size;
	align = (size_t)1 << tag_shift(h->tag);
	/*
	 * Counted first, then the maker's state looked at, as alloy_alloc
	 * does (kernel/alloc.c): an unregister either sees this block or this
	 * sees the maker dying.  A refusal of the maker is the answer; only
	 * a dying maker (or a thread without a record) sends the block to
	 * the default.
	 */
	t = alloy__tls_get();
	if (t && alloy__count_on_live(t, a, size, false))
		n = alloc_from(a, a->ops.device_type, size, tag_shift(h->tag),
			       0, __func__);
	else
		n = plain_slow(a->ops.device_type, size, align, 0, __func__);
	if (!n)
		return NULL;
	memcpy(n, ptr, old < size ? old : size);
	alloy_free(ptr);
	return n;
}

void *alloy_reallocarray(void *ptr, size_t nmemb, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(nmemb, size, &n))
		return fail(ENOMEM, __func__,
			    "%zu x %zu bytes overflows the size type", nmemb,
			    size);
	return alloy_realloc(ptr, n);
}

bool alloy_plain_owns(const void *ptr)
{
	return ptr && owner_of(ptr);
}

struct alloy_allocator *alloy_plain_allocator(const void *ptr)
{
	return ptr ? owner_of(ptr) : NULL;
}

unsigned long long alloy_plain_bad_frees(void)
{
	return atomic_load(&bad_frees);
}
