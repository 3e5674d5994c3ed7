/* SPDX-License-Identifier: MIT */
/*
 * test_list_splice.c - the list layer: splice (cutting a range out, into
 * another list or nowhere) and substr_of (sharing a range into another
 * list), across segments and chunks, atomically when an allocation fails.
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

/* ---- splice ------------------------------------------------------------ */

static void splice_case(size_t off, size_t len, const char *left,
			const char *taken)
{
	struct bl_list l, c;
	uint64_t c0;

	tu_make_abc(&l);
	bl_list_init(&c);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_splice(&l, off, len, &c), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_str(&l, left);
	tu_assert_str(&c, taken);
	bl_list_clear(&l);
	bl_list_clear(&c);

	/* and without claim_by */
	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_splice(&l, off, len, NULL), 0);
	tu_assert_str(&l, left);
	bl_list_clear(&l);
}

/* _i: cuts at the start, in the middle, at the end of ABC DEF GHI J */
static const struct {
	size_t off, len;
	const char *left, *taken;
} splice_cases[3][3] = {
	{ { 0, 2, "CDEFGHIJ", "AB" }, { 0, 3, "DEFGHIJ", "ABC" },
	  { 0, 4, "EFGHIJ", "ABCD" } },
	{ { 4, 3, "ABCDHIJ", "EFG" }, { 3, 6, "ABCJ", "DEFGHI" },
	  { 2, 5, "ABHIJ", "CDEFG" } },
	{ { 7, 3, "ABCDEFG", "HIJ" }, { 9, 1, "ABCDEFGHI", "J" },
	  { 5, 5, "ABCDE", "FGHIJ" } },
};

START_TEST(test_splice_at_start_in_middle_and_at_end)
{
	for (int k = 0; k < 3; k++)
		splice_case(splice_cases[_i][k].off, splice_cases[_i][k].len,
			    splice_cases[_i][k].left,
			    splice_cases[_i][k].taken);
}
END_TEST

START_TEST(test_splice_whole_list_moves_everything)
{
	struct bl_list l, c;
	struct bl_raw *r[4];

	tu_make_abc(&l);
	for (unsigned i = 0; i < 4; i++)
		r[i] = tu_seg_of(&l, i).raw;
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_splice(&l, 0, 10, &c), 0);
	tu_assert_str(&l, "");
	tu_assert_str(&c, "ABCDEFGHIJ");
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

	tu_make_abc(&l);
	def = tu_seg_of(&l, 1).raw;
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_splice(&l, 4, 1, &c), 0);
	tu_assert_str(&l, "ABCDFGHIJ");
	tu_assert_str(&c, "E");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5);
	/* "D" and "F" in l, "E" in c: only the cut gained a reference */
	ck_assert_uint_eq(bl_raw_nref(def), 3);
	ck_assert_ptr_eq(tu_seg_of(&c, 0).raw, def);
	bl_list_clear(&c);
	ck_assert_uint_eq(bl_raw_nref(def), 2);
	ck_assert_int_eq(bl_list_splice(&l, 3, 1, NULL), 0);
	tu_assert_str(&l, "ABCFGHIJ");
	ck_assert_uint_eq(bl_raw_nref(def), 1);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_splice_without_claim_by_releases)
{
	struct bl_list l;
	struct bl_stats s0, s1;

	tu_make_abc(&l);
	s0 = stats_now();
	ck_assert_int_eq(bl_list_splice(&l, 3, 6, NULL), 0);
	s1 = stats_now();
	tu_assert_str(&l, "ABCJ");
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 2);
	ck_assert_uint_eq(s1.copied_bytes, s0.copied_bytes);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_splice_claim_by_appends)
{
	struct bl_list l, c;

	tu_make_abc(&l);
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_append(&c, "xy", 2), 0);
	ck_assert_int_eq(bl_list_splice(&l, 0, 2, &c), 0);
	tu_assert_str(&c, "xyAB");
	ck_assert_int_eq(bl_list_splice(&l, 6, 2, &c), 0);
	tu_assert_str(&c, "xyABIJ");
	tu_assert_str(&l, "CDEFGH");
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

	tu_make_abc(&l);
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_append(&c, "xy", 2), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(bl_list_splice(&l, bad[i].off, bad[i].len, &c) ==
			      -ERANGE, "splice(%zu, %zu) accepted",
			      bad[i].off, bad[i].len);
		ck_assert_int_eq(bl_list_splice(&l, bad[i].off, bad[i].len,
						NULL), -ERANGE);
		tu_assert_str(&l, "ABCDEFGHIJ");
		ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
		tu_assert_str(&c, "xy");
	}
	bl_list_clear(&l);
	bl_list_clear(&c);
}
END_TEST

