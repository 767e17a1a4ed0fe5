/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/testutil.h - helpers shared by the suites, and the test
 * allocator.
 */
#ifndef ALLOY_TESTS_TESTUTIL_H
#define ALLOY_TESTS_TESTUTIL_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <check.h>
#include <alloy/alloy.h>

/*
 * A white-box allocator: each block carries its maker's id in a header,
 * so a block freed by the wrong allocator is caught (bad_frees), and it
 * can be told to fail from the n-th allocation on.
 */
struct test_alloc {
	char name[ALLOY_NAME_MAX + 1];
	unsigned id;
	int device_type;
	atomic_long allocs;
	atomic_long frees;
	atomic_long bad_frees;
	atomic_long live_bytes;
	atomic_long
		fail_from; /* fail allocations numbered >= this; 0 = never */
	/* atomic: threads of the stress tests allocate from one at once */
	_Atomic size_t last_size;
	_Atomic size_t last_align;
	_Atomic unsigned last_flags;
};

/* Register ta under name (device cpu); aborts the test on failure. */
struct alloy_allocator *test_alloc_register(struct test_alloc *ta,
					    const char *name);

/* The ops a test allocator uses, to build variants from. */
struct alloy_allocator_ops test_alloc_ops(const char *name);

/*
 * Register ta under name with ops (test_alloc_ops(name) with some ops
 * changed); aborts the test on failure.
 */
struct alloy_allocator *
test_alloc_register_ops(struct test_alloc *ta, const char *name,
			const struct alloy_allocator_ops *ops);

/* Copies made by the fake device context's copy_bytes. */
extern int fake_copies;

/* The ops of a fake context for device_type whose memory is CPU memory. */
struct alloy_context_ops fake_context_ops(int device_type);

/* Register that fake context, replacing any context of device_type. */
void fake_device_register(int device_type);

/* Set ALLOY_CONF for the library's first use in this (forked) test. */
void test_set_conf(const char *conf);

/*
 * Run fn(arg) with stderr going to a file; returns what it wrote (a
 * static buffer, valid until the next call).
 */
const char *test_stderr_of(void (*fn)(void *arg), void *arg);

/*
 * The free-list check of a cache that keeps a's blocks of size at align
 * (allocators/freelink.h): a kept block's link is hidden, and one written
 * to after its free so that its link decodes to no block of the list
 * ends the list there - the head is still handed out, the blocks after
 * it and the written address never are, and stderr says so.
 */
void test_check_bad_link(struct alloy_allocator *a, size_t size, size_t align);

/* How many lines of text contain what. */
int test_count_lines_with(const char *text, const char *what);

#define ck_assert_ok(expr)                                                \
	do {                                                              \
		int rc_ = (expr);                                         \
		ck_assert_msg(rc_ == 0, "%s returned %d: %s", #expr, rc_, \
			      alloy_last_error());                        \
	} while (0)

/* Every suite's constructor, declared once for -Wmissing-prototypes. */
#include "suites.h"
#define ALLOY_DECLARE_SUITE(name) Suite *suite_##name(void);
ALLOY_TEST_SUITES (ALLOY_DECLARE_SUITE)

#endif /* ALLOY_TESTS_TESTUTIL_H */
