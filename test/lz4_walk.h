/* SPDX-License-Identifier: MIT */
/*
 * lz4_walk.h - for the tests and the lz4 fuzzing harness: whether LZ4
 * frames hold a match of offset 0.  The format calls that offset invalid
 * and the library refuses it, but liblz4's LZ4_decompress_safe takes it
 * (it copies output bytes onto themselves): the one place where liblz4
 * accepts what the library refuses, which a comparison of the two must
 * tell from a real disagreement.
 */
#ifndef BL_TEST_LZ4_WALK_H
#define BL_TEST_LZ4_WALK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uint32_t lz4w_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/*
 * The offset of the first match of offset 0 in the LZ4 block @b of @n
 * bytes, its sequences parsed as a decoder parses them; -1 when none is
 * found before the block ends or stops parsing.
 */
static inline long lz4w_block_offset0(const uint8_t *b, size_t n)
{
	size_t i = 0, lit;
	unsigned token, c;

	while (i < n) {
		token = b[i++];
		lit = token >> 4;
		if (lit == 15) {
			do {
				if (i >= n)
					return -1;
				c = b[i++];
				lit += c;
			} while (c == 255);
		}
		if (lit > n - i)
			return -1;
		i += lit;
		if (i == n || n - i < 2)
			return -1;	/* the last sequence has no match */
		if (!b[i] && !b[i + 1])
			return (long)i;
		i += 2;
		if ((token & 15) == 15) {
			do {
				if (i >= n)
					return -1;
				c = b[i++];
			} while (c == 255);
		}
	}
	return -1;
}

/*
 * Whether a compressed block of the frames (and skippable frames) at @p
 * has a match of offset 0, walking them up to the first thing that does
 * not parse.  Checksums are not checked.
 */
static inline bool lz4w_has_offset0(const uint8_t *p, size_t n)
{
	size_t pos = 0;

	while (n - pos >= 8) {
		uint32_t magic = lz4w_le32(p + pos);
		unsigned flg;

		if ((magic & 0xFFFFFFF0u) == 0x184D2A50u) {
			uint32_t skip = lz4w_le32(p + pos + 4);

			if (skip > n - pos - 8)
				return false;
			pos += 8 + (size_t)skip;
			continue;
		}
		if (magic != 0x184D2204u)
			return false;
		flg = p[pos + 4];
		pos += 7 + (flg & 0x08 ? 8 : 0) + (flg & 0x01 ? 4 : 0);
		for (;;) {
			uint32_t w, bn;

			if (pos > n || n - pos < 4)
				return false;
			w = lz4w_le32(p + pos);
			pos += 4;
			if (!w)
				break;	/* EndMark */
			bn = w & 0x7FFFFFFFu;
			if (bn > n - pos)
				return false;
			if (!(w & 0x80000000u) &&
			    lz4w_block_offset0(p + pos, bn) >= 0)
				return true;
			pos += bn + (flg & 0x10 ? 4 : 0);
		}
		pos += flg & 0x04 ? 4 : 0;
		if (pos > n)
			return false;
	}
	return false;
}

#endif /* BL_TEST_LZ4_WALK_H */
