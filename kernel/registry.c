// SPDX-License-Identifier: MIT
/*
 * kernel/registry.c - registered allocators and the default per device.
 *
 * The table is a fixed array whose entries are never freed, so a handle
 * stays readable even while another thread unregisters it; mutations take
 * registry_lock, while the allocation path only loads the default pointer
 * and the entry's state.  Unregistering waits for a grace period
 * (alloy__synchronize) before it trusts the live-block count, so an
 * allocation that picked the allocator just before it was swapped out is
 * either counted or refused, never lost.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "base.h"
#include "count.h"
#include "fork.h"
#include "front.h"
#include "plugins.h"
#include "registry.h"
#include "conf.h"

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
struct alloy_allocator alloy__allocators[ALLOY_MAX_ALLOCATORS];
#define table alloy__allocators
static unsigned long next_serial = 1;
/* Its alloc op: there is no allocator to take the request. */
static void *no_default_alloc(void *ctx, size_t size, size_t align,
			      unsigned flags)
{
	(void)ctx;
	(void)size;
	(void)align;
	(void)flags;
	return NULL;
}

struct alloy_allocator alloy__no_default = {
	.ops = { .alloc = no_default_alloc },
	.state = ALLOC_FREE,
	.index = -1,
	.counters = -1,
	.acct_offset = offsetof(struct alloy__tls, nowhere),
	.name = "(no default)",
};

_Atomic(struct alloy_allocator *) alloy__defaults[ALLOY_DEVICE_TYPE_COUNT] = {
	[0 ... ALLOY_DEVICE_TYPE_COUNT - 1] = &alloy__no_default,
};
#define defaults alloy__defaults

int alloy_allocator_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	return n && n <= ALLOY_NAME_MAX &&
	       strspn(name,
		      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
		      "0123456789_") == n;
}

int alloy__check_ops(const struct alloy_allocator_ops *ops, size_t *copy_size)
{
	static const size_t required_end =
		offsetof(struct alloy_allocator_ops, free) + sizeof(ops->free);

	ALLOY_ENFORCE(ops, -EINVAL, "ops is NULL");
	ALLOY_ENFORCE(ops->abi_major == ALLOY_ABI_MAJOR, -EINVAL,
		      "allocator ABI major %u, this alloy speaks %u",
		      ops->abi_major, ALLOY_ABI_MAJOR);
	ALLOY_ENFORCE(
		ops->struct_size >= required_end, -EINVAL,
		"ops struct_size %u is smaller than the required part (%zu bytes)",
		ops->struct_size, required_end);
	ALLOY_ENFORCE(
		ops->struct_size <= ALLOY_ABI_STRUCT_SIZE_MAX, -EINVAL,
		"ops struct_size %u is absurd (more than %d bytes; this alloy's is %zu): a corrupt or uninitialised struct",
		ops->struct_size, ALLOY_ABI_STRUCT_SIZE_MAX, sizeof(*ops));
	/* Else the copy below would end inside a function pointer. */
	ALLOY_ENFORCE(ops->struct_size % _Alignof(struct alloy_allocator_ops) ==
			      0,
		      -EINVAL, "ops struct_size %u is not a multiple of %zu",
		      ops->struct_size, _Alignof(struct alloy_allocator_ops));
	ALLOY_ENFORCE(
		alloy_allocator_name_valid(ops->name), -EINVAL,
		"allocator name \"%s\" is not 1..%d characters of [A-Za-z0-9_]",
		ops->name ? ops->name : "(null)", ALLOY_NAME_MAX);
	ALLOY_ENFORCE(ops->device_type >= 0 &&
			      ops->device_type < ALLOY_DEVICE_TYPE_COUNT,
		      -EINVAL, "allocator \"%s\": unknown device type %d",
		      ops->name, ops->device_type);
	ALLOY_ENFORCE(ops->alloc, -EINVAL,
		      "allocator \"%s\": required op alloc is NULL", ops->name);
	ALLOY_ENFORCE(ops->free, -EINVAL,
		      "allocator \"%s\": required op free is NULL", ops->name);
	/*
	 * A provider built against an older minor has a shorter struct: copy
	 * what it has, the rest stays zero (absent).  A newer minor may have
	 * a longer one: the members we do not know are ignored.
	 */
	*copy_size = ops->struct_size < sizeof(*ops) ? ops->struct_size
						     : sizeof(*ops);
	return 0;
}

