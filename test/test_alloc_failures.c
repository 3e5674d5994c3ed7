/* SPDX-License-Identifier: MIT */
/*
 * test_alloc_failures.c - failure atomicity: every public operation that can
 * allocate is run with an allocator that fails its Nth allocation, for
 * N = 1, 2, 3, ... (once, and from N on), until it succeeds without a
 * failure being hit.  Each run must either succeed with the right result or
 * return -ENOMEM (NULL for constructors) with every argument as it was:
 * same bytes, length, segments (the same memory), reference counts, slice
 * and cursor.  After each run everything is released and the allocator must
 * hold no live byte.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <bufferlist/lz4.h>
#include "testutil.h"

#define DATA_LEN	((2u << 20) + 4096)
#define STATIC_LEN	(64u << 10)
#define MAX_POINTS	100000

/*
 * The lz4 layer may not be linked yet while it is being written: weak
 * references let its cases report "not built" instead of failing to link.
 */
#pragma weak bl_lz4_compress
#pragma weak bl_lz4_decompress
#pragma weak bl_lz4_decoder_new
#pragma weak bl_lz4_decoder_feed
#pragma weak bl_lz4_decoder_end
#pragma weak bl_lz4_decoder_free

static unsigned char DATA[DATA_LEN];
static unsigned char static_buf[STATIC_LEN];
static unsigned char static_pristine[STATIC_LEN];
/* the pool "test_alloc_failures": it must end empty */
static struct bl_pool *test_pool;
static char file_path[4096];		/* DATA_LEN bytes of DATA */
static int file_fd = -1;

/* ---- snapshots of the arguments ------------------------------------------ */

struct lsnap {
	unsigned char *bytes;
	size_t len;
	unsigned nb;
	struct iovec *iov;		/* where every segment lives */
	struct bl_raw **raw;		/* the raw under every segment */
	unsigned *nref;
};

static void lsnap_take(struct lsnap *s, const struct bl_list *l)
{
	struct bl_ptr p = BL_PTR_INIT;
	int rc;

	s->len = bl_list_length(l);
	s->nb = bl_list_num_buffers(l);
	s->bytes = tu_flatten(l);
	s->iov = calloc(s->nb + 1, sizeof(*s->iov));
	s->raw = calloc(s->nb + 1, sizeof(*s->raw));
	s->nref = calloc(s->nb + 1, sizeof(*s->nref));
	ck_assert(s->iov && s->raw && s->nref);
	rc = bl_list_to_iovec(l, 0, s->iov, (int)s->nb);
	ck_assert_int_eq(rc, (int)s->nb);
	for (unsigned i = 0; i < s->nb; i++) {
		TU_REQUIRE(bl_list_get_ptr(l, i, &p) == 0);
		s->raw[i] = p.raw;
		bl_ptr_release(&p);
	}
	/* after every release: the counts the list alone accounts for */
	for (unsigned i = 0; i < s->nb; i++)
		s->nref[i] = bl_raw_nref(s->raw[i]);
}

static void lsnap_free(struct lsnap *s)
{
	free(s->bytes);
	free(s->iov);
	free(s->raw);
	free(s->nref);
	memset(s, 0, sizeof(*s));
}

/* ---- one run of one operation -------------------------------------------- */

struct fctx {
	struct bl_list a, b, c;
	struct bl_ptr p, q;
	bool p_is_q;		/* p is a value copy of q (one reference) */
	struct bl_raw *r;
	struct bl_iter it;
	bool it_used;
	size_t it_off;
	void *mem;		/* caller memory for bl_raw_claim */
	unsigned claim_calls;
	char *cstr;
	struct bl_lz4_decoder *dec;
	unsigned char *pbytes;	/* p's bytes before the call */
	unsigned k, m, flag;	/* case parameters */
	/* as they were before the call */
	struct lsnap sa, sb, sc;
	struct bl_ptr p0;
	unsigned p_nref;
	/* for the messages */
	const char *name;
	uint64_t n;
	int sticky;
	int rc;
};

struct fcase {
	const char *name;
	unsigned k, m, flag;
	void (*setup)(struct fctx *);
	int (*op)(struct fctx *);
	void (*ok)(struct fctx *);
	bool must_alloc;	/* by design the call allocates */
};

/*
 * Not ck_assert_msg(): Check records each one that passes with a write(2),
 * and the snapshots check every segment of every run (a million a run).
 */
#define FA(x, cond, fmt, ...)						\
	do {								\
		if (!(cond))						\
			ck_abort_msg("%s (k=%u m=%u flag=%u), allocation %" \
				     PRIu64 " failing%s: " fmt, (x)->name, \
				     (x)->k, (x)->m, (x)->flag, (x)->n,	\
				     (x)->sticky ? " (sticky)" : "",	\
				     ##__VA_ARGS__);			\
	} while (0)

static void lsnap_check(struct fctx *x, const struct lsnap *s,
			const struct bl_list *l, const char *which)
{
	struct iovec *iov = calloc(s->nb + 1, sizeof(*iov));
	unsigned char *bytes;
	int rc;

	ck_assert_ptr_nonnull(iov);
	rc = bl__list_validate(l);
	FA(x, rc == 0, "list %s: validate = %d after the failure", which, rc);
	FA(x, bl_list_length(l) == s->len, "list %s: length %zu -> %zu", which,
	   s->len, bl_list_length(l));
	FA(x, bl_list_num_buffers(l) == s->nb, "list %s: %u -> %u segments",
	   which, s->nb, bl_list_num_buffers(l));
	bytes = tu_flatten(l);
	FA(x, s->len == 0 || memcmp(bytes, s->bytes, s->len) == 0,
	   "list %s: bytes changed", which);
	free(bytes);
	rc = bl_list_to_iovec(l, 0, iov, (int)s->nb);
	FA(x, rc == (int)s->nb, "list %s: to_iovec = %d", which, rc);
	for (unsigned i = 0; i < s->nb; i++)
		FA(x, iov[i].iov_base == s->iov[i].iov_base &&
		   iov[i].iov_len == s->iov[i].iov_len,
		   "list %s: segment %u moved (%p, %zu) -> (%p, %zu)", which,
		   i, s->iov[i].iov_base, s->iov[i].iov_len, iov[i].iov_base,
		   iov[i].iov_len);
	for (unsigned i = 0; i < s->nb; i++)
		FA(x, bl_raw_nref(s->raw[i]) == s->nref[i],
		   "list %s: segment %u's raw nref %u -> %u", which, i,
		   s->nref[i], bl_raw_nref(s->raw[i]));
	free(iov);
}

/* Asserts that @l holds the concatenation of up to three byte runs. */
static void expect3(struct fctx *x, const struct bl_list *l,
		    const char *which, const void *d1, size_t n1,
		    const void *d2, size_t n2, const void *d3, size_t n3)
{
	unsigned char *want = malloc(n1 + n2 + n3 + 1), *got;
	size_t len = n1 + n2 + n3;
	int rc;

	ck_assert_ptr_nonnull(want);
	if (n1)
		d1 ? memcpy(want, d1, n1) : memset(want, 0, n1);
	if (n2)
		d2 ? memcpy(want + n1, d2, n2) : memset(want + n1, 0, n2);
	if (n3)
		d3 ? memcpy(want + n1 + n2, d3, n3) :
		     memset(want + n1 + n2, 0, n3);
	rc = bl__list_validate(l);
	FA(x, rc == 0, "list %s: validate = %d after success", which, rc);
	FA(x, bl_list_length(l) == len, "list %s: %zu bytes, expected %zu",
	   which, bl_list_length(l), len);
	got = tu_flatten(l);
	FA(x, len == 0 || memcmp(got, want, len) == 0,
	   "list %s: wrong bytes after success", which);
	free(got);
	free(want);
}

static void expect_unchanged(struct fctx *x, const struct bl_list *l,
			     const struct lsnap *s, const char *which)
{
	expect3(x, l, which, s->bytes, s->len, NULL, 0, NULL, 0);
}

/* ---- building arguments (with the allocator not failing) ----------------- */

/* @k segments of @seglen bytes, each in its own raw, bytes from DATA[@at] */
static void add_segs(struct bl_list *l, unsigned k, size_t seglen, size_t at)
{
	for (unsigned i = 0; i < k; i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_ptr_alloc(&p, seglen), 0);
		memcpy(bl_ptr_data(&p), DATA + at + i * seglen, seglen);
		ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
	}
}

