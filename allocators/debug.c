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
 * allocation site and, once freed, the free site: the caller's frames,
 * from core's walk of the unwind tables (kernel/unwind.c, a cache probe
 * per frame once a site has been seen), or from backtrace() where the
 * walk cannot go.
 *
 * A freed block is poisoned and kept, with its record, in a FIFO
 * quarantine: a second free of it is a double free with both sites to
 * show, and when it leaves the quarantine its poison is checked to catch
 * writes after free.  Only then does the memory go back to the inner.
 *
 * The table is open-addressed (linear probing) and grows and shrinks
 * with the number of records, so finding a block costs the same with a
 * dozen blocks live or millions.  Records and the table come straight
 * from mmap: through the LD_PRELOAD front a malloc from inside alloy is
 * served by the front's small bootstrap allocator, which is not made for
 * millions of records, and mmap takes no lock that fork() needs.
 *
 * One mutex guards the table, the records and the quarantine; this
 * allocator is for finding bugs, not for speed.  Backtraces are taken and
 * the inner allocator is called outside it.  How it behaves across a
 * fork() from a signal handler is explained at the fork handlers below.
 */
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "allocators/builtin.h"
#include "allocators/wrap.h"
#include "kernel/conf.h"
#include "kernel/count.h"
#include <alloy/debug.h>

/*
 * LeakSanitizer does not look inside mmap'd memory for pointers, and the
 * records are the only holders of the blocks' addresses: in sanitizer
 * builds the record slabs are registered as roots (as kernel/arena.c does).
 */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#define lsan_root(p, n) __lsan_register_root_region((p), (n))
#else
#define lsan_root(p, n) ((void)(p), (void)(n))
#endif

#define FRAMES	   16
#define MIN_SLOTS  1024
#define SLAB_BYTES ((size_t)1 << 20)
/* A slot whose record was removed: probing goes on past it. */
#define TOMB		   ((struct block *)1)
#define DEFAULT_REDZONE	   32
#define MAX_REDZONE	   4096
#define DEFAULT_QUARANTINE 256

