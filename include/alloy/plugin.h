/* SPDX-License-Identifier: MIT */
/*
 * alloy/plugin.h - allocator modules and third-party plugins.
 *
 * A plugin is a shared object exporting one function, named by
 * ALLOY_PLUGIN_ENTRY, that returns a descriptor: the ABI version it was
 * built for, the size of the descriptor struct, and the allocators (and
 * optionally device contexts) it provides.  alloy loads it with
 * dlopen(RTLD_NOW | RTLD_LOCAL), checks the descriptor, calls init, and
 * registers what it provides with the plugin's path as their origin.
 *
 * Compatibility promise (docs/PLUGINS.md): within one ABI major, new
 * members are only ever appended to the structs here; a plugin built for an
 * older minor keeps loading (members it lacks are treated as absent), and a
 * plugin built for a newer minor loads with the members this alloy does not
 * know ignored.  A different major is refused.
 */
#ifndef ALLOY_PLUGIN_H
#define ALLOY_PLUGIN_H

#include <stddef.h>
#include <stdint.h>
#include <alloy/allocator.h>
#include <alloy/context.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The symbol every plugin exports. */
#define ALLOY_PLUGIN_ENTRY "alloy_module_entry"

struct alloy_plugin_allocator {
	const struct alloy_allocator_ops *ops;
	void *ctx;
};

struct alloy_plugin_context {
	const struct alloy_context_ops *ops;
	void *ctx;
};

struct alloy_plugin_descriptor {
	uint16_t abi_major; /* ALLOY_ABI_MAJOR the plugin was built for */
	uint16_t abi_minor;
	uint32_t struct_size; /* sizeof(struct alloy_plugin_descriptor) there */
	const char *name;     /* short module name, e.g. "jemalloc" */
	const char *description; /* one line */

	/*
	 * Optional: called after the checks, before anything is registered.
	 * A non-zero return refuses the plugin; it should set a message with
	 * alloy_plugin_error() saying why (e.g. "no CUDA device").
	 */
	int (*init)(void);
	/* Optional: called if the plugin is unloaded. */
	void (*fini)(void);

	const struct alloy_plugin_allocator *allocators;
	size_t nallocators;
	const struct alloy_plugin_context *contexts;
	size_t ncontexts;
};

typedef const struct alloy_plugin_descriptor *(*alloy_plugin_entry_fn)(void);

/* The size of the descriptor as of ABI 1.0: the least a plugin may give. */
#define ALLOY_PLUGIN_DESCRIPTOR_SIZE_1_0 sizeof(struct alloy_plugin_descriptor)

/* What a plugin defines (and exports) under the name ALLOY_PLUGIN_ENTRY. */
const struct alloy_plugin_descriptor *alloy_module_entry(void);

/*
 * Load a plugin at run time.  Returns 0, or a negative code with a message
 * that tells the failures apart: file missing (-ENOENT), not a shared
 * object or refused by the dynamic loader, e.g. an undefined symbol or a
 * library needing static TLS (-ENOEXEC), no entry symbol (-ENOSYS), ABI
 * mismatch or struct_size too small or above ALLOY_ABI_STRUCT_SIZE_MAX
 * (-EPROTO), required op missing (-EINVAL), duplicate allocator name
 * (-EEXIST), init failed (its code), a file anyone could replace in a
 * setuid program (-EPERM; elsewhere a warning on stderr).  Nothing of a
 * refused plugin stays registered.  Loading a path already loaded is -EEXIST.
 */
int alloy_plugin_load(const char *path);

/*
 * Unload a plugin loaded from path: unregisters its allocators and
 * dlcloses it.  -EBUSY (and nothing changes) while any of its allocators
 * has live blocks or is a default.  An allocation racing with the unload
 * either is counted first (then -EBUSY: that allocator stays registered,
 * the object mapped) or fails with -ENODEV (then the unload succeeds);
 * docs/PLUGINS.md.
 */
int alloy_plugin_unload(const char *path);

/* For plugins: set the thread's error message (printf-style). */
int alloy_plugin_error(int err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_PLUGIN_H */
