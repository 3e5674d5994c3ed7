// SPDX-License-Identifier: MIT
/*
 * bench_ceph.cc - the core workloads of perf/bench_core.c, run on Ceph's
 * own bufferlist (librados' exported ceph::buffer, <rados/buffer.h>).
 *
 * Every workload mirrors the one of the same name in bench_core.c, with
 * the same sizes, segment layout and timed region; see that file for what
 * each one measures.  Lines are machine-readable (benchutil.h).  Only the
 * API librados exports is used: buffer::create, list::append/push_back,
 * claim_append, splice, substr_of, rebuild, crc32c/invalidate_crc,
 * prepare_iov (a header template), const_iterator::copy and
 * get_ptr_and_advance.
 */
#include <rados/buffer.h>

#include <sys/uio.h>
#include <vector>

extern "C" {
#include "benchutil.h"
}

using ceph::bufferlist;
using ceph::bufferptr;
namespace buffer = ceph::buffer;

/* ---- alloc --------------------------------------------------------------- */

/* create + release of one raw: a bufferptr going out of scope. */
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

/* ---- fills --------------------------------------------------------------- */

static char fill_src[16384];

static uint64_t w_fill(void *arg, uint64_t n)
{
	unsigned step = *(unsigned *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		bufferlist bl;

		for (unsigned j = 0; j < BENCH_FILL_LEN; j += step)
			bl.append(fill_src, step);
		bench_consume(bl.length());
		bl.clear();
	}
	return bench_now() - t0;
}

/* ---- 8-byte append ------------------------------------------------------- */

static uint64_t w_append8(void *, uint64_t n)
{
	bufferlist bl;
	unsigned k = 0;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		bl.append((const char *)&i, 8);
		if (++k == BENCH_APPEND_CLEAR) {
			bl.clear();
			k = 0;
		}
	}
	uint64_t t = bench_now() - t0;

	bench_consume(bl.length());
	return t;
}

/* ---- 1024 x 4 KiB lists: splice, iovec, substr --------------------------- */

struct seglist {
	std::vector<bufferptr> segs;	/* separate raws, kept alive */
	bufferlist bl, other;
};

static void seglist_init(struct seglist *s, unsigned nseg, unsigned seglen)
{
	for (unsigned i = 0; i < nseg; i++) {
		bufferptr p(buffer::create(seglen));

		bench_fill_pattern(p.c_str(), seglen, (size_t)i * seglen);
		s->segs.push_back(p);
	}
}

static void seglist_build(struct seglist *s)
{
	s->bl.clear();
	for (auto &p : s->segs)
		s->bl.append(p);
}

/* Time only the splice; the list is rebuilt outside the timed region. */
static uint64_t splice_at(struct seglist *s, uint64_t n, unsigned off)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		seglist_build(s);
		s->other.clear();
		uint64_t t0 = bench_now();
		s->bl.splice(off, BENCH_SPLICE_LEN, &s->other);
		sum += bench_now() - t0;
		if (s->other.length() != BENCH_SPLICE_LEN)
			bench_fail("splice", (long)s->other.length());
	}
	return bench_less_timer(sum, n);
}

static uint64_t w_splice(void *arg, uint64_t n)
{
	return splice_at((struct seglist *)arg, n, BENCH_SPLICE_OFF);
}

static uint64_t w_splice_cut(void *arg, uint64_t n)
{
	return splice_at((struct seglist *)arg, n,
			 BENCH_SPLICE_OFF + BENCH_SPLICE_CUT);
}

/* prepare_iov() wants resize() and operator[]: give it a stack array. */
struct iov_array {
	struct iovec *v;
	size_t n;
	void resize(size_t k)
	{
		n = k;
	}
	struct iovec &operator[](size_t i)
	{
		return v[i];
	}
};

