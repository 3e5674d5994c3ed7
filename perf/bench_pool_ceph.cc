// SPDX-License-Identifier: MIT
/*
 * bench_pool_ceph.cc - the memory workloads of perf/bench_pool.c, run on
 * Ceph's buffer::create (librados' exported ceph::buffer, <rados/buffer.h>).
 *
 * Every workload mirrors the one of the same name in bench_pool.c (same
 * sizes, same ring, same timed region); see that file for what each one
 * measures.  Lines are machine-readable (benchutil.h).
 *
 *  alloc_N          bufferptr p(buffer::create(N)) going out of scope.
 *  xthread_alloc_N  the producer move-assigns a new bufferptr into a ring
 *                   slot, the consumer drops it (assigns an empty bufferptr over it).
 *  pin_keep         the messenger-like workload: the kept 200-byte slices
 *                   are bufferlist::substr_of() of the received message,
 *                   which (Ceph has no compaction) hold the whole 64 KiB
 *                   raw.  .pinned is the capacity of the distinct raws the
 *                   kept lists reference (ptr::raw_length(), deduplicated
 *                   by ptr::raw_c_str()); .heap and .rss as in
 *                   bench_pool.c.  librados exports no allocation counter
 *                   (buffer::get_total_alloc and the mempool accessors are
 *                   not in its dynamic symbols), hence mallinfo2.
 *  pin_rebuild_each the closest Ceph idiom to compaction: each kept list
 *                   is rebuild()-ed (copied into a raw of its own length)
 *                   as soon as the slice is taken.
 */
#include <rados/buffer.h>

#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <algorithm>
#include <atomic>
#include <utility>
#include <vector>

extern "C" {
#include "benchutil.h"
}

using ceph::bufferlist;
using ceph::bufferptr;
namespace buffer = ceph::buffer;

/* ---- same thread --------------------------------------------------------- */

static uint64_t w_alloc(void *arg, uint64_t n)
{
	unsigned size = *(unsigned *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		bufferptr p(buffer::create(size));

		bench_escape(&p);
	}
	return bench_now() - t0;
}

/* ---- across threads (the ring of bench_pool.c, slots of bufferptr) ------- */

#define XRING_SIZE 1024u
#define XRING_BATCH 64u
#define XSPIN 256

struct xring {
	alignas(64) std::atomic<uint64_t> head{0};
	alignas(64) std::atomic<uint64_t> tail{0};
	alignas(64) std::atomic<int> ready{0};
	uint64_t n = 0;
	alignas(64) bufferptr slot[XRING_SIZE];
};

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
	struct xring *q = (struct xring *)arg;
	uint64_t t = 0, h;

	q->ready.store(1, std::memory_order_release);
	while (t < q->n) {
		unsigned spins = 0;

		while ((h = q->head.load(std::memory_order_acquire)) == t)
			xpause(&spins);
		for (; t < h; t++) {
			q->slot[t & (XRING_SIZE - 1)] = bufferptr();
			if ((t & (XRING_BATCH - 1)) == XRING_BATCH - 1)
				q->tail.store(t + 1, std::memory_order_release);
		}
		q->tail.store(t, std::memory_order_release);
	}
	return NULL;
}

static uint64_t w_xalloc(void *arg, uint64_t n)
{
	static struct xring q;
	unsigned size = *(unsigned *)arg;
	uint64_t t0, h, tail_seen = 0;
	pthread_t th;
	int rc;

	q.head.store(0);
	q.tail.store(0);
	q.ready.store(0);
	q.n = n;
	rc = pthread_create(&th, NULL, xconsumer, &q);
	if (rc)
		bench_fail("pthread_create", -rc);
	while (!q.ready.load(std::memory_order_acquire))
		sched_yield();

	t0 = bench_now();
	for (h = 0; h < n; h++) {
		if (h - tail_seen == XRING_SIZE) {
			unsigned spins = 0;

			q.head.store(h, std::memory_order_release);
			while ((tail_seen = q.tail.load(std::memory_order_acquire)) +
			       XRING_SIZE == h)
				xpause(&spins);
		}
		q.slot[h & (XRING_SIZE - 1)] = bufferptr(buffer::create(size));
		if ((h & (XRING_BATCH - 1)) == XRING_BATCH - 1)
			q.head.store(h + 1, std::memory_order_release);
	}
	q.head.store(n, std::memory_order_release);
	pthread_join(th, NULL);
	return bench_now() - t0;
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

#define PIN_RECV 10000u
#define PIN_EVERY 100u
#define PIN_RECV_LEN 65536u
#define PIN_SLICE 200u
#define PIN_KEPT (PIN_RECV / PIN_EVERY)

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

static void w_pin(const char *name, bool rebuild)
{
	std::vector<bufferlist> kept(PIN_KEPT);
	std::vector<std::pair<const char *, unsigned>> raws;
	int64_t heap0 = heap_in_use(), rss0 = rss_bytes();
	uint64_t rebuild_ns = 0;
	size_t kept_bytes = 0, pinned = 0;
	unsigned nkept = 0;

	for (unsigned i = 0; i < PIN_RECV; i++) {
		bufferlist msg;
		bufferptr p(buffer::create(PIN_RECV_LEN));

		memset(p.c_str(), (int)(i & 0xff), PIN_RECV_LEN);
		msg.push_back(std::move(p));
		if (i % PIN_EVERY == PIN_EVERY - 1) {
			size_t off = 64 + (size_t)(i * 977u) %
					  (PIN_RECV_LEN - PIN_SLICE - 64);

			kept[nkept].substr_of(msg, off, PIN_SLICE);
			if (rebuild) {
				uint64_t t0 = bench_now();

				kept[nkept].rebuild();
				rebuild_ns += bench_now() - t0;
			}
			nkept++;
		}
	}
	for (unsigned k = 0; k < nkept; k++) {
		kept_bytes += kept[k].length();
		for (const auto &bp : kept[k].buffers())
			raws.emplace_back(bp.raw_c_str(), bp.raw_length());
	}
	/* each raw once, however many kept lists reference it */
	std::sort(raws.begin(), raws.end());
	raws.erase(std::unique(raws.begin(), raws.end()), raws.end());
	for (const auto &r : raws)
		pinned += r.second;

	pin_result(name, "kept", (double)kept_bytes, "B");
	pin_result(name, "pinned", (double)pinned, "B");
	pin_result(name, "heap", (double)(heap_in_use() - heap0), "B");
	pin_result(name, "rss", (double)(rss_bytes() - rss0), "B");
	if (rebuild)
		printf("RESULT %s.compact_ns %.1f ns\n", name,
		       (double)rebuild_ns / nkept);
	fflush(stdout);
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const unsigned sizes[] = { 4, 32, 256, 1024, 4096, 16384 };
	char name[64];

	bench_parse_args(argc, argv, "bench_pool_ceph");

	for (unsigned size : sizes) {
		snprintf(name, sizeof(name), "alloc_%u", size);
		if (bench_want(name))
			alloc_line(name, "alloc", size, w_alloc, &size);
	}
	for (unsigned size : sizes) {
		snprintf(name, sizeof(name), "xthread_alloc_%u", size);
		if (bench_want(name))
			alloc_line(name, "cross-thread alloc", size,
				   w_xalloc, &size);
	}
	if (bench_want("pin_keep"))
		w_pin("pin_keep", false);
	if (bench_want("pin_rebuild_each"))
		w_pin("pin_rebuild_each", true);
	return 0;
}
