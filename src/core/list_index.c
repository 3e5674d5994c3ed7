/* SPDX-License-Identifier: MIT */
/*
 * list_index.c - the offset index of a long list, so that finding the
 * segment that holds a byte costs a search of the index (lindex_search())
 * and a scan of at most LSTEP segments instead of a walk from the front,
 * and finding segment number i (bl_list_get_ptr()) a binary search from
 * entry i / LSTEP.  It covers the chunks from the third up to the one
 * before the tail: one entry every LSTEP slots of each chunk, with that
 * slot's first byte and its segment's ordinal, both counted from the third
 * chunk's start.  The first two chunks are left to the walk in locate()
 * and to get_ptr's direct look (changes at the very front, such as the
 * messenger trimming its first segment or a prepend into the inline slots,
 * then leave the index valid), and the tail is left out because appends
 * change it (get_ptr finds a segment there from the list's count).
 * Appends only ever add chunks after the tail, so they never touch the
 * index; lookups of either kind extend it over the chunks sealed since, as
 * far as they need to go (lindex_extend()).  A splice keeps the entries of
 * the chunks before the first one it changes (bl__lindex_cut()), and with
 * them their ordinals: where the entries end, in bytes (end) and in
 * segments (lindex_nseg(), from the last entry and its chunk), is all an
 * extension needs.  Every other change to the chain or to a segment's
 * length drops it (bl__lindex_drop(): the one reset, claim_prepend, a
 * prepend that moves the inline slots out, undoing appends).  It is a
 * cache: a lookup on a const list may build it, and when memory runs out
 * the lookup walks instead, never failing.
 */
#include "list_priv.h"	/* first: config.h sets _GNU_SOURCE */

#define LSTEP 16	/* slots between two entries of one chunk */

struct lentry {
	struct bl__chunk_hdr *c;
	uint32_t i;		/* a slot of c ... */
	uint32_t seg;		/* ... its segment's ordinal, and ... */
	size_t off;		/* ... its first byte, both from the third chunk's */
};

#if UINTPTR_MAX > UINT32_MAX
/* the ordinal lives in what was padding: an entry costs no more */
_Static_assert(sizeof(struct lentry) == 24, "struct lentry grew");
#endif

struct bl__lindex {
	const struct bl__allocator *al;	/* the one that made this block */
	uint32_t n;		/* entries, whole chunks from the third on */
	uint32_t cap;		/* entries the block holds */
	size_t end;		/* where the chunk after the last one starts */
	struct pos hit;		/* the answer bl__lindex_find() lends */
	struct lentry e[];
};

static inline size_t lindex_bytes(uint32_t cap)
{
	return sizeof(struct bl__lindex) + (size_t)cap * sizeof(struct lentry);
}

/* An empty index of @cap entries, or NULL when memory runs out. */
static struct bl__lindex *lindex_alloc(uint32_t cap)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl__lindex *x = bl__alloc(al, lindex_bytes(cap),
					 _Alignof(struct bl__lindex));

	if (!x)
		return NULL;
	x->al = al;
	x->n = 0;
	x->cap = cap;
	x->end = 0;
	return x;
}

/* @l's first index, empty: an entry per LSTEP segments of full chunks,
 * and room to grow.  NULL without memory (the lookup then walks). */
static struct bl__lindex *lindex_make(struct bl_list *l)
{
	l->_lidx = lindex_alloc(l->_nseg / LSTEP + 16);
	return l->_lidx;
}

static void lindex_release(struct bl__lindex *x)
{
	bl__free(x->al, x, lindex_bytes(x->cap), _Alignof(struct bl__lindex));
}

void bl__lindex_free(struct bl_list *l)
{
	lindex_release(l->_lidx);
	l->_lidx = NULL;
}

/* Bytes in chunk @c. */
static inline size_t chunk_len(const struct bl__chunk_hdr *c)
{
	const struct bl_seg *s = slots(c) + c->start;
	size_t len = 0;

	for (uint32_t i = 0; i < c->count; i++)
		len += s[i].len;
	return len;
}

