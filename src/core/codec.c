/* SPDX-License-Identifier: MIT */
/*
 * codec.c - little-endian encode/decode over lists (Ceph's denc layout).
 *
 * The fixed-width decoders are inline in codec.h: they take the bytes
 * straight from the current segment when they are all there (the common
 * case) and call here to copy them across a seam.
 */
#include "iter_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <bufferlist/codec.h>
#include "endian_int.h"

int bl_encode_u8(struct bl_list *l, uint8_t v)
{
	return bl_list_append(l, &v, 1);
}

int bl_encode_u16(struct bl_list *l, uint16_t v)
{
	unsigned char b[2];

	bl__le16_store(b, v);
	return bl_list_append(l, b, 2);
}

int bl_encode_u32(struct bl_list *l, uint32_t v)
{
	unsigned char b[4];

	bl__le32_store(b, v);
	return bl_list_append(l, b, 4);
}

int bl_encode_u64(struct bl_list *l, uint64_t v)
{
	unsigned char b[8];

	bl__le64_store(b, v);
	return bl_list_append(l, b, 8);
}

int bl_encode_varint(struct bl_list *l, uint64_t v)
{
	uint8_t b[10];
	size_t n = 0;

	do {
		b[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			b[n] |= 0x80;
		n++;
	} while (v);
	return bl_list_append(l, b, n);
}

int bl_encode_bytes(struct bl_list *l, const void *p, size_t len)
{
	unsigned char n[4];

	if (len > UINT32_MAX)
		return -E2BIG;	/* too large for the format, as in msgr and lz4 */
	if (!p && len)
		return -EINVAL;
	bl__le32_store(n, (uint32_t)len);
	/* length and bytes go in together or not at all */
	return bl__list_append2(l, n, 4, p, len);
}

int bl_encode_list(struct bl_list *l, const struct bl_list *src)
{
	size_t len = bl_list_length(src);
	struct bl_list tmp;
	int ret;

	if (len > UINT32_MAX)
		return -E2BIG;
	/*
	 * Common case: the length fits the append buffer and the segments fit
	 * the tail chunk, so neither append can fail after the first succeeds.
	 */
	if (l != src && bl__list_abuf_room(l) >= 4 &&
	    bl__list_tail_room(l) > bl_list_num_buffers(src)) {
		ret = bl_encode_u32(l, (uint32_t)len);
		if (!ret)
			ret = bl_list_append_list(l, src);
		BL_ASSERT(!ret);
		return ret;
	}
	/* Otherwise build aside; l changes only in the final, atomic claim. */
	bl_list_init(&tmp);
	ret = bl_encode_u32(&tmp, (uint32_t)len);
	if (!ret)
		ret = bl_list_append_list(&tmp, src);
	if (!ret)
		ret = bl_list_claim_append(l, &tmp);
	bl_list_clear(&tmp);
	return ret;
}

/*
 * The next @n bytes, from the segment when contiguous, else via @tmp (a
 * copy); NULL, and @it unchanged, when fewer are left.
 */
static inline const void *peek(struct bl_iter *it, size_t n, void *tmp)
{
	struct bl_iter t;

	if (n > bl_iter_remaining(it))
		return NULL;
	bl__iter_settle(it);
	if (bl__iter_contig(it) >= n)
		return bl__iter_ptr(it);
	t = *it;
	bl_iter_copy(&t, n, tmp);
	return tmp;
}

/*
 * The fixed-width decoders' way when the value is not all in the cursor's
 * window (codec.h has the rest inline): across a seam it is copied; at the
 * start of the next segment when an inline move used this one up, or in
 * an --enable-debug build (whose window is empty), it is loaded in place.
 */
#define DECODE_SLOW(bits)						\
int bl__decode_u##bits##_slow(struct bl_iter *it, uint##bits##_t *v)	\
{									\
	uint##bits##_t tmp;						\
	const void *p = peek(it, sizeof(tmp), &tmp);			\
									\
	if (!p)								\
		return -ERANGE;						\
	*v = bl__get_le##bits(p);					\
	bl_iter_advance(it, sizeof(tmp));				\
	return 0;							\
}

int bl__decode_u8_slow(struct bl_iter *it, uint8_t *v)
{
	uint8_t tmp;
	const uint8_t *p = peek(it, 1, &tmp);

	if (!p)
		return -ERANGE;
	*v = *p;
	bl_iter_advance(it, 1);
	return 0;
}

DECODE_SLOW(16)
DECODE_SLOW(32)
DECODE_SLOW(64)

int bl_decode_varint(struct bl_iter *it, uint64_t *v)
{
	struct bl_iter t = *it;
	uint64_t r = 0;

	for (unsigned i = 0; i < 10; i++) {
		uint8_t b;

		if (bl_decode_u8(&t, &b))
			return -ERANGE;
		/* the 10th byte may only hold bit 63 */
		if (i == 9 && (b & 0xfe))
			return -EBADMSG;
		r |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = r;
			*it = t;
			return 0;
		}
	}
	return -EBADMSG;
}

int bl_decode_bytes(struct bl_iter *it, struct bl_list *out)
{
	struct bl_iter t = *it;
	uint32_t len;
	int ret;

	ret = bl_decode_u32(&t, &len);
	if (ret)
		return ret;
	if (len > bl_iter_remaining(&t))
		return -ERANGE;
	ret = bl_iter_copy_list(&t, len, out);
	if (!ret)
		*it = t;
	return ret;
}
