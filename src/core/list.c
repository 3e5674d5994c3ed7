/* SPDX-License-Identifier: MIT */
/*
 * list.c - the bufferlist's structure: heap chunks, marks, the basics
 * (init, clear, swap, lengths), and moving or sharing segments without
 * copying their bytes: claiming another list's segments, splicing,
 * substr_of.  Appending is in list_append.c, the rebuilds and other
 * reshapings in list_reshape.c, the read-only walks in list_read.c,
 * copying bytes out of and into a range in list_copy.c; list_priv.h is
 * what they share.
 *
 * Costs on the hot paths:
 *  - claim_append: relinks chunks; copies at most BL_LIST_INLINE slices;
 *    touches no reference count.
 *  - splice: moves the references of whole segments; only a segment cut
 *    in two gains a reference.
 *  - substr_of: one reference per segment shared, no copy.
 */
#include "list_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <stdlib.h>

_Static_assert(offsetof(struct bl_list, _inl_seg) ==
	       offsetof(struct bl_list, _inl) + offsetof(struct bl__chunk, seg),
	       "the inline slots must sit where a chunk's slots would");

/* ---- chunks ----------------------------------------------------------- */

static inline size_t chunk_bytes(uint32_t cap)
{
	return sizeof(struct bl__chunk) + (size_t)cap * sizeof(struct bl_seg);
}

/*
 * A heap chunk goes back to the allocator that made it, which need not be
 * the one in force when it is freed (bl_allocator_set() may run while the
 * list lives): the chunk keeps that allocator in a word just before it.
 */
struct chunk_box {
	const struct bl__allocator *al;
	struct bl__chunk c;
};

struct bl__chunk_hdr *bl__chunk_new(uint32_t cap)
{
	const struct bl__allocator *al = bl__allocator_current();
	size_t sz = offsetof(struct chunk_box, c) + chunk_bytes(cap);
	struct chunk_box *b = bl__alloc(al, sz, _Alignof(struct chunk_box));

	if (!b)
		return NULL;
	b->al = al;
	b->c.h.next = NULL;
	b->c.h.start = 0;
	b->c.h.count = 0;
	b->c.h.cap = cap;
	b->c.h._gen = 0;
	return &b->c.h;
}

void bl__chunk_free(struct bl__chunk_hdr *c)
{
	struct chunk_box *b = (struct chunk_box *)((char *)c -
						   offsetof(struct chunk_box, c));

	bl__free(b->al, b, offsetof(struct chunk_box, c) + chunk_bytes(c->cap),
		 _Alignof(struct chunk_box));
}

/* ---- marks: undo of appends ------------------------------------------- */

void bl__list_mark_rollback(struct bl_list *l, const struct mark *m,
			    bool release)
{
	struct bl__chunk_hdr *c = m->tail, *n = c->next;
	uint32_t keep = m->count;

	BL__LIST_TOUCH(l);
	bl__lindex_drop(l);	/* it may hold chunks sealed since the mark */
	l->_ext = NULL;
	if (c == inl(l) && !c->count && keep) {
		/* push_seg moved the inline slots into the first heap chunk */
		for (uint32_t k = 0; k < keep; k++)
			slots(c)[m->start + k] = slots(n)[n->start + k];
		c->start = m->start;
		c->count = keep;
		n->start += keep;
		n->count -= keep;
	}
	/* compaction may have moved the kept slots to the chunk's front */
	if (release)
		for (uint32_t i = c->start + keep; i < c->start + c->count; i++)
			bl__raw_put(slots(c)[i].raw);
	c->count = keep;
	c->next = NULL;
	while (n) {
		struct bl__chunk_hdr *nx = n->next;

		if (release)
			for (uint32_t i = n->start; i < n->start + n->count; i++)
				bl__raw_put(slots(n)[i].raw);
		bl__chunk_free(n);
		n = nx;
	}
	l->_tail = c;
	if (c->count)
		slots(c)[c->start + c->count - 1].len = m->last_len;
	l->_len = m->len;
	l->_nseg = m->nseg;
}

/* ---- basics ----------------------------------------------------------- */

void bl_list_set_pool(struct bl_list *l, struct bl_pool *p)
{
	l->_pool = p;
}

