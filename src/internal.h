/* SPDX-License-Identifier: MIT */
/*
 * internal.h - what the layers of libbufferlist share and users never see.
 * Never installed.
 */
#ifndef BUFFERLIST_INTERNAL_H
#define BUFFERLIST_INTERNAL_H

#ifdef HAVE_CONFIG_H
#include "config.h"	/* _GNU_SOURCE and friends, before any system header */
#endif

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <bufferlist.h>

#ifdef NDEBUG
#define BL_ASSERT(x) ((void)0)
#else
#include <assert.h>
#define BL_ASSERT(x) assert(x)
#endif

#define bl__likely(x) __builtin_expect(!!(x), 1)
#define bl__unlikely(x) __builtin_expect(!!(x), 0)
#define BL_CACHELINE 64

static inline void bl__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static inline bool bl__is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

static inline size_t bl__align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/* ---- alloc (pool.c) ----------------------------------------------------- */

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

static inline const struct bl__allocator *bl__allocator_current(void)
{
	return atomic_load_explicit(&bl__current_allocator,
				    memory_order_acquire);
}
void *bl__alloc(const struct bl__allocator *al, size_t size, size_t align);
void bl__free(const struct bl__allocator *al, void *p, size_t size,
	      size_t align);

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

/*
 * Empties a list that has no append buffer and no heap chunk, once the
 * references its slices held have been moved elsewhere or dropped: the
 * messenger's fast paths hand a lone slice over without the general
 * splice.
 */
static inline void bl__list_forget(struct bl_list *l)
{
	l->_tail = &l->_inl;
	l->_len = 0;
	l->_nseg = 0;
	l->_abuf_next = 0;
	l->_ext = NULL;
	l->_inl.start = 0;
	l->_inl.count = 0;
}

/* ---- pools (pool.c) ------------------------------------------------------ */

struct bl_pool {
	char name[BL_POOL_NAME_MAX];
	uint8_t id;
	const struct bl__allocator *al;	/* NULL: the allocator in force */
};

extern struct bl_pool bl__pools[BL_POOL_MAX];
extern const struct bl__allocator bl__default_allocator;
extern _Atomic bool bl__cache_on;

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
		return b;
	}
	return bl__cache_refill(t, cls);
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
	if (bl__unlikely(++c->n > bl__tcache_cap[cls]))
		bl__cache_spill(t, cls);
	return true;
}

/* Accounting of pool @id on this thread. */
static inline struct bl__pool_tstats *bl__pool_stats(unsigned id)
{
	return &bl__tstats()->pool[id];
}

/* ---- raw (raw.c) -------------------------------------------------------- */

enum bl__raw_kind {
	BL__RAW_COMBINED,	/* header after the data, one allocation */
	BL__RAW_ALIGNED,	/* header and data allocated separately */
	BL__RAW_STATIC,		/* borrowed */
	BL__RAW_CLAIMED,	/* caller memory + free callback */
};

/*
 * Layout: the first 64 bytes hold everything the hot paths touch (count,
 * data, length, frontier); the crc cache and the release details follow.
 * A combined raw puts this header AFTER its data, so a request of 4096
 * bytes is one 4096 + sizeof(header) block whose data starts on the
 * allocator's alignment, and a page-sized append buffer is sized as a
 * page minus the header instead of spilling into the next size class.
 */
struct bl_raw {
	_Atomic uint32_t nref;
	uint8_t kind;		/* enum bl__raw_kind */
	uint8_t readonly;	/* static: a write first copies */
	uint8_t pool;		/* index into bl__pools */
	uint8_t cls;		/* cache size class, or BL__NOCLASS */
	char *data;
	size_t len;		/* capacity */
	size_t used;		/* frontier: no slice covers bytes past it */
	const struct bl__allocator *al;	/* made the header (and data) */
	union {
		struct {	/* aligned: the separately allocated data */
			size_t size;
			size_t align;
		} mem;
		struct {	/* claimed */
			bl_free_fn fn;
			void *opaque;
		} claim;
	} u;
	/*
	 * crc cache: one entry under a sequence lock.  Readers (every
	 * bl_list_crc32c) do no read-modify-write; writers take crc_lock so
	 * that there is one at a time, and make crc_seq odd while they write.
	 */
	_Atomic uint32_t crc_seq;
	atomic_flag crc_lock;
	_Atomic bool crc_valid;
	_Atomic uint32_t crc_seed;
	_Atomic uint32_t crc_val;
	_Atomic size_t crc_off;
	_Atomic size_t crc_len;
};

void bl__raw_free(struct bl_raw *r);

/*
 * Releasing: when the count reads 1 this thread holds the only reference,
 * so nobody else can be taking one (that would need a reference to copy
 * from): free without a read-modify-write.  Otherwise one atomic decrement;
 * acq_rel so every write to the data happens-before the free.
 */
