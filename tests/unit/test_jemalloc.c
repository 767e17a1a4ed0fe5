// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_jemalloc.c - the jemalloc module, loaded by name from the
 * build tree: it serves cpu:jemalloc, honours alignment, zeroing and
 * sized free, reports jemalloc's own figures, keeps a dedicated arena
 * apart - and never becomes the process's malloc.
 *
 * The runner is linked like the alloy command (libc, then libjemalloc, at
 * start), which is what lets the module load late at all.
 */
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "backendutil.h"

#ifdef ALLOY_HAVE_JEMALLOC
#include <dlfcn.h>
#include <errno.h>
#include <jemalloc/jemalloc.h>

#define MODULE ALLOY_BUILD_DIR "/.libs/alloy_jemalloc.so"

static uint64_t thread_allocated(void)
{
	uint64_t v = 0;
	size_t len = sizeof(v);

	ck_assert_int_eq(mallctl("thread.allocated", &v, &len, NULL, 0), 0);
	return v;
}

/* The library that defines the malloc every caller in the process gets. */
static const char *malloc_provider(void)
{
	Dl_info info;

	ck_assert(dladdr((void *)malloc, &info));
	return info.dli_fname;
}

/*
 * Without the module's caches, for the tests that count jemalloc's bytes
 * at each free (the caches have tests of their own).
 */
#define UNCACHED "cpu:jemalloc,jemalloc.cache:0,jemalloc.thread_cache:0"

static struct alloy_allocator *jemalloc_default(const char *conf)
{
	struct alloy_allocator *a;

	test_set_conf(conf);
	ck_assert_int_eq(alloy_init(), 0);
	a = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_str_eq(alloy_allocator_name(a), "jemalloc");
	return a;
}

START_TEST(serves_cpu_from_the_build_tree)
{
	struct alloy_allocator *a = jemalloc_default("cpu:jemalloc");
	char want[4096], got[4096];

	ck_assert_ptr_nonnull(realpath(MODULE, want));
	ck_assert_ptr_nonnull(realpath(alloy_allocator_origin(a), got));
	ck_assert_str_eq(got, want);
}
END_TEST

START_TEST(never_the_process_malloc)
{
	struct alloy_allocator *a = jemalloc_default("cpu:jemalloc");
	struct alloy_data_ptr dp;
	uint64_t before;
	void *p;

	/* glibc's, or ASan's in a sanitizer build; never jemalloc's. */
	ck_assert_msg(!strstr(malloc_provider(), "jemalloc"),
		      "malloc comes from %s", malloc_provider());
	/* A megabyte from malloc is not jemalloc's ... */
	before = thread_allocated();
	p = malloc(1 << 20);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_lt(thread_allocated() - before, 1 << 20);
	free(p);
	/* ... but one through alloy is. */
	before = thread_allocated();
	ck_assert_ok(alloy_alloc(a, 1 << 20, 64, 0, &dp));
	ck_assert_uint_ge(thread_allocated() - before, 1 << 20);
	alloy_data_ptr_free(&dp);
}
END_TEST

/* jemalloc knows the block, and its size class holds the size. */
static bool jemalloc_owns(void *p, size_t size)
{
	return sallocx(p, 0) >= size;
}

/*
 * Bytes this thread holds by jemalloc's count: it adds the size class at
 * each allocation and subtracts the class sdallocx is told at each free,
 * so a free whose flags name another class than the allocation's leaves
 * a difference.
 */
static long long jemalloc_held(void)
{
	uint64_t freed = 0;
	size_t len = sizeof(freed);

	ck_assert_int_eq(mallctl("thread.deallocated", &freed, &len, NULL, 0),
			 0);
	return (long long)(thread_allocated() - freed);
}

/* A kept block counts its class's bytes. */
static long long jemalloc_units(size_t class_bytes)
{
	return (long long)class_bytes;
}

static const struct backend_probe jemalloc_probe = {
	.owned = jemalloc_owns,
	.held = jemalloc_held,
	.units = jemalloc_units,
};

/* Both paths: flags 0 where the class is aligned enough, MALLOCX_ALIGN. */
START_TEST(alignment_zero_and_sizes)
{
	backend_check_blocks(jemalloc_default(UNCACHED), &jemalloc_probe);
}
END_TEST

