/* SPDX-License-Identifier: MIT */
/*
 * codec_struct.c - versioned structures (Ceph's ENCODE_START/FINISH and
 * DECODE_START/FINISH) and counted sequences.
 *
 * The encoder appends its six-byte header as a hole (list_append.c) and
 * writes struct_len into it at the end, so the fields are never moved or
 * copied.  A hole that fits the append buffer costs no call into the
 * allocator; the raw under it is held by the list, so later appends that
 * replace the append buffer leave the header where it is.
 *
 * The decoder bounds the caller's cursor to the structure (iter.c's
 * _lim), so a field that a lying struct_len cuts short fails as a
 * truncation would, and finishing skips a newer encoder's trailing fields
 * by moving the cursor (no copy).
 */
#include "iter_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <stdio.h>
#include <bufferlist/codec.h>
#include <bufferlist/denc.h>
#include "endian_int.h"

/* ---- encoding --------------------------------------------------------- */

int bl_encode_start(struct bl_list *l, uint8_t v, uint8_t compat,
		    struct bl_struct_enc *s)
{
	unsigned char hdr[BL_STRUCT_HEADER_LEN] = { v, compat, 0, 0, 0, 0 };

	if (bl__unlikely(!s || compat > v))
		return -EINVAL;
	/* set first, so that the append is a tail call (unused on failure) */
	s->_start = bl_list_length(l);
	return bl__list_append_hole_init(l, hdr, sizeof(hdr), &s->_hole);
}

void bl_encode_abort(struct bl_list *l, struct bl_struct_enc *s)
{
	size_t len = bl_list_length(l);

	/* cutting a list's tail needs no slot: it cannot fail */
	if (len > s->_start) {
		int ret = bl_list_splice(l, s->_start, len - s->_start, NULL);

		BL_ASSERT(!ret);
		(void)ret;
	}
}

int bl_encode_finish(struct bl_list *l, struct bl_struct_enc *s)
{
	size_t len = bl_list_length(l) - s->_start - BL_STRUCT_HEADER_LEN;
	struct bl_raw *r = s->_hole._raw;

	if (bl__unlikely(len > UINT32_MAX)) {
		bl_encode_abort(l, s);
		return -E2BIG;
	}
	bl__le32_store((unsigned char *)s->_hole._at + 2, (uint32_t)len);
	/* a crc cached over the zeros would be stale now */
	bl__raw_crc_stale(r);
	return 0;
}

int bl_encode_struct(struct bl_list *l, uint8_t v, uint8_t compat,
		     bl_encode_fields_fn fn, void *arg)
{
	struct bl_struct_enc s;
	int ret;

	if (!fn)
		return -EINVAL;
	ret = bl_encode_start(l, v, compat, &s);
	if (ret)
		return ret;
	ret = fn(l, arg);
	if (ret) {
		bl_encode_abort(l, &s);
		return ret;
	}
	return bl_encode_finish(l, &s);
}

/* ---- decoding --------------------------------------------------------- */

int bl_decode_start(struct bl_iter *it, uint8_t v, struct bl_struct_dec *s)
{
	struct bl_iter t;
	const char *p;
	uint8_t sv, sc;
	uint32_t len;

	if (bl__unlikely(!s))
		return -EINVAL;
	p = bl__iter_peek(it, BL_STRUCT_HEADER_LEN);
	if (bl__likely(p)) {
		/* the whole header in the window: read in place, no copy of
		 * the cursor */
		size_t off = bl_iter_offset(it) + BL_STRUCT_HEADER_LEN;

		sv = (uint8_t)p[0];
		sc = (uint8_t)p[1];
		len = bl__get_le32(p + 2);
		if (bl__unlikely(sc > v))
			goto too_new;
		if (bl__unlikely(len > bl__iter_limit(it) - off))
			return -ERANGE;
		bl__iter_skip(it, BL_STRUCT_HEADER_LEN);
		s->struct_v = sv;
		s->struct_compat = sc;
		s->decoder_v = v;
		s->struct_len = len;
		s->_outer = bl__iter_limit(it);
		s->_stop = off + len;
		bl__iter_set_limit(it, s->_stop);
		return 0;
	}
	t = *it;
	if (bl_decode_u8(&t, &sv) || bl_decode_u8(&t, &sc))
		return -ERANGE;
	if (sc > v) {
too_new:	/* Ceph checks the compat before it reads the length */
		s->struct_v = sv;
		s->struct_compat = sc;
		s->decoder_v = v;
		s->struct_len = 0;
		s->_stop = s->_outer = 0;
		return -EPROTONOSUPPORT;
	}
	if (bl_decode_u32(&t, &len) || len > bl_iter_remaining(&t))
		return -ERANGE;
	s->struct_v = sv;
	s->struct_compat = sc;
	s->decoder_v = v;
	s->struct_len = len;
	s->_outer = bl__iter_limit(&t);
	s->_stop = bl_iter_offset(&t) + len;
	bl__iter_set_limit(&t, s->_stop);
	*it = t;
	return 0;
}

int bl_decode_finish(struct bl_iter *it, struct bl_struct_dec *s)
{
	size_t off = bl_iter_offset(it);

	if (bl__unlikely(bl__iter_limit(it) != s->_stop || off > s->_stop ||
			 s->_outer < s->_stop))
		return -EINVAL;
	/* a newer encoder's fields: skipped, not read */
	if (off < s->_stop)
		bl_iter_advance(it, s->_stop - off);
	bl__iter_set_limit(it, s->_outer);
	return 0;
}

int bl_decode_struct(struct bl_iter *it, uint8_t v, bl_decode_fields_fn fn,
		     void *arg, struct bl_struct_dec *s)
{
	struct bl_struct_dec own;
	struct bl_iter t = *it;
	int ret;

	if (!fn)
		return -EINVAL;
	if (!s)
		s = &own;
	ret = bl_decode_start(&t, v, s);
	if (ret)
		return ret;
	ret = fn(&t, s->struct_v, arg);
	if (!ret)
		ret = bl_decode_finish(&t, s);
	if (!ret)
		*it = t;
	return ret;
}

int bl_decode_struct_msg(const struct bl_struct_dec *s, char *buf,
			 size_t size)
{
	return snprintf(buf, size,
			"decoder v%u cannot decode v%u (needs v%u or newer)",
			(unsigned)s->decoder_v, (unsigned)s->struct_v,
			(unsigned)s->struct_compat);
}

/* ---- sequences -------------------------------------------------------- */

int bl_encode_seq(struct bl_list *l, size_t n, bl_encode_item_fn fn,
		  void *arg)
{
	size_t start = bl_list_length(l);
	int ret;

	if (n > UINT32_MAX)
		return -E2BIG;
	if (!fn && n)
		return -EINVAL;
	ret = bl_encode_u32(l, (uint32_t)n);
	for (size_t i = 0; !ret && i < n; i++)
		ret = fn(l, i, arg);
	if (ret && bl_list_length(l) > start) {
		int r = bl_list_splice(l, start, bl_list_length(l) - start,
				       NULL);

		BL_ASSERT(!r);	/* a tail cut cannot fail */
		(void)r;
	}
	return ret;
}

int bl_decode_seq(struct bl_iter *it, bl_decode_item_fn fn, void *arg,
		  uint32_t *count)
{
	struct bl_iter t = *it;
	uint32_t n;
	int ret;

	if (!fn)
		return -EINVAL;
	ret = bl_decode_u32(&t, &n);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < n; i++) {
		ret = fn(&t, i, n, arg);
		if (ret)
			return ret;
	}
	if (count)
		*count = n;
	*it = t;
	return 0;
}
