# SPDX-License-Identifier: MIT
"""How a program under python3 -m alloy ends with its profile written.

alloy writes the exit report and the trace's end record from liballoy's
destructor, which runs when the process calls exit().  Three ways out of
a Python program never get there, and each is turned into one that does:

- Ctrl-C: Python ends a program that lets KeyboardInterrupt out by
  killing itself with SIGINT after its own shutdown.  The runner prints
  the traceback as Python does and exits with status 130 (what a shell
  shows for a death by SIGINT) instead (alloy/__main__.py, run()).
- SIGTERM, left at its default by the program: the runner's process
  exits with status 143 through SystemExit, so finally blocks run too.
  Its forked children keep the default (they die of it, as without
  alloy).
- os._exit, how multiprocessing's fork and forkserver workers end: the
  trace is closed (its buffered events and the end record written)
  before the process goes.  The exit report is not written there: a
  process that asks for _exit asks for no exit work.
"""
import os
import signal
import sys

from . import _alloy

_state = {"pid": None, "real_exit": None}


def _exit(code):
    """os._exit, after the trace is closed."""
    try:
        _alloy.trace_stop()
    except (LookupError, OSError, RuntimeError):
        pass  # no trace, or one that could not be written whole
    _state["real_exit"](code)


def _on_sigterm(signum, frame):
    if os.getpid() != _state["pid"]:
        # A forked child of the runner's process: as without alloy.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    sys.exit(128 + signum)


def install(runner):
    """Wrap os._exit here (and so in forked children); in the runner's own
    process (runner True) also end by SIGTERM through exit."""
    if _state["real_exit"] is None:
        _state["real_exit"] = os._exit
        os._exit = _exit
    if runner:
        _state["pid"] = os.getpid()
        if signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, _on_sigterm)
