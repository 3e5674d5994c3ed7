/* SPDX-License-Identifier: MIT */
/*
 * raw.c - reference-counted blocks.
 *
 * Cost of a combined raw's life: one allocation, one free, no atomic
 * read-modify-write (the count starts at 1 with a plain store and the last
 * release of a count of 1 frees without one), two per-thread counter
 * stores.
 */
#include "raw_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <stdlib.h>
#include <bufferlist/crc32c.h>

_Static_assert(sizeof(struct bl_raw) <= 128, "raw header grew past 2 lines");
_Static_assert(sizeof(struct bl_raw) == BL__RAW_HDR_BYTES,
	       "the pool's cache sizes its blocks with BL__RAW_HDR_BYTES");

__thread uint8_t bl__raw_local_tls __attribute__((tls_model("initial-exec")));
#ifdef BL_DEBUG
__thread uintptr_t bl__raw_thread_id __attribute__((tls_model("initial-exec")));
static _Atomic uintptr_t raw_threads;

uintptr_t bl__raw_thread_number(void)
{
	bl__raw_thread_id = atomic_fetch_add_explicit(&raw_threads, 1,
						      memory_order_relaxed) + 1;
	return bl__raw_thread_id;
}
#endif

static inline struct bl_pool *pool_or_default(struct bl_pool *p)
{
	return p ? p : &bl__pools[0];
}

/* The allocator for a new raw of pool @p: the pool's own, else the one in force. */
static inline const struct bl__allocator *pool_allocator(struct bl_pool *p)
{
	return p->al ? p->al : bl__allocator_current();
}

static inline void raw_init(struct bl__tstats *t, struct bl_raw *r,
			    unsigned pool, const struct bl__allocator *al,
			    enum bl__raw_kind kind, char *data, size_t len,
			    size_t used)
{
	struct bl__pool_tstats *ps = &t->pool[pool];

	atomic_init(&r->nref, 1);
	r->kind = kind;
	r->flags = (uint8_t)((kind == BL__RAW_STATIC ? BL__RAW_RDONLY : 0) |
			     bl__raw_local_tls);
#ifdef BL_DEBUG
	r->owner = bl__raw_thread();
#endif
	r->pool = (uint8_t)pool;
	r->cls = BL__NOCLASS;
	r->data = data;
	r->len = len;
	atomic_init(&r->used, used);
	r->al = al;
	atomic_flag_clear_explicit(&r->crc_lock, memory_order_relaxed);
	atomic_store_explicit(&r->crc_seq, 0, memory_order_relaxed);
	atomic_store_explicit(&r->crc_valid, false, memory_order_relaxed);
	bl__stat_adds(&ps->created, 1);
	bl__stat_adds(&ps->bytes, (int64_t)len);
	if (used != len)
		bl__stat_adds(&ps->unused, (int64_t)(len - used));
}

/*
 * Combined layout: data first (64-byte aligned, as the block is), the
 * header right after it at an 8-byte boundary.  A small raw of the default
 * allocator gets a block of its size class, from the thread's cache when
 * one is there; the header then sits after the class's capacity so that
 * any block of the class fits any request of the class.
 */
static inline __attribute__((always_inline)) struct bl_raw *
create_combined(struct bl_pool *p, size_t len, size_t used)
{
	struct bl__tstats *t = bl__tstats();
	const struct bl__allocator *al;
	struct bl_raw *r;
	unsigned cls;
	size_t cap;
	char *base;

	p = pool_or_default(p);
	al = pool_allocator(p);
	cls = bl__size_class(len);
	if (bl__likely(al == &bl__default_allocator && cls != BL__NOCLASS &&
		       atomic_load_explicit(&bl__cache_on,
					    memory_order_relaxed))) {
		cap = bl__class_size(cls);
		base = bl__cache_get(t, cls);
		if (!base)
			base = bl__alloc(al, bl__class_block_size(cls),
					 BL_CACHELINE);
	} else {
		if (len > SIZE_MAX / 2)
			return NULL;
		cls = BL__NOCLASS;
		cap = len;
		base = bl__alloc(al, bl__align_up(cap, 8) + sizeof(struct bl_raw),
				 BL_CACHELINE);
	}
	if (!base)
		return NULL;
	r = (struct bl_raw *)(base + bl__align_up(cap, 8));
	raw_init(t, r, p->id, al, BL__RAW_COMBINED, base, len, used);
	r->cls = (uint8_t)cls;
	return r;
}

struct bl_raw *bl__raw_create_combined(struct bl_pool *p, size_t len,
				       size_t used)
{
	return create_combined(p, len, used);
}

struct bl_raw *bl__raw_create_owned(struct bl_pool *p, size_t cap)
{
	struct bl_raw *r = create_combined(p, cap, 0);

	if (r)
		r->flags |= BL__RAW_OWNED;
	return r;
}

