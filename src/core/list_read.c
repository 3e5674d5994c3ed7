/* SPDX-License-Identifier: MIT */
/*
 * list_read.c - what reads a list without changing its bytes: the public
 * segment cursor, compare, iovec export, get_ptr, crc32c (and forgetting
 * the cached crcs), hexdump, the memory a list pins, and the invariant
 * check the tests run.
 */
#include "list_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <unistd.h>
#include <bufferlist/crc32c.h>

/* ---- the public segment cursor ---------------------------------------- */

/* The public cursor is the private one under other names. */
static const struct bl_seg *seg_lend(struct bl_list_seg_iter *it,
				     const struct bl__seg_cursor *cur,
				     const struct bl_seg *s)
{
	it->_seg_chunk = cur->c;
	it->_seg_slot = cur->i;
	return s;
}

const struct bl_seg *bl_list_seg_first(const struct bl_list *l,
				       struct bl_list_seg_iter *it)
{
	struct bl__seg_cursor cur;
	const struct bl_seg *s = bl__seg_first(l, &cur);

	return seg_lend(it, &cur, s);
}

const struct bl_seg *bl_list_seg_next(struct bl_list_seg_iter *it)
{
	struct bl__seg_cursor cur = { it->_seg_chunk, it->_seg_slot };
	const struct bl_seg *s;

	if (!cur.c)
		return NULL;
	s = bl__seg_next(&cur);
	return seg_lend(it, &cur, s);
}

/* ---- the private cursor, put at an offset ----------------------------- */

void bl__list_seek(const struct bl_list *l, size_t off,
		   struct bl__seg_cursor *cur, size_t *inner)
{
	struct pos p;

	locate(l, off, &p);
	cur->c = p.c;
	cur->i = p.i;
	*inner = p.inner;
}

/* ---- comparing -------------------------------------------------------- */

int bl_list_compare(const struct bl_list *a, const struct bl_list *b)
{
	struct bl__seg_cursor ca, cb;
	const struct bl_seg *sa = bl__seg_first(a, &ca);
	const struct bl_seg *sb = bl__seg_first(b, &cb);
	size_t oa = 0, ob = 0;

	while (sa && sb) {
		size_t n = sa->len - oa < sb->len - ob ? sa->len - oa
						       : sb->len - ob;
		int r = memcmp(sa->data + oa, sb->data + ob, n);

		if (r)
			return r < 0 ? -1 : 1;
		oa += n;
		ob += n;
		if (oa == sa->len) {
			oa = 0;
			sa = bl__seg_next(&ca);
		}
		if (ob == sb->len) {
			ob = 0;
			sb = bl__seg_next(&cb);
		}
	}
	if (sa)
		return 1;
	if (sb)
		return -1;
	return 0;
}

bool bl_list_contents_equal(const struct bl_list *a, const struct bl_list *b)
{
	return a->_len == b->_len && !bl_list_compare(a, b);
}

/* ---- export ----------------------------------------------------------- */

/*
 * One iovec from one slot.  A slot's {data, len} is laid out as an iovec
 * is, so the pair is copied as one 16-byte block: one load and one store
 * per segment, and no raw header read (when slots kept an offset, that
 * load of each segment's raw was most of the export's time).
 */
#define SEG_IS_IOVEC							\
	(offsetof(struct iovec, iov_base) == 0 &&			\
	 offsetof(struct iovec, iov_len) == sizeof(void *) &&		\
	 sizeof(struct iovec) == 2 * sizeof(void *) &&			\
	 offsetof(struct bl_seg, len) ==				\
		 offsetof(struct bl_seg, data) + sizeof(void *))

static inline void iov_fill(struct iovec *v, const struct bl_seg *s)
{
	if (SEG_IS_IOVEC) {
		/* from the struct, not from &s->data: the copy spans two
		 * members */
		memcpy(v, (const char *)s + offsetof(struct bl_seg, data),
		       sizeof(*v));
	} else {
		v->iov_base = s->data;
		v->iov_len = s->len;
	}
}

