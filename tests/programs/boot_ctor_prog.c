// SPDX-License-Identifier: MIT
/*
 * tests/programs/boot_ctor_prog.c - a program linked with
 * tests/programs/boot_ctor_lib.so: its constructor's block keeps every usable
 * byte across realloc, and fork works while that library's fork handlers free
 * and allocate (tests/cli/test_front_process.sh runs it with and without alloy
 * and compares what it prints).
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot_ctor_lib.h"

#define FORKS 4

int main(void)
{
	size_t usable = boot_ctor_usable();
	long kept = boot_ctor_grow(4096);
	int forked = 0;

	printf("constructor block: usable bytes kept by realloc: %s\n",
	       kept == (long)usable ? "all" : "lost some");
	for (int i = 0; i < FORKS; i++) {
		int status;
		pid_t pid = fork();

		if (pid < 0)
			break;
		if (pid == 0) {
			void *p = malloc(100);

			_exit(p && boot_ctor_holds() ? 0 : 1);
		}
		if (waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0 && boot_ctor_holds())
			forked++;
	}
	printf("forks that worked on both sides: %d of %d\n", forked, FORKS);
	for (int i = 0; i < 1000; i++)
		free(malloc(64 + i)); /* counted by the report */
	return 0;
}
