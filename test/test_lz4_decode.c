/* SPDX-License-Identifier: MIT */
/*
 * test_lz4_decode.c - decoding LZ4 frames from lists: every segmentation
 * of the compressed input, the streaming decoder fed in random pieces,
 * our block decoder against liblz4's (seams near a block's end too), and
 * every kind of bad input: truncation, bad headers, corrupt bytes, wrong
 * checksums and sizes, garbage after a frame, an output cap, a bomb.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <lz4.h>
#include <lz4hc.h>
#include <lz4frame.h>
#include "testutil.h"
#include "lz4_int.h"
#include "lz4_walk.h"
#include <bufferlist/lz4.h>

#define KiB (1u << 10)
#define MiB (1u << 20)

static uint64_t seed;

/* ---- segmentation of the compressed input -------------------------------- */

/* Every way to cut a 16-byte frame: all 2^15 segmentations. */
START_TEST(test_decode_every_segmentation_of_tiny_frame)
{
	unsigned char *f;
	size_t flen;

	f = tu_lz4_flat("a", 1, NULL, &flen);
	ck_assert_uint_eq(flen, 16);
	for (uint32_t mask = 0; mask < (1u << (flen - 1)); mask++) {
		struct bl_list in, out;
		size_t start = 0;

		bl_list_init(&in);
		bl_list_init(&out);
		for (size_t i = 1; i <= flen; i++) {
			if (i == flen || (mask >> (i - 1) & 1)) {
				tu_fixed(&in, f + start, i - start, i - start);
				start = i;
			}
		}
		TU_REQUIRE(bl_lz4_decompress(&in, &out, 0) == 1);
		TU_REQUIRE(bl_list_length(&out) == 1);
		TU_REQUIRE(*bl_list_c_str(&out) == 'a');
		bl_list_clear(&in);
		bl_list_clear(&out);
	}
	free(f);
}
END_TEST

/* Frames of every option set, as 1-byte segments and cut at every byte. */
START_TEST(test_decode_one_byte_segments_and_every_cut)
{
	uint64_t rng = seed;
	size_t len = 150 * KiB;
	unsigned char *data = tu_data(len, TU_MIXED, &rng);

	for (size_t o = 0; o < TU_LZ4_NOPTS; o++) {
		unsigned char *f;
		size_t flen;

		f = tu_lz4_flat(data, len, &tu_lz4_opts[o], &flen);
		if (o % 3 == 0)	/* 1-byte segments: slow to build, a few */
			tu_lz4_expect(f, flen, 1, data, len);
		tu_lz4_expect(f, flen, 7, data, len);
		tu_lz4_expect(f, flen, 4093, data, len);
		free(f);
	}
	/* a small multi-block frame cut into two at every byte */
	{
		struct bl_lz4_opts o = { 0, 4, false, true, true };
		size_t small = 70 * KiB, flen;
		unsigned char *f = tu_lz4_flat(data, small, &o, &flen);

		for (size_t cut = 1; cut < flen; cut += (cut < 64 || flen - cut < 64) ? 1 : 97) {
			struct bl_list in, out;

			bl_list_init(&in);
			bl_list_init(&out);
			tu_fixed(&in, f, cut, cut);
			tu_fixed(&in, f + cut, flen - cut, flen - cut);
			ck_assert_int_eq(bl_lz4_decompress(&in, &out, 0),
					 (ssize_t)small);
			tu_assert_list_eq(&out, data, small);
			bl_list_clear(&in);
			bl_list_clear(&out);
		}
		free(f);
	}
	free(data);
}
END_TEST

