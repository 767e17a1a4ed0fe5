// SPDX-License-Identifier: MIT
/*
 * fuzz/fuzz_conf.c - libFuzzer target: the ALLOY_CONF parser.
 *
 * Any text at all must parse without crashing, stay inside its buffers
 * (ASan) and leave a configuration that holds the parser's promises:
 * the count returned is the number of problem lines, every value is in
 * its range, and every allocator option names a valid allocator.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/conf.h"

#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)

static bool name_ok(const char *s)
{
	size_t n = strnlen(s, ALLOY_NAME_MAX + 1);

	if (n == 0 || n > ALLOY_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct alloy__conf c;
	char *text = malloc(size + 1);
	int n;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	n = alloy__conf_parse(text, &c);
	free(text);

	/* Every problem counted, the first ALLOY_CONF_MAX_ERRORS kept. */
	CHECK(n == c.nerrors && n >= 0);
	for (int i = 0; i < n && i < ALLOY_CONF_MAX_ERRORS; i++)
		CHECK(memchr(c.errors[i], '\0', sizeof(c.errors[i])));
	CHECK(c.align >= sizeof(void *) && c.align <= ((uint64_t)1 << 30));
	CHECK((c.align & (c.align - 1)) == 0);
	CHECK(!(c.zero_fill && c.junk_fill));
	for (int t = 0; t < ALLOY_DEVICE_TYPE_COUNT; t++)
		CHECK(c.alloc_name[t][0] == '\0' || name_ok(c.alloc_name[t]));
	CHECK(!strcmp(c.report_format, "text") ||
	      !strcmp(c.report_format, "json"));
	CHECK(c.noptions >= 0 && c.noptions <= ALLOY_CONF_MAX_OPTIONS);
	for (int i = 0; i < c.noptions; i++) {
		CHECK(name_ok(c.options[i].allocator));
		CHECK(c.options[i].key[0] != '\0');
		CHECK(memchr(c.options[i].value, '\0',
			     sizeof(c.options[i].value)));
	}
	return 0;
}
