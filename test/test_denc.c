/* SPDX-License-Identifier: MIT */
/*
 * test_denc.c - Ceph's encoding beyond codec.h: versioned structures
 * (truncated at every byte, lying struct_len, compat too new, nesting,
 * skipped trailing fields), holes across the append buffer's refills,
 * every scalar encoder's exact bytes and round trip, sequences, the
 * alignment predicates, and each allocating function under the
 * fail-the-Nth-allocation sweep.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"

/* ---- helpers ----------------------------------------------------------- */

/* Asserts that @l holds exactly the @len bytes @want. */
#define EXPECT_BYTES(l, ...)						\
	do {								\
		static const unsigned char want_[] = { __VA_ARGS__ };	\
		tu_assert_list_eq((l), want_, sizeof(want_));		\
	} while (0)

/* Re-cuts @l into segments of @seg bytes, each over its own raw. */
static void recut(struct bl_list *l, size_t seg)
{
	unsigned char *flat = tu_flatten(l);
	size_t len = bl_list_length(l);

	bl_list_clear(l);
	bl_list_init(l);
	tu_append_fixed(l, flat, len, seg);
	free(flat);
}

/* A list holding the @len bytes @data, one segment per byte: every value
 * crosses a seam. */
static void bytes_list(struct bl_list *l, const void *data, size_t len)
{
	bl_list_init(l);
	ck_assert_int_eq(bl_list_append(l, data, len), 0);
	recut(l, 1);
}

/* ---- the versioned structure used below ------------------------------ */

/* v2 of a record: a (u32), b (u64), and since v2 c (u16). */
struct rec {
	uint32_t a;
	uint64_t b;
	uint16_t c;
};

static int rec_fields(struct bl_list *l, void *arg)
{
	const struct rec *r = arg;
	int ret = bl_encode_u32(l, r->a);

	if (!ret)
		ret = bl_encode_u64(l, r->b);
	if (!ret)
		ret = bl_encode_u16(l, r->c);
	return ret;
}

static int rec_decode_fields(struct bl_iter *it, uint8_t v, void *arg)
{
	struct rec *r = arg;
	int ret = bl_decode_u32(it, &r->a);

	if (!ret)
		ret = bl_decode_u64(it, &r->b);
	r->c = 0;
	if (!ret && v >= 2)
		ret = bl_decode_u16(it, &r->c);
	return ret;
}

static const struct rec REC = { 0x11223344u, 0x0102030405060708ull, 0xbeef };

static const unsigned char REC_BYTES[] = {
	2, 1, 14, 0, 0, 0,			/* v2, compat 1, 14 bytes */
	0x44, 0x33, 0x22, 0x11,
	0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	0xef, 0xbe,
};

START_TEST(test_struct_header_layout_is_cephs)
{
	struct bl_list l;
	struct bl_struct_enc s;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_start(&l, 2, 1, &s), 0);
	ck_assert_int_eq(rec_fields(&l, (void *)&REC), 0);
	ck_assert_int_eq(bl_encode_finish(&l, &s), 0);
	tu_assert_list_eq(&l, REC_BYTES, sizeof(REC_BYTES));
	bl_list_clear(&l);

	/* the one-call form writes the same bytes */
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_struct(&l, 2, 1, rec_fields, (void *)&REC),
			 0);
	tu_assert_list_eq(&l, REC_BYTES, sizeof(REC_BYTES));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_struct_round_trip_any_segmentation)
{
	for (size_t seg = 1; seg <= sizeof(REC_BYTES) + 1; seg++) {
		struct bl_list l;
		struct bl_iter it;
		struct bl_struct_dec d;
		struct rec r;

		bl_list_init(&l);
		ck_assert_int_eq(bl_list_append(&l, REC_BYTES,
						sizeof(REC_BYTES)), 0);
		ck_assert_int_eq(bl_encode_u8(&l, 0x5a), 0); /* what follows */
		recut(&l, seg);
		bl_iter_init(&it, &l, 0);
		ck_assert_int_eq(bl_decode_start(&it, 2, &d), 0);
		ck_assert_uint_eq(d.struct_v, 2);
		ck_assert_uint_eq(d.struct_compat, 1);
		ck_assert_uint_eq(d.struct_len, 14);
		ck_assert_uint_eq(bl_iter_remaining(&it), 14);
		ck_assert_int_eq(rec_decode_fields(&it, d.struct_v, &r), 0);
		ck_assert_int_eq(bl_decode_finish(&it, &d), 0);
		ck_assert_uint_eq(r.a, REC.a);
		ck_assert(r.b == REC.b);
		ck_assert_uint_eq(r.c, REC.c);
		ck_assert_uint_eq(bl_iter_remaining(&it), 1);
		{
			uint8_t x;

			ck_assert_int_eq(bl_decode_u8(&it, &x), 0);
			ck_assert_uint_eq(x, 0x5a);
		}
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_struct_truncated_at_every_byte_is_erange)
{
	for (size_t cut = 0; cut < sizeof(REC_BYTES); cut++) {
		struct bl_list l;
		struct bl_iter it;
		struct rec r;

		bytes_list(&l, REC_BYTES, cut);
		bl_iter_init(&it, &l, 0);
		ck_assert_msg(bl_decode_struct(&it, 2, rec_decode_fields, &r,
					       NULL) == -ERANGE,
			      "cut at %zu", cut);
		ck_assert_uint_eq(bl_iter_offset(&it), 0);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_struct_len_lying_short_stops_the_fields)
{
	unsigned char b[sizeof(REC_BYTES)];
	struct bl_list l;
	struct bl_iter it;
	struct bl_struct_dec d;
	struct rec r;
	uint64_t x;

	memcpy(b, REC_BYTES, sizeof(b));
	b[2] = 6;	/* says 6 bytes: a fits, b would cross the end */
	bytes_list(&l, b, sizeof(b));
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_struct(&it, 2, rec_decode_fields, &r, NULL),
			 -ERANGE);
	ck_assert_uint_eq(bl_iter_offset(&it), 0);
	/* by hand: the cursor reads nothing past the structure's end */
	ck_assert_int_eq(bl_decode_start(&it, 2, &d), 0);
	ck_assert_uint_eq(bl_iter_remaining(&it), 6);
	ck_assert_int_eq(bl_decode_u32(&it, &r.a), 0);
	ck_assert_int_eq(bl_decode_u64(&it, &x), -ERANGE);
	ck_assert_int_eq(bl_iter_advance(&it, 3), -ERANGE);
	{
		const char *p;
		size_t n, got = 0;

		while ((n = bl_iter_get_ptr_and_advance(&it, 100, &p)))
			got += n;
		ck_assert_uint_eq(got, 2);	/* not a byte more */
	}
	ck_assert_int_eq(bl_decode_finish(&it, &d), 0);
	ck_assert_uint_eq(bl_iter_offset(&it), 12);
	ck_assert_uint_eq(bl_iter_remaining(&it), sizeof(b) - 12);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_struct_len_lying_long_is_erange)
{
	unsigned char b[sizeof(REC_BYTES)];
	struct bl_list l;
	struct bl_iter it;
	struct bl_struct_dec d;

	memcpy(b, REC_BYTES, sizeof(b));
	b[2] = 15;	/* one more than there is */
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, b, sizeof(b)), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_start(&it, 2, &d), -ERANGE);
	ck_assert_uint_eq(bl_iter_offset(&it), 0);
	b[2] = 0xff;
	b[5] = 0xff;	/* 4 GiB - 1 */
	bl_list_clear(&l);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, b, sizeof(b)), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_start(&it, 2, &d), -ERANGE);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_struct_compat_too_new_is_eprotonosupport)
{
	static const unsigned char b[] = { 5, 3, 0, 0, 0, 0 };
	struct bl_list l;
	struct bl_iter it;
	struct bl_struct_dec d;
	char msg[128];
	int n;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, b, sizeof(b)), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_start(&it, 2, &d), -EPROTONOSUPPORT);
	ck_assert_uint_eq(bl_iter_offset(&it), 0);
	ck_assert_uint_eq(d.struct_v, 5);
	ck_assert_uint_eq(d.struct_compat, 3);
	ck_assert_uint_eq(d.decoder_v, 2);
	n = bl_decode_struct_msg(&d, msg, sizeof(msg));
	ck_assert_str_eq(msg, "decoder v2 cannot decode v5 (needs v3 or newer)");
	ck_assert_int_eq(n, (int)strlen(msg));
	/* truncated like snprintf, and the size still told */
	ck_assert_int_eq(bl_decode_struct_msg(&d, msg, 8), n);
	ck_assert_str_eq(msg, "decoder");
	/* a decoder of exactly compat reads it */
	ck_assert_int_eq(bl_decode_start(&it, 3, &d), 0);
	ck_assert_int_eq(bl_decode_finish(&it, &d), 0);
	ck_assert_uint_eq(bl_iter_remaining(&it), 0);
	bl_list_clear(&l);
}
END_TEST

