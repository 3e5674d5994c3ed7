/* SPDX-License-Identifier: MIT */
/*
 * pool.c - the memory layer: the allocator in force, the per-thread
 * counters, the named pools with their accounting, and the per-thread
 * cache of size-class blocks with the depot that threads share.
 */
#include "pool_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

/* ---- allocators ----------------------------------------------------------- */

/*
 * glibc's aligned_alloc costs several times what malloc+free does, so
 * alignments above malloc's own 16 are made by over-allocating and keeping
 * the original pointer just below the block.
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

const struct bl__allocator bl__default_allocator = {
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
_Atomic(const struct bl__allocator *) bl__current_allocator =
	&bl__default_allocator;

/* The interned record for @a, or NULL when the table is full. */
static const struct bl__allocator *intern(const struct bl_allocator *a)
{
	const struct bl__allocator *rec = NULL;

	pthread_mutex_lock(&alloc_lock);
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
	return rec;
}

void bl_allocator_set(const struct bl_allocator *a)
{
	const struct bl__allocator *rec = &bl__default_allocator;

	if (a && a->alloc && a->free) {
		rec = intern(a);
		if (!rec)
			return;	/* table full: keep the allocator in force */
	}
	atomic_store_explicit(&bl__current_allocator, rec, memory_order_release);
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

#ifdef BL_DEBUG
#include <stdarg.h>
#include <stdio.h>

void bl__debug_fail(const char *fmt, ...)
{
	va_list ap;

	fputs("libbufferlist: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (--enable-debug check)\n", stderr);
	abort();
}
#endif

/* ---- per-thread state ---------------------------------------------------- */

/*
 * Each thread owns a block (struct bl__tstats) that only it writes, linked
 * into a registry so that the stats calls can sum them.  When the thread
 * exits its counters fold into `retired` and its cache goes to the depot.
 * These blocks come from malloc, not from the pluggable allocator, so they
 * never show up in a test's allocation counts.
 */
struct tstats_node {
	struct bl__tstats s;
	struct tstats_node *next, **pprev;
};

__thread struct bl__tstats *bl__tstats_tls
	__attribute__((tls_model("initial-exec")));
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tstats_node *stats_head;
static struct bl__tstats retired;
static pthread_key_t stats_key;
static pthread_once_t stats_once = PTHREAD_ONCE_INIT;
/* used when malloc fails, and by a thread after its destructor ran */
static struct bl__tstats fallback_stats = { .no_cache = true };

static void cache_drain_thread(struct bl__tstats *t);

static void fold(struct bl__tstats *dst, const struct bl__tstats *s)
{
#define F(x) bl__stat_add(&dst->x, atomic_load_explicit(&s->x, memory_order_relaxed))
	F(copied_bytes);
	F(copy_ops);
	F(cache_misses);
#undef F
	for (unsigned i = 0; i < BL_POOL_MAX; i++) {
#define P(x) bl__stat_adds(&dst->pool[i].x, atomic_load_explicit(&s->pool[i].x, memory_order_relaxed))
		P(created);
		P(freed);
		P(bytes);
		P(unused);
#undef P
	}
}

static void tstats_exit(void *arg)
{
	struct tstats_node *n = arg;

	cache_drain_thread(&n->s);
	pthread_mutex_lock(&stats_lock);
	fold(&retired, &n->s);
	*n->pprev = n->next;
	if (n->next)
		n->next->pprev = n->pprev;
	pthread_mutex_unlock(&stats_lock);
	/* frees that run in later destructors count here */
	bl__tstats_tls = &fallback_stats;
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

/* Sums every thread's block (and the retired ones) into @sum. */
static void sum_all(struct bl__tstats *sum)
{
	memset(sum, 0, sizeof(*sum));
	pthread_mutex_lock(&stats_lock);
	fold(sum, &retired);
	fold(sum, &fallback_stats);
	for (struct tstats_node *n = stats_head; n; n = n->next)
		fold(sum, &n->s);
	pthread_mutex_unlock(&stats_lock);
}

static void to_public(struct bl_stats *out, const struct bl__tstats *s)
{
	out->copied_bytes = atomic_load_explicit(&s->copied_bytes, memory_order_relaxed);
	out->copy_ops = atomic_load_explicit(&s->copy_ops, memory_order_relaxed);
	out->raws_created = 0;
	out->raws_freed = 0;
	for (unsigned i = 0; i < BL_POOL_MAX; i++) {
		out->raws_created += (uint64_t)atomic_load_explicit(
			&s->pool[i].created, memory_order_relaxed);
		out->raws_freed += (uint64_t)atomic_load_explicit(
			&s->pool[i].freed, memory_order_relaxed);
	}
}

void bl_stats_get(struct bl_stats *out)
{
	struct bl__tstats sum;

	sum_all(&sum);
	to_public(out, &sum);
}

void bl_stats_thread(struct bl_stats *out)
{
	to_public(out, bl__tstats());
}

static void zero_counters(struct bl__tstats *s)
{
	atomic_store_explicit(&s->copied_bytes, 0, memory_order_relaxed);
	atomic_store_explicit(&s->copy_ops, 0, memory_order_relaxed);
	atomic_store_explicit(&s->cache_misses, 0, memory_order_relaxed);
}

/* Zeroes the copy counters; raws_created/freed are the pools' own counts. */
void bl_stats_reset(void)
{
	pthread_mutex_lock(&stats_lock);
	zero_counters(&retired);
	zero_counters(&fallback_stats);
	for (struct tstats_node *n = stats_head; n; n = n->next)
		zero_counters(&n->s);
	pthread_mutex_unlock(&stats_lock);
}

/* ---- pools ------------------------------------------------------------------ */

struct bl_pool bl__pools[BL_POOL_MAX] = { [0] = { "default", 0, NULL } };
static unsigned n_pools = 1;
static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

struct bl_pool *bl_pool_default(void)
{
	return &bl__pools[0];
}

struct bl_pool *bl_pool_create(const char *name, const struct bl_allocator *a)
{
	struct bl_pool *p = NULL;
	size_t len = name ? strlen(name) : 0;

	if (!len || len >= BL_POOL_NAME_MAX) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&pool_lock);
	for (unsigned i = 0; i < n_pools; i++)
		if (!strcmp(bl__pools[i].name, name))
			p = &bl__pools[i];
	if (!p && n_pools < BL_POOL_MAX) {
		const struct bl__allocator *al = NULL;

		if (a && a->alloc && a->free)
			al = intern(a);	/* outlives the pool's raws */
		p = &bl__pools[n_pools];
		memcpy(p->name, name, len + 1);
		p->id = (uint8_t)n_pools;
		p->al = al;
		n_pools++;
	}
	pthread_mutex_unlock(&pool_lock);
	if (!p)
		errno = ENOSPC;
	return p;
}

const char *bl_pool_name(const struct bl_pool *p)
{
	return p->name;
}

static void pool_stats_from(const struct bl__tstats *sum, unsigned id,
			    struct bl_pool_stats *out)
{
	memcpy(out->name, bl__pools[id].name, BL_POOL_NAME_MAX);
	out->raws = atomic_load_explicit(&sum->pool[id].created, memory_order_relaxed) -
		    atomic_load_explicit(&sum->pool[id].freed, memory_order_relaxed);
	out->bytes = atomic_load_explicit(&sum->pool[id].bytes, memory_order_relaxed);
	out->bytes_used = out->bytes -
		atomic_load_explicit(&sum->pool[id].unused, memory_order_relaxed);
}

void bl_pool_get_stats(const struct bl_pool *p, struct bl_pool_stats *out)
{
	struct bl__tstats sum;

	sum_all(&sum);
	pool_stats_from(&sum, p->id, out);
}

int bl_pool_stats_all(struct bl_pool_stats *out, int max)
{
	struct bl__tstats sum;
	int n;

	sum_all(&sum);
	pthread_mutex_lock(&pool_lock);
	n = (int)n_pools;
	pthread_mutex_unlock(&pool_lock);
	for (int i = 0; i < n && i < max; i++)
		pool_stats_from(&sum, (unsigned)i, &out[i]);
	return n;
}

int bl_pool_dump(FILE *out)
{
	struct bl_pool_stats st[BL_POOL_MAX];
	struct bl_pool_cache_stats cs;
	int n = bl_pool_stats_all(st, BL_POOL_MAX);

	if (n < 0)
		return n;
	if (fprintf(out, "%-24s %12s %16s %16s\n", "pool", "raws", "bytes",
		    "bytes_used") < 0)
		return -EIO;
	for (int i = 0; i < n; i++)
		if (fprintf(out, "%-24s %12lld %16lld %16lld\n", st[i].name,
			    (long long)st[i].raws, (long long)st[i].bytes,
			    (long long)st[i].bytes_used) < 0)
			return -EIO;
	bl_pool_cache_get_stats(&cs);
	if (fprintf(out, "cache: %llu raws, %llu bytes held; %llu misses\n",
		    (unsigned long long)cs.cached_raws,
		    (unsigned long long)cs.cached_bytes,
		    (unsigned long long)cs.misses) < 0)
		return -EIO;
	return 0;
}

/* ---- the per-thread cache ------------------------------------------------ */

/*
 * A thread keeps up to TCACHE_MAX blocks per class (and no more than
 * TCACHE_BYTES of one class); past that it moves half of them to the depot
 * in one batch, so the depot's lock is taken once per TCACHE_MAX/2 frees in
 * a producer/consumer pattern.  The depot holds at most DEPOT_BYTES; past
 * that blocks go back to the allocator.
 */
#define TCACHE_MAX 64u
#define TCACHE_BYTES (1024u * 1024)
#define DEPOT_BYTES (64u * 1024 * 1024)

_Atomic bool bl__cache_on = true;

struct depot_class {
	pthread_mutex_t lock;
	void *head;
	_Atomic uint32_t n;	/* peeked at without the lock */
};

static struct depot_class depot[BL__NCLASS];
static _Atomic size_t depot_bytes;
static pthread_once_t depot_once = PTHREAD_ONCE_INIT;

static void depot_init(void)
{
	for (unsigned i = 0; i < BL__NCLASS; i++)
		pthread_mutex_init(&depot[i].lock, NULL);
}

__attribute__((constructor)) static void pool_env_init(void)
{
	const char *e = getenv("BL_POOL_CACHE");

	if (e && *e == '0')
		atomic_store(&bl__cache_on, false);
	pthread_once(&depot_once, depot_init);
}

/* bl__class_size() as a table (a load instead of eight instructions) */
#define CLASS_SIZE(c) ((c) == 0 ? 32u : ((c) & 1) ? 3u << (((c) + 1) / 2 + 3) \
					     : 1u << ((c) / 2 + 5))
