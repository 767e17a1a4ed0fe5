// SPDX-License-Identifier: MIT
/* tests/plugins/init_fails.c - its init refuses, saying why. */
#include "common.h"

static int refuse(void)
{
	return alloy_plugin_error(-ENODEV,
				  "init_fails: no frobnicator present");
}

static const struct alloy_allocator_ops ops = TP_OPS("init_fails_alloc");
static const struct alloy_plugin_allocator list[] = { { &ops, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	desc.init = refuse;
	return &desc;
}
