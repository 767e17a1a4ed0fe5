/* SPDX-License-Identifier: MIT */
/*
 * kernel/base.h - what every part of liballoy needs and users never see:
 * symbol visibility, branch hints, the error helpers and first-use
 * initialisation.  Every folder may include it.
 *
 * The rest of core's internals are one header per concern (the thread
 * record and counting, the allocator table, the reporter's hooks, plugins
 * and modules, owner labels, fork, the composer); scripts/check-layers.py
 * says which folder may include which.
 */
#ifndef ALLOY_KERNEL_BASE_H
#define ALLOY_KERNEL_BASE_H

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
/* Core's own public headers only: core sees nothing of the layers above. */
#include <alloy/version.h>
#include <alloy/error.h>
#include <alloy/device.h>
#include <alloy/allocator.h>
#include <alloy/registry.h>
#include <alloy/conf.h>
#include <alloy/context.h>
#include <alloy/plugin.h>
#include <alloy/owner.h>

#define ALLOY_HIDDEN  __attribute__((visibility("hidden")))
#define likely(x)     __builtin_expect(!!(x), 1)
#define unlikely(x)   __builtin_expect(!!(x), 0)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* ---- errors (kernel/error.c) ---------------------------------------- */

/*
 * Record "func: message" as this thread's last error and return err, so
 * that failures read `return alloy__error(-EINVAL, __func__, "...", ...)`.
 */
ALLOY_HIDDEN int alloy__error(int err, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
ALLOY_HIDDEN int alloy__verror(int err, const char *func, const char *fmt,
			       va_list ap);

/*
 * Bumped by every alloy__error on this thread (in the thread's record
 * when it has one, struct alloy__tls's error_mark, else here).  The
 * allocation path sets it to 0 before it calls an allocator: non-zero
 * after a failure means the allocator explained it (its message is then
 * kept).  alloy__error_mark_of() finds the right one.
 */
extern ALLOY_HIDDEN __thread unsigned alloy__error_mark
	__attribute__((tls_model("initial-exec")));
ALLOY_HIDDEN unsigned *alloy__error_mark_of(void);

/* Return err from the enclosing function unless cond holds. */
#define ALLOY_ENFORCE(cond, err, ...)                                      \
	do {                                                               \
		if (unlikely(!(cond)))                                     \
			return alloy__error((err), __func__, __VA_ARGS__); \
	} while (0)

/* ---- first use (kernel/init.c) ---------------------------------------- */

extern ALLOY_HIDDEN atomic_int alloy__initialised;
ALLOY_HIDDEN void alloy__init_slow(void);

/* Cheap check on every entry point; the first call does the work. */
static inline void alloy__ensure_init(void)
{
	if (unlikely(!atomic_load_explicit(&alloy__initialised,
					   memory_order_acquire)))
		alloy__init_slow();
}

#endif /* ALLOY_KERNEL_BASE_H */