static uint64_t w_iovec(void *arg, uint64_t n)
{
	struct seglist *s = (struct seglist *)arg;
	struct iovec iov[BENCH_NSEG];
	struct iov_array a = { iov, 0 };
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		s->bl.prepare_iov(&a);
		bench_escape(iov);
	}
	uint64_t t = bench_now() - t0;

	if (a.n != BENCH_NSEG)
		bench_fail("prepare_iov", (long)a.n);
	bench_consume(iov[BENCH_NSEG - 1].iov_len);
	return t;
}

static uint64_t w_substr(void *arg, uint64_t n)
{
	struct seglist *s = (struct seglist *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++)
		s->other.substr_of(s->bl, BENCH_SUBSTR_OFF, BENCH_SUBSTR_LEN);
	uint64_t t = bench_now() - t0;

	if (s->other.length() != BENCH_SUBSTR_LEN)
		bench_fail("substr_of", (long)s->other.length());
	return t;
}

/* substr_of into a new list, which is then destroyed. */
static uint64_t w_substr_small(void *arg, uint64_t n)
{
	struct seglist *s = (struct seglist *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		bufferlist o;

		o.substr_of(s->bl, BENCH_SMALL_OFF, BENCH_SMALL_LEN);
		bench_consume(o.length());
	}
	return bench_now() - t0;
}

/* ---- claim_append -------------------------------------------------------- */

/*
 * N segments that cannot merge: 16-byte slices of one raw, 16 bytes apart.
 */
struct claimset {
	unsigned nseg;
	bufferptr big;
	bufferlist a, b, ballast;
	std::vector<bufferlist> src;
};

static void claim_build(struct claimset *c, bufferlist &l)
{
	l.clear();
	for (unsigned i = 0; i < c->nseg; i++)
		l.append(c->big, 32 * i, 16);
	if (l.get_num_buffers() != c->nseg)
		bench_fail("claim build", (long)l.get_num_buffers());
}

/* Into an empty list: ping-pong the N segments between two lists. */
static uint64_t w_claim_empty(void *arg, uint64_t n)
{
	struct claimset *c = (struct claimset *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		if (i & 1)
			c->a.claim_append(c->b);
		else
			c->b.claim_append(c->a);
	}
	uint64_t t = bench_now() - t0;

	if (n & 1)
		c->a.claim_append(c->b);
	if (c->a.get_num_buffers() != c->nseg)
		bench_fail("claim_append", (long)c->a.get_num_buffers());
	return t;
}

/*
 * Into a non-empty list.  Every claim empties its source, so a loop of
 * claims into non-empty lists needs new sources: a batch of m source lists
 * of N segments is built outside the timed region, round-robin so that
 * every source's tail was written last (hot in cache, as for a list just
 * built by its producer), then one timed region claims them one after the
 * other into a list that already holds a segment.  The timer's own cost
 * (about 20 ns, 10 ns granularity) is subtracted per region; m (32 or 64)
 * claims per region keep that error small.
 */
static uint64_t w_claim_nonempty(void *arg, uint64_t n)
{
	struct claimset *c = (struct claimset *)arg;
	uint64_t sum = 0, regions = 0;

	while (n) {
		unsigned m = n < c->src.size() ? (unsigned)n : c->src.size();

		/* clear first: freeing the last batch must not evict this */
		c->b.clear();
		for (unsigned i = 0; i < c->nseg; i++)
			for (unsigned k = 0; k < m; k++)
				c->src[k].append(c->big, 32 * i, 16);
		c->b.append(c->ballast);
		uint64_t t0 = bench_now();
		for (unsigned k = 0; k < m; k++)
			c->b.claim_append(c->src[k]);
		sum += bench_now() - t0;
		regions++;
		if (c->b.get_num_buffers() != 1 + m * c->nseg)
			bench_fail("claim_append",
				   (long)c->b.get_num_buffers());
		n -= m;
	}
	c->b.clear();
	return bench_less_timer(sum, regions);
}

/* ---- crc32c -------------------------------------------------------------- */

