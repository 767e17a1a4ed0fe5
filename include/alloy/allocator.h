/* SPDX-License-Identifier: MIT */
/*
 * alloy/allocator.h - the allocator interface.
 *
 * An allocator is a table of operations (struct alloy_allocator_ops) and a
 * context pointer handed back on every call.  The table starts with the ABI
 * version and the size of the struct its provider was compiled with, so that
 * members can be appended in later minor versions: the registry copies what
 * the provider has into a zeroed private copy and treats members beyond the
 * provider's struct_size as absent.
 *
 * Required: name, device_type, alloc, free.  Everything else may be NULL;
 * the registry then supplies a fallback (realloc = alloc + copy + free,
 * usable_size = the requested size, trim/stats = nothing to report).
 *
 * Memory is handed to users as a struct alloy_data_ptr, which carries the
 * deleter and context of the allocator that made the block.  Freeing a
 * DataPtr therefore always returns the block to its maker, whatever the
 * registry's defaults have become in the meantime.
 */
#ifndef ALLOY_ALLOCATOR_H
#define ALLOY_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>
#include <alloy/device.h>
#include <alloy/inline.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ALLOY_ABI_MAJOR 1
/*
 * Minor versions: 1 appended memset_bytes to struct alloy_context_ops;
 * 2 appended malloc_family to struct alloy_allocator_ops.
 * Members are only ever appended within a major (docs/PLUGINS.md).
 */
#define ALLOY_ABI_MINOR 2

/*
 * The largest struct_size accepted in an ABI header (allocator ops, plugin
 * descriptor).  Newer minors append members, but no version will come
 * near 4 KiB: a larger value is a corrupt or uninitialised struct, and is
 * refused rather than trusted.
 */
#define ALLOY_ABI_STRUCT_SIZE_MAX 4096

/* Longest allocator name, without the terminating NUL. */
#define ALLOY_NAME_MAX 47

/* Flags for alloc(). */
#define ALLOY_ALLOC_ZERO (1u << 0) /* the block must read as zeroes */

/*
 * Statistics an allocator may report about itself.  The header (size,
 * version) lets callers and providers of different versions agree: a
 * provider fills at most `size` bytes.  Unknown values stay 0.
 */
struct alloy_allocator_stats {
	uint32_t size;	    /* sizeof the caller's struct */
	uint32_t version;   /* ALLOY_STATS_VERSION of the caller */
	uint64_t allocated; /* bytes handed out and not yet freed */
	uint64_t reserved;  /* bytes held from the system (>= allocated) */
	uint64_t active;    /* bytes in pages with live blocks */
	uint64_t resident;  /* bytes physically resident */
	uint64_t mapped;    /* bytes mapped */
	uint64_t peak_allocated;
	uint64_t peak_reserved;
	uint64_t num_allocs; /* alloc calls served */
	uint64_t num_frees;
	uint64_t num_system_allocs; /* calls into the memory source */
	uint64_t num_system_frees;
	uint64_t num_ooms;
};
#define ALLOY_STATS_VERSION 1

/*
 * A struct alloy_allocator_stats with its header filled, ready to pass:
 * struct alloy_allocator_stats st = ALLOY_ALLOCATOR_STATS_INIT;
 */
#define ALLOY_ALLOCATOR_STATS_INIT                            \
	((struct alloy_allocator_stats){                      \
		.size = sizeof(struct alloy_allocator_stats), \
		.version = ALLOY_STATS_VERSION })

/*
 * A backend's own C malloc family: functions with the C library's
 * contracts (malloc(0) a unique block, calloc zeroed, realloc keeping the
 * bytes, free taking any block of the family).  An allocator whose blocks
 * are exactly such a library's names it in its ops (malloc_family), and
 * liballoy_preload's front then calls these functions for a program's
 * malloc with no header and no wrapper of alloy's in between
 * (docs/PRELOAD.md, "How a free finds its allocator").  memalign takes a
 * power of two of at least 16.  system is 1 for the C library's own
 * malloc: its memory is whatever no other family mapped.  Every function
 * must live in one loaded object (the front learns the family's memory
 * from the mappings that object makes) and must not call the process's
 * malloc.
 */
struct alloy_malloc_family {
	void *(*malloc)(size_t size);
	void *(*calloc)(size_t nmemb, size_t size);
	void *(*realloc)(void *ptr, size_t size);
	void *(*memalign)(size_t align, size_t size);
	void (*free)(void *ptr);
	size_t (*usable_size)(void *ptr);
	int system;
};

