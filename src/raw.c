/* SPDX-License-Identifier: MIT */
/*
 * raw.c - reference-counted blocks.
 *
 * Cost of a combined raw's life: one allocation, one free, no atomic
 * read-modify-write (the count starts at 1 with a plain store and the last
 * release of a count of 1 frees without one), two per-thread counter
 * stores.
 */
#include <errno.h>
#include <stdlib.h>
#include "internal.h"

_Static_assert(sizeof(struct bl_raw) <= 128, "raw header grew past 2 lines");

static void raw_init(struct bl_raw *r, const struct bl__allocator *al,
		     enum bl__raw_kind kind, char *data, size_t len,
		     size_t used)
{
	atomic_init(&r->nref, 1);
	r->kind = kind;
	r->readonly = kind == BL__RAW_STATIC;
	r->_pad0 = 0;
	r->data = data;
	r->len = len;
	r->used = used;
	r->al = al;
	atomic_flag_clear_explicit(&r->crc_lock, memory_order_relaxed);
	r->crc_valid = false;
	bl__stat_add(&bl__tstats()->raws_created, 1);
}

/* Header after the data, 8-byte aligned; the block starts 64-aligned. */
static inline size_t combined_hdr_off(size_t len)
{
	return bl__align_up(len, 8);
}

struct bl_raw *bl__raw_create_combined(size_t len, size_t used)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_raw *r;
	size_t hoff;
	char *base;

	if (len > SIZE_MAX / 2)
		return NULL;
	hoff = combined_hdr_off(len);
	base = bl__alloc(al, hoff + sizeof(struct bl_raw), BL_CACHELINE);
	if (!base)
		return NULL;
	r = (struct bl_raw *)(base + hoff);
	raw_init(r, al, BL__RAW_COMBINED, base, len, used);
	return r;
}

struct bl_raw *bl_raw_create(size_t len)
{
	return bl__raw_create_combined(len, len);
}

struct bl_raw *bl_raw_create_empty(size_t cap)
{
	return bl__raw_create_combined(cap, 0);
}

struct bl_raw *bl_raw_create_aligned(size_t len, size_t align)
{
	const struct bl__allocator *al;
	struct bl_raw *r;
	char *data;

	if (!bl__is_pow2(align))
		return NULL;
	if (align <= BL_CACHELINE)
		return bl__raw_create_combined(len, len);
	if (len > SIZE_MAX / 2)
		return NULL;
	/*
	 * Page-aligned data gets its own block so that a 4 MiB request is
	 * exactly 4 MiB of pages; the small header comes from elsewhere.
	 */
	al = bl__allocator_current();
	r = bl__alloc(al, sizeof(*r), _Alignof(struct bl_raw));
	if (!r)
		return NULL;
	data = bl__alloc(al, len ? len : 1, align);
	if (!data) {
		bl__free(al, r, sizeof(*r), _Alignof(struct bl_raw));
		return NULL;
	}
	raw_init(r, al, BL__RAW_ALIGNED, data, len, len);
	r->u.mem.size = len ? len : 1;
	r->u.mem.align = align;
	return r;
}

static struct bl_raw *raw_create_external(enum bl__raw_kind kind, void *data,
					  size_t len)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_raw *r = bl__alloc(al, sizeof(*r), _Alignof(struct bl_raw));

	if (!r)
		return NULL;
	raw_init(r, al, kind, data, len, len);
	return r;
}

struct bl_raw *bl_raw_create_static(const void *data, size_t len)
{
	return raw_create_external(BL__RAW_STATIC, (void *)data, len);
}

struct bl_raw *bl_raw_claim(void *data, size_t len, bl_free_fn fn,
			    void *opaque)
{
	struct bl_raw *r = raw_create_external(BL__RAW_CLAIMED, data, len);

	if (!r)
		return NULL;
	r->u.claim.fn = fn;
	r->u.claim.opaque = opaque;
	return r;
}

void bl__raw_free(struct bl_raw *r)
{
	const struct bl__allocator *al = r->al;

	bl__stat_add(&bl__tstats()->raws_freed, 1);
	switch (r->kind) {
	case BL__RAW_COMBINED:
		bl__free(al, r->data, (size_t)((char *)r - r->data) +
			 sizeof(*r), BL_CACHELINE);
		return;
	case BL__RAW_ALIGNED:
		bl__free(al, r->data, r->u.mem.size, r->u.mem.align);
		break;
	case BL__RAW_CLAIMED:
		if (r->u.claim.fn)
			r->u.claim.fn(r->data, r->len, r->u.claim.opaque);
		else
			free(r->data);
		break;
	default:
		break;
	}
	bl__free(al, r, sizeof(*r), _Alignof(struct bl_raw));
}

struct bl_raw *bl_raw_get(struct bl_raw *r)
{
	return bl__raw_get(r);
}

void bl_raw_put(struct bl_raw *r)
{
	if (r)
		bl__raw_put(r);
}

char *bl_raw_data(const struct bl_raw *r)
{
	return r->data;
}

size_t bl_raw_length(const struct bl_raw *r)
{
	return r->len;
}

unsigned bl_raw_nref(const struct bl_raw *r)
{
	return atomic_load_explicit(&((struct bl_raw *)r)->nref,
				    memory_order_relaxed);
}

bool bl_raw_is_static(const struct bl_raw *r)
{
	return r->readonly;
}

size_t bl_raw_alignment(const struct bl_raw *r)
{
	uintptr_t a = (uintptr_t)r->data;

	if (!a)
		return 4096;
	a &= -a;
	return a > 4096 ? 4096 : (size_t)a;
}

/* ---- crc cache ------------------------------------------------------------ */

/* Below this a crc costs less than taking the cache's lock twice. */
#define CRC_CACHE_MIN 256

static inline void crc_lock(struct bl_raw *r)
{
	while (atomic_flag_test_and_set_explicit(&r->crc_lock,
						 memory_order_acquire))
		bl__cpu_relax();
}

static inline void crc_unlock(struct bl_raw *r)
{
	atomic_flag_clear_explicit(&r->crc_lock, memory_order_release);
}

uint32_t bl__raw_crc32c(struct bl_raw *r, size_t off, size_t len,
			uint32_t seed)
{
	uint32_t v, cseed = 0;
	bool hit;

	if (len < CRC_CACHE_MIN)
		return bl_crc32c(seed, r->data + off, len);
	crc_lock(r);
	hit = r->crc_valid && r->crc_off == off && r->crc_len == len;
	if (hit) {
		v = r->crc_val;
		cseed = r->crc_seed;
	}
	crc_unlock(r);
	if (hit)
		/* crc is linear in the seed: shift the difference. */
		return seed == cseed ? v : v ^ bl_crc32c_zeros(seed ^ cseed, len);
	v = bl_crc32c(seed, r->data + off, len);
	crc_lock(r);
	r->crc_valid = true;
	r->crc_off = off;
	r->crc_len = len;
	r->crc_seed = seed;
	r->crc_val = v;
	crc_unlock(r);
	return v;
}

void bl_raw_invalidate_crc(struct bl_raw *r)
{
	crc_lock(r);
	r->crc_valid = false;
	crc_unlock(r);
}
