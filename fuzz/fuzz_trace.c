// SPDX-License-Identifier: MIT
/*
 * fuzz/fuzz_trace.c - libFuzzer target: the trace reader (analysis/trace.c).
 *
 * The reader takes a path, so each input is written to a memfd and read
 * back through /proc/self/fd.  Whatever the bytes, it must return 0 or -1
 * with a message, never crash or leak (ASan); and a trace it accepts must
 * summarise consistently: per series, live blocks = allocations - frees,
 * since the reader refuses a free of a block that is not live.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analysis/trace.h"

#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	static struct trace_summary sum;
	struct trace tr;
	char err[512];
	int rc;

	if (fd < 0) {
		fd = memfd_create("alloy-fuzz-trace", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size)
		abort();
	err[0] = '\0';
	rc = trace_read(path, &tr, err, sizeof(err));
	CHECK(rc == 0 || rc == -1);
	if (rc) {
		CHECK(err[0] != '\0');
		return 0;
	}
	CHECK(tr.version >= 1 && tr.version <= TRACE_VERSION);
	CHECK(tr.nseries <= TRACE_MAX_SERIES);
	trace_summarize(&tr, &sum);
	for (size_t i = 0; i < tr.nseries; i++) {
		CHECK(sum.s[i].allocs >= sum.s[i].frees);
		CHECK(sum.s[i].live_blocks == sum.s[i].allocs - sum.s[i].frees);
	}
	CHECK(sum.all.live_blocks == sum.all.allocs - sum.all.frees);
	trace_free(&tr);
	return 0;
}
