#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch training steps on the GPU: torch's own CUDA allocator against
alloy's (cuda_caching and cuda_async through torch's pluggable allocator,
alloy_cuda_malloc / alloy_cuda_free), side by side.

    scripts/gpu-torch-bench.py LIBALLOY [--rounds R] [--steps N]

Each configuration runs in a process of its own (torch takes its CUDA
allocator once, before the first allocation), the configurations
alternating for R rounds; each process times N steps after ten of
warm-up, synchronising before each clock read.  Printed: the median
milliseconds per step and the ratio to torch's own allocator, for a
transformer encoder (big blocks, compute-bound) and a small MLP (small
blocks, bound by launching and allocating).  Needs torch with CUDA.
"""
import argparse
import os
import statistics
import subprocess
import sys
import time

CONFIGS = [("torch's own", None), ("alloy cuda_caching", "cuda_caching"),
           ("alloy cuda_async", "cuda_async")]
MODELS = ["transformer", "small_mlp"]


def child(model, lib, steps):
    import torch
    if lib:
        torch.cuda.memory.change_current_allocator(
            torch.cuda.memory.CUDAPluggableAllocator(
                lib, "alloy_cuda_malloc", "alloy_cuda_free"))
    torch.manual_seed(0)
    if model == "transformer":
        layer = torch.nn.TransformerEncoderLayer(512, 8, 2048,
                                                 batch_first=True)
        net = torch.nn.TransformerEncoder(layer, 6).cuda()
        x = torch.randn(32, 256, 512, device="cuda")
        loss_of = lambda: net(x).square().mean()
    else:
        layers = []
        for _ in range(8):
            layers += [torch.nn.Linear(256, 256), torch.nn.ReLU()]
        net = torch.nn.Sequential(*layers).cuda()
        x = torch.randn(64, 256, device="cuda")
        loss_of = lambda: net(x).square().mean()
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)

    def step():
        opt.zero_grad(set_to_none=True)
        loss_of().backward()
        opt.step()

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    print((time.perf_counter() - t0) * 1e3 / steps)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("lib")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "CONF"))
    a = ap.parse_args()
    if a.child:
        model, conf = a.child
        child(model, a.lib if conf != "-" else None, a.steps)
        return 0
    times = {(m, c[0]): [] for m in MODELS for c in CONFIGS}
    for _ in range(a.rounds):
        for m in MODELS:
            for name, policy in CONFIGS:
                env = dict(os.environ)
                if policy:
                    env["ALLOY_CONF"] = "cuda:" + policy
                out = subprocess.run(
                    [sys.executable, __file__, a.lib, "--steps",
                     str(a.steps), "--child", m, policy and "alloy" or "-"],
                    env=env, capture_output=True, text=True)
                if out.returncode:
                    print("gpu-torch-bench: %s on %s failed:\n%s" %
                          (m, name, out.stderr[-2000:]), file=sys.stderr)
                    return 1
                times[(m, name)].append(float(out.stdout.split()[-1]))
    print("%-12s %-20s %12s %10s" % ("model", "CUDA allocator",
                                     "ms per step", "vs torch"))
    for m in MODELS:
        base = statistics.median(times[(m, CONFIGS[0][0])])
        for name, _ in CONFIGS:
            t = statistics.median(times[(m, name)])
            print("%-12s %-20s %12.3f %9.3fx" % (m, name, t, t / base))
    print("(median of %d rounds, %d steps each after 10 of warm-up)" %
          (a.rounds, a.steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())
