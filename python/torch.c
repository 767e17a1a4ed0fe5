// SPDX-License-Identifier: MIT
/*
 * python/torch.c - loading the PyTorch adapter (liballoy_torch, C++ over
 * c10, interop/torch/) into the interpreter and switching it on and off.
 *
 * The adapter links libc10 by its soname, so once torch is imported it
 * binds to the very libc10 torch uses: c10::SetCPUAllocator reaches
 * torch's allocator table.  It is opened with RTLD_NODELETE: tensors made
 * through it hold its deleter until they die, whenever that is.
 */
#include <dlfcn.h>
#include <string.h>

#include "module.h"

static struct {
	void *handle;
	int (*enable)(void);
	int (*disable)(void);
	int (*enabled)(void);
} adapter;

/* The adapter beside this module: the build tree's, or the installed. */
static const char *adapter_path(void)
{
#ifdef ALLOY_TORCH_LIB
#ifdef ALLOY_TORCH_LIB_BUILD
	if (alloy__py_in_build_tree())
		return ALLOY_TORCH_LIB_BUILD;
#endif
	return ALLOY_TORCH_LIB;
#else
	return NULL;
#endif
}

static int load(void)
{
	const char *path = adapter_path();
	void *h;

	if (adapter.handle)
		return 0;
	if (!path) {
		PyErr_SetString(
			PyExc_ImportError,
			"alloy: built without the PyTorch adapter: configure found no libc10 (apt-get install libtorch-dev, then configure and build again)");
		return -1;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!h) {
		PyErr_Format(PyExc_ImportError,
			     "alloy: cannot load the PyTorch adapter: %s",
			     dlerror());
		return -1;
	}
	adapter.enable = (int (*)(void))dlsym(h, "alloy_torch_enable");
	adapter.disable = (int (*)(void))dlsym(h, "alloy_torch_disable");
	adapter.enabled = (int (*)(void))dlsym(h, "alloy_torch_enabled");
	if (!adapter.enable || !adapter.disable || !adapter.enabled) {
		PyErr_Format(
			PyExc_ImportError,
			"alloy: %s lacks alloy_torch_enable/disable/enabled",
			path);
		return -1;
	}
	adapter.handle = h;
	return 0;
}

static PyObject *py_torch_library(PyObject *self, PyObject *noargs)
{
	const char *path = adapter_path();

	if (!path)
		Py_RETURN_NONE;
	return PyUnicode_DecodeFSDefault(path);
}

static PyObject *py_torch_enable(PyObject *self, PyObject *noargs)
{
	int rc;

	if (alloy__py_ready() || load())
		return NULL;
	rc = adapter.enable();
	if (rc == -EBUSY)
		return PyErr_Format(
			PyExc_RuntimeError,
			"alloy: PyTorch's CPU allocator was set by someone else with a higher priority; alloy's cannot take its place");
	if (rc)
		return PyErr_Format(PyExc_RuntimeError,
				    "alloy: the PyTorch adapter failed (%s)",
				    alloy_strerror(rc));
	Py_RETURN_NONE;
}

static PyObject *py_torch_disable(PyObject *self, PyObject *noargs)
{
	if (!adapter.handle)
		Py_RETURN_NONE; /* never on */
	adapter.disable();
	Py_RETURN_NONE;
}

static PyObject *py_torch_enabled(PyObject *self, PyObject *noargs)
{
	return PyBool_FromLong(adapter.handle && adapter.enabled());
}

PyMethodDef alloy__py_torch_methods[] = {
	{ "_torch_library", py_torch_library, METH_NOARGS,
	  "the path of the PyTorch adapter this module loads, or None" },
	{ "_torch_enable", py_torch_enable, METH_NOARGS,
	  "make alloy PyTorch's CPU allocator (import torch first)" },
	{ "_torch_disable", py_torch_disable, METH_NOARGS,
	  "give PyTorch its own CPU allocator back" },
	{ "_torch_enabled", py_torch_enabled, METH_NOARGS,
	  "whether PyTorch's CPU allocator is alloy's" },
	{ NULL, NULL, 0, NULL },
};
