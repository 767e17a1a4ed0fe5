/* SPDX-License-Identifier: MIT */
/*
 * python/common.h - what every file of the extension module alloy._alloy
 * uses (python/common.c): the readiness check and alloy's errors as
 * Python's.  Includes Python.h first, as Python asks.
 */
#ifndef ALLOY_PYTHON_COMMON_H
#define ALLOY_PYTHON_COMMON_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <alloy/alloy.h>

/*
 * Initialise liballoy on first use and check that every default ALLOY_CONF
 * names is the one in force: a backend that could not be loaded (jemalloc
 * late in a process: static TLS) must not pass silently for another.
 * 0, or -1 with RuntimeError set (each time: the configuration does not
 * heal).
 */
int alloy__py_ready(void);

/*
 * Raise the Python exception for alloy's error code rc (negative errno),
 * with alloy_last_error() as its message; exc NULL picks it from rc.
 * Returns NULL, for `return alloy__py_raise(...)`.
 */
PyObject *alloy__py_raise(PyObject *exc, int rc);

/*
 * Whether this module is the build tree's (python/stage, before `make
 * install`): then the adapter and the alloy command are the build tree's.
 */
bool alloy__py_in_build_tree(void);

/*
 * The path of the alloy command that goes with this module: the build
 * tree's, or the one installed beside liballoy; NULL when not known.
 */
const char *alloy__py_command(void);

/*
 * "cpu", "cpu:0", "cuda:1", "cuda_host" -> the device; -1 with
 * ValueError set.
 */
int alloy__py_device(const char *s, struct alloy_device *dev);

/* "cpu" -> ALLOY_DEVICE_CPU; -1 with ValueError set. */
int alloy__py_device_type(const char *name);

#endif /* ALLOY_PYTHON_COMMON_H */
