/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/backendutil.h - the check both backend modules' suites make of
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

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"
#include "modules/modtcache.h"

struct backend_probe {
	/* Whether the backend made the block at p. */
	bool (*owned)(void *p, size_t size);
	/* What the backend counts as held by this thread, in its own unit. */
	long long (*held)(void);
	/* What held() counts for one block of class_bytes. */
	long long (*units)(size_t class_bytes);
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

/*
 * A thread's cache in a module (modules/modtcache.h) is a block of the
 * backend's, made at the thread's first keep and given back at its exit:
 * make it, empty, so that what a test counts after is the blocks kept.
 */
static inline void backend_make_thread_cache(struct alloy_allocator *a)
{
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(a, 4000, 64, 0, &dp));
	alloy_data_ptr_free(&dp);
	ck_assert_int_ge(alloy_allocator_trim(a), 0);
}

/*
 * The module's per-thread cache (modules/modtcache.h), with a default
 * configuration: a freed block serves the next request of its class at
 * any alignment up to 64, zeroed when asked; a list keeps at most the
 * depth, and 64 KiB beyond its first block; a block grown into the range
 * holds its class's bytes; other sizes and alignments are not kept; trim
 * gives everything back; thread_cache:0 keeps nothing, a bad count is
 * named and refused.
 */
static inline void backend_check_thread_cache(struct alloy_allocator *a,
					      const struct backend_probe *probe)
{
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	struct alloy_data_ptr dp[10];
	long long base, kept;
	void *first;

	backend_make_thread_cache(a);
	base = probe->held();
	ck_assert_ok(alloy_alloc(a, 4000, 64, 0, &dp[0]));
	first = dp[0].ptr;
	memset(first, 0xa5, 4000);
	alloy_data_ptr_free(&dp[0]);
	kept = probe->units(4096);
	ck_assert_int_eq(probe->held() - base, kept);
	/* 3585 .. 4096 bytes: the same class, the same block. */
	ck_assert_ok(alloy_alloc(a, 3600, 8, ALLOY_ALLOC_ZERO, &dp[0]));
	ck_assert_ptr_eq(dp[0].ptr, first);
	ck_assert(backend_all_zero(dp[0].ptr, 3600));
	ck_assert_uint_ge(alloy_allocator_usable_size(a, dp[0].ptr, 3600),
			  4096);
	alloy_data_ptr_free(&dp[0]);
	ck_assert_int_eq(probe->held() - base, kept);

	for (int i = 0; i < 10; i++)
		ck_assert_ok(alloy_alloc(a, 5000, 64, 0, &dp[i]));
	for (int i = 0; i < 10; i++)
		alloy_data_ptr_free(&dp[i]);
	kept += MTCACHE_DEPTH_DEFAULT * probe->units(5120);
	ck_assert_int_eq(probe->held() - base, kept);
	for (int i = 0; i < 5; i++)
		ck_assert_ok(alloy_alloc(a, 60000, 64, 0, &dp[i]));
	for (int i = 0; i < 5; i++)
		alloy_data_ptr_free(&dp[i]);
	kept += 2 * probe->units(65536);
	ck_assert_int_eq(probe->held() - base, kept);

	ck_assert_ok(alloy_alloc(a, 100, 64, 0, &dp[0]));
	ck_assert_ok(alloy_data_ptr_realloc(&dp[0], 2800));
	ck_assert_uint_ge(alloy_allocator_usable_size(a, dp[0].ptr, 2800),
			  3072);
	alloy_data_ptr_free(&dp[0]);
	kept += probe->units(3072);
	ck_assert_int_eq(probe->held() - base, kept);

	/*
	 * Not kept: below every module's range, aligned above 64, above 64 KiB.
	 */
	ck_assert_ok(alloy_alloc(a, 32, 64, 0, &dp[0]));
	ck_assert_ok(alloy_alloc(a, 4000, 128, 0, &dp[1]));
	ck_assert_ok(alloy_alloc(a, 70000, 4096, 0, &dp[2]));
	for (int i = 0; i < 3; i++)
		alloy_data_ptr_free(&dp[i]);
	ck_assert_int_eq(probe->held() - base, kept);
	ck_assert_int_ge(alloy_allocator_trim(a), 0);
	ck_assert_int_eq(probe->held(), base);

	ck_assert_ok(ops->set_option(ctx, "thread_cache", "0"));
	ck_assert_ok(alloy_alloc(a, 4000, 64, 0, &dp[0]));
	alloy_data_ptr_free(&dp[0]);
	ck_assert_int_eq(probe->held(), base);
	ck_assert_int_eq(ops->set_option(ctx, "thread_cache", "256"), -ERANGE);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "0 to 255"));
	ck_assert_int_eq(ops->set_option(ctx, "thread_cache", "some"), -ERANGE);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "\"some\""));
	ck_assert_ok(ops->set_option(ctx, "thread_cache", "7"));
}

