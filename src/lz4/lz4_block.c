/* SPDX-License-Identifier: MIT */
/*
 * lz4_block.c - the block decoder (bl__lz4_block_decode(), lz4_int.h):
 * one LZ4 block, read where it lies in a list, across seams, so that no
 * input byte is ever staged; a block inside one segment is one piece to
 * it, which its fast loop runs through as fast as liblz4's
 * LZ4_decompress_safe.  The frame decoder (lz4_decoder.c) decodes every
 * block with it: see there why not with liblz4.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include "iter_int.h"
#include "lz4_int.h"

/*
 * A cursor over one block's bytes: [ip, iend) is the current contiguous
 * piece, `rest` the block's bytes after it, still in `it`.
 */
struct rd {
	struct bl_iter it;
	const uint8_t *ip, *iend;
	size_t rest;
};

static bool rd_refill(struct rd *r)
{
	const char *p;
	size_t n;

	if (!r->rest)
		return false;
	n = bl_iter_get_ptr_and_advance(&r->it, r->rest, &p);
	if (!n)
		return false;
	r->rest -= n;
	r->ip = (const uint8_t *)p;
	r->iend = r->ip + n;
	return true;
}

static inline bool rd_byte(struct rd *r, unsigned *b)
{
	if (bl__unlikely(r->ip == r->iend) && !rd_refill(r))
		return false;
	*b = *r->ip++;
	return true;
}

static inline size_t rd_left(const struct rd *r)
{
	return (size_t)(r->iend - r->ip) + r->rest;
}

/* Copies @n block bytes (n <= rd_left) to @op. */
static void rd_copy(struct rd *r, uint8_t *op, size_t n)
{
	while (n) {
		size_t k;

		if (r->ip == r->iend)
			rd_refill(r);
		k = bl__lz4_min(n, (size_t)(r->iend - r->ip));
		memcpy(op, r->ip, k);
		op += k;
		r->ip += k;
		n -= k;
	}
}

static inline void wild32(uint8_t *d, const uint8_t *s, const uint8_t *e)
{
	do {
		memcpy(d, s, 16);
		memcpy(d + 16, s + 16, 16);
		d += 32;
		s += 32;
	} while (d < e);
}

/*
 * Match copy that may write up to 32 bytes past op + ml.  Offsets below 8
 * overlap the bytes being written: the first 8 are spread so that the
 * source runs at least 8 behind afterwards (the classic LZ4 tables).
 */
static inline void match_wild(uint8_t *op, const uint8_t *match, size_t ml,
			      size_t off)
{
	static const unsigned inc32[8] = { 0, 1, 2, 1, 0, 4, 4, 4 };
	static const int dec64[8] = { 0, 0, 0, -1, -4, 1, 2, 3 };
	uint8_t *const e = op + ml;

	if (off >= 16) {
		wild32(op, match, e);
		return;
	}
	if (off < 8) {
		op[0] = match[0];
		op[1] = match[1];
		op[2] = match[2];
		op[3] = match[3];
		match += inc32[off];
		memcpy(op + 4, match, 4);
		match -= dec64[off];
		op += 8;
	}
	while (op < e) {
		memcpy(op, match, 8);
		op += 8;
		match += 8;
	}
}

/*
 * The fast loop runs while the current piece has more than FAST_IN bytes
 * left and the output FAST_OUT bytes of room: then a sequence's token,
 * short literals (one 16-byte read) and offset are inside the piece, a
 * long literal run and a long match's length bytes are checked against
 * the piece's end, and every wild copy stays inside the output.  Anything
 * else (a seam, the block's end, the end of the output) goes through the
 * careful path one sequence at a time.  The margin before a seam is as
 * small as those reads allow: every sequence within it takes the careful
 * path, so a wider margin measurably slows a decode of 4 KiB segments.
 * Near the block's end (fewer than FAST_IN_LAST bytes after the piece)
 * the margin stays FAST_IN_LAST, so the block's last sequences go through
 * the careful path as before, where the rules on where a block may end
 * are checked.  Those are liblz4's
 * (LZ4_decompress_safe): we accept no block it refuses, and refuse an
 * offset of 0, which it takes (the format calls it invalid).
 */
#define FAST_IN 17
#define FAST_IN_LAST 32
#define FAST_OUT 64
/* liblz4's read limits: length bytes may not run into the block's tail */
#define LIT_EXT_TAIL 15
#define ML_EXT_TAIL 4

/*
 * The fast loop over the current piece (above), from r->ip and *@opp:
 * stops where a sequence needs the careful path, with r->ip at that
 * sequence's token and *@opp where its output goes.
 * Return: 0, or -EBADMSG (an offset outside the output).
 */
