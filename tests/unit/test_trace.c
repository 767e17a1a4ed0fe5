// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_trace.c - the trace: written by the reporter, read back by
 * the alloy command's reader, replayed with the same peak; what a crash
 * leaves behind; and malformed or truncated files, each refused with its
 * line and byte offset.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <signal.h>
#include <sys/resource.h>

#include <alloy/plain.h>

#include "testutil.h"
#include "analysis/peak.h"
#include "analysis/symbols.h"
#include "analysis/trace.h"

static char trace_path[64];

/* trace_path: a file named after this test process. */
static void tmp_trace_path(void)
{
	snprintf(trace_path, sizeof(trace_path), "/tmp/alloy-test-trace.%d",
		 (int)getpid());
}

/* Point ALLOY_CONF's trace at a fresh file of this test process. */
static void trace_to_tmp(void)
{
	char conf[128];

	tmp_trace_path();
	snprintf(conf, sizeof(conf), "trace:%s", trace_path);
	test_set_conf(conf);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(round_trip_gives_the_same_peak)
{
	static struct trace_summary sum;
	struct alloy_reporter_snapshot snap = {
		.size = sizeof(snap), .version = ALLOY_REPORTER_SNAPSHOT_VERSION
	};
	struct test_alloc ta;
	struct alloy_allocator *a;
	struct alloy_data_ptr dp[32] = { 0 };
	struct replay_result r;
	struct trace tr;
	char err[256];

	trace_to_tmp();
	a = test_alloc_register(&ta, "tr_rt");
	ck_assert(alloy_reporter_enabled());
	for (int step = 0; step < 200; step++) {
		int i = (step * 7) % 32;

		alloy_data_ptr_free(&dp[i]);
		ck_assert_ok(alloy_alloc(a, (size_t)(step * 37 % 5000) + 1,
					 step % 3 ? 0 : 256, 0, &dp[i]));
	}
	for (int i = 0; i < 32; i += 2)
		alloy_data_ptr_free(&dp[i]);
	ck_assert_ok(alloy_reporter_snapshot(&snap));
	ck_assert_ok(alloy_reporter_flush());

	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	/* Still running: no end record yet, but every event is there. */
	ck_assert(!tr.complete);
	ck_assert_int_eq(tr.version, TRACE_VERSION);
	ck_assert_int_eq(tr.pid, getpid());
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.allocs, 200);
	ck_assert_uint_eq(sum.all.frees, 200 - 16);
	ck_assert_uint_eq(sum.all.peak_bytes, snap.total.peak_bytes);
	ck_assert_uint_eq(sum.all.live_bytes, snap.total.current_bytes);
	ck_assert_uint_eq(sum.all.live_blocks, 16);
	ck_assert_str_eq(tr.series[0].allocator, "tr_rt");
	ck_assert_str_eq(tr.series[0].device, "cpu:0");
	/* Alignment made it into the trace. */
	ck_assert_uint_eq(tr.ev[0].align, 256);

	/* Replay against another allocator: same peak, everything freed. */
	ck_assert_ok(trace_replay(&tr, NULL, alloy_find_allocator("default"),
				  REPLAY_USABLE, &r, NULL, NULL));
	ck_assert_uint_eq(r.peak_live, sum.all.peak_bytes);
	ck_assert_uint_eq(r.end_live, sum.all.live_bytes);
	/* Usable bytes cover the requested ones, live and at the peak. */
	ck_assert(r.have_usable);
	ck_assert_uint_ge(r.peak_usable, r.peak_live);
	ck_assert_uint_ge(r.end_usable, r.end_live);
	ck_assert_uint_eq(r.allocs, 200);
	ck_assert_uint_eq(r.frees, 200 - 16);
	ck_assert_int_eq(
		alloy_allocator_live_blocks(alloy_find_allocator("default")),
		0);
	trace_free(&tr);
	for (int i = 1; i < 32; i += 2)
		alloy_data_ptr_free(&dp[i]);
	unlink(trace_path);
}
END_TEST