/*
 * Segments in the chunks @x covers: the ordinal of the first segment of
 * the chunk after them.  The last entry's chunk is in the chain (the
 * entries match it), so its count is read there rather than kept twice.
 */
static inline uint32_t lindex_nseg(const struct bl__lindex *x)
{
	const struct lentry *e;

	if (!x->n)
		return 0;
	e = &x->e[x->n - 1];
	return e->seg + (e->c->start + e->c->count - e->i);
}

/*
 * @l's index @x with room for @need more entries: @x, or (only if @alloc)
 * a copy of it in a block twice, four times ... as big, or NULL when
 * there is none (@x is then as it was).  Out of line and cold: the
 * extensions of an index seldom grow it, and their loop keeps its
 * registers without it.
 */
static __attribute__((noinline, cold)) struct bl__lindex *
lindex_grow(struct bl_list *l, struct bl__lindex *x, uint32_t need,
	    bool alloc)
{
	struct bl__lindex *y;
	uint32_t cap = x->cap;

	while (cap - x->n < need) {
		if (!alloc || cap > UINT32_MAX / 2)
			return NULL;
		cap *= 2;
	}
	y = lindex_alloc(cap);
	if (!y)
		return NULL;
	memcpy(y->e, x->e, x->n * sizeof(struct lentry));
	y->n = x->n;
	y->end = x->end;
	lindex_release(x);
	l->_lidx = y;
	return y;
}

/*
 * Adds the entries of chunk @c, which starts at byte @x->end and segment
 * @seg (lindex_nseg(@x)), to @l's index @x, growing it when full (if
 * @alloc).  Return: the index (it may have moved), or NULL when it had no
 * room for them (it is then as it was).
 */
static inline struct bl__lindex *lindex_add_chunk(struct bl_list *l,
						  struct bl__lindex *x,
						  struct bl__chunk_hdr *c,
						  uint32_t seg, bool alloc)
{
	const struct bl_seg *s = slots(c) + c->start;
	uint32_t need = (c->count + LSTEP - 1) / LSTEP;
	size_t off;

	if (bl__unlikely(need > x->cap - x->n)) {
		x = lindex_grow(l, x, need, alloc);
		if (!x)
			return NULL;
	}
	off = x->end;
	/* an entry, then the bytes of its (up to) LSTEP slots */
	for (uint32_t k = 0; k < c->count; k += LSTEP) {
		uint32_t end = c->count - k > LSTEP ? k + LSTEP : c->count;
		struct lentry *e = &x->e[x->n++];

		e->c = c;
		e->i = c->start + k;
		e->seg = seg + k;
		e->off = off;
		for (uint32_t j = k; j < end; j++)
			off += s[j].len;
	}
	x->end = off;
	return x;
}

/*
 * Extends @l's index @x over its sealed chunks from @c, the first one it
 * does not cover, until it covers byte @off or segment @seg (counted from
 * the third chunk's start; the maximum of either: not that way) or
 * reaches the tail; stops early when it has no room (growing it only if
 * @alloc).  Return: the index (it may have moved).
 */
static inline __attribute__((always_inline)) struct bl__lindex *
lindex_extend(struct bl_list *l, struct bl__lindex *x,
	      struct bl__chunk_hdr *c, size_t off, uint32_t seg, bool alloc)
{
	uint32_t n = lindex_nseg(x);

	while (off >= x->end && seg >= n && c != l->_tail) {
		struct bl__lindex *y = lindex_add_chunk(l, x, c, n, alloc);

		if (!y)
			break;	/* no room: the caller walks from c */
		x = y;
		n += c->count;
		c = c->next;
	}
	return x;
}

/* The first chunk after those @x covers (@third when it covers none). */
static inline struct bl__chunk_hdr *lindex_next(const struct bl__lindex *x,
						struct bl__chunk_hdr *third)
{
	return x->n ? x->e[x->n - 1].c->next : third;
}

