/* SPDX-License-Identifier: MIT */
/*
 * test_list_append.c - the list layer: appending (bytes, zeros, slices,
 * other lists), prepending, clearing and swapping, and claim: moving
 * segments from list to list without a copy.
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
#include "inline_ops.h"

/* ---- basic ------------------------------------------------------------- */

START_TEST(test_init_is_empty_and_allocates_nothing)
{
	struct tu_alloc_stats st;
	struct bl_list l;

	tu_alloc_install(0, 0);
	bl_list_init(&l);
	ck_assert_uint_eq(bl_list_length(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 0);
	ck_assert(bl_list_is_empty(&l));
	ck_assert_int_eq(bl__list_validate(&l), 0);
	bl_list_clear(&l);
	ck_assert(bl_list_is_empty(&l));
	tu_alloc_stats(&st);
	ck_assert_uint_eq(st.allocs, 0);
	tu_alloc_uninstall();
}
END_TEST

/* list.h's inline functions, as inlined here (i = 0) and as exported */
static const struct list_ops inline_list_ops = {
	.name = "inline",
	.init = bl_list_init,
	.length = bl_list_length,
	.num_buffers = bl_list_num_buffers,
	.is_empty = bl_list_is_empty,
};

START_TEST(test_inline_init_and_counts_match_exported_symbols)
{
	const struct list_ops *ops = _i ? &exported_list_ops
					: &inline_list_ops;
	struct bl_ptr p;
	struct bl_list l;

	ck_assert_int_eq(bl_ptr_alloc(&p, 64), 0);
	memset(&l, 0x5a, sizeof(l));	/* init must write every field */
	ops->init(&l);
	ck_assert_msg(bl__list_validate(&l) == 0, "%s", ops->name);
	ck_assert_ptr_eq(l._tail, &l._inl);
	ck_assert_uint_eq(l._len, 0);
	ck_assert_uint_eq(l._nseg, 0);
	ck_assert_uint_eq(l._abuf_next, 0);
	ck_assert_ptr_null(l._abuf);
	ck_assert_ptr_null(l._ext);
	ck_assert_ptr_null(l._lidx);
	ck_assert_ptr_null(l._pool);
	ck_assert_ptr_null(l._inl.next);
	ck_assert_uint_eq(l._inl.start, 0);
	ck_assert_uint_eq(l._inl.count, 0);
	ck_assert_uint_eq(l._inl.cap, BL_LIST_INLINE);
	ck_assert_uint_eq(l._inl._gen, 0);
	ck_assert_uint_eq(ops->length(&l), 0);
	ck_assert_uint_eq(ops->num_buffers(&l), 0);
	ck_assert(ops->is_empty(&l));
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	ck_assert_uint_eq(ops->length(&l), 69);
	ck_assert_uint_eq(ops->num_buffers(&l), 2);
	ck_assert(!ops->is_empty(&l));
	bl_list_clear(&l);
	ck_assert(ops->is_empty(&l));
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_small_append_makes_one_segment)
{
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	tu_assert_str(&l, "hello");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	ck_assert(!bl_list_is_empty(&l));
	/* a lone small list does not pin a large raw */
	ck_assert_uint_le(bl_list_pinned_unused(&l), 4096);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_appends_extend_last_segment)
{
	struct bl_list l;
	struct bl_stats s0 = stats_now(), s1;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "ab", 2), 0);
	ck_assert_int_eq(bl_list_append(&l, "cd", 2), 0);
	ck_assert_int_eq(bl_list_append(&l, "ef", 2), 0);
	s1 = stats_now();
	ck_assert_uint_eq(s1.copied_bytes - s0.copied_bytes, 6);
	tu_assert_str(&l, "abcdef");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_appends_of_every_small_length_land_in_order)
{
	/* lengths 1..20 cover each copy shape of the inline append path */
	static unsigned char want[4096];
	struct bl_list l;
	struct bl_stats s0 = stats_now(), s1;
	size_t off = 0, n = 0;
	uint64_t rng = 7;

	tu_fill(want, sizeof(want), &rng);
	bl_list_init(&l);
	for (size_t len = 1; off + len <= sizeof(want); len = len % 20 + 1) {
		ck_assert_int_eq(bl_list_append(&l, want + off, len), 0);
		off += len;
		n++;
	}
	s1 = stats_now();
	ck_assert_uint_eq(s1.copied_bytes - s0.copied_bytes, off);
	ck_assert_uint_eq(s1.copy_ops - s0.copy_ops, n);
	tu_assert_list_eq(&l, want, off);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_many_small_appends_share_few_raws)
{
	static unsigned char want[8000];
	struct bl_list l;
	struct bl_raw *seen[64];
	unsigned nseen = 0, n;
	uint64_t rng = 42;

	tu_fill(want, sizeof(want), &rng);
	bl_list_init(&l);
	for (int i = 0; i < 1000; i++)
		ck_assert_int_eq(bl_list_append(&l, want + 8 * i, 8), 0);
	tu_assert_list_eq(&l, want, sizeof(want));
	n = bl_list_num_buffers(&l);
	ck_assert_uint_le(n, 16);
	for (unsigned i = 0; i < n; i++) {
		struct bl_raw *r = tu_seg_of(&l, i).raw;
		unsigned j;

		for (j = 0; j < nseen && seen[j] != r; j++)
			;
		if (j == nseen)
			seen[nseen++] = r;
	}
	ck_assert_uint_le(nseen, 16);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_zero_length_is_never_stored)
{
	struct bl_ptr p = BL_PTR_INIT, e = BL_PTR_INIT, none = BL_PTR_INIT;
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_ptr_alloc(&p, 8), 0);
	ck_assert_int_eq(bl_ptr_slice(&e, &p, 3, 0), 0);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	ck_assert_int_eq(bl_list_append(&l, "x", 0), 0);
	ck_assert_int_eq(bl_list_append_zero(&l, 0), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &none), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &e), 0);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &e), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 0);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	/* the empty slice was not shared */
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &e), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	tu_assert_str(&l, "abc");
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	bl_list_clear(&l);
	bl_ptr_release(&e);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_append_zero_writes_zeros)
{
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "ab", 2), 0);
	ck_assert_int_eq(bl_list_append_zero(&l, 5), 0);
	ck_assert_int_eq(bl_list_append(&l, "c", 1), 0);
	tu_assert_list_eq(&l, "ab\0\0\0\0\0c", 8);
	ck_assert_int_eq(bl_list_append_zero(&l, 100000), 0);
	ck_assert_uint_eq(bl_list_length(&l), 100008);
	{
		unsigned char *flat = tu_flatten(&l);

		for (size_t i = 8; i < 100008; i++)
			ck_assert_uint_eq(flat[i], 0);
		free(flat);
	}
	ck_assert_int_eq(bl__list_validate(&l), 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_large_append_is_copied_whole)
{
	static unsigned char want[70000];
	struct bl_list l;
	uint64_t rng = 7, c0;

	tu_fill(want, sizeof(want), &rng);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "head", 4), 0);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_append(&l, want, sizeof(want)), 0);
	ck_assert_uint_eq(copied_now() - c0, sizeof(want));
	ck_assert_uint_eq(bl_list_length(&l), 4 + sizeof(want));
	{
		unsigned char *flat = tu_flatten(&l);

		ck_assert_mem_eq(flat, "head", 4);
		ck_assert(memcmp(flat + 4, want, sizeof(want)) == 0);
		free(flat);
	}
	ck_assert_int_eq(bl__list_validate(&l), 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_append_ptr_shares_without_copy)
{
	struct bl_ptr p = BL_PTR_INIT;
	struct bl_list l;
	struct iovec iov[2];
	uint64_t c0;

	ck_assert_int_eq(bl_ptr_alloc(&p, 10), 0);
	memcpy(bl_ptr_data(&p), "0123456789", 10);
	bl_list_init(&l);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, iov, 2), 1);
	ck_assert_ptr_eq(iov[0].iov_base, bl_ptr_data(&p));
	bl_ptr_release(&p);
	tu_assert_str(&l, "0123456789");
	bl_list_clear(&l);
}
END_TEST

