// SPDX-License-Identifier: MIT
/*
 * allocators/builtin.c - register every allocator compiled into liballoy.
 *
 * Optional backends (jemalloc, mimalloc, cuda) are modules, loaded by name
 * on demand; only those that need nothing outside libc live here.
 */
#include "allocators/builtin.h"

int alloy__register_builtin_allocators(void)
{
	static int (*const builtins[])(void) = {
		alloy__register_default_allocator,
	};

	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++) {
		int rc = builtins[i]();

		if (rc)
			return rc;
	}
	return 0;
}
