// SPDX-License-Identifier: MIT
/*
 * fuzz/fuzz_ops.c - libFuzzer target: the checks an allocator's ops pass
 * to be registered, the same ones the plugin loader applies to every
 * allocator a plugin's descriptor lists (alloy__check_ops).
 *
 * The input fills an ops struct: ABI numbers, struct_size, device type,
 * which optional and required ops are present, and the name's bytes.
 * Registration must succeed exactly when the ops are valid, otherwise
 * return a negative code with a message naming the allocator's problem;
 * a registered allocator must then allocate, free and unregister.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <alloy/alloy.h>

#define CHECK(cond)              \
	do {                     \
		if (!(cond))     \
			abort(); \
	} while (0)

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

static int op_init(void *ctx)
{
	return ctx ? -EIO : 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > ALLOY_NAME_MAX)
		return false;
	return strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			 "0123456789_") == n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t required =
		offsetof(struct alloy_allocator_ops, free) +
		sizeof(((struct alloy_allocator_ops *)0)->free);
	struct alloy_allocator_ops ops;
	struct alloy_allocator *a = NULL;
	struct alloy_data_ptr dp;
	char name[80];
	uint8_t h[8] = { 0 };
	bool valid, init_fails;
	int rc;

	memcpy(h, data, size < sizeof(h) ? size : sizeof(h));
	data += size < sizeof(h) ? size : sizeof(h);
	size -= size < sizeof(h) ? size : sizeof(h);
	memset(name, 0, sizeof(name));
	memcpy(name, data, size < sizeof(name) - 1 ? size : sizeof(name) - 1);

	memset(&ops, 0, sizeof(ops));
	/* Mostly the right ABI, sometimes not. */
	ops.abi_major = h[0] < 224 ? ALLOY_ABI_MAJOR : h[0];
	ops.abi_minor = h[1];
	ops.struct_size = h[2] < 128 ? (uint32_t)sizeof(ops)
				     : (uint32_t)(h[2] - 128) * 4 + (h[3] & 3);
	ops.device_type = (int8_t)h[4];
	ops.name = h[5] & 1 ? NULL : name;
	ops.alloc = h[5] & 2 ? NULL : op_alloc;
	ops.free = h[5] & 4 ? NULL : op_free;
	init_fails = h[5] & 8;
	if (h[5] & 16)
		ops.init = op_init;

	valid = ops.abi_major == ALLOY_ABI_MAJOR &&
		ops.struct_size >= required &&
		ops.struct_size % _Alignof(struct alloy_allocator_ops) == 0 &&
		ops.name && name_ok(name) && ops.device_type >= 0 &&
		ops.device_type < ALLOY_DEVICE_TYPE_COUNT && ops.alloc &&
		ops.free;
	/* A name already taken (a built-in) is refused too. */
	if (valid && alloy_find_allocator(name))
		valid = false;
	if (valid && ops.init && init_fails &&
	    offsetof(struct alloy_allocator_ops, init) < ops.struct_size)
		valid = false;

	alloy_clear_error();
	rc = alloy_register_allocator(&ops, init_fails ? (void *)1 : NULL,
				      "fuzz", &a);
	if (!valid) {
		CHECK(rc < 0 && alloy_last_error()[0]);
		return 0;
	}
	CHECK(rc == 0 && a);
	rc = alloy_alloc(a, 16, 0, 0, &dp);
	CHECK(rc == 0);
	alloy_data_ptr_free(&dp);
	CHECK(alloy_unregister_allocator(name) == 0);
	return 0;
}
