// SPDX-License-Identifier: MIT
/*
 * tests/programs/late_alloy.c - threads that were running before liballoy was
 * loaded (as in a Python process that imports alloy, or any program
 * that dlopens it) allocate through it.  Its fast paths read a pointer
 * in static TLS that starts on a record of "no record yet" (kernel/
 * count.c), copied into each running thread at the load: were it left
 * NULL there, the first allocation of such a thread would crash.  Each
 * thread makes blocks through the DataPtr path, the default path and the
 * plain-pointer path twice (the first makes its record, the second takes
 * the fast path), and every block reaches the default allocator's count
 * and leaves it.  It links nothing of alloy's.
 *
 * Usage: late_alloy LIBALLOY
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <alloy/device.h>
#include <alloy/allocator.h>

#define THREADS 3

static struct {
	int (*alloc_default)(int, size_t, unsigned, struct alloy_data_ptr *);
	int (*alloc)(struct alloy_allocator *, size_t, size_t, unsigned,
		     struct alloy_data_ptr *);
	void (*dp_free)(struct alloy_data_ptr *);
	void *(*malloc)(size_t);
	void (*free)(void *);
	struct alloy_allocator *(*get_default)(int);
	long long (*live_blocks)(const struct alloy_allocator *);
} api;

static pthread_barrier_t loaded;

static int use(void)
{
	struct alloy_allocator *a = api.get_default(ALLOY_DEVICE_CPU);

	for (int i = 0; i < 2; i++) {
		struct alloy_data_ptr dp, named;
		char *p;

		if (api.alloc_default(ALLOY_DEVICE_CPU, 64, 0, &dp) ||
		    api.alloc(a, 100, 64, 0, &named))
			return -1;
		p = api.malloc(80);
		if (!p)
			return -1;
		memset(dp.ptr, 1, 64);
		memset(named.ptr, 2, 100);
		memset(p, 3, 80);
		if (api.live_blocks(a) < 3)
			return -1;
		api.free(p);
		api.dp_free(&named);
		api.dp_free(&dp);
	}
	return 0;
}

static void *thread_main(void *arg)
{
	int *rc = arg;

	pthread_barrier_wait(&loaded);
	*rc = use();
	return NULL;
}

static int find(void *h, void *out, const char *name)
{
	void *f = dlsym(h, name);

	if (!f) {
		fprintf(stderr, "late_alloy: %s: %s\n", name, dlerror());
		return -1;
	}
	memcpy(out, &f, sizeof(f));
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t[THREADS];
	int rc[THREADS] = { 0 }, failed = 0;
	void *h;

	if (argc != 2) {
		fprintf(stderr, "usage: late_alloy LIBALLOY\n");
		return 2;
	}
	pthread_barrier_init(&loaded, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, thread_main, &rc[i]))
			return 1;
	h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "late_alloy: %s\n", dlerror());
		return 1;
	}
	if (find(h, &api.alloc_default, "alloy_alloc_default") ||
	    find(h, &api.alloc, "alloy_alloc") ||
	    find(h, &api.dp_free, "alloy_data_ptr_free") ||
	    find(h, &api.malloc, "alloy_malloc") ||
	    find(h, &api.free, "alloy_free") ||
	    find(h, &api.get_default, "alloy_get_default") ||
	    find(h, &api.live_blocks, "alloy_allocator_live_blocks"))
		return 1;
	pthread_barrier_wait(&loaded);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		failed |= rc[i];
	}
	if (failed || use() ||
	    api.live_blocks(api.get_default(ALLOY_DEVICE_CPU)) != 0) {
		fprintf(stderr, "late_alloy: an allocation failed or a block "
				"was not counted back\n");
		return 1;
	}
	printf("late_alloy: %d threads that predate the load allocated\n",
	       THREADS);
	return 0;
}
