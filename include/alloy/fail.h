/* SPDX-License-Identifier: MIT */
/*
 * alloy/fail.h - the "fail" allocator: fault injection for tests.
 *
 * "fail" is a built-in CPU allocator that takes its memory from another
 * one (its inner, "default" unless ALLOY_CONF says fail.inner:NAME) and
 * makes chosen allocations fail, as SQLite's fault simulator does:
 *
 *   fail.nth:N          the N-th allocation (counted from 1) fails
 *   fail.run:R          ... and the R-1 after it too (default 1;
 *                       "unlimited": every one from the N-th on)
 *   fail.probability:P  each allocation fails with chance P (0..1)
 *   fail.seed:S         seed of that choice, so a run can be repeated
 *
 * Select it as any other: ALLOY_CONF=cpu:fail,fail.nth:3.  Tests change
 * the plan at run time with alloy_fail_configure() and read how many
 * allocations a workload makes with alloy_fail_count(), which is how the
 * fault sweep fails each allocation site in turn.
 */
#ifndef ALLOY_FAIL_H
#define ALLOY_FAIL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* fail.run value: every allocation from the nth on fails. */
#define ALLOY_FAIL_UNLIMITED UINT64_MAX

struct alloy_fail_config {
	uint64_t nth;	    /* first allocation to fail, from 1; 0: none */
	uint64_t run;	    /* how many fail from nth on; 0 is taken as 1 */
	double probability; /* chance that any allocation fails, 0..1 */
	uint64_t seed;	    /* makes the random failures repeatable */
};

/*
 * Replace the fail allocator's plan and restart its counts, so that nth
 * counts from the next allocation.  0, or -EINVAL for a probability
 * outside 0..1 (the plan is then unchanged).
 */
int alloy_fail_configure(const struct alloy_fail_config *cfg);

/* Allocations asked of "fail" since the last configure (or start). */
uint64_t alloy_fail_count(void);

/* How many of those it made fail. */
uint64_t alloy_fail_injected(void);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_FAIL_H */
