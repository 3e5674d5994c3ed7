/* SPDX-License-Identifier: MIT */
/*
 * test_model.c - random operations applied both to a few bufferlists and to
 * plain byte arrays (the model), compared after every step.
 *
 * Four lists, so that claim, append_list, splice's claim_by and substr_of
 * move bytes between lists, and a handful of "source" slices over raws of
 * every kind (combined, aligned, static, claimed, growing) whose slices are
 * appended and prepended.
 *
 * The one thing the model cannot know on its own is aliasing: copy_in and
 * zero write in place into the raws, shared or not (as Ceph does), so bytes
 * another list shares change with them.  After such a write the test asks
 * the list where the written bytes now live (to_iovec) and applies the same
 * bytes to every model position whose segment covers those addresses.  The
 * addresses decide only that propagation; contents are always compared
 * against the model, static memory must never change, and a write must
 * never land in static memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "testutil.h"

#define NLISTS		4
#define NSRC		6
#define LIST_MAX	(1u << 20)	/* a list above this is cleared */
#define SMALL_LIST	(64u << 10)	/* compared in full every step */
#define FULL_EVERY	64		/* big lists: compared this often */
#define ALL_EVERY	1024		/* every list and source */
#define NSTATIC		2
#define STATIC_LEN	(64u << 10)
#define TMP_LEN		(4u << 20)
#define IOV_BATCH	64

enum op {
	OP_APPEND, OP_APPEND_ZERO, OP_APPEND_PTR, OP_APPEND_PTR_MOVE,
	OP_PREPEND_PTR, OP_APPEND_LIST, OP_CLAIM_APPEND, OP_CLAIM_PREPEND,
	OP_SPLICE, OP_SUBSTR, OP_COPY_IN, OP_ZERO, OP_COPY_OUT, OP_REBUILD,
	OP_REBUILD_ALIGNED, OP_REBUILD_ASM, OP_C_STR, OP_CLEAR, OP_SWAP,
	OP_ITER, OP_CRC, OP_INVALIDATE_CRC, OP_TO_IOVEC, OP_ENCODE,
	OP_ENCODE_BYTES, OP_ENCODE_LIST, OP_COMPARE, OP_GET_PTR, OP_SRC_NEW,
	OP_SRC_GROW, OP_COMPACT, NOPS
};

static const struct {
	const char *name;
	unsigned weight;
} ops[NOPS] = {
	[OP_APPEND] = { "append", 12 },
	[OP_APPEND_ZERO] = { "append_zero", 3 },
	[OP_APPEND_PTR] = { "append_ptr", 10 },
	[OP_APPEND_PTR_MOVE] = { "append_ptr_move", 4 },
	[OP_PREPEND_PTR] = { "prepend_ptr", 4 },
	[OP_APPEND_LIST] = { "append_list", 4 },
	[OP_CLAIM_APPEND] = { "claim_append", 4 },
	[OP_CLAIM_PREPEND] = { "claim_prepend", 3 },
	[OP_SPLICE] = { "splice", 6 },
	[OP_SUBSTR] = { "substr_of", 5 },
	[OP_COPY_IN] = { "copy_in", 5 },
	[OP_ZERO] = { "zero", 2 },
	[OP_COPY_OUT] = { "copy_out", 4 },
	[OP_REBUILD] = { "rebuild", 1 },
	[OP_REBUILD_ALIGNED] = { "rebuild_aligned", 2 },
	[OP_REBUILD_ASM] = { "rebuild_aligned_size_and_memory", 2 },
	[OP_C_STR] = { "c_str", 1 },
	[OP_CLEAR] = { "clear", 1 },
	[OP_SWAP] = { "swap", 2 },
	[OP_ITER] = { "iter", 6 },
	[OP_CRC] = { "crc32c", 4 },
	[OP_INVALIDATE_CRC] = { "invalidate_crc", 1 },
	[OP_TO_IOVEC] = { "to_iovec", 3 },
	[OP_ENCODE] = { "encode", 3 },
	[OP_ENCODE_BYTES] = { "encode_bytes", 2 },
	[OP_ENCODE_LIST] = { "encode_list", 1 },
	[OP_COMPARE] = { "compare", 2 },
	[OP_GET_PTR] = { "get_ptr", 1 },
	[OP_SRC_NEW] = { "source_new", 2 },
	[OP_SRC_GROW] = { "source_grow", 2 },
	[OP_COMPACT] = { "compact", 1 },
};

/* The model of one list: its bytes. */
struct mlist {
	unsigned char *b;
	size_t len, cap;
};

/* A source slice the test holds, with a shadow of the bytes it covers. */
struct msrc {
	struct bl_ptr p;
	unsigned char *shadow;
	size_t shadow_cap;
	size_t next;		/* end of the last slice taken */
	int kind;
};

/* One written run: @n bytes at address @a hold src[@so, @so + @n). */
struct wrun {
	uintptr_t a;
	size_t n, so;
};

struct model {
	uint64_t seed, rng;
	unsigned long step;
	const char *op;
	struct bl_list l[NLISTS];
	struct mlist m[NLISTS];
	struct msrc src[NSRC];
	/* the last append_ptr that added bytes, to check continuation */
	int last_list;
	struct bl_raw *last_raw;
	size_t last_end;	/* raw offset where it ended */
	unsigned long last_step;
	unsigned char *tmp;
	struct wrun *runs;
	size_t nruns, runs_cap;
	unsigned long claimed_made, claimed_freed;
	unsigned long nops[NOPS];
	unsigned long nerr;	/* calls that had to fail, and did */
	unsigned weight_total;
	struct bl_pool *pool;	/* lists 1 and 3 append into it */
	int64_t pool_raws_max;
	bool trace;		/* BL_MODEL_TRACE set: print every step */
};

static struct model *M;
static unsigned char static_buf[NSTATIC][STATIC_LEN];
static unsigned char static_pristine[NSTATIC][STATIC_LEN];

/*
 * ck_assert_msg() reports every passing check to the runner (a write per
 * check in fork mode); the model checks millions of things, so it reports
 * only failures, each with the seed, the step and the operation.
 */
#define MA(cond, fmt, ...)						\
	do {								\
		if (!(cond))						\
			ck_abort_msg("seed %" PRIu64 " step %lu op %s: "\
				     "'%s' failed: " fmt, M->seed,	\
				     M->step, M->op, #cond,		\
				     ##__VA_ARGS__);			\
	} while (0)

/* ---- randomness ---------------------------------------------------------- */

static uint64_t r64(void)
{
	return tu_rand(&M->rng);
}

static size_t rnd(size_t n)
{
	return n ? (size_t)(r64() % n) : 0;
}

static bool chance(unsigned pct)
{
	return rnd(100) < pct;
}

/* A length in [0, max], biased to small ones. */
static size_t rnd_len(size_t max)
{
	switch (rnd(4)) {
	case 0:
		return rnd((max < 16 ? max : 16) + 1);
	case 1:
		return rnd((max < 512 ? max : 512) + 1);
	default:
		return rnd((max < 5000 ? max : 5000) + 1);
	}
}

/*
 * A range for a list of @len bytes.  With @allow_bad, a few are outside the
 * list (past the end, too long, or overflowing off + len); *bad says so.
 */
static void rnd_range(size_t len, bool allow_bad, size_t *off, size_t *n,
		      bool *bad)
{
	*bad = false;
	if (allow_bad && chance(6)) {
		*bad = true;
		switch (rnd(3)) {
		case 0:
			*off = len + 1 + rnd(8);
			*n = rnd(3);
			break;
		case 1:
			*off = rnd(len + 1);
			*n = len - *off + 1 + rnd(8);
			break;
		default:
			*off = 1 + rnd(len + 1);
			*n = SIZE_MAX - rnd(2);
			break;
		}
		return;
	}
	switch (rnd(10)) {
	case 0:
		*off = 0;
		*n = len;
		break;
	case 1:
		*off = len;
		*n = 0;
		break;
	default:
		*off = rnd(len + 1);
		*n = chance(10) ? len - *off : rnd_len(len - *off);
		break;
	}
}

static size_t rnd_pow2(unsigned max_shift)
{
	return (size_t)1 << rnd(max_shift + 1);
}

/* ---- the model's byte arrays --------------------------------------------- */

static void m_reserve(struct mlist *m, size_t n)
{
	if (n <= m->cap)
		return;
	m->cap = n + n / 2 + 64;
	m->b = realloc(m->b, m->cap);
	ck_assert_ptr_nonnull(m->b);
}

/* Inserts @n bytes of @data (zeros when NULL) at @at. */
static void m_insert(struct mlist *m, size_t at, const void *data, size_t n)
{
	const unsigned char *d = data;
	size_t self = SIZE_MAX;

	/* appending a model to itself: find the bytes again after realloc */
	if (d && m->b && d >= m->b && d < m->b + m->len)
		self = (size_t)(d - m->b);
	m_reserve(m, m->len + n);
	memmove(m->b + at + n, m->b + at, m->len - at);
	if (self != SIZE_MAX) {
		BL_ASSERT(at == m->len && self + n <= m->len);
		memcpy(m->b + at, m->b + self, n);
	} else if (d) {
		memcpy(m->b + at, d, n);
	} else {
		memset(m->b + at, 0, n);
	}
	m->len += n;
}

static void m_append(struct mlist *m, const void *data, size_t n)
{
	m_insert(m, m->len, data, n);
}

static void m_erase(struct mlist *m, size_t at, size_t n)
{
	memmove(m->b + at, m->b + at + n, m->len - at - n);
	m->len -= n;
}

static void put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int k = 0; k < bytes; k++)
		p[k] = (unsigned char)(v >> (8 * k));
}

