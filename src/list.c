/* SPDX-License-Identifier: MIT */
/*
 * list.c - the bufferlist.
 *
 * Representation: a singly linked chain of chunks, each an array of
 * slices stored by value.  The first chunk is always the inline one inside
 * struct bl_list (possibly empty); heap chunks follow and are never empty.
 * Appending a segment writes 24 bytes into the tail chunk; a chunk is
 * allocated once per up to 64 segments (Ceph allocates a node per segment).
 *
 * Costs on the hot paths:
 *  - append of caller bytes that fit the append buffer: no allocation, no
 *    atomic, one memcpy; it extends the last segment when that segment
 *    ends at the buffer's frontier.
 *  - append_ptr: one atomic increment (the new reference); extends the
 *    last segment instead when the slice continues it.
 *  - claim_append: relinks chunks; copies at most BL_LIST_INLINE slices;
 *    touches no reference count.
 *  - splice: moves the references of whole segments; only a segment cut
 *    in two gains a reference.
 */
#include "list_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <stdlib.h>

_Static_assert(offsetof(struct bl_list, _inl_seg) ==
	       offsetof(struct bl_list, _inl) + offsetof(struct bl__chunk, seg),
	       "the inline slots must sit where a chunk's slots would");

#define CHUNK_MIN 8
#define CHUNK_MAX 64
#define ABUF_MIN 128u		/* first append buffer's capacity */
#define LARGE_APPEND 4096	/* appends this big get a raw of their own */

/* ---- chunks ------------------------------------------------------------- */

static inline struct bl__chunk_hdr *inl(const struct bl_list *l)
{
	return (struct bl__chunk_hdr *)&l->_inl;
}

static inline struct bl_ptr *slots(const struct bl__chunk_hdr *c)
{
	return bl__chunk(c)->seg;
}

static inline size_t chunk_bytes(uint32_t cap)
{
	return sizeof(struct bl__chunk) + (size_t)cap * sizeof(struct bl_ptr);
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

static struct bl__chunk_hdr *chunk_new(uint32_t cap)
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
	b->c.h._pad = 0;
	return &b->c.h;
}

static void chunk_free(struct bl__chunk_hdr *c)
{
	struct chunk_box *b = (struct chunk_box *)((char *)c -
						   offsetof(struct chunk_box, c));

	bl__free(b->al, b, offsetof(struct chunk_box, c) + chunk_bytes(c->cap),
		 _Alignof(struct chunk_box));
}

static uint32_t next_chunk_cap(const struct bl__chunk_hdr *tail)
{
	uint32_t cap = tail->cap * 2;

	if (cap < CHUNK_MIN)
		cap = CHUNK_MIN;
	return cap > CHUNK_MAX ? CHUNK_MAX : cap;
}

static inline struct bl_ptr *last_seg(const struct bl_list *l)
{
	const struct bl__chunk_hdr *t = l->_tail;

	return t->count ? &slots(t)[t->start + t->count - 1] : NULL;
}

/* The first segment (the list is not empty); only inline can be empty. */
static inline struct bl_ptr *first_seg(const struct bl_list *l)
{
	const struct bl__chunk_hdr *c = inl(l)->count ? inl(l) : inl(l)->next;

	return &slots(c)[c->start];
}

/* Moves a chunk's slots to its front so free room is at the end. */
static void chunk_compact(struct bl__chunk_hdr *c)
{
	if (c->start) {
		memmove(slots(c), slots(c) + c->start,
			c->count * sizeof(struct bl_ptr));
		c->start = 0;
	}
}

/* True when one more slot can be pushed without allocating. */
static inline bool tail_has_room(const struct bl_list *l)
{
	const struct bl__chunk_hdr *t = l->_tail;

	return t->count < t->cap;
}

/*
 * Pushes a slice whose reference the list now owns.  @spare, when not
 * NULL, is a chunk allocated in advance and consumed if needed (so that a
 * caller can do all its allocation before it changes anything).
 * Return: 0, or -ENOMEM with nothing changed.
 */
static int push_seg(struct bl_list *l, struct bl_raw *raw, size_t off,
		    size_t len, struct bl__chunk_hdr **spare)
{
	struct bl__chunk_hdr *t = l->_tail;
	struct bl_ptr *s;

	if (bl__unlikely(t->start + t->count == t->cap)) {
		if (t->count < t->cap) {
			chunk_compact(t);	/* push clears _ext below */
		} else {
			struct bl__chunk_hdr *c;

			if (spare && *spare) {
				c = *spare;
				*spare = NULL;
			} else {
				c = chunk_new(next_chunk_cap(t));
				if (!c)
					return -ENOMEM;
			}
			if (t == inl(l)) {
				/*
				 * The first heap chunk takes the inline slices
				 * too: a list that outgrew its inline slots then
				 * lives wholly in heap chunks, and claim_append
				 * of it relinks without copying any slot.
				 */
				for (uint32_t k = 0; k < t->count; k++)
					slots(c)[k] = slots(t)[t->start + k];
				c->count = t->count;
				t->start = 0;
				t->count = 0;
			}
			t->next = c;
			l->_tail = t = c;
		}
	}
	s = &slots(t)[t->start + t->count++];
	l->_ext = NULL;
	s->raw = raw;
	s->off = off;
	s->len = len;
	l->_nseg++;
	l->_len += len;
	return 0;
}

/* ---- marks: undo of appends ------------------------------------------- */

/*
 * A mark records the end of a list so that everything appended after it
 * can be taken back: the way an operation that appends many segments stays
 * atomic when an allocation fails halfway.
 */
