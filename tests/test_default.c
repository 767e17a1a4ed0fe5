// SPDX-License-Identifier: MIT
/*
 * tests/test_default.c - the "default" CPU allocator: alignment of every
 * block, zero_fill, junk_fill, usable size.
 */
#include <stdint.h>
#include <string.h>

#include "testutil.h"

START_TEST(every_block_is_aligned)
{
	struct alloy_allocator *d = alloy_find_allocator("default");

	for (size_t align = 8; align <= 4096; align *= 2) {
		for (size_t size = 1; size <= 4096; size++) {
			struct alloy_data_ptr dp;

			ck_assert_ok(alloy_alloc(d, size, align, 0, &dp));
			ck_assert_msg(((uintptr_t)dp.ptr & (align - 1)) == 0,
				      "size %zu align %zu got %p", size, align,
				      dp.ptr);
			ck_assert_uint_eq(dp.align, align);
			/* The whole block is writable. */
			((char *)dp.ptr)[size - 1] = 1;
			alloy_data_ptr_free(&dp);
		}
	}
	ck_assert_int_eq(alloy_allocator_live_blocks(d), 0);
}
END_TEST

START_TEST(default_alignment_is_64)
{
	struct alloy_data_ptr dp;

	ck_assert_uint_eq(alloy_conf_align(), 64);
	for (int i = 0; i < 100; i++) {
		ck_assert_ok(alloy_context_new(ALLOY_CPU, (size_t)i + 1, &dp));
		ck_assert_uint_eq((uintptr_t)dp.ptr % 64, 0);
		alloy_data_ptr_free(&dp);
	}
}
END_TEST

START_TEST(configured_alignment_applies)
{
	struct alloy_data_ptr dp;

	test_set_conf("align:4096");
	for (int i = 0; i < 20; i++) {
		ck_assert_ok(alloy_context_new(ALLOY_CPU, 100, &dp));
		ck_assert_uint_eq((uintptr_t)dp.ptr % 4096, 0);
		alloy_data_ptr_free(&dp);
	}
}
END_TEST

/* Dirty the heap with a pattern, so that reused blocks would show it. */
static void dirty_heap(size_t size)
{
	for (int i = 0; i < 8; i++) {
		char *p = malloc(size);

		memset(p, 0xee, size);
		free(p);
	}
}

static bool all_bytes(const void *p, size_t n, unsigned char v)
{
	for (size_t i = 0; i < n; i++)
		if (((const unsigned char *)p)[i] != v)
			return false;
	return true;
}

START_TEST(zero_fill_zeroes)
{
	struct alloy_data_ptr dp;

	test_set_conf("zero_fill:1");
	alloy_init();
	for (size_t size = 8; size <= 65536; size *= 2) {
		dirty_heap(size);
		ck_assert_ok(alloy_context_new(ALLOY_CPU, size, &dp));
		ck_assert_msg(all_bytes(dp.ptr, size, 0), "size %zu not zero",
			      size);
		memset(dp.ptr, 0xff, size);
		alloy_data_ptr_free(&dp);
		ck_assert_ok(alloy_context_new(ALLOY_CPU, size, &dp));
		ck_assert_msg(all_bytes(dp.ptr, size, 0), "reused %zu not zero",
			      size);
		alloy_data_ptr_free(&dp);
	}
}
END_TEST

START_TEST(zero_flag_zeroes_without_conf)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	struct alloy_data_ptr dp;

	for (size_t size = 8; size <= 65536; size *= 2) {
		ck_assert_ok(alloy_alloc(d, size, 0, 0, &dp));
		memset(dp.ptr, 0xff, size);
		alloy_data_ptr_free(&dp);
		ck_assert_ok(alloy_alloc(d, size, 0, ALLOY_ALLOC_ZERO, &dp));
		ck_assert(all_bytes(dp.ptr, size, 0));
		alloy_data_ptr_free(&dp);
	}
}
END_TEST

START_TEST(junk_fill_junks)
{
	struct alloy_data_ptr dp;

	test_set_conf("junk_fill:1");
	alloy_init();
	ck_assert(alloy_conf_junk_fill());
	for (size_t size = 1; size <= 65536; size *= 2) {
		ck_assert_ok(alloy_context_new(ALLOY_CPU, size, &dp));
		ck_assert_msg(all_bytes(dp.ptr, size, ALLOY_JUNK_ALLOC),
			      "size %zu not junk", size);
		alloy_data_ptr_free(&dp);
	}
}
END_TEST

START_TEST(usable_size_at_least_requested)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(d, 1000, 0, 0, &dp));
	ck_assert_uint_ge(alloy_allocator_usable_size(d, dp.ptr, 1000), 1000);
	alloy_data_ptr_free(&dp);
	ck_assert_int_ge(alloy_allocator_trim(d), 0);
}
END_TEST

START_TEST(realloc_keeps_contents)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(d, 100, 256, 0, &dp));
	for (int i = 0; i < 100; i++)
		((char *)dp.ptr)[i] = (char)i;
	ck_assert_ok(alloy_data_ptr_realloc(&dp, 100000));
	ck_assert_uint_eq((uintptr_t)dp.ptr % 256, 0);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(((char *)dp.ptr)[i], (char)i);
	ck_assert_int_eq(alloy_allocator_live_bytes(d), 100000);
	ck_assert_int_eq(alloy_data_ptr_realloc(&dp, SIZE_MAX), -EOVERFLOW);
	ck_assert_uint_eq(dp.size, 100000);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(alloy_allocator_live_bytes(d), 0);
}
END_TEST

Suite *suite_default(void)
{
	Suite *s = suite_create("default");
	TCase *tc = tcase_create("default");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_block_is_aligned);
	tcase_add_test(tc, default_alignment_is_64);
	tcase_add_test(tc, configured_alignment_applies);
	tcase_add_test(tc, zero_fill_zeroes);
	tcase_add_test(tc, zero_flag_zeroes_without_conf);
	tcase_add_test(tc, junk_fill_junks);
	tcase_add_test(tc, usable_size_at_least_requested);
	tcase_add_test(tc, realloc_keeps_contents);
	suite_add_tcase(s, tc);
	return s;
}
