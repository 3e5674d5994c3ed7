/* SPDX-License-Identifier: MIT */
/*
 * test_lindex.c - the offset index of long lists: every offset-based
 * operation (copy_out, substr_of, to_iovec, splice, copy_in, zero, cursors
 * put at an offset) on lists of up to 10^5 segments of varied lengths
 * gives what a flat copy of the bytes says, and bl_list_get_ptr() of any
 * segment what a walk of the segments finds (with the reference it takes
 * given back), with every kind of change to the list between lookups (a
 * stale index would hand back freed chunks, wrong offsets or wrong
 * ordinals, and bl__list_validate() compares the index with the chain
 * after each), and lookups stay right when the index cannot be allocated.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "testutil.h"

#define POOL_LEN (4u << 20)	/* the bytes every slice is cut from */
#define LINDEX_MIN BL__LINDEX_MIN	/* longer lists index (list_int.h) */

static uint64_t seed;
static struct bl_ptr pool;	/* one raw of random bytes */

static void pool_setup(void)
{
	uint64_t rng;

	seed = tu_seed("test_lindex");
	rng = seed;
	ck_assert_int_eq(bl_ptr_alloc(&pool, POOL_LEN), 0);
	tu_fill(bl_ptr_data(&pool), POOL_LEN, &rng);
}

static void pool_teardown(void)
{
	bl_ptr_release(&pool);
}

/*
 * A list length for make check (BL_TEST_QUICK): a quarter, still far past
 * LINDEX_MIN and over hundreds of chunks.  A debug build checks the index
 * against the chain before each lookup, in O(chunks), which makes a walk
 * of every segment quadratic; make check-long runs the full lengths.
 */
static unsigned quick(unsigned n)
{
	return getenv("BL_TEST_QUICK") ? n / 4 : n;
}

/* ---- a list beside the flat copy of its bytes ------------------------- */

struct ml {
	struct bl_list l;
	unsigned char *b;	/* what the list should hold */
	size_t len, cap;
};

static void ml_room(struct ml *m, size_t len);

static void ml_init(struct ml *m)
{
	bl_list_init(&m->l);
	m->b = NULL;
	m->len = m->cap = 0;
	ml_room(m, 1);	/* never NULL: memcmp() of 0 bytes wants a pointer */
}

static void ml_free(struct ml *m)
{
	bl_list_clear(&m->l);
	free(m->b);
	m->b = NULL;
	m->len = m->cap = 0;
}

static void ml_room(struct ml *m, size_t len)
{
	if (len > m->cap) {
		m->cap = len * 2 + 64;
		m->b = realloc(m->b, m->cap);
		ck_assert_ptr_nonnull(m->b);
	}
}

/* Model side: @n bytes of @p inserted at @off. */
static void model_insert(struct ml *m, size_t off, const void *p, size_t n)
{
	ml_room(m, m->len + n);
	memmove(m->b + off + n, m->b + off, m->len - off);
	memcpy(m->b + off, p, n);
	m->len += n;
}

static void model_remove(struct ml *m, size_t off, size_t n)
{
	memmove(m->b + off, m->b + off + n, m->len - off - n);
	m->len -= n;
}

/* A slice of the pool of 1..@max bytes at a random place. */
static struct bl_ptr random_slice(size_t max, uint64_t *rng)
{
	size_t len = 1 + tu_rand(rng) % max;
	size_t off = tu_rand(rng) % (POOL_LEN - len);
	struct bl_ptr p = BL_PTR_INIT;

	TU_REQUIRE(bl_ptr_slice(&p, &pool, off, len) == 0);
	return p;
}

/* Appends @n slices of 1..@max bytes (separate segments, mostly). */
static void ml_push(struct ml *m, unsigned n, size_t max, uint64_t *rng)
{
	while (n--) {
		struct bl_ptr p = random_slice(max, rng);

		model_insert(m, m->len, bl_ptr_data(&p), p.len);
		TU_REQUIRE(bl_list_append_ptr(&m->l, &p) == 0);
		bl_ptr_release(&p);
	}
}

/* The model takes the list's bytes (after writes into shared raws). */
static void ml_resync(struct ml *m)
{
	ml_room(m, m->len + 1);
	TU_REQUIRE(bl_list_copy_out(&m->l, 0, m->len, m->b) == 0);
}

/* The list and its model agree, index included (bl__list_validate). */
static void ml_check_all(const struct ml *m)
{
	tu_assert_list_eq(&m->l, m->b, m->len);
}

static size_t rand_off(const struct ml *m, uint64_t *rng)
{
	/* the ends and the far end are where a stale index shows first */
	switch (tu_rand(rng) % 8) {
	case 0:
		return 0;
	case 1:
		return m->len;
	case 2:
		return m->len - (m->len ? tu_rand(rng) % (m->len < 5000
						? m->len : 5000) + 1 : 0);
	default:
		return m->len ? tu_rand(rng) % (m->len + 1) : 0;
	}
}

/* ---- segments by index ------------------------------------------------ */

/* The walk's answer: every segment of @l, in order (borrowed: valid while
 * @l does not change); *@n gets their number. */
static const struct bl_seg **seg_table(const struct bl_list *l, unsigned *n)
{
	const struct bl_seg **t;
	struct bl_list_seg_iter it;
	const struct bl_seg *s;
	unsigned i = 0;

	*n = bl_list_num_buffers(l);
	t = malloc(((size_t)*n + 1) * sizeof(*t));
	TU_REQUIRE(t);
	for (s = bl_list_seg_first(l, &it); s; s = bl_list_seg_next(&it)) {
		if (i == *n)
			ck_abort_msg("more segments than %u", *n);
		t[i++] = s;
	}
	TU_REQUIRE(i == *n);
	return t;
}

/*
 * bl_list_get_ptr(@l, @idx) shares what the walk found there, @want: the
 * same raw, address and length, one reference more, which its release
 * gives back.
 */
static void check_seg(const struct bl_list *l, const struct bl_seg *want,
		      unsigned idx)
{
	struct bl_ptr p = BL_PTR_INIT;
	unsigned nref = bl_raw_nref(want->raw), got;
	int rc = bl_list_get_ptr(l, idx, &p);

	/* no ck_assert in the loops' path: Check records each passed one */
	if (rc)
		ck_abort_msg("get_ptr(%u) of %u: %d", idx,
			     bl_list_num_buffers(l), rc);
	if (p.raw != want->raw || bl_ptr_data(&p) != want->data ||
	    p.len != want->len)
		ck_abort_msg("get_ptr(%u) of %u: {%p, %zu}, the walk "
			     "{%p, %zu}", idx, bl_list_num_buffers(l),
			     (void *)bl_ptr_data(&p), p.len,
			     (void *)want->data, want->len);
	got = bl_raw_nref(p.raw);
	if (got != nref + 1)
		ck_abort_msg("get_ptr(%u): %u references, not %u", idx, got,
			     nref + 1);
	bl_ptr_release(&p);
	got = bl_raw_nref(want->raw);
	if (got != nref)
		ck_abort_msg("get_ptr(%u) released: %u references, not %u",
			     idx, got, nref);
}

