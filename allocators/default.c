// SPDX-License-Identifier: MIT
/*
 * allocators/default.c - "default": aligned CPU memory from posix_memalign.
 *
 * c10's DefaultCPUAllocator in C: 64-byte alignment unless ALLOY_CONF says
 * otherwise, and the two fill options of c10's CPU allocator: zero_fill
 * (every block reads as zeroes) and junk_fill (new blocks are filled with
 * ALLOY_JUNK_ALLOC and freed ones with ALLOY_JUNK_FREE, so that code
 * reading memory it never wrote, or after freeing it, sees garbage).
 */
#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"
#include "core/conf.h"
#include "allocators/builtin.h"

static void *default_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	void *p;

	(void)ctx;
	if (posix_memalign(&p, align, size) != 0)
		return NULL;
	if ((flags & ALLOY_ALLOC_ZERO) || alloy__conf.zero_fill)
		memset(p, 0, size);
	else if (alloy__conf.junk_fill)
		memset(p, ALLOY_JUNK_ALLOC, size);
	return p;
}

static void default_free(void *ctx, void *ptr, size_t size, size_t align)
{
	(void)ctx;
	(void)align;
	if (alloy__conf.junk_fill)
		memset(ptr, ALLOY_JUNK_FREE, size);
	free(ptr);
}

static size_t default_usable_size(void *ctx, const void *ptr, size_t size)
{
	(void)ctx;
	(void)size;
	return malloc_usable_size((void *)ptr);
}

static long long default_trim(void *ctx)
{
	(void)ctx;
	/* glibc says whether it released anything, not how much. */
	malloc_trim(0);
	return 0;
}

static const struct alloy_allocator_ops default_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "default",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = default_alloc,
	.free = default_free,
	.usable_size = default_usable_size,
	.trim = default_trim,
};

int alloy__register_default_allocator(void)
{
	return alloy_register_allocator(&default_ops, NULL, "builtin", NULL);
}