/* Several frames and skippable frames, fed to the streaming decoder. */
START_TEST(test_stream_random_pieces_many_frames)
{
	uint64_t rng = seed;
	size_t lens[4] = { 0, 5000, 300 * KiB, 1 };
	unsigned char *data[4], *want;
	struct tu_fb all = { NULL, 0, 0 };
	size_t wlen = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char *f;
		size_t flen;

		data[i] = tu_data(lens[i], i == 2 ? TU_MIXED : TU_TEXT, &rng);
		f = tu_lz4_flat(data[i], lens[i], &tu_lz4_opts[(size_t)i * 3],
				&flen);
		if (i & 1) {	/* a skippable frame before it */
			tu_fb_le32(&all, 0x184D2A50u + (uint32_t)i * 5);
			tu_fb_le32(&all, 10);
			tu_fb_put(&all, "0123456789", 10);
		}
		tu_fb_put(&all, f, flen);
		wlen += lens[i];
		free(f);
	}
	want = malloc(wlen);
	for (int i = 0, off = 0; i < 4; off += (int)lens[i], i++)
		memcpy(want + off, data[i], lens[i]);

	tu_lz4_expect(all.p, all.len, 333, want, wlen);
	for (int round = 0; round < 30; round++) {
		struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
		struct bl_list out;
		size_t off = 0;

		bl_list_init(&out);
		while (off < all.len) {
			size_t n = 1 + tu_rand(&rng) % (round < 10 ? 8 : 70000);
			struct bl_list piece;

			if (n > all.len - off)
				n = all.len - off;
			bl_list_init(&piece);
			tu_logseg(&piece, all.p + off, n, 4096, &rng);
			TU_REQUIRE(bl_lz4_decoder_feed(d, &piece, &out) >= 0);
			bl_list_clear(&piece);
			off += n;
			if (off < all.len)	/* end() only looks */
				TU_REQUIRE(bl_lz4_decoder_end(d) == 0 ||
					   bl_lz4_decoder_end(d) == -EBADMSG);
		}
		ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
		bl_lz4_decoder_free(d);
		tu_assert_list_eq(&out, want, wlen);
		bl_list_clear(&out);
	}
	for (int i = 0; i < 4; i++)
		free(data[i]);
	free(want);
	free(all.p);
}
END_TEST

START_TEST(test_stream_empty_feeds_and_end)
{
	struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
	struct bl_list empty, out;

	bl_list_init(&empty);
	bl_list_init(&out);
	ck_assert_int_eq(bl_lz4_decoder_end(d), 0);	/* no frame at all */
	ck_assert_int_eq(bl_lz4_decoder_feed(d, &empty, &out), 0);
	ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	bl_lz4_decoder_free(d);
	bl_lz4_decoder_free(NULL);
	ck_assert_int_eq(bl_lz4_decoder_feed(NULL, &empty, &out), -EINVAL);
	ck_assert_int_eq(bl_lz4_decoder_end(NULL), -EINVAL);
	ck_assert_int_eq(bl_lz4_decompress(&empty, &out, 0), 0);
}
END_TEST
/* ---- our block decoder against liblz4's ---------------------------------- */

/* Splits @p into random segments and decodes with bl__lz4_block_decode. */
static ssize_t seg_decode(const void *p, size_t n, char *dst, size_t cap,
			  size_t hist, uint64_t *rng)
{
	struct bl_list l;
	struct bl_iter it;
	ssize_t r;

	bl_list_init(&l);
	tu_logseg(&l, p, n, 1 + tu_rand(rng) % 5000, rng);
	TU_REQUIRE(bl_iter_init(&it, &l, 0) == 0);
	r = bl__lz4_block_decode(&it, n, dst, cap, hist);
	if (r >= 0)
		TU_REQUIRE(bl_iter_offset(&it) == n);
	bl_list_clear(&l);
	return r;
}

