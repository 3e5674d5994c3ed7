/* SPDX-License-Identifier: MIT */
/*
 * bench_core.c - micro-benchmarks of the core of libbufferlist.
 *
 * The same workloads run on Ceph's bufferlist (bench_ceph.cc) and, where
 * it has an equivalent, libevent's evbuffer (bench_evbuffer.c);
 * perf/run-core.sh runs the three interleaved and tabulates the medians.
 * Usage and output format: see benchutil.h.
 *
 * Workloads (name: what one operation is; what is timed):
 *  alloc_N        bl_raw_create(N) + bl_raw_put(); the whole loop.  Also
 *                 prints Ceph's "1000000 alloc of size N in S" line.
 *  malloc_N       baseline: glibc malloc(N) + free().
 *  fill_N         append N-byte chunks until 1 MiB, then clear; GB/s of
 *                 bytes appended.  Prints Ceph's "fills of buffer" line.
 *  append_8       one 8-byte bl_list_append(); the list is cleared every
 *                 4096 appends (the clear is inside the timed loop).
 *  splice_1M      bl_list_splice() of 1 MiB at offset 1.5 MiB out of a list
 *                 of 1024 x 4 KiB segments (separate raws) into another
 *                 list.  Only the splice is timed: the list is rebuilt
 *                 (1024 bl_list_append_ptr of held slices) before each
 *                 operation, outside the timed region, and the timer's own
 *                 cost (~20 ns of ~1-5 us) is subtracted.
 *  splice_1M_cut  the same at offset 1.5 MiB + 123: both ends cut a
 *                 segment in two.
 *  iovec_1024     bl_list_to_iovec() of the 1024-segment list into a stack
 *                 array of 1024 iovecs.
 *  iovec_1024_oneraw  baseline: the same over 1024 slices of 4 KiB of one
 *                 raw, 64 bytes apart (so they do not merge): the export
 *                 without a different raw header to read per segment (an
 *                 iovec's base is the raw's data pointer plus the offset).
 *  substr_4K      bl_list_substr_of() of 4 KiB at offset 2 MiB (the middle,
 *                 segment 512) of the 1024-segment list into a list that
 *                 held the previous result.
 *  substr_100     bl_list_substr_of() of 100 bytes at offset 5000 (inside
 *                 segment 1) of the 1024-segment list into a new list,
 *                 then bl_list_clear() of it: one operation is both.
 *  claim_empty_N  bl_list_claim_append() of a list of N segments into an
 *                 empty list: two lists ping-pong the segments, nothing
 *                 else in the loop.
 *  claim_nonempty_N  the same into a list that already has a segment:
 *                 batches of m (<= 64) sources built outside the timed
 *                 region (round-robin, so every source's tail is hot), then
 *                 claimed one after the other in one timed region; timer
 *                 cost subtracted per region.  Segments are 16-byte slices
 *                 of one raw, 16 bytes apart (they cannot merge).
 *  crc32c_4M_first  bl_list_invalidate_crc() + bl_list_crc32c(l, 0) of a
 *                 4 MiB single-segment list, GB/s.
 *  crc32c_4M_cached the repeat that hits the cache, ns.
 *  rebuild_1M     bl_list_rebuild() of 1 MiB held as 256 x 4 KiB segments
 *                 (shared slices of held raws), GB/s; only the rebuild is
 *                 timed (the list is rebuilt from the slices outside, and
 *                 the new 1 MiB raw is released outside).
 *  memcpy_1M      baseline: the same 256 x 4 KiB gathered by memcpy into a
 *                 1 MiB buffer allocated and touched once, timed the same way.
 *  refpair        baseline: bl_raw_get() + bl_raw_put() of a raw the
 *                 program holds: one reference taken and dropped, two
 *                 atomic read-modify-writes.  Every zero-copy slice that
 *                 outlives its operation pays it (substr_100 and
 *                 parse_frames_list take and drop one each, as do Ceph's
 *                 and bytes' own).
 *  refpair_local  the same on a thread-local raw (bl_raw_set_thread_local()):
 *                 a plain load and store each way.
 *  substr_100_local, parse_frames_list_local  substr_100 and
 *                 parse_frames_list over lists whose raws were made
 *                 thread-local: what a thread that shares nothing pays.
 *                 The peers have no such mode: run-core.sh sets their
 *                 plain rows beside these.
 *  parse_frames_list  per frame of a list of 100,000 [u32 len][16..64
 *                 bytes] frames: bl_decode_u32() then bl_iter_copy_list()
 *                 of the payload into a list of its own (zero copy), which
 *                 is cleared; ns per frame.
 *  parse_frames_ptr   the same with bl_iter_get_ptr_and_advance() (zero
 *                 copy, no list; reads the payload's first byte).
 *  lookup_{front,mid,end}_{1e3,1e5,1e6}  bl_list_substr_of() of 100 bytes
 *                 at offset 10, at the middle (+10) or 182 bytes before
 *                 the end of a list of N segments (the same two pieces,
 *                 54 + 46 bytes, each time), into a list that held the
 *                 previous result: what finding an offset costs with the
 *                 segment count.  Segments are 64-byte slices of two
 *                 raws, alternating (so they never merge): 64 MiB of data
 *                 at 10^6 segments instead of 4 GiB of 4 KiB segments.
 *  seek_mid_{1e3,1e5,1e6}  a cursor made at the front of the same lists,
 *                 moved to the middle (+10) with bl_iter_seek(), and the
 *                 byte there decoded: a far forward move.
 *  splice_lookup_{1e3,1e5,1e6}  bl_list_splice() of the middle segment
 *                 (64 bytes) into a second list, bl_list_copy_out() of 10
 *                 bytes 4 KiB before it, and the segment claimed back at
 *                 the end (length and segment count stay): what a lookup
 *                 costs right after a change in the middle of the list.
 *  struct_encode_3  a versioned structure of three fields (u32, u64, u16)
 *                 appended: bl_encode_start(), the three encoders,
 *                 bl_encode_finish(); the list is cleared every 4096
 *                 structures (inside the timed loop, as append_8).
 *  plain_encode_3 baseline: the same three fields without the header.
 *  struct_decode_3  the structure decoded (bl_decode_start(), three
 *                 decoders, bl_decode_finish()) from a list of 4096 of
 *                 them, the cursor put back at the front after the last.
 *  plain_decode_3 baseline: the three fields without the header.
 *  struct_decode_skip  a v3 structure (the three fields and a u64 more)
 *                 decoded by the v2 decoder: the u64 is skipped.
 *  get_ptr_{mid,end}_{1e3,1e5,1e6}  bl_list_get_ptr() of the middle
 *                 segment (N / 2, the one lookup_mid's bytes are in) or
 *                 the last one of the same lists, then bl_ptr_release():
 *                 what finding a segment by its index costs with the
 *                 segment count (one reference taken and dropped each
 *                 time, as in refpair).
 */
