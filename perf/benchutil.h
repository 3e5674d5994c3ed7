/* SPDX-License-Identifier: MIT */
/*
 * benchutil.h - the measuring harness shared by bench_core (ours),
 * bench_ceph (Ceph's bufferlist) and bench_evbuffer (libevent).
 *
 * Compiles as C11 and as C++17, so the three programs time their workloads
 * the same way:
 *
 *  - a workload is a function `uint64_t fn(void *arg, uint64_t n)` that
 *    performs @n operations and returns the nanoseconds of the part that is
 *    being measured.  Most workloads time their whole loop; those that must
 *    rebuild their input between operations (splice, rebuild, claim into a
 *    non-empty list, destructive parsing) time only the operation and do
 *    the rebuilding outside the timed region;
 *  - bench_calibrate() calls fn with growing n (warm-up and calibration)
 *    until one call takes BENCH_CALIB_NS of wall time, then picks n so that
 *    one measured call takes about BENCH_TARGET_NS of wall time (setup
 *    included, so workloads with expensive setup do fewer operations);
 *    bench_ns()/bench_gbs() then make one measured call per repeat;
 *  - every measured call prints one machine line
 *        RESULT <workload> <value> <unit>
 *    where unit is "ns" (per operation, lower is better) or "GB/s"
 *    (10^9 bytes per second, higher is better).  perf/run-core.sh collects
 *    these lines from interleaved runs and takes medians.
 *
 * Command line of every program:  [-r R] [-C] [-q] [-l] [FILTER...]
 *    -r R    measure every workload R times (default 1)
 *    -C      Ceph's own counts for the workloads that print Ceph's lines
 *            (1000000 allocs, 4000 fills) instead of calibrated counts
 *    -q      only RESULT lines
 *    -l      list the workloads this program has (may repeat a name)
 *    FILTER  run only workloads whose name contains FILTER; =NAME matches
 *            NAME exactly; several filters: any of them
 *
 * Environment: BL_BENCH_ITERS=N replaces the calibration (and -C's counts)
 * by a warm-up call of one operation and measured calls of exactly N
 * operations, so that a run under valgrind is short and the instructions
 * of two runs that differ only in N differ by exactly the operations
 * (perf/callgrind-ops.sh).
 *
 * Allocator state carries over from one workload to the next inside a
 * process (glibc raises its mmap threshold when a large block is freed, and
 * trims the heap top), so perf/run-core.sh runs each workload in a process
 * of its own.
 */
#ifndef BUFFERLIST_PERF_BENCHUTIL_H
#define BUFFERLIST_PERF_BENCHUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BENCH_CALIB_NS 20000000ull	/* 20 ms: warm-up/calibration floor */
#define BENCH_TARGET_NS 250000000ull	/* 0.25 s per measured call */

#define BENCH_MAX_FILTERS 32

struct bench_opts {
	const char *filter[BENCH_MAX_FILTERS];	/* none: everything */
	int nfilter;
	int list;		/* -l */
	int repeats;
	int ceph_counts;	/* -C */
	int quiet;		/* -q */
	double timer_ns;	/* cost of an empty timed region */
	uint64_t iters;		/* BL_BENCH_ITERS; 0: calibrate */
};

static struct bench_opts bench_o = { { NULL }, 0, 0, 1, 0, 0, 0.0, 0 };

typedef uint64_t (*bench_fn)(void *arg, uint64_t n);

static inline uint64_t bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Keep @p (and what it points to) alive as far as the compiler knows. */
static inline void bench_escape(const void *p)
{
	__asm__ __volatile__("" : : "g"(p) : "memory");
}

/* A value the compiler must compute. */
static volatile uint64_t bench_sink;

static inline void bench_consume(uint64_t v)
{
	bench_sink += v;
}

static inline void bench_fail(const char *what, long rc)
{
	fprintf(stderr, "bench: %s failed (%ld)\n", what, rc);
	exit(2);
}

static inline void bench_note(const char *fmt, const char *s)
{
	if (!bench_o.quiet)
		printf(fmt, s);
}

/*
 * Should workload @name run?  In list mode it prints the name and says no;
 * callers that test a group of names combine them with `|` (not `||`) so
 * that every name is listed.
 */
