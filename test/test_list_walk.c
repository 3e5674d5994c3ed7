/* SPDX-License-Identifier: MIT */
/*
 * test_list_walk.c - the list layer: walking a list: the private segment
 * cursor of list_int.h, the public one (BL_LIST_INIT, bl_list_foreach_seg,
 * bl_ptr_from_seg), compare, to_iovec and get_ptr, and lists of more
 * segments than IOV_MAX.
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

/* ---- helpers ------------------------------------------------------------ */

/*
 * Bytes 0, 1, ... 199 of @data (200 bytes), appended as 100 segments of 2
 * (3 chunks), the first two cut: the inline chunk is empty, heap chunks
 * follow.
 */
static void append_98_segments(struct bl_list *l, char *data)
{
	for (unsigned i = 0; i < 200; i++)
		data[i] = (char)i;
	tu_append_fixed(l, data, 200, 2);
	ck_assert_int_eq(bl_list_splice(l, 0, 4, NULL), 0);
}

/* @s is segment @i of @l: its raw, its bytes and its length. */
static void assert_seg_is(const struct bl_seg *s, const struct bl_list *l,
			  unsigned i)
{
	struct bl_ptr want = tu_seg_of(l, i);

	ck_assert_ptr_eq(s->raw, want.raw);
	ck_assert_ptr_eq(s->data, bl_ptr_data(&want));
	ck_assert_uint_eq(s->len, want.len);
}

/* ---- the private API of list_int.h -------------------------------------- */

/* The segment cursor visits every segment in order, across chunks and past
 * an emptied inline chunk. */
START_TEST(test_seg_cursor_walks_every_segment_in_order)
{
	static char data[200];
	struct bl__seg_cursor cur;
	const struct bl_seg *s;
	struct bl_list l;
	unsigned k = 0;

	bl_list_init(&l);
	ck_assert_ptr_null(bl__seg_first(&l, &cur));
	append_98_segments(&l, data);
	BL__LIST_FOREACH_SEG(&l, cur, s)
		assert_seg_is(s, &l, k++);
	ck_assert_uint_eq(k, bl_list_num_buffers(&l));
	ck_assert_ptr_eq(bl__list_front(&l)->raw, tu_seg_of(&l, 0).raw);
	bl_list_clear(&l);
}
END_TEST

/* append_room hands out the append buffer's room in place, and declines
 * (the list untouched) when there is none. */
START_TEST(test_append_room_writes_in_place_or_declines)
{
	struct bl_list l;
	struct bl_ptr p;
	char *w, *flat;

	bl_list_init(&l);
	ck_assert_ptr_null(bl__list_append_room(&l, 3));	/* no buffer */
	ck_assert_uint_eq(bl_list_length(&l), 0);
	ck_assert_int_eq(bl_list_append(&l, "ab", 2), 0);
	ck_assert_ptr_null(bl__list_append_room(&l, 0));
	ck_assert_ptr_null(bl__list_append_room(&l, (size_t)1 << 30));
	ck_assert_uint_eq(bl_list_length(&l), 2);
	w = bl__list_append_room(&l, 3);
	ck_assert_ptr_nonnull(w);
	memcpy(w, "cde", 3);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl_list_length(&l), 5);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);	/* extended */
	/* behind a shared slice: a new segment of the append buffer */
	ck_assert_int_eq(bl_ptr_alloc(&p, 1), 0);
	memcpy(bl_ptr_data(&p), "f", 1);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	/* the inline slots are full: without the chunk, it declines */
	tu_alloc_install(1, 1);
	ck_assert_ptr_null(bl__list_append_room(&l, 2));
	tu_alloc_uninstall();
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl_list_length(&l), 6);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	w = bl__list_append_room(&l, 2);
	ck_assert_ptr_nonnull(w);
	memcpy(w, "gh", 2);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	flat = malloc(8);
	ck_assert_ptr_nonnull(flat);
	ck_assert_int_eq(bl_list_copy_out(&l, 0, 8, flat), 0);
	ck_assert(memcmp(flat, "abcdefgh", 8) == 0);
	free(flat);
	bl_list_clear(&l);
}
END_TEST

