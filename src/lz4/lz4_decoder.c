/* SPDX-License-Identifier: MIT */
/*
 * lz4_decoder.c - LZ4 frames to lists: bl_lz4_decompress() and the
 * streaming decoder (bl_lz4_decoder_*).  The frame format (header, block
 * headers, checksums, skippable frames) is parsed here; the blocks go to
 * the block decoder (lz4_block.c), the checksums to XXH32 (lz4_xxh32.c).
 *
 * Every block is decoded by our own block decoder, which reads the input
 * where it lies, across seams.  Why not liblz4's LZ4F: LZ4F_decompress
 * copies any block that spans two of our segments.  And one decoder for
 * every block is what makes the result independent of the segmentation:
 * liblz4 takes a match offset of 0 (the format calls it invalid; it
 * copies output bytes onto themselves), so the same block decoded by
 * liblz4 when it lay in one segment and by us when it spanned two gave
 * bytes once and -EBADMSG the other time; and checking offsets before
 * liblz4 ran would be a second pass over every block.  Output goes into
 * raws that grow geometrically; for linked blocks a new raw starts with a
 * copy of the last 64 KiB of history, so the dictionary is always the
 * contiguous bytes just before the write position.  bl_lz4_decompress()
 * lets its raws grow to DEC_CHUNK, 4 MiB (a quarter of the history copies
 * of 1 MiB raws; a small output still gets a small raw, and its last raw
 * is trimmed below); a streaming decoder, long-lived and one per
 * connection, stops at 1 MiB.
 *
 * What is copied, all counted with bl__count_copy(): raw (uncompressed)
 * blocks, as the format requires; the <= 64 KiB dictionary carried into
 * each new output raw of a linked frame; and at the end of
 * bl_lz4_decompress() the output of a last raw that would leave more than
 * half of it unused (so a small message does not pin a block-sized
 * buffer).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "endian_int.h"
#include "iter_int.h"
#include "lz4_int.h"
#include <bufferlist/lz4.h>

#define SKIP_MAGIC 0x184D2A50u	/* ..0x184D2A5F: skippable frames */
#define SKIP_MASK 0xFFFFFFF0u
#define DEC_CHUNK (4u << 20)	/* bl_lz4_decompress's raws grow to this */

/* ---- the frame decoder --------------------------------------------------- */

enum dec_state {
	ST_MAGIC,	/* between frames */
	ST_SKIP,	/* inside a skippable frame */
	ST_BLOCK,	/* at a block header */
	ST_CCHK,	/* at the content checksum */
	ST_DEAD,	/* after an error */
};

struct bl_lz4_decoder {
	size_t max_out;		/* 0: no limit */
	size_t total;		/* bytes output by the whole stream */
	enum dec_state st;
	/* the frame being decoded */
	size_t bmax;
	bool indep, bchk, cchk, has_csize;
	uint64_t csize;		/* when has_csize */
	uint64_t fout;		/* bytes output by this frame */
	uint32_t skip;		/* left in a skippable frame */
	struct bl__xxh32 xs;
	/*
	 * Output goes into raw at wpos (its frontier).  [wpos - hist, wpos)
	 * is the frame's history that linked blocks may reach; [handed,
	 * wpos) is output not yet appended to the caller's list; [carry,
	 * ...) is what this raw holds of output (before it: a copy of the
	 * previous raw's history).
	 */
	struct bl_raw *raw;
	size_t wpos, hist, handed, carry;
	size_t next_cap;
	size_t chunk;		/* output raws grow up to this */
	struct bl_pool *pool;
	struct bl_list pend;	/* streaming: fed bytes not consumed yet */
};

static void dec_init(struct bl_lz4_decoder *d, size_t max_out)
{
	memset(d, 0, sizeof(*d));
	d->max_out = max_out;
	d->chunk = BL__LZ4_OUT_CHUNK;
	d->st = ST_MAGIC;
	bl_list_init(&d->pend);
}

static void dec_release(struct bl_lz4_decoder *d)
{
	if (d->raw)
		bl__raw_put(d->raw);
	d->raw = NULL;
	bl_list_clear(&d->pend);
}

/* Copies @n (<= remaining) bytes at @it without moving it.  Not payload. */
static void peek(const struct bl_iter *it, void *dst, size_t n)
{
	struct bl_iter t = *it;
	uint8_t *o = dst;
	const char *p;

	while (n) {
		size_t k = bl_iter_get_ptr_and_advance(&t, n, &p);

		memcpy(o, p, k);
		o += k;
		n -= k;
	}
}

