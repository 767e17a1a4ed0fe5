/* SPDX-License-Identifier: MIT */
/*
 * alloy/cuda.h - the CUDA allocators: caching statistics and snapshot,
 * empty_cache, streams, and the simulated device used without a GPU.
 *
 * Allocators (docs/CUDA.md):
 *   cuda              cudaMalloc/cudaFree per block        (module alloy_cuda)
 *   cuda_caching      PyTorch-style caching allocator       (module alloy_cuda)
 *   cuda_host         pinned host caching allocator         (module alloy_cuda)
 *   cuda_async        cudaMallocAsync/cudaFreeAsync         (module alloy_cuda)
 *   cuda_caching_sim  the caching policy on the simulated device (built in)
 *   cuda_host_sim     the pinned policy on the simulated device  (built in)
 *
 * The policy code is the same for the real and the simulated device; only
 * the device-memory source under it differs.  None of this header needs
 * the CUDA toolkit.
 */
#ifndef ALLOY_CUDA_H
#define ALLOY_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <alloy/allocator.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the calling thread's device and stream --------------------------- */

/*
 * Allocations without an explicit stream (alloc, alloy_context_new) are
 * ordered on the thread's current stream of its current device, as in
 * PyTorch.  NULL is the device's default stream.
 */
int alloy_cuda_set_device(int device);
int alloy_cuda_current_device(void);
void alloy_cuda_set_stream(void *stream);
void *alloy_cuda_current_stream(void);

/*
 * ptr (a block of a stream-aware allocator) is also used by work queued
 * on stream: its memory is not handed out again before the work queued on
 * stream up to the block's free is done (cuda_caching and cuda_host record
 * their events at free time).  Goes to the ops->record_stream of the
 * allocator that made dp.
 */
int alloy_cuda_record_stream(const struct alloy_data_ptr *dp, void *stream);

/* ---- device memory as plain pointers ---------------------------------- */

/*
 * size bytes of the CUDA default allocator on device, ordered on stream
 * (NULL: the default stream), as a plain pointer; NULL for size 0 and on
 * failure (the reason in alloy_last_error: -ENODEV for a device out of
 * range or no CUDA default, -EOVERFLOW, -ENOMEM).  The thread's current
 * device and stream are left as they were.  These are the functions
 * PyTorch's torch.cuda.memory.CUDAPluggableAllocator takes by name
 * (docs/CUDA.md).
 */
void *alloy_cuda_malloc(size_t size, int device, void *stream);

/*
 * Free a block of alloy_cuda_malloc, through the allocator that made it
 * (also after the default changed).  The pointer alone names the block:
 * size, device and stream are the caller's record of it, accepted for the
 * allocation's shape and not needed (the block goes back on the stream it
 * was made on, after the streams recorded for it).  NULL is ignored; a
 * pointer that is not a live block is refused with -EINVAL in
 * alloy_last_error and nothing is touched.
 */
void alloy_cuda_free(void *ptr, size_t size, int device, void *stream);

/*
 * alloy_cuda_record_stream for a block of alloy_cuda_malloc; 0, or
 * -EINVAL when ptr is not one.
 */
int alloy_cuda_ptr_record_stream(void *ptr, void *stream);

/* ---- caching allocator statistics ------------------------------------- */

/* Statistics come per pool and for both together. */
enum alloy_cuda_pool {
	ALLOY_CUDA_POOL_ALL = 0,
	ALLOY_CUDA_POOL_SMALL, /* blocks <= 1 MiB, from 2 MiB segments */
	ALLOY_CUDA_POOL_LARGE,
	ALLOY_CUDA_POOL_COUNT
};

/* One statistic: its value now, its peak, and the sums of its ups/downs. */
struct alloy_cuda_stat {
	int64_t current;
	int64_t peak;
	int64_t allocated; /* total increases */
	int64_t freed;	   /* total decreases */
};

struct alloy_cuda_stats {
	uint32_t size;	  /* sizeof the caller's struct */
	uint32_t version; /* ALLOY_CUDA_STATS_VERSION */
	/* counts */
	struct alloy_cuda_stat allocation[ALLOY_CUDA_POOL_COUNT];
	struct alloy_cuda_stat segment[ALLOY_CUDA_POOL_COUNT];
	struct alloy_cuda_stat active[ALLOY_CUDA_POOL_COUNT];
	struct alloy_cuda_stat inactive_split[ALLOY_CUDA_POOL_COUNT];
	/* bytes */
	struct alloy_cuda_stat allocated_bytes[ALLOY_CUDA_POOL_COUNT];
	struct alloy_cuda_stat reserved_bytes[ALLOY_CUDA_POOL_COUNT];
	struct alloy_cuda_stat active_bytes[ALLOY_CUDA_POOL_COUNT];
	struct alloy_cuda_stat inactive_split_bytes[ALLOY_CUDA_POOL_COUNT];
	struct alloy_cuda_stat requested_bytes[ALLOY_CUDA_POOL_COUNT];
	/* blocks and segments of max_split_size or more */
	struct alloy_cuda_stat oversize_allocations;
	struct alloy_cuda_stat oversize_segments;
	/* events */
	uint64_t num_alloc_retries;    /* a device allocation failed, retried */
	uint64_t num_ooms;	       /* out-of-memory errors returned */
	uint64_t num_sync_all_streams; /* device synchronisations by OOM/trim */
	uint64_t num_device_alloc;     /* calls into the source */
	uint64_t num_device_free;
	uint64_t max_split_size; /* the option in force; 0 = unlimited */
	/*
	 * Expandable segments (option expandable_segments): the addresses
	 * they hold reserved (reserved_bytes counts what is mapped in them),
	 * and the map and unmap calls made (each of one or more pieces).
	 */
	uint64_t expandable_address_bytes;
	uint64_t num_maps;
	uint64_t num_unmaps;
};
#define ALLOY_CUDA_STATS_VERSION 2

