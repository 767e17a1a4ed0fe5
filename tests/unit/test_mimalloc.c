// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_mimalloc.c - the mimalloc module, loaded by name from the
 * build tree: it serves cpu:mimalloc with the asked alignment, reports
 * mimalloc's figures, and leaves the process's malloc alone.
 */
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "backendutil.h"

#ifdef ALLOY_HAVE_MIMALLOC
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <mimalloc.h>

#include "modules/modtcache.h"

#define MODULE ALLOY_BUILD_DIR "/.libs/alloy_mimalloc.so"

static struct alloy_allocator *mimalloc_default_conf(const char *conf)
{
	struct alloy_allocator *a;
	char want[4096], got[4096];

	test_set_conf(conf);
	ck_assert_int_eq(alloy_init(), 0);
	a = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_str_eq(alloy_allocator_name(a), "mimalloc");
	ck_assert_ptr_nonnull(realpath(MODULE, want));
	ck_assert_ptr_nonnull(realpath(alloy_allocator_origin(a), got));
	ck_assert_str_eq(got, want);
	return a;
}

static struct alloy_allocator *mimalloc_default(void)
{
	return mimalloc_default_conf("cpu:mimalloc");
}

/*
 * Without the thread cache, for the probe below: every free reaches
 * mimalloc at once (the cache has tests of its own).
 */
static struct alloy_allocator *mimalloc_uncached(void)
{
	return mimalloc_default_conf(
		"cpu:mimalloc,mimalloc.thread_cache:0,mimalloc.cache:0");
}

/* Made in this thread's mimalloc heap. */
static bool mimalloc_owns(void *p, size_t size)
{
	(void)size;
	return mi_check_owned(p);
}

static bool count_block(const mi_heap_t *heap, const mi_heap_area_t *area,
			void *block, size_t block_size, void *arg)
{
	(void)heap;
	(void)area;
	(void)block_size;
	if (block)
		++*(long long *)arg;
	return true;
}

/* Blocks in use in this thread's heap, the thread's cache counted. */
static long long mimalloc_in_use(void)
{
	long long n = 0;

	/* It says false for a heap without pages, which holds nothing. */
	mi_heap_visit_blocks(mi_heap_get_default(), true, count_block, &n);
	return n;
}

/*
 * Blocks in use in this thread's heap once the thread's cache is given
 * back and mimalloc has taken in the frees other threads deferred to it
 * (trim does both): a missed free leaves one more.
 */
static long long mimalloc_held(void)
{
	ck_assert_int_ge(
		alloy_allocator_trim(alloy_get_default(ALLOY_DEVICE_CPU)), 0);
	return mimalloc_in_use();
}

/* A kept block is one block in use. */
static long long mimalloc_units(size_t class_bytes)
{
	(void)class_bytes;
	return 1;
}

static const struct backend_probe mimalloc_probe = {
	.owned = mimalloc_owns,
	.held = mimalloc_in_use,
	.units = mimalloc_units,
};

/* Both paths: mi_malloc where its block is aligned, mi_malloc_aligned. */
START_TEST(serves_with_alignment)
{
	backend_check_blocks(mimalloc_uncached(), &mimalloc_probe);
}
END_TEST

/* Grown and shrunk across both paths, the block keeps its alignment. */
START_TEST(realloc_between_paths)
{
	backend_check_realloc(mimalloc_uncached(), &mimalloc_probe);
}
END_TEST

/*
 * The cache's sizes at mimalloc's own alignment, with the cache on: a
 * dirty block freed, then a zeroed one of each size (the dirty one,
 * reused) is aligned, zero and mimalloc's; a block grown and shrunk
 * within the range keeps its bytes; trim gives everything back.
 */
START_TEST(thread_cache_sizes)
{
	struct alloy_allocator *a = mimalloc_default();
	long long base;
	struct alloy_data_ptr dp;

	backend_make_thread_cache(a);
	base = mimalloc_held();
	for (size_t align = 8; align <= 16; align *= 2) {
		for (size_t size = 20; size <= 2100; size++) {
			ck_assert_ok(alloy_alloc(a, size, align, 0, &dp));
			memset(dp.ptr, 0xa5, size);
			alloy_data_ptr_free(&dp);
			ck_assert_ok(alloy_alloc(a, size, align,
						 ALLOY_ALLOC_ZERO, &dp));
			ck_assert_uint_eq((uintptr_t)dp.ptr % align, 0);
			ck_assert(mi_check_owned(dp.ptr));
			ck_assert_uint_ge(
				alloy_allocator_usable_size(a, dp.ptr, size),
				size);
			ck_assert(backend_all_zero(dp.ptr, size));
			alloy_data_ptr_free(&dp);
		}
	}
	ck_assert_ok(alloy_alloc(a, 1030, 16, 0, &dp));
	memset(dp.ptr, 7, 1030);
	for (size_t size = 1030; size <= 2048; size += 37) {
		ck_assert_ok(alloy_data_ptr_realloc(&dp, size));
		ck_assert_int_eq(((char *)dp.ptr)[1029], 7);
	}
	for (size_t size = 2048; size >= 1030; size -= 53)
		ck_assert_ok(alloy_data_ptr_realloc(&dp, size));
	ck_assert_int_eq(((char *)dp.ptr)[1029], 7);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(mimalloc_held(), base);
}
END_TEST

