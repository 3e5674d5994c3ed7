/* SPDX-License-Identifier: MIT */
/*
 * codec.h - a cursor over a list, and little-endian encode/decode.
 *
 * struct bl_iter is a complete type: keep it on the stack and copy it by
 * assignment to get an independent cursor.  It borrows the list: any change
 * to the list invalidates it.  A move or decode that fails returns a
 * negative errno and leaves the cursor where it was.
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

BL_BEGIN_DECLS

/* All fields private. */
struct bl_iter {
	const struct bl_list *_l;
	const struct bl__chunk_hdr *_chunk;	/* chunk of the current segment */
	uint32_t _idx;		/* slot in _chunk */
	size_t _seg_off;	/* offset inside the current segment */
	size_t _off;		/* offset from the start of the list */
};

/** bl_iter_init() - cursor at byte @off of @l (borrowed).  0 or -ERANGE. */
BL_API int bl_iter_init(struct bl_iter *it, const struct bl_list *l,
			size_t off);

/** bl_iter_offset() - bytes from the start of the list. */
BL_API size_t bl_iter_offset(const struct bl_iter *it);

/** bl_iter_remaining() - bytes left after the cursor. */
BL_API size_t bl_iter_remaining(const struct bl_iter *it);

/** bl_iter_advance() - moves forward @n bytes.  0 or -ERANGE. */
BL_API int bl_iter_advance(struct bl_iter *it, size_t n);

/** bl_iter_seek() - moves to byte @off of the list.  0 or -ERANGE. */
BL_API int bl_iter_seek(struct bl_iter *it, size_t off);

/** bl_iter_copy() - copies the next @len bytes into @dst and advances. */
BL_API int bl_iter_copy(struct bl_iter *it, size_t len, void *dst);

/**
 * bl_iter_copy_list() - appends the next @len bytes to @dst as shared
 * slices (no copy) and advances.  0, -ERANGE or -ENOMEM.
 */
BL_API int bl_iter_copy_list(struct bl_iter *it, size_t len,
			     struct bl_list *dst);

/**
 * bl_iter_get_ptr_and_advance() - zero copy: points *@data at the next
 * contiguous run (borrowed from the list's raw), at most @want bytes, and
 * advances over it.  Return: bytes in the run, 0 at the end.
 */
BL_API size_t bl_iter_get_ptr_and_advance(struct bl_iter *it, size_t want,
					  const char **data);

/* Encoders append to @l (copying the few bytes); 0 or -ENOMEM. */
BL_API int bl_encode_u8(struct bl_list *l, uint8_t v);
BL_API int bl_encode_u16(struct bl_list *l, uint16_t v);
BL_API int bl_encode_u32(struct bl_list *l, uint32_t v);
BL_API int bl_encode_u64(struct bl_list *l, uint64_t v);
BL_API int bl_encode_varint(struct bl_list *l, uint64_t v);
/** bl_encode_bytes() - u32 length then @len bytes (copied); -EINVAL past 4 GiB. */
BL_API int bl_encode_bytes(struct bl_list *l, const void *p, size_t len);
/** bl_encode_list() - u32 length then @src's bytes, shared (no copy). */
BL_API int bl_encode_list(struct bl_list *l, const struct bl_list *src);

/* Decoders: 0, or -ERANGE when truncated (cursor unchanged). */
BL_API int bl_decode_u8(struct bl_iter *it, uint8_t *v);
BL_API int bl_decode_u16(struct bl_iter *it, uint16_t *v);
BL_API int bl_decode_u32(struct bl_iter *it, uint32_t *v);
BL_API int bl_decode_u64(struct bl_iter *it, uint64_t *v);
/** bl_decode_varint() - -ERANGE when truncated, -EBADMSG past 10 bytes or 64 bits. */
BL_API int bl_decode_varint(struct bl_iter *it, uint64_t *v);
/**
 * bl_decode_bytes() - reads a u32 length and appends that many bytes to
 * @out as shared slices (zero copy).  -ERANGE when truncated, -ENOMEM;
 * on failure cursor and @out are unchanged.
 */
BL_API int bl_decode_bytes(struct bl_iter *it, struct bl_list *out);

BL_END_DECLS

#endif /* BUFFERLIST_CODEC_H */
