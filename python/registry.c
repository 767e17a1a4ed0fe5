// SPDX-License-Identifier: MIT
/*
 * python/registry.c - the module's functions on alloy's allocators: the
 * defaults per device, the registered allocators, the owner of a plain
 * block, and the configuration's problems.
 */
#include "common.h" /* Python.h first, as Python asks */
#include "module.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

/* ---- the default allocators ------------------------------------------ */

static PyObject *py_ready(PyObject *self, PyObject *noargs)
{
	if (alloy__py_ready())
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *py_get_default(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = { "device", NULL };
	const char *device = "cpu";
	struct alloy_allocator *a;
	struct alloy_device dev;

	/* A default is a device type's: "cuda:1" asks about cuda's. */
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|s", names, &device) ||
	    alloy__py_ready() || alloy__py_device(device, &dev))
		return NULL;
	a = alloy_get_default(dev.type);
	if (!a)
		Py_RETURN_NONE;
	return PyUnicode_FromString(alloy_allocator_name(a));
}

static PyObject *py_set_default(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = { "name", "device", NULL };
	const char *name, *device = "cpu";
	struct alloy_device dev;
	PyThreadState *ts;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "s|s", names, &name,
					 &device) ||
	    alloy__py_ready() || alloy__py_device(device, &dev))
		return NULL;
	/* A module load may take a while; other threads go on. */
	ts = PyEval_SaveThread();
	rc = alloy_set_default_by_name(dev.type, name);
	PyEval_RestoreThread(ts);
	/*
	 * A library that needs static TLS cannot be loaded this late in a
	 * plain interpreter: say so, and how to start one that can.
	 */
	if (rc && strstr(alloy_last_error(), "static TLS"))
		return PyErr_Format(
			PyExc_ImportError,
			"alloy: set_default(\"%s\"): %s. A library loaded after the interpreter started gets static TLS only from glibc's small reserve: run the program with `python3 -m alloy SCRIPT` (it restarts the interpreter with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384), or set that variable before Python starts",
			name, alloy_last_error());
	if (rc)
		return alloy__py_raise(NULL, rc);
	Py_RETURN_NONE;
}

static int add_allocator(struct alloy_allocator *a, void *arg)
{
	PyObject *d = Py_BuildValue(
		"{s:s,s:s,s:s,s:L,s:L}", "name", alloy_allocator_name(a),
		"device",
		alloy_device_type_name(alloy_allocator_device_type(a)) ?: "?",
		"origin", alloy_allocator_origin(a), "live_blocks",
		alloy_allocator_live_blocks(a), "live_bytes",
		alloy_allocator_live_bytes(a));
	int rc = d ? PyList_Append(arg, d) : -1;

	Py_XDECREF(d);
	return rc;
}

static PyObject *py_allocators(PyObject *self, PyObject *noargs)
{
	PyObject *list;

	if (alloy__py_ready())
		return NULL;
	list = PyList_New(0);
	if (list && alloy_foreach_allocator(add_allocator, list)) {
		Py_DECREF(list);
		return NULL;
	}
	return list;
}

static PyObject *py_conf_errors(PyObject *self, PyObject *noargs)
{
	PyObject *list;

	alloy_init();
	list = PyList_New(0);
	for (int i = 0; list && i < alloy_conf_error_count(); i++) {
		PyObject *s = PyUnicode_FromString(alloy_conf_error(i));

		if (!s || PyList_Append(list, s)) {
			Py_XDECREF(s);
			Py_CLEAR(list);
			break;
		}
		Py_DECREF(s);
	}
	return list;
}

/*
 * The allocator of the plain block at the address addr holds, NULL when
 * there is none; -1 with an exception set.  The C calls read the header
 * in front of the block, which a pointer the caller holds always has;
 * any int can come from Python, so the bytes are first tried by write(2)
 * into a pipe, which fails with EFAULT where reading them would fault.
 * The header fits in the ALLOY_PLAIN_ALIGN bytes before a block (its
 * offset from the allocation is at least that).  A pointer below that or
 * not ALLOY_PLAIN_ALIGN-aligned is no plain block's, without a look.
 */
