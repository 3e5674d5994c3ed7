/* SPDX-License-Identifier: MIT */
/*
 * test_codec_encode.c - the little-endian encoders and decoders:
 * fixed-width integers, LEB128 varints and length-prefixed blobs (zero
 * copy, and a list's body shared), over lists cut at every seam, their
 * errors (truncated, too long, overflowing, past 4 GiB, no memory) and a
 * mixed stream in any segmentation.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "testutil.h"

/* ---- helpers ----------------------------------------------------------- */

/* Re-cuts @l into segments of @seg bytes (own raws). */
static void recut(struct bl_list *l, size_t seg)
{
	unsigned char *flat = tu_flatten(l);
	size_t len = bl_list_length(l);

	bl_list_clear(l);
	tu_append_fixed(l, flat, len, seg);
	free(flat);
}

/* ---- fixed-width integers ---------------------------------------------- */

START_TEST(test_encode_fixed_is_little_endian)
{
	static const unsigned char want[] = {
		0xAB,
		0x34, 0x12,
		0xEF, 0xCD, 0xAB, 0x89,
		0xEF, 0xCD, 0xAB, 0x89, 0x67, 0x45, 0x23, 0x01,
	};
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u8(&l, 0xAB), 0);
	ck_assert_int_eq(bl_encode_u16(&l, 0x1234), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 0x89ABCDEFu), 0);
	ck_assert_int_eq(bl_encode_u64(&l, 0x0123456789ABCDEFull), 0);
	tu_assert_list_eq(&l, want, sizeof(want));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_decode_fixed_round_trip)
{
	struct bl_list l;
	struct bl_iter it;
	uint8_t a;
	uint16_t b;
	uint32_t c;
	uint64_t d;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u8(&l, 0), 0);
	ck_assert_int_eq(bl_encode_u8(&l, UINT8_MAX), 0);
	ck_assert_int_eq(bl_encode_u16(&l, 0xBEEF), 0);
	ck_assert_int_eq(bl_encode_u16(&l, UINT16_MAX), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 0xDEADBEEFu), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 0), 0);
	ck_assert_int_eq(bl_encode_u64(&l, UINT64_MAX), 0);
	ck_assert_int_eq(bl_encode_u64(&l, 0x8000000000000001ull), 0);
	ck_assert_uint_eq(bl_list_length(&l), 2 + 4 + 8 + 16);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	ck_assert_int_eq(bl_decode_u8(&it, &a), 0);
	ck_assert_uint_eq(a, 0);
	ck_assert_int_eq(bl_decode_u8(&it, &a), 0);
	ck_assert_uint_eq(a, UINT8_MAX);
	ck_assert_int_eq(bl_decode_u16(&it, &b), 0);
	ck_assert_uint_eq(b, 0xBEEF);
	ck_assert_int_eq(bl_decode_u16(&it, &b), 0);
	ck_assert_uint_eq(b, UINT16_MAX);
	ck_assert_int_eq(bl_decode_u32(&it, &c), 0);
	ck_assert_uint_eq(c, 0xDEADBEEFu);
	ck_assert_int_eq(bl_decode_u32(&it, &c), 0);
	ck_assert_uint_eq(c, 0);
	ck_assert_int_eq(bl_decode_u64(&it, &d), 0);
	ck_assert_uint_eq(d, UINT64_MAX);
	ck_assert_int_eq(bl_decode_u64(&it, &d), 0);
	ck_assert_uint_eq(d, 0x8000000000000001ull);
	tu_assert_at(&it, 30, 0);
	ck_assert_int_eq(bl_decode_u8(&it, &a), -ERANGE);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_decode_fixed_truncated_leaves_cursor)
{
	static const unsigned char seven[7] = { 1, 2, 3, 4, 5, 6, 7 };
	struct bl_list l;
	struct bl_iter it;
	uint8_t a = 0x11;
	uint16_t b = 0x2222;
	uint32_t c = 0x33333333;
	uint64_t d = 0x4444444444444444ull;

	tu_list_bytewise(&l, seven, 7);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	ck_assert_int_eq(bl_decode_u64(&it, &d), -ERANGE);
	tu_assert_at(&it, 0, 7);
	ck_assert_uint_eq(d, 0x4444444444444444ull);
	ck_assert_int_eq(bl_iter_seek(&it, 4), 0);
	ck_assert_int_eq(bl_decode_u32(&it, &c), -ERANGE);
	tu_assert_at(&it, 4, 3);
	ck_assert_uint_eq(c, 0x33333333);
	ck_assert_int_eq(bl_iter_seek(&it, 6), 0);
	ck_assert_int_eq(bl_decode_u16(&it, &b), -ERANGE);
	tu_assert_at(&it, 6, 1);
	ck_assert_uint_eq(b, 0x2222);
	ck_assert_int_eq(bl_decode_u8(&it, &a), 0);
	ck_assert_uint_eq(a, 7);
	ck_assert_int_eq(bl_decode_u8(&it, &a), -ERANGE);
	ck_assert_uint_eq(a, 7);
	tu_assert_at(&it, 7, 0);
	/* what fits still decodes after a refusal */
	ck_assert_int_eq(bl_iter_seek(&it, 0), 0);
	ck_assert_int_eq(bl_decode_u32(&it, &c), 0);
	ck_assert_uint_eq(c, 0x04030201);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_decode_fixed_inside_at_end_and_across_segments)
{
	static const unsigned char b[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
		11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };
	struct bl_list l;
	struct bl_iter it;
	uint16_t v16;
	uint32_t v32;
	uint64_t v64;

	/* segments of 5, 5, 10 bytes */
	bl_list_init(&l);
	tu_append_fixed(&l, b, 5, 5);
	tu_append_fixed(&l, b + 5, 5, 5);
	tu_append_fixed(&l, b + 10, 10, 10);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	/* inside the first segment */
	ck_assert_int_eq(bl_decode_u32(&it, &v32), 0);
	ck_assert_uint_eq(v32, 0x04030201u);
	tu_assert_at(&it, 4, 16);
	/* across the seam */
	ck_assert_int_eq(bl_decode_u16(&it, &v16), 0);
	ck_assert_uint_eq(v16, 0x0605);
	/* up to the end of the second segment exactly */
	ck_assert_int_eq(bl_decode_u32(&it, &v32), 0);
	ck_assert_uint_eq(v32, 0x0a090807u);
	tu_assert_at(&it, 10, 10);
	/* inside the third, then the value that ends the list */
	ck_assert_int_eq(bl_decode_u16(&it, &v16), 0);
	ck_assert_uint_eq(v16, 0x0c0b);
	ck_assert_int_eq(bl_decode_u64(&it, &v64), 0);
	ck_assert_uint_eq(v64, 0x14131211100f0e0dull);
	tu_assert_at(&it, 20, 0);
	ck_assert_int_eq(bl_decode_u16(&it, &v16), -ERANGE);
	ck_assert_int_eq(bl_decode_u32(&it, &v32), -ERANGE);
	ck_assert_int_eq(bl_decode_u64(&it, &v64), -ERANGE);
	ck_assert_uint_eq(v64, 0x14131211100f0e0dull);
	/* a u64 inside a segment of 10 */
	ck_assert_int_eq(bl_iter_seek(&it, 11), 0);
	ck_assert_int_eq(bl_decode_u64(&it, &v64), 0);
	ck_assert_uint_eq(v64, 0x131211100f0e0d0cull);
	tu_assert_at(&it, 19, 1);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_fixed_values_straddling_segments)
{
	struct bl_list enc;
	uint64_t rng = 404;

	/* a prefix of 0..7 bytes shifts every value across the seams */
	for (size_t prefix = 0; prefix < 8; prefix++) {
		for (size_t seg = 1; seg <= 9; seg++) {
			struct bl_iter it;
			uint64_t v64[4], d;
			uint32_t v32[4], c;
			uint16_t v16[4], b;
			uint8_t a;

			bl_list_init(&enc);
			for (size_t i = 0; i < prefix; i++)
				ck_assert_int_eq(bl_encode_u8(&enc, 0xEE), 0);
			for (int i = 0; i < 4; i++) {
				v64[i] = tu_rand(&rng);
				v32[i] = (uint32_t)tu_rand(&rng);
				v16[i] = (uint16_t)tu_rand(&rng);
				ck_assert_int_eq(bl_encode_u64(&enc, v64[i]),
						 0);
				ck_assert_int_eq(bl_encode_u16(&enc, v16[i]),
						 0);
				ck_assert_int_eq(bl_encode_u32(&enc, v32[i]),
						 0);
			}
			recut(&enc, seg);
			ck_assert_int_eq(bl_iter_init(&it, &enc, 0), 0);
			for (size_t i = 0; i < prefix; i++) {
				ck_assert_int_eq(bl_decode_u8(&it, &a), 0);
				ck_assert_uint_eq(a, 0xEE);
			}
			for (int i = 0; i < 4; i++) {
				ck_assert_int_eq(bl_decode_u64(&it, &d), 0);
				ck_assert_uint_eq(d, v64[i]);
				ck_assert_int_eq(bl_decode_u16(&it, &b), 0);
				ck_assert_uint_eq(b, v16[i]);
				ck_assert_int_eq(bl_decode_u32(&it, &c), 0);
				ck_assert_uint_eq(c, v32[i]);
			}
			ck_assert_uint_eq(bl_iter_remaining(&it), 0);
			bl_list_clear(&enc);
		}
	}
}
END_TEST

