// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_registry.c - registering, finding, defaults, hot swap, and
 * all of it from several threads at once.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

START_TEST(register_find_unregister)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "t_one");

	ck_assert_ptr_eq(alloy_find_allocator("t_one"), a);
	ck_assert_str_eq(alloy_allocator_name(a), "t_one");
	ck_assert_str_eq(alloy_allocator_origin(a), "test");
	ck_assert_int_eq(alloy_allocator_device_type(a), ALLOY_DEVICE_CPU);
	ck_assert_ok(alloy_unregister_allocator("t_one"));
	ck_assert_ptr_null(alloy_find_allocator("t_one"));
	ck_assert(strstr(alloy_last_error(), "t_one"));
	ck_assert_int_eq(alloy_unregister_allocator("t_one"), -ENOENT);
}
END_TEST

START_TEST(duplicate_name_is_eexist)
{
	struct test_alloc ta, tb;
	struct alloy_allocator_ops ops = test_alloc_ops("t_dup");

	test_alloc_register(&ta, "t_dup");
	ck_assert_int_eq(alloy_register_allocator(&ops, &tb, NULL, NULL),
			 -EEXIST);
	ck_assert(strstr(alloy_last_error(), "t_dup"));
	ops.name = "default";
	ck_assert_int_eq(alloy_register_allocator(&ops, &tb, NULL, NULL),
			 -EEXIST);
}
END_TEST

/* Each way of getting the ops wrong is -EINVAL with its own message. */
START_TEST(bad_ops_are_einval)
{
	struct test_alloc ta;
	struct alloy_allocator_ops ops;

	test_alloc_register(&ta, "t_base");
	ops = test_alloc_ops("t_bad");
	ops.alloc = NULL;
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, NULL, NULL),
			 -EINVAL);
	ck_assert(strstr(alloy_last_error(), "alloc is NULL"));

	ops = test_alloc_ops("t_bad");
	ops.free = NULL;
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, NULL, NULL),
			 -EINVAL);
	ck_assert(strstr(alloy_last_error(), "free is NULL"));

	ops = test_alloc_ops("t_bad");
	ops.abi_major = ALLOY_ABI_MAJOR + 1;
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, NULL, NULL),
			 -EINVAL);
	ck_assert(strstr(alloy_last_error(), "ABI major"));

	ops = test_alloc_ops("t_bad");
	ops.struct_size = 8;
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, NULL, NULL),
			 -EINVAL);
	ck_assert(strstr(alloy_last_error(), "struct_size 8"));

	ops = test_alloc_ops("t bad");
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, NULL, NULL),
			 -EINVAL);
	ops = test_alloc_ops(NULL);
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, NULL, NULL),
			 -EINVAL);
	ops = test_alloc_ops("t_bad");
	ops.device_type = 99;
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(alloy_register_allocator(NULL, &ta, NULL, NULL),
			 -EINVAL);
	ck_assert_ptr_null(alloy_find_allocator("t_bad"));
}
END_TEST

/* A provider built for an older minor: its struct ends after `free`. */
START_TEST(older_minor_struct_is_accepted)
{
	struct test_alloc ta = { .id = 77 };
	struct alloy_allocator_ops ops = test_alloc_ops("t_old");
	struct alloy_allocator *a;
	struct alloy_data_ptr dp;

	ops.struct_size =
		offsetof(struct alloy_allocator_ops, free) + sizeof(ops.free);
	ops.abi_minor = 0;
	/* Garbage past the provider's struct must be ignored. */
	ops.trim = (long long (*)(void *))1;
	ck_assert_ok(alloy_register_allocator(&ops, &ta, NULL, &a));
	ck_assert_ptr_null(alloy_allocator_ops(a)->trim);
	ck_assert_int_eq(alloy_allocator_trim(a), 0);
	ck_assert_ok(alloy_alloc(a, 100, 0, 0, &dp));
	ck_assert_uint_eq(alloy_allocator_usable_size(a, dp.ptr, 100), 100);
	ck_assert_ok(alloy_data_ptr_realloc(&dp, 1000)); /* fallback */
	ck_assert_uint_eq(dp.size, 1000);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(ta.allocs, 2);
	ck_assert_int_eq(ta.frees, 2);
}
END_TEST

