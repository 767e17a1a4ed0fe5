// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_plugin.c - the plugin loader, with real shared objects built
 * by the test suite (tests/plugins/): one per failure class, each of which
 * must be refused with its own code and message and leave nothing behind,
 * and good ones that must load, serve, refuse to unload while used, and
 * unload.  Also loading by name from a module directory, ALLOY_PLUGINS at
 * init, and the out-of-tree example plugin (examples/plugin).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <alloy/plugin.h>

#include "kernel/sanitizer.h"
#include "kernel/secure.h"
#include "testutil.h"

#define PLUGIN_DIR     ALLOY_BUILD_DIR "/tests/plugins/.libs"
#define PLUGIN(name)   PLUGIN_DIR "/" name ".so"
#define EXAMPLE_PLUGIN ALLOY_BUILD_DIR "/examples/plugin/alloy_arena.so"

/* Loading path fails with err, a message containing what, and no trace. */
static void assert_refused(const char *path, int err, const char *what,
			   const char *name)
{
	int rc = alloy_plugin_load(path);

	ck_assert_msg(rc == err, "%s: got %d (%s), want %d", path, rc,
		      alloy_last_error(), err);
	ck_assert_msg(strstr(alloy_last_error(), what),
		      "%s: message \"%s\" lacks \"%s\"", path,
		      alloy_last_error(), what);
	ck_assert_msg(strstr(alloy_last_error(), path),
		      "message \"%s\" does not name the file",
		      alloy_last_error());
	if (name)
		ck_assert_ptr_null(alloy_find_allocator(name));
	/* Refused, not loaded: unload finds nothing. */
	ck_assert_int_eq(alloy_plugin_unload(path), -ENOENT);
}

START_TEST(missing_file)
{
	assert_refused("/nonexistent/alloy_nothing.so", -ENOENT, "no such file",
		       NULL);
}
END_TEST

START_TEST(not_a_shared_object)
{
	char path[] = "/tmp/alloy-test-notso-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "just text\n", 10), 10);
	close(fd);
	assert_refused(path, -ENOEXEC, "not a shared object", NULL);
	unlink(path);
	/* A directory is not one either. */
	assert_refused(PLUGIN_DIR, -ENOEXEC, "not a regular file", NULL);
}
END_TEST

START_TEST(no_entry_symbol)
{
	assert_refused(PLUGIN("no_entry"), -ENOSYS,
		       "no entry symbol " ALLOY_PLUGIN_ENTRY, NULL);
}
END_TEST

START_TEST(abi_major_mismatch)
{
	assert_refused(PLUGIN("abi_major"), -EPROTO, "built for plugin ABI 2.",
		       "abi_major_alloc");
}
END_TEST

START_TEST(struct_too_small)
{
	assert_refused(PLUGIN("small_struct"), -EPROTO, "is smaller than the",
		       "small_struct_alloc");
}
END_TEST

/* Issue 15: struct_size 0xffffffff was accepted without a word. */
START_TEST(struct_size_absurd)
{
	struct alloy_allocator_ops ops = test_alloc_ops("huge_ops");
	struct test_alloc ta = { .device_type = ALLOY_DEVICE_CPU };

	assert_refused(
		PLUGIN("huge_struct"), -EPROTO,
		"descriptor struct_size 4294967295 is absurd (more than 4096 bytes",
		"huge_struct_alloc");
	/* The same bound for an allocator's ops, however it registers. */
	ops.struct_size = 0xffffffffu;
	ck_assert_int_eq(alloy_register_allocator(&ops, &ta, "test", NULL),
			 -EINVAL);
	ck_assert_msg(strstr(alloy_last_error(),
			     "ops struct_size 4294967295 is absurd"),
		      "%s", alloy_last_error());
	ck_assert_ptr_null(alloy_find_allocator("huge_ops"));
	/* The bound itself is accepted: newer minors append members. */
	ops.struct_size = ALLOY_ABI_STRUCT_SIZE_MAX;
	ck_assert_ok(alloy_register_allocator(&ops, &ta, "test", NULL));
	ck_assert_ok(alloy_unregister_allocator("huge_ops"));
}
END_TEST

