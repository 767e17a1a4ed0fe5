// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_cuda_host.c - the pinned host caching allocator on the
 * simulated device: power-of-two reuse, blocks held back until the copies
 * that used them have completed (recorded by hand or by the context's
 * async copies, from or to any part of a block, queued before the free),
 * trim, unregistering, statistics, bad frees.
 */
#include <string.h>

#include "testutil.h"

static struct alloy_cuda_sim *sim;

static struct alloy_allocator *fresh(void)
{
	struct alloy_allocator *a;

	ck_assert_ok(alloy_cuda_sim_create(1ull << 30, &sim));
	ck_assert_ok(alloy_cuda_host_register_sim(sim, "ch_test", &a));
	ck_assert_int_eq(alloy_allocator_device_type(a),
			 ALLOY_DEVICE_CUDA_HOST);
	return a;
}

static struct alloy_allocator_stats stats(struct alloy_allocator *a)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };

	ck_assert_ok(alloy_allocator_stats(a, &st));
	return st;
}

START_TEST(blocks_round_to_powers_of_two_and_are_reused)
{
	struct alloy_allocator *a = fresh();
	struct alloy_data_ptr x;
	struct alloy_cuda_sim_counts c;
	void *p;

	ck_assert_ok(alloy_alloc(a, 3000, 0, 0, &x));
	p = x.ptr;
	ck_assert_uint_eq(alloy_allocator_usable_size(a, p, 3000), 4096);
	alloy_data_ptr_free(&x);
	for (int i = 0; i < 100; i++) {
		ck_assert_ok(alloy_alloc(a, 2049 + (size_t)i, 0, 0, &x));
		ck_assert_ptr_eq(x.ptr, p);
		alloy_data_ptr_free(&x);
	}
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.host_mallocs, 1);
	ck_assert_uint_eq(stats(a).reserved, 4096);
	ck_assert_uint_eq(stats(a).allocated, 0);
	ck_assert_uint_eq(stats(a).peak_allocated, 4096);
}
END_TEST

START_TEST(a_block_waits_for_the_copies_that_used_it)
{
	struct alloy_allocator *a = fresh();
	struct alloy_data_ptr x, y, z;
	void *s1, *s2;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s2));
	ck_assert_ok(alloy_alloc(a, 1 << 20, 0, 0, &x));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s2, true));
	ck_assert_ok(alloy_cuda_record_stream(&x, s1));
	ck_assert_ok(alloy_cuda_record_stream(&x, s2));
	void *p = x.ptr;

	alloy_data_ptr_free(&x);
	ck_assert_ok(alloy_alloc(a, 1 << 20, 0, 0, &y));
	ck_assert_ptr_ne(y.ptr, p);
	/* One of the two copies done is not enough. */
	ck_assert_ok(alloy_cuda_sim_complete(sim, s1));
	ck_assert_ok(alloy_alloc(a, 1 << 20, 0, 0, &z));
	ck_assert_ptr_ne(z.ptr, p);
	alloy_data_ptr_free(&z);
	ck_assert_ok(alloy_cuda_sim_complete(sim, s2));
	/* Both done: it is back, first in line (the free lists are LIFO). */
	ck_assert_ok(alloy_alloc(a, 1 << 20, 0, 0, &z));
	ck_assert_ptr_eq(z.ptr, p);
	alloy_data_ptr_free(&z);
	alloy_data_ptr_free(&y);
}
END_TEST

/*
 * For the context's async copies: the simulator's CUDA context, the
 * caching allocator and host as the defaults, and a stream of bsim.
 */
static void *async_copy_setup(struct alloy_cuda_sim *bsim,
			      struct alloy_allocator *host)
{
	void *stream;

	ck_assert_ok(alloy_cuda_sim_register_context(bsim));
	ck_assert_ok(alloy_set_default_by_name(ALLOY_DEVICE_CUDA,
					       "cuda_caching_sim"));
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA_HOST, host));
	ck_assert_ok(alloy_cuda_sim_stream_create(bsim, &stream));
	return stream;
}

