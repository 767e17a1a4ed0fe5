/* SPDX-License-Identifier: MIT */
/*
 * alloy/reporter.h - accounting of every allocation made through alloy.
 *
 * When the reporter is on (ALLOY_CONF=report:..., log:..., trace:..., or
 * alloy_reporter_enable()), each block made by alloy_alloc is recorded
 * with its size, allocator and device, and its free is accounted from
 * that record, so callers never need to pass the size back.  Counters are
 * kept per allocator and device: current, peak and total bytes, allocation
 * and free counts and live blocks.
 *
 * Peaks are exact: current bytes are one atomic per (allocator, device)
 * plus one for the whole process, raised with fetch-add and a
 * compare-and-swap maximum.  Counts and totals are per thread and summed
 * on read.  See docs/REPORTER.md.
 */
#ifndef ALLOY_REPORTER_H
#define ALLOY_REPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <alloy/allocator.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Distinct (allocator, device) pairs the reporter can tell apart. */
#define ALLOY_REPORTER_MAX_ENTRIES 64

struct alloy_reporter_counts {
	uint64_t current_bytes; /* live bytes now */
	uint64_t peak_bytes;	/* highest current_bytes since reset */
	uint64_t total_bytes;	/* bytes ever allocated */
	uint64_t allocs;	/* allocations */
	uint64_t frees;		/* frees */
	uint64_t live_blocks;	/* allocs - frees */
};

struct alloy_reporter_entry {
	char allocator[ALLOY_NAME_MAX + 1];
	struct alloy_device device;
	struct alloy_reporter_counts c;
};

/*
 * A snapshot.  Set size = sizeof(struct alloy_reporter_snapshot) and
 * version = ALLOY_REPORTER_SNAPSHOT_VERSION before the call; the library
 * fills at most size bytes, so callers built against an older header
 * still work.
 */
struct alloy_reporter_snapshot {
	uint32_t size;
	uint32_t version;
	uint32_t enabled;	  /* 1 while recording */
	uint32_t nentries;	  /* valid entries[] */
	uint64_t unknown_frees;	  /* note_free of pointers never seen */
	uint64_t double_frees;	  /* note_free of pointers freed already */
	uint64_t untracked_frees; /* frees of blocks made while off */
	struct alloy_reporter_counts total; /* over all entries */
	struct alloy_reporter_entry entries[ALLOY_REPORTER_MAX_ENTRIES];
};
#define ALLOY_REPORTER_SNAPSHOT_VERSION 1

/* A snapshot with its header filled, ready to pass. */
#define ALLOY_REPORTER_SNAPSHOT_INIT                            \
	((struct alloy_reporter_snapshot){                      \
		.size = sizeof(struct alloy_reporter_snapshot), \
		.version = ALLOY_REPORTER_SNAPSHOT_VERSION })

/*
 * Start recording.  Blocks made before stay unknown to the reporter and
 * their frees are not counted.  Returns 0 or a negative errno.
 */
int alloy_reporter_enable(void);

/*
 * Stop recording new blocks.  Blocks recorded earlier are still accounted
 * when freed, so current bytes return to where they were.
 */
int alloy_reporter_disable(void);

bool alloy_reporter_enabled(void);

/* Fill *snap (see its comment).  0, or -EINVAL with the message set. */
int alloy_reporter_snapshot(struct alloy_reporter_snapshot *snap);

/* Set every peak to the current value. */
void alloy_reporter_reset_peaks(void);

/*
 * Memory that did not come through alloy_alloc (a caller's own buffers)
 * may be reported by hand: note_alloc records ptr under allocator name
 * "external" on device dev (nothing while the reporter is off),
 * note_free accounts it.  While recording, note_free of a pointer the
 * reporter does not know is counted as unknown (or as a double free when
 * the pointer was freed recently) and returns -ENOENT (-EALREADY for a
 * double free); it never crashes.  While off, such a call does nothing.
 */
int alloy_reporter_note_alloc(const void *ptr, size_t size,
			      struct alloy_device dev);
int alloy_reporter_note_free(const void *ptr);

enum alloy_report_format {
	ALLOY_REPORT_TEXT = 0,
	ALLOY_REPORT_JSON = 1,
};

/*
 * Write the summary table (and, with leaks set, the list of live blocks)
 * through write(arg, text), as jemalloc's malloc_stats_print does.  write
 * NULL means stderr.
 */
int alloy_reporter_print(void (*write)(void *arg, const char *text), void *arg,
			 enum alloy_report_format format, bool leaks);

enum alloy_reporter_group_by {
	ALLOY_REPORTER_BY_SITE = 0,  /* the innermost frame of the call stack */
	ALLOY_REPORTER_BY_OWNER = 1, /* the owner label (alloy/owner.h) */
};

