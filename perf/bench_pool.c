/* SPDX-License-Identifier: MIT */
/*
 * bench_pool.c - the memory benchmarks: what a raw costs to create and
 * release (same thread and across threads), against glibc malloc+free, and
 * what a messenger-like workload pins with and without bl_list_compact().
 *
 * The same workloads run on Ceph's buffer::create (bench_pool_ceph.cc);
 * perf/run-pool.sh runs both interleaved and tabulates the medians.
 * Usage and output format: see benchutil.h.
 *
 * Workloads (name: what one operation is; the whole loop is timed):
 *  alloc_N          bl_raw_create(N) + bl_raw_put() on one thread (the
 *                   per-thread cache in force).  Prints Ceph's
 *                   "1000000 alloc of size N in S" line (-C for exactly
 *                   1000000; otherwise a count calibrated to about 0.25 s,
 *                   never below CALIB_MIN_N: see pool_calibrate()).
 *  alloc_nocache_N  the same with bl_pool_cache_enable(false), i.e. what
 *                   BL_POOL_CACHE=0 gives: every raw from malloc.
 *  malloc_N         baseline: glibc malloc(N) + free().
 *  xthread_alloc_N  a producer (the main thread) creates N-byte raws and
 *                   hands them through a single-producer/single-consumer
 *                   ring (XRING_SIZE slots, indices published every
 *                   XRING_BATCH items) to a consumer thread that releases
 *                   them; ns per raw = wall time / count, the consumer's
 *                   start and join included.
 *  xthread_nocache_N  the same, caches off.
 *  xthread_malloc_N baseline: malloc(N) in the producer, free() in the
 *                   consumer, the same ring.
 *  pin_keep         messenger-like: PIN_RECV buffers of 64 KiB are
 *                   received (bl_raw_create(65536), filled, held by a
 *                   list as a message); of every PIN_EVERY-th one a
 *                   200-byte slice is kept (bl_list_substr_of into a list
 *                   of its own) for the rest of the run; the message is
 *                   dropped.  Prints, in bytes (unit B): .kept (payload of
 *                   the kept slices), .pinned (kept + bl_list_pinned_unused
 *                   of every kept list), .pool (the default pool's live
 *                   capacity, bl_pool_get_stats().bytes, less what it was
 *                   before), .cache (bl_pool_cache_get_stats cached_bytes),
 *                   .heap (glibc mallinfo2 bytes in use, less the start),
 *                   .heap_flushed (the same after bl_pool_cache_flush()),
 *                   .rss (resident set growth, /proc/self/statm).
 *  pin_compact_each the same, each kept list compacted with
 *                   bl_list_compact(l, PIN_MAX_WASTE) as soon as the slice
 *                   is taken (.compact_ns: ns per compact call).
 *  pin_compact_all  the same, all kept slices in ONE list, compacted once
 *                   after the last message.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <bufferlist.h>

#include "benchutil.h"

static void must(int rc, const char *what)
{
	if (rc < 0)
		bench_fail(what, rc);
}

/* ---- same thread --------------------------------------------------------- */

static uint64_t w_alloc(void *arg, uint64_t n)
{
	size_t size = *(unsigned *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		struct bl_raw *r = bl_raw_create(size);

		if (!r)
			bench_fail("bl_raw_create", -ENOMEM);
		bench_escape(r);
		bl_raw_put(r);
	}
	return bench_now() - t0;
}

static uint64_t w_malloc(void *arg, uint64_t n)
{
	size_t size = *(unsigned *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		void *p = malloc(size);

		if (!p)
			bench_fail("malloc", -ENOMEM);
		bench_escape(p);
		free(p);
	}
	return bench_now() - t0;
}

/* ---- across threads ------------------------------------------------------- */

/*
 * A bounded single-producer/single-consumer ring.  Each side keeps its
 * index private and publishes it every XRING_BATCH items (and whenever it
 * has to wait), so the two cores exchange one cache line per batch, not
 * one per item.  A waiting side spins briefly, then yields: on a machine
 * with two cores and other work a spinning waiter would steal the core the
 * other side needs.
 */
