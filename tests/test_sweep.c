// SPDX-License-Identifier: MIT
/*
 * tests/test_sweep.c - the fault sweep.
 *
 * Each representative workload runs once cleanly to count the allocations
 * it makes (alloy_fail_count), then once for every k = 1..total with the
 * k-th allocation failing (or, in the "persistent" modes, every one from
 * the k-th on, as when memory has really run out).  Every run must end
 * either with success (the failure was handled) or with a negative code
 * and a message, and must give everything back: the fail allocator's live
 * blocks and the reporter's live blocks return to what they were after
 * the clean run.  Memory taken from libc directly is checked by
 * LeakSanitizer in the sanitizer build and by valgrind in CI (glibc's
 * mallinfo counts blocks parked in its thread cache as in use, so it
 * cannot tell a leak from a cached block here).
 *
 * The fail allocator sits over the debug allocator (fail.inner:debug,
 * debug.abort:1), so an error path that frees twice, frees the wrong
 * size or overruns a block aborts the run.
 *
 * A workload takes the fail allocator, which is also the CPU default, and
 * returns 0 or a negative code, having freed all it allocated either way.
 * Add one by writing it and listing it in workloads[].
 */
#include <string.h>

#include "testutil.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

struct workload {
	const char *name;
	int (*run)(struct alloy_allocator *a);
	void (*setup)(void); /* once, before the runs; may be NULL */
};

/* ---- workloads ----------------------------------------------------------- */

/* alloy_alloc in its variants, realloc both ways, the default path. */
static int wl_alloc(struct alloy_allocator *a)
{
	static const size_t sizes[] = { 1, 64, 1000, 4096, 1 << 20, 3 };
	struct alloy_data_ptr b[ARRAY_LEN(sizes) + 1];
	int rc = 0;

	for (size_t i = 0; i < ARRAY_LEN(b); i++)
		b[i] = ALLOY_DATA_PTR_INIT;
	for (size_t i = 0; i < ARRAY_LEN(sizes); i++) {
		rc = alloy_alloc(a, sizes[i], (size_t)8 << i,
				 i % 2 ? ALLOY_ALLOC_ZERO : 0, &b[i]);
		if (rc)
			goto out;
		memset(b[i].ptr, (int)i, sizes[i]);
	}
	rc = alloy_data_ptr_realloc(&b[0], 10000);
	if (rc)
		goto out;
	rc = alloy_data_ptr_realloc(&b[2], 10);
	if (rc)
		goto out;
	rc = alloy_alloc_default(ALLOY_DEVICE_CPU, 128, 0, &b[ARRAY_LEN(sizes)]);
out:
	for (size_t i = 0; i < ARRAY_LEN(b); i++)
		alloy_data_ptr_free(&b[i]);
	return rc;
}

/* The CPU context: new blocks from the default, copies between them. */
static int wl_context(struct alloy_allocator *a)
{
	struct alloy_data_ptr src = ALLOY_DATA_PTR_INIT;
	struct alloy_data_ptr dst = ALLOY_DATA_PTR_INIT;
	struct alloy_data_ptr empty = ALLOY_DATA_PTR_INIT;
	int rc;

	(void)a;
	rc = alloy_context_new(ALLOY_CPU, 4096, &src);
	if (rc)
		goto out;
	memset(src.ptr, 1, 4096);
	rc = alloy_context_new(ALLOY_CPU, 0, &empty);
	if (rc)
		goto out;
	rc = alloy_context_new(ALLOY_CPU, 4096, &dst);
	if (rc)
		goto out;
	rc = alloy_copy_bytes(4096, src.ptr, ALLOY_CPU, dst.ptr, ALLOY_CPU);
out:
	alloy_data_ptr_free(&dst);
	alloy_data_ptr_free(&empty);
	alloy_data_ptr_free(&src);
	return rc;
}

/* Many small blocks held at once, freed in a different order. */
static int wl_churn(struct alloy_allocator *a)
{
	struct alloy_data_ptr b[32];
	int rc = 0, n;

	for (n = 0; n < 32; n++) {
		rc = alloy_alloc(a, (size_t)n * 24 + 1, 0, 0, &b[n]);
		if (rc)
			break;
	}
	for (int i = 0; i < n; i += 2)
		alloy_data_ptr_free(&b[i]);
	for (int i = 1; i < n; i += 2)
		alloy_data_ptr_free(&b[i]);
	return rc;
}

/* Pointer-returning calls give NULL and a message; the code is ours. */
#define CHECK_PTR(p)                                                    \
	do {                                                            \
		if (!(p)) {                                             \
			rc = -ENOMEM;                                   \
			goto out;                                       \
		}                                                       \
	} while (0)
#define CHECK_RC(expr)                                                  \
	do {                                                            \
		rc = (expr);                                            \
		if (rc)                                                 \
			goto out;                                       \
	} while (0)

