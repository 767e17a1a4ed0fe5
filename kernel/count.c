// SPDX-License-Identifier: MIT
/*
 * kernel/count.c - all of alloy's accounting: per-thread records with
 * counters summed on read, the allocation windows, grace periods, their
 * life across thread exit and fork, and the blocks counted on each
 * allocator (its live blocks and bytes, and the counting of the paths
 * that leave the inline fast side of kernel/count.h).
 *
 * Each thread that touches alloy gets a struct alloy__tls (on its first
 * allocation) from alloy's own arena, linked into a global list.  Writers
 * update only their own copy; readers sum every copy plus the totals of
 * threads that have exited.  The same record carries the window flag that
 * alloy__wait_windows() waits on and the sequence number of the sections
 * alloy__synchronize() waits on.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base.h"
#include "count.h"
#include "registry.h"
#include "fork.h"
#include "arena.h"
#include "unwind.h"
#include "front.h"

__thread struct alloy__tls *alloy__tls_self
	__attribute__((tls_model("initial-exec")));
/*
 * The record of a thread without one, for the fast paths: slow, never
 * written.  alloy__tls_fast starts on it (an address in the TLS image,
 * which the dynamic linker relocates before it copies the image into
 * the threads that exist when liballoy is loaded).
 */
const struct alloy__tls alloy__no_record = { .slow = ALLOY__SLOW_NO_RECORD };
#define NO_RECORD ((struct alloy__tls *)&alloy__no_record)
__thread struct alloy__tls *alloy__tls_fast
	__attribute__((tls_model("initial-exec"))) = NO_RECORD;
/* Set once this thread's record was given back at its exit. */
static __thread bool tls_gone __attribute__((tls_model("initial-exec")));
atomic_bool alloy__need_fence = true;
_Atomic unsigned alloy__slow_mask = ALLOY__SLOW_FENCE;

size_t (*alloy__tls_cache_retire)(void *cache, bool give_back);

static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloy__tls *tls_head;

static void slow_mask_set_locked(unsigned bits, bool on)
{
	unsigned m = on ? atomic_fetch_or(&alloy__slow_mask, bits) | bits
			: atomic_fetch_and(&alloy__slow_mask, ~bits) & ~bits;

	for (struct alloy__tls *t = tls_head; t; t = t->next)
		atomic_store_explicit(&t->slow, m, memory_order_relaxed);
}

void alloy__slow_mask_set(unsigned bits, bool on)
{
	pthread_mutex_lock(&tls_lock);
	slow_mask_set_locked(bits, on);
	pthread_mutex_unlock(&tls_lock);
}

/* need_fence and its bit in the slow mask change together. */
static void set_need_fence_locked(bool need)
{
	atomic_store(&alloy__need_fence, need);
	slow_mask_set_locked(ALLOY__SLOW_FENCE, need);
}
_Atomic int alloy__shared_windows;

static _Atomic int64_t retired[ALLOY__TCOUNT_SLOTS];
static int slots_used;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

/*
 * Records are never freed: an exiting thread's counters are folded into
 * the retired totals and its record goes on a free list for the next
 * thread.  That keeps every record valid for the waiting functions
 * without holding the lock while they wait.
 */
static struct alloy__tls *tls_free;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/*
 * Fold t into the retired totals and put it on the free list; locked.
 * exiting: t's own thread is exiting (not a gone thread in a fork child).
 */
static void retire_locked(struct alloy__tls *t, bool exiting)
{
	/* First: this counts what leaves the cache in t's counters. */
	if (t->cache) {
		alloy__tls_cache_retire(t->cache, exiting);
		/* A gone thread's cache is forgotten, never reused. */
		if (!exiting)
			t->cache = NULL;
	}
	for (int i = 0; i < slots_used; i++) {
		int64_t v = atomic_load_explicit(&t->count[i],
						 memory_order_relaxed);

		atomic_fetch_add_explicit(&retired[i], v, memory_order_relaxed);
		atomic_store_explicit(&t->count[i], 0, memory_order_relaxed);
	}
	if (t->prev)
		t->prev->next = t->next;
	else
		tls_head = t->next;
	if (t->next)
		t->next->prev = t->prev;
	atomic_store(&t->window, 0);
	/* An odd sequence would make alloy__synchronize wait forever. */
	atomic_store(&t->seq, (atomic_load(&t->seq) + 1) & ~(uint_fast64_t)1);
	t->depth = 0;
	t->prev = NULL;
	t->next = tls_free;
	tls_free = t;
}

