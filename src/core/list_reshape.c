/* SPDX-License-Identifier: MIT */
/*
 * list_reshape.c - changing how a list's bytes are laid out without
 * changing the bytes: rebuild into one segment (and c_str, which hands
 * that segment out), copy_shared (the same into another list, in a raw
 * that is never thread-local), rebuild_aligned and the
 * O_DIRECT preparation (alignment of addresses and lengths, a cap on the
 * segment count), compact (copy small values out of large buffers they
 * pin).  All but rebuild go through bl__list_reshape(): segments that can
 * stay are shared as they are, runs of the others are copied into one new
 * raw each, and the list changes only when every allocation succeeded.
 */
#include "list_priv.h"	/* first: config.h sets _GNU_SOURCE */

/* ---- rebuild ---------------------------------------------------------- */

/* Copies @nseg segments from @cur's on into @dst (which has room). */
static void copy_run(char *dst, struct bl__seg_cursor cur, unsigned nseg)
{
	const struct bl_seg *s = bl__seg_at(&cur);

	while (nseg--) {
		memcpy(dst, s->data, s->len);
		dst += s->len;
		s = bl__seg_next(&cur);
	}
}

/* A raw in pool @p (NULL: default) for @len bytes copied out of a list. */
static struct bl_raw *raw_for_copy(struct bl_pool *p, size_t len, size_t align)
{
	return align <= BL_CACHELINE ? bl__raw_create_combined(p, len, len)
				     : bl_raw_create_aligned_in(p, len, align);
}

/*
 * Copies non-empty @l into one new raw (whatever its segments).  0 or
 * -ENOMEM.
 */
static int rebuild_one(struct bl_list *l)
{
	struct bl_raw *r;

	r = raw_for_copy(&bl__pools[bl__raw_pool(bl__list_front(l)->raw)],
			 l->_len, BL_CACHELINE);
	if (!r)
		return -ENOMEM;
	bl_list_copy_out(l, 0, l->_len, bl__raw_data(r));
	bl__list_drop_segments(l);
	/* into an inline slot: cannot fail */
	push_seg(l, r, bl__raw_data(r), bl__raw_len(r), NULL);
	return 0;
}

int bl_list_rebuild(struct bl_list *l)
{
	return l->_nseg <= 1 ? 0 : rebuild_one(l);
}

/* ---- a copy another thread may hold ------------------------------------ */

int bl_list_copy_shared(struct bl_list *dst, const struct bl_list *src)
{
	size_t len;
	struct bl_raw *r;
	bool was;

	if (!dst || !src)
		return -EINVAL;
	len = src->_len;
	if (!len)
		return 0;
	was = bl_raw_set_thread_local(false);
	r = raw_for_copy(dst->_pool, len, BL_CACHELINE);
	bl_raw_set_thread_local(was);
	if (!r)
		return -ENOMEM;
	/* before @dst changes */
	bl_list_copy_out(src, 0, len, bl__raw_data(r));
	if (push_seg(dst, r, bl__raw_data(r), len, NULL)) {
		bl_raw_put(r);
		return -ENOMEM;
	}
	return 0;
}

/* ---- c_str ------------------------------------------------------------ */

char *bl_list_c_str(struct bl_list *l)
{
	static char empty[1];	/* "": NULL must mean only ENOMEM */
	struct bl_seg *s;

	if (!l->_len)
		return empty;
	/* a static raw's bytes are read-only: the caller gets a copy */
	if ((l->_nseg > 1 || bl__raw_readonly(last_seg(l)->raw)) &&
	    rebuild_one(l))
		return NULL;
	s = last_seg(l);
	return s->data;
}

/* ---- reshaping: share what can stay, copy runs of what cannot --------- */

