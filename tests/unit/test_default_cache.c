// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_default_cache.c - the default allocator's per-thread cache
 * of direct blocks of 1033-2056 bytes (allocators/default_cache.h): a
 * freed block comes back to its thread, each size keeps at most its depth
 * of blocks, the stats count cached bytes as reserved, trim and thread
 * exit give them back, a fork child drops the gone threads' caches,
 * ALLOY_ALLOC_ZERO clears a reused block, and "default.thread_cache" sets the
 * depth or turns the cache off.
 *
 * Sizes here are requests at alignment 16 (direct blocks).  glibc makes a
 * request of n bytes a chunk of (n + 8) rounded up to 16, which holds
 * that less 8: a 1040-byte block is a 1056-byte chunk holding 1048 bytes,
 * a 2000-byte one a 2016-byte chunk holding 2008.
 */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/sanitizer.h"
#include "testutil.h"

#define HOLDS_1040 1048
#define HOLDS_2000 2008
#define DEPTH	   7

static struct alloy_allocator *dflt(void)
{
	return alloy_find_allocator("default");
}

/* Bytes the default allocator holds beyond its live blocks. */
static uint64_t cached(void)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };

	ck_assert_ok(alloy_allocator_stats(dflt(), &st));
	return st.reserved - st.allocated;
}

/* n blocks of size made and then freed by the calling thread. */
static void churn(size_t size, int n)
{
	struct alloy_data_ptr dp[64];

	ck_assert_int_le(n, 64);
	for (int i = 0; i < n; i++)
		ck_assert_ok(alloy_alloc(dflt(), size, 16, 0, &dp[i]));
	for (int i = 0; i < n; i++)
		alloy_data_ptr_free(&dp[i]);
}

#ifdef ALLOY_SANITIZER_OWNS_MALLOC
/* The sanitizer must see every free: the cache keeps nothing. */
START_TEST(cache_is_off_under_a_sanitizer)
{
	ck_assert_int_ge(alloy_allocator_trim(dflt()), 0);
	churn(1040, 10);
	ck_assert_uint_eq(cached(), 0);
}
END_TEST
#else
START_TEST(freed_block_comes_back_to_its_thread)
{
	struct alloy_data_ptr dp;
	void *first;

	ck_assert_int_ge(alloy_allocator_trim(dflt()), 0);
	ck_assert_uint_eq(cached(), 0);
	ck_assert_ok(alloy_alloc(dflt(), 1040, 16, 0, &dp));
	first = dp.ptr;
	alloy_data_ptr_free(&dp);
	ck_assert_uint_eq(cached(), HOLDS_1040);
	/*
	 * Any request of the same chunk size takes it, and may use all of
	 * it: under valgrind (scripts/reliability.sh), whose malloc does not
	 * round up as glibc's does, the memset checks that the cache makes
	 * its blocks at the bin's full size.
	 */
	for (int i = 0; i < 100; i++) {
		ck_assert_ok(alloy_alloc(dflt(), 1033 + i % 16, 16, 0, &dp));
		ck_assert_ptr_eq(dp.ptr, first);
		ck_assert_uint_eq(cached(), 0);
		memset(dp.ptr, 0x5a, dp.size);
		alloy_data_ptr_free(&dp);
	}
	ck_assert_int_eq(alloy_allocator_trim(dflt()), HOLDS_1040);
	ck_assert_uint_eq(cached(), 0);
	ck_assert_int_eq(alloy_allocator_trim(dflt()), 0);
}
END_TEST

/* Each size keeps its depth of blocks; the rest go back to glibc. */
START_TEST(each_size_keeps_at_most_its_depth)
{
	ck_assert_int_ge(alloy_allocator_trim(dflt()), 0);
	churn(1040, 20);
	ck_assert_uint_eq(cached(), DEPTH * HOLDS_1040);
	churn(2000, 3);
	ck_assert_uint_eq(cached(), DEPTH * HOLDS_1040 + 3 * HOLDS_2000);
	ck_assert_int_eq(alloy_allocator_trim(dflt()),
			 DEPTH * HOLDS_1040 + 3 * HOLDS_2000);
}
END_TEST

/* Below glibc's own cache's limit and past 2056 bytes: not kept. */
START_TEST(other_sizes_are_not_kept)
{
	static const size_t sizes[] = { 16, 1000, 1032, 2057, 4096, 100000 };

	ck_assert_int_ge(alloy_allocator_trim(dflt()), 0);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		churn(sizes[i], 4);
		ck_assert_uint_eq(cached(), 0);
	}
	/* Nor a block carved at a larger alignment. */
	{
		struct alloy_data_ptr dp;

		ck_assert_ok(alloy_alloc(dflt(), 1040, 64, 0, &dp));
		alloy_data_ptr_free(&dp);
		ck_assert_uint_eq(cached(), 0);
	}
}
END_TEST

