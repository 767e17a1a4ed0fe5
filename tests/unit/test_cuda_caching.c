// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_cuda_caching.c - the CUDA caching allocator's policy on the
 * simulated device: rounding and pools, best fit, split and merge, reuse
 * per stream with record_stream, empty_cache, the options, out-of-memory
 * (retry after freeing the cache, after synchronising, then a message
 * with the figures), and statistics that equal the sums over a snapshot.
 */
#include <pthread.h>
#include <string.h>

#include "testutil.h"

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static struct alloy_cuda_sim *sim;

/* A caching allocator on a fresh simulated device of cap bytes. */
static struct alloy_allocator *fresh(size_t cap)
{
	struct alloy_allocator *a;

	ck_assert_ok(alloy_cuda_sim_create(cap, &sim));
	ck_assert_ok(alloy_cuda_caching_register_sim(sim, "cc_test", &a));
	return a;
}

static struct alloy_cuda_stats stats(struct alloy_allocator *a)
{
	struct alloy_cuda_stats st = { .size = sizeof(st),
				       .version = ALLOY_CUDA_STATS_VERSION };

	ck_assert_ok(alloy_cuda_caching_stats(a, 0, &st));
	return st;
}

static void *get(struct alloy_allocator *a, size_t size,
		 struct alloy_data_ptr *dp)
{
	ck_assert_ok(alloy_alloc(a, size, 0, 0, dp));
	return dp->ptr;
}

START_TEST(sizes_round_to_512_and_pools_split_at_1MiB)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr d1, d2, d3, d4;
	struct alloy_cuda_stats st;

	get(a, 1, &d1);
	ck_assert_uint_eq(alloy_allocator_usable_size(a, d1.ptr, 1), 512);
	get(a, 1000, &d2);
	ck_assert_uint_eq(alloy_allocator_usable_size(a, d2.ptr, 1000), 1024);
	st = stats(a);
	/* Both small: one 2 MiB segment. */
	ck_assert_int_eq(st.segment[ALLOY_CUDA_POOL_SMALL].current, 1);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_SMALL].current,
			 2 * MiB);
	ck_assert_int_eq(st.allocated_bytes[ALLOY_CUDA_POOL_SMALL].current,
			 1536);
	ck_assert_int_eq(st.requested_bytes[ALLOY_CUDA_POOL_ALL].current, 1001);
	/* 10 MiB and more: its own segment rounded to 2 MiB. */
	get(a, 11 * MiB + 1, &d4);
	st = stats(a);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_LARGE].current,
			 12 * MiB);
	/* Just above 1 MiB: large pool, a 20 MiB segment (the rest of the
	 * 12 MiB one, under 1 MiB, was not split off). */
	get(a, MiB + 1, &d3);
	st = stats(a);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_LARGE].current,
			 (20 + 12) * MiB);
	ck_assert_int_eq(st.num_device_alloc, 3);
	ck_assert_uint_eq((uintptr_t)d1.ptr % 512, 0);
	ck_assert_uint_eq((uintptr_t)d2.ptr % 512, 0);
	alloy_data_ptr_free(&d1);
	alloy_data_ptr_free(&d2);
	alloy_data_ptr_free(&d3);
	alloy_data_ptr_free(&d4);
	st = stats(a);
	ck_assert_int_eq(st.allocated_bytes[ALLOY_CUDA_POOL_ALL].current, 0);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current,
			 34 * MiB);
}
END_TEST

START_TEST(steady_state_makes_no_device_calls)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	static const size_t sizes[] = { 100, 4096, 300 * KiB, 3 * MiB,
					64 * MiB };
	struct alloy_data_ptr dp[5];
	struct alloy_cuda_sim_counts c0, c1;

	for (int it = 0; it < 50; it++) {
		if (it == 1)
			ck_assert_ok(alloy_cuda_sim_counts(sim, &c0));
		for (int i = 0; i < 5; i++)
			get(a, sizes[i], &dp[i]);
		for (int i = 0; i < 5; i++)
			alloy_data_ptr_free(&dp[i]);
	}
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c1));
	ck_assert_uint_eq(c1.dev_mallocs, c0.dev_mallocs);
	ck_assert_uint_eq(c1.dev_frees, 0);
	ck_assert_int_eq(stats(a).num_device_alloc, 3);
}
END_TEST

START_TEST(best_fit_takes_the_smallest_hole)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr dp[7], x;
	static const size_t sizes[] = { 4 * KiB, 1 * KiB, 16 * KiB, 1 * KiB,
					8 * KiB, 1 * KiB, 12 * KiB };

	/* One segment: holes of 4, 16, 8 and 12 KiB between 1 KiB blocks. */
	for (int i = 0; i < 7; i++)
		get(a, sizes[i], &dp[i]);
	for (int i = 1; i < 7; i++)
		ck_assert_ptr_eq((char *)dp[i - 1].ptr + sizes[i - 1],
				 dp[i].ptr);
	void *hole8 = dp[4].ptr, *hole12 = dp[6].ptr;

	alloy_data_ptr_free(&dp[0]);
	alloy_data_ptr_free(&dp[2]);
	alloy_data_ptr_free(&dp[4]);
	alloy_data_ptr_free(&dp[6]); /* merges with the segment's tail */
	(void)hole12;
	get(a, 6 * KiB, &x);
	ck_assert_ptr_eq(x.ptr, hole8);
	alloy_data_ptr_free(&x);
	for (int i = 1; i < 7; i += 2)
		alloy_data_ptr_free(&dp[i]);
}
END_TEST

static int count_blocks(const struct alloy_cuda_block_info *b, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

START_TEST(split_blocks_merge_back_when_freed)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr x, y, z;
	struct alloy_cuda_stats st;
	int n = 0;

	get(a, 10 * KiB, &x);
	get(a, 10 * KiB, &y);
	get(a, 10 * KiB, &z);
	st = stats(a);
	/* x, y, z and the rest of the segment. */
	ck_assert_int_eq(st.inactive_split[ALLOY_CUDA_POOL_ALL].current, 1);
	ck_assert_int_eq(st.inactive_split_bytes[ALLOY_CUDA_POOL_ALL].current,
			 2 * MiB - 30 * KiB);
	alloy_data_ptr_free(&y);
	st = stats(a);
	ck_assert_int_eq(st.inactive_split[ALLOY_CUDA_POOL_ALL].current, 2);
	alloy_data_ptr_free(&x); /* merges with y's hole */
	st = stats(a);
	ck_assert_int_eq(st.inactive_split[ALLOY_CUDA_POOL_ALL].current, 2);
	ck_assert_int_eq(st.inactive_split_bytes[ALLOY_CUDA_POOL_ALL].current,
			 2 * MiB - 10 * KiB);
	alloy_data_ptr_free(&z); /* everything merges: one free block */
	st = stats(a);
	ck_assert_int_eq(st.inactive_split[ALLOY_CUDA_POOL_ALL].current, 0);
	ck_assert_int_eq(st.inactive_split_bytes[ALLOY_CUDA_POOL_ALL].current,
			 0);
	ck_assert_ok(alloy_cuda_caching_foreach_block(a, count_blocks, &n));
	ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(blocks_are_reused_per_stream)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr x, y;
	void *s1, *p;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	p = get(a, 64 * KiB, &x);
	alloy_data_ptr_free(&x);
	/* Another stream never gets the default stream's cached block... */
	alloy_cuda_set_stream(s1);
	get(a, 64 * KiB, &y);
	ck_assert_ptr_ne(y.ptr, p);
	alloy_data_ptr_free(&y);
	/* ...while its own stream does. */
	alloy_cuda_set_stream(NULL);
	get(a, 64 * KiB, &x);
	ck_assert_ptr_eq(x.ptr, p);
	alloy_data_ptr_free(&x);
	ck_assert_int_eq(stats(a).segment[ALLOY_CUDA_POOL_ALL].current, 2);
}
END_TEST

START_TEST(record_stream_delays_reuse_until_the_work_is_done)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr x, y, z;
	struct alloy_cuda_stats st;
	void *s1, *p;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	p = get(a, 256 * KiB, &x);
	ck_assert_ok(alloy_cuda_record_stream(&x, s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true)); /* s1's work runs */
	alloy_data_ptr_free(&x);
	st = stats(a);
	ck_assert_int_eq(st.allocated_bytes[ALLOY_CUDA_POOL_ALL].current, 0);
	ck_assert_int_eq(st.active_bytes[ALLOY_CUDA_POOL_ALL].current,
			 256 * KiB);
	get(a, 256 * KiB, &y);
	ck_assert_ptr_ne(y.ptr, p);
	/* The copy on s1 finishes: the block comes back. */
	ck_assert_ok(alloy_cuda_sim_complete(sim, s1));
	get(a, 256 * KiB, &z);
	ck_assert_ptr_eq(z.ptr, p);
	alloy_data_ptr_free(&y);
	alloy_data_ptr_free(&z);
	st = stats(a);
	ck_assert_int_eq(st.active_bytes[ALLOY_CUDA_POOL_ALL].current, 0);
}
END_TEST