const uint32_t bl__class_bytes[BL__NCLASS] = {
	CLASS_SIZE(0), CLASS_SIZE(1), CLASS_SIZE(2), CLASS_SIZE(3),
	CLASS_SIZE(4), CLASS_SIZE(5), CLASS_SIZE(6), CLASS_SIZE(7),
	CLASS_SIZE(8), CLASS_SIZE(9), CLASS_SIZE(10), CLASS_SIZE(11),
	CLASS_SIZE(12), CLASS_SIZE(13), CLASS_SIZE(14), CLASS_SIZE(15),
	CLASS_SIZE(16), CLASS_SIZE(17), CLASS_SIZE(18), CLASS_SIZE(19),
	CLASS_SIZE(20), CLASS_SIZE(21), CLASS_SIZE(22),
};
_Static_assert(CLASS_SIZE(BL__NCLASS - 1) == BL_POOL_CACHE_MAX,
	       "class table out of step with BL_POOL_CACHE_MAX");

/*
 * How many blocks a thread caches of one class: TCACHE_MAX, or fewer so
 * that the class holds at most TCACHE_BYTES.  CLASS_BLOCK is
 * bl__class_block_size() (capacity plus raw header) as a constant
 * expression, which a static table needs.
 */
#define CLASS_BLOCK(c) (CLASS_SIZE(c) + BL__RAW_HDR_BYTES)
#define CAP(c) (TCACHE_BYTES / CLASS_BLOCK(c) < TCACHE_MAX ? \
		TCACHE_BYTES / CLASS_BLOCK(c) : TCACHE_MAX)