/* A list whose append buffer has no room left. */
static void make_abuf_full(struct bl_list *l)
{
	ck_assert_int_eq(bl_list_append(l, DATA + 11, 10), 0);
	ck_assert_int_eq(bl_list_append(l, DATA + 100, bl__list_abuf_room(l)),
			 0);
	ck_assert_uint_eq(bl__list_abuf_room(l), 0);
}

/* flag 0: empty; 1: append buffer full; 2: k segments (own raws) */
static void setup_dst(struct fctx *x)
{
	if (x->flag == 1)
		make_abuf_full(&x->a);
	else if (x->flag == 2)
		add_segs(&x->a, x->k, 100, 1000);
}

static void setup_ab(struct fctx *x)
{
	add_segs(&x->a, x->k, 100, 1000);
	add_segs(&x->b, x->m, 50, 50000);
}

static void setup_ptr(struct fctx *x)
{
	add_segs(&x->a, x->k, 100, 1000);
	ck_assert_int_eq(bl_ptr_alloc(&x->p, 200), 0);
	memcpy(bl_ptr_data(&x->p), DATA + 7777, 200);
	x->pbytes = malloc(200);
	ck_assert_ptr_nonnull(x->pbytes);
	memcpy(x->pbytes, DATA + 7777, 200);
}

/* p is output only: it starts as a copy of q, which keeps the reference */
static void setup_ptr_out(struct fctx *x)
{
	ck_assert_int_eq(bl_ptr_alloc(&x->q, 10), 0);
	x->p = x->q;
	x->p_is_q = true;
}

static void claim_cb(void *data, size_t len, void *opaque)
{
	struct fctx *x = opaque;

	(void)len;
	x->claim_calls++;
	free(data);
}

static void setup_claim_mem(struct fctx *x)
{
	x->mem = malloc(x->k ? x->k : 1);
	ck_assert_ptr_nonnull(x->mem);
	memcpy(x->mem, DATA, x->k);
}

/* k segments of 100 bytes, every other one on static memory */
static void setup_static(struct fctx *x)
{
	for (unsigned i = 0; i < x->k; i++) {
		struct bl_ptr p;
		struct bl_raw *r;

		if (i % 2 == 0) {
			r = bl_raw_create_static(static_buf + 100 * i, 100);
			ck_assert_ptr_nonnull(r);
			bl_ptr_from_raw(&p, r);
			ck_assert_int_eq(bl_list_append_ptr_move(&x->a, &p),
					 0);
		} else {
			add_segs(&x->a, 1, 100, 3000 + 100 * i);
		}
	}
}

/* k segments that break 4096 alignment (100 bytes each, own raws) */
static void setup_misaligned(struct fctx *x)
{
	struct bl_ptr p, s;

	add_segs(&x->a, x->k, 100, 1000);
	/* and one slice at an odd address */
	ck_assert_int_eq(bl_ptr_alloc(&p, 300), 0);
	memcpy(bl_ptr_data(&p), DATA + 20000, 300);
	ck_assert_int_eq(bl_ptr_slice(&s, &p, 3, 200), 0);
	bl_ptr_release(&p);
	ck_assert_int_eq(bl_list_append_ptr_move(&x->a, &s), 0);
}

static void setup_iter(struct fctx *x)
{
	add_segs(&x->b, x->k, 50, 50000);
	add_segs(&x->a, x->m, 100, 1000);
	ck_assert_int_eq(bl_iter_init(&x->it, &x->b, 30), 0);
	x->it_used = true;
}

/* b = u32 length + k shared segments; a has m segments */
static void setup_decode(struct fctx *x)
{
	struct bl_list t;

	bl_list_init(&t);
	add_segs(&t, x->k, 50, 50000);
	ck_assert_int_eq(bl_encode_list(&x->b, &t), 0);
	bl_list_clear(&t);
	add_segs(&x->a, x->m, 100, 1000);
	ck_assert_int_eq(bl_iter_init(&x->it, &x->b, 0), 0);
	x->it_used = true;
}

/* ---- the operations and what success must look like ---------------------- */

/* constructors: raw */
static int op_raw_create(struct fctx *x)
{
	x->r = bl_raw_create(x->k);
	return x->r ? 0 : -ENOMEM;
}

static int op_raw_create_empty(struct fctx *x)
{
	x->r = bl_raw_create_empty(x->k);
	return x->r ? 0 : -ENOMEM;
}

static int op_raw_create_aligned(struct fctx *x)
{
	x->r = bl_raw_create_aligned(x->k, x->m);
	return x->r ? 0 : -ENOMEM;
}

static int op_raw_create_static(struct fctx *x)
{
	x->r = bl_raw_create_static(static_buf, x->k);
	return x->r ? 0 : -ENOMEM;
}

static int op_raw_claim(struct fctx *x)
{
	x->r = bl_raw_claim(x->mem, x->k, claim_cb, x);
	if (!x->r) {
		FA(x, x->claim_calls == 0, "failed claim called the free "
		   "function");
		return -ENOMEM;
	}
	x->mem = NULL;	/* the raw owns it now */
	return 0;
}

static void ok_raw(struct fctx *x)
{
	FA(x, x->r != NULL && bl_raw_length(x->r) == x->k &&
	   bl_raw_nref(x->r) == 1, "new raw: length %zu nref %u",
	   x->r ? bl_raw_length(x->r) : 0, x->r ? bl_raw_nref(x->r) : 0);
	if (x->m > 1)
		FA(x, (uintptr_t)bl_raw_data(x->r) % x->m == 0,
		   "data %p not aligned to %u", (void *)bl_raw_data(x->r),
		   x->m);
}