struct alloy_reporter_group {
	uint64_t bytes;	 /* live bytes now */
	uint64_t blocks; /* live blocks now */
	char label[256]; /* the owner's label or the site's frame */
};

/*
 * The live blocks now, grouped by site or by owner: fills at most n
 * groups, those holding the most bytes first, and returns how many, 0
 * while the reporter is off, or -EINVAL / -ENOMEM.  Blocks without a call
 * stack (backtrace off) or without an owner make one group, labelled so.
 * It walks every live block: for live views, not for a hot path.
 */
int alloy_reporter_top(enum alloy_reporter_group_by by,
		       struct alloy_reporter_group *groups, size_t n);

/* Flush the trace and event log to their files now. */
int alloy_reporter_flush(void);

/*
 * Record each block's call stack (as ALLOY_CONF's backtrace:1 does) from
 * now on, or stop.  -ENOTSUP when alloy was built without libunwind.
 */
int alloy_reporter_set_backtrace(bool on);

/*
 * Write a trace (docs/TRACE-FORMAT.md) to path from now on (%p is the
 * process id), as ALLOY_CONF's trace:PATH does from the start; the
 * reporter is enabled if it was not.  Blocks live at this moment open
 * the trace, as allocated at its time 0.  0, -EBUSY while a trace is
 * written already, or -errno when the file cannot be opened.
 * alloy_reporter_trace_stop writes the end record and closes it (else
 * exit does): 0, -ENOENT when no trace is written, or the first write
 * error (the trace is then marked incomplete).
 */
int alloy_reporter_trace_start(const char *path);
int alloy_reporter_trace_stop(void);

/*
 * Frames of an interpreter in the call stacks (docs/REPORTER.md,
 * "Interpreted frames").  A source is an interpreter's reader of its own
 * frame chain: with backtrace on, each native frame in [eval_start,
 * eval_end) (the interpreter's evaluation loop) is replaced in the stack
 * by the interpreted frames that call of the loop ran.
 *
 * capture() runs inside an allocation: it may read memory and must not
 * allocate, take a lock another allocation may wait on, or run
 * interpreted code.  It writes the calling thread's interpreted frames,
 * innermost first, as keys (nonzero, below ALLOY_REPORTER_FRAME_ENTRY),
 * the last frame of each call of the evaluation loop or'ed with
 * ALLOY_REPORTER_FRAME_ENTRY, and returns how many (0: none).
 * describe() names a key for a report or a trace: any thread, any time
 * after capture() gave the key, with the reporter's locks held; it must
 * not allocate either.  code is a small id (1, 2, ...) shared by the
 * keys of one function; function and file stay valid for the process's
 * life.  0, or -ENOENT for a key it does not know.
 */
#define ALLOY_REPORTER_FRAME_ENTRY ((uint64_t)1 << 62)

struct alloy_reporter_frame_info {
	uint32_t code; /* the function's id, 1, 2, ... */
	uint32_t line; /* 0: unknown */
	const char *function;
	const char *file;
};

struct alloy_reporter_frame_source {
	size_t size; /* sizeof(struct alloy_reporter_frame_source) */
	uintptr_t eval_start, eval_end;
	int (*capture)(uint64_t *keys, int max);
	int (*describe)(uint64_t key, struct alloy_reporter_frame_info *info);
};

/*
 * Install src (static storage: it stays in use) or, with NULL, remove
 * the source.  Frames are merged only with backtrace on and the
 * python_frames setting true.  0, or -EINVAL for a bad struct.
 */
int alloy_reporter_set_frame_source(
	const struct alloy_reporter_frame_source *src);

/*
 * Leaks of a long-running program: a mark is a point in its run;
 * blocks recorded after it carry it.  alloy_reporter_mark() starts a new
 * one and returns it (1, 2, ...).  alloy_reporter_live_since() groups
 * the blocks recorded since mark (0: all) and live now by the
 * interpreted frames of their stack (the innermost
 * ALLOY_REPORTER_LINE_FRAMES, with their lines; nframes 0: blocks
 * without one), the most bytes first, into out[0, max): the number of
 * groups there are (more than max: the largest max written), or -errno.
 */
#define ALLOY_REPORTER_LINE_FRAMES 8

struct alloy_reporter_line {
	uint64_t bytes, blocks;
	uint32_t nframes; /* innermost first */
	struct alloy_reporter_frame_info frames[ALLOY_REPORTER_LINE_FRAMES];
};

uint64_t alloy_reporter_mark(void);
int alloy_reporter_live_since(uint64_t mark, struct alloy_reporter_line *out,
			      size_t max);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_REPORTER_H */