static int failing_init(void *ctx)
{
	(void)ctx;
	return -EIO;
}

START_TEST(init_failure_refuses_registration)
{
	struct alloy_allocator_ops ops = test_alloc_ops("t_init");
	struct test_alloc ta;

	ops.init = failing_init;
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, NULL, NULL), -EIO);
	ck_assert(strstr(alloy_last_error(), "t_init"));
	ck_assert_ptr_null(alloy_find_allocator("t_init"));
}
END_TEST

START_TEST(live_blocks_make_unregister_ebusy)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "t_busy");
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(a, 10, 0, 0, &dp));
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 1);
	ck_assert_int_eq(alloy_allocator_live_bytes(a), 10);
	ck_assert_int_eq(alloy_unregister_allocator("t_busy"), -EBUSY);
	ck_assert(strstr(alloy_last_error(), "1 live block"));
	/* Still usable after the refused unregister. */
	struct alloy_data_ptr dp2;

	ck_assert_ok(alloy_alloc(a, 20, 0, 0, &dp2));
	alloy_data_ptr_free(&dp2);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_ok(alloy_unregister_allocator("t_busy"));
}
END_TEST

START_TEST(default_cannot_be_unregistered)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "t_def");

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	ck_assert_int_eq(alloy_unregister_allocator("t_def"), -EBUSY);
	ck_assert(strstr(alloy_last_error(), "default for cpu"));
	ck_assert_ok(alloy_set_default_by_name(ALLOY_DEVICE_CPU, "default"));
	ck_assert_ok(alloy_unregister_allocator("t_def"));
}
END_TEST

START_TEST(set_default_checks_device)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "t_dev");

	ck_assert_int_eq(alloy_set_default(ALLOY_DEVICE_CUDA, a), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "serves cpu, not cuda"));
	ck_assert_int_eq(alloy_set_default(42, a), -EINVAL);
	ck_assert_int_eq(alloy_set_default_by_name(ALLOY_DEVICE_CPU, "nope"),
			 -ENOENT);
	ck_assert_ptr_null(alloy_get_default(-1));
}
END_TEST

/* The heart of hot swap: a block goes back to its maker. */
START_TEST(block_returns_to_its_maker_after_swap)
{
	struct test_alloc ta, tb;
	struct alloy_allocator *a = test_alloc_register(&ta, "t_a");
	struct alloy_allocator *b = test_alloc_register(&tb, "t_b");
	struct alloy_data_ptr x, y;

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	ck_assert_ok(alloy_context_new(ALLOY_CPU, 128, &x));
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, b));
	ck_assert_ok(alloy_context_new(ALLOY_CPU, 256, &y));
	ck_assert_ptr_eq(alloy_data_ptr_allocator(&x), a);
	ck_assert_ptr_eq(alloy_data_ptr_allocator(&y), b);
	alloy_data_ptr_free(&x);
	alloy_data_ptr_free(&y);
	ck_assert_int_eq(ta.allocs, 1);
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_int_eq(tb.allocs, 1);
	ck_assert_int_eq(tb.frees, 1);
	ck_assert_int_eq(ta.bad_frees + tb.bad_frees, 0);
	ck_assert_ptr_null(x.ptr);
}
END_TEST

static int collect(struct alloy_allocator *a, void *arg)
{
	char *names = arg;

	strcat(names, alloy_allocator_name(a));
	strcat(names, " ");
	return 0;
}

static int stop_at_second(struct alloy_allocator *a, void *arg)
{
	int *n = arg;

	(void)a;
	return ++*n == 2 ? 42 : 0;
}

static int count_one(struct alloy_allocator *a, void *arg)
{
	(void)a;
	++*(int *)arg;
	return 0;
}

START_TEST(list_in_registration_order)
{
	struct test_alloc ta, tb;
	char names[512] = "";
	int n = 0;

	test_alloc_register(&ta, "t_first");
	test_alloc_register(&tb, "t_second");
	alloy_foreach_allocator(collect, names);
	/* The built-ins come first, "default" before any other. */
	ck_assert_msg(strncmp(names, "default ", 8) == 0 &&
			      strstr(names, " t_first t_second "),
		      "%s", names);
	ck_assert_int_eq(alloy_foreach_allocator(stop_at_second, &n), 42);
}
END_TEST