START_TEST(test_block_decoder_agrees_with_liblz4)
{
	uint64_t rng = seed;
	size_t len = 64 * KiB;
	char *c = malloc(LZ4_compressBound((int)len));
	char *a = malloc(2 * len + 64), *b = malloc(2 * len + 64);

	for (int round = 0; round < 400; round++) {
		size_t n = 1 + tu_rand(&rng) % len, hist = 0;
		unsigned char *src;
		int cs, ra;
		ssize_t rb;

		/* a history before the block in half the rounds */
		if (round & 1) {
			hist = tu_rand(&rng) % (64 * KiB);
			tu_fill_text((unsigned char *)a, hist, &rng);
			memcpy(b, a, hist);
		}
		src = tu_data(n, round % 4, &rng);
		if (round % 8 == 5) {	/* runs: short offsets and long matches */
			for (size_t i = 0; i < n; i++)
				src[i] = (unsigned char)("abcab"[i % (1 + round % 5)]);
		}
		if (round % 3 == 0) {
			LZ4_streamHC_t *s = LZ4_createStreamHC();

			LZ4_resetStreamHC_fast(s, 9);
			if (hist)
				LZ4_loadDictHC(s, a, (int)hist);
			memcpy(a + hist, src, n);
			cs = LZ4_compress_HC_continue(s, a + hist, c, (int)n,
						      LZ4_compressBound((int)n));
			LZ4_freeStreamHC(s);
		} else {
			LZ4_stream_t *s = LZ4_createStream();

			if (hist)
				LZ4_loadDict(s, a, (int)hist);
			memcpy(a + hist, src, n);
			cs = LZ4_compress_fast_continue(s, a + hist, c, (int)n,
							LZ4_compressBound((int)n),
							1 + round % 3);
			LZ4_freeStream(s);
		}
		ck_assert_int_gt(cs, 0);
		/*
		 * Valid block: same bytes, with capacity exact or larger, into
		 * a buffer of exactly history + capacity (ASan sees overruns).
		 */
		for (int t = 0; t < 3; t++) {
			size_t cap = t == 0 ? n : n + tu_rand(&rng) % 100;
			char *x = malloc(hist + cap);

			memcpy(x, a, hist);
			rb = seg_decode(c, (size_t)cs, x + hist, cap, hist, &rng);
			ck_assert_int_eq(rb, (ssize_t)n);
			ck_assert(memcmp(x + hist, src, n) == 0);
			free(x);
		}
		/* corrupted: ours accepts only what liblz4 accepts, alike */
		for (int t = 0; t < 20; t++) {
			size_t pos = tu_rand(&rng) % (size_t)cs, cap = n + 64;

			c[pos] ^= (char)(1 + tu_rand(&rng) % 255);
			ra = hist ? LZ4_decompress_safe_usingDict(c, a + hist, cs,
								  (int)cap, a,
								  (int)hist)
				  : LZ4_decompress_safe(c, a + hist, cs,
							(int)cap);
			{
				char *x = malloc(hist + cap);

				memcpy(x, b, hist);
				rb = seg_decode(c, (size_t)cs, x + hist, cap,
						hist, &rng);
				if (rb >= 0)
					memcpy(b + hist, x + hist, (size_t)rb);
				free(x);
			}
			if (rb >= 0) {
				ck_assert_int_eq(ra, (int)rb);
				ck_assert(memcmp(a + hist, b + hist, (size_t)rb) == 0);
			}
			/* truncated */
			if (cs > 1) {
				rb = seg_decode(c, (size_t)cs - 1 - tu_rand(&rng) %
								   (size_t)(cs - 1),
						b + hist, cap, hist, &rng);
				ck_assert(rb < 0 || (size_t)rb <= cap);
			}
			if (hist)
				memcpy(a, b, hist);
		}
		free(src);
	}
	free(a);
	free(b);
	free(c);
}
END_TEST

/* Decodes the block @c of @cs bytes held as segments cut at @cut1, @cut2. */
static ssize_t cut_decode(const char *c, size_t cs, size_t cut1, size_t cut2,
			  char *dst, size_t cap)
{
	struct bl_list l;
	struct bl_iter it;
	ssize_t r;

	bl_list_init(&l);
	tu_seg(&l, c, cut1);
	if (cut2 > cut1)
		tu_seg(&l, c + cut1, cut2 - cut1);
	tu_seg(&l, c + cut2, cs - cut2);
	TU_REQUIRE(bl_iter_init(&it, &l, 0) == 0);
	r = bl__lz4_block_decode(&it, cs, dst, cap, 0);
	bl_list_clear(&l);
	return r;
}

