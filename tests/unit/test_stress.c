// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_stress.c - threads against the registry, the wrappers and
 * the reporter at once, with exact accounting at the end.
 *
 * Workers allocate, write, resize and free blocks through "default",
 * "fail" (failing at random), "debug", a test allocator and the CPU
 * default, and hand some of their blocks to other threads to free.  Beside
 * them one thread keeps swapping the CPU default, one keeps starting
 * short-lived threads that allocate and exit with blocks still out (their
 * counters are folded into the retired totals), one registers, uses and
 * unregisters a temporary allocator, and one loads, uses and unloads a
 * plugin (tests/plugins/good.c).  Each run is bounded both in
 * operations and in time, so it ends under TSan and valgrind too.
 *
 * Afterwards every allocation the threads saw succeed must be in the
 * registry's counts, every failure in the fail allocator's, nothing may
 * be live, the test allocator must have seen no foreign free and the
 * debug allocator no misuse.  tests/unit/test_registry.c covers register /
 * swap / unregister races on their own; this goes wider.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

#define WORKERS	       4
#define OPS_PER_WORKER 20000
#define SLOTS	       16
#define MAILBOX	       64
#define TIME_LIMIT_NS  (4 * 1000000000LL)

enum { A_DEFAULT, A_FAIL, A_DEBUG, A_TEST, NALLOC };
static const char *const names[NALLOC] = { "default", "fail", "debug",
					   "stress_t" };

static struct alloy_allocator *allocs[NALLOC];
static struct test_alloc ta;
static atomic_bool stop;
static long long deadline_ns;

/* What the threads saw, summed once they are done. */
static atomic_llong ok[NALLOC]; /* blocks made, per allocator */
/* Blocks resized by the allocator's own realloc: a free and an alloc to
 * the reporter, no new block to the registry. */
static atomic_llong resized[NALLOC];
static atomic_llong enomem; /* allocations refused */
static atomic_llong ops_done;
static atomic_llong tmp_made;	   /* by the temporary allocator */
static atomic_llong plugin_rounds; /* plugin loads and unloads */

/* Blocks handed from one thread to another to free. */
static pthread_mutex_t mail_lock = PTHREAD_MUTEX_INITIALIZER;
static struct alloy_data_ptr mail[MAILBOX];
static int nmail;

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * The side threads pause between rounds: each unregister waits for a
 * grace period (membarrier), and back to back they would slow the workers
 * more than they exercise them.
 */
static void pause_briefly(void)
{
	struct timespec ts = { 0, 50 * 1000 };

	nanosleep(&ts, NULL);
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int index_of(const struct alloy_allocator *a)
{
	for (int i = 0; i < NALLOC; i++)
		if (allocs[i] == a)
			return i;
	return -1;
}

/* Tally one allocation attempt; true when it made a block. */
/* Whether rc is a success; a refusal must be -ENOMEM, and is counted. */
static bool served(int rc)
{
	if (rc) {
		ck_assert_int_eq(rc, -ENOMEM);
		atomic_fetch_add(&enomem, 1);
		return false;
	}
	return true;
}

/* Count a block made into dp (rc: how it went). */
static bool tally(int rc, const struct alloy_data_ptr *dp)
{
	int i;

	if (!served(rc))
		return false;
	i = index_of(alloy_data_ptr_allocator(dp));
	ck_assert_int_ge(i, 0);
	atomic_fetch_add(&ok[i], 1);
	return true;
}

/* Give dp to another thread, or free it if the mailbox is full. */
static void post(struct alloy_data_ptr *dp)
{
	pthread_mutex_lock(&mail_lock);
	if (nmail < MAILBOX) {
		mail[nmail++] = *dp;
		*dp = ALLOY_DATA_PTR_INIT;
	}
	pthread_mutex_unlock(&mail_lock);
	alloy_data_ptr_free(dp);
}

/* Free one block another thread posted, if there is one. */
static void collect(void)
{
	struct alloy_data_ptr dp = ALLOY_DATA_PTR_INIT;

	pthread_mutex_lock(&mail_lock);
	if (nmail > 0)
		dp = mail[--nmail];
	pthread_mutex_unlock(&mail_lock);
	alloy_data_ptr_free(&dp);
}

static void fill(struct alloy_data_ptr *dp, unsigned char c)
{
	if (dp->ptr)
		memset(dp->ptr, c, dp->size);
}

static void check_fill(const struct alloy_data_ptr *dp, unsigned char c,
		       size_t n)
{
	const unsigned char *p = dp->ptr;

	for (size_t i = 0; i < n && i < dp->size; i++)
		ck_assert_msg(p[i] == c,
			      "byte %zu of a %zu-byte block is %#x, not %#x", i,
			      dp->size, p[i], c);
}

static void *worker(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 0x9e3779b97f4a7c15ull | 1;
	struct alloy_data_ptr slot[SLOTS];
	unsigned char tag[SLOTS];
	int i;

	for (i = 0; i < SLOTS; i++)
		slot[i] = ALLOY_DATA_PTR_INIT;
	for (i = 0; i < OPS_PER_WORKER && !atomic_load(&stop); i++) {
		uint64_t r = next_rand(&seed);
		int s = (int)(r % SLOTS);
		size_t size = 1 + (size_t)((r >> 8) % 4096);
		int rc;

		if ((i & 255) == 0 && now_ns() > deadline_ns)
			break;
		if (slot[s].ptr) {
			check_fill(&slot[s], tag[s], 64);
			switch ((r >> 24) % 4) {
			case 0: { /* grow or shrink, keeping the contents */
				size_t kept =
					slot[s].size < 64 ? slot[s].size : 64;
				/* Its own realloc resizes; else a new block. */
				bool moves = !alloy_allocator_ops(
						      alloy_data_ptr_allocator(
							      &slot[s]))
						      ->realloc;

				rc = alloy_data_ptr_realloc(&slot[s], size);
				if (!moves && !rc)
					atomic_fetch_add(
						&resized[index_of(
							alloy_data_ptr_allocator(
								&slot[s]))],
						1);
				if (moves ? tally(rc, &slot[s]) : served(rc)) {
					check_fill(&slot[s], tag[s], kept);
					fill(&slot[s], tag[s]);
				}
				break;
			}
			case 1:
				post(&slot[s]);
				break;
			default:
				alloy_data_ptr_free(&slot[s]);
			}
			continue;
		}
		collect();
		if ((r >> 32) % (NALLOC + 1) == NALLOC)
			rc = alloy_alloc_default(ALLOY_DEVICE_CPU, size, 0,
						 &slot[s]);
		else
			rc = alloy_alloc(allocs[(r >> 32) % (NALLOC + 1)], size,
					 0, 0, &slot[s]);
		if (tally(rc, &slot[s])) {
			tag[s] = (unsigned char)r;
			fill(&slot[s], tag[s]);
		}
	}
	atomic_fetch_add(&ops_done, i);
	for (i = 0; i < SLOTS; i++)
		alloy_data_ptr_free(&slot[i]);
	return NULL;
}

static void *swapper(void *arg)
{
	unsigned n = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU,
					       allocs[n++ % NALLOC]));
		pause_briefly();
	}
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, allocs[A_DEFAULT]));
	return NULL;
}