START_TEST(never_the_process_malloc)
{
	struct alloy_allocator *a = mimalloc_default();
	Dl_info info;
	void *p = malloc(1000);

	(void)a;
	ck_assert(dladdr((void *)malloc, &info));
	/* glibc's, or ASan's in a sanitizer build; never mimalloc's. */
	ck_assert_msg(!strstr(info.dli_fname, "mimalloc"),
		      "malloc comes from %s", info.dli_fname);
	ck_assert(!mi_check_owned(p));
	free(p);
}
END_TEST

START_TEST(stats_and_realloc)
{
	struct alloy_allocator *a = mimalloc_default();
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(a, 100, 128, 0, &dp));
	memset(dp.ptr, 3, 100);
	ck_assert_ok(alloy_data_ptr_realloc(&dp, 16 << 20));
	ck_assert_uint_eq((uintptr_t)dp.ptr % 128, 0);
	ck_assert_int_eq(((char *)dp.ptr)[99], 3);
	ck_assert_ok(alloy_allocator_stats(a, &st));
	/* mimalloc's committed memory holds the 16 MiB block. */
	ck_assert_uint_ge(st.reserved, 16 << 20);
	ck_assert_uint_ge(st.peak_reserved, st.reserved);
	alloy_data_ptr_free(&dp);
	ck_assert_int_ge(alloy_allocator_trim(a), 0);
}
END_TEST

/*
 * The per-thread cache (modules/modtcache.h) under the plain-pointer
 * API: a freed 1040-byte block (a plain 1 KiB one) serves the next
 * request of its size class, at most 7 are kept, a reused block is zeroed
 * when asked, small blocks are kept from 33 bytes, and trim gives them
 * back.
 */
START_TEST(thread_cache_reuse_and_depth)
{
	struct alloy_allocator *a = mimalloc_default();
	long long base;
	unsigned char *p[10], *q;

	backend_make_thread_cache(a);
	base = mimalloc_held();

	p[0] = alloy_malloc(1024);
	ck_assert_ptr_nonnull(p[0]);
	memset(p[0], 0xee, 1024);
	alloy_free(p[0]);
	ck_assert_int_eq(mimalloc_in_use() - base, 1);
	/* 1100 + 16 bytes is the same class (1280): the same block. */
	q = alloy_calloc(1, 1100);
	ck_assert_ptr_eq(q, p[0]);
	for (size_t i = 0; i < 1100; i++)
		ck_assert_uint_eq(q[i], 0);
	alloy_free(q);

	for (int i = 0; i < 10; i++)
		ck_assert_ptr_nonnull(p[i] = alloy_malloc(1024));
	for (int i = 0; i < 10; i++)
		alloy_free(p[i]);
	ck_assert_int_eq(mimalloc_in_use() - base, MTCACHE_DEPTH_DEFAULT);
	/* 100 bytes are 116 with the header, class 128: kept. */
	alloy_free(alloy_malloc(100));
	ck_assert_int_eq(mimalloc_in_use() - base, MTCACHE_DEPTH_DEFAULT + 1);
	/* 8 bytes are 24, below the range: not kept. */
	alloy_free(alloy_malloc(8));
	ck_assert_int_eq(mimalloc_in_use() - base, MTCACHE_DEPTH_DEFAULT + 1);
	ck_assert_int_ge(alloy_allocator_trim(a), 0);
	ck_assert_int_eq(mimalloc_in_use(), base);
}
END_TEST

/*
 * The large cache (modules/modcache.h): a freed 300,000-byte block
 * serves the next request of its class (262,145-327,680 bytes), at most
 * 2 are kept per class, a zeroed request goes to mimalloc, trim gives
 * the kept ones back, cache:0 keeps nothing, a bad size is refused.
 */
