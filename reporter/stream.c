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
 */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "core/arena.h"

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
	s->fd = -1;
	s->own_fd = false;
	s->regular = false;
	s->what = what;
	s->len = s->lines = s->lost = s->good = 0;
	s->error = 0;
	if (!alloy__rep_expand_path(s->path, sizeof(s->path), where)) {
		rc = alloy__error(-ENAMETOOLONG, __func__,
				  "path \"%s\" is too long", where);
		goto out_unlock;
	}
	if (!alloy__conf_names_file(where)) {
		s->fd = alloy__rep_std_fd(where);
		s->line_flush = true;
	} else {
		s->fd = open(s->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			     0644);
		if (s->fd < 0) {
			int err = errno;

			rc = alloy__error(-err, __func__,
					  "cannot open \"%s\": %s", s->path,
					  strerrordesc_np(err));
			goto out_unlock;
		}
		s->own_fd = true;
		s->line_flush = isatty(s->fd);
		s->regular = !fstat(s->fd, &st) && S_ISREG(st.st_mode);
	}
	if (!s->buf) {
		s->buf = alloy__arena_alloc(cap);
		s->cap = s->buf ? cap : 0;
	}
	if (!s->buf) {
		if (s->own_fd)
			close(s->fd);
		s->fd = -1;
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

/* The first failure: say it once, and stop writing.  Under the lock. */
static void write_failed(struct rep_stream *s, int err)
{
	s->error = err;
	alloy__rep_say("%s:%s: write failed (%s); %s", s->what, s->path,
		       strerrordesc_np(-err),
		       !strcmp(s->what, "trace")
			       ? "the trace is incomplete from here on"
			       : "no more lines are written");
	/* Keep the file ending in a whole line (best effort). */
	if (s->regular && !ftruncate(s->fd, (off_t)s->good))
		lseek(s->fd, (off_t)s->good, SEEK_SET);
}

/* Write the buffer out; under the lock. */
static int write_out(struct rep_stream *s)
{
	size_t off = 0;

	if (s->error) {
		s->len = 0;
		return s->error;
	}
	while (off < s->len) {
		ssize_t n = write(s->fd, s->buf + off, s->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			/* Every line in the buffer counts as lost. */
			for (size_t i = 0; i < s->len; i++)
				s->lost += s->buf[i] == '\n';
			write_failed(s, n < 0 ? -errno : -EIO);
			break;
		}
		off += (size_t)n;
	}
	if (!s->error)
		s->good += s->len;
	s->len = 0;
	return s->error;
}

bool alloy__stream_begin(struct rep_stream *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->fd >= 0)
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
	if (s->fd >= 0)
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
	/* One more try, past the dropped lines: a disk with room again
	 * takes the mark; else it is lost with the rest. */
	len = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
	memcpy(buf, line, len);
	buf[len++] = '\n';
	if (write(s->fd, buf, len) != (ssize_t)len)
		s->lost++;
}

void alloy__stream_close(struct rep_stream *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->fd >= 0) {
		write_out(s);
		if (s->own_fd)
			close(s->fd);
	}
	s->fd = -1;
	s->len = 0;
	pthread_mutex_unlock(&s->lock);
}

void alloy__stream_drop(struct rep_stream *s)
{
	if (s->own_fd && s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->len = 0;
}
