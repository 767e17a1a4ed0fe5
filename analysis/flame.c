// SPDX-License-Identifier: MIT
/*
 * analysis/flame.c - the flame graph of what was live at a moment: one box
 * per function on a call path, as wide as the bytes allocated below it,
 * drawn as an icicle: the whole at the top, callees under their callers.
 * The widest boxes are then the first thing on the screen whatever the
 * window's height, where a flame standing on the bottom row puts them
 * below the fold as soon as one deep stack (an interpreter's import
 * machinery) sets the height.
 *
 * The tree merges frames by function along each path (two calls from one
 * function are one box), with an owner level under the whole when asked.
 * Two ways to look at it:
 *
 *  - a page (--format flamegraph): the tree as data inside the page and
 *    a small script that draws it; hover names the site with its bytes,
 *    blocks and share, a click zooms into a box (a click on the bottom
 *    box zooms out), a search box marks the functions that match and says
 *    what share they hold.  No network: the script and the styles are in
 *    the page.  The address may carry #search=TEXT, #zoom=N and
 *    #where=NAME (the box's place on the screen into the body's
 *    data-where), which the tests use to drive it in a headless browser.
 *    The page carries the widest boxes up to a size budget; the frames
 *    left out are merged under each caller into one "other" box whose
 *    children are the widest of them, so the page stays small (a large
 *    program's tree is tens of thousands of frames, nearly all too
 *    narrow to see);
 *  - a picture (--format flamegraph-svg): the same boxes drawn once, a
 *    hover title on each, for documents and for browsers without script.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report.h"

#define SVG_W	   1200
#define SVG_ROW	   18
#define SVG_MARGIN 10
/*
 * The page's data for one graph, in bytes, and the share of the whole
 * below which a frame is never kept (invisible even zoomed 50 times).
 */
#define PAGE_BUDGET   (800 * 1024)
#define PAGE_MIN_PART 1e-5
/* The widest left-out frames an "other" box opens to. */
#define OTHER_SHOWN 5
/* Frames followed along one stack (the writer keeps 64). */
#define PATH_MAX_FRAMES 1024

struct fnode {
	char *name;   /* what the box says: the function */
	char *detail; /* the frame in full: function (file:line), object */
	uint64_t bytes, blocks;
	int parent, child, next; /* indices; -1: none */
	int depth;
	bool owner; /* an owner, not a frame */
	bool drawn; /* the picture has placed it */
	bool kept;  /* the page carries it */
	int out;    /* its index in the page's data */
};

struct ftree {
	struct fnode *n;
	size_t len, cap;
	int depth; /* the deepest node's */
};

static int fnode_new(struct ftree *t, int parent, const char *name,
		     const char *detail, bool owner)
{
	struct fnode *n;

	if (t->len == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		struct fnode *g = realloc(t->n, cap * sizeof(*g));

		if (!g)
			return -1;
		t->n = g;
		t->cap = cap;
	}
	n = &t->n[t->len];
	*n = (struct fnode){ .name = strdup(name),
			     .detail = strdup(detail),
			     .parent = parent,
			     .child = -1,
			     .next = -1,
			     .owner = owner };
	if (!n->name || !n->detail) {
		free(n->name);
		free(n->detail);
		return -1;
	}
	if (parent >= 0) {
		n->depth = t->n[parent].depth + 1;
		n->next = t->n[parent].child;
		t->n[parent].child = (int)t->len;
	}
	if (n->depth > t->depth)
		t->depth = n->depth;
	return (int)t->len++;
}

/* The child of parent called name, made when missing; -1 without memory. */
static int fnode_child(struct ftree *t, int parent, const char *name,
		       const char *detail, bool owner)
{
	for (int c = t->n[parent].child; c >= 0; c = t->n[c].next)
		if (t->n[c].owner == owner && !strcmp(t->n[c].name, name))
			return c;
	return fnode_new(t, parent, name, detail, owner);
}

static void ftree_free(struct ftree *t)
{
	for (size_t i = 0; i < t->len; i++) {
		free(t->n[i].name);
		free(t->n[i].detail);
	}
	free(t->n);
	memset(t, 0, sizeof(*t));
}

/* The frame's box name and its detail line. */
static void frame_names(const struct report_ctx *c, uint32_t id, char *name,
			size_t nlen, char *detail, size_t dlen)
{
	const struct sym_frame *f = symbols_frame(c->sym, id);
	size_t n;

	symbols_func(c->sym, id, name, nlen);
	symbols_name(c->sym, id, detail, dlen);
	n = strlen(detail);
	if (f->module && f->func)
		snprintf(detail + n, dlen - n, " in %s", f->module);
}