const uint32_t bl__tcache_cap[BL__NCLASS] = {
	CAP(0), CAP(1), CAP(2), CAP(3), CAP(4), CAP(5), CAP(6), CAP(7),
	CAP(8), CAP(9), CAP(10), CAP(11), CAP(12), CAP(13), CAP(14), CAP(15),
	CAP(16), CAP(17), CAP(18), CAP(19), CAP(20), CAP(21), CAP(22),
};
_Static_assert(BL__NCLASS == 23, "one size and one cap per class");
#undef CAP
#undef CLASS_BLOCK
#undef CLASS_SIZE

/* what the bit-scan formula in bl__size_class() gives for 16(i + 1) */
const uint8_t bl__class_by16[64] = {
	0, 0, 1, 2, 3, 3, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6,
	7, 7, 7, 7, 7, 7, 7, 7, 8, 8, 8, 8, 8, 8, 8, 8,
	9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9,
	10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 10,
};

static void free_chain(void *head, unsigned cls)
{
	while (head) {
		void *next = *(void **)head;

		bl__cache_unpoison(head, cls);
		bl__free(&bl__default_allocator, head, bl__class_block_size(cls),
			 BL_CACHELINE);
		head = next;
	}
}

void *bl__cache_refill(struct bl__tstats *t, unsigned cls)
{
	struct bl__tcache_class *c = &t->cache[cls];
	struct depot_class *d = &depot[cls];
	void *batch, *tail;
	unsigned k = 0, want = bl__tcache_cap[cls] / 2 + 1;

	if (!t->no_cache &&
	    atomic_load_explicit(&d->n, memory_order_relaxed)) {
		pthread_mutex_lock(&d->lock);
		batch = d->head;
		for (tail = batch; tail && ++k < want; tail = *(void **)tail)
			;
		if (tail) {
			d->head = *(void **)tail;
			*(void **)tail = NULL;
		} else {
			d->head = NULL;
		}
		atomic_fetch_sub_explicit(&d->n, k, memory_order_relaxed);
		pthread_mutex_unlock(&d->lock);
		atomic_fetch_sub_explicit(&depot_bytes, k * bl__class_block_size(cls),
					  memory_order_relaxed);
		if (batch) {
			c->head = *(void **)batch;
			c->n = k - 1;
			return batch;
		}
	}
	bl__stat_add(&t->cache_misses, 1);
	return NULL;
}

