// SPDX-License-Identifier: MIT
/*
 * analysis/timeline_page.c - the timeline as `alloy report` draws it: the
 * picture (analysis/timeline.c) with the peak's top sites and owners beside
 * it, and the page that puts the picture, the summary and a breakdown of
 * any clicked moment together.
 *
 * The page carries, for each column of the picture, the moment its total
 * was highest and the largest sites and owners then; a click on the
 * picture shows them, with the `alloy report --at` command that gives
 * the whole breakdown of that moment.  The address may carry #t=NS to
 * select a moment when the page opens (the tests use it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report.h"

#define TOP_NOTES 3
#define TOP_COL	  5

/* " 1. name 45.2%", cut to fit the legend's width. */
static void note(struct timeline_notes *n, size_t rank, const char *name,
		 uint64_t bytes, uint64_t total)
{
	if (n->n >= sizeof(n->text) / sizeof(n->text[0]))
		return;
	snprintf(n->text[n->n++], sizeof(n->text[0]), " %zu. %.28s%s %.1f%%",
		 rank, name, strlen(name) > 28 ? ".." : "",
		 total ? 100.0 * (double)bytes / (double)total : 0);
}

/* The peak's largest sites and owners over all its devices. */
static void peak_notes(const struct report_ctx *c, struct timeline_notes *n)
{
	const struct at_device *best = NULL;
	char name[512];

	memset(n, 0, sizeof(*n));
	for (size_t d = 0; c->at && d < c->at->ndev; d++)
		if (!best || c->at->dev[d].bytes > best->bytes)
			best = &c->at->dev[d];
	if (!best || !best->bytes)
		return;
	report_resolve(c);
	/* Sites only when the trace has call stacks. */
	if (best->nsites > 1 || trace_stack_known(best->sites[0].stack)) {
		snprintf(n->text[n->n++], sizeof(n->text[0]),
			 "at the peak, top sites:");
		for (size_t i = 0; i < best->nsites && i < TOP_NOTES; i++)
			note(n, i + 1,
			     report_site_label(c, best->sites[i].stack, false,
					       name, sizeof(name)),
			     best->sites[i].bytes, best->bytes);
	}
	/* Owners only when some block has one. */
	if (best->nowners > 1 || (best->nowners && best->owners[0].owner)) {
		const char *head =
			n->n ? "owners:" : "at the peak, top owners:";

		snprintf(n->text[n->n++], sizeof(n->text[0]), "%s", head);
		for (size_t i = 0; i < best->nowners && i < TOP_NOTES; i++)
			note(n, i + 1,
			     report_owner(c->tr, best->owners[i].owner),
			     best->owners[i].bytes, best->bytes);
	}
}

int report_timeline_svg(FILE *out, const struct report_ctx *c)
{
	struct timeline_notes n;

	peak_notes(c, &n);
	trace_timeline_svg(out, c->tr, c->sum, &n, true);
	return 0;
}

/* ---- the page ---------------------------------------------------------- */

