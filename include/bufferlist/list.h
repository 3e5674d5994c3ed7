/* SPDX-License-Identifier: MIT */
/*
 * list.h - a bufferlist: a chain of slices.
 *
 * A list owns one reference per segment it stores.  Segments live by value
 * in chunks of slices chained together; the first chunk is inline in
 * struct bl_list, so a list of up to BL_LIST_INLINE segments costs no
 * allocation besides its raws.  Appending a segment allocates only when a
 * chunk fills (chunks grow to 64 segments), and claim_append moves whole
 * chunks, so it is O(1) whatever the segment count.
 *
 * A list belongs to one thread at a time, even to be read (a lookup in a
 * list of many segments builds an index of it inside the list); the raws
 * under it may be shared with lists on other threads.  struct bl_list
 * must not be copied by assignment or memcpy (the first chunk is inline):
 * use bl_list_swap(), bl_list_claim_append() or bl_list_append_list().
 * Any change to a list invalidates its iterators (an --enable-debug build
 * aborts with a message when one is used after that).  A list holds at
 * most UINT_MAX segments: an operation that would store more fails with
 * -ENOMEM.
 *
 * Small appends of caller bytes go into the list's append buffer: the
 * unused tail of a raw the list allocated for that purpose.  Its refill
 * size starts small and doubles with use (up to BL_LIST_ABUF_MAX), so a
 * lone small list never pins a large raw, and a list that keeps growing
 * pays few allocations.
 *
 * Ranges: [off, off + len) is valid when off + len <= length (computed
 * without overflow); an empty range at the very end is valid; off > length
 * is -ERANGE even when len is 0.  Functions that fail leave every argument
 * as it was.
 */
#ifndef BUFFERLIST_LIST_H
#define BUFFERLIST_LIST_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <bufferlist/common.h>
#include <bufferlist/ptr.h>

BL_BEGIN_DECLS

#define BL_LIST_INLINE 2
#define BL_LIST_ABUF_MAX (64u * 1024)

/* Private: an index of a long list's chunks by offset. */
struct bl__lindex;

/* Private: a chunk of segments.  Heap chunks have the same header. */
struct bl__chunk_hdr {
	struct bl__chunk_hdr *next;
	uint32_t start;		/* first used slot */
	uint32_t count;		/* used slots */
	uint32_t cap;		/* slots */
	uint32_t _gen;		/* inline chunk: the list's generation */
};

/* All fields are private: use the functions below. */
struct bl_list {
	struct bl__chunk_hdr *_tail;	/* last chunk (&_inl when no other) */
	size_t _len;			/* bytes */
	unsigned _nseg;			/* segments */
	unsigned _abuf_next;		/* size of the next append buffer */
	struct bl_raw *_abuf;		/* append buffer, one reference, or NULL */
	struct bl_seg *_ext;		/* last segment if it ends at _abuf's
					 * frontier, else NULL (a hint) */
	struct bl__lindex *_lidx;	/* offset index of a long list, or NULL */
	struct bl__chunk_hdr _inl;	/* the inline chunk: header ... */
	struct bl_seg _inl_seg[BL_LIST_INLINE];	/* ... and its slots */
	struct bl_pool *_pool;		/* where appends allocate; NULL: default */
};

/**
 * bl_list_init() - an empty list.  No allocation.
 * Return: nothing; it cannot fail.
 */
BL_API_INLINE void bl_list_init(struct bl_list *l)
{
	/* inline: a list on the stack per message or per slice is common */
	l->_tail = &l->_inl;
	l->_len = 0;
	l->_nseg = 0;
	l->_abuf_next = 0;
	l->_abuf = NULL;
	l->_ext = NULL;
	l->_lidx = NULL;
	l->_inl.next = NULL;
	l->_inl.start = 0;
	l->_inl.count = 0;
	l->_inl.cap = BL_LIST_INLINE;
	l->_inl._gen = 0;
	l->_pool = NULL;
}

/*
 * BL_LIST_INIT(name) - an initializer for the list @name, the very object
 * being defined, that makes what bl_list_init() makes (no allocation):
 *	struct bl_list l = BL_LIST_INIT(l);
 *	static struct bl_list cache = BL_LIST_INIT(cache);
 *	struct msg m = { .body = BL_LIST_INIT(m.body) };
 * The list points at its own inline chunk, hence the name.  C, and C++
 * from C++11 on, also under -pedantic.
 */