START_TEST(trace_started_and_stopped_by_the_api)
{
	static struct trace_summary sum;
	struct test_alloc ta;
	struct alloy_allocator *a;
	struct alloy_data_ptr dp;
	struct trace tr;
	char err[256];

	tmp_trace_path();
	a = test_alloc_register(&ta, "tr_api");
	ck_assert(!alloy_reporter_enabled());
	ck_assert_int_eq(alloy_reporter_trace_stop(), -ENOENT);
	ck_assert(strstr(alloy_last_error(), "no trace"));
	ck_assert_int_eq(alloy_reporter_trace_start("/nonexistent/dir/t"),
			 -ENOENT);
	ck_assert(strstr(alloy_last_error(), "/nonexistent/dir/t"));
	ck_assert_int_eq(alloy_reporter_trace_start(""), -EINVAL);

	ck_assert_ok(alloy_reporter_trace_start(trace_path));
	ck_assert(alloy_reporter_enabled());
	ck_assert_int_eq(alloy_reporter_trace_start(trace_path), -EBUSY);
	for (int i = 0; i < 3; i++) {
		ck_assert_ok(alloy_alloc(a, 100 + (size_t)i, 0, 0, &dp));
		alloy_data_ptr_free(&dp);
	}
	ck_assert_ok(alloy_reporter_trace_stop());
	/* After the stop: counted by the reporter, not in the trace. */
	ck_assert_ok(alloy_alloc(a, 5, 0, 0, &dp));
	alloy_data_ptr_free(&dp);

	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert(tr.complete);
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.allocs, 3);
	ck_assert_uint_eq(sum.all.frees, 3);
	ck_assert_uint_eq(sum.all.peak_bytes, 102);
	trace_free(&tr);

	/* A second trace starts afresh. */
	ck_assert_ok(alloy_reporter_trace_start(trace_path));
	ck_assert_ok(alloy_alloc(a, 7, 0, 0, &dp));
	ck_assert_ok(alloy_reporter_trace_stop());
	alloy_data_ptr_free(&dp);
	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert(tr.complete);
	ck_assert_uint_eq(tr.nev, 1);
	trace_free(&tr);
	unlink(trace_path);
}
END_TEST

static void *traced_thread(void *arg)
{
	struct alloy_allocator *a = arg;
	struct alloy_data_ptr dp[8] = { 0 };

	for (int i = 0; i < 5000; i++) {
		alloy_data_ptr_free(&dp[i % 8]);
		if (alloy_alloc(a, (size_t)(i % 13) * 100 + 8, 0, 0,
				&dp[i % 8]))
			abort();
	}
	for (int i = 0; i < 8; i++)
		alloy_data_ptr_free(&dp[i]);
	return NULL;
}

START_TEST(threads_write_a_consistent_trace)
{
	static struct trace_summary sum;
	struct alloy_allocator *def;
	struct replay_result r;
	pthread_t th[3];
	struct trace tr;
	char err[256];

	trace_to_tmp();
	def = alloy_find_allocator("default");
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, traced_thread, def), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	ck_assert_ok(alloy_reporter_flush());
	/* The reader refuses a free before its alloc: order must hold. */
	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.allocs, 15000);
	ck_assert_uint_eq(sum.all.frees, 15000);
	ck_assert_uint_eq(sum.all.live_bytes, 0);
	ck_assert_ok(trace_replay(&tr, NULL, def, 0, &r, NULL, NULL));
	ck_assert_uint_eq(r.peak_live, sum.all.peak_bytes);
	trace_free(&tr);
	unlink(trace_path);
}
END_TEST

START_TEST(crash_leaves_a_readable_trace)
{
	struct trace tr;
	char err[256];
	int status;
	pid_t pid;

	trace_to_tmp();
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct alloy_data_ptr dp;

		/* Enough events to fill the buffer a few times, then die. */
		for (int i = 0; i < 5000; i++) {
			if (alloy_alloc_default(ALLOY_DEVICE_CPU, 1000, 0, &dp))
				_exit(3);
			alloy_data_ptr_free(&dp);
		}
		_exit(0); /* no atexit: no end record, no final flush */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert(!tr.complete);
	/* Whole events only, up to the last flush, and some were flushed. */
	ck_assert_uint_gt(tr.nev, 1000);
	ck_assert_uint_le(tr.nev, 10000);
	trace_free(&tr);
	unlink(trace_path);
}
END_TEST

