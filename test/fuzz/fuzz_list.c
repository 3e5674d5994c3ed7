/* SPDX-License-Identifier: MIT */
/*
 * fuzz_list.c - a sequence of bl_list operations on four lists, driven by
 * the fuzzer's bytes, each checked against a plain byte-array model.
 *
 * After every step every list must have the model's length and bytes and
 * pass bl__list_validate(); a call must fail exactly where the model says
 * its range is bad; a call that fails (including -ENOMEM from an
 * allocation the harness refuses on purpose) must leave every list
 * exactly as it was, down to the addresses of its segments.
 *
 * Lists share raws (append_list, substr_of, slices of each other's
 * segments), and bl_list_copy_in() writes in place into shared raws, as
 * Ceph does: a write through one list shows in every list that shares the
 * bytes.  The model learns which bytes are shared from the addresses the
 * real lists expose (bl_list_to_iovec) and takes the written values from
 * the caller's source bytes, never from the library's memory.
 *
 * Static raws are made over a page the harness protects read-only, so a
 * write into borrowed memory faults at once.  At the end of every input
 * all lists are cleared and the allocator must be back to where it was.
 *
 * Defines LLVMFuzzerTestOneInput only, so test/test_fuzz_replay.c can
 * link it (renamed) into a Check suite.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>
#include <bufferlist.h>
#include "list_int.h"
#include "fuzz_util.h"

#define NL 4			/* lists */
#define MAXLEN (1u << 13)	/* the harness keeps each list below this */
#define MAXOPS 256