START_TEST(free_async_on_another_stream_waits_for_it)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	void *s1, *p, *q;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true));
	p = ops->alloc_async(ctx, 4096, 0, 0, NULL);
	ck_assert_ptr_nonnull(p);
	ops->free_async(ctx, p, 4096, 0, s1);
	q = ops->alloc_async(ctx, 4096, 0, 0, NULL);
	ck_assert_ptr_ne(q, p);
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, false));
	ops->free(ctx, q, 4096, 0);
	q = ops->alloc_async(ctx, 4096, 0, 0, NULL);
	ck_assert_ptr_eq(q, p);
	ops->free(ctx, q, 4096, 0);
}
END_TEST

START_TEST(empty_cache_returns_every_unused_segment)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr x, y, keep;
	struct alloy_cuda_sim_counts c;
	struct alloy_cuda_stats st;

	get(a, 100, &keep);
	get(a, 5 * MiB, &x);
	get(a, 50 * MiB, &y);
	alloy_data_ptr_free(&x);
	alloy_data_ptr_free(&y);
	ck_assert_int_eq(alloy_cuda_caching_empty_cache(a), (20 + 50) * MiB);
	st = stats(a);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current,
			 2 * MiB);
	ck_assert_int_eq(st.num_device_free, 2);
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.dev_bytes_in_use, 2 * MiB);
	alloy_data_ptr_free(&keep);
	ck_assert_int_eq(alloy_allocator_trim(a), 2 * MiB);
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.dev_bytes_in_use, 0);
	ck_assert_int_eq(stats(a).reserved_bytes[ALLOY_CUDA_POOL_ALL].peak,
			 72 * MiB);
}
END_TEST

START_TEST(out_of_memory_frees_the_cache_and_retries)
{
	struct alloy_allocator *a = fresh(32 * MiB);
	struct alloy_data_ptr x;
	struct alloy_cuda_stats st;

	get(a, 12 * MiB, &x);
	alloy_data_ptr_free(&x); /* cached: 12 of 32 MiB reserved, too small */
	get(a, 24 * MiB, &x);	 /* only fits once the cache is released */
	st = stats(a);
	ck_assert_int_eq(st.num_alloc_retries, 1);
	ck_assert_int_eq(st.num_ooms, 0);
	ck_assert_int_eq(st.num_device_free, 1);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current,
			 24 * MiB);
	alloy_data_ptr_free(&x);
}
END_TEST

START_TEST(out_of_memory_synchronizes_pending_frees_and_retries)
{
	struct alloy_allocator *a = fresh(32 * MiB);
	struct alloy_data_ptr x;
	struct alloy_cuda_stats st;
	void *s1;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	get(a, 12 * MiB, &x);
	ck_assert_ok(alloy_cuda_record_stream(&x, s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true));
	alloy_data_ptr_free(&x); /* pending on s1's work */
	get(a, 24 * MiB, &x);
	st = stats(a);
	ck_assert_int_eq(st.num_alloc_retries, 1);
	ck_assert_int_ge(st.num_sync_all_streams, 1);
	ck_assert_int_eq(st.num_ooms, 0);
	alloy_data_ptr_free(&x);
}
END_TEST

START_TEST(out_of_memory_message_gives_the_figures)
{
	struct alloy_allocator *a = fresh(64 * MiB);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	struct alloy_data_ptr small[3], big, none;
	struct alloy_cuda_stats st;
	const char *msg;
	void *p;

	/* Fragment: 3 blocks in one 20 MiB segment, the middle one freed. */
	for (int i = 0; i < 3; i++)
		get(a, 6 * MiB, &small[i]);
	get(a, 40 * MiB, &big);
	alloy_data_ptr_free(&small[1]);
	p = ops->alloc(alloy_allocator_ctx(a), 30 * MiB, 0, 0);
	ck_assert_ptr_null(p);
	msg = alloy_last_error();
	ck_assert_msg(
		strstr(msg,
		       "cc_test: out of memory: tried to allocate 30.00 MiB"),
		"%s", msg);
	ck_assert_msg(strstr(msg, "device total 64.00 MiB, free 4.00 MiB"),
		      "%s", msg);
	ck_assert_msg(strstr(msg, "allocated 52.00 MiB"), "%s", msg);
	ck_assert_msg(strstr(msg, "reserved but unallocated 8.00 MiB"), "%s",
		      msg);
	ck_assert_msg(strstr(msg, "largest free block 6.00 MiB"), "%s", msg);
	st = stats(a);
	ck_assert_int_eq(st.num_ooms, 1);
	/* Through the registry too: NULL DataPtr and -ENOMEM, no crash. */
	ck_assert_int_eq(alloy_alloc(a, 30 * MiB, 0, 0, &none), -ENOMEM);
	ck_assert_ptr_null(none.ptr);
	for (int i = 0; i < 3; i++)
		alloy_data_ptr_free(&small[i]);
	alloy_data_ptr_free(&big);
}
END_TEST

START_TEST(big_segments_are_kept_for_big_requests)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr x, y;
	void *p;

	p = get(a, 30 * MiB, &x);
	alloy_data_ptr_free(&x);
	/* 8 MiB gets a 20 MiB segment, not a piece of the 30 MiB one... */
	get(a, 8 * MiB, &y);
	ck_assert_ptr_ne(y.ptr, p);
	ck_assert_int_eq(stats(a).reserved_bytes[0].current, 50 * MiB);
	/* ...which stays whole for the 30 MiB request of the next step. */
	get(a, 30 * MiB, &x);
	ck_assert_ptr_eq(x.ptr, p);
	alloy_data_ptr_free(&x);
	alloy_data_ptr_free(&y);
	ck_assert_int_eq(stats(a).num_device_alloc, 2);
}
END_TEST

START_TEST(under_pressure_any_segment_serves)
{
	struct alloy_allocator *a = fresh(40 * MiB);
	struct alloy_data_ptr x, y;
	struct alloy_cuda_stats st;

	get(a, 30 * MiB, &x);
	alloy_data_ptr_free(&x);
	get(a, 12 * MiB, &x); /* carved from the 30 MiB segment */
	/* No room for a 20 MiB segment: the 18 MiB free rest serves. */
	get(a, 8 * MiB, &y);
	ck_assert_ptr_eq(y.ptr, (char *)x.ptr + 12 * MiB);
	st = stats(a);
	ck_assert_int_eq(st.num_device_alloc, 1);
	ck_assert_int_eq(st.num_alloc_retries, 1);
	ck_assert_int_eq(st.num_ooms, 0);
	alloy_data_ptr_free(&x);
	alloy_data_ptr_free(&y);
}
END_TEST

START_TEST(max_split_size_keeps_big_blocks_whole)
{
	struct alloy_allocator *a;
	struct alloy_data_ptr x, y;
	struct alloy_cuda_stats st;
	void *p;

	test_set_conf("cuda_caching_sim.max_split_size:64M");
	a = alloy_find_allocator("cuda_caching_sim");
	ck_assert_ptr_nonnull(a);
	st = stats(a);
	ck_assert_uint_eq(st.max_split_size, 64 * MiB);
	p = get(a, 100 * MiB, &x);
	ck_assert_int_eq(stats(a).oversize_allocations.current, 1);
	ck_assert_int_eq(stats(a).oversize_segments.current, 1);
	alloy_data_ptr_free(&x);
	/* A 30 MiB request may not split the 100 MiB block. */
	get(a, 30 * MiB, &y);
	ck_assert_ptr_ne(y.ptr, p);
	alloy_data_ptr_free(&y);
	/* 90 MiB is close enough (within 20 MiB) to take it whole. */
	get(a, 90 * MiB, &y);
	ck_assert_ptr_eq(y.ptr, p);
	ck_assert_uint_eq(alloy_allocator_usable_size(a, y.ptr, 90 * MiB),
			  100 * MiB);
	alloy_data_ptr_free(&y);
	ck_assert_int_eq(stats(a).num_device_alloc, 2);
}
END_TEST

/*
 * A block or segment leaves the oversize counts as it entered them, even
 * when max_split_size has changed while it was live.
 */
START_TEST(oversize_counts_survive_a_max_split_size_change)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	struct alloy_data_ptr x;
	struct alloy_cuda_stats st;

	/* Counted as not oversize, freed under a limit it is above. */
	get(a, 30 * MiB, &x);
	ck_assert_int_eq(stats(a).oversize_allocations.current, 0);
	ck_assert_ok(ops->set_option(ctx, "max_split_size", "25M"));
	alloy_data_ptr_free(&x);
	alloy_cuda_caching_empty_cache(a);
	st = stats(a);
	ck_assert_int_eq(st.oversize_allocations.current, 0);
	ck_assert_int_eq(st.oversize_segments.current, 0);
	/* Counted as oversize, freed once the limit is lifted. */
	get(a, 30 * MiB, &x);
	st = stats(a);
	ck_assert_int_eq(st.oversize_allocations.current, 1);
	ck_assert_int_eq(st.oversize_segments.current, 1);
	ck_assert_ok(ops->set_option(ctx, "max_split_size", "unlimited"));
	alloy_data_ptr_free(&x);
	ck_assert_int_eq(stats(a).oversize_allocations.current, 0);
	ck_assert_int_eq(stats(a).oversize_segments.current, 1);
	alloy_cuda_caching_empty_cache(a);
	st = stats(a);
	ck_assert_int_eq(st.oversize_allocations.current, 0);
	ck_assert_int_eq(st.oversize_allocations.freed, 1);
	ck_assert_int_eq(st.oversize_segments.current, 0);
}
END_TEST