/* check_seg() of segment @idx against the walk's table @t. */
static void check_get_ptr(const struct bl_list *l,
			  const struct bl_seg *const *t, unsigned idx)
{
	check_seg(l, t[idx], idx);
}

/* Past the last segment (and of an empty list): -ERANGE, @p untouched. */
static void check_get_ptr_range(const struct bl_list *l)
{
	unsigned n = bl_list_num_buffers(l);
	const unsigned bad[] = { n, n + 1, n + 4096, UINT_MAX };

	for (unsigned k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		struct bl_ptr p = BL_PTR_INIT;

		if (bad[k] < n)
			continue;	/* n + 4096 wrapped */
		TU_REQUIRE(bl_list_get_ptr(l, bad[k], &p) == -ERANGE);
		TU_REQUIRE(!p.raw);
		TU_REQUIRE(p.off == 0);
		TU_REQUIRE(p.len == 0);
	}
}

/* A segment index of @n: the ends and the back, where a stale or
 * miscounted index shows first, or anywhere. */
static unsigned rand_idx(unsigned n, uint64_t *rng)
{
	switch (tu_rand(rng) % 6) {
	case 0:
		return 0;
	case 1:
		return n - 1;
	case 2:
		return n - 1 - (unsigned)(tu_rand(rng) % (n < 200 ? n : 200));
	default:
		return (unsigned)(tu_rand(rng) % n);
	}
}

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

/*
 * bl_list_get_ptr() of @k (<= 64) segments against the walk, and past the
 * end: the indexes drawn first, sorted, then one walk without a table.
 */
static void ml_get_ptrs(const struct ml *m, unsigned k, uint64_t *rng)
{
	unsigned n = bl_list_num_buffers(&m->l), idx[64], i = 0;
	struct bl_list_seg_iter it;
	const struct bl_seg *s;

	if (k > 64)
		k = 64;
	for (unsigned j = 0; n && j < k; j++)
		idx[j] = rand_idx(n, rng);
	if (!n)
		k = 0;
	qsort(idx, k, sizeof(idx[0]), cmp_unsigned);
	s = bl_list_seg_first(&m->l, &it);
	for (unsigned j = 0; j < k; j++) {
		for (; i < idx[j]; i++)
			s = bl_list_seg_next(&it);
		TU_REQUIRE(s);
		check_seg(&m->l, s, idx[j]);
	}
	check_get_ptr_range(&m->l);
	TU_REQUIRE(bl__list_validate(&m->l) == 0);
}

/* Every segment of @m by bl_list_get_ptr(), in order, against the walk. */
static void ml_get_ptr_all(const struct ml *m)
{
	const struct bl_seg **t;
	unsigned n;

	t = seg_table(&m->l, &n);
	for (unsigned i = 0; i < n; i++)
		check_get_ptr(&m->l, t, i);
	check_get_ptr_range(&m->l);
	free(t);
	TU_REQUIRE(bl__list_validate(&m->l) == 0);
}

/* Reads @k ranges at random offsets every way there is, against the model. */
static void ml_lookups(const struct ml *m, unsigned k, uint64_t *rng)
{
	static unsigned char buf[4096];

	for (unsigned j = 0; j < k; j++) {
		size_t off = rand_off(m, rng);
		size_t len = tu_rand(rng) % 600;
		struct iovec iov[4];
		int n;

		if (len > m->len - off)
			len = m->len - off;
		TU_REQUIRE(bl_list_copy_out(&m->l, off, len, buf) == 0);
		ck_assert_msg(!memcmp(buf, m->b + off, len),
			      "copy_out of %zu at %zu (length %zu)", len, off,
			      m->len);
		n = bl_list_to_iovec(&m->l, off, iov, 4);
		if (off == m->len) {
			TU_REQUIRE(n == 0);
		} else {
			size_t got = 0;

			TU_REQUIRE(n > 0);
			for (int i = 0; i < n && off + got < m->len; i++) {
				size_t c = iov[i].iov_len;

				if (c > m->len - off - got)
					c = m->len - off - got;
				TU_REQUIRE(!memcmp(iov[i].iov_base,
						   m->b + off + got, c));
				got += c;
			}
		}
		if (j % 4 == 1) {	/* a cursor put there, and moved back */
			struct bl_iter it;

			TU_REQUIRE(bl_iter_init(&it, &m->l, off) == 0);
			TU_REQUIRE(bl_iter_remaining(&it) == m->len - off);
			TU_REQUIRE(bl_iter_copy(&it, len, buf) == 0);
			TU_REQUIRE(!memcmp(buf, m->b + off, len));
			off /= 2;
			len = m->len - off < len ? m->len - off : len;
			TU_REQUIRE(bl_iter_seek(&it, off) == 0);
			TU_REQUIRE(bl_iter_copy(&it, len, buf) == 0);
			TU_REQUIRE(!memcmp(buf, m->b + off, len));
			/* and forward again, far (past the walk's limit) */
			off = off + len + (m->len - off - len) / 2;
			len = m->len - off < len ? m->len - off : len;
			TU_REQUIRE(bl_iter_seek(&it, off) == 0);
			TU_REQUIRE(bl_iter_offset(&it) == off);
			TU_REQUIRE(bl_iter_copy(&it, len, buf) == 0);
			TU_REQUIRE(!memcmp(buf, m->b + off, len));
		}
		if (j % 4 == 0) {
			struct bl_list d = BL_LIST_INIT(d);

			TU_REQUIRE(bl_list_substr_of(&d, &m->l, off, len) == 0);
			tu_assert_list_eq(&d, m->b + off, len);
			bl_list_clear(&d);
		}
	}
	TU_REQUIRE(bl__list_validate(&m->l) == 0);
	ml_get_ptrs(m, k / 4 + 1, rng);	/* and segments by index */
}

/* ---- lookups ---------------------------------------------------------- */

START_TEST(test_lookups_across_100000_segments_match_flat_copy)
{
	uint64_t rng = seed + 1;
	static unsigned char buf[1024];
	struct bl_list_seg_iter it;
	const struct bl_seg *s;
	struct iovec iov[1];
	struct ml m;
	unsigned i;
	size_t off;

	ml_init(&m);
	ml_push(&m, 100000, 200, &rng);
	ck_assert_uint_ge(bl_list_num_buffers(&m.l), 99000);
	ck_assert_ptr_null(m.l._lidx);	/* built by lookups, not appends */
	ml_lookups(&m, 3000, &rng);
	ck_assert_ptr_nonnull(m.l._lidx);
	/* the start of every 97th segment, and the byte before it */
	off = 0;
	i = 0;
	for (s = bl_list_seg_first(&m.l, &it); s; s = bl_list_seg_next(&it)) {
		if (i++ % 97 == 0) {
			size_t a = off ? off - 1 : 0;
			size_t n = m.len - a < sizeof(buf) ? m.len - a
							   : sizeof(buf);

			ck_assert_int_eq(bl_list_copy_out(&m.l, a, n, buf), 0);
			ck_assert(!memcmp(buf, m.b + a, n));
			ck_assert_int_eq(bl_list_to_iovec(&m.l, off, iov, 1),
					 1);
			ck_assert_ptr_eq(iov[0].iov_base, s->data);
		}
		off += s->len;
	}
	ck_assert_uint_eq(off, m.len);
	ml_check_all(&m);
	ml_free(&m);
	ck_assert_ptr_null(m.l._lidx);
}
END_TEST

