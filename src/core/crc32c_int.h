/* SPDX-License-Identifier: MIT */
/*
 * crc32c_int.h - what the crc32c implementations share with the dispatcher
 * (crc32c.c), with test/test_crc32c.c and with the messenger, whose frame
 * parser inlines the short-message routine (msgr_frame.c).  Never
 * installed.
 *
 * Values are in the reflected (LSB-first) representation of the Castagnoli
 * polynomial P = 0x1EDC6F41: bit i of a 32-bit value is the coefficient of
 * x^(31 - i), so x^0 is 0x80000000 and x is 0x40000000.  The crc state after
 * a message M with seed 0 is M(x) * x^32 mod P.
 */
#ifndef BUFFERLIST_CRC32C_INT_H
#define BUFFERLIST_CRC32C_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bufferlist/crc32c.h>

/* P without its x^32 term, reflected */
#define BL__CRC32C_POLY 0x82F63B78u

/* Same contract as bl_crc32c(); any length, any alignment. */
typedef uint32_t (*bl__crc32c_fn)(uint32_t crc, const void *data,
				  size_t len);
/* Same contract as bl_crc32c_zeros(). */
typedef uint32_t (*bl__crc32c_zeros_fn)(uint32_t crc, size_t len);

struct bl__crc32c_impl {
	const char *name;
	bl__crc32c_fn crc;
	bl__crc32c_zeros_fn zeros;
	bool (*supported)(void);
};

/*
 * Every implementation compiled into this build, best first; the table
 * ("table") is always last and always supported.  Terminated by a NULL name.
 */
extern const struct bl__crc32c_impl bl__crc32c_impls[];

/*
 * bl__crc32c_set_impl() - make bl_crc32c() and bl_crc32c_zeros() use the
 * implementation called @name, or, with @name NULL, choose again as the
 * first call does (BL_CRC32C_IMPL if it names a supported one, else the
 * best supported).  For tests and benchmarks: not meant to race with
 * callers, although a racing caller sees either the old or the new one.
 * Return: 0, -EINVAL if @name is unknown, -ENOTSUP if this CPU lacks it.
 */
int bl__crc32c_set_impl(const char *name);

/* ---- portable (crc32c_sw.c) --------------------------------------------- */

/*
 * Byte table for slicing-by-8: bl__crc32c_table[k][b] is the crc (seed 0)
 * of byte b followed by k zero bytes.
 */
extern const uint32_t bl__crc32c_table[8][256];

/*
 * bl__crc32c_x2n33[k] = x^(8 * 2^k - 33) mod P: the operator that appends
 * 2^k zero bytes, x^(8 * 2^k), divided by the x^33 that a carry-less
 * multiply (x^1) followed by a crc reduction (x^32) adds back.
 */
extern const uint32_t bl__crc32c_x2n33[64];

uint32_t bl__crc32c_sw(uint32_t crc, const void *data, size_t len);
uint32_t bl__crc32c_zeros_sw(uint32_t crc, size_t len);

/* ---- x86-64 (crc32c_x86.c) ---------------------------------------------- */

#if defined(__x86_64__)
#include <string.h>
#include <nmmintrin.h>

/*
 * bl__crc32c_words33[w - 1] = x^(64 * w - 33) mod P, w = 1..128: with a
 * carry-less multiply and crc32q it moves a crc over w 8-byte words, to
 * join the short 3-way crc32q streams.
 */
#define BL__CRC32C_3WAY_WORDS 64	/* words per stream per round */
extern const uint32_t bl__crc32c_words33[2 * BL__CRC32C_3WAY_WORDS];

/*
 * Folding constants: bl__crc32c_fold[k - 1] = { x^(F + 31), x^(F - 33) }
 * mod P for a fold distance of F = 128 * k bits, k = 1..16.
 */
extern const uint32_t bl__crc32c_fold[16][2];

/*
 * The 3-way crc32q loop runs three streams of BL__CRC32C_LONG (then
 * _SHORT) bytes and joins them by multiplying a stream's crc by
 * x^(8 * B - 33) mod P (software carry-less multiply, then crc32q).
 * Macros, because the nibble tables built from them must be constant.
 */
