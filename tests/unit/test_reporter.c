// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_reporter.c - the reporter: exact accounting, peaks and their
 * reset, bad frees, on/off, thread stress, the snapshot header, and the
 * text and JSON reports (the JSON parsed back by a small reader below).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include <alloy/plain.h>
#include <alloy/owner.h>

#include "testutil.h"
#include "reporter/internal.h"

static struct alloy_reporter_snapshot snap;

static void take(void)
{
	memset(&snap, 0, sizeof(snap));
	snap.size = sizeof(snap);
	snap.version = ALLOY_REPORTER_SNAPSHOT_VERSION;
	ck_assert_ok(alloy_reporter_snapshot(&snap));
}

/* The counts of allocator name on the CPU (all zero if never seen). */
static struct alloy_reporter_counts counts(const char *name)
{
	struct alloy_reporter_counts none = { 0 };

	take();
	for (uint32_t i = 0; i < snap.nentries; i++)
		if (!strcmp(snap.entries[i].allocator, name))
			return snap.entries[i].c;
	return none;
}

START_TEST(accounting_is_exact)
{
	static const size_t sizes[] = { 1, 64, 100, 4096, 12345, 1 << 20, 3 };
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "rep_exact");
	struct alloy_data_ptr dp[7];
	struct alloy_reporter_counts c;
	uint64_t start_all, live = 0, peak = 0, last_peak = 0, nlive = 0;

	ck_assert_ok(alloy_reporter_enable());
	take();
	start_all = snap.total.current_bytes;
	for (int i = 0; i < 7; i++) {
		ck_assert_ok(alloy_alloc(a, sizes[i], 0, 0, &dp[i]));
		live += sizes[i];
		nlive++;
		peak = live > peak ? live : peak;
		c = counts("rep_exact");
		/* Allocating N bytes raises current by exactly N. */
		ck_assert_uint_eq(c.current_bytes, live);
		ck_assert_uint_eq(c.peak_bytes, peak);
		ck_assert_uint_eq(c.allocs, (uint64_t)i + 1);
		ck_assert_uint_eq(c.live_blocks, nlive);
		ck_assert_uint_eq(snap.total.current_bytes, start_all + live);
		ck_assert_uint_ge(c.peak_bytes, last_peak);
		last_peak = c.peak_bytes;
		/*
		 * Free every other one right away: peak stays, current drops.
		 */
		if (i & 1) {
			alloy_data_ptr_free(&dp[i]);
			live -= sizes[i];
			nlive--;
			c = counts("rep_exact");
			ck_assert_uint_eq(c.current_bytes, live);
			ck_assert_uint_eq(c.peak_bytes, peak);
		}
	}
	for (int i = 0; i < 7; i += 2)
		alloy_data_ptr_free(&dp[i]);
	c = counts("rep_exact");
	/* Freeing everything returns exactly to the start. */
	ck_assert_uint_eq(c.current_bytes, 0);
	ck_assert_uint_eq(snap.total.current_bytes, start_all);
	ck_assert_uint_eq(c.peak_bytes, peak);
	ck_assert_uint_eq(c.allocs, 7);
	ck_assert_uint_eq(c.frees, 7);
	ck_assert_uint_eq(c.live_blocks, 0);
	ck_assert_uint_eq(c.total_bytes,
			  1 + 64 + 100 + 4096 + 12345 + (1 << 20) + 3);
	ck_assert_int_eq(ta.bad_frees, 0);
}
END_TEST

START_TEST(reset_peaks_sets_peak_to_current)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "rep_peak");
	struct alloy_data_ptr big, small;
	struct alloy_reporter_counts c;

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_alloc(a, 1000, 0, 0, &small));
	ck_assert_ok(alloy_alloc(a, 50000, 0, 0, &big));
	alloy_data_ptr_free(&big);
	ck_assert_uint_eq(counts("rep_peak").peak_bytes, 51000);
	alloy_reporter_reset_peaks();
	c = counts("rep_peak");
	ck_assert_uint_eq(c.peak_bytes, 1000);
	ck_assert_uint_eq(c.current_bytes, 1000);
	ck_assert_uint_eq(snap.total.peak_bytes, snap.total.current_bytes);
	/* Monotone again from there. */
	ck_assert_ok(alloy_alloc(a, 10, 0, 0, &big));
	ck_assert_uint_eq(counts("rep_peak").peak_bytes, 1010);
	alloy_data_ptr_free(&big);
	alloy_data_ptr_free(&small);
	ck_assert_uint_eq(counts("rep_peak").peak_bytes, 1010);
}
END_TEST

