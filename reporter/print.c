// SPDX-License-Identifier: MIT
/*
 * reporter/print.c - the summary table and the leak report, as text or
 * JSON, written through a caller's callback (jemalloc's malloc_stats_print
 * style) so that it can go to a file, a log or a string.
 */
#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Leaks listed one by one; the rest are only counted. */
#define MAX_LISTED 100

struct out {
	void (*write)(void *arg, const char *text);
	void *arg;
	bool json;
};

static void put(struct out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	o->write(o->arg, buf);
}

/* s as a JSON string literal (symbol names may hold anything). */
static void put_json_string(struct out *o, const char *s)
{
	char buf[256];
	size_t n = 0;

	buf[n++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (n + 8 >= sizeof(buf)) {
			buf[n] = '\0';
			o->write(o->arg, buf);
			n = 0;
		}
		if (c == '"' || c == '\\')
			n += (size_t)sprintf(buf + n, "\\%c", c);
		else if (c < 0x20)
			n += (size_t)sprintf(buf + n, "\\u%04x", c);
		else
			buf[n++] = (char)c;
	}
	buf[n++] = '"';
	buf[n] = '\0';
	o->write(o->arg, buf);
}

/* One row; peak_known false prints no peak ("-", or null in JSON). */
static void put_counts(struct out *o, const char *name, const char *dev,
		       const struct alloy_reporter_counts *c, bool peak_known)
{
	char peak[24] = "-";

	if (peak_known)
		snprintf(peak, sizeof(peak), "%llu",
			 (unsigned long long)c->peak_bytes);
	else if (o->json)
		snprintf(peak, sizeof(peak), "null");
	if (o->json) {
		put(o, "{\"allocator\": ");
		put_json_string(o, name);
		put(o, ", \"device\": ");
		put_json_string(o, dev);
		put(o,
		    ", \"current_bytes\": %llu, \"peak_bytes\": %s, "
		    "\"total_bytes\": %llu, \"allocs\": %llu, \"frees\": %llu, "
		    "\"live_blocks\": %llu}",
		    (unsigned long long)c->current_bytes, peak,
		    (unsigned long long)c->total_bytes,
		    (unsigned long long)c->allocs, (unsigned long long)c->frees,
		    (unsigned long long)c->live_blocks);
		return;
	}
	put(o, "%-16s %-11s %13llu %13s %15llu %10llu %10llu %8llu\n", name,
	    dev, (unsigned long long)c->current_bytes, peak,
	    (unsigned long long)c->total_bytes, (unsigned long long)c->allocs,
	    (unsigned long long)c->frees, (unsigned long long)c->live_blocks);
}

struct device_sum {
	struct alloy_device d;
	struct alloy_reporter_counts c;
	int pairs;
};

/*
 * Sum the pairs of each device.  Its peak is known when one allocator
 * served it; with several, no device-wide peak is kept (it would be a
 * third shared counter on every event), so none is printed.
 */
static int sum_devices(const struct alloy_reporter_snapshot *s,
		       struct device_sum *out)
{
	int n = 0;

	for (uint32_t i = 0; i < s->nentries; i++) {
		const struct alloy_reporter_entry *e = &s->entries[i];
		int k;

		for (k = 0; k < n; k++)
			if (out[k].d.type == e->device.type &&
			    out[k].d.index == e->device.index)
				break;
		if (k == n)
			out[n++] = (struct device_sum){ .d = e->device };
		out[k].c.current_bytes += e->c.current_bytes;
		out[k].c.peak_bytes = e->c.peak_bytes;
		out[k].c.total_bytes += e->c.total_bytes;
		out[k].c.allocs += e->c.allocs;
		out[k].c.frees += e->c.frees;
		out[k].c.live_blocks += e->c.live_blocks;
		out[k].pairs++;
	}
	return n;
}

struct leaks {
	struct out *o;
	uint64_t blocks, bytes;
};

static int put_leak(const struct rep_block *b, void *arg)
{
	struct leaks *l = arg;
	struct out *o = l->o;
	const struct rep_entry *e = &alloy__rep_entries[b->entry];
	char dev[32];
	char **syms = NULL;

	l->blocks++;
	l->bytes += b->size;
	if (l->blocks > MAX_LISTED)
		return 0;
	alloy__rep_device_str(e->device, dev, sizeof(dev));
	if (b->nframes)
		syms = backtrace_symbols(b->frames, b->nframes);
	if (o->json) {
		put(o,
		    "%s\n    {\"ptr\": \"%#llx\", \"size\": %llu, \"allocator\": ",
		    l->blocks > 1 ? "," : "", (unsigned long long)b->ptr,
		    (unsigned long long)b->size);
		put_json_string(o, e->name);
		put(o, ", \"device\": ");
		put_json_string(o, dev);
		put(o, ", \"backtrace\": [");
		for (unsigned i = 0; syms && i < b->nframes; i++) {
			put(o, "%s", i ? ", " : "");
			put_json_string(o, syms[i]);
		}
		put(o, "]}");
	} else {
		put(o, "  %#llx %llu bytes from %s (%s)\n",
		    (unsigned long long)b->ptr, (unsigned long long)b->size,
		    e->name, dev);
		for (unsigned i = 0; syms && i < b->nframes; i++)
			put(o, "      at %s\n", syms[i]);
	}
	free(syms);
	return 0;
}

