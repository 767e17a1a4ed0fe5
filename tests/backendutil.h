/* SPDX-License-Identifier: MIT */
/*
 * tests/backendutil.h - the check both backend modules' suites make of
 * every block: the alignment asked for, zeroed when asked, usable for its
 * size, and made by the backend itself (owned(), from the backend's API).
 */
#ifndef ALLOY_TESTS_BACKENDUTIL_H
#define ALLOY_TESTS_BACKENDUTIL_H

#include <stdint.h>

#include "testutil.h"

static inline void backend_check_blocks(struct alloy_allocator *a,
					bool (*owned)(void *p, size_t size))
{
	for (size_t align = 8; align <= 65536; align *= 4) {
		for (size_t size = 1; size < (1 << 20); size = size * 3 + 1) {
			struct alloy_data_ptr dp;

			ck_assert_ok(alloy_alloc(a, size, align,
						 ALLOY_ALLOC_ZERO, &dp));
			ck_assert_uint_eq((uintptr_t)dp.ptr % align, 0);
			ck_assert_msg(owned(dp.ptr, size),
				      "%zu bytes at %p are not the backend's",
				      size, dp.ptr);
			ck_assert_uint_ge(
				alloy_allocator_usable_size(a, dp.ptr, size),
				size);
			for (size_t i = 0; i < size; i += 997)
				ck_assert_int_eq(((char *)dp.ptr)[i], 0);
			alloy_data_ptr_free(&dp);
		}
	}
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
}

#endif /* ALLOY_TESTS_BACKENDUTIL_H */
