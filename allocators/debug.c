// SPDX-License-Identifier: MIT
/*
 * allocators/debug.c - "debug": redzones, poison, quarantine, free checks.
 *
 * Each block is taken from the inner allocator with a redzone before and
 * after it (the front one rounded up so the block keeps its alignment):
 *
 *     base                user                user + size
 *     | front redzone ... | the block ......... | rear redzone |
 *
 * The allocator keeps a record of every block it made, in a hash table
 * keyed by the user pointer, rather than a header in the block: a free of
 * a pointer it never made is then recognised without reading the memory
 * before it, which may not be mapped.  The record also holds the
 * allocation site (backtrace()) and, once freed, the free site.
 *
 * A freed block is poisoned and kept, with its record, in a FIFO
 * quarantine: a second free of it is a double free with both sites to
 * show, and when it leaves the quarantine its poison is checked to catch
 * writes after free.  Only then does the memory go back to the inner.
 *
 * One mutex guards the table and the quarantine; this allocator is for
 * finding bugs, not for speed.  Backtraces are taken before locking.
 */
#include <execinfo.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/builtin.h"
#include "allocators/wrap.h"
#include "core/conf.h"
#include <alloy/debug.h>

#define FRAMES		   16
#define BUCKET_BITS	   12
#define DEFAULT_REDZONE	   32
#define MAX_REDZONE	   4096
#define DEFAULT_QUARANTINE 256

struct block {
	struct block *next;  /* hash chain */
	struct block *qnext; /* quarantine, oldest first */
	char *user;
	size_t size;
	size_t align;
	size_t front; /* bytes from the inner block's start to user */
	size_t total; /* bytes taken from the inner */
	struct alloy_allocator *inner;
	bool freed;
	int nalloc;
	int nfree;
	void *alloc_site[FRAMES];
	void *free_site[FRAMES];
};

struct debug_state {
	struct alloy__wrap w;
	pthread_mutex_t lock;
	struct block *buckets[1u << BUCKET_BITS];
	struct block *qhead;
	struct block *qtail;
	size_t qcount;
	atomic_size_t redzone;
	atomic_size_t quarantine;
	atomic_bool quiet;
	atomic_bool abort_on_error;
	atomic_uint_fast64_t errors[ALLOY_DEBUG_ERROR_KINDS];
	char last[4096];
	size_t last_len;
};

static struct debug_state ds = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.redzone = DEFAULT_REDZONE,
	.quarantine = DEFAULT_QUARANTINE,
};

static const char *const error_names[ALLOY_DEBUG_ERROR_KINDS] = {
	[ALLOY_DEBUG_OVERFLOW] = "heap overflow",
	[ALLOY_DEBUG_UNDERFLOW] = "heap underflow",
	[ALLOY_DEBUG_USE_AFTER_FREE] = "write after free",
	[ALLOY_DEBUG_DOUBLE_FREE] = "double free",
	[ALLOY_DEBUG_FOREIGN_FREE] = "free of a foreign pointer",
	[ALLOY_DEBUG_WRONG_SIZE] = "free with the wrong size",
};

/* ---- the table of blocks -------------------------------------------- */

static struct block **bucket(struct debug_state *d, const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return &d->buckets[h >> (64 - BUCKET_BITS)];
}

static struct block *find_locked(struct debug_state *d, const void *p)
{
	for (struct block *b = *bucket(d, p); b; b = b->next)
		if (b->user == p)
			return b;
	return NULL;
}

static void unlink_locked(struct debug_state *d, struct block *victim)
{
	for (struct block **pp = bucket(d, victim->user); *pp;
	     pp = &(*pp)->next)
		if (*pp == victim) {
			*pp = victim->next;
			return;
		}
}

/* ---- reports ---------------------------------------------------------- */

struct text {
	char *buf;
	size_t len;
	size_t cap;
};

/* Append to t, cutting what does not fit. */
static void __attribute__((format(printf, 2, 0)))
vappend(struct text *t, const char *fmt, va_list ap)
{
	int n;

	if (t->len + 1 >= t->cap)
		return;
	n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
	if (n > 0)
		t->len += (size_t)n < t->cap - t->len ? (size_t)n
						      : t->cap - t->len - 1;
}

