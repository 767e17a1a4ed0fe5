// SPDX-License-Identifier: MIT
/*
 * kernel/context.c - the table of device contexts, one per device type.
 *
 * Contexts are looked up on every new()/copy, so the table is an array of
 * atomic pointers to private copies that are never freed (a context can be
 * replaced, e.g. by a reloaded CUDA module, while another thread uses the
 * old one).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "base.h"
#include "count.h"
#include "fork.h"
#include "plugins.h"
#include "arena.h"

struct context {
	struct alloy_context_ops ops;
	void *ctx;
	struct context *retired_next;
};

/* Replaced contexts, kept (and reachable) because a caller may hold one. */
static struct context *retired;

static pthread_mutex_t context_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(struct context *) contexts[ALLOY_DEVICE_TYPE_COUNT];

static struct context *get(int type)
{
	if ((unsigned)type >= ALLOY_DEVICE_TYPE_COUNT)
		return NULL;
	return atomic_load_explicit(&contexts[type], memory_order_acquire);
}

void alloy__context_fork_lock(void)
{
	pthread_mutex_lock(&context_lock);
}

void alloy__context_fork_unlock(void)
{
	pthread_mutex_unlock(&context_lock);
}

int alloy_register_context(const struct alloy_context_ops *ops, void *ctx)
{
	static const size_t required_end =
		offsetof(struct alloy_context_ops, copy_bytes) +
		sizeof(ops->copy_bytes);
	struct context *c;
	size_t n;
	int rc;

	alloy__ensure_init();
	rc = alloy__refuse_in_plugin_hook(__func__, "contexts");
	if (rc)
		return rc;
	ALLOY_ENFORCE(ops, -EINVAL, "ops is NULL");
	ALLOY_ENFORCE(ops->abi_major == ALLOY_ABI_MAJOR, -EINVAL,
		      "context ABI major %u, this alloy speaks %u",
		      ops->abi_major, ALLOY_ABI_MAJOR);
	ALLOY_ENFORCE(
		ops->struct_size >= required_end, -EINVAL,
		"context ops struct_size %u is smaller than the required part (%zu bytes)",
		ops->struct_size, required_end);
	ALLOY_ENFORCE((unsigned)ops->device_type < ALLOY_DEVICE_TYPE_COUNT,
		      -EINVAL, "unknown device type %d", ops->device_type);
	ALLOY_ENFORCE(ops->new_bytes && ops->copy_bytes, -EINVAL,
		      "context \"%s\": new_bytes and copy_bytes are required",
		      ops->name ? ops->name : "(null)");

	c = alloy__arena_alloc(sizeof(*c));
	ALLOY_ENFORCE(c, -ENOMEM, "no memory for a context");
	n = ops->struct_size < sizeof(c->ops) ? ops->struct_size
					      : sizeof(c->ops);
	memcpy(&c->ops, ops, n);
	c->ctx = ctx;

	pthread_mutex_lock(&context_lock);
	if (get(ops->device_type)) {
		pthread_mutex_unlock(&context_lock);
		alloy__arena_free(c, sizeof(*c));
		return alloy__error(-EEXIST, __func__,
				    "device type %s already has a context",
				    alloy_device_type_name(ops->device_type));
	}
	atomic_store_explicit(&contexts[ops->device_type], c,
			      memory_order_release);
	pthread_mutex_unlock(&context_lock);
	return 0;
}

int alloy_unregister_context(int device_type)
{
	struct context *c;

	alloy__ensure_init();
	pthread_mutex_lock(&context_lock);
	c = get(device_type);
	if (c) {
		atomic_store_explicit(&contexts[device_type], NULL,
				      memory_order_release);
		c->retired_next = retired;
		retired = c;
	}
	pthread_mutex_unlock(&context_lock);
	ALLOY_ENFORCE(c, -ENOENT, "no context for device type %d", device_type);
	/* No thread is still inside one of its ops after this (see op_get). */
	alloy__synchronize();
	return 0;
}

int alloy_has_context(int device_type)
{
	alloy__ensure_init();
	return get(device_type) != NULL;
}

/*
 * The context of type for one op call, looked up inside a grace section
 * that alloy__section_leave ends after the call: alloy_unregister_context
 * waits for such sections, so the plugin that provided a context is
 * never unloaded while a thread still runs its code.
 */
static inline struct context *op_get(int type, struct alloy__tls **t)
{
	*t = alloy__section_enter();
	return get(type);
}

static int no_context(const char *func, struct alloy_device dev)
{
	const char *name = alloy_device_type_name(dev.type);

	if (!name)
		return alloy__error(-EINVAL, func, "unknown device type %d",
				    dev.type);
	return alloy__error(-ENODEV, func,
			    "no context for device %s (is its module loaded?)",
			    name);
}

