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
 * Return: 0, or -EINVAL (@len above 4 GiB - 1, or @p NULL and @len not 0),
 * -ENOMEM.
 */
BL_API int bl_encode_bytes(struct bl_list *l, const void *p, size_t len);
/**
 * bl_encode_list() - u32 length then @src's bytes, shared (no copy), both
 * or none.  @src == @l works.
 * Return: 0, or -EINVAL (@src longer than 4 GiB - 1), -ENOMEM.
 */
BL_API int bl_encode_list(struct bl_list *l, const struct bl_list *src);

/*
 * Decoders store the value in *@v and advance the cursor.
 * Return: 0, or -ERANGE when truncated (cursor and *@v unchanged).
 */
BL_API int bl_decode_u8(struct bl_iter *it, uint8_t *v);
BL_API int bl_decode_u16(struct bl_iter *it, uint16_t *v);
BL_API int bl_decode_u32(struct bl_iter *it, uint32_t *v);
BL_API int bl_decode_u64(struct bl_iter *it, uint64_t *v);
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
