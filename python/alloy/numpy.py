# SPDX-License-Identifier: MIT
"""NumPy's array data on alloy (a PyDataMem_Handler, NEP 49).

NumPy keeps its allocator per context (a contextvar), and a new thread
starts with NumPy's default.  So:

- ``enable()`` puts alloy in the calling context and in every thread the
  threading module starts from then on (a one-shot hook installed with
  threading.setprofile; a profiler set the same way earlier is chained);
  ``disable()`` undoes both.
- ``with allocator():`` covers only the calling thread's context, for the
  block, as NumPy's own handler switching does.

Threads started some other way (_thread.start_new_thread, C code) keep
NumPy's default.  Every array is freed by the handler that made it, so
mixing is always safe.

A thread cannot set another thread's context, so the handler enable()
puts in contexts is a switch of its own (python/numpy_handler.c): on
alloy while enable() is in force, on the handler in force before it once
disable() is called, from whichever thread, in every context it reached.
"""
import sys
import threading
from contextlib import contextmanager

from . import _alloy

_lock = threading.Lock()
_state = {"on": False, "previous_handler": None, "previous_profile": None}


def _handler():
    # Imported on first use: importing alloy must not import NumPy.
    from . import _numpy
    return _numpy


def _thread_hook(frame, event, arg):
    """The first profile event of a new thread: alloy's handler in the
    thread's context, then the previous profile function, if any, back."""
    _handler().install_process()
    previous = _state["previous_profile"]
    sys.setprofile(previous)
    if previous is not None:
        previous(frame, event, arg)


def enable():
    """Make alloy NumPy's allocator here and in threads started later."""
    _alloy._ready()
    h = _handler()
    with _lock:
        old = h.install_process()
        if _state["on"]:
            return
        # Inside `with allocator():` the handler in force is alloy's own;
        # what disable() gives back is then NumPy's default.
        if old is not None and h.is_alloys(old):
            old = None
        h.switch_process(True, old)
        _state["previous_handler"] = old
        _state["previous_profile"] = threading.getprofile()
        threading.setprofile(_thread_hook)
        _state["on"] = True


def disable():
    """Give NumPy back the handler it had before enable(): here, and in
    every context enable() reached, whichever thread calls it; stop
    covering new threads.  Arrays made meanwhile are still freed by alloy."""
    with _lock:
        if not _state["on"]:
            return
        if threading.getprofile() is _thread_hook:
            threading.setprofile(_state["previous_profile"])
        h = _handler()
        h.switch_process(False, _state["previous_handler"])
        h.set(_state["previous_handler"])
        _state.update(on=False, previous_handler=None, previous_profile=None)


def enabled():
    """Whether enable() is in force (process-wide)."""
    return _state["on"]


def in_use():
    """Whether this context's NumPy allocator is alloy's."""
    return _handler().current_is_alloy()


@contextmanager
def allocator():
    """NumPy's allocations in this thread's context come from alloy for the
    duration of the block."""
    _alloy._ready()
    h = _handler()
    old = h.install()
    try:
        yield
    finally:
        h.set(old)