/*
 * A cursor moved forward over many segments at once lands where a walk
 * would (it asks the list after WALK_MAX segments): every distance from
 * one byte to the whole list, to the end, and refused past it.
 */
/*
 * The index's search starts where the entries' average length puts an
 * offset: in a list of very unequal segments (a run of 1-byte ones, a run
 * of about a kilobyte each, 1-byte ones again) that guess is far off in
 * both directions, and the search must still find every byte.
 */
START_TEST(test_lookups_in_very_unequal_segments_match_flat_copy)
{
	uint64_t rng = seed + 7;
	unsigned char buf[4];
	struct ml m;
	size_t off;

	ml_init(&m);
	ml_push(&m, 3000, 1, &rng);
	ml_push(&m, 300, 1200, &rng);
	ml_push(&m, 3000, 1, &rng);
	ck_assert_uint_ge(bl_list_num_buffers(&m.l), 6000);
	/* every byte of the small runs, every 97th of the large one */
	for (off = 0; off < m.len; off += off < 2900 || m.len - off < 3100
						? 1 : 97) {
		size_t n = m.len - off < sizeof(buf) ? m.len - off
						     : sizeof(buf);

		if (bl_list_copy_out(&m.l, off, n, buf) ||
		    memcmp(buf, m.b + off, n))
			ck_abort_msg("copy_out of %zu at %zu (length %zu)", n,
				     off, m.len);
	}
	ck_assert_ptr_nonnull(m.l._lidx);
	ml_lookups(&m, 2000, &rng);
	ml_check_all(&m);
	ml_free(&m);
}
END_TEST

START_TEST(test_cursor_moves_far_forward_like_a_walk)
{
	uint64_t rng = seed + 10;
	struct bl_iter it;
	struct ml m;
	size_t at = 0;

	ml_init(&m);
	ml_push(&m, 50000, 100, &rng);
	ck_assert_int_eq(bl_iter_init(&it, &m.l, 0), 0);
	for (size_t step = 1; at + step <= m.len; step = step * 3 + 1) {
		uint8_t v;

		ck_assert_int_eq(bl_iter_advance(&it, step), 0);
		at += step;
		ck_assert_uint_eq(bl_iter_offset(&it), at);
		ck_assert_uint_eq(bl_iter_remaining(&it), m.len - at);
		if (at < m.len) {
			ck_assert_int_eq(bl_decode_u8(&it, &v), 0);
			ck_assert_uint_eq(v, m.b[at]);
			at++;
		}
	}
	ck_assert_int_eq(bl_iter_advance(&it, m.len - at + 1), -ERANGE);
	ck_assert_uint_eq(bl_iter_offset(&it), at);
	ck_assert_int_eq(bl_iter_advance(&it, m.len - at), 0);
	ck_assert_uint_eq(bl_iter_remaining(&it), 0);
	/* from every depth, a far move to a random byte */
	for (unsigned r = 0; r < 2000; r++) {
		size_t a = rand_off(&m, &rng), b = rand_off(&m, &rng);
		uint8_t v;

		if (a > b) {
			size_t t = a;

			a = b;
			b = t;
		}
		if (b == m.len)
			continue;
		ck_assert_int_eq(bl_iter_init(&it, &m.l, a), 0);
		ck_assert_int_eq(bl_iter_seek(&it, b), 0);
		ck_assert_int_eq(bl_decode_u8(&it, &v), 0);
		ck_assert_uint_eq(v, m.b[b]);
	}
	ck_assert_int_eq(bl__list_validate(&m.l), 0);
	ml_free(&m);
}
END_TEST

START_TEST(test_short_list_keeps_no_index)
{
	uint64_t rng = seed + 2;
	struct ml m;

	ml_init(&m);
	ml_push(&m, LINDEX_MIN, 50, &rng);
	ml_lookups(&m, 500, &rng);
	ck_assert_ptr_null(m.l._lidx);
	/* one more segment: a lookup near the front still walks ... */
	while (bl_list_num_buffers(&m.l) <= LINDEX_MIN)
		ml_push(&m, 1, 50, &rng);
	ck_assert_int_eq(bl_list_copy_out(&m.l, 0, 1, m.b), 0);
	ck_assert_ptr_null(m.l._lidx);
	/* ... and one at the end makes the index */
	ck_assert_int_eq(bl_list_copy_out(&m.l, m.len - 1, 1, m.b + m.len - 1),
			 0);
	ck_assert_ptr_nonnull(m.l._lidx);
	ml_check_all(&m);
	ml_free(&m);
}
END_TEST

START_TEST(test_appends_after_lookups_extend_the_index)
{
	uint64_t rng = seed + 3;
	struct ml m;

	ml_init(&m);
	for (unsigned round = 0; round < 50; round++) {
		/* slices, bytes (append buffer) and whole lists, in turn */
		ml_push(&m, 1 + (unsigned)(tu_rand(&rng) % 700), 100, &rng);
		{
			unsigned char b[37];

			tu_fill(b, sizeof(b), &rng);
			ck_assert_int_eq(bl_list_append(&m.l, b, sizeof(b)), 0);
			model_insert(&m, m.len, b, sizeof(b));
		}
		{
			struct ml o;

			ml_init(&o);
			ml_push(&o, (unsigned)(tu_rand(&rng) % 400), 80, &rng);
			model_insert(&m, m.len, o.b, o.len);
			ck_assert_int_eq(bl_list_append_list(&m.l, &o.l), 0);
			ml_push(&o, 3, 80, &rng);
			model_insert(&m, m.len, o.b, o.len);
			ck_assert_int_eq(bl_list_claim_append(&m.l, &o.l), 0);
			ck_assert_int_eq(bl__list_validate(&o.l), 0);
			ml_free(&o);
		}
		ml_lookups(&m, 20, &rng);
	}
	ml_check_all(&m);
	ml_free(&m);
}
END_TEST

/* ---- every change between lookups ------------------------------------- */

/* A list of @n slices of up to @max bytes, for claims and swaps. */
static void ml_build(struct ml *o, unsigned n, size_t max, uint64_t *rng)
{
	ml_init(o);
	ml_push(o, n, max, rng);
}

