/* SPDX-License-Identifier: MIT */
/*
 * lz4_xxh32.c - XXH32 (lz4_int.h), the checksum of LZ4 frames' contents
 * and blocks, for the compressor and the decoder.
 */
#include <stdint.h>
#include <string.h>
#include "endian_int.h"
#include "lz4_int.h"

#define XXH_P1 0x9E3779B1u
#define XXH_P2 0x85EBCA77u
#define XXH_P3 0xC2B2AE3Du
#define XXH_P4 0x27D4EB2Fu
#define XXH_P5 0x165667B1u

static inline uint32_t rotl32(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

/* A little-endian lane; memcpy compiles to one load. */
static inline uint32_t xxh_lane(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static inline uint32_t xxh_round(uint32_t acc, uint32_t lane)
{
	acc += lane * XXH_P2;
	acc = rotl32(acc, 13) * XXH_P1;
	/*
	 * Keep the four lanes in scalar registers: gcc otherwise vectorizes
	 * them with SSE2, which has no 32-bit multiply and emulates it with
	 * shifts, at a third of the scalar speed (xxHash does the same).
	 */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
	__asm__("" : "+r"(acc));
#endif
	return acc;
}

/* Whole 16-byte stripes of [p, p + len); returns the bytes consumed. */
static size_t xxh_stripes(uint32_t v[4], const uint8_t *p, size_t len)
{
	uint32_t v1 = v[0], v2 = v[1], v3 = v[2], v4 = v[3];
	const uint8_t *const start = p, *const end = p + (len & ~(size_t)15);

	/* four independent lanes: the multiplies overlap */
	while (p < end) {
		v1 = xxh_round(v1, xxh_lane(p));
		v2 = xxh_round(v2, xxh_lane(p + 4));
		v3 = xxh_round(v3, xxh_lane(p + 8));
		v4 = xxh_round(v4, xxh_lane(p + 12));
		p += 16;
	}
	v[0] = v1;
	v[1] = v2;
	v[2] = v3;
	v[3] = v4;
	return (size_t)(p - start);
}

void bl__xxh32_init(struct bl__xxh32 *s, uint32_t seed)
{
	s->v[0] = seed + XXH_P1 + XXH_P2;
	s->v[1] = seed + XXH_P2;
	s->v[2] = seed;
	s->v[3] = seed - XXH_P1;
	s->total = 0;
	s->memsize = 0;
	s->seed = seed;
}

void bl__xxh32_update(struct bl__xxh32 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t n;

	s->total += len;
	if (s->memsize + len < 16) {
		if (len)
			memcpy(s->mem + s->memsize, p, len);
		s->memsize += (unsigned)len;
		return;
	}
	if (s->memsize) {
		n = 16 - s->memsize;
		memcpy(s->mem + s->memsize, p, n);
		xxh_stripes(s->v, s->mem, 16);
		p += n;
		len -= n;
		s->memsize = 0;
	}
	n = xxh_stripes(s->v, p, len);
	p += n;
	len -= n;
	if (len)
		memcpy(s->mem, p, len);
	s->memsize = (unsigned)len;
}

uint32_t bl__xxh32_digest(const struct bl__xxh32 *s)
{
	const uint8_t *p = s->mem, *const end = s->mem + s->memsize;
	uint32_t h;

	if (s->total >= 16)
		h = rotl32(s->v[0], 1) + rotl32(s->v[1], 7) +
		    rotl32(s->v[2], 12) + rotl32(s->v[3], 18);
	else
		h = s->seed + XXH_P5;
	h += (uint32_t)s->total;	/* the spec adds the length mod 2^32 */
	for (; p + 4 <= end; p += 4)
		h = rotl32(h + xxh_lane(p) * XXH_P3, 17) * XXH_P4;
	for (; p < end; p++)
		h = rotl32(h + *p * XXH_P5, 11) * XXH_P1;
	h ^= h >> 15;
	h *= XXH_P2;
	h ^= h >> 13;
	h *= XXH_P3;
	h ^= h >> 16;
	return h;
}

uint32_t bl__xxh32(const void *p, size_t len, uint32_t seed)
{
	struct bl__xxh32 s;

	bl__xxh32_init(&s, seed);
	bl__xxh32_update(&s, p, len);
	return bl__xxh32_digest(&s);
}