START_TEST(slots_are_bounded_and_reused)
{
	static struct test_alloc many[ALLOY_MAX_ALLOCATORS];
	struct alloy_allocator_ops ops;
	char name[32];
	int registered = 0, rc = 0, builtins = 0;

	alloy_foreach_allocator(count_one, &builtins);
	for (int i = 0; i < ALLOY_MAX_ALLOCATORS && rc == 0; i++) {
		snprintf(name, sizeof(name), "t_many%d", i);
		ops = test_alloc_ops(name);
		rc = alloy_register_allocator(&ops, &many[i], NULL, NULL);
		registered += rc == 0;
	}
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_eq(registered, ALLOY_MAX_ALLOCATORS - builtins);
	ck_assert_ok(alloy_unregister_allocator("t_many3"));
	ops = test_alloc_ops("t_again");
	ck_assert_ok(alloy_register_allocator(&ops, &many[3], NULL, NULL));
}
END_TEST

START_TEST(size_limits)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(d, 0, 0, 0, &dp));
	ck_assert_ptr_null(dp.ptr);
	alloy_data_ptr_free(&dp); /* frees nothing */
	ck_assert_int_eq(alloy_alloc(d, SIZE_MAX, 0, 0, &dp), -EOVERFLOW);
	ck_assert(strstr(alloy_last_error(), "exceeds"));
	ck_assert_int_eq(alloy_alloc(d, SIZE_MAX - 63, 64, 0, &dp), -EOVERFLOW);
	ck_assert_int_eq(alloy_alloc(d, (size_t)1 << 62, 0, 0, &dp), -ENOMEM);
	ck_assert(strstr(alloy_last_error(), "could not allocate"));
	ck_assert_ptr_null(dp.ptr);
	ck_assert_int_eq(alloy_alloc(NULL, 8, 0, 0, &dp), -EINVAL);
	ck_assert_int_eq(alloy_alloc(d, 8, 0, 0, NULL), -EINVAL);
	ck_assert_int_eq(alloy_alloc_default(7, 8, 0, &dp), -EINVAL);
	ck_assert_int_eq(alloy_allocator_live_blocks(d), 0);
}
END_TEST

/* The first device type without a default, or -1. */
static int device_without_default(void)
{
	for (int d = 0; d < ALLOY_DEVICE_TYPE_COUNT; d++)
		if (!alloy_get_default(d))
			return d;
	return -1;
}

/*
 * The fast paths of alloy_alloc_default and alloy_malloc take no branch
 * for a device without a default, nor clear the error mark in a store of
 * their own (kernel/alloc.c): what they must still get right.  A device
 * without a default is -ENODEV with an empty DataPtr, and the registry
 * still says it has none; an allocator that refuses gives -ENOMEM (and
 * ENOMEM for the plain API) with nothing counted, and the message carries
 * an explanation only when the allocator gave one in that call - not an
 * error left by an earlier call.
 */