/*
 * The fast loop stops closer to a seam than to the block's end; wherever
 * the last seams fall in a block's last bytes, valid blocks decode and
 * corrupted ones are accepted only as liblz4 accepts them.
 */
START_TEST(test_block_decoder_seams_near_block_end)
{
	uint64_t rng = seed;
	char *c = malloc(LZ4_compressBound(16 * KiB));
	char *a = malloc(16 * KiB + 64), *b = malloc(16 * KiB + 64);

	for (int round = 0; round < 60; round++) {
		size_t n = KiB + tu_rand(&rng) % (15 * KiB);
		unsigned char *src = tu_data(n, round % 2 ? TU_TEXT : TU_MIXED,
					     &rng);
		size_t cs, cap = n + 64;

		cs = (size_t)LZ4_compress_default((const char *)src, c,
						  (int)n,
						  LZ4_compressBound((int)n));
		ck_assert_uint_gt(cs, 72 + 48 + 1);	/* room for both cuts */
		for (size_t k = 1; k <= 72; k++) {
			size_t cut2 = cs - k;
			size_t cut1 = cut2 - 1 - tu_rand(&rng) % 48;

			ck_assert_int_eq(cut_decode(c, cs, cut1, cut2, b, n),
					 (ssize_t)n);
			ck_assert(memcmp(b, src, n) == 0);
			for (int t = 0; t < 6; t++) {
				size_t pos = cs - 1 - tu_rand(&rng) % 80;
				char old = c[pos];
				int ra;
				ssize_t rb;

				c[pos] ^= (char)(1 + tu_rand(&rng) % 255);
				ra = LZ4_decompress_safe(c, a, (int)cs,
							 (int)cap);
				rb = cut_decode(c, cs, cut1, cut2, b, cap);
				if (rb >= 0) {
					ck_assert_int_eq(ra, (int)rb);
					ck_assert(memcmp(a, b, (size_t)rb) == 0);
				}
				c[pos] = old;
			}
		}
		free(src);
	}
	free(a);
	free(b);
	free(c);
}
END_TEST

/*
 * The decoder grows its output raw alone (a linked stream reads its
 * history there): the slices it hands out cannot grow into it, and the
 * stream decodes whole.
 */
START_TEST(test_stream_survives_caller_appending_to_output)
{
	uint64_t rng = seed;
	size_t len = 400 * KiB, flen;
	unsigned char *data = tu_data(len, TU_TEXT, &rng);
	struct bl_lz4_opts o = { 0, 4, false, true, false };
	unsigned char *f = tu_lz4_flat(data, len, &o, &flen);
	struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
	struct bl_list out, in;
	size_t off = 0, produced = 0;

	bl_list_init(&out);
	while (off < flen) {
		size_t n = flen - off < 9000 ? flen - off : 9000;
		struct bl_list o2;
		struct bl_ptr last;

		bl_list_init(&in);
		bl_list_init(&o2);
		tu_fixed(&in, f + off, n, n);
		ck_assert_int_ge(bl_lz4_decoder_feed(d, &in, &o2), 0);
		/* try to write into the raw's tail through the slice we got */
		if (bl_list_num_buffers(&o2)) {
			ck_assert_int_eq(bl_list_get_ptr(&o2, bl_list_num_buffers(&o2) - 1,
							 &last), 0);
			ck_assert_uint_eq(bl_ptr_unused_tail(&last), 0);
			ck_assert_int_eq(bl_ptr_append(&last, "xyz", 3), -ENOSPC);
			bl_ptr_release(&last);
		}
		produced += bl_list_length(&o2);
		ck_assert_int_eq(bl_list_claim_append(&out, &o2), 0);
		bl_list_clear(&in);
		off += n;
	}
	ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
	bl_lz4_decoder_free(d);
	tu_assert_list_eq(&out, data, len);
	bl_list_clear(&out);
	free(f);
	free(data);
}
END_TEST
/* ---- bad input ----------------------------------------------------------- */