START_TEST(required_op_missing)
{
	assert_refused(PLUGIN("no_free"), -EINVAL, "required op free is NULL",
		       "no_free_bad");
	/* Its first, valid allocator was not registered either. */
	ck_assert_ptr_null(alloy_find_allocator("no_free_ok"));
}
END_TEST

START_TEST(duplicate_name)
{
	struct alloy_allocator *d = alloy_find_allocator("default");

	assert_refused(PLUGIN("dup_name"), -EEXIST,
		       "\"default\" is already registered (origin builtin)",
		       "dup_first");
	/* The built-in it clashed with is untouched. */
	ck_assert_ptr_eq(alloy_find_allocator("default"), d);
	ck_assert_str_eq(alloy_allocator_origin(d), "builtin");
}
END_TEST

START_TEST(init_fails)
{
	ck_assert_int_eq(alloy_plugin_load(PLUGIN("init_fails")), -ENODEV);
	ck_assert_msg(strstr(alloy_last_error(), "no frobnicator present"),
		      "the plugin's own reason is lost: %s",
		      alloy_last_error());
	/* Refused every time, the same way. */
	assert_refused(PLUGIN("init_fails"), -ENODEV, "plugin init failed",
		       "init_fails_alloc");
}
END_TEST

/*
 * An init that registers an allocator itself is refused: a refused load
 * or an unload unregisters only what the descriptor lists before it
 * unmaps the code, so such an allocator would stay with its ops gone.
 */
START_TEST(init_may_not_register)
{
	assert_refused(
		PLUGIN("self_register"), -EPERM,
		"may not register allocators; list them in its descriptor",
		"self_register_one");
	ck_assert_ptr_null(alloy_find_allocator("self_register_extra"));
}
END_TEST

static void *load_in_thread(void *path)
{
	return (void *)(intptr_t)alloy_plugin_load(path);
}

/*
 * fork() while another thread runs a plugin's init that allocates, with
 * the reporter on: the init holds the plugin lock and takes the
 * reporter's; fork's handlers must take them in that order too (they
 * took the reporter's first, and both threads hung).  The fork comes
 * during the init's wait; at worst (a slow start) it comes before the
 * init, and the test checks less, never fails wrongly.
 */
