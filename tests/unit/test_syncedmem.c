// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_syncedmem.c - SyncedMemory on the simulated device: every
 * head transition (the behaviours Caffe's test_syncedmem checks), zero
 * fill on first touch, caller memory, async push, pinned host memory, and
 * allocations from the registry's current allocators; and the cuda
 * context those rest on (copies, async copies, tensor copy_from).
 */
#include <string.h>

#include "testutil.h"

#define N 4096
static const struct alloy_device gpu = { ALLOY_DEVICE_CUDA, 0 };

/* The simulated device as cuda, with caching allocators as defaults. */
static void setup_sim(bool pinned)
{
	ck_assert_ok(alloy_cuda_sim_register_context(alloy_cuda_sim_builtin()));
	ck_assert_ok(alloy_set_default_by_name(ALLOY_DEVICE_CUDA,
					       "cuda_caching_sim"));
	if (pinned)
		ck_assert_ok(alloy_set_default_by_name(ALLOY_DEVICE_CUDA_HOST,
						       "cuda_host_sim"));
}

static struct alloy_syncedmem *make(size_t size)
{
	struct alloy_syncedmem *m;

	ck_assert_ok(alloy_syncedmem_create(size, 0, &m));
	return m;
}

/* Every byte of the device copy, read back through the context. */
static void check_gpu_bytes(const void *dev, int value)
{
	unsigned char host[N];

	ck_assert_ok(alloy_copy_bytes(N, dev, gpu, host, ALLOY_CPU));
	for (int i = 0; i < N; i++)
		ck_assert_uint_eq(host[i], (unsigned)value);
}

static void check_bytes(const void *p, int value)
{
	for (int i = 0; i < N; i++)
		ck_assert_uint_eq(((const unsigned char *)p)[i],
				  (unsigned)value);
}

static void write_gpu(void *dev, int value)
{
	unsigned char host[N];

	memset(host, value, N);
	ck_assert_ok(alloy_copy_bytes(N, host, ALLOY_CPU, dev, gpu));
}

START_TEST(initialization)
{
	struct alloy_syncedmem *m = make(10 * sizeof(float));

	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_UNINITIALIZED);
	ck_assert_uint_eq(alloy_syncedmem_size(m), 10 * sizeof(float));
	alloy_syncedmem_destroy(m);
	ck_assert_int_eq(alloy_syncedmem_create(1, -1, &m), -EINVAL);
}
END_TEST

START_TEST(allocation_cpu_gpu)
{
	struct alloy_syncedmem *m;

	setup_sim(false);
	m = make(10);
	ck_assert_ptr_nonnull(alloy_syncedmem_cpu_data(m));
	ck_assert_ptr_nonnull(alloy_syncedmem_gpu_data(m));
	ck_assert_ptr_nonnull(alloy_syncedmem_mutable_cpu_data(m));
	ck_assert_ptr_nonnull(alloy_syncedmem_mutable_gpu_data(m));
	alloy_syncedmem_destroy(m);
}
END_TEST

START_TEST(allocation_cpu_only)
{
	struct alloy_syncedmem *m = make(10);

	/* No device needed for host-only use. */
	ck_assert_ptr_nonnull(alloy_syncedmem_cpu_data(m));
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_CPU);
	ck_assert_ptr_nonnull(alloy_syncedmem_mutable_cpu_data(m));
	ck_assert_int_eq(alloy_syncedmem_host_type(m), ALLOY_DEVICE_CPU);
	/* Without a cuda context the device side fails cleanly. */
	ck_assert_ptr_null(alloy_syncedmem_gpu_data(m));
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_CPU);
	alloy_syncedmem_destroy(m);
}
END_TEST

START_TEST(allocation_gpu_only)
{
	struct alloy_syncedmem *m;

	setup_sim(false);
	m = make(10);
	ck_assert_ptr_nonnull(alloy_syncedmem_gpu_data(m));
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_GPU);
	ck_assert_ptr_nonnull(alloy_syncedmem_mutable_gpu_data(m));
	alloy_syncedmem_destroy(m);
}
END_TEST

