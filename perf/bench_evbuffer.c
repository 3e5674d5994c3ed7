/* SPDX-License-Identifier: MIT */
/*
 * bench_evbuffer.c - the core workloads of perf/bench_core.c, run on
 * libevent's evbuffer where it has an equivalent.
 *
 * evbuffer has no raw buffers (no alloc_*), no substr and no crc32c, so
 * those workloads are absent.  The others mirror bench_core.c, with these
 * translations:
 *  - a segment is an evbuffer chain; "1024 x 4 KiB separate raws" are 1024
 *    chains made by evbuffer_add_reference() over 1024 separately
 *    allocated 4 KiB blocks;
 *  - append = evbuffer_add(), clear = evbuffer_drain() of everything;
 *  - splice of 1 MiB from offset 1.5 MiB: evbuffer cannot cut from the
 *    middle, so the timed region is remove_buffer(head 1.5 MiB -> tmp),
 *    remove_buffer(1 MiB -> claim), prepend_buffer(tmp -> back in front).
 *    All cuts fall on chain boundaries, so nothing is copied;
 *  - claim_append = evbuffer_add_buffer() (moves the chains);
 *  - iovec export = evbuffer_peek();
 *  - rebuild = evbuffer_pullup(buf, -1);
 *  - parsing is destructive (evbuffer_remove of the length, then
 *    evbuffer_remove_buffer of the payload into a list of its own, or
 *    evbuffer_peek + evbuffer_drain for the zero-copy variant); the frames
 *    are re-encoded outside the timed region before every pass.
 */
#include <event2/buffer.h>
#include <sys/uio.h>

#include "benchutil.h"

static void must(int rc, const char *what)
{
	if (rc < 0)
		bench_fail(what, rc);
}

/* ---- fills --------------------------------------------------------------- */

static char fill_src[16384];

static uint64_t w_fill(void *arg, uint64_t n)
{
	unsigned step = *(unsigned *)arg;
	struct evbuffer *b = evbuffer_new();
	uint64_t t0 = bench_now(), t;

	for (uint64_t i = 0; i < n; i++) {
		for (unsigned j = 0; j < BENCH_FILL_LEN; j += step)
			evbuffer_add(b, fill_src, step);
		bench_consume(evbuffer_get_length(b));
		evbuffer_drain(b, evbuffer_get_length(b));
	}
	t = bench_now() - t0;
	evbuffer_free(b);
	return t;
}

/* ---- 8-byte append ------------------------------------------------------- */

static uint64_t w_append8(void *arg, uint64_t n)
{
	struct evbuffer *b = evbuffer_new();
	unsigned k = 0;
	uint64_t t0 = bench_now(), t;

	for (uint64_t i = 0; i < n; i++) {
		evbuffer_add(b, &i, 8);
		if (++k == BENCH_APPEND_CLEAR) {
			evbuffer_drain(b, evbuffer_get_length(b));
			k = 0;
		}
	}
	t = bench_now() - t0;
	bench_consume(evbuffer_get_length(b));
	evbuffer_free(b);
	return t;
}

/* ---- 1024 x 4 KiB: splice, iovec ----------------------------------------- */

struct seglist {
	unsigned nseg;
	char *mem[BENCH_NSEG];		/* separate 4 KiB blocks */
	struct evbuffer *bl, *other, *tmp;
};

static void seglist_init(struct seglist *s, unsigned nseg)
{
	unsigned i;

	s->nseg = nseg;
	for (i = 0; i < nseg; i++) {
		s->mem[i] = malloc(BENCH_SEG);
		if (!s->mem[i])
			bench_fail("malloc", 0);
		bench_fill_pattern(s->mem[i], BENCH_SEG, (size_t)i * BENCH_SEG);
	}
	s->bl = evbuffer_new();
	s->other = evbuffer_new();
	s->tmp = evbuffer_new();
}

static void seglist_build(struct seglist *s)
{
	unsigned i;

	evbuffer_drain(s->bl, evbuffer_get_length(s->bl));
	for (i = 0; i < s->nseg; i++)
		must(evbuffer_add_reference(s->bl, s->mem[i], BENCH_SEG, NULL,
					    NULL), "add_reference");
}

static void seglist_free(struct seglist *s)
{
	unsigned i;

	evbuffer_free(s->bl);
	evbuffer_free(s->other);
	evbuffer_free(s->tmp);
	for (i = 0; i < s->nseg; i++)
		free(s->mem[i]);
}

static uint64_t w_splice(void *arg, uint64_t n)
{
	struct seglist *s = arg;
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t t0;

		seglist_build(s);
		evbuffer_drain(s->other, evbuffer_get_length(s->other));
		t0 = bench_now();
		evbuffer_remove_buffer(s->bl, s->tmp, BENCH_SPLICE_OFF);
		evbuffer_remove_buffer(s->bl, s->other, BENCH_SPLICE_LEN);
		evbuffer_prepend_buffer(s->bl, s->tmp);
		sum += bench_now() - t0;
		if (evbuffer_get_length(s->other) != BENCH_SPLICE_LEN ||
		    evbuffer_get_length(s->bl) !=
			    BENCH_NSEG * BENCH_SEG - BENCH_SPLICE_LEN)
			bench_fail("splice",
				   (long)evbuffer_get_length(s->other));
	}
	return bench_less_timer(sum, n);
}