struct mark {
	struct bl__chunk_hdr *tail;
	uint32_t start;		/* the tail chunk's first slot then ... */
	uint32_t count;		/* ... and its number of slots */
	size_t last_len;	/* length of the last segment then */
	size_t len;
	unsigned nseg;
};

static void mark_take(const struct bl_list *l, struct mark *m)
{
	struct bl_ptr *ls = last_seg(l);

	m->tail = l->_tail;
	m->start = m->tail->start;
	m->count = m->tail->count;
	m->last_len = ls ? ls->len : 0;
	m->len = l->_len;
	m->nseg = l->_nseg;
}

/* Drops what was appended after @m; @release: the list owned references. */
static void mark_rollback(struct bl_list *l, const struct mark *m,
			  bool release)
{
	struct bl__chunk_hdr *c = m->tail, *n = c->next;
	uint32_t keep = m->count;

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
		chunk_free(n);
		n = nx;
	}
	l->_tail = c;
	if (c->count)
		slots(c)[c->start + c->count - 1].len = m->last_len;
	l->_len = m->len;
	l->_nseg = m->nseg;
}

/* ---- basics ------------------------------------------------------------ */

void bl_list_set_pool(struct bl_list *l, struct bl_pool *p)
{
	l->_pool = p;
}

void bl_list_init(struct bl_list *l)
{
	l->_pool = NULL;
	l->_ext = NULL;
	l->_tail = inl(l);
	l->_len = 0;
	l->_nseg = 0;
	l->_abuf_next = 0;
	l->_abuf = NULL;
	l->_inl.next = NULL;
	l->_inl.start = 0;
	l->_inl.count = 0;
	l->_inl.cap = BL_LIST_INLINE;
	l->_inl._pad = 0;
}

/* Drops the segments, keeps the append buffer. */
static void drop_segments(struct bl_list *l)
{
	struct bl__chunk_hdr *c = inl(l);

	while (c) {
		struct bl__chunk_hdr *n = c->next;
		struct bl_ptr *s = slots(c) + c->start;

		for (uint32_t i = 0; i < c->count; i++)
			bl__raw_put(s[i].raw);
		if (c != inl(l))
			chunk_free(c);
		c = n;
	}
	l->_ext = NULL;
	l->_tail = inl(l);
	l->_inl.next = NULL;
	l->_inl.start = 0;
	l->_inl.count = 0;
	l->_len = 0;
	l->_nseg = 0;
}

void bl_list_clear(struct bl_list *l)
{
	drop_segments(l);
	if (l->_abuf)
		bl__raw_put(l->_abuf);
	l->_abuf = NULL;
	/* A cleared list starts small again: it must not pin a large raw. */
	l->_abuf_next = 0;
}

/* The list's contents are now empty but its chunks belong to another. */
static void reset_moved(struct bl_list *l)
{
	l->_ext = NULL;
	l->_tail = inl(l);
	l->_inl.next = NULL;
	l->_inl.start = 0;
	l->_inl.count = 0;
	l->_len = 0;
	l->_nseg = 0;
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
}

size_t bl_list_length(const struct bl_list *l)
{
	return l->_len;
}

unsigned bl_list_num_buffers(const struct bl_list *l)
{
	return l->_nseg;
}

bool bl_list_is_empty(const struct bl_list *l)
{
	return l->_len == 0;
}

/* ---- appending bytes ------------------------------------------------------ */

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

/*
 * Appends into the append buffer @ab, which has room for @len: extends the
 * last segment when it ends at the frontier, else pushes a new segment
 * (one atomic increment, maybe one chunk allocation).  Inlined by force:
 * it is the whole of a small append.  @spare as for push_seg(): with room
 * reserved in advance this cannot fail.
 */
static inline __attribute__((always_inline)) int
abuf_put(struct bl_list *l, struct bl_raw *ab, const void *data, size_t len,
	 struct bl__chunk_hdr **spare)
{
	struct bl_ptr *ls = l->_ext;
	char *dst = ab->data + ab->used;
	struct bl__tstats *t;

	if (!ls) {
		ls = last_seg(l);
		if (!ls || ls->raw != ab || ls->off + ls->len != ab->used) {
			if (push_seg(l, ab, ab->used, 0, spare))
				return -ENOMEM;
			bl__raw_get(ab);
			ls = last_seg(l);
		}
	}
	ls->len += len;
	l->_len += len;
	ab->used += len;
	l->_ext = ls;
	/* all the accounting of an append, through one thread-local lookup */
	t = bl__tstats();
	bl__stat_adds(&t->pool[ab->pool].unused, -(int64_t)len);
	if (data) {
		bl__stat_add(&t->copied_bytes, len);
		bl__stat_add(&t->copy_ops, 1);
	}
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
	return bl__raw_create_combined(l->_pool, cap, 0);
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
		if (push_seg(l, ab, 0, len, NULL)) {
			bl__raw_put(ab);
			return -ENOMEM;
		}
		put2(ab->data, a, alen, b, blen);
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
	if (bl__likely(ab && ab->len - ab->used >= len))
		ret = abuf_put(l, ab, data, len, NULL);	/* counts the copy */
	else
		ret = append_slow(l, data, len, NULL, 0);
	return ret;
}

