/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the ground floor: the allocator in force and the per-thread
 * counters.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include "internal.h"

/* ---- allocators ----------------------------------------------------------- */

/*
 * glibc's aligned_alloc costs 37-63 ns a pair here against 5-11 ns for
 * malloc+free (FACTS.md), so alignments above malloc's own 16 are made by
 * over-allocating and keeping the original pointer just below the block.
 */
#define MALLOC_ALIGN 16

static void *default_alloc(void *opaque, size_t size, size_t align)
{
	char *raw, *p;

	(void)opaque;
	if (align <= MALLOC_ALIGN)
		return malloc(size ? size : 1);
	if (size > SIZE_MAX - align)
		return NULL;
	raw = malloc(size + align);
	if (!raw)
		return NULL;
	p = (char *)(((uintptr_t)raw + align) & ~(uintptr_t)(align - 1));
	((void **)p)[-1] = raw;
	return p;
}

static void default_free(void *opaque, void *p, size_t size, size_t align)
{
	(void)opaque;
	(void)size;
	if (align <= MALLOC_ALIGN)
		free(p);
	else
		free(((void **)p)[-1]);
}

static const struct bl__allocator default_allocator = {
	{ default_alloc, default_free, NULL }
};

/*
 * Installed allocators are interned: each distinct (alloc, free, opaque)
 * gets one immutable record that is never freed, so blocks can point at
 * the allocator that made them for as long as they live.  Tests install
 * and remove the same few allocators thousands of times; interning keeps
 * that from growing without bound.
 */
#define MAX_ALLOCATORS 64
static struct bl__allocator interned[MAX_ALLOCATORS];
static unsigned n_interned;
static pthread_mutex_t alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(const struct bl__allocator *) current = &default_allocator;

const struct bl__allocator *bl__allocator_current(void)
{
	return atomic_load_explicit(&current, memory_order_acquire);
}

void bl_allocator_set(const struct bl_allocator *a)
{
	const struct bl__allocator *rec = &default_allocator;

	if (a && a->alloc && a->free) {
		pthread_mutex_lock(&alloc_lock);
		rec = NULL;
		for (unsigned i = 0; i < n_interned; i++)
			if (interned[i].a.alloc == a->alloc &&
			    interned[i].a.free == a->free &&
			    interned[i].a.opaque == a->opaque)
				rec = &interned[i];
		if (!rec && n_interned < MAX_ALLOCATORS) {
			interned[n_interned].a = *a;
			rec = &interned[n_interned++];
		}
		pthread_mutex_unlock(&alloc_lock);
		if (!rec)
			return;	/* table full: keep the allocator in force */
	}
	atomic_store_explicit(&current, rec, memory_order_release);
}

void bl_allocator_get(struct bl_allocator *out)
{
	*out = bl__allocator_current()->a;
}

void *bl__alloc(const struct bl__allocator *al, size_t size, size_t align)
{
	return al->a.alloc(al->a.opaque, size, align);
}

void bl__free(const struct bl__allocator *al, void *p, size_t size,
	      size_t align)
{
	al->a.free(al->a.opaque, p, size, align);
}

/* ---- per-thread counters -------------------------------------------------- */

/*
 * Each thread owns a block of counters that only it writes (plain
 * load+store, no read-modify-write), linked into a registry so that
 * bl_stats_get() can sum them.  A thread's block is folded into `retired`
 * when it exits.  These blocks come from malloc, not from the pluggable
 * allocator, so they never show up in a test's allocation counts.
 */
struct tstats_node {
	struct bl__tstats s;
	struct tstats_node *next, **pprev;
};

__thread struct bl__tstats *bl__tstats_tls;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tstats_node *stats_head;
static struct bl_stats retired;
static pthread_key_t stats_key;
static pthread_once_t stats_once = PTHREAD_ONCE_INIT;
static struct bl__tstats fallback_stats;	/* if malloc fails */

static void add_into(struct bl_stats *dst, const struct bl__tstats *s)
{
	dst->copied_bytes += atomic_load_explicit(&s->copied_bytes, memory_order_relaxed);
	dst->copy_ops += atomic_load_explicit(&s->copy_ops, memory_order_relaxed);
	dst->raws_created += atomic_load_explicit(&s->raws_created, memory_order_relaxed);
	dst->raws_freed += atomic_load_explicit(&s->raws_freed, memory_order_relaxed);
}

static void tstats_exit(void *arg)
{
	struct tstats_node *n = arg;

	pthread_mutex_lock(&stats_lock);
	add_into(&retired, &n->s);
	*n->pprev = n->next;
	if (n->next)
		n->next->pprev = n->pprev;
	pthread_mutex_unlock(&stats_lock);
	bl__tstats_tls = &fallback_stats;	/* late frees after this */
	free(n);
}

static void tstats_init(void)
{
	pthread_key_create(&stats_key, tstats_exit);
}

struct bl__tstats *bl__tstats_slow(void)
{
	struct tstats_node *n;

	pthread_once(&stats_once, tstats_init);
	n = calloc(1, sizeof(*n));
	if (!n) {
		bl__tstats_tls = &fallback_stats;
		return &fallback_stats;
	}
	pthread_mutex_lock(&stats_lock);
	n->next = stats_head;
	n->pprev = &stats_head;
	if (stats_head)
		stats_head->pprev = &n->next;
	stats_head = n;
	pthread_mutex_unlock(&stats_lock);
	pthread_setspecific(stats_key, n);
	bl__tstats_tls = &n->s;
	return &n->s;
}

void bl_stats_get(struct bl_stats *out)
{
	pthread_mutex_lock(&stats_lock);
	*out = retired;
	for (struct tstats_node *n = stats_head; n; n = n->next)
		add_into(out, &n->s);
	add_into(out, &fallback_stats);
	pthread_mutex_unlock(&stats_lock);
}

void bl_stats_thread(struct bl_stats *out)
{
	memset(out, 0, sizeof(*out));
	add_into(out, bl__tstats());
}

static void zero(struct bl__tstats *s)
{
	atomic_store_explicit(&s->copied_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&s->copy_ops, 0, memory_order_relaxed);
	atomic_store_explicit(&s->raws_created, 0, memory_order_relaxed);
	atomic_store_explicit(&s->raws_freed, 0, memory_order_relaxed);
}

void bl_stats_reset(void)
{
	pthread_mutex_lock(&stats_lock);
	memset(&retired, 0, sizeof(retired));
	for (struct tstats_node *n = stats_head; n; n = n->next)
		zero(&n->s);
	zero(&fallback_stats);
	pthread_mutex_unlock(&stats_lock);
}