#ifdef __cplusplus
/*
 * Positional, in declaration order: designators are C++20 (a GNU
 * extension before, which -pedantic refuses).  Every member is given:
 * g++ -Wextra warns of one left out.
 */
#define BL_LIST_INIT(name) {						\
	&(name)._inl, 0, 0, 0,						\
	NULL, NULL, NULL,						\
	{ NULL, 0, 0, BL_LIST_INLINE, 0 },				\
	{}, NULL,							\
}
#else
#define BL_LIST_INIT(name) {						\
	._tail = &(name)._inl, ._len = 0, ._nseg = 0, ._abuf_next = 0,	\
	._abuf = NULL, ._ext = NULL, ._lidx = NULL,			\
	._inl = { .next = NULL, .start = 0, .count = 0,			\
		  .cap = BL_LIST_INLINE, ._gen = 0 },			\
	._pool = NULL,							\
}
#endif

/**
 * bl_list_set_pool() - raws that @l allocates for appends come from @p
 * (NULL: the default pool).  Existing segments keep their pools.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_list_set_pool(struct bl_list *l, struct bl_pool *p);

/**
 * bl_list_clear() - drop every reference (segments and append buffer).
 * NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_list_clear(struct bl_list *l);

/**
 * bl_list_swap() - exchange the contents of @a and @b (O(1)).
 * Return: nothing; it cannot fail.
 */
BL_API void bl_list_swap(struct bl_list *a, struct bl_list *b);

/**
 * bl_list_length() - bytes in @l, O(1).
 * Return: that count; it cannot fail.
 */
BL_API_INLINE size_t bl_list_length(const struct bl_list *l)
{
	return l->_len;
}

/**
 * bl_list_num_buffers() - segments in @l, O(1).
 * Return: that count; it cannot fail.
 */
BL_API_INLINE unsigned bl_list_num_buffers(const struct bl_list *l)
{
	return l->_nseg;
}

/**
 * bl_list_is_empty() - no bytes.
 * Return: true when @l holds no byte; it cannot fail.
 */
BL_API_INLINE bool bl_list_is_empty(const struct bl_list *l)
{
	return l->_len == 0;
}

/**
 * bl_list_append() - copies @len bytes of @data to the end of @l, into
 * the append buffer (extending the last segment where it ends there).
 * Return: 0, -EINVAL (@data NULL and @len not 0) or -ENOMEM.
 */
BL_API int bl_list_append(struct bl_list *l, const void *data, size_t len);

/**
 * bl_list_append_zero() - @len zero bytes at the end.
 * Return: 0 or -ENOMEM (then @l is unchanged).
 */
BL_API int bl_list_append_zero(struct bl_list *l, size_t len);

/*
 * A hole: bytes reserved at the end of a list to be written later (a
 * length or a checksum known only when what follows is encoded: Ceph's
 * append_hole and contiguous_filler).  All fields private.  The hole
 * points into a raw that the list holds a reference to, so appending more
 * (even when the append buffer is replaced) leaves it valid; it is
 * borrowed: valid while the list keeps those bytes (an operation that
 * drops, copies or rebuilds them -- clear, splice, rebuild, c_str,
 * compact -- ends it).
 */
struct bl_hole {
	char *_at;		/* the first reserved byte */
	struct bl_raw *_raw;	/* the raw under them (the list's reference) */
	size_t _len;
};

/**
 * bl_list_append_hole() - appends @len zero bytes to @l, contiguous in one
 * raw, and points @h at them (borrowed, see above).  No copy but the
 * zeros; the bytes go into the append buffer when they fit it.  @len 0
 * reserves nothing (an empty hole).
 * Return: 0, or -EINVAL (@h NULL), -ENOMEM; on failure @l and @h are
 * unchanged.
 */
BL_API int bl_list_append_hole(struct bl_list *l, size_t len,
			       struct bl_hole *h);

/**
 * bl_hole_fill() - copies @len bytes of @src over bytes [@off, @off + @len)
 * of the hole @h, in place in the list, and forgets the raw's cached crc.
 * Return: 0, or -EINVAL (@h or @src NULL with @len not 0), -ERANGE (the
 * range is outside the hole; nothing written).
 */
BL_API int bl_hole_fill(const struct bl_hole *h, size_t off, const void *src,
			size_t len);

/**
 * bl_list_append_ptr() - shares @p's bytes at the end of @l (no copy).
 * A slice that continues the last segment in the same raw extends it.
 * An empty @p changes nothing and takes no reference.
 * Return: 0, -ENOMEM, -EINVAL (@p has bytes but no raw) or -ERANGE (@p
 * reaches past its raw's handed-out bytes: a hand-built slice).
 */
