// SPDX-License-Identifier: MIT
/*
 * core/conf.c - the ALLOY_CONF parser and the table of keys.
 *
 * One table describes every key: its type, default and where its value
 * lives.  The parser walks "key:value" items separated by commas; items of
 * the form "name.key:value" belong to allocator `name` and are kept for it
 * (the registry hands them to its set_option when it registers).  Nothing
 * here can fail hard: each bad item becomes one line in conf->errors that
 * names it and says what is used instead.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "internal.h"
#include "conf.h"

struct alloy__conf alloy__conf;

enum key_type {
	KEY_ALLOCATOR, /* an allocator name; checked against the registry */
	KEY_ALIGN,     /* a power of two, MIN_ALIGN..MAX_ALIGN */
	KEY_SIZE,      /* a byte count with an optional suffix */
	KEY_BOOL,
	KEY_PATH, /* "stderr", "stdout" or a file path; "" = off */
	KEY_ENUM, /* one of choices, '|'-separated */
};

struct conf_key {
	const char *name;
	enum key_type type;
	const char *def;
	size_t offset; /* of the value in struct alloy__conf */
	size_t len;    /* of a string value's buffer */
	const char *choices;
	const char *help;
};

#define MIN_ALIGN sizeof(void *)
#define MAX_ALIGN ((uint64_t)1 << 30)

#define STR(field)                           \
	offsetof(struct alloy__conf, field), \
		sizeof(((struct alloy__conf *)0)->field)
#define VAL(field) offsetof(struct alloy__conf, field), 0

static const struct conf_key keys[] = {
	{ "cpu", KEY_ALLOCATOR, "default", STR(alloc_name[ALLOY_DEVICE_CPU]),
	  NULL, "default allocator for CPU memory" },
	{ "cuda", KEY_ALLOCATOR, "cuda_caching",
	  STR(alloc_name[ALLOY_DEVICE_CUDA]), NULL,
	  "default allocator for CUDA device memory" },
	{ "cuda_host", KEY_ALLOCATOR, "cuda_host",
	  STR(alloc_name[ALLOY_DEVICE_CUDA_HOST]), NULL,
	  "default allocator for pinned host memory" },
	{ "align", KEY_ALIGN, "64", VAL(align), NULL,
	  "default alignment of CPU blocks, a power of two" },
	{ "zero_fill", KEY_BOOL, "false", VAL(zero_fill), NULL,
	  "fill every new CPU block with zeroes" },
	{ "junk_fill", KEY_BOOL, "false", VAL(junk_fill), NULL,
	  "fill new CPU blocks with 0xa5 and freed ones with 0x5a" },
	{ "report", KEY_PATH, "", STR(report), NULL,
	  "exit report and leak report: stderr, stdout or a path" },
	{ "report_format", KEY_ENUM, "text", STR(report_format), "text|json",
	  "format of the exit report" },
	{ "log", KEY_PATH, "", STR(log), NULL,
	  "one line per allocation and free: stderr, stdout or a path" },
	{ "trace", KEY_PATH, "", STR(trace), NULL,
	  "event trace file (docs/TRACE-FORMAT.md)" },
	{ "backtrace", KEY_BOOL, "false", VAL(backtrace), NULL,
	  "record each block's call stack: leak sites, the at-peak report" },
	{ "leaks", KEY_ENUM, "full", STR(leaks), "full|summary|off",
	  "blocks live at exit in the report: each, a count and top sites, none" },
	{ "keep_on_shrink", KEY_BOOL, "true", VAL(keep_on_shrink), NULL,
	  "tensors keep their buffer when resized smaller" },
	{ "max_keep_on_shrink_memory", KEY_SIZE, "unlimited",
	  VAL(max_keep_on_shrink_memory), NULL,
	  "most bytes a shrunk tensor may keep unused" },
};

_Static_assert(ARRAY_SIZE(keys) <= 32, "grow alloy__conf.from_env");

