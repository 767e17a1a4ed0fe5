// SPDX-License-Identifier: MIT
/*
 * tests/test_cuda_gpu.c - the CUDA allocators and context on a real GPU.
 *
 * A plain program (not a check suite) so that automake can count it as
 * SKIP: without a device it prints "skipped: no CUDA device" and exits 77,
 * never passing.  With one, it loads the alloy_cuda module by name and
 * checks the caching allocator, the pinned allocator, the context and
 * SyncedMemory against the device; `--bench` then times alloc+free pairs
 * of cuda_caching against cudaMalloc+cudaFree and cudaMallocAsync.
 *
 * scripts/gpu-test.sh builds and runs it (docs/CUDA.md).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include <alloy/alloy.h>

#define SKIP 77

static int failures;

#define CHECK(cond)                                                         \
	do {                                                                \
		if (!(cond)) {                                              \
			printf("FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, \
			       #cond, alloy_last_error());                  \
			failures++;                                         \
		}                                                           \
	} while (0)

static const struct alloy_device gpu = { ALLOY_DEVICE_CUDA, 0 };

static void test_caching(struct alloy_allocator *cc)
{
	struct alloy_cuda_stats st = { .size = sizeof(st),
				       .version = ALLOY_CUDA_STATS_VERSION };
	struct alloy_data_ptr a, b;
	void *first;

	CHECK(alloy_alloc(cc, 1000, 0, 0, &a) == 0);
	first = a.ptr;
	alloy_data_ptr_free(&a);
	CHECK(alloy_alloc(cc, 1000, 0, 0, &b) == 0);
	CHECK(b.ptr == first);
	alloy_data_ptr_free(&b);
	CHECK(alloy_cuda_caching_stats(cc, 0, &st) == 0);
	CHECK(st.num_device_alloc == 1);
	CHECK(st.reserved_bytes[ALLOY_CUDA_POOL_ALL].current == 2 << 20);
	CHECK(alloy_cuda_caching_empty_cache(cc) == 2 << 20);
	printf("ok caching: reuse, stats, empty_cache\n");
}

static void test_context_and_copies(void)
{
	enum { N = 1 << 20 };
	struct alloy_data_ptr d1, d2;
	unsigned char *h = malloc(N), *back = malloc(N);

	for (int i = 0; i < N; i++)
		h[i] = (unsigned char)(i * 7);
	CHECK(alloy_context_new(gpu, N, &d1) == 0);
	CHECK(alloy_context_new(gpu, N, &d2) == 0);
	CHECK(alloy_copy_bytes(N, h, ALLOY_CPU, d1.ptr, gpu) == 0);
	CHECK(alloy_copy_bytes(N, d1.ptr, gpu, d2.ptr, gpu) == 0);
	CHECK(alloy_copy_bytes(N, d2.ptr, gpu, back, ALLOY_CPU) == 0);
	CHECK(memcmp(h, back, N) == 0);
	CHECK(alloy_context_synchronize(gpu) == 0);
	alloy_data_ptr_free(&d1);
	alloy_data_ptr_free(&d2);
	free(h);
	free(back);
	printf("ok context: H2D, D2D, D2H round trip\n");
}

static void test_pinned_and_syncedmem(void)
{
	struct alloy_syncedmem *m;
	unsigned char *p;
	const unsigned char *q;

	CHECK(alloy_set_default_by_name(ALLOY_DEVICE_CUDA_HOST, "cuda_host") ==
	      0);
	CHECK(alloy_syncedmem_create(4096, 0, &m) == 0);
	p = alloy_syncedmem_mutable_cpu_data(m);
	CHECK(p != NULL);
	CHECK(alloy_syncedmem_host_type(m) == ALLOY_DEVICE_CUDA_HOST);
	memset(p, 5, 4096);
	CHECK(alloy_syncedmem_async_gpu_push(m, NULL) == 0);
	CHECK(alloy_syncedmem_mutable_gpu_data(m) != NULL);
	CHECK(alloy_syncedmem_head(m) == ALLOY_SYNCED_HEAD_AT_GPU);
	q = alloy_syncedmem_cpu_data(m);
	CHECK(q && q[0] == 5 && q[4095] == 5);
	alloy_syncedmem_destroy(m);
	printf("ok pinned + SyncedMemory\n");
}

static void test_oom(struct alloy_allocator *cc)
{
	struct alloy_data_ptr x;
	size_t fr, total;

	cudaMemGetInfo(&fr, &total);
	CHECK(alloy_alloc(cc, total * 2, 0, 0, &x) == -ENOMEM);
	CHECK(strstr(alloy_last_error(), "alloy_alloc") != NULL);
	printf("ok out-of-memory refused cleanly\n");
}

static void test_async(void)
{
	struct alloy_allocator *as = alloy_find_allocator("cuda_async");
	struct alloy_data_ptr x;

	CHECK(as != NULL);
	if (!as)
		return;
	CHECK(alloy_alloc(as, 1 << 20, 0, ALLOY_ALLOC_ZERO, &x) == 0);
	alloy_data_ptr_free(&x);
	CHECK(cudaDeviceSynchronize() == cudaSuccess);
	printf("ok cuda_async\n");
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void bench(struct alloy_allocator *cc)
{
	static const size_t sizes[] = { 512, 65536, 4 << 20, 64 << 20 };
	cudaStream_t s;

	cudaStreamCreate(&s);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		long n = 20000, nm = 500;
		struct alloy_allocator *as = alloy_find_allocator("cuda_async");
		double t0, c, m, a, aa = 0;
		void *p;

		t0 = now_ns();
		for (long k = 0; k < n; k++) {
			struct alloy_data_ptr dp;

			alloy_alloc(cc, sizes[i], 0, 0, &dp);
			alloy_data_ptr_free(&dp);
		}
		c = (now_ns() - t0) / (double)n;
		t0 = now_ns();
		for (long k = 0; k < nm; k++) {
			cudaMalloc(&p, sizes[i]);
			cudaFree(p);
		}
		m = (now_ns() - t0) / (double)nm;
		t0 = now_ns();
		for (long k = 0; k < n; k++) {
			cudaMallocAsync(&p, sizes[i], s);
			cudaFreeAsync(p, s);
		}
		cudaStreamSynchronize(s);
		a = (now_ns() - t0) / (double)n;
		if (as) {
			t0 = now_ns();
			for (long k = 0; k < n; k++) {
				struct alloy_data_ptr dp;

				alloy_alloc(as, sizes[i], 0, 0, &dp);
				alloy_data_ptr_free(&dp);
			}
			cudaDeviceSynchronize();
			aa = (now_ns() - t0) / (double)n;
		}
		printf("bench %9zu B: cuda_caching %8.1f ns/pair, cudaMalloc+cudaFree %10.1f ns/pair, "
		       "cudaMallocAsync+cudaFreeAsync %8.1f ns/pair, alloy cuda_async %8.1f ns/pair\n",
		       sizes[i], c, m, a, aa);
	}
	cudaStreamDestroy(s);
}

int main(int argc, char **argv)
{
	struct alloy_allocator *cc = alloy_request_allocator("cuda_caching");

	if (!cc) {
		printf("skipped: no CUDA device (%s)\n", alloy_last_error());
		return SKIP;
	}
	if (alloy_set_default(ALLOY_DEVICE_CUDA, cc)) {
		printf("FAIL: cannot make cuda_caching the default: %s\n",
		       alloy_last_error());
		return 1;
	}
	test_caching(cc);
	test_context_and_copies();
	test_pinned_and_syncedmem();
	test_oom(cc);
	test_async();
	if (argc > 1 && !strcmp(argv[1], "--bench"))
		bench(cc);
	printf("%s: %d failure(s)\n", argv[0], failures);
	return failures ? 1 : 0;
}