/* A lone slice moves into a list and out of it with no reference traffic. */
START_TEST(test_lone_slice_moves_in_and_out)
{
	struct bl_ptr p;
	struct bl_seg out;
	struct bl_list l;

	ck_assert_int_eq(bl_ptr_alloc(&p, 64), 0);
	memset(bl_ptr_data(&p), 'z', 64);
	memset(&l, 0x5a, sizeof(l));	/* set_one needs no bl_list_init */
	bl__list_set_one(&l, p.raw, bl_ptr_data(&p) + 8, 48);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl_list_length(&l), 48);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	ck_assert_ptr_null(bl__list_pool(&l));
	ck_assert_ptr_eq(bl__list_lone(&l), bl__list_front(&l));
	/* trim_front: 8 bytes off the front segment, the raw's count alone */
	bl__list_trim_front(&l, bl__list_front(&l), 8);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl_list_length(&l), 40);
	ck_assert_ptr_eq(bl__list_front(&l)->data, bl_ptr_data(&p) + 16);
	ck_assert_uint_eq(bl__seg_off(bl__list_front(&l)), 16);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
	ck_assert(bl__list_take_one(&l, &out));
	ck_assert_ptr_eq(out.raw, p.raw);
	ck_assert_ptr_eq(out.data, bl_ptr_data(&p) + 16);
	ck_assert_uint_eq(out.len, 40);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl_list_length(&l), 0);
	ck_assert(!bl__list_take_one(&l, &out));	/* empty: not lone */
	bl_raw_put(p.raw);
}
END_TEST

/* Only a list of one inline slice that owns nothing else is lone. */
START_TEST(test_lone_refuses_lists_that_own_more)
{
	struct bl_ptr p;
	struct bl_seg out;
	struct bl_list l;

	tu_make_abc(&l);	/* four segments: heap chunk */
	ck_assert_ptr_null(bl__list_lone(&l));
	ck_assert(!bl__list_take_one(&l, &out));
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	bl_list_clear(&l);
	/* one segment, but in the append buffer the list holds */
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert_uint_gt(bl__list_abuf_room(&l), 0);
	ck_assert_ptr_null(bl__list_lone(&l));
	ck_assert(!bl__list_take_one(&l, &out));
	tu_assert_str(&l, "abc");
	bl_list_clear(&l);
	ck_assert_uint_eq(bl__list_abuf_room(&l), 0);
	/* one shared slice and nothing else */
	ck_assert_int_eq(bl_ptr_alloc(&p, 5), 0);
	memcpy(bl_ptr_data(&p), "hello", 5);
	ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	ck_assert_ptr_nonnull(bl__list_lone(&l));
	ck_assert(bl__list_take_one(&l, &out));
	ck_assert_ptr_eq(out.raw, p.raw);
	ck_assert_ptr_eq(out.data, bl_ptr_data(&p));
	ck_assert_uint_eq(out.len, 5);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);	/* p's and out's */
	bl_raw_put(out.raw);
	bl_ptr_release(&p);
	tu_assert_str(&l, "");
}
END_TEST

/* ---- BL_LIST_INIT, the public segment cursor --------------------------- */

static struct bl_list static_list = BL_LIST_INIT(static_list);