START_TEST(zero_flag_clears_a_reused_block)
{
	struct alloy_data_ptr dp;
	void *first;

	ck_assert_ok(alloy_alloc(dflt(), 1500, 16, 0, &dp));
	first = dp.ptr;
	memset(dp.ptr, 0xff, dp.size);
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_alloc(dflt(), 1500, 16, ALLOY_ALLOC_ZERO, &dp));
	ck_assert_ptr_eq(dp.ptr, first);
	for (size_t i = 0; i < dp.size; i++)
		ck_assert_uint_eq(((unsigned char *)dp.ptr)[i], 0);
	alloy_data_ptr_free(&dp);
}
END_TEST

static void *churn_thread(void *arg)
{
	(void)arg;
	churn(1040, 5);
	churn(2000, 5);
	return NULL;
}

/* A thread's cache goes back to glibc when the thread exits. */
START_TEST(thread_exit_gives_the_cache_back)
{
	pthread_t th[4];

	ck_assert_int_ge(alloy_allocator_trim(dflt()), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, churn_thread, NULL), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_join(th[i], NULL), 0);
	ck_assert_uint_eq(cached(), 0);
	/* The next thread reuses a record and its (empty) cache. */
	ck_assert_int_eq(pthread_create(&th[0], NULL, churn_thread, NULL), 0);
	ck_assert_int_eq(pthread_join(th[0], NULL), 0);
	ck_assert_uint_eq(cached(), 0);
}
END_TEST

static pthread_barrier_t cached_and_forked;

static void *cache_and_wait(void *arg)
{
	(void)arg;
	churn(1040, 3);
	pthread_barrier_wait(&cached_and_forked); /* cached */
	pthread_barrier_wait(&cached_and_forked); /* forked */
	return NULL;
}

/*
 * In a fork child the other threads are gone: their caches are dropped
 * there (not counted), while the parent's thread keeps its own.
 */
START_TEST(fork_child_drops_the_caches_of_gone_threads)
{
	pthread_t th;
	pid_t pid;
	int status;

	ck_assert_int_ge(alloy_allocator_trim(dflt()), 0);
	pthread_barrier_init(&cached_and_forked, NULL, 2);
	ck_assert_int_eq(pthread_create(&th, NULL, cache_and_wait, NULL), 0);
	pthread_barrier_wait(&cached_and_forked);
	ck_assert_uint_eq(cached(), 3 * HOLDS_1040);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(cached() == 0 ? 0 : 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_uint_eq(cached(), 3 * HOLDS_1040);
	pthread_barrier_wait(&cached_and_forked);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_uint_eq(cached(), 0);
	pthread_barrier_destroy(&cached_and_forked);
}
END_TEST

START_TEST(written_after_free_is_not_handed_out)
{
	test_check_bad_link(dflt(), 1040, 16);
}
END_TEST

START_TEST(thread_cache_option_sets_the_depth)
{
	const struct alloy_allocator_ops *ops;

	test_set_conf("default.thread_cache:2");
	ck_assert_int_eq(alloy_init(), 0);
	churn(1040, 5);
	ck_assert_uint_eq(cached(), 2 * HOLDS_1040);
	ck_assert_int_eq(alloy_allocator_trim(dflt()), 2 * HOLDS_1040);
	ops = alloy_allocator_ops(dflt());
	ck_assert_ok(ops->set_option(alloy_allocator_ctx(dflt()),
				     "thread_cache", "0"));
	churn(1040, 5);
	ck_assert_uint_eq(cached(), 0);
}
END_TEST
#endif

START_TEST(bad_thread_cache_is_reported)
{
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(dflt());
	void *ctx = alloy_allocator_ctx(dflt());

	ck_assert_int_eq(ops->set_option(ctx, "thread_cache", "256"), -ERANGE);
	ck_assert_msg(strstr(alloy_last_error(), "thread_cache \"256\""),
		      "message: %s", alloy_last_error());
	ck_assert_int_eq(ops->set_option(ctx, "thread_cache", "some"), -ERANGE);
	ck_assert_int_eq(ops->set_option(ctx, "thread_cache", "-1"), -ERANGE);
	ck_assert_ok(ops->set_option(ctx, "thread_cache", "255"));
}
END_TEST

Suite *suite_default_cache(void)
{
	Suite *s = suite_create("default_cache");
	TCase *tc = tcase_create("default_cache");

#ifdef ALLOY_SANITIZER_OWNS_MALLOC
	tcase_add_test(tc, cache_is_off_under_a_sanitizer);
#else
	tcase_add_test(tc, freed_block_comes_back_to_its_thread);
	tcase_add_test(tc, each_size_keeps_at_most_its_depth);
	tcase_add_test(tc, other_sizes_are_not_kept);
	tcase_add_test(tc, zero_flag_clears_a_reused_block);
	tcase_add_test(tc, thread_exit_gives_the_cache_back);
	tcase_add_test(tc, fork_child_drops_the_caches_of_gone_threads);
	tcase_add_test(tc, written_after_free_is_not_handed_out);
	tcase_add_test(tc, thread_cache_option_sets_the_depth);
#endif
	tcase_add_test(tc, bad_thread_cache_is_reported);
	suite_add_tcase(s, tc);
	return s;
}
