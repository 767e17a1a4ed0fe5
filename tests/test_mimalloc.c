// SPDX-License-Identifier: MIT
/*
 * tests/test_mimalloc.c - the mimalloc module, loaded by name from the
 * build tree: it serves cpu:mimalloc with the asked alignment, reports
 * mimalloc's figures, and leaves the process's malloc alone.
 */
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "backendutil.h"

#ifdef ALLOY_HAVE_MIMALLOC
#include <dlfcn.h>
#include <mimalloc.h>

#define MODULE ALLOY_BUILD_DIR "/.libs/alloy_mimalloc.so"

static struct alloy_allocator *mimalloc_default(void)
{
	struct alloy_allocator *a;
	char want[4096], got[4096];

	test_set_conf("cpu:mimalloc");
	ck_assert_int_eq(alloy_init(), 0);
	a = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_str_eq(alloy_allocator_name(a), "mimalloc");
	ck_assert_ptr_nonnull(realpath(MODULE, want));
	ck_assert_ptr_nonnull(realpath(alloy_allocator_origin(a), got));
	ck_assert_str_eq(got, want);
	return a;
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

/* Blocks in use in this thread's heap: a missed free leaves one more. */
static long long mimalloc_held(void)
{
	long long n = 0;

	/* It says false for a heap without pages, which holds nothing. */
	mi_heap_visit_blocks(mi_heap_get_default(), true, count_block, &n);
	return n;
}

static const struct backend_probe mimalloc_probe = {
	.owned = mimalloc_owns,
	.held = mimalloc_held,
};

/* Both paths: mi_malloc where its block is aligned, mi_malloc_aligned. */
START_TEST(serves_with_alignment)
{
	backend_check_blocks(mimalloc_default(), &mimalloc_probe);
}
END_TEST

/* Grown and shrunk across both paths, the block keeps its alignment. */
START_TEST(realloc_between_paths)
{
	backend_check_realloc(mimalloc_default(), &mimalloc_probe);
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

Suite *suite_mimalloc(void)
{
	Suite *s = suite_create("mimalloc");
	TCase *tc = tcase_create("module");

	tcase_add_test(tc, serves_with_alignment);
	tcase_add_test(tc, realloc_between_paths);
	tcase_add_test(tc, never_the_process_malloc);
	tcase_add_test(tc, stats_and_realloc);
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
