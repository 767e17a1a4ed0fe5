// SPDX-License-Identifier: MIT
/*
 * python/tensor.c - alloy.Tensor: an alloy tensor in Python, exchanged
 * with NumPy, PyTorch and any other DLPack user without a copy.
 *
 * The DLPack protocol as NumPy and PyTorch speak it: __dlpack__() returns
 * a capsule named "dltensor" holding a DLManagedTensor; the consumer
 * renames it "used_dltensor" when it takes the tensor over, and the
 * capsule's destructor deletes a tensor nobody took.  A capsule can be
 * consumed once.
 */
#include <stdbool.h>
#include <string.h>
#include <alloy/dlpack.h>

#include "module.h"

#define CAPSULE_NAME	  "dltensor"
#define USED_CAPSULE_NAME "used_dltensor"

typedef struct {
	PyObject_HEAD struct alloy_tensor *t;
} TensorObject;

static PyTypeObject tensor_type;

static PyObject *wrap(struct alloy_tensor *t)
{
	TensorObject *o = PyObject_New(TensorObject, &tensor_type);

	if (!o) {
		alloy_tensor_unref(t);
		return NULL;
	}
	o->t = t;
	return (PyObject *)o;
}

static void tensor_dealloc(TensorObject *self)
{
	alloy_tensor_unref(self->t);
	PyObject_Free(self);
}

/* ---- element type names ----------------------------------------------- */

/* NumPy's spellings of the types whose alloy names differ. */
static const struct {
	const char *alias, *name;
} aliases[] = {
	{ "float32", "float" },
	{ "float64", "double" },
};

static const struct alloy_type_meta *type_named(const char *name)
{
	const struct alloy_type_meta *t;

	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(name, aliases[i].alias))
			name = aliases[i].name;
	t = alloy_type_find(name);
	if (!t)
		PyErr_Format(
			PyExc_TypeError,
			"alloy: no element type \"%s\" (int8..int64, uint8..uint64, float16, bfloat16, float32/float, float64/double, bool, ...)",
			name);
	return t;
}

/* ---- making tensors --------------------------------------------------- */

/* A shape from any sequence of ints; -1 with an exception. */
static int parse_shape(PyObject *seq, int64_t *dims, int *ndim)
{
	PyObject *fast;
	Py_ssize_t n;

	/* An int, or anything that is one (__index__: NumPy's integers). */
	if (PyIndex_Check(seq)) {
		PyObject *i = PyNumber_Index(seq);

		if (!i)
			return -1;
		dims[0] = PyLong_AsLongLong(i);
		Py_DECREF(i);
		*ndim = 1;
		return dims[0] == -1 && PyErr_Occurred() ? -1 : 0;
	}
	fast = PySequence_Fast(
		seq, "alloy: shape must be an int or a sequence of ints");
	if (!fast)
		return -1;
	n = PySequence_Fast_GET_SIZE(fast);
	if (n > ALLOY_TENSOR_MAX_DIMS) {
		Py_DECREF(fast);
		PyErr_Format(PyExc_ValueError, "alloy: %zd dims; at most %d", n,
			     ALLOY_TENSOR_MAX_DIMS);
		return -1;
	}
	for (Py_ssize_t i = 0; i < n; i++) {
		dims[i] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(fast, i));
		if (dims[i] == -1 && PyErr_Occurred()) {
			Py_DECREF(fast);
			return -1;
		}
	}
	*ndim = (int)n;
	Py_DECREF(fast);
	return 0;
}

static PyObject *py_empty(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = { "shape", "dtype", "device", NULL };
	const char *dtype = "float32", *device = "cpu";
	int64_t dims[ALLOY_TENSOR_MAX_DIMS];
	const struct alloy_type_meta *type;
	struct alloy_device dev;
	struct alloy_tensor *t;
	PyObject *shape;
	int ndim;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "O|ss", names, &shape,
					 &dtype, &device) ||
	    alloy__py_ready() || parse_shape(shape, dims, &ndim) ||
	    alloy__py_device(device, &dev))
		return NULL;
	type = type_named(dtype);
	if (!type)
		return NULL;
	t = alloy_tensor_new_dims(dev, dims, ndim);
	if (!t)
		return alloy__py_raise(NULL, alloy_last_error_code());
	if (!alloy_tensor_raw_mutable_data(t, type)) {
		int rc = alloy_last_error_code();

		alloy_tensor_unref(t);
		return alloy__py_raise(NULL, rc);
	}
	return wrap(t);
}

