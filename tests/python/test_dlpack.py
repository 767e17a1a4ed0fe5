# SPDX-License-Identifier: MIT
"""alloy tensors and DLPack with NumPy (and PyTorch in test_torch.py):
one buffer both ways, deleters run once, every refusal a clear error."""
import gc
import weakref

import numpy as np
import pytest

import alloy
from conftest import run

NUMERIC = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
           "uint64", "float16", "float32", "float64", "complex64",
           "complex128"]


def filled(shape, dtype="float32"):
    t = alloy.empty(shape, dtype)
    v = np.asarray(t)               # the buffer protocol: writable
    v[...] = np.arange(v.size).reshape(v.shape)
    return t


def test_empty_makes_a_tensor_from_the_default():
    t = alloy.empty((2, 3), "float64")
    assert t.shape == (2, 3) and t.dtype == "double" and t.nbytes == 48
    assert t.device == "cpu:0"
    assert t.allocator == alloy.get_default()
    assert t.__dlpack_device__() == (1, 0)
    with pytest.raises(TypeError, match="no element type"):
        alloy.empty(3, "quaternion")
    with pytest.raises(ValueError):
        alloy.empty((-1,))
    with pytest.raises(ValueError, match="device"):
        alloy.empty(3, device="tpu")
    with pytest.raises(ValueError, match="CPU is one device, index 0"):
        alloy.empty(3, device="cpu:7")
    # The library's own code decides the exception and its text.
    with pytest.raises(OverflowError, match="product of the dims.*EOVERFLOW"):
        alloy.empty([2 ** 40, 2 ** 40])
    with pytest.raises(OverflowError, match="itemsize 4.*EOVERFLOW"):
        alloy.empty(2 ** 62)


def test_the_buffer_is_refused_where_fortran_order_is_asked():
    import ctypes
    get = ctypes.pythonapi.PyObject_GetBuffer
    get.argtypes = (ctypes.py_object, ctypes.c_void_p, ctypes.c_int)
    release = ctypes.pythonapi.PyBuffer_Release
    release.argtypes = (ctypes.c_void_p,)
    f_contiguous = 0x40 | 0x10 | 0x08  # PyBUF_F_CONTIGUOUS
    view = ctypes.create_string_buffer(256)  # room for a Py_buffer
    with pytest.raises(BufferError, match="not Fortran-contiguous"):
        get(alloy.empty((2, 3)), view, f_contiguous)
    # One dim over 1: C order is Fortran order too.
    t = alloy.empty((1, 5))
    assert get(t, view, f_contiguous) == 0
    release(view)


def test_alloy_to_numpy_is_the_same_buffer():
    t = filled((4, 5))
    a = np.from_dlpack(t)
    assert a.ctypes.data == t.data_ptr
    assert a.dtype == np.float32 and a.shape == (4, 5)
    assert a[3, 4] == 19
    assert t.storage_refs == 2      # the export holds the storage
    del t
    gc.collect()
    assert a[3, 4] == 19            # still alive for NumPy
    del a
    gc.collect()


def test_numpy_to_alloy_to_numpy_is_the_same_buffer():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    t = alloy.from_dlpack(a)
    assert t.data_ptr == a.ctypes.data
    assert t.shape == (3, 4) and t.dtype == "int32"
    assert t.allocator is None      # external memory
    b = np.from_dlpack(t)
    assert b.ctypes.data == a.ctypes.data
    a[2, 3] = 99
    assert b[2, 3] == 99


def test_alloy_to_numpy_to_alloy_is_the_same_buffer():
    t = filled((1000,))
    # NumPy 1.24 will not export what from_dlpack gave it (read-only);
    # np.asarray shares the buffer writable through the buffer protocol.
    back = alloy.from_dlpack(np.asarray(t))
    assert back.data_ptr == t.data_ptr
    assert np.asarray(back)[999] == 999


def test_the_producers_deleter_runs_once_when_alloy_lets_go():
    a = np.arange(100.0)
    ref = weakref.ref(a)
    t = alloy.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None        # alloy's tensor keeps NumPy's array
    t2 = alloy.from_dlpack(t)       # alloy -> alloy shares the storage
    del t
    gc.collect()
    assert ref() is not None
    del t2
    gc.collect()
    assert ref() is None


@pytest.mark.parametrize("dtype", NUMERIC)
def test_every_numeric_type_round_trips(dtype):
    a = np.arange(6).astype(dtype)
    t = alloy.from_dlpack(a)
    b = np.from_dlpack(t)
    assert b.dtype == np.dtype(dtype)
    assert b.ctypes.data == a.ctypes.data
    assert (b == a).all()


def test_types_dlpack_cannot_carry_are_refused_clearly():
    with pytest.raises(BufferError, match="bool.*uint8"):
        alloy.empty(3, "bool").__dlpack__()
    with pytest.raises(BufferError, match="heap strings"):
        alloy.empty(3, "string").__dlpack__()