START_TEST(unknown_and_double_frees_are_counted)
{
	char buf[64], other[8];

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_reporter_note_alloc(buf, sizeof(buf), ALLOY_CPU));
	ck_assert_uint_eq(counts("external").current_bytes, 64);
	ck_assert_ok(alloy_reporter_note_free(buf));
	ck_assert_int_eq(alloy_reporter_note_free(buf), -EALREADY);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "double free"));
	ck_assert_int_eq(alloy_reporter_note_free(other), -ENOENT);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "never saw"));
	ck_assert_int_eq(alloy_reporter_note_free(other), -ENOENT);
	ck_assert_ok(alloy_reporter_note_free(NULL));
	take();
	ck_assert_uint_eq(snap.double_frees, 1);
	ck_assert_uint_eq(snap.unknown_frees, 2);
	ck_assert_uint_eq(counts("external").current_bytes, 0);
	ck_assert_uint_eq(counts("external").frees, 1);
	/* A pointer made again after its free is live, not a double free. */
	ck_assert_ok(alloy_reporter_note_alloc(buf, 8, ALLOY_CPU));
	ck_assert_ok(alloy_reporter_note_free(buf));
	take();
	ck_assert_uint_eq(snap.double_frees, 1);
	/* Off: noted blocks are still accounted, strangers are not counted. */
	ck_assert_ok(alloy_reporter_note_alloc(buf, 16, ALLOY_CPU));
	ck_assert_ok(alloy_reporter_disable());
	ck_assert_ok(alloy_reporter_note_free(buf));
	ck_assert_ok(alloy_reporter_note_free(other));
	ck_assert_ok(alloy_reporter_note_alloc(other, 8, ALLOY_CPU));
	take();
	ck_assert_uint_eq(snap.unknown_frees, 2);
	ck_assert_uint_eq(counts("external").current_bytes, 0);
	ck_assert_uint_eq(counts("external").allocs, 3);
}
END_TEST

/*
 * note_alloc names its device by hand: an unknown type (257 kept only
 * its low 8 bits and was counted on cuda:0) or a negative index is
 * refused, not counted on some other device.
 */
START_TEST(note_alloc_refuses_bad_devices)
{
	static const struct {
		struct alloy_device d;
		const char *msg;
	} bad[] = {
		{ { 257, 0 }, "device type 257" },
		{ { -1, 0 }, "device type -1" },
		{ { ALLOY_DEVICE_TYPE_COUNT, 0 }, "not a known device type" },
		{ { ALLOY_DEVICE_CPU, -1 }, "index -1 is negative" },
		{ { ALLOY_DEVICE_CUDA, -2 }, "index -2 is negative" },
		{ { ALLOY_DEVICE_CPU, 1 }, "the CPU is device 0" },
	};
	char buf[16];
	int external = 0;

	ck_assert_ok(alloy_reporter_enable());
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(alloy_reporter_note_alloc(buf, 8, bad[i].d),
				 -EINVAL);
		ck_assert_msg(strstr(alloy_last_error(), bad[i].msg),
			      "case %zu: %s", i, alloy_last_error());
	}
	ck_assert_ok(alloy_reporter_note_alloc(
		buf, 8, (struct alloy_device){ ALLOY_DEVICE_CUDA, 1 }));
	take();
	for (uint32_t i = 0; i < snap.nentries; i++) {
		if (strcmp(snap.entries[i].allocator, "external"))
			continue;
		external++;
		ck_assert_int_eq(snap.entries[i].device.type,
				 ALLOY_DEVICE_CUDA);
		ck_assert_int_eq(snap.entries[i].device.index, 1);
		ck_assert_uint_eq(snap.entries[i].c.current_bytes, 8);
	}
	ck_assert_int_eq(external, 1);
	ck_assert_ok(alloy_reporter_note_free(buf));
}
END_TEST

START_TEST(blocks_made_while_off_are_not_counted)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "rep_off");
	struct alloy_data_ptr before, during, after;
	struct alloy_reporter_counts c;

	ck_assert(!alloy_reporter_enabled());
	ck_assert_ok(alloy_alloc(a, 111, 0, 0, &before));
	ck_assert_ok(alloy_reporter_enable());
	ck_assert(alloy_reporter_enabled());
	ck_assert_ok(alloy_alloc(a, 222, 0, 0, &during));
	alloy_data_ptr_free(&before); /* never seen: not counted */
	c = counts("rep_off");
	ck_assert_uint_eq(c.current_bytes, 222);
	ck_assert_uint_eq(c.frees, 0);
	ck_assert_ok(alloy_reporter_disable());
	ck_assert_ok(alloy_alloc(a, 333, 0, 0, &after));
	/* Recorded while on, freed while off: still accounted. */
	alloy_data_ptr_free(&during);
	c = counts("rep_off");
	ck_assert_uint_eq(c.current_bytes, 0);
	ck_assert_uint_eq(c.frees, 1);
	ck_assert_uint_eq(c.allocs, 1);
	alloy_data_ptr_free(&after);
	take();
	ck_assert_uint_eq(snap.unknown_frees, 0);
	ck_assert_uint_eq(snap.double_frees, 0);
	ck_assert_int_eq(snap.enabled, 0);
	ck_assert_int_eq(ta.bad_frees, 0);
}
END_TEST

