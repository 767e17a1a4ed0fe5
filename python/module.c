// SPDX-License-Identifier: MIT
/*
 * python/module.c - the extension module alloy._alloy: one module made of
 * each file's table of functions (module.h) and the Tensor type.
 */
#include "common.h" /* Python.h first, as Python asks */
#include "module.h"
#include "frames.h"

/* ---- the module ------------------------------------------------------ */

static int add_methods(PyObject *module, PyMethodDef *methods)
{
	for (PyMethodDef *m = methods; m->ml_name; m++) {
		PyObject *f = PyCFunction_NewEx(m, NULL, NULL);

		if (!f || PyModule_AddObject(module, m->ml_name, f)) {
			Py_XDECREF(f);
			return -1;
		}
	}
	return 0;
}

/* _command: the alloy command the notebook magics run (alloy/magic.py). */
static int add_command(PyObject *module)
{
	const char *path = alloy__py_command();

	if (!path) {
		Py_INCREF(Py_None);
		if (PyModule_AddObject(module, "_command", Py_None)) {
			Py_DECREF(Py_None);
			return -1;
		}
		return 0;
	}
	return PyModule_AddStringConstant(module, "_command", path);
}

static struct PyModuleDef module_def = {
	PyModuleDef_HEAD_INIT,
	.m_name = "alloy._alloy",
	.m_doc =
		"alloy's C API for Python: the reporter, tensors, DLPack, defaults.",
	.m_size = -1,
};

PyMODINIT_FUNC PyInit__alloy(void);

PyMODINIT_FUNC PyInit__alloy(void)
{
	PyObject *m = PyModule_Create(&module_def);

	if (!m)
		return NULL;
	/* Python's frames in the stacks, where this interpreter allows. */
	(void)alloy__py_frames_init();
	if (add_methods(m, alloy__py_registry_methods) ||
	    add_methods(m, alloy__py_reporter_methods) ||
	    add_methods(m, alloy__py_tensor_methods) ||
	    add_methods(m, alloy__py_torch_methods) ||
	    add_methods(m, alloy__py_cuda_methods) ||
	    add_methods(m, alloy__py_pymem_methods) ||
	    alloy__py_tensor_init(m) ||
	    PyModule_AddStringConstant(m, "version", alloy_version()) ||
	    add_command(m)) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