START_TEST(bad_options_are_refused_with_clear_errors)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);

	ck_assert_int_eq(ops->set_option(ctx, "max_split_size", "1M"), -ERANGE);
	ck_assert_ptr_nonnull(
		strstr(alloy_last_error(), "max_split_size \"1M\""));
	ck_assert_int_eq(ops->set_option(ctx, "roundup_power2_divisions", "3"),
			 -ERANGE);
	ck_assert_int_eq(
		ops->set_option(ctx, "garbage_collection_threshold", "1.0"),
		-ERANGE);
	ck_assert_int_eq(
		ops->set_option(ctx, "garbage_collection_threshold", "x"),
		-ERANGE);
	ck_assert_int_eq(ops->set_option(ctx, "memory_fraction", "0"), -ERANGE);
	ck_assert_int_eq(ops->set_option(ctx, "memory_fraction", "1.5"),
			 -ERANGE);
	ck_assert_int_eq(ops->set_option(ctx, "no_such_thing", "1"), -EINVAL);
	ck_assert_ptr_nonnull(
		strstr(alloy_last_error(), "unknown option \"no_such_thing\""));
	ck_assert_ok(ops->set_option(ctx, "memory_fraction", "1"));
	ck_assert_ok(ops->set_option(ctx, "max_split_size", "unlimited"));
}
END_TEST

START_TEST(bad_option_in_conf_is_reported_and_ignored)
{
	struct alloy_allocator *a;

	test_set_conf("cuda_caching_sim.max_split_size:5M");
	ck_assert_int_ge(alloy_init(), 1);
	ck_assert_ptr_nonnull(strstr(alloy_conf_error(0), "max_split_size"));
	a = alloy_find_allocator("cuda_caching_sim");
	ck_assert_uint_eq(stats(a).max_split_size, 0); /* unlimited */
}
END_TEST

START_TEST(capacity_option_sizes_the_simulated_device)
{
	struct alloy_allocator *a;
	struct alloy_data_ptr x;

	test_set_conf("cuda_caching_sim.capacity:64M");
	ck_assert_int_eq(alloy_init(), 0);
	a = alloy_find_allocator("cuda_caching_sim");
	ck_assert_int_eq(alloy_alloc(a, 100 * MiB, 0, 0, &x), -ENOMEM);
	ck_assert_ptr_null(alloy_allocator_ops(a)->alloc(alloy_allocator_ctx(a),
							 100 * MiB, 0, 0));
	ck_assert_msg(strstr(alloy_last_error(), "device total 64.00 MiB"),
		      "%s", alloy_last_error());
	get(a, 60 * MiB, &x);
	alloy_data_ptr_free(&x);
}
END_TEST

START_TEST(roundup_power2_divisions_rounds_to_a_division)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	struct alloy_data_ptr x;
	size_t size = 1258291; /* 1.2 MiB: between 1 and 2 MiB, steps of 256K */

	ck_assert_ok(ops->set_option(alloy_allocator_ctx(a),
				     "roundup_power2_divisions", "4"));
	get(a, size, &x);
	ck_assert_uint_eq(alloy_allocator_usable_size(a, x.ptr, size), 1310720);
	alloy_data_ptr_free(&x);
}
END_TEST

START_TEST(memory_fraction_limits_what_is_reserved)
{
	struct alloy_allocator *a = fresh(64 * MiB);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	struct alloy_data_ptr x;

	ck_assert_ok(ops->set_option(alloy_allocator_ctx(a), "memory_fraction",
				     "0.5"));
	ck_assert_int_eq(alloy_alloc(a, 40 * MiB, 0, 0, &x), -ENOMEM);
	ck_assert_int_eq(stats(a).num_ooms, 1);
	ck_assert_int_eq(stats(a).num_device_alloc, 0);
	get(a, 30 * MiB, &x);
	alloy_data_ptr_free(&x);
}
END_TEST

START_TEST(garbage_collection_releases_the_oldest_unused_segments)
{
	struct alloy_allocator *a = fresh(100 * MiB);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	struct alloy_data_ptr x, y;
	struct alloy_cuda_stats st;
	void *p32;

	ck_assert_ok(ops->set_option(alloy_allocator_ctx(a),
				     "garbage_collection_threshold", "0.5"));
	get(a, 30 * MiB, &x);
	alloy_data_ptr_free(&x);
	p32 = get(a, 32 * MiB, &y);
	alloy_data_ptr_free(&y); /* 62 MiB cached, above 50 */
	get(a, 34 * MiB, &x);	 /* GC frees the 30 MiB one (older) only */
	st = stats(a);
	ck_assert_int_eq(st.num_device_free, 1);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current,
			 66 * MiB);
	alloy_data_ptr_free(&x);
	get(a, 32 * MiB, &y);
	ck_assert_ptr_eq(y.ptr, p32);
	alloy_data_ptr_free(&y);
}
END_TEST

START_TEST(zero_flag_zeroes_reused_blocks)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr x;
	unsigned char *p;

	p = get(a, 8192, &x);
	memset(p, 0xff, 8192);
	alloy_data_ptr_free(&x);
	ck_assert_ok(alloy_alloc(a, 8192, 0, ALLOY_ALLOC_ZERO, &x));
	ck_assert_ptr_eq(x.ptr, p);
	for (int i = 0; i < 8192; i++)
		ck_assert_uint_eq(p[i], 0);
	alloy_data_ptr_free(&x);
}
END_TEST

START_TEST(bad_requests_fail_cleanly)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	struct alloy_data_ptr x;
	int dummy;

	ck_assert_int_eq(alloy_alloc(a, 100, 4096, 0, &x), -ENOMEM);
	ck_assert_ptr_null(ops->alloc(alloy_allocator_ctx(a), 100, 4096, 0));
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "alignment 4096"));
	ops->free(alloy_allocator_ctx(a), &dummy, 4, 8);
	ck_assert_ptr_nonnull(
		strstr(alloy_last_error(), "was not allocated here"));
	ck_assert_int_eq(
		ops->record_stream(alloy_allocator_ctx(a), &dummy, NULL),
		-EINVAL);
	ck_assert_ok(alloy_cuda_set_device(1));
	ck_assert_ptr_null(ops->alloc(alloy_allocator_ctx(a), 100, 0, 0));
	ck_assert_ptr_nonnull(
		strstr(alloy_last_error(), "device 1 does not exist"));
	ck_assert_int_eq(alloy_cuda_set_device(-1), -ENODEV);
	ck_assert_int_eq(alloy_cuda_caching_stats(
				 alloy_find_allocator("default"), 0,
				 &(struct alloy_cuda_stats){ .size = 8 }),
			 -EINVAL);
}
END_TEST

/* ---- statistics equal the sums over the snapshot ------------------------- */

struct sums {
	int64_t allocation[3], segment[3], active[3], inactive_split[3];
	int64_t allocated[3], reserved[3], active_bytes[3], split_bytes[3];
	int64_t requested[3];
};

static void add(int64_t *v, int pool, int64_t d)
{
	v[ALLOY_CUDA_POOL_ALL] += d;
	v[pool] += d;
}

static int sum_block(const struct alloy_cuda_block_info *b, void *arg)
{
	struct sums *s = arg;

	if (b->segment_start) {
		add(s->segment, b->pool, 1);
		add(s->reserved, b->pool, (int64_t)b->segment_size);
	}
	if (b->state == ALLOY_CUDA_BLOCK_ACTIVE_ALLOCATED) {
		add(s->allocation, b->pool, 1);
		add(s->allocated, b->pool, (int64_t)b->size);
		add(s->requested, b->pool, (int64_t)b->requested_size);
	}
	if (b->state != ALLOY_CUDA_BLOCK_INACTIVE) {
		add(s->active, b->pool, 1);
		add(s->active_bytes, b->pool, (int64_t)b->size);
	} else if (b->size != b->segment_size) {
		add(s->inactive_split, b->pool, 1);
		add(s->split_bytes, b->pool, (int64_t)b->size);
	}
	return 0;
}

static void writer(void *arg, const char *str)
{
	FILE *f = arg;

	fputs(str, f);
}

/* "name":{"current":N in the snapshot's statistics. */
static long long json_current(const char *json, const char *name)
{
	char pat[96];
	const char *at;

	snprintf(pat, sizeof(pat), "\"%s\":{\"current\":", name);
	at = strstr(json, pat);
	ck_assert_msg(at, "no %s in the snapshot", name);
	return strtoll(at + strlen(pat), NULL, 10);
}

/* Braces and brackets nest properly outside strings. */
static bool brackets_balance(const char *s)
{
	char stack[64];
	int depth = 0;
	bool in_string = false;

	for (; *s; s++) {
		if (in_string) {
			in_string = *s != '"';
			continue;
		}
		if (*s == '"')
			in_string = true;
		else if (*s == '{' || *s == '[')
			stack[depth++] = *s == '{' ? '}' : ']';
		else if (*s == '}' || *s == ']')
			if (depth == 0 || stack[--depth] != *s)
				return false;
		if (depth == (int)sizeof(stack))
			return false;
	}
	return depth == 0 && !in_string;
}

