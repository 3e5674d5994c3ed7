/* SPDX-License-Identifier: MIT */
/*
 * msgr_frames.h - what the messenger's fuzzing harnesses share: a
 * reference crc32c and a builder of well-formed frame streams from the
 * fuzzer's bytes, both independent of the library under test.
 */
#ifndef BL_FUZZ_MSGR_FRAMES_H
#define BL_FUZZ_MSGR_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <bufferlist/msgr.h>

/* Ceph's crc32c (no inversion), bit by bit: independent of the library. */
static uint32_t ref_crc(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0x82F63B78u & (0u - (crc & 1)));
	}
	return crc;
}

static void put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Build mode: frames from descriptors, with correct crcs, at most @cap
 * bytes of them. */
static size_t build(const uint8_t *d, size_t n, uint8_t *out, size_t cap)
{
	size_t pos = 0, o = 0;

	while (n - pos >= 7) {
		const uint8_t *h = d + pos;
		/* long payloads too, from short inputs: a pattern pads them */
		size_t len = h[5] < 200 ? h[5] : (size_t)(h[5] - 199) * 97;
		size_t start = o, have;
		uint8_t corrupt = h[6];

		pos += 7;
		have = len < n - pos ? len : n - pos;
		if (h[5] < 200)
			len = have;
		if (o + BL_MSGR_OVERHEAD + len > cap)
			break;
		put(out + o, BL_MSGR_MAGIC, 4);
		memcpy(out + o + 4, h, 4);		/* type, flags */
		put(out + o + 8, (uint64_t)h[4] * 0x0101010101ull, 8);
		put(out + o + 16, len, 4);
		put(out + o + 20, ref_crc(BL_MSGR_CRC_SEED, out + o, 20), 4);
		memcpy(out + o + 24, d + pos, have);
		for (size_t k = have; k < len; k++)
			out[o + 24 + k] = (uint8_t)(k * 13 + 5);
		put(out + o + 24 + len,
		    ref_crc(BL_MSGR_CRC_SEED, out + o + 24, len), 4);
		o += BL_MSGR_OVERHEAD + len;
		pos += have;
		if (corrupt < 24) {
			size_t at = start + (size_t)corrupt * 7 %
					    (BL_MSGR_OVERHEAD + len);

			out[at] ^= (uint8_t)(1u << (corrupt & 7));
		}
	}
	return o;
}

/* The stream a harness feeds: frames built from the @n bytes of @d when
 * @built, else those bytes as they are; at most @cap of them into @out. */
static size_t stream_of(const uint8_t *d, size_t n, bool built,
			uint8_t *out, size_t cap)
{
	if (built)
		return build(d, n, out, cap);
	if (n > cap)
		n = cap;
	memcpy(out, d, n);
	return n;
}

#endif /* BL_FUZZ_MSGR_FRAMES_H */
