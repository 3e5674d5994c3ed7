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
	p->off = (size_t)(seg->data - seg->raw->data);
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
	return p->raw ? p->raw->data + p->off : NULL;
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
	return r->len - used;
}

int bl_ptr_append(struct bl_ptr *p, const void *src, size_t len)
{
	struct bl_raw *r = p->raw;
	size_t end, used;

	if (!src && len)
		return -EINVAL;
	if (r && bl__raw_readonly(r))
		return -EROFS;
	if (!len)
		return 0;
	if (!r || !bl__raw_slice_grows(r))
		return -ENOSPC;
	/*
	 * Only the slice ending at the frontier may grow, and the frontier
	 * moves with it: bytes that another slice covers are never written,
	 * so no crc cache can go stale here.  With one reference (read with
	 * acquire: whoever dropped theirs did so after their last move of
	 * the frontier) nobody else can move it and a plain store does.
	 * Otherwise slices in other threads may end at the same frontier:
	 * the compare-and-swap claims the bytes for one of them, and the
	 * others find the frontier moved.
	 */
	end = p->off + p->len;
	if (atomic_load_explicit(&r->nref, memory_order_acquire) == 1) {
		used = bl__raw_used(r);
		if (end != used || len > r->len - used)
			return -ENOSPC;
		bl__raw_set_used(r, end + len);
	} else {
		used = end;
		do {
			if (used != end || len > r->len - used)
				return -ENOSPC;
		} while (!atomic_compare_exchange_weak_explicit(
				&r->used, &used, end + len,
				memory_order_relaxed, memory_order_relaxed));
	}
	bl__stat_adds(&bl__pool_stats(r->pool)->unused, -(int64_t)len);
	memcpy(r->data + end, src, len);
	p->len += len;
	bl__count_copy(len);
	return 0;
}