/* A frame of several linked blocks with both checksums and content size. */
static unsigned char *small_frame(size_t *flen, unsigned char **data,
				  size_t *len)
{
	struct tu_fb f = { NULL, 0, 0 };
	uint64_t rng = 42;
	unsigned char *d;

	*len = 3000;
	d = tu_data(*len, TU_TEXT, &rng);
	tu_fill(d + 1000, 500, &rng);
	tu_fb_header(&f, 0x40 | 0x20 | 0x10 | 0x08 | 0x04, 0x40, *len);
	tu_fb_block(&f, d, 1000, true, false);
	tu_fb_block(&f, d + 1000, 1000, true, false);	/* stored: random */
	tu_fb_block(&f, d + 2000, 1000, true, false);
	tu_fb_le32(&f, 0);
	tu_fb_le32(&f, bl__xxh32(d, *len, 0));
	*data = d;
	*flen = f.len;
	return f.p;
}

START_TEST(test_hand_made_frame_decodes)
{
	unsigned char *f, *d;
	size_t flen, len;

	f = small_frame(&flen, &d, &len);
	tu_lz4_expect(f, flen, flen, d, len);
	tu_lz4_expect(f, flen, 1, d, len);
	free(f);
	free(d);
}
END_TEST

START_TEST(test_truncated_at_every_byte)
{
	unsigned char *f, *d;
	size_t flen, len;

	f = small_frame(&flen, &d, &len);
	for (size_t n = 1; n < flen; n++) {
		tu_lz4_truncated(f, n, n);
		tu_lz4_truncated(f, n, 1 + n / 3);
	}
	free(f);
	free(d);
	/* and frames of our own making, every option set */
	{
		uint64_t rng = seed;
		unsigned char *data = tu_data(100 * KiB, TU_MIXED, &rng);

		for (size_t o = 0; o < TU_LZ4_NOPTS; o++) {
			unsigned char *g = tu_lz4_flat(data, 100 * KiB,
						       &tu_lz4_opts[o], &flen);

			for (size_t n = 1; n < flen; n += 1 + n / 64)
				tu_lz4_truncated(g, n, 1 + n / 2);
			tu_lz4_truncated(g, flen - 1, 4096);
			free(g);
		}
		free(data);
	}
}
END_TEST

START_TEST(test_bad_magic_and_header)
{
	unsigned char *f, *d, *g;
	size_t flen, len;

	f = small_frame(&flen, &d, &len);
	g = malloc(flen);
	/* magic */
	memcpy(g, f, flen);
	g[0] ^= 1;
	tu_lz4_bad(g, flen, 5, -EBADMSG);
	tu_lz4_bad("garbage!", 8, 8, -EBADMSG);
	tu_lz4_bad("\x02\x21\x4c\x18\0\0\0\0", 8, 8, -EBADMSG);	/* legacy */
	/* version, reserved bits, dictionary id, block size id < 4 */
	{
		static const unsigned flgs[] = { 0x00, 0x80, 0x42, 0x41 };
		static const unsigned bds[] = { 0x40, 0x40, 0x40, 0x40 };

		for (int i = 0; i < 4; i++) {
			struct tu_fb h = { NULL, 0, 0 };

			tu_fb_header(&h, flgs[i], bds[i], 0);
			tu_fb_le32(&h, 0);
			tu_lz4_bad(h.p, h.len, 3, -EBADMSG);
			free(h.p);
		}
		for (unsigned bd = 0x00; bd < 0x40; bd += 0x10) {
			struct tu_fb h = { NULL, 0, 0 };

			tu_fb_header(&h, 0x40, bd, 0);
			tu_fb_le32(&h, 0);
			tu_lz4_bad(h.p, h.len, 3, -EBADMSG);
			free(h.p);
		}
		{
			struct tu_fb h = { NULL, 0, 0 };

			/* BD reserved bit */
			tu_fb_header(&h, 0x40, 0x41, 0);
			tu_fb_le32(&h, 0);
			tu_lz4_bad(h.p, h.len, 3, -EBADMSG);
			free(h.p);
		}
	}
	/* header checksum */
	memcpy(g, f, flen);
	g[14] ^= 0x10;	/* inside the content size */
	tu_lz4_bad(g, flen, 7, -EBADMSG);
	free(g);
	free(f);
	free(d);
}
END_TEST

