// SPDX-License-Identifier: MIT
/*
 * python/reporter.c - the reporter from Python: counts as a dict, peaks,
 * the text and JSON report, the trace, owner labels.
 */
#include <string.h>

#include "module.h"

static PyObject *counts_dict(const struct alloy_reporter_counts *c)
{
	return Py_BuildValue("{s:K,s:K,s:K,s:K,s:K,s:K}", "current_bytes",
			     (unsigned long long)c->current_bytes, "peak_bytes",
			     (unsigned long long)c->peak_bytes, "total_bytes",
			     (unsigned long long)c->total_bytes, "allocs",
			     (unsigned long long)c->allocs, "frees",
			     (unsigned long long)c->frees, "live_blocks",
			     (unsigned long long)c->live_blocks);
}

/* allocators[name][device] = counts */
static int add_entry(PyObject *allocators, const struct alloy_reporter_entry *e)
{
	const char *type = alloy_device_type_name(e->device.type);
	PyObject *per_device, *counts;
	char device[32];
	int rc;

	snprintf(device, sizeof(device), "%s:%d", type ? type : "?",
		 e->device.index);
	per_device = PyDict_GetItemString(allocators, e->allocator);
	if (!per_device) {
		per_device = PyDict_New();
		if (!per_device ||
		    PyDict_SetItemString(allocators, e->allocator,
					 per_device)) {
			Py_XDECREF(per_device);
			return -1;
		}
		Py_DECREF(per_device); /* the dict holds it */
	}
	counts = counts_dict(&e->c);
	rc = counts ? PyDict_SetItemString(per_device, device, counts) : -1;
	Py_XDECREF(counts);
	return rc;
}

static PyObject *snapshot_dict(const struct alloy_reporter_snapshot *s)
{
	PyObject *allocators = PyDict_New(), *total = counts_dict(&s->total);
	PyObject *d = NULL;

	for (uint32_t i = 0; allocators && total && i < s->nentries; i++)
		if (add_entry(allocators, &s->entries[i]))
			goto out;
	if (allocators && total)
		d = Py_BuildValue(
			"{s:O,s:O,s:O,s:K,s:K,s:K}", "enabled",
			s->enabled ? Py_True : Py_False, "total", total,
			"allocators", allocators, "unknown_frees",
			(unsigned long long)s->unknown_frees, "double_frees",
			(unsigned long long)s->double_frees, "untracked_frees",
			(unsigned long long)s->untracked_frees);
out:
	Py_XDECREF(allocators);
	Py_XDECREF(total);
	return d;
}

static PyObject *py_snapshot(PyObject *self, PyObject *noargs)
{
	struct alloy_reporter_snapshot *s;
	PyObject *d;
	int rc;

	if (alloy__py_ready())
		return NULL;
	/* 8 KiB: not on the stack. */
	s = PyMem_Calloc(1, sizeof(*s));
	if (!s)
		return PyErr_NoMemory();
	s->size = sizeof(*s);
	s->version = ALLOY_REPORTER_SNAPSHOT_VERSION;
	rc = alloy_reporter_snapshot(s);
	d = rc ? alloy__py_raise(NULL, rc) : snapshot_dict(s);
	PyMem_Free(s);
	return d;
}

static PyObject *py_reset_peaks(PyObject *self, PyObject *noargs)
{
	if (alloy__py_ready())
		return NULL;
	alloy_reporter_reset_peaks();
	Py_RETURN_NONE;
}

/* The report's text, gathered from alloy_reporter_print's writes. */
struct text {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void text_write(void *arg, const char *s)
{
	struct text *t = arg;
	size_t n = strlen(s);

	if (t->failed)
		return;
	if (t->len + n + 1 > t->cap) {
		size_t cap = (t->len + n + 1) * 2;
		char *buf = PyMem_Realloc(t->buf, cap);

		if (!buf) {
			t->failed = true;
			return;
		}
		t->buf = buf;
		t->cap = cap;
	}
	memcpy(t->buf + t->len, s, n);
	t->len += n;
}

static PyObject *py_report(PyObject *self, PyObject *args, PyObject *kw)
{
	static char *names[] = { "format", "leaks", NULL };
	const char *format = "text";
	struct text t = { 0 };
	enum alloy_report_format f;
	PyObject *out = NULL;
	int leaks = 0, rc;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "|sp", names, &format,
					 &leaks) ||
	    alloy__py_ready())
		return NULL;
	if (!strcmp(format, "text")) {
		f = ALLOY_REPORT_TEXT;
	} else if (!strcmp(format, "json")) {
		f = ALLOY_REPORT_JSON;
	} else {
		return PyErr_Format(PyExc_ValueError,
				    "alloy: report format \"%s\": text or json",
				    format);
	}
	rc = alloy_reporter_print(text_write, &t, f, leaks);
	if (rc)
		alloy__py_raise(NULL, rc);
	else if (t.failed)
		PyErr_NoMemory();
	else
		out = PyUnicode_FromStringAndSize(t.buf ? t.buf : "", t.len);
	PyMem_Free(t.buf);
	return out;
}