START_TEST(cpu_write)
{
	struct alloy_syncedmem *m = make(N);
	void *p = alloy_syncedmem_mutable_cpu_data(m);

	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_CPU);
	memset(p, 1, N);
	check_bytes(alloy_syncedmem_cpu_data(m), 1);
	/* Do another round. */
	p = alloy_syncedmem_mutable_cpu_data(m);
	memset(p, 2, N);
	check_bytes(alloy_syncedmem_cpu_data(m), 2);
	alloy_syncedmem_destroy(m);
}
END_TEST

START_TEST(gpu_read)
{
	struct alloy_syncedmem *m;
	void *p;

	setup_sim(false);
	m = make(N);
	p = alloy_syncedmem_mutable_cpu_data(m);
	memset(p, 1, N);
	check_gpu_bytes(alloy_syncedmem_gpu_data(m), 1);
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_SYNCED);
	/* Write again on the CPU: the device copy follows on the next read. */
	p = alloy_syncedmem_mutable_cpu_data(m);
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_CPU);
	memset(p, 2, N);
	check_gpu_bytes(alloy_syncedmem_gpu_data(m), 2);
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_SYNCED);
	alloy_syncedmem_destroy(m);
}
END_TEST

START_TEST(gpu_write)
{
	struct alloy_syncedmem *m;
	void *d;

	setup_sim(false);
	m = make(N);
	d = alloy_syncedmem_mutable_gpu_data(m);
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_GPU);
	write_gpu(d, 1);
	check_bytes(alloy_syncedmem_cpu_data(m), 1);
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_SYNCED);
	d = alloy_syncedmem_mutable_gpu_data(m);
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_GPU);
	write_gpu(d, 2);
	check_bytes(alloy_syncedmem_cpu_data(m), 2);
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_SYNCED);
	alloy_syncedmem_destroy(m);
}
END_TEST

START_TEST(first_touch_zero_fills_even_reused_memory)
{
	struct alloy_syncedmem *m;
	struct alloy_data_ptr dirty;

	setup_sim(true);
	/* Leave dirty blocks of the same sizes in both caches. */
	ck_assert_ok(alloy_context_new(gpu, N, &dirty));
	write_gpu(dirty.ptr, 0xee);
	alloy_data_ptr_free(&dirty);
	ck_assert_ok(alloy_alloc_default(ALLOY_DEVICE_CUDA_HOST, N, 0, &dirty));
	memset(dirty.ptr, 0xee, N);
	alloy_data_ptr_free(&dirty);

	m = make(N);
	check_gpu_bytes(alloy_syncedmem_gpu_data(m), 0);
	alloy_syncedmem_destroy(m);
	m = make(N);
	check_bytes(alloy_syncedmem_cpu_data(m), 0);
	alloy_syncedmem_destroy(m);
}
END_TEST

START_TEST(set_cpu_data_wraps_caller_memory)
{
	static unsigned char buf[N];
	struct alloy_syncedmem *m;

	setup_sim(false);
	m = make(N);
	memset(buf, 5, N);
	ck_assert_int_eq(alloy_syncedmem_set_cpu_data(m, NULL), -EINVAL);
	ck_assert_ok(alloy_syncedmem_set_cpu_data(m, buf));
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_CPU);
	ck_assert_ptr_eq(alloy_syncedmem_cpu_data(m), buf);
	check_gpu_bytes(alloy_syncedmem_gpu_data(m), 5);
	alloy_syncedmem_destroy(m);
	/* Not freed by destroy: still ours. */
	buf[0] = 1;
	ck_assert_uint_eq(buf[0], 1);
}
END_TEST

