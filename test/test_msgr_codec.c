/* SPDX-License-Identifier: MIT */
/*
 * test_msgr_codec.c - the messenger's frame codec, no socket needed: round
 * trips of every payload size class through receive lists cut at random
 * (down to 1-byte segments), partial frames, back-to-back frames, proof
 * that parsing shares the received bytes (no copy counted, payload
 * pointing into the receive raws), every kind of malformed frame, and
 * allocation failure at every step.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <bufferlist/msgr.h>
#include "msgr_int.h"	/* bl__msgr_err_is_peers */
#include "testutil.h"
#include "uring_int.h"

/* ---- codec: round trips -------------------------------------------------- */

/* @l = @n bytes of @b cut into random segments of 1..@max_seg bytes. */
static void recv_list(struct bl_list *l, const unsigned char *b, size_t n,
		      size_t max_seg, uint64_t *rng)
{
	bl_list_init(l);
	tu_append_segmented(l, b, n, max_seg, 1, rng);
	ck_assert_int_eq(bl__list_validate(l), 0);
}

START_TEST(roundtrip_sizes_any_segmentation)
{
	static const size_t sizes[] = { 0, 1, 4096, (size_t)1 << 20 };
	static const size_t segs[] = { 1, 3, 24, 29, 1000, 4096, 65536,
				       (size_t)4 << 20 };
	uint64_t rng = tm_seed;

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (size_t gi = 0; gi < sizeof(segs) / sizeof(segs[0]); gi++) {
			size_t n, plen = sizes[si];
			unsigned char *b;
			struct bl_list in;
			struct bl_msgr_frame f;

			/* 1-byte segments of 1 MiB: 1M raws; keep it to
			 * 64 KiB */
			if (plen > 65536 && segs[gi] < 24)
				continue;
			b = tm_frame_bytes(0x1234, 77 + si, plen, si, &n);
			ck_assert_uint_eq(n, plen + BL_MSGR_OVERHEAD);
			recv_list(&in, b, n, segs[gi], &rng);
			bl_msgr_frame_init(&f);
			ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
			ck_assert_uint_eq(f.type, 0x1234);
			ck_assert_uint_eq(f.flags, 0);
			ck_assert(f.seq == 77 + si);
			tu_assert_list_eq(&f.payload, tm_pat + si, plen);
			ck_assert_uint_eq(bl_list_length(&in), 0);
			ck_assert_int_eq(bl__list_validate(&in), 0);
			bl_msgr_frame_release(&f);
			ck_assert_uint_eq(bl_list_length(&f.payload), 0);
			bl_list_clear(&in);
			free(b);
		}
	}
}
END_TEST

START_TEST(flags_and_types_round_trip)
{
	struct bl_list out, pay;
	struct bl_msgr_frame f;

	bl_list_init(&out);
	bl_list_init(&pay);
	ck_assert_int_eq(bl_list_append(&pay, "hello", 5), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 0xffff, UINT64_MAX, &pay,
					0xbeef), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(bl_msgr_parse(&out, &f, 0), 1);
	ck_assert_uint_eq(f.type, 0xffff);
	ck_assert_uint_eq(f.flags, 0xbeef);
	ck_assert(f.seq == UINT64_MAX);
	tu_assert_list_eq(&f.payload, "hello", 5);
	bl_msgr_frame_release(&f);
	ck_assert_int_eq(bl_msgr_parse(&out, &f, 0), 1);
	ck_assert_uint_eq(f.type, 0);
	ck_assert(f.seq == 0);
	ck_assert_uint_eq(bl_list_length(&f.payload), 0);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	bl_list_clear(&out);
	bl_list_clear(&pay);
}
END_TEST

