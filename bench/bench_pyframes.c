// SPDX-License-Identifier: MIT
/*
 * bench/bench_pyframes.c - what Python's frames in the call stacks cost
 * (a case of `alloy bench profiler`): a NumPy-heavy and an object-heavy
 * script under `alloy run --conf backtrace:1` with python_frames on and
 * off, each round a fresh interpreter that times its own loop, the
 * modes alternating so that the machine's drift hits both alike.  The
 * ratio (frames on / off, the median of the rounds) has the goal 0.5.
 *
 * The scripts import the build's alloy package (python/stage beside the
 * alloy command, or one level up from libtool's .libs), which installs
 * the frame source; PYTHONMALLOC=malloc sends Python's objects through
 * the malloc front, so the object-heavy script's dicts and lists are
 * recorded, stacks and all.  Without the package or /usr/bin/python3
 * the case is skipped, said so.
 */
#include <fcntl.h>
#include <libgen.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"

#define PYTHON	 "/usr/bin/python3"
#define PYROUNDS 3

extern char **environ;

/* Each script prints its loop's iterations per second. */
static const char numpy_script[] = "import sys, time, alloy\n"
				   "import numpy as np\n"
				   "def layer(x):\n"
				   "    y = x * 2.0\n"
				   "    return np.maximum(y, 0.5) + x\n"
				   "def step(x):\n"
				   "    for _ in range(4):\n"
				   "        x = layer(x)\n"
				   "    return float(x.sum())\n"
				   "n = int(sys.argv[1]); x = np.ones(256)\n"
				   "for _ in range(n // 10): step(x)\n"
				   "t = time.process_time()\n"
				   "for _ in range(n): step(x)\n"
				   "print(n / (time.process_time() - t))\n";

static const char object_script[] =
	"import sys, time, alloy\n"
	"def record(i):\n"
	"    return {'id': i, 'name': 'item%d' % i, 'tags': [str(i), 'x']}\n"
	"def batch(n):\n"
	"    return [record(i) for i in range(n)]\n"
	"n = int(sys.argv[1])\n"
	"for _ in range(n // 10): batch(100)\n"
	"t = time.process_time()\n"
	"for _ in range(n): batch(100)\n"
	"print(n / (time.process_time() - t))\n";

/* The build's python/stage near the command at self; false if none. */
static bool find_stage(const char *self, char *out, size_t len)
{
	static const char *const up[] = { "", "/.." };
	char dir[4096], probe[8300];

	snprintf(dir, sizeof(dir), "%s", self);
	dirname(dir);
	for (size_t i = 0; i < 2; i++) {
		if (snprintf(probe, sizeof(probe), "%s%s/python/stage", dir,
			     up[i]) >= (int)len)
			continue;
		memcpy(out, probe, strlen(probe) + 1);
		strcat(probe, "/alloy/__init__.py");
		if (!access(probe, R_OK))
			return true;
	}
	return false;
}

/* One run of script under alloy run with conf: its rate, or -1. */
static double one_run(const char *self, const char *stage, const char *conf,
		      const char *script, long iters)
{
	char n[32], pypath[8300], buf[128];
	char *argv[] = { (char *)self, "run",	       "--conf",
			 (char *)conf, "--",	       PYTHON,
			 "-c",	       (char *)script, n,
			 NULL };
	char **env;
	size_t ne = 0, k = 0;
	posix_spawn_file_actions_t fa;
	int fd[2], st;
	ssize_t got = 0, r;
	pid_t pid;
	double rate = -1;

	snprintf(n, sizeof(n), "%ld", iters);
	snprintf(pypath, sizeof(pypath), "PYTHONPATH=%s", stage);
	while (environ[ne])
		ne++;
	env = calloc(ne + 3, sizeof(*env));
	if (!env || pipe(fd)) {
		free(env);
		return -1;
	}
	for (size_t i = 0; i < ne; i++)
		if (strncmp(environ[i], "PYTHONPATH=", 11) &&
		    strncmp(environ[i], "PYTHONMALLOC=", 13) &&
		    strncmp(environ[i], "ALLOY_CONF=", 11))
			env[k++] = environ[i];
	env[k++] = pypath;
	env[k++] = "PYTHONMALLOC=malloc";
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
	posix_spawn_file_actions_addclose(&fa, fd[0]);
	if (!posix_spawn(&pid, self, &fa, NULL, argv, env)) {
		close(fd[1]);
		fd[1] = -1;
		while ((r = read(fd[0], buf + got, sizeof(buf) - 1 - got)) > 0)
			got += r;
		buf[got > 0 ? got : 0] = '\0';
		if (waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    !WEXITSTATUS(st))
			rate = strtod(buf, NULL);
	}
	posix_spawn_file_actions_destroy(&fa);
	if (fd[1] >= 0)
		close(fd[1]);
	close(fd[0]);
	free(env);
	return rate > 0 ? rate : -1;
}

struct pyload {
	const char *name, *script;
	long iters;
};

static int pyload_run(const struct bench_opts *opts, const char *self,
		      const char *stage, const struct pyload *w)
{
	static const char *const conf[2] = {
		"backtrace:1,report:/dev/null,leaks:off,python_frames:0",
		"backtrace:1,report:/dev/null,leaks:off,python_frames:1"
	};
	double rate[2][PYROUNDS], ratio[PYROUNDS], best[2] = { 0 };
	int rounds = opts->quick ? 1 : PYROUNDS;
	char metric[128];

	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++) {
			int m = (r + k) % 2;

			rate[m][r] = one_run(self, stage, conf[m], w->script,
					     bench_iters(opts, w->iters));
			if (rate[m][r] < 0) {
				bench_note("skipped: %s: the script failed "
					   "under alloy run",
					   w->name);
				return 0;
			}
			if (rate[m][r] > best[m])
				best[m] = rate[m][r];
		}
		ratio[r] = rate[1][r] / rate[0][r];
	}
	for (int m = 0; m < 2; m++) {
		snprintf(metric, sizeof(metric), "%s: %s (best)", w->name,
			 m ? "Python frames" : "native stacks only");
		bench_result("profiler", metric, best[m], "iters/s", GOAL_NONE,
			     0);
	}
	snprintf(metric, sizeof(metric),
		 "%s: Python frames / native stacks (median)", w->name);
	bench_result("profiler", metric, bench_median(ratio, (size_t)rounds),
		     "x", opts->quick ? GOAL_NONE : GOAL_AT_LEAST, 0.5);
	return 0;
}

int bench_profiler_python(const struct bench_opts *opts)
{
	const struct pyload loads[] = {
		{ "Python NumPy-heavy (backtrace:1)", numpy_script, 20000 },
		{ "Python object-heavy (backtrace:1, PYTHONMALLOC=malloc)",
		  object_script, 2000 },
	};
	char self[4096], stage[8192];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		return 0;
	self[len] = '\0';
	if (access(PYTHON, X_OK)) {
		bench_note("skipped: the Python cases need %s", PYTHON);
		return 0;
	}
	if (!find_stage(self, stage, sizeof(stage))) {
		bench_note("skipped: the Python cases need the build's "
			   "python/stage (a build with the Python module)");
		return 0;
	}
	for (size_t i = 0; i < sizeof(loads) / sizeof(loads[0]); i++)
		pyload_run(opts, self, stage, &loads[i]);
	return 0;
}
