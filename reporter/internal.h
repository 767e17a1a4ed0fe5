/* SPDX-License-Identifier: MIT */
/*
 * reporter/internal.h - what the files of the reporter share.
 *
 * reporter.c   enable/disable, the hooks, per-(allocator, device) counters
 * ptrtable.[ch] the sharded table of live blocks (hot path inline in .h)
 * stacks.c     call stacks: capture, the deduplicated table, module map
 * owners.c     owner labels as small ids
 * intern.c     the lock-free tables stacks.c and owners.c are built on
 * events.c     the trace (docs/TRACE-FORMAT.md) and event log lines
 * stream.c     bounded, line-buffered output for the trace and event log
 * compress.c   a trace written through zstd (a path ending in .zst)
 * session.c    configured start, files (%p, saved stderr), fork, exit
 * print.c      the summary and leak report in text or JSON
 * symtab.c     frames named in the running process, for that report
 * frames.c     an interpreter's frames merged into the native stacks
 * since.c      blocks live now that were made after a mark, by line
 */
#ifndef ALLOY_REPORTER_INTERNAL_H
#define ALLOY_REPORTER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <alloy/reporter.h>

#include "kernel/base.h"
#include "kernel/count.h"
#include "kernel/owner.h"
#include "kernel/conf.h"
#include "reporter/start.h"

/* ---- counters per (allocator, device) ------------------------------ */

/* tcount slots of an entry, at base + REP_C_*. */
enum {
	REP_C_ALLOCS = 0,
	REP_C_FREES,
	REP_C_TOTAL,
	REP_C_UNPUB, /* bytes this thread has not added to pub yet */
	REP_C_COUNT
};

/*
 * Current bytes = pub + the sum of every thread's REP_C_UNPUB.  A thread
 * adds its share to pub (one atomic add) when it could make a new peak,
 * or when its share passes +-REP_SLACK; otherwise it only writes its own
 * slot.  See docs/REPORTER.md for what that means for peaks.
 */
struct rep_counter {
	_Alignas(64) _Atomic int64_t pub;
	_Atomic int64_t peak;
	int slot; /* the REP_C_UNPUB tcount slot */
};

#define REP_SLACK (256 * 1024)

/*
 * A counter's current bytes while threads change it.  They are pub plus
 * every thread's unpublished share, and the two are read one after the
 * other.  A thread that publishes in between moves its share into pub:
 * the reader has pub from before and the share from after (zero), and
 * misses those bytes.  With another thread's free still unpublished the
 * result is negative, which an unsigned report shows as about 2^64 and
 * which then became the peak.  So pub is read again after the sum and
 * the read is retried while it moved; a read that never settles is only
 * an estimate: clamped to 0, and not to be taken as a new peak.  The sum
 * is a parameter so that the test suite can move pub under it.
 */
#define REP_CURRENT_TRIES 4

/*
 * pub + sum(slot), never negative.  *settled: pub did not move during
 * the sum (a publish and one that undoes it in between go unseen).
 */
static inline int64_t alloy__rep_current_read(const _Atomic int64_t *pub,
					      int64_t (*sum)(int slot),
					      int slot, bool *settled)
{
	int64_t p, v = 0;

	*settled = false;
	for (int i = 0; i < REP_CURRENT_TRIES && !*settled; i++) {
		p = atomic_load(pub);
		v = p + sum(slot);
		*settled = atomic_load(pub) == p;
	}
	return v < 0 ? 0 : v;
}

struct rep_entry {
	_Atomic uint64_t key; /* 0: unused; see entry_key() in reporter.c */
	atomic_bool ready;    /* name, device and slots are valid */
	int slots;	      /* first tcount slot */
	struct alloy_device device;
	char name[ALLOY_NAME_MAX + 1];
	struct rep_counter bytes;
};

/* The entries, indexed by the number ptrtable records carry. */
extern ALLOY_HIDDEN struct rep_entry
	alloy__rep_entries[ALLOY_REPORTER_MAX_ENTRIES];

