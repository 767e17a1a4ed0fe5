# SPDX-License-Identifier: MIT
"""PyTorch's CPU tensors on alloy (the c10 adapter) and DLPack with
PyTorch.  Skipped where PyTorch or the adapter is missing."""
import gc

import pytest

import alloy
from conftest import run


@pytest.fixture
def on(torch):
    alloy.torch.enable()
    yield torch
    alloy.torch.disable()


def test_torch_empty_comes_from_alloy_and_is_counted(on):
    torch = on
    assert alloy.torch.enabled()
    with alloy.reporter():
        before = alloy.snapshot()["total"]
        x = torch.empty(1 << 18)                       # 1 MiB
        mid = alloy.snapshot()["total"]
        assert alloy.plain_owns(x.data_ptr())
        assert x.data_ptr() % 64 == 0                  # c10's alignment
        del x
        after = alloy.snapshot()["total"]
    assert mid["current_bytes"] - before["current_bytes"] == 1 << 20
    assert after["current_bytes"] == before["current_bytes"]


def test_disable_gives_torch_its_allocator_back(torch):
    alloy.torch.enable()
    x = torch.ones(1000)
    alloy.torch.disable()
    assert not alloy.torch.enabled()
    y = torch.ones(1000)
    assert alloy.plain_owns(x.data_ptr())
    assert not alloy.plain_owns(y.data_ptr())
    bad = alloy.plain_bad_frees()
    del x, y                       # each to the allocator that made it
    assert alloy.plain_bad_frees() == bad


def test_alloy_to_torch_to_alloy_is_the_same_buffer(torch):
    import numpy as np
    t = alloy.empty((3, 4), "float32")
    np.asarray(t)[...] = 7
    x = torch.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr and float(x.sum()) == 84
    x += 1                                          # torch writes alloy's
    assert np.asarray(t)[0, 0] == 8
    back = alloy.from_dlpack(x)
    assert back.data_ptr == t.data_ptr
    del t, x
    gc.collect()
    assert np.asarray(back)[2, 3] == 8


def test_torch_to_alloy_takes_torchs_tensor_once(torch):
    x = torch.arange(10, dtype=torch.int64)
    t = alloy.from_dlpack(x)
    assert t.data_ptr == x.data_ptr() and t.dtype == "int64"
    cap = torch.utils.dlpack.to_dlpack(x)
    alloy.from_dlpack(cap)
    with pytest.raises(ValueError, match="consumed already"):
        alloy.from_dlpack(cap)
    bf = alloy.from_dlpack(torch.zeros(4, dtype=torch.bfloat16))
    assert bf.dtype == "bfloat16"
    y = torch.from_dlpack(bf)
    assert y.dtype == torch.bfloat16


def test_bool_is_refused_as_torch_refuses_it(torch):
    with pytest.raises(RuntimeError, match="Bool"):
        torch.zeros(2, dtype=torch.bool).__dlpack__()
    with pytest.raises(BufferError, match="bool"):
        torch.from_dlpack(alloy.empty(2, "bool"))


def test_training_gives_identical_losses_with_alloy(torch):
    code = """
import sys, torch, alloy
if sys.argv[1] == "alloy":
    alloy.torch.enable()
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(),
                          torch.nn.Linear(64, 1))
opt = torch.optim.SGD(net.parameters(), lr=0.05)
x, y = torch.randn(128, 32), torch.randn(128, 1)
for _ in range(10):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(net(x), y)
    loss.backward()
    opt.step()
    print(repr(loss.item()))
if sys.argv[1] == "alloy":
    assert alloy.plain_owns(net[0].weight.data_ptr())
"""
    r = [run("import sys; sys.argv[1:] = [%r]\n" % w + code,
             env={"OMP_NUM_THREADS": "1"}) for w in ("own", "alloy")]
    assert r[0].returncode == 0, r[0].stderr
    assert r[1].returncode == 0, r[1].stderr
    assert r[0].stdout == r[1].stdout and len(r[0].stdout.split()) == 10
