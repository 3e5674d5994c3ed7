/* SPDX-License-Identifier: MIT */
/*
 * list_int.h - the list layer's private API: what the other layers may do
 * with a list beyond the public list.h, and, with list.h's inline init and
 * counts, the only place outside list*.c that touches the fields of
 * struct bl_list and of its chunks (the guard test/check_layers.sh holds
 * everyone to that).  The readers are inline so that a layer above pays
 * no call for them: room, the pool, the front segment, a segment cursor;
 * the messenger's fast paths move a lone slice in and out of a list
 * without the general machinery.  Includes only raw_int.h.  Never
 * installed.
 */
#ifndef BUFFERLIST_LIST_INT_H
#define BUFFERLIST_LIST_INT_H

#include "raw_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <sys/types.h>
#include <bufferlist/list.h>

/* A chunk: its header, then its slots (the inline chunk's are _inl_seg). */
struct bl__chunk {
	struct bl__chunk_hdr h;
	struct bl_seg seg[];
};

static inline struct bl__chunk *bl__chunk(const struct bl__chunk_hdr *h)
{
	return (struct bl__chunk *)h;
}

/*
 * The list's generation, in the inline chunk's spare word: --enable-debug
 * builds move it on every change to the list's segments, and a cursor
 * made before the change finds it moved (iter_int.h).  Other builds never
 * touch it.
 */
static inline uint32_t bl__list_gen(const struct bl_list *l)
{
	return l->_inl._gen;
}

#ifdef BL_DEBUG
#define BL__LIST_TOUCH(l) ((void)((l)->_inl._gen++))
#else
#define BL__LIST_TOUCH(l) ((void)0)
#endif

/* ---- reading a list's state ------------------------------------------- */

/*
 * A list of more segments than this looks offsets past its second chunk
 * up in its offset index (list_index.c); a shorter one walks, which costs
 * as little at that length.
 */
#define BL__LINDEX_MIN 256

/* Where @l's appends allocate (NULL: the default pool). */
static inline struct bl_pool *bl__list_pool(const struct bl_list *l)
{
	return l->_pool;
}

/* Bytes that fit @l's append buffer without a new raw (0: none). */
static inline size_t bl__list_abuf_room(const struct bl_list *l)
{
	const struct bl_raw *ab = l->_abuf;

	return ab ? bl__raw_room(ab) : 0;
}

/* Segments that can be pushed onto @l without allocating a chunk. */
static inline unsigned bl__list_tail_room(const struct bl_list *l)
{
	return l->_tail->cap - l->_tail->count;
}

/* The first segment of a non-empty list (only the inline chunk can be
 * empty, and then a heap chunk follows). */
static inline const struct bl_seg *bl__list_front(const struct bl_list *l)
{
	const struct bl__chunk_hdr *c = l->_inl.count ? &l->_inl : l->_inl.next;

	return &bl__chunk(c)->seg[c->start];
}

/* ---- segments --------------------------------------------------------- */

/* Where segment @s starts in its raw: what a struct bl_ptr of it holds. */
static inline size_t bl__seg_off(const struct bl_seg *s)
{
	return (size_t)(s->data - bl__raw_data(s->raw));
}

/* Segment @s as a slice (no reference taken: the caller's to take). */
static inline struct bl_ptr bl__seg_ptr(const struct bl_seg *s)
{
	return (struct bl_ptr){ s->raw, bl__seg_off(s), s->len };
}

/* ---- the segment cursor: the one way to walk a list's segments -------- */

/* (chunk, slot); the chunk is NULL past the last segment. */
struct bl__seg_cursor {
	const struct bl__chunk_hdr *c;
	uint32_t i;
};

/* The segment under @cur, which is on one. */
static inline const struct bl_seg *bl__seg_at(const struct bl__seg_cursor *cur)
{
	return &bl__chunk(cur->c)->seg[cur->i];
}

/* Puts @cur on @l's first segment and returns it (NULL: @l is empty). */
static inline const struct bl_seg *bl__seg_first(const struct bl_list *l,
						 struct bl__seg_cursor *cur)
{
	const struct bl__chunk_hdr *c = l->_inl.count ? &l->_inl : l->_inl.next;

	cur->c = c;
	cur->i = c ? c->start : 0;
	return c ? bl__seg_at(cur) : NULL;
}

/* Moves @cur (on a segment) to the next and returns it (NULL: past the
 * last).  Heap chunks are never empty, so one step of chunk suffices. */