START_TEST(test_encoders_fail_without_memory)
{
	struct bl_list l;

	bl_list_init(&l);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_encode_u8(&l, 1), -ENOMEM);
	ck_assert_int_eq(bl_encode_u16(&l, 1), -ENOMEM);
	ck_assert_int_eq(bl_encode_u32(&l, 1), -ENOMEM);
	ck_assert_int_eq(bl_encode_u64(&l, 1), -ENOMEM);
	ck_assert_int_eq(bl_encode_varint(&l, 300), -ENOMEM);
	ck_assert_int_eq(bl_encode_bytes(&l, "abc", 3), -ENOMEM);
	tu_assert_list_eq(&l, "", 0);
	tu_alloc_uninstall();
}
END_TEST

/* ---- varint ------------------------------------------------------------ */

static const struct {
	uint64_t v;
	unsigned n;
	unsigned char b[10];
} varints[] = {
	{ 0, 1, { 0x00 } },
	{ 1, 1, { 0x01 } },
	{ 127, 1, { 0x7f } },
	{ 128, 2, { 0x80, 0x01 } },
	{ 300, 2, { 0xac, 0x02 } },
	{ 16383, 2, { 0xff, 0x7f } },
	{ 16384, 3, { 0x80, 0x80, 0x01 } },
	{ 0xFFFFFFFFull, 5, { 0xff, 0xff, 0xff, 0xff, 0x0f } },
	{ 1ull << 63, 10,
	  { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 } },
	{ UINT64_MAX, 10,
	  { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 } },
};

