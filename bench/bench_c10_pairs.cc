// SPDX-License-Identifier: MIT
/*
 * bench/bench_c10_pairs.cc - c10's CPU allocator, for `alloy bench c10`:
 * pairs of c10::GetCPUAllocator()->allocate() and the release of the
 * DataPtr it returns, as a PyTorch CPU tensor's storage makes them.
 *
 * Built only where configure found libtorch's c10 (--with-libtorch), as a
 * module of its own that `alloy bench c10` opens, so that the alloy
 * command itself never links libc10 and what it pulls in.
 */
#include <c10/core/CPUAllocator.h>

extern "C" int alloy_bench_c10_pairs(size_t size, long pairs);

static void *volatile sink;

/* pairs allocate+release pairs of size bytes; 0, or -1 if one failed. */
extern "C" int alloy_bench_c10_pairs(size_t size, long pairs)
{
	c10::Allocator *a = c10::GetCPUAllocator();

	for (long i = 0; i < pairs; i++) {
		c10::DataPtr p = a->allocate(size);

		if (!p.get())
			return -1;
		*static_cast<volatile char *>(p.get()) = 1;
		sink = p.get();
	}
	return 0;
}
