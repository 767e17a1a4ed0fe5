// SPDX-License-Identifier: MIT
/*
 * preload/thread.c - the control socket opened with the program's first
 * thread (ALLOY_CONF's control:auto, the default).
 *
 * The socket is served by a thread of alloy's, and a second thread is
 * something a program notices: glibc's malloc and jemalloc take their
 * locks only once a process is multi-threaded, and a fork() from a
 * signal handler that interrupted one of them then waits on that lock
 * forever, where the same single-threaded program forks.  So under
 * control:auto the front leaves a single-threaded program alone and
 * opens the socket right after the program's own first pthread_create()
 * returns: from then on the program is multi-threaded anyway, and a
 * thread's creation is an ordinary point of the program, outside any
 * allocator's critical section.  control:1 opens it at start instead.
 *
 * Threads made by other means than pthread_create's exported symbol
 * (C11 thrd_create inside glibc, a raw clone) open nothing.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <alloy/alloy.h>
#include <alloy/control.h>

#include "preload/front.h"

#define INTERPOSE __attribute__((visibility("default")))

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
			 void *);

static _Atomic(create_fn) real_create;
/* Set while the socket waits for the program's first thread. */
static atomic_bool armed;

static create_fn find_real_create(void)
{
	create_fn fn = atomic_load_explicit(&real_create, memory_order_acquire);

	if (front_likely(fn != NULL))
		return fn;
	/* dlsym may allocate: alloy's own call, served by the bootstrap. */
	alloy__front_enter();
	fn = (create_fn)dlsym(RTLD_NEXT, "pthread_create");
	alloy__front_leave();
	atomic_store_explicit(&real_create, fn, memory_order_release);
	return fn;
}

void alloy__front_control_start(void)
{
	const char *mode = alloy_conf_get("control");

	find_real_create();
	if (mode && !strcmp(mode, "1"))
		alloy_control_start();
	else if (mode && !strcmp(mode, "auto"))
		atomic_store_explicit(&armed, true, memory_order_release);
}

INTERPOSE int pthread_create(pthread_t *thread, const pthread_attr_t *attr,
			     void *(*start)(void *), void *arg)
{
	create_fn fn = find_real_create();
	int rc;

	if (front_unlikely(!fn))
		return ENOSYS;
	rc = fn(thread, attr, start, arg);
	/* The exchange lets one caller through, never the socket's own. */
	if (!rc &&
	    front_unlikely(
		    atomic_load_explicit(&armed, memory_order_relaxed)) &&
	    !alloy__front_inside() && atomic_exchange(&armed, false)) {
		int saved = errno;

		alloy_control_start();
		errno = saved;
	}
	return rc;
}
