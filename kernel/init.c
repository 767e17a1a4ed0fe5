// SPDX-License-Identifier: MIT
/*
 * kernel/init.c - first-use initialisation of core, and the configuration
 * steps the composition root runs.
 *
 * Core knows no allocator, context or reporter.  The first call into the
 * library, from any thread, parses ALLOY_CONF and sets up the registry,
 * then runs the composer that the layer above attached (root/init.c:
 * register the built-ins, load plugins, install defaults, start the
 * reporter).  Other threads wait for it; calls made by the initialising
 * thread itself (registering the built-ins goes through the public API)
 * see the library as ready.
 *
 * Initialisation stays lazy, on first use, so that a program may set
 * ALLOY_CONF in main() before it allocates; alloy_init() forces it early
 * (the LD_PRELOAD front does, from its constructor).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "compose.h"
#include "fork.h"
#include "registry.h"
#include "conf.h"
#include "secure.h"

atomic_int alloy__initialised;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread bool initialising;
static void (*_Atomic composer)(void);

void alloy__set_composer(void (*fn)(void))
{
	atomic_store_explicit(&composer, fn, memory_order_release);
}

static void init_once_fn(void)
{
	void (*compose)(void) =
		atomic_load_explicit(&composer, memory_order_acquire);

	initialising = true;
	alloy__fork_setup();
	/*
	 * Read even in secure-execution mode, where jemalloc ignores its
	 * MALLOC_CONF whole: here an allocator name can only load an
	 * installed module, and the parser refuses the items that would
	 * write files, so the rest (alignment, fills, policies) may apply.
	 */
	alloy__conf_parse(getenv("ALLOY_CONF"), &alloy__conf);
	if (alloy__registry_init())
		fprintf(stderr, "alloy: initialisation: %s\n",
			alloy_last_error());
	if (compose)
		compose();
	alloy__secure_report();
	initialising = false;
	atomic_store_explicit(&alloy__initialised, 1, memory_order_release);
}

void alloy__init_slow(void)
{
	if (initialising)
		return;
	pthread_once(&init_once, init_once_fn);
}

void alloy__conf_print_errors(void)
{
	int n = alloy__conf.nerrors;

	for (int i = 0; i < n && i < ALLOY_CONF_MAX_ERRORS; i++)
		fprintf(stderr, "alloy: ALLOY_CONF: %s\n",
			alloy__conf.errors[i]);
	if (n > ALLOY_CONF_MAX_ERRORS)
		fprintf(stderr,
			"alloy: ALLOY_CONF: %d more problems, not shown (the first %d are above)\n",
			n - ALLOY_CONF_MAX_ERRORS, ALLOY_CONF_MAX_ERRORS);
}

/* Install the configured default for a device type, or say why not. */
static void apply_default(int type, const char *fallback)
{
	char *want = alloy__conf.alloc_name[type];
	struct alloy_allocator *a;

	a = alloy_request_allocator(want);
	if (a && alloy_set_default(type, a) == 0)
		return;
	alloy__conf_report("%s:%s: %s; using %s%s%s",
			   alloy_device_type_name(type), want,
			   alloy_last_error(), fallback ? "\"" : "",
			   fallback ? fallback : "none", fallback ? "\"" : "");
	if (!fallback) {
		want[0] = '\0';
		return;
	}
	snprintf(want, ALLOY_NAME_MAX + 1, "%s", fallback);
	alloy_set_default(type, alloy_find_allocator(fallback));
}

void alloy__conf_apply_defaults(const char *cpu_fallback)
{
	apply_default(ALLOY_DEVICE_CPU, cpu_fallback);
	/* The first keys of the table are the device types, in order. */
	for (int t = ALLOY_DEVICE_CPU + 1; t < ALLOY_DEVICE_TYPE_COUNT; t++)
		if (alloy__conf.from_env[t])
			apply_default(t, NULL);
}

/*
 * An option for an allocator that is not there yet is kept: it is handed
 * to the allocator if one of that name registers later (a plugin loaded
 * by the program, a module requested on first use of its device), and a
 * failure then is reported then.  Not an error now, but not silent
 * either: a misspelt name would otherwise go unnoticed.
 */
static void check_option(const char *allocator, const char *key,
			 const char *value, void *arg)
{
	(void)arg;
	if (alloy_request_allocator(allocator))
		return;
	alloy__conf_notice(
		"%s.%s:%s: no allocator \"%s\" is registered yet (%s); the option is kept and applied if one registers later",
		allocator, key, value, allocator, alloy_last_error());
}

void alloy__conf_check_options(void)
{
	alloy_conf_foreach_option(check_option, NULL);
}
