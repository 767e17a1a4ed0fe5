/* SPDX-License-Identifier: MIT */
/*
 * alloy/debug.h - the "debug" allocator: catches misuse of CPU blocks.
 *
 * "debug" is a built-in CPU allocator that takes its memory from another
 * one (its inner, "default" unless ALLOY_CONF says debug.inner:NAME) and
 * surrounds every block with redzones.  At free it checks them, poisons
 * the block and keeps it in a quarantine for a while before giving it
 * back, so that a later write into it is seen too.  Every problem is
 * reported on stderr with the block's allocation site (and free site,
 * where there is one), counted, and survived: nothing is freed twice and
 * a pointer it never made is not touched.
 *
 * ALLOY_CONF keys:
 *   debug.inner:NAME       where the memory comes from (default "default")
 *   debug.redzone:BYTES    bytes checked on each side (default 32)
 *   debug.quarantine:N     freed blocks kept poisoned (default 256)
 *   debug.quiet:BOOL       count and keep reports, print nothing
 *   debug.abort:BOOL       abort() after a report (to stop in a debugger)
 */
#ifndef ALLOY_DEBUG_H
#define ALLOY_DEBUG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum alloy_debug_error {
	ALLOY_DEBUG_OVERFLOW,	    /* written past the end of a block */
	ALLOY_DEBUG_UNDERFLOW,	    /* written before its start */
	ALLOY_DEBUG_USE_AFTER_FREE, /* a freed block written in quarantine */
	ALLOY_DEBUG_DOUBLE_FREE,    /* freed again */
	ALLOY_DEBUG_FOREIGN_FREE,   /* freed, but never allocated here */
	ALLOY_DEBUG_WRONG_SIZE,	    /* freed with another size or alignment */
	ALLOY_DEBUG_ERROR_KINDS
};

/* Bytes written into blocks: new (unless zeroed), redzones, freed. */
#define ALLOY_DEBUG_FILL_NEW	 0xcd
#define ALLOY_DEBUG_FILL_REDZONE 0xfd
#define ALLOY_DEBUG_FILL_FREED	 0xdd

/* Problems of one kind found so far; kind -1: of every kind. */
uint64_t alloy_debug_errors(int kind);

/* The name of a kind ("heap overflow", ...), or "unknown". */
const char *alloy_debug_error_name(int kind);

/*
 * Copy the text of the last report (what, where, allocation site) into
 * buf, truncated to len - 1 bytes; returns its full length, 0 if none.
 */
size_t alloy_debug_last_report(char *buf, size_t len);

/*
 * Check every live block's redzones and every quarantined block's poison
 * now, reporting what is wrong; returns the number of problems found.
 */
int alloy_debug_check(void);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_DEBUG_H */
