/* SPDX-License-Identifier: MIT */
/*
 * denc.h - the rest of Ceph's encoding (codec.h has the unsigned
 * fixed-width integers, the LEB128 varint and length-prefixed bytes):
 * versioned structures, signed integers, bool, IEEE floats, Ceph's signed
 * and "low zero" varints, strings, UUIDs, utime_t and counted sequences.
 * Each has the byte layout Ceph writes (man pages name it); encoders
 * append to a list and leave it unchanged when they fail; decoders read
 * from a cursor and leave it where it was when they fail.
 */
#ifndef BUFFERLIST_DENC_H
#define BUFFERLIST_DENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bufferlist/common.h>
#include <bufferlist/list.h>
#include <bufferlist/iter.h>

BL_BEGIN_DECLS

/* ---- versioned structures (Ceph's ENCODE_START / DECODE_START) ------- */

/*
 * On the wire: struct_v (u8), struct_compat (u8), struct_len (u32 LE:
 * the bytes that follow, up to the structure's end), then the fields.
 */
#define BL_STRUCT_HEADER_LEN 6

/* An encoding in progress (all fields private): on the caller's stack. */
struct bl_struct_enc {
	struct bl_hole _hole;	/* the header, its length still 0 */
	size_t _start;		/* the list's length before the header */
};

/**
 * bl_encode_start() - opens a structure of version @v readable by decoders
 * of version @compat or newer: appends its header with struct_len still
 * unknown (a hole, bl_list_append_hole()) and records in @s where it
 * began.  Structures nest: open the inner one on the same list.
 * Return: 0, or -EINVAL (@compat above @v, @s NULL), -ENOMEM; on failure
 * @l is unchanged.
 */
BL_API int bl_encode_start(struct bl_list *l, uint8_t v, uint8_t compat,
			   struct bl_struct_enc *s);

/**
 * bl_encode_finish() - closes the structure @s: writes its struct_len (the
 * bytes appended since its header) into the header.  No copy.
 * Return: 0, or -E2BIG (more than 4 GiB - 1 bytes; then the structure is
 * dropped as by bl_encode_abort()).
 */
BL_API int bl_encode_finish(struct bl_list *l, struct bl_struct_enc *s);

/**
 * bl_encode_abort() - drops the structure @s, its header and everything
 * appended after it (inner structures included): @l is as it was before
 * bl_encode_start().  What an encoder calls when a field fails.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_encode_abort(struct bl_list *l, struct bl_struct_enc *s);

/* Encodes the fields of a structure; 0 or a negative errno. */
typedef int (*bl_encode_fields_fn)(struct bl_list *l, void *arg);

/**
 * bl_encode_struct() - bl_encode_start(), @fn(@l, @arg) for the fields,
 * bl_encode_finish(); when any fails, bl_encode_abort().
 * Return: 0, or what failed returned (the errnos above, or @fn's); on
 * failure @l is unchanged.
 */
BL_API int bl_encode_struct(struct bl_list *l, uint8_t v, uint8_t compat,
			    bl_encode_fields_fn fn, void *arg);

/* A decoding in progress: the caller reads the first three fields. */
struct bl_struct_dec {
	uint8_t struct_v;	/* the encoder's version */
	uint8_t struct_compat;	/* the oldest decoder that may read it */
	uint8_t decoder_v;	/* the version given to bl_decode_start() */
	uint32_t struct_len;	/* the bytes of the fields */
	size_t _stop;		/* offset of the structure's end */
	size_t _outer;		/* the cursor's bound before the structure */
};

/**
 * bl_decode_start() - reads a structure's header at @it with a decoder of
 * version @v.  On success @s holds the header and @it, past it, is bounded
 * to the structure: it reads nothing past struct_len (a field decoded
 * beyond it fails with -ERANGE, as at the end of the list) until
 * bl_decode_finish().  The caller decodes the fields @s->struct_v has.
 * Return: 0, or -ERANGE (the header truncated, or struct_len past the
 * bytes left), -EPROTONOSUPPORT (struct_compat above @v: @s is filled for
 * bl_decode_struct_msg()), -EINVAL (@s NULL); on failure @it is where it
 * was.
 */
BL_API int bl_decode_start(struct bl_iter *it, uint8_t v,
			   struct bl_struct_dec *s);

