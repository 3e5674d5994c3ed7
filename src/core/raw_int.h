/* SPDX-License-Identifier: MIT */
/*
 * raw_int.h - the raw layer's private side (raw.c): the header of a
 * reference-counted block, the inline halves of taking and dropping a
 * reference, and the inline accessors through which the layers above
 * read and move its fields (only raw.c and this header touch them:
 * test/check_layers.sh).  Includes only pool_int.h.  Never installed.
 */
#ifndef BUFFERLIST_RAW_INT_H
#define BUFFERLIST_RAW_INT_H

#include "pool_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <bufferlist/raw.h>

enum bl__raw_kind {
	BL__RAW_COMBINED,	/* header after the data, one allocation */
	BL__RAW_ALIGNED,	/* header and data allocated separately */
	BL__RAW_STATIC,		/* borrowed */
	BL__RAW_CLAIMED,	/* caller memory + free callback */
};

/*
 * Flags.  RDONLY: static memory, a write first copies.  OWNED: a buffer
 * the library grows itself (a list's append buffer, the lz4 codec's
 * output): one writer moves its frontier, with plain stores, so no slice
 * handed out of it may grow (bl_ptr_unused_tail() is 0 for it).
 */
#define BL__RAW_RDONLY	1u
#define BL__RAW_OWNED	2u
/*
 * LOCAL: made while its thread had bl_raw_set_thread_local() on.  Only
 * that thread ever holds a reference, so the count moves with a plain
 * load and store: the lock prefix of a read-modify-write is the whole
 * cost of sharing a slice (refpair, BENCHMARKS.md), and no second thread
 * can be racing this one for the count.
 */
#define BL__RAW_LOCAL	4u

/*
 * BL__RAW_LOCAL while the thread's raws are to be thread-local, else 0:
 * raw_init() ORs it into each new raw's flags.
 */
extern __thread uint8_t bl__raw_local_tls
	__attribute__((tls_model("initial-exec")));

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
	uint8_t flags;		/* BL__RAW_RDONLY, _OWNED, _LOCAL */
	uint8_t pool;		/* index into bl__pools */
	uint8_t cls;		/* cache size class, or BL__NOCLASS */
	char *data;
	size_t len;		/* capacity */
	_Atomic size_t used;	/* frontier: no slice covers bytes past it */
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
#ifdef BL_DEBUG
	uintptr_t owner;	/* a LOCAL raw's thread (bl__raw_thread()) */
#endif
};

#ifdef BL_DEBUG
/*
 * The calling thread's number, from 1, never reused (an address in the
 * thread's TLS would be: glibc hands a new thread the stack and TLS of
 * one that ended).
 */
extern __thread uintptr_t bl__raw_thread_id
	__attribute__((tls_model("initial-exec")));
uintptr_t bl__raw_thread_number(void);

static inline uintptr_t bl__raw_thread(void)
{
	uintptr_t id = bl__raw_thread_id;

	return id ? id : bl__raw_thread_number();
}

#define BL__RAW_CHECK_OWNER(r, what)					\
	BL_DEBUG_CHECK(!((r)->flags & BL__RAW_LOCAL) ||			\
		       (r)->owner == bl__raw_thread(),			\
		       what ": raw %p is thread-local to another thread "	\
		       "(bl_raw_set_thread_local)", (void *)(r))
#else
#define BL__RAW_CHECK_OWNER(r, what) ((void)0)
#endif

void bl__raw_free(struct bl_raw *r);

/*
 * Releasing: when the count reads 1 this thread holds the only reference,
 * so nobody else can be taking one (that would need a reference to copy
 * from): free without a read-modify-write.  Otherwise one atomic decrement;
 * acq_rel so every write to the data happens-before the free.
 *
 * bl__raw_free() leaves the count at 0, so a second release of a raw
 * whose block sits in a pool cache decrements (to a wrapped count that
 * the next create overwrites) instead of caching the block twice, which
 * would hand it to two owners.  --enable-debug reports it instead.
 */