static void ok_raw_claim(struct fctx *x)
{
	ok_raw(x);
	FA(x, x->claim_calls == 0, "free function called while referenced");
	bl_raw_put(x->r);
	x->r = NULL;
	FA(x, x->claim_calls == 1, "free function called %u times",
	   x->claim_calls);
}

/* constructors: ptr (p is output only) */
static int op_ptr_alloc(struct fctx *x)
{
	return bl_ptr_alloc(&x->p, x->k);
}

static int op_ptr_reserve(struct fctx *x)
{
	return bl_ptr_reserve(&x->p, x->k);
}

static void ok_ptr(struct fctx *x, size_t len, size_t tail)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	FA(x, x->p.raw && x->p.raw != x->q.raw && x->p.off == 0 &&
	   x->p.len == len && bl_ptr_unused_tail(&x->p) == tail,
	   "new slice {%zu, %zu} room %zu", x->p.off, x->p.len,
	   bl_ptr_unused_tail(&x->p));
	FA(x, bl_raw_nref(x->p.raw) == 1 && bl_raw_nref(x->q.raw) == 1,
	   "nref %u / %u", bl_raw_nref(x->p.raw), bl_raw_nref(x->q.raw));
	bl_ptr_release(&x->p);
	x->p_is_q = false;
}

static void ok_ptr_alloc(struct fctx *x)
{
	ok_ptr(x, x->k, 0);
}

static void ok_ptr_reserve(struct fctx *x)
{
	ok_ptr(x, 0, x->k);
}

/* appends of caller bytes */
static int op_append(struct fctx *x)
{
	return bl_list_append(&x->a, DATA + 7, x->m);
}

static void ok_append(struct fctx *x)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, DATA + 7, x->m, NULL,
		0);
}

static int op_append_zero(struct fctx *x)
{
	return bl_list_append_zero(&x->a, x->m);
}

static void ok_append_zero(struct fctx *x)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, NULL, x->m, NULL, 0);
}

/* slices */
static int op_append_ptr(struct fctx *x)
{
	return bl_list_append_ptr(&x->a, &x->p);
}

static int op_append_ptr_move(struct fctx *x)
{
	return bl_list_append_ptr_move(&x->a, &x->p);
}

static int op_prepend_ptr(struct fctx *x)
{
	return bl_list_prepend_ptr(&x->a, &x->p);
}

static void ok_shared_ptr(struct fctx *x, bool prepend)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	FA(x, !memcmp(&x->p, &x->p0, sizeof(x->p)) &&
	   bl_raw_nref(x->p.raw) == x->p_nref + 1,
	   "shared slice: nref %u -> %u", x->p_nref, bl_raw_nref(x->p.raw));
	if (prepend)
		expect3(x, &x->a, "a", x->pbytes, 200, x->sa.bytes,
			x->sa.len, NULL, 0);
	else
		expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, x->pbytes, 200,
			NULL, 0);
}

static void ok_append_ptr(struct fctx *x)
{
	ok_shared_ptr(x, false);
}

static void ok_prepend_ptr(struct fctx *x)
{
	ok_shared_ptr(x, true);
}

static void ok_append_ptr_move(struct fctx *x)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	FA(x, x->p.raw == NULL && x->p.off == 0 && x->p.len == 0,
	   "moved slice left {%p, %zu, %zu}", (void *)x->p.raw, x->p.off,
	   x->p.len);
	FA(x, bl_raw_nref(x->p0.raw) == x->p_nref, "moved: nref %u -> %u",
	   x->p_nref, bl_raw_nref(x->p0.raw));
	expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, x->pbytes, 200, NULL,
		0);
}

/* lists */
static int op_append_list(struct fctx *x)
{
	return bl_list_append_list(&x->a, &x->b);
}

static void ok_append_list(struct fctx *x)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, x->sb.bytes, x->sb.len,
		NULL, 0);
	expect_unchanged(x, &x->b, &x->sb, "b");
}

static int op_claim_append(struct fctx *x)
{
	return bl_list_claim_append(&x->a, &x->b);
}

static int op_claim_prepend(struct fctx *x)
{
	return bl_list_claim_prepend(&x->a, &x->b);
}

static void ok_claim(struct fctx *x, bool prepend)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	if (prepend)
		expect3(x, &x->a, "a", x->sb.bytes, x->sb.len, x->sa.bytes,
			x->sa.len, NULL, 0);
	else
		expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, x->sb.bytes,
			x->sb.len, NULL, 0);
	FA(x, bl_list_length(&x->b) == 0 && bl_list_num_buffers(&x->b) == 0,
	   "claimed list keeps %zu bytes", bl_list_length(&x->b));
	/* moved, not shared: the counts are the ones the lists had */
	for (unsigned i = 0; i < x->sb.nb; i++)
		FA(x, bl_raw_nref(x->sb.raw[i]) == x->sb.nref[i],
		   "claimed segment %u: nref %u -> %u", i, x->sb.nref[i],
		   bl_raw_nref(x->sb.raw[i]));
}

static void ok_claim_append(struct fctx *x)
{
	ok_claim(x, false);
}

static void ok_claim_prepend(struct fctx *x)
{
	ok_claim(x, true);
}

/*
 * splice: a has k segments of 100 bytes.  flag 0: cut inside one segment,
 * no claim_by; 1: the same into c (m segments); 2: from inside one segment
 * to inside another, into c; 3: segments 5 .. k - 6 whole, into c.
 */
static void setup_splice(struct fctx *x)
{
	add_segs(&x->a, x->k, 100, 1000);
	add_segs(&x->c, x->m, 100, 90000);
}

static void splice_range(const struct fctx *x, size_t *off, size_t *len)
{
	if (x->flag == 2) {
		*off = 150;
		*len = 100 * (size_t)x->k - 200;
	} else if (x->flag == 3) {
		*off = 500;
		*len = 100 * (size_t)x->k - 1000;
	} else {
		*off = 100 * (size_t)(x->k / 2) + 10;
		*len = 50;
	}
}

static int op_splice(struct fctx *x)
{
	size_t off, len;

	splice_range(x, &off, &len);
	return bl_list_splice(&x->a, off, len, x->flag ? &x->c : NULL);
}

static void ok_splice(struct fctx *x)
{
	size_t off, len;

	splice_range(x, &off, &len);
	FA(x, x->rc == 0, "rc %d", x->rc);
	expect3(x, &x->a, "a", x->sa.bytes, off, x->sa.bytes + off + len,
		x->sa.len - off - len, NULL, 0);
	if (x->flag)
		expect3(x, &x->c, "c", x->sc.bytes, x->sc.len,
			x->sa.bytes + off, len, NULL, 0);
	else
		expect_unchanged(x, &x->c, &x->sc, "c");
}

/*
 * substr_of: a (m segments) = part of b (k segments); flag 1: a = part of
 * a; flag 2: a = 30 bytes inside segment 1 of b (one slot, no allocation).
 */
static size_t substr_off(const struct fctx *x)
{
	return x->flag == 2 ? 60 : 25;
}

