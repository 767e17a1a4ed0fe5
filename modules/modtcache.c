// SPDX-License-Identifier: MIT
/*
 * modules/modtcache.c - a backend module's per-thread cache of free
 * blocks: its state, and the paths the inline pop and push in
 * modules/modtcache.h hand over (that header has why and the rules).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <alloy/conf.h>
#include <alloy/plugin.h>

#include "allocators/freelink.h"
#include "modules/modtcache.h"

/*
 * Each thread's cache, made at its first keep (make_cache) from the
 * backend itself: a module's malloc could be alloy's own under `alloy
 * run`.  Only this pointer is thread-local, and in the static TLS block
 * (initial-exec): a load and no call, where a dlopen'ed module's dynamic
 * TLS costs a call into ld.so per lookup (_dl_tlsdesc_dynamic or
 * __tls_get_addr; 2 ns of a 9 ns pair).  Eight bytes a module fit in the
 * room glibc keeps for libraries dlopen'ed with such variables
 * (libmimalloc's and liballoy's are there too).  UNBORN until the first
 * keep, RETIRED after the thread's exit handler (its last frees go to
 * the backend then): two caches that keep nothing, never NULL, so that
 * the inline paths need no test for a thread without a cache.  The
 * initial value is a relocated pointer in the TLS image, which the
 * dynamic linker relocates before it copies the image into the threads
 * that exist when the module is loaded.
 */
/* An initializer, not a block of code: kept on one line. */
/* clang-format off */
#define FULL_AND_EMPTY { .count = { [0 ... MTCACHE_BINS - 1] = UCHAR_MAX } }
/* clang-format on */
/* Full everywhere (no count is below a depth) and empty: keep nothing. */
static const struct mtcache keeps_nothing[2] = { FULL_AND_EMPTY,
						 FULL_AND_EMPTY };
#define UNBORN	((struct mtcache *)&keeps_nothing[0])
#define RETIRED ((struct mtcache *)&keeps_nothing[1])

__thread struct mtcache *mtcache_self
	__attribute__((tls_model("initial-exec"))) = UNBORN;

/* Whether c is a cache of the thread's own, not a sentinel. */
static bool owned(const struct mtcache *c)
{
	return c != UNBORN && c != RETIRED;
}

struct mtcache_tables mtcache_tables;
/* Set by mtcache_init; until then every link fails its check. */
struct freelink_key mtcache_link_key = { UINTPTR_MAX, FREELINK_HIGH };

static struct mtcache_backend backend;
static pthread_key_t exit_key;
static atomic_bool have_key;
static _Atomic unsigned long long bad_links;

/* The bytes every block of list b holds: its class. */
static inline size_t bin_bytes(size_t b)
{
	return qclass_bytes(b, MTCACHE_LG_MIN);
}

static void set_depth(unsigned n)
{
	for (size_t b = 0; b < MTCACHE_BINS; b++) {
		size_t most = 1 + MTCACHE_BIN_BYTES / bin_bytes(b);

		atomic_store_explicit(&mtcache_tables.depth[b],
				      (unsigned char)(n < most ? n : most),
				      memory_order_relaxed);
	}
}

/*
 * The block after p in list b, or NULL where the link p holds is not one
 * the cache wrote (allocators/freelink.h): the list ends at p then, and
 * the blocks after it are dropped.
 */
static __attribute__((noinline, cold)) void *bad_link(void *p, size_t b)
{
	freelink_report(&bad_links, backend.name, p, bin_bytes(b));
	return NULL;
}

static void *next_of(void *p, size_t b)
{
	void *next = freelink_get(p, &mtcache_link_key);

	return freelink_ok(next, MTCACHE_KEEP_ALIGN) ? next : bad_link(p, b);
}

/*
 * A request the head of list b did not serve: no cache, an empty list or
 * a misaligned head get a new block of the class; a head whose link
 * failed its check (bad_head) is handed out, and the list ends there.
 */
