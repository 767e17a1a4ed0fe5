// SPDX-License-Identifier: MIT
/*
 * python/frames.c - Python's frames in alloy's call stacks: the frame
 * source (include/alloy/reporter.h) this module installs at import.
 *
 * The reporter asks for the frames inside every recorded allocation,
 * which may come from any thread, with or without the GIL, and from
 * inside CPython's own allocator.  So nothing here calls into the
 * interpreter: no API that can allocate, take the GIL, run code or
 * release a reference.  The thread's frame chain is read as CPython
 * 3.11 lays it out (its internal headers): the thread state's current
 * frame, each frame's code object and last instruction, and is_entry,
 * which marks the last frame one call of _PyEval_EvalFrameDefault runs
 * (3.11 runs Python-to-Python calls inside one call of the loop).  The
 * thread's state comes from CPython's thread-specific key
 * (pthread_getspecific), or is the GIL holder's when that is this thread.
 *
 * A code object is interned once, the first time a stack shows it:
 * its function (qualified name), file, first line and line table are
 * copied into memory of this file's own (mmap, never freed), so that a
 * frame can be named at any later time from any thread, holding no
 * lock the interpreter needs, even after the code object is gone.  A
 * frame's key is (code id, instruction offset); its line is worked out
 * from the copied line table only when a trace or report names it.
 *
 * Code object addresses are reused once an object dies.  When the
 * thread holds the GIL, interning takes a reference to the code object
 * (an increment of its count, which cannot run code), so its address
 * stays its own for the process's life: the code objects a program's
 * stacks show (its functions) are few and usually live anyway.  A code
 * object first met by a thread without the GIL (C code that released
 * it) is not pinned; its entry is checked at each use against the
 * object's name, file, first line and line table, and a mismatch makes
 * a new entry.
 *
 * The intern table is read without a lock; additions take a spin lock
 * held for a copy and never across anything that can wait on Python.
 * A thread that finds it taken for long gives up and records that
 * frame as unknown rather than wait inside an allocation.
 */
#include <Python.h>

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
#define ALLOY_PY_FRAMES 1
#ifndef Py_BUILD_CORE
#define Py_BUILD_CORE 1
#endif
#include <internal/pycore_frame.h>
#include <internal/pycore_pystate.h>
#include <internal/pycore_runtime.h>
#endif

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <alloy/reporter.h>

#include "frames.h"

#ifdef ALLOY_PY_FRAMES

#define MAX_CODES  (1u << 20)	   /* code objects interned at most */
#define SLOTS	   (2 * MAX_CODES) /* the hash index: ids, 0 empty */
#define NAME_MAX_B 255		   /* bytes of a name or file kept */
#define FILE_MAX_B 1024
#define SPINS	   (1 << 16)
#define CHUNK	   (1u << 20) /* bytes of strings per mmap */

struct code {
	const PyCodeObject *co; /* identity only, never dereferenced later */
	const void *names[3];	/* qualname, filename, linetable: checked */
	bool pinned;
	int firstline;
	const char *function, *file;
	const uint8_t *table; /* the line table, copied */
	size_t table_len;
};

static struct {
	bool ready;
	atomic_flag lock;
	_Atomic uint32_t n;  /* ids 1..n are valid */
	struct code **codes; /* by id - 1 */
	_Atomic uint32_t *slot;
	char *chunk; /* bump allocation */
	size_t left;
} F = { .lock = ATOMIC_FLAG_INIT };

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Bytes from this file's own memory (lock held). */
static void *take(size_t len)
{
	void *p;

	len = (len + 15) & ~(size_t)15;
	if (len > F.left) {
		size_t want = len > CHUNK ? len : CHUNK;

		F.chunk = map(want);
		F.left = F.chunk ? want : 0;
		if (!F.chunk)
			return NULL;
	}
	p = F.chunk;
	F.chunk += len;
	F.left -= len;
	return p;
}

/*
 * A str as UTF-8 into this file's memory, read from its storage: the
 * API's UTF-8 conversion may allocate its cache.
 */
static const char *copy_str(PyObject *s, size_t max)
{
	char *out, *p;
	Py_ssize_t len;
	int kind;
	const void *data;

	if (!s || !PyUnicode_Check(s) || !PyUnicode_IS_READY(s))
		return "?";
	len = PyUnicode_GET_LENGTH(s);
	kind = PyUnicode_KIND(s);
	data = PyUnicode_DATA(s);
	out = take(max + 1);
	if (!out)
		return "?";
	p = out;
	for (Py_ssize_t i = 0; i < len; i++) {
		Py_UCS4 c = PyUnicode_READ(kind, data, i);
		size_t need = c < 0x80	    ? 1
			      : c < 0x800   ? 2
			      : c < 0x10000 ? 3
					    : 4;

		if ((size_t)(p - out) + need > max)
			break;
		if (c < 0x80) {
			*p++ = (char)c;
		} else if (c < 0x800) {
			*p++ = (char)(0xc0 | c >> 6);
			*p++ = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			*p++ = (char)(0xe0 | c >> 12);
			*p++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*p++ = (char)(0x80 | (c & 0x3f));
		} else {
			*p++ = (char)(0xf0 | c >> 18);
			*p++ = (char)(0x80 | ((c >> 12) & 0x3f));
			*p++ = (char)(0x80 | ((c >> 6) & 0x3f));
			*p++ = (char)(0x80 | (c & 0x3f));
		}
	}
	*p = '\0';
	return out;
}

