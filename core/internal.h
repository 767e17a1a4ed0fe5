/* SPDX-License-Identifier: MIT */
/*
 * core/internal.h - what the parts of liballoy share and users never see.
 */
#ifndef ALLOY_CORE_INTERNAL_H
#define ALLOY_CORE_INTERNAL_H

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
/* Core's own public headers only: core sees nothing of the layers above. */
#include <alloy/version.h>
#include <alloy/error.h>
#include <alloy/device.h>
#include <alloy/allocator.h>
#include <alloy/registry.h>
#include <alloy/conf.h>
#include <alloy/context.h>
#include <alloy/plugin.h>
#include <alloy/owner.h>

#define ALLOY_HIDDEN  __attribute__((visibility("hidden")))
#define likely(x)     __builtin_expect(!!(x), 1)
#define unlikely(x)   __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors (core/error.c) ---------------------------------------- */

/*
 * Record "func: message" as this thread's last error and return err, so
 * that failures read `return alloy__error(-EINVAL, __func__, "...", ...)`.
 */
ALLOY_HIDDEN int alloy__error(int err, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
ALLOY_HIDDEN int alloy__verror(int err, const char *func, const char *fmt,
			       va_list ap);

/*
 * Bumped by every alloy__error on this thread (in the thread's record
 * when it has one, struct alloy__tls's error_mark, else here).  The
 * allocation path sets it to 0 before it calls an allocator: non-zero
 * after a failure means the allocator explained it (its message is then
 * kept).  alloy__error_mark_of() finds the right one.
 */
extern ALLOY_HIDDEN __thread unsigned alloy__error_mark
	__attribute__((tls_model("initial-exec")));
ALLOY_HIDDEN unsigned *alloy__error_mark_of(void);

/* Return err from the enclosing function unless cond holds. */
#define ALLOY_ENFORCE(cond, err, ...)                                      \
	do {                                                               \
		if (unlikely(!(cond)))                                     \
			return alloy__error((err), __func__, __VA_ARGS__); \
	} while (0)

/* ---- initialisation (core/init.c) ----------------------------------- */

extern ALLOY_HIDDEN atomic_int alloy__initialised;
ALLOY_HIDDEN void alloy__init_slow(void);

/*
 * Attach what the layers above register at start (root/init.c): core runs
 * it once, on first use, after parsing ALLOY_CONF.  Core itself names no
 * allocator, context or reporter.
 */
ALLOY_HIDDEN void alloy__set_composer(void (*fn)(void));

/* The steps of the configuration that the composer runs, in this order. */
/* Print ALLOY_CONF's problems on stderr, one line each. */
ALLOY_HIDDEN void alloy__conf_print_errors(void);
/* Install the configured defaults (cpu, and those named in ALLOY_CONF). */
ALLOY_HIDDEN void alloy__conf_apply_defaults(const char *cpu_fallback);
/* Report NAME.KEY options for allocators that are nowhere to be found. */
ALLOY_HIDDEN void alloy__conf_check_options(void);

/* Cheap check on every entry point; the first call does the work. */
static inline void alloy__ensure_init(void)
{
	if (unlikely(!atomic_load_explicit(&alloy__initialised,
					   memory_order_acquire)))
		alloy__init_slow();
}

/* ---- per-thread records: counters, windows, sections (core/tcount.c) */

/*
 * Counters kept per thread and summed on read, so that the allocation
 * path never writes a cache line another thread writes.  A thread's
 * values are folded into the retired totals when it exits.
 */
#define ALLOY__TCOUNT_SLOTS 1024

/* Per-allocator counters: tcount slots base + ALLOY__C_* (alloy/inline.h). */

struct alloy__tls {
	union {
		struct {
			/*
			 * 1 while this thread reads a device's default and
			 * counts its block there (core/acct.h):
			 * alloy__wait_windows() waits for it.
			 */
			_Atomic int window;
			/*
			 * alloy__error_mark for a thread with a record
			 * (core/error.c).  Beside the window, so that the
			 * store that closes the window clears it too.
			 */
			unsigned error_mark;
		};
		_Atomic uint64_t window_and_mark;
	};
	/* This thread's copy of alloy__slow_mask (one compare to test). */
	_Atomic unsigned slow;
	unsigned depth;		  /* nesting of enter/leave */
	atomic_uint_fast64_t seq; /* odd while inside alloy__enter/leave */
	struct alloy__tls *next;
	struct alloy__tls *prev;
	void *owner; /* the owner labels of this thread (core/owner.c) */
	/*
	 * The default allocator's cache of this thread's free blocks
	 * (allocators/default_cache.c), or NULL; emptied through
	 * alloy__tls_cache_retire when the record is retired.
	 */
	void *cache;
	/*
	 * The reporter's stack-capture state (reporter/stacks.c: the unwind
	 * cache and the recent stacks), made at the thread's first call
	 * stack and kept with the record: what it holds is the process's,
	 * not the thread's.
	 */
	void *unwind;
	/*
	 * Where an allocation that found no default counts itself
	 * (alloy__no_default's counters): written, never read.
	 */
	_Atomic int64_t nowhere[ALLOY__C_COUNT];
	/* Written only by this thread (alloy__count_add), read by all. */
	_Atomic int64_t count[ALLOY__TCOUNT_SLOTS];
};

/* alloy__tls_self, the thread's record or NULL: alloy/inline.h. */
/*
 * The allocation fast paths' view of the same record: alloy__tls_self
 * where the thread has one, else (before its first allocation, after its
 * exit) a record that is never written, whose slow flag has
 * ALLOY__SLOW_NO_RECORD set.  The fast paths test one word for both
 * cases, and leave before they write anything.  Everything else reads
 * alloy__tls_self, NULL where there is no record.
 */
extern ALLOY_HIDDEN __thread struct alloy__tls *alloy__tls_fast
	__attribute__((tls_model("initial-exec")));
extern ALLOY_HIDDEN atomic_bool alloy__need_fence;

/*
 * Set once by the allocator that keeps a per-thread cache (the default
 * one): called with a record's cache when the record is retired.  At its
 * thread's exit (give_back) the blocks go back to their allocator; in a
 * fork child, for the threads that are gone, they are only forgotten and
 * the record drops the cache: such a thread may have been halfway through
 * changing it at the fork.  Returns the bytes the cache held.
 * Core knows the hook, not the allocator (layers point downward).
 */
extern ALLOY_HIDDEN size_t (*alloy__tls_cache_retire)(void *cache,
						      bool give_back);

/*
 * What sends an allocation off the fast path, in one word so that the
 * fast path tests it once: the allocation side must fence for itself (no
 * membarrier), or the reporter's hooks are installed.  Both are rare.
 * NO_RECORD is set only in the record that alloy__tls_fast names for a
 * thread without one (core/tcount.c), never in the mask.
 */
enum { ALLOY__SLOW_FENCE = 1, ALLOY__SLOW_HOOKS = 2, ALLOY__SLOW_NO_RECORD = 4 };
extern ALLOY_HIDDEN _Atomic unsigned alloy__slow_mask;

/*
 * Set or clear bits of the slow mask; every thread's record gets the new
 * value too (a thread may act on the old one for a moment, as it may on
 * any relaxed read).
 */
ALLOY_HIDDEN void alloy__slow_mask_set(unsigned bits, bool on);

/*
 * Whether this thread's record says to leave the fast path.  On x86-64 a
 * compare with memory, which is the relaxed load the generic code does
 * and one instruction fewer on the hottest path.
 */
static inline bool alloy__slow_now(struct alloy__tls *t)
{
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__) && \
	!defined(__SANITIZE_THREAD__)
	bool slow;

	__asm__("cmpl $0, %1" : "=@ccne"(slow) : "m"(t->slow));
	return slow;
#else
	return atomic_load_explicit(&t->slow, memory_order_relaxed) != 0;
#endif
}