START_TEST(test_corrupt_bytes_are_ebadmsg)
{
	uint64_t rng = seed;
	size_t len = 20 * KiB, flen;
	unsigned char *data = tu_data(len, TU_MIXED, &rng);
	struct bl_lz4_opts o = { 0, 4, false, true, true };
	unsigned char *f = tu_lz4_flat(data, len, &o, &flen);
	unsigned char *f2, *d2;
	size_t flen2, len2;

	/*
	 * With a content checksum every change of the content is caught.
	 * Some bits do not change it (the match-length half of the last
	 * token, which has no match): those decode to the same bytes.
	 */
	for (size_t pos = 0; pos < flen; pos++) {
		for (int bit = 0; bit < 8; bit += (pos < 32 || flen - pos < 16) ? 1 : 3) {
			struct bl_list in, out;
			struct tu_lz4_snap si, so;
			ssize_t r;

			f[pos] ^= (unsigned char)(1u << bit);
			bl_list_init(&in);
			tu_out_prefill(&out);
			tu_fixed(&in, f, flen, pos % 2 ? 1000 : flen);
			tu_lz4_snap_take(&si, &in);
			tu_lz4_snap_take(&so, &out);
			r = bl_lz4_decompress(&in, &out, 0);
			if (r >= 0) {
				ck_assert_int_eq(r, (ssize_t)len);
				ck_assert_uint_eq(bl_list_length(&out), len + 6);
				ck_assert_int_eq(bl_list_splice(&out, 0, 6, NULL), 0);
				tu_assert_list_eq(&out, data, len);
			} else {
				ck_assert_int_eq(r, -EBADMSG);
				tu_lz4_snap_check(&so, &out);
			}
			tu_lz4_snap_check(&si, &in);
			tu_lz4_snap_free(&si);
			tu_lz4_snap_free(&so);
			bl_list_clear(&in);
			bl_list_clear(&out);
			f[pos] ^= (unsigned char)(1u << bit);
		}
	}
	/* without checksums: never a crash, input and output intact */
	o.content_checksum = false;
	o.content_size = false;
	free(f);
	f = tu_lz4_flat(data, len, &o, &flen);
	for (size_t pos = 0; pos < flen; pos++) {
		struct bl_list in, out;
		struct tu_lz4_snap si, so;
		ssize_t r;

		f[pos] ^= 0xA5;
		bl_list_init(&in);
		tu_out_prefill(&out);
		tu_fixed(&in, f, flen, pos % 3 ? 333 : flen);
		tu_lz4_snap_take(&si, &in);
		tu_lz4_snap_take(&so, &out);
		r = bl_lz4_decompress(&in, &out, 0);
		ck_assert(r == -EBADMSG || r >= 0);
		tu_lz4_snap_check(&si, &in);
		if (r < 0)
			tu_lz4_snap_check(&so, &out);
		tu_lz4_snap_free(&si);
		tu_lz4_snap_free(&so);
		bl_list_clear(&in);
		bl_list_clear(&out);
		f[pos] ^= 0xA5;
	}
	/* the hand-made frame with block checksums: each block's bytes */
	f2 = small_frame(&flen2, &d2, &len2);
	for (size_t pos = 15; pos < flen2; pos++) {
		f2[pos] ^= 0x01;
		tu_lz4_bad(f2, flen2, 64, -EBADMSG);
		f2[pos] ^= 0x01;
	}
	free(f2);
	free(d2);
	free(f);
	free(data);
}
END_TEST

