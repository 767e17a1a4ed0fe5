# SPDX-License-Identifier: MIT
"""The reporter from Python: snapshot, peaks, the report, the trace."""
import json
import os
import sys

import numpy as np
import pytest

import alloy
from conftest import run


def test_snapshot_has_counts_per_allocator_and_device():
    with alloy.reporter(), alloy.numpy.allocator():
        a = np.ones(1 << 17)  # 1 MiB
        s = alloy.snapshot()
        del a
    assert s["enabled"] is True
    row = s["allocators"][alloy.get_default()]["cpu:0"]
    for k in ("current_bytes", "peak_bytes", "total_bytes", "allocs",
              "frees", "live_blocks"):
        assert isinstance(row[k], int)
    assert row["current_bytes"] >= 1 << 20
    assert s["total"]["live_blocks"] >= 1
    assert s["double_frees"] == 0


def test_reset_peaks_brings_the_peak_down_to_current():
    with alloy.reporter(), alloy.numpy.allocator():
        big = np.ones(1 << 20)
        del big
        peak = alloy.snapshot()["total"]["peak_bytes"]
        alloy.reset_peaks()
        after = alloy.snapshot()["total"]
    assert peak >= 8 << 20
    assert after["peak_bytes"] == after["current_bytes"] < peak


def test_report_text_and_json():
    with alloy.reporter(), alloy.numpy.allocator():
        keep = np.ones(4096)
        text = alloy.report()
        doc = json.loads(alloy.report(format="json", leaks=True))
        del keep
    assert "alloy reporter" in text and alloy.get_default() in text
    assert isinstance(doc, dict)
    assert alloy.get_default() in json.dumps(doc)
    with pytest.raises(ValueError, match="text or json"):
        alloy.report(format="xml")


def test_trace_start_and_stop_write_a_trace(tmp_path):
    path = str(tmp_path / "t.trace")
    with alloy.numpy.allocator():
        with alloy.trace(path):
            a = np.empty(1000)
            del a
            with pytest.raises(RuntimeError, match="already"):
                alloy.trace_start(path)
        b = np.empty(1000)  # after the stop: not in the trace
        del b
    lines = open(path).read().splitlines()
    assert lines[0].startswith("alloy-trace ")
    assert lines[-1].startswith("end ")
    events = [l for l in lines[1:-1] if not l.startswith("#")]
    assert sum(1 for l in events if l.startswith("a ")) == 1
    assert sum(1 for l in events if l.startswith("f ")) == 1
    with pytest.raises(LookupError, match="no trace"):
        alloy.trace_stop()
    with pytest.raises(FileNotFoundError, match="cannot open"):
        alloy.trace_start(str(tmp_path / "no" / "such" / "dir"))


def test_the_trace_reads_back_with_the_alloy_command(tmp_path, alloy_cmd):
    path = str(tmp_path / "t.trace")
    r = run("""
import alloy, numpy as np
alloy.numpy.enable()
with alloy.trace(%r):
    xs = [np.empty(1 << 15) for _ in range(4)]
    del xs
""" % path)
    assert r.returncode == 0, r.stderr
    import subprocess
    out = subprocess.run([alloy_cmd, "report", path], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    assert "1048576" in out.stdout  # the peak: four 256 KiB arrays


def test_exit_report_counts_arrays_and_no_leaks():
    r = run("""
import alloy, numpy as np
alloy.numpy.enable()
xs = [np.ones(1000) for _ in range(50)]
del xs
""", conf="report:stderr")
    assert r.returncode == 0, r.stderr
    assert "no leaks" in r.stderr
    row = [l for l in r.stderr.splitlines() if l.startswith("default ")]
    assert row and int(row[0].split()[5]) >= 50  # allocs


def test_owner_labels_nest_and_restore():
    assert alloy.owner_current() is None
    with alloy.owner("model"):
        with alloy.owner("layer1"):
            assert alloy.owner_current() == "model/layer1"
        assert alloy.owner_current() == "model"
    assert alloy.owner_current() is None
    with pytest.raises(RuntimeError):
        with alloy.owner("model"):
            raise RuntimeError("inside")
    assert alloy.owner_current() is None  # popped on the way out
    with pytest.raises(ValueError, match="empty"):
        alloy.owner_push("")
    with pytest.raises(ValueError, match="control character"):
        alloy.owner_push("a\nb")
    with pytest.raises(LookupError, match="no owner label"):
        alloy.owner_pop()


def test_owners_name_the_bytes_at_the_peak(tmp_path, alloy_cmd):
    """`with alloy.owner(...)` labels NumPy's arrays; `alloy report --at
    peak` gives each owner its exact bytes."""
    path = str(tmp_path / "o.trace")
    r = run("""
import alloy, numpy as np
alloy.numpy.enable()
with alloy.trace(%r):
    with alloy.owner("model"):
        with alloy.owner("layer1"):
            a = np.ones(1 << 17)     # 1 MiB
        b = np.ones(1 << 16)         # 512 KiB
    c = np.ones(1 << 14)             # 128 KiB, no owner
    del a, b, c
""" % path)
    assert r.returncode == 0, r.stderr
    import subprocess
    out = subprocess.run([alloy_cmd, "report", path, "--at", "peak",
                          "--format", "json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    dev = json.loads(out.stdout)["devices"][0]
    owners = {o["owner"]: (o["bytes"], o["blocks"]) for o in dev["owners"]}
    assert owners["model/layer1"] == (1 << 20, 1)
    assert owners["model"] == (1 << 19, 1)
    assert owners[None][0] >= 1 << 17
    assert dev["bytes"] == sum(b for b, _ in owners.values())


def test_leaks_since_a_mark_lists_what_a_loop_keeps():
    kept = []

    def grow():
        kept.append(np.ones(500))

    if sys.version_info[:2] != (3, 11):
        pytest.skip("skipped: Python's frames are read for CPython 3.11 only")
    try:
        alloy.set_backtrace(True)
    except RuntimeError:
        pytest.skip("skipped: built without libunwind (no call stacks)")
    try:
        with alloy.reporter(), alloy.numpy.allocator():
            m1 = alloy.mark()
            for _ in range(30):
                grow()
                np.ones(700)  # made and dropped: not a leak
            m2 = alloy.mark()
            rows = alloy.leaks(since=m1)
            later = alloy.leaks(since=m2)
    finally:
        alloy.set_backtrace(False)
    assert m2 > m1 >= 1
    top = rows[0]
    assert top["bytes"] == 30 * 4000 and top["blocks"] == 30, rows
    assert top["function"].endswith("grow") and top["file"] == __file__
    assert top["stack"][0][2] in ("ones", top["function"])
    assert not [r for r in later if r["function"] and
                r["function"].endswith("grow")], later


def test_leaks_refuses_bad_marks_and_a_reporter_that_is_off():
    with pytest.raises(ValueError):
        alloy.leaks(since=-1)
    with pytest.raises(ValueError):
        alloy.leaks(since="now")
    with pytest.raises(ValueError):
        alloy.leaks(top=0)
    if not alloy.reporter_enabled():
        with pytest.raises(RuntimeError, match="reporter is off"):
            alloy.leaks()
