// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_default.c - the "default" CPU allocator: alignment of every
 * block, small (carved from glibc) and large (mapped, cached), zero_fill,
 * junk_fill and ALLOY_ALLOC_ZERO on reused memory, usable size, the large
 * blocks' cache and its limit, and that glibc's heap never sees a large
 * block.  That it calls glibc only by its own names is
 * tests/unit/default_libc.c.
 */
#include <malloc.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

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

/* Around the carve/map boundary (size + align = 128 KiB) and beyond. */
START_TEST(large_blocks_are_aligned)
{
	static const size_t sizes[] = { 131072 - 4096, 131072 - 65, 131072 - 64,
					131072 - 63,   131072 - 9,  131072 - 8,
					131072,	       131073,	    1000000,
					(4 << 20) + 1 };
	struct alloy_allocator *d = alloy_find_allocator("default");

	for (size_t align = 8; align <= 65536; align *= 2) {
		for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
			struct alloy_data_ptr dp;

			ck_assert_ok(alloy_alloc(d, sizes[i], align, 0, &dp));
			ck_assert_msg((uintptr_t)dp.ptr % align == 0,
				      "size %zu align %zu got %p", sizes[i],
				      align, dp.ptr);
			ck_assert_uint_ge(alloy_allocator_usable_size(d, dp.ptr,
								      sizes[i]),
					  sizes[i]);
			memset(dp.ptr, 1, sizes[i]);
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

	for (size_t size = 8; size <= (8 << 20); size *= 2) {
		ck_assert_ok(alloy_alloc(d, size, 0, 0, &dp));
		memset(dp.ptr, 0xff, size);
		alloy_data_ptr_free(&dp);
		ck_assert_ok(alloy_alloc(d, size, 0, ALLOY_ALLOC_ZERO, &dp));
		ck_assert(all_bytes(dp.ptr, size, 0));
		alloy_data_ptr_free(&dp);
	}
}
END_TEST

/*
 * A reused large block is cleared where it held data, and a grown one
 * (a smaller cached mapping extended) is zero in its new part too.
 */
START_TEST(zero_flag_on_reused_and_grown_mappings)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	static const size_t sizes[] = { 1 << 20, 900000, 1 << 20,
					1600000, 300000, 3 << 20 };
	struct alloy_data_ptr dp;

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		ck_assert_ok(alloy_alloc(d, sizes[i], 64, 0, &dp));
		memset(dp.ptr, 0xff, sizes[i]);
		alloy_data_ptr_free(&dp);
		ck_assert_ok(alloy_alloc(d, sizes[(i + 1) % ARRAY_SIZE(sizes)],
					 64, ALLOY_ALLOC_ZERO, &dp));
		ck_assert_msg(all_bytes(dp.ptr, dp.size, 0),
			      "%zu bytes after %zu are not zero", dp.size,
			      sizes[i]);
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
	for (size_t size = 1; size <= (4 << 20); size *= 2) {
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
	/* glibc's slack past the block, never more than the carve took. */
	ck_assert_uint_le(alloy_allocator_usable_size(d, dp.ptr, 1000),
			  1000 + 64 + 32);
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_alloc(d, 1000000, 0, 0, &dp));
	ck_assert_uint_ge(alloy_allocator_usable_size(d, dp.ptr, 1000000),
			  1000000);
	ck_assert_uint_le(alloy_allocator_usable_size(d, dp.ptr, 1000000),
			  1000000 + 4096);
	alloy_data_ptr_free(&dp);
	ck_assert_int_ge(alloy_allocator_trim(d), 0);
}
END_TEST

/* A freed large block's mapping is kept and handed out again. */
START_TEST(large_blocks_are_cached)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	struct alloy_data_ptr dp;
	void *first;

	ck_assert_int_ge(alloy_allocator_trim(d), 0);
	ck_assert_ok(alloy_alloc(d, 1 << 20, 64, 0, &dp));
	first = dp.ptr;
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_allocator_stats(d, &st));
	ck_assert_uint_ge(st.reserved, (1 << 20) + st.allocated);
	for (int i = 0; i < 100; i++) {
		ck_assert_ok(alloy_alloc(d, 1 << 20, 64, 0, &dp));
		ck_assert_ptr_eq(dp.ptr, first);
		alloy_data_ptr_free(&dp);
	}
	/* trim gives the cached mapping back, and says how much. */
	ck_assert_int_ge(alloy_allocator_trim(d), 1 << 20);
	ck_assert_int_eq(alloy_allocator_trim(d), 0);
	ck_assert_ok(alloy_allocator_stats(d, &st));
	ck_assert_uint_eq(st.reserved, st.allocated);
}
END_TEST

