/* SPDX-License-Identifier: MIT */
/*
 * tools/trace.h - reading alloy traces (docs/TRACE-FORMAT.md), summing
 * them up and replaying them against an allocator.
 */
#ifndef ALLOY_TOOLS_TRACE_H
#define ALLOY_TOOLS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <alloy/alloy.h>

#define TRACE_VERSION	 1
#define TRACE_MAX_SERIES 64

enum trace_op {
	TRACE_ALLOC = 'a',
	TRACE_FREE = 'f',
	TRACE_UNKNOWN_FREE = 'u',
	TRACE_DOUBLE_FREE = 'd',
};

struct trace_event {
	uint64_t t_ns;
	uint64_t block;
	uint64_t size;
	uint32_t align;
	uint16_t series; /* index into trace.series (alloc and free only) */
	char op;	 /* enum trace_op */
	long tid;
};

/* One (allocator, device) pair seen in the trace. */
struct trace_series {
	char allocator[ALLOY_NAME_MAX + 1];
	char device[24];
};

struct trace {
	int version;
	long pid;
	struct trace_event *ev;
	size_t nev, cap;
	struct trace_series series[TRACE_MAX_SERIES];
	size_t nseries;
	bool complete;	 /* ended with an "end" record */
	uint64_t end_ns; /* time of the end record, or of the last event */
	size_t lines;
};

/*
 * Read a whole trace.  0 on success; otherwise -1 and err holds
 * "PATH:LINE: (byte OFFSET) what is wrong".  A trace without its end
 * record (the program died) is read up to its last complete line and
 * tr->complete is false; a line cut in the middle is an error.
 */
int trace_read(const char *path, struct trace *tr, char *err, size_t errlen);
void trace_free(struct trace *tr);

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
};

void trace_summarize(const struct trace *tr, struct trace_summary *sum);

struct replay_result {
	double seconds;	    /* allocating and freeing only */
	uint64_t peak_live; /* highest sum of live bytes */
	uint64_t allocs, frees;
	bool have_stats;		      /* the allocator has a stats op */
	uint64_t max_reserved, max_allocated; /* sampled along the way */
	struct alloy_allocator_stats end; /* before the leftovers are freed */
};

/*
 * Replay every alloc and free of tr against a, in order.  progress (may
 * be NULL) is called now and then with the events done so far.  0, or a
 * negative errno with the library's message set.
 */
int trace_replay(const struct trace *tr, struct alloy_allocator *a,
		 struct replay_result *r,
		 void (*progress)(void *arg, size_t done, size_t total),
		 void *arg);

/* Write the timeline picture of tr as a standalone SVG document. */
void trace_timeline_svg(FILE *out, const struct trace *tr,
			const struct trace_summary *sum);

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

#endif /* ALLOY_TOOLS_TRACE_H */
