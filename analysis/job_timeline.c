// SPDX-License-Identifier: MIT
/*
 * analysis/job_timeline.c - the timeline of a job of several processes:
 * the sum of their live bytes in a tall lane on top, with the peak of
 * the sum marked and who held it beside it, and under it a lane per
 * process on the same time line, as one standalone SVG document.
 *
 * Every lane shares the sum's scale, so a lane's height says its share
 * of the job's memory; each lane also says its own peak in words, since
 * a small process draws as a flat line.  The span each process ran is
 * shaded, so a lane at zero after its end reads as "gone", not "idle".
 * Each lane is a <g class="lane"> with its pid and peak as attributes,
 * for scripts and tests.
 */
#include <string.h>

#include "json.h"
#include "report.h"

#define W	   1040
#define LEFT	   TIMELINE_LEFT
#define RIGHT	   (LEFT + TIMELINE_COLUMNS)
#define NB	   TIMELINE_COLUMNS
#define TOP	   56
#define SUM_H	   180 /* the sum's lane */
#define LANE_H	   44  /* a process's lane */
#define GAP	   12
#define AXIS_SPACE 52

#define SUM_COLOUR  "#1f77b4"
#define LANE_COLOUR "#2ca02c"
#define SPAN_COLOUR "#f1f5f9"
#define PEAK_COLOUR "#d62728"

static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };

static double x_of(uint64_t t, double dur)
{
	return LEFT + (double)t / dur * (NB - 1);
}

/* The lane's steps inside the band [y0, y0 + h], scaled to ymax. */
static void lane_path(FILE *out, const struct job_lane *l, double y0, double h,
		      double ymax, const char *colour, double width)
{
	double base = y0 + h, prev = 0;

#define Y(v) (base - (v) / ymax * h)
	fprintf(out,
		"<path fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\" stroke-linejoin=\"round\" d=\"M%d %.1f",
		colour, width, LEFT, base);
	for (int b = 0; b < NB; b++) {
		if (!l->seen[b])
			continue;
		fprintf(out, " H%d", LEFT + b);
		if (l->max[b] != prev)
			fprintf(out, " V%.1f", Y(l->max[b]));
		if (l->end[b] != l->max[b])
			fprintf(out, " V%.1f", Y(l->end[b]));
		prev = l->end[b];
	}
	fprintf(out, " H%d\"/>\n", RIGHT);
#undef Y
}

static void lane_head(FILE *out, const struct job_lane *l, bool sum)
{
	fprintf(out, "<g class=\"lane%s\" data-pid=\"%ld\" data-name=\"",
		sum ? " sum" : "", l->pid);
	html_text(out, l->name);
	fprintf(out, "\" data-peak=\"%llu\">\n", (unsigned long long)l->peak);
}

void job_timeline_svg(FILE *out, const struct job_picture *j, bool standalone)
{
	const struct job_lane *sum = &j->lanes[0];
	size_t nproc = j->n ? j->n - 1 : 0;
	int lanes_top = TOP + SUM_H + GAP;
	int bottom = lanes_top + (int)nproc * (LANE_H + GAP);
	int h = bottom + AXIS_SPACE;
	double dur = j->dur_ns ? (double)j->dur_ns : 1;
	double ymax = sum->peak ? (double)sum->peak * 1.12 : 1;
	double unit = 1, ystep;
	char hb[32], title[96];
	int u = 0;

	snprintf(title, sizeof(title),
		 "alloy: live bytes of a job of %zu processes over time",
		 nproc);
	timeline_svg_open(out, W, h, title, standalone);

	/* Time grid through every lane, ticks under the last. */
	timeline_time_grid(out, dur, TOP, bottom, bottom + 16);
	fprintf(out,
		"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time since the first process started (ms)</text>\n",
		(LEFT + RIGHT) / 2, bottom + 38);

	/* The sum: byte ticks round in the unit they are shown in. */
	while (unit * 1024 <= ymax && u < 4) {
		unit *= 1024;
		u++;
	}
	ystep = timeline_nice_step(ymax / unit, 4) * unit;
	lane_head(out, sum, true);
	for (double v = 0; v <= ymax; v += ystep) {
		double y = TOP + SUM_H - v / ymax * SUM_H;

		fprintf(out,
			"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e4e4e4\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g %s</text>\n",
			LEFT, RIGHT, y, y, LEFT - 6, y + 4, v / unit, units[u]);
	}
	fprintf(out,
		"<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"black\"/>\n",
		LEFT, RIGHT, TOP + SUM_H, TOP + SUM_H);
	lane_path(out, sum, TOP, SUM_H, ymax, SUM_COLOUR, 2.0);
	fprintf(out,
		"<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>"
		"<text x=\"%d\" y=\"%d\" font-weight=\"bold\">all processes</text>"
		"<text x=\"%d\" y=\"%d\" fill=\"#555\">peak of the sum %s</text>\n",
		RIGHT + 16, TOP + 4, SUM_COLOUR, RIGHT + 36, TOP + 8,
		RIGHT + 36, TOP + 23,
		trace_human_bytes(sum->peak, hb, sizeof(hb)));
	timeline_notes_svg(out, j->notes, RIGHT + 16, TOP + 42,
			   TOP + SUM_H + GAP);
	fprintf(out, "</g>\n");

	/* A lane per process, on the sum's scale. */
	for (size_t p = 1; p < j->n; p++) {
		const struct job_lane *l = &j->lanes[p];
		int y0 = lanes_top + (int)(p - 1) * (LANE_H + GAP);
		double x0 = x_of(l->start_ns, dur), x1 = x_of(l->end_ns, dur);

		lane_head(out, l, false);
		fprintf(out,
			"<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n"
			"<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n",
			x0, y0, x1 - x0 > 1 ? x1 - x0 : 1, LANE_H, SPAN_COLOUR,
			LEFT, RIGHT, y0 + LANE_H, y0 + LANE_H);
		lane_path(out, l, y0, LANE_H, ymax, LANE_COLOUR, 1.6);
		fprintf(out,
			"<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%ld</text>\n",
			LEFT - 6, y0 + LANE_H / 2 + 4, l->pid);
		fprintf(out, "<text x=\"%d\" y=\"%d\">", RIGHT + 16, y0 + 16);
		html_text(out, *l->name ? l->name : "(no name)");
		fprintf(out,
			"</text><text x=\"%d\" y=\"%d\" fill=\"#555\">peak %s</text>\n</g>\n",
			RIGHT + 16, y0 + 31,
			trace_human_bytes(l->peak, hb, sizeof(hb)));
	}

	/* The moment of the peak of the sum, through every lane. */
	if (sum->peak) {
		double x = x_of(j->peak_t_ns, dur);
		double y = TOP + SUM_H - (double)sum->peak / ymax * SUM_H;

		fprintf(out,
			"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"5 4\"/>\n"
			"<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\"/>\n"
			"<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" font-weight=\"bold\" text-anchor=\"%s\">"
			"peak of the sum %s at %.3f ms</text>\n",
			x, x, TOP, bottom, PEAK_COLOUR, x, y, PEAK_COLOUR,
			x < (LEFT + RIGHT) / 2 ? x + 8 : x - 8, y - 8,
			PEAK_COLOUR, x < (LEFT + RIGHT) / 2 ? "start" : "end",
			trace_human_bytes(sum->peak, hb, sizeof(hb)),
			(double)j->peak_t_ns / 1e6);
	}
	fprintf(out, "</svg>\n");
}
