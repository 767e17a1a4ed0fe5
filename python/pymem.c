// SPDX-License-Identifier: MIT
/*
 * python/pymem.c - Python's own allocations on alloy: PyMem's RAW, MEM
 * and OBJ domains routed through alloy's allocators, each domain to the
 * CPU default or to an allocator named for it (docs/PYTHON.md, "Python's
 * own objects").
 *
 * Routing a domain installs a wrapper with PyMem_SetAllocator once; the
 * wrapper stays for the life of the process, and a later call only
 * changes where it takes new blocks from (an allocator of alloy's, or the
 * allocator that was installed before it, "python").  The interpreter has
 * made many blocks before any routing (at start-up, and whatever the
 * program did until then), and each must go back to the allocator that
 * made it.  So every block of the wrapper carries a header that
 * describes it, and the wrapper's free and realloc give a block without
 * one to the allocator that was installed before:
 *
 *   alloy's block: [ ctx | deleter | size | check ][ Python's bytes ... ]
 *                                                  ^ the pointer Python gets
 *
 * ctx and deleter are the DataPtr's, so a block goes back to its maker
 * whatever the domain's target has become since.  check mixes the
 * address and the size with a secret drawn at start, so neither the bytes
 * before a foreign block (the end of the object before it, which a
 * program may fill at will) nor chance makes it pass for alloy's.  Only
 * size and check, the 16 bytes before the pointer, are read to decide:
 * the blocks glibc's malloc and pymalloc hand out always have 16
 * readable bytes there (a chunk header, a pool header or a neighbour).
 *
 * The RAW domain is called without the GIL, from any thread: the wrapper
 * only calls alloy's thread-safe API and never Python.
 */
#include "common.h" /* Python.h first, as Python asks */

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

struct pymem_hdr {
	void *ctx;
	alloy_deleter_fn deleter;
	uint64_t size;	/* the DataPtr's: bytes asked for plus the header */
	uint64_t check; /* hdr_check(user, size); 0 once freed */
};

#define HDR sizeof(struct pymem_hdr)
/* What Python's allocators promise: 16 bytes on 64-bit platforms. */
#define HDR_ALIGN   16
#define SIZE_MAX_OK (((size_t)1 << 62) - HDR)

_Static_assert(HDR % HDR_ALIGN == 0, "the pointer keeps the block's alignment");

enum target_kind {
	TARGET_NONE,	/* not routed: the wrapper was never installed */
	TARGET_DEFAULT, /* alloy's CPU default at each allocation */
	TARGET_NAMED,	/* one allocator of alloy's */
	TARGET_PYTHON,	/* installed, new blocks from the previous allocator */
};

struct route {
	const char *name;
	PyMemAllocatorDomain domain;
	PyMemAllocatorEx previous; /* what was installed before the wrapper */
	_Atomic int kind;
	struct alloy_allocator *_Atomic named;
	_Atomic unsigned long long foreign_frees;
};

static struct route routes[] = {
	{ .name = "raw", .domain = PYMEM_DOMAIN_RAW },
	{ .name = "mem", .domain = PYMEM_DOMAIN_MEM },
	{ .name = "obj", .domain = PYMEM_DOMAIN_OBJ },
};

#define NROUTES (sizeof(routes) / sizeof(routes[0]))

static uint64_t secret;

static void draw_secret(void)
{
	uint64_t s = 0;

	if (getrandom(&s, sizeof(s), GRND_NONBLOCK) != (ssize_t)sizeof(s)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		s = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^
		    (uint64_t)(uintptr_t)&ts;
	}
	secret = s | 1;
}

/*
 * Keyed by the secret, so that bytes a program wrote cannot be made to
 * match; the multiply and shift spread every address bit over the word.
 */
static inline uint64_t hdr_check(const void *user, uint64_t size)
{
	uint64_t x =
		((uint64_t)(uintptr_t)user ^ secret) * 0x9e3779b97f4a7c15ULL;

	return ((x ^ (x >> 29)) ^ size) | 1; /* never 0, a freed block's */
}

static inline struct pymem_hdr *hdr_of(void *user)
{
	return (struct pymem_hdr *)user - 1;
}

/*
 * Whether user is a live block of the wrapper.  The bytes before a
 * foreign block are someone else's, so the read is one the sanitizers
 * are told is deliberate.
 */
static inline __attribute__((no_sanitize_address, no_sanitize_thread)) bool
is_ours(void *user)
{
	const volatile uint64_t *w = (const volatile uint64_t *)user;
	uint64_t size = w[-2], check = w[-1];

	return check && check == hdr_check(user, size);
}

static inline void *finish(struct alloy_data_ptr *dp)
{
	struct pymem_hdr *h = dp->ptr;
	void *user = h + 1;

	h->ctx = dp->ctx;
	h->deleter = dp->deleter;
	h->size = dp->size;
	h->check = hdr_check(user, dp->size);
	return user;
}

