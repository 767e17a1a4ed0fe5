// SPDX-License-Identifier: MIT
/*
 * python/cuda.c - a CUDA caching allocator's segments and blocks as the
 * list torch.cuda.memory_snapshot() returns (alloy.cuda.snapshot()).
 *
 * The walk holds the allocator's lock, so it only copies the blocks out;
 * the Python objects are made after it.
 */
#include "common.h" /* Python.h first, as Python asks */
#include "module.h"

#include <alloy/cuda.h>

struct blocks {
	struct alloy_cuda_block_info *v;
	size_t n, cap;
	int rc;
};

static int copy_block(const struct alloy_cuda_block_info *b, void *arg)
{
	struct blocks *bs = arg;

	if (bs->n == bs->cap) {
		size_t cap = bs->cap ? 2 * bs->cap : 256;
		struct alloy_cuda_block_info *v =
			PyMem_RawRealloc(bs->v, cap * sizeof(*v));

		if (!v)
			return bs->rc = -ENOMEM;
		bs->v = v;
		bs->cap = cap;
	}
	bs->v[bs->n++] = *b;
	return 0;
}

static const char *const state_names[] = {
	[ALLOY_CUDA_BLOCK_INACTIVE] = "inactive",
	[ALLOY_CUDA_BLOCK_ACTIVE_ALLOCATED] = "active_allocated",
	[ALLOY_CUDA_BLOCK_ACTIVE_PENDING_FREE] = "active_pending_free",
};

/* Set d[key] = v and drop the caller's reference; 0 or -1. */
static int put(PyObject *d, const char *key, PyObject *v)
{
	int rc = v ? PyDict_SetItemString(d, key, v) : -1;

	Py_XDECREF(v);
	return rc;
}

static PyObject *block_dict(const struct alloy_cuda_block_info *b)
{
	PyObject *d = PyDict_New();

	if (!d || put(d, "address", PyLong_FromUnsignedLongLong(b->address)) ||
	    put(d, "size", PyLong_FromSize_t(b->size)) ||
	    put(d, "requested_size", PyLong_FromSize_t(b->requested_size)) ||
	    put(d, "state", PyUnicode_FromString(state_names[b->state])) ||
	    put(d, "frames", PyList_New(0))) {
		Py_XDECREF(d);
		return NULL;
	}
	return d;
}

/*
 * The segment of the blocks v[0..n): its dictionary, with the sizes
 * summed over its blocks as torch does.
 */
static PyObject *segment_dict(const struct alloy_cuda_block_info *v, size_t n)
{
	PyObject *d = PyDict_New(), *blocks = PyList_New((Py_ssize_t)n);
	size_t alloc = 0, active = 0, req = 0;

	if (!d || !blocks)
		goto fail;
	for (size_t i = 0; i < n; i++) {
		PyObject *b = block_dict(&v[i]);

		if (!b)
			goto fail;
		PyList_SET_ITEM(blocks, (Py_ssize_t)i, b);
		if (v[i].state == ALLOY_CUDA_BLOCK_ACTIVE_ALLOCATED) {
			alloc += v[i].size;
			req += v[i].requested_size;
		}
		if (v[i].state != ALLOY_CUDA_BLOCK_INACTIVE)
			active += v[i].size;
	}
	if (put(d, "device", PyLong_FromLong(v->device)) ||
	    put(d, "address", PyLong_FromUnsignedLongLong(v->segment)) ||
	    put(d, "total_size", PyLong_FromSize_t(v->segment_size)) ||
	    put(d, "allocated_size", PyLong_FromSize_t(alloc)) ||
	    put(d, "active_size", PyLong_FromSize_t(active)) ||
	    put(d, "requested_size", PyLong_FromSize_t(req)) ||
	    put(d, "stream",
		PyLong_FromUnsignedLongLong((uintptr_t)v->stream)) ||
	    put(d, "segment_type",
		PyUnicode_FromString(v->pool == ALLOY_CUDA_POOL_SMALL
					     ? "small"
					     : "large")) ||
	    put(d, "segment_pool_id",
		Py_BuildValue("(iK)", 0, (unsigned long long)v->pool_id)) ||
	    put(d, "is_expandable", PyBool_FromLong(v->expandable)) ||
	    put(d, "frames", PyList_New(0)))
		goto fail;
	if (PyDict_SetItemString(d, "blocks", blocks))
		goto fail;
	Py_DECREF(blocks);
	return d;
fail:
	Py_XDECREF(blocks);
	Py_XDECREF(d);
	return NULL;
}