static const char page_script[] =
	"(function(){\n"
	"var errors=0;window.addEventListener('error',function(){errors++;"
	"document.body.setAttribute('data-errors',errors);});\n"
	"document.body.setAttribute('data-errors','0');\n"
	"function human(b){var u=['B','KiB','MiB','GiB','TiB'],i=0;"
	"while(b>=1024&&i<4){b/=1024;i++;}return i?b.toFixed(2)+' '+u[i]:b+' B';}\n"
	"var svg=document.getElementById('timeline'),out=document.getElementById('at');\n"
	"var mark=document.createElementNS('http://www.w3.org/2000/svg','line');\n"
	"mark.setAttribute('stroke','#444');mark.setAttribute('stroke-dasharray','3 3');\n"
	"mark.setAttribute('y1',56);mark.setAttribute('y2',456);mark.style.display='none';\n"
	"svg.appendChild(mark);\n"
	"function cell(tr,text,cls){var td=document.createElement('td');"
	"td.textContent=text;if(cls)td.className=cls;tr.appendChild(td);}\n"
	"function table(title,rows,names,total){var t=document.createElement('table');\n"
	" var h=document.createElement('tr');['bytes','share',title].forEach(function(x){"
	"var th=document.createElement('th');th.textContent=x;h.appendChild(th);});t.appendChild(h);\n"
	" rows.forEach(function(r){var tr=document.createElement('tr');tr.className='row';\n"
	"  cell(tr,human(r[1]),'num');cell(tr,(total?100*r[1]/total:0).toFixed(1)+'%','num');\n"
	"  cell(tr,names[r[0]]);tr.setAttribute('data-name',names[r[0]]);t.appendChild(tr);});\n"
	" return t;}\n"
	"function show(c){var col=D.cols[c];if(!col)return;out.textContent='';\n"
	" mark.setAttribute('x1',D.left+c);mark.setAttribute('x2',D.left+c);mark.style.display='';\n"
	" var p=document.createElement('p');p.textContent='at '+(col[0]/1e6).toFixed(3)+' ms: '+"
	"human(col[1])+' live. The whole breakdown: alloy report '+D.trace+' --at '+col[0]+'ns';\n"
	" out.appendChild(p);out.appendChild(table('site',col[2],D.sites,col[1]));\n"
	" out.appendChild(table('owner',col[3],D.owners,col[1]));out.setAttribute('data-col',c);}\n"
	"function nearest(c){for(var d=0;d<D.cols.length;d++){if(D.cols[c+d])return c+d;"
	"if(D.cols[c-d])return c-d;}return -1;}\n"
	"svg.addEventListener('click',function(ev){var r=svg.getBoundingClientRect();\n"
	" var x=(ev.clientX-r.left)*svg.viewBox.baseVal.width/r.width;\n"
	" var c=Math.round(x-D.left);if(c<0||c>=D.cols.length)return;c=nearest(c);if(c>=0)show(c);});\n"
	"var m=/t=([0-9.]+)/.exec(location.hash);\n"
	"if(m){var t=+m[1],best=-1;for(var c=0;c<D.cols.length;c++)"
	"if(D.cols[c]&&D.cols[c][0]<=t)best=c;if(best>=0)show(best);}\n"
	"document.body.setAttribute('data-rendered','yes');\n"
	"})();\n";

/* Column c's top groups as [[name index, bytes], ...], one per name. */
static void col_groups(FILE *out, const struct at_group *g, int k,
		       uint32_t *index_of, bool by_owner,
		       const struct trace *tr)
{
	uint32_t ix[TOP_COL];
	uint64_t bytes[TOP_COL];
	int n = 0;

	for (int i = 0; i < k && g[i].bytes; i++) {
		uint32_t key = by_owner ? g[i].owner
			       : g[i].stack == TRACE_STACK_MISSING
				       ? (uint32_t)tr->nnodes + 1
				       : g[i].stack;
		int j;

		for (j = 0; j < n && ix[j] != index_of[key]; j++)
			;
		if (j == n) {
			ix[n] = index_of[key];
			bytes[n++] = 0;
		}
		bytes[j] += g[i].bytes;
	}
	fprintf(out, "[");
	for (int j = 0; j < n; j++)
		fprintf(out, "%s[%u,%llu]", j ? "," : "", ix[j],
			(unsigned long long)bytes[j]);
	fprintf(out, "]");
}

/*
 * The names the columns use, each once: index_of[key] is its place in
 * the list written.  Keys are node ids (sites) or owner ids; keys of one
 * name (a site the compiler made two of) share its place.
 */
static void names(FILE *out, const struct report_ctx *c,
		  const struct at_group *top, size_t n, bool by_owner,
		  uint32_t *index_of, size_t nkeys)
{
	char **seen = calloc(n + 1, sizeof(*seen));
	uint32_t next = 0;
	char name[512];

	for (size_t i = 0; i < nkeys; i++)
		index_of[i] = UINT32_MAX;
	fprintf(out, "[");
	for (size_t i = 0; i < n; i++) {
		const struct at_group *g = &top[i];
		uint32_t key = by_owner ? g->owner
			       : g->stack == TRACE_STACK_MISSING
				       ? (uint32_t)c->tr->nnodes + 1
				       : g->stack;
		const char *label;
		uint32_t k;

		if (!g->bytes || index_of[key] != UINT32_MAX)
			continue;
		label = by_owner ? report_owner(c->tr, g->owner)
				 : report_site_label(c, g->stack, true, name,
						     sizeof(name));
		for (k = 0; seen && k < next; k++)
			if (!strcmp(seen[k], label))
				break;
		index_of[key] = k;
		if (seen && k < next)
			continue;
		if (seen)
			seen[next] = strdup(label);
		next++;
		fprintf(out, "%s", next > 1 ? ",\n" : "");
		json_string_script(out, label);
	}
	fprintf(out, "]");
	for (uint32_t k = 0; seen && k < next; k++)
		free(seen[k]);
	free(seen);
}

