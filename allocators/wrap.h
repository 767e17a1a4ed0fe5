/* SPDX-License-Identifier: MIT */
/*
 * allocators/wrap.h - what the wrapper allocators (fail, debug) share.
 *
 * A wrapper is a CPU allocator that takes its memory from another one,
 * its "inner", named by the "<wrapper>.inner" ALLOY_CONF key.  It calls
 * the inner's ops directly rather than going through alloy_alloc: each
 * block is then counted and reported once, under the wrapper the user
 * asked for, not twice.  The inner's own live counts therefore do not
 * include the wrapper's blocks; instead the wrapper holds its inner
 * (alloy__allocator_hold), and the registry refuses to unregister an
 * allocator that is held.
 */
#ifndef ALLOY_ALLOCATORS_WRAP_H
#define ALLOY_ALLOCATORS_WRAP_H

#include "kernel/base.h"

struct alloy__wrap {
	const char *name; /* the wrapper's allocator name, for messages */
	void *(*alloc)(void *ctx, size_t size, size_t align, unsigned flags);
	_Atomic(struct alloy_allocator *) inner;
	char inner_name[ALLOY_NAME_MAX + 1]; /* asked for during init */
	atomic_llong live; /* blocks the wrapper has out, from its inner */
};

/*
 * Make the allocator called name the inner of w.  -ENOENT if there is
 * none, -EINVAL if it is not a CPU allocator or wrapping it would close a
 * cycle, -EBUSY while w has blocks out (they must go back where they came
 * from).  Meant for configuration: the check and the switch are not one
 * step, so no other thread may allocate through w meanwhile.
 */
ALLOY_HIDDEN int alloy__wrap_set_inner(struct alloy__wrap *w, const char *name);

/*
 * Register a wrapper's ops with w as its context.  During init, an inner
 * asked for by ALLOY_CONF is only noted, since it may be a wrapper that
 * registers later; alloy__wrap_resolve_inners() (builtin.h), called by
 * the root once the built-ins and ALLOY_PLUGINS are in, resolves them
 * all ("default" where none was asked for or the one asked for is
 * unusable, which is then reported as a configuration error).
 */
ALLOY_HIDDEN int alloy__wrap_register(struct alloy__wrap *w,
				      const struct alloy_allocator_ops *ops);

/* Let go of w's inner (the wrapper's fini): it may be unregistered again. */
ALLOY_HIDDEN void alloy__wrap_fini(struct alloy__wrap *w);

/* Allocate from / free to w's inner; alloc returns NULL with a message. */
ALLOY_HIDDEN void *alloy__wrap_inner_alloc(struct alloy__wrap *w,
					   struct alloy_allocator **inner,
					   size_t size, size_t align,
					   unsigned flags);
ALLOY_HIDDEN void alloy__wrap_inner_free(struct alloy__wrap *w,
					 struct alloy_allocator *inner,
					 void *ptr, size_t size, size_t align);

/* Parse an unsigned option value: digits, or "forever"/"never" as given. */
ALLOY_HIDDEN int alloy__wrap_parse_u64(const char *wrapper, const char *key,
				       const char *value, uint64_t *out);

#endif /* ALLOY_ALLOCATORS_WRAP_H */
