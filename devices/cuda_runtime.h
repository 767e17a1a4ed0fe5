/* SPDX-License-Identifier: MIT */
/*
 * devices/cuda_runtime.h - the CUDA runtime source, inside alloy_cuda.so
 * only (devsrc_cuda.c); the module's entry (modules/cuda.c) uses it.
 */
#ifndef ALLOY_DEVICES_CUDA_RUNTIME_H
#define ALLOY_DEVICES_CUDA_RUNTIME_H

#include "devices/devsrc.h"

/* The source over the CUDA runtime (no state: ctx is NULL). */
struct alloy__devsrc alloy__cuda_runtime_source(void);

/* 0 when a CUDA device is usable, else -ENODEV: "no CUDA device: why". */
int alloy__cuda_runtime_probe(void);

/*
 * The driver's virtual-memory calls (devices/cuda_vmm.c), the source's
 * va_* and mem_* ops; whether the driver has them.
 */
int alloy__cuda_vmm_available(void);
int alloy__cuda_va_reserve(void *ctx, int device, size_t size, void **out);
int alloy__cuda_va_release(void *ctx, void *ptr, size_t size);
int alloy__cuda_mem_create(void *ctx, int device, size_t size, void **handle);
int alloy__cuda_mem_release(void *ctx, void *handle);
int alloy__cuda_mem_map(void *ctx, void *ptr, size_t size, void *handle);
int alloy__cuda_mem_set_access(void *ctx, int device, void *ptr, size_t size);
int alloy__cuda_mem_unmap(void *ctx, void *ptr, size_t size);

#endif /* ALLOY_DEVICES_CUDA_RUNTIME_H */