void bl__list_drop_segments(struct bl_list *l)
{
	struct bl__chunk_hdr *c = inl(l);

	while (c) {
		struct bl__chunk_hdr *n = c->next;
		struct bl_seg *s = slots(c) + c->start;

		for (uint32_t i = 0; i < c->count; i++)
			bl__raw_put(s[i].raw);
		if (c != inl(l))
			bl__chunk_free(c);
		c = n;
	}
	bl__list_reset(l);
}

static __attribute__((noinline)) void clear_slow(struct bl_list *l)
{
	bl__list_drop_segments(l);
	if (l->_abuf)
		bl__raw_put(l->_abuf);
	l->_abuf = NULL;
	/* A cleared list starts small again: it must not pin a large raw. */
	l->_abuf_next = 0;
}

/*
 * A list of at most one inline slice and no append buffer -- a slice
 * taken out of a bigger list -- is cleared without a stack frame (the
 * general path's register saves would cost as much as the clear).
 */
void bl_list_clear(struct bl_list *l)
{
	struct bl_raw *r = NULL;

	if (!l)
		return;
	if (bl__unlikely(l->_inl.next || l->_abuf || l->_inl.count > 1)) {
		clear_slow(l);
		return;
	}
	if (l->_inl.count)
		r = slots(inl(l))[l->_inl.start].raw;
	bl__list_reset_unindexed(l);	/* no heap chunk */
	l->_abuf_next = 0;
	if (r)
		bl__raw_put(r);
}

void bl_list_swap(struct bl_list *a, struct bl_list *b)
{
	struct bl_list t;
	bool a_inl, b_inl;

	if (a == b)
		return;
	a_inl = a->_tail == inl(a);
	b_inl = b->_tail == inl(b);
	memcpy(&t, a, sizeof(t));
	memcpy(a, b, sizeof(*a));
	memcpy(b, &t, sizeof(*b));
	if (b_inl)
		a->_tail = inl(a);
	if (a_inl)
		b->_tail = inl(b);
	a->_ext = NULL;	/* it may point into the other's inline slots */
	b->_ext = NULL;
	/* each offset index moved with its chunks: heap chunks only, counted
	 * from the third chunk, so still right */
	BL__LIST_TOUCH(a);
	BL__LIST_TOUCH(b);
}

/* ---- claim ------------------------------------------------------------ */

static __attribute__((noinline)) int
claim_append_slow(struct bl_list *l, struct bl_list *src)
{
	struct bl__chunk_hdr *si = inl(src), *t = l->_tail, *dst;
	unsigned nseg;

	if (l == src)
		return -EINVAL;
	if (!src->_nseg)
		return 0;
	if (__builtin_add_overflow(l->_nseg, src->_nseg, &nseg))
		return -ENOMEM;	/* the segment count would wrap */
	l->_ext = NULL;
	/* src's inline slices are copied; everything else is relinked. */
	if (si->count) {
		if (t->cap - t->count >= si->count) {
			if (t->start + t->count + si->count > t->cap)
				chunk_compact(t);
			dst = t;
		} else {
			dst = bl__chunk_new(CHUNK_MIN);
			if (!dst)
				return -ENOMEM;
			t->next = dst;
			t = dst;
		}
		/* at most BL_LIST_INLINE slots: assignments, not a memcpy call */
		for (uint32_t k = 0; k < si->count; k++)
			slots(dst)[dst->start + dst->count + k] =
				slots(si)[si->start + k];
		dst->count += si->count;
	}
	if (si->next) {
		t->next = si->next;
		t = src->_tail;
	}
	l->_tail = t;
	l->_len += src->_len;
	l->_nseg = nseg;
	BL__LIST_TOUCH(l);
	/* src keeps its append buffer: further appends to it stay cheap. */
	bl__list_reset(src);	/* its chunks are l's now */
	return 0;
}

/*
 * A source with no inline slice -- every list that outgrew its two inline
 * slots lives wholly in heap chunks -- is a relink that calls nothing, so
 * it runs without a stack frame (the general path's register saves cost
 * as much as the relink); anything else goes the general way.
 */
