// SPDX-License-Identifier: MIT
/*
 * tests/test_debug.c - the "debug" wrapper: planted overflows, underflows,
 * writes after free, double frees, foreign and wrong-size frees are each
 * caught once, reported with the allocation site, and survived.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

static struct alloy_allocator *dbg;
static const struct alloy_allocator_ops *ops;
static void *ctx;
static char text[4096];

static void setup_debug(const char *extra)
{
	char conf[256];

	snprintf(conf, sizeof(conf), "cpu:debug,debug.quiet:1%s%s",
		 extra ? "," : "", extra ? extra : "");
	test_set_conf(conf);
	ck_assert_int_eq(alloy_init(), 0);
	dbg = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_str_eq(alloy_allocator_name(dbg), "debug");
	ops = alloy_allocator_ops(dbg);
	ctx = alloy_allocator_ctx(dbg);
}

static const char *last_report(void)
{
	alloy_debug_last_report(text, sizeof(text));
	return text;
}

/*
 * The allocation site of the planted bugs: not inlined, so that a report
 * can be checked to show a frame inside it.  (Frames are named only for
 * exported functions; programs linked with -rdynamic get every name.)
 */
__attribute__((noinline)) void *planted_site(size_t size, size_t align);
__attribute__((noinline)) void *planted_site(size_t size, size_t align)
{
	void *p = ops->alloc(ctx, size, align, 0);

	/* Not a tail call: this frame must be on the stack during alloc. */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

/* Whether a frame of the report, "... [0xADDR]", lies in planted_site. */
static bool shows_planted_site(const char *r)
{
	uintptr_t lo = (uintptr_t)planted_site;

	for (const char *p = strstr(r, "[0x"); p; p = strstr(p + 1, "[0x")) {
		uintptr_t pc = (uintptr_t)strtoull(p + 1, NULL, 16);

		/* a return address: past the call, within the small function */
		if (pc > lo && pc < lo + 256)
			return true;
	}
	return false;
}

static void assert_report(int kind, bool with_site)
{
	const char *r = last_report();

	ck_assert_msg(strstr(r, alloy_debug_error_name(kind)), "report: %s", r);
	if (with_site) {
		ck_assert_msg(strstr(r, "allocated at"), "report: %s", r);
		ck_assert_msg(shows_planted_site(r), "report: %s", r);
	}
}

START_TEST(clean_use_reports_nothing)
{
	setup_debug(NULL);
	for (size_t align = 8; align <= 4096; align *= 2) {
		for (size_t size = 1; size <= 300; size += 7) {
			struct alloy_data_ptr dp;

			ck_assert_ok(alloy_alloc(dbg, size, align, 0, &dp));
			ck_assert_uint_eq((uintptr_t)dp.ptr & (align - 1), 0);
			/* Unwritten bytes read as the new-block fill. */
			ck_assert_uint_eq(((unsigned char *)dp.ptr)[size - 1],
					  ALLOY_DEBUG_FILL_NEW);
			memset(dp.ptr, 1, size);
			alloy_data_ptr_free(&dp);
		}
	}
	ck_assert_int_eq(alloy_debug_check(), 0);
	ck_assert_int_ge(alloy_allocator_trim(dbg), 0);
	ck_assert_uint_eq(alloy_debug_errors(-1), 0);
	ck_assert_uint_eq(alloy_debug_last_report(NULL, 0), 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(dbg), 0);
}
END_TEST

START_TEST(zeroed_blocks_are_zero)
{
	struct alloy_data_ptr dp;

	setup_debug(NULL);
	ck_assert_ok(alloy_alloc(dbg, 1000, 0, ALLOY_ALLOC_ZERO, &dp));
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(((unsigned char *)dp.ptr)[i], 0);
	ck_assert_uint_eq(alloy_allocator_usable_size(dbg, dp.ptr, dp.size),
			  1000);
	alloy_data_ptr_free(&dp);
}
END_TEST

START_TEST(overflow_is_caught_at_free)
{
	char *p;

	setup_debug(NULL);
	p = planted_site(100, 16);
	p[100] = 'x';
	p[103] = 'y';
	ops->free(ctx, p, 100, 16);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_OVERFLOW), 1);
	ck_assert_uint_eq(alloy_debug_errors(-1), 1);
	assert_report(ALLOY_DEBUG_OVERFLOW, true);
	ck_assert_msg(
		strstr(text,
		       "4 bytes written past the end of a 100-byte block"),
		"report: %s", text);
}
END_TEST

