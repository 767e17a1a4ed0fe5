// SPDX-License-Identifier: MIT
/*
 * control/server.c - the control socket and the one thread that serves
 * it.
 *
 * The thread waits in poll() and does nothing else until a client
 * connects, so the program's allocations pay nothing for it.  It serves
 * several clients at once, one request at a time.  Whatever it keeps
 * (clients' lines, replies) comes from alloy's arena: it may run while
 * the program holds its allocator's locks, and stdio and malloc are not
 * used on its path.  Its one descriptor sits high and closes on exec
 * (kernel/fd.h), as the reporter's do.
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <alloy/alloy.h>

#include "kernel/arena.h"
#include "kernel/fd.h"
#include "kernel/secure.h"
#include "control/internal.h"
#include "control/path.h"

#define MAX_CLIENTS 8
#define BACKLOG	    16
/*
 * Room for what a command may run on this thread (a module's load and
 * its backend's start, the reporter's print), and little more: the
 * stack is address space taken from a program that may run under a
 * limit (ulimit -v).
 */
#define STACK_BYTES (128 * 1024)
/* A client that does not read its reply for this long is dropped. */
#define SEND_TIMEOUT 2

struct client {
	int fd;
	size_t len;
	char in[CTL_LINE_MAX];
};

static struct {
	pthread_mutex_t lock;
	bool running;
	bool hooked; /* atexit and fork handlers registered */
	pid_t pid;
	int listen_fd;
	pthread_t thread;
	char path[CTL_PATH_MAX];
	/*
	 * The socket's file, to tell it from a file the program may have
	 * put at its number (daemons close every descriptor above 2).
	 */
	dev_t dev;
	ino_t ino;
	/* The thread ended because the program took its descriptor. */
	atomic_bool lost;
	/* alloy_control_stop connects to wake the thread: it ends. */
	atomic_bool stopping;
} S = { .lock = PTHREAD_MUTEX_INITIALIZER, .listen_fd = -1 };

static atomic_bool refusal_said;

/* One line on stderr, without stdio. */
static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;
}

static bool send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t k = send(fd, p, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		p += k;
		n -= (size_t)k;
	}
	return true;
}

/* The status line's text: one line of printable ASCII. */
static void status_line(struct ctl_out *o, bool ok, const char *msg)
{
	char esc[CTL_ERROR_MAX * 4];

	alloy__escape(msg, esc, sizeof(esc));
	alloy__ctl_out_printf(o, "%s %s\n", ok ? "ok" : "error", esc);
}

/* Body lines framed as ". TEXT", then the status line; false: drop it. */
static bool reply(int fd, const struct ctl_out *body, bool ok, const char *msg)
{
	struct ctl_out o = { 0 };
	const char *p = body->buf, *end = body->buf + body->len;
	bool sent;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		alloy__ctl_out_put(&o, ". ", 2);
		alloy__ctl_out_put(&o, p, n);
		alloy__ctl_out_put(&o, "\n", 1);
		p += n + (nl != NULL);
	}
	if (body->failed)
		ok = false, msg = "out of memory: the reply is cut";
	status_line(&o, ok, msg);
	sent = !o.failed && send_all(fd, o.buf, o.len);
	alloy__ctl_out_free(&o);
	return sent;
}

static bool serve_line(int fd, const char *line, size_t len)
{
	struct ctl_request req;
	struct ctl_out body = { 0 };
	char msg[CTL_ERROR_MAX * 2];
	bool ok, sent;

	if (alloy__ctl_parse(line, len, &req, msg, sizeof(msg)) < 0)
		return reply(fd, &body, false, msg);
	ok = alloy__ctl_run(&req, &body, msg, sizeof(msg)) == 0;
	sent = reply(fd, &body, ok, msg);
	alloy__ctl_out_free(&body);
	return sent;
}

/* Read what the client sent and serve each whole line; false: drop it. */
static bool serve_client(struct client *c)
{
	ssize_t n;
	char *nl;

	n = recv(c->fd, c->in + c->len, sizeof(c->in) - c->len, 0);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	c->len += (size_t)n;
	while ((nl = memchr(c->in, '\n', c->len))) {
		size_t len = (size_t)(nl - c->in);

		if (!serve_line(c->fd, c->in, len))
			return false;
		c->len -= len + 1;
		memmove(c->in, nl + 1, c->len);
	}
	if (c->len == sizeof(c->in)) {
		struct ctl_out none = { 0 };
		char msg[96];

		snprintf(msg, sizeof(msg),
			 "request longer than %d bytes; closing",
			 CTL_LINE_MAX - 1);
		reply(c->fd, &none, false, msg);
		return false;
	}
	return true;
}

