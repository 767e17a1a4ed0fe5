// SPDX-License-Identifier: MIT
/*
 * cli/cmd_demo.c - `alloy demo`: a tour of what alloy is for.
 *
 * One training loop (cli/demo_net.c) runs on every CPU allocator there
 * is -- the built-in default, the jemalloc and mimalloc modules, and any
 * plugin -- swapping the default while it runs, then prints them side by
 * side; then the same loop runs on the simulated GPU through the caching
 * and pinned-host allocators.  The run is traced, and the trace becomes
 * the pictures and reports the user opens afterwards.
 *
 * The workload runs in a child process (this program again, with
 * --workload): the reporter writes the trace's end record at exit, and
 * the parent then reads a complete trace.  The parent never initialises
 * the library itself, so a `report:` in ALLOY_CONF gives one exit report,
 * the child's.
 */
#include <errno.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <alloy/alloy.h>

#include "bench/bench.h"
#include "cli.h"
#include "demo_net.h"

extern char **environ;

#define STEPS	    40 /* per allocator */
#define STEPS_QUICK 8
#define MAX_CPU	    8

struct phase {
	struct alloy_allocator *a;
	double ms_per_step; /* median */
	long long allocs;   /* blocks it made in its phase */
	uint64_t peak_live; /* its own blocks, from the reporter */
	/* Its peak where it keeps one, else what it held at the end. */
	uint64_t peak_reserved;
	bool reserved_known;
	bool peak_known;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static struct alloy_allocator_stats stats_of(struct alloy_allocator *a)
{
	struct alloy_allocator_stats st = { .size = sizeof(st),
					    .version = ALLOY_STATS_VERSION };

	alloy_allocator_stats(a, &st);
	return st;
}

/* The reporter's peak of a's own blocks since the last reset. */
static uint64_t reported_peak(struct alloy_allocator *a)
{
	static struct alloy_reporter_snapshot snap;

	snap = (struct alloy_reporter_snapshot){
		.size = sizeof(snap),
		.version = ALLOY_REPORTER_SNAPSHOT_VERSION,
	};
	if (alloy_reporter_snapshot(&snap))
		return 0;
	for (uint32_t i = 0; i < snap.nentries; i++)
		if (!strcmp(snap.entries[i].allocator,
			    alloy_allocator_name(a)) &&
		    snap.entries[i].device.type == ALLOY_DEVICE_CPU)
			return snap.entries[i].c.peak_bytes;
	return 0;
}

/* The CPU allocators to compare: default, the modules, any plugin. */
struct cpu_list {
	struct alloy_allocator *a[MAX_CPU];
	int n;
};

static int add_cpu(struct alloy_allocator *a, void *arg)
{
	struct cpu_list *l = arg;

	if (alloy_allocator_device_type(a) != ALLOY_DEVICE_CPU ||
	    l->n == MAX_CPU)
		return 0;
	/* Built-ins other than default are the fail and debug wrappers. */
	if (!strcmp(alloy_allocator_origin(a), "builtin") &&
	    strcmp(alloy_allocator_name(a), "default"))
		return 0;
	l->a[l->n++] = a;
	return 0;
}

/* The configured default first, then the others in registration order. */
static void find_cpu_allocators(struct cpu_list *l)
{
	static const char *const modules[] = { "jemalloc", "mimalloc" };
	struct alloy_allocator *first = alloy_get_default(ALLOY_DEVICE_CPU);

	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++)
		if (!alloy_request_allocator(modules[i]))
			printf("  (%s: not available here: %s)\n", modules[i],
			       alloy_last_error());
	alloy_foreach_allocator(add_cpu, l);
	for (int i = 1; i < l->n; i++)
		if (l->a[i] == first) {
			memmove(&l->a[1], &l->a[0],
				(size_t)i * sizeof(l->a[0]));
			l->a[0] = first;
		}
}