static uint64_t w_iovec(void *arg, uint64_t n)
{
	struct seglist *s = arg;
	struct evbuffer_iovec iov[BENCH_NSEG];
	uint64_t t0 = bench_now(), t;
	int got = 0;

	for (uint64_t i = 0; i < n; i++) {
		got = evbuffer_peek(s->bl, -1, NULL, iov, BENCH_NSEG);
		bench_escape(iov);
	}
	t = bench_now() - t0;
	if (got != BENCH_NSEG)
		bench_fail("evbuffer_peek", got);
	bench_consume(iov[BENCH_NSEG - 1].iov_len);
	return t;
}

/* ---- claim (evbuffer_add_buffer) ----------------------------------------- */

struct claimset {
	unsigned nseg, nsrc;
	char *big;
	struct evbuffer *a, *b;
	struct evbuffer *src[64];
};

static void claim_append_seg(struct evbuffer *e, struct claimset *c,
			     unsigned i)
{
	must(evbuffer_add_reference(e, c->big + 32 * (size_t)i, 16, NULL,
				    NULL), "add_reference");
}

/* Into an empty buffer: ping-pong the N chains between two buffers. */
static uint64_t w_claim_empty(void *arg, uint64_t n)
{
	struct claimset *c = arg;
	uint64_t t0 = bench_now(), t;

	for (uint64_t i = 0; i < n; i++) {
		if (i & 1)
			evbuffer_add_buffer(c->a, c->b);
		else
			evbuffer_add_buffer(c->b, c->a);
	}
	t = bench_now() - t0;
	if (n & 1)
		evbuffer_add_buffer(c->a, c->b);
	if (evbuffer_get_length(c->a) != 16 * (size_t)c->nseg)
		bench_fail("add_buffer", (long)evbuffer_get_length(c->a));
	return t;
}

/* Into a non-empty buffer: batches built round-robin, as in bench_core. */
static uint64_t w_claim_nonempty(void *arg, uint64_t n)
{
	struct claimset *c = arg;
	uint64_t sum = 0, regions = 0;

	while (n) {
		unsigned m = n < c->nsrc ? (unsigned)n : c->nsrc;
		unsigned i, k;
		uint64_t t0;

		evbuffer_drain(c->b, evbuffer_get_length(c->b));
		for (i = 0; i < c->nseg; i++)
			for (k = 0; k < m; k++)
				claim_append_seg(c->src[k], c, i);
		must(evbuffer_add_reference(c->b, c->big, 8, NULL, NULL),
		     "add_reference");
		t0 = bench_now();
		for (k = 0; k < m; k++)
			evbuffer_add_buffer(c->b, c->src[k]);
		sum += bench_now() - t0;
		regions++;
		if (evbuffer_get_length(c->b) != 8 + 16 * (size_t)m * c->nseg)
			bench_fail("add_buffer",
				   (long)evbuffer_get_length(c->b));
		n -= m;
	}
	evbuffer_drain(c->b, evbuffer_get_length(c->b));
	return bench_less_timer(sum, regions);
}

/* ---- rebuild ------------------------------------------------------------- */

static uint64_t w_rebuild(void *arg, uint64_t n)
{
	struct seglist *s = arg;
	uint64_t sum = 0;

	for (uint64_t i = 0; i < n; i++) {
		unsigned char *p;
		uint64_t t0;

		seglist_build(s);
		t0 = bench_now();
		p = evbuffer_pullup(s->bl, -1);
		sum += bench_now() - t0;
		if (!p)
			bench_fail("evbuffer_pullup", 0);
		bench_consume(p[0]);
		evbuffer_drain(s->bl, evbuffer_get_length(s->bl));
	}
	return sum;
}

/* ---- parse frames -------------------------------------------------------- */

struct frames {
	struct evbuffer *bl;
	uint64_t payload;
};

static void frames_build(struct frames *f)
{
	static char payload[64];
	uint32_t st = BENCH_FRAME_SEED;
	unsigned i;

	bench_fill_pattern(payload, sizeof(payload), 0);
	evbuffer_drain(f->bl, evbuffer_get_length(f->bl));
	f->payload = 0;
	for (i = 0; i < BENCH_FRAMES; i++) {
		uint32_t len = bench_frame_len(&st);

		evbuffer_add(f->bl, &len, 4);	/* little-endian */
		evbuffer_add(f->bl, payload, len);
		f->payload += len;
	}
}

