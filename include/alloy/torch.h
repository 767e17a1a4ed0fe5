/* SPDX-License-Identifier: MIT */
/*
 * alloy/torch.h - PyTorch's CPU tensors on alloy (liballoy_torch).
 *
 * The adapter is a c10::Allocator whose blocks come from alloy's CPU
 * default through the plain-pointer API (alloy/plain.h), 64-byte aligned
 * as c10 wants, so ALLOY_CONF picks the backend and the reporter counts
 * torch.empty() and every other CPU tensor PyTorch makes.  It is installed
 * with c10::SetCPUAllocator at priority 0, the priority of c10's own.
 *
 * Tensors keep the deleter of the allocator that made them: switching
 * back and forth is safe at any moment, and a tensor made before the
 * switch goes back to c10's allocator.
 *
 * The library links libc10; a C or C++ program, or Python through
 * alloy.torch.enable(), calls these once libc10 is loaded.
 */
#ifndef ALLOY_TORCH_H
#define ALLOY_TORCH_H

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Make alloy PyTorch's CPU allocator.  0 (also when it is already), or
 * -EBUSY when an allocator set with a higher priority keeps the place.
 */
int alloy_torch_enable(void);

/* Give back the CPU allocator that was in place before; 0. */
int alloy_torch_disable(void);

/* 1 while PyTorch's CPU allocator is alloy's, else 0. */
int alloy_torch_enabled(void);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_TORCH_H */