ssize_t bl__list_reshape(struct bl_list *l, const struct bl__reshape *rs)
{
	struct bl__seg_cursor cur, run;
	const struct bl_seg *s;
	struct bl_list out;
	unsigned idx = 0, n = l->_nseg, nkept;
	size_t copied = 0;

	/* the segments before the first run: when that is all, nothing to do */
	BL__LIST_FOREACH_SEG(l, cur, s) {
		if (!rs->keep(s, idx == n - 1, rs->ctx))
			break;
		idx++;
	}
	if (!s)
		return 0;
	nkept = idx;
	bl_list_init(&out);
	out._pool = l->_pool;
	for (s = bl__seg_first(l, &cur), idx = 0; s;) {
		struct bl_pool *p;
		struct bl_raw *r;
		size_t total = 0;
		unsigned cnt = 0;

		/* @keep has said yes to the first nkept, no to the next one */
		if (idx < nkept ||
		    (idx > nkept && rs->keep(s, idx == n - 1, rs->ctx))) {
			if (push_seg(&out, s->raw, s->data, s->len, NULL))
				goto fail;
			bl__raw_get(s->raw);
			idx++;
			s = bl__seg_next(&cur);
			continue;
		}
		/* a run: one new raw for all of it */
		run = cur;
		p = rs->in_list_pool ? l->_pool
				     : &bl__pools[bl__raw_pool(s->raw)];
		do {
			total += s->len;
			cnt++;
			idx++;
			s = bl__seg_next(&cur);
		} while (s && rs->more(total, s, idx == n - 1, rs->ctx));
		r = raw_for_copy(p, total, rs->align);
		if (!r)
			goto fail;
		copy_run(bl__raw_data(r), run, cnt);
		bl__count_copy(total);
		copied += total;
		if (push_seg(&out, r, bl__raw_data(r), total, NULL)) {
			bl__raw_put(r);
			goto fail;
		}
	}
	bl__list_drop_segments(l);
	bl_list_claim_append(l, &out);	/* l is empty: cannot fail */
	bl_list_clear(&out);
	return (ssize_t)copied;
fail:
	bl_list_clear(&out);
	return -ENOMEM;
}

struct dio_ctx {
	size_t size_align, mem_align;
	unsigned group, in_run;	/* the capping pass: segments per run */
};

static bool dio_good(const struct bl_seg *s, bool last, void *arg)
{
	const struct dio_ctx *d = arg;

	return !(((uintptr_t)s->data) & (d->mem_align - 1)) &&
	       (last || !(s->len & (d->size_align - 1)));
}

/* A misaligned run goes on until it ends on a boundary before a good one. */
static bool dio_more(size_t total, const struct bl_seg *next, bool last,
		     void *arg)
{
	const struct dio_ctx *d = arg;

	return (total & (d->size_align - 1)) || !dio_good(next, last, arg);
}

static bool group_start(const struct bl_seg *s, bool last, void *arg)
{
	struct dio_ctx *d = arg;

	d->in_run = 1;
	return false;
}

static bool group_more(size_t total, const struct bl_seg *next, bool last,
		       void *arg)
{
	struct dio_ctx *d = arg;

	return d->in_run++ < d->group;
}

int bl_list_rebuild_aligned_size_and_memory(struct bl_list *l,
					    size_t size_align,
					    size_t mem_align,
					    unsigned max_segments)
{
	struct dio_ctx d = { size_align, mem_align, 0, 0 };
	struct bl__reshape rs = {
		.keep = dio_good, .more = dio_more, .align = mem_align,
		.ctx = &d,
	};
	struct bl_list tmp;
	ssize_t copied;

	if (!bl__is_pow2(size_align) || !bl__is_pow2(mem_align))
		return -EINVAL;
	if (!max_segments || l->_nseg <= max_segments) {
		copied = bl__list_reshape(l, &rs);
		return copied < 0 ? (int)copied : copied > 0;
	}
	/*
	 * Too many segments for one request: align a copy of the list, then
	 * copy groups of its segments, so that l changes only if both work.
	 */
	bl_list_init(&tmp);
	if (bl__list_share_range(&tmp, l, 0, l->_len))
		return -ENOMEM;
	copied = bl__list_reshape(&tmp, &rs);
	if (copied >= 0 && tmp._nseg > max_segments) {
		rs.keep = group_start;
		rs.more = group_more;
		d.group = (tmp._nseg + max_segments - 1) / max_segments;
		copied = bl__list_reshape(&tmp, &rs);
	}
	if (copied >= 0) {
		bl__list_drop_segments(l);
		bl_list_claim_append(l, &tmp);	/* l is empty: cannot fail */
	}
	bl_list_clear(&tmp);
	return copied < 0 ? (int)copied : 1;
}

