# SPDX-License-Identifier: MIT
"""python3 -m alloy.bench [numpy] [dlpack] [pymem] [--rounds N] [--callgrind] [--json]

Side by side in one process, the ratios printed (docs/BENCHMARKS.md):

numpy   NumPy arrays created and freed, at 1 KiB, 64 KiB, 1 MiB and sizes
        swept over 0.8-1.6 MB, each both "empty" (np.empty, del) and
        "filled" (np.empty, fill, del): NumPy's own allocator against
        alloy's handler on cpu:default, cpu:jemalloc and cpu:mimalloc
        (the default swapped in the same process).  Ratio = throughput
        with alloy / throughput with NumPy's own; goal >= 0.90.  Each
        configuration runs ROUNDS chunks of about 10 ms, the order rotated
        every round, and keeps its median chunk.  --callgrind adds
        instructions per array for the empty 1 KiB and 64 KiB cases,
        counted by valgrind --tool=callgrind as the difference between a
        run of N and one of 2N arrays.
dlpack  export + import of an alloy tensor of 1 MiB, 64 MiB and 1 GiB
        through NumPy (np.from_dlpack, then alloy.from_dlpack of a NumPy
        array over the same memory): time per round trip, the same address
        checked every time; goal: the 1 GiB time within 2x of the 1 MiB
        time (O(1), no copy).
pymem   Python's own objects routed through alloy against plain CPython
        (alloy/bench_pymem.py); not in the default set.

Like python3 -m alloy, the interpreter restarts itself once with room for
static TLS, so the jemalloc module can load.
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import alloy
from alloy.__main__ import reexec_with_static_tls

KIB, MIB = 1024, 1024 * 1024
SIZES = [("1 KiB", [KIB]), ("64 KiB", [64 * KIB]), ("1 MiB", [MIB]),
         # 64 sizes spread over 0.8-1.6 MB, not multiples of a page
         ("0.8-1.6 MB", [800_000 + i * 12_503 for i in range(64)])]
GOAL = 0.90


def loop(np, sizes, n, filled):
    """n arrays of the given sizes in turn, created and freed."""
    k = len(sizes)
    t0 = time.perf_counter_ns()
    if filled:
        for i in range(n):
            a = np.empty(sizes[i % k], np.uint8)
            a.fill(1)
            del a
    else:
        for i in range(n):
            a = np.empty(sizes[i % k], np.uint8)
            del a
    return time.perf_counter_ns() - t0


# A backend's own malloc family, for NumPy on it without alloy.
DIRECT = {
    "jemalloc": ("libjemalloc.so.2", ("malloc", "calloc", "realloc", "free")),
    "mimalloc": ("libmimalloc.so.2",
                 ("mi_malloc", "mi_calloc", "mi_realloc", "mi_free")),
}


class Config:
    """What NumPy allocates with: its own allocator (kind "own"), a
    backend called directly without alloy ("direct", handler given), or
    alloy's handler on a backend made alloy's CPU default ("alloy")."""

    def __init__(self, name, kind, backend=None, handler=None):
        self.name, self.kind = name, kind
        self.backend, self.handler = backend, handler

    def use(self):
        from . import _numpy
        alloy.numpy.disable()
        if self.kind == "alloy":
            alloy.set_default(self.backend)
            alloy.numpy.enable()
        else:
            _numpy.set(self.handler)


def direct_handler(backend):
    import ctypes
    from . import _numpy
    soname, names = DIRECT[backend]
    lib = ctypes.CDLL(soname)
    fns = [ctypes.cast(getattr(lib, n), ctypes.c_void_p).value for n in names]
    return _numpy.direct_handler(backend, *fns)


def configs():
    out = [Config("numpy", "own")]
    for b in ("default", "jemalloc", "mimalloc"):
        try:
            alloy.set_default(b)
        except (RuntimeError, LookupError) as e:
            sys.stderr.write("bench: cpu:%s left out: %s\n" % (b, e))
            continue
        if b in DIRECT:
            out.append(Config(b, "direct", b, direct_handler(b)))
        out.append(Config("alloy/" + b, "alloy", b))
    alloy.set_default("default")
    return out


def calibrate(np, sizes, filled):
    """Arrays per chunk for about 10 ms with NumPy's own allocator."""
    n = 64
    while n < 1 << 22:
        if loop(np, sizes, n, filled) >= 10_000_000:
            return n
        n *= 2
    return n


def bench_numpy(rounds):
    import numpy as np
    cfgs = configs()
    rows = []
    for label, sizes in SIZES:
        for filled in (False, True):
            Config("numpy", "own").use()
            n = calibrate(np, sizes, filled)
            times = {c.name: [] for c in cfgs}
            for r in range(rounds):
                order = cfgs[r % len(cfgs):] + cfgs[:r % len(cfgs)]
                for c in order:
                    c.use()
                    times[c.name].append(loop(np, sizes, n, filled))
            Config("numpy", "own").use()
            ns = {k: statistics.median(v) / n for k, v in times.items()}
            rows.append({
                "workload": "%s %s" % (label, "filled" if filled else
                                       "empty"),
                "arrays_per_chunk": n,
                "ns_per_array": ns,
                # the goal: alloy on a backend against NumPy's own
                "ratio": {k: ns["numpy"] / v for k, v in ns.items()
                          if k.startswith("alloy/")},
                # alloy's share: alloy on a backend against that backend
                # called directly
                "vs_direct": {k: ns[k[6:]] / v for k, v in ns.items()
                              if k.startswith("alloy/") and k[6:] in ns},
            })
    alloy.set_default("default")
    return rows


