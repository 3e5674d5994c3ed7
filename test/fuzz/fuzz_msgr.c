/* SPDX-License-Identifier: MIT */
/*
 * fuzz_msgr.c - the messenger's frame parser (bl_msgr_parse) on bytes fed
 * in pieces of arbitrary segmentation, against a reference parser over a
 * flat copy of the stream.
 *
 * Input layout:
 *   byte 0   low 4 bits: number of cut bytes; high 4 bits: segment kinds
 *   byte 1   max_payload: 0 = the default, else (b - 1) * 13
 *   byte 2   bit 0: 1 = build mode; bits 1-3: segments per feed (1..8)
 *   cuts     each the size of the next segment minus 1 (used in turn)
 *   rest     raw mode: the stream itself.  Build mode: frame descriptors
 *            (type 2, flags 2, seq 1, length 1, corruption 1, payload;
 *            a length byte b >= 200 means (b - 199) * 97 bytes, padded),
 *            encoded with correct crcs by the harness, one byte flipped
 *            where the corruption byte says so, so the fuzzer gets past
 *            the crcs.
 *
 * Checks, after each piece is appended to the receive list and parse is
 * called until it stops returning 1: every result (1, 0, -EBADMSG,
 * -E2BIG) is the reference's; a frame has the reference's fields and
 * payload, shares the received raws (no payload byte copied: the thread's
 * copy counter does not move) and re-encodes with bl_msgr_encode() to the
 * bytes it came from; any other result leaves the list (down to its
 * segments' addresses) and the frame untouched.  After an error the
 * harness drops one byte and goes on, to reach more of the parser (up to
 * 32 times: garbage byte by byte is slow and teaches little).
 *
 * Defines LLVMFuzzerTestOneInput only (see fuzz_list.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <bufferlist.h>
#include "list_int.h"
#include "msgr_frames.h"
#include "fuzz_util.h"

#define MAXSTREAM (1u << 17)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t get32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The reference: bl_msgr_parse()'s contract over @n flat bytes. */
static int ref_parse(const uint8_t *p, size_t n, size_t max, size_t *total)
{
	uint32_t len;

	if (!max)
		max = BL_MSGR_DEFAULT_MAX_PAYLOAD;
	if (n < 4)
		return 0;
	if (get32(p) != BL_MSGR_MAGIC)
		return -EBADMSG;
	if (n < BL_MSGR_PREAMBLE)
		return 0;
	if (ref_crc(BL_MSGR_CRC_SEED, p, 20) != get32(p + 20))
		return -EBADMSG;
	len = get32(p + 16);
	if (len > BL_MSGR_PAYLOAD_LIMIT)
		return -EBADMSG;
	if (len > max)
		return -E2BIG;
	*total = BL_MSGR_OVERHEAD + (size_t)len;
	if (n < *total)
		return 0;
	if (ref_crc(BL_MSGR_CRC_SEED, p + BL_MSGR_PREAMBLE, len) !=
	    get32(p + BL_MSGR_PREAMBLE + len))
		return -EBADMSG;
	return 1;
}

/*
 * The length, segment count and first @max segments of a list: parse
 * works at the front, and a full copy per call would make long streams
 * of tiny segments quadratic.
 */
struct shape {
	size_t len;
	unsigned nseg;
	int n;
	struct iovec *v;
};

static void shape_take(struct shape *s, const struct bl_list *l, size_t max)
{
	unsigned ns = bl_list_num_buffers(l);
	size_t want = ns < max ? ns : max;

	s->len = bl_list_length(l);
	s->nseg = ns;
	s->v = malloc((want + 1) * sizeof(*s->v));
	CHECK(s->v);
	s->n = bl_list_to_iovec(l, 0, s->v, (int)want);
	CHECK(s->n == (int)want);
}

static bool shape_same(const struct shape *s, const struct bl_list *l)
{
	struct shape t;
	bool same;

	shape_take(&t, l, (size_t)s->n);
	same = t.len == s->len && t.nseg == s->nseg && t.n == s->n &&
	       (!t.n || !memcmp(t.v, s->v, (size_t)t.n * sizeof(*t.v)));
	free(t.v);
	return same;
}