static void check_against_snapshot(struct alloy_allocator *a)
{
	struct alloy_cuda_stats st = stats(a);
	struct sums s = { 0 };
	char *json = NULL;
	size_t len = 0;
	FILE *f;
	int nblocks = 0, nstates = 0;

	ck_assert_ok(alloy_cuda_caching_foreach_block(a, sum_block, &s));
	for (int p = 0; p < ALLOY_CUDA_POOL_COUNT; p++) {
		ck_assert_int_eq(st.allocation[p].current, s.allocation[p]);
		ck_assert_int_eq(st.segment[p].current, s.segment[p]);
		ck_assert_int_eq(st.active[p].current, s.active[p]);
		ck_assert_int_eq(st.inactive_split[p].current,
				 s.inactive_split[p]);
		ck_assert_int_eq(st.allocated_bytes[p].current, s.allocated[p]);
		ck_assert_int_eq(st.reserved_bytes[p].current, s.reserved[p]);
		ck_assert_int_eq(st.active_bytes[p].current, s.active_bytes[p]);
		ck_assert_int_eq(st.inactive_split_bytes[p].current,
				 s.split_bytes[p]);
		ck_assert_int_eq(st.requested_bytes[p].current, s.requested[p]);
	}
	/* The JSON shows the same blocks. */
	f = open_memstream(&json, &len);
	ck_assert_ok(alloy_cuda_caching_snapshot_json(a, writer, f));
	fclose(f);
	ck_assert_ok(
		alloy_cuda_caching_foreach_block(a, count_blocks, &nblocks));
	for (const char *p = json; (p = strstr(p, "\"state\":")); p++)
		nstates++;
	ck_assert_int_eq(nstates, nblocks);
	ck_assert_ptr_nonnull(strstr(json, "\"allocator\":\"cc_test\""));
	ck_assert_int_eq(json_current(json, "allocated_bytes.all"),
			 st.allocated_bytes[0].current);
	ck_assert_int_eq(json_current(json, "reserved_bytes.large_pool"),
			 st.reserved_bytes[ALLOY_CUDA_POOL_LARGE].current);
	ck_assert_msg(brackets_balance(json), "unbalanced: %.300s", json);
	free(json);
}

/* 3000 random allocations, frees and record_streams over all pools. */
static void random_run_checked(bool expandable)
{
	struct alloy_allocator *a = fresh(4ull << 30);
	struct alloy_data_ptr live[64] = { 0 };
	unsigned seed = 12345;
	void *s1;

	if (expandable)
		ck_assert_ok(alloy_allocator_ops(a)->set_option(
			alloy_allocator_ctx(a), "expandable_segments", "1"));
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true));
	for (int step = 0; step < 3000; step++) {
		int i = (int)((seed = seed * 1103515245 + 12345) >> 16) % 64;
		unsigned r = (seed = seed * 1103515245 + 12345) >> 8;
		size_t size;

		if (live[i].ptr) {
			if (r % 7 == 0)
				ck_assert_ok(
					alloy_cuda_record_stream(&live[i], s1));
			alloy_data_ptr_free(&live[i]);
		} else {
			switch (r % 4) {
			case 0:
				size = 1 + r % 4096;
				break;
			case 1:
				size = 1 + r % MiB;
				break;
			case 2:
				size = MiB + r % (9 * MiB);
				break;
			default:
				size = 10 * MiB + r % (30 * MiB);
				break;
			}
			ck_assert_ok(alloy_alloc(a, size, 0, 0, &live[i]));
		}
		if (step % 500 == 0)
			ck_assert_ok(alloy_cuda_sim_complete(sim, s1));
		if (step % 250 == 0)
			check_against_snapshot(a);
		if (step == 1500)
			alloy_cuda_caching_empty_cache(a);
	}
	check_against_snapshot(a);
	for (int i = 0; i < 64; i++)
		alloy_data_ptr_free(&live[i]);
	check_against_snapshot(a);
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, false));
	alloy_cuda_caching_empty_cache(a);
	check_against_snapshot(a);
	ck_assert_int_eq(stats(a).reserved_bytes[0].current, 0);
	ck_assert_int_eq(stats(a).segment[0].current, 0);
	ck_assert_uint_eq(stats(a).expandable_address_bytes, 0);
}

START_TEST(stats_equal_the_sums_over_the_snapshot)
{
	random_run_checked(false);
}
END_TEST

START_TEST(expandable_stats_equal_the_sums_over_the_snapshot)
{
	random_run_checked(true);
	ck_assert_uint_eq(stats(alloy_find_allocator("cc_test")).num_maps > 0,
			  1);
}
END_TEST

/* ---- graph pools ----------------------------------------------------------
 */

static int count_pool7(const struct alloy_cuda_block_info *b, void *arg)
{
	*(int *)arg += b->segment_start && b->pool_id == 7;
	return 0;
}

START_TEST(graph_pool_allocations_are_private_and_capture_safe)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr g1, g2, g3, t1, x, y;
	struct alloy_cuda_sim_counts c0, c1;
	void *s1, *s2, *old, *p1, *p3, *px;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s2));
	/* Cached memory of s1 from before: the capture must not get it. */
	old = alloy_cuda_current_stream();
	alloy_cuda_set_stream(s1);
	px = get(a, 4 * MiB, &x);
	alloy_data_ptr_free(&x);
	/* Work on s2 with a block to wait for at its free. */
	get(a, 100, &y);
	ck_assert_ok(alloy_cuda_record_stream(&y, s2));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s2, true));

	ck_assert_ok(alloy_cuda_sim_capture_begin(sim, s1));
	ck_assert_ok(alloy_cuda_caching_begin_pool(a, 0, s1, 7));
	p1 = get(a, 4 * MiB, &g1);
	ck_assert_ptr_ne(p1, px);
	get(a, 1000, &g2);
	/* Freed during the capture: reused by the capture itself. */
	alloy_data_ptr_free(&g1);
	p3 = get(a, 4 * MiB, &g3);
	ck_assert_ptr_eq(p3, p1);
	/* The free of a block used on s2 queries nothing now ... */
	alloy_data_ptr_free(&y);
	/* ... nor do empty_cache or an allocation elsewhere. */
	ck_assert_int_eq(alloy_cuda_caching_empty_cache(a), 0);
	alloy_cuda_set_stream(NULL);
	get(a, 200, &t1);
	alloy_cuda_set_stream(s1);
	ck_assert_ok(alloy_cuda_caching_end_pool(a, 0, s1));
	ck_assert_ok(alloy_cuda_sim_capture_end(sim, s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s2, false));

	/* After the capture, s1's own allocations do not get the pool's
	 * memory, even once the graph's blocks are freed. */
	alloy_data_ptr_free(&g3);
	ck_assert_ptr_ne(get(a, 4 * MiB, &x), p3);
	alloy_data_ptr_free(&x);
	/* A second capture sharing pool 7 reuses it: no device call. */
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c0));
	ck_assert_ok(alloy_cuda_sim_capture_begin(sim, s1));
	ck_assert_ok(alloy_cuda_caching_begin_pool(a, 0, s1, 7));
	ck_assert_ptr_eq(get(a, 4 * MiB, &g1), p3);
	ck_assert_ok(alloy_cuda_caching_end_pool(a, 0, s1));
	ck_assert_ok(alloy_cuda_sim_capture_end(sim, s1));
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c1));
	ck_assert_uint_eq(c1.dev_mallocs, c0.dev_mallocs);

	/* The walk (and so the snapshot) names the pool of its segments. */
	{
		int n7 = 0;

		ck_assert_ok(
			alloy_cuda_caching_foreach_block(a, count_pool7, &n7));
		ck_assert_int_eq(n7, 2);
	}
	/* Released: the unused small segment goes at once, the large one
	 * when its last block is freed. */
	ck_assert_ok(alloy_cuda_caching_release_pool(a, 0, 7));
	alloy_data_ptr_free(&g2);
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c0));
	ck_assert_uint_eq(c0.dev_frees, c1.dev_frees + 1);
	alloy_data_ptr_free(&g1);
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c1));
	ck_assert_uint_eq(c1.dev_frees, c0.dev_frees + 1);
	check_against_snapshot(a);
	alloy_data_ptr_free(&t1);
	alloy_cuda_set_stream(old);
	alloy_cuda_caching_empty_cache(a);
	ck_assert_int_eq(stats(a).reserved_bytes[0].current, 0);
}
END_TEST

START_TEST(a_capture_without_a_pool_is_broken_by_a_free)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr x;
	void *s1;

	/* The simulated driver's rule the pools exist for. */
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	get(a, 4 * MiB, &x);
	alloy_data_ptr_free(&x);
	ck_assert_ok(alloy_cuda_sim_capture_begin(sim, s1));
	alloy_cuda_caching_empty_cache(a);
	ck_assert_int_eq(alloy_cuda_sim_capture_end(sim, s1), -EIO);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "invalidated"));
}
END_TEST

