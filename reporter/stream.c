// SPDX-License-Identifier: MIT
/*
 * reporter/stream.c - the trace and the event log's output: whole lines
 * through a bounded buffer.
 *
 * Memory stays bounded however long the program runs: the buffer has a
 * fixed size and is written out with write(2) whenever the next line
 * would not fit.  Only whole lines enter the buffer, so after a crash the
 * file holds every event up to the last write, each complete.  A writer
 * that has not written for flush_ns writes at its next event, so a
 * program that crashes after a quiet spell loses at most that spell.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

uint64_t alloy__rep_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int alloy__stream_open(struct rep_stream *s, const char *where, size_t cap)
{
	/* The lock is statically initialised and may be held around fork. */
	pthread_mutex_lock(&s->lock);
	s->fd = -1;
	s->own_fd = false;
	s->len = s->lines = 0;
	s->error = 0;
	if (!strcmp(where, "stderr") || !strcmp(where, "stdout")) {
		s->fd = where[3] == 'e' ? STDERR_FILENO : STDOUT_FILENO;
		s->line_flush = true;
	} else {
		s->fd = open(where, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
			     0644);
		if (s->fd < 0) {
			int err = errno;

			pthread_mutex_unlock(&s->lock);
			return alloy__error(-err, __func__,
					    "cannot open \"%s\": %s", where,
					    strerror(err));
		}
		s->own_fd = true;
		s->line_flush = isatty(s->fd);
	}
	s->buf = malloc(cap);
	if (!s->buf) {
		if (s->own_fd)
			close(s->fd);
		s->fd = -1;
		pthread_mutex_unlock(&s->lock);
		return alloy__error(-ENOMEM, __func__,
				    "no memory for a %zu-byte buffer", cap);
	}
	s->cap = cap;
	s->flush_ns = 100 * 1000 * 1000; /* 100 ms */
	s->last_flush_ns = alloy__rep_now_ns();
	pthread_mutex_unlock(&s->lock);
	return 0;
}

/* Write the buffer out; under the lock. */
static int write_out(struct rep_stream *s)
{
	size_t off = 0;

	while (off < s->len) {
		ssize_t n = write(s->fd, s->buf + off, s->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!s->error)
				s->error = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	s->len = 0;
	return s->error;
}

void alloy__stream_line(struct rep_stream *s, const char *line, size_t len,
			uint64_t now_ns)
{
	pthread_mutex_lock(&s->lock);
	if (s->fd < 0)
		goto out_unlock;
	if (s->len + len + 1 > s->cap) {
		write_out(s);
		s->last_flush_ns = now_ns;
	}
	/* Event lines are short; a longer one is cut to fit, never split. */
	if (len + 1 > s->cap)
		len = s->cap - 1;
	memcpy(s->buf + s->len, line, len);
	s->len += len;
	s->buf[s->len++] = '\n';
	s->lines++;
	if (s->line_flush || now_ns - s->last_flush_ns >= s->flush_ns) {
		write_out(s);
		s->last_flush_ns = now_ns;
	}
out_unlock:
	pthread_mutex_unlock(&s->lock);
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

void alloy__stream_close(struct rep_stream *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->fd >= 0) {
		write_out(s);
		if (s->own_fd)
			close(s->fd);
	}
	s->fd = -1;
	free(s->buf);
	s->buf = NULL;
	s->len = s->cap = 0;
	pthread_mutex_unlock(&s->lock);
}
