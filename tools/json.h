/* SPDX-License-Identifier: MIT */
/*
 * tools/json.h - the little JSON the alloy command writes.
 */
#ifndef ALLOY_TOOLS_JSON_H
#define ALLOY_TOOLS_JSON_H

#include <stdio.h>

/* Write s as a JSON string literal, quotes included. */
void json_string(FILE *out, const char *s);

/* Write a double as JSON (finite values only; others become null). */
void json_number(FILE *out, double v);

#endif /* ALLOY_TOOLS_JSON_H */
