// SPDX-License-Identifier: MIT
/*
 * kernel/device.c - device type names.
 */
#include <string.h>

#include "base.h"

static const char *const names[ALLOY_DEVICE_TYPE_COUNT] = {
	[ALLOY_DEVICE_CPU] = "cpu",
	[ALLOY_DEVICE_CUDA] = "cuda",
	[ALLOY_DEVICE_CUDA_HOST] = "cuda_host",
};

const char *alloy_device_type_name(int type)
{
	if (type < 0 || type >= ALLOY_DEVICE_TYPE_COUNT)
		return NULL;
	return names[type];
}

int alloy_device_type_from_name(const char *name)
{
	for (int i = 0; name && i < ALLOY_DEVICE_TYPE_COUNT; i++)
		if (strcmp(names[i], name) == 0)
			return i;
	return alloy__error(-EINVAL, __func__, "unknown device type \"%s\"",
			    name ? name : "(null)");
}
