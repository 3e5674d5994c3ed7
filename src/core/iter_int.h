/* SPDX-License-Identifier: MIT */
/*
 * iter_int.h - the cursor's private side (iter.c): its fast steps, inline
 * so that the codec and the other readers of a list pay no call for them.
 * The cursor's (_chunk, _idx) is a segment cursor of the list layer
 * (struct bl__seg_cursor): it moves only through list_int.h.  Includes
 * only list_int.h.  Never installed.
 *
 * The window [_p, _end) of iter.h is a cache of the segment under
 * (_chunk, _idx): every function here that puts the cursor on a segment
 * sets it (bl__iter_place()), and none reads the segment's end from it,
 * since an --enable-debug build keeps it empty.  _p itself is the truth:
 * the byte under the cursor is _p, its offset in the segment is _p minus
 * the segment's start.  An inline move may leave _p at the very end of its
 * segment; the functions here take that as the start of the next one.
 */
#ifndef BUFFERLIST_ITER_INT_H
#define BUFFERLIST_ITER_INT_H

#include "list_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <bufferlist/iter.h>

/* The cursor's segment position, as the list layer walks it. */
static inline struct bl__seg_cursor bl__iter_cursor(const struct bl_iter *it)
{
	struct bl__seg_cursor cur = { it->_chunk, it->_idx };

	return cur;
}

/*
 * Puts @it on byte @inner of the segment under @cur, byte @off of the list
 * (past the last segment: @cur's chunk NULL, @inner 0, @off the length),
 * and opens the window there: to the segment's end or @it's _lim, which
 * comes first, or (--enable-debug) not at all, so that each inline move
 * calls the library and its check.
 */
static inline void bl__iter_place(struct bl_iter *it,
				  const struct bl__seg_cursor *cur,
				  size_t inner, size_t off)
{
	it->_chunk = cur->c;
	it->_idx = cur->i;
	if (cur->c) {
		const struct bl_seg *s = bl__seg_at(cur);

		it->_p = s->data + inner;
#ifdef BL_DEBUG
		it->_end = it->_p;
		it->_end_off = off;
#else
		it->_end = s->data + s->len;
		it->_end_off = off - inner + s->len;
		if (bl__unlikely(it->_end_off > it->_lim)) {
			/* a bounded cursor's window stops at its limit */
			it->_end -= it->_end_off - it->_lim;
			it->_end_off = it->_lim;
		}
#endif
	} else {
		it->_p = it->_end = NULL;
		it->_end_off = off;
	}
}

/*
 * --enable-debug: the cursor is used after its list changed (the cursor
 * may point at freed chunks or raws).  Nothing in other builds.
 */
static inline void bl__iter_check(const struct bl_iter *it)
{
	BL_DEBUG_CHECK(it->_lgen == bl__list_gen(it->_l),
		       "cursor %p used after its list %p changed (a change "
		       "to a list invalidates its cursors)",
		       (const void *)it, (const void *)it->_l);
	(void)it;
}

/* The cursor's offset from the start of its list. */
static inline size_t bl__iter_off(const struct bl_iter *it)
{
	return it->_end_off - bl__iter_window(it);
}

/* The segment under the cursor, which is not past the last. */
static inline const struct bl_seg *bl__iter_seg(const struct bl_iter *it)
{
	struct bl__seg_cursor cur = bl__iter_cursor(it);

	bl__iter_check(it);
	return bl__seg_at(&cur);
}

/*
 * Moves @it from the end of a segment that an inline move used up to the
 * start of the next (past the last one at the end of the list): the same
 * offset, the window opened on the bytes that follow.
 */
static inline void bl__iter_settle(struct bl_iter *it)
{
	struct bl__seg_cursor cur = bl__iter_cursor(it);
	const struct bl_seg *s;

	if (!cur.c)
		return;
	s = bl__iter_seg(it);
	if (it->_p == s->data + s->len) {
		size_t off = bl__iter_off(it);

		bl__seg_next(&cur);
		bl__iter_place(it, &cur, 0, off);
	}
}

/* Bytes readable at the cursor without crossing a seam (0 at the end). */
static inline size_t bl__iter_contig(const struct bl_iter *it)
{
#ifdef BL_DEBUG
	const struct bl_seg *s;

	if (!it->_chunk)
		return 0;
	s = bl__iter_seg(it);
	return (size_t)(s->data + s->len - it->_p);
#else
	return bl__iter_window(it);
#endif
}

static inline const char *bl__iter_ptr(const struct bl_iter *it)
{
	bl__iter_check(it);
	return it->_p;
}

/* Moves forward @n bytes, n <= bl__iter_contig(): the segment stays. */
static inline void bl__iter_skip(struct bl_iter *it, size_t n)
{
	it->_p += n;
#ifdef BL_DEBUG
	it->_end = it->_p;
	it->_end_off += n;
#endif
}

/*
 * Sets the offset @it may not read past (its own offset at least, the
 * list's length at most) and reopens its window to match: how the codec
 * bounds a cursor to a versioned structure and lifts the bound again.
 * Inline: each structure decoded sets it twice.
 */
static inline void bl__iter_set_limit(struct bl_iter *it, size_t lim)
{
	BL_ASSERT(lim >= bl__iter_off(it) && lim <= bl_list_length(it->_l));
	it->_lim = lim;
#ifndef BL_DEBUG	/* there the window is always empty */
	if (lim <= it->_end_off) {
		/* a tighter bound: the window stops at it */
		it->_end -= it->_end_off - lim;
		it->_end_off = lim;
	} else if (it->_chunk) {
		/* a looser one: the window opens to its segment's end, or
		 * the bound */
		struct bl__seg_cursor cur = bl__iter_cursor(it);
		const struct bl_seg *s = bl__seg_at(&cur);
		size_t end_off = it->_end_off +
				 (size_t)(s->data + s->len - it->_end);

		if (end_off > lim)
			end_off = lim;
		it->_end += end_off - it->_end_off;
		it->_end_off = end_off;
	}
#endif
}

/*
 * The next @n bytes of @it when its window holds them (to be read in
 * place, then bl__iter_skip()), else NULL (always in --enable-debug).
 */
static inline const char *bl__iter_peek(const struct bl_iter *it, size_t n)
{
	return bl__iter_window(it) >= n ? it->_p : NULL;
}

/* The offset @it may not read past. */
static inline size_t bl__iter_limit(const struct bl_iter *it)
{
	return it->_lim;
}

#endif /* BUFFERLIST_ITER_INT_H */
