/* SPDX-License-Identifier: MIT */
/*
 * allocators/devsrc_cuda.h - the CUDA runtime source, inside alloy_cuda.so
 * only (devsrc_cuda.c); the module's entry (cuda_module.c) uses it.
 */
#ifndef ALLOY_ALLOCATORS_DEVSRC_CUDA_H
#define ALLOY_ALLOCATORS_DEVSRC_CUDA_H

#include "allocators/devsrc.h"

/* The source over the CUDA runtime (no state: ctx is NULL). */
struct alloy__devsrc alloy__cuda_runtime_source(void);

/* 0 when a CUDA device is usable, else -ENODEV: "no CUDA device: why". */
int alloy__cuda_runtime_probe(void);

#endif /* ALLOY_ALLOCATORS_DEVSRC_CUDA_H */
