// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_tensor.c - the tensor handle: lazy allocation, the resize
 * policy, reshape, typed access, non-POD elements, bad input.
 */
#include <string.h>

#include "tensorutil.h"

#define FLOAT  alloy_type(ALLOY_TYPE_FLOAT)
#define INT32  alloy_type(ALLOY_TYPE_INT32)
#define DOUBLE alloy_type(ALLOY_TYPE_DOUBLE)

static struct alloy_tensor *tensor1(int64_t n)
{
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, &n, 1);

	ck_assert_ptr_nonnull(t);
	return t;
}

START_TEST(new_tensor_is_uninitialised)
{
	struct alloy_tensor *t = alloy_tensor_new(ALLOY_CPU);

	ck_assert_int_eq(alloy_tensor_numel(t), -1);
	ck_assert_int_eq(alloy_tensor_ndim(t), 0);
	ck_assert_ptr_null(alloy_tensor_dtype(t));
	ck_assert_uint_eq(alloy_tensor_nbytes(t), 0);
	ck_assert_ptr_null(alloy_tensor_raw_data(t));
	ck_assert(strstr(alloy_last_error(), "no dims yet"));
	ck_assert_ptr_null(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert(strstr(alloy_last_error(), "call resize"));
	ck_assert_ptr_null(alloy_tensor_raw_mutable_data(t, NULL));
	ck_assert(strstr(alloy_last_error(), "no type yet"));
	ck_assert_ptr_eq(alloy_tensor_ref(t), t);
	alloy_tensor_unref(t);
	ck_assert_int_eq(alloy_tensor_numel(t), -1); /* still alive */
	alloy_tensor_unref(t);
	alloy_tensor_unref(NULL);
}
END_TEST

START_TEST(allocation_is_lazy)
{
	struct test_alloc ta;
	struct alloy_allocator *a = use_test_alloc(&ta, "t_lazy");
	int64_t dims[] = { 2, 3 };
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, dims, 2);
	float *p;

	ck_assert_int_eq(alloy_tensor_numel(t), 6);
	ck_assert_int_eq(ta.allocs, 0);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 0);
	ck_assert_ptr_null(alloy_tensor_raw_data(t));
	ck_assert(strstr(alloy_last_error(), "6 elements has no buffer yet"));
	p = alloy_tensor_raw_mutable_data(t, FLOAT);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(ta.allocs, 1);
	ck_assert_uint_eq(ta.last_size, 24);
	ck_assert_uint_eq(alloy_tensor_nbytes(t), 24);
	ck_assert_uint_eq(alloy_tensor_itemsize(t), 4);
	ck_assert_ptr_eq(alloy_tensor_allocator(t), a);
	/* Asking again for the same type allocates nothing. */
	ck_assert_ptr_eq(alloy_tensor_raw_mutable_data(t, FLOAT), p);
	ck_assert_ptr_eq(alloy_tensor_raw_mutable_data(t, NULL), p);
	ck_assert_ptr_eq(alloy_tensor_raw_data(t), p);
	ck_assert_ptr_eq(alloy_tensor_data(t, FLOAT), p);
	ck_assert_int_eq(ta.allocs, 1);
	alloy_tensor_unref(t);
	ck_assert_int_eq(ta.frees, 1);
}
END_TEST

/* mutable_data takes the default of the moment it runs, not of resize. */
START_TEST(allocates_from_the_default_of_that_moment)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "t_late");
	struct alloy_tensor *t = tensor1(8);

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_ptr_eq(alloy_tensor_allocator(t), a);
	alloy_tensor_unref(t);
}
END_TEST

/*
 * Issue 5 item 6: one tensor from the default allocator, swap the CPU
 * default, a second tensor from the new one; both freed after the swap go
 * back to their own makers, as the per-allocator counts show.
 */
