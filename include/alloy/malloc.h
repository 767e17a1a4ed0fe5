/* SPDX-License-Identifier: MIT */
/*
 * alloy/malloc.h - the plain-pointer API under the header name programs
 * built against liballoy.so.1 may still include; its home is alloy/plain.h.
 * New code includes alloy/plain.h (or alloy/alloy.h).
 */
#ifndef ALLOY_MALLOC_H
#define ALLOY_MALLOC_H

#include <alloy/plain.h>

#endif /* ALLOY_MALLOC_H */