void alloy__conf_add_error(struct alloy__conf *c, const char *fmt, ...)
{
	va_list ap;

	if (c->nerrors >= ALLOY_CONF_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	vsnprintf(c->errors[c->nerrors], sizeof(c->errors[0]), fmt, ap);
	va_end(ap);
	c->nerrors++;
}

void alloy__conf_report(const char *fmt, ...)
{
	struct alloy__conf *c = &alloy__conf;
	va_list ap;

	if (c->nerrors >= ALLOY_CONF_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	vsnprintf(c->errors[c->nerrors], sizeof(c->errors[0]), fmt, ap);
	va_end(ap);
	fprintf(stderr, "alloy: ALLOY_CONF: %s\n", c->errors[c->nerrors]);
	c->nerrors++;
}

int alloy_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

int alloy_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		unsigned shift;
	} units[] = {
		{ "", 0 },     { "b", 0 },    { "k", 10 },   { "kb", 10 },
		{ "kib", 10 }, { "m", 20 },   { "mb", 20 },  { "mib", 20 },
		{ "g", 30 },   { "gb", 30 },  { "gib", 30 }, { "t", 40 },
		{ "tb", 40 },  { "tib", 40 },
	};
	uint64_t v = 0;
	const char *p = s;

	if (strcasecmp(s, "unlimited") == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			return -ERANGE;
		v = v * 10 + d;
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcasecmp(p, units[i].suffix) != 0)
			continue;
		if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
			return -ERANGE;
		*out = v << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

/* Store the value of key k parsed from text; 0 or a problem already told. */
static int set_value(struct alloy__conf *c, const struct conf_key *k,
		     const char *text, const char *item)
{
	char *base = (char *)c;
	uint64_t n;
	bool b;
	int rc;

	switch (k->type) {
	case KEY_ALLOCATOR:
		if (!alloy_allocator_name_valid(text))
			goto bad_name;
		/* stored as a string, checked against the registry at init */
		__attribute__((fallthrough));
	case KEY_PATH:
		if (strlen(text) >= k->len)
			goto too_long;
		memcpy(base + k->offset, text, strlen(text) + 1);
		return 0;
	case KEY_ENUM: {
		size_t tl = strlen(text);

		for (const char *p = k->choices; *p;) {
			size_t cl = strcspn(p, "|");

			if (cl == tl && strncmp(p, text, cl) == 0) {
				memcpy(base + k->offset, text, tl + 1);
				return 0;
			}
			p += cl + (p[cl] == '|');
		}
		alloy__conf_add_error(c,
				      "%s: \"%s\" is not one of %s; using %s",
				      item, text, k->choices, k->def);
		return -EINVAL;
	}
	case KEY_BOOL:
		if (alloy_parse_bool(text, &b)) {
			alloy__conf_add_error(
				c,
				"%s: \"%s\" is not a boolean (1/0, true/false, yes/no, on/off); using %s",
				item, text, k->def);
			return -EINVAL;
		}
		*(bool *)(base + k->offset) = b;
		return 0;
	case KEY_SIZE:
	case KEY_ALIGN:
		rc = alloy_parse_size(text, &n);
		if (rc) {
			alloy__conf_add_error(
				c, "%s: \"%s\" is %s; using %s", item, text,
				rc == -ERANGE
					? "too large for 64 bits"
					: "not a size (digits with an optional K/M/G/T or KiB/MiB/GiB/TiB suffix)",
				k->def);
			return rc;
		}
		if (k->type == KEY_ALIGN &&
		    (n & (n - 1) || n < MIN_ALIGN || n > MAX_ALIGN)) {
			alloy__conf_add_error(
				c,
				"%s: alignment %llu is not a power of two between %zu and %llu; using %s",
				item, (unsigned long long)n, MIN_ALIGN,
				(unsigned long long)MAX_ALIGN, k->def);
			return -EINVAL;
		}
		*(uint64_t *)(base + k->offset) = n;
		return 0;
	}
	return -EINVAL;

bad_name:
	alloy__conf_add_error(
		c,
		"%s: \"%s\" is not an allocator name ([A-Za-z0-9_], 1..%d characters); using %s",
		item, text, ALLOY_NAME_MAX, k->def);
	return -EINVAL;
too_long:
	alloy__conf_add_error(c,
			      "%s: value longer than %zu characters; using %s",
			      item, k->len - 1, k->def[0] ? k->def : "none");
	return -ERANGE;
}

void alloy__conf_defaults(struct alloy__conf *c)
{
	memset(c, 0, sizeof(*c));
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		int rc = set_value(c, &keys[i], keys[i].def, keys[i].name);

		/* The table's own defaults are always valid. */
		(void)rc;
	}
}

/* "name.key:value": kept for allocator `name`. */
static void add_option(struct alloy__conf *c, const char *key,
		       const char *value, const char *item)
{
	const char *dot = strchr(key, '.');
	struct alloy__conf_option *o;
	size_t nl = (size_t)(dot - key);

	if (c->noptions >= ALLOY_CONF_MAX_OPTIONS) {
		alloy__conf_add_error(
			c, "%s: more than %d allocator options; ignored", item,
			ALLOY_CONF_MAX_OPTIONS);
		return;
	}
	o = &c->options[c->noptions];
	if (nl == 0 || nl > ALLOY_NAME_MAX || dot[1] == '\0' ||
	    strlen(dot + 1) >= sizeof(o->key) ||
	    strlen(value) >= sizeof(o->value)) {
		alloy__conf_add_error(
			c,
			"%s: malformed allocator option (expected name.key:value); ignored",
			item);
		return;
	}
	memcpy(o->allocator, key, nl);
	o->allocator[nl] = '\0';
	if (!alloy_allocator_name_valid(o->allocator)) {
		alloy__conf_add_error(
			c, "%s: \"%s\" is not an allocator name; ignored", item,
			o->allocator);
		return;
	}
	snprintf(o->key, sizeof(o->key), "%s", dot + 1);
	snprintf(o->value, sizeof(o->value), "%s", value);
	c->noptions++;
}