/* Tensors: lazy buffers, growth, reserve, shrink, clone, copy, share. */
static int wl_tensor(struct alloy_allocator *a)
{
	const struct alloy_type_meta *f32 = alloy_type(ALLOY_TYPE_FLOAT);
	int64_t dims[2] = { 16, 32 }, small[2] = { 8, 32 };
	struct alloy_tensor *t = NULL, *c = NULL, *u = NULL, *v = NULL;
	int rc = 0;

	(void)a;
	CHECK_PTR(t = alloy_tensor_new_dims(ALLOY_CPU, dims, 2));
	CHECK_PTR(alloy_tensor_raw_mutable_data(t, f32));
	memset(alloy_tensor_raw_mutable_data(t, f32), 0, alloy_tensor_nbytes(t));
	CHECK_RC(alloy_tensor_extend(t, 8, 50.0f));
	CHECK_PTR(alloy_tensor_raw_mutable_data(t, f32));
	CHECK_RC(alloy_tensor_reserve_space(t, 64));
	CHECK_RC(alloy_tensor_resize(t, small, 2));
	CHECK_PTR(alloy_tensor_raw_mutable_data(t, f32));
	CHECK_PTR(c = alloy_tensor_clone(t));
	CHECK_PTR(u = alloy_tensor_new(ALLOY_CPU));
	CHECK_RC(alloy_tensor_copy_from(u, c));
	CHECK_PTR(v = alloy_tensor_new(ALLOY_CPU));
	CHECK_RC(alloy_tensor_resize(v, small, 2));
	CHECK_RC(alloy_tensor_share_data(v, u));
	CHECK_RC(alloy_tensor_resize(u, dims, 2));
	CHECK_PTR(alloy_tensor_raw_mutable_data(u, alloy_type(ALLOY_TYPE_DOUBLE)));
	CHECK_RC(alloy_tensor_free_memory(t));
out:
	alloy_tensor_unref(v);
	alloy_tensor_unref(u);
	alloy_tensor_unref(c);
	alloy_tensor_unref(t);
	return rc;
}

/* A workspace of blobs holding tensors, removed and replaced. */
static int wl_workspace(struct alloy_allocator *a)
{
	const struct alloy_type_meta *i64 = alloy_type(ALLOY_TYPE_INT64);
	int64_t dims[1] = { 1000 };
	struct alloy_workspace *ws;
	struct alloy_tensor *t;
	struct alloy_blob *b;
	char **names = NULL;
	long n;
	int rc = 0;

	(void)a;
	ws = alloy_workspace_new();
	if (!ws)
		return -ENOMEM;
	for (int i = 0; i < 4; i++) {
		char name[16];

		snprintf(name, sizeof(name), "blob%d", i);
		CHECK_PTR(b = alloy_workspace_create_blob(ws, name));
		CHECK_PTR(t = alloy_blob_get_mutable_tensor(b, ALLOY_CPU));
		CHECK_RC(alloy_tensor_resize(t, dims, 1));
		CHECK_PTR(alloy_tensor_raw_mutable_data(t, i64));
	}
	CHECK_RC(alloy_workspace_remove_blob(ws, "blob1"));
	/* A blob's tensor replaced by a fresh one (the old one is freed). */
	CHECK_PTR(b = alloy_workspace_get_blob(ws, "blob2"));
	alloy_blob_clear(b);
	CHECK_PTR(t = alloy_blob_get_mutable_tensor(b, ALLOY_CPU));
	CHECK_RC(alloy_tensor_resize(t, dims, 1));
	CHECK_PTR(alloy_tensor_raw_mutable_data(t, i64));
	n = alloy_workspace_list(ws, &names);
	if (n < 0) {
		rc = (int)n;
		goto out;
	}
	free(names); /* one block, strings included */
out:
	alloy_workspace_free(ws);
	return rc;
}

/* SyncedMemory on the simulated device: host copies come from "fail". */
static void setup_syncedmem(void)
{
	ck_assert_ok(alloy_cuda_sim_register_context(alloy_cuda_sim_builtin()));
	ck_assert_ok(alloy_set_default_by_name(ALLOY_DEVICE_CUDA,
					       "cuda_caching_sim"));
}

static int wl_syncedmem(struct alloy_allocator *a)
{
	struct alloy_syncedmem *m = NULL, *g = NULL;
	int rc;

	(void)a;
	CHECK_RC(alloy_syncedmem_create(4096, 0, &m));
	CHECK_PTR(alloy_syncedmem_mutable_cpu_data(m));
	CHECK_PTR(alloy_syncedmem_gpu_data(m));
	CHECK_PTR(alloy_syncedmem_mutable_gpu_data(m));
	CHECK_PTR(alloy_syncedmem_cpu_data(m));
	CHECK_RC(alloy_syncedmem_create(1000, 0, &g));
	CHECK_PTR(alloy_syncedmem_mutable_gpu_data(g));
	CHECK_PTR(alloy_syncedmem_cpu_data(g));
out:
	alloy_syncedmem_destroy(g);
	alloy_syncedmem_destroy(m);
	return rc;
}

