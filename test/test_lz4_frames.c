/* SPDX-License-Identifier: MIT */
/*
 * test_lz4_frames.c - LZ4 frames from lists and back: XXH32 against
 * liblz4's, round trips over every option set and segmentation,
 * allocation failure at every step of both directions, and the copy
 * counter proving that input is read in place and output is laid out in
 * large valid segments.
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


/* ---- XXH32 --------------------------------------------------------------- */

/* liblz4 exports no XXH32; its frame's content checksum is one. */
static uint32_t liblz4_xxh32(const void *p, size_t n)
{
	LZ4F_preferences_t prefs;
	size_t cap, len;
	unsigned char *f;
	uint32_t v;

	memset(&prefs, 0, sizeof(prefs));
	prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
	cap = LZ4F_compressFrameBound(n, &prefs);
	f = malloc(cap);
	len = LZ4F_compressFrame(f, cap, p, n, &prefs);
	ck_assert(!LZ4F_isError(len));
	v = (uint32_t)f[len - 4] | (uint32_t)f[len - 3] << 8 |
	    (uint32_t)f[len - 2] << 16 | (uint32_t)f[len - 1] << 24;
	free(f);
	return v;
}

START_TEST(test_xxh32_matches_liblz4)
{
	uint64_t rng = seed;
	unsigned char *d = tu_data(MiB + 77, TU_RANDOM, &rng);
	static const size_t lens[] = { 0, 1, 3, 4, 15, 16, 17, 31, 32, 33,
				       100, 4096, 65537, MiB + 77 };

	ck_assert_uint_eq(bl__xxh32("", 0, 0), 0x02CC5D05u);
	for (size_t n = 0; n < 64; n++)
		ck_assert_uint_eq(bl__xxh32(d, n, 0), liblz4_xxh32(d, n));
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		ck_assert_uint_eq(bl__xxh32(d + 3, lens[i] - (lens[i] > 3 ? 3 : 0),
					    0),
				  liblz4_xxh32(d + 3,
					       lens[i] - (lens[i] > 3 ? 3 : 0)));
	free(d);
}
END_TEST

START_TEST(test_xxh32_streaming_any_split)
{
	uint64_t rng = seed;
	unsigned char *d = tu_data(100000, TU_RANDOM, &rng);
	uint32_t want = bl__xxh32(d, 100000, 0);

	for (int round = 0; round < 200; round++) {
		struct bl__xxh32 s;
		size_t off = 0;

		bl__xxh32_init(&s, 0);
		while (off < 100000) {
			size_t n = tu_rand(&rng) % (round < 100 ? 40 : 9000);

			if (n > 100000 - off)
				n = 100000 - off;
			bl__xxh32_update(&s, d + off, n);
			off += n;
		}
		ck_assert_uint_eq(bl__xxh32_digest(&s), want);
	}
	free(d);
}
END_TEST
/* Compresses @data as @in, checks the result decodes to it both ways. */
static void roundtrip_list(const struct bl_list *in, const unsigned char *data,
			   size_t len, const struct bl_lz4_opts *o,
			   uint64_t *rng)
{
	struct bl_list out, back, back2;
	struct bl_lz4_decoder *d;
	ssize_t r;
	size_t flen;

	bl_list_init(&out);
	bl_list_init(&back);
	bl_list_init(&back2);
	r = bl_lz4_compress(in, &out, o);
	ck_assert_int_gt(r, 0);
	flen = (size_t)r;
	ck_assert_uint_eq(bl_list_length(&out), flen);
	ck_assert_int_eq(bl__list_validate(&out), 0);
	tu_assert_list_eq(in, data, len);	/* input untouched */

	r = bl_lz4_decompress(&out, &back, len ? len : 1);
	ck_assert_int_eq(r, (ssize_t)len);
	tu_assert_list_eq(&back, data, len);

	/* the streaming decoder, fed random pieces of the frame */
	d = bl_lz4_decoder_new(len);
	ck_assert_ptr_nonnull(d);
	for (size_t off = 0, total = 0; off < flen;) {
		size_t n = 1 + tu_rand(rng) % (flen / 3 + 1);
		struct bl_list piece;

		if (n > flen - off)
			n = flen - off;
		bl_list_init(&piece);
		TU_REQUIRE(bl_list_substr_of(&piece, &out, off, n) == 0);
		r = bl_lz4_decoder_feed(d, &piece, &back2);
		TU_REQUIRE(r >= 0);
		total += (size_t)r;
		TU_REQUIRE(bl_list_length(&back2) == total);
		bl_list_clear(&piece);
		off += n;
	}
	ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
	bl_lz4_decoder_free(d);
	tu_assert_list_eq(&back2, data, len);

	bl_list_clear(&out);
	bl_list_clear(&back);
	bl_list_clear(&back2);
}

