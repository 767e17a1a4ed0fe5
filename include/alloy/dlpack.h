/* SPDX-License-Identifier: MIT */
/*
 * alloy/dlpack.h - alloy tensors to and from DLPack, without a copy.
 *
 * DLPack (dlpack/dlpack.h, Debian's libdlpack-dev) is the exchange format
 * of NumPy, PyTorch, JAX, CuPy and others: a DLManagedTensor describes a
 * buffer (pointer, device, type, shape, strides) and carries the deleter
 * its producer wants called when the consumer is done with it.
 *
 * Export hands out a DLManagedTensor over a tensor's buffer that holds a
 * reference to the tensor's storage: the memory stays alive, whatever
 * happens to the tensor, until the consumer calls the deleter (once).
 * Import makes a tensor whose storage is the producer's memory: when the
 * last tensor using it lets go, the producer's deleter runs, exactly once.
 *
 * Types: the fixed-width integers, float16, bfloat16, float, double, and
 * complex64/complex128 (registered as POD types on first use).  bool is
 * refused, as NumPy 1.24 and PyTorch 1.13 refuse it (DLPack 0.6 has no
 * boolean code; with a header of DLPack 0.8 or later it goes as kDLBool).
 * string, tensor and user types hold pointers or objects DLPack cannot
 * describe and are refused.  Devices: cpu, cuda (with its index) and
 * cuda_host.  Every refusal is -ENOTSUP, -ENODEV or -EINVAL with a
 * message naming what was refused (alloy_last_error()).
 *
 * This header is installed only when liballoy was built with dlpack.h.
 */
#ifndef ALLOY_DLPACK_H
#define ALLOY_DLPACK_H

#include <dlpack/dlpack.h>
#include <alloy/device.h>
#include <alloy/tensor.h>
#include <alloy/typemeta.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A DLManagedTensor over t's buffer, C-contiguous with explicit strides.
 * A tensor whose buffer was not made yet (allocation is lazy) gets it now.
 * The storage stays referenced until (*out)->deleter(*out), which the
 * consumer must call exactly once.  -EINVAL (no dims or no type),
 * -ENOTSUP (a type DLPack cannot carry), -ENOMEM.
 */
int alloy_dlpack_export(struct alloy_tensor *t, DLManagedTensor **out);

/*
 * A new tensor over m's memory (no copy), on the device m names.  m must
 * be C-contiguous (strides NULL or those of a row-major layout; dims of
 * size 1 may have any stride).  On success the tensor owns m: m->deleter
 * (if any) runs once, when the storage is released.  On failure m is
 * untouched and still the caller's: -EINVAL (malformed), -ENOTSUP (a type
 * alloy has no counterpart for, or a strided layout), -ENODEV (a device
 * type alloy does not have), -EOVERFLOW, -ENOMEM.
 */
int alloy_dlpack_import(DLManagedTensor *m, struct alloy_tensor **out);

/* The DLPack type of an alloy element type, or -ENOTSUP with a message. */
int alloy_dlpack_dtype(const struct alloy_type_meta *t, DLDataType *out);

/* The alloy element type of a DLPack type, or -ENOTSUP with a message. */
int alloy_dlpack_type_of(DLDataType dt, const struct alloy_type_meta **out);

/* An alloy device as a DLPack device, and back (-ENODEV otherwise). */
int alloy_dlpack_device(struct alloy_device d, DLDevice *out);
int alloy_dlpack_device_of(DLDevice d, struct alloy_device *out);

/* A DLPack device type's name ("CPU", "CUDA", "Vulkan", ...; "unknown"). */
const char *alloy_dlpack_device_name(int device_type);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_DLPACK_H */
