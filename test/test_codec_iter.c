/* SPDX-License-Identifier: MIT */
/*
 * test_codec_iter.c - the cursor: init, seek, advance, copy (into memory
 * and into a list, sharing slices), zero-copy runs, and the public
 * headers' inline moves and decoders against their exported copies, over
 * lists cut at every seam and in random walks against a flat model.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "testutil.h"
#include "inline_ops.h"

/* ---- helpers ----------------------------------------------------------- */

/* Each of @l's four raws back to the list's and @seg's references only
 * (what a test shared has been dropped); then both go. */
static void release_abc(struct bl_list *l, struct bl_ptr seg[4])
{
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_uint_eq(bl_raw_nref(seg[i].raw), 2);
		bl_ptr_release(&seg[i]);
	}
	bl_list_clear(l);
}

/* ---- iterator ---------------------------------------------------------- */

/*
 * A cursor's moves as a table: each step's call returns @rc; then, unless
 * @at is NOWHERE, the cursor stands at @at with the rest after it, and a
 * copy that succeeded gave @bytes.
 */
#define NOWHERE SIZE_MAX
struct step {
	char op;		/* i init, a advance, s seek, c copy */
	size_t arg;		/* offset, or byte count */
	int rc;
	size_t at;
	const char *bytes;
};

static void run_steps(const struct bl_list *l, const struct step *s,
		      size_t n)
{
	size_t len = bl_list_length(l);
	struct bl_iter it;
	char buf[16];

	for (; n--; s++) {
		int rc = s->op == 'i' ? bl_iter_init(&it, l, s->arg) :
			 s->op == 'a' ? bl_iter_advance(&it, s->arg) :
			 s->op == 's' ? bl_iter_seek(&it, s->arg) :
					bl_iter_copy(&it, s->arg, buf);

		ck_assert_int_eq(rc, s->rc);
		if (s->bytes && !rc)
			ck_assert_mem_eq(buf, s->bytes, s->arg);
		if (s->at != NOWHERE)
			tu_assert_at(&it, s->at, len - s->at);
	}
}

/* run_steps() on "ABCDEFGHIJ" as ABC DEF GHI J. */
static void run_on_abc(const struct step *s, size_t n)
{
	struct bl_list l;

	tu_make_abc(&l);
	run_steps(&l, s, n);
	bl_list_clear(&l);
}

#define NSTEPS(t) (sizeof(t) / sizeof(t[0]))
#define STEP(o, a, r, at) { (o), (a), (r), (at), NULL }
#define COPY(n, at, b) { 'c', (n), 0, (at), (b) }

START_TEST(test_iter_init_at_offsets)
{
	static const struct step abc[] = {
		STEP('i', 0, 0, 0), STEP('i', 4, 0, 4), STEP('i', 3, 0, 3),
		STEP('i', 10, 0, 10), STEP('i', 11, -ERANGE, NOWHERE),
		STEP('i', SIZE_MAX, -ERANGE, NOWHERE),
	};
	static const struct step empty[] = {
		STEP('i', 0, 0, 0), STEP('i', 1, -ERANGE, NOWHERE),
	};
	struct bl_list e;

	run_on_abc(abc, NSTEPS(abc));
	bl_list_init(&e);
	run_steps(&e, empty, NSTEPS(empty));
}
END_TEST

START_TEST(test_iter_advance_crosses_segments)
{
	static const struct step steps[] = {
		STEP('i', 0, 0, NOWHERE), STEP('a', 2, 0, 2),
		STEP('a', 5, 0, 7),
		/* too far: refused, cursor stays */
		STEP('a', 4, -ERANGE, 7), STEP('a', SIZE_MAX, -ERANGE, 7),
		COPY(3, 10, "HIJ"), STEP('a', 0, 0, NOWHERE),
		STEP('a', 1, -ERANGE, 10),
	};

	run_on_abc(steps, NSTEPS(steps));
}
END_TEST

START_TEST(test_iter_seek_both_ways)
{
	static const struct step steps[] = {
		STEP('i', 0, 0, NOWHERE), STEP('s', 9, 0, 9),
		COPY(1, NOWHERE, "J"), STEP('s', 3, 0, NOWHERE),
		COPY(3, NOWHERE, "DEF"), STEP('s', 0, 0, NOWHERE),
		COPY(2, NOWHERE, "AB"), STEP('s', 10, 0, 10),
		STEP('s', 5, 0, NOWHERE), STEP('s', 11, -ERANGE, NOWHERE),
		STEP('s', SIZE_MAX, -ERANGE, 5), COPY(2, NOWHERE, "FG"),
	};

	run_on_abc(steps, NSTEPS(steps));
}
END_TEST

