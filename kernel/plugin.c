// SPDX-License-Identifier: MIT
/*
 * kernel/plugin.c - loading and unloading plugins (shared objects that
 * provide allocators and device contexts through the ABI of plugin.h).
 *
 * A load is all or nothing: every check that can be made before the
 * plugin runs any code of its own (file, ELF, entry symbol, ABI, sizes,
 * required ops, names) is made first; then its init runs, then its
 * allocators and contexts are registered.  If any step fails, whatever it
 * had registered is unregistered again and the object is dlclose'd - which
 * is safe because nothing can have been allocated from an allocator that
 * was refused.  The one exception is an allocator that another thread
 * managed to allocate from in between: its module is then kept mapped,
 * since unmapping code that live blocks' deleters will call would crash.
 *
 * Loads and unloads are serialised by plugin_lock, taken before the
 * registry's own lock (never the other way round).
 */
#include <dlfcn.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base.h"
#include "fork.h"
#include "plugins.h"
#include "registry.h"
#include "conf.h"
#include "secure.h"

#define MAX_PLUGINS	      32
#define MAX_PLUGIN_ALLOCATORS 16

struct plugin {
	bool used;
	char path[256]; /* as given: the origin of what it registered */
	void *handle;
	struct alloy_plugin_descriptor desc; /* zero-extended copy */
	/* What it registered, to undo on failure or unload. */
	char names[MAX_PLUGIN_ALLOCATORS][ALLOY_NAME_MAX + 1];
	size_t nnames;
	int ctx_types[ALLOY_DEVICE_TYPE_COUNT];
	size_t nctx;
};

static pthread_mutex_t plugin_lock = PTHREAD_MUTEX_INITIALIZER;
static struct plugin plugins[MAX_PLUGINS];

#define LOAD   "alloy_plugin_load"
#define UNLOAD "alloy_plugin_unload"

/* ALLOY_ENFORCE, naming the public function fn rather than a helper. */
#define ENFORCE_IN(fn, cond, err, ...)                               \
	do {                                                         \
		if (unlikely(!(cond)))                               \
			return alloy__error((err), fn, __VA_ARGS__); \
	} while (0)
#define LOAD_ENFORCE(cond, err, ...) ENFORCE_IN(LOAD, cond, err, __VA_ARGS__)

int alloy_plugin_error(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	alloy__verror(err, "plugin", fmt, ap);
	va_end(ap);
	return err;
}

static struct plugin *find_path_locked(const char *path)
{
	for (int i = 0; i < MAX_PLUGINS; i++)
		if (plugins[i].used && strcmp(plugins[i].path, path) == 0)
			return &plugins[i];
	return NULL;
}

void alloy__plugin_fork_lock(void)
{
	pthread_mutex_lock(&plugin_lock);
}

void alloy__plugin_fork_unlock(void)
{
	pthread_mutex_unlock(&plugin_lock);
}

bool alloy__plugin_loaded(const char *path)
{
	bool found;

	pthread_mutex_lock(&plugin_lock);
	found = find_path_locked(path) != NULL;
	pthread_mutex_unlock(&plugin_lock);
	return found;
}

/*
 * Why anyone but its owner could replace the code at path, or NULL: the
 * file is world-writable, or its directory is and lacks the sticky bit
 * (then anyone may rename another file over it).  Group-writable is left
 * alone: a group is a choice its owner made.
 */
static const char *replaceable_by_anyone(const char *path,
					 const struct stat *st)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	struct stat dst;

	if (st->st_mode & S_IWOTH)
		return "the file is world-writable";
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s",
			 slash == path ? 1 : (int)(slash - path), path);
	if (stat(dir, &dst) == 0 && (dst.st_mode & S_IWOTH) &&
	    !(dst.st_mode & S_ISVTX))
		return "its directory is world-writable without the sticky bit";
	return NULL;
}

/*
 * The file exists and is a regular file; otherwise say which it is not.
 * One anyone could replace is refused in secure-execution mode and loaded
 * with a warning otherwise.
 */
