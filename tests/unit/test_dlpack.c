// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_dlpack.c - alloy tensors to and from DLPack: the type and
 * device tables, the lifetime of exported storage, the producer's deleter
 * called exactly once on import, and every refusal with its message.
 */
#include <string.h>

#include "tensorutil.h"

#ifdef ALLOY_HAVE_DLPACK
#include <alloy/dlpack.h>

static const enum alloy_type_id numeric[] = {
	ALLOY_TYPE_INT8,   ALLOY_TYPE_INT16,   ALLOY_TYPE_INT32,
	ALLOY_TYPE_INT64,  ALLOY_TYPE_UINT8,   ALLOY_TYPE_UINT16,
	ALLOY_TYPE_UINT32, ALLOY_TYPE_UINT64,  ALLOY_TYPE_FLOAT,
	ALLOY_TYPE_DOUBLE, ALLOY_TYPE_FLOAT16, ALLOY_TYPE_BFLOAT16,
};

START_TEST(numeric_types_round_trip)
{
	for (size_t i = 0; i < sizeof(numeric) / sizeof(numeric[0]); i++) {
		const struct alloy_type_meta *t = alloy_type(numeric[i]), *back;
		DLDataType dt;

		ck_assert_ok(alloy_dlpack_dtype(t, &dt));
		ck_assert_uint_eq(dt.bits, 8 * t->itemsize);
		ck_assert_uint_eq(dt.lanes, 1);
		ck_assert_ok(alloy_dlpack_type_of(dt, &back));
		ck_assert_ptr_eq(back, t);
	}
	/* The codes themselves, for the types whose size says nothing. */
	DLDataType dt;

	ck_assert_ok(alloy_dlpack_dtype(alloy_type(ALLOY_TYPE_BFLOAT16), &dt));
	ck_assert_uint_eq(dt.code, kDLBfloat);
	ck_assert_ok(alloy_dlpack_dtype(alloy_type(ALLOY_TYPE_FLOAT16), &dt));
	ck_assert_uint_eq(dt.code, kDLFloat);
	ck_assert_ok(alloy_dlpack_dtype(alloy_type(ALLOY_TYPE_UINT32), &dt));
	ck_assert_uint_eq(dt.code, kDLUInt);
	ck_assert_ok(alloy_dlpack_dtype(alloy_type(ALLOY_TYPE_INT32), &dt));
	ck_assert_uint_eq(dt.code, kDLInt);
}
END_TEST

START_TEST(complex_types_are_registered_on_use)
{
	const struct alloy_type_meta *c64, *c128;
	DLDataType dt;

	ck_assert_ok(alloy_dlpack_type_of(
		(DLDataType){ .code = kDLComplex, .bits = 64, .lanes = 1 },
		&c64));
	ck_assert_str_eq(c64->name, "complex64");
	ck_assert_uint_eq(c64->itemsize, 8);
	ck_assert(alloy_type_is_pod(c64));
	ck_assert_ptr_eq(alloy_type_find("complex64"), c64);
	ck_assert_ok(alloy_dlpack_type_of(
		(DLDataType){ .code = kDLComplex, .bits = 128, .lanes = 1 },
		&c128));
	ck_assert_uint_eq(c128->itemsize, 16);
	ck_assert_ok(alloy_dlpack_dtype(c128, &dt));
	ck_assert_uint_eq(dt.code, kDLComplex);
	ck_assert_uint_eq(dt.bits, 128);
}
END_TEST

START_TEST(a_clashing_complex_type_is_refused)
{
	struct alloy_type_meta m = { .name = "complex64", .itemsize = 4 };
	const struct alloy_type_meta *t;

	ck_assert_ok(alloy_type_register(&m, NULL));
	ck_assert_int_eq(
		alloy_dlpack_type_of((DLDataType){ kDLComplex, 64, 1 }, &t),
		-EEXIST);
	ck_assert(strstr(alloy_last_error(), "itemsize 4"));
	/* Other types are not affected. */
	ck_assert_ok(alloy_dlpack_type_of((DLDataType){ kDLInt, 8, 1 }, &t));
}
END_TEST