START_TEST(test_roundtrip_small_sizes)
{
	static const size_t sizes[] = { 0, 1, 2, 13, 100, 4095, 65535, 65536,
					65537, 131072, 200001 };
	uint64_t rng = seed;

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (int k = TU_RANDOM; k <= TU_MIXED; k++) {
			size_t len = sizes[si];
			unsigned char *data = tu_data(len, k, &rng);

			for (size_t o = 0; o < TU_LZ4_NOPTS; o++) {
				struct bl_list in;

				bl_list_init(&in);
				tu_logseg(&in, data, len, 64 * KiB, &rng);
				roundtrip_list(&in, data, len, &tu_lz4_opts[o],
					       &rng);
				bl_list_clear(&in);
			}
			/* NULL options: LZ4F's defaults */
			{
				struct bl_list in;

				bl_list_init(&in);
				tu_fixed(&in, data, len, 1000);
				roundtrip_list(&in, data, len, NULL, &rng);
				bl_list_clear(&in);
			}
			free(data);
		}
	}
}
END_TEST

/*
 * In a thread that makes its raws thread-local (bl_raw_set_thread_local),
 * the codec's output is thread-local too, and the round trip holds.
 */
START_TEST(test_output_of_a_thread_local_thread_is_thread_local)
{
	uint64_t rng = seed;
	size_t len = 200001;
	unsigned char *data = tu_data(len, TU_MIXED, &rng), *back;
	struct bl_list in, z, out;
	struct bl_list_seg_iter it;
	const struct bl_seg *seg;

	ck_assert(!bl_raw_set_thread_local(true));
	bl_list_init(&in);
	bl_list_init(&z);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&in, data, len), 0);
	ck_assert_int_gt(bl_lz4_compress(&in, &z, NULL), 0);
	ck_assert_int_eq(bl_lz4_decompress(&z, &out, 0), (ssize_t)len);
	ck_assert_uint_gt(bl_list_num_buffers(&z), 0);
	BL_LIST_FOREACH_SEG(&z, it, seg)
		ck_assert(bl_raw_is_thread_local(seg->raw));
	BL_LIST_FOREACH_SEG(&out, it, seg)
		ck_assert(bl_raw_is_thread_local(seg->raw));
	back = malloc(len);
	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(bl_list_copy_out(&out, 0, len, back), 0);
	ck_assert_mem_eq(back, data, len);
	bl_list_clear(&in);
	bl_list_clear(&z);
	bl_list_clear(&out);
	ck_assert(bl_raw_set_thread_local(false));
	free(back);
	free(data);
}
END_TEST

/* 10 MiB inputs cut at random boundaries from 1 byte to 1 MiB. */
START_TEST(test_roundtrip_10mib)
{
	static const enum tu_kind kinds[] = { TU_RANDOM, TU_TEXT, TU_MIXED };
	uint64_t rng = seed + (uint64_t)_i;
	size_t len = getenv("BL_TEST_QUICK") ? MiB : 10 * MiB; /* valgrind */
	unsigned char *data = tu_data(len, kinds[_i % 3], &rng);

	for (size_t o = 0; o < TU_LZ4_NOPTS; o++) {
		struct bl_list in;

		/* HC at 10 MiB of each kind is slow: one kind per run */
		if (tu_lz4_opts[o].level >= 9 && o % 3 != (size_t)_i % 3)
			continue;
		bl_list_init(&in);
		switch ((o + (size_t)_i) % 3) {
		case 0:
			tu_logseg(&in, data, len, MiB, &rng);
			break;
		case 1:
			tu_append_segmented(&in, data, len, MiB, 1, &rng);
			break;
		default:
			tu_fixed(&in, data, len, 4 * KiB);
			break;
		}
		roundtrip_list(&in, data, len, &tu_lz4_opts[o], &rng);
		bl_list_clear(&in);
	}
	free(data);
}
END_TEST

