/* SPDX-License-Identifier: MIT */
/*
 * crc32c_x86.c - CRC-32C on x86-64.
 *
 *   sse42    three interleaved crc32q streams (crc32q has a latency of three
 *            cycles and a throughput of one), joined by a software
 *            carry-less multiply; for CPUs without PCLMULQDQ.
 *   pclmul   one crc32q chain below 80 bytes; three streams joined by
 *            PCLMULQDQ up to 10 KiB; beyond, eight 128-bit folding
 *            accumulators with three crc32q streams beside them ("fused":
 *            the multiplier and the crc32 unit work at the same time).
 *   vpclmul  as pclmul below 512 bytes; then four 512-bit folding
 *            accumulators (256 bytes a step), fused with three crc32q
 *            streams beyond 23.5 KiB.
 *
 * Every function carries its own target attribute, so this file builds with
 * the flags of the rest of the library and the dispatcher (crc32c.c) calls
 * a function only after cpuid said the CPU has what it needs.
 *
 * Folding, in the reflected representation of crc32c_int.h.  Read 16
 * message bytes as a 128-bit little-endian register X: bit j is the
 * coefficient of x^(127 - j), so the low quadword H holds the first (higher
 * degree) half and X = H * x^64 + L.  Moving X forward by F bits, onto data
 * F bits later, means replacing it by X * x^F = H * x^(F + 64) + L * x^F,
 * which only has to be right modulo P.  PCLMULQDQ multiplies bit patterns
 * as if bit i were x^i; on reflected operands that yields the product times
 * x (the 127-bit result sits one place off in a 128-bit register).  A 32-bit
 * constant c in the low half of a quadword reads as c * x^32.  Hence
 *	H * (x^(F + 31) mod P) and L * (x^(F - 33) mod P)
 * each land 33 powers of x higher, exactly where they belong, and their sum
 * is a 128-bit value congruent to X * x^F that can be xored onto the data
 * F bits later.  At the end, two crc32q of the final 128 bits compute
 * X * x^32 mod P, the crc, so no Barrett constants are needed, and a seed
 * is simply xored into the first four bytes.
 *
 * Joining, by the same reasoning: a crc c followed by n zero bits is
 * c * x^n mod P.  The carry-less product of c and a 32-bit K reads, as a
 * reflected 64-bit word, as c * K * x, and crc32q(0, word) multiplies by
 * x^32, so K = x^(n - 33) mod P yields c * x^n.  A stream's crc (seed 0)
 * moved over the streams after it and xored with theirs is the crc of all.
 *
 * The constants were printed by a throw-away generator computing x^n mod P
 * by square-and-multiply on 32-bit reflected values (with x^-1 =
 * (POLY << 1) | 1 for negative exponents); test/test_crc32c.c recomputes
 * each of them the same way and compares.  They agree with the ones Intel's
 * ISA-L uses for crc32_iscsi (its fold by 2048 bits is 0xdcb17aa4 /
 * 0xb9e02b86).
 */
#if defined(__x86_64__)

#include <cpuid.h>
#include <immintrin.h>
#include <stdatomic.h>
#include <string.h>

#include "crc32c_int.h"

#define TARGET_SSE42 __attribute__((target("sse4.2")))
#define TARGET_PCLMUL __attribute__((target("sse4.2,pclmul")))
#define TARGET_VPCLMUL							\
	__attribute__((target("sse4.2,pclmul,avx2,avx512f,avx512vl,"	\
			      "avx512bw,vpclmulqdq")))

const uint32_t bl__crc32c_fold[16][2] = {
	{ 0xf20c0dfe, 0x493c7d27 },	/* F = 128 */
	{ 0x3da6d0cb, 0xba4fc28e },	/* F = 256 */
	{ 0x1c291d04, 0xddc0152b },	/* F = 384 */
	{ 0x740eef02, 0x9e4addf8 },	/* F = 512 */
	{ 0x083a6eec, 0x39d3b296 },	/* F = 640 */
	{ 0xc49f4f67, 0x0715ce53 },	/* F = 768 */
	{ 0x2ad91c30, 0x47db8317 },	/* F = 896 */
	{ 0x6992cea2, 0x0d3b6092 },	/* F = 1024 */
	{ 0x7e908048, 0xc96cfdc0 },	/* F = 1152 */
	{ 0x1b3d8f29, 0x878a92a7 },	/* F = 1280 */
	{ 0xf1d0f55e, 0xdaece73e },	/* F = 1408 */
	{ 0xa87ab8a8, 0xab7aff2a },	/* F = 1536 */
	{ 0x8462d800, 0x2162d385 },	/* F = 1664 */
	{ 0x71d111a8, 0x83348832 },	/* F = 1792 */
	{ 0xffd852c6, 0x299847d5 },	/* F = 1920 */
	{ 0xdcb17aa4, 0xb9e02b86 },	/* F = 2048 */
};

