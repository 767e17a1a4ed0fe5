// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_unwind.c - the reporter's walk of the unwind tables
 * (kernel/unwind.c, built into the runner) against libunwind's
 * unw_backtrace from the same place: the same callers, frame for frame,
 * to the outermost one - through recursion without frame pointers, a
 * frame addressed from rbp (alloca), libc's qsort, a second thread; a
 * repeated walk served from the cache, walks of other depths and callers
 * after it; a signal frame handed back to libunwind; code made at run
 * time, where the walk stops.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "testutil.h"
#include "kernel/unwind.h"

#if defined(HAVE_LIBUNWIND) && defined(__x86_64__)
#include <dlfcn.h>

#define MAXF 128

/*
 * libunwind's unw_backtrace, from liballoy's own dependency.  The runner
 * is not linked with libunwind itself: that would put libunwind's
 * backtrace() ahead of glibc's for the whole process (the debug
 * allocator calls backtrace()), and under TSan a thread that used
 * libunwind's per-thread cache crashes at its exit (libunwind frees the
 * cache after TSan has torn the thread down).
 */
static int (*unw_backtrace_fn)(void **, int);

/* Looked up before any test walks: dlsym is no call for a signal handler. */
static void find_unw_backtrace(void)
{
	if (!unw_backtrace_fn)
		*(void **)&unw_backtrace_fn =
			dlsym(RTLD_DEFAULT, "unw_backtrace");
	ck_assert_msg(unw_backtrace_fn,
		      "unw_backtrace not loaded with liballoy");
}

static int unw_backtrace(void **buf, int n)
{
	return unw_backtrace_fn(buf, n);
}

struct walk {
	uintptr_t own[MAXF];
	void *lu[MAXF];
	int n_own, n_lu, ours;
};

/* Zeroed: an empty cache.  One per thread that walks. */
static struct alloy__unwind_cache main_cache, thread_cache;

static __attribute__((noinline)) void walk_here(struct walk *w,
						struct alloy__unwind_cache *c)
{
	w->n_own = alloy__unwind(c, w->own, MAXF, &w->ours);
	w->n_lu = unw_backtrace(w->lu, MAXF);
	__asm__ volatile("" ::: "memory");
}

/*
 * Both walks start in walk_here at different calls; from its caller on
 * (libunwind's second frame) they must agree on every frame and end
 * together.
 */
static void assert_same_callers(const struct walk *w)
{
	int j = 0;

	ck_assert_int_gt(w->n_own, 2);
	ck_assert_int_gt(w->n_lu, 2);
	while (j < w->n_own && w->own[j] != (uintptr_t)w->lu[1])
		j++;
	ck_assert_msg(j < w->n_own, "libunwind's second frame %p not found",
		      w->lu[1]);
	ck_assert_int_eq(w->n_own - j, w->n_lu - 1);
	for (int i = 1; i < w->n_lu; i++)
		ck_assert_msg(w->own[j + i - 1] == (uintptr_t)w->lu[i],
			      "frame %d: %#lx, libunwind %p", i,
			      (unsigned long)w->own[j + i - 1], w->lu[i]);
	ck_assert_int_eq(w->ours, 0); /* nothing here is liballoy's */
}

static __attribute__((noinline)) int descend(int depth, struct walk *w,
					     struct alloy__unwind_cache *c)
{
	volatile int here = depth; /* no tail call, no loop: a frame each */
	int below;

	if (!depth) {
		walk_here(w, c);
		return 0;
	}
	below = descend(depth - 1, w, c);
	return below + here;
}

/* A frame of run-time size: gcc addresses it from rbp. */
static __attribute__((noinline)) int with_alloca(int n, struct walk *w,
						 struct alloy__unwind_cache *c)
{
	volatile char *buf = __builtin_alloca((size_t)n);

	buf[0] = (char)n;
	return descend(n, w, c) + buf[0];
}

START_TEST(walk_agrees_with_libunwind)
{
	static struct walk w;

	descend(5, &w, &main_cache);
	with_alloca(12, &w, &main_cache);
	assert_same_callers(&w);
	ck_assert_int_ge(w.n_own, 12 + 5);
}
END_TEST

START_TEST(second_walk_is_served_by_the_cache)
{
	static struct walk a, b;
	struct walk *w[2] = { &a, &b };
	unsigned long misses = 0;

	/*
	 * One call site for both walks, so the same return addresses: a
	 * volatile count keeps the compiler from peeling the loop.
	 */
	for (volatile int k = 0; k < 2; k++) {
		if (k)
			misses = main_cache.misses;
		descend(8, w[k], &main_cache);
	}
	ck_assert_uint_gt(misses, 0);
	ck_assert_uint_eq(main_cache.misses, misses);
	ck_assert_int_eq(a.n_own, b.n_own);
	for (int i = 1; i < a.n_own; i++)
		ck_assert(a.own[i] == b.own[i]);
	/* It reached the outermost frame, so it knows the stack's top. */
	ck_assert(main_cache.stack_top != 0);
}
END_TEST

/*
 * Walks from ever other depths and callers, each against libunwind: what
 * the cache holds from one walk must serve the next wherever it differs,
 * deeper, shallower, or the same depth through another function.
 */
START_TEST(walks_that_share_their_outer_frames)
{
	static const int depth[] = { 3, 9, 9, 1, 14, 2, 2, 7, 0, 11 };
	static struct walk w;

	for (size_t i = 0; i < sizeof(depth) / sizeof(depth[0]); i++) {
		if (i % 3 == 2)
			with_alloca(depth[i] + 1, &w, &main_cache);
		else
			descend(depth[i], &w, &main_cache);
		assert_same_callers(&w);
	}
}
END_TEST