static int check_file(const char *path)
{
	char shown[4 * PATH_MAX];
	const char *why;
	struct stat st;

	if (stat(path, &st) != 0)
		return alloy__error(-ENOENT, LOAD, "%s: no such file (%s)",
				    path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return alloy__error(
			-ENOEXEC, LOAD,
			"%s: not a regular file, so not a shared object", path);
	why = replaceable_by_anyone(path, &st);
	if (!why)
		return 0;
	LOAD_ENFORCE(
		!alloy__secure_mode(), -EPERM,
		"%s: %s, so anyone could choose the code it runs; refused in secure-execution mode (setuid, setgid or capabilities)",
		path, why);
	alloy__escape(path, shown, sizeof(shown));
	fprintf(stderr,
		"alloy: warning: %s: %s, so anyone could choose the code it runs; loading it anyway\n",
		shown, why);
	return 0;
}

static bool is_elf(const char *path)
{
	unsigned char magic[4] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, magic, sizeof(magic));
	close(fd);
	return n == 4 && memcmp(magic,
				"\x7f"
				"ELF",
				4) == 0;
}

/* dlopen failed: tell a non-ELF file, a static-TLS library and the rest apart.
 */
static int explain_dlopen(const char *path, const char *why)
{
	if (!why)
		why = "unknown reason";
	if (!is_elf(path))
		return alloy__error(
			-ENOEXEC, LOAD,
			"%s: not a shared object (no ELF header): %s", path,
			why);
	if (strstr(why, "static TLS")) {
		/* dlerror says "<library path>: cannot allocate memory in ..."
		 */
		const char *end = strstr(why, ": ");
		const char *lib = why;

		for (const char *c = why; end && c < end; c++)
			if (*c == '/')
				lib = c + 1;
		return alloy__error(
			-ENOEXEC, LOAD,
			"%s: %s; that library must be loaded at process start: link the program with -Wl,--no-as-needed,-lc,-l:%.*s,--as-needed (libc first, so it does not become the process's malloc) or run it with GLIBC_TUNABLES=glibc.rtld.optional_static_tls=16384 (docs/PLUGINS.md)",
			path, why, end ? (int)(end - lib) : 0, lib);
	}
	return alloy__error(-ENOEXEC, LOAD,
			    "%s: the dynamic loader refused it: %s", path, why);
}

/* Checks of the descriptor that need no code of the plugin to run. */
static int check_descriptor(const char *path,
			    const struct alloy_plugin_descriptor *d,
			    struct alloy_plugin_descriptor *copy)
{
	LOAD_ENFORCE(d, -EPROTO, "%s: %s() returned NULL", path,
		     ALLOY_PLUGIN_ENTRY);
	LOAD_ENFORCE(
		d->abi_major == ALLOY_ABI_MAJOR, -EPROTO,
		"%s: built for plugin ABI %u.%u, this alloy speaks %u.%u (major versions must match; rebuild the plugin)",
		path, d->abi_major, d->abi_minor, ALLOY_ABI_MAJOR,
		ALLOY_ABI_MINOR);
	LOAD_ENFORCE(
		d->struct_size >= ALLOY_PLUGIN_DESCRIPTOR_SIZE_1_0, -EPROTO,
		"%s: descriptor struct_size %u is smaller than the %zu bytes of ABI %u.0",
		path, d->struct_size, ALLOY_PLUGIN_DESCRIPTOR_SIZE_1_0,
		ALLOY_ABI_MAJOR);
	LOAD_ENFORCE(
		d->struct_size <= ALLOY_ABI_STRUCT_SIZE_MAX, -EPROTO,
		"%s: descriptor struct_size %u is absurd (more than %d bytes; this alloy's is %zu): a corrupt or uninitialised descriptor",
		path, d->struct_size, ALLOY_ABI_STRUCT_SIZE_MAX,
		sizeof(struct alloy_plugin_descriptor));
	/* Newer minor: a longer struct whose extra members we ignore. */
	memset(copy, 0, sizeof(*copy));
	memcpy(copy, d,
	       d->struct_size < sizeof(*copy) ? d->struct_size : sizeof(*copy));
	LOAD_ENFORCE(copy->nallocators + copy->ncontexts > 0, -EINVAL,
		     "%s: provides no allocator and no context", path);
	LOAD_ENFORCE(!copy->nallocators || copy->allocators, -EPROTO,
		     "%s: nallocators is %zu but allocators is NULL", path,
		     copy->nallocators);
	LOAD_ENFORCE(!copy->ncontexts || copy->contexts, -EPROTO,
		     "%s: ncontexts is %zu but contexts is NULL", path,
		     copy->ncontexts);
	LOAD_ENFORCE(copy->nallocators <= MAX_PLUGIN_ALLOCATORS, -EINVAL,
		     "%s: provides %zu allocators, at most %d are supported",
		     path, copy->nallocators, MAX_PLUGIN_ALLOCATORS);
	LOAD_ENFORCE(copy->ncontexts <= ALLOY_DEVICE_TYPE_COUNT, -EINVAL,
		     "%s: provides %zu contexts, there are %d device types",
		     path, copy->ncontexts, ALLOY_DEVICE_TYPE_COUNT);
	return 0;
}