struct alloy_allocator_ops {
	/* ABI header: always first, never reordered. */
	uint16_t abi_major;   /* ALLOY_ABI_MAJOR the provider was built for */
	uint16_t abi_minor;   /* ALLOY_ABI_MINOR the provider was built for */
	uint32_t struct_size; /* sizeof(struct alloy_allocator_ops) there */

	const char *name; /* unique, [A-Za-z0-9_], at most ALLOY_NAME_MAX */
	int device_type;  /* enum alloy_device_type it serves */

	/*
	 * Required.  0 < size <= 2^62; align is a power of two,
	 * sizeof(void *) .. ALLOY_ALIGN_MAX, so size + align never passes
	 * PTRDIFF_MAX.  With ALLOY_ALLOC_ZERO in
	 * flags the block must read as zeroes: alloy does not clear it.
	 * Every op may be called from any thread at any time, concurrently:
	 * they must be thread-safe (docs/PLUGINS.md).  NULL on failure,
	 * saying why with alloy_plugin_error().
	 */
	void *(*alloc)(void *ctx, size_t size, size_t align, unsigned flags);
	/* Required.  size and align are those given to alloc. */
	void (*free)(void *ctx, void *ptr, size_t size, size_t align);

	/*
	 * Optional: called once at registration; non-zero refuses it.  It
	 * runs outside the registry's lock and may call alloy's API (find
	 * or allocate from another allocator, for one); the allocator
	 * itself is not findable until it returns 0.
	 */
	int (*init)(void *ctx);
	/* Optional: called once when unregistered, outside the lock too. */
	void (*fini)(void *ctx);
	/* Optional: resize keeping the first min(old, new) bytes. */
	void *(*realloc)(void *ctx, void *ptr, size_t old_size, size_t new_size,
			 size_t align);
	/* Optional: bytes usable at ptr (>= the size asked for). */
	size_t (*usable_size)(void *ctx, const void *ptr, size_t size);
	/* Optional: give cached memory back; returns bytes released or < 0. */
	long long (*trim)(void *ctx);
	/* Optional: fill *st (see struct alloy_allocator_stats). */
	int (*stats)(void *ctx, struct alloy_allocator_stats *st);
	/*
	 * Optional: an allocator-specific ALLOY_CONF key, "name.key:value".
	 * Returns 0, or -EINVAL (unknown key) / -ERANGE (bad value) and
	 * sets the error message.
	 */
	int (*set_option)(void *ctx, const char *key, const char *value);

	/* Optional, device allocators: stream-ordered variants. */
	void *(*alloc_async)(void *ctx, size_t size, size_t align,
			     unsigned flags, void *stream);
	void (*free_async)(void *ctx, void *ptr, size_t size, size_t align,
			   void *stream);
	/*
	 * Optional: ptr is also used on stream; delay its reuse until the
	 * work queued there before it is freed is over.  0 when noted;
	 * -ENOENT when ptr is in no block of this allocator (nothing to
	 * protect: the caller goes on); -EINVAL when its block was freed
	 * (a use after free); any other error (-ENOMEM) when the note
	 * could not be made.  On every error but -ENOENT nothing protects
	 * the block, so a caller that has already queued the work must
	 * synchronize stream (contexts/cuda.c record_pinned relies on
	 * this).  An allocator that keeps only its live blocks may answer
	 * -EINVAL for any pointer it does not know.
	 */
	int (*record_stream)(void *ctx, void *ptr, void *stream);
	/* Optional: write a JSON description of the allocator's state. */
	int (*snapshot_json)(void *ctx, void (*write)(void *arg, const char *s),
			     void *arg);
	/*
	 * Optional (minor 2): the backend's malloc family, for the front of
	 * alloy run (struct alloy_malloc_family).  Only the first allocator
	 * registered with a given family serves the front through it; the
	 * others go through alloc and free.
	 */
	const struct alloy_malloc_family *malloc_family;
};

/*
 * The size of the ops struct as of ABI 1.0 and 1.1 (minor 0 and 1
 * providers have this): everything before malloc_family.
 */
#define ALLOY_ALLOCATOR_OPS_SIZE_1_0 \
	offsetof(struct alloy_allocator_ops, malloc_family)

/* Opaque handle to a registered allocator. */
struct alloy_allocator;

struct alloy_data_ptr;
typedef void (*alloy_deleter_fn)(struct alloy_data_ptr *dp);

/*
 * A block of memory and how to give it back (c10's DataPtr).  Bound when
 * the block is made; copy it by value only to move ownership.
 */
struct alloy_data_ptr {
	void *ptr;
	void *ctx;		  /* the deleter's context */
	alloy_deleter_fn deleter; /* NULL: nothing to free */
	struct alloy_device device;
	size_t size;  /* bytes asked for */
	size_t align; /* alignment asked for */
};