START_TEST(large_cache_reuse_depth_and_trim)
{
	struct alloy_allocator *a = mimalloc_default();
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	long long base = mimalloc_held();
	struct alloy_data_ptr dp[3];
	void *first;

	ck_assert_ok(alloy_alloc(a, 300000, 64, 0, &dp[0]));
	first = dp[0].ptr;
	memset(first, 0x77, 300000);
	alloy_data_ptr_free(&dp[0]);
	ck_assert_int_eq(mimalloc_in_use() - base, 1);
	ck_assert_ok(alloy_alloc(a, 320000, 16, 0, &dp[0]));
	ck_assert_ptr_eq(dp[0].ptr, first);
	ck_assert_ok(alloy_alloc(a, 300000, 64, ALLOY_ALLOC_ZERO, &dp[1]));
	ck_assert_ptr_ne(dp[1].ptr, first);
	ck_assert(backend_all_zero(dp[1].ptr, 300000));
	ck_assert_ok(alloy_alloc(a, 300000, 64, 0, &dp[2]));
	for (int i = 0; i < 3; i++)
		alloy_data_ptr_free(&dp[i]);
	ck_assert_int_eq(mimalloc_in_use() - base, 2);
	ck_assert_int_eq(mimalloc_held(), base);

	ck_assert_ok(ops->set_option(ctx, "cache", "0"));
	ck_assert_ok(alloy_alloc(a, 300000, 64, 0, &dp[0]));
	alloy_data_ptr_free(&dp[0]);
	ck_assert_int_eq(mimalloc_in_use(), base);
	ck_assert_int_eq(ops->set_option(ctx, "cache", "lots"), -ERANGE);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "cache \"lots\""));
}
END_TEST

struct worker_blocks {
	void *p[3];
};

static void *free_blocks(void *arg)
{
	struct worker_blocks *w = arg;

	for (int i = 0; i < 3; i++)
		alloy_free(w->p[i]);
	return NULL;
}

/*
 * Blocks freed by a thread stay in its cache until it exits, then go
 * back to mimalloc: made here, freed there, counted here again.
 */
