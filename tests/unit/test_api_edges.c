// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_api_edges.c - the sharp edges of the public API an outside
 * review hit: a device memset through the
 * device's context, the caching allocator's memory fraction set from C
 * and named in its out-of-memory message, and initialisers for the
 * structs that carry a size/version header.
 */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"

#define MiB ((size_t)1 << 20)

static struct alloy_cuda_sim *sim;

/* A caching allocator on a fresh simulated device of cap bytes. */
static struct alloy_allocator *caching_on_sim(size_t cap)
{
	struct alloy_allocator *a;

	ck_assert_ok(alloy_cuda_sim_create(cap, &sim));
	ck_assert_ok(alloy_cuda_caching_register_sim(sim, "edge_cc", &a));
	return a;
}

/* ---- alloy_memset ------------------------------------------------------ */

static bool all_bytes(const unsigned char *p, size_t n, unsigned char b)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != b)
			return false;
	return true;
}

START_TEST(memset_host_memory)
{
	struct alloy_data_ptr dp;
	unsigned char pinned[64];

	ck_assert_ok(alloy_context_new(ALLOY_CPU, 1000, &dp));
	ck_assert_ok(alloy_memset(ALLOY_CPU, dp.ptr, 0x1ab, 1000));
	ck_assert(all_bytes(dp.ptr, 1000, 0xab)); /* the low 8 bits */
	ck_assert_ok(alloy_memset(ALLOY_CPU, (char *)dp.ptr + 10, 0, 20));
	ck_assert(all_bytes((unsigned char *)dp.ptr + 10, 20, 0));
	ck_assert_int_eq(((unsigned char *)dp.ptr)[30], 0xab);
	/* Pinned host memory without a context of its own: plain memset. */
	ck_assert_int_eq(alloy_has_context(ALLOY_DEVICE_CUDA_HOST), 0);
	ck_assert_ok(
		alloy_memset((struct alloy_device){ ALLOY_DEVICE_CUDA_HOST, 0 },
			     pinned, 3, sizeof(pinned)));
	ck_assert(all_bytes(pinned, sizeof(pinned), 3));
	/* Bad input: a message, no crash. */
	ck_assert_int_eq(alloy_memset(ALLOY_CPU, NULL, 0, 1), -EINVAL);
	ck_assert_ok(alloy_memset(ALLOY_CPU, NULL, 0, 0));
	ck_assert_int_eq(
		alloy_memset((struct alloy_device){ 99, 0 }, dp.ptr, 0, 1),
		-EINVAL);
	alloy_data_ptr_free(&dp);
}
END_TEST

START_TEST(memset_device_memory_through_its_context)
{
	struct alloy_device gpu = { ALLOY_DEVICE_CUDA, 0 };
	struct alloy_allocator *a = caching_on_sim(64 * MiB);
	struct alloy_cuda_sim_counts c0, c1;
	struct alloy_data_ptr dp;

	/* No context for the device yet: its memory is not the host's. */
	ck_assert_ok(alloy_alloc(a, 4096, 0, 0, &dp));
	ck_assert_int_eq(alloy_memset(gpu, dp.ptr, 7, 4096), -ENOTSUP);
	ck_assert_msg(strstr(alloy_last_error(), "no context serves it"), "%s",
		      alloy_last_error());
	ck_assert_ok(alloy_cuda_sim_register_context(sim));
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c0));
	ck_assert_ok(alloy_memset(gpu, dp.ptr, 7, 4096));
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c1));
	/* The simulated device's memory is host memory: read it back. */
	ck_assert(all_bytes(dp.ptr, 4096, 7));
	/* Through the device source, and waited for. */
	ck_assert_uint_eq(c1.syncs, c0.syncs + 1);
	alloy_data_ptr_free(&dp);
}
END_TEST

static int must_not_run(void *ctx, struct alloy_device dev, void *ptr, int byte,
			size_t n, void *stream)
{
	(void)ctx;
	(void)dev;
	(void)ptr;
	(void)byte;
	(void)n;
	(void)stream;
	ck_abort_msg("memset_bytes beyond the provider's struct_size ran");
	return 0;
}

