/* SPDX-License-Identifier: MIT */
/*
 * tu_lz4.c - what the lz4 suites (test_lz4_*.c) share: data that
 * compresses like real payloads, lists cut into segments of their own,
 * snapshots of a list a failed call must leave alone, the option sets
 * every round trip runs over, and frames made and checked by hand.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <lz4.h>
#include "testutil.h"
#include "lz4_int.h"
#include <bufferlist/lz4.h>

#define KiB (1u << 10)

/* ---- data and lists ------------------------------------------------------ */

static const char *const words[] = {
	"object", "bucket", "osd", "placement", "group", "monitor", "latency",
	"request", "reply", "client", "server", "message", "payload", "segment",
	"buffer", "list", "the", "of", "and", "lorem", "ipsum", "dolor", "sit",
	"amet", "rados", "pool", "write", "read", "stat", "omap", "xattr",
};

/* JSON-ish lines: compresses about 3:1, like logs or metadata. */
void tu_fill_text(unsigned char *p, size_t len, uint64_t *rng)
{
	size_t nw = sizeof(words) / sizeof(words[0]), i = 0;
	char line[256];

	while (i < len) {
		uint64_t r = tu_rand(rng);
		int k = snprintf(line, sizeof(line),
				 "{\"id\":%u,\"op\":\"%s\",\"obj\":\"%s.%s\",\"size\":%u}\n",
				 (unsigned)(r % 100000), words[(r >> 20) % nw],
				 words[(r >> 28) % nw], words[(r >> 36) % nw],
				 (unsigned)(r >> 44) % 65536);
		size_t n = (size_t)k < len - i ? (size_t)k : len - i;

		memcpy(p + i, line, n);
		i += n;
	}
}

unsigned char *tu_data(size_t len, enum tu_kind k, uint64_t *rng)
{
	unsigned char *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	switch (k) {
	case TU_RANDOM:
		tu_fill(p, len, rng);
		break;
	case TU_TEXT:
		tu_fill_text(p, len, rng);
		break;
	case TU_ZEROS:
		memset(p, 0, len);
		break;
	case TU_MIXED:
		for (size_t off = 0; off < len; off += 64 * KiB) {
			size_t n = len - off < 64 * KiB ? len - off : 64 * KiB;

			if ((off / (64 * KiB)) % 4 == 3)
				tu_fill(p + off, n, rng);
			else
				tu_fill_text(p + off, n, rng);
		}
		break;
	}
	return p;
}

/*
 * Appends a copy of @n bytes as one segment over its own malloc'd block
 * of exactly that size (a claimed raw), so that AddressSanitizer sees any
 * read past a segment's end: a combined raw has its header right after
 * the data, where an overrun would go unnoticed.
 */
void tu_seg(struct bl_list *l, const void *data, size_t n)
{
	void *m = malloc(n);
	struct bl_raw *r;
	struct bl_ptr bp;

	TU_REQUIRE(m);
	memcpy(m, data, n);
	r = bl_raw_claim(m, n, NULL, NULL);
	TU_REQUIRE(r);
	bl_ptr_from_raw(&bp, r);
	TU_REQUIRE(bl_list_append_ptr_move(l, &bp) == 0);
}

/* Appends @len bytes as segments of exactly @seg bytes, each its own raw. */
void tu_fixed(struct bl_list *l, const void *data, size_t len,
	      size_t seg)
{
	const char *p = data;

	while (len) {
		size_t n = len < seg ? len : seg;

		tu_seg(l, p, n);
		p += n;
		len -= n;
	}
}

/* Segments of log-uniform sizes between 1 byte and @max, own raws. */
void tu_logseg(struct bl_list *l, const void *data, size_t len,
	       size_t max, uint64_t *rng)
{
	const char *p = data;
	unsigned bits = 0;

	while (((size_t)1 << bits) < max)
		bits++;
	while (len) {
		size_t n = 1 + tu_rand(rng) % ((size_t)1 << (tu_rand(rng) %
							     (bits + 1)));

		if (n > max)
			n = max;
		if (n > len)
			n = len;
		tu_seg(l, p, n);
		p += n;
		len -= n;
	}
}

/*
 * tu_flatten() without a ck_assert: the snapshots and decoders below run
 * thousands of times a test (every corrupt byte, every truncation), and
 * Check records each passed ck_assert with a write(2).
 */