START_TEST(fork_child_does_not_write_the_parents_trace)
{
	static struct trace_summary sum;
	struct alloy_data_ptr keep, dp;
	struct trace tr;
	char err[256];
	int status;
	pid_t pid;

	trace_to_tmp();
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CPU, 100, 0, &keep));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* Counted here, written nowhere; exit() runs the atexit. */
		for (int i = 0; i < 100; i++) {
			if (alloy_alloc_default(ALLOY_DEVICE_CPU, 10, 0, &dp))
				_exit(3);
			alloy_data_ptr_free(&dp);
		}
		alloy_data_ptr_free(&keep);
		exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CPU, 200, 0, &dp));
	alloy_data_ptr_free(&dp);
	alloy_data_ptr_free(&keep);
	ck_assert_ok(alloy_reporter_flush());
	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	/* The parent's four events, once each; nothing of the child's. */
	ck_assert(!tr.complete);
	ck_assert_uint_eq(tr.nev, 4);
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.peak_bytes, 300);
	ck_assert_uint_eq(sum.all.live_bytes, 0);
	trace_free(&tr);
	unlink(trace_path);
}
END_TEST

/* Version 4: interpreted frames, named by the trace itself. */
START_TEST(interpreted_frames_are_read)
{
	static struct trace tr;
	static const char text[] = "alloy-trace 4 pid=1\n"
				   "T 1 5\n"
				   "S 1 default cpu:0 16\n"
				   "s 1 0 401000\n"
				   "c 3 build.<locals>.f /tmp/a b.py\n"
				   "p 2 1 3 7\n"
				   "a 5 1 1 10 8 2\n"
				   "end 5 1\n";
	char err[256];

	tmp_trace_path();
	write_file(trace_path, text);
	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_uint_eq(tr.nodes[2].code, 3);
	ck_assert_uint_eq(tr.nodes[2].frame, 7);
	ck_assert_uint_eq(tr.nodes[2].parent, 1);
	ck_assert_uint_eq(tr.nodes[1].code, 0);
	ck_assert_str_eq(tr.codes[3].function, "build.<locals>.f");
	ck_assert_str_eq(tr.codes[3].file, "/tmp/a b.py");
	ck_assert_uint_eq(tr.ev[0].stack, 2);
	trace_free(&tr);
	unlink(trace_path);
}
END_TEST