static inline void bl__raw_put(struct bl_raw *r)
{
	uint32_t n = atomic_load_explicit(&r->nref, memory_order_acquire);

	BL_DEBUG_CHECK(n != 0, "bl_raw_put: raw %p released twice (its "
		       "reference count is already 0)", (void *)r);
	BL__RAW_CHECK_OWNER(r, "bl_raw_put");
	if (n == 1)
		bl__raw_free(r);
	else if (r->flags & BL__RAW_LOCAL)
		atomic_store_explicit(&r->nref, n - 1, memory_order_relaxed);
	else if (atomic_fetch_sub_explicit(&r->nref, 1,
					   memory_order_acq_rel) == 1)
		bl__raw_free(r);
}

/*
 * Taking one has no such shortcut: a count of 1 does not mean the caller
 * holds it.  Any thread may take a reference on a raw that another one
 * holds (raw.h), so two threads could both read 1 and store 2, losing a
 * reference.  test_raw's test_concurrent_get_put_keeps_count catches
 * exactly that.  A thread-local raw is the exception by contract: only
 * its thread holds references, so nobody else can be taking one.
 */
static inline struct bl_raw *bl__raw_get(struct bl_raw *r)
{
	uint32_t n;

	BL__RAW_CHECK_OWNER(r, "bl_raw_get");
	if (bl__unlikely(r->flags & BL__RAW_LOCAL)) {	/* off the shared path */
		n = atomic_load_explicit(&r->nref, memory_order_relaxed);
		atomic_store_explicit(&r->nref, n + 1, memory_order_relaxed);
	} else {
		n = atomic_fetch_add_explicit(&r->nref, 1,
					      memory_order_relaxed);
	}
	BL_DEBUG_CHECK(n != 0, "bl_raw_get: raw %p used after its last "
		       "release", (void *)r);
	(void)n;
	return r;
}

/* A combined raw in pool @p (NULL: default) with its frontier at @used. */
struct bl_raw *bl__raw_create_combined(struct bl_pool *p, size_t len,
				       size_t used);

/*
 * A combined raw of @cap bytes, frontier 0, that only its creator grows
 * (BL__RAW_OWNED): its frontier moves with bl__raw_set_used() /
 * bl__raw_advance(), no atomic read-modify-write.
 */
struct bl_raw *bl__raw_create_owned(struct bl_pool *p, size_t cap);

static inline bool bl__raw_readonly(const struct bl_raw *r)
{
	return r->flags & BL__RAW_RDONLY;
}

/*
 * Whether a slice may grow @r through bl_ptr_append(): not a read-only
 * raw, nor one that its owner alone grows (BL__RAW_OWNED).
 */
static inline bool bl__raw_slice_grows(const struct bl_raw *r)
{
	return !(r->flags & (BL__RAW_RDONLY | BL__RAW_OWNED));
}

/*
 * The frontier.  It is atomic because bl_ptr_append() on raws shared
 * between threads moves it with a compare-and-swap; a relaxed load or
 * store is a plain move, so the single writer of an owned raw pays
 * nothing for that.
 */
static inline size_t bl__raw_used(const struct bl_raw *r)
{
	return atomic_load_explicit(&((struct bl_raw *)r)->used,
				    memory_order_relaxed);
}

/*
 * The fields, for the layers above: only raw.c and this header touch
 * struct bl_raw itself (test/check_layers.sh), so that its layout can
 * change with no file outside the raw layer changing.  Each is one load
 * at -O2, as the field was.
 */

/* The first byte of @r's data: a slice's bytes start at data + offset. */
static inline char *bl__raw_data(const struct bl_raw *r)
{
	return r->data;
}

/* @r's capacity: the bytes its data can hold. */
static inline size_t bl__raw_len(const struct bl_raw *r)
{
	return r->len;
}