static void __attribute__((format(printf, 2, 3)))
append(struct text *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vappend(t, fmt, ap);
	va_end(ap);
}

static void append_site(struct text *t, const char *what, void *const *site,
			int n)
{
	char **names = backtrace_symbols(site, n);

	append(t, "  %s:\n", what);
	for (int i = 0; i < n; i++) {
		if (names)
			append(t, "    #%d %s\n", i, names[i]);
		else
			append(t, "    #%d %p\n", i, site[i]);
	}
	free(names);
}

/* Record, count and print one problem; the lock is held. */
static void __attribute__((format(printf, 4, 5)))
report(struct debug_state *d, int kind, const struct block *b, const char *fmt,
       ...)
{
	struct text t = { d->last, 0, sizeof(d->last) };
	va_list ap;

	append(&t, "alloy: debug: %s: ", error_names[kind]);
	va_start(ap, fmt);
	vappend(&t, fmt, ap);
	va_end(ap);
	append(&t, "\n");
	if (b) {
		append(&t, "  block %p: %zu bytes, alignment %zu\n",
		       (void *)b->user, b->size, b->align);
		append_site(&t, "allocated at", b->alloc_site, b->nalloc);
		if (b->freed)
			append_site(&t, "freed at", b->free_site, b->nfree);
	}
	d->last_len = t.len;
	atomic_fetch_add(&d->errors[kind], 1);
	if (!atomic_load(&d->quiet)) {
		fputs(d->last, stderr);
		fflush(stderr);
	}
	if (atomic_load(&d->abort_on_error))
		abort();
}

/* Offset of the first byte in [p, p + n) that is not c, or n. */
static size_t first_not(const char *p, size_t n, int c)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] != (unsigned char)c)
			return i;
	return n;
}

/* Offset one past the last byte in [p, p + n) that is not c, or 0. */
static size_t last_not(const char *p, size_t n, int c)
{
	for (size_t i = n; i > 0; i--)
		if ((unsigned char)p[i - 1] != (unsigned char)c)
			return i;
	return 0;
}

/* Check both redzones of b; returns the number of problems reported. */
static int check_redzones(struct debug_state *d, const struct block *b)
{
	size_t rear = b->total - b->front - b->size;
	const char *end = b->user + b->size;
	int bad = 0;
	size_t i;

	i = last_not(end, rear, ALLOY_DEBUG_FILL_REDZONE);
	if (i) {
		report(d, ALLOY_DEBUG_OVERFLOW, b,
		       "%zu bytes written past the end of a %zu-byte block, up to offset %zu",
		       i - first_not(end, rear, ALLOY_DEBUG_FILL_REDZONE),
		       b->size, b->size + i - 1);
		bad++;
	}
	i = first_not(b->user - b->front, b->front, ALLOY_DEBUG_FILL_REDZONE);
	if (i < b->front) {
		report(d, ALLOY_DEBUG_UNDERFLOW, b,
		       "written %zu bytes before the start of a %zu-byte block",
		       b->front - i, b->size);
		bad++;
	}
	return bad;
}

/* Check that a quarantined block still holds its poison. */
static int check_poison(struct debug_state *d, const struct block *b)
{
	size_t i = first_not(b->user, b->size, ALLOY_DEBUG_FILL_FREED);

	if (i == b->size)
		return 0;
	report(d, ALLOY_DEBUG_USE_AFTER_FREE, b,
	       "freed %zu-byte block written at offset %zu (to offset %zu) after its free",
	       b->size, i,
	       last_not(b->user, b->size, ALLOY_DEBUG_FILL_FREED) - 1);
	return 1;
}

/* ---- quarantine --------------------------------------------------------- */

/*
 * Take blocks out of the quarantine until it holds at most keep, checking
 * each; they are chained on *out for release once the lock is dropped.
 */
static size_t evict_locked(struct debug_state *d, size_t keep,
			   struct block **out)
{
	size_t bytes = 0;

	while (d->qcount > keep) {
		struct block *b = d->qhead;

		d->qhead = b->qnext;
		if (!d->qhead)
			d->qtail = NULL;
		d->qcount--;
		check_poison(d, b);
		unlink_locked(d, b);
		bytes += b->total;
		b->qnext = *out;
		*out = b;
	}
	return bytes;
}