static inline struct alloy_data_ptr dp_of(void *user)
{
	struct pymem_hdr *h = hdr_of(user);

	return (struct alloy_data_ptr){
		.ptr = h,
		.ctx = h->ctx,
		.deleter = h->deleter,
		.device = { .type = ALLOY_DEVICE_CPU, .index = 0 },
		.size = h->size,
		.align = HDR_ALIGN,
	};
}

static void *alloy_block(struct route *r, size_t size, unsigned flags)
{
	struct alloy_allocator *a;
	struct alloy_data_ptr dp;

	if (size > SIZE_MAX_OK)
		return NULL;
	/* Acquire: py_route stores the allocator before the kind. */
	a = atomic_load_explicit(&r->kind, memory_order_acquire) == TARGET_NAMED
		    ? atomic_load_explicit(&r->named, memory_order_relaxed)
		    : alloy_get_default(ALLOY_DEVICE_CPU);
	if (!a || alloy_alloc(a, size + HDR, HDR_ALIGN, flags, &dp))
		return NULL;
	return finish(&dp);
}

static inline bool from_python(struct route *r)
{
	return atomic_load_explicit(&r->kind, memory_order_relaxed) ==
	       TARGET_PYTHON;
}

static inline void *route_malloc(struct route *r, size_t size)
{
	if (from_python(r))
		return r->previous.malloc(r->previous.ctx, size);
	return alloy_block(r, size, 0);
}

static inline void *route_calloc(struct route *r, size_t nelem, size_t elsize)
{
	size_t size;

	if (from_python(r))
		return r->previous.calloc(r->previous.ctx, nelem, elsize);
	if (__builtin_mul_overflow(nelem, elsize, &size))
		return NULL;
	return alloy_block(r, size, ALLOY_ALLOC_ZERO);
}

static inline void route_free(struct route *r, void *ptr)
{
	struct alloy_data_ptr dp;

	if (!ptr)
		return;
	if (!is_ours(ptr)) {
		atomic_fetch_add_explicit(&r->foreign_frees, 1,
					  memory_order_relaxed);
		r->previous.free(r->previous.ctx, ptr);
		return;
	}
	dp = dp_of(ptr);
	hdr_of(ptr)->check = 0;
	alloy_data_ptr_free(&dp);
}

/*
 * A foreign block stays with its maker: its size is not known here, so
 * it could not be copied into one of alloy's.  alloy's block is resized
 * by its own allocator.
 */
static inline void *route_realloc(struct route *r, void *ptr, size_t size)
{
	struct alloy_data_ptr dp;

	if (!ptr)
		return route_malloc(r, size);
	if (!is_ours(ptr))
		return r->previous.realloc(r->previous.ctx, ptr, size);
	if (size > SIZE_MAX_OK)
		return NULL;
	dp = dp_of(ptr);
	/*
	 * Cleared before: a block that moves is freed inside the call, and
	 * a check left in it could match again at a reuse of the address.
	 */
	hdr_of(ptr)->check = 0;
	if (alloy_data_ptr_realloc(&dp, size + HDR)) {
		hdr_of(ptr)->check = hdr_check(ptr, hdr_of(ptr)->size);
		return NULL;
	}
	return finish(&dp);
}

/*
 * The functions Python calls, one set per domain, each bound to its
 * route without the context pointer: PyMem_SetAllocator copies the
 * context and the functions one by one, and a thread in the RAW domain
 * (no GIL) may see the new functions with the old context.
 */
#define DOMAIN_FUNCTIONS(d, i)                                          \
	static void *d##_malloc(void *ctx, size_t size)                 \
	{                                                               \
		return route_malloc(&routes[i], size);                  \
	}                                                               \
	static void *d##_calloc(void *ctx, size_t nelem, size_t elsize) \
	{                                                               \
		return route_calloc(&routes[i], nelem, elsize);         \
	}                                                               \
	static void *d##_realloc(void *ctx, void *ptr, size_t size)     \
	{                                                               \
		return route_realloc(&routes[i], ptr, size);            \
	}                                                               \
	static void d##_free(void *ctx, void *ptr)                      \
	{                                                               \
		route_free(&routes[i], ptr);                            \
	}

DOMAIN_FUNCTIONS(raw, 0)
DOMAIN_FUNCTIONS(mem, 1)
DOMAIN_FUNCTIONS(obj, 2)

static const PyMemAllocatorEx wrappers[] = {
	{ NULL, raw_malloc, raw_calloc, raw_realloc, raw_free },
	{ NULL, mem_malloc, mem_calloc, mem_realloc, mem_free },
	{ NULL, obj_malloc, obj_calloc, obj_realloc, obj_free },
};

