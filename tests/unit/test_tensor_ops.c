// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_tensor_ops.c - extend, reserve_space, shrink_to, sharing,
 * copies across devices, clone and alias.
 */
#include <string.h>

#include "tensorutil.h"

#define FLOAT alloy_type(ALLOY_TYPE_FLOAT)
#define INT64 alloy_type(ALLOY_TYPE_INT64)

static struct alloy_tensor *iota(int64_t rows, int64_t cols)
{
	int64_t d[] = { rows, cols };
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, d, 2);
	int64_t *p;

	ck_assert_ptr_nonnull(t);
	p = alloy_tensor_raw_mutable_data(t, INT64);
	ck_assert_ptr_nonnull(p);
	for (int64_t i = 0; i < rows * cols; i++)
		p[i] = i;
	return t;
}

static void assert_iota(const struct alloy_tensor *t, int64_t n)
{
	const int64_t *p = alloy_tensor_data(t, INT64);

	ck_assert_ptr_nonnull(p);
	for (int64_t i = 0; i < n; i++)
		ck_assert_int_eq(p[i], i);
}

START_TEST(extend_keeps_data_and_grows_geometrically)
{
	struct test_alloc ta;
	struct alloy_tensor *t;

	use_test_alloc(&ta, "t_ext");
	t = iota(10, 3);
	ck_assert_ok(alloy_tensor_extend(t, 1, 50));
	ck_assert_int_eq(alloy_tensor_dim(t, 0), 11);
	ck_assert_int_eq(alloy_tensor_numel(t), 33);
	/* Room for ceil(10 x 1.5) = 15 rows. */
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 15 * 3 * 8);
	ck_assert(alloy_tensor_is_reserved(t));
	assert_iota(t, 30);
	ck_assert_int_eq(ta.allocs, 2);
	ck_assert_int_eq(ta.frees, 1);
	/* Up to 15 rows: no allocation. */
	ck_assert_ok(alloy_tensor_extend(t, 4, 50));
	ck_assert_int_eq(ta.allocs, 2);
	/* A jump past the growth gets exactly what it asks. */
	ck_assert_ok(alloy_tensor_extend(t, 100, 50));
	ck_assert_int_eq(alloy_tensor_dim(t, 0), 115);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 115 * 3 * 8);
	assert_iota(t, 30);
	alloy_tensor_unref(t);
	ck_assert_int_eq(ta.allocs, ta.frees);
}
END_TEST

START_TEST(extend_one_at_a_time_is_amortised)
{
	struct test_alloc ta;
	int64_t one = 1;
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, &one, 1);
	float *p;

	use_test_alloc(&ta, "t_amort");
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	for (int i = 1; i < 100000; i++) {
		ck_assert_ok(alloy_tensor_extend(t, 1, 40));
		p = alloy_tensor_raw_mutable_data(t, FLOAT);
		p[i] = (float)i;
	}
	/* 1.4^n >= 1e5 needs n ~ 35; one at a time would be 1e5. */
	ck_assert_int_le(ta.allocs, 40);
	p = alloy_tensor_raw_mutable_data(t, FLOAT);
	for (int i = 1; i < 100000; i++)
		ck_assert_int_eq((int)p[i], i);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(extend_bad_input)
{
	struct alloy_tensor *s = alloy_tensor_new_dims(ALLOY_CPU, NULL, 0);
	struct alloy_tensor *u = alloy_tensor_new(ALLOY_CPU);
	struct alloy_tensor *t = iota(2, 2);

	ck_assert_int_eq(alloy_tensor_extend(s, 1, 50), -EINVAL);
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_tensor_extend: tensor has 0 dims (numel 1); extend needs at least 1");
	ck_assert_int_eq(alloy_tensor_extend(u, 1, 50), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "numel -1"));
	ck_assert_int_eq(alloy_tensor_extend(t, -2, 50), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "num is -2"));
	ck_assert_int_eq(alloy_tensor_extend(t, 1, -5), -EINVAL);
	ck_assert_int_eq(alloy_tensor_extend(t, INT64_MAX, 50), -EOVERFLOW);
	ck_assert_int_eq(alloy_tensor_dim(t, 0), 2);
	alloy_tensor_unref(s);
	alloy_tensor_unref(u);
	alloy_tensor_unref(t);
}
END_TEST

