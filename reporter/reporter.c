// SPDX-License-Identifier: MIT
/*
 * reporter/reporter.c - recording every allocation: the hooks core calls,
 * the counters per (allocator, device), enable/disable, snapshots.
 *
 * The hot path takes no global lock.  A block goes into the sharded
 * pointer table (one shard's spinlock), its counts and total go to this
 * thread's tcount slots, and its bytes to this thread's share of the
 * entry's and the process's current bytes (struct rep_counter), which
 * reach the shared atomics only when they could make a new peak.  Peaks
 * are exact with one thread and within REP_SLACK per other thread with
 * several; docs/REPORTER.md has the trade-off and the measured cost.
 *
 * Only the trace and the event log serialise, on their own stream lock,
 * and only when they are configured (events.c).  With backtrace:1 a block
 * also records its call stack (stacks.c); it always records the owner
 * label in force on its thread (owners.c); both are small ids.  Nothing
 * here calls the process's malloc: the tables grow in alloy's arena.
 */
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "kernel/fork.h"
#include "kernel/hooks.h"
#include "kernel/registry.h"
#include "ptrtable.h"

struct rep_entry alloy__rep_entries[ALLOY_REPORTER_MAX_ENTRIES];

static struct {
	pthread_once_t once;
	int init_rc;
	int slots;	      /* first of MAX_ENTRIES * REP_C_COUNT */
	pthread_mutex_t lock; /* entry creation, enable/disable */
	atomic_bool ready;    /* init_once succeeded */
	atomic_bool enabled;
	atomic_bool drained; /* off, and no old-hook allocation in flight */
	bool started;	     /* hooks installed at least once */
	atomic_bool backtrace;
	_Atomic uint64_t unknown_frees, double_frees, untracked_frees;
	struct rep_counter all; /* over all entries */
} R = {
	.once = PTHREAD_ONCE_INIT,
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static void counter_init(struct rep_counter *c, int slot);

/*
 * fork(): hold every reporter lock across it, so the child does not
 * inherit one held by a thread that does not exist there.  The child
 * keeps counting (its blocks are copies); its files are its own only
 * where their paths have %p (session.c).  Core runs these inside its
 * plugin lock (kernel/fork.c says why).
 */
static void fork_prepare(void)
{
	alloy__rep_session_lock(true);
	alloy__rep_tables_lock();
	pthread_mutex_lock(&R.lock);
	/* Shards before the trace: a trace starting holds both so. */
	alloy__ptrtable_lock_all();
	pthread_mutex_lock(&alloy__rep_trace.lock);
	pthread_mutex_lock(&alloy__rep_log.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&alloy__rep_log.lock);
	pthread_mutex_unlock(&alloy__rep_trace.lock);
	alloy__ptrtable_unlock_all();
	pthread_mutex_unlock(&R.lock);
	alloy__rep_tables_unlock();
	alloy__rep_session_lock(false);
}

static void fork_child(void)
{
	fork_parent();
	alloy__rep_session_forked();
}

static const struct alloy__fork_handlers fork_handlers = {
	.prepare = fork_prepare,
	.parent = fork_parent,
	.child = fork_child,
};

static void init_once(void)
{
	alloy__fork_nest(&fork_handlers);
	R.slots = alloy__tcount_reserve(
		ALLOY_REPORTER_MAX_ENTRIES * REP_C_COUNT + 1);
	R.init_rc = R.slots < 0 ? R.slots : 0;
	if (R.init_rc)
		return;
	counter_init(&R.all,
		     R.slots + ALLOY_REPORTER_MAX_ENTRIES * REP_C_COUNT);
	atomic_store(&R.ready, true);
}

static int reporter_init(void)
{
	alloy__ensure_init();
	pthread_once(&R.once, init_once);
	if (R.init_rc)
		return alloy__error(R.init_rc, "alloy_reporter_enable",
				    "no counter slots left for the reporter");
	return 0;
}

/* ---- entries ------------------------------------------------------- */

/*
 * An allocator is known by its name (a hash of it, computed once at
 * registration), so one unregistered and registered again keeps adding to
 * the same row and the table fills only with distinct names.  Two names
 * with the same hash bits are told apart by comparing the names.  The top
 * bit keeps keys non-zero.
 */
static uint64_t entry_key(uint64_t name_hash, struct alloy_device d)
{
	return (1ULL << 63) | ((name_hash & ((1ULL << 39) - 1)) << 24) |
	       ((uint64_t)(uint8_t)d.type << 16) | (uint16_t)d.index;
}

static bool entry_is(const struct rep_entry *e, uint64_t have, uint64_t key,
		     const char *name)
{
	return have == key && !strcmp(e->name, name);
}

static struct rep_entry *entry_make(uint64_t key, const char *name,
				    struct alloy_device d)
{
	struct rep_entry *e = NULL;
	size_t n = ALLOY_REPORTER_MAX_ENTRIES;

	pthread_mutex_lock(&R.lock);
	for (size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL >> 58), k = 0;
	     k < n; k++, i = (i + 1) % n) {
		uint64_t have = atomic_load(&alloy__rep_entries[i].key);

		if (!have ||
		    entry_is(&alloy__rep_entries[i], have, key, name)) {
			e = &alloy__rep_entries[i];
			break;
		}
	}
	if (e && !atomic_load(&e->key)) {
		int base =
			R.slots + (int)(e - alloy__rep_entries) * REP_C_COUNT;

		snprintf(e->name, sizeof(e->name), "%s", name);
		e->device = d;
		e->slots = base;
		for (int c = 0; c < REP_C_COUNT; c++)
			alloy__tcount_zero(base + c);
		counter_init(&e->bytes, base + REP_C_UNPUB);
		atomic_store_explicit(&e->key, key, memory_order_release);
		atomic_store_explicit(&e->ready, true, memory_order_release);
	}
	pthread_mutex_unlock(&R.lock);
	return e;
}