#define XRING_SIZE 1024u	/* power of two */
#define XRING_BATCH 64u
#define XSPIN 256

struct xring {
	_Alignas(64) _Atomic uint64_t head;	/* producer: items published */
	_Alignas(64) _Atomic uint64_t tail;	/* consumer: items released */
	_Alignas(64) _Atomic int ready;
	uint64_t n;
	int kind;		/* XK_RAW or XK_MALLOC */
	_Alignas(64) void *slot[XRING_SIZE];
};

enum { XK_RAW, XK_MALLOC };

static inline void xpause(unsigned *spins)
{
	if (++*spins < XSPIN) {
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	} else {
		sched_yield();
	}
}

static void *xconsumer(void *arg)
{
	struct xring *q = arg;
	uint64_t t = 0, h;

	atomic_store_explicit(&q->ready, 1, memory_order_release);
	while (t < q->n) {
		unsigned spins = 0;

		while ((h = atomic_load_explicit(&q->head,
						 memory_order_acquire)) == t)
			xpause(&spins);
		for (; t < h; t++) {
			void *p = q->slot[t & (XRING_SIZE - 1)];

			if (q->kind == XK_RAW)
				bl_raw_put(p);
			else
				free(p);
			if ((t & (XRING_BATCH - 1)) == XRING_BATCH - 1)
				atomic_store_explicit(&q->tail, t + 1,
						      memory_order_release);
		}
		atomic_store_explicit(&q->tail, t, memory_order_release);
	}
	return NULL;
}

static uint64_t xrun(int kind, size_t size, uint64_t n)
{
	static struct xring q;
	uint64_t t0, h, tail_seen = 0;
	pthread_t th;
	int rc;

	atomic_store(&q.head, 0);
	atomic_store(&q.tail, 0);
	atomic_store(&q.ready, 0);
	q.n = n;
	q.kind = kind;
	rc = pthread_create(&th, NULL, xconsumer, &q);
	if (rc)
		bench_fail("pthread_create", -rc);
	while (!atomic_load_explicit(&q.ready, memory_order_acquire))
		sched_yield();

	t0 = bench_now();
	for (h = 0; h < n; h++) {
		void *p;

		if (h - tail_seen == XRING_SIZE) {
			unsigned spins = 0;

			atomic_store_explicit(&q.head, h, memory_order_release);
			while ((tail_seen = atomic_load_explicit(
					&q.tail, memory_order_acquire)) + XRING_SIZE == h)
				xpause(&spins);
		}
		p = kind == XK_RAW ? (void *)bl_raw_create(size) : malloc(size);
		if (!p)
			bench_fail("create", -ENOMEM);
		q.slot[h & (XRING_SIZE - 1)] = p;
		if ((h & (XRING_BATCH - 1)) == XRING_BATCH - 1)
			atomic_store_explicit(&q.head, h + 1,
					      memory_order_release);
	}
	atomic_store_explicit(&q.head, n, memory_order_release);
	pthread_join(th, NULL);
	return bench_now() - t0;
}

static uint64_t w_xalloc(void *arg, uint64_t n)
{
	return xrun(XK_RAW, *(unsigned *)arg, n);
}

static uint64_t w_xmalloc(void *arg, uint64_t n)
{
	return xrun(XK_MALLOC, *(unsigned *)arg, n);
}

/*
 * benchutil.h's calibration starts at one operation; a cross-thread call
 * costs a thread start and join besides its operations, and one such call
 * that the scheduler delays by 20 ms on a busy two-core machine would fix
 * the count at a few operations.  So calibration here starts at
 * CALIB_MIN_N operations and never picks fewer.
 */
#define CALIB_MIN_N 65536ull

static uint64_t pool_calibrate(bench_fn fn, void *arg)
{
	uint64_t n = CALIB_MIN_N, wall;
	double per;

	if (bench_o.iters)
		return bench_fixed_iters(fn, arg);
	if (bench_o.ceph_counts) {
		fn(arg, 1000000 / 16);
		return 1000000;
	}
	for (;;) {
		uint64_t t0 = bench_now();

		fn(arg, n);
		wall = bench_now() - t0;
		if (wall >= BENCH_CALIB_NS || n >= (1ull << 40))
			break;
		n *= wall < BENCH_CALIB_NS / 64 ? 16 : 2;
	}
	per = (double)wall / (double)n;
	n = (uint64_t)((double)BENCH_TARGET_NS / per);
	return n > CALIB_MIN_N ? n : CALIB_MIN_N;
}