/**
 * bl_decode_finish() - closes the structure @s: skips what is left of it
 * (fields a newer encoder appended; no copy) and lifts the bound
 * bl_decode_start() set on @it.
 * Return: 0, or -EINVAL (@it is not inside @s: another cursor, or one
 * moved back before the structure); on failure @it is unchanged.
 */
BL_API int bl_decode_finish(struct bl_iter *it, struct bl_struct_dec *s);

/* Decodes the fields of a structure of version @struct_v. */
typedef int (*bl_decode_fields_fn)(struct bl_iter *it, uint8_t struct_v,
				   void *arg);

/**
 * bl_decode_struct() - bl_decode_start(), @fn(@it, struct_v, @arg) for the
 * fields, bl_decode_finish().  @s may be NULL when the caller needs no
 * header (for -EPROTONOSUPPORT's message it does).
 * Return: 0, or what failed returned (the errnos above, or @fn's); on
 * failure @it is where it was.
 */
BL_API int bl_decode_struct(struct bl_iter *it, uint8_t v,
			    bl_decode_fields_fn fn, void *arg,
			    struct bl_struct_dec *s);

/**
 * bl_decode_struct_msg() - writes into @buf (@size bytes, NUL-terminated,
 * truncated as snprintf) why @s cannot be decoded, with the versions:
 * "decoder v1 cannot decode v3 (needs v2 or newer)".
 * Return: as snprintf(): the length of the whole message.
 */
BL_API int bl_decode_struct_msg(const struct bl_struct_dec *s, char *buf,
				size_t size);

/* ---- signed integers, bool, floating point --------------------------- */

/*
 * Two's complement, little-endian, as the unsigned ones of codec.h.
 * Return: encoders 0 or -ENOMEM; decoders 0 or -ERANGE (truncated).
 */
BL_API int bl_encode_s8(struct bl_list *l, int8_t v);
BL_API int bl_encode_s16(struct bl_list *l, int16_t v);
BL_API int bl_encode_s32(struct bl_list *l, int32_t v);
BL_API int bl_encode_s64(struct bl_list *l, int64_t v);
BL_API int bl_decode_s8(struct bl_iter *it, int8_t *v);
BL_API int bl_decode_s16(struct bl_iter *it, int16_t *v);
BL_API int bl_decode_s32(struct bl_iter *it, int32_t *v);
BL_API int bl_decode_s64(struct bl_iter *it, int64_t *v);

/*
 * bool: one byte, 1 or 0; decoding takes any non-zero byte as true, as
 * Ceph does.  float, double: the IEEE 754 bits little-endian (4 and 8
 * bytes).
 * Return: encoders 0 or -ENOMEM; decoders 0 or -ERANGE.
 */
BL_API int bl_encode_bool(struct bl_list *l, bool v);
BL_API int bl_decode_bool(struct bl_iter *it, bool *v);
BL_API int bl_encode_float(struct bl_list *l, float v);
BL_API int bl_decode_float(struct bl_iter *it, float *v);
BL_API int bl_encode_double(struct bl_list *l, double v);
BL_API int bl_decode_double(struct bl_iter *it, double *v);

/* ---- Ceph's varints --------------------------------------------------- */

/*
 * signed_varint: the magnitude shifted left one bit with the sign in bit
 * 0, as a varint (denc_signed_varint).  varint_lowz: up to three low zero
 * nibbles counted in bits 0-1 and shifted out (denc_varint_lowz);
 * signed_varint_lowz: the sign in bit 0, the count in bits 1-2
 * (denc_signed_varint_lowz).  lba: a u32 LE word with a 1- to 3-bit
 * prefix for 12, 16 or 20 low zero bits (or none), then 7-bit groups
 * (denc_lba).
 * Return: encoders 0, -ENOMEM, or -EINVAL for a value the layout cannot
 * hold (INT64_MIN for the signed ones; a value whose top two or three bits
 * are still set after the zero nibbles are shifted out, for the lowz
 * ones), which Ceph would write wrong; decoders 0, -ERANGE (truncated),
 * -EBADMSG (longer than 64 bits).
 */
BL_API int bl_encode_signed_varint(struct bl_list *l, int64_t v);
BL_API int bl_decode_signed_varint(struct bl_iter *it, int64_t *v);
BL_API int bl_encode_varint_lowz(struct bl_list *l, uint64_t v);
BL_API int bl_decode_varint_lowz(struct bl_iter *it, uint64_t *v);
BL_API int bl_encode_signed_varint_lowz(struct bl_list *l, int64_t v);
BL_API int bl_decode_signed_varint_lowz(struct bl_iter *it, int64_t *v);
BL_API int bl_encode_lba(struct bl_list *l, uint64_t v);
BL_API int bl_decode_lba(struct bl_iter *it, uint64_t *v);

