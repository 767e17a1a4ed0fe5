// SPDX-License-Identifier: MIT
/*
 * devices/cuda_runtime.c - the device-memory source on the CUDA runtime.
 *
 * Thin on purpose: each op is one or two runtime calls and the
 * translation of the runtime's error into an errno code and a message.
 * All policy is in liballoy (cuda_caching.c, cuda_host.c, ...), which
 * runs the same code over the simulated source in CI.  Only this file and
 * modules/cuda.c include CUDA headers; they are built into alloy_cuda.so.
 */
#include <errno.h>
#include <stdbool.h>
#include <cuda_runtime_api.h>
#include <alloy/plugin.h>

#include "devices/devsrc.h"
#include "devices/cuda_runtime.h"

/* Translate a runtime error: ENOMEM for out-of-memory, EIO otherwise. */
static int fail(cudaError_t e, const char *what)
{
	int err = e == cudaErrorMemoryAllocation ? -ENOMEM
		  : e == cudaErrorNoDevice || e == cudaErrorInvalidDevice
			  ? -ENODEV
			  : -EIO;

	/* Out-of-memory is not sticky: clear it so later calls succeed. */
	cudaGetLastError();
	return alloy_plugin_error(err, "%s: %s (%s)", what,
				  cudaGetErrorString(e), cudaGetErrorName(e));
}

static int check(cudaError_t e, const char *what)
{
	return e == cudaSuccess ? 0 : fail(e, what);
}

static int use_device(int device)
{
	int cur;
	cudaError_t e = cudaGetDevice(&cur);

	if (e == cudaSuccess && cur == device)
		return 0;
	e = cudaSetDevice(device);
	return e == cudaSuccess ? 0 : fail(e, "cudaSetDevice");
}

static int cu_dev_malloc(void *ctx, int device, size_t size, void **out)
{
	int rc = use_device(device);

	if (rc)
		return rc;
	return check(cudaMalloc(out, size), "cudaMalloc");
}

static int cu_dev_free(void *ctx, int device, void *ptr)
{
	int rc = use_device(device);

	if (rc)
		return rc;
	return check(cudaFree(ptr), "cudaFree");
}

/*
 * A created stream belongs to one device: cudaMallocAsync takes from the
 * pool of the stream's device and cudaFreeAsync orders on the stream, so
 * only the default streams, which are the current device's (NULL, and the
 * handles cudaStreamLegacy and cudaStreamPerThread), need the device made
 * current (two runtime calls a pair saved on the others).
 */
static int use_stream_device(int device, void *stream)
{
	cudaStream_t s = (cudaStream_t)stream;

	if (s && s != cudaStreamLegacy && s != cudaStreamPerThread)
		return 0;
	return use_device(device);
}

static int cu_dev_malloc_async(void *ctx, int device, size_t size, void *stream,
			       void **out)
{
	int rc = use_stream_device(device, stream);

	if (rc)
		return rc;
	return check(cudaMallocAsync(out, size, (cudaStream_t)stream),
		     "cudaMallocAsync");
}

static int cu_dev_free_async(void *ctx, int device, void *ptr, void *stream)
{
	int rc = use_stream_device(device, stream);

	if (rc)
		return rc;
	return check(cudaFreeAsync(ptr, (cudaStream_t)stream), "cudaFreeAsync");
}

static int cu_mem_info(void *ctx, int device, size_t *free_b, size_t *total)
{
	int rc = use_device(device);

	if (rc)
		return rc;
	return check(cudaMemGetInfo(free_b, total), "cudaMemGetInfo");
}

static int cu_device_count(void *ctx, int *count)
{
	return check(cudaGetDeviceCount(count), "cudaGetDeviceCount");
}

static int cu_dev_memset(void *ctx, int device, void *ptr, int byte, size_t n,
			 void *stream)
{
	int rc = use_device(device);

	if (rc)
		return rc;
	return check(cudaMemsetAsync(ptr, byte, n, (cudaStream_t)stream),
		     "cudaMemsetAsync");
}

static int cu_copy(void *ctx, int device, void *dst, const void *src, size_t n,
		   enum alloy__copy_kind kind, void *stream, bool sync)
{
	static const enum cudaMemcpyKind kinds[] = {
		[ALLOY__H2D] = cudaMemcpyHostToDevice,
		[ALLOY__D2H] = cudaMemcpyDeviceToHost,
		[ALLOY__D2D] = cudaMemcpyDeviceToDevice,
		[ALLOY__H2H] = cudaMemcpyHostToHost,
	};
	cudaError_t e;
	int rc = use_device(device);