/*
 * The last entry of @x (not empty) that starts at or before @off
 * (< x->end).  The search starts where the entries' average length puts
 * @off, which in a list of segments of one size (pages, records) is the
 * answer, and gallops from there to bracket it: two probes then, and
 * never more than about twice a binary search's in the worst case.  A
 * plain binary search of a million-segment list's 62,500 entries took 16
 * dependent loads, about as long as the rest of a lookup.
 */
static inline uint32_t lindex_search(const struct bl__lindex *x, size_t off)
{
	uint32_t n = x->n, lo, hi, step = 1;
	size_t avg = x->end / n;	/* >= 1: an entry covers >= 1 byte */

	lo = off / avg < n ? (uint32_t)(off / avg) : n - 1;
	if (x->e[lo].off <= off) {
		/* up: the first entry past @off, or the end */
		while (step < n - lo && x->e[lo + step].off <= off) {
			lo += step;
			step *= 2;
		}
		hi = step < n - lo ? lo + step : n;
	} else {
		/* down: e[0].off is 0, so an entry at or before @off exists */
		hi = lo;
		for (;;) {
			lo = hi > step ? hi - step : 0;
			if (x->e[lo].off <= off)
				break;
			hi = lo;
			step *= 2;
		}
	}
	/* e[lo].off <= off < e[hi].off (hi == n: the end); a binary search
	 * of the entries from lo before hi */
	n = hi - lo;
	while (n > 1) {
		uint32_t half = n / 2;

		if (x->e[lo + half].off <= off)
			lo += half;
		n -= half;
	}
	return lo;
}

/*
 * The last entry of @x (not empty) at or before segment @seg.  Entries
 * are at most LSTEP segments apart (every LSTEP slots of a chunk, and the
 * next chunk's first after fewer), so entry seg / LSTEP is at or before
 * it: the search starts there.  In a list grown by appends, whose sealed
 * chunks are all full, that entry is the answer, which the first probe
 * (of the entry after it) confirms.
 */
static inline uint32_t lindex_search_seg(const struct bl__lindex *x,
					 uint32_t seg)
{
	uint32_t lo = seg / LSTEP, n;

	if (lo >= x->n - 1)
		return x->n - 1;
	if (x->e[lo + 1].seg > seg)
		return lo;
	lo++;
	n = x->n - lo;
	/* e[lo].seg <= seg throughout; n entries from lo are candidates */
	while (n > 1) {
		uint32_t half = n / 2;

		if (x->e[lo + half].seg <= seg)
			lo += half;
		n -= half;
	}
	return lo;
}

int bl__lindex_validate(const struct bl_list *l)
{
	const struct bl__lindex *x = l->_lidx;
	const struct bl__chunk_hdr *c;
	uint32_t k = 0, seg = 0;
	size_t off = 0;

	if (!x)
		return 0;
	if (l->_nseg <= LINDEX_MIN)
		return -1;	/* a short list keeps none */
	if (x->n > x->cap)
		return -2;
	/* entry pointers are compared, never followed: they may be stale */
	c = inl(l)->next ? inl(l)->next->next : NULL;
	while (k < x->n) {
		if (!c || c == l->_tail)
			return -3;	/* more entries than sealed chunks */
		for (uint32_t j = 0; j < c->count; j++) {
			if (j % LSTEP == 0) {
				if (k == x->n || x->e[k].c != c ||
				    x->e[k].i != c->start + j ||
				    x->e[k].off != off)
					return -4;
				if (x->e[k].seg != seg)
					return -6;	/* wrong ordinal */
				k++;
			}
			off += slots(c)[c->start + j].len;
			seg++;
		}
		c = c->next;
	}
	if (x->end != off)
		return -5;
	return 0;
}

/*
 * The entries name the chain's chunks in order, none the tail, and count
 * their segments right: what a lookup relies on, checked in O(chunks)
 * (an entry's pointer is compared with the chain's before it is
 * followed) before each one in --enable-debug builds.
 */
