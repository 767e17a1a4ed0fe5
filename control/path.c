// SPDX-License-Identifier: MIT
/*
 * control/path.c - the control sockets' directory and names.
 *
 * The directory is what keeps other users out: 0700 and owned by the
 * user, checked with lstat every time it is used, so a directory someone
 * else made in /tmp first (or a link to one) is refused, not used.  The
 * server's SO_PEERCRED check stands behind it.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control/path.h"

/* The longest socket name: a pid and ".sock". */
#define NAME_ROOM 32

int alloy__ctl_dirs(char dirs[CTL_MAX_DIRS][CTL_PATH_MAX])
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n = 0;

	if (xdg && xdg[0] == '/' &&
	    strlen(xdg) + sizeof("/alloy") + NAME_ROOM < CTL_PATH_MAX) {
		snprintf(dirs[n], CTL_PATH_MAX, "%s/alloy", xdg);
		n++;
	}
	snprintf(dirs[n], CTL_PATH_MAX, "/tmp/alloy-%u", (unsigned)geteuid());
	n++;
	return n;
}

bool alloy__ctl_dir_safe(const char *dir, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(dir, &st)) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return false;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", dir);
		return false;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen,
			 "%s belongs to user %u, not to this user (%u)", dir,
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return false;
	}
	if (st.st_mode & 077) {
		snprintf(
			err, errlen,
			"%s has mode %04o: other users may enter it (0700 needed)",
			dir, (unsigned)(st.st_mode & 07777));
		return false;
	}
	return true;
}

bool alloy__ctl_socket_path(char *out, const char *dir, long pid)
{
	int n = snprintf(out, CTL_PATH_MAX, "%s/%ld.sock", dir, pid);

	return n > 0 && (size_t)n < CTL_PATH_MAX;
}

long alloy__ctl_name_pid(const char *name)
{
	char *end;
	long pid;

	if (name[0] < '1' || name[0] > '9')
		return -1;
	errno = 0;
	pid = strtol(name, &end, 10);
	if (errno || pid <= 0 || strcmp(end, ".sock") != 0)
		return -1;
	return pid;
}

bool alloy__ctl_remove_stale(const char *dir, const char *name)
{
	char path[CTL_PATH_MAX + NAME_ROOM];
	long pid = alloy__ctl_name_pid(name);
	struct stat st;

	if (pid <= 0 || (pid_t)pid != pid)
		return false;
	/* Alive (ours or another user's pid, EPERM): not stale. */
	if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return false;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, &st) || !S_ISSOCK(st.st_mode))
		return false;
	return unlink(path) == 0;
}
