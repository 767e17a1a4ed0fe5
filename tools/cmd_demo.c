// SPDX-License-Identifier: MIT
/*
 * tools/cmd_demo.c - `alloy demo`: a Caffe2-like workload on the tensor
 * layer.  A workspace holds the blobs of a tiny net (data -> FC -> ReLU ->
 * mask -> loss history); each iteration runs its operators on a batch of
 * another size, so tensors are resized up and down, extended, shrunk,
 * shared, copied and change type, all through the device contexts and the
 * allocators ALLOY_CONF (or --swap) selects.  The reporter's summary ends
 * it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <alloy/alloy.h>

#include "cli.h"

#define IN_FEATURES  64
#define OUT_FEATURES 32
#define HISTORY_KEEP 4

static const int64_t batches[] = { 16, 4, 32, 64, 8, 128 };
#define NITER ((int)(sizeof(batches) / sizeof(batches[0])))

#define F32 alloy_type(ALLOY_TYPE_FLOAT)

/* ---- blobs as operator inputs and outputs --------------------------- */

static struct alloy_tensor *output(struct alloy_workspace *ws, const char *name)
{
	struct alloy_blob *b = alloy_workspace_create_blob(ws, name);

	return b ? alloy_blob_get_mutable_tensor(b, ALLOY_CPU) : NULL;
}

static struct alloy_tensor *input(struct alloy_workspace *ws, const char *name)
{
	struct alloy_blob *b = alloy_workspace_get_blob(ws, name);

	return b ? alloy_blob_get_tensor(b) : NULL;
}

/* ---- operators: each returns 0 or a negative errno (message set) ---- */

/* Fill `name` with dims and a deterministic pattern. */
static int op_fill(struct alloy_workspace *ws, const char *name,
		   const int64_t *dims, int ndim, float scale)
{
	struct alloy_tensor *t = output(ws, name);
	float *p;
	int rc;

	if (!t)
		return -ENOMEM;
	rc = alloy_tensor_resize(t, dims, ndim);
	if (rc)
		return rc;
	p = alloy_tensor_raw_mutable_data(t, F32);
	if (!p)
		return -ENOMEM;
	for (int64_t i = 0; i < alloy_tensor_numel(t); i++)
		p[i] = scale * (float)((i * 7919) % 17 - 8);
	return 0;
}

/* y[n][m] = sum_k x[n][k] w[m][k] + b[m] */
static int op_fc(struct alloy_workspace *ws, const char *x_name,
		 const char *w_name, const char *b_name, const char *y_name)
{
	struct alloy_tensor *x = input(ws, x_name), *w = input(ws, w_name);
	struct alloy_tensor *b = input(ws, b_name), *y = output(ws, y_name);
	const float *xp, *wp, *bp;
	int64_t n, k, m, dims[2];
	float *yp;
	int rc;

	if (!x || !w || !b || !y)
		return -EINVAL;
	n = alloy_tensor_dim(x, 0);
	k = alloy_tensor_dim(x, 1);
	m = alloy_tensor_dim(w, 0);
	dims[0] = n;
	dims[1] = m;
	rc = alloy_tensor_resize(y, dims, 2);
	if (rc)
		return rc;
	xp = alloy_tensor_data(x, F32);
	wp = alloy_tensor_data(w, F32);
	bp = alloy_tensor_data(b, F32);
	yp = alloy_tensor_raw_mutable_data(y, F32);
	if (!xp || !wp || !bp || !yp)
		return -EINVAL;
	for (int64_t i = 0; i < n; i++)
		for (int64_t j = 0; j < m; j++) {
			float s = bp[j];

			for (int64_t l = 0; l < k; l++)
				s += xp[i * k + l] * wp[j * k + l];
			yp[i * m + j] = s;
		}
	return 0;
}

/*
 * An elementwise operator's start: y shaped like x, and the typed pointers
 * to read x and write y as elements of ytype.
 */
static int elementwise(struct alloy_workspace *ws, const char *x_name,
		       const char *y_name, const struct alloy_type_meta *ytype,
		       const float **xp, void **yp, int64_t *n)
{
	struct alloy_tensor *x = input(ws, x_name), *y = output(ws, y_name);
	int rc;

	if (!x || !y)
		return -EINVAL;
	rc = alloy_tensor_resize_like(y, x);
	if (rc)
		return rc;
	*xp = alloy_tensor_data(x, F32);
	*yp = alloy_tensor_raw_mutable_data(y, ytype);
	*n = alloy_tensor_numel(y);
	return *xp && *yp ? 0 : -EINVAL;
}