int bl_list_claim_append(struct bl_list *l, struct bl_list *src)
{
	struct bl__chunk_hdr *si = inl(src);
	unsigned nseg;

	if (bl__unlikely(l == src || si->count || !si->next))
		return claim_append_slow(l, src);
	/* a count that would wrap is the slow path's -ENOMEM */
	if (bl__unlikely(__builtin_add_overflow(l->_nseg, src->_nseg, &nseg)))
		return claim_append_slow(l, src);
	BL__LIST_TOUCH(l);	/* (src: in bl__list_reset()) */
	l->_ext = NULL;
	l->_tail->next = si->next;
	l->_tail = src->_tail;
	l->_len += src->_len;
	l->_nseg = nseg;
	bl__list_reset(src);
	return 0;
}

int bl_list_claim_prepend(struct bl_list *l, struct bl_list *src)
{
	struct bl__chunk_hdr *li = inl(l), *si = inl(src), *e = NULL, *old_next;
	struct bl__chunk_hdr *old_tail;

	if (l == src)
		return -EINVAL;
	if (!src->_nseg)
		return 0;
	if (!nseg_room(l, src->_nseg))
		return -ENOMEM;	/* the segment count would wrap */
	l->_ext = NULL;
	if (!l->_nseg) {
		/* Same as an append, but keep l's own append buffer. */
		return bl_list_claim_append(l, src);
	}
	if (li->count) {
		e = bl__chunk_new(CHUNK_MIN);
		if (!e)
			return -ENOMEM;
		memcpy(slots(e), slots(li) + li->start,
		       li->count * sizeof(struct bl_seg));
		e->count = li->count;
	}
	BL__LIST_TOUCH(l);	/* (src: in bl__list_reset()) */
	bl__lindex_drop(l);
	old_next = li->next;
	old_tail = l->_tail;
	/* l's inline slots take src's inline slices... */
	memcpy(slots(li), slots(si) + si->start, si->count * sizeof(struct bl_seg));
	li->start = 0;
	li->count = si->count;
	/* ... then src's chunks, then l's old inline slices, then l's chunks. */
	{
		struct bl__chunk_hdr *t = li;

		if (si->next) {
			t->next = si->next;
			t = src->_tail;
		}
		if (e) {
			t->next = e;
			t = e;
		}
		t->next = old_next;
		l->_tail = old_next ? old_tail : t;
	}
	l->_len += src->_len;
	l->_nseg += src->_nseg;
	bl__list_reset(src);
	return 0;
}

/* ---- splice ----------------------------------------------------------- */

/*
 * Removes slots from (a.c, a.i) to (b.c, b.i) inclusive, without touching
 * references, freeing heap chunks that become empty.
 */
static void remove_slots(struct bl_list *l, struct pos *a, struct pos *b)
{
	struct bl__chunk_hdr *c = a->c, *prev = a->prev;

	if (a->c == b->c) {
		uint32_t end = c->start + c->count;

		memmove(slots(c) + a->i, slots(c) + b->i + 1,
			(end - b->i - 1) * sizeof(struct bl_seg));
		c->count -= b->i - a->i + 1;
	} else {
		struct bl__chunk_hdr *n = c->next;

		c->count = a->i - c->start;
		while (n != b->c) {
			struct bl__chunk_hdr *nx = n->next;

			bl__chunk_free(n);
			n = nx;
		}
		c->next = b->c;
		b->c->count -= b->i + 1 - b->c->start;
		b->c->start = b->i + 1;
		/* b's chunk may now be empty. */
		if (!b->c->count) {
			c->next = b->c->next;
			if (l->_tail == b->c)
				l->_tail = c;
			bl__chunk_free(b->c);
		}
	}
	if (!c->count) {
		if (c != inl(l)) {
			prev->next = c->next;
			if (l->_tail == c)
				l->_tail = prev;
			bl__chunk_free(c);
		} else {
			c->start = 0;
		}
	}
}

/* Slot before (b->c, b->i), given that one exists; b->prev is b's chunk's. */
static void pos_prev(const struct pos *b, struct pos *y)
{
	if (b->i > b->c->start) {
		*y = *b;
		y->i--;
		return;
	}
	/* heap chunks are never empty, and a slot precedes b: prev has one */
	y->c = b->prev;
	y->i = y->c->start + y->c->count - 1;
	y->prev = NULL;	/* not needed: only x's prev is used */
}