static PyObject *py_cuda_snapshot(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = { "allocator", NULL };
	const char *name = NULL;
	struct alloy_allocator *a;
	struct blocks bs = { 0 };
	PyObject *list = NULL;
	int rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|z", names, &name))
		return NULL;
	if (alloy__py_ready())
		return NULL;
	a = name ? alloy_find_allocator(name)
		 : alloy_get_default(ALLOY_DEVICE_CUDA);
	if (!a)
		return PyErr_Format(PyExc_ValueError,
				    name ? "alloy: no allocator \"%s\""
					 : "alloy: no CUDA default allocator%s",
				    name ? name : " (ALLOY_CONF=cuda:NAME)");
	rc = alloy_cuda_caching_foreach_block(a, copy_block, &bs);
	if (rc || bs.rc) {
		PyMem_RawFree(bs.v);
		return alloy__py_raise(rc == -EINVAL ? PyExc_ValueError
						     : PyExc_MemoryError,
				       rc ? rc : bs.rc);
	}
	list = PyList_New(0);
	for (size_t i = 0; list && i < bs.n;) {
		size_t j = i + 1;
		PyObject *seg;

		while (j < bs.n && !bs.v[j].segment_start)
			j++;
		seg = segment_dict(&bs.v[i], j - i);
		if (!seg || PyList_Append(list, seg)) {
			Py_XDECREF(seg);
			Py_CLEAR(list);
			break;
		}
		Py_DECREF(seg);
		i = j;
	}
	PyMem_RawFree(bs.v);
	return list;
}

static PyObject *py_cuda_malloc(PyObject *self, PyObject *args)
{
	Py_ssize_t size;
	int device = 0;
	void *p;

	if (!PyArg_ParseTuple(args, "n|i", &size, &device))
		return NULL;
	if (size <= 0)
		return PyErr_Format(PyExc_ValueError,
				    "alloy: size %zd must be positive", size);
	if (alloy__py_ready())
		return NULL;
	p = alloy_cuda_malloc((size_t)size, device, NULL);
	if (!p)
		return alloy__py_raise(NULL, alloy_last_error_code());
	return PyLong_FromVoidPtr(p);
}

static PyObject *py_cuda_free(PyObject *self, PyObject *addr)
{
	void *p = PyLong_AsVoidPtr(addr);

	if (!p && PyErr_Occurred())
		return NULL;
	/*
	 * alloy_cuda_free returns nothing; asking whether the pointer is a
	 * live block first (recording its own default stream changes
	 * nothing) turns a bad one into an exception.
	 */
	if (alloy_cuda_ptr_record_stream(p, NULL))
		return PyErr_Format(PyExc_ValueError,
				    "alloy: %R is not a live CUDA block", addr);
	alloy_cuda_free(p, 0, 0, NULL);
	Py_RETURN_NONE;
}

PyMethodDef alloy__py_cuda_methods[] = {
	{ "_cuda_malloc", py_cuda_malloc, METH_VARARGS,
	  "_cuda_malloc(size, device=0) -> address of a block of the CUDA "
	  "default on the default stream (alloy.cuda.malloc)" },
	{ "_cuda_free", py_cuda_free, METH_O,
	  "_cuda_free(address): give back a block of _cuda_malloc" },
	{ "_cuda_snapshot", (PyCFunction)(void (*)(void))py_cuda_snapshot,
	  METH_VARARGS | METH_KEYWORDS,
	  "_cuda_snapshot(allocator=None) -> the caching allocator's segments "
	  "as torch.cuda.memory_snapshot() lists them (alloy.cuda.snapshot)" },
	{ NULL, NULL, 0, NULL },
};