START_TEST(test_roundtrip_segments_over_one_raw)
{
	/* slices of one raw: adjacent in memory, as after a big receive */
	uint64_t rng = seed;
	size_t len = 3 * MiB + 123;
	unsigned char *data = tu_data(len, TU_MIXED, &rng);
	struct bl_ptr whole;

	ck_assert_int_eq(bl_ptr_alloc(&whole, len), 0);
	memcpy(bl_ptr_data(&whole), data, len);
	for (size_t o = 0; o < TU_LZ4_NOPTS; o += 2) {
		struct bl_list in;
		size_t off = 0;

		bl_list_init(&in);
		while (off < len) {
			size_t n = 1 + tu_rand(&rng) % (200 * KiB);
			struct bl_ptr s;

			if (n > len - off)
				n = len - off;
			ck_assert_int_eq(bl_ptr_slice(&s, &whole, off, n), 0);
			ck_assert_int_eq(bl_list_append_ptr_move(&in, &s), 0);
			off += n;
		}
		roundtrip_list(&in, data, len, &tu_lz4_opts[o], &rng);
		bl_list_clear(&in);
	}
	bl_ptr_release(&whole);
	free(data);
}
END_TEST

START_TEST(test_bad_options_are_einval)
{
	struct bl_lz4_opts o = { 0, 0, false, false, false };
	struct bl_list in, out;
	struct tu_lz4_snap so;

	bl_list_init(&in);
	ck_assert_int_eq(bl_list_append(&in, "abc", 3), 0);
	tu_out_prefill(&out);
	tu_lz4_snap_take(&so, &out);
	o.level = 13;
	ck_assert_int_eq(bl_lz4_compress(&in, &out, &o), -EINVAL);
	o.level = 0;
	o.block_size_id = 3;
	ck_assert_int_eq(bl_lz4_compress(&in, &out, &o), -EINVAL);
	o.block_size_id = 8;
	ck_assert_int_eq(bl_lz4_compress(&in, &out, &o), -EINVAL);
	o.block_size_id = -1;
	ck_assert_int_eq(bl_lz4_compress(&in, &out, &o), -EINVAL);
	tu_lz4_snap_check(&so, &out);
	tu_lz4_snap_free(&so);
	bl_list_clear(&in);
	bl_list_clear(&out);
}
END_TEST
/* ---- allocation failure -------------------------------------------------- */

