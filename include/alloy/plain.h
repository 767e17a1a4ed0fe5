/* SPDX-License-Identifier: MIT */
/*
 * alloy/plain.h - the plain-pointer API: malloc-style calls on a
 * device's default allocator, for code that keeps bare pointers (the
 * LD_PRELOAD front, NumPy's allocator handler, C libraries).
 *
 * A block remembers which allocator made it, so alloy_free(ptr) needs
 * nothing else and a block returns to its maker however often the default
 * changes.  The DataPtr API (alloy/allocator.h) is unchanged and stays
 * the faster of the two.
 *
 * Each block carries a 16-byte header just before the pointer the caller
 * gets: the size asked for, the allocator, the distance to the start of
 * the allocator's block, and a check word derived from the address.  So
 * a block costs 16 bytes more than asked (alignment more, above 16), and
 * a pointer that alloy did not make, or already freed, fails the check
 * instead of being handed to an allocator.
 *
 * Limits: sizes up to 2^62 bytes; alignments are powers of two up to
 * ALLOY_ALIGN_MAX (2^40); blocks are 16-byte aligned at least (like
 * glibc's malloc on x86-64).  Failures return NULL (or an error code for
 * alloy_posix_memalign), set errno (ENOMEM, EINVAL, ENODEV) and leave a
 * message in alloy_last_error().
 */
#ifndef ALLOY_PLAIN_H
#define ALLOY_PLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <alloy/allocator.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The alignment of every plain block, at least. */
#define ALLOY_PLAIN_ALIGN 16

/*
 * size bytes from the CPU default.  size 0 gives a unique pointer that
 * must be freed (as glibc does).
 */
void *alloy_malloc(size_t size);

/* nmemb * size zeroed bytes; NULL with ENOMEM when the product overflows. */
void *alloy_calloc(size_t nmemb, size_t size);

/*
 * Resize ptr's block, keeping its contents up to the smaller size.  The
 * block stays with the allocator that made it (grown in place where that
 * allocator can).  NULL ptr: alloy_malloc.  size 0: ptr is freed and NULL
 * returned, errno untouched (glibc's behaviour).  On failure NULL is
 * returned and ptr is left as it was.
 */
void *alloy_realloc(void *ptr, size_t size);

/* realloc to nmemb * size, with ENOMEM when the product overflows. */
void *alloy_reallocarray(void *ptr, size_t nmemb, size_t size);

/*
 * Give the block back to the allocator that made it.  NULL does nothing.
 * A pointer alloy did not make, or a block freed already, is not freed:
 * the first is reported on stderr and alloy_plain_bad_frees() counts all
 * of them.  Nothing of alloy's is touched; the memory, if any, is leaked.
 */
void alloy_free(void *ptr);

/*
 * Bytes usable at ptr: exactly what was asked (what a realloc keeps),
 * whatever the allocator rounded the block up to; 0 for NULL.
 */
size_t alloy_usable_size(const void *ptr);

/*
 * size bytes aligned to alignment, a power of two up to ALLOY_ALIGN_MAX;
 * NULL with EINVAL otherwise.
 */
void *alloy_aligned_alloc(size_t alignment, size_t size);

/*
 * posix_memalign's contract: 0 and *out, or EINVAL (alignment not a power
 * of two multiple of sizeof(void *)) or ENOMEM (also for an alignment
 * over ALLOY_ALIGN_MAX), *out untouched.
 */
int alloy_posix_memalign(void **out, size_t alignment, size_t size);

/*
 * The general form: size bytes of device_type's default, aligned to
 * alignment (0: ALLOY_PLAIN_ALIGN), with ALLOY_ALLOC_* flags.  The
 * pointer is for alloy_free like the others; only CPU and pinned host
 * blocks can carry the header, so device_type must be ALLOY_DEVICE_CPU or
 * ALLOY_DEVICE_CUDA_HOST (EINVAL otherwise).
 */
void *alloy_malloc_on(int device_type, size_t size, size_t alignment,
		      unsigned flags);

/* Whether ptr is a live block of the plain-pointer API (header checked). */
bool alloy_plain_owns(const void *ptr);

/* The allocator that made ptr, or NULL when ptr is not a live plain block. */
struct alloy_allocator *alloy_plain_allocator(const void *ptr);

/* How many frees of pointers alloy did not make (or freed twice) it saw. */
unsigned long long alloy_plain_bad_frees(void);

/*
 * Bytes of alloy's own memory (per-thread records, tables), which comes
 * from mmap and never from malloc: mapped from the kernel, and handed out
 * now.  Either pointer may be NULL.  For tests and tools: a record given
 * back at a thread's exit shows as in_use going down.
 */
void alloy_own_memory(size_t *mapped, size_t *in_use);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_PLAIN_H */
