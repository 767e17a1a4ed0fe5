// SPDX-License-Identifier: MIT
/*
 * cli/ctl_client.c - connect to a program's control socket, send a
 * request, read its reply.
 *
 * A socket is trusted only in a directory of this user's that no one
 * else may enter (control/path.h), so a client never talks to a socket
 * another user put in its way.  A socket whose process is gone (killed
 * before it could remove it) is removed here.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "control/path.h"
#include "control/proto.h"
#include "ctl_client.h"

/* One line from the connection, without its newline; NULL at the end. */
static char *read_line(struct ctl_conn *c, size_t *used)
{
	for (;;) {
		char *nl = memchr(c->in, '\n', c->len);
		ssize_t n;

		if (nl) {
			*nl = '\0';
			*used = (size_t)(nl - c->in) + 1;
			return c->in;
		}
		if (c->len == sizeof(c->in)) {
			/* A line longer than the buffer: cut it there. */
			c->in[c->len - 1] = '\0';
			*used = c->len;
			return c->in;
		}
		n = read(c->fd, c->in + c->len, sizeof(c->in) - c->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		c->len += (size_t)n;
	}
}

static void consume(struct ctl_conn *c, size_t used)
{
	c->len -= used;
	memmove(c->in, c->in + used, c->len);
}

/* Whether process pid has alloy's LD_PRELOAD front loaded (its maps). */
static bool runs_front(long pid)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/liballoy_preload.so") != NULL;
	fclose(f);
	return found;
}

int ctl_connect(struct ctl_conn *c, long pid, char *err, size_t errlen)
{
	char dirs[CTL_MAX_DIRS][CTL_PATH_MAX], path[CTL_PATH_MAX];
	char why[CTL_PATH_MAX + 96];
	int n = alloy__ctl_dirs(dirs);
	bool stale = false, unsafe = false;
	char *line;
	size_t used;

	c->fd = -1;
	c->pid = pid;
	c->len = 0;
	for (int i = 0; i < n; i++) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		char name[32];
		int fd;

		if (!alloy__ctl_socket_path(path, dirs[i], pid) ||
		    access(path, F_OK))
			continue;
		if (!alloy__ctl_dir_safe(dirs[i], why, sizeof(why))) {
			unsafe = true;
			continue;
		}
		snprintf(name, sizeof(name), "%ld.sock", pid);
		if (alloy__ctl_remove_stale(dirs[i], name)) {
			stale = true;
			continue;
		}
		fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			snprintf(err, errlen, "socket: %s", strerror(errno));
			return -1;
		}
		memcpy(sa.sun_path, path, strlen(path) + 1);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			snprintf(err, errlen, "cannot connect to %s: %s", path,
				 strerror(errno));
			close(fd);
			return -1;
		}
		c->fd = fd;
		break;
	}
	if (c->fd < 0) {
		if (!unsafe && runs_front(pid)) {
			snprintf(
				err, errlen,
				"process %ld runs under `alloy run` and has no control socket: with control:auto (the default) alloy opens it with the program's first thread, so that a single-threaded program stays single-threaded; run it with --conf control:1 to have one from the start",
				pid);
			return -1;
		}
		if (unsafe)
			snprintf(err, errlen, "%s; not connecting", why);
		else
			snprintf(
				err, errlen,
				"no control socket for process %ld%s (is it running under `alloy run`, `python3 -m alloy` or alloy_control_start(), as this user, without control:0?)",
				pid,
				stale ? " (the socket of a process that is gone was removed)"
				      : "");
		return -1;
	}
	line = read_line(c, &used);
	if (!line) {
		snprintf(err, errlen,
			 "process %ld closed the connection before greeting",
			 pid);
	} else if (!strncmp(line, "error ", 6)) {
		snprintf(err, errlen, "process %ld: %s", pid, line + 6);
	} else if (strncmp(line, CTL_VERSION_STR " ",
			   sizeof(CTL_VERSION_STR))) {
		snprintf(
			err, errlen,
			"process %ld speaks another protocol (\"%.40s\"); this alloy speaks " CTL_VERSION_STR,
			pid, line);
	} else {
		consume(c, used);
		return 0;
	}
	ctl_close(c);
	return -1;
}

static void append(struct ctl_reply *r, const char *s, size_t n)
{
	char *p = realloc(r->body, r->body_len + n + 2);

	if (!p)
		return;
	r->body = p;
	memcpy(r->body + r->body_len, s, n);
	r->body_len += n;
	r->body[r->body_len++] = '\n';
	r->body[r->body_len] = '\0';
}

int ctl_request(struct ctl_conn *c, const char *request, struct ctl_reply *r)
{
	size_t n = strlen(request);
	char *line;
	size_t used;
	char *msg;

	memset(r, 0, sizeof(*r));
	msg = malloc(n + sizeof(CTL_VERSION_STR) + 2);
	if (!msg) {
		snprintf(r->status, sizeof(r->status), "out of memory");
		return -1;
	}
	sprintf(msg, CTL_VERSION_STR " %s\n", request);
	for (size_t off = 0, len = strlen(msg); off < len;) {
		ssize_t k = send(c->fd, msg + off, len - off, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			free(msg);
			snprintf(r->status, sizeof(r->status),
				 "process %ld closed the connection: %s",
				 c->pid, strerror(errno));
			return -1;
		}
		off += (size_t)k;
	}
	free(msg);
	while ((line = read_line(c, &used))) {
		if (line[0] == '.' && (line[1] == ' ' || !line[1])) {
			const char *text = line[1] ? line + 2 : line + 1;

			append(r, text, strlen(text));
		} else if (!strncmp(line, "ok", 2) ||
			   !strncmp(line, "error", 5)) {
			r->ok = line[0] == 'o';
			snprintf(r->status, sizeof(r->status), "%s",
				 line + (r->ok ? 2 : 5) +
					 (line[r->ok ? 2 : 5] == ' '));
			consume(c, used);
			return 0;
		}
		consume(c, used);
	}
	snprintf(
		r->status, sizeof(r->status),
		"process %ld exited (or closed the connection) before answering",
		c->pid);
	return -1;
}

void ctl_close(struct ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int cmp_pid(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x > y) - (x < y);
}

int ctl_list(long *pids, int max)
{
	char dirs[CTL_MAX_DIRS][CTL_PATH_MAX], why[CTL_PATH_MAX + 96];
	int ndirs = alloy__ctl_dirs(dirs), n = 0;

	for (int i = 0; i < ndirs; i++) {
		struct dirent *e;
		DIR *d;

		if (!alloy__ctl_dir_safe(dirs[i], why, sizeof(why)))
			continue;
		d = opendir(dirs[i]);
		if (!d)
			continue;
		while ((e = readdir(d)) && n < max) {
			long pid = alloy__ctl_name_pid(e->d_name);
			bool seen = false;

			if (pid <= 0 ||
			    alloy__ctl_remove_stale(dirs[i], e->d_name))
				continue;
			for (int k = 0; k < n; k++)
				seen |= pids[k] == pid;
			if (!seen)
				pids[n++] = pid;
		}
		closedir(d);
	}
	qsort(pids, (size_t)n, sizeof(*pids), cmp_pid);
	return n;
}
