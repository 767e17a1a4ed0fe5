// SPDX-License-Identifier: MIT
/*
 * reporter/session.c - the reporter of a process as ALLOY_CONF sets it
 * up: its files, a forked child's files, and what is written at exit.
 *
 * Everything here may run where the process's malloc must not be called
 * (the first allocation of a program whose malloc is alloy), so files are
 * file descriptors written with write(2), the exit report is written from
 * a destructor rather than registered with atexit(), and messages are
 * formatted into buffers on the stack.
 *
 *  - "stderr" and "stdout" are copies of descriptors 2 and 1 made at
 *    start: a program that closes its own before exit (ls, sort) still
 *    gets its report.
 *  - As few descriptors as can be stay open in the program: a copy of
 *    stderr or stdout only where an output goes there (alloy's own lines
 *    otherwise go to 2 as it is), and a report to a regular file is
 *    opened at start, to truncate it and to catch a bad path, and by its
 *    path again at exit, to append.  Every descriptor kept is high and
 *    closed on exec, and is checked to still hold its file before it is
 *    written to (stream.c): a program that closed it, or put a file of
 *    its own at its number, never gets alloy's output in that file.  A
 *    file is then opened again if its path is still that file, a copy
 *    of stderr or stdout taken again from 2 or 1 if they are; else the
 *    output is dropped, with a line on stderr.
 *  - %p in a path is the process id.  A forked child whose paths have %p
 *    writes files of its own (opened at its first event, or at its exit),
 *    its trace starting with the blocks it inherited; without %p a child
 *    writes nothing, the files being its parent's.
 *  - Every file is opened at start, so that a path that cannot be opened
 *    is an ALLOY_CONF error at once (`alloy conf` exits 1), not a surprise
 *    at exit.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "kernel/fd.h"

#define REPORT_BUF 4096

/*
 * A copy of stderr or stdout.  The file it is on is set once, at start;
 * fd changes only to a new copy (from any thread: compare-and-swap).
 */
struct std_copy {
	bool saved; /* the reporter started: the copy stands for the stream */
	bool open;  /* the stream was open then: dev and ino are its file */
	_Atomic int fd;
	dev_t dev;
	ino_t ino;
};

static struct {
	pthread_mutex_t lock;
	bool started; /* configured outputs are on */
	bool child;   /* a forked child of the process that started them */
	atomic_bool reopen; /* a child's %p trace and log, at its next event */
	struct std_copy err, out; /* the saved stderr and stdout */
	bool report_on;		  /* an exit report is to be written */
	struct rep_fd report;	  /* fd -1: closed till exit, or none */
	bool report_own;	  /* report is a file we opened */
	const char *report_std;	  /* "stderr" or "stdout", or NULL */
	enum rep_leaks leaks;
	char report_path[ALLOY_CONF_PATH_MAX];
	char report_abs[ALLOY_CONF_PATH_MAX + 256];
	char trace_where[ALLOY_CONF_PATH_MAX]; /* as given: %p unexpanded */
} X = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.err.fd = -1,
	.out.fd = -1,
	.report.fd = -1,
};

/* fd as it is, with its file; -1 if it is closed. */
static int ident(struct rep_fd *k, int fd)
{
	struct stat st;

	k->fd = -1;
	if (fstat(fd, &st))
		return -1;
	k->fd = fd;
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	return fd;
}

/* At start: a high copy of std, and the file it is. */
static void std_save(struct std_copy *c, int std)
{
	struct rep_fd k;

	c->saved = true;
	c->open = ident(&k, std) >= 0;
	if (!c->open)
		return;
	c->dev = k.dev;
	c->ino = k.ino;
	atomic_store(&c->fd, alloy__fd_copy_high(std));
}

int alloy__rep_std_fd(const char *where, struct rep_fd *id)
{
	bool out = !strcmp(where, "stdout");
	struct std_copy *c = out ? &X.out : &X.err;
	int std = out ? STDOUT_FILENO : STDERR_FILENO;
	struct rep_fd k, tmp;
	int was, copy;

	if (!id)
		id = &tmp;
	if (!c->saved)
		return ident(id, std);
	k.fd = -1;
	if (!c->open)
		goto out;
	k.dev = c->dev;
	k.ino = c->ino;
	k.fd = was = atomic_load(&c->fd);
	if (alloy__rep_fd_ours(&k))
		goto out;
	/* The copy is gone: the process's own, while it is that file. */
	k.fd = std;
	if (!alloy__rep_fd_ours(&k)) {
		k.fd = -1;
		goto out;
	}
	copy = alloy__fd_copy_high(std);
	if (copy < 0)
		goto out; /* no number free: std itself */
	if (atomic_compare_exchange_strong(&c->fd, &was, copy)) {
		k.fd = copy;
	} else {
		/* Another thread made one first. */
		close(copy);
		k.fd = was;
	}
out:
	*id = k;
	return k.fd;
}

