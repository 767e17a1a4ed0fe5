// SPDX-License-Identifier: MIT
/*
 * core/init.c - first-use initialisation.
 *
 * The first call into the library, from any thread, reads ALLOY_CONF and
 * ALLOY_PLUGINS, registers the built-in allocators and the CPU context and
 * installs the configured defaults.  Other threads wait for it; calls made
 * by the initialising thread itself (registering the built-ins goes
 * through the public API) see the library as ready.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "conf.h"

atomic_int alloy__initialised;
static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static __thread bool initialising;

static void report(const char *line)
{
	fprintf(stderr, "alloy: ALLOY_CONF: %s\n", line);
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

/* Options for allocators that never registered would be silently lost. */
static void check_option(const char *allocator, const char *key,
			 const char *value, void *arg)
{
	(void)arg;
	if (alloy_request_allocator(allocator))
		return;
	alloy__conf_report("%s.%s:%s: no allocator named \"%s\"; ignored",
			   allocator, key, value, allocator);
}

static void init_once_fn(void)
{
	int rc;

	initialising = true;
	alloy__conf_parse(getenv("ALLOY_CONF"), &alloy__conf);
	for (int i = 0; i < alloy__conf.nerrors; i++)
		report(alloy__conf.errors[i]);

	rc = alloy__registry_init();
	if (!rc)
		rc = alloy__register_builtin_allocators();
	if (rc)
		fprintf(stderr, "alloy: initialisation: %s\n",
			alloy_last_error());
	alloy__register_cpu_context();
	/* Before the defaults, so that cpu:<a plugin's allocator> works. */
	alloy__plugins_load_list(getenv("ALLOY_PLUGINS"));

	apply_default(ALLOY_DEVICE_CPU, "default");
	/* The first keys of the table are the device types, in order. */
	for (int t = ALLOY_DEVICE_CPU + 1; t < ALLOY_DEVICE_TYPE_COUNT; t++)
		if (alloy__conf.from_env[t])
			apply_default(t, NULL);
	alloy_conf_foreach_option(check_option, NULL);
	alloy__reporter_start();

	initialising = false;
	atomic_store_explicit(&alloy__initialised, 1, memory_order_release);
}

void alloy__init_slow(void)
{
	if (initialising)
		return;
	pthread_once(&init_once, init_once_fn);
}

int alloy_init(void)
{
	alloy__ensure_init();
	return alloy__conf.nerrors;
}
