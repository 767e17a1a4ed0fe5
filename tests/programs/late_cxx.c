// SPDX-License-Identifier: MIT
/*
 * tests/programs/late_cxx.c - a C program that loads C++ code after start (the
 * C++ runtime comes with it), for tests/cli/test_run.sh under `alloy run` and
 * tests/cli/test_modules.sh with liballoy in the process.  It links nothing of
 * alloy's.
 *
 * Usage: late_cxx LIB                  dlopen LIB
 * (tests/programs/late_cxx_lib.so),
 *                                      run its C++ work, print a checksum
 *        late_cxx LIB LIBALLOY BACKEND  first load LIBALLOY and make
 *                                      BACKEND (a module) the CPU default,
 *                                      as a Python process importing
 *                                      alloy does
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>

#include <alloy/device.h>

static void *must_sym(void *h, const char *name)
{
	void *f = dlsym(h, name);

	if (!f)
		fprintf(stderr, "late_cxx: %s: %s\n", name, dlerror());
	return f;
}

static int load_backend(const char *liballoy, const char *name)
{
	void *h = dlopen(liballoy, RTLD_NOW | RTLD_LOCAL);
	int (*set_default)(int, const char *);
	const char *(*last_error)(void);

	if (!h) {
		fprintf(stderr, "late_cxx: %s\n", dlerror());
		return -1;
	}
	set_default = (int (*)(int, const char *))must_sym(
		h, "alloy_set_default_by_name");
	last_error = (const char *(*)(void))must_sym(h, "alloy_last_error");
	if (!set_default || !last_error)
		return -1;
	if (set_default(ALLOY_DEVICE_CPU, name)) {
		fprintf(stderr, "late_cxx: %s: %s\n", name, last_error());
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t (*churn)(int);
	void *h;

	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: late_cxx LIB [LIBALLOY BACKEND]\n");
		return 2;
	}
	if (argc == 4 && load_backend(argv[2], argv[3]))
		return 1;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "late_cxx: %s\n", dlerror());
		return 1;
	}
	churn = (uint64_t(*)(int))must_sym(h, "late_cxx_churn");
	if (!churn)
		return 1;
	printf("%" PRIu64 "\n", churn(300));
	return 0;
}
