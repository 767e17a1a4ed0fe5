/* SPDX-License-Identifier: MIT */
/*
 * allocators/builtin.h - the allocators compiled into liballoy.
 */
#ifndef ALLOY_ALLOCATORS_BUILTIN_H
#define ALLOY_ALLOCATORS_BUILTIN_H

#include "core/internal.h"

ALLOY_HIDDEN int alloy__register_default_allocator(void);

#endif /* ALLOY_ALLOCATORS_BUILTIN_H */