int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- input ---------------------------------------------------------------- */

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t rd8(struct in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint16_t rd16(struct in *in)
{
	uint16_t v = rd8(in);

	return (uint16_t)(v | rd8(in) << 8);
}

static uint32_t rd32(struct in *in)
{
	uint32_t v = rd16(in);

	return v | (uint32_t)rd16(in) << 16;
}

/* A length: mostly small, sometimes up to a few KiB. */
static size_t rdlen(struct in *in)
{
	uint8_t k = rd8(in);

	if (k < 160)
		return k & 63;
	if (k < 240)
		return rd16(in) % 1024;
	return rd16(in) % 3000;
}

/* An offset into a list of @n bytes: sometimes past the end on purpose. */
static size_t rdoff(struct in *in, size_t n)
{
	uint8_t k = rd8(in);

	if (k < 12)
		return n + 1 + (k & 3);
	if (k < 20)
		return k & 1 ? n : SIZE_MAX - (k & 3);
	return rd16(in) % (n + 1);
}

/* A length for a range starting at @off of @n: sometimes too long. */
static size_t rdrange(struct in *in, size_t n, size_t off)
{
	size_t room = off <= n ? n - off : 0;
	uint8_t k = rd8(in);

	if (k < 12)
		return room + 1 + (k & 3);
	if (k < 16)
		return SIZE_MAX - (k & 3);
	if (k < 40)
		return room;
	return rd16(in) % (room + 1);
}

/* Payload bytes: from the input while it lasts, then a pattern. */
static void rdbytes(struct in *in, uint8_t *dst, size_t len)
{
	static uint8_t ctr;
	size_t k = len < in->n ? len : in->n;

	memcpy(dst, in->p, k);
	in->p += k;
	in->n -= k;
	for (; k < len; k++)
		dst[k] = (uint8_t)(ctr++ * 37 + 11);
}

/* ---- an allocator that fails on request ------------------------------------ */

static long fz_live;		/* blocks handed out and not freed */
static unsigned long fz_nalloc;	/* allocations since arming */
static unsigned long fz_fail_at;	/* 0: never fail */
static bool fz_sticky;
static bool fz_failed;		/* an allocation was refused */

static void *fz_alloc(void *opaque, size_t size, size_t align)
{
	void *p;

	(void)opaque;
	if (fz_fail_at && ++fz_nalloc >= fz_fail_at &&
	    (fz_sticky || fz_nalloc == fz_fail_at)) {
		fz_failed = true;
		return NULL;
	}
	if (align < sizeof(void *))
		align = sizeof(void *);
	if (posix_memalign(&p, align, size ? size : 1))
		return NULL;
	fz_live++;
	return p;
}

static void fz_free(void *opaque, void *p, size_t size, size_t align)
{
	(void)opaque;
	(void)size;
	(void)align;
	fz_live--;
	free(p);
}

static void arm(unsigned long at, bool sticky)
{
	fz_nalloc = 0;
	fz_fail_at = at;
	fz_sticky = sticky;
	fz_failed = false;
}

/* ---- claimed raws ------------------------------------------------------------ */

static long claimed_live;

static void claim_free(void *p, size_t len, void *opaque)
{
	(void)len;
	(void)opaque;
	claimed_live--;
	free(p);
}

/* ---- the model ------------------------------------------------------------- */

struct model {
	uint8_t *b;
	size_t n;
};

static struct bl_list L[NL];
static struct model M[NL];
static struct bl_pool *fz_pool;
static uint8_t *stat_page;	/* read-only after set-up */
static size_t page;

static void m_append(struct model *m, const uint8_t *src, size_t len)
{
	if (!len)
		return;
	m->b = realloc(m->b, m->n + len);
	CHECK(m->b);
	memcpy(m->b + m->n, src, len);
	m->n += len;
}

static void m_prepend(struct model *m, const uint8_t *src, size_t len)
{
	if (!len)
		return;
	m->b = realloc(m->b, m->n + len);
	CHECK(m->b);
	memmove(m->b + len, m->b, m->n);
	memcpy(m->b, src, len);
	m->n += len;
}

static void m_cut(struct model *m, size_t off, size_t len)
{
	memmove(m->b + off, m->b + off + len, m->n - off - len);
	m->n -= len;
}

/* The model's buffer is never NULL, so m->b + off is always defined. */
static void m_clear(struct model *m)
{
	free(m->b);
	m->b = malloc(1);
	CHECK(m->b);
	m->n = 0;
}

static bool range_bad(size_t n, size_t off, size_t len)
{
	return off > n || len > n - off;
}

/* Every segment of @l as iovecs (malloc'd, *cnt entries). */
static struct iovec *segs_of(const struct bl_list *l, int *cnt)
{
	unsigned ns = bl_list_num_buffers(l);
	struct iovec *v = malloc((ns + 1) * sizeof(*v));
	int n;

	CHECK(v);
	n = bl_list_to_iovec(l, 0, v, (int)ns + 1);
	CHECK(n == (int)ns);
	*cnt = n;
	return v;
}

static void check_list(int k)
{
	const struct bl_list *l = &L[k];
	const struct model *m = &M[k];
	struct iovec *v;
	size_t pos = 0;
	int n;

	CHECK(bl__list_validate(l) == 0);
	CHECK(bl_list_length(l) == m->n);
	CHECK(bl_list_is_empty(l) == (m->n == 0));
	v = segs_of(l, &n);
	for (int i = 0; i < n; i++) {
		CHECK(v[i].iov_len > 0);
		CHECK(pos + v[i].iov_len <= m->n);
		CHECK(memcmp(v[i].iov_base, m->b + pos, v[i].iov_len) == 0);
		pos += v[i].iov_len;
	}
	CHECK(pos == m->n);
	free(v);
	/* after every step, so a stale per-raw crc cache shows at once */
	CHECK(bl_list_crc32c(l, 0x9e3779b9u) ==
	      bl_crc32c(0x9e3779b9u, m->b, m->n));
}

static void check_all(void)
{
	for (int k = 0; k < NL; k++)
		check_list(k);
}

/* What a failed call must leave behind: every list as it was. */
struct snap {
	size_t len[NL];
	int n[NL];
	struct iovec *v[NL];
};

static void snap_take(struct snap *s)
{
	for (int k = 0; k < NL; k++) {
		s->len[k] = bl_list_length(&L[k]);
		s->v[k] = segs_of(&L[k], &s->n[k]);
	}
}

static bool snap_same(const struct snap *s)
{
	bool same = true;

	for (int k = 0; k < NL; k++) {
		struct iovec *v;
		int n;

		v = segs_of(&L[k], &n);
		if (s->len[k] != bl_list_length(&L[k]) || n != s->n[k] ||
		    (n && memcmp(v, s->v[k], (size_t)n * sizeof(*v))))
			same = false;
		free(v);
	}
	return same;
}

static void snap_free(struct snap *s)
{
	for (int k = 0; k < NL; k++)
		free(s->v[k]);
}

/*
 * After a successful write of @src over [@off, @off + @len) of list @k:
 * every byte of every list that lies at a written address now holds the
 * byte written there (the last write wins where the range covers the
 * same memory twice).
 */
static void propagate(int k, size_t off, size_t len, const uint8_t *src)
{
	struct iovec *w, *v;
	size_t *wsrc, done = 0;
	int nw = 0, cap = (int)bl_list_num_buffers(&L[k]) + 1, n;

	if (!len)
		return;
	w = malloc((size_t)cap * sizeof(*w));
	wsrc = malloc((size_t)cap * sizeof(*wsrc));
	CHECK(w && wsrc);
	n = bl_list_to_iovec(&L[k], off, w, cap);
	CHECK(n > 0);
	for (int i = 0; i < n && done < len; i++) {
		if (w[i].iov_len > len - done)
			w[i].iov_len = len - done;
		wsrc[i] = done;
		done += w[i].iov_len;
		nw = i + 1;
	}
	CHECK(done == len);
	for (int t = 0; t < NL; t++) {
		v = segs_of(&L[t], &n);
		for (int r = 0; r < nw; r++) {
			uintptr_t ra = (uintptr_t)w[r].iov_base;
			uintptr_t re = ra + w[r].iov_len;
			size_t pos = 0;

			for (int i = 0; i < n; i++) {
				uintptr_t va = (uintptr_t)v[i].iov_base;
				uintptr_t ve = va + v[i].iov_len;
				uintptr_t a = va > ra ? va : ra;
				uintptr_t e = ve < re ? ve : re;

				if (a < e)
					memcpy(M[t].b + pos + (a - va),
					       src + wsrc[r] + (a - ra), e - a);
				pos += v[i].iov_len;
			}
		}
		free(v);
	}
	free(w);
	free(wsrc);
}

/* propagate() costs segments written x segments of all lists: bound it. */
static bool propagate_cheap(int k)
{
	size_t all = 0;

	for (int t = 0; t < NL; t++)
		all += bl_list_num_buffers(&L[t]);
	return (size_t)bl_list_num_buffers(&L[k]) * all <= 65536;
}

/* hexdump -C: 16 bytes a line, '*' for a run of repeated full lines. */
static void ref_hexdump(const uint8_t *b, size_t n, FILE *f)
{
	bool star = false;

	for (size_t off = 0; off < n; off += 16) {
		size_t k = n - off < 16 ? n - off : 16;

		if (off && k == 16 && !memcmp(b + off, b + off - 16, 16)) {
			if (!star)
				fputs("*\n", f);
			star = true;
			continue;
		}
		star = false;
		fprintf(f, "%08zx  ", off);
		for (size_t i = 0; i < 16; i++) {
			if (i < k)
				fprintf(f, "%02x ", b[off + i]);
			else
				fputs("   ", f);
			if (i == 7)
				fputc(' ', f);
		}
		fputs(" |", f);
		for (size_t i = 0; i < k; i++)
			fputc(b[off + i] >= 0x20 && b[off + i] < 0x7f ?
			      b[off + i] : '.', f);
		fputs("|\n", f);
	}
	if (n)
		fprintf(f, "%08zx\n", n);
}

/* ---- operations -------------------------------------------------------------- */

static uint8_t buf[2 * MAXLEN];
static uint8_t buf2[2 * MAXLEN];

/* A slice made by the harness: a fresh raw, a static one or a claimed one. */
static int make_ptr(struct in *in, struct bl_ptr *p, size_t len)
{
	uint8_t kind = rd8(in) % 4;
	struct bl_raw *r;
	size_t lead = rd8(in) % 8, trail = rd8(in) % 8;

	if (kind == 1 && len + lead + trail <= page) {
		r = bl_raw_create_static(stat_page + lead, len + trail);
	} else if (kind == 2) {
		void *mem = malloc(lead + len + trail + 1);

		if (!mem)
			return -ENOMEM;
		rdbytes(in, mem, lead + len + trail);
		r = bl_raw_claim(mem, lead + len + trail, claim_free, NULL);
		if (!r) {
			free(mem);
			return -ENOMEM;
		}
		claimed_live++;
		memcpy(buf, (uint8_t *)mem + lead, len);
		p->raw = NULL;
		bl_ptr_from_raw(p, r);
		CHECK(bl_ptr_slice(p, p, lead, len) == 0);
		return 0;
	} else if (kind == 3) {
		r = bl_raw_create_aligned(lead + len + trail, 4096);
	} else {
		r = bl_raw_create(lead + len + trail);
	}
	if (!r)
		return -ENOMEM;
	if (bl_raw_is_static(r)) {
		memcpy(buf, stat_page + lead, len);
	} else {
		rdbytes(in, (uint8_t *)bl_raw_data(r), lead + len + trail);
		memcpy(buf, bl_raw_data(r) + lead, len);
	}
	bl_ptr_from_raw(p, r);
	CHECK(bl_ptr_slice(p, p, bl_raw_is_static(r) ? 0 : lead, len) == 0);
	return 0;
}

/* Returns the call's result, or 1 for "nothing was called". */
static int step(struct in *in, uint8_t op)
{
	int i = rd8(in) % NL, j = rd8(in) % NL;
	struct bl_list *l = &L[i];
	struct model *m = &M[i];
	size_t off, len;
	ssize_t sr;
	int ret = 1;

	switch (op) {
	case 0:			/* append bytes */
		len = rdlen(in);
		if (m->n + len > MAXLEN)
			break;
		rdbytes(in, buf, len);
		ret = bl_list_append(l, buf, len);
		if (!ret)
			m_append(m, buf, len);
		break;
	case 1:			/* append zeros */
		len = rdlen(in);
		if (m->n + len > MAXLEN)
			break;
		ret = bl_list_append_zero(l, len);
		if (!ret) {
			memset(buf, 0, len);
			m_append(m, buf, len);
		}
		break;
	case 2: {		/* append / prepend a slice of a new raw */
		struct bl_ptr p = BL_PTR_INIT;
		uint8_t how = rd8(in) % 3;

		len = rdlen(in);
		if (m->n + len > MAXLEN)
			break;
		if (make_ptr(in, &p, len)) {
			ret = -ENOMEM;
			break;
		}
		if (how == 0) {
			ret = bl_list_append_ptr(l, &p);
		} else if (how == 1) {
			struct bl_ptr q = p;

			ret = bl_list_append_ptr_move(l, &p);
			if (!ret) {
				CHECK(!p.raw && !p.len);
			} else {
				CHECK(p.raw == q.raw && p.off == q.off &&
				      p.len == q.len);
			}
		} else {
			ret = bl_list_prepend_ptr(l, &p);
		}
		if (!ret) {
			if (how == 2)
				m_prepend(m, buf, len);
			else
				m_append(m, buf, len);
		}
		bl_ptr_release(&p);
		break;
	}
	case 3: {		/* a slice of one of list j's segments */
		struct bl_ptr p = BL_PTR_INIT, q;
		unsigned ns = bl_list_num_buffers(&L[j]);
		unsigned idx = rd8(in) % (ns + 2);
		size_t so, sl, segoff = 0;
		int r;

		r = bl_list_get_ptr(&L[j], idx, &p);
		CHECK(r == (idx < ns ? 0 : -ERANGE));
		if (r)
			break;
		{
			struct iovec *v;
			int n;

			v = segs_of(&L[j], &n);
			for (unsigned t = 0; t < idx; t++)
				segoff += v[t].iov_len;
			CHECK(v[idx].iov_base == bl_ptr_data(&p) &&
			      v[idx].iov_len == p.len);
			free(v);
		}
		{	/* the walk lends that segment; from_seg shares it */
			struct bl_list_seg_iter it;
			const struct bl_seg *s = bl_list_seg_first(&L[j], &it);
			struct bl_ptr w;

			for (unsigned t = 0; t < idx && s; t++)
				s = bl_list_seg_next(&it);
			CHECK(s && s->raw == p.raw &&
			      s->data == bl_ptr_data(&p) && s->len == p.len);
			CHECK(bl_ptr_from_seg(&w, s) == 0);
			CHECK(w.raw == p.raw && w.off == p.off &&
			      w.len == p.len);
			bl_ptr_release(&w);
		}
		so = rdoff(in, p.len);
		sl = rdrange(in, p.len, so);
		q = p;
		r = bl_ptr_slice(&p, &p, so, sl);
		CHECK(r == (range_bad(q.len, so, sl) ? -ERANGE : 0));
		if (r) {
			CHECK(p.raw == q.raw && p.off == q.off &&
			      p.len == q.len);
		} else if (m->n + sl <= MAXLEN) {
			memcpy(buf, M[j].b + segoff + so, sl);
			ret = bl_list_append_ptr(l, &p);
			if (!ret)
				m_append(m, buf, sl);
		}
		bl_ptr_release(&p);
		CHECK(!p.raw && !p.off && !p.len);
		break;
	}
	case 4:			/* append_list (j may be i) */
		if (m->n + M[j].n > MAXLEN)
			break;
		len = M[j].n;
		memcpy(buf, M[j].b, len);
		ret = bl_list_append_list(l, &L[j]);
		if (!ret)
			m_append(m, buf, len);
		break;
	case 5: {		/* claim_append / claim_prepend */
		bool app = rd8(in) & 1;

		if (m->n + M[j].n > MAXLEN)
			break;
		if (app)
			ret = bl_list_claim_append(l, &L[j]);
		else
			ret = bl_list_claim_prepend(l, &L[j]);
		if (i == j) {
			CHECK(ret == -EINVAL);
			break;
		}
		if (!ret) {
			if (app)
				m_append(m, M[j].b, M[j].n);
			else
				m_prepend(m, M[j].b, M[j].n);
			m_clear(&M[j]);
		}
		break;
	}
	case 6: {		/* splice, maybe into list j */
		bool into = rd8(in) & 1;

		off = rdoff(in, m->n);
		len = rdrange(in, m->n, off);
		if (into && !range_bad(m->n, off, len) &&
		    M[j].n + len > MAXLEN)
			break;
		ret = bl_list_splice(l, off, len, into ? &L[j] : NULL);
		if (into && i == j) {
			CHECK(ret == -EINVAL);
			break;
		}
		CHECK(ret == (range_bad(m->n, off, len) ? -ERANGE : ret));
		if (range_bad(m->n, off, len))
			break;
		if (!ret) {
			if (into)
				m_append(&M[j], m->b + off, len);
			m_cut(m, off, len);
		}
		break;
	}
	case 7: {		/* substr_of: list i = part of list j */
		struct model nm;

		off = rdoff(in, M[j].n);
		len = rdrange(in, M[j].n, off);
		ret = bl_list_substr_of(l, &L[j], off, len);
		CHECK(ret == (range_bad(M[j].n, off, len) ? -ERANGE : ret));
		if (!ret) {
			nm.n = 0;
			nm.b = malloc(1);
			CHECK(nm.b);
			m_append(&nm, M[j].b + off, len);
			free(m->b);
			*m = nm;
		}
		break;
	}
	case 8:			/* copy_in / zero */
	case 9: {
		uint8_t *src = buf;

		off = rdoff(in, m->n);
		len = rdrange(in, m->n, off);
		if (!propagate_cheap(i))
			break;
		if (op == 8) {
			if (!range_bad(m->n, off, len))
				rdbytes(in, buf, len);
			ret = bl_list_copy_in(l, off, len, buf);
		} else {
			memset(buf2, 0, sizeof(buf2));
			src = buf2;
			ret = bl_list_zero(l, off, len);
		}
		CHECK(ret == (range_bad(m->n, off, len) ? -ERANGE : ret));
		if (!ret)
			propagate(i, off, len, src);
		break;
	}
	case 10:		/* copy_out */
		off = rdoff(in, m->n);
		len = rdrange(in, m->n, off);
		ret = bl_list_copy_out(l, off, len, buf);
		CHECK(ret == (range_bad(m->n, off, len) ? -ERANGE : 0));
		if (!ret)
			CHECK(!len || !memcmp(buf, m->b + off, len));
		break;
	case 11: {		/* rebuild */
		unsigned ns = bl_list_num_buffers(l);

		ret = bl_list_rebuild(l);
		if (!ret)
			CHECK(bl_list_num_buffers(l) == (ns > 1 ? 1 : ns));
		break;
	}
	case 12:		/* rebuild_aligned / _size_and_memory */
	case 13: {
		uint8_t a = rd8(in), b = rd8(in);
		size_t sa = a < 8 ? (size_t)a : (size_t)1 << (a % 13);
		size_t ma = b < 8 ? (size_t)b : (size_t)1 << (b % 13);
		unsigned maxseg = op == 13 ? rd8(in) % 6 : 0;
		struct snap s;
		struct iovec *v;
		int n;

		if (op == 12)
			ma = sa;
		snap_take(&s);
		if (op == 12)
			ret = bl_list_rebuild_aligned(l, sa);
		else
			ret = bl_list_rebuild_aligned_size_and_memory(
				l, sa, ma, maxseg);
		if (!bl__is_pow2(sa) || !bl__is_pow2(ma))
			CHECK(ret == -EINVAL);
		if (ret == 0)
			CHECK(snap_same(&s));
		snap_free(&s);
		if (ret < 0)
			break;
		CHECK(ret == 0 || ret == 1);
		v = segs_of(l, &n);
		for (int t = 0; t < n; t++) {
			CHECK((uintptr_t)v[t].iov_base % ma == 0);
			CHECK(t == n - 1 || v[t].iov_len % sa == 0);
		}
		CHECK(!maxseg || n <= (int)maxseg);
		free(v);
		ret = 0;
		break;
	}
	case 14:		/* compact */
		sr = bl_list_compact(l, rdlen(in));
		CHECK(sr == -ENOMEM || (sr >= 0 && (size_t)sr <= m->n));
		ret = sr < 0 ? (int)sr : 0;
		break;
	case 15: {		/* c_str */
		unsigned ns = bl_list_num_buffers(l);
		char *p = bl_list_c_str(l);

		if (!m->n) {
			CHECK(p && !*p);	/* "", never NULL */
			ret = 0;
		} else if (!p) {
			ret = -ENOMEM;
		} else {
			CHECK(!memcmp(p, m->b, m->n));
			CHECK(bl_list_num_buffers(l) == 1 || ns == 0);
			ret = 0;
		}
		break;
	}
	case 16: {		/* to_iovec from an offset */
		struct iovec v[8];
		int cnt = (int)(rd8(in) % 10) - 1, n;
		size_t pos;

		off = rdoff(in, m->n);
		n = bl_list_to_iovec(l, off, v, cnt);
		if (cnt < 0) {
			CHECK(n == -EINVAL);
		} else if (off > m->n) {
			CHECK(n == -ERANGE);
		} else {
			CHECK(n >= 0 && n <= cnt);
			CHECK((n == 0) == (off == m->n || cnt == 0));
			pos = off;
			for (int t = 0; t < n; t++) {
				CHECK(v[t].iov_len > 0 &&
				      pos + v[t].iov_len <= m->n);
				CHECK(!memcmp(v[t].iov_base, m->b + pos,
					      v[t].iov_len));
				pos += v[t].iov_len;
			}
			/* fewer than asked only when it reached the end */
			CHECK(n == cnt || pos == m->n);
		}
		ret = 0;
		break;
	}
	case 17: {		/* crc32c, with and without the caches */
		uint32_t seed = rd32(in);

		if (rd8(in) & 1)
			bl_list_invalidate_crc(l);
		CHECK(bl_list_crc32c(l, seed) ==
		      bl_crc32c(seed, m->b, m->n));
		ret = 0;
		break;
	}
	case 18:		/* swap */
		bl_list_swap(l, &L[j]);
		{
			struct model t = *m;

			*m = M[j];
			M[j] = t;
		}
		ret = 0;
		break;
	case 19:		/* clear */
		bl_list_clear(l);
		m_clear(m);
		ret = 0;
		break;
	case 20: {		/* compare / contents_equal */
		size_t a = m->n, b = M[j].n, mn = a < b ? a : b;
		int c = mn ? memcmp(m->b, M[j].b, mn) : 0;
		int r = bl_list_compare(l, &L[j]);

		if (!c)
			c = a < b ? -1 : a > b;
		CHECK((r < 0) == (c < 0) && (r > 0) == (c > 0));
		CHECK(bl_list_contents_equal(l, &L[j]) == (c == 0));
		ret = 0;
		break;
	}
	case 21: {		/* an iterator walk */
		struct bl_iter it, it2;
		size_t pos;
		int nsub = rd8(in) % 12, r;

		off = rdoff(in, m->n);
		r = bl_iter_init(&it, l, off);
		CHECK(r == (off > m->n ? -ERANGE : 0));
		if (r)
			break;
		pos = off;
		while (nsub--) {
			uint8_t sub = rd8(in) % 7;
			size_t rem = m->n - pos, x;

			switch (sub) {
			case 0:
				x = rdrange(in, m->n, pos);
				r = bl_iter_advance(&it, x);
				CHECK(r == (x > rem ? -ERANGE : 0));
				if (!r)
					pos += x;
				break;
			case 1:
				x = rdoff(in, m->n);
				r = bl_iter_seek(&it, x);
				CHECK(r == (x > m->n ? -ERANGE : 0));
				if (!r)
					pos = x;
				break;
			case 2:
				x = rdrange(in, m->n, pos);
				if (x > sizeof(buf) && x <= rem)
					x = sizeof(buf);
				r = bl_iter_copy(&it, x, buf);
				CHECK(r == (x > rem ? -ERANGE : 0));
				if (!r) {
					CHECK(!x || !memcmp(buf, m->b + pos, x));
					pos += x;
				}
				break;
			case 3: {
				const char *d = NULL;

				x = rdlen(in);
				x = bl_iter_get_ptr_and_advance(&it, x, &d);
				CHECK(x <= rem);
				if (x) {
					CHECK(!memcmp(d, m->b + pos, x));
					pos += x;
				}
				break;
			}
			case 4:
				/* appending to another list leaves it valid */
				if (j == i)
					break;
				x = rdrange(in, m->n, pos);
				if (x <= rem && M[j].n + x > MAXLEN)
					break;
				r = bl_iter_copy_list(&it, x, &L[j]);
				CHECK(r == (x > rem ? -ERANGE : r));
				if (!r) {
					m_append(&M[j], m->b + pos, x);
					pos += x;
				}
				break;
			case 5: {
				uint32_t v32, want = 0;

				r = bl_decode_u32(&it, &v32);
				CHECK(r == (rem < 4 ? -ERANGE : 0));
				if (!r) {
					for (int t = 3; t >= 0; t--)
						want = want << 8 | m->b[pos + t];
					CHECK(v32 == want);
					pos += 4;
				}
				break;
			}
			case 6:
				/* a copy is an independent cursor */
				it2 = it;
				(void)bl_iter_advance(&it2, rem);
				CHECK(bl_iter_remaining(&it2) == 0);
				break;
			}
			CHECK(bl_iter_offset(&it) == pos);
			CHECK(bl_iter_remaining(&it) == m->n - pos);
		}
		ret = 0;
		break;
	}
	case 22:		/* pinned_unused only has to be sane */
		(void)bl_list_pinned_unused(l);
		ret = 0;
		break;
	case 23: {		/* a reserved raw filled by bl_ptr_append */
		struct bl_ptr p = BL_PTR_INIT, q;
		size_t cap = rdlen(in);
		struct snap s;
		int nap = rd8(in) % 4;

		ret = bl_ptr_reserve(&p, cap);
		if (ret)
			break;
		CHECK(p.len == 0 && bl_ptr_unused_tail(&p) == cap);
		while (nap--) {
			size_t tail = bl_ptr_unused_tail(&p);
			int r;

			len = rdlen(in);
			rdbytes(in, buf, len);
			r = bl_ptr_append(&p, buf, len);
			CHECK(r == (len > tail ? -ENOSPC : 0));
			if (r || !len || m->n + len > MAXLEN)
				continue;
			/* the new bytes continue the segment appended before */
			CHECK(bl_ptr_slice(&q, &p, p.len - len, len) == 0);
			snap_take(&s);
			ret = bl_list_append_ptr(l, &q);
			bl_ptr_release(&q);
			if (ret) {
				/* checked here: earlier appends did happen */
				CHECK(ret == -ENOMEM && snap_same(&s));
				snap_free(&s);
				ret = 1;
				break;
			}
			snap_free(&s);
			m_append(m, buf, len);
		}
		bl_ptr_release(&p);
		break;
	}
	case 24:		/* appends come from a named pool, or not */
		bl_list_set_pool(l, rd8(in) & 1 ? fz_pool : NULL);
		ret = 0;
		break;
	case 25: {		/* hexdump, against hexdump -C's layout */
		char *got = NULL, *want = NULL;
		size_t gn = 0, wn = 0;
		FILE *f;

		f = open_memstream(&got, &gn);
		CHECK(f);
		ret = bl_list_hexdump(l, f);
		CHECK(fclose(f) == 0);
		f = open_memstream(&want, &wn);
		CHECK(f);
		ref_hexdump(m->b, m->n, f);
		CHECK(fclose(f) == 0);
		CHECK(ret == 0 && gn == wn && !memcmp(got, want, gn));
		free(got);
		free(want);
		break;
	}
	}
	return ret;
}

#define NOPS 26

static void init_once(void)
{
	static bool done;
	struct bl_allocator a = { fz_alloc, fz_free, NULL };

	if (done)
		return;
	done = true;
	/* the thread cache would hide use-after-free from ASan */
	bl_pool_cache_enable(false);
	bl_allocator_set(&a);
	fz_pool = bl_pool_create("fuzz", NULL);
	CHECK(fz_pool);
	page = (size_t)sysconf(_SC_PAGESIZE);
	stat_page = mmap(NULL, page, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(stat_page != MAP_FAILED);
	for (size_t k = 0; k < page; k++)
		stat_page[k] = (uint8_t)(k * 7 + 3);
	CHECK(mprotect(stat_page, page, PROT_READ) == 0);
	for (int k = 0; k < NL; k++) {
		bl_list_init(&L[k]);
		m_clear(&M[k]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	long live0;

	init_once();
	live0 = fz_live;
	for (int nops = 0; in.n && nops < MAXOPS; nops++) {
		uint8_t op = rd8(&in);
		bool inject = op >= 0xe0, refused;
		struct snap s;
		int ret;

		if (inject) {
			/* the next operation meets a refused allocation */
			uint8_t f = rd8(&in);

			arm(1 + (f & 63), f & 64);
			op = rd8(&in);
		}
		snap_take(&s);
		ret = step(&in, op % NOPS);
		refused = fz_failed;
		arm(0, false);
		if (ret < 0 && ret != -EINVAL && ret != -ERANGE) {
			/* only a refused allocation may make a call fail */
			CHECK(ret == -ENOMEM && refused);
		}
		if (ret < 0)
			CHECK(snap_same(&s));
		snap_free(&s);
		check_all();
	}
	for (int k = 0; k < NL; k++) {
		bl_list_clear(&L[k]);
		m_clear(&M[k]);
	}
	CHECK(fz_live == live0);
	CHECK(claimed_live == 0);
	return 0;
}
