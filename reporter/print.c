// SPDX-License-Identifier: MIT
/*
 * reporter/print.c - the summary table and the leak report, as text or
 * JSON, written through a caller's callback (jemalloc's malloc_stats_print
 * style) so that it can go to a file, a log or a string.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "utf8.h"
#include "kernel/arena.h"

/* Leaks listed one by one; the rest are only counted. */
#define MAX_LISTED 100
/* Sites listed in a summary of the leaks. */
#define MAX_SITES 10

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

/*
 * s as a JSON string literal (symbol names and owner labels may hold any
 * byte but NUL): valid UTF-8 is written as it is and each byte that is
 * not part of it as \ufffd, so that the report stays valid JSON.
 */
static void put_json_string(struct out *o, const char *s)
{
	char buf[256];
	size_t n = 0;

	buf[n++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		/*
		 * Room for the longest piece (6 bytes), the quote and the NUL.
		 */
		if (n + 8 >= sizeof(buf)) {
			buf[n] = '\0';
			o->write(o->arg, buf);
			n = 0;
		}
		if (c >= 0x80) {
			int len = alloy__utf8_len((const unsigned char *)s);

			if (!len) {
				memcpy(buf + n, "\\ufffd", 6);
				n += 6;
				continue;
			}
			memcpy(buf + n, s, (size_t)len);
			n += (size_t)len;
			s += len - 1;
			continue;
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

const char *alloy__rep_device_str(struct alloy_device d, char *buf, size_t len)
{
	const char *t = alloy_device_type_name(d.type);

	if (t)
		snprintf(buf, len, "%s:%d", t, d.index);
	else
		snprintf(buf, len, "type%d:%d", d.type, d.index);
	return buf;
}

/*
 * The frames of stack id, innermost first: "at ..." lines or a JSON list.
 * A frame's text goes to the callback as it is, not through put(): C++
 * names pass put()'s 512 bytes, and a cut line lost its newline, which
 * glued the next frame onto it.  Names longer than buf are cut.
 */
static void put_stack(struct out *o, uint32_t id, const char *indent)
{
	char buf[2048];
	int i = 0;

	if (o->json)
		put(o, "[");
	for (; id; id = alloy__rep_node(id)->parent, i++) {
		alloy__rep_frame_str(alloy__rep_node(id)->frame, buf,
				     sizeof(buf));
		if (o->json) {
			put(o, "%s", i ? ", " : "");
			put_json_string(o, buf);
		} else {
			put(o, "%sat ", indent);
			o->write(o->arg, buf);
			o->write(o->arg, "\n");
		}
	}
	if (o->json)
		put(o, "]");
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

/*
 * The leak list is taken in two steps: the records are copied out with
 * each shard locked (the first MAX_LISTED of them, and the count and
 * bytes of all), then written with no lock held.  The write callback is
 * the caller's code and may allocate through alloy, which records the
 * block under a shard's lock: called under that lock, it would spin on
 * it forever.  The copy is in arena memory, never malloc's, for the same
 * reason.
 */
struct leaks {
	struct rep_block *listed; /* MAX_LISTED of them */
	uint64_t blocks, bytes;
};

static int copy_leak(const struct rep_block *b, void *arg)
{
	struct leaks *l = arg;

	if (l->blocks < MAX_LISTED)
		l->listed[l->blocks] = *b;
	l->blocks++;
	l->bytes += b->size;
	return 0;
}

static void put_leak(struct out *o, const struct rep_block *b, bool first)
{
	const struct rep_entry *e = &alloy__rep_entries[b->entry];
	char dev[32];

	alloy__rep_device_str(e->device, dev, sizeof(dev));
	if (o->json) {
		put(o,
		    "%s\n    {\"ptr\": \"%#llx\", \"size\": %llu, \"allocator\": ",
		    first ? "" : ",", (unsigned long long)b->ptr,
		    (unsigned long long)b->size);
		put_json_string(o, e->name);
		put(o, ", \"device\": ");
		put_json_string(o, dev);
		if (b->owner) {
			put(o, ", \"owner\": ");
			put_json_string(o, alloy__rep_owner(b->owner)->label);
		}
		put(o, ", \"backtrace\": ");
		put_stack(o, b->stack, "");
		put(o, "}");
	} else {
		put(o, "  %#llx %llu bytes from %s (%s)",
		    (unsigned long long)b->ptr, (unsigned long long)b->size,
		    e->name, dev);
		if (b->owner)
			put(o, " owned by %s",
			    alloy__rep_owner(b->owner)->label);
		put(o, "\n");
		put_stack(o, b->stack, "      ");
	}
}

/* ---- leaks in summary: a count, and the sites holding the most ------- */

static void put_leak_summary(struct out *o)
{
	struct rep_groups t;

	alloy__rep_group_live(&t, REP_BY_STACK, MAX_SITES);
	if (o->json)
		put(o, ",\n \"leak_sites\": [");
	else
		put(o, "blocks live at exit: %llu blocks, %llu bytes%s\n",
		    (unsigned long long)t.blocks, (unsigned long long)t.bytes,
		    t.blocks ? "" : ": no leaks");
	for (size_t i = 0; i < t.n && i < MAX_SITES; i++) {
		const struct rep_group *st = &t.g[i];
		uint32_t stack =
			st->key == REP_GROUP_NONE ? 0 : (uint32_t)st->key;

		if (o->json) {
			put(o,
			    "%s\n  {\"bytes\": %llu, \"blocks\": %llu, \"backtrace\": ",
			    i ? "," : "", (unsigned long long)st->bytes,
			    (unsigned long long)st->blocks);
			put_stack(o, stack, "");
			put(o, "}");
			continue;
		}
		put(o, "  %llu bytes in %llu blocks%s\n",
		    (unsigned long long)st->bytes,
		    (unsigned long long)st->blocks,
		    stack ? ", allocated"
			  : " (no call stack: backtrace:1 records them)");
		put_stack(o, stack, "      ");
	}
	if (!o->json && t.n > MAX_SITES)
		put(o, "  ... and %zu more sites\n", t.n - MAX_SITES);
	if (o->json)
		put(o, "],\n \"leaked_blocks\": %llu, \"leaked_bytes\": %llu",
		    (unsigned long long)t.blocks, (unsigned long long)t.bytes);
	alloy__rep_groups_free(&t);
}

/* listed: room for MAX_LISTED records. */
static void put_leak_list(struct out *o, struct rep_block *listed)
{
	struct leaks l = { listed, 0, 0 };

	alloy__ptrtable_foreach(copy_leak, &l);
	if (o->json)
		put(o, ",\n \"leaks\": [");
	else
		put(o, "leaks (blocks still live):\n");
	for (uint64_t i = 0; i < l.blocks && i < MAX_LISTED; i++)
		put_leak(o, &l.listed[i], i == 0);
	if (o->json)
		put(o, "],\n \"leaked_blocks\": %llu, \"leaked_bytes\": %llu",
		    (unsigned long long)l.blocks, (unsigned long long)l.bytes);
	else if (l.blocks > MAX_LISTED)
		put(o, "  ... and %llu more\n",
		    (unsigned long long)(l.blocks - MAX_LISTED));
	if (!o->json)
		put(o, "  %llu blocks, %llu bytes%s\n",
		    (unsigned long long)l.blocks, (unsigned long long)l.bytes,
		    l.blocks ? "" : ": no leaks");
}

static void stderr_write(void *arg, const char *text)
{
	(void)arg;
	fputs(text, stderr);
}

int alloy__rep_print(void (*write)(void *arg, const char *text), void *arg,
		     enum alloy_report_format format, enum rep_leaks leaks)
{
	struct alloy_reporter_snapshot *s;
	struct out o = { write ? write : stderr_write, arg,
			 format == ALLOY_REPORT_JSON };
	struct device_sum *devs;
	size_t devs_bytes = ALLOY_REPORTER_MAX_ENTRIES * sizeof(*devs);
	struct rep_block *listed = NULL;
	size_t listed_bytes = MAX_LISTED * sizeof(*listed);
	int ndev;
	char dev[32];
	int rc = -ENOMEM;

	ALLOY_ENFORCE(format == ALLOY_REPORT_TEXT ||
			      format == ALLOY_REPORT_JSON,
		      -EINVAL, "unknown format %d", (int)format);
	/* From the arena: this may run where malloc must not be called. */
	s = alloy__arena_alloc(sizeof(*s));
	devs = alloy__arena_alloc(devs_bytes);
	if (leaks == REP_LEAKS_FULL)
		listed = alloy__arena_alloc(listed_bytes);
	if (!s || !devs || (leaks == REP_LEAKS_FULL && !listed)) {
		alloy__error(-ENOMEM, __func__, "no memory for a snapshot");
		goto out_free;
	}
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
	if (leaks == REP_LEAKS_FULL)
		put_leak_list(&o, listed);
	else if (leaks == REP_LEAKS_SUMMARY)
		put_leak_summary(&o);
	if (o.json)
		put(&o, "}\n");
out_free:
	alloy__arena_free(s, sizeof(*s));
	alloy__arena_free(devs, devs_bytes);
	alloy__arena_free(listed, listed_bytes);
	return rc;
}

int alloy_reporter_print(void (*write)(void *arg, const char *text), void *arg,
			 enum alloy_report_format format, bool leaks)
{
	return alloy__rep_print(write, arg, format,
				leaks ? REP_LEAKS_FULL : REP_LEAKS_OFF);
}