/* Field by field: what bl_list_init() makes (the slots are not its). */
static void assert_same_as_init(const struct bl_list *a)
{
	struct bl_list b;

	memset(&b, 0x5a, sizeof(b));
	bl_list_init(&b);
	/* the generation counts changes in --enable-debug builds: not state */
	b._inl._gen = a->_inl._gen;
	ck_assert_ptr_eq(a->_tail, &a->_inl);
	ck_assert_ptr_eq(b._tail, &b._inl);
	ck_assert_uint_eq(a->_len, b._len);
	ck_assert_uint_eq(a->_nseg, b._nseg);
	ck_assert_uint_eq(a->_abuf_next, b._abuf_next);
	ck_assert_ptr_eq(a->_abuf, b._abuf);
	ck_assert_ptr_eq(a->_ext, b._ext);
	ck_assert_ptr_eq(a->_pool, b._pool);
	ck_assert_ptr_eq(a->_inl.next, b._inl.next);
	ck_assert_uint_eq(a->_inl.start, b._inl.start);
	ck_assert_uint_eq(a->_inl.count, b._inl.count);
	ck_assert_uint_eq(a->_inl.cap, b._inl.cap);
	/* and nothing else before the slots */
	ck_assert_int_eq(memcmp((const char *)a + sizeof(a->_tail),
				(const char *)&b + sizeof(b._tail),
				offsetof(struct bl_list, _inl_seg) -
				sizeof(a->_tail)), 0);
	ck_assert_int_eq(bl__list_validate(a), 0);
}

struct holder {
	int id;
	struct bl_list body;
};

START_TEST(test_list_init_macro_is_bl_list_init)
{
	struct bl_list l = BL_LIST_INIT(l);
	struct holder h = { .id = 1, .body = BL_LIST_INIT(h.body) };

	assert_same_as_init(&l);
	assert_same_as_init(&static_list);
	assert_same_as_init(&h.body);
	/* and each is a working list */
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert_int_eq(bl_list_append(&h.body, "de", 2), 0);
	ck_assert_int_eq(bl_list_append_list(&static_list, &l), 0);
	ck_assert_int_eq(bl_list_claim_append(&static_list, &h.body), 0);
	tu_assert_str(&static_list, "abcde");
	bl_list_clear(&l);
	bl_list_clear(&static_list);
	tu_assert_str(&static_list, "");
}
END_TEST

START_TEST(test_foreach_seg_lends_every_segment_in_order)
{
	static char data[200];
	struct bl_list_seg_iter it;
	const struct bl_seg *s;
	struct bl_list l;
	unsigned k = 0;

	bl_list_init(&l);
	BL_LIST_FOREACH_SEG(&l, it, s)
		ck_abort_msg("an empty list has no segment");
	ck_assert_ptr_null(bl_list_seg_next(&it));
	append_98_segments(&l, data);
	BL_LIST_FOREACH_SEG(&l, it, s) {
		assert_seg_is(s, &l, k++);
		/* borrowed: the list's reference, no other */
		ck_assert_uint_eq(bl_raw_nref(s->raw), 1);
		ck_assert_int_eq(memcmp(s->data, data + 2 + 2 * k, 2), 0);
	}
	ck_assert_uint_eq(k, bl_list_num_buffers(&l));
	/* past the end it stays there */
	ck_assert_ptr_null(bl_list_seg_next(&it));
	ck_assert_ptr_null(bl_list_seg_next(&it));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_foreach_seg_of_inline_list)
{
	struct bl_list l = BL_LIST_INIT(l);
	struct bl_list_seg_iter it;
	const struct bl_seg *s;
	size_t total = 0;
	unsigned n = 0;

	tu_append_fixed(&l, "hello world", 11, 6);	/* two inline segments */
	BL_LIST_FOREACH_SEG(&l, it, s) {
		total += s->len;
		n++;
	}
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(total, 11);
	ck_assert_ptr_eq(bl_list_seg_first(&l, &it)->raw, tu_seg_of(&l, 0).raw);
	bl_list_clear(&l);
}
END_TEST

/*
 * bl_ptr_from_seg() keeps a lent segment as a slice: the same bytes, the
 * offset back, a reference of its own that outlives the list.
 */
