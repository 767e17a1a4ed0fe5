# SPDX-License-Identifier: MIT
"""PyTorch's CPU tensors on alloy (liballoy_torch: a c10::Allocator over
alloy's CPU default, set with c10::SetCPUAllocator).

Process-wide, as PyTorch's allocator is.  Tensors keep the deleter of the
allocator that made them, so enable() and disable() are safe at any time.
"""
from . import _alloy


def enable():
    """Make alloy PyTorch's CPU allocator (imports torch)."""
    import torch  # noqa: F401  (loads the libc10 the adapter binds to)
    _alloy._torch_enable()


def disable():
    """Give PyTorch its own CPU allocator back."""
    _alloy._torch_disable()


def enabled():
    """Whether PyTorch's CPU allocator is alloy's."""
    return _alloy._torch_enabled()


def library():
    """The path of the adapter library, or None when alloy was built
    without it."""
    return _alloy._torch_library()
