// SPDX-License-Identifier: MIT
/*
 * tests/plugins/dup_name.c - its second allocator takes the name of the
 * built-in "default"; the first must not stay registered.
 */
#include "common.h"

static const struct alloy_allocator_ops first = TP_OPS("dup_first");
static const struct alloy_allocator_ops clash = TP_OPS("default");
static const struct alloy_plugin_allocator list[] = { { &first, NULL },
						      { &clash, NULL } };
static const struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	return &desc;
}
