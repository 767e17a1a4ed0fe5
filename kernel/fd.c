// SPDX-License-Identifier: MIT
/*
 * kernel/fd.c - numbers for the descriptors alloy keeps (fd.h).
 *
 * They go just below 1024, or below a lower soft RLIMIT_NOFILE: programs
 * take the lowest free number (open, dup, pipe), shells the ones below 10
 * and bash up to 255.  Not above 1024: a soft limit may be in the
 * millions, and a number up there makes the kernel grow the process's
 * descriptor table for alloy alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>

#include "kernel/fd.h"

#define FD_TOP	1024
#define FD_ROOM 32

int alloy__fd_high_base(void)
{
	struct rlimit rl;
	rlim_t top = FD_TOP;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < top)
		top = rl.rlim_cur;
	return top > FD_ROOM + 3 ? (int)(top - FD_ROOM) : 3;
}

int alloy__fd_copy_high(int fd)
{
	int base = alloy__fd_high_base(), copy;

	for (;;) {
		copy = fcntl(fd, F_DUPFD_CLOEXEC, base);
		if (copy >= 0 || base == 3 ||
		    (errno != EMFILE && errno != EINVAL))
			return copy;
		base = base / 2 > 3 ? base / 2 : 3;
	}
}
