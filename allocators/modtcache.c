// SPDX-License-Identifier: MIT
/*
 * allocators/modtcache.c - a backend module's per-thread cache of free
 * medium blocks (allocators/modtcache.h has why and the rules).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <alloy/conf.h>
#include <alloy/plugin.h>

#include "allocators/freelink.h"
#include "allocators/modtcache.h"

struct mtcache {
	void *head[MTCACHE_BINS];
	unsigned char count[MTCACHE_BINS];
	bool registered; /* the exit key holds this thread's cache */
};

/*
 * Each thread's own.  The module is dlopen'ed, so this is dynamic TLS:
 * built with TLS descriptors where configure found them (a lookup of a
 * few instructions that keeps the caller's registers), else one call to
 * __tls_get_addr per lookup.
 */
static __thread struct mtcache cache;

/*
 * The list of each size in the range by (size - 1) / 256: the classes
 * are 256 bytes apart or more, so a table of 256 answers at the cost of
 * a load (filled by mtcache_init).
 */
#define BIN_STEP_LG 8
static unsigned char bin_of[MTCACHE_MAX >> BIN_STEP_LG];

/* The list of a request that mtcache_covers. */
static inline size_t bin(size_t size)
{
	return bin_of[(size - 1) >> BIN_STEP_LG];
}

/* The bytes every block of list b holds: its class. */
static inline size_t bin_bytes(size_t b)
{
	return qclass_bytes(b, MTCACHE_LG_MIN);
}

/* Blocks list b may hold: the option, capped by MTCACHE_BIN_BYTES. */
static _Atomic unsigned char depth[MTCACHE_BINS];
static struct mtcache_backend backend;
static pthread_key_t exit_key;
static atomic_bool have_key;
static _Atomic unsigned long long bad_links;
/* The links' key (allocators/freelink.h), set by mtcache_init. */
static struct freelink_key link_key = { UINTPTR_MAX, FREELINK_HIGH };

/*
 * The calling thread's cache, looked up once: the empty asm hides where
 * the pointer came from, or the compiler would look it up again after
 * each call rather than keep it in a register.
 */
static inline struct mtcache *here(void)
{
	struct mtcache *c = &cache;

	__asm__("" : "+r"(c));
	return c;
}

static void set_depth(unsigned n)
{
	for (size_t b = 0; b < MTCACHE_BINS; b++) {
		size_t most = 1 + MTCACHE_BIN_BYTES / bin_bytes(b);

		atomic_store_explicit(&depth[b],
				      (unsigned char)(n < most ? n : most),
				      memory_order_relaxed);
	}
}

/*
 * The block after p in list b, or NULL where the link p holds is not one
 * the cache wrote (allocators/freelink.h): the list ends at p then, and
 * the blocks after it are dropped.
 */
static __attribute__((noinline, cold)) void *bad_link(void *p, size_t b)
{
	freelink_report(&bad_links, backend.name, p, bin_bytes(b));
	return NULL;
}

static void *next_of(void *p, size_t b)
{
	void *next = freelink_get(p, &link_key);

	return freelink_ok(next, MTCACHE_ALIGN) ? next : bad_link(p, b);
}

/* Hand out p, the head of list b, whose link failed: the list ends. */
static __attribute__((noinline, cold)) void *
take_last(struct mtcache *c, void *p, size_t b, size_t size, bool zero)
{
	bad_link(p, b);
	c->head[b] = NULL;
	c->count[b] = 0;
	return zero ? memset(p, 0, size) : p;
}

static void flush(struct mtcache *c)
{
	for (size_t b = 0; b < MTCACHE_BINS; b++) {
		for (void *p = c->head[b], *next; p; p = next) {
			next = next_of(p, b);
			backend.release(p, bin_bytes(b));
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
	struct mtcache *c = arg;

	flush(c);
	c->registered = false;
}

int mtcache_init(const struct mtcache_backend *be)
{
	int rc;

	/* Entry i: sizes 256 i + 1 .. 256 (i + 1); those below the range unused. */
	for (size_t i = MTCACHE_MIN >> BIN_STEP_LG;
	     i < sizeof(bin_of); i++)
		bin_of[i] = (unsigned char)qclass_of(
			(i + 1) << BIN_STEP_LG, MTCACHE_LG_MIN);
	backend = *be;
	link_key = freelink_key();
	rc = pthread_key_create(&exit_key, thread_exit);
	if (rc) {
		set_depth(0);
		return -rc;
	}
	set_depth(MTCACHE_DEPTH_DEFAULT);
	atomic_store(&have_key, true);
	return 0;
}

void mtcache_fini(void)
{
	flush(&cache);
	if (atomic_exchange(&have_key, false))
		pthread_key_delete(exit_key);
}

int mtcache_option(const char *module, const char *value)
{
	uint64_t n;

	if (alloy_parse_size(value, &n) || n > MTCACHE_DEPTH_MAX)
		return alloy_plugin_error(
			-ERANGE,
			"%s: thread_cache \"%s\" must be a count of blocks "
			"per size, 0 to %d (0: no cache)",
			module, value, MTCACHE_DEPTH_MAX);
	set_depth((unsigned)n);
	return 0;
}

void *mtcache_alloc(size_t size, bool zero)
{
	size_t b = bin(size);
	struct mtcache *c = here();
	void *p = c->head[b], *next;

	if (__builtin_expect(!p, 0))
		return backend.make(bin_bytes(b), zero);
	next = freelink_get(p, &link_key);
	if (__builtin_expect(!freelink_ok(next, MTCACHE_ALIGN), 0))
		return take_last(c, p, b, size, zero);
	c->head[b] = next;
	c->count[b]--;
	return zero ? memset(p, 0, size) : p;
}

static bool room(const struct mtcache *c, const void *p, size_t b)
{
	return c->count[b] < atomic_load_explicit(&depth[b],
						  memory_order_relaxed) &&
	       (uintptr_t)p % MTCACHE_ALIGN == 0;
}

static void push(struct mtcache *c, void *p, size_t b)
{
	freelink_set(p, c->head[b], &link_key);
	c->head[b] = p;
	c->count[b]++;
}

/*
 * A free the fast path turned away: the thread's first keep (have its
 * cache emptied at its exit), or a block to give back.
 */
static __attribute__((noinline, cold)) void
free_slow(struct mtcache *c, void *p, size_t b)
{
	if (room(c, p, b) && !c->registered &&
	    atomic_load_explicit(&have_key, memory_order_relaxed) &&
	    !pthread_setspecific(exit_key, c)) {
		c->registered = true;
		push(c, p, b);
		return;
	}
	backend.release(p, bin_bytes(b));
}

void mtcache_free(void *ptr, size_t size)
{
	size_t b = bin(size);
	struct mtcache *c = here();

	if (__builtin_expect(!room(c, ptr, b) || !c->registered, 0)) {
		free_slow(c, ptr, b);
		return;
	}
	push(c, ptr, b);
}

void mtcache_flush_self(void)
{
	flush(&cache);
}