#include <errno.h>
#include <sys/uio.h>
#include <bufferlist.h>

#include "benchutil.h"

static void must(int rc, const char *what)
{
	if (rc < 0)
		bench_fail(what, rc);
}

/* ---- alloc --------------------------------------------------------------- */

static uint64_t w_alloc(void *arg, uint64_t n)
{
	size_t size = *(unsigned *)arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		struct bl_raw *r = bl_raw_create(size);

		if (!r)
			bench_fail("bl_raw_create", -ENOMEM);
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

		bench_escape(p);
		free(p);
	}
	return bench_now() - t0;
}

static uint64_t w_refpair(void *arg, uint64_t n)
{
	struct bl_raw *r = arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++)
		bl_raw_put(bl_raw_get(r));
	return bench_now() - t0;
}

/* ---- fills --------------------------------------------------------------- */

static char fill_src[16384];

static uint64_t w_fill(void *arg, uint64_t n)
{
	unsigned step = *(unsigned *)arg;
	struct bl_list l;
	uint64_t t0, t;

	bl_list_init(&l);
	t0 = bench_now();
	for (uint64_t i = 0; i < n; i++) {
		for (unsigned j = 0; j < BENCH_FILL_LEN; j += step)
			bl_list_append(&l, fill_src, step);
		bench_consume(bl_list_length(&l));
		bl_list_clear(&l);
	}
	t = bench_now() - t0;
	bl_list_clear(&l);
	return t;
}

/* ---- 8-byte append ------------------------------------------------------- */

static uint64_t w_append8(void *arg, uint64_t n)
{
	struct bl_list l;
	unsigned k = 0;
	uint64_t t0, t;

	bl_list_init(&l);
	t0 = bench_now();
	for (uint64_t i = 0; i < n; i++) {
		bl_list_append(&l, &i, 8);
		if (++k == BENCH_APPEND_CLEAR) {
			bl_list_clear(&l);
			k = 0;
		}
	}
	t = bench_now() - t0;
	bench_consume(bl_list_length(&l));
	bl_list_clear(&l);
	return t;
}

/* ---- versioned structures (denc.h) --------------------------------------- */

#define BENCH_STRUCTS 4096u

static int enc3(struct bl_list *l, uint64_t i)
{
	int rc = bl_encode_u32(l, (uint32_t)i);

	rc |= bl_encode_u64(l, i);
	rc |= bl_encode_u16(l, (uint16_t)i);
	return rc;
}

static uint64_t w_encode(void *arg, uint64_t n)
{
	bool versioned = arg != NULL;
	struct bl_list l;
	struct bl_struct_enc st;
	unsigned k = 0;
	uint64_t t0, t;
	int rc = 0;

	bl_list_init(&l);
	t0 = bench_now();
	for (uint64_t i = 0; i < n; i++) {
		if (versioned) {
			rc |= bl_encode_start(&l, 2, 1, &st);
			rc |= enc3(&l, i);
			rc |= bl_encode_finish(&l, &st);
		} else {
			rc |= enc3(&l, i);
		}
		if (++k == BENCH_STRUCTS) {
			bl_list_clear(&l);
			k = 0;
		}
	}
	t = bench_now() - t0;
	must(rc, "encode");
	bench_consume(bl_list_length(&l));
	bl_list_clear(&l);
	return t;
}

