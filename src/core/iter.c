/* SPDX-License-Identifier: MIT */
/*
 * iter.c - a cursor over a list.
 *
 * The cursor is a segment cursor of the list layer (chunk, slot), the
 * pointer to its byte and the window to the end of that segment, which
 * iter.h's inline moves use without calling here; past the last segment
 * the chunk is NULL.  This file does what they leave: seams, the end of
 * the list, errors and the --enable-debug checks.  Moves are checked
 * against the remaining length first, so a failed move never changes the
 * cursor.
 */
#include "iter_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>

int bl_iter_init(struct bl_iter *it, const struct bl_list *l, size_t off)
{
	struct bl__seg_cursor c;
	size_t inner = 0;

	if (off > bl_list_length(l))
		return -ERANGE;
	if (off)	/* found, not walked to: a long list has an offset index */
		bl__list_seek(l, off, &c, &inner);
	else
		bl__seg_first(l, &c);
	it->_l = l;
	it->_lim = bl_list_length(l);
#ifdef BL_DEBUG
	it->_lgen = bl__list_gen(l);
#endif
	bl__iter_place(it, &c, inner, off);
	return 0;
}

size_t bl__iter_remaining_slow(const struct bl_iter *it)
{
	bl__iter_check(it);
	return it->_lim - bl__iter_off(it);
}

/*
 * Segments a forward move in a long list walks before it asks the list
 * instead: the list's index search costs about what a walk over this many
 * does, so a far move costs no more than that plus one lookup, and near
 * ones never pay for the lookup.  A short list has no index (its lookup
 * would walk again from the front), so there the move walks on.
 */
#define WALK_MAX 64

/*
 * Moves @it, on a segment, forward @n bytes, n <= bl_iter_remaining():
 * onto the segment that holds the byte then under it, past the last one
 * at the end.  A cursor at the end of a segment (an inline move used it
 * up) starts from the next.
 */
static void walk(struct bl_iter *it, size_t n)
{
	struct bl__seg_cursor c = bl__iter_cursor(it);
	const struct bl_seg *s = bl__seg_at(&c);
	size_t off = bl__iter_off(it) + n;
	size_t inner = (size_t)(it->_p - s->data) + n;
	unsigned steps = 0;

	while (inner >= s->len) {
		if (bl__unlikely(++steps == WALK_MAX) &&
		    bl_list_num_buffers(it->_l) > BL__LINDEX_MIN) {
			bl__list_seek(it->_l, off, &c, &inner);
			break;
		}
		inner -= s->len;
		s = bl__seg_next(&c);
		if (!s)
			break;
	}
	BL_ASSERT(s || !inner);
	bl__iter_place(it, &c, inner, off);
}

int bl__iter_advance_slow(struct bl_iter *it, size_t n)
{
	if (n > bl_iter_remaining(it))
		return -ERANGE;
	if (n)
		walk(it, n);
	return 0;
}

int bl_iter_seek(struct bl_iter *it, size_t off)
{
	struct bl_iter t;
	size_t cur = bl__iter_off(it);
	int ret;

	if (off >= cur)
		return bl_iter_advance(it, off - cur);
	ret = bl_iter_init(&t, it->_l, off);
	if (!ret) {
		/* backwards stays inside the bound: keep it */
		if (it->_lim != t._lim)
			bl__iter_set_limit(&t, it->_lim);
		*it = t;
	}
	return ret;
}

/*
 * The next run of @it, on a segment: at most @want bytes (want > 0) up to
 * the end of their segment, as the slice @out (borrowed), and @it moved
 * past it.  Return: its length; 0 (nothing changed) when @it is at the
 * end of the last segment.
 */
static size_t take(struct bl_iter *it, size_t want, struct bl_seg *out)
{
	struct bl__seg_cursor c = bl__iter_cursor(it);
	const struct bl_seg *s = bl__seg_at(&c);
	size_t off = bl__iter_off(it);
	size_t inner = (size_t)(it->_p - s->data), n;

	if (inner == s->len) {		/* used up by an inline move */
		s = bl__seg_next(&c);
		if (!s)
			return 0;
		inner = 0;
	}
	n = s->len - inner;
	if (n > want)
		n = want;
	out->raw = s->raw;
	out->data = s->data + inner;
	out->len = n;
	inner += n;
	if (inner == s->len) {	/* on to the next: its header is wanted */
		s = bl__seg_next(&c);
		inner = 0;
	}
	bl__iter_place(it, &c, inner, off + n);
	return n;
}

size_t bl__iter_get_ptr_slow(struct bl_iter *it, size_t want,
			     const char **data)
{
	struct bl_seg run;

	bl__iter_check(it);
	if (want > it->_lim - bl__iter_off(it))
		want = it->_lim - bl__iter_off(it);	/* a bounded cursor */
	if (!it->_chunk || !want || !take(it, want, &run)) {
		*data = NULL;
		return 0;
	}
	*data = run.data;
	return run.len;
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
	while (len) {	/* never 0 bytes: len is within what remains */
		const char *p;
		size_t n = bl_iter_get_ptr_and_advance(it, len, &p);

		memcpy(out, p, n);
		out += n;
		len -= n;
	}
	return 0;
}

static __attribute__((noinline)) int
copy_list_slow(struct bl_iter *it, size_t len, struct bl_list *dst)
{
	struct bl_iter t = *it;
	struct bl_list tmp;
	struct bl_seg run;
	int ret;

	if (len > bl_iter_remaining(it))
		return -ERANGE;
	if (!len)
		return 0;
	if (take(&t, len, &run) == len) {
		/* one slice: its append is failure-atomic by itself */
		ret = bl__list_append_seg(dst, &run);
		if (!ret)
			*it = t;
		return ret;
	}
	/* build aside, so a failure leaves dst and the cursor alone */
	bl_list_init(&tmp);
	for (;;) {
		ret = bl__list_append_seg(&tmp, &run);
		if (ret) {
			bl_list_clear(&tmp);
			return ret;
		}
		len -= run.len;
		if (!len)
			break;
		take(&t, len, &run);
	}
	ret = bl_list_claim_append(dst, &tmp);
	bl_list_clear(&tmp);
	if (!ret)
		*it = t;
	return ret;
}

/*
 * A piece that lies in the cursor's window, into a list without segments
 * -- a payload taken out of a stream to be handed on -- sets the list's
 * one slot, takes one reference and calls nothing; anything else goes the
 * general way.
 */
int bl_iter_copy_list(struct bl_iter *it, size_t len, struct bl_list *dst)
{
	const struct bl_seg *s;

	/* len - 1 wraps for 0: one test takes 1 .. the window's bytes */
	if (bl__unlikely(len - 1 >= bl__iter_window(it) ||
			 bl_list_num_buffers(dst)))
		return copy_list_slow(it, len, dst);
	s = bl__iter_seg(it);
	bl__list_put_lone(dst, bl__raw_get(s->raw), (char *)it->_p, len);
	bl__iter_skip(it, len);
	return 0;
}