START_TEST(dedicated_arena_both_paths)
{
	struct alloy_allocator *a =
		jemalloc_default("cpu:jemalloc,jemalloc.arena:dedicated");

	/* A class aligned enough (64 at 64) and one that is not (80 at 64). */
	backend_check_block(a, &jemalloc_probe, 64, 64);
	backend_check_block(a, &jemalloc_probe, 80, 64);
	/* Neither cache keeps the dedicated arena's blocks. */
	backend_check_block(a, &jemalloc_probe, 4000, 64);
	backend_check_block(a, &jemalloc_probe, 100000, 64);
	backend_check_block(a, &jemalloc_probe, 100000, 4096);
}
END_TEST

/* A block grown across classes is freed with its new class's flags. */
START_TEST(realloc_between_paths)
{
	backend_check_realloc(jemalloc_default(UNCACHED), &jemalloc_probe);
}
END_TEST

START_TEST(realloc_keeps_contents)
{
	struct alloy_allocator *a = jemalloc_default("cpu:jemalloc");
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(a, 100, 256, 0, &dp));
	memset(dp.ptr, 7, 100);
	ck_assert_ok(alloy_data_ptr_realloc(&dp, 1 << 20));
	ck_assert_uint_eq((uintptr_t)dp.ptr % 256, 0);
	ck_assert_int_eq(((char *)dp.ptr)[99], 7);
	alloy_data_ptr_free(&dp);
}
END_TEST

START_TEST(stats_are_jemallocs)
{
	struct alloy_allocator *a = jemalloc_default("cpu:jemalloc");
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(a, 8 << 20, 64, 0, &dp));
	ck_assert_ok(alloy_allocator_stats(a, &st));
	ck_assert_uint_ge(st.allocated, 8 << 20);
	ck_assert_uint_ge(st.active, st.allocated);
	ck_assert_uint_ge(st.resident, 1);
	ck_assert_uint_ge(st.mapped, st.active);
	alloy_data_ptr_free(&dp);
	ck_assert_int_ge(alloy_allocator_trim(a), 0);
}
END_TEST

START_TEST(dedicated_arena)
{
	struct alloy_allocator *a =
		jemalloc_default("cpu:jemalloc,jemalloc.arena:dedicated");
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	struct alloy_data_ptr dp[10];
	unsigned mine = 0, theirs = 0;
	size_t len = sizeof(mine);
	void *p;

	for (int i = 0; i < 10; i++)
		ck_assert_ok(alloy_alloc(a, 1 << 20, 64, 0, &dp[i]));
	/* The blocks live in an arena that is not this thread's. */
	ck_assert_int_eq(mallctl("thread.arena", &mine, &len, NULL, 0), 0);
	p = dp[0].ptr;
	len = sizeof(theirs);
	ck_assert_int_eq(mallctl("arenas.lookup", &theirs, &len, &p, sizeof(p)),
			 0);
	ck_assert_uint_ne(mine, theirs);
	ck_assert_ok(alloy_allocator_stats(a, &st));
	ck_assert_uint_eq(st.allocated, 10 << 20);
	for (int i = 0; i < 10; i++)
		alloy_data_ptr_free(&dp[i]);
	ck_assert_ok(alloy_allocator_stats(a, &st));
	ck_assert_uint_eq(st.allocated, 0);
}
END_TEST

/*
 * Blocks made in the dedicated arena (mallocx with its flags) and freed
 * after the switch to the shared one (jemalloc's own free), and the other
 * way round: jemalloc takes each back, its count of held bytes returns.
 */
START_TEST(arena_switch_with_live_blocks)
{
	struct alloy_allocator *a =
		jemalloc_default(UNCACHED ",jemalloc.arena:dedicated");
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	struct alloy_data_ptr dp[6];
	long long held = jemalloc_held();

	ck_assert_ok(alloy_alloc(a, 64, 64, 0, &dp[0]));
	ck_assert_ok(alloy_alloc(a, 1 << 20, 64, 0, &dp[1]));
	/* A thread-cache size: made at its size here, freed through the
	 * cache's path after the switch. */
	ck_assert_ok(alloy_alloc(a, 4000, 64, 0, &dp[4]));
	ck_assert_ok(
		ops->set_option(alloy_allocator_ctx(a), "arena", "shared"));
	ck_assert_ok(alloy_alloc(a, 64, 64, 0, &dp[2]));
	ck_assert_ok(alloy_alloc(a, 1 << 20, 64, ALLOY_ALLOC_ZERO, &dp[3]));
	/* Made at its class's full size here, freed with the arena's flags. */
	ck_assert_ok(alloy_alloc(a, 4000, 64, 0, &dp[5]));
	alloy_data_ptr_free(&dp[0]);
	alloy_data_ptr_free(&dp[1]);
	alloy_data_ptr_free(&dp[4]);
	ck_assert_ok(
		ops->set_option(alloy_allocator_ctx(a), "arena", "dedicated"));
	alloy_data_ptr_free(&dp[2]);
	alloy_data_ptr_free(&dp[3]);
	alloy_data_ptr_free(&dp[5]);
	ck_assert_int_eq(jemalloc_held(), held);
}
END_TEST

