/* SPDX-License-Identifier: MIT */
/*
 * list_append.c - adding to a list: caller bytes copied into the append
 * buffer (or a raw of their own when large), and slices shared at either
 * end (append_ptr, append_list, prepend_ptr).
 *
 * Costs on the hot paths:
 *  - append of caller bytes that fit the append buffer: no allocation, no
 *    atomic, one memcpy; it extends the last segment when that segment
 *    ends at the buffer's frontier.
 *  - append_ptr: one atomic increment (the new reference); extends the
 *    last segment instead when the slice continues it.
 *  - a segment pushed writes 24 bytes into the tail chunk; a chunk is
 *    allocated once per up to 64 segments.
 */
#include "list_priv.h"	/* first: config.h sets _GNU_SOURCE */

/* ---- appending bytes -------------------------------------------------- */

/* Copies 1..16 bytes with at most two overlapping loads and stores. */
static inline __attribute__((always_inline)) void
copy_small(char *dst, const void *data, size_t len)
{
	const char *src = data;

	if (len >= 8) {
		uint64_t x, y;

		memcpy(&x, src, 8);
		memcpy(&y, src + len - 8, 8);
		memcpy(dst, &x, 8);
		memcpy(dst + len - 8, &y, 8);
	} else if (len >= 4) {
		uint32_t x, y;

		memcpy(&x, src, 4);
		memcpy(&y, src + len - 4, 4);
		memcpy(dst, &x, 4);
		memcpy(dst + len - 4, &y, 4);
	} else {
		dst[0] = src[0];
		dst[len / 2] = src[len / 2];
		dst[len - 1] = src[len - 1];
	}
}

/* Zeroes 1..16 bytes with at most two overlapping stores (no call). */
static inline __attribute__((always_inline)) void
zero_small(char *dst, size_t len)
{
	static const char z[16];

	copy_small(dst, z, len);
}

/*
 * Appends into the append buffer @ab, which has room for @len: extends the
 * last segment when it ends at the frontier, else pushes a new segment
 * (one atomic increment, maybe one chunk allocation).  Inlined by force:
 * it is the whole of a small append.  @spare as for push_seg(): with room
 * reserved in advance this cannot fail.
 */
static inline __attribute__((always_inline)) char *
abuf_claim(struct bl_list *l, struct bl_raw *ab, bool copy, size_t len,
	   struct bl__chunk_hdr **spare)
{
	struct bl_seg *ls = l->_ext;
	size_t used = bl__raw_used(ab);
	struct bl__tstats *t;

	if (!ls) {
		ls = last_seg(l);
		if (!ls || ls->raw != ab ||
		    ls->data + ls->len != bl__raw_data(ab) + used) {
			if (push_seg(l, ab, bl__raw_data(ab) + used, 0, spare))
				return NULL;
			bl__raw_get(ab);
			ls = last_seg(l);
		}
	}
	ls->len += len;
	l->_len += len;
	BL__LIST_TOUCH(l);
	bl__raw_set_used(ab, used + len);	/* the list is its one writer */
	l->_ext = ls;
	/* all the accounting of an append, through one thread-local lookup */
	t = bl__tstats();
	bl__stat_adds(&t->pool[bl__raw_pool(ab)].unused, -(int64_t)len);
	if (copy) {
		bl__stat_add(&t->copied_bytes, len);
		bl__stat_add(&t->copy_ops, 1);
	}
	return bl__raw_data(ab) + used;
}

/* abuf_claim() and the copy (NULL @data: zeros).  0 or -ENOMEM. */
static inline __attribute__((always_inline)) int
abuf_put(struct bl_list *l, struct bl_raw *ab, const void *data, size_t len,
	 struct bl__chunk_hdr **spare)
{
	char *dst = abuf_claim(l, ab, data != NULL, len, spare);

	if (!dst)
		return -ENOMEM;
	/* small appends dominate: keep them out of a library call */
	if (data) {
		if (len - 1 < 16)
			copy_small(dst, data, len);
		else
			memcpy(dst, data, len);
	} else {
		memset(dst, 0, len);
	}
	return 0;
}