/* Read the counts of one entry (sums over threads). */
ALLOY_HIDDEN void alloy__rep_entry_counts(const struct rep_entry *e,
					  struct alloy_reporter_counts *c);

/* ---- the table of live blocks (ptrtable.c) -------------------------- */

struct rep_block {
	uintptr_t ptr; /* 0: empty slot */
	uint64_t size;
	uint8_t entry;	     /* index into alloy__rep_entries */
	uint8_t align_shift; /* log2 of the alignment; REP_ALIGN_BIG: past 2^31
			      */
	uint32_t mark;	     /* the mark in force when it was made (since.c) */
	uint32_t stack;	     /* allocation site (stacks.c), 0: none */
	uint32_t owner;	     /* owner label (owners.c), 0: none */
};

_Static_assert(ALLOY_REPORTER_MAX_ENTRIES <= 256, "entry is 8 bits");
#define REP_ALIGN_BIG 255

/* The block's alignment as a record holds it: 0 for one past 2^31. */
static inline uint32_t alloy__rep_block_align(const struct rep_block *b)
{
	return b->align_shift == REP_ALIGN_BIG ? 0
					       : (uint32_t)1 << b->align_shift;
}

/*
 * The mark blocks are made under (since.c): alloy_reporter_mark() moves
 * it on; read on every recorded allocation.
 */
extern ALLOY_HIDDEN _Atomic uint32_t alloy__rep_mark;

/* Every shard's lock, in order (around fork). */
ALLOY_HIDDEN void alloy__ptrtable_lock_all(void);
ALLOY_HIDDEN void alloy__ptrtable_unlock_all(void);

/* No live block in any shard (each looked at under its lock). */
ALLOY_HIDDEN bool alloy__ptrtable_empty(void);

/*
 * Call fn for each live block, one shard locked at a time, until it
 * returns non-zero.  The _locked one is for a caller holding them all.
 */
ALLOY_HIDDEN int alloy__ptrtable_foreach(int (*fn)(const struct rep_block *b,
						   void *arg),
					 void *arg);
ALLOY_HIDDEN int
alloy__ptrtable_foreach_locked(int (*fn)(const struct rep_block *b, void *arg),
			       void *arg);

/* ---- live blocks grouped by site or owner (group.c) ------------------ */

#define REP_GROUP_NONE UINT64_MAX /* the key of blocks without one */

enum rep_group_by {
	REP_BY_STACK, /* the whole call stack */
	REP_BY_FRAME, /* its innermost frame: one line of a live view */
	REP_BY_OWNER,
};

struct rep_group {
	uint64_t key; /* a stack id, frame or owner id, REP_GROUP_NONE; 0: empty
		       */
	uint64_t bytes, blocks;
};

struct rep_groups {
	struct rep_group *g; /* n groups, the k largest first */
	size_t n;
	uint64_t bytes, blocks; /* over every group */
	size_t room;		/* bytes of g, from the arena */
};

/*
 * Group the live blocks, the k holding the most bytes first: 0, or
 * -ENOMEM.  Free the result with alloy__rep_groups_free (also after a
 * failure).
 */
ALLOY_HIDDEN int alloy__rep_group_live(struct rep_groups *t,
				       enum rep_group_by by, size_t k);
ALLOY_HIDDEN void alloy__rep_groups_free(struct rep_groups *t);
/* The same of the blocks made under mark since or a later one. */
ALLOY_HIDDEN int alloy__rep_group_since(struct rep_groups *t,
					enum rep_group_by by, size_t k,
					uint32_t since);

/* ---- tables that only grow (intern.c) -------------------------------- */

/*
 * Records numbered 1, 2, ... in chunks that never move, so a record's
 * address stays valid and readers need no lock.  Records are added under
 * the owner's lock; the count is published after the record is written.
 */
#define REP_VEC_CHUNK_SHIFT 10
#define REP_VEC_CHUNKS	    16384

struct rep_vec {
	size_t elem; /* bytes per record */
	_Atomic uint32_t n;
	_Atomic(char *) chunk[REP_VEC_CHUNKS];
};