/* A growth that would overflow gets exactly the rows asked for. */
START_TEST(extend_growth_overflow_falls_back)
{
	struct alloy_tensor *t = iota(4, 2);

	ck_assert_ok(alloy_tensor_extend(t, 1, 1e30f));
	ck_assert_int_eq(alloy_tensor_dim(t, 0), 5);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 5 * 2 * 8);
	assert_iota(t, 8);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(extend_without_buffer_is_a_resize)
{
	struct test_alloc ta;
	int64_t d[] = { 3, 2 };
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, d, 2);

	use_test_alloc(&ta, "t_extlazy");
	ck_assert_ok(alloy_tensor_extend(t, 5, 50));
	ck_assert_int_eq(alloy_tensor_numel(t), 16);
	ck_assert_int_eq(ta.allocs, 0);
	ck_assert(!alloy_tensor_is_reserved(t));
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(extend_copies_non_pod_elements)
{
	int64_t n = 2;
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	char **s =
		alloy_tensor_raw_mutable_data(t, alloy_type(ALLOY_TYPE_STRING));
	const struct alloy_type_meta *c = counted_type();
	struct counted *e;

	s[0] = strdup("a");
	s[1] = strdup("b");
	ck_assert_ok(alloy_tensor_extend(t, 1, 100));
	s = alloy_tensor_raw_mutable_data(t, NULL);
	ck_assert_str_eq(s[0], "a");
	ck_assert_str_eq(s[1], "b");
	ck_assert_ptr_null(s[2]);
	alloy_tensor_unref(t);

	t = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	e = alloy_tensor_raw_mutable_data(t, c);
	e[0].value = 7;
	e[1].value = 9;
	ck_assert_ok(alloy_tensor_extend(t, 1, 100));
	e = alloy_tensor_raw_mutable_data(t, c);
	ck_assert_int_eq(e[0].value, 7);
	ck_assert_int_eq(e[1].value, 9);
	ck_assert_int_eq(counted_stats.copies, 2);
	ck_assert_int_eq(counted_stats.dtors, 2); /* the old buffer */
	alloy_tensor_unref(t);
	ck_assert_int_eq(counted_stats.dtors, counted_stats.ctors);
	ck_assert_int_eq(counted_stats.bad_dtors, 0);
}
END_TEST

START_TEST(extend_leaves_a_shared_storage_alone)
{
	struct alloy_tensor *t = iota(4, 1);
	struct alloy_tensor *a = alloy_tensor_alias(t);
	const void *p = alloy_tensor_raw_data(a);

	ck_assert_ok(alloy_tensor_extend(t, 4, 10));
	ck_assert_ptr_eq(alloy_tensor_raw_data(a), p);
	ck_assert_int_eq(alloy_tensor_numel(a), 4);
	assert_iota(a, 4);
	assert_iota(t, 4);
	ck_assert_ptr_ne(alloy_tensor_raw_data(t), p);
	alloy_tensor_unref(t);
	alloy_tensor_unref(a);
}
END_TEST

START_TEST(reserved_tensors_free_only_to_grow)
{
	struct test_alloc ta;
	struct alloy_tensor *t;
	int64_t n;

	test_set_conf("keep_on_shrink:off");
	use_test_alloc(&ta, "t_resv");
	t = iota(10, 1);
	ck_assert_ok(alloy_tensor_reserve_space(t, 100));
	ck_assert(alloy_tensor_is_reserved(t));
	ck_assert_int_eq(alloy_tensor_numel(t), 10);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 800);
	ck_assert_int_eq(ta.allocs, 2);
	/* keep_on_shrink is off, yet a reserved tensor keeps its buffer. */
	n = 3;
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 800);
	n = 100;
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 800);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, NULL));
	ck_assert_int_eq(ta.allocs, 2);
	/* ... until it must grow. */
	n = 101;
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 0);
	/* Enough room already: nothing happens. */
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, NULL));
	ck_assert_ok(alloy_tensor_reserve_space(t, 50));
	ck_assert_int_eq(ta.allocs, 3);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(reserve_space_bad_input)
{
	int64_t n = 4;
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	struct alloy_tensor *u = alloy_tensor_new(ALLOY_CPU);
	struct alloy_tensor *a;

	ck_assert_int_eq(alloy_tensor_reserve_space(t, 10), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "no type yet"));
	ck_assert_int_eq(alloy_tensor_reserve_space(u, 10), -EINVAL);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_int_eq(alloy_tensor_reserve_space(t, -1), -EINVAL);
	a = alloy_tensor_alias(t);
	ck_assert_int_eq(alloy_tensor_reserve_space(t, 10), -EBUSY);
	ck_assert(strstr(alloy_last_error(), "shared by 2 users"));
	alloy_tensor_unref(a);
	alloy_tensor_unref(t);
	alloy_tensor_unref(u);
}
END_TEST

