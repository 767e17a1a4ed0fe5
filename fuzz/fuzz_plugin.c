// SPDX-License-Identifier: MIT
/*
 * fuzz/fuzz_plugin.c - libFuzzer target: the plugin loader's checks of a
 * descriptor and of the allocators it lists (kernel/plugin.c).
 *
 * The plugin, fuzz/fuzz_plugin_so.c, returns a descriptor built from the
 * input.  A load must succeed exactly when the descriptor is valid,
 * otherwise fail with a negative code and a message and leave nothing
 * registered; a loaded plugin's allocators must work and it must unload.
 * FUZZ_PLUGIN_PATH names the plugin's shared object.
 *
 * The module search path is pinned to a directory that does not exist,
 * so no module claims a name (docs/PLUGINS.md, "Names and defaults") and
 * the verdict for an input does not depend on what is installed.  A
 * valid plugin that takes a name a device's configured default waits for
 * ("cuda_host") is loaded but never made that default, so it unloads.
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <alloy/alloy.h>

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "fuzz_plugin: %s failed: %s\n", #cond, \
				alloy_last_error());                           \
			abort();                                               \
		}                                                              \
	} while (0)

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	return n > 0 && n <= ALLOY_NAME_MAX &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_") == n;
}

static int count_one(struct alloy_allocator *a, void *arg)
{
	(void)a;
	++*(int *)arg;
	return 0;
}

/* What the loader must decide, from the same bytes the plugin read. */
static bool expect_load(const uint8_t *p, size_t n)
{
	const uint8_t *q = p;
	size_t m = n, nalloc, nctx;
	uint8_t b[6], init;
	char names[17][64];

#define TAKE() (m ? (m--, *q++) : 0)
	for (int i = 0; i < 6; i++)
		b[i] = TAKE();
	init = b[2] % 3;
	nalloc = b[4] % 18;
	nctx = b[5] % 3;
	if (b[3] >= 250 || b[0] >= 240 || b[1] >= 240)
		return false; /* NULL descriptor, ABI major, struct_size */
	if (nalloc + nctx == 0 || nalloc > 16 || nctx)
		return false; /* nothing; too many; contexts are all invalid */
	for (size_t i = 0; i < nalloc; i++) {
		uint8_t abi = TAKE(), size = TAKE(), dev = TAKE(), fl = TAKE();
		uint8_t len = TAKE() % 56;

		memset(names[i], 0, sizeof(names[i]));
		for (uint8_t j = 0; j < len; j++)
			names[i][j] = (char)TAKE();
		if (abi >= 240 || size >= 240 || (fl & (1 | 2 | 4 | 8 | 16)))
			return false;
		if (dev % 4 >= ALLOY_DEVICE_TYPE_COUNT || !name_ok(names[i]) ||
		    alloy_find_allocator(names[i]))
			return false;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(names[j], names[i]))
				return false;
	}
#undef TAKE
	return init != 2;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static void (*set)(const uint8_t *, size_t);
	const char *path = FUZZ_PLUGIN_PATH;
	int before = 0, after = 0, rc;
	bool valid;

	if (!set) {
		void *h;

		setenv("ALLOY_MODULE_PATH", "/nonexistent/alloy-fuzz-modules",
		       1);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

		CHECK(h);
		*(void **)&set = dlsym(h, "alloy_module_fuzz_set");
		CHECK(set);
	}
	set(data, size);
	valid = expect_load(data, size);
	alloy_foreach_allocator(count_one, &before);
	alloy_clear_error();
	rc = alloy_plugin_load(path);
	if (!valid) {
		CHECK(rc < 0 && alloy_last_error()[0]);
		alloy_foreach_allocator(count_one, &after);
		CHECK(after == before); /* nothing of it stays registered */
		return 0;
	}
	CHECK(rc == 0);
	CHECK(alloy_plugin_unload(path) == 0);
	alloy_foreach_allocator(count_one, &after);
	CHECK(after == before);
	return 0;
}
