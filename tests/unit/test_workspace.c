// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_workspace.c - named blobs, sorted, thread-safe.
 */
#include <pthread.h>
#include <string.h>

#include "tensorutil.h"

START_TEST(create_get_has_remove)
{
	struct alloy_workspace *ws = alloy_workspace_new();
	struct alloy_blob *b = alloy_workspace_create_blob(ws, "data");

	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_eq(alloy_workspace_create_blob(ws, "data"),
			 b); /* idempotent */
	ck_assert_uint_eq(alloy_workspace_size(ws), 1);
	ck_assert(alloy_workspace_has_blob(ws, "data"));
	ck_assert(!alloy_workspace_has_blob(ws, "label"));
	ck_assert_ptr_eq(alloy_workspace_get_blob(ws, "data"), b);
	ck_assert_ptr_null(alloy_workspace_get_blob(ws, "label"));
	ck_assert_str_eq(alloy_last_error(),
			 "alloy_workspace_get_blob: no blob named \"label\"");
	ck_assert_ok(alloy_workspace_remove_blob(ws, "data"));
	ck_assert(!alloy_workspace_has_blob(ws, "data"));
	ck_assert_int_eq(alloy_workspace_remove_blob(ws, "data"), -ENOENT);
	ck_assert(strstr(alloy_last_error(), "\"data\""));
	ck_assert_ptr_null(alloy_workspace_create_blob(ws, ""));
	ck_assert(strstr(alloy_last_error(), "empty"));
	ck_assert_ptr_null(alloy_workspace_create_blob(ws, NULL));
	ck_assert_ptr_null(alloy_workspace_create_blob(NULL, "x"));
	ck_assert_uint_eq(alloy_workspace_size(ws), 0);
	alloy_workspace_free(ws);
	alloy_workspace_free(NULL);
}
END_TEST

START_TEST(list_is_sorted)
{
	static const char *const in[] = { "fc1_w", "data",    "conv1_b",
					  "label", "conv1_w", "fc1_b" };
	static const char *const want[] = { "conv1_b", "conv1_w", "data",
					    "fc1_b",   "fc1_w",	  "label" };
	struct alloy_workspace *ws = alloy_workspace_new();
	char **names;

	for (size_t i = 0; i < 6; i++)
		ck_assert_ptr_nonnull(alloy_workspace_create_blob(ws, in[i]));
	ck_assert_int_eq(alloy_workspace_list(ws, &names), 6);
	for (size_t i = 0; i < 6; i++)
		ck_assert_str_eq(names[i], want[i]);
	ck_assert_ptr_null(names[6]);
	free(names);
	ck_assert_ok(alloy_workspace_remove_blob(ws, "data"));
	ck_assert_int_eq(alloy_workspace_list(ws, &names), 5);
	ck_assert_str_eq(names[2], "fc1_b");
	free(names);
	ck_assert_int_eq(alloy_workspace_list(ws, NULL), -EINVAL);
	alloy_workspace_free(ws);
}
END_TEST

START_TEST(free_releases_every_blob)
{
	struct test_alloc ta;
	struct alloy_workspace *ws = alloy_workspace_new();
	const struct alloy_type_meta *c = counted_type();
	int64_t n = 8;
	char name[16];

	use_test_alloc(&ta, "t_ws");
	for (int i = 0; i < 10; i++) {
		struct alloy_tensor *t;

		snprintf(name, sizeof(name), "t%d", i);
		t = alloy_blob_get_mutable_tensor(
			alloy_workspace_create_blob(ws, name), ALLOY_CPU);
		ck_assert_ok(alloy_tensor_resize(t, &n, 1));
		ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(
			t, alloy_type(ALLOY_TYPE_FLOAT)));
	}
	alloy_blob_get_mutable(alloy_workspace_create_blob(ws, "obj"), c, NULL);
	ck_assert_int_eq(ta.allocs, 10);
	ck_assert_ok(alloy_workspace_remove_blob(ws, "t3"));
	ck_assert_int_eq(ta.frees, 1);
	alloy_workspace_free(ws);
	ck_assert_int_eq(ta.frees, 10);
	ck_assert_int_eq(counted_stats.dtors, 1);
}
END_TEST

#define NTHREADS 4
#define NNAMES	 500

static struct alloy_workspace *shared_ws;

static void *worker(void *arg)
{
	long id = (long)arg;
	char name[32];

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < NNAMES; i++) {
			struct alloy_blob *b;

			/* Every thread also hits the common names. */
			snprintf(name, sizeof(name), "%s%d",
				 i % 2 ? "common" : "own",
				 i % 2 ? i : (int)id * NNAMES + i);
			b = alloy_workspace_create_blob(shared_ws, name);
			if (!b || !alloy_workspace_has_blob(shared_ws, name))
				return (void *)1;
		}
		for (int i = 0; i < NNAMES; i += 2) {
			snprintf(name, sizeof(name), "own%d",
				 (int)id * NNAMES + i);
			if (round < 3 &&
			    alloy_workspace_remove_blob(shared_ws, name))
				return (void *)1;
		}
	}
	return NULL;
}

START_TEST(thread_safe)
{
	pthread_t th[NTHREADS];
	char **names;
	long n;

	shared_ws = alloy_workspace_new();
	for (long i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, worker, (void *)i), 0);
	for (int i = 0; i < NTHREADS; i++) {
		void *rc;

		pthread_join(th[i], &rc);
		ck_assert_ptr_null(rc);
	}
	/* NNAMES/2 common names plus each thread's last round of own. */
	n = alloy_workspace_list(shared_ws, &names);
	ck_assert_int_eq(n, NNAMES / 2 + NTHREADS * NNAMES / 2);
	for (long i = 1; i < n; i++)
		ck_assert_int_lt(strcmp(names[i - 1], names[i]), 0);
	free(names);
	alloy_workspace_free(shared_ws);
}
END_TEST

Suite *suite_workspace(void)
{
	Suite *s = suite_create("workspace");
	TCase *tc = tcase_create("workspace");

	tcase_add_test(tc, create_get_has_remove);
	tcase_add_test(tc, list_is_sorted);
	tcase_add_test(tc, free_releases_every_blob);
	tcase_add_test(tc, thread_safe);
	suite_add_tcase(s, tc);
	return s;
}
