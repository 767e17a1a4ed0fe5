/* SPDX-License-Identifier: MIT */
/*
 * alloy/owner.h - who a block belongs to: a label per thread, scoped.
 *
 * A thread pushes a label before the code whose memory it names and pops
 * it after; labels nest and are joined with '/' ("layer3" then "conv"
 * gives "layer3/conv").  Every block alloy makes while a label is in
 * force records it, and the reporter's at-peak report and flame graph
 * group memory by it (docs/REPORTER.md).  Workspace blobs label their
 * tensors' memory with the blob's name by themselves.
 *
 *	alloy_owner_push("layer3");
 *	alloy_owner_push("conv");
 *	... allocations here are owned by "layer3/conv" ...
 *	alloy_owner_pop();
 *	alloy_owner_pop();
 *
 * The labels are the calling thread's own: no lock, no allocation from
 * the process's malloc.  Costs nothing when the reporter is off.
 */
#ifndef ALLOY_OWNER_H
#define ALLOY_OWNER_H

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the joined path, and labels in force at once, per thread. */
#define ALLOY_OWNER_MAX	  255
#define ALLOY_OWNER_DEPTH 32

/*
 * Put label on top of this thread's labels.  0, or a negative errno with
 * the message set: -EINVAL (NULL, empty, or a control character in it),
 * -ENAMETOOLONG (the joined path would pass ALLOY_OWNER_MAX bytes),
 * -E2BIG (ALLOY_OWNER_DEPTH labels already), -ENOMEM (no per-thread
 * record could be made).  Nothing changes on failure, so a failed push
 * must not be popped.
 */
int alloy_owner_push(const char *label);

/* Take the top label off.  0, or -ENOENT when none is in force. */
int alloy_owner_pop(void);

/*
 * This thread's owner path ("layer3/conv"), or NULL when no label is in
 * force.  Valid until this thread's next push or pop.
 */
const char *alloy_owner_current(void);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_OWNER_H */