START_TEST(test_iter_copy_across_segments)
{
	static const char text[] = "0123456789abcdef";
	struct bl_list l;
	struct bl_iter it;
	char buf[17];

	tu_list_bytewise(&l, text, 16);
	ck_assert_int_eq(bl_iter_init(&it, &l, 1), 0);
	memset(buf, '#', sizeof(buf));
	ck_assert_int_eq(bl_iter_copy(&it, 10, buf), 0);
	ck_assert_mem_eq(buf, "123456789a", 10);
	ck_assert_uint_eq(buf[10], '#');
	tu_assert_at(&it, 11, 5);
	ck_assert_int_eq(bl_iter_copy(&it, 6, buf), -ERANGE);
	tu_assert_at(&it, 11, 5);
	ck_assert_mem_eq(buf, "123456789a#", 11);	/* nothing copied */
	ck_assert_int_eq(bl_iter_copy(&it, 5, buf), 0);
	ck_assert_mem_eq(buf, "bcdef", 5);
	ck_assert_int_eq(bl_iter_copy(&it, 0, buf), 0);
	tu_assert_at(&it, 16, 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_iter_copy_list_shares_slices)
{
	struct bl_list l, dst;
	struct bl_iter it;
	struct bl_ptr seg[4];
	uint64_t c0;

	tu_make_abc(&l);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(bl_list_get_ptr(&l, i, &seg[i]), 0);
	bl_list_init(&dst);
	ck_assert_int_eq(bl_list_append(&dst, "xy", 2), 0);
	ck_assert_int_eq(bl_iter_init(&it, &l, 2), 0);
	c0 = copied_now();
	ck_assert_int_eq(bl_iter_copy_list(&it, 6, &dst), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_list_eq(&dst, "xyCDEFGH", 8);
	tu_assert_at(&it, 8, 2);
	/* l and our seg[] hold one each, dst one more for ABC DEF GHI */
	ck_assert_uint_eq(bl_raw_nref(seg[0].raw), 3);
	ck_assert_uint_eq(bl_raw_nref(seg[1].raw), 3);
	ck_assert_uint_eq(bl_raw_nref(seg[2].raw), 3);
	ck_assert_uint_eq(bl_raw_nref(seg[3].raw), 2);
	/* too long: refused, nothing appended, cursor stays */
	ck_assert_int_eq(bl_iter_copy_list(&it, 3, &dst), -ERANGE);
	tu_assert_list_eq(&dst, "xyCDEFGH", 8);
	tu_assert_at(&it, 8, 2);
	ck_assert_int_eq(bl_iter_copy_list(&it, 2, &dst), 0);
	tu_assert_list_eq(&dst, "xyCDEFGHIJ", 10);
	tu_assert_list_eq(&l, "ABCDEFGHIJ", 10);
	bl_list_clear(&dst);
	release_abc(&l, seg);
}
END_TEST

START_TEST(test_iter_copy_list_inside_segment_into_empty_sets_one_slot)
{
	struct bl_list l, dst;
	struct bl_iter it;
	struct bl_ptr seg[4], p;
	struct tu_alloc_stats st;

	tu_make_abc(&l);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_int_eq(bl_list_get_ptr(&l, i, &seg[i]), 0);
	bl_list_init(&dst);
	ck_assert_int_eq(bl_iter_init(&it, &l, 3), 0);
	/* inside DEF, into an empty list: no allocation at all */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_iter_copy_list(&it, 2, &dst), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs + st.failed, 0);
	tu_assert_list_eq(&dst, "DE", 2);
	ck_assert_uint_eq(bl_list_num_buffers(&dst), 1);
	ck_assert_int_eq(bl_list_get_ptr(&dst, 0, &p), 0);
	ck_assert_ptr_eq(p.raw, seg[1].raw);
	ck_assert_uint_eq(p.off, 0);
	bl_ptr_release(&p);
	ck_assert_uint_eq(bl_raw_nref(seg[1].raw), 3);
	tu_assert_at(&it, 5, 5);
	/* the cursor stays in DEF: the next byte is F */
	{
		uint8_t b;

		ck_assert_int_eq(bl_decode_u8(&it, &b), 0);
		ck_assert_uint_eq(b, 'F');
	}
	bl_list_clear(&dst);
	ck_assert_uint_eq(bl_raw_nref(seg[1].raw), 2);
	/* dst without segments but with an append buffer keeps it */
	ck_assert_int_eq(bl_list_append(&dst, "xy", 2), 0);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	ck_assert_int_eq(bl_iter_copy_list(&it, 0, &dst), 0);
	tu_assert_list_eq(&dst, "xy", 2);
	bl_list_clear(&dst);
	ck_assert_int_eq(bl_list_append(&dst, "xy", 2), 0);
	ck_assert_int_eq(bl_list_substr_of(&dst, &l, 0, 0), 0);
	ck_assert_int_eq(bl_iter_copy_list(&it, 1, &dst), 0);
	ck_assert_int_eq(bl_list_append(&dst, "z", 1), 0);
	tu_assert_list_eq(&dst, "Az", 2);
	ck_assert_uint_eq(bl_list_num_buffers(&dst), 2);
	tu_assert_at(&it, 1, 9);
	bl_list_clear(&dst);
	release_abc(&l, seg);
}
END_TEST

START_TEST(test_iter_copy_list_to_segment_end_or_beyond)
{
	struct bl_list l, dst;
	struct bl_iter it;

	tu_make_abc(&l);
	bl_list_init(&dst);
	/* up to the end of DEF exactly: the cursor moves on to GHI */
	ck_assert_int_eq(bl_iter_init(&it, &l, 4), 0);
	ck_assert_int_eq(bl_iter_copy_list(&it, 2, &dst), 0);
	tu_assert_list_eq(&dst, "EF", 2);
	ck_assert_uint_eq(bl_list_num_buffers(&dst), 1);
	tu_assert_at(&it, 6, 4);
	bl_list_clear(&dst);
	/* across a seam into an empty list: two slices */
	ck_assert_int_eq(bl_iter_copy_list(&it, 4, &dst), 0);
	tu_assert_list_eq(&dst, "GHIJ", 4);
	ck_assert_uint_eq(bl_list_num_buffers(&dst), 2);
	tu_assert_at(&it, 10, 0);
	/* at the end: only 0 bytes can be taken */
	ck_assert_int_eq(bl_iter_copy_list(&it, 1, &dst), -ERANGE);
	ck_assert_int_eq(bl_iter_copy_list(&it, 0, &dst), 0);
	tu_assert_list_eq(&dst, "GHIJ", 4);
	/* inside a segment into a list that has one: appended */
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	ck_assert_int_eq(bl_iter_copy_list(&it, 1, &dst), 0);
	tu_assert_list_eq(&dst, "GHIJA", 5);
	ck_assert_uint_eq(bl_list_num_buffers(&dst), 3);
	tu_assert_at(&it, 1, 9);
	bl_list_clear(&dst);
	/* three slices need a chunk: without memory, nothing moves */
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_iter_copy_list(&it, 8, &dst), -ENOMEM);
	tu_alloc_uninstall();
	tu_assert_list_eq(&dst, "", 0);
	tu_assert_at(&it, 1, 9);
	ck_assert_int_eq(bl_iter_copy_list(&it, 8, &dst), 0);
	tu_assert_list_eq(&dst, "BCDEFGHI", 8);
	ck_assert_uint_eq(bl_list_num_buffers(&dst), 3);
	bl_list_clear(&dst);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_get_ptr_and_advance_returns_runs)
{
	struct bl_list l;
	struct bl_iter it;
	struct bl_ptr seg1 = BL_PTR_INIT;
	const char *d = NULL;
	uint64_t c0;

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_get_ptr(&l, 1, &seg1), 0);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	c0 = copied_now();
	ck_assert_uint_eq(bl_iter_get_ptr_and_advance(&it, 100, &d), 3);
	ck_assert_mem_eq(d, "ABC", 3);
	tu_assert_at(&it, 3, 7);
	ck_assert_uint_eq(bl_iter_get_ptr_and_advance(&it, 2, &d), 2);
	ck_assert_ptr_eq(d, bl_ptr_data(&seg1));
	ck_assert_mem_eq(d, "DE", 2);
	ck_assert_uint_eq(bl_iter_get_ptr_and_advance(&it, 100, &d), 1);
	ck_assert_ptr_eq(d, bl_ptr_data(&seg1) + 2);
	ck_assert_uint_eq(bl_iter_get_ptr_and_advance(&it, 100, &d), 3);
	ck_assert_mem_eq(d, "GHI", 3);
	ck_assert_uint_eq(bl_iter_get_ptr_and_advance(&it, 100, &d), 1);
	ck_assert_mem_eq(d, "J", 1);
	tu_assert_at(&it, 10, 0);
	ck_assert_uint_eq(bl_iter_get_ptr_and_advance(&it, 100, &d), 0);
	ck_assert_uint_eq(bl_iter_get_ptr_and_advance(&it, 100, &d), 0);
	tu_assert_at(&it, 10, 0);
	ck_assert_uint_eq(copied_now(), c0);
	bl_ptr_release(&seg1);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_iter_copied_by_assignment_is_independent)
{
	struct bl_list l;
	struct bl_iter a, b;
	char ba[3], bb[3];

	tu_make_abc(&l);
	ck_assert_int_eq(bl_iter_init(&a, &l, 2), 0);
	b = a;
	ck_assert_int_eq(bl_iter_advance(&b, 5), 0);
	tu_assert_at(&a, 2, 8);
	tu_assert_at(&b, 7, 3);
	ck_assert_int_eq(bl_iter_copy(&a, 3, ba), 0);
	ck_assert_int_eq(bl_iter_copy(&b, 3, bb), 0);
	ck_assert_mem_eq(ba, "CDE", 3);
	ck_assert_mem_eq(bb, "HIJ", 3);
	b = a;
	ck_assert_int_eq(bl_iter_seek(&a, 0), 0);
	tu_assert_at(&b, 5, 5);
	ck_assert_int_eq(bl_iter_copy(&b, 3, bb), 0);
	ck_assert_mem_eq(bb, "FGH", 3);
	bl_list_clear(&l);
}
END_TEST