START_TEST(test_splice_into_itself_is_einval)
{
	struct bl_list l;

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_splice(&l, 2, 3, &l), -EINVAL);
	tu_assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_splice_empty_range_changes_nothing)
{
	struct bl_list l, c;

	tu_make_abc(&l);
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_splice(&l, 10, 0, &c), 0);
	ck_assert_int_eq(bl_list_splice(&l, 3, 0, &c), 0);
	ck_assert_int_eq(bl_list_splice(&l, 4, 0, NULL), 0);
	tu_assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	tu_assert_str(&c, "");
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
	struct tu_snap sl, sc;

	make_chunked(&l, data);
	r5 = tu_seg_of(&l, 5).raw;
	r130 = tu_seg_of(&l, 130).raw;
	bl_list_init(&c);
	ck_assert_int_eq(bl_list_append(&c, "xy", 2), 0);
	tu_snap_take(&sl, &l);
	tu_snap_take(&sc, &c);
	/* the first chunk, then the second (there are middle chunks) */
	for (uint64_t at = 1; at <= 2; at++) {
		tu_alloc_install(at, 1);
		ck_assert_int_eq(bl_list_splice(&l, 11, 250, &c), -ENOMEM);
		tu_alloc_uninstall();
		tu_snap_check(&sl, &l);
		tu_snap_check(&sc, &c);
		ck_assert_uint_eq(bl_raw_nref(r5), 1);
		ck_assert_uint_eq(bl_raw_nref(r130), 1);
	}
	/* adjacent chunks need one */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_splice(&l, 41, 20, &c), -ENOMEM);
	tu_alloc_uninstall();
	tu_snap_check(&sl, &l);
	tu_snap_check(&sc, &c);
	/* with memory: both ends cut, each gains one reference */
	ck_assert_int_eq(bl_list_splice(&l, 11, 250, &c), 0);
	ck_assert_uint_eq(bl_raw_nref(r5), 2);
	ck_assert_uint_eq(bl_raw_nref(r130), 2);
	bl_list_clear(&c);
	ck_assert_uint_eq(bl_raw_nref(r5), 1);
	ck_assert_uint_eq(bl_raw_nref(r130), 1);
	tu_snap_free(&sl);
	tu_snap_free(&sc);
	bl_list_clear(&l);
}
END_TEST

/* ---- substr_of --------------------------------------------------------- */

START_TEST(test_substr_shares_without_copy)
{
	struct bl_list src, d;
	struct bl_raw *r[4];
	uint64_t c0;

	tu_make_abc(&src);
	for (unsigned i = 0; i < 4; i++)
		r[i] = tu_seg_of(&src, i).raw;
	bl_list_init(&d);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 2, 6), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_str(&d, "CDEFGH");
	tu_assert_str(&src, "ABCDEFGHIJ");
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

	tu_make_abc(&src);
	bl_list_init(&d);
	ck_assert_int_eq(bl_ptr_alloc(&old, 3), 0);
	memcpy(bl_ptr_data(&old), "old", 3);
	ck_assert_int_eq(bl_list_append_ptr(&d, &old), 0);
	ck_assert_uint_eq(bl_raw_nref(old.raw), 2);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 0, 10), 0);
	tu_assert_str(&d, "ABCDEFGHIJ");
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

	tu_make_abc(&l);
	first = tu_seg_of(&l, 0).raw;
	ck_assert_uint_eq(bl_raw_nref(first), 1);
	s0 = stats_now();
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 4, 5), 0);
	s1 = stats_now();
	tu_assert_str(&l, "EFGHI");
	/* ABC and J are gone, nothing copied */
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 2);
	ck_assert_uint_eq(s1.copied_bytes, s0.copied_bytes);
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 0, 5), 0);
	tu_assert_str(&l, "EFGHI");
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 5, 0), 0);
	tu_assert_str(&l, "");
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

	tu_make_abc(&src);
	bl_list_init(&d);
	ck_assert_int_eq(bl_list_append(&d, "keep", 4), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(bl_list_substr_of(&d, &src, bad[i].off,
						bad[i].len) == -ERANGE,
			      "substr_of(%zu, %zu) accepted", bad[i].off,
			      bad[i].len);
		tu_assert_str(&d, "keep");
		ck_assert_int_eq(bl_list_substr_of(&src, &src, bad[i].off,
						   bad[i].len), -ERANGE);
		tu_assert_str(&src, "ABCDEFGHIJ");
	}
	bl_list_clear(&src);
	bl_list_clear(&d);
}
END_TEST

