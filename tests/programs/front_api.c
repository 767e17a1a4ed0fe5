// SPDX-License-Identifier: MIT
/*
 * tests/programs/front_api.c - the malloc family's contract, checked the same
 * way with glibc's malloc and under alloy's LD_PRELOAD front
 * (tests/cli/test_front.sh runs it both ways).
 *
 * It links nothing of alloy's: under the front it finds liballoy with
 * dlsym, and then also checks that the blocks are alloy's and that the
 * blocks it allocated before the front was ready (from .preinit_array,
 * which runs before any library's constructor) are served by the
 * bootstrap allocator and handled by every entry point later.
 *
 * Usage: front_api            the contract; exit 0 when all holds
 *        front_api bad        free and realloc of pointers malloc never
 *                             made, and a double free (front only)
 */
/* What this program does on purpose, the compiler warns about. */
#pragma GCC diagnostic ignored "-Wpragmas"
#pragma GCC diagnostic ignored "-Wfree-nonheap-object"
#pragma GCC diagnostic ignored "-Walloc-size-larger-than="
#pragma GCC diagnostic ignored "-Wuse-after-free"
#include <dlfcn.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define CHECK(cond)                                                   \
	do {                                                          \
		if (!(cond)) {                                        \
			fprintf(stderr, "front_api:%d: failed: %s\n", \
				__LINE__, #cond);                     \
			failures++;                                   \
		}                                                     \
	} while (0)

/* liballoy's functions, when the front brought it in. */
static bool (*plain_owns)(const void *);
static unsigned long long (*bad_frees)(void);

static bool aligned(const void *p, size_t a)
{
	return ((uintptr_t)p & (a - 1)) == 0;
}

/* ---- blocks made before any constructor ran --------------------------- */

static char *early_plain, *early_zero, *early_aligned, *early_grown;

static void before_constructors(void)
{
	early_plain = malloc(100);
	early_zero = calloc(10, 10);
	early_aligned = memalign(64, 100);
	early_grown = malloc(50);
	if (early_plain)
		memset(early_plain, 'p', 100);
	if (early_grown)
		memset(early_grown, 'g', 50);
}

__attribute__((section(".preinit_array"),
	       used)) static void (*const preinit)(void) = before_constructors;

static void early_blocks(void)
{
	char *p;

	CHECK(early_plain && early_zero && early_aligned && early_grown);
	if (!early_plain || !early_zero || !early_aligned || !early_grown)
		return;
	for (int i = 0; i < 100; i++)
		CHECK(early_zero[i] == 0);
	CHECK(aligned(early_aligned, 64));
	CHECK(malloc_usable_size(early_plain) >= 100);
	p = realloc(early_grown, 5000);
	CHECK(p != NULL);
	if (p) {
		for (int i = 0; i < 50; i++)
			CHECK(p[i] == 'g');
		if (plain_owns) /* grown into alloy's memory */
			CHECK(plain_owns(p));
	}
	free(p);
	CHECK(early_plain[99] == 'p');
	free(early_plain);
	free(early_zero);
	free(early_aligned);
}

/* ---- the contract ----------------------------------------------------- */

static void plain_sizes(void)
{
	void *a = malloc(0), *b = malloc(0);

	CHECK(a && b && a != b);
	free(a);
	free(b);
	errno = 0;
	CHECK(malloc(SIZE_MAX) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(malloc(PTRDIFF_MAX) == NULL && errno == ENOMEM);
	a = malloc(1000);
	CHECK(a && aligned(a, 16));
	CHECK(malloc_usable_size(a) >= 1000);
	CHECK(malloc_usable_size(NULL) == 0);
	if (plain_owns)
		CHECK(plain_owns(a));
	/* free keeps errno (glibc since 2.33, and POSIX). */
	errno = EEXIST;
	free(a);
	CHECK(errno == EEXIST);
}

/* A second thread's free keeps its own errno, and leaves the first's. */
static void *free_in_thread(void *arg)
{
	void *p = malloc(100);

	(void)arg;
	errno = EPERM;
	free(p);
	return (void *)(intptr_t)(errno == EPERM);
}

static void errno_per_thread(void)
{
	pthread_t t;
	void *kept = NULL;

	errno = EEXIST;
	free(malloc(10));
	CHECK(pthread_create(&t, NULL, free_in_thread, NULL) == 0);
	CHECK(pthread_join(t, &kept) == 0);
	CHECK(kept == (void *)1);
	CHECK(errno == EEXIST);
}

static void zeroed(void)
{
	unsigned char *p = malloc(4096), *q;
	size_t n;

	CHECK(p != NULL);
	memset(p, 0xab, 4096);
	free(p);
	q = calloc(64, 64);
	CHECK(q != NULL);
	n = 0;
	for (int i = 0; q && i < 4096; i++)
		n += q[i] != 0;
	CHECK(n == 0);
	free(q);
	q = calloc(0, 0);
	CHECK(q != NULL);
	free(q);
	errno = 0;
	CHECK(calloc(SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
	errno = 0;
	CHECK(calloc((size_t)1 << 33, (size_t)1 << 33) == NULL &&
	      errno == ENOMEM);
}

static void resizing(void)
{
	char *p = realloc(NULL, 10), *q;

	CHECK(p != NULL);
	if (!p)
		return;
	memcpy(p, "0123456789", 10);
	q = realloc(p, 100000);
	CHECK(q && !memcmp(q, "0123456789", 10));
	p = q ? q : p;
	q = realloc(p, 4);
	CHECK(q && !memcmp(q, "0123", 4));
	p = q ? q : p;
	errno = 0;
	CHECK(realloc(p, SIZE_MAX) == NULL && errno == ENOMEM);
	CHECK(!memcmp(p, "0123", 4)); /* untouched by the failure */
	errno = 0;
	CHECK(reallocarray(p, SIZE_MAX / 2, 3) == NULL && errno == ENOMEM);
	q = reallocarray(p, 3, 8);
	CHECK(q && !memcmp(q, "0123", 4));
	p = q ? q : p;
	/* realloc to 0 frees and returns NULL (glibc), errno untouched. */
	errno = 0;
	CHECK(realloc(p, 0) == NULL && errno == 0);
	p = realloc(NULL, 0); /* malloc(0) */
	CHECK(p != NULL);
	free(p);
}

static void alignments(void)
{
	void *p = (void *)&p, *keep = p;
	int rc;

	for (size_t a = sizeof(void *); a <= 65536; a *= 2) {
		rc = posix_memalign(&p, a, 100);
		CHECK(rc == 0 && aligned(p, a));
		if (!rc)
			free(p);
	}
	p = keep;
	errno = 0;
	CHECK(posix_memalign(&p, 0, 8) == EINVAL && p == keep);
	CHECK(posix_memalign(&p, 4, 8) == EINVAL && p == keep);
	CHECK(posix_memalign(&p, 24, 8) == EINVAL && p == keep);
	CHECK(posix_memalign(&p, 64, SIZE_MAX) == ENOMEM && p == keep);

	p = aligned_alloc(256, 300);
	CHECK(p && aligned(p, 256));
	free(p);

	p = memalign(24, 10); /* rounded up to 32 */
	CHECK(p && aligned(p, 32));
	free(p);
	p = memalign(0, 10);
	CHECK(p != NULL);
	free(p);
	errno = 0;
	CHECK(memalign(SIZE_MAX / 2 + 2, 10) == NULL && errno == EINVAL);

	p = valloc(10);
	CHECK(p && aligned(p, (size_t)getpagesize()));
	free(p);
	p = pvalloc(10);
	CHECK(p && aligned(p, (size_t)getpagesize()) &&
	      malloc_usable_size(p) >= (size_t)getpagesize());
	free(p);
	errno = 0;
	CHECK(pvalloc(SIZE_MAX - 100) == NULL && errno == ENOMEM);
}

/*
 * aligned_alloc with an alignment that is not a power of two: EINVAL
 * under the front and from glibc 2.38 on; older glibc rounds it up.
 */
static void aligned_alloc_refuses(void)
{
	int major = 0, minor = 0;

	sscanf(gnu_get_libc_version(), "%d.%d", &major, &minor);
	if (!plain_owns && major * 100 + minor < 238)
		return;
	errno = 0;
	CHECK(aligned_alloc(3, 16) == NULL && errno == EINVAL);
	errno = 0;
	CHECK(aligned_alloc(0, 16) == NULL && errno == EINVAL);
}

/* Pointers malloc never made: refused, reported, survived. */
static int bad_pointers(void)
{
	static char not_malloc[256] __attribute__((aligned(64)));
	char *p = malloc(32);
	unsigned long long before = bad_frees();

	free(not_malloc + 64);
	errno = 0;
	CHECK(realloc(not_malloc + 64, 100) == NULL && errno == EINVAL);
	free(p);
	free(p);
	CHECK(bad_frees() >= before); /* counted by the front or alloy */
	p = malloc(64);		      /* and alloy still serves */
	CHECK(p && plain_owns(p));
	free(p);
	printf("front_api: bad pointers survived\n");
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	*(void **)&plain_owns = dlsym(RTLD_DEFAULT, "alloy__front_owns");
	*(void **)&bad_frees = dlsym(RTLD_DEFAULT, "alloy_plain_bad_frees");
	if (argc > 1 && !strcmp(argv[1], "bad")) {
		if (!plain_owns || !bad_frees) {
			printf("skipped: bad pointers are checked under the front only\n");
			return 77;
		}
		return bad_pointers();
	}
	early_blocks();
	plain_sizes();
	errno_per_thread();
	zeroed();
	resizing();
	alignments();
	aligned_alloc_refuses();
	printf("front_api: %s, %s\n", plain_owns ? "front" : "glibc",
	       failures ? "FAILED" : "all held");
	return failures ? 1 : 0;
}