static void release(struct debug_state *d, struct block *list)
{
	while (list) {
		struct block *b = list;

		list = b->qnext;
		alloy__wrap_inner_free(&d->w, b->inner, b->user - b->front,
				       b->total, b->align);
		free(b);
	}
}

/* ---- the allocator ------------------------------------------------------ */

static void *debug_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	struct debug_state *d = ctx;
	size_t rz = atomic_load(&d->redzone);
	size_t front = (rz + align - 1) & ~(align - 1);
	struct block *b;
	size_t total;
	char *base;

	if (__builtin_add_overflow(front, size, &total) ||
	    __builtin_add_overflow(total, rz, &total)) {
		alloy__error(-EOVERFLOW, "alloy_alloc",
			     "debug: %zu bytes with %zu-byte redzones overflow",
			     size, rz);
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->nalloc = backtrace(b->alloc_site, FRAMES);
	base = alloy__wrap_inner_alloc(&d->w, &b->inner, total, align,
				       flags & ~ALLOY_ALLOC_ZERO);
	if (!base) {
		free(b);
		return NULL;
	}
	b->user = base + front;
	b->size = size;
	b->align = align;
	b->front = front;
	b->total = total;
	memset(base, ALLOY_DEBUG_FILL_REDZONE, front);
	memset(b->user + size, ALLOY_DEBUG_FILL_REDZONE, rz);
	/* Unwritten memory reads as junk, unless asked to be zero. */
	memset(b->user,
	       (flags & ALLOY_ALLOC_ZERO) || alloy__conf.zero_fill
		       ? 0
		       : ALLOY_DEBUG_FILL_NEW,
	       size);

	pthread_mutex_lock(&d->lock);
	b->next = *bucket(d, b->user);
	*bucket(d, b->user) = b;
	pthread_mutex_unlock(&d->lock);
	return b->user;
}

static void debug_free(void *ctx, void *ptr, size_t size, size_t align)
{
	struct debug_state *d = ctx;
	struct block *evicted = NULL;
	void *site[FRAMES];
	int nsite = backtrace(site, FRAMES);
	struct block *b;

	pthread_mutex_lock(&d->lock);
	b = find_locked(d, ptr);
	if (!b) {
		/* Not ours: touching it could crash or corrupt; leave it. */
		report(d, ALLOY_DEBUG_FOREIGN_FREE, NULL,
		       "%p (%zu bytes) was not allocated by \"debug\", or was freed long ago",
		       ptr, size);
		goto out;
	}
	if (b->freed) {
		report(d, ALLOY_DEBUG_DOUBLE_FREE, b,
		       "%p freed again; the second free is ignored", ptr);
		goto out;
	}
	if (size != b->size || align != b->align)
		report(d, ALLOY_DEBUG_WRONG_SIZE, b,
		       "%p freed as %zu bytes, alignment %zu; freeing the %zu bytes it has",
		       ptr, size, align, b->size);
	check_redzones(d, b);

	memset(b->user, ALLOY_DEBUG_FILL_FREED, b->size);
	memcpy(b->free_site, site, sizeof(site));
	b->nfree = nsite;
	b->freed = true;
	b->qnext = NULL;
	if (d->qtail)
		d->qtail->qnext = b;
	else
		d->qhead = b;
	d->qtail = b;
	d->qcount++;
	evict_locked(d, atomic_load(&d->quarantine), &evicted);
out:
	pthread_mutex_unlock(&d->lock);
	release(d, evicted);
}

static size_t debug_usable_size(void *ctx, const void *ptr, size_t size)
{
	/* Exactly what was asked for: the byte after it is a redzone. */
	return size;
}

/* Empty the quarantine, checking each block; returns the bytes released. */
static long long debug_trim(void *ctx)
{
	struct debug_state *d = ctx;
	struct block *evicted = NULL;
	size_t bytes;

	pthread_mutex_lock(&d->lock);
	bytes = evict_locked(d, 0, &evicted);
	pthread_mutex_unlock(&d->lock);
	release(d, evicted);
	return (long long)bytes;
}

