/* SPDX-License-Identifier: MIT */
/*
 * tests/plugins/common.h - pieces the test plugins share: a trivial CPU
 * allocator (posix_memalign/free) and the ops/descriptor they start from.
 * Each plugin then breaks exactly one thing.
 */
#ifndef ALLOY_TESTS_PLUGINS_COMMON_H
#define ALLOY_TESTS_PLUGINS_COMMON_H

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <alloy/plugin.h>

#define EXPORT __attribute__((visibility("default")))

static inline void *tp_alloc(void *ctx, size_t size, size_t align,
			     unsigned flags)
{
	void *p;

	(void)ctx;
	if (posix_memalign(&p, align, size))
		return NULL;
	if (flags & ALLOY_ALLOC_ZERO)
		memset(p, 0, size);
	return p;
}

static inline void tp_free(void *ctx, void *ptr, size_t size, size_t align)
{
	(void)ctx;
	(void)size;
	(void)align;
	free(ptr);
}

#define TP_OPS(nm)                                                          \
	{                                                                   \
		.abi_major = ALLOY_ABI_MAJOR, .abi_minor = ALLOY_ABI_MINOR, \
		.struct_size = sizeof(struct alloy_allocator_ops),          \
		.name = (nm), .device_type = ALLOY_DEVICE_CPU,              \
		.alloc = tp_alloc, .free = tp_free,                         \
	}

#define TP_DESCRIPTOR(list)                                                 \
	{                                                                   \
		.abi_major = ALLOY_ABI_MAJOR, .abi_minor = ALLOY_ABI_MINOR, \
		.struct_size = sizeof(struct alloy_plugin_descriptor),      \
		.name = "test", .description = "a test plugin",             \
		.allocators = (list),                                       \
		.nallocators = sizeof(list) / sizeof((list)[0]),            \
	}

#endif /* ALLOY_TESTS_PLUGINS_COMMON_H */
