// SPDX-License-Identifier: MIT
/*
 * tests/unit/default_libc.c - the default allocator calls glibc by glibc's own
 * names, never through the interposable malloc family.
 *
 * This program defines malloc, free and the rest for the whole process,
 * as the LD_PRELOAD front does (a definition in the program
 * comes before libc's in every lookup), counting each call and passing it
 * on to glibc.  It then drives the default allocator's ops directly -
 * small and large blocks, zeroed and junk-filled, usable size, trim,
 * stats, options - and fails if any of its definitions was called.
 * Exit 77 (skipped) under a sanitizer, which defines them itself.
 */
#include <dlfcn.h>
#include <gnu/lib-names.h>
#include <malloc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <alloy/alloy.h>

#include "kernel/sanitizer.h"

#ifdef ALLOY_SANITIZER_OWNS_MALLOC
int main(void)
{
	printf("default_libc: skipped: the sanitizer owns malloc\n");
	return 77;
}
#else

void *__libc_malloc(size_t size);
void *__libc_calloc(size_t n, size_t size);
void *__libc_realloc(void *ptr, size_t size);
void *__libc_memalign(size_t align, size_t size);
void *__libc_valloc(size_t size);
void *__libc_pvalloc(size_t size);
void __libc_free(void *ptr);

enum { MALLOC, FREE, CALLOC, REALLOC, MEMALIGN, USABLE, TRIM, NCALLS };
static const char *const call_names[NCALLS] = {
	"malloc",	    "free",
	"calloc",	    "realloc",
	"*memalign/valloc", "malloc_usable_size",
	"malloc_trim",
};
static atomic_long calls[NCALLS];
static size_t (*libc_usable_size)(void *);
static int (*libc_trim)(size_t);

void *malloc(size_t size)
{
	calls[MALLOC]++;
	return __libc_malloc(size);
}

void free(void *ptr)
{
	calls[FREE]++;
	__libc_free(ptr);
}

void *calloc(size_t n, size_t size)
{
	calls[CALLOC]++;
	return __libc_calloc(n, size);
}

void *realloc(void *ptr, size_t size)
{
	calls[REALLOC]++;
	return __libc_realloc(ptr, size);
}

int posix_memalign(void **out, size_t align, size_t size)
{
	calls[MEMALIGN]++;
	*out = __libc_memalign(align, size);
	return *out ? 0 : 12; /* ENOMEM */
}

void *memalign(size_t align, size_t size)
{
	calls[MEMALIGN]++;
	return __libc_memalign(align, size);
}

void *aligned_alloc(size_t align, size_t size)
{
	calls[MEMALIGN]++;
	return __libc_memalign(align, size);
}

void *valloc(size_t size)
{
	calls[MEMALIGN]++;
	return __libc_valloc(size);
}

void *pvalloc(size_t size)
{
	calls[MEMALIGN]++;
	return __libc_pvalloc(size);
}

size_t malloc_usable_size(void *ptr)
{
	calls[USABLE]++;
	return libc_usable_size ? libc_usable_size(ptr) : 0;
}

int malloc_trim(size_t pad)
{
	calls[TRIM]++;
	return libc_trim ? libc_trim(pad) : 0;
}

/* Every op of the default allocator, on small and large blocks. */
static int exercise(struct alloy_allocator *d)
{
	static const size_t sizes[] = { 1,	64,	 1000,	 65536,
					131000, 1 << 20, 5 << 20 };
	const struct alloy_allocator_ops *ops = alloy_allocator_ops(d);
	void *ctx = alloy_allocator_ctx(d);
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		for (size_t align = 8; align <= 65536; align *= 8) {
			for (unsigned flags = 0; flags <= ALLOY_ALLOC_ZERO;
			     flags += ALLOY_ALLOC_ZERO) {
				void *p =
					ops->alloc(ctx, sizes[i], align, flags);

				if (!p)
					return -1;
				if (ops->usable_size(ctx, p, sizes[i]) <
				    sizes[i])
					return -1;
				ops->free(ctx, p, sizes[i], align);
			}
		}
	}
	if (ops->set_option(ctx, "cache", "1M") || ops->trim(ctx) < 0)
		return -1;
	return alloy_allocator_stats(d, &st);
}

int main(void)
{
	void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
	struct alloy_allocator *d;
	long total = 0;

	if (!libc) {
		printf("default_libc: cannot open %s: %s\n", LIBC_SO,
		       dlerror());
		return 1;
	}
	*(void **)&libc_usable_size = dlsym(libc, "malloc_usable_size");
	*(void **)&libc_trim = dlsym(libc, "malloc_trim");
	/* junk_fill too: its fills must not reach for malloc either. */
	setenv("ALLOY_CONF", "junk_fill:1", 1);
	if (alloy_init() != 0 || !(d = alloy_find_allocator("default"))) {
		printf("default_libc: alloy_init: %s\n", alloy_last_error());
		return 1;
	}
	/* The library's own start-up may use malloc; from here on, none. */
	for (int i = 0; i < NCALLS; i++)
		calls[i] = 0;
	if (exercise(d)) {
		printf("default_libc: the default allocator failed: %s\n",
		       alloy_last_error());
		return 1;
	}
	for (int i = 0; i < NCALLS; i++) {
		if (calls[i])
			printf("default_libc: the default allocator called the process's %s %ld times\n",
			       call_names[i], (long)calls[i]);
		total += calls[i];
	}
	if (total)
		return 1;
	printf("default_libc: no call into the process's malloc family\n");
	return 0;
}
#endif