int alloy_context_new(struct alloy_device dev, size_t nbytes,
		      struct alloy_data_ptr *out)
{
	struct alloy__tls *t;
	struct context *c;
	int rc;

	ALLOY_ENFORCE(out, -EINVAL, "out is NULL");
	*out = ALLOY_DATA_PTR_INIT;
	alloy__ensure_init();
	c = op_get(dev.type, &t);
	rc = c ? c->ops.new_bytes(c->ctx, dev, nbytes, out)
	       : no_context(__func__, dev);
	alloy__section_leave(t);
	if (!rc)
		out->device = dev;
	return rc;
}

/*
 * The device whose context performs a copy: the one farther from plain
 * host memory knows how to reach the other.  Pinned host memory is host
 * memory, so the CUDA context copies to and from it like from the CPU, and
 * without a pinned-host context the CPU one moves it.  Two different
 * devices of the same rank have no copy path (type -1).
 */
static int device_rank(int type)
{
	switch (type) {
	case ALLOY_DEVICE_CPU:
		return 0;
	case ALLOY_DEVICE_CUDA_HOST:
		return 1;
	default:
		return 2;
	}
}

static struct alloy_device copy_handler(struct alloy_device src,
					struct alloy_device dst)
{
	int rs = device_rank(src.type), rd = device_rank(dst.type);
	struct alloy_device via = rs >= rd ? src : dst;

	if (rs == rd && rs == 2 && src.type != dst.type)
		return (struct alloy_device){ -1, 0 };
	if (via.type == ALLOY_DEVICE_CUDA_HOST && !get(via.type))
		return ALLOY_CPU;
	return via;
}

int alloy_copy_bytes_async(size_t nbytes, const void *src,
			   struct alloy_device src_dev, void *dst,
			   struct alloy_device dst_dev, void *stream)
{
	struct alloy_device via;
	struct alloy__tls *t;
	struct context *c;
	int rc;

	alloy__ensure_init();
	if (nbytes == 0)
		return 0;
	ALLOY_ENFORCE(src && dst, -EINVAL, "NULL %s for a %zu-byte copy",
		      src ? "dst" : "src", nbytes);
	via = copy_handler(src_dev, dst_dev);
	if (via.type < 0)
		return alloy__error(
			-EINVAL, "alloy_copy_bytes",
			"no direct copy from %s to %s; copy through the CPU",
			alloy_device_type_name(src_dev.type),
			alloy_device_type_name(dst_dev.type));
	c = op_get(via.type, &t);
	rc = c ? c->ops.copy_bytes(c->ctx, nbytes, src, src_dev, dst, dst_dev,
				   stream)
	       : no_context("alloy_copy_bytes", via);
	alloy__section_leave(t);
	return rc;
}

int alloy_copy_bytes(size_t nbytes, const void *src,
		     struct alloy_device src_dev, void *dst,
		     struct alloy_device dst_dev)
{
	return alloy_copy_bytes_async(nbytes, src, src_dev, dst, dst_dev, NULL);
}

/* Memory the CPU addresses directly: plain memset reaches it. */
static bool host_memory(int type)
{
	return type == ALLOY_DEVICE_CPU || type == ALLOY_DEVICE_CUDA_HOST;
}

int alloy_memset(struct alloy_device dev, void *ptr, int byte, size_t n)
{
	struct alloy__tls *t;
	struct context *c;
	int rc;

	alloy__ensure_init();
	if (n == 0)
		return 0;
	ALLOY_ENFORCE(ptr, -EINVAL, "NULL pointer for a %zu-byte memset", n);
	ALLOY_ENFORCE((unsigned)dev.type < ALLOY_DEVICE_TYPE_COUNT, -EINVAL,
		      "unknown device type %d", dev.type);
	c = op_get(dev.type, &t);
	if (c && c->ops.memset_bytes) {
		rc = c->ops.memset_bytes(c->ctx, dev, ptr, byte, n, NULL);
		alloy__section_leave(t);
		return rc;
	}
	alloy__section_leave(t);
	ALLOY_ENFORCE(host_memory(dev.type), -ENOTSUP,
		      "%s memory cannot be set from the host and %s",
		      alloy_device_type_name(dev.type),
		      c ? "its context has no memset_bytes"
			: "no context serves it");
	memset(ptr, byte, n);
	return 0;
}

int alloy_context_synchronize(struct alloy_device dev)
{
	struct alloy__tls *t;
	struct context *c;
	int rc;

	alloy__ensure_init();
	c = op_get(dev.type, &t);
	rc = !c			  ? no_context(__func__, dev)
	     : c->ops.synchronize ? c->ops.synchronize(c->ctx, dev)
				  : 0;
	alloy__section_leave(t);
	return rc;
}
