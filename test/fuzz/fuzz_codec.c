/* SPDX-License-Identifier: MIT */
/*
 * fuzz_codec.c - every decoder of codec.h on arbitrary bytes in arbitrary
 * segmentation, checked against a reference decoder over a flat copy.
 *
 * Input layout:
 *   byte 0   low 4 bits: number of cut bytes; high 4 bits: segment kinds
 *   byte 1   low 5 bits: length of the decode program
 *   cuts     each the size of the next segment minus 1 (used in turn)
 *   program  each byte picks the next decoder (used in turn)
 *   rest     the bytes to decode
 *
 * Segments are mostly claimed raws over malloc'd blocks of exactly their
 * size, so ASan sees any read past a segment's end (a combined raw keeps
 * its header after the data, where an overread would go unnoticed).
 *
 * Checks: each result (value, error code, new offset) equals the
 * reference's; a failed decode leaves the cursor (the whole struct) and
 * the output list exactly as they were; re-encoding a decoded value gives
 * the bytes it came from (for varints: the same value, and the same bytes
 * when the input was canonical); decode_bytes shares slices of the input's
 * raws and never copies.
 *
 * Defines LLVMFuzzerTestOneInput only (see fuzz_list.c).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <bufferlist.h>
#include "list_int.h"
#include "fuzz_util.h"

#define MAXSTEPS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Appends @len bytes of @d to @l as one segment of the kind @kind picks. */
static void add_segment(struct bl_list *l, const uint8_t *d, size_t len,
			unsigned kind)
{
	struct bl_ptr p = BL_PTR_INIT;

	switch (kind % 4) {
	case 0:
	case 1:
		append_exact(l, d, len);
		break;
	case 2:
		/* through the append buffer: neighbours may coalesce */
		CHECK(bl_list_append(l, d, len) == 0);
		break;
	default:
		CHECK(bl_ptr_alloc(&p, len) == 0);
		memcpy(bl_ptr_data(&p), d, len);
		CHECK(bl_list_append_ptr(l, &p) == 0);
		bl_ptr_release(&p);
		break;
	}
}

/* Every byte of @sub lies in one of @l's segments (shared, not copied). */
static bool shares(const struct bl_list *sub, const struct bl_list *l)
{
	struct iovec s[8], v[64];
	size_t pos = 0;
	int ns;

	while ((ns = bl_list_to_iovec(sub, pos, s, 8)) > 0) {
		for (int i = 0; i < ns; i++) {
			uintptr_t a = (uintptr_t)s[i].iov_base;
			size_t lpos = 0;
			bool in = false;
			int nv;

			while (!in && (nv = bl_list_to_iovec(l, lpos, v, 64)) > 0) {
				for (int j = 0; j < nv; j++) {
					uintptr_t b = (uintptr_t)v[j].iov_base;

					if (a >= b && a + s[i].iov_len <=
						      b + v[j].iov_len)
						in = true;
					lpos += v[j].iov_len;
				}
			}
			if (!in)
				return false;
			pos += s[i].iov_len;
		}
	}
	return true;
}

/* ---- the reference decoders over a flat buffer ----------------------------- */

static int ref_fixed(const uint8_t *f, size_t n, size_t pos, unsigned w,
		     uint64_t *v)
{
	if (w > n - pos)
		return -ERANGE;
	*v = 0;
	for (unsigned i = w; i-- > 0;)
		*v = *v << 8 | f[pos + i];
	return (int)w;
}

/* Unsigned LEB128 as the header states it: 10 bytes at most, 64 bits. */
static int ref_varint(const uint8_t *f, size_t n, size_t pos, uint64_t *v)
{
	*v = 0;
	for (unsigned i = 0; i < 10; i++) {
		uint8_t b;

		if (pos + i >= n)
			return -ERANGE;
		b = f[pos + i];
		if (i == 9 && b > 1)
			return -EBADMSG;
		*v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return (int)i + 1;
	}
	return -EBADMSG;
}

/* ---- one decode step ------------------------------------------------------- */

static void same_iter(const struct bl_iter *a, const struct bl_iter *b)
{
	CHECK(a->_l == b->_l && a->_chunk == b->_chunk && a->_idx == b->_idx &&
	      a->_p == b->_p && a->_end == b->_end &&
	      a->_end_off == b->_end_off);
}

/*
 * Runs decoder @op at the cursor; returns the bytes it consumed, or a
 * negative errno (then the cursor and @out were checked unchanged).
 */
static int decode_one(struct bl_iter *it, const struct bl_list *l,
		      const uint8_t *f, size_t n, uint8_t op,
		      struct bl_list *out)
{
	static const unsigned width[4] = { 1, 2, 4, 8 };
	size_t pos = bl_iter_offset(it), outlen = bl_list_length(out);
	unsigned outseg = bl_list_num_buffers(out);
	struct bl_iter save = *it;
	struct bl_list enc;
	uint64_t v = 0, want = 0;
	int ret, exp;

