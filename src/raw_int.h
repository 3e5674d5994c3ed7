/* SPDX-License-Identifier: MIT */
/*
 * raw_int.h - the raw layer's private side (raw.c): the header of a
 * reference-counted block and the inline halves of taking and dropping a
 * reference.  Includes only pool_int.h.  Never installed.
 */
#ifndef BUFFERLIST_RAW_INT_H
#define BUFFERLIST_RAW_INT_H

#include "pool_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <bufferlist/raw.h>

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

#endif /* BUFFERLIST_RAW_INT_H */