static void expect_refused(const struct alloy_type_meta *t, const char *why)
{
	DLDataType dt;

	ck_assert_int_eq(alloy_dlpack_dtype(t, &dt), -ENOTSUP);
	ck_assert_msg(strstr(alloy_last_error(), why), "%s lacks \"%s\"",
		      alloy_last_error(), why);
}

START_TEST(types_dlpack_cannot_carry_are_refused)
{
	struct alloy_type_meta m = { .name = "rgb", .itemsize = 3 };
	const struct alloy_type_meta *rgb, *t;

	expect_refused(alloy_type(ALLOY_TYPE_STRING), "heap strings");
	expect_refused(alloy_type(ALLOY_TYPE_TENSOR), "tensor handles");
	ck_assert_ok(alloy_type_register(&m, &rgb));
	expect_refused(rgb, "rgb is a user type");
#if DLPACK_VERSION < 80
	expect_refused(alloy_type(ALLOY_TYPE_BOOL), "convert to uint8");
#endif
	ck_assert_int_eq(
		alloy_dlpack_type_of((DLDataType){ kDLFloat, 32, 4 }, &t),
		-ENOTSUP);
	ck_assert(strstr(alloy_last_error(), "4 lanes"));
	ck_assert_int_eq(
		alloy_dlpack_type_of((DLDataType){ kDLFloat, 8, 1 }, &t),
		-ENOTSUP);
	ck_assert(strstr(alloy_last_error(), "float of 8 bits"));
	ck_assert_int_eq(alloy_dlpack_type_of(
				 (DLDataType){ kDLOpaqueHandle, 64, 1 }, &t),
			 -ENOTSUP);
	ck_assert(strstr(alloy_last_error(), "opaque handle"));
	ck_assert_int_eq(alloy_dlpack_dtype(NULL, &(DLDataType){ 0 }), -EINVAL);
}
END_TEST

START_TEST(devices_both_ways)
{
	struct alloy_device d;
	DLDevice dl;

	ck_assert_ok(alloy_dlpack_device(ALLOY_CPU, &dl));
	ck_assert_int_eq(dl.device_type, kDLCPU);
	ck_assert_ok(alloy_dlpack_device(
		(struct alloy_device){ ALLOY_DEVICE_CUDA, 3 }, &dl));
	ck_assert_int_eq(dl.device_type, kDLCUDA);
	ck_assert_int_eq(dl.device_id, 3);
	ck_assert_ok(alloy_dlpack_device_of(dl, &d));
	ck_assert_int_eq(d.type, ALLOY_DEVICE_CUDA);
	ck_assert_int_eq(d.index, 3);
	ck_assert_ok(alloy_dlpack_device(
		(struct alloy_device){ ALLOY_DEVICE_CUDA_HOST, 0 }, &dl));
	ck_assert_int_eq(dl.device_type, kDLCUDAHost);
	ck_assert_ok(alloy_dlpack_device_of(dl, &d));
	ck_assert_int_eq(d.type, ALLOY_DEVICE_CUDA_HOST);
	ck_assert_ok(alloy_dlpack_device_of((DLDevice){ kDLCPU, 0 }, &d));
	ck_assert_int_eq(d.type, ALLOY_DEVICE_CPU);

	ck_assert_int_eq(alloy_dlpack_device_of((DLDevice){ kDLVulkan, 0 }, &d),
			 -ENODEV);
	ck_assert(strstr(alloy_last_error(), "7 (Vulkan)"));
	ck_assert_int_eq(alloy_dlpack_device_of((DLDevice){ 99, 0 }, &d),
			 -ENODEV);
	ck_assert(strstr(alloy_last_error(), "99 (unknown)"));
	ck_assert_int_eq(alloy_dlpack_device_of((DLDevice){ kDLCUDA, -1 }, &d),
			 -ENODEV);
	ck_assert_int_eq(
		alloy_dlpack_device((struct alloy_device){ 9, 0 }, &dl),
		-ENODEV);
}
END_TEST