static uint64_t w_crc_first(void *arg, uint64_t n)
{
	bufferlist *bl = (bufferlist *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		bl->invalidate_crc();
		bench_consume(bl->crc32c(0));
	}
	return bench_now() - t0;
}

static uint64_t w_crc_cached(void *arg, uint64_t n)
{
	bufferlist *bl = (bufferlist *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++)
		bench_consume(bl->crc32c(0));
	return bench_now() - t0;
}

/* ---- rebuild ------------------------------------------------------------- */

static uint64_t w_rebuild(void *arg, uint64_t n)
{
	struct seglist *s = (struct seglist *)arg;
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		seglist_build(s);
		uint64_t t0 = bench_now();
		s->bl.rebuild();
		sum += bench_now() - t0;
		if (s->bl.get_num_buffers() != 1)
			bench_fail("rebuild", (long)s->bl.get_num_buffers());
		s->bl.clear();
	}
	return sum;
}

/* ---- parse frames -------------------------------------------------------- */

struct frames {
	bufferlist bl;
	uint64_t payload;	/* sum of the payload lengths */
};

static void frames_build(struct frames *f)
{
	static char payload[64];
	uint32_t st = BENCH_FRAME_SEED;

	bench_fill_pattern(payload, sizeof(payload), 0);
	f->payload = 0;
	for (unsigned i = 0; i < BENCH_FRAMES; i++) {
		uint32_t len = bench_frame_len(&st);

		/* the host is little-endian, as the encoding */
		f->bl.append((const char *)&len, 4);
		f->bl.append(payload, len);
		f->payload += len;
	}
}

/* n frames: u32 length, then the payload shared into a list of its own. */
static uint64_t w_parse_list(void *arg, uint64_t n)
{
	struct frames *f = (struct frames *)arg;
	auto it = f->bl.cbegin();
	bufferlist out;
	uint64_t total = 0, k = 0, passes = 0;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		uint32_t len;

		if (k == BENCH_FRAMES) {
			it = f->bl.cbegin();
			k = 0;
			passes++;
		}
		it.copy(4, (char *)&len);
		it.copy(len, out);
		total += out.length();
		out.clear();
		k++;
	}
	uint64_t t = bench_now() - t0;

	if (passes && total < passes * f->payload)
		bench_fail("parse", (long)total);
	bench_consume(total);
	return t;
}

/* n frames: u32 length, then zero-copy pointers to the payload. */
static uint64_t w_parse_ptr(void *arg, uint64_t n)
{
	struct frames *f = (struct frames *)arg;
	auto it = f->bl.cbegin();
	uint64_t total = 0, k = 0, passes = 0;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		uint32_t len;

		if (k == BENCH_FRAMES) {
			it = f->bl.cbegin();
			k = 0;
			passes++;
		}
		it.copy(4, (char *)&len);
		while (len) {
			const char *p;
			size_t got = it.get_ptr_and_advance(len, &p);

			total += got + (unsigned char)p[0];
			len -= got;
		}
		k++;
	}
	uint64_t t = bench_now() - t0;

	if (passes && total < passes * f->payload)
		bench_fail("parse", (long)total);
	bench_consume(total);
	return t;
}

/* ---- lookups in long lists ----------------------------------------------- */

/* Segment i is a 64-byte slice of raw[i % 2]: they never merge. */
struct lookuplist {
	bufferptr raw[2];
	bufferlist bl, other;
	unsigned off;
};

static void lookup_build(struct lookuplist *s, unsigned nseg)
{
	unsigned half = (nseg + 1) / 2 * BENCH_LOOKUP_SEG;

	for (unsigned k = 0; k < 2; k++) {
		s->raw[k] = bufferptr(buffer::create(half));
		bench_fill_pattern(s->raw[k].c_str(), half, (size_t)k * half);
	}
	for (unsigned i = 0; i < nseg; i++)
		s->bl.push_back(bufferptr(s->raw[i & 1],
					  i / 2 * BENCH_LOOKUP_SEG,
					  BENCH_LOOKUP_SEG));
	if (s->bl.get_num_buffers() != nseg)
		bench_fail("lookup build", (long)s->bl.get_num_buffers());
}

