// SPDX-License-Identifier: MIT
/*
 * tests/unit/test_typemeta.c - the registry of element types.
 */
#include <pthread.h>
#include <string.h>

#include "tensorutil.h"

START_TEST(builtins_are_there)
{
	static const struct {
		enum alloy_type_id id;
		const char *name;
		size_t size;
	} want[] = {
		{ ALLOY_TYPE_INT8, "int8", 1 },
		{ ALLOY_TYPE_INT16, "int16", 2 },
		{ ALLOY_TYPE_INT32, "int32", 4 },
		{ ALLOY_TYPE_INT64, "int64", 8 },
		{ ALLOY_TYPE_UINT8, "uint8", 1 },
		{ ALLOY_TYPE_UINT16, "uint16", 2 },
		{ ALLOY_TYPE_UINT32, "uint32", 4 },
		{ ALLOY_TYPE_UINT64, "uint64", 8 },
		{ ALLOY_TYPE_FLOAT, "float", 4 },
		{ ALLOY_TYPE_DOUBLE, "double", 8 },
		{ ALLOY_TYPE_BOOL, "bool", sizeof(bool) },
		{ ALLOY_TYPE_FLOAT16, "float16", 2 },
		{ ALLOY_TYPE_BFLOAT16, "bfloat16", 2 },
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		const struct alloy_type_meta *t = alloy_type(want[i].id);

		ck_assert_ptr_nonnull(t);
		ck_assert_str_eq(t->name, want[i].name);
		ck_assert_uint_eq(t->itemsize, want[i].size);
		ck_assert_uint_eq(t->id, want[i].id);
		ck_assert(alloy_type_is_pod(t));
		ck_assert_ptr_eq(alloy_type_find(want[i].name), t);
		ck_assert_ptr_eq(alloy_type_from_id(want[i].id), t);
	}
	ck_assert(!alloy_type_is_pod(alloy_type(ALLOY_TYPE_STRING)));
	ck_assert(!alloy_type_is_pod(alloy_type(ALLOY_TYPE_TENSOR)));
	ck_assert_uint_eq(alloy_type(ALLOY_TYPE_STRING)->itemsize,
			  sizeof(char *));
	ck_assert(!alloy_type_is_pod(NULL));
	ck_assert_str_eq(alloy_type_name(NULL), "(undefined)");
}
END_TEST

START_TEST(unknown_lookups_fail)
{
	ck_assert_ptr_null(alloy_type_find("complex512"));
	ck_assert(strstr(alloy_last_error(), "\"complex512\""));
	ck_assert_ptr_null(alloy_type_from_id(0));
	ck_assert_ptr_null(alloy_type_from_id(ALLOY_TYPE_BUILTIN_COUNT));
	ck_assert_ptr_null(alloy_type_from_id(100000));
	ck_assert(strstr(alloy_last_error(), "100000"));
	ck_assert_ptr_null(alloy_type_find(NULL));
}
END_TEST

struct point {
	float x, y;
};

START_TEST(user_types_register_at_run_time)
{
	struct alloy_type_meta m = { .name = "point",
				     .itemsize = sizeof(struct point) };
	const struct alloy_type_meta *t, *t2;
	char name[80];

	ck_assert_ok(alloy_type_register(&m, &t));
	ck_assert_uint_ge(t->id, ALLOY_TYPE_BUILTIN_COUNT);
	ck_assert_ptr_eq(alloy_type_find("point"), t);
	ck_assert_ptr_eq(alloy_type_from_id(t->id), t);
	ck_assert(alloy_type_is_pod(t));
	/* The name is copied: the caller's buffer may go away. */
	snprintf(name, sizeof(name), "pair");
	m.name = name;
	ck_assert_ok(alloy_type_register(&m, &t2));
	memset(name, 'x', 4);
	ck_assert_str_eq(t2->name, "pair");
	ck_assert_uint_eq(t2->id, t->id + 1);

	m.name = "point";
	ck_assert_int_eq(alloy_type_register(&m, NULL), -EEXIST);
	ck_assert(strstr(alloy_last_error(), "\"point\""));
	m.name = "float";
	ck_assert_int_eq(alloy_type_register(&m, NULL), -EEXIST);
}
END_TEST

START_TEST(bad_registrations_are_einval)
{
	struct alloy_type_meta m = { .name = "zero", .itemsize = 0 };
	char longname[100];

	ck_assert_int_eq(alloy_type_register(&m, NULL), -EINVAL);
	ck_assert(strstr(alloy_last_error(), "itemsize is 0"));
	m.itemsize = 4;
	m.name = "";
	ck_assert_int_eq(alloy_type_register(&m, NULL), -EINVAL);
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	m.name = longname;
	ck_assert_int_eq(alloy_type_register(&m, NULL), -EINVAL);
	m.name = NULL;
	ck_assert_int_eq(alloy_type_register(&m, NULL), -EINVAL);
	ck_assert_int_eq(alloy_type_register(NULL, NULL), -EINVAL);
	ck_assert_ptr_null(alloy_type_find("zero"));
}
END_TEST

