// SPDX-License-Identifier: MIT
/*
 * interop/torch/allocator.cc - a c10::Allocator over alloy, installed as
 * PyTorch's CPU allocator (alloy/torch.h).
 *
 * C++ only because c10's allocator interface is a C++ class; everything
 * else is alloy's C API.  A c10 DataPtr's deleter gets one pointer, so
 * blocks come from the plain-pointer API, which finds a block's allocator
 * and size from the pointer alone: alloy_free needs nothing else, and the
 * block goes back to the allocator that made it even after ALLOY_CONF's
 * default has been swapped.
 */
#include <cerrno>
#include <mutex>

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/core/alignment.h>
#include <c10/util/Exception.h>

#include <alloy/error.h>
#include <alloy/plain.h>
#include <alloy/torch.h>

namespace {

void alloy_delete(void *p)
{
	alloy_free(p);
}

struct AlloyCPUAllocator final : public c10::Allocator {
	c10::DataPtr allocate(size_t n) const override
	{
		const c10::Device cpu(c10::DeviceType::CPU);

		// c10's own gives no memory for 0 bytes; neither do we.
		if (n == 0)
			return { nullptr, nullptr, &alloy_delete, cpu };
		void *p = alloy_aligned_alloc(c10::gAlignment, n);
		TORCH_CHECK(p, "alloy: could not allocate ", n,
			    " bytes for a CPU tensor: ", alloy_last_error());
		return { p, p, &alloy_delete, cpu };
	}

	c10::DeleterFnPtr raw_deleter() const override
	{
		return &alloy_delete;
	}
};

AlloyCPUAllocator alloy_cpu;
c10::Allocator *previous;
std::mutex lock;

} // namespace

extern "C" int alloy_torch_enable(void)
{
	std::lock_guard<std::mutex> hold(lock);
	c10::Allocator *now = c10::GetCPUAllocator();

	if (now == &alloy_cpu)
		return 0;
	c10::SetCPUAllocator(&alloy_cpu, 0);
	// SetCPUAllocator refuses silently when a higher priority holds.
	if (c10::GetCPUAllocator() != &alloy_cpu)
		return -EBUSY;
	previous = now;
	return 0;
}

extern "C" int alloy_torch_disable(void)
{
	std::lock_guard<std::mutex> hold(lock);

	if (c10::GetCPUAllocator() == &alloy_cpu && previous)
		c10::SetCPUAllocator(previous, 0);
	return 0;
}

extern "C" int alloy_torch_enabled(void)
{
	return c10::GetCPUAllocator() == &alloy_cpu;
}