/* One function called by two of the same frame size: its frame sits at
 * the same place both times, with a different return address above. */
static __attribute__((noinline)) int leaf_walk(struct walk *w)
{
	walk_here(w, &main_cache);
	__asm__ volatile("" ::: "memory");
	return 1;
}

static __attribute__((noinline)) int via_a(struct walk *w)
{
	volatile int x = 1;

	return leaf_walk(w) + x;
}

static __attribute__((noinline)) int via_b(struct walk *w)
{
	volatile int x = 2;

	return leaf_walk(w) * x;
}

START_TEST(same_place_other_caller_is_walked_again)
{
	static struct walk w;

	for (volatile int k = 0; k < 4; k++) {
		if (k & 1)
			via_b(&w);
		else
			via_a(&w);
		assert_same_callers(&w);
	}
}
END_TEST

static struct walk in_qsort;

static int by_value(const void *a, const void *b)
{
	if (!in_qsort.n_lu)
		walk_here(&in_qsort, &main_cache);
	return *(const int *)a - *(const int *)b;
}

START_TEST(walk_through_libc)
{
	int v[] = { 3, 1, 2 };

	in_qsort.n_lu = 0;
	qsort(v, 3, sizeof(v[0]), by_value);
	assert_same_callers(&in_qsort);
}
END_TEST

static void *thread_walk(void *arg)
{
	descend(6, arg, &thread_cache);
	return NULL;
}

START_TEST(walk_on_another_thread)
{
	static struct walk w;
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, thread_walk, &w), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	assert_same_callers(&w);
	ck_assert(thread_cache.stack_top != 0);
	ck_assert(thread_cache.thread != main_cache.thread);
}
END_TEST

/*
 * Code made at run time has no unwind table: the walk ends at its frame,
 * the last address it reports, without reading further.  The code calls
 * fn(arg): push rbx (realigns the stack), mov rax <- rdi,
 * mov rdi <- rsi, call *rax, pop rbx, ret.
 */
static const unsigned char jit_call[] = { 0x53, 0x48, 0x89, 0xf8, 0x48, 0x89,
					  0xf7, 0xff, 0xd0, 0x5b, 0xc3 };

static struct walk in_jit;

static void walk_from_jit(void *arg)
{
	(void)arg;
	walk_here(&in_jit, &main_cache);
}

START_TEST(code_without_tables_ends_the_walk)
{
	void (*call)(void (*)(void *), void *);
	unsigned char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t last;

	ck_assert(page != MAP_FAILED);
	memcpy(page, jit_call, sizeof(jit_call));
	ck_assert_int_eq(mprotect(page, 4096, PROT_READ | PROT_EXEC), 0);
	*(void **)&call = page;
	call(walk_from_jit, NULL);
	ck_assert_int_gt(in_jit.n_own, 2);
	last = in_jit.own[in_jit.n_own - 1];
	ck_assert_msg(last - (uintptr_t)page < sizeof(jit_call),
		      "the walk went past the generated code: last frame %#lx",
		      (unsigned long)last);
	munmap(page, 4096);
}
END_TEST

/* Whether this process may map code it wrote (a hardened one may not). */
static bool can_map_code(void)
{
	void *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bool ok;

	if (page == MAP_FAILED)
		return false;
	ok = !mprotect(page, 4096, PROT_READ | PROT_EXEC);
	munmap(page, 4096);
	return ok;
}

static struct walk in_handler;

static void on_signal(int sig)
{
	(void)sig;
	walk_here(&in_handler, &main_cache);
}

START_TEST(signal_frame_is_left_to_libunwind)
{
	struct sigaction sa = { .sa_handler = on_signal }, old;

	ck_assert_int_eq(sigaction(SIGUSR1, &sa, &old), 0);
	raise(SIGUSR1);
	ck_assert_int_eq(sigaction(SIGUSR1, &old, NULL), 0);
	/* The handler's caller is the kernel's frame: libunwind's to read. */
	ck_assert_int_eq(in_handler.n_own, -1);
	ck_assert_int_gt(in_handler.n_lu, 4);
}
END_TEST

Suite *suite_unwind(void)
{
	Suite *s = suite_create("unwind");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, find_unw_backtrace, NULL);
	tcase_add_test(tc, walk_agrees_with_libunwind);
	tcase_add_test(tc, second_walk_is_served_by_the_cache);
	tcase_add_test(tc, walks_that_share_their_outer_frames);
	tcase_add_test(tc, same_place_other_caller_is_walked_again);
	tcase_add_test(tc, walk_through_libc);
#ifndef __SANITIZE_THREAD__
	/*
	 * Not under ThreadSanitizer: a thread that used libunwind crashes at
	 * its exit there (libunwind frees its per-thread cache in the last
	 * round of key destructors, after TSan's own has torn the thread
	 * down), whatever alloy does.
	 */
	tcase_add_test(tc, walk_on_another_thread);
#endif
	tcase_add_test(tc, signal_frame_is_left_to_libunwind);
	if (can_map_code())
		tcase_add_test(tc, code_without_tables_ends_the_walk);
	else
		fprintf(stderr,
			"unwind: skipped code_without_tables_ends_the_walk: no executable mapping allowed here\n");
	suite_add_tcase(s, tc);
	return s;
}

#else /* no libunwind to compare with, or not x86-64 */

/* Nothing to compare with: no check at all, rather than one that passes. */
Suite *suite_unwind(void)
{
	fprintf(stderr, "unwind: skipped: needs libunwind on x86-64\n");
	return suite_create("unwind");
}
#endif