/*
 * The plain-pointer API's blocks (16-aligned) take jemalloc's own malloc,
 * calloc, realloc and free: jemalloc counts every byte, growing and
 * shrinking keep the contents, calloc zeroes, and the count returns to
 * where it was, also for blocks that outlive a switch of arena.
 */
START_TEST(plain_blocks_through_jemallocs_own)
{
	static const size_t sizes[] = { 1,     24,	100, 1024, 5000,
					70000, 3 << 20, 300, 17 };
	struct alloy_allocator *a = jemalloc_default(UNCACHED);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	long long held = jemalloc_held();
	uint64_t before = thread_allocated();
	unsigned char *p = NULL, *z, *kept;
	size_t old = 0;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i], keep = old < n ? old : n;

		p = alloy_realloc(p, n);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % ALLOY_PLAIN_ALIGN, 0);
		for (size_t j = 0; j < keep; j++)
			ck_assert_uint_eq(p[j], (unsigned char)(j * 13 + old));
		for (size_t j = 0; j < n; j++)
			p[j] = (unsigned char)(j * 13 + n);
		old = n;
	}
	ck_assert_uint_ge(thread_allocated() - before, 3 << 20);
	z = alloy_calloc(1000, 3);
	ck_assert_ptr_nonnull(z);
	for (size_t j = 0; j < 3000; j++)
		ck_assert_uint_eq(z[j], 0);
	kept = alloy_malloc(4000);
	ck_assert_ptr_nonnull(kept);
	ck_assert_ok(
		ops->set_option(alloy_allocator_ctx(a), "arena", "dedicated"));
	alloy_free(kept);
	alloy_free(z);
	alloy_free(p);
	ck_assert_int_eq(jemalloc_held(), held);
}
END_TEST

/*
 * The large cache (modules/modcache.h): a freed 100,000-byte block
 * serves the next request of its class (98,305-114,688 bytes), at most 2
 * are kept per class, a zeroed request goes to jemalloc and is zero,
 * trim gives the kept ones back, cache:0 keeps nothing, a bad size is
 * named and refused.
 */
START_TEST(large_cache_reuse_depth_and_trim)
{
	struct alloy_allocator *a = jemalloc_default("cpu:jemalloc");
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	const long long class_bytes = 114688;
	long long held = jemalloc_held();
	struct alloy_data_ptr dp[3];
	void *first;

	ck_assert_ok(alloy_alloc(a, 100000, 64, 0, &dp[0]));
	first = dp[0].ptr;
	memset(first, 0x77, 100000);
	alloy_data_ptr_free(&dp[0]);
	ck_assert_int_eq(jemalloc_held() - held, class_bytes);
	ck_assert_ok(alloy_alloc(a, 110000, 16, 0, &dp[0]));
	ck_assert_ptr_eq(dp[0].ptr, first);
	ck_assert_ok(alloy_alloc(a, 100000, 64, ALLOY_ALLOC_ZERO, &dp[1]));
	ck_assert_ptr_ne(dp[1].ptr, first);
	for (size_t i = 0; i < 100000; i++)
		ck_assert_uint_eq(((unsigned char *)dp[1].ptr)[i], 0);
	ck_assert_ok(alloy_alloc(a, 100000, 64, 0, &dp[2]));
	for (int i = 0; i < 3; i++)
		alloy_data_ptr_free(&dp[i]);
	ck_assert_int_eq(jemalloc_held() - held, 2 * class_bytes);
	ck_assert_int_ge(alloy_allocator_trim(a), 0);
	ck_assert_int_eq(jemalloc_held(), held);

	ck_assert_ok(ops->set_option(ctx, "cache", "0"));
	ck_assert_ok(alloy_alloc(a, 100000, 64, 0, &dp[0]));
	alloy_data_ptr_free(&dp[0]);
	ck_assert_int_eq(jemalloc_held(), held);
	ck_assert_int_eq(ops->set_option(ctx, "cache", "lots"), -ERANGE);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "cache \"lots\""));
}
END_TEST

