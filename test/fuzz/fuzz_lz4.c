/* SPDX-License-Identifier: MIT */
/*
 * fuzz_lz4.c - bl_lz4 decompression of arbitrary bytes in arbitrary
 * segmentation, one-shot and streaming, against liblz4's own LZ4F decoder;
 * and a round trip of arbitrary bytes through bl_lz4_compress().
 *
 * Input layout:
 *   byte 0   bit 0: 0 = decode mode, 1 = round-trip mode; bits 1-3: how
 *            many segments go into one streaming feed (1..8); bits 4-7:
 *            segment kinds
 *   byte 1   low 4 bits: number of cut bytes; high 4 bits: the size limit
 *            (0: none; else the reference output length + (c - 8))
 *   byte 2.. round-trip mode only: 2 option bytes
 *   cuts     each the size of the next segment minus 1 (used in turn)
 *   rest     the compressed input (decode) or the content (round trip)
 *
 * Decode mode: the reference is LZ4F_decompress() over the flat input,
 * frame after frame.  Where it succeeds (and no frame asks for a
 * dictionary, which the library refuses), bl_lz4_decompress() and the
 * streaming decoder must produce exactly its bytes, or -E2BIG when they
 * exceed the limit; where it fails, they must fail with -EBADMSG (or
 * -E2BIG under a limit).  The one exception: a match of offset 0, which
 * the format calls invalid and liblz4 takes, is -EBADMSG.  Whatever the
 * reference says, the input decoded as one segment, in the segmentation
 * the fuzzer picked, and streamed must give the same result, to the byte
 * (a block decoded one way when it lay in one segment and another when it
 * spanned two was a bug).  Every failure leaves the output list as it was
 * (it starts non-empty so that "as it was" means something), and the input
 * list is never changed.  A failing feed appends nothing, and the decoder
 * then refuses more with -EINVAL.
 *
 * Round-trip mode: the content is compressed with options from the input,
 * checked by LZ4F_decompress() (interoperability) and decompressed again
 * with both of the library's decoders, in a segmentation of its own.
 *
 * Defines LLVMFuzzerTestOneInput only (see fuzz_list.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <lz4frame.h>
#include <bufferlist.h>
#include "../lz4_walk.h"
#include "list_int.h"
#include "fuzz_util.h"

#define REF_MAX ((size_t)8 << 20)	/* the reference stops here */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Segments [first, first + count) of @src, shared, as a new list @dst. */
static void take_segments(struct bl_list *dst, const struct bl_list *src,
			  unsigned first, unsigned count)
{
	struct bl_ptr p = BL_PTR_INIT;

	bl_list_init(dst);
	for (unsigned i = first; i < first + count; i++) {
		CHECK(bl_list_get_ptr(src, i, &p) == 0);
		CHECK(bl_list_append_ptr_move(dst, &p) == 0);
		bl_ptr_release(&p);
	}
}

/* A list's segments, to prove later that it did not change. */
struct shape {
	size_t len;
	int n;
	struct iovec *v;
};

static void shape_take(struct shape *s, const struct bl_list *l)
{
	unsigned ns = bl_list_num_buffers(l);

	s->len = bl_list_length(l);
	s->v = malloc((ns + 1) * sizeof(*s->v));
	CHECK(s->v);
	s->n = bl_list_to_iovec(l, 0, s->v, (int)ns + 1);
	CHECK(s->n == (int)ns);
}

static bool shape_same(const struct shape *s, const struct bl_list *l)
{
	struct shape t;
	bool same;

	shape_take(&t, l);
	same = t.len == s->len && t.n == s->n &&
	       (!t.n || !memcmp(t.v, s->v, (size_t)t.n * sizeof(*t.v)));
	free(t.v);
	return same;
}

/* ---- the reference ------------------------------------------------------- */

struct ref {
	uint8_t *out;
	size_t n;
	int err;		/* 0, or -EBADMSG; -E2BIG: stopped at REF_MAX */
	bool dict;		/* a frame asked for a dictionary */
};

