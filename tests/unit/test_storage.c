// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_storage.c - reference-counted buffers.
 */
#include <pthread.h>
#include <string.h>

#include "tensorutil.h"

START_TEST(refcount_and_unique)
{
	struct alloy_storage *s = alloy_storage_new(ALLOY_CPU, NULL);

	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_null(alloy_storage_data(s));
	ck_assert_uint_eq(alloy_storage_capacity(s), 0);
	ck_assert_int_eq(alloy_storage_use_count(s), 1);
	ck_assert(alloy_storage_unique(s));
	ck_assert_ptr_eq(alloy_storage_ref(s), s);
	ck_assert_int_eq(alloy_storage_use_count(s), 2);
	ck_assert(!alloy_storage_unique(s));
	alloy_storage_unref(s);
	ck_assert(alloy_storage_unique(s));
	alloy_storage_unref(s);
	alloy_storage_unref(NULL);
	ck_assert_ptr_null(alloy_storage_ref(NULL));
	ck_assert_ptr_null(
		alloy_storage_new((struct alloy_device){ 42, 0 }, NULL));
	ck_assert(strstr(alloy_last_error(), "42"));
	ck_assert_ptr_null(alloy_storage_new(
		(struct alloy_device){ ALLOY_DEVICE_CPU, 7 }, NULL));
	ck_assert_str_eq(
		alloy_last_error(),
		"alloy_storage_new: the CPU is one device, index 0, not 7");
	ck_assert_ptr_null(
		alloy_tensor_new((struct alloy_device){ ALLOY_DEVICE_CPU, 1 }));
}
END_TEST

START_TEST(allocates_through_the_context)
{
	struct test_alloc ta;
	struct alloy_allocator *a = use_test_alloc(&ta, "t_st");
	struct alloy_storage *s = alloy_storage_new(ALLOY_CPU, NULL);

	ck_assert_ok(
		alloy_storage_allocate(s, alloy_type(ALLOY_TYPE_FLOAT), 10));
	ck_assert_int_eq(ta.allocs, 1);
	ck_assert_uint_eq(ta.last_size, 40);
	ck_assert_uint_eq(alloy_storage_capacity(s), 40);
	ck_assert_ptr_eq(alloy_storage_dtype(s), alloy_type(ALLOY_TYPE_FLOAT));
	ck_assert_ptr_eq(alloy_data_ptr_allocator(alloy_storage_data_ptr(s)),
			 a);
	memset(alloy_storage_data(s), 1, 40);
	/* A new buffer replaces the old one, which goes back first. */
	ck_assert_ok(
		alloy_storage_allocate(s, alloy_type(ALLOY_TYPE_DOUBLE), 3));
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_uint_eq(alloy_storage_capacity(s), 24);
	alloy_storage_reset(s);
	ck_assert_int_eq(ta.frees, 2);
	ck_assert_ptr_null(alloy_storage_data(s));
	ck_assert_ptr_eq(alloy_storage_dtype(s), alloy_type(ALLOY_TYPE_DOUBLE));
	ck_assert_ok(alloy_storage_allocate(s, alloy_type(ALLOY_TYPE_INT8), 5));
	alloy_storage_ref(s);
	alloy_storage_unref(s);
	ck_assert_int_eq(ta.frees, 2);
	alloy_storage_unref(s);
	ck_assert_int_eq(ta.frees, 3);
	ck_assert_int_eq(ta.bad_frees, 0);
}
END_TEST

START_TEST(non_pod_elements_are_constructed_and_destroyed)
{
	const struct alloy_type_meta *c = counted_type();
	struct alloy_storage *s = alloy_storage_new(ALLOY_CPU, NULL);
	struct counted *e;

	ck_assert_ok(alloy_storage_allocate(s, c, 5));
	ck_assert_int_eq(counted_stats.ctors, 5);
	e = alloy_storage_data(s);
	ck_assert_uint_eq(e[4].magic, COUNTED_MAGIC);
	alloy_storage_reset(s);
	ck_assert_int_eq(counted_stats.dtors, 5);
	ck_assert_ok(alloy_storage_allocate(s, c, 3));
	alloy_storage_unref(s);
	ck_assert_int_eq(counted_stats.dtors, 8);
	ck_assert_int_eq(counted_stats.bad_dtors, 0);
}
END_TEST

START_TEST(allocation_failures_leave_it_empty)
{
	struct test_alloc ta;
	struct alloy_storage *s = alloy_storage_new(ALLOY_CPU, NULL);
	struct alloy_storage *cuda = alloy_storage_new(
		(struct alloy_device){ ALLOY_DEVICE_CUDA, 0 }, NULL);

	use_test_alloc(&ta, "t_stf");
	ck_assert_int_eq(alloy_storage_allocate(s, alloy_type(ALLOY_TYPE_INT64),
						SIZE_MAX / 4),
			 -EOVERFLOW);
	ck_assert(strstr(alloy_last_error(), "itemsize 8"));
	ta.fail_from = 1;
	ck_assert_int_eq(
		alloy_storage_allocate(s, alloy_type(ALLOY_TYPE_FLOAT), 4),
		-ENOMEM);
	ck_assert_ptr_null(alloy_storage_data(s));
	ck_assert_uint_eq(alloy_storage_capacity(s), 0);
	ta.fail_from = 0;
	counted_type();
	counted_stats.fail_ctor = 1;
	ck_assert_int_eq(alloy_storage_allocate(s, counted_type(), 4), -ENOMEM);
	ck_assert(strstr(alloy_last_error(),
			 "constructing 4 elements of counted"));
	ck_assert_int_eq(ta.frees, ta.allocs);
	ck_assert_int_eq(alloy_storage_allocate(s, NULL, 4), -EINVAL);
	/* Device memory cannot hold objects the CPU must construct. */
	ck_assert_int_eq(
		alloy_storage_allocate(cuda, alloy_type(ALLOY_TYPE_STRING), 2),
		-EINVAL);
	ck_assert(strstr(alloy_last_error(), "string cannot live in cuda"));
	alloy_storage_unref(s);
	alloy_storage_unref(cuda);
}
END_TEST

