// SPDX-License-Identifier: MIT
/*
 * tests/programs/frames_prog.c - a plain C program with one known call
 * site, for tests/cli/test_frames.sh: built as a PIE and as an executable
 * linked at a fixed address (-no-pie), run under `alloy run` with
 * backtrace:1.  It uses only libc's malloc: the front serves it.
 *
 * grow_table makes the widest block (1 MiB), called from main, and
 * holds it past the peak.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP __attribute__((noinline, noclone))

/* Calls are not the last thing a function does: no frame is skipped. */
#define NO_TAIL() __asm__ volatile("" ::: "memory")

static char *table;

KEEP void grow_table(void)
{
	table = malloc(1 << 20);
	NO_TAIL();
}

int main(void)
{
	grow_table();
	if (!table)
		return 1;
	memset(table, 1, 1 << 20);
	printf("%d\n", table[12345]);
	free(table);
	return 0;
}
