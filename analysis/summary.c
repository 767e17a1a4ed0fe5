// SPDX-License-Identifier: MIT
/*
 * analysis/summary.c - the summary of a whole trace, per allocator and
 * device, as the table `alloy report` prints and as JSON; the timeline's
 * page shows the same table.
 */
#include <stdio.h>

#include "json.h"
#include "report.h"

void report_summary_text(FILE *out, const char *path, const struct trace *tr,
			 const struct trace_summary *sum)
{
	char hb[32];

	fprintf(out,
		"trace%s%s: version %d, pid %ld, %zu events over %.3f ms%s\n",
		*path ? " " : "", path, tr->version, tr->pid, tr->nev,
		(double)sum->duration_ns / 1e6,
		tr->complete	 ? ""
		: tr->incomplete ? " (marked incomplete by its writer)"
				 : " (no end record: cut short)");
	fprintf(out, "%-16s %-11s %10s %10s %15s %13s %13s %8s\n", "allocator",
		"device", "allocs", "frees", "total", "peak", "live at end",
		"leaks");
	for (size_t i = 0; i <= tr->nseries; i++) {
		const struct trace_series_sum *s =
			i < tr->nseries ? &sum->s[i] : &sum->all;

		fprintf(out,
			"%-16s %-11s %10llu %10llu %15llu %13llu %13llu %8llu\n",
			i < tr->nseries ? tr->series[i].allocator : "(all)",
			i < tr->nseries ? tr->series[i].device : "",
			(unsigned long long)s->allocs,
			(unsigned long long)s->frees,
			(unsigned long long)s->total_bytes,
			(unsigned long long)s->peak_bytes,
			(unsigned long long)s->live_bytes,
			(unsigned long long)s->live_blocks);
	}
	fprintf(out, "peak %llu bytes (%s) at %.3f ms\n",
		(unsigned long long)sum->all.peak_bytes,
		trace_human_bytes(sum->all.peak_bytes, hb, sizeof(hb)),
		(double)sum->all.peak_t_ns / 1e6);
	fprintf(out, "unknown frees %llu, double frees %llu\n",
		(unsigned long long)sum->unknown_frees,
		(unsigned long long)sum->double_frees);
	report_memory_text(out, tr, sum);
}

/*
 * Resident memory beside the heap: what the process held from the
 * system against the trace's peak of live bytes.  Memory outside malloc
 * (mmap'd heaps, stacks, code) shows as the difference.
 */
void report_memory_text(FILE *out, const struct trace *tr,
			const struct trace_summary *sum)
{
	uint64_t rss = tr->peak_resident, heap = sum->all.peak_bytes;
	char a[32], b[32], d[32], m[32];

	if (!tr->nmem)
		return;
	fprintf(out,
		"peak RSS %s (%llu bytes) at %.3f ms, peak heap %s: RSS %s heap by %s (%zu samples, mapped at most %s)\n",
		trace_human_bytes(rss, a, sizeof(a)), (unsigned long long)rss,
		(double)tr->peak_resident_t_ns / 1e6,
		trace_human_bytes(heap, b, sizeof(b)),
		rss >= heap ? "above" : "below",
		trace_human_bytes(rss >= heap ? rss - heap : heap - rss, d,
				  sizeof(d)),
		tr->nmem, trace_human_bytes(tr->peak_mapped, m, sizeof(m)));
}

static void json_sum(FILE *out, const struct trace_series_sum *s)
{
	fprintf(out,
		"\"allocs\": %llu, \"frees\": %llu, \"total_bytes\": %llu, "
		"\"peak_bytes\": %llu, \"peak_t_ns\": %llu, \"live_bytes\": %llu, "
		"\"live_blocks\": %llu",
		(unsigned long long)s->allocs, (unsigned long long)s->frees,
		(unsigned long long)s->total_bytes,
		(unsigned long long)s->peak_bytes,
		(unsigned long long)s->peak_t_ns,
		(unsigned long long)s->live_bytes,
		(unsigned long long)s->live_blocks);
}

void report_summary_json(FILE *out, const char *path, const struct trace *tr,
			 const struct trace_summary *sum)
{
	fprintf(out, "{\"trace\": ");
	json_string(out, path);
	fprintf(out,
		", \"version\": %d, \"pid\": %ld, \"events\": %zu, "
		"\"duration_ns\": %llu, \"complete\": %s, \"incomplete\": %s,\n \"series\": [",
		tr->version, tr->pid, tr->nev,
		(unsigned long long)sum->duration_ns,
		tr->complete ? "true" : "false",
		tr->incomplete ? "true" : "false");
	for (size_t i = 0; i < tr->nseries; i++) {
		fprintf(out, "%s\n  {\"allocator\": ", i ? "," : "");
		json_string(out, tr->series[i].allocator);
		fprintf(out, ", \"device\": ");
		json_string(out, tr->series[i].device);
		fprintf(out, ", ");
		json_sum(out, &sum->s[i]);
		fprintf(out, "}");
	}
	fprintf(out, "],\n \"all\": {");
	json_sum(out, &sum->all);
	fprintf(out, "},\n \"unknown_frees\": %llu, \"double_frees\": %llu,\n",
		(unsigned long long)sum->unknown_frees,
		(unsigned long long)sum->double_frees);
	if (!tr->nmem) {
		fprintf(out, " \"memory\": null}\n");
		return;
	}
	fprintf(out,
		" \"memory\": {\"samples\": %zu, \"peak_resident_bytes\": %llu, "
		"\"peak_resident_t_ns\": %llu, \"peak_mapped_bytes\": %llu, "
		"\"peak_heap_bytes\": %llu, \"resident_above_heap_bytes\": %lld}}\n",
		tr->nmem, (unsigned long long)tr->peak_resident,
		(unsigned long long)tr->peak_resident_t_ns,
		(unsigned long long)tr->peak_mapped,
		(unsigned long long)sum->all.peak_bytes,
		(long long)tr->peak_resident - (long long)sum->all.peak_bytes);
}