	if (rc)
		return rc;
	if (sync && !stream) {
		e = cudaMemcpy(dst, src, n, kinds[kind]);
		return e == cudaSuccess ? 0 : fail(e, "cudaMemcpy");
	}
	e = cudaMemcpyAsync(dst, src, n, kinds[kind], (cudaStream_t)stream);
	if (e == cudaSuccess && sync)
		e = cudaStreamSynchronize((cudaStream_t)stream);
	return e == cudaSuccess ? 0 : fail(e, "cudaMemcpyAsync");
}

static int cu_host_malloc(void *ctx, size_t size, void **out)
{
	return check(cudaHostAlloc(out, size, cudaHostAllocDefault),
		     "cudaHostAlloc");
}

static int cu_host_free(void *ctx, void *ptr)
{
	return check(cudaFreeHost(ptr), "cudaFreeHost");
}

static int cu_event_create(void *ctx, int device, void **ev)
{
	int rc = use_device(device);

	if (rc)
		return rc;
	return check(cudaEventCreateWithFlags((cudaEvent_t *)ev,
					      cudaEventDisableTiming),
		     "cudaEventCreate");
}

static int cu_event_destroy(void *ctx, void *ev)
{
	return check(cudaEventDestroy((cudaEvent_t)ev), "cudaEventDestroy");
}

static int cu_event_record(void *ctx, void *ev, void *stream)
{
	return check(cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)stream),
		     "cudaEventRecord");
}

static int cu_event_query(void *ctx, void *ev)
{
	cudaError_t e = cudaEventQuery((cudaEvent_t)ev);

	if (e == cudaSuccess)
		return 1;
	if (e == cudaErrorNotReady) {
		cudaGetLastError(); /* not an error: do not leave it behind */
		return 0;
	}
	return fail(e, "cudaEventQuery");
}

static int cu_event_synchronize(void *ctx, void *ev)
{
	return check(cudaEventSynchronize((cudaEvent_t)ev),
		     "cudaEventSynchronize");
}

static int cu_stream_synchronize(void *ctx, void *stream)
{
	return check(cudaStreamSynchronize((cudaStream_t)stream),
		     "cudaStreamSynchronize");
}

static int cu_device_synchronize(void *ctx, int device)
{
	int rc = use_device(device);

	if (rc)
		return rc;
	return check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

static const struct alloy__devsrc_ops cuda_ops = {
	.name = "cuda",
	.dev_malloc = cu_dev_malloc,
	.dev_free = cu_dev_free,
	.dev_malloc_async = cu_dev_malloc_async,
	.dev_free_async = cu_dev_free_async,
	.mem_info = cu_mem_info,
	.device_count = cu_device_count,
	.dev_memset = cu_dev_memset,
	.copy = cu_copy,
	.host_malloc = cu_host_malloc,
	.host_free = cu_host_free,
	.event_create = cu_event_create,
	.event_destroy = cu_event_destroy,
	.event_record = cu_event_record,
	.event_query = cu_event_query,
	.event_synchronize = cu_event_synchronize,
	.stream_synchronize = cu_stream_synchronize,
	.device_synchronize = cu_device_synchronize,
	.va_reserve = alloy__cuda_va_reserve,
	.va_release = alloy__cuda_va_release,
	.mem_create = alloy__cuda_mem_create,
	.mem_release = alloy__cuda_mem_release,
	.mem_map = alloy__cuda_mem_map,
	.mem_set_access = alloy__cuda_mem_set_access,
	.mem_unmap = alloy__cuda_mem_unmap,
};

struct alloy__devsrc alloy__cuda_runtime_source(void)
{
	return (struct alloy__devsrc){ &cuda_ops, NULL };
}

int alloy__cuda_runtime_probe(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess) {
		cudaGetLastError();
		return alloy_plugin_error(-ENODEV, "no CUDA device: %s",
					  cudaGetErrorString(e));
	}
	if (n == 0)
		return alloy_plugin_error(-ENODEV,
					  "no CUDA device: 0 devices found");
	return 0;
}