START_TEST(drained_reporter_unhooks_itself)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "rep_drain");
	struct alloy_data_ptr kept, dp;

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_alloc(a, 64, 0, 0, &kept));
	ck_assert_ok(alloy_reporter_disable());
	alloy_data_ptr_free(&kept); /* the last recorded block */
	for (int i = 0; i < 1000; i++) {
		ck_assert_ok(alloy_alloc(a, 32, 0, 0, &dp));
		alloy_data_ptr_free(&dp);
	}
	take();
	/*
	 * Blocks made while draining are freed unseen, and not counted as
	 * untracked (that is for frees while on).
	 */
	ck_assert_uint_eq(snap.untracked_frees, 0);
	ck_assert_uint_eq(counts("rep_drain").current_bytes, 0);
	ck_assert_uint_eq(counts("rep_drain").allocs, 1);
	ck_assert_uint_eq(snap.unknown_frees, 0);
}
END_TEST

/*
 * malloc(0) makes a block the plain-pointer API reports, but a zero-byte
 * block is no allocation to the reporter: not counted, and its free is
 * not a free of a block made while off either.
 */
START_TEST(zero_byte_blocks_are_not_recorded)
{
	struct alloy_reporter_counts before, c;
	char buf[8];
	void *p;

	ck_assert_ok(alloy_reporter_enable());
	before = counts("default");
	p = alloy_malloc(0);
	ck_assert_ptr_nonnull(p);
	c = counts("default");
	ck_assert_uint_eq(c.allocs, before.allocs);
	ck_assert_uint_eq(c.live_blocks, before.live_blocks);
	alloy_free(p);
	c = counts("default");
	ck_assert_uint_eq(c.frees, before.frees);
	ck_assert_uint_eq(snap.untracked_frees, 0);
	ck_assert_uint_eq(snap.unknown_frees, 0);
	/* Grown from nothing, it is a block like any other from there. */
	p = alloy_realloc(alloy_malloc(0), 40);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(counts("default").current_bytes,
			  before.current_bytes + 40);
	alloy_free(p);
	ck_assert_uint_eq(counts("default").current_bytes,
			  before.current_bytes);
	ck_assert_uint_eq(snap.untracked_frees, 0);
	/* By hand, a zero size is refused: note_free would not know it. */
	ck_assert_int_eq(alloy_reporter_note_alloc(buf, 0, ALLOY_CPU), -EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "size is 0"));
	ck_assert_uint_eq(counts("external").allocs, 0);
}
END_TEST

/*
 * untracked_frees counts blocks made while off and freed while on; a
 * block made and freed while off (the reporter draining) is not one.
 * (Blocks made before the first enable never reach the hooks at all.)
 */
START_TEST(untracked_frees_count_only_while_on)
{
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "rep_untr");
	struct alloy_data_ptr kept, dp, off;

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_alloc(a, 20, 0, 0, &kept)); /* keeps it draining */
	ck_assert_ok(alloy_reporter_disable());
	for (int i = 0; i < 1000; i++) {
		ck_assert_ok(alloy_alloc(a, 100, 0, 0, &dp));
		alloy_data_ptr_free(&dp);
	}
	take();
	ck_assert_uint_eq(snap.untracked_frees, 0);
	/* Made while off (draining), freed while on: that one counts. */
	ck_assert_ok(alloy_alloc(a, 30, 0, 0, &off));
	ck_assert_ok(alloy_reporter_enable());
	alloy_data_ptr_free(&off);
	take();
	ck_assert_uint_eq(snap.untracked_frees, 1);
	alloy_data_ptr_free(&kept);
	ck_assert_uint_eq(counts("rep_untr").current_bytes, 0);
	ck_assert_uint_eq(counts("rep_untr").allocs, 1);
	ck_assert_uint_eq(snap.untracked_frees, 1);
}
END_TEST

/*
 * Reading current bytes while threads publish.  The sums below play two
 * threads: one with 4096 bytes unpublished that publishes them during
 * the read, one that freed 4096 bytes not yet published.  Really live:
 * 0.  pub read before the publish plus the shares after it is -4096,
 * which a snapshot showed as about 2^64 (and as the peak).
 */
static _Atomic int64_t fake_pub;
static int fake_calls;

static int64_t publish_once(int slot)
{
	(void)slot;
	if (fake_calls++ == 0) {
		atomic_fetch_add(&fake_pub, 4096); /* thread 1 publishes */
		return 0 - 4096;		   /* its 0, thread 2's -4096 */
	}
	return -4096;
}

static int64_t publish_always(int slot)
{
	(void)slot;
	fake_calls++;
	atomic_fetch_add(&fake_pub, 4096);
	return -atomic_load(&fake_pub) - 4096;
}