#define NVARINTS (sizeof(varints) / sizeof(varints[0]))

START_TEST(test_varint_encodes_leb128)
{
	for (size_t i = 0; i < NVARINTS; i++) {
		struct bl_list l;

		bl_list_init(&l);
		ck_assert_int_eq(bl_encode_varint(&l, varints[i].v), 0);
		tu_assert_list_eq(&l, varints[i].b, varints[i].n);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_varint_decodes_leb128_across_seams)
{
	for (size_t seg = 1; seg <= 4; seg++) {
		for (size_t i = 0; i < NVARINTS; i++) {
			struct bl_list l;
			struct bl_iter it;
			uint64_t v = 12345;

			bl_list_init(&l);
			tu_append_fixed(&l, varints[i].b, varints[i].n, seg);
			ck_assert_int_eq(bl_encode_u8(&l, 0x5A), 0);
			ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
			ck_assert_int_eq(bl_decode_varint(&it, &v), 0);
			ck_assert_uint_eq(v, varints[i].v);
			tu_assert_at(&it, varints[i].n, 1);
			bl_list_clear(&l);
		}
	}
}
END_TEST

START_TEST(test_varint_round_trip)
{
	struct bl_list l;
	struct bl_iter it;
	uint64_t vals[64 * 3 + 1], v;
	size_t n = 0;

	bl_list_init(&l);
	vals[n++] = 0;
	for (int b = 0; b < 64; b++) {
		uint64_t p = 1ull << b;

		vals[n++] = p - 1;
		vals[n++] = p;
		vals[n++] = p + 1;
	}
	for (size_t i = 0; i < n; i++)
		ck_assert_int_eq(bl_encode_varint(&l, vals[i]), 0);
	recut(&l, 3);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(bl_decode_varint(&it, &v), 0);
		ck_assert_uint_eq(v, vals[i]);
	}
	ck_assert_uint_eq(bl_iter_remaining(&it), 0);
	ck_assert_int_eq(bl_decode_varint(&it, &v), -ERANGE);
	bl_list_clear(&l);
}
END_TEST