START_TEST(shrink_to_never_reallocates)
{
	struct test_alloc ta;
	struct alloy_tensor *t, *a, *s;
	const void *p;

	use_test_alloc(&ta, "t_shrink");
	t = iota(10, 2);
	p = alloy_tensor_raw_data(t);
	ck_assert_ok(alloy_tensor_shrink_to(t, 4));
	ck_assert_int_eq(alloy_tensor_numel(t), 8);
	ck_assert_int_eq(alloy_tensor_dim(t, 0), 4);
	ck_assert_ptr_eq(alloy_tensor_raw_data(t), p);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 160);
	assert_iota(t, 8);
	ck_assert_ok(alloy_tensor_shrink_to(t, 0));
	ck_assert_int_eq(ta.allocs, 1);

	ck_assert_int_eq(alloy_tensor_shrink_to(t, 5), -EINVAL);
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_tensor_shrink_to: new outer dim 5 is outside 0..0 (the current one)");
	ck_assert_int_eq(alloy_tensor_shrink_to(t, -1), -EINVAL);
	a = alloy_tensor_alias(t);
	ck_assert_int_eq(alloy_tensor_shrink_to(t, 0), -EBUSY);
	ck_assert(strstr(alloy_last_error(), "use resize"));
	s = alloy_tensor_new_dims(ALLOY_CPU, NULL, 0);
	ck_assert_int_eq(alloy_tensor_shrink_to(s, 0), -EINVAL);
	alloy_tensor_unref(a);
	alloy_tensor_unref(s);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(share_data_shares_the_storage)
{
	struct alloy_tensor *t = iota(2, 6);
	int64_t d[] = { 3, 4 }, d8 = 8;
	struct alloy_tensor *u = alloy_tensor_new_dims(ALLOY_CPU, d, 2);
	struct alloy_tensor *w = alloy_tensor_new_dims(ALLOY_CPU, &d8, 1);
	struct alloy_tensor *lazy = alloy_tensor_new_dims(ALLOY_CPU, d, 2);
	int64_t *p;

	ck_assert_ok(alloy_tensor_share_data(u, t));
	ck_assert_ptr_eq(alloy_tensor_raw_data(u), alloy_tensor_raw_data(t));
	ck_assert_ptr_eq(alloy_tensor_storage(u), alloy_tensor_storage(t));
	ck_assert_int_eq(alloy_storage_use_count(alloy_tensor_storage(t)), 2);
	ck_assert_ptr_eq(alloy_tensor_dtype(u), INT64);
	ck_assert_int_eq(alloy_tensor_dim(u, 0), 3); /* own dims */
	p = alloy_tensor_raw_mutable_data(u, INT64);
	p[11] = 99;
	ck_assert_int_eq(((const int64_t *)alloy_tensor_raw_data(t))[11], 99);
	ck_assert_ok(alloy_tensor_share_data(u, t)); /* again: no-op */

	ck_assert_int_eq(alloy_tensor_share_data(w, t), -EINVAL);
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_tensor_share_data: numel 8 != source numel 12 (reshape before sharing)");
	ck_assert_int_eq(alloy_tensor_share_data(u, lazy), -EINVAL);
	ck_assert(strstr(alloy_last_error(),
			 "source has 12 elements but no buffer yet"));
	alloy_tensor_unref(t);
	/* The storage lives on with u. */
	ck_assert_int_eq(((const int64_t *)alloy_tensor_raw_data(u))[11], 99);
	alloy_tensor_unref(u);
	alloy_tensor_unref(w);
	alloy_tensor_unref(lazy);
}
END_TEST