int report_timeline_html(FILE *out, const struct report_ctx *c)
{
	const int ncols = TIMELINE_COLUMNS, k = TOP_COL;
	size_t cells = (size_t)ncols * (size_t)k;
	size_t nkeys = (c->tr->nnodes > c->tr->nowners ? c->tr->nnodes
						       : c->tr->nowners) +
		       2;
	struct at_group *sites = malloc(cells * sizeof(*sites));
	struct at_group *owners = malloc(cells * sizeof(*owners));
	uint64_t *t_ns = malloc((size_t)ncols * sizeof(*t_ns));
	uint64_t *bytes = malloc((size_t)ncols * sizeof(*bytes));
	uint32_t *site_ix = malloc(nkeys * sizeof(*site_ix));
	uint32_t *owner_ix = malloc(nkeys * sizeof(*owner_ix));
	uint32_t *ids = malloc((cells + 1) * sizeof(*ids));
	struct timeline_notes notes;
	int rc = -ENOMEM;

	if (!sites || !owners || !t_ns || !bytes || !site_ix || !owner_ix ||
	    !ids ||
	    trace_columns_top(c->tr, ncols, k, false, sites, t_ns, bytes) ||
	    trace_columns_top(c->tr, ncols, k, true, owners, t_ns, bytes))
		goto out;
	for (size_t i = 0; i < cells; i++)
		ids[i] = sites[i].stack;
	symbols_resolve(c->sym, ids, cells);
	peak_notes(c, &notes);

	/* Self-contained: inline SVG, CSS and script, nothing fetched. */
	fprintf(out,
		"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
		"<title>alloy memory timeline</title>\n"
		"<style>body{font-family:sans-serif;margin:24px}"
		"pre{background:#f6f6f6;padding:12px}"
		"#timeline{cursor:crosshair}"
		"table{border-collapse:collapse;margin:6px 0 14px}"
		"td,th{padding:2px 10px;text-align:left;font-size:13px}"
		"td.num{text-align:right;font-family:monospace}"
		"th{border-bottom:1px solid #999}</style>\n"
		"</head><body>\n<h1>alloy memory timeline</h1>\n"
		"<p>Click the picture for what was live at that moment.</p>\n");
	trace_timeline_svg(out, c->tr, c->sum, &notes, false);
	fprintf(out, "<div id=\"at\"></div>\n<pre>");
	html_text(out, c->path);
	fprintf(out, "\n");
	report_summary_text(out, "", c->tr, c->sum);
	fprintf(out, "</pre>\n<script>\nvar D={\"left\": %d, \"trace\": ",
		TIMELINE_LEFT);
	json_string_script(out, c->path);
	fprintf(out, ",\n\"sites\": ");
	names(out, c, sites, cells, false, site_ix, nkeys);
	fprintf(out, ",\n\"owners\": ");
	names(out, c, owners, cells, true, owner_ix, nkeys);
	fprintf(out, ",\n\"cols\": [");
	for (int col = 0; col < ncols; col++) {
		const struct at_group *s = &sites[(size_t)col * (size_t)k];
		const struct at_group *o = &owners[(size_t)col * (size_t)k];

		fprintf(out, "%s", col ? ",\n" : "");
		if (!bytes[col] && !s[0].bytes) {
			fprintf(out, "null");
			continue;
		}
		fprintf(out, "[%llu,%llu,", (unsigned long long)t_ns[col],
			(unsigned long long)bytes[col]);
		col_groups(out, s, k, site_ix, false, c->tr);
		fprintf(out, ",");
		col_groups(out, o, k, owner_ix, true, c->tr);
		fprintf(out, "]");
	}
	fprintf(out, "]};\n%s</script>\n</body></html>\n", page_script);
	rc = 0;
out:
	free(sites);
	free(owners);
	free(t_ns);
	free(bytes);
	free(site_ix);
	free(owner_ix);
	free(ids);
	return rc;
}