static inline int bench_want(const char *name)
{
	int i;

	if (bench_o.list) {
		printf("%s\n", name);
		return 0;
	}
	if (!bench_o.nfilter)
		return 1;
	for (i = 0; i < bench_o.nfilter; i++) {
		const char *f = bench_o.filter[i];

		if (f[0] == '=' ? !strcmp(name, f + 1) : !!strstr(name, f))
			return 1;
	}
	return 0;
}

static inline int bench_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Median cost of an empty timed region (two back-to-back clock reads).
 * Workloads that time a short operation many times subtract it.
 */
static inline double bench_timer_overhead(void)
{
	enum { N = 2001 };
	static uint64_t d[N];
	int i;

	for (i = 0; i < N; i++) {
		uint64_t t0 = bench_now();
		uint64_t t1 = bench_now();

		d[i] = t1 - t0;
	}
	qsort(d, N, sizeof(d[0]), bench_cmp_u64);
	return (double)d[N / 2];
}

/* Nanoseconds of @n timed regions, less the timer's own cost. */
static inline uint64_t bench_less_timer(uint64_t ns, uint64_t n)
{
	double o = bench_o.timer_ns * (double)n;

	return (double)ns > o ? (uint64_t)((double)ns - o) : 0;
}

static inline void bench_parse_args(int argc, char **argv, const char *prog)
{
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-r") && i + 1 < argc) {
			bench_o.repeats = atoi(argv[++i]);
			if (bench_o.repeats < 1)
				bench_o.repeats = 1;
		} else if (!strcmp(argv[i], "-C")) {
			bench_o.ceph_counts = 1;
		} else if (!strcmp(argv[i], "-q")) {
			bench_o.quiet = 1;
		} else if (!strcmp(argv[i], "-l")) {
			bench_o.list = 1;
			bench_o.quiet = 1;
		} else if (!strcmp(argv[i], "-h") || argv[i][0] == '-') {
			fprintf(stderr,
				"usage: %s [-r REPEATS] [-C] [-q] [-l] [FILTER...]\n",
				prog);
			exit(argv[i][1] == 'h' ? 0 : 1);
		} else if (bench_o.nfilter < BENCH_MAX_FILTERS) {
			bench_o.filter[bench_o.nfilter++] = argv[i];
		}
	}
	if (getenv("BL_BENCH_ITERS")) {
		const char *e = getenv("BL_BENCH_ITERS");
		char *end;

		bench_o.iters = strtoull(e, &end, 10);
		if (end == e || *end || !bench_o.iters || e[0] == '-') {
			fprintf(stderr, "%s: BL_BENCH_ITERS must be a positive count\n",
				prog);
			exit(1);
		}
	}
	bench_o.timer_ns = bench_timer_overhead();
	if (!bench_o.quiet)
		printf("# %s: timer overhead %.1f ns, %d repeat(s)%s%s\n", prog,
		       bench_o.timer_ns, bench_o.repeats,
		       bench_o.ceph_counts ? ", Ceph's counts" : "",
		       bench_o.iters ? ", BL_BENCH_ITERS" : "");
}

/*
 * BL_BENCH_ITERS: one warm-up operation (the same in every run, whatever
 * N is) and N operations per measured call.  Returns 0 when it is not set.
 */
static inline uint64_t bench_fixed_iters(bench_fn fn, void *arg)
{
	if (!bench_o.iters)
		return 0;
	fn(arg, 1);
	return bench_o.iters;
}

/*
 * Calibrate @fn (this is also its warm-up) and return the number of
 * operations one measured call should do.  @fixed_n, if non-zero, skips
 * the calibration (one warm-up call of fixed_n / 16 operations instead).
 * BL_BENCH_ITERS overrides both.
 */
