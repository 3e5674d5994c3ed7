/* SPDX-License-Identifier: MIT */
/*
 * codec_denc.c - the scalar encoders of denc.h beyond codec.c's unsigned
 * ones: signed integers, bool, IEEE floats, Ceph's signed and low-zero
 * varints and its lba, strings, UUIDs and utime_t.
 *
 * Ceph defines these layouts by what its encoder writes; the decoders
 * here read every byte sequence that encoder can write to the value it
 * came from, and refuse (-EBADMSG) what no 64-bit value encodes to.  Where
 * Ceph's own encoder would write a value wrong (a shift that drops high
 * bits), the encoder here refuses it (-EINVAL) rather than write bytes
 * that decode to something else.
 */
#include "iter_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>
#include <bufferlist/codec.h>
#include <bufferlist/denc.h>
#include "endian_int.h"

/* ---- signed integers, bool, floating point ---------------------------- */

int bl_encode_s8(struct bl_list *l, int8_t v)
{
	return bl_encode_u8(l, (uint8_t)v);
}

int bl_encode_s16(struct bl_list *l, int16_t v)
{
	return bl_encode_u16(l, (uint16_t)v);
}

int bl_encode_s32(struct bl_list *l, int32_t v)
{
	return bl_encode_u32(l, (uint32_t)v);
}

int bl_encode_s64(struct bl_list *l, int64_t v)
{
	return bl_encode_u64(l, (uint64_t)v);
}

/* two's complement: the conversions below are the identity on bits */
#define DECODE_SIGNED(bits)						\
int bl_decode_s##bits(struct bl_iter *it, int##bits##_t *v)		\
{									\
	uint##bits##_t u;						\
	int ret = bl_decode_u##bits(it, &u);				\
									\
	if (!ret)							\
		memcpy(v, &u, sizeof(u));				\
	return ret;							\
}

DECODE_SIGNED(8)
DECODE_SIGNED(16)
DECODE_SIGNED(32)
DECODE_SIGNED(64)

int bl_encode_bool(struct bl_list *l, bool v)
{
	return bl_encode_u8(l, v ? 1 : 0);
}

int bl_decode_bool(struct bl_iter *it, bool *v)
{
	uint8_t b;
	int ret = bl_decode_u8(it, &b);

	if (!ret)
		*v = b != 0;
	return ret;
}

_Static_assert(sizeof(float) == 4 && sizeof(double) == 8,
	       "float and double must be IEEE 754 binary32 and binary64");

int bl_encode_float(struct bl_list *l, float v)
{
	uint32_t u;

	memcpy(&u, &v, 4);
	return bl_encode_u32(l, u);
}

int bl_decode_float(struct bl_iter *it, float *v)
{
	uint32_t u;
	int ret = bl_decode_u32(it, &u);

	if (!ret)
		memcpy(v, &u, 4);
	return ret;
}

int bl_encode_double(struct bl_list *l, double v)
{
	uint64_t u;

	memcpy(&u, &v, 8);
	return bl_encode_u64(l, u);
}

int bl_decode_double(struct bl_iter *it, double *v)
{
	uint64_t u;
	int ret = bl_decode_u64(it, &u);

	if (!ret)
		memcpy(v, &u, 8);
	return ret;
}

/* ---- Ceph's varints --------------------------------------------------- */