START_TEST(async_copies_record_the_pinned_block_themselves)
{
	struct alloy_allocator *host = alloy_find_allocator("cuda_host_sim");
	struct alloy_cuda_sim *bsim = alloy_cuda_sim_builtin();
	struct alloy_device gpu = { ALLOY_DEVICE_CUDA, 0 };
	struct alloy_data_ptr pin, dev, again;
	void *s1, *p;

	s1 = async_copy_setup(bsim, host);
	ck_assert_ok(
		alloy_alloc_default(ALLOY_DEVICE_CUDA_HOST, 4096, 0, &pin));
	ck_assert_ok(alloy_context_new(gpu, 4096, &dev));
	memset(pin.ptr, 7, 4096);
	ck_assert_ok(alloy_cuda_sim_hold(bsim, s1, true));
	ck_assert_ok(alloy_copy_bytes_async(4096, pin.ptr, ALLOY_CPU, dev.ptr,
					    gpu, s1));
	p = pin.ptr;
	alloy_data_ptr_free(&pin);
	ck_assert_ok(
		alloy_alloc_default(ALLOY_DEVICE_CUDA_HOST, 4096, 0, &again));
	ck_assert_ptr_ne(again.ptr, p);
	alloy_data_ptr_free(&again);
	ck_assert_ok(alloy_cuda_sim_hold(bsim, s1, false));
	ck_assert_ok(
		alloy_alloc_default(ALLOY_DEVICE_CUDA_HOST, 4096, 0, &again));
	ck_assert_ptr_eq(again.ptr, p);
	alloy_data_ptr_free(&again);
	alloy_data_ptr_free(&dev);
}
END_TEST

START_TEST(record_stream_finds_the_block_of_an_inner_pointer)
{
	struct alloy_allocator *a = fresh();
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	struct alloy_data_ptr x, y;
	char *p;
	void *s1;
	int local;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true));
	ck_assert_ok(alloy_alloc(a, 4096, 0, 0, &x));
	p = x.ptr;
	/* Past the end and outside: not this allocator's memory. */
	ck_assert_int_eq(ops->record_stream(ctx, p + 4096, s1), -ENOENT);
	ck_assert_int_eq(ops->record_stream(ctx, &local, s1), -ENOENT);
	ck_assert_ptr_nonnull(
		strstr(alloy_last_error(), "not in a pinned block"));
	ck_assert_ok(ops->record_stream(ctx, p + 4095, s1));
	alloy_data_ptr_free(&x);
	ck_assert_ok(alloy_alloc(a, 4096, 0, 0, &y));
	ck_assert_ptr_ne(y.ptr, p);
	alloy_data_ptr_free(&y);
	/* Inside a freed block: a use after free, refused. */
	ck_assert_int_eq(ops->record_stream(ctx, p + 100, s1), -EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "not live"));
	ck_assert_ok(alloy_cuda_sim_complete(sim, s1));
	ck_assert_ok(alloy_alloc(a, 4096, 0, 0, &y));
	ck_assert_ptr_eq(y.ptr, p);
	alloy_data_ptr_free(&y);
}
END_TEST