/* A random walk's list: @len random bytes in @data, as segments of 1..13
 * bytes of their own raws, and a cursor at its start. */
static void walk_start(struct bl_list *l, struct bl_iter *it,
		       unsigned char *data, size_t len, uint64_t *rng)
{
	tu_fill(data, len, rng);
	bl_list_init(l);
	tu_append_segmented(l, data, len, 13, 1, rng);
	ck_assert_int_eq(bl_iter_init(it, l, 0), 0);
}

START_TEST(test_iter_random_walk_matches_model)
{
	static unsigned char data[5000];
	unsigned char buf[600];
	uint64_t rng = tu_seed("test_iter_random_walk_matches_model");
	struct bl_list l;
	struct bl_iter it;

	walk_start(&l, &it, data, sizeof(data), &rng);
	for (int i = 0; i < 2000; i++) {
		size_t pos = bl_iter_offset(&it), n = tu_rand(&rng) % 600;

		switch (tu_rand(&rng) % 4) {
		case 0:
			pos = tu_rand(&rng) % (sizeof(data) + 1);
			TU_REQUIRE(bl_iter_seek(&it, pos) == 0);
			break;
		case 1:
			if (pos + n <= sizeof(data)) {
				TU_REQUIRE(bl_iter_advance(&it, n) == 0);
				pos += n;
			} else {
				TU_REQUIRE(bl_iter_advance(&it, n) == -ERANGE);
			}
			break;
		case 2:
			if (pos + n <= sizeof(data)) {
				TU_REQUIRE(bl_iter_copy(&it, n, buf) == 0);
				TU_REQUIRE(memcmp(buf, data + pos, n) == 0);
				pos += n;
			} else {
				TU_REQUIRE(bl_iter_copy(&it, n, buf) ==
					   -ERANGE);
			}
			break;
		default: {
			const char *d;
			size_t got = bl_iter_get_ptr_and_advance(&it, n, &d);

			TU_REQUIRE(got <= n);
			TU_REQUIRE(got <= (sizeof(data) - pos));
			if (n && pos < sizeof(data))
				TU_REQUIRE(got > 0);
			TU_REQUIRE(got == 0 || memcmp(d, data + pos, got) == 0);
			pos += got;
			break;
		}
		}
		tu_assert_at(&it, pos, sizeof(data) - pos);
	}
	bl_list_clear(&l);
}
END_TEST

