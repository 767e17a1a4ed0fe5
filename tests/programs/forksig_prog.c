// SPDX-License-Identifier: MIT
/*
 * tests/programs/forksig_prog.c - fork from a signal handler while the program
 * allocates, run under `alloy run` by tests/cli/test_forksig.sh.
 *
 * The main thread replaces random slots of a table of blocks, malloc and
 * free of random sizes, as fast as it can.  A SIGALRM timer fires a few
 * hundred microseconds after the handler last returned (so that the main
 * thread always gets on between forks); the handler forks, so the fork
 * often lands while the interrupted code is inside the allocator.  Most
 * of those
 * children exit at once; every fourth execs this program again with
 * --child, which allocates under the front as any program does.  The
 * parent waits for each child in the handler and notes a bad status.
 *
 * glibc promises this much for a single-threaded process: fork is then
 * async-signal-safe with respect to malloc (malloc itself is not, so a
 * child of the handler only exits or execs), and an allocator behind the
 * front must keep that promise.  A hang is the failure this catches; the
 * test runs it under `timeout`.
 *
 * With --main-forks the main thread also forks now and then (that child
 * allocates, checks and frees blocks, and exits), so that the handler's
 * fork may land inside another fork as well.
 *
 * Usage: forksig_prog [--main-forks] [FORKS [SECONDS]]: stop after FORKS
 * forks from the handler (200) or SECONDS (5).  Exit status: 0 when
 * every child exited 0 and the handler forked at least once, 1
 * otherwise.  Prints how many forks each way.
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SLOTS	 1000
#define MAX_SIZE 5000

static volatile sig_atomic_t handler_forks;
static volatile sig_atomic_t failures;
/* Forks the handler makes at most: then it returns at once. */
static int want = 200;

/* What a child does: its own allocations, each written and read back. */
static int child_work(unsigned seed)
{
	void *blocks[16];

	for (int i = 0; i < 16; i++) {
		size_t n = 1 + (size_t)(rand_r(&seed) % 5000);

		blocks[i] = malloc(n);
		if (!blocks[i])
			return 2;
		memset(blocks[i], i, n);
		if (((unsigned char *)blocks[i])[n - 1] != i)
			return 3;
	}
	for (int i = 0; i < 16; i++)
		free(blocks[i]);
	return 0;
}

/* Fire SIGALRM once, 100 to 1099 microseconds from now. */
static void arm(void)
{
	static unsigned state = 12345;
	struct itimerval once = { { 0, 0 }, { 0, 100 } };

	state = state * 1103515245 + 12345;
	once.it_value.tv_usec += (state >> 8) % 1000;
	setitimer(ITIMER_REAL, &once, NULL);
}

/* Wait for pid, across the timer's interruptions; whether it exited 0. */
static int reaped_ok(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void on_alarm(int sig)
{
	static char *const child_argv[] = { "forksig_prog", "--child", NULL };
	int saved = errno;
	pid_t pid;

	(void)sig;
	if (handler_forks >= want || failures)
		return;
	pid = fork();
	if (pid == 0) {
		if (handler_forks % 4)
			_exit(0);
		execv("/proc/self/exe", child_argv);
		_exit(5);
	}
	if (pid < 0 || !reaped_ok(pid))
		failures = failures + 1;
	else
		handler_forks = handler_forks + 1;
	arm();
	errno = saved;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static void *slot[SLOTS];
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	struct sigaction sa = { .sa_handler = on_alarm };
	bool main_forks_too = false;
	double limit = 5.0, end;
	unsigned seed = 1;
	int main_forks = 0;

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_work((unsigned)getpid());
	if (argc > 1 && !strcmp(argv[1], "--main-forks")) {
		main_forks_too = true;
		argc--;
		argv++;
	}
	if (argc > 1)
		want = atoi(argv[1]);
	if (argc > 2)
		limit = atof(argv[2]);
	end = now_s() + limit;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL)) {
		perror("forksig_prog: sigaction");
		return 1;
	}
	arm();
	while (handler_forks < want && !failures && now_s() < end) {
		for (int k = 0; k < 64; k++) {
			int i = rand_r(&seed) % SLOTS;
			size_t n = (size_t)(rand_r(&seed) % MAX_SIZE);

			free(slot[i]);
			slot[i] = malloc(n);
			if (n && !slot[i]) {
				fprintf(stderr,
					"forksig_prog: malloc failed\n");
				return 1;
			}
			if (n)
				((char *)slot[i])[n - 1] = 1;
		}
		/* A plain fork now and then, with the timer still running. */
		if (main_forks_too && rand_r(&seed) % 8 == 0) {
			pid_t pid = fork();

			if (pid == 0)
				_exit(child_work(seed));
			if (pid < 0 || !reaped_ok(pid))
				failures = failures + 1;
			else
				main_forks++;
		}
	}
	setitimer(ITIMER_REAL, &off, NULL);
	for (int i = 0; i < SLOTS; i++)
		free(slot[i]);
	printf("forks from the handler: %d, from main: %d, failed: %d\n",
	       (int)handler_forks, main_forks, (int)failures);
	return failures || handler_forks == 0;
}