/*
 * This thread's record, made on first use.  NULL when there is no memory
 * for one, and for a thread whose record was already given back at its
 * exit (a destructor that runs later and frees memory): callers then use
 * the shared totals.
 */
ALLOY_HIDDEN struct alloy__tls *alloy__tls_create(void);

static inline struct alloy__tls *alloy__tls_get(void)
{
	struct alloy__tls *t = alloy__tls_self;

	return likely(t) ? t : alloy__tls_create();
}

/* Add v to one of this thread's own counters (alloy/inline.h says how). */
static inline void alloy__count_add(_Atomic int64_t *c, int64_t v)
{
	alloy__counter_add((int64_t *)c, v);
}

/* Subtract v from one of this thread's own counters. */
static inline void alloy__count_sub(_Atomic int64_t *c, int64_t v)
{
	alloy__counter_sub((int64_t *)c, v);
}

/* Add to the retired totals directly (a thread without a record). */
ALLOY_HIDDEN void alloy__tcount_add_shared(int slot, int64_t delta);

/* Reserve n consecutive counter slots; returns the first, or -ENOSPC. */
ALLOY_HIDDEN int alloy__tcount_reserve(int n);

static inline void alloy__tcount_add(struct alloy__tls *t, int slot,
				     int64_t delta)
{
	if (unlikely(!t)) {
		alloy__tcount_add_shared(slot, delta);
		return;
	}
	alloy__count_add(&t->count[slot], delta);
}

