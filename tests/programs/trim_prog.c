// SPDX-License-Identifier: MIT
/*
 * tests/programs/trim_prog.c - malloc_trim after freeing many small blocks
 * gives the memory back (tests/cli/test_front_process.sh runs it with and
 * without alloy on each backend and compares what it prints).  One block made
 * last stays live, so that glibc cannot give the memory back by itself
 * at free time and only malloc_trim can.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK  200
#define TOTAL  ((size_t)160 << 20)
#define NBLOCK (TOTAL / BLOCK)

static size_t resident_bytes(void)
{
	unsigned long size, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%lu %lu", &size, &resident) != 2)
			resident = 0;
		fclose(f);
	}
	return resident * (size_t)sysconf(_SC_PAGESIZE);
}

int main(void)
{
	char **blocks = calloc(NBLOCK, sizeof(*blocks));
	size_t before, after;
	void *pin;
	int rc;

	if (!blocks)
		return 1;
	for (size_t i = 0; i < NBLOCK; i++) {
		blocks[i] = malloc(BLOCK);
		if (!blocks[i])
			return 1;
		memset(blocks[i], 1, BLOCK);
	}
	pin = malloc(BLOCK);
	for (size_t i = 0; i < NBLOCK; i++)
		free(blocks[i]);
	before = resident_bytes();
	rc = malloc_trim(0);
	after = resident_bytes();
	printf("malloc_trim returned %d\n", rc);
	/*
	 * A quarter: a backend may have given some back before the call
	 * (jemalloc's decay) or keep some cached after it (mimalloc).
	 */
	printf("it gave back at least a quarter of what was freed: %s\n",
	       before > after && before - after >= TOTAL / 4 ? "yes" : "no");
	fprintf(stderr, "resident before %zu MiB, after %zu MiB\n",
		before >> 20, after >> 20);
	free(pin);
	free(blocks);
	return 0;
}
