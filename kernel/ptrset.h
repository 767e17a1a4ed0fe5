/* SPDX-License-Identifier: MIT */
/*
 * kernel/ptrset.h - a thread-safe set of addresses, in memory of its own
 * (never the process's malloc): the blocks the malloc front made through
 * alloy's plain-pointer API, which carry a header that no other block
 * has (kernel/front.c).
 *
 * Open addressing with linear probing; a removed key leaves a marker
 * that a later insert reuses, and the table is rebuilt without markers
 * when it grows.  One lock: the set is used only while the process's
 * CPU default has no malloc family (the debug wrapper, a plugin), whose
 * own cost is far above a lock's.  The set may be used from a fork made
 * in a signal handler (ptrset.c says how).
 */
#ifndef ALLOY_KERNEL_PTRSET_H
#define ALLOY_KERNEL_PTRSET_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel/base.h"

/* Add p (not present); 0, or -ENOMEM. */
ALLOY_HIDDEN int alloy__ptrset_add(const void *p);
/* Remove p; whether it was there. */
ALLOY_HIDDEN bool alloy__ptrset_remove(const void *p);
ALLOY_HIDDEN bool alloy__ptrset_has(const void *p);
/* How many addresses the set holds (a racy read, for a quick skip). */
ALLOY_HIDDEN uint64_t alloy__ptrset_count(void);

/* Held across fork, so that the child finds it consistent (ptrset.c). */
ALLOY_HIDDEN void alloy__ptrset_fork_prepare(void);
ALLOY_HIDDEN void alloy__ptrset_fork_parent(void);
ALLOY_HIDDEN void alloy__ptrset_fork_child(void);

#endif /* ALLOY_KERNEL_PTRSET_H */