START_TEST(test_ptr_from_seg_outlives_the_list)
{
	static char data[64];
	struct bl_list l = BL_LIST_INIT(l), sub = BL_LIST_INIT(sub);
	struct bl_list_seg_iter it;
	const struct bl_seg *s;
	struct bl_ptr kept[4], p, q;
	unsigned n = 0;

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (char)('a' + i % 26);
	tu_append_fixed(&l, data, sizeof(data), 16);	/* 4 segments, 4 raws */
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	BL_LIST_FOREACH_SEG(&l, it, s) {
		ck_assert_int_eq(bl_ptr_from_seg(&kept[n], s), 0);
		ck_assert_ptr_eq(kept[n].raw, s->raw);
		ck_assert_ptr_eq(bl_ptr_data(&kept[n]), s->data);
		ck_assert_uint_eq(kept[n].off, 0);
		ck_assert_uint_eq(kept[n].len, s->len);
		/* the list's reference and ours */
		ck_assert_uint_eq(bl_raw_nref(s->raw), 2);
		n++;
	}
	ck_assert_uint_eq(n, 4);
	/* a segment cut at both ends: bytes [5, 11) of the first raw */
	ck_assert_int_eq(bl_list_substr_of(&sub, &l, 5, 6), 0);
	s = bl_list_seg_first(&sub, &it);
	ck_assert_int_eq(bl_ptr_from_seg(&p, s), 0);
	ck_assert_ptr_eq(p.raw, kept[0].raw);
	ck_assert_uint_eq(p.off, 5);
	ck_assert_uint_eq(p.len, 6);
	bl_list_clear(&sub);
	bl_list_clear(&l);
	for (unsigned i = 0; i < n; i++) {
		ck_assert_uint_eq(bl_raw_nref(kept[i].raw), 1 + (i == 0));
		ck_assert_int_eq(memcmp(bl_ptr_data(&kept[i]), data + 16 * i,
					16), 0);
		bl_ptr_release(&kept[i]);
	}
	ck_assert_int_eq(memcmp(bl_ptr_data(&p), data + 5, 6), 0);
	bl_ptr_release(&p);
	/* the second piece of an append buffer starts inside its raw */
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert_int_eq(bl_ptr_alloc(&q, 1), 0);
	memcpy(bl_ptr_data(&q), "-", 1);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &q), 0);
	ck_assert_int_eq(bl_list_append(&l, "def", 3), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	s = bl_list_seg_first(&l, &it);
	s = bl_list_seg_next(&it);
	s = bl_list_seg_next(&it);
	ck_assert_int_eq(bl_ptr_from_seg(&p, s), 0);
	ck_assert_ptr_eq(p.raw, bl_list_seg_first(&l, &it)->raw);
	ck_assert_uint_eq(p.off, 3);
	ck_assert_uint_eq(p.len, 3);
	ck_assert_int_eq(memcmp(bl_ptr_data(&p), "def", 3), 0);
	bl_ptr_release(&p);
	bl_list_clear(&l);
}
END_TEST

/*
 * bl_ptr_from_seg() of what no list lent: NULL arguments and a length
 * without a raw are -EINVAL, bytes outside the raw's handed-out ones
 * -ERANGE, and @p is left as it was; no raw and no length is the empty
 * slice.
 */
