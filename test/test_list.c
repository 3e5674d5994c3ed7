/* SPDX-License-Identifier: MIT */
/*
 * test_list.c - the list layer: every function of list.h, with its error
 * paths, zero-copy accounting and reference ownership.  Many behaviours
 * follow the ones Ceph's own bufferlist unit tests pin down.
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

/* ---- helpers ----------------------------------------------------------- */

static void assert_str(const struct bl_list *l, const char *s)
{
	tu_assert_list_eq(l, s, strlen(s));
}

/* Appends a segment of @len bytes at address offset @skew of a new raw. */
static struct bl_raw *add_skewed(struct bl_list *l, const void *data,
				 size_t len, size_t skew)
{
	struct bl_ptr p = BL_PTR_INIT, s = BL_PTR_INIT;
	struct bl_raw *r;

	ck_assert_int_eq(bl_ptr_alloc(&p, len + skew), 0);
	memcpy(bl_ptr_data(&p) + skew, data, len);
	ck_assert_int_eq(bl_ptr_slice(&s, &p, skew, len), 0);
	bl_ptr_release(&p);
	r = s.raw;
	ck_assert_int_eq(bl_list_append_ptr_move(l, &s), 0);
	return r;
}

/* Appends a segment over an aligned raw. */
static struct bl_raw *add_aligned(struct bl_list *l, const void *data,
				  size_t len, size_t align)
{
	struct bl_raw *r = bl_raw_create_aligned(len, align);
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	memcpy(bl_raw_data(r), data, len);
	bl_ptr_from_raw(&p, r);
	ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
	return r;
}

/* Appends a segment over static memory. */
static struct bl_raw *add_static(struct bl_list *l, const void *data,
				 size_t len)
{
	struct bl_raw *r = bl_raw_create_static(data, len);
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
	return r;
}

/* Segment @i of @l (borrowed: the list keeps its reference). */
static struct bl_ptr seg_of(const struct bl_list *l, unsigned i)
{
	struct bl_ptr p = BL_PTR_INIT, ret;

	ck_assert_int_eq(bl_list_get_ptr(l, i, &p), 0);
	ret = p;
	bl_ptr_release(&p);
	return ret;
}

/* "ABCDEFGHIJ" as ABC DEF GHI J, each segment its own raw. */
static void make_abc(struct bl_list *l)
{
	bl_list_init(l);
	tu_append_fixed(l, "ABCDEFGHIJ", 10, 3);
	ck_assert_uint_eq(bl_list_num_buffers(l), 4);
}

/* A snapshot of a list's bytes and segment count. */
struct snap {
	unsigned char *b;
	size_t len;
	unsigned nseg;
};

static void snap_take(struct snap *s, const struct bl_list *l)
{
	s->b = tu_flatten(l);
	s->len = bl_list_length(l);
	s->nseg = bl_list_num_buffers(l);
}

static void snap_check(struct snap *s, const struct bl_list *l)
{
	tu_assert_list_eq(l, s->b, s->len);
	ck_assert_uint_eq(bl_list_num_buffers(l), s->nseg);
}

static void snap_free(struct snap *s)
{
	free(s->b);
	s->b = NULL;
}

/* Does every segment start on @mem_align, all but the last @size_align long? */
static bool is_aligned(const struct bl_list *l, size_t size_align,
		       size_t mem_align)
{
	unsigned n = bl_list_num_buffers(l);

	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p = seg_of(l, i);

		if ((uintptr_t)bl_ptr_data(&p) % mem_align ||
		    (i + 1 < n && p.len % size_align))
			return false;
	}
	return true;
}

/* Every segment starts on @mem_align, all but the last are @size_align long. */
static void assert_aligned(const struct bl_list *l, size_t size_align,
			   size_t mem_align)
{
	unsigned n = bl_list_num_buffers(l);

	ck_assert_int_eq(bl__list_validate(l), 0);
	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p = seg_of(l, i);

		ck_assert_msg((uintptr_t)bl_ptr_data(&p) % mem_align == 0,
			      "segment %u of %u at %p not %zu-aligned", i, n,
			      (void *)bl_ptr_data(&p), mem_align);
		if (i + 1 < n)
			ck_assert_msg(p.len % size_align == 0,
				      "segment %u of %u is %zu bytes", i, n,
				      p.len);
	}
}

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
	assert_str(&l, "hello");
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
	assert_str(&l, "abcdef");
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
		struct bl_raw *r = seg_of(&l, i).raw;
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
	assert_str(&l, "abc");
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
	assert_str(&l, "0123456789");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_append_ptr_continuing_slice_extends_segment)
{
	struct bl_ptr p = BL_PTR_INIT, a = BL_PTR_INIT, b = BL_PTR_INIT;
	struct bl_list l;

	ck_assert_int_eq(bl_ptr_alloc(&p, 10), 0);
	memcpy(bl_ptr_data(&p), "0123456789", 10);
	ck_assert_int_eq(bl_ptr_slice(&a, &p, 0, 4), 0);
	ck_assert_int_eq(bl_ptr_slice(&b, &p, 4, 6), 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr(&l, &a), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &b), 0);
	assert_str(&l, "0123456789");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	/* p, a, b and the list's one segment */
	ck_assert_uint_eq(bl_raw_nref(p.raw), 4);
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 3);
	bl_ptr_release(&a);
	bl_ptr_release(&b);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_append_ptr_gap_makes_new_segment)
{
	struct bl_ptr p = BL_PTR_INIT, a = BL_PTR_INIT, b = BL_PTR_INIT;
	struct bl_list l;

	ck_assert_int_eq(bl_ptr_alloc(&p, 10), 0);
	memcpy(bl_ptr_data(&p), "0123456789", 10);
	ck_assert_int_eq(bl_ptr_slice(&a, &p, 0, 4), 0);
	ck_assert_int_eq(bl_ptr_slice(&b, &p, 5, 5), 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr(&l, &a), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &b), 0);
	assert_str(&l, "012356789");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	/* the same bytes out of order do not merge either */
	ck_assert_int_eq(bl_list_append_ptr(&l, &a), 0);
	assert_str(&l, "0123567890123");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 6);
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 3);
	bl_ptr_release(&a);
	bl_ptr_release(&b);
	bl_ptr_release(&p);
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
	assert_str(&l, "xyz");
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

	make_abc(&src);
	for (unsigned i = 0; i < 4; i++)
		r[i] = seg_of(&src, i).raw;
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "xy", 2), 0);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_append_list(&l, &src), 0);
	ck_assert_uint_eq(copied_now(), c0);
	assert_str(&l, "xyABCDEFGHIJ");
	assert_str(&src, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&src), 4);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), 2);
	/* appending an empty list changes nothing */
	{
		struct bl_list e;

		bl_list_init(&e);
		ck_assert_int_eq(bl_list_append_list(&l, &e), 0);
		assert_str(&l, "xyABCDEFGHIJ");
	}
	bl_list_clear(&src);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), 1);
	assert_str(&l, "xyABCDEFGHIJ");
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
	assert_str(&l, "hello world");
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
	assert_str(&l, "againabcd");
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
	assert_str(&b, "one");
	ck_assert_uint_eq(bl_list_num_buffers(&a), 100);
	/* both keep working after the move of their inline chunk */
	ck_assert_int_eq(bl_list_append(&a, "!", 1), 0);
	ck_assert_int_eq(bl_list_append(&b, "two", 3), 0);
	tu_append_fixed(&b, "xyz", 3, 1);
	assert_str(&b, "onetwoxyz");
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

/* ---- claim ------------------------------------------------------------- */

START_TEST(test_claim_append_moves_without_copy)
{
	struct bl_list l, src;
	struct bl_raw *r[4];
	uint64_t c0;

	bl_list_init(&l);
	tu_append_fixed(&l, "abc", 3, 2);
	make_abc(&src);
	for (unsigned i = 0; i < 4; i++)
		r[i] = seg_of(&src, i).raw;
	c0 = copied_now();
	ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
	ck_assert_uint_eq(copied_now(), c0);
	assert_str(&l, "abcABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 6);
	ck_assert(bl_list_is_empty(&src));
	ck_assert_uint_eq(bl_list_num_buffers(&src), 0);
	ck_assert_int_eq(bl__list_validate(&src), 0);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), 1);
	/* src is usable again and independent of l */
	ck_assert_int_eq(bl_list_append(&src, "z", 1), 0);
	assert_str(&src, "z");
	assert_str(&l, "abcABCDEFGHIJ");
	bl_list_clear(&l);
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_claim_append_into_empty)
{
	struct bl_list l, src;

	bl_list_init(&l);
	make_abc(&src);
	ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
	assert_str(&l, "ABCDEFGHIJ");
	assert_str(&src, "");
	/* and from an empty source */
	ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
	assert_str(&l, "ABCDEFGHIJ");
	ck_assert_int_eq(bl_list_claim_prepend(&l, &src), 0);
	assert_str(&l, "ABCDEFGHIJ");
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
	r0 = seg_of(&src, 0).raw;
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
	assert_str(&src, "q");
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
	make_abc(&src);
	r = seg_of(&src, 1).raw;
	c0 = copied_now();
	ck_assert_int_eq(bl_list_claim_prepend(&l, &src), 0);
	ck_assert_uint_eq(copied_now(), c0);
	assert_str(&l, "ABCDEFGHIJxyz");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 7);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	assert_str(&src, "");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_claim_self_is_einval)
{
	struct bl_list l;

	make_abc(&l);
	ck_assert_int_eq(bl_list_claim_append(&l, &l), -EINVAL);
	assert_str(&l, "ABCDEFGHIJ");
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

/* ---- splice ------------------------------------------------------------ */

static void splice_case(size_t off, size_t len, const char *left,
			const char *taken)
{
	struct bl_list l, c;
	uint64_t c0;

	make_abc(&l);
	bl_list_init(&c);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_splice(&l, off, len, &c), 0);
	ck_assert_uint_eq(copied_now(), c0);
	assert_str(&l, left);
	assert_str(&c, taken);
	bl_list_clear(&l);
	bl_list_clear(&c);

	/* and without claim_by */
	make_abc(&l);
	ck_assert_int_eq(bl_list_splice(&l, off, len, NULL), 0);
	assert_str(&l, left);
	bl_list_clear(&l);
}

START_TEST(test_splice_at_start)
{
	splice_case(0, 2, "CDEFGHIJ", "AB");
	splice_case(0, 3, "DEFGHIJ", "ABC");
	splice_case(0, 4, "EFGHIJ", "ABCD");
}
END_TEST

START_TEST(test_splice_in_middle)
{
	splice_case(4, 3, "ABCDHIJ", "EFG");
	splice_case(3, 6, "ABCJ", "DEFGHI");
	splice_case(2, 5, "ABHIJ", "CDEFG");
}
END_TEST

START_TEST(test_splice_at_end)
{
	splice_case(7, 3, "ABCDEFG", "HIJ");
	splice_case(9, 1, "ABCDEFGHI", "J");
	splice_case(5, 5, "ABCDE", "FGHIJ");
}
END_TEST

START_TEST(test_splice_whole_list_moves_everything)
{
	struct bl_list l, c;
	struct bl_raw *r[4];

	make_abc(&l);
	for (unsigned i = 0; i < 4; i++)
		r[i] = seg_of(&l, i).raw;
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_splice(&l, 0, 10, &c), 0);
	assert_str(&l, "");
	assert_str(&c, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&c), 4);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), 1);
	bl_list_clear(&c);
}
END_TEST

START_TEST(test_splice_inside_one_segment_splits_it)
{
	struct bl_list l, c;
	struct bl_raw *def;

	make_abc(&l);
	def = seg_of(&l, 1).raw;
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_splice(&l, 4, 1, &c), 0);
	assert_str(&l, "ABCDFGHIJ");
	assert_str(&c, "E");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5);
	/* "D" and "F" in l, "E" in c: only the cut gained a reference */
	ck_assert_uint_eq(bl_raw_nref(def), 3);
	ck_assert_ptr_eq(seg_of(&c, 0).raw, def);
	bl_list_clear(&c);
	ck_assert_uint_eq(bl_raw_nref(def), 2);
	ck_assert_int_eq(bl_list_splice(&l, 3, 1, NULL), 0);
	assert_str(&l, "ABCFGHIJ");
	ck_assert_uint_eq(bl_raw_nref(def), 1);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_splice_without_claim_by_releases)
{
	struct bl_list l;
	struct bl_stats s0, s1;

	make_abc(&l);
	s0 = stats_now();
	ck_assert_int_eq(bl_list_splice(&l, 3, 6, NULL), 0);
	s1 = stats_now();
	assert_str(&l, "ABCJ");
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 2);
	ck_assert_uint_eq(s1.copied_bytes, s0.copied_bytes);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_splice_claim_by_appends)
{
	struct bl_list l, c;

	make_abc(&l);
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_append(&c, "xy", 2), 0);
	ck_assert_int_eq(bl_list_splice(&l, 0, 2, &c), 0);
	assert_str(&c, "xyAB");
	ck_assert_int_eq(bl_list_splice(&l, 6, 2, &c), 0);
	assert_str(&c, "xyABIJ");
	assert_str(&l, "CDEFGH");
	bl_list_clear(&l);
	bl_list_clear(&c);
}
END_TEST