static int plain_owner(PyObject *addr, struct alloy_allocator **out)
{
	uintptr_t p = (uintptr_t)PyLong_AsVoidPtr(addr);
	int fd[2];
	ssize_t n;

	*out = NULL;
	if (!p && PyErr_Occurred())
		return -1;
	/* Every plain block is ALLOY_PLAIN_ALIGN-aligned: no probe needed. */
	if (p < ALLOY_PLAIN_ALIGN || p % ALLOY_PLAIN_ALIGN)
		return 0;
	if (pipe2(fd, O_CLOEXEC)) {
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	n = write(fd[1], (const void *)(p - ALLOY_PLAIN_ALIGN),
		  ALLOY_PLAIN_ALIGN);
	close(fd[0]);
	close(fd[1]);
	if (n < 0 && errno != EFAULT) {
		PyErr_SetFromErrno(PyExc_OSError);
		return -1;
	}
	/* Short: the bytes run into a page that cannot be read. */
	if (n == ALLOY_PLAIN_ALIGN)
		*out = alloy_plain_allocator((const void *)p);
	return 0;
}

static PyObject *py_plain_owns(PyObject *self, PyObject *addr)
{
	struct alloy_allocator *a;

	if (plain_owner(addr, &a))
		return NULL;
	return PyBool_FromLong(a != NULL);
}

static PyObject *py_plain_allocator(PyObject *self, PyObject *addr)
{
	struct alloy_allocator *a;

	if (plain_owner(addr, &a))
		return NULL;
	if (!a)
		Py_RETURN_NONE;
	return PyUnicode_FromString(alloy_allocator_name(a));
}

static PyObject *py_plain_bad_frees(PyObject *self, PyObject *noargs)
{
	return PyLong_FromUnsignedLongLong(alloy_plain_bad_frees());
}

/*
 * The program's control socket (`alloy ctl`, `alloy top`): its path, or
 * None where control:0 or secure-execution mode keeps it closed.
 */
static PyObject *py_control_start(PyObject *self, PyObject *noargs)
{
	int rc;

	if (alloy__py_ready())
		return NULL;
	rc = alloy_control_start();
	if (rc == -ECANCELED || rc == -EPERM)
		Py_RETURN_NONE;
	if (rc < 0)
		return alloy__py_raise(PyExc_RuntimeError, rc);
	return PyUnicode_FromString(alloy_control_path());
}

PyMethodDef alloy__py_registry_methods[] = {
	{ "_ready", py_ready, METH_NOARGS,
	  "Initialise alloy; raise if a default ALLOY_CONF names is not in force." },
	{ "get_default", (PyCFunction)(void (*)(void))py_get_default,
	  METH_VARARGS | METH_KEYWORDS,
	  "get_default(device='cpu') -> the default allocator's name" },
	{ "set_default", (PyCFunction)(void (*)(void))py_set_default,
	  METH_VARARGS | METH_KEYWORDS,
	  "set_default(name, device='cpu'): make name the default, loading its module if needed" },
	{ "allocators", py_allocators, METH_NOARGS,
	  "allocators() -> [{'name', 'device', 'origin', 'live_blocks', 'live_bytes'}]" },
	{ "plain_owns", py_plain_owns, METH_O,
	  "plain_owns(address) -> whether address is a live block alloy made for NumPy or PyTorch (the plain-pointer API); any int may be asked" },
	{ "plain_allocator", py_plain_allocator, METH_O,
	  "plain_allocator(address) -> the name of the allocator that made that block, or None" },
	{ "plain_bad_frees", py_plain_bad_frees, METH_NOARGS,
	  "plain_bad_frees() -> frees of pointers alloy did not make (or freed twice) it saw" },
	{ "control_start", py_control_start, METH_NOARGS,
	  "control_start() -> the control socket's path (alloy ctl, alloy top), or None where control:0 keeps it closed" },
	{ "conf_errors", py_conf_errors, METH_NOARGS,
	  "conf_errors() -> the problems found in ALLOY_CONF, one string each" },
	{ NULL, NULL, 0, NULL },
};