static size_t substr_len(const struct fctx *x)
{
	return x->flag == 2 ? 30 : 50 * (size_t)x->k - 60;
}

static int op_substr(struct fctx *x)
{
	if (x->flag == 1)
		return bl_list_substr_of(&x->a, &x->a, 10,
					 100 * (size_t)x->k - 20);
	return bl_list_substr_of(&x->a, &x->b, substr_off(x), substr_len(x));
}

static void setup_substr(struct fctx *x)
{
	if (x->flag == 1) {
		add_segs(&x->a, x->k, 100, 1000);
	} else {
		add_segs(&x->b, x->k, 50, 50000);
		add_segs(&x->a, x->m, 100, 1000);
	}
}

static void ok_substr(struct fctx *x)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	if (x->flag == 1) {
		expect3(x, &x->a, "a", x->sa.bytes + 10, x->sa.len - 20, NULL,
			0, NULL, 0);
	} else {
		expect3(x, &x->a, "a", x->sb.bytes + substr_off(x),
			substr_len(x), NULL, 0, NULL, 0);
		expect_unchanged(x, &x->b, &x->sb, "b");
	}
}

/* copy_in / zero over static segments (each needs a private copy) */
static int op_copy_in(struct fctx *x)
{
	size_t len = 100 * (size_t)x->k - 100;

	if (x->flag)
		return bl_list_zero(&x->a, 50, len);
	return bl_list_copy_in(&x->a, 50, len, DATA + 999);
}

static void ok_copy_in(struct fctx *x)
{
	size_t len = 100 * (size_t)x->k - 100;

	FA(x, x->rc == 0, "rc %d", x->rc);
	expect3(x, &x->a, "a", x->sa.bytes, 50, x->flag ? NULL : DATA + 999,
		len, x->sa.bytes + 50 + len, x->sa.len - 50 - len);
}

/* rebuilds: flag 0 rebuild, 1 rebuild_aligned(4096), 2 size 512 / memory
 * 4096 / at most 2 segments, 3 c_str */
static int op_rebuild(struct fctx *x)
{
	switch (x->flag) {
	case 0:
		return bl_list_rebuild(&x->a);
	case 1:
		return bl_list_rebuild_aligned(&x->a, 4096);
	case 2:
		return bl_list_rebuild_aligned_size_and_memory(&x->a, 512,
							       4096, 2);
	default:
		x->cstr = bl_list_c_str(&x->a);
		return x->cstr ? 0 : -ENOMEM;
	}
}

static void ok_rebuild(struct fctx *x)
{
	struct iovec iov[8];
	int n;

	FA(x, x->rc >= 0 && x->rc <= 1, "rc %d", x->rc);
	expect_unchanged(x, &x->a, &x->sa, "a");
	n = bl_list_to_iovec(&x->a, 0, iov, 8);
	FA(x, n >= 1, "to_iovec = %d", n);
	switch (x->flag) {
	case 0:
	case 3:
		FA(x, n == 1, "%d segments after rebuild", n);
		if (x->flag == 3)
			FA(x, x->cstr == iov[0].iov_base, "c_str pointer");
		break;
	case 1:
		FA(x, x->rc == 1, "rebuild_aligned of misaligned data = %d",
		   x->rc);
		for (int i = 0; i < n; i++)
			FA(x, (uintptr_t)iov[i].iov_base % 4096 == 0 &&
			   (i == n - 1 || iov[i].iov_len % 4096 == 0),
			   "segment %d (%p, %zu) misaligned", i,
			   iov[i].iov_base, iov[i].iov_len);
		break;
	default:
		FA(x, x->rc == 1 && n <= 2, "rc %d, %d segments", x->rc, n);
		for (int i = 0; i < n; i++)
			FA(x, (uintptr_t)iov[i].iov_base % 4096 == 0 &&
			   (i == n - 1 || iov[i].iov_len % 512 == 0),
			   "segment %d (%p, %zu) misaligned", i,
			   iov[i].iov_base, iov[i].iov_len);
		break;
	}
}

/* iterator: copy_list from b (k segments) at 30 into a (m segments) */
static int op_iter_copy_list(struct fctx *x)
{
	return bl_iter_copy_list(&x->it, 50 * (size_t)x->k - 60, &x->a);
}

static void ok_iter_copy_list(struct fctx *x)
{
	size_t len = 50 * (size_t)x->k - 60;

	FA(x, x->rc == 0, "rc %d", x->rc);
	expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, x->sb.bytes + 30, len,
		NULL, 0);
	expect_unchanged(x, &x->b, &x->sb, "b");
	FA(x, bl_iter_offset(&x->it) == 30 + len, "cursor at %zu",
	   bl_iter_offset(&x->it));
}

/* encoders into a (setup_dst); m picks the encoder */
static int op_encode(struct fctx *x)
{
	switch (x->m) {
	case 0:
		return bl_encode_u8(&x->a, 0xa5);
	case 1:
		return bl_encode_u16(&x->a, 0xa55a);
	case 2:
		return bl_encode_u32(&x->a, 0xdeadbeefu);
	case 3:
		return bl_encode_u64(&x->a, 0x0123456789abcdefull);
	case 4:
		return bl_encode_varint(&x->a, 0x0123456789abcdefull);
	case 5:
		return bl_encode_bytes(&x->a, DATA + 5, 100);
	case 6:
		return bl_encode_bytes(&x->a, DATA + 5, 100000);
	default:
		return bl_encode_list(&x->a, &x->b);
	}
}

static void setup_encode(struct fctx *x)
{
	setup_dst(x);
	if (x->m == 7)
		add_segs(&x->b, 3, 50, 50000);
}

static void ok_encode(struct fctx *x)
{
	static const unsigned char u16[] = { 0x5a, 0xa5 };
	static const unsigned char u32[] = { 0xef, 0xbe, 0xad, 0xde };
	static const unsigned char u64[] = { 0xef, 0xcd, 0xab, 0x89,
					     0x67, 0x45, 0x23, 0x01 };
	static const unsigned char u8[] = { 0xa5 };
	unsigned char var[10], len[4];
	uint64_t v = 0x0123456789abcdefull;
	size_t nv = 0, n;

	FA(x, x->rc == 0, "rc %d", x->rc);
	switch (x->m) {
	case 0:
		expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, u8, 1, NULL, 0);
		break;
	case 1:
		expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, u16, 2, NULL,
			0);
		break;
	case 2:
		expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, u32, 4, NULL,
			0);
		break;
	case 3:
		expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, u64, 8, NULL,
			0);
		break;
	case 4:
		do {
			var[nv++] = (unsigned char)((v & 0x7f) |
						    (v > 0x7f ? 0x80 : 0));
			v >>= 7;
		} while (v);
		expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, var, nv, NULL,
			0);
		break;
	default:
		n = x->m == 5 ? 100 : x->m == 6 ? 100000 : x->sb.len;
		for (int i = 0; i < 4; i++)
			len[i] = (unsigned char)(n >> (8 * i));
		expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, len, 4,
			x->m == 7 ? x->sb.bytes : DATA + 5, n);
		break;
	}
}

