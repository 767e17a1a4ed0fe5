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
#include <stdio.h>
#include <alloy/plain.h>

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

/*
 * The benchmark's anchor (python3 -m alloy.bench): NumPy on a library's
 * malloc family called directly, without alloy, e.g. jemalloc's or
 * mimalloc's, so that alloy's share of a backend's figure can be told
 * from the backend's own.  The functions are looked up by the caller
 * (ctypes) and must stay loaded; a handler is never freed, as arrays
 * made by it may outlive any switch.
 */
struct direct {
	PyDataMem_Handler handler; /* .allocator.ctx points here */
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
};

static void *direct_malloc(void *ctx, size_t size)
{
	return ((struct direct *)ctx)->malloc(size);
}

static void *direct_calloc(void *ctx, size_t nelem, size_t elsize)
{
	return ((struct direct *)ctx)->calloc(nelem, elsize);
}

static void *direct_realloc(void *ctx, void *ptr, size_t new_size)
{
	return ((struct direct *)ctx)->realloc(ptr, new_size ? new_size : 1);
}

static void direct_free(void *ctx, void *ptr, size_t size)
{
	((struct direct *)ctx)->free(ptr);
}

static PyObject *py_direct_handler(PyObject *self, PyObject *args)
{
	PyObject *fn[4];
	struct direct *d;
	const char *name;
	void *p[4];

	if (!PyArg_ParseTuple(args, "sOOOO", &name, &fn[0], &fn[1], &fn[2],
			      &fn[3]))
		return NULL;
	for (int i = 0; i < 4; i++) {
		p[i] = PyLong_AsVoidPtr(fn[i]);
		if (!p[i])
			return PyErr_Occurred()
				       ? NULL
				       : PyErr_Format(
						 PyExc_ValueError,
						 "alloy: function %d is NULL",
						 i);
	}
	d = PyMem_RawCalloc(1, sizeof(*d));
	if (!d)
		return PyErr_NoMemory();
	*(void **)&d->malloc = p[0];
	*(void **)&d->calloc = p[1];
	*(void **)&d->realloc = p[2];
	*(void **)&d->free = p[3];
	snprintf(d->handler.name, sizeof(d->handler.name), "%s", name);
	d->handler.version = 1;
	d->handler.allocator = (PyDataMemAllocator){
		.ctx = d,
		.malloc = direct_malloc,
		.calloc = direct_calloc,
		.realloc = direct_realloc,
		.free = direct_free,
	};
	return PyCapsule_New(&d->handler, "mem_handler", NULL);
}

/* Any handler capsule, or None for NumPy's default. */
static PyObject *py_set(PyObject *self, PyObject *h)
{
	if (h != Py_None && !PyCapsule_IsValid(h, "mem_handler"))
		return PyErr_Format(
			PyExc_TypeError,
			"alloy: set() takes a handler capsule or None, not %s",
			Py_TYPE(h)->tp_name);
	return PyDataMem_SetHandler(h == Py_None ? NULL : h);
}

static PyObject *py_install(PyObject *self, PyObject *noargs)
{
	return PyDataMem_SetHandler(capsule);
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
	{ "direct_handler", py_direct_handler, METH_VARARGS,
	  "direct_handler(name, malloc, calloc, realloc, free) -> a handler capsule for NumPy on those functions (addresses), without alloy; for benchmarks" },
	{ "set", py_set, METH_O,
	  "set(handler) -> the previous handler: a handler capsule (what install() returned), or None for NumPy's default" },
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
