// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_debug.c - the "debug" wrapper: planted overflows,
 * underflows, writes after free, double frees, foreign and wrong-size frees
 * are each caught once, reported with the allocation site, and survived.
 */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"

/*
 * Under valgrind (CI's memcheck stage) signals arrive late and a quarter
 * of a million blocks take minutes: the tests that need timely signals or
 * scale say so and skip there; the normal and sanitizer builds run them.
 */
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#else
#define RUNNING_ON_VALGRIND 0
#endif

#define SKIP_UNDER_VALGRIND(why)                                              \
	do {                                                                  \
		if (RUNNING_ON_VALGRIND) {                                    \
			fprintf(stderr, "skipped under valgrind: %s\n", why); \
			return;                                               \
		}                                                             \
	} while (0)

/* allocators/debug.c, exported for the tests. */
void alloy__debug_table_stats(size_t *slots, size_t *used, size_t *records,
			      uint64_t *nested_forks);

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

static size_t table_slots(size_t *used)
{
	size_t slots, records;
	uint64_t nested;

	alloy__debug_table_stats(&slots, used, &records, &nested);
	return slots;
}

/*
 * The table grows with the blocks, so that a lookup stays a short probe:
 * with a quarter of a million blocks live it is at most half full and at
 * least an eighth, every block is found (freed without a report) and a
 * pointer inside a block is still not taken for one.  Once they are gone
 * it shrinks again.
 */
START_TEST(table_grows_and_shrinks_with_the_blocks)
{
	enum { N = 1 << 18 };
	char **p = malloc(N * sizeof(*p));
	size_t used, slots;

	if (RUNNING_ON_VALGRIND)
		free(p);
	SKIP_UNDER_VALGRIND("a quarter of a million blocks");

	ck_assert_ptr_nonnull(p);
	setup_debug("debug.redzone:0,debug.quarantine:0");
	for (size_t i = 0; i < N; i++) {
		p[i] = ops->alloc(ctx, 8, 8, 0);
		ck_assert_ptr_nonnull(p[i]);
		*(uint64_t *)p[i] = i;
	}
	slots = table_slots(&used);
	ck_assert_uint_eq(used, N);
	ck_assert_uint_ge(slots, 2 * (size_t)N);
	ck_assert_uint_le(slots, 8 * (size_t)N);
	ops->free(ctx, p[N / 2] + 1, 7, 8);
	ck_assert_uint_eq(alloy_debug_errors(ALLOY_DEBUG_FOREIGN_FREE), 1);
	ck_assert_int_eq(alloy_debug_check(), 0);
	for (size_t i = 0; i < N; i++) {
		ck_assert_uint_eq(*(uint64_t *)p[i], i);
		ops->free(ctx, p[i], 8, 8);
	}
	ck_assert_uint_eq(alloy_debug_errors(-1), 1);
	ck_assert_int_eq(alloy_allocator_live_blocks(dbg), 0);
	/* Churn rebuilds it for the few blocks there are now. */
	for (int i = 0; i < 4 * N; i++)
		ops->free(ctx, ops->alloc(ctx, 8, 8, 0), 8, 8);
	slots = table_slots(&used);
	ck_assert_uint_eq(used, 0);
	ck_assert_uint_le(slots, 4096);
	free(p);
}
END_TEST

/*
 * Records are reused: blocks made and freed over and over take no new
 * records once the quarantine is full.
 */
START_TEST(records_are_reused)
{
	size_t slots, used, before, after;
	uint64_t nested;

	setup_debug("debug.quarantine:16");
	for (int i = 0; i < 1000; i++)
		ops->free(ctx, ops->alloc(ctx, 24, 8, 0), 24, 8);
	alloy__debug_table_stats(&slots, &used, &before, &nested);
	for (int i = 0; i < 100000; i++)
		ops->free(ctx, ops->alloc(ctx, 24, 8, 0), 24, 8);
	alloy__debug_table_stats(&slots, &used, &after, &nested);
	ck_assert_uint_eq(after, before);
	ck_assert_uint_eq(used, 16);
	ck_assert_uint_eq(alloy_debug_errors(-1), 0);
}
END_TEST

static volatile sig_atomic_t alarm_forks, alarm_failures;

/*
 * SIGALRM once, 50 to 305 microseconds from now: re-armed by the handler
 * when it is done, so the interrupted code always gets on between forks.
 */
static void arm_alarm(void)
{
	static unsigned state = 99;
	struct itimerval once = { { 0, 0 }, { 0, 50 } };

	state = state * 1103515245 + 12345;
	once.it_value.tv_usec += (state >> 8) % 256;
	setitimer(ITIMER_REAL, &once, NULL);
}

/* Fork; the child exits at once (as glibc's test does), the parent waits. */
static void fork_on_alarm(int sig)
{
	int saved = errno, status;
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	if (pid < 0) {
		alarm_failures = alarm_failures + 1;
	} else {
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			alarm_failures = alarm_failures + 1;
		alarm_forks = alarm_forks + 1;
	}
	arm_alarm();
	errno = saved;
}

