/* SPDX-License-Identifier: MIT */
/*
 * list_priv.h - what the files of the list layer share: the chunks and
 * their slots, pushing a segment, marks that undo appends, and positions.
 * Included only by the list layer's files (list.c, list_append.c,
 * list_reshape.c, list_read.c, list_copy.c, list_index.c); never
 * installed (the other layers see list_int.h).  The short names (struct
 * mark, struct pos, inl(), slots(), push_seg() ...) have no linkage and
 * are the layer's own vocabulary.  What a hot path of one file
 * calls in another is static inline here, so that the split into files
 * added no call.
 *
 * Representation: a singly linked chain of chunks, each an array of
 * slices stored by value.  The first chunk is always the inline one inside
 * struct bl_list (possibly empty); heap chunks follow and are never empty.
 */
#ifndef BUFFERLIST_LIST_PRIV_H
#define BUFFERLIST_LIST_PRIV_H

#include "list_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>

#define CHUNK_MIN 8
#define CHUNK_MAX 64
#define ABUF_MIN 128u		/* first append buffer's capacity */
#define LARGE_APPEND 4096	/* appends this big get a raw of their own */

/* ---- chunks ----------------------------------------------------------- */

static inline struct bl__chunk_hdr *inl(const struct bl_list *l)
{
	return (struct bl__chunk_hdr *)&l->_inl;
}

static inline struct bl_seg *slots(const struct bl__chunk_hdr *c)
{
	return bl__chunk(c)->seg;
}

/* A heap chunk of @cap slots, empty; NULL when memory runs out. */
struct bl__chunk_hdr *bl__chunk_new(uint32_t cap);
void bl__chunk_free(struct bl__chunk_hdr *c);

static inline uint32_t next_chunk_cap(const struct bl__chunk_hdr *tail)
{
	uint32_t cap = tail->cap * 2;

	if (cap < CHUNK_MIN)
		cap = CHUNK_MIN;
	return cap > CHUNK_MAX ? CHUNK_MAX : cap;
}

static inline struct bl_seg *last_seg(const struct bl_list *l)
{
	const struct bl__chunk_hdr *t = l->_tail;

	return t->count ? &slots(t)[t->start + t->count - 1] : NULL;
}

/* Moves a chunk's slots to its front so free room is at the end. */
static inline void chunk_compact(struct bl__chunk_hdr *c)
{
	if (c->start) {
		memmove(slots(c), slots(c) + c->start,
			c->count * sizeof(struct bl_seg));
		c->start = 0;
	}
}

/*
 * Pushes a slice whose reference the list now owns.  @spare, when not
 * NULL, is a chunk allocated in advance and consumed if needed (so that a
 * caller can do all its allocation before it changes anything; such a
 * caller also checks nseg_room() first).
 * Return: 0, or -ENOMEM with nothing changed (no memory, or the segment
 * count would wrap).
 */
