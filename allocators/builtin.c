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
		/* the wrappers need their inner, "default", registered first */
		alloy__register_fail_allocator,
		alloy__register_debug_allocator,
		/* their inners are resolved by the root, after ALLOY_PLUGINS */
		/* the CUDA policies on the simulated device (no GPU needed) */
		alloy__register_cuda_sim_allocators,
	};

	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++) {
		int rc = builtins[i]();

		if (rc)
			return rc;
	}
	return 0;
}