/* default.cache bounds what is kept; 0 keeps nothing. */
START_TEST(cache_limit_applies)
{
	struct alloy_allocator *d;
	struct alloy_data_ptr dp[4];

	test_set_conf("default.cache:3M");
	ck_assert_int_eq(alloy_init(), 0);
	d = alloy_find_allocator("default");
	for (int i = 0; i < 4; i++)
		ck_assert_ok(alloy_alloc(d, 1 << 20, 64, 0, &dp[i]));
	for (int i = 0; i < 4; i++)
		alloy_data_ptr_free(&dp[i]);
	/* Three mappings of 1 MiB and a page fit in 3 MiB: two do. */
	ck_assert_int_eq(alloy_allocator_trim(d), 2 * ((1 << 20) + 4096));
	ck_assert_ok(alloy_allocator_ops(d)->set_option(alloy_allocator_ctx(d),
							"cache", "0"));
	ck_assert_ok(alloy_alloc(d, 1 << 20, 64, 0, &dp[0]));
	alloy_data_ptr_free(&dp[0]);
	ck_assert_int_eq(alloy_allocator_trim(d), 0);
}
END_TEST

START_TEST(bad_options_are_reported)
{
	test_set_conf("default.cache:lots,default.colour:red");
	ck_assert_int_eq(alloy_init(), 2);
	ck_assert_str_eq(
		alloy_allocator_name(alloy_get_default(ALLOY_DEVICE_CPU)),
		"default");
}
END_TEST

/*
 * Large blocks never come from glibc's heap: neither its mapped chunks
 * nor its brk arena grow by them, so glibc's dynamic thresholds, which
 * its frees of mapped chunks move, stay where the program left them.
 */
START_TEST(large_blocks_leave_glibc_alone)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	struct alloy_data_ptr dp[16];
	struct mallinfo2 before, during;

	before = mallinfo2();
	for (int i = 0; i < 16; i++)
		ck_assert_ok(alloy_alloc(d, 800000 + 50000 * (size_t)i, 64, 0,
					 &dp[i]));
	during = mallinfo2();
	for (int i = 0; i < 16; i++)
		alloy_data_ptr_free(&dp[i]);
	ck_assert_uint_eq(during.hblks, before.hblks);
	ck_assert_uint_eq(during.hblkhd, before.hblkhd);
	ck_assert_uint_lt(during.arena, before.arena + (1 << 20));
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

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(i * 7 + seed);
}

static bool filled(const unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != (unsigned char)(i * 7 + seed))
			return false;
	return true;
}

/*
 * The realloc op through every kind of change: small blocks within
 * glibc (at its alignment and carved at larger ones), small to large,
 * large grown by mremap (align up to a page) or moved (above), large
 * shrunk, large to small.  The bytes, the alignment and the usable size
 * hold at each step; other blocks in between make glibc move some.
 */
START_TEST(realloc_op_keeps_bytes_and_alignment)
{
	static const size_t aligns[] = { 16, 64, 256, 4096, 8192 };
	static const size_t sizes[] = { 10,	1000,	 60000,	  10,
					200000, 3000000, 3100000, 150000,
					100,	129000,	 5 };
	struct alloy_allocator *d = alloy_find_allocator("default");
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(d);
	void *ctx = alloy_allocator_ctx(d);

	ck_assert_ptr_nonnull(ops->realloc);
	for (size_t a = 0; a < ARRAY_SIZE(aligns); a++) {
		size_t align = aligns[a], old = sizes[0];
		unsigned char *p = ops->alloc(ctx, old, align, 0);
		void *others[ARRAY_SIZE(sizes)];

		ck_assert_ptr_nonnull(p);
		fill(p, old, (unsigned)a);
		for (size_t i = 1; i < ARRAY_SIZE(sizes); i++) {
			size_t n = sizes[i], keep = old < n ? old : n;

			others[i] = ops->alloc(ctx, 48, 16, 0);
			p = ops->realloc(ctx, p, old, n, align);
			ck_assert_msg(p, "align %zu: %zu -> %zu refused", align,
				      old, n);
			ck_assert_msg((uintptr_t)p % align == 0,
				      "align %zu: %zu -> %zu at %p", align, old,
				      n, (void *)p);
			ck_assert_msg(filled(p, keep, (unsigned)a),
				      "align %zu: %zu -> %zu lost bytes", align,
				      old, n);
			ck_assert_uint_ge(ops->usable_size(ctx, p, n), n);
			fill(p, n, (unsigned)a);
			old = n;
		}
		ops->free(ctx, p, old, align);
		for (size_t i = 1; i < ARRAY_SIZE(sizes); i++)
			ops->free(ctx, others[i], 48, 16);
	}
}
END_TEST

