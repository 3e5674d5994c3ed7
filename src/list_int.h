/* SPDX-License-Identifier: MIT */
/*
 * list_int.h - the list layer's private side: the chunk that holds a
 * list's segments, and what the other layers call of the list that users
 * never see.  Includes only raw_int.h.  Never installed.
 */
#ifndef BUFFERLIST_LIST_INT_H
#define BUFFERLIST_LIST_INT_H

#include "raw_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <sys/types.h>
#include <bufferlist/list.h>

struct bl__chunk {
	struct bl__chunk_hdr h;
	struct bl_ptr seg[];
};

static inline struct bl__chunk *bl__chunk(const struct bl__chunk_hdr *h)
{
	return (struct bl__chunk *)h;
}

/*
 * Empties a list that has no append buffer and no heap chunk, once the
 * references its slices held have been moved elsewhere or dropped: the
 * messenger's fast paths hand a lone slice over without the general
 * splice.
 */
static inline void bl__list_forget(struct bl_list *l)
{
	l->_tail = &l->_inl;
	l->_len = 0;
	l->_nseg = 0;
	l->_abuf_next = 0;
	l->_ext = NULL;
	l->_inl.start = 0;
	l->_inl.count = 0;
}

/*
 * Checks every invariant of @l (lengths add up, counts match, no empty
 * segment, every slice within its raw's frontier).  Returns 0 or a negative
 * number naming the first broken one; tests call it after every mutation.
 */
int bl__list_validate(const struct bl_list *l);

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
 * copied part is LARGE_APPEND bytes or more and does not fit).  -EINVAL
 * when @mid is @l.  The messenger's frame encoder.
 */
int bl__list_append_frame(struct bl_list *l, const void *pre, size_t prelen,
			  const struct bl_list *mid, bool copy_mid,
			  const void *post, size_t postlen);

/*
 * bl__list_reshape() - rebuilds @l's chain: a segment that @keep accepts is
 * shared as it is; otherwise a run starts there, grows while @more accepts
 * the next segment, and is copied into one new raw aligned to @align (in
 * the pool of the run's first raw).  Failure atomic: -ENOMEM leaves @l as
 * it was.  Return: bytes copied.
 */
struct bl__reshape {
	bool (*keep)(const struct bl_ptr *s, bool last, void *ctx);
	bool (*more)(size_t run_len, const struct bl_ptr *next, bool last,
		     void *ctx);
	size_t align;
	void *ctx;
};
ssize_t bl__list_reshape(struct bl_list *l, const struct bl__reshape *rs);

/* Segments that can be pushed onto @l without allocating a chunk. */
unsigned bl__list_tail_room(const struct bl_list *l);

#endif /* BUFFERLIST_LIST_INT_H */
