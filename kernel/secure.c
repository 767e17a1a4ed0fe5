// SPDX-License-Identifier: MIT
/*
 * kernel/secure.c - secure-execution mode: the one predicate, and the one
 * line that says what it made alloy ignore.
 *
 * The test is the kernel's AT_SECURE flag, the one glibc's own
 * secure_getenv() and its treatment of LD_PRELOAD rest on: set when the
 * program was exec'd setuid or setgid, or gained capabilities.  Reading
 * it from the auxiliary vector costs a short scan; it is read where the
 * environment is read (initialisation, module requests, plugin loads),
 * never on the allocation path.
 *
 * What was ignored is collected during initialisation and said once, on
 * one line, so that a user who runs a setuid program with ALLOY_PLUGINS
 * and report:PATH learns why neither happened, and an attacker learns
 * nothing they did not already know.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>

#include "base.h"
#include "secure.h"

/* The variables that name code to load: never read in this mode. */
static const char *const gated_vars[] = { "ALLOY_PLUGINS",
					  "ALLOY_MODULE_PATH" };

static atomic_bool forced;
static pthread_mutex_t ignored_lock = PTHREAD_MUTEX_INITIALIZER;
static char ignored[640];
static atomic_bool reported;

bool alloy__secure_mode(void)
{
	return getauxval(AT_SECURE) != 0 ||
	       atomic_load_explicit(&forced, memory_order_relaxed);
}

void alloy__secure_force_for_tests(void)
{
	atomic_store(&forced, true);
}

void alloy__secure_ignored(const char *fmt, ...)
{
	char what[256];
	size_t used;
	va_list ap;

	/*
	 * Once said, later reads (a module request after init) add nothing:
	 * no lock is taken then, so none can be held across a fork.
	 */
	if (atomic_load_explicit(&reported, memory_order_acquire))
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&ignored_lock);
	used = strlen(ignored);
	/* Each thing once, however often it was read. */
	if (!strstr(ignored, what))
		snprintf(ignored + used, sizeof(ignored) - used, "%s%s",
			 used ? ", " : "", what);
	pthread_mutex_unlock(&ignored_lock);
}

const char *alloy__secure_getenv(const char *name)
{
	const char *v = getenv(name);

	if (!v || !alloy__secure_mode())
		return v;
	if (*v)
		alloy__secure_ignored("%s", name);
	return NULL;
}

void alloy__secure_report(void)
{
	char line[sizeof(ignored) + 200], shown[4 * sizeof(line)];

	if (!alloy__secure_mode())
		return;
	for (size_t i = 0; i < ARRAY_SIZE(gated_vars); i++)
		alloy__secure_getenv(gated_vars[i]);
	pthread_mutex_lock(&ignored_lock);
	if (atomic_exchange(&reported, true) || !ignored[0]) {
		pthread_mutex_unlock(&ignored_lock);
		return;
	}
	snprintf(
		line, sizeof(line),
		"secure-execution mode (setuid, setgid or capabilities): ignored %s; plugins and modules come only from %s, output goes only to stderr or stdout",
		ignored, ALLOY_MODULE_DIR);
	pthread_mutex_unlock(&ignored_lock);
	alloy__conf_add_error(&alloy__conf, "%s", line);
	/* A path from ALLOY_CONF may hold any byte: never raw to a tty. */
	alloy__escape(line, shown, sizeof(shown));
	fprintf(stderr, "alloy: %s\n", shown);
}