/* A float tensor of dims made by ta, filled with 0, 1, 2, ... */
static struct alloy_tensor *filled(const int64_t *dims, int ndim)
{
	struct alloy_tensor *t = alloy_tensor_new_dims(ALLOY_CPU, dims, ndim);
	float *p;

	ck_assert_ptr_nonnull(t);
	p = alloy_tensor_raw_mutable_data(t, alloy_type(ALLOY_TYPE_FLOAT));
	ck_assert_ptr_nonnull(p);
	for (int64_t i = 0; i < alloy_tensor_numel(t); i++)
		p[i] = (float)i;
	return t;
}

START_TEST(export_keeps_the_storage_until_the_deleter)
{
	struct test_alloc ta;
	int64_t dims[] = { 2, 3, 4 };
	struct alloy_tensor *t;
	DLManagedTensor *m;
	const float *p;

	use_test_alloc(&ta, "t_dl");
	t = filled(dims, 3);
	ck_assert_ok(alloy_dlpack_export(t, &m));
	ck_assert_ptr_eq(m->dl_tensor.data, alloy_tensor_raw_data(t));
	ck_assert_int_eq(m->dl_tensor.device.device_type, kDLCPU);
	ck_assert_int_eq(m->dl_tensor.ndim, 3);
	ck_assert_uint_eq(m->dl_tensor.dtype.code, kDLFloat);
	ck_assert_uint_eq(m->dl_tensor.dtype.bits, 32);
	ck_assert_uint_eq(m->dl_tensor.byte_offset, 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(m->dl_tensor.shape[i], dims[i]);
	ck_assert_int_eq(m->dl_tensor.strides[0], 12);
	ck_assert_int_eq(m->dl_tensor.strides[1], 4);
	ck_assert_int_eq(m->dl_tensor.strides[2], 1);

	/* The tensor goes; the memory stays for the consumer. */
	alloy_tensor_unref(t);
	ck_assert_int_eq(ta.frees, 0);
	p = m->dl_tensor.data;
	ck_assert_float_eq(p[23], 23.0f);
	m->deleter(m);
	ck_assert_int_eq(ta.allocs, 1);
	ck_assert_int_eq(ta.frees, 1);
	ck_assert_int_eq(ta.bad_frees, 0);
}
END_TEST

START_TEST(export_survives_a_resize_of_the_tensor)
{
	struct test_alloc ta;
	int64_t dims[] = { 4 }, bigger[] = { 4000 };
	struct alloy_tensor *t;
	DLManagedTensor *m;

	use_test_alloc(&ta, "t_dl");
	t = filled(dims, 1);
	ck_assert_ok(alloy_dlpack_export(t, &m));
	/* Growing needs a new buffer; the exported one is not touched. */
	ck_assert_ok(alloy_tensor_resize(t, bigger, 1));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(t, NULL));
	ck_assert_ptr_ne(alloy_tensor_raw_data(t), m->dl_tensor.data);
	ck_assert_int_eq(ta.frees, 0);
	ck_assert_float_eq(((float *)m->dl_tensor.data)[3], 3.0f);
	m->deleter(m);
	ck_assert_int_eq(ta.frees, 1);
	alloy_tensor_unref(t);
	ck_assert_int_eq(ta.frees, 2);
}
END_TEST

START_TEST(export_of_a_lazy_tensor_makes_its_buffer)
{
	struct test_alloc ta;
	int64_t dims[] = { 5, 0 }, one[] = { 7 };
	struct alloy_tensor *t, *empty;
	DLManagedTensor *m;

	use_test_alloc(&ta, "t_dl");
	t = alloy_tensor_new_dims(ALLOY_CPU, one, 1);
	alloy_storage_set_dtype(alloy_tensor_storage(t),
				alloy_type(ALLOY_TYPE_INT64));
	ck_assert_ptr_null(alloy_storage_data(alloy_tensor_storage(t)));
	ck_assert_ok(alloy_dlpack_export(t, &m));
	ck_assert_int_eq(ta.allocs, 1);
	ck_assert_uint_eq(ta.last_size, 7 * 8);
	ck_assert_ptr_nonnull(m->dl_tensor.data);
	m->deleter(m);
	alloy_tensor_unref(t);
	ck_assert_int_eq(ta.frees, 1);

	/* No elements: nothing is allocated, the export still works. */
	empty = alloy_tensor_new_dims(ALLOY_CPU, dims, 2);
	alloy_storage_set_dtype(alloy_tensor_storage(empty),
				alloy_type(ALLOY_TYPE_FLOAT));
	ck_assert_ok(alloy_dlpack_export(empty, &m));
	ck_assert_int_eq(m->dl_tensor.shape[1], 0);
	m->deleter(m);
	alloy_tensor_unref(empty);
	ck_assert_int_eq(ta.allocs, 1);
}
END_TEST