static void change_list(struct ml *m, struct ml *other, uint64_t *rng)
{
	unsigned op = (unsigned)(tu_rand(rng) % 20);

	size_t off = m->len ? tu_rand(rng) % m->len : 0;
	size_t len = m->len - off ? 1 + tu_rand(rng) % (m->len - off) : 0;
	struct ml o;

	if (len > m->len / 8 + 1)
		len = m->len / 8 + 1;
	if (len > m->len - off)
		len = m->len - off;
	switch (op) {
	case 0:
	case 1:
		ml_push(m, 1 + (unsigned)(tu_rand(rng) % 3000), 120, rng);
		break;
	case 2:		/* claim_append of a list long enough to index */
		ml_build(&o, (unsigned)(tu_rand(rng) % 2000), 90, rng);
		ml_lookups(&o, 3, rng);
		model_insert(m, m->len, o.b, o.len);
		TU_REQUIRE(bl_list_claim_append(&m->l, &o.l) == 0);
		TU_REQUIRE(!o.l._lidx);
		ml_free(&o);
		break;
	case 3:
		ml_build(&o, (unsigned)(tu_rand(rng) % 2000), 90, rng);
		ml_lookups(&o, 3, rng);
		model_insert(m, 0, o.b, o.len);
		TU_REQUIRE(bl_list_claim_prepend(&m->l, &o.l) == 0);
		TU_REQUIRE(!o.l._lidx);
		ml_free(&o);
		break;
	case 4: {	/* prepend: sometimes the inline slots overflow */
		unsigned n = 1 + (unsigned)(tu_rand(rng) % 4);

		while (n--) {
			struct bl_ptr p = random_slice(60, rng);

			model_insert(m, 0, bl_ptr_data(&p), p.len);
			TU_REQUIRE(bl_list_prepend_ptr(&m->l, &p) == 0);
			bl_ptr_release(&p);
		}
		break;
	}
	case 5:
	case 6: {	/* splice out, the pieces into a list */
		struct bl_list by = BL_LIST_INIT(by);

		TU_REQUIRE(bl_list_splice(&m->l, off, len, &by) == 0);
		tu_assert_list_eq(&by, m->b + off, len);
		model_remove(m, off, len);
		bl_list_clear(&by);
		break;
	}
	case 7:		/* trim the front or the back */
		if (tu_rand(rng) & 1) {
			TU_REQUIRE(bl_list_splice(&m->l, 0, len, NULL) == 0);
			model_remove(m, 0, len);
		} else {
			TU_REQUIRE(bl_list_splice(&m->l, m->len - len, len,
						  NULL) == 0);
			model_remove(m, m->len - len, len);
		}
		break;
	case 8: {	/* a hole inside one segment: it becomes two */
		struct iovec iov[1];

		if (bl_list_to_iovec(&m->l, off, iov, 1) == 1 &&
		    iov[0].iov_len > 2) {
			TU_REQUIRE(bl_list_splice(&m->l, off + 1, 1, NULL) ==
				   0);
			model_remove(m, off + 1, 1);
		}
		break;
	}
	case 9:
	case 10: {	/* writes in place */
		unsigned char *b = calloc(1, len + 1), c;

		TU_REQUIRE(b);
		if (op == 9) {
			tu_fill(b, len, rng);
			TU_REQUIRE(bl_list_copy_in(&m->l, off, len, b) == 0);
		} else {
			TU_REQUIRE(bl_list_zero(&m->l, off, len) == 0);
		}
		free(b);
		/*
		 * Slices of the one pool may overlap, even inside the range,
		 * so only a lone byte is sure to read back as written; the
		 * rest of both models is taken from the lists.
		 */
		if (m->len && off < m->len) {
			b = &c;
			tu_fill(b, 1, rng);
			TU_REQUIRE(bl_list_copy_in(&m->l, off, 1, b) == 0);
			TU_REQUIRE(bl_list_copy_out(&m->l, off, 1,
						    m->b + off) == 0);
			TU_REQUIRE(m->b[off] == c);
		}
		ml_resync(m);
		ml_resync(other);
		break;
	}
	case 11: {	/* substr of the list into itself */
		TU_REQUIRE(bl_list_substr_of(&m->l, &m->l, off,
					     m->len - off) == 0);
		model_remove(m, 0, off);
		break;
	}
	case 12: {	/* swap with another long list, both indexed */
		struct ml t;

		ml_lookups(other, 2, rng);
		bl_list_swap(&m->l, &other->l);
		t.b = m->b;
		t.len = m->len;
		t.cap = m->cap;
		m->b = other->b;
		m->len = other->len;
		m->cap = other->cap;
		other->b = t.b;
		other->len = t.len;
		other->cap = t.cap;
		TU_REQUIRE(bl__list_validate(&other->l) == 0);
		break;
	}
	case 13: {	/* the messenger's trim of the front segment */
		const struct bl_seg *f;

		if (!m->len)
			break;
		f = bl__list_front(&m->l);
		if (f->len > 1) {
			size_t n = 1 + tu_rand(rng) % (f->len - 1);

			bl__list_trim_front(&m->l, f, n);
			model_remove(m, 0, n);
		}
		break;
	}
	case 14: {	/* padding: the last segment moves or gets company */
		ssize_t pad = bl_list_pad_to(&m->l, 512);

		TU_REQUIRE(pad >= 0);
		ml_room(m, m->len + (size_t)pad);
		memset(m->b + m->len, 0, (size_t)pad);
		m->len += (size_t)pad;
		break;
	}
	case 15:	/* the reshapes: few segments remain, then growth */
		switch (tu_rand(rng) % 4) {
		case 0:
			TU_REQUIRE(bl_list_rebuild(&m->l) == 0);
			break;
		case 1:
			TU_REQUIRE(bl_list_rebuild_aligned(&m->l, 64) >= 0);
			break;
		case 2:
			TU_REQUIRE(bl_list_compact(&m->l, 256) >= 0);
			break;
		default:
			TU_REQUIRE(bl_list_rebuild_aligned_size_and_memory(
					&m->l, 8, 8, 300) >= 0);
			break;
		}
		break;
	case 16:
		if (tu_rand(rng) % 4 == 0) {
			bl_list_clear(&m->l);
			TU_REQUIRE(!m->l._lidx);
			m->len = 0;
		}
		break;
	case 17: {	/* append a list to itself */
		TU_REQUIRE(bl_list_append_list(&m->l, &m->l) == 0);
		ml_room(m, 2 * m->len);
		memcpy(m->b + m->len, m->b, m->len);
		m->len *= 2;
		break;
	}
	default: {	/* bytes into the append buffer */
		unsigned char b[100];
		size_t n = 1 + tu_rand(rng) % sizeof(b);

		tu_fill(b, n, rng);
		TU_REQUIRE(bl_list_append(&m->l, b, n) == 0);
		model_insert(m, m->len, b, n);
		break;
	}
	}
}

