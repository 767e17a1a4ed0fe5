/* SPDX-License-Identifier: MIT */
/*
 * kernel/secure.h - what liballoy trusts in secure-execution mode.
 *
 * A setuid or setgid program (or one given file capabilities) runs with
 * an environment its caller chose.  glibc then ignores LD_PRELOAD and
 * LD_LIBRARY_PATH, and jemalloc ignores MALLOC_CONF; alloy likewise
 * ignores the variables that name code to load (ALLOY_PLUGINS,
 * ALLOY_MODULE_PATH) and the ALLOY_CONF items that name files to write
 * (report:, log:, trace: with a path).  Not installed.
 */
#ifndef ALLOY_KERNEL_SECURE_H
#define ALLOY_KERNEL_SECURE_H

#include <stdbool.h>

#include "kernel/base.h"
#include "conf.h" /* ALLOY_PRIVATE */

/*
 * Whether the process runs in secure-execution mode: the kernel's
 * AT_SECURE (real and effective ids differ, or capabilities were gained
 * at exec), the same test glibc makes.
 */
ALLOY_HIDDEN bool alloy__secure_mode(void);

/*
 * getenv(name), or NULL in secure-execution mode; a variable set but
 * ignored is noted for alloy__secure_report().
 */
ALLOY_HIDDEN const char *alloy__secure_getenv(const char *name);

/* Note something ignored because of secure-execution mode (printf-style). */
ALLOY_HIDDEN void alloy__secure_ignored(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/*
 * At initialisation: note the variables this mode ignores that are set,
 * then say once, on one stderr line and as one configuration error,
 * everything that was ignored.  Nothing when nothing was.
 */
ALLOY_HIDDEN void alloy__secure_report(void);

/*
 * For alloy's own tests: behave as in secure-execution mode from now on.
 * It can only make the library stricter, never turn the mode off.
 */
ALLOY_PRIVATE void alloy__secure_force_for_tests(void);

#endif /* ALLOY_KERNEL_SECURE_H */