/* Copies @a (NULL: zeros) then @b to @dst. */
static inline void put2(char *dst, const void *a, size_t alen, const void *b,
			size_t blen)
{
	if (a)
		memcpy(dst, a, alen);
	else
		memset(dst, 0, alen);
	if (blen)
		memcpy(dst + alen, b, blen);
}

/*
 * A new append buffer with room for @len: the first is small (a lone small
 * list pins little), each refill doubles up to BL_LIST_ABUF_MAX.
 * Capacities are the pool cache's size classes, so no block carries
 * slack.  Not yet @l's: abuf_install() makes it so.
 */
static struct bl_raw *abuf_new(const struct bl_list *l, size_t len,
			       size_t *cap_out)
{
	size_t cap = l->_abuf_next ? l->_abuf_next : ABUF_MIN;

	while (cap < len)
		cap *= 2;
	if (bl__size_class(cap) != BL__NOCLASS)
		cap = bl__class_size(bl__size_class(cap));
	*cap_out = cap;
	return bl__raw_create_owned(l->_pool, cap);
}

/* @ab (from abuf_new(), its reference moves in) replaces the old buffer. */
static void abuf_install(struct bl_list *l, struct bl_raw *ab, size_t cap)
{
	l->_ext = NULL;	/* the hint belongs to the old buffer */
	if (l->_abuf)
		bl__raw_put(l->_abuf);
	l->_abuf = ab;
	l->_abuf_next = cap * 2 > BL_LIST_ABUF_MAX ? BL_LIST_ABUF_MAX
						   : (unsigned)cap * 2;
}

/*
 * The append of @a (NULL: zeros) followed by @b that does not fit the
 * append buffer.  Both pieces land in one new raw, so the call succeeds or
 * fails as a whole (the codec's length + blob appends rely on that).
 */
static int append_slow(struct bl_list *l, const void *a, size_t alen,
		       const void *b, size_t blen)
{
	size_t len = alen + blen, cap;
	struct bl_raw *ab;

	l->_ext = NULL;	/* the hint belongs to the old buffer */
	if (len >= LARGE_APPEND) {
		/* Big enough to be a segment of its own, sized exactly. */
		ab = bl__raw_create_combined(l->_pool, len, len);
		if (!ab)
			return -ENOMEM;
		if (push_seg(l, ab, bl__raw_data(ab), len, NULL)) {
			bl__raw_put(ab);
			return -ENOMEM;
		}
		put2(bl__raw_data(ab), a, alen, b, blen);
		if (a || blen)
			bl__count_copy(a ? len : blen);
		return 0;
	}
	ab = abuf_new(l, len, &cap);
	if (!ab)
		return -ENOMEM;
	if (abuf_put(l, ab, a, alen, NULL)) {
		bl__raw_put(ab);
		return -ENOMEM;
	}
	if (blen)
		abuf_put(l, ab, b, blen, NULL);	/* extends: cannot fail */
	abuf_install(l, ab, cap);
	return 0;
}

static inline int append_bytes(struct bl_list *l, const void *data,
			       size_t len)
{
	struct bl_raw *ab = l->_abuf;
	int ret;

	if (bl__unlikely(!len))
		return 0;
	if (bl__likely(ab && bl__raw_room(ab) >= len))
		ret = abuf_put(l, ab, data, len, NULL);	/* counts the copy */
	else
		ret = append_slow(l, data, len, NULL, 0);
	return ret;
}

/* NULL @data is append_bytes()' zeros: from bl_list_append() an error. */
static __attribute__((noinline)) int
append_bytes_slow(struct bl_list *l, const void *data, size_t len)
{
	if (!data && len)
		return -EINVAL;
	return append_bytes(l, data, len);
}

/*
 * The commonest append of all, up to 16 bytes that extend the segment
 * already growing in the append buffer, calls nothing, so it runs without
 * a stack frame (saving the registers the general path needs cost as much
 * as the append itself); anything else tail-calls the general path.
 */