/* Inserts @s right after slot @a.i of @a.c (which has room, or @spare). */
static void insert_after(struct bl_list *l, const struct pos *a,
			 const struct bl_seg *s, struct bl__chunk_hdr **spare)
{
	struct bl__chunk_hdr *c = a->c;
	uint32_t end = c->start + c->count;

	if (end < c->cap) {
		memmove(slots(c) + a->i + 2, slots(c) + a->i + 1,
			(end - a->i - 1) * sizeof(struct bl_seg));
		slots(c)[a->i + 1] = *s;
		c->count++;
	} else if (c->start) {
		memmove(slots(c) + c->start - 1, slots(c) + c->start,
			(a->i + 1 - c->start) * sizeof(struct bl_seg));
		c->start--;
		slots(c)[a->i] = *s;
		c->count++;
	} else {
		/* full: s and the slots after a move to the spare chunk */
		struct bl__chunk_hdr *n = *spare;
		uint32_t moved = end - a->i - 1;

		*spare = NULL;
		slots(n)[0] = *s;
		memcpy(slots(n) + 1, slots(c) + a->i + 1,
		       moved * sizeof(struct bl_seg));
		n->start = 0;
		n->count = moved + 1;
		c->count -= moved;
		n->next = c->next;
		c->next = n;
		if (l->_tail == c)
			l->_tail = n;
	}
	l->_nseg++;
}

/*
 * The splice of a range whose first slot (@a) and last slot (@b) lie in
 * different chunks, into @claim_by: the chunks wholly inside the range are
 * relinked as they are, the slots of the two end chunks copied in two
 * runs into at most two new chunks, and no reference changes hands except
 * a new one for each end segment cut in two (l keeps a piece of it).
 * Both chunks are allocated before anything changes.  Out of line, so that
 * the splices that stay in bl_list_splice() (the messenger's cuts at the
 * front) keep their code as it was.
 * Return: 0, or -ENOMEM with both lists unchanged.
 */
static __attribute__((noinline)) int
splice_chunks(struct bl_list *l, const struct pos *a, const struct pos *b,
	      size_t off, size_t len, struct bl_list *claim_by)
{
	struct bl__chunk_hdr *ac = a->c, *bc = b->c, *mid = ac->next;
	struct bl__chunk_hdr *mlast = NULL, *hc, *tc = NULL, *last, *c;
	struct bl_seg *sa = &slots(ac)[a->i], *sb = &slots(bc)[b->i];
	uint32_t nhead = ac->start + ac->count - a->i;
	uint32_t ntail = b->i - bc->start + 1, cap;
	size_t nmid = 0, total, left_len = a->inner, end_inner = b->inner + 1;
	bool keep_l = left_len > 0, keep_r = end_inner < sb->len;
	struct bl_list tmp;

	for (c = mid; c != bc; c = c->next) {
		nmid += c->count;
		mlast = c;
	}
	total = nhead + nmid + ntail;
	if (!nseg_room(claim_by, total))
		return -ENOMEM;	/* the segment count would wrap */
	/* the head run, and the tail run too when no chunk lies between */
	cap = nhead + (mlast ? 0 : ntail);
	hc = bl__chunk_new(cap > CHUNK_MIN ? cap : CHUNK_MIN);
	if (!hc)
		return -ENOMEM;
	if (mlast) {
		tc = bl__chunk_new(ntail > CHUNK_MIN ? ntail : CHUNK_MIN);
		if (!tc) {
			bl__chunk_free(hc);
			return -ENOMEM;
		}
	}

	/* claim_by's chain: hc, the middle chunks, tc */
	memcpy(slots(hc), sa, nhead * sizeof(struct bl_seg));
	slots(hc)[0].data += left_len;
	slots(hc)[0].len -= left_len;
	hc->count = nhead;
	last = tc ? tc : hc;
	memcpy(slots(last) + last->count, slots(bc) + bc->start,
	       ntail * sizeof(struct bl_seg));
	last->count += ntail;
	slots(last)[last->count - 1].len = end_inner;
	if (mlast) {
		hc->next = mid;
		mlast->next = tc;
	}
	/* an end cut in two: l keeps a piece, claim_by gets a reference */
	if (keep_l)
		bl__raw_get(sa->raw);
	if (keep_r)
		bl__raw_get(sb->raw);

	/* l: a's chunk keeps its slots before a (and a's front piece) ... */
	BL__LIST_TOUCH(l);
	bl__lindex_cut(l, ac, off);	/* from ac on, chunks go to claim_by */
	if (keep_l)
		sa->len = left_len;
	ac->count = a->i - ac->start + keep_l;
	/* ... and b's chunk its slots after b (and b's back piece) */
	if (keep_r) {
		sb->data += end_inner;
		sb->len -= end_inner;
	}
	bc->start += ntail - keep_r;
	bc->count -= ntail - keep_r;
	ac->next = bc;
	if (!bc->count) {
		ac->next = bc->next;
		if (l->_tail == bc)
			l->_tail = ac;
		bl__chunk_free(bc);
	}
	if (!ac->count) {
		if (ac != inl(l)) {
			a->prev->next = ac->next;
			if (l->_tail == ac)
				l->_tail = a->prev;
			bl__chunk_free(ac);
		} else {
			ac->start = 0;
		}
	}
	l->_nseg -= (unsigned)(total - keep_l - keep_r);
	l->_len -= len;
	bl__lindex_settle(l);

	/* hand the chain over: a relink that cannot fail (count checked) */
	bl_list_init(&tmp);
	tmp._inl.next = hc;
	tmp._tail = last;
	tmp._len = len;
	tmp._nseg = (unsigned)total;
	bl_list_claim_append(claim_by, &tmp);
	return 0;
}