/* Slices [0, 4) and [@boff, 10) of "0123456789", appended in order. */
struct two_slices {
	struct bl_ptr p, a, b;
	struct bl_list l;
};

static void two_slices_make(struct two_slices *s, size_t boff)
{
	s->p = s->a = s->b = (struct bl_ptr)BL_PTR_INIT;
	ck_assert_int_eq(bl_ptr_alloc(&s->p, 10), 0);
	memcpy(bl_ptr_data(&s->p), "0123456789", 10);
	ck_assert_int_eq(bl_ptr_slice(&s->a, &s->p, 0, 4), 0);
	ck_assert_int_eq(bl_ptr_slice(&s->b, &s->p, boff, 10 - boff), 0);
	bl_list_init(&s->l);
	ck_assert_int_eq(bl_list_append_ptr(&s->l, &s->a), 0);
	ck_assert_int_eq(bl_list_append_ptr(&s->l, &s->b), 0);
}

/* Clears the list, which held @nref - 3 references, and the slices. */
static void two_slices_free(struct two_slices *s, unsigned nref)
{
	ck_assert_uint_eq(bl_raw_nref(s->p.raw), nref);
	bl_list_clear(&s->l);
	ck_assert_uint_eq(bl_raw_nref(s->p.raw), 3);
	bl_ptr_release(&s->a);
	bl_ptr_release(&s->b);
	bl_ptr_release(&s->p);
}