START_TEST(thread_cache_reuse_depth_and_trim)
{
	backend_check_thread_cache(jemalloc_default("cpu:jemalloc"),
				   &jemalloc_probe);
}
END_TEST

START_TEST(written_after_free_is_not_handed_out)
{
	backend_check_bad_link(jemalloc_default("cpu:jemalloc"));
}
END_TEST

/*
 * Below 1 KiB the module's thread cache keeps a DataPtr's block where
 * jemalloc's class is aligned as asked (64 B at 64): kept, it serves the
 * next request of its list, zeroed when asked; where the class is not
 * (80 B at 64: a flag, another class) nothing is kept.
 */
START_TEST(small_blocks_in_the_thread_cache)
{
	struct alloy_allocator *a = jemalloc_default("cpu:jemalloc");
	struct alloy_data_ptr dp;
	long long base;
	void *first;

	backend_make_thread_cache(a);
	base = jemalloc_held();
	ck_assert_ok(alloy_alloc(a, 64, 64, 0, &dp));
	first = dp.ptr;
	memset(first, 0xa5, 64);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(jemalloc_held() - base, 64);
	ck_assert_ok(alloy_alloc(a, 57, 64, ALLOY_ALLOC_ZERO, &dp));
	ck_assert_ptr_eq(dp.ptr, first);
	ck_assert(backend_all_zero(dp.ptr, 57));
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_alloc(a, 80, 64, 0, &dp));
	ck_assert_uint_eq((uintptr_t)dp.ptr % 64, 0);
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(jemalloc_held() - base, 64);
	ck_assert_int_ge(alloy_allocator_trim(a), 0);
	ck_assert_int_eq(jemalloc_held(), base);
}
END_TEST

START_TEST(thread_before_load)
{
	backend_check_thread_before_load(MODULE, "cpu:jemalloc", "jemalloc");
}
END_TEST

START_TEST(no_thread_key_is_reported)
{
	backend_check_no_thread_key(MODULE);
}
END_TEST

START_TEST(bad_option_is_reported)
{
	test_set_conf("cpu:jemalloc,jemalloc.arena:bogus,jemalloc.colour:red");
	ck_assert_int_eq(alloy_init(), 2);
	/* It still serves. */
	ck_assert_str_eq(
		alloy_allocator_name(alloy_get_default(ALLOY_DEVICE_CPU)),
		"jemalloc");
}
END_TEST

Suite *suite_jemalloc(void)
{
	Suite *s = suite_create("jemalloc");
	TCase *tc = tcase_create("module");

	tcase_add_test(tc, serves_cpu_from_the_build_tree);
	tcase_add_test(tc, never_the_process_malloc);
	tcase_add_test(tc, alignment_zero_and_sizes);
	tcase_add_test(tc, dedicated_arena_both_paths);
	tcase_add_test(tc, realloc_between_paths);
	tcase_add_test(tc, realloc_keeps_contents);
	tcase_add_test(tc, stats_are_jemallocs);
	tcase_add_test(tc, dedicated_arena);
	tcase_add_test(tc, arena_switch_with_live_blocks);
	tcase_add_test(tc, plain_blocks_through_jemallocs_own);
	tcase_add_test(tc, large_cache_reuse_depth_and_trim);
	tcase_add_test(tc, thread_cache_reuse_depth_and_trim);
	tcase_add_test(tc, no_thread_key_is_reported);
	tcase_add_test(tc, thread_before_load);
	tcase_add_test(tc, small_blocks_in_the_thread_cache);
	tcase_add_test(tc, written_after_free_is_not_handed_out);
	tcase_add_test(tc, bad_option_is_reported);
	suite_add_tcase(s, tc);
	return s;
}
#else
Suite *suite_jemalloc(void)
{
	/* No test case: nothing is counted as passed. */
	printf("jemalloc: skipped: built without jemalloc\n");
	return suite_create("jemalloc");
}
#endif