static void parse_item(struct alloy__conf *c, char *item)
{
	char *colon = strchr(item, ':');
	char *key = item, *value;
	char shown[4200];

	if (!colon || colon == item) {
		alloy__conf_add_error(
			c,
			"\"%s\": malformed item (expected key:value); ignored",
			item);
		return;
	}
	*colon = '\0';
	value = colon + 1;
	/* The item as the user wrote it, for messages. */
	snprintf(shown, sizeof(shown), "%s:%s", key, value);
	if (strchr(key, '.')) {
		add_option(c, key, value, shown);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (strcmp(keys[i].name, key) != 0)
			continue;
		if (value[0] == '\0' && keys[i].type != KEY_PATH) {
			alloy__conf_add_error(c, "%s: empty value; using %s",
					      shown, keys[i].def);
			set_value(c, &keys[i], keys[i].def, key);
			return;
		}
		if (set_value(c, &keys[i], value, shown) == 0)
			c->from_env[i] = true;
		else
			set_value(c, &keys[i], keys[i].def, key);
		return;
	}
	alloy__conf_add_error(c, "\"%s\": unknown key; ignored", key);
}

int alloy__conf_parse(const char *text, struct alloy__conf *c)
{
	char buf[4096];
	char *save = NULL;

	alloy__conf_defaults(c);
	if (!text)
		return 0;
	if (strlen(text) >= sizeof(buf)) {
		alloy__conf_add_error(
			c,
			"longer than %zu characters; ignored whole, using the defaults",
			sizeof(buf) - 1);
		return c->nerrors;
	}
	strcpy(buf, text);
	for (char *item = strtok_r(buf, ",", &save); item;
	     item = strtok_r(NULL, ",", &save)) {
		/* Surrounding blanks are allowed ("cpu:x, align:64"). */
		while (isspace((unsigned char)*item))
			item++;
		for (char *e = item + strlen(item);
		     e > item && isspace((unsigned char)e[-1]);)
			*--e = '\0';
		if (*item)
			parse_item(c, item);
	}
	if (c->zero_fill && c->junk_fill) {
		alloy__conf_add_error(
			c,
			"zero_fill:1 and junk_fill:1 exclude each other; using the defaults (zero_fill:0, junk_fill:0)");
		c->zero_fill = false;
		c->junk_fill = false;
	}
	return c->nerrors;
}

/* ---- queries --------------------------------------------------------- */

static const char *format_value(const struct conf_key *k, char *buf, size_t len)
{
	const char *base = (const char *)&alloy__conf;
	uint64_t n;

	switch (k->type) {
	case KEY_ALLOCATOR:
	case KEY_PATH:
	case KEY_ENUM:
		return base + k->offset;
	case KEY_BOOL:
		return *(const bool *)(base + k->offset) ? "true" : "false";
	case KEY_SIZE:
	case KEY_ALIGN:
		n = *(const uint64_t *)(base + k->offset);
		if (n == UINT64_MAX)
			return "unlimited";
		snprintf(buf, len, "%llu", (unsigned long long)n);
		return buf;
	}
	return "";
}

const char *alloy_conf_get(const char *key)
{
	static __thread char buf[32];

	alloy__ensure_init();
	if (!key)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		if (strcmp(keys[i].name, key) == 0)
			return format_value(&keys[i], buf, sizeof(buf));
	alloy__error(-ENOENT, __func__, "unknown key \"%s\"", key);
	return NULL;
}

void alloy_conf_foreach(void (*fn)(const char *key, const char *value,
				   const char *help, bool from_env, void *arg),
			void *arg)
{
	char buf[32];

	alloy__ensure_init();
	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		fn(keys[i].name, format_value(&keys[i], buf, sizeof(buf)),
		   keys[i].help, alloy__conf.from_env[i], arg);
}

void alloy_conf_foreach_option(void (*fn)(const char *allocator,
					  const char *key, const char *value,
					  void *arg),
			       void *arg)
{
	for (int i = 0; i < alloy__conf.noptions; i++)
		fn(alloy__conf.options[i].allocator, alloy__conf.options[i].key,
		   alloy__conf.options[i].value, arg);
}

int alloy_conf_error_count(void)
{
	alloy__ensure_init();
	return alloy__conf.nerrors;
}

const char *alloy_conf_error(int i)
{
	alloy__ensure_init();
	if (i < 0 || i >= alloy__conf.nerrors)
		return NULL;
	return alloy__conf.errors[i];
}

size_t alloy_conf_align(void)
{
	alloy__ensure_init();
	return (size_t)alloy__conf.align;
}

bool alloy_conf_zero_fill(void)
{
	alloy__ensure_init();
	return alloy__conf.zero_fill;
}

bool alloy_conf_junk_fill(void)
{
	alloy__ensure_init();
	return alloy__conf.junk_fill;
}
