// SPDX-License-Identifier: MIT
/*
 * analysis/at.c - `alloy report TRACE --at peak|TIME`: what was live, by
 * call site and by owner, as text or JSON.
 *
 * A site is a whole call stack, shown innermost frame first, each frame
 * named from the trace's module map (analysis/symbols.c).  Shares are of the
 * device's live bytes at that moment.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "report.h"

const char *report_owner(const struct trace *tr, uint32_t owner)
{
	if (owner && owner < tr->nowners && tr->owners[owner])
		return tr->owners[owner];
	return "(no owner)";
}

const char *report_site_label(const struct report_ctx *c, uint32_t stack,
			      bool lines, char *buf, size_t len)
{
	uint32_t parent;
	size_t n;

	if (!trace_stack_known(stack))
		return symbols_no_stack(stack);
	if (lines)
		symbols_name(c->sym, stack, buf, len);
	else
		symbols_func(c->sym, stack, buf, len);
	parent = c->tr->nodes[stack].parent;
	n = strlen(buf);
	if (trace_stack_known(parent) && n + 4 < len) {
		memcpy(buf + n, " < ", 4);
		symbols_func(c->sym, parent, buf + n + 3, len - n - 3);
	}
	return buf;
}

void report_resolve(const struct report_ctx *c)
{
	for (size_t d = 0; d < c->at->ndev; d++) {
		const struct at_device *dev = &c->at->dev[d];
		uint32_t *ids = malloc((dev->nsites + 1) * sizeof(*ids));

		if (!ids)
			continue;
		for (size_t i = 0; i < dev->nsites; i++)
			ids[i] = dev->sites[i].stack;
		symbols_resolve(c->sym, ids, dev->nsites);
		free(ids);
	}
}

/* ---- one site per stack of names ---------------------------------------- */

struct canon {
	const struct report_ctx *c;
	struct {
		char *sig;
		uint32_t stack;
	} * seen;
	size_t n, cap;
	struct blockmap by_hash; /* hash of a signature -> its first index */
};

static uint64_t sig_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h | 1; /* never 0: the map's empty key */
}

/* The stack as its frames' names, one per line. */
static char *signature(const struct report_ctx *c, uint32_t stack)
{
	char name[1024], *sig = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&sig, &len);

	if (!f)
		return NULL;
	for (uint32_t id = stack; trace_stack_known(id);
	     id = c->tr->nodes[id].parent)
		fprintf(f, "%s\n",
			symbols_name(c->sym, id, name, sizeof(name)));
	fclose(f);
	return sig;
}

static uint32_t canon_of(void *arg, uint32_t stack)
{
	struct canon *k = arg;
	struct blockmap_slot *slot;
	uint64_t h;
	char *sig;

	if (!trace_stack_known(stack))
		return stack;
	sig = signature(k->c, stack);
	if (!sig)
		return stack;
	h = sig_hash(sig);
	slot = blockmap_find(&k->by_hash, h);
	if (slot && !strcmp(k->seen[slot->value].sig, sig)) {
		free(sig);
		return k->seen[slot->value].stack;
	}
	/* Two signatures of one hash: look at all (never seen in practice). */
	for (size_t i = 0; slot && i < k->n; i++)
		if (!strcmp(k->seen[i].sig, sig)) {
			free(sig);
			return k->seen[i].stack;
		}
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		void *n = realloc(k->seen, cap * sizeof(*k->seen));

		if (!n) {
			free(sig);
			return stack;
		}
		k->seen = n;
		k->cap = cap;
	}
	if (!slot && blockmap_insert(&k->by_hash, h, k->n)) {
		free(sig);
		return stack;
	}
	k->seen[k->n].sig = sig;
	k->seen[k->n++].stack = stack;
	return stack;
}

