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
 *
 * alloy.numpy.enable() is process-wide, but a context can only be set
 * from its own thread: a disable() in one thread cannot reach the
 * contexts enable() set in others.  So enable() installs a second
 * handler, also named "alloy", that serves from alloy while the process
 * switch is on and from the handler in force before enable() (NumPy's
 * own, usually) once it is off.  The blocks it makes from that handler
 * are kept in a set of addresses, so that each goes back to its maker;
 * the set is looked at only while it holds any.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_22_API_VERSION
#include <numpy/arrayobject.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

/* ---- enable()'s handler: alloy while the process switch is on -------- */

static atomic_bool process_on;
/* The handler served from while off; its capsule is held for good. */
static PyDataMem_Handler *_Atomic process_previous;

/* The blocks made from a previous handler: address -> its handler. */
struct foreign {
	void *ptr;
	PyDataMem_Handler *maker;
	struct foreign *next;
};

#define FOREIGN_BUCKETS 256
static struct foreign *foreign_table[FOREIGN_BUCKETS];
static atomic_size_t foreign_count;
static pthread_mutex_t foreign_lock = PTHREAD_MUTEX_INITIALIZER;

static struct foreign **foreign_bucket(const void *ptr)
{
	uintptr_t a = (uintptr_t)ptr >> 4;

	return &foreign_table[(a ^ (a >> 8) ^ (a >> 16)) % FOREIGN_BUCKETS];
}

/*
 * The node of a foreign block, unlinked from the set when unlink is
 * set (the caller frees it, or links it again); NULL: alloy's block.
 */
static struct foreign *foreign_find(const void *ptr, bool unlink)
{
	struct foreign **p, *f = NULL;

	if (!ptr || !atomic_load_explicit(&foreign_count, memory_order_acquire))
		return NULL;
	pthread_mutex_lock(&foreign_lock);
	for (p = foreign_bucket(ptr); *p; p = &(*p)->next) {
		if ((*p)->ptr == ptr) {
			f = *p;
			if (unlink) {
				*p = f->next;
				atomic_fetch_sub(&foreign_count, 1);
			}
			break;
		}
	}
	pthread_mutex_unlock(&foreign_lock);
	return f;
}

static void foreign_link(struct foreign *f)
{
	struct foreign **b;

	pthread_mutex_lock(&foreign_lock);
	b = foreign_bucket(f->ptr);
	f->next = *b;
	*b = f;
	atomic_fetch_add(&foreign_count, 1);
	pthread_mutex_unlock(&foreign_lock);
}

static int foreign_add(void *ptr, PyDataMem_Handler *maker)
{
	struct foreign *f = malloc(sizeof(*f));

	if (!f)
		return -1;
	f->ptr = ptr;
	f->maker = maker;
	foreign_link(f);
	return 0;
}

/* A block from the previous handler, recorded; NULL if either fails. */
static void *foreign_made(PyDataMem_Handler *h, void *ptr, size_t size)
{
	if (ptr && foreign_add(ptr, h)) {
		h->allocator.free(h->allocator.ctx, ptr, size);
		return NULL;
	}
	return ptr;
}

static void *process_malloc(void *ctx, size_t size)
{
	PyDataMem_Handler *h;

	if (atomic_load_explicit(&process_on, memory_order_relaxed))
		return alloy_malloc(size);
	h = atomic_load(&process_previous);
	return foreign_made(h, h->allocator.malloc(h->allocator.ctx, size),
			    size);
}

static void *process_calloc(void *ctx, size_t nelem, size_t elsize)
{
	PyDataMem_Handler *h;

	if (atomic_load_explicit(&process_on, memory_order_relaxed))
		return alloy_calloc(nelem, elsize);
	h = atomic_load(&process_previous);
	return foreign_made(
		h, h->allocator.calloc(h->allocator.ctx, nelem, elsize),
		nelem * elsize);
}

static void *process_realloc(void *ctx, void *ptr, size_t new_size)
{
	struct foreign *f;
	void *n;

	if (!ptr) /* a new block: as malloc */
		return process_malloc(ctx, new_size ? new_size : 1);
	f = foreign_find(ptr, true);
	if (!f)
		return alloy_realloc(ptr, new_size ? new_size : 1);
	n = f->maker->allocator.realloc(f->maker->allocator.ctx, ptr,
					new_size ? new_size : 1);
	/* Failed, the old block is still there: it stays in the set. */
	if (n)
		f->ptr = n;
	foreign_link(f);
	return n;
}

static void process_free(void *ctx, void *ptr, size_t size)
{
	struct foreign *f = foreign_find(ptr, true);

	if (!f) {
		alloy_free(ptr);
		return;
	}
	f->maker->allocator.free(f->maker->allocator.ctx, ptr, size);
	free(f);
}

static PyDataMem_Handler process_handler = {
	.name = HANDLER_NAME,
	.version = 1,
	.allocator = {
		.ctx = NULL,
		.malloc = process_malloc,
		.calloc = process_calloc,
		.realloc = process_realloc,
		.free = process_free,
	},
};

static PyObject *process_capsule;

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

static PyObject *py_is_alloys(PyObject *self, PyObject *h)
{
	return PyBool_FromLong(h == capsule || h == process_capsule);
}

static PyObject *py_install_process(PyObject *self, PyObject *noargs)
{
	return PyDataMem_SetHandler(process_capsule);
}

/*
 * switch_process(on, previous): enable()'s handler serves from alloy, or
 * from previous (a handler capsule, None for NumPy's default; never one
 * of alloy's own).
 */
static PyObject *py_switch_process(PyObject *self, PyObject *args)
{
	PyObject *previous;
	PyDataMem_Handler *h;
	int on;

	if (!PyArg_ParseTuple(args, "pO", &on, &previous))
		return NULL;
	if (previous == Py_None)
		previous = PyDataMem_DefaultHandler;
	if (!PyCapsule_IsValid(previous, "mem_handler") ||
	    previous == capsule || previous == process_capsule)
		return PyErr_Format(
			PyExc_ValueError,
			"alloy: switch_process() takes another handler capsule or None");
	h = PyCapsule_GetPointer(previous, "mem_handler");
	if (!h)
		return NULL;
	/* Blocks made from it may outlive any later switch. */
	Py_INCREF(previous);
	atomic_store(&process_previous, h);
	atomic_store(&process_on, on);
	Py_RETURN_NONE;
}

static PyObject *py_current_is_alloy(PyObject *self, PyObject *noargs)
{
	PyObject *now = PyDataMem_GetHandler();
	int is;

	if (!now)
		return NULL;
	is = now == capsule ||
	     (now == process_capsule && atomic_load(&process_on));
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
	{ "install_process", py_install_process, METH_NOARGS,
	  "install_process() -> the previous handler: enable()'s handler (alloy while switch_process is on) in this context" },
	{ "switch_process", py_switch_process, METH_VARARGS,
	  "switch_process(on, previous): enable()'s handler on alloy, or on previous (a handler capsule, None: NumPy's default)" },
	{ "is_alloys", py_is_alloys, METH_O,
	  "is_alloys(handler) -> whether the capsule is one of alloy's handlers" },
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
	process_capsule = PyCapsule_New(&process_handler, "mem_handler", NULL);
	if (!process_capsule)
		return NULL;
	atomic_store(&process_on, true);
	atomic_store(
		&process_previous,
		PyCapsule_GetPointer(PyDataMem_DefaultHandler, "mem_handler"));
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