/* A struct alloy_cuda_stats with its header filled, ready to pass. */
#define ALLOY_CUDA_STATS_INIT                                                \
	((struct alloy_cuda_stats){ .size = sizeof(struct alloy_cuda_stats), \
				    .version = ALLOY_CUDA_STATS_VERSION })

/*
 * Fill *st for one device of a caching allocator (cuda_caching or
 * cuda_caching_sim).  Set st->size and st->version first (start from
 * ALLOY_CUDA_STATS_INIT).  -EINVAL when
 * a is not a caching allocator.
 */
int alloy_cuda_caching_stats(struct alloy_allocator *a, int device,
			     struct alloy_cuda_stats *st);

/*
 * Cap what a caching allocator may reserve on each device at fraction
 * (0, 1] of the device's memory, from now on (PyTorch's
 * set_per_process_memory_fraction; the option
 * cuda_caching.memory_fraction does the same from ALLOY_CONF).  Segments
 * already reserved stay; an allocation that would pass the cap fails with
 * -ENOMEM and a message naming the cap.  -EINVAL when a is not a caching
 * allocator, -ERANGE for a fraction outside (0, 1].
 */
int alloy_cuda_caching_set_memory_fraction(struct alloy_allocator *a,
					   double fraction);

/* Set every peak to its current value (PyTorch reset_peak_memory_stats). */
int alloy_cuda_caching_reset_peaks(struct alloy_allocator *a, int device);

/*
 * Wait for outstanding events and give every unused cached segment back
 * to the device (torch.cuda.empty_cache).  Returns the bytes released.
 * The same as alloy_allocator_trim(a).
 */
long long alloy_cuda_caching_empty_cache(struct alloy_allocator *a);

/* ---- graph pools (capture-safe allocation) ---------------------------- */

/*
 * PyTorch's graph pools.  While a stream captures a CUDA graph, what the
 * graph allocates must come from memory no other work gets while the
 * graph can replay, and the capture must see no free, no synchronisation
 * and no event query.  Between begin_pool and end_pool the caching
 * allocator serves allocations on (device, stream) from the private pool
 * pool_id (segments of its own, reused only by allocations routed to the
 * same pool; a second capture begun with the same id shares it); while
 * any stream is routed no segment is released, no event is queried and
 * empty_cache does nothing.  Blocks freed into a pool stay there until
 * release_pool; its segments then go back to the device as they become
 * unused (after the last capture ends).  0, or -EINVAL (not a caching
 * allocator, pool id 0, a released pool), -EBUSY (stream already
 * routed; release of a pool being captured into), -ENOENT (end without
 * begin, unknown pool), -ENOSPC (16 captures at once).
 */
int alloy_cuda_caching_begin_pool(struct alloy_allocator *a, int device,
				  void *stream, uint64_t pool_id);
int alloy_cuda_caching_end_pool(struct alloy_allocator *a, int device,
				void *stream);
int alloy_cuda_caching_release_pool(struct alloy_allocator *a, int device,
				    uint64_t pool_id);

/* Block states in a snapshot (PyTorch's names). */
enum alloy_cuda_block_state {
	ALLOY_CUDA_BLOCK_INACTIVE = 0,	      /* cached, free */
	ALLOY_CUDA_BLOCK_ACTIVE_ALLOCATED,    /* handed out */
	ALLOY_CUDA_BLOCK_ACTIVE_PENDING_FREE, /* freed, waiting for events */
};

struct alloy_cuda_block_info {
	int device;
	int pool;	   /* ALLOY_CUDA_POOL_SMALL or _LARGE */
	uintptr_t segment; /* address of its segment */
	size_t segment_size;
	void *stream; /* the segment's stream */
	uintptr_t address;
	size_t size;	       /* rounded size the block occupies */
	size_t requested_size; /* what the user asked for (0 when free) */
	int state;	       /* enum alloy_cuda_block_state */
	bool segment_start;    /* first block of its segment */
	bool expandable;       /* its segment is an expandable one */
	uint64_t pool_id;      /* its segment's graph pool, 0: none */
};