/* ---- the inline moves and decoders, and their exported copies ---------- */

static int in_advance(struct bl_iter *it, size_t n)
{
	return bl_iter_advance(it, n);
}

static size_t in_get_ptr(struct bl_iter *it, size_t want, const char **data)
{
	return bl_iter_get_ptr_and_advance(it, want, data);
}

static int in_u8(struct bl_iter *it, uint8_t *v)
{
	return bl_decode_u8(it, v);
}

static int in_u16(struct bl_iter *it, uint16_t *v)
{
	return bl_decode_u16(it, v);
}

static int in_u32(struct bl_iter *it, uint32_t *v)
{
	return bl_decode_u32(it, v);
}

static int in_u64(struct bl_iter *it, uint64_t *v)
{
	return bl_decode_u64(it, v);
}

static const struct iter_ops inline_iter_ops = {
	.name = "inline",
	.advance = in_advance,
	.get_ptr = in_get_ptr,
	.u8 = in_u8,
	.u16 = in_u16,
	.u32 = in_u32,
	.u64 = in_u64,
	.offset = bl_iter_offset,
	.remaining = bl_iter_remaining,
};

/* Loop tests run _i = 0 (the inline copies) and 1 (the exported ones). */
static const struct iter_ops *ops_of(int i)
{
	return i ? &exported_iter_ops : &inline_iter_ops;
}