START_TEST(test_splice_out_of_range_changes_nothing)
{
	static const struct { size_t off, len; } bad[] = {
		{ 11, 0 }, { 5, 6 }, { 0, 11 }, { 10, 1 }, { 5, SIZE_MAX },
		{ 1, SIZE_MAX }, { SIZE_MAX, 1 }, { SIZE_MAX, 0 },
		{ SIZE_MAX - 2, 4 },
	};
	struct bl_list l, c;

	make_abc(&l);
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_append(&c, "xy", 2), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(bl_list_splice(&l, bad[i].off, bad[i].len, &c) ==
			      -ERANGE, "splice(%zu, %zu) accepted",
			      bad[i].off, bad[i].len);
		ck_assert_int_eq(bl_list_splice(&l, bad[i].off, bad[i].len,
						NULL), -ERANGE);
		assert_str(&l, "ABCDEFGHIJ");
		ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
		assert_str(&c, "xy");
	}
	bl_list_clear(&l);
	bl_list_clear(&c);
}
END_TEST

START_TEST(test_splice_into_itself_is_einval)
{
	struct bl_list l;

	make_abc(&l);
	ck_assert_int_eq(bl_list_splice(&l, 2, 3, &l), -EINVAL);
	assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_splice_empty_range_changes_nothing)
{
	struct bl_list l, c;

	make_abc(&l);
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_splice(&l, 10, 0, &c), 0);
	ck_assert_int_eq(bl_list_splice(&l, 3, 0, &c), 0);
	ck_assert_int_eq(bl_list_splice(&l, 4, 0, NULL), 0);
	assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	assert_str(&c, "");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_splice_random_matches_model)
{
	uint64_t rng = tu_seed("test_splice_random_matches_model");

	for (int round = 0; round < 400; round++) {
		unsigned char data[300], model[300], taken[300];
		size_t len = tu_rand(&rng) % 300, off, n, tlen = 0;
		struct bl_list l, c;
		bool claim = tu_rand(&rng) & 1;

		tu_fill(data, len, &rng);
		bl_list_init(&l);
		bl_list_init(&c);
		tu_append_segmented(&l, data, len, 1 + tu_rand(&rng) % 40,
				    (int)(tu_rand(&rng) & 1), &rng);
		off = tu_rand(&rng) % (len + 1);
		n = tu_rand(&rng) % (len - off + 1);
		ck_assert_int_eq(bl_list_splice(&l, off, n, claim ? &c : NULL),
				 0);
		memcpy(model, data, off);
		memcpy(model + off, data + off + n, len - off - n);
		if (claim) {
			memcpy(taken, data + off, n);
			tlen = n;
		}
		tu_assert_list_eq(&l, model, len - n);
		tu_assert_list_eq(&c, taken, tlen);
		bl_list_clear(&l);
		bl_list_clear(&c);
	}
}
END_TEST

START_TEST(test_splice_large_list)
{
	static unsigned char data[12000];
	struct bl_list l, c;
	uint64_t rng = 5, c0;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	bl_list_init(&c);
	tu_append_fixed(&l, data, sizeof(data), 4);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3000);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_splice(&l, 3001, 5000, &c), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_list_eq(&c, data + 3001, 5000);
	{
		unsigned char *want = malloc(7000);

		ck_assert_ptr_nonnull(want);
		memcpy(want, data, 3001);
		memcpy(want + 3001, data + 8001, 3999);
		tu_assert_list_eq(&l, want, 7000);
		free(want);
	}
	bl_list_clear(&l);
	bl_list_clear(&c);
}
END_TEST

/*
 * Splices spanning chunks.  A list of 200 two-byte segments, each over its
 * own raw, lies in chunks of 8, 16, 32, 64, 64 and 64 slots: segments
 * 0-7, 8-23, 24-55, 56-119, 120-183, 184-199.
 */
#define CH_NSEG 200

static void make_chunked(struct bl_list *l, unsigned char *data)
{
	uint64_t rng = 99;

	tu_fill(data, 2 * CH_NSEG, &rng);
	bl_list_init(l);
	tu_append_fixed(l, data, 2 * CH_NSEG, 2);
	ck_assert_uint_eq(bl_list_num_buffers(l), CH_NSEG);
}

/*
 * Splices [off, off + len) of the chunked list into a list holding
 * @prefix (may be ""), and checks both lists' bytes, their segment counts
 * (@lseg, @cseg: claim_by's own segments not counted) and that a list
 * still appends after the splice (its tail is right).
 */
static void chunked_case(size_t off, size_t len, const char *prefix,
			 unsigned lseg, unsigned cseg)
{
	unsigned char data[2 * CH_NSEG], want[2 * CH_NSEG + 8];
	size_t plen = strlen(prefix);
	struct bl_list l, c;
	unsigned cseg0;
	uint64_t c0;

	make_chunked(&l, data);
	bl_list_init(&c);
	if (plen)
		ck_assert_int_eq(bl_list_append(&c, prefix, plen), 0);
	cseg0 = bl_list_num_buffers(&c);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_splice(&l, off, len, &c), 0);
	ck_assert_uint_eq(copied_now(), c0);
	memcpy(want, prefix, plen);
	memcpy(want + plen, data + off, len);
	tu_assert_list_eq(&c, want, plen + len);
	ck_assert_uint_eq(bl_list_num_buffers(&c), cseg0 + cseg);
	memcpy(want, data, off);
	memcpy(want + off, data + off + len, 2 * CH_NSEG - off - len);
	tu_assert_list_eq(&l, want, 2 * CH_NSEG - len);
	ck_assert_uint_eq(bl_list_num_buffers(&l), lseg);
	/* both tails are right: appends land at the ends */
	ck_assert_int_eq(bl_list_append(&l, "!", 1), 0);
	want[2 * CH_NSEG - len] = '!';
	tu_assert_list_eq(&l, want, 2 * CH_NSEG - len + 1);
	ck_assert_int_eq(bl_list_append(&c, "?", 1), 0);
	ck_assert_uint_eq(bl_list_length(&c), plen + len + 1);
	ck_assert_int_eq(bl__list_validate(&c), 0);
	bl_list_clear(&l);
	bl_list_clear(&c);
}

START_TEST(test_splice_across_chunks_cutting_both_ends)
{
	/* segments 5 (second byte) .. 130 (first byte): chunks 1 .. 5 */
	chunked_case(11, 2 * 125, "", CH_NSEG - 126 + 2, 126);
	chunked_case(11, 2 * 125, "xy", CH_NSEG - 126 + 2, 126);
	/* adjacent chunks, no chunk between: 20 (second) .. 30 (first) */
	chunked_case(41, 2 * 10, "", CH_NSEG - 11 + 2, 11);
	chunked_case(41, 2 * 10, "xy", CH_NSEG - 11 + 2, 11);
}
END_TEST

START_TEST(test_splice_across_chunks_on_segment_boundaries)
{
	/* segments 10 .. 30 whole: chunks 2 and 3 */
	chunked_case(20, 2 * 21, "xy", CH_NSEG - 21, 21);
	/* chunk 2 whole and segment 24 (chunk 3): chunk 2 goes */
	chunked_case(16, 2 * 17, "", CH_NSEG - 17, 17);
	/* segments 150 .. 199: the last chunk empties and goes */
	chunked_case(300, 2 * CH_NSEG - 300, "xy", 150, 50);
	/* the first chunk whole .. segment 100 */
	chunked_case(0, 2 * 101, "", CH_NSEG - 101, 101);
	/* everything */
	chunked_case(0, 2 * CH_NSEG, "xy", 0, CH_NSEG);
	/* one byte of segment 7 (chunk 1) and one of 8 (chunk 2) */
	chunked_case(15, 2, "", CH_NSEG + 2 - 2, 2);
}
END_TEST

START_TEST(test_splice_across_chunks_from_inline_slot)
{
	unsigned char data[2 * CH_NSEG], want[2 * CH_NSEG + 2];
	struct bl_list l, c;
	struct bl_ptr p = BL_PTR_INIT;

	for (int keep = 0; keep < 2; keep++) {
		make_chunked(&l, data);
		/* a prepended slice sits in the inline slots, before the chunks */
		ck_assert_int_eq(bl_ptr_alloc(&p, 2), 0);
		memcpy(bl_ptr_data(&p), "PQ", 2);
		ck_assert_int_eq(bl_list_prepend_ptr(&l, &p), 0);
		memcpy(want, "PQ", 2);
		memcpy(want + 2, data, 2 * CH_NSEG);
		bl_list_init(&c);
		/* from the inline slice (whole, or its second byte) to segment 9 */
		ck_assert_int_eq(bl_list_splice(&l, keep, 2 + 20 - keep, &c), 0);
		tu_assert_list_eq(&c, want + keep, 22 - keep);
		ck_assert_uint_eq(bl_list_num_buffers(&c), 11);
		ck_assert_uint_eq(bl_raw_nref(p.raw), 2 + keep);
		memmove(want + keep, want + 22, 2 * CH_NSEG - 20);
		tu_assert_list_eq(&l, want, 2 * CH_NSEG + 2 - 22 + keep);
		ck_assert_uint_eq(bl_list_num_buffers(&l), CH_NSEG - 10 + keep);
		ck_assert_int_eq(bl_list_append(&l, "!", 1), 0);
		ck_assert_int_eq(bl__list_validate(&l), 0);
		bl_list_clear(&l);
		bl_list_clear(&c);
		ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
		bl_ptr_release(&p);
	}
}
END_TEST

START_TEST(test_splice_across_chunks_fails_atomically)
{
	unsigned char data[2 * CH_NSEG];
	struct bl_list l, c;
	struct bl_raw *r5, *r130;
	struct snap sl, sc;

	make_chunked(&l, data);
	r5 = seg_of(&l, 5).raw;
	r130 = seg_of(&l, 130).raw;
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_append(&c, "xy", 2), 0);
	snap_take(&sl, &l);
	snap_take(&sc, &c);
	/* the first chunk, then the second (there are middle chunks) */
	for (uint64_t at = 1; at <= 2; at++) {
		tu_alloc_install(at, 1);
		ck_assert_int_eq(bl_list_splice(&l, 11, 250, &c), -ENOMEM);
		tu_alloc_uninstall();
		snap_check(&sl, &l);
		snap_check(&sc, &c);
		ck_assert_uint_eq(bl_raw_nref(r5), 1);
		ck_assert_uint_eq(bl_raw_nref(r130), 1);
	}
	/* adjacent chunks need one */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_splice(&l, 41, 20, &c), -ENOMEM);
	tu_alloc_uninstall();
	snap_check(&sl, &l);
	snap_check(&sc, &c);
	/* with memory: both ends cut, each gains one reference */
	ck_assert_int_eq(bl_list_splice(&l, 11, 250, &c), 0);
	ck_assert_uint_eq(bl_raw_nref(r5), 2);
	ck_assert_uint_eq(bl_raw_nref(r130), 2);
	bl_list_clear(&c);
	ck_assert_uint_eq(bl_raw_nref(r5), 1);
	ck_assert_uint_eq(bl_raw_nref(r130), 1);
	snap_free(&sl);
	snap_free(&sc);
	bl_list_clear(&l);
}
END_TEST

/* ---- substr_of --------------------------------------------------------- */