/* ---- export ----------------------------------------------------------- */

static void capsule_destructor(PyObject *capsule)
{
	PyObject *type, *value, *tb;
	DLManagedTensor *m;

	if (PyCapsule_IsValid(capsule, USED_CAPSULE_NAME))
		return; /* a consumer has it */
	PyErr_Fetch(&type, &value, &tb);
	m = PyCapsule_GetPointer(capsule, CAPSULE_NAME);
	if (m && m->deleter)
		m->deleter(m);
	else if (!m)
		PyErr_WriteUnraisable(capsule);
	PyErr_Restore(type, value, tb);
}

/* The DLPack device of t as (type, id). */
static int tensor_dl_device(TensorObject *self, DLDevice *dl)
{
	int rc = alloy_dlpack_device(alloy_tensor_device(self->t), dl);

	if (rc)
		alloy__py_raise(PyExc_BufferError, rc);
	return rc;
}

static PyObject *tensor_dlpack(TensorObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = { "stream", NULL };
	PyObject *stream = Py_None, *capsule;
	DLManagedTensor *m;
	DLDevice dl;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|$O", names, &stream) ||
	    tensor_dl_device(self, &dl))
		return NULL;
	/* Only a CUDA consumer names a stream; alloy has no kernels pending. */
	if (stream != Py_None && dl.device_type != kDLCUDA)
		return PyErr_Format(
			PyExc_BufferError,
			"alloy: stream must be None for a %s tensor",
			alloy_dlpack_device_name(dl.device_type));
	rc = alloy_dlpack_export(self->t, &m);
	if (rc)
		return alloy__py_raise(rc == -ENOMEM ? PyExc_MemoryError
						     : PyExc_BufferError,
				       rc);
	capsule = PyCapsule_New(m, CAPSULE_NAME, capsule_destructor);
	if (!capsule)
		m->deleter(m);
	return capsule;
}

static PyObject *tensor_dlpack_device(TensorObject *self, PyObject *noargs)
{
	DLDevice dl;

	if (tensor_dl_device(self, &dl))
		return NULL;
	return Py_BuildValue("(ii)", (int)dl.device_type, dl.device_id);
}

/* ---- import ----------------------------------------------------------- */

/*
 * The producer's deleter may need the GIL (NumPy 1.24's decrefs its array
 * without taking it), and an alloy storage can be let go by C code on any
 * thread: imports go through this record, whose deleter takes the GIL.
 */
struct gil_guard {
	DLManagedTensor m; /* a copy of the producer's DLTensor */
	DLManagedTensor *producer;
};

/*
 * Whether the calling thread holds the GIL, in whichever interpreter:
 * PyGILState_Check knows only the main interpreter's threads, and says
 * no in a subinterpreter's.
 */
static bool holds_gil(void)
{
#if PY_VERSION_HEX >= 0x030D0000
	return PyThreadState_GetUnchecked() != NULL;
#else
	return _PyThreadState_UncheckedGet() != NULL;
#endif
}

static void gil_guard_deleter(DLManagedTensor *m)
{
	struct gil_guard *g = m->manager_ctx;
	PyGILState_STATE st;

	/*
	 * A thread that holds the GIL already calls the deleter as it is:
	 * taking it again would wait for itself (a subinterpreter's thread),
	 * and during the interpreter's finalization, when Py_IsInitialized()
	 * is false already, the objects the producer lets go are still there
	 * to be freed.  Any other thread takes the GIL while the interpreter
	 * lives; after it is gone its objects are too: leak.
	 */
	if (!g->producer->deleter) {
		/* nothing to call */
	} else if (holds_gil()) {
		g->producer->deleter(g->producer);
	} else if (Py_IsInitialized()) {
		st = PyGILState_Ensure();
		g->producer->deleter(g->producer);
		PyGILState_Release(st);
	}
	free(g);
}