static __attribute__((noinline)) int
append_bytes_slow(struct bl_list *l, const void *data, size_t len)
{
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
	struct bl_ptr *ls = l->_ext;
	struct bl__tstats *t = bl__tstats_tls;
	char *dst;

	if (bl__unlikely(!ab || !ls || !t || !data || len - 1 >= 16 ||
			 ab->len - ab->used < len))
		return append_bytes_slow(l, data, len);
	dst = ab->data + ab->used;
	ls->len += len;
	l->_len += len;
	ab->used += len;
	bl__stat_adds(&t->pool[ab->pool].unused, -(int64_t)len);
	bl__stat_add(&t->copied_bytes, len);
	bl__stat_add(&t->copy_ops, 1);
	copy_small(dst, data, len);
	return 0;
}

int bl__list_append2(struct bl_list *l, const void *a, size_t alen,
		     const void *b, size_t blen)
{
	struct bl_raw *ab = l->_abuf;
	int ret;

	if (ab && ab->len - ab->used >= alen + blen) {
		ret = abuf_put(l, ab, a, alen, NULL);
		if (!ret && blen)
			abuf_put(l, ab, b, blen, NULL);	/* extends: cannot fail */
	} else {
		ret = append_slow(l, a, alen, b, blen);
	}
	return ret;
}

/* Slots pushable onto @l without allocating. */
unsigned bl__list_tail_room(const struct bl_list *l)
{
	return l->_tail->cap - l->_tail->count;
}

int bl_list_append_zero(struct bl_list *l, size_t len)
{
	return append_bytes(l, NULL, len);
}

/* ---- appending slices --------------------------------------------------- */

/* Extends the last segment over @p when @p continues it in the same raw. */
static inline bool try_extend(struct bl_list *l, const struct bl_ptr *p)
{
	struct bl_ptr *ls = last_seg(l);

	l->_ext = NULL;
	if (ls && ls->raw == p->raw && ls->off + ls->len == p->off) {
		ls->len += p->len;
		l->_len += p->len;
		return true;
	}
	return false;
}

int bl_list_append_ptr(struct bl_list *l, const struct bl_ptr *p)
{
	if (!p->len || try_extend(l, p))
		return 0;
	if (push_seg(l, p->raw, p->off, p->len, NULL))
		return -ENOMEM;
	bl__raw_get(p->raw);
	return 0;
}

int bl_list_append_ptr_move(struct bl_list *l, struct bl_ptr *p)
{
	if (!p->len || try_extend(l, p)) {
		bl_ptr_release(p);
		return 0;
	}
	if (push_seg(l, p->raw, p->off, p->len, NULL))
		return -ENOMEM;
	p->raw = NULL;
	p->off = 0;
	p->len = 0;
	return 0;
}

#define for_each_seg(l, c, s, i)					\
	for (c = inl(l); c; c = c->next)				\
		for (i = 0, s = slots(c) + c->start; i < c->count; i++, s++)

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
	const struct bl__chunk_hdr *c;
	const struct bl_ptr *s;
	uint32_t i;
	bool first = true;

	for_each_seg(src, c, s, i) {
		if (first && try_extend(l, s)) {
			first = false;
			continue;
		}
		first = false;
		if (push_seg(l, s->raw, s->off, s->len, spare))
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
		mark_rollback(l, &m, true);
		return -ENOMEM;
	}
	return 0;
}

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
	/* every allocation first: past this block nothing can fail */
	if (!ab || ab->len - ab->used < bytes) {
		if (bytes >= LARGE_APPEND && (copy_mid || !midlen))
			own = bl__raw_create_combined(l->_pool, bytes, bytes);
		else
			nab = abuf_new(l, bytes, &cap);
		if (!own && !nab)
			return -ENOMEM;
	}
	if (t->cap - t->count < need) {
		size_t c = need + t->count;

		spare = chunk_new(c > next_chunk_cap(t) ? (uint32_t)c
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

		push_seg(l, own, 0, bytes, &spare);
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
			const struct bl__chunk_hdr *c;
			const struct bl_ptr *s;
			uint32_t i;

			/* each piece extends the segment the preamble began */
			for_each_seg(mid, c, s, i)
				abuf_put(l, ab, s->raw->data + s->off, s->len,
					 &spare);
		} else if (midlen) {
			push_shared(l, mid, &spare);	/* room reserved */
		}
		if (postlen)
			abuf_put(l, ab, post, postlen, &spare);
	}
	if (spare)
		chunk_free(spare);
	return 0;
}

int bl_list_prepend_ptr(struct bl_list *l, const struct bl_ptr *p)
{
	struct bl__chunk_hdr *c = inl(l), *n;

	if (!p->len)
		return 0;
	l->_ext = NULL;
	if (!l->_nseg)
		return bl_list_append_ptr(l, p);
	if (!c->start && c->count == c->cap) {
		/* The inline slots are full: move them to a new chunk. */
		n = chunk_new(CHUNK_MIN);
		if (!n)
			return -ENOMEM;
		memcpy(slots(n), slots(c), c->count * sizeof(struct bl_ptr));
		n->count = c->count;
		n->next = c->next;
		c->next = n;
		if (l->_tail == c)
			l->_tail = n;
		c->count = 0;
		c->start = c->cap;
	} else if (!c->start) {
		memmove(slots(c) + 1, slots(c), c->count * sizeof(struct bl_ptr));
		c->start = 1;
	}
	c->start--;
	c->count++;
	slots(c)[c->start] = *p;
	bl__raw_get(p->raw);
	l->_nseg++;
	l->_len += p->len;
	return 0;
}

/* ---- claim -------------------------------------------------------------- */