static unsigned char *flat(const struct bl_list *l, size_t len)
{
	unsigned char *p = malloc(len + 1);

	TU_REQUIRE(p);
	TU_REQUIRE(bl_list_copy_out(l, 0, len, p) == 0);
	return p;
}

/* The list is valid and holds exactly @len bytes equal to @want. */
static void require_bytes(const struct bl_list *l, const void *want,
			  size_t len)
{
	unsigned char *got;

	TU_REQUIRE(bl__list_validate(l) == 0);
	TU_REQUIRE(bl_list_length(l) == len);
	got = flat(l, len);
	TU_REQUIRE(!len || memcmp(got, want, len) == 0);
	free(got);
}

void tu_lz4_snap_take(struct tu_lz4_snap *s, const struct bl_list *l)
{
	s->len = bl_list_length(l);
	s->nseg = bl_list_num_buffers(l);
	s->bytes = flat(l, s->len);
	s->nref = calloc(s->nseg + 1, sizeof(unsigned));
	TU_REQUIRE(s->nref);
	for (unsigned i = 0; i < s->nseg; i++) {
		struct bl_ptr p;

		TU_REQUIRE(bl_list_get_ptr(l, i, &p) == 0);
		s->nref[i] = bl_raw_nref(p.raw) - 1;
		bl_ptr_release(&p);
	}
}

void tu_lz4_snap_check(const struct tu_lz4_snap *s, const struct bl_list *l)
{
	TU_REQUIRE(bl_list_num_buffers(l) == s->nseg);
	require_bytes(l, s->bytes, s->len);
	for (unsigned i = 0; i < s->nseg; i++) {
		struct bl_ptr p;

		TU_REQUIRE(bl_list_get_ptr(l, i, &p) == 0);
		TU_REQUIRE(bl_raw_nref(p.raw) - 1 == s->nref[i]);
		bl_ptr_release(&p);
	}
}

void tu_lz4_snap_free(struct tu_lz4_snap *s)
{
	free(s->bytes);
	free(s->nref);
}

/* An output list that already holds something, to see it left alone. */
void tu_out_prefill(struct bl_list *out)
{
	bl_list_init(out);
	TU_REQUIRE(bl_list_append(out, "prefix", 6) == 0);
}

/* Compresses flat bytes into a malloc'd frame; *len receives its length. */
unsigned char *tu_lz4_flat(const void *data, size_t n,
			   const struct bl_lz4_opts *o, size_t *len)
{
	struct bl_list in, out;
	unsigned char *f;
	ssize_t r;

	bl_list_init(&in);
	bl_list_init(&out);
	if (n)
		tu_fixed(&in, data, n, n);
	r = bl_lz4_compress(&in, &out, o);
	ck_assert_int_gt(r, 0);
	ck_assert_uint_eq((size_t)r, bl_list_length(&out));
	*len = (size_t)r;
	f = tu_flatten(&out);
	bl_list_clear(&in);
	bl_list_clear(&out);
	return f;
}

/* Decodes a flat frame split as @seg-byte segments; asserts it is @want. */
void tu_lz4_expect(const void *frame, size_t flen, size_t seg,
		   const void *want, size_t wlen)
{
	struct bl_list in, out;
	ssize_t r;

	bl_list_init(&in);
	bl_list_init(&out);
	tu_fixed(&in, frame, flen, seg);
	r = bl_lz4_decompress(&in, &out, 0);
	TU_REQUIRE(r == (ssize_t)wlen);
	require_bytes(&out, want, wlen);
	bl_list_clear(&in);
	bl_list_clear(&out);
}

/* Expects @err from both decoders for this flat input; nothing changes. */
void tu_lz4_bad(const void *frame, size_t flen, size_t seg, int err)
{
	struct bl_list in, out;
	struct bl_lz4_decoder *d;
	struct tu_lz4_snap si, so;
	ssize_t r;

	bl_list_init(&in);
	tu_out_prefill(&out);
	if (flen)
		tu_fixed(&in, frame, flen, seg);
	tu_lz4_snap_take(&si, &in);
	tu_lz4_snap_take(&so, &out);
	r = bl_lz4_decompress(&in, &out, 0);
	TU_REQUIRE(r == err);
	tu_lz4_snap_check(&si, &in);
	tu_lz4_snap_check(&so, &out);

	/*
	 * The streaming decoder hands out every whole block it has seen, so
	 * a truncated stream may give output before end() reports it.
	 */
	d = bl_lz4_decoder_new(0);
	TU_REQUIRE(d);
	{
		struct bl_list sout;

		tu_out_prefill(&sout);
		r = bl_lz4_decoder_feed(d, &in, &sout);
		if (r >= 0) {
			TU_REQUIRE(bl_lz4_decoder_end(d) == err);
			TU_REQUIRE(err == -EBADMSG);
		} else {
			TU_REQUIRE(r == err);
			/* a failed feed appends nothing */
			tu_lz4_snap_check(&so, &sout);
			TU_REQUIRE(bl_lz4_decoder_feed(d, &in, &sout) ==
				   -EINVAL);
		}
		bl_list_clear(&sout);
	}
	bl_lz4_decoder_free(d);
	tu_lz4_snap_check(&si, &in);
	tu_lz4_snap_check(&so, &out);
	tu_lz4_snap_free(&si);
	tu_lz4_snap_free(&so);
	bl_list_clear(&in);
	bl_list_clear(&out);
}

