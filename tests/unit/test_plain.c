// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_plain.c - the plain-pointer API (alloy/plain.h): glibc's
 * contract for malloc, calloc, realloc, aligned allocation and their
 * errors; the block going back to its maker after a swap; pointers alloy
 * did not make; the reporter seeing plain blocks; threads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "testutil.h"

static struct alloy_allocator *use_test_allocator(struct test_alloc *ta,
						  const char *name)
{
	struct alloy_allocator *a = test_alloc_register(ta, name);

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	return a;
}

START_TEST(malloc_free_counted_on_the_default)
{
	static struct test_alloc ta;
	struct alloy_allocator *a = use_test_allocator(&ta, "t_plain");
	unsigned char *p = alloy_malloc(100);

	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq((uintptr_t)p % ALLOY_PLAIN_ALIGN, 0);
	memset(p, 0xab, 100);
	ck_assert_int_eq(alloy_usable_size(p), 100);
	ck_assert(alloy_plain_owns(p));
	ck_assert_ptr_eq(alloy_plain_allocator(p), a);
	ck_assert_int_eq(ta.allocs, 1);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 1);
	ck_assert_int_eq(alloy_allocator_live_bytes(a), 100);
	/* The allocator's block holds the 16-byte header too. */
	ck_assert_uint_eq(ta.last_size, 100 + ALLOY_PLAIN_ALIGN);
	alloy_free(p);
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_int_eq(ta.bad_frees, 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_int_eq(alloy_allocator_live_bytes(a), 0);
	alloy_free(NULL);
}
END_TEST

START_TEST(malloc_zero_is_a_unique_pointer)
{
	void *p = alloy_malloc(0), *q = alloy_malloc(0);

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_ne(p, q);
	alloy_free(p);
	alloy_free(q);
	ck_assert_int_eq(alloy_plain_bad_frees(), 0);
}
END_TEST

START_TEST(calloc_zeroes_and_refuses_overflow)
{
	unsigned char *p = alloy_calloc(1000, 7);

	ck_assert_ptr_nonnull(p);
	for (int i = 0; i < 7000; i++)
		ck_assert_int_eq(p[i], 0);
	alloy_free(p);
	errno = 0;
	ck_assert_ptr_null(alloy_calloc(SIZE_MAX / 2, 3));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_msg(strstr(alloy_last_error(), "overflows"), "%s",
		      alloy_last_error());
}
END_TEST

START_TEST(realloc_keeps_contents_and_follows_glibc)
{
	unsigned char *p = alloy_realloc(NULL, 10), *q;

	ck_assert_ptr_nonnull(p);
	for (int i = 0; i < 10; i++)
		p[i] = (unsigned char)i;
	q = alloy_realloc(p, 100000);
	ck_assert_ptr_nonnull(q);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(q[i], i);
	p = alloy_realloc(q, 3);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p[2], 2);
	/* Size 0 frees and gives NULL. */
	ck_assert_ptr_null(alloy_realloc(p, 0));
	ck_assert_int_eq(alloy_allocator_live_blocks(
				 alloy_get_default(ALLOY_DEVICE_CPU)),
			 0);
	/* Overflow: NULL, ENOMEM, the block untouched. */
	p = alloy_malloc(8);
	memcpy(p, "abcdefg", 8);
	errno = 0;
	ck_assert_ptr_null(alloy_reallocarray(p, SIZE_MAX / 4, 8));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_str_eq((char *)p, "abcdefg");
	ck_assert_ptr_null(alloy_realloc(p, SIZE_MAX));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_str_eq((char *)p, "abcdefg");
	alloy_free(p);
	ck_assert_int_eq(alloy_plain_bad_frees(), 0);
}
END_TEST