static const struct workload workloads[] = {
	{ "alloc", wl_alloc, NULL },
	{ "context", wl_context, NULL },
	{ "churn", wl_churn, NULL },
	{ "tensor", wl_tensor, NULL },
	{ "workspace", wl_workspace, NULL },
	{ "syncedmem", wl_syncedmem, setup_syncedmem },
};

/* ---- the sweep ------------------------------------------------------------ */

enum {
	MODE_PERSISTENT = 1, /* every allocation from the k-th on fails */
	MODE_REPORTER = 2,   /* with the reporter recording */
	MODES = 4,
};

static long long reporter_live(void)
{
	struct alloy_reporter_snapshot snap = {
		.size = sizeof(snap),
		.version = ALLOY_REPORTER_SNAPSHOT_VERSION,
	};

	ck_assert_ok(alloy_reporter_snapshot(&snap));
	return (long long)snap.total.live_blocks;
}

static void sweep(const struct workload *w, int mode)
{
	struct alloy_allocator *a;
	struct alloy_fail_config plan = { 0 };
	uint64_t total, errors = 0, handled = 0;
	long long rep0 = 0;
	int rc;

	test_set_conf("cpu:fail,fail.inner:debug,debug.abort:1");
	ck_assert_int_eq(alloy_init(), 0);
	a = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_str_eq(alloy_allocator_name(a), "fail");
	if (w->setup)
		w->setup();
	if (mode & MODE_REPORTER)
		ck_assert_ok(alloy_reporter_enable());

	/* Clean runs: the count, and that it is the same every time. */
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(w->run(a));
	total = alloy_fail_count();
	ck_assert_uint_gt(total, 0);
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(w->run(a));
	ck_assert_uint_eq(alloy_fail_count(), total);
	if (mode & MODE_REPORTER)
		rep0 = reporter_live();

	for (uint64_t k = 1; k <= total; k++) {
		plan.nth = k;
		plan.run = mode & MODE_PERSISTENT ? ALLOY_FAIL_UNLIMITED : 1;
		ck_assert_ok(alloy_fail_configure(&plan));
		alloy_clear_error();
		rc = w->run(a);
		ck_assert_msg(alloy_fail_injected() >= 1,
			      "%s: allocation %llu of %llu was never reached",
			      w->name, (unsigned long long)k,
			      (unsigned long long)total);
		if (rc) {
			ck_assert_msg(rc < 0 && alloy_last_error()[0],
				      "%s, allocation %llu failing: returned %d, message \"%s\"",
				      w->name, (unsigned long long)k, rc,
				      alloy_last_error());
			errors++;
		} else {
			handled++;
		}
		ck_assert_msg(alloy_allocator_live_blocks(a) == 0,
			      "%s, allocation %llu failing: %lld blocks leaked",
			      w->name, (unsigned long long)k,
			      alloy_allocator_live_blocks(a));
		if (mode & MODE_REPORTER)
			ck_assert_int_eq(reporter_live(), rep0);
	}
	ck_assert_uint_eq(alloy_debug_errors(-1), 0);
	/* Counted by docs/RELIABILITY.md; the runner's log keeps it. */
	printf("sweep: %-10s %-10s %-8s %4llu sites: %llu failed cleanly, %llu handled, 0 leaks\n",
	       w->name, mode & MODE_PERSISTENT ? "persistent" : "single",
	       mode & MODE_REPORTER ? "reporter" : "plain",
	       (unsigned long long)total, (unsigned long long)errors,
	       (unsigned long long)handled);
	fflush(stdout);
}

START_TEST(sweep_workload)
{
	sweep(&workloads[_i / MODES], _i % MODES);
}
END_TEST

/* The sweep itself would miss a workload that never allocates. */
START_TEST(fail_counts_every_allocation)
{
	struct alloy_fail_config plan = { 0 };
	struct alloy_allocator *a;

	test_set_conf("cpu:fail");
	a = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(wl_churn(a));
	ck_assert_uint_eq(alloy_fail_count(), 32);
	ck_assert_ok(alloy_fail_configure(&plan));
	ck_assert_ok(wl_alloc(a));
	/* six blocks, two reallocs (each a new block), one default */
	ck_assert_uint_eq(alloy_fail_count(), 9);
}
END_TEST

Suite *suite_sweep(void)
{
	Suite *s = suite_create("sweep");
	TCase *tc = tcase_create("sweep");

	tcase_add_test(tc, fail_counts_every_allocation);
	tcase_add_loop_test(tc, sweep_workload, 0,
			    (int)ARRAY_LEN(workloads) * MODES);
	tcase_set_timeout(tc, 300);
	suite_add_tcase(s, tc);
	return s;
}
