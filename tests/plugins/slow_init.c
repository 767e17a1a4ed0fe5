// SPDX-License-Identifier: MIT
/*
 * tests/plugins/slow_init.c - a plugin whose init takes a moment and then
 * allocates through alloy (as PLUGINS.md allows), so that a test can fork
 * while another thread is inside it, holding the plugin lock.
 */
#include <unistd.h>
#include <alloy/plain.h>

#include "common.h"

static int slow_init(void)
{
	void *p;

	usleep(200 * 1000);
	p = alloy_malloc(100);
	alloy_free(p);
	return p ? 0 : -ENOMEM;
}

static const struct alloy_allocator_ops one = TP_OPS("slow_init_one");
static const struct alloy_plugin_allocator list[] = { { &one, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	desc.init = slow_init;
	return &desc;
}
