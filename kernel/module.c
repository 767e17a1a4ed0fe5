// SPDX-License-Identifier: MIT
/*
 * kernel/module.c - loading allocator modules by name.
 *
 * A name that is not registered is looked up as a module, the way the
 * kernel's request_module() does: allocator "jemalloc" comes from
 * alloy_jemalloc.so, and "cuda_caching" from alloy_cuda_caching.so or,
 * failing that, alloy_cuda.so (one module may provide a family of
 * allocators).  The directories searched are, in order of precedence:
 *
 *   ALLOY_MODULE_PATH  colon-separated, when set (tests, relocated trees)
 *   the build tree     when liballoy itself was loaded from it (libtool
 *                      puts both liballoy and the modules in .libs/), so
 *                      that `make check` and ./alloy never pick up an
 *                      older installed copy
 *   ALLOY_MODULE_DIR   the installed $(pkglibdir)
 *
 * In secure-execution mode (a setuid program) only the last: the caller
 * must not choose the code such a program runs (kernel/secure.c).
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base.h"
#include "plugins.h"
#include "conf.h"
#include "secure.h"

#define BUILD_LIBS_DIR ALLOY_BUILD_DIR "/.libs"

/* Whether this very liballoy is the one in the build tree's .libs. */
static bool loaded_from_build_tree(void)
{
	char self[PATH_MAX], build[PATH_MAX];
	Dl_info info;
	char *slash;

	if (!dladdr((void *)alloy__module_request, &info) || !info.dli_fname)
		return false;
	if (!realpath(info.dli_fname, self) || !realpath(BUILD_LIBS_DIR, build))
		return false;
	slash = strrchr(self, '/');
	if (!slash)
		return false;
	*slash = '\0';
	return strcmp(self, build) == 0;
}

/* The search path, colon-separated, into buf. */
static const char *module_path(char *buf, size_t len)
{
	const char *env = alloy__secure_getenv("ALLOY_MODULE_PATH");

	if (env && *env)
		snprintf(buf, len, "%s", env);
	else if (!alloy__secure_mode() && loaded_from_build_tree())
		snprintf(buf, len, "%s", BUILD_LIBS_DIR);
	else
		snprintf(buf, len, "%s", ALLOY_MODULE_DIR);
	return buf;
}

/* The first existing dir/alloy_<stem>.so along path, into out. */
static bool find_module(const char *path, const char *stem, size_t stemlen,
			char *out, size_t len)
{
	const char *dir = path;

	while (*dir) {
		size_t dl = strcspn(dir, ":");

		if (dl > 0) {
			int n = snprintf(out, len, "%.*s/alloy_%.*s.so",
					 (int)dl, dir, (int)stemlen, stem);

			if (n > 0 && (size_t)n < len && access(out, F_OK) == 0)
				return true;
		}
		dir += dl + (dir[dl] == ':');
	}
	return false;
}

/*
 * The module a request for `name` loads: alloy_<name>.so, else
 * alloy_<prefix>.so for the part of the name before its first '_', the
 * first found along the search path.  The search path goes to path_out.
 */
static bool module_file(const char *name, char *file, size_t len,
			char *path_out, size_t path_len)
{
	size_t stems[2] = { strlen(name), strcspn(name, "_") };

	module_path(path_out, path_len);
	for (int i = 0; i < 2; i++) {
		if (i == 1 && stems[1] == stems[0])
			break;
		if (find_module(path_out, name, stems[i], file, len))
			return true;
	}
	return false;
}

static bool same_file(const char *a, const char *b)
{
	char ra[PATH_MAX], rb[PATH_MAX];

	return realpath(a, ra) && realpath(b, rb) && strcmp(ra, rb) == 0;
}

bool alloy__module_claims(const char *name, const char *path, char *owner,
			  size_t len)
{
	char search[PATH_MAX];

	return module_file(name, owner, len, search, sizeof(search)) &&
	       !same_file(owner, path);
}

bool alloy__module_provides(const char *name, const char *path)
{
	char file[PATH_MAX], search[PATH_MAX];

	return module_file(name, file, sizeof(file), search, sizeof(search)) &&
	       same_file(file, path);
}

/*
 * A device whose configured allocator comes from a module loaded after
 * init (the CUDA module, on first use of the device) gets its default when
 * that module registers it, unless someone set one meanwhile.  Only the
 * module the name autoloads qualifies: a plugin from any other file that
 * happens to use the name never becomes a default this way.
 */
void alloy__module_apply_defaults(const char *path)
{
	for (int t = ALLOY_DEVICE_CPU + 1; t < ALLOY_DEVICE_TYPE_COUNT; t++) {
		const char *want = alloy__conf.alloc_name[t];
		struct alloy_allocator *a;

		if (!want[0] || alloy_get_default(t) ||
		    !alloy__module_provides(want, path))
			continue;
		a = alloy_find_allocator(want);
		if (a && !strcmp(alloy_allocator_origin(a), path))
			alloy_set_default(t, a);
	}
	alloy_clear_error();
}

int alloy__module_request(const char *name)
{
	char path[PATH_MAX], file[PATH_MAX];
	size_t stems[2] = { strlen(name), strcspn(name, "_") };
	int rc;

	if (!module_file(name, file, sizeof(file), path, sizeof(path))) {
		if (stems[1] != stems[0])
			return alloy__error(
				-ENOENT, "alloy_request_allocator",
				"no allocator or module named \"%s\" (no alloy_%s.so or alloy_%.*s.so in %s)",
				name, name, (int)stems[1], name, path);
		return alloy__error(
			-ENOENT, "alloy_request_allocator",
			"no allocator or module named \"%s\" (no alloy_%s.so in %s)",
			name, name, path);
	}
	rc = alloy__plugin_loaded(file) ? -EEXIST : alloy_plugin_load(file);
	/* -EEXIST: loaded already (maybe by another thread just now). */
	if (rc && rc != -EEXIST)
		return rc;
	if (alloy_find_allocator(name))
		return 0;
	return alloy__error(-ENOENT, "alloy_request_allocator",
			    "module %s provides no allocator \"%s\"", file,
			    name);
}