START_TEST(test_ptr_from_seg_refuses_a_bad_segment)
{
	struct bl_ptr r, p, was;
	struct bl_seg bad[4];
	struct bl_seg none = { NULL, NULL, 0 };
	char *d;

	ck_assert_int_eq(bl_ptr_alloc(&r, 64), 0);
	d = bl_ptr_data(&r);
	bad[0] = (struct bl_seg){ r.raw, d - 1, 2 };	/* before the raw */
	bad[1] = (struct bl_seg){ r.raw, d + 60, 5 };	/* past its end */
	bad[2] = (struct bl_seg){ r.raw, d + 65, 1 };	/* all past it */
	bad[3] = (struct bl_seg){ r.raw, d, SIZE_MAX };	/* a wrapping length */
	memset(&was, 0x5a, sizeof(was));
	p = was;
	ck_assert_int_eq(bl_ptr_from_seg(NULL, &none), -EINVAL);
	ck_assert_int_eq(bl_ptr_from_seg(&p, NULL), -EINVAL);
	ck_assert_mem_eq(&p, &was, sizeof(p));
	ck_assert_int_eq(bl_ptr_from_seg(&p, &(struct bl_seg){ NULL, d, 5 }),
			 -EINVAL);
	ck_assert_mem_eq(&p, &was, sizeof(p));
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_msg(bl_ptr_from_seg(&p, &bad[i]) == -ERANGE,
			      "bad segment %u accepted", i);
		ck_assert_mem_eq(&p, &was, sizeof(p));
	}
	ck_assert_uint_eq(bl_raw_nref(r.raw), 1);
	/* the last byte exactly, and the empty segment */
	ck_assert_int_eq(bl_ptr_from_seg(&p, &(struct bl_seg){ r.raw, d + 63,
							     1 }), 0);
	ck_assert_uint_eq(p.off, 63);
	ck_assert_uint_eq(bl_raw_nref(r.raw), 2);
	bl_ptr_release(&p);
	ck_assert_int_eq(bl_ptr_from_seg(&p, &none), 0);
	ck_assert_ptr_null(p.raw);
	ck_assert_uint_eq(p.off, 0);
	ck_assert_uint_eq(p.len, 0);
	bl_ptr_release(&r);
}
END_TEST

/*
 * The invariant check catches a slot whose bytes leave its raw: an
 * address before the raw's data, or a length past its frontier.
 */
START_TEST(test_validate_catches_a_slot_outside_its_raw)
{
	struct bl_list l = BL_LIST_INIT(l);
	struct bl_seg *s, keep;

	tu_append_fixed(&l, "0123456789", 10, 10);
	s = (struct bl_seg *)bl__list_front(&l);	/* the test breaks it */
	keep = *s;
	ck_assert_int_eq(bl__list_validate(&l), 0);
	s->data = keep.data - 1;
	ck_assert_int_eq(bl__list_validate(&l), -5);
	s->data = keep.data + 1;	/* its last byte past the frontier */
	ck_assert_int_eq(bl__list_validate(&l), -5);
	s->data = keep.data;
	s->len = keep.len + 1;
	ck_assert_int_eq(bl__list_validate(&l), -5);
	*s = keep;
	ck_assert_int_eq(bl__list_validate(&l), 0);
	bl_list_clear(&l);
}
END_TEST

/* ---- compare ----------------------------------------------------------- */

START_TEST(test_contents_equal_ignores_segmentation)
{
	unsigned char data[300];
	struct bl_list a, b, c, e1, e2;
	uint64_t rng = 21;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&a);
	bl_list_init(&b);
	bl_list_init(&c);
	bl_list_init(&e1);
	bl_list_init(&e2);
	ck_assert_int_eq(bl_list_append(&a, data, sizeof(data)), 0);
	tu_append_fixed(&b, data, sizeof(data), 1);
	tu_append_segmented(&c, data, sizeof(data), 17, 1, &rng);
	ck_assert(bl_list_contents_equal(&a, &b));
	ck_assert(bl_list_contents_equal(&b, &c));
	ck_assert(bl_list_contents_equal(&a, &a));
	ck_assert_int_eq(bl_list_compare(&a, &b), 0);
	ck_assert_int_eq(bl_list_compare(&c, &b), 0);
	ck_assert(bl_list_contents_equal(&e1, &e2));
	ck_assert_int_eq(bl_list_compare(&e1, &e2), 0);
	ck_assert(!bl_list_contents_equal(&a, &e1));
	/* one byte differs, at the very end */
	data[299] ^= 1;
	ck_assert_int_eq(bl_list_copy_in(&c, 299, 1, data + 299), 0);
	ck_assert(!bl_list_contents_equal(&a, &c));
	ck_assert(!bl_list_contents_equal(&c, &b));
	/* a prefix is not equal */
	ck_assert_int_eq(bl_list_splice(&b, 299, 1, NULL), 0);
	ck_assert(!bl_list_contents_equal(&a, &b));
	bl_list_clear(&a);
	bl_list_clear(&b);
	bl_list_clear(&c);
}
END_TEST

