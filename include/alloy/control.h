/* SPDX-License-Identifier: MIT */
/*
 * alloy/control.h - control of a running program: `alloy ctl` and
 * `alloy top` talk to it over a socket of its own.
 *
 * A program under `alloy run` or `python3 -m alloy` listens from its
 * start; any other program opts in with alloy_control_start().  The
 * socket is $XDG_RUNTIME_DIR/alloy/PID.sock (or /tmp/alloy-UID/PID.sock),
 * in a directory only the user can enter, removed at exit.  One thread
 * serves it: it sleeps until a client connects, accepts only the same
 * user or root, and takes its memory from alloy's own arena, never from
 * the program's malloc.  See docs/PRELOAD.md, "Controlling a running
 * program".
 */
#ifndef ALLOY_CONTROL_H
#define ALLOY_CONTROL_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Open the control socket and start its thread.  0 when listening (or
 * listening already), or a negative errno with the message set:
 * -ECANCELED  ALLOY_CONF has control:0
 * -EPERM      secure-execution mode (a setuid or setgid program)
 * other       the directory or the socket could not be made (also said
 *             on stderr, once)
 * A child made by fork() does not inherit it; it may call this again.
 */
int alloy_control_start(void);

/* Close the socket and end its thread: 0, or -ENOENT when not started. */
int alloy_control_stop(void);

/* The socket's path while listening, else NULL. */
const char *alloy_control_path(void);

#ifdef __cplusplus
}
#endif

#endif /* ALLOY_CONTROL_H */