/* decode_bytes from b (u32 + k segments) into a (m segments) */
static int op_decode_bytes(struct fctx *x)
{
	return bl_decode_bytes(&x->it, &x->a);
}

static void ok_decode_bytes(struct fctx *x)
{
	FA(x, x->rc == 0, "rc %d", x->rc);
	expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, x->sb.bytes + 4,
		x->sb.len - 4, NULL, 0);
	FA(x, bl_iter_offset(&x->it) == x->sb.len, "cursor at %zu of %zu",
	   bl_iter_offset(&x->it), x->sb.len);
}

/* raws in a named pool */
static int op_raw_create_in(struct fctx *x)
{
	x->r = x->m ? bl_raw_create_aligned_in(test_pool, x->k, x->m) :
		      bl_raw_create_in(test_pool, x->k);
	return x->r ? 0 : -ENOMEM;
}

static void ok_raw_in(struct fctx *x)
{
	ok_raw(x);
	FA(x, bl_raw_pool(x->r) == test_pool, "raw in pool %s",
	   bl_pool_name(bl_raw_pool(x->r)));
}

/* compact: k segments, each 10 bytes of its own 4096-byte raw */
static void setup_wasteful(struct fctx *x)
{
	for (unsigned i = 0; i < x->k; i++) {
		struct bl_ptr p, s;

		ck_assert_int_eq(bl_ptr_alloc(&p, 4096), 0);
		memcpy(bl_ptr_data(&p), DATA + 4096 * i, 4096);
		ck_assert_int_eq(bl_ptr_slice(&s, &p, 100, 10), 0);
		bl_ptr_release(&p);
		ck_assert_int_eq(bl_list_append_ptr_move(&x->a, &s), 0);
	}
}

static int op_compact(struct fctx *x)
{
	ssize_t n = bl_list_compact(&x->a, 64);

	return n < 0 ? (int)n : (int)(n & 0x3fffffff);
}

static void ok_compact(struct fctx *x)
{
	FA(x, x->rc == 10 * (int)x->k, "compact copied %d of %u", x->rc,
	   10 * x->k);
	expect_unchanged(x, &x->a, &x->sa, "a");
	FA(x, bl_list_num_buffers(&x->a) == 1, "%u segments after compact",
	   bl_list_num_buffers(&x->a));
}

/* reading a file: flag 0 pread of m bytes at 123, 1 the whole file */
static int op_read(struct fctx *x)
{
	ssize_t n;

	if (x->flag)
		n = bl_list_read_file(&x->a, file_path);
	else
		n = bl_list_pread(&x->a, file_fd, x->m, 123);
	return n < 0 ? (int)n : (int)(n & 0x3fffffff);
}

static void ok_read(struct fctx *x)
{
	size_t at = x->flag ? 0 : 123, n = x->flag ? DATA_LEN : x->m;

	FA(x, x->rc == (int)n, "read %d of %zu", x->rc, n);
	expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, DATA + at, n, NULL, 0);
}

/* lz4: b holds k segments (flag 1: after 300000 zeros, several blocks) */
static void setup_lz4_in(struct fctx *x)
{
	if (x->flag)
		ck_assert_int_eq(bl_list_append_zero(&x->b, 300000), 0);
	add_segs(&x->b, x->k, 50, 50000);
	add_segs(&x->a, x->m, 100, 1000);
}

/* ... and c its compressed frame */
static void setup_lz4_frame(struct fctx *x)
{
	setup_lz4_in(x);
	ck_assert_int_gt(bl_lz4_compress(&x->b, &x->c, NULL), 0);
}

static void setup_lz4_decoder(struct fctx *x)
{
	setup_lz4_frame(x);
	x->dec = bl_lz4_decoder_new(0);
	ck_assert_ptr_nonnull(x->dec);
}

static int op_lz4_compress(struct fctx *x)
{
	ssize_t n = bl_lz4_compress(&x->b, &x->a, NULL);

	return n < 0 ? (int)n : (int)(n & 0x3fffffff);
}

static void ok_lz4_compress(struct fctx *x)
{
	struct bl_list frame, back;
	size_t len = bl_list_length(&x->a);
	ssize_t n;

	FA(x, x->rc > 0 && len == x->sa.len + (size_t)x->rc,
	   "compress returned %d, the list grew by %zu", x->rc,
	   len - x->sa.len);
	bl_list_init(&frame);
	bl_list_init(&back);
	ck_assert_int_eq(bl_list_substr_of(&frame, &x->a, x->sa.len,
					   (size_t)x->rc), 0);
	n = bl_lz4_decompress(&frame, &back, 0);
	FA(x, n == (ssize_t)x->sb.len, "the frame decodes to %zd bytes", n);
	expect_unchanged(x, &back, &x->sb, "decompressed");
	/* a keeps its old bytes in front */
	bl_list_clear(&back);
	ck_assert_int_eq(bl_list_substr_of(&back, &x->a, 0, x->sa.len), 0);
	expect_unchanged(x, &back, &x->sa, "a's old bytes");
	bl_list_clear(&frame);
	bl_list_clear(&back);
	expect_unchanged(x, &x->b, &x->sb, "b");
}

static int op_lz4_decompress(struct fctx *x)
{
	ssize_t n = bl_lz4_decompress(&x->c, &x->a, 0);

	return n < 0 ? (int)n : (int)(n & 0x3fffffff);
}

static int op_lz4_feed(struct fctx *x)
{
	ssize_t n = bl_lz4_decoder_feed(x->dec, &x->c, &x->a);

	return n < 0 ? (int)n : (int)(n & 0x3fffffff);
}

static void ok_lz4_decompress(struct fctx *x)
{
	FA(x, x->rc == (int)x->sb.len, "decoded %d of %zu", x->rc,
	   x->sb.len);
	expect3(x, &x->a, "a", x->sa.bytes, x->sa.len, x->sb.bytes, x->sb.len,
		NULL, 0);
	if (x->dec)
		FA(x, bl_lz4_decoder_end(x->dec) == 0, "decoder_end after the "
		   "whole frame");
}

static int op_lz4_decoder_new(struct fctx *x)
{
	x->dec = bl_lz4_decoder_new(x->k);
	return x->dec ? 0 : -ENOMEM;
}

static void ok_lz4_decoder_new(struct fctx *x)
{
	FA(x, x->dec != NULL && bl_lz4_decoder_end(x->dec) == 0,
	   "a new decoder has no incomplete frame");
}

/* ---- the driver ---------------------------------------------------------- */

static void ctx_init(struct fctx *x, const struct fcase *fc, uint64_t n,
		     int sticky)
{
	memset(x, 0, sizeof(*x));
	bl_list_init(&x->a);
	bl_list_init(&x->b);
	bl_list_init(&x->c);
	x->name = fc->name;
	x->k = fc->k;
	x->m = fc->m;
	x->flag = fc->flag;
	x->n = n;
	x->sticky = sticky;
}

