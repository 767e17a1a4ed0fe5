/* SPDX-License-Identifier: MIT */
/*
 * analysis/symbols.h - naming a trace's frames after the process is gone:
 * the module map says which file held each address; the file's ELF
 * symbol tables give the function, and binutils' addr2line the file and
 * line where the file has debug information.
 */
#ifndef ALLOY_ANALYSIS_SYMBOLS_H
#define ALLOY_ANALYSIS_SYMBOLS_H

#include "trace.h"

struct sym_frame {
	const char *func;   /* NULL when no symbol covers the address */
	const char *file;   /* source file, NULL when unknown */
	unsigned line;	    /* 0 when unknown */
	const char *module; /* path of the object, NULL when none held it */
	/*
	 * The address in the object's own address space, the one its
	 * symbols and debug information use and addr2line -e MODULE takes:
	 * from a shared library or a PIE the address less its load
	 * address, from an executable linked at a fixed address the
	 * address itself.  When the object cannot be read, its file offset.
	 */
	uint64_t addr;
	bool linked; /* addr is from the object's program headers */
};

struct symbols;

/*
 * A symboliser for tr.  quiet: say nothing on stderr about objects that
 * cannot be read (their frames are shown as raw addresses either way).
 */
struct symbols *symbols_new(const struct trace *tr, bool quiet);
void symbols_free(struct symbols *s);

/*
 * Name every frame of these stacks (node ids), reading each object once
 * and running addr2line once per object.  Never fails: what cannot be
 * named keeps its address.
 */
void symbols_resolve(struct symbols *s, const uint32_t *stacks, size_t n);

/* The frame of node id (resolved first). */
const struct sym_frame *symbols_frame(struct symbols *s, uint32_t id);

/*
 * A short name for the frame of node id: "func (file.c:42)",
 * "func (libx.so)", "libx.so+0x1a2b" or "0x7f00...".
 */
const char *symbols_name(struct symbols *s, uint32_t id, char *buf, size_t len);
/*
 * The function alone, for boxes and one-line labels that may be cut:
 * "func", or without a function the address first, "0x1a2b (libx.so)",
 * so that two frames of one object never cut to the same text.
 */
const char *symbols_func(struct symbols *s, uint32_t id, char *buf, size_t len);

/* The name of a stack that is not a node: none recorded, or missing. */
const char *symbols_no_stack(uint32_t stack);

#endif /* ALLOY_ANALYSIS_SYMBOLS_H */
