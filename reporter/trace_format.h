/* SPDX-License-Identifier: MIT */
/*
 * reporter/trace_format.h - what a trace file is made of
 * (docs/TRACE-FORMAT.md): the header's magic and version, the letter that
 * starts each record, the last records and the limits on ids.
 *
 * The reporter writes traces (reporter/events.c) and the offline analysis
 * reads them back (analysis/trace.c); both take the format from here, so
 * that one cannot change it without the other seeing.  Only definitions:
 * no code, nothing of either side's own state.
 */
#ifndef ALLOY_REPORTER_TRACE_FORMAT_H
#define ALLOY_REPORTER_TRACE_FORMAT_H

#include <stdint.h>

/* Line 1: the magic, then the version and key=value words. */
#define TRACE_MAGIC	"alloy-trace "
#define TRACE_MAGIC_LEN (sizeof(TRACE_MAGIC) - 1)

/*
 * The version the reporter writes; readers still read 1 and 2 as well.
 * Version 3 is version 2 with the header's unit either ns or us, and
 * samples of the process's resident memory; version 4 is version 3 with
 * an interpreter's frames in the stacks ("c" and "p" records).
 */
#define TRACE_VERSION 4

/* The comment the writer puts under the header, for a reader with less. */
#define TRACE_LEGEND                                        \
	"# a dt thread series block size [stack [owner]]; " \
	"f dt thread block; docs/TRACE-FORMAT.md"

/* Events: the first field of their records. */
enum trace_op {
	TRACE_ALLOC = 'a',
	TRACE_FREE = 'f',
	TRACE_UNKNOWN_FREE = 'u',
	TRACE_DOUBLE_FREE = 'd',
};

/* Declarations (version 2 on), each before the first event that uses it. */
enum trace_decl {
	TRACE_DECL_MODULE = 'M', /* START END OFFSET BUILDID PATH */
	TRACE_DECL_THREAD = 'T', /* ID TID */
	TRACE_DECL_SERIES = 'S', /* ID ALLOCATOR DEVICE ALIGN */
	TRACE_DECL_NODE = 's',	 /* ID PARENT FRAME */
	TRACE_DECL_OWNER = 'o',	 /* ID LABEL */
	/* Version 4: interpreted functions and the stack nodes of their lines.
	 */
	TRACE_DECL_CODE = 'c',	 /* ID FUNCTION FILE */
	TRACE_DECL_INTERP = 'p', /* ID PARENT CODE LINE */
};

/*
 * A sample of the process's memory (version 3): "r DT RESIDENT MAPPED",
 * bytes resident and bytes mapped (/proc/self/statm).  Not an event: the
 * end record does not count it.
 */
#define TRACE_MEMORY 'r'

/* The last line: "end T EVENTS", or "incomplete T LOST" after an error. */
#define TRACE_END	 "end "
#define TRACE_INCOMPLETE "incomplete "

/* Declared ids stay below this; a reader may refuse larger ones. */
#define TRACE_MAX_ID (1u << 24)
/* The largest alignment a series names (alloy's ALLOY_ALIGN_MAX). */
#define TRACE_MAX_ALIGN ((uint64_t)1 << 40)

#endif /* ALLOY_REPORTER_TRACE_FORMAT_H */