const uint32_t bl__crc32c_words33[2 * BL__CRC32C_3WAY_WORDS] = {
	0x00000001, 0x493c7d27, 0xf20c0dfe, 0xba4fc28e,
	0x3da6d0cb, 0xddc0152b, 0x1c291d04, 0x9e4addf8,
	0x740eef02, 0x39d3b296, 0x083a6eec, 0x0715ce53,
	0xc49f4f67, 0x47db8317, 0x2ad91c30, 0x0d3b6092,
	0x6992cea2, 0xc96cfdc0, 0x7e908048, 0x878a92a7,
	0x1b3d8f29, 0xdaece73e, 0xf1d0f55e, 0xab7aff2a,
	0xa87ab8a8, 0x2162d385, 0x8462d800, 0x83348832,
	0x71d111a8, 0x299847d5, 0xffd852c6, 0xb9e02b86,
	0xdcb17aa4, 0x18b33a4e, 0xf37c5aee, 0xb6dd949b,
	0x6051d5a2, 0x78d9ccb7, 0x18b0d4ff, 0xbac2fd7b,
	0x21f3d99c, 0xa60ce07b, 0x8f158014, 0xce7f39f4,
	0xa00457f7, 0x61d82e56, 0x8d6d2c43, 0xd270f1a2,
	0x00ac29cf, 0xc619809d, 0xe9adf796, 0x2b3cac5d,
	0x96638b34, 0x65863b64, 0xe0e9f351, 0x1b03397f,
	0x9af01f2d, 0xebb883bd, 0x2cff42cf, 0xb3e32c28,
	0x88f25a3a, 0x064f7f26, 0x4e36f0b0, 0xdd7e3b0c,
	0xbd6f81f8, 0xf285651c, 0x91c9bd4b, 0x10746f3c,
	0x885f087b, 0xc7a68855, 0x4c144932, 0x271d9844,
	0x52148f02, 0x8e766a0c, 0xa3c6f37a, 0x93a5f730,
	0xd7c0557f, 0x6cb08e5c, 0x63ded06a, 0x6b749fb2,
	0x4d56973c, 0x1393e203, 0x9669c9df, 0xcec3662e,
	0xe417f38a, 0x96c515bb, 0x4b9e0f71, 0xe6fc4e6a,
	0xd104b8fc, 0x8227bb8a, 0x5b397730, 0xb0cd4768,
	0xe78eb416, 0x39c7ff35, 0x61ff0e01, 0xd7a4825c,
	0x8d96551c, 0x0ab3844b, 0x0bf80dd2, 0x0167d312,
	0x8821abed, 0xf6076544, 0x6a45d2b2, 0x26f6a60a,
	0xd8d26619, 0xa741c1bf, 0xde87806c, 0x98d8d9cb,
	0x14338754, 0x49c3cc9c, 0x5bd2011f, 0x68bce87a,
	0xdd07448e, 0x57a3d037, 0xdde8f5b9, 0x6956fc3b,
	0xa3e3e02c, 0x42d98888, 0xd73c7bea, 0x3771e98f,
	0x80ff0093, 0xb42ae3d9, 0x8fe4c34d, 0x2178513a,
	0xdf99fc11, 0xe0ac139e, 0x6c23e841, 0x170076fa,
};

/* see struct bl__crc32c_fused; C = 2048 bytes on xmm, 2560 on zmm */
const struct bl__crc32c_fused bl__crc32c_fused_xmm = {
	.jump = { 0x8776d18e, 0xafc06654 },	/* F = 50176 */
	.shift = { 0xa51b6135, 0x82f89c77, 0xb9d68d49 },
};
const struct bl__crc32c_fused bl__crc32c_fused_zmm = {
	.jump = { 0x4556b07a, 0xf11494b6 },	/* F = 63488 */
	.shift = { 0x22c3799f, 0xca110698, 0xf7ac8f1f },
};

