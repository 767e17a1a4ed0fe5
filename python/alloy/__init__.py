# SPDX-License-Identifier: MIT
"""alloy from Python: NumPy and PyTorch memory on alloy's allocators, the
reporter's counts and trace, and alloy tensors shared through DLPack.

    import alloy
    alloy.numpy.enable()          # NumPy's arrays from alloy's CPU default
    alloy.torch.enable()          # PyTorch's CPU tensors too
    alloy.snapshot()              # counts per allocator and device
    alloy.cuda.snapshot()         # CUDA segments as torch lists them
    alloy.python_allocators()     # Python's own objects on alloy too
    with alloy.owner("layer3"):   # what this thread allocates is layer3's
        ...
    t = alloy.empty((2, 3), "float32")
    a = numpy.from_dlpack(t)      # the same memory, no copy

Importing this package initialises nothing; the first call does (and
raises if a default ALLOY_CONF names could not be put in force).  See
docs/PYTHON.md.
"""
from contextlib import contextmanager

from . import _alloy
from ._alloy import *  # noqa: F401,F403 - every public function of the C module
from . import cuda, numpy, pymem, torch
from .pymem import python_allocators

# The C module's public names (a function added to one of its tables in
# python/*.c is exported with no edit here), and this package's own.
__all__ = sorted([n for n in dir(_alloy) if not n.startswith("_")] +
                 ["cuda", "leaks", "numpy", "owner", "pymem",
                  "python_allocators", "reporter", "torch", "trace"])


def load_ipython_extension(ipython):
    """`%load_ext alloy`: the cell magics %%alloy_flamegraph and
    %%alloy_peak (alloy/notebook.py; imports IPython)."""
    from . import notebook
    notebook.load(ipython)


@contextmanager
def reporter():
    """Record every block made inside the block (the reporter on, then
    back off if it was off)."""
    was_on = reporter_enabled()
    reporter_enable()
    try:
        yield
    finally:
        if not was_on:
            reporter_disable()


@contextmanager
def trace(path):
    """Write the event trace of the block to path (docs/TRACE-FORMAT.md)."""
    trace_start(path)
    try:
        yield
    finally:
        trace_stop()


@contextmanager
def owner(label):
    """Label what this thread allocates inside the block as owned by label
    (nested blocks join their labels with '/': "model/layer3").  The
    at-peak report and the flame graph group bytes by it
    (docs/REPORTER.md).  The label is the thread's, so a generator or
    coroutine that suspends inside the block leaves it in force for
    whatever the thread runs meanwhile."""
    owner_push(label)
    try:
        yield
    finally:
        owner_pop()


def _library(path):
    """Whether a frame's file is the interpreter's or an installed
    package's (NumPy's np.ones, runpy), not the program's own."""
    return (path.startswith("<frozen ") or "/lib/python3" in path or
            "/dist-packages/" in path or "/site-packages/" in path)


def leaks(since=0, top=20):
    """The blocks made since the mark `since` (alloy.mark(); 0: all the
    recorded ones) and still live, by the program's Python line that
    made them, the most bytes first: dicts of file, line, function,
    bytes, blocks and stack (the Python frames, innermost first; the
    line is the innermost one outside the interpreter's library and
    installed packages).  Blocks made where no Python frame ran have
    None for file, line and function.  Needs the reporter on, with call
    stacks (backtrace:1) for the lines."""
    if isinstance(since, bool) or not isinstance(since, int) or since < 0:
        raise ValueError("since must be a mark from alloy.mark() (or 0)")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError("top must be a positive int")
    rows = {}
    for g in _alloy._leaks(since, 4096):
        stack = [tuple(f) for f in g["stack"]]
        own = [f for f in stack if not _library(f[0])]
        key = (own or stack or [(None, None, None)])[0]
        r = rows.setdefault(key, {"file": key[0], "line": key[1],
                                  "function": key[2], "bytes": 0,
                                  "blocks": 0, "stack": stack})
        r["bytes"] += g["bytes"]
        r["blocks"] += g["blocks"]
    return sorted(rows.values(), key=lambda r: -r["bytes"])[:top]


# ALLOY_PYTHON_ALLOCATORS is a request to route Python's own allocations
# (alloy/pymem.py); python3 -m alloy applies it itself after its restart.
if pymem.ENV in __import__("os").environ and \
        __import__("sys").orig_argv[1:3] != ["-m", "alloy"]:
    pymem.from_environment()
