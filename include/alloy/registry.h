/* SPDX-License-Identifier: MIT */
/*
 * alloy/registry.h - the set of allocators and the defaults per device.
 *
 * All functions are safe to call from any thread at any moment.  Changing a
 * default affects allocations that start afterwards; blocks made before
 * still go back to their own allocator.
 */
#ifndef ALLOY_REGISTRY_H
#define ALLOY_REGISTRY_H

#include <alloy/allocator.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The most allocators registered at once. */
#define ALLOY_MAX_ALLOCATORS 64

/*
 * Register an allocator.  The ops are copied; ctx is passed to each op.
 * origin is "builtin" or a module path (NULL means "api").  Returns 0 and
 * the handle in *out (out may be NULL), or:
 *   -EINVAL  missing required member, bad name or ABI major mismatch
 *   -EEXIST  an allocator of that name is registered
 *   -ENOSPC  ALLOY_MAX_ALLOCATORS reached
 *   <0       what ops->init returned
 * Allocator-specific ALLOY_CONF keys ("name.key:value") are applied
 * right after init.
 */
int alloy_register_allocator(const struct alloy_allocator_ops *ops, void *ctx,
			     const char *origin, struct alloy_allocator **out);

/*
 * Unregister by name.  -ENOENT unknown, -EBUSY while it is the default of
 * a device, still has live blocks, or is the inner of a wrapper allocator
 * (fail, debug).  Calls fini.  After success, blocks of
 * it cannot exist and its handle must not be used.
 */
int alloy_unregister_allocator(const char *name);

/* The allocator of that name, or NULL (-ENOENT in the message). */
struct alloy_allocator *alloy_find_allocator(const char *name);

/*
 * Like alloy_find_allocator, but if the name is not registered, try to
 * load the module "name" from the module directory first (see plugin.h).
 */
struct alloy_allocator *alloy_request_allocator(const char *name);

/*
 * Call fn for each registered allocator, in registration order, until it
 * returns non-zero (which is then returned).
 */
int alloy_foreach_allocator(int (*fn)(struct alloy_allocator *a, void *arg),
			    void *arg);

/* The current default allocator for a device type (never NULL for cpu). */
struct alloy_allocator *alloy_get_default(int device_type);

/*
 * Make a the default for its device type (or for device_type, which must
 * match the allocator's).  Returns 0, -EINVAL or -ENOENT.
 */
int alloy_set_default(int device_type, struct alloy_allocator *a);

/* Same, by name; loads the module if needed.  */
int alloy_set_default_by_name(int device_type, const char *name);

/*
 * Allocate size bytes from the default allocator of a device type at this
 * moment, with the configured default alignment.  Returns 0 and fills
 * *out, or a negative code with *out empty: -EINVAL (NULL out, unknown
 * device type), -EOVERFLOW (size above 2^62), -ENODEV (the device has no
 * default: its module is not loaded), -ENOMEM (the allocator refused).
 * size 0 gives an empty DataPtr.
 *
 * The call is wrapped inline: the arguments are checked in the caller,
 * where constant or known-good ones cost nothing, and the checked call
 * goes straight to the fast path.  (alloy_alloc_default)(...) calls the
 * function itself, which checks them again.
 */
int alloy_alloc_default(int device_type, size_t size, unsigned flags,
			struct alloy_data_ptr *out);

/*
 * The fast path for arguments known good: not for direct use.  It fills
 * *out but ptr and returns the allocator's block straight from its alloc
 * op (a tail call: nothing of alloy runs after the allocator), or NULL;
 * then alloy__alloc_default_settle finishes the call: the slow path when
 * the fast one could not start (out->ctx NULL), the failure when the
 * allocator refused.  The parameters are in the order that leaves size
 * and flags where the allocator's alloc op takes them.
 */
ALLOY__NOPLT void *alloy__alloc_default_fast(size_t device_type, size_t size,
					     struct alloy_data_ptr *out,
					     unsigned flags);
int alloy__alloc_default_settle(int device_type, size_t size, unsigned flags,
				struct alloy_data_ptr *out);
/* The fast path of liballoy 1.0's header: kept for what was built on it. */
int alloy__alloc_default_checked(int device_type, size_t size,
				 struct alloy_data_ptr *out, unsigned flags);

static inline int alloy__alloc_default_inline(int device_type, size_t size,
					      unsigned flags,
					      struct alloy_data_ptr *out)
{
	if (__builtin_expect(out != NULL &&
				     (unsigned)device_type <
					     ALLOY_DEVICE_TYPE_COUNT &&
				     size - 1 < ((size_t)1 << 62),
			     1)) {
		void *p = alloy__alloc_default_fast((unsigned)device_type, size,
						    out, flags);

		if (__builtin_expect(p != NULL, 1)) {
			out->ptr = p;
			return 0;
		}
		return alloy__alloc_default_settle(device_type, size, flags,
						   out);
	}
	return (alloy_alloc_default)(device_type, size, flags, out);
}
#define alloy_alloc_default(device_type, size, flags, out) \
	alloy__alloc_default_inline(device_type, size, flags, out)

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_REGISTRY_H */
