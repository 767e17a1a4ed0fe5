// SPDX-License-Identifier: MIT
/*
 * fuzz/fuzz_plugin_so.c - the plugin that fuzz/fuzz_plugin.c loads.
 *
 * Its descriptor is whatever the fuzzer last wrote with
 * alloy_module_fuzz_set(): the harness keeps this object open itself, so
 * the tables below survive each load and unload by alloy.  Input layout,
 * one byte each unless said: descriptor ABI major switch, struct_size
 * switch, init (0 none, 1 ok, 2 fails), entry returns NULL, allocator
 * count (0..17), context count (0..2, all invalid), then per allocator:
 * ABI switch, struct_size switch, device type, flags (no alloc / no
 * free / init fails), name length, name bytes.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <alloy/plugin.h>

#define EXPORT	   __attribute__((visibility("default")))
#define MAX_ALLOCS 17

static struct alloy_plugin_descriptor desc;
static struct alloy_plugin_allocator allocs[MAX_ALLOCS];
static struct alloy_allocator_ops ops[MAX_ALLOCS];
static struct alloy_plugin_context contexts[2];
static struct alloy_context_ops bad_context;
static char names[MAX_ALLOCS][64];
static bool entry_null;
static char block[64];

static void *op_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	(void)ctx;
	(void)align;
	(void)flags;
	return size <= sizeof(block) ? block : NULL;
}

static void op_free(void *ctx, void *ptr, size_t size, size_t align)
{
	(void)ctx;
	(void)ptr;
	(void)size;
	(void)align;
}

static int op_init_fails(void *ctx)
{
	(void)ctx;
	return -EIO;
}

static int plugin_init_ok(void)
{
	return 0;
}

static int plugin_init_fails(void)
{
	return alloy_plugin_error(-ENODEV, "fuzz plugin refuses");
}

static uint8_t take(const uint8_t **p, size_t *n)
{
	uint8_t v = 0;

	if (*n) {
		v = **p;
		(*p)++;
		(*n)--;
	}
	return v;
}

EXPORT void alloy_module_fuzz_set(const uint8_t *p, size_t n);
void alloy_module_fuzz_set(const uint8_t *p, size_t n)
{
	uint8_t init;

	memset(&desc, 0, sizeof(desc));
	memset(ops, 0, sizeof(ops));
	memset(names, 0, sizeof(names));
	desc.abi_major = take(&p, &n) < 240 ? ALLOY_ABI_MAJOR : 7;
	desc.struct_size = take(&p, &n) < 240 ? sizeof(desc) : 8;
	desc.name = "fuzz";
	init = take(&p, &n) % 3;
	desc.init = init == 1	? plugin_init_ok
		    : init == 2 ? plugin_init_fails
				: NULL;
	entry_null = take(&p, &n) >= 250;
	desc.nallocators = take(&p, &n) % (MAX_ALLOCS + 1);
	desc.allocators = desc.nallocators || (n & 1) ? allocs : NULL;
	desc.ncontexts = take(&p, &n) % 3;
	contexts[0].ops = &bad_context;
	desc.contexts = desc.ncontexts && !(n & 2) ? contexts : NULL;
	for (size_t i = 0; i < desc.nallocators; i++) {
		uint8_t flags, len;

		ops[i].abi_major = take(&p, &n) < 240 ? ALLOY_ABI_MAJOR : 9;
		ops[i].struct_size = take(&p, &n) < 240 ? sizeof(ops[i]) : 41;
		ops[i].device_type = take(&p, &n) % 4;
		flags = take(&p, &n);
		ops[i].alloc = flags & 1 ? NULL : op_alloc;
		ops[i].free = flags & 2 ? NULL : op_free;
		ops[i].init = flags & 4 ? op_init_fails : NULL;
		ops[i].name = flags & 8 ? NULL : names[i];
		len = take(&p, &n) % 56;
		for (uint8_t j = 0; j < len; j++)
			names[i][j] = (char)take(&p, &n);
		allocs[i].ops = flags & 16 ? NULL : &ops[i];
		allocs[i].ctx = NULL;
	}
}

const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	return entry_null ? NULL : &desc;
}
