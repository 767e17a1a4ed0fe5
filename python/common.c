// SPDX-License-Identifier: MIT
/*
 * python/common.c - what every file of the extension module alloy._alloy
 * needs: first use and the check that the configured defaults are in
 * force, and alloy's errors as Python exceptions.
 *
 * Importing the module initialises nothing: `python3 -m alloy` must be
 * able to re-execute the interpreter (for static TLS, see __main__.py)
 * before liballoy reads ALLOY_CONF and loads a backend.  Every function
 * that needs the library calls alloy__py_ready() first.
 */
#include "common.h" /* Python.h first, as Python asks */

#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	bool checked;
	bool failed;
	char why[2048];
} ready;

/* Append to ready.why, as far as it goes. */
static void why_add(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void why_add(const char *fmt, ...)
{
	size_t len = strlen(ready.why);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ready.why + len, sizeof(ready.why) - len, fmt, ap);
	va_end(ap);
}

/*
 * Whether ALLOY_CONF's default for a device was not put in force.  When it
 * cannot be, core installs the fallback, rewrites the key to it and
 * records an error that starts with the item, "cpu:jemalloc: ..." (or
 * "cpu: ..." for a bad value): such an error is the sign.
 */
static bool default_refused(const char *device)
{
	size_t n = strlen(device);

	for (int i = 0; i < alloy_conf_error_count(); i++) {
		const char *e = alloy_conf_error(i);

		if (!strncmp(e, device, n) && e[n] == ':')
			return true;
	}
	return false;
}

static void check_configuration(void)
{
	bool tls = false;

	alloy_init();
	ready.checked = true;
	for (int type = 0; type < ALLOY_DEVICE_TYPE_COUNT; type++)
		if (default_refused(alloy_device_type_name(type)))
			ready.failed = true;
	if (!ready.failed)
		return;
	why_add("ALLOY_CONF names a default allocator that could not be put in force, and alloy does not fall back silently: ");
	for (int i = 0; i < alloy_conf_error_count(); i++) {
		why_add("%s%s", i ? "; " : "", alloy_conf_error(i));
		tls = tls || strstr(alloy_conf_error(i), "static TLS");
	}
	if (tls)
		why_add("%s",
			". That library needs static TLS, which a process that loads liballoy late (Python importing alloy) has too little of: run the program with `python3 -m alloy SCRIPT`, which restarts the interpreter with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384, or set that variable before Python starts");
}

int alloy__py_ready(void)
{
	if (!ready.checked)
		check_configuration();
	if (!ready.failed)
		return 0;
	PyErr_Format(PyExc_RuntimeError, "alloy: %s", ready.why);
	return -1;
}

static PyObject *exception_for(int rc)
{
	switch (-rc) {
	case ENOMEM:
		return PyExc_MemoryError;
	case EINVAL:
	case ERANGE:
	case E2BIG:
	case ENAMETOOLONG:
		return PyExc_ValueError;
	case EOVERFLOW:
		return PyExc_OverflowError;
	case ENOENT:
		return PyExc_LookupError;
	default:
		return PyExc_RuntimeError;
	}
}

PyObject *alloy__py_raise(PyObject *exc, int rc)
{
	const char *msg = alloy_last_error();

	PyErr_Format(exc ? exc : exception_for(rc), "alloy: %s (%s)",
		     msg[0] ? msg : "failed", alloy_strerror(rc));
	return NULL;
}

int alloy__py_device(const char *s, struct alloy_device *dev)
{
	const char *colon = strchr(s, ':');
	char type[32];
	long index = 0;
	char *end;

	snprintf(type, sizeof(type), "%.*s",
		 (int)(colon ? (size_t)(colon - s) : strlen(s)), s);
	if (colon) {
		index = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || *end || index < 0 ||
		    index > INT16_MAX) {
			PyErr_Format(
				PyExc_ValueError,
				"alloy: device \"%s\": the index after ':' must be 0..%d",
				s, INT16_MAX);
			return -1;
		}
	}
	dev->type = (int16_t)alloy__py_device_type(type);
	dev->index = (int16_t)index;
	return dev->type < 0 ? -1 : 0;
}

int alloy__py_device_type(const char *name)
{
	int type = alloy_device_type_from_name(name);

	if (type < 0)
		PyErr_Format(
			PyExc_ValueError,
			"alloy: unknown device \"%s\" (cpu, cuda or cuda_host)",
			name);
	return type;
}

bool alloy__py_in_build_tree(void)
{
#ifdef ALLOY_BUILD_DIR
	Dl_info info;

	return dladdr((void *)alloy__py_in_build_tree, &info) &&
	       info.dli_fname &&
	       !strncmp(info.dli_fname, ALLOY_BUILD_DIR "/",
			strlen(ALLOY_BUILD_DIR "/"));
#else
	return false;
#endif
}

const char *alloy__py_command(void)
{
#ifdef ALLOY_BUILD_DIR
	if (alloy__py_in_build_tree())
		return ALLOY_BUILD_DIR "/alloy";
#endif
#ifdef ALLOY_BINDIR
	return ALLOY_BINDIR "/alloy";
#else
	return NULL;
#endif
}