START_TEST(test_append_ptr_continuing_slice_extends_segment)
{
	struct two_slices s;

	two_slices_make(&s, 4);
	tu_assert_str(&s.l, "0123456789");
	ck_assert_uint_eq(bl_list_num_buffers(&s.l), 1);
	/* p, a, b and the list's one segment */
	two_slices_free(&s, 4);
}
END_TEST

START_TEST(test_append_ptr_gap_makes_new_segment)
{
	struct two_slices s;

	two_slices_make(&s, 5);
	tu_assert_str(&s.l, "012356789");
	ck_assert_uint_eq(bl_list_num_buffers(&s.l), 2);
	/* the same bytes out of order do not merge either */
	ck_assert_int_eq(bl_list_append_ptr(&s.l, &s.a), 0);
	tu_assert_str(&s.l, "0123567890123");
	ck_assert_uint_eq(bl_list_num_buffers(&s.l), 3);
	two_slices_free(&s, 6);
}
END_TEST

START_TEST(test_append_ptr_move_takes_reference)
{
	struct bl_ptr p = BL_PTR_INIT, keep = BL_PTR_INIT;
	struct bl_list l;

	ck_assert_int_eq(bl_ptr_alloc(&p, 3), 0);
	memcpy(bl_ptr_data(&p), "xyz", 3);
	bl_ptr_copy(&keep, &p);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_ptr_null(p.raw);
	ck_assert_uint_eq(p.len, 0);
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 2);
	tu_assert_str(&l, "xyz");
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 1);
	bl_ptr_release(&keep);
}
END_TEST

