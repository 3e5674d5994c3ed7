/* SPDX-License-Identifier: MIT */
/*
 * list_index.c - the offset index of a long list, so that finding the
 * segment that holds a byte costs a binary search and a scan of one chunk
 * instead of a walk from the front.  It lists the chunks from the third up
 * to the one before the tail, each with its first byte's offset counted
 * from the third chunk's start: the first two chunks are left to the walk
 * in locate() (changes at the very front, such as the messenger trimming
 * its first segment, then leave the index valid), and the tail is left
 * out because appends change it.  Appends only ever add chunks after the
 * tail, so they never touch the index; lookups extend it over the chunks
 * sealed since, as far as they need to go.  Every other change to the
 * chain or to a segment's length drops it (bl__lindex_drop(): the one
 * reset, splice, claim_prepend, prepend, undoing appends).  It is a
 * cache: a lookup on a const list may build it, and when memory runs out
 * the lookup walks instead, never failing.
 */
#include "list_priv.h"	/* first: config.h sets _GNU_SOURCE */

struct lentry {
	struct bl__chunk_hdr *c;
	size_t off;		/* c's first byte, from the third chunk's */
};

struct bl__lindex {
	const struct bl__allocator *al;	/* the one that made this block */
	uint32_t n;		/* chunks indexed, from the third on */
	uint32_t cap;		/* entries the block holds */
	size_t end;		/* where the chunk after the last one starts */
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
	const struct bl_ptr *s = slots(c) + c->start;
	size_t len = 0;

	for (uint32_t i = 0; i < c->count; i++)
		len += s[i].len;
	return len;
}

/*
 * Appends chunk @c, which starts at @off and holds @len bytes, to @l's
 * index @x, growing it when full (if @alloc).  Return: the index (it may
 * have moved), or NULL when it could not grow (it is then as it was).
 */
static struct bl__lindex *lindex_add(struct bl_list *l, struct bl__lindex *x,
				     struct bl__chunk_hdr *c, size_t off,
				     size_t len, bool alloc)
{
	if (x->n == x->cap) {
		struct bl__lindex *y;

		if (!alloc || x->cap > UINT32_MAX / 2)
			return NULL;
		y = lindex_alloc(x->cap * 2);
		if (!y)
			return NULL;
		memcpy(y->e, x->e, x->n * sizeof(struct lentry));
		y->n = x->n;
		y->end = x->end;
		lindex_release(x);
		l->_lidx = x = y;
	}
	x->e[x->n].c = c;
	x->e[x->n].off = off;
	x->n++;
	x->end = off + len;
	return x;
}

/* The last entry of @x (not empty) that starts at or before @off. */
static inline uint32_t lindex_search(const struct bl__lindex *x, size_t off)
{
	uint32_t lo = 0, n = x->n;

	/* e[lo].off <= off throughout; n entries from lo are candidates */
	while (n > 1) {
		uint32_t half = n / 2;

		if (x->e[lo + half].off <= off)
			lo += half;
		n -= half;
	}
	return lo;
}

int bl__lindex_validate(const struct bl_list *l)
{
	const struct bl__lindex *x = l->_lidx;
	const struct bl__chunk_hdr *c;
	size_t off = 0;

	if (!x)
		return 0;
	if (l->_nseg <= LINDEX_MIN)
		return -1;	/* a short list keeps none */
	if (x->n > x->cap)
		return -2;
	if (!x->n)
		return 0;
	c = inl(l)->next ? inl(l)->next->next : NULL;
	for (uint32_t k = 0; k < x->n; k++, c = c->next) {
		if (!c || c == l->_tail || x->e[k].c != c)
			return -3;	/* not the chain's chunk */
		if (x->e[k].off != off)
			return -4;
		off += chunk_len(c);
	}
	if (x->end != off)
		return -5;
	return 0;
}

struct lfound bl__lindex_find(const struct bl_list *cl,
			      struct bl__chunk_hdr *c,
			      struct bl__chunk_hdr *prev, size_t off,
			      bool alloc)
{
	/* the index is a cache beside the contents, which stay as they are */
	struct bl_list *l = (struct bl_list *)cl;
	struct bl__lindex *x = l->_lidx;
	size_t base = 0;

	BL_DEBUG_CHECK(!bl__lindex_validate(l),
		       "list %p: its offset index does not match its chunks "
		       "(%d): a change to the list did not drop it",
		       (const void *)l, bl__lindex_validate(l));
	if (x && x->n) {
		if (off < x->end) {
			uint32_t k = lindex_search(x, off);

			return (struct lfound){ k ? x->e[k - 1].c : prev,
						off - x->e[k].off };
		}
		prev = x->e[x->n - 1].c;
		c = prev->next;
		base = x->end;
		off -= base;
	} else if (!x && alloc) {
		/* about one entry per full chunk, room to grow */
		x = lindex_alloc(l->_nseg / CHUNK_MAX + 16);
		l->_lidx = x;	/* NULL without memory: walk */
	}
	/* extend the index over the sealed chunks up to the one needed */
	for (; c != l->_tail; prev = c, c = c->next) {
		size_t len = chunk_len(c);

		if (x)
			x = lindex_add(l, x, c, base, len, alloc);
		if (off < len)
			break;
		off -= len;
		base += len;
	}
	return (struct lfound){ prev, off };
}