static void stderr_write(void *arg, const char *text)
{
	(void)arg;
	fputs(text, stderr);
}

int alloy_reporter_print(void (*write)(void *arg, const char *text), void *arg,
			 enum alloy_report_format format, bool leaks)
{
	struct alloy_reporter_snapshot *s;
	struct out o = { write ? write : stderr_write, arg,
			 format == ALLOY_REPORT_JSON };
	struct leaks l = { &o, 0, 0 };
	struct device_sum devs[ALLOY_REPORTER_MAX_ENTRIES];
	int ndev;
	char dev[32];
	int rc;

	ALLOY_ENFORCE(format == ALLOY_REPORT_TEXT ||
			      format == ALLOY_REPORT_JSON,
		      -EINVAL, "unknown format %d", (int)format);
	s = calloc(1, sizeof(*s));
	ALLOY_ENFORCE(s, -ENOMEM, "no memory for a snapshot");
	s->size = sizeof(*s);
	s->version = ALLOY_REPORTER_SNAPSHOT_VERSION;
	rc = alloy_reporter_snapshot(s);
	if (rc)
		goto out_free;

	if (o.json)
		put(&o,
		    "{\"alloy_reporter\": %d, \"enabled\": %s,\n \"entries\": [",
		    ALLOY_REPORTER_SNAPSHOT_VERSION,
		    s->enabled ? "true" : "false");
	else
		put(&o,
		    "alloy reporter: memory by allocator and device (bytes)\n"
		    "%-16s %-11s %13s %13s %15s %10s %10s %8s\n",
		    "allocator", "device", "current", "peak", "total", "allocs",
		    "frees", "live");
	for (uint32_t i = 0; i < s->nentries; i++) {
		const struct alloy_reporter_entry *e = &s->entries[i];

		if (o.json)
			put(&o, "%s\n  ", i ? "," : "");
		put_counts(&o, e->allocator,
			   alloy__rep_device_str(e->device, dev, sizeof(dev)),
			   &e->c, true);
	}
	ndev = sum_devices(s, devs);
	if (o.json)
		put(&o, "],\n \"devices\": [");
	for (int i = 0; i < ndev; i++) {
		if (o.json)
			put(&o, "%s\n  ", i ? "," : "");
		put_counts(&o, "(device)",
			   alloy__rep_device_str(devs[i].d, dev, sizeof(dev)),
			   &devs[i].c, devs[i].pairs == 1);
	}
	if (o.json)
		put(&o, "],\n \"total\": ");
	put_counts(&o, "(all)", o.json ? "all" : "", &s->total, true);
	if (o.json)
		put(&o,
		    ",\n \"unknown_frees\": %llu, \"double_frees\": %llu, "
		    "\"untracked_frees\": %llu",
		    (unsigned long long)s->unknown_frees,
		    (unsigned long long)s->double_frees,
		    (unsigned long long)s->untracked_frees);
	else
		put(&o,
		    "unknown frees %llu, double frees %llu, "
		    "frees of blocks made while off %llu\n",
		    (unsigned long long)s->unknown_frees,
		    (unsigned long long)s->double_frees,
		    (unsigned long long)s->untracked_frees);
	if (leaks) {
		if (o.json)
			put(&o, ",\n \"leaks\": [");
		else
			put(&o, "leaks (blocks still live):\n");
		alloy__ptrtable_foreach(put_leak, &l);
		if (o.json)
			put(&o,
			    "],\n \"leaked_blocks\": %llu, \"leaked_bytes\": %llu",
			    (unsigned long long)l.blocks,
			    (unsigned long long)l.bytes);
		else if (l.blocks > MAX_LISTED)
			put(&o, "  ... and %llu more\n",
			    (unsigned long long)(l.blocks - MAX_LISTED));
		if (!o.json)
			put(&o, "  %llu blocks, %llu bytes%s\n",
			    (unsigned long long)l.blocks,
			    (unsigned long long)l.bytes,
			    l.blocks ? "" : ": no leaks");
	}
	if (o.json)
		put(&o, "}\n");
out_free:
	free(s);
	return rc;
}