START_TEST(test_append_list_shares)
{
	struct bl_list src, l;
	struct bl_raw *r[4];
	uint64_t c0;

	tu_make_abc(&src);
	for (unsigned i = 0; i < 4; i++)
		r[i] = tu_seg_of(&src, i).raw;
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "xy", 2), 0);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_append_list(&l, &src), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_str(&l, "xyABCDEFGHIJ");
	tu_assert_str(&src, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&src), 4);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), 2);
	/* appending an empty list changes nothing */
	{
		struct bl_list e;

		bl_list_init(&e);
		ck_assert_int_eq(bl_list_append_list(&l, &e), 0);
		tu_assert_str(&l, "xyABCDEFGHIJ");
	}
	bl_list_clear(&src);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), 1);
	tu_assert_str(&l, "xyABCDEFGHIJ");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_prepend_ptr_shares_at_front)
{
	struct bl_ptr p = BL_PTR_INIT;
	struct bl_list l;
	char want[200];

	ck_assert_int_eq(bl_ptr_alloc(&p, 6), 0);
	memcpy(bl_ptr_data(&p), "hello ", 6);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "world", 5), 0);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &p), 0);
	tu_assert_str(&l, "hello world");
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	bl_ptr_release(&p);
	bl_list_clear(&l);

	/* many prepends, across chunks */
	bl_list_init(&l);
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(bl_ptr_alloc(&p, 2), 0);
		bl_ptr_data(&p)[0] = (char)('0' + i % 10);
		bl_ptr_data(&p)[1] = '.';
		ck_assert_int_eq(bl_list_prepend_ptr(&l, &p), 0);
		bl_ptr_release(&p);
		ck_assert_int_eq(bl__list_validate(&l), 0);
	}
	for (int i = 0; i < 100; i++) {
		want[2 * i] = (char)('0' + (99 - i) % 10);
		want[2 * i + 1] = '.';
	}
	tu_assert_list_eq(&l, want, 200);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 100);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_clear_drops_references_and_list_is_reusable)
{
	struct bl_list l;
	struct bl_ptr p = BL_PTR_INIT;

	bl_list_init(&l);
	ck_assert_int_eq(bl_ptr_alloc(&p, 4), 0);
	memcpy(bl_ptr_data(&p), "abcd", 4);
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 51);
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
	ck_assert(bl_list_is_empty(&l));
	ck_assert_uint_eq(bl_list_num_buffers(&l), 0);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_int_eq(bl_list_append(&l, "again", 5), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	tu_assert_str(&l, "againabcd");
	bl_list_clear(&l);
	bl_list_clear(&l);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_swap_exchanges_inline_and_chunked_lists)
{
	static char big[300];
	struct bl_list a, b, e;

	for (int i = 0; i < 300; i++)
		big[i] = (char)('a' + i % 26);
	bl_list_init(&a);
	bl_list_init(&b);
	bl_list_init(&e);
	ck_assert_int_eq(bl_list_append(&a, "one", 3), 0);
	tu_append_fixed(&b, big, 300, 3);
	ck_assert_uint_eq(bl_list_num_buffers(&b), 100);
	bl_list_swap(&a, &b);
	tu_assert_list_eq(&a, big, 300);
	tu_assert_str(&b, "one");
	ck_assert_uint_eq(bl_list_num_buffers(&a), 100);
	/* both keep working after the move of their inline chunk */
	ck_assert_int_eq(bl_list_append(&a, "!", 1), 0);
	ck_assert_int_eq(bl_list_append(&b, "two", 3), 0);
	tu_append_fixed(&b, "xyz", 3, 1);
	tu_assert_str(&b, "onetwoxyz");
	ck_assert_int_eq(bl__list_validate(&a), 0);
	ck_assert_uint_eq(bl_list_length(&a), 301);
	bl_list_swap(&a, &e);
	ck_assert(bl_list_is_empty(&a));
	ck_assert_int_eq(bl__list_validate(&a), 0);
	ck_assert_uint_eq(bl_list_length(&e), 301);
	ck_assert_int_eq(bl__list_validate(&e), 0);
	bl_list_clear(&a);
	bl_list_clear(&b);
	bl_list_clear(&e);
}
END_TEST

START_TEST(test_clear_frees_every_raw)
{
	struct bl_list l;
	struct bl_stats s0, s1;
	static char data[5000];

	bl_list_init(&l);
	s0 = stats_now();
	tu_append_fixed(&l, data, sizeof(data), 10);
	bl_list_clear(&l);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_created - s0.raws_created, 500);
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 500);
}
END_TEST

/*
 * NULL with a length is a caller's bug, not a request for zeros (that is
 * bl_list_append_zero / bl_list_zero): -EINVAL and nothing written; NULL
 * with length 0 is a harmless no-op.
 */