static uint32_t slot_of(const void *co)
{
	uint64_t h = (uint64_t)(uintptr_t)co * 0x9e3779b97f4a7c15ULL;

	return (uint32_t)(h >> 40) & (SLOTS - 1);
}

/* Whether entry c is still the code object co (see the top). */
static bool still(const struct code *c, const PyCodeObject *co)
{
	const PyBytesObject *t = (const PyBytesObject *)co->co_linetable;

	if (c->co != co)
		return false;
	if (c->pinned)
		return true;
	return c->names[0] == co->co_qualname &&
	       c->names[1] == co->co_filename &&
	       c->names[2] == co->co_linetable &&
	       c->firstline == co->co_firstlineno && t &&
	       (size_t)Py_SIZE(t) == c->table_len &&
	       !memcmp(t->ob_sval, c->table, c->table_len);
}

/* A new entry for co, in slot i (lock held): its id, or 0. */
static uint32_t add(PyCodeObject *co, uint32_t i, bool held)
{
	uint32_t id = atomic_load_explicit(&F.n, memory_order_relaxed) + 1;
	const PyBytesObject *t = (const PyBytesObject *)co->co_linetable;
	struct code *c;

	if (id > MAX_CODES)
		return 0;
	c = take(sizeof(*c));
	if (!c)
		return 0;
	c->co = co;
	c->names[0] = co->co_qualname;
	c->names[1] = co->co_filename;
	c->names[2] = co->co_linetable;
	c->firstline = co->co_firstlineno;
	c->function = copy_str(co->co_qualname, NAME_MAX_B);
	c->file = copy_str(co->co_filename, FILE_MAX_B);
	c->table_len = t && PyBytes_Check(t) ? (size_t)Py_SIZE(t) : 0;
	c->table = c->table_len ? take(c->table_len) : NULL;
	if (c->table)
		memcpy((void *)c->table, t->ob_sval, c->table_len);
	else
		c->table_len = 0;
	/* Holding the GIL, a count increment is safe: see the top. */
	c->pinned = held;
	if (held)
		Py_INCREF(co);
	F.codes[id - 1] = c;
	atomic_store_explicit(&F.n, id, memory_order_release);
	atomic_store_explicit(&F.slot[i], id, memory_order_release);
	return id;
}

/* The id of co, interned if new; 1 (unknown) when there is no room. */
static uint32_t intern(PyCodeObject *co, bool held)
{
	uint32_t i = slot_of(co), id;
	int spins = 0;

	for (uint32_t probes = 0; probes < SLOTS; probes++) {
		id = atomic_load_explicit(&F.slot[i], memory_order_acquire);
		if (!id)
			break;
		if (F.codes[id - 1]->co == co) {
			if (still(F.codes[id - 1], co))
				return id;
			break; /* the address of a dead one: a new entry */
		}
		i = (i + 1) & (SLOTS - 1);
	}
	while (atomic_flag_test_and_set_explicit(&F.lock, memory_order_acquire))
		if (++spins == SPINS)
			return 1;
	/* Again under the lock: another thread may have added it. */
	i = slot_of(co);
	for (;;) {
		id = atomic_load_explicit(&F.slot[i], memory_order_acquire);
		if (!id || F.codes[id - 1]->co == co)
			break;
		i = (i + 1) & (SLOTS - 1);
	}
	if (!id || !still(F.codes[id - 1], co))
		id = add(co, i, held);
	atomic_flag_clear_explicit(&F.lock, memory_order_release);
	return id ? id : 1;
}

/*
 * This thread's state, and whether it holds the GIL; NULL: none.  The
 * state CPython keeps under its thread-specific key first, so that no
 * other thread's state (which its thread may be freeing) is read unless
 * this thread has none there (a thread of a subinterpreter).
 */
static PyThreadState *this_thread(bool *held)
{
	PyThreadState *gil = _PyRuntimeState_GetThreadState(&_PyRuntime);
	PyThreadState *ts = NULL;

	if (_PyRuntime.gilstate.autoTSSkey._is_initialized)
		ts = PyThread_tss_get(&_PyRuntime.gilstate.autoTSSkey);
	if (!ts && gil && gil->thread_id == PyThread_get_thread_ident())
		ts = gil;
	*held = ts && ts == gil;
	return ts;
}

