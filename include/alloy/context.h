/* SPDX-License-Identifier: MIT */
/*
 * alloy/context.h - device contexts: allocate on a device, copy bytes.
 *
 * A context serves one device type.  Its new() takes memory from the
 * registry's default allocator for that device *at the moment of the call*;
 * copy_bytes() moves bytes between its device and the CPU or between two
 * of its devices.  The CPU context is built in; the CUDA module registers
 * the CUDA one.
 */
#ifndef ALLOY_CONTEXT_H
#define ALLOY_CONTEXT_H

#include <stddef.h>
#include <alloy/allocator.h>

#ifdef __cplusplus
extern "C" {
#endif

struct alloy_context_ops {
	uint16_t abi_major;
	uint16_t abi_minor;
	uint32_t struct_size;
	const char *name;
	int device_type; /* enum alloy_device_type it serves */

	/* Required: allocate nbytes on dev.  0 or negative errno. */
	int (*new_bytes)(void *ctx, struct alloy_device dev, size_t nbytes,
			 struct alloy_data_ptr *out);
	/*
	 * Required: copy nbytes from src on src_dev to dst on dst_dev, one
	 * of which is this context's device type (the other may be the
	 * CPU).  stream NULL means synchronous.
	 */
	int (*copy_bytes)(void *ctx, size_t nbytes, const void *src,
			  struct alloy_device src_dev, void *dst,
			  struct alloy_device dst_dev, void *stream);
	/* Optional: wait for the device's outstanding work. */
	int (*synchronize)(void *ctx, struct alloy_device dev);
	/*
	 * Optional, appended after the first release (a provider whose
	 * struct_size ends before it has none): set n bytes at ptr on dev to
	 * byte, stream NULL meaning synchronous.  When absent, alloy_memset
	 * uses memset for host memory (cpu, cuda_host) and fails with
	 * -ENOTSUP for any other.
	 */
	int (*memset_bytes)(void *ctx, struct alloy_device dev, void *ptr,
			    int byte, size_t n, void *stream);
};

/* Register the context of a device type; -EEXIST if it has one. */
int alloy_register_context(const struct alloy_context_ops *ops, void *ctx);

/* Remove the context of a device type; -ENOENT if none. */
int alloy_unregister_context(int device_type);

/* Whether a context serves this device type. */
int alloy_has_context(int device_type);

/* Allocate nbytes on dev through its context (c10's Context::New). */
int alloy_context_new(struct alloy_device dev, size_t nbytes,
		      struct alloy_data_ptr *out);

/*
 * Copy nbytes between devices.  CPU<->CPU is memmove-safe memcpy; any pair
 * with a non-CPU side goes through that side's context.  Overlapping
 * ranges on the same device are allowed.  -ENODEV without a context.
 */
int alloy_copy_bytes(size_t nbytes, const void *src,
		     struct alloy_device src_dev, void *dst,
		     struct alloy_device dst_dev);

/* The same, queued on a stream (NULL = synchronous). */
int alloy_copy_bytes_async(size_t nbytes, const void *src,
			   struct alloy_device src_dev, void *dst,
			   struct alloy_device dst_dev, void *stream);

/*
 * Set n bytes at ptr on dev to byte (the low 8 bits), through dev's
 * context (CUDA: a device memset), and return when it is done.  Host
 * memory without a context, or whose context has no memset_bytes, is set
 * with memset.  0, -EINVAL (ptr NULL with n > 0, unknown device type),
 * -ENOTSUP (a device context without memset_bytes), or the context's
 * error.  n 0 does nothing.
 */
int alloy_memset(struct alloy_device dev, void *ptr, int byte, size_t n);

/* Wait for a device's outstanding work (no-op for the CPU). */
int alloy_context_synchronize(struct alloy_device dev);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_CONTEXT_H */