/* Decodes a @w-byte value (1, 2, 4, 8) with @o. */
static int decode_w(const struct iter_ops *o, struct bl_iter *it, int w,
		    uint64_t *v)
{
	uint8_t a;
	uint16_t b;
	uint32_t c;
	int ret;

	switch (w) {
	case 1:
		ret = o->u8(it, &a);
		if (!ret)
			*v = a;
		return ret;
	case 2:
		ret = o->u16(it, &b);
		if (!ret)
			*v = b;
		return ret;
	case 4:
		ret = o->u32(it, &c);
		if (!ret)
			*v = c;
		return ret;
	default:
		return o->u64(it, v);
	}
}

START_TEST(test_inline_moves_on_an_empty_list)
{
	const struct iter_ops *o = ops_of(_i);
	struct bl_list l;
	struct bl_iter it;
	const char *d = "x";
	uint8_t a = 7;
	uint16_t b = 7;
	uint32_t c = 7;
	uint64_t v = 7;

	bl_list_init(&l);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	ck_assert_uint_eq(o->get_ptr(&it, 5, &d), 0);
	ck_assert_ptr_null(d);
	d = "x";
	ck_assert_uint_eq(o->get_ptr(&it, 0, &d), 0);
	ck_assert_ptr_null(d);
	ck_assert_int_eq(o->advance(&it, 0), 0);
	ck_assert_int_eq(o->advance(&it, 1), -ERANGE);
	ck_assert_int_eq(o->u8(&it, &a), -ERANGE);
	ck_assert_int_eq(o->u16(&it, &b), -ERANGE);
	ck_assert_int_eq(o->u32(&it, &c), -ERANGE);
	ck_assert_int_eq(o->u64(&it, &v), -ERANGE);
	ck_assert(a == 7 && b == 7 && c == 7 && v == 7);
	tu_assert_at(&it, 0, 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_inline_get_ptr_at_segment_boundaries)
{
	const struct iter_ops *o = ops_of(_i);
	struct bl_list l;
	struct bl_iter it;
	struct bl_ptr seg[4];
	const char *d;
	uint64_t c0 = copied_now();

	tu_make_abc(&l);
	for (unsigned i = 0; i < 4; i++) {
		seg[i] = (struct bl_ptr)BL_PTR_INIT;
		ck_assert_int_eq(bl_list_get_ptr(&l, i, &seg[i]), 0);
	}
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	/* zero wanted: nothing, and the cursor stays */
	d = "x";
	ck_assert_uint_eq(o->get_ptr(&it, 0, &d), 0);
	ck_assert_ptr_null(d);
	tu_assert_at(&it, 0, 10);
	/* exactly the rest of the segment */
	ck_assert_uint_eq(o->get_ptr(&it, 3, &d), 3);
	ck_assert_ptr_eq(d, bl_ptr_data(&seg[0]));
	tu_assert_at(&it, 3, 7);
	d = "x";
	ck_assert_uint_eq(o->get_ptr(&it, 0, &d), 0);
	ck_assert_ptr_null(d);
	tu_assert_at(&it, 3, 7);
	/* the next byte is the next segment's first */
	ck_assert_uint_eq(o->get_ptr(&it, 1, &d), 1);
	ck_assert_ptr_eq(d, bl_ptr_data(&seg[1]));
	tu_assert_at(&it, 4, 6);
	/* wanted across the seam: the rest of the segment only */
	ck_assert_uint_eq(o->get_ptr(&it, 5, &d), 2);
	ck_assert_ptr_eq(d, bl_ptr_data(&seg[1]) + 1);
	ck_assert_mem_eq(d, "EF", 2);
	tu_assert_at(&it, 6, 4);
	/* inside a segment */
	ck_assert_uint_eq(o->get_ptr(&it, 2, &d), 2);
	ck_assert_ptr_eq(d, bl_ptr_data(&seg[2]));
	tu_assert_at(&it, 8, 2);
	ck_assert_uint_eq(o->get_ptr(&it, 1, &d), 1);
	ck_assert_mem_eq(d, "I", 1);
	/* the last byte, exactly: at the end */
	ck_assert_uint_eq(o->get_ptr(&it, 1, &d), 1);
	ck_assert_ptr_eq(d, bl_ptr_data(&seg[3]));
	tu_assert_at(&it, 10, 0);
	/* at the end: nothing, whatever is wanted */
	d = "x";
	ck_assert_uint_eq(o->get_ptr(&it, 1, &d), 0);
	ck_assert_ptr_null(d);
	d = "x";
	ck_assert_uint_eq(o->get_ptr(&it, 0, &d), 0);
	ck_assert_ptr_null(d);
	tu_assert_at(&it, 10, 0);
	/* from an offset inside the first segment, to its end */
	ck_assert_int_eq(bl_iter_init(&it, &l, 1), 0);
	ck_assert_uint_eq(o->get_ptr(&it, 2, &d), 2);
	ck_assert_mem_eq(d, "BC", 2);
	ck_assert_uint_eq(o->get_ptr(&it, SIZE_MAX, &d), 3);
	ck_assert_mem_eq(d, "DEF", 3);
	ck_assert_uint_eq(copied_now(), c0);
	release_abc(&l, seg);
}
END_TEST

START_TEST(test_inline_advance_at_segment_boundaries)
{
	const struct iter_ops *o = ops_of(_i);
	struct bl_list l, dst;
	struct bl_iter it, t;
	char buf[4];
	const char *d;
	uint64_t v, c0;

	tu_make_abc(&l);
	bl_list_init(&dst);
	/* to the end of a segment exactly, then what follows */
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	ck_assert_int_eq(o->advance(&it, 3), 0);
	tu_assert_at(&it, 3, 7);
	ck_assert_int_eq(o->advance(&it, 0), 0);
	tu_assert_at(&it, 3, 7);
	t = it;
	ck_assert_uint_eq(o->get_ptr(&t, SIZE_MAX, &d), 3);
	ck_assert_mem_eq(d, "DEF", 3);
	t = it;
	ck_assert_int_eq(decode_w(o, &t, 1, &v), 0);
	ck_assert_uint_eq(v, 'D');
	t = it;
	ck_assert_int_eq(bl_iter_copy(&t, 4, buf), 0);
	ck_assert_mem_eq(buf, "DEFG", 4);
	tu_assert_at(&t, 7, 3);
	t = it;
	c0 = copied_now();
	ck_assert_int_eq(bl_iter_copy_list(&t, 3, &dst), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_list_eq(&dst, "DEF", 3);
	ck_assert_uint_eq(bl_list_num_buffers(&dst), 1);
	tu_assert_at(&t, 6, 4);
	bl_list_clear(&dst);
	t = it;
	ck_assert_int_eq(bl_iter_seek(&t, 1), 0);
	ck_assert_int_eq(decode_w(o, &t, 1, &v), 0);
	ck_assert_uint_eq(v, 'B');
	ck_assert_int_eq(bl_iter_seek(&t, 4), 0);
	ck_assert_int_eq(decode_w(o, &t, 1, &v), 0);
	ck_assert_uint_eq(v, 'E');
	/* across a seam */
	ck_assert_int_eq(bl_iter_init(&it, &l, 1), 0);
	ck_assert_int_eq(o->advance(&it, 4), 0);
	tu_assert_at(&it, 5, 5);
	ck_assert_int_eq(decode_w(o, &it, 1, &v), 0);
	ck_assert_uint_eq(v, 'F');
	/* to the very end, then nothing more */
	ck_assert_int_eq(o->advance(&it, 4), 0);
	tu_assert_at(&it, 10, 0);
	ck_assert_int_eq(o->advance(&it, 0), 0);
	ck_assert_int_eq(o->advance(&it, 1), -ERANGE);
	tu_assert_at(&it, 10, 0);
	/* too far: refused, the cursor stays, inside a segment or not */
	ck_assert_int_eq(bl_iter_init(&it, &l, 2), 0);
	ck_assert_int_eq(o->advance(&it, 9), -ERANGE);
	tu_assert_at(&it, 2, 8);
	ck_assert_int_eq(o->advance(&it, SIZE_MAX), -ERANGE);
	tu_assert_at(&it, 2, 8);
	ck_assert_int_eq(o->advance(&it, 8), 0);
	tu_assert_at(&it, 10, 0);
	bl_list_clear(&l);
}
END_TEST

/*
 * Every width decoded at every place against the seams: values placed
 * 0..9 bytes into segments of 1..9 bytes, so each lies inside a segment,
 * ends one exactly, or crosses one or more seams.
 */
START_TEST(test_inline_decodes_split_at_every_seam)
{
	static const int widths[] = { 1, 2, 4, 8 };
	const struct iter_ops *o = ops_of(_i);
	unsigned char data[32];

	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(0x11 * (i + 1));
	for (size_t seg = 1; seg <= 9; seg++) {
		for (size_t at = 0; at < 10; at++) {
			for (unsigned k = 0; k < 4; k++) {
				int w = widths[k];
				struct bl_list l;
				struct bl_iter it;
				uint64_t v = 0, want = 0;

				bl_list_init(&l);
				tu_append_fixed(&l, data, at + (size_t)w + 1, seg);
				for (int b = w - 1; b >= 0; b--)
					want = want << 8 | data[at + (size_t)b];
				ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
				ck_assert_int_eq(o->advance(&it, at), 0);
				ck_assert_int_eq(decode_w(o, &it, w, &v), 0);
				ck_assert_uint_eq(v, want);
				tu_assert_at(&it, at + (size_t)w, 1);
				/* the byte after it, then the end */
				ck_assert_int_eq(decode_w(o, &it, 1, &v), 0);
				ck_assert_uint_eq(v, data[at + (size_t)w]);
				v = 99;
				ck_assert_int_eq(decode_w(o, &it, w, &v),
						 -ERANGE);
				ck_assert_uint_eq(v, 99);
				tu_assert_at(&it, at + (size_t)w + 1, 0);
				bl_list_clear(&l);
			}
		}
	}
}
END_TEST

/*
 * A value that ends its segment exactly leaves the cursor at that end;
 * the next value, in the following segment, is still read in place: no
 * byte is copied but those of a value across a seam.
 */
START_TEST(test_inline_decode_after_a_segment_used_up_copies_nothing)
{
	static const unsigned char b[12] = { 1, 2, 3, 4, 5, 6, 7, 8,
		9, 10, 11, 12 };
	const struct iter_ops *o = ops_of(_i);
	struct bl_list l;
	struct bl_iter it;
	uint64_t v, c0;

	bl_list_init(&l);
	tu_append_fixed(&l, b, 4, 4);
	tu_append_fixed(&l, b + 4, 8, 6);	/* 4 | 6 | 2 */
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	c0 = copied_now();
	ck_assert_int_eq(decode_w(o, &it, 4, &v), 0);
	ck_assert_uint_eq(v, 0x04030201u);
	ck_assert_int_eq(decode_w(o, &it, 4, &v), 0);
	ck_assert_uint_eq(v, 0x08070605u);
	ck_assert_uint_eq(copied_now(), c0);
	/* 9, 10 | 11, 12: across the seam, copied */
	ck_assert_int_eq(decode_w(o, &it, 4, &v), 0);
	ck_assert_uint_eq(v, 0x0c0b0a09u);
	ck_assert_uint_eq(copied_now(), c0 + 4);
	tu_assert_at(&it, 12, 0);
	bl_list_clear(&l);
}
END_TEST

/*
 * Random moves and decodes of both kinds against a flat model, over
 * segments of 1..13 bytes; the cursor's offset checked after each.
 */
START_TEST(test_inline_random_walk_matches_model)
{
	static unsigned char data[4000];
	const struct iter_ops *o = ops_of(_i);
	uint64_t rng = tu_seed("test_inline_random_walk_matches_model");
	struct bl_list l;
	struct bl_iter it;

	walk_start(&l, &it, data, sizeof(data), &rng);
	for (int i = 0; i < 20000; i++) {
		size_t pos = bl_iter_offset(&it), left = sizeof(data) - pos;
		size_t n = tu_rand(&rng) % 20;
		int w = 1 << (tu_rand(&rng) % 4);
		uint64_t v = 0, want = 0;
		const char *d;

		switch (tu_rand(&rng) % 4) {
		case 0:
			TU_REQUIRE(o->advance(&it, n) ==
				   (n <= left ? 0 : -ERANGE));
			if (n <= left)
				pos += n;
			break;
		case 1:
			n = o->get_ptr(&it, n, &d);
			TU_REQUIRE(n <= left);
			TU_REQUIRE(n || !d);
			TU_REQUIRE(!n || memcmp(d, data + pos, n) == 0);
			pos += n;
			break;
		case 2:
			if ((size_t)w > left) {
				TU_REQUIRE(decode_w(o, &it, w, &v) == -ERANGE);
				break;
			}
			for (int b = w - 1; b >= 0; b--)
				want = want << 8 | data[pos + (size_t)b];
			TU_REQUIRE(decode_w(o, &it, w, &v) == 0);
			TU_REQUIRE(v == want);
			pos += (size_t)w;
			break;
		default:
			if (tu_rand(&rng) % 8 == 0) {
				pos = tu_rand(&rng) % (sizeof(data) + 1);
				TU_REQUIRE(bl_iter_seek(&it, pos) == 0);
			}
			break;
		}
		tu_assert_at(&it, pos, sizeof(data) - pos);
		TU_REQUIRE(o->offset(&it) == pos);
		TU_REQUIRE(o->remaining(&it) == (sizeof(data) - pos));
	}
	bl_list_clear(&l);
}
END_TEST

/* bl_iter_copy to NULL: -EINVAL and the cursor stays. */
START_TEST(test_iter_copy_to_null_is_einval)
{
	struct bl_list l;
	struct bl_iter it;
	char c;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "xyz", 3), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_iter_copy(&it, 2, NULL), -EINVAL);
	ck_assert_uint_eq(bl_iter_offset(&it), 0);
	ck_assert_int_eq(bl_iter_copy(&it, 0, NULL), 0);
	ck_assert_int_eq(bl_iter_copy(&it, 1, &c), 0);
	ck_assert_int_eq(c, 'x');
	bl_list_clear(&l);
}
END_TEST

