/* SPDX-License-Identifier: MIT */
/* ptr.c - slices over raws. */
#include "raw_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <bufferlist/ptr.h>
#include <errno.h>

/* @p covers the first @len bytes of the new raw @r (NULL: out of memory). */
static int cover_new(struct bl_ptr *p, struct bl_raw *r, size_t len)
{
	if (!r)
		return -ENOMEM;
	p->raw = r;
	p->off = 0;
	p->len = len;
	return 0;
}

int bl_ptr_alloc(struct bl_ptr *p, size_t len)
{
	return cover_new(p, bl_raw_create(len), len);
}

int bl_ptr_alloc_aligned(struct bl_ptr *p, size_t len, size_t align)
{
	if (!bl__is_pow2(align))
		return -EINVAL;
	return cover_new(p, bl_raw_create_aligned(len, align), len);
}

int bl_ptr_reserve(struct bl_ptr *p, size_t cap)
{
	return cover_new(p, bl_raw_create_empty(cap), 0);
}

void bl_ptr_from_raw(struct bl_ptr *p, struct bl_raw *r)
{
	p->raw = r;
	p->off = 0;
	p->len = r ? bl__raw_used(r) : 0;
}

int bl_ptr_from_seg(struct bl_ptr *p, const struct bl_seg *seg)
{
	if (!p || !seg || (!seg->raw && seg->len))
		return -EINVAL;
	if (!seg->raw) {
		*p = (struct bl_ptr)BL_PTR_INIT;
		return 0;
	}
	/* a segment built by hand may point anywhere */
	if (!bl__raw_covers_at(seg->raw, seg->data, seg->len))
		return -ERANGE;
	p->raw = bl__raw_get(seg->raw);
	p->off = (size_t)(seg->data - bl__raw_data(seg->raw));
	p->len = seg->len;
	return 0;
}

int bl_ptr_slice(struct bl_ptr *dst, const struct bl_ptr *src, size_t off,
		 size_t len)
{
	struct bl_raw *r = src->raw;

	if (!r && src->len)
		return -EINVAL;	/* a hand-built slice with bytes and no raw */
	if (r && !bl__raw_covers(r, src->off, src->len))
		return -ERANGE;	/* ... or reaching past its raw */
	if (off > src->len || len > src->len - off)
		return -ERANGE;
	if (dst != src && r)
		bl__raw_get(r);
	dst->raw = r;
	dst->off = src->off + off;
	dst->len = len;
	return 0;
}

void bl_ptr_copy(struct bl_ptr *dst, const struct bl_ptr *src)
{
	if (src->raw)
		bl__raw_get(src->raw);
	*dst = *src;
}

void bl_ptr_release(struct bl_ptr *p)
{
	if (!p)
		return;
	if (p->raw)
		bl__raw_put(p->raw);
	p->raw = NULL;
	p->off = 0;
	p->len = 0;
}

char *bl_ptr_data(const struct bl_ptr *p)
{
	return p->raw ? bl__raw_data(p->raw) + p->off : NULL;
}

size_t bl_ptr_unused_tail(const struct bl_ptr *p)
{
	const struct bl_raw *r = p->raw;
	size_t used;

	if (!r || !bl__raw_slice_grows(r))
		return 0;
	used = bl__raw_used(r);
	if (p->off + p->len != used)
		return 0;
	return bl__raw_len(r) - used;
}

int bl_ptr_append(struct bl_ptr *p, const void *src, size_t len)
{
	struct bl_raw *r = p->raw;
	size_t end;

	if (!src && len)
		return -EINVAL;
	if (r && bl__raw_readonly(r))
		return -EROFS;
	if (!len)
		return 0;
	if (!r || !bl__raw_slice_grows(r))
		return -ENOSPC;
	end = p->off + p->len;
	if (bl__raw_grow_at(r, end, len))
		return -ENOSPC;
	memcpy(bl__raw_data(r) + end, src, len);
	p->len += len;
	bl__count_copy(len);
	return 0;
}
