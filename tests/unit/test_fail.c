// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_fail.c - the "fail" wrapper: which allocations fail under
 * each plan, from ALLOY_CONF and from alloy_fail_configure(), how it
 * counts, its options and its inner.
 */
#include <stdint.h>
#include <string.h>

#include "testutil.h"

/* Allocate n blocks from a, one at a time; bit i of the result: i failed. */
static uint64_t failure_pattern(struct alloy_allocator *a, int n)
{
	uint64_t bits = 0;

	for (int i = 0; i < n; i++) {
		struct alloy_data_ptr dp;
		int rc = alloy_alloc(a, 32, 0, 0, &dp);

		if (rc) {
			ck_assert_int_eq(rc, -ENOMEM);
			ck_assert_ptr_null(dp.ptr);
			ck_assert_msg(strstr(alloy_last_error(), "\"fail\""),
				      "message: %s", alloy_last_error());
			bits |= 1ull << i;
		}
		alloy_data_ptr_free(&dp);
	}
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	return bits;
}

START_TEST(nth_from_conf)
{
	struct alloy_allocator *f;

	test_set_conf("cpu:fail,fail.nth:3");
	ck_assert_int_eq(alloy_init(), 0);
	f = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_str_eq(alloy_allocator_name(f), "fail");
	ck_assert_uint_eq(failure_pattern(f, 8), 1u << 2);
	ck_assert_uint_eq(alloy_fail_count(), 8);
	ck_assert_uint_eq(alloy_fail_injected(), 1);
}
END_TEST

START_TEST(message_says_which_and_why)
{
	struct alloy_allocator *f = alloy_find_allocator("fail");
	struct alloy_fail_config plan = { .nth = 2 };
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(alloy_alloc(f, 8, 0, 0, &dp));
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(alloy_alloc(f, 24, 0, 0, &dp), -ENOMEM);
	ck_assert_msg(
		strstr(alloy_last_error(), "could not allocate 24 bytes") &&
			strstr(alloy_last_error(),
			       "allocation 2 failed as planned (nth 2, run 1)"),
		"message: %s", alloy_last_error());
	plan = (struct alloy_fail_config){ .probability = 1.0 };
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_int_eq(alloy_alloc(f, 24, 0, 0, &dp), -ENOMEM);
	ck_assert_msg(
		strstr(alloy_last_error(), "allocation 1 failed at random"),
		"message: %s", alloy_last_error());
}
END_TEST

START_TEST(run_from_conf)
{
	test_set_conf("fail.nth:2,fail.run:3");
	ck_assert_int_eq(alloy_init(), 0);
	ck_assert_uint_eq(failure_pattern(alloy_find_allocator("fail"), 8),
			  0x2 | 0x4 | 0x8);
}
END_TEST

START_TEST(unlimited_run)
{
	test_set_conf("fail.nth:5,fail.run:unlimited");
	ck_assert_int_eq(alloy_init(), 0);
	ck_assert_uint_eq(failure_pattern(alloy_find_allocator("fail"), 40),
			  ((1ull << 40) - 1) & ~0xfull);
}
END_TEST

START_TEST(nothing_fails_without_a_plan)
{
	ck_assert_uint_eq(failure_pattern(alloy_find_allocator("fail"), 64), 0);
	ck_assert_uint_eq(alloy_fail_count(), 64);
	ck_assert_uint_eq(alloy_fail_injected(), 0);
}
END_TEST

START_TEST(configure_restarts_the_count)
{
	struct alloy_allocator *f = alloy_find_allocator("fail");
	struct alloy_fail_config c = { .nth = 4 };

	failure_pattern(f, 10);
	ck_assert_ok(alloy_fail_configure(&c));
	ck_assert_uint_eq(alloy_fail_count(), 0);
	ck_assert_uint_eq(failure_pattern(f, 10), 1u << 3);
	c = (struct alloy_fail_config){ .nth = 1, .run = 2 };
	ck_assert_ok(alloy_fail_configure(&c));
	ck_assert_uint_eq(failure_pattern(f, 10), 0x3);
	ck_assert_uint_eq(alloy_fail_injected(), 2);
}
END_TEST

