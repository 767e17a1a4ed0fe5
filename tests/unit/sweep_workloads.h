/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/sweep_workloads.h - the workloads both fault sweeps run.
 */
#ifndef ALLOY_TESTS_SWEEP_WORKLOADS_H
#define ALLOY_TESTS_SWEEP_WORKLOADS_H

#include <stdbool.h>
#include <stddef.h>
#include <alloy/alloy.h>

struct sweep_workload {
	const char *name;
	/* 0 or a negative code; everything it allocated freed either way */
	int (*run)(struct alloy_allocator *a);
	int (*setup)(void); /* once, before the runs; may be NULL */
	bool libc_only;	    /* makes no allocation through the CPU default */
};

extern const struct sweep_workload sweep_workloads[];
extern const size_t sweep_nworkloads;

/* Two of them, whose allocation counts test_sweep.c checks. */
int sweep_wl_alloc(struct alloy_allocator *a);
int sweep_wl_churn(struct alloy_allocator *a);

#endif /* ALLOY_TESTS_SWEEP_WORKLOADS_H */
