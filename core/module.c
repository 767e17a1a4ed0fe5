// SPDX-License-Identifier: MIT
/*
 * core/module.c - loading allocator modules by name.
 */
#include "internal.h"

int alloy__module_request(const char *name)
{
	return alloy__error(-ENOENT, "alloy_request_allocator",
			    "no allocator or module named \"%s\"", name);
}
