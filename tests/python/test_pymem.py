# SPDX-License-Identifier: MIT
"""Python's own allocations on alloy (alloy.python_allocators, python3 -m
alloy --python-allocators): counted, owned, on a named allocator, blocks
made before the routing freed by their maker, threads, bad names.

Routing is process-wide and stays for the process, so each test runs its
program in a child."""
import json
import os
import subprocess

import pytest

from conftest import backends, run


def ok(r):
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_objects_made_with_routing_on_are_counted():
    out = ok(run("""
import alloy
alloy.reporter_enable()
alloy.python_allocators("obj,mem")
def row():
    return alloy.snapshot()["allocators"]["default"]["cpu:0"]
before = row()
d = {("k%d" % i): [i, str(i)] for i in range(20000)}
after = row()
print(after["allocs"] - before["allocs"], after["live_blocks"] - before["live_blocks"],
      after["current_bytes"] - before["current_bytes"])
print(sorted(alloy.pymem.routed().items()))
"""))
    allocs, live, current = map(int, out.split("\n")[0].split())
    # Per entry: a key, a list and its item array, a str; the dict's tables.
    assert allocs >= 4 * 20000
    assert live >= 4 * 20000
    assert current >= 20000 * (4 * 32 + 100)
    assert "[('mem', 'default'), ('obj', 'default')]" in out


def test_nothing_is_routed_unless_asked():
    out = ok(run("""
import alloy
alloy.reporter_enable()
before = alloy.snapshot()["total"]["allocs"]
d = {str(i): [i] for i in range(10000)}
print(alloy.snapshot()["total"]["allocs"] - before, alloy.pymem.routed())
"""))
    assert out.split()[0] == "0"
    assert "{}" in out