/* Record id (1..n) of v. */
static inline void *alloy__rep_vec_at(struct rep_vec *v, uint32_t id)
{
	uint32_t i = id - 1;
	char *c = atomic_load_explicit(&v->chunk[i >> REP_VEC_CHUNK_SHIFT],
				       memory_order_acquire);

	return c + (size_t)(i & ((1u << REP_VEC_CHUNK_SHIFT) - 1)) * v->elem;
}

/* A zeroed record for id n + 1 (not yet counted); NULL when full. */
ALLOY_HIDDEN void *alloy__rep_vec_next(struct rep_vec *v);
/* Count the record alloy__rep_vec_next gave; returns its id. */
ALLOY_HIDDEN uint32_t alloy__rep_vec_publish(struct rep_vec *v);

/*
 * A hash index over such records: slots hold (hash << 32 | id).  Lookups
 * take no lock (the caller checks the record each candidate id names);
 * additions are made under the owner's lock and grow the index into a
 * new array, the old one kept for readers still in it (their sizes sum
 * to less than the newest one).
 */
struct rep_slots {
	size_t cap; /* a power of two */
	size_t used;
	_Atomic uint64_t slot[];
};

struct rep_index {
	_Atomic(struct rep_slots *) cur;
};

/*
 * The first id with this hash for which same(id, key) holds, or 0.
 */
ALLOY_HIDDEN uint32_t alloy__rep_index_find(struct rep_index *x, uint32_t hash,
					    bool (*same)(uint32_t id,
							 const void *key),
					    const void *key);
/* Add id under hash (caller's lock held).  0 or -ENOMEM. */
ALLOY_HIDDEN int alloy__rep_index_add(struct rep_index *x, uint32_t hash,
				      uint32_t id);

/* A 64-bit mix of x into h (stack and label hashes). */
static inline uint64_t alloy__rep_mix(uint64_t h, uint64_t x)
{
	h ^= x;
	h *= 0x9e3779b97f4a7c15ULL;
	return h ^ (h >> 29);
}

/* ---- allocation sites: capture, table, module map (stacks.c) --------- */

/* Frames kept per block, innermost first; deeper stacks lose the outer. */
#define REP_MAX_FRAMES 64
/* The frame standing for the outer frames a deep stack lost. */
#define REP_FRAME_MORE ((uintptr_t)1)

/*
 * A stack is a path in a tree of nodes, outermost frame at the root: a
 * node is one frame and its callers (parent).  A block names the node of
 * its innermost frame.  gen is the trace generation the node was last
 * written in (read and written under the trace's lock).
 */
struct rep_node {
	uintptr_t frame;
	uint32_t parent; /* 0: outermost */
	uint32_t gen;
};

/* One executable segment of a loaded object. */
struct rep_module {
	uintptr_t start, end; /* addresses */
	uintptr_t offset;     /* file offset of start */
	uint32_t gen;	      /* as for nodes */
	uint8_t build_id_len; /* 0: none */
	uint8_t build_id[20]; /* GNU build id: the file is still this one */
	char path[];
};

/*
 * A frame of an interpreter (frames.c): REP_FRAME_INTERP or'ed with the
 * frame source's key.  Native return addresses never have the top bit.
 */
#define REP_FRAME_INTERP ((uintptr_t)1 << 63)

static inline bool alloy__rep_frame_interp(uintptr_t frame)
{
	return frame & REP_FRAME_INTERP;
}

/*
 * The native stack in[0, n) (innermost first) with each frame of the
 * installed source's evaluation loop replaced by the interpreted frames
 * that call ran, into out[0, max): their number, or -1 when there is no
 * source, python_frames is off or no interpreted frame runs.
 */
ALLOY_HIDDEN int alloy__rep_frames_merge(const uintptr_t *in, int n,
					 uintptr_t *out, int max);
/* Name an interpreted frame: 0, or -ENOENT. */
ALLOY_HIDDEN int
alloy__rep_frame_describe(uintptr_t frame,
			  struct alloy_reporter_frame_info *info);