START_TEST(current_read_under_a_publish_is_never_negative)
{
	bool settled;

	/* A publish during the sum: read again, exact. */
	atomic_store(&fake_pub, 0);
	fake_calls = 0;
	ck_assert_int_eq(
		alloy__rep_current_read(&fake_pub, publish_once, 0, &settled),
		0);
	ck_assert(settled);
	ck_assert_int_eq(fake_calls, 2);
	/* Never settles: an estimate, and never below 0. */
	atomic_store(&fake_pub, 0);
	fake_calls = 0;
	ck_assert_int_eq(
		alloy__rep_current_read(&fake_pub, publish_always, 0, &settled),
		0);
	ck_assert(!settled);
	ck_assert_int_eq(fake_calls, REP_CURRENT_TRIES);
}
END_TEST

START_TEST(snapshot_header_limits_the_copy)
{
	struct alloy_reporter_snapshot s;
	uint32_t small =
		(uint32_t)offsetof(struct alloy_reporter_snapshot, total);

	ck_assert_ok(alloy_reporter_enable());
	memset(&s, 0xab, sizeof(s));
	s.size = small;
	s.version = ALLOY_REPORTER_SNAPSHOT_VERSION;
	ck_assert_ok(alloy_reporter_snapshot(&s));
	ck_assert_uint_eq(s.size, small);
	ck_assert_uint_eq(s.version, ALLOY_REPORTER_SNAPSHOT_VERSION);
	ck_assert_uint_eq(s.enabled, 1);
	/* Nothing written past what the caller said it has. */
	ck_assert_uint_eq(((unsigned char *)&s)[small], 0xab);
	s.size = 4;
	ck_assert_int_eq(alloy_reporter_snapshot(&s), -EINVAL);
	ck_assert_int_eq(alloy_reporter_snapshot(NULL), -EINVAL);
}
END_TEST

/* ---- thread stress ------------------------------------------------- */

#define NTHREADS 4
#define STEPS	 20000
#define XSLOTS	 64

struct stress {
	struct alloy_allocator *a;
	/* Blocks handed between threads, so frees cross threads. */
	_Atomic(struct alloy_data_ptr *) exchange[XSLOTS];
	atomic_long made, freed;
	atomic_llong bytes;
};

static void *stress_thread(void *arg)
{
	struct stress *st = arg;
	unsigned seed = (unsigned)(uintptr_t)pthread_self();

	for (int i = 0; i < STEPS; i++) {
		struct alloy_data_ptr *dp = malloc(sizeof(*dp)), *old;
		size_t size = 1 + rand_r(&seed) % 8192;

		if (!dp || alloy_alloc(st->a, size, 0, 0, dp))
			abort();
		atomic_fetch_add(&st->made, 1);
		atomic_fetch_add(&st->bytes, (long long)size);
		old = atomic_exchange(&st->exchange[rand_r(&seed) % XSLOTS],
				      dp);
		if (old) {
			alloy_data_ptr_free(old);
			free(old);
			atomic_fetch_add(&st->freed, 1);
		}
	}
	return NULL;
}

START_TEST(thread_stress_accounts_exactly)
{
	static struct stress st;
	struct test_alloc ta;
	pthread_t th[NTHREADS];
	struct alloy_reporter_counts c;
	uint64_t live_bytes = 0;

	st.a = test_alloc_register(&ta, "rep_stress");
	ck_assert_ok(alloy_reporter_enable());
	for (int i = 0; i < NTHREADS; i++)
		ck_assert_int_eq(
			pthread_create(&th[i], NULL, stress_thread, &st), 0);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	c = counts("rep_stress");
	for (int i = 0; i < XSLOTS; i++) {
		struct alloy_data_ptr *dp = atomic_load(&st.exchange[i]);

		if (dp)
			live_bytes += dp->size;
	}
	ck_assert_uint_eq(c.allocs, NTHREADS * STEPS);
	ck_assert_uint_eq(c.frees, (uint64_t)atomic_load(&st.freed));
	ck_assert_uint_eq(c.total_bytes, (uint64_t)atomic_load(&st.bytes));
	ck_assert_uint_eq(c.current_bytes, live_bytes);
	ck_assert_uint_eq(c.live_blocks, NTHREADS * STEPS - (uint64_t)st.freed);
	ck_assert_uint_ge(c.peak_bytes, c.current_bytes);
	ck_assert_uint_le(c.peak_bytes, c.total_bytes);
	for (int i = 0; i < XSLOTS; i++) {
		struct alloy_data_ptr *dp = atomic_load(&st.exchange[i]);

		if (dp) {
			alloy_data_ptr_free(dp);
			free(dp);
		}
	}
	c = counts("rep_stress");
	ck_assert_uint_eq(c.current_bytes, 0);
	ck_assert_uint_eq(c.live_blocks, 0);
	ck_assert_uint_eq(c.frees, NTHREADS * STEPS);
	ck_assert_int_eq(ta.bad_frees, 0);
}
END_TEST

