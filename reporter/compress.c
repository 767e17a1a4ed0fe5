// SPDX-License-Identifier: MIT
/*
 * reporter/compress.c - a trace written through zstd's streaming
 * compressor (docs/TRACE-FORMAT.md, "Compressed traces").
 *
 * The records are the same text; only what reaches the file differs.  The
 * compressor runs where the stream already writes its buffer out, under
 * the stream's lock, so an event only ever appends a line as before.
 * Each write-out ends a zstd block (a flush, not the end of the frame):
 * the file then holds every record up to that write in a form a reader
 * can decompress, and the compressor keeps its history, so later blocks
 * still refer back to the records before them.
 *
 * The compressor's memory is a fixed workspace from alloy's arena, not
 * from malloc: this runs inside allocations of a program whose malloc
 * may be alloy's.  It is made at the first compressed trace and kept for
 * the next one (a forked child's, a second run-time start).
 */
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
	ZSTD_CCtx_setParameter(cs, ZSTD_c_compressionLevel, LEVEL);
	ZSTD_CCtx_setParameter(cs, ZSTD_c_checksumFlag, 0);
}

int alloy__rep_zstd_begin(struct rep_zstd **zp)
{
	struct rep_zstd *z = &Z;

	if (!z->cs) {
		z->work_size = ZSTD_estimateCStreamSize(LEVEL);
		z->out_cap = ZSTD_CStreamOutSize();
		z->work = alloy__arena_alloc(z->work_size);
		z->out = alloy__arena_alloc(z->out_cap);
		if (z->work)
			z->cs = ZSTD_initStaticCStream(z->work, z->work_size);
		if (!z->cs || !z->out) {
			if (z->work)
				alloy__arena_free(z->work, z->work_size);
			if (z->out)
				alloy__arena_free(z->out, z->out_cap);
			memset(z, 0, sizeof(*z));
			return -ENOMEM;
		}
	}
	ZSTD_CCtx_reset(z->cs, ZSTD_reset_session_and_parameters);
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

		left = ZSTD_compressStream2(z->cs, &ob, &ib, how);
		if (ZSTD_isError(left))
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