/* A thread that lives for a few allocations and leaves blocks behind. */
static void *short_lived(void *arg)
{
	for (int i = 0; i < 4; i++) {
		struct alloy_data_ptr dp;

		if (tally(alloy_alloc(allocs[i % NALLOC], 100, 0, 0, &dp), &dp))
			post(&dp);
	}
	return arg;
}

static void *spawner(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		pthread_t t;

		ck_assert_int_eq(pthread_create(&t, NULL, short_lived, NULL),
				 0);
		pthread_join(t, NULL);
		pause_briefly();
	}
	return NULL;
}

/* Register, use and unregister an allocator, over and over. */
static void *registrar(void *arg)
{
	static struct test_alloc tmp;
	struct alloy_allocator_ops ops = test_alloc_ops("stress_tmp");

	(void)arg;
	while (!atomic_load(&stop)) {
		struct alloy_allocator *a;
		struct alloy_data_ptr dp;

		memset(&tmp, 0, sizeof(tmp));
		ck_assert_ok(alloy_register_allocator(&ops, &tmp, "test", &a));
		ck_assert_ok(alloy_alloc(a, 64, 0, 0, &dp));
		alloy_data_ptr_free(&dp);
		ck_assert_ok(alloy_unregister_allocator("stress_tmp"));
		ck_assert_int_eq(atomic_load(&tmp.allocs), 1);
		ck_assert_int_eq(atomic_load(&tmp.frees), 1);
		atomic_fetch_add(&tmp_made, 1);
		pause_briefly();
	}
	return NULL;
}

/* Load a plugin, allocate through it and unload it, over and over. */
#define GOOD_PLUGIN ALLOY_BUILD_DIR "/tests/plugins/.libs/good.so"

static void *loader(void *arg)
{
	(void)arg;
	/* At least one round, however soon the workers finish. */
	do {
		struct alloy_allocator *p;
		struct alloy_data_ptr dp;

		ck_assert_ok(alloy_plugin_load(GOOD_PLUGIN));
		p = alloy_find_allocator("plug_two");
		ck_assert_ptr_nonnull(p);
		ck_assert_ok(alloy_alloc(p, 256, 0, 0, &dp));
		alloy_data_ptr_free(&dp);
		ck_assert_ok(alloy_plugin_unload(GOOD_PLUGIN));
		atomic_fetch_add(&plugin_rounds, 1);
		pause_briefly();
	} while (!atomic_load(&stop));
	return NULL;
}

static long long stat_allocs(struct alloy_allocator *a)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };

	ck_assert_ok(alloy_allocator_stats(a, &st));
	return (long long)st.num_allocs;
}

