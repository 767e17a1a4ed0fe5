/* SPDX-License-Identifier: MIT */
/*
 * allocators/builtin.h - the allocators compiled into liballoy.
 */
#ifndef ALLOY_ALLOCATORS_BUILTIN_H
#define ALLOY_ALLOCATORS_BUILTIN_H

#include "kernel/base.h"

ALLOY_HIDDEN int alloy__register_default_allocator(void);
ALLOY_HIDDEN int alloy__register_fail_allocator(void);
ALLOY_HIDDEN int alloy__register_debug_allocator(void);
ALLOY_HIDDEN int alloy__register_cuda_sim_allocators(void);

/* All of the above, in order (allocators/builtin.c). */
ALLOY_HIDDEN int alloy__register_builtin_allocators(void);

/*
 * The wrappers' inners (allocators/wrap.c): called by the root after the
 * built-ins and ALLOY_PLUGINS are in (root/init.c), not by the above.
 */
ALLOY_HIDDEN int alloy__wrap_resolve_inners(void);

#endif /* ALLOY_ALLOCATORS_BUILTIN_H */