static void human(uint64_t n, char *buf, size_t len)
{
	if (n >= 10u << 20)
		snprintf(buf, len, "%.1f MiB", (double)n / (1 << 20));
	else
		snprintf(buf, len, "%.1f KiB", (double)n / 1024);
}

/*
 * One allocator's turn: make it the default, let the previous net go
 * (its blocks return to the allocator that made them, not to this one),
 * run a fresh net for `steps` steps and measure it.
 */
static int run_phase(struct phase *ph, struct demo_net **net, int steps,
		     struct alloy_allocator *prev)
{
	struct demo_net *old = *net;
	long long before, live;
	double ms[STEPS];
	char bytes[32];
	float loss = 0;
	int rc;

	rc = alloy_set_default(ALLOY_DEVICE_CPU, ph->a);
	if (rc)
		return rc;
	alloy_reporter_reset_peaks();
	before = (long long)stats_of(ph->a).num_allocs;
	*net = demo_net_new(ALLOY_CPU);
	if (!*net)
		return -ENOMEM;
	for (int s = 0; s < steps; s++) {
		double t0 = now_ms();

		rc = demo_net_step(*net, demo_net_batch(s), &loss);
		if (rc)
			return rc;
		ms[s] = now_ms() - t0;
		if (s || !prev)
			continue;
		/*
		 * Both nets live for a step, then the old one lets go: its
		 * blocks return to prev, never to the new default.
		 */
		human((uint64_t)alloy_allocator_live_bytes(prev), bytes,
		      sizeof(bytes));
		live = alloy_allocator_live_blocks(prev);
		demo_net_free(old);
		printf("  -- swap: CPU default %s -> %s; %lld blocks (%s) of %s were live, the old net let go of them: %s has %lld left\n",
		       alloy_allocator_name(prev), alloy_allocator_name(ph->a),
		       live, bytes, alloy_allocator_name(prev),
		       alloy_allocator_name(prev),
		       alloy_allocator_live_blocks(prev));
	}
	ph->ms_per_step = bench_median(ms, (size_t)steps);
	ph->allocs = (long long)stats_of(ph->a).num_allocs - before;
	ph->peak_live = reported_peak(ph->a);
	{
		struct alloy_allocator_stats st = stats_of(ph->a);
		const struct alloy_allocator_ops *ops =
			alloy_allocator_ops(ph->a);

		ph->reserved_known = ops && ops->stats;
		ph->peak_known = st.peak_reserved != 0;
		ph->peak_reserved =
			ph->peak_known ? st.peak_reserved : st.reserved;
	}
	printf("  %-10s %d steps, loss %.3f, %lld blocks made\n",
	       alloy_allocator_name(ph->a), steps, loss, ph->allocs);
	return 0;
}

static void print_table(const struct phase *ph, int n)
{
	int fastest = 0;

	for (int i = 1; i < n; i++)
		if (ph[i].ms_per_step < ph[fastest].ms_per_step)
			fastest = i;
	printf("\n  %-10s %12s %12s %15s %12s\n", "allocator", "time/step",
	       "peak live", "peak reserved ", "allocations");
	for (int i = 0; i < n; i++) {
		char live[32], held[32], res[sizeof(held) + 1];

		human(ph[i].peak_live, live, sizeof(live));
		if (ph[i].reserved_known) {
			human(ph[i].peak_reserved, held, sizeof(held));
			snprintf(res, sizeof(res), "%s%s", held,
				 ph[i].peak_known ? " " : "*");
		} else {
			snprintf(res, sizeof(res), "- ");
		}
		printf("  %-10s %9.3f ms %12s %15s %12lld%s\n",
		       alloy_allocator_name(ph[i].a), ph[i].ms_per_step, live,
		       res, ph[i].allocs, i == fastest ? "   <- fastest" : "");
	}
	printf("  (time/step: median of the phase, mostly arithmetic: after warm-up keep-on-shrink\n"
	       "   leaves a few scratch blocks a step, so `alloy bench` is where the allocators race;\n"
	       "   peak live: its own blocks, from the reporter; peak reserved: the most it held\n"
	       "   from the system, where it keeps that figure; *: it keeps none, so what it held\n"
	       "   at the end of its phase)\n");
}

