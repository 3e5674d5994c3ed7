/* SPDX-License-Identifier: MIT */
/*
 * blbench_hist.c - the latency histogram of blbench_hist.h: log-linear
 * buckets in one fixed array, so that recording the latency of every
 * operation costs no memory beyond it and the percentiles are known to
 * within a bucket (relative error under 1%).  Only libc.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <math.h>
#include <string.h>
#include "blbench_hist.h"

void blb_hist_init(struct blb_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min_ns = UINT64_MAX;
}

/*
 * Values below 2^SUB_BITS are their own index; above, the group is the
 * position of the top bit (k) and the bucket the next SUB_BITS bits.
 * Group k starts at index (k - SUB_BITS + 1) * SUB, which continues the
 * first range without a gap.
 */
size_t blb_hist_index(uint64_t ns)
{
	unsigned k;

	if (ns < BLB_HIST_SUB)
		return (size_t)ns;
	k = 63u - (unsigned)__builtin_clzll(ns);
	if (k >= BLB_HIST_TOP_BITS)
		return BLB_HIST_BUCKETS - 1;
	return (size_t)(k - BLB_HIST_SUB_BITS + 1) * BLB_HIST_SUB +
	       (size_t)((ns >> (k - BLB_HIST_SUB_BITS)) - BLB_HIST_SUB);
}

void blb_hist_bucket(size_t i, uint64_t *lower, uint64_t *width)
{
	size_t g = i / BLB_HIST_SUB, sub = i % BLB_HIST_SUB;

	if (g == 0) {
		*lower = sub;
		*width = 1;
		return;
	}
	*width = (uint64_t)1 << (g - 1);
	*lower = (uint64_t)(BLB_HIST_SUB + sub) << (g - 1);
}

void blb_hist_add(struct blb_hist *h, uint64_t ns)
{
	h->b[blb_hist_index(ns)]++;
	h->count++;
	if (ns < h->min_ns)
		h->min_ns = ns;
	if (ns > h->max_ns)
		h->max_ns = ns;
}

uint64_t blb_hist_ns(double seconds)
{
	double ns = seconds * 1e9;

	if (!(ns > 0))
		return 0;
	if (ns >= 18446744073709549568.0)	/* the last double below 2^64 */
		return UINT64_MAX;
	return (uint64_t)(ns + 0.5);
}

uint64_t blb_hist_quantile(const struct blb_hist *h, double q)
{
	uint64_t rank, seen = 0, lower, width, v;
	size_t i;

	if (!h->count)
		return 0;
	if (!(q > 0))
		return h->min_ns;
	if (q >= 1)
		return h->max_ns;
	/* the tolerance keeps 0.5 * 1000 at rank 500, not 501 */
	rank = (uint64_t)ceil(q * (double)h->count - 1e-6);
	if (rank < 1)
		rank = 1;
	for (i = 0; i < BLB_HIST_BUCKETS; i++) {
		seen += h->b[i];
		if (seen >= rank)
			break;
	}
	if (i == BLB_HIST_BUCKETS)	/* cannot be: the counts add up */
		return h->max_ns;
	blb_hist_bucket(i, &lower, &width);
	v = lower + width / 2;
	if (v < h->min_ns)
		v = h->min_ns;
	if (v > h->max_ns)
		v = h->max_ns;
	return v;
}