START_TEST(set_gpu_data_wraps_caller_memory)
{
	struct alloy_allocator *cc;
	struct alloy_syncedmem *m;
	struct alloy_data_ptr mine;

	setup_sim(false);
	cc = alloy_find_allocator("cuda_caching_sim");
	ck_assert_ok(alloy_context_new(gpu, N, &mine));
	write_gpu(mine.ptr, 9);
	m = make(N);
	alloy_syncedmem_mutable_gpu_data(m); /* owned block, freed on set */
	ck_assert_int_eq(alloy_allocator_live_blocks(cc), 2);
	ck_assert_ok(alloy_syncedmem_set_gpu_data(m, mine.ptr));
	ck_assert_int_eq(alloy_allocator_live_blocks(cc), 1);
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_HEAD_AT_GPU);
	ck_assert_ptr_eq(alloy_syncedmem_gpu_data(m), mine.ptr);
	check_bytes(alloy_syncedmem_cpu_data(m), 9);
	alloy_syncedmem_destroy(m);
	ck_assert_int_eq(alloy_allocator_live_blocks(cc), 1);
	alloy_data_ptr_free(&mine);
	ck_assert_int_eq(alloy_allocator_live_blocks(cc), 0);
}
END_TEST

START_TEST(async_gpu_push_syncs_on_a_stream)
{
	struct alloy_cuda_sim *sim;
	struct alloy_syncedmem *m;
	void *s1, *p;

	setup_sim(true);
	sim = alloy_cuda_sim_builtin();
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	m = make(N);
	ck_assert_int_eq(alloy_syncedmem_async_gpu_push(m, s1), -EINVAL);
	p = alloy_syncedmem_mutable_cpu_data(m);
	memset(p, 3, N);
	ck_assert_ok(alloy_syncedmem_async_gpu_push(m, s1));
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_SYNCED);
	ck_assert_ok(alloy_context_synchronize(gpu));
	check_gpu_bytes(alloy_syncedmem_gpu_data(m), 3);
	ck_assert_int_eq(alloy_syncedmem_async_gpu_push(m, s1), -EINVAL);
	ck_assert_ptr_nonnull(strstr(alloy_last_error(), "HEAD_AT_CPU"));
	alloy_syncedmem_destroy(m);
}
END_TEST

START_TEST(host_memory_is_pinned_when_a_pinned_default_exists)
{
	struct alloy_allocator *host;
	struct alloy_syncedmem *m;

	setup_sim(true);
	host = alloy_find_allocator("cuda_host_sim");
	m = make(N);
	alloy_syncedmem_cpu_data(m);
	ck_assert_int_eq(alloy_syncedmem_host_type(m), ALLOY_DEVICE_CUDA_HOST);
	ck_assert_int_eq(alloy_allocator_live_blocks(host), 1);
	alloy_syncedmem_destroy(m);
	ck_assert_int_eq(alloy_allocator_live_blocks(host), 0);
}
END_TEST

START_TEST(memory_comes_from_the_current_defaults)
{
	struct alloy_allocator *cc, *plain;
	struct alloy_syncedmem *m1, *m2;

	setup_sim(false);
	cc = alloy_find_allocator("cuda_caching_sim");
	ck_assert_ok(alloy_cuda_plain_register_sim(alloy_cuda_sim_builtin(),
						   "cuda_plain_sim", &plain));
	m1 = make(N);
	alloy_syncedmem_gpu_data(m1);
	ck_assert_ok(alloy_set_default(ALLOY_DEVICE_CUDA, plain));
	m2 = make(N);
	alloy_syncedmem_gpu_data(m2);
	ck_assert_int_eq(alloy_allocator_live_blocks(cc), 1);
	ck_assert_int_eq(alloy_allocator_live_blocks(plain), 1);
	/* Each block goes back to its maker, whatever the default is now. */
	alloy_syncedmem_destroy(m1);
	alloy_syncedmem_destroy(m2);
	ck_assert_int_eq(alloy_allocator_live_blocks(cc), 0);
	ck_assert_int_eq(alloy_allocator_live_blocks(plain), 0);
}
END_TEST

