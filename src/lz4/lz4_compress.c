/* SPDX-License-Identifier: MIT */
/*
 * lz4_compress.c - bl_lz4_compress(): LZ4 frames from lists, segment by
 * segment.  The frame format (header, block headers, checksums) is
 * written here; liblz4 is used only for its block compressors.  Why not
 * LZ4F: LZ4F_compressUpdate copies every input that does not fill a whole
 * block into its own buffer, and its XXH32 runs at a sixth of the speed
 * of a plain one (lz4_xxh32.c).  Measured on a 256 MiB text/random mix
 * (perf/run-lz4.sh).
 *
 * A segment of at least INPLACE_MIN (64 KiB, the LZ4 window) is
 * compressed where it lies, cut into blocks of the frame's block size:
 * liblz4's streaming state keeps the previous block as its dictionary,
 * and a previous segment of 64 KiB or more is a whole window, so nothing
 * is copied.  Shorter segments would make short blocks: at 4 KiB one
 * block per segment loses ratio and speed (linked blocks can then only
 * see the previous 4 KiB).  Those are copied into a staging ring instead,
 * where consecutive blocks are contiguous (liblz4's fast "prefix" mode,
 * which also beats its "external dictionary" mode).  Every byte so staged
 * is counted as a copy.  Output goes straight into raws that hold several
 * blocks each and are appended as slices covering what was written.
 *
 * What is copied, all counted with bl__count_copy(): segments shorter
 * than 64 KiB (staged); the <= 64 KiB dictionary moved to the front of
 * the staging ring when it wraps; blocks that do not compress, stored raw
 * as the format requires.
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

#define INPLACE_MIN (64u << 10)	/* segments compressed where they lie */

_Static_assert(INPLACE_MIN >= BL__LZ4_WINDOW,
	       "an in-place segment must hold a whole window");

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

	if (c->raw && bl__raw_room(c->raw) >= need)
		return 0;
	ret = cc_out_flush(c);
	if (ret)
		return ret;
	cap = bl__lz4_max(need, bl__lz4_min(c->chunk, c->bound_left));
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
	dst = (uint8_t *)bl__raw_data(c->raw) + bl__raw_used(c->raw);
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
		bl__le32_store(dst, (uint32_t)n | BL__LZ4_UNCOMPRESSED);
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

		c->ring_cap = c->indep ? bl__lz4_min(c->bmax, in)
				       : BL__LZ4_WINDOW +
						 bl__lz4_min(bl__lz4_max(c->bmax,
							       BL__LZ4_OUT_CHUNK),
							in);
		c->ring = cc_alloc(c, c->ring_cap);
		if (!c->ring)
			return -ENOMEM;
	}
	if (!c->fill) {
		size_t want = bl__lz4_min(c->bmax, *n + after);

		if (c->ring_cap - c->pos < want) {
			/*
			 * Wrap: keep the last 64 KiB of history at the front
			 * so the next block is still compressed as a prefix.
			 */
			int d;

			if (c->hc)
				d = LZ4_saveDictHC(c->state, c->ring,
						   BL__LZ4_WINDOW);
			else
				d = LZ4_saveDict(c->state, c->ring, BL__LZ4_WINDOW);
			if (d > 0)
				bl__count_copy((size_t)d);
			c->pos = d > 0 ? (size_t)d : 0;
		}
		c->bcap = bl__lz4_min(c->bmax, c->ring_cap - c->pos);
	}
	k = bl__lz4_min(*n, c->bcap - c->fill);
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
	return BL__LZ4_HDR_MAX + len + 4 * blocks + 8;
}

static int cc_header(struct cctx *c, int id, bool csize, size_t len)
{
	uint8_t *h;
	size_t n = 6;
	int ret;

	ret = cc_out_room(c, BL__LZ4_HDR_MAX);
	if (ret)
		return ret;
	h = (uint8_t *)bl__raw_data(c->raw) + bl__raw_used(c->raw);
	bl__le32_store(h, BL__LZ4_FRAME_MAGIC);
	h[4] = BL__LZ4_FLG_VERSION | (c->indep ? BL__LZ4_FLG_INDEP : 0) |
	       (csize ? BL__LZ4_FLG_CSIZE : 0) |
	       (c->cchk ? BL__LZ4_FLG_CCHK : 0);
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
	uint8_t *end;
	size_t n;
	int ret;

	bl_iter_init(&it, in, 0);
	while ((n = bl_iter_get_ptr_and_advance(&it, SIZE_MAX, &p))) {
		c->in_left -= n;
		if (c->cchk)
			bl__xxh32_update(&c->xs, p, n);
		if (n >= INPLACE_MIN) {
			ret = cc_stage_flush(c);
			while (!ret && n) {
				size_t m = bl__lz4_min(n, c->bmax);

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
	end = (uint8_t *)bl__raw_data(c->raw) + bl__raw_used(c->raw);
	bl__le32_store(end, 0);
	if (c->cchk)
		bl__le32_store(end + 4, bl__xxh32_digest(&c->xs));
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
	c.chunk = bl__lz4_max(BL__LZ4_OUT_CHUNK, 4 * (c.bmax + 8));
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

