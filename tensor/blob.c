// SPDX-License-Identifier: MIT
/*
 * tensor/blob.c - a type-erased holder of one object.
 *
 * The blob keeps the object's type meta and whether it owns the object;
 * an owned object is released through alloy_type_delete_object, i.e. the
 * type's destroy function, whenever it is replaced.
 */
#include <stdlib.h>

#include "tensor/tensor_impl.h"
#include "tensor/blob_impl.h"
#include "kernel/owner.h"
#include <alloy/workspace.h>
#include <alloy/blob.h>

struct alloy_blob {
	const struct alloy_type_meta *meta; /* NULL: empty */
	void *obj;
	bool owned;
	const char *owner; /* label of its tensors' memory, or NULL */
};

void alloy__blob_set_owner(struct alloy_blob *b, const char *label)
{
	b->owner = alloy__owner_intern(label);
}

/* A tensor the blob made or hands out for writing allocates as its own. */
static void *label(struct alloy_blob *b, void *obj,
		   const struct alloy_type_meta *t)
{
	if (obj && b->owner && t == alloy_type(ALLOY_TYPE_TENSOR))
		((struct alloy_tensor *)obj)->owner = b->owner;
	return obj;
}

struct alloy_blob *alloy_blob_new(void)
{
	struct alloy_blob *b = calloc(1, sizeof(*b));

	if (!b)
		alloy__error(-ENOMEM, __func__, "no memory for a blob");
	return b;
}

void alloy_blob_clear(struct alloy_blob *b)
{
	if (!b)
		return;
	if (b->owned)
		alloy_type_delete_object(b->meta, b->obj);
	b->meta = NULL;
	b->obj = NULL;
	b->owned = false;
}

void alloy_blob_free(struct alloy_blob *b)
{
	alloy_blob_clear(b);
	free(b);
}

const struct alloy_type_meta *alloy_blob_meta(const struct alloy_blob *b)
{
	return b ? b->meta : NULL;
}

bool alloy_blob_is_type(const struct alloy_blob *b,
			const struct alloy_type_meta *t)
{
	return b && t && b->meta == t;
}

bool alloy_blob_is_empty(const struct alloy_blob *b)
{
	return !b || !b->meta;
}

const void *alloy_blob_get(const struct alloy_blob *b,
			   const struct alloy_type_meta *t)
{
	if (!b || !t) {
		alloy__error(-EINVAL, __func__, "%s is NULL",
			     b ? "type" : "blob");
		return NULL;
	}
	if (!b->meta) {
		alloy__error(-EINVAL, __func__,
			     "blob is empty while caller expects %s", t->name);
		return NULL;
	}
	if (b->meta != t) {
		alloy__error(-EINVAL, __func__,
			     "blob holds %s while caller expects %s",
			     b->meta->name, t->name);
		return NULL;
	}
	return b->obj;
}

/* Replace the content; obj and t already checked. */
static void *hold(struct alloy_blob *b, const struct alloy_type_meta *t,
		  void *obj, bool owned)
{
	alloy_blob_clear(b);
	b->meta = t;
	b->obj = obj;
	b->owned = owned;
	return obj;
}

void *alloy_blob_get_mutable(struct alloy_blob *b,
			     const struct alloy_type_meta *t, bool *is_new)
{
	void *obj;

	if (is_new)
		*is_new = false;
	if (!b || !t) {
		alloy__error(-EINVAL, __func__, "%s is NULL",
			     b ? "type" : "blob");
		return NULL;
	}
	if (b->meta == t)
		return label(b, b->obj, t);
	obj = alloy_type_new_object(t);
	if (!obj)
		return NULL;
	if (is_new)
		*is_new = true;
	return label(b, hold(b, t, obj, true), t);
}

void *alloy_blob_reset(struct alloy_blob *b, const struct alloy_type_meta *t,
		       void *obj)
{
	if (!b || !t || !obj) {
		alloy__error(-EINVAL, __func__, "%s is NULL",
			     !b	  ? "blob"
			     : !t ? "type"
				  : "object");
		return NULL;
	}
	if (b->obj == obj) {
		/* Taking over what we already hold must not free it. */
		b->meta = t;
		b->owned = true;
		return obj;
	}
	return hold(b, t, obj, true);
}

int alloy_blob_share_external(struct alloy_blob *b,
			      const struct alloy_type_meta *t, void *obj)
{
	ALLOY_ENFORCE(b && t && obj, -EINVAL, "%s is NULL",
		      !b   ? "blob"
		      : !t ? "type"
			   : "object");
	if (b->obj == obj) {
		b->meta = t;
		b->owned = false;
		return 0;
	}
	hold(b, t, obj, false);
	return 0;
}

struct alloy_tensor *alloy_blob_get_tensor(const struct alloy_blob *b)
{
	return (struct alloy_tensor *)alloy_blob_get(
		b, alloy_type(ALLOY_TYPE_TENSOR));
}

struct alloy_tensor *alloy_blob_get_mutable_tensor(struct alloy_blob *b,
						   struct alloy_device dev)
{
	const struct alloy_type_meta *tt = alloy_type(ALLOY_TYPE_TENSOR);
	struct alloy_tensor *t;

	if (!b) {
		alloy__error(-EINVAL, __func__, "blob is NULL");
		return NULL;
	}
	if (b->meta == tt) {
		struct alloy_device have = alloy_tensor_device(b->obj);

		if (have.type == dev.type && have.index == dev.index)
			return label(b, b->obj, tt);
	}
	t = alloy_tensor_new(dev);
	if (!t)
		return NULL;
	return label(b, hold(b, tt, t, true), tt);
}