START_TEST(table_fills_up_with_enospc)
{
	struct alloy_type_meta m = { .itemsize = 1 };
	char name[32];
	int rc = 0, n;

	for (n = 0; n < ALLOY_MAX_TYPES + 1; n++) {
		snprintf(name, sizeof(name), "t%d", n);
		m.name = name;
		rc = alloy_type_register(&m, NULL);
		if (rc)
			break;
	}
	ck_assert_int_eq(rc, -ENOSPC);
	ck_assert_int_eq(n, ALLOY_MAX_TYPES - ALLOY_TYPE_BUILTIN_COUNT);
	ck_assert_ptr_nonnull(alloy_type_find("t0"));
}
END_TEST

START_TEST(objects_are_constructed_and_destroyed)
{
	const struct alloy_type_meta *c = counted_type();
	int64_t *i = alloy_type_new_object(alloy_type(ALLOY_TYPE_INT64));
	struct counted *o;

	ck_assert_ptr_nonnull(i);
	ck_assert_int_eq(*i, 0); /* value-initialised, as new T() */
	alloy_type_delete_object(alloy_type(ALLOY_TYPE_INT64), i);

	o = alloy_type_new_object(c);
	ck_assert_ptr_nonnull(o);
	ck_assert_uint_eq(o->magic, COUNTED_MAGIC);
	ck_assert_int_eq(counted_stats.ctors, 1);
	alloy_type_delete_object(c, o);
	ck_assert_int_eq(counted_stats.dtors, 1);
	ck_assert_int_eq(counted_stats.bad_dtors, 0);

	counted_stats.fail_ctor = 1;
	ck_assert_ptr_null(alloy_type_new_object(c));
	ck_assert(strstr(alloy_last_error(), "constructing a counted"));
	ck_assert_ptr_null(alloy_type_new_object(NULL));
}
END_TEST

START_TEST(string_elements_copy_deeply)
{
	const struct alloy_type_meta *s = alloy_type(ALLOY_TYPE_STRING);
	char *a[2], *b[2];

	ck_assert_ok(s->ctor(a, 2));
	ck_assert_ok(s->ctor(b, 2));
	ck_assert_ptr_null(a[0]);
	a[0] = strdup("hello");
	ck_assert_ok(s->copy(a, b, 2));
	ck_assert_str_eq(b[0], "hello");
	ck_assert_ptr_ne(b[0], a[0]);
	ck_assert_ptr_null(b[1]);
	s->dtor(a, 2);
	s->dtor(b, 2);
}
END_TEST

#define REG_THREADS 4
#define REG_EACH    40

static void *register_worker(void *arg)
{
	long id = (long)arg;
	struct alloy_type_meta m = { .itemsize = 8 };
	char name[32];

	for (int i = 0; i < REG_EACH; i++) {
		snprintf(name, sizeof(name), "thr%ld_%d", id, i);
		m.name = name;
		if (alloy_type_register(&m, NULL))
			return (void *)1;
		/* Lookups run alongside the other threads' registrations. */
		if (!alloy_type_find(name) || !alloy_type_find("float"))
			return (void *)1;
	}
	return NULL;
}

START_TEST(registration_is_thread_safe)
{
	pthread_t th[REG_THREADS];
	bool seen[ALLOY_MAX_TYPES] = { false };
	char name[32];

	for (long i = 0; i < REG_THREADS; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, register_worker,
						(void *)i),
				 0);
	for (int i = 0; i < REG_THREADS; i++) {
		void *rc;

		pthread_join(th[i], &rc);
		ck_assert_ptr_null(rc);
	}
	/* Every name found, every id distinct and leading back to it. */
	for (int t = 0; t < REG_THREADS; t++)
		for (int i = 0; i < REG_EACH; i++) {
			const struct alloy_type_meta *m;

			snprintf(name, sizeof(name), "thr%d_%d", t, i);
			m = alloy_type_find(name);
			ck_assert_ptr_nonnull(m);
			ck_assert(!seen[m->id]);
			seen[m->id] = true;
			ck_assert_ptr_eq(alloy_type_from_id(m->id), m);
		}
}
END_TEST

Suite *suite_typemeta(void)
{
	Suite *s = suite_create("typemeta");
	TCase *tc = tcase_create("registry");

	tcase_add_test(tc, builtins_are_there);
	tcase_add_test(tc, unknown_lookups_fail);
	tcase_add_test(tc, user_types_register_at_run_time);
	tcase_add_test(tc, bad_registrations_are_einval);
	tcase_add_test(tc, table_fills_up_with_enospc);
	tcase_add_test(tc, objects_are_constructed_and_destroyed);
	tcase_add_test(tc, string_elements_copy_deeply);
	tcase_add_test(tc, registration_is_thread_safe);
	suite_add_tcase(s, tc);
	return s;
}