START_TEST(default_path_failures)
{
	struct alloy_allocator *old = alloy_get_default(ALLOY_DEVICE_CPU), *a;
	struct alloy_fail_config plan = { .nth = 1 };
	struct alloy_data_ptr dp;
	struct test_alloc ta;
	int none = device_without_default();

	ck_assert_msg(none > ALLOY_DEVICE_CPU, "every device has a default");
	memset(&dp, 0x5a, sizeof(dp));
	ck_assert_int_eq(alloy_alloc_default(none, 64, 0, &dp), -ENODEV);
	ck_assert_ptr_null(dp.ptr);
	ck_assert_ptr_null(dp.ctx);
	ck_assert_ptr_null((void *)dp.deleter);
	ck_assert_msg(strstr(alloy_last_error(), "no default allocator"), "%s",
		      alloy_last_error());
	ck_assert_ptr_null(alloy_get_default(none));
	if (none == ALLOY_DEVICE_CUDA_HOST) {
		errno = 0;
		ck_assert_ptr_null(alloy_malloc_on(none, 64, 0, 0));
		ck_assert_int_eq(errno, ENODEV);
	}

	a = test_alloc_register(&ta, "t_refuses");
	atomic_store(&ta.fail_from, 1);
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	/* An error of another call, just before. */
	ck_assert_int_eq(alloy_set_default(ALLOY_DEVICE_TYPE_COUNT, a),
			 -EINVAL);
	ck_assert_int_eq(alloy_alloc_default(ALLOY_DEVICE_CPU, 24, 0, &dp),
			 -ENOMEM);
	ck_assert_ptr_null(dp.ptr);
	ck_assert_msg(
		strstr(alloy_last_error(),
		       "allocator \"t_refuses\" could not allocate 24 bytes") &&
			!strstr(alloy_last_error(), "unknown device type"),
		"%s", alloy_last_error());
	ck_assert_int_eq(alloy_set_default(ALLOY_DEVICE_TYPE_COUNT, a),
			 -EINVAL);
	errno = 0;
	ck_assert_ptr_null(alloy_malloc(24));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_msg(
		strstr(alloy_last_error(), "could not allocate 24 bytes") &&
			!strstr(alloy_last_error(), "unknown device type"),
		"%s", alloy_last_error());
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_int_eq(ta.allocs, 0);

	/* The fail allocator explains itself: that is kept. */
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU,
				       alloy_find_allocator("fail")));
	ck_assert_int_eq(alloy_alloc_default(ALLOY_DEVICE_CPU, 24, 0, &dp),
			 -ENOMEM);
	ck_assert_msg(strstr(alloy_last_error(), "failed as planned"), "%s",
		      alloy_last_error());

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, old));
	ck_assert_ok(alloy_unregister_allocator("t_refuses"));
}
END_TEST

/*
 * The three ways into the default path - the header's inline wrapper, the
 * function itself, and liballoy 1.0's header entry that binaries built
 * then still call - give the same block and the same refusal.
 */
START_TEST(default_entries_agree)
{
	struct test_alloc ta;
	struct alloy_allocator *old = alloy_get_default(ALLOY_DEVICE_CPU);
	struct alloy_allocator *a = test_alloc_register(&ta, "t_entries");
	struct alloy_data_ptr dp[3];

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CPU, 40, 0, &dp[0]));
	ck_assert_ok((alloy_alloc_default)(ALLOY_DEVICE_CPU, 40, 0, &dp[1]));
	ck_assert_ok(alloy__alloc_default_checked(ALLOY_DEVICE_CPU, 40, &dp[2],
						  ALLOY_ALLOC_ZERO));
	for (int i = 0; i < 3; i++) {
		ck_assert_ptr_nonnull(dp[i].ptr);
		ck_assert_ptr_eq(dp[i].ctx, a);
		ck_assert_uint_eq(dp[i].size, 40);
		ck_assert_uint_eq(dp[i].align, ta.last_align);
	}
	ck_assert_uint_eq(ta.last_flags, ALLOY_ALLOC_ZERO);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 3);
	ck_assert_int_eq(ta.allocs, 3);
	for (int i = 0; i < 3; i++)
		alloy_data_ptr_free(&dp[i]);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_int_eq(ta.bad_frees, 0);

	atomic_store(&ta.fail_from, 1);
	ck_assert_int_eq((alloy_alloc_default)(ALLOY_DEVICE_CPU, 40, 0, &dp[1]),
			 -ENOMEM);
	ck_assert_int_eq(
		alloy__alloc_default_checked(ALLOY_DEVICE_CPU, 40, &dp[2], 0),
		-ENOMEM);
	ck_assert_ptr_null(dp[1].ptr);
	ck_assert_ptr_null(dp[2].ctx);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, old));
	ck_assert_ok(alloy_unregister_allocator("t_entries"));
}
END_TEST

/*
 * alloy_alloc's alignment: 0 is the configured one, under a pointer's
 * size is rounded up to it, and anything not a power of two or over
 * ALLOY_ALIGN_MAX is refused by name.
 */