static int ext_deleted;
static void *ext_ctx;

static void ext_delete(struct alloy_data_ptr *dp)
{
	ext_deleted++;
	ext_ctx = dp->ctx;
	free(dp->ptr);
}

START_TEST(share_external_pointer)
{
	struct test_alloc ta;
	int64_t n = 4;
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	float *mem = malloc(4 * sizeof(float));
	static float stack_mem[8];
	int cookie;

	use_test_alloc(&ta, "t_ext_ptr");
	/* With a type and a deleter. */
	ck_assert_ok(alloy_tensor_share_external_pointer(t, mem, FLOAT, 0,
							 ext_delete, &cookie));
	ck_assert_ptr_eq(alloy_tensor_raw_data(t), mem);
	ck_assert_ptr_eq(alloy_tensor_raw_mutable_data(t, FLOAT), mem);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 16);
	ck_assert_ptr_null(alloy_tensor_allocator(t));
	ck_assert_int_eq(ta.allocs, 0);
	/* Without a type (the current one) and without a deleter. */
	ck_assert_ok(alloy_tensor_share_external_pointer(
		t, stack_mem, NULL, sizeof(stack_mem), NULL, NULL));
	ck_assert_int_eq(ext_deleted, 1);
	ck_assert_ptr_eq(ext_ctx, &cookie);
	ck_assert_ptr_eq(alloy_tensor_data(t, FLOAT), stack_mem);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), sizeof(stack_mem));
	alloy_tensor_unref(t);
	ck_assert_int_eq(ext_deleted, 1);

	t = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	ck_assert_int_eq(alloy_tensor_share_external_pointer(t, stack_mem, NULL,
							     0, NULL, NULL),
			 -EINVAL);
	ck_assert(strstr(alloy_last_error(), "no type"));
	ck_assert_int_eq(alloy_tensor_share_external_pointer(
				 t, stack_mem, FLOAT, 8, NULL, NULL),
			 -EINVAL);
	ck_assert(strstr(alloy_last_error(), "8 bytes"));
	ck_assert(strstr(alloy_last_error(), "numel 4 x itemsize 4"));
	alloy_tensor_unref(t);
	t = alloy_tensor_new(ALLOY_CPU);
	ck_assert_int_eq(alloy_tensor_share_external_pointer(
				 t, stack_mem, FLOAT, 0, NULL, NULL),
			 -EINVAL);
	ck_assert(strstr(alloy_last_error(), "pass nbytes"));
	alloy_tensor_unref(t);
}
END_TEST

/* External memory taken before any dims is held to its byte count. */
START_TEST(external_memory_before_dims_is_held_to_its_size)
{
	struct test_alloc ta;
	struct alloy_tensor *t = alloy_tensor_new(ALLOY_CPU);
	float *mem = malloc(16), *p;
	int64_t n = 1 << 20;

	use_test_alloc(&ta, "t_ext_nodims");
	ext_deleted = 0;
	ck_assert_ok(alloy_tensor_share_external_pointer(t, mem, FLOAT, 16,
							 ext_delete, NULL));
	ck_assert_int_eq(alloy_tensor_numel(t), -1);
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	/* 16 bytes cannot hold 4 MiB: the memory went back to its owner. */
	ck_assert_int_eq(ext_deleted, 1);
	p = alloy_tensor_raw_mutable_data(t, FLOAT);
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_ne(p, mem);
	ck_assert_uint_ge(alloy_tensor_capacity_nbytes(t), (size_t)n * 4);
	ck_assert_int_eq(ta.allocs, 1);
	p[n - 1] = 1.0f;
	alloy_tensor_unref(t);

	/* Memory large enough stays. */
	t = alloy_tensor_new(ALLOY_CPU);
	mem = malloc(64);
	n = 16;
	ck_assert_ok(alloy_tensor_share_external_pointer(t, mem, FLOAT, 64,
							 ext_delete, NULL));
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_ptr_eq(alloy_tensor_raw_mutable_data(t, FLOAT), mem);
	ck_assert_int_eq(ext_deleted, 1);
	alloy_tensor_unref(t);
	ck_assert_int_eq(ext_deleted, 2);
}
END_TEST

