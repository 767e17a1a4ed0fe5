# SPDX-License-Identifier: MIT
"""NumPy's arrays on alloy: the handler, what the reporter sees, calloc,
realloc, NumPy's untrustworthy free sizes, threads, enable/disable and the
context manager."""
import sys
import threading

import numpy as np
import pytest

import alloy
from conftest import backends, run

handler_name = np.core.multiarray.get_handler_name


@pytest.fixture
def on():
    alloy.numpy.enable()
    yield
    alloy.numpy.disable()


def test_handler_is_named_alloy_and_arrays_are_alloys(on):
    assert handler_name() == "alloy"
    a = np.arange(1000.0)
    assert handler_name(a) == "alloy"
    assert alloy.plain_owns(a.ctypes.data)
    assert alloy.plain_allocator(a.ctypes.data) == alloy.get_default()


def test_any_address_may_be_asked_about(on):
    """Memory alloy did not make, even right after an unreadable page,
    gets False / None, never a fault."""
    import ctypes
    import mmap
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.munmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t)
    page = mmap.PAGESIZE
    base = libc.mmap(None, 2 * page, mmap.PROT_READ | mmap.PROT_WRITE,
                     mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert base not in (None, ctypes.c_void_p(-1).value)
    assert libc.mprotect(base, page, 0) == 0  # PROT_NONE
    try:
        for addr in (0, 8, base + page, base + page + 8, base + page + 16):
            assert alloy.plain_owns(addr) is False
            assert alloy.plain_allocator(addr) is None
    finally:
        libc.munmap(base, 2 * page)
    a = np.arange(1000.0)
    assert alloy.plain_owns(a.ctypes.data)
    assert not alloy.plain_owns(a.ctypes.data + 64)


def test_the_reporter_counts_arrays(on):
    with alloy.reporter():
        before = alloy.snapshot()["total"]
        a = np.empty(250_000)  # 2 MB, one block
        mid = alloy.snapshot()["total"]
        del a
        after = alloy.snapshot()["total"]
    assert mid["current_bytes"] - before["current_bytes"] == 2_000_000
    assert mid["allocs"] == before["allocs"] + 1
    assert after["current_bytes"] == before["current_bytes"]
    assert after["frees"] == before["frees"] + 1


def test_calloc_gives_zeroes_and_realloc_keeps_data(on):
    z = np.zeros((300, 700))
    assert alloy.plain_owns(z.ctypes.data)
    assert not z.any()
    a = np.arange(10, dtype=np.int64)
    a.resize(100_000, refcheck=False)   # the handler's realloc
    assert alloy.plain_owns(a.ctypes.data)
    assert list(a[:10]) == list(range(10)) and not a[10:].any()
    a.resize(3, refcheck=False)
    assert list(a) == [0, 1, 2]
    a.resize(0, refcheck=False)         # NumPy asks for 0: a live block
    del a, z


def test_frees_never_trust_numpys_size(on):
    """Shrunk, grown and empty arrays: NumPy's free then passes a size
    that is not the block's; every block still goes back (bad frees 0,
    live count back where it was)."""
    bad = alloy.plain_bad_frees()
    with alloy.reporter():
        start = alloy.snapshot()["total"]["live_blocks"]
        for n in (0, 1, 7, 4096, 100_001):
            a = np.ones(n, dtype=np.int8)
            a.resize(n // 2 + 1, refcheck=False)
            b = np.empty((0, 5))
            c = np.ones(8, dtype=bool).view(np.int64)
            del a, b, c
        end = alloy.snapshot()["total"]["live_blocks"]
    assert end == start
    assert alloy.plain_bad_frees() == bad


def test_threads_started_after_enable_are_covered(on):
    seen = {}

    def work():
        seen["name"] = handler_name()
        a = np.ones(64)
        seen["owned"] = alloy.plain_owns(a.ctypes.data)

    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == {"name": "alloy", "owned": True}


def test_disable_restores_numpy_and_stops_covering_threads():
    alloy.numpy.enable()
    a = np.ones(1000)
    alloy.numpy.disable()
    assert handler_name() == "default_allocator"
    seen = {}
    t = threading.Thread(target=lambda: seen.update(n=handler_name()))
    t.start()
    t.join()
    assert seen["n"] == "default_allocator"
    assert not alloy.numpy.enabled()
    # Made by alloy, freed by alloy after the switch.
    assert handler_name(a) == "alloy"
    bad = alloy.plain_bad_frees()
    del a
    assert alloy.plain_bad_frees() == bad


def test_disable_after_an_enable_inside_the_context_manager():
    """enable() inside `with allocator():` must not take alloy's own
    handler for the one to give back."""
    with alloy.numpy.allocator():
        alloy.numpy.enable()
    alloy.numpy.disable()
    assert not alloy.numpy.enabled()
    assert not alloy.numpy.in_use()
    assert handler_name() == "default_allocator"
    a = np.ones(10000)
    assert handler_name(a) == "default_allocator"
    assert alloy.plain_allocator(a.ctypes.data) is None


def test_disable_in_a_worker_reaches_the_main_threads_context():
    """A worker cannot set the main thread's context, yet its disable()
    must take the main thread's new arrays off alloy; arrays made before
    and after go back to their makers."""
    alloy.numpy.enable()
    before = np.ones(10000)
    assert alloy.plain_owns(before.ctypes.data)
    t = threading.Thread(target=alloy.numpy.disable)
    t.start()
    t.join()
    assert not alloy.numpy.enabled()
    assert not alloy.numpy.in_use()
    bad = alloy.plain_bad_frees()
    after = [np.ones(n) for n in (1, 1000, 100000)]
    for a in after:
        assert alloy.plain_allocator(a.ctypes.data) is None
    grown = np.zeros(10)
    grown.resize(100000, refcheck=False)  # NumPy's realloc of its block
    assert alloy.plain_allocator(grown.ctypes.data) is None
    assert grown.sum() == 0
    with alloy.reporter():
        base = alloy.snapshot()["total"]["current_bytes"]
        c = np.ones(1000)
        assert alloy.snapshot()["total"]["current_bytes"] == base
    del before, after, grown, c
    assert alloy.plain_bad_frees() == bad
    # And on again in the same contexts.
    alloy.numpy.enable()
    try:
        d = np.ones(1000)
        assert alloy.plain_owns(d.ctypes.data)
    finally:
        alloy.numpy.disable()


def test_a_profiler_set_by_threading_is_chained():
    calls = []

    def prof(frame, event, arg):
        calls.append(event)

    threading.setprofile(prof)
    try:
        alloy.numpy.enable()
        seen = {}
        t = threading.Thread(target=lambda: seen.update(n=handler_name()))
        t.start()
        t.join()
        alloy.numpy.disable()
        assert threading.getprofile() is prof
    finally:
        threading.setprofile(None)
    assert seen["n"] == "alloy"
    assert calls, "the earlier profile function was not called"


def test_allocator_context_manager_is_scoped():
    assert handler_name() == "default_allocator"
    with alloy.numpy.allocator():
        assert alloy.numpy.in_use()
        a = np.ones(10)
        seen = {}
        t = threading.Thread(target=lambda: seen.update(n=handler_name()))
        t.start()
        t.join()
    assert handler_name() == "default_allocator"
    assert handler_name(a) == "alloy"
    assert seen["n"] == "default_allocator"  # NumPy's rule for threads


@pytest.mark.parametrize("backend", backends())
def test_alloy_conf_picks_the_backend(backend):
    code = """
import sys, alloy, numpy as np
alloy.numpy.enable()
a = np.ones(1 << 16)
print(alloy.plain_allocator(a.ctypes.data))
"""
    # The tunable lets a late-loaded libjemalloc have its static TLS.
    r = run(code, conf="cpu:" + backend,
            env={"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=16384"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == backend


# Each backend's own zeroed allocation, called directly (ctypes), as the
# reference: alloy must touch no more pages than the backend itself does.
OWN_ZEROED = {
    # alloy's default has no zeroed allocation of its own to compare
    # with; glibc's calloc maps big blocks fresh, untouched.
    "default": ("libc.so.6", "lib.calloc(1, n)"),
    "jemalloc": ("libjemalloc.so.2", "lib.mallocx(n, 0x40)"),  # MALLOCX_ZERO
    "mimalloc": ("libmimalloc.so.2", "lib.mi_zalloc(n)"),
}


@pytest.mark.parametrize("backend", [b for b in backends()
                                     if b in OWN_ZEROED])
def test_calloc_keeps_lazily_zeroed_pages(backend):
    """np.zeros of 256 MiB through alloy grows RSS no more than the
    backend's own zeroed allocation of as much (default and jemalloc: not
    at all; mimalloc 2.0 zeroes huge blocks itself)."""
    soname, call = OWN_ZEROED[backend]
    code = """
import ctypes, alloy, numpy as np
alloy.numpy.enable()
def rss():
    return int(open('/proc/self/statm').read().split()[1]) * 4096
lib = ctypes.CDLL(%r)
for f in ("mallocx", "mi_zalloc", "calloc"):
    if hasattr(lib, f):
        getattr(lib, f).restype = ctypes.c_void_p
n = 1 << 28
before = rss()
z = np.zeros(n // 8)
through_alloy = rss() - before
assert alloy.plain_owns(z.ctypes.data) and z[::4096].sum() == 0
before = rss()
assert %s
own = rss() - before
print(through_alloy, own)
""" % (soname, call)
    r = run(code, conf="cpu:" + backend,
            env={"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=16384"})
    assert r.returncode == 0, r.stderr
    through_alloy, own = map(int, r.stdout.split())
    assert through_alloy <= own + (16 << 20), (through_alloy, own)


def test_a_backend_that_cannot_load_is_an_error_not_a_fallback():
    if "jemalloc" not in backends():
        pytest.skip("skipped: built without the jemalloc module")
    r = run("import alloy; alloy.numpy.enable()", conf="cpu:jemalloc",
            env={"GLIBC_TUNABLES": ""})
    assert r.returncode != 0
    assert "could not be put in force" in r.stderr
    assert "python3 -m alloy" in r.stderr
    r = run("import alloy; alloy.snapshot()", conf="cpu:no_such_allocator")
    assert r.returncode != 0
    assert "no_such_allocator" in r.stderr
