// SPDX-License-Identifier: MIT
/*
 * allocators/wrap.c - inner allocator handling shared by fail and debug.
 *
 * The inner is resolved when the option is applied, or during init by the
 * root once the built-ins and ALLOY_PLUGINS are in (to "default" where
 * none was asked for), never on the allocation path: looking an
 * allocator up takes the registry lock, which an unregister holds while
 * it waits for allocations in flight to finish.
 */
#include <string.h>

#include "allocators/wrap.h"
#include "allocators/builtin.h"
#include "kernel/conf.h"
#include "kernel/registry.h"

/* Every wrapper compiled in, to follow chains of inners. */
#define MAX_WRAPPERS 4
static struct alloy__wrap *_Atomic wrappers[MAX_WRAPPERS];
/* Set once the root resolved init's inners: later ones resolve at once. */
static atomic_bool resolving;

/* w if a is the allocator whose context is w, else NULL. */
static struct alloy__wrap *as_wrapper(const struct alloy_allocator *a)
{
	for (int i = 0; i < MAX_WRAPPERS; i++) {
		struct alloy__wrap *w = atomic_load(&wrappers[i]);

		if (w && a->ops.alloc == w->alloc && a->ctx == w)
			return w;
	}
	return NULL;
}

int alloy__wrap_set_inner(struct alloy__wrap *w, const char *name)
{
	struct alloy_allocator *in, *a;
	int depth = 0;

	if (!atomic_load(&resolving)) {
		ALLOY_ENFORCE(strlen(name) < sizeof(w->inner_name), -ERANGE,
			      "%s.inner: name longer than %d characters",
			      w->name, ALLOY_NAME_MAX);
		strcpy(w->inner_name, name);
		return 0;
	}
	a = in = alloy_request_allocator(name);
	ALLOY_ENFORCE(in, -ENOENT, "%s.inner: no allocator named \"%s\"",
		      w->name, name);
	ALLOY_ENFORCE(
		in->ops.device_type == ALLOY_DEVICE_CPU, -EINVAL,
		"%s.inner: \"%s\" serves %s; a wrapper needs a CPU allocator",
		w->name, name, alloy_device_type_name(in->ops.device_type));
	/* fail over debug over fail would recurse forever: refuse cycles. */
	for (struct alloy__wrap *x; a && (x = as_wrapper(a)); depth++) {
		ALLOY_ENFORCE(
			x != w && depth < MAX_WRAPPERS, -EINVAL,
			"%s.inner: \"%s\" leads back to \"%s\" (a cycle of wrappers)",
			w->name, name, w->name);
		a = atomic_load(&x->inner);
	}
	ALLOY_ENFORCE(
		atomic_load(&w->live) == 0 || atomic_load(&w->inner) == in,
		-EBUSY,
		"%s.inner: %lld blocks from \"%s\" are still out; free them first",
		w->name, (long long)atomic_load(&w->live),
		alloy_allocator_name(atomic_load(&w->inner)));
	/* The registry then refuses to unregister the inner under us. */
	alloy__allocator_hold(in, 1);
	alloy__allocator_hold(atomic_exchange(&w->inner, in), -1);
	return 0;
}

void alloy__wrap_fini(struct alloy__wrap *w)
{
	alloy__allocator_hold(atomic_exchange(&w->inner, NULL), -1);
}

int alloy__wrap_register(struct alloy__wrap *w,
			 const struct alloy_allocator_ops *ops)
{
	int rc, i;

	for (i = 0; i < MAX_WRAPPERS; i++) {
		struct alloy__wrap *none = NULL;

		if (atomic_load(&wrappers[i]) == w ||
		    atomic_compare_exchange_strong(&wrappers[i], &none, w))
			break;
	}
	ALLOY_ENFORCE(i < MAX_WRAPPERS, -ENOSPC,
		      "more than %d wrapper allocators", MAX_WRAPPERS);
	w->name = ops->name;
	w->alloc = ops->alloc;
	rc = alloy_register_allocator(ops, w, "builtin", NULL);
	return rc;
}

int alloy__wrap_resolve_inners(void)
{
	atomic_store(&resolving, true);
	for (int i = 0; i < MAX_WRAPPERS; i++) {
		struct alloy__wrap *w = atomic_load(&wrappers[i]);
		const char *want;

		if (!w)
			continue;
		want = w->inner_name[0] ? w->inner_name : "default";
		if (alloy__wrap_set_inner(w, want) == 0)
			continue;
		alloy__conf_report("%s.inner:%s: %s; using \"default\"",
				   w->name, want, alloy_last_error());
		if (alloy__wrap_set_inner(w, "default"))
			return alloy__error(
				-ENOENT, __func__,
				"%s: no \"default\" allocator to wrap",
				w->name);
	}
	return 0;
}

void *alloy__wrap_inner_alloc(struct alloy__wrap *w,
			      struct alloy_allocator **inner, size_t size,
			      size_t align, unsigned flags)
{
	struct alloy_allocator *in =
		atomic_load_explicit(&w->inner, memory_order_acquire);
	void *p;

	*inner = in;
	if (unlikely(!in ||
		     atomic_load_explicit(&in->state, memory_order_relaxed) !=
			     ALLOC_LIVE)) {
		alloy__error(-ENODEV, "alloy_alloc",
			     "%s: inner allocator \"%s\" is not registered",
			     w->name, in ? in->name : "(none)");
		return NULL;
	}
	p = in->ops.alloc(in->ctx, size, align, flags);
	if (p)
		atomic_fetch_add_explicit(&w->live, 1, memory_order_relaxed);
	return p;
}

void alloy__wrap_inner_free(struct alloy__wrap *w, struct alloy_allocator *in,
			    void *ptr, size_t size, size_t align)
{
	in->ops.free(in->ctx, ptr, size, align);
	atomic_fetch_sub_explicit(&w->live, 1, memory_order_relaxed);
}

int alloy__wrap_parse_u64(const char *wrapper, const char *key,
			  const char *value, uint64_t *out)
{
	int rc = alloy_parse_size(value, out);

	ALLOY_ENFORCE(rc == 0, rc == -ERANGE ? -ERANGE : -EINVAL,
		      "%s.%s: \"%s\" is not a count (digits, or \"unlimited\")",
		      wrapper, key, value);
	return 0;
}
