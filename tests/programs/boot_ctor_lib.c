// SPDX-License-Identifier: MIT
/*
 * tests/programs/boot_ctor_lib.c - a library whose constructor allocates
 * before the preload front is set up, as libraries a program links do: the
 * loader runs a program's own libraries' constructors before those of
 * LD_PRELOAD's, so these blocks come from the front's bootstrap
 * allocator.  Its fork handlers then free and allocate while the front
 * holds its locks for the fork (prepare handlers run in the reverse order
 * of their registration, so this one runs after the front's).
 */
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "boot_ctor_lib.h"

#define FILL 0x5a

static char *early;	    /* allocated by the constructor */
static size_t early_usable; /* what malloc_usable_size promised for it */
static void *held;	    /* freed and made again around every fork */

static void prepare(void)
{
	free(held);
	held = NULL;
}

static void parent(void)
{
	held = malloc(24);
}

static void child(void)
{
	held = malloc(24);
}

__attribute__((constructor)) static void start(void)
{
	early = malloc(10);
	if (early) {
		early_usable = malloc_usable_size(early);
		memset(early, FILL, early_usable);
	}
	held = malloc(24);
	pthread_atfork(prepare, parent, child);
}

size_t boot_ctor_usable(void)
{
	return early_usable;
}

long boot_ctor_grow(size_t size)
{
	char *p = realloc(early, size);

	if (!p)
		return -1;
	early = p;
	for (size_t i = 0; i < early_usable; i++)
		if ((unsigned char)p[i] != FILL)
			return (long)i;
	return (long)early_usable;
}

int boot_ctor_holds(void)
{
	return held != NULL;
}