/* Find alloy's own code (skipped at capture).  0 or -errno + message. */
ALLOY_HIDDEN int alloy__rep_stacks_init(void);
/* Whether this build can capture stacks (libunwind). */
ALLOY_HIDDEN bool alloy__rep_stacks_available(void);
/* The calling thread's stack, deduplicated: a node id, or 0. */
ALLOY_HIDDEN uint32_t alloy__rep_stack_capture(void);
ALLOY_HIDDEN struct rep_node *alloy__rep_node(uint32_t id);
/* The locks of the stack and owner tables, around fork. */
ALLOY_HIDDEN void alloy__rep_tables_lock(void);
ALLOY_HIDDEN void alloy__rep_tables_unlock(void);
/* Look for objects loaded since the last look (the module map). */
ALLOY_HIDDEN void alloy__rep_modules_scan(void);
ALLOY_HIDDEN uint32_t alloy__rep_modules_count(void);
ALLOY_HIDDEN struct rep_module *alloy__rep_module(uint32_t id);

/* ---- owner labels (owners.c) ----------------------------------------- */

struct rep_owner {
	uint32_t hash;
	uint32_t gen; /* as for nodes */
	uint32_t len;
	char label[];
};

/* The id of owner path o (not NULL), added to the table if new. */
ALLOY_HIDDEN uint32_t alloy__rep_owner_id_of(struct alloy__owner *o);

/*
 * The id of the calling thread's owner path, or 0 when it has none: the
 * common case, tested here on every recorded allocation, costs no call.
 */
static inline uint32_t alloy__rep_owner_id(struct alloy__tls *t)
{
	struct alloy__owner *o = alloy__owner_of(t);

	return likely(!o) ? 0 : alloy__rep_owner_id_of(o);
}
ALLOY_HIDDEN struct rep_owner *alloy__rep_owner(uint32_t id);
/* Take (true) or release the table's lock, around fork. */
ALLOY_HIDDEN void alloy__rep_owners_lock(bool lock);

/* ---- descriptors alloy keeps in the program (stream.c) --------------- */

/*
 * A descriptor of alloy's open in a program that does not know of it:
 * its number and the file it was opened on.  It sits high (just below
 * 1024, or below a lower soft RLIMIT_NOFILE), closed on exec, out of the
 * numbers a program picks; a program may still close it (closefrom) or
 * put a file of its own at that number (dup2), so alloy__rep_fd_ours is
 * asked before every write and close, and a descriptor that is not ours
 * any more is never written to or closed.
 */
struct rep_fd {
	int fd; /* -1: none */
	dev_t dev;
	ino_t ino;
};

/*
 * Keep fd, a descriptor alloy just opened: moved high (fd closed) where
 * a number is free there, and its file remembered.  fd < 0 keeps none.
 */
ALLOY_HIDDEN void alloy__rep_fd_keep(struct rep_fd *k, int fd);
/* Whether k->fd is open on the file it was opened on. */
ALLOY_HIDDEN bool alloy__rep_fd_ours(const struct rep_fd *k);
/* Close k->fd if it is still ours (else it is the program's); k: none. */
ALLOY_HIDDEN void alloy__rep_fd_close(struct rep_fd *k);
/*
 * Open path for writing (truncated) as a kept descriptor; 0 or -errno
 * (k: none).  abs gets the path made absolute (len bytes), for
 * alloy__rep_fd_reopen after the program changed directory; "" if it
 * does not fit.
 */
ALLOY_HIDDEN int alloy__rep_fd_open(struct rep_fd *k, const char *path,
				    char *abs, size_t len);
/*
 * Open abs (else path) to append, made if it is not there, as a kept
 * descriptor; 0 or -errno (k: none).
 */
ALLOY_HIDDEN int alloy__rep_fd_append(struct rep_fd *k, const char *path,
				      const char *abs);
/*
 * The program closed or replaced k->fd: open abs (else path) again to
 * append, only if it is still the same file.  0, or -errno (-ESTALE: a
 * different file is there now); k: none on failure.
 */
