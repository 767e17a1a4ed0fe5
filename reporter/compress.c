// SPDX-License-Identifier: MIT
/*
 * reporter/compress.c - a trace written through zstd's streaming
 * compressor (docs/TRACE-FORMAT.md, "Compressed traces").
 *
 * The records are the same text; only what reaches the file differs.  The
 * compressor runs where the stream already writes its buffer out, under
 * the stream's lock, so an event only appends its line, as in a text trace.
 * Each write-out ends a zstd block (a flush, not the end of the frame):
 * the file then holds every record up to that write in a form a reader
 * can decompress, and the compressor keeps its history, so later blocks
 * still refer back to the records before them.
 *
 * The compressor's memory is a fixed workspace from alloy's arena, not
 * from malloc: this runs inside allocations of a program whose malloc
 * may be alloy's.  It is made at the first compressed trace and kept for
 * the next one (a forked child's, a second run-time start).
 *
 * libzstd is loaded (dlopen, as allocator modules are) only when a
 * compressed trace is opened: alloy is in every program under alloy
 * run, and a library mapped into each of them costs address space and
 * start-up for the few that write compressed traces.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "config.h"
#include "internal.h"
#include "kernel/arena.h"

#ifdef HAVE_ZSTD
#define ZSTD_STATIC_LINKING_ONLY /* the static workspace */
#include <zstd.h>

/*
 * Level 1, zstd's fastest with its own window: on a steady program's
 * trace it compresses as well as level 3 and costs half as much
 * (docs/BENCHMARKS.md), and the compressing is done on whichever
 * thread fills the buffer.
 */
#define LEVEL 1

/* The functions of libzstd the writer calls, from dlsym. */
static struct {
	bool tried, ok;
	size_t (*estimate)(int);
	size_t (*out_size)(void);
	ZSTD_CStream *(*init_static)(void *, size_t);
	size_t (*reset)(ZSTD_CCtx *, ZSTD_ResetDirective);
	size_t (*set)(ZSTD_CCtx *, ZSTD_cParameter, int);
	size_t (*compress)(ZSTD_CCtx *, ZSTD_outBuffer *, ZSTD_inBuffer *,
			   ZSTD_EndDirective);
	unsigned (*is_error)(size_t);
} L;

#define SYM(field, name) \
	(*(void **)&L.field = dlsym(handle, name), L.field != NULL)

/* libzstd, loaded once; false when it cannot be (the caller says so). */
static bool load(void)
{
	void *handle;

	if (L.tried)
		return L.ok;
	L.tried = true;
	handle = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!handle)
		return false;
	L.ok = SYM(estimate, "ZSTD_estimateCStreamSize") &&
	       SYM(out_size, "ZSTD_CStreamOutSize") &&
	       SYM(init_static, "ZSTD_initStaticCStream") &&
	       SYM(reset, "ZSTD_CCtx_reset") &&
	       SYM(set, "ZSTD_CCtx_setParameter") &&
	       SYM(compress, "ZSTD_compressStream2") &&
	       SYM(is_error, "ZSTD_isError");
	return L.ok;
}

struct rep_zstd {
	ZSTD_CStream *cs;
	void *work;
	size_t work_size;
	char *out;
	size_t out_cap;
};

static struct rep_zstd Z;

static void set_params(ZSTD_CCtx *cs)
{
	L.set(cs, ZSTD_c_compressionLevel, LEVEL);
	L.set(cs, ZSTD_c_checksumFlag, 0);
}

int alloy__rep_zstd_begin(struct rep_zstd **zp)
{
	struct rep_zstd *z = &Z;

	if (!load())
		return -ELIBACC;
	if (!z->cs) {
		z->work_size = L.estimate(LEVEL);
		z->out_cap = L.out_size();
		z->work = alloy__arena_alloc(z->work_size);
		z->out = alloy__arena_alloc(z->out_cap);
		if (z->work)
			z->cs = L.init_static(z->work, z->work_size);
		if (!z->cs || !z->out) {
			if (z->work)
				alloy__arena_free(z->work, z->work_size);
			if (z->out)
				alloy__arena_free(z->out, z->out_cap);
			memset(z, 0, sizeof(*z));
			return -ENOMEM;
		}
	}
	L.reset(z->cs, ZSTD_reset_session_and_parameters);
	set_params(z->cs);
	*zp = z;
	return 0;
}

int alloy__rep_zstd_push(struct rep_zstd *z, const char *in, size_t len,
			 bool end, int (*sink)(void *, const char *, size_t),
			 void *arg)
{
	ZSTD_inBuffer ib = { in, len, 0 };
	ZSTD_EndDirective how = end ? ZSTD_e_end : ZSTD_e_flush;
	size_t left;
	int rc;

	do {
		ZSTD_outBuffer ob = { z->out, z->out_cap, 0 };

		left = L.compress(z->cs, &ob, &ib, how);
		if (L.is_error(left))
			return -EIO;
		if (ob.pos) {
			rc = sink(arg, z->out, ob.pos);
			if (rc)
				return rc;
		}
	} while (left || ib.pos < ib.size);
	return 0;
}

#else /* !HAVE_ZSTD */

int alloy__rep_zstd_begin(struct rep_zstd **zp)
{
	*zp = NULL;
	return -ENOTSUP;
}

int alloy__rep_zstd_push(struct rep_zstd *z, const char *in, size_t len,
			 bool end, int (*sink)(void *, const char *, size_t),
			 void *arg)
{
	(void)z;
	(void)in;
	(void)len;
	(void)end;
	(void)sink;
	(void)arg;
	return -ENOTSUP;
}

#endif /* HAVE_ZSTD */

bool alloy__rep_zstd_path(const char *path)
{
	size_t n = strlen(path);

	return n > 4 && !strcmp(path + n - 4, ".zst");
}
