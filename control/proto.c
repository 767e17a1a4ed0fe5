// SPDX-License-Identifier: MIT
/*
 * control/proto.c - the control protocol's request parser and the peer
 * rule.
 *
 * A request is one line of printable text: the version token, a command
 * and its arguments, separated by spaces.  Everything a client sends is
 * checked here before any of it reaches the program: a control byte, an
 * unknown version, command or option, a missing or extra argument is
 * refused with a message that names it, escaped, so that a client's bytes
 * never reach a terminal raw.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <alloy/alloy.h>

#include "control/proto.h"

#define MAX_WORDS 8
/* The longest word a message quotes, before escaping. */
#define QUOTE_MAX 48

struct words {
	const char *at[MAX_WORDS];
	size_t len[MAX_WORDS];
	int n;
	bool too_many;
};

static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	char raw[CTL_ERROR_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	if (errlen)
		alloy__escape(raw, err, errlen);
	return -EINVAL;
}

static bool blank(char c)
{
	return c == ' ';
}

static void split(const char *s, size_t len, struct words *w)
{
	size_t i = 0;

	w->n = 0;
	w->too_many = false;
	while (i < len) {
		size_t start;

		while (i < len && blank(s[i]))
			i++;
		if (i == len)
			break;
		start = i;
		while (i < len && !blank(s[i]))
			i++;
		if (w->n == MAX_WORDS) {
			w->too_many = true;
			return;
		}
		w->at[w->n] = s + start;
		w->len[w->n] = i - start;
		w->n++;
	}
}

static bool is(const struct words *w, int i, const char *s)
{
	return i < w->n && w->len[i] == strlen(s) &&
	       !memcmp(w->at[i], s, w->len[i]);
}

/* Word i as a C string for a message, cut to QUOTE_MAX bytes. */
static const char *quote(const struct words *w, int i, char *buf)
{
	size_t n = w->len[i] < QUOTE_MAX ? w->len[i] : QUOTE_MAX;

	memcpy(buf, w->at[i], n);
	buf[n] = '\0';
	return buf;
}

static int parse_swap(const struct words *w, struct ctl_request *req, char *err,
		      size_t errlen)
{
	char dev[16], q[QUOTE_MAX + 1];
	const char *colon;
	size_t dlen, nlen;
	int type;

	if (w->n != 3)
		return fail(
			err, errlen,
			"swap takes one argument, DEVICE:ALLOCATOR (e.g. swap cpu:jemalloc)");
	colon = memchr(w->at[2], ':', w->len[2]);
	if (!colon)
		return fail(
			err, errlen,
			"swap %s: expected DEVICE:ALLOCATOR (e.g. cpu:jemalloc)",
			quote(w, 2, q));
	dlen = (size_t)(colon - w->at[2]);
	nlen = w->len[2] - dlen - 1;
	if (dlen >= sizeof(dev))
		return fail(err, errlen, "swap %s: unknown device",
			    quote(w, 2, q));
	memcpy(dev, w->at[2], dlen);
	dev[dlen] = '\0';
	type = alloy_device_type_from_name(dev);
	if (type < 0)
		return fail(
			err, errlen,
			"swap %s: unknown device \"%s\" (cpu, cuda or cuda_host)",
			quote(w, 2, q), dev);
	if (nlen == 0 || nlen > ALLOY_NAME_MAX)
		return fail(
			err, errlen,
			"swap %s: an allocator name is 1 to %d characters of [A-Za-z0-9_]",
			quote(w, 2, q), ALLOY_NAME_MAX);
	memcpy(req->allocator, colon + 1, nlen);
	req->allocator[nlen] = '\0';
	if (!alloy_allocator_name_valid(req->allocator))
		return fail(
			err, errlen,
			"swap %s: an allocator name is 1 to %d characters of [A-Za-z0-9_]",
			quote(w, 2, q), ALLOY_NAME_MAX);
	req->command = CTL_SWAP;
	req->device = type;
	return 0;
}

/* trace start PATH: the path is the rest of the line, blanks kept. */
static int parse_trace(const char *line, size_t len, const struct words *w,
		       struct ctl_request *req, char *err, size_t errlen)
{
	const char *p;
	size_t n;