/*
 * Ceph's "N alloc of size S in T" line (@what "alloc") or its cross-thread
 * twin (@what "cross-thread alloc"), plus RESULT <name> in ns per raw.
 */
static void alloc_line(const char *name, const char *what, size_t size,
		       bench_fn fn, void *arg)
{
	uint64_t n = pool_calibrate(fn, arg);

	for (int r = 0; r < bench_o.repeats; r++) {
		uint64_t ns = fn(arg, n);

		if (!bench_o.quiet)
			printf("%llu %s of size %zu in %.6f\n",
			       (unsigned long long)n, what, size,
			       (double)ns / 1e9);
		printf("RESULT %s %.3f ns\n", name, (double)ns / (double)n);
		fflush(stdout);
	}
}

/* ---- messenger-like pinning ---------------------------------------------- */

#define PIN_RECV 10000u		/* messages received */
#define PIN_EVERY 100u		/* keep a slice of every 100th */
#define PIN_RECV_LEN 65536u
#define PIN_SLICE 200u
#define PIN_MAX_WASTE 4096u
#define PIN_KEPT (PIN_RECV / PIN_EVERY)

enum { PIN_KEEP, PIN_COMPACT_EACH, PIN_COMPACT_ALL };

static int64_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return (int64_t)(mi.uordblks + mi.hblkhd);
}

static int64_t rss_bytes(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (int64_t)res * sysconf(_SC_PAGESIZE);
}

static void pin_result(const char *name, const char *what, double v,
		       const char *unit)
{
	printf("RESULT %s.%s %.0f %s\n", name, what, v, unit);
}