START_TEST(test_wrong_checksums_and_sizes)
{
	uint64_t rng = 7;
	unsigned char *d = tu_data(5000, TU_TEXT, &rng);

	/* wrong content checksum */
	{
		struct tu_fb f = { NULL, 0, 0 };

		tu_fb_header(&f, 0x64, 0x40, 0);
		tu_fb_block(&f, d, 5000, false, false);
		tu_fb_le32(&f, 0);
		tu_fb_le32(&f, bl__xxh32(d, 5000, 0) ^ 1);
		tu_lz4_bad(f.p, f.len, 100, -EBADMSG);
		free(f.p);
	}
	/* wrong block checksum */
	{
		struct tu_fb f = { NULL, 0, 0 };

		tu_fb_header(&f, 0x70, 0x40, 0);
		tu_fb_block(&f, d, 5000, true, false);
		f.p[f.len - 1] ^= 0x80;
		tu_fb_le32(&f, 0);
		tu_lz4_bad(f.p, f.len, 100, -EBADMSG);
		free(f.p);
	}
	/* a block size field above the block maximum (64 KiB) */
	{
		struct tu_fb f = { NULL, 0, 0 };

		tu_fb_header(&f, 0x60, 0x40, 0);
		tu_fb_le32(&f, 64 * KiB + 1);
		tu_lz4_bad(f.p, f.len, 3, -EBADMSG);
		tu_fb_le32(&f, 0x80000000u | (64 * KiB + 1));
		tu_lz4_bad(f.p, f.len, 3, -EBADMSG);
		free(f.p);
	}
	/* content size larger, then smaller, than the content */
	for (int delta = -1; delta <= 1; delta += 2) {
		struct tu_fb f = { NULL, 0, 0 };

		tu_fb_header(&f, 0x68, 0x40, (uint64_t)(5000 + delta));
		tu_fb_block(&f, d, 5000, false, false);
		tu_fb_le32(&f, 0);
		tu_lz4_bad(f.p, f.len, 100, -EBADMSG);
		free(f.p);
	}
	/* a stored block of exactly the maximum is fine */
	{
		unsigned char *big = tu_data(64 * KiB, TU_RANDOM, &rng);
		struct tu_fb f = { NULL, 0, 0 };

		tu_fb_header(&f, 0x60, 0x40, 0);
		tu_fb_block(&f, big, 64 * KiB, false, true);
		tu_fb_le32(&f, 0);
		tu_lz4_expect(f.p, f.len, 1000, big, 64 * KiB);
		free(f.p);
		free(big);
	}
	free(d);
}
END_TEST

START_TEST(test_garbage_after_frame)
{
	unsigned char *f, *d;
	size_t flen, len;
	struct tu_fb g = { NULL, 0, 0 };

	f = small_frame(&flen, &d, &len);
	for (size_t extra = 1; extra <= 9; extra++) {
		g.len = 0;
		tu_fb_put(&g, f, flen);
		tu_fb_put(&g, "GARBAGE!!", extra);
		tu_lz4_bad(g.p, g.len, 50, -EBADMSG);
	}
	/* trailing zeros too */
	g.len = 0;
	tu_fb_put(&g, f, flen);
	tu_fb_le32(&g, 0);
	tu_lz4_bad(g.p, g.len, 50, -EBADMSG);
	free(g.p);
	free(f);
	free(d);
}
END_TEST