/* An empty DataPtr (ptr NULL, no deleter). */
#define ALLOY_DATA_PTR_INIT ((struct alloy_data_ptr){ 0 })

/* The largest alignment alloy_alloc takes: 2^40 (1 TiB). */
#define ALLOY_ALIGN_MAX ((size_t)1 << 40)

/*
 * Allocate size bytes aligned to align (0 = the configured default) from
 * allocator a.  On success fills *out and returns 0; otherwise *out is
 * empty and the return is -EINVAL (NULL out or allocator, an alignment
 * that is not a power of two or above ALLOY_ALIGN_MAX), -EOVERFLOW (size
 * above 2^62 bytes), -ENODEV (a is being unregistered) or -ENOMEM (the
 * allocator refused; its own reason is kept in the message).  size 0 is
 * valid and yields an empty DataPtr that frees to nothing.
 */
int alloy_alloc(struct alloy_allocator *a, size_t size, size_t align,
		unsigned flags, struct alloy_data_ptr *out);

/*
 * The fast entries below are called from the inline wrappers in the
 * caller's code: through its GOT, not a PLT stub, where the compiler can
 * (one jump fewer a call from position-independent code; the symbol is
 * then bound when the program loads, not at its first call).
 */
#if defined(__has_attribute)
#if __has_attribute(noplt)
#define ALLOY__NOPLT __attribute__((noplt))
#endif
#endif
#ifndef ALLOY__NOPLT
#define ALLOY__NOPLT
#endif

/*
 * The fast path of alloy_alloc for arguments known good (size 1 .. 2^62,
 * align 0 or a power of two up to ALLOY_ALIGN_MAX): not for direct use.
 * As alloy__alloc_default_fast (registry.h): fills *out but ptr and
 * returns the allocator's block straight from its alloc op, or NULL; then
 * alloy__alloc_settle finishes the call - the whole of alloy_alloc when
 * the fast path could not start (out->ctx NULL: a thread without a record
 * yet, the reporter on, a is being unregistered), the failure when the
 * allocator refused.  The parameters are in the order the alloc op takes.
 */
ALLOY__NOPLT void *alloy__alloc_fast(struct alloy_allocator *a, size_t size,
				     size_t align, unsigned flags,
				     struct alloy_data_ptr *out);
/*
 * alloy__alloc_fast for an alignment already raised by
 * alloy__align_raised (a power of two, at least a pointer's): the inline
 * wrapper's entry where align is a constant, raised at compile time.
 */
ALLOY__NOPLT void *alloy__alloc_fast_raised(struct alloy_allocator *a,
					    size_t size, size_t align,
					    unsigned flags,
					    struct alloy_data_ptr *out);
int alloy__alloc_settle(struct alloy_allocator *a, size_t size, size_t align,
			unsigned flags, struct alloy_data_ptr *out);

/*
 * The alignment a request for align (a power of two) gets: at least a
 * pointer's.  0, "the configured one", wraps around to 0 again.
 */
static inline size_t alloy__align_raised(size_t align)
{
	return ((align - 1) | (sizeof(void *) - 1)) + 1;
}

/*
 * alloy_alloc is wrapped inline, as alloy_alloc_default is: the arguments
 * are checked in the caller, where constant ones cost nothing.
 * (alloy_alloc)(...) calls the function itself.
 */
static inline int alloy__alloc_inline(struct alloy_allocator *a, size_t size,
				      size_t align, unsigned flags,
				      struct alloy_data_ptr *out)
{
	if (__builtin_expect(
		    out != NULL && a != NULL && size - 1 < ((size_t)1 << 62) &&
			    !(align & (align - 1)) && align <= ALLOY_ALIGN_MAX,
		    1)) {
		void *p =
			__builtin_constant_p(align) && align
				? alloy__alloc_fast_raised(
					  a, size, alloy__align_raised(align),
					  flags, out)
				: alloy__alloc_fast(a, size, align, flags, out);

		if (__builtin_expect(p != NULL, 1)) {
			out->ptr = p;
			return 0;
		}
		return alloy__alloc_settle(a, size, align, flags, out);
	}
	return (alloy_alloc)(a, size, align, flags, out);
}
#define alloy_alloc(a, size, align, flags, out) \
	alloy__alloc_inline(a, size, align, flags, out)

