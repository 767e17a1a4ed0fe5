// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_tensor_dtype.c - a tensor's element type and elements from
 * the outside: alloy_tensor_set_dtype and its refusals,
 * string elements without raw char *, alloy_tensor_record_stream on the
 * simulated device, and a blob that keeps its contents when get_mutable
 * fails.
 */
#include <stdint.h>
#include <string.h>

#include "tensorutil.h"

#define F32 alloy_type(ALLOY_TYPE_FLOAT)
#define I32 alloy_type(ALLOY_TYPE_INT32)
#define F64 alloy_type(ALLOY_TYPE_DOUBLE)
#define STR alloy_type(ALLOY_TYPE_STRING)

static struct alloy_tensor *cpu_tensor(int64_t n,
				       const struct alloy_type_meta *t)
{
	struct alloy_tensor *x = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);

	ck_assert_ptr_nonnull(x);
	if (t)
		ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(x, t));
	return x;
}

START_TEST(set_dtype_reinterprets_plain_bytes)
{
	struct alloy_tensor *t = cpu_tensor(4, I32);
	int32_t *p = alloy_tensor_raw_mutable_data(t, I32);
	const float *f;

	p[0] = 0x3f800000; /* 1.0f */
	ck_assert_ok(alloy_tensor_set_dtype(t, F32));
	ck_assert_ptr_eq(alloy_tensor_dtype(t), F32);
	f = alloy_tensor_data(t, F32);
	ck_assert_ptr_eq(f, p); /* the same buffer, not a new one */
	ck_assert(f[0] == 1.0f);
	/* Same type: nothing to do. */
	ck_assert_ok(alloy_tensor_set_dtype(t, F32));
	/* 4 doubles do not fit the 16 bytes: refused, unchanged. */
	ck_assert_int_eq(alloy_tensor_set_dtype(t, F64), -EINVAL);
	ck_assert_msg(
		strstr(alloy_last_error(), "buffer of 16 bytes is too small"),
		"%s", alloy_last_error());
	ck_assert_ptr_eq(alloy_tensor_dtype(t), F32);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(set_dtype_leaves_sharers_alone)
{
	struct alloy_tensor *t = cpu_tensor(4, F32), *u = alloy_tensor_alias(t);

	ck_assert_ptr_nonnull(u);
	/* The type lives in the storage: u would see its floats change. */
	ck_assert_int_eq(alloy_tensor_set_dtype(t, I32), -EBUSY);
	ck_assert_msg(strstr(alloy_last_error(), "shared by 2 users"), "%s",
		      alloy_last_error());
	ck_assert_ptr_eq(alloy_tensor_dtype(u), F32);
	ck_assert_ptr_eq(alloy_tensor_dtype(t), F32);
	/* Once alone again, it may. */
	alloy_tensor_unref(u);
	ck_assert_ok(alloy_tensor_set_dtype(t, I32));
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(set_dtype_refuses_constructed_elements)
{
	struct alloy_tensor *t = cpu_tensor(3, STR),
			    *lazy = cpu_tensor(3, NULL);
	int64_t huge = INT64_MAX / 2;

	/* Strings are pointers that the buffer owns: no reinterpretation. */
	ck_assert_int_eq(alloy_tensor_set_dtype(t, I32), -EINVAL);
	ck_assert_msg(
		strstr(alloy_last_error(),
		       "string elements cannot be reinterpreted as int32"),
		"%s", alloy_last_error());
	ck_assert_ptr_eq(alloy_tensor_dtype(t), STR);
	/* Without a buffer only the type changes; the buffer comes later,
	 * constructed. */
	ck_assert_ok(alloy_tensor_set_dtype(lazy, STR));
	ck_assert_ptr_null(alloy_tensor_raw_data(lazy));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(lazy, NULL));
	ck_assert_str_eq(alloy_tensor_string_get(lazy, 2), "");
	ck_assert_int_eq(alloy_tensor_set_dtype(NULL, F32), -EINVAL);
	ck_assert_int_eq(alloy_tensor_set_dtype(t, NULL), -EINVAL);
	alloy_tensor_unref(t);
	/* numel x itemsize must fit. */
	t = alloy_tensor_new_dims(ALLOY_CPU, &huge, 1);
	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(alloy_tensor_set_dtype(t, F64), -EOVERFLOW);
	alloy_tensor_unref(t);
	alloy_tensor_unref(lazy);
}
END_TEST

START_TEST(string_elements_without_char_pointers)
{
	struct alloy_tensor *t = cpu_tensor(3, NULL), *c;
	char mine[] = "hello";

	ck_assert_ok(alloy_tensor_set_dtype(t, STR));
	/* The buffer is made on the first set; the others read "". */
	ck_assert_ok(alloy_tensor_string_set(t, 1, mine));
	mine[0] = 'J'; /* a copy was stored */
	ck_assert_str_eq(alloy_tensor_string_get(t, 1), "hello");
	ck_assert_str_eq(alloy_tensor_string_get(t, 0), "");
	ck_assert_ok(alloy_tensor_string_set(t, 1, "world"));
	ck_assert_str_eq(alloy_tensor_string_get(t, 1), "world");
	/* NULL and "" are the empty string, stored as NULL as the type wants.
	 */
	ck_assert_ok(alloy_tensor_string_set(t, 1, ""));
	ck_assert_ptr_null(((char **)alloy_tensor_raw_data(t))[1]);
	ck_assert_ok(alloy_tensor_string_set(t, 2, "kept"));
	ck_assert_ok(alloy_tensor_string_set(t, 0, NULL));
	ck_assert_str_eq(alloy_tensor_string_get(t, 0), "");
	/* Deep copies through the type, as before. */
	c = alloy_tensor_clone(t);
	ck_assert_ptr_nonnull(c);
	ck_assert_ok(alloy_tensor_string_set(t, 2, "changed"));
	ck_assert_str_eq(alloy_tensor_string_get(c, 2), "kept");
	/* Refusals. */
	ck_assert_int_eq(alloy_tensor_string_set(t, 3, "x"), -ERANGE);
	ck_assert_int_eq(alloy_tensor_string_set(t, -1, "x"), -ERANGE);
	ck_assert_ptr_null(alloy_tensor_string_get(t, 3));
	ck_assert_msg(strstr(alloy_last_error(), "element 3 is outside 0..2"),
		      "%s", alloy_last_error());
	ck_assert_int_eq(alloy_tensor_string_set(NULL, 0, "x"), -EINVAL);
	alloy_tensor_unref(c);
	alloy_tensor_unref(t);
	t = cpu_tensor(2, F32);
	ck_assert_int_eq(alloy_tensor_string_set(t, 0, "x"), -EINVAL);
	ck_assert_msg(strstr(alloy_last_error(),
			     "tensor holds float while caller expects string"),
		      "%s", alloy_last_error());
	ck_assert_ptr_null(alloy_tensor_string_get(t, 0));
	alloy_tensor_unref(t);
	/* get never allocates: a lazy tensor has no element to read. */
	t = cpu_tensor(2, NULL);
	ck_assert_ok(alloy_tensor_set_dtype(t, STR));
	ck_assert_ptr_null(alloy_tensor_string_get(t, 0));
	ck_assert_msg(strstr(alloy_last_error(), "no buffer yet"), "%s",
		      alloy_last_error());
	ck_assert_ptr_null(alloy_tensor_raw_data(t));
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(record_stream_on_a_tensor)
{
	struct alloy_device gpu = { ALLOY_DEVICE_CUDA, 0 };
	struct alloy_cuda_sim *sim;
	struct alloy_allocator *a;
	struct alloy_tensor *t, *u;
	void *side, *p;
	int64_t n = 1024;

	ck_assert_ok(alloy_cuda_sim_create((size_t)64 << 20, &sim));
	ck_assert_ok(alloy_cuda_caching_register_sim(sim, "rs_cc", &a));
	ck_assert_ok(alloy_cuda_sim_register_context(sim));
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA, a));
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &side));
	ck_assert_ok(alloy_cuda_sim_hold(sim, side, true));

	/* Without record_stream a freed buffer is reused at once... */
	t = alloy_tensor_new_dims(gpu, &n, 1);
	ck_assert_ok(alloy_tensor_record_stream(t, side)); /* no buffer: 0 */
	p = alloy_tensor_raw_mutable_data(t, F32);
	ck_assert_ptr_nonnull(p);
	alloy_tensor_unref(t);
	u = alloy_tensor_new_dims(gpu, &n, 1);
	ck_assert_ptr_eq(alloy_tensor_raw_mutable_data(u, F32), p);
	/* ...with it, not while the other stream's work is pending. */
	ck_assert_ok(alloy_tensor_record_stream(u, side));
	alloy_tensor_unref(u);
	t = alloy_tensor_new_dims(gpu, &n, 1);
	ck_assert_ptr_ne(alloy_tensor_raw_mutable_data(t, F32), p);
	alloy_tensor_unref(t);
	ck_assert_ok(alloy_cuda_sim_complete(sim, side));

	/* CPU memory comes from allocators without streams. */
	t = cpu_tensor(4, F32);
	ck_assert_int_eq(alloy_tensor_record_stream(t, side), -ENOTSUP);
	alloy_tensor_unref(t);
	ck_assert_int_eq(alloy_tensor_record_stream(NULL, side), -EINVAL);
}
END_TEST