static void ctx_snap(struct fctx *x)
{
	lsnap_take(&x->sa, &x->a);
	lsnap_take(&x->sb, &x->b);
	lsnap_take(&x->sc, &x->c);
	x->p0 = x->p;
	x->p_nref = x->p.raw ? bl_raw_nref(x->p.raw) : 0;
	if (x->it_used)
		x->it_off = bl_iter_offset(&x->it);
}

static void ctx_check_unchanged(struct fctx *x)
{
	lsnap_check(x, &x->sa, &x->a, "a");
	lsnap_check(x, &x->sb, &x->b, "b");
	lsnap_check(x, &x->sc, &x->c, "c");
	FA(x, !memcmp(&x->p, &x->p0, sizeof(x->p)),
	   "slice {%p, %zu, %zu} -> {%p, %zu, %zu}", (void *)x->p0.raw,
	   x->p0.off, x->p0.len, (void *)x->p.raw, x->p.off, x->p.len);
	if (x->p.raw)
		FA(x, bl_raw_nref(x->p.raw) == x->p_nref,
		   "slice's raw nref %u -> %u", x->p_nref,
		   bl_raw_nref(x->p.raw));
	if (x->it_used)
		FA(x, bl_iter_offset(&x->it) == x->it_off &&
		   bl_iter_remaining(&x->it) == x->sb.len - x->it_off,
		   "cursor moved %zu -> %zu", x->it_off,
		   bl_iter_offset(&x->it));
	FA(x, x->r == NULL, "constructor failed but returned a raw");
	if (x->dec)
		FA(x, bl_lz4_decoder_feed(x->dec, &x->c, &x->a) == -EINVAL,
		   "a decoder that failed accepted more input");
}

static void ctx_release(struct fctx *x)
{
	bl_list_clear(&x->a);
	bl_list_clear(&x->b);
	bl_list_clear(&x->c);
	if (x->p_is_q && !memcmp(&x->p, &x->q, sizeof(x->p)))
		x->p = (struct bl_ptr)BL_PTR_INIT;
	bl_ptr_release(&x->p);
	bl_ptr_release(&x->q);
	bl_raw_put(x->r);
	if (x->dec)
		bl_lz4_decoder_free(x->dec);
	free(x->mem);
	free(x->pbytes);
	lsnap_free(&x->sa);
	lsnap_free(&x->sb);
	lsnap_free(&x->sc);
}

static unsigned run_case(const struct fcase *fc, bool quiet)
{
	unsigned points[2] = { 0, 0 };
	struct tu_alloc_stats st;
	struct bl_pool_stats ps;
	struct fctx x;

	if (!strncmp(fc->name, "lz4", 3) && !bl_lz4_compress) {
		fprintf(stderr, "failure: %-20s not built, nothing tested\n",
			fc->name);
		return 0;
	}

	for (int sticky = 0; sticky < 2; sticky++) {
		for (uint64_t n = 1;; n++) {
			bool hit;

			ck_assert_msg(n < MAX_POINTS, "%s: no end in sight",
				      fc->name);
			tu_alloc_install(0, 0);
			ctx_init(&x, fc, n, sticky);
			if (fc->setup)
				fc->setup(&x);
			ctx_snap(&x);
			for (unsigned i = 0; i < STATIC_LEN; i += 4096)
				FA(&x, !memcmp(static_buf + i,
					       static_pristine + i, 4096),
				   "static memory written");
			tu_alloc_fail_at(n, sticky);
			x.rc = fc->op(&x);
			tu_alloc_stats(&st);
			tu_alloc_fail_at(0, 0);
			hit = st.failed > 0;
			if (x.rc < 0) {
				FA(&x, x.rc == -ENOMEM, "returned %d", x.rc);
				FA(&x, hit, "returned -ENOMEM but no "
				   "allocation failed");
				ctx_check_unchanged(&x);
			} else {
				fc->ok(&x);
			}
			FA(&x, !memcmp(static_buf, static_pristine,
				       STATIC_LEN), "static memory written");
			if (hit)
				points[sticky]++;
			ctx_release(&x);
			tu_alloc_stats(&st);
			bl_pool_get_stats(test_pool, &ps);
			FA(&x, ps.raws == 0 && ps.bytes == 0,
			   "pool %s accounts %" PRId64 " raws, %" PRId64
			   " bytes after release", ps.name, ps.raws, ps.bytes);
			FA(&x, st.live_bytes == 0 && st.allocs == st.frees,
			   "leak after %s: %" PRId64 " bytes in %" PRIu64
			   " blocks", x.rc < 0 ? "the failure" : "success",
			   st.live_bytes, st.allocs - st.frees);
			if (!hit)
				break;
		}
	}
	tu_alloc_uninstall();
	if (!quiet)
		fprintf(stderr, "failure: %-20s k=%-4u m=%-7u flag=%u: %3u "
			"failure points, %3u sticky\n", fc->name, fc->k,
			fc->m, fc->flag, points[0], points[1]);
	if (fc->must_alloc)
		ck_assert_msg(points[0] > 0 && points[1] > 0,
			      "%s (k=%u m=%u flag=%u) never allocated",
			      fc->name, fc->k, fc->m, fc->flag);
	return points[0] + points[1];
}

/* ---- the cases ----------------------------------------------------------- */

#define C(name, k, m, flag, setup, op, ok, must)			\
	{ name, k, m, flag, setup, op, ok, must }

