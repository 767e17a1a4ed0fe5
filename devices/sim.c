// SPDX-License-Identifier: MIT
/*
 * devices/sim.c - a simulated CUDA device on host memory.
 *
 * Device memory is anonymous mmap(MAP_NORESERVE): untouched pages cost
 * nothing, so traces of a multi-GiB training step replay on a small
 * machine, and fresh memory reads as zeroes like fresh cudaMalloc memory
 * often does not (tests must not rely on it; the allocators do not).
 * A capacity bounds the bytes in use so tests can force out-of-memory.
 *
 * Each stream counts the work queued on it (event records and async
 * copies) and the work completed.  Unless a test holds the stream, queued
 * work completes at once; a held stream completes only when released,
 * completed by hand, or synchronised.  That is all a caching allocator
 * can observe of a GPU's asynchrony, and tests control every step of it.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "kernel/base.h"
#include "devices/devsrc.h"

struct sim_stream {
	uint64_t queued;    /* work items queued so far */
	uint64_t completed; /* of which done */
	bool hold;
	struct sim_stream *next;
};

struct sim_event {
	struct sim_stream *stream; /* NULL: never recorded (counts as done) */
	uint64_t seq;
};

struct sim_block {
	void *ptr;
	size_t size;
	struct sim_block *next;
};

struct alloy_cuda_sim {
	pthread_mutex_t lock;
	size_t capacity; /* shared by its devices */
	int ndevices;
	struct sim_stream default_stream;
	struct sim_stream *streams; /* created ones; default_stream first */
	struct sim_block *dev_blocks;
	struct sim_block *host_blocks;
	struct sim_block *va_ranges; /* reserved address ranges */
	struct alloy_cuda_sim_counts counts;
	/*
	 * Streams capturing a graph, and whether a call a capture cannot
	 * contain (a free, a synchronisation, an event query) was made
	 * while one was: the driver then invalidates the capture.
	 */
	int capturing;
	bool capture_broken;
};

/* A call that breaks a capture underway; the lock is held. */
static void capture_breaker(struct alloy_cuda_sim *sim)
{
	if (sim->capturing)
		sim->capture_broken = true;
}

static struct sim_stream *stream_of(struct alloy_cuda_sim *sim, void *stream)
{
	return stream ? stream : &sim->default_stream;
}

static void queue_work(struct sim_stream *s)
{
	s->queued++;
	if (!s->hold)
		s->completed = s->queued;
}

/* Remove the block at ptr from *list; its size, or 0 if it is not there. */
static size_t unlink_block(struct sim_block **list, void *ptr)
{
	for (struct sim_block **pp = list; *pp; pp = &(*pp)->next) {
		struct sim_block *b = *pp;
		size_t size = b->size;

		if (b->ptr == ptr) {
			*pp = b->next;
			free(b);
			return size;
		}
	}
	return 0;
}

static int sim_dev_malloc(void *ctx, int device, size_t size, void **out)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_block *b;
	void *p;

	pthread_mutex_lock(&sim->lock);
	if (device < 0 || device >= sim->ndevices || size > sim->capacity ||
	    sim->counts.dev_bytes_in_use > sim->capacity - size) {
		size_t used = sim->counts.dev_bytes_in_use;
		int n = sim->ndevices;

		pthread_mutex_unlock(&sim->lock);
		if (device < 0 || device >= n)
			return alloy__error(
				-ENODEV, "sim_malloc",
				"simulated device %d does not exist (%d devices)",
				device, n);
		return alloy__error(
			-ENOMEM, "sim_malloc",
			"out of memory: %zu bytes asked, %zu of %zu in use",
			size, used, sim->capacity);
	}
	b = malloc(sizeof(*b));
	p = mmap(NULL, size ? size : 1, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (!b || p == MAP_FAILED) {
		pthread_mutex_unlock(&sim->lock);
		free(b);
		return alloy__error(-ENOMEM, "sim_malloc",
				    "host mmap of %zu bytes failed", size);
	}
	b->ptr = p;
	b->size = size;
	b->next = sim->dev_blocks;
	sim->dev_blocks = b;
	sim->counts.dev_bytes_in_use += size;
	sim->counts.dev_mallocs++;
	pthread_mutex_unlock(&sim->lock);
	*out = p;
	return 0;
}

/* Forget block ptr of *list and count the free; its size, or 0. */
static size_t take_block(struct alloy_cuda_sim *sim, struct sim_block **list,
			 size_t *in_use, uint64_t *frees, void *ptr)
{
	size_t size;

	pthread_mutex_lock(&sim->lock);
	capture_breaker(sim);
	size = unlink_block(list, ptr);
	if (size) {
		*in_use -= size;
		(*frees)++;
	}
	pthread_mutex_unlock(&sim->lock);
	return size;
}