START_TEST(encode_copy_gives_same_bytes_and_shares_otherwise)
{
	struct bl_list a, b, pay;
	unsigned char *fa, *fb;
	unsigned before;
	uint64_t rng = tm_seed;

	bl_list_init(&a);
	bl_list_init(&b);
	bl_list_init(&pay);
	tu_append_segmented(&pay, tm_pat, 5000, 700, 1, &rng);
	{
		struct bl_ptr p0;

		bl_list_get_ptr(&pay, 0, &p0);
		before = bl_raw_nref(p0.raw);
		ck_assert_int_eq(bl_msgr_encode(&a, 3, 9, &pay, 7), 0);
		/* shared: one more reference on the payload's raws */
		ck_assert_uint_eq(bl_raw_nref(p0.raw), before + 1);
		ck_assert_int_eq(bl_msgr_encode(&b, 3, 9, &pay,
						7 | BL_MSGR_ENC_COPY), 0);
		/* copied: none */
		ck_assert_uint_eq(bl_raw_nref(p0.raw), before + 1);
		bl_ptr_release(&p0);
	}
	ck_assert_uint_eq(bl_list_length(&a), bl_list_length(&b));
	fa = tu_flatten(&a);
	fb = tu_flatten(&b);
	ck_assert(memcmp(fa, fb, bl_list_length(&a)) == 0);
	/* shared: every payload segment is in the frame as it was */
	ck_assert_uint_ge(bl_list_num_buffers(&a), bl_list_num_buffers(&pay));
	/* copied: preamble, payload and trailer in the append buffer */
	ck_assert_uint_lt(bl_list_num_buffers(&b), bl_list_num_buffers(&pay));
	free(fa);
	free(fb);
	bl_list_clear(&a);
	bl_list_clear(&b);
	bl_list_clear(&pay);
}
END_TEST

/* The wire bytes of a frame, built by hand with bl_crc32c(). */
static void ref_frame(unsigned char *b, uint16_t type, uint16_t flags,
		      uint64_t seq, const unsigned char *pl, size_t plen)
{
	uint32_t crc;

	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(BL_MSGR_MAGIC >> (8 * i));
	b[4] = (unsigned char)type;
	b[5] = (unsigned char)(type >> 8);
	b[6] = (unsigned char)flags;
	b[7] = (unsigned char)(flags >> 8);
	for (int i = 0; i < 8; i++)
		b[8 + i] = (unsigned char)(seq >> (8 * i));
	for (int i = 0; i < 4; i++)
		b[16 + i] = (unsigned char)((uint32_t)plen >> (8 * i));
	crc = bl_crc32c(BL_MSGR_CRC_SEED, b, 20);
	for (int i = 0; i < 4; i++)
		b[20 + i] = (unsigned char)(crc >> (8 * i));
	memcpy(b + BL_MSGR_PREAMBLE, pl, plen);
	crc = bl_crc32c(BL_MSGR_CRC_SEED, pl, plen);
	for (int i = 0; i < 4; i++)
		b[BL_MSGR_PREAMBLE + plen + i] =
			(unsigned char)(crc >> (8 * i));
}