struct block {
	struct block *qnext; /* quarantine (oldest first), or spare records */
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

/* The table: a power of two of slots, each NULL, TOMB or a record. */
struct table {
	size_t bytes; /* of its mapping */
	size_t mask;  /* slots - 1 */
	struct block *slot[];
};

struct debug_state {
	struct alloy__wrap w;
	pthread_mutex_t lock;
	struct table *table;	 /* NULL until the first block */
	size_t used;		 /* records in the table */
	size_t tombs;		 /* TOMB slots in the table */
	struct block *spare;	 /* records free for reuse */
	char *carve, *carve_end; /* the unused part of the newest slab */
	size_t records;		 /* records carved in all */
	/* forks that found their thread inside the critical section */
	atomic_uint_fast64_t nested_forks;
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

/*
 * Every step below leaves the table usable at every instruction (see the
 * fork handlers): a record is complete before the one store that puts it
 * in a slot, a grown table is complete before the one store that
 * publishes it, and the counts err on the side that only grows the
 * table early.
 */

static size_t slot_of(const struct table *t, const void *p)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & t->mask;
}

static struct table *table_new(size_t slots)
{
	size_t bytes = sizeof(struct table) + slots * sizeof(struct block *);
	struct table *t = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (t == MAP_FAILED)
		return NULL;
	t->bytes = bytes;
	t->mask = slots - 1;
	return t; /* slots zero: all empty */
}

/* The slot holding p's record, or NULL. */
static struct block **find_slot(struct table *t, const void *p)
{
	if (!t)
		return NULL;
	for (size_t i = slot_of(t, p);; i = (i + 1) & t->mask) {
		struct block *b = t->slot[i];

		if (!b)
			return NULL;
		if (b != TOMB && b->user == p)
			return &t->slot[i];
	}
}

/* Put b in the first free slot on its path (user pointers are unique). */
static void place(struct table *t, struct block *b)
{
	size_t i = slot_of(t, b->user);

	while (t->slot[i] && t->slot[i] != TOMB)
		i = (i + 1) & t->mask;
	t->slot[i] = b;
}

/*
 * A table sized for the records there are (a quarter full), without
 * tombs: it grows as blocks are added, shrinks after they went, and is
 * rebuilt only after a quarter of its slots changed, so each operation
 * pays O(1) for it on average.
 */
static int rehash_locked(struct debug_state *d)
{
	struct table *old = d->table, *t;
	size_t slots = MIN_SLOTS;

	while (slots / 4 < d->used + 1)
		slots *= 2;
	t = table_new(slots);
	if (!t)
		return -1;
	if (old)
		for (size_t i = 0; i <= old->mask; i++)
			if (old->slot[i] && old->slot[i] != TOMB)
				place(t, old->slot[i]);
	d->table = t;
	d->tombs = 0;
	if (old)
		munmap(old, old->bytes);
	return 0;
}

static int insert_locked(struct debug_state *d, struct block *b)
{
	struct table *t = d->table;
	size_t i;

	/* At most half the slots taken: probes stay short and end. */
	if (!t || 2 * (d->used + d->tombs + 1) > t->mask + 1) {
		if (rehash_locked(d))
			return -1;
		t = d->table;
	}
	d->used++;
	i = slot_of(t, b->user);
	while (t->slot[i] && t->slot[i] != TOMB)
		i = (i + 1) & t->mask;
	if (t->slot[i] == TOMB) {
		t->slot[i] = b;
		d->tombs--;
	} else {
		t->slot[i] = b;
	}
	return 0;
}

static void remove_locked(struct debug_state *d, struct block **slot)
{
	struct table *t = d->table;
	size_t i = (size_t)(slot - t->slot);

	/* Before an empty slot no probe needs to pass: empty it too. */
	if (!t->slot[(i + 1) & t->mask]) {
		*slot = NULL;
	} else {
		*slot = TOMB;
		d->tombs++;
	}
	d->used--;
	/* Mostly empty: smaller (failing that, it stays as it is). */
	if (t->mask + 1 > MIN_SLOTS && 16 * d->used < t->mask + 1)
		rehash_locked(d);
}

/* A record for a new block: a spare one, or carved from a slab. */
static struct block *record_locked(struct debug_state *d)
{
	struct block *b = d->spare;