/* A v3 encoder adds a field (u64) that a v2 decoder skips without a copy. */
static int rec3_fields(struct bl_list *l, void *arg)
{
	int ret = rec_fields(l, arg);

	return ret ? ret : bl_encode_u64(l, 0xfeedfacecafebeefull);
}

START_TEST(test_struct_newer_trailing_fields_are_skipped_without_copy)
{
	struct bl_list l;
	struct bl_iter it;
	struct bl_struct_dec d;
	struct rec r;
	uint64_t before;
	uint8_t tail;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_struct(&l, 3, 1, rec3_fields, (void *)&REC),
			 0);
	ck_assert_int_eq(bl_encode_u8(&l, 0x77), 0);
	ck_assert_uint_eq(bl_list_length(&l), 6 + 22 + 1);
	for (size_t seg = 1; seg <= 36; seg += 7) {
		recut(&l, seg);
		bl_iter_init(&it, &l, 0);
		before = copied_now();
		ck_assert_int_eq(bl_decode_struct(&it, 2, rec_decode_fields,
						  &r, &d), 0);
		ck_assert_uint_eq(d.struct_v, 3);
		ck_assert_uint_eq(r.c, REC.c);
		/* fixed-width decodes within a segment count no copy; the
		 * skip must not either: with one-byte segments the fields
		 * are copied across seams, so compare only whole ones */
		if (seg >= 29)
			ck_assert_uint_eq(copied_now(), before);
		ck_assert_int_eq(bl_decode_u8(&it, &tail), 0);
		ck_assert_uint_eq(tail, 0x77);
	}
	bl_list_clear(&l);
}
END_TEST

/* outer { u8, inner { u32 }, inner { u32 }, u8 }, to a depth */
struct nest {
	int depth;
};

static int nest_fields(struct bl_list *l, void *arg)
{
	struct nest *n = arg;
	int ret = bl_encode_u8(l, (uint8_t)n->depth);

	if (!ret && n->depth > 0) {
		struct nest in = { n->depth - 1 };

		ret = bl_encode_struct(l, 1, 1, nest_fields, &in);
		if (!ret)
			ret = bl_encode_struct(l, 1, 1, nest_fields, &in);
	}
	return ret;
}

static int nest_decode(struct bl_iter *it, uint8_t v, void *arg)
{
	int *count = arg;
	uint8_t d;
	int ret = bl_decode_u8(it, &d);

	(*count)++;
	for (int i = 0; !ret && d > 0 && i < 2; i++)
		ret = bl_decode_struct(it, 1, nest_decode, count, NULL);
	return ret;
}

START_TEST(test_struct_nesting_any_depth)
{
	struct bl_list l;
	struct bl_iter it;
	struct nest n = { 6 };
	int count = 0;
	size_t len;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_struct(&l, 1, 1, nest_fields, &n), 0);
	/* 2^7 - 1 structures of 7 bytes each */
	ck_assert_uint_eq(bl_list_length(&l), 127 * 7);
	len = bl_list_length(&l);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_struct(&it, 1, nest_decode, &count, NULL),
			 0);
	ck_assert_int_eq(count, 127);
	ck_assert_uint_eq(bl_iter_offset(&it), len);
	/* the outer length counts the inner headers */
	{
		struct bl_struct_dec d;

		bl_iter_init(&it, &l, 0);
		ck_assert_int_eq(bl_decode_start(&it, 1, &d), 0);
		ck_assert_uint_eq(d.struct_len, len - 6);
		ck_assert_int_eq(bl_decode_finish(&it, &d), 0);
	}
	bl_list_clear(&l);
}
END_TEST

static int fail_after_one(struct bl_list *l, void *arg)
{
	int ret = bl_encode_u32(l, 42);

	(void)arg;
	return ret ? ret : -EIO;
}