START_TEST(memset_without_the_op)
{
	struct alloy_context_ops ops = fake_context_ops(ALLOY_DEVICE_CUDA);
	char buf[16];

	/* A context built before the op existed: its struct ends before. */
	ops.memset_bytes = must_not_run;
	ops.struct_size = offsetof(struct alloy_context_ops, memset_bytes);
	ck_assert_ok(alloy_register_context(&ops, NULL));
	ck_assert_int_eq(
		alloy_memset((struct alloy_device){ ALLOY_DEVICE_CUDA, 0 }, buf,
			     0, sizeof(buf)),
		-ENOTSUP);
	ck_assert_msg(strstr(alloy_last_error(), "has no memset_bytes"), "%s",
		      alloy_last_error());
}
END_TEST

/* ---- memory fraction ----------------------------------------------------- */

/*
 * Issue 15 item 7: with memory_fraction:0.5 the message said "free
 * 1022.00 MiB" and never named the cap.  It must name the cap and what
 * it allows, through alloy_alloc too.
 */
START_TEST(oom_message_names_the_memory_fraction)
{
	struct alloy_allocator *a = caching_on_sim((size_t)1 << 30);
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(a);
	struct alloy_data_ptr dp;
	const char *msg;

	ck_assert_ok(ops->set_option(alloy_allocator_ctx(a), "memory_fraction",
				     "0.5"));
	ck_assert_int_eq(alloy_alloc(a, 600 * MiB, 0, 0, &dp), -ENOMEM);
	msg = alloy_last_error();
	ck_assert_msg(
		strstr(msg,
		       "memory_fraction 0.50 allows 512.00 MiB of 1.00 GiB"),
		"%s", msg);
	ck_assert_msg(
		strstr(msg, "reserved 0 bytes + this segment would pass it"),
		"%s", msg);
	/* The device's own figures follow, and the request leads. */
	ck_assert_msg(strstr(msg, "tried to allocate 600.00 MiB"), "%s", msg);
	ck_assert_msg(strstr(msg, "free 1.00 GiB"), "%s", msg);
	ck_assert_msg(strstr(msg, "could not allocate 629145600 bytes"), "%s",
		      msg);
	/* Under the cap it serves; a real device shortage names no cap. */
	ck_assert_ok(alloy_alloc(a, 500 * MiB, 0, 0, &dp));
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_cuda_caching_set_memory_fraction(a, 1.0));
	ck_assert_ok(alloy_cuda_sim_set_capacity(sim, 64 * MiB));
	ck_assert_int_eq(alloy_allocator_trim(a) >= 0, 1);
	ck_assert_int_eq(alloy_alloc(a, 100 * MiB, 0, 0, &dp), -ENOMEM);
	ck_assert_msg(strstr(alloy_last_error(), "out of memory"), "%s",
		      alloy_last_error());
	ck_assert_ptr_null(strstr(alloy_last_error(), "memory_fraction"));
}
END_TEST

START_TEST(memory_fraction_setter)
{
	struct alloy_allocator *a = caching_on_sim(64 * MiB);
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_cuda_caching_set_memory_fraction(a, 0.5));
	ck_assert_int_eq(alloy_alloc(a, 40 * MiB, 0, 0, &dp), -ENOMEM);
	ck_assert_msg(
		strstr(alloy_last_error(),
		       "memory_fraction 0.50 allows 32.00 MiB of 64.00 MiB"),
		"%s", alloy_last_error());
	/* Raised again: the same request is served. */
	ck_assert_ok(alloy_cuda_caching_set_memory_fraction(a, 1));
	ck_assert_ok(alloy_alloc(a, 40 * MiB, 0, 0, &dp));
	alloy_data_ptr_free(&dp);
	/* Refused: outside (0, 1], not a number, not a caching allocator. */
	ck_assert_int_eq(alloy_cuda_caching_set_memory_fraction(a, 0), -ERANGE);
	ck_assert_int_eq(alloy_cuda_caching_set_memory_fraction(a, 1.5),
			 -ERANGE);
	ck_assert_int_eq(alloy_cuda_caching_set_memory_fraction(a, NAN),
			 -ERANGE);
	ck_assert_msg(strstr(alloy_last_error(), "must be in (0, 1]"), "%s",
		      alloy_last_error());
	ck_assert_int_eq(alloy_cuda_caching_set_memory_fraction(
				 alloy_find_allocator("default"), 0.5),
			 -EINVAL);
	ck_assert_int_eq(alloy_cuda_caching_set_memory_fraction(NULL, 0.5),
			 -EINVAL);
}
END_TEST

/* ---- stats initialisers -------------------------------------------------- */