START_TEST(graph_pool_bad_requests_are_refused)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	void *s1;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_int_eq(alloy_cuda_caching_begin_pool(a, 0, s1, 0), -EINVAL);
	ck_assert_int_eq(alloy_cuda_caching_end_pool(a, 0, s1), -ENOENT);
	ck_assert_int_eq(alloy_cuda_caching_release_pool(a, 0, 3), -ENOENT);
	ck_assert_ok(alloy_cuda_caching_begin_pool(a, 0, s1, 3));
	ck_assert_int_eq(alloy_cuda_caching_begin_pool(a, 0, s1, 4), -EBUSY);
	ck_assert_int_eq(alloy_cuda_caching_release_pool(a, 0, 3), -EBUSY);
	ck_assert_ok(alloy_cuda_caching_end_pool(a, 0, s1));
	ck_assert_ok(alloy_cuda_caching_release_pool(a, 0, 3));
	ck_assert_int_eq(alloy_cuda_caching_release_pool(a, 0, 3), -ENOENT);
	ck_assert_int_eq(alloy_cuda_caching_begin_pool(a, 9, s1, 5), -ENODEV);
	ck_assert_int_eq(alloy_cuda_caching_begin_pool(
				 alloy_find_allocator("default"), 0, s1, 5),
			 -EINVAL);
}
END_TEST

/* ---- expandable segments ---------------------------------------------- */

static struct alloy_allocator *fresh_expandable(size_t cap)
{
	struct alloy_allocator *a = fresh(cap);

	ck_assert_ok(alloy_allocator_ops(a)->set_option(
		alloy_allocator_ctx(a), "expandable_segments", "1"));
	return a;
}

static int count_expandable(const struct alloy_cuda_block_info *b, void *arg)
{
	int *n = arg;

	*n += b->segment_start && b->expandable;
	return 0;
}

START_TEST(expandable_segments_grow_in_pieces_and_shrink_from_the_top)
{
	struct alloy_allocator *a = fresh_expandable(1ull << 30);
	struct alloy_data_ptr d1, d2, d3;
	struct alloy_cuda_sim_counts c;
	struct alloy_cuda_stats st;
	int nexp = 0;

	get(a, 100, &d1);
	get(a, 3 * MiB, &d2);
	st = stats(a);
	/* One piece each: 2 MiB small, 20 MiB large. */
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_SMALL].current,
			 2 * MiB);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_LARGE].current,
			 20 * MiB);
	ck_assert_int_eq(st.segment[ALLOY_CUDA_POOL_ALL].current, 2);
	/* Addresses for 1 1/8 of the device each (in whole pieces). */
	ck_assert_uint_eq(st.expandable_address_bytes, (1152 + 1160) * MiB);
	ck_assert_ok(
		alloy_cuda_caching_foreach_block(a, count_expandable, &nexp));
	ck_assert_int_eq(nexp, 2);
	/* 30 MiB on top of the 17 MiB free there: one more piece, and the
	 * block follows the first in the same range. */
	get(a, 30 * MiB, &d3);
	st = stats(a);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_LARGE].current,
			 40 * MiB);
	ck_assert_ptr_eq(d3.ptr, (char *)d2.ptr + 3 * MiB);
	ck_assert_int_eq(st.segment[ALLOY_CUDA_POOL_LARGE].current, 1);
	ck_assert_uint_eq(st.num_maps, 3);
	ck_assert_uint_eq(st.num_device_alloc, 3);
	/* The bytes are device memory: written through, kept when the
	 * segment grows. */
	memset(d2.ptr, 0xab, 3 * MiB);
	memset(d3.ptr, 0xcd, 30 * MiB);
	ck_assert_uint_eq(((unsigned char *)d2.ptr)[3 * MiB - 1], 0xab);
	/* Freed at the top: trimming unmaps the whole pieces above d2. */
	alloy_data_ptr_free(&d3);
	ck_assert_int_gt(alloy_cuda_caching_empty_cache(a), 0);
	st = stats(a);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_LARGE].current,
			 20 * MiB);
	ck_assert_uint_eq(st.num_unmaps, 1);
	ck_assert_uint_eq(((unsigned char *)d2.ptr)[0], 0xab);
	check_against_snapshot(a);
	/* Nothing left: the pieces and the addresses go back. */
	alloy_data_ptr_free(&d1);
	alloy_data_ptr_free(&d2);
	alloy_cuda_caching_empty_cache(a);
	st = stats(a);
	ck_assert_int_eq(st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current, 0);
	ck_assert_int_eq(st.segment[ALLOY_CUDA_POOL_ALL].current, 0);
	ck_assert_uint_eq(st.expandable_address_bytes, 0);
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.dev_bytes_in_use, 0);
	ck_assert_uint_eq(c.dev_mallocs, c.dev_frees);
}
END_TEST

START_TEST(expandable_segments_make_no_device_calls_in_steady_state)
{
	struct alloy_allocator *a = fresh_expandable(1ull << 30);
	static const size_t sizes[] = { 100,	 4096,	   300 * KiB,
					3 * MiB, 64 * MiB, 11 * MiB };
	struct alloy_data_ptr dp[6];
	struct alloy_cuda_sim_counts c0, c1;
	struct alloy_cuda_stats st;

	for (int it = 0; it < 50; it++) {
		if (it == 1)
			ck_assert_ok(alloy_cuda_sim_counts(sim, &c0));
		for (int i = 0; i < 6; i++)
			get(a, sizes[(i + it) % 6], &dp[i]);
		for (int i = 0; i < 6; i++)
			alloy_data_ptr_free(&dp[(i * 5 + it) % 6]);
	}
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c1));
	ck_assert_uint_eq(c1.dev_mallocs, c0.dev_mallocs);
	ck_assert_uint_eq(c1.dev_frees, 0);
	/* Changing order, one range: no more mapped than the sum of sizes
	 * rounded to the pieces. */
	st = stats(a);
	ck_assert_int_le(st.reserved_bytes[ALLOY_CUDA_POOL_LARGE].current,
			 100 * MiB);
}
END_TEST

/* The best fit the snapshot shows for a request: the smallest free block
 * of its pool that holds it, the lowest address among equals. */
struct best_fit {
	int pool;
	size_t size;
	uintptr_t address; /* 0: none */
	size_t best;
};

static int find_best_fit(const struct alloy_cuda_block_info *b, void *arg)
{
	struct best_fit *bf = arg;

	if (b->state != ALLOY_CUDA_BLOCK_INACTIVE || b->pool != bf->pool ||
	    b->size < bf->size)
		return 0;
	if (!bf->address || b->size < bf->best ||
	    (b->size == bf->best && b->address < bf->address)) {
		bf->address = b->address;
		bf->best = b->size;
	}
	return 0;
}

/*
 * Free blocks are found by a search over a pool kept in order while
 * blocks are split off and merged back in place: a random run in which
 * every request must get exactly the block the snapshot says is the best
 * fit finds any block out of order (it would be missed or passed over).
 */
START_TEST(expandable_best_fit_holds_over_a_random_run)
{
	struct alloy_allocator *a = fresh_expandable(4ull << 30);
	struct alloy_data_ptr live[48] = { 0 };
	unsigned seed = 777;
	int checked = 0;

	for (int step = 0; step < 4000; step++) {
		int i = (int)((seed = seed * 1103515245 + 12345) >> 16) % 48;
		unsigned r = (seed = seed * 1103515245 + 12345) >> 8;
		struct best_fit bf = { 0 };
		size_t size;

		if (live[i].ptr) {
			alloy_data_ptr_free(&live[i]);
			continue;
		}
		/* Few distinct sizes, so blocks meet equals and neighbours. */
		switch (r % 3) {
		case 0:
			size = 512 * (1 + r % 9);
			break;
		case 1:
			size = 256 * KiB * (1 + r % 4);
			break;
		default:
			size = 2 * MiB * (1 + r % 12);
			break;
		}
		bf.size = size;
		bf.pool = size <= MiB ? ALLOY_CUDA_POOL_SMALL
				      : ALLOY_CUDA_POOL_LARGE;
		ck_assert_ok(alloy_cuda_caching_foreach_block(a, find_best_fit,
							      &bf));
		get(a, size, &live[i]);
		if (bf.address) {
			ck_assert_msg((uintptr_t)live[i].ptr == bf.address,
				      "step %d: %zu B at %p, best fit %#lx",
				      step, size, live[i].ptr,
				      (unsigned long)bf.address);
			checked++;
		}
		if (step % 400 == 0)
			check_against_snapshot(a);
	}
	/* Most requests were served from the cache, so the check bit. */
	ck_assert_int_gt(checked, 1000);
	for (int i = 0; i < 48; i++)
		alloy_data_ptr_free(&live[i]);
	check_against_snapshot(a);
}
END_TEST

START_TEST(expandable_out_of_memory_says_mapped_and_reserved)
{
	struct alloy_allocator *a = fresh_expandable(64 * MiB);
	struct alloy_data_ptr d1, d2;
	const char *msg;

	get(a, 30 * MiB, &d1);
	ck_assert_int_eq(alloy_alloc(a, 40 * MiB, 0, 0, &d2), -ENOMEM);
	msg = alloy_last_error();
	ck_assert_msg(
		strstr(msg, "out of memory: tried to allocate 40.00 MiB") &&
			strstr(msg, "mapped but unallocated 10.00 MiB") &&
			strstr(msg,
			       "expandable segments: 40.00 MiB mapped in 80.00 MiB of reserved addresses"),
		"%s", msg);
	ck_assert_int_eq(stats(a).num_ooms, 1);
	/* What failed mapped nothing: still 40 MiB, and room for 20 more. */
	ck_assert_int_eq(stats(a).reserved_bytes[0].current, 40 * MiB);
	alloy_data_ptr_free(&d1);
	get(a, 50 * MiB, &d2);
	alloy_data_ptr_free(&d2);
}
END_TEST