START_TEST(test_substr_empty_range_at_end)
{
	struct bl_list src, d;

	tu_make_abc(&src);
	bl_list_init(&d);
	ck_assert_int_eq(bl_list_append(&d, "junk", 4), 0);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 10, 0), 0);
	tu_assert_str(&d, "");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 0);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 3, 0), 0);
	tu_assert_str(&d, "");
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 9, 1), 0);
	tu_assert_str(&d, "J");
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
		r[i] = tu_seg_of(l, i).raw;
}

START_TEST(test_substr_inside_one_segment_into_empty_allocates_nothing)
{
	struct bl_list src, d;
	struct bl_raw *r[4];
	struct tu_alloc_stats st;
	struct bl_ptr p;

	tu_make_abc(&src);
	abc_raws(&src, r);
	bl_list_init(&d);
	/* every allocation fails: the one-slot path needs none */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 4, 2), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs, 0);
	ck_assert_uint_eq(st.failed, 0);
	tu_assert_str(&d, "EF");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 1);
	p = tu_seg_of(&d, 0);
	ck_assert_ptr_eq(p.raw, r[1]);
	ck_assert_uint_eq(p.off, 1);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 2);
	/* a whole segment, and the last byte of the list */
	bl_list_clear(&d);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 6, 3), 0);
	tu_assert_str(&d, "GHI");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 1);
	bl_list_clear(&d);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 9, 1), 0);
	tu_assert_str(&d, "J");
	ck_assert_uint_eq(bl_raw_nref(r[3]), 2);
	bl_list_clear(&d);
	ck_assert_uint_eq(bl_raw_nref(r[3]), 1);
	tu_assert_str(&src, "ABCDEFGHIJ");
	bl_list_clear(&src);
}
END_TEST

START_TEST(test_substr_inside_one_segment_keeps_dst_append_buffer)
{
	struct bl_list src, d;

	tu_make_abc(&src);
	bl_list_init(&d);
	/* d: no segment, but an append buffer */
	ck_assert_int_eq(bl_list_append(&d, "junk", 4), 0);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 3, 0), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&d), 0);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 1, 2), 0);
	tu_assert_str(&d, "BC");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 1);
	ck_assert_int_eq(bl_list_append(&d, "xy", 2), 0);
	tu_assert_str(&d, "BCxy");
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

	tu_make_abc(&src);
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
	tu_assert_str(&d, "HI");
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

	tu_make_abc(&l);
	abc_raws(&l, r);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	s0 = stats_now();
	/* the list holds the raw's only reference while it is replaced */
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 4, 2), 0);
	s1 = stats_now();
	tu_assert_str(&l, "EF");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 3);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 1);
	ck_assert_int_eq(bl_list_substr_of(&l, &l, 1, 1), 0);
	tu_assert_str(&l, "F");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_substr_across_segments_into_empty_fails_atomically)
{
	struct bl_list src, d;
	struct bl_raw *r[4];

	tu_make_abc(&src);
	abc_raws(&src, r);
	bl_list_init(&d);
	/* two segments fit d's inline slots: no allocation */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 2, 2), 0);
	tu_alloc_uninstall();
	tu_assert_str(&d, "CD");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	/* four need a chunk: refused, d and the references as they were */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 1, 9), -ENOMEM);
	tu_alloc_uninstall();
	tu_assert_str(&d, "CD");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_uint_eq(bl_raw_nref(r[i]), i < 2 ? 2 : 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 1, 9), 0);
	tu_assert_str(&d, "BCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&d), 4);
	bl_list_clear(&d);
	/* into an empty list, also refused without a trace */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 0, 10), -ENOMEM);
	tu_alloc_uninstall();
	tu_assert_str(&d, "");
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

	tu_make_abc(&src);
	abc_raws(&src, r);
	bl_list_init(&d);
	bl_list_clear(&d);	/* empty: nothing to drop */
	tu_assert_str(&d, "");
	ck_assert_int_eq(bl_list_substr_of(&d, &src, 3, 3), 0);
	ck_assert_uint_eq(bl_raw_nref(r[1]), 2);
	bl_list_clear(&d);
	tu_assert_str(&d, "");
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
	tu_assert_str(&d, "");
	ck_assert_int_eq(bl_list_append(&d, "again", 5), 0);
	tu_assert_str(&d, "again");
	bl_list_clear(&d);
	bl_list_clear(NULL);
}
END_TEST

int main(void)
{
	const TTest *splice_tests[] = {
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
	const struct tu_loop splice_loops[] = {
		{ test_splice_at_start_in_middle_and_at_end, 0, 3 },
		{ NULL, 0, 0 }
	};
	const struct tu_group groups[] = {
		TU_GROUP("splice", splice_tests, .loops = splice_loops),
		TU_GROUP("substr", substr_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("list_splice", groups));
}
