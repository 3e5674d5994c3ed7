/* SPDX-License-Identifier: MIT */
/*
 * iter_int.h - the cursor's private side (iter.c): its fast steps, inline
 * so that the codec and the other readers of a list pay no call for them.
 * The cursor's (_chunk, _idx) is a segment cursor of the list layer
 * (struct bl__seg_cursor): it moves only through list_int.h.  Includes
 * only list_int.h.  Never installed.
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

/* Puts @it at the start of the segment under @cur (or at the end). */
static inline void bl__iter_set_cursor(struct bl_iter *it,
				       const struct bl__seg_cursor *cur)
{
	it->_chunk = cur->c;
	it->_idx = cur->i;
	it->_seg_off = 0;
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

/* The segment under the cursor, which is not at the end. */
static inline const struct bl_ptr *bl__iter_seg(const struct bl_iter *it)
{
	struct bl__seg_cursor cur = bl__iter_cursor(it);

	bl__iter_check(it);
	return bl__seg_at(&cur);
}

/* The raw under the cursor, or NULL at the end (to prefetch its header). */
static inline struct bl_raw *bl__iter_raw(const struct bl_iter *it)
{
	return it->_chunk ? bl__iter_seg(it)->raw : NULL;
}

/* Bytes readable at the cursor without crossing a seam (0 at the end). */
static inline size_t bl__iter_contig(const struct bl_iter *it)
{
	return it->_chunk ? bl__iter_seg(it)->len - it->_seg_off : 0;
}

static inline const char *bl__iter_ptr(const struct bl_iter *it)
{
	const struct bl_ptr *s = bl__iter_seg(it);

	return s->raw->data + s->off + it->_seg_off;
}

/* Moves forward @n bytes, n < bl__iter_contig(): the segment stays. */
static inline void bl__iter_skip(struct bl_iter *it, size_t n)
{
	it->_seg_off += n;
	it->_off += n;
}

/* Moves forward @n bytes, n <= bl__iter_contig(). */
static inline void bl__iter_step(struct bl_iter *it, size_t n)
{
	if (bl__likely(n < bl__iter_contig(it))) {
		it->_seg_off += n;
		it->_off += n;
	} else {
		bl_iter_advance(it, n);
	}
}

#endif /* BUFFERLIST_ITER_INT_H */