static bool has_pid(const char *path)
{
	for (const char *p = path; *p; p++) {
		if (p[0] == '%' && p[1] == 'p')
			return true;
		if (p[0] == '%' && p[1] == '%')
			p++;
	}
	return false;
}

/*
 * alloy run named another process as the one that keeps the file paths
 * as given (run_pid): this one adds .PID, so that the processes a
 * program starts neither truncate its report nor mix events into its
 * trace.
 */
static bool adds_pid(const char *path)
{
	uint64_t top = alloy__conf.run_pid;

	return top && top != (uint64_t)getpid() && alloy__conf_names_file(path);
}

/* Whether this process writes path to a file of its own. */
static bool own_file(const char *path)
{
	return has_pid(path) || adds_pid(path);
}

bool alloy__rep_expand_path(char *out, size_t len, const char *path)
{
	char pid[24];
	size_t n = 0;
	bool suffix = !has_pid(path) && adds_pid(path);

	snprintf(pid, sizeof(pid), "%ld", (long)getpid());
	for (const char *p = path; *p; p++) {
		const char *add = p;
		size_t k = 1;

		if (p[0] == '%' && p[1] == 'p') {
			add = pid;
			k = strlen(pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			p++;
		}
		if (n + k >= len)
			return false;
		memcpy(out + n, add, k);
		n += k;
	}
	if (suffix && n + 1 + strlen(pid) >= len)
		return false;
	if (suffix)
		n += (size_t)sprintf(out + n, ".%s", pid);
	out[n] = '\0';
	return true;
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = write(fd, s, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

void alloy__rep_say(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n, fd;

	memcpy(line, "alloy: ", 7);
	va_start(ap, fmt);
	n = vsnprintf(line + 7, sizeof(line) - 8, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = 7 + (n < (int)sizeof(line) - 8 ? n : (int)sizeof(line) - 9);
	line[n++] = '\n';
	/* Without the stderr of the start, one line on the program's own. */
	fd = alloy__rep_std_fd("stderr", NULL);
	write_all(fd >= 0 ? fd : STDERR_FILENO, line, (size_t)n);
}

/* ---- the exit report ------------------------------------------------ */

struct report_out {
	size_t len;
	bool failed;
	bool wrote; /* some of it is in the file */
	char buf[REPORT_BUF];
};

/*
 * The report's descriptor, checked before each write.  A regular file,
 * closed since start, is opened by its path to append (its report is
 * whole: it goes where the path says now).  A descriptor held since
 * start that the program closed, or put a file of its own at, is opened
 * again only if its path is still that file; stderr or stdout taken
 * again from 2 or 1 if they are.  Else -1, said.
 */
static int report_fd(const struct report_out *r)
{
	const char *lost = r->wrote ? "the exit report is incomplete"
				    : "no exit report is written";
	int fd = X.report.fd, err;

	if (alloy__rep_fd_ours(&X.report))
		return X.report.fd;
	if (X.report_std) {
		if (alloy__rep_std_fd(X.report_std, &X.report) >= 0)
			return X.report.fd;
		alloy__rep_say(
			"report:%s: the program closed or replaced alloy's copy of its %s (descriptor %d), and its own is another file now; %s",
			X.report_std, X.report_std, fd, lost);
		return -1;
	}
	if (fd < 0) {
		err = alloy__rep_fd_append(&X.report, X.report_path,
					   X.report_abs);
		if (!err)
			return X.report.fd;
		alloy__rep_say("report:%s: cannot open it at exit (%s); %s",
			       X.report_path, strerrordesc_np(-err), lost);
		return -1;
	}
	err = alloy__rep_fd_reopen(&X.report, X.report_path, X.report_abs);
	if (!err)
		return X.report.fd;
	alloy__rep_say(
		"report:%s: the program closed or replaced alloy's descriptor %d for it, and the file cannot be opened again (%s); %s",
		X.report_path, fd,
		err == -ESTALE ? "a different file is at the path now"
			       : strerrordesc_np(-err),
		lost);
	return -1;
}

static void report_flush(struct report_out *r)
{
	size_t off = 0;
	int fd = -1;

	if (r->len && !r->failed) {
		fd = report_fd(r);
		r->failed = fd < 0;
	}
	while (off < r->len && !r->failed) {
		ssize_t k = write(fd, r->buf + off, r->len - off);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r->failed = true;
			alloy__rep_say(
				"report:%s: write failed (%s); the exit report is incomplete",
				X.report_path,
				strerrordesc_np(k < 0 ? errno : EIO));
			break;
		}
		off += (size_t)k;
		r->wrote = true;
	}
	r->len = 0;
}

static void report_write(void *arg, const char *text)
{
	struct report_out *r = arg;
	size_t n = strlen(text);

	while (n) {
		size_t k = sizeof(r->buf) - r->len;

		if (!k) {
			report_flush(r);
			continue;
		}
		k = k < n ? k : n;
		memcpy(r->buf + r->len, text, k);
		r->len += k;
		text += k;
		n -= k;
	}
}

/*
 * Set up report:WHERE; false with the message set.  A regular file is
 * truncated and closed again unless hold: nothing of alloy's is open in
 * the program till exit (a program listing its descriptors sees none),
 * and at exit the path is opened again.
 */
static bool report_open(const char *where, bool hold)
{
	struct stat st;
	int err;

	if (!alloy__rep_expand_path(X.report_path, sizeof(X.report_path),
				    where)) {
		alloy__error(-ENAMETOOLONG, "report", "path \"%s\" is too long",
			     where);
		return false;
	}
	if (!alloy__conf_names_file(where)) {
		X.report_std = strcmp(where, "stdout") ? "stderr" : "stdout";
		/* Closed at start: nowhere to write, nor to say so. */
		X.report_on = alloy__rep_std_fd(X.report_std, &X.report) >= 0;
		X.report_own = false;
		return true;
	}
	err = alloy__rep_fd_open(&X.report, X.report_path, X.report_abs,
				 sizeof(X.report_abs));
	if (err) {
		alloy__error(err, "report", "cannot open \"%s\": %s",
			     X.report_path, strerrordesc_np(-err));
		return false;
	}
	X.report_std = NULL;
	X.report_own = true;
	X.report_on = true;
	if (!hold && !fstat(X.report.fd, &st) && S_ISREG(st.st_mode)) {
		close(X.report.fd);
		X.report.fd = -1;
	}
	return true;
}

static void write_report(void)
{
	static struct report_out r; /* 4 KiB off a destructor's stack */
	bool json = !strcmp(alloy__conf.report_format, "json");

	r.len = 0;
	r.failed = false;
	r.wrote = false;
	alloy__rep_print(report_write, &r,
			 json ? ALLOY_REPORT_JSON : ALLOY_REPORT_TEXT, X.leaks);
	report_flush(&r);
	if (X.report_own)
		alloy__rep_fd_close(&X.report);
	X.report.fd = -1;
	X.report_on = false;
}

/* ---- a forked child's own files ---------------------------------------- */

void alloy__rep_session_lock(bool lock)
{
	if (lock)
		pthread_mutex_lock(&X.lock);
	else
		pthread_mutex_unlock(&X.lock);
}

/* The child of a reporter with files (from the reporter's atfork handler). */
void alloy__rep_session_forked(void)
{
	const struct alloy__conf *c = &alloy__conf;

	if (!X.started && !atomic_load(&alloy__rep_tracing))
		return;
	X.child = true;
	/* The parent's files: forget them, never write them. */
	if (atomic_load(&alloy__rep_tracing)) {
		alloy__stream_drop(&alloy__rep_trace);
		atomic_store(&alloy__rep_trace_gen, 0);
		if (!own_file(X.trace_where))
			atomic_store(&alloy__rep_tracing, false);
	}
	if (atomic_load(&alloy__rep_logging)) {
		alloy__stream_drop(&alloy__rep_log);
		if (!own_file(c->log)) /* stderr and stdout are never one */
			atomic_store(&alloy__rep_logging, false);
	}
	if (X.report_own)
		alloy__rep_fd_close(&X.report);
	X.report.fd = -1;
	X.report_on = false;
	atomic_store(&X.reopen, atomic_load(&alloy__rep_tracing) ||
					atomic_load(&alloy__rep_logging));
}

/* A child's %p trace and log, opened at its first event. */
void alloy__rep_session_reopen(void)
{
	const struct alloy__conf *c = &alloy__conf;
	char note[48];

	pthread_mutex_lock(&X.lock);
	if (!atomic_load(&X.reopen))
		goto out_unlock;
	snprintf(note, sizeof(note), "forked_from=%ld", (long)getppid());
	if (atomic_load(&alloy__rep_tracing) &&
	    alloy__rep_trace_open(X.trace_where, note)) {
		atomic_store(&alloy__rep_tracing, false);
		alloy__rep_say("trace:%s: %s; the child %ld writes no trace",
			       X.trace_where, alloy_last_error(),
			       (long)getpid());
	}
	if (atomic_load(&alloy__rep_logging) && alloy__rep_log_open(c->log)) {
		atomic_store(&alloy__rep_logging, false);
		alloy__rep_say("log:%s: %s", c->log, alloy_last_error());
	}
	atomic_store(&X.reopen, false);
out_unlock:
	pthread_mutex_unlock(&X.lock);
}

/* ---- a trace started and stopped by the program -------------------------- */

int alloy_reporter_trace_start(const char *path)
{
	int rc;

	ALLOY_ENFORCE(path && path[0], -EINVAL, "trace path is %s",
		      path ? "empty" : "NULL");
	ALLOY_ENFORCE(strlen(path) < sizeof(X.trace_where), -ENAMETOOLONG,
		      "trace path \"%s\" is too long", path);
	rc = alloy_reporter_enable();
	if (rc)
		return rc;
	pthread_mutex_lock(&X.lock);
	if (atomic_load(&alloy__rep_tracing)) {
		rc = alloy__error(-EBUSY, __func__,
				  "a trace is being written already (to %s)",
				  alloy__rep_trace.path);
		goto out_unlock;
	}
	alloy__rep_stacks_init();
	rc = alloy__rep_trace_open(path, NULL);
	if (!rc)
		memcpy(X.trace_where, path, strlen(path) + 1);
out_unlock:
	pthread_mutex_unlock(&X.lock);
	return rc;
}

int alloy_reporter_trace_stop(void)
{
	int rc;

	pthread_mutex_lock(&X.lock);
	rc = atomic_load(&alloy__rep_tracing) ? alloy__rep_trace_close()
					      : -ENOENT;
	pthread_mutex_unlock(&X.lock);
	if (rc == -ENOENT)
		return alloy__error(rc, __func__, "no trace is being written");
	if (rc)
		return alloy__error(
			rc, __func__,
			"the trace is incomplete: a write failed (%s)",
			strerrordesc_np(-rc));
	return 0;
}

bool alloy__rep_session_reopen_pending(void)
{
	return atomic_load_explicit(&X.reopen, memory_order_relaxed);
}

/* ---- start and end ----------------------------------------------------- */

void alloy__reporter_start(void)
{
	const struct alloy__conf *c = &alloy__conf;

	/* Refused wherever it is set: `alloy conf` and a library alike. */
	if (c->backtrace && !alloy__rep_stacks_available())
		alloy__conf_report(
			"backtrace:1: this alloy was built without libunwind; no call stacks are recorded");
	if (!c->report[0] && !c->log[0] && !c->trace[0])
		return;
	/* Else alloy's lines go to the program's stderr as it is then. */
	if (!strcmp(c->report, "stderr") || !strcmp(c->log, "stderr") ||
	    !strcmp(c->trace, "stderr"))
		std_save(&X.err, STDERR_FILENO);
	if (!strcmp(c->report, "stdout") || !strcmp(c->log, "stdout") ||
	    !strcmp(c->trace, "stdout"))
		std_save(&X.out, STDOUT_FILENO);
	X.leaks = !strcmp(c->leaks, "off")	 ? REP_LEAKS_OFF
		  : !strcmp(c->leaks, "summary") ? REP_LEAKS_SUMMARY
						 : REP_LEAKS_FULL;
	alloy__rep_stacks_init();
	if (c->trace[0] && alloy__rep_trace_open(c->trace, NULL))
		alloy__conf_report("trace:%s: %s; no trace written", c->trace,
				   alloy_last_error());
	else if (c->trace[0])
		memcpy(X.trace_where, c->trace, sizeof(X.trace_where));
	if (c->log[0] && alloy__rep_log_open(c->log))
		alloy__conf_report("log:%s: %s; no event log", c->log,
				   alloy_last_error());
	if (c->report[0] && !report_open(c->report, false))
		alloy__conf_report("report:%s: %s; no exit report", c->report,
				   alloy_last_error());
	if (alloy_reporter_enable()) {
		alloy__conf_report("report: %s; the reporter is off",
				   alloy_last_error());
		return;
	}
	X.started = true;
}

/*
 * At exit: after the program's own atexit handlers (which may still free
 * blocks), as the destructors of loaded objects run after them.  Not an
 * atexit() handler: registering one may allocate.
 */
__attribute__((destructor)) static void session_end(void)
{
	const struct alloy__conf *c = &alloy__conf;

	if (X.child && atomic_load(&X.reopen))
		alloy__rep_session_reopen();
	/* A trace the program started and did not stop ends here too. */
	alloy__rep_trace_close();
	if (!X.started)
		return;
	alloy__rep_log_close();
	if (X.child && c->report[0]) {
		/* A child reports only to a file of its own. */
		if (!own_file(c->report) || !report_open(c->report, true))
			return;
	}
	if (X.report_on)
		write_report();
}