BL_API int bl_list_append_ptr(struct bl_list *l, const struct bl_ptr *p);

/**
 * bl_list_append_ptr_move() - like bl_list_append_ptr() but takes @p's
 * reference: @p is empty afterwards (an empty @p is released).  On
 * failure @p is unchanged.
 * Return: as bl_list_append_ptr().
 */
BL_API int bl_list_append_ptr_move(struct bl_list *l, struct bl_ptr *p);

/**
 * bl_list_append_list() - shares all of @src at the end of @l (no copy:
 * one reference per segment).  @src == @l appends a second copy of the
 * same slices.
 * Return: 0 or -ENOMEM (then @l is unchanged).
 */
BL_API int bl_list_append_list(struct bl_list *l, const struct bl_list *src);

/**
 * bl_list_prepend_ptr() - shares @p's bytes at the front of @l.
 * Return: as bl_list_append_ptr().
 */
BL_API int bl_list_prepend_ptr(struct bl_list *l, const struct bl_ptr *p);

/**
 * bl_list_claim_append() - moves every segment of @src to the end of @l;
 * @src ends empty.  O(1): no copy, no reference count touched.
 * Return: 0, or -ENOMEM (only when @src's inline segments need a chunk
 * in @l), -EINVAL when @l == @src.
 */
BL_API int bl_list_claim_append(struct bl_list *l, struct bl_list *src);

/**
 * bl_list_claim_prepend() - moves every segment of @src to the front of
 * @l; @src ends empty (it keeps its append buffer).  No copy, no reference
 * count touched.
 * Return: 0, or -ENOMEM (only when @l's own inline segments need a chunk
 * to make room), -EINVAL when @l == @src.
 */
BL_API int bl_list_claim_prepend(struct bl_list *l, struct bl_list *src);

/**
 * bl_list_splice() - removes bytes [@off, @off + @len) from @l.
 * @claim_by: NULL, or a list (not @l) the removed bytes are appended to
 *            (moved: no copy; only a segment cut in two gains a reference).
 * Return: 0, -ERANGE (either end outside @l), -EINVAL (@claim_by is @l),
 * -ENOMEM (a chunk of slots, in @l or @claim_by); on failure both are
 * unchanged.
 */
BL_API int bl_list_splice(struct bl_list *l, size_t off, size_t len,
			  struct bl_list *claim_by);

/**
 * bl_list_substr_of() - replaces @dst's contents with bytes
 * [@off, @off + @len) of @src, shared (no copy).  @dst == @src works.
 * Return: 0, -ERANGE (the range is outside @src) or -ENOMEM; on failure
 * @dst is unchanged.
 */
BL_API int bl_list_substr_of(struct bl_list *dst, const struct bl_list *src,
			     size_t off, size_t len);

/**
 * bl_list_copy_out() - copies bytes [@off, @off + @len) to @dst.
 * Return: 0, -EINVAL (@dst NULL and @len not 0) or -ERANGE.
 */
BL_API int bl_list_copy_out(const struct bl_list *l, size_t off, size_t len,
			    void *dst);

/**
 * bl_list_copy_in() - copies @len bytes of @src over [@off, @off + @len).
 * Writes in place into the raws (shared or not, as Ceph does); a segment on
 * a static raw first gets a private copy.  Invalidates the crc caches of
 * the raws written.  @src may overlap the list's own bytes (even the
 * range written): the result is as if @src were copied out first.
 * Return: 0, -EINVAL (@src NULL and @len not 0), -ERANGE or -ENOMEM.
 */
BL_API int bl_list_copy_in(struct bl_list *l, size_t off, size_t len,
			   const void *src);

/**
 * bl_list_zero() - writes zeros over [@off, @off + @len), as copy_in.
 * Return: 0, -ERANGE (the range is outside @l) or -ENOMEM (a private copy
 * of a static segment).
 */
BL_API int bl_list_zero(struct bl_list *l, size_t off, size_t len);

/**
 * bl_list_rebuild() - copies @l into one new contiguous segment
 * (64-byte aligned).  Nothing happens to a list of 0 or 1 segments.
 * Return: 0 or -ENOMEM.
 */
BL_API int bl_list_rebuild(struct bl_list *l);