static inline __attribute__((always_inline)) int
fast_seqs(struct rd *r, uint8_t **opp, uint8_t *const olim,
	  uint8_t *const oend, const uint8_t *lowp, size_t fin)
{
	const uint8_t *ip = r->ip;
	const uint8_t *const ilim = r->iend - fin;
	uint8_t *op = *opp;

	while (bl__likely(ip < ilim && op < olim)) {
		const uint8_t *const seq = ip;
		const uint8_t *match;
		size_t lit, ml, off;
		unsigned token, b;

		token = *ip++;
		lit = token >> 4;
		if (lit == 15) {
			do {
				if (bl__unlikely(ip >= ilim)) {
					ip = seq;
					goto careful;
				}
				b = *ip++;
				lit += b;
			} while (b == 255);
			/* wild32 reads up to 31 bytes past */
			if (bl__unlikely(lit + 32 > (size_t)(r->iend - ip) ||
					 lit > (size_t)(olim - op))) {
				ip = seq;
				goto careful;
			}
			wild32(op, ip, op + lit);
		} else {
			memcpy(op, ip, 16);
		}
		ip += lit;
		op += lit;
		off = (size_t)ip[0] | (size_t)ip[1] << 8;
		ip += 2;
		/* one compare: off - 1 wraps for 0 */
		if (bl__unlikely(off - 1 >= (size_t)(op - lowp)))
			return -EBADMSG;
		match = op - off;
		ml = token & 15;
		if (ml == 15) {
			/*
			 * A long match stays here while its length bytes are
			 * in the piece and its copy inside the output's
			 * margin: they are common in text, and the careful
			 * path takes one sequence at a time.
			 */
			do {
				if (bl__unlikely(ip >= ilim))
					goto long_careful;
				b = *ip++;
				ml += b;
			} while (b == 255);
			ml += 4;
			if (bl__unlikely(ml + FAST_OUT > (size_t)(oend - op)))
				goto long_careful;
			match_wild(op, match, ml, off);
			op += ml;
			continue;
long_careful:
			/* again, from the sequence's start */
			op -= lit;
			ip = seq;
			goto careful;
		}
		if (off >= 8) {
			/* short match: one 18-byte copy */
			memcpy(op, match, 8);
			memcpy(op + 8, match + 8, 8);
			memcpy(op + 16, match + 16, 2);
			op += ml + 4;
			continue;
		}
		ml += 4;
		match_wild(op, match, ml, off);
		op += ml;
	}
careful:
	r->ip = ip;
	*opp = op;
	return 0;
}

/*
 * One sequence at *@opp, every read and write checked against the
 * block's and the output's ends and the rules on where a block may end.
 * Return: 1 (more follow), 0 (it was the last: *@opp is the output's
 * end), or -EBADMSG.
 */
static inline __attribute__((always_inline)) int
careful_seq(struct rd *r, uint8_t **opp, uint8_t *const olim,
	    uint8_t *const oend, const uint8_t *lowp)
{
	uint8_t *op = *opp;
	const uint8_t *match;
	size_t lit, ml, off, left;
	unsigned token, b;

	if (!rd_byte(r, &token))
		return -EBADMSG;	/* ended after a match */
	lit = token >> 4;
	if (lit == 15) {
		if (rd_left(r) <= LIT_EXT_TAIL)
			return -EBADMSG;
		do {
			if (!rd_byte(r, &b) || rd_left(r) < LIT_EXT_TAIL)
				return -EBADMSG;
			lit += b;
		} while (b == 255);
	}
	left = rd_left(r);
	if (lit > left || lit > (size_t)(oend - op))
		return -EBADMSG;
	if (lit == left) {	/* the last sequence: literals only */
		rd_copy(r, op, lit);
		*opp = op + lit;
		return 0;
	}
	if (left - lit < 8 || (size_t)(oend - op) - lit < 12)
		return -EBADMSG;
	rd_copy(r, op, lit);
	op += lit;
	if (!rd_byte(r, &b))
		return -EBADMSG;
	off = b;
	if (!rd_byte(r, &b))
		return -EBADMSG;
	off |= (size_t)b << 8;
	ml = token & 15;
	if (ml == 15) {
		do {
			if (!rd_byte(r, &b) || rd_left(r) < ML_EXT_TAIL)
				return -EBADMSG;
			ml += b;
		} while (b == 255);
	}
	ml += 4;
	if (off - 1 >= (size_t)(op - lowp))
		return -EBADMSG;
	match = op - off;
	/* a match may not reach into the last 5 bytes of the output */
	if (ml > (size_t)(oend - op) || (size_t)(oend - op) - ml < 5)
		return -EBADMSG;
	if (op + ml <= olim)
		match_wild(op, match, ml, off);
	else if (off >= ml)
		memcpy(op, match, ml);
	else
		for (size_t k = 0; k < ml; k++)
			op[k] = match[k];
	*opp = op + ml;
	return 1;
}

/*
 * The block: the fast loop while the piece and the output allow it, one
 * careful sequence where they do not, and again.
 */
static ssize_t block_decode(struct rd *r, uint8_t *dst, size_t cap,
			    const uint8_t *lowp)
{
	uint8_t *op = dst, *const oend = dst + cap;
	uint8_t *const olim = cap >= FAST_OUT ? oend - FAST_OUT : dst;
	int ret;

	for (;;) {
		const size_t fin = r->rest >= FAST_IN_LAST ? FAST_IN
							   : FAST_IN_LAST;

		if ((size_t)(r->iend - r->ip) > fin &&
		    fast_seqs(r, &op, olim, oend, lowp, fin) < 0)
			return -EBADMSG;
		ret = careful_seq(r, &op, olim, oend, lowp);
		if (ret <= 0)
			return ret < 0 ? ret : (ssize_t)(op - dst);
	}
}

ssize_t bl__lz4_block_decode(struct bl_iter *it, size_t n, char *dst,
			     size_t cap, size_t hist)
{
	struct rd r;
	ssize_t ret;

	if (!n || n > bl_iter_remaining(it))
		return -EBADMSG;
	r.it = *it;
	r.rest = n;
	r.ip = r.iend = NULL;
	rd_refill(&r);
	ret = block_decode(&r, (uint8_t *)dst, cap, (uint8_t *)dst - hist);
	if (ret >= 0)
		*it = r.it;
	return ret;
}

