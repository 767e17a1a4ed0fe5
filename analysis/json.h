/* SPDX-License-Identifier: MIT */
/*
 * analysis/json.h - the little JSON (and HTML text) the alloy command writes.
 */
#ifndef ALLOY_ANALYSIS_JSON_H
#define ALLOY_ANALYSIS_JSON_H

#include <stdio.h>

/*
 * Write s as a JSON string literal, quotes included.  Valid UTF-8 is
 * written as it is; each byte that is not part of it becomes \ufffd (the
 * replacement character), so the output is always valid UTF-8 and JSON.
 */
void json_string(FILE *out, const char *s);

/*
 * The same, safe inside an HTML <script> element as well: <, > and & are
 * written as \u escapes, so no text can close the element.
 */
void json_string_script(FILE *out, const char *s);

/*
 * Write s as HTML or SVG text (&, <, >, " escaped; a byte that is not
 * part of valid UTF-8 as &#xfffd;, as in json_string, and so is a
 * control byte other than tab, newline and carriage return).
 */
void html_text(FILE *out, const char *s);

/* Write a double as JSON (finite values only; others become null). */
void json_number(FILE *out, double v);

#endif /* ALLOY_ANALYSIS_JSON_H */
