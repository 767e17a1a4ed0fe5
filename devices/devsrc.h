/* SPDX-License-Identifier: MIT */
/*
 * devices/devsrc.h - the device-memory source under the CUDA allocators and
 * the CUDA context.
 *
 * The caching allocator, the pinned host allocator, the plain `cuda`
 * allocator and the CUDA context hold policy only; every call that touches
 * a device goes through this small table.  Two sources implement it: the
 * CUDA runtime one (devices/cuda_runtime.c, only in the alloy_cuda
 * module) and a simulated one on host memory (devices/sim.c, in liballoy) whose
 * capacity and stream completion tests control.  So every line of policy runs
 * in CI without a GPU.
 *
 * Streams and events are opaque pointers; a NULL stream is the device's
 * default stream.  Every op returns 0 or a negative errno; the source sets
 * the thread's error message itself (it knows the runtime's words).
 *
 * Not installed: the module is built in-tree and reaches the policy code
 * through the ALLOY_PRIVATE functions declared here.
 */
#ifndef ALLOY_DEVICES_DEVSRC_H
#define ALLOY_DEVICES_DEVSRC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <alloy/allocator.h>
#include <alloy/cuda.h>

#define ALLOY_DEVSRC_PRIVATE __attribute__((visibility("default")))

enum alloy__copy_kind {
	ALLOY__H2D,
	ALLOY__D2H,
	ALLOY__D2D,
	ALLOY__H2H,
};

struct alloy__devsrc_ops {
	const char *name; /* "cuda" or "sim" */

	/* Device memory.  -ENOMEM when the device is out of memory. */
	int (*dev_malloc)(void *ctx, int device, size_t size, void **out);
	int (*dev_free)(void *ctx, int device, void *ptr);
	int (*mem_info)(void *ctx, int device, size_t *free_b, size_t *total);
	int (*device_count)(void *ctx, int *count);
	/* Set n bytes at ptr to byte, ordered on stream. */
	int (*dev_memset)(void *ctx, int device, void *ptr, int byte, size_t n,
			  void *stream);
	/* Copy; stream NULL and sync true: returns when the copy is done. */
	int (*copy)(void *ctx, int device, void *dst, const void *src, size_t n,
		    enum alloy__copy_kind kind, void *stream, bool sync);

	/*
	 * Stream-ordered device memory (cudaMallocAsync): usable by work on
	 * stream queued after the call; freed memory may serve later work
	 * on the same stream at once.
	 */
	int (*dev_malloc_async)(void *ctx, int device, size_t size,
				void *stream, void **out);
	int (*dev_free_async)(void *ctx, int device, void *ptr, void *stream);

	/* Page-locked host memory. */
	int (*host_malloc)(void *ctx, size_t size, void **out);
	int (*host_free)(void *ctx, void *ptr);

	/* Events: record the stream's work so far; query without waiting. */
	int (*event_create)(void *ctx, int device, void **ev);
	int (*event_destroy)(void *ctx, void *ev);
	int (*event_record)(void *ctx, void *ev, void *stream);
	/* 1 when the recorded work is done, 0 when not yet, < 0 error. */
	int (*event_query)(void *ctx, void *ev);
	int (*event_synchronize)(void *ctx, void *ev);

	/* Wait for all work on one stream / on the whole device. */
	int (*stream_synchronize)(void *ctx, void *stream);
	int (*device_synchronize)(void *ctx, int device);

	/*
	 * Virtual memory (cuMemAddressReserve and friends), for expandable
	 * segments; optional (NULL: the source has none).  A range of
	 * addresses is reserved on device without memory behind it;
	 * physical memory is created in pieces (handles: -ENOMEM when the
	 * device is out of memory), mapped at an address of a reserved
	 * range, made accessible to the device, and later unmapped and
	 * released.  Sizes and addresses are multiples of 2 MiB.
	 */
	int (*va_reserve)(void *ctx, int device, size_t size, void **out);
	int (*va_release)(void *ctx, void *ptr, size_t size);
	int (*mem_create)(void *ctx, int device, size_t size, void **handle);
	int (*mem_release)(void *ctx, void *handle);
	int (*mem_map)(void *ctx, void *ptr, size_t size, void *handle);
	int (*mem_set_access)(void *ctx, int device, void *ptr, size_t size);
	int (*mem_unmap)(void *ctx, void *ptr, size_t size);
};

struct alloy__devsrc {
	const struct alloy__devsrc_ops *ops;
	void *ctx;
};

/* ---- the simulated source (devices/sim.c) --------------------------- */

struct alloy_cuda_sim;

/*
 * liballoy's own simulated device (cuda_caching_sim, cuda_host_sim): a
 * static object, so that a process which never touches CUDA makes no
 * device and no allocation for it, and its start cannot fail for it.
 */
struct alloy_cuda_sim *alloy__cuda_sim_builtin_device(void);

/* The source view of a simulator (see alloy/cuda.h for its controls). */
ALLOY_DEVSRC_PRIVATE struct alloy__devsrc
alloy__cuda_sim_source(struct alloy_cuda_sim *sim);

/* ---- the thread's device and stream (devices/current.c) ------------ */

/*
 * alloy_cuda_set_device() and friends are public (alloy/cuda.h); they live
 * here, below both the CUDA allocators and the CUDA context, which both
 * ask which device and stream the calling thread is on.
 */

/*
 * size bytes of the CUDA default on device, ordered on stream, with
 * ALLOY_ALLOC_* flags: the calling thread's device and stream are set for
 * the call and put back after it, and *out is labelled with the device.
 * What alloy_alloc_default returns, or -ENODEV for a device out of range.
 * For the CUDA context, SyncedMemory and the plain device pointers.
 */
__attribute__((visibility("hidden"))) int
alloy__cuda_alloc_on(int device, void *stream, size_t size, unsigned flags,
		     struct alloy_data_ptr *out);

#endif /* ALLOY_DEVICES_DEVSRC_H */