static void w_pin(const char *name, int mode)
{
	static struct bl_list kept[PIN_KEPT];
	struct bl_list msg, all;
	struct bl_pool_stats ps0, ps;
	struct bl_pool_cache_stats cs;
	int64_t heap0, rss0;
	uint64_t compact_ns = 0;
	size_t kept_bytes = 0, pinned = 0;
	unsigned nkept = 0;

	bl_list_init(&msg);
	bl_list_init(&all);
	for (unsigned k = 0; k < PIN_KEPT; k++)
		bl_list_init(&kept[k]);
	bl_pool_get_stats(bl_pool_default(), &ps0);
	heap0 = heap_in_use();
	rss0 = rss_bytes();

	for (unsigned i = 0; i < PIN_RECV; i++) {
		struct bl_raw *r = bl_raw_create(PIN_RECV_LEN);
		struct bl_ptr p;

		if (!r)
			bench_fail("bl_raw_create", -ENOMEM);
		memset(bl_raw_data(r), (int)(i & 0xff), PIN_RECV_LEN);
		bl_ptr_from_raw(&p, r);
		must(bl_list_append_ptr_move(&msg, &p), "append_ptr_move");
		if (i % PIN_EVERY == PIN_EVERY - 1) {
			/* a slice somewhere inside the message */
			size_t off = 64 + (size_t)(i * 977u) %
					  (PIN_RECV_LEN - PIN_SLICE - 64);
			struct bl_list *dst = mode == PIN_COMPACT_ALL ?
					      &all : &kept[nkept];
			struct bl_list s;

			bl_list_init(&s);
			must(bl_list_substr_of(&s, &msg, off, PIN_SLICE),
			     "substr_of");
			must(bl_list_claim_append(dst, &s), "claim_append");
			if (mode == PIN_COMPACT_EACH) {
				uint64_t t0 = bench_now();
				ssize_t c = bl_list_compact(dst, PIN_MAX_WASTE);

				compact_ns += bench_now() - t0;
				if (c != PIN_SLICE)
					bench_fail("bl_list_compact", (long)c);
			}
			nkept++;
		}
		bl_list_clear(&msg);
	}
	if (mode == PIN_COMPACT_ALL) {
		uint64_t t0 = bench_now();
		ssize_t c = bl_list_compact(&all, PIN_MAX_WASTE);

		compact_ns = bench_now() - t0;
		if (c != (ssize_t)PIN_KEPT * PIN_SLICE)
			bench_fail("bl_list_compact", (long)c);
		kept_bytes = bl_list_length(&all);
		pinned = kept_bytes + bl_list_pinned_unused(&all);
	} else {
		for (unsigned k = 0; k < nkept; k++) {
			kept_bytes += bl_list_length(&kept[k]);
			pinned += bl_list_length(&kept[k]) +
				  bl_list_pinned_unused(&kept[k]);
		}
	}
	bl_pool_get_stats(bl_pool_default(), &ps);
	bl_pool_cache_get_stats(&cs);

	pin_result(name, "kept", (double)kept_bytes, "B");
	pin_result(name, "pinned", (double)pinned, "B");
	pin_result(name, "pool", (double)(ps.bytes - ps0.bytes), "B");
	pin_result(name, "cache", (double)cs.cached_bytes, "B");
	pin_result(name, "heap", (double)(heap_in_use() - heap0), "B");
	pin_result(name, "rss", (double)(rss_bytes() - rss0), "B");
	bl_pool_cache_flush();
	pin_result(name, "heap_flushed", (double)(heap_in_use() - heap0), "B");
	if (mode != PIN_KEEP)
		printf("RESULT %s.compact_ns %.1f ns\n", name,
		       (double)compact_ns /
		       (mode == PIN_COMPACT_EACH ? nkept : 1));
	fflush(stdout);

	for (unsigned k = 0; k < PIN_KEPT; k++)
		bl_list_clear(&kept[k]);
	bl_list_clear(&all);
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const unsigned sizes[] = { 4, 32, 256, 1024, 4096, 16384 };
	static const struct {
		const char *name;
		int mode;
	} pins[] = {
		{ "pin_keep", PIN_KEEP },
		{ "pin_compact_each", PIN_COMPACT_EACH },
		{ "pin_compact_all", PIN_COMPACT_ALL },
	};
	char name[64];
	unsigned i;

	bench_parse_args(argc, argv, "bench_pool");
	if (!bench_o.quiet)
		printf("# libbufferlist %s, pool cache %s, %ld CPU(s)\n",
		       BL_VERSION_STRING,
		       bl_pool_cache_enabled() ? "on" : "off (BL_POOL_CACHE=0)",
		       sysconf(_SC_NPROCESSORS_ONLN));

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned size = sizes[i];
		bool on = bl_pool_cache_enabled();

		snprintf(name, sizeof(name), "alloc_%u", size);
		if (bench_want(name))
			alloc_line(name, "alloc", size, w_alloc, &size);
		snprintf(name, sizeof(name), "alloc_nocache_%u", size);
		if (bench_want(name)) {
			bl_pool_cache_enable(false);
			alloc_line(name, "alloc", size, w_alloc, &size);
			bl_pool_cache_enable(on);
		}
		snprintf(name, sizeof(name), "malloc_%u", size);
		if (bench_want(name))
			alloc_line(name, "malloc", size, w_malloc, &size);
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		unsigned size = sizes[i];
		bool on = bl_pool_cache_enabled();

		snprintf(name, sizeof(name), "xthread_alloc_%u", size);
		if (bench_want(name))
			alloc_line(name, "cross-thread alloc", size,
				   w_xalloc, &size);
		snprintf(name, sizeof(name), "xthread_nocache_%u", size);
		if (bench_want(name)) {
			bl_pool_cache_enable(false);
			alloc_line(name, "cross-thread alloc", size,
				   w_xalloc, &size);
			bl_pool_cache_enable(on);
		}
		snprintf(name, sizeof(name), "xthread_malloc_%u", size);
		if (bench_want(name))
			alloc_line(name, "cross-thread malloc", size,
				   w_xmalloc, &size);
	}
	for (i = 0; i < sizeof(pins) / sizeof(pins[0]); i++)
		if (bench_want(pins[i].name))
			w_pin(pins[i].name, pins[i].mode);
	return 0;
}
