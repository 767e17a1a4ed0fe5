// SPDX-License-Identifier: MIT
/*
 * kernel/fork.c - fork() in a process that uses alloy.
 *
 * Another thread may hold one of core's locks at the moment of fork; the
 * child would inherit it held by a thread that does not exist there, and
 * its first allocation or load would hang.  So every lock is taken before
 * fork, in the order in which the code nests them, and released in both
 * processes after it; the child also drops the other threads' per-thread
 * records (kernel/count.c).
 *
 * A layer above with locks of its own (the reporter) hands its handlers
 * to alloy__fork_nest, and they run inside the plugin lock: a plugin's
 * init runs under that lock and may allocate, which takes the
 * reporter's locks, so those nest inside it everywhere.  (Handlers of
 * their own, run before core's, took them first: a fork while another
 * thread loaded a plugin deadlocked.)  Everything else core locks nests
 * inside the reporter's (its table grows from the arena, its counters
 * use the thread records).
 */
#include <pthread.h>
#include <stdatomic.h>

#include "fork.h"
#include "arena.h"
#include "ptrset.h"

static _Atomic(const struct alloy__fork_handlers *) nested;
/* The nested handlers of the fork under way (the plugin lock keeps it). */
static const struct alloy__fork_handlers *held;

void alloy__fork_nest(const struct alloy__fork_handlers *h)
{
	atomic_store(&nested, h);
}

static void prepare(void)
{
	alloy__plugin_fork_lock();
	held = atomic_load(&nested);
	if (held)
		held->prepare();
	alloy__registry_fork_lock();
	alloy__context_fork_lock();
	alloy__conf_fork_lock();
	alloy__tls_fork_prepare();
	alloy__ptrset_fork_prepare();
	alloy__arena_lock();
}

static void parent(void)
{
	alloy__arena_unlock();
	alloy__ptrset_fork_parent();
	alloy__tls_fork_parent();
	alloy__conf_fork_unlock();
	alloy__context_fork_unlock();
	alloy__registry_fork_unlock();
	if (held)
		held->parent();
	alloy__plugin_fork_unlock();
}

static void child(void)
{
	alloy__arena_unlock();
	alloy__ptrset_fork_child();
	alloy__tls_fork_child();
	alloy__conf_fork_unlock();
	alloy__context_fork_unlock();
	alloy__registry_fork_unlock();
	if (held)
		held->child();
	alloy__plugin_fork_unlock();
}

void alloy__fork_setup(void)
{
	pthread_atfork(prepare, parent, child);
}