static inline const struct bl_seg *bl__seg_next(struct bl__seg_cursor *cur)
{
	const struct bl__chunk_hdr *c = cur->c;

	if (++cur->i == c->start + c->count) {
		cur->c = c = c->next;
		cur->i = c ? c->start : 0;
	}
	return c ? bl__seg_at(cur) : NULL;
}

/*
 * Puts @cur on the segment holding byte @off of @l (off < length; past the
 * last at the length) and *@inner on that byte within it: a long list's
 * offset index makes this about as cheap deep in the list as at its front.
 */
void bl__list_seek(const struct bl_list *l, size_t off,
		   struct bl__seg_cursor *cur, size_t *inner);

/* Every segment @s of @l, in order, with @cur (a struct bl__seg_cursor). */
#define BL__LIST_FOREACH_SEG(l, cur, s)					\
	for ((s) = bl__seg_first((l), &(cur)); (s); (s) = bl__seg_next(&(cur)))

/* ---- the offset index ------------------------------------------------- */

/*
 * A long list keeps an index of its chunks by offset (list_index.c), built
 * by the lookups that need it.  Appends leave it valid; any other change
 * to the chain or to a segment's length drops it, and so must every new
 * operation that makes such a change (a stale index points at freed
 * chunks).
 */
void bl__lindex_free(struct bl_list *l);

/* Drops @l's offset index, if any: the cheap check inline. */
static inline void bl__lindex_drop(struct bl_list *l)
{
	if (bl__unlikely(l->_lidx != NULL))
		bl__lindex_free(l);
}

/* ---- whole-list state ------------------------------------------------- */

/* bl__list_reset() but the offset index: only its two variants call it. */
static inline void bl__list_reset_chain(struct bl_list *l)
{
	BL__LIST_TOUCH(l);
	l->_ext = NULL;
	l->_tail = &l->_inl;
	l->_inl.next = NULL;
	l->_inl.start = 0;
	l->_inl.count = 0;
	l->_len = 0;
	l->_nseg = 0;
}

/*
 * The reset of a list known to have no offset index: one with no segment
 * or no heap chunk (an index comes with hundreds of segments, and only a
 * drop takes segments away from an indexed list).  Without the drop's
 * call, its callers' fast paths need no stack frame.
 */
static inline void bl__list_reset_unindexed(struct bl_list *l)
{
	BL_DEBUG_CHECK(l->_lidx == NULL, "list %p: an offset index on a list "
		       "of %u segments and no heap chunk", (void *)l,
		       l->_nseg);
	bl__list_reset_chain(l);
}

/*
 * Empties @l's chain without touching a reference: the references of its
 * segments were moved elsewhere or dropped, its heap chunks freed or
 * handed over.
 * The append buffer and the pool stay; the offset index goes.  The one
 * reset: clearing, the claims, the reshapes and bl__list_take_one() all
 * end here (or in bl__list_reset_unindexed() when @l cannot have one).
 */
static inline void bl__list_reset(struct bl_list *l)
{
	bl__list_reset_chain(l);
	/* last: a caller that returns next needs no stack frame for the call */
	bl__lindex_drop(l);
}

/*
 * The segment of a list that is exactly one slice, held in its inline
 * slots, and owns nothing else (no heap chunk, no append buffer, hence
 * no offset index); NULL for any other list.  Taking that slice out
 * leaves a list that needs no bl_list_clear().
 */
static inline const struct bl_seg *bl__list_lone(const struct bl_list *l)
{
	if (l->_inl.count != 1 || l->_inl.next || l->_abuf)
		return NULL;
	return &l->_inl_seg[l->_inl.start];
}

/*
 * Moves the lone slice of @l (see bl__list_lone()) into @out, its
 * reference with it, and leaves @l empty.  Return: true, or false (then
 * nothing changed) when @l is not one lone slice.
 */
static inline bool bl__list_take_one(struct bl_list *l, struct bl_seg *out)
{
	const struct bl_seg *s = bl__list_lone(l);

	if (!s)
		return false;
	*out = *s;
	bl__list_reset_unindexed(l);
	return true;
}

/* Makes @l, just reset, the one slice of @len bytes at @data in @raw, in
 * its first slot. */
static inline void bl__list_fill_one(struct bl_list *l, struct bl_raw *raw,
				     char *data, size_t len)
{
	l->_inl_seg[0] = (struct bl_seg){ raw, data, len };
	l->_inl.count = 1;
	l->_len = len;
	l->_nseg = 1;
}

/*
 * Makes @l (uninitialised, or owning nothing) the one slice of @len > 0
 * bytes at @data in @raw; the reference to @raw moves in.  Like
 * bl_list_init() then bl_list_append_ptr_move(), without the calls.
 */
