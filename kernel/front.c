// SPDX-License-Identifier: MIT
/*
 * kernel/front.c - the malloc front's engine (kernel/front.h says how a
 * free finds its allocator).
 *
 * A binding is one malloc family the front may call: the family's
 * functions, the allocator it is counted on, and the object its code is
 * in (whose mappings the page map marks as the family's).  Bindings are
 * indexed by their page-map tag; 0 is the C library's own malloc.  The
 * CPU default's binding is `bound` in the published state; `sole` is the
 * one binding that has ever served, or NULL once a second one has, and
 * then a free looks its block up.
 *
 * malloc's and free's fast paths are inlined into the entry points
 * (preload/malloc.c) over the bindings' first fields; the functions here
 * are their slow paths and every other entry point's path.  These read
 * the thread's record once (alloy__tls_fast): its slow word says whether
 * the reporter is on or the thread has no record, and anything but 0 goes
 * the slow way, which also tells the reporter.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <alloy/plain.h>

#include "base.h"
#include "count.h"
#include "front.h"
#include "hooks.h"
#include "pagemap.h"
#include "ptrset.h"
#include "registry.h"

/* Tags of the page map's bytes. */
#define FAMILIES_MAX 16

struct binding {
	struct alloy__front_binding fast; /* first: the entry points' view */
	const struct alloy_malloc_family *fam;
	struct alloy_allocator *a; /* NULL: the slot is free */
	uintptr_t lo, hi;	   /* the family's object */
	bool served;		   /* the front has made a block with it */
};

__thread unsigned alloy__front_depth
	__attribute__((tls_model("initial-exec"))) = ALLOY__FRONT_FRESH;
__thread struct alloy__tls *alloy__front_fast
	__attribute__((tls_model("initial-exec"))) =
		(struct alloy__tls *)&alloy__no_record;

static struct binding families[FAMILIES_MAX];
static _Atomic int families_end = 1; /* one past the highest tag in use */
static struct binding plain_binding; /* CPU defaults without a family */
/* The preload library's from alloy__front_start on. */
static struct alloy__front_state unstarted;
static _Atomic(struct alloy__front_state *) state = &unstarted;
static atomic_bool started;
static pthread_mutex_t families_lock = PTHREAD_MUTEX_INITIALIZER;
static void (*bad_pointer)(const char *func, const void *p);

/* ---- the depth ------------------------------------------------------ */

/*
 * The fast word follows the depth: the record only at depth 0.  The
 * depth changes first on the way in and last on the way out, so a signal
 * handler's malloc in between finds a pair that agrees, or the slow word.
 */
void alloy__front_enter(void)
{
	alloy__front_depth++;
	atomic_signal_fence(memory_order_seq_cst);
	alloy__front_fast = (struct alloy__tls *)&alloy__no_record;
}

void alloy__front_leave(void)
{
	if (--alloy__front_depth)
		return;
	atomic_signal_fence(memory_order_seq_cst);
	alloy__front_fast = alloy__tls_fast;
}

/* ---- the bindings --------------------------------------------------- */

static inline struct binding *
binding_of_fast(const struct alloy__front_binding *f)
{
	return (struct binding *)f; /* fast is the first member */
}

static inline struct binding *bound_now(void)
{
	struct alloy__front_state *s =
		atomic_load_explicit(&state, memory_order_acquire);

	return binding_of_fast(
		atomic_load_explicit(&s->bound, memory_order_acquire));
}

static inline struct binding *sole_now(void)
{
	struct alloy__front_state *s =
		atomic_load_explicit(&state, memory_order_acquire);

	return binding_of_fast(
		atomic_load_explicit(&s->sole, memory_order_relaxed));
}

/* ---- the counts of a block ----------------------------------------- */

/* From a slow path: a thread without a record counts in the totals. */
static void count_slow(const struct binding *b, int which)
{
	if (b == &plain_binding) /* alloy's plain API counted it */
		return;
	alloy__tcount_add(alloy__tls_self, b->a->counters + which, 1);
}

