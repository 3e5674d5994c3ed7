/* SPDX-License-Identifier: MIT */
/*
 * pool_int.h - the memory layer's private side (pool.c): the allocator in
 * force, the per-thread counters, the pools and the per-thread cache of
 * size-class blocks.  Includes only base_int.h.  Never installed.
 */
#ifndef BUFFERLIST_POOL_INT_H
#define BUFFERLIST_POOL_INT_H

#include "base_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <bufferlist/pool.h>

/* ---- allocators ------------------------------------------------------- */

/*
 * Every block remembers the allocator that made it, so a block is always
 * freed where it came from, even after bl_allocator_set() changed the
 * global one.  The pointer is to an immutable copy that is never freed
 * (a handful per process at most).
 */
struct bl__allocator {
	struct bl_allocator a;
};

extern _Atomic(const struct bl__allocator *) bl__current_allocator;
extern const struct bl__allocator bl__default_allocator;

static inline const struct bl__allocator *bl__allocator_current(void)
{
	return atomic_load_explicit(&bl__current_allocator,
				    memory_order_acquire);
}
void *bl__alloc(const struct bl__allocator *al, size_t size, size_t align);
void bl__free(const struct bl__allocator *al, void *p, size_t size,
	      size_t align);

/* ---- per-thread state ------------------------------------------------- */

/*
 * Per-thread state: the counters of struct bl_stats, each pool's
 * accounting, and the cache of free combined raws.  Only its own thread
 * writes it; counters use relaxed atomics written as load + store (no
 * read-modify-write) so that another thread may sum them.
 */
#define BL__NCLASS 23	/* cache size classes, 32 .. BL_POOL_CACHE_MAX */

/*
 * A pool's accounting on one thread.  "unused" (capacity past the frontier)
 * rather than "used" so that a raw handed out whole, the common case,
 * costs two counter updates to create and two to free.
 */
struct bl__pool_tstats {
	_Atomic int64_t created;
	_Atomic int64_t freed;
	_Atomic int64_t bytes;
	_Atomic int64_t unused;
};

struct bl__tcache_class {
	void *head;		/* free blocks, linked through their first word */
	uint32_t n;
};

struct bl__tstats {
	_Atomic uint64_t copied_bytes;
	_Atomic uint64_t copy_ops;
	_Atomic uint64_t cache_misses;	/* creates that went to the allocator */
	bool no_cache;			/* a thread past its destructor */
	struct bl__tcache_class cache[BL__NCLASS];
	struct bl__pool_tstats pool[BL_POOL_MAX];
};
struct bl__tstats *bl__tstats_slow(void);
extern __thread struct bl__tstats *bl__tstats_tls
	__attribute__((tls_model("initial-exec")));

static inline struct bl__tstats *bl__tstats(void)
{
	struct bl__tstats *t = bl__tstats_tls;
	return bl__likely(t != NULL) ? t : bl__tstats_slow();
}

static inline void bl__stat_add(_Atomic uint64_t *c, uint64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

static inline void bl__stat_adds(_Atomic int64_t *c, int64_t n)
{
	atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + n,
			      memory_order_relaxed);
}

/* Count a payload copy of @n bytes (n > 0). */
static inline void bl__count_copy(size_t n)
{
	struct bl__tstats *t = bl__tstats();
	bl__stat_add(&t->copied_bytes, n);
	bl__stat_add(&t->copy_ops, 1);
}

/* ---- pools ------------------------------------------------------------ */

struct bl_pool {
	char name[BL_POOL_NAME_MAX];
	uint8_t id;
	const struct bl__allocator *al;	/* NULL: the allocator in force */
};

extern struct bl_pool bl__pools[BL_POOL_MAX];
extern _Atomic bool bl__cache_on;

/* Accounting of pool @id on this thread. */
static inline struct bl__pool_tstats *bl__pool_stats(unsigned id)
{
	return &bl__tstats()->pool[id];
}

/* ---- the per-thread cache of size-class blocks ------------------------ */