static void ref_decode(struct ref *r, const uint8_t *src, size_t n)
{
	LZ4F_dctx *dctx;
	size_t pos = 0, cap = 0;
	bool start = true;

	memset(r, 0, sizeof(*r));
	CHECK(!LZ4F_isError(LZ4F_createDecompressionContext(&dctx,
							    LZ4F_VERSION)));
	while (pos < n) {
		size_t sn = n - pos, dn, ret;

		if (start && sn >= 5 && src[pos] == 0x04 &&
		    src[pos + 1] == 0x22 && src[pos + 2] == 0x4d &&
		    src[pos + 3] == 0x18 && (src[pos + 4] & 1))
			r->dict = true;
		if (cap - r->n < 65536) {
			cap = cap ? 2 * cap : 262144;
			r->out = realloc(r->out, cap);
			CHECK(r->out);
		}
		dn = cap - r->n;
		ret = LZ4F_decompress(dctx, r->out + r->n, &dn, src + pos, &sn,
				      NULL);
		if (LZ4F_isError(ret)) {
			r->err = -EBADMSG;
			break;
		}
		pos += sn;
		r->n += dn;
		start = ret == 0;
		if (r->n > REF_MAX) {
			r->err = -E2BIG;
			break;
		}
		if (!sn && !dn) {
			/* no progress with input left: treat as corrupt */
			r->err = -EBADMSG;
			break;
		}
	}
	if (!r->err && !start)
		r->err = -EBADMSG;	/* truncated */
	LZ4F_freeDecompressionContext(dctx);
}

/* ---- the library's decoders -------------------------------------------- */

static const uint8_t prefix[] = "earlier output";

/* One-shot: returns the result; on success @out holds prefix + output. */
static ssize_t run_oneshot(const struct bl_list *in, struct bl_list *out,
			   size_t max_out)
{
	struct shape sin, sout;
	ssize_t r;

	bl_list_init(out);
	CHECK(bl_list_append(out, prefix, sizeof(prefix)) == 0);
	shape_take(&sin, in);
	shape_take(&sout, out);
	r = bl_lz4_decompress(in, out, max_out);
	CHECK(shape_same(&sin, in));
	if (r < 0) {
		CHECK(shape_same(&sout, out));
	} else {
		CHECK(bl_list_length(out) == sizeof(prefix) + (size_t)r);
		CHECK(bl__list_validate(out) == 0);
	}
	free(sin.v);
	free(sout.v);
	return r;
}

/*
 * Streaming: feeds @in in groups of @group segments.  Returns the total,
 * or the first error (checked: that feed appended nothing, and the
 * decoder refuses more).
 */
static ssize_t run_stream(const struct bl_list *in, struct bl_list *out,
			  size_t max_out, unsigned group)
{
	struct bl_lz4_decoder *d = bl_lz4_decoder_new(max_out);
	unsigned ns = bl_list_num_buffers(in);
	ssize_t total = 0, r = 0;

	CHECK(d);
	bl_list_init(out);
	CHECK(bl_list_append(out, prefix, sizeof(prefix)) == 0);
	for (unsigned i = 0; i < ns; i += group) {
		unsigned cnt = ns - i < group ? ns - i : group;
		struct shape sin, sout;
		struct bl_list piece;

		take_segments(&piece, in, i, cnt);
		shape_take(&sin, &piece);
		shape_take(&sout, out);
		r = bl_lz4_decoder_feed(d, &piece, out);
		CHECK(shape_same(&sin, &piece));
		if (r < 0) {
			CHECK(r == -EBADMSG || r == -E2BIG);
			CHECK(shape_same(&sout, out));
			CHECK(bl_lz4_decoder_feed(d, &piece, out) == -EINVAL);
			CHECK(shape_same(&sout, out));
		}
		free(sin.v);
		free(sout.v);
		bl_list_clear(&piece);
		if (r < 0)
			break;
		total += r;
	}
	if (r >= 0) {
		r = bl_lz4_decoder_end(d);
		CHECK(r == 0 || r == -EBADMSG);
		if (!r)
			r = total;
	}
	if (r >= 0)
		CHECK(bl_list_length(out) == sizeof(prefix) + (size_t)r);
	bl_lz4_decoder_free(d);
	return r;
}

