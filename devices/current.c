// SPDX-License-Identifier: MIT
/*
 * devices/current.c - the device and stream the calling thread works on
 * (cudaSetDevice's state, kept by alloy for its own code), which both the
 * CUDA allocators and the CUDA context read.
 */
#include "kernel/base.h"
#include "devices/devsrc.h"
#include <alloy/cuda.h>

#define CUDA_MAX_DEVICES 16

/*
 * Initial-exec TLS, like core's: cheap to reach, and small enough (all of
 * liballoy's is about 600 bytes) for glibc's static-TLS reserve when a
 * program such as Python loads liballoy late.
 */
static __thread int cur_device __attribute__((tls_model("initial-exec")));
static __thread void *cur_stream __attribute__((tls_model("initial-exec")));

int alloy_cuda_set_device(int device)
{
	ALLOY_ENFORCE(device >= 0 && device < CUDA_MAX_DEVICES, -ENODEV,
		      "device %d out of range 0..%d", device,
		      CUDA_MAX_DEVICES - 1);
	cur_device = device;
	return 0;
}

int alloy_cuda_current_device(void)
{
	return cur_device;
}

void alloy_cuda_set_stream(void *stream)
{
	cur_stream = stream;
}

void *alloy_cuda_current_stream(void)
{
	return cur_stream;
}

int alloy__cuda_alloc_on(int device, void *stream, size_t size, unsigned flags,
			 struct alloy_data_ptr *out)
{
	int prev_device = cur_device;
	void *prev_stream = cur_stream;
	int rc = alloy_cuda_set_device(device);

	if (rc)
		return rc;
	cur_stream = stream;
	rc = alloy_alloc_default(ALLOY_DEVICE_CUDA, size, flags, out);
	cur_stream = prev_stream;
	cur_device = prev_device;
	if (!rc)
		out->device = (struct alloy_device){ ALLOY_DEVICE_CUDA,
						     (int16_t)device };
	return rc;
}