START_TEST(expandable_option_is_checked)
{
	struct alloy_allocator *a = fresh(64 * MiB);
	const struct alloy_allocator_ops *o = alloy_allocator_ops(a);

	ck_assert_int_eq(o->set_option(alloy_allocator_ctx(a),
				       "expandable_segments", "2"),
			 -ERANGE);
	ck_assert_ptr_nonnull(
		strstr(alloy_last_error(),
		       "expandable_segments \"2\" must be 0 or 1"));
	ck_assert_ok(o->set_option(alloy_allocator_ctx(a),
				   "expandable_segments", "True"));
	ck_assert_ok(o->set_option(alloy_allocator_ctx(a),
				   "expandable_segments", "0"));
}
END_TEST

/*
 * Model check: with three streams held and completed at random, a new
 * block never overlaps a live block, nor a freed block whose recorded
 * work (on a stream still held) has not completed.
 */
struct range {
	uintptr_t lo, hi;
	int stream; /* protected until this stream completes; -1: live */
	bool used;
};

static void check_disjoint(const struct range *r, int n, uintptr_t lo,
			   uintptr_t hi)
{
	for (int i = 0; i < n; i++)
		if (r[i].used)
			ck_assert_msg(
				hi <= r[i].lo || lo >= r[i].hi,
				"[%#lx,%#lx) overlaps [%#lx,%#lx) (stream %d)",
				(unsigned long)lo, (unsigned long)hi,
				(unsigned long)r[i].lo, (unsigned long)r[i].hi,
				r[i].stream);
}

START_TEST(no_block_is_reused_before_its_streams_are_done)
{
	enum { LIVE = 48, RANGES = 4096 };
	struct alloy_allocator *a = fresh(1ull << 32);
	static struct range r[RANGES];
	struct alloy_data_ptr live[LIVE] = { 0 };
	int live_range[LIVE], rec[LIVE];
	void *streams[3];
	unsigned seed = 777;
	int n = 0;

	for (int s = 0; s < 3; s++) {
		ck_assert_ok(alloy_cuda_sim_stream_create(sim, &streams[s]));
		ck_assert_ok(alloy_cuda_sim_hold(sim, streams[s], true));
	}
	for (int step = 0; step < 4000; step++) {
		unsigned x = (seed = seed * 1103515245 + 12345) >> 8;
		int i = (int)(x % LIVE);

		if (x % 53 == 0) {
			/* One stream's work completes: its ranges are free. */
			int s = (int)(x / 53 % 3);

			ck_assert_ok(alloy_cuda_sim_complete(sim, streams[s]));
			for (int k = 0; k < n; k++)
				if (r[k].used && r[k].stream == s)
					r[k].used = false;
		} else if (live[i].ptr) {
			struct range *lr = &r[live_range[i]];

			if (rec[i] >= 0) {
				ck_assert_ok(alloy_cuda_record_stream(
					&live[i], streams[rec[i]]));
				lr->stream = rec[i]; /* protected until it
							completes */
			} else {
				lr->used = false;
			}
			alloy_data_ptr_free(&live[i]);
		} else {
			size_t size = x % 3 == 0   ? 1 + x % 3000
				      : x % 3 == 1 ? 1 + x % (2 * MiB)
						   : MiB + x % (30 * MiB);
			uintptr_t lo;

			if (n == RANGES) { /* compact the model */
				int m = 0;

				for (int k = 0; k < n; k++)
					if (r[k].used)
						r[m++] = r[k];
				for (int k = 0; k < LIVE; k++)
					live_range[k] = -1;
				n = m;
				/* Re-link live blocks to their ranges. */
				for (int k = 0; k < n; k++)
					for (int l = 0; l < LIVE; l++)
						if (live[l].ptr &&
						    (uintptr_t)live[l].ptr ==
							    r[k].lo &&
						    r[k].stream < 0)
							live_range[l] = k;
			}
			ck_assert_ok(alloy_alloc(a, size, 0, 0, &live[i]));
			lo = (uintptr_t)live[i].ptr;
			check_disjoint(r, n, lo, lo + size);
			r[n] = (struct range){ lo, lo + size, -1, true };
			live_range[i] = n++;
			rec[i] = x % 4 == 0 ? (int)(x / 4 % 3) : -1;
		}
	}
	for (int s = 0; s < 3; s++)
		ck_assert_ok(alloy_cuda_sim_hold(sim, streams[s], false));
	for (int i = 0; i < LIVE; i++)
		alloy_data_ptr_free(&live[i]);
	alloy_cuda_caching_empty_cache(a);
	ck_assert_int_eq(stats(a).reserved_bytes[0].current, 0);
}
END_TEST

static int on_device(const struct alloy_cuda_block_info *b, void *arg)
{
	int *count = arg;

	count[b->device]++;
	return 0;
}

START_TEST(each_device_has_its_own_pools_and_stats)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_cuda_stats s1 = { .size = sizeof(s1),
				       .version = ALLOY_CUDA_STATS_VERSION };
	struct alloy_data_ptr x, y, z;
	int blocks[2] = { 0, 0 };
	void *p0;

	ck_assert_ok(alloy_cuda_sim_set_device_count(sim, 2));
	p0 = get(a, 4096, &x);
	alloy_data_ptr_free(&x);
	ck_assert_ok(alloy_cuda_set_device(1));
	get(a, 4096, &y); /* device 1 never takes device 0's cached block */
	ck_assert_ptr_ne(y.ptr, p0);
	ck_assert_ok(alloy_cuda_set_device(0));
	get(a, 4096, &z);
	ck_assert_ptr_eq(z.ptr, p0);
	ck_assert_ok(alloy_cuda_caching_stats(a, 1, &s1));
	ck_assert_int_eq(s1.allocation[0].current, 1);
	ck_assert_int_eq(s1.reserved_bytes[0].current, 2 * MiB);
	ck_assert_int_eq(stats(a).allocation[0].current, 1);
	ck_assert_ok(alloy_cuda_caching_foreach_block(a, on_device, blocks));
	ck_assert_int_eq(blocks[0], 2); /* z and the rest of its segment */
	ck_assert_int_eq(blocks[1], 2);
	/* A block goes back to its own device whatever the current one is. */
	alloy_data_ptr_free(&y);
	ck_assert_ok(alloy_cuda_caching_stats(a, 1, &s1));
	ck_assert_int_eq(s1.allocation[0].current, 0);
	alloy_data_ptr_free(&z);
	ck_assert_int_eq(alloy_cuda_caching_empty_cache(a), 4 * MiB);
	ck_assert_ok(alloy_cuda_set_device(2));
	ck_assert_int_eq(alloy_alloc(a, 16, 0, 0, &x), -ENOMEM);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "alloy_alloc"));
}
END_TEST

START_TEST(peaks_reset_to_current)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_data_ptr x, y;

	get(a, 30 * MiB, &x);
	get(a, 4096, &y);
	alloy_data_ptr_free(&x);
	ck_assert_int_eq(stats(a).allocated_bytes[0].peak, 30 * MiB + 4096);
	ck_assert_ok(alloy_cuda_caching_reset_peaks(a, 0));
	ck_assert_int_eq(stats(a).allocated_bytes[0].peak, 4096);
	ck_assert_int_eq(stats(a).allocated_bytes[0].allocated,
			 30 * MiB + 4096);
	alloy_data_ptr_free(&y);
}
END_TEST

START_TEST(registry_stats_come_from_the_allocator)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	struct alloy_data_ptr x;

	get(a, 1000, &x);
	ck_assert_ok(alloy_allocator_stats(a, &st));
	ck_assert_uint_eq(st.allocated, 1024);
	ck_assert_uint_eq(st.reserved, 2 * MiB);
	ck_assert_uint_eq(st.num_system_allocs, 1);
	ck_assert_uint_eq(st.num_allocs, 1);
	alloy_data_ptr_free(&x);
}
END_TEST

START_TEST(realloc_copies_on_the_device)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	struct alloy_cuda_sim_counts c0, c1;
	struct alloy_data_ptr x;
	unsigned char *p;

	get(a, 1000, &x);
	memset(x.ptr, 0x3c, 1000); /* simulated device memory is host memory */
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c0));
	ck_assert_ok(alloy_data_ptr_realloc(&x, 300000));
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c1));
	ck_assert_uint_eq(c1.copies, c0.copies + 1);
	p = x.ptr;
	for (int i = 0; i < 1000; i++)
		ck_assert_uint_eq(p[i], 0x3c);
	ck_assert_int_eq(stats(a).allocation[0].current, 1);
	ck_assert_int_eq(stats(a).allocated_bytes[0].current, 300032);
	alloy_data_ptr_free(&x);
}
END_TEST

/*
 * The grown block lives where the old one did, not on the device the
 * calling thread happens to be on (device 5 does not exist at all).
 */
