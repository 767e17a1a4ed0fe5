// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_error.c - error codes and the thread-local message.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "testutil.h"

START_TEST(message_names_function_and_values)
{
	struct alloy_data_ptr dp;
	int rc = alloy_alloc(alloy_find_allocator("default"), 64, 48, 0, &dp);

	ck_assert_int_eq(rc, -EINVAL);
	ck_assert_ptr_null(dp.ptr);
	ck_assert_msg(strstr(alloy_last_error(), "alloy_alloc"), "%s",
		      alloy_last_error());
	ck_assert_msg(strstr(alloy_last_error(), "48"), "%s",
		      alloy_last_error());
	ck_assert_int_eq(alloy_last_error_code(), -EINVAL);
	alloy_clear_error();
	ck_assert_str_eq(alloy_last_error(), "");
	ck_assert_int_eq(alloy_last_error_code(), 0);
}
END_TEST

/* A function returning NULL tells its code through the last error. */
START_TEST(code_of_a_null_result)
{
	int64_t dims[2] = { (int64_t)1 << 40, (int64_t)1 << 40 };

	ck_assert_ptr_null(alloy_tensor_new_dims(ALLOY_CPU, dims, 2));
	ck_assert_int_eq(alloy_last_error_code(), -EOVERFLOW);
	ck_assert_ptr_null(alloy_find_allocator("no_such_allocator_here"));
	ck_assert_int_eq(alloy_last_error_code(), -ENOENT);
}
END_TEST

static void *fail_in_thread(void *arg)
{
	(void)arg;
	alloy_find_allocator("no_such_allocator_here");
	return strdup(alloy_last_error());
}

START_TEST(message_is_per_thread)
{
	pthread_t t;
	char *other;

	alloy_clear_error();
	pthread_create(&t, NULL, fail_in_thread, NULL);
	pthread_join(t, (void **)&other);
	ck_assert_msg(strstr(other, "no_such_allocator_here"), "%s", other);
	ck_assert_str_eq(alloy_last_error(), "");
	free(other);
}
END_TEST

START_TEST(strerror_names)
{
	ck_assert_str_eq(alloy_strerror(-EBUSY), "EBUSY");
	ck_assert_str_eq(alloy_strerror(-EEXIST), "EEXIST");
	ck_assert_str_eq(alloy_strerror(12345), "EUNKNOWN");
}
END_TEST

Suite *suite_error(void)
{
	Suite *s = suite_create("error");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, message_names_function_and_values);
	tcase_add_test(tc, message_is_per_thread);
	tcase_add_test(tc, code_of_a_null_result);
	tcase_add_test(tc, strerror_names);
	suite_add_tcase(s, tc);
	return s;
}
