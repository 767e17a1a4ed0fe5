// SPDX-License-Identifier: MIT
/*
 * tests/unit/testutil.c - the test allocator and small helpers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testutil.h"
#include "allocators/freelink.h"

struct header {
	unsigned id;
	size_t size;
};

static atomic_uint next_id = 1;

/* The header sits in the align bytes before the block (align >= 16). */
static size_t header_room(size_t align)
{
	return align < sizeof(struct header) ? sizeof(struct header) : align;
}

static void *ta_alloc(void *ctx, size_t size, size_t align, unsigned flags)
{
	struct test_alloc *ta = ctx;
	long n = atomic_fetch_add(&ta->allocs, 1) + 1;
	long fail = atomic_load(&ta->fail_from);
	size_t room = header_room(align);
	char *base;

	if (fail && n >= fail) {
		atomic_fetch_sub(&ta->allocs, 1);
		return NULL;
	}
	if (posix_memalign((void **)&base,
			   align < sizeof(void *) ? sizeof(void *) : align,
			   room + size)) {
		atomic_fetch_sub(&ta->allocs, 1);
		return NULL;
	}
	struct header h = { ta->id, size };
	memcpy(base + room - sizeof(h), &h, sizeof(h));
	ta->last_size = size;
	ta->last_align = align;
	ta->last_flags = flags;
	/* Fresh memory is never zero here: code that needs zero must ask. */
	memset(base + room, flags & ALLOY_ALLOC_ZERO ? 0 : 0xa5, size);
	atomic_fetch_add(&ta->live_bytes, (long)size);
	return base + room;
}

static void ta_free(void *ctx, void *ptr, size_t size, size_t align)
{
	struct test_alloc *ta = ctx;
	size_t room = header_room(align);
	char *base = (char *)ptr - room;
	struct header h;

	memcpy(&h, base + room - sizeof(h), sizeof(h));
	if (h.id != ta->id || h.size != size)
		atomic_fetch_add(&ta->bad_frees, 1);
	atomic_fetch_add(&ta->frees, 1);
	atomic_fetch_sub(&ta->live_bytes, (long)size);
	free(base);
}

struct alloy_allocator_ops test_alloc_ops(const char *name)
{
	struct alloy_allocator_ops ops = {
		.abi_major = ALLOY_ABI_MAJOR,
		.abi_minor = ALLOY_ABI_MINOR,
		.struct_size = sizeof(struct alloy_allocator_ops),
		.name = name,
		.device_type = ALLOY_DEVICE_CPU,
		.alloc = ta_alloc,
		.free = ta_free,
	};
	return ops;
}

struct alloy_allocator *
test_alloc_register_ops(struct test_alloc *ta, const char *name,
			const struct alloy_allocator_ops *ops)
{
	struct alloy_allocator *a = NULL;
	int rc;

	memset(ta, 0, sizeof(*ta));
	snprintf(ta->name, sizeof(ta->name), "%s", name);
	ta->id = atomic_fetch_add(&next_id, 1);
	rc = alloy_register_allocator(ops, ta, "test", &a);
	ck_assert_msg(rc == 0, "registering %s: %d %s", name, rc,
		      alloy_last_error());
	return a;
}

struct alloy_allocator *test_alloc_register(struct test_alloc *ta,
					    const char *name)
{
	struct alloy_allocator_ops ops = test_alloc_ops(name);

	return test_alloc_register_ops(ta, name, &ops);
}

int fake_copies;

static int fake_new(void *ctx, struct alloy_device dev, size_t nbytes,
		    struct alloy_data_ptr *out)
{
	(void)ctx;
	(void)dev;
	return alloy_alloc_default(ALLOY_DEVICE_CPU, nbytes, 0, out);
}

static int fake_copy(void *ctx, size_t n, const void *src,
		     struct alloy_device sd, void *dst, struct alloy_device dd,
		     void *stream)
{
	(void)ctx;
	(void)sd;
	(void)dd;
	(void)stream;
	fake_copies++;
	memmove(dst, src, n);
	return 0;
}