/* Add one (owner, stack) pair's bytes along its path. */
static int add_pair(struct ftree *t, const struct report_ctx *c,
		    const struct at_group *g)
{
	uint32_t path[PATH_MAX_FRAMES];
	char name[512], detail[2048];
	int at = 0, n = 0;
	bool cut = false;

	if (c->by_owner) {
		const char *o = report_owner(c->tr, g->owner);

		at = fnode_child(t, at, o, o, true);
		if (at < 0)
			return -1;
		t->n[at].bytes += g->bytes;
		t->n[at].blocks += g->blocks;
	}
	for (uint32_t id = g->stack;
	     trace_stack_known(id) && n < PATH_MAX_FRAMES;
	     id = c->tr->nodes[id].parent) {
		path[n++] = id;
		cut |= c->tr->nodes[id].parent == TRACE_STACK_MISSING;
	}
	if (!trace_stack_known(g->stack) || cut) {
		if (!trace_stack_known(g->stack))
			at = fnode_child(t, at, "unknown",
					 symbols_no_stack(g->stack), false);
		else
			at = fnode_child(t, at, "[frames missing]",
					 "the trace's stack table is cut",
					 false);
		if (at < 0)
			return -1;
		t->n[at].bytes += g->bytes;
		t->n[at].blocks += g->blocks;
	}
	while (n--) {
		frame_names(c, path[n], name, sizeof(name), detail,
			    sizeof(detail));
		at = fnode_child(t, at, name, detail, false);
		if (at < 0)
			return -1;
		t->n[at].bytes += g->bytes;
		t->n[at].blocks += g->blocks;
	}
	return 0;
}

static int ftree_build(struct ftree *t, const struct report_ctx *c,
		       const struct at_device *d)
{
	char title[96];

	memset(t, 0, sizeof(*t));
	snprintf(title, sizeof(title), "all (%s)", d->device);
	if (fnode_new(t, -1, title, title, false) < 0)
		return -ENOMEM;
	t->n[0].bytes = d->bytes;
	t->n[0].blocks = d->blocks;
	for (size_t i = 0; i < d->npairs; i++)
		if (add_pair(t, c, &d->pairs[i])) {
			ftree_free(t);
			return -ENOMEM;
		}
	return 0;
}

static void heading(char *buf, size_t len, const struct report_ctx *c,
		    const struct at_device *d)
{
	char hb[32];

	snprintf(buf, len, "%s %s: %s in %llu blocks at %.3f ms",
		 c->at->at_peak ? "memory live at the peak of"
				: "memory live on",
		 d->device, trace_human_bytes(d->bytes, hb, sizeof(hb)),
		 (unsigned long long)d->blocks, (double)d->t_ns / 1e6);
}

/* ---- the page ---------------------------------------------------------- */

static const char page_style[] =
	"body{font-family:sans-serif;margin:16px;color:#222}"
	"h1{font-size:18px}h2{font-size:15px;margin:18px 0 6px}"
	".bar{margin:8px 0}.bar input{width:22em}"
	".fg{position:relative;width:100%;border-bottom:1px solid #ccc}"
	".fr{position:absolute;height:17px;box-sizing:border-box;"
	"border:1px solid #fff;overflow:hidden;white-space:nowrap;"
	"text-overflow:ellipsis;font:11px monospace;line-height:15px;"
	"padding:0 3px;cursor:pointer}"
	".fr.match{background:#e040e0!important;color:#fff}"
	".fr.above{opacity:.55}"
	"#tip{position:fixed;display:none;background:#fffbe6;"
	"border:1px solid #999;padding:6px 8px;font:12px sans-serif;"
	"max-width:640px;pointer-events:none;white-space:pre-wrap}"
	".note{color:#555;font-size:12px}";

/*
 * The drawing: each graph is data (name, detail, bytes, blocks, parent)
 * in flat arrays; boxes are divs placed by their share of the zoomed box.
 */