START_TEST(test_changes_between_lookups_never_leave_a_stale_index)
{
	uint64_t rng = seed + 4;
	unsigned rounds = getenv("BL_TEST_QUICK") ? 150 : 600;
	struct ml m, other;

	ml_init(&m);
	ml_build(&other, 5000, 64, &rng);
	ml_push(&m, 20000, 150, &rng);
	for (unsigned r = 0; r < rounds; r++) {
		ml_lookups(&m, 2, &rng);	/* the index is built ... */
		change_list(&m, &other, &rng);	/* ... then the list changes */
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		ml_lookups(&m, 6, &rng);
		/* keep it long (and the model's copies cheap) */
		if (bl_list_num_buffers(&m.l) < 2 * LINDEX_MIN)
			ml_push(&m, 3000, 150, &rng);
		if (m.len > (12u << 20)) {
			size_t cut = m.len - (2u << 20);

			ck_assert_int_eq(bl_list_splice(&m.l, 0, cut, NULL), 0);
			model_remove(&m, 0, cut);
		}
	}
	ml_check_all(&m);
	ml_check_all(&other);
	ml_free(&m);
	ml_free(&other);
}
END_TEST

START_TEST(test_swap_keeps_each_index_with_its_chunks)
{
	uint64_t rng = seed + 5;
	struct ml a, b;
	struct bl_list e = BL_LIST_INIT(e);

	ml_build(&a, 3000, 100, &rng);
	ml_build(&b, 5000, 30, &rng);
	ml_lookups(&a, 50, &rng);
	ml_lookups(&b, 50, &rng);
	bl_list_swap(&a.l, &b.l);
	ck_assert_int_eq(bl__list_validate(&a.l), 0);
	ck_assert_int_eq(bl__list_validate(&b.l), 0);
	tu_assert_list_eq(&a.l, b.b, b.len);
	tu_assert_list_eq(&b.l, a.b, a.len);
	bl_list_swap(&a.l, &b.l);
	/* with an empty list: the index goes and comes back */
	bl_list_swap(&a.l, &e);
	ck_assert_ptr_null(a.l._lidx);
	ck_assert_ptr_nonnull(e._lidx);
	bl_list_swap(&a.l, &e);
	ml_lookups(&a, 50, &rng);
	ml_check_all(&a);
	ml_check_all(&b);
	ml_free(&a);
	ml_free(&b);
}
END_TEST

START_TEST(test_splices_at_every_depth_match_model)
{
	uint64_t rng = seed + 6;
	struct ml m;

	ml_init(&m);
	ml_push(&m, 30000, 64, &rng);
	for (unsigned r = 0; r < 300; r++) {
		size_t off = rand_off(&m, &rng), len;
		struct bl_list by = BL_LIST_INIT(by);

		ml_lookups(&m, 1, &rng);
		if (off == m.len)
			off = m.len / 2;
		len = tu_rand(&rng) % 3000;
		if (len > m.len - off)
			len = m.len - off;
		ck_assert_int_eq(bl_list_splice(&m.l, off, len, &by), 0);
		tu_assert_list_eq(&by, m.b + off, len);
		model_remove(&m, off, len);
		bl_list_clear(&by);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		if (r % 10 == 0)
			ml_push(&m, 500, 64, &rng);
	}
	ml_check_all(&m);
	ml_free(&m);
}
END_TEST

/*
 * A splice keeps the index of the chunks before the first one it changes
 * (and drops the entries of a chunk that becomes the tail); a splice in
 * the first two chunks, on which the entries' offsets rest, drops it all.
 */
START_TEST(test_splice_keeps_index_before_it)
{
	uint64_t rng = seed + 9;
	struct ml m;

	for (int claim = 0; claim < 2; claim++) {
		struct bl_list by = BL_LIST_INIT(by);
		struct bl_list *to = claim ? &by : NULL;
		size_t off;

		ml_init(&m);
		ml_push(&m, 20000, 64, &rng);
		ck_assert_int_eq(bl_list_copy_out(&m.l, m.len - 1, 1,
						  m.b + m.len - 1), 0);
		ck_assert_ptr_nonnull(m.l._lidx);
		/* the middle: chunks before it keep their entries */
		off = m.len / 2;
		ck_assert_int_eq(bl_list_splice(&m.l, off, 5000, to), 0);
		model_remove(&m, off, 5000);
		ck_assert_ptr_nonnull(m.l._lidx);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		ml_lookups(&m, 200, &rng);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		/* from the fourth chunk's start to the end: the third, which
		 * the index covers, becomes the tail */
		{
			const struct bl__chunk_hdr *c = &m.l._inl;

			off = 0;
			for (int k = 0; k < 3; k++, c = c->next)
				for (uint32_t j = 0; j < c->count; j++)
					off += bl__chunk(c)->seg[c->start + j]
						       .len;
			ck_assert_ptr_nonnull(c->next);	/* not the tail */
		}
		ck_assert_int_eq(bl_list_splice(&m.l, off, m.len - off, to),
				 0);
		model_remove(&m, off, m.len - off);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		ml_lookups(&m, 200, &rng);
		ml_check_all(&m);
		ml_push(&m, 20000, 64, &rng);
		ml_lookups(&m, 200, &rng);
		ck_assert_ptr_nonnull(m.l._lidx);
		/* to the end from inside: what is left is kept */
		off = m.len / 4 + 7;
		ck_assert_int_eq(bl_list_splice(&m.l, off, m.len - off, to),
				 0);
		model_remove(&m, off, m.len - off);
		ck_assert_ptr_nonnull(m.l._lidx);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		ml_lookups(&m, 200, &rng);
		ml_check_all(&m);
		/* down to a short list: the index goes */
		ck_assert_int_eq(bl_list_splice(&m.l, 100, m.len - 100, to),
				 0);
		model_remove(&m, 100, m.len - 100);
		ck_assert_ptr_null(m.l._lidx);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		ml_push(&m, 20000, 64, &rng);
		ml_lookups(&m, 200, &rng);
		ck_assert_ptr_nonnull(m.l._lidx);
		/* the front: the index goes */
		ck_assert_int_eq(bl_list_splice(&m.l, 3, 20, to), 0);
		model_remove(&m, 3, 20);
		ck_assert_ptr_null(m.l._lidx);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		ml_lookups(&m, 200, &rng);
		ml_check_all(&m);
		bl_list_clear(&by);
		ml_free(&m);
	}
}
END_TEST

/* ---- segments by index: bl_list_get_ptr() ------------------------------ */

/* The segments of @l's chunks before its chunk @k (0: the inline one). */
static unsigned segs_before_chunk(const struct bl_list *l, int k)
{
	const struct bl__chunk_hdr *c = &l->_inl;
	unsigned n = 0;

	for (; k--; c = c->next) {
		ck_assert_ptr_nonnull(c);
		n += c->count;
	}
	return n;
}

/* The first segment of @l's tail chunk (the back, found without index). */
static unsigned tail_first(const struct bl_list *l)
{
	return bl_list_num_buffers(l) - l->_tail->count;
}

