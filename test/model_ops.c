/* SPDX-License-Identifier: MIT */
/*
 * model_ops.c - test_model's operations: each applies one list call to
 * a list and the same change to its model (model.h), and checks what
 * the call returned and what it must not have changed.
 */
#include "model.h"

/* ---- operations ---------------------------------------------------------- */

int other_list(int i)
{
	return (i + 1 + (int)rnd(NLISTS - 1)) % NLISTS;
}

void op_append(int i, bool zero)
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

void op_append_ptr(int i, int how)
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

void op_append_list(int i, int j)
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

void op_claim(int i, int j, bool prepend)
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

void op_splice(int i)
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

void op_substr(int i, int j)
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

void op_copy_in(int i, bool zero)
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

void op_copy_out(int i)
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

void op_rebuild(int i, int kind)
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

void op_c_str(int i)
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

void op_swap(int i, int j)
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

void op_iter(int i)
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

void op_crc(int i)
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

void op_to_iovec(int i)
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

void op_encode(int i)
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
void op_encode_bytes(int i)
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

void op_encode_list(int i, int j)
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

void op_compare(int i, int j)
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

void op_get_ptr(int i)
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
void op_compact(int i)
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
