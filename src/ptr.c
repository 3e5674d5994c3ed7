/* SPDX-License-Identifier: MIT */
/* ptr.c - slices over raws. */
#include "raw_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <bufferlist/ptr.h>
#include <errno.h>

int bl_ptr_alloc(struct bl_ptr *p, size_t len)
{
	struct bl_raw *r = bl_raw_create(len);

	if (!r)
		return -ENOMEM;
	p->raw = r;
	p->off = 0;
	p->len = len;
	return 0;
}

int bl_ptr_alloc_aligned(struct bl_ptr *p, size_t len, size_t align)
{
	struct bl_raw *r;

	if (!bl__is_pow2(align))
		return -EINVAL;
	r = bl_raw_create_aligned(len, align);
	if (!r)
		return -ENOMEM;
	p->raw = r;
	p->off = 0;
	p->len = len;
	return 0;
}

int bl_ptr_reserve(struct bl_ptr *p, size_t cap)
{
	struct bl_raw *r = bl_raw_create_empty(cap);

	if (!r)
		return -ENOMEM;
	p->raw = r;
	p->off = 0;
	p->len = 0;
	return 0;
}

void bl_ptr_from_raw(struct bl_ptr *p, struct bl_raw *r)
{
	p->raw = r;
	p->off = 0;
	p->len = r ? r->used : 0;
}

int bl_ptr_slice(struct bl_ptr *dst, const struct bl_ptr *src, size_t off,
		 size_t len)
{
	struct bl_raw *r = src->raw;

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
	if (p->raw)
		bl__raw_put(p->raw);
	p->raw = NULL;
	p->off = 0;
	p->len = 0;
}

char *bl_ptr_data(const struct bl_ptr *p)
{
	return p->raw ? p->raw->data + p->off : NULL;
}

size_t bl_ptr_unused_tail(const struct bl_ptr *p)
{
	const struct bl_raw *r = p->raw;

	if (!r || r->readonly || p->off + p->len != r->used)
		return 0;
	return r->len - r->used;
}

int bl_ptr_append(struct bl_ptr *p, const void *src, size_t len)
{
	struct bl_raw *r = p->raw;

	if (r && r->readonly)
		return -EROFS;
	if (len > bl_ptr_unused_tail(p))
		return len ? -ENOSPC : 0;
	if (!len)
		return 0;
	/*
	 * Only the slice ending at the frontier may grow, and the frontier
	 * moves with it: bytes that another slice covers are never written,
	 * so no crc cache can go stale here.
	 */
	memcpy(r->data + r->used, src, len);
	bl__raw_advance(r, len);
	p->len += len;
	bl__count_copy(len);
	return 0;
}
