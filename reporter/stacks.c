// SPDX-License-Identifier: MIT
/*
 * reporter/stacks.c - where blocks were allocated: the call stack of each
 * allocation, captured with libunwind, kept once however often it recurs,
 * and the map of loaded objects that lets a report name its frames after
 * the process is gone.
 *
 * Capture.  unw_backtrace() walks the stack from the unwind tables
 * (.eh_frame), so it is complete through code built without frame
 * pointers, which is all of Debian's libraries and most programs; a
 * frame-pointer walk there loses or invents callers (docs/REPORTER.md has
 * the measurement that chose it).  It calls no malloc.  The leading
 * frames in alloy's own objects (the hook, the allocation path, the
 * tensor layer, the malloc front) are dropped, so a site starts at the
 * caller of alloy.
 *
 * The table.  Stacks share their outer frames, so they are stored as a
 * tree: a node is one frame and its parent node (the callers), and a
 * stack is the node of its innermost frame.  The trace writes each node
 * once, before its first use, as "s ID PARENT FRAME".  Two lock-free
 * indexes find things: whole stacks by a hash of all their frames (one
 * probe and a walk up the tree to confirm, on every recorded
 * allocation), and nodes by (parent, frame) (only when a stack is new,
 * under the table's lock).
 *
 * The module map is the executable segments of every loaded object, read
 * with dl_iterate_phdr(): at the start and whenever a new stack shows up
 * after objects were loaded.
 */
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#ifdef HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#include "internal.h"
#include "kernel/arena.h"
#include "kernel/unwind.h"

/* Room for alloy's own frames above the REP_MAX_FRAMES kept. */
#define CAPTURE_MAX (REP_MAX_FRAMES + 24)
#define MAX_OURS    8

static struct {
	pthread_mutex_t lock; /* new nodes, module scans */
	struct rep_vec nodes;
	struct rep_index stacks; /* hash of all frames -> innermost node */
	struct rep_index edges;	 /* hash of (parent, frame) -> node */
	struct rep_vec modules;	 /* of struct rep_module * */
	unsigned long long adds; /* dlpi_adds at the last module scan */
	int nours;
	uintptr_t ours[MAX_OURS][2]; /* alloy's own code: [start, end) */
	bool libunwind_only;	     /* unwinder:libunwind */
} S = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.nodes.elem = sizeof(struct rep_node),
	.modules.elem = sizeof(struct rep_module *),
};

/* Stacks first, then owners (owners.c), in this order everywhere. */
void alloy__rep_tables_lock(void)
{
	pthread_mutex_lock(&S.lock);
	alloy__rep_owners_lock(true);
}

void alloy__rep_tables_unlock(void)
{
	alloy__rep_owners_lock(false);
	pthread_mutex_unlock(&S.lock);
}

struct rep_node *alloy__rep_node(uint32_t id)
{
	return alloy__rep_vec_at(&S.nodes, id);
}

/* ---- the module map ------------------------------------------------- */

uint32_t alloy__rep_modules_count(void)
{
	return atomic_load_explicit(&S.modules.n, memory_order_acquire);
}

struct rep_module *alloy__rep_module(uint32_t id)
{
	return *(struct rep_module **)alloy__rep_vec_at(&S.modules, id);
}

static bool module_known(uintptr_t start, uintptr_t end, const char *path)
{
	uint32_t n = alloy__rep_modules_count();

	/* Newest first: a range reused after dlclose is a new module. */
	for (uint32_t id = n; id >= 1; id--) {
		struct rep_module *m = alloy__rep_module(id);

		if (m->start == start && m->end == end)
			return !strcmp(m->path, path);
		if (m->start < end && start < m->end)
			return false;
	}
	return false;
}

static void module_add(uintptr_t start, uintptr_t end, uintptr_t offset,
		       const char *path, const uint8_t *id, size_t id_len)
{
	size_t len = strlen(path);
	struct rep_module **slot, *m;

	if (module_known(start, end, path))
		return;
	slot = alloy__rep_vec_next(&S.modules);
	m = slot ? alloy__arena_alloc(sizeof(*m) + len + 1) : NULL;
	if (!m)
		return; /* frames there show as raw addresses */
	m->start = start;
	m->end = end;
	m->offset = offset;
	m->build_id_len = (uint8_t)id_len;
	memcpy(m->build_id, id, id_len);
	memcpy(m->path, path, len + 1);
	*slot = m;
	alloy__rep_vec_publish(&S.modules);
}

/*
 * The GNU build id of a loaded object, from its notes in memory: the
 * report checks it against the file it reads, which may have been
 * rebuilt since.
 */
