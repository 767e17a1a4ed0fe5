# SPDX-License-Identifier: MIT
"""What `python3 -m alloy` sets up, again in each Python it starts.

The runner puts this directory first on PYTHONPATH and names what it set
up in ALLOY_PYTHON_CHILD ("numpy", "numpy,torch", or "none"), so that a
child interpreter (multiprocessing's spawn and forkserver workers, and any
python the program runs) imports this module at start, as Python's site
does, and has its arrays on alloy as the parent has.  The interpreter's
own sitecustomize, which this one hides, is run after it.
"""
import os
import sys


def _the_hidden_one():
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _put_on_alloy():
    what = os.environ.get("ALLOY_PYTHON_CHILD")
    if not what:
        return
    from alloy.__main__ import put_child_on_alloy
    put_child_on_alloy(what.split(","))


try:
    _the_hidden_one()
finally:
    _put_on_alloy()
