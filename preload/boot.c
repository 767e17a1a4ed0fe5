// SPDX-License-Identifier: MIT
/*
 * preload/boot.c - the front's bootstrap allocator (see boot.h for when it
 * serves).
 *
 * One range of address space is reserved (PROT_NONE, so it costs nothing
 * until used) on the first call, and made writable a few MiB at a time as
 * blocks are carved from its bottom.  Blocks are powers of two from 32
 * bytes, each with a 16-byte header just before the user pointer that
 * gives the size asked for, the class and the distance back to the
 * block's start; freed blocks go on their class's list for reuse, and the
 * pages of large ones go back to the kernel.
 *
 * It is meant for what alloy and the loader need for themselves (a few
 * hundred KiB in an ordinary run), so it is plain: one spinlock, no
 * per-thread caches, no merging.  A spinlock because it must work before
 * anything is initialised and across fork() with nothing to set up.
 *
 * The lock is held across fork() (boot.h), and the forking thread may
 * still come here while it holds it: a pthread_atfork prepare handler
 * registered before the front's runs after it and may free a block it
 * took in its library's constructor, and a fork from a signal handler
 * may interrupt this thread inside the lock.  So while a thread forks
 * it passes the lock it holds; every other thread waits as it must.
 * Outside a fork, coming back into the lock from a signal handler is the
 * program's error, as it is with glibc's malloc, and waits forever.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>

#include "preload/boot.h"

#define MIN_SHIFT   5  /* 32-byte blocks: a header and 16 bytes */
#define MAX_SHIFT   40 /* the range is never that large anyway */
#define NCLASSES    (MAX_SHIFT - MIN_SHIFT + 1)
#define HDR	    16
#define PAGE	    ((uintptr_t)4096)
#define COMMIT_STEP ((uintptr_t)4 << 20)
#define RESERVE_MAX ((uintptr_t)16 << 30)
/*
 * Under a limit on the address space the range takes this share of it,
 * and at least RESERVE_MIN: enough for what the loader and alloy's start
 * need, and little enough that the program keeps what it had without
 * alloy.
 */
#define RESERVE_SHARE 64
#define RESERVE_MIN   ((uintptr_t)1 << 20)
#define HDR_MAGIC     0xb007ca5eu
/* Freed blocks from this size on give their pages back. */
#define RELEASE_FROM ((size_t)64 << 10)

struct boot_hdr {
	uint64_t size;	/* bytes asked for */
	uint32_t meta;	/* class << OFF_BITS | off (user - start of block) */
	uint32_t check; /* hdr_check(): 0 once freed */
};

_Static_assert(sizeof(struct boot_hdr) == HDR, "the header is 16 bytes");

#define OFF_BITS  22
#define ALIGN_MAX ((size_t)1 << (OFF_BITS - 1))

struct free_block {
	struct free_block *next;
};

/* lo starts above every address: nothing is in the range until it is. */
_Atomic uintptr_t alloy__boot_lo = UINTPTR_MAX, alloy__boot_end;
static uintptr_t range_end; /* lo + span, once reserved */

static struct {
	atomic_flag lock;
	uintptr_t bump;	     /* next free byte of the range */
	uintptr_t writable;  /* end of the part made writable */
	size_t blocks, used; /* live blocks and their block bytes */
	struct free_block *free[NCLASSES];
} B = { .lock = ATOMIC_FLAG_INIT };

/* How deep this thread is in the lock (above 1 only while forking). */
static __thread unsigned lock_held __attribute__((tls_model("initial-exec")));
/* This thread is between the prepare and the parent or child handler. */
static __thread bool forking __attribute__((tls_model("initial-exec")));

static void lock(void)
{
	if (lock_held && forking) {
		lock_held++; /* the forking thread holds it already */
		return;
	}
	while (atomic_flag_test_and_set_explicit(&B.lock, memory_order_acquire))
		sched_yield();
	lock_held = 1;
}

static void unlock(void)
{
	if (--lock_held)
		return;
	atomic_flag_clear_explicit(&B.lock, memory_order_release);
}

static inline struct boot_hdr *hdr_of(const void *user)
{
	return (struct boot_hdr *)((uintptr_t)user - HDR);
}

static inline size_t class_bytes(unsigned cls)
{
	return (size_t)1 << (cls + MIN_SHIFT);
}

/*
 * The check word ties a header to its address, so that a pointer inside
 * the range that is not a live block's start is not taken for one: an
 * allocator that itself calls malloc from inside alloy gets bootstrap
 * blocks, and alloy's own header then sits at the start of one.
 */
static inline uint32_t hdr_check(const void *user, const struct boot_hdr *h)
{
	uint64_t a = (uint64_t)(uintptr_t)user >> 4;

	return HDR_MAGIC ^ (uint32_t)a ^ (uint32_t)(a >> 32) ^ h->meta ^
	       (uint32_t)h->size ^ (uint32_t)(h->size >> 32);
}

static inline bool live(const void *user, const struct boot_hdr *h)
{
	return h->check == hdr_check(user, h);
}

static inline unsigned cls_of(const struct boot_hdr *h)
{
	return h->meta >> OFF_BITS;
}

static inline uintptr_t off_of(const struct boot_hdr *h)
{
	return h->meta & (((uint32_t)1 << OFF_BITS) - 1);
}

bool alloy__boot_live(const void *p)
{
	return live(p, hdr_of(p));
}

