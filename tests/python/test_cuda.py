# SPDX-License-Identifier: MIT
"""alloy.cuda: the caching allocator's segments as PyTorch lists its own,
and the pickle PyTorch's viewer reads."""
import json
import pickle
import subprocess

import pytest

from conftest import run

SIM = "cuda:cuda_caching_sim"

# Makes a 4 MB block (large pool) and a 40-byte one (small pool), prints
# the snapshot, frees the large one, prints it again, dumps it to argv.
PROGRAM = r"""
import json, sys
import alloy, alloy.cuda
big = alloy.cuda.malloc(4000000)
small = alloy.cuda.malloc(40)
before = alloy.cuda.snapshot()
alloy.cuda.free(big)
after = alloy.cuda.dump_snapshot(sys.argv[1])
print(json.dumps({"big": big, "small": small, "before": before, "after": after}))
"""


def blocks(segs, state=None):
    return [b for s in segs for b in s["blocks"]
            if state is None or b["state"] == state]


def snapshot_run(tmp_path):
    path = str(tmp_path / "snap.pickle")
    r = run(PROGRAM.replace("sys.argv[1]", repr(path)), conf=SIM)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout), path


def test_snapshot_lists_segments_and_blocks_as_torch_does(tmp_path):
    d, _ = snapshot_run(tmp_path)
    segs = d["before"]
    assert sorted(s["segment_type"] for s in segs) == ["large", "small"]
    for s in segs:
        assert {"device", "address", "total_size", "allocated_size",
                "active_size", "requested_size", "stream", "segment_type",
                "segment_pool_id", "is_expandable", "frames",
                "blocks"} == set(s)
        addr = s["address"]
        for b in s["blocks"]:
            assert b["address"] == addr  # blocks tile their segment
            addr += b["size"]
        assert addr == s["address"] + s["total_size"]
        assert s["allocated_size"] == sum(
            b["size"] for b in s["blocks"] if b["state"] == "active_allocated")
    live = {b["address"]: b for b in blocks(segs, "active_allocated")}
    assert set(live) == {d["big"], d["small"]}
    assert live[d["big"]]["requested_size"] == 4000000
    assert live[d["small"]]["requested_size"] == 40
    small = [s for s in segs if s["segment_type"] == "small"][0]
    assert small["total_size"] == 2 << 20


def test_a_freed_block_is_inactive_and_the_pickle_holds_the_snapshot(tmp_path):
    d, path = snapshot_run(tmp_path)
    assert [b["address"] for b in blocks(d["after"], "active_allocated")] \
        == [d["small"]]
    with open(path, "rb") as f:
        # Through JSON as the child's copy came: the pool id's tuple a list.
        assert json.loads(json.dumps(pickle.load(f))) == d["after"]


def test_pytorchs_viewer_reads_the_pickle(tmp_path):
    if subprocess.run(["/usr/bin/python3", "-c",
                       "import torch.cuda._memory_viz"],
                      capture_output=True).returncode:
        pytest.skip("skipped: python3-torch not installed")
    d, path = snapshot_run(tmp_path)
    r = subprocess.run(["/usr/bin/python3", "-W", "ignore", "-c",
                        "import pickle, sys, torch.cuda._memory_viz as v; "
                        "s = v.stats(pickle.load(open(sys.argv[1], 'rb'))); "
                        "print(s['segments'], s['total_size'].value, "
                        "s['active_allocated'].value)", path],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    segs = d["after"]
    assert r.stdout.split() == [
        str(len(segs)), str(sum(s["total_size"] for s in segs)),
        str(sum(b["size"] for b in blocks(segs, "active_allocated")))]


def test_bad_requests_raise():
    r = run("import alloy.cuda\n"
            "for f in (lambda: alloy.cuda.snapshot('no_such'),\n"
            "          lambda: alloy.cuda.snapshot('default'),\n"
            "          lambda: alloy.cuda.free(12345),\n"
            "          lambda: alloy.cuda.malloc(0)):\n"
            "    try:\n"
            "        f()\n"
            "    except ValueError as e:\n"
            "        print('refused:', e)\n", conf=SIM)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 4 and all(l.startswith("refused:") for l in lines)
    assert "no_such" in lines[0] and "not a CUDA caching" in lines[1]
    r = run("import alloy.cuda\n"
            "try:\n"
            "    alloy.cuda.snapshot()\n"
            "except ValueError as e:\n"
            "    print('refused:', e)\n")
    assert "no CUDA default" in r.stdout, r.stdout + r.stderr
