/* SPDX-License-Identifier: MIT */
/*
 * tests/backendutil.h - the check both backend modules' suites make of
 * blocks of many sizes at many alignments: the alignment asked for, zeroed
 * when asked even where the memory was used before, usable for its size,
 * made by the backend itself, and given back whole by the free (the
 * backend's own count of what this thread holds returns to where it was).
 *
 * The sizes cover every size up to 1100 bytes, so every small size class
 * and both sides of each class boundary, then sizes spaced out to 2 MiB;
 * the alignments go from 8 to 64 KiB.  Both of each module's paths (the
 * backend's plain call, where its size class is aligned enough, and its
 * aligned call) are therefore taken many times.
 */
#ifndef ALLOY_TESTS_BACKENDUTIL_H
#define ALLOY_TESTS_BACKENDUTIL_H

#include <stdint.h>
#include <string.h>

#include "testutil.h"

struct backend_probe {
	/* Whether the backend made the block at p. */
	bool (*owned)(void *p, size_t size);
	/* What the backend counts as held by this thread, in its own unit. */
	long long (*held)(void);
};

static const size_t backend_aligns[] = { 8, 16, 32, 64, 128, 256, 4096, 65536 };

static inline size_t backend_next_size(size_t size)
{
	if (size < 1100)
		return size + 1;
	if (size < 70000)
		return size + 997;
	return size * 2 + 1;
}

/* Every byte of p[0..n) reads as zero (a page at a time: up to 2 MiB). */
static inline bool backend_all_zero(const unsigned char *p, size_t n)
{
	static const unsigned char zero[4096];

	for (size_t i = 0; i < n; i += sizeof(zero))
		if (memcmp(p + i, zero,
			   n - i < sizeof(zero) ? n - i : sizeof(zero)))
			return false;
	return true;
}

static inline void backend_check_block(struct alloy_allocator *a,
				       const struct backend_probe *probe,
				       size_t size, size_t align)
{
	long long held = probe->held();
	struct alloy_data_ptr dp;

	/* Dirty a block of this size first, so a reused one shows it. */
	ck_assert_ok(alloy_alloc(a, size, align, 0, &dp));
	ck_assert_msg((uintptr_t)dp.ptr % align == 0,
		      "%zu bytes at alignment %zu: %p", size, align, dp.ptr);
	memset(dp.ptr, 0xa5, size);
	alloy_data_ptr_free(&dp);
	ck_assert_msg(probe->held() == held,
		      "%zu bytes at alignment %zu: the free left %lld", size,
		      align, probe->held() - held);

	ck_assert_ok(alloy_alloc(a, size, align, ALLOY_ALLOC_ZERO, &dp));
	ck_assert_msg((uintptr_t)dp.ptr % align == 0,
		      "%zu zeroed bytes at alignment %zu: %p", size, align,
		      dp.ptr);
	ck_assert_msg(probe->owned(dp.ptr, size),
		      "%zu bytes at %p are not the backend's", size, dp.ptr);
	ck_assert_uint_ge(alloy_allocator_usable_size(a, dp.ptr, size), size);
	ck_assert_msg(backend_all_zero(dp.ptr, size),
		      "%zu bytes at alignment %zu are not zero", size, align);
	memset(dp.ptr, 0x5a, size);
	alloy_data_ptr_free(&dp);
	ck_assert_msg(probe->held() == held,
		      "%zu zeroed bytes at alignment %zu: the free left %lld",
		      size, align, probe->held() - held);
}

static inline void backend_check_blocks(struct alloy_allocator *a,
					const struct backend_probe *probe)
{
	for (size_t i = 0;
	     i < sizeof(backend_aligns) / sizeof(backend_aligns[0]); i++)
		for (size_t size = 1; size <= (2 << 20);
		     size = backend_next_size(size))
			backend_check_block(a, probe, size, backend_aligns[i]);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
}

/*
 * One block grown and shrunk across both paths of a module: it keeps its
 * contents and its alignment, and the backend gets all of it back.
 */
static inline void backend_check_realloc(struct alloy_allocator *a,
					 const struct backend_probe *probe)
{
	static const size_t sizes[] = { 64, 80, 4096, 40, 1 << 20, 200, 64 };
	long long held = probe->held();
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(a, sizes[0], 64, 0, &dp));
	memset(dp.ptr, 9, sizes[0]);
	for (size_t i = 1; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t keep = sizes[i] < sizes[i - 1] ? sizes[i] : sizes[i - 1];

		ck_assert_ok(alloy_data_ptr_realloc(&dp, sizes[i]));
		ck_assert_uint_eq((uintptr_t)dp.ptr % 64, 0);
		ck_assert_int_eq(((char *)dp.ptr)[keep - 1], 9);
		memset(dp.ptr, 9, sizes[i]);
	}
	alloy_data_ptr_free(&dp);
	ck_assert_int_eq(probe->held(), held);
}

#endif /* ALLOY_TESTS_BACKENDUTIL_H */