START_TEST(allocators_picked_at_run_time)
{
	struct test_alloc ta;
	struct alloy_allocator *def = alloy_get_default(ALLOY_DEVICE_CPU);
	struct alloy_allocator *a = test_alloc_register(&ta, "t_swap");
	struct alloy_allocator_stats d0 = { .size = sizeof(d0),
					    .version = ALLOY_STATS_VERSION };
	struct alloy_allocator_stats d1 = d0, a1 = d0;
	struct alloy_tensor *t1 = tensor1(100), *t2 = tensor1(200);

	ck_assert_str_eq(alloy_allocator_name(def), "default");
	ck_assert_ok(alloy_allocator_stats(def, &d0));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t1, FLOAT));
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t2, DOUBLE));
	ck_assert_ptr_eq(alloy_tensor_allocator(t1), def);
	ck_assert_ptr_eq(alloy_tensor_allocator(t2), a);
	/* Swap back before freeing: neither block may follow the default. */
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, def));
	alloy_tensor_unref(t1);
	alloy_tensor_unref(t2);

	ck_assert_ok(alloy_allocator_stats(def, &d1));
	ck_assert_ok(alloy_allocator_stats(a, &a1));
	ck_assert_uint_eq(d1.num_allocs - d0.num_allocs, 1);
	ck_assert_uint_eq(d1.num_frees - d0.num_frees, 1);
	ck_assert_uint_eq(a1.num_allocs, 1);
	ck_assert_uint_eq(a1.num_frees, 1);
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_int_eq(ta.bad_frees, 0);
	ck_assert_uint_eq(ta.last_size, 1600);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	/* With no live blocks left it can go. */
	ck_assert_ok(alloy_unregister_allocator("t_swap"));
}
END_TEST

static const struct alloy_reporter_entry *
rep_entry(const struct alloy_reporter_snapshot *snap, const char *name)
{
	for (uint32_t i = 0; i < snap->nentries; i++)
		if (!strcmp(snap->entries[i].allocator, name))
			return &snap->entries[i];
	return NULL;
}

/* The same through the reporter: per allocator, who made and who freed. */
START_TEST(allocators_picked_at_run_time_reported)
{
	static struct alloy_reporter_snapshot snap;
	const struct alloy_reporter_entry *e;
	struct test_alloc ta;
	struct alloy_allocator *a;
	struct alloy_tensor *t1 = tensor1(100), *t2 = tensor1(300);

	ck_assert_ok(alloy_reporter_enable());
	a = test_alloc_register(&ta, "t_swaprep");
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t1, FLOAT));
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t2, FLOAT));
	alloy_tensor_unref(t1);
	alloy_tensor_unref(t2);

	snap.size = sizeof(snap);
	snap.version = ALLOY_REPORTER_SNAPSHOT_VERSION;
	ck_assert_ok(alloy_reporter_snapshot(&snap));
	e = rep_entry(&snap, "default");
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->c.allocs, 1);
	ck_assert_uint_eq(e->c.frees, 1);
	ck_assert_uint_eq(e->c.total_bytes, 400);
	ck_assert_uint_eq(e->c.current_bytes, 0);
	e = rep_entry(&snap, "t_swaprep");
	ck_assert_ptr_nonnull(e);
	ck_assert_uint_eq(e->c.allocs, 1);
	ck_assert_uint_eq(e->c.frees, 1);
	ck_assert_uint_eq(e->c.total_bytes, 1200);
	ck_assert_uint_eq(e->c.live_blocks, 0);
	ck_assert_int_eq(ta.bad_frees, 0);
}
END_TEST