/* ---- what the CPU offers ------------------------------------------------- */

enum {
	X86_SSE42 = 1 << 0,
	X86_PCLMUL = 1 << 1,
	X86_VPCLMUL = 1 << 2,
	X86_PROBED = 1 << 8,
};

static uint64_t x86_xgetbv0(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
	return (uint64_t)hi << 32 | lo;
}

/*
 * cpuid says what the CPU can do; XCR0 says whether the kernel saves the
 * zmm and opmask registers, without which AVX-512 code must not run even on
 * a CPU that has it.
 */
static uint32_t x86_cpu_probe(void)
{
	unsigned a, b, c, d;
	uint32_t f = X86_PROBED;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_2))
		return f;
	f |= X86_SSE42;
	if (!(c & bit_PCLMUL))
		return f;
	f |= X86_PCLMUL;
	if (!(c & bit_OSXSAVE) || !(c & bit_AVX))
		return f;
	/* SSE, AVX, opmask, ZMM_Hi256 and Hi16_ZMM state */
	if ((x86_xgetbv0() & 0xe6) != 0xe6 || __get_cpuid_max(0, NULL) < 7)
		return f;
	__cpuid_count(7, 0, a, b, c, d);
	if ((b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL) &&
	    (c & bit_VPCLMULQDQ))
		f |= X86_VPCLMUL;
	return f;
}

/*
 * Probed once: under a hypervisor every cpuid is a trap costing
 * microseconds.  Racing first callers compute the same value.
 */
static uint32_t x86_cpu(void)
{
	static _Atomic uint32_t cache;
	uint32_t f = atomic_load_explicit(&cache, memory_order_relaxed);

	if (!f) {
		f = x86_cpu_probe();
		atomic_store_explicit(&cache, f, memory_order_relaxed);
	}
	return f;
}

bool bl__crc32c_has_sse42(void)
{
	return x86_cpu() & X86_SSE42;
}

bool bl__crc32c_has_pclmul(void)
{
	return x86_cpu() & X86_PCLMUL;
}

bool bl__crc32c_has_vpclmul(void)
{
	return x86_cpu() & X86_VPCLMUL;
}

/* ---- SSE4.2 -------------------------------------------------------------- */

TARGET_SSE42 static inline uint32_t crc_small(uint32_t crc,
					      const unsigned char *p,
					      size_t len)
{
	uint64_t v;
	uint32_t w;
	uint16_t h;

	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&v, p, 8);
		crc = (uint32_t)_mm_crc32_u64(crc, v);
	}
	if (len & 4) {
		memcpy(&w, p, 4);
		crc = _mm_crc32_u32(crc, w);
		p += 4;
	}
	if (len & 2) {
		memcpy(&h, p, 2);
		crc = _mm_crc32_u16(crc, h);
		p += 2;
	}
	if (len & 1)
		crc = _mm_crc32_u8(crc, *p);
	return crc;
}

/*
 * Multiplying a crc by a constant K mod P is linear in the crc, so the
 * 63-bit carry-less product can be assembled from eight nibble lookups of
 * a 16-entry table of K's multiples; crc32q then reduces it (see "Joining"
 * at the top).  The tables are built by the preprocessor, so they are
 * constants.
 */
#define CLMUL4(k, v)							\
	(((v) & 1 ? (uint64_t)(k) : 0) ^				\
	 ((v) & 2 ? (uint64_t)(k) << 1 : 0) ^				\
	 ((v) & 4 ? (uint64_t)(k) << 2 : 0) ^				\
	 ((v) & 8 ? (uint64_t)(k) << 3 : 0))
#define NIBBLES(k) {							\
	CLMUL4(k, 0), CLMUL4(k, 1), CLMUL4(k, 2), CLMUL4(k, 3),		\
	CLMUL4(k, 4), CLMUL4(k, 5), CLMUL4(k, 6), CLMUL4(k, 7),		\
	CLMUL4(k, 8), CLMUL4(k, 9), CLMUL4(k, 10), CLMUL4(k, 11),	\
	CLMUL4(k, 12), CLMUL4(k, 13), CLMUL4(k, 14), CLMUL4(k, 15) }

static const uint64_t shift_long[16] = NIBBLES(BL__CRC32C_SHIFT_LONG);
static const uint64_t shift_short[16] = NIBBLES(BL__CRC32C_SHIFT_SHORT);

