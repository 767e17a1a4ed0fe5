# SPDX-License-Identifier: MIT
"""python3 -m alloy.bench pymem [--rounds N] [--json]

Python's own allocations on alloy against plain CPython (pymalloc for
objects, glibc's malloc for the RAW domain), on workloads of object
churn: a dict of lists built and dropped, JSON dumped and loaded, strings
built by pieces.  Each configuration is a fresh interpreter (routing is
process-wide and stays); every round runs each of them once, in an order
rotated every round, and each workload's time is the median over the
rounds.  Ratio = time under the configuration / time of plain CPython
(lower is faster; 1.00 is the same speed).
"""
import json
import os
import statistics
import subprocess
import sys
import time

# (name, ALLOY_PYTHON_ALLOCATORS spec or None, extra environment)
CONFIGS = [
    ("plain CPython", None, {}),
    ("PYTHONMALLOC=malloc", None, {"PYTHONMALLOC": "malloc"}),
    ("raw", "raw", {}),
    ("mem,obj", "mem,obj", {}),
    ("all", "all", {}),
    ("all, reporter on", "all", {"ALLOY_CONF": "report:/dev/null"}),
    ("all:jemalloc", "all:jemalloc", {}),
    ("all:mimalloc", "all:mimalloc", {}),
]


def dict_churn(n):
    for _ in range(n):
        d = {"k%d" % j: [j, j + 1, str(j)] for j in range(500)}
        for k in list(d)[::2]:
            del d[k]
        d.update({"n%d" % j: (j,) for j in range(250)})
        del d


DOC = {"users": [{"id": i, "name": "user %d" % i, "tags": ["a", "b", "c"],
                  "score": i * 0.5, "active": i % 2 == 0}
                 for i in range(200)]}


def json_round_trip(n):
    for _ in range(n):
        s = json.dumps(DOC)
        d = json.loads(s)
        assert len(d["users"]) == 200


def string_building(n):
    for _ in range(n):
        parts = []
        for j in range(1000):
            parts.append("line %d: %s" % (j, "x" * (j % 40)))
        s = "\n".join(parts)
        t = ""
        for p in parts[:200]:
            t += p
        del parts, s, t


WORKLOADS = [("dict churn", dict_churn, 300), ("json", json_round_trip, 150),
             ("strings", string_building, 300)]


def worker():
    """In the configuration's interpreter: each workload once to warm up,
    then timed; its times in ns on stdout as JSON."""
    spec = os.environ.get("ALLOY_BENCH_ROUTE")
    if spec:
        import alloy
        alloy.python_allocators(spec)
    out = {}
    for name, fn, n in WORKLOADS:
        fn(n // 10)
        t0 = time.perf_counter_ns()
        fn(n)
        out[name] = time.perf_counter_ns() - t0
    json.dump(out, sys.stdout)


def available(spec):
    """Whether a configuration's allocator is built (a module by name)."""
    if not spec or ":" not in spec:
        return True
    name = spec.split(":")[1]
    import alloy
    lib = os.path.dirname(alloy._alloy.__file__)
    dirs = [os.path.join(lib, "..", "..", "..", ".libs")]
    if alloy._alloy._command:
        dirs.append(os.path.join(os.path.dirname(alloy._alloy._command),
                                 "..", "lib", "alloy"))
    return any(os.path.exists(os.path.join(d, "alloy_%s.so" % name))
               for d in dirs)


def run_one(cfg):
    name, spec, extra = cfg
    env = dict(os.environ)
    env.pop("ALLOY_CONF", None)
    env.pop("PYTHONMALLOC", None)
    env.pop("ALLOY_PYTHON_ALLOCATORS", None)
    env.update(extra)
    if spec:
        env["ALLOY_BENCH_ROUTE"] = spec
    r = subprocess.run([sys.executable, "-m", "alloy.bench_pymem",
                        "--worker"], env=env, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError("alloy.bench pymem: %s failed: %s" % (
            name, r.stderr.strip()))
    return json.loads(r.stdout)


def bench_pymem(rounds):
    cfgs = [c for c in CONFIGS if available(c[1])]
    times = {c[0]: {w[0]: [] for w in WORKLOADS} for c in cfgs}
    for r in range(rounds):
        k = r % len(cfgs)
        for cfg in cfgs[k:] + cfgs[:k]:
            for w, ns in run_one(cfg).items():
                times[cfg[0]][w].append(ns)
    med = {c: {w: statistics.median(v) for w, v in ws.items()}
           for c, ws in times.items()}
    base = med[CONFIGS[0][0]]
    return [{"config": c[0], "ms": {w: med[c[0]][w] / 1e6 for w in base},
             "ratio": {w: med[c[0]][w] / base[w] for w in base}}
            for c in cfgs]


def print_pymem(rows, rounds):
    names = [w[0] for w in WORKLOADS]
    print("Python's own allocations: time / plain CPython's, median of %d "
          "rounds (lower is faster)" % rounds)
    print("%-22s" % "configuration" +
          "".join("%16s" % n for n in names))
    for row in rows:
        print("%-22s" % row["config"] + "".join(
            "%9.2f (%3.0f ms)" % (row["ratio"][n], row["ms"][n])
            for n in names))


if __name__ == "__main__":
    if sys.argv[1:] == ["--worker"]:
        worker()
    else:
        sys.stderr.write("run it as python3 -m alloy.bench pymem\n")
        sys.exit(2)
