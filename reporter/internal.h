/* SPDX-License-Identifier: MIT */
/*
 * reporter/internal.h - what the files of the reporter share.
 *
 * reporter.c   enable/disable, the hooks, per-(allocator, device) counters
 * ptrtable.[ch] the sharded table of live blocks (hot path inline in .h)
 * stream.c     bounded, line-buffered output for the trace and event log
 * print.c      the summary and leak report in text or JSON
 */
#ifndef ALLOY_REPORTER_INTERNAL_H
#define ALLOY_REPORTER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <alloy/reporter.h>

#include "core/internal.h"
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

#define REP_MAX_FRAMES 16

struct rep_block {
	uintptr_t ptr; /* 0: empty slot */
	uint64_t size;
	uint16_t entry;	  /* index into alloy__rep_entries */
	uint16_t nframes; /* allocation site, with backtrace:1 */
	uint32_t align;
	void **frames;
};

/* Every shard's lock, in order (around fork). */
ALLOY_HIDDEN void alloy__ptrtable_lock_all(void);
ALLOY_HIDDEN void alloy__ptrtable_unlock_all(void);

/* No live block in any shard (each looked at under its lock). */
ALLOY_HIDDEN bool alloy__ptrtable_empty(void);

/*
 * Call fn for each live block, one shard locked at a time, until it
 * returns non-zero.
 */
ALLOY_HIDDEN int alloy__ptrtable_foreach(int (*fn)(const struct rep_block *b,
						   void *arg),
					 void *arg);

/* ---- output streams (stream.c) ------------------------------------- */

/*
 * A file written in whole lines through a bounded buffer.  Lines are
 * appended under the stream's lock and the buffer is written out when
 * it is full, when flush_ns has passed since the last write, or on
 * request, so the file always ends in a complete line.
 */
struct rep_stream {
	pthread_mutex_t lock;
	int fd;		 /* -1: closed */
	bool own_fd;	 /* opened by us (not stderr/stdout) */
	bool line_flush; /* write every line at once (terminals, stderr) */
	char *buf;
	size_t len, cap;
	uint64_t last_flush_ns;
	uint64_t flush_ns;
	uint64_t lines;
	int error; /* first write error (negative errno), or 0 */
};

/*
 * "stderr", "stdout" or a path (truncated).  0 or -errno + message.  The
 * lock must already be initialised (statically: it is held across fork).
 */
ALLOY_HIDDEN int alloy__stream_open(struct rep_stream *s, const char *where,
				    size_t cap);
/* Append one line (without its '\n'); now_ns drives the periodic flush. */
ALLOY_HIDDEN void alloy__stream_line(struct rep_stream *s, const char *line,
				     size_t len, uint64_t now_ns);
ALLOY_HIDDEN int alloy__stream_flush(struct rep_stream *s);
ALLOY_HIDDEN void alloy__stream_close(struct rep_stream *s);

/* Monotonic nanoseconds. */
ALLOY_HIDDEN uint64_t alloy__rep_now_ns(void);

/* ---- printing (print.c) --------------------------------------------- */

/* Format the device as "cpu:0" into buf. */
ALLOY_HIDDEN const char *alloy__rep_device_str(struct alloy_device d, char *buf,
					       size_t len);


#endif /* ALLOY_REPORTER_INTERNAL_H */
