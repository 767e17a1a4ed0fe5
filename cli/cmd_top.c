// SPDX-License-Identifier: MIT
/*
 * cli/cmd_top.c - `alloy top [PID...] [--once]`: a live view of running
 * programs' allocators, refreshed each second, over their control
 * sockets.
 *
 * Each frame is two samples' difference (`stats` requests, stamped by
 * the program's own clock): per allocator live blocks and bytes, and
 * allocations and frees a second.  On a terminal the screen is redrawn
 * in place and `q` quits; elsewhere frames follow one another.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "cli.h"
#include "ctl_client.h"

#define MAX_PROCS  64
#define MAX_ALLOCS 64
#define MAX_GROUPS 5

struct alloc_row {
	char name[40], device[16];
	int is_default;
	long long blocks, bytes;
	unsigned long long allocs, frees;
	long long peak; /* -1: unknown */
};

struct group_row {
	unsigned long long bytes, blocks;
	char label[256];
};

struct sample {
	double time;
	int n;
	struct alloc_row rows[MAX_ALLOCS];
	unsigned long long rss;
	bool reporter;
	unsigned long long rep_current, rep_peak, rep_blocks;
	int nowners, nsites;
	struct group_row owners[MAX_GROUPS], sites[MAX_GROUPS];
};

struct proc {
	long pid;
	struct ctl_conn conn;
	bool connected, gone, have_prev;
	char why[1024];
	struct sample prev, cur;
};

static struct termios saved_tty;
static bool tty_raw;

static void restore_tty(void)
{
	if (tty_raw)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tty);
	tty_raw = false;
}

/* "WORD BYTES BLOCKS LABEL...": the label is the rest of the line. */
static void parse_group(const char *p, struct group_row *rows, int *n)
{
	struct group_row *g = &rows[*n];
	int at = 0;
	size_t len;

	if (*n == MAX_GROUPS ||
	    sscanf(p, "%*s %llu %llu %n", &g->bytes, &g->blocks, &at) < 2 ||
	    !at)
		return;
	p += at;
	len = strcspn(p, "\n");
	if (len >= sizeof(g->label))
		len = sizeof(g->label) - 1;
	memcpy(g->label, p, len);
	g->label[len] = '\0';
	(*n)++;
}

