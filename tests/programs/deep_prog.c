// SPDX-License-Identifier: MIT
/*
 * tests/programs/deep_prog.c - a program whose flame graph is tall and
 * mostly empty, as an interpreter's is, for tests/cli/test_flamegraph.sh:
 * the widest site (wide_site, 4 MiB) is two calls from main, a narrow
 * one (64 KiB) is 120 calls deep through a recursive function, and many
 * small sites (FANS distinct call paths of 64 bytes each, through four
 * of sixteen functions) make a tree of some 70,000 frames, too large to
 * carry in a page whole.  Everything is
 * live at the peak.  Run with ALLOY_CONF=trace:...,backtrace:1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <alloy/alloy.h>

#define KEEP __attribute__((noinline, noclone))
/* Calls are not the last thing a function does: no frame is skipped. */
#define NO_TAIL() __asm__ volatile("" ::: "memory")

#define DEEP 120
#define FANS 65536

static void *wide, *narrow, *fans[FANS];

static KEEP void wide_site(void)
{
	wide = alloy_malloc(4 << 20);
	NO_TAIL();
}

static KEEP void narrow_site(void)
{
	narrow = alloy_malloc(64 << 10);
	NO_TAIL();
}

static KEEP void recurse(int n)
{
	if (n)
		recurse(n - 1);
	else
		narrow_site();
	NO_TAIL();
}

/* Sixteen functions, so that fan paths differ by name. */
#define FAN(k)                                 \
	static KEEP void fan##k(int i, int d); \
	static KEEP void fan##k(int i, int d)  \
	{                                      \
		fan_step(i, d);                \
		NO_TAIL();                     \
	}
static void fan_step(int i, int d);
FAN(0)
FAN(1)
FAN(2)
FAN(3)
FAN(4)
FAN(5)
FAN(6)
FAN(7)
FAN(8)
FAN(9)
FAN(10)
FAN(11)
FAN(12)
FAN(13)
FAN(14)
FAN(15)

static void (*const fan[16])(int, int) = {
	fan0, fan1, fan2,  fan3,  fan4,	 fan5,	fan6,  fan7,
	fan8, fan9, fan10, fan11, fan12, fan13, fan14, fan15,
};

/* Path i: its digits in base 16, one function per digit. */
static KEEP void fan_step(int i, int d)
{
	int digit = (i >> (4 * d)) & 15;

	if (d < 4)
		fan[digit](i, d + 1);
	else
		fans[i] = alloy_malloc(64);
	NO_TAIL();
}

int main(void)
{
	wide_site();
	recurse(DEEP);
	for (int i = 0; i < FANS; i++)
		fan_step(i, 0);
	printf("%d\n", wide && narrow && fans[FANS - 1]);
	alloy_free(wide);
	alloy_free(narrow);
	for (int i = 0; i < FANS; i++)
		alloy_free(fans[i]);
	return 0;
}