/* The entry of (name, device), made on first use; NULL when full. */
static struct rep_entry *entry_find(uint64_t name_hash, const char *name,
				    struct alloy_device d)
{
	uint64_t key = entry_key(name_hash, d);
	size_t n = ALLOY_REPORTER_MAX_ENTRIES;

	/* Same probe order as entry_make: the table only ever fills up. */
	for (size_t i = (size_t)(key * 0x9e3779b97f4a7c15ULL >> 58), k = 0;
	     k < n; k++, i = (i + 1) % n) {
		struct rep_entry *e = &alloy__rep_entries[i];
		uint64_t have =
			atomic_load_explicit(&e->key, memory_order_acquire);

		if (!have)
			break;
		if (entry_is(e, have, key, name))
			return e;
	}
	return entry_make(key, name, d);
}

/*
 * Each thread remembers the entry it used last: a program allocating in
 * a loop finds it with two compares.  Entries are never removed, so a
 * remembered one stays valid.
 */
static __thread struct {
	uint64_t key;
	const char *name;
	struct rep_entry *e;
} last_entry __attribute__((tls_model("initial-exec")));

static inline struct rep_entry *entry_get(uint64_t name_hash, const char *name,
					  struct alloy_device d)
{
	uint64_t key = entry_key(name_hash, d);

	/* The name's address tells apart two names of the same hash bits. */
	if (likely(last_entry.key == key && last_entry.name == name))
		return last_entry.e;
	last_entry.e = entry_find(name_hash, name, d);
	last_entry.key = last_entry.e ? key : 0;
	last_entry.name = name;
	return last_entry.e;
}

static void raise_peak(_Atomic int64_t *peak, int64_t v)
{
	int64_t p = atomic_load_explicit(peak, memory_order_relaxed);

	while (v > p &&
	       !atomic_compare_exchange_weak_explicit(
		       peak, &p, v, memory_order_relaxed, memory_order_relaxed))
		;
}

/*
 * Add bytes to a counter.  Usually a plain store to this thread's slot;
 * the shared line is written only when this thread's share could raise
 * the peak or has drifted past REP_SLACK.  With one thread the peak is
 * therefore exact; with several it can miss at most the other threads'
 * unpublished shares (each under REP_SLACK).
 */