START_TEST(alignment_rules)
{
	struct alloy_allocator *d = alloy_find_allocator("default");
	static const size_t kept[] = { 8, 16, 64, 4096, 1 << 16 };
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(d, 100, 0, 0, &dp));
	ck_assert_uint_eq(dp.align, alloy_conf_align());
	ck_assert_uint_eq((uintptr_t)dp.ptr % dp.align, 0);
	alloy_data_ptr_free(&dp);
	for (size_t a = 1; a < sizeof(void *); a *= 2) {
		ck_assert_ok(alloy_alloc(d, 100, a, 0, &dp));
		ck_assert_uint_eq(dp.align, sizeof(void *));
		alloy_data_ptr_free(&dp);
	}
	for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
		ck_assert_ok(alloy_alloc(d, 100, kept[i], 0, &dp));
		ck_assert_uint_eq(dp.align, kept[i]);
		ck_assert_uint_eq((uintptr_t)dp.ptr % kept[i], 0);
		ck_assert_ptr_eq(alloy_data_ptr_allocator(&dp), d);
		alloy_data_ptr_free(&dp);
	}
	ck_assert_int_eq(alloy_alloc(d, 100, 48, 0, &dp), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "alignment 48 is not a power"));
	ck_assert_ptr_null(dp.ptr);
	ck_assert_int_eq(alloy_alloc(d, 100, ALLOY_ALIGN_MAX * 2, 0, &dp),
			 -EINVAL);
	ck_assert(strstr(alloy_last_error(), "is larger than"));
	ck_assert_int_eq(alloy_allocator_live_blocks(d), 0);
}
END_TEST

START_TEST(stats_fallback_counts)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "t_stats");
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	struct alloy_data_ptr dp[3];

	for (int i = 0; i < 3; i++)
		ck_assert_ok(alloy_alloc(a, 100 * (i + 1), 0, 0, &dp[i]));
	alloy_data_ptr_free(&dp[1]);
	ck_assert_ok(alloy_allocator_stats(a, &st));
	ck_assert_uint_eq(st.allocated, 400);
	ck_assert_uint_eq(st.num_allocs, 3);
	ck_assert_uint_eq(st.num_frees, 1);
	/* An old caller's smaller struct gets only what fits. */
	struct {
		uint32_t size, version;
		uint64_t allocated;
	} small = { sizeof(small), 1, 0 };
	ck_assert_ok(alloy_allocator_stats(
		a, (struct alloy_allocator_stats *)&small));
	ck_assert_uint_eq(small.allocated, 400);
	st.size = 4;
	ck_assert_int_eq(alloy_allocator_stats(a, &st), -EINVAL);
	alloy_data_ptr_free(&dp[0]);
	alloy_data_ptr_free(&dp[2]);
}
END_TEST

/* ---- concurrency ------------------------------------------------------ */

#define NSWAP	 4
#define NWORKERS 4
#define ITERS	 20000

static struct test_alloc swap_ta[NSWAP];
static struct alloy_allocator *swap_a[NSWAP];
static atomic_bool stop;

static void *worker(void *arg)
{
	struct alloy_data_ptr held[16] = { 0 };
	unsigned seed = (unsigned)(uintptr_t)arg;

	for (int i = 0; i < ITERS; i++) {
		int k = (int)(rand_r(&seed) % 16);

		alloy_data_ptr_free(&held[k]);
		if (alloy_context_new(ALLOY_CPU, 1 + rand_r(&seed) % 512,
				      &held[k]))
			ck_abort_msg("allocation failed: %s",
				     alloy_last_error());
		memset(held[k].ptr, k, held[k].size);
	}
	for (int k = 0; k < 16; k++)
		alloy_data_ptr_free(&held[k]);
	return NULL;
}

static void *swapper(void *arg)
{
	unsigned seed = 1;

	(void)arg;
	while (!atomic_load(&stop))
		alloy_set_default(ALLOY_DEVICE_CPU,
				  swap_a[rand_r(&seed) % NSWAP]);
	return NULL;
}