static uint64_t get_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int k = 0; k < bytes; k++)
		v |= (uint64_t)p[k] << (8 * k);
	return v;
}

/* ---- comparing a list with its model ------------------------------------- */

static void check_list(int i, bool full)
{
	const struct bl_list *l = &M->l[i];
	const struct mlist *m = &M->m[i];
	size_t len = bl_list_length(l), off = 0;
	unsigned nb = bl_list_num_buffers(l), segs = 0;
	struct iovec iov[IOV_BATCH];
	int rc, k;

	MA(len == m->len, "list %d: length %zu, model %zu", i, len, m->len);
	MA((nb == 0) == (len == 0), "list %d: %u buffers for %zu bytes", i,
	   nb, len);
	MA(nb <= len, "list %d: %u buffers for %zu bytes", i, nb, len);
	MA(bl_list_is_empty(l) == (len == 0), "list %d", i);
	rc = bl__list_validate(l);
	MA(rc == 0, "list %d: bl__list_validate() = %d", i, rc);
	if (!full)
		return;
	for (;;) {
		rc = bl_list_to_iovec(l, off, iov, IOV_BATCH);
		MA(rc >= 0 && rc <= IOV_BATCH, "list %d: to_iovec(%zu) = %d",
		   i, off, rc);
		if (!rc)
			break;
		for (k = 0; k < rc; k++) {
			MA(iov[k].iov_len > 0 && iov[k].iov_len <= len - off,
			   "list %d: iovec %u of %zu bytes at %zu", i,
			   segs, iov[k].iov_len, off);
			MA(memcmp(iov[k].iov_base, m->b + off,
				  iov[k].iov_len) == 0,
			   "list %d: bytes differ in segment %u (offset %zu, "
			   "%zu bytes)", i, segs, off, iov[k].iov_len);
			off += iov[k].iov_len;
			segs++;
		}
	}
	MA(off == len, "list %d: iovecs cover %zu of %zu bytes", i, off, len);
	MA(segs == nb, "list %d: %u iovecs from 0 but %u buffers", i, segs,
	   nb);
}

static void check_sources(void)
{
	for (int s = 0; s < NSRC; s++) {
		struct msrc *S = &M->src[s];

		if (S->p.len)
			MA(memcmp(bl_ptr_data(&S->p), S->shadow,
				  S->p.len) == 0,
			   "source %d (kind %d) bytes changed", s, S->kind);
	}
	for (int k = 0; k < NSTATIC; k++)
		MA(memcmp(static_buf[k], static_pristine[k], STATIC_LEN) == 0,
		   "static buffer %d was written", k);
}

static void check_all(void)
{
	struct bl_pool_stats ps;

	for (int i = 0; i < NLISTS; i++)
		check_list(i, true);
	check_sources();
	bl_pool_get_stats(M->pool, &ps);
	MA(ps.raws >= 0 && ps.bytes_used >= 0 && ps.bytes_used <= ps.bytes,
	   "pool %s: %" PRId64 " raws, %" PRId64 " bytes, %" PRId64 " used",
	   ps.name, ps.raws, ps.bytes, ps.bytes_used);
	if (ps.raws > M->pool_raws_max)
		M->pool_raws_max = ps.raws;
}

static bool in_static(uintptr_t a, size_t n)
{
	for (int k = 0; k < NSTATIC; k++) {
		uintptr_t s = (uintptr_t)static_buf[k];

		if (a < s + STATIC_LEN && a + n > s)
			return true;
	}
	return false;
}

/* ---- source slices ------------------------------------------------------- */

static void claim_free(void *data, size_t len, void *opaque)
{
	(void)len;
	(void)opaque;
	M->claimed_freed++;
	free(data);
}

static void src_shadow_set(struct msrc *S, const void *data, size_t n)
{
	if (S->shadow_cap < n + 1) {
		S->shadow_cap = n + n / 2 + 64;
		S->shadow = realloc(S->shadow, S->shadow_cap);
		ck_assert_ptr_nonnull(S->shadow);
	}
	memcpy(S->shadow, data, n);
}

static void src_new(int s)
{
	struct msrc *S = &M->src[s];
	size_t len = chance(3) ? 0 : 1 + rnd(8192), align, woff;
	struct bl_raw *r;
	unsigned char *data;
	int k, rc;

	bl_ptr_release(&S->p);
	MA(S->p.raw == NULL && S->p.off == 0 && S->p.len == 0,
	   "release left {%p, %zu, %zu}", (void *)S->p.raw, S->p.off,
	   S->p.len);
	S->next = 0;
	S->kind = (int)rnd(6);
	tu_fill(M->tmp, len, &M->rng);
	switch (S->kind) {
	case 0:	/* combined */
		r = bl_raw_create(len);
		MA(r != NULL, "bl_raw_create(%zu)", len);
		MA(bl_raw_length(r) == len, "length %zu", bl_raw_length(r));
		MA(bl_raw_alignment(r) >= 64, "alignment %zu",
		   bl_raw_alignment(r));
		MA(bl_raw_nref(r) == 1, "nref %u", bl_raw_nref(r));
		MA(!bl_raw_is_static(r), "combined raw is static");
		if (len)
			memcpy(bl_raw_data(r), M->tmp, len);
		bl_ptr_from_raw(&S->p, r);
		break;
	case 1:	/* aligned */
		align = rnd_pow2(13);
		r = bl_raw_create_aligned(len, align);
		MA(r != NULL, "bl_raw_create_aligned(%zu, %zu)", len, align);
		MA((uintptr_t)bl_raw_data(r) % align == 0,
		   "data %p not aligned to %zu", (void *)bl_raw_data(r),
		   align);
		MA(bl_raw_alignment(r) >= (align < 4096 ? align : 4096),
		   "alignment %zu < %zu", bl_raw_alignment(r), align);
		if (len)
			memcpy(bl_raw_data(r), M->tmp, len);
		bl_ptr_from_raw(&S->p, r);
		break;
	case 2:	/* static window */
		k = (int)rnd(NSTATIC);
		woff = rnd(STATIC_LEN + 1);
		len = rnd((STATIC_LEN - woff < 8192 ?
			   STATIC_LEN - woff : 8192) + 1);
		r = bl_raw_create_static(static_buf[k] + woff, len);
		MA(r != NULL, "bl_raw_create_static(%zu)", len);
		MA(bl_raw_is_static(r), "static raw not static");
		MA(bl_raw_data(r) == (char *)static_buf[k] + woff,
		   "static raw data moved");
		memcpy(M->tmp, static_pristine[k] + woff, len);
		bl_ptr_from_raw(&S->p, r);
		break;
	case 3:	/* claimed */
		data = malloc(len ? len : 1);
		ck_assert_ptr_nonnull(data);
		memcpy(data, M->tmp, len);
		r = bl_raw_claim(data, len, claim_free, NULL);
		MA(r != NULL, "bl_raw_claim(%zu)", len);
		MA(bl_raw_data(r) == (char *)data, "claimed data moved");
		M->claimed_made++;
		bl_ptr_from_raw(&S->p, r);
		break;
	case 4:	/* reserved, grows with bl_ptr_append */
		rc = bl_ptr_reserve(&S->p, len);
		MA(rc == 0, "bl_ptr_reserve(%zu) = %d", len, rc);
		MA(S->p.len == 0 && bl_ptr_unused_tail(&S->p) == len,
		   "reserve: len %zu tail %zu", S->p.len,
		   bl_ptr_unused_tail(&S->p));
		len = rnd(len + 1);
		rc = bl_ptr_append(&S->p, M->tmp, len);
		MA(rc == 0, "bl_ptr_append(%zu) = %d", len, rc);
		break;
	default:	/* empty raw, frontier 0 */
		r = bl_raw_create_empty(len);
		MA(r != NULL, "bl_raw_create_empty(%zu)", len);
		bl_ptr_from_raw(&S->p, r);
		MA(S->p.len == 0 && bl_ptr_unused_tail(&S->p) == len,
		   "empty raw: len %zu tail %zu", S->p.len,
		   bl_ptr_unused_tail(&S->p));
		len = rnd(len + 1);
		rc = bl_ptr_append(&S->p, M->tmp, len);
		MA(rc == 0, "bl_ptr_append(%zu) = %d", len, rc);
		break;
	}
	MA(S->p.raw != NULL && S->p.len == len, "source covers %zu of %zu",
	   S->p.len, len);
	MA(bl_raw_nref(S->p.raw) == 1, "new source nref %u",
	   bl_raw_nref(S->p.raw));
	if (len)
		MA(memcmp(bl_ptr_data(&S->p), M->tmp, len) == 0,
		   "source kind %d holds other bytes", S->kind);
	src_shadow_set(S, M->tmp, len);
}

