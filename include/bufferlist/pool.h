/* SPDX-License-Identifier: MIT */
/*
 * pool.h - where raw memory comes from, and what the library copied.
 *
 * The allocator is the ground floor of the library: every raw kind that
 * allocates (combined, aligned), every list chunk and every internal table
 * gets its memory through the allocator in force when it was made, and
 * returns it through the same one.  A user can install an allocator for
 * huge pages, NUMA-local or io_uring-registered memory; tests install one
 * that fails the Nth call.
 */
#ifndef BUFFERLIST_POOL_H
#define BUFFERLIST_POOL_H

#include <stddef.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <bufferlist/common.h>

BL_BEGIN_DECLS

/**
 * struct bl_allocator - a source of memory.
 * @alloc: returns @size bytes aligned to @align (a power of two, at least
 *         sizeof(void *)), or NULL.  Must be callable from any thread.
 * @free:  gives back a block that @alloc returned, with the same @size
 *         and @align.  Called from whichever thread drops the last
 *         reference, which is not necessarily the thread that allocated.
 * @opaque: passed to both.
 */
struct bl_allocator {
	void *(*alloc)(void *opaque, size_t size, size_t align);
	void (*free)(void *opaque, void *ptr, size_t size, size_t align);
	void *opaque;
};

/**
 * bl_allocator_set() - install the process-wide allocator.
 * @a: copied; NULL restores the default (malloc-based) allocator.
 *
 * Memory allocated before the call is freed through the allocator that
 * allocated it (each raw and chunk remembers it), so this may be called
 * at any time while no other thread is creating buffers.
 */
BL_API void bl_allocator_set(const struct bl_allocator *a);

/** bl_allocator_get() - copy the allocator in force into @out. */
BL_API void bl_allocator_get(struct bl_allocator *out);

/**
 * struct bl_stats - what the library did, summed over all threads.
 * @copied_bytes: payload bytes the library copied (append of caller bytes,
 *                copy_in/out, rebuild, c_str, ...).  Zero-copy operations
 *                never add to it; tests use it to prove they did not copy.
 * @copy_ops:     copies made (a call may make more than one).
 * @raws_created: raws made by any constructor.
 * @raws_freed:   raws whose last reference was dropped.
 */
struct bl_stats {
	uint64_t copied_bytes;
	uint64_t copy_ops;
	uint64_t raws_created;
	uint64_t raws_freed;
};

/**
 * bl_stats_get() - sum of the counters of every thread, living or exited.
 *
 * The counters are per thread, written without atomic read-modify-write,
 * so a sum taken while other threads work is a consistent-enough snapshot,
 * not an exact one.
 */
BL_API void bl_stats_get(struct bl_stats *out);

/** bl_stats_thread() - the calling thread's counters only (exact). */
BL_API void bl_stats_thread(struct bl_stats *out);

/**
 * bl_stats_reset() - zero every thread's copy counters (no thread may be
 * busy).  raws_created and raws_freed are the pools' own counts and are not
 * reset: compare two snapshots instead.
 */
BL_API void bl_stats_reset(void);


/*
 * Named pools, in the manner of Ceph's mempools: every raw belongs to one
 * pool, which says where its memory comes from and accounts for it.  Pool
 * "default" (bl_pool_default()) is used when none is named, and takes its
 * memory from the allocator in force.  A raw keeps its pool for life, and
 * what the library copies on a raw's behalf (rebuild, c_str, compact, a
 * private copy of a static segment) is allocated in the pool of the raw it
 * replaces, so accounting does not leak across pools.
 *
 * Small combined raws of the default pool are recycled through per-thread
 * caches of size classes (up to BL_POOL_CACHE_MAX bytes of data): creating
 * and releasing one costs a few loads and stores.  A raw released on
 * another thread goes into that thread's cache; caches spill to a shared
 * depot in batches (one lock per batch), the depot is capped, and an
 * exiting thread hands its cache to the depot.  Set BL_POOL_CACHE=0 in the
 * environment, or call bl_pool_cache_enable(false), to send every raw
 * straight to the allocator (for valgrind or ASan).  Raws made while a
 * custom allocator is in force are never cached: that allocator sees every
 * allocation and every free.
 */
#define BL_POOL_MAX 32
#define BL_POOL_NAME_MAX 32
#define BL_POOL_CACHE_MAX 65536

struct bl_pool;

/**
 * bl_pool_default() - the pool used when none is named.
 * Return: that pool (borrowed, lives as long as the process), never NULL.
 */
BL_API struct bl_pool *bl_pool_default(void);

/**
 * bl_pool_create() - the pool named @name, made on first use.
 * @a: the allocator for this pool's raws (copied), or NULL for the
 *     allocator in force at each allocation.  Ignored when the pool exists.
 * Return: borrowed (pools live as long as the process), or NULL with
 * errno set: ENOSPC (BL_POOL_MAX pools exist already), EINVAL (@name is
 * NULL, empty or too long).
 */
BL_API struct bl_pool *bl_pool_create(const char *name,
				      const struct bl_allocator *a);

/**
 * bl_pool_name() - the name @p was created with.
 * Return: the name (borrowed, valid as long as the process); it cannot
 * fail.
 */
BL_API const char *bl_pool_name(const struct bl_pool *p);

/**
 * struct bl_pool_stats - one pool's accounting, summed over threads.
 * @raws:       raws alive;
 * @bytes:      their capacity in bytes (what the pool holds);
 * @bytes_used: bytes of it handed out to slices (each raw's frontier);
 *              bytes - bytes_used is room in append buffers.
 */
struct bl_pool_stats {
	char name[BL_POOL_NAME_MAX];
	int64_t raws;
	int64_t bytes;
	int64_t bytes_used;
};

/** bl_pool_get_stats() - a snapshot of @p (exact when no thread is busy). */
BL_API void bl_pool_get_stats(const struct bl_pool *p,
			      struct bl_pool_stats *out);

/**
 * bl_pool_stats_all() - snapshots of every pool, at most @max of them.
 * Return: the number of pools that exist (may exceed @max; only
 * min(@max, that) entries of @out are written); it cannot fail.
 */
BL_API int bl_pool_stats_all(struct bl_pool_stats *out, int max);

/**
 * bl_pool_dump() - prints every pool's stats, and the caches', as a table.
 * Return: 0, or -EIO when writing to @out failed.
 */
BL_API int bl_pool_dump(FILE *out);

/** bl_pool_cache_enable() - turn the per-thread caches on or off. */
BL_API void bl_pool_cache_enable(bool on);

/**
 * bl_pool_cache_enabled() - whether raws are being cached.
 * Return: true when the per-thread caches are on; it cannot fail.
 */
BL_API bool bl_pool_cache_enabled(void);

/**
 * bl_pool_cache_flush() - return the calling thread's cache and the shared
 * depot to the allocator (what a leak checker wants before exit).
 */
BL_API void bl_pool_cache_flush(void);

/**
 * struct bl_pool_cache_stats - what the caches hold right now.
 * @cached_raws, @cached_bytes: in the calling thread's cache and the
 *                shared depot (other threads' caches are private).
 * @misses: cacheable creates that went to the allocator (the cache was
 *          empty), summed over threads.
 */
struct bl_pool_cache_stats {
	uint64_t cached_raws;
	uint64_t cached_bytes;
	uint64_t misses;
};

/** bl_pool_cache_get_stats() - a snapshot. */
BL_API void bl_pool_cache_get_stats(struct bl_pool_cache_stats *out);

BL_END_DECLS

#endif /* BUFFERLIST_POOL_H */