START_TEST(export_refusals_leave_nothing_behind)
{
	struct test_alloc ta;
	int64_t dims[] = { 3 };
	struct alloy_tensor *t;
	DLManagedTensor *m = (DLManagedTensor *)&dims;

	use_test_alloc(&ta, "t_dl");
	t = alloy_tensor_new(ALLOY_CPU);
	ck_assert_int_eq(alloy_dlpack_export(t, &m), -EINVAL);
	ck_assert_ptr_null(m);
	ck_assert(strstr(alloy_last_error(), "no dims"));
	ck_assert_ok(alloy_tensor_resize(t, dims, 1));
	ck_assert_int_eq(alloy_dlpack_export(t, &m), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "no element type"));
	ck_assert_ptr_nonnull(alloy_tensor_raw_mutable_data(
		t, alloy_type(ALLOY_TYPE_STRING)));
	ck_assert_int_eq(alloy_dlpack_export(t, &m), -ENOTSUP);
	ck_assert(strstr(alloy_last_error(), "string"));
	ck_assert_int_eq(alloy_storage_use_count(alloy_tensor_storage(t)), 1);
	alloy_tensor_unref(t);
	ck_assert_int_eq(ta.allocs, ta.frees);
	ck_assert_int_eq(alloy_dlpack_export(NULL, &m), -EINVAL);
}
END_TEST

/* A producer's DLManagedTensor whose deleter counts its calls. */
struct producer {
	DLManagedTensor m;
	int64_t shape[4], strides[4];
	int deletes;
};

static void producer_deleter(DLManagedTensor *m)
{
	((struct producer *)m->manager_ctx)->deletes++;
}

static void producer_init(struct producer *p, void *data, int ndim,
			  const int64_t *shape)
{
	int64_t stride = 1;

	memset(p, 0, sizeof(*p));
	for (int i = ndim - 1; i >= 0; i--) {
		p->shape[i] = shape[i];
		p->strides[i] = stride;
		stride *= shape[i];
	}
	p->m.dl_tensor = (DLTensor){ .data = data,
				     .device = { kDLCPU, 0 },
				     .ndim = ndim,
				     .dtype = { kDLInt, 32, 1 },
				     .shape = p->shape,
				     .strides = p->strides };
	p->m.manager_ctx = p;
	p->m.deleter = producer_deleter;
}

START_TEST(import_shares_memory_and_deletes_once)
{
	int32_t buf[2 + 6] = { -1, -1, 0, 1, 2, 3, 4, 5 };
	int64_t shape[] = { 2, 3 };
	struct alloy_tensor *t, *alias;
	struct producer p;

	producer_init(&p, buf, 2, shape);
	p.m.dl_tensor.byte_offset = 2 * sizeof(int32_t);
	ck_assert_ok(alloy_dlpack_import(&p.m, &t));
	ck_assert_ptr_eq(alloy_tensor_raw_data(t), buf + 2);
	ck_assert_ptr_eq(alloy_tensor_dtype(t), alloy_type(ALLOY_TYPE_INT32));
	ck_assert_int_eq(alloy_tensor_ndim(t), 2);
	ck_assert_int_eq(alloy_tensor_dim(t, 1), 3);
	ck_assert_uint_eq(alloy_tensor_nbytes(t), 24);
	ck_assert_ptr_null(alloy_tensor_allocator(t));
	ck_assert_int_eq(((const int32_t *)alloy_tensor_raw_data(t))[5], 5);

	/* Two tensors on the storage: the deleter waits for both. */
	alias = alloy_tensor_alias(t);
	alloy_tensor_unref(t);
	ck_assert_int_eq(p.deletes, 0);
	alloy_tensor_unref(alias);
	ck_assert_int_eq(p.deletes, 1);
}
END_TEST

