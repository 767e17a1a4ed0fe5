/* SPDX-License-Identifier: MIT */
/*
 * control/proto.h - the control socket's line protocol: one request per
 * line from the client, answered by body lines and one status line.
 *
 *   server, on connect:  "alloy/1 pid PID"
 *   client:              "alloy/1 COMMAND [ARGS]"
 *   server:              ". TEXT" per body line, then "ok TEXT" or
 *                        "error TEXT"
 *
 * Not installed; `alloy ctl`, `alloy top` and the fuzzer use it too.
 */
#ifndef ALLOY_CONTROL_PROTO_H
#define ALLOY_CONTROL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <alloy/allocator.h>

#include "kernel/conf.h" /* ALLOY_PRIVATE, ALLOY_CONF_PATH_MAX */

#define CTL_VERSION	1
#define CTL_VERSION_STR "alloy/1"
/* The longest request line, its newline included. */
#define CTL_LINE_MAX 4096
/* The longest message a parse error leaves. */
#define CTL_ERROR_MAX 256

enum ctl_command {
	CTL_SWAP,
	CTL_TRACE_START,
	CTL_TRACE_STOP,
	CTL_BACKTRACE,
	CTL_REPORT,
	CTL_CONF,
	CTL_RESET_PEAKS,
	CTL_STATS,
	CTL_PING,
};

struct ctl_request {
	enum ctl_command command;
	int device;			    /* swap: the device type */
	char allocator[ALLOY_NAME_MAX + 1]; /* swap */
	char path[ALLOY_CONF_PATH_MAX];	    /* trace start */
	bool on;			    /* backtrace */
	bool at_peak;			    /* report --at peak */
	bool json;			    /* report --format json */
};

/*
 * Parse one request line (without its newline; len bytes, no NUL
 * needed) into *req.  0, or -EINVAL with a message for the client in
 * err (always NUL-terminated, printable ASCII only).
 */
ALLOY_PRIVATE int alloy__ctl_parse(const char *line, size_t len,
				   struct ctl_request *req, char *err,
				   size_t errlen);

/*
 * Whether a peer of user peer_uid may control a program running as
 * self_uid: the same user, or root.
 */
ALLOY_PRIVATE bool alloy__ctl_peer_allowed(unsigned peer_uid,
					   unsigned self_uid);

#endif /* ALLOY_CONTROL_PROTO_H */
