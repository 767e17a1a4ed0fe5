// SPDX-License-Identifier: MIT
/* tests/plugins/small_struct.c - a descriptor shorter than ABI 1.0's. */
#include <stddef.h>
#include "common.h"

static const struct alloy_allocator_ops ops = TP_OPS("small_struct_alloc");
static const struct alloy_plugin_allocator list[] = { { &ops, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	desc.struct_size = offsetof(struct alloy_plugin_descriptor, init);
	return &desc;
}