START_TEST(import_takes_null_strides_and_any_stride_of_size_one_dims)
{
	int32_t buf[6] = { 0 };
	int64_t shape[] = { 1, 6 };
	struct alloy_tensor *t;
	struct producer p;

	producer_init(&p, buf, 2, shape);
	p.m.dl_tensor.strides = NULL;
	ck_assert_ok(alloy_dlpack_import(&p.m, &t));
	alloy_tensor_unref(t);
	ck_assert_int_eq(p.deletes, 1);

	producer_init(&p, buf, 2, shape);
	p.strides[0] = 12345; /* what torch gives a dim of size 1 */
	ck_assert_ok(alloy_dlpack_import(&p.m, &t));
	alloy_tensor_unref(t);
	ck_assert_int_eq(p.deletes, 1);
}
END_TEST

START_TEST(import_of_no_elements_still_deletes_once)
{
	int64_t shape[] = { 4, 0 };
	struct alloy_tensor *t;
	struct producer p;

	producer_init(&p, NULL, 2, shape);
	ck_assert_ok(alloy_dlpack_import(&p.m, &t));
	ck_assert_int_eq(alloy_tensor_numel(t), 0);
	alloy_tensor_unref(t);
	ck_assert_int_eq(p.deletes, 1);
}
END_TEST

/* Import must fail with err and a message holding why; m untouched. */
static void expect_import_refused(struct producer *p, int err, const char *why)
{
	struct alloy_tensor *t = (struct alloy_tensor *)p;

	ck_assert_int_eq(alloy_dlpack_import(&p->m, &t), err);
	ck_assert_ptr_null(t);
	ck_assert_msg(strstr(alloy_last_error(), why), "%s lacks \"%s\"",
		      alloy_last_error(), why);
	ck_assert_int_eq(p->deletes, 0);
}

START_TEST(import_refusals_leave_the_producer_its_tensor)
{
	int32_t buf[12];
	int64_t shape[] = { 3, 4 }, huge[] = { INT64_MAX / 2, 4 };
	struct producer p;

	producer_init(&p, buf, 2, shape);
	p.strides[1] = 2; /* every other element: strided */
	expect_import_refused(&p, -ENOTSUP, "not C-contiguous");

	producer_init(&p, buf, 2, shape);
	p.m.dl_tensor.device.device_type = kDLROCM;
	expect_import_refused(&p, -ENODEV, "10 (ROCm)");

	producer_init(&p, buf, 2, shape);
	p.m.dl_tensor.dtype = (DLDataType){ kDLFloat, 32, 2 };
	expect_import_refused(&p, -ENOTSUP, "lanes");

	producer_init(&p, buf, 2, shape);
	p.m.dl_tensor.ndim = ALLOY_TENSOR_MAX_DIMS + 1;
	expect_import_refused(&p, -EINVAL, "ndim 33");

	producer_init(&p, buf, 2, shape);
	p.shape[1] = -4;
	expect_import_refused(&p, -EINVAL, "negative");

	producer_init(&p, buf, 2, shape);
	p.m.dl_tensor.shape = NULL;
	expect_import_refused(&p, -EINVAL, "shape is NULL");

	producer_init(&p, NULL, 2, shape);
	expect_import_refused(&p, -EINVAL, "data is NULL for 48 bytes");

	producer_init(&p, buf, 2, huge);
	p.m.dl_tensor.strides = NULL;
	expect_import_refused(&p, -EOVERFLOW, "overflow");

	ck_assert_int_eq(
		alloy_dlpack_import(NULL, &(struct alloy_tensor *){ 0 }),
		-EINVAL);
}
END_TEST