START_TEST(test_substr_shares_without_copy)
{
	struct bl_list src, d;
	struct bl_raw *r[4];
	uint64_t c0;

	make_abc(&src);
	for (unsigned i = 0; i < 4; i++)
		r[i] = seg_of(&src, i).raw;
	bl_list_init(&d);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 2, 6), 0);
	ck_assert_uint_eq(copied_now(), c0);
	assert_str(&d, "CDEFGH");
	assert_str(&src, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 3);
	ck_assert_uint_eq(bl_raw_nref(r[0]), 2);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 2);
	ck_assert_uint_eq(bl_raw_nref(r[2]), 2);
	ck_assert_uint_eq(bl_raw_nref(r[3]), 1);
	bl_list_clear(&d);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_substr_replaces_dst)
{
	struct bl_list src, d;
	struct bl_ptr old = BL_PTR_INIT;

	make_abc(&src);
	bl_list_init(&d);
	ck_assert_int_eq(bl_ptr_alloc(&old, 3), 0);
	memcpy(bl_ptr_data(&old), "old", 3);
	ck_assert_int_eq(bl_list_append_ptr(&d, &old), 0);
	ck_assert_uint_eq(bl_raw_nref(old.raw), 2);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 0, 10), 0);
	assert_str(&d, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_raw_nref(old.raw), 1);
	bl_ptr_release(&old);
	bl_list_clear(&d);
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_substr_in_place)
{
	struct bl_list l;
	struct bl_raw *first;
	struct bl_stats s0, s1;

	make_abc(&l);
	first = seg_of(&l, 0).raw;
	ck_assert_uint_eq(bl_raw_nref(first), 1);
	s0 = stats_now();
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 4, 5), 0);
	s1 = stats_now();
	assert_str(&l, "EFGHI");
	/* ABC and J are gone, nothing copied */
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 2);
	ck_assert_uint_eq(s1.copied_bytes, s0.copied_bytes);
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 0, 5), 0);
	assert_str(&l, "EFGHI");
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 5, 0), 0);
	assert_str(&l, "");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_substr_out_of_range_leaves_dst)
{
	static const struct { size_t off, len; } bad[] = {
		{ 11, 0 }, { 5, 6 }, { 0, 11 }, { 5, SIZE_MAX },
		{ SIZE_MAX, 1 }, { SIZE_MAX, 0 }, { SIZE_MAX - 1, 3 },
	};
	struct bl_list src, d;

	make_abc(&src);
	bl_list_init(&d);
	ck_assert_int_eq(bl_list_append(&d, "keep", 4), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(bl_list_substr_of(&d, &src, bad[i].off,
						bad[i].len) == -ERANGE,
			      "substr_of(%zu, %zu) accepted", bad[i].off,
			      bad[i].len);
		assert_str(&d, "keep");
		ck_assert_int_eq(bl_list_substr_of(&src, &src, bad[i].off,
						   bad[i].len), -ERANGE);
		assert_str(&src, "ABCDEFGHIJ");
	}
	bl_list_clear(&src);
	bl_list_clear(&d);
}
END_TEST

START_TEST(test_substr_empty_range_at_end)
{
	struct bl_list src, d;

	make_abc(&src);
	bl_list_init(&d);
	ck_assert_int_eq(bl_list_append(&d, "junk", 4), 0);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 10, 0), 0);
	assert_str(&d, "");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 0);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 3, 0), 0);
	assert_str(&d, "");
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 9, 1), 0);
	assert_str(&d, "J");
	bl_list_clear(&src);
	bl_list_clear(&d);
}
END_TEST

START_TEST(test_substr_random_matches_model)
{
	uint64_t rng = tu_seed("test_substr_random_matches_model");

	for (int round = 0; round < 300; round++) {
		unsigned char data[500];
		size_t len = 1 + tu_rand(&rng) % 500, off, n;
		struct bl_list src, d;

		tu_fill(data, len, &rng);
		bl_list_init(&src);
		bl_list_init(&d);
		tu_append_segmented(&src, data, len, 1 + tu_rand(&rng) % 50,
				    (int)(tu_rand(&rng) & 1), &rng);
		off = tu_rand(&rng) % (len + 1);
		n = tu_rand(&rng) % (len - off + 1);
		ck_assert_int_eq(bl_list_substr_of(&d, &src, off, n), 0);
		tu_assert_list_eq(&d, data + off, n);
		tu_assert_list_eq(&src, data, len);
		bl_list_clear(&src);
		bl_list_clear(&d);
	}
}
END_TEST

/* Segments of "ABCDEFGHIJ" as ABC DEF GHI J, each over its own raw. */
static void abc_raws(const struct bl_list *l, struct bl_raw *r[4])
{
	for (unsigned i = 0; i < 4; i++)
		r[i] = seg_of(l, i).raw;
}

START_TEST(test_substr_inside_one_segment_into_empty_allocates_nothing)
{
	struct bl_list src, d;
	struct bl_raw *r[4];
	struct tu_alloc_stats st;
	struct bl_ptr p;

	make_abc(&src);
	abc_raws(&src, r);
	bl_list_init(&d);
	/* every allocation fails: the one-slot path needs none */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 4, 2), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs, 0);
	ck_assert_uint_eq(st.failed, 0);
	assert_str(&d, "EF");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 1);
	p = seg_of(&d, 0);
	ck_assert_ptr_eq(p.raw, r[1]);
	ck_assert_uint_eq(p.off, 1);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 2);
	/* a whole segment, and the last byte of the list */
	bl_list_clear(&d);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 6, 3), 0);
	assert_str(&d, "GHI");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 1);
	bl_list_clear(&d);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 9, 1), 0);
	assert_str(&d, "J");
	ck_assert_uint_eq(bl_raw_nref(r[3]), 2);
	bl_list_clear(&d);
	ck_assert_uint_eq(bl_raw_nref(r[3]), 1);
	assert_str(&src, "ABCDEFGHIJ");
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_substr_inside_one_segment_keeps_dst_append_buffer)
{
	struct bl_list src, d;

	make_abc(&src);
	bl_list_init(&d);
	/* d: no segment, but an append buffer */
	ck_assert_int_eq(bl_list_append(&d, "junk", 4), 0);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 3, 0), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&d), 0);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 1, 2), 0);
	assert_str(&d, "BC");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 1);
	ck_assert_int_eq(bl_list_append(&d, "xy", 2), 0);
	assert_str(&d, "BCxy");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	bl_list_clear(&d);
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_substr_inside_one_segment_replaces_dst)
{
	struct bl_list src, d;
	struct bl_ptr old = BL_PTR_INIT;
	struct bl_raw *r[4];

	make_abc(&src);
	abc_raws(&src, r);
	bl_list_init(&d);
	ck_assert_int_eq(bl_ptr_alloc(&old, 3), 0);
	memcpy(bl_ptr_data(&old), "old", 3);
	ck_assert_int_eq(bl_list_append_ptr(&d, &old), 0);
	ck_assert_int_eq(bl_list_append(&d, "er", 2), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 7, 2), 0);
	tu_alloc_uninstall();
	assert_str(&d, "HI");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 1);
	ck_assert_uint_eq(bl_raw_nref(old.raw), 1);
	ck_assert_uint_eq(bl_raw_nref(r[2]), 2);
	bl_ptr_release(&old);
	bl_list_clear(&d);
	ck_assert_uint_eq(bl_raw_nref(r[2]), 1);
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_substr_in_place_inside_one_segment_keeps_its_raw)
{
	struct bl_list l;
	struct bl_raw *r[4];
	struct bl_stats s0, s1;

	make_abc(&l);
	abc_raws(&l, r);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	s0 = stats_now();
	/* the list holds the raw's only reference while it is replaced */
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 4, 2), 0);
	s1 = stats_now();
	assert_str(&l, "EF");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 3);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 1, 1), 0);
	assert_str(&l, "F");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_substr_across_segments_into_empty_fails_atomically)
{
	struct bl_list src, d;
	struct bl_raw *r[4];

	make_abc(&src);
	abc_raws(&src, r);
	bl_list_init(&d);
	/* two segments fit d's inline slots: no allocation */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 2, 2), 0);
	tu_alloc_uninstall();
	assert_str(&d, "CD");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	/* four need a chunk: refused, d and the references as they were */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 1, 9), -ENOMEM);
	tu_alloc_uninstall();
	assert_str(&d, "CD");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), i < 2 ? 2 : 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 1, 9), 0);
	assert_str(&d, "BCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 4);
	bl_list_clear(&d);
	/* into an empty list, also refused without a trace */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 0, 10), -ENOMEM);
	tu_alloc_uninstall();
	assert_str(&d, "");
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), 1);
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_clear_of_one_slice_and_of_inline_pairs)
{
	struct bl_list src, d;
	struct bl_raw *r[4];
	struct bl_stats s0, s1;

	make_abc(&src);
	abc_raws(&src, r);
	bl_list_init(&d);
	bl_list_clear(&d);	/* empty: nothing to drop */
	assert_str(&d, "");
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 3, 3), 0);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 2);
	bl_list_clear(&d);
	assert_str(&d, "");
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	/* two inline slices */
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 2, 2), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	bl_list_clear(&d);
	ck_assert_uint_eq(bl_raw_nref(r[0]), 1);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	/* a lone slice holding the last reference frees its raw */
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 9, 1), 0);
	bl_list_clear(&src);
	ck_assert_uint_eq(bl_raw_nref(r[3]), 1);
	s0 = stats_now();
	bl_list_clear(&d);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 1);
	assert_str(&d, "");
	ck_assert_int_eq(bl_list_append(&d, "again", 5), 0);
	assert_str(&d, "again");
	bl_list_clear(&d);
	bl_list_clear(NULL);
}
END_TEST

/* ---- copy_out / copy_in / zero ------------------------------------------ */

START_TEST(test_copy_out_ranges)
{
	unsigned char data[200], out[210];
	struct bl_list l;
	uint64_t rng = 77;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	tu_append_segmented(&l, data, sizeof(data), 7, 1, &rng);
	for (size_t off = 0; off <= 200; off += 13) {
		for (size_t n = 0; off + n <= 200; n += 11) {
			memset(out, 0xEE, sizeof(out));
			ck_assert_int_eq(bl_list_copy_out(&l, off, n, out), 0);
			ck_assert(memcmp(out, data + off, n) == 0);
			ck_assert_uint_eq(out[n], 0xEE);
		}
	}
	ck_assert_int_eq(bl_list_copy_out(&l, 200, 0, out), 0);
	memset(out, 0xEE, sizeof(out));
	ck_assert_int_eq(bl_list_copy_out(&l, 201, 0, out), -ERANGE);
	ck_assert_int_eq(bl_list_copy_out(&l, 100, 101, out), -ERANGE);
	ck_assert_int_eq(bl_list_copy_out(&l, 1, SIZE_MAX, out), -ERANGE);
	ck_assert_int_eq(bl_list_copy_out(&l, SIZE_MAX, 2, out), -ERANGE);
	for (size_t i = 0; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xEE);
	tu_assert_list_eq(&l, data, sizeof(data));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_copy_in_writes_across_segments_in_place)
{
	struct bl_list l;
	struct bl_raw *r[4];
	uint64_t c0;

	make_abc(&l);
	for (unsigned i = 0; i < 4; i++)
		r[i] = seg_of(&l, i).raw;
	c0 = copied_now();
	ck_assert_int_eq(bl_list_copy_in(&l, 2, 6, "123456"), 0);
	ck_assert_uint_eq(copied_now() - c0, 6);
	assert_str(&l, "AB123456IJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_ptr_eq(seg_of(&l, i).raw, r[i]);
	ck_assert_int_eq(bl_list_copy_in(&l, 9, 1, "z"), 0);
	ck_assert_int_eq(bl_list_copy_in(&l, 0, 1, "a"), 0);
	ck_assert_int_eq(bl_list_copy_in(&l, 10, 0, "?"), 0);
	assert_str(&l, "aB123456Iz");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_copy_in_shared_raw_is_visible_elsewhere)
{
	struct bl_list l, other;

	make_abc(&l);
	bl_list_init(&other);
	ck_assert_int_eq(bl_list_substr_of(&other, &l, 1, 8), 0);
	ck_assert_int_eq(bl_list_copy_in(&l, 3, 3, "xyz"), 0);
	assert_str(&l, "ABCxyzGHIJ");
	/* written in place, as Ceph does: the sharer sees it */
	assert_str(&other, "BCxyzGHI");
	bl_list_clear(&l);
	bl_list_clear(&other);
}
END_TEST

START_TEST(test_copy_in_static_segment_gets_private_copy)
{
	static const char text[] = "static text!";	/* 12 bytes */
	struct bl_list l, other;
	struct bl_raw *sr;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "<<", 2), 0);
	sr = add_static(&l, text, 12);
	ck_assert_int_eq(bl_list_append(&l, ">>", 2), 0);
	bl_list_init(&other);
	ck_assert_int_eq(bl_list_append_list(&other, &l), 0);
	ck_assert_int_eq(bl_list_copy_in(&l, 1, 9, "[STATIC T"), 0);
	assert_str(&l, "<[STATIC Text!>>");
	ck_assert_str_eq(text, "static text!");
	/* the other list shares the append buffer (written in place) but
	 * still reads the untouched static bytes */
	assert_str(&other, "<[static text!>>");
	ck_assert(bl_raw_is_static(sr));
	for (unsigned i = 0; i < bl_list_num_buffers(&l); i++) {
		struct bl_ptr p = seg_of(&l, i);

		/* no written byte lies on the static raw any more */
		if (p.raw == sr)
			ck_assert_msg(bl_ptr_data(&p) >= text + 8,
				      "segment %u still on the static raw", i);
	}
	bl_list_clear(&l);
	bl_list_clear(&other);
}
END_TEST

