// SPDX-License-Identifier: MIT
/*
 * kernel/conf.c - the ALLOY_CONF parser and the table of keys.
 *
 * One table describes every key: its type, default and where its value
 * lives.  The parser walks "key:value" items separated by commas; items of
 * the form "name.key:value" belong to allocator `name` and are kept for it
 * (the registry hands them to its set_option when it registers).  Nothing
 * here can fail hard: each bad item becomes one line in conf->errors that
 * names it and says what is used instead.
 */
#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base.h"
#include "fork.h"
#include "conf.h"
#include "secure.h"

struct alloy__conf alloy__conf;

/*
 * Problems found after initialisation (an allocator registered later
 * refusing its option) may be reported by several threads at once.
 */
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

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
	{ "python_frames", KEY_BOOL, "true", VAL(python_frames), NULL,
	  "with backtrace, the interpreter's frames in place of its evaluation loop" },
	{ "unwinder", KEY_ENUM, "tables", STR(unwinder), "tables|libunwind",
	  "call stacks: alloy's walk of the unwind tables, or libunwind's" },
	{ "leaks", KEY_ENUM, "full", STR(leaks), "full|summary|off",
	  "blocks live at exit in the report: each, a count and top sites, none" },
	{ "run_pid", KEY_SIZE, "0", VAL(run_pid), NULL,
	  "process whose report/trace/log paths are as given; others add .PID" },
	{ "control", KEY_ENUM, "auto", STR(control), "auto|1|0",
	  "a control socket for alloy ctl and alloy top: with a program's first thread (auto), at start (1), never (0)" },
	{ "keep_on_shrink", KEY_BOOL, "true", VAL(keep_on_shrink), NULL,
	  "tensors keep their buffer when resized smaller" },
	{ "max_keep_on_shrink_memory", KEY_SIZE, "unlimited",
	  VAL(max_keep_on_shrink_memory), NULL,
	  "most bytes a shrunk tensor may keep unused" },
};

_Static_assert(ARRAY_SIZE(keys) <= 32, "grow alloy__conf.from_env");

void alloy__escape(const char *in, char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!len)
		return;
	for (; *in; in++) {
		unsigned char b = (unsigned char)*in;
		bool plain = b >= 0x20 && b < 0x7f && b != '\\';

		if (o + (plain ? 1 : 4) >= len)
			break;
		if (plain) {
			out[o++] = (char)b;
			continue;
		}
		out[o++] = '\\';
		if (b == '\\') {
			out[o++] = '\\';
			continue;
		}
		out[o++] = 'x';
		out[o++] = hex[b >> 4];
		out[o++] = hex[b & 15];
	}
	out[o] = '\0';
}

/* Format a problem line, its user-given bytes escaped, into out. */
static void format_line(char *out, size_t len, const char *fmt, va_list ap)
{
	char raw[1024];

	vsnprintf(raw, sizeof(raw), fmt, ap);
	alloy__escape(raw, out, len);
}

/*
 * Every problem is counted; the first ALLOY_CONF_MAX_ERRORS are kept
 * (alloy__conf_print_errors says how many more there were).  Count one
 * and return the slot for its line, or NULL where it is not kept.
 */
static char *count_error(struct alloy__conf *c)
{
	int i = c->nerrors++;

	return i < ALLOY_CONF_MAX_ERRORS ? c->errors[i] : NULL;
}

void alloy__conf_add_error(struct alloy__conf *c, const char *fmt, ...)
{
	char *slot = count_error(c);
	va_list ap;

	if (!slot)
		return;
	va_start(ap, fmt);
	format_line(slot, sizeof(c->errors[0]), fmt, ap);
	va_end(ap);
}