static int capture(uint64_t *keys, int max)
{
	PyThreadState *ts;
	_PyInterpreterFrame *f;
	bool held;
	int n = 0;

	/* Finalizing, thread states are freed: native stacks only. */
	if (!F.ready || !_PyRuntime.initialized ||
	    _PyRuntimeState_GetFinalizing(&_PyRuntime))
		return 0;
	ts = this_thread(&held);
	if (!ts || !ts->cframe)
		return 0;
	for (f = ts->cframe->current_frame; f && n < max; f = f->previous) {
		PyCodeObject *co = f->f_code;
		intptr_t off;

		if (!co)
			continue;
		/* A frame not yet started points before its first unit. */
		off = f->prev_instr - _PyCode_CODE(co);
		if (off < 0)
			off = 0;
		keys[n++] = (uint64_t)intern(co, held) << 32 | (uint32_t)off |
			    (f->is_entry ? ALLOY_REPORTER_FRAME_ENTRY : 0);
	}
	return n;
}

/* ---- lines from a copied line table (CPython 3.11's location table) -- */

struct cursor {
	const uint8_t *p, *end;
};

static unsigned varint(struct cursor *c)
{
	unsigned v = 0, shift = 0;
	uint8_t b;

	do {
		if (c->p >= c->end)
			return v;
		b = *c->p++;
		v |= (unsigned)(b & 63) << shift;
		shift += 6;
	} while (b & 64);
	return v;
}

static int svarint(struct cursor *c)
{
	unsigned v = varint(c);

	return v & 1 ? -(int)(v >> 1) : (int)(v >> 1);
}

/*
 * The line of code unit offset off: each entry covers 1..8 units and
 * moves the line by a delta its kind says (Objects/locations.md).
 */
static unsigned line_of(const struct code *c, uint32_t off)
{
	struct cursor cur = { c->table, c->table + c->table_len };
	int line = c->firstline;
	uint32_t at = 0;

	while (cur.p < cur.end) {
		uint8_t first = *cur.p++;
		int kind = (first >> 3) & 15, delta = 0;
		uint32_t units = (first & 7) + 1;
		bool none = false;

		if (!(first & 128))
			return 0; /* not the start of an entry: a bad table */
		if (kind == 15) {
			none = true;
		} else if (kind == 14) {
			delta = svarint(&cur);
			varint(&cur); /* end line */
			varint(&cur); /* column */
			varint(&cur); /* end column */
		} else if (kind == 13) {
			delta = svarint(&cur);
		} else if (kind >= 10) {
			delta = kind - 10;
			cur.p += 2; /* columns */
		} else {
			cur.p += 1; /* column */
		}
		line += delta;
		if (off < at + units)
			return none || line < 0 ? 0 : (unsigned)line;
		at += units;
	}
	return 0;
}

static int describe(uint64_t key, struct alloy_reporter_frame_info *info)
{
	uint32_t id = (uint32_t)(key >> 32);
	const struct code *c;

	if (!id || id > atomic_load_explicit(&F.n, memory_order_acquire))
		return -2; /* -ENOENT */
	c = F.codes[id - 1];
	info->code = id;
	info->function = c->function;
	info->file = c->file;
	info->line = c->table ? line_of(c, (uint32_t)key) : 0;
	return 0;
}

static struct alloy_reporter_frame_source source = {
	.size = sizeof(source),
	.capture = capture,
	.describe = describe,
};

/* The lock is never held across fork by a thread the child lacks. */
static void forked(void)
{
	atomic_flag_clear(&F.lock);
}

int alloy__py_frames_init(void)
{
	ElfW(Sym) *sym = NULL;
	Dl_info info;
	void *eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	struct code *unknown;

	if (F.ready)
		return 0;
	if (!eval || !dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) ||
	    !sym || !sym->st_size)
		return -1; /* no evaluation loop to replace: native stacks */
	F.codes = map(MAX_CODES * sizeof(*F.codes));
	F.slot = map(SLOTS * sizeof(*F.slot));
	unknown = F.codes ? take(sizeof(*unknown)) : NULL;
	if (!F.codes || !F.slot || !unknown)
		return -1;
	/* Id 1: a frame that could not be interned. */
	unknown->function = "(python)";
	unknown->file = "?";
	F.codes[0] = unknown;
	atomic_store(&F.n, 1);
	pthread_atfork(NULL, NULL, forked);
	source.eval_start = (uintptr_t)eval;
	source.eval_end = (uintptr_t)eval + sym->st_size;
	F.ready = true;
	return alloy_reporter_set_frame_source(&source);
}

#else /* another CPython: its frames are not read */

int alloy__py_frames_init(void)
{
	return -1;
}

#endif