int report_merge_sites(const struct report_ctx *c, struct trace_at *at)
{
	struct canon k = { .c = c };
	int rc;

	report_resolve(c);
	rc = trace_at_merge(at, canon_of, &k);
	for (size_t i = 0; i < k.n; i++)
		free(k.seen[i].sig);
	free(k.seen);
	blockmap_free(&k.by_hash);
	return rc;
}

void report_stack_lines(FILE *out, const struct report_ctx *c, uint32_t stack,
			const char *indent, size_t depth)
{
	const struct trace *tr = c->tr;
	char name[1024];
	size_t i = 0;

	if (!trace_stack_known(stack)) {
		fprintf(out, "%s%s\n", indent, symbols_no_stack(stack));
		return;
	}
	for (uint32_t id = stack; trace_stack_known(id) && i < depth;
	     id = tr->nodes[id].parent, i++)
		fprintf(out, "%s%s %s\n", indent, i ? "<" : " ",
			symbols_name(c->sym, id, name, sizeof(name)));
	for (uint32_t id = stack; trace_stack_known(id);
	     id = tr->nodes[id].parent)
		if (tr->nodes[id].parent == TRACE_STACK_MISSING)
			fprintf(out,
				"%s< [frames missing: the trace's stack table is cut]\n",
				indent);
}