START_TEST(test_struct_failed_encode_leaves_list_as_it_was)
{
	struct bl_list l;
	struct bl_struct_enc s;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u16(&l, 0xabcd), 0);
	ck_assert_int_eq(bl_encode_struct(&l, 1, 1, fail_after_one, NULL),
			 -EIO);
	EXPECT_BYTES(&l, 0xcd, 0xab);
	/* nested: an inner failure drops the outer structure too */
	ck_assert_int_eq(bl_encode_start(&l, 1, 1, &s), 0);
	ck_assert_int_eq(bl_encode_u8(&l, 9), 0);
	ck_assert_int_eq(bl_encode_struct(&l, 1, 1, fail_after_one, NULL),
			 -EIO);
	bl_encode_abort(&l, &s);
	EXPECT_BYTES(&l, 0xcd, 0xab);
	/* and the list goes on as before */
	ck_assert_int_eq(bl_encode_u8(&l, 1), 0);
	EXPECT_BYTES(&l, 0xcd, 0xab, 1);
	/* bad arguments */
	ck_assert_int_eq(bl_encode_start(&l, 1, 2, &s), -EINVAL);
	ck_assert_int_eq(bl_encode_start(&l, 1, 1, NULL), -EINVAL);
	ck_assert_int_eq(bl_encode_struct(&l, 1, 1, NULL, NULL), -EINVAL);
	EXPECT_BYTES(&l, 0xcd, 0xab, 1);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_struct_decode_errors)
{
	struct bl_list l, other;
	struct bl_iter it, it2;
	struct bl_struct_dec d;
	struct rec r;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, REC_BYTES, sizeof(REC_BYTES)), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_start(&it, 2, NULL), -EINVAL);
	ck_assert_int_eq(bl_decode_struct(&it, 2, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_decode_start(&it, 2, &d), 0);
	/* a cursor the structure did not bound is refused */
	bl_list_init(&other);
	ck_assert_int_eq(bl_list_append(&other, REC_BYTES, 8), 0);
	bl_iter_init(&it2, &other, 0);
	ck_assert_int_eq(bl_decode_finish(&it2, &d), -EINVAL);
	ck_assert_uint_eq(bl_iter_offset(&it2), 0);
	/* a field callback's error comes back, the cursor where it was */
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_struct(&it, 2, rec_decode_fields, &r, NULL),
			 0);
	bl_iter_init(&it, &l, 0);
	bl_list_clear(&other);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_struct_seek_back_keeps_the_bound)
{
	struct bl_list l;
	struct bl_iter it;
	struct bl_struct_dec d;
	uint32_t a;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, REC_BYTES, sizeof(REC_BYTES)), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 7), 0);
	recut(&l, 5);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_start(&it, 2, &d), 0);
	ck_assert_int_eq(bl_iter_advance(&it, 10), 0);
	ck_assert_int_eq(bl_iter_seek(&it, 6), 0);
	ck_assert_uint_eq(bl_iter_remaining(&it), 14);
	ck_assert_int_eq(bl_iter_seek(&it, 21), -ERANGE);
	ck_assert_int_eq(bl_decode_u32(&it, &a), 0);
	ck_assert_uint_eq(a, REC.a);
	ck_assert_int_eq(bl_decode_finish(&it, &d), 0);
	ck_assert_int_eq(bl_decode_u32(&it, &a), 0);
	ck_assert_uint_eq(a, 7);
	bl_list_clear(&l);
}
END_TEST

/* ---- holes ------------------------------------------------------------- */

START_TEST(test_hole_is_filled_in_place_across_refills)
{
	struct bl_list l;
	struct bl_hole h[64];
	unsigned char *flat;
	size_t off[64];
	uint64_t before;

	bl_list_init(&l);
	/* holes between appends that replace the append buffer many times */
	for (unsigned i = 0; i < 64; i++) {
		off[i] = bl_list_length(&l);
		ck_assert_int_eq(bl_list_append_hole(&l, 4 + i % 9, &h[i]), 0);
		for (unsigned k = 0; k < 40 + i * 7; k++)
			ck_assert_int_eq(bl_encode_u8(&l, (uint8_t)k), 0);
	}
	/* a large hole gets a raw of its own, contiguous too */
	ck_assert_int_eq(bl_list_append_hole(&l, 10000, &h[0]), 0);
	{
		static char big[10000];

		memset(big, 'Z', sizeof(big));
		ck_assert_int_eq(bl_hole_fill(&h[0], 0, big, sizeof(big)), 0);
	}
	ck_assert_uint_eq(bl_list_length(&l) - 10000,
			  off[63] + 4 + 63 % 9 + 40 + 63 * 7);
	/* refill the small ones (h[0] was reused: skip it) */
	before = copied_now();
	for (unsigned i = 1; i < 64; i++) {
		unsigned char v[12];

		memset(v, 0xa0 + (int)i % 16, sizeof(v));
		ck_assert_int_eq(bl_hole_fill(&h[i], 0, v, 4 + i % 9), 0);
	}
	(void)before;
	bl__list_validate(&l);
	flat = tu_flatten(&l);
	for (unsigned i = 1; i < 64; i++)
		for (unsigned k = 0; k < 4 + i % 9; k++)
			ck_assert_uint_eq(flat[off[i] + k], 0xa0 + i % 16);
	ck_assert_uint_eq(flat[bl_list_length(&l) - 1], 'Z');
	free(flat);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_hole_starts_zeroed_and_checks_ranges)
{
	struct bl_list l;
	struct bl_hole h;
	uint32_t crc0, crc1;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u8(&l, 1), 0);
	ck_assert_int_eq(bl_list_append_hole(&l, 4, &h), 0);
	ck_assert_int_eq(bl_encode_u8(&l, 2), 0);
	EXPECT_BYTES(&l, 1, 0, 0, 0, 0, 2);
	crc0 = bl_list_crc32c(&l, 0);	/* cached in the raw */
	ck_assert_int_eq(bl_hole_fill(&h, 1, "xy", 2), 0);
	EXPECT_BYTES(&l, 1, 0, 'x', 'y', 0, 2);
	crc1 = bl_list_crc32c(&l, 0);
	ck_assert_uint_ne(crc0, crc1);	/* the stale cache was dropped */
	ck_assert_int_eq(bl_hole_fill(&h, 3, "ab", 2), -ERANGE);
	ck_assert_int_eq(bl_hole_fill(&h, 5, "", 0), -ERANGE);
	ck_assert_int_eq(bl_hole_fill(&h, 4, "", 0), 0);
	ck_assert_int_eq(bl_hole_fill(&h, 0, NULL, 1), -EINVAL);
	ck_assert_int_eq(bl_hole_fill(NULL, 0, "a", 1), -EINVAL);
	ck_assert_int_eq(bl_list_append_hole(&l, 4, NULL), -EINVAL);
	EXPECT_BYTES(&l, 1, 0, 'x', 'y', 0, 2);
	/* an empty hole reserves nothing */
	ck_assert_int_eq(bl_list_append_hole(&l, 0, &h), 0);
	ck_assert_uint_eq(bl_list_length(&l), 6);
	ck_assert_int_eq(bl_hole_fill(&h, 0, "a", 1), -ERANGE);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_struct_finish_drops_stale_crc)
{
	struct bl_list l;
	struct bl_struct_enc s;
	struct bl_list want;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_start(&l, 1, 1, &s), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 5), 0);
	(void)bl_list_crc32c(&l, 0);
	ck_assert_int_eq(bl_encode_finish(&l, &s), 0);
	bl_list_init(&want);
	ck_assert_int_eq(bl_list_append(&want, "\1\1\4\0\0\0\5\0\0\0", 10), 0);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), bl_list_crc32c(&want, 0));
	bl_list_clear(&want);
	bl_list_clear(&l);
}
END_TEST

