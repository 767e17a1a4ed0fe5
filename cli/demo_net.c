// SPDX-License-Identifier: MIT
/*
 * cli/demo_net.c - a Caffe2-like training loop on the tensor layer, for
 * `alloy demo`: a 4-layer MLP (64 -> 96 -> 96 -> 96 -> 10) trained with
 * SGD on synthetic data.
 *
 * What matters is its memory, which is what a real net's looks like:
 * parameters that live for the whole run, activations and gradients kept
 * in named blobs and resized to each batch (batches of 8 to 256 rows, so
 * keep-on-shrink decides what is freed), scratch tensors each operator
 * makes and drops, a mask computed as int32 and reused in place as float,
 * a loss history that grows by one (extend) and is shrunk now and then,
 * and a deep snapshot of the weights.  The arithmetic is plain loops: the
 * tensors may live on the simulated GPU, whose memory the host can reach.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "demo_net.h"

#define LAYERS	 4
#define HISTORY	 16
#define LEARNING 0.5f

static const int64_t widths[LAYERS + 1] = { 64, 96, 96, 96, 10 };
static const int64_t batch_cycle[] = { 16, 128, 32, 256, 64, 8, 192, 48 };

#define F32 alloy_type(ALLOY_TYPE_FLOAT)
#define I32 alloy_type(ALLOY_TYPE_INT32)

struct demo_net {
	struct alloy_workspace *ws;
	struct alloy_device dev;
	int steps;
	uint64_t rng;
};

int64_t demo_net_batch(int step)
{
	return batch_cycle[step %
			   (int)(sizeof(batch_cycle) / sizeof(batch_cycle[0]))];
}

static float next_uniform(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return (float)(*s >> 40) / (float)(1ull << 24) - 0.5f;
}

/* The blob's tensor on the net's device, made on first use. */
static struct alloy_tensor *blob(struct demo_net *n, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static struct alloy_tensor *blob(struct demo_net *n, const char *fmt, ...)
{
	struct alloy_blob *b;
	char name[48];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	b = alloy_workspace_create_blob(n->ws, name);
	return b ? alloy_blob_get_mutable_tensor(b, n->dev) : NULL;
}

/* Shape t as rows x cols of float and return its data. */
static float *shape2(struct alloy_tensor *t, int64_t rows, int64_t cols)
{
	int64_t dims[2] = { rows, cols };

	if (!t || alloy_tensor_resize(t, dims, cols ? 2 : 1))
		return NULL;
	return alloy_tensor_raw_mutable_data(t, F32);
}

static int params(struct demo_net *n)
{
	for (int l = 0; l < LAYERS; l++) {
		float *w =
			shape2(blob(n, "fc%d_w", l), widths[l + 1], widths[l]);
		float *b = shape2(blob(n, "fc%d_b", l), widths[l + 1], 0);
		float scale = 2.0f / sqrtf((float)widths[l]);

		if (!w || !b)
			return -ENOMEM;
		for (int64_t i = 0; i < widths[l + 1] * widths[l]; i++)
			w[i] = scale * next_uniform(&n->rng);
		memset(b, 0, (size_t)widths[l + 1] * sizeof(float));
	}
	return 0;
}

struct demo_net *demo_net_new(struct alloy_device dev)
{
	struct demo_net *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->dev = dev;
	n->rng = 42;
	n->ws = alloy_workspace_new();
	if (!n->ws || params(n)) {
		demo_net_free(n);
		return NULL;
	}
	return n;
}

/* y[b][o] = sum_i x[b][i] w[o][i] + bias[o] */
static void fc_forward(const float *x, const float *w, const float *bias,
		       float *y, int64_t batch, int64_t in, int64_t out)
{
	for (int64_t r = 0; r < batch; r++)
		for (int64_t o = 0; o < out; o++) {
			float s = bias[o];

			for (int64_t i = 0; i < in; i++)
				s += x[r * in + i] * w[o * in + i];
			y[r * out + o] = s;
		}
}

/* Softmax and cross-entropy; dy = (p - onehot) / batch. */
static float softmax_loss(const float *y, const int32_t *label, float *dy,
			  int64_t batch, int64_t k)
{
	float loss = 0;

	for (int64_t r = 0; r < batch; r++) {
		const float *row = y + r * k;
		float m = row[0], z = 0;

		for (int64_t j = 1; j < k; j++)
			m = row[j] > m ? row[j] : m;
		for (int64_t j = 0; j < k; j++)
			z += expf(row[j] - m);
		for (int64_t j = 0; j < k; j++) {
			float p = expf(row[j] - m) / z;

			dy[r * k + j] = (p - (j == label[r])) / (float)batch;
			if (j == label[r])
				loss -= logf(p + 1e-12f);
		}
	}
	return loss / (float)batch;
}

static int forward(struct demo_net *n, int64_t batch)
{
	for (int l = 0; l < LAYERS; l++) {
		struct alloy_tensor *xt =
			l ? blob(n, "relu%d", l - 1) : blob(n, "data");
		const float *x = alloy_tensor_data(xt, F32);
		const float *w = alloy_tensor_data(blob(n, "fc%d_w", l), F32);
		const float *b = alloy_tensor_data(blob(n, "fc%d_b", l), F32);
		float *y = shape2(blob(n, "fc%d", l), batch, widths[l + 1]);
		float *r;

		if (!x || !w || !b || !y)
			return -ENOMEM;
		fc_forward(x, w, b, y, batch, widths[l], widths[l + 1]);
		if (l == LAYERS - 1)
			break;
		r = shape2(blob(n, "relu%d", l), batch, widths[l + 1]);
		if (!r)
			return -ENOMEM;
		for (int64_t i = 0; i < batch * widths[l + 1]; i++)
			r[i] = y[i] > 0 ? y[i] : 0;
	}
	return 0;
}

/*
 * The ReLU's gradient mask: computed as int32, then turned into float in
 * place (same size, both plain bytes: the buffer is reused).
 */
static const float *relu_mask(struct demo_net *n, int l, int64_t count)
{
	struct alloy_tensor *m = blob(n, "mask%d", l);
	const float *y = alloy_tensor_data(blob(n, "fc%d", l), F32);
	int64_t dims[1] = { count };
	int32_t *mi;
	float *mf;

	if (!m || !y || alloy_tensor_resize(m, dims, 1))
		return NULL;
	mi = alloy_tensor_raw_mutable_data(m, I32);
	if (!mi)
		return NULL;
	for (int64_t i = 0; i < count; i++)
		mi[i] = y[i] > 0;
	mf = alloy_tensor_raw_mutable_data(m, F32);
	if (!mf)
		return NULL;
	for (int64_t i = 0; i < count; i++) {
		int32_t v;

		memcpy(&v, &mf[i], sizeof(v));
		mf[i] = (float)v;
	}
	return mf;
}

/* Gradients of layer l from dy, and dx for the layer below (scratch). */
static int backward_layer(struct demo_net *n, int l, int64_t batch,
			  struct alloy_tensor **dy_t)
{
	int64_t in = widths[l], out = widths[l + 1];
	struct alloy_tensor *xt =
		l ? blob(n, "relu%d", l - 1) : blob(n, "data");
	const float *x = alloy_tensor_data(xt, F32);
	const float *dy = alloy_tensor_data(*dy_t, F32);
	const float *w = alloy_tensor_data(blob(n, "fc%d_w", l), F32);
	float *gw = shape2(blob(n, "fc%d_w_grad", l), out, in);
	float *gb = shape2(blob(n, "fc%d_b_grad", l), out, 0);
	struct alloy_tensor *dx_t;
	const float *mask;
	float *dx;

	if (!x || !dy || !w || !gw || !gb)
		return -ENOMEM;
	memset(gw, 0, (size_t)(out * in) * sizeof(float));
	memset(gb, 0, (size_t)out * sizeof(float));
	for (int64_t r = 0; r < batch; r++)
		for (int64_t o = 0; o < out; o++) {
			float g = dy[r * out + o];

			gb[o] += g;
			for (int64_t i = 0; i < in; i++)
				gw[o * in + i] += g * x[r * in + i];
		}
	if (l == 0)
		return 0;
	/* A scratch tensor per operator, as Caffe2's operators make. */
	dx_t = alloy_tensor_new(n->dev);
	dx = shape2(dx_t, batch, in);
	mask = relu_mask(n, l - 1, batch * in);
	if (!dx || !mask) {
		alloy_tensor_unref(dx_t);
		return -ENOMEM;
	}
	for (int64_t r = 0; r < batch; r++)
		for (int64_t i = 0; i < in; i++) {
			float s = 0;

			for (int64_t o = 0; o < out; o++)
				s += dy[r * out + o] * w[o * in + i];
			dx[r * in + i] = s * mask[r * in + i];
		}
	alloy_tensor_unref(*dy_t);
	*dy_t = dx_t;
	return 0;
}

static int update(struct demo_net *n)
{
	for (int l = 0; l < LAYERS; l++) {
		float *w = alloy_tensor_raw_mutable_data(blob(n, "fc%d_w", l),
							 F32);
		float *b = alloy_tensor_raw_mutable_data(blob(n, "fc%d_b", l),
							 F32);
		const float *gw =
			alloy_tensor_data(blob(n, "fc%d_w_grad", l), F32);
		const float *gb =
			alloy_tensor_data(blob(n, "fc%d_b_grad", l), F32);

		if (!w || !b || !gw || !gb)
			return -ENOMEM;
		for (int64_t i = 0; i < widths[l + 1] * widths[l]; i++)
			w[i] -= LEARNING * gw[i];
		for (int64_t i = 0; i < widths[l + 1]; i++)
			b[i] -= LEARNING * gb[i];
	}
	return 0;
}

/* Append the loss (extend by one row); keep the last HISTORY of them. */
static int record_loss(struct demo_net *n, float loss)
{
	struct alloy_tensor *h = blob(n, "loss_history");
	int64_t zero = 0;
	float *p;

	if (!h)
		return -ENOMEM;
	if (alloy_tensor_numel(h) < 0 &&
	    (alloy_tensor_resize(h, &zero, 1) ||
	     !alloy_tensor_raw_mutable_data(h, F32)))
		return -ENOMEM;
	if (alloy_tensor_extend(h, 1, 50))
		return -ENOMEM;
	p = alloy_tensor_raw_mutable_data(h, F32);
	if (!p)
		return -ENOMEM;
	p[alloy_tensor_numel(h) - 1] = loss;
	if (alloy_tensor_dim(h, 0) > 2 * HISTORY)
		return alloy_tensor_shrink_to(h, HISTORY);
	return 0;
}

/* The synthetic batch: points whose label is the sign pattern they show. */
static int fill_batch(struct demo_net *n, int64_t batch)
{
	float *x = shape2(blob(n, "data"), batch, widths[0]);
	struct alloy_tensor *lt = blob(n, "label");
	int64_t dims[1] = { batch };
	int32_t *label;

	if (!x || !lt || alloy_tensor_resize(lt, dims, 1))
		return -ENOMEM;
	label = alloy_tensor_raw_mutable_data(lt, I32);
	if (!label)
		return -ENOMEM;
	for (int64_t r = 0; r < batch; r++) {
		int32_t k =
			(int32_t)((n->rng >> 33) % (uint64_t)widths[LAYERS]);

		for (int64_t i = 0; i < widths[0]; i++)
			x[r * widths[0] + i] = next_uniform(&n->rng) +
					       (i % widths[LAYERS] == k);
		label[r] = k;
	}
	return 0;
}

int demo_net_step(struct demo_net *n, int64_t batch, float *loss)
{
	struct alloy_tensor *dy_t;
	float *dy;
	int rc;

	rc = fill_batch(n, batch);
	if (!rc)
		rc = forward(n, batch);
	if (rc)
		return rc;
	dy_t = alloy_tensor_new(n->dev);
	dy = shape2(dy_t, batch, widths[LAYERS]);
	if (!dy) {
		alloy_tensor_unref(dy_t);
		return -ENOMEM;
	}
	*loss = softmax_loss(
		alloy_tensor_data(blob(n, "fc%d", LAYERS - 1), F32),
		alloy_tensor_data(blob(n, "label"), I32), dy, batch,
		widths[LAYERS]);
	for (int l = LAYERS - 1; l >= 0 && !rc; l--)
		rc = backward_layer(n, l, batch, &dy_t);
	alloy_tensor_unref(dy_t);
	if (!rc)
		rc = update(n);
	if (!rc)
		rc = record_loss(n, *loss);
	/* A deep snapshot of the first layer's weights every 4th step. */
	if (!rc && n->steps % 4 == 0)
		rc = alloy_tensor_copy_from(blob(n, "fc%d_w_snapshot", 0),
					    blob(n, "fc%d_w", 0));
	n->steps++;
	return rc;
}

long demo_net_blobs(const struct demo_net *n)
{
	return (long)alloy_workspace_size(n->ws);
}

void demo_net_free(struct demo_net *n)
{
	if (!n)
		return;
	alloy_workspace_free(n->ws);
	free(n);
}
