/* SPDX-License-Identifier: MIT */
/*
 * analysis/peak.h - what was live at a moment of a trace: at each device's
 * peak, or at a given time, grouped by call stack and by owner.
 */
#ifndef ALLOY_ANALYSIS_PEAK_H
#define ALLOY_ANALYSIS_PEAK_H

#include "trace.h"

/* Bytes and blocks of one group: a stack, an owner, or both. */
struct at_group {
	uint32_t stack; /* node id; 0 none; TRACE_STACK_MISSING */
	uint32_t owner; /* owner id; 0 none */
	uint64_t bytes, blocks;
};

/* One device at the moment looked at. */
struct at_device {
	char device[24];
	uint64_t t_ns;	/* the moment: after every event up to it */
	size_t events;	/* events up to and including that moment */
	uint64_t bytes; /* live on the device then */
	uint64_t blocks;
	struct at_group *pairs; /* by (owner, stack), most bytes first */
	size_t npairs;
	struct at_group *sites; /* by stack */
	size_t nsites;
	struct at_group *owners; /* by owner */
	size_t nowners;
};

struct trace_at {
	bool at_peak;  /* each device at its own peak */
	uint64_t t_ns; /* else: this time */
	struct at_device *dev;
	size_t ndev;
};

/*
 * Fill *at for at_peak, or for time t_ns.  0, or -1 with err set: a time
 * past the end of the trace, or no memory.
 */
int trace_at(const struct trace *tr, bool at_peak, uint64_t t_ns,
	     struct trace_at *at, char *err, size_t errlen);
/* Every device after event index event (the overall peak's, say). */
int trace_at_event(const struct trace *tr, size_t event, struct trace_at *at,
		   char *err, size_t errlen);
void trace_at_free(struct trace_at *at);

/*
 * Count stacks that canon maps to one stack as one site: pairs, sites
 * and owners are summed again.  (Two call sites a compiler made of one
 * source line, an unrolled loop, differ only in their addresses.)
 * 0 or -ENOMEM.
 */
int trace_at_merge(struct trace_at *at,
		   uint32_t (*canon)(void *arg, uint32_t stack), void *arg);

/*
 * The top groups of every column of a timeline of ncols columns, each at
 * the moment the column's total was highest: for the HTML timeline.
 * out[c * k + i] is the i-th largest site (by_owner false) or owner of
 * column c; bytes 0 where there are fewer.  0 or -ENOMEM.
 */
int trace_columns_top(const struct trace *tr, int ncols, int k, bool by_owner,
		      struct at_group *out, uint64_t *col_t_ns,
		      uint64_t *col_bytes);

/*
 * Parse an --at argument: "peak", or a time with a unit (ns, us, ms, s;
 * a bare number is nanoseconds).  0, or -1 with err set.
 */
int trace_parse_at(const char *s, bool *at_peak, uint64_t *t_ns, char *err,
		   size_t errlen);

#endif /* ALLOY_ANALYSIS_PEAK_H */