/*
 * The common case on its own: a raw of the default pool and allocator
 * from a non-empty class of this thread's cache.  It calls nothing, so it
 * needs no stack frame (the general path's calls cost ~18 instructions of
 * register saves even when they are not taken); anything else returns
 * NULL and takes the general path, which checks everything again.
 */
static inline __attribute__((always_inline)) struct bl_raw *
create_cached(size_t len, size_t used)
{
	struct bl__tstats *t = bl__tstats_tls;
	struct bl__tcache_class *c;
	struct bl_raw *r;
	unsigned cls;
	char *base;

	if (bl__unlikely(!t || len > BL_POOL_CACHE_MAX || bl__pools[0].al ||
			 bl__allocator_current() != &bl__default_allocator ||
			 !atomic_load_explicit(&bl__cache_on,
					       memory_order_relaxed)))
		return NULL;
	cls = bl__size_class(len);
	c = &t->cache[cls];
	base = c->head;
	if (bl__unlikely(!base))
		return NULL;
	c->head = *(void **)base;
	c->n--;
	bl__cache_unpoison(base, cls);
	/* class sizes are multiples of 8: the header goes right after */
	r = (struct bl_raw *)(base + bl__class_size(cls));
	raw_init(t, r, 0, &bl__default_allocator,
		 BL__RAW_COMBINED, base, len, used);
	r->cls = (uint8_t)cls;
	return r;
}

static __attribute__((noinline)) struct bl_raw *
create_combined_slow(struct bl_pool *p, size_t len, size_t used)
{
	return create_combined(p, len, used);
}

struct bl_raw *bl_raw_create(size_t len)
{
	struct bl_raw *r = create_cached(len, len);

	return bl__likely(r != NULL) ? r : create_combined_slow(NULL, len, len);
}

struct bl_raw *bl_raw_create_in(struct bl_pool *p, size_t len)
{
	return create_combined(p, len, len);
}

struct bl_raw *bl_raw_create_empty(size_t cap)
{
	struct bl_raw *r = create_cached(cap, 0);

	return bl__likely(r != NULL) ? r : create_combined_slow(NULL, cap, 0);
}

struct bl_raw *bl_raw_create_aligned_in(struct bl_pool *p, size_t len,
					size_t align)
{
	const struct bl__allocator *al;
	struct bl_raw *r;
	char *data;

	if (!bl__is_pow2(align))
		return NULL;
	if (align <= BL_CACHELINE)
		return bl__raw_create_combined(p, len, len);
	if (len > SIZE_MAX / 2)
		return NULL;
	/*
	 * Page-aligned data gets its own block so that a 4 MiB request is
	 * exactly 4 MiB of pages; the small header comes from elsewhere.
	 */
	p = pool_or_default(p);
	al = pool_allocator(p);
	r = bl__alloc(al, sizeof(*r), _Alignof(struct bl_raw));
	if (!r)
		return NULL;
	data = bl__alloc(al, len ? len : 1, align);
	if (!data) {
		bl__free(al, r, sizeof(*r), _Alignof(struct bl_raw));
		return NULL;
	}
	raw_init(bl__tstats(), r, p->id, al, BL__RAW_ALIGNED, data, len, len);
	r->u.mem.size = len ? len : 1;
	r->u.mem.align = align;
	return r;
}

struct bl_raw *bl_raw_create_aligned(size_t len, size_t align)
{
	return bl_raw_create_aligned_in(NULL, len, align);
}

static struct bl_raw *raw_create_external(enum bl__raw_kind kind, void *data,
					  size_t len)
{
	struct bl_pool *p = &bl__pools[0];
	const struct bl__allocator *al = pool_allocator(p);
	struct bl_raw *r = bl__alloc(al, sizeof(*r), _Alignof(struct bl_raw));

	if (!r)
		return NULL;
	raw_init(bl__tstats(), r, p->id, al, kind, data, len, len);
	return r;
}

struct bl_raw *bl_raw_create_static(const void *data, size_t len)
{
	if (!data && len)
		return NULL;
	return raw_create_external(BL__RAW_STATIC, (void *)data, len);
}

struct bl_raw *bl_raw_claim(void *data, size_t len, bl_free_fn fn,
			    void *opaque)
{
	struct bl_raw *r;

	if (!data && len)
		return NULL;
	r = raw_create_external(BL__RAW_CLAIMED, data, len);
	if (!r)
		return NULL;
	r->u.claim.fn = fn;
	r->u.claim.opaque = opaque;
	return r;
}

/*
 * The general release; bl__raw_free() below takes the common case, a
 * whole cached-class raw going back to a cache with room, without a
 * stack frame, as create_cached() does.
 */