ALLOY_HIDDEN int alloy__rep_fd_reopen(struct rep_fd *k, const char *path,
				      const char *abs);

/* ---- output streams (stream.c) ------------------------------------- */

/*
 * A file written in whole lines through a bounded buffer.  Lines are
 * appended under the stream's lock and the buffer is written out when
 * it is full, when flush_ns has passed since the last write, or on
 * request, so the file always ends in a complete line.  The first write
 * error is said once on stderr; the stream then drops what comes after
 * (lost counts it) and, in a regular file, cuts off the part of the
 * buffer that made it, so that the file still ends in a whole line.
 */
struct rep_stream {
	pthread_mutex_t lock;
	struct rep_fd out; /* fd -1: closed */
	bool own_fd;	   /* opened by us (not stderr/stdout) */
	const char *std;   /* "stderr" or "stdout", or NULL: a path */
	bool line_flush;   /* write every line at once (terminals, stderr) */
	bool regular;	   /* a regular file: can be cut back after an error */
	const char *what;  /* "trace", "log": for the error message */
	char *buf;
	size_t len, cap;
	uint64_t good;	    /* bytes of the file that are whole lines */
	uint64_t pending;   /* bytes written by the write-out under way */
	struct rep_zstd *z; /* compressing (a path ending in .zst), or NULL */
	uint64_t last_flush_ns;
	uint64_t flush_ns;
	uint64_t lines;
	uint64_t lost; /* lines dropped after an error */
	int error;     /* first write error (negative errno), or 0 */
	char path[ALLOY_CONF_PATH_MAX];
	char abs_path[ALLOY_CONF_PATH_MAX + 256]; /* path, absolute */
};

/*
 * "stderr", "stdout" or a path (truncated; %p is the process id).  0 or
 * -errno + message.  The lock must already be initialised (statically:
 * it is held across fork).
 */
ALLOY_HIDDEN int alloy__stream_open(struct rep_stream *s, const char *what,
				    const char *where, size_t cap);
/* Append one line (without its '\n'); now_ns drives the periodic flush. */
ALLOY_HIDDEN void alloy__stream_line(struct rep_stream *s, const char *line,
				     size_t len, uint64_t now_ns);
/* Lock the stream for several lines; false (and unlocked) when closed. */
ALLOY_HIDDEN bool alloy__stream_begin(struct rep_stream *s);
ALLOY_HIDDEN void alloy__stream_put(struct rep_stream *s, const char *line,
				    size_t len);
ALLOY_HIDDEN void alloy__stream_end(struct rep_stream *s, uint64_t now_ns);
ALLOY_HIDDEN int alloy__stream_flush(struct rep_stream *s);
ALLOY_HIDDEN void alloy__stream_close(struct rep_stream *s);
/*
 * Append the last line (the trace's end record), under the lock taken
 * with alloy__stream_begin: tried even after a write error, since a disk
 * that has room again takes it.
 */
ALLOY_HIDDEN void alloy__stream_put_last(struct rep_stream *s, const char *line,
					 size_t len);
/* Forget the file without writing (a forked child's copy). */
ALLOY_HIDDEN void alloy__stream_drop(struct rep_stream *s);

/* ---- compressed traces (compress.c) -------------------------------- */

struct rep_zstd;

/* Whether a trace at path is written compressed: it ends in ".zst". */
ALLOY_HIDDEN bool alloy__rep_zstd_path(const char *path);
/*
 * The compressor, reset for a new file; -ENOTSUP in a build without
 * zstd, -ELIBACC when libzstd.so.1 cannot be loaded, -ENOMEM without
 * room for its workspace.
 */
ALLOY_HIDDEN int alloy__rep_zstd_begin(struct rep_zstd **z);
/*
 * Compress in[0, len) and hand every compressed byte to sink, ending a
 * block (end: the frame) so that all of it can be decompressed from the
 * file.  0, or sink's error, or -EIO.
 */
ALLOY_HIDDEN int alloy__rep_zstd_push(struct rep_zstd *z, const char *in,
				      size_t len, bool end,
				      int (*sink)(void *, const char *, size_t),
				      void *arg);