static inline __attribute__((always_inline)) void
counter_add(struct rep_counter *c, struct alloy__tls *t, int64_t bytes)
{
	int64_t u, v;

	if (unlikely(!t)) {
		/* A thread without a record: straight to the shared value. */
		v = atomic_fetch_add(&c->pub, bytes) + bytes;
		if (bytes > 0)
			raise_peak(&c->peak, v);
		return;
	}
	u = atomic_load_explicit(&t->count[c->slot], memory_order_relaxed) +
	    bytes;
	if (bytes > 0 &&
	    (u > REP_SLACK ||
	     atomic_load_explicit(&c->pub, memory_order_relaxed) + u >
		     atomic_load_explicit(&c->peak, memory_order_relaxed))) {
		v = atomic_fetch_add_explicit(&c->pub, u,
					      memory_order_relaxed) +
		    u;
		atomic_store_explicit(&t->count[c->slot], 0,
				      memory_order_relaxed);
		raise_peak(&c->peak, v);
		return;
	}
	if (bytes < 0 && u < -REP_SLACK) {
		atomic_fetch_add_explicit(&c->pub, u, memory_order_relaxed);
		u = 0;
	}
	atomic_store_explicit(&t->count[c->slot], u, memory_order_relaxed);
}

/*
 * Exact when no thread is changing it; never negative (internal.h says
 * why it could be).  *settled false: an estimate, not to raise a peak.
 */
static int64_t counter_read(const struct rep_counter *c, bool *settled)
{
	return alloy__rep_current_read(&c->pub, alloy__tcount_sum, c->slot,
				       settled);
}

static int64_t counter_current(const struct rep_counter *c)
{
	bool settled;

	return counter_read(c, &settled);
}

/*
 * current and peak as reported: a settled current above the peak is a
 * peak missed by other threads' unpublished bytes (see counter_add) and
 * raises it; an unsettled one is kept under the peak instead.
 */
static void counter_report(const struct rep_counter *c, uint64_t *current,
			   uint64_t *peak)
{
	bool settled;
	int64_t v = counter_read(c, &settled);
	int64_t p = atomic_load(&c->peak);

	if (v > p) {
		if (settled)
			p = v;
		else
			v = p;
	}
	*current = (uint64_t)v;
	*peak = (uint64_t)p;
}

static void counter_init(struct rep_counter *c, int slot)
{
	c->slot = slot;
	alloy__tcount_zero(slot);
	atomic_store(&c->pub, 0);
	atomic_store(&c->peak, 0);
}

static void counter_reset_peak(struct rep_counter *c)
{
	atomic_store(&c->peak, counter_current(c));
}

void alloy__rep_entry_counts(const struct rep_entry *e,
			     struct alloy_reporter_counts *c)
{
	int64_t frees = alloy__tcount_sum(e->slots + REP_C_FREES);
	int64_t allocs = alloy__tcount_sum(e->slots + REP_C_ALLOCS);

	counter_report(&e->bytes, &c->current_bytes, &c->peak_bytes);
	c->total_bytes = (uint64_t)alloy__tcount_sum(e->slots + REP_C_TOTAL);
	c->allocs = (uint64_t)allocs;
	c->frees = (uint64_t)frees;
	c->live_blocks = allocs > frees ? (uint64_t)(allocs - frees) : 0;
}

/* Count one allocation (bytes > 0) or free (bytes < 0). */
static inline __attribute__((always_inline)) void account(struct rep_entry *e,
							  int64_t bytes)
{
	struct alloy__tls *t = alloy__tls_self;

	if (bytes >= 0) {
		alloy__tcount_add(t, e->slots + REP_C_ALLOCS, 1);
		alloy__tcount_add(t, e->slots + REP_C_TOTAL, bytes);
	} else {
		alloy__tcount_add(t, e->slots + REP_C_FREES, 1);
	}
	counter_add(&e->bytes, t, bytes);
	counter_add(&R.all, t, bytes);
}

static inline bool logging(void)
{
	return atomic_load_explicit(&alloy__rep_logging, memory_order_relaxed);
}

/*
 * The running total that the log writes beside each event, summed only
 * there: the trace has no use for it, and summing the counter's slots
 * costs.
 */