START_TEST(aligned_allocation)
{
	static const size_t aligns[] = { 1, 8, 16, 32, 64, 4096, 1 << 20 };
	void *p;

	for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		p = alloy_aligned_alloc(aligns[i], 24);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % aligns[i], 0);
		ck_assert_uint_eq((uintptr_t)p % ALLOY_PLAIN_ALIGN, 0);
		memset(p, 1, 24);
		/* A realloc keeps the alignment. */
		p = alloy_realloc(p, 5000);
		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq((uintptr_t)p % aligns[i], 0);
		ck_assert_int_eq(((unsigned char *)p)[23], 1);
		alloy_free(p);
	}
	errno = 0;
	ck_assert_ptr_null(alloy_aligned_alloc(48, 8));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(alloy_aligned_alloc(0, 8));
	ck_assert_ptr_null(alloy_aligned_alloc(ALLOY_ALIGN_MAX * 2, 8));
	ck_assert_int_eq(errno, EINVAL);

	errno = 1234;
	ck_assert_int_eq(alloy_posix_memalign(&p, 4, 8), EINVAL);
	ck_assert_int_eq(alloy_posix_memalign(&p, 24, 8), EINVAL);
	ck_assert_int_eq(alloy_posix_memalign(&p, 64, SIZE_MAX), ENOMEM);
	/* A valid alignment alloy cannot give: no memory, not a bad value. */
	ck_assert_int_eq(alloy_posix_memalign(&p, ALLOY_ALIGN_MAX * 2, 8),
			 ENOMEM);
	ck_assert_int_eq(errno, 1234); /* it returns the error */
	ck_assert_int_eq(alloy_posix_memalign(&p, 128, 8), 0);
	ck_assert_uint_eq((uintptr_t)p % 128, 0);
	alloy_free(p);
	ck_assert_ptr_null(
		alloy_malloc_on(ALLOY_DEVICE_CUDA, 8, 0, 0)); /* no header */
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* A block made before a swap goes back to its maker, as a DataPtr does. */
START_TEST(block_returns_to_its_maker_after_swap)
{
	static struct test_alloc ta, tb;
	struct alloy_allocator *a = use_test_allocator(&ta, "t_plain_a");
	struct alloy_allocator *b = test_alloc_register(&tb, "t_plain_b");
	char *p = alloy_malloc(64), *q;

	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, b));
	q = alloy_malloc(64);
	ck_assert_ptr_eq(alloy_plain_allocator(p), a);
	ck_assert_ptr_eq(alloy_plain_allocator(q), b);
	/* A move by realloc stays with the maker too. */
	p = alloy_realloc(p, 1 << 16);
	ck_assert_ptr_eq(alloy_plain_allocator(p), a);
	ck_assert_int_eq(alloy_unregister_allocator("t_plain_a"), -EBUSY);
	alloy_free(p);
	alloy_free(q);
	ck_assert_int_eq(ta.bad_frees + tb.bad_frees, 0);
	ck_assert_int_eq(ta.allocs, ta.frees);
	ck_assert_int_eq(tb.allocs, tb.frees);
	ck_assert_ok(alloy_unregister_allocator("t_plain_a"));
}
END_TEST

/*
 * An allocator whose realloc op always moves the block (through its own
 * alloc and free) and whose blocks are roomier than asked.
 */
static struct alloy_allocator_ops moving_base;
static long moving_reallocs;

static void *moving_realloc(void *ctx, void *ptr, size_t old, size_t size,
			    size_t align)
{
	void *n = moving_base.alloc(ctx, size, align, 0);

	if (!n)
		return NULL;
	memcpy(n, ptr, old < size ? old : size);
	moving_base.free(ctx, ptr, old, align);
	moving_reallocs++;
	return n;
}

static size_t roomy_usable_size(void *ctx, const void *ptr, size_t size)
{
	(void)ctx;
	(void)ptr;
	return size + 100;
}

static struct alloy_allocator *use_moving_allocator(struct test_alloc *ta)
{
	struct alloy_allocator_ops ops = test_alloc_ops("t_plain_moving");
	struct alloy_allocator *a;

