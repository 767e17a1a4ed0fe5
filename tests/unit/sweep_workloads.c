// SPDX-License-Identifier: MIT
/*
 * tests/unit/sweep_workloads.c - the representative workloads of the fault
 * sweeps: tests/unit/test_sweep.c fails their allocator-level allocations,
 * tests/unit/sweep_malloc.c their libc-level ones.
 *
 * A workload takes the CPU default allocator and returns 0 or a negative
 * code, having freed all it allocated either way.  Add one by writing it
 * and listing it in sweep_workloads[].
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep_workloads.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* alloy_alloc in its variants, realloc both ways, the default path. */
int sweep_wl_alloc(struct alloy_allocator *a)
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
	rc = alloy_alloc_default(ALLOY_DEVICE_CPU, 128, 0,
				 &b[ARRAY_LEN(sizes)]);
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
int sweep_wl_churn(struct alloy_allocator *a)
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
#define CHECK_PTR(p)                  \
	do {                          \
		if (!(p)) {           \
			rc = -ENOMEM; \
			goto out;     \
		}                     \
	} while (0)
#define CHECK_RC(expr)            \
	do {                      \
		rc = (expr);      \
		if (rc)           \
			goto out; \
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
	memset(alloy_tensor_raw_mutable_data(t, f32), 0,
	       alloy_tensor_nbytes(t));
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
	CHECK_PTR(alloy_tensor_raw_mutable_data(u,
						alloy_type(ALLOY_TYPE_DOUBLE)));
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
static int setup_syncedmem(void)
{
	int rc;

	/*
	 * With no pinned default, SyncedMemory tries once to load the
	 * cuda_host module; whether that module was built must not change
	 * what the sweep sees, so no module is found here.  (Without a GPU
	 * its load fails, and in this tree that failure leaks the contexts
	 * the module built.)
	 */
	setenv("ALLOY_MODULE_PATH", "/nonexistent", 1);
	rc = alloy_cuda_sim_register_context(alloy_cuda_sim_builtin());

	return rc ? rc
		  : alloy_set_default_by_name(ALLOY_DEVICE_CUDA,
					      "cuda_caching_sim");
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

/* Plugin loading: load, allocate through it, unload. */
#define GOOD_PLUGIN ALLOY_BUILD_DIR "/tests/plugins/.libs/good.so"

static int wl_plugin(struct alloy_allocator *a)
{
	struct alloy_data_ptr dp = ALLOY_DATA_PTR_INIT;
	struct alloy_allocator *p;
	int rc;

	(void)a;
	/* The test plugins are built only with the check framework. */
	if (access(GOOD_PLUGIN, F_OK) != 0)
		return 0;
	rc = alloy_plugin_load(GOOD_PLUGIN);
	if (rc)
		return rc;
	p = alloy_find_allocator("plug_one");
	rc = p ? alloy_alloc(p, 100, 0, 0, &dp) : -ENOENT;
	alloy_data_ptr_free(&dp);
	if (alloy_plugin_unload(GOOD_PLUGIN) && !rc)
		rc = -EBUSY;
	return rc;
}

const struct sweep_workload sweep_workloads[] = {
	{ .name = "alloc", .run = sweep_wl_alloc },
	{ .name = "context", .run = wl_context },
	{ .name = "churn", .run = sweep_wl_churn },
	{ .name = "tensor", .run = wl_tensor },
	{ .name = "workspace", .run = wl_workspace },
	{ .name = "syncedmem", .run = wl_syncedmem, .setup = setup_syncedmem },
	/* the plugin's allocator is its own: no allocation through "fail" */
	{ .name = "plugin", .run = wl_plugin, .libc_only = true },
};
const size_t sweep_nworkloads = ARRAY_LEN(sweep_workloads);