static double share(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

static void text_device(FILE *out, const struct report_ctx *c,
			const struct at_device *d)
{
	size_t nsites = c->top && d->nsites > c->top ? c->top : d->nsites;
	size_t nowners = c->top && d->nowners > c->top ? c->top : d->nowners;
	char hb[32];

	fprintf(out,
		"%s %s: %llu bytes (%s) in %llu blocks at %.6f ms (event %zu of %zu)\n",
		c->at->at_peak ? "peak of" : "live on", d->device,
		(unsigned long long)d->bytes,
		trace_human_bytes(d->bytes, hb, sizeof(hb)),
		(unsigned long long)d->blocks, (double)d->t_ns / 1e6, d->events,
		c->tr->nev);
	fprintf(out, "\nby site (%zu site%s%s):\n", d->nsites,
		d->nsites == 1 ? "" : "s",
		nsites < d->nsites ? ", the largest shown" : "");
	fprintf(out, "  %14s %7s %8s  %s\n", "bytes", "share", "blocks",
		"call stack, innermost first");
	for (size_t i = 0; i < nsites; i++) {
		const struct at_group *g = &d->sites[i];

		fprintf(out, "  %14llu %6.1f%% %8llu\n",
			(unsigned long long)g->bytes, share(g->bytes, d->bytes),
			(unsigned long long)g->blocks);
		report_stack_lines(out, c, g->stack,
				   "                                ",
				   SIZE_MAX);
	}
	fprintf(out, "\nby owner (%zu owner%s%s):\n", d->nowners,
		d->nowners == 1 ? "" : "s",
		nowners < d->nowners ? ", the largest shown" : "");
	fprintf(out, "  %14s %7s %8s  %s\n", "bytes", "share", "blocks",
		"owner");
	for (size_t i = 0; i < nowners; i++) {
		const struct at_group *g = &d->owners[i];

		fprintf(out, "  %14llu %6.1f%% %8llu  %s\n",
			(unsigned long long)g->bytes, share(g->bytes, d->bytes),
			(unsigned long long)g->blocks,
			report_owner(c->tr, g->owner));
	}
}

void report_at_text(FILE *out, const struct report_ctx *c)
{
	const struct trace *tr = c->tr;

	fprintf(out, "trace %s: version %d, pid %ld, %zu events%s\n", c->path,
		tr->version, tr->pid, tr->nev,
		tr->complete ? "" : " (no end record: cut short)");
	if (!c->at->ndev)
		fprintf(out, "no allocations in the trace\n");
	for (size_t d = 0; d < c->at->ndev; d++) {
		fprintf(out, "\n");
		text_device(out, c, &c->at->dev[d]);
	}
}

/* {"function": ..., "file": ..., "line": ..., "module": ..., "address": ...} */
static void json_frame(FILE *out, const struct report_ctx *c, uint32_t id)
{
	const struct sym_frame *f = symbols_frame(c->sym, id);
	char name[1024];

	fprintf(out, "{\"name\": ");
	json_string(out, symbols_name(c->sym, id, name, sizeof(name)));
	fprintf(out, ", \"function\": ");
	if (f->func)
		json_string(out, f->func);
	else
		fprintf(out, "null");
	fprintf(out, ", \"file\": ");
	if (f->file)
		json_string(out, f->file);
	else
		fprintf(out, "null");
	fprintf(out, ", \"line\": %u, \"module\": ", f->line);
	if (f->module)
		json_string(out, f->module);
	else
		fprintf(out, "null");
	fprintf(out, ", \"address\": \"%#llx\"",
		(unsigned long long)(c->tr->nodes[id].code
					     ? 0
					     : c->tr->nodes[id].frame));
	if (f->module)
		fprintf(out, ", \"module_address\": \"%#llx\"",
			(unsigned long long)f->addr);
	fprintf(out, "}");
}

static void json_group(FILE *out, const struct report_ctx *c,
		       const struct at_device *d, const struct at_group *g,
		       bool site)
{
	fprintf(out, "{\"bytes\": %llu, \"blocks\": %llu, \"share\": ",
		(unsigned long long)g->bytes, (unsigned long long)g->blocks);
	json_number(out, share(g->bytes, d->bytes) / 100);
	if (!site) {
		fprintf(out, ", \"owner\": ");
		if (g->owner && g->owner < c->tr->nowners &&
		    c->tr->owners[g->owner])
			json_string(out, c->tr->owners[g->owner]);
		else
			fprintf(out, "null");
		fprintf(out, "}");
		return;
	}
	fprintf(out, ", \"known\": %s, \"stack\": [",
		trace_stack_known(g->stack) ? "true" : "false");
	for (uint32_t id = g->stack, i = 0; trace_stack_known(id);
	     id = c->tr->nodes[id].parent, i++) {
		fprintf(out, "%s", i ? ", " : "");
		json_frame(out, c, id);
	}
	fprintf(out, "]}");
}

void report_at_json(FILE *out, const struct report_ctx *c)
{
	const struct trace *tr = c->tr;

	fprintf(out, "{\"trace\": ");
	json_string(out, c->path);
	fprintf(out,
		", \"version\": %d, \"pid\": %ld, \"events\": %zu, \"complete\": %s, "
		"\"at\": ",
		tr->version, tr->pid, tr->nev, tr->complete ? "true" : "false");
	if (c->at->at_peak)
		fprintf(out, "\"peak\"");
	else
		fprintf(out, "%llu", (unsigned long long)c->at->t_ns);
	fprintf(out, ",\n \"devices\": [");
	for (size_t k = 0; k < c->at->ndev; k++) {
		const struct at_device *d = &c->at->dev[k];
		size_t nsites =
			c->top && d->nsites > c->top ? c->top : d->nsites;
		size_t nowners =
			c->top && d->nowners > c->top ? c->top : d->nowners;

		fprintf(out, "%s\n  {\"device\": ", k ? "," : "");
		json_string(out, d->device);
		fprintf(out,
			", \"t_ns\": %llu, \"events\": %zu, \"bytes\": %llu, \"blocks\": %llu,\n   \"sites\": [",
			(unsigned long long)d->t_ns, d->events,
			(unsigned long long)d->bytes,
			(unsigned long long)d->blocks);
		for (size_t i = 0; i < nsites; i++) {
			fprintf(out, "%s\n    ", i ? "," : "");
			json_group(out, c, d, &d->sites[i], true);
		}
		fprintf(out, "],\n   \"owners\": [");
		for (size_t i = 0; i < nowners; i++) {
			fprintf(out, "%s\n    ", i ? "," : "");
			json_group(out, c, d, &d->owners[i], false);
		}
		fprintf(out, "]}");
	}
	fprintf(out, "]}\n");
}