/* what the decode rows read: 0 plain, 2 a v2 structure, 3 a v3 one */
struct structs {
	struct bl_list bl;
	int v;
};

static void structs_build(struct structs *s, int v)
{
	struct bl_struct_enc st;

	bl_list_init(&s->bl);
	s->v = v;
	for (unsigned i = 0; i < BENCH_STRUCTS; i++) {
		if (v)
			must(bl_encode_start(&s->bl, (uint8_t)v, 1, &st),
			     "start");
		must(enc3(&s->bl, i), "enc3");
		if (v == 3)
			must(bl_encode_u64(&s->bl, ~(uint64_t)i), "u64");
		if (v)
			must(bl_encode_finish(&s->bl, &st), "finish");
	}
}

static uint64_t w_decode(void *arg, uint64_t n)
{
	struct structs *s = arg;
	struct bl_struct_dec d;
	struct bl_iter it;
	uint64_t sum = 0, t0, t;
	unsigned k = 0;
	int rc = 0;

	bl_iter_init(&it, &s->bl, 0);
	t0 = bench_now();
	for (uint64_t i = 0; i < n; i++) {
		uint32_t a;
		uint64_t b;
		uint16_t c;

		if (k++ == BENCH_STRUCTS) {
			bl_iter_init(&it, &s->bl, 0);
			k = 1;
		}
		if (s->v)
			rc |= bl_decode_start(&it, 2, &d);
		rc |= bl_decode_u32(&it, &a);
		rc |= bl_decode_u64(&it, &b);
		rc |= bl_decode_u16(&it, &c);
		if (s->v)
			rc |= bl_decode_finish(&it, &d);
		sum += a + b + c;
	}
	t = bench_now() - t0;
	must(rc, "decode");
	bench_consume(sum);
	return t;
}

/* ---- 1024 x 4 KiB lists: splice, iovec, substr, rebuild ------------------ */

struct seglist {
	unsigned nseg;
	struct bl_ptr segs[BENCH_NSEG];	/* separate raws, held */
	struct bl_list bl, other;
};

static void seglist_init(struct seglist *s, unsigned nseg)
{
	unsigned i;

	s->nseg = nseg;
	for (i = 0; i < nseg; i++) {
		must(bl_ptr_alloc(&s->segs[i], BENCH_SEG), "bl_ptr_alloc");
		bench_fill_pattern(bl_ptr_data(&s->segs[i]), BENCH_SEG,
				   (size_t)i * BENCH_SEG);
	}
	bl_list_init(&s->bl);
	bl_list_init(&s->other);
}

static void seglist_build(struct seglist *s)
{
	unsigned i;

	bl_list_clear(&s->bl);
	for (i = 0; i < s->nseg; i++)
		must(bl_list_append_ptr(&s->bl, &s->segs[i]), "append_ptr");
}

/* @s's list as 1024 slices of one raw, 64 bytes apart (they cannot merge). */
static void seglist_build_oneraw(struct seglist *s)
{
	struct bl_ptr big;
	unsigned i;

	bl_list_clear(&s->bl);
	must(bl_ptr_alloc(&big, (size_t)s->nseg * (BENCH_SEG + 64)),
	     "bl_ptr_alloc");
	for (i = 0; i < s->nseg; i++) {
		struct bl_ptr p = { big.raw, (size_t)i * (BENCH_SEG + 64),
				    BENCH_SEG };

		must(bl_list_append_ptr(&s->bl, &p), "append_ptr");
	}
	bl_ptr_release(&big);	/* the list holds it now */
}

static void seglist_free(struct seglist *s)
{
	unsigned i;

	bl_list_clear(&s->bl);
	bl_list_clear(&s->other);
	for (i = 0; i < s->nseg; i++)
		bl_ptr_release(&s->segs[i]);
}

static uint64_t splice_at(struct seglist *s, uint64_t n, size_t off)
{
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0;
		int rc;

		seglist_build(s);
		bl_list_clear(&s->other);
		t0 = bench_now();
		rc = bl_list_splice(&s->bl, off, BENCH_SPLICE_LEN, &s->other);
		sum += bench_now() - t0;
		must(rc, "bl_list_splice");
		if (bl_list_length(&s->other) != BENCH_SPLICE_LEN)
			bench_fail("splice", (long)bl_list_length(&s->other));
	}
	return bench_less_timer(sum, n);
}

static uint64_t w_splice(void *arg, uint64_t n)
{
	return splice_at(arg, n, BENCH_SPLICE_OFF);
}

