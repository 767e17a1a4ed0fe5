// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_cuda_gpu.c - the CUDA allocators and context on a real GPU.
 *
 * A plain program (not a check suite) so that automake can count it as
 * SKIP: without a device it prints "skipped: no CUDA device" and exits 77,
 * never passing.  With one, it loads the alloy_cuda module by name and
 * checks the caching allocator (reuse, statistics, a block used on a
 * second stream kept until that stream's work is done), the pinned
 * allocator, the context and SyncedMemory against the device, and ends
 * with the caches emptied (so compute-sanitizer's leak check sees
 * nothing); `--bench` then times alloc+free pairs of cuda_caching and
 * cuda_async against cudaMalloc+cudaFree and cudaMallocAsync on one
 * stream, and cuda_host against cudaHostAlloc+cudaFreeHost.
 *
 * scripts/gpu-test.sh builds and runs it (docs/CUDA.md).
 */
#include <errno.h>
#include <stdatomic.h>
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

/* A host function queued on a stream: the stream waits while *gate is 0. */
static void CUDART_CB wait_gate(void *gate)
{
	while (!atomic_load((atomic_int *)gate))
		;
}

/*
 * record_stream on the device: a block used by work queued on a second
 * stream, freed while that work waits behind a closed gate, must not be
 * handed out again until the work is done; afterwards it is.
 */
static void test_record_stream(struct alloy_allocator *cc)
{
	enum { N = 1 << 20 };
	static atomic_int gate;
	struct alloy_data_ptr a, b, c;
	cudaStream_t side;
	void *first;

	atomic_store(&gate, 0);
	CHECK(cudaStreamCreate(&side) == cudaSuccess);
	CHECK(alloy_alloc(cc, N, 0, 0, &a) == 0);
	first = a.ptr;
	CHECK(cudaLaunchHostFunc(side, wait_gate, &gate) == cudaSuccess);
	CHECK(cudaMemsetAsync(a.ptr, 1, N, side) == cudaSuccess);
	CHECK(alloy_cuda_record_stream(&a, side) == 0);
	alloy_data_ptr_free(&a);
	CHECK(alloy_alloc(cc, N, 0, 0, &b) == 0);
	CHECK(b.ptr != first);
	atomic_store(&gate, 1);
	CHECK(cudaStreamSynchronize(side) == cudaSuccess);
	CHECK(alloy_alloc(cc, N, 0, 0, &c) == 0);
	CHECK(c.ptr == first);
	alloy_data_ptr_free(&b);
	alloy_data_ptr_free(&c);
	CHECK(cudaStreamDestroy(side) == cudaSuccess);
	printf("ok record_stream: kept while the other stream's work waits, reused after\n");
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

/* ns per pair of n alloy_alloc + alloy_data_ptr_free of size on a. */
static double alloy_pairs(struct alloy_allocator *a, size_t size, long n)
{
	double t0 = now_ns();

	for (long k = 0; k < n; k++) {
		struct alloy_data_ptr dp;

		if (alloy_alloc(a, size, 0, 0, &dp)) {
			printf("FAIL bench: %s\n", alloy_last_error());
			failures++;
			return 0;
		}
		alloy_data_ptr_free(&dp);
	}
	return (now_ns() - t0) / (double)n;
}

/*
 * Every stream-ordered figure on one created stream (alloy's current
 * stream is set to it): the legacy default stream synchronises with the
 * others and would time something else.
 */
static void bench(struct alloy_allocator *cc)
{
	static const size_t sizes[] = { 512, 65536, 4 << 20, 64 << 20 };
	static const size_t host_sizes[] = { 4096, 1 << 20, 16 << 20 };
	struct alloy_allocator *as = alloy_find_allocator("cuda_async");
	struct alloy_allocator *ch = alloy_find_allocator("cuda_host");
	cudaStream_t s;

	cudaStreamCreate(&s);
	alloy_cuda_set_stream(s);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		long n = 20000, nm = 500;
		double t0, c, m, a, aa = 0;
		void *p;

		c = alloy_pairs(cc, sizes[i], n);
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
			/*
			 * As the raw loop: until the stream has done the frees.
			 */
			t0 = now_ns();
			alloy_pairs(as, sizes[i], n);
			cudaStreamSynchronize(s);
			aa = (now_ns() - t0) / (double)n;
		}
		printf("bench %9zu B: cuda_caching %8.1f ns/pair, cudaMalloc+cudaFree %10.1f ns/pair, "
		       "cudaMallocAsync+cudaFreeAsync %8.1f ns/pair, alloy cuda_async %8.1f ns/pair\n",
		       sizes[i], c, m, a, aa);
	}
	for (size_t i = 0; ch && i < sizeof(host_sizes) / sizeof(host_sizes[0]);
	     i++) {
		long n = 20000, nh = 200;
		double t0, c, h;
		void *p;

		c = alloy_pairs(ch, host_sizes[i], n);
		t0 = now_ns();
		for (long k = 0; k < nh; k++) {
			cudaHostAlloc(&p, host_sizes[i], cudaHostAllocDefault);
			cudaFreeHost(p);
		}
		h = (now_ns() - t0) / (double)nh;
		printf("bench %9zu B pinned: cuda_host %8.1f ns/pair, cudaHostAlloc+cudaFreeHost %10.1f ns/pair\n",
		       host_sizes[i], c, h);
	}
	alloy_cuda_set_stream(NULL);
	cudaStreamDestroy(s);
}