static void compress_fail_each(const struct bl_list *in,
			       const struct bl_lz4_opts *o)
{
	struct tu_alloc_stats st;
	struct tu_lz4_snap si, so;
	struct bl_list out;
	uint64_t n;
	ssize_t r;

	tu_out_prefill(&out);
	tu_lz4_snap_take(&si, in);
	tu_lz4_snap_take(&so, &out);
	for (n = 1;; n++) {
		tu_alloc_install(n, 0);
		r = bl_lz4_compress(in, &out, o);
		tu_alloc_stats(&st);
		if (r >= 0) {
			ck_assert_uint_eq(st.failed, 0);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
		tu_lz4_snap_check(&si, in);
		tu_lz4_snap_check(&so, &out);
	}
	ck_assert_uint_gt(n, 1);
	bl_list_clear(&out);
	tu_alloc_stats(&st);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();
	tu_lz4_snap_free(&si);
	tu_lz4_snap_free(&so);
}

START_TEST(test_compress_alloc_failure_at_each_step)
{
	uint64_t rng = seed;
	size_t len = 3 * MiB;
	unsigned char *data = tu_data(len, TU_MIXED, &rng);
	struct bl_lz4_opts hc = { 9, 4, false, true, true };
	struct bl_lz4_opts fi = { 0, 5, true, false, false };
	struct bl_list in;

	bl_list_init(&in);
	tu_fixed(&in, data, 100 * KiB, 4 * KiB);	/* staged */
	tu_fixed(&in, data + 100 * KiB, len - 100 * KiB, 700 * KiB);
	compress_fail_each(&in, NULL);
	compress_fail_each(&in, &hc);
	compress_fail_each(&in, &fi);
	bl_list_clear(&in);
	free(data);
}
END_TEST

static void decompress_fail_each(const struct bl_list *in, size_t want)
{
	struct tu_alloc_stats st;
	struct tu_lz4_snap si, so;
	struct bl_list out;
	uint64_t n;
	ssize_t r;

	tu_out_prefill(&out);
	tu_lz4_snap_take(&si, in);
	tu_lz4_snap_take(&so, &out);
	for (n = 1;; n++) {
		tu_alloc_install(n, 0);
		r = bl_lz4_decompress(in, &out, 0);
		tu_alloc_stats(&st);
		if (r >= 0) {
			ck_assert_int_eq(r, (ssize_t)want);
			ck_assert_uint_eq(bl_list_length(&out), 6 + want);
			if (!st.failed)
				break;
			/* only the trim of the last raw may fail quietly */
			ck_assert_int_eq(bl_list_splice(&out, 6, want, NULL), 0);
			tu_alloc_stats(&st);
			ck_assert_int_eq(st.live_bytes, 0);
			tu_alloc_uninstall();
			tu_lz4_snap_check(&so, &out);
			continue;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
		tu_lz4_snap_check(&si, in);
		tu_lz4_snap_check(&so, &out);
	}
	bl_list_clear(&out);
	tu_alloc_stats(&st);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();

	/* the streaming decoder: a failed feed appends nothing, then dies */
	for (n = 1;; n++) {
		struct bl_lz4_decoder *d;

		tu_out_prefill(&out);
		tu_alloc_install(n, 0);
		errno = 0;
		d = bl_lz4_decoder_new(0);
		if (!d) {
			ck_assert_int_eq(errno, ENOMEM);
			tu_alloc_uninstall();
			bl_list_clear(&out);
			continue;
		}
		r = bl_lz4_decoder_feed(d, in, &out);
		if (r >= 0) {
			ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
			bl_lz4_decoder_free(d);
			bl_list_clear(&out);
			tu_alloc_stats(&st);
			ck_assert_int_eq(st.live_bytes, 0);
			tu_alloc_uninstall();
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		tu_lz4_snap_check(&so, &out);
		ck_assert_int_eq(bl_lz4_decoder_feed(d, in, &out), -EINVAL);
		bl_lz4_decoder_free(d);
		bl_list_clear(&out);
		tu_alloc_stats(&st);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
		tu_lz4_snap_check(&si, in);
	}
	tu_lz4_snap_free(&si);
	tu_lz4_snap_free(&so);
}

START_TEST(test_decompress_alloc_failure_at_each_step)
{
	uint64_t rng = seed;
	size_t len = 3 * MiB, flen;
	unsigned char *data = tu_data(len, TU_MIXED, &rng);
	struct bl_lz4_opts o = { 0, 4, false, true, false };
	unsigned char *f = tu_lz4_flat(data, len, &o, &flen);
	struct bl_list in;

	bl_list_init(&in);
	tu_fixed(&in, f, flen, 4 * KiB);
	decompress_fail_each(&in, len);
	bl_list_clear(&in);
	free(f);
	f = tu_lz4_flat(data, 5000, NULL, &flen);
	tu_fixed(&in, f, flen, 100);
	decompress_fail_each(&in, 5000);
	bl_list_clear(&in);
	free(f);
	free(data);
}
END_TEST
/* ---- zero copy and output shape ------------------------------------------ */

START_TEST(test_compress_reads_large_segments_in_place)
{
	uint64_t rng = seed;
	size_t len = 4 * MiB;
	unsigned char *data = tu_data(len, TU_TEXT, &rng);
	static const size_t segs[] = { 64 * KiB, 100 * KiB, MiB, 4 * MiB };

	for (size_t s = 0; s < sizeof(segs) / sizeof(segs[0]); s++) {
		for (size_t o = 0; o < TU_LZ4_NOPTS; o++) {
			struct bl_list in, out;
			uint64_t before;

			/* HC is slow; each HC option set with one segment size */
			if (tu_lz4_opts[o].level >= 3 && o % 4 != s)
				continue;
			bl_list_init(&in);
			bl_list_init(&out);
			tu_fixed(&in, data, len, segs[s]);
			before = copied_now();
			ck_assert_int_gt(bl_lz4_compress(&in, &out,
							 &tu_lz4_opts[o]), 0);
			ck_assert_msg(copied_now() == before,
				      "compress copied %llu bytes of %zu-byte segments",
				      (unsigned long long)(copied_now() - before),
				      segs[s]);
			bl_list_clear(&in);
			bl_list_clear(&out);
		}
	}
	free(data);
}
END_TEST

START_TEST(test_compress_stages_only_small_segments)
{
	uint64_t rng = seed;
	size_t len = 4 * MiB;
	unsigned char *data = tu_data(len, TU_TEXT, &rng);
	struct bl_list in, out;
	uint64_t before, copied;

	/* 4 KiB segments are staged: each byte once, plus the dictionary
	 * moved when the 1 MiB ring wraps */
	bl_list_init(&in);
	bl_list_init(&out);
	tu_fixed(&in, data, len, 4 * KiB);
	before = copied_now();
	ck_assert_int_gt(bl_lz4_compress(&in, &out, NULL), 0);
	copied = copied_now() - before;
	ck_assert_uint_ge(copied, len);
	ck_assert_uint_le(copied, len + (len / MiB + 1) * 64 * KiB);
	bl_list_clear(&in);
	bl_list_clear(&out);

	/* a mix: only the small segments are copied */
	tu_fixed(&in, data, 10000, 10000);
	tu_fixed(&in, data + 10000, 2 * MiB, MiB);
	tu_fixed(&in, data + 10000 + 2 * MiB, 20000, 20000);
	before = copied_now();
	ck_assert_int_gt(bl_lz4_compress(&in, &out, NULL), 0);
	ck_assert_uint_eq(copied_now() - before, 30000);
	bl_list_clear(&in);
	bl_list_clear(&out);
	free(data);
}
END_TEST

START_TEST(test_decompress_reads_input_in_place)
{
	uint64_t rng = seed;
	size_t len = 3 * MiB, flen;
	unsigned char *data = tu_data(len, TU_TEXT, &rng);

	for (int indep = 0; indep < 2; indep++) {
		struct bl_lz4_opts o = { 0, 4, indep, true, false };
		unsigned char *f = tu_lz4_flat(data, len, &o, &flen);
		static const size_t segs[] = { 7, 4 * KiB, MiB };

		for (size_t s = 0; s < 3; s++) {
			struct bl_list in, out;
			uint64_t before, copied, bound;

			bl_list_init(&in);
			bl_list_init(&out);
			tu_fixed(&in, f, flen, segs[s]);
			before = copied_now();
			ck_assert_int_eq(bl_lz4_decompress(&in, &out, 0),
					 (ssize_t)len);
			copied = copied_now() - before;
			/*
			 * Blocks spanning segments are decoded where they lie:
			 * what is copied is at most the dictionary carried
			 * into each new output raw of a linked frame, and the
			 * trimmed last raw.
			 */
			bound = (indep ? 0 : 64 * KiB *
					  (uint64_t)bl_list_num_buffers(&out)) +
				MiB;
			ck_assert_msg(copied <= bound,
				      "decompress copied %llu (bound %llu)",
				      (unsigned long long)copied,
				      (unsigned long long)bound);
			tu_assert_list_eq(&out, data, len);
			bl_list_clear(&in);
			bl_list_clear(&out);
		}
		free(f);
	}
	free(data);
}
END_TEST

START_TEST(test_small_output_pins_little)
{
	struct bl_list in, out;
	unsigned char *f;
	size_t flen;

	f = tu_lz4_flat("hello, hello, hello", 19, NULL, &flen);
	bl_list_init(&in);
	bl_list_init(&out);
	tu_fixed(&in, f, flen, 3);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, 0), 19);
	ck_assert_uint_eq(bl_list_num_buffers(&out), 1);
	ck_assert_uint_lt(bl_list_pinned_unused(&out), 64);
	tu_assert_list_eq(&out, "hello, hello, hello", 19);
	bl_list_clear(&in);
	bl_list_clear(&out);

	/* compressing a small input makes a small raw too */
	tu_fixed(&in, "hello, hello, hello", 19, 19);
	ck_assert_int_gt(bl_lz4_compress(&in, &out, NULL), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&out), 1);
	ck_assert_uint_lt(bl_list_pinned_unused(&out), 128);
	bl_list_clear(&in);
	bl_list_clear(&out);
	free(f);
}
END_TEST