/* Each malformed file and the words its error must contain. */
static const struct {
	const char *text;
	const char *want;
} bad[] = {
	{ "", "empty file" },
	{ "hello\n", ":1: (byte 0) not an alloy trace" },
	{ "alloy-trace 5 pid=1\n", ":1: (byte 0) trace version 5" },
	{ "alloy-trace 3 pid=1\np 1 0 1 5\n", ":2: (byte 20) unknown record" },
	{ "alloy-trace 4 pid=1\np 2 2 1 5\n", ":2: (byte 20) stack node 2" },
	{ "alloy-trace 4 pid=1\np 1 0 1\n",
	  "expected \"p ID PARENT CODE LINE\"" },
	{ "alloy-trace 4 pid=1\nc 1 f\n", "expected \"c ID FUNCTION FILE\"" },
	{ "alloy-trace 3 pid=1 unit=ms\n", ":1: (byte 0) unknown time unit" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 8 x cpu:0\na 2 1 0x20 5 8 x cp",
	  ":3: (byte 43) truncated line" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 8 x cpu:0\nz 2 1 0x10\n",
	  ":3: (byte 43) unknown record" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 five 8 x cpu:0\n",
	  ":2: (byte 20) expected" },
	{ "alloy-trace 1 pid=1\nf 1 1 0x10 5 8 x cpu:0\n",
	  ":2: (byte 20) free of block 0x10, which is not live" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 8 x cpu:0\na 1 1 0x10 5 8 x cpu:0\n",
	  ":3: (byte 43) block 0x10 allocated while live" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 8 x cpu:0\nf 1 1 0x10 6 8 x cpu:0\n",
	  ":3: (byte 43) free of block 0x10 with size 6" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 8 b-d cpu:0\n",
	  ":2: (byte 20) bad allocator name" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 8 x cpu:0\nend 9 2\n",
	  ":3: (byte 43) end record counts 2 events" },
	{ "alloy-trace 1 pid=1\nend 9 0\nu 1 1 0x10\n",
	  ":3: (byte 28) data after the end record (more than one process "
	  "writing this file? a trace path with %p, or alloy run, gives each "
	  "process its own file)" },
	/* Two processes given the same path by ALLOY_CONF alone. */
	{ "alloy-trace 2 pid=7\nalloy-trace 2 pid=8\n",
	  ":2: (byte 20) a second trace header: more than one process wrote "
	  "this file (a trace path with %p, or alloy run, gives each process "
	  "its own file)" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 8 x cpu:0 extra\n",
	  ":2: (byte 20) expected" },
	/* Sizes and sums that would wrap, alignments. */
	{ "alloy-trace 1 pid=1\na 1 1 0x10 9223372036854775808 8 x cpu:0\n",
	  ":2: (byte 20) size 9223372036854775808 is larger than any block" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 4611686018427387904 8 x cpu:0\n"
	  "a 1 1 0x20 4611686018427387904 8 x cpu:0\n"
	  "a 1 1 0x30 4611686018427387904 8 x cpu:0\n"
	  "a 1 1 0x40 4611686018427387904 8 x cpu:0\n",
	  ":5: (byte 143) live bytes pass 2^64" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 48 x cpu:0\n",
	  ":2: (byte 20) alignment 48 is not a power of two" },
	{ "alloy-trace 1 pid=1\na 99999999999999999999 1 0x10 5 8 x cpu:0\n",
	  ":2: (byte 20) expected" },
	/* Version 2. */
	{ "alloy-trace 2 pid=1\nT 1 5\na 1 1 1 10 5\n",
	  ":3: (byte 26) series 1 was not declared" },
	{ "alloy-trace 2 pid=1\nS 1 x cpu:0 8\na 1 1 1 10 5\n",
	  ":3: (byte 34) thread 1 was not declared" },
	{ "alloy-trace 2 pid=1\nS 1 x cpu:0 6\n",
	  ":2: (byte 20) alignment 6 is not a power of two" },
	{ "alloy-trace 2 pid=1\ns 1 0 10\ns 2 3 10\n",
	  ":3: (byte 29) stack node 2 names parent 3" },
	{ "alloy-trace 2 pid=1\nM 1000 2000 0 /lib/x.so\n",
	  ":2: (byte 20) expected \"M START END OFFSET BUILDID PATH\"" },
	{ "alloy-trace 2 pid=1\nT 1 5\nS 1 x cpu:0 8\na 18446744073709551615 1 1 10 5\n"
	  "a 1 1 1 20 5\n",
	  ":5: (byte 72) time passes 2^64 ns" },
	{ "alloy-trace 2 pid=1\nT 1 5\nS 1 x cpu:0 8\nf 1 1 10\n",
	  ":4: (byte 40) free of block 0x10, which is not live" },
	{ "alloy-trace 2 pid=1\nincomplete 5 3\nT 1 5\n",
	  ":3: (byte 35) data after the incomplete record" },
	{ "alloy-trace 2 pid=1\ns 20000000 0 10\n",
	  ":2: (byte 20) s id 20000000 is not between 1 and" },
};

START_TEST(malformed_traces_name_line_and_offset)
{
	char path[64], err[512];
	struct trace tr;

	snprintf(path, sizeof(path), "/tmp/alloy-test-bad.%d", (int)getpid());
	write_file(path, bad[_i].text);
	ck_assert_int_eq(trace_read(path, &tr, err, sizeof(err)), -1);
	ck_assert_msg(strstr(err, bad[_i].want),
		      "case %d: got \"%s\", want \"%s\"", _i, err,
		      bad[_i].want);
	ck_assert_ptr_eq(tr.ev, NULL);
	unlink(path);
}
END_TEST

START_TEST(good_trace_with_bad_frees_reads)
{
	static struct trace_summary sum;
	char path[64], err[512];
	struct trace tr;

	snprintf(path, sizeof(path), "/tmp/alloy-test-good.%d", (int)getpid());
	write_file(path, "alloy-trace 1 pid=7 clock=monotonic unit=ns\n"
			 "# comment\n"
			 "a 10 1 0x10 100 64 default cpu:0\n"
			 "a 20 2 0x20 50 64 other cpu:0\n"
			 "u 25 2 0x99\n"
			 "d 26 2 0x10\n"
			 "f 30 1 0x10 100 64 default cpu:0\n"
			 "end 40 5\n");
	ck_assert_msg(trace_read(path, &tr, err, sizeof(err)) == 0, "%s", err);
	ck_assert(tr.complete);
	ck_assert_uint_eq(tr.nev, 5);
	ck_assert_uint_eq(tr.nseries, 2);
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.peak_bytes, 150);
	ck_assert_uint_eq(sum.all.peak_t_ns, 20);
	ck_assert_uint_eq(sum.s[0].peak_bytes, 100);
	ck_assert_uint_eq(sum.s[1].live_bytes, 50);
	ck_assert_uint_eq(sum.unknown_frees, 1);
	ck_assert_uint_eq(sum.double_frees, 1);
	ck_assert_uint_eq(sum.duration_ns, 40);
	trace_free(&tr);
	unlink(path);
}
END_TEST

