// SPDX-License-Identifier: MIT
/*
 * core/tcount.c - counters sharded per thread, and grace periods.
 *
 * Each thread that touches alloy gets a struct alloy__tls (lazily, on its
 * first allocation) linked into a global list.  Writers update only their
 * own copy with plain stores; readers sum every copy plus the totals of
 * threads that have exited.  The same per-thread record carries the
 * sequence number that alloy__synchronize() waits on.
 */
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

__thread struct alloy__tls *alloy__tls_self
	__attribute__((tls_model("initial-exec")));
atomic_bool alloy__need_fence = true;

static pthread_mutex_t tls_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloy__tls *tls_head;
static _Atomic int64_t retired[ALLOY__TCOUNT_SLOTS];
static int slots_used;
static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

/*
 * Records are never freed: an exiting thread's counters are folded into the
 * retired totals and its record goes on a free list for the next thread.
 * That keeps every record valid for alloy__synchronize() without holding
 * the lock while it waits.
 */
static struct alloy__tls *tls_free;

static void tls_destroy(void *arg)
{
	struct alloy__tls *t = arg;

	pthread_mutex_lock(&tls_lock);
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
	t->prev = NULL;
	t->next = tls_free;
	tls_free = t;
	pthread_mutex_unlock(&tls_lock);
	alloy__tls_self = NULL;
}

static void tls_setup(void)
{
	pthread_key_create(&tls_key, tls_destroy);
	/*
	 * With expedited private membarrier the grace-period side can force
	 * a full barrier on every running thread of the process, so the
	 * allocation side gets by with a compiler barrier.
	 */
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) == 0)
		atomic_store(&alloy__need_fence, false);
}

struct alloy__tls *alloy__tls_create(void)
{
	struct alloy__tls *t;

	pthread_once(&tls_once, tls_setup);
	pthread_mutex_lock(&tls_lock);
	t = tls_free;
	if (t)
		tls_free = t->next;
	else
		t = calloc(1, sizeof(*t));
	if (!t) {
		pthread_mutex_unlock(&tls_lock);
		return NULL; /* callers fall back to the shared totals */
	}
	t->depth = 0;
	t->prev = NULL;
	t->next = tls_head;
	if (tls_head)
		tls_head->prev = t;
	tls_head = t;
	pthread_mutex_unlock(&tls_lock);
	pthread_setspecific(tls_key, t);
	alloy__tls_self = t;
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
	sum = atomic_load_explicit(&retired[slot], memory_order_relaxed);
	for (struct alloy__tls *t = tls_head; t; t = t->next)
		sum += atomic_load_explicit(&t->count[slot],
					    memory_order_relaxed);
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

void alloy__synchronize(void)
{
	enum { MAX_WAIT = 256 };
	struct alloy__tls *busy[MAX_WAIT];
	uint_fast64_t seen[MAX_WAIT];
	int n;
	bool more;

	pthread_once(&tls_once, tls_setup);
	if (atomic_load(&alloy__need_fence) ||
	    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		atomic_thread_fence(memory_order_seq_cst);

	do {
		n = 0;
		more = false;
		pthread_mutex_lock(&tls_lock);
		for (struct alloy__tls *t = tls_head; t; t = t->next) {
			uint_fast64_t s = atomic_load_explicit(
				&t->seq, memory_order_acquire);

			if (!(s & 1))
				continue;
			if (n == MAX_WAIT) {
				more = true;
				break;
			}
			busy[n] = t;
			seen[n++] = s;
		}
		pthread_mutex_unlock(&tls_lock);
		/* Records are never freed, so waiting unlocked is safe. */
		for (int i = 0; i < n; i++)
			while (atomic_load_explicit(&busy[i]->seq,
						    memory_order_acquire) ==
			       seen[i])
				sched_yield();
	} while (more);
}
