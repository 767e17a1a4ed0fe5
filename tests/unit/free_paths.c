// SPDX-License-Identifier: MIT
/*
 * tests/unit/free_paths.c - the two ways a block of alloy's registry is
 * freed: inline, the caller's code calling the allocator's free op
 * itself (alloy/allocator.h), and through alloy__allocator_deleter, which
 * a thread without a record takes, and a program whose idea of that
 * function's address is not liballoy's (one built without
 * position-independent code: its canonical PLT entry).
 *
 * Built twice from this file: tests/unit/free_paths as programs are built
 * here (position-independent), tests/unit/free_paths_nopie with -fno-pie
 * -no-pie.  Each makes blocks on the default allocator through both
 * allocation entries, frees half on the main thread and hands the other
 * half to a thread that has made nothing (its first free finds no
 * record), and then every block and byte it made has left the
 * allocator's counts.  A position-independent build must take the
 * inline free; the other says which it took.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <alloy/alloy.h>

#define BLOCKS 64

static struct alloy_data_ptr blocks[BLOCKS];

static int fail(const char *what)
{
	fprintf(stderr, "free_paths: %s\n", what);
	return 1;
}

static void *free_second_half(void *arg)
{
	(void)arg;
	for (int i = BLOCKS / 2; i < BLOCKS; i++)
		alloy_data_ptr_free(&blocks[i]);
	return NULL;
}

int main(void)
{
	struct alloy_allocator *a = alloy_find_allocator("default");
	long long blocks0, bytes0, bytes = 0;
	bool inline_free;
	pthread_t t;

	if (!a)
		return fail("no default allocator");
	blocks0 = alloy_allocator_live_blocks(a);
	bytes0 = alloy_allocator_live_bytes(a);
	for (int i = 0; i < BLOCKS; i++) {
		size_t size = 16 * (size_t)(i + 1);
		int rc = i % 2 ? alloy_alloc(a, size, 64, 0, &blocks[i])
			       : alloy_alloc_default(ALLOY_DEVICE_CPU, size, 0,
						     &blocks[i]);

		if (rc)
			return fail(alloy_last_error());
		memset(blocks[i].ptr, i, size);
		bytes += (long long)size;
	}
	if (alloy_allocator_live_blocks(a) != blocks0 + BLOCKS ||
	    alloy_allocator_live_bytes(a) != bytes0 + bytes)
		return fail("the blocks made are not counted");
	inline_free = blocks[0].deleter == alloy__allocator_deleter;
	for (int i = 0; i < BLOCKS / 2; i++)
		alloy_data_ptr_free(&blocks[i]);
	if (pthread_create(&t, NULL, free_second_half, NULL) ||
	    pthread_join(t, NULL))
		return fail("no thread");
	for (int i = 0; i < BLOCKS; i++)
		if (blocks[i].ptr || blocks[i].deleter)
			return fail("a freed DataPtr is not empty");
	if (alloy_allocator_live_blocks(a) != blocks0 ||
	    alloy_allocator_live_bytes(a) != bytes0)
		return fail("the blocks freed are still counted");
	printf("free_paths: %d blocks freed %s; counts back to %lld blocks, %lld bytes\n",
	       BLOCKS,
	       inline_free ? "inline" : "through alloy__allocator_deleter",
	       blocks0, bytes0);
#ifdef __PIE__
	if (!inline_free)
		return fail(
			"a position-independent program took the deleter call");
#endif
	return 0;
}
