// SPDX-License-Identifier: MIT
/*
 * tests/plugins/planted.c - what an attacker plants for a setuid program:
 * its constructor runs the moment the object is dlopen'ed, before alloy
 * checks anything, and leaves a mark ($ALLOY_TEST_MARKER gets a line
 * naming the file).  tests/cli/test_setuid.sh checks that a setuid program
 * never loads it from the environment.  A valid plugin otherwise.
 */
#include <dlfcn.h>
#include <stdio.h>

#include "common.h"

__attribute__((constructor)) static void leave_a_mark(void)
{
	const char *marker = getenv("ALLOY_TEST_MARKER");
	Dl_info self;
	FILE *f;

	if (!marker || !dladdr((void *)leave_a_mark, &self))
		return;
	f = fopen(marker, "a");
	if (!f)
		return;
	fprintf(f, "loaded %s\n", self.dli_fname);
	fclose(f);
}

static const struct alloy_allocator_ops ops = TP_OPS("planted");
static const struct alloy_plugin_allocator list[] = { { &ops, NULL } };
static const struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	return &desc;
}