/* Appends [handed, wpos) of the current raw to @res. */
static int dec_hand_out(struct bl_lz4_decoder *d, struct bl_list *res)
{
	struct bl_ptr p;
	int ret;

	if (!d->raw || d->wpos == d->handed)
		return 0;
	p.raw = d->raw;
	p.off = d->handed;
	p.len = d->wpos - d->handed;
	ret = bl_list_append_ptr(res, &p);
	if (!ret)
		d->handed = d->wpos;
	return ret;
}

/* Room for @need bytes of output after the history, in one raw. */
static int dec_room(struct bl_lz4_decoder *d, size_t need,
		    struct bl_list *res)
{
	size_t carry, cap, max_cap;
	struct bl_raw *r;
	int ret;

	/*
	 * The frontier moves only through us (the raw is an owned one: no
	 * slice we handed out can grow it), so it is always wpos.
	 */
	if (d->raw && bl__raw_len(d->raw) - d->wpos >= need)
		return 0;
	ret = dec_hand_out(d, res);
	if (ret)
		return ret;
	carry = d->raw ? d->hist : 0;
	cap = d->next_cap;
	if (d->has_csize && d->csize - d->fout < cap)
		cap = (size_t)(d->csize - d->fout);	/* exact if known */
	cap = bl__lz4_max(cap + carry, need + carry);
	r = bl__raw_create_owned(d->pool, cap);
	if (!r)
		return -ENOMEM;
	if (carry) {
		memcpy(bl__raw_data(r),
		       bl__raw_data(d->raw) + d->wpos - carry, carry);
		bl__count_copy(carry);
		bl__raw_advance(r, carry);
	}
	if (d->raw)
		bl__raw_put(d->raw);
	d->raw = r;
	d->wpos = d->handed = d->carry = carry;
	/* grow geometrically: few allocations for large outputs */
	max_cap = bl__lz4_max(d->chunk, 4 * d->bmax);
	d->next_cap = bl__lz4_min(bl__lz4_max(cap - carry, d->bmax) * 2, max_cap);
	return 0;
}

static int dec_header(struct bl_lz4_decoder *d, struct bl_iter *it,
		      bool *more)
{
	size_t avail = bl_iter_remaining(it), hlen;
	uint8_t h[BL__LZ4_HDR_MAX + 4];
	unsigned flg, bd;

	*more = true;
	if (avail < 6)
		return 0;
	peek(it, h, 6);
	flg = h[4];
	bd = h[5];
	if ((flg & 0xC0) != BL__LZ4_FLG_VERSION || (flg & BL__LZ4_FLG_RESERVED) ||
	    (bd & 0x8F) || ((bd >> 4) & 7) < 4)
		return -EBADMSG;
	if (flg & BL__LZ4_FLG_DICTID)
		return -EBADMSG;	/* no dictionaries here */
	hlen = 7 + (flg & BL__LZ4_FLG_CSIZE ? 8 : 0);
	if (avail < hlen)
		return 0;
	peek(it, h, hlen);
	if (h[hlen - 1] != (uint8_t)(bl__xxh32(h + 4, hlen - 5, 0) >> 8))
		return -EBADMSG;
	d->bmax = (size_t)1 << (8 + 2 * ((bd >> 4) & 7));
	d->indep = flg & BL__LZ4_FLG_INDEP;
	d->bchk = flg & BL__LZ4_FLG_BCHK;
	d->cchk = flg & BL__LZ4_FLG_CCHK;
	/* as LZ4F: a content size of 0 means "unknown" */
	d->csize = flg & BL__LZ4_FLG_CSIZE ? bl__le64_load(h + 6) : 0;
	d->has_csize = d->csize != 0;
	if (d->has_csize && d->max_out && d->csize > d->max_out - d->total)
		return -E2BIG;
	d->fout = 0;
	d->hist = 0;
	bl__xxh32_init(&d->xs, 0);
	bl_iter_advance(it, hlen);
	d->st = ST_BLOCK;
	*more = false;
	return 0;
}

/*
 * Whether the first @n (< 4) bytes @h can begin a frame, so that garbage
 * is refused as soon as it arrives rather than at the end of the stream.
 */
static bool magic_prefix_ok(const uint8_t *h, size_t n)
{
	static const uint8_t lz4[4] = { 0x04, 0x22, 0x4D, 0x18 };
	static const uint8_t skip[4] = { 0x50, 0x2A, 0x4D, 0x18 };
	bool is_lz4 = true, is_skip = true;

	for (size_t i = 0; i < n; i++) {
		is_lz4 = is_lz4 && h[i] == lz4[i];
		is_skip = is_skip && (i ? h[i] : h[i] & 0xF0) == skip[i];
	}
	return is_lz4 || is_skip;
}