/* Appends to a source that can grow; one that cannot must refuse. */
static void src_grow(int s)
{
	struct msrc *S = &M->src[s];
	size_t tail = bl_ptr_unused_tail(&S->p), n;
	struct bl_ptr before = S->p;
	int rc;

	if (!tail) {
		rc = bl_ptr_append(&S->p, "x", 1);
		MA(rc == -ENOSPC || (rc == -EROFS && S->kind == 2),
		   "append without room = %d", rc);
		MA(S->p.raw == before.raw && S->p.off == before.off &&
		   S->p.len == before.len, "failed append changed the slice");
		M->nerr++;
		return;
	}
	n = rnd_len(tail);
	tu_fill(M->tmp, n, &M->rng);
	rc = bl_ptr_append(&S->p, M->tmp, n);
	MA(rc == 0, "bl_ptr_append(%zu) with %zu room = %d", n, tail, rc);
	MA(S->p.len == before.len + n, "slice grew to %zu", S->p.len);
	MA(bl_ptr_unused_tail(&S->p) == tail - n, "room %zu after %zu of %zu",
	   bl_ptr_unused_tail(&S->p), n, tail);
	if (S->shadow_cap < S->p.len + 1) {
		S->shadow_cap = S->p.len + S->p.len / 2 + 64;
		S->shadow = realloc(S->shadow, S->shadow_cap);
		ck_assert_ptr_nonnull(S->shadow);
	}
	memcpy(S->shadow + before.len, M->tmp, n);
}

/* ---- in-place writes: propagate to every list sharing the bytes ---------- */

static void runs_add(uintptr_t a, size_t n, size_t so)
{
	if (M->nruns == M->runs_cap) {
		M->runs_cap = M->runs_cap ? 2 * M->runs_cap : 64;
		M->runs = realloc(M->runs, M->runs_cap * sizeof(*M->runs));
		ck_assert_ptr_nonnull(M->runs);
	}
	M->runs[M->nruns++] = (struct wrun){ a, n, so };
}

/*
 * Model bytes [pos, pos + n) live at address @sa: apply every written run
 * that overlaps them, in the order they were written (a later position of
 * the written range wins where the range covers one address twice).
 */
static void apply_runs(unsigned char *mb, size_t pos, uintptr_t sa, size_t n,
		       const unsigned char *src)
{
	for (size_t r = 0; r < M->nruns; r++) {
		const struct wrun *w = &M->runs[r];
		uintptr_t lo = sa > w->a ? sa : w->a;
		uintptr_t hi = sa + n < w->a + w->n ? sa + n : w->a + w->n;

		if (lo >= hi)
			continue;
		if (src)
			memcpy(mb + pos + (lo - sa), src + w->so + (lo - w->a),
			       hi - lo);
		else
			memset(mb + pos + (lo - sa), 0, hi - lo);
	}
}

static void propagate_write(int i, size_t off, size_t n,
			    const unsigned char *src)
{
	struct iovec iov[IOV_BATCH];
	size_t pos = off;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int rc;

	M->nruns = 0;
	while (pos < off + n) {
		rc = bl_list_to_iovec(&M->l[i], pos, iov, IOV_BATCH);
		MA(rc > 0, "to_iovec(%zu) inside the written range = %d",
		   pos, rc);
		for (int k = 0; k < rc && pos < off + n; k++) {
			size_t take = iov[k].iov_len;
			uintptr_t a = (uintptr_t)iov[k].iov_base;

			if (take > off + n - pos)
				take = off + n - pos;
			MA(!in_static(a, take),
			   "bytes [%zu, %zu) written into static memory",
			   pos, pos + take);
			runs_add(a, take, pos - off);
			if (a < lo)
				lo = a;
			if (a + take > hi)
				hi = a + take;
			pos += take;
		}
	}
	if (!M->nruns)
		return;
	for (int j = 0; j < NLISTS; j++) {
		size_t p = 0;

		for (;;) {
			rc = bl_list_to_iovec(&M->l[j], p, iov, IOV_BATCH);
			MA(rc >= 0, "to_iovec(list %d, %zu) = %d", j, p, rc);
			if (!rc)
				break;
			for (int k = 0; k < rc; k++) {
				uintptr_t a = (uintptr_t)iov[k].iov_base;

				if (a < hi && a + iov[k].iov_len > lo)
					apply_runs(M->m[j].b, p, a,
						   iov[k].iov_len, src);
				p += iov[k].iov_len;
			}
		}
	}
	for (int s = 0; s < NSRC; s++) {
		struct msrc *S = &M->src[s];

		if (S->p.len)
			apply_runs(S->shadow, 0, (uintptr_t)bl_ptr_data(&S->p),
				   S->p.len, src);
	}
}

static void check_crc_all(void)
{
	for (int j = 0; j < NLISTS; j++) {
		uint32_t seed = (uint32_t)r64();
		uint32_t want = bl_crc32c(seed, M->m[j].b, M->m[j].len);
		uint32_t got = bl_list_crc32c(&M->l[j], seed);

		MA(got == want, "list %d (%zu bytes) crc32c(seed %08x) = %08x, "
		   "model %08x", j, M->m[j].len, seed, got, want);
	}
}

/* ---- operations ---------------------------------------------------------- */

static int other_list(int i)
{
	return (i + 1 + (int)rnd(NLISTS - 1)) % NLISTS;
}

static void op_append(int i, bool zero)
{
	size_t n = rnd_len(5000), nb0 = bl_list_num_buffers(&M->l[i]);
	uint64_t c0 = copied_now();
	int rc;

	if (zero) {
		rc = bl_list_append_zero(&M->l[i], n);
	} else {
		tu_fill(M->tmp, n, &M->rng);
		rc = bl_list_append(&M->l[i], M->tmp, n);
	}
	MA(rc == 0, "%zu bytes: %d", n, rc);
	if (!zero)
		MA(copied_now() - c0 == n, "copied %" PRIu64 " for %zu bytes",
		   copied_now() - c0, n);
	if (nb0 == 0 && n > 0 && n <= 64)
		MA(bl_list_num_buffers(&M->l[i]) == 1,
		   "small append to an empty list made %u segments",
		   bl_list_num_buffers(&M->l[i]));
	m_append(&M->m[i], zero ? NULL : M->tmp, n);
}