static int op_relu(struct alloy_workspace *ws, const char *x_name,
		   const char *y_name)
{
	const float *xp;
	float *yp;
	int64_t n;
	int rc = elementwise(ws, x_name, y_name, F32, &xp, (void **)&yp, &n);

	for (int64_t i = 0; !rc && i < n; i++)
		yp[i] = xp[i] > 0 ? xp[i] : 0;
	return rc;
}

/*
 * The mask is computed as int32 and turned into float in place: both
 * types are POD of the same size, so the buffer is reused.
 */
static int op_mask(struct alloy_workspace *ws, const char *x_name,
		   const char *y_name, bool *reused)
{
	const float *xp;
	int32_t *ip;
	float *fp;
	int64_t n;
	int rc = elementwise(ws, x_name, y_name, alloy_type(ALLOY_TYPE_INT32),
			     &xp, (void **)&ip, &n);

	if (rc)
		return rc;
	for (int64_t i = 0; i < n; i++)
		ip[i] = xp[i] > 0;
	fp = alloy_tensor_raw_mutable_data(input(ws, y_name), F32);
	if (!fp)
		return -EINVAL;
	*reused = (void *)fp == (void *)ip;
	for (int64_t i = 0; i < n; i++) {
		int32_t v;

		memcpy(&v, &fp[i], sizeof(v));
		fp[i] = (float)v;
	}
	return 0;
}

/* Append the mean of x to the 1-D history (Caffe2's Extend). */
static int op_append_mean(struct alloy_workspace *ws, const char *x_name,
			  const char *h_name)
{
	struct alloy_tensor *x = input(ws, x_name), *h = output(ws, h_name);
	const float *xp;
	float *hp, s = 0;
	int64_t zero = 0;
	int rc;

	if (!x || !h)
		return -EINVAL;
	if (alloy_tensor_numel(h) < 0 &&
	    ((rc = alloy_tensor_resize(h, &zero, 1)) ||
	     !alloy_tensor_raw_mutable_data(h, F32)))
		return -EINVAL;
	xp = alloy_tensor_data(x, F32);
	if (!xp)
		return -EINVAL;
	for (int64_t i = 0; i < alloy_tensor_numel(x); i++)
		s += xp[i];
	rc = alloy_tensor_extend(h, 1, 50);
	if (rc)
		return rc;
	hp = alloy_tensor_raw_mutable_data(h, F32);
	if (!hp)
		return -EINVAL;
	hp[alloy_tensor_numel(h) - 1] = s / (float)alloy_tensor_numel(x);
	return 0;
}

/* ---- the workload --------------------------------------------------- */

static const char *served_by(const struct alloy_tensor *t)
{
	struct alloy_allocator *a = alloy_tensor_allocator(t);

	return a ? alloy_allocator_name(a) : "-";
}

static int setup(struct alloy_workspace *ws)
{
	int64_t w[] = { OUT_FEATURES, IN_FEATURES }, b[] = { OUT_FEATURES };
	int64_t n = NITER;
	struct alloy_tensor *labels;
	char **s;
	int rc;

	rc = op_fill(ws, "fc_w", w, 2, 0.01f);
	if (!rc)
		rc = op_fill(ws, "fc_b", b, 1, 0.1f);
	if (rc)
		return rc;
	/* A non-POD tensor: one label string per iteration. */
	labels = output(ws, "labels");
	if (!labels || alloy_tensor_resize(labels, &n, 1))
		return -ENOMEM;
	s = alloy_tensor_raw_mutable_data(labels,
					  alloy_type(ALLOY_TYPE_STRING));
	if (!s)
		return -ENOMEM;
	for (int i = 0; i < NITER; i++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "batch-%d-of-%lld", i,
			 (long long)batches[i]);
		s[i] = strdup(buf);
	}
	return 0;
}