static int cpu_tour(int steps)
{
	struct phase ph[MAX_CPU] = { 0 };
	struct cpu_list l = { .n = 0 };
	struct demo_net *net = NULL;
	int rc = 0;

	printf("CPU: the loop on each allocator in turn, the default swapped while the program runs\n");
	find_cpu_allocators(&l);
	printf("  first on the configured CPU default, \"%s\"\n",
	       alloy_allocator_name(l.a[0]));
	for (int i = 0; i < l.n && !rc; i++) {
		ph[i].a = l.a[i];
		rc = run_phase(&ph[i], &net, steps, i ? l.a[i - 1] : NULL);
	}
	demo_net_free(net);
	if (rc)
		return rc;
	printf("  every block went back to the allocator that made it:");
	for (int i = 0; i < l.n; i++) {
		long long live = alloy_allocator_live_blocks(l.a[i]);

		printf(" %s %lld live%s", alloy_allocator_name(l.a[i]), live,
		       i + 1 < l.n ? "," : "\n");
		if (live) {
			fprintf(stderr, "alloy demo: %s kept %lld blocks\n",
				alloy_allocator_name(l.a[i]), live);
			return -EIO;
		}
	}
	print_table(ph, l.n);
	return alloy_set_default_by_name(ALLOY_DEVICE_CPU, "default");
}

/* ---- the simulated GPU ------------------------------------------------ */

static int gpu_tour(int steps)
{
	struct alloy_allocator *dev, *pinned;
	struct alloy_allocator_stats ds, ps;
	struct demo_net *net;
	float loss = 0;
	int rc;

	printf("\nGPU (simulated: host memory behind the CUDA allocators' policy, no GPU needed)\n");
	rc = alloy_cuda_sim_register_context(alloy_cuda_sim_builtin());
	if (rc && rc != -EEXIST)
		return rc;
	if (rc == -EEXIST) {
		printf("  (a CUDA context is registered already: the simulated tour is skipped)\n");
		return 0;
	}
	dev = alloy_find_allocator("cuda_caching_sim");
	pinned = alloy_find_allocator("cuda_host_sim");
	if (!dev || !pinned ||
	    (rc = alloy_set_default(ALLOY_DEVICE_CUDA, dev)) ||
	    (rc = alloy_set_default(ALLOY_DEVICE_CUDA_HOST, pinned)))
		return rc ? rc : -ENODEV;
	net = demo_net_new((struct alloy_device){ ALLOY_DEVICE_CUDA, 0 });
	if (!net)
		return -ENOMEM;
	for (int s = 0; s < steps && !rc; s++) {
		/* Each batch arrives through a pinned staging buffer. */
		size_t bytes = (size_t)demo_net_batch(s) * 64 * sizeof(float);
		struct alloy_data_ptr stage;

		rc = alloy_alloc_default(ALLOY_DEVICE_CUDA_HOST, bytes, 0,
					 &stage);
		if (rc)
			break;
		memset(stage.ptr, 0, bytes);
		alloy_data_ptr_free(&stage);
		rc = demo_net_step(net, demo_net_batch(s), &loss);
	}
	demo_net_free(net);
	if (rc)
		return rc;
	ds = stats_of(dev);
	ps = stats_of(pinned);
	printf("  %d steps, loss %.3f\n", steps, loss);
	printf("  device memory (cuda_caching_sim): %llu blocks served by %llu device mallocs: %llu device calls avoided by caching\n",
	       (unsigned long long)ds.num_allocs,
	       (unsigned long long)ds.num_system_allocs,
	       (unsigned long long)(ds.num_allocs - ds.num_system_allocs));
	printf("  pinned staging (cuda_host_sim): %llu buffers served by %llu pinned mallocs\n",
	       (unsigned long long)ps.num_allocs,
	       (unsigned long long)ps.num_system_allocs);
	return 0;
}