START_TEST(fork_while_a_plugin_init_allocates)
{
	pthread_t loader;
	void *rc;
	pid_t pid;
	int status;

	ck_assert_ok(alloy_reporter_enable());
	ck_assert_int_eq(pthread_create(&loader, NULL, load_in_thread,
					(void *)PLUGIN("slow_init")),
			 0);
	usleep(50 * 1000);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		void *p = alloy_malloc(10); /* the child's locks work */

		alloy_free(p);
		_exit(p ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pthread_join(loader, &rc);
	ck_assert_int_eq((intptr_t)rc, 0);
	ck_assert_ptr_nonnull(alloy_find_allocator("slow_init_one"));
}
END_TEST

static void *context_new_in_thread(void *arg)
{
	struct alloy_data_ptr dp;

	(void)arg;
	return (void *)(intptr_t)alloy_context_new(
		(struct alloy_device){ ALLOY_DEVICE_CUDA_HOST, 0 }, 64, &dp);
}

static void *unload_in_thread(void *path)
{
	return (void *)(intptr_t)alloy_plugin_unload(path);
}

/*
 * Unloading a plugin whose context op another thread is inside waits
 * for the op to return; it unmapped the code under it.
 */
START_TEST(unload_waits_for_context_ops)
{
	const char *path = PLUGIN("slow_context");
	pthread_t user, unloader;
	bool (*entered)(void);
	void (*release)(void);
	void *h, *rc;

	ck_assert_ok(alloy_plugin_load(path));
	h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	ck_assert_ptr_nonnull(h);
	*(void **)&entered = dlsym(h, "slow_context_entered");
	*(void **)&release = dlsym(h, "slow_context_release");
	ck_assert(entered && release);
	ck_assert_int_eq(
		pthread_create(&user, NULL, context_new_in_thread, NULL), 0);
	while (!entered())
		usleep(1000);
	ck_assert_int_eq(
		pthread_create(&unloader, NULL, unload_in_thread, (void *)path),
		0);
	/* The unload cannot finish while the op runs (can only pass here). */
	usleep(100 * 1000);
	ck_assert_int_eq(pthread_tryjoin_np(unloader, &rc), EBUSY);
	release();
	dlclose(h);
	pthread_join(user, &rc);
	ck_assert_int_eq((intptr_t)rc, -ENOMEM);
	pthread_join(unloader, &rc);
	ck_assert_int_eq((intptr_t)rc, 0);
	ck_assert(!alloy_has_context(ALLOY_DEVICE_CUDA_HOST));
}
END_TEST

START_TEST(newer_minor_loads)
{
	struct alloy_allocator *a;
	struct alloy_data_ptr dp;

	ck_assert_ok(alloy_plugin_load(PLUGIN("newer_minor")));
	a = alloy_find_allocator("newer_minor_alloc");
	ck_assert_ptr_nonnull(a);
	ck_assert_ok(alloy_alloc(a, 100, 64, 0, &dp));
	alloy_data_ptr_free(&dp);
	ck_assert_ok(alloy_plugin_unload(PLUGIN("newer_minor")));
}
END_TEST

START_TEST(good_plugin_lifecycle)
{
	const char *path = PLUGIN("good");
	struct alloy_allocator *one, *two;
	struct alloy_data_ptr dp;
	void *h;
	int (*counts)(int);

	ck_assert_ok(alloy_plugin_load(path));
	one = alloy_find_allocator("plug_one");
	two = alloy_find_allocator("plug_two");
	ck_assert_ptr_nonnull(one);
	ck_assert_ptr_nonnull(two);
	ck_assert_str_eq(alloy_allocator_origin(one), path);
	ck_assert_str_eq(alloy_allocator_origin(two), path);
	ck_assert_int_eq(alloy_plugin_load(path), -EEXIST);

	/* init ran exactly once, fini not yet. */
	h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	ck_assert_ptr_nonnull(h);
	counts = (int (*)(int))dlsym(h, "alloy_module_test_counts");
	ck_assert_ptr_nonnull(counts);
	ck_assert_int_eq(counts(0), 1);
	ck_assert_int_eq(counts(1), 0);
	dlclose(h);

	/* A live block pins it. */
	ck_assert_ok(alloy_alloc(two, 256, 64, ALLOY_ALLOC_ZERO, &dp));
	ck_assert_uint_eq((uintptr_t)dp.ptr % 64, 0);
	ck_assert_int_eq(((unsigned char *)dp.ptr)[255], 0);
	ck_assert_int_eq(alloy_plugin_unload(path), -EBUSY);
	ck_assert_msg(strstr(alloy_last_error(), "live blocks"), "%s",
		      alloy_last_error());
	ck_assert_ptr_eq(alloy_find_allocator("plug_one"), one);
	alloy_data_ptr_free(&dp);

	/* So does being a default. */
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CPU, one));
	ck_assert_int_eq(alloy_plugin_unload(path), -EBUSY);
	ck_assert_msg(strstr(alloy_last_error(), "is the default"), "%s",
		      alloy_last_error());
	ck_assert_ok(alloy_set_default_by_name(ALLOY_DEVICE_CPU, "default"));

	ck_assert_ok(alloy_plugin_unload(path));
	ck_assert_ptr_null(alloy_find_allocator("plug_one"));
	ck_assert_ptr_null(alloy_find_allocator("plug_two"));
	/* Gone from the process, not merely unregistered. */
	ck_assert_ptr_null(dlopen(path, RTLD_NOW | RTLD_NOLOAD));
	ck_assert_int_eq(alloy_plugin_unload(path), -ENOENT);
	/* And it can come back. */
	ck_assert_ok(alloy_plugin_load(path));
	ck_assert_ptr_nonnull(alloy_find_allocator("plug_one"));
}
END_TEST

START_TEST(relative_path_is_the_file_checked)
{
	/* Without a slash, dlopen would search the library path instead. */
	ck_assert_int_eq(chdir(PLUGIN_DIR), 0);
	ck_assert_ok(alloy_plugin_load("good.so"));
	ck_assert_str_eq(
		alloy_allocator_origin(alloy_find_allocator("plug_one")),
		"good.so");
	ck_assert_ok(alloy_plugin_unload("good.so"));
}
END_TEST

