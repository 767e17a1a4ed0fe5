/* SPDX-License-Identifier: MIT */
/*
 * kernel/plugins.h - plugins by path (kernel/plugin.c) and modules by name
 * (kernel/module.c), as the rest of core and the composition root use
 * them.  Only core and root/ include it.
 */
#ifndef ALLOY_KERNEL_PLUGINS_H
#define ALLOY_KERNEL_PLUGINS_H

#include "kernel/base.h"

/* ---- plugins (kernel/plugin.c) -------------------------------------- */

/* Whether a plugin was loaded from exactly this path. */
ALLOY_HIDDEN bool alloy__plugin_loaded(const char *path);

/* Load each path of a colon-separated list; one stderr line per failure. */
ALLOY_HIDDEN void alloy__plugins_load_list(const char *list);

/* The path of the plugin whose init or fini this thread runs, or NULL. */
ALLOY_HIDDEN const char *alloy__plugin_hook_running(void);

/*
 * -EPERM, reported for func, while a plugin's init or fini runs on this
 * thread: what a plugin registers (what: "allocators", "contexts") is
 * listed in its descriptor.  0 elsewhere.
 */
static inline int alloy__refuse_in_plugin_hook(const char *func,
					       const char *what)
{
	const char *path = alloy__plugin_hook_running();

	if (likely(!path))
		return 0;
	return alloy__error(
		-EPERM, func,
		"%s: a plugin's init or fini may not register %s; list them in its descriptor",
		path, what);
}

/* ---- modules (kernel/module.c) -------------------------------------- */

/*
 * Load the module providing allocator `name` from the module directory.
 * 0 when it registered an allocator of that name, else a negative code
 * with the message set.
 */
ALLOY_HIDDEN int alloy__module_request(const char *name);

/*
 * Whether a module other than the file at path provides allocator name
 * (the module a request for name would load; its path into owner).  A
 * plugin may not take a name that belongs to a module (docs/PLUGINS.md).
 */
ALLOY_HIDDEN bool alloy__module_claims(const char *name, const char *path,
				       char *owner, size_t len);

/* Whether the file at path is the module a request for name loads. */
ALLOY_HIDDEN bool alloy__module_provides(const char *name, const char *path);

/*
 * The object at path was just loaded: make its allocators the defaults
 * that were configured for them and are still unset, if it is the module
 * their names autoload.
 */
ALLOY_HIDDEN void alloy__module_apply_defaults(const char *path);

#endif /* ALLOY_KERNEL_PLUGINS_H */