	if (is(w, 2, "stop")) {
		if (w->n != 3)
			return fail(err, errlen,
				    "trace stop takes no argument");
		req->command = CTL_TRACE_STOP;
		return 0;
	}
	if (!is(w, 2, "start"))
		return fail(err, errlen, "trace takes start FILE or stop");
	if (w->n < 4)
		return fail(err, errlen, "trace start needs a FILE");
	p = w->at[3];
	n = len - (size_t)(p - line);
	while (n && blank(p[n - 1]))
		n--;
	if (n >= sizeof(req->path))
		return fail(err, errlen,
			    "trace start: the path is longer than %zu bytes",
			    sizeof(req->path) - 1);
	memcpy(req->path, p, n);
	req->path[n] = '\0';
	req->command = CTL_TRACE_START;
	return 0;
}

static int parse_report(const struct words *w, struct ctl_request *req,
			char *err, size_t errlen)
{
	char q[QUOTE_MAX + 1];

	req->command = CTL_REPORT;
	req->at_peak = false;
	req->json = false;
	for (int i = 2; i < w->n; i++) {
		bool at = is(w, i, "--at"), format = is(w, i, "--format");

		if (!at && !format)
			return fail(
				err, errlen,
				"report: unknown option %s (--at peak|now, --format text|json)",
				quote(w, i, q));
		if (i + 1 == w->n)
			return fail(err, errlen, "report: %s needs a value",
				    at ? "--at" : "--format");
		i++;
		if (at && (is(w, i, "peak") || is(w, i, "now")))
			req->at_peak = is(w, i, "peak");
		else if (format && (is(w, i, "text") || is(w, i, "json")))
			req->json = is(w, i, "json");
		else
			return fail(err, errlen, "report: %s %s: expected %s",
				    at ? "--at" : "--format", quote(w, i, q),
				    at ? "peak or now" : "text or json");
	}
	return 0;
}

int alloy__ctl_parse(const char *line, size_t len, struct ctl_request *req,
		     char *err, size_t errlen)
{
	char q[QUOTE_MAX + 1];
	struct words w;

	if (errlen)
		err[0] = '\0';
	if (!line || !req)
		return fail(err, errlen, "no request");
	memset(req, 0, sizeof(*req));
	if (len && line[len - 1] == '\r')
		len--;
	for (size_t i = 0; i < len; i++) {
		unsigned char b = (unsigned char)line[i];

		/* A tab too: it would reach a trace's path otherwise. */
		if (b < 0x20 || b == 0x7f)
			return fail(
				err, errlen,
				"the request holds a control byte (0x%02x at %zu)",
				b, i);
	}
	split(line, len, &w);
	if (w.too_many)
		return fail(err, errlen, "too many words in the request");
	if (w.n == 0)
		return fail(err, errlen, "empty request");
	if (!is(&w, 0, CTL_VERSION_STR))
		return fail(
			err, errlen,
			"unknown protocol %s: this program speaks " CTL_VERSION_STR
			" (a request is \"" CTL_VERSION_STR
			" COMMAND [ARGS]\")",
			quote(&w, 0, q));
	if (w.n == 1)
		return fail(err, errlen, "no command after " CTL_VERSION_STR);
	if (is(&w, 1, "swap"))
		return parse_swap(&w, req, err, errlen);
	if (is(&w, 1, "trace"))
		return parse_trace(line, len, &w, req, err, errlen);
	if (is(&w, 1, "report"))
		return parse_report(&w, req, err, errlen);
	if (is(&w, 1, "backtrace")) {
		if (w.n != 3 || !(is(&w, 2, "on") || is(&w, 2, "off")))
			return fail(err, errlen, "backtrace takes on or off");
		req->command = CTL_BACKTRACE;
		req->on = is(&w, 2, "on");
		return 0;
	}
	if (is(&w, 1, "conf") || is(&w, 1, "reset-peaks") ||
	    is(&w, 1, "stats") || is(&w, 1, "ping")) {
		if (w.n != 2)
			return fail(err, errlen, "%s takes no argument",
				    quote(&w, 1, q));
		req->command = is(&w, 1, "conf")	  ? CTL_CONF
			       : is(&w, 1, "reset-peaks") ? CTL_RESET_PEAKS
			       : is(&w, 1, "stats")	  ? CTL_STATS
							  : CTL_PING;
		return 0;
	}
	return fail(
		err, errlen,
		"unknown command %s (swap, trace, backtrace, report, conf, reset-peaks, stats, ping)",
		quote(&w, 1, q));
}

bool alloy__ctl_peer_allowed(unsigned peer_uid, unsigned self_uid)
{
	return peer_uid == self_uid || peer_uid == 0;
}