/* ---- printed reports ----------------------------------------------- */

struct text {
	char buf[1 << 16];
	size_t len;
};

static void append(void *arg, const char *s)
{
	struct text *t = arg;
	size_t n = strlen(s);

	ck_assert_uint_lt(t->len + n, sizeof(t->buf));
	memcpy(t->buf + t->len, s, n + 1);
	t->len += n;
}

/*
 * A tiny JSON reader: enough to check the report is well formed and to
 * fetch values by path.  Values are kept as spans of the text.
 */
struct jp {
	const char *p;
	bool ok;
};

static void ws(struct jp *j)
{
	while (isspace((unsigned char)*j->p))
		j->p++;
}

static void jvalue(struct jp *j);

static void jstring(struct jp *j)
{
	if (*j->p != '"') {
		j->ok = false;
		return;
	}
	for (j->p++; *j->p && *j->p != '"'; j->p++)
		if (*j->p == '\\' && j->p[1])
			j->p++;
	if (*j->p != '"')
		j->ok = false;
	else
		j->p++;
}

static void jvalue(struct jp *j)
{
	ws(j);
	if (!j->ok)
		return;
	if (*j->p == '{' || *j->p == '[') {
		char close = *j->p == '{' ? '}' : ']';
		bool obj = close == '}';

		j->p++;
		ws(j);
		if (*j->p == close) {
			j->p++;
			return;
		}
		for (;;) {
			if (obj) {
				ws(j);
				jstring(j);
				ws(j);
				if (*j->p != ':') {
					j->ok = false;
					return;
				}
				j->p++;
			}
			jvalue(j);
			ws(j);
			if (!j->ok)
				return;
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p == close) {
				j->p++;
				return;
			}
			j->ok = false;
			return;
		}
	} else if (*j->p == '"') {
		jstring(j);
	} else if (!strncmp(j->p, "true", 4) || !strncmp(j->p, "null", 4)) {
		j->p += 4;
	} else if (!strncmp(j->p, "false", 5)) {
		j->p += 5;
	} else if (*j->p == '-' || isdigit((unsigned char)*j->p)) {
		strtod(j->p, (char **)&j->p);
	} else {
		j->ok = false;
	}
}

static bool json_valid(const char *s)
{
	struct jp j = { s, true };

	jvalue(&j);
	ws(&j);
	return j.ok && *j.p == '\0';
}

/* The number after "key": in the object that starts at obj. */
static long long json_num(const char *obj, const char *key)
{
	char pat[80];
	const char *at;

	snprintf(pat, sizeof(pat), "\"%s\": ", key);
	at = strstr(obj, pat);
	ck_assert_msg(at, "no %s in %.200s", key, obj);
	return strtoll(at + strlen(pat), NULL, 10);
}

START_TEST(json_report_parses_back)
{
	static struct text t;
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "rep_json");
	struct alloy_data_ptr keep, gone;
	const char *e, *leaks;

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_alloc(a, 4242, 0, 0, &keep));
	ck_assert_ok(alloy_alloc(a, 100000, 0, 0, &gone));
	alloy_data_ptr_free(&gone);
	ck_assert_ok(alloy_reporter_print(append, &t, ALLOY_REPORT_JSON, true));
	ck_assert_msg(json_valid(t.buf), "not JSON: %s", t.buf);
	e = strstr(t.buf, "\"allocator\": \"rep_json\"");
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(json_num(e, "current_bytes"), 4242);
	ck_assert_int_eq(json_num(e, "peak_bytes"), 104242);
	ck_assert_int_eq(json_num(e, "allocs"), 2);
	ck_assert_int_eq(json_num(e, "frees"), 1);
	ck_assert_int_eq(json_num(t.buf, "unknown_frees"), 0);
	leaks = strstr(t.buf, "\"leaks\": [");
	ck_assert_ptr_nonnull(leaks);
	ck_assert_int_eq(json_num(leaks, "size"), 4242);
	ck_assert_int_eq(json_num(leaks, "leaked_blocks"), 1);
	ck_assert_int_eq(json_num(leaks, "leaked_bytes"), 4242);
	/* One allocator on the device: its peak is the device's. */
	e = strstr(t.buf, "\"allocator\": \"(device)\"");
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(json_num(e, "peak_bytes"), 104242);
	/* Two: sums, and no device peak is claimed. */
	{
		struct test_alloc tb;
		struct alloy_allocator *b =
			test_alloc_register(&tb, "rep_json2");
		struct alloy_data_ptr other;

		ck_assert_ok(alloy_alloc(b, 10, 0, 0, &other));
		t.len = 0;
		ck_assert_ok(alloy_reporter_print(append, &t, ALLOY_REPORT_JSON,
						  false));
		ck_assert(json_valid(t.buf));
		e = strstr(t.buf, "\"allocator\": \"(device)\"");
		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(json_num(e, "current_bytes"), 4252);
		ck_assert_int_eq(json_num(e, "allocs"), 3);
		ck_assert_ptr_nonnull(strstr(e, "\"peak_bytes\": null"));
		alloy_data_ptr_free(&other);
	}
	alloy_data_ptr_free(&keep);
	t.len = 0;
	ck_assert_ok(alloy_reporter_print(append, &t, ALLOY_REPORT_JSON, true));
	ck_assert(json_valid(t.buf));
	ck_assert_int_eq(json_num(strstr(t.buf, "\"leaks\""), "leaked_blocks"),
			 0);
	/* The reader itself rejects what is not JSON. */
	ck_assert(!json_valid("{\"a\": 1,}"));
	ck_assert(!json_valid("{\"a\" 1}"));
	ck_assert_int_eq(alloy_reporter_print(append, &t, 7, false), -EINVAL);
}
END_TEST

