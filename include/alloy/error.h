/* SPDX-License-Identifier: MIT */
/*
 * alloy/error.h - how alloy reports failure.
 *
 * Every public function that can fail returns a negative errno-style code
 * (or NULL) and leaves a message in a thread-local buffer naming the
 * function, the condition that failed and the values involved, e.g.
 *
 *   alloy_registry_register: allocator name "default" already registered
 *
 * The message stays until the next failure on the same thread; success
 * does not clear it.  alloy never aborts or exits on bad input.
 */
#ifndef ALLOY_ERROR_H
#define ALLOY_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the last failure on this thread ("" if none yet). */
const char *alloy_last_error(void);

/*
 * The code that went with that message (a negative errno, e.g. -EOVERFLOW;
 * 0 if none yet): what a function returning NULL failed with.
 */
int alloy_last_error_code(void);

/* Forget the last message (and its code) on this thread. */
void alloy_clear_error(void);

/* A short name for a negative alloy return code, e.g. "EINVAL". */
const char *alloy_strerror(int err);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_ERROR_H */
