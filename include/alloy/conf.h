/* SPDX-License-Identifier: MIT */
/*
 * alloy/conf.h - ALLOY_CONF, the run-time configuration.
 *
 * ALLOY_CONF="cpu:jemalloc,align:64,report:stderr" is read once, on first
 * use of the library.  Bad parts are reported on stderr, one line each,
 * naming the part and what is used instead; the rest still applies.
 * Blanks around items, keys and values are ignored ("align : 64" is
 * "align:64"); an item holding a control byte is refused, and bytes
 * outside printable ASCII are shown as \xNN in messages.  A string longer
 * than ALLOY_CONF_MAX_LENGTH is refused whole (one error; every key keeps
 * its default).
 *
 * Value types: sizes take an optional K/M/G or KiB/MiB/GiB suffix (powers
 * of 1024); booleans take 1/0, true/false, yes/no, on/off.
 */
#ifndef ALLOY_CONF_H
#define ALLOY_CONF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest ALLOY_CONF honoured, in bytes. */
#define ALLOY_CONF_MAX_LENGTH 4095

/*
 * Make sure the library is initialised: ALLOY_CONF and ALLOY_PLUGINS are
 * read, built-in allocators registered, defaults set.  Every entry point
 * does this itself; calling it is only needed to force it early.  Returns
 * the number of configuration errors found (0 when clean).
 */
int alloy_init(void);

/* The number of errors found in ALLOY_CONF (after alloy_init). */
int alloy_conf_error_count(void);

/*
 * The text of the i-th error (0-based), or NULL past the count.  The
 * first 32 are kept; later ones are counted, and their text says so.
 */
const char *alloy_conf_error(int i);

/*
 * The effective value of a key as a string ("64", "true", "default"), or
 * NULL for an unknown key.  Keys are those listed by alloy_conf_foreach.
 */
const char *alloy_conf_get(const char *key);

/*
 * Call fn(key, value, description, from_env, arg) for each known key, in
 * table order; from_env is true when ALLOY_CONF set it.
 */
void alloy_conf_foreach(void (*fn)(const char *key, const char *value,
				   const char *help, bool from_env, void *arg),
			void *arg);

/*
 * The allocator-specific pairs ("name.key:value") in ALLOY_CONF, in order.
 */
void alloy_conf_foreach_option(void (*fn)(const char *allocator,
					  const char *key, const char *value,
					  void *arg),
			       void *arg);

/*
 * Parse helpers shared by every key; 0, or -EINVAL (not a size/boolean,
 * or s or out NULL) / -ERANGE (beyond 64 bits) with the message set.
 */
int alloy_parse_size(const char *s, uint64_t *out);
int alloy_parse_bool(const char *s, bool *out);

/* Frequently read settings, fixed after init. */
size_t alloy_conf_align(void);	 /* default alignment, default 64 */
bool alloy_conf_zero_fill(void); /* zero every new CPU block */
bool alloy_conf_junk_fill(void); /* fill new/freed CPU blocks with junk */

/* The byte junk_fill writes into new blocks (freed ones get ~it). */
#define ALLOY_JUNK_ALLOC 0xa5
#define ALLOY_JUNK_FREE	 0x5a

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_CONF_H */