static void op_append_ptr(int i, int how)
{
	int s = (int)rnd(NSRC);
	struct msrc *S = &M->src[s];
	struct bl_list *l = &M->l[i];
	struct bl_ptr q = BL_PTR_INIT;
	struct bl_raw *raw = S->p.raw;
	size_t plen = S->p.len, off, n;
	unsigned nb0, nb1, ref0, ref1;
	bool cont = false, extended;
	uint64_t c0;
	int rc;

	if (how == 0 && M->last_list == i && M->last_raw == raw &&
	    M->last_step + 1 == M->step && M->last_end == S->p.off + S->next &&
	    S->next < plen && chance(70)) {
		off = S->next;
		cont = true;
	} else if (S->next <= plen && chance(30)) {
		off = S->next;
	} else {
		off = rnd(plen + 1);
	}
	n = rnd_len(plen - off);
	rc = bl_ptr_slice(&q, &S->p, off, n);
	MA(rc == 0, "slice [%zu, +%zu) of %zu: %d", off, n, plen, rc);
	MA(q.raw == raw && q.off == S->p.off + off && q.len == n,
	   "slice {%zu, %zu}", q.off, q.len);
	nb0 = bl_list_num_buffers(l);
	ref0 = bl_raw_nref(raw);
	c0 = copied_now();
	if (how == 0)
		rc = bl_list_append_ptr(l, &q);
	else if (how == 1)
		rc = bl_list_append_ptr_move(l, &q);
	else
		rc = bl_list_prepend_ptr(l, &q);
	MA(rc == 0, "%zu bytes: %d", n, rc);
	MA(copied_now() == c0, "zero-copy call copied %" PRIu64 " bytes",
	   copied_now() - c0);
	if (how == 1)
		MA(q.raw == NULL && q.off == 0 && q.len == 0,
		   "moved slice left {%p, %zu, %zu}", (void *)q.raw, q.off,
		   q.len);
	else
		bl_ptr_release(&q);
	nb1 = bl_list_num_buffers(l);
	ref1 = bl_raw_nref(raw);
	if (n == 0) {
		MA(nb1 == nb0, "empty slice: %u -> %u segments", nb0, nb1);
		MA(ref1 == ref0 - 1, "empty slice: nref %u -> %u", ref0, ref1);
	} else {
		MA(nb1 == nb0 || nb1 == nb0 + 1, "%u -> %u segments", nb0,
		   nb1);
		extended = nb1 == nb0;
		MA(ref1 == (extended ? ref0 - 1 : ref0),
		   "nref %u -> %u with %u -> %u segments", ref0, ref1, nb0,
		   nb1);
		if (cont)
			MA(extended, "slice continuing the last segment made "
			   "a new one (%u -> %u)", nb0, nb1);
	}
	MA(n == 0 || memcmp(bl_ptr_data(&S->p) + off, S->shadow + off, n) == 0,
	   "source %d bytes changed", s);
	if (how == 2)
		m_insert(&M->m[i], 0, S->shadow + off, n);
	else
		m_append(&M->m[i], S->shadow + off, n);
	S->next = off + n;
	if (n && how != 2) {
		M->last_list = i;
		M->last_raw = raw;
		M->last_end = S->p.off + off + n;
		M->last_step = M->step;
	}
}

static void op_append_list(int i, int j)
{
	size_t lj = M->m[j].len;
	unsigned nbi = bl_list_num_buffers(&M->l[i]);
	unsigned nbj = bl_list_num_buffers(&M->l[j]), nb;
	uint64_t c0 = copied_now();
	int rc = bl_list_append_list(&M->l[i], &M->l[j]);

	MA(copied_now() == c0, "copied %" PRIu64, copied_now() - c0);
	if (i == j && rc == -EINVAL) {
		M->nerr++;
		return;
	}
	MA(rc == 0, "append_list(%d, %d) = %d", i, j, rc);
	nb = bl_list_num_buffers(&M->l[i]);
	MA(nb + 1 >= nbi + nbj && nb <= nbi + nbj, "%u + %u segments -> %u",
	   nbi, nbj, nb);
	m_append(&M->m[i], M->m[j].b, lj);
}

static void op_claim(int i, int j, bool prepend)
{
	struct bl_list *l = &M->l[i], *src = &M->l[j];
	unsigned nbi = bl_list_num_buffers(l), nbj = bl_list_num_buffers(src);
	unsigned nb, ref0 = 0;
	struct bl_ptr probe = BL_PTR_INIT;
	uint64_t c0 = copied_now();
	int rc;

	/* a segment that cannot merge with @l's: its count must not move */
	if (i != j && nbj) {
		rc = bl_list_get_ptr(src, prepend ? 0 : nbj - 1, &probe);
		MA(rc == 0, "get_ptr = %d", rc);
		ref0 = bl_raw_nref(probe.raw);
	}
	rc = prepend ? bl_list_claim_prepend(l, src) :
		       bl_list_claim_append(l, src);
	MA(copied_now() == c0, "copied %" PRIu64, copied_now() - c0);
	if (i == j) {
		MA(rc == -EINVAL, "claim of a list into itself = %d", rc);
		M->nerr++;
		return;
	}
	MA(rc == 0, "claim(%d, %d) = %d", i, j, rc);
	if (probe.raw) {
		MA(bl_raw_nref(probe.raw) == ref0,
		   "claim changed nref %u -> %u", ref0,
		   bl_raw_nref(probe.raw));
		bl_ptr_release(&probe);
	}
	nb = bl_list_num_buffers(l);
	MA(nb + 1 >= nbi + nbj && nb <= nbi + nbj, "%u + %u segments -> %u",
	   nbi, nbj, nb);
	MA(bl_list_length(src) == 0 && bl_list_num_buffers(src) == 0,
	   "claimed list keeps %zu bytes", bl_list_length(src));
	m_insert(&M->m[i], prepend ? 0 : M->m[i].len, M->m[j].b, M->m[j].len);
	M->m[j].len = 0;
}

static void op_splice(int i)
{
	struct bl_list *l = &M->l[i], *cb = NULL;
	size_t len = M->m[i].len, off, n, cbl = 0;
	int j = -1, rc;
	uint64_t c0 = copied_now();
	bool bad;

	rnd_range(len, true, &off, &n, &bad);
	if (chance(3)) {
		j = i;
		cb = l;
	} else if (chance(55)) {
		j = other_list(i);
		cb = &M->l[j];
		cbl = M->m[j].len;
	}
	rc = bl_list_splice(l, off, n, cb);
	MA(copied_now() == c0, "copied %" PRIu64, copied_now() - c0);
	if (j == i) {
		MA(rc == -EINVAL || (bad && rc == -ERANGE),
		   "claim_by == list: %d", rc);
		M->nerr++;
		return;
	}
	if (bad) {
		MA(rc == -ERANGE, "[%zu, +%zu) of %zu: %d", off, n, len, rc);
		M->nerr++;
		if (cb)
			MA(bl_list_length(cb) == cbl, "claim_by changed");
		return;
	}
	MA(rc == 0, "[%zu, +%zu) of %zu: %d", off, n, len, rc);
	if (cb)
		m_append(&M->m[j], M->m[i].b + off, n);
	m_erase(&M->m[i], off, n);
}

static void op_substr(int i, int j)
{
	size_t len = M->m[j].len, off, n;
	uint64_t c0 = copied_now();
	bool bad;
	int rc;

	rnd_range(len, true, &off, &n, &bad);
	rc = bl_list_substr_of(&M->l[i], &M->l[j], off, n);
	MA(copied_now() == c0, "copied %" PRIu64, copied_now() - c0);
	if (bad) {
		MA(rc == -ERANGE, "[%zu, +%zu) of %zu: %d", off, n, len, rc);
		M->nerr++;
		return;
	}
	MA(rc == 0, "substr_of(%d, %d, %zu, %zu) of %zu = %d", i, j, off, n,
	   len, rc);
	if (i == j) {
		memmove(M->m[i].b, M->m[i].b + off, n);
	} else {
		m_reserve(&M->m[i], n);
		memcpy(M->m[i].b, M->m[j].b + off, n);
	}
	M->m[i].len = n;
}