static void stress(bool reporter)
{
	pthread_t w[WORKERS], sw, sp, rg, ld;
	long long base[NALLOC], made = 0;

	test_set_conf("fail.probability:0.05,fail.seed:11,debug.quiet:0");
	for (int i = 0; i < NALLOC - 1; i++)
		allocs[i] = alloy_find_allocator(names[i]);
	allocs[A_TEST] = test_alloc_register(&ta, names[A_TEST]);
	if (reporter)
		ck_assert_ok(alloy_reporter_enable());
	for (int i = 0; i < NALLOC; i++)
		base[i] = stat_allocs(allocs[i]);
	deadline_ns = now_ns() + TIME_LIMIT_NS;

	ck_assert_int_eq(pthread_create(&sw, NULL, swapper, NULL), 0);
	ck_assert_int_eq(pthread_create(&sp, NULL, spawner, NULL), 0);
	ck_assert_int_eq(pthread_create(&rg, NULL, registrar, NULL), 0);
	ck_assert_int_eq(pthread_create(&ld, NULL, loader, NULL), 0);
	for (uintptr_t i = 0; i < WORKERS; i++)
		ck_assert_int_eq(
			pthread_create(&w[i], NULL, worker, (void *)(i + 1)),
			0);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(w[i], NULL);
	atomic_store(&stop, true);
	pthread_join(sw, NULL);
	pthread_join(sp, NULL);
	pthread_join(rg, NULL);
	pthread_join(ld, NULL);
	ck_assert_int_gt(plugin_rounds, 0);
	while (nmail > 0)
		collect();

	/* Exact: every block the threads made, and nothing more. */
	for (int i = 0; i < NALLOC; i++) {
		ck_assert_msg(
			stat_allocs(allocs[i]) - base[i] == ok[i],
			"%s: registry counted %lld allocations, threads made %lld",
			names[i], stat_allocs(allocs[i]) - base[i],
			(long long)ok[i]);
		ck_assert_int_eq(alloy_allocator_live_blocks(allocs[i]), 0);
		ck_assert_int_eq(alloy_allocator_live_bytes(allocs[i]), 0);
		made += ok[i];
	}
	ck_assert_uint_eq(alloy_fail_injected(), (uint64_t)enomem);
	ck_assert_uint_eq(alloy_fail_count(), (uint64_t)(ok[A_FAIL] + enomem));
	ck_assert_int_eq(atomic_load(&ta.allocs), ok[A_TEST]);
	ck_assert_int_eq(atomic_load(&ta.frees), ok[A_TEST]);
	ck_assert_int_eq(atomic_load(&ta.bad_frees), 0);
	ck_assert_int_eq(atomic_load(&ta.live_bytes), 0);
	ck_assert_uint_eq(alloy_debug_errors(-1), 0);
	ck_assert_int_gt(enomem, 0);
	if (reporter) {
		struct alloy_reporter_snapshot snap = {
			.size = sizeof(snap),
			.version = ALLOY_REPORTER_SNAPSHOT_VERSION,
		};

		ck_assert_ok(alloy_reporter_snapshot(&snap));
		ck_assert_uint_eq(snap.total.live_blocks, 0);
		ck_assert_uint_eq(snap.total.current_bytes, 0);
		/*
		 * Per allocator: each registration of the temporary one
		 * takes a reporter entry of its own, and the table has
		 * ALLOY_REPORTER_MAX_ENTRIES, so its later blocks go
		 * untracked; the four long-lived allocators must be exact.
		 */
		for (int i = 0; i < NALLOC; i++) {
			uint64_t seen = 0;

			for (uint32_t e = 0; e < snap.nentries; e++)
				if (strcmp(snap.entries[e].allocator,
					   names[i]) == 0)
					seen += snap.entries[e].c.allocs;
			ck_assert_msg(
				seen == (uint64_t)(ok[i] + resized[i]),
				"%s: the reporter counted %llu allocations, threads made %lld and resized %lld",
				names[i], (unsigned long long)seen,
				(long long)ok[i], (long long)resized[i]);
		}
		ck_assert_uint_eq(snap.unknown_frees + snap.double_frees, 0);
	}
	printf("stress: %s: %lld operations, %lld blocks made, %lld refused by fail, %lld plugin loads\n",
	       reporter ? "reporter" : "plain", (long long)ops_done, made,
	       (long long)enomem, (long long)plugin_rounds);
	fflush(stdout);
}

START_TEST(threads_with_exact_accounting)
{
	stress(false);
}
END_TEST

START_TEST(threads_with_the_reporter)
{
	stress(true);
}
END_TEST

Suite *suite_stress(void)
{
	Suite *s = suite_create("stress");
	TCase *tc = tcase_create("stress");

	tcase_add_test(tc, threads_with_exact_accounting);
	tcase_add_test(tc, threads_with_the_reporter);
	/* Bounded by TIME_LIMIT_NS; the margin is for slow sanitizers. */
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}