static inline int push_seg(struct bl_list *l, struct bl_raw *raw, char *data,
			   size_t len, struct bl__chunk_hdr **spare)
{
	struct bl__chunk_hdr *t = l->_tail;
	struct bl_seg *s;

	if (bl__unlikely(l->_nseg == UINT_MAX))
		return -ENOMEM;
	if (bl__unlikely(t->start + t->count == t->cap)) {
		if (t->count < t->cap) {
			chunk_compact(t);	/* push clears _ext below */
		} else {
			struct bl__chunk_hdr *c;

			if (spare && *spare) {
				c = *spare;
				*spare = NULL;
			} else {
				c = bl__chunk_new(next_chunk_cap(t));
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
	BL__LIST_TOUCH(l);
	s = &slots(t)[t->start + t->count++];
	l->_ext = NULL;
	s->raw = raw;
	s->data = data;
	s->len = len;
	l->_nseg++;
	l->_len += len;
	return 0;
}

/* @n more segments fit @l's count without wrapping it. */
static inline bool nseg_room(const struct bl_list *l, size_t n)
{
	return n <= (size_t)(UINT_MAX - l->_nseg);
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

static inline void mark_take(const struct bl_list *l, struct mark *m)
{
	struct bl_seg *ls = last_seg(l);

	m->tail = l->_tail;
	m->start = m->tail->start;
	m->count = m->tail->count;
	m->last_len = ls ? ls->len : 0;
	m->len = l->_len;
	m->nseg = l->_nseg;
}

/* Drops what was appended after @m; @release: the list owned references. */
void bl__list_mark_rollback(struct bl_list *l, const struct mark *m,
			    bool release);

/* Drops the segments, keeps the append buffer. */
void bl__list_drop_segments(struct bl_list *l);

/* ---- positions -------------------------------------------------------- */

struct pos {
	struct bl__chunk_hdr *c;	/* NULL at the end of the list */
	struct bl__chunk_hdr *prev;	/* chunk before c (NULL for inline) */
	uint32_t i;			/* slot index in c */
	size_t inner;			/* offset inside that segment */
};

/*
 * Looks for byte @*off of chunk @c (whose predecessor is @prev): true with
 * *@p set when the chunk holds it, else false with *@off less the chunk's
 * bytes.
 */
static inline bool scan_chunk(struct bl__chunk_hdr *c,
			      struct bl__chunk_hdr *prev, size_t *off,
			      struct pos *p)
{
	struct bl_seg *s = slots(c);

	for (uint32_t i = c->start; i < c->start + c->count; i++) {
		if (*off < s[i].len) {
			p->c = c;
			p->prev = prev;
			p->i = i;
			p->inner = *off;
			return true;
		}
		*off -= s[i].len;
	}
	return false;
}

/*
 * locate() in the first two chunks only, for fast paths that must not
 * call: true with *@p set when they hold byte @off, else false (then the
 * caller takes a path that calls locate()).
 */
static inline bool locate_near(const struct bl_list *l, size_t off,
			       struct pos *p)
{
	struct bl__chunk_hdr *c = inl(l);

	/* a long list's inline chunk is often empty: one test skips it */
	return (c->count && scan_chunk(c, NULL, &off, p)) ||
	       (c->next && scan_chunk(c->next, c, &off, p));
}

static inline void pos_end(struct pos *p)
{
	p->c = NULL;
	p->prev = NULL;
	p->i = 0;
	p->inner = 0;
}

/* BL__LINDEX_MIN (list_int.h), under the name the list files use */
#define LINDEX_MIN BL__LINDEX_MIN

/*
 * locate() past the second chunk of a list of more than LINDEX_MIN
 * segments: @c is the third chunk, @prev the second, @off counts from
 * @c's first byte (at most the bytes from there on).  Builds or extends
 * @l's offset index (a cache: @l's contents do not change); without
 * memory for it (or without @alloc, when it is missing or full), walks.
 * Returns the position in memory of the library's (the index's, or the
 * thread's), to be copied at once: one word, so the caller's own position
 * stays in registers.  Declared cold for its callers, so that the short
 * lists' walk in locate() is laid out as if it were not there; it is
 * compiled for speed all the same (list_index.c defines it under another
 * name, of which this is an alias).
 */
__attribute__((cold)) const struct pos *
bl__lindex_find(const struct bl_list *l, struct bl__chunk_hdr *c,
		struct bl__chunk_hdr *prev, size_t off, bool alloc);

/*
 * Segment @idx of a list of more than LINDEX_MIN segments, counted from
 * the first segment of its third chunk @c, in a chunk before the tail
 * (bl_list_get_ptr() finds the others itself): a binary search of the
 * offset index by the entries' ordinals, which it builds or extends as
 * bl__lindex_find() does; without memory for it, a walk (never a
 * failure).  Returns the slot, to be copied at once.  Cold and aliased
 * like bl__lindex_find().
 */
__attribute__((cold)) const struct bl_seg *
bl__lindex_seg(const struct bl_list *l, struct bl__chunk_hdr *c,
	       unsigned idx);

/*
 * Before a change to @l's chain from chunk @c on, where @c holds byte @off
 * of the list (a splice): keeps the index's entries for the chunks before
 * @c, which the change leaves as they were, and drops the rest (all of it
 * when @c is one of the first two chunks, on which the entries' offsets
 * rest).  After the change, bl__lindex_settle() drops the entries of the
 * chunk that became the tail, if it is one the index covers (the tail is
 * never indexed: appends change it), or the whole index of a list that is
 * now too short to keep one.
 */
void bl__lindex_cut(struct bl_list *l, const struct bl__chunk_hdr *c,
		    size_t off);
void bl__lindex_settle(struct bl_list *l);

/*
 * Checks @l's offset index against its chain (0, or a negative number
 * naming the first mismatch); bl__list_validate() runs it.
 */
int bl__lindex_validate(const struct bl_list *l);

static inline __attribute__((always_inline)) void
locate_in(const struct bl_list *l, size_t off, struct pos *p, bool alloc)
{
	struct bl__chunk_hdr *c, *prev = NULL;

	for (c = inl(l); c; prev = c, c = c->next) {
		if (scan_chunk(c, prev, &off, p))
			return;
		/* past the second chunk of a long list: the index */
		if (bl__unlikely(c != inl(l) && l->_nseg > LINDEX_MIN) &&
		    c->next) {
			*p = *bl__lindex_find(l, c->next, c, off, alloc);
			return;
		}
	}
	pos_end(p);
}

/*
 * The segment holding byte @off (< length), or the end when off == length.
 * The first two chunks are walked (a short list has no more); past them a
 * long list goes to its index, so that any offset costs about the same.
 * After the first chunk (often empty: a list that outgrew it lives in heap
 * chunks) the walk pays one test per chunk for that.
 */
static inline void locate(const struct bl_list *l, size_t off, struct pos *p)
{
	locate_in(l, off, p, true);
}

/* locate() for the callers that promise not to allocate: the index is
 * used and extended as far as it has room, never made or grown. */
static inline void locate_noalloc(const struct bl_list *l, size_t off,
				  struct pos *p)
{
	locate_in(l, off, p, false);
}

static inline bool range_ok(const struct bl_list *l, size_t off, size_t len)
{
	return off <= l->_len && len <= l->_len - off;
}

/* Segment @idx counted from the first of chunk @c (which the chain
 * holds), found by a walk a chunk at a step. */
static inline const struct bl_seg *seg_walk(const struct bl__chunk_hdr *c,
					    uint32_t idx)
{
	for (; idx >= c->count; c = c->next)
		idx -= c->count;
	return &slots(c)[c->start + idx];
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

/* ---- sharing slices --------------------------------------------------- */

/*
 * A slice from the caller, p->len > 0: -EINVAL without a raw, -ERANGE when
 * it reaches past its raw's frontier (a hand-built slice that would let
 * the list read and write past the block), else 0.
 */
static inline int ptr_check(const struct bl_ptr *p)
{
	if (bl__unlikely(!p->raw))
		return -EINVAL;
	if (bl__unlikely(!bl__raw_covers(p->raw, p->off, p->len)))
		return -ERANGE;
	return 0;
}

/* The first byte of slice @p (which has a raw): a segment's data. */
static inline char *ptr_at(const struct bl_ptr *p)
{
	return bl__raw_data(p->raw) + p->off;
}

/* Extends the last segment over the slice {@raw, @data, @len} when that
 * continues it in the same raw. */
static inline bool try_extend(struct bl_list *l, const struct bl_raw *raw,
			      const char *data, size_t len)
{
	struct bl_seg *ls = last_seg(l);

	l->_ext = NULL;
	if (ls && ls->raw == raw && ls->data + ls->len == data) {
		BL__LIST_TOUCH(l);
		ls->len += len;
		l->_len += len;
		return true;
	}
	return false;
}

/* Shares [off, off + len) of @src onto the end of @dst (dst != src).
 * Return: 0, or -ENOMEM with @dst unchanged. */
int bl__list_share_range(struct bl_list *dst, const struct bl_list *src,
			 size_t off, size_t len);

/* ---- memory held ------------------------------------------------------ */

/* What @l uses of each raw it holds: one entry per distinct raw. */
struct raw_use {
	struct bl_raw *raw;
	size_t used;
};

/*
 * A sorted array of the distinct raws of @l (and its append buffer, with
 * what the segments use of them); *@n gets its length.  Free it with
 * bl__list_usage_free().
 * Return: NULL when @l holds nothing or memory runs out (*@n = 0 / SIZE_MAX).
 */
struct raw_use *bl__list_usage(const struct bl_list *l, size_t *n,
			       size_t *cap);
void bl__list_usage_free(struct raw_use *v, size_t cap);
/* Bytes of @r that @l pins without using (overlapping slices count once). */
size_t bl__list_waste_of(const struct raw_use *v, size_t n, struct bl_raw *r);

#endif /* BUFFERLIST_LIST_PRIV_H */