/*
 * Expandable segments on the driver's virtual memory: blocks of one
 * range, written and read back through the runtime, the range grown
 * past its first piece, trimmed to nothing at the end.
 */
static void test_expandable(struct alloy_allocator *cc)
{
	const struct alloy_allocator_ops *o = alloy_allocator_ops(cc);
	struct alloy_cuda_stats st = ALLOY_CUDA_STATS_INIT;
	struct alloy_data_ptr a, b;
	static unsigned char back[1 << 20];

	CHECK(alloy_cuda_caching_empty_cache(cc) >= 0);
	CHECK(o->set_option(alloy_allocator_ctx(cc), "expandable_segments",
			    "1") == 0);
	CHECK(alloy_alloc(cc, 3 << 20, 0, 0, &a) == 0);
	CHECK(alloy_alloc(cc, 30 << 20, 0, 0, &b) == 0);
	CHECK((char *)b.ptr == (char *)a.ptr + (3 << 20));
	CHECK(cudaMemset(b.ptr, 7, 30 << 20) == cudaSuccess);
	CHECK(cudaMemcpy(back, (char *)b.ptr + (29 << 20), sizeof(back),
			 cudaMemcpyDeviceToHost) == cudaSuccess);
	CHECK(back[0] == 7 && back[sizeof(back) - 1] == 7);
	CHECK(alloy_cuda_caching_stats(cc, 0, &st) == 0);
	CHECK(st.reserved_bytes[ALLOY_CUDA_POOL_LARGE].current == 40 << 20);
	CHECK(st.num_maps == 2 && st.expandable_address_bytes > 0);
	alloy_data_ptr_free(&a);
	alloy_data_ptr_free(&b);
	CHECK(alloy_cuda_caching_empty_cache(cc) == 40 << 20);
	CHECK(alloy_cuda_caching_stats(cc, 0, &st) == 0);
	CHECK(st.expandable_address_bytes == 0);
	CHECK(o->set_option(alloy_allocator_ctx(cc), "expandable_segments",
			    "0") == 0);
}

/*
 * A CUDA graph captured on a stream whose allocations go to a graph
 * pool: the capture stays valid (no free, no synchronisation inside),
 * the graph replays, and its block is not handed out after it.
 */
static void test_graph_pool(struct alloy_allocator *cc)
{
	struct alloy_data_ptr g, x, y;
	cudaStream_t s;
	cudaGraph_t graph = NULL;
	cudaGraphExec_t exec = NULL;
	unsigned char v = 0;
	void *gp;

	CHECK(cudaStreamCreate(&s) == cudaSuccess);
	alloy_cuda_set_stream(s);
	CHECK(alloy_alloc(cc, 4 << 20, 0, 0, &x) == 0); /* cached before */
	alloy_data_ptr_free(&x);
	CHECK(alloy_cuda_caching_begin_pool(cc, 0, s, 42) == 0);
	CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed) ==
	      cudaSuccess);
	CHECK(alloy_alloc(cc, 4 << 20, 0, 0, &g) == 0);
	gp = g.ptr;
	CHECK(cudaMemsetAsync(g.ptr, 9, 4 << 20, s) == cudaSuccess);
	CHECK(alloy_cuda_caching_empty_cache(cc) == 0);
	CHECK(cudaStreamEndCapture(s, &graph) == cudaSuccess);
	CHECK(alloy_cuda_caching_end_pool(cc, 0, s) == 0);
	CHECK(graph && cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
	for (int i = 0; i < 3; i++)
		CHECK(cudaGraphLaunch(exec, s) == cudaSuccess);
	CHECK(cudaStreamSynchronize(s) == cudaSuccess);
	CHECK(cudaMemcpy(&v, (char *)gp + 12345, 1, cudaMemcpyDeviceToHost) ==
	      cudaSuccess);
	CHECK(v == 9);
	/* Freed, the graph's block stays the pool's. */
	alloy_data_ptr_free(&g);
	CHECK(alloy_alloc(cc, 4 << 20, 0, 0, &y) == 0);
	CHECK(y.ptr != gp);
	alloy_data_ptr_free(&y);
	cudaGraphExecDestroy(exec);
	cudaGraphDestroy(graph);
	CHECK(alloy_cuda_caching_release_pool(cc, 0, 42) == 0);
	alloy_cuda_set_stream(NULL);
	CHECK(cudaStreamDestroy(s) == cudaSuccess);
}

/* Give every cached block back, so that nothing is left at exit. */
static void empty_caches(struct alloy_allocator *cc)
{
	struct alloy_allocator *ch = alloy_find_allocator("cuda_host");

	CHECK(alloy_cuda_caching_empty_cache(cc) >= 0);
	if (ch)
		CHECK(alloy_allocator_trim(ch) >= 0);
	CHECK(cudaDeviceSynchronize() == cudaSuccess);
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
	test_record_stream(cc);
	test_context_and_copies();
	test_pinned_and_syncedmem();
	test_oom(cc);
	test_async();
	test_expandable(cc);
	test_graph_pool(cc);
	if (argc > 1 && !strcmp(argv[1], "--bench"))
		bench(cc);
	empty_caches(cc);
	printf("%s: %d failure(s)\n", argv[0], failures);
	return failures ? 1 : 0;
}
