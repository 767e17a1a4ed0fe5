// SPDX-License-Identifier: MIT
/*
 * devices/cuda_vmm.c - the driver's virtual-memory calls for the CUDA
 * runtime source: cuMemAddressReserve, cuMemCreate, cuMemMap,
 * cuMemSetAccess, cuMemUnmap, cuMemRelease, cuMemAddressFree.
 *
 * They are driver calls, which the runtime hands out by name
 * (cudaGetDriverEntryPoint), so the module links the runtime only, as
 * before.  A handle is the driver's CUmemGenericAllocationHandle carried
 * in a pointer.  Each op is one call and the translation of its error.
 */
#include <errno.h>
#include <stdint.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <alloy/plugin.h>

#include "devices/cuda_runtime.h"

static struct {
	int tried; /* 0 not yet, 1 found, -1 missing */
	CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr,
			    unsigned long long);
	CUresult (*address_free)(CUdeviceptr, size_t);
	CUresult (*create)(CUmemGenericAllocationHandle *, size_t,
			   const CUmemAllocationProp *, unsigned long long);
	CUresult (*release)(CUmemGenericAllocationHandle);
	CUresult (*map)(CUdeviceptr, size_t, size_t,
			CUmemGenericAllocationHandle, unsigned long long);
	CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *,
			       size_t);
	CUresult (*unmap)(CUdeviceptr, size_t);
	CUresult (*error_string)(CUresult, const char **);
} drv;

static int entry(const char *name, void **fn)
{
	enum cudaDriverEntryPointQueryResult q;
	cudaError_t e;

#if CUDART_VERSION >= 12050
	e = cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault,
					     &q);
#else
	e = cudaGetDriverEntryPoint(name, fn, cudaEnableDefault, &q);
#endif
	if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
		cudaGetLastError();
		return -1;
	}
	return 0;
}

/* Look the calls up once; the module's lock-free first use is benign:
 * every thread finds the same pointers. */
int alloy__cuda_vmm_available(void)
{
	if (!drv.tried) {
		int bad =
			entry("cuMemAddressReserve", (void **)&drv.reserve) |
			entry("cuMemAddressFree", (void **)&drv.address_free) |
			entry("cuMemCreate", (void **)&drv.create) |
			entry("cuMemRelease", (void **)&drv.release) |
			entry("cuMemMap", (void **)&drv.map) |
			entry("cuMemSetAccess", (void **)&drv.set_access) |
			entry("cuMemUnmap", (void **)&drv.unmap) |
			entry("cuGetErrorString", (void **)&drv.error_string);

		drv.tried = bad ? -1 : 1;
	}
	return drv.tried == 1;
}

static int drv_check(CUresult r, const char *what)
{
	const char *s = NULL;

	if (r == CUDA_SUCCESS)
		return 0;
	if (drv.error_string)
		drv.error_string(r, &s);
	return alloy_plugin_error(
		r == CUDA_ERROR_OUT_OF_MEMORY ? -ENOMEM : -EIO,
		"%s: %s (CUresult %d)", what, s ? s : "driver error", (int)r);
}

/*
 * The driver's calls act in the current context: make the device's
 * primary context current as the runtime's calls would.
 */
static int on_device(int device)
{
	int cur = -1;
	cudaError_t e = cudaGetDevice(&cur);

	if (e == cudaSuccess && cur == device)
		return 0;
	e = cudaSetDevice(device);
	if (e != cudaSuccess) {
		cudaGetLastError();
		return alloy_plugin_error(-ENODEV, "cudaSetDevice(%d): %s",
					  device, cudaGetErrorString(e));
	}
	return 0;
}

static int need(void)
{
	return alloy__cuda_vmm_available()
		       ? 0
		       : alloy_plugin_error(
				 -ENOTSUP,
				 "the CUDA driver has no virtual-memory calls");
}

int alloy__cuda_va_reserve(void *ctx, int device, size_t size, void **out)
{
	CUdeviceptr p = 0;
	int rc = need();

	if (!rc)
		rc = on_device(device);
	if (rc)
		return rc;
	rc = drv_check(drv.reserve(&p, size, 0, 0, 0), "cuMemAddressReserve");
	if (!rc)
		*out = (void *)(uintptr_t)p;
	return rc;
}

int alloy__cuda_va_release(void *ctx, void *ptr, size_t size)
{
	return need() ? -ENOTSUP
		      : drv_check(drv.address_free((CUdeviceptr)(uintptr_t)ptr,
						   size),
				  "cuMemAddressFree");
}

int alloy__cuda_mem_create(void *ctx, int device, size_t size, void **handle)
{
	CUmemAllocationProp prop = { 0 };
	CUmemGenericAllocationHandle h = 0;
	int rc = need();

	if (!rc)
		rc = on_device(device);
	if (rc)
		return rc;
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = device;
	rc = drv_check(drv.create(&h, size, &prop, 0), "cuMemCreate");
	if (!rc)
		*handle = (void *)(uintptr_t)h;
	return rc;
}

int alloy__cuda_mem_release(void *ctx, void *handle)
{
	return need() ? -ENOTSUP
		      : drv_check(
				drv.release((
					CUmemGenericAllocationHandle)(uintptr_t)
						    handle),
				"cuMemRelease");
}

int alloy__cuda_mem_map(void *ctx, void *ptr, size_t size, void *handle)
{
	return need() ? -ENOTSUP
		      : drv_check(
				drv.map((CUdeviceptr)(uintptr_t)ptr, size, 0,
					(CUmemGenericAllocationHandle)(uintptr_t)
						handle,
					0),
				"cuMemMap");
}

int alloy__cuda_mem_set_access(void *ctx, int device, void *ptr, size_t size)
{
	CUmemAccessDesc d = { 0 };

	if (need())
		return -ENOTSUP;
	d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	d.location.id = device;
	d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	return drv_check(
		drv.set_access((CUdeviceptr)(uintptr_t)ptr, size, &d, 1),
		"cuMemSetAccess");
}

int alloy__cuda_mem_unmap(void *ctx, void *ptr, size_t size)
{
	return need() ? -ENOTSUP
		      : drv_check(drv.unmap((CUdeviceptr)(uintptr_t)ptr, size),
				  "cuMemUnmap");
}