START_TEST(test_copy_in_out_of_range_changes_nothing)
{
	struct bl_list l;

	make_abc(&l);
	ck_assert_int_eq(bl_list_copy_in(&l, 11, 0, "x"), -ERANGE);
	ck_assert_int_eq(bl_list_copy_in(&l, 8, 3, "xyz"), -ERANGE);
	ck_assert_int_eq(bl_list_copy_in(&l, 2, SIZE_MAX, "xyz"), -ERANGE);
	ck_assert_int_eq(bl_list_copy_in(&l, SIZE_MAX, 1, "x"), -ERANGE);
	assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_zero_range)
{
	static const char text[] = "STATIC";
	struct bl_list l;

	make_abc(&l);
	add_static(&l, text, 6);
	ck_assert_int_eq(bl_list_zero(&l, 2, 3), 0);
	tu_assert_list_eq(&l, "AB\0\0\0FGHIJSTATIC", 16);
	ck_assert_int_eq(bl_list_zero(&l, 9, 3), 0);
	tu_assert_list_eq(&l, "AB\0\0\0FGHI\0\0\0ATIC", 16);
	ck_assert_str_eq(text, "STATIC");
	ck_assert_int_eq(bl_list_zero(&l, 16, 0), 0);
	ck_assert_int_eq(bl_list_zero(&l, 17, 0), -ERANGE);
	ck_assert_int_eq(bl_list_zero(&l, 10, 7), -ERANGE);
	ck_assert_int_eq(bl_list_zero(&l, 1, SIZE_MAX), -ERANGE);
	tu_assert_list_eq(&l, "AB\0\0\0FGHI\0\0\0ATIC", 16);
	bl_list_clear(&l);
}
END_TEST

/* ---- rebuild ----------------------------------------------------------- */

START_TEST(test_rebuild_makes_one_segment)
{
	struct bl_list l;
	struct bl_ptr held = BL_PTR_INIT, s;
	uint64_t c0;

	make_abc(&l);
	ck_assert_int_eq(bl_list_get_ptr(&l, 1, &held), 0);
	ck_assert_uint_eq(bl_raw_nref(held.raw), 2);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	ck_assert_uint_eq(copied_now() - c0, 10);
	assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	s = seg_of(&l, 0);
	ck_assert_uint_eq((uintptr_t)bl_ptr_data(&s) % 64, 0);
	/* the old raws were released */
	ck_assert_uint_eq(bl_raw_nref(held.raw), 1);
	bl_ptr_release(&held);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_leaves_short_lists)
{
	struct bl_list l;
	struct bl_ptr s;
	uint64_t c0;

	bl_list_init(&l);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	assert_str(&l, "");
	add_skewed(&l, "one", 3, 5);
	s = seg_of(&l, 0);
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	ck_assert_uint_eq(copied_now(), c0);
	assert_str(&l, "one");
	ck_assert_ptr_eq(seg_of(&l, 0).raw, s.raw);
	ck_assert_uint_eq(seg_of(&l, 0).off, s.off);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_aligned_keeps_aligned_list)
{
	static char page[3][8192];
	struct bl_list l;
	struct bl_raw *r[3];
	uint64_t c0;

	memset(page, 'p', sizeof(page));
	bl_list_init(&l);
	r[0] = add_aligned(&l, page[0], 4096, 4096);
	r[1] = add_aligned(&l, page[1], 8192, 4096);
	r[2] = add_aligned(&l, page[2], 100, 4096);	/* last may be short */
	c0 = copied_now();
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), 0);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 512), 0);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_ptr_eq(seg_of(&l, i).raw, r[i]);
	assert_aligned(&l, 4096, 4096);
	bl_list_clear(&l);
}
END_TEST

/* Nothing to copy: the chain is left as it is, without an allocation. */
START_TEST(test_rebuild_aligned_of_aligned_list_allocates_nothing)
{
	static char page[5][4096];
	struct tu_alloc_stats st;
	struct bl_raw *r[5];
	struct bl_list l;

	bl_list_init(&l);
	for (unsigned i = 0; i < 5; i++)	/* past the inline slots */
		r[i] = add_aligned(&l, page[i], 4096, 4096);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), 0);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 512, 4096,
								 5), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs + st.failed, 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5);
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_ptr_eq(seg_of(&l, i).raw, r[i]);
		ck_assert_uint_eq(bl_raw_nref(r[i]), 1);
	}
	ck_assert_int_eq(bl__list_validate(&l), 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_aligned_copies_misaligned_runs)
{
	static unsigned char data[5000];
	struct bl_list l;
	uint64_t rng = 3;
	int want;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	for (int i = 0; i < 50; i++)
		add_skewed(&l, data + 100 * i, 100, 1);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 512), 1);
	assert_aligned(&l, 512, 512);
	tu_assert_list_eq(&l, data, sizeof(data));
	/* now aligned: nothing more to do */
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 512), 0);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 64), 0);
	want = is_aligned(&l, 4096, 4096) ? 0 : 1;
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), want);
	assert_aligned(&l, 4096, 4096);
	tu_assert_list_eq(&l, data, sizeof(data));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_aligned_keeps_aligned_segments)
{
	static unsigned char data[4 * 4096];
	struct bl_list l;
	struct bl_raw *a, *d;
	uint64_t rng = 11;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	a = add_aligned(&l, data, 4096, 4096);
	add_skewed(&l, data + 4096, 100, 1);
	add_skewed(&l, data + 4196, 3996, 3);
	d = add_aligned(&l, data + 8192, 8192, 4096);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), 1);
	assert_aligned(&l, 4096, 4096);
	tu_assert_list_eq(&l, data, sizeof(data));
	ck_assert_ptr_eq(seg_of(&l, 0).raw, a);
	ck_assert_ptr_eq(seg_of(&l, bl_list_num_buffers(&l) - 1).raw, d);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_aligned_random_segments)
{
	uint64_t rng = tu_seed("test_rebuild_aligned_random_segments");

	for (int round = 0; round < 60; round++) {
		static unsigned char data[40000];
		size_t len = 0, align = (size_t)1 << (tu_rand(&rng) % 13);
		struct bl_list l;
		bool clean;
		int ret;

		bl_list_init(&l);
		while (len < 30000) {
			size_t n = 1 + tu_rand(&rng) % 3000;

			if (tu_rand(&rng) & 1)
				n = bl__align_up(n, 512);
			if (len + n > sizeof(data))
				break;
			tu_fill(data + len, n, &rng);
			if (tu_rand(&rng) % 3 == 0)
				add_skewed(&l, data + len, n,
					   1 + tu_rand(&rng) % 63);
			else
				add_aligned(&l, data + len, n, 4096);
			len += n;
		}
		clean = is_aligned(&l, align, align);
		ret = bl_list_rebuild_aligned(&l, align);
		ck_assert_int_eq(ret, clean ? 0 : 1);
		assert_aligned(&l, align, align);
		tu_assert_list_eq(&l, data, len);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_rebuild_aligned_rejects_bad_alignment)
{
	static const size_t bad[] = { 0, 3, 100, 4095, 6144 };
	struct bl_list l;

	bl_list_init(&l);
	add_skewed(&l, "abc", 3, 1);
	add_skewed(&l, "def", 3, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(bl_list_rebuild_aligned(&l, bad[i]), -EINVAL);
		ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(
					 &l, bad[i], 512, 0), -EINVAL);
		ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(
					 &l, 512, bad[i], 0), -EINVAL);
		assert_str(&l, "abcdef");
		ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	}
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_asm_caps_misaligned_segments)
{
	static unsigned char data[3000 * 7];
	struct bl_list l;
	uint64_t rng = 8;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	for (int i = 0; i < 3000; i++)
		add_skewed(&l, data + 7 * i, 7, 1 + i % 5);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3000);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 512, 512,
								 1024), 1);
	ck_assert_uint_le(bl_list_num_buffers(&l), 1024);
	assert_aligned(&l, 512, 512);
	tu_assert_list_eq(&l, data, sizeof(data));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_asm_coalesces_aligned_when_over_cap)
{
	static unsigned char data[3000 * 512];
	struct bl_list l;
	uint64_t rng = 9;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	for (int i = 0; i < 3000; i++)
		add_aligned(&l, data + 512 * i, 512, 512);
	/* already aligned: without a cap there is nothing to do */
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 512, 512,
								 0), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3000);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 512, 512,
								 3000), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3000);
	/* with a cap the segments must be coalesced */
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 512, 512,
								 1024), 1);
	ck_assert_uint_le(bl_list_num_buffers(&l), 1024);
	assert_aligned(&l, 512, 512);
	tu_assert_list_eq(&l, data, sizeof(data));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_asm_distinct_size_and_memory_alignment)
{
	static unsigned char data[64 * 512 + 77];
	struct bl_list l;
	uint64_t rng = 10;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	/* memory-aligned to 512, but 512 long where 4096 is required */
	for (int i = 0; i < 64; i++)
		add_aligned(&l, data + 512 * i, 512, 512);
	add_aligned(&l, data + 64 * 512, 77, 512);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 4096, 512,
								 0), 1);
	assert_aligned(&l, 4096, 512);
	tu_assert_list_eq(&l, data, sizeof(data));
	bl_list_clear(&l);
}
END_TEST

/* ---- c_str ------------------------------------------------------------- */

START_TEST(test_c_str_of_empty_is_static_empty_string)
{
	struct tu_alloc_stats st;
	struct bl_list l;
	char *p;

	/* NULL means only ENOMEM: an empty list is "", and allocates nothing */
	tu_alloc_install(1, 1);
	bl_list_init(&l);
	p = bl_list_c_str(&l);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p, "");
	ck_assert_ptr_eq(bl_list_c_str(&l), p);
	tu_alloc_stats(&st);
	ck_assert_uint_eq(st.allocs, 0);
	ck_assert_uint_eq(st.failed, 0);
	tu_alloc_uninstall();
	assert_str(&l, "");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 0);
	/* emptied by a splice, with an append buffer left: still "" */
	bl_list_append(&l, "xyz", 3);
	bl_list_splice(&l, 0, 3, NULL);
	ck_assert_str_eq(bl_list_c_str(&l), "");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_c_str_single_segment_is_not_copied)
{
	struct bl_list l;
	struct bl_ptr s;
	uint64_t c0;
	char *p;

	bl_list_init(&l);
	add_skewed(&l, "single", 6, 3);
	s = seg_of(&l, 0);
	c0 = copied_now();
	p = bl_list_c_str(&l);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_ptr_eq(p, bl_ptr_data(&s));
	ck_assert_mem_eq(p, "single", 6);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_c_str_multi_segment_becomes_one)
{
	struct bl_list l;
	struct bl_ptr held = BL_PTR_INIT, s;
	uint64_t c0;
	char *p;

	make_abc(&l);
	ck_assert_int_eq(bl_list_get_ptr(&l, 2, &held), 0);
	c0 = copied_now();
	p = bl_list_c_str(&l);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(copied_now() - c0, 10);
	ck_assert_mem_eq(p, "ABCDEFGHIJ", 10);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	s = seg_of(&l, 0);
	ck_assert_ptr_eq(p, bl_ptr_data(&s));
	assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_raw_nref(held.raw), 1);
	bl_ptr_release(&held);
	/* a second call returns the same memory */
	ck_assert_ptr_eq(bl_list_c_str(&l), p);
	bl_list_clear(&l);
}
END_TEST

/*
 * bl_list_copy_shared: a thread-local list's bytes, copied into one new
 * segment of @dst whose raw is shared; @src unchanged; @dst may be @src;
 * an empty @src appends nothing; NULL is -EINVAL; each allocation that
 * fails (the raw, then the chunk for its slot) is -ENOMEM with @dst as
 * it was.
 */