COUNT_CHILD = """
import sys, alloy, numpy as np
from alloy import bench, _numpy
name, size, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if name.startswith("alloy/"):
    alloy.set_default(name[6:])
    alloy.numpy.enable()
elif name != "numpy":
    alloy.set_default(name)
    _numpy.set(bench.direct_handler(name))
for i in range(n):
    a = np.empty(size, np.uint8)
    del a
"""


def instructions(name, size, n):
    """Instructions of a child making n arrays with configuration name
    (callgrind's total)."""
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file="
                        + out, sys.executable, "-c", COUNT_CHILD, name,
                        str(size), str(n)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for line in open(out):
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise RuntimeError("no totals in callgrind's output")


def bench_callgrind(cfgs_names):
    n = 20_000
    rows = []
    for size in (KIB, 64 * KIB):
        row = {"workload": "%d KiB empty" % (size // KIB), "per_array": {}}
        for name in cfgs_names:
            a = instructions(name, size, n)
            b = instructions(name, size, 2 * n)
            row["per_array"][name] = (b - a) / n
        rows.append(row)
    return rows


def bench_dlpack(rounds):
    import numpy as np
    rows = []
    for label, nbytes in (("1 MiB", MIB), ("64 MiB", 64 * MIB),
                          ("1 GiB", 1024 * MIB)):
        t = alloy.empty(nbytes // 4, "float32")   # pages never touched
        view = np.asarray(t)
        n, chunks = 2000, []
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            for _ in range(n):
                a = np.from_dlpack(t)             # export to NumPy
                back = alloy.from_dlpack(view)    # import from NumPy
                del a, back
            chunks.append(time.perf_counter_ns() - t0)
        a = np.from_dlpack(t)
        back = alloy.from_dlpack(view)
        same = a.ctypes.data == back.data_ptr == t.data_ptr
        del a, back, view, t
        rows.append({"tensor": label, "ns_per_round_trip":
                     statistics.median(chunks) / n, "same_address": same})
    return rows


def print_numpy(rows, counts):
    names = list(rows[0]["ns_per_array"])
    print("NumPy arrays created and freed, ns per array (median chunk).")
    print("ratio: throughput with alloy / with NumPy's own allocator "
          "(goal >= %.2f); /direct: alloy / the backend called directly"
          % GOAL)
    head = "%-18s" % "workload"
    for k in names:
        head += " %10s" % k
        if k.startswith("alloy/"):
            head += " %5s" % "ratio"
            if k[6:] in names:
                head += " %7s" % "/direct"
    print(head)
    worst = {}
    for r in rows:
        line = "%-18s" % r["workload"]
        for k in names:
            line += " %10.1f" % r["ns_per_array"][k]
            if k.startswith("alloy/"):
                line += " %5.2f" % r["ratio"][k]
                worst[k] = min(worst.get(k, 9e9), r["ratio"][k])
                if k in r["vs_direct"]:
                    line += " %7.2f" % r["vs_direct"][k]
        print(line)
    for k, v in worst.items():
        print("worst ratio %-15s %.2f  goal >= %.2f: %s"
              % (k, v, GOAL, "met" if v >= GOAL else "MISSED"))
    if counts:
        print("instructions per array, empty (callgrind, N and 2N arrays):")
        for r in counts:
            print("  %-12s " % r["workload"] + "  ".join(
                "%s %.0f" % kv for kv in r["per_array"].items()))


def print_dlpack(rows):
    print("DLPack export + import through NumPy: ns per round trip "
          "(median chunk)")
    for r in rows:
        print("%-8s %10.1f   same address: %s"
              % (r["tensor"], r["ns_per_round_trip"], r["same_address"]))
    ratio = rows[-1]["ns_per_round_trip"] / rows[0]["ns_per_round_trip"]
    ok = ratio <= 2.0 and all(r["same_address"] for r in rows)
    print("1 GiB / 1 MiB time: %.2f  goal <= 2 (O(1), no copy): %s"
          % (ratio, "met" if ok else "MISSED"))


def main(argv):
    import argparse
    p = argparse.ArgumentParser(prog="python3 -m alloy.bench",
                                description=__doc__.split("\n\n")[0])
    p.add_argument("which", nargs="*", metavar="numpy|dlpack|pymem")
    p.add_argument("--rounds", type=int, default=21)
    p.add_argument("--callgrind", action="store_true")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    which, rounds = args.which or ["numpy", "dlpack"], args.rounds
    for w in which:
        if w not in ("numpy", "dlpack", "pymem"):
            p.error("unknown benchmark %s (numpy, dlpack or pymem)" % w)
    reexec_with_static_tls()
    os.environ.pop("ALLOY_PYTHON_REEXEC", None)
    alloy._alloy._ready()
    out = {"load_average": os.getloadavg()[0]}
    if "numpy" in which:
        out["numpy"] = bench_numpy(rounds)
        if args.callgrind:
            out["instructions"] = bench_callgrind(
                list(out["numpy"][0]["ns_per_array"]))
    if "dlpack" in which:
        out["dlpack"] = bench_dlpack(rounds)
    if "pymem" in which:
        from . import bench_pymem
        out["pymem"] = bench_pymem.bench_pymem(rounds)
    if args.json:
        json.dump(out, sys.stdout, indent=1)
        print()
        return
    print("alloy.bench on %s, load average %.2f at the start"
          % (os.uname().nodename, out["load_average"]))
    if "numpy" in out:
        print_numpy(out["numpy"], out.get("instructions"))
    if "dlpack" in out:
        print_dlpack(out["dlpack"])
    if "pymem" in out:
        from . import bench_pymem
        bench_pymem.print_pymem(out["pymem"], rounds)


if __name__ == "__main__":
    main(sys.argv[1:])
