/* SPDX-License-Identifier: MIT */
/*
 * analysis/trace.h - reading alloy traces (docs/TRACE-FORMAT.md, versions 1
 * to 4), summing them up and replaying them against an allocator.
 */
#ifndef ALLOY_ANALYSIS_TRACE_H
#define ALLOY_ANALYSIS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <alloy/alloy.h>

#include "reporter/trace_format.h"

/* The newest version it knows is TRACE_VERSION; it reads 1 as well. */
#define TRACE_MAX_SERIES 64
/*
 * The largest SIZE: alloy_alloc makes blocks up to 2^62 bytes, and
 * alloy_reporter_note_alloc() takes blocks up to INT64_MAX.
 */
#define TRACE_MAX_SIZE ((uint64_t)INT64_MAX)
/* An event's stack when its id was never declared (a cut stack table). */
#define TRACE_STACK_MISSING UINT32_MAX

/*
 * One event.  A free carries what its allocation had (size, series,
 * alignment, stack, owner), filled in by the reader.
 */
struct trace_event {
	uint64_t t_ns; /* monotone: the reader keeps the running maximum */
	uint64_t block;
	uint64_t size;
	uint32_t stack;	 /* node id, 0: none recorded */
	uint32_t owner;	 /* owner id, 0: none */
	uint32_t align;	 /* a power of two */
	uint32_t thread; /* index into trace.threads */
	uint16_t series; /* index into trace.series (alloc and free only) */
	char op;	 /* enum trace_op */
};

/* One (allocator, device) pair seen in the trace. */
struct trace_series {
	char allocator[ALLOY_NAME_MAX + 1];
	char device[24];
};

/* An executable segment of a loaded object ("M" records). */
struct trace_module {
	uint64_t start, end, offset;
	char build_id[41]; /* hex, "" when the object had none */
	char *path;
};

/*
 * A node of the stack tree ("s" records): a frame (a return address) and
 * the node of its callers.  module is the index + 1 of the module that
 * held the frame when the node was declared, 0 when none did.
 */
struct trace_node {
	uint64_t frame;	 /* an interpreted frame's ("p" records): its line */
	uint32_t parent; /* 0: outermost; TRACE_STACK_MISSING: not declared */
	uint32_t module;
	uint32_t code; /* an interpreted frame: its function's id, else 0 */
	bool defined;
};

/* An interpreted function ("c" records, version 4). */
struct trace_code {
	char *function, *file; /* NULL: never declared */
};

/* A sample of the process's memory ("r" records, version 3). */
struct trace_mem {
	uint64_t t_ns;
	uint64_t resident, mapped; /* bytes */
};

struct trace {
	int version;
	long pid;
	/*
	 * The writer's CLOCK_MONOTONIC at the trace's time 0 ("start" in the
	 * header), which puts traces of several processes on one time line,
	 * and the process's name ("comm"); has_start false, comm "" where the
	 * header has none.
	 */
	bool has_start;
	uint64_t start_ns;
	char comm[32];
	struct trace_event *ev;
	size_t nev, cap;
	struct trace_series series[TRACE_MAX_SERIES];
	size_t nseries;
	bool complete;	 /* ended with an "end" record */
	bool incomplete; /* its writer marked it incomplete (write error) */
	bool compressed; /* the file is zstd-compressed */
	bool cut;	 /* compressed, and its data ends inside a frame */
	uint64_t lost;	 /* lines the writer lost, from that mark */
	uint64_t end_ns; /* time of the end record, or of the last event */
	size_t lines;
	long *threads; /* kernel thread ids */
	size_t nthreads;
	struct trace_node *nodes; /* by id; nodes[0] unused */
	size_t nnodes;		  /* ids below this */
	char **owners;		  /* by id; owners[0] unused */
	size_t nowners;
	struct trace_module *modules;
	size_t nmodules;
	struct trace_code *codes; /* by id; codes[0] unused */
	size_t ncodes;
	/* Resident memory samples, in time order, and their highest. */
	struct trace_mem *mem;
	size_t nmem, memcap;
	uint64_t peak_resident, peak_resident_t_ns, peak_mapped;
	/* References to things the trace never declared (see the docs). */
	uint64_t missing_stacks, missing_parents, missing_owners;
	/*
	 * The summary of the first `summed` events, kept by the reader as it
	 * adds them (trace_summarize then copies it); NULL in a trace built
	 * by hand.
	 */
	struct trace_summary *sum;
	size_t summed;
	uint64_t sum_all, sum_t; /* its live bytes and latest time */
	/* Each series' device, as the first series on that device. */
	uint8_t dev_first[TRACE_MAX_SERIES];
	size_t ndev_first; /* series mapped so far */
};

/*
 * Read a whole trace.  0 on success; otherwise -1 and err holds
 * "PATH:LINE: (byte OFFSET) what is wrong".  A trace without its end
 * record (the program died) is read up to its last complete line and
 * tr->complete is false; a line cut in the middle is an error, except in
 * a compressed trace cut inside a frame, which ends at its last whole
 * line (tr->cut).  A file starting with zstd's magic is decompressed as
 * it is read.  progress
 * (may be NULL) is called now and then with the fraction read.
 */