	bl_list_init(&enc);
	switch (op % 6) {
	case 0: case 1: case 2: case 3: {
		unsigned w = width[op % 6];

		exp = ref_fixed(f, n, pos, w, &want);
		if (w == 1) {
			uint8_t x = 0;

			ret = bl_decode_u8(it, &x);
			v = x;
			CHECK(ret || bl_encode_u8(&enc, x) == 0);
		} else if (w == 2) {
			uint16_t x = 0;

			ret = bl_decode_u16(it, &x);
			v = x;
			CHECK(ret || bl_encode_u16(&enc, x) == 0);
		} else if (w == 4) {
			uint32_t x = 0;

			ret = bl_decode_u32(it, &x);
			v = x;
			CHECK(ret || bl_encode_u32(&enc, x) == 0);
		} else {
			ret = bl_decode_u64(it, &v);
			CHECK(ret || bl_encode_u64(&enc, v) == 0);
		}
		CHECK(ret == (exp < 0 ? exp : 0));
		if (!ret) {
			CHECK(v == want);
			CHECK(list_is(&enc, f + pos, (size_t)exp));
		}
		break;
	}
	case 4: {
		struct bl_iter t;
		uint64_t again;

		exp = ref_varint(f, n, pos, &want);
		ret = bl_decode_varint(it, &v);
		CHECK(ret == (exp < 0 ? exp : 0));
		if (ret)
			break;
		CHECK(v == want);
		CHECK(bl_encode_varint(&enc, v) == 0);
		/* canonical input (no trailing zero group) re-encodes exactly */
		if (exp == 1 || f[pos + (size_t)exp - 1] != 0)
			CHECK(list_is(&enc, f + pos, (size_t)exp));
		CHECK(bl_iter_init(&t, &enc, 0) == 0);
		CHECK(bl_decode_varint(&t, &again) == 0 && again == v);
		CHECK(bl_iter_remaining(&t) == 0);
		break;
	}
	default: {
		uint64_t len;

		exp = ref_fixed(f, n, pos, 4, &len);
		if (exp >= 0 && len > n - pos - 4)
			exp = -ERANGE;
		ret = bl_decode_bytes(it, out);
		CHECK(ret == (exp < 0 ? exp : 0));
		if (ret)
			break;
		exp = 4 + (int)len;
		CHECK(bl_list_length(out) == outlen + len);
		{
			struct bl_list got;

			bl_list_init(&got);
			CHECK(bl_list_substr_of(&got, out, outlen, len) == 0);
			CHECK(list_is(&got, f + pos + 4, len));
			CHECK(shares(&got, l));
			CHECK(bl_encode_list(&enc, &got) == 0);
			CHECK(list_is(&enc, f + pos, (size_t)exp));
			bl_list_clear(&got);
		}
		break;
	}
	}
	bl_list_clear(&enc);
	if (ret) {
		same_iter(it, &save);
		CHECK(bl_list_length(out) == outlen &&
		      bl_list_num_buffers(out) == outseg);
		return ret;
	}
	CHECK(bl_iter_offset(it) == pos + (size_t)exp);
	CHECK(bl_iter_remaining(it) == n - pos - (size_t)exp);
	return exp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *cuts, *prog, *f;
	size_t ncut, nprog, n, pos = 0;
	unsigned kinds, step = 0;
	struct bl_list l, out;
	struct bl_iter it;

	if (size < 2)
		return 0;
	ncut = data[0] & 15;
	kinds = data[0] >> 4;
	nprog = data[1] & 31;
	if (size < 2 + ncut + nprog)
		return 0;
	cuts = data + 2;
	prog = cuts + ncut;
	f = prog + nprog;
	n = size - 2 - ncut - nprog;

	bl_list_init(&l);
	bl_list_init(&out);
	for (size_t k = 0; pos < n; k++) {
		size_t seg = ncut ? (size_t)cuts[k % ncut] + 1 : n;

		if (seg > n - pos)
			seg = n - pos;
		add_segment(&l, f + pos, seg, kinds + (unsigned)k * (kinds | 1));
		pos += seg;
	}
	CHECK(list_is(&l, f, n));

	CHECK(bl_iter_init(&it, &l, n + 1) == -ERANGE);
	CHECK(bl_iter_init(&it, &l, 0) == 0);
	while (bl_iter_remaining(&it) && step < MAXSTEPS) {
		uint8_t op = nprog ? prog[step % nprog] : (uint8_t)step;
		int r = decode_one(&it, &l, f, n, op, &out);

		step++;
		/* after an error, skip a byte so the walk goes on */
		if (r < 0)
			CHECK(bl_iter_advance(&it, 1) == 0);
		if (bl_list_num_buffers(&out) > 256)
			bl_list_clear(&out);
	}
	/* at the end, every decoder reports truncation and moves nothing */
	for (uint8_t op = 0; op < 6; op++)
		CHECK(decode_one(&it, &l, f, n, op, &out) == -ERANGE);
	bl_list_clear(&out);
	bl_list_clear(&l);
	return 0;
}