/* Monotonic nanoseconds. */
ALLOY_HIDDEN uint64_t alloy__rep_now_ns(void);

/* ---- files and the process (session.c) ------------------------------ */

/*
 * The descriptor "stderr" or "stdout" stands for, with the file it is on
 * (id): a copy made when the reporter started, so that output survives a
 * program closing its own (ls closes stderr before exit handlers run).
 * If the program closed or replaced the copy, the process's own 2 or 1
 * while it is still that file; -1 when neither is (the output is not
 * written).  Before the reporter started: 2 or 1 as they are.
 */
ALLOY_HIDDEN int alloy__rep_std_fd(const char *where, struct rep_fd *id);
/* path with %p replaced by the process id (%% by %); false if too long. */
ALLOY_HIDDEN bool alloy__rep_expand_path(char *out, size_t len,
					 const char *path);
/* The child of a started reporter: its files (reporter.c's atfork). */
ALLOY_HIDDEN void alloy__rep_session_forked(void);
/* Take (true) or release the session's lock, around fork. */
ALLOY_HIDDEN void alloy__rep_session_lock(bool lock);
/* A forked child's %p files are still to be opened (at its next event). */
ALLOY_HIDDEN bool alloy__rep_session_reopen_pending(void);
ALLOY_HIDDEN void alloy__rep_session_reopen(void);
/* One line on the saved stderr, printf-style, without malloc. */
ALLOY_HIDDEN void alloy__rep_say(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* ---- trace and event log lines (events.c) ---------------------------- */

/*
 * Open the trace at where (closing one that was open without writing to
 * it: a forked child's copy) and write its header, then every block live
 * at that moment as allocated at time 0 (those a forked child inherited,
 * or those of a trace started while the reporter runs).  note goes into
 * the header.  0 or -errno + message.
 */
ALLOY_HIDDEN int alloy__rep_trace_open(const char *where, const char *note);
/*
 * The end record (or the mark of an incomplete trace), then close;
 * 0 or the first write error.
 */
ALLOY_HIDDEN int alloy__rep_trace_close(void);
ALLOY_HIDDEN int alloy__rep_log_open(const char *where);
ALLOY_HIDDEN void alloy__rep_log_close(void);

/* The streams, for flush and fork. */
extern ALLOY_HIDDEN struct rep_stream alloy__rep_trace, alloy__rep_log;
extern ALLOY_HIDDEN atomic_bool alloy__rep_tracing, alloy__rep_logging;
/* The generation of the trace being written (each open makes one), 0: none. */
extern ALLOY_HIDDEN _Atomic uint32_t alloy__rep_trace_gen;

/*
 * One event: op 'a' and 'f' with b and e, 'u' and 'd' with ptr only;
 * traced: the trace generation when the table took or gave the block
 * (written only into that trace).
 */
ALLOY_HIDDEN void alloy__rep_emit(char op, uintptr_t ptr,
				  const struct rep_block *b,
				  const struct rep_entry *e, uint32_t traced);
/* Bytes live in every allocator now: the log's running total. */
ALLOY_HIDDEN int64_t alloy__rep_total(void);

/* ---- printing (print.c) --------------------------------------------- */

/* Format the device as "cpu:0" into buf. */
ALLOY_HIDDEN const char *alloy__rep_device_str(struct alloy_device d, char *buf,
					       size_t len);

/* How blocks live at exit appear in the exit report (leaks: key). */
enum rep_leaks { REP_LEAKS_FULL, REP_LEAKS_SUMMARY, REP_LEAKS_OFF };

ALLOY_HIDDEN int alloy__rep_print(void (*write)(void *arg, const char *text),
				  void *arg, enum alloy_report_format format,
				  enum rep_leaks leaks);

/* A frame as "function+0x12 (module)" from the running process (symtab.c). */
ALLOY_HIDDEN const char *alloy__rep_frame_str(uintptr_t frame, char *buf,
					      size_t len);

#endif /* ALLOY_REPORTER_INTERNAL_H */