static void debug_fini(void *ctx)
{
	struct debug_state *d = ctx;

	debug_trim(ctx);
	alloy__wrap_fini(&d->w);
}

static int debug_set_option(void *ctx, const char *key, const char *value)
{
	struct debug_state *d = ctx;
	uint64_t n;
	bool b;
	int rc;

	if (strcmp(key, "inner") == 0)
		return alloy__wrap_set_inner(&d->w, value);
	if (strcmp(key, "quiet") == 0 || strcmp(key, "abort") == 0) {
		ALLOY_ENFORCE(alloy_parse_bool(value, &b) == 0, -ERANGE,
			      "debug.%s: \"%s\" is not a boolean", key, value);
		atomic_store(key[0] == 'q' ? &d->quiet : &d->abort_on_error, b);
		return 0;
	}
	if (strcmp(key, "redzone") && strcmp(key, "quarantine"))
		return alloy__error(
			-EINVAL, __func__,
			"debug.%s: unknown key (inner, redzone, quarantine, quiet, abort)",
			key);
	rc = alloy__wrap_parse_u64("debug", key, value, &n);
	if (rc)
		return rc;
	if (key[0] == 'r') {
		ALLOY_ENFORCE(n <= MAX_REDZONE, -ERANGE,
			      "debug.redzone: %llu is more than %d bytes",
			      (unsigned long long)n, MAX_REDZONE);
		atomic_store(&d->redzone, (size_t)n);
	} else {
		atomic_store(&d->quarantine,
			     n > SIZE_MAX ? SIZE_MAX : (size_t)n);
	}
	return 0;
}

static const struct alloy_allocator_ops debug_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "debug",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = debug_alloc,
	.free = debug_free,
	.fini = debug_fini,
	.usable_size = debug_usable_size,
	.trim = debug_trim,
	.set_option = debug_set_option,
	/* no realloc: alloc + copy + free keeps every block checked */
};

/*
 * fork(): another thread may hold the table's lock at that moment, and
 * the child, where that thread does not exist, would hang at its first
 * allocation through debug.  The lock is taken before fork and released
 * on both sides.  Registered after core's handlers (alloy__fork_setup
 * runs first at init), so this prepare runs before theirs: the table's
 * lock is the outer one, held around calls into the inner allocator.
 */
static void fork_prepare(void)
{
	pthread_mutex_lock(&ds.lock);
}

static void fork_release(void)
{
	pthread_mutex_unlock(&ds.lock);
}

static void fork_setup(void)
{
	pthread_atfork(fork_prepare, fork_release, fork_release);
}

int alloy__register_debug_allocator(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fork_setup);
	return alloy__wrap_register(&ds.w, &debug_ops);
}

/* ---- API ------------------------------------------------------------------
 */

uint64_t alloy_debug_errors(int kind)
{
	uint64_t n = 0;

	if (kind >= 0 && kind < ALLOY_DEBUG_ERROR_KINDS)
		return atomic_load(&ds.errors[kind]);
	if (kind != -1)
		return 0;
	for (int i = 0; i < ALLOY_DEBUG_ERROR_KINDS; i++)
		n += atomic_load(&ds.errors[i]);
	return n;
}

const char *alloy_debug_error_name(int kind)
{
	if (kind < 0 || kind >= ALLOY_DEBUG_ERROR_KINDS)
		return "unknown";
	return error_names[kind];
}

size_t alloy_debug_last_report(char *buf, size_t len)
{
	size_t n;

	pthread_mutex_lock(&ds.lock);
	n = ds.last_len;
	if (buf && len) {
		size_t c = n < len - 1 ? n : len - 1;

		memcpy(buf, ds.last, c);
		buf[c] = '\0';
	}
	pthread_mutex_unlock(&ds.lock);
	return n;
}

int alloy_debug_check(void)
{
	int bad = 0;

	pthread_mutex_lock(&ds.lock);
	for (size_t i = 0; i < ARRAY_SIZE(ds.buckets); i++)
		for (struct block *b = ds.buckets[i]; b; b = b->next)
			bad += b->freed ? check_poison(&ds, b)
					: check_redzones(&ds, b);
	pthread_mutex_unlock(&ds.lock);
	return bad;
}