/* ---- scalar encoders: exact bytes and round trips ---------------------- */

START_TEST(test_signed_ints_bytes_and_round_trip)
{
	struct bl_list l;
	struct bl_iter it;
	int8_t a;
	int16_t b;
	int32_t c;
	int64_t d;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_s8(&l, -2), 0);
	ck_assert_int_eq(bl_encode_s16(&l, -300), 0);
	ck_assert_int_eq(bl_encode_s32(&l, INT32_MIN), 0);
	ck_assert_int_eq(bl_encode_s64(&l, -1), 0);
	EXPECT_BYTES(&l, 0xfe, 0xd4, 0xfe, 0, 0, 0, 0x80,
		     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff);
	recut(&l, 1);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_s8(&it, &a), 0);
	ck_assert_int_eq(bl_decode_s16(&it, &b), 0);
	ck_assert_int_eq(bl_decode_s32(&it, &c), 0);
	ck_assert_int_eq(bl_decode_s64(&it, &d), 0);
	ck_assert_int_eq(a, -2);
	ck_assert_int_eq(b, -300);
	ck_assert_int_eq(c, INT32_MIN);
	ck_assert(d == -1);
	ck_assert_int_eq(bl_decode_s8(&it, &a), -ERANGE);
	ck_assert_int_eq(bl_decode_s16(&it, &b), -ERANGE);
	ck_assert_int_eq(bl_decode_s32(&it, &c), -ERANGE);
	ck_assert_int_eq(bl_decode_s64(&it, &d), -ERANGE);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_bool_and_floats_bytes_and_round_trip)
{
	struct bl_list l;
	struct bl_iter it;
	bool t, f, x;
	float fl;
	double db;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_bool(&l, true), 0);
	ck_assert_int_eq(bl_encode_bool(&l, false), 0);
	ck_assert_int_eq(bl_encode_float(&l, 1.5f), 0);
	ck_assert_int_eq(bl_encode_double(&l, -2.25), 0);
	ck_assert_int_eq(bl_encode_u8(&l, 7), 0);	/* any non-zero: true */
	EXPECT_BYTES(&l, 1, 0, 0, 0, 0xc0, 0x3f,
		     0, 0, 0, 0, 0, 0, 0x02, 0xc0, 7);
	recut(&l, 3);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_bool(&it, &t), 0);
	ck_assert_int_eq(bl_decode_bool(&it, &f), 0);
	ck_assert_int_eq(bl_decode_float(&it, &fl), 0);
	ck_assert_int_eq(bl_decode_double(&it, &db), 0);
	ck_assert_int_eq(bl_decode_bool(&it, &x), 0);
	ck_assert(t && !f && x);
	ck_assert(fl == 1.5f);
	ck_assert(db == -2.25);
	ck_assert_int_eq(bl_decode_bool(&it, &x), -ERANGE);
	ck_assert_int_eq(bl_decode_float(&it, &fl), -ERANGE);
	ck_assert_int_eq(bl_decode_double(&it, &db), -ERANGE);
	bl_list_clear(&l);
	/* NaN and infinities keep their bits */
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_double(&l, INFINITY), 0);
	ck_assert_int_eq(bl_encode_float(&l, NAN), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_double(&it, &db), 0);
	ck_assert_int_eq(bl_decode_float(&it, &fl), 0);
	ck_assert(isinf(db) && isnan(fl));
	bl_list_clear(&l);
}
END_TEST

/* Encodes @v with @enc, compares with the @n bytes @want, decodes it back
 * over one-byte segments. */