/*
 * Both decoders on @in, which holds the @n bytes @flat, against the
 * reference @ref; and bl_lz4_decompress() on @flat as one segment.
 */
static void check_decoders(const struct bl_list *in, const uint8_t *flat,
			   size_t n, const struct ref *ref, size_t max_out,
			   unsigned group)
{
	struct bl_list one, out0, out1, out2;
	ssize_t r0, r1, r2;
	bool ok = !ref->err && !ref->dict &&
		  (!max_out || ref->n <= max_out);
	bool off0 = lz4w_has_offset0(flat, n);

	bl_list_init(&one);
	if (n)
		append_kind(&one, flat, n, 0);
	r0 = run_oneshot(&one, &out0, max_out);
	r1 = run_oneshot(in, &out1, max_out);
	r2 = run_stream(in, &out2, max_out, group);
	/* the segmentation changes nothing */
	CHECK(r1 == r0 && r2 == r0);
	if (r0 >= 0) {
		CHECK(bl_list_contents_equal(&out0, &out1));
		CHECK(bl_list_contents_equal(&out0, &out2));
		CHECK(!off0);
	}
	if (!ref->err && !ref->dict && off0 && r0 == -EBADMSG) {
		/* liblz4 took a match of offset 0; we refuse it */
	} else if (ok) {
		CHECK(r1 == (ssize_t)ref->n && r2 == r1);
		CHECK(bl_list_length(&out1) == sizeof(prefix) + ref->n);
		{
			struct bl_list t;

			bl_list_init(&t);
			CHECK(bl_list_substr_of(&t, &out1, sizeof(prefix),
						ref->n) == 0);
			CHECK(list_is(&t, ref->out, ref->n));
			CHECK(bl_list_contents_equal(&out1, &out2));
			bl_list_clear(&t);
		}
	} else if (!ref->err && !ref->dict) {
		/* valid, but more than the limit allows */
		CHECK(r1 == -E2BIG && r2 == -E2BIG);
	} else if (ref->err == -E2BIG) {
		/* the reference gave up past REF_MAX bytes */
		CHECK(r1 < 0 ? r1 == -E2BIG || r1 == -EBADMSG :
			       (size_t)r1 > REF_MAX);
		CHECK(r2 < 0 ? r2 == -E2BIG || r2 == -EBADMSG :
			       (size_t)r2 > REF_MAX);
	} else {
		CHECK(r1 == -EBADMSG || (max_out && r1 == -E2BIG));
		CHECK(r2 == -EBADMSG || (max_out && r2 == -E2BIG));
	}
	bl_list_clear(&one);
	bl_list_clear(&out0);
	bl_list_clear(&out1);
	bl_list_clear(&out2);
}

static size_t limit_of(unsigned c, size_t ref_n)
{
	if (!c)
		return 0;
	if (ref_n + c < 8 + 1)
		return 1;
	return ref_n + c - 8;
}

static void segment(struct bl_list *l, const uint8_t *d, size_t n,
		    const uint8_t *cuts, size_t ncut, unsigned kinds,
		    size_t scale)
{
	size_t pos = 0;

	bl_list_init(l);
	for (size_t k = 0; pos < n; k++) {
		size_t seg = ncut ? ((size_t)cuts[k % ncut] + 1) * scale : n;

		if (seg > n - pos)
			seg = n - pos;
		append_kind(l, d + pos, seg, kinds + (unsigned)k * (kinds | 1));
		pos += seg;
	}
	CHECK(list_is(l, d, n));
}

