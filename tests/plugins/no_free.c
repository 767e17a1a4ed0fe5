// SPDX-License-Identifier: MIT
/* tests/plugins/no_free.c - its second allocator lacks the free op. */
#include "common.h"

static const struct alloy_allocator_ops ok = TP_OPS("no_free_ok");
static struct alloy_allocator_ops bad = TP_OPS("no_free_bad");
static const struct alloy_plugin_allocator list[] = { { &ok, NULL },
						      { &bad, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	bad.free = NULL;
	return &desc;
}
