// SPDX-License-Identifier: MIT
/*
 * reporter/frames.c - an interpreter's frames in the call stacks.
 *
 * A native stack of an interpreted program is the interpreter's
 * evaluation loop over and over.  A frame source (the Python module
 * installs one) reads the interpreter's own frame chain for the calling
 * thread and hands back a key per interpreted frame, innermost first,
 * with the last frame each call of the loop ran marked.  Walking the
 * native stack innermost first, each native frame inside the loop is
 * replaced by the interpreted frames of its call, so that a stack reads
 * as the program runs: a native function, the interpreted lines that
 * called it, the native code that started them, and so on.
 *
 * An interpreted frame is kept in the stack table as REP_FRAME_INTERP
 * or'ed with its key: the table, the thread's memo and the trace treat
 * it as any other frame, and only naming it (the trace's declarations,
 * the exit report) asks the source to describe it.  The source is read
 * with one atomic load per stack; it stays installed for the process's
 * life (its tables do), so a key is described after its capture always.
 */
#include <errno.h>

#include "internal.h"

static _Atomic(const struct alloy_reporter_frame_source *) source;

int alloy_reporter_set_frame_source(
	const struct alloy_reporter_frame_source *src)
{
	ALLOY_ENFORCE(!src || (src->size >= sizeof(*src) && src->capture &&
			       src->describe &&
			       src->eval_start < src->eval_end),
		      -EINVAL,
		      "a frame source needs capture, describe and "
		      "the evaluation loop's address range");
	atomic_store_explicit(&source, src, memory_order_release);
	return 0;
}

static bool in_loop(const struct alloy_reporter_frame_source *s, uintptr_t pc)
{
	/* A return address: the call lies one byte back. */
	return pc - 1 >= s->eval_start && pc - 1 < s->eval_end;
}

int alloy__rep_frames_merge(const uintptr_t *in, int n, uintptr_t *out, int max)
{
	const struct alloy_reporter_frame_source *s =
		atomic_load_explicit(&source, memory_order_acquire);
	uint64_t keys[REP_MAX_FRAMES];
	int nk, k = 0, o = 0;

	if (!s || !alloy__conf.python_frames)
		return -1;
	nk = s->capture(keys, REP_MAX_FRAMES);
	if (nk <= 0)
		return -1;
	if (nk > REP_MAX_FRAMES)
		nk = REP_MAX_FRAMES;
	for (int i = 0; i < n && o < max; i++) {
		if (k < nk && in_loop(s, in[i])) {
			/* This call of the loop: its frames up to the entry. */
			while (k < nk && o < max) {
				uint64_t key = keys[k++];

				out[o++] =
					REP_FRAME_INTERP |
					(uintptr_t)(key &
						    ~ALLOY_REPORTER_FRAME_ENTRY);
				if (key & ALLOY_REPORTER_FRAME_ENTRY)
					break;
			}
			continue;
		}
		out[o++] = in[i];
	}
	return o;
}

int alloy__rep_frame_describe(uintptr_t frame,
			      struct alloy_reporter_frame_info *info)
{
	const struct alloy_reporter_frame_source *s =
		atomic_load_explicit(&source, memory_order_acquire);

	if (!s || !(frame & REP_FRAME_INTERP))
		return -ENOENT;
	*info = (struct alloy_reporter_frame_info){ 0 };
	return s->describe((uint64_t)(frame & ~REP_FRAME_INTERP), info);
}