/**
 * bl_list_copy_shared() - appends to @dst a copy of @src's bytes in one new
 * segment (64-byte aligned) whose raw is never thread-local, whatever the
 * calling thread's bl_raw_set_thread_local() setting: the way to hand the
 * data of a thread-local list to another thread.  @dst may be @src.
 * Copies: @src is borrowed and unchanged; @dst owns the new raw.  An empty
 * @src appends nothing.
 * Return: 0, -EINVAL (@dst or @src is NULL) or -ENOMEM (@dst unchanged).
 */
BL_API int bl_list_copy_shared(struct bl_list *dst, const struct bl_list *src);

/**
 * bl_list_rebuild_aligned() - afterwards every segment starts on an
 * @align boundary and every segment but the last is a multiple of @align
 * long.  Segments already so are kept; only misaligned runs are copied.
 * Return: 1 if it copied, 0 if not, -EINVAL (@align not a power of two),
 * -ENOMEM.
 */
BL_API int bl_list_rebuild_aligned(struct bl_list *l, size_t align);

/**
 * bl_list_rebuild_aligned_size_and_memory() - for O_DIRECT: every segment
 * starts at a multiple of @mem_align and every segment but the last is a
 * multiple of @size_align long (statx's STATX_DIOALIGN gives both); with
 * @max_segments non-zero, the result has at most that many segments (runs
 * are coalesced further when needed).
 * Return: 1 if it copied, 0 if not, -EINVAL (@size_align or @mem_align
 * not a power of two), -ENOMEM; on failure @l is unchanged.
 */
BL_API int bl_list_rebuild_aligned_size_and_memory(struct bl_list *l,
						   size_t size_align,
						   size_t mem_align,
						   unsigned max_segments);

/**
 * bl_list_pad_to() - appends zero bytes until the length of @l is a
 * multiple of @align (O_DIRECT wants whole blocks: pass bl_fd_dio_align()'s
 * offset alignment before bl_list_prepare_dio()).  The zeros go into one
 * new raw whose data is aligned to @align (to 64 bytes at least), in @l's
 * pool.  The bytes of the unfinished last block that lie in the last
 * segment (fewer than @align) are copied to the front of that raw and the
 * last segment gives them up, so a list whose segments were aligned stays
 * so and bl_list_prepare_dio() then copies nothing.  A length that is
 * already a multiple (an empty list included) changes nothing.
 * Return: zero bytes appended, or -EINVAL (@align not a power of two),
 * -ENOMEM; on failure @l is unchanged.
 */
BL_API ssize_t bl_list_pad_to(struct bl_list *l, size_t align);

/**
 * bl_list_c_str() - contiguous, writable bytes of @l.  A list of several
 * segments is rebuilt into one (copies) and releases its old raws, and so
 * is a list of one segment on a static raw (read-only memory); a list of
 * one other segment returns that memory without copying.  An empty list
 * returns a static "" (no allocation, @l unchanged).  The bytes are not
 * NUL-terminated.
 * Return: borrowed (valid until @l changes); NULL only when memory runs
 * out (then @l is unchanged).
 */
BL_API char *bl_list_c_str(struct bl_list *l);

/**
 * bl_list_contents_equal() - same bytes (segmentation ignored).
 * Return: true when @a and @b hold the same bytes; it cannot fail.
 */
BL_API bool bl_list_contents_equal(const struct bl_list *a,
				   const struct bl_list *b);

/**
 * bl_list_compare() - memcmp-like ordering of the bytes; shorter first on
 * a tie.
 * Return: <0, 0 or >0 as @a sorts before, with or after @b; it cannot
 * fail.
 */
BL_API int bl_list_compare(const struct bl_list *a, const struct bl_list *b);

/**
 * bl_list_to_iovec() - fills @iov with one entry per segment from byte
 * @off on (the first may start inside a segment), at most @iovcnt.
 * Borrowed: the iovecs point into @l's raws, valid while @l holds them.
 * No allocation.  Resume at @off plus the bytes returned so far.
 * Return: entries filled, 0 at the end, -ERANGE when @off > length,
 * -EINVAL when @iovcnt < 0, or @iov is NULL and @iovcnt is not 0.
 */
BL_API int bl_list_to_iovec(const struct bl_list *l, size_t off,
			    struct iovec *iov, int iovcnt);

/**
 * bl_list_get_ptr() - shares segment @i (0-based) into @p.  Constant time
 * near either end (the first two chunks of slots, the last chunk), a
 * binary search of the list's offset index elsewhere in a list of more
 * than 256 segments (which a call on a const list may build; without
 * memory for it, a walk).
 * Return: 0, or -ERANGE (@i is not below bl_list_num_buffers()).
 */
