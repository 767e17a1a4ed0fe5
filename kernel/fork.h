/* SPDX-License-Identifier: MIT */
/*
 * kernel/fork.h - core's locks across fork() (kernel/fork.c).  Core's files
 * that own a lock include it for their handlers; above core only the
 * reporter does, to nest its own.
 */
#ifndef ALLOY_KERNEL_FORK_H
#define ALLOY_KERNEL_FORK_H

#include "kernel/base.h"

/*
 * fork(): core's locks are held across it, in the order they nest
 * (kernel/fork.c): plugins, the reporter's (handed over through
 * alloy__fork_nest, just inside the plugin lock), registry, contexts,
 * conf reports, records, arena.
 */
ALLOY_HIDDEN void alloy__fork_setup(void);

/* A layer's fork handlers, run inside core's outermost lock (fork.c). */
struct alloy__fork_handlers {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};
ALLOY_HIDDEN void alloy__fork_nest(const struct alloy__fork_handlers *h);
ALLOY_HIDDEN void alloy__plugin_fork_lock(void);
ALLOY_HIDDEN void alloy__plugin_fork_unlock(void);
ALLOY_HIDDEN void alloy__registry_fork_lock(void);
ALLOY_HIDDEN void alloy__registry_fork_unlock(void);
ALLOY_HIDDEN void alloy__context_fork_lock(void);
ALLOY_HIDDEN void alloy__context_fork_unlock(void);
/* The lock of problems reported after init (kernel/conf.c), a leaf. */
ALLOY_HIDDEN void alloy__conf_fork_lock(void);
ALLOY_HIDDEN void alloy__conf_fork_unlock(void);
/* The records' lock (kernel/count.c); the child keeps only its own record. */
ALLOY_HIDDEN void alloy__tls_fork_prepare(void);
ALLOY_HIDDEN void alloy__tls_fork_parent(void);
ALLOY_HIDDEN void alloy__tls_fork_child(void);

#endif /* ALLOY_KERNEL_FORK_H */
