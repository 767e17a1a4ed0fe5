// SPDX-License-Identifier: MIT
/*
 * control/commands.c - what each control request does, through the
 * public API only: the registry's defaults, the reporter's switches and
 * its own report.  The control thread runs these while the program goes
 * on allocating; every call made here is one the API allows from any
 * thread at any moment.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <alloy/alloy.h>

#include "kernel/arena.h"
#include "kernel/front.h"
#include "control/internal.h"

/* ---- the reply's body ----------------------------------------------- */

void alloy__ctl_out_put(struct ctl_out *o, const char *s, size_t n)
{
	if (o->failed)
		return;
	if (o->len + n + 1 > o->cap) {
		size_t cap = o->cap ? o->cap : 4096;
		char *p;

		while (cap < o->len + n + 1)
			cap *= 2;
		p = alloy__arena_alloc(cap);
		if (!p) {
			o->failed = true;
			return;
		}
		if (o->len)
			memcpy(p, o->buf, o->len);
		alloy__ctl_out_free(o);
		o->buf = p;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

void alloy__ctl_out_printf(struct ctl_out *o, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	alloy__ctl_out_put(o, line,
			   (size_t)n < sizeof(line) ? (size_t)n
						    : sizeof(line) - 1);
}

void alloy__ctl_out_free(struct ctl_out *o)
{
	if (o->buf)
		alloy__arena_free(o->buf, o->cap);
	o->buf = NULL;
	o->cap = 0;
}

static void out_write(void *arg, const char *text)
{
	alloy__ctl_out_put(arg, text, strlen(text));
}

/* ---- the commands --------------------------------------------------- */

static int say(char *msg, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int say(char *msg, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
	return rc;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/*
 * The switch itself is timed apart from loading the allocator's module:
 * a backend's own start-up (jemalloc's arenas) runs on this thread while
 * the program goes on allocating from the old default, and only the
 * switch is the moment its new blocks change hands.
 */
static int swap(const struct ctl_request *req, char *msg, size_t len)
{
	const char *dev = alloy_device_type_name(req->device);
	struct alloy_allocator *old = alloy_get_default(req->device);
	struct alloy_allocator *next;
	char was[ALLOY_NAME_MAX + 1] = "(none)", loaded[64] = "";
	double t0, ms;

	if (old)
		snprintf(was, sizeof(was), "%s", alloy_allocator_name(old));
	t0 = now_ms();
	next = alloy_request_allocator(req->allocator);
	if (!next)
		return say(msg, len, -1, "swap %s:%s: %s", dev, req->allocator,
			   alloy_last_error());
	ms = now_ms() - t0;
	if (ms >= 0.1)
		snprintf(loaded, sizeof(loaded), " (loaded in %.3f ms)", ms);
	t0 = now_ms();
	if (alloy_set_default(req->device, next) < 0)
		return say(msg, len, -1, "swap %s:%s: %s", dev, req->allocator,
			   alloy_last_error());
	ms = now_ms() - t0;
	if (!old || old == next)
		return say(msg, len, 0, "%s default: %s%s%s", dev,
			   req->allocator, loaded,
			   old ? " (it was already)" : "");
	return say(
		msg, len, 0,
		"%s default %s -> %s in %.3f ms%s; %lld blocks of %s are live and go back to it when freed",
		dev, was, req->allocator, ms, loaded,
		alloy_allocator_live_blocks(old), was);
}

/*
 * A trace goes to a regular file: opening a FIFO or a device would block
 * the control thread (and the reporter's lock it holds) on the other end.
 */
static int trace_start(const struct ctl_request *req, char *msg, size_t len)
{
	struct stat st;

	if (req->path[0] != '/' && strcmp(req->path, "stderr") != 0 &&
	    strcmp(req->path, "stdout") != 0)
		return say(
			msg, len, -1,
			"trace start: the path must be absolute (the program's directory is not the client's)");
	if (req->path[0] == '/' && !stat(req->path, &st) &&
	    !S_ISREG(st.st_mode))
		return say(msg, len, -1,
			   "trace start: %s exists and is not a regular file",
			   req->path);
	if (alloy_reporter_trace_start(req->path) < 0)
		return say(msg, len, -1, "trace start: %s", alloy_last_error());
	return say(msg, len, 0, "tracing to %s", req->path);
}

static int trace_stop(char *msg, size_t len)
{
	if (alloy_reporter_trace_stop() < 0)
		return say(msg, len, -1, "trace stop: %s", alloy_last_error());
	return say(msg, len, 0, "trace closed");
}

static int backtrace(const struct ctl_request *req, char *msg, size_t len)
{
	if (alloy_reporter_set_backtrace(req->on) < 0)
		return say(msg, len, -1, "backtrace %s: %s",
			   req->on ? "on" : "off", alloy_last_error());
	if (req->on && !alloy_reporter_enabled())
		return say(
			msg, len, 0,
			"call stacks on; the reporter is off, so none is recorded until it is on (trace start FILE)");
	return say(msg, len, 0, "call stacks %s", req->on ? "on" : "off");
}

static const char *device_str(struct alloy_device d, char *buf, size_t len)
{
	const char *t = alloy_device_type_name(d.type);

	snprintf(buf, len, "%s:%d", t ? t : "?", (int)d.index);
	return buf;
}

/* What the peaks were: per allocator and device, then the whole process. */
static int report_peak(const struct ctl_request *req, struct ctl_out *o,
		       char *msg, size_t len)
{
	struct alloy_reporter_snapshot *s = alloy__arena_alloc(sizeof(*s));
	char dev[32];

	if (!s)
		return say(msg, len, -1, "report: no memory for a snapshot");
	s->size = sizeof(*s);
	s->version = ALLOY_REPORTER_SNAPSHOT_VERSION;
	if (alloy_reporter_snapshot(s) < 0) {
		alloy__arena_free(s, sizeof(*s));
		return say(msg, len, -1, "report: %s", alloy_last_error());
	}
	if (req->json)
		alloy__ctl_out_printf(o, "{\"at\": \"peak\", \"entries\": [");
	else
		alloy__ctl_out_printf(
			o,
			"alloy reporter: peak bytes by allocator and device, since start or reset-peaks\n"
			"%-16s %-11s %13s %13s %10s\n",
			"allocator", "device", "peak", "current", "live");
	for (uint32_t i = 0; i < s->nentries; i++) {
		const struct alloy_reporter_entry *e = &s->entries[i];

		device_str(e->device, dev, sizeof(dev));
		if (req->json)
			alloy__ctl_out_printf(
				o,
				"%s\n  {\"allocator\": \"%s\", \"device\": \"%s\", \"peak_bytes\": %llu, \"current_bytes\": %llu, \"live_blocks\": %llu}",
				i ? "," : "", e->allocator, dev,
				(unsigned long long)e->c.peak_bytes,
				(unsigned long long)e->c.current_bytes,
				(unsigned long long)e->c.live_blocks);
		else
			alloy__ctl_out_printf(
				o, "%-16s %-11s %13llu %13llu %10llu\n",
				e->allocator, dev,
				(unsigned long long)e->c.peak_bytes,
				(unsigned long long)e->c.current_bytes,
				(unsigned long long)e->c.live_blocks);
	}
	if (req->json)
		alloy__ctl_out_printf(
			o,
			"],\n \"total\": {\"peak_bytes\": %llu, \"current_bytes\": %llu, \"live_blocks\": %llu}}\n",
			(unsigned long long)s->total.peak_bytes,
			(unsigned long long)s->total.current_bytes,
			(unsigned long long)s->total.live_blocks);
	else
		alloy__ctl_out_printf(
			o, "%-16s %-11s %13llu %13llu %10llu\n", "(all)", "",
			(unsigned long long)s->total.peak_bytes,
			(unsigned long long)s->total.current_bytes,
			(unsigned long long)s->total.live_blocks);
	alloy__arena_free(s, sizeof(*s));
	return say(msg, len, 0, "report at the peak");
}

static int report(const struct ctl_request *req, struct ctl_out *o, char *msg,
		  size_t len)
{
	if (!alloy_reporter_enabled())
		return say(
			msg, len, -1,
			"report: the reporter is off in this program (run it with report:... or trace:..., or `trace start FILE` turns it on)");
	if (req->at_peak)
		return report_peak(req, o, msg, len);
	if (alloy_reporter_print(out_write, o,
				 req->json ? ALLOY_REPORT_JSON
					   : ALLOY_REPORT_TEXT,
				 false) < 0)
		return say(msg, len, -1, "report: %s", alloy_last_error());
	return say(msg, len, 0, "report now");
}

static void conf_line(const char *key, const char *value, const char *help,
		      bool from_env, void *arg)
{
	(void)help;
	alloy__ctl_out_printf(arg, "%-26s %s%s\n", key, value,
			      from_env ? "  (ALLOY_CONF)" : "");
}

static void option_line(const char *allocator, const char *key,
			const char *value, void *arg)
{
	alloy__ctl_out_printf(arg, "%s.%s %s  (ALLOY_CONF)\n", allocator, key,
			      value);
}

static int conf(struct ctl_out *o, char *msg, size_t len)
{
	alloy_conf_foreach(conf_line, o);
	alloy_conf_foreach_option(option_line, o);
	for (int t = 0; t < ALLOY_DEVICE_TYPE_COUNT; t++) {
		struct alloy_allocator *a = alloy_get_default(t);

		if (a)
			alloy__ctl_out_printf(o, "default of %-15s %s\n",
					      alloy_device_type_name(t),
					      alloy_allocator_name(a));
	}
	alloy__ctl_out_printf(o, "reporter                   %s\n",
			      alloy_reporter_enabled() ? "on" : "off");
	return say(msg, len, 0, "effective settings (conf) and defaults now");
}

/* The resident set from /proc, read without stdio (which may allocate). */
static unsigned long long resident_bytes(void)
{
	char buf[128];
	unsigned long long size = 0, rss = 0;
	ssize_t n;
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &size, &rss) != 2)
		return 0;
	return rss * (unsigned long long)sysconf(_SC_PAGESIZE);
}

#define TOP_GROUPS 5

struct stats_ctx {
	struct ctl_out *o;
	struct alloy_reporter_snapshot *rep; /* NULL: the reporter is off */
};

/*
 * The reporter's count for allocator a (summed over devices): its peak
 * or its current bytes.  False when the reporter does not record it.
 */
static bool reporter_bytes(const struct alloy_allocator *a,
			   const struct alloy_reporter_snapshot *rep,
			   long long *current, long long *peak)
{
	bool seen = false;

	*current = *peak = 0;
	for (uint32_t i = 0; rep && i < rep->nentries; i++)
		if (!strcmp(rep->entries[i].allocator,
			    alloy_allocator_name(a))) {
			*current += (long long)rep->entries[i].c.current_bytes;
			*peak += (long long)rep->entries[i].c.peak_bytes;
			seen = true;
		}
	return seen;
}

/*
 * Live and peak bytes: the reporter's while it records; else the
 * allocator's own count, except that the malloc front counts blocks and
 * not bytes, so an allocator that has served malloc has none (-1).
 */
static int stats_one(struct alloy_allocator *a, void *arg)
{
	struct stats_ctx *c = arg;
	struct alloy_allocator_stats st = ALLOY_ALLOCATOR_STATS_INIT;
	int type = alloy_allocator_device_type(a);
	long long bytes, peak;

	if (alloy_allocator_stats(a, &st) < 0)
		memset(&st, 0, sizeof(st));
	if (!reporter_bytes(a, c->rep, &bytes, &peak)) {
		bool front = alloy__front_holds(a);

		bytes = front ? -1 : alloy_allocator_live_bytes(a);
		peak = front || !st.peak_allocated
			       ? -1
			       : (long long)st.peak_allocated;
	}
	alloy__ctl_out_printf(
		c->o, "allocator %s %s %d %lld %lld %llu %llu %lld\n",
		alloy_allocator_name(a), alloy_device_type_name(type),
		alloy_get_default(type) == a, alloy_allocator_live_blocks(a),
		bytes, (unsigned long long)st.num_allocs,
		(unsigned long long)st.num_frees, peak);
	return 0;
}

/* The groups holding the most live bytes, a line each, label last. */
static void stats_groups(struct ctl_out *o, enum alloy_reporter_group_by by,
			 const char *word)
{
	size_t room = TOP_GROUPS * sizeof(struct alloy_reporter_group);
	struct alloy_reporter_group *g = alloy__arena_alloc(room);
	int n;

	if (!g)
		return;
	n = alloy_reporter_top(by, g, TOP_GROUPS);
	for (int i = 0; i < n; i++)
		alloy__ctl_out_printf(o, "%s %llu %llu %s\n", word,
				      (unsigned long long)g[i].bytes,
				      (unsigned long long)g[i].blocks,
				      g[i].label);
	alloy__arena_free(g, room);
}

/*
 * One machine-readable sample for `alloy top`: a line per allocator
 * (name, device, default, live blocks, live bytes or -1, allocations,
 * frees, peak bytes or -1), the resident set, and while the reporter is on its
 * totals and the owners and sites holding the most live bytes.
 */
static int stats(struct ctl_out *o, char *msg, size_t len)
{
	struct stats_ctx c = { .o = o };
	struct alloy_reporter_snapshot *s = NULL;
	struct timespec ts;

	if (alloy_reporter_enabled() && (s = alloy__arena_alloc(sizeof(*s)))) {
		s->size = sizeof(*s);
		s->version = ALLOY_REPORTER_SNAPSHOT_VERSION;
		if (!alloy_reporter_snapshot(s))
			c.rep = s;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	alloy__ctl_out_printf(o, "time %lld.%09ld\n", (long long)ts.tv_sec,
			      ts.tv_nsec);
	alloy_foreach_allocator(stats_one, &c);
	alloy__ctl_out_printf(o, "rss %llu\n", resident_bytes());
	if (c.rep) {
		alloy__ctl_out_printf(
			o, "reporter %llu %llu %llu\n",
			(unsigned long long)s->total.current_bytes,
			(unsigned long long)s->total.peak_bytes,
			(unsigned long long)s->total.live_blocks);
		stats_groups(o, ALLOY_REPORTER_BY_OWNER, "owner");
		stats_groups(o, ALLOY_REPORTER_BY_SITE, "site");
	}
	if (s)
		alloy__arena_free(s, sizeof(*s));
	return say(msg, len, 0, "stats");
}

int alloy__ctl_run(const struct ctl_request *req, struct ctl_out *out,
		   char *msg, size_t msglen)
{
	switch (req->command) {
	case CTL_SWAP:
		return swap(req, msg, msglen);
	case CTL_TRACE_START:
		return trace_start(req, msg, msglen);
	case CTL_TRACE_STOP:
		return trace_stop(msg, msglen);
	case CTL_BACKTRACE:
		return backtrace(req, msg, msglen);
	case CTL_REPORT:
		return report(req, out, msg, msglen);
	case CTL_CONF:
		return conf(out, msg, msglen);
	case CTL_RESET_PEAKS:
		alloy_reporter_reset_peaks();
		return say(msg, msglen, 0, "peaks reset to the current values");
	case CTL_STATS:
		return stats(out, msg, msglen);
	case CTL_PING:
		return say(msg, msglen, 0, "pong %ld", (long)getpid());
	}
	return say(msg, msglen, -1, "unknown request");
}