START_TEST(underflow_is_caught_at_free)
{
	char *p;

	setup_debug(NULL);
	p = planted_site(64, 64);
	p[-1] = 0;
	ops->free(ctx, p, 64, 64);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_UNDERFLOW), 1);
	ck_assert_uint_eq(alloy_debug_errors(-1), 1);
	assert_report(ALLOY_DEBUG_UNDERFLOW, true);
	ck_assert_msg(strstr(text, "1 bytes before the start"), "report: %s",
		      text);
}
END_TEST

START_TEST(check_finds_overflow_in_a_live_block)
{
	char *p;

	setup_debug("debug.redzone:64");
	p = planted_site(10, 8);
	ck_assert_int_eq(alloy_debug_check(), 0);
	p[10 + 63] = 1; /* the last redzone byte */
	ck_assert_int_eq(alloy_debug_check(), 1);
	assert_report(ALLOY_DEBUG_OVERFLOW, true);
	p[10 + 63] = (char)ALLOY_DEBUG_FILL_REDZONE;
	ops->free(ctx, p, 10, 8);
	ck_assert_uint_eq(alloy_debug_errors(-1), 1);
}
END_TEST

START_TEST(freed_memory_is_poisoned)
{
	unsigned char *p;

	setup_debug(NULL);
	p = planted_site(32, 16);
	ops->free(ctx, p, 32, 16);
	/* Still in quarantine, so still ours to read. */
	for (int i = 0; i < 32; i++)
		ck_assert_uint_eq(p[i], ALLOY_DEBUG_FILL_FREED);
	ck_assert_uint_eq(alloy_debug_errors(-1), 0);
}
END_TEST

START_TEST(write_after_free_is_caught)
{
	char *p;

	setup_debug(NULL);
	p = planted_site(48, 16);
	ops->free(ctx, p, 48, 16);
	p[20] = 'u';
	ck_assert_int_eq(alloy_debug_check(), 1);
	assert_report(ALLOY_DEBUG_USE_AFTER_FREE, true);
	ck_assert_msg(strstr(text, "freed at"), "report: %s", text);
	/* Leaving the quarantine checks it again, then releases it. */
	ck_assert_int_gt(alloy_allocator_trim(dbg), 48);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_USE_AFTER_FREE), 2);
}
END_TEST

START_TEST(quarantine_eviction_checks_poison)
{
	char *p;

	setup_debug("debug.quarantine:4");
	p = planted_site(16, 16);
	ops->free(ctx, p, 16, 16);
	p[0] = 1;
	for (int i = 0; i < 4; i++)
		ops->free(ctx, planted_site(16, 16), 16, 16);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_USE_AFTER_FREE), 1);
	assert_report(ALLOY_DEBUG_USE_AFTER_FREE, true);
}
END_TEST

START_TEST(double_free_is_caught_and_ignored)
{
	void *p;

	setup_debug(NULL);
	p = planted_site(200, 32);
	ops->free(ctx, p, 200, 32);
	ops->free(ctx, p, 200, 32);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_DOUBLE_FREE), 1);
	ck_assert_uint_eq(alloy_debug_errors(-1), 1);
	assert_report(ALLOY_DEBUG_DOUBLE_FREE, true);
	ck_assert_msg(strstr(text, "freed at"), "report: %s", text);
	/* Once only: the memory went back to the inner one time. */
	ck_assert_int_eq(alloy_allocator_trim(dbg), 32 + 200 + 32);
	ck_assert_int_eq(alloy_allocator_trim(dbg), 0);
}
END_TEST

START_TEST(double_free_through_data_ptr)
{
	struct alloy_data_ptr dp, copy;

	setup_debug(NULL);
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CPU, 64, 0, &dp));
	copy = dp;
	alloy_data_ptr_free(&dp);
	alloy_data_ptr_free(&copy);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_DOUBLE_FREE), 1);
	ck_assert_msg(strstr(last_report(), "allocated at"), "report: %s",
		      text);
}
END_TEST

START_TEST(foreign_free_is_caught_and_not_touched)
{
	char local[64];
	char *heap = malloc(64);

	setup_debug(NULL);
	memset(local, 'L', sizeof(local));
	ops->free(ctx, local + 16, 32, 16);
	ops->free(ctx, heap, 64, 16);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_FOREIGN_FREE), 2);
	ck_assert_msg(strstr(last_report(), "not allocated by \"debug\""),
		      "report: %s", text);
	for (size_t i = 0; i < sizeof(local); i++)
		ck_assert_int_eq(local[i], 'L');
	free(heap);
}
END_TEST

