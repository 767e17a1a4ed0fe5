// SPDX-License-Identifier: MIT
/*
 * allocators/cuda_common.c - what every CUDA allocator shares: the
 * common part of their contexts, and the
 * simulated allocators built into liballoy (cuda_caching_sim,
 * cuda_host_sim) with the table that maps them to their simulator.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/base.h"
#include "allocators/builtin.h"
#include "allocators/cuda_policy.h"

/*
 * Contexts made for the CUDA runtime source, by name.  The module builds
 * its allocators each time it is loaded, and a machine without a device
 * refuses every load: reusing the (never registered) contexts keeps
 * repeated attempts from leaking them.
 */
static pthread_mutex_t runtime_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char name[ALLOY_NAME_MAX + 1];
	size_t size;
	struct alloy__cuda_base *b;
} runtime_ctx[8];

static struct alloy__cuda_base *runtime_reuse(const char *name, size_t size,
					      struct alloy__cuda_base *fresh)
{
	struct alloy__cuda_base *b = NULL;

	pthread_mutex_lock(&runtime_lock);
	for (size_t i = 0; i < ARRAY_SIZE(runtime_ctx) && !b; i++) {
		if (runtime_ctx[i].b && runtime_ctx[i].size == size &&
		    !strcmp(runtime_ctx[i].name, name) &&
		    !alloy_find_allocator(name)) {
			b = runtime_ctx[i].b;
		} else if (!runtime_ctx[i].b && fresh) {
			snprintf(runtime_ctx[i].name,
				 sizeof(runtime_ctx[i].name), "%s", name);
			runtime_ctx[i].size = size;
			runtime_ctx[i].b = fresh;
			b = fresh;
		}
	}
	pthread_mutex_unlock(&runtime_lock);
	return b;
}

int alloy__cuda_base_new(size_t size, const struct alloy__devsrc *src,
			 const char *name,
			 const struct alloy_allocator_ops *tmpl,
			 const struct alloy_allocator_ops **ops, void **ctx)
{
	bool runtime = src && !strcmp(src->ops->name, "cuda");
	struct alloy__cuda_base *b = NULL;

	ALLOY_ENFORCE(src && name && ops && ctx, -EINVAL, "NULL argument");
	ALLOY_ENFORCE(strlen(name) <= ALLOY_NAME_MAX, -EINVAL,
		      "name \"%s\" is longer than %d", name, ALLOY_NAME_MAX);
	if (runtime)
		b = runtime_reuse(name, size, NULL);
	if (b) {
		memset(b, 0, size); /* never registered, or unregistered */
	} else {
		b = calloc(1, size);
		ALLOY_ENFORCE(b, -ENOMEM, "no memory for allocator \"%s\"",
			      name);
		if (runtime)
			runtime_reuse(name, size, b);
	}
	pthread_mutex_init(&b->lock, NULL);
	b->src = *src;
	snprintf(b->name, sizeof(b->name), "%s", name);
	b->ops = *tmpl;
	b->ops.name = b->name;
	*ops = &b->ops;
	*ctx = b;
	return 0;
}

/* ---- allocators on simulators -------------------------------------------- */

static pthread_mutex_t sims_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct alloy_allocator *a;
	struct alloy_cuda_sim *sim;
} sims[ALLOY_MAX_ALLOCATORS];

static int
register_on_sim(struct alloy_cuda_sim *sim, const char *name,
		int (*make)(const struct alloy__devsrc *, const char *,
			    const struct alloy_allocator_ops **, void **),
		struct alloy_allocator **out)
{
	struct alloy__devsrc src;
	const struct alloy_allocator_ops *ops;
	struct alloy_allocator *a;
	void *ctx;
	int rc;

	ALLOY_ENFORCE(sim && name, -EINVAL, "sim or name is NULL");
	src = alloy__cuda_sim_source(sim);
	rc = make(&src, name, &ops, &ctx);
	if (rc)
		return rc;
	/* On failure ctx stays allocated: it is small and may be referenced. */
	rc = alloy_register_allocator(ops, ctx, "builtin", &a);
	if (rc)
		return rc;
	pthread_mutex_lock(&sims_lock);
	for (size_t i = 0; i < ARRAY_SIZE(sims); i++) {
		if (!sims[i].a || sims[i].a == a) {
			sims[i].a = a;
			sims[i].sim = sim;
			break;
		}
	}
	pthread_mutex_unlock(&sims_lock);
	if (out)
		*out = a;
	return 0;
}

int alloy_cuda_caching_register_sim(struct alloy_cuda_sim *sim,
				    const char *name,
				    struct alloy_allocator **out)
{
	return register_on_sim(sim, name, alloy__cuda_caching_new, out);
}

int alloy_cuda_host_register_sim(struct alloy_cuda_sim *sim, const char *name,
				 struct alloy_allocator **out)
{
	return register_on_sim(sim, name, alloy__cuda_host_new, out);
}

int alloy_cuda_plain_register_sim(struct alloy_cuda_sim *sim, const char *name,
				  struct alloy_allocator **out)
{
	return register_on_sim(sim, name, alloy__cuda_plain_new, out);
}

int alloy_cuda_async_register_sim(struct alloy_cuda_sim *sim, const char *name,
				  struct alloy_allocator **out)
{
	return register_on_sim(sim, name, alloy__cuda_async_new, out);
}

struct alloy_cuda_sim *alloy_cuda_sim_of(struct alloy_allocator *a)
{
	struct alloy_cuda_sim *sim = NULL;

	pthread_mutex_lock(&sims_lock);
	for (size_t i = 0; i < ARRAY_SIZE(sims) && !sim; i++)
		if (a && sims[i].a == a)
			sim = sims[i].sim;
	pthread_mutex_unlock(&sims_lock);
	return sim;
}

struct alloy_cuda_sim *alloy_cuda_sim_builtin(void)
{
	alloy__ensure_init();
	return alloy__cuda_sim_builtin_device();
}

int alloy__register_cuda_sim_allocators(void)
{
	struct alloy_cuda_sim *sim = alloy__cuda_sim_builtin_device();
	int rc;

	rc = alloy_cuda_caching_register_sim(sim, "cuda_caching_sim", NULL);
	if (!rc)
		rc = alloy_cuda_host_register_sim(sim, "cuda_host_sim", NULL);
	return rc;
}

void *alloy__cuda_realloc_on(struct alloy__cuda_base *b,
			     alloy__cuda_alloc_on_fn *alloc_on, int device,
			     void *stream, bool sync, void *ptr,
			     size_t old_size, size_t new_size, size_t align)
{
	void *p = alloc_on(b, device, new_size, align, 0, stream);

	if (!p)
		return NULL;
	if (b->src.ops->copy(b->src.ctx, device, p, ptr,
			     old_size < new_size ? old_size : new_size,
			     ALLOY__D2D, stream, sync)) {
		b->ops.free(b, p, new_size, align);
		return NULL;
	}
	b->ops.free(b, ptr, old_size, align);
	return p;
}
