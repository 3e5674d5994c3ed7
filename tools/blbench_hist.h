/* SPDX-License-Identifier: MIT */
/*
 * blbench_hist.h - a latency histogram of fixed size (blbench_hist.c), for
 * the percentiles blbench prints after rados bench's summary.  HDR-style
 * log-linear buckets: every power-of-two range [2^k, 2^(k+1)) of
 * nanoseconds is split into BLB_HIST_SUB equal buckets, so a bucket is at
 * most 1/128 of its lower bound wide (below 128 ns every nanosecond has
 * its own).  That covers 1 ns to 2^41 ns (about 2199 s; longer values
 * count in the last bucket) in 35 KiB, and adding a value is an index
 * computation and an increment: no allocation, whatever the run's length.
 * It depends on nothing else of blbench, so a test can compile it alone.
 */
#ifndef BLBENCH_HIST_H
#define BLBENCH_HIST_H

#include <stddef.h>
#include <stdint.h>

#define BLB_HIST_SUB_BITS 7
#define BLB_HIST_SUB (1u << BLB_HIST_SUB_BITS)
#define BLB_HIST_TOP_BITS 41		/* up to 2^41 ns */
#define BLB_HIST_BUCKETS \
	((size_t)(BLB_HIST_TOP_BITS - BLB_HIST_SUB_BITS + 1) * BLB_HIST_SUB)

struct blb_hist {
	uint64_t count;
	uint64_t min_ns, max_ns;	/* exact; min UINT64_MAX when empty */
	uint64_t b[BLB_HIST_BUCKETS];
};

void blb_hist_init(struct blb_hist *h);
/* Counts one value of @ns nanoseconds. */
void blb_hist_add(struct blb_hist *h, uint64_t ns);
/* Seconds to the nearest nanosecond (negative: 0; huge: UINT64_MAX). */
uint64_t blb_hist_ns(double seconds);
/*
 * The value at quantile @q (0..1; 0.999 for p99.9): the middle of the
 * bucket holding the ceil(q * count)-th smallest value, kept within the
 * exact min and max, so it is within 1/256 of a value counted there and
 * never above the maximum (q = 1 gives the maximum).  0 when empty.
 */
uint64_t blb_hist_quantile(const struct blb_hist *h, double q);
/* Bucket @i's index for @ns, and the range [lower, lower + width) of @i. */
size_t blb_hist_index(uint64_t ns);
void blb_hist_bucket(size_t i, uint64_t *lower, uint64_t *width);

#endif /* BLBENCH_HIST_H */