void *mtcache_alloc_slow(struct mtcache *c, size_t b, size_t align,
			 bool bad_head)
{
	void *head = c->head[b];

	if (!bad_head)
		return backend.make(bin_bytes(b), align, false);
	bad_link(head, b);
	c->head[b] = NULL;
	c->count[b] = 0;
	return head;
}

void *mtcache_alloc_zeroed(void *ctx, size_t size, size_t align)
{
	void *p = mtcache_alloc(size, align, 0);

	(void)ctx;
	return p ? memset(p, 0, size) : NULL;
}

static void flush(struct mtcache *c)
{
	if (!owned(c))
		return;
	for (size_t b = 0; b < MTCACHE_BINS; b++) {
		for (void *p = c->head[b], *next; p; p = next) {
			next = next_of(p, b);
			backend.release(p, bin_bytes(b));
		}
		c->head[b] = NULL;
		c->count[b] = 0;
	}
}

/* Give back a cache and the blocks it keeps; the thread keeps no more. */
static void retire(struct mtcache *c)
{
	flush(c);
	mtcache_self = RETIRED;
	backend.release(c, sizeof(*c));
}

/* At thread exit: a later destructor's frees go to the backend. */
static void thread_exit(void *arg)
{
	retire(arg);
}

/*
 * The calling thread's first keep: a cache, and the exit key set to
 * empty it.  NULL if either fails: the thread keeps nothing then.
 */
static struct mtcache *make_cache(void)
{
	struct mtcache *c;

	if (!atomic_load_explicit(&have_key, memory_order_relaxed))
		return NULL;
	c = backend.make(sizeof(*c), MTCACHE_KEEP_ALIGN, true);
	if (!c)
		return NULL;
	if (pthread_setspecific(exit_key, c)) {
		backend.release(c, sizeof(*c));
		mtcache_self = RETIRED;
		return NULL;
	}
	mtcache_self = c;
	return c;
}

/*
 * A free the inline path turned away: the thread's first keep (make its
 * cache), or a block to give back.
 */
void mtcache_free_slow(struct mtcache *c, void *p, size_t b)
{
	unsigned depth = atomic_load_explicit(&mtcache_tables.depth[b],
					      memory_order_relaxed);

	if ((uintptr_t)p % MTCACHE_KEEP_ALIGN == 0 && depth) {
		if (c == UNBORN)
			c = make_cache();
		if (c && c->count[b] < depth) {
			mtcache_push(c, p, b);
			return;
		}
	}
	backend.release(p, bin_bytes(b));
}

int mtcache_init(const struct mtcache_backend *be)
{
	int rc;

	/* Each size's row gets its class. */
	for (size_t size = MTCACHE_MIN; size <= MTCACHE_MAX; size++)
		mtcache_tables.bin_of[mtcache_row(size)] =
			(unsigned char)qclass_of(size, MTCACHE_LG_MIN);
	backend = *be;
	mtcache_link_key = freelink_key();
	rc = pthread_key_create(&exit_key, thread_exit);
	if (rc) {
		set_depth(0);
		return -rc;
	}
	set_depth(MTCACHE_DEPTH_DEFAULT);
	atomic_store(&have_key, true);
	return 0;
}

void mtcache_fini(void)
{
	struct mtcache *c = mtcache_self;

	if (owned(c))
		retire(c);
	mtcache_self = UNBORN;
	if (atomic_exchange(&have_key, false))
		pthread_key_delete(exit_key);
}

int mtcache_option(const char *module, const char *value)
{
	uint64_t n;

	if (alloy_parse_size(value, &n) || n > MTCACHE_DEPTH_MAX)
		return alloy_plugin_error(
			-ERANGE,
			"%s: thread_cache \"%s\" must be a count of blocks "
			"per size, 0 to %d (0: no cache)",
			module, value, MTCACHE_DEPTH_MAX);
	set_depth((unsigned)n);
	return 0;
}

void mtcache_flush_self(void)
{
	flush(mtcache_self);
}