START_TEST(test_output_segments_are_large_and_valid)
{
	uint64_t rng = seed;
	size_t len = 16 * MiB;
	unsigned char *data = tu_data(len, TU_MIXED, &rng);
	struct bl_list in, out, back;

	bl_list_init(&in);
	bl_list_init(&out);
	bl_list_init(&back);
	tu_fixed(&in, data, len, 4 * KiB);
	ck_assert_int_gt(bl_lz4_compress(&in, &out, NULL), 0);
	ck_assert_int_eq(bl__list_validate(&out), 0);
	/* whole blocks per raw: far fewer segments than blocks */
	ck_assert_uint_lt(bl_list_num_buffers(&out), len / MiB * 2 + 2);
	ck_assert_uint_lt(bl_list_pinned_unused(&out), bl_list_length(&out) / 4);
	ck_assert_int_eq(bl_lz4_decompress(&out, &back, 0), (ssize_t)len);
	ck_assert_uint_lt(bl_list_num_buffers(&back), len / (512 * KiB));
	ck_assert_uint_lt(bl_list_pinned_unused(&back), len / 8);
	tu_assert_list_eq(&back, data, len);
	bl_list_clear(&in);
	bl_list_clear(&out);
	bl_list_clear(&back);
	free(data);
}
END_TEST

