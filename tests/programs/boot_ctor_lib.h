/* SPDX-License-Identifier: MIT */
/* tests/programs/boot_ctor_lib.h - what tests/programs/boot_ctor_lib.c offers
 * its program. */
#ifndef ALLOY_TESTS_BOOT_CTOR_LIB_H
#define ALLOY_TESTS_BOOT_CTOR_LIB_H

#include <stddef.h>

/* malloc_usable_size of the block the constructor made with malloc(10). */
size_t boot_ctor_usable(void);
/*
 * realloc that block to size: how many of its usable bytes kept their
 * contents, counted from the start (all of them: boot_ctor_usable()); -1
 * when realloc fails.
 */
long boot_ctor_grow(size_t size);
/* Whether the block the fork handlers free and remake is there. */
int boot_ctor_holds(void);

#endif