/* Decodes @b at offset 1 (after a marker byte); expects @ret, cursor kept. */
static void varint_bad(const unsigned char *b, size_t n, int want)
{
	for (size_t seg = 1; seg <= n + 1; seg += 3) {
		struct bl_list l;
		struct bl_iter it;
		uint64_t v = 777;

		bl_list_init(&l);
		ck_assert_int_eq(bl_encode_u8(&l, 0x42), 0);
		tu_append_fixed(&l, b, n, seg);
		ck_assert_int_eq(bl_iter_init(&it, &l, 1), 0);
		ck_assert_int_eq(bl_decode_varint(&it, &v), want);
		tu_assert_at(&it, 1, n);
		ck_assert_uint_eq(v, 777);
		bl_list_clear(&l);
	}
}

START_TEST(test_varint_truncated_is_erange)
{
	static const unsigned char c1[] = { 0x80 };
	static const unsigned char c2[] = { 0xff, 0x80 };
	static const unsigned char c9[] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	};

	varint_bad(c1, sizeof(c1), -ERANGE);
	varint_bad(c2, sizeof(c2), -ERANGE);
	varint_bad(c9, sizeof(c9), -ERANGE);
	varint_bad(c1, 0, -ERANGE);
}
END_TEST

START_TEST(test_varint_too_long_is_ebadmsg)
{
	/* eleven continuation bytes, then a terminator */
	static const unsigned char c11[] = {
		0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
		0x80, 0x00,
	};
	/* ten bytes that still continue, then a terminator */
	static const unsigned char c10[] = {
		0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81,
		0x00,
	};

	varint_bad(c11, sizeof(c11), -EBADMSG);
	varint_bad(c10, sizeof(c10), -EBADMSG);
}
END_TEST

START_TEST(test_varint_overflow_is_ebadmsg)
{
	/* the 10th byte may only carry bit 63 */
	static const unsigned char two[] = {
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02,
	};
	static const unsigned char big[] = {
		0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f,
	};

	varint_bad(two, sizeof(two), -EBADMSG);
	varint_bad(big, sizeof(big), -EBADMSG);
}
END_TEST

/* ---- blobs ------------------------------------------------------------- */

START_TEST(test_encode_bytes_layout)
{
	static const unsigned char want[] = {
		5, 0, 0, 0, 'h', 'e', 'l', 'l', 'o', 0, 0, 0, 0,
	};
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_bytes(&l, "hello", 5), 0);
	ck_assert_int_eq(bl_encode_bytes(&l, "", 0), 0);
	tu_assert_list_eq(&l, want, sizeof(want));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_encode_bytes_large_blob)
{
	static unsigned char data[100000];
	unsigned char hdr[4];
	struct bl_list l;
	uint64_t rng = 55;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_bytes(&l, data, sizeof(data)), 0);
	ck_assert_uint_eq(bl_list_length(&l), 4 + sizeof(data));
	ck_assert_int_eq(bl_list_copy_out(&l, 0, 4, hdr), 0);
	ck_assert_uint_eq(hdr[0], 100000 & 0xff);
	ck_assert_uint_eq(hdr[1], (100000 >> 8) & 0xff);
	ck_assert_uint_eq(hdr[2], (100000 >> 16) & 0xff);
	ck_assert_uint_eq(hdr[3], 0);
	{
		unsigned char *flat = tu_flatten(&l);

		ck_assert(memcmp(flat + 4, data, sizeof(data)) == 0);
		free(flat);
	}
	bl_list_clear(&l);
}
END_TEST

/*
 * A blob longer than its u32 length can say is too large for the format:
 * -E2BIG, as the messenger and lz4 answer a payload too large for theirs.
 */
START_TEST(test_encode_bytes_past_4gib_is_e2big)
{
#if SIZE_MAX > UINT32_MAX
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "ab", 2), 0);
	/* the length is refused before a byte is read */
	ck_assert_int_eq(bl_encode_bytes(&l, "x", (size_t)UINT32_MAX + 1),
			 -E2BIG);
	tu_assert_list_eq(&l, "ab", 2);
	/* and before the pointer is looked at */
	ck_assert_int_eq(bl_encode_bytes(&l, NULL, (size_t)UINT32_MAX + 1),
			 -E2BIG);
	tu_assert_list_eq(&l, "ab", 2);
	bl_list_clear(&l);