static void op_copy_in(int i, bool zero)
{
	size_t len = M->m[i].len, off, n;
	bool bad, crcs = chance(30);
	uint64_t c0;
	int rc;

	rnd_range(len, true, &off, &n, &bad);
	if (crcs)	/* fill the crc caches the write must invalidate */
		check_crc_all();
	if (!bad)
		tu_fill(M->tmp, n, &M->rng);
	c0 = copied_now();
	rc = zero ? bl_list_zero(&M->l[i], off, n) :
		    bl_list_copy_in(&M->l[i], off, n, M->tmp);
	if (bad) {
		MA(rc == -ERANGE, "[%zu, +%zu) of %zu: %d", off, n, len, rc);
		M->nerr++;
		return;
	}
	MA(rc == 0, "[%zu, +%zu) of %zu: %d", off, n, len, rc);
	if (!zero)
		MA(copied_now() - c0 >= n, "copied %" PRIu64 " of %zu",
		   copied_now() - c0, n);
	if (zero)
		memset(M->m[i].b + off, 0, n);
	else
		memcpy(M->m[i].b + off, M->tmp, n);
	propagate_write(i, off, n, zero ? NULL : M->tmp);
	check_list(i, true);
	if (crcs)
		check_crc_all();
}

static void op_copy_out(int i)
{
	size_t len = M->m[i].len, off, n;
	uint64_t c0 = copied_now();
	bool bad;
	int rc;

	rnd_range(len, true, &off, &n, &bad);
	rc = bl_list_copy_out(&M->l[i], off, n, M->tmp);
	if (bad) {
		MA(rc == -ERANGE, "[%zu, +%zu) of %zu: %d", off, n, len, rc);
		M->nerr++;
		return;
	}
	MA(rc == 0, "[%zu, +%zu) of %zu: %d", off, n, len, rc);
	MA(memcmp(M->tmp, M->m[i].b + off, n) == 0, "[%zu, +%zu) differ",
	   off, n);
	MA(copied_now() - c0 == n, "copied %" PRIu64 " for %zu",
	   copied_now() - c0, n);
}

/*
 * The address runs of a list: segments, merged where one continues the
 * previous in memory.  Equal runs before and after a call mean no byte
 * moved.
 */
static size_t addr_runs(int i, struct iovec *out, size_t max)
{
	struct iovec iov[IOV_BATCH];
	size_t nout = 0, off = 0;
	int rc;

	for (;;) {
		rc = bl_list_to_iovec(&M->l[i], off, iov, IOV_BATCH);
		MA(rc >= 0, "to_iovec = %d", rc);
		if (!rc)
			break;
		for (int k = 0; k < rc; k++) {
			off += iov[k].iov_len;
			if (nout && (char *)out[nout - 1].iov_base +
				    out[nout - 1].iov_len == iov[k].iov_base) {
				out[nout - 1].iov_len += iov[k].iov_len;
				continue;
			}
			if (nout == max)
				return SIZE_MAX;	/* too many */
			out[nout++] = iov[k];
		}
	}
	return nout;
}

#define MAX_RUNS 4096
static struct iovec runs_before[MAX_RUNS], runs_after[MAX_RUNS];

static bool same_runs(size_t na, size_t nb)
{
	return na != SIZE_MAX && na == nb &&
	       !memcmp(runs_before, runs_after, na * sizeof(struct iovec));
}

/* Every segment starts on @mem, every one but the last is a multiple of
 * @size long, and there are at most @max (0: any number). */
static bool segs_aligned(int i, size_t size, size_t mem, unsigned max,
			 bool report)
{
	struct iovec iov[IOV_BATCH];
	size_t off = 0, len = bl_list_length(&M->l[i]);
	unsigned seg = 0;
	int rc;

	for (;;) {
		rc = bl_list_to_iovec(&M->l[i], off, iov, IOV_BATCH);
		MA(rc >= 0, "to_iovec = %d", rc);
		if (!rc)
			break;
		for (int k = 0; k < rc; k++, seg++) {
			bool last = off + iov[k].iov_len == len;

			if ((uintptr_t)iov[k].iov_base % mem ||
			    (!last && iov[k].iov_len % size)) {
				MA(!report, "segment %u (%p, %zu bytes at %zu)"
				   " breaks size %zu / memory %zu alignment",
				   seg, iov[k].iov_base, iov[k].iov_len, off,
				   size, mem);
				return false;
			}
			off += iov[k].iov_len;
		}
	}
	if (max && seg > max) {
		MA(!report, "%u segments, at most %u wanted", seg, max);
		return false;
	}
	return true;
}

static void op_rebuild(int i, int kind)
{
	struct bl_list *l = &M->l[i];
	size_t na, nb, size = 1, mem = 1, len = M->m[i].len;
	unsigned max = 0, nb0 = bl_list_num_buffers(l);
	bool already, bad_align = false;
	uint64_t c0;
	int rc;

	if (kind == 1) {
		size = mem = rnd_pow2(12);
		if (chance(3)) {
			size = mem = chance(50) ? 0 : 3 * rnd_pow2(6);
			bad_align = true;
		}
	} else if (kind == 2) {
		size = rnd_pow2(12);
		mem = rnd_pow2(12);
		max = (unsigned)rnd(5);
		if (chance(3)) {
			size = 3 * rnd_pow2(6);
			bad_align = true;
		}
	}
	na = addr_runs(i, runs_before, MAX_RUNS);
	already = !bad_align && kind && segs_aligned(i, size, mem, max, false);
	c0 = copied_now();
	if (kind == 0)
		rc = bl_list_rebuild(l);
	else if (kind == 1)
		rc = bl_list_rebuild_aligned(l, size);
	else
		rc = bl_list_rebuild_aligned_size_and_memory(l, size, mem,
							     max);
	nb = addr_runs(i, runs_after, MAX_RUNS);
	if (bad_align) {
		MA(rc == -EINVAL, "alignment %zu/%zu: %d", size, mem, rc);
		MA(same_runs(na, nb) || na == SIZE_MAX,
		   "failed call moved bytes");
		M->nerr++;
		return;
	}
	if (kind == 0) {
		MA(rc == 0, "rebuild = %d", rc);
		if (nb0 > 1) {
			MA(bl_list_num_buffers(l) == 1, "%u segments",
			   bl_list_num_buffers(l));
			MA((uintptr_t)runs_after[0].iov_base % 64 == 0,
			   "rebuilt data at %p", runs_after[0].iov_base);
			MA(copied_now() - c0 == len, "copied %" PRIu64
			   " of %zu", copied_now() - c0, len);
		} else {
			MA(same_runs(na, nb) && copied_now() == c0,
			   "rebuild of %u segments moved bytes", nb0);
		}
		return;
	}
	MA(rc == 0 || rc == 1, "align %zu/%zu max %u: %d", size, mem, max,
	   rc);
	segs_aligned(i, size, mem, max, true);
	if (rc == 0)
		MA(same_runs(na, nb) && copied_now() == c0,
		   "returned 0 but moved or copied bytes (%" PRIu64 ")",
		   copied_now() - c0);
	else
		MA(copied_now() > c0, "returned 1 but copied nothing");
	if (already)
		MA(rc == 0, "list already aligned (%zu/%zu, max %u) but the "
		   "call copied", size, mem, max);
}

static void op_c_str(int i)
{
	struct bl_list *l = &M->l[i];
	unsigned nb0 = bl_list_num_buffers(l);
	size_t len = M->m[i].len;
	struct iovec first;
	uint64_t c0 = copied_now();
	bool ro = false;
	char *p;

	if (nb0 == 1) {
		struct bl_ptr s;

		MA(bl_list_to_iovec(l, 0, &first, 1) == 1, "to_iovec");
		MA(bl_list_get_ptr(l, 0, &s) == 0, "get_ptr");
		ro = bl_raw_is_static(s.raw);
		bl_ptr_release(&s);
	}
	p = bl_list_c_str(l);
	if (!len) {
		MA(p != NULL && !*p, "c_str of an empty list is not \"\"");
		return;
	}
	MA(p != NULL, "c_str of %zu bytes", len);
	MA(memcmp(p, M->m[i].b, len) == 0, "c_str bytes differ");
	MA(bl_list_num_buffers(l) == 1, "%u segments after c_str",
	   bl_list_num_buffers(l));
	/* one segment is handed out as it is, unless read-only (static) */
	if (nb0 == 1 && !ro)
		MA(p == first.iov_base && copied_now() == c0,
		   "c_str of one segment copied");
	if (nb0 == 1 && ro)
		MA(p != first.iov_base && copied_now() == c0 + len,
		   "c_str of one static segment did not copy");
}

static void op_swap(int i, int j)
{
	struct mlist t = M->m[i];

	bl_list_swap(&M->l[i], &M->l[j]);
	M->m[i] = M->m[j];
	M->m[j] = t;
}

