/* SPDX-License-Identifier: MIT */
/*
 * cli/demo_net.h - the training loop `alloy demo` runs: a small MLP on
 * the tensor layer, in a Workspace of named blobs.
 */
#ifndef ALLOY_CLI_DEMO_NET_H
#define ALLOY_CLI_DEMO_NET_H

#include <stdint.h>
#include <alloy/alloy.h>

struct demo_net;

/*
 * A net whose tensors live on dev (CPU, or a device whose memory the host
 * can reach, as the simulated one's).  NULL with the message set.
 */
struct demo_net *demo_net_new(struct alloy_device dev);

/*
 * One training step on a batch of `batch` rows: forward, loss, backward,
 * SGD update, loss history.  0 and *loss, or a negative errno.
 */
int demo_net_step(struct demo_net *n, int64_t batch, float *loss);

/* The batch size of step i: they change, so buffers grow and shrink. */
int64_t demo_net_batch(int step);

/* Blobs in its workspace. */
long demo_net_blobs(const struct demo_net *n);

void demo_net_free(struct demo_net *n);

#endif /* ALLOY_CLI_DEMO_NET_H */
