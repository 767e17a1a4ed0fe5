// SPDX-License-Identifier: MIT
/*
 * modules/modcache.c - a backend module's process-wide cache of free
 * large blocks (modules/modcache.h has why and the rules).
 */
#include <errno.h>
#include <stdatomic.h>
#include <alloy/conf.h>
#include <alloy/plugin.h>

#include "modules/modcache.h"

MODCACHE_API size_t modcache_min;

static unsigned lg_first;
static struct modcache_backend backend;

static struct {
	atomic_flag lock;
	unsigned char n[MODCACHE_CLASSES];
	void *block[MODCACHE_CLASSES][MODCACHE_DEPTH];
} cache = { .lock = ATOMIC_FLAG_INIT };

/* Bytes kept: written under the lock, read before it (nothing to take). */
static _Atomic size_t kept;

static _Atomic size_t limit = MODCACHE_LIMIT_DEFAULT;

/* One try: a thread that cannot have the lock does without the cache. */
static bool try_lock(void)
{
	return !atomic_flag_test_and_set_explicit(&cache.lock,
						  memory_order_acquire);
}

static void unlock(void)
{
	atomic_flag_clear_explicit(&cache.lock, memory_order_release);
}

/* Under the lock: the only writer, so a load and a store. */
static void add_kept(size_t delta)
{
	atomic_store_explicit(
		&kept,
		atomic_load_explicit(&kept, memory_order_relaxed) + delta,
		memory_order_relaxed);
}

void modcache_init(unsigned lg_min, const struct modcache_backend *be)
{
	backend = *be;
	lg_first = lg_min;
	modcache_min = (size_t)1 << lg_min;
}

size_t modcache_block_bytes(size_t size)
{
	return qclass_bytes(qclass_of(size, lg_first), lg_first);
}

void *modcache_take(size_t size)
{
	size_t c = qclass_of(size, lg_first);
	void *p = NULL;

	if (!atomic_load_explicit(&kept, memory_order_relaxed) || !try_lock())
		return NULL;
	if (cache.n[c]) {
		p = cache.block[c][--cache.n[c]];
		add_kept(-qclass_bytes(c, lg_first));
	}
	unlock();
	return p;
}

bool modcache_put(void *ptr, size_t size)
{
	size_t c = qclass_of(size, lg_first), bytes = qclass_bytes(c, lg_first);
	size_t most = atomic_load_explicit(&limit, memory_order_relaxed);
	bool done = false;

	if ((uintptr_t)ptr % MODCACHE_ALIGN || bytes > most ||
	    backend.usable(ptr) < bytes || !try_lock())
		return false;
	if (cache.n[c] < MODCACHE_DEPTH &&
	    atomic_load_explicit(&kept, memory_order_relaxed) <= most - bytes) {
		cache.block[c][cache.n[c]++] = ptr;
		add_kept(bytes);
		done = true;
	}
	unlock();
	return done;
}

void modcache_free(void *ptr, size_t size)
{
	if (!modcache_put(ptr, size))
		backend.release(ptr);
}

/* Give back kept blocks until at most keep bytes are kept. */
static size_t shrink(size_t keep)
{
	void *out[MODCACHE_CLASSES * MODCACHE_DEPTH];
	size_t n = 0, freed = 0;

	/* Patient here (trim, an option): never forever, as in a child. */
	for (int tries = 0; !try_lock(); tries++)
		if (tries > 100000)
			return 0;
	for (size_t c = MODCACHE_CLASSES; c-- > 0;) {
		while (cache.n[c] &&
		       atomic_load_explicit(&kept, memory_order_relaxed) >
			       keep) {
			out[n++] = cache.block[c][--cache.n[c]];
			add_kept(-qclass_bytes(c, lg_first));
			freed += qclass_bytes(c, lg_first);
		}
	}
	unlock();
	for (size_t i = 0; i < n; i++)
		backend.release(out[i]);
	return freed;
}

void modcache_set_limit(size_t most)
{
	atomic_store_explicit(&limit, most, memory_order_relaxed);
	shrink(most);
}

size_t modcache_flush(void)
{
	return shrink(0);
}

int modcache_option(const char *module, const char *value)
{
	uint64_t n;

	if (alloy_parse_size(value, &n) || n > SIZE_MAX)
		return alloy_plugin_error(
			-ERANGE,
			"%s: cache \"%s\" must be a size in bytes (0: no cache)",
			module, value);
	modcache_set_limit((size_t)n);
	return 0;
}
