// SPDX-License-Identifier: MIT
/*
 * preload/mmap.c - mmap, munmap and mremap of the process, watched so
 * that the front knows which memory each malloc family mapped (the page
 * map of kernel/pagemap.h: how a free finds its allocator after a swap).
 *
 * Each is the system call itself, as glibc's wrappers are, then a word to
 * the engine with the caller's address: a mapping made from a family's
 * code is that family's.  glibc's own malloc maps through its internal
 * calls, never these, and its memory is what no family mapped.
 */
#include <errno.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "preload/front.h"

#define INTERPOSE __attribute__((visibility("default")))

/* syscall() answers as the C library does: MAP_FAILED (-1) and errno. */
static void *mapped_or_failed(long r)
{
	return (void *)r;
}

static __attribute__((noinline)) void *map(void *addr, size_t len, int prot,
					   int flags, int fd, off_t off,
					   const void *caller)
{
	void *p = mapped_or_failed(
		syscall(SYS_mmap, addr, len, prot, flags, fd, off));

	if (p != MAP_FAILED)
		alloy__front_mapped(p, len, caller);
	return p;
}

INTERPOSE void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		     off_t off)
{
	return map(addr, len, prot, flags, fd, off,
		   __builtin_return_address(0));
}

/* The same call on a 64-bit system, where off_t is 64 bits already. */
INTERPOSE void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off)
{
	return map(addr, len, prot, flags, fd, off,
		   __builtin_return_address(0));
}

INTERPOSE int munmap(void *addr, size_t len)
{
	long r = syscall(SYS_munmap, addr, len);

	if (r == 0)
		alloy__front_unmapped(addr, len);
	return (int)r;
}

INTERPOSE void *mremap(void *old, size_t old_len, size_t len, int flags, ...)
{
	void *want = NULL, *p;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	p = mapped_or_failed(
		syscall(SYS_mremap, old, old_len, len, flags, want));
	if (p != MAP_FAILED)
		alloy__front_moved(old, old_len, p, len);
	return p;
}