static __attribute__((noinline)) void raw_free_slow(struct bl_raw *r)
{
	const struct bl__allocator *al = r->al;
	struct bl__tstats *t = bl__tstats();
	struct bl__pool_tstats *ps = &t->pool[r->pool];

	bl__stat_adds(&ps->freed, 1);
	bl__stat_adds(&ps->bytes, -(int64_t)r->len);
	if (bl__raw_used(r) != r->len)
		bl__stat_adds(&ps->unused, -(int64_t)(r->len - bl__raw_used(r)));
	switch (r->kind) {
	case BL__RAW_COMBINED: {
		size_t size = (size_t)((char *)r - r->data) + sizeof(*r);

		if (r->cls != BL__NOCLASS && bl__cache_put(t, r->cls, r->data))
			return;
		bl__free(al, r->data, size, BL_CACHELINE);
		return;
	}
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

void bl__raw_free(struct bl_raw *r)
{
	struct bl__tstats *t = bl__tstats_tls;
	unsigned cls = r->cls;

	/* the count of a released raw is 0: see bl__raw_put() */
	atomic_store_explicit(&r->nref, 0, memory_order_relaxed);
	/* cls is set only on combined raws of the default allocator */
	if (bl__likely(t && cls != BL__NOCLASS && bl__raw_used(r) == r->len &&
		       !t->no_cache &&
		       atomic_load_explicit(&bl__cache_on,
					    memory_order_relaxed))) {
		struct bl__tcache_class *c = &t->cache[cls];

		if (bl__likely(c->n < bl__tcache_cap[cls])) {
			struct bl__pool_tstats *ps = &t->pool[r->pool];

			bl__stat_adds(&ps->freed, 1);
			bl__stat_adds(&ps->bytes, -(int64_t)r->len);
			*(void **)r->data = c->head;
			c->head = r->data;
			c->n++;
			bl__cache_poison(r->data, cls);
			return;
		}
	}
	raw_free_slow(r);
}

bool bl_raw_set_thread_local(bool on)
{
	bool was = bl__raw_local_tls != 0;

	bl__raw_local_tls = on ? BL__RAW_LOCAL : 0;
	return was;
}

bool bl_raw_is_thread_local(const struct bl_raw *r)
{
	return r->flags & BL__RAW_LOCAL;
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

struct bl_pool *bl_raw_pool(const struct bl_raw *r)
{
	return &bl__pools[r->pool];
}

bool bl_raw_is_static(const struct bl_raw *r)
{
	return bl__raw_readonly(r);
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

/* Below this a crc costs less than looking the cache up. */
#define CRC_CACHE_MIN 256

#define RLX memory_order_relaxed

/*
 * Writes the cache entry.  @wait: spin for the writer's lock (an
 * invalidation must not be lost); otherwise a busy lock means another
 * thread is storing an entry of its own, and skipping ours is harmless.
 */
static void crc_store(struct bl_raw *r, bool valid, size_t off, size_t len,
		      uint32_t seed, uint32_t val, bool wait)
{
	uint32_t seq;

	while (atomic_flag_test_and_set_explicit(&r->crc_lock,
						 memory_order_acquire)) {
		if (!wait)
			return;
		bl__cpu_relax();
	}
	seq = atomic_load_explicit(&r->crc_seq, RLX);
	atomic_store_explicit(&r->crc_seq, seq + 1, RLX);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&r->crc_valid, valid, RLX);
	atomic_store_explicit(&r->crc_off, off, RLX);
	atomic_store_explicit(&r->crc_len, len, RLX);
	atomic_store_explicit(&r->crc_seed, seed, RLX);
	atomic_store_explicit(&r->crc_val, val, RLX);
	atomic_store_explicit(&r->crc_seq, seq + 2, memory_order_release);
	atomic_flag_clear_explicit(&r->crc_lock, memory_order_release);
}

uint32_t bl__raw_crc32c(struct bl_raw *r, size_t off, size_t len,
			uint32_t seed)
{
	uint32_t s1, v, cseed;
	bool hit;

	if (len < CRC_CACHE_MIN)
		return bl_crc32c(seed, r->data + off, len);
	s1 = atomic_load_explicit(&r->crc_seq, memory_order_acquire);
	hit = !(s1 & 1) && atomic_load_explicit(&r->crc_valid, RLX) &&
	      atomic_load_explicit(&r->crc_off, RLX) == off &&
	      atomic_load_explicit(&r->crc_len, RLX) == len;
	v = atomic_load_explicit(&r->crc_val, RLX);
	cseed = atomic_load_explicit(&r->crc_seed, RLX);
	atomic_thread_fence(memory_order_acquire);
	if (hit && atomic_load_explicit(&r->crc_seq, RLX) == s1)
		/* crc is linear in the seed: shift the difference */
		return seed == cseed ? v : v ^ bl_crc32c_zeros(seed ^ cseed, len);
	v = bl_crc32c(seed, r->data + off, len);
	crc_store(r, true, off, len, seed, v, false);
	return v;
}

void bl_raw_invalidate_crc(struct bl_raw *r)
{
	crc_store(r, false, 0, 0, 0, 0, true);
}