START_TEST(stats_initialisers_fill_the_header)
{
	struct alloy_allocator_stats st = ALLOY_ALLOCATOR_STATS_INIT;
	struct alloy_cuda_stats cst = ALLOY_CUDA_STATS_INIT;
	static struct alloy_reporter_snapshot snap;
	struct alloy_allocator *cc = caching_on_sim(64 * MiB);

	ck_assert_uint_eq(st.size, sizeof(st));
	ck_assert_uint_eq(st.version, ALLOY_STATS_VERSION);
	ck_assert_ok(
		alloy_allocator_stats(alloy_find_allocator("default"), &st));
	ck_assert_uint_eq(cst.size, sizeof(cst));
	ck_assert_uint_eq(cst.version, ALLOY_CUDA_STATS_VERSION);
	ck_assert_ok(alloy_cuda_caching_stats(cc, 0, &cst));
	snap = ALLOY_REPORTER_SNAPSHOT_INIT;
	ck_assert_uint_eq(snap.size, sizeof(snap));
	ck_assert_uint_eq(snap.version, ALLOY_REPORTER_SNAPSHOT_VERSION);
	ck_assert_ok(alloy_reporter_snapshot(&snap));
	/* Reused after a call: assigning it again resets the header. */
	st = ALLOY_ALLOCATOR_STATS_INIT;
	ck_assert_uint_eq(st.num_allocs, 0);
}
END_TEST

/* An allocator whose realloc op waits until the test lets it go. */
static atomic_bool realloc_entered, realloc_released;

static void *plain_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	void *p;

	(void)ctx;
	(void)flags;
	return posix_memalign(&p, align, size) ? NULL : p;
}

static void plain_free(void *ctx, void *ptr, size_t size, size_t align)
{
	(void)ctx;
	(void)size;
	(void)align;
	free(ptr);
}

static void *held_realloc(void *ctx, void *ptr, size_t old, size_t size,
			  size_t align)
{
	(void)ctx;
	(void)old;
	(void)align;
	atomic_store(&realloc_entered, true);
	while (!atomic_load(&realloc_released))
		usleep(1000);
	return realloc(ptr, size);
}

static void *realloc_in_thread(void *a)
{
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_alloc(a, 100, 16, 0, &dp));
	ck_assert_ok(alloy_data_ptr_realloc(&dp, 1000));
	alloy_data_ptr_free(&dp);
	return NULL;
}

/*
 * The reporter switched off (and unhooked) while a realloc op runs: the
 * new block must not be recorded by the hooks read before the op, or no
 * free ever takes it out (a live block that never goes).
 */
START_TEST(realloc_across_reporter_disable)
{
	struct alloy_allocator_ops ops = test_alloc_ops("t_held_realloc");
	struct alloy_reporter_snapshot snap = ALLOY_REPORTER_SNAPSHOT_INIT;
	struct alloy_allocator *a;
	pthread_t th;

	ops.alloc = plain_alloc;
	ops.free = plain_free;
	ops.realloc = held_realloc;
	ck_assert_ok(alloy_register_allocator(&ops, NULL, "test", &a));
	ck_assert_ok(alloy_reporter_enable());
	ck_assert_int_eq(pthread_create(&th, NULL, realloc_in_thread, a), 0);
	while (!atomic_load(&realloc_entered))
		usleep(1000);
	ck_assert_ok(alloy_reporter_disable());
	atomic_store(&realloc_released, true);
	pthread_join(th, NULL);
	ck_assert_ok(alloy_reporter_snapshot(&snap));
	ck_assert_uint_eq(snap.total.live_blocks, 0);
	ck_assert_uint_eq(snap.total.current_bytes, 0);
}
END_TEST

Suite *suite_api_edges(void)
{
	Suite *s = suite_create("api_edges");
	TCase *tc = tcase_create("memset");

	tcase_add_test(tc, memset_host_memory);
	tcase_add_test(tc, memset_device_memory_through_its_context);
	tcase_add_test(tc, memset_without_the_op);
	suite_add_tcase(s, tc);
	tc = tcase_create("cuda");
	tcase_add_test(tc, oom_message_names_the_memory_fraction);
	tcase_add_test(tc, memory_fraction_setter);
	suite_add_tcase(s, tc);
	tc = tcase_create("stats");
	tcase_add_test(tc, stats_initialisers_fill_the_header);
	tcase_add_test(tc, realloc_across_reporter_disable);
	suite_add_tcase(s, tc);
	return s;
}
