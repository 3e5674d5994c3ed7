/* SPDX-License-Identifier: MIT */
/*
 * codec.h - little-endian encode/decode over lists and cursors (the
 * cursor itself is in iter.h, included here).  A decode that fails
 * returns a negative errno and leaves the cursor where it was.
 *
 * Encoding follows Ceph's denc: fixed-width integers little-endian,
 * varints unsigned LEB128, blobs as a u32 length then the bytes.
 */
#ifndef BUFFERLIST_CODEC_H
#define BUFFERLIST_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <bufferlist/common.h>
#include <bufferlist/list.h>
#include <bufferlist/iter.h>

BL_BEGIN_DECLS

/*
 * Encoders append to @l (copying the few bytes).  On failure @l is
 * unchanged.  Return: 0 or -ENOMEM.
 */
BL_API int bl_encode_u8(struct bl_list *l, uint8_t v);
BL_API int bl_encode_u16(struct bl_list *l, uint16_t v);
BL_API int bl_encode_u32(struct bl_list *l, uint32_t v);
BL_API int bl_encode_u64(struct bl_list *l, uint64_t v);
BL_API int bl_encode_varint(struct bl_list *l, uint64_t v);
/**
 * bl_encode_bytes() - u32 length then @len bytes (copied), both or none.
 * Return: 0, or -E2BIG (@len above 4 GiB - 1), -EINVAL (@p NULL and @len
 * not 0), -ENOMEM.
 */
BL_API int bl_encode_bytes(struct bl_list *l, const void *p, size_t len);
/**
 * bl_encode_list() - u32 length then @src's bytes, shared (no copy), both
 * or none.  @src == @l works.
 * Return: 0, or -E2BIG (@src longer than 4 GiB - 1), -ENOMEM.
 */
BL_API int bl_encode_list(struct bl_list *l, const struct bl_list *src);

/*
 * Private: the library's side of the fixed-width decoders below, for a
 * value that is not all in the cursor's window (across a seam, truncated,
 * or any value in an --enable-debug build).  Exported for them; not for
 * other callers.
 */
BL_API int bl__decode_u8_slow(struct bl_iter *it, uint8_t *v);
BL_API int bl__decode_u16_slow(struct bl_iter *it, uint16_t *v);
BL_API int bl__decode_u32_slow(struct bl_iter *it, uint32_t *v);
BL_API int bl__decode_u64_slow(struct bl_iter *it, uint64_t *v);

/* Private: little-endian loads (compilers make each one load). */
static inline uint16_t bl__get_le16(const char *p)
{
	const unsigned char *b = (const unsigned char *)p;

	return (uint16_t)(b[0] | b[1] << 8);
}

static inline uint32_t bl__get_le32(const char *p)
{
	const unsigned char *b = (const unsigned char *)p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

static inline uint64_t bl__get_le64(const char *p)
{
	return bl__get_le32(p) | (uint64_t)bl__get_le32(p + 4) << 32;
}

/*
 * Decoders store the value in *@v and advance the cursor.  Inline: a value
 * inside the cursor's segment is loaded in place, with no call; the
 * library exports them too.
 * Return: 0, or -ERANGE when truncated (cursor and *@v unchanged).
 */
BL_API_INLINE int bl_decode_u8(struct bl_iter *it, uint8_t *v)
{
	if (BL__LIKELY(bl__iter_window(it) >= 1)) {
		*v = (uint8_t)*it->_p++;
		return 0;
	}
	return bl__decode_u8_slow(it, v);
}

BL_API_INLINE int bl_decode_u16(struct bl_iter *it, uint16_t *v)
{
	if (BL__LIKELY(bl__iter_window(it) >= 2)) {
		*v = bl__get_le16(it->_p);
		it->_p += 2;
		return 0;
	}
	return bl__decode_u16_slow(it, v);
}

BL_API_INLINE int bl_decode_u32(struct bl_iter *it, uint32_t *v)
{
	if (BL__LIKELY(bl__iter_window(it) >= 4)) {
		*v = bl__get_le32(it->_p);
		it->_p += 4;
		return 0;
	}
	return bl__decode_u32_slow(it, v);
}

BL_API_INLINE int bl_decode_u64(struct bl_iter *it, uint64_t *v)
{
	if (BL__LIKELY(bl__iter_window(it) >= 8)) {
		*v = bl__get_le64(it->_p);
		it->_p += 8;
		return 0;
	}
	return bl__decode_u64_slow(it, v);
}
/**
 * bl_decode_varint() - an unsigned LEB128 of at most 10 bytes.
 * Return: 0, or -ERANGE (truncated), -EBADMSG (longer than 10 bytes, or
 * above 64 bits); on failure the cursor and *@v are unchanged.
 */
BL_API int bl_decode_varint(struct bl_iter *it, uint64_t *v);
/**
 * bl_decode_bytes() - reads a u32 length and appends that many bytes to
 * @out as shared slices (zero copy).
 * Return: 0, or -ERANGE (the length or the bytes truncated), -ENOMEM; on
 * failure cursor and @out are unchanged.
 */
BL_API int bl_decode_bytes(struct bl_iter *it, struct bl_list *out);

BL_END_DECLS

#endif /* BUFFERLIST_CODEC_H */
