# SPDX-License-Identifier: MIT
"""CUDA memory on alloy's caching allocators, as PyTorch shows its own.

    import alloy.cuda
    p = alloy.cuda.malloc(1 << 20)         # a block of the CUDA default
    segs = alloy.cuda.snapshot()           # torch.cuda.memory_snapshot()'s list
    alloy.cuda.dump_snapshot("snap.pickle")

The snapshot is taken of the CUDA default allocator (ALLOY_CONF=cuda:NAME)
or of the caching allocator named; it must be cuda_caching or
cuda_caching_sim (or one registered over a simulated device).  PyTorch's
viewer reads the pickle: python3 -m torch.cuda._memory_viz stats
snap.pickle.  See docs/CUDA.md.
"""
import pickle

from . import _alloy

__all__ = ["snapshot", "dump_snapshot", "malloc", "free"]


def snapshot(allocator=None):
    """The segments of a CUDA caching allocator, each a dict with device,
    address, total_size, allocated_size, active_size, requested_size,
    stream, segment_type, segment_pool_id, is_expandable, frames and
    blocks (address, size, requested_size, state, frames), as
    torch.cuda.memory_snapshot() returns them.  The allocator records no
    call stacks, so frames are empty."""
    return _alloy._cuda_snapshot(allocator)


def dump_snapshot(path, allocator=None):
    """Write snapshot(allocator) to path as a pickle PyTorch's memory
    viewer reads; returns the snapshot."""
    segs = snapshot(allocator)
    with open(path, "wb") as f:
        pickle.dump(segs, f, protocol=2)
    return segs


def malloc(size, device=0):
    """A block of size bytes of the CUDA default allocator on device, on
    the default stream, as an address (alloy_cuda_malloc)."""
    return _alloy._cuda_malloc(size, device)


def free(address):
    """Give back a block of malloc(); ValueError for any other address."""
    _alloy._cuda_free(address)
