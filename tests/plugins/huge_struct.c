// SPDX-License-Identifier: MIT
/*
 * tests/plugins/huge_struct.c - a descriptor whose struct_size is absurd
 * (0xffffffff, as an uninitialised or corrupt field reads).
 */
#include "common.h"

static const struct alloy_allocator_ops ops = TP_OPS("huge_struct_alloc");
static const struct alloy_plugin_allocator list[] = { { &ops, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	desc.struct_size = 0xffffffffu;
	return &desc;
}
