// SPDX-License-Identifier: MIT
/*
 * kernel/arena.c - alloy's own memory: power-of-two classes from 16 bytes to
 * 64 KiB carved from 1 MiB mmap'd chunks, larger requests mapped whole.
 *
 * This memory is for what alloy keeps for itself (a few records per
 * thread, the reporter's tables), not for users, so the design is the
 * plainest that is safe anywhere: one lock, a free list per class, no
 * call into libc that could allocate.  Freed small blocks stay on their
 * class's list for reuse; chunks are never returned, which bounds the
 * arena by the peak of what alloy kept at once.
 */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include <alloy/plain.h>

#include "kernel/arena.h"

/*
 * LeakSanitizer does not look inside mmap'd memory for pointers, so a
 * block that the process's malloc made and only the arena points to (a
 * context a plugin allocated, say) would be reported as leaked.  In
 * sanitizer builds the arena's mappings are registered as roots.
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define lsan_root(p, n)	  __lsan_register_root_region((p), (n))
#define lsan_unroot(p, n) __lsan_unregister_root_region((p), (n))
#else
#define lsan_root(p, n)	  ((void)(p), (void)(n))
#define lsan_unroot(p, n) ((void)(p), (void)(n))
#endif

#define MIN_SHIFT   4  /* 16 bytes */
#define MAX_SHIFT   16 /* 64 KiB: larger goes straight to mmap */
#define NCLASSES    (MAX_SHIFT - MIN_SHIFT + 1)
#define CHUNK_BYTES ((size_t)1 << 20)

struct free_block {
	struct free_block *next;
};

static struct {
	pthread_mutex_t lock;
	struct free_block *free[NCLASSES];
	char *bump, *end; /* the unused tail of the current chunk */
	size_t mapped, in_use;
} arena = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t page_round(size_t n)
{
	return (n + 4095) & ~(size_t)4095;
}

static void *map(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	lsan_root(p, bytes);
	return p;
}

/* The class of a request: the smallest power of two >= size (>= 16). */
static int class_of(size_t size)
{
	int shift = size <= 16 ? MIN_SHIFT
			       : 64 - __builtin_clzl((unsigned long)size - 1);

	return shift - MIN_SHIFT;
}

/* A block of class c from the chunk's tail; a new chunk when it is spent. */
static void *carve(int c)
{
	size_t bytes = (size_t)1 << (c + MIN_SHIFT);
	void *p;

	if ((size_t)(arena.end - arena.bump) < bytes) {
		char *chunk = map(CHUNK_BYTES);

		if (!chunk)
			return NULL;
		/* The old tail is lost: at most 64 KiB per MiB, once. */
		arena.bump = chunk;
		arena.end = chunk + CHUNK_BYTES;
		arena.mapped += CHUNK_BYTES;
	}
	p = arena.bump;
	arena.bump += bytes;
	return p; /* fresh from mmap: already zero */
}

void *alloy__arena_alloc(size_t size)
{
	struct free_block *b;
	void *p;
	int c;

	if (size > ((size_t)1 << MAX_SHIFT)) {
		if (size > (size_t)PTRDIFF_MAX - 4096)
			return NULL;
		p = map(page_round(size));
		if (p) {
			pthread_mutex_lock(&arena.lock);
			arena.mapped += page_round(size);
			arena.in_use += page_round(size);
			pthread_mutex_unlock(&arena.lock);
		}
		return p;
	}
	c = class_of(size);
	pthread_mutex_lock(&arena.lock);
	b = arena.free[c];
	if (b) {
		arena.free[c] = b->next;
		p = b;
		memset(p, 0, (size_t)1 << (c + MIN_SHIFT));
	} else {
		p = carve(c);
	}
	if (p)
		arena.in_use += (size_t)1 << (c + MIN_SHIFT);
	pthread_mutex_unlock(&arena.lock);
	return p;
}

void alloy__arena_free(void *p, size_t size)
{
	struct free_block *b = p;
	int c;

	if (!p)
		return;
	if (size > ((size_t)1 << MAX_SHIFT)) {
		lsan_unroot(p, page_round(size));
		munmap(p, page_round(size));
		pthread_mutex_lock(&arena.lock);
		arena.mapped -= page_round(size);
		arena.in_use -= page_round(size);
		pthread_mutex_unlock(&arena.lock);
		return;
	}
	c = class_of(size);
	pthread_mutex_lock(&arena.lock);
	b->next = arena.free[c];
	arena.free[c] = b;
	arena.in_use -= (size_t)1 << (c + MIN_SHIFT);
	pthread_mutex_unlock(&arena.lock);
}

void alloy__arena_usage(size_t *mapped, size_t *in_use)
{
	pthread_mutex_lock(&arena.lock);
	if (mapped)
		*mapped = arena.mapped;
	if (in_use)
		*in_use = arena.in_use;
	pthread_mutex_unlock(&arena.lock);
}

/* The public view of the same (alloy/plain.h), added for the front's tests. */
void alloy_own_memory(size_t *mapped, size_t *in_use)
{
	alloy__arena_usage(mapped, in_use);
}

void alloy__arena_lock(void)
{
	pthread_mutex_lock(&arena.lock);
}

void alloy__arena_unlock(void)
{
	pthread_mutex_unlock(&arena.lock);
}