int bl_list_splice(struct bl_list *l, size_t off, size_t len,
		   struct bl_list *claim_by)
{
	struct bl__chunk_hdr *spare = NULL, *c;
	struct pos a, b;
	struct bl_seg sb;
	struct mark m;
	size_t left_len, end_inner;
	bool keep_l, keep_r, one;
	unsigned nslots = 0;
	uint32_t i;

	if (claim_by == l)
		return -EINVAL;
	if (!range_ok(l, off, len))
		return -ERANGE;
	if (!len)
		return 0;
	l->_ext = NULL;
	locate(l, off, &a);
	locate(l, off + len - 1, &b);	/* b holds the last byte removed */
	sb = slots(b.c)[b.i];
	left_len = a.inner;		/* bytes of a's segment kept in front */
	end_inner = b.inner + 1;	/* bytes of sb removed */
	keep_l = left_len > 0;
	keep_r = end_inner < sb.len;
	one = a.c == b.c && a.i == b.i;
	if (claim_by && a.c != b.c)
		return splice_chunks(l, &a, &b, off, len, claim_by);

	/*
	 * A hole inside one segment turns one slot into two: get the room
	 * now, so that after this point only claim_by's appends can fail,
	 * and a mark undoes those.
	 */
	if (one && keep_l && keep_r && !nseg_room(l, 1))
		return -ENOMEM;	/* the segment count would wrap */
	if (one && keep_l && keep_r && a.c->count == a.c->cap) {
		spare = bl__chunk_new(a.c->cap > CHUNK_MIN ? a.c->cap : CHUNK_MIN);
		if (!spare)
			return -ENOMEM;
	}
	if (claim_by)
		mark_take(claim_by, &m);
	/* Phase 1: count the slots; claim_by gets the removed pieces. */
	for (c = a.c, i = a.i;; pos_next(&c, &i)) {
		struct bl_seg s = slots(c)[i];
		bool first = c == a.c && i == a.i;
		bool last = c == b.c && i == b.i;
		size_t so = first ? left_len : 0;
		size_t se = last ? end_inner : s.len;

		nslots++;
		if (claim_by &&
		    push_seg(claim_by, s.raw, s.data + so, se - so, NULL)) {
			/* the references were only borrowed: drop nothing */
			bl__list_mark_rollback(claim_by, &m, false);
			if (spare)
				bl__chunk_free(spare);
			return -ENOMEM;
		}
		if (last)
			break;
	}