static uint64_t w_splice_cut(void *arg, uint64_t n)
{
	return splice_at(arg, n, BENCH_SPLICE_OFF + BENCH_SPLICE_CUT);
}

static uint64_t w_iovec(void *arg, uint64_t n)
{
	struct seglist *s = arg;
	struct iovec iov[BENCH_NSEG];
	uint64_t t0 = bench_now(), t;
	int got = 0;

	for (uint64_t i = 0; i < n; i++) {
		got = bl_list_to_iovec(&s->bl, 0, iov, BENCH_NSEG);
		bench_escape(iov);
	}
	t = bench_now() - t0;
	if (got != BENCH_NSEG)
		bench_fail("bl_list_to_iovec", got);
	bench_consume(iov[BENCH_NSEG - 1].iov_len);
	return t;
}

static uint64_t w_substr(void *arg, uint64_t n)
{
	struct seglist *s = arg;
	uint64_t t0 = bench_now(), t;
	int rc = 0;

	for (uint64_t i = 0; i < n; i++)
		rc |= bl_list_substr_of(&s->other, &s->bl, BENCH_SUBSTR_OFF,
					BENCH_SUBSTR_LEN);
	t = bench_now() - t0;
	must(rc, "bl_list_substr_of");
	if (bl_list_length(&s->other) != BENCH_SUBSTR_LEN)
		bench_fail("substr_of", (long)bl_list_length(&s->other));
	return t;
}

static uint64_t w_substr_small(void *arg, uint64_t n)
{
	struct seglist *s = arg;
	uint64_t t0 = bench_now(), t;
	int rc = 0;

	for (uint64_t i = 0; i < n; i++) {
		struct bl_list l;

		bl_list_init(&l);
		rc |= bl_list_substr_of(&l, &s->bl, BENCH_SMALL_OFF,
					BENCH_SMALL_LEN);
		bench_consume(bl_list_length(&l));
		bl_list_clear(&l);
	}
	t = bench_now() - t0;
	must(rc, "bl_list_substr_of");
	return t;
}

static uint64_t w_rebuild(void *arg, uint64_t n)
{
	struct seglist *s = arg;
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0;
		int rc;

		seglist_build(s);
		t0 = bench_now();
		rc = bl_list_rebuild(&s->bl);
		sum += bench_now() - t0;
		must(rc, "bl_list_rebuild");
		if (bl_list_num_buffers(&s->bl) != 1)
			bench_fail("rebuild", bl_list_num_buffers(&s->bl));
		bl_list_clear(&s->bl);
	}
	return sum;
}

static char *memcpy_dst;

static uint64_t w_memcpy(void *arg, uint64_t n)
{
	struct seglist *s = arg;
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0;
		char *d = memcpy_dst;
		unsigned k;

		seglist_build(s);	/* same cache state as w_rebuild */
		t0 = bench_now();
		for (k = 0; k < s->nseg; k++) {
			memcpy(d, bl_ptr_data(&s->segs[k]), BENCH_SEG);
			d += BENCH_SEG;
		}
		bench_escape(memcpy_dst);
		sum += bench_now() - t0;
		bl_list_clear(&s->bl);
	}
	return sum;
}

/* ---- claim_append -------------------------------------------------------- */

struct claimset {
	unsigned nseg, nsrc;
	struct bl_ptr big;	/* 32 * nseg bytes; segment i = [32 i, +16) */
	struct bl_list a, b;
	struct bl_list src[64];
};

static void claim_append_seg(struct bl_list *l, struct claimset *c,
			     unsigned i)
{
	struct bl_ptr p;

	must(bl_ptr_slice(&p, &c->big, 32 * (size_t)i, 16), "bl_ptr_slice");
	must(bl_list_append_ptr(l, &p), "append_ptr");
	bl_ptr_release(&p);
}

/* Into an empty list: ping-pong the N segments between two lists. */
static uint64_t w_claim_empty(void *arg, uint64_t n)
{
	struct claimset *c = arg;
	uint64_t t0 = bench_now(), t;
	int rc = 0;

	for (uint64_t i = 0; i < n; i++) {
		if (i & 1)
			rc |= bl_list_claim_append(&c->a, &c->b);
		else
			rc |= bl_list_claim_append(&c->b, &c->a);
	}
	t = bench_now() - t0;
	must(rc, "claim_append");
	if (n & 1)
		bl_list_claim_append(&c->a, &c->b);
	if (bl_list_num_buffers(&c->a) != c->nseg)
		bench_fail("claim_append", bl_list_num_buffers(&c->a));
	return t;
}

/*
 * Into a non-empty list: every claim empties its source, so a batch of m
 * sources is built outside the timed region -- round-robin, so that every
 * source's tail was written last, as for a list its producer just built --
 * and then claimed one after the other into a list that holds a segment.
 */
