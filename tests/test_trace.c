// SPDX-License-Identifier: MIT
/*
 * tests/test_trace.c - the trace: written by the reporter, read back by
 * the alloy command's reader, replayed with the same peak; what a crash
 * leaves behind; and malformed or truncated files, each refused with its
 * line and byte offset.
 */
#include <pthread.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "tools/trace.h"

static char trace_path[64];

/* Point ALLOY_CONF's trace at a fresh file of this test process. */
static void trace_to_tmp(void)
{
	char conf[128];

	snprintf(trace_path, sizeof(trace_path), "/tmp/alloy-test-trace.%d",
		 (int)getpid());
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
	ck_assert_ok(trace_replay(&tr, alloy_find_allocator("default"), &r,
				  NULL, NULL));
	ck_assert_uint_eq(r.peak_live, sum.all.peak_bytes);
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

	snprintf(trace_path, sizeof(trace_path), "/tmp/alloy-test-trace.%d",
		 (int)getpid());
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
	ck_assert_ok(trace_replay(&tr, def, &r, NULL, NULL));
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

/* Each malformed file and the words its error must contain. */
static const struct {
	const char *text;
	const char *want;
} bad[] = {
	{ "", "empty file" },
	{ "hello\n", ":1: (byte 0) not an alloy trace" },
	{ "alloy-trace 2 pid=1\n", ":1: (byte 0) trace version 2" },
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
	  ":3: (byte 28) data after the end record" },
	{ "alloy-trace 1 pid=1\na 1 1 0x10 5 8 x cpu:0 extra\n",
	  ":2: (byte 20) expected" },
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

Suite *suite_trace(void)
{
	Suite *s = suite_create("trace");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, round_trip_gives_the_same_peak);
	tcase_add_test(tc, trace_started_and_stopped_by_the_api);
	tcase_add_test(tc, threads_write_a_consistent_trace);
	tcase_add_test(tc, crash_leaves_a_readable_trace);
	tcase_add_test(tc, fork_child_does_not_write_the_parents_trace);
	tcase_add_loop_test(tc, malformed_traces_name_line_and_offset, 0,
			    (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, good_trace_with_bad_frees_reads);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