START_TEST(shrink_keeps_the_buffer_by_default)
{
	struct test_alloc ta;
	struct alloy_tensor *t = tensor1(100);
	int64_t n;
	void *p;

	use_test_alloc(&ta, "t_keep");
	ck_assert(alloy_tensor_keep_on_shrink());
	ck_assert_uint_eq(alloy_tensor_max_keep_on_shrink_memory(), UINT64_MAX);
	p = alloy_tensor_raw_mutable_data(t, FLOAT);
	n = 10;
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 400);
	ck_assert_ptr_eq(alloy_tensor_raw_mutable_data(t, FLOAT), p);
	n = 100;
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_ptr_eq(alloy_tensor_raw_mutable_data(t, FLOAT), p);
	ck_assert_int_eq(ta.allocs, 1);
	/* Growing past the capacity frees at resize, allocates lazily. */
	n = 101;
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 0);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_int_eq(ta.allocs, 2);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(keep_on_shrink_off_from_conf)
{
	struct test_alloc ta;
	struct alloy_tensor *t;
	int64_t n = 10;

	test_set_conf("keep_on_shrink:false");
	use_test_alloc(&ta, "t_nokeep");
	ck_assert(!alloy_tensor_keep_on_shrink());
	t = tensor1(100);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 0);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	/* Same numel, other dims: nothing to free even with keep off. */
	int64_t d2[] = { 2, 5 };

	ck_assert_ok(alloy_tensor_resize(t, d2, 2));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 40);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(max_keep_on_shrink_memory_from_conf)
{
	struct alloy_tensor *t;
	int64_t n;

	test_set_conf("max_keep_on_shrink_memory:16");
	ck_assert_uint_eq(alloy_tensor_max_keep_on_shrink_memory(), 16);
	t = tensor1(100);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	n = 96; /* 16 bytes unused: kept */
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 400);
	n = 95; /* 20 bytes unused: freed */
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 0);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(policy_set_at_run_time)
{
	struct alloy_tensor *t = tensor1(100);
	int64_t n = 50;

	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	alloy_tensor_set_keep_on_shrink(false);
	ck_assert(!alloy_tensor_keep_on_shrink());
	ck_assert_str_eq(alloy_conf_get("keep_on_shrink"), "false");
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 0);

	alloy_tensor_set_keep_on_shrink(true);
	alloy_tensor_set_max_keep_on_shrink_memory(100);
	ck_assert_uint_eq(alloy_tensor_max_keep_on_shrink_memory(), 100);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	n = 30; /* 80 bytes unused <= 100: kept */
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 200);
	n = 20; /* 120 > 100: freed */
	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 0);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(reshape_keeps_storage)
{
	int64_t d1[] = { 5, 6 }, d2[] = { 3, 10 }, bad[] = { 3, 4 };
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, d1, 2);
	void *p = alloy_tensor_raw_mutable_data(t, FLOAT);

	ck_assert_ok(alloy_tensor_reshape(t, d2, 2));
	ck_assert_int_eq(alloy_tensor_dim(t, 0), 3);
	ck_assert_int_eq(alloy_tensor_dim(t, 1), 10);
	ck_assert_ptr_eq(alloy_tensor_raw_data(t), p);
	ck_assert_int_eq(alloy_tensor_reshape(t, bad, 2), -EINVAL);
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_tensor_reshape: new numel 12 != current numel 30 (use resize)");
	ck_assert_int_eq(alloy_tensor_dim(t, 0), 3);
	bad[0] = -3;
	ck_assert_int_eq(alloy_tensor_reshape(t, bad, 2), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "-3"));
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(resize_like_copies_dims)
{
	int64_t d[] = { 4, 5, 6 };
	struct alloy_tensor *a = alloy_tensor_new_dims(ALLOY_CPU, d, 3);
	struct alloy_tensor *b = alloy_tensor_new(ALLOY_CPU);
	struct alloy_tensor *u = alloy_tensor_new(ALLOY_CPU);

	ck_assert_ok(alloy_tensor_resize_like(b, a));
	ck_assert_int_eq(alloy_tensor_ndim(b), 3);
	ck_assert_int_eq(alloy_tensor_numel(b), 120);
	ck_assert_mem_eq(alloy_tensor_dims(b), d, sizeof(d));
	ck_assert_int_eq(alloy_tensor_resize_like(b, u), -EINVAL);
	alloy_tensor_unref(a);
	alloy_tensor_unref(b);
	alloy_tensor_unref(u);
}
END_TEST

START_TEST(bad_dims_are_refused)
{
	struct alloy_tensor *t = tensor1(7);
	int64_t neg[] = { 2, -1 }, big[] = { INT64_MAX / 2, 4 };
	int64_t bytes_ovf = INT64_MAX / 2;
	int64_t many[ALLOY_TENSOR_MAX_DIMS + 1] = { 0 };

	ck_assert_int_eq(alloy_tensor_resize(t, neg, 2), -EINVAL);
	ck_assert_str_eq(alloy_last_error(),
			 "alloy_tensor_resize: dim 1 is -1; dims must be >= 0");
	ck_assert_int_eq(alloy_tensor_resize(t, big, 2), -EOVERFLOW);
	ck_assert(strstr(alloy_last_error(), "overflows at dim 1"));
	ck_assert_int_eq(
		alloy_tensor_resize(t, many, ALLOY_TENSOR_MAX_DIMS + 1),
		-EINVAL);
	ck_assert_int_eq(alloy_tensor_resize(t, NULL, 2), -EINVAL);
	ck_assert_int_eq(alloy_tensor_numel(t), 7);
	/* numel x itemsize overflows once the type is known. */
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, DOUBLE));
	ck_assert_int_eq(alloy_tensor_resize(t, &bytes_ovf, 1), -EOVERFLOW);
	ck_assert(strstr(alloy_last_error(), "itemsize 8 (double) overflows"));
	ck_assert_int_eq(alloy_tensor_numel(t), 7);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 56);
	/* Without a type the dims are fine; the type then cannot fit. */
	alloy_tensor_unref(t);
	t = alloy_tensor_new_dims(ALLOY_CPU, &bytes_ovf, 1);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_null(alloy_tensor_raw_mutable_data(t, DOUBLE));
	ck_assert_int_eq(alloy_tensor_resize(NULL, neg, 1), -EINVAL);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(scalar_and_zero_size)
{
	struct test_alloc ta;
	struct alloy_tensor *s = alloy_tensor_new_dims(ALLOY_CPU, NULL, 0);
	int64_t zd[] = { 0, 5 };
	struct alloy_tensor *z;
	double *d;

	use_test_alloc(&ta, "t_scalar");
	ck_assert_int_eq(alloy_tensor_ndim(s), 0);
	ck_assert_int_eq(alloy_tensor_numel(s), 1);
	d = alloy_tensor_raw_mutable_data(s, DOUBLE);
	ck_assert_ptr_nonnull(d);
	*d = 2.5;
	ck_assert_uint_eq(ta.last_size, 8);
	ck_assert_int_eq(alloy_tensor_dim(s, 0), -EINVAL);

	z = alloy_tensor_new_dims(ALLOY_CPU, zd, 2);
	ck_assert_int_eq(alloy_tensor_numel(z), 0);
	/* Any non-NULL pointer will do, and nothing is allocated. */
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(z, FLOAT));
	ck_assert_ptr_nonnull(alloy_tensor_raw_data(z));
	ck_assert_ptr_nonnull(alloy_tensor_data(z, FLOAT));
	ck_assert_int_eq(ta.allocs, 1);
	ck_assert_uint_eq(alloy_tensor_nbytes(z), 0);
	alloy_tensor_unref(s);
	alloy_tensor_unref(z);
}
END_TEST