START_TEST(test_copy_shared_copies_a_thread_local_list_into_a_shared_raw)
{
	static unsigned char big[200000];
	struct bl_list l, d, e;
	struct bl_ptr p, last;
	struct snap sl, sd;
	uint64_t c0;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7 + 1);
	bl_raw_set_thread_local(true);
	bl_list_init(&l);
	bl_list_init(&d);
	bl_list_init(&e);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(bl_ptr_alloc(&p, 1000), 0);
		memcpy(bl_ptr_data(&p), big + k * 1000, 1000);
		ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	}
	ck_assert_int_eq(bl_list_append(&l, big + 3000, 197000), 0);
	ck_assert_int_eq(bl_list_append(&d, "xy", 2), 0);
	snap_take(&sl, &l);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_copy_shared(&d, &l), 0);
	ck_assert_uint_eq(copied_now() - c0, sizeof(big));
	snap_check(&sl, &l);
	ck_assert_uint_eq(bl_list_length(&d), 2 + sizeof(big));
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	last = seg_of(&d, 1);
	ck_assert(!bl_raw_is_thread_local(last.raw));
	ck_assert(bl_raw_is_thread_local(seg_of(&d, 0).raw));
	ck_assert_uint_eq(bl_raw_nref(last.raw), 1);
	ck_assert_mem_eq(bl_ptr_data(&last), big, sizeof(big));
	ck_assert_uint_eq((uintptr_t)bl_ptr_data(&last) % 64, 0);

	/* into itself: the copy is made before the list changes */
	ck_assert_int_eq(bl_list_copy_shared(&l, &l), 0);
	ck_assert_uint_eq(bl_list_length(&l), 2 * sizeof(big));
	{
		unsigned char *back = malloc(sizeof(big));

		ck_assert_ptr_nonnull(back);
		ck_assert_int_eq(bl_list_copy_out(&l, sizeof(big), sizeof(big),
						  back), 0);
		ck_assert_mem_eq(back, big, sizeof(big));
		free(back);
	}

	/* an empty source, and NULL */
	snap_take(&sd, &d);
	ck_assert_int_eq(bl_list_copy_shared(&d, &e), 0);
	snap_check(&sd, &d);
	ck_assert_int_eq(bl_list_copy_shared(NULL, &l), -EINVAL);
	ck_assert_int_eq(bl_list_copy_shared(&d, NULL), -EINVAL);

	/* no memory for the raw, then none for the chunk of its slot */
	for (uint64_t at = 1; at <= 2; at++) {
		tu_alloc_install(at, 1);
		ck_assert_int_eq(bl_list_copy_shared(&d, &l), -ENOMEM);
		tu_alloc_uninstall();
		snap_check(&sd, &d);
	}
	bl_raw_set_thread_local(false);
	snap_free(&sl);
	snap_free(&sd);
	bl_list_clear(&l);
	bl_list_clear(&d);
}
END_TEST

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

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (char)i;
	bl_list_init(&l);
	ck_assert_ptr_null(bl__seg_first(&l, &cur));
	tu_append_fixed(&l, data, sizeof(data), 2);	/* 100 segments, 3 chunks */
	/* cut the first two: the inline chunk is empty, heap chunks follow */
	ck_assert_int_eq(bl_list_splice(&l, 0, 4, NULL), 0);
	BL__LIST_FOREACH_SEG(&l, cur, s) {
		struct bl_ptr want = seg_of(&l, k++);

		ck_assert_ptr_eq(s->raw, want.raw);
		ck_assert_ptr_eq(s->data, bl_ptr_data(&want));
		ck_assert_uint_eq(s->len, want.len);
	}
	ck_assert_uint_eq(k, bl_list_num_buffers(&l));
	ck_assert_ptr_eq(bl__list_front(&l)->raw, seg_of(&l, 0).raw);
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

	make_abc(&l);	/* four segments: heap chunk */
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
	assert_str(&l, "abc");
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
	assert_str(&l, "");
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

	make_abc(&l);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, iov, 8), 4);
	for (unsigned i = 0; i < 4; i++) {
		struct bl_ptr p = seg_of(&l, i);

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

	make_abc(&l);
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

	make_abc(&l);
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

/* ---- crc32c ------------------------------------------------------------ */

START_TEST(test_crc32c_of_A_is_cephs_value)
{
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), 0);
	ck_assert_uint_eq(bl_list_crc32c(&l, 1234), 1234);
	ck_assert_int_eq(bl_list_append(&l, "A", 1), 0);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), 0xB3109EBF);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), 0xB3109EBF);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_crc32c_independent_of_segmentation)
{
	static unsigned char data[100000];
	uint64_t rng = 17;
	static const uint32_t seeds[] = { 0, 1, 0xFFFFFFFF, 0xDEADBEEF };

	tu_fill(data, sizeof(data), &rng);
	for (int layout = 0; layout < 4; layout++) {
		struct bl_list l;

		bl_list_init(&l);
		switch (layout) {
		case 0:
			tu_append_fixed(&l, data, sizeof(data), sizeof(data));
			break;
		case 1:
			tu_append_fixed(&l, data, sizeof(data), 1000);
			break;
		case 2:
			tu_append_segmented(&l, data, sizeof(data), 3000, 1,
					    &rng);
			break;
		default:
			tu_append_fixed(&l, data, 3000, 1);
			tu_append_fixed(&l, data + 3000, sizeof(data) - 3000, 4096);
			break;
		}
		for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
			uint32_t want = bl_crc32c(seeds[i], data, sizeof(data));

			ck_assert_uint_eq(bl_list_crc32c(&l, seeds[i]), want);
			/* a repeat (from the caches) is the same */
			ck_assert_uint_eq(bl_list_crc32c(&l, seeds[i]), want);
		}
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_crc32c_cache_keyed_by_range)
{
	static unsigned char data[4096];
	struct bl_list l, sub;
	uint64_t rng = 18;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	bl_list_init(&sub);
	tu_append_fixed(&l, data, sizeof(data), sizeof(data));
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), bl_crc32c(0, data, 4096));
	ck_assert_int_eq(bl_list_substr_of(&sub, &l, 100, 3000), 0);
	ck_assert_uint_eq(bl_list_crc32c(&sub, 0),
			  bl_crc32c(0, data + 100, 3000));
	ck_assert_uint_eq(bl_list_crc32c(&sub, 7),
			  bl_crc32c(7, data + 100, 3000));
	ck_assert_uint_eq(bl_list_crc32c(&l, 9), bl_crc32c(9, data, 4096));
	bl_list_clear(&l);
	bl_list_clear(&sub);
}
END_TEST

START_TEST(test_crc32c_follows_copy_in_through_sharer)
{
	static unsigned char data[8192];
	struct bl_list l, other;
	uint64_t rng = 19;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	bl_list_init(&other);
	tu_append_fixed(&l, data, sizeof(data), 2048);
	ck_assert_int_eq(bl_list_append_list(&other, &l), 0);
	ck_assert_uint_eq(bl_list_crc32c(&other, 0),
			  bl_crc32c(0, data, sizeof(data)));
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	memcpy(data + 3000, "written", 7);
	ck_assert_int_eq(bl_list_copy_in(&l, 3000, 7, "written"), 0);
	ck_assert_uint_eq(bl_list_crc32c(&other, 0),
			  bl_crc32c(0, data, sizeof(data)));
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	memset(data + 5000, 0, 10);
	ck_assert_int_eq(bl_list_zero(&other, 5000, 10), 0);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	bl_list_clear(&l);
	bl_list_clear(&other);
}
END_TEST

START_TEST(test_invalidate_crc_after_direct_write)
{
	static unsigned char data[6000];
	struct bl_list l;
	struct bl_ptr p;
	uint64_t rng = 20;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	tu_append_fixed(&l, data, sizeof(data), 2000);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	p = seg_of(&l, 1);
	bl_ptr_data(&p)[10] ^= 0x55;
	data[2010] ^= 0x55;
	bl_list_invalidate_crc(&l);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	ck_assert_uint_eq(bl_list_crc32c(&l, 77),
			  bl_crc32c(77, data, sizeof(data)));
	bl_list_clear(&l);
}
END_TEST

/* ---- hexdump ----------------------------------------------------------- */

/* Expected texts: the output of util-linux `hexdump -C` for the same bytes. */
static const char hex_ceph32[] =
	"00000000  30 31 33 32 34 35 36 37  38 39 30 31 32 33 34 00  |013245678901234.|\n"
	"00000010  36 37 38 39 30 31 32 33  34 35 36 37 38 39 30 31  |6789012345678901|\n"
	"00000020\n";

static const char hex_hello[] =
	"00000000  68 65 6c 6c 6f                                    |hello|\n"
	"00000005\n";

static const char hex_eight[] =
	"00000000  41 42 43 44 45 46 47 48                           |ABCDEFGH|\n"
	"00000008\n";

static const char hex_nine[] =
	"00000000  41 42 43 44 45 46 47 48  49                       |ABCDEFGHI|\n"
	"00000009\n";