/*
 * Fork from a signal handler that interrupted this thread inside debug's
 * critical section: the fork must not wait for the lock the interrupted
 * code holds, the parent must go on, and a child of such a fork must be
 * able to allocate and free through debug.  Signals come until a few
 * such forks happened (debug counts them) or the time is up.
 */
START_TEST(fork_from_a_signal_handler_inside_debug)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa = { .sa_handler = fork_on_alarm };
	void *slot[64] = { 0 };
	size_t slots, used, records;
	uint64_t nested = 0;
	struct timespec t0, t;
	unsigned seed = 7;

	SKIP_UNDER_VALGRIND("signals are delivered late");

	setup_debug("debug.quarantine:8");
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	arm_alarm();
	do {
		for (int k = 0; k < 256; k++) {
			int i = rand_r(&seed) % 64;

			if (slot[i])
				ops->free(ctx, slot[i], 40, 8);
			slot[i] = ops->alloc(ctx, 40, 8, 0);
			ck_assert_ptr_nonnull(slot[i]);
		}
		alloy__debug_table_stats(&slots, &used, &records, &nested);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (nested < 5 && !alarm_failures && t.tv_sec - t0.tv_sec < 10);
	setitimer(ITIMER_REAL, &off, NULL);
	/*
	 * Ignoring discards an alarm still pending (valgrind delivers them
	 * late), which the default action would die of.
	 */
	signal(SIGALRM, SIG_IGN);
	signal(SIGALRM, SIG_DFL);
	ck_assert_int_eq(alarm_failures, 0);
	ck_assert_msg(nested > 0, "no signal came inside debug in %d forks",
		      (int)alarm_forks);
	for (int i = 0; i < 64; i++)
		if (slot[i])
			ops->free(ctx, slot[i], 40, 8);
	ck_assert_msg(alloy_debug_errors(-1) == 0, "%s", last_report());
	ck_assert_int_eq(alloy_debug_check(), 0);
}
END_TEST

/*
 * The child of a fork that interrupted debug's critical section starts
 * with a fresh lock and a quarantine rebuilt from the records: it can
 * allocate, free and trim, and sees every block the parent had.
 */
static volatile sig_atomic_t child_status = -1;

static void fork_and_use_debug(int sig)
{
	int saved = errno, status;
	pid_t pid;

	if (child_status != -1)
		return;
	pid = fork();
	if (pid == 0) {
		void *p = ops->alloc(ctx, 100, 8, 0);

		if (!p)
			_exit(2);
		ops->free(ctx, p, 100, 8);
		if (alloy_debug_check() || alloy_allocator_trim(dbg) < 0 ||
		    alloy_debug_errors(-1))
			_exit(3);
		_exit(0);
	}
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	child_status = WIFEXITED(status) ? WEXITSTATUS(status) : 100;
	arm_alarm();
	errno = saved;
}

START_TEST(child_of_a_fork_inside_debug_allocates)
{
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa = { .sa_handler = fork_and_use_debug };
	size_t slots, used, records;
	uint64_t nested = 0, before;
	struct timespec t0, t;
	void *p;

	SKIP_UNDER_VALGRIND("signals are delivered late");

	setup_debug("debug.quarantine:8,debug.inner:default");
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGALRM, &sa, NULL), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/*
	 * The signal may come only while alloy_debug_check() runs, which
	 * holds debug's lock and calls no other allocator, so the child's
	 * own use of the inner allocator finds that consistent.
	 */
	do {
		alloy__debug_table_stats(&slots, &used, &records, &before);
		child_status = -1;
		p = ops->alloc(ctx, 40, 8, 0);
		ck_assert_ptr_nonnull(p);
		arm_alarm();
		for (int k = 0; k < 2000 && child_status == -1; k++)
			alloy_debug_check();
		setitimer(ITIMER_REAL, &off, NULL);
		ops->free(ctx, p, 40, 8);
		alloy__debug_table_stats(&slots, &used, &records, &nested);
		if (child_status != -1 && nested > before)
			break;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while (t.tv_sec - t0.tv_sec < 10);
	signal(SIGALRM, SIG_IGN); /* a late alarm: see above */
	signal(SIGALRM, SIG_DFL);
	ck_assert_msg(nested > before, "no signal came inside debug");
	ck_assert_int_eq(child_status, 0);
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
	tcase_add_test(tc, table_grows_and_shrinks_with_the_blocks);
	tcase_add_test(tc, records_are_reused);
	tcase_add_test(tc, fork_from_a_signal_handler_inside_debug);
	tcase_add_test(tc, child_of_a_fork_inside_debug_allocates);
	/* a quarter of a million blocks, and forks until enough interrupt */
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