TARGET_SSE42 static inline uint32_t crc_shift(uint32_t crc,
					      const uint64_t tab[16])
{
	uint64_t p = 0;
	int i;

	for (i = 0; i < 32; i += 4)
		p ^= tab[(crc >> i) & 15] << i;
	return (uint32_t)_mm_crc32_u64(0, p);
}

/* three streams of @block bytes, each crc moved over the next block */
TARGET_SSE42 static inline uint32_t crc_3way(uint32_t crc,
					     const unsigned char *p,
					     size_t block,
					     const uint64_t tab[16])
{
	uint64_t c0 = crc, c1 = 0, c2 = 0, a, b, c;
	size_t i;

	for (i = 0; i < block; i += 8) {
		memcpy(&a, p + i, 8);
		memcpy(&b, p + block + i, 8);
		memcpy(&c, p + 2 * block + i, 8);
		c0 = _mm_crc32_u64(c0, a);
		c1 = _mm_crc32_u64(c1, b);
		c2 = _mm_crc32_u64(c2, c);
	}
	crc = crc_shift((uint32_t)c0, tab) ^ (uint32_t)c1;
	return crc_shift(crc, tab) ^ (uint32_t)c2;
}

TARGET_SSE42 uint32_t bl__crc32c_sse42(uint32_t crc, const void *data,
				       size_t len)
{
	const unsigned char *p = data;
	size_t n;

	if (len >= 3 * BL__CRC32C_SHORT) {
		/* aligned words never straddle a cache line */
		n = -(uintptr_t)p & 7;
		crc = crc_small(crc, p, n);
		p += n;
		len -= n;
		for (; len >= 3 * BL__CRC32C_LONG; len -= 3 * BL__CRC32C_LONG,
		     p += 3 * BL__CRC32C_LONG)
			crc = crc_3way(crc, p, BL__CRC32C_LONG, shift_long);
		for (; len >= 3 * BL__CRC32C_SHORT; len -= 3 * BL__CRC32C_SHORT,
		     p += 3 * BL__CRC32C_SHORT)
			crc = crc_3way(crc, p, BL__CRC32C_SHORT, shift_short);
	}
	return crc_small(crc, p, len);
}

/* ---- PCLMULQDQ ----------------------------------------------------------- */

/* the constants that move 128 bits forward by 128 * k bits */
#define FOLD_K(k)							\
	_mm_set_epi64x(bl__crc32c_fold[(k) - 1][1], bl__crc32c_fold[(k) - 1][0])
#define JUMP_K(f) _mm_set_epi64x((f)->jump[1], (f)->jump[0])

TARGET_PCLMUL static inline __m128i fold128(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

static inline __m128i load128(const unsigned char *p)
{
	return _mm_loadu_si128((const __m128i *)p);
}

/* 128 bits of pending state to its crc: X * x^32 mod P */
TARGET_PCLMUL static inline uint32_t reduce128(__m128i x)
{
	uint32_t crc;

	crc = (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x));
	return (uint32_t)_mm_crc32_u64(crc, (uint64_t)_mm_extract_epi64(x, 1));
}

/* Fold the rest in 16-byte steps, reduce to 32 bits, finish bytewise. */
TARGET_PCLMUL static inline uint32_t fold_finish(__m128i x,
						 const unsigned char *p,
						 size_t len)
{
	const __m128i k = FOLD_K(1);

	for (; len >= 16; len -= 16, p += 16)
		x = _mm_xor_si128(fold128(x, k), load128(p));
	return crc_small(reduce128(x), p, len);
}

/* a * b mod P, b pre-divided by x^33 (see "Joining" at the top) */
TARGET_PCLMUL static inline uint32_t mul33(uint32_t a, uint32_t b)
{
	__m128i p = _mm_clmulepi64_si128(_mm_cvtsi32_si128((int)a),
					 _mm_cvtsi32_si128((int)b), 0x00);

	return (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(p));
}

TARGET_PCLMUL uint32_t bl__crc32c_zeros_pclmul(uint32_t crc, size_t len)
{
	for (; len && crc; len &= len - 1)
		crc = mul33(crc, bl__crc32c_x2n33[__builtin_ctzll(len)]);
	return crc;
}

/*
 * @n words of each of three crc32q streams @stride bytes apart.  Only the
 * first stream's crc starts from the seed; the others start at 0 and are
 * moved into place when the streams are joined.
 */