/* The context's async copies from and to the middle of a pinned block. */
START_TEST(async_copies_protect_a_block_used_in_part)
{
	struct alloy_allocator *host = alloy_find_allocator("cuda_host_sim");
	struct alloy_cuda_sim *bsim = alloy_cuda_sim_builtin();
	struct alloy_device gpu = { ALLOY_DEVICE_CUDA, 0 };
	struct alloy_device pinned = { ALLOY_DEVICE_CUDA_HOST, 0 };
	struct alloy_data_ptr pin, dev, again;
	struct alloy_cuda_sim_counts before, after;
	void *s1, *p;

	s1 = async_copy_setup(bsim, host);
	ck_assert_ok(alloy_context_new(gpu, 4096, &dev));
	for (int dir = 0; dir < 2; dir++) {
		ck_assert_ok(alloy_alloc(host, 4096, 0, 0, &pin));
		p = pin.ptr;
		ck_assert_ok(alloy_cuda_sim_hold(bsim, s1, true));
		if (dir == 0) /* host -> device from the second half */
			ck_assert_ok(alloy_copy_bytes_async(
				2048, (char *)p + 2048, pinned, dev.ptr, gpu,
				s1));
		else /* device -> host into the middle */
			ck_assert_ok(alloy_copy_bytes_async(1024, dev.ptr, gpu,
							    (char *)p + 1024,
							    pinned, s1));
		alloy_data_ptr_free(&pin);
		ck_assert_ok(alloy_alloc(host, 4096, 0, 0, &again));
		ck_assert_ptr_ne(again.ptr, p);
		alloy_data_ptr_free(&again);
		ck_assert_ok(alloy_cuda_sim_hold(bsim, s1, false));
		ck_assert_ok(alloy_cuda_sim_complete(bsim, s1));
		ck_assert_ok(alloy_alloc(host, 4096, 0, 0, &again));
		ck_assert_ptr_eq(again.ptr, p);
		alloy_data_ptr_free(&again);
	}
	/*
	 * A copy into a freed pinned block cannot be recorded: the copy
	 * fails with the allocator's reason, and only once it is over (the
	 * stream was synchronised), so nothing still writes the block.
	 */
	ck_assert_ok(alloy_alloc(host, 4096, 0, 0, &pin));
	p = pin.ptr;
	alloy_data_ptr_free(&pin);
	ck_assert_ok(alloy_cuda_sim_hold(bsim, s1, true));
	ck_assert_ok(alloy_cuda_sim_counts(bsim, &before));
	ck_assert_int_eq(alloy_copy_bytes_async(64, dev.ptr, gpu,
						(char *)p + 64, pinned, s1),
			 -EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "not live"));
	ck_assert_ok(alloy_cuda_sim_counts(bsim, &after));
	ck_assert_uint_eq(after.syncs, before.syncs + 1);
	ck_assert_ok(alloy_cuda_sim_hold(bsim, s1, false));
	alloy_data_ptr_free(&dev);
}
END_TEST

/*
 * record_stream says the block is used on a stream; the copy is queued
 * there only afterwards (the block is not the default cuda_host, so the
 * context records nothing itself).  The free must wait for that copy too.
 */
START_TEST(a_free_waits_for_work_queued_after_record_stream)
{
	struct alloy_cuda_sim *bsim = alloy_cuda_sim_builtin();
	struct alloy_device gpu = { ALLOY_DEVICE_CUDA, 0 };
	struct alloy_allocator *h;
	struct alloy_data_ptr pin, dev, again;
	void *s1, *p;

	ck_assert_ok(alloy_cuda_sim_register_context(bsim));
	ck_assert_ok(alloy_set_default_by_name(ALLOY_DEVICE_CUDA,
					       "cuda_caching_sim"));
	ck_assert_ok(alloy_cuda_host_register_sim(bsim, "ch_late", &h));
	ck_assert_ok(alloy_cuda_sim_stream_create(bsim, &s1));
	ck_assert_ok(alloy_context_new(gpu, 4096, &dev));
	ck_assert_ok(alloy_alloc(h, 4096, 0, 0, &pin));
	p = pin.ptr;
	ck_assert_ok(alloy_cuda_record_stream(&pin, s1));
	ck_assert_ok(alloy_cuda_sim_hold(bsim, s1, true));
	ck_assert_ok(
		alloy_copy_bytes_async(4096, p, ALLOY_CPU, dev.ptr, gpu, s1));
	alloy_data_ptr_free(&pin);
	ck_assert_ok(alloy_alloc(h, 4096, 0, 0, &again));
	ck_assert_ptr_ne(again.ptr, p);
	alloy_data_ptr_free(&again);
	ck_assert_ok(alloy_cuda_sim_complete(bsim, s1));
	ck_assert_ok(alloy_alloc(h, 4096, 0, 0, &again));
	ck_assert_ptr_eq(again.ptr, p);
	alloy_data_ptr_free(&again);
	ck_assert_ok(alloy_cuda_sim_hold(bsim, s1, false));
	alloy_data_ptr_free(&dev);
}
END_TEST