/* Expected result of decoding a varint at @p with @avail bytes. */
static int model_varint(const unsigned char *p, size_t avail, uint64_t *v,
			size_t *used)
{
	*v = 0;
	for (size_t k = 0; k < 10; k++) {
		if (k == avail)
			return -ERANGE;
		if (k == 9 && (p[k] & 0x7f) > 1)
			return -EBADMSG;
		if (k == 9 && (p[k] & 0x80))
			return -EBADMSG;
		*v |= (uint64_t)(p[k] & 0x7f) << (7 * k);
		if (!(p[k] & 0x80)) {
			*used = k + 1;
			return 0;
		}
	}
	return -EBADMSG;	/* not reached */
}

static void op_iter(int i)
{
	const struct mlist *m = &M->m[i];
	size_t len = m->len, pos, n, want, got;
	struct bl_iter it, it2;
	unsigned nsteps = 1 + (unsigned)rnd(8);
	const char *data;
	uint64_t v, mv, c0;
	int rc, mrc, j;
	bool bad;

	rnd_range(len, true, &pos, &n, &bad);
	if (pos > len) {
		rc = bl_iter_init(&it, &M->l[i], pos);
		MA(rc == -ERANGE, "init at %zu of %zu: %d", pos, len, rc);
		M->nerr++;
		return;
	}
	rc = bl_iter_init(&it, &M->l[i], pos);
	MA(rc == 0, "init at %zu of %zu: %d", pos, len, rc);
	for (unsigned s = 0; s < nsteps; s++) {
		MA(bl_iter_offset(&it) == pos, "offset %zu, model %zu",
		   bl_iter_offset(&it), pos);
		MA(bl_iter_remaining(&it) == len - pos,
		   "remaining %zu, model %zu", bl_iter_remaining(&it),
		   len - pos);
		n = chance(8) ? len - pos + 1 + rnd(4) : rnd_len(len - pos);
		switch (rnd(10)) {
		case 0:
			rc = bl_iter_advance(&it, n);
			if (n > len - pos) {
				MA(rc == -ERANGE, "advance %zu at %zu of %zu: "
				   "%d", n, pos, len, rc);
				break;
			}
			MA(rc == 0, "advance %zu at %zu: %d", n, pos, rc);
			pos += n;
			break;
		case 1:
			n = rnd(len + 2);
			rc = bl_iter_seek(&it, n);
			if (n > len) {
				MA(rc == -ERANGE, "seek %zu of %zu: %d", n,
				   len, rc);
				break;
			}
			MA(rc == 0, "seek %zu of %zu: %d", n, len, rc);
			pos = n;
			break;
		case 2:
			rc = bl_iter_copy(&it, n, M->tmp);
			if (n > len - pos) {
				MA(rc == -ERANGE, "copy %zu at %zu of %zu: %d",
				   n, pos, len, rc);
				break;
			}
			MA(rc == 0, "copy %zu at %zu: %d", n, pos, rc);
			MA(memcmp(M->tmp, m->b + pos, n) == 0,
			   "copy %zu at %zu: bytes differ", n, pos);
			pos += n;
			break;
		case 3:
			j = other_list(i);
			c0 = copied_now();
			rc = bl_iter_copy_list(&it, n, &M->l[j]);
			MA(copied_now() == c0, "copy_list copied");
			if (n > len - pos) {
				MA(rc == -ERANGE, "copy_list %zu at %zu of "
				   "%zu: %d", n, pos, len, rc);
				break;
			}
			MA(rc == 0, "copy_list %zu at %zu: %d", n, pos, rc);
			m_append(&M->m[j], m->b + pos, n);
			check_list(j, M->m[j].len <= SMALL_LIST);
			pos += n;
			break;
		case 4: {
			int w = 1 << rnd(4);
			uint8_t u8;
			uint16_t u16;
			uint32_t u32;
			uint64_t u64;

			if (w == 1) {
				rc = bl_decode_u8(&it, &u8);
				v = u8;
			} else if (w == 2) {
				rc = bl_decode_u16(&it, &u16);
				v = u16;
			} else if (w == 4) {
				rc = bl_decode_u32(&it, &u32);
				v = u32;
			} else {
				rc = bl_decode_u64(&it, &u64);
				v = u64;
			}
			if ((size_t)w > len - pos) {
				MA(rc == -ERANGE, "u%d at %zu of %zu: %d",
				   8 * w, pos, len, rc);
				break;
			}
			MA(rc == 0, "u%d at %zu: %d", 8 * w, pos, rc);
			mv = get_le(m->b + pos, w);
			MA(v == mv, "u%d at %zu: %" PRIx64 ", model %" PRIx64,
			   8 * w, pos, v, mv);
			pos += (size_t)w;
			break;
		}
		case 5:
			mrc = model_varint(m->b + pos, len - pos, &mv, &n);
			rc = bl_decode_varint(&it, &v);
			MA(rc == mrc, "varint at %zu of %zu: %d, model %d",
			   pos, len, rc, mrc);
			if (!rc) {
				MA(v == mv, "varint %" PRIx64 ", model %"
				   PRIx64, v, mv);
				pos += n;
			}
			break;
		case 6:
			want = 1 + rnd_len(5000);
			data = NULL;
			got = bl_iter_get_ptr_and_advance(&it, want, &data);
			MA(got <= want && got <= len - pos,
			   "got %zu of %zu at %zu of %zu", got, want, pos,
			   len);
			MA((got == 0) == (pos == len), "got %zu at %zu of %zu",
			   got, pos, len);
			MA(got == 0 || memcmp(data, m->b + pos, got) == 0,
			   "get_ptr %zu at %zu: bytes differ", got, pos);
			pos += got;
			break;
		case 7:
			it2 = it;
			n = rnd(len - pos + 1);
			rc = bl_iter_advance(&it2, n);
			MA(rc == 0, "copy advance %zu: %d", n, rc);
			MA(bl_iter_offset(&it) == pos &&
			   bl_iter_offset(&it2) == pos + n,
			   "copies not independent (%zu, %zu)",
			   bl_iter_offset(&it), bl_iter_offset(&it2));
			want = rnd(len - pos - n + 1);
			rc = bl_iter_copy(&it2, want, M->tmp);
			MA(rc == 0 && !memcmp(M->tmp, m->b + pos + n, want),
			   "copy through the copied cursor: %d", rc);
			break;
		default: {
			uint32_t blen = 0;

			j = other_list(i);
			if (len - pos >= 4)
				blen = (uint32_t)get_le(m->b + pos, 4);
			c0 = copied_now();
			n = M->m[j].len;
			rc = bl_decode_bytes(&it, &M->l[j]);
			/* the u32 length may be copied, the blob not */
			MA(copied_now() - c0 <= 4, "decode_bytes copied %"
			   PRIu64 " bytes", copied_now() - c0);
			if (len - pos < 4 || blen > len - pos - 4) {
				MA(rc == -ERANGE, "blob of %u at %zu of %zu: "
				   "%d", blen, pos, len, rc);
				MA(bl_list_length(&M->l[j]) == n,
				   "failed decode_bytes changed its output");
				break;
			}
			MA(rc == 0, "blob of %u at %zu: %d", blen, pos, rc);
			m_append(&M->m[j], m->b + pos + 4, blen);
			check_list(j, M->m[j].len <= SMALL_LIST);
			pos += 4 + (size_t)blen;
			break;
		}
		}
	}
	MA(bl_iter_offset(&it) == pos, "offset %zu, model %zu",
	   bl_iter_offset(&it), pos);
}

static void op_crc(int i)
{
	uint32_t seed = chance(30) ? 0 : (uint32_t)r64();
	uint32_t want = bl_crc32c(seed, M->m[i].b, M->m[i].len);
	uint32_t got = bl_list_crc32c(&M->l[i], seed);

	MA(got == want, "list %d crc32c(%08x) = %08x, model %08x", i, seed,
	   got, want);
	/* again, from the caches, with another seed */
	seed ^= 0x5a5a5a5au;
	want = bl_crc32c(seed, M->m[i].b, M->m[i].len);
	got = bl_list_crc32c(&M->l[i], seed);
	MA(got == want, "list %d cached crc32c(%08x) = %08x, model %08x", i,
	   seed, got, want);
}

