/* SPDX-License-Identifier: MIT */
/*
 * ptr.h - a slice {raw, off, len} over a raw, and the form a list keeps
 * its slices in (struct bl_seg).
 *
 * A value type: it lives on the stack, in an array or in a struct of the
 * caller's, never on the heap on its own (a list keeps each slice as a
 * struct bl_seg).  A slice with a raw holds one reference to it,
 * even when it is empty.  The empty slice is {NULL, 0, 0}.
 */
#ifndef BUFFERLIST_PTR_H
#define BUFFERLIST_PTR_H

#include <stddef.h>
#include <bufferlist/common.h>
#include <bufferlist/raw.h>

BL_BEGIN_DECLS

struct bl_ptr {
	struct bl_raw *raw;	/* NULL for the empty slice */
	size_t off;		/* first byte, relative to the raw's data */
	size_t len;		/* bytes covered */
};

#define BL_PTR_INIT { NULL, 0, 0 }

/*
 * A segment of a list, as the list lends it (bl_list_seg_first()): the
 * slice's raw, the address of its first byte and its length, without a
 * reference of its own.  The struct is the list's: read it, never change
 * it.  Its bytes may be written as bl_ptr_data()'s may (not a static
 * raw's; other lists may share them, and a cached crc goes stale: see
 * bl_list_copy_in() and bl_list_invalidate_crc()).  A list keeps its
 * segments in this form, with the address where struct bl_ptr has an
 * offset, so that reading their bytes (an iovec export, a cursor, a
 * copy) never loads a raw's header.  bl_ptr_from_seg() makes a slice of
 * one that outlives the list.
 */
struct bl_seg {
	struct bl_raw *raw;
	char *data;		/* the first byte, inside raw's data */
	size_t len;		/* at least 1 */
};

/**
 * bl_ptr_alloc() - a new raw of exactly @len bytes that @p covers.
 * @p: output only; what it held is not released.
 * Return: 0, or -ENOMEM (then @p is unchanged).
 */
BL_API int bl_ptr_alloc(struct bl_ptr *p, size_t len);

/**
 * bl_ptr_alloc_aligned() - a new raw of exactly @len bytes whose data
 * starts at a multiple of @align, and @p covering it: the slice to fill
 * for O_DIRECT (pass bl_fd_dio_align()'s memory alignment, or 4096), so
 * that bl_list_prepare_dio() keeps it instead of copying it.  bl_ptr_alloc()
 * only promises 64 bytes.  The bytes are not initialised.
 * @p: output only; what it held is not released.
 * Return: 0, -EINVAL (@align is not a power of two) or -ENOMEM; on
 * failure @p is unchanged.
 */
BL_API int bl_ptr_alloc_aligned(struct bl_ptr *p, size_t len, size_t align);

/**
 * bl_ptr_reserve() - a new raw of @cap bytes; @p is an empty slice at its
 * start that grows with bl_ptr_append().
 * Return: 0, or -ENOMEM (then @p is unchanged).
 */
BL_API int bl_ptr_reserve(struct bl_ptr *p, size_t cap);

/**
 * bl_ptr_from_raw() - make @p cover all of @r's handed-out bytes
 * (its frontier).  Takes the caller's reference to @r; NULL gives the
 * empty slice.  @p is output only.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_ptr_from_raw(struct bl_ptr *p, struct bl_raw *r);

/**
 * bl_ptr_from_seg() - make @p cover the bytes of @seg (borrowed; a
 * segment a list lent) with a new reference of its own: the way to keep
 * a segment after the list changes.  A segment without a raw and of
 * length 0 gives the empty slice.  @p is output only; what it held is
 * not released.
 * Return: 0; -EINVAL (@p or @seg NULL, or a length without a raw) or
 * -ERANGE (a hand-built @seg whose bytes are not all within its raw's
 * handed-out bytes); on failure @p is unchanged.
 */
BL_API int bl_ptr_from_seg(struct bl_ptr *p, const struct bl_seg *seg);

/**
 * bl_ptr_slice() - @dst = bytes [@off, @off + @len) of @src.
 * Shares: @dst holds its own reference (also when @len is 0).  @dst is
 * output only; @dst == @src is allowed and reuses the reference.
 * Return: 0, or -ERANGE when the range is outside @src, @src is empty and
 * the range is not [0, 0), or @src (hand-built) reaches past its raw's
 * handed-out bytes; -EINVAL when @src has bytes but no raw (then @dst is
 * unchanged).
 */
BL_API int bl_ptr_slice(struct bl_ptr *dst, const struct bl_ptr *src,
			size_t off, size_t len);

/**
 * bl_ptr_copy() - @dst shares @src's bytes (one more reference).  @dst is
 * output only.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_ptr_copy(struct bl_ptr *dst, const struct bl_ptr *src);

/**
 * bl_ptr_release() - drop the reference; @p becomes {NULL, 0, 0}.  NULL
 * is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_ptr_release(struct bl_ptr *p);

/**
 * bl_ptr_data() - the first byte @p covers.
 * Return: borrowed (valid while @p holds its reference), or NULL for the
 * empty slice; it cannot fail.
 */
BL_API char *bl_ptr_data(const struct bl_ptr *p);

/**
 * bl_ptr_unused_tail() - bytes that bl_ptr_append() may add: the raw's
 * room past its frontier when @p ends at the frontier, else 0 (also for
 * a static raw and for a raw the library grows itself, such as a list's
 * append buffer).  A snapshot when other slices of the raw may append.
 * Return: that count of bytes; it cannot fail.
 */
BL_API size_t bl_ptr_unused_tail(const struct bl_ptr *p);

/**
 * bl_ptr_append() - copies @len bytes of @src into the raw right after @p
 * and extends @p over them.  Safe against slices of the same raw appended
 * to from other threads: of those ending at the frontier, one wins.
 * Return: 0, -ENOSPC when bl_ptr_unused_tail() is smaller than @len (or
 * another slice moved the frontier first), -EROFS on a static raw, or
 * -EINVAL when @src is NULL and @len is not 0 (then nothing changed).
 */
BL_API int bl_ptr_append(struct bl_ptr *p, const void *src, size_t len);

BL_END_DECLS

#endif /* BUFFERLIST_PTR_H */