int bl_list_to_iovec(const struct bl_list *l, size_t off, struct iovec *iov,
		     int iovcnt)
{
	struct bl__chunk_hdr *c;
	struct pos p;
	uint32_t i;
	int n = 0;

	if (iovcnt < 0 || (!iov && iovcnt))
		return -EINVAL;
	if (off > l->_len)
		return -ERANGE;
	if (off == l->_len || !iovcnt)
		return 0;
	locate_noalloc(l, off, &p);	/* "No allocation" */
	/* the first segment may start inside; then whole slots, chunk by
	 * chunk, in a loop with nothing else to decide */
	c = p.c;
	i = p.i;
	{
		const struct bl_seg *s = &slots(c)[i];

		iov[0].iov_base = s->data + p.inner;
		iov[0].iov_len = s->len - p.inner;
		n = 1;
		i++;
	}
	while (n < iovcnt) {
		const struct bl_seg *s;
		uint32_t k, cnt;
		struct iovec *v;

		if (i == c->start + c->count) {
			c = c->next;
			if (!c)
				break;
			i = c->start;
		}
		s = &slots(c)[i];
		cnt = c->start + c->count - i;
		if (cnt > (uint32_t)(iovcnt - n))
			cnt = (uint32_t)(iovcnt - n);
		i += cnt;
		v = iov + n;
		n += (int)cnt;
		/* four slots a turn: a counter, a test and a branch for
		 * each would be half of a slot's instructions (GCC leaves
		 * this loop rolled even under #pragma GCC unroll) */
		for (k = 0; k + 4 <= cnt; k += 4) {
			iov_fill(&v[k], &s[k]);
			iov_fill(&v[k + 1], &s[k + 1]);
			iov_fill(&v[k + 2], &s[k + 2]);
			iov_fill(&v[k + 3], &s[k + 3]);
		}
		for (; k < cnt; k++)
			iov_fill(&v[k], &s[k]);
	}
	return n;
}

/*
 * The tail (the back of the list) directly; the first two chunks, and the
 * chunks between them and the tail of a short list, walked; those of a
 * long list found by the offset index.
 */
int bl_list_get_ptr(const struct bl_list *l, unsigned idx, struct bl_ptr *p)
{
	const struct bl__chunk_hdr *c = inl(l), *t = l->_tail;
	const struct bl_seg *s;
	unsigned back, front;

	if (idx >= l->_nseg)
		return -ERANGE;
	back = l->_nseg - idx;	/* 1 for the last segment */
	if (back <= t->count) {
		s = &slots(t)[t->start + t->count - back];
	} else {
		/* not in the tail, hence not in the inline chunk: a
		 * second chunk exists */
		front = c->count + c->next->count;
		if (idx >= front && bl__unlikely(l->_nseg > LINDEX_MIN))
			s = bl__lindex_seg(l, c->next->next, idx - front);
		else
			s = seg_walk(c, idx);
	}
	bl__raw_get(s->raw);
	*p = bl__seg_ptr(s);
	return 0;
}

/* ---- crc32c ----------------------------------------------------------- */

uint32_t bl_list_crc32c(const struct bl_list *l, uint32_t seed)
{
	struct bl__seg_cursor cur;
	const struct bl_seg *s;
	uint32_t crc = seed;

	BL__LIST_FOREACH_SEG(l, cur, s)
		crc = bl__raw_crc32c(s->raw, bl__seg_off(s), s->len, crc);
	return crc;
}

void bl_list_invalidate_crc(struct bl_list *l)
{
	struct bl__seg_cursor cur;
	const struct bl_seg *s;

	BL__LIST_FOREACH_SEG(l, cur, s)
		bl_raw_invalidate_crc(s->raw);
}

