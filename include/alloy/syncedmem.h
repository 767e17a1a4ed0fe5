/* SPDX-License-Identifier: MIT */
/*
 * alloy/syncedmem.h - memory mirrored between the host and a CUDA device
 * (Caffe's SyncedMemory, seed 004).
 *
 * A SyncedMemory holds size bytes that live on the host, on the device,
 * or both, and knows which copy is current (its head):
 *
 *   UNINITIALIZED  nothing allocated yet
 *   HEAD_AT_CPU    the host copy is current (the device copy is stale)
 *   HEAD_AT_GPU    the device copy is current
 *   SYNCED         both are equal
 *
 * cpu_data/gpu_data return a readable pointer, allocating (zero-filled)
 * on first touch and copying when the other side is current, after which
 * the head is SYNCED.  mutable_cpu_data/mutable_gpu_data do the same and
 * then move the head to their side, since the caller is about to write.
 *
 * Memory comes from the registry's current defaults: device memory from
 * the default cuda allocator of the memory's device, host memory from the
 * default cuda_host (pinned) allocator when one is set (with CUDA present
 * and none set, the configured cuda_host allocator is tried once), else
 * the CPU default.  Copies go through the cuda context (alloy_copy_bytes), so
 * the same code runs on a GPU and on the simulated device.
 *
 * Functions returning pointers return NULL on failure with the error
 * message set (and the head unchanged); for size 0 they return NULL
 * without error.
 */
#ifndef ALLOY_SYNCEDMEM_H
#define ALLOY_SYNCEDMEM_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum alloy_synced_head {
	ALLOY_SYNCED_UNINITIALIZED = 0,
	ALLOY_SYNCED_HEAD_AT_CPU,
	ALLOY_SYNCED_HEAD_AT_GPU,
	ALLOY_SYNCED_SYNCED,
};

struct alloy_syncedmem;

/* size bytes mirrored with CUDA device `device`.  0 or -EINVAL/-ENOMEM. */
int alloy_syncedmem_create(size_t size, int device,
			   struct alloy_syncedmem **out);
/* Frees what it owns (not memory given by set_*_data).  NULL-safe. */
void alloy_syncedmem_destroy(struct alloy_syncedmem *m);

size_t alloy_syncedmem_size(const struct alloy_syncedmem *m);
enum alloy_synced_head alloy_syncedmem_head(const struct alloy_syncedmem *m);
/* The device type of the host copy: cpu, or cuda_host when pinned. */
int alloy_syncedmem_host_type(const struct alloy_syncedmem *m);

const void *alloy_syncedmem_cpu_data(struct alloy_syncedmem *m);
const void *alloy_syncedmem_gpu_data(struct alloy_syncedmem *m);
void *alloy_syncedmem_mutable_cpu_data(struct alloy_syncedmem *m);
void *alloy_syncedmem_mutable_gpu_data(struct alloy_syncedmem *m);

/*
 * Use caller memory (not freed by destroy) as the host / device copy;
 * the head moves to that side.  -EINVAL for NULL data.
 */
int alloy_syncedmem_set_cpu_data(struct alloy_syncedmem *m, void *data);
int alloy_syncedmem_set_gpu_data(struct alloy_syncedmem *m, void *data);

/*
 * Queue the host->device copy on stream (the head must be HEAD_AT_CPU:
 * -EINVAL otherwise) and mark the memory SYNCED.  The caller orders later
 * device work after stream.
 */
int alloy_syncedmem_async_gpu_push(struct alloy_syncedmem *m, void *stream);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_SYNCEDMEM_H */