/* The capsule of obj: obj itself, or what obj.__dlpack__() gives. */
static PyObject *capsule_of(PyObject *obj)
{
	PyObject *dev, *capsule;
	int type = 0, id = 0;

	if (PyCapsule_CheckExact(obj)) {
		Py_INCREF(obj);
		return obj;
	}
	if (!PyObject_HasAttrString(obj, "__dlpack__"))
		return PyErr_Format(
			PyExc_TypeError,
			"alloy.from_dlpack: %s has no __dlpack__ and is not a DLPack capsule",
			Py_TYPE(obj)->tp_name);
	/* Refuse a device before the producer hands its tensor over. */
	dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
	if (dev && !PyTuple_Check(dev)) {
		PyErr_Format(
			PyExc_TypeError,
			"alloy.from_dlpack: %s.__dlpack_device__() gave a %s, not a (type, id) tuple",
			Py_TYPE(obj)->tp_name, Py_TYPE(dev)->tp_name);
		Py_CLEAR(dev);
	}
	if (!dev || !PyArg_ParseTuple(dev, "ii", &type, &id)) {
		/* "ii" says only "signed integer is greater than maximum". */
		if (dev && PyErr_ExceptionMatches(PyExc_OverflowError)) {
			PyObject *r;

			PyErr_Clear();
			r = PyObject_Repr(dev);
			PyErr_Format(
				PyExc_OverflowError,
				"alloy.from_dlpack: %s.__dlpack_device__() gave %S: DLPack's device type and id are 32-bit ints",
				Py_TYPE(obj)->tp_name, r ? r : Py_None);
			Py_XDECREF(r);
		}
		Py_XDECREF(dev);
		return NULL;
	}
	Py_DECREF(dev);
	if (type != kDLCPU && type != kDLCUDA && type != kDLCUDAHost)
		return PyErr_Format(
			PyExc_BufferError,
			"alloy.from_dlpack: %s is on DLPack device %d (%s); alloy takes CPU, CUDA and CUDA host tensors",
			Py_TYPE(obj)->tp_name, type,
			alloy_dlpack_device_name(type));
	capsule = PyObject_CallMethod(obj, "__dlpack__", NULL);
	if (capsule && !PyCapsule_CheckExact(capsule)) {
		PyErr_Format(
			PyExc_TypeError,
			"alloy.from_dlpack: %s.__dlpack__() gave a %s, not a capsule",
			Py_TYPE(obj)->tp_name, Py_TYPE(capsule)->tp_name);
		Py_CLEAR(capsule);
	}
	return capsule;
}

/* The DLManagedTensor of an unused "dltensor" capsule, or NULL + error. */
static DLManagedTensor *capsule_tensor(PyObject *capsule)
{
	const char *name = PyCapsule_GetName(capsule);

	if (name && !strcmp(name, USED_CAPSULE_NAME)) {
		PyErr_SetString(
			PyExc_ValueError,
			"alloy.from_dlpack: this DLPack capsule was consumed already; a capsule can be imported once (call __dlpack__() again for a new one)");
		return NULL;
	}
	if (!name || strcmp(name, CAPSULE_NAME)) {
		PyErr_Format(
			PyExc_TypeError,
			"alloy.from_dlpack: a capsule named \"%s\" is not a DLPack tensor (\"%s\")",
			name ? name : "(null)", CAPSULE_NAME);
		return NULL;
	}
	return PyCapsule_GetPointer(capsule, CAPSULE_NAME);
}

static PyObject *py_from_dlpack(PyObject *self, PyObject *obj)
{
	struct alloy_tensor *t;
	struct gil_guard *g;
	DLManagedTensor *m;
	PyObject *capsule;
	int rc;

	if (alloy__py_ready())
		return NULL;
	capsule = capsule_of(obj);
	if (!capsule)
		return NULL;
	m = capsule_tensor(capsule);
	g = m ? calloc(1, sizeof(*g)) : NULL;
	if (!g) {
		Py_DECREF(capsule);
		return m ? PyErr_NoMemory() : NULL;
	}
	*g = (struct gil_guard){ .m = { .dl_tensor = m->dl_tensor,
					.manager_ctx = g,
					.deleter = gil_guard_deleter },
				 .producer = m };
	rc = alloy_dlpack_import(&g->m, &t);
	if (rc) {
		/* The capsule keeps its tensor: its destructor deletes it. */
		free(g);
		Py_DECREF(capsule);
		return alloy__py_raise(rc == -ENOMEM ? PyExc_MemoryError
						     : PyExc_BufferError,
				       rc);
	}
	PyCapsule_SetName(capsule, USED_CAPSULE_NAME);
	PyCapsule_SetDestructor(capsule, NULL);
	Py_DECREF(capsule);
	return wrap(t);
}

/* ---- the buffer protocol (CPU memory only) ----------------------------- */

