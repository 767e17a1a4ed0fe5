// SPDX-License-Identifier: MIT
/*
 * python/numpy_handler.c - the extension module alloy._numpy: NumPy's
 * array data on alloy, through a PyDataMem_Handler (NEP 49).
 *
 * The handler's functions are the plain-pointer API on the CPU default, so
 * ALLOY_CONF picks the backend and the reporter sees every array.  Three
 * things NumPy's contract needs:
 *
 *  - free gets a size, and NumPy's is not always the block's (a resized
 *    or reshaped array can pass another); alloy_free(ptr) reads the size
 *    from the block's header and never looks at NumPy's;
 *  - calloc goes to the backend as a zeroed allocation, so a backend that
 *    has lazily zeroed pages (jemalloc, mimalloc, fresh mmap) keeps them;
 *  - realloc to 0 bytes would free the block and return NULL, which NumPy
 *    takes for a failure with the block still live: it is asked for one
 *    byte instead, as NumPy's own callers do.
 *
 * A handler is set per context (a contextvar): this module only sets and
 * restores it in the calling context; alloy/numpy.py covers new threads.
 * Each array keeps the handler that made it, so arrays made before or
 * after a switch are all freed by their maker.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <alloy/malloc.h>

#define HANDLER_NAME "alloy"

static void *handler_malloc(void *ctx, size_t size)
{
	return alloy_malloc(size);
}

static void *handler_calloc(void *ctx, size_t nelem, size_t elsize)
{
	return alloy_calloc(nelem, elsize);
}

static void *handler_realloc(void *ctx, void *ptr, size_t new_size)
{
	return alloy_realloc(ptr, new_size ? new_size : 1);
}

static void handler_free(void *ctx, void *ptr, size_t size)
{
	alloy_free(ptr);
}

static PyDataMem_Handler handler = {
	.name = HANDLER_NAME,
	.version = 1,
	.allocator = {
		.ctx = NULL,
		.malloc = handler_malloc,
		.calloc = handler_calloc,
		.realloc = handler_realloc,
		.free = handler_free,
	},
};

/* The capsule NumPy gets: one for the life of the process. */
static PyObject *capsule;

static PyObject *py_install(PyObject *self, PyObject *noargs)
{
	return PyDataMem_SetHandler(capsule);
}

static PyObject *py_restore(PyObject *self, PyObject *old)
{
	/* None: NumPy's default. */
	if (old != Py_None && !PyCapsule_IsValid(old, "mem_handler"))
		return PyErr_Format(PyExc_TypeError,
				    "alloy: restore() takes a handler capsule from install(), not %s",
				    Py_TYPE(old)->tp_name);
	return PyDataMem_SetHandler(old == Py_None ? NULL : old);
}

static PyObject *py_current_is_alloy(PyObject *self, PyObject *noargs)
{
	PyObject *now = PyDataMem_GetHandler();
	int is;

	if (!now)
		return NULL;
	is = now == capsule;
	Py_DECREF(now);
	return PyBool_FromLong(is);
}

static PyMethodDef methods[] = {
	{ "install", py_install, METH_NOARGS,
	  "install() -> the previous handler: make alloy NumPy's allocator in this context" },
	{ "restore", py_restore, METH_O,
	  "restore(old) -> alloy's handler: put back what install() returned" },
	{ "current_is_alloy", py_current_is_alloy, METH_NOARGS,
	  "whether this context's NumPy handler is alloy's" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "alloy._numpy",
	.m_doc = "alloy's PyDataMem_Handler for NumPy (NEP 49).",
	.m_size = -1,
	.m_methods = methods,
};

PyMODINIT_FUNC PyInit__numpy(void);

PyMODINIT_FUNC PyInit__numpy(void)
{
	PyObject *m;

	import_array();
	capsule = PyCapsule_New(&handler, "mem_handler", NULL);
	if (!capsule)
		return NULL;
	m = PyModule_Create(&module_def);
	if (!m)
		return NULL;
	Py_INCREF(capsule);
	if (PyModule_AddObject(m, "handler", capsule) ||
	    PyModule_AddStringConstant(m, "name", HANDLER_NAME)) {
		Py_DECREF(capsule);
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