/* ---- routing from Python --------------------------------------------- */

static struct route *route_named(const char *name)
{
	for (size_t i = 0; i < NROUTES; i++)
		if (!strcmp(routes[i].name, name))
			return &routes[i];
	PyErr_Format(
		PyExc_ValueError,
		"alloy: unknown Python allocator domain '%s' (raw, mem, obj or all)",
		name);
	return NULL;
}

static void install(struct route *r)
{
	PyMemAllocatorEx wrapper = wrappers[r - routes];

	PyMem_GetAllocator(r->domain, &r->previous);
	PyMem_SetAllocator(r->domain, &wrapper);
}

PyDoc_STRVAR(
	route_doc,
	"_pymem_route(domain, target)\n\n"
	"Route PyMem's domain ('raw', 'mem', 'obj') to target: 'default' "
	"(alloy's CPU default at each allocation), a CPU allocator's name, "
	"or 'python' (new blocks from the allocator that was installed "
	"before alloy's).  alloy.python_allocators() is the public form.");

/* The CPU allocator named, loading its module; NULL with ValueError. */
static struct alloy_allocator *cpu_allocator(const char *name)
{
	PyThreadState *ts = PyEval_SaveThread();
	struct alloy_allocator *a = alloy_request_allocator(name);

	PyEval_RestoreThread(ts);
	if (!a) {
		PyErr_Format(
			PyExc_ValueError,
			"alloy: no allocator '%s' for Python's allocations: %s",
			name, alloy_last_error());
		return NULL;
	}
	if (alloy_allocator_device_type(a) != ALLOY_DEVICE_CPU) {
		PyErr_Format(
			PyExc_ValueError,
			"alloy: allocator '%s' is not a CPU allocator; Python's allocations need one",
			name);
		return NULL;
	}
	return a;
}

PyDoc_STRVAR(check_doc, "_pymem_check(name)\n\n"
			"Raise ValueError unless name is a CPU allocator "
			"(loading its module).");

static PyObject *py_check(PyObject *self, PyObject *args)
{
	const char *name;

	if (!PyArg_ParseTuple(args, "s", &name) || alloy__py_ready() ||
	    !cpu_allocator(name))
		return NULL;
	Py_RETURN_NONE;
}

static PyObject *py_route(PyObject *self, PyObject *args)
{
	const char *domain, *target;
	struct alloy_allocator *a = NULL;
	struct route *r;
	int kind;

	if (!PyArg_ParseTuple(args, "ss", &domain, &target) ||
	    alloy__py_ready() || !(r = route_named(domain)))
		return NULL;
	if (!strcmp(target, "default"))
		kind = TARGET_DEFAULT;
	else if (!strcmp(target, "python"))
		kind = TARGET_PYTHON;
	else if ((a = cpu_allocator(target)))
		kind = TARGET_NAMED;
	else
		return NULL;
	if (!secret)
		draw_secret();
	/* The allocator before the kind that reads it. */
	if (a)
		atomic_store(&r->named, a);
	if (atomic_load(&r->kind) == TARGET_NONE) {
		if (kind == TARGET_PYTHON)
			Py_RETURN_NONE;
		atomic_store(&r->kind, kind);
		install(r);
	} else {
		atomic_store(&r->kind, kind);
	}
	Py_RETURN_NONE;
}

PyDoc_STRVAR(routes_doc,
	     "_pymem_routes() -> {domain: (target, foreign_frees)}\n\n"
	     "Where each routed domain takes its new blocks ('default', an "
	     "allocator's name, 'python'), and how many blocks made before "
	     "alloy's wrapper it gave back to their maker.");

static PyObject *py_routes(PyObject *self, PyObject *unused)
{
	PyObject *d = PyDict_New();

	for (size_t i = 0; d && i < NROUTES; i++) {
		struct route *r = &routes[i];
		struct alloy_allocator *a = atomic_load(&r->named);
		const char *target;
		PyObject *v;

		switch (atomic_load(&r->kind)) {
		case TARGET_DEFAULT:
			target = "default";
			break;
		case TARGET_NAMED:
			target = a ? alloy_allocator_name(a) : "?";
			break;
		case TARGET_PYTHON:
			target = "python";
			break;
		default:
			continue;
		}
		v = Py_BuildValue("(sK)", target,
				  atomic_load(&r->foreign_frees));
		if (!v || PyDict_SetItemString(d, r->name, v))
			Py_CLEAR(d);
		Py_XDECREF(v);
	}
	return d;
}

PyMethodDef alloy__py_pymem_methods[] = {
	{ "_pymem_check", py_check, METH_VARARGS, check_doc },
	{ "_pymem_route", py_route, METH_VARARGS, route_doc },
	{ "_pymem_routes", py_routes, METH_NOARGS, routes_doc },
	{ NULL, NULL, 0, NULL },
};
