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
#include <unistd.h>

#include "internal.h"

#define REPORT_BUF 4096

static struct {
	pthread_mutex_t lock;
	bool started; /* configured outputs are on */
	bool child;   /* a forked child of the process that started them */
	atomic_bool reopen; /* a child's %p trace and log, at its next event */
	int err_fd, out_fd; /* the saved stderr and stdout, or -1 */
	int report_fd;	    /* -1: none or not yet (a child's) */
	bool report_own;    /* report_fd is a file we opened */
	enum rep_leaks leaks;
	char report_path[ALLOY_CONF_PATH_MAX];
	char trace_where[ALLOY_CONF_PATH_MAX]; /* as given: %p unexpanded */
} X = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.err_fd = -1,
	.out_fd = -1,
	.report_fd = -1,
};

int alloy__rep_std_fd(const char *where)
{
	if (!strcmp(where, "stdout"))
		return X.out_fd >= 0 ? X.out_fd : STDOUT_FILENO;
	return X.err_fd >= 0 ? X.err_fd : STDERR_FILENO;
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

	return top && top != (uint64_t)getpid() &&
	       alloy__conf_names_file(path);
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
	int n;

	memcpy(line, "alloy: ", 7);
	va_start(ap, fmt);
	n = vsnprintf(line + 7, sizeof(line) - 8, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n = 7 + (n < (int)sizeof(line) - 8 ? n : (int)sizeof(line) - 9);
	line[n++] = '\n';
	write_all(alloy__rep_std_fd("stderr"), line, (size_t)n);
}

/* ---- the exit report ------------------------------------------------ */

struct report_out {
	int fd;
	size_t len;
	bool failed;
	char buf[REPORT_BUF];
};

static void report_flush(struct report_out *r)
{
	size_t off = 0;

	while (off < r->len && !r->failed) {
		ssize_t k = write(r->fd, r->buf + off, r->len - off);

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

/* Open report:PATH (never stderr/stdout); false with the message set. */
static bool report_open(const char *where)
{
	if (!alloy__rep_expand_path(X.report_path, sizeof(X.report_path),
				    where)) {
		alloy__error(-ENAMETOOLONG, "report", "path \"%s\" is too long",
			     where);
		return false;
	}
	if (!alloy__conf_names_file(where)) {
		X.report_fd = alloy__rep_std_fd(where);
		X.report_own = false;
		return true;
	}
	X.report_fd = open(X.report_path,
			   O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (X.report_fd < 0) {
		int err = errno;

		alloy__error(-err, "report", "cannot open \"%s\": %s",
			     X.report_path, strerrordesc_np(err));
		return false;
	}
	X.report_own = true;
	return true;
}

static void write_report(void)
{
	static struct report_out r; /* 4 KiB off a destructor's stack */
	bool json = !strcmp(alloy__conf.report_format, "json");

	r.fd = X.report_fd;
	r.len = 0;
	r.failed = false;
	alloy__rep_print(report_write, &r,
			 json ? ALLOY_REPORT_JSON : ALLOY_REPORT_TEXT, X.leaks);
	report_flush(&r);
	if (X.report_own)
		close(X.report_fd);
	X.report_fd = -1;
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
	if (X.report_own && X.report_fd >= 0)
		close(X.report_fd);
	X.report_fd = -1;
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

/* ---- a trace started and stopped by the program ---------------------------
 */

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

static int save_fd(int fd)
{
	/* Above the low numbers programs expect to be theirs to reuse. */
	return fcntl(fd, F_DUPFD_CLOEXEC, 3);
}

void alloy__reporter_start(void)
{
	const struct alloy__conf *c = &alloy__conf;

	if (!c->report[0] && !c->log[0] && !c->trace[0])
		return;
	X.err_fd = save_fd(STDERR_FILENO);
	if (!strcmp(c->report, "stdout") || !strcmp(c->log, "stdout") ||
	    !strcmp(c->trace, "stdout"))
		X.out_fd = save_fd(STDOUT_FILENO);
	X.leaks = !strcmp(c->leaks, "off")	 ? REP_LEAKS_OFF
		  : !strcmp(c->leaks, "summary") ? REP_LEAKS_SUMMARY
						 : REP_LEAKS_FULL;
	alloy__rep_stacks_init();
	if (c->backtrace && !alloy__rep_stacks_available())
		alloy__conf_report(
			"backtrace:1: this alloy was built without libunwind; no call stacks are recorded");
	if (c->trace[0] && alloy__rep_trace_open(c->trace, NULL))
		alloy__conf_report("trace:%s: %s; no trace written", c->trace,
				   alloy_last_error());
	else if (c->trace[0])
		memcpy(X.trace_where, c->trace, sizeof(X.trace_where));
	if (c->log[0] && alloy__rep_log_open(c->log))
		alloy__conf_report("log:%s: %s; no event log", c->log,
				   alloy_last_error());
	if (c->report[0] && !report_open(c->report))
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
		if (!own_file(c->report) || !report_open(c->report))
			return;
	}
	if (X.report_fd >= 0)
		write_report();
}