int main(void)
{
	const TTest *xxh32_tests[] = {
		test_xxh32_matches_liblz4,
		test_xxh32_streaming_any_split,
		NULL
	};
	const TTest *roundtrip_tests[] = {
		test_roundtrip_small_sizes,
		test_output_of_a_thread_local_thread_is_thread_local,
		test_roundtrip_segments_over_one_raw,
		test_bad_options_are_einval,
		NULL
	};
	const struct tu_loop roundtrip_loops[] = {
		{ test_roundtrip_10mib, 0, 3 },
		{ NULL, 0, 0 }
	};
	const TTest *failure_tests[] = {
		test_compress_alloc_failure_at_each_step,
		test_decompress_alloc_failure_at_each_step,
		NULL
	};
	const TTest *zero_copy_tests[] = {
		test_compress_reads_large_segments_in_place,
		test_compress_stages_only_small_segments,
		test_decompress_reads_input_in_place,
		test_small_output_pins_little,
		test_output_segments_are_large_and_valid,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("xxh32", xxh32_tests),
		TU_GROUP("roundtrip", roundtrip_tests, .loops = roundtrip_loops,
			 .timeout = 600, .teardown = tu_thread_local_off),
		TU_GROUP("failure", failure_tests, .timeout = 600),
		TU_GROUP("zero_copy", zero_copy_tests, .timeout = 600),
		TU_GROUP_END
	};

	seed = tu_seed("test_lz4_frames");
	return tu_run(tu_suite("lz4_frames", groups));
}
