// SPDX-License-Identifier: MIT
/*
 * interop/dlpack_types.c - which alloy element type and device each DLPack
 * type and device is, both ways, with a message for every refusal.
 *
 * One table of types serves both directions, so export and import can
 * never disagree.  alloy has no complex types of its own; the two DLPack
 * carries (NumPy's and PyTorch's complex64 and complex128) are registered
 * as POD types the first time a table lookup needs them, so complex
 * arrays come through instead of being refused.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <alloy/dlpack.h>

#include "kernel/base.h"

struct type_row {
	uint8_t code, bits;
	enum alloy_type_id id; /* 0: a complex type, found by name */
	const char *name;
};

static const struct type_row types[] = {
	{ kDLInt, 8, ALLOY_TYPE_INT8, "int8" },
	{ kDLInt, 16, ALLOY_TYPE_INT16, "int16" },
	{ kDLInt, 32, ALLOY_TYPE_INT32, "int32" },
	{ kDLInt, 64, ALLOY_TYPE_INT64, "int64" },
	{ kDLUInt, 8, ALLOY_TYPE_UINT8, "uint8" },
	{ kDLUInt, 16, ALLOY_TYPE_UINT16, "uint16" },
	{ kDLUInt, 32, ALLOY_TYPE_UINT32, "uint32" },
	{ kDLUInt, 64, ALLOY_TYPE_UINT64, "uint64" },
	{ kDLFloat, 16, ALLOY_TYPE_FLOAT16, "float16" },
	{ kDLFloat, 32, ALLOY_TYPE_FLOAT, "float" },
	{ kDLFloat, 64, ALLOY_TYPE_DOUBLE, "double" },
	{ kDLBfloat, 16, ALLOY_TYPE_BFLOAT16, "bfloat16" },
#if DLPACK_VERSION >= 80
	{ kDLBool, 8, ALLOY_TYPE_BOOL, "bool" },
#endif
	{ kDLComplex, 64, 0, "complex64" },
	{ kDLComplex, 128, 0, "complex128" },
};

#define NTYPES (sizeof(types) / sizeof(types[0]))

static const char *const code_names[] = {
	[kDLInt] = "int",	[kDLUInt] = "uint",
	[kDLFloat] = "float",	[kDLOpaqueHandle] = "opaque handle",
	[kDLBfloat] = "bfloat", [kDLComplex] = "complex",
};

static const char *code_name(unsigned code)
{
	if (code < sizeof(code_names) / sizeof(code_names[0]) &&
	    code_names[code])
		return code_names[code];
	return "unknown code";
}

/* ---- complex types, registered once ---------------------------------- */

static struct {
	pthread_once_t once;
	const struct alloy_type_meta *meta[2]; /* complex64, complex128 */
	int rc;
	char why[160];
} cx = { .once = PTHREAD_ONCE_INIT };

/* Register name, or take the one registered already if it has our size. */
static int complex_type(const char *name, size_t itemsize,
			const struct alloy_type_meta **out)
{
	struct alloy_type_meta m = { .name = name, .itemsize = itemsize };
	const struct alloy_type_meta *have;
	int rc = alloy_type_register(&m, out);

	if (rc != -EEXIST)
		return rc;
	have = alloy_type_find(name);
	if (!have || have->itemsize != itemsize || !alloy_type_is_pod(have)) {
		snprintf(
			cx.why, sizeof(cx.why),
			"a type named \"%s\" is registered with itemsize %zu%s; DLPack's has %zu and is plain data",
			name, have ? have->itemsize : 0,
			have && !alloy_type_is_pod(have)
				? " and element functions"
				: "",
			itemsize);
		return -EEXIST;
	}
	*out = have;
	return 0;
}

static void register_complex(void)
{
	cx.rc = complex_type("complex64", 8, &cx.meta[0]);
	if (!cx.rc)
		cx.rc = complex_type("complex128", 16, &cx.meta[1]);
	if (cx.rc && !cx.why[0])
		snprintf(cx.why, sizeof(cx.why), "%s", alloy_last_error());
}

/* The alloy type of a table row; NULL + message when it cannot be had. */
static const struct alloy_type_meta *row_type(const struct type_row *r,
					      const char *func)
{
	if (r->id)
		return alloy_type(r->id);
	pthread_once(&cx.once, register_complex);
	if (cx.rc) {
		alloy__error(cx.rc, func, "cannot have the %s type: %s",
			     r->name, cx.why);
		return NULL;
	}
	return cx.meta[r->bits == 128];
}

/* ---- types ----------------------------------------------------------- */