/* Frames pass by pass; the encoding of each pass is outside the timing. */
static uint64_t w_parse_list(void *arg, uint64_t n)
{
	struct frames *f = arg;
	struct evbuffer *out = evbuffer_new();
	uint64_t sum = 0, total = 0;

	while (n) {
		uint64_t m = n < BENCH_FRAMES ? n : BENCH_FRAMES, t0;

		frames_build(f);
		t0 = bench_now();
		for (uint64_t k = 0; k < m; k++) {
			uint32_t len;

			evbuffer_remove(f->bl, &len, 4);
			evbuffer_remove_buffer(f->bl, out, len);
			total += evbuffer_get_length(out);
			evbuffer_drain(out, len);
		}
		sum += bench_now() - t0;
		n -= m;
	}
	evbuffer_free(out);
	bench_consume(total);
	return sum;
}

static uint64_t w_parse_ptr(void *arg, uint64_t n)
{
	struct frames *f = arg;
	uint64_t sum = 0, total = 0;

	while (n) {
		uint64_t m = n < BENCH_FRAMES ? n : BENCH_FRAMES, t0;

		frames_build(f);
		t0 = bench_now();
		for (uint64_t k = 0; k < m; k++) {
			struct evbuffer_iovec v[2];
			uint32_t len;
			int nv, j;

			evbuffer_remove(f->bl, &len, 4);
			nv = evbuffer_peek(f->bl, len, NULL, v, 2);
			for (j = 0; j < nv && j < 2; j++)
				total += v[j].iov_len +
					 *(unsigned char *)v[j].iov_base;
			evbuffer_drain(f->bl, len);
		}
		sum += bench_now() - t0;
		n -= m;
	}
	bench_consume(total);
	return sum;
}

/* ---- main ---------------------------------------------------------------- */

int main(int argc, char **argv)
{
	static const unsigned fill_steps[] = { 4, 16, 64, 256, 1024, 4096,
					       16384 };
	static const unsigned claim_nsegs[] = { 16, 1024, 65536 };
	static struct seglist s;
	char name[64], name2[64];
	unsigned i;

	bench_parse_args(argc, argv, "bench_evbuffer");
	bench_fill_pattern(fill_src, sizeof(fill_src), 0);

	for (i = 0; i < sizeof(fill_steps) / sizeof(fill_steps[0]); i++) {
		unsigned step = fill_steps[i];

		snprintf(name, sizeof(name), "fill_%u", step);
		if (bench_want(name))
			bench_fill_line(name, BENCH_FILL_LEN, step, w_fill,
					&step);
	}
	if (bench_want("append_8"))
		bench_ns("append_8", w_append8, NULL);

	if (bench_want("splice_1M") | bench_want("iovec_1024")) {
		seglist_init(&s, BENCH_NSEG);
		if (bench_want("splice_1M"))
			bench_ns("splice_1M", w_splice, &s);
		seglist_build(&s);
		if (bench_want("iovec_1024"))
			bench_ns("iovec_1024", w_iovec, &s);
		seglist_free(&s);
	}

	for (i = 0; i < sizeof(claim_nsegs) / sizeof(claim_nsegs[0]); i++) {
		struct claimset c;
		unsigned k;

		c.nseg = claim_nsegs[i];
		snprintf(name, sizeof(name), "claim_empty_%u", c.nseg);
		snprintf(name2, sizeof(name2), "claim_nonempty_%u", c.nseg);
		if (!(bench_want(name) | bench_want(name2)))
			continue;
		c.big = malloc(32 * (size_t)c.nseg);
		if (!c.big)
			bench_fail("malloc", 0);
		bench_fill_pattern(c.big, 32 * (size_t)c.nseg, 0);
		c.a = evbuffer_new();
		c.b = evbuffer_new();
		c.nsrc = (1u << 21) / c.nseg;
		if (c.nsrc > 64)
			c.nsrc = 64;
		for (k = 0; k < c.nsrc; k++)
			c.src[k] = evbuffer_new();
		if (bench_want(name)) {
			for (k = 0; k < c.nseg; k++)
				claim_append_seg(c.a, &c, k);
			bench_ns(name, w_claim_empty, &c);
		}
		if (bench_want(name2))
			bench_ns(name2, w_claim_nonempty, &c);
		for (k = 0; k < c.nsrc; k++)
			evbuffer_free(c.src[k]);
		evbuffer_free(c.a);
		evbuffer_free(c.b);
		free(c.big);
	}

	if (bench_want("rebuild_1M")) {
		seglist_init(&s, BENCH_REBUILD_NSEG);
		bench_gbs("rebuild_1M", w_rebuild, &s,
			  BENCH_REBUILD_NSEG * BENCH_SEG);
		seglist_free(&s);
	}

	if (bench_want("parse_frames_list") | bench_want("parse_frames_ptr")) {
		struct frames f = { evbuffer_new(), 0 };

		if (bench_want("parse_frames_list"))
			bench_ns("parse_frames_list", w_parse_list, &f);
		if (bench_want("parse_frames_ptr"))
			bench_ns("parse_frames_ptr", w_parse_ptr, &f);
		evbuffer_free(f.bl);
	}
	return 0;
}