START_TEST(encode_writes_the_reference_bytes_for_every_short_length)
{
	static const struct { uint16_t type, flags; uint64_t seq; } h[] = {
		{ 0, 0, 0 }, { 0xffff, 0xffff, UINT64_MAX },
		{ 0x1234, 0x00a5, 0x0102030405060708ull },
	};
	uint64_t rng = tm_seed;

	for (size_t plen = 0; plen <= 1100; plen += plen < 300 ? 1 : 37) {
		unsigned char *want = malloc(plen + BL_MSGR_OVERHEAD);

		ck_assert_ptr_nonnull(want);
		for (size_t hi = 0; hi < sizeof(h) / sizeof(h[0]); hi++) {
			ref_frame(want, h[hi].type, h[hi].flags, h[hi].seq,
				  tm_pat + hi, plen);
			/* one slice, then several; copied, then shared */
			for (int k = 0; k < 4; k++) {
				struct bl_list out, pay;
				unsigned char *got;

				bl_list_init(&out);
				bl_list_init(&pay);
				if (k & 1) {
					tu_append_segmented(&pay, tm_pat + hi,
							    plen, 7, 1, &rng);
				} else if (plen) {
					struct bl_ptr bp;

					ck_assert_int_eq(bl_ptr_alloc(&bp,
								      plen),
							 0);
					memcpy(bl_ptr_data(&bp), tm_pat + hi,
					       plen);
					ck_assert_int_eq(
						bl_list_append_ptr_move(&pay,
									&bp),
						0);
				}
				/* twice: into an empty list, then behind a
				 * frame, into the append buffer's room */
				for (int r = 0; r < 2; r++)
					ck_assert_int_eq(bl_msgr_encode(&out,
						h[hi].type, h[hi].seq, &pay,
						h[hi].flags |
						(k & 2 ? 0 : BL_MSGR_ENC_COPY)),
						0);
				ck_assert_uint_eq(bl_list_length(&out), 2 *
						  (plen + BL_MSGR_OVERHEAD));
				ck_assert_int_eq(bl__list_validate(&out), 0);
				got = tu_flatten(&out);
				ck_assert(memcmp(got, want,
						 plen + BL_MSGR_OVERHEAD) == 0);
				ck_assert(memcmp(got + plen + BL_MSGR_OVERHEAD,
						 want,
						 plen + BL_MSGR_OVERHEAD) == 0);
				free(got);
				bl_list_clear(&out);
				bl_list_clear(&pay);
			}
		}
		free(want);
	}
}
END_TEST

START_TEST(encode_rejects_bad_arguments)
{
	struct bl_list out, big;
	struct bl_raw *r;
	struct bl_ptr p;

	bl_list_init(&out);
	bl_list_init(&big);
	ck_assert_int_eq(bl_list_append(&out, "x", 1), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 1, 1, NULL, 1u << 17), -EINVAL);
	ck_assert_int_eq(bl_msgr_encode(NULL, 1, 1, NULL, 0), -EINVAL);
	/* a borrowed 2 GiB range that is never touched: checked first */
	r = bl_raw_create_static(tm_pat, (size_t)BL_MSGR_PAYLOAD_LIMIT + 1);
	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	ck_assert_int_eq(bl_list_append_ptr_move(&big, &p), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 1, 1, &big, 0), -E2BIG);
	tu_assert_list_eq(&out, "x", 1);
	bl_list_clear(&big);
	bl_list_clear(&out);
}
END_TEST

/* ---- codec: partial, back to back, zero copy ----------------------------- */

START_TEST(partial_frame_returns_0_and_leaves_input)
{
	static const size_t sizes[] = { 0, 1, 300, 4096 };
	uint64_t rng = tm_seed;

	for (size_t si = 0; si < 4; si++) {
		size_t n;
		unsigned char *b = tm_frame_bytes(5, 6, sizes[si], 0, &n);

		for (size_t cut = 0; cut < n; cut++) {
			struct bl_list in;
			struct bl_msgr_frame f;
			unsigned nb;

			if (n > 400 && cut > 40 && cut < n - 40 &&
			    tu_rand(&rng) % 64)
				continue;	/* sample big ones */
			recv_list(&in, b, cut, 1 + tu_rand(&rng) % 40, &rng);
			nb = bl_list_num_buffers(&in);
			memset(&f, 0x5a, sizeof(f));
			ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 0);
			ck_assert_uint_eq(f.type, 0x5a5a);
			ck_assert_uint_eq(bl_list_num_buffers(&in), nb);
			tu_assert_list_eq(&in, b, cut);
			bl_list_clear(&in);
		}
		free(b);
	}
}
END_TEST