START_TEST(test_compare_orders_like_memcmp)
{
	struct bl_list abc, abd, ab, e, abc2;

	bl_list_init(&abc);
	bl_list_init(&abd);
	bl_list_init(&ab);
	bl_list_init(&e);
	bl_list_init(&abc2);
	ck_assert_int_eq(bl_list_append(&abc, "abc", 3), 0);
	tu_append_fixed(&abd, "abd", 3, 1);
	ck_assert_int_eq(bl_list_append(&ab, "ab", 2), 0);
	tu_append_fixed(&abc2, "a\xff" "c", 3, 2);
	ck_assert_int_lt(bl_list_compare(&abc, &abd), 0);
	ck_assert_int_gt(bl_list_compare(&abd, &abc), 0);
	ck_assert_int_lt(bl_list_compare(&ab, &abc), 0);
	ck_assert_int_gt(bl_list_compare(&abc, &ab), 0);
	ck_assert_int_lt(bl_list_compare(&e, &ab), 0);
	ck_assert_int_gt(bl_list_compare(&ab, &e), 0);
	/* bytes compare unsigned, as memcmp */
	ck_assert_int_gt(bl_list_compare(&abc2, &abd), 0);
	ck_assert_int_lt(bl_list_compare(&abd, &abc2), 0);
	bl_list_clear(&abc);
	bl_list_clear(&abd);
	bl_list_clear(&ab);
	bl_list_clear(&abc2);
}
END_TEST

/* ---- to_iovec / get_ptr ------------------------------------------------ */

START_TEST(test_to_iovec_one_entry_per_segment)
{
	struct bl_list l;
	struct iovec iov[8];

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, iov, 8), 4);
	for (unsigned i = 0; i < 4; i++) {
		struct bl_ptr p = tu_seg_of(&l, i);

		ck_assert_ptr_eq(iov[i].iov_base, bl_ptr_data(&p));
		ck_assert_uint_eq(iov[i].iov_len, p.len);
	}
	/* starting inside a segment */
	ck_assert_int_eq(bl_list_to_iovec(&l, 4, iov, 8), 3);
	ck_assert_uint_eq(iov[0].iov_len, 2);
	ck_assert_mem_eq(iov[0].iov_base, "EF", 2);
	ck_assert_mem_eq(iov[1].iov_base, "GHI", 3);
	/* bounded by iovcnt */
	ck_assert_int_eq(bl_list_to_iovec(&l, 1, iov, 2), 2);
	ck_assert_mem_eq(iov[0].iov_base, "BC", 2);
	ck_assert_uint_eq(iov[1].iov_len, 3);
	ck_assert_int_eq(bl_list_to_iovec(&l, 9, iov, 8), 1);
	ck_assert_mem_eq(iov[0].iov_base, "J", 1);
	ck_assert_int_eq(bl_list_to_iovec(&l, 10, iov, 8), 0);
	ck_assert_int_eq(bl_list_to_iovec(&l, 11, iov, 8), -ERANGE);
	ck_assert_int_eq(bl_list_to_iovec(&l, SIZE_MAX, iov, 8), -ERANGE);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, iov, -1), -EINVAL);
	bl_list_clear(&l);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, iov, 8), 0);
	ck_assert_int_eq(bl_list_to_iovec(&l, 1, iov, 8), -ERANGE);
}
END_TEST

/*
 * A NULL @iov with room claimed is -EINVAL, as bl_list_copy_out() answers
 * a NULL destination, not a write through NULL; with no room it is 0.
 */
START_TEST(test_to_iovec_null_array_is_einval)
{
	struct bl_list l;

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, NULL, 4), -EINVAL);
	ck_assert_int_eq(bl_list_to_iovec(&l, 10, NULL, 4), -EINVAL);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, NULL, 0), 0);
	bl_list_clear(&l);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, NULL, 1), -EINVAL);
}
END_TEST