/* Decodes the block of @n bytes at @it (its header consumed). */
static int dec_block(struct bl_lz4_decoder *d, struct bl_iter *it, size_t n,
		     bool stored, struct bl_list *res)
{
	size_t cap = d->bmax;
	ssize_t m;
	uint8_t *dst;
	int ret;

	if (d->has_csize && d->csize - d->fout < cap)
		cap = (size_t)(d->csize - d->fout);
	if (stored) {
		if (n > cap)
			return -EBADMSG;	/* beyond the content size */
		if (d->max_out && n > d->max_out - d->total)
			return -E2BIG;
		cap = n;
	}
	ret = dec_room(d, bl__lz4_max(cap, 1), res);
	if (ret)
		return ret;
	dst = (uint8_t *)bl__raw_data(d->raw) + d->wpos;
	if (stored) {
		peek(it, dst, n);
		if (n)
			bl__count_copy(n);
		bl_iter_advance(it, n);
		m = (ssize_t)n;
	} else {
		m = bl__lz4_block_decode(it, n, (char *)dst, cap,
					 d->indep ? 0 : d->hist);
		if (m < 0)
			return -EBADMSG;
	}
	if (d->max_out && (size_t)m > d->max_out - d->total)
		return -E2BIG;
	if (d->cchk)
		bl__xxh32_update(&d->xs, dst, (size_t)m);
	bl__raw_advance(d->raw, (size_t)m);
	d->wpos += (size_t)m;
	d->hist = d->indep ? 0 : bl__lz4_min(BL__LZ4_WINDOW, d->hist + (size_t)m);
	d->fout += (uint64_t)m;
	d->total += (size_t)m;
	return 0;
}

static int dec_frame_end(struct bl_lz4_decoder *d)
{
	if (d->has_csize && d->fout != d->csize)
		return -EBADMSG;
	d->st = ST_MAGIC;
	return 0;
}

/*
 * Decodes every complete unit (frame header, block, checksum) at @it and
 * stops at the first incomplete one, leaving @it at its start.  Output is
 * written into d->raw; slices of it reach @res through dec_hand_out().
 */
static int dec_run(struct bl_lz4_decoder *d, struct bl_iter *it,
		   struct bl_list *res)
{
	uint8_t h[8];
	size_t avail;
	bool more;
	int ret;

	for (;;) {
		avail = bl_iter_remaining(it);
		switch (d->st) {
		case ST_MAGIC: {
			uint32_t magic;

			if (avail < 4) {
				peek(it, h, avail);
				return magic_prefix_ok(h, avail) ? 0 : -EBADMSG;
			}
			peek(it, h, 4);
			magic = bl__le32_load(h);
			if (magic == BL__LZ4_FRAME_MAGIC) {
				ret = dec_header(d, it, &more);
				if (ret || more)
					return ret;
			} else if ((magic & SKIP_MASK) == SKIP_MAGIC) {
				if (avail < 8)
					return 0;
				peek(it, h, 8);
				d->skip = bl__le32_load(h + 4);
				bl_iter_advance(it, 8);
				d->st = ST_SKIP;
			} else {
				return -EBADMSG;
			}
			break;
		}
		case ST_SKIP: {
			size_t k = bl__lz4_min(avail, d->skip);

			bl_iter_advance(it, k);
			d->skip -= (uint32_t)k;
			if (d->skip)
				return 0;
			d->st = ST_MAGIC;
			break;
		}
		case ST_BLOCK: {
			uint32_t w;
			size_t n, chk = d->bchk ? 4 : 0;

			if (avail < 4)
				return 0;
			peek(it, h, 4);
			w = bl__le32_load(h);
			if (!w) {	/* EndMark */
				bl_iter_advance(it, 4);
				if (d->cchk) {
					d->st = ST_CCHK;
					break;
				}
				ret = dec_frame_end(d);
				if (ret)
					return ret;
				break;
			}
			n = w & ~BL__LZ4_UNCOMPRESSED;
			if (n > d->bmax)
				return -EBADMSG;
			if (avail - 4 < n + chk)
				return 0;
			bl_iter_advance(it, 4);
			if (chk) {
				struct bl_iter t = *it;
				struct bl__xxh32 xs;
				const char *p;
				size_t k, left = n;

				bl__xxh32_init(&xs, 0);
				while (left) {
					k = bl_iter_get_ptr_and_advance(
						&t, left, &p);
					bl__xxh32_update(&xs, p, k);
					left -= k;
				}
				peek(&t, h, 4);
				if (bl__le32_load(h) != bl__xxh32_digest(&xs))
					return -EBADMSG;
			}
			if (n) {
				ret = dec_block(d, it, n,
						w & BL__LZ4_UNCOMPRESSED, res);
				if (ret)
					return ret;
			}
			bl_iter_advance(it, chk);
			break;
		}
		case ST_CCHK:
			if (avail < 4)
				return 0;
			peek(it, h, 4);
			if (bl__le32_load(h) != bl__xxh32_digest(&d->xs))
				return -EBADMSG;
			bl_iter_advance(it, 4);
			ret = dec_frame_end(d);
			if (ret)
				return ret;
			break;
		default:
			return -EINVAL;
		}
	}
}

