// SPDX-License-Identifier: MIT
/*
 * tools/json.c - JSON string escaping and numbers.
 */
#include <math.h>
#include <stdbool.h>

#include "json.h"

static void json_string_as(FILE *out, const char *s, bool script)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
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
		default:
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