/* |v| of a v that is not INT64_MIN, without overflow */
static inline uint64_t magnitude(int64_t v)
{
	return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

/* Low zero nibbles of @v that the lowz layouts shift out: at most 3. */
static inline unsigned lowz_nibbles(uint64_t v)
{
	unsigned n = v ? (unsigned)__builtin_ctzll(v) / 4 : 0;

	return n > 3 ? 3 : n;
}

int bl_encode_signed_varint(struct bl_list *l, int64_t v)
{
	if (v == INT64_MIN)
		return -EINVAL;
	return bl_encode_varint(l, magnitude(v) << 1 | (v < 0));
}

int bl_decode_signed_varint(struct bl_iter *it, int64_t *v)
{
	uint64_t u;
	int ret = bl_decode_varint(it, &u);

	if (ret)
		return ret;
	/* a logical shift: Ceph's arithmetic one agrees below 2^62 */
	*v = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return 0;
}

int bl_encode_varint_lowz(struct bl_list *l, uint64_t v)
{
	unsigned z = lowz_nibbles(v);

	v >>= 4 * z;
	if (v >> 62)
		return -EINVAL;
	return bl_encode_varint(l, v << 2 | z);
}

int bl_decode_varint_lowz(struct bl_iter *it, uint64_t *v)
{
	struct bl_iter t = *it;
	uint64_t u;
	unsigned z;
	int ret = bl_decode_varint(&t, &u);

	if (ret)
		return ret;
	z = (unsigned)(u & 3);
	u >>= 2;
	if (z && u >> (64 - 4 * z))
		return -EBADMSG;	/* no 64-bit value writes this */
	*v = u << (4 * z);
	*it = t;
	return 0;
}

int bl_encode_signed_varint_lowz(struct bl_list *l, int64_t v)
{
	uint64_t m;
	unsigned z;

	if (v == INT64_MIN)
		return -EINVAL;
	m = magnitude(v);
	z = lowz_nibbles(m);
	m >>= 4 * z;
	if (m >> 61)
		return -EINVAL;
	return bl_encode_varint(l, m << 3 | z << 1 | (v < 0));
}

int bl_decode_signed_varint_lowz(struct bl_iter *it, int64_t *v)
{
	struct bl_iter t = *it;
	uint64_t u, m;
	unsigned z;
	int ret = bl_decode_varint(&t, &u);

	if (ret)
		return ret;
	z = (unsigned)(u >> 1 & 3);
	m = u >> 3;
	if (z && m >> (64 - 4 * z))
		return -EBADMSG;
	m <<= 4 * z;
	if (m > (uint64_t)INT64_MAX)
		return -EBADMSG;
	*v = u & 1 ? -(int64_t)m : (int64_t)m;
	*it = t;
	return 0;
}

/*
 * lba: a u32 LE word.  Its low bits say how many low zero bits were
 * shifted out: xx0 12, x01 16, 011 20, 111 none; the value's next bits
 * fill the word up to bit 30; bit 31 says 7-bit groups follow, each with
 * bit 7 saying another follows.
 */
int bl_encode_lba(struct bl_list *l, uint64_t v)
{
	unsigned zn = v ? (unsigned)__builtin_ctzll(v) / 4 : 0;
	unsigned char b[4 + 10];
	size_t n = 4;
	uint32_t word;
	unsigned pos;

	if (zn < 3) {
		pos = 3;
		word = 0x7;
	} else if (zn < 6) {
		v >>= 4 * zn;
		pos = zn - 2;
		word = (1u << (zn - 3)) - 1;
	} else {
		v >>= 20;
		pos = 3;
		word = 0x3;
	}
	word |= (uint32_t)(v << pos) & 0x7fffffff;
	v >>= 31 - pos;
	if (v)
		word |= 0x80000000u;
	bl__le32_store(b, word);
	while (v) {
		b[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	}
	return bl_list_append(l, b, n);
}

int bl_decode_lba(struct bl_iter *it, uint64_t *v)
{
	struct bl_iter t = *it;
	uint32_t word;
	uint64_t r;
	unsigned shift;
	uint8_t b;

	if (bl_decode_u32(&t, &word))
		return -ERANGE;
	switch (word & 7) {
	case 0: case 2: case 4: case 6:
		r = (uint64_t)(word & 0x7ffffffe) << 11;
		shift = 12 + 30;
		break;
	case 1: case 5:
		r = (uint64_t)(word & 0x7ffffffc) << 14;
		shift = 16 + 29;
		break;
	case 3:
		r = (uint64_t)(word & 0x7ffffff8) << 17;
		shift = 20 + 28;
		break;
	default:	/* 7 */
		r = (uint64_t)(word & 0x7ffffff8) >> 3;
		shift = 28;
		break;
	}
	b = (uint8_t)(word >> 24);
	while (b & 0x80) {
		if (bl_decode_u8(&t, &b))
			return -ERANGE;
		if (shift >= 64 || (shift > 57 && (b & 0x7f) >> (64 - shift)))
			return -EBADMSG;	/* past 64 bits */
		r |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	}
	*v = r;
	*it = t;
	return 0;
}

/* ---- strings, UUIDs, times -------------------------------------------- */

int bl_encode_string(struct bl_list *l, const char *s)
{
	if (!s)
		return -EINVAL;
	return bl_encode_bytes(l, s, strlen(s));
}

int bl_decode_string(struct bl_iter *it, char *buf, size_t size, size_t *len)
{
	struct bl_iter t = *it;
	uint32_t n;
	int ret;

	if (!buf && size)
		return -EINVAL;
	ret = bl_decode_u32(&t, &n);
	if (ret)
		return ret;
	if (n > bl_iter_remaining(&t))
		return -ERANGE;
	if (len)
		*len = n;
	if ((size_t)n >= size)
		return -EMSGSIZE;
	bl_iter_copy(&t, n, buf);	/* in range: cannot fail */
	buf[n] = '\0';
	*it = t;
	return 0;
}

int bl_encode_uuid(struct bl_list *l, const uint8_t uuid[16])
{
	if (!uuid)
		return -EINVAL;
	return bl_list_append(l, uuid, 16);
}

int bl_decode_uuid(struct bl_iter *it, uint8_t uuid[16])
{
	if (!uuid)
		return -EINVAL;
	return bl_iter_copy(it, 16, uuid);
}

int bl_encode_utime(struct bl_list *l, uint32_t sec, uint32_t nsec)
{
	unsigned char b[8];

	bl__le32_store(b, sec);
	bl__le32_store(b + 4, nsec);
	return bl_list_append(l, b, 8);
}

int bl_decode_utime(struct bl_iter *it, uint32_t *sec, uint32_t *nsec)
{
	uint64_t u;
	int ret;

	if (!sec || !nsec)
		return -EINVAL;
	ret = bl_decode_u64(it, &u);
	if (!ret) {
		*sec = (uint32_t)u;
		*nsec = (uint32_t)(u >> 32);
	}
	return ret;
}
