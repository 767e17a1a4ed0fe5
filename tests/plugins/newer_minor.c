// SPDX-License-Identifier: MIT
/*
 * tests/plugins/newer_minor.c - built for a later minor: a longer
 * descriptor and ops struct, whose extra members must be ignored.
 */
#include "common.h"

struct future_ops {
	struct alloy_allocator_ops ops;
	void *added_later[4];
};

struct future_descriptor {
	struct alloy_plugin_descriptor desc;
	void *added_later[4];
};

static struct future_ops fops = { .ops = TP_OPS("newer_minor_alloc") };
static struct alloy_plugin_allocator list[] = { { &fops.ops, NULL } };
static struct future_descriptor fdesc = { .desc = TP_DESCRIPTOR(list) };

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	fops.ops.abi_minor = ALLOY_ABI_MINOR + 3;
	fops.ops.struct_size = sizeof(fops);
	fops.added_later[0] = (void *)&fops; /* garbage to an older host */
	fdesc.desc.abi_minor = ALLOY_ABI_MINOR + 3;
	fdesc.desc.struct_size = sizeof(fdesc);
	fdesc.added_later[0] = (void *)&fdesc;
	return &fdesc.desc;
}