/*
 * A version 2 trace by hand: frees carry what their allocation had, the
 * time is the sum of the deltas, and an event naming a stack or owner
 * that was never declared (a cut table) reads, counted, as unknown.
 */
START_TEST(version_2_by_hand_reads)
{
	static struct trace_summary sum;
	char path[64], err[512];
	struct trace tr;

	snprintf(path, sizeof(path), "/tmp/alloy-test-v2.%d", (int)getpid());
	write_file(path,
		   "alloy-trace 2 pid=7 clock=monotonic unit=ns future=1\n"
		   "M 1000 2000 100 abcd /lib/x.so\n"
		   "T 1 700\n"
		   "S 1 default cpu:0 64\n"
		   "s 1 0 1010\n"
		   "s 2 1 1020\n"
		   "o 1 net/fc 1\n"
		   "a 10 1 1 7f0010 100 2 1\n"
		   "a 5 1 1 7f0020 50 9 4\n"
		   "f 5 1 7f0010\n"
		   "u 1 1 99\n"
		   "end 30 4\n");
	ck_assert_msg(trace_read(path, &tr, err, sizeof(err)) == 0, "%s", err);
	ck_assert(tr.complete);
	ck_assert_int_eq(tr.version, 2);
	ck_assert_int_eq(tr.pid, 7);
	ck_assert_uint_eq(tr.nev, 4);
	ck_assert_uint_eq(tr.ev[0].t_ns, 10);
	ck_assert_uint_eq(tr.ev[1].t_ns, 15);
	ck_assert_uint_eq(tr.ev[2].t_ns, 20);
	ck_assert_uint_eq(tr.ev[0].align, 64);
	ck_assert_uint_eq(tr.ev[0].stack, 2);
	ck_assert_str_eq(tr.owners[tr.ev[0].owner], "net/fc 1");
	/* The free took its size, stack and owner from the allocation. */
	ck_assert_int_eq(tr.ev[2].op, TRACE_FREE);
	ck_assert_uint_eq(tr.ev[2].size, 100);
	ck_assert_uint_eq(tr.ev[2].stack, 2);
	ck_assert_uint_eq(tr.threads[tr.ev[2].thread], 700);
	/* Stack 9 and owner 4 were never declared. */
	ck_assert_uint_eq(tr.ev[1].stack, TRACE_STACK_MISSING);
	ck_assert_uint_eq(tr.ev[1].owner, 0);
	ck_assert_uint_eq(tr.missing_stacks, 1);
	ck_assert_uint_eq(tr.missing_owners, 1);
	/* Node 2 is frame 0x1020 under 0x1010, both in /lib/x.so. */
	ck_assert_uint_eq(tr.nodes[2].frame, 0x1020);
	ck_assert_uint_eq(tr.nodes[2].parent, 1);
	ck_assert_uint_eq(tr.nodes[2].module, 1);
	ck_assert_str_eq(tr.modules[0].build_id, "abcd");
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.peak_bytes, 150);
	ck_assert_uint_eq(sum.unknown_frees, 1);
	ck_assert_uint_eq(sum.duration_ns, 30);
	trace_free(&tr);
	unlink(path);
}
END_TEST

