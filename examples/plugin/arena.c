// SPDX-License-Identifier: MIT
/*
 * arena.c - an example alloy plugin, built outside the alloy tree.
 *
 * Allocator "arena": blocks are carved from chunks by bumping a pointer;
 * free only counts.  When the count of live blocks drops to zero the arena
 * resets: the first chunk is kept for reuse and the rest are given back.
 * One mutex guards it all - an example, not a scalable allocator.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <alloy/conf.h>
#include <alloy/plugin.h>

struct chunk {
	struct chunk *next; /* older chunk */
	size_t size;	    /* bytes after the header */
};

struct arena {
	pthread_mutex_t lock;
	size_t chunk_size;
	struct chunk *chunks; /* newest first; the last one is kept on reset */
	uintptr_t cur, end;   /* free range in the newest chunk */
	size_t live;
	size_t reserved;
	uint64_t system_allocs, system_frees, resets;
};

static struct arena arena = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.chunk_size = 1 << 20,
};

static uintptr_t chunk_data(struct chunk *c)
{
	return (uintptr_t)(c + 1);
}

/* A new chunk with room for size bytes at align; NULL when out of memory. */
static struct chunk *add_chunk(struct arena *ar, size_t size, size_t align)
{
	size_t want = ar->chunk_size;
	struct chunk *c;

	if (size > SIZE_MAX - align || size + align > want)
		want = size + align; /* a block too big for a chunk: its own */
	if (want > SIZE_MAX - sizeof(*c))
		return NULL;
	c = malloc(sizeof(*c) + want);
	if (!c)
		return NULL;
	c->size = want;
	c->next = ar->chunks;
	ar->chunks = c;
	ar->cur = chunk_data(c);
	ar->end = ar->cur + want;
	ar->reserved += want;
	ar->system_allocs++;
	return c;
}

static void *arena_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	struct arena *ar = ctx;
	uintptr_t p;

	pthread_mutex_lock(&ar->lock);
	p = (ar->cur + align - 1) & ~(uintptr_t)(align - 1);
	if (!ar->chunks || p < ar->cur || p > ar->end || ar->end - p < size) {
		if (!add_chunk(ar, size, align)) {
			pthread_mutex_unlock(&ar->lock);
			return NULL;
		}
		p = (ar->cur + align - 1) & ~(uintptr_t)(align - 1);
	}
	ar->cur = p + size;
	ar->live++;
	pthread_mutex_unlock(&ar->lock);
	if (flags & ALLOY_ALLOC_ZERO)
		memset((void *)p, 0, size);
	return (void *)p;
}

/* Nothing is live: keep the oldest chunk, give back the others. */
static void arena_reset(struct arena *ar)
{
	struct chunk *c = ar->chunks;

	while (c && c->next) {
		struct chunk *next = c->next;

		ar->reserved -= c->size;
		ar->system_frees++;
		free(c);
		c = next;
	}
	ar->chunks = c;
	if (c) {
		ar->cur = chunk_data(c);
		ar->end = ar->cur + c->size;
	}
	ar->resets++;
}

static void arena_free(void *ctx, void *ptr, size_t size, size_t align)
{
	struct arena *ar = ctx;

	(void)ptr;
	(void)size;
	(void)align;
	pthread_mutex_lock(&ar->lock);
	if (--ar->live == 0)
		arena_reset(ar);
	pthread_mutex_unlock(&ar->lock);
}

static int arena_stats(void *ctx, struct alloy_allocator_stats *st)
{
	struct arena *ar = ctx;

	pthread_mutex_lock(&ar->lock);
	st->reserved = ar->reserved;
	st->num_system_allocs = ar->system_allocs;
	st->num_system_frees = ar->system_frees;
	pthread_mutex_unlock(&ar->lock);
	return 0;
}

static int arena_set_option(void *ctx, const char *key, const char *value)
{
	struct arena *ar = ctx;
	uint64_t n;

	if (strcmp(key, "chunk_size") != 0)
		return alloy_plugin_error(
			-EINVAL,
			"arena: unknown option \"%s\" (known: chunk_size)",
			key);
	if (alloy_parse_size(value, &n) || n < 4096 || n > ((uint64_t)1 << 40))
		return alloy_plugin_error(
			-ERANGE,
			"arena: chunk_size \"%s\" is not a size between 4K and 1T",
			value);
	pthread_mutex_lock(&ar->lock);
	ar->chunk_size = (size_t)n;
	pthread_mutex_unlock(&ar->lock);
	return 0;
}

static void arena_fini(void *ctx)
{
	struct arena *ar = ctx;

	/* Unregistering means no live blocks: everything can go. */
	arena_reset(ar);
	free(ar->chunks);
	ar->chunks = NULL;
	ar->reserved = 0;
}

static const struct alloy_allocator_ops arena_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "arena",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = arena_alloc,
	.free = arena_free,
	.fini = arena_fini,
	.stats = arena_stats,
	.set_option = arena_set_option,
};

static const struct alloy_plugin_allocator allocators[] = {
	{ &arena_ops, &arena },
};

static const struct alloy_plugin_descriptor descriptor = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_plugin_descriptor),
	.name = "arena",
	.description = "bump allocator over chunks, reset when nothing is live",
	.allocators = allocators,
	.nallocators = 1,
};

__attribute__((visibility("default"))) const struct alloy_plugin_descriptor *
alloy_module_entry(void)
{
	return &descriptor;
}
