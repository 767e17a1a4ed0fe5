// SPDX-License-Identifier: MIT
/*
 * tests/unit/tensorutil.c - helpers of the tensor-layer suites.
 */
#include <string.h>

#include "tensorutil.h"

struct counted_stats counted_stats;

static int counted_ctor(void *p, size_t n)
{
	struct counted *c = p;

	if (counted_stats.fail_ctor > 0) {
		counted_stats.fail_ctor--;
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		c[i].value = 0;
		c[i].magic = COUNTED_MAGIC;
	}
	counted_stats.ctors += (long)n;
	return 0;
}

static void counted_dtor(void *p, size_t n)
{
	struct counted *c = p;

	for (size_t i = 0; i < n; i++) {
		if (c[i].magic != COUNTED_MAGIC)
			counted_stats.bad_dtors++;
		c[i].magic = 0;
	}
	counted_stats.dtors += (long)n;
}

static int counted_copy(const void *src, void *dst, size_t n)
{
	const struct counted *s = src;
	struct counted *d = dst;

	for (size_t i = 0; i < n; i++)
		d[i].value = s[i].value;
	counted_stats.copies += (long)n;
	return 0;
}

const struct alloy_type_meta *counted_type(void)
{
	static const struct alloy_type_meta *t;
	struct alloy_type_meta m = {
		.name = "counted",
		.itemsize = sizeof(struct counted),
		.ctor = counted_ctor,
		.dtor = counted_dtor,
		.copy = counted_copy,
	};

	if (!t)
		ck_assert_ok(alloy_type_register(&m, &t));
	return t;
}

struct alloy_allocator *use_test_alloc(struct test_alloc *ta, const char *name)
{
	struct alloy_allocator *a = test_alloc_register(ta, name);

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	return a;
}
