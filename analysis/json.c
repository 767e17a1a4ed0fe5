// SPDX-License-Identifier: MIT
/*
 * analysis/json.c - JSON string escaping and numbers.
 */
#include <math.h>
#include <stdbool.h>

#include "json.h"
#include "reporter/utf8.h"

/*
 * Text from outside (a path, an owner or symbol name from a trace) is
 * bytes, and JSON, HTML and SVG carry Unicode: valid UTF-8 goes out as it
 * is, and each byte that is not part of it as U+FFFD, the replacement
 * character (written as replacement, in the output's own escape), so
 * that a reader gets the rest of the text and a parser does not refuse
 * the whole document.  p is at a byte of 0x80 or more; returns the bytes
 * it took.
 */
static int put_non_ascii(FILE *out, const unsigned char *p,
			 const char *replacement)
{
	int n = alloy__utf8_len(p);

	if (!n) {
		fputs(replacement, out);
		return 1;
	}
	fwrite(p, 1, (size_t)n, out);
	return n;
}

static void json_string_as(FILE *out, const char *s, bool script)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		if (*p >= 0x80) {
			p += put_non_ascii(out, p, "\\ufffd") - 1;
			continue;
		}
		if (script && (*p == '<' || *p == '>' || *p == '&')) {
			fprintf(out, "\\u%04x", *p);
			continue;
		}
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (*p < 0x20)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

void json_string(FILE *out, const char *s)
{
	json_string_as(out, s, false);
}

void json_string_script(FILE *out, const char *s)
{
	json_string_as(out, s, true);
}

void html_text(FILE *out, const char *s)
{
	for (; s && *s; s++) {
		if ((unsigned char)*s >= 0x80) {
			s += put_non_ascii(out, (const unsigned char *)s,
					   "&#xfffd;") -
			     1;
			continue;
		}
		switch (*s) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\t':
		case '\n':
		case '\r':
			fputc(*s, out);
			break;
		default:
			/* XML has no way to carry the other control bytes. */
			if ((unsigned char)*s < 0x20)
				fputs("&#xfffd;", out);
			else
				fputc(*s, out);
		}
	}
}

void json_number(FILE *out, double v)
{
	if (isfinite(v))
		fprintf(out, "%.6g", v);
	else
		fputs("null", out);
}