START_TEST(dims_and_dim32)
{
	int64_t d[] = { 3, (int64_t)INT32_MAX + 1, 7 };
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, d, 3);
	int32_t v = 0;

	ck_assert_int_eq(alloy_tensor_dim(t, -1), 7);
	ck_assert_int_eq(alloy_tensor_dim(t, -3), 3);
	ck_assert_int_eq(alloy_tensor_dim(t, 3), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "dim index 3 is outside -3..2"));
	ck_assert_int_eq(alloy_tensor_dim(t, -4), -EINVAL);
	ck_assert_ok(alloy_tensor_dim32(t, 2, &v));
	ck_assert_int_eq(v, 7);
	ck_assert_int_eq(alloy_tensor_dim32(t, 1, &v), -ERANGE);
	ck_assert(strstr(alloy_last_error(), "2147483648"));
	ck_assert_int_eq(v, 7);
	ck_assert_int_eq(alloy_tensor_dim32(t, 5, &v), -EINVAL);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(typed_data_checks_the_type)
{
	struct alloy_tensor *t = tensor1(4);

	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_ptr_null(alloy_tensor_data(t, DOUBLE));
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_tensor_data: tensor holds float while caller expects double");
	ck_assert_ptr_nonnull(alloy_tensor_data(t, FLOAT));
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(pod_type_change_reuses_the_buffer)
{
	struct test_alloc ta;
	struct alloy_tensor *t;
	int32_t *i;
	float *f;

	use_test_alloc(&ta, "t_pod");
	t = tensor1(16);
	i = alloy_tensor_raw_mutable_data(t, INT32);
	f = alloy_tensor_raw_mutable_data(t, FLOAT);
	ck_assert_ptr_eq((void *)f, (void *)i);
	ck_assert_ptr_eq(alloy_tensor_dtype(t), FLOAT);
	ck_assert_int_eq(ta.allocs, 1);
	/* A bigger type needs a bigger buffer. */
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, DOUBLE));
	ck_assert_int_eq(ta.allocs, 2);
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 128);
	/* A smaller one fits in what is there. */
	ck_assert_ptr_nonnull(
		alloy_tensor_raw_mutable_data(t, alloy_type(ALLOY_TYPE_INT8)));
	ck_assert_int_eq(ta.allocs, 2);
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(non_pod_elements_through_typemeta)
{
	const struct alloy_type_meta *c = counted_type();
	struct test_alloc ta;
	struct alloy_tensor *t;
	struct counted *e;
	void *f;

	use_test_alloc(&ta, "t_nonpod");
	t = tensor1(4);
	f = alloy_tensor_raw_mutable_data(t, FLOAT);
	/* POD -> non-POD: a new buffer with constructed elements. */
	e = alloy_tensor_raw_mutable_data(t, c);
	ck_assert_int_eq(counted_stats.ctors, 4);
	ck_assert_uint_eq(e[3].magic, COUNTED_MAGIC);
	ck_assert_int_eq(ta.allocs, 2);
	ck_assert_int_eq(ta.frees, 1);
	(void)f;
	/* Same type again: nothing happens. */
	ck_assert_ptr_eq(alloy_tensor_raw_mutable_data(t, c), e);
	ck_assert_int_eq(counted_stats.ctors, 4);
	/* non-POD -> POD: destroyed, never reused even though it fits. */
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_int_eq(counted_stats.dtors, 4);
	ck_assert_int_eq(ta.allocs, 3);
	/* Resizing a non-POD tensor destroys exactly what was built. */
	e = alloy_tensor_raw_mutable_data(t, c);
	int64_t n = 10;

	ck_assert_ok(alloy_tensor_resize(t, &n, 1));
	ck_assert_int_eq(counted_stats.dtors, 8);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, c));
	ck_assert_int_eq(counted_stats.ctors, 18);
	alloy_tensor_unref(t);
	ck_assert_int_eq(counted_stats.dtors, 18);
	ck_assert_int_eq(counted_stats.bad_dtors, 0);
	ck_assert_int_eq(ta.allocs, ta.frees);
}
END_TEST