START_TEST(back_to_back_frames_parse_in_order)
{
	struct bl_list enc, in;
	struct bl_msgr_frame f;
	uint64_t rng = tm_seed;
	unsigned char *b;
	size_t n;
	int nf = 2000;

	bl_list_init(&enc);
	for (int i = 0; i < nf; i++) {
		struct bl_list pay;
		struct bl_ptr p = { tm_pat_raw, (size_t)i,
				     tu_rand(&rng) % 300 };

		if (i % 100 == 7)
			p.len = 20000;
		bl_list_init(&pay);
		ck_assert_int_eq(bl_list_append_ptr(&pay, &p), 0);
		ck_assert_int_eq(bl_msgr_encode(&enc, (uint16_t)i, (uint64_t)i,
						&pay, 0), 0);
		bl_list_clear(&pay);
	}
	n = bl_list_length(&enc);
	b = tu_flatten(&enc);
	for (int round = 0; round < 3; round++) {
		static const size_t maxseg[] = { 7, 1500, 65536 };

		recv_list(&in, b, n, maxseg[round], &rng);
		for (int i = 0; i < nf; i++) {
			ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
			ck_assert_uint_eq(f.type, (uint16_t)i);
			ck_assert(f.seq == (uint64_t)i);
			ck_assert(tm_matches(&f.payload, (size_t)i));
			bl_msgr_frame_release(&f);
		}
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 0);
		ck_assert_uint_eq(bl_list_length(&in), 0);
		bl_list_clear(&in);
	}
	free(b);
	bl_list_clear(&enc);
}
END_TEST

/* True when every byte of @f's payload lies inside one of @in's raws. */
static bool payload_in_raws(const struct bl_list *pay, struct bl_raw **raws,
			    unsigned nraws)
{
	unsigned n = bl_list_num_buffers(pay);

	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p;
		bool found = false;

		bl_list_get_ptr(pay, i, &p);
		for (unsigned j = 0; j < nraws; j++)
			if (p.raw == raws[j])
				found = true;
		bl_ptr_release(&p);
		if (!found)
			return false;
	}
	return true;
}

START_TEST(parse_shares_the_received_bytes)
{
	static const size_t maxseg[] = { 100000, 200, 5 };
	uint64_t rng = tm_seed;

	for (int k = 0; k < 3; k++) {
		struct bl_list enc, in;
		struct bl_msgr_frame f;
		struct bl_stats st0, st1;
		struct bl_raw *raws[4096];
		unsigned nr;
		unsigned char *b;
		size_t n;

		bl_list_init(&enc);
		for (int i = 0; i < 50; i++) {
			struct bl_list pay;
			struct bl_ptr p = { tm_pat_raw, (size_t)i,
					     64 + (size_t)i };

			bl_list_init(&pay);
			bl_list_append_ptr(&pay, &p);
			ck_assert_int_eq(bl_msgr_encode(&enc, 1, (uint64_t)i,
							&pay, 0), 0);
			bl_list_clear(&pay);
		}
		b = tu_flatten(&enc);
		n = bl_list_length(&enc);
		recv_list(&in, b, n, maxseg[k], &rng);
		nr = bl_list_num_buffers(&in);
		ck_assert_uint_le(nr, 4096);
		for (unsigned i = 0; i < nr; i++) {
			struct bl_ptr p;

			bl_list_get_ptr(&in, i, &p);
			raws[i] = p.raw;	/* in keeps them alive */
			bl_ptr_release(&p);
		}
		bl_stats_thread(&st0);
		for (int i = 0; i < 50; i++) {
			ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
			ck_assert(payload_in_raws(&f.payload, raws, nr));
			ck_assert(tm_matches(&f.payload, (size_t)i));
			bl_msgr_frame_release(&f);
		}
		bl_stats_thread(&st1);
		ck_assert(st1.copied_bytes == st0.copied_bytes);
		ck_assert(st1.copy_ops == st0.copy_ops);
		bl_list_clear(&in);
		bl_list_clear(&enc);
		free(b);
	}
}
END_TEST

/* ---- codec: malformed input ---------------------------------------------- */

/*
 * A receive that holds exactly one frame (request/response traffic): the
 * payload takes over the list's reference to the raw, the list is left
 * empty and valid, and it takes the next frame as before.
 */