static __attribute__((unused)) bool
lindex_chain_ok(const struct bl_list *l, const struct bl__lindex *x)
{
	const struct bl__chunk_hdr *c = inl(l)->next ? inl(l)->next->next
						     : NULL;
	uint32_t seg = 0;

	for (uint32_t k = 0; k < x->n; c = c->next) {
		if (!c || c == l->_tail || x->e[k].c != c)
			return false;
		for (; k < x->n && x->e[k].c == c; k++)
			if (x->e[k].seg != seg + (x->e[k].i - c->start))
				return false;
		seg += c->count;
	}
	return true;
}

/* The first entry of chunk @c, given entry @k of it. */
static inline uint32_t lindex_chunk_first(const struct bl__lindex *x,
					  const struct bl__chunk_hdr *c,
					  uint32_t k)
{
	while (k && x->e[k - 1].c == c)
		k--;
	return k;
}

/* Keeps the first @k entries: those of the chunks before e[k]'s. */
static inline void lindex_keep(struct bl__lindex *x, uint32_t k)
{
	x->end = x->e[k].off;
	x->n = k;
}

void bl__lindex_cut(struct bl_list *l, const struct bl__chunk_hdr *c,
		    size_t off)
{
	struct bl__lindex *x = l->_lidx;
	const struct bl__chunk_hdr *second;
	uint32_t k;

	if (!x)
		return;
	second = inl(l)->next;
	if (c == inl(l) || c == second) {
		bl__lindex_free(l);	/* the third chunk may be another */
		return;
	}
	/* c lies past the first two chunks, so off does too */
	off -= chunk_len(inl(l)) + chunk_len(second);
	if (off >= x->end)
		return;		/* c is past the chunks indexed */
	k = lindex_search(x, off);
	if (bl__unlikely(x->e[k].c != c)) {
		/* not where its bytes say: keep nothing rather than trust it */
		BL_DEBUG_CHECK(0, "list %p: chunk %p is not where its offset "
			       "index puts it", (const void *)l,
			       (const void *)c);
		bl__lindex_free(l);
		return;
	}
	lindex_keep(x, lindex_chunk_first(x, c, k));
}

void bl__lindex_settle(struct bl_list *l)
{
	struct bl__lindex *x = l->_lidx;

	if (!x)
		return;
	if (l->_nseg <= LINDEX_MIN)
		bl__lindex_free(l);	/* a short list keeps none */
	else if (x->n && x->e[x->n - 1].c == l->_tail)
		lindex_keep(x, lindex_chunk_first(x, l->_tail, x->n - 1));
}

/* Where the index has no room: the thread's answer. */
static __thread struct pos walk_hit;

/* bl__lindex_find(), which is this under the name its callers see cold */
static const struct pos *lindex_find(const struct bl_list *cl,
				     struct bl__chunk_hdr *c,
				     struct bl__chunk_hdr *prev, size_t off,
				     bool alloc)
{
	/* the index is a cache beside the contents, which stay as they are */
	struct bl_list *l = (struct bl_list *)cl;
	struct bl__lindex *x = l->_lidx;
	struct bl__chunk_hdr *second = prev;
	struct pos *hit = &walk_hit;
	size_t base = 0, off0 = off, from_end;

	BL_DEBUG_CHECK(!x || lindex_chain_ok(l, x),
		       "list %p: its offset index does not match its chunks: "
		       "a change to the list did not drop it", (const void *)l);
	if (!x && alloc)
		x = lindex_make(l);
	if (x) {
		/* extend it over the sealed chunks up to the one needed */
		if (off >= x->end && lindex_next(x, c) != l->_tail)
			x = lindex_extend(l, x, lindex_next(x, c), off,
					  UINT32_MAX, alloc);
		hit = &x->hit;
		if (x->n) {
			prev = x->e[x->n - 1].c;
			c = prev->next;
			base = x->end;
		}
		if (off < base) {
			uint32_t k = lindex_search(x, off), j = k;
			const struct lentry *e = &x->e[k];
			const struct bl_seg *s = slots(e->c);

			/* the chunk before e's: the entry before its first */
			while (j && x->e[j].c == e->c)
				j--;
			hit->c = e->c;
			hit->prev = x->e[j].c == e->c ? second : x->e[j].c;
			off -= e->off;
			for (uint32_t i = e->i;; i++) {
				if (off < s[i].len) {
					hit->i = i;
					hit->inner = off;
					return hit;
				}
				off -= s[i].len;
			}
		}
	}
	off -= base;
	for (; c != l->_tail; prev = c, c = c->next)
		if (scan_chunk(c, prev, &off, hit))
			return hit;
	/*
	 * The tail: from its end when that is nearer (appends look there).
	 * How far that is takes the bytes of the first two chunks, which
	 * the caller walked: a cost paid here rather than by every lookup.
	 */
	from_end = l->_len - chunk_len(inl(l)) - chunk_len(second) - off0;
	if (from_end && from_end < off) {
		const struct bl_seg *s = slots(c);

		for (uint32_t i = c->start + c->count; i-- > c->start;) {
			if (from_end <= s[i].len) {
				hit->c = c;
				hit->prev = prev;
				hit->i = i;
				hit->inner = s[i].len - from_end;
				return hit;
			}
			from_end -= s[i].len;
		}
	} else if (scan_chunk(c, prev, &off, hit)) {
		return hit;
	}
	pos_end(hit);
	return hit;
}