/* Required ops present and names free, for every allocator, before init. */
static int check_allocators(const char *path,
			    const struct alloy_plugin_descriptor *d)
{
	for (size_t i = 0; i < d->nallocators; i++) {
		const struct alloy_allocator_ops *ops = d->allocators[i].ops;
		struct alloy_allocator *other;
		size_t copy_size;
		char why[PATH_MAX > 320 ? PATH_MAX : 320];

		if (alloy__check_ops(ops, &copy_size)) {
			/* Its message without the "alloy__check_ops: " prefix.
			 */
			const char *m = strstr(alloy_last_error(), ": ");

			snprintf(why, sizeof(why), "%s",
				 m ? m + 2 : alloy_last_error());
			return alloy__error(-EINVAL, LOAD,
					    "%s: allocator #%zu refused: %s",
					    path, i, why);
		}
		for (size_t j = 0; j < i; j++)
			LOAD_ENFORCE(strcmp(d->allocators[j].ops->name,
					    ops->name) != 0,
				     -EEXIST,
				     "%s: provides allocator \"%s\" twice",
				     path, ops->name);
		other = alloy_find_allocator(ops->name);
		LOAD_ENFORCE(
			!other, -EEXIST,
			"%s: allocator name \"%s\" is already registered (origin %s)",
			path, ops->name,
			other ? alloy_allocator_origin(other) : "");
		LOAD_ENFORCE(
			!alloy__module_claims(ops->name, path, why,
					      sizeof(why)),
			-EEXIST,
			"%s: allocator name \"%s\" belongs to the module %s; choose another name",
			path, ops->name, why);
	}
	return 0;
}

/*
 * Undo what p registered.  Returns true when nothing of it is left, so
 * that the object may be unmapped.
 */
static bool unregister_all(struct plugin *p)
{
	bool clean = true;

	while (p->nctx > 0)
		alloy_unregister_context(p->ctx_types[--p->nctx]);
	for (size_t i = p->nnames; i-- > 0;) {
		if (!p->names[i][0])
			continue;
		if (alloy_unregister_allocator(p->names[i]) == 0)
			p->names[i][0] = '\0';
		else
			clean = false;
	}
	if (clean)
		p->nnames = 0;
	return clean;
}

/*
 * The plugin whose init or fini this thread is running.  What those
 * registered themselves would escape the plugin's bookkeeping: a refused
 * load or an unload unregisters what the descriptor lists, then unmaps
 * the code, and an allocator registered from init stayed registered
 * with its ops in unmapped memory.  So the registry refuses it
 * (alloy__plugin_hook_running).
 */
static __thread const char *hook_of;

const char *alloy__plugin_hook_running(void)
{
	return hook_of;
}