static int iteration(struct alloy_workspace *ws, int it)
{
	int64_t dims[] = { batches[it], IN_FEATURES }, flat;
	struct alloy_tensor *fc, *flat_t, *hist, *snap;
	bool reused = false;
	int rc;

	rc = op_fill(ws, "data", dims, 2, 1.0f);
	if (!rc)
		rc = op_fc(ws, "data", "fc_w", "fc_b", "fc_out");
	if (!rc)
		rc = op_relu(ws, "fc_out", "relu_out");
	if (!rc)
		rc = op_mask(ws, "relu_out", "mask", &reused);
	if (!rc)
		rc = op_append_mean(ws, "relu_out", "history");
	if (rc)
		return rc;

	/* A flat view sharing fc_out's storage. */
	fc = input(ws, "fc_out");
	flat_t = output(ws, "fc_out_flat");
	flat = alloy_tensor_numel(fc);
	if (!flat_t || (rc = alloy_tensor_resize(flat_t, &flat, 1)) ||
	    (rc = alloy_tensor_share_data(flat_t, fc)))
		return rc ? rc : -ENOMEM;

	/* Keep only the last few losses: shrink never reallocates. */
	hist = input(ws, "history");
	if (alloy_tensor_dim(hist, 0) > HISTORY_KEEP) {
		rc = alloy_tensor_shrink_to(hist, HISTORY_KEEP);
		if (rc)
			return rc;
	}

	/* A deep snapshot of the weights every other iteration. */
	if (it % 2 == 0) {
		snap = output(ws, "fc_w_snapshot");
		if (!snap ||
		    (rc = alloy_tensor_copy_from(snap, input(ws, "fc_w"))))
			return rc ? rc : -ENOMEM;
	}

	printf("  iter %d  batch %3lld  data %-8s fc_out %-8s mask %s (int32->float %s)  history %lld/%zu B  fc_out shared by %ld\n",
	       it, (long long)batches[it], served_by(input(ws, "data")),
	       served_by(fc), served_by(input(ws, "mask")),
	       reused ? "in place" : "reallocated",
	       (long long)alloy_tensor_numel(hist),
	       alloy_tensor_capacity_nbytes(hist),
	       alloy_storage_use_count(alloy_tensor_storage(fc)));
	return 0;
}

/* ---- the summary ---------------------------------------------------- */

/* The registry's own counts, one line per allocator. */
static int stats_line(struct alloy_allocator *a, void *arg)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	int type = alloy_allocator_device_type(a);

	(void)arg;
	if (alloy_allocator_stats(a, &st))
		return 0;
	printf("  %-16s %-10s %8llu allocs %8llu frees %6lld live blocks",
	       alloy_allocator_name(a), alloy_device_type_name(type),
	       (unsigned long long)st.num_allocs,
	       (unsigned long long)st.num_frees,
	       alloy_allocator_live_blocks(a));
	if (alloy_get_default(type) == a)
		printf("  (%s default)", alloy_device_type_name(type));
	printf("\n");
	return 0;
}

static void to_stdout(void *arg, const char *text)
{
	(void)arg;
	fputs(text, stdout);
}

static int run_demo(int argc, char **argv)
{
	struct alloy_workspace *ws = NULL;
	const char *swap = NULL;
	bool reporting;
	char **names;
	long nnames;
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--swap") && i + 1 < argc)
			swap = argv[++i];
		else
			return cli_usage_error(&cmd_demo,
					       "unexpected argument \"%s\"",
					       argv[i]);
	}
	alloy_init();
	reporting = alloy_reporter_enabled() || alloy_reporter_enable() == 0;
	printf("alloy demo: CPU allocations served by \"%s\"\n",
	       alloy_allocator_name(alloy_get_default(ALLOY_DEVICE_CPU)));

	ws = alloy_workspace_new();
	if (!ws || (rc = setup(ws)))
		goto out_error;
	for (int it = 0; it < NITER; it++) {
		if (swap && it == NITER / 2) {
			rc = alloy_set_default_by_name(ALLOY_DEVICE_CPU, swap);
			if (rc)
				goto out_error;
			printf("  -- CPU default swapped to \"%s\"; tensors made before keep their allocator\n",
			       swap);
		}
		rc = iteration(ws, it);
		if (rc)
			goto out_error;
	}
	nnames = alloy_workspace_list(ws, &names);
	if (nnames > 0) {
		printf("workspace: %ld blobs:", nnames);
		for (long i = 0; i < nnames; i++)
			printf(" %s", names[i]);
		printf("\n");
		free(names);
	}
	alloy_workspace_free(ws);

	printf("summary after freeing the workspace:\n");
	alloy_foreach_allocator(stats_line, NULL);
	if (reporting)
		alloy_reporter_print(to_stdout, NULL, ALLOY_REPORT_TEXT, false);
	return 0;

out_error:
	fprintf(stderr, "alloy demo: %s\n", alloy_last_error());
	alloy_workspace_free(ws);
	return EXIT_PROBLEM;
}

const struct cli_command cmd_demo = {
	.name = "demo",
	.summary =
		"run a Caffe2-like tensor workload and print what each allocator served",
	.usage =
		"usage: alloy demo [--swap NAME]\n"
		"\n"
		"Runs a tiny net on the tensor layer: a workspace of blobs through\n"
		"fill, FC, ReLU, mask and loss-history operators over batches of\n"
		"changing size (resize, extend, shrink, share, copy, type changes),\n"
		"with the allocators ALLOY_CONF selects, then prints the reporter's\n"
		"summary per allocator.\n"
		"\n"
		"  --swap NAME   make NAME the CPU default halfway through\n",
	.run = run_demo,
};