/* The child: the tour itself, traced through ALLOY_CONF. */
static int workload(bool quick)
{
	int steps = quick ? STEPS_QUICK : STEPS;
	int rc;

	alloy_init();
	if (!alloy_reporter_enabled() && (rc = alloy_reporter_enable()))
		goto fail;
	printf("alloy demo: a 4-layer MLP trained with SGD on a Workspace of named blobs,\n"
	       "batches of 8 to 256 rows (%d steps per allocator)\n\n",
	       steps);
	rc = cpu_tour(steps);
	if (!rc)
		rc = gpu_tour(steps);
	if (!rc) {
		fflush(stdout);
		return 0;
	}
fail:
	fprintf(stderr, "alloy demo: %s\n", alloy_last_error());
	return EXIT_PROBLEM;
}

/* ---- the parent: run the workload traced, then write the pictures ---- */

struct demo_args {
	bool quick;
	const char *out;
	const char *plugins[8];
	int nplugins;
};

static int parse(int argc, char **argv, struct demo_args *a, bool *child)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--quick")) {
			a->quick = true;
		} else if (!strcmp(argv[i], "--workload")) {
			*child = true;
		} else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
			a->out = argv[++i];
		} else if (!strcmp(argv[i], "--plugin") && i + 1 < argc) {
			if (a->nplugins == 8)
				return cli_usage_error(&cmd_demo,
						       "at most 8 --plugin");
			a->plugins[a->nplugins++] = argv[++i];
		} else {
			return cli_usage_error(&cmd_demo,
					       "unexpected argument \"%s\"",
					       argv[i]);
		}
	}
	return 0;
}

/* name=value for the child: the user's value, then ours after sep. */
static char *env_with(const char *name, const char *ours, const char *sep)
{
	const char *theirs = getenv(name);
	size_t n =
		strlen(name) + strlen(ours) + (theirs ? strlen(theirs) : 0) + 4;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s=%s%s%s", name, theirs ? theirs : "",
			 theirs && *theirs ? sep : "", ours);
	return s;
}

/*
 * The trace the user asked for in ALLOY_CONF, if any: the demo then reads
 * that one instead of writing its own (the last trace: item wins, as for
 * the library).
 */
static bool user_trace(char *path, size_t len)
{
	const char *conf = getenv("ALLOY_CONF"), *p = conf;
	bool found = false;

	while (p && *p) {
		size_t n = strcspn(p, ",");

		if (n > 6 && !strncmp(p, "trace:", 6) && n - 6 < len) {
			memcpy(path, p + 6, n - 6);
			path[n - 6] = '\0';
			found = true;
		}
		p += n + (p[n] == ',');
	}
	return found;
}

static int spawn_workload(const struct demo_args *a, const char *trace)
{
	char conf[PATH_MAX + 64], plugins[8 * PATH_MAX] = "";
	char *argv[] = { "alloy", "demo", "--workload",
			 a->quick ? "--quick" : NULL, NULL };
	char **env;
	size_t n = 0;
	pid_t pid;
	int st, rc;

	/* Ours last: a key given twice takes its last value. */
	snprintf(conf, sizeof(conf), "trace:%s", trace);
	for (int i = 0; i < a->nplugins; i++)
		snprintf(plugins + strlen(plugins),
			 sizeof(plugins) - strlen(plugins), "%s%s",
			 i ? ":" : "", a->plugins[i]);
	while (environ[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		return -ENOMEM;
	n = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "ALLOY_CONF=", 11) &&
		    (!a->nplugins || strncmp(*e, "ALLOY_PLUGINS=", 14)))
			env[n++] = *e;
	env[n++] = env_with("ALLOY_CONF", conf, ",");
	if (a->nplugins)
		env[n++] = env_with("ALLOY_PLUGINS", plugins, ":");
	fflush(stdout);
	rc = posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, env);
	free(env[n - 1]);
	if (a->nplugins)
		free(env[n - 2]);
	free(env);
	if (rc)
		return -rc;
	if (waitpid(pid, &st, 0) != pid)
		return -errno;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* What the demo writes beside the trace, each by an `alloy report` run. */