def test_strided_arrays_are_refused_and_left_to_numpy():
    a = np.arange(20.0).reshape(4, 5)[:, ::2]
    with pytest.raises(BufferError, match="not C-contiguous"):
        alloy.from_dlpack(a)
    assert a.sum() == np.arange(20.0).reshape(4, 5)[:, ::2].sum()
    # Size-1 dims and empty arrays have no stride that matters.
    assert alloy.from_dlpack(np.ones((1, 5))[:, :]).shape == (1, 5)
    assert alloy.from_dlpack(np.ones((3, 0))).shape == (3, 0)


def test_a_capsule_is_consumed_once():
    cap = filled((3,)).__dlpack__()
    t = alloy.from_dlpack(cap)
    assert t.shape == (3,)
    with pytest.raises(ValueError, match="consumed already"):
        alloy.from_dlpack(cap)


def test_wrong_device_and_wrong_objects_get_clear_errors():
    class Vulkan:
        def __dlpack_device__(self):
            return (7, 0)

        def __dlpack__(self, stream=None):
            raise AssertionError("must not be asked for its tensor")

    with pytest.raises(BufferError, match="7 \\(Vulkan\\)"):
        alloy.from_dlpack(Vulkan())

    class ListDevice(Vulkan):
        def __dlpack_device__(self):
            return [1, 0]

    with pytest.raises(TypeError, match="not a \\(type, id\\) tuple"):
        alloy.from_dlpack(ListDevice())
    with pytest.raises(TypeError, match="no __dlpack__"):
        alloy.from_dlpack([1, 2, 3])
    import ctypes
    other = ctypes.pythonapi.PyCapsule_New
    other.restype = ctypes.py_object
    other.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)
    with pytest.raises(TypeError, match="not a DLPack tensor"):
        alloy.from_dlpack(other(1, b"something_else", None))
    with pytest.raises(BufferError, match="stream"):
        alloy.empty(2).__dlpack__(stream=1)


def test_an_unconsumed_capsule_is_deleted_by_its_destructor():
    t = filled((8,))
    cap = t.__dlpack__()
    assert t.storage_refs == 2
    del cap
    gc.collect()
    assert t.storage_refs == 1


def test_leak_report_is_zero_after_round_trips():
    r = run("""
import gc, alloy, numpy as np
alloy.numpy.enable()
for i in range(20):
    t = alloy.empty((64, 64), "float32")
    a = np.from_dlpack(t)
    back = alloy.from_dlpack(np.asarray(t))
    c = alloy.from_dlpack(np.ones(100))
    d = np.from_dlpack(c)
    del t, a, back, c, d
gc.collect()
""", conf="report:stderr")
    assert r.returncode == 0, r.stderr
    assert "no leaks" in r.stderr


def test_export_and_import_of_one_gib_copy_nothing():
    t = alloy.empty(1 << 28, "float32")    # 1 GiB, pages untouched
    with alloy.reporter():
        before = alloy.snapshot()["total"]["total_bytes"]
        a = np.from_dlpack(t)
        back = alloy.from_dlpack(np.asarray(t))
        after = alloy.snapshot()["total"]["total_bytes"]
    assert a.ctypes.data == back.data_ptr == t.data_ptr
    assert after == before                 # not a byte allocated


def test_an_import_freed_in_a_subinterpreter_does_not_deadlock():
    """The deleter of an imported tensor runs on a thread that holds the
    GIL of a subinterpreter: it must not wait for the GIL again."""
    code = """
import _xxsubinterpreters as interpreters
i = interpreters.create()
interpreters.run_string(i, '''
import alloy
t = alloy.empty((10,), "float32")
u = alloy.from_dlpack(t)
del t, u
print("freed in a subinterpreter")
''')
interpreters.destroy(i)
print("done")
"""
    try:
        import _xxsubinterpreters  # noqa: F401
    except ImportError:
        pytest.skip("no _xxsubinterpreters in this Python")
    r = run(code, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "freed in a subinterpreter\ndone\n"


def test_a_torch_tensor_imported_and_alive_at_exit_is_no_leak(torch):
    """Objects still referenced when the interpreter finalizes are freed
    after Py_IsInitialized() turns false; the producer's deleter must run
    then (the thread holds the GIL), not be skipped into a leak."""
    r = run(args=["--torch", "--conf", "report:stderr", "-c",
                  "import sys, torch, alloy\n"
                  "x = torch.ones(1000, dtype=torch.float64)\n"
                  "sys.keep = alloy.from_dlpack(x)\n"
                  "del x\n"], module_alloy=True)
    assert r.returncode == 0, r.stderr
    assert "0 blocks, 0 bytes: no leaks" in r.stderr, r.stderr