/* struct-module formats of the types the buffer protocol can describe. */
static const struct {
	enum alloy_type_id id;
	const char *format;
} formats[] = {
	{ ALLOY_TYPE_INT8, "b" },    { ALLOY_TYPE_UINT8, "B" },
	{ ALLOY_TYPE_INT16, "h" },   { ALLOY_TYPE_UINT16, "H" },
	{ ALLOY_TYPE_INT32, "i" },   { ALLOY_TYPE_UINT32, "I" },
	{ ALLOY_TYPE_INT64, "q" },   { ALLOY_TYPE_UINT64, "Q" },
	{ ALLOY_TYPE_FLOAT, "f" },   { ALLOY_TYPE_DOUBLE, "d" },
	{ ALLOY_TYPE_FLOAT16, "e" }, { ALLOY_TYPE_BOOL, "?" },
};

static const char *format_of(const struct alloy_type_meta *t)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (alloy_type(formats[i].id) == t)
			return formats[i].format;
	return NULL;
}

/*
 * A writable view of the buffer, C-contiguous; the view holds the tensor,
 * and view->internal the shape and strides.  memoryview(t) and
 * numpy.asarray(t) share the memory (NumPy's from_dlpack gives a
 * read-only array: DLPack 0.6 cannot say writable).
 */
