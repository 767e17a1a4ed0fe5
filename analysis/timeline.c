// SPDX-License-Identifier: MIT
/*
 * analysis/timeline.c - the timeline picture: live bytes per allocator over
 * time, with the peak marked and the process's resident memory (where the
 * trace sampled it) under them, as one standalone SVG document (no
 * script, no fonts or styles from the network).
 *
 * A trace may hold millions of events, the picture has some 700 columns:
 * each series is cut into one bucket per column and each bucket keeps its
 * highest value and its last one, so the path stays small and no peak is
 * ever averaged away.
 */
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "trace.h"

#define W      1040
#define H      520
#define LEFT   TIMELINE_LEFT
#define RIGHT  (LEFT + TIMELINE_COLUMNS)
#define TOP    56
#define BOTTOM (H - 64)
#define NB     (RIGHT - LEFT)

static const char *const colours[] = {
	"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e",
	"#17becf", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
};

struct series_px {
	double max[NB], end[NB];
	bool seen[NB];
};

double timeline_nice_step(double range, int n)
{
	double raw = range / n, p = 1, f;

	if (!(raw > 0))
		return 1;
	while (p * 10 <= raw)
		p *= 10;
	while (p > raw)
		p /= 10;
	f = raw / p;

	return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

static double y_of(double v, double ymax)
{
	return BOTTOM - (v / ymax) * (BOTTOM - TOP);
}

/* The total of all series: a colour no series has. */
#define ALL_COLOUR "#b8b8b8"

/*
 * The steps of s from the baseline on, as path commands after a moveto
 * at (LEFT, 0); false when no bucket has a value.
 */
static bool steps(FILE *out, const struct series_px *s, double ymax)
{
	double prev = 0;
	bool any = false;

	for (int b = 0; b < NB; b++) {
		if (!s->seen[b])
			continue;
		fprintf(out, " H%d", LEFT + b);
		if (s->max[b] != prev)
			fprintf(out, " V%.1f", y_of(s->max[b], ymax));
		if (s->end[b] != s->max[b])
			fprintf(out, " V%.1f", y_of(s->end[b], ymax));
		prev = s->end[b];
		any = true;
	}
	return any;
}

static void path(FILE *out, const struct series_px *s, double ymax,
		 const char *colour, double width)
{
	fprintf(out,
		"<path fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" "
		"stroke-linejoin=\"round\" d=\"M%d %.1f",
		colour, width, LEFT, y_of(0, ymax));
	steps(out, s, ymax);
	fprintf(out, " H%d\"/>\n", RIGHT);
}

/* Resident memory, sampled: a pale filled area, no hint of a stroke. */
#define RSS_COLOUR "#dbe9f6"

static void rss_area(FILE *out, const struct series_px *s, double ymax)
{
	bool any;

	fprintf(out,
		"<path id=\"rss\" fill=\"%s\" stroke=\"none\" d=\"M%d %.1f",
		RSS_COLOUR, LEFT, y_of(0, ymax));
	any = steps(out, s, ymax);
	/* Held from the last sample to the end, then down and closed. */
	fprintf(out, " H%d V%.1f Z\"/>\n", any ? RIGHT : LEFT, y_of(0, ymax));
}

static void bucket(struct series_px *s, int b, double v)
{
	if (!s->seen[b] || v > s->max[b])
		s->max[b] = v;
	s->end[b] = v;
	s->seen[b] = true;
}

void timeline_svg_open(FILE *out, int w, int h, const char *title,
		       bool standalone)
{
	if (standalone)
		fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(out,
		"<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"%d\" y=\"28\" font-size=\"17\" font-weight=\"bold\">",
		w, h, w, h, LEFT);
	html_text(out, title);
	fprintf(out, "</text>\n");
}

void timeline_time_grid(FILE *out, double dur_ns, int top, int bottom,
			int label_y)
{
	double step = timeline_nice_step(dur_ns / 1e6, 6);

	for (double ms = 0; ms <= dur_ns / 1e6; ms += step) {
		double x = LEFT + ms * 1e6 / dur_ns * (NB - 1);

		fprintf(out,
			"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#e4e4e4\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
			x, x, top, bottom, x, label_y, ms);
	}
}

void timeline_notes_svg(FILE *out, const struct timeline_notes *notes, int x,
			int y, int ymax)
{
	for (size_t i = 0; notes && i < notes->n; i++, y += 15) {
		const char *text = notes->text[i];
		int indent = 0;

		if (y > ymax)
			break; /* no room left */
		/* SVG folds leading spaces: indent by position instead. */
		while (*text == ' ') {
			text++;
			indent += 4;
		}
		fprintf(out, "<text x=\"%d\" y=\"%d\" font-size=\"11\"%s>",
			x + indent, y, indent ? "" : " font-weight=\"bold\"");
		html_text(out, text);
		fprintf(out, "</text>\n");
	}
}

void trace_timeline_svg(FILE *out, const struct trace *tr,
			const struct trace_summary *sum,
			const struct timeline_notes *notes, bool standalone)
{
	size_t ns = tr->nseries, nc = sizeof(colours) / sizeof(colours[0]);
	struct series_px *px = calloc(ns + 1, sizeof(*px));
	uint64_t *live = calloc(ns + 1, sizeof(*live));
	double dur = sum->duration_ns ? (double)sum->duration_ns : 1;
	uint64_t top = sum->all.peak_bytes > tr->peak_resident
			       ? sum->all.peak_bytes
			       : tr->peak_resident;
	double ymax = top ? (double)top * 1.12 : 1;
	struct series_px *rss = tr->nmem ? calloc(1, sizeof(*rss)) : NULL;
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double ystep, t = 0, unit = 1;
	int u = 0;
	bool show_all = ns > 1;
	char hb[32];

	if (!px || !live) {
		free(px);
		free(live);
		fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n");
		return;
	}
	for (size_t i = 0; i < tr->nev; i++) {
		const struct trace_event *e = &tr->ev[i];
		int b;

		if (e->op != TRACE_ALLOC && e->op != TRACE_FREE)
			continue;
		t = e->t_ns > t ? (double)e->t_ns : t;
		b = (int)(t / dur * (NB - 1));
		b = b < 0 ? 0 : b >= NB ? NB - 1 : b;
		if (e->op == TRACE_ALLOC) {
			live[e->series] += e->size;
			live[ns] += e->size;
		} else {
			live[e->series] -= e->size;
			live[ns] -= e->size;
		}
		bucket(&px[e->series], b, (double)live[e->series]);
		bucket(&px[ns], b, (double)live[ns]);
	}
	for (size_t i = 0; rss && i < tr->nmem; i++) {
		int b = (int)((double)tr->mem[i].t_ns / dur * (NB - 1));

		b = b < 0 ? 0 : b >= NB ? NB - 1 : b;
		bucket(rss, b, (double)tr->mem[i].resident);
	}

	timeline_svg_open(out, W, H,
			  "alloy: live bytes per allocator over time",
			  standalone);
	/* Grid and axes. */
	/* Byte ticks round in the unit they are shown in: 20 KiB, not 19.53. */
	while (unit * 1024 <= ymax && u < 4) {
		unit *= 1024;
		u++;
	}
	ystep = timeline_nice_step(ymax / unit, 5) * unit;
	for (double v = 0; v <= ymax; v += ystep)
		fprintf(out,
			"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n",
			LEFT, RIGHT, y_of(v, ymax), y_of(v, ymax), LEFT - 6,
			y_of(v, ymax) + 4, v / unit, units[u]);
	timeline_time_grid(out, dur, TOP, BOTTOM, BOTTOM + 18);
	fprintf(out,
		"<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"black\"/>\n"
		"<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"black\"/>\n"
		"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time since the trace started (ms)</text>\n",
		LEFT, RIGHT, BOTTOM, BOTTOM, LEFT, LEFT, TOP, BOTTOM,
		(LEFT + RIGHT) / 2, BOTTOM + 40);

	/*
	 * Resident memory under everything, a filled step from sample to
	 * sample: what the heap's lines leave of it is memory outside them.
	 */
	if (rss)
		rss_area(out, rss, ymax);
	/*
	 * The total first, as a wide pale band, then the series over it: when
	 * one allocator serves at a time (a swap) the total is that series,
	 * and drawn on top it would hide it.
	 */
	if (show_all)
		path(out, &px[ns], ymax, ALL_COLOUR, 5.0);
	for (size_t s = 0; s < ns; s++)
		path(out, &px[s], ymax, colours[s % nc], 1.6);

	/* The peak. */
	if (sum->all.peak_bytes) {
		double x = LEFT + (double)sum->all.peak_t_ns / dur * (NB - 1);
		double y = y_of((double)sum->all.peak_bytes, ymax);

		fprintf(out,
			"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#d62728\" "
			"stroke-dasharray=\"5 4\"/>\n"
			"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" stroke=\"#d62728\" "
			"stroke-width=\"2\"/>\n"
			"<text x=\"%.1f\" y=\"%.1f\" fill=\"#d62728\" font-weight=\"bold\" "
			"text-anchor=\"%s\">peak %s at %.3f ms</text>\n",
			LEFT, RIGHT, y, y, x, y,
			x < (LEFT + RIGHT) / 2 ? x + 8 : x - 8, y - 8,
			x < (LEFT + RIGHT) / 2 ? "start" : "end",
			trace_human_bytes(sum->all.peak_bytes, hb, sizeof(hb)),
			(double)sum->all.peak_t_ns / 1e6);
	}

	/* Legend. */
	for (size_t s = 0; s <= ns; s++) {
		int y = TOP + 8 + (int)s * 38;

		if (s == ns && !show_all)
			break;
		fprintf(out,
			"<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\">%s %s</text>"
			"<text x=\"%d\" y=\"%d\" fill=\"#555\">peak %s, %llu allocs</text>\n",
			RIGHT + 16, y - 4,
			s == ns ? ALL_COLOUR : colours[s % nc], RIGHT + 36, y,
			s == ns ? "all" : tr->series[s].allocator,
			s == ns ? "" : tr->series[s].device, RIGHT + 36, y + 15,
			trace_human_bytes(s == ns ? sum->all.peak_bytes
						  : sum->s[s].peak_bytes,
					  hb, sizeof(hb)),
			(unsigned long long)(s == ns ? sum->all.allocs
						     : sum->s[s].allocs));
	}
	if (rss) {
		int y = TOP + 8 + (int)(ns + (show_all ? 1 : 0)) * 38;

		fprintf(out,
			"<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"10\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\">resident (RSS)</text>"
			"<text x=\"%d\" y=\"%d\" fill=\"#555\">peak %s</text>\n",
			RIGHT + 16, y - 10, RSS_COLOUR, RIGHT + 36, y,
			RIGHT + 36, y + 15,
			trace_human_bytes(tr->peak_resident, hb, sizeof(hb)));
	}
	/* The peak's top sites and owners, under the legend. */
	timeline_notes_svg(
		out, notes, RIGHT + 16,
		TOP + 8 + (int)(ns + (show_all ? 1 : 0) + (rss ? 1 : 0)) * 38 +
			4,
		H - 8);
	fprintf(out, "</svg>\n");
	free(px);
	free(live);
	free(rss);
}
