// SPDX-License-Identifier: MIT
/*
 * tensor/syncedmem.c - SyncedMemory: one buffer, a host and a device copy,
 * and a head saying which is current (see alloy/syncedmem.h).
 *
 * The state machine is Caffe's: bring() (its to_cpu and to_gpu) brings a
 * side up to date (allocating zero-filled memory on first touch, copying
 * when the other side is ahead) and the accessors move the head.  Both copies
 * are DataPtrs, so each returns to the allocator that made it whatever the
 * defaults are by the time the memory is destroyed.
 */
#include <stdlib.h>

#include <alloy/cuda.h>
#include <alloy/syncedmem.h>

#include "kernel/base.h"
#include "devices/devsrc.h"

struct alloy_syncedmem {
	size_t size;
	int device; /* CUDA device index */
	enum alloy_synced_head head;
	struct alloy_data_ptr cpu; /* wrapped without deleter when not owned */
	struct alloy_data_ptr gpu;
};

int alloy_syncedmem_create(size_t size, int device,
			   struct alloy_syncedmem **out)
{
	struct alloy_syncedmem *m;

	ALLOY_ENFORCE(out, -EINVAL, "out is NULL");
	ALLOY_ENFORCE(device >= 0, -EINVAL, "device %d is negative", device);
	m = calloc(1, sizeof(*m));
	ALLOY_ENFORCE(m, -ENOMEM, "no memory for a SyncedMemory");
	m->size = size;
	m->device = device;
	*out = m;
	return 0;
}

void alloy_syncedmem_destroy(struct alloy_syncedmem *m)
{
	if (!m)
		return;
	alloy_data_ptr_free(&m->cpu);
	alloy_data_ptr_free(&m->gpu);
	free(m);
}

size_t alloy_syncedmem_size(const struct alloy_syncedmem *m)
{
	return m ? m->size : 0;
}

enum alloy_synced_head alloy_syncedmem_head(const struct alloy_syncedmem *m)
{
	return m ? m->head : ALLOY_SYNCED_UNINITIALIZED;
}

int alloy_syncedmem_host_type(const struct alloy_syncedmem *m)
{
	return m && m->cpu.ptr ? m->cpu.device.type : ALLOY_DEVICE_CPU;
}

static struct alloy_device gpu_dev(const struct alloy_syncedmem *m)
{
	return (struct alloy_device){ ALLOY_DEVICE_CUDA, (int16_t)m->device };
}

/*
 * The device type for host copies: cuda_host (pinned, so that copies can
 * overlap) when it has a default -- the loader installs the configured one
 * when the CUDA module registers it -- else plain CPU memory.
 */
static int host_type(void)
{
	return alloy_get_default(ALLOY_DEVICE_CUDA_HOST)
		       ? ALLOY_DEVICE_CUDA_HOST
		       : ALLOY_DEVICE_CPU;
}

/* Allocate one side; device memory is on m's device. */
static int alloc_side(struct alloy_syncedmem *m, bool gpu, unsigned flags)
{
	if (!gpu)
		return alloy_alloc_default(host_type(), m->size, flags,
					   &m->cpu);
	return alloy__cuda_alloc_on(m->device, alloy_cuda_current_stream(),
				    m->size, flags, &m->gpu);
}

/*
 * Caffe's to_cpu()/to_gpu(): bring one side up to date.  First touch
 * allocates it zero-filled; when the other side is ahead, copy from it.
 * Pinned or not, the host copy is host memory to the context.
 */