START_TEST(test_null_data_with_length_is_einval)
{
	struct bl_list l;
	char out[8];

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, NULL, 5), -EINVAL);
	ck_assert_uint_eq(bl_list_length(&l), 0);
	ck_assert_int_eq(bl_list_append(&l, NULL, 0), 0);
	ck_assert_int_eq(bl_list_append(&l, "abcdef", 6), 0);
	/* the frameless fast path (a segment growing) and large appends too */
	ck_assert_int_eq(bl_list_append(&l, NULL, 3), -EINVAL);
	ck_assert_int_eq(bl_list_append(&l, NULL, 100000), -EINVAL);
	tu_assert_list_eq(&l, "abcdef", 6);

	ck_assert_int_eq(bl_list_copy_in(&l, 1, 3, NULL), -EINVAL);
	ck_assert_int_eq(bl_list_copy_in(&l, 1, 0, NULL), 0);
	tu_assert_list_eq(&l, "abcdef", 6);

	ck_assert_int_eq(bl_list_copy_out(&l, 0, 3, NULL), -EINVAL);
	ck_assert_int_eq(bl_list_copy_out(&l, 0, 0, NULL), 0);
	ck_assert_int_eq(bl_list_copy_out(&l, 2, 3, out), 0);
	ck_assert_mem_eq(out, "cde", 3);
	bl_list_clear(&l);
}
END_TEST

/* ---- claim ------------------------------------------------------------- */

START_TEST(test_claim_append_moves_without_copy)
{
	struct bl_list l, src;
	struct bl_raw *r[4];
	uint64_t c0;

	bl_list_init(&l);
	tu_append_fixed(&l, "abc", 3, 2);
	tu_make_abc(&src);
	for (unsigned i = 0; i < 4; i++)
		r[i] = tu_seg_of(&src, i).raw;
	c0 = copied_now();
	ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_str(&l, "abcABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 6);
	ck_assert(bl_list_is_empty(&src));
	ck_assert_uint_eq(bl_list_num_buffers(&src), 0);
	ck_assert_int_eq(bl__list_validate(&src), 0);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), 1);
	/* src is usable again and independent of l */
	ck_assert_int_eq(bl_list_append(&src, "z", 1), 0);
	tu_assert_str(&src, "z");
	tu_assert_str(&l, "abcABCDEFGHIJ");
	bl_list_clear(&l);
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_claim_append_into_empty)
{
	struct bl_list l, src;

	bl_list_init(&l);
	tu_make_abc(&src);
	ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
	tu_assert_str(&l, "ABCDEFGHIJ");
	tu_assert_str(&src, "");
	/* and from an empty source */
	ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
	tu_assert_str(&l, "ABCDEFGHIJ");
	ck_assert_int_eq(bl_list_claim_prepend(&l, &src), 0);
	tu_assert_str(&l, "ABCDEFGHIJ");
	bl_list_clear(&l);
}
END_TEST

/* Claims a 1000-segment list into @l (holding @pre first) at either end. */
static void claim_many(const char *pre, bool prepend)
{
	static unsigned char data[4000];
	struct bl_list l, src;
	struct tu_alloc_stats st;
	unsigned char *want;
	size_t plen = strlen(pre);
	struct bl_raw *r0;
	uint64_t rng = 99, c0;
	int ret;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	bl_list_init(&src);
	ck_assert_int_eq(bl_list_append(&l, pre, plen), 0);
	tu_append_fixed(&src, data, sizeof(data), 4);
	ck_assert_uint_eq(bl_list_num_buffers(&src), 1000);
	r0 = tu_seg_of(&src, 0).raw;
	c0 = copied_now();
	tu_alloc_install(0, 0);
	ret = prepend ? bl_list_claim_prepend(&l, &src) :
			bl_list_claim_append(&l, &src);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_int_eq(ret, 0);
	/* O(1): a chunk for the inline slots at most, no payload copy */
	ck_assert_uint_le(st.allocs, prepend ? 2 : 1);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_uint_eq(bl_raw_nref(r0), 1);
	want = malloc(plen + sizeof(data));
	ck_assert_ptr_nonnull(want);
	if (prepend) {
		memcpy(want, data, sizeof(data));
		memcpy(want + sizeof(data), pre, plen);
	} else {
		memcpy(want, pre, plen);
		memcpy(want + plen, data, sizeof(data));
	}
	tu_assert_list_eq(&l, want, plen + sizeof(data));
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1000 + (plen ? 1 : 0));
	tu_assert_list_eq(&src, "", 0);
	ck_assert_int_eq(bl_list_append(&src, "q", 1), 0);
	tu_assert_str(&src, "q");
	ck_assert_int_eq(bl_list_append(&l, "!", 1), 0);
	ck_assert_uint_eq(bl_list_length(&l), plen + sizeof(data) + 1);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	free(want);
	bl_list_clear(&l);
	bl_list_clear(&src);
}

