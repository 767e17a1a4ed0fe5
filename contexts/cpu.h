/* SPDX-License-Identifier: MIT */
/*
 * contexts/cpu.h - the CPU context, for the composition root.
 */
#ifndef ALLOY_CONTEXTS_CPU_H
#define ALLOY_CONTEXTS_CPU_H

#include "kernel/base.h"

/* Register the CPU context (contexts/cpu.c); 0 or a negative code. */
ALLOY_HIDDEN int alloy__register_cpu_context(void);

#endif /* ALLOY_CONTEXTS_CPU_H */