TARGET_SSE42 static inline void streams_step(uint64_t c[3],
					     const unsigned char *q,
					     size_t stride, int n)
{
	uint64_t a, b, d;
	int i;

#pragma GCC unroll 8
	for (i = 0; i < n; i++, q += 8) {
		memcpy(&a, q, 8);
		memcpy(&b, q + stride, 8);
		memcpy(&d, q + 2 * stride, 8);
		c[0] = _mm_crc32_u64(c[0], a);
		c[1] = _mm_crc32_u64(c[1], b);
		c[2] = _mm_crc32_u64(c[2], d);
	}
}

/* The streams' crcs as one: the crc (seed 0) of their 3 * C bytes. */
TARGET_PCLMUL static inline uint32_t
streams_join(const uint64_t c[3], const struct bl__crc32c_fused *f)
{
	return mul33((uint32_t)c[0], f->shift[1]) ^
	       mul33((uint32_t)c[1], f->shift[0]) ^ (uint32_t)c[2];
}

#define XMM_C (BL__CRC32C_XMM_STEPS * BL__CRC32C_XMM_QWORDS * 8)
#define XMM_SUPER (BL__CRC32C_XMM_STEPS * 128 + 3 * XMM_C)

/*
 * Eight 128-bit accumulators, 128 bytes a step: a fold is a multiply of
 * several cycles' latency and a xor, and eight independent chains cover it.
 */
#define XMM_FOLD8(x, k, p)						\
	do {								\
		x[0] = _mm_xor_si128(fold128(x[0], k), load128(p));	\
		x[1] = _mm_xor_si128(fold128(x[1], k), load128(p + 16)); \
		x[2] = _mm_xor_si128(fold128(x[2], k), load128(p + 32)); \
		x[3] = _mm_xor_si128(fold128(x[3], k), load128(p + 48)); \
		x[4] = _mm_xor_si128(fold128(x[4], k), load128(p + 64)); \
		x[5] = _mm_xor_si128(fold128(x[5], k), load128(p + 80)); \
		x[6] = _mm_xor_si128(fold128(x[6], k), load128(p + 96)); \
		x[7] = _mm_xor_si128(fold128(x[7], k), load128(p + 112)); \
	} while (0)

/* every accumulator straight onto the last: independent multiplies */
TARGET_PCLMUL static inline __m128i xmm_join8(const __m128i x[8])
{
	__m128i a, b, c, d;

	a = _mm_xor_si128(fold128(x[0], FOLD_K(7)), fold128(x[1], FOLD_K(6)));
	b = _mm_xor_si128(fold128(x[2], FOLD_K(5)), fold128(x[3], FOLD_K(4)));
	c = _mm_xor_si128(fold128(x[4], FOLD_K(3)), fold128(x[5], FOLD_K(2)));
	d = _mm_xor_si128(fold128(x[6], FOLD_K(1)), x[7]);
	return _mm_xor_si128(_mm_xor_si128(a, b), _mm_xor_si128(c, d));
}

TARGET_PCLMUL static inline void xmm_load8(__m128i x[8],
					   const unsigned char *p)
{
	int i;

	for (i = 0; i < 8; i++)
		x[i] = load128(p + 16 * i);
}

/*
 * Whole super blocks while they last; returns the crc so far and moves
 * @pp and @lenp past them.  @*lenp >= XMM_SUPER.
 */
TARGET_PCLMUL static uint32_t pclmul_fused(uint32_t crc,
					   const unsigned char **pp,
					   size_t *lenp)
{
	const struct bl__crc32c_fused *f = &bl__crc32c_fused_xmm;
	const unsigned char *p = *pp, *q;
	size_t len = *lenp;
	const __m128i k = FOLD_K(8), kj = JUMP_K(f);
	__m128i x[8];
	uint64_t c[3];
	uint32_t r = 0;
	int i;

	xmm_load8(x, p);
	x[0] = _mm_xor_si128(x[0], _mm_cvtsi32_si128((int)crc));
	for (;;) {
		q = p + BL__CRC32C_XMM_STEPS * 128;
		c[0] = c[1] = c[2] = 0;
		streams_step(c, q, XMM_C, BL__CRC32C_XMM_QWORDS);
		q += BL__CRC32C_XMM_QWORDS * 8;
		for (i = 1; i < BL__CRC32C_XMM_STEPS; i++) {
			XMM_FOLD8(x, k, (p + 128 * i));
			streams_step(c, q, XMM_C, BL__CRC32C_XMM_QWORDS);
			q += BL__CRC32C_XMM_QWORDS * 8;
		}
		r = streams_join(c, f);
		p += XMM_SUPER;
		len -= XMM_SUPER;
		if (len < XMM_SUPER)
			break;
		/* over the streams, and their crc into the next block's head */
		XMM_FOLD8(x, kj, p);
		x[0] = _mm_xor_si128(x[0], _mm_cvtsi32_si128((int)r));
	}
	*pp = p;
	*lenp = len;
	return mul33(reduce128(xmm_join8(x)), f->shift[2]) ^ r;
}