START_TEST(trim_gives_cached_blocks_back)
{
	struct alloy_allocator *a = fresh();
	struct alloy_data_ptr x, y;
	struct alloy_cuda_sim_counts c;

	ck_assert_ok(alloy_alloc(a, 100, 0, 0, &x));
	ck_assert_ok(alloy_alloc(a, 10000, 0, 0, &y));
	alloy_data_ptr_free(&y);
	ck_assert_int_eq(alloy_allocator_trim(a), 16384);
	ck_assert_uint_eq(stats(a).reserved, 512);
	alloy_data_ptr_free(&x);
	ck_assert_int_eq(alloy_allocator_trim(a), 512);
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.host_bytes_in_use, 0);
	ck_assert_uint_eq(stats(a).num_system_frees, 2);
}
END_TEST

START_TEST(unregistering_waits_for_pending_blocks_and_returns_them)
{
	struct alloy_allocator *a = fresh();
	struct alloy_cuda_sim_counts c;
	struct alloy_data_ptr x, y;
	void *s1;

	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_cuda_sim_hold(sim, s1, true));
	ck_assert_ok(alloy_alloc(a, 1 << 20, 0, 0, &x));
	ck_assert_ok(alloy_alloc(a, 4096, 0, 0, &y));
	ck_assert_ok(alloy_cuda_record_stream(&x, s1));
	alloy_data_ptr_free(&x); /* pending: the copy on s1 has not run */
	alloy_data_ptr_free(&y); /* cached */
	ck_assert_ok(alloy_unregister_allocator("ch_test"));
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_eq(c.host_bytes_in_use, 0);
	ck_assert_uint_eq(c.host_frees, 2);
}
END_TEST

START_TEST(bad_frees_and_records_are_reported)
{
	struct alloy_allocator *a = fresh();
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	void *ctx = alloy_allocator_ctx(a);
	struct alloy_data_ptr x;
	void *p;
	int dummy;

	ops->free(ctx, &dummy, 4, 8);
	ck_assert_ptr_nonnull(
		strstr(alloy_last_error(), "not a live pinned block"));
	ck_assert_ok(alloy_alloc(a, 100, 0, 0, &x));
	p = x.ptr;
	alloy_data_ptr_free(&x);
	ops->free(ctx, p, 100, 64); /* double free: refused, cache intact */
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "double free"));
	ck_assert_int_eq(ops->record_stream(ctx, p, NULL), -EINVAL);
	ck_assert_ptr_null(ops->alloc(ctx, 100, 4096, 0));
	ck_assert_ok(alloy_alloc(a, 100, 0, ALLOY_ALLOC_ZERO, &x));
	ck_assert_ptr_eq(x.ptr, p);
	ck_assert_uint_eq(((unsigned char *)x.ptr)[99], 0);
	alloy_data_ptr_free(&x);
}
END_TEST

Suite *suite_cuda_host(void)
{
	Suite *s = suite_create("cuda_host");
	TCase *tc = tcase_create("cuda_host");

	tcase_add_test(tc, blocks_round_to_powers_of_two_and_are_reused);
	tcase_add_test(tc, a_block_waits_for_the_copies_that_used_it);
	tcase_add_test(tc, async_copies_record_the_pinned_block_themselves);
	tcase_add_test(tc, record_stream_finds_the_block_of_an_inner_pointer);
	tcase_add_test(tc, async_copies_protect_a_block_used_in_part);
	tcase_add_test(tc, a_free_waits_for_work_queued_after_record_stream);
	tcase_add_test(tc, trim_gives_cached_blocks_back);
	tcase_add_test(tc,
		       unregistering_waits_for_pending_blocks_and_returns_them);
	tcase_add_test(tc, bad_frees_and_records_are_reported);
	suite_add_tcase(s, tc);
	return s;
}