static PyObject *py_reporter_enable(PyObject *self, PyObject *noargs)
{
	int rc;

	if (alloy__py_ready())
		return NULL;
	rc = alloy_reporter_enable();
	if (rc)
		return alloy__py_raise(NULL, rc);
	Py_RETURN_NONE;
}

static PyObject *py_reporter_disable(PyObject *self, PyObject *noargs)
{
	PyThreadState *ts;
	int rc;

	if (alloy__py_ready())
		return NULL;
	/* Waits for allocating threads to leave their sections. */
	ts = PyEval_SaveThread();
	rc = alloy_reporter_disable();
	PyEval_RestoreThread(ts);
	if (rc)
		return alloy__py_raise(NULL, rc);
	Py_RETURN_NONE;
}

static PyObject *py_reporter_enabled(PyObject *self, PyObject *noargs)
{
	if (alloy__py_ready())
		return NULL;
	return PyBool_FromLong(alloy_reporter_enabled());
}

static PyObject *py_trace_start(PyObject *self, PyObject *args)
{
	PyObject *path;
	int rc;

	if (alloy__py_ready() ||
	    !PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path))
		return NULL;
	rc = alloy_reporter_trace_start(PyBytes_AS_STRING(path));
	Py_DECREF(path);
	if (rc == -EBUSY || rc == -EINVAL || rc == -ENOMEM)
		return alloy__py_raise(NULL, rc);
	if (rc) {
		/* OSError(errno, msg): FileNotFoundError and kin. */
		PyObject *e = PyObject_CallFunction(PyExc_OSError, "is", -rc,
						    alloy_last_error());

		if (e) {
			PyErr_SetObject((PyObject *)Py_TYPE(e), e);
			Py_DECREF(e);
		}
		return NULL;
	}
	Py_RETURN_NONE;
}

static PyObject *py_trace_stop(PyObject *self, PyObject *noargs)
{
	int rc;

	if (alloy__py_ready())
		return NULL;
	rc = alloy_reporter_trace_stop();
	/* -ENOENT: no trace; anything else is the file's write error. */
	if (rc)
		return alloy__py_raise(rc == -ENOENT ? NULL : PyExc_OSError,
				       rc);
	Py_RETURN_NONE;
}

static PyObject *py_flush(PyObject *self, PyObject *noargs)
{
	int rc;

	if (alloy__py_ready())
		return NULL;
	rc = alloy_reporter_flush();
	if (rc)
		return alloy__py_raise(PyExc_OSError, rc);
	Py_RETURN_NONE;
}

static PyObject *py_set_backtrace(PyObject *self, PyObject *args)
{
	int on, rc;

	if (!PyArg_ParseTuple(args, "p", &on) || alloy__py_ready())
		return NULL;
	rc = alloy_reporter_set_backtrace(on);
	if (rc)
		return alloy__py_raise(NULL, rc);
	Py_RETURN_NONE;
}

/*
 * Owner labels are the calling OS thread's (kernel/owner.c), and a Python
 * thread is one: `with alloy.owner(...)` names what that thread allocates.
 */
static PyObject *py_owner_push(PyObject *self, PyObject *args)
{
	const char *label;
	int rc;

	if (!PyArg_ParseTuple(args, "s", &label) || alloy__py_ready())
		return NULL;
	rc = alloy_owner_push(label);
	if (rc)
		return alloy__py_raise(rc == -EINVAL ? PyExc_ValueError : NULL,
				       rc);
	Py_RETURN_NONE;
}

static PyObject *py_owner_pop(PyObject *self, PyObject *noargs)
{
	int rc;

	if (alloy__py_ready())
		return NULL;
	rc = alloy_owner_pop();
	if (rc)
		return alloy__py_raise(NULL, rc);
	Py_RETURN_NONE;
}

static PyObject *py_owner_current(PyObject *self, PyObject *noargs)
{
	const char *path;

	if (alloy__py_ready())
		return NULL;
	path = alloy_owner_current();
	if (!path || !path[0])
		Py_RETURN_NONE;
	return PyUnicode_FromString(path);
}

static PyObject *py_mark(PyObject *self, PyObject *noargs)
{
	if (alloy__py_ready())
		return NULL;
	return PyLong_FromUnsignedLongLong(alloy_reporter_mark());
}

