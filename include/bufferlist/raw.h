/* SPDX-License-Identifier: MIT */
/*
 * raw.h - a reference-counted block of memory.
 *
 * A raw owns (or borrows) one contiguous block and counts the references
 * to it.  Slices (struct bl_ptr) and lists hold references; the block is
 * released when the last one goes.  The count is atomic, so slices of one
 * raw may live in lists owned by different threads; a thread that shares
 * nothing can make its raws thread-local instead (bl_raw_set_thread_local())
 * and count without atomic instructions.
 *
 * Kinds:
 *  - combined: header and data in ONE allocation, data 64-byte aligned;
 *  - aligned:  data aligned to a caller-given power of two (O_DIRECT);
 *  - static:   borrowed memory, never freed and never written by the
 *              library (a write through the library first copies);
 *  - claimed:  caller memory with a free callback, called exactly once.
 *
 * Every raw has a "tail frontier": the first byte no slice has covered yet.
 * bl_raw_create() and friends hand out the whole block (frontier = length);
 * bl_raw_create_empty() hands out none, so slices can grow into it with
 * bl_ptr_append().  No slice ever covers bytes past the frontier, which is
 * what makes appending into a shared raw safe for the slices that exist.
 * The frontier moves with a compare-and-swap, so slices that end at it may
 * be appended to from several threads at once: one append wins, the others
 * find the frontier moved (-ENOSPC).  The raws the library grows itself (a
 * list's append buffer, the lz4 codec's output) have one writer and are
 * never grown through a slice: bl_ptr_unused_tail() is 0 for them.
 */
#ifndef BUFFERLIST_RAW_H
#define BUFFERLIST_RAW_H

#include <stddef.h>
#include <stdbool.h>
#include <bufferlist/common.h>

BL_BEGIN_DECLS

struct bl_raw;

/** Called once when a claimed raw's last reference is dropped. */
typedef void (*bl_free_fn)(void *data, size_t len, void *opaque);

/**
 * bl_raw_create() - a combined raw of @len bytes, data 64-byte aligned.
 * Return: new (one reference), or NULL when memory runs out.  The bytes
 * are not initialised.  @len may be 0.
 */
BL_API struct bl_raw *bl_raw_create(size_t len);

/**
 * bl_raw_create_empty() - a combined raw of @cap bytes whose frontier is 0:
 * no byte is handed out yet, slices grow into it with bl_ptr_append().
 * Return: new, or NULL when memory runs out.
 */
BL_API struct bl_raw *bl_raw_create_empty(size_t cap);

/**
 * bl_raw_create_aligned() - @len bytes at an address that is a multiple
 * of @align (a power of two; 4096 for O_DIRECT).
 * Return: new, or NULL when memory runs out or @align is not a power of
 * two.
 */
BL_API struct bl_raw *bl_raw_create_aligned(size_t len, size_t align);

/**
 * bl_raw_create_static() - wrap memory the caller keeps alive.
 * @data: borrowed; must outlive every reference.  Never freed, never
 *        written by the library.
 * Return: new, or NULL (memory ran out, or @data is NULL and @len is
 * not 0).
 */
BL_API struct bl_raw *bl_raw_create_static(const void *data, size_t len);

/**
 * bl_raw_claim() - take ownership of caller memory.
 * @fn: called exactly once, with @data, @len and @opaque, when the last
 *      reference goes; NULL means free(@data).
 * Return: new, or NULL when memory runs out or @data is NULL and @len is
 * not 0 (then @fn is NOT called and the caller still owns @data).
 */
BL_API struct bl_raw *bl_raw_claim(void *data, size_t len, bl_free_fn fn,
				   void *opaque);

struct bl_pool;

/**
 * bl_raw_create_in() - as bl_raw_create(), in pool @p (NULL: default).
 * Return: new, or NULL when memory runs out.
 */
BL_API struct bl_raw *bl_raw_create_in(struct bl_pool *p, size_t len);

/**
 * bl_raw_create_aligned_in() - as bl_raw_create_aligned(), in pool @p.
 * Return: as bl_raw_create_aligned().
 */
