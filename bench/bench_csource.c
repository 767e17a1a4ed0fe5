// SPDX-License-Identifier: MIT
/*
 * bench/bench_csource.c - a C translation unit for `alloy bench front`'s
 * compiler workload: gcc -O2 compiling it is a real program doing real
 * work, and it allocates the way compilers do (trees, hash tables,
 * pass-local bitmaps and vectors, freed in bursts between passes).
 *
 * The text is the same on every run (no random input), so runs and their
 * instruction counts compare.  Four shapes of function rotate, so that
 * the front end, the loop and switch lowering, the inliner and the string
 * built-ins all get work: a walk of a linked list of records through a
 * switch, a table-driven state machine, a string routine calling the C
 * library, and a small recursive helper with arithmetic.  Each function
 * calls the one before it, so the call graph is connected and the
 * inliner weighs every edge.
 */
#include <stdio.h>

#include "bench.h"

static void list_walk(FILE *f, unsigned i)
{
	fprintf(f,
		"struct rec%u { int id; double v[%u]; char name[%u];\n"
		"\tstruct rec%u *next; };\n"
		"double f%u(const void *p, int n)\n"
		"{\n"
		"\tconst struct rec%u *r = p;\n"
		"\tdouble acc = %u.5;\n"
		"\tfor (int k = 0; r && k < n; k++, r = r->next) {\n"
		"\t\tswitch ((r->id + k) %% 5) {\n"
		"\t\tcase 0: acc += sqrt(r->v[0] * k); break;\n"
		"\t\tcase 1: acc -= r->v[1] / (k + 1); break;\n"
		"\t\tcase 2: acc *= strlen(r->name) ? 1.01 : 0.99; break;\n"
		"\t\tcase 3: acc += r->v[%u] * r->id; break;\n"
		"\t\tdefault: acc += f%u(r->next, n - k - 1);\n"
		"\t\t}\n"
		"\t}\n"
		"\treturn acc;\n"
		"}\n",
		i, i % 7 + 2, 16 + i % 5 * 8, i, i, i, i, i % 7 + 1,
		i ? i - 1 : i);
}

static void state_machine(FILE *f, unsigned i)
{
	fprintf(f,
		"static const unsigned char next%u[8][4] = {\n"
		"\t{1, 2, 3, 0}, {2, 3, 4, 1}, {3, 4, 5, 2}, {4, 5, 6, 3},\n"
		"\t{5, 6, 7, 4}, {6, 7, 0, 5}, {7, 0, 1, 6}, {0, 1, 2, %u},\n"
		"};\n"
		"double f%u(const void *p, int n)\n"
		"{\n"
		"\tconst unsigned char *in = p;\n"
		"\tunsigned s = %u, hist[8] = { 0 };\n"
		"\tfor (int k = 0; k < n; k++) {\n"
		"\t\ts = next%u[s][in[k] & 3];\n"
		"\t\thist[s] += in[k] >> 2;\n"
		"\t}\n"
		"\tfor (int k = 1; k < 8; k++)\n"
		"\t\thist[0] += hist[k] * (unsigned)k;\n"
		"\treturn hist[0] + (n > 1 ? f%u(in + 1, n / 2) : 0);\n"
		"}\n",
		i, i % 8, i, i % 8, i, i ? i - 1 : i);
}

static void string_routine(FILE *f, unsigned i)
{
	fprintf(f,
		"double f%u(const void *p, int n)\n"
		"{\n"
		"\tchar buf[%u], *tok, *save = NULL;\n"
		"\tdouble acc = 0;\n"
		"\tsnprintf(buf, sizeof(buf), \"%%s,%%d,%u\", (const char *)p, n);\n"
		"\tfor (tok = strtok_r(buf, \",\", &save); tok;\n"
		"\t     tok = strtok_r(NULL, \",\", &save)) {\n"
		"\t\tacc += strtod(tok, NULL);\n"
		"\t\tif (strchr(tok, '%c'))\n"
		"\t\t\tacc += f%u(tok, n - 1);\n"
		"\t}\n"
		"\treturn acc + (double)strlen(buf);\n"
		"}\n",
		i, 64 + i % 4 * 32, i, 'a' + i % 26, i ? i - 1 : i);
}

static void recursive_math(FILE *f, unsigned i)
{
	fprintf(f,
		"static long g%u(long x, int depth)\n"
		"{\n"
		"\tif (depth <= 0 || x < 2)\n"
		"\t\treturn x;\n"
		"\treturn (x & 1) ? g%u(3 * x + %u, depth - 1)\n"
		"\t\t\t : g%u(x / 2, depth - 1) + %u;\n"
		"}\n"
		"double f%u(const void *p, int n)\n"
		"{\n"
		"\tlong sum = 0;\n"
		"\tfor (int k = 0; k < n; k++)\n"
		"\t\tsum += g%u(k * %u + 1, 12) %% %u;\n"
		"\treturn (double)sum + (p ? f%u(0, n / 3) : 0);\n"
		"}\n",
		i, i, i % 9 + 1, i, i % 5, i, i, i % 13 + 3, i + 7,
		i ? i - 1 : i);
}

void bench_write_c_source(FILE *f, unsigned functions)
{
	static void (*const shape[])(FILE *, unsigned) = {
		list_walk, state_machine, string_routine, recursive_math
	};

	fputs("#include <math.h>\n#include <stdio.h>\n#include <stdlib.h>\n"
	      "#include <string.h>\n\n",
	      f);
	/* Every function is declared first: each calls the one before it. */
	for (unsigned i = 0; i < functions; i++)
		fprintf(f, "double f%u(const void *p, int n);\n", i);
	for (unsigned i = 0; i < functions; i++)
		shape[i % 4](f, i);
	fprintf(f,
		"int main(int argc, char **argv)\n"
		"{\n"
		"\t(void)argc;\n"
		"\tprintf(\"%%f\\n\", f%u(argv[0], 8));\n"
		"\treturn 0;\n"
		"}\n",
		functions ? functions - 1 : 0);
}
