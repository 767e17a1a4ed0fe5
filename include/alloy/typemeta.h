/* SPDX-License-Identifier: MIT */
/*
 * alloy/typemeta.h - the registry of element types (Caffe2's TypeMeta).
 *
 * A tensor's buffer and a blob's object are untyped memory; a type meta
 * says how big one element is and, for types that are not plain old data,
 * how to construct, destroy and copy elements in place.  Types are
 * registered once and never removed, so a `const struct alloy_type_meta *`
 * stays valid for the life of the process and two metas are the same type
 * exactly when the pointers are equal.
 *
 * Built in: every fixed-width integer, float, double, bool, float16 and
 * bfloat16 (storage only: 16-bit patterns, no arithmetic), "string" (each
 * element a malloc'd `char *`, NULL for the empty string) and "tensor"
 * (each element a `struct alloy_tensor *`, see tensor.h).
 */
#ifndef ALLOY_TYPEMETA_H
#define ALLOY_TYPEMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The longest type name, without the terminating NUL. */
#define ALLOY_TYPE_NAME_MAX 63
/* The most types registered at once, built-ins included. */
#define ALLOY_MAX_TYPES 256

/* Ids of the built-in types; user types get the next free ids. */
enum alloy_type_id {
	ALLOY_TYPE_INT8 = 1,
	ALLOY_TYPE_INT16,
	ALLOY_TYPE_INT32,
	ALLOY_TYPE_INT64,
	ALLOY_TYPE_UINT8,
	ALLOY_TYPE_UINT16,
	ALLOY_TYPE_UINT32,
	ALLOY_TYPE_UINT64,
	ALLOY_TYPE_FLOAT,
	ALLOY_TYPE_DOUBLE,
	ALLOY_TYPE_BOOL,
	ALLOY_TYPE_FLOAT16,
	ALLOY_TYPE_BFLOAT16,
	ALLOY_TYPE_STRING,
	ALLOY_TYPE_TENSOR,
	ALLOY_TYPE_BUILTIN_COUNT /* first id a user type can get */
};

/*
 * A type.  Callers fill name, itemsize and the optional functions and
 * register it; the registry fills id.  A type is POD when ctor, dtor and
 * copy are all NULL: its bytes may be reused and copied freely.
 */
struct alloy_type_meta {
	const char *name; /* unique; copied at registration */
	uint16_t id;	  /* set by the registry */
	size_t itemsize;  /* bytes per element, > 0 */
	/* Construct n elements at p (zeroed memory when NULL); 0 or -errno. */
	int (*ctor)(void *p, size_t n);
	/* Destroy n constructed elements at p. */
	void (*dtor)(void *p, size_t n);
	/*
	 * Assign n elements src -> dst, both constructed; 0 or -errno.
	 * NULL on a type with ctor or dtor: its elements cannot be copied
	 * (extend past capacity, copy_from and clone return -ENOTSUP).
	 */
	int (*copy)(const void *src, void *dst, size_t n);
	/*
	 * For blobs (blob.h): make and free one stand-alone object.  NULL:
	 * malloc(itemsize) + ctor, and dtor + free.
	 */
	void *(*create)(void);
	void (*destroy)(void *obj);
};

/*
 * Register a type.  *meta is copied; *out (may be NULL) receives the
 * registry's copy, which is what every other call takes.  Returns 0, or
 * -EINVAL (no name, name too long, itemsize 0), -EEXIST (name taken),
 * -ENOSPC (ALLOY_MAX_TYPES reached).
 */
int alloy_type_register(const struct alloy_type_meta *meta,
			const struct alloy_type_meta **out);

/* The type of that name or id, or NULL (-ENOENT in the message). */
const struct alloy_type_meta *alloy_type_find(const char *name);
const struct alloy_type_meta *alloy_type_from_id(unsigned id);

/* Shorthand for a built-in: alloy_type(ALLOY_TYPE_FLOAT). */
const struct alloy_type_meta *alloy_type(enum alloy_type_id id);

/* Whether elements of t are plain bytes (no ctor, dtor or copy). */
bool alloy_type_is_pod(const struct alloy_type_meta *t);

/* The type's name, "(undefined)" for NULL. */
const char *alloy_type_name(const struct alloy_type_meta *t);

/*
 * One stand-alone object of type t (create, else malloc + ctor), and its
 * release (destroy, else dtor + free).  NULL + message on failure.
 */
void *alloy_type_new_object(const struct alloy_type_meta *t);
void alloy_type_delete_object(const struct alloy_type_meta *t, void *obj);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_TYPEMETA_H */