ssize_t bl_lz4_decompress(const struct bl_list *in, struct bl_list *out,
			  size_t max_out)
{
	struct bl_lz4_decoder d;
	struct bl_list res;
	struct bl_iter it;
	size_t len = 0;
	int ret;

	if (!in || !out)
		return -EINVAL;
	dec_init(&d, max_out);
	d.chunk = DEC_CHUNK;
	d.pool = bl__list_pool(out);
	bl_list_init(&res);
	bl_iter_init(&it, in, 0);
	ret = dec_run(&d, &it, &res);
	if (!ret && (d.st != ST_MAGIC || bl_iter_remaining(&it)))
		ret = -EBADMSG;		/* truncated */
	if (!ret && d.raw && d.wpos > d.handed) {
		size_t n = d.wpos - d.handed;
		struct bl_raw *r = NULL;

		/*
		 * Nothing of the last raw is handed out yet: if its output
		 * would leave more than half of it unused, give the caller
		 * a copy of the right size instead (a small message must
		 * not pin a block-sized buffer).  Failing to, is no error.
		 */
		if (d.handed == d.carry && bl__raw_len(d.raw) - n > n)
			r = bl__raw_create_combined(d.pool, n, n);
		if (r) {
			struct bl_ptr p = { r, 0, n };

			memcpy(bl__raw_data(r), bl__raw_data(d.raw) + d.handed,
			       n);
			bl__count_copy(n);
			ret = bl_list_append_ptr_move(&res, &p);
			if (ret)
				bl__raw_put(r);
		} else {
			ret = dec_hand_out(&d, &res);
		}
	}
	if (!ret) {
		len = bl_list_length(&res);
		ret = bl_list_claim_append(out, &res);
	}
	bl_list_clear(&res);
	dec_release(&d);
	return ret ? ret : (ssize_t)len;
}

/* ---- the streaming decoder ----------------------------------------------- */

struct bl_lz4_decoder *bl_lz4_decoder_new(size_t max_out)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_lz4_decoder *d;

	/*
	 * The decoder is freed through the allocator in force at free time;
	 * remember which one made it by keeping it in front of the struct.
	 */
	d = bl__alloc(al, sizeof(*d) + BL_CACHELINE, BL_CACHELINE);
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	*(const struct bl__allocator **)d = al;
	d = (struct bl_lz4_decoder *)((char *)d + BL_CACHELINE);
	dec_init(d, max_out);
	return d;
}

ssize_t bl_lz4_decoder_feed(struct bl_lz4_decoder *d,
			    const struct bl_list *in, struct bl_list *out)
{
	struct bl_list res;
	struct bl_iter it;
	size_t len = 0;
	int ret;

	if (!d || !in || !out || d->st == ST_DEAD)
		return -EINVAL;
	/*
	 * After a failure the decoder is dead (the contract), so its own
	 * state need not be restored; only @out must be untouched.
	 */
	bl_list_init(&res);
	d->pool = bl__list_pool(out);
	ret = bl_list_append_list(&d->pend, in);
	bl_iter_init(&it, &d->pend, 0);
	if (!ret)
		ret = dec_run(d, &it, &res);
	if (!ret)
		ret = dec_hand_out(d, &res);
	if (!ret)
		ret = bl_list_splice(&d->pend, 0, bl_iter_offset(&it), NULL);
	if (!ret) {
		len = bl_list_length(&res);
		ret = bl_list_claim_append(out, &res);
	}
	bl_list_clear(&res);
	if (ret) {
		d->st = ST_DEAD;
		dec_release(d);
		return ret;
	}
	return (ssize_t)len;
}

int bl_lz4_decoder_end(struct bl_lz4_decoder *d)
{
	if (!d || d->st == ST_DEAD)
		return -EINVAL;
	if (d->st != ST_MAGIC || !bl_list_is_empty(&d->pend))
		return -EBADMSG;
	return 0;
}

void bl_lz4_decoder_free(struct bl_lz4_decoder *d)
{
	const struct bl__allocator *al;
	char *base;

	if (!d)
		return;
	dec_release(d);
	base = (char *)d - BL_CACHELINE;
	al = *(const struct bl__allocator **)base;
	bl__free(al, base, sizeof(*d) + BL_CACHELINE, BL_CACHELINE);
}