START_TEST(parse_of_a_lone_frame_moves_the_reference_and_empties_the_list)
{
	static const size_t plens[] = { 0, 1, 64, 300, 5000 };

	for (size_t i = 0; i < sizeof(plens) / sizeof(plens[0]); i++) {
		size_t n, plen = plens[i];
		unsigned char *b = tm_frame_bytes(7, 40 + i, plen, 11, &n);
		struct bl_raw *r = bl_raw_create(n);
		struct bl_ptr p = { r, 0, n };
		struct bl_stats st0, st1;
		struct bl_msgr_frame f;
		struct bl_list in;

		ck_assert_ptr_nonnull(r);
		memcpy(bl_raw_data(r), b, n);
		bl_list_init(&in);
		ck_assert_int_eq(bl_list_append_ptr(&in, &p), 0);
		ck_assert_uint_eq(bl_raw_nref(r), 2);
		bl_stats_thread(&st0);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
		bl_stats_thread(&st1);
		ck_assert_uint_eq(st1.copied_bytes, st0.copied_bytes);
		ck_assert_uint_eq(bl_list_length(&in), 0);
		ck_assert_int_eq(bl__list_validate(&in), 0);
		ck_assert_int_eq(bl__list_validate(&f.payload), 0);
		ck_assert_uint_eq(f.type, 7);
		ck_assert_uint_eq(f.seq, 40 + i);
		ck_assert_uint_eq(bl_list_length(&f.payload), plen);
		ck_assert(tm_matches(&f.payload, 11));
		/* the list's reference moved: none taken, none dropped */
		ck_assert_uint_eq(bl_raw_nref(r), plen ? 2 : 1);
		if (plen) {
			struct bl_ptr q;

			ck_assert_int_eq(bl_list_get_ptr(&f.payload, 0, &q), 0);
			ck_assert_ptr_eq(q.raw, r);
			ck_assert_uint_eq(q.off, BL_MSGR_PREAMBLE);
			bl_ptr_release(&q);
		}
		bl_msgr_frame_release(&f);
		ck_assert_uint_eq(bl_raw_nref(r), 1);
		/* the emptied list takes the next frame */
		p.raw = r;
		ck_assert_int_eq(bl_list_append_ptr(&in, &p), 0);
		ck_assert_int_eq(bl_list_append(&in, b, n), 0);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
		ck_assert(tm_matches(&f.payload, 11));
		bl_msgr_frame_release(&f);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
		ck_assert(tm_matches(&f.payload, 11));
		bl_msgr_frame_release(&f);
		ck_assert_uint_eq(bl_list_length(&in), 0);
		bl_list_clear(&in);
		ck_assert_uint_eq(bl_raw_nref(r), 1);
		bl_raw_put(r);
		free(b);
	}
}
END_TEST

START_TEST(malformed_frames_are_rejected_and_input_kept)
{
	struct bl_msgr_frame f;
	uint64_t rng = tm_seed;
	size_t n;
	unsigned char *good = tm_frame_bytes(1, 2, 1000, 3, &n);
	/* 16 bytes of a next frame behind: the parser's fast path */
	unsigned char *b = calloc(1, n + 16);
	struct {
		size_t at;		/* byte to corrupt, or SIZE_MAX */
		size_t max;
		int want;
		const char *why;
	} cases[] = {
		{ 0, 0, -EBADMSG, "bad magic" },
		{ 3, 0, -EBADMSG, "bad magic" },
		{ 4, 0, -EBADMSG, "bad header crc" },
		{ 9, 0, -EBADMSG, "bad header crc" },
		{ 17, 0, -EBADMSG, "bad header crc" },
		{ 21, 0, -EBADMSG, "bad header crc" },
		{ 24, 0, -EBADMSG, "bad payload crc" },
		{ 500, 0, -EBADMSG, "bad payload crc" },
		{ 1023, 0, -EBADMSG, "bad payload crc" },
		{ 1025, 0, -EBADMSG, "bad payload crc" },
		{ SIZE_MAX, 999, -E2BIG, "payload over the size limit" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (int seg = 0; seg < 2; seg++) {
			struct bl_list in;

			memcpy(b, good, n);
			if (cases[k].at != SIZE_MAX)
				b[cases[k].at] ^= 0x40;
			recv_list(&in, b, n + 16 * (seg == 1), seg ? n : 7,
				  &rng);
			ck_assert_int_eq(bl_msgr_parse(&in, &f,
						       cases[k].max),
					 cases[k].want);
			ck_assert_str_eq(bl_msgr_parse_error(), cases[k].why);
			tu_assert_list_eq(&in, b, n + 16 * (seg == 1));
			bl_list_clear(&in);
		}
	}
	/* a bad magic is seen in the first 4 bytes, a bad length in the
	 * first 24: nobody waits for a payload that is not coming */
	{
		struct bl_list in;

		memcpy(b, good, n);
		b[1] ^= 1;
		recv_list(&in, b, 4, 4, &rng);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), -EBADMSG);
		bl_list_clear(&in);
		recv_list(&in, good, 24, 24, &rng);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 500), -E2BIG);
		bl_list_clear(&in);
	}
	/* a length that no configuration accepts, with a valid header crc */
	{
		struct bl_list in;
		uint32_t len = BL_MSGR_PAYLOAD_LIMIT + 1u, crc;

		memcpy(b, good, 24);
		memcpy(b + 16, &len, 4);
		crc = bl_crc32c(BL_MSGR_CRC_SEED, b, 20);
		memcpy(b + 20, &crc, 4);
		recv_list(&in, b, 24, 24, &rng);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, SIZE_MAX), -EBADMSG);
		ck_assert_str_eq(bl_msgr_parse_error(),
				 "impossible payload length");
		bl_list_clear(&in);
	}
	free(b);
	free(good);
}
END_TEST

