/* SPDX-License-Identifier: MIT */
/*
 * alloy/device.h - the kinds of memory alloy knows about.
 */
#ifndef ALLOY_DEVICE_H
#define ALLOY_DEVICE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum alloy_device_type {
	ALLOY_DEVICE_CPU = 0,	    /* ordinary host memory */
	ALLOY_DEVICE_CUDA = 1,	    /* device memory of a CUDA GPU */
	ALLOY_DEVICE_CUDA_HOST = 2, /* page-locked host memory for copies */
	ALLOY_DEVICE_TYPE_COUNT
};

/* A device: its type and, for devices with several units, the index. */
struct alloy_device {
	int16_t type;  /* enum alloy_device_type */
	int16_t index; /* 0 for the CPU */
};

#define ALLOY_CPU ((struct alloy_device){ ALLOY_DEVICE_CPU, 0 })

/* "cpu", "cuda", "cuda_host"; NULL for an unknown type. */
const char *alloy_device_type_name(int type);

/* The type for a name above, or -EINVAL. */
int alloy_device_type_from_name(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_DEVICE_H */
