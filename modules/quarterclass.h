/* SPDX-License-Identifier: MIT */
/*
 * modules/quarterclass.h - size classes four to a doubling, as
 * jemalloc's and mimalloc's are above their smallest sizes: the classes
 * over 2^k bytes are 1.25, 1.5, 1.75 and 2 times 2^k.
 *
 * The backend modules' caches of free blocks keep one list per such
 * class, from a first doubling 2^lg_min up, and make each block at its
 * class's full size, so that any block of a list serves any request of
 * the class whatever the backend's own classes are.
 */
#ifndef ALLOY_ALLOCATORS_QUARTERCLASS_H
#define ALLOY_ALLOCATORS_QUARTERCLASS_H

#include <stddef.h>

/* The class of size, counted from the first above 2^lg_min (size > it). */
static inline size_t qclass_of(size_t size, unsigned lg_min)
{
	unsigned lg = 63 - (unsigned)__builtin_clzl(size - 1);

	return ((size_t)(lg - lg_min) << 2) +
	       ((size - 1 - ((size_t)1 << lg)) >> (lg - 2));
}

/* The bytes of class c: the largest request it serves. */
static inline size_t qclass_bytes(size_t c, unsigned lg_min)
{
	unsigned lg = lg_min + (unsigned)(c >> 2);

	return ((size_t)1 << lg) + (((c & 3) + 1) << (lg - 2));
}

#endif /* ALLOY_ALLOCATORS_QUARTERCLASS_H */
