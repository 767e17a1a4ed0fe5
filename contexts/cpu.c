// SPDX-License-Identifier: MIT
/*
 * contexts/cpu.c - the CPU context (Caffe2's CPUContext).
 *
 * new() asks the registry for the CPU default of this very moment, so a
 * swap of the default takes effect on the next allocation; copies are
 * plain memory moves.
 */
#include <string.h>

#include "contexts/cpu.h"

static int cpu_new(void *ctx, struct alloy_device dev, size_t nbytes,
		   struct alloy_data_ptr *out)
{
	(void)ctx;
	(void)dev;
	return alloy_alloc_default(ALLOY_DEVICE_CPU, nbytes, 0, out);
}

static int cpu_copy(void *ctx, size_t nbytes, const void *src,
		    struct alloy_device src_dev, void *dst,
		    struct alloy_device dst_dev, void *stream)
{
	(void)ctx;
	(void)src_dev;
	(void)dst_dev;
	(void)stream;
	/* memmove: Caffe2 copies within one tensor's buffer, too. */
	memmove(dst, src, nbytes);
	return 0;
}

static int cpu_memset(void *ctx, struct alloy_device dev, void *ptr, int byte,
		      size_t n, void *stream)
{
	(void)ctx;
	(void)dev;
	(void)stream;
	memset(ptr, byte, n);
	return 0;
}

static const struct alloy_context_ops cpu_context_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_context_ops),
	.name = "cpu",
	.device_type = ALLOY_DEVICE_CPU,
	.new_bytes = cpu_new,
	.copy_bytes = cpu_copy,
	.memset_bytes = cpu_memset,
};

int alloy__register_cpu_context(void)
{
	return alloy_register_context(&cpu_context_ops, NULL);
}
