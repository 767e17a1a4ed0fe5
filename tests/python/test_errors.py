# SPDX-License-Identifier: MIT
"""The module's answers to bad or unusual input: the exception type and a
message that names the limit or the way out."""
import os

import numpy as np
import pytest

import alloy
from conftest import backends, run


def test_an_owner_label_over_the_limit_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match=r"300 bytes \(the most is 255\)"):
        alloy.owner_push("x" * 300)
    assert alloy.owner_current() is None


def test_owner_labels_nested_too_deep_are_a_value_error_naming_it():
    pushed = 0
    try:
        with pytest.raises(ValueError, match=r"the most is 32"):
            for _ in range(40):
                alloy.owner_push("a")
                pushed += 1
        assert pushed == 32
    finally:
        for _ in range(pushed):
            alloy.owner_pop()
    assert alloy.owner_current() is None


def test_a_device_string_with_an_index_names_its_default():
    assert alloy.get_default("cpu:0") == alloy.get_default("cpu")
    assert alloy.get_default(device="cpu:0") == alloy.get_default()
    alloy.set_default(alloy.get_default(), "cpu:0")
    with pytest.raises(ValueError, match="the index after ':'"):
        alloy.get_default("cpu:x")
    with pytest.raises(ValueError, match='unknown device "gpu"'):
        alloy.get_default("gpu:0")


def test_a_shape_may_be_any_integer_with_index():
    t = alloy.empty(np.int64(3))
    assert t.shape == (3,)
    assert alloy.empty((np.int32(2), np.int64(3))).shape == (2, 3)
    with pytest.raises(TypeError, match="shape must be an int"):
        alloy.empty(3.0)


def test_a_dlpack_device_id_beyond_32_bits_is_refused_with_a_message():
    class Huge:
        def __dlpack_device__(self):
            return (1, 2 ** 40)

        def __dlpack__(self, stream=None):
            raise AssertionError("must not be asked to export")

    with pytest.raises(OverflowError,
                       match=r"Huge.__dlpack_device__\(\) gave \(1, "
                             r"1099511627776\): DLPack's device type and "
                             r"id are 32-bit ints"):
        alloy.from_dlpack(Huge())


@pytest.mark.skipif("jemalloc" not in backends(),
                    reason="built without the jemalloc module")
def test_set_default_of_a_static_tls_library_says_how_to_run():
    env = {"GLIBC_TUNABLES": ""}
    r = run("import alloy\n"
            "try:\n"
            "    alloy.set_default('jemalloc')\n"
            "except ImportError as e:\n"
            "    print('ImportError', e)\n"
            "else:\n"
            "    print('loaded')\n", env=env)
    assert r.returncode == 0, r.stderr
    if r.stdout.startswith("loaded"):
        pytest.skip("jemalloc loaded late here (glibc's reserve sufficed)")
    assert r.stdout.startswith("ImportError"), r.stdout
    assert "static TLS" in r.stdout and "python3 -m alloy" in r.stdout
