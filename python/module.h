/* SPDX-License-Identifier: MIT */
/*
 * python/module.h - the parts python/module.c makes the module alloy._alloy
 * of: each file's table of functions and the Tensor type.  A function is
 * added to the module by an entry in the table of the file that owns its
 * subject; alloy/__init__.py exports every public name of the module.
 */
#ifndef ALLOY_PYTHON_MODULE_H
#define ALLOY_PYTHON_MODULE_H

#include "common.h"

/* The functions of each file, each table ending with a NULL entry. */
extern PyMethodDef alloy__py_registry_methods[]; /* registry.c */
extern PyMethodDef alloy__py_reporter_methods[]; /* reporter.c */
extern PyMethodDef alloy__py_tensor_methods[];	 /* tensor.c */
extern PyMethodDef alloy__py_torch_methods[];	 /* torch.c */
extern PyMethodDef alloy__py_cuda_methods[];	 /* cuda.c */
extern PyMethodDef alloy__py_pymem_methods[];	 /* pymem.c */

/* Add the Tensor type to the module; 0 or -1 with an exception. */
int alloy__py_tensor_init(PyObject *module);

#endif /* ALLOY_PYTHON_MODULE_H */