START_TEST(test_claim_append_1000_segments_into_empty)
{
	claim_many("", false);
}
END_TEST

START_TEST(test_claim_append_1000_segments_into_nonempty)
{
	claim_many("prefix", false);
}
END_TEST

START_TEST(test_claim_prepend_1000_segments_into_empty)
{
	claim_many("", true);
}
END_TEST

START_TEST(test_claim_prepend_1000_segments_into_nonempty)
{
	claim_many("suffix", true);
}
END_TEST

START_TEST(test_claim_prepend_moves_without_copy)
{
	struct bl_list l, src;
	struct bl_raw *r;
	uint64_t c0;

	bl_list_init(&l);
	tu_append_fixed(&l, "xyz", 3, 1);
	tu_make_abc(&src);
	r = tu_seg_of(&src, 1).raw;
	c0 = copied_now();
	ck_assert_int_eq(bl_list_claim_prepend(&l, &src), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_str(&l, "ABCDEFGHIJxyz");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 7);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	tu_assert_str(&src, "");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_claim_self_is_einval)
{
	struct bl_list l;

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_claim_append(&l, &l), -EINVAL);
	tu_assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_claim_chains_of_lists_match_model)
{
	static unsigned char model[20000];
	size_t mlen = 0;
	struct bl_list l;
	uint64_t rng = 1234;

	bl_list_init(&l);
	for (int round = 0; round < 200; round++) {
		unsigned char piece[64];
		size_t n = 1 + tu_rand(&rng) % 64;
		struct bl_list src;

		tu_fill(piece, n, &rng);
		bl_list_init(&src);
		tu_append_segmented(&src, piece, n, 1 + tu_rand(&rng) % 9,
				    (int)(tu_rand(&rng) & 1), &rng);
		if (tu_rand(&rng) & 1) {
			ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
			memcpy(model + mlen, piece, n);
		} else {
			ck_assert_int_eq(bl_list_claim_prepend(&l, &src), 0);
			memmove(model + n, model, mlen);
			memcpy(model, piece, n);
		}
		mlen += n;
		tu_assert_list_eq(&src, "", 0);
		tu_assert_list_eq(&l, model, mlen);
		bl_list_clear(&src);
	}
	bl_list_clear(&l);
}
END_TEST

int main(void)
{
	const TTest *append_tests[] = {
		test_init_is_empty_and_allocates_nothing,
		test_small_append_makes_one_segment,
		test_appends_extend_last_segment,
		test_appends_of_every_small_length_land_in_order,
		test_many_small_appends_share_few_raws,
		test_zero_length_is_never_stored,
		test_append_zero_writes_zeros,
		test_null_data_with_length_is_einval,
		test_large_append_is_copied_whole,
		test_append_ptr_shares_without_copy,
		test_append_ptr_continuing_slice_extends_segment,
		test_append_ptr_gap_makes_new_segment,
		test_append_ptr_move_takes_reference,
		test_append_list_shares,
		test_prepend_ptr_shares_at_front,
		test_clear_drops_references_and_list_is_reusable,
		test_swap_exchanges_inline_and_chunked_lists,
		test_clear_frees_every_raw,
		NULL
	};
	const struct tu_loop append_loops[] = {
		{ test_inline_init_and_counts_match_exported_symbols, 0, 2 },
		{ NULL, 0, 0 }
	};
	const TTest *claim_tests[] = {
		test_claim_append_moves_without_copy,
		test_claim_append_into_empty,
		test_claim_append_1000_segments_into_empty,
		test_claim_append_1000_segments_into_nonempty,
		test_claim_prepend_1000_segments_into_empty,
		test_claim_prepend_1000_segments_into_nonempty,
		test_claim_prepend_moves_without_copy,
		test_claim_self_is_einval,
		test_claim_chains_of_lists_match_model,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("append", append_tests, .loops = append_loops),
		TU_GROUP("claim", claim_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("list_append", groups));
}
