// SPDX-License-Identifier: MIT
/*
 * kernel/ptrset.c - the set of addresses of kernel/ptrset.h.
 *
 * fork() may come from a signal handler on a thread that is inside the
 * set's lock (glibc promises a single-threaded program that fork is
 * async-signal-safe with respect to malloc, and the front's malloc comes
 * here).  As the debug wrapper does (allocators/debug.c says it at
 * length): a thread marks itself inside before it takes the lock, a fork
 * prepare on a marked thread does not take it, and that fork's child
 * starts with a fresh lock.  The child may then use the set as it is,
 * because it is consistent at every instruction: a key is one store, and
 * a grown table is filled before the one store that publishes it.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "hash.h"
#include "ptrset.h"

#define EMPTY	  0
#define REMOVED	  1 /* no block lives at address 1 */
#define MIN_SLOTS 1024

struct table {
	size_t mask; /* slots - 1; slots is a power of two */
	size_t used; /* keys and markers */
	uintptr_t slot[];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct table *table;
static _Atomic uint64_t count;
static __thread volatile sig_atomic_t inside
	__attribute__((tls_model("initial-exec")));
static __thread int fork_skips __attribute__((tls_model("initial-exec")));

static void enter(void)
{
	inside = inside + 1;
	atomic_signal_fence(memory_order_seq_cst);
	pthread_mutex_lock(&lock);
}

static void leave(void)
{
	pthread_mutex_unlock(&lock);
	atomic_signal_fence(memory_order_seq_cst);
	inside = inside - 1;
}

static size_t table_bytes(size_t slots)
{
	return sizeof(struct table) + slots * sizeof(uintptr_t);
}

/* The slot of key in t, or the first empty one after its run. */
static size_t find(const struct table *t, uintptr_t key)
{
	size_t i = (size_t)alloy__mix64(key) & t->mask;

	while (t->slot[i] != EMPTY && t->slot[i] != key)
		i = (i + 1) & t->mask;
	return i;
}

/* A table with room for twice the keys, markers dropped, then published. */
static int grow(void)
{
	struct table *old = table, *t;
	size_t slots = old ? (old->mask + 1) * 2 : MIN_SLOTS;
	long r;

	while (slots < 4 * atomic_load(&count))
		slots *= 2;
	r = syscall(SYS_mmap, NULL, table_bytes(slots), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r == -1)
		return -ENOMEM;
	t = (struct table *)r;
	t->mask = slots - 1;
	/*
	 * Every key moves, a key twice too: an address freed and made
	 * again may be added by its new owner before its old owner's
	 * remove, and each remove takes one.
	 */
	for (size_t i = 0; old && i <= old->mask; i++) {
		uintptr_t key = old->slot[i];
		size_t j;

		if (key <= REMOVED)
			continue;
		j = (size_t)alloy__mix64(key) & t->mask;
		while (t->slot[j] != EMPTY)
			j = (j + 1) & t->mask;
		t->slot[j] = key;
		t->used++;
	}
	atomic_signal_fence(memory_order_seq_cst);
	table = t;
	if (old)
		syscall(SYS_munmap, old, table_bytes(old->mask + 1));
	return 0;
}

int alloy__ptrset_add(const void *p)
{
	uintptr_t key = (uintptr_t)p;
	size_t i, reuse = SIZE_MAX;
	int rc = 0;

	enter();
	if (!table || (table->used + 1) * 2 > table->mask + 1)
		rc = grow();
	if (!rc) {
		i = (size_t)alloy__mix64(key) & table->mask;
		while (table->slot[i] != EMPTY) {
			if (table->slot[i] == REMOVED && reuse == SIZE_MAX)
				reuse = i;
			i = (i + 1) & table->mask;
		}
		if (reuse == SIZE_MAX)
			table->used++;
		else
			i = reuse;
		table->slot[i] = key;
		atomic_fetch_add(&count, 1);
	}
	leave();
	return rc;
}

bool alloy__ptrset_remove(const void *p)
{
	uintptr_t key = (uintptr_t)p;
	bool found = false;

	if (key <= REMOVED)
		return false;
	enter();
	if (table) {
		size_t i = find(table, key);

		if (table->slot[i] == key) {
			table->slot[i] = REMOVED;
			atomic_fetch_sub(&count, 1);
			found = true;
		}
	}
	leave();
	return found;
}

bool alloy__ptrset_has(const void *p)
{
	uintptr_t key = (uintptr_t)p;
	bool found = false;

	if (key <= REMOVED)
		return false;
	enter();
	if (table)
		found = table->slot[find(table, key)] == key;
	leave();
	return found;
}

uint64_t alloy__ptrset_count(void)
{
	return atomic_load_explicit(&count, memory_order_relaxed);
}

void alloy__ptrset_fork_prepare(void)
{
	if (inside) {
		fork_skips++;
		return;
	}
	enter();
}

void alloy__ptrset_fork_parent(void)
{
	if (fork_skips) {
		fork_skips--;
		return;
	}
	leave();
}

void alloy__ptrset_fork_child(void)
{
	static const pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;

	if (!fork_skips) {
		leave();
		return;
	}
	fork_skips--;
	memcpy(&lock, &fresh, sizeof(fresh));
}