START_TEST(size_zero_is_valid)
{
	struct alloy_syncedmem *m;

	setup_sim(false);
	m = make(0);
	ck_assert_ptr_null(alloy_syncedmem_cpu_data(m));
	ck_assert_ptr_null(alloy_syncedmem_gpu_data(m));
	ck_assert_int_eq(alloy_syncedmem_head(m), ALLOY_SYNCED_SYNCED);
	alloy_syncedmem_destroy(m);
}
END_TEST

/* ---- the cuda context on the simulated device ---------------------------- */

START_TEST(context_copies_every_direction)
{
	unsigned char host[N], back[N];
	struct alloy_data_ptr d1, d2;

	setup_sim(false);
	for (int i = 0; i < N; i++)
		host[i] = (unsigned char)(i * 13);
	ck_assert_ok(alloy_context_new(gpu, N, &d1));
	ck_assert_int_eq(d1.device.type, ALLOY_DEVICE_CUDA);
	ck_assert_ptr_eq(alloy_data_ptr_allocator(&d1),
			 alloy_find_allocator("cuda_caching_sim"));
	ck_assert_ok(alloy_context_new(gpu, N, &d2));
	ck_assert_ok(alloy_copy_bytes(N, host, ALLOY_CPU, d1.ptr, gpu));
	ck_assert_ok(alloy_copy_bytes(N, d1.ptr, gpu, d2.ptr, gpu));
	ck_assert_ok(alloy_copy_bytes(N, d2.ptr, gpu, back, ALLOY_CPU));
	ck_assert_int_eq(memcmp(host, back, N), 0);
	ck_assert_ok(alloy_context_synchronize(gpu));
	alloy_data_ptr_free(&d1);
	alloy_data_ptr_free(&d2);
}
END_TEST

START_TEST(context_async_copy_completes_with_its_stream)
{
	struct alloy_cuda_sim *sim;
	struct alloy_cuda_sim_counts c;
	unsigned char host[N];
	struct alloy_data_ptr d;
	void *s1;

	setup_sim(false);
	sim = alloy_cuda_sim_builtin();
	ck_assert_ok(alloy_cuda_sim_stream_create(sim, &s1));
	ck_assert_ok(alloy_context_new(gpu, N, &d));
	memset(host, 4, N);
	ck_assert_ok(
		alloy_copy_bytes_async(N, host, ALLOY_CPU, d.ptr, gpu, s1));
	ck_assert_ok(alloy_cuda_sim_counts(sim, &c));
	ck_assert_uint_ge(c.copies, 1);
	ck_assert_ok(alloy_context_synchronize(gpu));
	check_gpu_bytes(d.ptr, 4);
	alloy_data_ptr_free(&d);
}
END_TEST

START_TEST(tensor_copy_from_crosses_to_the_device_and_back)
{
	const struct alloy_type_meta *f32 = alloy_type(ALLOY_TYPE_FLOAT);
	int64_t dims[2] = { 3, 5 };
	struct alloy_tensor *cpu, *dev, *back;
	float *p;
	const float *q;

	setup_sim(false);
	cpu = alloy_tensor_new_dims(ALLOY_CPU, dims, 2);
	dev = alloy_tensor_new(gpu);
	back = alloy_tensor_new(ALLOY_CPU);
	ck_assert_ptr_nonnull(cpu);
	ck_assert_ptr_nonnull(dev);
	p = alloy_tensor_raw_mutable_data(cpu, f32);
	for (int i = 0; i < 15; i++)
		p[i] = (float)i * 1.5f;
	ck_assert_ok(alloy_tensor_copy_from(dev, cpu));
	ck_assert_ok(alloy_tensor_copy_from(back, dev));
	q = alloy_tensor_data(back, f32);
	ck_assert_ptr_nonnull(q);
	for (int i = 0; i < 15; i++)
		ck_assert_float_eq(q[i], (float)i * 1.5f);
	ck_assert_int_eq(alloy_allocator_live_blocks(
				 alloy_find_allocator("cuda_caching_sim")),
			 1);
	alloy_tensor_unref(cpu);
	alloy_tensor_unref(dev);
	alloy_tensor_unref(back);
	ck_assert_int_eq(alloy_allocator_live_blocks(
				 alloy_find_allocator("cuda_caching_sim")),
			 0);
}
END_TEST

