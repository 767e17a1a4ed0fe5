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