static void round_trip(const uint8_t *opt, const uint8_t *d, size_t n,
		       const uint8_t *cuts, size_t ncut, unsigned kinds,
		       unsigned group, unsigned lim)
{
	static const int ids[5] = { 0, 4, 5, 6, 7 };
	struct bl_lz4_opts o = {
		.level = (int)(opt[0] % 18) - 5,	/* -5 .. 12 */
		.block_size_id = ids[opt[1] % 5],
		.block_independent = opt[1] & 8,
		.content_checksum = opt[1] & 16,
		.content_size = opt[1] & 32,
	};
	/* large contents from small inputs: many blocks, long histories */
	static const unsigned reps[5] = { 3, 20, 70, 200, 500 };
	unsigned rep = opt[0] / 18 < 10 ? 1 : reps[opt[0] / 18 - 10];
	uint8_t *big = NULL;
	struct bl_list in, z, zs;
	struct shape sin;
	struct ref ref;
	ssize_t r;
	uint8_t *flat;

	if (rep > 1 && n) {
		big = malloc(n * rep);
		CHECK(big);
		for (unsigned k = 0; k < rep; k++) {
			memcpy(big + k * n, d, n);
			big[k * n] ^= (uint8_t)k;	/* not all identical */
		}
		d = big;
		n *= rep;
	}
	/* segments scale with the content, so they stay few */
	segment(&in, d, n, cuts, ncut, kinds, rep);
	if (opt[1] & 64) {
		/* a block size the format has not: refused, nothing written */
		o.block_size_id = opt[1] & 128 ? 3 : 8;
		bl_list_init(&z);
		CHECK(bl_lz4_compress(&in, &z, &o) == -EINVAL);
		CHECK(bl_list_length(&z) == 0);
		bl_list_clear(&in);
		free(big);
		return;
	}
	bl_list_init(&z);
	shape_take(&sin, &in);
	r = bl_lz4_compress(&in, &z, opt[1] & 128 ? NULL : &o);
	CHECK(r > 0 && (size_t)r == bl_list_length(&z));
	CHECK(shape_same(&sin, &in));
	free(sin.v);

	/* the lz4 format as liblz4 reads it */
	flat = malloc((size_t)r);
	CHECK(flat);
	CHECK(bl_list_copy_out(&z, 0, (size_t)r, flat) == 0);
	ref_decode(&ref, flat, (size_t)r);
	CHECK(!ref.err && !ref.dict && ref.n == n);
	CHECK(!n || !memcmp(ref.out, d, n));

	/* and back through the library, cut differently */
	segment(&zs, flat, (size_t)r, cuts + (ncut > 1), ncut - (ncut > 1),
		kinds >> 1, 1);
	check_decoders(&zs, flat, (size_t)r, &ref, limit_of(lim, ref.n), group);
	check_decoders(&z, flat, (size_t)r, &ref, 0, 1);
	free(ref.out);
	free(flat);
	bl_list_clear(&zs);
	bl_list_clear(&z);
	bl_list_clear(&in);
	free(big);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *cuts, *d, *opt = NULL;
	unsigned kinds, group, lim;
	size_t ncut, hdr, n;
	bool rt;
	struct bl_list in;
	struct ref ref;

	if (size < 2)
		return 0;
	rt = data[0] & 1;
	group = 1 + ((data[0] >> 1) & 7);
	kinds = data[0] >> 4;
	ncut = data[1] & 15;
	lim = data[1] >> 4;
	hdr = 2 + (rt ? 2 : 0);
	if (size < hdr + ncut)
		return 0;
	if (rt)
		opt = data + 2;
	cuts = data + hdr;
	d = cuts + ncut;
	n = size - hdr - ncut;

	if (rt) {
		round_trip(opt, d, n, cuts, ncut, kinds, group, lim);
		return 0;
	}
	segment(&in, d, n, cuts, ncut, kinds, 1);
	ref_decode(&ref, d, n);
	check_decoders(&in, d, n, &ref, ref.err == -E2BIG && !lim ? REF_MAX :
			  limit_of(lim, ref.n), group);
	free(ref.out);
	bl_list_clear(&in);
	return 0;
}
