/* SPDX-License-Identifier: MIT */
/*
 * model.c - test_model's engine: randomness, the model's byte arrays,
 * comparing a list with its model, source slices over raws of every
 * kind, in-place writes propagated to every list sharing the bytes, and
 * the step that picks an operation (model_ops.c) and checks the result.
 */
#include "model.h"

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

struct model *M;
unsigned char static_buf[NSTATIC][STATIC_LEN];
unsigned char static_pristine[NSTATIC][STATIC_LEN];

/* ---- randomness ---------------------------------------------------------- */

uint64_t r64(void)
{
	return tu_rand(&M->rng);
}

size_t rnd(size_t n)
{
	return n ? (size_t)(r64() % n) : 0;
}

bool chance(unsigned pct)
{
	return rnd(100) < pct;
}

/* A length in [0, max], biased to small ones. */
size_t rnd_len(size_t max)
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
void rnd_range(size_t len, bool allow_bad, size_t *off, size_t *n,
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

size_t rnd_pow2(unsigned max_shift)
{
	return (size_t)1 << rnd(max_shift + 1);
}

/* ---- the model's byte arrays --------------------------------------------- */

void m_reserve(struct mlist *m, size_t n)
{
	if (n <= m->cap)
		return;
	m->cap = n + n / 2 + 64;
	m->b = realloc(m->b, m->cap);
	ck_assert_ptr_nonnull(m->b);
}

/* Inserts @n bytes of @data (zeros when NULL) at @at. */
void m_insert(struct mlist *m, size_t at, const void *data, size_t n)
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

void m_append(struct mlist *m, const void *data, size_t n)
{
	m_insert(m, m->len, data, n);
}

void m_erase(struct mlist *m, size_t at, size_t n)
{
	memmove(m->b + at, m->b + at + n, m->len - at - n);
	m->len -= n;
}

void put_le(unsigned char *p, uint64_t v, int bytes)
{
	for (int k = 0; k < bytes; k++)
		p[k] = (unsigned char)(v >> (8 * k));
}

uint64_t get_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int k = 0; k < bytes; k++)
		v |= (uint64_t)p[k] << (8 * k);
	return v;
}

/* ---- comparing a list with its model ------------------------------------- */

void check_list(int i, bool full)
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

void propagate_write(int i, size_t off, size_t n,
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

void check_crc_all(void)
{
	for (int j = 0; j < NLISTS; j++) {
		uint32_t seed = (uint32_t)r64();
		uint32_t want = bl_crc32c(seed, M->m[j].b, M->m[j].len);
		uint32_t got = bl_list_crc32c(&M->l[j], seed);

		MA(got == want, "list %d (%zu bytes) crc32c(seed %08x) = %08x, "
		   "model %08x", j, M->m[j].len, seed, got, want);
	}
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

void model_run(uint64_t seed, unsigned long steps)
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