/* ---- errno across free ---------------------------------------------- */

/*
 * This thread's errno, found once: free keeps it (glibc since 2.33,
 * POSIX), and a backend's free may not.  __errno_location is a call of
 * its own on each use; the address is the thread's for its life.
 */
static __thread int *thread_errno __attribute__((tls_model("initial-exec")));

static __attribute__((noinline, cold)) int *errno_found(void)
{
	return thread_errno = &errno;
}

static inline int *errno_of_thread(void)
{
	int *e = thread_errno;

	if (unlikely(!e))
		e = errno_found();
	return e;
}

/* ---- the plain-pointer API as a family ------------------------------ */

/*
 * For a CPU default without a malloc family: alloy's plain-pointer API
 * (kernel/plain.c) serves, its header says whose a block is, and the set
 * says which blocks have a header.
 */
static void *remember(void *p)
{
	if (p && alloy__ptrset_add(p)) {
		alloy_free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

static void *plain_malloc(size_t size)
{
	void *p;

	alloy__front_enter();
	p = remember(alloy_malloc(size));
	alloy__front_leave();
	return p;
}

static void *plain_calloc(size_t nmemb, size_t size)
{
	void *p;

	alloy__front_enter();
	p = remember(alloy_calloc(nmemb, size));
	alloy__front_leave();
	return p;
}

static void *plain_memalign(size_t align, size_t size)
{
	void *p;

	alloy__front_enter();
	p = remember(alloy_aligned_alloc(align, size));
	alloy__front_leave();
	return p;
}

static void plain_free(void *ptr)
{
	if (!alloy__ptrset_remove(ptr)) {
		bad_pointer("free", ptr);
		return;
	}
	alloy__front_enter();
	alloy_free(ptr);
	alloy__front_leave();
}

static void *plain_realloc(void *ptr, size_t size)
{
	void *n;

	if (!alloy__ptrset_has(ptr)) {
		bad_pointer("realloc", ptr);
		errno = EINVAL;
		return NULL;
	}
	alloy__front_enter();
	n = alloy_realloc(ptr, size);
	if (n && n != ptr) {
		alloy__ptrset_remove(ptr);
		n = remember(n);
	}
	alloy__front_leave();
	return n;
}

static size_t plain_usable_size(void *ptr)
{
	return alloy__ptrset_has(ptr) ? alloy_usable_size(ptr) : 0;
}

static const struct alloy_malloc_family plain_family = {
	.malloc = plain_malloc,
	.calloc = plain_calloc,
	.realloc = plain_realloc,
	.memalign = plain_memalign,
	.free = plain_free,
	.usable_size = plain_usable_size,
};

/* ---- whose block is this -------------------------------------------- */

/* The binding of a block after a swap, or NULL for no allocator's. */
static struct binding *owner_of(const void *p)
{
	struct binding *b;

	if (alloy__ptrset_count() && alloy__ptrset_has(p))
		return &plain_binding;
	b = &families[alloy__pagemap_get(p)];
	return b->served ? b : NULL;
}

static inline struct binding *owner(const void *p)
{
	struct binding *b = sole_now();

	return likely(b) ? b : owner_of(p);
}

bool alloy__front_owns(const void *ptr)
{
	struct binding *b = owner(ptr);

	if (b == &plain_binding)
		return alloy__ptrset_has(ptr);
	return b != NULL;
}

/* ---- telling the reporter ------------------------------------------- */

static void report(const struct binding *b, void *p, size_t size, size_t align,
		   bool made)
{
	struct alloy__tls *t;
	const struct alloy__hooks *h;
	struct alloy_data_ptr dp = {
		.ptr = p,
		.ctx = b->a,
		.device = { .type = ALLOY_DEVICE_CPU },
		.size = size,
		.align = align,
	};

	alloy__front_enter(); /* the reporter allocates for itself */
	t = alloy__section_enter();
	h = alloy__hooks_now();
	if (h) {
		if (!made)
			h->on_free(b->a, &dp);
		else if (size) /* a trace's sizes start at 1 */
			h->on_alloc(b->a, &dp);
	}
	alloy__section_leave(t);
	alloy__front_leave();
}

static inline bool reporting(const struct binding *b)
{
	return b != &plain_binding && alloy__hooks_now();
}

/* ---- allocation ----------------------------------------------------- */

enum kind { MALLOC, CALLOC, MEMALIGN };

/*
 * mimalloc 2.0.9's aligned allocation misses the alignment for some
 * sizes up to 1 KiB at alignments of 256 and more; above 1 KiB it
 * over-allocates and is right.  Any family's result is checked.
 */
static __attribute__((noinline, cold)) void *
realign(const struct binding *b, void *p, size_t align, size_t size)
{
	b->fam->free(p);
	p = b->fam->memalign(align, size > 1024 ? size : 1025);
	if (p && ((uintptr_t)p & (align - 1))) {
		b->fam->free(p);
		p = NULL;
	}
	if (!p)
		errno = ENOMEM;
	return p;
}

static inline void *call_family(const struct binding *b, enum kind k, size_t x,
				size_t y)
{
	void *p;

	switch (k) {
	case CALLOC:
		return b->fam->calloc(x, y);
	case MEMALIGN:
		p = b->fam->memalign(x, y);
		if (unlikely((uintptr_t)p & (x - 1)))
			p = realign(b, p, x, y);
		return p;
	default:
		return b->fast.malloc(x);
	}
}

/* Not every backend says why: the C library's contract is ENOMEM. */
void *alloy__front_failed(void)
{
	errno = ENOMEM;
	return NULL;
}

static __attribute__((noinline)) void *alloc_slow(enum kind k, size_t x,
						  size_t y)
{
	struct binding *b = bound_now();
	size_t size = k == MALLOC ? x : k == CALLOC ? x * y : y;
	void *p;

	if (unlikely(!b)) { /* before alloy__front_start */
		errno = ENOMEM;
		return NULL;
	}
	/* A thread's first block: its record, for the fast path next time. */
	alloy__front_enter();
	alloy__tls_get();
	alloy__front_leave();
	p = call_family(b, k, x, y);
	if (!p)
		errno = ENOMEM;
	if (!p || b == &plain_binding)
		return p;
	count_slow(b, ALLOY__C_ALLOCS);
	if (reporting(b))
		report(b, p, size, k == MEMALIGN ? x : ALLOY_PLAIN_ALIGN, true);
	return p;
}

static inline __attribute__((always_inline)) void *alloc(enum kind k, size_t x,
							 size_t y)
{
	struct alloy__tls *t = alloy__tls_fast;
	const struct binding *b;
	void *p;

	if (unlikely(alloy__slow_now(t)))
		return alloc_slow(k, x, y);
	b = bound_now();
	p = call_family(b, k, x, y);
	if (unlikely(!p))
		return alloy__front_failed();
	alloy__count_add(alloy__front_counter(t, &b->fast, ALLOY__C_ALLOCS), 1);
	return p;
}

void *alloy__front_malloc(size_t size)
{
	return alloc(MALLOC, size, 0);
}

void *alloy__front_calloc(size_t nmemb, size_t size)
{
	return alloc(CALLOC, nmemb, size);
}

void *alloy__front_memalign(size_t align, size_t size)
{
	return alloc(MEMALIGN, align, size);
}

/* ---- free, realloc, usable size ------------------------------------- */

static __attribute__((noinline)) void free_by(const struct binding *b,
					      void *ptr)
{
	int *err = errno_of_thread();
	int saved = *err;

	b->fast.free(ptr);
	*err = saved;
}

/* The reporter is on, or the thread has no record. */
static __attribute__((noinline)) void free_slow(void *ptr)
{
	struct binding *b = owner(ptr);

	if (!b) {
		bad_pointer("free", ptr);
		return;
	}
	if (reporting(b))
		report(b, ptr, 0, 0, false);
	free_by(b, ptr);
	count_slow(b, ALLOY__C_FREES);
}

/* After a swap: the block's allocator is looked up. */
static __attribute__((noinline)) void free_looked_up(struct alloy__tls *t,
						     void *ptr)
{
	const struct binding *b = owner_of(ptr);

	if (!b) {
		bad_pointer("free", ptr);
		return;
	}
	alloy__count_add(alloy__front_counter(t, &b->fast, ALLOY__C_FREES), 1);
	free_by(b, ptr);
}

/*
 * The block is counted freed before its free runs: an allocator that
 * served the front is never unregistered, so nothing waits on the count
 * while its code runs, and the free is the function's last call.  Every
 * other case leaves by a call in last place too, so that the common one
 * needs no stack frame.
 */
void alloy__front_free(void *ptr)
{
	struct alloy__tls *t = alloy__tls_fast;
	const struct binding *b;

	if (unlikely(alloy__slow_now(t))) {
		free_slow(ptr);
		return;
	}
	b = sole_now();
	if (unlikely(!b)) {
		free_looked_up(t, ptr);
		return;
	}
	alloy__count_add(alloy__front_counter(t, &b->fast, ALLOY__C_FREES), 1);
	if (unlikely(!b->fast.keeps_errno)) {
		free_by(b, ptr);
		return;
	}
	b->fast.free(ptr);
}

/*
 * The block stays with the allocator that made it, as a DataPtr does:
 * its own family resizes it.  Size 0 frees it and gives NULL, as glibc
 * does.
 */
void *alloy__front_realloc(void *ptr, size_t size)
{
	struct binding *b = owner(ptr);
	void *n;

	if (!b) {
		bad_pointer("realloc", ptr);
		errno = EINVAL;
		return NULL;
	}
	if (size == 0) {
		alloy__front_free(ptr);
		return NULL;
	}
	n = b->fam->realloc(ptr, size);
	if (!n && b != &plain_binding) /* the plain API says why itself */
		errno = ENOMEM;
	if (n && unlikely(alloy__slow_now(alloy__tls_fast)) && reporting(b)) {
		report(b, ptr, 0, 0, false);
		report(b, n, size, ALLOY_PLAIN_ALIGN, true);
	}
	return n;
}

size_t alloy__front_usable_size(void *ptr)
{
	struct binding *b = owner(ptr);

	if (!b) {
		bad_pointer("malloc_usable_size", ptr);
		return 0;
	}
	return b->fam->usable_size(ptr);
}

/* ---- families and the default --------------------------------------- */

struct object_range {
	uintptr_t base; /* dli_fbase of the family's code */
	uintptr_t lo, hi;
};

static int object_of(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct object_range *r = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start, end;

		if (ph->p_type != PT_LOAD)
			continue;
		start = info->dlpi_addr + ph->p_vaddr;
		end = start + ph->p_memsz;
		if (start < lo)
			lo = start;
		if (end > hi)
			hi = end;
	}
	if (r->base < lo || r->base >= hi)
		return 0;
	r->lo = lo;
	r->hi = hi;
	return 1;
}

/* The loaded object whose code fn is; false if none is known. */
static bool object_range(const void *fn, uintptr_t *lo, uintptr_t *hi)
{
	Dl_info info;
	struct object_range r = { 0 };

	if (!dladdr(fn, &info) || !info.dli_fbase)
		return false;
	r.base = (uintptr_t)info.dli_fbase;
	if (!dl_iterate_phdr(object_of, &r))
		return false;
	*lo = r.lo;
	*hi = r.hi;
	return true;
}

static bool family_complete(const struct alloy_malloc_family *f)
{
	return f->malloc && f->calloc && f->realloc && f->memalign && f->free &&
	       f->usable_size;
}

static void recent_claim(uintptr_t lo, uintptr_t hi, unsigned tag);

/* The slot of family f: its own if it has one, else a new one, or -1. */
static int family_slot(const struct alloy_malloc_family *f)
{
	int end = atomic_load(&families_end), slot;
	struct binding *b;

	for (int i = 0; i < end; i++)
		if (families[i].fam && families[i].fam->malloc == f->malloc)
			return i;
	slot = f->system ? 0 : end;
	if (slot >= FAMILIES_MAX || families[slot].fam)
		return -1;
	b = &families[slot];
	if (!f->system &&
	    !object_range((const void *)f->malloc, &b->lo, &b->hi))
		return -1;
	b->fast.malloc = f->malloc;
	b->fast.free = f->free;
	b->fast.keeps_errno = f->system;
	b->fam = f;
	/* The range is set before mappings are checked against it. */
	if (slot) {
		atomic_store_explicit(&families_end, slot + 1,
				      memory_order_release);
		recent_claim(b->lo, b->hi, (unsigned)slot);
	}
	return slot;
}

void alloy__front_add_family(struct alloy_allocator *a)
{
	const struct alloy_malloc_family *f = a->ops.malloc_family;
	int slot;

	if (!f || a->ops.device_type != ALLOY_DEVICE_CPU || !family_complete(f))
		return;
	pthread_mutex_lock(&families_lock);
	slot = family_slot(f);
	/* A second allocator of a family serves through alloc and free. */
	if (slot >= 0 && !families[slot].a) {
		families[slot].fast.acct_offset = a->acct_offset;
		families[slot].a = a;
	}
	pthread_mutex_unlock(&families_lock);
}

/*
 * An allocator that never served is forgotten (the slot and its tag stay
 * its family's: the same family registered again takes them back).
 */
void alloy__front_drop_family(struct alloy_allocator *a)
{
	pthread_mutex_lock(&families_lock);
	for (int i = 0; i < FAMILIES_MAX; i++)
		if (families[i].a == a && !families[i].served)
			families[i].a = NULL;
	pthread_mutex_unlock(&families_lock);
}

static struct binding *binding_of(struct alloy_allocator *a)
{
	for (int i = 0; i < FAMILIES_MAX; i++)
		if (families[i].a == a)
			return &families[i];
	return &plain_binding;
}

/*
 * Make a's binding the front's.  sole is cleared before the new binding
 * is published: a block of it can only be freed after it was made from
 * the published binding, so every free of one sees sole cleared.
 */
static void bind(struct alloy_allocator *a)
{
	struct alloy__front_state *s = atomic_load(&state);
	struct binding *b;

	pthread_mutex_lock(&families_lock);
	b = binding_of(a);
	b->served = true;
	pthread_mutex_unlock(&families_lock);
	if (sole_now() != b)
		atomic_store(&s->sole, NULL);
	atomic_store_explicit(&s->bound, &b->fast, memory_order_release);
}

void alloy__front_default_changed(struct alloy_allocator *a)
{
	if (atomic_load(&started) && a)
		bind(a);
}

bool alloy__front_holds(const struct alloy_allocator *a)
{
	bool held = false;

	pthread_mutex_lock(&families_lock);
	for (int i = 0; i < FAMILIES_MAX; i++)
		if (families[i].a == a && families[i].served)
			held = true;
	pthread_mutex_unlock(&families_lock);
	return held;
}

void alloy__front_start(void (*bad)(const char *func, const void *p),
			struct alloy__front_state *published)
{
	struct binding *b;

	bad_pointer = bad;
	plain_binding.fast.malloc = plain_family.malloc;
	plain_binding.fast.free = plain_family.free;
	plain_binding.fam = &plain_family;
	/* Its counts go where nothing reads: the plain API counts. */
	plain_binding.fast.acct_offset = offsetof(struct alloy__tls, nowhere);
	plain_binding.served = true;
	b = binding_of(alloy_get_default(ALLOY_DEVICE_CPU));
	b->served = true;
	atomic_store(&published->sole, &b->fast);
	atomic_store_explicit(&published->bound, &b->fast,
			      memory_order_release);
	atomic_store_explicit(&state, published, memory_order_release);
	atomic_store(&started, true);
}

/* ---- mappings ------------------------------------------------------- */

/*
 * The latest mappings of code that is no family's (yet): a family's
 * library maps memory before it is registered (jemalloc's constructor
 * runs inside dlopen, and keeps what it mapped for blocks), so a family
 * just registered claims the mappings its code made here.  A ring: the
 * oldest is forgotten, and what one thread writes while another claims
 * may be missed, both far from what a library does between its load and
 * its registration.
 */
#define RECENT_MAX 256

struct recent_map {
	_Atomic uintptr_t start; /* 0: an empty slot */
	_Atomic size_t len;
	_Atomic uintptr_t caller;
};

static struct recent_map recent[RECENT_MAX];
static _Atomic unsigned recent_next;

static void recent_add(uintptr_t start, size_t len, uintptr_t caller)
{
	struct recent_map *m =
		&recent[atomic_fetch_add(&recent_next, 1) % RECENT_MAX];

	atomic_store_explicit(&m->start, 0, memory_order_relaxed);
	atomic_store_explicit(&m->len, len, memory_order_relaxed);
	atomic_store_explicit(&m->caller, caller, memory_order_relaxed);
	atomic_store_explicit(&m->start, start, memory_order_release);
}

/* Forget the recent mappings that [start, start + len) overlaps. */
static void recent_forget(uintptr_t start, size_t len)
{
	for (int i = 0; i < RECENT_MAX; i++) {
		uintptr_t s = atomic_load_explicit(&recent[i].start,
						   memory_order_acquire);

		if (s && s < start + len &&
		    start < s + atomic_load(&recent[i].len))
			atomic_store(&recent[i].start, 0);
	}
}

/* Mark as tag's the recent mappings made from code in [lo, hi). */
static void recent_claim(uintptr_t lo, uintptr_t hi, unsigned tag)
{
	for (int i = 0; i < RECENT_MAX; i++) {
		uintptr_t s = atomic_load_explicit(&recent[i].start,
						   memory_order_acquire);
		uintptr_t at = atomic_load(&recent[i].caller);

		if (s && at >= lo && at < hi) {
			alloy__pagemap_set(s, atomic_load(&recent[i].len), tag);
			atomic_store(&recent[i].start, 0);
		}
	}
}

void alloy__front_mapped(void *p, size_t len, const void *caller)
{
	int end = atomic_load_explicit(&families_end, memory_order_acquire);
	uintptr_t at = (uintptr_t)caller;

	for (int tag = 1; tag < end; tag++) {
		if (at >= families[tag].lo && at < families[tag].hi) {
			alloy__pagemap_set((uintptr_t)p, len, (unsigned)tag);
			return;
		}
	}
	if (alloy__pagemap_used())
		alloy__pagemap_set((uintptr_t)p, len, 0);
	recent_add((uintptr_t)p, len, at);
}

void alloy__front_unmapped(void *p, size_t len)
{
	recent_forget((uintptr_t)p, len);
	if (alloy__pagemap_used())
		alloy__pagemap_set((uintptr_t)p, len, 0);
}

void alloy__front_moved(void *old, size_t old_len, void *p, size_t len)
{
	unsigned tag;

	recent_forget((uintptr_t)old, old_len);
	if (!alloy__pagemap_used())
		return;
	tag = alloy__pagemap_get(old);
	alloy__pagemap_set((uintptr_t)old, old_len, 0);
	alloy__pagemap_set((uintptr_t)p, len, tag);
}