static const char page_script[] =
	"(function(){\n"
	"var errors=0;window.addEventListener('error',function(){errors++;"
	"document.body.setAttribute('data-errors',errors);});\n"
	"document.body.setAttribute('data-errors','0');\n"
	"var tip=document.getElementById('tip');\n"
	"function human(b){var u=['B','KiB','MiB','GiB','TiB'],i=0;"
	"while(b>=1024&&i<4){b/=1024;i++;}return i?b.toFixed(2)+' '+u[i]:b+' B';}\n"
	"function colour(n,kind){var h=0;for(var i=0;i<n.length;i++)"
	"h=(h*31+n.charCodeAt(i))>>>0;if(kind===2)return '#c8c8c8';"
	"return kind?'hsl('+(200+h%40)+',60%,'+(62+h%16)+'%)':"
	"'hsl('+(h%50)+',85%,'+(58+h%20)+'%)';}\n"
	"function graph(G,el,status){\n"
	" var N=G.nodes.length,kids=[],zoom=0,term='';\n"
	" for(var i=0;i<N;i++)kids.push([]);\n"
	" for(var i=1;i<N;i++)kids[G.nodes[i][4]].push(i);\n"
	" for(var i=0;i<N;i++)kids[i].sort(function(a,b){return G.nodes[b][2]-G.nodes[a][2]||a-b;});\n"
	" var depth=[0];for(var i=1;i<N;i++)depth[i]=depth[G.nodes[i][4]]+1;\n"
	" var maxd=0;for(var i=0;i<N;i++)if(depth[i]>maxd)maxd=depth[i];\n"
	" el.style.height=((maxd+1)*18+2)+'px';\n"
	" function matches(i){if(!term)return false;"
	"try{return new RegExp(term,'i').test(G.nodes[i][0]);}"
	"catch(e){return G.nodes[i][0].toLowerCase().indexOf(term.toLowerCase())>=0;}}\n"
	" function box(i,x,w,cls){var n=G.nodes[i],d=document.createElement('div');\n"
	"  d.className='fr'+cls;d.style.left=(x*100)+'%';d.style.width=(w*100)+'%';\n"
	"  d.style.top=(depth[i]*18)+'px';d.style.background=colour(n[0],n[5]);\n"
	"  d.textContent=n[0];d.setAttribute('data-name',n[0]);d.setAttribute('data-node',i);\n"
	"  el.appendChild(d);return d;}\n"
	" function draw(){el.textContent='';var total=G.nodes[zoom][2],shown=0,matched=0;\n"
	"  for(var a=G.nodes[zoom][4],c=zoom;c!==0;c=a,a=G.nodes[a][4]){box(a,0,1,' above');shown++;}\n"
	"  function walk(i,x,counted){var n=G.nodes[i],w=total?n[2]/total:0;if(w<0.0005)return;\n"
	"   var m=matches(i);var d=box(i,x,w,m?' match':'');shown++;\n"
	"   if(m&&!counted){matched+=n[2];counted=true;}\n"
	"   var cx=x;for(var k=0;k<kids[i].length;k++){var c=kids[i][k];walk(c,cx,counted);"
	"cx+=total?G.nodes[c][2]/total:0;}}\n"
	"  walk(zoom,0,false);el.setAttribute('data-boxes',shown);\n"
	"  status.textContent=term?('matched '+human(matched)+' ('+"
	"(G.nodes[0][2]?(100*matched/G.nodes[0][2]).toFixed(1):'0.0')+'% of all)'):'';}\n"
	" el.addEventListener('click',function(ev){var t=ev.target.getAttribute('data-node');"
	"if(t===null)return;t=+t;zoom=(t===zoom&&t!==0)?G.nodes[t][4]:t;draw();});\n"
	" el.addEventListener('mousemove',function(ev){var t=ev.target.getAttribute('data-node');"
	"if(t===null){tip.style.display='none';return;}var n=G.nodes[+t];\n"
	"  tip.textContent=n[1]+'\\n'+human(n[2])+' ('+n[2]+' bytes) in '+n[3]+' blocks, '+"
	"(G.nodes[0][2]?(100*n[2]/G.nodes[0][2]).toFixed(2):'0')+'% of the total';\n"
	"  tip.style.display='block';tip.style.left=Math.min(ev.clientX+12,innerWidth-660)+'px';"
	"tip.style.top=(ev.clientY+14)+'px';});\n"
	" el.addEventListener('mouseleave',function(){tip.style.display='none';});\n"
	" return {search:function(s){term=s;draw();},zoom:function(i){"
	"if(i>=0&&i<N){zoom=i;draw();}},draw:draw};}\n"
	"var graphs=[];\n"
	"for(var g=0;g<DATA.length;g++)graphs.push(graph(DATA[g],"
	"document.getElementById('fg'+g),document.getElementById('st'+g)));\n"
	"var input=document.getElementById('search');\n"
	"input.addEventListener('input',function(){for(var g=0;g<graphs.length;g++)"
	"graphs[g].search(input.value);});\n"
	"document.getElementById('reset').addEventListener('click',function(){"
	"for(var g=0;g<graphs.length;g++)graphs[g].zoom(0);});\n"
	"var h={};location.hash.replace(/^#/,'').split('&').forEach(function(kv){"
	"var p=kv.split('=');if(p[0])h[p[0]]=decodeURIComponent(p[1]||'');});\n"
	"for(var g=0;g<graphs.length;g++){graphs[g].draw();"
	"if(h.zoom)graphs[g].zoom(+h.zoom);if(h.search){input.value=h.search;"
	"graphs[g].search(h.search);}}\n"
	"if(h.where){var w=document.querySelector('.fr[data-name=\"'+"
	"h.where.replace(/[\"\\\\]/g,'\\\\$&')+'\"]');if(w){var r=w.getBoundingClientRect();"
	"document.body.setAttribute('data-where',[Math.round(r.left),Math.round(r.top),"
	"Math.round(r.right),Math.round(r.bottom),innerWidth,innerHeight].join(' '));}}\n"
	"document.body.setAttribute('data-rendered','yes');\n"
	"})();\n";

