/* SPDX-License-Identifier: MIT */
/*
 * control/internal.h - what the control server's files share: the reply
 * being built and the commands that fill it.  Not installed.
 */
#ifndef ALLOY_CONTROL_INTERNAL_H
#define ALLOY_CONTROL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "kernel/base.h"
#include "control/proto.h"

/*
 * A reply's body, from alloy's own arena (never the program's malloc:
 * the thread that fills it may run while the program holds its
 * allocator's locks).  failed: memory ran out, the body is cut.
 */
struct ctl_out {
	char *buf;
	size_t len, cap;
	bool failed;
};

ALLOY_HIDDEN void alloy__ctl_out_put(struct ctl_out *o, const char *s,
				     size_t n);
ALLOY_HIDDEN void alloy__ctl_out_printf(struct ctl_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
ALLOY_HIDDEN void alloy__ctl_out_free(struct ctl_out *o);

/*
 * Carry out a parsed request: its body into out, its one-line status
 * into msg.  0 for "ok", -1 for "error".
 */
ALLOY_HIDDEN int alloy__ctl_run(const struct ctl_request *req,
				struct ctl_out *out, char *msg, size_t msglen);

#endif /* ALLOY_CONTROL_INTERNAL_H */
