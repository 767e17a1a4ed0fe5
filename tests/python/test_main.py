# SPDX-License-Identifier: MIT
"""python3 -m alloy: an unmodified program with NumPy (and PyTorch) on
alloy, on every backend, the report counting its arrays."""
import os

import pytest

from conftest import backends, run

SCRIPT = """
import sys, threading
import numpy as np
print("argv", sys.argv[1:])
print("handler", np.core.multiarray.get_handler_name())
xs = [np.ones(1000) for _ in range(100)]
seen = []
t = threading.Thread(target=lambda: seen.append(
    np.core.multiarray.get_handler_name(np.ones(10))))
t.start(); t.join()
print("thread", seen[0])
"""


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "prog.py"
    p.write_text(SCRIPT)
    return str(p)


@pytest.mark.parametrize("backend", backends())
def test_a_script_runs_on_every_backend_with_its_arrays_counted(script,
                                                                backend):
    r = run(args=["--conf", "cpu:%s,report:stderr" % backend, script, "a",
                  "-b"], module_alloy=True, env={"GLIBC_TUNABLES": ""})
    assert r.returncode == 0, r.stderr
    assert "argv ['a', '-b']" in r.stdout
    assert "handler alloy" in r.stdout and "thread alloy" in r.stdout
    row = [l.split() for l in r.stderr.splitlines()
           if l.startswith(backend + " ")]
    assert row, r.stderr
    assert int(row[0][5]) >= 101          # allocs: 100 arrays and more
    assert "no leaks" in r.stderr


def test_module_and_code_forms(tmp_path):
    r = run(args=["-c", "import numpy as np, sys; "
                  "print(np.core.multiarray.get_handler_name(), sys.argv)",
                  "x"], module_alloy=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "alloy ['-c', 'x']"
    (tmp_path / "mod_under_test.py").write_text(
        "import numpy as np\nprint(np.core.multiarray.get_handler_name())\n")
    r = run(args=["-m", "mod_under_test"], module_alloy=True,
            env={"PYTHONPATH": "%s:%s" % (tmp_path,
                                           os.environ["PYTHONPATH"])})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "alloy"


def test_the_interpreter_is_restarted_with_room_for_static_tls():
    r = run(args=["-c", "import os; print(os.environ['GLIBC_TUNABLES'])"],
            module_alloy=True, env={"GLIBC_TUNABLES": ""})
    assert r.stdout.strip() == "glibc.rtld.optional_static_tls=16384"
    r = run(args=["-c", "import os; print(os.environ['GLIBC_TUNABLES'])"],
            module_alloy=True,
            env={"GLIBC_TUNABLES": "glibc.malloc.arena_max=2"})
    assert r.stdout.strip() == ("glibc.malloc.arena_max=2:"
                                "glibc.rtld.optional_static_tls=16384")


def test_a_backend_that_cannot_be_had_stops_the_run(script):
    r = run(args=["--conf", "cpu:no_such", script], module_alloy=True)
    assert r.returncode == 1
    assert "could not be put in force" in r.stderr
    assert "argv" not in r.stdout


def test_usage_errors():
    r = run(args=[], module_alloy=True)
    assert r.returncode == 2 and "no program to run" in r.stderr
    r = run(args=["--bogus", "x.py"], module_alloy=True)
    assert r.returncode == 2 and "unknown option --bogus" in r.stderr


def test_a_missing_script_is_one_line_and_exit_2_as_in_python(tmp_path):
    missing = str(tmp_path / "missing.py")
    r = run(args=[missing], module_alloy=True)
    assert r.returncode == 2
    assert r.stderr == ("python3 -m alloy: can't open file %r: [Errno 2] "
                        "No such file or directory\n" % missing)


def test_a_script_from_standard_input(tmp_path):
    import subprocess
    import sys
    e = dict(os.environ)
    e.pop("ALLOY_CONF", None)
    r = subprocess.run(
        [sys.executable, "-m", "alloy", "-", "a", "b"], env=e,
        input="import sys, numpy as np\n"
              "print(sys.argv, np.core.multiarray.get_handler_name())\n",
        capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "['-', 'a', 'b'] alloy\n"


def test_a_traceback_starts_at_the_programs_own_frame(tmp_path):
    p = tmp_path / "bad.py"
    p.write_text("def f():\n    raise ValueError('boom')\n\nf()\n")
    r = run(args=[str(p)], module_alloy=True)
    assert r.returncode == 1
    lines = r.stderr.splitlines()
    assert lines[0] == "Traceback (most recent call last):", r.stderr
    assert lines[1] == '  File "%s", line 4, in <module>' % p, r.stderr
    assert lines[-1] == "ValueError: boom"
    assert "runpy" not in r.stderr and "__main__.py" not in r.stderr
    r = run(args=["-c", "1/0"], module_alloy=True)
    assert r.returncode == 1
    assert r.stderr.splitlines()[1] == '  File "<string>", line 1, in <module>'
    r = run(args=["-c", "x = ("], module_alloy=True)
    assert r.returncode == 1
    assert "SyntaxError" in r.stderr and "runpy" not in r.stderr
    assert "Traceback" not in r.stderr


MP_SCRIPT = """
import multiprocessing as mp, sys
import numpy as np

def work(_):
    import alloy
    a = np.ones(1000)
    return (np.core.multiarray.get_handler_name(a),
            alloy.plain_owns(a.ctypes.data))

if __name__ == "__main__":
    a = np.ones(1000)
    for method in sys.argv[1:]:
        p = mp.get_context(method).Pool(1)
        print(method, *p.map(work, [0])[0])
        p.close()  # the workers exit, not terminated: their traces end
        p.join()
"""


def test_multiprocessing_workers_are_set_up_as_the_runner_is(tmp_path):
    """spawn and forkserver start a new interpreter: it must have NumPy on
    alloy as the runner's has; each child writes its own trace."""
    p = tmp_path / "mp.py"
    p.write_text(MP_SCRIPT)
    trace = tmp_path / "t.trace"
    r = run(args=["--conf", "trace:%s" % trace, str(p), "spawn",
                  "forkserver", "fork"], module_alloy=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["spawn alloy True",
                                     "forkserver alloy True",
                                     "fork alloy True"], r.stdout
    # The runner's trace is its own, with its array in it; each child
    # wrote t.trace.PID (left empty by a worker that ends in os._exit,
    # as forked ones do).
    def pid_of(path):
        with open(path) as f:
            head = f.readline().split()
        assert head[0] == "alloy-trace", head
        return int(head[2][len("pid="):])

    with open(trace) as f:
        assert any(line.startswith("a ") for line in f), "no allocation"
    runner = pid_of(trace)
    children = [f for f in os.listdir(tmp_path) if f.startswith("t.trace.")
                and os.path.getsize(tmp_path / f)]
    assert len(children) >= 2, os.listdir(tmp_path)
    for f in children:
        pid = pid_of(tmp_path / f)
        assert pid != runner and f == "t.trace.%d" % pid


def test_torch_option_puts_torch_on_alloy(torch, tmp_path):
    p = tmp_path / "t.py"
    p.write_text("import torch, alloy\n"
                 "x = torch.empty(1 << 20)\n"
                 "print(alloy.plain_owns(x.data_ptr()))\n")
    r = run(args=["--torch", "--conf", "report:stderr", str(p)],
            module_alloy=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "True"
    assert "4194304" in r.stderr            # torch's 4 MiB in the report