struct alloy_context_ops fake_context_ops(int device_type)
{
	struct alloy_context_ops ops = {
		.abi_major = ALLOY_ABI_MAJOR,
		.struct_size = sizeof(ops),
		.name = "fake",
		.device_type = device_type,
		.new_bytes = fake_new,
		.copy_bytes = fake_copy,
	};
	return ops;
}

void fake_device_register(int device_type)
{
	struct alloy_context_ops ops = fake_context_ops(device_type);

	if (alloy_has_context(device_type))
		ck_assert_ok(alloy_unregister_context(device_type));
	ck_assert_ok(alloy_register_context(&ops, NULL));
}

void test_set_conf(const char *conf)
{
	if (conf)
		setenv("ALLOY_CONF", conf, 1);
	else
		unsetenv("ALLOY_CONF");
}

const char *test_stderr_of(void (*fn)(void *arg), void *arg)
{
	static char out[8192];
	FILE *tmp = tmpfile();
	int saved = dup(2);
	size_t n;

	ck_assert_ptr_nonnull(tmp);
	ck_assert_int_ge(saved, 0);
	fflush(stderr);
	dup2(fileno(tmp), 2);
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(tmp);
	n = fread(out, 1, sizeof(out) - 1, tmp);
	out[n] = '\0';
	fclose(tmp);
	return out;
}

int test_count_lines_with(const char *text, const char *what)
{
	int n = 0;

	for (const char *line = text; *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);

		if (memmem(line, len, what, strlen(what)))
			n++;
		line += len + (end != NULL);
	}
	return n;
}

struct two_blocks {
	struct alloy_allocator *a;
	size_t size, align;
	struct alloy_data_ptr dp[2];
};

static void take_two(void *arg)
{
	struct two_blocks *t = arg;

	for (int i = 0; i < 2; i++)
		ck_assert_ok(
			alloy_alloc(t->a, t->size, t->align, 0, &t->dp[i]));
}

/*
 * The blocks bad links drop stay allocated, by design: kept reachable
 * here so that memcheck does not count them lost.
 */
static void *volatile dropped_blocks[8];
static unsigned dropped;
static bool said_bad_link;

/*
 * Blind writes into the link of a cached block: text, zero, a pointer
 * to a real block.  Each must end the list (the next allocation makes a
 * new block, never the one behind or the value written), and the first
 * is said on stderr.  Under valgrind the links are plain (the key's mask
 * is 0): only the text, misaligned, can be told from a link there.
 */
void test_check_bad_link(struct alloy_allocator *a, size_t size, size_t align)
{
	bool hidden = freelink_key().mask != 0;
	struct two_blocks t = { .a = a, .size = size, .align = align };
	struct alloy_data_ptr x, y;
	uintptr_t values[3] = { 0x4141414141414141u, 0, 0 };
	void *xp, *yp;
	const char *out;

	for (int i = 0; i < 3; i++) {
		ck_assert_int_ge(alloy_allocator_trim(a), 0);
		ck_assert_ok(alloy_alloc(a, size, align, 0, &x));
		ck_assert_ok(alloy_alloc(a, size, align, 0, &y));
		xp = x.ptr;
		yp = y.ptr;
		alloy_data_ptr_free(&x);
		alloy_data_ptr_free(&y);
		/* Kept, y at the head linked to x, not in plain sight. */
		if (hidden)
			ck_assert_ptr_ne(*(void **)yp, xp);
		values[2] = (uintptr_t)xp;
		dropped_blocks[dropped++ % 8] = xp;
		*(uintptr_t *)yp = values[i]; /* a stale pointer's write */
		out = test_stderr_of(take_two, &t);
		ck_assert_ptr_eq(t.dp[0].ptr, yp);
		if (hidden || i == 0) {
			ck_assert_ptr_ne(t.dp[1].ptr, xp);
			ck_assert_ptr_ne(t.dp[1].ptr, (void *)values[i]);
		}
		/* Said once a process (later ones are counted). */
		if (i == 0 && !said_bad_link) {
			ck_assert_msg(
				strstr(out, "was written to after its free"),
				"%s", out);
			said_bad_link = true;
		}
		for (int j = 0; j < 2; j++)
			alloy_data_ptr_free(&t.dp[j]);
	}
}
