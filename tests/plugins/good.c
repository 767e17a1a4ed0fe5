// SPDX-License-Identifier: MIT
/* tests/plugins/good.c - a correct plugin with two allocators. */
#include "common.h"

static int inits, finis;

static int good_init(void)
{
	inits++;
	return 0;
}

static void good_fini(void)
{
	finis++;
}

/* How often init and fini ran, for the tests (they dlsym it). */
EXPORT int alloy_module_test_counts(int which);
int alloy_module_test_counts(int which)
{
	return which ? finis : inits;
}

static const struct alloy_allocator_ops one = TP_OPS("plug_one");
static const struct alloy_allocator_ops two = TP_OPS("plug_two");
static const struct alloy_plugin_allocator list[] = { { &one, NULL },
						      { &two, NULL } };
static struct alloy_plugin_descriptor desc = TP_DESCRIPTOR(list);

EXPORT const struct alloy_plugin_descriptor *alloy_module_entry(void)
{
	desc.init = good_init;
	desc.fini = good_fini;
	return &desc;
}