/*
 * Three crc32q streams of w words each, joined by carry-less multiplies:
 * shorter than the folding set-up, and as fast as the crc32 unit allows.
 * Rounds of BL__CRC32C_3WAY_WORDS words per stream, then one round of
 * whatever is left, then at most 23 bytes on their own.
 */
TARGET_PCLMUL static uint32_t crc_3way_clmul(uint32_t crc,
					     const unsigned char *p,
					     size_t len)
{
	const size_t wmax = BL__CRC32C_3WAY_WORDS;
	uint64_t c[3];
	size_t w;

	while (len >= 24) {
		w = len / 24 < wmax ? len / 24 : wmax;
		c[0] = crc;
		c[1] = c[2] = 0;
		streams_step(c, p, 8 * w, (int)w);
		crc = mul33((uint32_t)c[0], bl__crc32c_words33[2 * w - 1]) ^
		      mul33((uint32_t)c[1], bl__crc32c_words33[w - 1]) ^
		      (uint32_t)c[2];
		p += 24 * w;
		len -= 24 * w;
	}
	return crc_small(crc, p, len);
}

/* below this the single chain of crc32q has the shortest latency */
#define CLMUL_3WAY_MIN 80

/*
 * Long buffers fold 128 bits at a time beside three crc32q streams; the
 * rest runs the streams alone, whose join needs PCLMULQDQ too.
 */
TARGET_PCLMUL uint32_t bl__crc32c_pclmul(uint32_t crc, const void *data,
					 size_t len)
{
	const unsigned char *p = data;

	if (len < CLMUL_3WAY_MIN)
		return crc_small(crc, p, len);
	if (len >= XMM_SUPER)
		crc = pclmul_fused(crc, &p, &len);
	return crc_3way_clmul(crc, p, len);
}

/* ---- VPCLMULQDQ ---------------------------------------------------------- */

/*
 * Below this many bytes the 512-bit set-up (alignment, four accumulators,
 * the lane reduction) costs more than it saves.
 */
#define VPCLMUL_MIN 512

#define ZMM_C (BL__CRC32C_ZMM_STEPS * BL__CRC32C_ZMM_QWORDS * 8)
#define ZMM_SUPER (BL__CRC32C_ZMM_STEPS * 256 + 3 * ZMM_C)

TARGET_VPCLMUL static inline __m512i fold512(__m512i z, __m512i k, __m512i d)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(z, k, 0x00),
					 _mm512_clmulepi64_epi128(z, k, 0x11),
					 d, 0x96);
}

TARGET_VPCLMUL static inline __m512i load512(const unsigned char *p)
{
	return _mm512_loadu_si512((const void *)p);
}

TARGET_VPCLMUL static inline __m512i zext_crc(uint32_t crc)
{
	return _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)crc));
}

/* four accumulators (256 bytes) forward by the fold that @k encodes */
#define ZMM_FOLD4(z, k, p)						\
	do {								\
		z[0] = fold512(z[0], k, load512(p));			\
		z[1] = fold512(z[1], k, load512(p + 64));		\
		z[2] = fold512(z[2], k, load512(p + 128));		\
		z[3] = fold512(z[3], k, load512(p + 192));		\
	} while (0)

TARGET_VPCLMUL static inline void zmm_load4(__m512i z[4],
					    const unsigned char *p,
					    uint32_t crc)
{
	z[0] = _mm512_xor_si512(load512(p), zext_crc(crc));
	z[1] = load512(p + 64);
	z[2] = load512(p + 128);
	z[3] = load512(p + 192);
}