/* Sites of this file, so that the test knows their bytes. */
static __attribute__((noinline)) void site_a(struct alloy_data_ptr *dp)
{
	if (alloy_alloc_default(ALLOY_DEVICE_CPU, 3000, 0, dp))
		abort();
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void site_b(struct alloy_data_ptr *dp)
{
	if (alloy_alloc_default(ALLOY_DEVICE_CPU, 500, 0, dp))
		abort();
	__asm__ volatile("" ::: "memory");
}

/* Bytes of the sites whose innermost function is func. */
static uint64_t site_bytes(struct symbols *sym, const struct at_device *d,
			   const char *func)
{
	char name[256];
	uint64_t n = 0;

	for (size_t i = 0; i < d->nsites; i++)
		if (trace_stack_known(d->sites[i].stack) &&
		    !strcmp(symbols_func(sym, d->sites[i].stack, name,
					 sizeof(name)),
			    func))
			n += d->sites[i].bytes;
	return n;
}

static uint64_t owner_bytes(const struct trace *tr, const struct at_device *d,
			    const char *owner)
{
	for (size_t i = 0; i < d->nowners; i++) {
		uint32_t o = d->owners[i].owner;

		if (owner ? (o && !strcmp(tr->owners[o], owner)) : !o)
			return d->owners[i].bytes;
	}
	return 0;
}

/*
 * The program of known sites and owners in this process: the peak's
 * bytes per site (named from this executable's symbol table) and per
 * owner, and the moment before the last allocation.
 */
#ifdef HAVE_LIBUNWIND
static const bool have_stacks = true;
#else
static const bool have_stacks = false;
#endif

START_TEST(peak_by_site_and_owner_is_exact)
{
	struct alloy_data_ptr a, b1, b2, c;
	struct trace_at at;
	struct symbols *sym;
	struct trace tr;
	char err[256], conf[128];

	snprintf(trace_path, sizeof(trace_path), "/tmp/alloy-test-peak.%d",
		 (int)getpid());
	/* Without libunwind the owners are checked, the sites are not. */
	snprintf(conf, sizeof(conf), "trace:%s%s", trace_path,
		 have_stacks ? ",backtrace:1" : "");
	test_set_conf(conf);
	ck_assert_ok(alloy_owner_push("x"));
	site_a(&a);
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(alloy_owner_push("y"));
	site_b(&b1);
	site_b(&b2);
	ck_assert_ok(alloy_owner_pop());
	/* The peak: 4000 bytes.  Then down, and up to less. */
	alloy_data_ptr_free(&b1);
	alloy_data_ptr_free(&a);
	site_a(&c);
	alloy_data_ptr_free(&b2);
	alloy_data_ptr_free(&c);
	ck_assert_ok(alloy_reporter_flush());
	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert_msg(trace_at(&tr, true, 0, &at, err, sizeof(err)) == 0, "%s",
		      err);
	sym = symbols_new(&tr, true);
	ck_assert_ptr_nonnull(sym);
	ck_assert_uint_eq(at.ndev, 1);
	ck_assert_str_eq(at.dev[0].device, "cpu:0");
	ck_assert_uint_eq(at.dev[0].bytes, 4000);
	ck_assert_uint_eq(at.dev[0].blocks, 3);
	ck_assert_uint_eq(at.dev[0].events, 3);
	/* alloy's own frames are not part of a site: it starts here. */
	if (have_stacks) {
		ck_assert_uint_eq(site_bytes(sym, &at.dev[0], "site_a"), 3000);
		ck_assert_uint_eq(site_bytes(sym, &at.dev[0], "site_b"), 1000);
	}
	ck_assert_uint_eq(owner_bytes(&tr, &at.dev[0], "x"), 3000);
	ck_assert_uint_eq(owner_bytes(&tr, &at.dev[0], "y"), 1000);
	trace_at_free(&at);
	/* Just before the last allocation (c), only b2 was live. */
	ck_assert_int_eq(tr.ev[5].op, TRACE_ALLOC);
	ck_assert_msg(trace_at(&tr, false, tr.ev[5].t_ns - 1, &at, err,
			       sizeof(err)) == 0,
		      "%s", err);
	if (tr.ev[4].t_ns < tr.ev[5].t_ns) {
		ck_assert_uint_eq(at.dev[0].bytes, 500);
		ck_assert_uint_eq(at.dev[0].blocks, 1);
		if (have_stacks)
			ck_assert_uint_eq(site_bytes(sym, &at.dev[0], "site_b"),
					  500);
		ck_assert_uint_eq(owner_bytes(&tr, &at.dev[0], "y"), 500);
	}
	trace_at_free(&at);
	/* Past the end is an error that says how long the trace is. */
	ck_assert_int_eq(trace_at(&tr, false, tr.end_ns + 1000000000, &at, err,
				  sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "past the end of the trace"));
	symbols_free(sym);
	trace_free(&tr);
	unlink(trace_path);
}
END_TEST

/*
 * A write that fails (here: past RLIMIT_FSIZE) is said once on stderr;
 * the file is cut back to whole lines and marked incomplete at exit.
 */
START_TEST(write_error_marks_the_trace_incomplete)
{
	char path[64], errpath[64], conf[128], line[512];
	int status, said = 0;
	struct trace tr;
	char err[256];
	pid_t pid;
	FILE *f;

	snprintf(path, sizeof(path), "/tmp/alloy-test-full.%d", (int)getpid());
	snprintf(errpath, sizeof(errpath), "/tmp/alloy-test-full-err.%d",
		 (int)getpid());
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { 100000, 100000 };
		struct alloy_data_ptr dp;

		signal(SIGXFSZ, SIG_IGN);
		if (!freopen(errpath, "w", stderr) ||
		    setrlimit(RLIMIT_FSIZE, &rl))
			_exit(3);
		snprintf(conf, sizeof(conf), "trace:%s", path);
		setenv("ALLOY_CONF", conf, 1);
		/* Some 20 bytes an event: well past 100000 bytes. */
		for (int i = 0; i < 20000; i++) {
			if (alloy_alloc_default(ALLOY_DEVICE_CPU, 1000, 0, &dp))
				_exit(4);
			alloy_data_ptr_free(&dp);
		}
		exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	f = fopen(errpath, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		said += strstr(line,
			       "write failed (File too large); the trace is incomplete from here on") !=
			NULL;
	fclose(f);
	ck_assert_int_eq(said, 1);
	ck_assert_msg(trace_read(path, &tr, err, sizeof(err)) == 0, "%s", err);
	ck_assert(!tr.complete);
	ck_assert(tr.incomplete);
	ck_assert_uint_gt(tr.lost, 0);
	ck_assert_uint_gt(tr.nev, 1000);
	trace_free(&tr);
	unlink(path);
	unlink(errpath);
}
END_TEST

static atomic_bool churning;

static void *churn_thread(void *arg)
{
	struct alloy_data_ptr dp[16] = { 0 };

	(void)arg;
	for (unsigned i = 0; atomic_load(&churning); i++) {
		alloy_data_ptr_free(&dp[i % 16]);
		if (alloy_alloc_default(ALLOY_DEVICE_CPU, 64 + i % 1000, 0,
					&dp[i % 16]))
			abort();
	}
	for (int i = 0; i < 16; i++)
		alloy_data_ptr_free(&dp[i]);
	return NULL;
}

/*
 * A trace started while the program runs opens with the blocks live
 * then, so every free in it has its allocation, even with threads
 * allocating and freeing while traces start and stop.
 */
START_TEST(trace_started_at_run_time_is_whole)
{
	static struct trace_summary sum;
	struct alloy_data_ptr before, after;
	pthread_t th[3];
	struct trace tr;
	char path[64], err[256];

	snprintf(path, sizeof(path), "/tmp/alloy-test-rt.%d", (int)getpid());
	ck_assert_int_eq(alloy_reporter_trace_stop(), -ENOENT);
	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CPU, 1234, 0, &before));
	if (have_stacks)
		ck_assert_ok(alloy_reporter_set_backtrace(true));
	else /* refused as documented; the trace goes on without stacks */
		ck_assert_int_eq(alloy_reporter_set_backtrace(true), -ENOTSUP);
	ck_assert_ok(alloy_reporter_trace_start(path));
	ck_assert_int_eq(alloy_reporter_trace_start(path), -EBUSY);
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CPU, 766, 0, &after));
	alloy_data_ptr_free(&before);
	ck_assert_ok(alloy_reporter_trace_stop());
	alloy_data_ptr_free(&after);
	ck_assert_msg(trace_read(path, &tr, err, sizeof(err)) == 0, "%s", err);
	ck_assert(tr.complete);
	ck_assert_uint_eq(tr.nev, 3);
	ck_assert_uint_eq(tr.ev[0].t_ns, 0); /* live when it started */
	ck_assert_uint_eq(tr.ev[0].size, 1234);
	ck_assert(trace_stack_known(tr.ev[1].stack) == have_stacks);
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.peak_bytes, 2000);
	ck_assert_uint_eq(sum.all.live_bytes, 766);
	trace_free(&tr);
	ck_assert_ok(alloy_reporter_set_backtrace(false));

	atomic_store(&churning, true);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, churn_thread, NULL), 0);
	for (int round = 0; round < 20; round++) {
		ck_assert_ok(alloy_reporter_trace_start(path));
		usleep(2000);
		ck_assert_ok(alloy_reporter_trace_stop());
		ck_assert_msg(trace_read(path, &tr, err, sizeof(err)) == 0,
			      "round %d: %s", round, err);
		trace_free(&tr);
	}
	atomic_store(&churning, false);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	unlink(path);
}
END_TEST