static const char hex_zero64[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000040\n";

static const char hex_mixed[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000030  41 42 43 44 45 46 47 48  49 4a 4b 4c 4d 4e 4f 50  |ABCDEFGHIJKLMNOP|\n"
	"00000040  51 52 53 54 55 56 57 58  59 5a 00 00 00 00 00 00  |QRSTUVWXYZ......|\n"
	"00000050  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000070  00 00                                             |..|\n"
	"00000072\n";

static const char hex_ascii[] =
	"00000000  1e 1f 20 21 22 23 24 25  26 27 28 29 2a 2b 2c 2d  |.. !\"#$%&'()*+,-|\n"
	"00000010  2e 2f 30 31 32 33 34 35  36 37 38 39 3a 3b 3c 3d  |./0123456789:;<=|\n"
	"00000020  3e 3f 40 41 42 43 44 45  46 47 48 49 4a 4b 4c 4d  |>?@ABCDEFGHIJKLM|\n"
	"00000030  4e 4f 50 51 52 53 54 55  56 57 58 59 5a 5b 5c 5d  |NOPQRSTUVWXYZ[\\]|\n"
	"00000040  5e 5f 60 61 62 63 64 65  66 67 68 69 6a 6b 6c 6d  |^_`abcdefghijklm|\n"
	"00000050  6e 6f 70 71 72 73 74 75  76 77 78 79 7a 7b 7c 7d  |nopqrstuvwxyz{|}|\n"
	"00000060  7e 7f 80 81 82 83 84 85  86 87                    |~.........|\n"
	"0000006a\n";

static const char hex_zero40[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000020  00 00 00 00 00 00 00 00                           |........|\n"
	"00000028\n";

static const char hex_zero32[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000020\n";

static const char hex_big[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00010000  78                                                |x|\n"
	"00010001\n";

static const char hex_notrep[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"00000010  78 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |x...............|\n"
	"00000020  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"00000030\n";

static const char hex_textrep[] =
	"00000000  61 62 63 64 65 66 67 68  69 6a 6b 6c 6d 6e 6f 70  |abcdefghijklmnop|\n"
	"*\n"
	"00000040  61 62 63                                          |abc|\n"
	"00000043\n";

#define HEX_MAX (65536 + 1)

/* Builds the bytes of case @i into @buf; returns its length and text. */
static size_t hex_case(int i, unsigned char *buf, const char **want)
{
	memset(buf, 0, HEX_MAX);
	switch (i) {
	case 0:
		memcpy(buf, "013245678901234\0006789012345678901234", 32);
		*want = hex_ceph32;
		return 32;
	case 1:
		memcpy(buf, "hello", 5);
		*want = hex_hello;
		return 5;
	case 2:
		memcpy(buf, "ABCDEFGHI", 9);
		*want = hex_eight;
		return 8;
	case 3:
		memcpy(buf, "ABCDEFGHI", 9);
		*want = hex_nine;
		return 9;
	case 4:
		*want = hex_zero64;
		return 64;
	case 5:
		for (int c = 0; c < 26; c++)
			buf[48 + c] = (unsigned char)('A' + c);
		*want = hex_mixed;
		return 48 + 26 + 40;
	case 6:
		for (int c = 0x1e; c < 0x88; c++)
			buf[c - 0x1e] = (unsigned char)c;
		*want = hex_ascii;
		return 0x88 - 0x1e;
	case 7:
		*want = hex_zero40;
		return 40;
	case 8:
		*want = hex_zero32;
		return 32;
	case 9:
		buf[65536] = 'x';
		*want = hex_big;
		return 65537;
	case 10:
		buf[16] = 'x';
		*want = hex_notrep;
		return 48;
	default:
		for (int c = 0; c < 67; c++)
			buf[c] = (unsigned char)('a' + c % 16);
		*want = hex_textrep;
		return 67;
	}
}

#define HEX_CASES 12

/* Runs bl_list_hexdump() into memory; returns the text (caller frees). */
static char *hexdump_text(const struct bl_list *l)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(bl_list_hexdump(l, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

START_TEST(test_hexdump_matches_hexdump_C)
{
	static unsigned char buf[HEX_MAX];
	uint64_t rng = 23;

	for (int i = 0; i < HEX_CASES; i++) {
		const char *want;
		size_t len = hex_case(i, buf, &want);

		for (int layout = 0; layout < 3; layout++) {
			struct bl_list l;
			char *text;

			bl_list_init(&l);
			if (layout == 0)
				ck_assert_int_eq(bl_list_append(&l, buf, len),
						 0);
			else if (layout == 1)
				tu_append_fixed(&l, buf, len, len > 1000 ? 999 : 1);
			else
				tu_append_segmented(&l, buf, len, 21, 1, &rng);
			text = hexdump_text(&l);
			ck_assert_msg(strcmp(text, want) == 0,
				      "case %d layout %d:\n--- got\n%s"
				      "--- want\n%s",
				      i, layout, text, want);
			free(text);
			bl_list_clear(&l);
		}
	}
}
END_TEST

START_TEST(test_hexdump_of_empty_list_prints_nothing)
{
	struct bl_list l;
	char *text;

	/* `hexdump -C < /dev/null` prints nothing at all */
	bl_list_init(&l);
	text = hexdump_text(&l);
	ck_assert_str_eq(text, "");
	free(text);
}
END_TEST

START_TEST(test_hexdump_reports_write_failure)
{
	struct bl_list l;
	FILE *f = fopen("/dev/null", "r");

	ck_assert_ptr_nonnull(f);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	ck_assert_int_eq(bl_list_hexdump(&l, f), -EIO);
	fclose(f);
	bl_list_clear(&l);
}
END_TEST

/* ---- pinned_unused ----------------------------------------------------- */

START_TEST(test_pinned_unused_counts_each_raw_once)
{
	struct bl_ptr big = BL_PTR_INIT, s1 = BL_PTR_INIT, s2 = BL_PTR_INIT;
	struct bl_ptr full = BL_PTR_INIT;
	struct bl_list l;

	ck_assert_int_eq(bl_ptr_alloc(&big, 65536), 0);
	ck_assert_int_eq(bl_ptr_slice(&s1, &big, 0, 10), 0);
	ck_assert_int_eq(bl_ptr_slice(&s2, &big, 1000, 10), 0);
	ck_assert_int_eq(bl_ptr_alloc(&full, 100), 0);
	bl_list_init(&l);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &s1), 0);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 65536 - 10);
	ck_assert_int_eq(bl_list_append_ptr(&l, &full), 0);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 65536 - 10);
	ck_assert_int_eq(bl_list_append_ptr(&l, &s2), 0);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 65536 - 20);
	ck_assert_int_eq(bl_list_append_ptr(&l, &big), 0);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 0);
	bl_list_clear(&l);
	bl_ptr_release(&s1);
	bl_ptr_release(&s2);
	bl_ptr_release(&big);
	bl_ptr_release(&full);
}
END_TEST

/* ---- compact ----------------------------------------------------------- */

/* A @len-byte slice at @off of a new 64 KiB raw (in pool @p), filled. */
static struct bl_ptr big_slice(struct bl_pool *p, size_t off, const char *s)
{
	struct bl_raw *r = bl_raw_create_in(p, 65536);
	struct bl_ptr whole = BL_PTR_INIT, sl = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&whole, r);
	memcpy(bl_ptr_data(&whole) + off, s, strlen(s));
	ck_assert_int_eq(bl_ptr_slice(&sl, &whole, off, strlen(s)), 0);
	bl_ptr_release(&whole);
	return sl;
}

START_TEST(test_compact_copies_wasteful_segments)
{
	struct bl_ptr s1, s2, full = BL_PTR_INIT;
	struct bl_raw *big1;
	struct bl_stats st0, st1;
	struct bl_list l;
	ssize_t ret;

	s1 = big_slice(NULL, 0, "0123456789");
	s2 = big_slice(NULL, 500, "abcdefghijklmnopqrst");
	big1 = s1.raw;
	ck_assert_int_eq(bl_ptr_alloc(&full, 5), 0);
	memcpy(bl_ptr_data(&full), "FULL!", 5);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr(&l, &s1), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &full), 0);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &s2), 0);
	ck_assert_uint_eq(bl_raw_nref(big1), 2);
	ck_assert_uint_ge(bl_list_pinned_unused(&l), 2 * 65536 - 30);
	st0 = stats_now();
	ret = bl_list_compact(&l, 1024);
	st1 = stats_now();
	ck_assert_int_eq(ret, 30);
	ck_assert_uint_eq(st1.copied_bytes - st0.copied_bytes, 30);
	assert_str(&l, "0123456789FULL!abcdefghijklmnopqrst");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	/* the small, fully used raw is kept */
	ck_assert_ptr_eq(seg_of(&l, 1).raw, full.raw);
	ck_assert_ptr_ne(seg_of(&l, 0).raw, big1);
	/* big1 lost the list's reference; big2 (only the list's) was freed */
	ck_assert_uint_eq(bl_raw_nref(big1), 1);
	ck_assert_uint_ge(st1.raws_freed - st0.raws_freed, 1);
	ck_assert_uint_le(bl_list_pinned_unused(&l), 3 * 1024);
	/* nothing left to do */
	st0 = stats_now();
	ck_assert_int_eq(bl_list_compact(&l, 1024), 0);
	st1 = stats_now();
	ck_assert_uint_eq(st1.copied_bytes, st0.copied_bytes);
	bl_list_clear(&l);
	bl_ptr_release(&s1);
	bl_ptr_release(&full);
}
END_TEST

START_TEST(test_compact_merges_neighbours_into_one_raw)
{
	struct bl_ptr a, b;
	struct bl_list l;

	a = big_slice(NULL, 100, "first-");
	b = big_slice(NULL, 9000, "second");
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &a), 0);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &b), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	ck_assert_int_eq(bl_list_compact(&l, 4096), 12);
	assert_str(&l, "first-second");
	ck_assert_ptr_eq(seg_of(&l, 0).raw,
			 seg_of(&l, bl_list_num_buffers(&l) - 1).raw);
	ck_assert_uint_le(bl_list_pinned_unused(&l), 4096);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_compact_drops_large_append_buffer)
{
	struct bl_list l;

	bl_list_init(&l);
	/* grow the append buffer, then keep only a small value */
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(bl_list_append(&l, "0123456789", 10), 0);
	ck_assert_int_eq(bl_list_splice(&l, 10, 1990, NULL), 0);
	assert_str(&l, "0123456789");
	ck_assert_int_ge(bl_list_compact(&l, 64), 0);
	assert_str(&l, "0123456789");
	ck_assert_uint_le(bl_list_pinned_unused(&l), 64);
	/* the list still appends */
	ck_assert_int_eq(bl_list_append(&l, "ab", 2), 0);
	assert_str(&l, "0123456789ab");
	bl_list_clear(&l);
}
END_TEST

/*
 * Every segment kept (the list covers its append buffer's bytes many times
 * over, so that raw wastes nothing) while the buffer's free room is still
 * over the limit: the chain stays, the buffer goes, and the list appends
 * on as before.
 */
START_TEST(test_compact_keeping_every_segment_drops_the_append_buffer)
{
	struct bl_list l;
	struct bl_raw *ab;
	char want[200];

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "0123456789", 10), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(bl_list_append_list(&l, &l), 0);
	/* extends the last segment, which ends at the buffer's frontier */
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 16);
	ab = seg_of(&l, 15).raw;
	ck_assert_uint_gt(bl__list_abuf_room(&l), 100);
	ck_assert_int_eq(bl_list_compact(&l, 100), 0);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl__list_abuf_room(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 16);
	ck_assert_ptr_eq(seg_of(&l, 15).raw, ab);
	ck_assert_int_eq(bl_list_append(&l, "y", 1), 0);
	for (int i = 0; i < 16; i++)
		memcpy(want + 10 * i, "0123456789", 10);
	memcpy(want + 160, "xy", 2);
	tu_assert_list_eq(&l, want, 162);
	ck_assert_ptr_ne(seg_of(&l, 16).raw, ab);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_compact_without_waste_changes_nothing)
{
	struct bl_list l, e;
	struct bl_raw *r[4];
	uint64_t c0;

	make_abc(&l);
	bl_list_init(&e);
	for (unsigned i = 0; i < 4; i++)
		r[i] = seg_of(&l, i).raw;
	c0 = copied_now();
	ck_assert_int_eq(bl_list_compact(&l, 0), 0);
	ck_assert_int_eq(bl_list_compact(&e, 0), 0);
	ck_assert_uint_eq(copied_now(), c0);
	assert_str(&l, "ABCDEFGHIJ");
	assert_str(&e, "");
	for (unsigned i = 0; i < 4; i++)
		ck_assert_ptr_eq(seg_of(&l, i).raw, r[i]);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_compact_allocates_in_the_replaced_pool)
{
	struct bl_pool *p = bl_pool_create("test_list_compact", NULL);
	struct bl_ptr a;
	struct bl_list l;

	ck_assert_ptr_nonnull(p);
	a = big_slice(p, 7, "pooled");
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &a), 0);
	ck_assert_int_eq(bl_list_compact(&l, 1024), 6);
	assert_str(&l, "pooled");
	ck_assert_ptr_eq(bl_raw_pool(seg_of(&l, 0).raw), p);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_compact_failure_leaves_list_unchanged)
{
	struct bl_ptr a;
	struct bl_raw *big;
	struct bl_list l;
	struct tu_alloc_stats st;

	a = big_slice(NULL, 0, "keep me");
	big = a.raw;
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr(&l, &a), 0);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_compact(&l, 1024), -ENOMEM);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_ge(st.failed, 1);
	assert_str(&l, "keep me");
	ck_assert_ptr_eq(seg_of(&l, 0).raw, big);
	ck_assert_uint_eq(bl_raw_nref(big), 2);
	bl_list_clear(&l);
	bl_ptr_release(&a);
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

/* ---- failing allocations ------------------------------------------------- */

/*
 * Runs @op with the Nth allocation failing, N = 1, 2, ... until it
 * succeeds; every failure must be -ENOMEM and leave @l (and @m) as they
 * were.  Returns the number of failures seen.
 */
typedef int (*list_op)(struct bl_list *l, struct bl_list *m);

static int fail_each_allocation(void (*build)(struct bl_list *,
					      struct bl_list *),
				list_op op)
{
	int failures = 0;

	for (uint64_t n = 1; n < 200; n++) {
		struct bl_list l, m;
		struct snap sl, sm;
		int ret;

		tu_alloc_install(0, 0);
		bl_list_init(&l);
		bl_list_init(&m);
		build(&l, &m);
		snap_take(&sl, &l);
		snap_take(&sm, &m);
		tu_alloc_fail_at(n, 0);
		ret = op(&l, &m);
		tu_alloc_fail_at(0, 0);
		if (ret >= 0) {
			struct tu_alloc_stats st;

			bl_list_clear(&l);
			bl_list_clear(&m);
			snap_free(&sl);
			snap_free(&sm);
			tu_alloc_stats(&st);
			ck_assert_int_eq(st.live_bytes, 0);
			break;
		}
		failures++;
		ck_assert_int_eq(ret, -ENOMEM);
		snap_check(&sl, &l);
		snap_check(&sm, &m);
		snap_free(&sl);
		snap_free(&sm);
		bl_list_clear(&l);
		bl_list_clear(&m);
		{
			struct tu_alloc_stats st;

			tu_alloc_stats(&st);
			ck_assert_int_eq(st.live_bytes, 0);
		}
	}
	tu_alloc_uninstall();
	return failures;
}

/* l: two segments (inline chunk full); m: one segment. */
static void build_two_one(struct bl_list *l, struct bl_list *m)
{
	tu_append_fixed(l, "abcdef", 6, 3);
	tu_append_fixed(m, "XYZ", 3, 3);
}

static void build_static(struct bl_list *l, struct bl_list *m)
{
	static const char text[] = "static!";

	tu_append_fixed(l, "ab", 2, 2);
	add_static(l, text, 7);
	(void)m;
}

static int op_claim_append(struct bl_list *l, struct bl_list *m)
{
	return bl_list_claim_append(l, m);
}

static int op_claim_prepend(struct bl_list *l, struct bl_list *m)
{
	return bl_list_claim_prepend(l, m);
}

static int op_append_list(struct bl_list *l, struct bl_list *m)
{
	return bl_list_append_list(l, m);
}

static int op_splice_cut(struct bl_list *l, struct bl_list *m)
{
	return bl_list_splice(l, 1, 1, m);
}

static int op_append_big(struct bl_list *l, struct bl_list *m)
{
	static char big[10000];

	return bl_list_append(l, big, sizeof(big));
}

static int op_rebuild(struct bl_list *l, struct bl_list *m)
{
	return bl_list_rebuild(l);
}

static int op_c_str(struct bl_list *l, struct bl_list *m)
{
	return bl_list_c_str(l) ? 0 : -ENOMEM;
}

static int op_copy_in_static(struct bl_list *l, struct bl_list *m)
{
	return bl_list_copy_in(l, 1, 3, "123");
}

