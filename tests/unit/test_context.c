// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_context.c - the context table and the CPU context.
 */
#include <errno.h>
#include <string.h>

#include "testutil.h"

START_TEST(cpu_new_uses_current_default)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "t_ctx");
	struct alloy_data_ptr dp;

	ck_assert(alloy_has_context(ALLOY_DEVICE_CPU));
	ck_assert_ok(alloy_context_new(ALLOY_CPU, 32, &dp));
	ck_assert_str_eq(alloy_allocator_name(alloy_data_ptr_allocator(&dp)),
			 "default");
	ck_assert_int_eq(dp.device.type, ALLOY_DEVICE_CPU);
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	ck_assert_ok(alloy_context_new(ALLOY_CPU, 32, &dp));
	ck_assert_ptr_eq(alloy_data_ptr_allocator(&dp), a);
	ck_assert_uint_eq(ta.last_size, 32);
	ck_assert_uint_eq(ta.last_align, 64);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(ta.frees, 1);
}
END_TEST

START_TEST(copy_bytes_cpu)
{
	char src[256], dst[256];

	for (int i = 0; i < 256; i++)
		src[i] = (char)i;
	memset(dst, 0, sizeof(dst));
	ck_assert_ok(alloy_copy_bytes(256, src, ALLOY_CPU, dst, ALLOY_CPU));
	ck_assert_mem_eq(src, dst, 256);
	/* Overlapping moves within one buffer are allowed. */
	ck_assert_ok(
		alloy_copy_bytes(100, src, ALLOY_CPU, src + 10, ALLOY_CPU));
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(src[10 + i], (char)i);
	ck_assert_ok(alloy_copy_bytes(0, NULL, ALLOY_CPU, NULL, ALLOY_CPU));
	ck_assert_int_eq(alloy_copy_bytes(4, NULL, ALLOY_CPU, dst, ALLOY_CPU),
			 -EINVAL);
	ck_assert_ok(alloy_context_synchronize(ALLOY_CPU));
}
END_TEST

START_TEST(missing_context_is_enodev)
{
	struct alloy_data_ptr dp;
	struct alloy_device pinned = { ALLOY_DEVICE_CUDA_HOST, 0 };
	struct alloy_device cuda = { ALLOY_DEVICE_CUDA, 0 };
	struct alloy_device bad = { 9, 0 };
	char buf[8];

	ck_assert(!alloy_has_context(ALLOY_DEVICE_CUDA_HOST));
	ck_assert(!alloy_has_context(ALLOY_DEVICE_CUDA));
	ck_assert_int_eq(alloy_context_new(pinned, 8, &dp), -ENODEV);
	ck_assert(strstr(alloy_last_error(), "cuda_host"));
	ck_assert_int_eq(alloy_copy_bytes(8, buf, cuda, buf, ALLOY_CPU),
			 -ENODEV);
	ck_assert_int_eq(alloy_copy_bytes(8, buf, bad, buf, ALLOY_CPU),
			 -EINVAL);
	ck_assert_int_eq(alloy_context_new(bad, 8, &dp), -EINVAL);
}
END_TEST

START_TEST(device_context_routes_copies)
{
	struct alloy_context_ops ops = fake_context_ops(ALLOY_DEVICE_CUDA_HOST);
	struct alloy_device host = { ALLOY_DEVICE_CUDA_HOST, 0 };
	struct alloy_data_ptr dp;
	char a[4] = "abc", b[4] = "";

	ck_assert_ok(alloy_register_context(&ops, NULL));
	ck_assert_int_eq(alloy_register_context(&ops, NULL), -EEXIST);
	ck_assert_ok(alloy_context_new(host, 16, &dp));
	ck_assert_int_eq(dp.device.type, ALLOY_DEVICE_CUDA_HOST);
	ck_assert_ok(alloy_copy_bytes(4, a, ALLOY_CPU, b, host));
	ck_assert_ok(alloy_copy_bytes(4, b, host, a, ALLOY_CPU));
	ck_assert_int_eq(fake_copies, 2);
	ck_assert_str_eq(b, "abc");
	struct alloy_device cuda = { ALLOY_DEVICE_CUDA, 0 };

	/* Pinned host <-> CUDA is the CUDA context's job; there is none. */
	ck_assert_int_eq(alloy_copy_bytes(4, b, host, a, cuda), -ENODEV);
	ck_assert(strstr(alloy_last_error(), "no context for device cuda"));
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_unregister_context(ALLOY_DEVICE_CUDA_HOST));
	ck_assert_int_eq(alloy_unregister_context(ALLOY_DEVICE_CUDA_HOST),
			 -ENOENT);
	/* Without a pinned-host context, pinned memory is moved as host memory.
	 */
	memset(b, 0, sizeof(b));
	ck_assert_ok(alloy_copy_bytes(4, a, ALLOY_CPU, b, host));
	ck_assert_str_eq(b, "abc");
	ck_assert_int_eq(fake_copies, 2);
	ops.new_bytes = NULL;
	ck_assert_int_eq(alloy_register_context(&ops, NULL), -EINVAL);
}
END_TEST

Suite *suite_context(void)
{
	Suite *s = suite_create("context");
	TCase *tc = tcase_create("cpu");

	tcase_add_test(tc, cpu_new_uses_current_default);
	tcase_add_test(tc, copy_bytes_cpu);
	tcase_add_test(tc, missing_context_is_enodev);
	tcase_add_test(tc, device_context_routes_copies);
	suite_add_tcase(s, tc);
	return s;
}