/*
 * Give the block back to whoever made it and empty *dp: afterwards its
 * ptr and deleter are NULL (so a second free of the same DataPtr does
 * nothing); the other members keep their values.  NULL-safe.
 *
 * The call is inline: a block of alloy's registry (its deleter
 * alloy__allocator_deleter, the reporter off when it was made) goes
 * straight to its allocator's free op from the caller's code, counted as
 * that deleter counts it (alloy/inline.h says why); any other deleter is
 * called directly.  alloy_data_ptr_free is also a real function (for
 * taking its address, and for the ABI); (alloy_data_ptr_free)(dp) calls
 * it.
 */
void alloy_data_ptr_free(struct alloy_data_ptr *dp);

/*
 * The start of every registered allocator (alloy/inline.h): what the
 * inline free reads.  The ops last, as their struct may grow.
 */
struct alloy__allocator_head {
	void *ctx;	       /* the provider's context, for every op */
	ptrdiff_t acct_offset; /* its counters in a thread's record */
	struct alloy_allocator_ops ops;
};

/*
 * The deleter of the registry's blocks made while the reporter was off.
 * Where a caller's code cannot inline the free (a program built without
 * position-independent code sees another address for this function, and
 * takes the call), it does the same.
 */
void alloy__allocator_deleter(struct alloy_data_ptr *dp);

/*
 * Give a block of bytes counted bytes back to allocator a, from a thread
 * with a record t, and count it in t: the bytes before the free op, the
 * block after.  Only the block count (allocs - frees) gates an
 * unregister, which must not see the block gone while the allocator's
 * code still runs; counting the bytes first leaves one pointer, not
 * three values, to keep across the call.  The plain-pointer API's free
 * counts its blocks so too (kernel/plain.c).
 */
static inline void alloy__free_counted(const struct alloy__allocator_head *a,
				       struct alloy__tls *t, void *block,
				       size_t size, size_t align,
				       size_t counted)
{
	int64_t *c = (int64_t *)((char *)t + a->acct_offset);

	alloy__counter_sub(&c[ALLOY__C_BYTES], (int64_t)counted);
	a->ops.free(a->ctx, block, size, align);
	alloy__counter_add(&c[ALLOY__C_FREES], 1);
}

static inline void alloy__data_ptr_free_inline(struct alloy_data_ptr *dp)
{
	if (dp) {
		struct alloy__tls *t = alloy__tls_self;

		if (__builtin_expect(dp->deleter == alloy__allocator_deleter &&
					     t != NULL,
				     1))
			alloy__free_counted(
				(const struct alloy__allocator_head *)dp->ctx,
				t, dp->ptr, dp->size, dp->align, dp->size);
		else if (dp->deleter)
			dp->deleter(dp);
		dp->ptr = NULL;
		dp->deleter = NULL;
	}
}
#define alloy_data_ptr_free(dp) alloy__data_ptr_free_inline(dp)

/*
 * Resize a block made by alloy_alloc, keeping its contents, through the
 * allocator that made it.  On failure *dp is unchanged.
 */
int alloy_data_ptr_realloc(struct alloy_data_ptr *dp, size_t new_size);

/* Wrap memory alloy does not own; deleter (may be NULL) frees it. */
struct alloy_data_ptr alloy_data_ptr_wrap(void *ptr, size_t size,
					  struct alloy_device device,
					  alloy_deleter_fn deleter, void *ctx);

/* The allocator that made dp, or NULL if it was wrapped memory. */
struct alloy_allocator *
alloy_data_ptr_allocator(const struct alloy_data_ptr *dp);

/* Whether name is a valid allocator name: 1..ALLOY_NAME_MAX of [A-Za-z0-9_]. */
int alloy_allocator_name_valid(const char *name);

/* Accessors for a registered allocator. */
const char *alloy_allocator_name(const struct alloy_allocator *a);
int alloy_allocator_device_type(const struct alloy_allocator *a);
/* "builtin", or the path of the module that provided it. */
const char *alloy_allocator_origin(const struct alloy_allocator *a);
/* Blocks made by a and not yet freed. */
long long alloy_allocator_live_blocks(const struct alloy_allocator *a);
/* Bytes made by a and not yet freed. */
long long alloy_allocator_live_bytes(const struct alloy_allocator *a);
/* The provider's ops (the registry's private copy) and context. */
const struct alloy_allocator_ops *
alloy_allocator_ops(const struct alloy_allocator *a);
void *alloy_allocator_ctx(const struct alloy_allocator *a);

/* Optional operations, with the registry's fallbacks. */
size_t alloy_allocator_usable_size(struct alloy_allocator *a, const void *ptr,
				   size_t size);
long long alloy_allocator_trim(struct alloy_allocator *a);
int alloy_allocator_stats(struct alloy_allocator *a,
			  struct alloy_allocator_stats *st);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_ALLOCATOR_H */