	moving_base = ops;
	ops.realloc = moving_realloc;
	ops.usable_size = roomy_usable_size;
	a = test_alloc_register_ops(ta, "t_plain_moving", &ops);
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, a));
	return a;
}

/*
 * The allocator's realloc op moving a block leaves the old header in
 * freed memory: a stale free of the old pointer must still be refused.
 * The usable size is what was asked, all of which a realloc keeps.
 */
START_TEST(realloc_by_the_op_voids_the_old_block)
{
	static struct test_alloc ta;
	struct alloy_allocator *a = use_moving_allocator(&ta);
	char *p = alloy_malloc(200), *q;

	ck_assert_uint_eq(alloy_usable_size(p), 200); /* not 200 + 100 */
	memset(p, 'x', alloy_usable_size(p));
	q = alloy_realloc(p, 100000);
	ck_assert_ptr_nonnull(q);
	ck_assert_ptr_ne(q, p);
	ck_assert_int_eq(moving_reallocs, 1);
	ck_assert_int_eq(q[199], 'x');
	ck_assert(!alloy_plain_owns(p));
	alloy_free(p); /* stale */
	ck_assert_int_eq(alloy_plain_bad_frees(), 1);
	ck_assert_int_eq(ta.bad_frees, 0);
	ck_assert_int_eq(ta.frees, 1); /* the op's own */
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 1);
	ck_assert_int_eq(alloy_allocator_live_bytes(a), 100000);
	alloy_free(q);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_int_eq(ta.allocs, ta.frees);
}
END_TEST

/*
 * A realloc that its block's maker refuses fails: it is not tried again
 * on the default (that would move the block off its maker, and take two
 * tries of a planned failure), and the block stays the caller's.
 */
START_TEST(realloc_refused_by_the_maker_fails)
{
	static struct test_alloc ta, tb;
	struct alloy_allocator *a = use_test_allocator(&ta, "t_plain_refuse");
	struct alloy_allocator *b = test_alloc_register(&tb, "t_plain_other");
	char *p = alloy_malloc(64);

	strcpy(p, "kept");
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, b));
	atomic_store(&ta.fail_from, ta.allocs + 1);
	errno = 0;
	ck_assert_ptr_null(alloy_realloc(p, 1 << 16));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(tb.allocs, 0);
	ck_assert_ptr_eq(alloy_plain_allocator(p), a);
	ck_assert_str_eq(p, "kept");
	alloy_free(p);
	ck_assert_int_eq(alloy_plain_bad_frees(), 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
}
END_TEST

/*
 * Failed reallocs of a block the reporter recorded, while the switched-
 * off reporter drains and takes its hooks away at one of them: the block
 * stays a live block of its maker after every one.
 */
START_TEST(failed_realloc_keeps_the_block_while_the_reporter_drains)
{
	char *p;

	ck_assert_ok(alloy_reporter_enable());
	p = alloy_malloc(100);
	strcpy(p, "payload");
	ck_assert_ok(alloy_reporter_disable());
	for (int i = 0; i < 200; i++) {
		ck_assert_ptr_null(alloy_realloc(p, (size_t)1 << 50));
		ck_assert_msg(alloy_plain_owns(p), "lost after %d tries", i);
	}
	ck_assert_str_eq(p, "payload");
	alloy_free(p);
	ck_assert_int_eq(alloy_plain_bad_frees(), 0);
}
END_TEST

