// SPDX-License-Identifier: MIT
/*
 * allocators/mimalloc_cache.c - the mimalloc module's per-thread cache
 * of free 1025-2048 byte blocks (allocators/mimalloc_cache.h has why).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <mimalloc.h>

#include "allocators/mimalloc_cache.h"

struct mcache {
	void *head[MCACHE_BINS];
	unsigned char count[MCACHE_BINS];
	bool registered; /* the exit key holds this thread's cache */
};

/* Each thread's own; the module is dlopen'ed, so the dynamic TLS model. */
static __thread struct mcache cache;

static _Atomic unsigned depth = MCACHE_DEPTH_DEFAULT;
static pthread_key_t exit_key;
static atomic_bool have_key;

static void flush(struct mcache *c)
{
	for (size_t b = 0; b < MCACHE_BINS; b++) {
		for (void *p = c->head[b], *next; p; p = next) {
			next = *(void **)p;
			mi_free(p);
		}
		c->head[b] = NULL;
		c->count[b] = 0;
	}
}

/*
 * At thread exit.  A free by a later destructor may keep a block again
 * and register anew, and glibc then calls this once more.
 */
static void thread_exit(void *arg)
{
	struct mcache *c = arg;

	flush(c);
	c->registered = false;
}

int mcache_init(void)
{
	int rc = pthread_key_create(&exit_key, thread_exit);

	if (rc) {
		atomic_store(&depth, 0);
		return -rc;
	}
	atomic_store(&have_key, true);
	return 0;
}

void mcache_fini(void)
{
	flush(&cache);
	if (atomic_exchange(&have_key, false))
		pthread_key_delete(exit_key);
}

void mcache_set_depth(unsigned n)
{
	atomic_store_explicit(&depth, n, memory_order_relaxed);
}

void *mcache_take(size_t b)
{
	struct mcache *c = &cache;
	void *p = c->head[b];

	if (!p)
		return NULL;
	c->head[b] = *(void **)p;
	c->count[b]--;
	return p;
}

/* First keep of this thread: have its cache emptied at its exit. */
static bool register_thread(struct mcache *c)
{
	if (!atomic_load_explicit(&have_key, memory_order_relaxed) ||
	    pthread_setspecific(exit_key, c))
		return false;
	c->registered = true;
	return true;
}

bool mcache_put(void *p, size_t b)
{
	struct mcache *c = &cache;

	if (c->count[b] >= atomic_load_explicit(&depth, memory_order_relaxed))
		return false;
	if (__builtin_expect(!c->registered, 0) && !register_thread(c))
		return false;
	*(void **)p = c->head[b];
	c->head[b] = p;
	c->count[b]++;
	return true;
}

void mcache_flush_self(void)
{
	flush(&cache);
}
