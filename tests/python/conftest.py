# SPDX-License-Identifier: MIT
"""Shared helpers of the Python module's tests.

The tests run under build/python/uninstalled, so the interpreter, the
alloy package and liballoy are the build tree's; a child started with
run() inherits all of it.  Each test that sets ALLOY_CONF or needs a fresh
library runs its program in a child: liballoy reads ALLOY_CONF once.
"""
import os
import subprocess
import sys

import pytest


def run(code=None, args=(), conf=None, env=None, module_alloy=False,
        timeout=300):
    """Run python -c code (or python -m alloy args) in a child; the
    CompletedProcess, with text output."""
    e = dict(os.environ)
    e.pop("ALLOY_CONF", None)
    if conf is not None:
        e["ALLOY_CONF"] = conf
    e.update(env or {})
    cmd = [sys.executable]
    cmd += ["-m", "alloy"] + list(args) if module_alloy else ["-c", code]
    return subprocess.run(cmd, env=e, capture_output=True, text=True,
                          timeout=timeout)


def backends():
    """The CPU backends this build has: default, and the modules built."""
    import alloy
    names = ["default"]
    lib = os.path.dirname(alloy._alloy.__file__)
    build = os.path.realpath(os.path.join(lib, "..", "..", "..", ".libs"))
    for m in ("jemalloc", "mimalloc"):
        if os.path.exists(os.path.join(build, "alloy_%s.so" % m)):
            names.append(m)
    return names


@pytest.fixture
def alloy_cmd():
    """The build's alloy command (make check sets ALLOY), or a skip."""
    cmd = os.environ.get("ALLOY")
    if not cmd:
        pytest.skip("skipped: ALLOY (the build's alloy command) is not set")
    return cmd


@pytest.fixture(scope="session")
def torch():
    try:
        import torch as t
    except ImportError:
        pytest.skip("skipped: PyTorch is not installed (python3-torch)")
    import alloy
    if alloy.torch.library() is None:
        pytest.skip("skipped: alloy was built without the PyTorch adapter "
                    "(libtorch-dev)")
    return t