static void tls_destroy(void *arg)
{
	struct alloy__tls *t = arg;

	pthread_mutex_lock(&tls_lock);
	retire_locked(t, true);
	pthread_mutex_unlock(&tls_lock);
	alloy__tls_self = NULL;
	alloy__tls_fast = NO_RECORD;
	alloy__front_fast = NO_RECORD;
	tls_gone = true;
}

static void tls_setup(void)
{
	pthread_key_create(&tls_key, tls_destroy);
	/*
	 * With expedited private membarrier the waiting side can force a
	 * full barrier on every running thread of the process, so the
	 * allocation side gets by with a compiler barrier.
	 */
	bool need = membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0;

	pthread_mutex_lock(&tls_lock);
	set_need_fence_locked(need);
	pthread_mutex_unlock(&tls_lock);
}

struct alloy__tls *alloy__tls_create(void)
{
	struct alloy__tls *t;

	/* After its exit destructor: the shared totals, no new record. */
	if (tls_gone)
		return NULL;
	pthread_once(&tls_once, tls_setup);
	pthread_mutex_lock(&tls_lock);
	t = tls_free;
	if (t)
		tls_free = t->next;
	else
		t = alloy__arena_alloc(sizeof(*t));
	if (!t) {
		pthread_mutex_unlock(&tls_lock);
		return NULL; /* callers fall back to the shared totals */
	}
	t->depth = 0;
	t->owner = NULL;
	atomic_store(&t->slow, atomic_load(&alloy__slow_mask));
	t->prev = NULL;
	t->next = tls_head;
	if (tls_head)
		tls_head->prev = t;
	tls_head = t;
	pthread_mutex_unlock(&tls_lock);
	/*
	 * Before pthread_setspecific, which may allocate (keys past the
	 * first 32): an allocation that comes back into alloy from there
	 * finds this record instead of making another.
	 */
	alloy__tls_self = t;
	alloy__tls_fast = t;
	pthread_setspecific(tls_key, t);
	return t;
}

void alloy__tcount_add_shared(int slot, int64_t delta)
{
	atomic_fetch_add_explicit(&retired[slot], delta, memory_order_relaxed);
}

int alloy__tcount_reserve(int n)
{
	int base;

	pthread_mutex_lock(&tls_lock);
	if (n <= 0 || slots_used + n > ALLOY__TCOUNT_SLOTS) {
		pthread_mutex_unlock(&tls_lock);
		return -ENOSPC;
	}
	base = slots_used;
	slots_used += n;
	pthread_mutex_unlock(&tls_lock);
	return base;
}

int64_t alloy__tcount_sum(int slot)
{
	int64_t sum;

	pthread_mutex_lock(&tls_lock);
	/* Acquire: pairs with alloy__count_add's release (count.h). */
	sum = atomic_load_explicit(&retired[slot], memory_order_acquire);
	for (struct alloy__tls *t = tls_head; t; t = t->next)
		sum += atomic_load_explicit(&t->count[slot],
					    memory_order_acquire);
	pthread_mutex_unlock(&tls_lock);
	return sum;
}

void alloy__tcount_zero(int slot)
{
	pthread_mutex_lock(&tls_lock);
	atomic_store_explicit(&retired[slot], 0, memory_order_relaxed);
	for (struct alloy__tls *t = tls_head; t; t = t->next)
		atomic_store_explicit(&t->count[slot], 0, memory_order_relaxed);
	pthread_mutex_unlock(&tls_lock);
}

