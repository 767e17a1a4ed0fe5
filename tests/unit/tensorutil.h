/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/tensorutil.h - helpers of the tensor-layer suites: a non-POD
 * element type that counts its constructions and a test allocator made
 * the CPU default (the fake device context is in testutil.h).
 */
#ifndef ALLOY_TESTS_TENSORUTIL_H
#define ALLOY_TESTS_TENSORUTIL_H

#include "testutil.h"

/* Each element is a live marker; dtor checks and clears it. */
struct counted {
	int64_t value;
	unsigned magic;
};
#define COUNTED_MAGIC 0xc0ffeeu

struct counted_stats {
	long ctors, dtors, copies, bad_dtors;
	long fail_ctor; /* ctor fails while > 0 */
};
extern struct counted_stats counted_stats;

/* The "counted" type, registered on first use in this (forked) test. */
const struct alloy_type_meta *counted_type(void);

/* Register ta as name and make it the CPU default. */
struct alloy_allocator *use_test_alloc(struct test_alloc *ta, const char *name);

#endif /* ALLOY_TESTS_TENSORUTIL_H */