static int deleted;
static void *deleted_ptr, *deleted_ctx;

static void count_delete(struct alloy_data_ptr *dp)
{
	deleted++;
	deleted_ptr = dp->ptr;
	deleted_ctx = dp->ctx;
}

START_TEST(external_memory)
{
	static float mem[16];
	int cookie;
	struct alloy_storage *s;

	s = alloy_storage_new_external(mem, sizeof(mem), ALLOY_CPU,
				       alloy_type(ALLOY_TYPE_FLOAT),
				       count_delete, &cookie);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_eq(alloy_storage_data(s), mem);
	ck_assert_uint_eq(alloy_storage_capacity(s), sizeof(mem));
	ck_assert_ptr_null(alloy_data_ptr_allocator(alloy_storage_data_ptr(s)));
	alloy_storage_ref(s);
	alloy_storage_unref(s);
	ck_assert_int_eq(deleted, 0);
	alloy_storage_unref(s);
	ck_assert_int_eq(deleted, 1);
	ck_assert_ptr_eq(deleted_ptr, mem);
	ck_assert_ptr_eq(deleted_ctx, &cookie);

	/* No deleter: the caller keeps ownership. */
	s = alloy_storage_new_external(mem, sizeof(mem), ALLOY_CPU,
				       alloy_type(ALLOY_TYPE_FLOAT), NULL,
				       NULL);
	alloy_storage_unref(s);
	ck_assert_int_eq(deleted, 1);

	ck_assert_ptr_null(alloy_storage_new_external(mem, 4, ALLOY_CPU, NULL,
						      NULL, NULL));
	ck_assert(strstr(alloy_last_error(), "needs an element type"));

	/* In place, only when nobody else uses the storage. */
	s = alloy_storage_new(ALLOY_CPU, NULL);
	alloy_storage_ref(s);
	ck_assert_int_eq(alloy_storage_share_external(
				 s, mem, 8, alloy_type(ALLOY_TYPE_INT8),
				 count_delete, NULL),
			 -EBUSY);
	ck_assert(strstr(alloy_last_error(), "2 users"));
	alloy_storage_unref(s);
	ck_assert_ok(alloy_storage_share_external(
		s, mem, 8, alloy_type(ALLOY_TYPE_INT8), count_delete, NULL));
	alloy_storage_reset(s);
	ck_assert_int_eq(deleted, 2);
	alloy_storage_unref(s);
}
END_TEST

#define REF_THREADS 4
#define REF_ROUNDS  100000

static void *ref_worker(void *arg)
{
	struct alloy_storage *s = arg;

	for (int i = 0; i < REF_ROUNDS; i++) {
		alloy_storage_ref(s);
		alloy_storage_unref(s);
	}
	/* Each thread leaves holding one more reference. */
	alloy_storage_ref(s);
	return NULL;
}

/* Counts are atomic: racing refs and unrefs lose nothing. */
START_TEST(refcount_is_atomic)
{
	struct test_alloc ta;
	struct alloy_storage *s = alloy_storage_new(ALLOY_CPU, NULL);
	pthread_t th[REF_THREADS];

	use_test_alloc(&ta, "t_refs");
	ck_assert_ok(
		alloy_storage_allocate(s, alloy_type(ALLOY_TYPE_INT8), 64));
	for (int i = 0; i < REF_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, ref_worker, s),
				 0);
	for (int i = 0; i < REF_THREADS; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_eq(alloy_storage_use_count(s), 1 + REF_THREADS);
	for (int i = 0; i < REF_THREADS; i++)
		alloy_storage_unref(s);
	ck_assert(alloy_storage_unique(s));
	ck_assert_int_eq(ta.frees, 0);
	alloy_storage_unref(s);
	ck_assert_int_eq(ta.frees, 1);
}
END_TEST

Suite *suite_storage(void)
{
	Suite *s = suite_create("storage");
	TCase *tc = tcase_create("storage");

	tcase_add_test(tc, refcount_and_unique);
	tcase_add_test(tc, allocates_through_the_context);
	tcase_add_test(tc, non_pod_elements_are_constructed_and_destroyed);
	tcase_add_test(tc, allocation_failures_leave_it_empty);
	tcase_add_test(tc, external_memory);
	tcase_add_test(tc, refcount_is_atomic);
	suite_add_tcase(s, tc);
	return s;
}