/* Register and unregister short-lived allocators all the while. */
static void *churner(void *arg)
{
	static struct test_alloc tmp[2];
	struct alloy_data_ptr dp;
	char name[32];
	long n = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		struct alloy_allocator_ops ops;
		struct alloy_allocator *a;
		int k = (int)(n++ % 2);

		snprintf(name, sizeof(name), "t_churn%d", k);
		ops = test_alloc_ops(name);
		tmp[k].id = 1000 + (unsigned)k;
		if (alloy_register_allocator(&ops, &tmp[k], NULL, &a))
			ck_abort_msg("churn register: %s", alloy_last_error());
		if (alloy_alloc(a, 64, 0, 0, &dp))
			ck_abort_msg("churn alloc: %s", alloy_last_error());
		if (alloy_unregister_allocator(name) != -EBUSY)
			ck_abort_msg("unregister with a live block succeeded");
		alloy_data_ptr_free(&dp);
		if (alloy_unregister_allocator(name))
			ck_abort_msg("churn unregister: %s",
				     alloy_last_error());
	}
	return NULL;
}

START_TEST(concurrent_register_swap_alloc_free)
{
	pthread_t w[NWORKERS], s, c;
	long allocs = 0, frees = 0;

	for (int i = 0; i < NSWAP; i++) {
		char name[16];

		snprintf(name, sizeof(name), "t_swap%d", i);
		swap_a[i] = test_alloc_register(&swap_ta[i], name);
	}
	pthread_create(&s, NULL, swapper, NULL);
	pthread_create(&c, NULL, churner, NULL);
	for (int i = 0; i < NWORKERS; i++)
		pthread_create(&w[i], NULL, worker, (void *)(uintptr_t)(i + 1));
	for (int i = 0; i < NWORKERS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&stop, true);
	pthread_join(s, NULL);
	pthread_join(c, NULL);
	for (int i = 0; i < NSWAP; i++) {
		allocs += swap_ta[i].allocs;
		frees += swap_ta[i].frees;
		ck_assert_int_eq(swap_ta[i].bad_frees, 0);
		ck_assert_int_eq(swap_ta[i].allocs, swap_ta[i].frees);
		ck_assert_int_eq(alloy_allocator_live_blocks(swap_a[i]), 0);
		ck_assert_int_eq(alloy_allocator_live_bytes(swap_a[i]), 0);
	}
	/* Every allocation went to one of the swapped allocators or default. */
	struct alloy_allocator *d = alloy_find_allocator("default");
	struct alloy_allocator_stats st = { .size = sizeof(st), .version = 1 };

	ck_assert_ok(alloy_allocator_stats(d, &st));
	ck_assert_int_eq(allocs + (long)st.num_allocs, NWORKERS * ITERS);
	ck_assert_int_eq(frees + (long)st.num_frees, NWORKERS * ITERS);
	ck_assert_int_eq(alloy_allocator_live_blocks(d), 0);
}
END_TEST

/*
 * An allocator's init and fini may call the registry (they run outside
 * its lock); meanwhile the allocator's name is taken but not findable,
 * and an allocation through its handle is refused, counting nothing.
 */
static struct alloy_allocator *seen_in_init, *self_in_init, *self_handle;
static long long default_live_in_fini = -1, self_live_in_fini = -1;
static int self_alloc_in_fini;
static char self_error_in_fini[256];

static int calling_init(void *ctx)
{
	(void)ctx;
	seen_in_init = alloy_find_allocator("default");
	self_in_init = alloy_find_allocator("t_calls");
	return 0;
}

static void calling_fini(void *ctx)
{
	struct alloy_data_ptr dp;

	(void)ctx;
	default_live_in_fini =
		alloy_allocator_live_blocks(alloy_find_allocator("default"));
	self_alloc_in_fini = alloy_alloc(self_handle, 64, 64, 0, &dp);
	snprintf(self_error_in_fini, sizeof(self_error_in_fini), "%s",
		 alloy_last_error());
	self_live_in_fini = alloy_allocator_live_blocks(self_handle);
}