/* Moves all but @keep blocks of @c to the depot (or the allocator). */
static void spill(struct bl__tcache_class *c, unsigned cls, unsigned keep)
{
	struct depot_class *d = &depot[cls];
	void *first, *last;
	unsigned k = c->n - keep;
	size_t bytes = (size_t)k * bl__class_block_size(cls);

	if (!k)
		return;
	first = c->head;
	last = first;
	for (unsigned i = 1; i < k; i++)
		last = *(void **)last;
	c->head = *(void **)last;
	c->n = keep;
	if (atomic_load_explicit(&depot_bytes, memory_order_relaxed) + bytes >
	    DEPOT_BYTES) {
		*(void **)last = NULL;
		free_chain(first, cls);
		return;
	}
	atomic_fetch_add_explicit(&depot_bytes, bytes, memory_order_relaxed);
	pthread_mutex_lock(&d->lock);
	*(void **)last = d->head;
	d->head = first;
	atomic_fetch_add_explicit(&d->n, k, memory_order_relaxed);
	pthread_mutex_unlock(&d->lock);
}

void bl__cache_spill(struct bl__tstats *t, unsigned cls)
{
	struct bl__tcache_class *c = &t->cache[cls];

	spill(c, cls, c->n / 2);
}

static void cache_drain_thread(struct bl__tstats *t)
{
	for (unsigned cls = 0; cls < BL__NCLASS; cls++)
		spill(&t->cache[cls], cls, 0);
}

void bl_pool_cache_enable(bool on)
{
	atomic_store(&bl__cache_on, on);
	if (!on)
		bl_pool_cache_flush();
}

bool bl_pool_cache_enabled(void)
{
	return atomic_load(&bl__cache_on);
}

void bl_pool_cache_flush(void)
{
	struct bl__tstats *t = bl__tstats();

	if (!t->no_cache)
		for (unsigned cls = 0; cls < BL__NCLASS; cls++) {
			free_chain(t->cache[cls].head, cls);
			t->cache[cls].head = NULL;
			t->cache[cls].n = 0;
		}
	for (unsigned cls = 0; cls < BL__NCLASS; cls++) {
		struct depot_class *d = &depot[cls];
		void *h;
		unsigned n;

		pthread_mutex_lock(&d->lock);
		h = d->head;
		n = atomic_exchange_explicit(&d->n, 0, memory_order_relaxed);
		d->head = NULL;
		pthread_mutex_unlock(&d->lock);
		atomic_fetch_sub_explicit(&depot_bytes, n * bl__class_block_size(cls),
					  memory_order_relaxed);
		free_chain(h, cls);
	}
}

void bl_pool_cache_get_stats(struct bl_pool_cache_stats *out)
{
	struct bl__tstats sum;

	memset(out, 0, sizeof(*out));
	sum_all(&sum);
	out->misses = atomic_load_explicit(&sum.cache_misses, memory_order_relaxed);
	/* other threads' caches are theirs alone: count ours and the depot */
	for (unsigned cls = 0; cls < BL__NCLASS; cls++) {
		const struct bl__tcache_class *c = &bl__tstats()->cache[cls];

		out->cached_raws += c->n;
		out->cached_bytes += c->n * bl__class_block_size(cls);
	}
	for (unsigned cls = 0; cls < BL__NCLASS; cls++) {
		pthread_mutex_lock(&depot[cls].lock);
		uint32_t n = atomic_load_explicit(&depot[cls].n, memory_order_relaxed);

		out->cached_raws += n;
		out->cached_bytes += n * bl__class_block_size(cls);
		pthread_mutex_unlock(&depot[cls].lock);
	}
}