int trace_read_progress(const char *path, struct trace *tr, char *err,
			size_t errlen, void (*progress)(void *arg, double done),
			void *arg);
int trace_read(const char *path, struct trace *tr, char *err, size_t errlen);
void trace_free(struct trace *tr);

/* The stack of an event, as it should be shown: 0 none, else a node. */
static inline bool trace_stack_known(uint32_t stack)
{
	return stack && stack != TRACE_STACK_MISSING;
}

struct trace_series_sum {
	uint64_t allocs, frees, total_bytes;
	uint64_t peak_bytes, peak_t_ns;
	uint64_t live_bytes, live_blocks; /* at the end: leaks */
};

struct trace_summary {
	struct trace_series_sum s[TRACE_MAX_SERIES];
	struct trace_series_sum all;
	uint64_t unknown_frees, double_frees;
	uint64_t duration_ns;
	size_t peak_event; /* the event that made the overall peak */
	/*
	 * Per device, under the index of the first series on it
	 * (trace.dev_first): the live bytes at the end, the highest, and the
	 * event that first reached it (valid where dev_peak is not 0).
	 */
	uint64_t dev_live[TRACE_MAX_SERIES], dev_peak[TRACE_MAX_SERIES];
	size_t dev_peak_event[TRACE_MAX_SERIES];
};

void trace_summarize(const struct trace *tr, struct trace_summary *sum);

struct replay_result {
	double seconds; /* the allocator's work only */
	/* Requested: the bytes the trace's allocations asked for. */
	uint64_t peak_live; /* highest sum of live requested bytes */
	uint64_t end_live;  /* live when the trace ends */
	/*
	 * Usable: what the allocator handed out for them, its size-class
	 * rounding included (its usable_size op; the requested size where
	 * it has none).  Counted only with REPLAY_USABLE.
	 */
	bool have_usable; /* counted, and the allocator has the op */
	uint64_t peak_usable, end_usable;
	uint64_t allocs, frees;
	/* Reserved: held from the system, caches included (its stats op). */
	bool have_stats;
	uint64_t max_reserved;		  /* sampled along the way */
	struct alloy_allocator_stats end; /* before the leftovers are freed */
};

/* Ask the allocator each block's usable size (a call per allocation). */
#define REPLAY_USABLE 1u

/*
 * Replay every alloc and free of tr against a, in order.  sum is tr's
 * summary when the caller has it (replays of one trace share it), else
 * NULL.  flags: 0 or REPLAY_USABLE.  progress (may be NULL) is called
 * now and then with the events done so far.  0, or a negative errno
 * with the library's message set.
 */
int trace_replay(const struct trace *tr, const struct trace_summary *sum,
		 struct alloy_allocator *a, unsigned flags,
		 struct replay_result *r,
		 void (*progress)(void *arg, size_t done, size_t total),
		 void *arg);

/* Lines written beside the picture: the peak's top sites and owners. */
struct timeline_notes {
	size_t n;
	char text[14][160];
};

/* The columns of the timeline picture (one per pixel of its x axis). */
#define TIMELINE_COLUMNS 688
/* Where they start, in the picture's coordinates. */
#define TIMELINE_LEFT 92

/* A round step (1, 2 or 5 times a power of ten) giving about n ticks. */
double timeline_nice_step(double range, int n);
/* The picture's <svg> element opened, white, with its title. */
void timeline_svg_open(FILE *out, int w, int h, const char *title,
		       bool standalone);
/*
 * The time axis's grid lines from top to bottom over the columns, each
 * with its time in ms at label_y, for a picture of dur_ns.
 */
void timeline_time_grid(FILE *out, double dur_ns, int top, int bottom,
			int label_y);
/* The notes as SVG lines from (x, y) down, none below ymax. */
void timeline_notes_svg(FILE *out, const struct timeline_notes *notes, int x,
			int y, int ymax);

/*
 * Write the timeline picture of tr as a standalone SVG document; notes
 * (may be NULL) go under the legend.  standalone false leaves out the
 * XML declaration, for a picture inside a page.
 */
void trace_timeline_svg(FILE *out, const struct trace *tr,
			const struct trace_summary *sum,
			const struct timeline_notes *notes, bool standalone);

/*
 * A map from block id (never 0) to a 64-bit value, open addressing with
 * linear probing: the reader's set of live blocks, replay's DataPtrs.
 */
struct blockmap_slot {
	uint64_t id; /* 0: empty */
	uint64_t value;
};

struct blockmap {
	struct blockmap_slot *slots;
	size_t cap, used;
};

struct blockmap_slot *blockmap_find(struct blockmap *m, uint64_t id);
/* 0, -EEXIST (id present, unchanged) or -ENOMEM. */
int blockmap_insert(struct blockmap *m, uint64_t id, uint64_t value);
/* Remove a slot blockmap_find returned. */
void blockmap_remove(struct blockmap *m, struct blockmap_slot *slot);
void blockmap_free(struct blockmap *m);

/* "4.56 MiB" */
const char *trace_human_bytes(uint64_t n, char *buf, size_t len);

#endif /* ALLOY_ANALYSIS_TRACE_H */
