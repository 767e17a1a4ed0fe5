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

#endif /* ALLOY_DEVICES_CUDA_RUNTIME_H */