START_TEST(context_without_a_cuda_default_names_the_problem)
{
	struct alloy_data_ptr d;

	/* No default for cuda and the module is not there: a clean error. */
	ck_assert_ok(alloy_cuda_sim_register_context(alloy_cuda_sim_builtin()));
	ck_assert_int_lt(alloy_context_new(gpu, 16, &d), 0);
	ck_assert_ptr_null(d.ptr);
	ck_assert_msg(strstr(alloy_last_error(), "cuda"), "%s",
		      alloy_last_error());
	/* A second context for cuda is refused. */
	ck_assert_int_eq(
		alloy_cuda_sim_register_context(alloy_cuda_sim_builtin()),
		-EEXIST);
}
END_TEST

START_TEST(second_device)
{
	struct alloy_device gpu1 = { ALLOY_DEVICE_CUDA, 1 };
	struct alloy_allocator *cc;
	struct alloy_cuda_stats st = { .size = sizeof(st),
				       .version = ALLOY_CUDA_STATS_VERSION };
	struct alloy_syncedmem *m;
	unsigned char back[N];
	void *p;

	setup_sim(false);
	cc = alloy_find_allocator("cuda_caching_sim");
	ck_assert_ok(
		alloy_cuda_sim_set_device_count(alloy_cuda_sim_builtin(), 2));
	ck_assert_ok(alloy_syncedmem_create(N, 1, &m));
	p = alloy_syncedmem_mutable_cpu_data(m);
	memset(p, 6, N);
	ck_assert_ptr_nonnull(alloy_syncedmem_gpu_data(m));
	ck_assert_ok(alloy_cuda_caching_stats(cc, 1, &st));
	ck_assert_int_eq(st.allocation[0].current, 1);
	ck_assert_ok(alloy_copy_bytes(N, alloy_syncedmem_gpu_data(m), gpu1,
				      back, ALLOY_CPU));
	ck_assert_uint_eq(back[N - 1], 6);
	/* The caller's current device is left as it was. */
	ck_assert_int_eq(alloy_cuda_current_device(), 0);
	alloy_syncedmem_destroy(m);
	ck_assert_ok(alloy_cuda_caching_stats(cc, 1, &st));
	ck_assert_int_eq(st.allocation[0].current, 0);
}
END_TEST

Suite *suite_syncedmem(void)
{
	Suite *s = suite_create("syncedmem");
	TCase *tc = tcase_create("syncedmem");

	tcase_add_test(tc, initialization);
	tcase_add_test(tc, allocation_cpu_gpu);
	tcase_add_test(tc, allocation_cpu_only);
	tcase_add_test(tc, allocation_gpu_only);
	tcase_add_test(tc, cpu_write);
	tcase_add_test(tc, gpu_read);
	tcase_add_test(tc, gpu_write);
	tcase_add_test(tc, first_touch_zero_fills_even_reused_memory);
	tcase_add_test(tc, set_cpu_data_wraps_caller_memory);
	tcase_add_test(tc, set_gpu_data_wraps_caller_memory);
	tcase_add_test(tc, async_gpu_push_syncs_on_a_stream);
	tcase_add_test(tc, host_memory_is_pinned_when_a_pinned_default_exists);
	tcase_add_test(tc, memory_comes_from_the_current_defaults);
	tcase_add_test(tc, size_zero_is_valid);
	tcase_add_test(tc, context_copies_every_direction);
	tcase_add_test(tc, context_async_copy_completes_with_its_stream);
	tcase_add_test(tc, tensor_copy_from_crosses_to_the_device_and_back);
	tcase_add_test(tc, context_without_a_cuda_default_names_the_problem);
	tcase_add_test(tc, second_device);
	suite_add_tcase(s, tc);
	return s;
}
