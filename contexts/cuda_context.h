/* SPDX-License-Identifier: MIT */
/*
 * contexts/cuda_context.h - the CUDA context over a device source, for the
 * code that composes it (modules/cuda.c over the runtime; the simulator's
 * alloy_cuda_sim_register_context in contexts/cuda.c itself).
 */
#ifndef ALLOY_CONTEXTS_CUDA_CONTEXT_H
#define ALLOY_CONTEXTS_CUDA_CONTEXT_H

#include <alloy/context.h>

#include "devices/devsrc.h"

/* The device context over src (contexts/cuda.c). */
ALLOY_DEVSRC_PRIVATE int
alloy__cuda_context_new(const struct alloy__devsrc *src,
			const struct alloy_context_ops **ops, void **ctx);

#endif /* ALLOY_CONTEXTS_CUDA_CONTEXT_H */
