// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_owner.c - owner labels (alloy/owner.h): nesting, the limits
 * and what a refused push leaves, labels per thread and threads that come
 * and go, and the labels blocks carry into the reporter, workspace blobs'
 * names included.
 */
#include <pthread.h>
#include <string.h>

#include "testutil.h"

START_TEST(labels_nest_with_slashes)
{
	ck_assert_ptr_null(alloy_owner_current());
	ck_assert_ok(alloy_owner_push("layer3"));
	ck_assert_str_eq(alloy_owner_current(), "layer3");
	ck_assert_ok(alloy_owner_push("conv"));
	ck_assert_str_eq(alloy_owner_current(), "layer3/conv");
	ck_assert_ok(alloy_owner_pop());
	ck_assert_str_eq(alloy_owner_current(), "layer3");
	ck_assert_ok(alloy_owner_push("bn"));
	ck_assert_str_eq(alloy_owner_current(), "layer3/bn");
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ptr_null(alloy_owner_current());
	ck_assert_int_eq(alloy_owner_pop(), -ENOENT);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "no owner label"));
}
END_TEST

START_TEST(bad_labels_are_refused_and_change_nothing)
{
	char long_label[ALLOY_OWNER_MAX + 2];

	ck_assert_ok(alloy_owner_push("a"));
	ck_assert_int_eq(alloy_owner_push(NULL), -EINVAL);
	ck_assert_int_eq(alloy_owner_push(""), -EINVAL);
	ck_assert_int_eq(alloy_owner_push("bad\nlabel"), -EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "control character"));
	ck_assert_str_eq(alloy_owner_current(), "a");
	/* "a/" + 253 bytes is 255: fits; one more does not. */
	memset(long_label, 'x', sizeof(long_label));
	long_label[ALLOY_OWNER_MAX - 1] = '\0';
	ck_assert_int_eq(alloy_owner_push(long_label), -ENAMETOOLONG);
	ck_assert_str_eq(alloy_owner_current(), "a");
	long_label[ALLOY_OWNER_MAX - 2] = '\0';
	ck_assert_ok(alloy_owner_push(long_label));
	ck_assert_int_eq((int)strlen(alloy_owner_current()), ALLOY_OWNER_MAX);
	ck_assert_ok(alloy_owner_pop());
	/* Depth: 32 in force at most. */
	for (int i = 1; i < ALLOY_OWNER_DEPTH; i++)
		ck_assert_ok(alloy_owner_push("d"));
	ck_assert_int_eq(alloy_owner_push("d"), -E2BIG);
	for (int i = 0; i < ALLOY_OWNER_DEPTH; i++)
		ck_assert_ok(alloy_owner_pop());
	ck_assert_ptr_null(alloy_owner_current());
}
END_TEST

struct thread_arg {
	const char *label;
	int rounds;
	bool ok;
};

static void *labelling_thread(void *p)
{
	struct thread_arg *a = p;
	char want[64];

	a->ok = alloy_owner_current() == NULL;
	for (int i = 0; i < a->rounds && a->ok; i++) {
		snprintf(want, sizeof(want), "%s/%d", a->label, i);
		a->ok = !alloy_owner_push(a->label) &&
			!alloy_owner_push(want + strlen(a->label) + 1) &&
			!strcmp(alloy_owner_current(), want) &&
			!alloy_owner_pop() && !alloy_owner_pop() &&
			!alloy_owner_current();
	}
	/* Left pushed: a new thread never inherits it. */
	alloy_owner_push(a->label);
	return NULL;
}

START_TEST(labels_belong_to_their_thread)
{
	static const char *const names[] = { "t0", "t1", "t2", "t3" };

	ck_assert_ok(alloy_owner_push("main"));
	/* Many short threads: states of gone threads are taken again. */
	for (int round = 0; round < 50; round++) {
		struct thread_arg a[4];
		pthread_t th[4];

		for (int i = 0; i < 4; i++) {
			a[i] = (struct thread_arg){ names[i], 20, false };
			ck_assert_int_eq(pthread_create(&th[i], NULL,
							labelling_thread,
							&a[i]),
					 0);
		}
		for (int i = 0; i < 4; i++) {
			pthread_join(th[i], NULL);
			ck_assert_msg(a[i].ok, "thread %s saw wrong labels",
				      names[i]);
		}
	}
	ck_assert_str_eq(alloy_owner_current(), "main");
	ck_assert_ok(alloy_owner_pop());
}
END_TEST

static void append(void *arg, const char *s)
{
	strncat(arg, s, 65535 - strlen(arg));
}

START_TEST(blocks_carry_their_owner_into_the_report)
{
	static char text[65536];
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "own_rep");
	struct alloy_data_ptr dp[3];
	struct alloy_workspace *ws;
	struct alloy_tensor *t;
	int64_t dims[] = { 100 };

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_owner_push("net"));
	ck_assert_ok(alloy_owner_push("fc"));
	ck_assert_ok(alloy_alloc(a, 111, 0, 0, &dp[0]));
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(alloy_alloc(a, 222, 0, 0, &dp[1]));
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(alloy_alloc(a, 333, 0, 0, &dp[2]));
	/* A workspace blob's tensor: owned by the blob's name, nested. */
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	ws = alloy_workspace_new();
	ck_assert_ok(alloy_owner_push("net"));
	t = alloy_blob_get_mutable_tensor(alloy_workspace_create_blob(ws, "w1"),
					  ALLOY_CPU);
	ck_assert_ptr_nonnull(t);
	ck_assert_ok(alloy_tensor_resize(t, dims, 1));
	ck_assert_ptr_nonnull(
		alloy_tensor_raw_mutable_data(t, alloy_type(ALLOY_TYPE_FLOAT)));
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(
		alloy_reporter_print(append, text, ALLOY_REPORT_TEXT, true));
	ck_assert_msg(
		strstr(text,
		       "111 bytes from own_rep (cpu:0) owned by net/fc\n"),
		"%s", text);
	ck_assert_ptr_nonnull(
		strstr(text, "222 bytes from own_rep (cpu:0) owned by net\n"));
	ck_assert_ptr_nonnull(strstr(text, "333 bytes from own_rep (cpu:0)\n"));
	ck_assert_ptr_nonnull(strstr(
		text, "400 bytes from own_rep (cpu:0) owned by net/w1\n"));
	alloy_workspace_free(ws);
	for (int i = 0; i < 3; i++)
		alloy_data_ptr_free(&dp[i]);
}
END_TEST

Suite *suite_owner(void)
{
	Suite *s = suite_create("owner");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, labels_nest_with_slashes);
	tcase_add_test(tc, bad_labels_are_refused_and_change_nothing);
	tcase_add_test(tc, labels_belong_to_their_thread);
	tcase_add_test(tc, blocks_carry_their_owner_into_the_report);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