int bl_list_append(struct bl_list *l, const void *data, size_t len)
{
	struct bl_raw *ab = l->_abuf;
	struct bl_seg *ls = l->_ext;
	struct bl__tstats *t = bl__tstats_tls;
	size_t used;

	if (bl__unlikely(!ab || !ls || !t || !data || len - 1 >= 16))
		return append_bytes_slow(l, data, len);
	used = bl__raw_used(ab);
	if (bl__unlikely(bl__raw_len(ab) - used < len))
		return append_bytes_slow(l, data, len);
	ls->len += len;
	l->_len += len;
	BL__LIST_TOUCH(l);
	bl__raw_set_used(ab, used + len);
	bl__stat_adds(&t->pool[bl__raw_pool(ab)].unused, -(int64_t)len);
	bl__stat_add(&t->copied_bytes, len);
	bl__stat_add(&t->copy_ops, 1);
	copy_small(bl__raw_data(ab) + used, data, len);
	return 0;
}

void *bl__list_append_room(struct bl_list *l, size_t len)
{
	struct bl_raw *ab = l->_abuf;

	if (!len || !ab || bl__raw_room(ab) < len)
		return NULL;
	return abuf_claim(l, ab, true, len, NULL);
}

int bl__list_append2(struct bl_list *l, const void *a, size_t alen,
		     const void *b, size_t blen)
{
	struct bl_raw *ab = l->_abuf;
	int ret;

	if (ab && bl__raw_room(ab) >= alen + blen) {
		ret = abuf_put(l, ab, a, alen, NULL);
		if (!ret && blen)
			abuf_put(l, ab, b, blen, NULL);	/* extends: cannot fail */
	} else {
		ret = append_slow(l, a, alen, b, blen);
	}
	return ret;
}
/* bl_list_append_hole() past its fast path: the general append of zeros. */
static __attribute__((noinline)) int
hole_slow(struct bl_list *l, const void *init, size_t len, struct bl_hole *h)
{
	struct bl_raw *ab = l->_abuf;
	struct bl_seg *ls;
	int ret;

	if (!h)
		return -EINVAL;
	if (!len) {
		h->_at = NULL;
		h->_raw = NULL;
		h->_len = 0;
		return 0;
	}
	if (ab && bl__raw_room(ab) >= len) {
		char *p = abuf_claim(l, ab, false, len, NULL);

		if (!p)
			return -ENOMEM;
		if (init)
			memcpy(p, init, len);
		else
			memset(p, 0, len);
		h->_at = p;
		h->_raw = ab;
		h->_len = len;
		return 0;
	}
	/* a new append buffer, or a raw of its own: one raw either way */
	ret = append_slow(l, init, len, NULL, 0);
	if (ret)
		return ret;
	ls = last_seg(l);
	h->_at = ls->data + ls->len - len;
	h->_raw = ls->raw;
	h->_len = len;
	return 0;
}

/*
 * A small hole that extends the segment growing in the append buffer --
 * the versioned encoder's header, once per structure -- takes the path of
 * bl_list_append()'s small appends: no call, no copy counted.  @init: the
 * bytes it starts with (NULL: zeros).
 */
static inline __attribute__((always_inline)) int
hole_fast(struct bl_list *l, const void *init, size_t len, struct bl_hole *h)
{
	struct bl_raw *ab = l->_abuf;
	struct bl_seg *ls = l->_ext;
	struct bl__tstats *t = bl__tstats_tls;
	size_t used;
	char *p;

	if (bl__unlikely(!ab || !ls || !t || !h || len - 1 >= 16))
		goto slow;
	used = bl__raw_used(ab);
	if (bl__unlikely(bl__raw_len(ab) - used < len))
		goto slow;
	p = bl__raw_data(ab) + used;
	ls->len += len;
	l->_len += len;
	BL__LIST_TOUCH(l);
	bl__raw_set_used(ab, used + len);
	bl__stat_adds(&t->pool[bl__raw_pool(ab)].unused, -(int64_t)len);
	if (init)
		copy_small(p, init, len);
	else
		zero_small(p, len);
	h->_at = p;
	h->_raw = ab;
	h->_len = len;
	return 0;
slow:
	return hole_slow(l, init, len, h);
}