static uint64_t w_lookup(void *arg, uint64_t n)
{
	struct lookuplist *s = (struct lookuplist *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++)
		s->other.substr_of(s->bl, s->off, BENCH_LOOKUP_LEN);
	uint64_t t = bench_now() - t0;

	if (s->other.length() != BENCH_LOOKUP_LEN)
		bench_fail("substr_of", (long)s->other.length());
	return t;
}

/* bench_core's seek_mid: ceph's iterator walks forward segment by segment */
static uint64_t w_seek(void *arg, uint64_t n)
{
	struct lookuplist *s = (struct lookuplist *)arg;
	uint64_t t0 = bench_now(), sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		auto it = s->bl.cbegin();
		char v;

		it += s->off;
		it.copy(1, &v);
		sum += (unsigned char)v;
	}
	uint64_t t = bench_now() - t0;

	bench_consume(sum);
	return t;
}

static uint64_t w_splice_lookup(void *arg, uint64_t n)
{
	struct lookuplist *s = (struct lookuplist *)arg;
	unsigned mid = s->bl.length() / 2 / BENCH_LOOKUP_SEG * BENCH_LOOKUP_SEG;
	uint64_t t0 = bench_now();
	char buf[10];

	for (uint64_t i = 0; i < n; i++) {
		s->bl.splice(mid, BENCH_LOOKUP_SEG, &s->other);
		s->bl.cbegin(mid - 4096).copy(sizeof(buf), buf);
		s->bl.claim_append(s->other);
	}
	uint64_t t = bench_now() - t0;

	bench_consume((unsigned char)buf[0]);
	return t;
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const unsigned alloc_sizes[] = { 4, 32, 256, 1024, 4096, 16384 };
	static const unsigned fill_steps[] = { 4, 16, 64, 256, 1024, 4096,
					       16384 };
	static const unsigned claim_nsegs[] = { 16, 1024, 65536 };
	char name[64];

	bench_parse_args(argc, argv, "bench_ceph");
	bench_fill_pattern(fill_src, sizeof(fill_src), 0);

	for (unsigned size : alloc_sizes) {
		snprintf(name, sizeof(name), "alloc_%u", size);
		if (bench_want(name))
			bench_alloc_line(name, size, w_alloc, &size);
	}
	for (unsigned step : fill_steps) {
		snprintf(name, sizeof(name), "fill_%u", step);
		if (bench_want(name))
			bench_fill_line(name, BENCH_FILL_LEN, step, w_fill,
					&step);
	}
	if (bench_want("append_8"))
		bench_ns("append_8", w_append8, NULL);

	if (bench_want("splice_1M") | bench_want("splice_1M_cut") |
	    bench_want("iovec_1024") | bench_want("substr_4K") |
	    bench_want("substr_100")) {
		struct seglist s;

		seglist_init(&s, BENCH_NSEG, BENCH_SEG);
		if (bench_want("splice_1M"))
			bench_ns("splice_1M", w_splice, &s);
		if (bench_want("splice_1M_cut"))
			bench_ns("splice_1M_cut", w_splice_cut, &s);
		seglist_build(&s);
		if (bench_want("iovec_1024"))
			bench_ns("iovec_1024", w_iovec, &s);
		if (bench_want("substr_4K"))
			bench_ns("substr_4K", w_substr, &s);
		if (bench_want("substr_100"))
			bench_ns("substr_100", w_substr_small, &s);
	}

	for (unsigned nseg : claim_nsegs) {
		struct claimset c;
		char name2[64];

		snprintf(name, sizeof(name), "claim_empty_%u", nseg);
		snprintf(name2, sizeof(name2), "claim_nonempty_%u", nseg);
		if (!(bench_want(name) | bench_want(name2)))
			continue;
		c.nseg = nseg;
		c.big = bufferptr(buffer::create(32 * nseg));
		bench_fill_pattern(c.big.c_str(), 32 * nseg, 0);
		c.ballast.append(c.big, 0, 8);
		if (bench_want(name)) {
			claim_build(&c, c.a);
			bench_ns(name, w_claim_empty, &c);
			c.a.clear();
		}
		if (bench_want(name2)) {
			unsigned m = (1u << 21) / nseg;

			c.src.resize(m < 64 ? m : 64);
			bench_ns(name2, w_claim_nonempty, &c);
		}
	}

	if (bench_want("crc32c_4M_first") | bench_want("crc32c_4M_cached")) {
		bufferlist bl;
		bufferptr p(buffer::create(BENCH_CRC_LEN));

		bench_fill_pattern(p.c_str(), BENCH_CRC_LEN, 0);
		bl.append(std::move(p));
		if (!bench_o.quiet)
			printf("# crc32c of the 4 MiB pattern, seed 0: 0x%08x\n",
			       bl.crc32c(0));
		if (bench_want("crc32c_4M_first"))
			bench_gbs("crc32c_4M_first", w_crc_first, &bl,
				  BENCH_CRC_LEN);
		if (bench_want("crc32c_4M_cached"))
			bench_ns("crc32c_4M_cached", w_crc_cached, &bl);
	}

	if (bench_want("rebuild_1M")) {
		struct seglist s;

		seglist_init(&s, BENCH_REBUILD_NSEG, BENCH_SEG);
		bench_gbs("rebuild_1M", w_rebuild, &s,
			  BENCH_REBUILD_NSEG * BENCH_SEG);
	}

	if (bench_want("parse_frames_list") | bench_want("parse_frames_ptr")) {
		struct frames f;

		frames_build(&f);
		if (!bench_o.quiet)
			printf("# frames: %u in %u bytes, %u segments\n",
			       BENCH_FRAMES, f.bl.length(),
			       f.bl.get_num_buffers());
		if (bench_want("parse_frames_list"))
			bench_ns("parse_frames_list", w_parse_list, &f);
		if (bench_want("parse_frames_ptr"))
			bench_ns("parse_frames_ptr", w_parse_ptr, &f);
	}

	static const unsigned lookup_nsegs[] = { 1000, 100000, 1000000 };
	static const char *const lookup_names[] = { "1e3", "1e5", "1e6" };
	for (unsigned i = 0; i < 3; i++) {
		static const char *const where[] = { "front", "mid", "end" };
		unsigned len = lookup_nsegs[i] * BENCH_LOOKUP_SEG;
		unsigned offs[] = { 10, len / 2 + 10, len - 182 };
		struct lookuplist *lk = nullptr;

		for (unsigned w = 0; w < 3; w++) {
			snprintf(name, sizeof(name), "lookup_%s_%s", where[w],
				 lookup_names[i]);
			if (!bench_want(name))
				continue;
			if (!lk) {
				lk = new lookuplist;
				lookup_build(lk, lookup_nsegs[i]);
			}
			lk->off = offs[w];
			bench_ns(name, w_lookup, lk);
		}
		snprintf(name, sizeof(name), "seek_mid_%s", lookup_names[i]);
		if (bench_want(name)) {
			if (!lk) {
				lk = new lookuplist;
				lookup_build(lk, lookup_nsegs[i]);
			}
			lk->off = offs[1];
			bench_ns(name, w_seek, lk);
		}
		snprintf(name, sizeof(name), "splice_lookup_%s",
			 lookup_names[i]);
		if (bench_want(name)) {
			if (!lk) {
				lk = new lookuplist;
				lookup_build(lk, lookup_nsegs[i]);
			}
			lk->other.clear();
			bench_ns(name, w_splice_lookup, lk);
			if (lk->bl.get_num_buffers() != lookup_nsegs[i])
				bench_fail("splice_lookup",
					   (long)lk->bl.get_num_buffers());
		}
		delete lk;
	}
	return 0;
}