static int sim_dev_free(void *ctx, int device, void *ptr)
{
	struct alloy_cuda_sim *sim = ctx;
	size_t size =
		take_block(sim, &sim->dev_blocks, &sim->counts.dev_bytes_in_use,
			   &sim->counts.dev_frees, ptr);

	ALLOY_ENFORCE(size, -EINVAL,
		      "%p is not simulated device memory (double free?)", ptr);
	munmap(ptr, size);
	return 0;
}

/*
 * Stream-ordered: the bytes exist at once (host memory), the work item
 * keeps the stream's order visible to tests.
 */
static int sim_dev_malloc_async(void *ctx, int device, size_t size,
				void *stream, void **out)
{
	struct alloy_cuda_sim *sim = ctx;
	int rc = sim_dev_malloc(ctx, device, size, out);

	if (!rc) {
		pthread_mutex_lock(&sim->lock);
		queue_work(stream_of(sim, stream));
		pthread_mutex_unlock(&sim->lock);
	}
	return rc;
}

static int sim_dev_free_async(void *ctx, int device, void *ptr, void *stream)
{
	struct alloy_cuda_sim *sim = ctx;

	pthread_mutex_lock(&sim->lock);
	queue_work(stream_of(sim, stream));
	pthread_mutex_unlock(&sim->lock);
	return sim_dev_free(ctx, device, ptr);
}

