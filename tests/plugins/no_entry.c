// SPDX-License-Identifier: MIT
/* tests/plugins/no_entry.c - a shared object without the entry symbol. */
#include "common.h"

EXPORT const struct alloy_plugin_descriptor *alloy_module_entree(void);
const struct alloy_plugin_descriptor *alloy_module_entree(void)
{
	return NULL;
}
