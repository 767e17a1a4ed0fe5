// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_blob.c - type-erased holders, and tensors in them.
 */
#include <string.h>

#include "tensorutil.h"

#define INT32  alloy_type(ALLOY_TYPE_INT32)
#define FLOAT  alloy_type(ALLOY_TYPE_FLOAT)
#define DOUBLE alloy_type(ALLOY_TYPE_DOUBLE)

START_TEST(empty_blob)
{
	struct alloy_blob *b = alloy_blob_new();

	ck_assert(alloy_blob_is_empty(b));
	ck_assert_ptr_null(alloy_blob_meta(b));
	ck_assert(!alloy_blob_is_type(b, FLOAT));
	ck_assert_ptr_null(alloy_blob_get(b, FLOAT));
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_blob_get: blob is empty while caller expects float");
	ck_assert_ptr_null(alloy_blob_get_tensor(b));
	ck_assert(strstr(alloy_last_error(), "expects tensor"));
	alloy_blob_free(b);
	alloy_blob_free(NULL);
}
END_TEST

/* Caffe2's tutorial_blob: int, then double, then a string it owns. */
START_TEST(get_mutable_replaces_other_types)
{
	struct alloy_blob *b = alloy_blob_new();
	bool is_new = false;
	int32_t *i;
	double *d;

	i = alloy_blob_get_mutable(b, INT32, &is_new);
	ck_assert_ptr_nonnull(i);
	ck_assert(is_new);
	ck_assert_int_eq(*i, 0);
	*i = 10;
	ck_assert_int_eq(*(const int32_t *)alloy_blob_get(b, INT32), 10);
	ck_assert(alloy_blob_is_type(b, INT32));
	ck_assert_ptr_null(alloy_blob_get(b, FLOAT));
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_blob_get: blob holds int32 while caller expects float");
	ck_assert_ptr_eq(alloy_blob_get_mutable(b, INT32, &is_new), i);
	ck_assert(!is_new);
	d = alloy_blob_get_mutable(b, DOUBLE, &is_new);
	ck_assert(is_new);
	*d = 3.14;
	ck_assert(alloy_blob_is_type(b, DOUBLE));
	ck_assert_ptr_eq(alloy_blob_get_mutable(b, DOUBLE, NULL), d);
	ck_assert_ptr_null(alloy_blob_get_mutable(b, NULL, &is_new));
	ck_assert(!is_new);
	alloy_blob_free(b);
}
END_TEST

START_TEST(destroy_runs_on_replace_and_free)
{
	const struct alloy_type_meta *c = counted_type();
	struct alloy_blob *b = alloy_blob_new();
	struct counted *o;

	o = alloy_blob_get_mutable(b, c, NULL);
	ck_assert_int_eq(counted_stats.ctors, 1);
	o->value = 5;
	alloy_blob_get_mutable(b, FLOAT, NULL);
	ck_assert_int_eq(counted_stats.dtors, 1);
	/* reset takes ownership of an object made elsewhere. */
	o = alloy_type_new_object(c);
	ck_assert_ptr_eq(alloy_blob_reset(b, c, o), o);
	ck_assert_ptr_eq(alloy_blob_get(b, c), o);
	ck_assert_ptr_eq(alloy_blob_reset(b, c, o), o); /* same object: kept */
	ck_assert_int_eq(counted_stats.dtors, 1);
	alloy_blob_free(b);
	ck_assert_int_eq(counted_stats.dtors, 2);
	ck_assert_int_eq(counted_stats.bad_dtors, 0);
	b = alloy_blob_new();
	ck_assert_ptr_null(alloy_blob_reset(b, c, NULL));
	ck_assert_ptr_null(alloy_blob_reset(b, NULL, o));
	ck_assert(alloy_blob_is_empty(b));
	alloy_blob_free(b);
}
END_TEST

START_TEST(share_external_is_not_owned)
{
	const struct alloy_type_meta *c = counted_type();
	struct alloy_blob *b = alloy_blob_new();
	struct counted *o = alloy_type_new_object(c);

	ck_assert_ok(alloy_blob_share_external(b, c, o));
	ck_assert_ptr_eq(alloy_blob_get(b, c), o);
	alloy_blob_get_mutable(b, INT32, NULL);
	ck_assert_int_eq(counted_stats.dtors, 0);
	ck_assert_ok(alloy_blob_share_external(b, c, o));
	alloy_blob_clear(b);
	ck_assert(alloy_blob_is_empty(b));
	alloy_blob_free(b);
	ck_assert_int_eq(counted_stats.dtors, 0);
	ck_assert_uint_eq(o->magic, COUNTED_MAGIC);
	alloy_type_delete_object(c, o);
	ck_assert_int_eq(alloy_blob_share_external(NULL, c, o), -EINVAL);
}
END_TEST

START_TEST(tensors_in_blobs)
{
	struct test_alloc ta;
	struct alloy_blob *b = alloy_blob_new();
	struct alloy_device cuda = { ALLOY_DEVICE_CUDA, 0 };
	struct alloy_tensor *t, *t2, *kept;
	int64_t n = 16;

	use_test_alloc(&ta, "t_blob");
	t = alloy_blob_get_mutable_tensor(b, ALLOY_CPU);
	ck_assert_ptr_nonnull(t);
	ck_assert(alloy_blob_is_type(b, alloy_type(ALLOY_TYPE_TENSOR)));
	ck_assert_ptr_eq(alloy_blob_get_tensor(b), t);
	ck_assert_ptr_eq(alloy_blob_get_mutable_tensor(b, ALLOY_CPU), t);
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	/* A reference taken outlives the blob's. */
	kept = alloy_tensor_ref(t);
	/* Another device: the content is replaced. */
	t2 = alloy_blob_get_mutable_tensor(b, cuda);
	ck_assert_ptr_ne(t2, t);
	ck_assert_int_eq(alloy_tensor_device(t2).type, ALLOY_DEVICE_CUDA);
	ck_assert_int_eq(ta.frees, 0);
	alloy_tensor_unref(kept);
	ck_assert_int_eq(ta.frees, 1);
	/* The generic path makes tensors too, and frees them with the blob. */
	t = alloy_blob_get_mutable(b, alloy_type(ALLOY_TYPE_TENSOR), NULL);
	ck_assert_ptr_eq(t, t2);
	alloy_blob_clear(b);
	t = alloy_blob_get_mutable(b, alloy_type(ALLOY_TYPE_TENSOR), NULL);
	ck_assert_int_eq(alloy_tensor_numel(t), -1);
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	alloy_blob_free(b);
	ck_assert_int_eq(ta.frees, 2);
	ck_assert_int_eq(ta.allocs, 2);
}
END_TEST

Suite *suite_blob(void)
{
	Suite *s = suite_create("blob");
	TCase *tc = tcase_create("blob");

	tcase_add_test(tc, empty_blob);
	tcase_add_test(tc, get_mutable_replaces_other_types);
	tcase_add_test(tc, destroy_runs_on_replace_and_free);
	tcase_add_test(tc, share_external_is_not_owned);
	tcase_add_test(tc, tensors_in_blobs);
	suite_add_tcase(s, tc);
	return s;
}
