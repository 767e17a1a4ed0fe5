/* SPDX-License-Identifier: MIT */
/*
 * kernel/compose.h - what the composition root (root/init.c) hands core and
 * the configuration steps it runs.  Only core and root/ include it: no
 * other layer starts liballoy.
 */
#ifndef ALLOY_KERNEL_COMPOSE_H
#define ALLOY_KERNEL_COMPOSE_H

#include "kernel/base.h"

/*
 * Attach what the layers above register at start (root/init.c): core runs
 * it once, on first use, after parsing ALLOY_CONF.  Core itself names no
 * allocator, context or reporter.
 */
ALLOY_HIDDEN void alloy__set_composer(void (*fn)(void));

/* The steps of the configuration that the composer runs, in this order. */
/* Print ALLOY_CONF's problems on stderr, one line each. */
ALLOY_HIDDEN void alloy__conf_print_errors(void);
/* Install the configured defaults (cpu, and those named in ALLOY_CONF). */
ALLOY_HIDDEN void alloy__conf_apply_defaults(const char *cpu_fallback);
/* Report NAME.KEY options for allocators that are nowhere to be found. */
ALLOY_HIDDEN void alloy__conf_check_options(void);

#endif /* ALLOY_KERNEL_COMPOSE_H */
