#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A PyTorch transformer training step on expandable segments: torch's
own CUDA allocator with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True
against alloy's cuda_caching with expandable_segments:1 (through torch's
pluggable allocator, alloy_cuda_malloc / alloy_cuda_free), side by side.

    scripts/gpu-torch-expandable.py LIBALLOY [--steps N]

Each configuration runs in a process of its own (torch takes its CUDA
allocator once, before the first allocation) and prints every step's
loss exactly and its peak reserved and allocated bytes: torch's from
torch.cuda.max_memory_reserved/allocated, alloy's from its allocator's
statistics (alloy_allocator_stats).  Torch's own runs twice: when the two
runs' losses agree, alloy's must be the same, else the comparison is
skipped (a machine where the step is not deterministic).  The sequence
length changes every step, so the blocks change size as with real text.
Exit status 0, 1 when the losses differ or a run fails.  Needs torch with
CUDA.
"""
import argparse
import ctypes
import os
import subprocess
import sys

SEQ_LENS = [512, 384, 448, 256, 320, 512]


class Stats(ctypes.Structure):
    # struct alloy_allocator_stats (include/alloy/allocator.h), version 1
    _fields_ = [("size", ctypes.c_uint32), ("version", ctypes.c_uint32)] + [
        (n, ctypes.c_uint64)
        for n in ("allocated", "reserved", "active", "resident", "mapped",
                  "peak_allocated", "peak_reserved", "num_allocs",
                  "num_frees", "num_system_allocs", "num_system_frees",
                  "num_ooms")
    ]


def alloy_peaks(lib, name=b"cuda_caching"):
    so = ctypes.CDLL(lib)
    so.alloy_find_allocator.restype = ctypes.c_void_p
    so.alloy_find_allocator.argtypes = [ctypes.c_char_p]
    so.alloy_allocator_stats.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
    a = so.alloy_find_allocator(name)
    st = Stats(size=ctypes.sizeof(Stats), version=1)
    if not a or so.alloy_allocator_stats(a, ctypes.byref(st)):
        raise SystemExit("gpu-torch-expandable: no cuda_caching statistics")
    return st.peak_reserved, st.peak_allocated


def child(lib, steps):
    import torch
    if lib:
        torch.cuda.memory.change_current_allocator(
            torch.cuda.memory.CUDAPluggableAllocator(
                lib, "alloy_cuda_malloc", "alloy_cuda_free"))
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    # The math attention: the fused kernels' backward is not deterministic.
    torch.backends.cuda.enable_flash_sdp(False)
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    layer = torch.nn.TransformerEncoderLayer(512, 8, 2048, dropout=0.0,
                                             batch_first=True)
    net = torch.nn.TransformerEncoder(layer, 6).cuda()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    for step in range(steps):
        x = torch.randn(16, SEQ_LENS[step % len(SEQ_LENS)], 512,
                        device="cuda")
        opt.zero_grad(set_to_none=True)
        loss = net(x).square().mean()
        loss.backward()
        opt.step()
        print(step, repr(loss.item()))
    torch.cuda.synchronize()
    if lib:
        r, a = alloy_peaks(lib)
    else:
        r = torch.cuda.max_memory_reserved()
        a = torch.cuda.max_memory_allocated()
    print("peak", r, a)


def run(lib, steps, env_extra, use_alloy):
    env = dict(os.environ)
    env.update(env_extra)
    # Deterministic cuBLAS (torch.use_deterministic_algorithms needs it).
    env.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    out = subprocess.run(
        [sys.executable, __file__, lib, "--steps", str(steps), "--child",
         "alloy" if use_alloy else "-"],
        env=env, capture_output=True, text=True)
    if out.returncode:
        print("gpu-torch-expandable: a run failed:\n" + out.stderr[-2000:],
              file=sys.stderr)
        return None
    lines = out.stdout.splitlines()
    _, r, a = lines[-1].split()
    return lines[:-1], int(r), int(a)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--child")
    a = ap.parse_args()
    if a.child:
        child(a.lib if a.child != "-" else None, a.steps)
        return 0
    own_env = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    alloy_env = {"ALLOY_CONF":
                 "cuda:cuda_caching,cuda_caching.expandable_segments:1"}
    own = run(a.lib, a.steps, own_env, False)
    own2 = run(a.lib, a.steps, own_env, False)
    mine = run(a.lib, a.steps, alloy_env, True)
    if not own or not own2 or not mine:
        return 1
    mib = 1 << 20
    print("%-40s %14s %14s %9s" % ("CUDA allocator, expandable segments",
                                   "peak reserved", "peak allocated",
                                   "res/alloc"))
    for name, (_, r, al) in (("torch's own (expandable_segments:True)",
                              own), ("alloy cuda_caching", mine)):
        print("%-40s %10.1f MiB %10.1f MiB %8.3fx" %
              (name, r / mib, al / mib, r / al))
    print("alloy's peak reserved / torch's own: %.3fx (%d steps, "
          "sequence lengths %s)" % (mine[1] / own[1], a.steps,
                                    " ".join(map(str, SEQ_LENS))))
    if own[0] != own2[0]:
        print("skipped: the losses: two runs of torch's own differ here")
        return 0
    if mine[0] != own[0]:
        print("FAIL: losses on alloy differ from torch's own")
        return 1
    print("losses identical to torch's own (%d steps)" % len(own[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