/*
 * The thread cache's links (allocators/freelink.h), at a DataPtr's 64;
 * at 64 KiB too, where a backend's aligned blocks gave a zero written
 * into a link a decoding that passed before the links had a secret.
 */
static inline void backend_check_bad_link(struct alloy_allocator *a)
{
	test_check_bad_link(a, 4000, 64);
	test_check_bad_link(a, 65536, 64);
}

/*
 * A process that has used up its thread-specific keys: the module cannot
 * have the key that empties its thread cache at thread exit, so its load
 * fails and says why (rather than a cache whose blocks leak at every
 * thread exit); with a key free again it loads.
 */
static inline void backend_check_no_thread_key(const char *module)
{
	static pthread_key_t keys[PTHREAD_KEYS_MAX];
	size_t n = 0;

	ck_assert_int_eq(alloy_init(), 0);
	while (n < PTHREAD_KEYS_MAX && !pthread_key_create(&keys[n], NULL))
		n++;
	ck_assert_int_eq(alloy_plugin_load(module), -EAGAIN);
	ck_assert_msg(strstr(alloy_last_error(),
			     "no thread-exit key for the per-thread cache"),
		      "%s", alloy_last_error());
	while (n > 0)
		pthread_key_delete(keys[--n]);
	ck_assert_int_eq(alloy_plugin_load(module), 0);
	ck_assert_int_eq(alloy_plugin_unload(module), 0);
}

/*
 * A thread that was running before the module was loaded: its pointer
 * to its cache (initial-exec TLS, set to a cache that keeps nothing in
 * the TLS image) was copied into it at the load, not at the thread's
 * start, and the inline paths read it with no test for NULL.  The thread
 * allocates through the module, its freed 64 B block serves its next
 * request at a DataPtr's 64, and it exits with its cache given back.
 */
struct backend_early_thread {
	pthread_barrier_t loaded;
	struct alloy_allocator *a;
	void *first, *again;
};

static inline void *backend_early_thread_main(void *arg)
{
	struct backend_early_thread *e = arg;
	struct alloy_data_ptr dp;

	pthread_barrier_wait(&e->loaded);
	for (int i = 0; i < 2; i++) {
		if (alloy_alloc(e->a, 64, 64, 0, &dp))
			return NULL;
		*(i ? &e->again : &e->first) = dp.ptr;
		alloy_data_ptr_free(&dp);
	}
	return NULL;
}

static inline void backend_check_thread_before_load(const char *module,
						    const char *conf,
						    const char *name)
{
	struct backend_early_thread e = { 0 };
	pthread_t t;

	ck_assert_ptr_null(dlopen(module, RTLD_NOW | RTLD_NOLOAD));
	ck_assert_int_eq(pthread_barrier_init(&e.loaded, NULL, 2), 0);
	ck_assert_int_eq(
		pthread_create(&t, NULL, backend_early_thread_main, &e), 0);
	test_set_conf(conf);
	ck_assert_int_eq(alloy_init(), 0);
	ck_assert_ptr_nonnull(e.a = alloy_find_allocator(name));
	pthread_barrier_wait(&e.loaded);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	pthread_barrier_destroy(&e.loaded);
	ck_assert_ptr_nonnull(e.first);
	ck_assert_ptr_eq(e.again, e.first);
}

#endif /* ALLOY_TESTS_BACKENDUTIL_H */