START_TEST(test_to_iovec_resume_over_3000_segments)
{
	static unsigned char data[3000 * 5], got[3000 * 5];
	static struct iovec iov[1024];
	struct bl_list l;
	size_t off = 0;
	int n, calls = 0;
	uint64_t rng = 31, c0;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	tu_append_fixed(&l, data, sizeof(data), 5);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3000);
	c0 = copied_now();
	while ((n = bl_list_to_iovec(&l, off, iov, 1024)) > 0) {
		calls++;
		ck_assert_int_le(n, 1024);
		for (int i = 0; i < n; i++) {
			memcpy(got + off, iov[i].iov_base, iov[i].iov_len);
			off += iov[i].iov_len;
		}
	}
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(calls, 3);
	ck_assert_uint_eq(off, sizeof(data));
	ck_assert(memcmp(got, data, sizeof(data)) == 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_to_iovec_every_count_and_start_across_chunks)
{
	/* 60 segments of 1..3 bytes: chunks of 8, 16, 32 and 64 slots */
	unsigned char data[180];
	struct iovec iov[64];
	struct bl_list l;
	size_t len = 0, segoff[61];
	uint64_t rng = 77;

	bl_list_init(&l);
	tu_fill(data, sizeof(data), &rng);
	for (unsigned i = 0; i < 60; i++) {
		size_t n = 1 + i % 3;

		segoff[i] = len;
		tu_append_fixed(&l, data + len, n, n);
		len += n;
	}
	segoff[60] = len;
	ck_assert_uint_eq(bl_list_num_buffers(&l), 60);
	for (unsigned first = 0; first < 60; first++) {
		for (int cnt = 1; cnt <= 62; cnt++) {
			/* from the segment's start, and from its last byte */
			for (int inside = 0; inside < 2; inside++) {
				size_t off = inside ? segoff[first + 1] - 1
						    : segoff[first];
				int want = 60 - (int)first < cnt ? 60 - (int)first
								 : cnt;
				int n, bad;

				for (int k = 0; k < 64; k++) {
					iov[k].iov_base = NULL;
					iov[k].iov_len = 12345;
				}
				n = bl_list_to_iovec(&l, off, iov, cnt);
				ck_assert_int_eq(n, want);
				/*
				 * One assertion per call: Check reports every
				 * passed assertion through a pipe, and 7,440
				 * calls' worth of them outran the test's time
				 * limit on a loaded machine.
				 */
				bad = -1;
				for (int k = 0; k < n && bad < 0; k++) {
					size_t so = k ? segoff[first + k] : off;

					if (iov[k].iov_len !=
						    segoff[first + k + 1] - so ||
					    memcmp(iov[k].iov_base, data + so,
						   iov[k].iov_len))
						bad = k;
				}
				/* nothing written past the entries returned */
				for (int k = n; k < 64 && bad < 0; k++)
					if (iov[k].iov_len != 12345)
						bad = k;
				ck_assert_msg(bad < 0, "first %u cnt %d inside %d: "
					      "entry %d wrong", first, cnt,
					      inside, bad);
			}
		}
	}
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_get_ptr_shares_segment)
{
	struct bl_list l;
	struct bl_ptr p = BL_PTR_INIT;

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_get_ptr(&l, 1, &p), 0);
	ck_assert_uint_eq(p.len, 3);
	ck_assert_mem_eq(bl_ptr_data(&p), "DEF", 3);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	bl_ptr_release(&p);
	ck_assert_int_eq(bl_list_get_ptr(&l, 3, &p), 0);
	ck_assert_mem_eq(bl_ptr_data(&p), "J", 1);
	bl_ptr_release(&p);
	ck_assert_int_eq(bl_list_get_ptr(&l, 4, &p), -ERANGE);
	ck_assert_int_eq(bl_list_get_ptr(&l, UINT_MAX, &p), -ERANGE);
	ck_assert_ptr_null(p.raw);
	bl_list_clear(&l);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), -ERANGE);
}
END_TEST

