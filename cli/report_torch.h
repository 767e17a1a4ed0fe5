/* SPDX-License-Identifier: MIT */
/*
 * cli/report_torch.h - `alloy report --format torch-snapshot`: the
 * caching allocator's state at a moment of a trace, for PyTorch's viewer.
 */
#ifndef ALLOY_CLI_REPORT_TORCH_H
#define ALLOY_CLI_REPORT_TORCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/trace.h"

struct torch_snap_opts {
	const char *path; /* of the trace, for messages */
	bool at_peak;	  /* else at t_ns */
	uint64_t t_ns;
	const char *const *options; /* KEY:VALUE for the allocator */
	size_t noptions;
};

/*
 * Replay tr's CUDA device blocks on a fresh caching allocator over a
 * simulated device up to the moment, write its segments and blocks to
 * out as PyTorch's pickled snapshot, and a line with its totals to
 * stderr.  0, or -1 after saying why.
 */
int report_torch_snapshot(FILE *out, const struct torch_snap_opts *o,
			  const struct trace *tr);

#endif /* ALLOY_CLI_REPORT_TORCH_H */
