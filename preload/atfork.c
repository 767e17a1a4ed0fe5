// SPDX-License-Identifier: MIT
/*
 * preload/atfork.c - fork handlers in the order glibc's malloc keeps.
 *
 * glibc's malloc takes its locks after every pthread_atfork prepare
 * handler has run and releases them before any parent or child handler
 * runs, so a program's handlers may allocate.  Under the front, the
 * memory is alloy's, and its locks (core's, the reporter's, the
 * bootstrap allocator's, the debug wrapper's, a backend's own such as
 * jemalloc's) are taken and released by fork handlers registered with
 * pthread_atfork like anyone's.  Registered where they happen to be,
 * they interleave with the program's: a handler of a library that
 * allocates would wait for a lock held for the fork, forever.
 *
 * So the front interposes the registration.  A handler registered from
 * inside alloy (the front's depth is raised on that thread: alloy's
 * start, a module or backend it loads, a wrapper's first use) goes on
 * the front's own list; any other goes to glibc as it came.  One set of
 * handlers, registered with glibc before any other, runs the list: its
 * prepare runs last of all prepares (glibc runs them in the reverse
 * order of registration) and takes alloy's locks in the order alloy
 * registered them; its parent and child run first and release them.
 * The program's handlers therefore see alloy unlocked, as they see
 * glibc's malloc.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>

#include "preload/front.h"

#define INTERPOSE    __attribute__((visibility("default")))
#define HANDLERS_MAX 32

typedef void handler_fn(void);
typedef int register_fn(handler_fn *, handler_fn *, handler_fn *, void *);

struct handlers {
	handler_fn *prepare, *parent, *child;
};

extern void *__dso_handle;

static struct handlers list[HANDLERS_MAX];
/* Entries of list in use: each is written before the count covers it. */
static _Atomic unsigned nlist;
static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t first_once = PTHREAD_ONCE_INIT;
static register_fn *glibc_register;

/*
 * Whether fn's code is still mapped: a module whose load failed is
 * unloaded, and its handlers with it.  _dl_find_object takes no lock.
 */
static bool mapped(handler_fn *fn)
{
	struct dl_find_object obj;

	return _dl_find_object((void *)fn, &obj) == 0;
}

static void run(handler_fn *fn)
{
	if (fn && mapped(fn))
		fn();
}

static void prepare_all(void)
{
	for (unsigned i = atomic_load(&nlist); i-- > 0;)
		run(list[i].prepare);
}

static void parent_all(void)
{
	unsigned n = atomic_load(&nlist);

	for (unsigned i = 0; i < n; i++)
		run(list[i].parent);
}

static void child_all(void)
{
	unsigned n = atomic_load(&nlist);

	for (unsigned i = 0; i < n; i++)
		run(list[i].child);
}

static void register_first(void)
{
	*(void **)&glibc_register =
		dlvsym(RTLD_NEXT, "__register_atfork", "GLIBC_2.3.2");
	if (glibc_register)
		glibc_register(prepare_all, parent_all, child_all,
			       &__dso_handle);
}

void alloy__front_atfork_first(void)
{
	pthread_once(&first_once, register_first);
}

int alloy__front_atfork(handler_fn *prepare, handler_fn *parent,
			handler_fn *child)
{
	unsigned n;
	int rc = 0;

	alloy__front_atfork_first();
	pthread_mutex_lock(&list_lock);
	n = atomic_load(&nlist);
	if (n < HANDLERS_MAX) {
		list[n] = (struct handlers){ prepare, parent, child };
		atomic_store(&nlist, n + 1);
	} else {
		rc = ENOMEM;
	}
	pthread_mutex_unlock(&list_lock);
	return rc;
}

int __register_atfork(handler_fn *prepare, handler_fn *parent,
		      handler_fn *child, void *dso);

/*
 * What pthread_atfork calls (it is a static stub in every object linked
 * against glibc 2.28 and later); dso is the registering object, which
 * glibc uses to drop its handlers when it is unloaded.
 */
INTERPOSE int __register_atfork(handler_fn *prepare, handler_fn *parent,
				handler_fn *child, void *dso)
{
	if (front_unlikely(alloy__front_inside()))
		return alloy__front_atfork(prepare, parent, child);
	alloy__front_atfork_first();
	if (!glibc_register)
		return ENOMEM;
	return glibc_register(prepare, parent, child, dso);
}

/* Objects linked against older glibc call its exported pthread_atfork. */
INTERPOSE int pthread_atfork(handler_fn *prepare, handler_fn *parent,
			     handler_fn *child)
{
	return __register_atfork(prepare, parent, child, NULL);
}