static __attribute__((noinline)) int
claim_append_slow(struct bl_list *l, struct bl_list *src)
{
	struct bl__chunk_hdr *si = inl(src), *t = l->_tail, *dst;

	if (l == src)
		return -EINVAL;
	if (!src->_nseg)
		return 0;
	l->_ext = NULL;
	/* src's inline slices are copied; everything else is relinked. */
	if (si->count) {
		if (t->cap - t->count >= si->count) {
			if (t->start + t->count + si->count > t->cap)
				chunk_compact(t);
			dst = t;
		} else {
			dst = chunk_new(CHUNK_MIN);
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
	l->_nseg += src->_nseg;
	/* src keeps its append buffer: further appends to it stay cheap. */
	reset_moved(src);
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

	if (bl__unlikely(l == src || si->count || !si->next))
		return claim_append_slow(l, src);
	l->_ext = NULL;
	l->_tail->next = si->next;
	l->_tail = src->_tail;
	l->_len += src->_len;
	l->_nseg += src->_nseg;
	reset_moved(src);
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
	l->_ext = NULL;
	if (!l->_nseg) {
		/* Same as an append, but keep l's own append buffer. */
		return bl_list_claim_append(l, src);
	}
	if (li->count) {
		e = chunk_new(CHUNK_MIN);
		if (!e)
			return -ENOMEM;
		memcpy(slots(e), slots(li) + li->start,
		       li->count * sizeof(struct bl_ptr));
		e->count = li->count;
	}
	old_next = li->next;
	old_tail = l->_tail;
	/* l's inline slots take src's inline slices... */
	memcpy(slots(li), slots(si) + si->start, si->count * sizeof(struct bl_ptr));
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
	reset_moved(src);
	return 0;
}

/* ---- positions ------------------------------------------------------------ */

struct pos {
	struct bl__chunk_hdr *c;	/* NULL at the end of the list */
	struct bl__chunk_hdr *prev;	/* chunk before c (NULL for inline) */
	uint32_t i;			/* slot index in c */
	size_t inner;			/* offset inside that segment */
};

/* The segment holding byte @off (< length), or the end when off == length. */
static void locate(const struct bl_list *l, size_t off, struct pos *p)
{
	struct bl__chunk_hdr *c, *prev = NULL;

	for (c = inl(l); c; prev = c, c = c->next) {
		struct bl_ptr *s = slots(c);

		for (uint32_t i = c->start; i < c->start + c->count; i++) {
			if (off < s[i].len) {
				p->c = c;
				p->prev = prev;
				p->i = i;
				p->inner = off;
				return;
			}
			off -= s[i].len;
		}
	}
	p->c = NULL;
	p->prev = NULL;
	p->i = 0;
	p->inner = 0;
}

static inline bool range_ok(const struct bl_list *l, size_t off, size_t len)
{
	return off <= l->_len && len <= l->_len - off;
}

/* Next slot after (c, i), moving to the next chunk at a chunk's end. */
static inline void pos_next(struct bl__chunk_hdr **c, uint32_t *i)
{
	if (++*i == (*c)->start + (*c)->count) {
		*c = (*c)->next;
		if (*c)
			*i = (*c)->start;
	}
}

/* ---- splice ------------------------------------------------------------- */

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
			(end - b->i - 1) * sizeof(struct bl_ptr));
		c->count -= b->i - a->i + 1;
	} else {
		struct bl__chunk_hdr *n = c->next;

		c->count = a->i - c->start;
		while (n != b->c) {
			struct bl__chunk_hdr *nx = n->next;

			chunk_free(n);
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
			chunk_free(b->c);
		}
	}
	if (!c->count) {
		if (c != inl(l)) {
			prev->next = c->next;
			if (l->_tail == c)
				l->_tail = prev;
			chunk_free(c);
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
			 const struct bl_ptr *s, struct bl__chunk_hdr **spare)
{
	struct bl__chunk_hdr *c = a->c;
	uint32_t end = c->start + c->count;

	if (end < c->cap) {
		memmove(slots(c) + a->i + 2, slots(c) + a->i + 1,
			(end - a->i - 1) * sizeof(struct bl_ptr));
		slots(c)[a->i + 1] = *s;
		c->count++;
	} else if (c->start) {
		memmove(slots(c) + c->start - 1, slots(c) + c->start,
			(a->i + 1 - c->start) * sizeof(struct bl_ptr));
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
		       moved * sizeof(struct bl_ptr));
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

int bl_list_splice(struct bl_list *l, size_t off, size_t len,
		   struct bl_list *claim_by)
{
	struct bl__chunk_hdr *spare = NULL, *c;
	struct pos a, b;
	struct bl_ptr sb;
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

	/*
	 * A hole inside one segment turns one slot into two: get the room
	 * now, so that after this point only claim_by's appends can fail,
	 * and a mark undoes those.
	 */
	if (one && keep_l && keep_r && a.c->count == a.c->cap) {
		spare = chunk_new(a.c->cap > CHUNK_MIN ? a.c->cap : CHUNK_MIN);
		if (!spare)
			return -ENOMEM;
	}
	if (claim_by)
		mark_take(claim_by, &m);
	/* Phase 1: count the slots; claim_by gets the removed pieces. */
	for (c = a.c, i = a.i;; pos_next(&c, &i)) {
		struct bl_ptr s = slots(c)[i];
		bool first = c == a.c && i == a.i;
		bool last = c == b.c && i == b.i;
		size_t so = first ? left_len : 0;
		size_t se = last ? end_inner : s.len;

		nslots++;
		if (claim_by &&
		    push_seg(claim_by, s.raw, s.off + so, se - so, NULL)) {
			/* the references were only borrowed: drop nothing */
			mark_rollback(claim_by, &m, false);
			if (spare)
				chunk_free(spare);
			return -ENOMEM;
		}
		if (last)
			break;
	}

	/* Phase 2: references, then slots.  Nothing here can fail. */
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
		struct bl_ptr r = { sb.raw, sb.off + end_inner,
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
			struct bl_ptr *s = &slots(b.c)[b.i];

			s->off += end_inner;
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
	if (spare)
		chunk_free(spare);
	return 0;
}

/* ---- substr, copy ---------------------------------------------------------- */

/* Shares [off, off + len) of @src onto the end of @dst (dst != src). */
static int share_range(struct bl_list *dst, const struct bl_list *src,
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
		const struct bl_ptr *s = &slots(c)[i];
		size_t so = c == p.c && i == p.i ? p.inner : 0;
		size_t n = s->len - so;
		struct bl_ptr piece;

		if (n > len)
			n = len;
		piece.raw = s->raw;
		piece.off = s->off + so;
		piece.len = n;
		if (!try_extend(dst, &piece)) {
			if (push_seg(dst, s->raw, s->off + so, n, NULL)) {
				mark_rollback(dst, &m, true);
				return -ENOMEM;
			}
			bl__raw_get(s->raw);
		}
		len -= n;
	}
	return 0;
}

int bl_list_substr_of(struct bl_list *dst, const struct bl_list *src,
		      size_t off, size_t len)
{
	struct bl_list tmp;
	int ret;

	if (!range_ok(src, off, len))
		return -ERANGE;
	bl_list_init(&tmp);
	ret = share_range(&tmp, src, off, len);
	if (ret)
		return ret;
	/* dst's old segments go; its append buffer stays with it */
	drop_segments(dst);
	bl_list_claim_append(dst, &tmp);	/* dst is empty: cannot fail */
	return 0;
}

int bl_list_copy_out(const struct bl_list *l, size_t off, size_t len,
		     void *dst)
{
	struct bl__chunk_hdr *c;
	char *out = dst;
	struct pos p;
	uint32_t i;

	if (!range_ok(l, off, len))
		return -ERANGE;
	if (!len)
		return 0;
	locate(l, off, &p);
	bl__count_copy(len);
	for (c = p.c, i = p.i; len; pos_next(&c, &i)) {
		const struct bl_ptr *s = &slots(c)[i];
		size_t so = c == p.c && i == p.i ? p.inner : 0;
		size_t n = s->len - so;

		if (n > len)
			n = len;
		memcpy(out, s->raw->data + s->off + so, n);
		out += n;
		len -= n;
	}
	return 0;
}

static void free_table(struct bl_raw **priv, struct bl_raw **stack_priv,
		       unsigned n)
{
	if (priv && priv != stack_priv)
		bl__free(bl__allocator_current(), priv, n * sizeof(*priv),
			 sizeof(void *));
}

/*
 * Writes @src (NULL: zeros) over [off, off + len).  Static raws are
 * read-only: their segments first get private copies, all allocated before
 * anything is written so that a failure changes nothing.
 */
static int write_range(struct bl_list *l, size_t off, size_t len,
		       const void *src)
{
	struct bl__chunk_hdr *c;
	const char *in = src;
	struct bl_raw **priv = NULL, *stack_priv[8];
	unsigned nstatic = 0, k;
	struct pos p;
	uint32_t i;
	size_t left;

	if (!range_ok(l, off, len))
		return -ERANGE;
	if (!len)
		return 0;
	locate(l, off, &p);
	for (c = p.c, i = p.i, left = len; left; pos_next(&c, &i)) {
		const struct bl_ptr *s = &slots(c)[i];
		size_t so = c == p.c && i == p.i ? p.inner : 0;
		size_t n = s->len - so < left ? s->len - so : left;

		nstatic += s->raw->readonly;
		left -= n;
	}
	if (nstatic) {
		priv = stack_priv;
		if (nstatic > 8) {
			priv = bl__alloc(bl__allocator_current(),
					 nstatic * sizeof(*priv), sizeof(void *));
			if (!priv)
				return -ENOMEM;
		}
		k = 0;
		for (c = p.c, i = p.i, left = len; left; pos_next(&c, &i)) {
			const struct bl_ptr *s = &slots(c)[i];
			size_t so = c == p.c && i == p.i ? p.inner : 0;
			size_t n = s->len - so < left ? s->len - so : left;

			left -= n;
			if (!s->raw->readonly)
				continue;
			priv[k] = bl_raw_create_in(bl_raw_pool(s->raw), s->len);
			if (!priv[k]) {
				while (k--)
					bl__raw_put(priv[k]);
				free_table(priv, stack_priv, nstatic);
				return -ENOMEM;
			}
			memcpy(priv[k]->data, s->raw->data + s->off, s->len);
			bl__count_copy(s->len);
			k++;
		}
	}
	k = 0;
	for (c = p.c, i = p.i, left = len; left; pos_next(&c, &i)) {
		struct bl_ptr *s = &slots(c)[i];
		size_t so = c == p.c && i == p.i ? p.inner : 0;
		size_t n = s->len - so < left ? s->len - so : left;

		if (s->raw->readonly) {
			bl__raw_put(s->raw);
			s->raw = priv[k++];
			s->off = 0;
		}
		if (in) {
			memcpy(s->raw->data + s->off + so, in, n);
			in += n;
		} else {
			memset(s->raw->data + s->off + so, 0, n);
		}
		bl_raw_invalidate_crc(s->raw);
		left -= n;
	}
	free_table(priv, stack_priv, nstatic);
	if (src)
		bl__count_copy(len);
	return 0;
}

int bl_list_copy_in(struct bl_list *l, size_t off, size_t len,
		    const void *src)
{
	return write_range(l, off, len, src);
}

int bl_list_zero(struct bl_list *l, size_t off, size_t len)
{
	return write_range(l, off, len, NULL);
}

/* ---- rebuild ------------------------------------------------------------- */

/* Copies @nslots segments from slot (c, i) on into @dst (which has room). */
static void copy_run(char *dst, struct bl__chunk_hdr *c, uint32_t i,
		     unsigned nslots)
{
	while (nslots--) {
		const struct bl_ptr *s = &slots(c)[i];

		memcpy(dst, s->raw->data + s->off, s->len);
		dst += s->len;
		pos_next(&c, &i);
	}
}

/* A raw for bytes copied out of @like's segment: same pool. */
static struct bl_raw *raw_for_copy(const struct bl_raw *like, size_t len,
				   size_t align)
{
	struct bl_pool *p = &bl__pools[like->pool];

	return align <= BL_CACHELINE ? bl__raw_create_combined(p, len, len)
				     : bl_raw_create_aligned_in(p, len, align);
}

int bl_list_rebuild(struct bl_list *l)
{
	struct bl_raw *r;

	if (l->_nseg <= 1)
		return 0;
	r = raw_for_copy(first_seg(l)->raw, l->_len, BL_CACHELINE);
	if (!r)
		return -ENOMEM;
	bl_list_copy_out(l, 0, l->_len, r->data);
	drop_segments(l);
	push_seg(l, r, 0, r->len, NULL);	/* inline slot: cannot fail */
	return 0;
}

/* ---- reshaping: share what can stay, copy runs of what cannot ---------- */

ssize_t bl__list_reshape(struct bl_list *l, const struct bl__reshape *rs)
{
	struct bl__chunk_hdr *c;
	struct bl_list out;
	unsigned idx = 0, n = l->_nseg;
	size_t copied = 0;
	uint32_t i;

	if (!n)
		return 0;
	bl_list_init(&out);
	out._pool = l->_pool;
	c = inl(l);
	while (!c->count)
		c = c->next;
	i = c->start;
	while (idx < n) {
		const struct bl_ptr *s = &slots(c)[i];
		struct bl__chunk_hdr *rc;
		struct bl_raw *r;
		size_t total = 0;
		unsigned cnt = 0;
		uint32_t ri;

		if (rs->keep(s, idx == n - 1, rs->ctx)) {
			if (push_seg(&out, s->raw, s->off, s->len, NULL))
				goto fail;
			bl__raw_get(s->raw);
			idx++;
			pos_next(&c, &i);
			continue;
		}
		/* a run: one new raw for all of it */
		rc = c;
		ri = i;
		do {
			total += slots(c)[i].len;
			cnt++;
			idx++;
			pos_next(&c, &i);
		} while (idx < n && rs->more(total, &slots(c)[i], idx == n - 1,
					     rs->ctx));
		r = raw_for_copy(slots(rc)[ri].raw, total, rs->align);
		if (!r)
			goto fail;
		copy_run(r->data, rc, ri, cnt);
		bl__count_copy(total);
		copied += total;
		if (push_seg(&out, r, 0, total, NULL)) {
			bl__raw_put(r);
			goto fail;
		}
	}
	drop_segments(l);
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

static bool dio_good(const struct bl_ptr *s, bool last, void *arg)
{
	const struct dio_ctx *d = arg;

	return !(((uintptr_t)s->raw->data + s->off) & (d->mem_align - 1)) &&
	       (last || !(s->len & (d->size_align - 1)));
}

/* A misaligned run goes on until it ends on a boundary before a good one. */
static bool dio_more(size_t total, const struct bl_ptr *next, bool last,
		     void *arg)
{
	const struct dio_ctx *d = arg;

	return (total & (d->size_align - 1)) || !dio_good(next, last, arg);
}

static bool group_start(const struct bl_ptr *s, bool last, void *arg)
{
	struct dio_ctx *d = arg;

	d->in_run = 1;
	return false;
}

static bool group_more(size_t total, const struct bl_ptr *next, bool last,
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
	struct bl__reshape rs = { dio_good, dio_more, mem_align, &d };
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
	if (share_range(&tmp, l, 0, l->_len))
		return -ENOMEM;
	copied = bl__list_reshape(&tmp, &rs);
	if (copied >= 0 && tmp._nseg > max_segments) {
		rs.keep = group_start;
		rs.more = group_more;
		d.group = (tmp._nseg + max_segments - 1) / max_segments;
		copied = bl__list_reshape(&tmp, &rs);
	}
	if (copied >= 0) {
		drop_segments(l);
		bl_list_claim_append(l, &tmp);	/* l is empty: cannot fail */
	}
	bl_list_clear(&tmp);
	return copied < 0 ? (int)copied : 1;
}

int bl_list_rebuild_aligned(struct bl_list *l, size_t align)
{
	return bl_list_rebuild_aligned_size_and_memory(l, align, align, 0);
}

char *bl_list_c_str(struct bl_list *l)
{
	struct bl_ptr *s;

	if (!l->_len)
		return NULL;
	if (l->_nseg > 1 && bl_list_rebuild(l))
		return NULL;
	s = last_seg(l);
	return s->raw->data + s->off;
}

/* ---- comparing --------------------------------------------------------- */

int bl_list_compare(const struct bl_list *a, const struct bl_list *b)
{
	struct bl__chunk_hdr *ca = inl(a), *cb = inl(b);
	uint32_t ia = ca->start, ib = cb->start;
	size_t oa = 0, ob = 0;

	/* skip empty chunks (only the inline one can be) */
	if (!ca->count)
		ca = ca->next, ia = ca ? ca->start : 0;
	if (!cb->count)
		cb = cb->next, ib = cb ? cb->start : 0;
	while (ca && cb) {
		const struct bl_ptr *sa = &slots(ca)[ia], *sb = &slots(cb)[ib];
		size_t n = sa->len - oa < sb->len - ob ? sa->len - oa
						       : sb->len - ob;
		int r = memcmp(sa->raw->data + sa->off + oa,
			       sb->raw->data + sb->off + ob, n);

		if (r)
			return r < 0 ? -1 : 1;
		oa += n;
		ob += n;
		if (oa == sa->len) {
			oa = 0;
			pos_next(&ca, &ia);
		}
		if (ob == sb->len) {
			ob = 0;
			pos_next(&cb, &ib);
		}
	}
	if (ca)
		return 1;
	if (cb)
		return -1;
	return 0;
}

bool bl_list_contents_equal(const struct bl_list *a, const struct bl_list *b)
{
	return a->_len == b->_len && !bl_list_compare(a, b);
}

/* ---- export -------------------------------------------------------------- */

int bl_list_to_iovec(const struct bl_list *l, size_t off, struct iovec *iov,
		     int iovcnt)
{
	struct bl__chunk_hdr *c;
	struct pos p;
	uint32_t i;
	int n = 0;

	if (iovcnt < 0)
		return -EINVAL;
	if (off > l->_len)
		return -ERANGE;
	if (off == l->_len || !iovcnt)
		return 0;
	locate(l, off, &p);
	for (c = p.c, i = p.i; c && n < iovcnt; pos_next(&c, &i)) {
		const struct bl_ptr *s = &slots(c)[i];
		size_t so = n ? 0 : p.inner;

		iov[n].iov_base = s->raw->data + s->off + so;
		iov[n].iov_len = s->len - so;
		n++;
	}
	return n;
}

int bl_list_get_ptr(const struct bl_list *l, unsigned idx, struct bl_ptr *p)
{
	const struct bl__chunk_hdr *c;

	if (idx >= l->_nseg)
		return -ERANGE;
	for (c = inl(l); c; c = c->next) {
		if (idx < c->count) {
			bl_ptr_copy(p, &slots(c)[c->start + idx]);
			return 0;
		}
		idx -= c->count;
	}
	return -ERANGE;
}

/* ---- crc32c ---------------------------------------------------------------- */

uint32_t bl_list_crc32c(const struct bl_list *l, uint32_t seed)
{
	const struct bl__chunk_hdr *c;
	const struct bl_ptr *s;
	uint32_t i, crc = seed;

	for_each_seg(l, c, s, i)
		crc = bl__raw_crc32c(s->raw, s->off, s->len, crc);
	return crc;
}

void bl_list_invalidate_crc(struct bl_list *l)
{
	const struct bl__chunk_hdr *c;
	const struct bl_ptr *s;
	uint32_t i;

	for_each_seg(l, c, s, i)
		bl_raw_invalidate_crc(s->raw);
}

/* ---- hexdump ------------------------------------------------------------- */

static int hex_line(FILE *out, size_t off, const unsigned char *b, size_t n)
{
	char line[80], *p = line;

	p += sprintf(p, "%08zx  ", off);
	for (size_t k = 0; k < 16; k++) {
		if (k < n)
			p += sprintf(p, "%02x ", b[k]);
		else
			p += sprintf(p, "   ");
		if (k == 7)
			*p++ = ' ';
	}
	*p++ = ' ';
	*p++ = '|';
	for (size_t k = 0; k < n; k++)
		*p++ = b[k] >= 0x20 && b[k] < 0x7f ? (char)b[k] : '.';
	*p++ = '|';
	*p++ = '\n';
	*p = 0;
	return fputs(line, out) < 0 ? -EIO : 0;
}

int bl_list_hexdump(const struct bl_list *l, FILE *out)
{
	unsigned char cur[16], prev[16];
	bool have_prev = false, starred = false;
	size_t off;

	for (off = 0; off < l->_len; off += 16) {
		size_t n = l->_len - off < 16 ? l->_len - off : 16;

		/* 16-byte lines: a copy is simpler than walking seams */
		{
			struct bl__chunk_hdr *c;
			struct pos p;
			uint32_t i;
			size_t got = 0;

			locate(l, off, &p);
			for (c = p.c, i = p.i; got < n; pos_next(&c, &i)) {
				const struct bl_ptr *s = &slots(c)[i];
				size_t so = got ? 0 : p.inner;
				size_t k = s->len - so < n - got ? s->len - so
								 : n - got;

				memcpy(cur + got, s->raw->data + s->off + so, k);
				got += k;
			}
		}
		if (have_prev && n == 16 && !memcmp(cur, prev, 16)) {
			if (!starred && fputs("*\n", out) < 0)
				return -EIO;
			starred = true;
			continue;
		}
		starred = false;
		if (hex_line(out, off, cur, n))
			return -EIO;
		memcpy(prev, cur, 16);
		have_prev = n == 16;
	}
	if (l->_len && fprintf(out, "%08zx\n", l->_len) < 0)
		return -EIO;
	return 0;
}

/* ---- memory -------------------------------------------------------------- */

/* What @l uses of each raw it holds: one entry per distinct raw. */
struct raw_use {
	struct bl_raw *raw;
	size_t used;
};

static int cmp_raw_use(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct raw_use *)a)->raw;
	uintptr_t y = (uintptr_t)((const struct raw_use *)b)->raw;

	return x < y ? -1 : x > y;
}

/*
 * A sorted array of the distinct raws of @l (and its append buffer, with
 * what the segments use of them); *@n gets its length.  Caller frees.
 * Return: NULL when @l holds nothing or memory runs out (*@n = 0 / SIZE_MAX).
 */
static struct raw_use *raw_usage(const struct bl_list *l, size_t *n,
				 size_t *cap)
{
	const struct bl__chunk_hdr *c;
	const struct bl_ptr *s;
	struct raw_use *v;
	size_t k = 0, m = l->_nseg + (l->_abuf ? 1 : 0), out = 0;
	uint32_t i;

	*n = 0;
	*cap = m;
	if (!m)
		return NULL;
	v = bl__alloc(bl__allocator_current(), m * sizeof(*v), sizeof(void *));
	if (!v) {
		*n = SIZE_MAX;
		return NULL;
	}
	for_each_seg(l, c, s, i) {
		v[k].raw = s->raw;
		v[k++].used = s->len;
	}
	if (l->_abuf) {
		v[k].raw = l->_abuf;
		v[k++].used = 0;
	}
	qsort(v, m, sizeof(*v), cmp_raw_use);
	for (k = 0; k < m; k++) {
		if (out && v[out - 1].raw == v[k].raw)
			v[out - 1].used += v[k].used;
		else
			v[out++] = v[k];
	}
	*n = out;
	return v;
}

static void usage_free(struct raw_use *v, size_t cap)
{
	if (v)
		bl__free(bl__allocator_current(), v, cap * sizeof(*v),
			 sizeof(void *));
}

/* Bytes of @r that @l pins without using (overlapping slices count once). */
static size_t waste_of(const struct raw_use *v, size_t n, struct bl_raw *r)
{
	struct raw_use key = { r, 0 };
	const struct raw_use *f = bsearch(&key, v, n, sizeof(*v), cmp_raw_use);
	size_t used = f ? f->used : 0;

	return r->len > used ? r->len - used : 0;
}

size_t bl_list_pinned_unused(const struct bl_list *l)
{
	struct raw_use *v;
	size_t n, cap, total = 0;

	v = raw_usage(l, &n, &cap);
	if (!v)
		return 0;
	for (size_t k = 0; k < n; k++)
		total += waste_of(v, n, v[k].raw);
	usage_free(v, cap);
	return total;
}

struct compact_ctx {
	struct raw_use *v;
	size_t n, max_waste;
};

static bool compact_keep(const struct bl_ptr *s, bool last, void *arg)
{
	const struct compact_ctx *cc = arg;

	return waste_of(cc->v, cc->n, s->raw) <= cc->max_waste;
}

static bool compact_more(size_t total, const struct bl_ptr *next, bool last,
			 void *arg)
{
	return !compact_keep(next, last, arg);
}

ssize_t bl_list_compact(struct bl_list *l, size_t max_waste)
{
	struct compact_ctx cc = { NULL, 0, max_waste };
	struct bl__reshape rs = { compact_keep, compact_more, BL_CACHELINE, &cc };
	size_t cap;
	ssize_t copied;

	cc.v = raw_usage(l, &cc.n, &cap);
	if (!cc.v)
		return cc.n ? -ENOMEM : 0;
	copied = bl__list_reshape(l, &rs);
	usage_free(cc.v, cap);
	/* the append buffer goes too: what we keep should pin nothing more */
	if (copied >= 0 && l->_abuf &&
	    l->_abuf->len - l->_abuf->used > max_waste) {
		bl__raw_put(l->_abuf);
		l->_abuf = NULL;
		l->_abuf_next = 0;
	}
	return copied;
}

/* ---- validation -------------------------------------------------------- */

int bl__list_validate(const struct bl_list *l)
{
	const struct bl__chunk_hdr *c, *last = NULL;
	size_t len = 0;
	unsigned nseg = 0;

	if (l->_inl.cap != BL_LIST_INLINE)
		return -1;
	for (c = inl(l); c; c = c->next) {
		if (c->start + c->count > c->cap)
			return -2;
		if (c != inl(l) && !c->count)
			return -3;	/* empty heap chunk */
		for (uint32_t i = c->start; i < c->start + c->count; i++) {
			const struct bl_ptr *s = &slots(c)[i];

			if (!s->raw || !s->len)
				return -4;
			if (s->off + s->len > s->raw->used ||
			    s->raw->used > s->raw->len)
				return -5;
			if (!bl_raw_nref(s->raw))
				return -6;
			len += s->len;
			nseg++;
		}
		last = c;
	}
	if (last != l->_tail)
		return -7;
	if (len != l->_len)
		return -8;
	if (nseg != l->_nseg)
		return -9;
	if (l->_abuf && l->_abuf->used > l->_abuf->len)
		return -10;
	if (l->_ext && (l->_ext != last_seg(l) || l->_ext->raw != l->_abuf ||
			l->_ext->off + l->_ext->len != l->_abuf->used))
		return -11;	/* stale append hint */
	return 0;
}