static const struct fcase cases[] = {
	/* raw constructors */
	C("raw_create", 0, 0, 0, NULL, op_raw_create, ok_raw, true),
	C("raw_create", 100, 0, 0, NULL, op_raw_create, ok_raw, true),
	C("raw_create", 1u << 20, 0, 0, NULL, op_raw_create, ok_raw, true),
	C("raw_create_empty", 4000, 0, 0, NULL, op_raw_create_empty, ok_raw,
	  true),
	C("raw_create_aligned", 5000, 4096, 0, NULL, op_raw_create_aligned,
	  ok_raw, true),
	C("raw_create_aligned", 100, 64, 0, NULL, op_raw_create_aligned,
	  ok_raw, true),
	C("raw_create_static", 1000, 0, 0, NULL, op_raw_create_static, ok_raw,
	  true),
	C("raw_claim", 1000, 0, 0, setup_claim_mem, op_raw_claim,
	  ok_raw_claim, true),
	C("raw_create_in", 1000, 0, 0, NULL, op_raw_create_in, ok_raw_in,
	  true),
	C("raw_create_aligned_in", 5000, 4096, 0, NULL, op_raw_create_in,
	  ok_raw_in, true),
	/* ptr constructors */
	C("ptr_alloc", 100, 0, 0, setup_ptr_out, op_ptr_alloc, ok_ptr_alloc,
	  true),
	C("ptr_reserve", 4000, 0, 0, setup_ptr_out, op_ptr_reserve,
	  ok_ptr_reserve, true),
	/* appends of bytes: flag 0 empty, 1 append buffer full, 2 k segs */
	C("append", 0, 10, 0, setup_dst, op_append, ok_append, true),
	C("append", 0, 10, 1, setup_dst, op_append, ok_append, true),
	C("append", 2, 10, 2, setup_dst, op_append, ok_append, true),
	C("append", 10, 10, 2, setup_dst, op_append, ok_append, true),
	C("append", 70, 10, 2, setup_dst, op_append, ok_append, true),
	C("append", 0, 1u << 20, 0, setup_dst, op_append, ok_append, true),
	C("append", 3, (1u << 20) + 3, 2, setup_dst, op_append, ok_append,
	  true),
	C("append_zero", 0, 10, 0, setup_dst, op_append_zero, ok_append_zero,
	  true),
	C("append_zero", 0, 10, 1, setup_dst, op_append_zero, ok_append_zero,
	  true),
	C("append_zero", 70, 100000, 2, setup_dst, op_append_zero,
	  ok_append_zero, true),
	/* slices: a chunk fills at 2 (inline), then as chunks grow */
	C("append_ptr", 0, 0, 0, setup_ptr, op_append_ptr, ok_append_ptr,
	  false),
	C("append_ptr", 2, 0, 0, setup_ptr, op_append_ptr, ok_append_ptr,
	  true),
	C("append_ptr", 10, 0, 0, setup_ptr, op_append_ptr, ok_append_ptr,
	  false),
	C("append_ptr", 66, 0, 0, setup_ptr, op_append_ptr, ok_append_ptr,
	  false),
	C("append_ptr", 70, 0, 0, setup_ptr, op_append_ptr, ok_append_ptr,
	  false),
	C("append_ptr", 130, 0, 0, setup_ptr, op_append_ptr, ok_append_ptr,
	  false),
	C("append_ptr_move", 2, 0, 0, setup_ptr, op_append_ptr_move,
	  ok_append_ptr_move, true),
	C("append_ptr_move", 10, 0, 0, setup_ptr, op_append_ptr_move,
	  ok_append_ptr_move, false),
	C("append_ptr_move", 70, 0, 0, setup_ptr, op_append_ptr_move,
	  ok_append_ptr_move, false),
	C("prepend_ptr", 2, 0, 0, setup_ptr, op_prepend_ptr, ok_prepend_ptr,
	  true),
	C("prepend_ptr", 10, 0, 0, setup_ptr, op_prepend_ptr, ok_prepend_ptr,
	  false),
	C("prepend_ptr", 70, 0, 0, setup_ptr, op_prepend_ptr, ok_prepend_ptr,
	  false),
	/* lists */
	C("append_list", 2, 1, 0, setup_ab, op_append_list, ok_append_list,
	  true),
	C("append_list", 2, 3, 0, setup_ab, op_append_list, ok_append_list,
	  true),
	C("append_list", 10, 70, 0, setup_ab, op_append_list, ok_append_list,
	  true),
	C("append_list", 70, 130, 0, setup_ab, op_append_list,
	  ok_append_list, true),
	C("claim_append", 2, 1, 0, setup_ab, op_claim_append, ok_claim_append,
	  true),
	C("claim_append", 2, 2, 0, setup_ab, op_claim_append, ok_claim_append,
	  true),
	C("claim_append", 10, 2, 0, setup_ab, op_claim_append,
	  ok_claim_append, false),
	C("claim_append", 70, 2, 0, setup_ab, op_claim_append,
	  ok_claim_append, false),
	C("claim_append", 70, 70, 0, setup_ab, op_claim_append,
	  ok_claim_append, false),
	C("claim_prepend", 2, 1, 0, setup_ab, op_claim_prepend,
	  ok_claim_prepend, true),
	C("claim_prepend", 2, 2, 0, setup_ab, op_claim_prepend,
	  ok_claim_prepend, true),
	C("claim_prepend", 70, 2, 0, setup_ab, op_claim_prepend,
	  ok_claim_prepend, false),
	C("claim_prepend", 70, 70, 0, setup_ab, op_claim_prepend,
	  ok_claim_prepend, false),
	C("splice", 1, 0, 0, setup_splice, op_splice, ok_splice, false),
	C("splice", 2, 0, 0, setup_splice, op_splice, ok_splice, true),
	C("splice", 70, 0, 0, setup_splice, op_splice, ok_splice, false),
	C("splice", 1, 2, 1, setup_splice, op_splice, ok_splice, true),
	C("splice", 2, 2, 1, setup_splice, op_splice, ok_splice, true),
	C("splice", 70, 70, 1, setup_splice, op_splice, ok_splice, false),
	C("splice", 10, 2, 2, setup_splice, op_splice, ok_splice, true),
	C("splice", 70, 10, 2, setup_splice, op_splice, ok_splice, true),
	C("splice", 70, 2, 3, setup_splice, op_splice, ok_splice, true),
	C("splice", 30, 0, 3, setup_splice, op_splice, ok_splice, true),
	C("substr_of", 3, 0, 0, setup_substr, op_substr, ok_substr, true),
	C("substr_of", 10, 2, 0, setup_substr, op_substr, ok_substr, true),
	C("substr_of", 130, 70, 0, setup_substr, op_substr, ok_substr, true),
	C("substr_of", 10, 0, 1, setup_substr, op_substr, ok_substr, true),
	C("substr_of", 130, 0, 1, setup_substr, op_substr, ok_substr, true),
	C("substr_of", 10, 0, 2, setup_substr, op_substr, ok_substr, false),
	C("substr_of", 10, 3, 2, setup_substr, op_substr, ok_substr, false),
	/* writes onto static raws */
	C("copy_in", 2, 0, 0, setup_static, op_copy_in, ok_copy_in, true),
	C("copy_in", 10, 0, 0, setup_static, op_copy_in, ok_copy_in, true),
	C("copy_in", 70, 0, 0, setup_static, op_copy_in, ok_copy_in, true),
	C("zero", 10, 0, 1, setup_static, op_copy_in, ok_copy_in, true),
	/* copies into new raws */
	C("rebuild", 2, 0, 0, setup_misaligned, op_rebuild, ok_rebuild, true),
	C("rebuild", 70, 0, 0, setup_misaligned, op_rebuild, ok_rebuild,
	  true),
	C("rebuild_aligned", 2, 0, 1, setup_misaligned, op_rebuild,
	  ok_rebuild, true),
	C("rebuild_aligned", 70, 0, 1, setup_misaligned, op_rebuild,
	  ok_rebuild, true),
	C("rebuild_aligned_s_m", 2, 0, 2, setup_misaligned, op_rebuild,
	  ok_rebuild, true),
	C("rebuild_aligned_s_m", 70, 0, 2, setup_misaligned, op_rebuild,
	  ok_rebuild, true),
	C("c_str", 2, 0, 3, setup_misaligned, op_rebuild, ok_rebuild, true),
	C("c_str", 70, 0, 3, setup_misaligned, op_rebuild, ok_rebuild, true),
	C("compact", 1, 0, 0, setup_wasteful, op_compact, ok_compact, true),
	C("compact", 70, 0, 0, setup_wasteful, op_compact, ok_compact, true),
	/* reading files into new raws (of at most 1 MiB each) */
	C("pread", 0, 100, 0, NULL, op_read, ok_read, true),
	C("pread", 0, 2u << 20, 0, NULL, op_read, ok_read, true),
	C("read_file", 0, 0, 1, NULL, op_read, ok_read, true),
	/* lz4 */
	C("lz4_compress", 3, 0, 0, setup_lz4_in, op_lz4_compress,
	  ok_lz4_compress, true),
	C("lz4_compress", 130, 70, 1, setup_lz4_in, op_lz4_compress,
	  ok_lz4_compress, true),
	C("lz4_decompress", 3, 0, 0, setup_lz4_frame, op_lz4_decompress,
	  ok_lz4_decompress, true),
	C("lz4_decompress", 130, 70, 1, setup_lz4_frame, op_lz4_decompress,
	  ok_lz4_decompress, true),
	C("lz4_decoder_new", 0, 0, 0, NULL, op_lz4_decoder_new,
	  ok_lz4_decoder_new, false),
	C("lz4_decoder_feed", 3, 0, 0, setup_lz4_decoder, op_lz4_feed,
	  ok_lz4_decompress, true),
	C("lz4_decoder_feed", 130, 70, 1, setup_lz4_decoder, op_lz4_feed,
	  ok_lz4_decompress, true),
	/* iterator and codec */
	C("iter_copy_list", 10, 2, 0, setup_iter, op_iter_copy_list,
	  ok_iter_copy_list, true),
	C("iter_copy_list", 130, 70, 0, setup_iter, op_iter_copy_list,
	  ok_iter_copy_list, true),
	C("decode_bytes", 3, 2, 0, setup_decode, op_decode_bytes,
	  ok_decode_bytes, true),
	C("decode_bytes", 130, 70, 0, setup_decode, op_decode_bytes,
	  ok_decode_bytes, true),
};