START_TEST(realloc_keeps_the_block_on_its_device)
{
	struct alloy_allocator *a = fresh(1ull << 30), *pl;
	struct alloy_cuda_stats s1 = { .size = sizeof(s1),
				       .version = ALLOY_CUDA_STATS_VERSION };
	struct alloy_data_ptr x;

	ck_assert_ok(alloy_cuda_sim_set_device_count(sim, 2));
	ck_assert_ok(alloy_cuda_plain_register_sim(sim, "plain_dev", &pl));
	ck_assert_ok(alloy_cuda_set_device(1));
	get(a, 4096, &x);
	memset(x.ptr, 0x5a, 4096);
	ck_assert_ok(alloy_cuda_set_device(0));
	ck_assert_ok(alloy_data_ptr_realloc(&x, 8192));
	ck_assert_uint_eq(((unsigned char *)x.ptr)[4095], 0x5a);
	ck_assert_int_eq(stats(a).allocated_bytes[0].current, 0);
	ck_assert_ok(alloy_cuda_caching_stats(a, 1, &s1));
	ck_assert_int_eq(s1.allocated_bytes[0].current, 8192);
	ck_assert_int_eq(s1.allocation[0].current, 1);
	ck_assert_ok(alloy_cuda_set_device(5));
	ck_assert_ok(alloy_data_ptr_realloc(&x, 16384));
	ck_assert_ok(alloy_cuda_caching_stats(a, 1, &s1));
	ck_assert_int_eq(s1.allocated_bytes[0].current, 16384);
	alloy_data_ptr_free(&x);

	ck_assert_ok(alloy_cuda_set_device(1));
	ck_assert_ok(alloy_alloc(pl, 4096, 0, 0, &x));
	memset(x.ptr, 0x6b, 4096);
	ck_assert_ok(alloy_cuda_set_device(5));
	ck_assert_ok(alloy_data_ptr_realloc(&x, 8192));
	ck_assert_uint_eq(((unsigned char *)x.ptr)[4095], 0x6b);
	alloy_data_ptr_free(&x);
	ck_assert_ok(alloy_cuda_set_device(0));
}
END_TEST

START_TEST(plain_allocator_makes_a_device_call_per_block)
{
	struct alloy_allocator *pl;
	struct alloy_cuda_sim_counts c;
	struct alloy_data_ptr x;
	int dummy;

	ck_assert_ok(alloy_cuda_sim_create(64 * MiB, &sim));
	ck_assert_ok(alloy_cuda_plain_register_sim(sim, "plain_test", &pl));
	for (int i = 0; i < 10; i++) {
		ck_assert_ok(alloy_alloc(pl, 1000, 0, ALLOY_ALLOC_ZERO, &x));
		ck_assert_uint_eq(((unsigned char *)x.ptr)[999], 0);
		memset(x.ptr, 7, 1000);
		ck_assert_ok(alloy_data_ptr_realloc(&x, 5000));
		ck_assert_uint_eq(((unsigned char *)x.ptr)[999], 7);
		alloy_data_ptr_free(&x);
	}
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.dev_mallocs, 20);
	ck_assert_uint_eq(c.dev_frees, 20);
	ck_assert_uint_eq(c.dev_bytes_in_use, 0);
	/* Beyond the device: the source's message comes through the op. */
	ck_assert_ptr_null(alloy_allocator_ops(pl)->alloc(
		alloy_allocator_ctx(pl), 100 * MiB, 0, 0));
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "out of memory"));
	alloy_allocator_ops(pl)->free(alloy_allocator_ctx(pl), &dummy, 4, 8);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "double free"));
}
END_TEST

START_TEST(async_allocator_orders_on_streams)
{
	struct alloy_allocator *as;
	struct alloy_cuda_sim_counts c;
	struct alloy_data_ptr x;
	void *s1;

	ck_assert_ok(alloy_cuda_sim_create(64 * MiB, &sim));
	ck_assert_ok(alloy_cuda_async_register_sim(sim, "async_test", &as));
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_alloc(as, 4096, 0, ALLOY_ALLOC_ZERO, &x));
	ck_assert_uint_eq(((unsigned char *)x.ptr)[4095], 0);
	ck_assert_ok(alloy_cuda_record_stream(&x, s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true));
	alloy_data_ptr_free(&x); /* waits for s1 on the host, then frees */
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.dev_mallocs, 1);
	ck_assert_uint_eq(c.dev_frees, 1);
	ck_assert_uint_ge(c.syncs, 1);
	ck_assert_int_eq(alloy_alloc(as, 100 * MiB, 0, 0, &x), -ENOMEM);
	ck_assert_int_eq(alloy_alloc(as, 64, 4096, 0, &x), -ENOMEM);
}
END_TEST

/*
 * cuda_async's realloc: the new block on the old one's device whichever
 * device the thread is on (device 5 does not exist: a block made there
 * would fail), the contents copied, the old block freed.
 */
START_TEST(async_realloc_stays_on_the_block_device)
{
	struct alloy_allocator *as;
	struct alloy_cuda_sim_counts c;
	struct alloy_data_ptr x;

	ck_assert_ok(alloy_cuda_sim_create(64 * MiB, &sim));
	ck_assert_ok(alloy_cuda_sim_set_device_count(sim, 2));
	ck_assert_ok(alloy_cuda_async_register_sim(sim, "async_re", &as));
	ck_assert_ok(alloy_cuda_set_device(1));
	ck_assert_ok(alloy_alloc(as, 4096, 0, 0, &x));
	memset(x.ptr, 0x3c, 4096);
	ck_assert_ok(alloy_cuda_set_device(5));
	ck_assert_ok(alloy_data_ptr_realloc(&x, 12288));
	ck_assert_uint_eq(((unsigned char *)x.ptr)[0], 0x3c);
	ck_assert_uint_eq(((unsigned char *)x.ptr)[4095], 0x3c);
	ck_assert_ok(alloy_data_ptr_realloc(&x, 100));
	ck_assert_uint_eq(((unsigned char *)x.ptr)[99], 0x3c);
	ck_assert_int_eq(alloy_allocator_live_blocks(as), 1);
	alloy_data_ptr_free(&x);
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.dev_mallocs, 3);
	ck_assert_uint_eq(c.dev_frees, 3);
	ck_assert_uint_eq(c.dev_bytes_in_use, 0);
	ck_assert_ok(alloy_cuda_set_device(0));
}
END_TEST

START_TEST(unregistering_returns_the_cache)
{
	struct alloy_allocator *a = fresh(1ull << 30), *h;
	struct alloy_cuda_sim_counts c;
	struct alloy_data_ptr x, y;

	ck_assert_ok(alloy_cuda_host_register_sim(sim, "ch_gone", &h));
	get(a, 5 * MiB, &x);
	ck_assert_ok(alloy_alloc(h, 4096, 0, 0, &y));
	alloy_data_ptr_free(&x);
	alloy_data_ptr_free(&y);
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.dev_bytes_in_use, 20 * MiB);
	ck_assert_uint_eq(c.host_bytes_in_use, 4096);
	ck_assert_ok(alloy_unregister_allocator("cc_test"));
	ck_assert_ok(alloy_unregister_allocator("ch_gone"));
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.dev_bytes_in_use, 0);
	ck_assert_uint_eq(c.host_bytes_in_use, 0);
}
END_TEST

START_TEST(conf_selects_it_as_the_cuda_default)
{
	test_set_conf("cuda:cuda_caching_sim");
	ck_assert_int_eq(alloy_init(), 0);
	ck_assert_ptr_eq(alloy_get_default(ALLOY_DEVICE_CUDA),
			 alloy_find_allocator("cuda_caching_sim"));
	ck_assert_ptr_nonnull(
		alloy_cuda_sim_of(alloy_find_allocator("cuda_caching_sim")));
	ck_assert_ptr_eq(
		alloy_cuda_sim_of(alloy_find_allocator("cuda_caching_sim")),
		alloy_cuda_sim_builtin());
}
END_TEST

/*
 * Device blocks as plain pointers (alloy_cuda_malloc / alloy_cuda_free,
 * the shape PyTorch's pluggable allocator loads): the CUDA default makes
 * them on the device and stream asked, the thread's own device and stream
 * stay as they were, and the free finds the block's maker.
 */
START_TEST(plain_pointers_on_the_default_honour_device_and_stream)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	void *s1, *s2, *p, *q, *r;

	ck_assert_ok(alloy_cuda_sim_set_device_count(sim, 2));
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA, a));
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s2));
	ck_assert_ok(alloy_cuda_set_device(0));
	alloy_cuda_set_stream(s2);
	p = alloy_cuda_malloc(64 * KiB, 1, s1);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(alloy_cuda_current_device(), 0);
	ck_assert_ptr_eq(alloy_cuda_current_stream(), s2);
	ck_assert_int_eq(stats(a).allocated_bytes[ALLOY_CUDA_POOL_ALL].current,
			 0); /* device 0's: the block is on device 1 */
	alloy_cuda_free(p, 64 * KiB, 1, s1);
	/* Cached for s1 on device 1: not for s2, again for s1. */
	q = alloy_cuda_malloc(64 * KiB, 1, s2);
	ck_assert_ptr_ne(q, p);
	r = alloy_cuda_malloc(64 * KiB, 1, s1);
	ck_assert_ptr_eq(r, p);
	alloy_cuda_free(q, 64 * KiB, 1, s2);
	alloy_cuda_free(r, 64 * KiB, 1, s1);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	alloy_cuda_set_stream(NULL);
}
END_TEST