static inline void bl__raw_put(struct bl_raw *r)
{
	if (atomic_load_explicit(&r->nref, memory_order_acquire) == 1 ||
	    atomic_fetch_sub_explicit(&r->nref, 1, memory_order_acq_rel) == 1)
		bl__raw_free(r);
}

static inline struct bl_raw *bl__raw_get(struct bl_raw *r)
{
	atomic_fetch_add_explicit(&r->nref, 1, memory_order_relaxed);
	return r;
}

/* Size of a combined raw's header as allocated after the data. */
#define BL__RAW_HDR_SIZE bl__align_up(sizeof(struct bl_raw), 64)

/* A combined raw in pool @p (NULL: default) with its frontier at @used. */
struct bl_raw *bl__raw_create_combined(struct bl_pool *p, size_t len,
				       size_t used);

/* Moves @r's frontier forward by @n bytes, with its pool's accounting. */
static inline void bl__raw_advance(struct bl_raw *r, size_t n)
{
	r->used += n;
	bl__stat_adds(&bl__pool_stats(r->pool)->unused, -(int64_t)n);
}

/* Cached crc of [off, off + len) of @r for @seed, computing it on a miss. */
uint32_t bl__raw_crc32c(struct bl_raw *r, size_t off, size_t len,
			uint32_t seed);

/* ---- list (list.c) ------------------------------------------------------ */

struct bl__chunk {
	struct bl__chunk_hdr h;
	struct bl_ptr seg[];
};

static inline struct bl__chunk *bl__chunk(const struct bl__chunk_hdr *h)
{
	return (struct bl__chunk *)h;
}

/* ---- iter (iter.c): the cursor's fast steps, inlined into the codec ---- */

static inline const struct bl_ptr *bl__iter_seg(const struct bl_iter *it)
{
	return &bl__chunk(it->_chunk)->seg[it->_idx];
}

/* Bytes readable at the cursor without crossing a seam (0 at the end). */
static inline size_t bl__iter_contig(const struct bl_iter *it)
{
	return it->_chunk ? bl__iter_seg(it)->len - it->_seg_off : 0;
}

static inline const char *bl__iter_ptr(const struct bl_iter *it)
{
	const struct bl_ptr *s = bl__iter_seg(it);

	return s->raw->data + s->off + it->_seg_off;
}

/* Moves forward @n bytes, n <= bl__iter_contig(). */
static inline void bl__iter_step(struct bl_iter *it, size_t n)
{
	if (bl__likely(n < bl__iter_contig(it))) {
		it->_seg_off += n;
		it->_off += n;
	} else {
		bl_iter_advance(it, n);
	}
}

/*
 * Checks every invariant of @l (lengths add up, counts match, no empty
 * segment, every slice within its raw's frontier).  Returns 0 or a negative
 * number naming the first broken one; tests call it after every mutation.
 */
int bl__list_validate(const struct bl_list *l);

/*
 * Appends @a (NULL: zeros) then @b as one operation: both or neither, and
 * on failure the list (append buffer included) is as it was.  Copies.
 */
int bl__list_append2(struct bl_list *l, const void *a, size_t alen,
		     const void *b, size_t blen);

/*
 * bl__list_append_frame() - appends @pre, then @mid (its slices shared, or
 * with @copy_mid its bytes copied), then @post, as one operation: every
 * allocation is made before anything changes, so on failure (-ENOMEM) @l,
 * its append buffer included, is exactly as it was.  @pre and @post are
 * copied into the append buffer (one new raw of their own when the whole
 * copied part is LARGE_APPEND bytes or more and does not fit).  -EINVAL
 * when @mid is @l.  The messenger's frame encoder.
 */
int bl__list_append_frame(struct bl_list *l, const void *pre, size_t prelen,
			  const struct bl_list *mid, bool copy_mid,
			  const void *post, size_t postlen);

/*
 * bl__list_reshape() - rebuilds @l's chain: a segment that @keep accepts is
 * shared as it is; otherwise a run starts there, grows while @more accepts
 * the next segment, and is copied into one new raw aligned to @align (in
 * the pool of the run's first raw).  Failure atomic: -ENOMEM leaves @l as
 * it was.  Return: bytes copied.
 */
struct bl__reshape {
	bool (*keep)(const struct bl_ptr *s, bool last, void *ctx);
	bool (*more)(size_t run_len, const struct bl_ptr *next, bool last,
		     void *ctx);
	size_t align;
	void *ctx;
};
ssize_t bl__list_reshape(struct bl_list *l, const struct bl__reshape *rs);

/* Segments that can be pushed onto @l without allocating a chunk. */
unsigned bl__list_tail_room(const struct bl_list *l);

#endif /* BUFFERLIST_INTERNAL_H */