static uint64_t w_claim_nonempty(void *arg, uint64_t n)
{
	struct claimset *c = arg;
	uint64_t sum = 0, regions = 0;
	int rc = 0;

	while (n) {
		unsigned m = n < c->nsrc ? (unsigned)n : c->nsrc;
		unsigned i, k;
		uint64_t t0;

		/* clear first: freeing the last batch must not evict this */
		bl_list_clear(&c->b);
		for (i = 0; i < c->nseg; i++)
			for (k = 0; k < m; k++)
				claim_append_seg(&c->src[k], c, i);
		claim_append_seg(&c->b, c, 0);
		t0 = bench_now();
		for (k = 0; k < m; k++)
			rc |= bl_list_claim_append(&c->b, &c->src[k]);
		sum += bench_now() - t0;
		regions++;
		must(rc, "claim_append");
		if (bl_list_num_buffers(&c->b) != 1 + m * c->nseg)
			bench_fail("claim_append", bl_list_num_buffers(&c->b));
		n -= m;
	}
	bl_list_clear(&c->b);
	return bench_less_timer(sum, regions);
}

/* ---- crc32c -------------------------------------------------------------- */

static uint64_t w_crc_first(void *arg, uint64_t n)
{
	struct bl_list *l = arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++) {
		bl_list_invalidate_crc(l);
		bench_consume(bl_list_crc32c(l, 0));
	}
	return bench_now() - t0;
}

static uint64_t w_crc_cached(void *arg, uint64_t n)
{
	struct bl_list *l = arg;
	uint64_t t0 = bench_now();

	for (uint64_t i = 0; i < n; i++)
		bench_consume(bl_list_crc32c(l, 0));
	return bench_now() - t0;
}

/* ---- parse frames -------------------------------------------------------- */

struct frames {
	struct bl_list bl;
	uint64_t payload;
};

static void frames_build(struct frames *f)
{
	static char payload[64];
	uint32_t st = BENCH_FRAME_SEED;
	unsigned i;

	bench_fill_pattern(payload, sizeof(payload), 0);
	bl_list_init(&f->bl);
	f->payload = 0;
	for (i = 0; i < BENCH_FRAMES; i++) {
		uint32_t len = bench_frame_len(&st);

		must(bl_encode_u32(&f->bl, len), "bl_encode_u32");
		must(bl_list_append(&f->bl, payload, len), "bl_list_append");
		f->payload += len;
	}
}

static uint64_t w_parse_list(void *arg, uint64_t n)
{
	struct frames *f = arg;
	struct bl_iter it;
	struct bl_list out;
	uint64_t total = 0, k = 0, passes = 0, t0, t;
	int rc = 0;

	bl_list_init(&out);
	bl_iter_init(&it, &f->bl, 0);
	t0 = bench_now();
	for (uint64_t i = 0; i < n; i++) {
		uint32_t len;

		if (k == BENCH_FRAMES) {
			bl_iter_init(&it, &f->bl, 0);
			k = 0;
			passes++;
		}
		rc |= bl_decode_u32(&it, &len);
		rc |= bl_iter_copy_list(&it, len, &out);
		total += bl_list_length(&out);
		bl_list_clear(&out);
		k++;
	}
	t = bench_now() - t0;
	must(rc, "parse");
	if (passes && total < passes * f->payload)
		bench_fail("parse", (long)total);
	bench_consume(total);
	return t;
}

static uint64_t w_parse_ptr(void *arg, uint64_t n)
{
	struct frames *f = arg;
	struct bl_iter it;
	uint64_t total = 0, k = 0, passes = 0, t0, t;
	int rc = 0;

	bl_iter_init(&it, &f->bl, 0);
	t0 = bench_now();
	for (uint64_t i = 0; i < n; i++) {
		uint32_t len;

		if (k == BENCH_FRAMES) {
			bl_iter_init(&it, &f->bl, 0);
			k = 0;
			passes++;
		}
		rc |= bl_decode_u32(&it, &len);
		while (len) {
			const char *p;
			size_t got = bl_iter_get_ptr_and_advance(&it, len, &p);

			if (!got)
				bench_fail("get_ptr_and_advance", 0);
			total += got + (unsigned char)p[0];
			len -= got;
		}
		k++;
	}
	t = bench_now() - t0;
	must(rc, "parse");
	if (passes && total < passes * f->payload)
		bench_fail("parse", (long)total);
	bench_consume(total);
	return t;
}

/* ---- lookups in long lists ----------------------------------------------- */

struct lookuplist {
	struct bl_ptr raw[2];	/* segment i is a slice of raw[i % 2] */
	struct bl_list bl, other;
	size_t off;		/* where the workload's lookups go */
	unsigned idx;		/* the segment get_ptr's go to */
};