int64_t alloy__rep_total(void)
{
	return counter_current(&R.all);
}

/* tracing || logging */
static inline bool emitting(void)
{
	return atomic_load_explicit(&alloy__rep_tracing,
				    memory_order_relaxed) ||
	       atomic_load_explicit(&alloy__rep_logging, memory_order_relaxed);
}

/*
 * A forked child whose files are its own opens them at its first event,
 * before that event touches the table: its trace starts with the blocks
 * it inherited, and this one comes after.
 */
static inline void child_files(void)
{
	if (unlikely(emitting()) &&
	    unlikely(alloy__rep_session_reopen_pending()))
		alloy__rep_session_reopen();
}

/* ---- recording ----------------------------------------------------- */

static inline __attribute__((always_inline)) void
record_alloc(struct rep_entry *e, const void *ptr, size_t size, size_t align)
{
	struct rep_block b = {
		.ptr = (uintptr_t)ptr,
		.size = size,
		.entry = (uint8_t)(e - alloy__rep_entries),
		.align_shift = align && align <= ((size_t)1 << 31)
				       ? (uint8_t)__builtin_ctzll(align)
				       : REP_ALIGN_BIG,
		.mark = atomic_load_explicit(&alloy__rep_mark,
					     memory_order_relaxed),
	};
	uint32_t traced;

	child_files();
	if (atomic_load_explicit(&R.backtrace, memory_order_relaxed))
		b.stack = alloy__rep_stack_capture();
	b.owner = alloy__rep_owner_id(alloy__tls_self);
	if (alloy__ptrtable_insert(&b, &traced))
		return; /* not recorded at all: nor will its free be */
	account(e, (int64_t)size);
	if (unlikely(traced || logging()))
		alloy__rep_emit('a', b.ptr, &b, e, traced);
}

/* Account the free of ptr; the table's record says what it was. */
static inline __attribute__((always_inline)) int record_free(const void *ptr,
							     bool by_hand)
{
	struct rep_block b;
	struct rep_entry *e;
	uint32_t traced;
	int rc;

	child_files();
	rc = alloy__ptrtable_remove((uintptr_t)ptr, &b, &traced);
	if (rc) {
		/*
		 * Off (draining), a free the table does not know is most
		 * likely of a block made while off, or a pointer noted
		 * before it was switched on: not counted either way.
		 */
		if (!atomic_load_explicit(&R.enabled, memory_order_relaxed))
			return 0;
		if (!by_hand) {
			/*
			 * Made while recording was off: not ours to count,
			 * but shown when freed while on.
			 */
			atomic_fetch_add(&R.untracked_frees, 1);
			return 0;
		}
		atomic_fetch_add(rc == -EALREADY ? &R.double_frees
						 : &R.unknown_frees,
				 1);
		if (traced || logging())
			alloy__rep_emit(rc == -EALREADY ? 'd' : 'u',
					(uintptr_t)ptr, NULL, NULL, traced);
		return rc;
	}
	e = &alloy__rep_entries[b.entry];
	account(e, -(int64_t)b.size);
	if (unlikely(traced || logging()))
		alloy__rep_emit('f', b.ptr, &b, e, traced);
	return 0;
}

/* Blocks of zero bytes never come here: kernel/plain.c keeps them back. */
static void hook_alloc(struct alloy_allocator *a,
		       const struct alloy_data_ptr *dp)
{
	struct rep_entry *e = entry_get(a->name_hash, a->name, dp->device);

	if (likely(e))
		record_alloc(e, dp->ptr, dp->size, dp->align);
}

/*
 * Once recording is off and the last recorded block is gone, the hooks
 * can go too, so that a reporter switched off costs nothing at all.  The
 * sum of the counters is a cheap first test; the table is the exact one
 * (while draining nothing is added to it, so one pass over the shards
 * that finds them all empty proves it).
 *
 * The table is looked at again under R.lock: between a first look and
 * the lock another thread may enable, record a block and disable again
 * (drained once more), and unhooking then would leave that block with no
 * hook to account its free.  Under R.lock, drained means no recording
 * hook is installed or still running, so the table cannot fill up while
 * it is read.
 */
