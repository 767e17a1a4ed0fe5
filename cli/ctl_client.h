/* SPDX-License-Identifier: MIT */
/*
 * cli/ctl_client.h - the client side of the control socket, for
 * `alloy ctl` and `alloy top` (the protocol: control/proto.h).
 */
#ifndef ALLOY_CLI_CTL_CLIENT_H
#define ALLOY_CLI_CTL_CLIENT_H

#include <stdbool.h>
#include <stddef.h>

struct ctl_conn {
	int fd;
	long pid;
	size_t len; /* bytes read and not yet consumed */
	char in[8192];
};

/* What a request brought back: the body (malloc'ed) and the status. */
struct ctl_reply {
	bool ok;
	char *body;
	size_t body_len;
	char status[1024];
};

/*
 * Connect to process pid's socket and read its greeting.  0, or -1 with
 * why in err (no socket, a stale one removed, refused, another
 * protocol).
 */
int ctl_connect(struct ctl_conn *c, long pid, char *err, size_t errlen);

/*
 * Send one request ("swap cpu:jemalloc", without the version) and read
 * the reply.  0 with *r filled (r->ok tells ok from error), or -1 when
 * the program closed the connection or exited before answering (why in
 * r->status).  Free r->body with free().
 */
int ctl_request(struct ctl_conn *c, const char *request, struct ctl_reply *r);

void ctl_close(struct ctl_conn *c);

/*
 * The pids of this user's processes with a control socket, at most max,
 * in increasing order; sockets of processes that are gone are removed.
 */
int ctl_list(long *pids, int max);

#endif /* ALLOY_CLI_CTL_CLIENT_H */
