/* SPDX-License-Identifier: MIT */
/*
 * kernel/owner.h - a thread's owner labels (kernel/owner.c), as the reporter
 * reads them and as tensor/ keeps a blob's name.  Core, reporter/ and
 * tensor/ include it.
 */
#ifndef ALLOY_KERNEL_OWNER_H
#define ALLOY_KERNEL_OWNER_H

#include "kernel/base.h"
#include "kernel/count.h"

/*
 * A thread's owner labels, hung on its record (struct alloy__tls's owner)
 * on its first push.  Only that thread writes it.  gen changes with every
 * push and pop, so that the reporter can keep the id it gave the path
 * (rep_id, valid while rep_gen == gen) and look the path up only when it
 * changed.
 */
struct alloy__owner {
	struct alloy__tls *holder; /* the record it hangs on */
	struct alloy__owner *next; /* every state ever made (owner.c) */
	uint64_t gen;
	uint64_t rep_gen;
	uint32_t rep_id;
	uint32_t len;			  /* bytes of path */
	uint32_t depth;			  /* labels in force */
	uint16_t lens[ALLOY_OWNER_DEPTH]; /* len before each push */
	char path[ALLOY_OWNER_MAX + 1];
};

/*
 * A copy of label kept for the life of the process (the same pointer for
 * the same text), for labels that outlive their callers: a blob's name on
 * its tensor.  NULL for NULL, "", a label too long, or without memory.
 */
ALLOY_HIDDEN const char *alloy__owner_intern(const char *label);

/* t's owner labels when at least one is in force, else NULL. */
static inline struct alloy__owner *alloy__owner_of(struct alloy__tls *t)
{
	struct alloy__owner *o = t ? (struct alloy__owner *)t->owner : NULL;

	return o && o->depth ? o : NULL;
}

#endif /* ALLOY_KERNEL_OWNER_H */
