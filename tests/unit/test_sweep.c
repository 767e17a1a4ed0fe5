// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_sweep.c - the fault sweep.
 *
 * Each representative workload runs once cleanly to count the allocations
 * it makes (alloy_fail_count), then once for every k = 1..total with the
 * k-th allocation failing (or, in the "persistent" modes, every one from
 * the k-th on, as when memory has really run out).  Every run must end
 * either with success (the failure was handled) or with a negative code
 * and a message, and must give everything back: the fail allocator's live
 * blocks and the reporter's live blocks return to what they were after
 * the clean run.  Memory taken from libc directly is checked by
 * LeakSanitizer in the sanitizer build and by valgrind in CI (glibc's
 * mallinfo counts blocks parked in its thread cache as in use, so it
 * cannot tell a leak from a cached block here).
 *
 * The fail allocator sits over the debug allocator (fail.inner:debug,
 * debug.abort:1), so an error path that frees twice, frees the wrong
 * size or overruns a block aborts the run.
 *
 * The workloads are in tests/unit/sweep_workloads.c, shared with the sweep of
 * libc's malloc (tests/unit/sweep_malloc.c).
 */
#include <string.h>

#include "testutil.h"
#include "sweep_workloads.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the sweep ----------------------------------------------------------- */

enum {
	MODE_PERSISTENT = 1, /* every allocation from the k-th on fails */
	MODE_REPORTER = 2,   /* with the reporter recording */
	MODES = 4,
};

static long long reporter_live(void)
{
	struct alloy_reporter_snapshot snap = {
		.size = sizeof(snap),
		.version = ALLOY_REPORTER_SNAPSHOT_VERSION,
	};

	ck_assert_ok(alloy_reporter_snapshot(&snap));
	return (long long)snap.total.live_blocks;
}

static void sweep(const struct sweep_workload *w, int mode)
{
	struct alloy_allocator *a;
	struct alloy_fail_config plan = { 0 };
	uint64_t total, errors = 0, handled = 0;
	long long rep0 = 0;
	int rc;

	test_set_conf("cpu:fail,fail.inner:debug,debug.abort:1");
	ck_assert_int_eq(alloy_init(), 0);
	a = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_str_eq(alloy_allocator_name(a), "fail");
	if (w->setup)
		ck_assert_ok(w->setup());
	if (mode & MODE_REPORTER)
		ck_assert_ok(alloy_reporter_enable());

	/* Clean runs: the count, and that it is the same every time. */
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(w->run(a));
	total = alloy_fail_count();
	ck_assert_uint_gt(total, 0);
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(w->run(a));
	ck_assert_uint_eq(alloy_fail_count(), total);
	if (mode & MODE_REPORTER)
		rep0 = reporter_live();

	for (uint64_t k = 1; k <= total; k++) {
		plan.nth = k;
		plan.run = mode & MODE_PERSISTENT ? ALLOY_FAIL_UNLIMITED : 1;
		ck_assert_ok(alloy_fail_configure(&plan));
		alloy_clear_error();
		rc = w->run(a);
		ck_assert_msg(alloy_fail_injected() >= 1,
			      "%s: allocation %llu of %llu was never reached",
			      w->name, (unsigned long long)k,
			      (unsigned long long)total);
		if (rc) {
			ck_assert_msg(
				rc < 0 && alloy_last_error()[0],
				"%s, allocation %llu failing: returned %d, message \"%s\"",
				w->name, (unsigned long long)k, rc,
				alloy_last_error());
			errors++;
		} else {
			handled++;
		}
		ck_assert_msg(alloy_allocator_live_blocks(a) == 0,
			      "%s, allocation %llu failing: %lld blocks leaked",
			      w->name, (unsigned long long)k,
			      alloy_allocator_live_blocks(a));
		if (mode & MODE_REPORTER)
			ck_assert_int_eq(reporter_live(), rep0);
	}
	ck_assert_uint_eq(alloy_debug_errors(-1), 0);
	/* Counted by docs/RELIABILITY.md; the runner's log keeps it. */
	printf("sweep: %-10s %-10s %-8s %4llu sites: %llu failed cleanly, %llu handled, 0 leaks\n",
	       w->name, mode & MODE_PERSISTENT ? "persistent" : "single",
	       mode & MODE_REPORTER ? "reporter" : "plain",
	       (unsigned long long)total, (unsigned long long)errors,
	       (unsigned long long)handled);
	fflush(stdout);
}

/*
 * The n-th workload that allocates through the CPU default; the others'
 * sites are libc's only, which tests/unit/sweep_malloc.c sweeps.
 */
static const struct sweep_workload *allocating_workload(int n)
{
	for (size_t i = 0; i < sweep_nworkloads; i++)
		if (!sweep_workloads[i].libc_only && n-- == 0)
			return &sweep_workloads[i];
	return NULL;
}