/*
 * A 0-element tensor that changes type keeps its buffer only between
 * POD types: one holding elements of the other kind must never be handed
 * out after a resize within its capacity.
 */
START_TEST(zero_elements_retype_keeps_no_foreign_buffer)
{
	const struct alloy_type_meta *c = counted_type();
	int64_t four = 4, zero = 0;
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, &four, 1);
	struct counted *e;
	float *f;

	memset(&counted_stats, 0, sizeof(counted_stats));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, c));
	ck_assert_int_eq(counted_stats.ctors, 4);
	ck_assert_ok(alloy_tensor_resize(t, &zero, 1));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_int_eq(counted_stats.dtors, 4); /* gone with the label */
	ck_assert_ok(alloy_tensor_resize(t, &four, 1));
	f = alloy_tensor_raw_mutable_data(t, FLOAT);
	ck_assert_ptr_nonnull(f);
	f[3] = 2.0f;

	/* The other way: float bytes never become counted elements. */
	ck_assert_ok(alloy_tensor_resize(t, &zero, 1));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, c));
	ck_assert_ok(alloy_tensor_resize(t, &four, 1));
	e = alloy_tensor_raw_mutable_data(t, c);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(counted_stats.ctors, 8);
	ck_assert_uint_eq(e[3].magic, COUNTED_MAGIC);
	alloy_tensor_unref(t);
	ck_assert_int_eq(counted_stats.dtors, 8);
	ck_assert_int_eq(counted_stats.bad_dtors, 0);

	/* Between POD types the buffer stays. */
	t = alloy_tensor_new_dims(ALLOY_CPU, &four, 1);
	f = alloy_tensor_raw_mutable_data(t, FLOAT);
	ck_assert_ok(alloy_tensor_resize(t, &zero, 1));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, INT64));
	ck_assert_ptr_eq(alloy_tensor_raw_data(t), f);
	alloy_tensor_unref(t);
}
END_TEST

static long dtor_nonzero;

static void zero_check_dtor(void *p, size_t n)
{
	const uint64_t *w = p;

	for (size_t i = 0; i < n; i++)
		dtor_nonzero += w[i] != 0;
}

/*
 * A type with a dtor but no ctor is constructed as zeroed bytes (the test
 * allocator fills fresh memory with 0xa5); one without copy is refused
 * wherever elements would be copied.
 */
START_TEST(type_without_ctor_or_copy)
{
	struct test_alloc ta;
	struct alloy_type_meta m = {
		.name = "no_ctor_no_copy",
		.itemsize = sizeof(uint64_t),
		.dtor = zero_check_dtor,
	};
	const struct alloy_type_meta *type;
	int64_t n = 8;
	struct alloy_tensor *t;
	const uint64_t *w;

	use_test_alloc(&ta, "t_no_copy");
	ck_assert_ok(alloy_type_register(&m, &type));
	ck_assert(!alloy_type_is_pod(type));
	t = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	w = alloy_tensor_raw_mutable_data(t, type);
	ck_assert_ptr_nonnull(w);
	for (int i = 0; i < n; i++)
		ck_assert_uint_eq(w[i], 0);
	ck_assert_int_eq(alloy_tensor_extend(t, 100, 50), -ENOTSUP);
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_tensor_extend: elements of type no_ctor_no_copy cannot be copied: it has a ctor or dtor but no copy function");
	ck_assert_int_eq(alloy_tensor_numel(t), 8); /* as it was */
	ck_assert_ptr_null(alloy_tensor_clone(t));
	ck_assert(strstr(alloy_last_error(), "cannot be copied"));
	alloy_tensor_unref(t);
	ck_assert_int_eq(dtor_nonzero, 0);
}
END_TEST

START_TEST(share_external_pointer_on_shared_storage)
{
	struct alloy_tensor *t = iota(2, 2);
	struct alloy_tensor *a = alloy_tensor_alias(t);
	static int64_t mem[4] = { 5, 6, 7, 8 };

	ck_assert_ok(alloy_tensor_share_external_pointer(t, mem, INT64, 0, NULL,
							 NULL));
	ck_assert_ptr_eq(alloy_tensor_raw_data(t), mem);
	assert_iota(a, 4);
	alloy_tensor_unref(t);
	alloy_tensor_unref(a);
}
END_TEST