int bl_list_append_hole(struct bl_list *l, size_t len, struct bl_hole *h)
{
	return hole_fast(l, NULL, len, h);
}

int bl__list_append_hole_init(struct bl_list *l, const void *init,
			      size_t len, struct bl_hole *h)
{
	return hole_fast(l, init, len, h);
}

int bl_hole_fill(const struct bl_hole *h, size_t off, const void *src,
		 size_t len)
{
	if (!h || (!src && len))
		return -EINVAL;
	if (off > h->_len || len > h->_len - off)
		return -ERANGE;
	if (!len)
		return 0;
	memmove(h->_at + off, src, len);
	bl_raw_invalidate_crc(h->_raw);
	return 0;
}

int bl_list_append_zero(struct bl_list *l, size_t len)
{
	return append_bytes(l, NULL, len);
}

/* ---- appending slices ------------------------------------------------- */

/* Shares the checked slice {@raw, @data, @len} onto @l's end: extends the
 * last segment when it continues it, else one new slot and one reference.
 * 0, or -ENOMEM with @l unchanged. */
static inline int share_one(struct bl_list *l, struct bl_raw *raw,
			    char *data, size_t len)
{
	if (try_extend(l, raw, data, len))
		return 0;
	if (push_seg(l, raw, data, len, NULL))
		return -ENOMEM;
	bl__raw_get(raw);
	return 0;
}

int bl_list_append_ptr(struct bl_list *l, const struct bl_ptr *p)
{
	int ret;

	if (!p->len)
		return 0;
	ret = ptr_check(p);
	if (ret)
		return ret;
	return share_one(l, p->raw, ptr_at(p), p->len);
}

int bl_list_append_ptr_move(struct bl_list *l, struct bl_ptr *p)
{
	int ret;

	if (p->len) {
		ret = ptr_check(p);
		if (ret)
			return ret;
	}
	if (!p->len || try_extend(l, p->raw, ptr_at(p), p->len)) {
		bl_ptr_release(p);
		return 0;
	}
	if (push_seg(l, p->raw, ptr_at(p), p->len, NULL))
		return -ENOMEM;
	p->raw = NULL;
	p->off = 0;
	p->len = 0;
	return 0;
}

int bl__list_append_seg(struct bl_list *l, const struct bl_seg *s)
{
	return share_one(l, s->raw, s->data, s->len);
}

/*
 * Pushes @src's slices onto @l, sharing them; the first extends @l's last
 * segment when it continues it.  @spare as for push_seg(): with room for
 * every slot reserved this cannot fail; otherwise -ENOMEM part way, with
 * the references of what was pushed taken (a mark undoes it).
 */
static inline __attribute__((always_inline)) int
push_shared(struct bl_list *l, const struct bl_list *src,
	    struct bl__chunk_hdr **spare)
{
	struct bl__seg_cursor cur;
	const struct bl_seg *s = bl__seg_first(src, &cur);

	if (s && try_extend(l, s->raw, s->data, s->len))
		s = bl__seg_next(&cur);
	for (; s; s = bl__seg_next(&cur)) {
		if (push_seg(l, s->raw, s->data, s->len, spare))
			return -ENOMEM;
		bl__raw_get(s->raw);
	}
	return 0;
}

int bl_list_append_list(struct bl_list *l, const struct bl_list *src)
{
	struct mark m;

	if (!src->_len)
		return 0;
	if (l == src) {
		/* Appending a list to itself: share a snapshot. */
		struct bl_list tmp;
		int ret;

		bl_list_init(&tmp);
		ret = bl_list_append_list(&tmp, src);
		if (!ret)
			ret = bl_list_claim_append(l, &tmp);
		bl_list_clear(&tmp);
		return ret;
	}
	mark_take(l, &m);
	if (push_shared(l, src, NULL)) {
		bl__list_mark_rollback(l, &m, true);
		return -ENOMEM;
	}
	return 0;
}

/*
 * The messenger's frame encoder (declared in list_int.h): it lives here
 * because it needs the append buffer's and the chunks' internals to make
 * every allocation before it changes anything.
 */