#define CHECK_VARINT(type, enc, dec, v, ...)				\
	do {								\
		static const unsigned char w_[] = { __VA_ARGS__ };	\
		struct bl_list l_;					\
		struct bl_iter it_;					\
		type got_;						\
									\
		bl_list_init(&l_);					\
		ck_assert_int_eq(enc(&l_, (v)), 0);			\
		tu_assert_list_eq(&l_, w_, sizeof(w_));			\
		recut(&l_, 1);						\
		bl_iter_init(&it_, &l_, 0);				\
		ck_assert_int_eq(dec(&it_, &got_), 0);			\
		ck_assert_msg(got_ == (v), #enc " round trip");		\
		ck_assert_uint_eq(bl_iter_remaining(&it_), 0);		\
		for (size_t c_ = 0; c_ < sizeof(w_); c_++) {		\
			bl_list_splice(&l_, c_, sizeof(w_) - c_, NULL);	\
			bl_iter_init(&it_, &l_, 0);			\
			ck_assert_int_eq(dec(&it_, &got_), -ERANGE);	\
			ck_assert_uint_eq(bl_iter_offset(&it_), 0);	\
			bl_list_clear(&l_);				\
			bl_list_init(&l_);				\
			ck_assert_int_eq(enc(&l_, (v)), 0);		\
		}							\
		bl_list_clear(&l_);					\
	} while (0)

START_TEST(test_signed_varint_bytes)
{
	CHECK_VARINT(int64_t, bl_encode_signed_varint, bl_decode_signed_varint,
		     0, 0);
	CHECK_VARINT(int64_t, bl_encode_signed_varint, bl_decode_signed_varint,
		     1, 2);
	CHECK_VARINT(int64_t, bl_encode_signed_varint, bl_decode_signed_varint,
		     -1, 3);
	CHECK_VARINT(int64_t, bl_encode_signed_varint, bl_decode_signed_varint,
		     -64, 0x81, 0x01);
	CHECK_VARINT(int64_t, bl_encode_signed_varint, bl_decode_signed_varint,
		     300, 0xd8, 0x04);
	CHECK_VARINT(int64_t, bl_encode_signed_varint, bl_decode_signed_varint,
		     INT64_MAX, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		     0xff, 0x01);
	CHECK_VARINT(int64_t, bl_encode_signed_varint, bl_decode_signed_varint,
		     -INT64_MAX, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		     0xff, 0x01);
}
END_TEST

START_TEST(test_varint_lowz_bytes)
{
	/* value << 2 | zero nibbles */
	CHECK_VARINT(uint64_t, bl_encode_varint_lowz, bl_decode_varint_lowz,
		     0, 0);
	CHECK_VARINT(uint64_t, bl_encode_varint_lowz, bl_decode_varint_lowz,
		     5, 0x14);
	CHECK_VARINT(uint64_t, bl_encode_varint_lowz, bl_decode_varint_lowz,
		     0x50, 0x15);
	CHECK_VARINT(uint64_t, bl_encode_varint_lowz, bl_decode_varint_lowz,
		     0x1000, 0x07);
	CHECK_VARINT(uint64_t, bl_encode_varint_lowz, bl_decode_varint_lowz,
		     0x100000, 0x83, 0x08);
	CHECK_VARINT(uint64_t, bl_encode_varint_lowz, bl_decode_varint_lowz,
		     0x3fffffffffffffffull, 0xfc, 0xff, 0xff, 0xff, 0xff, 0xff,
		     0xff, 0xff, 0xff, 0x01);
	/* the layout cannot hold these: Ceph would drop the top bits */
	{
		struct bl_list l;

		bl_list_init(&l);
		ck_assert_int_eq(bl_encode_varint_lowz(&l, UINT64_MAX),
				 -EINVAL);
		ck_assert_int_eq(bl_encode_varint_lowz(&l, 1ull << 62),
				 0);	/* 3 zero nibbles shifted out */
		ck_assert_int_eq(bl_encode_varint_lowz(&l, 0x4000000000000001ull),
				 -EINVAL);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_signed_varint_lowz_bytes)
{
	/* magnitude << 3 | zero nibbles << 1 | sign */
	CHECK_VARINT(int64_t, bl_encode_signed_varint_lowz,
		     bl_decode_signed_varint_lowz, 0, 0);
	CHECK_VARINT(int64_t, bl_encode_signed_varint_lowz,
		     bl_decode_signed_varint_lowz, 3, 0x18);
	CHECK_VARINT(int64_t, bl_encode_signed_varint_lowz,
		     bl_decode_signed_varint_lowz, -3, 0x19);
	CHECK_VARINT(int64_t, bl_encode_signed_varint_lowz,
		     bl_decode_signed_varint_lowz, -0x30, 0x1b);
	CHECK_VARINT(int64_t, bl_encode_signed_varint_lowz,
		     bl_decode_signed_varint_lowz, 0x10000, 0x86, 0x01);
	{
		struct bl_list l;

		bl_list_init(&l);
		ck_assert_int_eq(bl_encode_signed_varint_lowz(&l, INT64_MIN),
				 -EINVAL);
		ck_assert_int_eq(bl_encode_signed_varint_lowz(&l, INT64_MAX),
				 -EINVAL);
		ck_assert_int_eq(bl_encode_signed_varint(&l, INT64_MIN),
				 -EINVAL);
		ck_assert_uint_eq(bl_list_length(&l), 0);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_lba_bytes)
{
	/* no low zero nibbles worth it: prefix 111 */
	CHECK_VARINT(uint64_t, bl_encode_lba, bl_decode_lba, 0,
		     0x07, 0, 0, 0);
	CHECK_VARINT(uint64_t, bl_encode_lba, bl_decode_lba, 1,
		     0x0f, 0, 0, 0);
	/* 12 zero bits: prefix 0 */
	CHECK_VARINT(uint64_t, bl_encode_lba, bl_decode_lba, 0x1000,
		     0x02, 0, 0, 0);
	/* 16: prefix 01 */
	CHECK_VARINT(uint64_t, bl_encode_lba, bl_decode_lba, 0x30000,
		     0x0d, 0, 0, 0);
	/* 20: prefix 011 */
	CHECK_VARINT(uint64_t, bl_encode_lba, bl_decode_lba, 0x500000,
		     0x2b, 0, 0, 0);
	/* 24 and more: shifted by 20 only */
	CHECK_VARINT(uint64_t, bl_encode_lba, bl_decode_lba, 0x1000000,
		     0x83, 0, 0, 0);
	/* past the word: 7-bit groups */
	CHECK_VARINT(uint64_t, bl_encode_lba, bl_decode_lba, 0x10000001ull,
		     0x0f, 0, 0, 0x80, 0x01);
	CHECK_VARINT(uint64_t, bl_encode_lba, bl_decode_lba, UINT64_MAX,
		     0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		     0x01);
	{
		/* a group past 64 bits is refused */
		static const unsigned char bad[] = {
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
			0x1f };
		struct bl_list l;
		struct bl_iter it;
		uint64_t v;

		bl_list_init(&l);
		ck_assert_int_eq(bl_list_append(&l, bad, sizeof(bad)), 0);
		bl_iter_init(&it, &l, 0);
		ck_assert_int_eq(bl_decode_lba(&it, &v), -EBADMSG);
		ck_assert_uint_eq(bl_iter_offset(&it), 0);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_lba_round_trip_many)
{
	uint64_t rng = tu_seed("lba");

	for (int i = 0; i < 4000; i++) {
		uint64_t v = tu_rand(&rng) >> (tu_rand(&rng) % 64);
		uint64_t got = 0;
		int64_t s = (int64_t)(tu_rand(&rng) >> (1 + tu_rand(&rng) % 63));
		int64_t sg;
		struct bl_list l;
		struct bl_iter it;

		v <<= tu_rand(&rng) % 40;
		if (tu_rand(&rng) & 1)
			s = -s;
		bl_list_init(&l);
		ck_assert_int_eq(bl_encode_lba(&l, v), 0);
		ck_assert_int_eq(bl_encode_signed_varint(&l, s), 0);
		bl_iter_init(&it, &l, 0);
		ck_assert_int_eq(bl_decode_lba(&it, &got), 0);
		ck_assert_msg(got == v, "lba %llx", (unsigned long long)v);
		ck_assert_int_eq(bl_decode_signed_varint(&it, &sg), 0);
		ck_assert(sg == s);
		bl_list_clear(&l);
		bl_list_init(&l);
		if (!bl_encode_varint_lowz(&l, v)) {
			bl_iter_init(&it, &l, 0);
			ck_assert_int_eq(bl_decode_varint_lowz(&it, &got), 0);
			ck_assert(got == v);
		}
		bl_list_clear(&l);
		bl_list_init(&l);
		if (!bl_encode_signed_varint_lowz(&l, s)) {
			bl_iter_init(&it, &l, 0);
			ck_assert_int_eq(bl_decode_signed_varint_lowz(&it, &sg),
					 0);
			ck_assert(sg == s);
		}
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_string_uuid_utime_bytes)
{
	static const uint8_t u[16] = { 0x8d, 0x4c, 0x1f, 0x0e, 0x3b, 0x2a,
				       0x4c, 0x5d, 0x9e, 0x6f, 0x11, 0x22,
				       0x33, 0x44, 0x55, 0x66 };
	struct bl_list l;
	struct bl_iter it;
	uint8_t got[16];
	uint32_t sec, nsec;
	char buf[8];
	size_t len = 0;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_string(&l, "mon"), 0);
	ck_assert_int_eq(bl_encode_string(&l, ""), 0);
	ck_assert_int_eq(bl_encode_uuid(&l, u), 0);
	ck_assert_int_eq(bl_encode_utime(&l, 0x6b14cf9b, 0x088eb7f4), 0);
	EXPECT_BYTES(&l, 3, 0, 0, 0, 'm', 'o', 'n', 0, 0, 0, 0,
		     0x8d, 0x4c, 0x1f, 0x0e, 0x3b, 0x2a, 0x4c, 0x5d, 0x9e,
		     0x6f, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66,
		     0x9b, 0xcf, 0x14, 0x6b, 0xf4, 0xb7, 0x8e, 0x08);
	recut(&l, 2);
	bl_iter_init(&it, &l, 0);
	/* too small: the length told, nothing moved */
	ck_assert_int_eq(bl_decode_string(&it, buf, 3, &len), -EMSGSIZE);
	ck_assert_uint_eq(len, 3);
	ck_assert_int_eq(bl_decode_string(&it, NULL, 0, &len), -EMSGSIZE);
	ck_assert_int_eq(bl_decode_string(&it, NULL, 1, &len), -EINVAL);
	ck_assert_uint_eq(bl_iter_offset(&it), 0);
	ck_assert_int_eq(bl_decode_string(&it, buf, 4, &len), 0);
	ck_assert_str_eq(buf, "mon");
	ck_assert_int_eq(bl_decode_string(&it, buf, 1, NULL), 0);
	ck_assert_str_eq(buf, "");
	ck_assert_int_eq(bl_decode_uuid(&it, got), 0);
	ck_assert_mem_eq(got, u, 16);
	ck_assert_int_eq(bl_decode_utime(&it, &sec, &nsec), 0);
	ck_assert_uint_eq(sec, 0x6b14cf9b);
	ck_assert_uint_eq(nsec, 0x088eb7f4);
	ck_assert_int_eq(bl_decode_uuid(&it, got), -ERANGE);
	ck_assert_int_eq(bl_decode_utime(&it, &sec, &nsec), -ERANGE);
	ck_assert_int_eq(bl_decode_string(&it, buf, 8, NULL), -ERANGE);
	ck_assert_int_eq(bl_decode_uuid(&it, NULL), -EINVAL);
	ck_assert_int_eq(bl_decode_utime(&it, NULL, &nsec), -EINVAL);
	ck_assert_int_eq(bl_encode_uuid(&l, NULL), -EINVAL);
	ck_assert_int_eq(bl_encode_string(&l, NULL), -EINVAL);
	bl_list_clear(&l);
	/* a length past the bytes */
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "\5\0\0\0abcd", 8), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_string(&it, buf, 8, NULL), -ERANGE);
	ck_assert_uint_eq(bl_iter_offset(&it), 0);
	bl_list_clear(&l);
}
END_TEST

/* ---- sequences --------------------------------------------------------- */

static const char *const NAMES[] = { "a", "bb", "ccc" };

/* map<string, u16>: name -> its length * 100 */
static int map_item(struct bl_list *l, size_t i, void *arg)
{
	int ret = bl_encode_string(l, NAMES[i]);

	(void)arg;
	return ret ? ret : bl_encode_u16(l, (uint16_t)(strlen(NAMES[i]) * 100));
}

struct map_out {
	char key[3][8];
	uint16_t val[3];
	uint32_t seen_n;
};

static int map_decode_item(struct bl_iter *it, uint32_t i, uint32_t n,
			   void *arg)
{
	struct map_out *m = arg;
	int ret;

	if (n > 3)
		return -E2BIG;
	m->seen_n = n;
	ret = bl_decode_string(it, m->key[i], sizeof(m->key[i]), NULL);
	return ret ? ret : bl_decode_u16(it, &m->val[i]);
}

static int item_fails_at_2(struct bl_list *l, size_t i, void *arg)
{
	(void)arg;
	return i == 2 ? -EIO : bl_encode_u8(l, (uint8_t)i);
}

START_TEST(test_seq_bytes_round_trip_and_failure)
{
	struct bl_list l;
	struct bl_iter it;
	struct map_out m;
	uint32_t n = 0;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_seq(&l, 3, map_item, NULL), 0);
	EXPECT_BYTES(&l, 3, 0, 0, 0,
		     1, 0, 0, 0, 'a', 100, 0,
		     2, 0, 0, 0, 'b', 'b', 200, 0,
		     3, 0, 0, 0, 'c', 'c', 'c', 0x2c, 0x01);
	recut(&l, 3);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_seq(&it, map_decode_item, &m, &n), 0);
	ck_assert_uint_eq(n, 3);
	ck_assert_str_eq(m.key[2], "ccc");
	ck_assert_uint_eq(m.val[1], 200);
	ck_assert_uint_eq(bl_iter_remaining(&it), 0);
	/* truncated anywhere: the cursor stays */
	for (size_t cut = 0; cut < 28; cut++) {
		struct bl_list t;

		bl_list_init(&t);
		ck_assert_int_eq(bl_list_substr_of(&t, &l, 0, cut), 0);
		bl_iter_init(&it, &t, 0);
		ck_assert_int_eq(bl_decode_seq(&it, map_decode_item, &m, NULL),
				 -ERANGE);
		ck_assert_uint_eq(bl_iter_offset(&it), 0);
		bl_list_clear(&t);
	}
	bl_list_clear(&l);
	/* a failing item leaves the list as it was */
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u8(&l, 0xee), 0);
	ck_assert_int_eq(bl_encode_seq(&l, 4, item_fails_at_2, NULL), -EIO);
	EXPECT_BYTES(&l, 0xee);
	ck_assert_int_eq(bl_encode_seq(&l, 0, NULL, NULL), 0);
	EXPECT_BYTES(&l, 0xee, 0, 0, 0, 0);
	ck_assert_int_eq(bl_encode_seq(&l, 1, NULL, NULL), -EINVAL);