/* ---- more segments than IOV_MAX ------------------------------------------ */

START_TEST(test_list_larger_than_iov_max)
{
	static unsigned char data[5000 * 3], want[5000 * 3];
	static struct iovec iov[IOV_MAX];
	struct bl_list l, sub, c;
	struct bl_stats s0, s1;
	uint64_t rng = 29;
	int n;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	bl_list_init(&sub);
	bl_list_init(&c);
	s0 = stats_now();
	tu_append_fixed(&l, data, sizeof(data), 3);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5000);
	ck_assert_uint_gt(bl_list_num_buffers(&l), IOV_MAX);
	tu_assert_list_eq(&l, data, sizeof(data));
	n = bl_list_to_iovec(&l, 0, iov, IOV_MAX);
	ck_assert_int_eq(n, IOV_MAX);
	n = bl_list_to_iovec(&l, 3 * IOV_MAX + 1, iov, IOV_MAX);
	ck_assert_int_eq(n, IOV_MAX);
	ck_assert_uint_eq(iov[0].iov_len, 2);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), bl_crc32c(0, data,
							      sizeof(data)));
	ck_assert_int_eq(bl_list_substr_of(&sub, &l, 4000, 9000), 0);
	tu_assert_list_eq(&sub, data + 4000, 9000);
	ck_assert_int_eq(bl_list_splice(&l, 1, 14000, &c), 0);
	tu_assert_list_eq(&c, data + 1, 14000);
	want[0] = data[0];
	memcpy(want + 1, data + 14001, 999);
	tu_assert_list_eq(&l, want, 1000);
	/* put it back at the front: data[1..14001) data[0] data[14001..) */
	ck_assert_int_eq(bl_list_claim_prepend(&l, &c), 0);
	memcpy(want, data + 1, 14000);
	want[14000] = data[0];
	memcpy(want + 14001, data + 14001, 999);
	tu_assert_list_eq(&l, want, sizeof(data));
	tu_assert_list_eq(&c, "", 0);
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	tu_assert_list_eq(&l, want, sizeof(data));
	bl_list_clear(&l);
	bl_list_clear(&sub);
	bl_list_clear(&c);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed,
			  s1.raws_created - s0.raws_created);
}
END_TEST

int main(void)
{
	const TTest *private_tests[] = {
		test_seg_cursor_walks_every_segment_in_order,
		test_append_room_writes_in_place_or_declines,
		test_lone_slice_moves_in_and_out,
		test_lone_refuses_lists_that_own_more,
		NULL
	};
	const TTest *public_walk_tests[] = {
		test_list_init_macro_is_bl_list_init,
		test_foreach_seg_lends_every_segment_in_order,
		test_foreach_seg_of_inline_list,
		test_ptr_from_seg_outlives_the_list,
		test_ptr_from_seg_refuses_a_bad_segment,
		test_validate_catches_a_slot_outside_its_raw,
		NULL
	};
	const TTest *compare_tests[] = {
		test_contents_equal_ignores_segmentation,
		test_compare_orders_like_memcmp,
		NULL
	};
	const TTest *iovec_tests[] = {
		/* sanitizers on a loaded machine */
		test_to_iovec_one_entry_per_segment,
		test_to_iovec_null_array_is_einval,
		test_to_iovec_resume_over_3000_segments,
		test_to_iovec_every_count_and_start_across_chunks,
		test_get_ptr_shares_segment,
		test_list_larger_than_iov_max,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("private", private_tests),
		TU_GROUP("public_walk", public_walk_tests),
		TU_GROUP("compare", compare_tests),
		TU_GROUP("iovec", iovec_tests, .timeout = 60),
		TU_GROUP_END
	};

	return tu_run(tu_suite("list_walk", groups));
}