/* One group of _leaks(): its sums and its Python frames, innermost first. */
static PyObject *line_dict(const struct alloy_reporter_line *l)
{
	PyObject *stack = PyList_New(0), *d;

	for (uint32_t i = 0; stack && i < l->nframes; i++) {
		const struct alloy_reporter_frame_info *f = &l->frames[i];
		PyObject *t = Py_BuildValue("(sIs)", f->file ? f->file : "?",
					    (unsigned)f->line, f->function);

		if (!t || PyList_Append(stack, t))
			Py_CLEAR(stack);
		Py_XDECREF(t);
	}
	if (!stack)
		return NULL;
	d = Py_BuildValue("{s:K,s:K,s:O}", "bytes",
			  (unsigned long long)l->bytes, "blocks",
			  (unsigned long long)l->blocks, "stack", stack);
	Py_DECREF(stack);
	return d;
}

static PyObject *py_leaks(PyObject *self, PyObject *args)
{
	unsigned long long since;
	Py_ssize_t top;
	struct alloy_reporter_line *out;
	PyObject *list;
	int n;

	if (!PyArg_ParseTuple(args, "Kn", &since, &top))
		return NULL;
	if (top < 1 || top > 100000) {
		PyErr_SetString(PyExc_ValueError,
				"top must be between 1 and 100000");
		return NULL;
	}
	if (alloy__py_ready())
		return NULL;
	if (!alloy_reporter_enabled()) {
		PyErr_SetString(PyExc_RuntimeError,
				"alloy: the reporter is off, so no block is "
				"recorded: turn it on first (alloy."
				"reporter_enable(), or a report:, trace: or "
				"log: setting in ALLOY_CONF)");
		return NULL;
	}
	out = PyMem_RawCalloc((size_t)top, sizeof(*out));
	if (!out)
		return PyErr_NoMemory();
	Py_BEGIN_ALLOW_THREADS n =
		alloy_reporter_live_since(since, out, (size_t)top);
	Py_END_ALLOW_THREADS if (n < 0)
	{
		PyMem_RawFree(out);
		return alloy__py_raise(NULL, n);
	}
	list = PyList_New(0);
	for (int i = 0; list && i < n && i < top; i++) {
		PyObject *d = line_dict(&out[i]);

		if (!d || PyList_Append(list, d))
			Py_CLEAR(list);
		Py_XDECREF(d);
	}
	PyMem_RawFree(out);
	return list;
}

PyMethodDef alloy__py_reporter_methods[] = {
	{ "mark", py_mark, METH_NOARGS,
	  "mark() -> a point in the run: leaks(since=mark) lists what was made after it" },
	{ "_leaks", py_leaks, METH_VARARGS,
	  "_leaks(since, top) -> blocks made since the mark and live now, by their Python frames (alloy.leaks)" },
	{ "snapshot", py_snapshot, METH_NOARGS,
	  "snapshot() -> {'enabled', 'total', 'allocators': {name: {device: counts}}, ...}" },
	{ "reset_peaks", py_reset_peaks, METH_NOARGS,
	  "reset_peaks(): every peak becomes the current value" },
	{ "report", (PyCFunction)(void (*)(void))py_report,
	  METH_VARARGS | METH_KEYWORDS,
	  "report(format='text', leaks=False) -> the reporter's table as text or JSON" },
	{ "reporter_enable", py_reporter_enable, METH_NOARGS,
	  "reporter_enable(): start recording every block" },
	{ "reporter_disable", py_reporter_disable, METH_NOARGS,
	  "reporter_disable(): stop recording new blocks (recorded ones are still accounted)" },
	{ "reporter_enabled", py_reporter_enabled, METH_NOARGS,
	  "reporter_enabled() -> whether the reporter records" },
	{ "trace_start", py_trace_start, METH_VARARGS,
	  "trace_start(path): write the event trace to path (turns the reporter on)" },
	{ "trace_stop", py_trace_stop, METH_NOARGS,
	  "trace_stop(): finish and close the trace" },
	{ "flush", py_flush, METH_NOARGS,
	  "flush(): write the trace and event log out now" },
	{ "set_backtrace", py_set_backtrace, METH_VARARGS,
	  "set_backtrace(on): record each block's call stack from now on (backtrace:1), or stop; RuntimeError (ENOTSUP) in a build without libunwind" },
	{ "owner_push", py_owner_push, METH_VARARGS,
	  "owner_push(label): this thread's blocks are owned by label (nested labels join with '/')" },
	{ "owner_pop", py_owner_pop, METH_NOARGS,
	  "owner_pop(): take this thread's top owner label off" },
	{ "owner_current", py_owner_current, METH_NOARGS,
	  "owner_current() -> this thread's owner path, or None" },
	{ NULL, NULL, 0, NULL },
};