/* Pointers alloy did not make, and blocks freed twice, are refused. */
START_TEST(foreign_and_double_frees_are_refused)
{
	static struct test_alloc ta;
	struct alloy_allocator *a = use_test_allocator(&ta, "t_plain_f");
	uint64_t stack[8] = { 0 };
	char *libc = malloc(64), *p = alloy_malloc(32);

	alloy_free(&stack[4]);
	alloy_free(libc + 16);
	alloy_free(p);
	alloy_free(p); /* twice */
	ck_assert_int_eq(alloy_plain_bad_frees(), 3);
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_int_eq(ta.bad_frees, 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert(!alloy_plain_owns(&stack[4]));
	ck_assert_int_eq(alloy_usable_size(&stack[4]), 0);
	errno = 0;
	ck_assert_ptr_null(alloy_realloc(&stack[4], 10));
	ck_assert_int_eq(errno, EINVAL);
	free(libc);
}
END_TEST

START_TEST(reporter_sees_plain_blocks)
{
	struct alloy_reporter_snapshot snap;
	void *p, *q;

	ck_assert_ok(alloy_reporter_enable());
	p = alloy_malloc(1000);
	q = alloy_realloc(alloy_malloc(10), 5000);
	snap = (struct alloy_reporter_snapshot){
		.size = sizeof(snap), .version = ALLOY_REPORTER_SNAPSHOT_VERSION
	};
	ck_assert_ok(alloy_reporter_snapshot(&snap));
	ck_assert_int_eq(snap.total.current_bytes, 6000);
	alloy_free(p);
	alloy_free(q);
	snap = (struct alloy_reporter_snapshot){
		.size = sizeof(snap), .version = ALLOY_REPORTER_SNAPSHOT_VERSION
	};
	ck_assert_ok(alloy_reporter_snapshot(&snap));
	ck_assert_int_eq(snap.total.current_bytes, 0);
	/* The realloc is the allocator's own: 10 bytes go, then 5000 come. */
	ck_assert_int_eq(snap.total.peak_bytes, 6000);
}
END_TEST

#define THREADS	   4
#define PER_THREAD 20000

static void *mailbox[THREADS][64];

/* Each thread frees what its neighbour allocated. */
static void *cross_free(void *arg)
{
	int me = (int)(intptr_t)arg, next = (me + 1) % THREADS;

	for (int i = 0; i < PER_THREAD; i++) {
		void **slot = &mailbox[next][i % 64];
		void *p = alloy_malloc(1 + (size_t)i % 700);
		void *old = __atomic_exchange_n(slot, p, __ATOMIC_ACQ_REL);

		alloy_free(old);
	}
	return NULL;
}

START_TEST(threads_free_each_others_blocks)
{
	static struct test_alloc ta;
	struct alloy_allocator *a = use_test_allocator(&ta, "t_plain_t");
	pthread_t t[THREADS];

	for (intptr_t i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, cross_free, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	for (int i = 0; i < THREADS; i++)
		for (int k = 0; k < 64; k++)
			alloy_free(mailbox[i][k]);
	ck_assert_int_eq(ta.allocs, THREADS * PER_THREAD);
	ck_assert_int_eq(ta.frees, THREADS * PER_THREAD);
	ck_assert_int_eq(ta.bad_frees, 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(a), 0);
	ck_assert_int_eq(alloy_allocator_live_bytes(a), 0);
	ck_assert_int_eq(alloy_plain_bad_frees(), 0);
}
END_TEST

Suite *suite_plain(void)
{
	Suite *s = suite_create("plain");
	TCase *tc = tcase_create("api");

	tcase_add_test(tc, malloc_free_counted_on_the_default);
	tcase_add_test(tc, malloc_zero_is_a_unique_pointer);
	tcase_add_test(tc, calloc_zeroes_and_refuses_overflow);
	tcase_add_test(tc, realloc_keeps_contents_and_follows_glibc);
	tcase_add_test(tc, aligned_allocation);
	tcase_add_test(tc, block_returns_to_its_maker_after_swap);
	tcase_add_test(tc, foreign_and_double_frees_are_refused);
	tcase_add_test(tc, realloc_by_the_op_voids_the_old_block);
	tcase_add_test(tc, realloc_refused_by_the_maker_fails);
	tcase_add_test(
		tc, failed_realloc_keeps_the_block_while_the_reporter_drains);
	tcase_add_test(tc, reporter_sees_plain_blocks);
	suite_add_tcase(s, tc);
	tc = tcase_create("threads");
	tcase_add_test(tc, threads_free_each_others_blocks);
	suite_add_tcase(s, tc);
	return s;
}