START_TEST(init_and_fini_may_call_the_registry)
{
	struct alloy_allocator_ops ops = test_alloc_ops("t_calls");
	static struct test_alloc ta;
	struct alloy_allocator *a;

	ops.init = calling_init;
	ops.fini = calling_fini;
	ck_assert_ok(alloy_register_allocator(&ops, &ta, NULL, &a));
	ck_assert_ptr_eq(seen_in_init, alloy_find_allocator("default"));
	ck_assert_ptr_null(self_in_init);
	self_handle = a;
	ck_assert_ok(alloy_unregister_allocator("t_calls"));
	ck_assert_int_eq(default_live_in_fini, 0);
	ck_assert_int_eq(self_alloc_in_fini, -ENODEV);
	ck_assert_msg(strstr(self_error_in_fini, "is being unregistered"), "%s",
		      self_error_in_fini);
	ck_assert_int_eq(self_live_in_fini, 0);
}
END_TEST

/*
 * Issue 15, item 2: while the previous default is being unregistered, an
 * allocation made through the default must be served by the default in
 * force, never refused with "is being unregistered".
 */
#define UNLOAD_CYCLES 20000

static atomic_bool unload_done;
static atomic_long unload_refused;

static void *allocate_through_default(void *arg)
{
	struct alloy_data_ptr dp;

	(void)arg;
	while (!atomic_load(&unload_done)) {
		if (alloy_alloc_default(ALLOY_DEVICE_CPU, 64, 0, &dp)) {
			if (atomic_fetch_add(&unload_refused, 1) == 0)
				fprintf(stderr, "refused: %s\n",
					alloy_last_error());
			continue;
		}
		alloy_data_ptr_free(&dp);
	}
	return NULL;
}

START_TEST(default_served_while_previous_unregisters)
{
	static struct test_alloc ta;
	struct alloy_allocator *d = alloy_find_allocator("default");
	struct alloy_allocator_ops ops = test_alloc_ops("t_unload");
	pthread_t w[3];
	long busy = 0;

	for (int i = 0; i < 3; i++)
		pthread_create(&w[i], NULL, allocate_through_default, NULL);
	for (int i = 0; i < UNLOAD_CYCLES; i++) {
		struct alloy_allocator *a;
		int rc;

		ck_assert_ok(alloy_register_allocator(&ops, &ta, NULL, &a));
		ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
		ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, d));
		/* Blocks the workers still hold make it busy: try again. */
		while ((rc = alloy_unregister_allocator("t_unload")) == -EBUSY)
			busy++;
		ck_assert_msg(rc == 0, "%s", alloy_last_error());
	}
	atomic_store(&unload_done, true);
	for (int i = 0; i < 3; i++)
		pthread_join(w[i], NULL);
	ck_assert_int_eq(atomic_load(&unload_refused), 0);
	ck_assert_int_eq(ta.allocs, ta.frees);
	ck_assert_int_eq(ta.bad_frees, 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(d), 0);
	(void)busy;
}
END_TEST

Suite *suite_registry(void)
{
	Suite *s = suite_create("registry");
	TCase *tc = tcase_create("api");

	tcase_add_test(tc, register_find_unregister);
	tcase_add_test(tc, duplicate_name_is_eexist);
	tcase_add_test(tc, bad_ops_are_einval);
	tcase_add_test(tc, older_minor_struct_is_accepted);
	tcase_add_test(tc, init_failure_refuses_registration);
	tcase_add_test(tc, live_blocks_make_unregister_ebusy);
	tcase_add_test(tc, default_cannot_be_unregistered);
	tcase_add_test(tc, set_default_checks_device);
	tcase_add_test(tc, block_returns_to_its_maker_after_swap);
	tcase_add_test(tc, list_in_registration_order);
	tcase_add_test(tc, slots_are_bounded_and_reused);
	tcase_add_test(tc, size_limits);
	tcase_add_test(tc, default_path_failures);
	tcase_add_test(tc, default_entries_agree);
	tcase_add_test(tc, alignment_rules);
	tcase_add_test(tc, stats_fallback_counts);
	tcase_add_test(tc, init_and_fini_may_call_the_registry);
	suite_add_tcase(s, tc);

	tc = tcase_create("threads");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, concurrent_register_swap_alloc_free);
	tcase_add_test(tc, default_served_while_previous_unregisters);
	suite_add_tcase(s, tc);
	return s;
}
