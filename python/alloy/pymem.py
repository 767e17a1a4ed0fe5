# SPDX-License-Identifier: MIT
"""Python's own allocations on alloy: PyMem's RAW, MEM and OBJ domains.

    alloy.python_allocators()                  # all three, CPU default
    alloy.python_allocators("obj:mimalloc")    # objects on mimalloc
    alloy.python_allocators("mem,obj:jemalloc,raw:python")

A spec is a comma-separated list of DOMAIN[:TARGET]: DOMAIN is raw, mem,
obj or all; TARGET is `default` (alloy's CPU default at each allocation,
what ALLOY_CONF's cpu names; the same when left out), the name of a CPU
allocator (a module is loaded by name, as for NumPy's arrays), or
`python` (new blocks from Python's own allocator again).  A domain not
named keeps pymalloc (or whatever it had).

Blocks made before the routing go back to the allocator that made them,
so routing is safe at any moment; what the interpreter made before it is
simply not counted (python/pymem.c says how).  The environment variable
ALLOY_PYTHON_ALLOCATORS holds a spec that `import alloy` applies, which
is how `python3 -m alloy --python-allocators` reaches the Pythons a
program starts.
"""
import os

from . import _alloy

DOMAINS = ("raw", "mem", "obj")
ENV = "ALLOY_PYTHON_ALLOCATORS"


def parse(spec):
    """[(domain, target)] in the order given, all expanded; ValueError
    naming the item for a bad one."""
    if spec is None or spec.strip() in ("", "all"):
        spec = "all"
    out = []
    for item in spec.split(","):
        item = item.strip()
        if not item:
            raise ValueError("alloy: empty item in Python allocator spec "
                             "%r" % spec)
        domain, _, target = item.partition(":")
        domain = domain.strip().lower()
        target = target.strip() or "default"
        if domain == "all":
            names = DOMAINS
        elif domain in DOMAINS:
            names = (domain,)
        else:
            raise ValueError(
                "alloy: unknown Python allocator domain %r in %r "
                "(raw, mem, obj or all)" % (domain, spec))
        if not all(c.isalnum() or c == "_" for c in target):
            raise ValueError(
                "alloy: bad allocator name %r in %r" % (target, spec))
        out += [(d, target) for d in names]
    return out


def python_allocators(spec=None):
    """Route PyMem's domains through alloy as spec says (None: all three
    on the CPU default).  Names are checked before anything is routed: a
    bad spec raises ValueError and changes nothing."""
    routes = parse(spec)
    seen = set()
    for domain, target in routes:
        if target in ("default", "python") or target in seen:
            continue
        # Loads the module; raises ValueError for an unknown name.
        _alloy._pymem_check(target)
        seen.add(target)
    # RAW last: the other two call it for their large blocks under
    # pymalloc, and nothing depends on the order otherwise.
    for domain, target in sorted(routes, key=lambda r: r[0] == "raw"):
        _alloy._pymem_route(domain, target)


def routed():
    """{domain: target} for each domain alloy's wrapper is installed on
    ('default', an allocator's name, or 'python')."""
    return {d: t for d, (t, _) in _alloy._pymem_routes().items()}


def foreign_frees():
    """{domain: blocks made before the routing that the wrapper gave back
    to their maker}."""
    return {d: n for d, (_, n) in _alloy._pymem_routes().items()}


def from_environment():
    """Apply ALLOY_PYTHON_ALLOCATORS, if set (import alloy does)."""
    spec = os.environ.get(ENV)
    if spec is not None:
        python_allocators(spec)