/* ---- strings, UUIDs, times -------------------------------------------- */

/**
 * bl_encode_string() - a u32 length, then the bytes of the NUL-terminated
 * @s without its NUL (copied): Ceph's std::string.
 * Return: 0, or -EINVAL (@s NULL, or longer than 4 GiB - 1), -ENOMEM.
 */
BL_API int bl_encode_string(struct bl_list *l, const char *s);

/**
 * bl_decode_string() - reads a u32 length and that many bytes, copied into
 * @buf (@size bytes) with a NUL after them; *@len (when @len is not NULL)
 * gets the length without the NUL.  The bytes may hold a NUL themselves:
 * *@len says where they end.  No allocation: a caller that does not know
 * the size asks with @size 0 (-EMSGSIZE and the length) and calls again.
 * (bl_decode_bytes() takes the bytes into a list without a copy.)
 * Return: 0, or -EINVAL (@buf NULL and @size not 0), -ERANGE (truncated),
 * -EMSGSIZE (@size below the length + 1; *@len still gets the length);
 * on failure the cursor is where it was and @buf unchanged.
 */
BL_API int bl_decode_string(struct bl_iter *it, char *buf, size_t size,
			    size_t *len);

/**
 * bl_encode_uuid() - the 16 bytes of @uuid as they are (Ceph's uuid_d,
 * RFC 4122 order).
 * Return: 0, or -EINVAL (@uuid NULL), -ENOMEM.
 */
BL_API int bl_encode_uuid(struct bl_list *l, const uint8_t uuid[16]);

/**
 * bl_decode_uuid() - 16 bytes into @uuid.
 * Return: 0, or -EINVAL (@uuid NULL), -ERANGE (truncated).
 */
BL_API int bl_decode_uuid(struct bl_iter *it, uint8_t uuid[16]);

/**
 * bl_encode_utime() - Ceph's utime_t: seconds then nanoseconds, each a u32
 * LE, written as given (Ceph does not check @nsec either).
 * Return: 0 or -ENOMEM.
 */
BL_API int bl_encode_utime(struct bl_list *l, uint32_t sec, uint32_t nsec);

/**
 * bl_decode_utime() - seconds into *@sec and nanoseconds into *@nsec
 * (taken as they are, as Ceph does).
 * Return: 0, or -EINVAL (@sec or @nsec NULL), -ERANGE (truncated).
 */
BL_API int bl_decode_utime(struct bl_iter *it, uint32_t *sec, uint32_t *nsec);

/* ---- sequences: vectors, lists, sets, maps ---------------------------- */

/* Encodes item @i (a map's key then its value); 0 or a negative errno. */
typedef int (*bl_encode_item_fn)(struct bl_list *l, size_t i, void *arg);

/**
 * bl_encode_seq() - a u32 count @n, then @fn(@l, i, @arg) for i from 0 to
 * @n - 1: Ceph's std::vector, std::list, std::set and std::map.
 * Return: 0, or -E2BIG (@n above 4 Gi - 1), -EINVAL (@fn NULL and @n not
 * 0), -ENOMEM, or what @fn returned; on failure @l is unchanged.
 */
BL_API int bl_encode_seq(struct bl_list *l, size_t n, bl_encode_item_fn fn,
			 void *arg);

/* Decodes item @i of @n; 0 or a negative errno. */
typedef int (*bl_decode_item_fn)(struct bl_iter *it, uint32_t i, uint32_t n,
				 void *arg);

/**
 * bl_decode_seq() - reads a u32 count, then calls @fn(@it, i, count,
 * @arg) for each item.  The count is checked against nothing: @fn sees it
 * with each item and may refuse one it cannot hold (before it allocates).
 * *@count, when @count is not NULL, gets the count.
 * Return: 0, or -EINVAL (@fn NULL), -ERANGE (the count truncated), or
 * what @fn returned; on failure @it is where it was (what @fn stored
 * itself is its own to undo).
 */
BL_API int bl_decode_seq(struct bl_iter *it, bl_decode_item_fn fn, void *arg,
			 uint32_t *count);

BL_END_DECLS

#endif /* BUFFERLIST_DENC_H */
