/* SPDX-License-Identifier: MIT */
/*
 * control/path.h - where control sockets live: a directory only their
 * user can enter, one socket a process, named by its pid.
 *
 * Not installed; the server and the alloy command's clients share it.
 */
#ifndef ALLOY_CONTROL_PATH_H
#define ALLOY_CONTROL_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>

#include "kernel/conf.h" /* ALLOY_PRIVATE */

/* Room for a socket's path: what struct sockaddr_un holds. */
#define CTL_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

/* The directories a user's sockets may be in, in the order tried. */
#define CTL_MAX_DIRS 2

/*
 * The candidate directories of this user's sockets: $XDG_RUNTIME_DIR/alloy
 * when that is set, absolute and short enough, then /tmp/alloy-UID.
 * Returns how many were written to dirs.
 */
ALLOY_PRIVATE int alloy__ctl_dirs(char dirs[CTL_MAX_DIRS][CTL_PATH_MAX]);

/*
 * Whether dir is fit to hold sockets: a directory (not a link to one) of
 * this user's that no one else may enter or read.  On false, why in err.
 */
ALLOY_PRIVATE bool alloy__ctl_dir_safe(const char *dir, char *err,
				       size_t errlen);

/* dir/PID.sock into out; false when it does not fit. */
ALLOY_PRIVATE bool alloy__ctl_socket_path(char *out, const char *dir, long pid);

/*
 * The pid a socket's file name stands for ("123.sock" -> 123), or -1
 * for any other name.
 */
ALLOY_PRIVATE long alloy__ctl_name_pid(const char *name);

/*
 * Remove dir/name when it is a socket whose process is gone; true when
 * it did.
 */
ALLOY_PRIVATE bool alloy__ctl_remove_stale(const char *dir, const char *name);

#endif /* ALLOY_CONTROL_PATH_H */
