/* SPDX-License-Identifier: MIT */
/*
 * lz4.c - LZ4 frames from and to lists, segment by segment.
 *
 * The frame format (header, block headers, checksums, skippable frames) is
 * written and parsed here; liblz4 is used only for its block codecs.  Why
 * not LZ4F: LZ4F_compressUpdate copies every input that does not fill a
 * whole block into its own buffer, its XXH32 runs at a sixth of the speed
 * of a plain one, and LZ4F_decompress copies any block that spans two of
 * our segments.  Measured on a 256 MiB text/random mix (perf/run-lz4.sh).
 *
 * Compression.  A segment of at least LZ4_INPLACE_MIN (64 KiB, the LZ4
 * window) is compressed where it lies, cut into blocks of the frame's
 * block size: liblz4's streaming state keeps the previous block as its
 * dictionary, and a previous segment of 64 KiB or more is a whole window,
 * so nothing is copied.  Shorter segments would make short blocks: at
 * 4 KiB one block per segment loses ratio and speed (linked blocks can then only see the previous 4 KiB).  Those
 * are copied into a staging ring instead, where consecutive blocks are
 * contiguous (liblz4's fast "prefix" mode, which also beats its
 * "external dictionary" mode).  Every byte so staged is
 * counted as a copy.  Output goes straight into raws that hold several
 * blocks each and are appended as slices covering what was written.
 *
 * Decompression.  Every block is decoded by our own block decoder
 * (block_decode() below), which reads the input where it lies, across
 * seams, so no input byte is ever staged; a block inside one segment is
 * one piece to it, which its fast loop runs through as fast as liblz4's
 * LZ4_decompress_safe.  One decoder for every block is what makes the
 * result independent of the segmentation: liblz4 takes a match offset of
 * 0 (the format calls it invalid; it copies output bytes onto themselves),
 * so the same block decoded by liblz4 when it lay in one segment and by
 * us when it spanned two gave bytes once and -EBADMSG the other time; and
 * checking offsets before liblz4 ran would be a second pass over every
 * block.  Output goes
 * into raws that grow geometrically; for linked blocks a new raw starts
 * with a copy of the last 64 KiB of history, so the dictionary is always
 * the contiguous bytes just before the write position.  bl_lz4_decompress()
 * lets its raws grow to 4 MiB (a quarter of the history copies of 1 MiB
 * raws; a small output still gets
 * a small raw, and its last raw is trimmed below); a streaming decoder,
 * long-lived and one per connection, stops at 1 MiB.
 *
 * What is copied, all counted with bl__count_copy():
 *  - compress: segments shorter than 64 KiB (staged); the <= 64 KiB
 *    dictionary moved to the front of the staging ring when it wraps;
 *    blocks that do not compress, stored raw as the format requires;
 *  - decompress: raw (uncompressed) blocks, as the format requires; the
 *    <= 64 KiB dictionary carried into each new output raw of a linked
 *    frame; and at the end of bl_lz4_decompress() the output of a last
 *    raw that would leave more than half of it unused (so a small message
 *    does not pin a block-sized buffer).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <lz4.h>
#include <lz4hc.h>
#include "endian_int.h"
#include "iter_int.h"
#include "lz4_int.h"
#include <bufferlist/lz4.h>

#define LZ4_FRAME_MAGIC 0x184D2204u
#define LZ4_SKIP_MAGIC 0x184D2A50u	/* ..0x184D2A5F */
#define LZ4_SKIP_MASK 0xFFFFFFF0u
#define LZ4_WINDOW (64u << 10)
#define LZ4_INPLACE_MIN (64u << 10)
#define LZ4_HDR_MAX 19u		/* magic, FLG, BD, content size, HC */
#define LZ4_UNCOMPRESSED 0x80000000u
#define LZ4_OUT_CHUNK (1u << 20)	/* output raws hold this much or more */
#define LZ4_DEC_CHUNK (4u << 20)	/* bl_lz4_decompress's raws grow to this */

#define FLG_VERSION 0x40
#define FLG_INDEP 0x20
#define FLG_BCHK 0x10
#define FLG_CSIZE 0x08
#define FLG_CCHK 0x04
#define FLG_RESERVED 0x02
#define FLG_DICTID 0x01

_Static_assert(LZ4_INPLACE_MIN >= LZ4_WINDOW,
	       "an in-place segment must hold a whole window");

static inline size_t min_sz(size_t a, size_t b)
{
	return a < b ? a : b;
}