/*
 * malloc(0) is reported to the reporter by the plain-pointer API; the
 * trace leaves it out (SIZE starts at 1), so the trace reads back.
 */
START_TEST(zero_byte_blocks_are_not_traced)
{
	static struct trace_summary sum;
	struct trace tr;
	char err[256];
	void *zero, *five;

	trace_to_tmp();
	ck_assert_ptr_nonnull(alloy_find_allocator("default")); /* starts */
	ck_assert(alloy_reporter_enabled());
	zero = alloy_malloc(0);
	five = alloy_malloc(5);
	ck_assert_ptr_nonnull(zero);
	ck_assert_ptr_nonnull(five);
	alloy_free(zero);
	alloy_free(five);
	ck_assert_ok(alloy_reporter_flush());
	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.allocs, 1);
	ck_assert_uint_eq(sum.all.frees, 1);
	ck_assert_uint_eq(sum.all.peak_bytes, 5);
	trace_free(&tr);
	unlink(trace_path);
}
END_TEST

/*
 * Every (allocator, device, alignment) series a trace can meet has its
 * id: 56 allocators with 20 alignments each (1120 series) are all
 * traced, so that no block's free is written without its allocation.
 */
START_TEST(every_series_is_traced)
{
	enum { NALLOC = 56, NALIGN = 20 };
	static struct test_alloc ta[NALLOC];
	static struct trace_summary sum;
	struct trace tr;
	char err[256];

	tmp_trace_path();
	ck_assert_ok(alloy_reporter_trace_start(trace_path));
	for (int i = 0; i < NALLOC; i++) {
		char name[16];
		struct alloy_allocator *a;

		snprintf(name, sizeof(name), "tr_s%d", i);
		a = test_alloc_register(&ta[i], name);
		for (int k = 0; k < NALIGN; k++) {
			struct alloy_data_ptr dp;

			ck_assert_ok(
				alloy_alloc(a, 64, (size_t)8 << k, 0, &dp));
			alloy_data_ptr_free(&dp);
		}
	}
	ck_assert_ok(alloy_reporter_trace_stop());
	ck_assert_msg(trace_read(trace_path, &tr, err, sizeof(err)) == 0, "%s",
		      err);
	ck_assert(tr.complete);
	trace_summarize(&tr, &sum);
	ck_assert_uint_eq(sum.all.allocs, NALLOC * NALIGN);
	ck_assert_uint_eq(sum.all.frees, NALLOC * NALIGN);
	trace_free(&tr);
	unlink(trace_path);
}
END_TEST

Suite *suite_trace(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, round_trip_gives_the_same_peak);
	tcase_add_test(tc, interpreted_frames_are_read);
	tcase_add_test(tc, trace_started_and_stopped_by_the_api);
	tcase_add_test(tc, threads_write_a_consistent_trace);
	tcase_add_test(tc, crash_leaves_a_readable_trace);
	tcase_add_test(tc, fork_child_does_not_write_the_parents_trace);
	tcase_add_loop_test(tc, malformed_traces_name_line_and_offset, 0,
			    (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, good_trace_with_bad_frees_reads);
	tcase_add_test(tc, version_2_by_hand_reads);
	if (!have_stacks)
		fprintf(stderr,
			"trace: skipped the sites of peak_by_site_and_owner_is_exact and the stack of trace_started_at_run_time_is_whole: built without libunwind\n");
	tcase_add_test(tc, peak_by_site_and_owner_is_exact);
	tcase_add_test(tc, write_error_marks_the_trace_incomplete);
	tcase_add_test(tc, trace_started_at_run_time_is_whole);
	tcase_add_test(tc, zero_byte_blocks_are_not_traced);
	tcase_add_test(tc, every_series_is_traced);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
