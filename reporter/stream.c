// SPDX-License-Identifier: MIT
/*
 * reporter/stream.c - the trace and the event log's output: whole lines
 * through a bounded buffer.
 *
 * Memory stays bounded however long the program runs: the buffer has a
 * fixed size (from alloy's arena: this runs inside allocations) and is
 * written out with write(2) whenever the next line would not fit.  Only
 * whole lines enter the buffer, so after a crash the file holds every
 * event up to the last write, each complete.  A writer that has not
 * written for flush_ns writes at its next event, so a program that
 * crashes after a quiet spell loses at most that spell.
 *
 * Output is never lost without a word: the first write that fails is
 * said on stderr, with what is lost.  A disk that is full stays full, so
 * the stream then stops writing and counts the lines it drops; in a
 * regular file the part of the failed buffer that landed is cut off, so
 * the file still ends in a whole line and the trace can say at its end
 * that it is incomplete.
 *
 * A trace path ending in .zst is written through zstd (compress.c) at
 * those same write-outs, each ending a zstd block, so the compressed file
 * too holds every record up to the last write.
 *
 * The descriptors are alloy's, open in a program that does not know of
 * them (docs/PRELOAD.md, "What alloy keeps open in your program"): they
 * sit high and close on exec, and each write first checks that the
 * number still holds the file alloy opened, since a program may close
 * every descriptor above 2 (daemons, closefrom) and open its own files
 * at the same numbers.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "kernel/arena.h"
#include "kernel/fd.h"

void alloy__rep_fd_keep(struct rep_fd *k, int fd)
{
	struct stat st;
	int high;

	k->fd = -1;
	if (fd < 0)
		return;
	/* With no number free up there, it stays where it is. */
	if (fd < alloy__fd_high_base()) {
		high = alloy__fd_copy_high(fd);
		if (high >= 0) {
			close(fd);
			fd = high;
		}
	}
	if (fstat(fd, &st)) {
		close(fd);
		return;
	}
	k->fd = fd;
	k->dev = st.st_dev;
	k->ino = st.st_ino;
}

bool alloy__rep_fd_ours(const struct rep_fd *k)
{
	struct stat st;

	return k->fd >= 0 && !fstat(k->fd, &st) && st.st_dev == k->dev &&
	       st.st_ino == k->ino;
}

void alloy__rep_fd_close(struct rep_fd *k)
{
	if (alloy__rep_fd_ours(k))
		close(k->fd);
	k->fd = -1;
}

/*
 * path made absolute, "" if it does not fit.  The system call, not
 * getcwd(): glibc's falls back to code that allocates.
 */
static void abs_path(char *abs, size_t len, const char *path)
{
	size_t n = strlen(path);
	long k;

	abs[0] = '\0';
	if (path[0] == '/') {
		if (n < len)
			memcpy(abs, path, n + 1);
		return;
	}
	k = syscall(SYS_getcwd, abs, len);
	if (k <= 0 || abs[0] != '/') {
		abs[0] = '\0';
		return;
	}
	k = (long)strlen(abs);
	if ((size_t)k + 1 + n >= len) {
		abs[0] = '\0';
		return;
	}
	abs[k] = '/';
	memcpy(abs + k + 1, path, n + 1);
}

int alloy__rep_fd_open(struct rep_fd *k, const char *path, char *abs,
		       size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	k->fd = -1;
	if (fd < 0)
		return -errno;
	alloy__rep_fd_keep(k, fd);
	if (k->fd < 0)
		return -EBADF;
	abs_path(abs, len, path);
	return 0;
}

int alloy__rep_fd_append(struct rep_fd *k, const char *path, const char *abs)
{
	int fd, fl;

	/* Never blocks on a FIFO with no reader left. */
	fd = open(abs[0] ? abs : path,
		  O_WRONLY | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0644);
	k->fd = -1;
	if (fd < 0)
		return -errno;
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	alloy__rep_fd_keep(k, fd);
	return k->fd < 0 ? -EBADF : 0;
}

int alloy__rep_fd_reopen(struct rep_fd *k, const char *path, const char *abs)
{
	struct rep_fd was = *k;
	int rc = alloy__rep_fd_append(k, path, abs);

	if (rc)
		return rc;
	if (k->dev == was.dev && k->ino == was.ino)
		return 0;
	alloy__rep_fd_close(k);
	return -ESTALE;
}

