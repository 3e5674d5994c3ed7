/* SPDX-License-Identifier: MIT */
/*
 * iter.c - a cursor over a list.
 *
 * The cursor is a segment cursor of the list layer (chunk, slot), the
 * offset in that segment and the absolute offset; at the end of the list
 * the chunk is NULL.  Moves are checked against the
 * remaining length first, so a failed move never changes the cursor.
 */
#include "iter_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>

static inline const struct bl_ptr *cur(const struct bl_iter *it)
{
	return bl__iter_seg(it);
}

/* Steps to the next segment (the current one is used up). */
static inline void next_seg(struct bl_iter *it)
{
	struct bl__seg_cursor c = bl__iter_cursor(it);

	bl__seg_next(&c);
	bl__iter_set_cursor(it, &c);
}

int bl_iter_init(struct bl_iter *it, const struct bl_list *l, size_t off)
{
	struct bl__seg_cursor c;
	size_t inner = 0;

	if (off > bl__list_len(l))
		return -ERANGE;
	if (off)	/* found, not walked to: a long list has an offset index */
		bl__list_seek(l, off, &c, &inner);
	else
		bl__seg_first(l, &c);
	it->_l = l;
#ifdef BL_DEBUG
	it->_lgen = bl__list_gen(l);
#endif
	bl__iter_set_cursor(it, &c);
	it->_seg_off = inner;
	it->_off = off;
	return 0;
}

size_t bl_iter_offset(const struct bl_iter *it)
{
	return it->_off;
}

size_t bl_iter_remaining(const struct bl_iter *it)
{
	bl__iter_check(it);
	return bl__list_len(it->_l) - it->_off;
}

int bl_iter_advance(struct bl_iter *it, size_t n)
{
	if (n > bl_iter_remaining(it))
		return -ERANGE;
	it->_off += n;
	while (n) {
		size_t left = cur(it)->len - it->_seg_off;

		if (n < left) {
			it->_seg_off += n;
			return 0;
		}
		n -= left;
		next_seg(it);
	}
	return 0;
}

int bl_iter_seek(struct bl_iter *it, size_t off)
{
	struct bl_iter t;
	int ret;

	if (off >= it->_off)
		return bl_iter_advance(it, off - it->_off);
	ret = bl_iter_init(&t, it->_l, off);
	if (!ret)
		*it = t;
	return ret;
}

int bl_iter_copy(struct bl_iter *it, size_t len, void *dst)
{
	char *out = dst;

	if (!dst && len)
		return -EINVAL;
	if (len > bl_iter_remaining(it))
		return -ERANGE;
	if (len)
		bl__count_copy(len);
	it->_off += len;
	while (len) {
		const struct bl_ptr *s = cur(it);
		size_t n = s->len - it->_seg_off;

		if (n > len) {
			memcpy(out, s->raw->data + s->off + it->_seg_off, len);
			it->_seg_off += len;
			return 0;
		}
		memcpy(out, s->raw->data + s->off + it->_seg_off, n);
		out += n;
		len -= n;
		next_seg(it);
	}
	return 0;
}

static __attribute__((noinline)) int
copy_list_slow(struct bl_iter *it, size_t len, struct bl_list *dst)
{
	struct bl_iter t = *it;
	struct bl_list tmp;
	int ret;

	if (len > bl_iter_remaining(it))
		return -ERANGE;
	if (len && len <= bl__iter_contig(it)) {
		/* one slice: append_ptr is failure-atomic by itself */
		const struct bl_ptr *s = cur(it);
		struct bl_ptr piece = { s->raw, s->off + it->_seg_off, len };

		ret = bl_list_append_ptr(dst, &piece);
		if (!ret)
			bl__iter_step(it, len);
		return ret;
	}
	/* build aside, so a failure leaves dst and the cursor alone */
	bl_list_init(&tmp);
	while (len) {
		const struct bl_ptr *s = cur(&t);
		size_t n = s->len - t._seg_off;
		struct bl_ptr piece;

		if (n > len)
			n = len;
		piece.raw = s->raw;
		piece.off = s->off + t._seg_off;
		piece.len = n;
		ret = bl_list_append_ptr(&tmp, &piece);
		if (ret) {
			bl_list_clear(&tmp);
			return ret;
		}
		bl_iter_advance(&t, n);
		len -= n;
	}
	ret = bl_list_claim_append(dst, &tmp);
	bl_list_clear(&tmp);
	if (!ret)
		*it = t;
	return ret;
}

/*
 * A piece that ends before its segment does, into a list without
 * segments -- a payload taken out of a stream to be handed on -- sets the
 * list's one slot, takes one reference and calls nothing; anything else
 * goes the general way.
 */
int bl_iter_copy_list(struct bl_iter *it, size_t len, struct bl_list *dst)
{
	const struct bl_ptr *s;

	if (bl__unlikely(!it->_chunk || bl__list_nseg(dst) || !len))
		return copy_list_slow(it, len, dst);
	s = cur(it);
	if (bl__unlikely(len >= s->len - it->_seg_off))
		return copy_list_slow(it, len, dst);
	bl__list_put_lone(dst, bl__raw_get(s->raw), s->off + it->_seg_off, len);
	bl__iter_skip(it, len);
	return 0;
}

size_t bl_iter_get_ptr_and_advance(struct bl_iter *it, size_t want,
				   const char **data)
{
	const struct bl_ptr *s;
	size_t n;

	bl__iter_check(it);
	if (!it->_chunk || !want) {
		*data = NULL;
		return 0;
	}
	s = cur(it);
	n = s->len - it->_seg_off;
	if (n > want)
		n = want;
	*data = s->raw->data + s->off + it->_seg_off;
	bl__iter_step(it, n);
	return n;
}