	if (b) {
		d->spare = b->qnext;
		return b;
	}
	if ((size_t)(d->carve_end - d->carve) < sizeof(*b)) {
		char *slab = mmap(NULL, SLAB_BYTES, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (slab == MAP_FAILED)
			return NULL;
		lsan_root(slab, SLAB_BYTES);
		/* Slabs stay: the records are bounded by the peak. */
		d->carve = slab;
		d->carve_end = slab + SLAB_BYTES;
	}
	b = (struct block *)d->carve;
	d->carve += sizeof(*b);
	d->records++;
	return b;
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

	while (d->qcount > keep && d->qhead) {
		struct block *b = d->qhead;
		struct block **slot;

		d->qhead = b->qnext;
		if (!d->qhead)
			d->qtail = NULL;
		d->qcount--;
		check_poison(d, b);
		slot = find_slot(d->table, b->user);
		if (slot)
			remove_locked(d, slot);
		bytes += b->total;
		b->qnext = *out;
		*out = b;
	}
	return bytes;
}

/*
 * The critical section: the mutex, with a mark on this thread that it is
 * inside (or about to be, or just left), which the fork handlers read.
 */
static __thread volatile sig_atomic_t inside
	__attribute__((tls_model("initial-exec")));

static void enter(struct debug_state *d)
{
	inside = inside + 1;
	atomic_signal_fence(memory_order_seq_cst);
	pthread_mutex_lock(&d->lock);
}

static void leave(struct debug_state *d)
{
	pthread_mutex_unlock(&d->lock);
	atomic_signal_fence(memory_order_seq_cst);
	inside = inside - 1;
}

/* Give evicted blocks back to the inner, then their records to spare. */
static void release(struct debug_state *d, struct block *list)
{
	struct block *last = NULL;

	for (struct block *b = list; b; b = b->qnext) {
		alloy__wrap_inner_free(&d->w, b->inner, b->user - b->front,
				       b->total, b->align);
		last = b;
	}
	if (!last)
		return;
	enter(d);
	last->qnext = d->spare;
	d->spare = list;
	leave(d);
}

/* ---- the allocator ------------------------------------------------------ */

/*
 * The call stack into site, alloy's own leading frames (this allocator,
 * alloy_alloc, the malloc front) left out so that the FRAMES kept are
 * the program's: how many.
 */
static int capture_site(void **site)
{
	uintptr_t buf[FRAMES + 16];
	int skip, n = alloy__unwind_self(buf, FRAMES + 16, &skip);

	if (n < 0)
		return backtrace(site, FRAMES);
	if (skip == n)
		skip = 0; /* all alloy's own: keep them rather than nothing */
	n -= skip;
	if (n > FRAMES)
		n = FRAMES;
	memcpy(site, buf + skip, (size_t)n * sizeof(*site));
	return n;
}

static void *debug_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	struct debug_state *d = ctx;
	size_t rz = atomic_load(&d->redzone);
	size_t front = (rz + align - 1) & ~(align - 1);
	struct alloy_allocator *inner;
	void *site[FRAMES];
	int nsite;
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
	nsite = capture_site(site);
	base = alloy__wrap_inner_alloc(&d->w, &inner, total, align,
				       flags & ~ALLOY_ALLOC_ZERO);
	if (!base)
		return NULL;
	memset(base, ALLOY_DEBUG_FILL_REDZONE, front);
	memset(base + front + size, ALLOY_DEBUG_FILL_REDZONE, rz);
	/* Unwritten memory reads as junk, unless asked to be zero. */
	memset(base + front,
	       (flags & ALLOY_ALLOC_ZERO) || alloy__conf.zero_fill
		       ? 0
		       : ALLOY_DEBUG_FILL_NEW,
	       size);