BL_API int bl_list_get_ptr(const struct bl_list *l, unsigned i,
			   struct bl_ptr *p);

/*
 * Walking the segments: a cursor (all fields private) that lends each
 * segment in order without taking a reference, as in
 *	struct bl_list_seg_iter it;
 *	const struct bl_seg *seg;
 *	BL_LIST_FOREACH_SEG(l, it, seg)
 *		write(fd, seg->data, seg->len);
 * The segments are borrowed (struct bl_seg, ptr.h): valid, and to be read
 * only, until @l changes; bl_ptr_from_seg() keeps one.  Any change to @l
 * invalidates the cursor (as for struct bl_iter).
 */
struct bl_list_seg_iter {
	const struct bl__chunk_hdr *_seg_chunk;	/* NULL past the last */
	uint32_t _seg_slot;
};

/**
 * bl_list_seg_first() - puts @it on the first segment of @l (borrowed).
 * Return: that segment (borrowed, see above), or NULL when @l is empty.
 */
BL_API const struct bl_seg *bl_list_seg_first(const struct bl_list *l,
					       struct bl_list_seg_iter *it);

/**
 * bl_list_seg_next() - moves @it to the next segment.
 * Return: that segment (borrowed), or NULL past the last (and on every
 * call after that).
 */
BL_API const struct bl_seg *bl_list_seg_next(struct bl_list_seg_iter *it);

/* Every segment @seg (const struct bl_seg *) of @l in order, with @it. */
#define BL_LIST_FOREACH_SEG(l, it, seg)					\
	for ((seg) = bl_list_seg_first((l), &(it)); (seg);		\
	     (seg) = bl_list_seg_next(&(it)))

/**
 * bl_list_crc32c() - crc32c of all bytes, Ceph's convention (no pre- or
 * post-inversion; crc32c("A", 0) = 0xB3109EBF).  Each raw caches its last
 * result, reused for any seed, so a repeat costs O(segments).
 * Return: the crc; it cannot fail.
 */
BL_API uint32_t bl_list_crc32c(const struct bl_list *l, uint32_t seed);

/**
 * bl_list_invalidate_crc() - forget the cached crcs of every raw in @l.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_list_invalidate_crc(struct bl_list *l);

/**
 * bl_list_hexdump() - writes the `hexdump -C` layout (offset, two groups of
 * eight bytes, |ascii|, '*' for repeated lines, final offset).
 * Return: 0, or -EIO if writing to @out failed.
 */
BL_API int bl_list_hexdump(const struct bl_list *l, FILE *out);

/**
 * bl_list_is_contiguous() - all the bytes of @l in one segment (an empty
 * list counts).
 * Return: true or false; it cannot fail.
 */
BL_API bool bl_list_is_contiguous(const struct bl_list *l);

/**
 * bl_list_is_aligned() - every segment of @l starts at an address that is
 * a multiple of @align and is a multiple of @align long: what O_DIRECT
 * asks of each iovec.  An empty list is aligned.
 * Return: true or false (false also for @align 0 or not a power of two);
 * it cannot fail.
 */
BL_API bool bl_list_is_aligned(const struct bl_list *l, size_t align);

/**
 * bl_list_is_page_aligned() - bl_list_is_aligned() to the page size
 * (sysconf(_SC_PAGESIZE)).
 * Return: true or false; it cannot fail.
 */
BL_API bool bl_list_is_page_aligned(const struct bl_list *l);

/**
 * bl_list_pinned_unused() - bytes of raws @l pins but no segment of @l
 * covers (each raw counted once, its capacity minus what @l uses of it).
 * Return: that count of bytes; it cannot fail.
 */
BL_API size_t bl_list_pinned_unused(const struct bl_list *l);

/**
 * bl_list_compact() - copies out every segment whose raw is larger than
 * what @l uses of it by more than @max_waste bytes, so that a long-lived
 * small value does not keep a large (receive) buffer alive.  Neighbouring
 * segments that are copied share one new raw, allocated in the pool of the
 * first raw it replaces.  The list's bytes are unchanged; the large raws
 * lose this list's references (and are freed if it held the last).
 * Return: bytes copied (0 if none), or -ENOMEM (then @l is unchanged).
 */
BL_API ssize_t bl_list_compact(struct bl_list *l, size_t max_waste);

BL_END_DECLS

#endif /* BUFFERLIST_LIST_H */
