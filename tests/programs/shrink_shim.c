// SPDX-License-Identifier: MIT
/*
 * tests/programs/shrink_shim.c - an LD_PRELOAD shim for
 * tests/cli/test_cli_report.sh: cuts the file SHRINK_PATH to SHRINK_TO bytes
 * right after the process first reads or maps it.  That is what a program
 * rerun with the same trace: path does to a trace being reported (its open
 * truncates the file), done at a known point of the reading instead of at a
 * moment, so the test does not depend on timing.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static bool cut;

/* After the first read or mapping of SHRINK_PATH, once. */
static void maybe_cut(int fd)
{
	const char *path = getenv("SHRINK_PATH");
	const char *to = getenv("SHRINK_TO");
	struct stat a, b;

	if (cut || fd < 0 || !path || !to || fstat(fd, &a) || stat(path, &b) ||
	    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return;
	cut = true;
	if (truncate(path, atoll(to)))
		abort(); /* the test would prove nothing */
}

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	static ssize_t (*real)(int, void *, size_t);
	ssize_t k;

	if (!real)
		real = (ssize_t(*)(int, void *, size_t))dlsym(RTLD_NEXT,
							      "read");
	k = real(fd, buf, n);
	if (k > 0)
		maybe_cut(fd);
	return k;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		  off_t off)
{
	static void *(*real)(void *, size_t, int, int, int, off_t);
	void *p;

	if (!real)
		real = (void *(*)(void *, size_t, int, int, int, off_t))dlsym(
			RTLD_NEXT, "mmap");
	p = real(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED)
		maybe_cut(fd);
	return p;
}