const struct pos *bl__lindex_find(const struct bl_list *l,
				  struct bl__chunk_hdr *c,
				  struct bl__chunk_hdr *prev, size_t off,
				  bool alloc)
	__attribute__((alias("lindex_find")));

/*
 * Segment @idx (from the third chunk's first) when @x covers it, else
 * NULL.  The search finds the last entry at or before it; past the chunks
 * covered that is the last entry, and the segment lies past its chunk's
 * end, so one test tells both cases apart.
 */
static inline const struct bl_seg *lindex_seg_hit(const struct bl__lindex *x,
						  uint32_t idx)
{
	const struct lentry *e;
	uint32_t i;

	if (!x->n)
		return NULL;
	e = &x->e[lindex_search_seg(x, idx)];
	/* e->seg <= idx (e[0].seg is 0); compared as a distance, which
	 * cannot wrap, where e->i + it could past what the index covers */
	if (idx - e->seg >= e->c->start + e->c->count - e->i)
		return NULL;
	i = e->i + (idx - e->seg);
	return &slots(e->c)[i];
}

/* lindex_seg() when the index is missing or too short: make or extend it,
 * or walk without memory for it */
static __attribute__((noinline)) const struct bl_seg *
lindex_seg_slow(struct bl_list *l, struct bl__chunk_hdr *c, unsigned idx)
{
	struct bl__lindex *x = l->_lidx;
	uint32_t base = 0;

	if (!x)
		x = lindex_make(l);
	if (x) {
		const struct bl_seg *s;

		/* extend it over the sealed chunks up to the one needed */
		x = lindex_extend(l, x, lindex_next(x, c), SIZE_MAX, idx,
				  true);
		s = lindex_seg_hit(x, idx);
		if (s)
			return s;
		/* no room for more: walk from the first chunk not covered */
		base = lindex_nseg(x);
		c = lindex_next(x, c);
	}
	return seg_walk(c, idx - base);
}

/* bl__lindex_seg(), which is this under the name its callers see cold:
 * the search when the index covers the segment, with no stack frame */
static const struct bl_seg *lindex_seg(const struct bl_list *cl,
				       struct bl__chunk_hdr *c, unsigned idx)
{
	/* the index is a cache beside the contents, which stay as they are */
	struct bl_list *l = (struct bl_list *)cl;
	const struct bl__lindex *x = l->_lidx;

	if (x) {
		const struct bl_seg *s;

		BL_DEBUG_CHECK(lindex_chain_ok(l, x), "list %p: its offset "
			       "index does not match its chunks: a change to "
			       "the list did not drop it", (const void *)l);
		s = lindex_seg_hit(x, idx);
		if (s)
			return s;
	}
	return lindex_seg_slow(l, c, idx);
}

const struct bl_seg *bl__lindex_seg(const struct bl_list *l,
				    struct bl__chunk_hdr *c, unsigned idx)
	__attribute__((alias("lindex_seg")));