START_TEST(string_tensor)
{
	struct alloy_tensor *t = tensor1(3);
	char **s =
		alloy_tensor_raw_mutable_data(t, alloy_type(ALLOY_TYPE_STRING));

	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_null(s[0]);
	s[0] = strdup("alpha");
	s[2] = strdup("gamma");
	/* Freed by the type's dtor when the tensor goes (ASan/valgrind). */
	alloy_tensor_unref(t);
}
END_TEST

START_TEST(free_memory)
{
	struct test_alloc ta;
	struct alloy_tensor *t, *u;

	use_test_alloc(&ta, "t_freemem");
	t = tensor1(8);
	u = tensor1(8);
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_ok(alloy_tensor_free_memory(t));
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_uint_eq(alloy_tensor_capacity_nbytes(t), 0);
	ck_assert_int_eq(alloy_tensor_numel(t), 8);
	ck_assert_ptr_eq(alloy_tensor_dtype(t), FLOAT);
	/* Shared: the other user keeps the buffer. */
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, FLOAT));
	ck_assert_ok(alloy_tensor_share_data(u, t));
	ck_assert_ok(alloy_tensor_free_memory(t));
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_ptr_nonnull(alloy_tensor_raw_data(u));
	ck_assert_ptr_null(alloy_tensor_raw_data(t));
	ck_assert_int_eq(alloy_tensor_free_memory(NULL), -EINVAL);
	alloy_tensor_unref(t);
	alloy_tensor_unref(u);
	ck_assert_int_eq(ta.frees, 2);
}
END_TEST

START_TEST(debug_string)
{
	int64_t d[] = { 2, 3 };
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, d, 2);
	char buf[256], tiny[8];

	alloy_tensor_debug_string(t, buf, sizeof(buf));
	ck_assert_str_eq(
		buf,
		"Tensor (undefined) [2, 3] numel=6 cpu:0 capacity=0 storage_refs=1");
	alloy_tensor_raw_mutable_data(t, FLOAT);
	alloy_tensor_debug_string(t, buf, sizeof(buf));
	ck_assert_str_eq(
		buf,
		"Tensor float [2, 3] numel=6 cpu:0 capacity=24 storage_refs=1 allocator=default");
	ck_assert_int_eq(alloy_tensor_debug_string(t, tiny, sizeof(tiny)),
			 (int)strlen(buf));
	ck_assert_str_eq(tiny, "Tensor ");
	alloy_tensor_unref(t);
}
END_TEST

Suite *suite_tensor(void)
{
	Suite *s = suite_create("tensor");
	TCase *tc = tcase_create("tensor");

	tcase_add_test(tc, new_tensor_is_uninitialised);
	tcase_add_test(tc, allocation_is_lazy);
	tcase_add_test(tc, allocates_from_the_default_of_that_moment);
	tcase_add_test(tc, allocators_picked_at_run_time);
	tcase_add_test(tc, allocators_picked_at_run_time_reported);
	tcase_add_test(tc, shrink_keeps_the_buffer_by_default);
	tcase_add_test(tc, keep_on_shrink_off_from_conf);
	tcase_add_test(tc, max_keep_on_shrink_memory_from_conf);
	tcase_add_test(tc, policy_set_at_run_time);
	tcase_add_test(tc, reshape_keeps_storage);
	tcase_add_test(tc, resize_like_copies_dims);
	tcase_add_test(tc, bad_dims_are_refused);
	tcase_add_test(tc, scalar_and_zero_size);
	tcase_add_test(tc, dims_and_dim32);
	tcase_add_test(tc, typed_data_checks_the_type);
	tcase_add_test(tc, pod_type_change_reuses_the_buffer);
	tcase_add_test(tc, non_pod_elements_through_typemeta);
	tcase_add_test(tc, string_tensor);
	tcase_add_test(tc, free_memory);
	tcase_add_test(tc, debug_string);
	suite_add_tcase(s, tc);
	return s;
}