START_TEST(wrong_size_free_is_caught)
{
	void *p;

	setup_debug(NULL);
	p = planted_site(100, 64);
	ops->free(ctx, p, 50, 64);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_WRONG_SIZE), 1);
	assert_report(ALLOY_DEBUG_WRONG_SIZE, true);
	ck_assert_msg(strstr(text, "freed as 50 bytes"), "report: %s", text);
	p = planted_site(100, 64);
	ops->free(ctx, p, 100, 16);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_WRONG_SIZE), 2);
	/* Freed whole, with the size it really has: nothing else reported. */
	ck_assert_int_ge(alloy_allocator_trim(dbg), 200);
	ck_assert_uint_eq(alloy_debug_errors(-1), 2);
}
END_TEST

START_TEST(reports_go_to_stderr)
{
	char buf[8192] = { 0 };
	FILE *tmp = tmpfile();
	int saved = dup(2);
	char *p;

	test_set_conf("debug.redzone:16");
	ops = alloy_allocator_ops(alloy_find_allocator("debug"));
	ctx = alloy_allocator_ctx(alloy_find_allocator("debug"));
	ck_assert_ptr_nonnull(tmp);
	p = planted_site(8, 8);
	p[8] = 0;
	fflush(stderr);
	dup2(fileno(tmp), 2);
	ops->free(ctx, p, 8, 8);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	ck_assert_uint_gt(fread(buf, 1, sizeof(buf) - 1, tmp), 0);
	fclose(tmp);
	ck_assert_msg(strstr(buf, "alloy: debug: heap overflow") &&
			      shows_planted_site(buf),
		      "stderr: %s", buf);
}
END_TEST

START_TEST(abort_option_aborts)
{
	char *p;

	setup_debug("debug.abort:1");
	p = planted_site(8, 8);
	p[-1] = 0;
	ops->free(ctx, p, 8, 8);
}
END_TEST

START_TEST(inner_failure_leaves_nothing)
{
	struct alloy_data_ptr dp;

	setup_debug("debug.inner:fail,fail.nth:1");
	ck_assert_int_eq(alloy_alloc_default(ALLOY_DEVICE_CPU, 10, 0, &dp),
			 -ENOMEM);
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CPU, 10, 0, &dp));
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(alloy_allocator_trim(dbg) > 0, 1);
	ck_assert_int_eq(
		alloy_allocator_live_blocks(alloy_find_allocator("fail")), 0);
}
END_TEST

START_TEST(bad_options_are_reported)
{
	test_set_conf("debug.redzone:1M,debug.quiet:maybe,debug.size:3,"
		      "debug.quarantine:-1,debug.inner:debug");
	ck_assert_int_eq(alloy_init(), 5);
	for (int i = 0; i < 5; i++)
		ck_assert_msg(strstr(alloy_conf_error(i), "debug."),
			      "error %d: %s", i, alloy_conf_error(i));
	dbg = alloy_find_allocator("debug");
	ops = alloy_allocator_ops(dbg);
	ctx = alloy_allocator_ctx(dbg);
	ops->free(ctx, planted_site(8, 8), 8, 8);
	ck_assert_uint_eq(alloy_debug_errors(-1), 0);
}
END_TEST

START_TEST(unregister_releases_the_quarantine)
{
	setup_debug(NULL);
	ops->free(ctx, planted_site(8, 8), 8, 8);
	ck_assert_ok(alloy_set_default_by_name(ALLOY_DEVICE_CPU, "default"));
	ck_assert_ok(alloy_unregister_allocator("debug"));
	/* LeakSanitizer (sanitizer build) checks nothing was kept. */
}
END_TEST

Suite *suite_debug(void)
{
	Suite *s = suite_create("debug");
	TCase *tc = tcase_create("debug");

	tcase_add_test(tc, clean_use_reports_nothing);
	tcase_add_test(tc, zeroed_blocks_are_zero);
	tcase_add_test(tc, overflow_is_caught_at_free);
	tcase_add_test(tc, underflow_is_caught_at_free);
	tcase_add_test(tc, check_finds_overflow_in_a_live_block);
	tcase_add_test(tc, freed_memory_is_poisoned);
	tcase_add_test(tc, write_after_free_is_caught);
	tcase_add_test(tc, quarantine_eviction_checks_poison);
	tcase_add_test(tc, double_free_is_caught_and_ignored);
	tcase_add_test(tc, double_free_through_data_ptr);
	tcase_add_test(tc, foreign_free_is_caught_and_not_touched);
	tcase_add_test(tc, wrong_size_free_is_caught);
	tcase_add_test(tc, reports_go_to_stderr);
	tcase_add_test_raise_signal(tc, abort_option_aborts, SIGABRT);
	tcase_add_test(tc, inner_failure_leaves_nothing);
	tcase_add_test(tc, bad_options_are_reported);
	tcase_add_test(tc, unregister_releases_the_quarantine);
	suite_add_tcase(s, tc);
	return s;
}