static int run_init(struct plugin *p)
{
	int rc;

	hook_of = p->path;
	rc = p->desc.init();
	hook_of = NULL;
	return rc;
}

static void run_fini(struct plugin *p)
{
	hook_of = p->path;
	p->desc.fini();
	hook_of = NULL;
}

static int register_all(struct plugin *p)
{
	const struct alloy_plugin_descriptor *d = &p->desc;
	int rc;

	for (size_t i = 0; i < d->nallocators; i++) {
		const struct alloy_plugin_allocator *pa = &d->allocators[i];

		rc = alloy_register_allocator(pa->ops, pa->ctx, p->path, NULL);
		if (rc)
			return rc;
		snprintf(p->names[p->nnames++], ALLOY_NAME_MAX + 1, "%s",
			 pa->ops->name);
	}
	for (size_t i = 0; i < d->ncontexts; i++) {
		const struct alloy_plugin_context *pc = &d->contexts[i];

		LOAD_ENFORCE(pc->ops, -EINVAL, "%s: context #%zu has no ops",
			     p->path, i);
		rc = alloy_register_context(pc->ops, pc->ctx);
		if (rc)
			return rc;
		p->ctx_types[p->nctx++] = pc->ops->device_type;
	}
	return 0;
}

/* Prefix the current message with what failed, keeping the code. */
static int wrap_error(int rc, const char *path, const char *what)
{
	static const char from_plugin[] = "plugin: "; /* alloy_plugin_error's */
	const char *msg = alloy_last_error();
	char why[400];

	/* "plugin init failed: plugin: ..." says it twice. */
	if (strncmp(msg, from_plugin, sizeof(from_plugin) - 1) == 0)
		msg += sizeof(from_plugin) - 1;
	snprintf(why, sizeof(why), "%s", msg);
	return alloy__error(rc, LOAD, "%s: %s: %s", path, what,
			    why[0] ? why : alloy_strerror(rc));
}

static int load_locked(const char *path)
{
	char open_path[sizeof(plugins[0].path) + 2];
	struct plugin *p = NULL;
	alloy_plugin_entry_fn entry;
	int rc;

	LOAD_ENFORCE(strlen(path) < sizeof(p->path), -ENAMETOOLONG,
		     "path of %zu characters is longer than %zu", strlen(path),
		     sizeof(p->path) - 1);
	LOAD_ENFORCE(!find_path_locked(path), -EEXIST, "%s: already loaded",
		     path);
	for (int i = 0; i < MAX_PLUGINS && !p; i++)
		if (!plugins[i].used)
			p = &plugins[i];
	LOAD_ENFORCE(p, -ENOSPC, "%s: all %d plugin slots in use", path,
		     MAX_PLUGINS);
	rc = check_file(path);
	if (rc)
		return rc;

	memset(p, 0, sizeof(*p));
	snprintf(p->path, sizeof(p->path), "%s", path);
	/*
	 * dlopen searches the library path for a name without a slash; the
	 * file checked above is the one in the current directory.
	 */
	snprintf(open_path, sizeof(open_path), "%s%s",
		 strchr(path, '/') ? "" : "./", path);
	dlerror();
	p->handle = dlopen(open_path, RTLD_NOW | RTLD_LOCAL);
	if (!p->handle)
		return explain_dlopen(path, dlerror());
	for (int i = 0; i < MAX_PLUGINS; i++) {
		if (plugins[i].used && plugins[i].handle == p->handle) {
			rc = alloy__error(-EEXIST, LOAD,
					  "%s: already loaded as %s", path,
					  plugins[i].path);
			goto err_close;
		}
	}
	entry = (alloy_plugin_entry_fn)dlsym(p->handle, ALLOY_PLUGIN_ENTRY);
	if (!entry) {
		rc = alloy__error(
			-ENOSYS, LOAD,
			"%s: no entry symbol %s (is it an alloy plugin?)", path,
			ALLOY_PLUGIN_ENTRY);
		goto err_close;
	}
	rc = check_descriptor(path, entry(), &p->desc);
	if (rc)
		goto err_close;
	rc = check_allocators(path, &p->desc);
	if (rc)
		goto err_close;

	if (p->desc.init) {
		alloy_clear_error();
		rc = run_init(p);
		if (rc) {
			rc = wrap_error(rc > 0 ? -EIO : rc, path,
					"plugin init failed");
			goto err_close;
		}
	}
	rc = register_all(p);
	if (rc) {
		rc = wrap_error(rc, path, "registration failed");
		goto err_unregister;
	}
	p->used = true;
	alloy__module_apply_defaults(p->path);
	return 0;

err_unregister:
	if (!unregister_all(p)) {
		/* Someone allocated from it meanwhile: keep it mapped. */
		p->used = true;
		return rc;
	}
	if (p->desc.fini)
		run_fini(p);
err_close:
	dlclose(p->handle);
	p->handle = NULL;
	return rc;
}