BL_API struct bl_raw *bl_raw_create_aligned_in(struct bl_pool *p, size_t len,
					       size_t align);

/**
 * bl_raw_pool() - the pool @r belongs to.
 * Return: the pool (borrowed: pools live as long as the process); it
 * cannot fail.
 */
BL_API struct bl_pool *bl_raw_pool(const struct bl_raw *r);

/**
 * bl_raw_set_thread_local() - make the raws this thread creates from now on
 * thread-local (@on true), or shared again (@on false).
 *
 * A thread-local raw counts its references with a plain load and store
 * instead of an atomic read-modify-write, which is most of the cost of
 * sharing a slice (a substr_of, a copy into a list, an append into a
 * list's append buffer).  It is for a thread that shares nothing, as a
 * run-to-completion server's threads do (Ceph's crimson OSD builds its
 * bufferlist without atomics for the same reason): every raw the library
 * makes in the thread while this is on is thread-local, including a
 * list's append buffers, a ring's received buffers and the lz4 codec's
 * output, and raws made before the call keep what they were.
 *
 * The contract is the caller's: a thread-local raw, and every slice,
 * list, iterator and ring operation that holds it, stays in the thread
 * that made it and is released there.  Moving such a list to another
 * thread loses or doubles counts and frees memory that is still in use.
 * An --enable-debug build aborts with a message when another thread takes
 * or drops a reference to one; other builds cannot tell.  To hand data to
 * another thread, copy it in the owning thread with bl_list_copy_shared()
 * into a new list, and hand over that list.  bl_list_rebuild() is not
 * such a copy: it keeps a one-segment list as it is, and the list's
 * append buffer in any case.  bl_rados_aio_write(), _write_full() and
 * _append() make the copy themselves.
 *
 * Return: whether it was on before this call; it cannot fail.
 */
BL_API bool bl_raw_set_thread_local(bool on);

/**
 * bl_raw_is_thread_local() - whether @r was made thread-local.
 * Return: true for a raw made while bl_raw_set_thread_local() was on in
 * its thread; it cannot fail.
 */
BL_API bool bl_raw_is_thread_local(const struct bl_raw *r);

/**
 * bl_raw_get() - take one more reference.
 * Return: @r; it cannot fail.
 */
BL_API struct bl_raw *bl_raw_get(struct bl_raw *r);

/**
 * bl_raw_put() - drop one reference; frees at zero.  NULL is a no-op.
 * Releasing a reference that is not held (a raw released twice) is a
 * programming error that no return value can report: an --enable-debug
 * build aborts with a message (when the freed header still shows a count
 * of 0), an AddressSanitizer build reports it (blocks in the pool caches
 * are poisoned), and other builds corrupt memory.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_raw_put(struct bl_raw *r);

/**
 * bl_raw_data() - the raw's bytes.
 * Return: borrowed, valid while a reference is held; it cannot fail.
 */
BL_API char *bl_raw_data(const struct bl_raw *r);

/**
 * bl_raw_length() - the block's capacity in bytes.
 * Return: that count; it cannot fail.
 */
BL_API size_t bl_raw_length(const struct bl_raw *r);

/**
 * bl_raw_nref() - current reference count.
 * Return: a snapshot of the count; it cannot fail.
 */
BL_API unsigned bl_raw_nref(const struct bl_raw *r);

/**
 * bl_raw_is_static() - whether @r wraps borrowed, read-only memory.
 * Return: true for a static raw (bl_raw_create_static()); it cannot fail.
 */
BL_API bool bl_raw_is_static(const struct bl_raw *r);

/**
 * bl_raw_alignment() - how the data address is aligned.
 * Return: the largest power of two, up to 4096, that divides it (4096
 * for a NULL address); it cannot fail.
 */
BL_API size_t bl_raw_alignment(const struct bl_raw *r);

/**
 * bl_raw_invalidate_crc() - forget the cached crc32c; call after writing
 * into the raw's bytes without going through the library.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_raw_invalidate_crc(struct bl_raw *r);

BL_END_DECLS

#endif /* BUFFERLIST_RAW_H */