START_TEST(sweep_workload)
{
	sweep(allocating_workload(_i / MODES), _i % MODES);
}
END_TEST

/* ---- the caching allocator on the simulated device ---------------------- */

/*
 * The caching allocator's faults come from its source: the device runs
 * out of memory.  The sweep runs the workload on a fresh simulated device
 * at every capacity from 0 up to what it needs, in steps: each run must
 * succeed (freeing its cache and retrying is the caching allocator's job)
 * or end with -ENOMEM and a message, and afterwards, once the cache is
 * emptied, the device must hold nothing and the registry count no block.
 */
static struct alloy_cuda_sim *csim;
static size_t cpeak;

static void note_peak(void)
{
	struct alloy_cuda_sim_counts c;

	ck_assert_ok(alloy_cuda_sim_counts(csim, &c));
	if (c.dev_bytes_in_use > cpeak)
		cpeak = c.dev_bytes_in_use;
}

static int wl_caching(struct alloy_allocator *a)
{
	static const size_t sizes[] = { 1 << 20, 3 << 20, 512,	   20 << 20,
					2 << 20, 7000,	  1 << 20, 12 << 20 };
	struct alloy_data_ptr b[ARRAY_LEN(sizes)];
	int rc = 0;
	size_t i;

	for (i = 0; i < ARRAY_LEN(b); i++)
		b[i] = ALLOY_DATA_PTR_INIT;
	for (i = 0; i < ARRAY_LEN(sizes) && !rc; i++) {
		rc = alloy_alloc(a, sizes[i], 0, 0, &b[i]);
		note_peak();
		/* Every other block back to the cache, to be reused. */
		if (!rc && i % 2)
			alloy_data_ptr_free(&b[i - 1]);
	}
	for (i = 0; i < ARRAY_LEN(b) && !rc; i += 2) {
		rc = alloy_alloc(a, sizes[i] + 4096, 0, 0, &b[i]);
		note_peak();
	}
	for (i = 0; i < ARRAY_LEN(b); i++)
		alloy_data_ptr_free(&b[i]);
	return rc;
}

START_TEST(caching_allocator_capacity_sweep)
{
	struct alloy_allocator *a;
	struct alloy_cuda_sim_counts c;
	unsigned errors = 0, handled = 0, runs = 0;
	size_t step;
	int rc;

	ck_assert_ok(alloy_cuda_sim_create((size_t)1 << 40, &csim));
	ck_assert_ok(
		alloy_cuda_caching_register_sim(csim, "sweep_caching", &a));
	ck_assert_ok(wl_caching(a));
	ck_assert_uint_gt(cpeak, 0);
	step = cpeak / 64;
	for (size_t cap = 0; cap <= cpeak + step; cap += step, runs++) {
		ck_assert_int_ge(alloy_cuda_caching_empty_cache(a), 0);
		ck_assert_ok(alloy_cuda_sim_set_capacity(csim, cap));
		alloy_clear_error();
		rc = wl_caching(a);
		if (rc) {
			ck_assert_msg(
				rc == -ENOMEM && alloy_last_error()[0],
				"capacity %zu: returned %d, message \"%s\"",
				cap, rc, alloy_last_error());
			errors++;
		} else {
			handled++;
		}
		ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
		ck_assert_int_ge(alloy_cuda_caching_empty_cache(a), 0);
		ck_assert_ok(alloy_cuda_sim_counts(csim, &c));
		ck_assert_msg(
			c.dev_bytes_in_use == 0 && c.dev_mallocs == c.dev_frees,
			"capacity %zu: %zu bytes left on the device, %llu mallocs, %llu frees",
			cap, c.dev_bytes_in_use,
			(unsigned long long)c.dev_mallocs,
			(unsigned long long)c.dev_frees);
	}
	ck_assert_uint_gt(errors, 0);
	ck_assert_uint_gt(handled, 0);
	printf("sweep: caching    capacity   plain      %4u capacities: %u failed cleanly, %u succeeded, 0 leaks\n",
	       runs, errors, handled);
	fflush(stdout);
}
END_TEST

/* The sweep itself would miss a workload that never allocates. */
START_TEST(fail_counts_every_allocation)
{
	struct alloy_fail_config plan = { 0 };
	struct alloy_allocator *a;

	test_set_conf("cpu:fail");
	a = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(sweep_wl_churn(a));
	ck_assert_uint_eq(alloy_fail_count(), 32);
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(sweep_wl_alloc(a));
	/* six blocks, two reallocs (each a new block), one default */
	ck_assert_uint_eq(alloy_fail_count(), 9);
}
END_TEST

Suite *suite_sweep(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("sweep");
	int n = 0;

	while (allocating_workload(n))
		n++;
	tcase_add_test(tc, fail_counts_every_allocation);
	tcase_add_test(tc, caching_allocator_capacity_sweep);
	tcase_add_loop_test(tc, sweep_workload, 0, n * MODES);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return s;
}
