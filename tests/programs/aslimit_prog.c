// SPDX-License-Identifier: MIT
/*
 * tests/programs/aslimit_prog.c - how much a program can allocate under its
 * address-space limit (ulimit -v): blocks of the size given until malloc
 * says no; prints the MiB it got.  tests/cli/test_front_process.sh compares
 * the figure with and without alloy.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	size_t block = argc > 1 ? strtoul(argv[1], NULL, 0) : (size_t)1 << 20;
	size_t total = 0;

	if (!block)
		return 2;
	for (;;) {
		char *p = malloc(block);

		if (!p)
			break;
		p[0] = 1; /* touched, not filled: the limit is on addresses */
		total += block;
	}
	printf("%zu\n", total >> 20);
	return 0;
}