static void op_to_iovec(int i)
{
	struct iovec iov[8];
	size_t len = M->m[i].len, off, n, pos;
	int cnt = 1 + (int)rnd(8), rc;
	bool bad;

	rnd_range(len, true, &off, &n, &bad);
	if (off > len) {
		rc = bl_list_to_iovec(&M->l[i], off, iov, cnt);
		MA(rc == -ERANGE, "off %zu of %zu: %d", off, len, rc);
		M->nerr++;
		return;
	}
	if (chance(3)) {
		rc = bl_list_to_iovec(&M->l[i], off, iov, -1);
		MA(rc == -EINVAL, "iovcnt -1: %d", rc);
		M->nerr++;
	}
	for (pos = off;;) {
		rc = bl_list_to_iovec(&M->l[i], pos, iov, cnt);
		MA(rc >= 0 && rc <= cnt, "to_iovec(%zu, %d) = %d", pos, cnt,
		   rc);
		MA((rc == 0) == (pos == len), "%d entries at %zu of %zu", rc,
		   pos, len);
		if (!rc)
			break;
		for (int k = 0; k < rc; k++) {
			MA(iov[k].iov_len > 0 && iov[k].iov_len <= len - pos,
			   "entry of %zu at %zu of %zu", iov[k].iov_len, pos,
			   len);
			MA(!memcmp(iov[k].iov_base, M->m[i].b + pos,
				   iov[k].iov_len), "bytes at %zu differ", pos);
			pos += iov[k].iov_len;
		}
	}
}

static void op_encode(int i)
{
	unsigned char b[10];
	uint64_t v = r64() >> rnd(64);
	int w = 0, rc;

	switch (rnd(5)) {
	case 0:
		rc = bl_encode_u8(&M->l[i], (uint8_t)v);
		w = 1;
		break;
	case 1:
		rc = bl_encode_u16(&M->l[i], (uint16_t)v);
		w = 2;
		break;
	case 2:
		rc = bl_encode_u32(&M->l[i], (uint32_t)v);
		w = 4;
		break;
	case 3:
		rc = bl_encode_u64(&M->l[i], v);
		w = 8;
		break;
	default:
		rc = bl_encode_varint(&M->l[i], v);
		MA(rc == 0, "encode varint %" PRIx64 ": %d", v, rc);
		do {
			b[w++] = (unsigned char)((v & 0x7f) |
						 (v > 0x7f ? 0x80 : 0));
			v >>= 7;
		} while (v);
		m_append(&M->m[i], b, (size_t)w);
		return;
	}
	MA(rc == 0, "encode u%d: %d", 8 * w, rc);
	put_le(b, v, w);
	m_append(&M->m[i], b, (size_t)w);
}

/* A blob, and often decoding it right back into another list. */
static void op_encode_bytes(int i)
{
	size_t n = rnd_len(5000), at = M->m[i].len;
	unsigned char b[4];
	struct bl_iter it;
	uint64_t c0;
	int j, rc;

	tu_fill(M->tmp, n, &M->rng);
	rc = bl_encode_bytes(&M->l[i], M->tmp, n);
	MA(rc == 0, "encode_bytes(%zu): %d", n, rc);
	put_le(b, n, 4);
	m_append(&M->m[i], b, 4);
	m_append(&M->m[i], M->tmp, n);
	if (chance(40))
		return;
	j = other_list(i);
	rc = bl_iter_init(&it, &M->l[i], at);
	MA(rc == 0, "iter_init(%zu): %d", at, rc);
	c0 = copied_now();
	rc = bl_decode_bytes(&it, &M->l[j]);
	MA(rc == 0, "decode_bytes: %d", rc);
	MA(copied_now() - c0 <= 4, "decode_bytes copied %" PRIu64 " bytes",
	   copied_now() - c0);
	MA(bl_iter_offset(&it) == at + 4 + n && bl_iter_remaining(&it) == 0,
	   "cursor at %zu after the blob", bl_iter_offset(&it));
	m_append(&M->m[j], M->tmp, n);
	check_list(j, M->m[j].len <= SMALL_LIST);
}

static void op_encode_list(int i, int j)
{
	unsigned char b[4];
	size_t n = M->m[j].len;
	int rc;

	rc = bl_encode_list(&M->l[i], &M->l[j]);
	MA(rc == 0, "encode_list of %zu bytes: %d", n, rc);
	put_le(b, n, 4);
	m_append(&M->m[i], b, 4);
	m_append(&M->m[i], M->m[j].b, n);
}

static int sign(int x)
{
	return (x > 0) - (x < 0);
}

static void op_compare(int i, int j)
{
	const struct mlist *a = &M->m[i], *b = &M->m[j];
	size_t n = a->len < b->len ? a->len : b->len;
	int want = n ? sign(memcmp(a->b, b->b, n)) : 0, got;
	bool eq;

	if (!want)
		want = (a->len > b->len) - (a->len < b->len);
	got = sign(bl_list_compare(&M->l[i], &M->l[j]));
	MA(got == want, "compare(%d, %d) sign %d, model %d", i, j, got, want);
	eq = bl_list_contents_equal(&M->l[i], &M->l[j]);
	MA(eq == (want == 0), "contents_equal(%d, %d) = %d, model %d", i, j,
	   eq, want == 0);
}

static void op_get_ptr(int i)
{
	unsigned nb = bl_list_num_buffers(&M->l[i]);
	struct bl_ptr p = BL_PTR_INIT;
	size_t pos = 0;
	unsigned ref;
	int rc;

	if (nb > 256)
		nb = 0;	/* walking is O(n) per call: keep it short */
	for (unsigned k = 0; k < nb; k++) {
		rc = bl_list_get_ptr(&M->l[i], k, &p);
		MA(rc == 0 && p.raw && p.len > 0, "get_ptr(%u of %u) = %d",
		   k, nb, rc);
		MA(p.len <= M->m[i].len - pos, "segment %u of %zu at %zu", k,
		   p.len, pos);
		MA(!memcmp(bl_ptr_data(&p), M->m[i].b + pos, p.len),
		   "segment %u bytes differ", k);
		ref = bl_raw_nref(p.raw);
		MA(ref >= 2, "segment %u: nref %u while list and slice hold "
		   "it", k, ref);
		pos += p.len;
		bl_ptr_release(&p);
	}
	if (nb || !M->m[i].len) {
		MA(pos == M->m[i].len, "segments cover %zu of %zu", pos,
		   M->m[i].len);
		nb = bl_list_num_buffers(&M->l[i]);
		rc = bl_list_get_ptr(&M->l[i], nb, &p);
		MA(rc == -ERANGE && p.raw == NULL, "get_ptr(%u of %u) = %d",
		   nb, nb, rc);
		M->nerr++;
	}
}

/* compact keeps the bytes; it copies exactly what it says, and nothing
 * when no waste is too much */
static void op_compact(int i)
{
	static const size_t wastes[] = { 0, 64, 4096, 65536, SIZE_MAX };
	size_t w = wastes[rnd(5)], na, nb;
	uint64_t c0;
	ssize_t rc;

	na = addr_runs(i, runs_before, MAX_RUNS);
	c0 = copied_now();
	rc = bl_list_compact(&M->l[i], w);
	nb = addr_runs(i, runs_after, MAX_RUNS);
	MA(rc >= 0 && (size_t)rc <= M->m[i].len, "compact(%zu) of %zu bytes "
	   "= %zd", w, M->m[i].len, rc);
	MA(copied_now() - c0 == (uint64_t)rc, "compact returned %zd but "
	   "copied %" PRIu64, rc, copied_now() - c0);
	if (rc == 0)
		MA(same_runs(na, nb), "compact copied nothing but moved bytes");
	if (w == SIZE_MAX)
		MA(rc == 0, "compact with unlimited waste copied %zd", rc);
	check_list(i, true);
}

static enum op pick_op(void)
{
	unsigned r = (unsigned)rnd(M->weight_total);

	for (int o = 0; o < NOPS; o++) {
		if (r < ops[o].weight)
			return (enum op)o;
		r -= ops[o].weight;
	}
	return OP_APPEND;
}