def test_an_owner_covers_a_dict_built_under_it(tmp_path, alloy_cmd):
    cmd = alloy_cmd
    path = str(tmp_path / "o.trace")
    out = ok(run("""
import sys, alloy
alloy.python_allocators()
with alloy.trace(%r):
    with alloy.owner("config"):
        d = {("key%%d" %% i): "value %%d" %% i for i in range(20000)}
    print(sys.getsizeof(d), sum(sys.getsizeof(k) + sys.getsizeof(v)
                                for k, v in d.items()))
""" % path))
    table, strings = map(int, out.split())
    r = subprocess.run([cmd, "report", path, "--at", "peak", "--format",
                        "json"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    dev = json.loads(r.stdout)["devices"][0]
    owners = {o["owner"]: (o["bytes"], o["blocks"]) for o in dev["owners"]}
    nbytes, blocks = owners["config"]
    # 40000 strings and the dict's table, each with alloy's 32-byte header.
    assert blocks >= 40000
    assert nbytes >= table + strings + 32 * 40000


def test_blocks_made_before_the_routing_go_back_to_their_maker():
    out = ok(run("""
import alloy
alloy.reporter_enable()
old = [bytearray(40) for _ in range(5000)]        # pymalloc's
big = [bytearray(100000) for _ in range(20)]      # the RAW domain's
alloy.python_allocators()
before = alloy.snapshot()
for b in old[:100]:
    b.extend(b"x" * 1000)                         # realloc by their maker
del old, big
after = alloy.snapshot()
row = lambda s: s["allocators"]["default"]["cpu:0"]
ff = alloy.pymem.foreign_frees()
print(ff["obj"] + ff["mem"] + ff["raw"], after["unknown_frees"],
      after["double_frees"], after["untracked_frees"],
      row(after)["live_blocks"] - row(before)["live_blocks"])
"""))
    foreign, unknown, double, untracked, live = map(int, out.split())
    assert foreign >= 5020
    assert (unknown, double, untracked) == (0, 0, 0)
    # Freeing Python's blocks took nothing off alloy's counts.
    assert live >= 0


def test_a_changed_target_sends_each_block_back_to_its_maker():
    out = ok(run("""
import alloy
alloy.reporter_enable()
alloy.python_allocators("obj")
row = lambda: alloy.snapshot()["allocators"]["default"]["cpu:0"]
mine = [str(i) * 3 for i in range(10000)]
alloy.python_allocators("obj:python")       # new objects: pymalloc again
a = row()
theirs = [str(i) * 3 for i in range(10000)]
b = row()
del mine
c = row()
del theirs
print(b["allocs"] - a["allocs"], c["frees"] - b["frees"],
      alloy.pymem.routed()["obj"], alloy.snapshot()["unknown_frees"])
"""))
    made, freed, target, unknown = out.split()
    assert int(made) < 100                  # pymalloc served them
    assert int(freed) >= 10000              # alloy's went back to alloy
    assert target == "python" and unknown == "0"


def test_routing_under_threads():
    out = ok(run("""
import threading, json, alloy
alloy.reporter_enable()
alloy.python_allocators()
errors = []
def work(n):
    try:
        for i in range(200):
            d = {str(j): [j] * 5 for j in range(200)}
            s = json.dumps(d)
            assert json.loads(s) == d
            del d, s
    except Exception as e:
        errors.append(e)
ts = [threading.Thread(target=work, args=(n,)) for n in range(8)]
for t in ts: t.start()
# Routing again while the threads run: a new target for RAW and OBJ.
alloy.python_allocators("raw:default,obj:debug")
for t in ts: t.join()
s = alloy.snapshot()
print(len(errors), s["unknown_frees"], s["double_frees"],
      s["allocators"]["debug"]["cpu:0"]["allocs"])
"""))
    errors, unknown, double, debug_allocs = map(int, out.split())
    assert (errors, unknown, double) == (0, 0, 0)
    assert debug_allocs > 0


@pytest.mark.parametrize("backend", backends())
def test_objects_on_a_named_allocator_under_the_runner(backend):
    r = run(args=["--python-allocators=obj:%s,mem" % backend, "--conf",
                  "report:stderr", "-c",
                  "d = {str(i): [i] for i in range(20000)}"],
            module_alloy=True)
    assert r.returncode == 0, r.stderr
    rows = {l.split()[0]: l.split() for l in r.stderr.splitlines()
            if l.split() and l.split()[0] in (backend, "default")}
    assert int(rows[backend][5]) >= 40000, r.stderr     # allocs


def test_children_inherit_the_routing(tmp_path):
    prog = tmp_path / "mp.py"
    prog.write_text("""
import multiprocessing as mp

def work(_):
    import alloy
    return sorted(alloy.pymem.routed().items())

if __name__ == "__main__":
    with mp.get_context("spawn").Pool(1) as p:
        print(p.map(work, [0])[0])
""")
    r = run(args=["--python-allocators=obj", str(prog)], module_alloy=True)
    assert r.returncode == 0, r.stderr
    assert "[('obj', 'default')]" in r.stdout


def test_a_bad_domain_or_allocator_is_a_clean_error():
    out = ok(run("""
import alloy
for spec in ("objx", "obj:nosuch", "obj:cuda_caching_sim", "obj:bad-name", "obj,,mem"):
    try:
        alloy.python_allocators(spec)
    except ValueError as e:
        print("ValueError", e)
print(alloy.pymem.routed())
"""))
    lines = out.splitlines()
    assert "'objx'" in lines[0]
    assert "'nosuch'" in lines[1]
    assert "'cuda_caching_sim' is not a CPU allocator" in lines[2]
    assert "'bad-name'" in lines[3]
    assert "empty item" in lines[4]
    assert lines[5] == "{}"                # nothing was routed
    for spec in ("objx", "obj:nosuch"):
        r = run(args=["--python-allocators=" + spec, "-c", "print(1)"],
                module_alloy=True)
        assert r.returncode == 2
        assert r.stdout == ""
        assert spec.split(":")[-1] in r.stderr
        assert "Traceback" not in r.stderr


def test_the_environment_variable_routes_at_import():
    out = ok(run("import alloy; print(alloy.pymem.routed())",
                 env={"ALLOY_PYTHON_ALLOCATORS": "mem:default"}))
    assert out.strip() == "{'mem': 'default'}"


REALLOCS = """
import json
d = {str(i): [i] * (i % 7) for i in range(50000)}
assert json.loads(json.dumps(d)) == d
b = bytearray()
for i in range(2000):
    b.extend(b"x" * i)
l = []
for i in range(100000):
    l.append(i)
s = ""
for i in range(5000):
    s += str(i)
"""


def test_the_debug_allocator_finds_no_misuse_of_python_s_blocks():
    """debug's redzones, poison and quarantine see every block of the
    three domains: a write after free or outside a block is reported."""
    r = run(args=["--python-allocators=all:debug", "--conf",
                  "report:stderr", "-c", REALLOCS], module_alloy=True)
    assert r.returncode == 0, r.stderr
    assert "alloy: debug:" not in r.stderr, r.stderr
    row = [l.split() for l in r.stderr.splitlines() if l.startswith("debug ")]
    assert int(row[0][5]) >= 150000, r.stderr


def test_under_alloy_run_the_environment_variable_routes(tmp_path,
                                                        alloy_cmd):
    cmd = alloy_cmd
    prog = tmp_path / "p.py"
    prog.write_text("import alloy\nprint(alloy.pymem.routed())\n" + REALLOCS)
    import sys
    e = dict(os.environ)
    e.pop("ALLOY_CONF", None)
    e["ALLOY_PYTHON_ALLOCATORS"] = "obj:debug,mem"
    r = subprocess.run([cmd, "run", "--report", "stderr", "--",
                        sys.executable, str(prog)], env=e,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "{'mem': 'default', 'obj': 'debug'}"
    assert "alloy: debug:" not in r.stderr, r.stderr
    row = [l.split() for l in r.stderr.splitlines() if l.startswith("debug ")]
    assert int(row[0][5]) >= 100000, r.stderr


def test_the_runner_takes_the_environment_variable():
    r = run(args=["-c", "import alloy; print(alloy.pymem.routed())"],
            module_alloy=True, env={"ALLOY_PYTHON_ALLOCATORS": "obj"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "{'obj': 'default'}"
    r = run(args=["-c", "pass"], module_alloy=True,
            env={"ALLOY_PYTHON_ALLOCATORS": "objx"})
    assert r.returncode == 2
    assert r.stderr.startswith("python3 -m alloy: ALLOY_PYTHON_ALLOCATORS: ")
    assert "'objx'" in r.stderr
