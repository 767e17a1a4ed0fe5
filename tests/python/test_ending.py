# SPDX-License-Identifier: MIT
"""How a program under python3 -m alloy ends: Ctrl-C and SIGTERM still
write the exit report and close the trace, a crash leaves a trace that
`alloy report` reads as cut short, and fork and forkserver workers (which
end in os._exit) leave whole traces."""
import os
import re
import signal
import subprocess
import sys

import pytest

from conftest import run

WAITS = """
import sys, time
import numpy as np
xs = [np.ones(1000) for _ in range(10)]
print("ready", flush=True)
def wait():
    time.sleep(60)
wait()
"""


def report(cmd, path):
    return subprocess.run([cmd, "report", path], capture_output=True,
                          text=True)


def interrupted(tmp_path, sig):
    """The waiting script under the runner, sent sig once it is ready."""
    prog = tmp_path / "waits.py"
    prog.write_text(WAITS)
    trace = str(tmp_path / "t.trace")
    env = dict(os.environ)
    env.pop("ALLOY_CONF", None)
    p = subprocess.Popen(
        [sys.executable, "-m", "alloy", "--conf",
         "report:stderr,trace:" + trace, str(prog)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    return p.returncode, err, trace


def test_ctrl_c_prints_the_traceback_and_writes_the_profile(tmp_path,
                                                            alloy_cmd):
    rc, err, trace = interrupted(tmp_path, signal.SIGINT)
    assert rc == 130, err
    # Python's traceback from the program's own frames, then the report.
    assert err.startswith("Traceback (most recent call last):\n"), err
    # The first frame is the program's (the signal may land on any of
    # its last lines).
    assert re.match(r'  File ".*/waits\.py", line \d+, in <module>$',
                    err.splitlines()[1]), err
    assert "__main__.py" not in err and "runpy" not in err
    assert "\nKeyboardInterrupt\n" in err
    assert "alloy reporter: memory by allocator and device" in err
    r = report(alloy_cmd, trace)
    assert r.returncode == 0, r.stderr
    assert r.stderr == "" and "cut short" not in r.stdout, r.stderr


def test_sigterm_writes_the_profile(tmp_path, alloy_cmd):
    rc, err, trace = interrupted(tmp_path, signal.SIGTERM)
    assert rc == 143, err
    assert "alloy reporter: memory by allocator and device" in err
    r = report(alloy_cmd, trace)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_a_crash_leaves_a_trace_read_as_cut_short(tmp_path, alloy_cmd):
    trace = str(tmp_path / "c.trace")
    r = run(args=["--conf", "trace:" + trace, "-c", """
import ctypes
import numpy as np
xs = [np.ones(1000) for _ in range(3000)]
del xs[::2]
ctypes.string_at(0)
"""], module_alloy=True)
    assert r.returncode == -signal.SIGSEGV, r.stderr
    rep = report(alloy_cmd, trace)
    assert rep.returncode == 0, rep.stderr
    assert "has no end record" in rep.stderr
    assert "(no end record: cut short)" in rep.stdout
    # Events up to the last write-out are there.
    assert int(rep.stdout.split(", ")[2].split()[0]) > 1000


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_workers_that_end_in_os_exit_leave_whole_traces(tmp_path, alloy_cmd,
                                                        method):
    prog = tmp_path / "pool.py"
    prog.write_text("""
import multiprocessing as mp
import os
import numpy as np

def work(n):
    return float(np.ones(n).sum()), os.getpid()

if __name__ == "__main__":
    ctx = mp.get_context(%r)
    with ctx.Pool(2) as p:
        print(sorted(set(pid for _, pid in p.map(work, [100] * 8))))
        p.close()
        p.join()
""" % method)
    d = tmp_path / "traces"
    d.mkdir()
    r = run(args=["--conf", "trace:%s/t" % d, str(prog)], module_alloy=True)
    assert r.returncode == 0, r.stderr
    workers = eval(r.stdout)
    files = sorted(os.listdir(d))
    for pid in workers:
        assert "t.%d" % pid in files
    for f in files:
        assert os.path.getsize(d / f) > 0, f
        rep = report(alloy_cmd, str(d / f))
        assert rep.returncode == 0 and rep.stderr == "", (f, rep.stderr)