static int sim_mem_info(void *ctx, int device, size_t *free_b, size_t *total)
{
	struct alloy_cuda_sim *sim = ctx;

	pthread_mutex_lock(&sim->lock);
	*total = sim->capacity;
	*free_b = sim->capacity > sim->counts.dev_bytes_in_use
			  ? sim->capacity - sim->counts.dev_bytes_in_use
			  : 0;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

static int sim_device_count(void *ctx, int *count)
{
	struct alloy_cuda_sim *sim = ctx;

	pthread_mutex_lock(&sim->lock);
	*count = sim->ndevices;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

static int sim_dev_memset(void *ctx, int device, void *ptr, int byte, size_t n,
			  void *stream)
{
	struct alloy_cuda_sim *sim = ctx;

	memset(ptr, byte, n);
	pthread_mutex_lock(&sim->lock);
	queue_work(stream_of(sim, stream));
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

static int sim_copy(void *ctx, int device, void *dst, const void *src, size_t n,
		    enum alloy__copy_kind kind, void *stream, bool sync)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_stream *s;

	memmove(dst, src, n);
	pthread_mutex_lock(&sim->lock);
	s = stream_of(sim, stream);
	queue_work(s);
	if (sync)
		s->completed = s->queued;
	sim->counts.copies++;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

static int sim_host_malloc(void *ctx, size_t size, void **out)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_block *b = malloc(sizeof(*b));
	void *p = NULL;

	if (!b || posix_memalign(&p, 4096, size ? size : 1)) {
		free(b);
		return alloy__error(-ENOMEM, "sim_host_malloc",
				    "no host memory for %zu pinned bytes",
				    size);
	}
	pthread_mutex_lock(&sim->lock);
	b->ptr = p;
	b->size = size ? size : 1;
	b->next = sim->host_blocks;
	sim->host_blocks = b;
	sim->counts.host_bytes_in_use += b->size;
	sim->counts.host_mallocs++;
	pthread_mutex_unlock(&sim->lock);
	*out = p;
	return 0;
}

static int sim_host_free(void *ctx, void *ptr)
{
	struct alloy_cuda_sim *sim = ctx;
	size_t size = take_block(sim, &sim->host_blocks,
				 &sim->counts.host_bytes_in_use,
				 &sim->counts.host_frees, ptr);

	ALLOY_ENFORCE(size, -EINVAL,
		      "%p is not simulated pinned memory (double free?)", ptr);
	free(ptr);
	return 0;
}

static int sim_event_create(void *ctx, int device, void **ev)
{
	struct sim_event *e = calloc(1, sizeof(*e));

	ALLOY_ENFORCE(e, -ENOMEM, "no memory for a simulated event");
	*ev = e;
	return 0;
}

static int sim_event_destroy(void *ctx, void *ev)
{
	free(ev);
	return 0;
}

static int sim_event_record(void *ctx, void *ev, void *stream)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_event *e = ev;

	pthread_mutex_lock(&sim->lock);
	e->stream = stream_of(sim, stream);
	queue_work(e->stream);
	e->seq = e->stream->queued;
	sim->counts.event_records++;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

static int sim_event_query(void *ctx, void *ev)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_event *e = ev;
	int done;

	pthread_mutex_lock(&sim->lock);
	capture_breaker(sim);
	done = !e->stream || e->stream->completed >= e->seq;
	sim->counts.event_queries++;
	pthread_mutex_unlock(&sim->lock);
	return done;
}

static int sim_event_synchronize(void *ctx, void *ev)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_event *e = ev;

	pthread_mutex_lock(&sim->lock);
	capture_breaker(sim);
	/* Waiting for an event means the work before it has finished. */
	if (e->stream && e->stream->completed < e->seq)
		e->stream->completed = e->seq;
	sim->counts.syncs++;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

static int sim_stream_synchronize(void *ctx, void *stream)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_stream *s;

	pthread_mutex_lock(&sim->lock);
	capture_breaker(sim);
	s = stream_of(sim, stream);
	s->completed = s->queued;
	sim->counts.syncs++;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

static int sim_device_synchronize(void *ctx, int device)
{
	struct alloy_cuda_sim *sim = ctx;

	pthread_mutex_lock(&sim->lock);
	capture_breaker(sim);
	for (struct sim_stream *s = sim->streams; s; s = s->next)
		s->completed = s->queued;
	sim->counts.syncs++;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

/* ---- virtual memory ------------------------------------------------- */

/*
 * A reserved range is host address space mapped without access; mapping
 * a handle there puts fresh pages in its place (still without access),
 * setting access opens them, and unmapping puts back pages without access,
 * so the range stays reserved.  A handle holds only its size: what the
 * device's capacity counts.
 */
struct sim_handle {
	size_t size;
};

#define SIM_VMM_ALIGN ((size_t)2 << 20)

static int sim_va_reserve(void *ctx, int device, size_t size, void **out)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_block *b;
	void *p;

	if (device < 0 || device >= sim->ndevices || !size ||
	    size % SIM_VMM_ALIGN)
		return alloy__error(-EINVAL, "sim_va_reserve",
				    "device %d, size %zu: not a device or not "
				    "a multiple of 2 MiB",
				    device, size);
	/* Over-reserve to align the start to 2 MiB, as the driver does. */
	p = mmap(NULL, size + SIM_VMM_ALIGN, PROT_NONE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	b = malloc(sizeof(*b));
	if (p == MAP_FAILED || !b) {
		if (p != MAP_FAILED)
			munmap(p, size + SIM_VMM_ALIGN);
		free(b);
		return alloy__error(-ENOMEM, "sim_va_reserve",
				    "no host address space for %zu bytes",
				    size);
	}
	{
		uintptr_t a = ((uintptr_t)p + SIM_VMM_ALIGN - 1) &
			      ~(uintptr_t)(SIM_VMM_ALIGN - 1);
		size_t head = a - (uintptr_t)p;

		if (head)
			munmap(p, head);
		if (SIM_VMM_ALIGN - head)
			munmap((char *)a + size, SIM_VMM_ALIGN - head);
		p = (void *)a;
	}
	b->ptr = p;
	b->size = size;
	pthread_mutex_lock(&sim->lock);
	b->next = sim->va_ranges;
	sim->va_ranges = b;
	pthread_mutex_unlock(&sim->lock);
	*out = p;
	return 0;
}

/* Whether [ptr, ptr + size) lies in one reserved range, 2 MiB aligned. */
static bool in_reserved(struct alloy_cuda_sim *sim, void *ptr, size_t size)
{
	uintptr_t a = (uintptr_t)ptr;
	bool ok = false;

	if (!size || a % SIM_VMM_ALIGN || size % SIM_VMM_ALIGN)
		return false;
	pthread_mutex_lock(&sim->lock);
	for (struct sim_block *b = sim->va_ranges; b && !ok; b = b->next)
		ok = a >= (uintptr_t)b->ptr &&
		     a + size <= (uintptr_t)b->ptr + b->size;
	pthread_mutex_unlock(&sim->lock);
	return ok;
}

static int sim_va_release(void *ctx, void *ptr, size_t size)
{
	struct alloy_cuda_sim *sim = ctx;
	size_t had;

	pthread_mutex_lock(&sim->lock);
	capture_breaker(sim);
	had = unlink_block(&sim->va_ranges, ptr);
	pthread_mutex_unlock(&sim->lock);
	ALLOY_ENFORCE(had == size, -EINVAL,
		      "%p (%zu bytes) is not a reserved range", ptr, size);
	munmap(ptr, size);
	return 0;
}

static int sim_mem_create(void *ctx, int device, size_t size, void **handle)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_handle *h;

	if (device < 0 || device >= sim->ndevices || !size ||
	    size % SIM_VMM_ALIGN)
		return alloy__error(-EINVAL, "sim_mem_create",
				    "device %d, size %zu: not a device or not "
				    "a multiple of 2 MiB",
				    device, size);
	h = malloc(sizeof(*h));
	if (!h)
		return alloy__error(-ENOMEM, "sim_mem_create",
				    "no host memory for a handle");
	pthread_mutex_lock(&sim->lock);
	if (size > sim->capacity ||
	    sim->counts.dev_bytes_in_use > sim->capacity - size) {
		size_t used = sim->counts.dev_bytes_in_use;

		pthread_mutex_unlock(&sim->lock);
		free(h);
		return alloy__error(
			-ENOMEM, "sim_mem_create",
			"out of memory: %zu bytes asked, %zu of %zu in use",
			size, used, sim->capacity);
	}
	sim->counts.dev_bytes_in_use += size;
	sim->counts.dev_mallocs++;
	pthread_mutex_unlock(&sim->lock);
	h->size = size;
	*handle = h;
	return 0;
}

static int sim_mem_release(void *ctx, void *handle)
{
	struct alloy_cuda_sim *sim = ctx;
	struct sim_handle *h = handle;

	pthread_mutex_lock(&sim->lock);
	capture_breaker(sim);
	sim->counts.dev_bytes_in_use -= h->size;
	sim->counts.dev_frees++;
	pthread_mutex_unlock(&sim->lock);
	free(h);
	return 0;
}

/* Fresh pages without access over [ptr, ptr + size). */
static int replace_pages(void *ptr, size_t size)
{
	void *p = mmap(ptr, size, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED,
		       -1, 0);

	return p == MAP_FAILED ? -ENOMEM : 0;
}

static int sim_mem_map(void *ctx, void *ptr, size_t size, void *handle)
{
	struct sim_handle *h = handle;

	ALLOY_ENFORCE(in_reserved(ctx, ptr, size) && h && h->size == size,
		      -EINVAL,
		      "%p (%zu bytes): not in a reserved range, or "
		      "not the handle's size",
		      ptr, size);
	ALLOY_ENFORCE(!replace_pages(ptr, size), -ENOMEM,
		      "host mmap of %zu bytes failed", size);
	return 0;
}

static int sim_mem_set_access(void *ctx, int device, void *ptr, size_t size)
{
	ALLOY_ENFORCE(in_reserved(ctx, ptr, size), -EINVAL,
		      "%p (%zu bytes) is not in a reserved range", ptr, size);
	ALLOY_ENFORCE(!mprotect(ptr, size, PROT_READ | PROT_WRITE), -ENOMEM,
		      "mprotect of %zu bytes failed", size);
	return 0;
}

static int sim_mem_unmap(void *ctx, void *ptr, size_t size)
{
	ALLOY_ENFORCE(in_reserved(ctx, ptr, size), -EINVAL,
		      "%p (%zu bytes) is not in a reserved range", ptr, size);
	ALLOY_ENFORCE(!replace_pages(ptr, size), -ENOMEM,
		      "host mmap of %zu bytes failed", size);
	return 0;
}

static const struct alloy__devsrc_ops sim_ops = {
	.name = "sim",
	.dev_malloc = sim_dev_malloc,
	.dev_free = sim_dev_free,
	.dev_malloc_async = sim_dev_malloc_async,
	.dev_free_async = sim_dev_free_async,
	.mem_info = sim_mem_info,
	.device_count = sim_device_count,
	.dev_memset = sim_dev_memset,
	.copy = sim_copy,
	.host_malloc = sim_host_malloc,
	.host_free = sim_host_free,
	.event_create = sim_event_create,
	.event_destroy = sim_event_destroy,
	.event_record = sim_event_record,
	.event_query = sim_event_query,
	.event_synchronize = sim_event_synchronize,
	.stream_synchronize = sim_stream_synchronize,
	.device_synchronize = sim_device_synchronize,
	.va_reserve = sim_va_reserve,
	.va_release = sim_va_release,
	.mem_create = sim_mem_create,
	.mem_release = sim_mem_release,
	.mem_map = sim_mem_map,
	.mem_set_access = sim_mem_set_access,
	.mem_unmap = sim_mem_unmap,
};

struct alloy__devsrc alloy__cuda_sim_source(struct alloy_cuda_sim *sim)
{
	return (struct alloy__devsrc){ &sim_ops, sim };
}

/* ---- the controls of alloy/cuda.h --------------------------------------- */

/* The built-in device's capacity: 16 GiB, never touched until used. */
#define SIM_BUILTIN_CAPACITY ((size_t)16 << 30)

static struct alloy_cuda_sim builtin_device = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.capacity = SIM_BUILTIN_CAPACITY,
	.ndevices = 1,
	.streams = &builtin_device.default_stream,
};