/*
 * Call fn for each block of each segment, segments in address order.
 * The allocator's lock is held: fn must not call into the allocator.
 */
int alloy_cuda_caching_foreach_block(
	struct alloy_allocator *a,
	int (*fn)(const struct alloy_cuda_block_info *b, void *arg), void *arg);

/*
 * Write a JSON snapshot: {"allocator":..., "devices":[{"device":0,
 * "stats":{...}, "segments":[{"address":...,"total_size":...,
 * "allocated_size":...,"active_size":...,"stream":...,"segment_type":
 * "small"|"large","blocks":[{"address":...,"size":...,
 * "requested_size":...,"state":"active_allocated"|
 * "active_pending_free"|"inactive"}]}]}]}.  Also the snapshot_json op.
 */
int alloy_cuda_caching_snapshot_json(struct alloy_allocator *a,
				     void (*write)(void *arg, const char *s),
				     void *arg);

/* ---- the simulated device ---------------------------------------------- */

/*
 * A simulated CUDA device on host memory: device memory up to a capacity
 * (allocations beyond it fail as cudaMalloc would), streams and events.
 * Work on a stream completes at once unless the stream is held: then
 * events recorded on it stay pending until the stream is released or
 * completed, or the device (or that event) is synchronised.  Copies move
 * the bytes at once.
 */
struct alloy_cuda_sim;

/* Calls the simulated device has served (for tests and benchmarks). */
struct alloy_cuda_sim_counts {
	uint64_t dev_mallocs;
	uint64_t dev_frees;
	uint64_t host_mallocs;
	uint64_t host_frees;
	uint64_t event_records;
	uint64_t event_queries;
	uint64_t syncs; /* device, stream and event synchronisations */
	uint64_t copies;
	size_t dev_bytes_in_use;
	size_t host_bytes_in_use;
};

int alloy_cuda_sim_create(size_t capacity, struct alloy_cuda_sim **out);
int alloy_cuda_sim_set_capacity(struct alloy_cuda_sim *sim, size_t capacity);
/* How many devices it has (1..16, default 1); they share the capacity. */
int alloy_cuda_sim_set_device_count(struct alloy_cuda_sim *sim, int n);
/* A new stream of the simulated device (never freed before the sim). */
int alloy_cuda_sim_stream_create(struct alloy_cuda_sim *sim, void **stream);
/* Hold (true) or release (false) the completion of work on a stream. */
int alloy_cuda_sim_hold(struct alloy_cuda_sim *sim, void *stream, bool hold);
/* Complete everything queued on a stream so far, even if it is held. */
int alloy_cuda_sim_complete(struct alloy_cuda_sim *sim, void *stream);
int alloy_cuda_sim_counts(struct alloy_cuda_sim *sim,
			  struct alloy_cuda_sim_counts *out);
/*
 * Graph capture on a stream, simulated: between begin and end a device
 * free, a synchronisation (device, stream or event) or an event query
 * invalidates the capture, as the driver does; end then fails with -EIO.
 */
int alloy_cuda_sim_capture_begin(struct alloy_cuda_sim *sim, void *stream);
int alloy_cuda_sim_capture_end(struct alloy_cuda_sim *sim, void *stream);

/*
 * Register a caching / pinned host allocator on sim under name (device
 * type cuda / cuda_host).  cuda_caching_sim and cuda_host_sim are
 * registered at start-up over one shared simulator of 16 GiB
 * (option cuda_caching_sim.capacity:SIZE changes it).
 */
int alloy_cuda_caching_register_sim(struct alloy_cuda_sim *sim,
				    const char *name,
				    struct alloy_allocator **out);
int alloy_cuda_host_register_sim(struct alloy_cuda_sim *sim, const char *name,
				 struct alloy_allocator **out);
int alloy_cuda_plain_register_sim(struct alloy_cuda_sim *sim, const char *name,
				  struct alloy_allocator **out);
/* The stream-ordered allocator (cuda_async's policy) on sim. */
int alloy_cuda_async_register_sim(struct alloy_cuda_sim *sim, const char *name,
				  struct alloy_allocator **out);

/* The simulator under an allocator registered above, or NULL. */
struct alloy_cuda_sim *alloy_cuda_sim_of(struct alloy_allocator *a);

/* The simulator behind the built-in cuda_caching_sim / cuda_host_sim. */
struct alloy_cuda_sim *alloy_cuda_sim_builtin(void);

/*
 * Register the device context of sim for device type cuda (for tests and
 * tools on machines without a GPU; the alloy_cuda module registers the
 * real one).  -EEXIST when cuda already has a context.
 */
int alloy_cuda_sim_register_context(struct alloy_cuda_sim *sim);

#ifdef __cplusplus
}
#endif
#endif /* ALLOY_CUDA_H */