#if SIZE_MAX > UINT32_MAX
	ck_assert_int_eq(bl_encode_seq(&l, (size_t)UINT32_MAX + 1, map_item,
				       NULL), -E2BIG);
#endif
	/* the callback refuses a count it cannot hold */
	bl_list_clear(&l);
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u32(&l, 1000), 0);
	ck_assert_int_eq(bl_encode_string(&l, "x"), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_seq(&it, map_decode_item, &m, NULL), -E2BIG);
	ck_assert_int_eq(bl_decode_seq(&it, NULL, NULL, NULL), -EINVAL);
	ck_assert_uint_eq(bl_iter_offset(&it), 0);
	bl_list_clear(&l);
}
END_TEST

/* ---- predicates -------------------------------------------------------- */

START_TEST(test_alignment_predicates)
{
	struct bl_list l;
	struct bl_ptr p = BL_PTR_INIT;
	long page = sysconf(_SC_PAGESIZE);

	bl_list_init(&l);
	ck_assert(bl_list_is_contiguous(&l));
	ck_assert(bl_list_is_aligned(&l, 4096));
	ck_assert(bl_list_is_page_aligned(&l));
	ck_assert_int_eq(bl_ptr_alloc_aligned(&p, (size_t)page * 2,
					      (size_t)page), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	ck_assert(bl_list_is_contiguous(&l));
	ck_assert(bl_list_is_page_aligned(&l));
	ck_assert(bl_list_is_aligned(&l, 512));
	ck_assert(!bl_list_is_aligned(&l, 0));
	ck_assert(!bl_list_is_aligned(&l, 3));
	ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	ck_assert(!bl_list_is_contiguous(&l));
	ck_assert(bl_list_is_page_aligned(&l));
	/* a segment whose length is not a multiple */
	{
		struct bl_ptr s = BL_PTR_INIT;

		ck_assert_int_eq(bl_ptr_slice(&s, &p, 0, (size_t)page - 1), 0);
		ck_assert_int_eq(bl_list_append_ptr(&l, &s), 0);
		ck_assert(!bl_list_is_page_aligned(&l));
		ck_assert(bl_list_is_aligned(&l, 1));
		bl_ptr_release(&s);
	}
	bl_list_clear(&l);
	/* a segment whose address is not a multiple */
	bl_list_init(&l);
	{
		struct bl_ptr s = BL_PTR_INIT;

		ck_assert_int_eq(bl_ptr_slice(&s, &p, 512, 512), 0);
		ck_assert_int_eq(bl_list_append_ptr(&l, &s), 0);
		ck_assert(bl_list_is_aligned(&l, 512));
		ck_assert(!bl_list_is_aligned(&l, 1024));
		ck_assert(!bl_list_is_page_aligned(&l));
		bl_ptr_release(&s);
	}
	bl_list_clear(&l);
	bl_ptr_release(&p);
}
END_TEST

/* ---- the fail-the-Nth-allocation sweep -------------------------------- */

/* Runs @op on a list that holds a few bytes, failing the nth allocation
 * for n = 1, 2, ... until one run makes no failed allocation: each run
 * either succeeds or returns -ENOMEM with the list as it was, and leaks
 * nothing. */
typedef int (*sweep_op)(struct bl_list *l);

static void sweep(const char *name, sweep_op op, size_t prefill)
{
	struct tu_alloc_stats st;

	bl_pool_cache_enable(false);
	for (int sticky = 0; sticky < 2; sticky++) {
		for (uint64_t n = 1;; n++) {
			struct bl_list l;
			unsigned char *before;
			size_t len;
			int rc;

			ck_assert_msg(n < 1000, "%s: no end", name);
			tu_alloc_install(0, 0);
			bl_list_init(&l);
			for (size_t i = 0; i < prefill; i++)
				ck_assert_int_eq(bl_encode_u8(&l, (uint8_t)i),
						 0);
			len = bl_list_length(&l);
			before = tu_flatten(&l);
			tu_alloc_fail_at(n, sticky);
			rc = op(&l);
			tu_alloc_stats(&st);
			tu_alloc_fail_at(0, 0);
			if (rc) {
				ck_assert_msg(rc == -ENOMEM, "%s: %d", name, rc);
				ck_assert_msg(st.failed > 0, "%s: -ENOMEM "
					      "without a failure", name);
				ck_assert_uint_eq(bl_list_length(&l), len);
				if (len)
					tu_assert_list_eq(&l, before, len);
			}
			bl__list_validate(&l);
			free(before);
			bl_list_clear(&l);
			tu_alloc_stats(&st);
			ck_assert_msg(st.live_bytes == 0, "%s: leak", name);
			if (!st.failed)
				break;
		}
	}
	tu_alloc_uninstall();
	bl_pool_cache_enable(true);
}

static int op_hole(struct bl_list *l)
{
	struct bl_hole h;

	return bl_list_append_hole(l, 8, &h);
}

static int op_big_hole(struct bl_list *l)
{
	struct bl_hole h;

	return bl_list_append_hole(l, 5000, &h);
}

static int op_struct(struct bl_list *l)
{
	return bl_encode_struct(l, 2, 1, rec_fields, (void *)&REC);
}

static int op_nested(struct bl_list *l)
{
	struct nest n = { 3 };

	return bl_encode_struct(l, 1, 1, nest_fields, &n);
}

static int op_scalars(struct bl_list *l)
{
	static const uint8_t u[16] = { 1 };
	struct bl_list tmp;
	int ret;

	/* each encoder on its own is failure-atomic: build aside and
	 * claim, so the whole op is too */
	bl_list_init(&tmp);
	ret = bl_encode_s8(&tmp, -1);
	if (!ret) ret = bl_encode_s16(&tmp, -1);
	if (!ret) ret = bl_encode_s32(&tmp, -1);
	if (!ret) ret = bl_encode_s64(&tmp, -1);
	if (!ret) ret = bl_encode_bool(&tmp, true);
	if (!ret) ret = bl_encode_float(&tmp, 1.0f);
	if (!ret) ret = bl_encode_double(&tmp, 1.0);
	if (!ret) ret = bl_encode_signed_varint(&tmp, -5);
	if (!ret) ret = bl_encode_varint_lowz(&tmp, 0x5000);
	if (!ret) ret = bl_encode_signed_varint_lowz(&tmp, -0x5000);
	if (!ret) ret = bl_encode_lba(&tmp, 0x123456789ull);
	if (!ret) ret = bl_encode_string(&tmp, "name");
	if (!ret) ret = bl_encode_uuid(&tmp, u);
	if (!ret) ret = bl_encode_utime(&tmp, 1, 2);
	if (!ret) ret = bl_list_claim_append(l, &tmp);
	bl_list_clear(&tmp);
	return ret;
}

static int op_one_scalar(struct bl_list *l)
{
	static int which;
	int ret;

	switch (which++ % 6) {
	case 0: ret = bl_encode_lba(l, 0xffffffffffull); break;
	case 1: ret = bl_encode_signed_varint(l, INT64_MAX); break;
	case 2: ret = bl_encode_string(l, "a longer string than sixteen"); break;
	case 3: ret = bl_encode_utime(l, 9, 9); break;
	case 4: ret = bl_encode_double(l, 3.0); break;
	default: ret = bl_encode_s64(l, 3); break;
	}
	return ret;
}

static int op_seq(struct bl_list *l)
{
	return bl_encode_seq(l, 3, map_item, NULL);
}

START_TEST(test_fail_nth_allocation_sweep)
{
	sweep("hole", op_hole, 0);
	sweep("hole after bytes", op_hole, 125);
	sweep("big hole", op_big_hole, 3);
	sweep("struct", op_struct, 0);
	sweep("struct at a refill", op_struct, 120);
	sweep("nested", op_nested, 0);
	sweep("nested at a refill", op_nested, 100);
	sweep("scalars", op_scalars, 0);
	for (int i = 0; i < 12; i++)
		sweep("one scalar", op_one_scalar, 126);
	sweep("seq", op_seq, 0);
	sweep("seq at a refill", op_seq, 110);
}
END_TEST

/* The decoders allocate only in what they hand a list (none here): run
 * them under a failing allocator to prove they ask for nothing. */
START_TEST(test_decoders_allocate_nothing)
{
	struct bl_list l;
	struct bl_iter it;
	struct tu_alloc_stats st;
	struct rec r;
	struct map_out m;
	int64_t s;
	uint64_t u;
	char buf[8];

	bl_list_init(&l);
	ck_assert_int_eq(op_struct(&l), 0);
	ck_assert_int_eq(op_seq(&l), 0);
	ck_assert_int_eq(bl_encode_signed_varint_lowz(&l, -7), 0);
	ck_assert_int_eq(bl_encode_lba(&l, 77), 0);
	ck_assert_int_eq(bl_encode_string(&l, "abc"), 0);
	recut(&l, 3);
	bl_pool_cache_enable(false);
	tu_alloc_install(1, 1);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_struct(&it, 2, rec_decode_fields, &r, NULL),
			 0);
	ck_assert_int_eq(bl_decode_seq(&it, map_decode_item, &m, NULL), 0);
	ck_assert_int_eq(bl_decode_signed_varint_lowz(&it, &s), 0);
	ck_assert_int_eq(bl_decode_lba(&it, &u), 0);
	ck_assert_int_eq(bl_decode_string(&it, buf, sizeof(buf), NULL), 0);
	tu_alloc_stats(&st);
	ck_assert_uint_eq(st.failed, 0);
	tu_alloc_uninstall();
	bl_pool_cache_enable(true);
	ck_assert(s == -7 && u == 77);
	ck_assert_str_eq(buf, "abc");
	bl_list_clear(&l);
}
END_TEST