static void maybe_unhook(void)
{
	if (!atomic_load(&R.drained) || counter_current(&R.all) ||
	    !alloy__ptrtable_empty())
		return;
	pthread_mutex_lock(&R.lock);
	if (atomic_load(&R.drained) && alloy__ptrtable_empty())
		alloy__set_hooks(NULL);
	pthread_mutex_unlock(&R.lock);
}

static void hook_free(struct alloy_allocator *a,
		      const struct alloy_data_ptr *dp)
{
	(void)a;
	record_free(dp->ptr, false);
}

/*
 * While draining, every 64th event of a thread tries to unhook: the test
 * walks every thread and shard, too dear for each free, and allocations
 * keep trying after the last recorded block is gone.
 */
static void drain_tick(void)
{
	static __thread unsigned n __attribute__((tls_model("initial-exec")));

	if (++n % 64 == 0)
		maybe_unhook();
}

static void hook_free_off(struct alloy_allocator *a,
			  const struct alloy_data_ptr *dp)
{
	(void)a;
	record_free(dp->ptr, false);
	drain_tick();
}

static void hook_alloc_off(struct alloy_allocator *a,
			   const struct alloy_data_ptr *dp)
{
	(void)a;
	(void)dp;
	drain_tick();
}

/* Recording. */
static const struct alloy__hooks on_hooks = {
	.on_alloc = hook_alloc,
	.on_free = hook_free,
};

/* Off after having been on: blocks recorded earlier are still accounted. */
static const struct alloy__hooks draining_hooks = {
	.on_alloc = hook_alloc_off,
	.on_free = hook_free_off,
};

int alloy_reporter_enable(void)
{
	int rc = reporter_init();

	if (rc)
		return rc;
	pthread_mutex_lock(&R.lock);
	if (alloy__conf.backtrace)
		atomic_store(&R.backtrace, true);
	R.started = true;
	atomic_store(&R.drained, false);
	atomic_store(&R.enabled, true);
	alloy__set_hooks(&on_hooks);
	pthread_mutex_unlock(&R.lock);
	return 0;
}

int alloy_reporter_disable(void)
{
	alloy__ensure_init();
	pthread_mutex_lock(&R.lock);
	atomic_store(&R.enabled, false);
	if (R.started)
		alloy__set_hooks(&draining_hooks);
	pthread_mutex_unlock(&R.lock);
	/*
	 * Allocation hooks run inside grace-period sections: after this no
	 * thread is still recording with the old hooks, and if nothing
	 * recorded is live the hooks can go.
	 */
	alloy__synchronize();
	pthread_mutex_lock(&R.lock);
	if (R.started && !atomic_load(&R.enabled))
		atomic_store(&R.drained, true);
	pthread_mutex_unlock(&R.lock);
	maybe_unhook();
	return 0;
}

int alloy_reporter_set_backtrace(bool on)
{
	ALLOY_ENFORCE(!on || alloy__rep_stacks_available(), -ENOTSUP,
		      "this alloy was built without libunwind: no call stacks");
	if (on)
		alloy__rep_stacks_init();
	atomic_store(&R.backtrace, on);
	return 0;
}

bool alloy_reporter_enabled(void)
{
	return atomic_load(&R.enabled);
}

int alloy_reporter_note_alloc(const void *ptr, size_t size,
			      struct alloy_device dev)
{
	struct rep_entry *e;
	int rc = reporter_init();

	if (rc)
		return rc;
	ALLOY_ENFORCE(ptr, -EINVAL, "ptr is NULL");
	/* As for malloc(0): no block, so its note_free would be unknown. */
	ALLOY_ENFORCE(size, -EINVAL,
		      "size is 0: zero-byte blocks are not recorded");
	ALLOY_ENFORCE(size <= INT64_MAX, -EOVERFLOW, "size %zu is too large",
		      size);
	/* Else it would be counted on another device: the key keeps 8 bits. */
	ALLOY_ENFORCE(dev.type >= 0 && dev.type < ALLOY_DEVICE_TYPE_COUNT,
		      -EINVAL, "device type %d is not a known device type",
		      (int)dev.type);
	ALLOY_ENFORCE(dev.index >= 0, -EINVAL, "device index %d is negative",
		      (int)dev.index);
	ALLOY_ENFORCE(dev.type != ALLOY_DEVICE_CPU || dev.index == 0, -EINVAL,
		      "device index %d: the CPU is device 0", (int)dev.index);
	if (!atomic_load(&R.enabled))
		return 0;
	e = entry_get(alloy__hash_name("external"), "external", dev);
	ALLOY_ENFORCE(e, -ENOSPC, "more than %d allocator/device pairs",
		      ALLOY_REPORTER_MAX_ENTRIES);
	record_alloc(e, ptr, size, 1);
	return 0;
}