static void step(void)
{
	enum op o = pick_op();
	int i = (int)rnd(NLISTS), j = (int)rnd(NLISTS);
	int touched_j = -1;

	M->op = ops[o].name;
	M->nops[o]++;
	if (M->trace)
		fprintf(stderr, "step %lu: %s i=%d (%zu bytes, %u segs) "
			"j=%d (%zu bytes, %u segs)\n", M->step, M->op, i,
			M->m[i].len, bl_list_num_buffers(&M->l[i]), j,
			M->m[j].len, bl_list_num_buffers(&M->l[j]));
	switch (o) {
	case OP_APPEND:
		op_append(i, false);
		break;
	case OP_APPEND_ZERO:
		op_append(i, true);
		break;
	case OP_APPEND_PTR:
		op_append_ptr(i, 0);
		break;
	case OP_APPEND_PTR_MOVE:
		op_append_ptr(i, 1);
		break;
	case OP_PREPEND_PTR:
		op_append_ptr(i, 2);
		break;
	case OP_APPEND_LIST:
		op_append_list(i, j);
		touched_j = j;
		break;
	case OP_CLAIM_APPEND:
	case OP_CLAIM_PREPEND:
		op_claim(i, j, o == OP_CLAIM_PREPEND);
		touched_j = j;
		break;
	case OP_SPLICE:
		op_splice(i);
		break;
	case OP_SUBSTR:
		op_substr(i, j);
		touched_j = j;
		break;
	case OP_COPY_IN:
		op_copy_in(i, false);
		break;
	case OP_ZERO:
		op_copy_in(i, true);
		break;
	case OP_COPY_OUT:
		op_copy_out(i);
		break;
	case OP_REBUILD:
		op_rebuild(i, 0);
		break;
	case OP_REBUILD_ALIGNED:
		op_rebuild(i, 1);
		break;
	case OP_REBUILD_ASM:
		op_rebuild(i, 2);
		break;
	case OP_C_STR:
		op_c_str(i);
		break;
	case OP_CLEAR:
		bl_list_clear(&M->l[i]);
		M->m[i].len = 0;
		break;
	case OP_SWAP:
		op_swap(i, j);
		touched_j = j;
		break;
	case OP_ITER:
		op_iter(i);
		break;
	case OP_CRC:
		op_crc(i);
		break;
	case OP_INVALIDATE_CRC:
		bl_list_invalidate_crc(&M->l[i]);
		op_crc(i);
		break;
	case OP_TO_IOVEC:
		op_to_iovec(i);
		break;
	case OP_ENCODE:
		op_encode(i);
		break;
	case OP_ENCODE_BYTES:
		op_encode_bytes(i);
		break;
	case OP_ENCODE_LIST:
		if (j == i)
			j = other_list(i);
		op_encode_list(i, j);
		touched_j = j;
		break;
	case OP_COMPARE:
		op_compare(i, j);
		break;
	case OP_GET_PTR:
		op_get_ptr(i);
		break;
	case OP_SRC_NEW:
		src_new((int)rnd(NSRC));
		break;
	case OP_SRC_GROW:
		src_grow((int)rnd(NSRC));
		break;
	case OP_COMPACT:
		op_compact(i);
		break;
	case NOPS:
		break;
	}
	M->op = "check";
	check_list(i, M->m[i].len <= SMALL_LIST || M->step % FULL_EVERY == 0);
	if (touched_j >= 0 && touched_j != i)
		check_list(touched_j, M->m[touched_j].len <= SMALL_LIST ||
					      M->step % FULL_EVERY == 0);
	if (M->step % ALL_EVERY == 0)
		check_all();
	for (int k = 0; k < NLISTS; k++) {
		if (M->m[k].len > LIST_MAX) {
			bl_list_clear(&M->l[k]);
			M->m[k].len = 0;
			check_list(k, true);
		}
	}
}

static void model_setup(uint64_t seed)
{
	M = calloc(1, sizeof(*M));
	ck_assert_ptr_nonnull(M);
	M->seed = seed;
	M->rng = seed;
	M->op = "setup";
	M->last_list = -1;
	M->trace = getenv("BL_MODEL_TRACE") != NULL;
	M->tmp = malloc(TMP_LEN);
	ck_assert_ptr_nonnull(M->tmp);
	for (int o = 0; o < NOPS; o++)
		M->weight_total += ops[o].weight;
	for (int k = 0; k < NSTATIC; k++) {
		tu_fill(static_buf[k], STATIC_LEN, &M->rng);
		memcpy(static_pristine[k], static_buf[k], STATIC_LEN);
	}
	M->pool = bl_pool_create("test_model", NULL);
	ck_assert_ptr_nonnull(M->pool);
	for (int i = 0; i < NLISTS; i++) {
		bl_list_init(&M->l[i]);
		if (i & 1)
			bl_list_set_pool(&M->l[i], M->pool);
		m_reserve(&M->m[i], 4096);	/* never NULL, even empty */
	}
	for (int s = 0; s < NSRC; s++)
		src_new(s);
}

static void model_teardown(void)
{
	struct bl_pool_stats ps;

	M->op = "teardown";
	check_all();
	for (int i = 0; i < NLISTS; i++) {
		bl_list_clear(&M->l[i]);
		MA(bl_list_length(&M->l[i]) == 0 &&
		   bl_list_num_buffers(&M->l[i]) == 0, "clear left bytes");
		free(M->m[i].b);
	}
	for (int s = 0; s < NSRC; s++) {
		bl_ptr_release(&M->src[s].p);
		free(M->src[s].shadow);
	}
	MA(M->pool_raws_max > 0, "no raw was ever made in pool %s",
	   bl_pool_name(M->pool));
	bl_pool_get_stats(M->pool, &ps);
	MA(ps.raws == 0 && ps.bytes == 0 && ps.bytes_used == 0,
	   "pool %s still accounts %" PRId64 " raws, %" PRId64 " bytes (%"
	   PRId64 " used) with every list cleared", ps.name, ps.raws,
	   ps.bytes, ps.bytes_used);
	MA(M->claimed_freed == M->claimed_made,
	   "%lu claimed raws made, %lu free callbacks", M->claimed_made,
	   M->claimed_freed);
	for (int k = 0; k < NSTATIC; k++)
		MA(memcmp(static_buf[k], static_pristine[k], STATIC_LEN) == 0,
		   "static buffer %d was written", k);
	free(M->tmp);
	free(M->runs);
	free(M);
	M = NULL;
}

static void model_run(uint64_t seed, unsigned long steps)
{
	char line[2048];
	size_t at;

	model_setup(seed);
	for (M->step = 1; M->step <= steps; M->step++)
		step();
	M->step = steps;
	at = (size_t)snprintf(line, sizeof(line),
			      "model: seed %" PRIu64 ": %lu steps, %lu calls "
			      "that had to fail did;", seed, steps, M->nerr);
	for (int o = 0; o < NOPS && at < sizeof(line); o++)
		at += (size_t)snprintf(line + at, sizeof(line) - at, " %s=%lu",
				       ops[o].name, M->nops[o]);
	fprintf(stderr, "%s\n", line);
	for (int o = 0; o < NOPS; o++)
		MA(M->nops[o] > 0, "operation %s never ran", ops[o].name);
	model_teardown();
}

/* ---- test cases ---------------------------------------------------------- */

#define STEPS (getenv("BL_TEST_QUICK") ? 20000ul : 200000ul)	/* valgrind */

START_TEST(model_fixed_seed)
{
	/* the same operations on every run: a regression is repeatable */
	model_run(42, STEPS);
}
END_TEST

START_TEST(model_random_seed)
{
	/* new operations on every run; the seed is printed to repeat them */
	model_run(tu_seed("model"), STEPS);
}
END_TEST

START_TEST(model_no_leak)
{
	/* every block the library allocated during the run is freed again
	 * once the lists and sources are released */
	struct tu_alloc_stats st;

	tu_alloc_install(0, 0);
	model_run(7, STEPS / 5);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_msg(st.allocs > 0, "the counting allocator saw no "
		      "allocation");
	ck_assert_msg(st.live_bytes == 0 && st.allocs == st.frees,
		      "leak: %" PRId64 " bytes in %" PRIu64 " blocks still "
		      "allocated", st.live_bytes, st.allocs - st.frees);
	ck_assert_uint_eq(st.failed, 0);
}
END_TEST

static Suite *model_suite(void)
{
	const TTest *random_tests[] = {
		model_fixed_seed,
		model_random_seed,
		model_no_leak,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("random", random_tests, .timeout = 300),
		TU_GROUP_END
	};

	return tu_suite("model", groups);
}

int main(void)
{
	return tu_run(model_suite());
}