	enter(d);
	b = record_locked(d);
	if (b) {
		b->qnext = NULL;
		b->user = base + front;
		b->size = size;
		b->align = align;
		b->front = front;
		b->total = total;
		b->inner = inner;
		b->freed = false;
		b->nalloc = nsite;
		b->nfree = 0;
		memcpy(b->alloc_site, site, sizeof(site));
		if (insert_locked(d, b)) {
			b->qnext = d->spare;
			d->spare = b;
			b = NULL;
		}
	}
	leave(d);
	if (!b) {
		alloy__wrap_inner_free(&d->w, inner, base, total, align);
		alloy__error(
			-ENOMEM, "alloy_alloc",
			"debug: no memory for the record of a %zu-byte block",
			size);
		return NULL;
	}
	return base + front;
}

static void debug_free(void *ctx, void *ptr, size_t size, size_t align)
{
	struct debug_state *d = ctx;
	struct block *evicted = NULL;
	void *site[FRAMES];
	int nsite = capture_site(site);
	struct block **slot;
	struct block *b;

	enter(d);
	slot = find_slot(d->table, ptr);
	if (!slot) {
		/* Not ours: touching it could crash or corrupt; leave it. */
		report(d, ALLOY_DEBUG_FOREIGN_FREE, NULL,
		       "%p (%zu bytes) was not allocated by \"debug\", or was freed long ago",
		       ptr, size);
		goto out;
	}
	b = *slot;
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
	leave(d);
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

	enter(d);
	bytes = evict_locked(d, 0, &evicted);
	leave(d);
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
 * fork(): another thread may hold the lock at that moment, and the
 * child, where that thread does not exist, would hang at its first
 * allocation through debug.  So the lock is taken before fork and
 * released on both sides.  Registered after core's handlers
 * (alloy__fork_setup runs first at init), so this prepare runs before
 * theirs.
 *
 * A fork from a signal handler may find this very thread inside the
 * critical section (or inside another fork, between this prepare and its
 * parent handler): taking the lock again would wait forever, and glibc
 * promises a single-threaded program that fork is async-signal-safe with
 * respect to malloc.  So a prepare on a thread marked inside does not
 * take the lock, and its parent handler does not release it: the
 * interrupted code still holds it and goes on when the handler returns.
 * The child must be able to allocate (or exec, or exit through handlers
 * that free), so it starts with a fresh lock, and it rebuilds what a
 * half-done step could leave inconsistent: the quarantine list is made
 * again from the records in the table marked freed.  The table itself
 * and the spare records are changed in an order that is consistent at
 * every instruction, so the child may use them as they are; at worst a
 * record or an old table is lost to it.  What the child may not do is
 * return from the handler into the interrupted step, which would go on
 * with what it read before the fork: as in glibc, only fork itself is
 * async-signal-safe, not the allocator.
 *
 * We chose this over blocking signals around the critical section (two
 * system calls on every allocation and free) and over a recursive lock
 * (the child would still inherit the half-done step, and the interrupted
 * step's own thread would be let in while it is torn).
 */
static __thread int fork_skips __attribute__((tls_model("initial-exec")));

static void fork_prepare(void)
{
	if (inside) {
		fork_skips++;
		return;
	}
	inside = 1;
	atomic_signal_fence(memory_order_seq_cst);
	pthread_mutex_lock(&ds.lock);
}

static void fork_parent(void)
{
	if (fork_skips) {
		fork_skips--;
		atomic_fetch_add(&ds.nested_forks, 1);
		return;
	}
	leave(&ds);
}

/* The child of a fork that found its thread inside: see above. */
static void rebuild_locked(struct debug_state *d)
{
	struct table *t = d->table;

	d->qhead = NULL;
	d->qtail = NULL;
	d->qcount = 0;
	for (size_t i = 0; t && i <= t->mask; i++) {
		struct block *b = t->slot[i];

		if (!b || b == TOMB || !b->freed)
			continue;
		b->qnext = NULL;
		if (d->qtail)
			d->qtail->qnext = b;
		else
			d->qhead = b;
		d->qtail = b;
		d->qcount++;
	}
}

static void fork_child(void)
{
	static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	if (!fork_skips) {
		leave(&ds);
		return;
	}
	fork_skips--;
	atomic_fetch_add(&ds.nested_forks, 1);
	memcpy(&ds.lock, &fresh, sizeof(fresh));
	rebuild_locked(&ds);
}

static void fork_setup(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}

int alloy__register_debug_allocator(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fork_setup);
	return alloy__wrap_register(&ds.w, &debug_ops);
}

/* ---- API ----------------------------------------------------------------- */

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

	enter(&ds);
	n = ds.last_len;
	if (buf && len) {
		size_t c = n < len - 1 ? n : len - 1;

		memcpy(buf, ds.last, c);
		buf[c] = '\0';
	}
	leave(&ds);
	return n;
}

int alloy_debug_check(void)
{
	struct table *t;
	int bad = 0;

	enter(&ds);
	t = ds.table;
	for (size_t i = 0; t && i <= t->mask; i++) {
		struct block *b = t->slot[i];

		if (b && b != TOMB)
			bad += b->freed ? check_poison(&ds, b)
					: check_redzones(&ds, b);
	}
	leave(&ds);
	return bad;
}

/*
 * For alloy's tests (exported, not API): the table's slots, the records
 * in it, the records made in all, and the forks that found their thread
 * inside the critical section.
 */
ALLOY_PRIVATE void alloy__debug_table_stats(size_t *slots, size_t *used,
					    size_t *records,
					    uint64_t *nested_forks);
void alloy__debug_table_stats(size_t *slots, size_t *used, size_t *records,
			      uint64_t *nested_forks)
{
	enter(&ds);
	*slots = ds.table ? ds.table->mask + 1 : 0;
	*used = ds.used;
	*records = ds.records;
	*nested_forks = atomic_load(&ds.nested_forks);
	leave(&ds);
}