static void lookup_build(struct lookuplist *s, unsigned nseg)
{
	size_t half = (size_t)(nseg + 1) / 2 * BENCH_LOOKUP_SEG;
	unsigned i;

	for (i = 0; i < 2; i++) {
		must(bl_ptr_alloc(&s->raw[i], half), "bl_ptr_alloc");
		bench_fill_pattern(bl_ptr_data(&s->raw[i]), half, i * half);
	}
	bl_list_init(&s->bl);
	bl_list_init(&s->other);
	for (i = 0; i < nseg; i++) {
		struct bl_ptr p = s->raw[i & 1];	/* borrowed */

		p.off += (size_t)(i / 2) * BENCH_LOOKUP_SEG;
		p.len = BENCH_LOOKUP_SEG;
		must(bl_list_append_ptr(&s->bl, &p), "append_ptr");
	}
	if (bl_list_num_buffers(&s->bl) != nseg)
		bench_fail("lookup build", bl_list_num_buffers(&s->bl));
}

/* @s built as lookup_build(@s, @nseg) once, on the first row that wants it. */
static void lookup_need(struct lookuplist *s, bool *built, unsigned nseg)
{
	if (!*built)
		lookup_build(s, nseg);
	*built = true;
}

static void lookup_free(struct lookuplist *s)
{
	bl_list_clear(&s->bl);
	bl_list_clear(&s->other);
	bl_ptr_release(&s->raw[0]);
	bl_ptr_release(&s->raw[1]);
}

static uint64_t w_lookup(void *arg, uint64_t n)
{
	struct lookuplist *s = arg;
	uint64_t t0 = bench_now(), t;
	int rc = 0;

	for (uint64_t i = 0; i < n; i++)
		rc |= bl_list_substr_of(&s->other, &s->bl, s->off,
					BENCH_LOOKUP_LEN);
	t = bench_now() - t0;
	must(rc, "bl_list_substr_of");
	if (bl_list_length(&s->other) != BENCH_LOOKUP_LEN)
		bench_fail("substr_of", (long)bl_list_length(&s->other));
	return t;
}

static uint64_t w_seek(void *arg, uint64_t n)
{
	struct lookuplist *s = arg;
	uint64_t t0 = bench_now(), t, sum = 0;
	int rc = 0;

	for (uint64_t i = 0; i < n; i++) {
		struct bl_iter it;
		uint8_t v = 0;

		rc |= bl_iter_init(&it, &s->bl, 0);
		rc |= bl_iter_seek(&it, s->off);
		rc |= bl_decode_u8(&it, &v);
		sum += v;
	}
	t = bench_now() - t0;
	must(rc, "bl_iter_seek");
	bench_consume(sum);
	return t;
}

static uint64_t w_splice_lookup(void *arg, uint64_t n)
{
	struct lookuplist *s = arg;
	size_t mid = bl_list_length(&s->bl) / 2 / BENCH_LOOKUP_SEG
		     * BENCH_LOOKUP_SEG;
	uint64_t t0 = bench_now(), t;
	unsigned char buf[10];
	int rc = 0;

	for (uint64_t i = 0; i < n; i++) {
		rc |= bl_list_splice(&s->bl, mid, BENCH_LOOKUP_SEG, &s->other);
		rc |= bl_list_copy_out(&s->bl, mid - 4096, sizeof(buf), buf);
		rc |= bl_list_claim_append(&s->bl, &s->other);
	}
	t = bench_now() - t0;
	must(rc, "splice, copy_out, claim_append");
	bench_consume(buf[0]);
	return t;
}

