#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""An MLP trained with Adam, each step's loss printed exactly, for
comparing a run with alloy against one without (scripts/python-clients.sh
on the CPU, scripts/gpu-test.sh on the GPU).

    torch-mlp.py [--device cpu|cuda] [--steps N] [--batch B]
                 [--alloy-cuda LIBALLOY]

--alloy-cuda makes torch take its CUDA memory from LIBALLOY's
alloy_cuda_malloc / alloy_cuda_free (its pluggable allocator), before
anything is allocated on the device.
"""
import argparse

import torch

ap = argparse.ArgumentParser()
ap.add_argument("--device", default="cpu")
ap.add_argument("--steps", type=int, default=100)
ap.add_argument("--batch", type=int, default=512)
ap.add_argument("--alloy-cuda", metavar="LIBALLOY")
a = ap.parse_args()
if a.alloy_cuda:
    torch.cuda.memory.change_current_allocator(
        torch.cuda.memory.CUDAPluggableAllocator(
            a.alloy_cuda, "alloy_cuda_malloc", "alloy_cuda_free"))
torch.manual_seed(1234)
torch.set_num_threads(1)
if a.device != "cpu":
    torch.use_deterministic_algorithms(True)
net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                          torch.nn.Linear(256, 256), torch.nn.ReLU(),
                          torch.nn.Linear(256, 10)).to(a.device)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
x = torch.randn(a.batch, 64, device=a.device)
y = torch.randint(0, 10, (a.batch,), device=a.device)
for step in range(a.steps):
    opt.zero_grad()
    loss = torch.nn.functional.cross_entropy(net(x), y)
    loss.backward()
    opt.step()
    print(step, repr(loss.item()))
