// SPDX-License-Identifier: MIT
/*
 * allocators/fail.c - "fail": an allocator that fails when told to.
 *
 * Every allocation gets a number, from 1, counted since the plan was last
 * set.  It fails when the number is in [nth, nth + run) or when a hash of
 * (seed, number) falls under the probability threshold; otherwise it is
 * passed to the inner allocator.  Deciding from the number alone, with no
 * generator state, keeps the choice repeatable and free of locks even when
 * threads allocate at once.  Frees always pass through.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "allocators/builtin.h"
#include "allocators/wrap.h"
#include "kernel/hash.h"
#include <alloy/fail.h>

struct fail_state {
	struct alloy__wrap w;
	atomic_uint_fast64_t seen;     /* allocations numbered so far */
	atomic_uint_fast64_t injected; /* of which made to fail */
	atomic_uint_fast64_t nth;
	atomic_uint_fast64_t run;
	atomic_uint_fast64_t threshold; /* fail when hash < this; MAX: always */
	atomic_uint_fast64_t seed;
};

static struct fail_state fs = { .run = 1 };

/*
 * Number this allocation; 0 to let it through, else its number, with
 * the reason given as the thread's error (alloy_alloc appends it).
 */
static uint64_t should_fail(struct fail_state *s)
{
	uint64_t n =
		atomic_fetch_add_explicit(&s->seen, 1, memory_order_relaxed) +
		1;
	uint64_t nth = atomic_load_explicit(&s->nth, memory_order_relaxed);
	uint64_t run = atomic_load_explicit(&s->run, memory_order_relaxed);
	uint64_t th = atomic_load_explicit(&s->threshold, memory_order_relaxed);
	uint64_t seed = atomic_load_explicit(&s->seed, memory_order_relaxed);

	if (nth && n >= nth && n - nth < run) {
		alloy__error(
			-ENOMEM, "fail",
			"allocation %llu failed as planned (nth %llu, run %llu)",
			(unsigned long long)n, (unsigned long long)nth,
			(unsigned long long)run);
		return n;
	}
	if (th != UINT64_MAX &&
	    (!th || alloy__mix64(seed ^ alloy__mix64(n)) >= th))
		return 0;
	alloy__error(-ENOMEM, "fail",
		     "allocation %llu failed at random (probability)",
		     (unsigned long long)n);
	return n;
}

static void *fail_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	struct fail_state *s = ctx;
	struct alloy_allocator *in;

	if (unlikely(should_fail(s))) {
		atomic_fetch_add_explicit(&s->injected, 1,
					  memory_order_relaxed);
		return NULL;
	}
	return alloy__wrap_inner_alloc(&s->w, &in, size, align, flags);
}

static void fail_free(void *ctx, void *ptr, size_t size, size_t align)
{
	struct fail_state *s = ctx;

	/* The inner cannot change while blocks are out (wrap.c). */
	alloy__wrap_inner_free(&s->w, atomic_load(&s->w.inner), ptr, size,
			       align);
}

static size_t fail_usable_size(void *ctx, const void *ptr, size_t size)
{
	struct fail_state *s = ctx;

	return alloy_allocator_usable_size(atomic_load(&s->w.inner), ptr, size);
}

/* probability as a threshold on a uniform 64-bit hash. */
static int set_probability(struct fail_state *s, double p)
{
	uint64_t th;

	ALLOY_ENFORCE(p >= 0.0 && p <= 1.0, -ERANGE,
		      "fail.probability: %g is not between 0 and 1", p);
	if (p >= 1.0)
		th = UINT64_MAX;
	else
		th = (uint64_t)ldexp(p, 64);
	atomic_store(&s->threshold, th);
	return 0;
}

static int fail_set_option(void *ctx, const char *key, const char *value)
{
	struct fail_state *s = ctx;
	uint64_t n;
	char *end;
	double p;
	int rc;

	if (strcmp(key, "inner") == 0)
		return alloy__wrap_set_inner(&s->w, value);
	if (strcmp(key, "probability") == 0) {
		p = strtod(value, &end);
		ALLOY_ENFORCE(end != value && *end == '\0', -ERANGE,
			      "fail.probability: \"%s\" is not a number",
			      value);
		return set_probability(s, p);
	}
	if (strcmp(key, "nth") && strcmp(key, "run") && strcmp(key, "seed"))
		return alloy__error(
			-EINVAL, __func__,
			"fail.%s: unknown key (inner, nth, run, probability, seed)",
			key);
	rc = alloy__wrap_parse_u64("fail", key, value, &n);
	if (rc)
		return rc;
	if (strcmp(key, "nth") == 0)
		atomic_store(&s->nth, n);
	else if (strcmp(key, "run") == 0)
		atomic_store(&s->run, n ? n : 1);
	else
		atomic_store(&s->seed, n);
	return 0;
}

static void fail_fini(void *ctx)
{
	struct fail_state *s = ctx;

	alloy__wrap_fini(&s->w);
}

static const struct alloy_allocator_ops fail_ops = {
	.abi_major = ALLOY_ABI_MAJOR,
	.abi_minor = ALLOY_ABI_MINOR,
	.struct_size = sizeof(struct alloy_allocator_ops),
	.name = "fail",
	.device_type = ALLOY_DEVICE_CPU,
	.alloc = fail_alloc,
	.free = fail_free,
	.usable_size = fail_usable_size,
	.set_option = fail_set_option,
	.fini = fail_fini,
	/* no realloc: the registry's alloc+copy+free is a site to fail too */
};

int alloy__register_fail_allocator(void)
{
	return alloy__wrap_register(&fs.w, &fail_ops);
}

int alloy_fail_configure(const struct alloy_fail_config *cfg)
{
	int rc;

	ALLOY_ENFORCE(cfg, -EINVAL, "config is NULL");
	ALLOY_ENFORCE(cfg->probability >= 0.0 && cfg->probability <= 1.0,
		      -EINVAL, "probability %g is not between 0 and 1",
		      cfg->probability);
	alloy__ensure_init();
	rc = set_probability(&fs, cfg->probability);
	if (rc)
		return rc;
	atomic_store(&fs.nth, cfg->nth);
	atomic_store(&fs.run, cfg->run ? cfg->run : 1);
	atomic_store(&fs.seed, cfg->seed);
	atomic_store(&fs.seen, 0);
	atomic_store(&fs.injected, 0);
	return 0;
}

uint64_t alloy_fail_count(void)
{
	return atomic_load(&fs.seen);
}

uint64_t alloy_fail_injected(void)
{
	return atomic_load(&fs.injected);
}