/* encoders: every one into an empty list, a full append buffer, and a list
 * of 70 segments */
static const struct fcase encode_case_proto = C("encode", 0, 0, 0,
						setup_encode, op_encode,
						ok_encode, true);
static const char *const encode_names[] = {
	"encode_u8", "encode_u16", "encode_u32", "encode_u64",
	"encode_varint", "encode_bytes", "encode_bytes", "encode_list",
};
#define NENCODE (8 * 3)

START_TEST(fail_op)
{
	/* the call succeeds, or fails with -ENOMEM leaving its arguments
	 * exactly as they were, for every allocation that can fail */
	run_case(&cases[_i], false);
}
END_TEST

START_TEST(fail_encode)
{
	/* the same, for the encoders into lists of every shape */
	struct fcase fc = encode_case_proto;

	fc.name = encode_names[_i / 3];
	fc.m = (unsigned)_i / 3;
	fc.flag = (unsigned)_i % 3;
	fc.k = fc.flag == 2 ? 70 : 0;
	run_case(&fc, false);
}
END_TEST

/*
 * Where a list needs a new chunk depends on how chunks grow: sweep the
 * number of segments already there, so every chunk boundary up to
 * SWEEP_MAX segments is crossed, whatever the growth policy.
 */
#define SWEEP_MAX 140
static const struct fcase sweeps[] = {
	C("append_ptr", 0, 0, 0, setup_ptr, op_append_ptr, ok_append_ptr,
	  false),
	C("append_ptr_move", 0, 0, 0, setup_ptr, op_append_ptr_move,
	  ok_append_ptr_move, false),
	C("prepend_ptr", 0, 0, 0, setup_ptr, op_prepend_ptr, ok_prepend_ptr,
	  false),
	C("append", 0, 10, 2, setup_dst, op_append, ok_append, false),
	C("claim_append", 0, 2, 0, setup_ab, op_claim_append, ok_claim_append,
	  false),
	C("claim_prepend", 0, 2, 0, setup_ab, op_claim_prepend,
	  ok_claim_prepend, false),
	C("splice", 0, 0, 0, setup_splice, op_splice, ok_splice, false),
	C("splice", 0, 2, 1, setup_splice, op_splice, ok_splice, false),
};

START_TEST(fail_sweep)
{
	/* failure atomicity at every chunk boundary of the list */
	struct fcase fc = sweeps[_i];
	bool alloc[SWEEP_MAX + 2] = { false };
	char at[1024];
	size_t used = 0;
	unsigned total = 0, where = 0, p, k0;

	for (unsigned k = fc.name[0] == 's' ? 1 : 0; k <= SWEEP_MAX; k++) {
		fc.k = k;
		p = run_case(&fc, true);
		total += p;
		alloc[k] = p > 0;
		where += alloc[k];
	}
	/* the k that allocated, as ranges: "2,10-19,26" */
	at[0] = 0;
	for (unsigned k = 0; k <= SWEEP_MAX; k++) {
		if (!alloc[k])
			continue;
		for (k0 = k; alloc[k + 1]; k++)
			;
		if (used < sizeof(at) - 24)
			used += (size_t)snprintf(at + used, sizeof(at) - used,
						 k0 == k ? "%s%u" : "%s%u-%u",
						 used ? "," : "", k0, k);
	}
	fprintf(stderr, "failure: %-20s k=0..%u m=%-4u flag=%u: %3u failure "
		"points (both variants), allocating at k=%s\n", fc.name,
		SWEEP_MAX, fc.m, fc.flag, total, at);
	/*
	 * Past the inline slots, appends cross at least two chunk boundaries.
	 * Prepends allocate only when the inline slots are full (a list that
	 * outgrew them keeps its slices in heap chunks and prepends inline),
	 * so they must allocate somewhere, not at every boundary.
	 */
	ck_assert_msg(where >= (strstr(fc.name, "prepend") ? 1u : 3u),
		      "%s: allocations only at k=%s", fc.name, at);
}
END_TEST

int main(void)
{
	const struct tu_loop enomem_loops[] = {
		{ fail_op, 0, (int)(sizeof(cases) / sizeof(cases[0])) },
		{ fail_encode, 0, NENCODE },
		{ fail_sweep, 0, (int)(sizeof(sweeps) / sizeof(sweeps[0])) },
		{ NULL, 0, 0 }
	};
	const struct tu_group groups[] = {
		TU_GROUP("enomem", NULL, .loops = enomem_loops, .timeout = 60),
		TU_GROUP_END
	};
	const char *dir = getenv("TMPDIR");
	uint64_t rng = 0x5eed;
	int ret;

	tu_fill(DATA, DATA_LEN, &rng);
	tu_fill(static_buf, STATIC_LEN, &rng);
	memcpy(static_pristine, static_buf, STATIC_LEN);
	test_pool = bl_pool_create("test_alloc_failures", NULL);
	if (!test_pool)
		return EXIT_FAILURE;
	snprintf(file_path, sizeof(file_path), "%s/bl_failure.XXXXXX",
		 dir && *dir ? dir : "/tmp");
	file_fd = mkstemp(file_path);
	if (file_fd < 0 || write(file_fd, DATA, DATA_LEN) != DATA_LEN) {
		perror(file_path);
		return EXIT_FAILURE;
	}
	ret = tu_run(tu_suite("failure", groups));
	close(file_fd);
	unlink(file_path);
	return ret;
}