START_TEST(thread_cache_emptied_at_thread_exit)
{
	long long base;
	struct worker_blocks w;
	pthread_t t;

	mimalloc_default();
	base = mimalloc_held();
	for (int i = 0; i < 3; i++)
		ck_assert_ptr_nonnull(w.p[i] = alloy_malloc(1500));
	ck_assert_int_eq(mimalloc_in_use() - base, 3);
	ck_assert_int_eq(pthread_create(&t, NULL, free_blocks, &w), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* Through trim's collect: mimalloc defers some frees from others. */
	ck_assert_int_eq(mimalloc_held(), base);
}
END_TEST

/*
 * Small classes: a 64-byte block at a DataPtr's 64 serves the next
 * request of its class.  A class whose blocks mimalloc aligns to 16 only
 * (80 bytes) keeps them, and a request at 64 whose list's head is not on
 * 64 gets a new block of the class, aligned, leaving the head for the
 * next request at 16.
 */
START_TEST(thread_cache_small_alignment)
{
	struct alloy_allocator *a = mimalloc_default();
	struct alloy_data_ptr dp[64], at64;
	long long base;
	void *first;
	int odd = -1, n;

	backend_make_thread_cache(a);
	base = mimalloc_held();
	ck_assert_ok(alloy_alloc(a, 64, 64, 0, &dp[0]));
	first = dp[0].ptr;
	alloy_data_ptr_free(&dp[0]);
	ck_assert_ok(alloy_alloc(a, 60, 64, 0, &dp[0]));
	ck_assert_ptr_eq(dp[0].ptr, first);
	alloy_data_ptr_free(&dp[0]);

	for (n = 0; n < 64 && odd < 0; n++) {
		ck_assert_ok(alloy_alloc(a, 70, 16, 0, &dp[n]));
		ck_assert_uint_eq((uintptr_t)dp[n].ptr % 16, 0);
		if ((uintptr_t)dp[n].ptr % 64)
			odd = n;
	}
	ck_assert_int_ge(odd, 0);
	for (int i = 0; i < n; i++)
		if (i != odd)
			alloy_data_ptr_free(&dp[i]);
	/* Only the block off 64 in the list, at its head. */
	ck_assert_int_ge(alloy_allocator_trim(a), 0);
	first = dp[odd].ptr;
	alloy_data_ptr_free(&dp[odd]);

	ck_assert_ok(alloy_alloc(a, 70, 64, 0, &at64));
	ck_assert_uint_eq((uintptr_t)at64.ptr % 64, 0);
	ck_assert_ptr_ne(at64.ptr, first);
	ck_assert_uint_ge(alloy_allocator_usable_size(a, at64.ptr, 70), 80);
	ck_assert_ok(alloy_alloc(a, 80, 16, 0, &dp[0]));
	ck_assert_ptr_eq(dp[0].ptr, first);
	alloy_data_ptr_free(&dp[0]);
	alloy_data_ptr_free(&at64);
	ck_assert_int_eq(mimalloc_held(), base);
}
END_TEST

/*
 * A destructor that runs after the module's own at thread exit (a second
 * round: it sets its value again once) frees a block of the cache's
 * range: the thread's cache is gone by then, the block goes straight
 * back to mimalloc.
 */
static pthread_key_t late_key;

static void late_free(void *p)
{
	static _Thread_local int rounds;

	if (rounds++ == 0) {
		ck_assert_int_eq(pthread_setspecific(late_key, p), 0);
		return;
	}
	alloy_free(p);
}

static void *keep_then_exit(void *arg)
{
	(void)arg;
	alloy_free(alloy_malloc(100));
	ck_assert_int_eq(pthread_setspecific(late_key, alloy_malloc(200)), 0);
	return NULL;
}

START_TEST(thread_cache_free_after_exit_handler)
{
	long long base;
	pthread_t t;

	mimalloc_default();
	base = mimalloc_held();
	ck_assert_int_eq(pthread_key_create(&late_key, late_free), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, keep_then_exit, NULL), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(mimalloc_held(), base);
}
END_TEST

/* The cache's rules at DataPtr alignments, the option's values. */
START_TEST(thread_cache_rules)
{
	backend_check_thread_cache(mimalloc_default(), &mimalloc_probe);
}
END_TEST

START_TEST(written_after_free_is_not_handed_out)
{
	backend_check_bad_link(mimalloc_default());
}
END_TEST

START_TEST(thread_before_load)
{
	backend_check_thread_before_load(MODULE, "cpu:mimalloc", "mimalloc");
}
END_TEST

START_TEST(no_thread_key_is_reported)
{
	backend_check_no_thread_key(MODULE);
}
END_TEST

/* thread_cache:0 keeps nothing; a bad value is named and refused. */
START_TEST(thread_cache_option)
{
	long long base;

	test_set_conf("cpu:mimalloc,mimalloc.thread_cache:0");
	ck_assert_int_eq(alloy_init(), 0);
	base = mimalloc_in_use();
	alloy_free(alloy_malloc(1024));
	ck_assert_int_eq(mimalloc_in_use(), base);
}
END_TEST

START_TEST(thread_cache_bad_option)
{
	struct alloy_allocator *a = mimalloc_default();
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);

	ck_assert_int_eq(
		ops->set_option(alloy_allocator_ctx(a), "thread_cache", "256"),
		-ERANGE);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "0 to 255"));
	ck_assert_int_eq(
		ops->set_option(alloy_allocator_ctx(a), "thread_cache", "some"),
		-ERANGE);
	ck_assert_int_eq(
		ops->set_option(alloy_allocator_ctx(a), "colour", "red"),
		-EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "colour"));
}
END_TEST

Suite *suite_mimalloc(void)
{
	Suite *s = suite_create("mimalloc");
	TCase *tc = tcase_create("module");

	tcase_add_test(tc, serves_with_alignment);
	tcase_add_test(tc, realloc_between_paths);
	tcase_add_test(tc, never_the_process_malloc);
	tcase_add_test(tc, stats_and_realloc);
	tcase_add_test(tc, thread_cache_sizes);
	tcase_add_test(tc, thread_cache_reuse_and_depth);
	tcase_add_test(tc, thread_cache_rules);
	tcase_add_test(tc, thread_cache_small_alignment);
	tcase_add_test(tc, thread_cache_free_after_exit_handler);
	tcase_add_test(tc, no_thread_key_is_reported);
	tcase_add_test(tc, thread_before_load);
	tcase_add_test(tc, written_after_free_is_not_handed_out);
	tcase_add_test(tc, large_cache_reuse_depth_and_trim);
	tcase_add_test(tc, thread_cache_emptied_at_thread_exit);
	tcase_add_test(tc, thread_cache_option);
	tcase_add_test(tc, thread_cache_bad_option);
	suite_add_tcase(s, tc);
	return s;
}
#else
Suite *suite_mimalloc(void)
{
	/* No test case: nothing is counted as passed. */
	printf("mimalloc: skipped: built without mimalloc\n");
	return suite_create("mimalloc");
}
#endif