static int tensor_getbuffer(TensorObject *self, Py_buffer *view, int flags)
{
	const struct alloy_type_meta *type = alloy_tensor_dtype(self->t);
	struct alloy_device dev = alloy_tensor_device(self->t);
	int ndim = alloy_tensor_ndim(self->t);
	const char *format = format_of(type);
	Py_ssize_t *dims, stride;

	if (dev.type != ALLOY_DEVICE_CPU &&
	    dev.type != ALLOY_DEVICE_CUDA_HOST) {
		PyErr_Format(
			PyExc_BufferError,
			"alloy: a %s tensor's memory is not the CPU's; use DLPack",
			alloy_device_type_name(dev.type));
		return -1;
	}
	if (!format) {
		PyErr_Format(
			PyExc_BufferError,
			"alloy: Python's buffer protocol has no format for %s",
			alloy_type_name(type));
		return -1;
	}
	dims = PyMem_Calloc(2 * (size_t)(ndim ? ndim : 1), sizeof(*dims));
	if (!dims) {
		PyErr_NoMemory();
		return -1;
	}
	stride = (Py_ssize_t)type->itemsize;
	for (int i = ndim - 1; i >= 0; i--) {
		dims[i] = (Py_ssize_t)alloy_tensor_dims(self->t)[i];
		dims[ndim + i] = stride;
		stride *= dims[i];
	}
	*view = (Py_buffer){
		.buf = (void *)alloy_tensor_raw_data(self->t),
		.obj = (PyObject *)self,
		.len = (Py_ssize_t)alloy_tensor_nbytes(self->t),
		.itemsize = (Py_ssize_t)type->itemsize,
		.readonly = 0,
		.ndim = ndim,
		.format = (flags & PyBUF_FORMAT) ? (char *)format : NULL,
		.shape = (flags & PyBUF_ND) ? dims : NULL,
		.strides = (flags & PyBUF_STRIDES) == PyBUF_STRIDES
				   ? dims + ndim
				   : NULL,
		.internal = dims,
	};
	/* C order is Fortran order too only with at most one dim over 1. */
	if ((flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS &&
	    !PyBuffer_IsContiguous(view, 'F')) {
		PyMem_Free(dims);
		view->obj = NULL;
		PyErr_SetString(
			PyExc_BufferError,
			"alloy: a tensor is C-contiguous, not Fortran-contiguous");
		return -1;
	}
	Py_INCREF(self);
	return 0;
}

static void tensor_releasebuffer(TensorObject *self, Py_buffer *view)
{
	PyMem_Free(view->internal);
}

static PyBufferProcs tensor_buffer = {
	.bf_getbuffer = (getbufferproc)tensor_getbuffer,
	.bf_releasebuffer = (releasebufferproc)tensor_releasebuffer,
};

/* ---- attributes ------------------------------------------------------- */

static PyObject *tensor_shape(TensorObject *self, void *closure)
{
	int ndim = alloy_tensor_ndim(self->t);
	PyObject *shape = PyTuple_New(ndim);

	for (int i = 0; shape && i < ndim; i++) {
		PyObject *d =
			PyLong_FromLongLong(alloy_tensor_dims(self->t)[i]);

		if (!d) {
			Py_CLEAR(shape);
			break;
		}
		PyTuple_SET_ITEM(shape, i, d);
	}
	return shape;
}

static PyObject *tensor_dtype(TensorObject *self, void *closure)
{
	return PyUnicode_FromString(
		alloy_type_name(alloy_tensor_dtype(self->t)));
}

static PyObject *tensor_device(TensorObject *self, void *closure)
{
	struct alloy_device d = alloy_tensor_device(self->t);

	return PyUnicode_FromFormat("%s:%d", alloy_device_type_name(d.type),
				    (int)d.index);
}

static PyObject *tensor_nbytes(TensorObject *self, void *closure)
{
	return PyLong_FromSize_t(alloy_tensor_nbytes(self->t));
}

static PyObject *tensor_data_ptr(TensorObject *self, void *closure)
{
	return PyLong_FromVoidPtr(
		alloy_storage_data(alloy_tensor_storage(self->t)));
}

static PyObject *tensor_allocator(TensorObject *self, void *closure)
{
	struct alloy_allocator *a = alloy_tensor_allocator(self->t);

	if (!a)
		Py_RETURN_NONE; /* external memory, or none yet */
	return PyUnicode_FromString(alloy_allocator_name(a));
}

static PyObject *tensor_storage_refs(TensorObject *self, void *closure)
{
	return PyLong_FromLong(
		alloy_storage_use_count(alloy_tensor_storage(self->t)));
}

static PyObject *tensor_repr(TensorObject *self)
{
	char buf[256];

	alloy_tensor_debug_string(self->t, buf, sizeof(buf));
	return PyUnicode_FromFormat("<alloy.%s>", buf);
}

static PyGetSetDef tensor_getset[] = {
	{ "shape", (getter)tensor_shape, NULL, "dims, as a tuple", NULL },
	{ "dtype", (getter)tensor_dtype, NULL, "element type name", NULL },
	{ "device", (getter)tensor_device, NULL, "'cpu:0', 'cuda:1', ...",
	  NULL },
	{ "nbytes", (getter)tensor_nbytes, NULL, "numel x itemsize", NULL },
	{ "data_ptr", (getter)tensor_data_ptr, NULL,
	  "address of the buffer (0 when none)", NULL },
	{ "allocator", (getter)tensor_allocator, NULL,
	  "the allocator that made the buffer; None for external memory",
	  NULL },
	{ "storage_refs", (getter)tensor_storage_refs, NULL,
	  "references to the storage (tensors, DLPack exports)", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyMethodDef tensor_object_methods[] = {
	{ "__dlpack__", (PyCFunction)(void (*)(void))tensor_dlpack,
	  METH_VARARGS | METH_KEYWORDS,
	  "__dlpack__(*, stream=None) -> a DLPack capsule sharing the buffer" },
	{ "__dlpack_device__", (PyCFunction)tensor_dlpack_device, METH_NOARGS,
	  "__dlpack_device__() -> (DLPack device type, device id)" },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject tensor_type = {
	PyVarObject_HEAD_INIT(NULL, 0).tp_name = "alloy.Tensor",
	.tp_basicsize = sizeof(TensorObject),
	.tp_dealloc = (destructor)tensor_dealloc,
	.tp_repr = (reprfunc)tensor_repr,
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "An alloy tensor: made by alloy.empty or alloy.from_dlpack.",
	.tp_methods = tensor_object_methods,
	.tp_getset = tensor_getset,
	.tp_as_buffer = &tensor_buffer,
};

int alloy__py_tensor_init(PyObject *module)
{
	if (PyType_Ready(&tensor_type))
		return -1;
	Py_INCREF(&tensor_type);
	if (PyModule_AddObject(module, "Tensor", (PyObject *)&tensor_type)) {
		Py_DECREF(&tensor_type);
		return -1;
	}
	return 0;
}

PyMethodDef alloy__py_tensor_methods[] = {
	{ "empty", (PyCFunction)(void (*)(void))py_empty,
	  METH_VARARGS | METH_KEYWORDS,
	  "empty(shape, dtype='float32', device='cpu') -> a Tensor whose buffer comes from the device's default allocator" },
	{ "from_dlpack", py_from_dlpack, METH_O,
	  "from_dlpack(obj) -> a Tensor sharing obj's memory (obj has __dlpack__, or is a DLPack capsule)" },
	{ NULL, NULL, 0, NULL },
};