START_TEST(bad_arguments)
{
	ck_assert_int_eq(alloy_plugin_load(NULL), -EINVAL);
	ck_assert_int_eq(alloy_plugin_load(""), -EINVAL);
	ck_assert_int_eq(alloy_plugin_unload(NULL), -EINVAL);
}
END_TEST

static void run_init(void *arg)
{
	(void)arg;
	alloy_init();
}

/* Run alloy_init with stderr captured; returns what it printed. */
static const char *init_capturing_stderr(void)
{
	return test_stderr_of(run_init, NULL);
}

START_TEST(alloy_plugins_env)
{
	const char *err;

	setenv("ALLOY_PLUGINS",
	       "/nonexistent/a.so:" PLUGIN("good") "::" PLUGIN("abi_major"), 1);
	/*
	 * Loaded before the defaults are applied: cpu can name its allocator.
	 */
	test_set_conf("cpu:plug_two");
	err = init_capturing_stderr();
	ck_assert_str_eq(
		alloy_allocator_name(alloy_get_default(ALLOY_DEVICE_CPU)),
		"plug_two");
	/* One line per failure, and the good one between them still loaded. */
	ck_assert_msg(
		strstr(err,
		       "alloy: ALLOY_PLUGINS: alloy_plugin_load: /nonexistent/a.so: no such file"),
		"stderr: %s", err);
	ck_assert_msg(strstr(err, "abi_major.so: built for plugin ABI 2."),
		      "stderr: %s", err);
	ck_assert_ptr_nonnull(alloy_find_allocator("plug_one"));
}
END_TEST

/* A module directory holding good.so as alloy_plug.so. */
static char *make_module_dir(void)
{
	static char dir[] = "/tmp/alloy-test-modules-XXXXXX";
	char cmd[512];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/alloy_plug.so'", PLUGIN("good"),
		 dir);
	ck_assert_int_eq(system(cmd), 0);
	return dir;
}

