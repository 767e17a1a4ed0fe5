// SPDX-License-Identifier: MIT
/*
 * kernel/version.c - the version of the loaded library.
 */
#include "alloy/version.h"

const char *alloy_version(void)
{
	return ALLOY_VERSION_STRING;
}