/* A full barrier on every running thread, or on this one where we must. */
static void barrier_everywhere(void)
{
	pthread_once(&tls_once, tls_setup);
	if (atomic_load(&alloy__need_fence) ||
	    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		atomic_thread_fence(memory_order_seq_cst);
}

/*
 * Wait until each record, looked at once, is seen in the state `done`
 * says is quiet (or changed since).  Records are never freed, so waiting
 * without the lock is safe; at most MAX_WAIT are waited on per pass.
 */
static void wait_records(bool (*busy)(struct alloy__tls *t, uint_fast64_t *v),
			 bool (*still)(struct alloy__tls *t, uint_fast64_t v))
{
	enum { MAX_WAIT = 256 };
	struct alloy__tls *wait[MAX_WAIT];
	uint_fast64_t seen[MAX_WAIT];
	int n;
	bool more;

	barrier_everywhere();
	do {
		n = 0;
		more = false;
		pthread_mutex_lock(&tls_lock);
		for (struct alloy__tls *t = tls_head; t; t = t->next) {
			uint_fast64_t v;

			if (!busy(t, &v))
				continue;
			if (n == MAX_WAIT) {
				more = true;
				break;
			}
			wait[n] = t;
			seen[n++] = v;
		}
		pthread_mutex_unlock(&tls_lock);
		for (int i = 0; i < n; i++)
			while (still(wait[i], seen[i]))
				sched_yield();
	} while (more);
	while (atomic_load_explicit(&alloy__shared_windows,
				    memory_order_acquire))
		sched_yield();
}

static bool in_section(struct alloy__tls *t, uint_fast64_t *v)
{
	*v = atomic_load_explicit(&t->seq, memory_order_acquire);
	return *v & 1;
}

static bool same_section(struct alloy__tls *t, uint_fast64_t v)
{
	return atomic_load_explicit(&t->seq, memory_order_acquire) == v;
}

void alloy__synchronize(void)
{
	wait_records(in_section, same_section);
}

/*
 * A window lasts a few instructions and never nests, so seeing it closed
 * once is enough: a thread that opens it again reads the default anew.
 */
static bool in_window(struct alloy__tls *t, uint_fast64_t *v)
{
	*v = 1;
	return atomic_load_explicit(&t->window, memory_order_acquire);
}

static bool window_still_open(struct alloy__tls *t, uint_fast64_t v)
{
	(void)v;
	return atomic_load_explicit(&t->window, memory_order_acquire);
}

void alloy__wait_windows(void)
{
	wait_records(in_window, window_still_open);
}

void alloy__tls_fork_prepare(void)
{
	pthread_mutex_lock(&tls_lock);
}

void alloy__tls_fork_parent(void)
{
	pthread_mutex_unlock(&tls_lock);
}

/*
 * In the child only the forking thread exists.  The others' records may
 * hold an open window or an odd section that would never close: fold
 * them into the totals (their counts describe blocks the child also has)
 * and give them back.
 */
void alloy__tls_fork_child(void)
{
	struct alloy__tls *self = alloy__tls_self, *t, *next;

	for (t = tls_head; t; t = next) {
		next = t->next;
		if (t != self)
			retire_locked(t, false);
	}
	atomic_store(&alloy__shared_windows, 0);
	/*
	 * The expedited membarrier registration belongs to the address
	 * space: the child has a new one and must register again, or have
	 * its allocation side fence for itself.
	 */
	set_need_fence_locked(
		membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0);
	pthread_mutex_unlock(&tls_lock);
}

/* ---- blocks counted on their allocators ----------------------------- */

static void warn_negative(const struct alloy_allocator *a, const char *what,
			  int64_t v);

int64_t alloy__live_blocks(const struct alloy_allocator *a)
{
	/* Frees first: a racing alloc+free can then only make it larger. */
	int64_t frees = alloy__tcount_sum(a->counters + ALLOY__C_FREES);
	int64_t live = alloy__tcount_sum(a->counters + ALLOY__C_ALLOCS) - frees;

	if (unlikely(live < 0))
		warn_negative(a, "blocks", live);
	return live;
}

static int64_t live_bytes(const struct alloy_allocator *a)
{
	int64_t bytes = alloy__tcount_sum(a->counters + ALLOY__C_BYTES);

	if (unlikely(bytes < 0))
		warn_negative(a, "bytes", bytes);
	return bytes;
}

/*
 * More frees than allocations can only come from misuse that alloy does
 * not check on every free: a block freed twice through two copies of its
 * DataPtr, or freed with a smaller size than it was made with.  Counts
 * are per thread, so this is seen when they are summed, not at the free;
 * say so once per allocator and name the tool that finds the culprit.
 */
static void warn_negative(const struct alloy_allocator *a, const char *what,
			  int64_t v)
{
	static _Atomic uint64_t warned; /* one bit per table slot */
	uint64_t bit = 1ull << (a->index % 64);

	if (atomic_fetch_or(&warned, bit) & bit)
		return;
	fprintf(stderr,
		"alloy: allocator \"%s\" has %lld live %s: a block was freed twice (two copies of one DataPtr) or with a wrong size; ALLOY_CONF=cpu:debug reports where\n",
		a->name, (long long)v, what);
}

struct alloy_allocator *alloy__pick_default_any(int device_type, size_t size)
{
	struct alloy__tls *t = alloy__tls_get();
	struct alloy_allocator *a;

	if (likely(t))
		return alloy__default_of(
			alloy__pick_default(t, device_type, size, false));
	/* No record: the shared window and the shared totals. */
	alloy__error_mark = 0; /* as alloy__pick_default clears a record's */
	atomic_fetch_add(&alloy__shared_windows, 1);
	a = alloy__default_of(atomic_load(&alloy__defaults[device_type]));
	if (a) {
		alloy__tcount_add_shared(a->counters + ALLOY__C_ALLOCS, 1);
		alloy__tcount_add_shared(a->counters + ALLOY__C_BYTES,
					 (int64_t)size);
	}
	atomic_fetch_sub(&alloy__shared_windows, 1);
	return a;
}

void alloy__uncount_alloc(struct alloy_allocator *a, size_t size)
{
	struct alloy__tls *t = alloy__tls_get();

	alloy__tcount_add(t, a->counters + ALLOY__C_ALLOCS, -1);
	alloy__tcount_add(t, a->counters + ALLOY__C_BYTES, -(int64_t)size);
}

void alloy__count_free_slow(struct alloy_allocator *a, size_t size)
{
	struct alloy__tls *t = alloy__tls_get();

	alloy__tcount_add(t, a->counters + ALLOY__C_FREES, 1);
	alloy__tcount_add(t, a->counters + ALLOY__C_BYTES, -(int64_t)size);
}

long long alloy_allocator_live_blocks(const struct alloy_allocator *a)
{
	return a ? alloy__live_blocks(a) : 0;
}

long long alloy_allocator_live_bytes(const struct alloy_allocator *a)
{
	return a ? live_bytes(a) : 0;
}

int alloy_allocator_stats(struct alloy_allocator *a,
			  struct alloy_allocator_stats *st)
{
	struct alloy_allocator_stats mine = { 0 };
	uint32_t size;

	ALLOY_ENFORCE(a, -EINVAL, "allocator is NULL");
	ALLOY_ENFORCE(st, -EINVAL, "stats is NULL");
	ALLOY_ENFORCE(st->size >= 2 * sizeof(uint32_t), -EINVAL,
		      "stats header size %u is too small", st->size);
	size = st->size < sizeof(mine) ? st->size : (uint32_t)sizeof(mine);
	/* What the registry itself knows; the allocator may refine it. */
	mine.size = sizeof(mine);
	mine.version = ALLOY_STATS_VERSION;
	mine.allocated = (uint64_t)live_bytes(a);
	mine.reserved = mine.allocated;
	mine.num_allocs =
		(uint64_t)alloy__tcount_sum(a->counters + ALLOY__C_ALLOCS);
	mine.num_frees =
		(uint64_t)alloy__tcount_sum(a->counters + ALLOY__C_FREES);
	if (a->ops.stats) {
		int rc = a->ops.stats(a->ctx, &mine);

		if (rc)
			return rc;
	}
	mine.size = size;
	memcpy(st, &mine, size);
	return 0;
}

int alloy__unwind_self(uintptr_t *out, int max, int *leading_ours)
{
	struct alloy__tls *t = alloy__tls_self;

	if (!t)
		return -1;
	if (unlikely(!t->walk))
		t->walk = alloy__arena_alloc(sizeof(*t->walk));
	if (!t->walk)
		return -1;
	return alloy__unwind(t->walk, out, max, leading_ours);
}