/*
 * A list of about @nseg segments in chunks of every size: lists of 1..150
 * slices claimed one after another, their chunks (8, 16, 32, 64 slots,
 * the last of each partly full) relinked as they are, so that the index's
 * entries cover runs of every length, not only LSTEP.
 */
static void ml_build_mixed_chunks(struct ml *m, unsigned nseg, uint64_t *rng)
{
	ml_init(m);
	while (bl_list_num_buffers(&m->l) < nseg) {
		struct ml o;

		ml_build(&o, 1 + (unsigned)(tu_rand(rng) % 150), 60, rng);
		model_insert(m, m->len, o.b, o.len);
		TU_REQUIRE(bl_list_claim_append(&m->l, &o.l) == 0);
		ml_free(&o);
	}
}

/* Builds the index over every sealed chunk of @m with one get_ptr (the
 * last segment before the tail) and checks that one. */
static void ml_get_ptr_index_all(const struct ml *m)
{
	const struct bl_seg **t;
	unsigned n;

	t = seg_table(&m->l, &n);
	TU_REQUIRE(tail_first(&m->l) > 0);
	check_get_ptr(&m->l, t, tail_first(&m->l) - 1);
	free(t);
	TU_REQUIRE(m->l._lidx);
	TU_REQUIRE(bl__list_validate(&m->l) == 0);
}

/*
 * The first two chunks and the tail are read where they are; a long
 * list's middle by the index, which get_ptr builds: every position, in
 * order, backwards and scattered, is the walk's segment.
 */
START_TEST(test_get_ptr_at_every_position_like_a_walk)
{
	uint64_t rng = seed + 11;
	struct bl_list e = BL_LIST_INIT(e);
	const struct bl_seg **t;
	unsigned n, front, tail, i;
	struct ml m;

	check_get_ptr_range(&e);	/* empty */
	ml_init(&m);
	for (i = 0; i < 2 * LINDEX_MIN; i++) {	/* short lists: the walk */
		ml_push(&m, 1, 50, &rng);
		if (i < 40 || i % 37 == 0 || i == LINDEX_MIN - 1 ||
		    i == LINDEX_MIN)
			ml_get_ptr_all(&m);
		if (bl_list_num_buffers(&m.l) <= LINDEX_MIN)
			ck_assert_ptr_null(m.l._lidx);
	}
	ml_free(&m);

	for (int mixed = 0; mixed < 2; mixed++) {
		if (mixed) {
			ml_build_mixed_chunks(&m, quick(25000), &rng);
		} else {
			ml_init(&m);
			ml_push(&m, quick(40000), 200, &rng);
		}
		t = seg_table(&m.l, &n);
		ck_assert_uint_gt(n, quick(20000));
		/* the first two chunks and the tail: no index needed */
		front = segs_before_chunk(&m.l, 2);
		tail = tail_first(&m.l);
		ck_assert_uint_gt(front, 0);
		ck_assert_uint_lt(front, tail);
		for (i = 0; i < front; i++)
			check_get_ptr(&m.l, t, i);
		for (i = tail; i < n; i++)
			check_get_ptr(&m.l, t, i);
		ck_assert_ptr_null(m.l._lidx);
		/* the middle: the index, built as far as the lookup goes */
		check_get_ptr(&m.l, t, n / 2);
		ck_assert_ptr_nonnull(m.l._lidx);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		/* scattered (past the end of the index first), in order,
		 * backwards */
		for (i = 0; i < n; i++)
			check_get_ptr(&m.l, t, (unsigned)((n / 2 + 1 +
						(uint64_t)i * 7919) % n));
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		for (i = 0; i < n; i++)
			check_get_ptr(&m.l, t, i);
		for (i = n; i-- > 0;)
			check_get_ptr(&m.l, t, i);
		check_get_ptr_range(&m.l);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		free(t);
		/* the byte lookups find what get_ptr's index says */
		ml_lookups(&m, 300, &rng);
		/*
		 * Changes at the front keep the index (its ordinals count
		 * from the third chunk, not from the list's start): the
		 * messenger's trim of the first segment, prepends into the
		 * inline slots; the prepend that moves them out drops it.
		 */
		ck_assert_ptr_nonnull(m.l._lidx);	/* ml_lookups built it */
		for (int k = 0; k < 4; k++) {
			const struct bl_seg *f = bl__list_front(&m.l);
			/* a prepend moves the inline slots out (and drops
			 * the index) only when they are full from slot 0 */
			bool moves = !m.l._inl.start &&
				     m.l._inl.count == BL_LIST_INLINE;
			bool had = m.l._lidx != NULL;
			struct bl_ptr p;

			if (k == 0 && f->len > 1) {
				bl__list_trim_front(&m.l, f, 1);
				model_remove(&m, 0, 1);
				moves = false;
			} else {
				p = random_slice(60, &rng);
				model_insert(&m, 0, bl_ptr_data(&p), p.len);
				ck_assert_int_eq(bl_list_prepend_ptr(&m.l, &p),
						 0);
				bl_ptr_release(&p);
			}
			if (moves)
				ck_assert_ptr_null(m.l._lidx);
			else
				ck_assert(!had || m.l._lidx != NULL);
			ml_get_ptr_all(&m);
		}
		ml_check_all(&m);
		ml_free(&m);
	}
}
END_TEST

/* Appends seal chunks past the ones indexed: get_ptr extends the index
 * over them, from the last entry's ordinal on. */
START_TEST(test_get_ptr_after_appends_seal_chunks)
{
	uint64_t rng = seed + 12;
	struct ml m;

	ml_build_mixed_chunks(&m, 5000, &rng);
	ml_get_ptrs(&m, 50, &rng);
	ml_get_ptr_index_all(&m);
	for (unsigned round = 0; round < 24; round++) {
		unsigned char b[37];
		struct ml o;

		switch (round % 3) {
		case 0:
			ml_push(&m, 1 + (unsigned)(tu_rand(&rng) % 700), 100,
				&rng);
			break;
		case 1:
			tu_fill(b, sizeof(b), &rng);
			ck_assert_int_eq(bl_list_append(&m.l, b, sizeof(b)), 0);
			model_insert(&m, m.len, b, sizeof(b));
			ml_push(&m, 70, 100, &rng);	/* seals the tail */
			break;
		default:
			ml_build(&o, 1 + (unsigned)(tu_rand(&rng) % 400), 80,
				 &rng);
			model_insert(&m, m.len, o.b, o.len);
			ck_assert_int_eq(bl_list_claim_append(&m.l, &o.l), 0);
			ml_free(&o);
			break;
		}
		ck_assert_ptr_nonnull(m.l._lidx);	/* appends keep it */
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		/* the chunks sealed since: at once, or one by one */
		if (round % 2)
			ml_get_ptr_index_all(&m);
		ml_get_ptr_all(&m);
	}
	ml_check_all(&m);
	ml_free(&m);
}
END_TEST