int bl__list_append_frame(struct bl_list *l, const void *pre, size_t prelen,
			  const struct bl_list *mid, bool copy_mid,
			  const void *post, size_t postlen)
{
	size_t midlen = mid ? mid->_len : 0;
	size_t bytes = prelen + postlen + (copy_mid ? midlen : 0), cap = 0;
	/* slots it may push: at most one per piece */
	size_t need = copy_mid || !midlen ? 2 : 2 + (size_t)mid->_nseg;
	struct bl__chunk_hdr *spare = NULL, *t = l->_tail;
	struct bl_raw *ab = l->_abuf, *own = NULL, *nab = NULL;

	if (mid == l)
		return -EINVAL;
	if (!nseg_room(l, need))
		return -ENOMEM;	/* the segment count would wrap */
	/* every allocation first: past this block nothing can fail */
	if (!ab || bl__raw_room(ab) < bytes) {
		if (bytes >= LARGE_APPEND && (copy_mid || !midlen))
			own = bl__raw_create_combined(l->_pool, bytes, bytes);
		else
			nab = abuf_new(l, bytes, &cap);
		if (!own && !nab)
			return -ENOMEM;
	}
	if (t->cap - t->count < need) {
		size_t c = need + t->count;

		spare = bl__chunk_new(c > next_chunk_cap(t) ? (uint32_t)c
							 : next_chunk_cap(t));
		if (!spare) {
			if (own)
				bl__raw_put(own);
			if (nab)
				bl__raw_put(nab);
			return -ENOMEM;
		}
	}

	if (own) {
		/* too big for an append buffer: one exact raw, as append_slow */
		char *d = own->data;

		push_seg(l, own, own->data, bytes, &spare);
		if (prelen)
			memcpy(d, pre, prelen);
		d += prelen;
		if (copy_mid && midlen) {
			bl_list_copy_out(mid, 0, midlen, d);
			d += midlen;
		}
		if (postlen)
			memcpy(d, post, postlen);
		bl__count_copy(bytes);
	} else {
		if (nab)
			abuf_install(l, nab, cap);
		ab = l->_abuf;
		if (prelen)
			abuf_put(l, ab, pre, prelen, &spare);
		if (copy_mid && midlen) {
			struct bl__seg_cursor cur;
			const struct bl_seg *s;

			/* each piece extends the segment the preamble began */
			BL__LIST_FOREACH_SEG(mid, cur, s)
				abuf_put(l, ab, s->data, s->len,
					 &spare);
		} else if (midlen) {
			push_shared(l, mid, &spare);	/* room reserved */
		}
		if (postlen)
			abuf_put(l, ab, post, postlen, &spare);
	}
	if (spare)
		bl__chunk_free(spare);
	return 0;
}

int bl_list_prepend_ptr(struct bl_list *l, const struct bl_ptr *p)
{
	struct bl__chunk_hdr *c = inl(l), *n;
	int ret;

	if (!p->len)
		return 0;
	ret = ptr_check(p);
	if (ret)
		return ret;
	if (bl__unlikely(l->_nseg == UINT_MAX))
		return -ENOMEM;	/* the count would wrap */
	l->_ext = NULL;
	if (!l->_nseg)
		return bl_list_append_ptr(l, p);
	if (!c->start && c->count == c->cap) {
		/* The inline slots are full: move them to a new chunk. */
		n = bl__chunk_new(CHUNK_MIN);
		if (!n)
			return -ENOMEM;
		bl__lindex_drop(l);	/* the third chunk is another now */
		memcpy(slots(n), slots(c), c->count * sizeof(struct bl_seg));
		n->count = c->count;
		n->next = c->next;
		c->next = n;
		if (l->_tail == c)
			l->_tail = n;
		c->count = 0;
		c->start = c->cap;
	} else if (!c->start) {
		memmove(slots(c) + 1, slots(c), c->count * sizeof(struct bl_seg));
		c->start = 1;
	}
	BL__LIST_TOUCH(l);
	c->start--;
	c->count++;
	slots(c)[c->start] = (struct bl_seg){ p->raw, ptr_at(p), p->len };
	bl__raw_get(p->raw);
	l->_nseg++;
	l->_len += p->len;
	return 0;
}