int main(void)
{
	const TTest *iter_tests[] = {
		test_iter_init_at_offsets,
		test_iter_advance_crosses_segments,
		test_iter_seek_both_ways,
		test_iter_copy_across_segments,
		test_iter_copy_to_null_is_einval,
		test_iter_copy_list_shares_slices,
		test_iter_copy_list_inside_segment_into_empty_sets_one_slot,
		test_iter_copy_list_to_segment_end_or_beyond,
		test_get_ptr_and_advance_returns_runs,
		test_iter_copied_by_assignment_is_independent,
		test_iter_random_walk_matches_model,
		NULL
	};
	/* each twice: the inline copies, then the exported symbols */
	const struct tu_loop inline_loops[] = {
		{ test_inline_moves_on_an_empty_list, 0, 2 },
		{ test_inline_get_ptr_at_segment_boundaries, 0, 2 },
		{ test_inline_advance_at_segment_boundaries, 0, 2 },
		{ test_inline_decodes_split_at_every_seam, 0, 2 },
		{ test_inline_decode_after_a_segment_used_up_copies_nothing,
		  0, 2 },
		{ test_inline_random_walk_matches_model, 0, 2 },
		{ NULL, 0, 0 }
	};
	const struct tu_group groups[] = {
		TU_GROUP("iter", iter_tests),
		TU_GROUP("inline", NULL, .loops = inline_loops),
		TU_GROUP_END
	};


	return tu_run(tu_suite("codec_iter", groups));
}