static void parse_sample(const char *body, struct sample *s)
{
	const char *p = body;

	memset(s, 0, sizeof(*s));
	while (p && *p) {
		struct alloc_row *r = &s->rows[s->n];
		int fields;

		if (s->n < MAX_ALLOCS &&
		    (fields = sscanf(
			     p,
			     "allocator %39s %15s %d %lld %lld %llu %llu %lld",
			     r->name, r->device, &r->is_default, &r->blocks,
			     &r->bytes, &r->allocs, &r->frees, &r->peak)) >=
			    7) {
			if (fields == 7)
				r->peak = -1;
			s->n++;
		} else if (sscanf(p, "time %lf", &s->time) == 1)
			;
		else if (sscanf(p, "rss %llu", &s->rss) == 1)
			;
		else if (sscanf(p, "reporter %llu %llu %llu", &s->rep_current,
				&s->rep_peak, &s->rep_blocks) == 3)
			s->reporter = true;
		else if (!strncmp(p, "owner ", 6))
			parse_group(p, s->owners, &s->nowners);
		else if (!strncmp(p, "site ", 5))
			parse_group(p, s->sites, &s->nsites);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
}

static void sample(struct proc *pr)
{
	struct ctl_reply r;

	if (pr->gone)
		return;
	if (!pr->connected) {
		if (ctl_connect(&pr->conn, pr->pid, pr->why, sizeof(pr->why))) {
			pr->gone = true;
			return;
		}
		pr->connected = true;
	}
	if (ctl_request(&pr->conn, "stats", &r) || !r.ok) {
		snprintf(pr->why, sizeof(pr->why), "%.1000s", r.status);
		pr->gone = true;
		ctl_close(&pr->conn);
		free(r.body);
		return;
	}
	pr->prev = pr->cur;
	pr->have_prev = pr->cur.time > 0;
	parse_sample(r.body ? r.body : "", &pr->cur);
	free(r.body);
}

static const char *human(double b, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	int u = 0;

	while (b >= 1024 && u < 4) {
		b /= 1024;
		u++;
	}
	snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", b, unit[u]);
	return buf;
}

static const struct alloc_row *find_row(const struct sample *s,
					const struct alloc_row *r)
{
	for (int i = 0; i < s->n; i++)
		if (!strcmp(s->rows[i].name, r->name))
			return &s->rows[i];
	return NULL;
}

/* The reporter's owners or sites holding the most live bytes. */
static void print_groups(const char *what, const struct group_row *g, int n)
{
	char a[32];

	if (!n)
		return;
	printf("\n  %12s %12s  %s (top %d by live bytes)\n", "LIVE BYTES",
	       "LIVE BLOCKS", what, n);
	for (int i = 0; i < n; i++)
		printf("  %12s %12llu  %s\n",
		       human((double)g[i].bytes, a, sizeof(a)), g[i].blocks,
		       g[i].label);
}

static void print_proc(const struct proc *pr)
{
	const struct sample *s = &pr->cur;
	double dt = pr->have_prev ? s->time - pr->prev.time : 0;
	char a[32], b[32];

	if (pr->gone && !pr->have_prev) {
		printf("PID %ld: %s\n\n", pr->pid, pr->why);
		return;
	}
	printf("PID %ld  resident %s", pr->pid,
	       human((double)s->rss, a, sizeof(a)));
	if (s->reporter)
		printf("  reporter: live %s, peak %s",
		       human((double)s->rep_current, a, sizeof(a)),
		       human((double)s->rep_peak, b, sizeof(b)));
	printf("%s\n", pr->gone ? "  (gone)" : "");
	printf("  %-16s %-9s %-7s %12s %12s %12s %11s %11s\n", "ALLOCATOR",
	       "DEVICE", "DEFAULT", "LIVE BLOCKS", "LIVE BYTES", "PEAK",
	       "ALLOCS/S", "FREES/S");
	for (int i = 0; i < s->n; i++) {
		const struct alloc_row *r = &s->rows[i];
		const struct alloc_row *p =
			pr->have_prev ? find_row(&pr->prev, r) : NULL;
		double ar = -1, fr = -1;

		/* Allocators never used and not a default are left out. */
		if (!r->is_default && !r->allocs && !r->blocks)
			continue;
		if (p && dt > 0) {
			ar = (double)(r->allocs - p->allocs) / dt;
			fr = (double)(r->frees - p->frees) / dt;
		}
		printf("  %-16s %-9s %-7s %12lld %12s %12s", r->name, r->device,
		       r->is_default ? "yes" : "", r->blocks,
		       r->bytes < 0 ? "-"
				    : human((double)r->bytes, a, sizeof(a)),
		       r->peak < 0 ? "-"
				   : human((double)r->peak, b, sizeof(b)));
		if (ar < 0)
			printf(" %11s %11s\n", "-", "-");
		else
			printf(" %11.0f %11.0f\n", ar, fr);
	}
	print_groups("OWNER", s->owners, s->nowners);
	print_groups("SITE", s->sites, s->nsites);
	printf("\n");
}

static void frame(struct proc *procs, int n, bool clear)
{
	if (clear)
		printf("\033[H\033[2J");
	printf("alloy top: %d process%s; every 1 s%s\n\n", n,
	       n == 1 ? "" : "es", clear ? ", q quits" : "");
	for (int i = 0; i < n; i++)
		print_proc(&procs[i]);
	fflush(stdout);
}

/* Wait a second for a key; true when it was q. */
static bool wait_quit(bool keys)
{
	struct pollfd p = { .fd = STDIN_FILENO, .events = POLLIN };
	char ch;

	if (!keys) {
		sleep(1);
		return false;
	}
	if (poll(&p, 1, 1000) > 0 && read(STDIN_FILENO, &ch, 1) == 1)
		return ch == 'q' || ch == 'Q';
	return false;
}

static int run_top(int argc, char **argv)
{
	static struct proc procs[MAX_PROCS];
	long pids[MAX_PROCS];
	bool once = false, keys;
	int n = 0;

	for (int i = 1; i < argc; i++) {
		char *end;
		long pid;

		if (!strcmp(argv[i], "--once")) {
			once = true;
			continue;
		}
		pid = strtol(argv[i], &end, 10);
		if (*end || pid <= 0)
			return cli_usage_error(
				&cmd_top, "unknown option \"%s\"", argv[i]);
		if (n == MAX_PROCS)
			return cli_usage_error(&cmd_top, "at most %d processes",
					       MAX_PROCS);
		pids[n++] = pid;
	}
	if (!n)
		n = ctl_list(pids, MAX_PROCS);
	if (!n) {
		fprintf(stderr,
			"alloy top: no process of this user has a control socket (programs under `alloy run` or `python3 -m alloy` have one)\n");
		return EXIT_PROBLEM;
	}
	for (int i = 0; i < n; i++) {
		procs[i].pid = pids[i];
		procs[i].conn.fd = -1;
		sample(&procs[i]);
	}
	keys = !once && isatty(STDIN_FILENO);
	if (keys && !tcgetattr(STDIN_FILENO, &saved_tty)) {
		struct termios raw = saved_tty;

		raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		raw.c_cc[VMIN] = 0;
		raw.c_cc[VTIME] = 0;
		tty_raw = !tcsetattr(STDIN_FILENO, TCSANOW, &raw);
		atexit(restore_tty);
	}
	for (;;) {
		bool all_gone = true;

		if (wait_quit(keys))
			break;
		for (int i = 0; i < n; i++) {
			sample(&procs[i]);
			all_gone &= procs[i].gone;
		}
		frame(procs, n, keys && isatty(STDOUT_FILENO));
		if (once)
			break;
		if (all_gone) {
			fprintf(stderr, "alloy top: every process is gone\n");
			break;
		}
	}
	restore_tty();
	for (int i = 0; i < n; i++)
		ctl_close(&procs[i].conn);
	if (once)
		for (int i = 0; i < n; i++)
			if (procs[i].gone)
				return EXIT_PROBLEM;
	return 0;
}

const struct cli_command cmd_top = {
	.name = "top",
	.summary = "a live view of running programs' allocators",
	.usage =
		"usage: alloy top [PID...] [--once]\n"
		"\n"
		"Shows, for each process (every one of this user's processes with a\n"
		"control socket when no PID is given), refreshed each second: its\n"
		"resident memory; per allocator used (or default) live blocks and\n"
		"bytes, peak bytes, and allocations and frees a second; and while\n"
		"the reporter is on, its live and peak bytes and the five owners\n"
		"and call sites holding the most live bytes.  Bytes read \"-\" where\n"
		"they are not counted: malloc's blocks are counted by number, and by\n"
		"size only while the reporter is on.  On a terminal, q quits.\n"
		"\n"
		"  --once   print one frame (two samples a second apart) and exit:\n"
		"           1 when a process could not be read\n",
	.run = run_top,
};