START_TEST(plain_pointers_go_back_to_their_maker_after_a_swap)
{
	struct alloy_allocator *a = fresh(1ull << 30), *b;
	void *p;

	ck_assert_ok(alloy_cuda_caching_register_sim(sim, "cc_other", &b));
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA, a));
	p = alloy_cuda_malloc(3000, 0, NULL);
	ck_assert_ptr_nonnull(p);
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA, b));
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 1);
	alloy_cuda_free(p, 3000, 0, NULL);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(b), 0);
	ck_assert_int_eq(stats(a).allocated_bytes[ALLOY_CUDA_POOL_ALL].current,
			 0);
}
END_TEST

START_TEST(plain_pointer_record_stream_delays_reuse)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	void *s1, *p, *q, *r;

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA, a));
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	p = alloy_cuda_malloc(256 * KiB, 0, NULL);
	ck_assert_ok(alloy_cuda_ptr_record_stream(p, s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true));
	alloy_cuda_free(p, 256 * KiB, 0, NULL);
	q = alloy_cuda_malloc(256 * KiB, 0, NULL);
	ck_assert_ptr_ne(q, p);
	ck_assert_ok(alloy_cuda_sim_complete(sim, s1));
	r = alloy_cuda_malloc(256 * KiB, 0, NULL);
	ck_assert_ptr_eq(r, p);
	alloy_cuda_free(q, 256 * KiB, 0, NULL);
	alloy_cuda_free(r, 256 * KiB, 0, NULL);
}
END_TEST

START_TEST(plain_pointer_bad_requests_fail_cleanly)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	int x;
	void *p;

	ck_assert_ptr_null(alloy_cuda_malloc(0, 0, NULL));
	if (!alloy_get_default(ALLOY_DEVICE_CUDA)) { /* none configured */
		ck_assert_ptr_null(alloy_cuda_malloc(100, 0, NULL));
		ck_assert_int_eq(alloy_last_error_code(), -ENODEV);
	}
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA, a));
	ck_assert_ok(alloy_cuda_set_device(0));
	ck_assert_ptr_null(alloy_cuda_malloc(100, 99, NULL));
	ck_assert_int_eq(alloy_last_error_code(), -ENODEV);
	ck_assert_int_eq(alloy_cuda_current_device(), 0);
	ck_assert_ptr_null(alloy_cuda_malloc(SIZE_MAX - 100, 0, NULL));
	ck_assert_int_eq(alloy_last_error_code(), -EOVERFLOW);
	ck_assert_ptr_null(alloy_cuda_malloc(2ull << 30, 0, NULL));
	ck_assert_int_eq(alloy_last_error_code(), -ENOMEM);
	/* Frees of what it did not make: refused, nothing touched. */
	p = alloy_cuda_malloc(100, 0, NULL);
	alloy_cuda_free(&x, 4, 0, NULL);
	ck_assert_int_eq(alloy_last_error_code(), -EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "not a live block"));
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 1);
	alloy_cuda_free(p, 100, 0, NULL);
	alloy_cuda_free(p, 100, 0, NULL);
	ck_assert_int_eq(alloy_last_error_code(), -EINVAL);
	ck_assert_int_eq(alloy_cuda_ptr_record_stream(p, NULL), -EINVAL);
	alloy_cuda_free(NULL, 0, 0, NULL);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
}
END_TEST

static void *thread_main(void *arg)
{
	struct alloy_allocator *a = arg;
	struct alloy_data_ptr dp[8];

	for (int it = 0; it < 2000; it++) {
		for (int i = 0; i < 8; i++)
			if (alloy_alloc(a, (size_t)(i + 1) * 3000 + (size_t)it,
					0, 0, &dp[i]))
				return (void *)1;
		for (int i = 0; i < 8; i++)
			alloy_data_ptr_free(&dp[i]);
	}
	return NULL;
}

/* Plain pointers from threads at once, each on a stream of its own. */
static void *plain_thread_main(void *arg)
{
	void *p[8];

	for (int it = 0; it < 1000; it++) {
		for (int i = 0; i < 8; i++) {
			p[i] = alloy_cuda_malloc(
				(size_t)(i + 1) * 2000 + (size_t)it, 0, arg);
			if (!p[i])
				return (void *)1;
			memset(p[i], i, 16);
		}
		for (int i = 7; i >= 0; i--) {
			if (*(unsigned char *)p[i] != i)
				return (void *)2;
			alloy_cuda_free(p[i], 0, 0, arg);
		}
	}
	return NULL;
}

START_TEST(plain_pointers_from_threads)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	pthread_t t[4];
	void *streams[4], *ret;

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA, a));
	for (int i = 0; i < 4; i++) {
		ck_assert_ok(alloy_cuda_sim_stream_create(sim, &streams[i]));
		ck_assert_int_eq(pthread_create(&t[i], NULL, plain_thread_main,
						streams[i]),
				 0);
	}
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], &ret), 0);
		ck_assert_ptr_null(ret);
	}
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_int_eq(stats(a).allocated_bytes[0].current, 0);
	check_against_snapshot(a);
}
END_TEST

START_TEST(threads_share_it_safely)
{
	struct alloy_allocator *a = fresh(1ull << 30);
	pthread_t t[4];
	void *ret;

	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, thread_main, a),
				 0);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(pthread_join(t[i], &ret), 0);
		ck_assert_ptr_null(ret);
	}
	ck_assert_int_eq(stats(a).allocated_bytes[0].current, 0);
	check_against_snapshot(a);
}
END_TEST

Suite *suite_cuda_caching(void)
{
	Suite *s = suite_create("cuda_caching");
	TCase *tc = tcase_create("cuda_caching");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sizes_round_to_512_and_pools_split_at_1MiB);
	tcase_add_test(tc,
		       plain_pointers_on_the_default_honour_device_and_stream);
	tcase_add_test(tc, plain_pointers_go_back_to_their_maker_after_a_swap);
	tcase_add_test(tc, plain_pointer_record_stream_delays_reuse);
	tcase_add_test(tc, plain_pointer_bad_requests_fail_cleanly);
	tcase_add_test(tc, steady_state_makes_no_device_calls);
	tcase_add_test(tc, best_fit_takes_the_smallest_hole);
	tcase_add_test(tc, split_blocks_merge_back_when_freed);
	tcase_add_test(tc, blocks_are_reused_per_stream);
	tcase_add_test(tc, record_stream_delays_reuse_until_the_work_is_done);
	tcase_add_test(tc, free_async_on_another_stream_waits_for_it);
	tcase_add_test(tc, empty_cache_returns_every_unused_segment);
	tcase_add_test(tc, out_of_memory_frees_the_cache_and_retries);
	tcase_add_test(tc,
		       out_of_memory_synchronizes_pending_frees_and_retries);
	tcase_add_test(tc, out_of_memory_message_gives_the_figures);
	tcase_add_test(tc, big_segments_are_kept_for_big_requests);
	tcase_add_test(tc, under_pressure_any_segment_serves);
	tcase_add_test(tc, max_split_size_keeps_big_blocks_whole);
	tcase_add_test(tc, oversize_counts_survive_a_max_split_size_change);
	tcase_add_test(tc, bad_options_are_refused_with_clear_errors);
	tcase_add_test(tc, bad_option_in_conf_is_reported_and_ignored);
	tcase_add_test(tc, capacity_option_sizes_the_simulated_device);
	tcase_add_test(tc, roundup_power2_divisions_rounds_to_a_division);
	tcase_add_test(tc, memory_fraction_limits_what_is_reserved);
	tcase_add_test(tc,
		       garbage_collection_releases_the_oldest_unused_segments);
	tcase_add_test(tc, zero_flag_zeroes_reused_blocks);
	tcase_add_test(tc, bad_requests_fail_cleanly);
	tcase_add_test(tc, stats_equal_the_sums_over_the_snapshot);
	tcase_add_test(tc, expandable_stats_equal_the_sums_over_the_snapshot);
	tcase_add_test(
		tc, expandable_segments_grow_in_pieces_and_shrink_from_the_top);
	tcase_add_test(
		tc, expandable_segments_make_no_device_calls_in_steady_state);
	tcase_add_test(tc, expandable_best_fit_holds_over_a_random_run);
	tcase_add_test(tc, expandable_out_of_memory_says_mapped_and_reserved);
	tcase_add_test(tc, expandable_option_is_checked);
	tcase_add_test(tc, graph_pool_allocations_are_private_and_capture_safe);
	tcase_add_test(tc, a_capture_without_a_pool_is_broken_by_a_free);
	tcase_add_test(tc, graph_pool_bad_requests_are_refused);
	tcase_add_test(tc, no_block_is_reused_before_its_streams_are_done);
	tcase_add_test(tc, each_device_has_its_own_pools_and_stats);
	tcase_add_test(tc, peaks_reset_to_current);
	tcase_add_test(tc, registry_stats_come_from_the_allocator);
	tcase_add_test(tc, realloc_copies_on_the_device);
	tcase_add_test(tc, realloc_keeps_the_block_on_its_device);
	tcase_add_test(tc, plain_allocator_makes_a_device_call_per_block);
	tcase_add_test(tc, async_allocator_orders_on_streams);
	tcase_add_test(tc, async_realloc_stays_on_the_block_device);
	tcase_add_test(tc, unregistering_returns_the_cache);
	tcase_add_test(tc, conf_selects_it_as_the_cuda_default);
	tcase_add_test(tc, threads_share_it_safely);
	tcase_add_test(tc, plain_pointers_from_threads);
	suite_add_tcase(s, tc);
	return s;
}