void alloy__conf_report(const char *fmt, ...)
{
	struct alloy__conf *c = &alloy__conf;
	char line[sizeof(c->errors[0])], *slot;
	va_list ap;

	va_start(ap, fmt);
	format_line(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* A leaf lock: nothing is called while it is held. */
	pthread_mutex_lock(&report_lock);
	slot = count_error(c);
	if (slot)
		memcpy(slot, line, sizeof(line));
	pthread_mutex_unlock(&report_lock);
	fprintf(stderr, "alloy: ALLOY_CONF: %s\n", line);
}

void alloy__conf_fork_lock(void)
{
	pthread_mutex_lock(&report_lock);
}

void alloy__conf_fork_unlock(void)
{
	pthread_mutex_unlock(&report_lock);
}

void alloy__conf_notice(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	format_line(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "alloy: ALLOY_CONF: %s\n", line);
}

int alloy_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "true", "yes", "on" };
	static const char *const no[] = { "0", "false", "no", "off" };

	ALLOY_ENFORCE(s && out, -EINVAL, "%s is NULL", s ? "out" : "string");
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
	return alloy__error(
		-EINVAL, __func__,
		"\"%.60s\" is not a boolean (1/0, true/false, yes/no, on/off)",
		s);
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

	ALLOY_ENFORCE(s && out, -EINVAL, "%s is NULL", s ? "out" : "string");
	if (strcasecmp(s, "unlimited") == 0) {
		*out = UINT64_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)*p))
		goto not_a_size;
	for (; isdigit((unsigned char)*p); p++) {
		unsigned d = (unsigned)(*p - '0');

		if (v > (UINT64_MAX - d) / 10)
			goto too_large;
		v = v * 10 + d;
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcasecmp(p, units[i].suffix) != 0)
			continue;
		if (units[i].shift && v > (UINT64_MAX >> units[i].shift))
			goto too_large;
		*out = v << units[i].shift;
		return 0;
	}
not_a_size:
	return alloy__error(
		-EINVAL, __func__,
		"\"%.60s\" is not a size (digits with an optional K/M/G/T or KiB/MiB/GiB/TiB suffix)",
		s);
too_large:
	return alloy__error(-ERANGE, __func__,
			    "\"%.60s\" is too large for 64 bits", s);
}

/*
 * In secure-execution mode the caller's environment must not choose
 * files the program's owner writes: only the standard streams stay
 * allowed (set_value, below).
 */
bool alloy__conf_names_file(const char *text)
{
	return text[0] && strcmp(text, "stderr") != 0 &&
	       strcmp(text, "stdout") != 0;
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
		if (k->type == KEY_PATH && alloy__conf_names_file(text) &&
		    alloy__secure_mode()) {
			/* Said once for all, by alloy__secure_report(). */
			alloy__secure_ignored("%s", item);
			return -EPERM;
		}
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
	/* Keys are names too: nothing odd reaches set_option or a listing. */
	if (!alloy_allocator_name_valid(dot + 1)) {
		alloy__conf_add_error(
			c,
			"%s: option key \"%s\" is not a name ([A-Za-z0-9_]); ignored",
			item, dot + 1);
		return;
	}
	snprintf(o->key, sizeof(o->key), "%s", dot + 1);
	snprintf(o->value, sizeof(o->value), "%s", value);
	c->noptions++;
}

/* Cut blanks from both ends of s in place; returns the new start. */
static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	for (e = s + strlen(s); e > s && isspace((unsigned char)e[-1]);)
		*--e = '\0';
	return s;
}

/* The first byte of s that is a control character, or NULL. */
static const char *control_byte(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return s;
	return NULL;
}

/*
 * One item, blanks already cut from its ends.  Blanks around the key and
 * the value are cut too ("align : 64" is "align:64"): one rule for every
 * place a blank can stand, so that where a user put a space never decides
 * whether an item is accepted.  Blanks inside a value are kept.
 */
static void parse_item(struct alloy__conf *c, char *item)
{
	char *colon = strchr(item, ':');
	const char *ctl;
	char *key, *value;
	char shown[4200];

	if (!colon || colon == item) {
		alloy__conf_add_error(
			c,
			"\"%s\": malformed item (expected key:value); ignored",
			item);
		return;
	}
	*colon = '\0';
	key = trim(item); /* not empty: item starts with no blank */
	value = trim(colon + 1);
	ctl = control_byte(key) ? control_byte(key) : control_byte(value);
	if (ctl) {
		alloy__conf_add_error(
			c, "\"%s:%s\": control byte 0x%02x; item ignored", key,
			value, (unsigned char)*ctl);
		return;
	}
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
	char buf[ALLOY_CONF_MAX_LENGTH + 1];
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
		item = trim(item);
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

/* A macro's value as a string literal: the inner one expands it first. */
#define STRINGIFY(x) #x
#define XSTR(x)	     STRINGIFY(x)

const char *alloy_conf_error(int i)
{
	alloy__ensure_init();
	if (i < 0 || i >= alloy__conf.nerrors)
		return NULL;
	if (i >= ALLOY_CONF_MAX_ERRORS)
		return "(not kept: only the first " XSTR(
			ALLOY_CONF_MAX_ERRORS) " problems are)";
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
