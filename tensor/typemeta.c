// SPDX-License-Identifier: MIT
/*
 * tensor/typemeta.c - the registry of element types.
 *
 * Types are never unregistered: tensors and blobs keep bare pointers to
 * them, and equal pointers mean equal types.  The table is an array of
 * atomic pointers filled in order under a mutex, so lookups take no lock;
 * the built-ins are static entries present before anything runs.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/typemeta_impl.h"

/* ---- the non-POD built-ins ------------------------------------------ */

/* Pointer elements start as NULL: an empty string, no tensor. */
static int zero_ctor(void *p, size_t n)
{
	memset(p, 0, n * sizeof(void *));
	return 0;
}

static void string_dtor(void *p, size_t n)
{
	char **s = p;

	for (size_t i = 0; i < n; i++)
		free(s[i]);
}

static int string_copy(const void *src, void *dst, size_t n)
{
	char *const *from = src;
	char **to = dst;

	for (size_t i = 0; i < n; i++) {
		char *c = NULL;

		if (from[i] && !(c = strdup(from[i])))
			return alloy__error(-ENOMEM, "string_copy",
					    "no memory for string %zu of %zu",
					    i, n);
		free(to[i]);
		to[i] = c;
	}
	return 0;
}

/* ---- the table ------------------------------------------------------ */

#define POD(id_, name_, type_) \
	[id_] = { .name = name_, .id = id_, .itemsize = sizeof(type_) }

/*
 * Written only before main: the "tensor" entry's functions are bound by
 * tensor.c's constructor (alloy__type_bind_tensor); read-only after.
 */
static struct alloy_type_meta builtins[ALLOY_TYPE_BUILTIN_COUNT] = {
	POD(ALLOY_TYPE_INT8, "int8", int8_t),
	POD(ALLOY_TYPE_INT16, "int16", int16_t),
	POD(ALLOY_TYPE_INT32, "int32", int32_t),
	POD(ALLOY_TYPE_INT64, "int64", int64_t),
	POD(ALLOY_TYPE_UINT8, "uint8", uint8_t),
	POD(ALLOY_TYPE_UINT16, "uint16", uint16_t),
	POD(ALLOY_TYPE_UINT32, "uint32", uint32_t),
	POD(ALLOY_TYPE_UINT64, "uint64", uint64_t),
	POD(ALLOY_TYPE_FLOAT, "float", float),
	POD(ALLOY_TYPE_DOUBLE, "double", double),
	POD(ALLOY_TYPE_BOOL, "bool", bool),
	POD(ALLOY_TYPE_FLOAT16, "float16", uint16_t),
	POD(ALLOY_TYPE_BFLOAT16, "bfloat16", uint16_t),
	[ALLOY_TYPE_STRING] = {
		.name = "string",
		.id = ALLOY_TYPE_STRING,
		.itemsize = sizeof(char *),
		.ctor = zero_ctor,
		.dtor = string_dtor,
		.copy = string_copy,
	},
	[ALLOY_TYPE_TENSOR] = {
		.name = "tensor",
		.id = ALLOY_TYPE_TENSOR,
		.itemsize = sizeof(struct alloy_tensor *),
		.ctor = zero_ctor,
	},
};

void alloy__type_bind_tensor(const struct alloy__type_fns *fns)
{
	struct alloy_type_meta *t = &builtins[ALLOY_TYPE_TENSOR];

	t->dtor = fns->dtor;
	t->copy = fns->copy;
	t->create = fns->create;
	t->destroy = fns->destroy;
}

int alloy__elems_overflow(const char *func, const struct alloy_type_meta *t,
			  uint64_t n)
{
	return alloy__error(-EOVERFLOW, func,
			    "%llu elements x itemsize %llu (%s) overflows",
			    (unsigned long long)n,
			    (unsigned long long)(t ? t->itemsize : 0),
			    alloy_type_name(t));
}

/* A registered user type: the meta and the name it points to. */
struct user_type {
	struct alloy_type_meta meta;
	char name[ALLOY_TYPE_NAME_MAX + 1];
};

static pthread_mutex_t types_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_uint ntypes = ALLOY_TYPE_BUILTIN_COUNT;
static _Atomic(const struct alloy_type_meta *) user_types[ALLOY_MAX_TYPES];

const struct alloy_type_meta *alloy_type_from_id(unsigned id)
{
	const struct alloy_type_meta *t = NULL;

	if (id > 0 && id < ALLOY_TYPE_BUILTIN_COUNT)
		return &builtins[id];
	if (id < ALLOY_MAX_TYPES)
		t = atomic_load_explicit(&user_types[id], memory_order_acquire);
	if (!t)
		alloy__error(-ENOENT, __func__, "no type with id %u", id);
	return t;
}