START_TEST(bad_probability_keeps_the_plan)
{
	struct alloy_allocator *f = alloy_find_allocator("fail");
	struct alloy_fail_config good = { .nth = 2 };
	struct alloy_fail_config bad = { .probability = 1.5 };

	ck_assert_ok(alloy_fail_configure(&good));
	ck_assert_int_eq(alloy_fail_configure(&bad), -EINVAL);
	ck_assert_msg(strstr(alloy_last_error(), "alloy_fail_configure") &&
			      strstr(alloy_last_error(), "1.5"),
		      "message: %s", alloy_last_error());
	bad.probability = -0.1;
	ck_assert_int_eq(alloy_fail_configure(&bad), -EINVAL);
	ck_assert_int_eq(alloy_fail_configure(NULL), -EINVAL);
	ck_assert_uint_eq(failure_pattern(f, 4), 0x2);
}
END_TEST

START_TEST(probability_is_seeded_and_roughly_right)
{
	struct alloy_allocator *f = alloy_find_allocator("fail");
	struct alloy_fail_config c = { .probability = 0.25, .seed = 42 };
	uint64_t a, b, other;

	ck_assert_ok(alloy_fail_configure(&c));
	a = failure_pattern(f, 64);
	ck_assert_ok(alloy_fail_configure(&c));
	b = failure_pattern(f, 64);
	c.seed = 43;
	ck_assert_ok(alloy_fail_configure(&c));
	other = failure_pattern(f, 64);
	ck_assert_uint_eq(a, b);
	ck_assert_uint_ne(a, other);

	/* Deterministic for a seed, so the bounds cannot flake. */
	c.seed = 7;
	ck_assert_ok(alloy_fail_configure(&c));
	for (int i = 0; i < 4000; i++)
		failure_pattern(f, 1);
	ck_assert_uint_gt(alloy_fail_injected(), 850);
	ck_assert_uint_lt(alloy_fail_injected(), 1150);

	c = (struct alloy_fail_config){ .probability = 1.0 };
	ck_assert_ok(alloy_fail_configure(&c));
	ck_assert_uint_eq(failure_pattern(f, 64), UINT64_MAX);
	c.probability = 0.0;
	ck_assert_ok(alloy_fail_configure(&c));
	ck_assert_uint_eq(failure_pattern(f, 64), 0);
}
END_TEST

START_TEST(probability_from_conf)
{
	test_set_conf("fail.probability:0.5,fail.seed:1");
	ck_assert_int_eq(alloy_init(), 0);
	uint64_t bits = failure_pattern(alloy_find_allocator("fail"), 64);

	ck_assert_uint_gt(__builtin_popcountll(bits), 16);
	ck_assert_uint_lt(__builtin_popcountll(bits), 48);
}
END_TEST

START_TEST(bad_options_are_reported_and_ignored)
{
	test_set_conf(
		"fail.nth:abc,fail.probability:2,fail.probability:x,"
		"fail.colour:red,fail.inner:nosuch,fail.run:99999999999999999999999");
	ck_assert_int_eq(alloy_init(), 6);
	int nosuch = 0;

	for (int i = 0; i < 6; i++) {
		ck_assert_msg(strstr(alloy_conf_error(i), "fail."),
			      "error %d: %s", i, alloy_conf_error(i));
		nosuch += strstr(alloy_conf_error(i), "nosuch") != NULL;
	}
	ck_assert_int_eq(nosuch, 1);
	/* Still usable, with the defaults. */
	ck_assert_uint_eq(failure_pattern(alloy_find_allocator("fail"), 16), 0);
}
END_TEST

START_TEST(inner_gets_the_memory)
{
	struct test_alloc ta;
	struct alloy_allocator *t = test_alloc_register(&ta, "inner_t");
	struct alloy_allocator *f = alloy_find_allocator("fail");
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(f);
	void *ctx = alloy_allocator_ctx(f);
	struct alloy_data_ptr dp[3];

	ck_assert_ok(ops->set_option(ctx, "inner", "inner_t"));
	for (int i = 0; i < 3; i++)
		ck_assert_ok(alloy_alloc(f, 100, 0, 0, &dp[i]));
	ck_assert_int_eq(atomic_load(&ta.allocs), 3);
	/* Counted once, under the allocator the user asked for. */
	ck_assert_int_eq(alloy_allocator_live_blocks(f), 3);
	ck_assert_int_eq(alloy_allocator_live_blocks(t), 0);
	/* Its blocks must go back where they came from. */
	ck_assert_int_eq(ops->set_option(ctx, "inner", "default"), -EBUSY);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "still out"));
	for (int i = 0; i < 3; i++)
		alloy_data_ptr_free(&dp[i]);
	ck_assert_int_eq(atomic_load(&ta.frees), 3);
	ck_assert_int_eq(atomic_load(&ta.bad_frees), 0);
	/* Still the inner: unregistering it would pull it from under fail. */
	ck_assert_int_eq(alloy_unregister_allocator("inner_t"), -EBUSY);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "wrapper"));
	ck_assert_ok(ops->set_option(ctx, "inner", "default"));
	ck_assert_ok(alloy_unregister_allocator("inner_t"));
	/* An unregistered wrapper lets go of its inner. */
	t = test_alloc_register(&ta, "inner_t");
	ck_assert_ok(ops->set_option(ctx, "inner", "inner_t"));
	ck_assert_ok(alloy_unregister_allocator("fail"));
	ck_assert_ok(alloy_unregister_allocator("inner_t"));
}
END_TEST