	/* Phase 2: references, then slots.  Nothing here can fail. */
	BL__LIST_TOUCH(l);
	bl__lindex_cut(l, a.c, off);
	for (c = a.c, i = a.i;; pos_next(&c, &i)) {
		bool first = c == a.c && i == a.i;
		bool last = c == b.c && i == b.i;
		bool kept = (first && keep_l) || (last && keep_r);

		if (kept && claim_by)
			bl__raw_get(slots(c)[i].raw);	/* claim_by's piece */
		else if (!kept && !claim_by)
			bl__raw_put(slots(c)[i].raw);
		if (last)
			break;
	}
	if (one && keep_l && keep_r) {
		struct bl_seg r = { sb.raw, sb.data + end_inner,
				     sb.len - end_inner };

		bl__raw_get(sb.raw);
		slots(a.c)[a.i].len = left_len;
		insert_after(l, &a, &r, &spare);
	} else {
		struct pos x = a, y = b;
		unsigned nkeep = keep_l + keep_r;

		if (keep_l)
			slots(a.c)[a.i].len = left_len;
		if (keep_r) {
			struct bl_seg *s = &slots(b.c)[b.i];

			s->data += end_inner;
			s->len -= end_inner;
		}
		if (nslots > nkeep) {
			if (keep_l) {
				x.prev = a.c;
				pos_next(&x.c, &x.i);
				if (x.c == a.c)
					x.prev = a.prev;
			}
			if (keep_r)
				pos_prev(&b, &y);
			remove_slots(l, &x, &y);
			l->_nseg -= nslots - nkeep;
		}
	}
	l->_len -= len;
	bl__lindex_settle(l);
	if (spare)
		bl__chunk_free(spare);
	return 0;
}

/* ---- substr, copy ----------------------------------------------------- */

int bl__list_share_range(struct bl_list *dst, const struct bl_list *src,
			 size_t off, size_t len)
{
	struct bl__chunk_hdr *c;
	struct mark m;
	struct pos p;
	uint32_t i;

	if (!len)
		return 0;
	mark_take(dst, &m);
	locate(src, off, &p);
	for (c = p.c, i = p.i; len; pos_next(&c, &i)) {
		const struct bl_seg *s = &slots(c)[i];
		size_t so = c == p.c && i == p.i ? p.inner : 0;
		size_t n = s->len - so;

		if (n > len)
			n = len;
		if (!try_extend(dst, s->raw, s->data + so, n)) {
			if (push_seg(dst, s->raw, s->data + so, n, NULL)) {
				bl__list_mark_rollback(dst, &m, true);
				return -ENOMEM;
			}
			bl__raw_get(s->raw);
		}
		len -= n;
	}
	return 0;
}

/*
 * substr_of's general path: build aside, then replace dst's segments (its
 * append buffer stays), so that a failure leaves dst as it was.
 */
static __attribute__((noinline)) int
substr_slow(struct bl_list *dst, const struct bl_list *src, size_t off,
	    size_t len)
{
	struct bl_list tmp;
	int ret;

	bl_list_init(&tmp);
	ret = bl__list_share_range(&tmp, src, off, len);
	if (ret)
		return ret;
	bl__list_drop_segments(dst);
	bl_list_claim_append(dst, &tmp);	/* dst is empty: cannot fail */
	return 0;
}

/*
 * Into an empty @dst, @len > 0, from the segment at @p: a range inside
 * that segment -- a slice taken out to be handed on -- sets one slot and
 * takes one reference, and calls nothing; anything else goes the general
 * way.
 */
static inline int substr_one(struct bl_list *dst, const struct bl_list *src,
			     size_t off, size_t len, const struct pos *p)
{
	const struct bl_seg *s = &slots(p->c)[p->i];

	if (bl__unlikely(len > s->len - p->inner))
		return substr_slow(dst, src, off, len);
	bl__list_put_lone(dst, bl__raw_get(s->raw), s->data + p->inner, len);
	return 0;
}

/* Past the first two chunks: locate() may call into the offset index. */
static __attribute__((noinline)) int
substr_far(struct bl_list *dst, const struct bl_list *src, size_t off,
	   size_t len)
{
	struct pos p;

	locate(src, off, &p);
	return substr_one(dst, src, off, len, &p);
}

int bl_list_substr_of(struct bl_list *dst, const struct bl_list *src,
		      size_t off, size_t len)
{
	struct pos p;

	if (!range_ok(src, off, len))
		return -ERANGE;
	if (bl__unlikely(!len || dst->_nseg))
		return substr_slow(dst, src, off, len);
	/* near the front without a call, so without a stack frame */
	if (!locate_near(src, off, &p))
		return substr_far(dst, src, off, len);
	return substr_one(dst, src, off, len, &p);
}