/* four accumulators onto the last one */
TARGET_VPCLMUL static inline __m512i zmm_join4(const __m512i z[4])
{
	__m512i t;

	t = fold512(z[2], _mm512_broadcast_i32x4(FOLD_K(4)), z[3]);
	t = fold512(z[1], _mm512_broadcast_i32x4(FOLD_K(8)), t);
	return fold512(z[0], _mm512_broadcast_i32x4(FOLD_K(12)), t);
}

/* the four 128-bit lanes of @z onto the last: 384, 256, 128 and 0 bits */
TARGET_VPCLMUL static inline __m128i zmm_lanes(__m512i z)
{
	const __m512i k = _mm512_set_epi64(0, 0,
		bl__crc32c_fold[0][1], bl__crc32c_fold[0][0],
		bl__crc32c_fold[1][1], bl__crc32c_fold[1][0],
		bl__crc32c_fold[2][1], bl__crc32c_fold[2][0]);
	__m512i t = fold512(z, k, _mm512_maskz_mov_epi64(0xc0, z));
	__m256i y = _mm256_xor_si256(_mm512_castsi512_si256(t),
				     _mm512_extracti64x4_epi64(t, 1));

	return _mm_xor_si128(_mm256_castsi256_si128(y),
			     _mm256_extracti128_si256(y, 1));
}

/* As pclmul_fused(), on zmm.  @*lenp >= ZMM_SUPER. */
TARGET_VPCLMUL static uint32_t vpclmul_fused(uint32_t crc,
					     const unsigned char **pp,
					     size_t *lenp)
{
	const struct bl__crc32c_fused *f = &bl__crc32c_fused_zmm;
	const unsigned char *p = *pp, *q;
	size_t len = *lenp;
	const __m512i k = _mm512_broadcast_i32x4(FOLD_K(16));
	const __m512i kj = _mm512_broadcast_i32x4(JUMP_K(f));
	__m512i z[4];
	uint64_t c[3];
	uint32_t r = 0;
	int i;

	zmm_load4(z, p, crc);
	for (;;) {
		q = p + BL__CRC32C_ZMM_STEPS * 256;
		c[0] = c[1] = c[2] = 0;
		streams_step(c, q, ZMM_C, BL__CRC32C_ZMM_QWORDS);
		q += BL__CRC32C_ZMM_QWORDS * 8;
		for (i = 1; i < BL__CRC32C_ZMM_STEPS; i++) {
			ZMM_FOLD4(z, k, (p + 256 * i));
			streams_step(c, q, ZMM_C, BL__CRC32C_ZMM_QWORDS);
			q += BL__CRC32C_ZMM_QWORDS * 8;
		}
		r = streams_join(c, f);
		p += ZMM_SUPER;
		len -= ZMM_SUPER;
		if (len < ZMM_SUPER)
			break;
		ZMM_FOLD4(z, kj, p);
		z[0] = _mm512_xor_si512(z[0], zext_crc(r));
	}
	*pp = p;
	*lenp = len;
	return mul33(reduce128(zmm_lanes(zmm_join4(z))), f->shift[2]) ^ r;
}

/*
 * Four registers of four 128-bit lanes, 256 bytes a step; with three
 * crc32q streams beside them for long buffers.  The loads are aligned to
 * cache lines first so that none of them splits.
 */
TARGET_VPCLMUL uint32_t bl__crc32c_vpclmul(uint32_t crc, const void *data,
					   size_t len)
{
	const unsigned char *p = data;
	__m512i z[4], k;
	size_t n;

	if (len < CLMUL_3WAY_MIN)
		return crc_small(crc, p, len);
	if (len < VPCLMUL_MIN)
		return crc_3way_clmul(crc, p, len);
	n = -(uintptr_t)p & 63;
	crc = crc_small(crc, p, n);
	p += n;
	len -= n;
	if (len >= ZMM_SUPER) {
		crc = vpclmul_fused(crc, &p, &len);
		if (len < VPCLMUL_MIN)
			return crc_3way_clmul(crc, p, len);
	}

	zmm_load4(z, p, crc);
	p += 256;
	len -= 256;
	k = _mm512_broadcast_i32x4(FOLD_K(16));
	for (; len >= 256; len -= 256, p += 256)
		ZMM_FOLD4(z, k, p);
	z[3] = zmm_join4(z);
	k = _mm512_broadcast_i32x4(FOLD_K(4));
	for (; len >= 64; len -= 64, p += 64)
		z[3] = fold512(z[3], k, load512(p));
	return fold_finish(zmm_lanes(z[3]), p, len);
}

#endif /* __x86_64__ */