static int op_rebuild_aligned(struct bl_list *l, struct bl_list *m)
{
	return bl_list_rebuild_aligned(l, 4096);
}

/*
 * Each of these needs an allocation (a chunk past the full inline one, a
 * raw for the copy), so each fails at least once before it succeeds.
 */
START_TEST(test_failed_allocation_leaves_lists_unchanged)
{
	static const struct {
		const char *name;
		void (*build)(struct bl_list *, struct bl_list *);
		list_op op;
	} ops[] = {
		{ "claim_append", build_two_one, op_claim_append },
		{ "claim_prepend", build_two_one, op_claim_prepend },
		{ "append_list", build_two_one, op_append_list },
		{ "splice (cut)", build_two_one, op_splice_cut },
		{ "append (large)", build_two_one, op_append_big },
		{ "rebuild", build_two_one, op_rebuild },
		{ "c_str", build_two_one, op_c_str },
		{ "copy_in (static)", build_static, op_copy_in_static },
		{ "rebuild_aligned", build_two_one, op_rebuild_aligned },
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		ck_assert_msg(fail_each_allocation(ops[i].build,
						   ops[i].op) >= 1,
			      "%s never allocated", ops[i].name);
}
END_TEST

/* substr_of into a list that may need no allocation: atomic either way. */
START_TEST(test_failed_substr_leaves_dst_unchanged)
{
	struct bl_list l, d;
	int ret;

	for (uint64_t n = 1; n < 50; n++) {
		tu_alloc_install(0, 0);
		bl_list_init(&l);
		bl_list_init(&d);
		tu_append_fixed(&l, "abcdefghij", 10, 2);
		tu_append_fixed(&d, "old", 3, 1);
		tu_alloc_fail_at(n, 1);
		ret = bl_list_substr_of(&d, &l, 1, 8);
		tu_alloc_fail_at(0, 0);
		if (ret == 0) {
			assert_str(&d, "bcdefghi");
		} else {
			ck_assert_int_eq(ret, -ENOMEM);
			assert_str(&d, "old");
			ck_assert_uint_eq(bl_list_num_buffers(&d), 3);
		}
		assert_str(&l, "abcdefghij");
		bl_list_clear(&l);
		bl_list_clear(&d);
		if (ret == 0)
			break;
	}
	tu_alloc_uninstall();
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
	assert_str(&static_list, "abcde");
	bl_list_clear(&l);
	bl_list_clear(&static_list);
	assert_str(&static_list, "");
}
END_TEST

START_TEST(test_foreach_seg_lends_every_segment_in_order)
{
	static char data[200];
	struct bl_list_seg_iter it;
	const struct bl_seg *s;
	struct bl_list l;
	unsigned k = 0;

	for (unsigned i = 0; i < sizeof(data); i++)
		data[i] = (char)i;
	bl_list_init(&l);
	BL_LIST_FOREACH_SEG(&l, it, s)
		ck_abort_msg("an empty list has no segment");
	ck_assert_ptr_null(bl_list_seg_next(&it));
	tu_append_fixed(&l, data, sizeof(data), 2);	/* 100 segments, 3 chunks */
	/* cut the first two: the inline chunk is empty, heap chunks follow */
	ck_assert_int_eq(bl_list_splice(&l, 0, 4, NULL), 0);
	BL_LIST_FOREACH_SEG(&l, it, s) {
		struct bl_ptr want = seg_of(&l, k++);

		ck_assert_ptr_eq(s->raw, want.raw);
		ck_assert_ptr_eq(s->data, bl_ptr_data(&want));
		ck_assert_uint_eq(s->len, want.len);
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
	ck_assert_ptr_eq(bl_list_seg_first(&l, &it)->raw, seg_of(&l, 0).raw);
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

/* ---- pad_to ------------------------------------------------------------ */

/* @data then @pad zero bytes, flattened, for comparing with a padded list. */
static unsigned char *padded(const void *data, size_t len, size_t pad)
{
	unsigned char *b = calloc(1, len + pad + 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b, data, len);
	return b;
}

/*
 * Four aligned pages and an aligned 1000-byte tail: the tail segment moves
 * whole into the padding raw, the pages stay, and the O_DIRECT reshape
 * that follows has nothing left to copy.
 */
START_TEST(test_pad_to_keeps_aligned_segments_for_dio)
{
	static unsigned char data[4 * 4096 + 1000];
	struct bl_raw *r[4];
	unsigned char *want;
	struct bl_list l;
	uint64_t rng = 11, before;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	for (unsigned i = 0; i < 4; i++)
		r[i] = add_aligned(&l, data + 4096 * i, 4096, 4096);
	add_aligned(&l, data + 4 * 4096, 1000, 4096);
	before = copied_now();
	ck_assert_int_eq(bl_list_pad_to(&l, 4096), 3096);
	ck_assert_uint_eq(copied_now() - before, 1000);
	ck_assert_uint_eq(bl_list_length(&l), 5 * 4096);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_ptr_eq(seg_of(&l, i).raw, r[i]);
	want = padded(data, sizeof(data), 3096);
	tu_assert_list_eq(&l, want, 5 * 4096);
	assert_aligned(&l, 4096, 4096);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 4096, 4096,
								 0), 0);
	free(want);
	bl_list_clear(&l);
}
END_TEST

/*
 * One aligned 10000-byte segment: it keeps its first two blocks and gives
 * the unfinished third (1808 bytes, the only bytes copied) to the padding.
 */
START_TEST(test_pad_to_splits_a_long_last_segment)
{
	static unsigned char data[10000];
	unsigned char *want;
	struct bl_raw *r;
	struct bl_list l;
	uint64_t rng = 12, before;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	r = add_aligned(&l, data, sizeof(data), 4096);
	before = copied_now();
	ck_assert_int_eq(bl_list_pad_to(&l, 4096), 4096 - 1808);
	ck_assert_uint_eq(copied_now() - before, 1808);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	ck_assert_ptr_eq(seg_of(&l, 0).raw, r);
	ck_assert_uint_eq(seg_of(&l, 0).len, 8192);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	want = padded(data, sizeof(data), 4096 - 1808);
	tu_assert_list_eq(&l, want, 3 * 4096);
	assert_aligned(&l, 4096, 4096);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 4096, 4096,
								 0), 0);
	free(want);
	bl_list_clear(&l);
}
END_TEST

/* Small appends (the append buffer) and a last segment shorter than the
 * unfinished block: the bytes are right whatever the layout. */
START_TEST(test_pad_to_of_appended_bytes)
{
	static const size_t aligns[] = { 1, 2, 64, 512, 4096 };
	unsigned char data[3000];
	uint64_t rng = 13;

	tu_fill(data, sizeof(data), &rng);
	for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++) {
		size_t al = aligns[a], pad = (al - sizeof(data) % al) % al;
		unsigned char *want = padded(data, sizeof(data), pad);
		struct bl_list l;

		bl_list_init(&l);
		tu_append_fixed(&l, data, 2500, 2500);
		ck_assert_int_eq(bl_list_append(&l, data + 2500, 500), 0);
		ck_assert_int_eq(bl_list_pad_to(&l, al), (ssize_t)pad);
		tu_assert_list_eq(&l, want, sizeof(data) + pad);
		/* appending goes on after the padding */
		ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
		ck_assert_uint_eq(bl_list_length(&l), sizeof(data) + pad + 1);
		ck_assert_int_eq(bl__list_validate(&l), 0);
		free(want);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_pad_to_whole_blocks_changes_nothing)
{
	static unsigned char page[2][4096];
	struct tu_alloc_stats st;
	struct bl_list l, e;

	bl_list_init(&l);
	bl_list_init(&e);
	add_aligned(&l, page[0], 4096, 4096);
	add_aligned(&l, page[1], 4096, 4096);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_pad_to(&l, 4096), 0);
	ck_assert_int_eq(bl_list_pad_to(&l, 512), 0);
	ck_assert_int_eq(bl_list_pad_to(&e, 4096), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs + st.failed, 0);
	ck_assert_uint_eq(bl_list_length(&l), 8192);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	ck_assert(bl_list_is_empty(&e));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_pad_to_refuses_bad_alignment)
{
	static const size_t bad[] = { 0, 3, 100, 4097 };
	struct bl_list l;
	struct snap sn;

	make_abc(&l);
	snap_take(&sn, &l);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(bl_list_pad_to(&l, bad[i]), -EINVAL);
		snap_check(&sn, &l);
	}
	snap_free(&sn);
	bl_list_clear(&l);
}
END_TEST

/* The raw fails (its header or its page-aligned data), or, with the
 * inline slots full, the chunk for the new slot. */
START_TEST(test_pad_to_failure_leaves_list_unchanged)
{
	struct tu_alloc_stats st;
	struct bl_raw *r0, *r1;
	struct bl_list l;
	struct snap sn;
	char data[5000];

	memset(data, 'q', sizeof(data));
	bl_list_init(&l);
	r0 = add_aligned(&l, data, 4096, 4096);
	r1 = add_aligned(&l, data, 5000, 4096);	/* the inline slots are full */
	snap_take(&sn, &l);
	for (uint64_t n = 1; n <= 3; n++) {
		tu_alloc_install(n, 1);
		ck_assert_int_eq(bl_list_pad_to(&l, 4096), -ENOMEM);
		tu_alloc_stats(&st);
		tu_alloc_uninstall();
		ck_assert_uint_eq(st.failed, 1);
		ck_assert_int_eq(st.live_bytes, 0);
		snap_check(&sn, &l);
		ck_assert_ptr_eq(seg_of(&l, 0).raw, r0);
		ck_assert_ptr_eq(seg_of(&l, 1).raw, r1);
		ck_assert_uint_eq(seg_of(&l, 1).len, 5000);
		ck_assert_uint_eq(bl_raw_nref(r1), 1);
	}
	ck_assert_int_eq(bl_list_pad_to(&l, 4096), 3 * 4096 - 9096);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	snap_free(&sn);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_pad_to_allocates_in_the_list_pool)
{
	struct bl_pool *p = bl_pool_create("test_list_pad", NULL);
	struct bl_list l;

	ck_assert_ptr_nonnull(p);
	bl_list_init(&l);
	bl_list_set_pool(&l, p);
	tu_append_fixed(&l, "abc", 3, 3);
	ck_assert_int_eq(bl_list_pad_to(&l, 8), 5);
	ck_assert_ptr_eq(bl_raw_pool(seg_of(&l, 0).raw), p);
	tu_assert_list_eq(&l, "abc\0\0\0\0\0", 8);
	bl_list_clear(&l);
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

/* ---- unchecked inputs ------------------------------------------------- */

/* copy_in from the list's own bytes, one segment: as memmove would. */
START_TEST(test_copy_in_from_own_bytes_in_one_segment)
{
	enum { N = 4096 };
	unsigned char *want = malloc(N);
	struct bl_list l;
	char *p;

	ck_assert_ptr_nonnull(want);
	for (int i = 0; i < N; i++)
		want[i] = (unsigned char)(i * 7 + i / 256);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, want, N), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	p = bl_list_c_str(&l);	/* the segment's own memory */
	ck_assert_ptr_nonnull(p);
	/* shift right by one, then left by three, over the source itself */
	ck_assert_int_eq(bl_list_copy_in(&l, 1, N - 1, p), 0);
	memmove(want + 1, want, N - 1);
	tu_assert_list_eq(&l, want, N);
	ck_assert_int_eq(bl_list_copy_in(&l, 0, N - 3, p + 3), 0);
	memmove(want, want + 3, N - 3);
	tu_assert_list_eq(&l, want, N);
	bl_list_clear(&l);
	free(want);
}
END_TEST

/*
 * copy_in from the list's own bytes across segments laid out in another
 * order than their raw's: the result is as if the source were copied out
 * first, not what a run written early leaves for a later one to read.
 */
START_TEST(test_copy_in_from_own_bytes_across_segments)
{
	struct bl_raw *r = bl_raw_create(10);
	struct bl_ptr whole, hi, lo;
	struct bl_list l;

	ck_assert_ptr_nonnull(r);
	memcpy(bl_raw_data(r), "ABCDEFGHIJ", 10);
	bl_ptr_from_raw(&whole, r);
	ck_assert_int_eq(bl_ptr_slice(&hi, &whole, 5, 5), 0);
	ck_assert_int_eq(bl_ptr_slice(&lo, &whole, 0, 5), 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr(&l, &hi), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &lo), 0);
	tu_assert_list_eq(&l, "FGHIJABCDE", 10);
	/* the source is the raw itself, "ABCDEFGHIJ" at the call */
	ck_assert_int_eq(bl_list_copy_in(&l, 0, 10, bl_raw_data(r)), 0);
	tu_assert_list_eq(&l, "ABCDEFGHIJ", 10);
	ck_assert_mem_eq(bl_raw_data(r), "FGHIJABCDE", 10);
	bl_list_clear(&l);
	bl_ptr_release(&hi);
	bl_ptr_release(&lo);
	bl_ptr_release(&whole);
}
END_TEST