int alloy_dlpack_dtype(const struct alloy_type_meta *t, DLDataType *out)
{
	ALLOY_ENFORCE(t && out, -EINVAL, "%s is NULL", t ? "out" : "type");
	for (size_t i = 0; i < NTYPES; i++) {
		const struct type_row *r = &types[i];

		/* A complex row is looked at only for its own name. */
		if (r->id ? alloy_type(r->id) == t
			  : !strcmp(t->name, r->name) &&
				    row_type(r, __func__) == t) {
			*out = (DLDataType){ .code = r->code,
					     .bits = r->bits,
					     .lanes = 1 };
			return 0;
		}
	}
	if (t == alloy_type(ALLOY_TYPE_BOOL))
		return alloy__error(
			-ENOTSUP, __func__,
			"bool: DLPack %d.%d has no boolean type code (kDLBool came in 0.8), and NumPy 1.24 and PyTorch 1.13 refuse bool too; convert to uint8 first",
			DLPACK_VERSION / 100, DLPACK_VERSION / 10 % 10);
	if (!alloy_type_is_pod(t))
		return alloy__error(
			-ENOTSUP, __func__,
			"%s: its elements are objects (%s), which DLPack cannot describe; it carries numbers only",
			alloy_type_name(t),
			t == alloy_type(ALLOY_TYPE_STRING)
				? "pointers to heap strings"
			: t == alloy_type(ALLOY_TYPE_TENSOR)
				? "tensor handles"
				: "with element functions");
	return alloy__error(
		-ENOTSUP, __func__,
		"%s is a user type (%zu bytes per element); DLPack carries only the built-in numeric types",
		alloy_type_name(t), t->itemsize);
}

int alloy_dlpack_type_of(DLDataType dt, const struct alloy_type_meta **out)
{
	ALLOY_ENFORCE(out, -EINVAL, "out is NULL");
	ALLOY_ENFORCE(dt.lanes == 1, -ENOTSUP,
		      "%s%u x %u lanes: alloy has no vector element types",
		      code_name(dt.code), dt.bits, dt.lanes);
	for (size_t i = 0; i < NTYPES; i++) {
		if (types[i].code != dt.code || types[i].bits != dt.bits)
			continue;
		*out = row_type(&types[i], __func__);
		return *out ? 0 : -EEXIST;
	}
	return alloy__error(
		-ENOTSUP, __func__,
		"DLPack type %s of %u bits (code %u) has no alloy element type",
		code_name(dt.code), dt.bits, dt.code);
}

/* ---- devices --------------------------------------------------------- */

static const char *const device_names[] = {
	[kDLCPU] = "CPU",
	[kDLCUDA] = "CUDA",
	[kDLCUDAHost] = "CUDA host",
	[kDLOpenCL] = "OpenCL",
	[kDLVulkan] = "Vulkan",
	[kDLMetal] = "Metal",
	[kDLVPI] = "VPI",
	[kDLROCM] = "ROCm",
	[kDLROCMHost] = "ROCm host",
	[kDLExtDev] = "ExtDev",
	[kDLCUDAManaged] = "CUDA managed",
};

const char *alloy_dlpack_device_name(int device_type)
{
	if (device_type >= 0 &&
	    device_type <
		    (int)(sizeof(device_names) / sizeof(device_names[0])) &&
	    device_names[device_type])
		return device_names[device_type];
	return "unknown";
}

int alloy_dlpack_device(struct alloy_device d, DLDevice *out)
{
	ALLOY_ENFORCE(out, -EINVAL, "out is NULL");
	ALLOY_ENFORCE(d.index >= 0, -ENODEV, "device index %d is negative",
		      d.index);
	switch (d.type) {
	case ALLOY_DEVICE_CPU:
		*out = (DLDevice){ kDLCPU, 0 };
		return 0;
	case ALLOY_DEVICE_CUDA:
		*out = (DLDevice){ kDLCUDA, d.index };
		return 0;
	case ALLOY_DEVICE_CUDA_HOST:
		*out = (DLDevice){ kDLCUDAHost, 0 };
		return 0;
	}
	return alloy__error(-ENODEV, __func__,
			    "alloy device type %d has no DLPack device",
			    d.type);
}

int alloy_dlpack_device_of(DLDevice d, struct alloy_device *out)
{
	ALLOY_ENFORCE(out, -EINVAL, "out is NULL");
	switch ((int)d.device_type) {
	case kDLCPU:
		*out = ALLOY_CPU;
		return 0;
	case kDLCUDA:
		ALLOY_ENFORCE(d.device_id >= 0 && d.device_id <= INT16_MAX,
			      -ENODEV, "CUDA device id %d is out of range",
			      d.device_id);
		*out = (struct alloy_device){ ALLOY_DEVICE_CUDA,
					      (int16_t)d.device_id };
		return 0;
	case kDLCUDAHost:
		*out = (struct alloy_device){ ALLOY_DEVICE_CUDA_HOST, 0 };
		return 0;
	}
	return alloy__error(
		-ENODEV, __func__,
		"DLPack device type %d (%s) is not one alloy has: it takes CPU (%d), CUDA (%d) and CUDA host (%d)",
		(int)d.device_type, alloy_dlpack_device_name(d.device_type),
		kDLCPU, kDLCUDA, kDLCUDAHost);
}