START_TEST(copy_from_on_cpu)
{
	struct alloy_tensor *src = iota(3, 4);
	struct alloy_tensor *dst = alloy_tensor_new(ALLOY_CPU);
	struct alloy_tensor *un = alloy_tensor_new(ALLOY_CPU);
	int64_t d[] = { 5 };
	struct alloy_tensor *lazy = alloy_tensor_new_dims(ALLOY_CPU, d, 1);

	alloy_tensor_resize(dst, d, 1);
	alloy_tensor_raw_mutable_data(dst, FLOAT);
	ck_assert_ok(alloy_tensor_copy_from(dst, src));
	ck_assert_ptr_eq(alloy_tensor_dtype(dst), INT64);
	ck_assert_int_eq(alloy_tensor_ndim(dst), 2);
	ck_assert_int_eq(alloy_tensor_dim(dst, 1), 4);
	assert_iota(dst, 12);
	ck_assert_ptr_ne(alloy_tensor_raw_data(dst),
			 alloy_tensor_raw_data(src));
	ck_assert_ok(alloy_tensor_copy_from(dst, dst));
	/* An uninitialised source makes an uninitialised copy. */
	ck_assert_ok(alloy_tensor_copy_from(dst, un));
	ck_assert_int_eq(alloy_tensor_numel(dst), -1);
	ck_assert_ptr_null(alloy_tensor_dtype(dst));
	ck_assert_int_eq(alloy_tensor_copy_from(dst, lazy), -EINVAL);
	ck_assert(strstr(alloy_last_error(),
			 "source has 5 elements but no buffer yet"));
	alloy_tensor_unref(src);
	alloy_tensor_unref(dst);
	alloy_tensor_unref(un);
	alloy_tensor_unref(lazy);
}
END_TEST

START_TEST(copy_from_crosses_devices_through_contexts)
{
	struct alloy_device dev = { ALLOY_DEVICE_CUDA, 0 };
	struct alloy_tensor *src = iota(4, 4);
	struct alloy_tensor *gpu, *back, *str;
	int64_t n = 1;

	fake_device_register(ALLOY_DEVICE_CUDA);
	gpu = alloy_tensor_new(dev);
	back = alloy_tensor_new(ALLOY_CPU);
	ck_assert_ok(alloy_tensor_copy_from(gpu, src));
	ck_assert_int_eq(fake_copies, 1);
	ck_assert_int_eq(alloy_tensor_device(gpu).type, ALLOY_DEVICE_CUDA);
	ck_assert_int_eq(
		alloy_storage_data_ptr(alloy_tensor_storage(gpu))->device.type,
		ALLOY_DEVICE_CUDA);
	ck_assert_ok(alloy_tensor_copy_from(back, gpu));
	ck_assert_int_eq(fake_copies, 2);
	assert_iota(back, 16);
	/* Device to device of the same type goes through the context too. */
	struct alloy_tensor *gpu2 = alloy_tensor_clone(gpu);

	ck_assert_ptr_nonnull(gpu2);
	ck_assert_int_eq(fake_copies, 3);
	/* Non-POD elements cannot be copied into device memory. */
	str = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	alloy_tensor_raw_mutable_data(str, alloy_type(ALLOY_TYPE_STRING));
	ck_assert_int_ne(alloy_tensor_copy_from(gpu, str), 0);
	ck_assert(strstr(alloy_last_error(), "string"));
	/* Sharing across devices is refused. */
	ck_assert_int_eq(alloy_tensor_share_data(back, gpu), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "cpu:0, source on cuda:0"));
	alloy_tensor_unref(src);
	alloy_tensor_unref(gpu);
	alloy_tensor_unref(gpu2);
	alloy_tensor_unref(back);
	alloy_tensor_unref(str);
}
END_TEST