/* ---- hexdump ---------------------------------------------------------- */

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
				const struct bl_seg *s = &slots(c)[i];
				size_t so = got ? 0 : p.inner;
				size_t k = s->len - so < n - got ? s->len - so
								 : n - got;

				memcpy(cur + got, s->data + so, k);
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

/* ---- memory ----------------------------------------------------------- */

static int cmp_raw_use(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct raw_use *)a)->raw;
	uintptr_t y = (uintptr_t)((const struct raw_use *)b)->raw;

	return x < y ? -1 : x > y;
}

struct raw_use *bl__list_usage(const struct bl_list *l, size_t *n, size_t *cap)
{
	struct bl__seg_cursor cur;
	const struct bl_seg *s;
	struct raw_use *v;
	size_t k = 0, m = l->_nseg + (l->_abuf ? 1 : 0), out = 0;

	*n = 0;
	*cap = m;
	if (!m)
		return NULL;
	v = bl__alloc(bl__allocator_current(), m * sizeof(*v), sizeof(void *));
	if (!v) {
		*n = SIZE_MAX;
		return NULL;
	}
	BL__LIST_FOREACH_SEG(l, cur, s) {
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

void bl__list_usage_free(struct raw_use *v, size_t cap)
{
	if (v)
		bl__free(bl__allocator_current(), v, cap * sizeof(*v),
			 sizeof(void *));
}

size_t bl__list_waste_of(const struct raw_use *v, size_t n, struct bl_raw *r)
{
	struct raw_use key = { r, 0 };
	const struct raw_use *f = bsearch(&key, v, n, sizeof(*v), cmp_raw_use);
	size_t used = f ? f->used : 0;

	return bl__raw_len(r) > used ? bl__raw_len(r) - used : 0;
}

size_t bl_list_pinned_unused(const struct bl_list *l)
{
	struct raw_use *v;
	size_t n, cap, total = 0;

	v = bl__list_usage(l, &n, &cap);
	if (!v)
		return 0;
	for (size_t k = 0; k < n; k++)
		total += bl__list_waste_of(v, n, v[k].raw);
	bl__list_usage_free(v, cap);
	return total;
}

/* ---- validation ------------------------------------------------------- */

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
			const struct bl_seg *s = &slots(c)[i];

			if (!s->raw || !s->len)
				return -4;
			if (!bl__raw_covers_at(s->raw, s->data, s->len) ||
			    bl__raw_used(s->raw) > bl__raw_len(s->raw))
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
	if (l->_abuf && bl__raw_used(l->_abuf) > bl__raw_len(l->_abuf))
		return -10;
	if (l->_ext && (l->_ext != last_seg(l) || l->_ext->raw != l->_abuf ||
			l->_ext->data + l->_ext->len != bl__raw_data(l->_abuf) +
							bl__raw_used(l->_abuf)))
		return -11;	/* stale append hint */
	if (bl__lindex_validate(l))
		return -12;	/* stale offset index */
	return 0;
}

/* ---- alignment predicates --------------------------------------------- */

bool bl_list_is_contiguous(const struct bl_list *l)
{
	return l->_nseg <= 1;
}

bool bl_list_is_aligned(const struct bl_list *l, size_t align)
{
	struct bl__seg_cursor cur;
	const struct bl_seg *s;

	if (!align || (align & (align - 1)))
		return false;
	BL__LIST_FOREACH_SEG(l, cur, s)
		if (((uintptr_t)s->data | s->len) & (align - 1))
			return false;
	return true;
}

bool bl_list_is_page_aligned(const struct bl_list *l)
{
	/* every thread that finds it 0 stores the same value */
	static _Atomic size_t page;
	size_t ps = atomic_load_explicit(&page, memory_order_relaxed);

	if (!ps) {
		long v = sysconf(_SC_PAGESIZE);

		ps = v > 0 ? (size_t)v : 4096;
		atomic_store_explicit(&page, ps, memory_order_relaxed);
	}
	return bl_list_is_aligned(l, ps);
}
