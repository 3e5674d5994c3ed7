/* SPDX-License-Identifier: MIT */
/*
 * iter.h - a cursor over a list.
 *
 * struct bl_iter is a complete type: keep it on the stack and copy it by
 * assignment to get an independent cursor.  It borrows the list: any change
 * to the list invalidates it (an --enable-debug build aborts with a message
 * when an invalidated cursor is used; other builds read freed memory).  A
 * move that fails returns a negative errno and leaves the cursor where it
 * was.
 *
 * bl_iter_advance() and bl_iter_get_ptr_and_advance() are inline: inside
 * the cursor's segment they cost a compare and an add, and they call the
 * library only to cross a seam.  bl_iter_offset() and bl_iter_remaining()
 * are inline too.  The library exports them all.
 */
#ifndef BUFFERLIST_ITER_H
#define BUFFERLIST_ITER_H

#include <stddef.h>
#include <stdint.h>
#include <bufferlist/common.h>
#include <bufferlist/list.h>

BL_BEGIN_DECLS

/*
 * All fields private.  The first four are what the inline functions below
 * read: [_p, _end) is the window, the bytes from the cursor to the end of
 * its segment (never past _lim), _end_off gives the cursor's offset
 * and _lim the offset it may not read past.  A move that stays inside the window is done in the
 * caller; one that leaves it (a seam, the end of the list, an error) calls
 * the library, which walks the list with the rest of the fields and opens
 * the window on the next segment.  The window is empty past the last
 * segment, when an inline move used up a segment, and always in an
 * --enable-debug build, so that there every move is checked by the
 * library.
 */
struct bl_iter {
	const char *_p;		/* the next byte; NULL past the last segment */
	const char *_end;	/* the end of the window */
	size_t _end_off;	/* offset of _end from the start of the list */
	const struct bl_list *_l;
	const struct bl__chunk_hdr *_chunk;	/* chunk of _p's segment
						 * (NULL past the last one) */
	uint32_t _idx;		/* slot in _chunk */
	uint32_t _lgen;		/* its list's generation (--enable-debug) */
	size_t _lim;		/* the cursor reads nothing at or past this
				 * offset: the list's length, or the end of
				 * the versioned structure being decoded
				 * (bl_decode_start(), denc.h) */
};

/* Private: bytes in @it's window (as integers: both ends may be NULL). */
static inline size_t bl__iter_window(const struct bl_iter *it)
{
	return (size_t)((uintptr_t)it->_end - (uintptr_t)it->_p);
}

/*
 * Private: the library's side of the inline functions below, for moves
 * that leave the window.  Exported for them; not for other callers.
 */
BL_API int bl__iter_advance_slow(struct bl_iter *it, size_t n);
BL_API size_t bl__iter_remaining_slow(const struct bl_iter *it);
BL_API size_t bl__iter_get_ptr_slow(struct bl_iter *it, size_t want,
				    const char **data);

/**
 * bl_iter_init() - cursor at byte @off of @l (borrowed).
 * Return: 0 or -ERANGE (@off past the end; @it untouched).
 */
BL_API int bl_iter_init(struct bl_iter *it, const struct bl_list *l,
			size_t off);

/**
 * bl_iter_offset() - where @it is.
 * Return: bytes from the start of the list to @it; it cannot fail.
 */
BL_API_INLINE size_t bl_iter_offset(const struct bl_iter *it)
{
	return it->_end_off - bl__iter_window(it);
}

/**
 * bl_iter_remaining() - what is left.
 * Return: bytes left after the cursor (inside a versioned structure being
 * decoded, up to its end); it cannot fail.
 */
BL_API_INLINE size_t bl_iter_remaining(const struct bl_iter *it)
{
	/* an --enable-debug build keeps the window empty: its library call
	 * checks that the list did not change under the cursor */
	if (BL__LIKELY(bl__iter_window(it) != 0))
		return it->_lim - bl_iter_offset(it);
	return bl__iter_remaining_slow(it);
}

/**
 * bl_iter_advance() - moves forward @n bytes.
 * Return: 0, or -ERANGE when fewer than @n bytes are left (the cursor
 * stays where it was).
 */
BL_API_INLINE int bl_iter_advance(struct bl_iter *it, size_t n)
{
	/* n - 1 wraps for 0: one test takes 1 .. the window's bytes */
	if (BL__LIKELY(n - 1 < bl__iter_window(it))) {
		it->_p += n;
		return 0;
	}
	return bl__iter_advance_slow(it, n);
}

/**
 * bl_iter_seek() - moves to byte @off of the list (backwards too).
 * Return: 0, or -ERANGE when @off is past the end (the cursor stays where
 * it was).
 */
BL_API int bl_iter_seek(struct bl_iter *it, size_t off);

/**
 * bl_iter_copy() - copies the next @len bytes into @dst and advances past
 * them.
 * Return: 0, -EINVAL (@dst NULL and @len not 0) or -ERANGE (fewer than
 * @len bytes left); on failure nothing is copied and the cursor stays
 * where it was.
 */
BL_API int bl_iter_copy(struct bl_iter *it, size_t len, void *dst);

/**
 * bl_iter_copy_list() - appends the next @len bytes to @dst as shared
 * slices (no copy) and advances.  On failure @dst and the cursor are
 * unchanged.
 * Return: 0, or -ERANGE (fewer than @len bytes left), -ENOMEM.
 */
BL_API int bl_iter_copy_list(struct bl_iter *it, size_t len,
			     struct bl_list *dst);

/**
 * bl_iter_get_ptr_and_advance() - zero copy: points *@data at the next
 * contiguous run (borrowed from the list's raw), at most @want bytes, and
 * advances over it.  *@data is NULL when nothing is returned.
 * Return: bytes in the run (at most @want), 0 at the end or for @want 0;
 * it cannot fail.
 */
BL_API_INLINE size_t bl_iter_get_ptr_and_advance(struct bl_iter *it,
						 size_t want,
						 const char **data)
{
	if (BL__LIKELY(want - 1 < bl__iter_window(it))) {
		*data = it->_p;
		it->_p += want;
		return want;
	}
	return bl__iter_get_ptr_slow(it, want, data);
}

BL_END_DECLS

#endif /* BUFFERLIST_ITER_H */
