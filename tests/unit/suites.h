/* SPDX-License-Identifier: MIT */
/*
 * tests/unit/suites.h - every suite the runner runs, one X(name) each.
 * tests/unit/test_<name>.c defines Suite *suite_<name>(void).
 */
#ifndef ALLOY_TESTS_SUITES_H
#define ALLOY_TESTS_SUITES_H

#define ALLOY_TEST_SUITES(X) \
	X(error)             \
	X(reporter)          \
	X(trace)             \
	X(unwind)            \
	X(owner)             \
	X(conf)              \
	X(control)           \
	X(registry)          \
	X(plain)             \
	X(fork)              \
	X(default)           \
	X(default_cache)     \
	X(context)           \
	X(plugin)            \
	X(jemalloc)          \
	X(mimalloc)          \
	X(fail)              \
	X(debug)             \
	X(typemeta)          \
	X(storage)           \
	X(tensor)            \
	X(tensor_ops)        \
	X(blob)              \
	X(workspace)         \
	X(tensor_dtype)      \
	X(cuda_caching)      \
	X(cuda_host)         \
	X(syncedmem)         \
	X(api_edges)         \
	X(dlpack)            \
	X(sweep)             \
	X(stress)

#endif /* ALLOY_TESTS_SUITES_H */