/* Issue 15: get_mutable keeping the old contents on failure, documented. */
START_TEST(blob_get_mutable_keeps_contents_on_failure)
{
	struct alloy_blob *b = alloy_blob_new();
	float *f = alloy_blob_get_mutable(b, F32, NULL);
	bool is_new = true;

	*f = 3.5f;
	counted_stats.fail_ctor = 1;
	ck_assert_ptr_null(alloy_blob_get_mutable(b, counted_type(), &is_new));
	ck_assert(!is_new);
	ck_assert_ptr_eq(alloy_blob_meta(b), F32);
	ck_assert_ptr_eq(alloy_blob_get(b, F32), f);
	ck_assert(*f == 3.5f);
	alloy_blob_free(b);
}
END_TEST

Suite *suite_tensor_dtype(void)
{
	Suite *s = suite_create("tensor_dtype");
	TCase *tc = tcase_create("dtype");

	tcase_add_test(tc, set_dtype_reinterprets_plain_bytes);
	tcase_add_test(tc, set_dtype_leaves_sharers_alone);
	tcase_add_test(tc, set_dtype_refuses_constructed_elements);
	tcase_add_test(tc, string_elements_without_char_pointers);
	tcase_add_test(tc, record_stream_on_a_tensor);
	tcase_add_test(tc, blob_get_mutable_keeps_contents_on_failure);
	suite_add_tcase(s, tc);
	return s;
}