const struct alloy_type_meta *alloy_type(enum alloy_type_id id)
{
	return alloy_type_from_id(id);
}

/* The registered type of that name, or NULL; sets no error. */
static const struct alloy_type_meta *lookup(const char *name)
{
	unsigned n = atomic_load_explicit(&ntypes, memory_order_acquire);

	for (unsigned id = 1; id < n; id++) {
		const struct alloy_type_meta *t =
			id < ALLOY_TYPE_BUILTIN_COUNT
				? &builtins[id]
				: atomic_load_explicit(&user_types[id],
						       memory_order_acquire);

		if (t && strcmp(t->name, name) == 0)
			return t;
	}
	return NULL;
}

const struct alloy_type_meta *alloy_type_find(const char *name)
{
	const struct alloy_type_meta *t;

	if (!name) {
		alloy__error(-EINVAL, __func__, "name is NULL");
		return NULL;
	}
	t = lookup(name);
	if (!t)
		alloy__error(-ENOENT, __func__, "no type named \"%s\"", name);
	return t;
}

int alloy_type_register(const struct alloy_type_meta *meta,
			const struct alloy_type_meta **out)
{
	struct user_type *u;
	unsigned id;
	int rc = 0;

	if (out)
		*out = NULL;
	ALLOY_ENFORCE(meta && meta->name, -EINVAL, "type %s is NULL",
		      meta ? "name" : "meta");
	ALLOY_ENFORCE(meta->name[0] &&
			      strlen(meta->name) <= ALLOY_TYPE_NAME_MAX,
		      -EINVAL, "type name \"%s\" must have 1 to %d characters",
		      meta->name, ALLOY_TYPE_NAME_MAX);
	ALLOY_ENFORCE(meta->itemsize > 0, -EINVAL, "type \"%s\": itemsize is 0",
		      meta->name);

	u = calloc(1, sizeof(*u));
	ALLOY_ENFORCE(u, -ENOMEM, "no memory for type \"%s\"", meta->name);
	u->meta = *meta;
	snprintf(u->name, sizeof(u->name), "%s", meta->name);
	u->meta.name = u->name;

	pthread_mutex_lock(&types_lock);
	id = atomic_load_explicit(&ntypes, memory_order_relaxed);
	if (lookup(meta->name)) {
		rc = alloy__error(-EEXIST, __func__,
				  "a type named \"%s\" is already registered",
				  meta->name);
		goto out_unlock;
	}
	if (id >= ALLOY_MAX_TYPES) {
		rc = alloy__error(-ENOSPC, __func__,
				  "type \"%s\": all %d type ids are taken",
				  meta->name, ALLOY_MAX_TYPES);
		goto out_unlock;
	}
	u->meta.id = (uint16_t)id;
	atomic_store_explicit(&user_types[id], &u->meta, memory_order_release);
	atomic_store_explicit(&ntypes, id + 1, memory_order_release);
	if (out)
		*out = &u->meta;
	u = NULL; /* the table owns it now, for good */
out_unlock:
	pthread_mutex_unlock(&types_lock);
	free(u);
	return rc;
}

bool alloy_type_is_pod(const struct alloy_type_meta *t)
{
	return t && !t->ctor && !t->dtor && !t->copy;
}

const char *alloy_type_name(const struct alloy_type_meta *t)
{
	return t ? t->name : "(undefined)";
}

void *alloy_type_new_object(const struct alloy_type_meta *t)
{
	void *obj;
	int rc;

	if (!t) {
		alloy__error(-EINVAL, __func__, "type is NULL");
		return NULL;
	}
	if (t->create)
		return t->create();
	/* Zeroed, as `new T()` value-initialises a POD. */
	obj = calloc(1, t->itemsize);
	if (!obj) {
		alloy__error(-ENOMEM, __func__,
			     "no memory for a %s (%zu bytes)", t->name,
			     t->itemsize);
		return NULL;
	}
	if (t->ctor && (rc = t->ctor(obj, 1)) != 0) {
		alloy__error(rc, __func__, "constructing a %s failed (%s)",
			     t->name, alloy_strerror(rc));
		free(obj);
		return NULL;
	}
	return obj;
}

void alloy_type_delete_object(const struct alloy_type_meta *t, void *obj)
{
	if (!t || !obj)
		return;
	if (t->destroy) {
		t->destroy(obj);
		return;
	}
	if (t->dtor)
		t->dtor(obj, 1);
	free(obj);
}
