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
#include <stdint.h>
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
 * @copy_ops:     calls that copied at least one byte.
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

/** bl_stats_reset() - zero every thread's counters (no thread may be busy). */
BL_API void bl_stats_reset(void);

BL_END_DECLS

#endif /* BUFFERLIST_POOL_H */
