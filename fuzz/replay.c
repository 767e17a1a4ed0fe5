// SPDX-License-Identifier: MIT
/*
 * fuzz/replay.c - run a fuzz target over files without libFuzzer.
 *
 * Linked with a target instead of -fsanitize=fuzzer, it feeds each file
 * named on the command line to LLVMFuzzerTestOneInput once, so that the
 * seed corpus and every crash ever found (kept in fuzz/corpus/<target>/)
 * are regression tests of every build, gcc included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		FILE *f = fopen(argv[i], "rb");
		uint8_t *buf;
		long n;

		if (!f || fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET)) {
			fprintf(stderr, "replay: cannot read %s\n", argv[i]);
			return 1;
		}
		buf = malloc((size_t)n + 1);
		if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
			fprintf(stderr, "replay: cannot read %s\n", argv[i]);
			return 1;
		}
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)n);
		free(buf);
	}
	printf("replay: %d inputs, no failure\n", argc - 1);
	return 0;
}