START_TEST(inner_failure_is_passed_on)
{
	struct test_alloc ta;
	struct alloy_allocator *f = alloy_find_allocator("fail");
	struct alloy_data_ptr dp;

	test_alloc_register(&ta, "inner_t");
	ck_assert_ok(alloy_allocator_ops(f)->set_option(alloy_allocator_ctx(f),
							"inner", "inner_t"));
	atomic_store(&ta.fail_from, 1);
	ck_assert_int_eq(alloy_alloc(f, 100, 0, 0, &dp), -ENOMEM);
	ck_assert_uint_eq(alloy_fail_injected(), 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(f), 0);
}
END_TEST

START_TEST(wrapper_cycles_are_refused)
{
	struct alloy_allocator *f = alloy_find_allocator("fail");
	struct alloy_allocator *d = alloy_find_allocator("debug");

	ck_assert_int_eq(alloy_allocator_ops(f)->set_option(
				 alloy_allocator_ctx(f), "inner", "fail"),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "cycle"));
	ck_assert_ok(alloy_allocator_ops(f)->set_option(alloy_allocator_ctx(f),
							"inner", "debug"));
	ck_assert_int_eq(alloy_allocator_ops(d)->set_option(
				 alloy_allocator_ctx(d), "inner", "fail"),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "cycle"));
}
END_TEST

START_TEST(over_debug_from_conf)
{
	struct alloy_allocator *f;
	struct alloy_data_ptr dp;

	test_set_conf("cpu:fail,fail.inner:debug,fail.nth:2");
	ck_assert_int_eq(alloy_init(), 0);
	f = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CPU, 10, 0, &dp));
	/* debug filled it: the wrapper really is in between. */
	ck_assert_uint_eq(((unsigned char *)dp.ptr)[0], ALLOY_DEBUG_FILL_NEW);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(alloy_alloc_default(ALLOY_DEVICE_CPU, 10, 0, &dp),
			 -ENOMEM);
	ck_assert_int_eq(alloy_allocator_live_blocks(f), 0);
	ck_assert_uint_eq(alloy_debug_errors(-1), 0);
}
END_TEST

START_TEST(realloc_failure_leaves_the_block)
{
	struct alloy_allocator *f = alloy_find_allocator("fail");
	struct alloy_fail_config c = { .nth = 2 };
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_fail_configure(&c));
	ck_assert_ok(alloy_alloc(f, 16, 0, 0, &dp));
	memset(dp.ptr, 7, 16);
	ck_assert_int_eq(alloy_data_ptr_realloc(&dp, 4096), -ENOMEM);
	ck_assert_uint_eq(dp.size, 16);
	ck_assert_uint_eq(((unsigned char *)dp.ptr)[15], 7);
	ck_assert_ok(alloy_data_ptr_realloc(&dp, 4096));
	ck_assert_uint_eq(((unsigned char *)dp.ptr)[15], 7);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(alloy_allocator_live_blocks(f), 0);
}
END_TEST

Suite *suite_fail(void)
{
	Suite *s = suite_create("fail");
	TCase *tc = tcase_create("fail");

	tcase_add_test(tc, nth_from_conf);
	tcase_add_test(tc, message_says_which_and_why);
	tcase_add_test(tc, run_from_conf);
	tcase_add_test(tc, unlimited_run);
	tcase_add_test(tc, nothing_fails_without_a_plan);
	tcase_add_test(tc, configure_restarts_the_count);
	tcase_add_test(tc, bad_probability_keeps_the_plan);
	tcase_add_test(tc, probability_is_seeded_and_roughly_right);
	tcase_add_test(tc, probability_from_conf);
	tcase_add_test(tc, bad_options_are_reported_and_ignored);
	tcase_add_test(tc, inner_gets_the_memory);
	tcase_add_test(tc, inner_failure_is_passed_on);
	tcase_add_test(tc, wrapper_cycles_are_refused);
	tcase_add_test(tc, over_debug_from_conf);
	tcase_add_test(tc, realloc_failure_leaves_the_block);
	suite_add_tcase(s, tc);
	return s;
}