/*
 * A splice keeps the entries (and so the ordinals) of the chunks before
 * the one it changes: get_ptr past it extends the index from there, with
 * the ordinals the kept entries end at.
 */
START_TEST(test_get_ptr_after_splices)
{
	uint64_t rng = seed + 13;

	for (int claim = 0; claim < 2; claim++) {
		struct bl_list by = BL_LIST_INIT(by);
		struct bl_list *to = claim ? &by : NULL;
		struct iovec iov[1];
		struct ml m;
		size_t off;

		ml_build_mixed_chunks(&m, quick(12000), &rng);
		for (unsigned r = 0; r < 12; r++) {
			ml_get_ptr_index_all(&m);
			off = m.len / 3 + tu_rand(&rng) % (m.len / 3);
			switch (r % 4) {
			case 0:		/* whole chunks and more */
				ck_assert_int_eq(bl_list_splice(&m.l, off,
						 5000, to), 0);
				model_remove(&m, off, 5000);
				break;
			case 1:		/* a few segments of one chunk */
				ck_assert_int_eq(bl_list_splice(&m.l, off,
						 70, to), 0);
				model_remove(&m, off, 70);
				break;
			case 2:		/* a hole: one segment becomes two */
				ck_assert_int_eq(bl_list_to_iovec(&m.l, off,
						 iov, 1), 1);
				if (iov[0].iov_len < 3)
					break;
				ck_assert_int_eq(bl_list_splice(&m.l, off + 1,
						 1, to), 0);
				model_remove(&m, off + 1, 1);
				break;
			default:	/* everything from there on */
				ck_assert_int_eq(bl_list_splice(&m.l, off,
						 m.len - off, to), 0);
				model_remove(&m, off, m.len - off);
				break;
			}
			ck_assert_ptr_nonnull(m.l._lidx);	/* kept */
			ck_assert_int_eq(bl__list_validate(&m.l), 0);
			ml_get_ptrs(&m, 200, &rng);
			ml_get_ptr_all(&m);
			bl_list_clear(&by);
			if (bl_list_num_buffers(&m.l) < quick(9000))
				ml_push(&m, quick(4000), 60, &rng);
		}
		/* the third chunk, which the index covers, becomes the tail */
		ml_get_ptr_index_all(&m);
		off = 0;
		{
			const struct bl__chunk_hdr *c = &m.l._inl;

			for (int k = 0; k < 3; k++, c = c->next)
				for (uint32_t j = 0; j < c->count; j++)
					off += bl__chunk(c)->seg[c->start + j]
						       .len;
		}
		ck_assert_int_eq(bl_list_splice(&m.l, off, m.len - off, to),
				 0);
		model_remove(&m, off, m.len - off);
		ck_assert_int_eq(bl__list_validate(&m.l), 0);
		ml_get_ptr_all(&m);
		ml_push(&m, quick(12000), 60, &rng);
		ml_get_ptr_all(&m);
		ck_assert_ptr_nonnull(m.l._lidx);
		/* the front: the index goes, get_ptr makes it again */
		ck_assert_int_eq(bl_list_splice(&m.l, 3, 20, to), 0);
		model_remove(&m, 3, 20);
		ck_assert_ptr_null(m.l._lidx);
		ml_get_ptr_all(&m);
		ck_assert_ptr_nonnull(m.l._lidx);
		ml_check_all(&m);
		bl_list_clear(&by);
		ml_free(&m);
	}
}
END_TEST

/* claim_append keeps the claimer's index and drops the claimed one's;
 * claim_prepend drops the claimer's (its third chunk is another). */
START_TEST(test_get_ptr_after_claims)
{
	uint64_t rng = seed + 14;
	struct ml a, b;

	ml_build_mixed_chunks(&a, quick(20000), &rng);
	for (int r = 0; r < 4; r++) {
		ml_build_mixed_chunks(&b, quick(2000) + (unsigned)(tu_rand(&rng)
						% quick(8000)), &rng);
		ml_get_ptr_index_all(&a);
		ml_get_ptr_index_all(&b);
		if (r % 2 == 0) {
			model_insert(&a, a.len, b.b, b.len);
			ck_assert_int_eq(bl_list_claim_append(&a.l, &b.l), 0);
			ck_assert_ptr_nonnull(a.l._lidx);
		} else {
			model_insert(&a, 0, b.b, b.len);
			ck_assert_int_eq(bl_list_claim_prepend(&a.l, &b.l), 0);
			ck_assert_ptr_null(a.l._lidx);
		}
		ck_assert_ptr_null(b.l._lidx);
		ck_assert_int_eq(bl__list_validate(&a.l), 0);
		ck_assert_int_eq(bl__list_validate(&b.l), 0);
		ml_get_ptrs(&a, 300, &rng);
		ml_get_ptr_all(&a);
		ml_free(&b);
	}
	/* a short list claimed at the end: the tail moves on */
	ml_build(&b, 5, 60, &rng);
	model_insert(&a, a.len, b.b, b.len);
	ck_assert_int_eq(bl_list_claim_append(&a.l, &b.l), 0);
	ml_get_ptr_all(&a);
	ml_free(&b);
	/* an indexed list claimed into an empty one */
	ml_init(&b);
	model_insert(&b, 0, a.b, a.len);
	ck_assert_int_eq(bl_list_claim_append(&b.l, &a.l), 0);
	ck_assert_ptr_null(a.l._lidx);
	ml_get_ptrs(&b, 300, &rng);
	ml_get_ptr_all(&b);
	ml_check_all(&b);
	ml_free(&a);
	ml_free(&b);
}
END_TEST

/* ---- without memory --------------------------------------------------- */

/* A long list of small chunks (two-segment lists claimed one by one), so
 * that its index outgrows its first block. */
static void ml_build_small_chunks(struct ml *m, unsigned pairs, uint64_t *rng)
{
	ml_init(m);
	while (pairs--) {
		struct ml o;

		ml_build(&o, 2, 40, rng);
		model_insert(m, m->len, o.b, o.len);
		TU_REQUIRE(bl_list_claim_append(&m->l, &o.l) == 0);
		ml_free(&o);
	}
}

/* 200 bl_list_copy_out() of random ranges of @m, checked against its model. */
static void ml_copy_outs(struct ml *m, uint64_t *rng)
{
	for (unsigned k = 0; k < 200; k++) {
		static unsigned char buf[700];
		size_t off = rand_off(m, rng);
		size_t len = tu_rand(rng) % sizeof(buf);

		if (len > m->len - off)
			len = m->len - off;
		TU_REQUIRE(bl_list_copy_out(&m->l, off, len, buf) == 0);
		TU_REQUIRE(!memcmp(buf, m->b + off, len));
	}
}

/* The list and its model agree; freed, the counting allocator (which the
 * test installed) holds no live byte: every index block went too. */
static void ml_free_all_freed(struct ml *m)
{
	struct tu_alloc_stats st;

	ml_check_all(m);
	ml_free(m);
	tu_alloc_stats(&st);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();
}