#define BL__NOCLASS 0xff

/* the classes of 1..1024 bytes, by 16-byte step (class sizes are
 * multiples of 16): the sizes most raws have cost a load, not a bit scan
 * and two branches */
extern const uint8_t bl__class_by16[64];

/* Size class whose capacity holds @len, or BL__NOCLASS when too big. */
static inline unsigned bl__size_class(size_t len)
{
	unsigned k;

	if (len <= 32)
		return 0;
	if (len <= 1024)
		return bl__class_by16[(len - 1) >> 4];
	if (len > BL_POOL_CACHE_MAX)
		return BL__NOCLASS;
	/* classes 32, 48, 64, 96, 128, ...: two per power of two */
	k = 64 - __builtin_clzll(len - 1);	/* 2^k >= len, k >= 6 */
	if (len <= (3ull << (k - 2)))
		return 2 * (k - 5) - 1;
	return 2 * (k - 5);
}

/* odd classes are 3 * 2^(k-2), even ones 2^k: 32, 48, 64, 96, 128 ... */
extern const uint32_t bl__class_bytes[BL__NCLASS];

static inline size_t bl__class_size(unsigned cls)
{
	return bl__class_bytes[cls];
}

/*
 * A cached block is a combined raw of its class: the class's capacity (a
 * multiple of 16), then the raw's header.  The cache sizes, counts and
 * frees blocks without seeing the header's definition, which belongs to
 * the layer above: raw.c asserts that sizeof(struct bl_raw) is this.
 */
#ifdef BL_DEBUG	/* one more pointer: a thread-local raw's owner */
#define BL__RAW_HDR_BYTES (sizeof(void *) == 8 ? 96u : 60u)
#else
#define BL__RAW_HDR_BYTES (sizeof(void *) == 8 ? 88u : 56u)
#endif

static inline size_t bl__class_block_size(unsigned cls)
{
	return bl__class_size(cls) + BL__RAW_HDR_BYTES;
}

/*
 * A cached block is nobody's: in ASan builds all of it but the link word
 * is poisoned while it sits in a cache or the depot (blocks move between
 * them through that word alone), so a raw used or released after its
 * last release is reported.  Nothing in other builds.
 */
static inline void bl__cache_poison(void *base, unsigned cls)
{
	BL__POISON((char *)base + sizeof(void *),
		   bl__class_block_size(cls) - sizeof(void *));
}

static inline void bl__cache_unpoison(void *base, unsigned cls)
{
	BL__UNPOISON(base, bl__class_block_size(cls));
}

/* Slow halves of the cache: refill from the depot, spill to it. */
void *bl__cache_refill(struct bl__tstats *t, unsigned cls);
void bl__cache_spill(struct bl__tstats *t, unsigned cls);
extern const uint32_t bl__tcache_cap[BL__NCLASS];

/* A cached block of class @cls, or NULL (then allocate). */
static inline void *bl__cache_get(struct bl__tstats *t, unsigned cls)
{
	struct bl__tcache_class *c = &t->cache[cls];
	void *b = c->head;

	if (bl__likely(b != NULL)) {
		c->head = *(void **)b;
		c->n--;
		bl__cache_unpoison(b, cls);
		return b;
	}
	b = bl__cache_refill(t, cls);
	if (b)
		bl__cache_unpoison(b, cls);
	return b;
}

/* Takes @base into the cache; false if it must be freed instead. */
static inline bool bl__cache_put(struct bl__tstats *t, unsigned cls,
				 void *base)
{
	struct bl__tcache_class *c = &t->cache[cls];

	if (bl__unlikely(t->no_cache ||
			 !atomic_load_explicit(&bl__cache_on,
					       memory_order_relaxed)))
		return false;
	*(void **)base = c->head;
	c->head = base;
	bl__cache_poison(base, cls);
	if (bl__unlikely(++c->n > bl__tcache_cap[cls]))
		bl__cache_spill(t, cls);
	return true;
}

#endif /* BUFFERLIST_POOL_INT_H */
