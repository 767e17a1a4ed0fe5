# SPDX-License-Identifier: MIT
"""The extension modules of the package alloy, built against the liballoy
that pkg-config finds (alloy.pc; $PKG_CONFIG names the command, as
autoconf's does, e.g. "pkg-config --define-variable=prefix=/opt/alloy").

_alloy is built always; _numpy, NumPy's allocator handler, when NumPy's
headers are importable at build time (pip's --no-build-isolation with
the distribution's NumPy, or NumPy among the build requirements).
"""
import os
import shlex
import subprocess
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))


def pkg_config(*args):
    cmd = shlex.split(os.environ.get("PKG_CONFIG", "pkg-config"))
    try:
        out = subprocess.run(cmd + list(args) + ["alloy"], check=True,
                             stdout=subprocess.PIPE, universal_newlines=True)
    except FileNotFoundError:
        sys.exit("alloy: %s not found: install pkg-config (apt-get install "
                 "pkg-config)" % cmd[0])
    except subprocess.CalledProcessError:
        sys.exit("alloy: pkg-config does not know alloy: install liballoy "
                 "first (make install), or add the directory of its alloy.pc "
                 "to PKG_CONFIG_PATH")
    return out.stdout.strip()


def flags(option, prefix):
    return [f[len(prefix):] for f in shlex.split(pkg_config(option))
            if f.startswith(prefix)]


version = pkg_config("--modversion")
include_dirs = flags("--cflags-only-I", "-I")
library_dirs = flags("--libs-only-L", "-L")
libdir = pkg_config("--variable=libdir")
prefix = pkg_config("--variable=prefix")
bindir = pkg_config("--variable=bindir") or os.path.join(prefix, "bin")


def installed_header(name):
    return any(os.path.exists(os.path.join(d, "alloy", name))
               for d in include_dirs + [os.path.join(prefix, "include")])


def c_string(s):
    return '"%s"' % s.replace("\\", "\\\\").replace('"', '\\"')


macros = [("_GNU_SOURCE", None), ("ALLOY_BINDIR", c_string(bindir))]
if installed_header("dlpack.h"):
    macros.append(("ALLOY_HAVE_DLPACK", None))
torch_lib = os.path.join(libdir, "liballoy_torch.so.0")
if os.path.exists(torch_lib):
    macros.append(("ALLOY_TORCH_LIB", c_string(torch_lib)))

common = dict(include_dirs=include_dirs, library_dirs=library_dirs,
              runtime_library_dirs=[libdir], libraries=["alloy"],
              define_macros=macros, extra_compile_args=["-std=c11"])
sources = ["common.c", "module.c", "registry.c", "reporter.c", "tensor.c",
           "torch.c", "cuda.c", "pymem.c", "frames.c"]
extensions = [Extension("alloy._alloy", sources, **common)]
try:
    import numpy
except ImportError:
    sys.stderr.write("alloy: NumPy's headers are not importable: building "
                     "without alloy._numpy (NumPy's arrays on alloy)\n")
else:
    np_common = dict(common, include_dirs=include_dirs + [numpy.get_include()])
    extensions.append(Extension("alloy._numpy", ["numpy_handler.c"],
                                **np_common))

setup(version=version, ext_modules=extensions)