START_TEST(test_lookups_without_memory_for_the_index_walk)
{
	uint64_t rng = seed + 7;
	struct tu_alloc_stats st;
	struct ml m;

	ml_build_small_chunks(&m, 10000, &rng);
	/* every allocation fails: no index, the same answers */
	tu_alloc_install(1, 1);
	ml_copy_outs(&m, &rng);
	tu_alloc_stats(&st);
	ck_assert_uint_gt(st.failed, 0);
	ck_assert_uint_eq(st.allocs, 0);
	ck_assert_ptr_null(m.l._lidx);
	ck_assert_int_eq(bl__list_validate(&m.l), 0);

	/* the first block, then no memory to grow it: a partial index */
	tu_alloc_fail_at(2, 1);
	{
		unsigned char c;

		ck_assert_int_eq(bl_list_copy_out(&m.l, m.len - 1, 1, &c), 0);
		ck_assert_uint_eq(c, m.b[m.len - 1]);
	}
	tu_alloc_stats(&st);
	ck_assert_uint_eq(st.allocs, 1);
	ck_assert_uint_gt(st.failed, 0);
	ck_assert_ptr_nonnull(m.l._lidx);
	ck_assert_int_eq(bl__list_validate(&m.l), 0);
	ml_copy_outs(&m, &rng);
	/* memory again: the index grows, in the allocator of the moment */
	tu_alloc_fail_at(0, 0);
	ml_lookups(&m, 300, &rng);
	ml_free_all_freed(&m);
}
END_TEST

/* get_ptr without memory for the index walks, never fails; with room
 * for part of it, uses that part and walks the rest. */
START_TEST(test_get_ptr_without_memory_for_the_index_walks)
{
	uint64_t rng = seed + 15;
	struct tu_alloc_stats st;
	const struct bl_seg **t;
	unsigned n, i;
	struct ml m;

	ml_build_small_chunks(&m, 10000, &rng);
	t = seg_table(&m.l, &n);
	/* every allocation fails: no index, the same answers */
	tu_alloc_install(1, 1);
	for (i = 0; i < n; i++)
		check_get_ptr(&m.l, t, i);
	for (i = 0; i < 2000; i++)
		check_get_ptr(&m.l, t, rand_idx(n, &rng));
	check_get_ptr_range(&m.l);
	tu_alloc_stats(&st);
	ck_assert_uint_gt(st.failed, 0);
	ck_assert_uint_eq(st.allocs, 0);
	ck_assert_ptr_null(m.l._lidx);
	ck_assert_int_eq(bl__list_validate(&m.l), 0);

	/* the first block, then no memory to grow it: a partial index */
	{
		uint64_t failed = st.failed;

		tu_alloc_fail_at(2, 1);
		check_get_ptr(&m.l, t, tail_first(&m.l) - 1);
		tu_alloc_stats(&st);
		ck_assert_uint_eq(st.allocs, 1);
		ck_assert_uint_gt(st.failed, failed);	/* it outgrew it */
	}
	ck_assert_ptr_nonnull(m.l._lidx);
	ck_assert_int_eq(bl__list_validate(&m.l), 0);
	for (i = n; i-- > 0;)
		check_get_ptr(&m.l, t, i);
	for (i = 0; i < 2000; i++)
		check_get_ptr(&m.l, t, rand_idx(n, &rng));
	ck_assert_int_eq(bl__list_validate(&m.l), 0);
	/* the byte lookups use the same partial index */
	ml_copy_outs(&m, &rng);
	ck_assert_int_eq(bl__list_validate(&m.l), 0);

	/* memory again: the index grows over the rest */
	tu_alloc_fail_at(0, 0);
	check_get_ptr(&m.l, t, tail_first(&m.l) - 1);
	for (i = 0; i < n; i++)
		check_get_ptr(&m.l, t, i);
	ck_assert_int_eq(bl__list_validate(&m.l), 0);
	free(t);
	ml_lookups(&m, 100, &rng);
	ml_free_all_freed(&m);
}
END_TEST

START_TEST(test_to_iovec_never_allocates_an_index)
{
	uint64_t rng = seed + 8;
	struct tu_alloc_stats st;
	struct iovec iov[8];
	struct ml m;

	ml_build_small_chunks(&m, 5000, &rng);
	tu_alloc_install(0, 0);
	for (unsigned k = 0; k < 100; k++) {
		size_t off = rand_off(&m, &rng);
		int n = bl_list_to_iovec(&m.l, off, iov, 8);

		ck_assert_int_ge(n, off < m.len ? 1 : 0);
		if (n)
			ck_assert(!memcmp(iov[0].iov_base, m.b + off,
					  iov[0].iov_len));
	}
	tu_alloc_stats(&st);
	ck_assert_uint_eq(st.allocs + st.failed, 0);
	ck_assert_ptr_null(m.l._lidx);
	/* an index made by another lookup serves it */
	ml_lookups(&m, 100, &rng);
	ck_assert_ptr_nonnull(m.l._lidx);
	ml_free(&m);
	tu_alloc_stats(&st);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();
}
END_TEST

int main(void)
{
	const TTest *lookups_tests[] = {
		/* valgrind */
		test_lookups_across_100000_segments_match_flat_copy,
		test_lookups_in_very_unequal_segments_match_flat_copy,
		test_short_list_keeps_no_index,
		test_appends_after_lookups_extend_the_index,
		NULL
	};
	const TTest *changes_tests[] = {
		test_changes_between_lookups_never_leave_a_stale_index,
		test_swap_keeps_each_index_with_its_chunks,
		test_splices_at_every_depth_match_model,
		test_splice_keeps_index_before_it,
		test_cursor_moves_far_forward_like_a_walk,
		NULL
	};
	const TTest *get_ptr_tests[] = {
		test_get_ptr_at_every_position_like_a_walk,
		test_get_ptr_after_appends_seal_chunks,
		test_get_ptr_after_splices,
		test_get_ptr_after_claims,
		NULL
	};
	const TTest *memory_tests[] = {
		test_lookups_without_memory_for_the_index_walk,
		test_get_ptr_without_memory_for_the_index_walks,
		test_to_iovec_never_allocates_an_index,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("lookups", lookups_tests,
			 .timeout = 300, .once_setup = pool_setup,
			 .once_teardown = pool_teardown),
		TU_GROUP("changes", changes_tests,
			 .timeout = 300, .once_setup = pool_setup,
			 .once_teardown = pool_teardown),
		TU_GROUP("get_ptr", get_ptr_tests,
			 .timeout = 300, .once_setup = pool_setup,
			 .once_teardown = pool_teardown),
		TU_GROUP("memory", memory_tests,
			 .timeout = 300, .once_setup = pool_setup,
			 .once_teardown = pool_teardown),
		TU_GROUP_END
	};

	return tu_run(tu_suite("lindex", groups));
}
