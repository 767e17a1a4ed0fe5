// SPDX-License-Identifier: MIT
/*
 * tests/programs/fdprog.c - a program that treats every descriptor above 2 as
 * its own, as daemons do: it closes 3..1023, opens two files and writes its
 * text into them, under `alloy run` (tests/cli/test_run_fds.sh).  Its files
 * must hold its text only, whatever alloy kept open before.
 *
 *   fdprog [--min-fd N] [--fill] [--replace PATH] [--remove PATH] A B
 *
 * --min-fd N    exit 3 (after all the rest) if a close-on-exec descriptor
 *               below N is open at the start of main: none is inherited
 *               across exec, so such a descriptor was opened by a
 *               constructor, alloy's.
 * --fill        after opening B, put B at every number from 512 to 1023,
 *               where alloy's descriptors were: the program's file is
 *               then at alloy's numbers, not only nothing.
 * --replace P   before closing, put another file at the path P (the
 *               report's), with a line of the program's in it.
 * --remove P    before closing, remove the file P and its directory: the
 *               report's path leads nowhere at exit.
 *
 * It allocates before and after, so that a report counts its blocks, and
 * leaves its files open at exit, as programs do.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLOSE_TOP 1023
#define FILL_FROM 512

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "fdprog: %s %s: %s\n", what, arg, strerror(errno));
	exit(1);
}

/* 0, or 1 with a line for each close-on-exec descriptor below min. */
static int check_low(int min)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int bad = 0;

	if (!d)
		die("cannot open", "/proc/self/fd");
	while ((e = readdir(d))) {
		char link[64], target[512];
		int fd = atoi(e->d_name);
		ssize_t n;

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(d))
			continue;
		if (fd >= min || !(fcntl(fd, F_GETFD) & FD_CLOEXEC))
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		fprintf(stderr,
			"fdprog: descriptor %d (%s) was opened before main, close-on-exec, below %d\n",
			fd, target, min);
		bad = 1;
	}
	closedir(d);
	return bad;
}

static void churn(int n)
{
	for (int i = 0; i < n; i++) {
		char *volatile p = malloc(32 + (size_t)i % 512);

		if (!p)
			die("malloc", "failed");
		p[0] = (char)i;
		free(p);
	}
}

static int open_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		die("cannot open", path);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		die("cannot write", path);
	return fd;
}

int main(int argc, char **argv)
{
	const char *replace = NULL, *remove = NULL;
	int min = 0, fill = 0, low = 0, a, b, i = 1;
	char text[128];

	for (; i < argc && !strncmp(argv[i], "--", 2); i++) {
		if (!strcmp(argv[i], "--min-fd") && i + 1 < argc)
			min = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--fill"))
			fill = 1;
		else if (!strcmp(argv[i], "--replace") && i + 1 < argc)
			replace = argv[++i];
		else if (!strcmp(argv[i], "--remove") && i + 1 < argc)
			remove = argv[++i];
		else
			break;
	}
	if (argc - i != 2) {
		fprintf(stderr,
			"usage: fdprog [--min-fd N] [--fill] [--replace PATH] [--remove PATH] A B\n");
		return 2;
	}
	if (min)
		low = check_low(min);
	churn(1000);
	if (replace) {
		if (unlink(replace) && errno != ENOENT)
			die("cannot remove", replace);
		close(open_write(replace, "not alloy's\n"));
	}
	if (remove) {
		char parent[4096];

		snprintf(parent, sizeof(parent), "%s", remove);
		if (unlink(remove))
			die("cannot remove", remove);
		if (rmdir(dirname(parent)))
			die("cannot remove the directory of", remove);
	}
	for (int fd = 3; fd <= CLOSE_TOP; fd++)
		close(fd);
	snprintf(text, sizeof(text), "fdprog's first file\n");
	a = open_write(argv[i], text);
	snprintf(text, sizeof(text), "fdprog's second file\n");
	b = open_write(argv[i + 1], text);
	if (a != 3 || b != 4) {
		fprintf(stderr,
			"fdprog: its files are %d and %d, not 3 and 4\n", a, b);
		return 1;
	}
	for (int fd = FILL_FROM; fill && fd <= CLOSE_TOP; fd++)
		if (dup2(b, fd) < 0)
			die("cannot dup2 onto", "a high number");
	churn(1000);
	return low ? 3 : 0;
}