START_TEST(clone_is_deep)
{
	struct alloy_tensor *t = iota(2, 3);
	struct alloy_tensor *c = alloy_tensor_clone(t);
	int64_t *p;
	int64_t n = 2;
	struct alloy_tensor *s = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	char **a, **b;
	struct alloy_tensor *sc;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_ne(alloy_tensor_storage(c), alloy_tensor_storage(t));
	assert_iota(c, 6);
	p = alloy_tensor_raw_mutable_data(c, NULL);
	p[0] = 42;
	assert_iota(t, 6);
	ck_assert_int_eq(alloy_tensor_numel(c), 6);

	a = alloy_tensor_raw_mutable_data(s, alloy_type(ALLOY_TYPE_STRING));
	a[0] = strdup("deep");
	sc = alloy_tensor_clone(s);
	b = alloy_tensor_raw_mutable_data(sc, NULL);
	ck_assert_str_eq(b[0], "deep");
	ck_assert_ptr_ne(b[0], a[0]);
	ck_assert_ptr_null(b[1]);
	ck_assert_ptr_null(alloy_tensor_clone(NULL));
	alloy_tensor_unref(t);
	alloy_tensor_unref(c);
	alloy_tensor_unref(s);
	alloy_tensor_unref(sc);
}
END_TEST

START_TEST(alias_shares_storage_not_dims)
{
	struct alloy_tensor *t = iota(2, 3);
	struct alloy_tensor *a = alloy_tensor_alias(t);
	int64_t flat = 6;

	ck_assert_ptr_eq(alloy_tensor_storage(a), alloy_tensor_storage(t));
	ck_assert_int_eq(alloy_tensor_numel(a), 6);
	ck_assert_ok(alloy_tensor_reshape(a, &flat, 1));
	ck_assert_int_eq(alloy_tensor_ndim(t), 2);
	ck_assert_int_eq(alloy_storage_use_count(alloy_tensor_storage(t)), 2);
	alloy_tensor_unref(a);
	ck_assert_int_eq(alloy_storage_use_count(alloy_tensor_storage(t)), 1);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(tensors_of_tensors)
{
	const struct alloy_type_meta *tt = alloy_type(ALLOY_TYPE_TENSOR);
	int64_t n = 2;
	struct alloy_tensor *outer = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);
	struct alloy_tensor **e = alloy_tensor_raw_mutable_data(outer, tt);
	struct alloy_tensor *c, **ce;

	ck_assert_ptr_null(e[0]);
	e[0] = iota(1, 3);
	c = alloy_tensor_clone(outer);
	ce = alloy_tensor_raw_mutable_data(c, NULL);
	ck_assert_ptr_nonnull(ce[0]);
	ck_assert_ptr_ne(ce[0], e[0]);
	assert_iota(ce[0], 3);
	ck_assert_ptr_ne(alloy_tensor_raw_data(ce[0]),
			 alloy_tensor_raw_data(e[0]));
	alloy_tensor_unref(outer);
	alloy_tensor_unref(c);
}
END_TEST

Suite *suite_tensor_ops(void)
{
	Suite *s = suite_create("tensor_ops");
	TCase *tc = tcase_create("ops");

	tcase_add_test(tc, extend_keeps_data_and_grows_geometrically);
	tcase_add_test(tc, extend_one_at_a_time_is_amortised);
	tcase_add_test(tc, extend_bad_input);
	tcase_add_test(tc, extend_growth_overflow_falls_back);
	tcase_add_test(tc, extend_without_buffer_is_a_resize);
	tcase_add_test(tc, extend_copies_non_pod_elements);
	tcase_add_test(tc, extend_leaves_a_shared_storage_alone);
	tcase_add_test(tc, reserved_tensors_free_only_to_grow);
	tcase_add_test(tc, reserve_space_bad_input);
	tcase_add_test(tc, shrink_to_never_reallocates);
	tcase_add_test(tc, share_data_shares_the_storage);
	tcase_add_test(tc, share_external_pointer);
	tcase_add_test(tc, share_external_pointer_on_shared_storage);
	tcase_add_test(tc, copy_from_on_cpu);
	tcase_add_test(tc, copy_from_crosses_devices_through_contexts);
	tcase_add_test(tc, clone_is_deep);
	tcase_add_test(tc, alias_shares_storage_not_dims);
	tcase_add_test(tc, tensors_of_tensors);
	tcase_add_test(tc, external_memory_before_dims_is_held_to_its_size);
	tcase_add_test(tc, zero_elements_retype_keeps_no_foreign_buffer);
	tcase_add_test(tc, type_without_ctor_or_copy);
	suite_add_tcase(s, tc);
	return s;
}