struct alloy_cuda_sim *alloy__cuda_sim_builtin_device(void)
{
	return &builtin_device;
}

int alloy_cuda_sim_create(size_t capacity, struct alloy_cuda_sim **out)
{
	struct alloy_cuda_sim *sim;

	ALLOY_ENFORCE(out, -EINVAL, "out is NULL");
	sim = calloc(1, sizeof(*sim));
	ALLOY_ENFORCE(sim, -ENOMEM, "no memory for a simulated device");
	pthread_mutex_init(&sim->lock, NULL);
	sim->capacity = capacity;
	sim->ndevices = 1;
	sim->streams = &sim->default_stream;
	*out = sim;
	return 0;
}

int alloy_cuda_sim_set_capacity(struct alloy_cuda_sim *sim, size_t capacity)
{
	ALLOY_ENFORCE(sim, -EINVAL, "sim is NULL");
	pthread_mutex_lock(&sim->lock);
	sim->capacity = capacity;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

int alloy_cuda_sim_set_device_count(struct alloy_cuda_sim *sim, int n)
{
	ALLOY_ENFORCE(sim, -EINVAL, "sim is NULL");
	ALLOY_ENFORCE(n >= 1 && n <= 16, -EINVAL,
		      "device count %d is not between 1 and 16", n);
	pthread_mutex_lock(&sim->lock);
	sim->ndevices = n;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

int alloy_cuda_sim_stream_create(struct alloy_cuda_sim *sim, void **stream)
{
	struct sim_stream *s;

	ALLOY_ENFORCE(sim && stream, -EINVAL, "sim or stream is NULL");
	s = calloc(1, sizeof(*s));
	ALLOY_ENFORCE(s, -ENOMEM, "no memory for a simulated stream");
	pthread_mutex_lock(&sim->lock);
	s->next = sim->streams->next;
	sim->streams->next = s;
	pthread_mutex_unlock(&sim->lock);
	*stream = s;
	return 0;
}

int alloy_cuda_sim_hold(struct alloy_cuda_sim *sim, void *stream, bool hold)
{
	struct sim_stream *s;

	ALLOY_ENFORCE(sim, -EINVAL, "sim is NULL");
	pthread_mutex_lock(&sim->lock);
	s = stream_of(sim, stream);
	s->hold = hold;
	if (!hold)
		s->completed = s->queued;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

int alloy_cuda_sim_complete(struct alloy_cuda_sim *sim, void *stream)
{
	ALLOY_ENFORCE(sim, -EINVAL, "sim is NULL");
	pthread_mutex_lock(&sim->lock);
	stream_of(sim, stream)->completed = stream_of(sim, stream)->queued;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

int alloy_cuda_sim_counts(struct alloy_cuda_sim *sim,
			  struct alloy_cuda_sim_counts *out)
{
	ALLOY_ENFORCE(sim && out, -EINVAL, "sim or out is NULL");
	pthread_mutex_lock(&sim->lock);
	*out = sim->counts;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

int alloy_cuda_sim_capture_begin(struct alloy_cuda_sim *sim, void *stream)
{
	ALLOY_ENFORCE(sim, -EINVAL, "sim is NULL");
	pthread_mutex_lock(&sim->lock);
	if (!sim->capturing++)
		sim->capture_broken = false;
	pthread_mutex_unlock(&sim->lock);
	return 0;
}

int alloy_cuda_sim_capture_end(struct alloy_cuda_sim *sim, void *stream)
{
	bool broken;

	ALLOY_ENFORCE(sim, -EINVAL, "sim is NULL");
	pthread_mutex_lock(&sim->lock);
	if (!sim->capturing) {
		pthread_mutex_unlock(&sim->lock);
		return alloy__error(-EINVAL, "alloy_cuda_sim_capture_end",
				    "no capture is underway");
	}
	broken = sim->capture_broken;
	sim->capturing--;
	pthread_mutex_unlock(&sim->lock);
	return broken ? alloy__error(-EIO, "alloy_cuda_sim_capture_end",
				     "the capture was invalidated: a free, a "
				     "synchronisation or an event query was "
				     "made while it was underway")
		      : 0;
}