/* A descriptor moved out of the program's way (kernel/fd.h). */
static int high(int fd)
{
	int h;

	if (fd < 0)
		return fd;
	h = alloy__fd_copy_high(fd);
	if (h < 0)
		return fd; /* keep the low one rather than nothing */
	close(fd);
	return h;
}

/* A new connection: the peer checked, greeted, given a slot. */
static void take_client(struct client *clients)
{
	struct ucred cred = { .uid = (uid_t)-1 };
	socklen_t len = sizeof(cred);
	struct timeval tv = { SEND_TIMEOUT, 0 };
	char line[64];
	int fd = accept4(S.listen_fd, NULL, NULL, SOCK_CLOEXEC);
	int slot = -1;

	if (fd < 0)
		return;
	/* Out of the program's way, as the listening socket is. */
	fd = high(fd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    !alloy__ctl_peer_allowed((unsigned)cred.uid, (unsigned)geteuid())) {
		static const char refused[] =
			"error refused: only this program's user or root may control it\n";

		send_all(fd, refused, sizeof(refused) - 1);
		close(fd);
		if (!atomic_exchange(&refusal_said, true))
			say("alloy: control: refused a client of user %u (this program runs as user %u; later refusals are not said)",
			    (unsigned)cred.uid, (unsigned)geteuid());
		return;
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].fd < 0) {
			slot = i;
			break;
		}
	if (slot < 0) {
		static const char busy[] =
			"error busy: too many clients at once\n";

		send_all(fd, busy, sizeof(busy) - 1);
		close(fd);
		return;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	snprintf(line, sizeof(line), CTL_VERSION_STR " pid %ld\n",
		 (long)getpid());
	if (!send_all(fd, line, strlen(line))) {
		close(fd);
		return;
	}
	clients[slot].fd = fd;
	clients[slot].len = 0;
}

static bool still_ours(void)
{
	struct stat st;

	return !fstat(S.listen_fd, &st) && S_ISSOCK(st.st_mode) &&
	       st.st_dev == S.dev && st.st_ino == S.ino;
}

static void *serve(void *arg)
{
	struct client *clients =
		alloy__arena_alloc(MAX_CLIENTS * sizeof(*clients));
	struct pollfd fds[1 + MAX_CLIENTS];

	(void)arg;
	if (!clients)
		return NULL;
	for (int i = 0; i < MAX_CLIENTS; i++)
		clients[i].fd = -1;
	for (;;) {
		int n = 1;

		fds[0] = (struct pollfd){ .fd = S.listen_fd, .events = POLLIN };
		for (int i = 0; i < MAX_CLIENTS; i++)
			fds[n++] = (struct pollfd){ .fd = clients[i].fd,
						    .events = POLLIN };
		if (poll(fds, (nfds_t)n, -1) < 0)
			continue;
		if (atomic_load(&S.stopping))
			break;
		/*
		 * The program closed the socket or put a file of its own at
		 * its number: stop serving, touching neither.
		 */
		if ((fds[0].revents & (POLLNVAL | POLLERR | POLLHUP)) ||
		    ((fds[0].revents & POLLIN) && !still_ours())) {
			atomic_store(&S.lost, true);
			break;
		}
		for (int i = 0; i < MAX_CLIENTS; i++) {
			struct client *c = &clients[i];

			if (c->fd < 0 || !fds[1 + i].revents)
				continue;
			/* Closed by the program: the number is not ours. */
			if (fds[1 + i].revents & POLLNVAL) {
				c->fd = -1;
				continue;
			}
			if (!serve_client(c)) {
				close(c->fd);
				c->fd = -1;
			}
		}
		if (fds[0].revents & POLLIN)
			take_client(clients);
	}
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (clients[i].fd >= 0)
			close(clients[i].fd);
	alloy__arena_free(clients, MAX_CLIENTS * sizeof(*clients));
	return NULL;
}

/* ---- start and end ---------------------------------------------------- */

/* Sockets of processes that are gone, left by a kill: removed. */
static void sweep(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d)))
		alloy__ctl_remove_stale(dir, e->d_name);
	closedir(d);
}

