// SPDX-License-Identifier: MIT
/*
 * core/fork.c - fork() in a process that uses alloy.
 *
 * Another thread may hold one of core's locks at the moment of fork; the
 * child would inherit it held by a thread that does not exist there, and
 * its first allocation or load would hang.  So every lock is taken before
 * fork, in the order in which the code nests them, and released in both
 * processes after it; the child also drops the other threads' per-thread
 * records (core/tcount.c).  The reporter registers its own handlers for
 * its locks (reporter/reporter.c), which run before these in the parent.
 */
#include <pthread.h>

#include "internal.h"
#include "arena.h"

static void prepare(void)
{
	alloy__plugin_fork_lock();
	alloy__registry_fork_lock();
	alloy__context_fork_lock();
	alloy__conf_fork_lock();
	alloy__tls_fork_prepare();
	alloy__arena_lock();
}

static void parent(void)
{
	alloy__arena_unlock();
	alloy__tls_fork_parent();
	alloy__conf_fork_unlock();
	alloy__context_fork_unlock();
	alloy__registry_fork_unlock();
	alloy__plugin_fork_unlock();
}

static void child(void)
{
	alloy__arena_unlock();
	alloy__tls_fork_child();
	alloy__conf_fork_unlock();
	alloy__context_fork_unlock();
	alloy__registry_fork_unlock();
	alloy__plugin_fork_unlock();
}

void alloy__fork_setup(void)
{
	pthread_atfork(prepare, parent, child);
}