START_TEST(text_report_names_leaks_and_sites)
{
	static struct text t;
	struct test_alloc ta;
	struct alloy_allocator *a;
	struct alloy_data_ptr keep;

#ifdef HAVE_LIBUNWIND
	test_set_conf("backtrace:1");
#endif
	a = test_alloc_register(&ta, "rep_text");
	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_alloc(a, 777, 0, 0, &keep));
	ck_assert_ok(alloy_reporter_print(append, &t, ALLOY_REPORT_TEXT, true));
	ck_assert_ptr_nonnull(strstr(t.buf, "rep_text"));
	ck_assert_ptr_nonnull(strstr(t.buf, "777 bytes from rep_text (cpu:0)"));
#ifdef HAVE_LIBUNWIND
	/* backtrace:1 gives the allocation site, frame by frame. */
	ck_assert_ptr_nonnull(strstr(t.buf, "      at "));
#endif
	ck_assert_ptr_nonnull(strstr(t.buf, "1 blocks, 777 bytes"));
	alloy_data_ptr_free(&keep);
}
END_TEST

/*
 * The live view's grouping: owners and sites holding the most bytes come
 * first, with their blocks counted; blocks without a label make a group
 * named so; nothing while the reporter is off; a bad grouping is refused.
 */
START_TEST(top_groups_live_blocks_by_owner_and_site)
{
	struct alloy_reporter_group g[3];
	struct test_alloc ta;
	struct alloy_allocator *a;
	struct alloy_data_ptr big[3], small[5], plain;
	int n;

#ifdef HAVE_LIBUNWIND
	test_set_conf("backtrace:1");
#endif
	a = test_alloc_register(&ta, "rep_top");
	ck_assert_int_eq(alloy_reporter_top(ALLOY_REPORTER_BY_OWNER, g, 3), 0);
	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_owner_push("top/big"));
	for (int i = 0; i < 3; i++)
		ck_assert_ok(alloy_alloc(a, 30000, 0, 0, &big[i]));
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(alloy_owner_push("top/small"));
	for (int i = 0; i < 5; i++)
		ck_assert_ok(alloy_alloc(a, 1000, 0, 0, &small[i]));
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(alloy_alloc(a, 2000, 0, 0, &plain));

	n = alloy_reporter_top(ALLOY_REPORTER_BY_OWNER, g, 3);
	ck_assert_int_eq(n, 3);
	ck_assert_str_eq(g[0].label, "top/big");
	ck_assert_uint_eq(g[0].bytes, 90000);
	ck_assert_uint_eq(g[0].blocks, 3);
	ck_assert_str_eq(g[1].label, "top/small");
	ck_assert_uint_eq(g[1].bytes, 5000);
	ck_assert_uint_eq(g[1].blocks, 5);
	ck_assert_str_eq(g[2].label, "(no owner)");
	ck_assert_uint_ge(g[2].bytes, 2000);
	/* Room for one: the largest only. */
	ck_assert_int_eq(alloy_reporter_top(ALLOY_REPORTER_BY_OWNER, g, 1), 1);
	ck_assert_str_eq(g[0].label, "top/big");

	n = alloy_reporter_top(ALLOY_REPORTER_BY_SITE, g, 3);
	ck_assert_int_ge(n, 1);
#ifdef HAVE_LIBUNWIND
	/*
	 * The innermost frame is the call's own place in this function: the
	 * three large blocks share one, the small ones another.
	 */
	ck_assert_ptr_nonnull(
		strstr(g[0].label, "top_groups_live_blocks_by_owner_and_site"));
	ck_assert_uint_eq(g[0].bytes, 90000);
	ck_assert_uint_eq(g[0].blocks, 3);
	ck_assert_uint_eq(g[1].bytes, 5000);
	ck_assert_str_ne(g[0].label, g[1].label);
#else
	ck_assert_str_eq(g[0].label,
			 "(no call stack: backtrace on records them)");
