// SPDX-License-Identifier: MIT
/*
 * tests/plugins/self_register.c - a plugin whose init registers an
 * allocator itself instead of listing it in the descriptor (and fails
 * the load with whatever that registration returned).
 */
#include <alloy/registry.h>

#include "common.h"

static const struct alloy_allocator_ops extra = TP_OPS("self_register_extra");

static int register_from_init(void)
{
	return alloy_register_allocator(&extra, NULL, "init", NULL);
}

static const struct alloy_allocator_ops one = TP_OPS("self_register_one");
static const struct alloy_plugin_allocator list[] = { { &one, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	desc.init = register_from_init;
	return &desc;
}