static size_t build_id(const struct dl_phdr_info *info, uint8_t *id)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*nh);
			const char *desc = name + ((nh->n_namesz + 3) & ~3u);

			if (desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID &&
			    nh->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
			    nh->n_descsz && nh->n_descsz <= 20) {
				memcpy(id, desc, nh->n_descsz);
				return nh->n_descsz;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	char exe[ALLOY_CONF_PATH_MAX];
	const char *path = info->dlpi_name;
	uint8_t id[20];
	size_t id_len = build_id(info, id);

	(void)size;
	(void)arg;
	if (!path || !path[0]) {
		/* The main program: named by the kernel. */
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

		exe[n > 0 ? n : 0] = '\0';
		path = exe;
	}
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		module_add(info->dlpi_addr + ph->p_vaddr,
			   info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
			   ph->p_offset, path, id, id_len);
	}
	return 0;
}

static int first_adds(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	*(unsigned long long *)arg = info->dlpi_adds;
	return 1; /* one is enough: every object carries the counter */
}

/* Under S.lock. */
static void scan_locked(bool always)
{
	unsigned long long adds = 0;

	dl_iterate_phdr(first_adds, &adds);
	if (!always && adds == S.adds)
		return;
	S.adds = adds;
	dl_iterate_phdr(scan_one, NULL);
}

void alloy__rep_modules_scan(void)
{
	pthread_mutex_lock(&S.lock);
	scan_locked(true);
	pthread_mutex_unlock(&S.lock);
}

/* ---- alloy's own code ------------------------------------------------ */

/* Objects named liballoy*: the library itself and the malloc front. */
static int find_ours(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	if (!alloy__unwind_is_ours(info->dlpi_name))
		return 0;
	for (int i = 0; i < info->dlpi_phnum && S.nours < MAX_OURS; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		S.ours[S.nours][0] = info->dlpi_addr + ph->p_vaddr;
		S.ours[S.nours][1] = S.ours[S.nours][0] + ph->p_memsz;
		S.nours++;
	}
	return 0;
}

int alloy__rep_stacks_init(void)
{
	pthread_mutex_lock(&S.lock);
	if (!S.nours)
		dl_iterate_phdr(find_ours, NULL);
	S.libunwind_only = !strcmp(alloy__conf.unwinder, "libunwind");
	scan_locked(true);
	pthread_mutex_unlock(&S.lock);
	return 0;
}

/* What capturing a stack needs. */
#ifdef HAVE_LIBUNWIND
static bool ours(uintptr_t pc)
{
	for (int i = 0; i < S.nours; i++)
		if (pc >= S.ours[i][0] && pc < S.ours[i][1])
			return true;
	return false;
}

/* ---- the table ------------------------------------------------------- */

struct frames {
	const uintptr_t *f; /* innermost first */
	int n;
};

/* All 64 bits: the thread's memo compares them, the index takes the top 32. */
static uint64_t stack_hash(const struct frames *k)
{
	uint64_t h = (uint64_t)k->n;

	for (int i = 0; i < k->n; i++)
		h = alloy__rep_mix(h, k->f[i]);
	return h;
}

static uint32_t index_hash(uint64_t h)
{
	return (uint32_t)(h >> 32);
}

/* Whether node id is exactly the stack k (walking to the root). */
static bool same_stack(uint32_t id, const void *key)
{
	const struct frames *k = key;
	int i = 0;

	while (id && i < k->n) {
		const struct rep_node *nd = alloy__rep_node(id);

		if (nd->frame != k->f[i])
			return false;
		id = nd->parent;
		i++;
	}
	return !id && i == k->n;
}

struct edge {
	uint32_t parent;
	uintptr_t frame;
};

static uint32_t edge_hash(uint32_t parent, uintptr_t frame)
{
	return (uint32_t)(alloy__rep_mix(alloy__rep_mix(0, parent), frame) >>
			  32);
}

static bool same_edge(uint32_t id, const void *key)
{
	const struct edge *e = key;
	const struct rep_node *nd = alloy__rep_node(id);

	return nd->parent == e->parent && nd->frame == e->frame;
}

/* The node (parent, frame), made if new; 0 when out of room.  Locked. */
static uint32_t node_get(uint32_t parent, uintptr_t frame)
{
	struct edge e = { parent, frame };
	uint32_t h = edge_hash(parent, frame);
	uint32_t id = alloy__rep_index_find(&S.edges, h, same_edge, &e);
	struct rep_node *nd;

	if (id)
		return id;
	nd = alloy__rep_vec_next(&S.nodes);
	if (!nd)
		return 0;
	nd->frame = frame;
	nd->parent = parent;
	nd->gen = 0;
	id = alloy__rep_vec_publish(&S.nodes);
	if (alloy__rep_index_add(&S.edges, h, id))
		return 0; /* made, but never found again: a new one next time */
	return id;
}