#endif
	ck_assert_int_eq(
		alloy_reporter_top((enum alloy_reporter_group_by)7, g, 3),
		-EINVAL);
	ck_assert_int_eq(alloy_reporter_top(ALLOY_REPORTER_BY_SITE, NULL, 3),
			 -EINVAL);
	for (int i = 0; i < 3; i++)
		alloy_data_ptr_free(&big[i]);
	for (int i = 0; i < 5; i++)
		alloy_data_ptr_free(&small[i]);
	alloy_data_ptr_free(&plain);
}
END_TEST

#ifdef HAVE_LIBUNWIND
/*
 * A frame name past 500 characters (C++ templates) still ends its line:
 * the report wrote each "at" line through a 512-byte buffer, which cut
 * the newline off and glued the next frame on.  The symbol is named by
 * an asm label, so that its name can be built of string pieces.
 */
/* 8 + 4 pieces of 50, kept so that they can be counted at a glance. */
/* clang-format off */
#define X50	  "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
#define LONG_NAME "alloc_from_a_long_name_" X50 X50 X50 X50 X50 X50 X50 X50 \
		  X50 X50 X50 X50
/* clang-format on */

void long_named(struct alloy_allocator *a,
		struct alloy_data_ptr *dp) __asm__(LONG_NAME);

__attribute__((noinline)) void long_named(struct alloy_allocator *a,
					  struct alloy_data_ptr *dp)
{
	ck_assert_ok(alloy_alloc(a, 333, 0, 0, dp));
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

START_TEST(text_report_lines_end_after_long_names)
{
	static struct text t;
	struct test_alloc ta;
	struct alloy_allocator *a;
	struct alloy_data_ptr keep;
	const char *at;

	test_set_conf("backtrace:1");
	a = test_alloc_register(&ta, "rep_long");
	ck_assert_ok(alloy_reporter_enable());
	long_named(a, &keep);
	ck_assert_ok(alloy_reporter_print(append, &t, ALLOY_REPORT_TEXT, true));
	ck_assert_uint_gt(strlen(LONG_NAME), 600);
	at = strstr(t.buf, "at " LONG_NAME "+0x");
	ck_assert_msg(at, "no frame of the long name in %s", t.buf);
	/* Every frame has a line of its own. */
	for (at = t.buf; (at = strstr(at, "      at ")); at++)
		ck_assert_msg(at > t.buf && at[-1] == '\n',
			      "a frame glued to the line before: %.80s",
			      at > t.buf + 80 ? at - 80 : t.buf);
	alloy_data_ptr_free(&keep);
}
END_TEST
#endif /* HAVE_LIBUNWIND */

/*
 * A write callback may allocate through alloy: the leak list is not
 * written while a shard of the table is locked.  The callback's blocks
 * lie next to the leaked one (same region, same shard), so a callback
 * run under that shard's lock would spin on it for ever.
 */
static _Alignas(64) char near[256];

static void append_and_allocate(void *arg, const char *s)
{
	void *p = alloy_malloc(strlen(s) + 1);

	ck_assert_ptr_nonnull(p);
	alloy_free(p);
	ck_assert_ok(alloy_reporter_note_alloc(near + 128, 8, ALLOY_CPU));
	ck_assert_ok(alloy_reporter_note_free(near + 128));
	append(arg, s);
}

START_TEST(report_callback_may_allocate)
{
	static struct text t;

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_reporter_note_alloc(near, 64, ALLOY_CPU));
	ck_assert_ok(alloy_reporter_print(append_and_allocate, &t,
					  ALLOY_REPORT_TEXT, true));
	ck_assert_ptr_nonnull(strstr(t.buf, "64 bytes from external (cpu:0)"));
	ck_assert_ptr_nonnull(strstr(t.buf, "1 blocks, 64 bytes\n"));
	t.len = 0;
	ck_assert_ok(alloy_reporter_print(append_and_allocate, &t,
					  ALLOY_REPORT_JSON, true));
	ck_assert_msg(json_valid(t.buf), "not JSON: %s", t.buf);
	ck_assert_int_eq(json_num(strstr(t.buf, "\"leaks\""), "size"), 64);
	ck_assert_ok(alloy_reporter_note_free(near));
}
END_TEST

/*
 * Owner labels are bytes (only control characters are refused), and JSON
 * is UTF-8: a Latin-1 label's byte comes out as \ufffd, valid UTF-8 as it
 * is, so that the report stays valid JSON.
 */