struct product {
	const char *file;    /* in the output directory */
	const char *args[5]; /* after "report TRACE"; NULL-terminated */
	const char *what;
};

static const struct product products[] = {
	{ "timeline.html",
	  { "--format", "html" },
	  "live bytes per allocator over the run, the swaps and the peak" },
	{ "timeline.svg", { "--format", "svg" }, "the same picture, static" },
	{ "peak.txt",
	  { "--at", "peak" },
	  "what was live at each device's peak, by blob" },
	{ "flamegraph.html",
	  { "--format", "flamegraph", "--by", "owner" },
	  "the peaks as flame graphs of blobs" },
};

#define NPRODUCTS (sizeof(products) / sizeof(products[0]))

/* `alloy report TRACE ARGS... -o FILE`, as a user would run it. */
static int render(const char *trace, const struct product *p, const char *file)
{
	char *argv[10] = { "report", (char *)trace };
	int argc = 2;

	for (int i = 0; p->args[i]; i++)
		argv[argc++] = (char *)p->args[i];
	argv[argc++] = "-o";
	argv[argc++] = (char *)file;
	return cmd_report.run(argc, argv);
}

static int run_demo(int argc, char **argv)
{
	struct demo_args a = { .out = "alloy-demo" };
	char trace[PATH_MAX], path[NPRODUCTS][PATH_MAX];
	bool child = false;
	int rc = parse(argc, argv, &a, &child);

	if (rc)
		return rc;
	if (child)
		return workload(a.quick);
	if (mkdir(a.out, 0777) && errno != EEXIST) {
		fprintf(stderr, "alloy demo: cannot make %s: %s\n", a.out,
			strerror(errno));
		return EXIT_PROBLEM;
	}
	if (!user_trace(trace, sizeof(trace)))
		snprintf(trace, sizeof(trace), "%s/trace.alloy", a.out);
	rc = spawn_workload(&a, trace);
	if (rc) {
		fprintf(stderr, "alloy demo: the workload failed (%s)\n",
			strerror(-rc));
		return EXIT_PROBLEM;
	}
	for (size_t i = 0; i < NPRODUCTS; i++) {
		snprintf(path[i], sizeof(path[i]), "%s/%s", a.out,
			 products[i].file);
		if (render(trace, &products[i], path[i]))
			return EXIT_PROBLEM;
	}
	printf("\nWritten:\n  %-30s every allocation and free, with its blob "
	       "(alloy report, alloy replay read it)\n",
	       trace);
	for (size_t i = 0; i < NPRODUCTS; i++)
		printf("  %-30s %s\n", path[i], products[i].what);
	printf("Open first: %s (click any moment to see what was live)\n",
	       path[0]);
	return 0;
}

const struct cli_command cmd_demo = {
	.name = "demo",
	.summary =
		"a tour: one training loop on every allocator, swapped live, traced and pictured",
	.usage =
		"usage: alloy demo [--quick] [--out DIR] [--plugin PATH]...\n"
		"\n"
		"Trains a small MLP on the tensor layer (a Workspace of named blobs,\n"
		"batches of changing size) on every CPU allocator there is -- default,\n"
		"the jemalloc and mimalloc modules, plugins -- swapping the CPU default\n"
		"while it runs, and prints them side by side: time per step, peak live\n"
		"bytes, peak reserved bytes, allocations.  Then the same loop on the\n"
		"simulated GPU through the caching and pinned-host allocators.  The run\n"
		"is traced; the trace, the timeline, what held the memory at the peak\n"
		"and its flame graph are written to DIR.\n"
		"\n"
		"  --quick        a few steps per allocator (tests)\n"
		"  --out DIR      where the files go (default ./alloy-demo)\n"
		"  --plugin PATH  load an allocator plugin and add it to the comparison\n"
		"                 (as ALLOY_PLUGINS does)\n",
	.run = run_demo,
};