static void remove_module_dir(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(request_by_name)
{
	char *dir = make_module_dir();
	char want[512], path[256];
	struct alloy_allocator *a;

	/* A search path: empty and missing entries are skipped. */
	snprintf(path, sizeof(path), "/nonexistent::%s", dir);
	setenv("ALLOY_MODULE_PATH", path, 1);
	/*
	 * plug_two: no alloy_plug_two.so, so the prefix module alloy_plug.so.
	 */
	a = alloy_request_allocator("plug_two");
	ck_assert_msg(a, "%s", alloy_last_error());
	snprintf(want, sizeof(want), "%s/alloy_plug.so", dir);
	ck_assert_str_eq(alloy_allocator_origin(a), want);
	/* The same module provided plug_one: no second load. */
	ck_assert_ptr_nonnull(alloy_request_allocator("plug_one"));
	/* A module that is there but lacks the name. */
	ck_assert_ptr_null(alloy_request_allocator("plug_three"));
	ck_assert_msg(strstr(alloy_last_error(),
			     "provides no allocator \"plug_three\""),
		      "%s", alloy_last_error());
	/* No module at all. */
	ck_assert_ptr_null(alloy_request_allocator("nothing_here"));
	ck_assert_msg(strstr(alloy_last_error(),
			     "no alloy_nothing_here.so or alloy_nothing.so in"),
		      "%s", alloy_last_error());
	remove_module_dir(dir);
}
END_TEST

START_TEST(conf_names_a_module)
{
	char *dir = make_module_dir();

	setenv("ALLOY_MODULE_PATH", dir, 1);
	test_set_conf("cpu:plug_one");
	ck_assert_int_eq(alloy_init(), 0);
	ck_assert_str_eq(
		alloy_allocator_name(alloy_get_default(ALLOY_DEVICE_CPU)),
		"plug_one");
	remove_module_dir(dir);
}
END_TEST

/*
 * A configured default waiting for its module (the pinned-host default
 * "cuda_host" before the CUDA module loads) is taken only by that module:
 * a plugin from another file that uses the name is not made the default,
 * and unloads.  Where a module does provide the name, the plugin is
 * refused.  Where the plugin is that module, it becomes the default.
 */
START_TEST(pending_default_not_taken_by_name)
{
	char dir[] = "/tmp/alloy-test-nomodules-XXXXXX";

	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("ALLOY_MODULE_PATH", dir, 1);
	ck_assert_int_eq(alloy_init(), 0);
	ck_assert_ptr_null(alloy_get_default(ALLOY_DEVICE_CUDA_HOST));
	ck_assert_ok(alloy_plugin_load(PLUGIN("pinned_name")));
	ck_assert_ptr_nonnull(alloy_find_allocator("cuda_host"));
	ck_assert_ptr_null(alloy_get_default(ALLOY_DEVICE_CUDA_HOST));
	ck_assert_ok(alloy_plugin_unload(PLUGIN("pinned_name")));
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(name_of_a_module_refused)
{
	char dir[] = "/tmp/alloy-test-claims-XXXXXX", file[256];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	/* alloy_cuda.so provides cuda_host (the prefix rule). */
	snprintf(file, sizeof(file), "%s/alloy_cuda.so", dir);
	f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	setenv("ALLOY_MODULE_PATH", dir, 1);
	ck_assert_int_eq(alloy_plugin_load(PLUGIN("pinned_name")), -EEXIST);
	ck_assert_msg(
		strstr(alloy_last_error(),
		       "allocator name \"cuda_host\" belongs to the module"),
		"%s", alloy_last_error());
	ck_assert_msg(strstr(alloy_last_error(), file), "%s",
		      alloy_last_error());
	ck_assert_ptr_null(alloy_find_allocator("cuda_host"));
	ck_assert_int_eq(alloy_plugin_unload(PLUGIN("pinned_name")), -ENOENT);
	ck_assert_ptr_null(alloy_get_default(ALLOY_DEVICE_CUDA_HOST));
	ck_assert_int_eq(unlink(file), 0);
	ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

START_TEST(module_takes_its_pending_default)
{
	char dir[] = "/tmp/alloy-test-pinned-XXXXXX", cmd[512];
	struct alloy_allocator *a;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s/alloy_cuda.so'",
		 PLUGIN("pinned_name"), dir);
	ck_assert_int_eq(system(cmd), 0);
	setenv("ALLOY_MODULE_PATH", dir, 1);
	ck_assert_ptr_null(alloy_get_default(ALLOY_DEVICE_CUDA_HOST));
	a = alloy_request_allocator("cuda_host");
	ck_assert_msg(a, "%s", alloy_last_error());
	ck_assert_ptr_eq(alloy_get_default(ALLOY_DEVICE_CUDA_HOST), a);
	remove_module_dir(dir);
}
END_TEST

struct racer {
	pthread_barrier_t *start;
	struct alloy_allocator *got;
};

static void *request_plug_two(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->start);
	r->got = alloy_request_allocator("plug_two");
	return NULL;
}

START_TEST(concurrent_requests_load_once)
{
	char *dir = make_module_dir();
	pthread_barrier_t start;
	struct racer r[4];
	pthread_t t[4];

	setenv("ALLOY_MODULE_PATH", dir, 1);
	alloy_init();
	pthread_barrier_init(&start, NULL, 4);
	for (int i = 0; i < 4; i++) {
		r[i] = (struct racer){ &start, NULL };
		ck_assert_int_eq(
			pthread_create(&t[i], NULL, request_plug_two, &r[i]),
			0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		ck_assert_ptr_nonnull(r[i].got);
		ck_assert_ptr_eq(r[i].got, r[0].got);
	}
	pthread_barrier_destroy(&start);
	remove_module_dir(dir);
}
END_TEST

START_TEST(example_plugin)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };
	struct alloy_data_ptr dp[100];
	struct alloy_allocator *a;

	setenv("ALLOY_PLUGINS", EXAMPLE_PLUGIN, 1);
	test_set_conf("cpu:arena,arena.chunk_size:4K");
	ck_assert_int_eq(alloy_init(), 0);
	a = alloy_get_default(ALLOY_DEVICE_CPU);
	ck_assert_str_eq(alloy_allocator_name(a), "arena");
	ck_assert_str_eq(alloy_allocator_origin(a), EXAMPLE_PLUGIN);
	for (int i = 0; i < 100; i++) {
		ck_assert_ok(
			alloy_context_new(ALLOY_CPU, 100 + (size_t)i, &dp[i]));
		ck_assert_uint_eq((uintptr_t)dp[i].ptr % 64, 0);
		memset(dp[i].ptr, i, dp[i].size);
	}
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(((unsigned char *)dp[i].ptr)[dp[i].size - 1],
				 i);
	ck_assert_ok(alloy_allocator_stats(a, &st));
	/* 100 blocks of ~192 bytes do not fit one 4K chunk. */
	ck_assert_uint_gt(st.num_system_allocs, 1);
	ck_assert_uint_eq(st.num_system_frees, 0);
	for (int i = 0; i < 100; i++)
		alloy_data_ptr_free(&dp[i]);
	/* The last free reset it: every chunk but one went back. */
	ck_assert_ok(alloy_allocator_stats(a, &st));
	ck_assert_uint_eq(st.num_system_frees, st.num_system_allocs - 1);
	ck_assert_uint_eq(st.reserved, 4096);
}
END_TEST