/*
 * How much address space to take: 16 GiB, which costs nothing, unless
 * the process has a limit on its address space, which a reservation
 * counts against: then a small share of it.
 */
static uintptr_t reserve_bytes(void)
{
	struct rlimit rl;
	uintptr_t n = RESERVE_MAX;

	if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur / RESERVE_SHARE < n)
		n = rl.rlim_cur / RESERVE_SHARE & ~(PAGE - 1);
	return n < RESERVE_MIN ? RESERVE_MIN : n;
}

/* Reserve the range; locked.  False when the kernel refuses. */
static bool reserve(void)
{
	uintptr_t n = reserve_bytes();
	void *p = mmap(NULL, n, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED)
		return false;
	B.bump = B.writable = (uintptr_t)p;
	range_end = (uintptr_t)p + n;
	/* end before lo: see boot.h. */
	atomic_store_explicit(&alloy__boot_end, range_end,
			      memory_order_relaxed);
	atomic_store_explicit(&alloy__boot_lo, (uintptr_t)p,
			      memory_order_release);
	return true;
}

/* A new block of class cls from the bottom of the range; locked. */
static void *carve(unsigned cls)
{
	size_t bytes = class_bytes(cls);
	uintptr_t align = bytes < PAGE ? bytes : PAGE;
	uintptr_t at, end;

	if (!range_end && !reserve())
		return NULL;
	at = (B.bump + align - 1) & ~(align - 1);
	if (bytes > range_end - at)
		return NULL;
	end = at + bytes;
	if (end > B.writable) {
		uintptr_t want = (end + COMMIT_STEP - 1) & ~(COMMIT_STEP - 1);

		if (want > range_end)
			want = range_end;
		if (mprotect((void *)B.writable, want - B.writable,
			     PROT_READ | PROT_WRITE))
			return NULL;
		B.writable = want;
	}
	B.bump = end;
	return (void *)at;
}

/* The class of a block of at least need bytes. */
static unsigned class_of(size_t need)
{
	unsigned shift = 64 - (unsigned)__builtin_clzl((unsigned long)need - 1);

	return shift < MIN_SHIFT ? 0 : shift - MIN_SHIFT;
}

void *alloy__boot_alloc(size_t size, size_t align, bool zero)
{
	size_t front = align > HDR ? align : HDR, need;
	struct free_block *fb;
	struct boot_hdr *h;
	uintptr_t base, user;
	unsigned cls;
	bool reused;

	if (align > ALIGN_MAX || __builtin_add_overflow(size, front, &need) ||
	    need > ((size_t)1 << MAX_SHIFT)) {
		errno = ENOMEM;
		return NULL;
	}
	cls = class_of(need);
	lock();
	fb = B.free[cls];
	reused = fb != NULL;
	if (fb)
		B.free[cls] = fb->next;
	else
		fb = carve(cls);
	if (fb) {
		B.blocks++;
		B.used += class_bytes(cls);
	}
	unlock();
	if (!fb) {
		errno = ENOMEM;
		return NULL;
	}
	base = (uintptr_t)fb;
	user = (base + HDR + front - 1) & ~(uintptr_t)(front - 1);
	h = hdr_of((void *)user);
	h->size = size;
	h->meta = (uint32_t)cls << OFF_BITS | (uint32_t)(user - base);
	h->check = hdr_check((void *)user, h);
	if (zero && reused)
		memset((void *)user, 0, size);
	return (void *)user;
}

/* Give the pages of a large free block back, all but its first. */
static void release_pages(uintptr_t base, size_t bytes)
{
	if (bytes >= RELEASE_FROM)
		madvise((void *)(base + PAGE), bytes - PAGE, MADV_DONTNEED);
}

void alloy__boot_free(void *p)
{
	struct boot_hdr *h = hdr_of(p);
	struct free_block *fb;
	unsigned cls = cls_of(h);

	if (!live(p, h) || cls >= NCLASSES)
		return; /* not a live block's start: leave it */
	h->check = 0;
	fb = (struct free_block *)((uintptr_t)p - off_of(h));
	release_pages((uintptr_t)fb, class_bytes(cls));
	lock();
	fb->next = B.free[cls];
	B.free[cls] = fb;
	B.blocks--;
	B.used -= class_bytes(cls);
	unlock();
}

size_t alloy__boot_usable(const void *p)
{
	const struct boot_hdr *h = hdr_of(p);

	return live(p, h) ? class_bytes(cls_of(h)) - off_of(h) : 0;
}

void *alloy__boot_realloc(void *p, size_t size)
{
	struct boot_hdr *h = hdr_of(p);
	void *n;

	if (!live(p, h)) {
		errno = EINVAL;
		return NULL;
	}
	if (size <= alloy__boot_usable(p)) {
		h->size = size;
		h->check = hdr_check(p, h);
		return p;
	}
	n = alloy__boot_alloc(size, HDR, false);
	if (!n)
		return NULL;
	/* Every byte malloc_usable_size promised, as glibc keeps them. */
	memcpy(n, p, alloy__boot_usable(p));
	alloy__boot_free(p);
	return n;
}

void alloy__boot_usage(size_t *blocks, size_t *bytes)
{
	lock();
	*blocks = B.blocks;
	*bytes = B.used;
	unlock();
}

void alloy__boot_fork_prepare(void)
{
	forking = true;
	lock();
}

void alloy__boot_fork_parent(void)
{
	unlock();
	forking = false;
}

void alloy__boot_fork_child(void)
{
	unlock();
	forking = false;
}
