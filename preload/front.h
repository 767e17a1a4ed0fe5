/* SPDX-License-Identifier: MIT */
/*
 * preload/front.h - what the front's entry points (malloc.c, mmap.c) and
 * its start-up (init.c) share: whether a call may go to alloy.
 *
 * The front's engine is liballoy's (kernel/front.h): the entry points
 * here only tell alloy's own calls and early calls from the program's.
 * A call goes to the engine only once the constructor has
 * initialised alloy (front_ready), and only when this thread is not
 * already inside alloy (front_depth, a per-thread count raised around
 * every call into alloy).  Every other call is served by the bootstrap
 * allocator (boot.h): before the constructor, while alloy initialises,
 * and when alloy's own code (a backend, the debug wrapper, dlopen of a
 * module) calls malloc.
 */
#ifndef ALLOY_PRELOAD_FRONT_H
#define ALLOY_PRELOAD_FRONT_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernel/count.h"
#include "kernel/front.h"
#include "preload/boot.h"

#define front_likely(x)	  __builtin_expect(!!(x), 1)
#define front_unlikely(x) __builtin_expect(!!(x), 0)

/* alloy__front_depth is the engine's (kernel/front.h). */
/* The bindings the engine publishes (kernel/front.h), in our own data. */
extern FRONT_HIDDEN struct alloy__front_state alloy__front_state;
extern FRONT_HIDDEN atomic_bool alloy__front_ready;
/* free() checks ownership itself and names bad pointers (debug wrapper). */
extern FRONT_HIDDEN bool alloy__front_strict;

/* A fresh thread's first call, once the front is ready: it may serve. */
FRONT_HIDDEN bool alloy__front_serves_fresh(void);

/*
 * errno's distance from the thread pointer, the same in every thread (the
 * C library's TLS is in the static block), found by the constructor: free
 * reaches errno without a call.
 */
extern FRONT_HIDDEN ptrdiff_t alloy__front_errno_offset;

static inline int *alloy__front_errno(void)
{
#if defined(__x86_64__) || defined(__aarch64__)
	return (int *)((char *)__builtin_thread_pointer() +
		       alloy__front_errno_offset);
#else
	return &errno;
#endif
}

/* Whether this call may go to alloy. */
static inline bool alloy__front_serves(void)
{
	return front_likely(alloy__front_depth == 0) ||
	       alloy__front_serves_fresh();
}

/* Whether this thread is inside alloy (a call from alloy's own code). */
static inline bool alloy__front_inside(void)
{
	return (alloy__front_depth & ~ALLOY__FRONT_FRESH) != 0;
}

/*
 * Fork handlers of alloy's side, run in glibc's malloc's order: after
 * every other prepare handler, before every other parent and child
 * handler (preload/atfork.c).  0, or ENOMEM when the list is full.
 */
FRONT_HIDDEN int alloy__front_atfork(void (*prepare)(void),
				     void (*parent)(void), void (*child)(void));
/* Register the front's handlers with glibc ahead of any others. */
FRONT_HIDDEN void alloy__front_atfork_first(void);

/*
 * Open the control socket as ALLOY_CONF's control says: now (1), with the
 * program's first thread (auto: preload/thread.c), or never (0).
 */
FRONT_HIDDEN void alloy__front_control_start(void);

/* Report a pointer that free/realloc was given and alloy did not make. */
FRONT_HIDDEN void alloy__front_bad_pointer(const char *func, const void *p);

#endif /* ALLOY_PRELOAD_FRONT_H */