START_TEST(test_max_out_is_e2big)
{
	uint64_t rng = seed;
	size_t len = 300 * KiB, flen;
	unsigned char *data = tu_data(len, TU_TEXT, &rng);
	unsigned char *f = tu_lz4_flat(data, len, NULL, &flen);
	struct bl_list in, out;
	struct tu_lz4_snap si, so;

	bl_list_init(&in);
	tu_out_prefill(&out);
	tu_fixed(&in, f, flen, 4096);
	tu_lz4_snap_take(&si, &in);
	tu_lz4_snap_take(&so, &out);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, len - 1), -E2BIG);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, 1), -E2BIG);
	tu_lz4_snap_check(&si, &in);
	tu_lz4_snap_check(&so, &out);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, len), (ssize_t)len);
	ck_assert_uint_eq(bl_list_length(&out), len + 6);

	/* streaming: max_out counts the whole stream, over two feeds */
	{
		struct bl_lz4_decoder *d = bl_lz4_decoder_new(2 * len - 1);
		struct bl_list o2;

		bl_list_init(&o2);
		ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &o2), (ssize_t)len);
		ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &o2), -E2BIG);
		ck_assert_uint_eq(bl_list_length(&o2), len);
		ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &o2), -EINVAL);
		ck_assert_int_eq(bl_lz4_decoder_end(d), -EINVAL);
		bl_lz4_decoder_free(d);
		bl_list_clear(&o2);
	}
	tu_lz4_snap_free(&si);
	tu_lz4_snap_free(&so);
	bl_list_clear(&in);
	bl_list_clear(&out);
	free(f);
	free(data);
}
END_TEST

/* 64 MiB of zeros in a ~250 KiB frame, 1 MiB allowed: refused early. */
START_TEST(test_decompression_bomb)
{
	size_t len = 64 * MiB, flen;
	unsigned char *zeros = calloc(1, len);
	struct bl_lz4_opts o = { 0, 7, false, false, false };
	unsigned char *f = tu_lz4_flat(zeros, len, &o, &flen);
	struct bl_list in, out;
	struct bl_lz4_decoder *d;

	ck_assert_uint_lt(flen * 200, len);
	bl_list_init(&in);
	bl_list_init(&out);
	tu_fixed(&in, f, flen, 4096);
	tu_alloc_install(0, 0);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, MiB), -E2BIG);
	{
		struct tu_alloc_stats st;

		/* it stopped after one block: a few MiB at most were ever used */
		tu_alloc_stats(&st);
		ck_assert_int_eq(st.live_bytes, 0);
		ck_assert_uint_lt(st.allocs, 8);
	}
	d = bl_lz4_decoder_new(MiB);
	ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &out), -E2BIG);
	bl_lz4_decoder_free(d);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	tu_alloc_uninstall();
	free(f);

	/* a content size above the limit is refused before any block */
	o.content_size = true;
	f = tu_lz4_flat(zeros, 2 * MiB, &o, &flen);
	bl_list_clear(&in);
	tu_fixed(&in, f, 15, 15);	/* the header alone */
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, MiB), -E2BIG);
	free(f);
	bl_list_clear(&in);
	free(zeros);
}
END_TEST

int main(void)
{
	const TTest *segmentation_tests[] = {
		test_decode_every_segmentation_of_tiny_frame,
		test_decode_one_byte_segments_and_every_cut,
		test_stream_random_pieces_many_frames,
		test_stream_empty_feeds_and_end,
		test_block_decoder_agrees_with_liblz4,
		test_block_decoder_seams_near_block_end,
		test_stream_survives_caller_appending_to_output,
		NULL
	};
	const TTest *bad_input_tests[] = {
		test_hand_made_frame_decodes,
		test_truncated_at_every_byte,
		test_bad_magic_and_header,
		test_corrupt_bytes_are_ebadmsg,
		test_wrong_checksums_and_sizes,
		test_garbage_after_frame,
		test_max_out_is_e2big,
		test_decompression_bomb,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("segmentation", segmentation_tests, .timeout = 600),
		TU_GROUP("bad_input", bad_input_tests, .timeout = 600),
		TU_GROUP_END
	};

	seed = tu_seed("test_lz4_decode");
	return tu_run(tu_suite("lz4_decode", groups));
}