/*
 * A truncated stream: bl_lz4_decompress() says -EBADMSG; the streaming
 * decoder takes every piece (the rest may still come) and end() says it.
 */
void tu_lz4_truncated(const void *frame, size_t flen, size_t seg)
{
	struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
	struct bl_list in, out;
	size_t off = 0;

	tu_lz4_bad(frame, flen, seg, -EBADMSG);
	bl_list_init(&out);
	TU_REQUIRE(d);
	while (off < flen) {
		size_t n = flen - off < seg ? flen - off : seg;

		bl_list_init(&in);
		tu_seg(&in, (const char *)frame + off, n);
		TU_REQUIRE(bl_lz4_decoder_feed(d, &in, &out) >= 0);
		bl_list_clear(&in);
		off += n;
	}
	TU_REQUIRE(bl_lz4_decoder_end(d) == -EBADMSG);
	bl_lz4_decoder_free(d);
	bl_list_clear(&out);
}

const struct bl_lz4_opts tu_lz4_opts[TU_LZ4_NOPTS] = {
	/* level, block size id, independent, content checksum, content size */
	{ 0, 0, false, false, false },
	{ 0, 4, true, true, true },
	{ 1, 5, false, true, false },
	{ 9, 4, false, true, true },
	{ 9, 6, true, false, false },
	{ -5, 7, false, false, true },
	{ 12, 4, true, true, false },
	{ 3, 7, true, false, true },
	{ -1, 6, false, true, true },
	{ 0, 7, false, true, false },
};

/* ---- hand-made frames ---------------------------------------------------- */

void tu_fb_put(struct tu_fb *f, const void *d, size_t n)
{
	if (f->len + n > f->cap) {
		f->cap = (f->len + n) * 2 + 64;
		f->p = realloc(f->p, f->cap);
		TU_REQUIRE(f->p);
	}
	memcpy(f->p + f->len, d, n);
	f->len += n;
}

void tu_fb_le32(struct tu_fb *f, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8),
			       (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };

	tu_fb_put(f, b, 4);
}

/* Magic, FLG, BD, optional content size, header checksum. */
void tu_fb_header(struct tu_fb *f, unsigned flg, unsigned bd, uint64_t csize)
{
	unsigned char h[16];
	size_t n = 2;

	tu_fb_le32(f, 0x184D2204u);
	h[0] = (unsigned char)flg;
	h[1] = (unsigned char)bd;
	if (flg & 0x08) {
		for (int i = 0; i < 8; i++)
			h[2 + i] = (unsigned char)(csize >> (8 * i));
		n += 8;
	}
	h[n] = (unsigned char)(bl__xxh32(h, n, 0) >> 8);
	tu_fb_put(f, h, n + 1);
}

/* One block: compressed when it helps (or @force_raw), + checksum when @bchk. */
void tu_fb_block(struct tu_fb *f, const void *data, size_t n, bool bchk,
		 bool force_raw)
{
	char *c = malloc(LZ4_compressBound((int)n));
	int cs = force_raw ? 0 : LZ4_compress_default(data, c, (int)n,
						      LZ4_compressBound((int)n));
	const void *blk = c;
	uint32_t hdr;

	if (cs <= 0 || (size_t)cs >= n) {
		cs = (int)n;
		blk = data;
		hdr = (uint32_t)n | 0x80000000u;
	} else {
		hdr = (uint32_t)cs;
	}
	tu_fb_le32(f, hdr);
	tu_fb_put(f, blk, (size_t)cs);
	if (bchk)
		tu_fb_le32(f, bl__xxh32(blk, (size_t)cs, 0));
	free(c);
}