#else
	ck_assert_uint_eq(sizeof(size_t), 4);
#endif
}
END_TEST

/*
 * The same for a list: one of 4 GiB + 1 bytes, over address space that is
 * reserved, never touched (a static raw; nothing reads its bytes), is
 * -E2BIG and leaves the destination as it was.
 */
START_TEST(test_encode_list_past_4gib_is_e2big)
{
#if SIZE_MAX > UINT32_MAX
	size_t big = (size_t)UINT32_MAX + 1;
	struct bl_list l, src, sub;
	struct bl_ptr p;
	void *map = mmap(NULL, big, PROT_READ,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	ck_assert_ptr_ne(map, MAP_FAILED);
	bl_list_init(&l);
	bl_list_init(&src);
	bl_ptr_from_raw(&p, bl_raw_create_static(map, big));
	ck_assert_ptr_nonnull(p.raw);
	ck_assert_int_eq(bl_list_append_ptr_move(&src, &p), 0);
	ck_assert_uint_eq(bl_list_length(&src), big);
	ck_assert_int_eq(bl_list_append(&l, "ab", 2), 0);
	ck_assert_int_eq(bl_encode_list(&l, &src), -E2BIG);
	tu_assert_list_eq(&l, "ab", 2);
	/* one byte less fits the format (shared, so nothing is read) */
	bl_list_init(&sub);
	ck_assert_int_eq(bl_list_substr_of(&sub, &src, 0, big - 1), 0);
	ck_assert_int_eq(bl_encode_list(&l, &sub), 0);
	ck_assert_uint_eq(bl_list_length(&l), 2 + 4 + big - 1);
	bl_list_clear(&sub);
	bl_list_clear(&src);
	bl_list_clear(&l);
	munmap(map, big);
#else
	ck_assert_uint_eq(sizeof(size_t), 4);
#endif
}
END_TEST

/* NULL bytes with a length: -EINVAL, nothing appended (not zeros). */
START_TEST(test_encode_bytes_null_with_length_is_einval)
{
	struct bl_list l;
	struct bl_iter it;
	uint32_t n = 1;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "ab", 2), 0);
	ck_assert_int_eq(bl_encode_bytes(&l, NULL, 3), -EINVAL);
	tu_assert_list_eq(&l, "ab", 2);
	bl_list_clear(&l);
	/* NULL with 0 is the empty blob */
	ck_assert_int_eq(bl_encode_bytes(&l, NULL, 0), 0);
	bl_iter_init(&it, &l, 0);
	ck_assert_int_eq(bl_decode_u32(&it, &n), 0);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(bl_list_length(&l), 4);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_decode_bytes_is_zero_copy)
{
	static unsigned char body[3000];
	struct bl_list l, out;
	struct bl_iter it;
	struct bl_ptr whole = BL_PTR_INIT;
	uint64_t rng = 66, c0;
	unsigned nref0;

	tu_fill(body, sizeof(body), &rng);
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_bytes(&l, body, sizeof(body)), 0);
	ck_assert_int_eq(bl_encode_u8(&l, 0x99), 0);
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &whole), 0);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&out, "pre", 3), 0);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	nref0 = bl_raw_nref(whole.raw);
	c0 = copied_now();
	ck_assert_int_eq(bl_decode_bytes(&it, &out), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_at(&it, 4 + sizeof(body), 1);
	ck_assert_uint_eq(bl_list_length(&out), 3 + sizeof(body));
	{
		unsigned char *flat = tu_flatten(&out);

		ck_assert_mem_eq(flat, "pre", 3);
		ck_assert(memcmp(flat + 3, body, sizeof(body)) == 0);
		free(flat);
	}
	ck_assert_int_eq(bl__list_validate(&out), 0);
	/* the slice in out is one more reference to the same raw */
	ck_assert_uint_eq(bl_raw_nref(whole.raw), nref0 + 1);
	bl_list_clear(&out);
	bl_ptr_release(&whole);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_decode_bytes_across_seams)
{
	struct bl_list l, out;
	struct bl_iter it;
	uint8_t tail;

	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_bytes(&l, "segmented", 9), 0);
	ck_assert_int_eq(bl_encode_bytes(&l, "", 0), 0);
	ck_assert_int_eq(bl_encode_u8(&l, 0x77), 0);
	recut(&l, 1);
	bl_list_init(&out);
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	ck_assert_int_eq(bl_decode_bytes(&it, &out), 0);
	tu_assert_list_eq(&out, "segmented", 9);
	ck_assert_uint_eq(bl_list_num_buffers(&out), 9);
	ck_assert_int_eq(bl_decode_bytes(&it, &out), 0);
	tu_assert_list_eq(&out, "segmented", 9);
	ck_assert_int_eq(bl_decode_u8(&it, &tail), 0);
	ck_assert_uint_eq(tail, 0x77);
	tu_assert_at(&it, 18, 0);
	bl_list_clear(&out);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_decode_bytes_truncated_changes_nothing)
{
	static const unsigned char short_len[] = { 5, 0, 0 };
	static const unsigned char short_body[] = { 10, 0, 0, 0, 'a', 'b' };
	static const unsigned char huge_len[] = { 0xff, 0xff, 0xff, 0xff, 'a' };
	const struct {
		const unsigned char *b;
		size_t n;
	} cases[] = {
		{ short_len, sizeof(short_len) },
		{ short_body, sizeof(short_body) },
		{ huge_len, sizeof(huge_len) },
		{ short_len, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		for (size_t seg = 1; seg <= 6; seg += 5) {
			struct bl_list l, out;
			struct bl_iter it;

			bl_list_init(&l);
			ck_assert_int_eq(bl_encode_u8(&l, 0x42), 0);
			tu_append_fixed(&l, cases[i].b, cases[i].n, seg);
			bl_list_init(&out);
			ck_assert_int_eq(bl_list_append(&out, "keep", 4), 0);
			ck_assert_int_eq(bl_iter_init(&it, &l, 1), 0);
			ck_assert_int_eq(bl_decode_bytes(&it, &out), -ERANGE);
			tu_assert_at(&it, 1, cases[i].n);
			tu_assert_list_eq(&out, "keep", 4);
			ck_assert_uint_eq(bl_list_num_buffers(&out), 1);
			bl_list_clear(&out);
			bl_list_clear(&l);
		}
	}
}
END_TEST

START_TEST(test_encode_list_shares_body)
{
	static unsigned char body[1000];
	struct bl_list l, src, out;
	struct bl_iter it;
	struct bl_raw *r;
	struct bl_ptr p = BL_PTR_INIT;
	uint64_t rng = 88, c0;
	uint32_t n;

	tu_fill(body, sizeof(body), &rng);
	bl_list_init(&l);
	bl_list_init(&src);
	bl_list_init(&out);
	tu_append_fixed(&src, body, sizeof(body), 400);
	ck_assert_int_eq(bl_list_get_ptr(&src, 0, &p), 0);
	r = p.raw;
	bl_ptr_release(&p);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	c0 = copied_now();
	ck_assert_int_eq(bl_encode_list(&l, &src), 0);
	/* only the 4-byte length may have been copied */
	ck_assert_uint_le(copied_now() - c0, 4);
	ck_assert_uint_eq(bl_raw_nref(r), 2);
	ck_assert_uint_eq(bl_list_length(&l), 4 + sizeof(body));
	ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
	ck_assert_int_eq(bl_decode_u32(&it, &n), 0);
	ck_assert_uint_eq(n, sizeof(body));
	ck_assert_int_eq(bl_iter_seek(&it, 0), 0);
	ck_assert_int_eq(bl_decode_bytes(&it, &out), 0);
	tu_assert_list_eq(&out, body, sizeof(body));
	ck_assert_uint_eq(bl_raw_nref(r), 3);
	tu_assert_list_eq(&src, body, sizeof(body));
	bl_list_clear(&out);
	bl_list_clear(&l);
	bl_list_clear(&src);
}
END_TEST

/* The blob of kind 5 for value @v: v % 40 bytes derived from @v. */
static size_t blob_of(uint64_t v, unsigned char *blob)
{
	size_t n = v % 40;

	for (size_t j = 0; j < n; j++)
		blob[j] = (unsigned char)(v >> (j % 8) * 8) ^ (unsigned char)j;
	return n;
}

/* Encodes @v as kind @k: u8, u16, u32, u64, varint, blob. */
static int encode_kind(struct bl_list *l, int k, uint64_t v)
{
	unsigned char blob[40];

	switch (k) {
	case 0:
		return bl_encode_u8(l, (uint8_t)v);
	case 1:
		return bl_encode_u16(l, (uint16_t)v);
	case 2:
		return bl_encode_u32(l, (uint32_t)v);
	case 3:
		return bl_encode_u64(l, v);
	case 4:
		return bl_encode_varint(l, v);
	default:
		return bl_encode_bytes(l, blob, blob_of(v, blob));
	}
}

/* Decodes one value of kind @k and asserts it is @v. */
static void decode_kind(struct bl_iter *it, int k, uint64_t v)
{
	unsigned char blob[40];
	struct bl_list out;
	uint8_t a;
	uint16_t b;
	uint32_t c;
	uint64_t d;

	switch (k) {
	case 0:
		ck_assert_int_eq(bl_decode_u8(it, &a), 0);
		ck_assert_uint_eq(a, (uint8_t)v);
		break;
	case 1:
		ck_assert_int_eq(bl_decode_u16(it, &b), 0);
		ck_assert_uint_eq(b, (uint16_t)v);
		break;
	case 2:
		ck_assert_int_eq(bl_decode_u32(it, &c), 0);
		ck_assert_uint_eq(c, (uint32_t)v);
		break;
	case 3:
		ck_assert_int_eq(bl_decode_u64(it, &d), 0);
		ck_assert_uint_eq(d, v);
		break;
	case 4:
		ck_assert_int_eq(bl_decode_varint(it, &d), 0);
		ck_assert_uint_eq(d, v);
		break;
	default:
		bl_list_init(&out);
		ck_assert_int_eq(bl_decode_bytes(it, &out), 0);
		tu_assert_list_eq(&out, blob, blob_of(v, blob));
		bl_list_clear(&out);
		break;
	}
}

START_TEST(test_mixed_stream_round_trip_any_segmentation)
{
	uint64_t rng = tu_seed("test_mixed_stream_round_trip_any_segmentation");

	for (int round = 0; round < 50; round++) {
		struct bl_list l;
		struct bl_iter it;
		uint64_t vals[200];
		int kinds[200];
		unsigned char *flat;
		size_t len;

		bl_list_init(&l);
		for (int i = 0; i < 200; i++) {
			kinds[i] = (int)(tu_rand(&rng) % 6);
			vals[i] = tu_rand(&rng) >> (tu_rand(&rng) % 64);
			ck_assert_int_eq(encode_kind(&l, kinds[i], vals[i]), 0);
		}
		/* re-cut at random seams, each segment its own raw */
		flat = tu_flatten(&l);
		len = bl_list_length(&l);
		bl_list_clear(&l);
		tu_append_segmented(&l, flat, len, 1 + tu_rand(&rng) % 16, 1,
				    &rng);
		free(flat);
		ck_assert_int_eq(bl_iter_init(&it, &l, 0), 0);
		for (int i = 0; i < 200; i++)
			decode_kind(&it, kinds[i], vals[i]);
		ck_assert_uint_eq(bl_iter_remaining(&it), 0);
		bl_list_clear(&l);
	}
}
END_TEST


int main(void)
{
	const TTest *fixed_tests[] = {
		test_encode_fixed_is_little_endian,
		test_decode_fixed_round_trip,
		test_decode_fixed_truncated_leaves_cursor,
		test_fixed_values_straddling_segments,
		test_decode_fixed_inside_at_end_and_across_segments,
		test_encoders_fail_without_memory,
		NULL
	};
	const TTest *varint_tests[] = {
		test_varint_encodes_leb128,
		test_varint_decodes_leb128_across_seams,
		test_varint_round_trip,
		test_varint_truncated_is_erange,
		test_varint_too_long_is_ebadmsg,
		test_varint_overflow_is_ebadmsg,
		NULL
	};
	const TTest *bytes_tests[] = {
		test_encode_bytes_layout,
		test_encode_bytes_large_blob,
		test_encode_bytes_past_4gib_is_e2big,
		test_encode_list_past_4gib_is_e2big,
		test_encode_bytes_null_with_length_is_einval,
		test_decode_bytes_is_zero_copy,
		test_decode_bytes_across_seams,
		test_decode_bytes_truncated_changes_nothing,
		test_encode_list_shares_body,
		test_mixed_stream_round_trip_any_segmentation,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("fixed", fixed_tests),
		TU_GROUP("varint", varint_tests),
		TU_GROUP("bytes", bytes_tests),
		TU_GROUP_END
	};


	return tu_run(tu_suite("codec_encode", groups));
}