int alloy_reporter_note_free(const void *ptr)
{
	int rc = reporter_init();

	if (rc)
		return rc;
	if (!ptr)
		return 0; /* free(NULL) is no free */
	rc = record_free(ptr, true);
	if (rc == -EALREADY)
		return alloy__error(rc, __func__, "double free of %p", ptr);
	if (rc)
		return alloy__error(
			rc, __func__,
			"free of %p, which the reporter never saw allocated",
			ptr);
	return 0;
}

/* ---- reading ------------------------------------------------------- */

int alloy_reporter_snapshot(struct alloy_reporter_snapshot *snap)
{
	static struct alloy_reporter_snapshot s;
	static pthread_mutex_t snap_lock = PTHREAD_MUTEX_INITIALIZER;
	uint32_t size;
	int rc;

	ALLOY_ENFORCE(snap, -EINVAL, "snap is NULL");
	ALLOY_ENFORCE(snap->size >= 2 * sizeof(uint32_t), -EINVAL,
		      "snapshot header size %u is too small", snap->size);
	rc = reporter_init();
	if (rc)
		return rc;
	size = snap->size < sizeof(s) ? snap->size : (uint32_t)sizeof(s);
	/* Built in a static to keep 8 KiB off the caller's stack. */
	pthread_mutex_lock(&snap_lock);
	memset(&s, 0, sizeof(s));
	s.size = size;
	s.version = ALLOY_REPORTER_SNAPSHOT_VERSION;
	s.enabled = atomic_load(&R.enabled);
	s.unknown_frees = atomic_load(&R.unknown_frees);
	s.double_frees = atomic_load(&R.double_frees);
	s.untracked_frees = atomic_load(&R.untracked_frees);
	for (int i = 0; i < ALLOY_REPORTER_MAX_ENTRIES; i++) {
		const struct rep_entry *e = &alloy__rep_entries[i];
		struct alloy_reporter_entry *o = &s.entries[s.nentries];

		if (!atomic_load_explicit(&e->ready, memory_order_acquire))
			continue;
		memcpy(o->allocator, e->name, sizeof(o->allocator));
		o->device = e->device;
		alloy__rep_entry_counts(e, &o->c);
		s.total.total_bytes += o->c.total_bytes;
		s.total.allocs += o->c.allocs;
		s.total.frees += o->c.frees;
		s.total.live_blocks += o->c.live_blocks;
		s.nentries++;
	}
	counter_report(&R.all, &s.total.current_bytes, &s.total.peak_bytes);
	memcpy(snap, &s, size);
	pthread_mutex_unlock(&snap_lock);
	return 0;
}

void alloy_reporter_reset_peaks(void)
{
	for (int i = 0; i < ALLOY_REPORTER_MAX_ENTRIES; i++) {
		struct rep_entry *e = &alloy__rep_entries[i];

		if (atomic_load_explicit(&e->ready, memory_order_acquire))
			counter_reset_peak(&e->bytes);
	}
	if (atomic_load(&R.ready))
		counter_reset_peak(&R.all);
}

int alloy_reporter_flush(void)
{
	int rc = 0;

	if (atomic_load(&alloy__rep_tracing))
		rc = alloy__stream_flush(&alloy__rep_trace);
	if (atomic_load(&alloy__rep_logging) && !rc)
		rc = alloy__stream_flush(&alloy__rep_log);
	if (rc)
		return alloy__error(rc, __func__, "writing: %s",
				    strerrordesc_np(-rc));
	return 0;
}
