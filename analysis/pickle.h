/* SPDX-License-Identifier: MIT */
/*
 * analysis/pickle.h - a streaming writer of Python's pickle format,
 * protocol 2: dictionaries, lists, tuples, strings, integers, floats,
 * booleans and None, enough for the snapshot PyTorch's memory viewer reads.
 *
 * Containers are opened and closed around their items (a dictionary's
 * items are key, value, key, value, ...); nothing is memoised, so the
 * output holds each object once, as written.
 */
#ifndef ALLOY_ANALYSIS_PICKLE_H
#define ALLOY_ANALYSIS_PICKLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct pickle {
	FILE *out;
	int depth; /* open containers */
};

/* Start a pickle on out (the protocol header). */
void pickle_begin(struct pickle *p, FILE *out);
/* End it (the stop opcode); every container must be closed. */
void pickle_end(struct pickle *p);

void pickle_dict_open(struct pickle *p);
void pickle_dict_close(struct pickle *p);
void pickle_list_open(struct pickle *p);
void pickle_list_close(struct pickle *p);
void pickle_tuple_open(struct pickle *p);
void pickle_tuple_close(struct pickle *p);

/* A str; bytes that are not valid UTF-8 become U+FFFD. */
void pickle_str(struct pickle *p, const char *s);
void pickle_int(struct pickle *p, int64_t v);
void pickle_uint(struct pickle *p, uint64_t v);
void pickle_float(struct pickle *p, double v);
void pickle_bool(struct pickle *p, bool v);
void pickle_none(struct pickle *p);

/* A dictionary key followed by its value, for the common cases. */
void pickle_key_str(struct pickle *p, const char *key, const char *v);
void pickle_key_uint(struct pickle *p, const char *key, uint64_t v);
void pickle_key_int(struct pickle *p, const char *key, int64_t v);

#endif /* ALLOY_ANALYSIS_PICKLE_H */