/* ---- codec: allocation failure ------------------------------------------- */

START_TEST(encode_and_parse_fail_cleanly_without_memory)
{
	uint64_t rng = tm_seed;
	int failures = 0;

	tu_alloc_install(0, 0);
	for (uint64_t k = 1;; k++) {
		struct bl_list out, pay;
		unsigned char *before;
		size_t blen;
		int ret;

		bl_list_init(&out);
		bl_list_init(&pay);
		tu_append_segmented(&out, tm_pat, 100, 30, 0, &rng);
		tu_append_segmented(&pay, tm_pat + 7, 3000, 200, 1, &rng);
		blen = bl_list_length(&out);
		before = tu_flatten(&out);
		tu_alloc_fail_at(k, 1);
		ret = bl_msgr_encode(&out, 1, k, &pay, k & 1 ? BL_MSGR_ENC_COPY
							   : 0);
		tu_alloc_fail_at(0, 0);
		if (ret) {
			ck_assert_int_eq(ret, -ENOMEM);
			tu_assert_list_eq(&out, before, blen);
			failures++;
		}
		free(before);
		bl_list_clear(&out);
		bl_list_clear(&pay);
		if (!ret)
			break;
		ck_assert_uint_lt(k, 1000);
	}
	ck_assert_int_gt(failures, 0);
	/* parsing a payload of many segments needs a chunk */
	{
		struct bl_list in;
		struct bl_msgr_frame f;
		size_t n;
		unsigned char *b = tm_frame_bytes(1, 2, 200, 0, &n);

		recv_list(&in, b, n, 10, &rng);
		tu_alloc_fail_at(1, 1);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), -ENOMEM);
		tu_alloc_fail_at(0, 0);
		tu_assert_list_eq(&in, b, n);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
		bl_msgr_frame_release(&f);
		bl_list_clear(&in);
		free(b);
	}
	tm_alloc_off_leak_free();
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		roundtrip_sizes_any_segmentation,
		flags_and_types_round_trip,
		encode_copy_gives_same_bytes_and_shares_otherwise,
		encode_writes_the_reference_bytes_for_every_short_length,
		encode_rejects_bad_arguments,
		partial_frame_returns_0_and_leaves_input,
		back_to_back_frames_parse_in_order,
		parse_shares_the_received_bytes,
		parse_of_a_lone_frame_moves_the_reference_and_empties_the_list,
		malformed_frames_are_rejected_and_input_kept,
		encode_and_parse_fail_cleanly_without_memory,
		NULL
	};

	return tm_main_once("test_msgr_codec", "codec", tests);
}