/* Every byte of @sub lies inside one of the segments @s recorded. */
static bool within(const struct bl_list *sub, const struct shape *s)
{
	struct iovec v[16];
	size_t pos = 0;
	int k;

	while ((k = bl_list_to_iovec(sub, pos, v, 16)) > 0) {
		for (int i = 0; i < k; i++) {
			uintptr_t a = (uintptr_t)v[i].iov_base;
			bool in = false;

			for (int j = 0; j < s->n && !in; j++) {
				uintptr_t b = (uintptr_t)s->v[j].iov_base;

				in = a >= b && a + v[i].iov_len <=
					       b + s->v[j].iov_len;
			}
			if (!in)
				return false;
			pos += v[i].iov_len;
		}
	}
	return true;
}

/* Checks one parsed frame against the flat bytes @p of @total. */
static void check_frame(struct bl_msgr_frame *f, const uint8_t *p,
			size_t total, const struct shape *before)
{
	size_t len = total - BL_MSGR_OVERHEAD;
	struct bl_list enc;

	CHECK(f->type == (p[4] | p[5] << 8));
	CHECK(f->flags == (p[6] | p[7] << 8));
	CHECK(f->seq == ((uint64_t)get32(p + 12) << 32 | get32(p + 8)));
	CHECK(list_is(&f->payload, p + BL_MSGR_PREAMBLE, len));
	CHECK(within(&f->payload, before));
	for (unsigned copy = 0; copy < 2; copy++) {
		bl_list_init(&enc);
		CHECK(bl_msgr_encode(&enc, f->type, f->seq, &f->payload,
				     f->flags | (copy ? BL_MSGR_ENC_COPY : 0))
		      == 0);
		CHECK(list_is(&enc, p, total));
		bl_list_clear(&enc);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t stream[MAXSTREAM];
	const uint8_t *cuts, *d;
	size_t ncut, n, max, fed = 0, pos = 0, seg = 0, scale;
	unsigned kinds, group, errors = 0;
	struct bl_list in;

	if (size < 3)
		return 0;
	ncut = data[0] & 15;
	kinds = data[0] >> 4;
	max = data[1] ? (size_t)(data[1] - 1) * 13 : 0;
	group = 1 + ((data[2] >> 1) & 7);
	if (size < 3 + ncut)
		return 0;
	cuts = data + 3;
	d = cuts + ncut;
	n = size - 3 - ncut;
	n = stream_of(d, n, data[2] & 1, stream, MAXSTREAM);

	/* a long stream is cut coarser, so the checks stay linear-ish */
	scale = 1 + n / 2048;
	bl_list_init(&in);
	while (fed < n) {
		/* one piece arrives: @group segments */
		for (unsigned g = 0; g < group && fed < n; g++, seg++) {
			size_t sl = ncut ? ((size_t)cuts[seg % ncut] + 1) * scale
					 : n;

			if (sl > n - fed)
				sl = n - fed;
			append_kind(&in, stream + fed, sl,
				    kinds + (unsigned)seg * (kinds | 1));
			fed += sl;
		}
		CHECK(bl_list_length(&in) == fed - pos);
		for (;;) {
			struct bl_msgr_frame f, f0;
			struct bl_stats st0, st1;
			struct shape s;
			size_t total = 0;
			int want, got;

			want = ref_parse(stream + pos, fed - pos, max, &total);
			memset(&f, 0xa5, sizeof(f));
			memcpy(&f0, &f, sizeof(f));
			/* a frame's bytes lie in at most total segments */
			shape_take(&s, &in, want == 1 ? total + 1 : 64);
			if (want == 1)
				bl_stats_thread(&st0);
			got = bl_msgr_parse(&in, &f, max);
			if (want == 1)
				bl_stats_thread(&st1);
			CHECK(got == want);
			if (got == 1) {
				CHECK(st1.copied_bytes == st0.copied_bytes);
				check_frame(&f, stream + pos, total, &s);
				bl_msgr_frame_release(&f);
				CHECK(bl_list_length(&f.payload) == 0);
				pos += total;
				CHECK(bl_list_length(&in) == fed - pos);
			} else {
				CHECK(shape_same(&s, &in));
				CHECK(!memcmp(&f, &f0, sizeof(f)));
				if (got < 0) {
					const char *why = bl_msgr_parse_error();

					CHECK(why && *why);
				}
			}
			free(s.v);
			if (got == 0)
				break;
			if (got < 0 && ++errors > 32)
				goto out;	/* garbage: enough of it */
			if (got < 0) {
				/* resynchronise one byte later */
				CHECK(bl_list_splice(&in, 0, 1, NULL) == 0);
				pos++;
			}
		}
	}
	CHECK(list_is(&in, stream + pos, n - pos));
out:
	bl_list_clear(&in);
	return 0;
}