START_TEST(round_trip_through_dlpack_is_one_buffer)
{
	struct test_alloc ta;
	int64_t dims[] = { 8, 2 };
	struct alloy_tensor *t, *back;
	DLManagedTensor *m;

	use_test_alloc(&ta, "t_dl");
	t = filled(dims, 2);
	ck_assert_ok(alloy_dlpack_export(t, &m));
	ck_assert_ok(alloy_dlpack_import(m, &back));
	ck_assert_ptr_eq(alloy_tensor_raw_data(back), alloy_tensor_raw_data(t));
	ck_assert_int_eq(alloy_storage_use_count(alloy_tensor_storage(t)), 2);
	/* The imported tensor going releases the export's reference. */
	alloy_tensor_unref(back);
	ck_assert_int_eq(alloy_storage_use_count(alloy_tensor_storage(t)), 1);
	ck_assert_int_eq(ta.frees, 0);
	alloy_tensor_unref(t);
	ck_assert_int_eq(ta.allocs, 1);
	ck_assert_int_eq(ta.frees, 1);
}
END_TEST

START_TEST(cuda_tensors_go_as_cuda_devices)
{
	static char fake_device_memory[64];
	int64_t dims[] = { 16 };
	struct alloy_device cuda1 = { ALLOY_DEVICE_CUDA, 1 };
	struct alloy_tensor *t, *back;
	DLManagedTensor *m;

	t = alloy_tensor_new_dims(cuda1, dims, 1);
	ck_assert_ok(alloy_tensor_share_external_pointer(
		t, fake_device_memory, alloy_type(ALLOY_TYPE_FLOAT), 0, NULL,
		NULL));
	ck_assert_ok(alloy_dlpack_export(t, &m));
	ck_assert_int_eq(m->dl_tensor.device.device_type, kDLCUDA);
	ck_assert_int_eq(m->dl_tensor.device.device_id, 1);
	ck_assert_ok(alloy_dlpack_import(m, &back));
	ck_assert_int_eq(alloy_tensor_device(back).type, ALLOY_DEVICE_CUDA);
	ck_assert_int_eq(alloy_tensor_device(back).index, 1);
	ck_assert_ptr_eq(alloy_tensor_raw_data(back), fake_device_memory);
	alloy_tensor_unref(back);
	alloy_tensor_unref(t);
}
END_TEST

Suite *suite_dlpack(void)
{
	Suite *s = suite_create("dlpack");
	TCase *tc = tcase_create("types");

	tcase_add_test(tc, numeric_types_round_trip);
	tcase_add_test(tc, complex_types_are_registered_on_use);
	tcase_add_test(tc, a_clashing_complex_type_is_refused);
	tcase_add_test(tc, types_dlpack_cannot_carry_are_refused);
	tcase_add_test(tc, devices_both_ways);
	suite_add_tcase(s, tc);
	tc = tcase_create("export");
	tcase_add_test(tc, export_keeps_the_storage_until_the_deleter);
	tcase_add_test(tc, export_survives_a_resize_of_the_tensor);
	tcase_add_test(tc, export_of_a_lazy_tensor_makes_its_buffer);
	tcase_add_test(tc, export_refusals_leave_nothing_behind);
	suite_add_tcase(s, tc);
	tc = tcase_create("import");
	tcase_add_test(tc, import_shares_memory_and_deletes_once);
	tcase_add_test(
		tc, import_takes_null_strides_and_any_stride_of_size_one_dims);
	tcase_add_test(tc, import_of_no_elements_still_deletes_once);
	tcase_add_test(tc, import_refusals_leave_the_producer_its_tensor);
	tcase_add_test(tc, round_trip_through_dlpack_is_one_buffer);
	tcase_add_test(tc, cuda_tensors_go_as_cuda_devices);
	suite_add_tcase(s, tc);
	return s;
}
#else
Suite *suite_dlpack(void)
{
	/* No test case: nothing is counted as passed. */
	printf("dlpack: skipped: built without dlpack/dlpack.h\n");
	return suite_create("dlpack");
}
#endif