static inline size_t max_sz(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* ---- XXH32 --------------------------------------------------------------- */

#define XXH_P1 0x9E3779B1u
#define XXH_P2 0x85EBCA77u
#define XXH_P3 0xC2B2AE3Du
#define XXH_P4 0x27D4EB2Fu
#define XXH_P5 0x165667B1u

static inline uint32_t rotl32(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

/* A little-endian lane; memcpy compiles to one load. */
static inline uint32_t xxh_lane(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	v = __builtin_bswap32(v);
#endif
	return v;
}

static inline uint32_t xxh_round(uint32_t acc, uint32_t lane)
{
	acc += lane * XXH_P2;
	acc = rotl32(acc, 13) * XXH_P1;
	/*
	 * Keep the four lanes in scalar registers: gcc otherwise vectorizes
	 * them with SSE2, which has no 32-bit multiply and emulates it with
	 * shifts, at a third of the scalar speed (xxHash does the same).
	 */
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
	__asm__("" : "+r"(acc));
#endif
	return acc;
}

/* Whole 16-byte stripes of [p, p + len); returns the bytes consumed. */
static size_t xxh_stripes(uint32_t v[4], const uint8_t *p, size_t len)
{
	uint32_t v1 = v[0], v2 = v[1], v3 = v[2], v4 = v[3];
	const uint8_t *const start = p, *const end = p + (len & ~(size_t)15);

	/* four independent lanes: the multiplies overlap */
	while (p < end) {
		v1 = xxh_round(v1, xxh_lane(p));
		v2 = xxh_round(v2, xxh_lane(p + 4));
		v3 = xxh_round(v3, xxh_lane(p + 8));
		v4 = xxh_round(v4, xxh_lane(p + 12));
		p += 16;
	}
	v[0] = v1;
	v[1] = v2;
	v[2] = v3;
	v[3] = v4;
	return (size_t)(p - start);
}

void bl__xxh32_init(struct bl__xxh32 *s, uint32_t seed)
{
	s->v[0] = seed + XXH_P1 + XXH_P2;
	s->v[1] = seed + XXH_P2;
	s->v[2] = seed;
	s->v[3] = seed - XXH_P1;
	s->total = 0;
	s->memsize = 0;
	s->seed = seed;
}

void bl__xxh32_update(struct bl__xxh32 *s, const void *data, size_t len)
{
	const uint8_t *p = data;
	size_t n;

	s->total += len;
	if (s->memsize + len < 16) {
		if (len)
			memcpy(s->mem + s->memsize, p, len);
		s->memsize += (unsigned)len;
		return;
	}
	if (s->memsize) {
		n = 16 - s->memsize;
		memcpy(s->mem + s->memsize, p, n);
		xxh_stripes(s->v, s->mem, 16);
		p += n;
		len -= n;
		s->memsize = 0;
	}
	n = xxh_stripes(s->v, p, len);
	p += n;
	len -= n;
	if (len)
		memcpy(s->mem, p, len);
	s->memsize = (unsigned)len;
}

uint32_t bl__xxh32_digest(const struct bl__xxh32 *s)
{
	const uint8_t *p = s->mem, *const end = s->mem + s->memsize;
	uint32_t h;

	if (s->total >= 16)
		h = rotl32(s->v[0], 1) + rotl32(s->v[1], 7) +
		    rotl32(s->v[2], 12) + rotl32(s->v[3], 18);
	else
		h = s->seed + XXH_P5;
	h += (uint32_t)s->total;	/* the spec adds the length mod 2^32 */
	for (; p + 4 <= end; p += 4)
		h = rotl32(h + xxh_lane(p) * XXH_P3, 17) * XXH_P4;
	for (; p < end; p++)
		h = rotl32(h + *p * XXH_P5, 11) * XXH_P1;
	h ^= h >> 15;
	h *= XXH_P2;
	h ^= h >> 13;
	h *= XXH_P3;
	h ^= h >> 16;
	return h;
}

uint32_t bl__xxh32(const void *p, size_t len, uint32_t seed)
{
	struct bl__xxh32 s;

	bl__xxh32_init(&s, seed);
	bl__xxh32_update(&s, p, len);
	return bl__xxh32_digest(&s);
}

/* ---- compression --------------------------------------------------------- */

struct cctx {
	/* options */
	size_t bmax;		/* block size */
	int level;		/* HC level, when hc */
	int accel;		/* fast acceleration, when !hc */
	bool hc, indep, cchk;	/* block checksums: not an option */
	/* the staging ring (and a state that is not the thread's scratch)
	 * come from the allocator in force */
	const struct bl__allocator *al;
	void *state;
	size_t state_size;
	bool scratch;		/* state is the thread's (scratch_take) */
	char *ring;
	size_t ring_cap;
	size_t pos;		/* where the block being staged starts */
	size_t fill;		/* bytes staged for it */
	size_t bcap;		/* its capacity */
	size_t in_left;		/* input bytes not yet consumed */
	struct bl__xxh32 xs;
	/* output: res gets slices of raw's [rstart, used) */
	struct bl_list res;
	struct bl_raw *raw;
	size_t rstart;
	size_t bound_left;	/* what the frame can still need, at worst */
	size_t chunk;
	struct bl_pool *pool;
};

static int opts_parse(struct cctx *c, const struct bl_lz4_opts *o)
{
	static const struct bl_lz4_opts defaults;
	int id;

	if (!o)
		o = &defaults;
	id = o->block_size_id ? o->block_size_id : 4;
	if (id < 4 || id > 7 || o->level > LZ4HC_CLEVEL_MAX)
		return -EINVAL;
	c->bmax = (size_t)1 << (8 + 2 * id);
	c->level = o->level;
	c->hc = o->level >= LZ4HC_CLEVEL_MIN;
	/* LZ4F's mapping: level -N is acceleration N + 1 */
	if (o->level >= 0)
		c->accel = 1;
	else if (o->level < -65536)
		c->accel = 65537;
	else
		c->accel = 1 - o->level;
	c->indep = o->block_independent;
	c->cchk = o->content_checksum;
	return id;
}

/*
 * liblz4's compression state (16 KiB for the fast codec, 256 KiB for HC)
 * stays with the thread between calls: setting a fresh one up (a 16 KiB
 * memset) cost more than compressing a small message.  Like the
 * per-thread statistics, it is internal scratch from malloc, not from the
 * allocator in force: it is no buffer of the caller's and outlives every
 * call.  It goes when the thread exits.  A call that cannot have it (its
 * first malloc failed, or a compression already holds it) sets up a state
 * of its own from the allocator in force, as every call used to.
 */
struct lz4_scratch {
	LZ4_stream_t *fast;
	LZ4_streamHC_t *hc;
};

static __thread struct lz4_scratch *tls_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static bool scratch_ok;

static void scratch_exit(void *arg)
{
	struct lz4_scratch *s = arg;

	tls_scratch = NULL;
	free(s->fast);
	free(s->hc);
	free(s);
}

static void scratch_init(void)
{
	scratch_ok = pthread_key_create(&scratch_key, scratch_exit) == 0;
}

/* A fresh liblz4 state at @st, ready for a new frame. */
static void state_init(void *st, bool hc, int level)
{
	if (hc) {
		LZ4_initStreamHC(st, sizeof(LZ4_streamHC_t));
		LZ4_resetStreamHC_fast(st, level);
	} else {
		LZ4_initStream(st, sizeof(LZ4_stream_t));
	}
}

/* The thread's state, ready for a new frame; NULL when it cannot be had. */
static void *scratch_take(bool hc, int level)
{
	struct lz4_scratch *s = tls_scratch;
	void *st;

	if (bl__unlikely(!s)) {
		pthread_once(&scratch_once, scratch_init);
		if (!scratch_ok || !(s = calloc(1, sizeof(*s))))
			return NULL;
		if (pthread_setspecific(scratch_key, s)) {
			free(s);
			return NULL;
		}
		tls_scratch = s;
	}
	st = hc ? (void *)s->hc : (void *)s->fast;
	if (hc)
		s->hc = NULL;
	else
		s->fast = NULL;
	if (st) {
		/* a used state: reset, not cleared (liblz4's fast reset) */
		if (hc)
			LZ4_resetStreamHC_fast(st, level);
		else
			LZ4_resetStream_fast(st);
	} else if ((st = malloc(hc ? sizeof(LZ4_streamHC_t)
				   : sizeof(LZ4_stream_t)))) {
		state_init(st, hc, level);
	}
	return st;
}

/* Gives the state back for the thread's next call. */
static void scratch_give(bool hc, void *st)
{
	struct lz4_scratch *s = tls_scratch;
	void **slot;

	if (s) {
		slot = hc ? (void **)&s->hc : (void **)&s->fast;
		if (!*slot) {
			*slot = st;
			return;
		}
	}
	free(st);
}

static void *cc_alloc(struct cctx *c, size_t size)
{
	return bl__alloc(c->al, size, BL_CACHELINE);
}

static void cc_free(struct cctx *c, void *p, size_t size)
{
	if (p)
		bl__free(c->al, p, size, BL_CACHELINE);
}

/* Appends raw's written, not yet appended bytes to res. */
static int cc_out_flush(struct cctx *c)
{
	struct bl_ptr p;
	int ret;

	if (!c->raw || bl__raw_used(c->raw) == c->rstart)
		return 0;
	p.raw = c->raw;
	p.off = c->rstart;
	p.len = bl__raw_used(c->raw) - c->rstart;
	ret = bl_list_append_ptr(&c->res, &p);
	if (!ret)
		c->rstart = bl__raw_used(c->raw);
	return ret;
}

/* Room for @need contiguous bytes of output. */
static int cc_out_room(struct cctx *c, size_t need)
{
	struct bl_raw *r;
	size_t cap;
	int ret;

	if (c->raw && c->raw->len - bl__raw_used(c->raw) >= need)
		return 0;
	ret = cc_out_flush(c);
	if (ret)
		return ret;
	cap = max_sz(need, min_sz(c->chunk, c->bound_left));
	r = bl__raw_create_owned(c->pool, cap);
	if (!r)
		return -ENOMEM;
	if (c->raw)
		bl__raw_put(c->raw);
	c->raw = r;
	c->rstart = 0;
	return 0;
}

static void cc_out_advance(struct cctx *c, size_t n)
{
	bl__raw_advance(c->raw, n);
	c->bound_left = c->bound_left > n ? c->bound_left - n : 0;
}

/* Writes @n (1..bmax) bytes at @src as one block. */
static int cc_block(struct cctx *c, const char *src, size_t n)
{
	uint8_t *dst;
	int cs, ret;

	ret = cc_out_room(c, 4 + n);
	if (ret)
		return ret;
	dst = (uint8_t *)c->raw->data + bl__raw_used(c->raw);
	/*
	 * dstCapacity n - 1: liblz4 gives up (returns 0) as soon as the block
	 * would not be smaller than the input, and the block is stored raw.
	 * Its state stays valid (the input is history either way); LZ4F
	 * relies on the same.
	 */
	if (c->hc) {
		if (c->indep)
			LZ4_resetStreamHC_fast(c->state, c->level);
		cs = LZ4_compress_HC_continue(c->state, src, (char *)dst + 4,
					      (int)n, (int)n - 1);
	} else {
		if (c->indep)
			LZ4_resetStream_fast(c->state);
		cs = LZ4_compress_fast_continue(c->state, src, (char *)dst + 4,
						(int)n, (int)n - 1, c->accel);
	}
	if (cs <= 0) {
		memcpy(dst + 4, src, n);
		bl__count_copy(n);
		bl__le32_store(dst, (uint32_t)n | LZ4_UNCOMPRESSED);
		cs = (int)n;
	} else {
		bl__le32_store(dst, (uint32_t)cs);
	}
	cc_out_advance(c, 4 + (size_t)cs);
	return 0;
}

static int cc_stage_flush(struct cctx *c)
{
	int ret;

	if (!c->fill)
		return 0;
	ret = cc_block(c, c->ring + c->pos, c->fill);
	if (ret)
		return ret;
	if (!c->indep)
		c->pos += c->fill;	/* stays as the next block's prefix */
	c->fill = 0;
	return 0;
}

/*
 * Copies what fits of [*p, *p + *n) into the block being staged and
 * compresses the block when it is full.  @after: input bytes after these.
 */
static int cc_stage(struct cctx *c, const char **p, size_t *n, size_t after)
{
	size_t k;

	if (!c->ring) {
		size_t in = *n + after;

		c->ring_cap = c->indep ? min_sz(c->bmax, in)
				       : LZ4_WINDOW +
						 min_sz(max_sz(c->bmax,
							       LZ4_OUT_CHUNK),
							in);
		c->ring = cc_alloc(c, c->ring_cap);
		if (!c->ring)
			return -ENOMEM;
	}
	if (!c->fill) {
		size_t want = min_sz(c->bmax, *n + after);

		if (c->ring_cap - c->pos < want) {
			/*
			 * Wrap: keep the last 64 KiB of history at the front
			 * so the next block is still compressed as a prefix.
			 */
			int d;

			if (c->hc)
				d = LZ4_saveDictHC(c->state, c->ring,
						   LZ4_WINDOW);
			else
				d = LZ4_saveDict(c->state, c->ring, LZ4_WINDOW);
			if (d > 0)
				bl__count_copy((size_t)d);
			c->pos = d > 0 ? (size_t)d : 0;
		}
		c->bcap = min_sz(c->bmax, c->ring_cap - c->pos);
	}
	k = min_sz(*n, c->bcap - c->fill);
	memcpy(c->ring + c->pos + c->fill, *p, k);
	bl__count_copy(k);
	c->fill += k;
	*p += k;
	*n -= k;
	if (c->fill == c->bcap)
		return cc_stage_flush(c);
	return 0;
}

static size_t frame_bound(const struct cctx *c, size_t len, unsigned nseg)
{
	/*
	 * every block costs 4 + its bytes; there are at most len / bmax full
	 * ones, plus one short block per segment in place and one per flush
	 * of the staging ring before such a segment
	 */
	size_t blocks = len / c->bmax + 2 * (size_t)nseg + 2;

	if (len > SIZE_MAX / 4 || blocks > SIZE_MAX / 64)
		return SIZE_MAX;
	return LZ4_HDR_MAX + len + 4 * blocks + 8;
}

static int cc_header(struct cctx *c, int id, bool csize, size_t len)
{
	uint8_t *h;
	size_t n = 6;
	int ret;

	ret = cc_out_room(c, LZ4_HDR_MAX);
	if (ret)
		return ret;
	h = (uint8_t *)c->raw->data + bl__raw_used(c->raw);
	bl__le32_store(h, LZ4_FRAME_MAGIC);
	h[4] = FLG_VERSION | (c->indep ? FLG_INDEP : 0) |
	       (csize ? FLG_CSIZE : 0) |
	       (c->cchk ? FLG_CCHK : 0);
	h[5] = (uint8_t)(id << 4);
	if (csize) {
		bl__le32_store(h + 6, (uint32_t)len);
		bl__le32_store(h + 10, (uint32_t)((uint64_t)len >> 32));
		n += 8;
	}
	h[n] = (uint8_t)(bl__xxh32(h + 4, n - 4, 0) >> 8);
	cc_out_advance(c, n + 1);
	return 0;
}

static int cc_run(struct cctx *c, const struct bl_list *in)
{
	struct bl_iter it;
	const char *p;
	size_t n;
	int ret;

	bl_iter_init(&it, in, 0);
	while ((n = bl_iter_get_ptr_and_advance(&it, SIZE_MAX, &p))) {
		c->in_left -= n;
		if (c->cchk)
			bl__xxh32_update(&c->xs, p, n);
		if (n >= LZ4_INPLACE_MIN) {
			ret = cc_stage_flush(c);
			while (!ret && n) {
				size_t m = min_sz(n, c->bmax);

				ret = cc_block(c, p, m);
				p += m;
				n -= m;
			}
		} else {
			ret = 0;
			while (!ret && n)
				ret = cc_stage(c, &p, &n, c->in_left);
		}
		if (ret)
			return ret;
	}
	ret = cc_stage_flush(c);
	if (ret)
		return ret;
	ret = cc_out_room(c, 8);
	if (ret)
		return ret;
	/* EndMark, then the content checksum */
	bl__le32_store((uint8_t *)c->raw->data + bl__raw_used(c->raw), 0);
	if (c->cchk)
		bl__le32_store((uint8_t *)c->raw->data + bl__raw_used(c->raw) + 4,
			 bl__xxh32_digest(&c->xs));
	cc_out_advance(c, c->cchk ? 8 : 4);
	return cc_out_flush(c);
}

ssize_t bl_lz4_compress(const struct bl_list *in, struct bl_list *out,
			const struct bl_lz4_opts *opts)
{
	struct cctx c;
	ssize_t ret;
	size_t len;
	int id;

	if (!in || !out)
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	id = opts_parse(&c, opts);
	if (id < 0)
		return id;
	len = bl_list_length(in);
	if (len > (size_t)SSIZE_MAX / 2)
		return -EINVAL;
	c.al = bl__allocator_current();
	c.pool = bl__list_pool(out);
	c.in_left = len;
	c.chunk = max_sz(LZ4_OUT_CHUNK, 4 * (c.bmax + 8));
	c.bound_left = frame_bound(&c, len, bl_list_num_buffers(in));
	bl_list_init(&c.res);
	bl__xxh32_init(&c.xs, 0);

	c.state_size = c.hc ? sizeof(LZ4_streamHC_t) : sizeof(LZ4_stream_t);
	c.state = scratch_take(c.hc, c.level);
	c.scratch = c.state != NULL;
	if (!c.state) {
		c.state = cc_alloc(&c, c.state_size);
		if (!c.state)
			return -ENOMEM;
		state_init(c.state, c.hc, c.level);
	}

	ret = cc_header(&c, id, opts && opts->content_size, len);
	if (!ret)
		ret = cc_run(&c, in);
	if (!ret) {
		len = bl_list_length(&c.res);
		ret = bl_list_claim_append(out, &c.res);
		if (!ret)
			ret = (ssize_t)len;
	}
	bl_list_clear(&c.res);
	if (c.raw)
		bl__raw_put(c.raw);
	cc_free(&c, c.ring, c.ring_cap);
	if (c.scratch)
		scratch_give(c.hc, c.state);
	else
		cc_free(&c, c.state, c.state_size);
	return ret;
}

/* ---- the block decoder --------------------------------------------------- */

/*
 * A cursor over one block's bytes: [ip, iend) is the current contiguous
 * piece, `rest` the block's bytes after it, still in `it`.
 */
struct rd {
	struct bl_iter it;
	const uint8_t *ip, *iend;
	size_t rest;
};

static bool rd_refill(struct rd *r)
{
	const char *p;
	size_t n;

	if (!r->rest)
		return false;
	n = bl_iter_get_ptr_and_advance(&r->it, r->rest, &p);
	if (!n)
		return false;
	r->rest -= n;
	r->ip = (const uint8_t *)p;
	r->iend = r->ip + n;
	return true;
}

static inline bool rd_byte(struct rd *r, unsigned *b)
{
	if (bl__unlikely(r->ip == r->iend) && !rd_refill(r))
		return false;
	*b = *r->ip++;
	return true;
}

static inline size_t rd_left(const struct rd *r)
{
	return (size_t)(r->iend - r->ip) + r->rest;
}

/* Copies @n block bytes (n <= rd_left) to @op. */
static void rd_copy(struct rd *r, uint8_t *op, size_t n)
{
	while (n) {
		size_t k;

		if (r->ip == r->iend)
			rd_refill(r);
		k = min_sz(n, (size_t)(r->iend - r->ip));
		memcpy(op, r->ip, k);
		op += k;
		r->ip += k;
		n -= k;
	}
}

static inline void wild32(uint8_t *d, const uint8_t *s, const uint8_t *e)
{
	do {
		memcpy(d, s, 16);
		memcpy(d + 16, s + 16, 16);
		d += 32;
		s += 32;
	} while (d < e);
}

/*
 * Match copy that may write up to 32 bytes past op + ml.  Offsets below 8
 * overlap the bytes being written: the first 8 are spread so that the
 * source runs at least 8 behind afterwards (the classic LZ4 tables).
 */
static inline void match_wild(uint8_t *op, const uint8_t *match, size_t ml,
			      size_t off)
{
	static const unsigned inc32[8] = { 0, 1, 2, 1, 0, 4, 4, 4 };
	static const int dec64[8] = { 0, 0, 0, -1, -4, 1, 2, 3 };
	uint8_t *const e = op + ml;

	if (off >= 16) {
		wild32(op, match, e);
		return;
	}
	if (off < 8) {
		op[0] = match[0];
		op[1] = match[1];
		op[2] = match[2];
		op[3] = match[3];
		match += inc32[off];
		memcpy(op + 4, match, 4);
		match -= dec64[off];
		op += 8;
	}
	while (op < e) {
		memcpy(op, match, 8);
		op += 8;
		match += 8;
	}
}

/*
 * The fast loop runs while the current piece has more than FAST_IN bytes
 * left and the output FAST_OUT bytes of room: then a sequence's token,
 * short literals (one 16-byte read) and offset are inside the piece, a
 * long literal run and a long match's length bytes are checked against
 * the piece's end, and every wild copy stays inside the output.  Anything
 * else (a seam, the block's end, the end of the output) goes through the
 * careful path one sequence at a time.  The margin before a seam is as
 * small as those reads allow: every sequence within it takes the careful
 * path, so a wider margin measurably slows a decode of 4 KiB segments.
 * Near the block's end (fewer than FAST_IN_LAST bytes after the piece)
 * the margin stays FAST_IN_LAST, so the block's last sequences go through
 * the careful path as before, where the rules on where a block may end
 * are checked.  Those are liblz4's
 * (LZ4_decompress_safe): we accept no block it refuses, and refuse an
 * offset of 0, which it takes (the format calls it invalid).
 */
#define FAST_IN 17
#define FAST_IN_LAST 32
#define FAST_OUT 64
/* liblz4's read limits: length bytes may not run into the block's tail */
#define LIT_EXT_TAIL 15
#define ML_EXT_TAIL 4

static ssize_t block_decode(struct rd *r, uint8_t *dst, size_t cap,
			    const uint8_t *lowp)
{
	uint8_t *op = dst, *const oend = dst + cap;
	uint8_t *const olim = cap >= FAST_OUT ? oend - FAST_OUT : dst;

	for (;;) {
		const uint8_t *match;
		size_t lit, ml, off, left;
		unsigned token, b;
		const size_t fin = r->rest >= FAST_IN_LAST ? FAST_IN
							   : FAST_IN_LAST;

		if ((size_t)(r->iend - r->ip) > fin) {
			const uint8_t *ip = r->ip;
			const uint8_t *const ilim = r->iend - fin;

			while (bl__likely(ip < ilim && op < olim)) {
				const uint8_t *const seq = ip;

				token = *ip++;
				lit = token >> 4;
				if (lit == 15) {
					do {
						if (bl__unlikely(ip >= ilim)) {
							ip = seq;
							goto careful;
						}
						b = *ip++;
						lit += b;
					} while (b == 255);
					/* wild32 reads up to 31 bytes past */
					if (bl__unlikely(
						lit + 32 >
							(size_t)(r->iend - ip) ||
						lit > (size_t)(olim - op))) {
						ip = seq;
						goto careful;
					}
					wild32(op, ip, op + lit);
				} else {
					memcpy(op, ip, 16);
				}
				ip += lit;
				op += lit;
				off = (size_t)ip[0] | (size_t)ip[1] << 8;
				ip += 2;
				/* one compare: off - 1 wraps for 0 */
				if (bl__unlikely(off - 1 >=
						 (size_t)(op - lowp)))
					return -EBADMSG;
				match = op - off;
				ml = token & 15;
				if (ml == 15) {
					/*
					 * A long match stays here while its
					 * length bytes are in the piece and
					 * its copy inside the output's margin:
					 * they are common in text, and the
					 * careful path takes one sequence at
					 * a time.
					 */
					do {
						if (bl__unlikely(ip >= ilim))
							goto long_careful;
						b = *ip++;
						ml += b;
					} while (b == 255);
					ml += 4;
					if (bl__unlikely(ml + FAST_OUT >
							 (size_t)(oend - op)))
						goto long_careful;
					match_wild(op, match, ml, off);
					op += ml;
					continue;
long_careful:
					/* again, from the sequence's start */
					op -= lit;
					ip = seq;
					goto careful;
				}
				if (off >= 8) {
					/* short match: one 18-byte copy */
					memcpy(op, match, 8);
					memcpy(op + 8, match + 8, 8);
					memcpy(op + 16, match + 16, 2);
					op += ml + 4;
					continue;
				}
				ml += 4;
				match_wild(op, match, ml, off);
				op += ml;
			}
careful:
			r->ip = ip;
		}

		if (!rd_byte(r, &token))
			return -EBADMSG;	/* ended after a match */
		lit = token >> 4;
		if (lit == 15) {
			if (rd_left(r) <= LIT_EXT_TAIL)
				return -EBADMSG;
			do {
				if (!rd_byte(r, &b) ||
				    rd_left(r) < LIT_EXT_TAIL)
					return -EBADMSG;
				lit += b;
			} while (b == 255);
		}
		left = rd_left(r);
		if (lit > left || lit > (size_t)(oend - op))
			return -EBADMSG;
		if (lit == left) {	/* the last sequence: literals only */
			rd_copy(r, op, lit);
			return (ssize_t)(op + lit - dst);
		}
		if (left - lit < 8 || (size_t)(oend - op) - lit < 12)
			return -EBADMSG;
		rd_copy(r, op, lit);
		op += lit;
		if (!rd_byte(r, &b))
			return -EBADMSG;
		off = b;
		if (!rd_byte(r, &b))
			return -EBADMSG;
		off |= (size_t)b << 8;
		ml = token & 15;
		if (ml == 15) {
			do {
				if (!rd_byte(r, &b) || rd_left(r) < ML_EXT_TAIL)
					return -EBADMSG;
				ml += b;
			} while (b == 255);
		}
		ml += 4;
		if (off - 1 >= (size_t)(op - lowp))
			return -EBADMSG;
		match = op - off;
		/* a match may not reach into the last 5 bytes of the output */
		if (ml > (size_t)(oend - op) || (size_t)(oend - op) - ml < 5)
			return -EBADMSG;
		if (op + ml <= olim)
			match_wild(op, match, ml, off);
		else if (off >= ml)
			memcpy(op, match, ml);
		else
			for (size_t k = 0; k < ml; k++)
				op[k] = match[k];
		op += ml;
	}
}

ssize_t bl__lz4_block_decode(struct bl_iter *it, size_t n, char *dst,
			     size_t cap, size_t hist)
{
	struct rd r;
	ssize_t ret;

	if (!n || n > bl_iter_remaining(it))
		return -EBADMSG;
	r.it = *it;
	r.rest = n;
	r.ip = r.iend = NULL;
	rd_refill(&r);
	ret = block_decode(&r, (uint8_t *)dst, cap, (uint8_t *)dst - hist);
	if (ret >= 0)
		*it = r.it;
	return ret;
}

/* ---- the frame decoder --------------------------------------------------- */

enum dec_state {
	ST_MAGIC,	/* between frames */
	ST_SKIP,	/* inside a skippable frame */
	ST_BLOCK,	/* at a block header */
	ST_CCHK,	/* at the content checksum */
	ST_DEAD,	/* after an error */
};

struct bl_lz4_decoder {
	size_t max_out;		/* 0: no limit */
	size_t total;		/* bytes output by the whole stream */
	enum dec_state st;
	/* the frame being decoded */
	size_t bmax;
	bool indep, bchk, cchk, has_csize;
	uint64_t csize;		/* when has_csize */
	uint64_t fout;		/* bytes output by this frame */
	uint32_t skip;		/* left in a skippable frame */
	struct bl__xxh32 xs;
	/*
	 * Output goes into raw at wpos (its frontier).  [wpos - hist, wpos)
	 * is the frame's history that linked blocks may reach; [handed,
	 * wpos) is output not yet appended to the caller's list; [carry,
	 * ...) is what this raw holds of output (before it: a copy of the
	 * previous raw's history).
	 */
	struct bl_raw *raw;
	size_t wpos, hist, handed, carry;
	size_t next_cap;
	size_t chunk;		/* output raws grow up to this */
	struct bl_pool *pool;
	struct bl_list pend;	/* streaming: fed bytes not consumed yet */
};

static void dec_init(struct bl_lz4_decoder *d, size_t max_out)
{
	memset(d, 0, sizeof(*d));
	d->max_out = max_out;
	d->chunk = LZ4_OUT_CHUNK;
	d->st = ST_MAGIC;
	bl_list_init(&d->pend);
}

static void dec_release(struct bl_lz4_decoder *d)
{
	if (d->raw)
		bl__raw_put(d->raw);
	d->raw = NULL;
	bl_list_clear(&d->pend);
}

/* Copies @n (<= remaining) bytes at @it without moving it.  Not payload. */
static void peek(const struct bl_iter *it, void *dst, size_t n)
{
	struct bl_iter t = *it;
	uint8_t *o = dst;
	const char *p;

	while (n) {
		size_t k = bl_iter_get_ptr_and_advance(&t, n, &p);

		memcpy(o, p, k);
		o += k;
		n -= k;
	}
}

/* Appends [handed, wpos) of the current raw to @res. */
static int dec_hand_out(struct bl_lz4_decoder *d, struct bl_list *res)
{
	struct bl_ptr p;
	int ret;

	if (!d->raw || d->wpos == d->handed)
		return 0;
	p.raw = d->raw;
	p.off = d->handed;
	p.len = d->wpos - d->handed;
	ret = bl_list_append_ptr(res, &p);
	if (!ret)
		d->handed = d->wpos;
	return ret;
}

/* Room for @need bytes of output after the history, in one raw. */
static int dec_room(struct bl_lz4_decoder *d, size_t need,
		    struct bl_list *res)
{
	size_t carry, cap, max_cap;
	struct bl_raw *r;
	int ret;

	/*
	 * The frontier moves only through us (the raw is an owned one: no
	 * slice we handed out can grow it), so it is always wpos.
	 */
	if (d->raw && d->raw->len - d->wpos >= need)
		return 0;
	ret = dec_hand_out(d, res);
	if (ret)
		return ret;
	carry = d->raw ? d->hist : 0;
	cap = d->next_cap;
	if (d->has_csize && d->csize - d->fout < cap)
		cap = (size_t)(d->csize - d->fout);	/* exact if known */
	cap = max_sz(cap + carry, need + carry);
	r = bl__raw_create_owned(d->pool, cap);
	if (!r)
		return -ENOMEM;
	if (carry) {
		memcpy(r->data, d->raw->data + d->wpos - carry, carry);
		bl__count_copy(carry);
		bl__raw_advance(r, carry);
	}
	if (d->raw)
		bl__raw_put(d->raw);
	d->raw = r;
	d->wpos = d->handed = d->carry = carry;
	/* grow geometrically: few allocations for large outputs */
	max_cap = max_sz(d->chunk, 4 * d->bmax);
	d->next_cap = min_sz(max_sz(cap - carry, d->bmax) * 2, max_cap);
	return 0;
}

static int dec_header(struct bl_lz4_decoder *d, struct bl_iter *it,
		      bool *more)
{
	size_t avail = bl_iter_remaining(it), hlen;
	uint8_t h[LZ4_HDR_MAX + 4];
	unsigned flg, bd;

	*more = true;
	if (avail < 6)
		return 0;
	peek(it, h, 6);
	flg = h[4];
	bd = h[5];
	if ((flg & 0xC0) != FLG_VERSION || (flg & FLG_RESERVED) ||
	    (bd & 0x8F) || ((bd >> 4) & 7) < 4)
		return -EBADMSG;
	if (flg & FLG_DICTID)
		return -EBADMSG;	/* no dictionaries here */
	hlen = 7 + (flg & FLG_CSIZE ? 8 : 0);
	if (avail < hlen)
		return 0;
	peek(it, h, hlen);
	if (h[hlen - 1] != (uint8_t)(bl__xxh32(h + 4, hlen - 5, 0) >> 8))
		return -EBADMSG;
	d->bmax = (size_t)1 << (8 + 2 * ((bd >> 4) & 7));
	d->indep = flg & FLG_INDEP;
	d->bchk = flg & FLG_BCHK;
	d->cchk = flg & FLG_CCHK;
	/* as LZ4F: a content size of 0 means "unknown" */
	d->csize = flg & FLG_CSIZE ? bl__le64_load(h + 6) : 0;
	d->has_csize = d->csize != 0;
	if (d->has_csize && d->max_out && d->csize > d->max_out - d->total)
		return -E2BIG;
	d->fout = 0;
	d->hist = 0;
	bl__xxh32_init(&d->xs, 0);
	bl_iter_advance(it, hlen);
	d->st = ST_BLOCK;
	*more = false;
	return 0;
}

/*
 * Whether the first @n (< 4) bytes @h can begin a frame, so that garbage
 * is refused as soon as it arrives rather than at the end of the stream.
 */
static bool magic_prefix_ok(const uint8_t *h, size_t n)
{
	static const uint8_t lz4[4] = { 0x04, 0x22, 0x4D, 0x18 };
	static const uint8_t skip[4] = { 0x50, 0x2A, 0x4D, 0x18 };
	bool is_lz4 = true, is_skip = true;

	for (size_t i = 0; i < n; i++) {
		is_lz4 = is_lz4 && h[i] == lz4[i];
		is_skip = is_skip && (i ? h[i] : h[i] & 0xF0) == skip[i];
	}
	return is_lz4 || is_skip;
}

/* Decodes the block of @n bytes at @it (its header consumed). */
static int dec_block(struct bl_lz4_decoder *d, struct bl_iter *it, size_t n,
		     bool stored, struct bl_list *res)
{
	size_t cap = d->bmax;
	ssize_t m;
	uint8_t *dst;
	int ret;

	if (d->has_csize && d->csize - d->fout < cap)
		cap = (size_t)(d->csize - d->fout);
	if (stored) {
		if (n > cap)
			return -EBADMSG;	/* beyond the content size */
		if (d->max_out && n > d->max_out - d->total)
			return -E2BIG;
		cap = n;
	}
	ret = dec_room(d, max_sz(cap, 1), res);
	if (ret)
		return ret;
	dst = (uint8_t *)d->raw->data + d->wpos;
	if (stored) {
		peek(it, dst, n);
		if (n)
			bl__count_copy(n);
		bl_iter_advance(it, n);
		m = (ssize_t)n;
	} else {
		m = bl__lz4_block_decode(it, n, (char *)dst, cap,
					 d->indep ? 0 : d->hist);
		if (m < 0)
			return -EBADMSG;
	}
	if (d->max_out && (size_t)m > d->max_out - d->total)
		return -E2BIG;
	if (d->cchk)
		bl__xxh32_update(&d->xs, dst, (size_t)m);
	bl__raw_advance(d->raw, (size_t)m);
	d->wpos += (size_t)m;
	d->hist = d->indep ? 0 : min_sz(LZ4_WINDOW, d->hist + (size_t)m);
	d->fout += (uint64_t)m;
	d->total += (size_t)m;
	return 0;
}

static int dec_frame_end(struct bl_lz4_decoder *d)
{
	if (d->has_csize && d->fout != d->csize)
		return -EBADMSG;
	d->st = ST_MAGIC;
	return 0;
}

/*
 * Decodes every complete unit (frame header, block, checksum) at @it and
 * stops at the first incomplete one, leaving @it at its start.  Output is
 * written into d->raw; slices of it reach @res through dec_hand_out().
 */
static int dec_run(struct bl_lz4_decoder *d, struct bl_iter *it,
		   struct bl_list *res)
{
	uint8_t h[8];
	size_t avail;
	bool more;
	int ret;

	for (;;) {
		avail = bl_iter_remaining(it);
		switch (d->st) {
		case ST_MAGIC: {
			uint32_t magic;

			if (avail < 4) {
				peek(it, h, avail);
				return magic_prefix_ok(h, avail) ? 0 : -EBADMSG;
			}
			peek(it, h, 4);
			magic = bl__le32_load(h);
			if (magic == LZ4_FRAME_MAGIC) {
				ret = dec_header(d, it, &more);
				if (ret || more)
					return ret;
			} else if ((magic & LZ4_SKIP_MASK) == LZ4_SKIP_MAGIC) {
				if (avail < 8)
					return 0;
				peek(it, h, 8);
				d->skip = bl__le32_load(h + 4);
				bl_iter_advance(it, 8);
				d->st = ST_SKIP;
			} else {
				return -EBADMSG;
			}
			break;
		}
		case ST_SKIP: {
			size_t k = min_sz(avail, d->skip);

			bl_iter_advance(it, k);
			d->skip -= (uint32_t)k;
			if (d->skip)
				return 0;
			d->st = ST_MAGIC;
			break;
		}
		case ST_BLOCK: {
			uint32_t w;
			size_t n, chk = d->bchk ? 4 : 0;

			if (avail < 4)
				return 0;
			peek(it, h, 4);
			w = bl__le32_load(h);
			if (!w) {	/* EndMark */
				bl_iter_advance(it, 4);
				if (d->cchk) {
					d->st = ST_CCHK;
					break;
				}
				ret = dec_frame_end(d);
				if (ret)
					return ret;
				break;
			}
			n = w & ~LZ4_UNCOMPRESSED;
			if (n > d->bmax)
				return -EBADMSG;
			if (avail - 4 < n + chk)
				return 0;
			bl_iter_advance(it, 4);
			if (chk) {
				struct bl_iter t = *it;
				struct bl__xxh32 xs;
				const char *p;
				size_t k, left = n;

				bl__xxh32_init(&xs, 0);
				while (left) {
					k = bl_iter_get_ptr_and_advance(
						&t, left, &p);
					bl__xxh32_update(&xs, p, k);
					left -= k;
				}
				peek(&t, h, 4);
				if (bl__le32_load(h) != bl__xxh32_digest(&xs))
					return -EBADMSG;
			}
			if (n) {
				ret = dec_block(d, it, n,
						w & LZ4_UNCOMPRESSED, res);
				if (ret)
					return ret;
			}
			bl_iter_advance(it, chk);
			break;
		}
		case ST_CCHK:
			if (avail < 4)
				return 0;
			peek(it, h, 4);
			if (bl__le32_load(h) != bl__xxh32_digest(&d->xs))
				return -EBADMSG;
			bl_iter_advance(it, 4);
			ret = dec_frame_end(d);
			if (ret)
				return ret;
			break;
		default:
			return -EINVAL;
		}
	}
}

ssize_t bl_lz4_decompress(const struct bl_list *in, struct bl_list *out,
			  size_t max_out)
{
	struct bl_lz4_decoder d;
	struct bl_list res;
	struct bl_iter it;
	size_t len = 0;
	int ret;

	if (!in || !out)
		return -EINVAL;
	dec_init(&d, max_out);
	d.chunk = LZ4_DEC_CHUNK;
	d.pool = bl__list_pool(out);
	bl_list_init(&res);
	bl_iter_init(&it, in, 0);
	ret = dec_run(&d, &it, &res);
	if (!ret && (d.st != ST_MAGIC || bl_iter_remaining(&it)))
		ret = -EBADMSG;		/* truncated */
	if (!ret && d.raw && d.wpos > d.handed) {
		size_t n = d.wpos - d.handed;
		struct bl_raw *r = NULL;

		/*
		 * Nothing of the last raw is handed out yet: if its output
		 * would leave more than half of it unused, give the caller
		 * a copy of the right size instead (a small message must
		 * not pin a block-sized buffer).  Failing to, is no error.
		 */
		if (d.handed == d.carry && d.raw->len - n > n)
			r = bl__raw_create_combined(d.pool, n, n);
		if (r) {
			struct bl_ptr p = { r, 0, n };

			memcpy(r->data, d.raw->data + d.handed, n);
			bl__count_copy(n);
			ret = bl_list_append_ptr_move(&res, &p);
			if (ret)
				bl__raw_put(r);
		} else {
			ret = dec_hand_out(&d, &res);
		}
	}
	if (!ret) {
		len = bl_list_length(&res);
		ret = bl_list_claim_append(out, &res);
	}
	bl_list_clear(&res);
	dec_release(&d);
	return ret ? ret : (ssize_t)len;
}

/* ---- the streaming decoder ----------------------------------------------- */

struct bl_lz4_decoder *bl_lz4_decoder_new(size_t max_out)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_lz4_decoder *d;

	/*
	 * The decoder is freed through the allocator in force at free time;
	 * remember which one made it by keeping it in front of the struct.
	 */
	d = bl__alloc(al, sizeof(*d) + BL_CACHELINE, BL_CACHELINE);
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	*(const struct bl__allocator **)d = al;
	d = (struct bl_lz4_decoder *)((char *)d + BL_CACHELINE);
	dec_init(d, max_out);
	return d;
}

ssize_t bl_lz4_decoder_feed(struct bl_lz4_decoder *d,
			    const struct bl_list *in, struct bl_list *out)
{
	struct bl_list res;
	struct bl_iter it;
	size_t len = 0;
	int ret;

	if (!d || !in || !out || d->st == ST_DEAD)
		return -EINVAL;
	/*
	 * After a failure the decoder is dead (the contract), so its own
	 * state need not be restored; only @out must be untouched.
	 */
	bl_list_init(&res);
	d->pool = bl__list_pool(out);
	ret = bl_list_append_list(&d->pend, in);
	bl_iter_init(&it, &d->pend, 0);
	if (!ret)
		ret = dec_run(d, &it, &res);
	if (!ret)
		ret = dec_hand_out(d, &res);
	if (!ret)
		ret = bl_list_splice(&d->pend, 0, bl_iter_offset(&it), NULL);
	if (!ret) {
		len = bl_list_length(&res);
		ret = bl_list_claim_append(out, &res);
	}
	bl_list_clear(&res);
	if (ret) {
		d->st = ST_DEAD;
		dec_release(d);
		return ret;
	}
	return (ssize_t)len;
}

int bl_lz4_decoder_end(struct bl_lz4_decoder *d)
{
	if (!d || d->st == ST_DEAD)
		return -EINVAL;
	if (d->st != ST_MAGIC || !bl_list_is_empty(&d->pend))
		return -EBADMSG;
	return 0;
}

void bl_lz4_decoder_free(struct bl_lz4_decoder *d)
{
	const struct bl__allocator *al;
	char *base;

	if (!d)
		return;
	dec_release(d);
	base = (char *)d - BL_CACHELINE;
	al = *(const struct bl__allocator **)base;
	bl__free(al, base, sizeof(*d) + BL_CACHELINE, BL_CACHELINE);
}