static inline uint64_t bench_calibrate(bench_fn fn, void *arg,
				       uint64_t fixed_n)
{
	uint64_t n = 1, wall;
	double per;

	if (bench_o.iters)
		return bench_fixed_iters(fn, arg);
	if (fixed_n) {
		fn(arg, fixed_n / 16 ? fixed_n / 16 : 1);
		return fixed_n;
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
	return n ? n : 1;
}

/*
 * Measure a workload whose result is nanoseconds per operation.  Prints
 * and returns the last measurement (ns per op).
 */
static inline double bench_ns(const char *name, bench_fn fn, void *arg)
{
	uint64_t n = bench_calibrate(fn, arg, 0);
	double v = 0;
	int r;

	for (r = 0; r < bench_o.repeats; r++) {
		v = (double)fn(arg, n) / (double)n;
		printf("RESULT %s %.3f ns\n", name, v);
		fflush(stdout);
	}
	return v;
}

/*
 * Measure a throughput workload: each operation processes @bytes bytes.
 * Prints GB/s (10^9 bytes/s) and returns the last measurement.
 */
static inline double bench_gbs(const char *name, bench_fn fn, void *arg,
			       uint64_t bytes)
{
	uint64_t n = bench_calibrate(fn, arg, 0);
	double v = 0;
	int r;

	for (r = 0; r < bench_o.repeats; r++) {
		uint64_t ns = fn(arg, n);

		v = ns ? (double)bytes * (double)n / (double)ns : 0;
		printf("RESULT %s %.3f GB/s\n", name, v);
		fflush(stdout);
	}
	return v;
}

/* Ceph's "N alloc of size S in T" line plus RESULT alloc_<S> in ns. */
static inline void bench_alloc_line(const char *name, size_t size,
				    bench_fn fn, void *arg)
{
	uint64_t n = bench_calibrate(fn, arg,
				     bench_o.ceph_counts ? 1000000 : 0);
	int r;

	for (r = 0; r < bench_o.repeats; r++) {
		uint64_t ns = fn(arg, n);

		if (!bench_o.quiet)
			printf("%llu alloc of size %zu in %.6f\n",
			       (unsigned long long)n, size, (double)ns / 1e9);
		printf("RESULT %s %.3f ns\n", name, (double)ns / (double)n);
		fflush(stdout);
	}
}

/*
 * Ceph's "N fills of buffer len L with S byte appends in T" line plus
 * RESULT fill_<S> in GB/s.  One operation of @fn is one whole fill.
 */
static inline void bench_fill_line(const char *name, size_t buflen,
				   size_t step, bench_fn fn, void *arg)
{
	uint64_t n = bench_calibrate(fn, arg, bench_o.ceph_counts ? 4000 : 0);
	int r;

	for (r = 0; r < bench_o.repeats; r++) {
		uint64_t ns = fn(arg, n);

		if (!bench_o.quiet)
			printf("%llu fills of buffer len %zu with %zu byte appends in %.6f\n",
			       (unsigned long long)n, buflen, step,
			       (double)ns / 1e9);
		printf("RESULT %s %.3f GB/s\n", name,
		       (double)buflen * (double)n / (double)ns);
		fflush(stdout);
	}
}

/* ---- shared workload parameters ------------------------------------------ */

#define BENCH_SEG 4096u		/* segment of the 1024-segment lists */
#define BENCH_NSEG 1024u
#define BENCH_SPLICE_OFF (1536u * 1024)	/* 1.5 MiB */
#define BENCH_SPLICE_LEN (1024u * 1024)	/* 1 MiB */
#define BENCH_SPLICE_CUT 123u		/* splice_1M_cut: both ends inside */
#define BENCH_SUBSTR_OFF (2048u * 1024)	/* the middle: segment 512 */
#define BENCH_SUBSTR_LEN 4096u
#define BENCH_SMALL_OFF 5000u		/* substr_100: inside segment 1 */
#define BENCH_SMALL_LEN 100u
#define BENCH_CRC_LEN (4u << 20)
#define BENCH_REBUILD_NSEG 256u		/* 256 x 4 KiB = 1 MiB */
#define BENCH_FILL_LEN 1048576u
#define BENCH_FRAMES 100000u
#define BENCH_APPEND_CLEAR 4096u	/* 8-byte appends between clears */
#define BENCH_LOOKUP_SEG 64u		/* segment of the lookup lists */
#define BENCH_LOOKUP_LEN 100u		/* bytes one lookup shares */

/* Byte @i of every payload the programs build, so crcs can be compared. */
static inline unsigned char bench_byte(size_t i)
{
	return (unsigned char)(i * 131u + 7u);
}

static inline void bench_fill_pattern(void *p, size_t len, size_t base)
{
	unsigned char *c = (unsigned char *)p;
	size_t i;

	for (i = 0; i < len; i++)
		c[i] = bench_byte(base + i);
}

/* Payload lengths of the frames: the same 16..64 sequence everywhere. */
static inline uint32_t bench_frame_len(uint32_t *state)
{
	*state = *state * 1664525u + 1013904223u;
	return 16u + (*state >> 16) % 49u;
}

#define BENCH_FRAME_SEED 12345u

#endif /* BUFFERLIST_PERF_BENCHUTIL_H */