static uint64_t w_get_ptr(void *arg, uint64_t n)
{
	struct lookuplist *s = arg;
	uint64_t t0 = bench_now(), t, sum = 0;
	int rc = 0;

	for (uint64_t i = 0; i < n; i++) {
		struct bl_ptr p = BL_PTR_INIT;

		rc |= bl_list_get_ptr(&s->bl, s->idx, &p);
		sum += p.len;
		bl_ptr_release(&p);
	}
	t = bench_now() - t0;
	must(rc, "bl_list_get_ptr");
	if (sum != n * BENCH_LOOKUP_SEG)
		bench_fail("get_ptr", (long)sum);
	bench_consume(sum);
	return t;
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const unsigned alloc_sizes[] = { 4, 32, 256, 1024, 4096, 16384 };
	static const unsigned fill_steps[] = { 4, 16, 64, 256, 1024, 4096,
					       16384 };
	static const unsigned claim_nsegs[] = { 16, 1024, 65536 };
	static struct seglist s;
	char name[64], name2[64];
	unsigned i;

	static const unsigned lookup_nsegs[] = { 1000, 100000, 1000000 };
	static const char *const lookup_names[] = { "1e3", "1e5", "1e6" };

	bench_parse_args(argc, argv, "bench_core");
	if (!bench_o.quiet)
		printf("# libbufferlist %s, crc32c: %s\n", BL_VERSION_STRING,
		       bl_crc32c_impl());
	bench_fill_pattern(fill_src, sizeof(fill_src), 0);

	for (i = 0; i < sizeof(alloc_sizes) / sizeof(alloc_sizes[0]); i++) {
		unsigned size = alloc_sizes[i];

		snprintf(name, sizeof(name), "alloc_%u", size);
		if (bench_want(name))
			bench_alloc_line(name, size, w_alloc, &size);
		snprintf(name, sizeof(name), "malloc_%u", size);
		if (bench_want(name))
			bench_ns(name, w_malloc, &size);
	}
	for (i = 0; i < sizeof(fill_steps) / sizeof(fill_steps[0]); i++) {
		unsigned step = fill_steps[i];

		snprintf(name, sizeof(name), "fill_%u", step);
		if (bench_want(name))
			bench_fill_line(name, BENCH_FILL_LEN, step, w_fill,
					&step);
	}
	if (bench_want("append_8"))
		bench_ns("append_8", w_append8, NULL);
	if (bench_want("struct_encode_3"))
		bench_ns("struct_encode_3", w_encode, (void *)1);
	if (bench_want("plain_encode_3"))
		bench_ns("plain_encode_3", w_encode, NULL);
	{
		static const char *const dn[] = { "plain_decode_3",
						  "struct_decode_3",
						  "struct_decode_skip" };
		static const int dv[] = { 0, 2, 3 };

		for (unsigned di = 0; di < 3; di++) {
			struct structs st;

			if (!bench_want(dn[di]))
				continue;
			structs_build(&st, dv[di]);
			bench_ns(dn[di], w_decode, &st);
			bl_list_clear(&st.bl);
		}
	}

	if (bench_want("splice_1M") | bench_want("splice_1M_cut") |
	    bench_want("iovec_1024") | bench_want("iovec_1024_oneraw") |
	    bench_want("substr_4K") | bench_want("substr_100")) {
		seglist_init(&s, BENCH_NSEG);
		if (bench_want("splice_1M"))
			bench_ns("splice_1M", w_splice, &s);
		if (bench_want("splice_1M_cut"))
			bench_ns("splice_1M_cut", w_splice_cut, &s);
		seglist_build(&s);
		if (bench_want("iovec_1024"))
			bench_ns("iovec_1024", w_iovec, &s);
		if (bench_want("iovec_1024_oneraw")) {
			seglist_build_oneraw(&s);
			bench_ns("iovec_1024_oneraw", w_iovec, &s);
			seglist_build(&s);
		}
		if (bench_want("substr_4K"))
			bench_ns("substr_4K", w_substr, &s);
		if (bench_want("substr_100"))
			bench_ns("substr_100", w_substr_small, &s);
		seglist_free(&s);
	}
	if (bench_want("substr_100_local")) {
		bl_raw_set_thread_local(true);
		seglist_init(&s, BENCH_NSEG);
		seglist_build(&s);
		bench_ns("substr_100_local", w_substr_small, &s);
		seglist_free(&s);
		bl_raw_set_thread_local(false);
	}

	for (i = 0; i < sizeof(claim_nsegs) / sizeof(claim_nsegs[0]); i++) {
		static struct claimset c;
		unsigned k;

		c.nseg = claim_nsegs[i];
		snprintf(name, sizeof(name), "claim_empty_%u", c.nseg);
		snprintf(name2, sizeof(name2), "claim_nonempty_%u", c.nseg);
		if (!(bench_want(name) | bench_want(name2)))
			continue;
		must(bl_ptr_alloc(&c.big, 32 * (size_t)c.nseg), "bl_ptr_alloc");
		bench_fill_pattern(bl_ptr_data(&c.big), 32 * (size_t)c.nseg, 0);
		bl_list_init(&c.a);
		bl_list_init(&c.b);
		c.nsrc = (1u << 21) / c.nseg;
		if (c.nsrc > 64)
			c.nsrc = 64;
		for (k = 0; k < c.nsrc; k++)
			bl_list_init(&c.src[k]);
		if (bench_want(name)) {
			for (k = 0; k < c.nseg; k++)
				claim_append_seg(&c.a, &c, k);
			if (bl_list_num_buffers(&c.a) != c.nseg)
				bench_fail("claim build",
					   bl_list_num_buffers(&c.a));
			bench_ns(name, w_claim_empty, &c);
		}
		if (bench_want(name2))
			bench_ns(name2, w_claim_nonempty, &c);
		for (k = 0; k < c.nsrc; k++)
			bl_list_clear(&c.src[k]);
		bl_list_clear(&c.a);
		bl_list_clear(&c.b);
		bl_ptr_release(&c.big);
	}

	if (bench_want("crc32c_4M_first") | bench_want("crc32c_4M_cached")) {
		static struct bl_list l;
		struct bl_ptr p;

		must(bl_ptr_alloc(&p, BENCH_CRC_LEN), "bl_ptr_alloc");
		bench_fill_pattern(bl_ptr_data(&p), BENCH_CRC_LEN, 0);
		bl_list_init(&l);
		must(bl_list_append_ptr_move(&l, &p), "append_ptr_move");
		if (!bench_o.quiet)
			printf("# crc32c of the 4 MiB pattern, seed 0: 0x%08x\n",
			       bl_list_crc32c(&l, 0));
		if (bench_want("crc32c_4M_first"))
			bench_gbs("crc32c_4M_first", w_crc_first, &l,
				  BENCH_CRC_LEN);
		if (bench_want("crc32c_4M_cached"))
			bench_ns("crc32c_4M_cached", w_crc_cached, &l);
		bl_list_clear(&l);
	}

	if (bench_want("rebuild_1M") | bench_want("memcpy_1M")) {
		seglist_init(&s, BENCH_REBUILD_NSEG);
		if (bench_want("rebuild_1M"))
			bench_gbs("rebuild_1M", w_rebuild, &s,
				  BENCH_REBUILD_NSEG * BENCH_SEG);
		if (bench_want("memcpy_1M")) {
			memcpy_dst = malloc(BENCH_REBUILD_NSEG * BENCH_SEG);
			if (!memcpy_dst)
				bench_fail("malloc", 0);
			memset(memcpy_dst, 1, BENCH_REBUILD_NSEG * BENCH_SEG);
			bench_gbs("memcpy_1M", w_memcpy, &s,
				  BENCH_REBUILD_NSEG * BENCH_SEG);
			free(memcpy_dst);
		}
		seglist_free(&s);
	}

	if (bench_want("refpair")) {
		struct bl_raw *r = bl_raw_create(64);

		if (!r)
			bench_fail("bl_raw_create", -ENOMEM);
		bench_ns("refpair", w_refpair, r);
		bl_raw_put(r);
	}
	if (bench_want("refpair_local")) {
		struct bl_raw *r;

		bl_raw_set_thread_local(true);
		r = bl_raw_create(64);
		bl_raw_set_thread_local(false);
		if (!r || !bl_raw_is_thread_local(r))
			bench_fail("bl_raw_create", -ENOMEM);
		bench_ns("refpair_local", w_refpair, r);
		bl_raw_put(r);
	}

	if (bench_want("parse_frames_list") | bench_want("parse_frames_ptr")) {
		static struct frames f;

		frames_build(&f);
		if (!bench_o.quiet)
			printf("# frames: %u in %zu bytes, %u segments\n",
			       BENCH_FRAMES, bl_list_length(&f.bl),
			       bl_list_num_buffers(&f.bl));
		if (bench_want("parse_frames_list"))
			bench_ns("parse_frames_list", w_parse_list, &f);
		if (bench_want("parse_frames_ptr"))
			bench_ns("parse_frames_ptr", w_parse_ptr, &f);
		bl_list_clear(&f.bl);
	}
	if (bench_want("parse_frames_list_local")) {
		static struct frames f;

		bl_raw_set_thread_local(true);
		frames_build(&f);
		bench_ns("parse_frames_list_local", w_parse_list, &f);
		bl_list_clear(&f.bl);
		bl_raw_set_thread_local(false);
	}

	for (i = 0; i < sizeof(lookup_nsegs) / sizeof(lookup_nsegs[0]); i++) {
		static const char *const where[] = { "front", "mid", "end" };
		static struct lookuplist lk;
		size_t len = (size_t)lookup_nsegs[i] * BENCH_LOOKUP_SEG;
		size_t offs[] = { 10, len / 2 + 10, len - 182 };
		bool built = false;

		for (unsigned w = 0; w < 3; w++) {
			snprintf(name, sizeof(name), "lookup_%s_%s", where[w],
				 lookup_names[i]);
			if (!bench_want(name))
				continue;
			lookup_need(&lk, &built, lookup_nsegs[i]);
			lk.off = offs[w];
			bench_ns(name, w_lookup, &lk);
		}
		for (unsigned w = 1; w < 3; w++) {
			snprintf(name, sizeof(name), "get_ptr_%s_%s", where[w],
				 lookup_names[i]);
			if (!bench_want(name))
				continue;
			lookup_need(&lk, &built, lookup_nsegs[i]);
			lk.idx = w == 1 ? lookup_nsegs[i] / 2
					: lookup_nsegs[i] - 1;
			bench_ns(name, w_get_ptr, &lk);
		}
		snprintf(name, sizeof(name), "seek_mid_%s", lookup_names[i]);
		if (bench_want(name)) {
			lookup_need(&lk, &built, lookup_nsegs[i]);
			lk.off = offs[1];
			bench_ns(name, w_seek, &lk);
		}
		snprintf(name, sizeof(name), "splice_lookup_%s",
			 lookup_names[i]);
		if (bench_want(name)) {
			lookup_need(&lk, &built, lookup_nsegs[i]);
			bl_list_clear(&lk.other);
			bench_ns(name, w_splice_lookup, &lk);
			if (bl_list_num_buffers(&lk.bl) != lookup_nsegs[i])
				bench_fail("splice_lookup",
					   bl_list_num_buffers(&lk.bl));
		}
		if (built)
			lookup_free(&lk);
	}
	return 0;
}