uint64_t alloy__rep_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int alloy__stream_open(struct rep_stream *s, const char *what,
		       const char *where, size_t cap)
{
	struct stat st;
	int rc = 0;

	/* The lock is statically initialised and may be held around fork. */
	pthread_mutex_lock(&s->lock);
	s->out.fd = -1;
	s->own_fd = false;
	s->std = NULL;
	s->regular = false;
	s->what = what;
	s->len = s->lines = s->lost = s->good = 0;
	s->error = 0;
	if (!alloy__rep_expand_path(s->path, sizeof(s->path), where)) {
		rc = alloy__error(-ENAMETOOLONG, __func__,
				  "path \"%s\" is too long", where);
		goto out_unlock;
	}
	s->z = NULL;
	if (!strcmp(what, "trace") && alloy__conf_names_file(where) &&
	    alloy__rep_zstd_path(s->path)) {
		rc = alloy__rep_zstd_begin(&s->z);
		if (rc) {
			rc = alloy__error(
				rc, __func__,
				rc == -ENOTSUP
					? "\"%s\" ends in .zst, and this alloy was built without zstd (libzstd-dev): give a path without .zst for a text trace"
				: rc == -ELIBACC
					? "\"%s\" ends in .zst, and libzstd.so.1 cannot be loaded: give a path without .zst for a text trace"
					: "no memory for the compressor of \"%s\"",
				s->path);
			goto out_unlock;
		}
	}
	if (!alloy__conf_names_file(where)) {
		s->std = strcmp(where, "stdout") ? "stderr" : "stdout";
		alloy__rep_std_fd(s->std, &s->out);
		s->line_flush = true;
	} else {
		rc = alloy__rep_fd_open(&s->out, s->path, s->abs_path,
					sizeof(s->abs_path));
		if (rc) {
			rc = alloy__error(rc, __func__,
					  "cannot open \"%s\": %s", s->path,
					  strerrordesc_np(-rc));
			goto out_unlock;
		}
		s->own_fd = true;
		s->line_flush = isatty(s->out.fd);
		s->regular = !fstat(s->out.fd, &st) && S_ISREG(st.st_mode);
	}
	if (!s->buf) {
		s->buf = alloy__arena_alloc(cap);
		s->cap = s->buf ? cap : 0;
	}
	if (!s->buf) {
		if (s->own_fd)
			alloy__rep_fd_close(&s->out);
		s->out.fd = -1;
		rc = alloy__error(-ENOMEM, __func__,
				  "no memory for a %zu-byte buffer", cap);
		goto out_unlock;
	}
	s->flush_ns = 100 * 1000 * 1000; /* 100 ms */
	s->last_flush_ns = alloy__rep_now_ns();
out_unlock:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static const char *what_is_lost(const struct rep_stream *s)
{
	return !strcmp(s->what, "trace")
		       ? "the trace is incomplete from here on"
		       : "no more lines are written";
}

/* The first failure: say it once, and stop writing.  Under the lock. */
static void write_failed(struct rep_stream *s, int err)
{
	s->error = err;
	alloy__rep_say("%s:%s: write failed (%s); %s", s->what, s->path,
		       strerrordesc_np(-err), what_is_lost(s));
	/* Keep the file ending in a whole line (best effort). */
	if (s->regular && alloy__rep_fd_ours(&s->out) &&
	    !ftruncate(s->out.fd, (off_t)s->good))
		lseek(s->out.fd, (off_t)s->good, SEEK_SET);
}

/*
 * Whether the stream's descriptor still holds its file; under the lock.
 * If the program closed it or put a file of its own at its number, a
 * path is opened again to append (only if it is the same file) and
 * stderr or stdout asked of the session again; else the stream stops,
 * said once: nothing is written into the program's file.
 */
static bool still_ours(struct rep_stream *s)
{
	int fd = s->out.fd, err;

	if (alloy__rep_fd_ours(&s->out))
		return true;
	if (s->std) {
		if (alloy__rep_std_fd(s->std, &s->out) >= 0)
			return true;
		s->error = -EBADF;
		alloy__rep_say(
			"%s:%s: the program closed or replaced alloy's copy of its %s (descriptor %d), and its own is another file now; %s",
			s->what, s->std, s->std, fd, what_is_lost(s));
		return false;
	}
	err = alloy__rep_fd_reopen(&s->out, s->path, s->abs_path);
	if (!err)
		return true;
	s->error = err;
	alloy__rep_say(
		"%s:%s: the program closed or replaced alloy's descriptor %d for it, and the file cannot be opened again (%s); %s",
		s->what, s->path, fd,
		err == -ESTALE ? "a different file is at the path now"
			       : strerrordesc_np(-err),
		what_is_lost(s));
	return false;
}

/* All of [p, p + len) to the file: 0 or -errno. */
static int write_bytes(void *arg, const char *p, size_t len)
{
	struct rep_stream *s = arg;
	size_t off = 0;

	while (off < len) {
		ssize_t n = write(s->out.fd, p + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		off += (size_t)n;
		s->pending += (size_t)n;
	}
	return 0;
}

/*
 * Write the buffer out (through the compressor, which ends its frame
 * when last); under the lock.
 */
static int write_out_as(struct rep_stream *s, bool last)
{
	int err;

	if (!s->error && (s->len || (s->z && last)) && !still_ours(s)) {
		for (size_t i = 0; i < s->len; i++)
			s->lost += s->buf[i] == '\n';
	}
	if (s->error) {
		s->len = 0;
		return s->error;
	}
	if (!s->len && !(s->z && last))
		return 0;
	s->pending = 0;
	if (s->z)
		err = alloy__rep_zstd_push(s->z, s->buf, s->len, last,
					   write_bytes, s);
	else
		err = write_bytes(s, s->buf, s->len);
	if (err) {
		/* Every line in the buffer counts as lost. */
		for (size_t i = 0; i < s->len; i++)
			s->lost += s->buf[i] == '\n';
		write_failed(s, err);
	} else {
		s->good += s->pending;
	}
	s->len = 0;
	return s->error;
}

static int write_out(struct rep_stream *s)
{
	return write_out_as(s, false);
}

bool alloy__stream_begin(struct rep_stream *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->out.fd >= 0)
		return true;
	pthread_mutex_unlock(&s->lock);
	return false;
}

void alloy__stream_put(struct rep_stream *s, const char *line, size_t len)
{
	if (s->error) {
		s->lost++;
		s->lines++;
		return;
	}
	if (s->len + len + 1 > s->cap)
		write_out(s);
	/* Event lines are short; a longer one is cut to fit, never split. */
	if (len + 1 > s->cap)
		len = s->cap - 1;
	memcpy(s->buf + s->len, line, len);
	s->len += len;
	s->buf[s->len++] = '\n';
	s->lines++;
}

void alloy__stream_end(struct rep_stream *s, uint64_t now_ns)
{
	if (s->line_flush || now_ns - s->last_flush_ns >= s->flush_ns) {
		write_out(s);
		s->last_flush_ns = now_ns;
	}
	pthread_mutex_unlock(&s->lock);
}

void alloy__stream_line(struct rep_stream *s, const char *line, size_t len,
			uint64_t now_ns)
{
	if (!alloy__stream_begin(s))
		return;
	alloy__stream_put(s, line, len);
	alloy__stream_end(s, now_ns);
}

int alloy__stream_flush(struct rep_stream *s)
{
	int rc = 0;

	pthread_mutex_lock(&s->lock);
	if (s->out.fd >= 0)
		rc = write_out(s);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void alloy__stream_put_last(struct rep_stream *s, const char *line, size_t len)
{
	char buf[256];

	if (!s->error) {
		alloy__stream_put(s, line, len);
		return;
	}
	/* A compressed trace cannot take text after its cut: it ends cut. */
	if (s->z) {
		s->lost++;
		return;
	}
	/* One more try, past the dropped lines: a disk with room again
	 * takes the mark; else it is lost with the rest. */
	len = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len++] = '\n';
	if (!alloy__rep_fd_ours(&s->out) ||
	    write(s->out.fd, buf, len) != (ssize_t)len)
		s->lost++;
}

void alloy__stream_close(struct rep_stream *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->out.fd >= 0) {
		write_out_as(s, true);
		if (s->own_fd)
			alloy__rep_fd_close(&s->out);
	}
	s->out.fd = -1;
	s->len = 0;
	pthread_mutex_unlock(&s->lock);
}

void alloy__stream_drop(struct rep_stream *s)
{
	if (s->own_fd)
		alloy__rep_fd_close(&s->out);
	s->out.fd = -1;
	s->len = 0;
	s->z = NULL;
}
