// SPDX-License-Identifier: MIT
/*
 * tests/programs/profprog_cxx.cc - a C++ allocation site for the profiler's
 * tests (tests/cli/test_cli_profile.sh): one block of 4321 bytes made in a
 * member function of a class in a namespace, called from a function template.
 * Linked without debug information (Makefile.am), so that `alloy report`
 * names the frames from the ELF symbol table, where C++ names are
 * mangled: the report must show them demangled, as addr2line -C does
 * where there is debug information.  Run with ALLOY_CONF=trace:...,backtrace:1.
 */
#include <cstdio>
#include <alloy/plain.h>

#define KEEP __attribute__((noinline, noclone))
/* The calls are not the last thing the functions do: no frame is lost. */
#define NO_TAIL() __asm__ volatile("" ::: "memory")

namespace alloy_test {

struct Layer {
	void *forward(int n);
};

KEEP void *Layer::forward(int n)
{
	void *p = alloy_malloc(static_cast<size_t>(n));

	NO_TAIL();
	return p;
}

template <typename T> KEEP void *run(T &layer, int n)
{
	void *p = layer.forward(n);

	NO_TAIL();
	return p;
}

} // namespace alloy_test

int main()
{
	alloy_test::Layer layer;
	void *p = alloy_test::run(layer, 4321);

	if (!p)
		return 1;
	std::printf("done\n");
	alloy_free(p);
	return 0;
}