void alloy__allocator_hold(struct alloy_allocator *a, int delta)
{
	if (a)
		atomic_fetch_add(&a->holds, delta);
}

uint64_t alloy__hash_name(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

static struct alloy_allocator *find_locked(const char *name)
{
	for (int i = 0; i < ALLOY_MAX_ALLOCATORS; i++)
		if (atomic_load(&table[i].state) != ALLOC_FREE &&
		    strcmp(table[i].name, name) == 0)
			return &table[i];
	return NULL;
}

/* Allocator-specific ALLOY_CONF keys for the allocator just registered. */
struct option_ctx {
	struct alloy_allocator *a;
	int err;
};

static void apply_option(const char *allocator, const char *key,
			 const char *value, void *arg)
{
	struct option_ctx *oc = arg;
	struct alloy_allocator *a = oc->a;
	int rc;

	if (strcmp(allocator, a->name) != 0)
		return;
	if (!a->ops.set_option) {
		alloy__conf_report(
			"%s.%s:%s: allocator \"%s\" takes no options; ignored",
			allocator, key, value, allocator);
		oc->err = -EINVAL;
		return;
	}
	rc = a->ops.set_option(a->ctx, key, value);
	if (rc) {
		alloy__conf_report("%s.%s:%s: %s; ignored", allocator, key,
				   value, alloy_last_error());
		oc->err = rc;
	}
}

int alloy_register_allocator(const struct alloy_allocator_ops *ops, void *ctx,
			     const char *origin, struct alloy_allocator **out)
{
	struct alloy_allocator *a = NULL;
	size_t copy_size;
	int rc;

	alloy__ensure_init();
	rc = alloy__refuse_in_plugin_hook(__func__, "allocators");
	if (rc)
		return rc;
	rc = alloy__check_ops(ops, &copy_size);
	if (rc)
		return rc;

	pthread_mutex_lock(&registry_lock);
	if (find_locked(ops->name)) {
		pthread_mutex_unlock(&registry_lock);
		return alloy__error(-EEXIST, __func__,
				    "allocator name \"%s\" already registered",
				    ops->name);
	}
	for (int i = 0; i < ALLOY_MAX_ALLOCATORS && !a; i++)
		if (atomic_load(&table[i].state) == ALLOC_FREE)
			a = &table[i];
	if (!a) {
		pthread_mutex_unlock(&registry_lock);
		return alloy__error(
			-ENOSPC, __func__,
			"cannot register \"%s\": all %d allocator slots in use",
			ops->name, ALLOY_MAX_ALLOCATORS);
	}
	memset(&a->ops, 0, sizeof(a->ops));
	memcpy(&a->ops, ops, copy_size);
	a->ops.struct_size = sizeof(a->ops);
	snprintf(a->name, sizeof(a->name), "%s", ops->name);
	a->ops.name = a->name;
	snprintf(a->origin, sizeof(a->origin), "%s", origin ? origin : "api");
	a->ctx = ctx;
	a->index = (int)(a - table);
	a->serial = next_serial++;
	a->name_hash = alloy__hash_name(a->name);
	atomic_store(&a->holds, 0);
	for (int c = 0; c < ALLOY__C_COUNT; c++)
		alloy__tcount_zero(a->counters + c);

	/* init runs unlocked: it may call the registry (find, alloc...). */
	atomic_store(&a->state, ALLOC_INIT);
	pthread_mutex_unlock(&registry_lock);
	/*
	 * Before init, which may be the family's first use: the front marks
	 * the family's mappings from here on.  Unlocked: it asks the loader
	 * where the family's code is, and a module's constructor may be
	 * registering with the loader's lock held.
	 */
	alloy__front_add_family(a);
	rc = a->ops.init ? a->ops.init(ctx) : 0;
	pthread_mutex_lock(&registry_lock);
	atomic_store(&a->state, rc ? ALLOC_FREE : ALLOC_LIVE);
	pthread_mutex_unlock(&registry_lock);
	if (rc) {
		alloy__front_drop_family(a);
		if (rc > 0)
			rc = -EIO;
		if (!strstr(alloy_last_error(), a->name))
			alloy__error(rc, __func__,
				     "allocator \"%s\": init failed (%s)",
				     a->name, alloy_strerror(rc));
		return rc;
	}

	struct option_ctx oc = { a, 0 };

	alloy_conf_foreach_option(apply_option, &oc);
	if (out)
		*out = a;
	return 0;
}

int alloy_unregister_allocator(const char *name)
{
	struct alloy_allocator *a;
	int64_t live;

	alloy__ensure_init();
	ALLOY_ENFORCE(name, -EINVAL, "name is NULL");
	pthread_mutex_lock(&registry_lock);
	a = find_locked(name);
	if (!a || atomic_load(&a->state) != ALLOC_LIVE) {
		pthread_mutex_unlock(&registry_lock);
		return alloy__error(-ENOENT, __func__,
				    "no allocator named \"%s\"", name);
	}
	for (int d = 0; d < ALLOY_DEVICE_TYPE_COUNT; d++) {
		if (atomic_load(&defaults[d]) == a) {
			pthread_mutex_unlock(&registry_lock);
			return alloy__error(
				-EBUSY, __func__,
				"allocator \"%s\" is the default for %s; set another default first",
				name, alloy_device_type_name(d));
		}
	}
	if (alloy__front_holds(a)) {
		pthread_mutex_unlock(&registry_lock);
		return alloy__error(
			-EBUSY, __func__,
			"allocator \"%s\" has served the program's malloc (alloy run): its blocks may be freed at any moment, so it stays registered",
			name);
	}
	if (atomic_load(&a->holds)) {
		int holds = atomic_load(&a->holds);

		pthread_mutex_unlock(&registry_lock);
		return alloy__error(
			-EBUSY, __func__,
			"allocator \"%s\" is in use by %d wrapper%s (its inner); give them another inner first",
			name, holds, holds == 1 ? "" : "s");
	}
	/*
	 * alloy_alloc with a's handle now sees DYING and refuses; after
	 * the windows drain, no thread can still pick a as a default
	 * without having counted its block (kernel/count.h).
	 */
	atomic_store(&a->state, ALLOC_DYING);
	alloy__wait_windows();
	live = alloy__live_blocks(a);
	if (live != 0) {
		atomic_store(&a->state, ALLOC_LIVE);
		pthread_mutex_unlock(&registry_lock);
		return alloy__error(
			-EBUSY, __func__,
			"allocator \"%s\" still has %lld live blocks", name,
			(long long)live);
	}
	/* fini runs unlocked, the slot and its name still held (DYING). */
	pthread_mutex_unlock(&registry_lock);
	alloy__front_drop_family(a);
	if (a->ops.fini)
		a->ops.fini(a->ctx);
	pthread_mutex_lock(&registry_lock);
	atomic_store(&a->state, ALLOC_FREE);
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

struct alloy_allocator *alloy_find_allocator(const char *name)
{
	struct alloy_allocator *a;

	alloy__ensure_init();
	if (!name) {
		alloy__error(-EINVAL, __func__, "name is NULL");
		return NULL;
	}
	pthread_mutex_lock(&registry_lock);
	a = find_locked(name);
	if (a && atomic_load(&a->state) != ALLOC_LIVE)
		a = NULL;
	pthread_mutex_unlock(&registry_lock);
	if (!a)
		alloy__error(-ENOENT, __func__, "no allocator named \"%s\"",
			     name);
	return a;
}

struct alloy_allocator *alloy_request_allocator(const char *name)
{
	struct alloy_allocator *a = alloy_find_allocator(name);

	if (a || !name || !alloy_allocator_name_valid(name))
		return a;
	if (alloy__module_request(name) == 0)
		a = alloy_find_allocator(name);
	return a;
}

int alloy_foreach_allocator(int (*fn)(struct alloy_allocator *a, void *arg),
			    void *arg)
{
	struct alloy_allocator *order[ALLOY_MAX_ALLOCATORS];
	int n = 0, rc = 0;

	alloy__ensure_init();
	pthread_mutex_lock(&registry_lock);
	for (int i = 0; i < ALLOY_MAX_ALLOCATORS; i++)
		if (atomic_load(&table[i].state) == ALLOC_LIVE)
			order[n++] = &table[i];
	pthread_mutex_unlock(&registry_lock);
	/* Registration order: insertion sort on the serial. */
	for (int i = 1; i < n; i++)
		for (int j = i;
		     j > 0 && order[j - 1]->serial > order[j]->serial; j--) {
			struct alloy_allocator *t = order[j];

			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (int i = 0; i < n && !rc; i++)
		rc = fn(order[i], arg);
	return rc;
}

struct alloy_allocator *alloy_get_default(int device_type)
{
	alloy__ensure_init();
	if (device_type < 0 || device_type >= ALLOY_DEVICE_TYPE_COUNT) {
		alloy__error(-EINVAL, __func__, "unknown device type %d",
			     device_type);
		return NULL;
	}
	return alloy__default_of(atomic_load_explicit(&defaults[device_type],
						      memory_order_acquire));
}

int alloy_set_default(int device_type, struct alloy_allocator *a)
{
	alloy__ensure_init();
	ALLOY_ENFORCE(device_type >= 0 && device_type < ALLOY_DEVICE_TYPE_COUNT,
		      -EINVAL, "unknown device type %d", device_type);
	ALLOY_ENFORCE(a, -EINVAL, "allocator is NULL");
	pthread_mutex_lock(&registry_lock);
	if (atomic_load(&a->state) != ALLOC_LIVE) {
		pthread_mutex_unlock(&registry_lock);
		return alloy__error(-ENOENT, __func__,
				    "allocator \"%s\" is not registered",
				    a->name);
	}
	if (a->ops.device_type != device_type) {
		pthread_mutex_unlock(&registry_lock);
		return alloy__error(
			-EINVAL, __func__, "allocator \"%s\" serves %s, not %s",
			a->name, alloy_device_type_name(a->ops.device_type),
			alloy_device_type_name(device_type));
	}
	if (device_type == ALLOY_DEVICE_CPU)
		alloy__front_default_changed(a);
	atomic_store_explicit(&defaults[device_type], a, memory_order_release);
	pthread_mutex_unlock(&registry_lock);
	return 0;
}

int alloy_set_default_by_name(int device_type, const char *name)
{
	struct alloy_allocator *a;

	ALLOY_ENFORCE(name, -EINVAL, "name is NULL");
	a = alloy_request_allocator(name);
	if (!a)
		return -ENOENT;
	return alloy_set_default(device_type, a);
}

void alloy__registry_fork_lock(void)
{
	pthread_mutex_lock(&registry_lock);
}

void alloy__registry_fork_unlock(void)
{
	pthread_mutex_unlock(&registry_lock);
}

int alloy__registry_init(void)
{
	int base = alloy__tcount_reserve(ALLOY_MAX_ALLOCATORS * ALLOY__C_COUNT);

	if (base < 0)
		return alloy__error(base, __func__, "no counter slots left");
	for (int i = 0; i < ALLOY_MAX_ALLOCATORS; i++) {
		table[i].counters = base + i * ALLOY__C_COUNT;
		table[i].acct_offset =
			(ptrdiff_t)(offsetof(struct alloy__tls, count) +
				    (size_t)table[i].counters *
					    sizeof(_Atomic int64_t));
	}
	return 0;
}