START_TEST(json_report_replaces_bytes_not_utf8)
{
	static struct text t;
	struct test_alloc ta;
	struct alloy_allocator *a = test_alloc_register(&ta, "rep_utf8");
	struct alloy_data_ptr latin1, utf8;

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_ok(alloy_owner_push("lay\351r"));
	ck_assert_ok(alloy_alloc(a, 51, 0, 0, &latin1));
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(alloy_owner_push("caf\303\251"));
	ck_assert_ok(alloy_alloc(a, 52, 0, 0, &utf8));
	ck_assert_ok(alloy_owner_pop());
	ck_assert_ok(alloy_reporter_print(append, &t, ALLOY_REPORT_JSON, true));
	ck_assert_msg(json_valid(t.buf), "not JSON: %s", t.buf);
	ck_assert_msg(strstr(t.buf, "\"owner\": \"lay\\ufffdr\""),
		      "no replaced label in %s", t.buf);
	ck_assert_ptr_null(strchr(t.buf, '\351'));
	ck_assert_msg(strstr(t.buf, "\"owner\": \"caf\303\251\""),
		      "valid UTF-8 not kept in %s", t.buf);
	alloy_data_ptr_free(&latin1);
	alloy_data_ptr_free(&utf8);
}
END_TEST

START_TEST(event_log_has_one_line_per_event)
{
	char path[64], line[256];
	struct test_alloc ta;
	struct alloy_allocator *a;
	struct alloy_data_ptr dp;
	FILE *f;
	int n = 0;

	snprintf(path, sizeof(path), "/tmp/alloy-test-log.%d", (int)getpid());
	{
		char conf[96];

		snprintf(conf, sizeof(conf), "log:%s", path);
		test_set_conf(conf);
	}
	a = test_alloc_register(&ta, "rep_log");
	ck_assert(alloy_reporter_enabled());
	ck_assert_ok(alloy_alloc(a, 300, 0, 0, &dp));
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_reporter_flush());
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		if (!strstr(line, "rep_log"))
			continue;
		if (n == 0)
			ck_assert_str_eq(
				line,
				"alloy: alloc 300 bytes from rep_log (cpu:0), total 300 bytes\n");
		else
			ck_assert_str_eq(
				line,
				"alloy: free 300 bytes to rep_log (cpu:0), total 0 bytes\n");
		n++;
	}
	fclose(f);
	unlink(path);
	ck_assert_int_eq(n, 2);
}
END_TEST

/*
 * Allocators that come and go under the same name keep one row, so many
 * more registrations than rows never leave blocks untracked.
 */
START_TEST(re_registered_names_share_a_row)
{
	enum { ROUNDS = 3 * ALLOY_REPORTER_MAX_ENTRIES };
	struct test_alloc ta;

	ck_assert_ok(alloy_reporter_enable());
	for (int i = 0; i < ROUNDS; i++) {
		struct alloy_allocator *a = test_alloc_register(&ta, "t_again");
		struct alloy_data_ptr dp;

		ck_assert_ok(alloy_alloc(a, 100, 0, 0, &dp));
		alloy_data_ptr_free(&dp);
		ck_assert_ok(alloy_unregister_allocator("t_again"));
	}
	struct alloy_reporter_counts c = counts("t_again");

	ck_assert_uint_eq(c.allocs, ROUNDS);
	ck_assert_uint_eq(c.frees, ROUNDS);
	ck_assert_uint_eq(c.total_bytes, 100 * ROUNDS);
	ck_assert_uint_eq(c.current_bytes, 0);
	ck_assert_uint_eq(snap.untracked_frees, 0);
}
END_TEST

Suite *suite_reporter(void)
{
	Suite *s = suite_create("reporter");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, accounting_is_exact);
	tcase_add_test(tc, reset_peaks_sets_peak_to_current);
	tcase_add_test(tc, unknown_and_double_frees_are_counted);
	tcase_add_test(tc, note_alloc_refuses_bad_devices);
	tcase_add_test(tc, blocks_made_while_off_are_not_counted);
	tcase_add_test(tc, drained_reporter_unhooks_itself);
	tcase_add_test(tc, zero_byte_blocks_are_not_recorded);
	tcase_add_test(tc, untracked_frees_count_only_while_on);
	tcase_add_test(tc, current_read_under_a_publish_is_never_negative);
	tcase_add_test(tc, snapshot_header_limits_the_copy);
	tcase_add_test(tc, thread_stress_accounts_exactly);
	tcase_add_test(tc, json_report_parses_back);
	tcase_add_test(tc, text_report_names_leaks_and_sites);
	tcase_add_test(tc, top_groups_live_blocks_by_owner_and_site);
#ifdef HAVE_LIBUNWIND
	tcase_add_test(tc, text_report_lines_end_after_long_names);
#else
	/* Its lines are the frames of a call stack: none to check. */
	fprintf(stderr,
		"reporter: skipped text_report_lines_end_after_long_names and the sites of text_report_names_leaks_and_sites: built without libunwind\n");
#endif
	tcase_add_test(tc, report_callback_may_allocate);
	tcase_add_test(tc, json_report_replaces_bytes_not_utf8);
	tcase_add_test(tc, event_log_has_one_line_per_event);
	tcase_add_test(tc, re_registered_names_share_a_row);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}
