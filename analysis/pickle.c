// SPDX-License-Identifier: MIT
/*
 * analysis/pickle.c - Python's pickle, protocol 2, written as a stream.
 *
 * The opcodes used are those of protocol 2 that every Python 3 reads:
 * PROTO, STOP, EMPTY_DICT/EMPTY_LIST with MARK and SETITEMS/APPENDS,
 * MARK ... TUPLE, BINUNICODE, BININT, LONG1, BINFLOAT, NEWTRUE/NEWFALSE
 * and NONE.  A dictionary or list is opened empty and filled by one
 * SETITEMS or APPENDS of everything since its MARK, so the writer keeps
 * no state but the nesting depth.
 */
#include <string.h>

#include "reporter/utf8.h"
#include "pickle.h"

#define OP_PROTO      0x80
#define OP_STOP	      '.'
#define OP_MARK	      '('
#define OP_EMPTY_DICT '}'
#define OP_SETITEMS   'u'
#define OP_EMPTY_LIST ']'
#define OP_APPENDS    'e'
#define OP_TUPLE      't'
#define OP_BINUNICODE 'X'
#define OP_BININT     'J'
#define OP_LONG1      0x8a
#define OP_BINFLOAT   'G'
#define OP_NEWTRUE    0x88
#define OP_NEWFALSE   0x89
#define OP_NONE	      'N'

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

static void put_le32(FILE *out, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		fputc((int)((v >> (8 * i)) & 0xff), out);
}

void pickle_begin(struct pickle *p, FILE *out)
{
	p->out = out;
	p->depth = 0;
	fputc(OP_PROTO, out);
	fputc(2, out);
}

void pickle_end(struct pickle *p)
{
	fputc(OP_STOP, p->out);
}

void pickle_dict_open(struct pickle *p)
{
	fputc(OP_EMPTY_DICT, p->out);
	fputc(OP_MARK, p->out);
	p->depth++;
}

void pickle_dict_close(struct pickle *p)
{
	fputc(OP_SETITEMS, p->out);
	p->depth--;
}

void pickle_list_open(struct pickle *p)
{
	fputc(OP_EMPTY_LIST, p->out);
	fputc(OP_MARK, p->out);
	p->depth++;
}

void pickle_list_close(struct pickle *p)
{
	fputc(OP_APPENDS, p->out);
	p->depth--;
}

void pickle_tuple_open(struct pickle *p)
{
	fputc(OP_MARK, p->out);
	p->depth++;
}

void pickle_tuple_close(struct pickle *p)
{
	fputc(OP_TUPLE, p->out);
	p->depth--;
}

/*
 * BINUNICODE carries its length in bytes before the text, so the text is
 * measured first with every invalid byte counted as the three bytes of
 * its replacement.
 */
void pickle_str(struct pickle *p, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = 0;
	int n;

	for (size_t i = 0; u[i]; i += n ? (size_t)n : 1) {
		n = alloy__utf8_len(u + i);
		len += n ? (size_t)n : sizeof(replacement) - 1;
	}
	fputc(OP_BINUNICODE, p->out);
	put_le32(p->out, (uint32_t)len);
	for (size_t i = 0; u[i]; i += n ? (size_t)n : 1) {
		n = alloy__utf8_len(u + i);
		if (n)
			fwrite(u + i, 1, (size_t)n, p->out);
		else
			fputs(replacement, p->out);
	}
}

/* LONG1: the value's two's complement, little-endian, in as few bytes
 * as keep its sign. */
static void put_long1(FILE *out, const unsigned char *le, int nbytes)
{
	fputc(OP_LONG1, out);
	fputc(nbytes, out);
	fwrite(le, 1, (size_t)nbytes, out);
}

void pickle_int(struct pickle *p, int64_t v)
{
	unsigned char le[8];
	int n = 8;

	if (v >= INT32_MIN && v <= INT32_MAX) {
		fputc(OP_BININT, p->out);
		put_le32(p->out, (uint32_t)(int32_t)v);
		return;
	}
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)(((uint64_t)v >> (8 * i)) & 0xff);
	/* Drop high bytes that only repeat the sign. */
	while (n > 1 && ((le[n - 1] == 0 && !(le[n - 2] & 0x80)) ||
			 (le[n - 1] == 0xff && (le[n - 2] & 0x80))))
		n--;
	put_long1(p->out, le, n);
}

void pickle_uint(struct pickle *p, uint64_t v)
{
	unsigned char le[9];

	if (v <= INT64_MAX) {
		pickle_int(p, (int64_t)v);
		return;
	}
	/* Above INT64_MAX: a ninth byte of zero keeps it positive. */
	for (int i = 0; i < 8; i++)
		le[i] = (unsigned char)((v >> (8 * i)) & 0xff);
	le[8] = 0;
	put_long1(p->out, le, 9);
}

void pickle_float(struct pickle *p, double v)
{
	uint64_t bits;

	memcpy(&bits, &v, sizeof(bits));
	fputc(OP_BINFLOAT, p->out);
	for (int i = 7; i >= 0; i--)
		fputc((int)((bits >> (8 * i)) & 0xff), p->out);
}

void pickle_bool(struct pickle *p, bool v)
{
	fputc(v ? OP_NEWTRUE : OP_NEWFALSE, p->out);
}

void pickle_none(struct pickle *p)
{
	fputc(OP_NONE, p->out);
}

void pickle_key_str(struct pickle *p, const char *key, const char *v)
{
	pickle_str(p, key);
	pickle_str(p, v);
}

void pickle_key_uint(struct pickle *p, const char *key, uint64_t v)
{
	pickle_str(p, key);
	pickle_uint(p, v);
}

void pickle_key_int(struct pickle *p, const char *key, int64_t v)
{
	pickle_str(p, key);
	pickle_int(p, v);
}