/* The overlapping case that needs a copy of the source fails whole. */
START_TEST(test_copy_in_from_own_bytes_without_memory_changes_nothing)
{
	struct bl_raw *r = bl_raw_create(10);
	struct bl_ptr whole, hi, lo;
	struct bl_list l;

	ck_assert_ptr_nonnull(r);
	memcpy(bl_raw_data(r), "ABCDEFGHIJ", 10);
	bl_ptr_from_raw(&whole, r);
	ck_assert_int_eq(bl_ptr_slice(&hi, &whole, 5, 5), 0);
	ck_assert_int_eq(bl_ptr_slice(&lo, &whole, 0, 5), 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr(&l, &hi), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &lo), 0);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_copy_in(&l, 0, 10, bl_raw_data(r)), -ENOMEM);
	tu_alloc_uninstall();
	tu_assert_list_eq(&l, "FGHIJABCDE", 10);
	bl_list_clear(&l);
	bl_ptr_release(&hi);
	bl_ptr_release(&lo);
	bl_ptr_release(&whole);
}
END_TEST

/*
 * A hand-built slice reaching past its raw's bytes would let the list
 * read and write past the block: refused, whatever the entry point.
 */
START_TEST(test_hand_built_slice_past_its_raw_is_refused)
{
	struct bl_raw *r = bl_raw_create(16);
	struct bl_ptr bad = { r, 10, 10 }, wrap = { r, SIZE_MAX, 2 };
	struct bl_ptr noraw = { NULL, 0, 4 }, grown = BL_PTR_INIT, ok, d;
	struct bl_list l;

	ck_assert_ptr_nonnull(r);
	memset(bl_raw_data(r), 'r', 16);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &bad), -ERANGE);
	ck_assert_int_eq(bl_list_append_ptr(&l, &wrap), -ERANGE);
	ck_assert_int_eq(bl_list_append_ptr(&l, &noraw), -EINVAL);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &bad), -ERANGE);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &wrap), -ERANGE);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &noraw), -EINVAL);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &bad), -ERANGE);
	ck_assert_ptr_eq(bad.raw, r);	/* still the caller's */
	ck_assert_int_eq(bl_ptr_slice(&d, &bad, 0, 1), -ERANGE);
	ck_assert_int_eq(bl_ptr_slice(&d, &noraw, 0, 1), -EINVAL);
	/* past the frontier of a reserved raw, inside its capacity */
	ck_assert_int_eq(bl_ptr_reserve(&grown, 64), 0);
	ok = grown;
	ok.len = 8;
	ck_assert_int_eq(bl_list_append_ptr(&l, &ok), -ERANGE);
	tu_assert_list_eq(&l, "x", 1);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	/* exactly to the end is fine */
	ok.raw = r;
	ok.off = 10;
	ok.len = 6;
	ck_assert_int_eq(bl_list_append_ptr(&l, &ok), 0);
	tu_assert_list_eq(&l, "xrrrrrr", 7);
	bl_list_clear(&l);
	bl_ptr_release(&grown);
	bl_raw_put(r);
}
END_TEST

/* c_str hands out writable bytes: a static segment is copied first. */
START_TEST(test_c_str_of_static_segment_is_a_writable_copy)
{
	static const char text[] = "read-only text";
	struct bl_raw *r = bl_raw_create_static(text, sizeof(text) - 1);
	struct bl_list l;
	struct bl_ptr p;
	char *s;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	s = bl_list_c_str(&l);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_ne(s, text);
	ck_assert_mem_eq(s, text, sizeof(text) - 1);
	s[0] = 'R';
	ck_assert_str_eq(text, "read-only text");
	tu_assert_list_eq(&l, "Read-only text", sizeof(text) - 1);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	/* writable now: a second call hands out the same bytes */
	ck_assert_ptr_eq(bl_list_c_str(&l), s);
	bl_list_clear(&l);
}
END_TEST

/*
 * The segment count is unsigned: an operation that would wrap it fails
 * with -ENOMEM and changes nothing.  No test can hold 4 G segments, so the
 * list is told it has almost that many (its private count).
 */
START_TEST(test_segment_count_never_wraps)
{
	struct bl_raw *r = bl_raw_create(64);
	struct bl_ptr whole, a, b;
	struct bl_list l, src;
	unsigned real;

	ck_assert_ptr_nonnull(r);
	memset(bl_raw_data(r), 'q', 64);
	bl_ptr_from_raw(&whole, r);
	ck_assert_int_eq(bl_ptr_slice(&a, &whole, 0, 8), 0);
	ck_assert_int_eq(bl_ptr_slice(&b, &whole, 32, 8), 0);
	bl_list_init(&l);
	bl_list_init(&src);
	ck_assert_int_eq(bl_list_append_ptr(&l, &a), 0);
	ck_assert_int_eq(bl_list_append_ptr(&src, &a), 0);
	ck_assert_int_eq(bl_list_append_ptr(&src, &b), 0);
	real = l._nseg;
	l._nseg = UINT_MAX;
	ck_assert_int_eq(bl_list_append_ptr(&l, &b), -ENOMEM);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &b), -ENOMEM);
	ck_assert_int_eq(bl_list_append_list(&l, &src), -ENOMEM);
	ck_assert_int_eq(bl_list_splice(&l, 2, 1, NULL), -ENOMEM);
	ck_assert_uint_eq(bl_list_length(&l), 8);
	l._nseg = UINT_MAX - 1;
	ck_assert_int_eq(bl_list_claim_append(&l, &src), -ENOMEM);
	ck_assert_int_eq(bl_list_claim_prepend(&l, &src), -ENOMEM);
	ck_assert_uint_eq(bl_list_length(&src), 16);
	ck_assert_uint_eq(bl_list_length(&l), 8);
	l._nseg = real;
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_int_eq(bl__list_validate(&src), 0);
	/* and with room, the same calls work */
	ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
	ck_assert_uint_eq(bl_list_length(&l), 24);
	bl_list_clear(&l);
	bl_list_clear(&src);
	bl_ptr_release(&a);
	bl_ptr_release(&b);
	bl_ptr_release(&whole);
}
END_TEST

/* Destructors take NULL, as free() does: one rule for the whole API. */
START_TEST(test_every_destructor_takes_null)
{
	bl_raw_put(NULL);
	bl_ptr_release(NULL);
	bl_list_clear(NULL);
	bl_lz4_decoder_free(NULL);
	bl_msgr_frame_release(NULL);
	bl_msgr_conn_close(NULL, 0, NULL);
	bl_msgr_server_destroy(NULL);
	bl_uring_destroy(NULL);
	bl_uring_bufring_destroy(NULL);
	bl_uring_regpool_destroy(NULL);
}
END_TEST

static Suite *list_suite(void)
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
	const TTest *splice_tests[] = {
		test_splice_at_start,
		test_splice_in_middle,
		test_splice_at_end,
		test_splice_whole_list_moves_everything,
		test_splice_inside_one_segment_splits_it,
		test_splice_without_claim_by_releases,
		test_splice_claim_by_appends,
		test_splice_out_of_range_changes_nothing,
		test_splice_into_itself_is_einval,
		test_splice_empty_range_changes_nothing,
		test_splice_random_matches_model,
		test_splice_large_list,
		test_splice_across_chunks_cutting_both_ends,
		test_splice_across_chunks_on_segment_boundaries,
		test_splice_across_chunks_from_inline_slot,
		test_splice_across_chunks_fails_atomically,
		NULL
	};
	const TTest *substr_tests[] = {
		test_substr_shares_without_copy,
		test_substr_replaces_dst,
		test_substr_in_place,
		test_substr_out_of_range_leaves_dst,
		test_substr_empty_range_at_end,
		test_substr_random_matches_model,
		test_substr_inside_one_segment_into_empty_allocates_nothing,
		test_substr_inside_one_segment_keeps_dst_append_buffer,
		test_substr_inside_one_segment_replaces_dst,
		test_substr_in_place_inside_one_segment_keeps_its_raw,
		test_substr_across_segments_into_empty_fails_atomically,
		test_clear_of_one_slice_and_of_inline_pairs,
		NULL
	};
	const TTest *copy_tests[] = {
		test_copy_out_ranges,
		test_copy_in_writes_across_segments_in_place,
		test_copy_in_shared_raw_is_visible_elsewhere,
		test_copy_in_static_segment_gets_private_copy,
		test_copy_in_out_of_range_changes_nothing,
		test_zero_range,
		NULL
	};
	const TTest *rebuild_tests[] = {
		test_rebuild_makes_one_segment,
		test_rebuild_leaves_short_lists,
		test_rebuild_aligned_keeps_aligned_list,
		test_rebuild_aligned_of_aligned_list_allocates_nothing,
		test_rebuild_aligned_copies_misaligned_runs,
		test_rebuild_aligned_keeps_aligned_segments,
		test_rebuild_aligned_random_segments,
		test_rebuild_aligned_rejects_bad_alignment,
		test_rebuild_asm_caps_misaligned_segments,
		test_rebuild_asm_coalesces_aligned_when_over_cap,
		test_rebuild_asm_distinct_size_and_memory_alignment,
		test_c_str_of_empty_is_static_empty_string,
		test_c_str_single_segment_is_not_copied,
		test_c_str_multi_segment_becomes_one,
		test_copy_shared_copies_a_thread_local_list_into_a_shared_raw,
		NULL
	};
	const TTest *pad_to_tests[] = {
		test_pad_to_keeps_aligned_segments_for_dio,
		test_pad_to_splits_a_long_last_segment,
		test_pad_to_of_appended_bytes,
		test_pad_to_whole_blocks_changes_nothing,
		test_pad_to_refuses_bad_alignment,
		test_pad_to_failure_leaves_list_unchanged,
		test_pad_to_allocates_in_the_list_pool,
		NULL
	};
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
	const TTest *crc32c_tests[] = {
		test_crc32c_of_A_is_cephs_value,
		test_crc32c_independent_of_segmentation,
		test_crc32c_cache_keyed_by_range,
		test_crc32c_follows_copy_in_through_sharer,
		test_invalidate_crc_after_direct_write,
		NULL
	};
	const TTest *hexdump_tests[] = {
		test_hexdump_matches_hexdump_C,
		test_hexdump_of_empty_list_prints_nothing,
		test_hexdump_reports_write_failure,
		test_pinned_unused_counts_each_raw_once,
		NULL
	};
	const TTest *compact_tests[] = {
		test_compact_copies_wasteful_segments,
		test_compact_merges_neighbours_into_one_raw,
		test_compact_drops_large_append_buffer,
		test_compact_keeping_every_segment_drops_the_append_buffer,
		test_compact_without_waste_changes_nothing,
		test_compact_allocates_in_the_replaced_pool,
		test_compact_failure_leaves_list_unchanged,
		NULL
	};
	const TTest *inputs_tests[] = {
		test_copy_in_from_own_bytes_in_one_segment,
		test_copy_in_from_own_bytes_across_segments,
		test_copy_in_from_own_bytes_without_memory_changes_nothing,
		test_hand_built_slice_past_its_raw_is_refused,
		test_c_str_of_static_segment_is_a_writable_copy,
		test_segment_count_never_wraps,
		test_every_destructor_takes_null,
		NULL
	};
	const TTest *failure_tests[] = {
		test_failed_allocation_leaves_lists_unchanged,
		test_failed_substr_leaves_dst_unchanged,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("append", append_tests, .loops = append_loops),
		TU_GROUP("claim", claim_tests),
		TU_GROUP("splice", splice_tests),
		TU_GROUP("substr", substr_tests),
		TU_GROUP("copy", copy_tests),
		TU_GROUP("rebuild", rebuild_tests,
			 .timeout = 60, .setup = NULL,
			 .teardown = tu_thread_local_off),
		TU_GROUP("pad_to", pad_to_tests),
		TU_GROUP("private", private_tests),
		TU_GROUP("public_walk", public_walk_tests),
		TU_GROUP("compare", compare_tests),
		TU_GROUP("iovec", iovec_tests, .timeout = 60),
		TU_GROUP("crc32c", crc32c_tests),
		TU_GROUP("hexdump", hexdump_tests),
		TU_GROUP("compact", compact_tests),
		TU_GROUP("inputs", inputs_tests),
		TU_GROUP("failure", failure_tests, .timeout = 60),
		TU_GROUP_END
	};

	return tu_suite("list", groups);
}

int main(void)
{
	return tu_run(list_suite());
}