/* The directory made or checked, the socket bound and listening. */
static int open_socket(void)
{
	char dirs[CTL_MAX_DIRS][CTL_PATH_MAX], why[CTL_PATH_MAX + 96];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	const char *dir;
	struct stat st;
	int fd;

	alloy__ctl_dirs(dirs);
	dir = dirs[0];
	if (mkdir(dir, 0700) && errno != EEXIST)
		return alloy__error(-errno, "alloy_control_start",
				    "cannot make %s: %s", dir, strerror(errno));
	if (!alloy__ctl_dir_safe(dir, why, sizeof(why)))
		return alloy__error(-EACCES, "alloy_control_start",
				    "%s; no control socket", why);
	sweep(dir);
	if (!alloy__ctl_socket_path(S.path, dir, (long)getpid()))
		return alloy__error(-ENAMETOOLONG, "alloy_control_start",
				    "the socket's path in %s is too long", dir);
	/* Our own pid's name can only be a dead process's. */
	unlink(S.path);
	memcpy(sa.sun_path, S.path, strlen(S.path) + 1);
	fd = high(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return alloy__error(-errno, "alloy_control_start", "socket: %s",
				    strerror(errno));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(S.path, 0600) || listen(fd, BACKLOG)) {
		int err = errno;

		close(fd);
		unlink(S.path);
		return alloy__error(-err, "alloy_control_start", "%s: %s",
				    S.path, strerror(err));
	}
	if (fstat(fd, &st)) {
		int err = errno;

		close(fd);
		unlink(S.path);
		return alloy__error(-err, "alloy_control_start", "fstat: %s",
				    strerror(err));
	}
	S.dev = st.st_dev;
	S.ino = st.st_ino;
	S.listen_fd = fd;
	return 0;
}

static void at_exit(void)
{
	if (S.running && S.pid == getpid())
		unlink(S.path);
}

static void fork_prepare(void)
{
	pthread_mutex_lock(&S.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&S.lock);
}

/* The child has no serving thread: its copies of the descriptors go. */
static void fork_child(void)
{
	if (S.running) {
		close(S.listen_fd);
		S.listen_fd = -1;
		S.running = false;
	}
	pthread_mutex_unlock(&S.lock);
}

static int start_thread(void)
{
	pthread_attr_t attr;
	sigset_t all, old;
	int rc;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, STACK_BYTES);
	/* The program's signals are never delivered to this thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&S.thread, &attr, serve, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (rc)
		return alloy__error(-rc, "alloy_control_start",
				    "pthread_create: %s", strerror(rc));
	pthread_setname_np(S.thread, "alloy-control");
	return 0;
}

int alloy_control_start(void)
{
	int rc = 0;

	alloy_init();
	if (!strcmp(alloy__conf.control, "0"))
		return alloy__error(-ECANCELED, __func__,
				    "off: ALLOY_CONF has control:0");
	if (alloy__secure_mode())
		return alloy__error(
			-EPERM, __func__,
			"not opened in secure-execution mode (a setuid or setgid program)");
	pthread_mutex_lock(&S.lock);
	if (S.running && S.pid == getpid())
		goto out;
	if (!S.hooked) {
		atexit(at_exit);
		pthread_atfork(fork_prepare, fork_parent, fork_child);
		S.hooked = true;
	}
	rc = open_socket();
	if (!rc) {
		rc = start_thread();
		if (rc) {
			close(S.listen_fd);
			S.listen_fd = -1;
			unlink(S.path);
		}
	}
	if (rc) {
		say("alloy: control: %s", alloy_last_error());
		goto out;
	}
	S.pid = getpid();
	S.running = true;
out:
	pthread_mutex_unlock(&S.lock);
	return rc;
}

/* Wake the thread with a connection of our own; it sees stopping. */
static void wake(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	memcpy(sa.sun_path, S.path, strlen(S.path) + 1);
	if (fd >= 0 && !connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		pthread_join(S.thread, NULL);
	if (fd >= 0)
		close(fd);
}

int alloy_control_stop(void)
{
	pthread_mutex_lock(&S.lock);
	if (!S.running || S.pid != getpid()) {
		pthread_mutex_unlock(&S.lock);
		return alloy__error(-ENOENT, __func__,
				    "the control socket is not open");
	}
	atomic_store(&S.stopping, true);
	if (atomic_load(&S.lost))
		pthread_join(S.thread, NULL);
	else
		wake();
	unlink(S.path);
	/* A descriptor the program took over is its own now. */
	if (!atomic_load(&S.lost))
		close(S.listen_fd);
	S.listen_fd = -1;
	atomic_store(&S.lost, false);
	atomic_store(&S.stopping, false);
	S.running = false;
	pthread_mutex_unlock(&S.lock);
	return 0;
}

const char *alloy_control_path(void)
{
	return S.running && S.pid == getpid() ? S.path : NULL;
}