static uint32_t stack_add(const struct frames *k, uint32_t h)
{
	uint32_t id;

	pthread_mutex_lock(&S.lock);
	id = alloy__rep_index_find(&S.stacks, h, same_stack, k);
	if (id)
		goto out;
	/* A new stack: new objects may have been loaded for it. */
	scan_locked(false);
	for (int i = k->n - 1; i >= 0; i--) {
		id = node_get(id, k->f[i]);
		if (!id)
			goto out;
	}
	if (alloy__rep_index_add(&S.stacks, h, id))
		id = 0;
out:
	pthread_mutex_unlock(&S.lock);
	return id;
}
#endif /* HAVE_LIBUNWIND */

bool alloy__rep_stacks_available(void)
{
#ifdef HAVE_LIBUNWIND
	return true;
#else
	return false;
#endif
}

#ifdef HAVE_LIBUNWIND
/*
 * What a thread keeps to capture stacks cheaply, with its record (the
 * record's stacks pointer; the walk's cache is the record's too), made at
 * its first stack: its latest stacks by hash, so that a stack the thread
 * saw lately is
 * found by one compare of its frames, without the shared index and the
 * walk up the tree that confirms a match there.  Stack ids are never
 * reused, so what the memo holds stays right for a record's next thread.
 * 64 stacks (33 KiB): enough to find most of a busy program's stacks
 * (CPython's JSON workload under the front) where fewer miss often.
 */
#define MEMO_SLOTS 64

struct memo {
	uint64_t hash; /* stack_hash; 0: empty */
	uint32_t id;
	uint32_t n;
	uintptr_t f[REP_MAX_FRAMES];
};

struct thread_stacks {
	struct memo memo[MEMO_SLOTS];
};

/* The calling thread's, made on first use; NULL without a record. */
static struct thread_stacks *thread_stacks(void)
{
	struct alloy__tls *t = alloy__tls_self;

	if (!t)
		return NULL;
	if (unlikely(!t->stacks))
		t->stacks = alloy__arena_alloc(sizeof(struct thread_stacks));
	return t->stacks;
}

/*
 * The stack into buf: the tables' walk, or libunwind where it cannot;
 * *skip: how many leading frames are alloy's own.
 */
static int capture(struct thread_stacks *ts, uintptr_t *buf, int *skip)
{
	int n = ts && !S.libunwind_only
			? alloy__unwind_self(buf, CAPTURE_MAX, skip)
			: -1;

	if (n >= 0)
		return n;
	n = unw_backtrace((void **)buf, CAPTURE_MAX);
	for (*skip = 0; *skip < n && ours(buf[*skip]);)
		++*skip;
	return n;
}

static struct memo *memo_slot(struct thread_stacks *ts, uint64_t h)
{
	return &ts->memo[(h >> 24) & (MEMO_SLOTS - 1)];
}

static bool memo_holds(const struct memo *m, uint64_t h, const struct frames *k)
{
	return m->hash == h && m->n == (uint32_t)k->n &&
	       !memcmp(m->f, k->f, (size_t)k->n * sizeof(k->f[0]));
}

static void memo_keep(struct memo *m, uint64_t h, const struct frames *k,
		      uint32_t id)
{
	m->hash = h;
	m->n = (uint32_t)k->n;
	memcpy(m->f, k->f, (size_t)k->n * sizeof(k->f[0]));
	m->id = id;
}
#endif

uint32_t alloy__rep_stack_capture(void)
{
#ifdef HAVE_LIBUNWIND
	struct thread_stacks *ts = thread_stacks();
	uintptr_t buf[CAPTURE_MAX], merged[CAPTURE_MAX], *f;
	struct memo *m = NULL;
	struct frames k;
	int skip, n = capture(ts, buf, &skip), merged_n;
	bool full = n == CAPTURE_MAX;
	uint32_t id;
	uint64_t h;

	if (skip == n)
		skip = 0; /* all alloy's own: keep them rather than nothing */
	f = buf + skip;
	n -= skip;
	/* An interpreter's loop frames become the frames it ran. */
	merged_n = alloy__rep_frames_merge(f, n, merged, CAPTURE_MAX);
	if (merged_n >= 0) {
		f = merged;
		full = full || merged_n == CAPTURE_MAX;
		n = merged_n;
	}
	if (n > REP_MAX_FRAMES) {
		n = REP_MAX_FRAMES;
		f[n - 1] = REP_FRAME_MORE;
	} else if (full && n > 0) {
		f[n - 1] = REP_FRAME_MORE;
	}
	k.f = f;
	k.n = n;
	if (k.n <= 0)
		return 0;
	h = stack_hash(&k);
	if (ts) {
		m = memo_slot(ts, h);
		if (memo_holds(m, h, &k))
			return m->id;
	}
	id = alloy__rep_index_find(&S.stacks, index_hash(h), same_stack, &k);
	if (!id)
		id = stack_add(&k, index_hash(h));
	if (id && m)
		memo_keep(m, h, &k, id);
	return id;
#else
	return 0;
#endif
}