/*
 * A freed mapping comes back whole to a smaller block while it is within
 * the slack (8 times the block), so a buffer that grows again round after
 * round grows in its pages, not by new ones; beyond the slack the tail is
 * given back, on taking and on shrinking alike.
 */
START_TEST(large_mapping_slack_serves_regrowth)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(d);
	void *ctx = alloy_allocator_ctx(d);
	const size_t round = 800 << 10, first = 140 << 10;
	unsigned char *p, *q;

	ck_assert_int_ge(alloy_allocator_trim(d), 0);
	p = ops->alloc(ctx, round, 16, 0);
	ck_assert_ptr_nonnull(p);
	ops->free(ctx, p, round, 16);

	q = ops->alloc(ctx, first, 16, 0);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_ge(ops->usable_size(ctx, q, first), round);
	fill(q, first, 5);
	for (size_t n = first; n <= round; n += n / 8) {
		unsigned char *r = ops->realloc(ctx, q, first, n, 16);

		ck_assert_msg(r == q, "%zu bytes moved within the mapping", n);
	}
	ck_assert(filled(q, first, 5));
	ops->free(ctx, q, round, 16);

	/* Beyond the slack: a 16 MiB mapping keeps 1 MiB for 140 KiB. */
	ck_assert_int_ge(alloy_allocator_trim(d), 0);
	p = ops->alloc(ctx, 16 << 20, 16, 0);
	ck_assert_ptr_nonnull(p);
	ops->free(ctx, p, 16 << 20, 16);
	q = ops->alloc(ctx, first, 16, 0);
	ck_assert_ptr_eq(q, p);
	ck_assert_uint_lt(ops->usable_size(ctx, q, first), first + 4096);

	/* Shrinking: within the slack the mapping stays, beyond it not. */
	q = ops->realloc(ctx, q, first, 4 << 20, 16);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_ge(ops->usable_size(ctx, q, 4 << 20), 4 << 20);
	fill(q, 4 << 20, 6);
	q = ops->realloc(ctx, q, 4 << 20, 1 << 20, 16);
	ck_assert_uint_ge(ops->usable_size(ctx, q, 1 << 20), 4 << 20);
	q = ops->realloc(ctx, q, 1 << 20, first, 16);
	ck_assert_uint_lt(ops->usable_size(ctx, q, first), first + 4096);
	ck_assert(filled(q, first, 6));
	ops->free(ctx, q, first, 16);
	ck_assert_int_ge(alloy_allocator_trim(d), 0);
}
END_TEST

/* A growing buffer through alloy_realloc stays one counted block. */
START_TEST(plain_realloc_grows_in_place_and_counts)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	long long before = alloy_allocator_live_bytes(d);
	unsigned char *p = NULL;
	size_t n = 0;

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, d));
	for (size_t next = 1; next <= (4u << 20); next = next * 3 / 2 + 1) {
		p = alloy_realloc(p, next);
		ck_assert_ptr_nonnull(p);
		ck_assert_msg(filled(p, n, 3), "%zu -> %zu lost bytes", n,
			      next);
		fill(p, next, 3);
		n = next;
		ck_assert_int_eq(alloy_allocator_live_bytes(d) - before,
				 (long long)n);
		ck_assert_uint_ge(alloy_usable_size(p), n);
	}
	alloy_free(p);
	ck_assert_int_eq(alloy_allocator_live_bytes(d), before);
}
END_TEST

Suite *suite_default(void)
{
	Suite *s = suite_create("default");
	TCase *tc = tcase_create("default");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_block_is_aligned);
	tcase_add_test(tc, large_blocks_are_aligned);
	tcase_add_test(tc, default_alignment_is_64);
	tcase_add_test(tc, configured_alignment_applies);
	tcase_add_test(tc, zero_fill_zeroes);
	tcase_add_test(tc, zero_flag_zeroes_without_conf);
	tcase_add_test(tc, zero_flag_on_reused_and_grown_mappings);
	tcase_add_test(tc, junk_fill_junks);
	tcase_add_test(tc, large_blocks_are_cached);
	tcase_add_test(tc, cache_limit_applies);
	tcase_add_test(tc, large_mapping_slack_serves_regrowth);
	tcase_add_test(tc, bad_options_are_reported);
	tcase_add_test(tc, large_blocks_leave_glibc_alone);
	tcase_add_test(tc, usable_size_at_least_requested);
	tcase_add_test(tc, realloc_keeps_contents);
	tcase_add_test(tc, realloc_op_keeps_bytes_and_alignment);
	tcase_add_test(tc, plain_realloc_grows_in_place_and_counts);
	suite_add_tcase(s, tc);
	return s;
}