/* What one node costs in the page's data, roughly. */
static size_t node_cost(const struct fnode *n)
{
	return strlen(n->name) + strlen(n->detail) + 48;
}

static int by_bytes(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * What the page's data costs when it carries the nodes of least bytes
 * and more (never fewer than their callees'), with an "other" box under
 * each carried node that loses a callee and up to OTHER_SHOWN of those
 * as its children.  shown: per node, scratch.
 */
static size_t page_cost(const struct ftree *t, uint64_t least, int *shown)
{
	size_t cost = node_cost(&t->n[0]);

	memset(shown, 0, t->len * sizeof(*shown));
	for (size_t i = 1; i < t->len; i++) {
		const struct fnode *n = &t->n[i];

		if (n->bytes >= least) {
			cost += node_cost(n);
			continue;
		}
		if (t->n[n->parent].bytes < least)
			continue;
		if (!shown[n->parent])
			cost += 120; /* the "other" box */
		if (shown[n->parent]++ < OTHER_SHOWN)
			cost += node_cost(n);
	}
	return cost;
}

/*
 * Mark the nodes the page carries: all those of some bytes or more, the
 * least such figure whose page fits the budget (and at least
 * PAGE_MIN_PART of the whole).  A callee is never wider than its
 * caller, so what is carried is one tree from the top.
 */
static int choose_kept(struct ftree *t)
{
	uint64_t floor = (uint64_t)((double)t->n[0].bytes * PAGE_MIN_PART);
	uint64_t *widths = malloc(t->len * sizeof(*widths));
	int *scratch = malloc(t->len * sizeof(*scratch));
	size_t lo = 0, hi;

	if (!widths || !scratch) {
		free(widths);
		free(scratch);
		return -ENOMEM;
	}
	for (size_t i = 0; i < t->len; i++)
		widths[i] = t->n[i].bytes;
	qsort(widths, t->len, sizeof(*widths), by_bytes);
	/* The first width (ascending) whose page fits: cost falls as it rises.
	 */
	hi = t->len - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (widths[mid] >= floor &&
		    page_cost(t, widths[mid], scratch) <= PAGE_BUDGET)
			hi = mid;
		else
			lo = mid + 1;
	}
	for (size_t i = 0; i < t->len; i++)
		t->n[i].kept = !i || t->n[i].bytes >= widths[lo];
	free(widths);
	free(scratch);
	return 0;
}

static void node_json(FILE *out, const char *name, const char *detail,
		      uint64_t bytes, uint64_t blocks, int parent, int kind)
{
	fprintf(out, ",\n[");
	json_string_script(out, name);
	fprintf(out, ",");
	json_string_script(out, detail);
	fprintf(out, ",%llu,%llu,%d,%d]", (unsigned long long)bytes,
		(unsigned long long)blocks, parent, kind);
}

/*
 * Under a kept node, its children left out as one "other" box, with the
 * widest OTHER_SHOWN of them as its children (without theirs).
 */
static void page_other(FILE *out, struct ftree *t, int p, int *next)
{
	uint64_t bytes = 0, blocks = 0;
	int shown[OTHER_SHOWN], nshown = 0, count = 0, at;
	char detail[160];

	for (int c = t->n[p].child; c >= 0; c = t->n[c].next) {
		if (t->n[c].kept)
			continue;
		bytes += t->n[c].bytes;
		blocks += t->n[c].blocks;
		count++;
		/* Insertion into the widest few, widest first. */
		int k = nshown < OTHER_SHOWN ? nshown++ : OTHER_SHOWN;

		while (k > 0 && t->n[shown[k - 1]].bytes < t->n[c].bytes) {
			if (k < OTHER_SHOWN)
				shown[k] = shown[k - 1];
			k--;
		}
		if (k < OTHER_SHOWN)
			shown[k] = c;
	}
	if (!count)
		return;
	snprintf(
		detail, sizeof(detail),
		"%d frame%s too narrow to carry in the page; a click opens the widest %d",
		count, count == 1 ? "" : "s", nshown < count ? nshown : count);
	node_json(out, "other", detail, bytes, blocks, t->n[p].out, 2);
	at = (*next)++;
	for (int k = 0; k < nshown; k++) {
		const struct fnode *n = &t->n[shown[k]];

		node_json(out, n->name, n->detail, n->bytes, n->blocks, at,
			  n->owner ? 1 : 0);
		(*next)++;
	}
}

/*
 * The graph as data: nodes of [name, detail, bytes, blocks, parent,
 * kind] (kind 0 a frame, 1 an owner, 2 an "other" box), parents first.
 */
static int page_data(FILE *out, struct ftree *t, const char *title)
{
	int next = 0;

	if (choose_kept(t))
		return -ENOMEM;
	fprintf(out, "{\"title\": ");
	json_string_script(out, title);
	fprintf(out, ", \"nodes\": [\n[");
	json_string_script(out, t->n[0].name);
	fprintf(out, ",");
	json_string_script(out, t->n[0].detail);
	fprintf(out, ",%llu,%llu,0,0]", (unsigned long long)t->n[0].bytes,
		(unsigned long long)t->n[0].blocks);
	t->n[0].out = next++;
	/* Children come after their parents in the tree's own order. */
	for (size_t i = 1; i < t->len; i++) {
		struct fnode *n = &t->n[i];

		if (!n->kept)
			continue;
		node_json(out, n->name, n->detail, n->bytes, n->blocks,
			  t->n[n->parent].out, n->owner ? 1 : 0);
		n->out = next++;
	}
	for (size_t i = 0; i < t->len; i++)
		if (t->n[i].kept)
			page_other(out, t, (int)i, &next);
	fprintf(out, "]}");
	return 0;
}

int report_flame_html(FILE *out, const struct report_ctx *c)
{
	struct ftree *trees = calloc(c->at->ndev + 1, sizeof(*trees));
	char title[256];
	int rc = 0;

	if (!trees)
		return -ENOMEM;
	report_resolve(c);
	for (size_t d = 0; d < c->at->ndev && !rc; d++)
		rc = ftree_build(&trees[d], c, &c->at->dev[d]);
	if (rc)
		goto out;
	fprintf(out,
		"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n"
		"<title>alloy flame graph</title>\n<style>%s</style>\n"
		"</head><body>\n<h1>alloy: what was live, by call stack%s</h1>\n"
		"<p class=\"note\">",
		page_style, c->by_owner ? " under its owner" : "");
	html_text(out, c->path);
	fprintf(out,
		". Width is bytes. Hover for a site's bytes and blocks, "
		"click a box to zoom into it (click it again, or the "
		"top box, to zoom out).</p>\n"
		"<div class=\"bar\"><input id=\"search\" placeholder=\"search functions (regular expression)\">"
		" <button id=\"reset\">reset zoom</button></div>\n");
	for (size_t d = 0; d < c->at->ndev; d++) {
		heading(title, sizeof(title), c, &c->at->dev[d]);
		fprintf(out, "<h2>");
		html_text(out, title);
		fprintf(out,
			"</h2>\n<div class=\"note\" id=\"st%zu\"></div>\n"
			"<div class=\"fg\" id=\"fg%zu\"></div>\n",
			d, d);
	}
	fprintf(out, "<div id=\"tip\"></div>\n<script>\nvar DATA=[");
	for (size_t d = 0; d < c->at->ndev; d++) {
		heading(title, sizeof(title), c, &c->at->dev[d]);
		fprintf(out, "%s", d ? ",\n" : "");
		rc = page_data(out, &trees[d], title);
		if (rc)
			goto out;
	}
	fprintf(out, "];\n%s</script>\n</body></html>\n", page_script);
out:
	for (size_t d = 0; d < c->at->ndev; d++)
		ftree_free(&trees[d]);
	free(trees);
	return rc;
}

/* ---- the picture -------------------------------------------------------- */

static unsigned hash_name(const char *s)
{
	unsigned h = 0;

	for (; *s; s++)
		h = h * 31 + (unsigned char)*s;
	return h;
}

/* Node i and its callees, the graph's top row at top_y. */
static void svg_node(FILE *out, struct ftree *t, int i, double x, double w,
		     int top_y)
{
	const struct fnode *n = &t->n[i];
	unsigned h = hash_name(n->name);
	double cx = x;
	int y = top_y + n->depth * SVG_ROW;
	size_t fit;
	char hb[32];

	if (w < 0.3)
		return;
	fprintf(out, "<g><title>");
	html_text(out, n->detail);
	fprintf(out, " &#10;%s (%llu bytes) in %llu blocks, %.2f%%</title>",
		trace_human_bytes(n->bytes, hb, sizeof(hb)),
		(unsigned long long)n->bytes, (unsigned long long)n->blocks,
		t->n[0].bytes ? 100.0 * (double)n->bytes / (double)t->n[0].bytes
			      : 0.0);
	if (n->owner)
		fprintf(out,
			"<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"hsl(%u,60%%,%u%%)\" stroke=\"white\"/>",
			x, y, w, SVG_ROW - 1, 200 + h % 40, 62 + h % 16);
	else
		fprintf(out,
			"<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"hsl(%u,85%%,%u%%)\" stroke=\"white\"/>",
			x, y, w, SVG_ROW - 1, h % 50, 58 + h % 20);
	/* Some 6.6 pixels a character at 11 px monospace. */
	fit = w > 20 ? (size_t)((w - 6) / 6.6) : 0;
	if (fit) {
		char text[256];
		size_t len = strlen(n->name);

		if (len > fit)
			snprintf(text, sizeof(text), "%.*s..",
				 (int)(fit > 2 ? fit - 2 : 0), n->name);
		else
			snprintf(text, sizeof(text), "%s", n->name);
		fprintf(out, "<text x=\"%.2f\" y=\"%d\">", x + 3,
			y + SVG_ROW - 5);
		html_text(out, text);
		fprintf(out, "</text>");
	}
	fprintf(out, "</g>\n");
	/* Widest first, as the page draws them. */
	for (;;) {
		int k = -1;

		for (int j = n->child; j >= 0; j = t->n[j].next)
			if (!t->n[j].drawn &&
			    (k < 0 || t->n[j].bytes > t->n[k].bytes ||
			     (t->n[j].bytes == t->n[k].bytes && j < k)))
				k = j;
		if (k < 0)
			break;
		t->n[k].drawn = true;
		double kw =
			n->bytes ? w * (double)t->n[k].bytes / (double)n->bytes
				 : 0;

		svg_node(out, t, k, cx, kw, top_y);
		cx += kw;
	}
}

int report_flame_svg(FILE *out, const struct report_ctx *c)
{
	struct ftree *trees = calloc(c->at->ndev + 1, sizeof(*trees));
	int height = SVG_MARGIN, y, rc = 0;
	char title[256];

	if (!trees)
		return -ENOMEM;
	report_resolve(c);
	for (size_t d = 0; d < c->at->ndev && !rc; d++) {
		rc = ftree_build(&trees[d], c, &c->at->dev[d]);
		height += 30 + (trees[d].depth + 1) * SVG_ROW + SVG_MARGIN;
	}
	if (rc)
		goto out;
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"monospace\" font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		SVG_W + 2 * SVG_MARGIN, height, SVG_W + 2 * SVG_MARGIN, height);
	y = SVG_MARGIN;
	for (size_t d = 0; d < c->at->ndev; d++) {
		heading(title, sizeof(title), c, &c->at->dev[d]);
		fprintf(out,
			"<text x=\"%d\" y=\"%d\" font-family=\"sans-serif\" font-size=\"14\" font-weight=\"bold\">",
			SVG_MARGIN, y + 16);
		html_text(out, title);
		fprintf(out, "</text>\n");
		y += 30;
		svg_node(out, &trees[d], 0, SVG_MARGIN, SVG_W, y);
		y += (trees[d].depth + 1) * SVG_ROW + SVG_MARGIN;
	}
	fprintf(out, "</svg>\n");
out:
	for (size_t d = 0; d < c->at->ndev; d++)
		ftree_free(&trees[d]);
	free(trees);
	return rc;
}