int main(void)
{
	const TTest *struct_tests[] = {
		test_struct_header_layout_is_cephs,
		test_struct_round_trip_any_segmentation,
		test_struct_truncated_at_every_byte_is_erange,
		test_struct_len_lying_short_stops_the_fields,
		test_struct_len_lying_long_is_erange,
		test_struct_compat_too_new_is_eprotonosupport,
		test_struct_newer_trailing_fields_are_skipped_without_copy,
		test_struct_nesting_any_depth,
		test_struct_failed_encode_leaves_list_as_it_was,
		test_struct_decode_errors,
		test_struct_seek_back_keeps_the_bound,
		test_struct_finish_drops_stale_crc,
		NULL
	};
	const TTest *hole_tests[] = {
		test_hole_is_filled_in_place_across_refills,
		test_hole_starts_zeroed_and_checks_ranges,
		NULL
	};
	const TTest *scalars_tests[] = {
		/* a loaded machine */
		test_signed_ints_bytes_and_round_trip,
		test_bool_and_floats_bytes_and_round_trip,
		test_signed_varint_bytes,
		test_varint_lowz_bytes,
		test_signed_varint_lowz_bytes,
		test_lba_bytes,
		test_lba_round_trip_many,
		test_string_uuid_utime_bytes,
		NULL
	};
	const TTest *seq_tests[] = {
		test_seq_bytes_round_trip_and_failure,
		NULL
	};
	const TTest *predicates_tests[] = {
		test_alignment_predicates,
		NULL
	};
	const TTest *failure_tests[] = {
		test_fail_nth_allocation_sweep,
		test_decoders_allocate_nothing,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("struct", struct_tests, .timeout = 60),
		TU_GROUP("hole", hole_tests),
		TU_GROUP("scalars", scalars_tests, .timeout = 60),
		TU_GROUP("seq", seq_tests),
		TU_GROUP("predicates", predicates_tests),
		TU_GROUP("failure", failure_tests, .timeout = 120),
		TU_GROUP_END
	};

	return tu_run(tu_suite("denc", groups));
}