static int bring(struct alloy_syncedmem *m, bool gpu)
{
	struct alloy_data_ptr *mine = gpu ? &m->gpu : &m->cpu;
	struct alloy_data_ptr *other = gpu ? &m->cpu : &m->gpu;
	struct alloy_device mine_dev = gpu ? gpu_dev(m) : ALLOY_CPU;
	struct alloy_device other_dev = gpu ? ALLOY_CPU : gpu_dev(m);
	enum alloy_synced_head behind =
		gpu ? ALLOY_SYNCED_HEAD_AT_CPU : ALLOY_SYNCED_HEAD_AT_GPU;
	int rc;

	if (m->head == ALLOY_SYNCED_UNINITIALIZED) {
		rc = alloc_side(m, gpu, ALLOY_ALLOC_ZERO);
		if (rc)
			return rc;
		m->head = gpu ? ALLOY_SYNCED_HEAD_AT_GPU
			      : ALLOY_SYNCED_HEAD_AT_CPU;
		return 0;
	}
	if (m->head != behind)
		return 0; /* this side is current already */
	if (!mine->ptr && m->size) {
		rc = alloc_side(m, gpu, 0);
		if (rc)
			return rc;
	}
	rc = alloy_copy_bytes(m->size, other->ptr, other_dev, mine->ptr,
			      mine_dev);
	if (rc)
		return rc;
	m->head = ALLOY_SYNCED_SYNCED;
	return 0;
}

/* Bring one side up to date; a writer then moves the head to it. */
static void *sync_side(struct alloy_syncedmem *m, const char *func, bool gpu,
		       bool write)
{
	if (!m) {
		alloy__error(-EINVAL, func, "m is NULL");
		return NULL;
	}
	if (bring(m, gpu))
		return NULL;
	if (write)
		m->head = gpu ? ALLOY_SYNCED_HEAD_AT_GPU
			      : ALLOY_SYNCED_HEAD_AT_CPU;
	return gpu ? m->gpu.ptr : m->cpu.ptr;
}

const void *alloy_syncedmem_cpu_data(struct alloy_syncedmem *m)
{
	return sync_side(m, __func__, false, false);
}

const void *alloy_syncedmem_gpu_data(struct alloy_syncedmem *m)
{
	return sync_side(m, __func__, true, false);
}

void *alloy_syncedmem_mutable_cpu_data(struct alloy_syncedmem *m)
{
	return sync_side(m, __func__, false, true);
}

void *alloy_syncedmem_mutable_gpu_data(struct alloy_syncedmem *m)
{
	return sync_side(m, __func__, true, true);
}

int alloy_syncedmem_set_cpu_data(struct alloy_syncedmem *m, void *data)
{
	ALLOY_ENFORCE(m && data, -EINVAL, "%s is NULL", m ? "data" : "m");
	alloy_data_ptr_free(&m->cpu);
	m->cpu = alloy_data_ptr_wrap(data, m->size, ALLOY_CPU, NULL, NULL);
	m->head = ALLOY_SYNCED_HEAD_AT_CPU;
	return 0;
}

int alloy_syncedmem_set_gpu_data(struct alloy_syncedmem *m, void *data)
{
	ALLOY_ENFORCE(m && data, -EINVAL, "%s is NULL", m ? "data" : "m");
	alloy_data_ptr_free(&m->gpu);
	m->gpu = alloy_data_ptr_wrap(data, m->size, gpu_dev(m), NULL, NULL);
	m->head = ALLOY_SYNCED_HEAD_AT_GPU;
	return 0;
}

int alloy_syncedmem_async_gpu_push(struct alloy_syncedmem *m, void *stream)
{
	int rc;

	ALLOY_ENFORCE(m, -EINVAL, "m is NULL");
	ALLOY_ENFORCE(m->head == ALLOY_SYNCED_HEAD_AT_CPU, -EINVAL,
		      "head is %d, not HEAD_AT_CPU (%d): nothing to push",
		      m->head, ALLOY_SYNCED_HEAD_AT_CPU);
	if (!m->gpu.ptr && m->size) {
		rc = alloc_side(m, true, 0);
		if (rc)
			return rc;
	}
	rc = alloy_copy_bytes_async(m->size, m->cpu.ptr, ALLOY_CPU, m->gpu.ptr,
				    gpu_dev(m), stream);
	if (rc)
		return rc;
	/* The device block is in use on stream: a free must wait for it. */
	if (stream && alloy_data_ptr_allocator(&m->gpu))
		alloy_cuda_record_stream(&m->gpu, stream);
	m->head = ALLOY_SYNCED_SYNCED;
	return 0;
}