int alloy_plugin_load(const char *path)
{
	int rc;

	alloy__ensure_init();
	ALLOY_ENFORCE(path && *path, -EINVAL, "path is NULL or empty");
	pthread_mutex_lock(&plugin_lock);
	rc = load_locked(path);
	pthread_mutex_unlock(&plugin_lock);
	return rc;
}

/* -EBUSY unless every allocator of p is unused and not a default. */
static int check_idle(const struct plugin *p)
{
	for (size_t i = 0; i < p->nnames; i++) {
		struct alloy_allocator *a;
		long long live;
		int type;

		if (!p->names[i][0])
			continue;
		a = alloy_find_allocator(p->names[i]);
		if (!a)
			continue;
		live = alloy_allocator_live_blocks(a);
		type = alloy_allocator_device_type(a);
		ENFORCE_IN(UNLOAD, live == 0, -EBUSY,
			   "%s: allocator \"%s\" still has %lld live blocks",
			   p->path, p->names[i], live);
		ENFORCE_IN(
			UNLOAD, alloy_get_default(type) != a, -EBUSY,
			"%s: allocator \"%s\" is the default for %s; set another default first",
			p->path, p->names[i], alloy_device_type_name(type));
	}
	return 0;
}

int alloy_plugin_unload(const char *path)
{
	struct plugin *p;
	int rc;

	alloy__ensure_init();
	ALLOY_ENFORCE(path, -EINVAL, "path is NULL");
	pthread_mutex_lock(&plugin_lock);
	p = find_path_locked(path);
	if (!p) {
		pthread_mutex_unlock(&plugin_lock);
		return alloy__error(-ENOENT, __func__,
				    "%s: no plugin loaded from there", path);
	}
	rc = check_idle(p);
	if (rc)
		goto out;
	if (!unregister_all(p)) {
		/* Lost a race with an allocation: what is left stays. */
		rc = alloy__error(
			-EBUSY, __func__,
			"%s: an allocator got live blocks while unloading; it stays registered",
			path);
		goto out;
	}
	if (p->desc.fini)
		run_fini(p);
	dlclose(p->handle);
	memset(p, 0, sizeof(*p));
out:
	pthread_mutex_unlock(&plugin_lock);
	return rc;
}

void alloy__plugins_load_list(const char *list)
{
	char buf[4096], shown[4 * 512];
	char *save = NULL;

	if (!list || !*list)
		return;
	if (strlen(list) >= sizeof(buf)) {
		fprintf(stderr,
			"alloy: ALLOY_PLUGINS: longer than %zu characters; ignored\n",
			sizeof(buf) - 1);
		return;
	}
	strcpy(buf, list);
	for (char *path = strtok_r(buf, ":", &save); path;
	     path = strtok_r(NULL, ":", &save)) {
		if (!alloy_plugin_load(path))
			continue;
		/* The path came from the environment: escape it. */
		alloy__escape(alloy_last_error(), shown, sizeof(shown));
		fprintf(stderr, "alloy: ALLOY_PLUGINS: %s\n", shown);
	}
}