static inline void bl__list_set_one(struct bl_list *l, struct bl_raw *raw,
				    char *data, size_t len)
{
	bl_list_init(l);
	bl__list_fill_one(l, raw, data, len);
}

/*
 * Makes @l, which has no segment, the one slice of @len > 0 bytes at
 * @data in @raw, in its first inline slot; the reference to @raw moves
 * in.  Unlike bl__list_set_one() the append buffer and the pool stay.
 */
static inline void bl__list_put_lone(struct bl_list *l, struct bl_raw *raw,
				     char *data, size_t len)
{
	bl__list_reset_unindexed(l);	/* its callers' lists are empty */
	bl__list_fill_one(l, raw, data, len);
}

/*
 * Drops the first @n bytes of @l, all inside its front segment @s (from
 * bl__list_front(l)), n < s->len: no reference changes hands.  The offset
 * index stays: it counts from the third chunk on, and the front segment is
 * in the first or the second.
 */
static inline void bl__list_trim_front(struct bl_list *l,
				       const struct bl_seg *s, size_t n)
{
	struct bl_seg *f = (struct bl_seg *)s;	/* @l's own slot */

	BL_ASSERT(n < s->len);
	BL__LIST_TOUCH(l);
	f->data += n;
	f->len -= n;
	l->_len -= n;
}

/* ---- operations of the list that only the library calls --------------- */

/*
 * Checks every invariant of @l (lengths add up, counts match, no empty
 * segment, every slice within its raw's frontier, the offset index matches
 * the chunks).  Returns 0 or a negative
 * number naming the first broken one; tests call it after every mutation.
 */
int bl__list_validate(const struct bl_list *l);

/*
 * Extends @l by @len bytes of its append buffer when it has room for them
 * (no allocation but, rarely, a chunk for a new segment) and returns where
 * they are: the caller writes them before anything reads @l, and they
 * count as one copy.  NULL when there is no room, @len is 0 or the chunk
 * cannot be had: @l is then unchanged, and bl_list_append() is the way.
 * Lets a caller build bytes in place instead of on the stack first.
 */
void *bl__list_append_room(struct bl_list *l, size_t len);

/*
 * bl_list_append_hole() whose bytes start as the @len bytes at @init
 * (NULL: zeros): the versioned encoder's header in one step.
 */
int bl__list_append_hole_init(struct bl_list *l, const void *init,
			      size_t len, struct bl_hole *h);

/*
 * Shares segment @s of another list (s->len > 0) onto the end of @l:
 * bl_list_append_ptr() for a segment already known good, without turning
 * it into an offset and back (two loads of its raw's header).  Return: 0,
 * or -ENOMEM with @l unchanged.
 */
int bl__list_append_seg(struct bl_list *l, const struct bl_seg *s);

/*
 * Appends @a (NULL: zeros) then @b as one operation: both or neither, and
 * on failure the list (append buffer included) is as it was.  Copies.
 */
int bl__list_append2(struct bl_list *l, const void *a, size_t alen,
		     const void *b, size_t blen);

/*
 * bl__list_append_frame() - appends @pre, then @mid (its slices shared, or
 * with @copy_mid its bytes copied), then @post, as one operation: every
 * allocation is made before anything changes, so on failure (-ENOMEM) @l,
 * its append buffer included, is exactly as it was.  @pre and @post are
 * copied into the append buffer (one new raw of their own when the whole
 * copied part is 4 KiB or more and does not fit).  -EINVAL when @mid is
 * @l.  The messenger's frame encoder.
 */
int bl__list_append_frame(struct bl_list *l, const void *pre, size_t prelen,
			  const struct bl_list *mid, bool copy_mid,
			  const void *post, size_t postlen);

/*
 * bl__list_reshape() - rebuilds @l's chain: a segment that @keep accepts is
 * shared as it is; otherwise a run starts there, grows while @more accepts
 * the next segment, and is copied into one new raw aligned to @align, in
 * the pool of the run's first raw (@in_list_pool: in @l's pool).  When
 * @keep accepts every segment nothing is done at all.  @keep is called
 * once per segment that could start a run, in order.  Failure atomic:
 * -ENOMEM leaves @l as it was.  Return: bytes copied.
 */
struct bl__reshape {
	bool (*keep)(const struct bl_seg *s, bool last, void *ctx);
	bool (*more)(size_t run_len, const struct bl_seg *next, bool last,
		     void *ctx);
	size_t align;
	void *ctx;
	bool in_list_pool;
};
ssize_t bl__list_reshape(struct bl_list *l, const struct bl__reshape *rs);

#endif /* BUFFERLIST_LIST_INT_H */