/* The sum over all threads, living and exited. */
ALLOY_HIDDEN int64_t alloy__tcount_sum(int slot);
/* Zero a slot everywhere; only while nobody can be updating it. */
ALLOY_HIDDEN void alloy__tcount_zero(int slot);

/*
 * A thread without a record (see alloy__tls_get) opens its window on a
 * shared count instead; alloy__wait_windows() waits for that too.
 */
extern ALLOY_HIDDEN _Atomic int alloy__shared_windows;

/*
 * Windows: the allocation fast path marks the few instructions in which
 * it reads a device's default and counts a block there.  Once
 * alloy__wait_windows() returns, every thread either counted its block
 * (an unregister then sees it live) or will read the default anew.  The
 * fast side pays two plain stores: the waiting side issues membarrier(),
 * so the fast side needs no fence of its own where the kernel has it.
 */
static inline void alloy__window_open(struct alloy__tls *t)
{
	atomic_store_explicit(&t->window, 1, memory_order_relaxed);
	if (unlikely(atomic_load_explicit(&alloy__need_fence,
					  memory_order_relaxed)))
		atomic_thread_fence(memory_order_seq_cst);
	else
		atomic_signal_fence(memory_order_seq_cst);
}

/* The same where alloy__slow_mask was seen 0: membarrier is there. */
static inline void alloy__window_open_fast(struct alloy__tls *t)
{
	atomic_store_explicit(&t->window, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void alloy__window_close(struct alloy__tls *t)
{
	/* Release: the count is seen before the window is seen closed. */
	atomic_store_explicit(&t->window, 0, memory_order_release);
}

/*
 * Close the window and clear the error mark, in one store where it can
 * be: the fast paths call the allocator next, and the mark then tells
 * whether the allocator explained a failure (core/alloc.c).
 */
static inline void alloy__window_close_clear_mark(struct alloy__tls *t)
{
#ifdef __SANITIZE_THREAD__
	t->error_mark = 0; /* TSan is given the two stores it knows */
	alloy__window_close(t);
#else
	atomic_store_explicit(&t->window_and_mark, 0, memory_order_release);
#endif
}

ALLOY_HIDDEN void alloy__wait_windows(void);

/*
 * Sections, for the paths that call the reporter's hooks and around
 * context ops (core/context.c): a thread inside enter/leave may be using
 * hooks or a context it looked up; alloy__synchronize() returns once
 * every thread that was inside such a section when it was called has
 * left it (a grace period, as in RCU).  One grace period covers all of
 * them, so alloy_unregister_context and turning the reporter off wait
 * for any context op running on any thread (a GPU synchronize, say): an
 * accepted trade-off against an atomic count per context, which every
 * op would then pay for.
 */
static inline void alloy__enter(struct alloy__tls *t)
{
	if (t->depth++ == 0) {
		uint_fast64_t s =
			atomic_load_explicit(&t->seq, memory_order_relaxed);

		atomic_store_explicit(&t->seq, s + 1, memory_order_relaxed);
		if (unlikely(atomic_load_explicit(&alloy__need_fence,
						  memory_order_relaxed)))
			atomic_thread_fence(memory_order_seq_cst);
		else
			atomic_signal_fence(memory_order_seq_cst);
	}
}

static inline void alloy__leave(struct alloy__tls *t)
{
	if (--t->depth == 0) {
		uint_fast64_t s =
			atomic_load_explicit(&t->seq, memory_order_relaxed);

		atomic_store_explicit(&t->seq, s + 1, memory_order_release);
	}
}

ALLOY_HIDDEN void alloy__synchronize(void);

/*
 * A section on the calling thread's record, for code outside the
 * allocation path: the record is what alloy__section_leave takes.  A
 * thread without one (NULL) holds the shared window instead, which
 * alloy__synchronize() also waits on, so that it too is covered.
 */
static inline struct alloy__tls *alloy__section_enter(void)
{
	struct alloy__tls *t = alloy__tls_get();

	if (t)
		alloy__enter(t);
	else
		atomic_fetch_add(&alloy__shared_windows, 1);
	return t;
}

static inline void alloy__section_leave(struct alloy__tls *t)
{
	if (t)
		alloy__leave(t);
	else
		atomic_fetch_sub(&alloy__shared_windows, 1);
}

/*
 * fork(): core's locks are held across it, in the order they nest
 * (core/fork.c): plugins, the reporter's (handed over through
 * alloy__fork_nest, just inside the plugin lock), registry, contexts,
 * conf reports, records, arena.
 */
ALLOY_HIDDEN void alloy__fork_setup(void);

/* The path of the plugin whose init or fini this thread runs, or NULL. */
ALLOY_HIDDEN const char *alloy__plugin_hook_running(void);

/*
 * -EPERM, reported for func, while a plugin's init or fini runs on this
 * thread: what a plugin registers (what: "allocators", "contexts") is
 * listed in its descriptor.  0 elsewhere.
 */
static inline int alloy__refuse_in_plugin_hook(const char *func,
					       const char *what)
{
	const char *path = alloy__plugin_hook_running();

	if (likely(!path))
		return 0;
	return alloy__error(
		-EPERM, func,
		"%s: a plugin's init or fini may not register %s; list them in its descriptor",
		path, what);
}

/* A layer's fork handlers, run inside core's outermost lock (fork.c). */
struct alloy__fork_handlers {
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};
ALLOY_HIDDEN void alloy__fork_nest(const struct alloy__fork_handlers *h);
ALLOY_HIDDEN void alloy__plugin_fork_lock(void);
ALLOY_HIDDEN void alloy__plugin_fork_unlock(void);
ALLOY_HIDDEN void alloy__registry_fork_lock(void);
ALLOY_HIDDEN void alloy__registry_fork_unlock(void);
ALLOY_HIDDEN void alloy__context_fork_lock(void);
ALLOY_HIDDEN void alloy__context_fork_unlock(void);
/* The lock of problems reported after init (core/conf.c), a leaf. */
ALLOY_HIDDEN void alloy__conf_fork_lock(void);
ALLOY_HIDDEN void alloy__conf_fork_unlock(void);
/* The records' lock; the child keeps only its own record. */
ALLOY_HIDDEN void alloy__tls_fork_prepare(void);
ALLOY_HIDDEN void alloy__tls_fork_parent(void);
ALLOY_HIDDEN void alloy__tls_fork_child(void);

/* ---- owner labels (core/owner.c) ---------------------------------- */

/*
 * A thread's owner labels, hung on its record (struct alloy__tls's owner)
 * on its first push.  Only that thread writes it.  gen changes with every
 * push and pop, so that the reporter can keep the id it gave the path
 * (rep_id, valid while rep_gen == gen) and look the path up only when it
 * changed.
 */
struct alloy__owner {
	struct alloy__tls *holder; /* the record it hangs on */
	struct alloy__owner *next; /* every state ever made (owner.c) */
	uint64_t gen;
	uint64_t rep_gen;
	uint32_t rep_id;
	uint32_t len;	/* bytes of path */
	uint32_t depth; /* labels in force */
	uint16_t lens[ALLOY_OWNER_DEPTH]; /* len before each push */
	char path[ALLOY_OWNER_MAX + 1];
};

/*
 * A copy of label kept for the life of the process (the same pointer for
 * the same text), for labels that outlive their callers: a blob's name on
 * its tensor.  NULL for NULL, "", a label too long, or without memory.
 */
ALLOY_HIDDEN const char *alloy__owner_intern(const char *label);

/* t's owner labels when at least one is in force, else NULL. */
static inline struct alloy__owner *alloy__owner_of(struct alloy__tls *t)
{
	struct alloy__owner *o = t ? (struct alloy__owner *)t->owner : NULL;

	return o && o->depth ? o : NULL;
}

/* ---- registry internals (core/registry.c) ------------------------- */

/*
 * A table slot's life.  INIT and DYING hold the slot and its name while
 * the allocator's init or fini runs outside the registry's lock (so that
 * they may call the registry themselves).
 */
enum alloy__alloc_state { ALLOC_FREE = 0, ALLOC_LIVE, ALLOC_DYING, ALLOC_INIT };

/*
 * Whether *state (an allocator's) reads ALLOC_LIVE: a relaxed load.  On
 * x86-64 a compare with memory, as alloy__slow_now: one instruction
 * fewer on the allocation fast path.
 */
static inline bool alloy__state_live(atomic_int *state)
{
#if defined(__x86_64__) && defined(__GCC_ASM_FLAG_OUTPUTS__) && \
	!defined(__SANITIZE_THREAD__)
	bool live;

	__asm__("cmpl %2, %1" : "=@cce"(live) : "m"(*state), "i"(ALLOC_LIVE));
	return live;
#else
	return atomic_load_explicit(state, memory_order_relaxed) == ALLOC_LIVE;
#endif
}

/* Live blocks of a: allocations minus frees, summed over threads. */
ALLOY_HIDDEN int64_t alloy__live_blocks(const struct alloy_allocator *a);

/*
 * 512 bytes, a power of two: a plain block's free finds its allocator
 * from the index in its header with one shift, not a multiply (it was
 * 480 bytes).
 */
struct __attribute__((aligned(512))) alloy_allocator {
	/* struct alloy__allocator_head (alloy/allocator.h): fixed, first. */
	void *ctx;
	/* Byte offset of its counters in a struct alloy__tls (core/acct.h). */
	ptrdiff_t acct_offset;
	struct alloy_allocator_ops ops; /* zeroed private copy */
	/* liballoy's own from here. */
	atomic_int state; /* enum alloy__alloc_state */
	atomic_int holds; /* users besides its blocks: unregister is -EBUSY */
	int index;	  /* position in the table */
	int counters;	  /* first tcount slot */
	unsigned long serial; /* registration order */
	uint64_t name_hash;   /* FNV-1a of name: the reporter's key */
	char name[ALLOY_NAME_MAX + 1];
	char origin[256];
};

extern ALLOY_HIDDEN _Atomic(struct alloy_allocator *)
	alloy__defaults[ALLOY_DEVICE_TYPE_COUNT];

/*
 * What alloy__defaults holds for a device without a default, so that the
 * fast paths need not test for NULL: an allocator in no table, counted in
 * each record's nowhere[], whose alloc op always fails.  A fast path that
 * got it goes to its slow path from the failure; everything else sees
 * NULL through alloy__default_of.
 */
extern ALLOY_HIDDEN struct alloy_allocator alloy__no_default;

static inline struct alloy_allocator *
alloy__default_of(struct alloy_allocator *a)
{
	return a == &alloy__no_default ? NULL : a;
}

/* The table, indexed by struct alloy_allocator's index (never freed). */
extern ALLOY_HIDDEN struct alloy_allocator
	alloy__allocators[ALLOY_MAX_ALLOCATORS];

/* Reserve the counters of every table entry; called once by init. */
ALLOY_HIDDEN int alloy__registry_init(void);

/*
 * Keep a from being unregistered while something uses it other than
 * through blocks it made (a wrapper's inner): +1 to hold, -1 to let go.
 */
ALLOY_HIDDEN void alloy__allocator_hold(struct alloy_allocator *a, int delta);

/* FNV-1a of a string (core/registry.c). */
ALLOY_HIDDEN uint64_t alloy__hash_name(const char *s);

/* Validate an ops struct as registration does; 0 or -EINVAL + message. */
ALLOY_HIDDEN int alloy__check_ops(const struct alloy_allocator_ops *ops,
				  size_t *copy_size);

/* ---- allocation hooks (the reporter, core/alloc.c) ----------------- */

/*
 * When set, every allocation through alloy_alloc is reported here and
 * its DataPtr gets a deleter that reports the free, so that a block is
 * reported at free exactly when it was reported at allocation.
 */
struct alloy__hooks {
	void (*on_alloc)(struct alloy_allocator *a,
			 const struct alloy_data_ptr *dp);
	void (*on_free)(struct alloy_allocator *a,
			const struct alloy_data_ptr *dp);
};

ALLOY_HIDDEN void alloy__set_hooks(const struct alloy__hooks *h);

/* ---- modules (core/module.c) -------------------------------------- */

/*
 * Load the module providing allocator `name` from the module directory.
 * 0 when it registered an allocator of that name, else a negative code
 * with the message set.
 */
ALLOY_HIDDEN int alloy__module_request(const char *name);

/*
 * Whether a module other than the file at path provides allocator name
 * (the module a request for name would load; its path into owner).  A
 * plugin may not take a name that belongs to a module (docs/PLUGINS.md).
 */
ALLOY_HIDDEN bool alloy__module_claims(const char *name, const char *path,
				       char *owner, size_t len);

/* Whether the file at path is the module a request for name loads. */
ALLOY_HIDDEN bool alloy__module_provides(const char *name, const char *path);

/*
 * The object at path was just loaded: make its allocators the defaults
 * that were configured for them and are still unset, if it is the module
 * their names autoload.
 */
ALLOY_HIDDEN void alloy__module_apply_defaults(const char *path);

/* ---- plugins (core/plugin.c) -------------------------------------- */

/* Whether a plugin was loaded from exactly this path. */
ALLOY_HIDDEN bool alloy__plugin_loaded(const char *path);

/* Load each path of a colon-separated list; one stderr line per failure. */
ALLOY_HIDDEN void alloy__plugins_load_list(const char *list);

#endif /* ALLOY_CORE_INTERNAL_H */