/* @r's pool: an index into bl__pools (pool_int.h). */
static inline unsigned bl__raw_pool(const struct bl_raw *r)
{
	return r->pool;
}

/* The bytes past @r's frontier: what an owner may still append. */
static inline size_t bl__raw_room(const struct bl_raw *r)
{
	return r->len - bl__raw_used(r);
}

/*
 * A claimed raw's free callback and its argument (bl_raw_claim()); NULL
 * for the other kinds.  A layer that claims memory with a callback of its
 * own (the buffer rings, the registered pool) knows its raws by it.
 */
static inline bl_free_fn bl__raw_claim_fn(const struct bl_raw *r)
{
	return r->kind == BL__RAW_CLAIMED ? r->u.claim.fn : NULL;
}

static inline void *bl__raw_claim_arg(const struct bl_raw *r)
{
	return r->kind == BL__RAW_CLAIMED ? r->u.claim.opaque : NULL;
}

/*
 * [@off, @off + @len) lies within @r's handed-out bytes (its frontier),
 * computed without overflow: what a slice the caller built must satisfy.
 */
static inline bool bl__raw_covers(const struct bl_raw *r, size_t off,
				  size_t len)
{
	size_t used = bl__raw_used(r);

	return len <= used && off <= used - len;
}

/*
 * [@data, @data + @len) lies within @r's handed-out bytes: the same check
 * for a slice given by its address (a list's segment).  Addresses are
 * compared as integers, since a hand-built one may point anywhere: one
 * before the data wraps to an offset no raw covers.
 */
static inline bool bl__raw_covers_at(const struct bl_raw *r,
				     const char *data, size_t len)
{
	return bl__raw_covers(r, (uintptr_t)data - (uintptr_t)r->data, len);
}

/* For the one writer of @r's frontier only (an owned raw, or one reference). */
static inline void bl__raw_set_used(struct bl_raw *r, size_t used)
{
	atomic_store_explicit(&r->used, used, memory_order_relaxed);
}

/* Moves @r's frontier forward by @n bytes, with its pool's accounting;
 * as bl__raw_set_used(), for the one writer of the frontier only. */
static inline void bl__raw_advance(struct bl_raw *r, size_t n)
{
	BL_DEBUG_CHECK(n <= r->len - bl__raw_used(r),
		       "raw %p: frontier moved past its capacity", (void *)r);
	bl__raw_set_used(r, bl__raw_used(r) + n);
	bl__stat_adds(&bl__pool_stats(r->pool)->unused, -(int64_t)n);
}

/*
 * Claims the @len bytes at @end, the end of a slice of @r, for that slice
 * to grow into (bl_ptr_append()): 0, or -ENOSPC when @end is not the
 * frontier or the capacity is short.  Only the slice ending at the
 * frontier may grow, and the frontier moves with it: bytes that another
 * slice covers are never written, so no crc cache can go stale here.
 * With one reference (read with acquire: whoever dropped theirs did so
 * after their last move of the frontier) nobody else can move it and a
 * plain store does.  Otherwise slices in other threads may end at the
 * same frontier: the compare-and-swap claims the bytes for one of them,
 * and the others find the frontier moved.
 */
static inline int bl__raw_grow_at(struct bl_raw *r, size_t end, size_t len)
{
	size_t used;

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
	return 0;
}

/*
 * A crc cached over @r's bytes would be stale now (they were rewritten in
 * place): drop it.  One relaxed load when none is cached.
 */
static inline void bl__raw_crc_stale(struct bl_raw *r)
{
	if (bl__unlikely(atomic_load_explicit(&r->crc_valid,
					      memory_order_relaxed)))
		bl_raw_invalidate_crc(r);
}

/* Cached crc of [off, off + len) of @r for @seed, computing it on a miss. */
uint32_t bl__raw_crc32c(struct bl_raw *r, size_t off, size_t len,
			uint32_t seed);

#endif /* BUFFERLIST_RAW_INT_H */