int bl_list_rebuild_aligned(struct bl_list *l, size_t align)
{
	return bl_list_rebuild_aligned_size_and_memory(l, align, align, 0);
}

/* ---- padding to whole blocks ------------------------------------------- */

ssize_t bl_list_pad_to(struct bl_list *l, size_t align)
{
	struct bl__chunk_hdr *spare = NULL, *t = l->_tail;
	struct bl_seg *last;
	size_t rem, pad, tail;
	struct bl_raw *r;

	if (!bl__is_pow2(align))
		return -EINVAL;
	rem = l->_len & (align - 1);
	if (!rem)
		return 0;
	pad = align - rem;
	last = last_seg(l);	/* not empty: rem != 0 */
	tail = last->len < rem ? last->len : rem;
	r = raw_for_copy(l->_pool, tail + pad, align);
	if (!r)
		return -ENOMEM;
	if (tail < last->len && t->count == t->cap) {
		spare = bl__chunk_new(next_chunk_cap(t));
		if (!spare) {
			bl__raw_put(r);
			return -ENOMEM;
		}
	}
	/*
	 * The unfinished block moves into the aligned raw: a copy of less
	 * than @align bytes, where padding after the last segment would
	 * leave that segment misaligned in length and have the O_DIRECT
	 * preparation copy all of it.
	 */
	memcpy(bl__raw_data(r), last->data + last->len - tail, tail);
	memset(bl__raw_data(r) + tail, 0, pad);
	if (tail)
		bl__count_copy(tail);
	l->_ext = NULL;
	if (tail == last->len) {
		bl__raw_put(last->raw);
		last->raw = r;
		last->data = bl__raw_data(r);
		last->len = tail + pad;
		l->_len += pad;
	} else {
		last->len -= tail;
		l->_len -= tail;
		/* room made: cannot fail */
		push_seg(l, r, bl__raw_data(r), tail + pad, &spare);
	}
	if (spare)
		bl__chunk_free(spare);
	return (ssize_t)pad;
}

/* ---- compact ---------------------------------------------------------- */

struct compact_ctx {
	struct raw_use *v;
	size_t n, max_waste;
};

static bool compact_keep(const struct bl_seg *s, bool last, void *arg)
{
	const struct compact_ctx *cc = arg;

	return bl__list_waste_of(cc->v, cc->n, s->raw) <= cc->max_waste;
}

static bool compact_more(size_t total, const struct bl_seg *next, bool last,
			 void *arg)
{
	return !compact_keep(next, last, arg);
}

ssize_t bl_list_compact(struct bl_list *l, size_t max_waste)
{
	struct compact_ctx cc = { NULL, 0, max_waste };
	struct bl__reshape rs = {
		.keep = compact_keep, .more = compact_more,
		.align = BL_CACHELINE, .ctx = &cc,
	};
	size_t cap;
	ssize_t copied;

	cc.v = bl__list_usage(l, &cc.n, &cap);
	if (!cc.v)
		return cc.n ? -ENOMEM : 0;
	copied = bl__list_reshape(l, &rs);
	bl__list_usage_free(cc.v, cap);
	/* the append buffer goes too: what we keep should pin nothing more */
	if (copied >= 0 && l->_abuf &&
	    bl__raw_room(l->_abuf) > max_waste) {
		bl__raw_put(l->_abuf);
		l->_abuf = NULL;
		l->_abuf_next = 0;
		l->_ext = NULL;	/* the hint belongs to the old buffer */
	}
	return copied;
}