/* A copy of good.so at dir/p.so with mode; its path into path. */
static void copy_good(const char *dir, mode_t mode, char *path, size_t len)
{
	char cmd[512];

	snprintf(path, len, "%s/p.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", PLUGIN("good"), path);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void load_arg(void *arg)
{
	ck_assert_ok(alloy_plugin_load(arg));
}

/*
 * Issue 15: a world-writable plugin loaded without a word.  Anyone may
 * replace such a file, or rename another over it when its directory is
 * world-writable without the sticky bit: warned about, then loaded.
 */
START_TEST(replaceable_plugin_warns)
{
	char dir[] = "/tmp/alloy-test-ww-XXXXXX", path[256];
	const char *err;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	copy_good(dir, 0666, path, sizeof(path));
	err = test_stderr_of(load_arg, path);
	ck_assert_int_eq(test_count_lines_with(err, "warning"), 1);
	ck_assert_msg(strstr(err, "the file is world-writable"), "%s", err);
	ck_assert_msg(strstr(err, path), "%s", err);
	ck_assert_ok(alloy_plugin_unload(path));

	ck_assert_int_eq(chmod(path, 0644), 0);
	ck_assert_int_eq(chmod(dir, 0777), 0);
	err = test_stderr_of(load_arg, path);
	ck_assert_msg(
		strstr(err,
		       "directory is world-writable without the sticky bit"),
		"%s", err);
	ck_assert_ok(alloy_plugin_unload(path));

	/* /tmp's own mode: the sticky bit keeps others' hands off. */
	ck_assert_int_eq(chmod(dir, 01777), 0);
	err = test_stderr_of(load_arg, path);
	ck_assert_str_eq(err, "");
	ck_assert_ok(alloy_plugin_unload(path));
	remove_module_dir(dir);
}
END_TEST

START_TEST(replaceable_plugin_refused_in_secure_mode)
{
	char dir[] = "/tmp/alloy-test-wws-XXXXXX", path[256];

	ck_assert_ptr_nonnull(mkdtemp(dir));
	copy_good(dir, 0666, path, sizeof(path));
	alloy_init();
	alloy__secure_force_for_tests();
	assert_refused(
		path, -EPERM,
		"world-writable, so anyone could choose the code it runs; refused in secure-execution mode",
		"plug_one");
	/* A file only its owner can replace still loads. */
	ck_assert_int_eq(chmod(path, 0755), 0);
	ck_assert_ok(alloy_plugin_load(path));
	ck_assert_ok(alloy_plugin_unload(path));
	remove_module_dir(dir);
}
END_TEST

/*
 * Issue 15: in secure-execution mode the environment does not choose
 * code: ALLOY_PLUGINS is not loaded, ALLOY_MODULE_PATH and the build
 * tree are not searched, and one stderr line says what was ignored.  The
 * real setuid run is tests/cli/test_setuid.sh.
 */
START_TEST(secure_mode_ignores_plugin_and_module_env)
{
	char *dir = make_module_dir();
	const char *err;

	setenv("ALLOY_PLUGINS", PLUGIN("good"), 1);
	setenv("ALLOY_MODULE_PATH", dir, 1);
	alloy__secure_force_for_tests();
	err = init_capturing_stderr();
	ck_assert_ptr_null(alloy_find_allocator("plug_one"));
	ck_assert_ptr_null(dlopen(PLUGIN("good"), RTLD_NOW | RTLD_NOLOAD));
	ck_assert_int_eq(test_count_lines_with(err, "secure-execution"), 1);
	ck_assert_msg(strstr(err, "ignored ALLOY_PLUGINS, ALLOY_MODULE_PATH;"),
		      "%s", err);
	/* Modules by name come only from the installed directory. */
	ck_assert_ptr_null(alloy_request_allocator("plug_two"));
	ck_assert_msg(strstr(alloy_last_error(),
			     "alloy_plug.so in " ALLOY_MODULE_DIR ")"),
		      "%s", alloy_last_error());
	ck_assert_ptr_null(alloy_request_allocator("nothing_here"));
	ck_assert_msg(strstr(alloy_last_error(), "in " ALLOY_MODULE_DIR ")"),
		      "the build tree was searched: %s", alloy_last_error());
	/* Asked again later: still one line, nothing more said. */
	ck_assert_int_eq(alloy_conf_error_count(), 1);
	remove_module_dir(dir);
}
END_TEST

/* The control: without secure mode the same environment loads both. */
START_TEST(plugin_and_module_env_load_normally)
{
	const char *err;

	setenv("ALLOY_PLUGINS", PLUGIN("good"), 1);
	err = init_capturing_stderr();
	ck_assert_ptr_nonnull(alloy_find_allocator("plug_one"));
	ck_assert_ptr_null(strstr(err, "secure-execution"));
	ck_assert_ptr_null(alloy_request_allocator("nothing_here"));
	ck_assert_msg(
		strstr(alloy_last_error(), "in " ALLOY_BUILD_DIR "/.libs)"),
		"%s", alloy_last_error());
}
END_TEST

Suite *suite_plugin(void)
{
	Suite *s = suite_create("plugin");
	TCase *broken = tcase_create("broken");
	TCase *good = tcase_create("good");
	TCase *loading = tcase_create("loading");

	tcase_add_test(broken, missing_file);
	tcase_add_test(broken, not_a_shared_object);
	tcase_add_test(broken, no_entry_symbol);
	tcase_add_test(broken, abi_major_mismatch);
	tcase_add_test(broken, struct_too_small);
	tcase_add_test(broken, struct_size_absurd);
	tcase_add_test(broken, required_op_missing);
	tcase_add_test(broken, duplicate_name);
	tcase_add_test(broken, init_fails);
	tcase_add_test(broken, bad_arguments);
	tcase_add_test(good, relative_path_is_the_file_checked);
	tcase_add_test(good, newer_minor_loads);
	tcase_add_test(good, good_plugin_lifecycle);
	tcase_add_test(good, example_plugin);
	tcase_add_test(loading, alloy_plugins_env);
	tcase_add_test(loading, request_by_name);
	tcase_add_test(loading, conf_names_a_module);
	tcase_add_test(loading, concurrent_requests_load_once);
	tcase_add_test(loading, pending_default_not_taken_by_name);
	tcase_add_test(loading, name_of_a_module_refused);
	tcase_add_test(loading, module_takes_its_pending_default);
	tcase_add_test(loading, replaceable_plugin_warns);
	tcase_add_test(loading, replaceable_plugin_refused_in_secure_mode);
	tcase_add_test(loading, secure_mode_ignores_plugin_and_module_env);
	tcase_add_test(loading, plugin_and_module_env_load_normally);
	tcase_add_test(loading, init_may_not_register);
#ifdef ALLOY_SANITIZER_OWNS_MALLOC
	/* As tests/unit/test_fork.c says: those runtimes are not fork-safe. */
	fprintf(stderr, "plugin: skipped 1 test under a sanitizer "
			"(its runtime is not fork-safe with threads)\n");
#else
	tcase_add_test(loading, fork_while_a_plugin_init_allocates);
#endif
	tcase_add_test(loading, unload_waits_for_context_ops);
	suite_add_tcase(s, broken);
	suite_add_tcase(s, good);
	suite_add_tcase(s, loading);
	return s;
}