#define BL__CRC32C_LONG 8192
#define BL__CRC32C_SHORT 256
#define BL__CRC32C_SHIFT_LONG 0x54a86326u	/* x^65503 mod P */
#define BL__CRC32C_SHIFT_SHORT 0xb9e02b86u	/* x^2015 mod P */

/*
 * The fused loops run a folding engine and three crc32q streams side by
 * side, since the two use different execution units.  A super block is
 * STEPS steps of folding (128 bytes a step on xmm, 256 on zmm) followed by
 * three streams of C = STEPS * QWORDS * 8 bytes, each stream advancing
 * QWORDS words per step.  Between super blocks the accumulators jump over
 * the streams; at the end the streams' crcs are shifted into place.
 */
struct bl__crc32c_fused {
	/* { x^(F + 31), x^(F - 33) }, F = 8 * (step + 3 * C) bits */
	uint32_t jump[2];
	/* x^(8 * k * C - 33) mod P for k = 1, 2, 3 */
	uint32_t shift[3];
};
#define BL__CRC32C_XMM_STEPS 32
#define BL__CRC32C_XMM_QWORDS 8
#define BL__CRC32C_ZMM_STEPS 64
#define BL__CRC32C_ZMM_QWORDS 5
extern const struct bl__crc32c_fused bl__crc32c_fused_xmm;
extern const struct bl__crc32c_fused bl__crc32c_fused_zmm;

bool bl__crc32c_has_sse42(void);
bool bl__crc32c_has_pclmul(void);
bool bl__crc32c_has_vpclmul(void);
uint32_t bl__crc32c_sse42(uint32_t crc, const void *data, size_t len);
uint32_t bl__crc32c_pclmul(uint32_t crc, const void *data, size_t len);
uint32_t bl__crc32c_vpclmul(uint32_t crc, const void *data, size_t len);
uint32_t bl__crc32c_zeros_pclmul(uint32_t crc, size_t len);

/*
 * bl__crc32c_short() - bl_crc32c() for the short runs of a messenger's
 * frames (preambles, small payloads), inline in its caller; the caller
 * checks bl__crc32c_has_sse42() (or __builtin_cpu_supports("sse4.2")).
 *
 * For a few dozen bytes the dispatching, folding bl_crc32c() costs more
 * than the crc itself.  A plain chain of crc32 instructions is cheaper,
 * but its usual byte/word tail costs a branch misprediction or two per
 * frame when payload lengths vary.  So the odd head of 1..8 bytes goes
 * through ONE crc32q, branch-free: with no pre- or post-inversion the crc
 * is linear and leading zero bytes leave a zero state unchanged, hence
 *   crc(c, D[0..h)) = (c >> 8h) ^ crc32q(0, (D[0..8) ^ c) << (64 - 8h))
 * (the low h bytes of c act on the message's first bytes, the rest of c
 * is shifted out unchanged).  Then whole words follow.  It reads 8 bytes
 * at the start, so it wants len >= 8; shorter and longer (above
 * BL__CRC32C_SHORT_MAX) inputs go to bl_crc32c().
 */
#define BL__CRC32C_SHORT_MAX 256

__attribute__((target("sse4.2"))) static inline uint32_t
bl__crc32c_short(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	unsigned h;
	uint64_t v;

	if (len < 8 || len > BL__CRC32C_SHORT_MAX)
		return bl_crc32c(crc, data, len);
	h = (unsigned)((len - 1) & 7) + 1;
	memcpy(&v, p, 8);
	v = (v ^ crc) << (64 - 8 * h);
	crc = (uint32_t)((uint64_t)crc >> (8 * h - 1) >> 1) ^
	      (uint32_t)_mm_crc32_u64(0, v);
	for (p += h, len -= h; len; len -= 8, p += 8) {
		memcpy(&v, p, 8);
		crc = (uint32_t)_mm_crc32_u64(crc, v);
	}
	return crc;
}
#endif

/* ---- ARMv8 (crc32c.c) --------------------------------------------------- */

#if defined(__aarch64__)
bool bl__crc32c_has_armv8(void);
uint32_t bl__crc32c_armv8(uint32_t crc, const void *data, size_t len);
#endif

#endif /* BUFFERLIST_CRC32C_INT_H */
