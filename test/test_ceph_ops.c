/* SPDX-License-Identifier: MIT */
/*
 * test_ceph_ops.c - the Ceph bridge's omap, compound operations and
 * completions against a running cluster: omap pairs set from segmented
 * lists and read back by keys and by ranges (start_after, prefix, max,
 * more) with no byte copied; write ops that apply all their steps or none
 * (exclusive create, cmpext, version assertions); read ops that fill
 * every output or none; both submitted sync and aio, the op released
 * right after an aio submission; completions waited on; 64-bit aio reads;
 * a sync read of more than 2 GiB; and the errors (NULL arguments, bad
 * keys, missing objects, spent ops).  With BL_CEPH_EC_POOL, the name of
 * an erasure-coded pool, also what such a pool answers to omap and data.
 *
 * Needs CEPH_CONF and BL_CEPH_POOL (`make check-ceph` starts a throw-away
 * cluster and sets both); without them it exits 77 (skipped) at once.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rados/librados.h>
#include <bufferlist/ceph.h>
#include <bufferlist/raw.h>
#include "testutil.h"
#include "ceph_int.h"

static struct bl_rados *R;
static const char *g_pool;
static struct bl_rados *E;	/* the erasure-coded pool, when there is one */
static const char *g_ec_pool;
static uint64_t g_rng;

static void setup(void)
{
	int err = 0;

	R = bl_rados_open(NULL, g_pool, &err);
	ck_assert_msg(R != NULL, "bl_rados_open(%s): %d", g_pool, err);
}

/* and thread-local raws off, which the thread_local group turns on */
static void teardown(void)
{
	bl_rados_close(R);
	R = NULL;
	tu_thread_local_off();
}

static void setup_ec(void)
{
	int err = 0;

	setup();
	E = bl_rados_open(NULL, g_ec_pool, &err);
	ck_assert_msg(E != NULL, "bl_rados_open(%s): %d", g_ec_pool, err);
}

static void teardown_ec(void)
{
	bl_rados_close(E);
	E = NULL;
	teardown();
}

/* A fresh object name per call: tests never see each other's objects. */
static const char *oid(const char *what)
{
	static char buf[8][96];
	static unsigned n;
	char *b = buf[n % 8];

	snprintf(b, sizeof(buf[0]), "bl_test_ceph_ops.%ld.%u.%s",
		 (long)getpid(), n++, what);
	return b;
}

static uint64_t copied(void)
{
	struct bl_stats s;

	bl_stats_get(&s);
	return s.copied_bytes;
}

/* @len random bytes as segments of [1, max_seg] bytes; returns them. */
static unsigned char *make_list(struct bl_list *l, size_t len, size_t max_seg)
{
	unsigned char *want = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(want);
	tu_fill(want, len, &g_rng);
	tu_append_segmented(l, want, len, max_seg, 1, &g_rng);
	return want;
}

static void put_str(struct bl_list *l, const char *s)
{
	ck_assert_int_eq(bl_list_append(l, s, strlen(s)), 0);
}

static void assert_data(const char *o, const char *want, size_t len)
{
	struct bl_list got;

	bl_list_init(&got);
	ck_assert_int_eq(bl_rados_read(R, o, 0, 4 << 20, &got), (ssize_t)len);
	tu_assert_list_eq(&got, want, len);
	bl_list_clear(&got);
}

/* What an omap callback saw: keys in order, values appended. */
struct seen {
	unsigned n;
	char keys[16][32];
	size_t lens[16];
	struct bl_list vals;
	int stop_at;	/* stop with 9 at this pair (1-based), 0: never */
};

static int note_pair(const char *key, const struct bl_list *val, void *arg)
{
	struct seen *s = arg;

	ck_assert_uint_lt(s->n, 16);
	snprintf(s->keys[s->n], sizeof(s->keys[0]), "%s", key);
	s->lens[s->n] = bl_list_length(val);
	ck_assert_int_eq(bl_list_append_list(&s->vals, val), 0);
	s->n++;
	return s->stop_at && s->n == (unsigned)s->stop_at ? 9 : 0;
}

static void seen_init(struct seen *s)
{
	memset(s, 0, sizeof(*s));
	bl_list_init(&s->vals);
}

static void seen_reset(struct seen *s)
{
	bl_list_clear(&s->vals);
	seen_init(s);
}

/* ---- omap ---------------------------------------------------------------- */

START_TEST(test_omap_set_get_by_keys_and_ranges_without_copies)
{
	const char *o = oid("omap");
	const char *keys[] = { "b.2", "a.1", "b.1", "c.1" };
	struct bl_list v[4], empty;
	const struct bl_list *vals[4];
	unsigned char *want[4];
	size_t lens[4] = { 3000, 10, 70000, 1 };
	struct seen s;
	int more = -1;
	long live;

	bl_list_init(&empty);
	for (int i = 0; i < 4; i++) {
		bl_list_init(&v[i]);
		want[i] = make_list(&v[i], lens[i], 97);
		vals[i] = &v[i];
	}
	seen_init(&s);
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_omap_set(R, o, keys, vals, 4), 0);
	ck_assert_uint_eq(copied(), 0);

	/* by keys: in key order, a key it lacks skipped */
	const char *ask[] = { "c.1", "none", "a.1" };
	live = bl__ceph_live_ptrs();
	ck_assert_int_eq(bl_rados_omap_get(R, o, ask, 3, note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.keys[0], "a.1");
	ck_assert_str_eq(s.keys[1], "c.1");
	ck_assert_uint_eq(s.lens[0], 10);
	ck_assert_uint_eq(s.lens[1], 1);
	ck_assert_uint_eq(copied(), 0);
	/* the values are Ceph's buffers, held by our list */
	ck_assert_int_gt(bl__ceph_live_ptrs(), live);
	seen_reset(&s);
	ck_assert_int_eq(bl__ceph_live_ptrs(), live);

	/* a range: every key, then by prefix, after a key, at most max */
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, NULL, 100, &more,
						 note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 4);
	ck_assert_int_eq(more, 0);
	ck_assert_str_eq(s.keys[0], "a.1");
	ck_assert_str_eq(s.keys[1], "b.1");
	ck_assert_str_eq(s.keys[2], "b.2");
	ck_assert_str_eq(s.keys[3], "c.1");
	ck_assert_uint_eq(bl_list_length(&s.vals), 10 + 70000 + 3000 + 1);
	seen_reset(&s);

	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, "b.", 100, &more,
						 note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.keys[0], "b.1");
	ck_assert_str_eq(s.keys[1], "b.2");
	ck_assert_uint_eq(s.lens[0], 70000);
	ck_assert_uint_eq(s.lens[1], 3000);
	seen_reset(&s);

	ck_assert_int_eq(bl_rados_omap_get_range(R, o, "a.1", NULL, 2, &more,
						 note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.keys[0], "b.1");
	ck_assert_str_eq(s.keys[1], "b.2");
	ck_assert_int_eq(more, 1);
	seen_reset(&s);

	/* the callback's nonzero value stops and is returned */
	s.stop_at = 2;
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, "", "", 100, NULL,
						 note_pair, &s), 9);
	ck_assert_uint_eq(s.n, 2);
	seen_reset(&s);

	/* the last value of a key given twice wins; empty values work */
	const char *twice[] = { "d", "d" };
	const struct bl_list *tv[] = { &v[0], &empty };
	ck_assert_int_eq(bl_rados_omap_set(R, o, twice, tv, 2), 0);
	ck_assert_int_eq(bl_rados_omap_get(R, o, twice, 1, note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_uint_eq(s.lens[0], 0);
	seen_reset(&s);

	/* remove keys (a missing one is no error), then clear */
	const char *rm[] = { "a.1", "nothing" };
	ck_assert_int_eq(bl_rados_omap_rm_keys(R, o, rm, 2), 0);
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, NULL, 100, NULL,
						 note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 4);
	ck_assert_str_eq(s.keys[0], "b.1");
	seen_reset(&s);
	ck_assert_int_eq(bl_rados_omap_clear(R, o), 0);
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, NULL, 100, &more,
						 note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(more, 0);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);

	/* the caller's lists are untouched */
	for (int i = 0; i < 4; i++) {
		tu_assert_list_eq(&v[i], want[i], lens[i]);
		bl_list_clear(&v[i]);
		free(want[i]);
	}
	seen_reset(&s);
}
END_TEST

START_TEST(test_omap_errors_bad_arguments_and_missing_objects)
{
	const char *o = oid("omap_err");
	const char *keys[] = { "k", NULL };
	struct bl_list v;
	const struct bl_list *vals[] = { &v, NULL };
	struct seen s;
	int more = 7;

	bl_list_init(&v);
	seen_init(&s);
	put_str(&v, "value");
	/* NULL handle, object, callback, arrays, a NULL inside them, max 0 */
	ck_assert_int_eq(bl_rados_omap_set(NULL, o, keys, vals, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_set(R, NULL, keys, vals, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_set(R, o, NULL, vals, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_set(R, o, keys, NULL, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_set(R, o, keys, vals, 2), -EINVAL);
	const struct bl_list *nullval[] = { NULL };
	ck_assert_int_eq(bl_rados_omap_set(R, o, keys, nullval, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_get(R, o, keys, 2, note_pair, &s), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_get(R, o, NULL, 1, note_pair, &s), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_get(R, o, keys, 1, NULL, &s), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_get(NULL, o, keys, 1, note_pair, &s),
			 -EINVAL);
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, NULL, 0, &more,
						 note_pair, &s), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_get_range(R, NULL, NULL, NULL, 1, &more,
						 note_pair, &s), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, NULL, 1, &more,
						 NULL, &s), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_rm_keys(R, o, keys, 2), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_rm_keys(R, o, NULL, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_rm_keys(NULL, o, keys, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_clear(R, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_omap_clear(NULL, o), -EINVAL);
	/* none of those created the object */
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), -ENOENT);

	/* n 0 asks no server: no object is created */
	ck_assert_int_eq(bl_rados_omap_set(R, o, NULL, NULL, 0), 0);
	ck_assert_int_eq(bl_rados_omap_rm_keys(R, o, NULL, 0), 0);
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), -ENOENT);

	/* a missing object: -ENOENT, *more and the callback untouched */
	ck_assert_int_eq(bl_rados_omap_get(R, o, keys, 1, note_pair, &s),
			 -ENOENT);
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, NULL, 10, &more,
						 note_pair, &s), -ENOENT);
	ck_assert_int_eq(more, 7);
	ck_assert_int_eq(bl_rados_omap_rm_keys(R, o, keys, 1), -ENOENT);
	ck_assert_int_eq(bl_rados_omap_clear(R, o), -ENOENT);
	ck_assert_uint_eq(s.n, 0);
	seen_reset(&s);
	bl_list_clear(&v);
}
END_TEST

/*
 * The omap steps of compound ops: get by keys in a read op (beside a
 * range), remove keys and clear in write ops (beside other steps), with
 * no byte copied and the callback's stop value in *prval; then the
 * errors of the new steps and a spent op.
 */
START_TEST(test_omap_steps_get_by_keys_remove_keys_and_clear_in_ops)
{
	const char *o = oid("omap_ops");
	const char *keys[] = { "b.2", "a.1", "b.1", "c.1" };
	const char *ask[] = { "c.1", "none", "a.1" };
	const char *rm[] = { "a.1", "nothing" };
	const char *bad[] = { NULL };
	struct bl_list v[4], x;
	const struct bl_list *vals[4];
	unsigned char *want[4];
	size_t lens[4] = { 3000, 10, 70000, 1 };
	struct bl_rados_write_op *op = bl_rados_create_write_op();
	struct bl_rados_read_op *rop = bl_rados_create_read_op();
	struct bl_rados_completion *c;
	struct seen s, all;
	int pr = 1, pr2 = 1, more = -1;
	int64_t res = 1;

	bl_list_init(&x);
	put_str(&x, "xattr");
	for (int i = 0; i < 4; i++) {
		bl_list_init(&v[i]);
		want[i] = make_list(&v[i], lens[i], 97);
		vals[i] = &v[i];
	}
	seen_init(&s);
	seen_init(&all);
	ck_assert_int_eq(bl_rados_write_op_omap_set(op, keys, vals, 4), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	bl_rados_release_write_op(op);

	/* by keys: in key order, a key it lacks skipped, values whole */
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, ask, 3,
							   note_pair, &s,
							   &pr), 0);
	ck_assert_int_eq(bl_rados_read_op_omap_get(rop, NULL, NULL, 100, &more,
						   note_pair, &all, &pr2), 0);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, o), 0);
	bl_rados_release_read_op(rop);
	ck_assert_uint_eq(copied(), 0);
	ck_assert_int_eq(pr, 0);
	ck_assert_int_eq(pr2, 0);
	ck_assert_int_eq(more, 0);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_str_eq(s.keys[0], "a.1");
	ck_assert_str_eq(s.keys[1], "c.1");
	ck_assert_uint_eq(s.lens[0], 10);
	ck_assert_uint_eq(s.lens[1], 1);
	ck_assert_uint_eq(bl_list_length(&s.vals), 11);
	ck_assert_uint_eq(all.n, 4);
	seen_reset(&s);
	seen_reset(&all);

	/* the callback's nonzero value stops and becomes *prval */
	rop = bl_rados_create_read_op();
	s.stop_at = 1;
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, keys, 4,
							   note_pair, &s,
							   &pr), 0);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, o), 0);
	bl_rados_release_read_op(rop);
	ck_assert_int_eq(pr, 9);
	ck_assert_uint_eq(s.n, 1);
	seen_reset(&s);

	/* remove keys (a missing one is no error) beside a set, in one op */
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_omap_rm_keys(op, rm, 2), 0);
	ck_assert_int_eq(bl_rados_write_op_omap_set(op, ask, vals, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	/* a spent op takes no step */
	ck_assert_int_eq(bl_rados_write_op_omap_rm_keys(op, rm, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_omap_clear(op), -EINVAL);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, NULL, 100, NULL,
						 note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_str_eq(s.keys[0], "b.1");
	ck_assert_str_eq(s.keys[2], "c.1");
	ck_assert_uint_eq(s.lens[2], 3000);	/* set after the removal */
	seen_reset(&s);

	/* a failing step keeps the clear from happening */
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_omap_clear(op), 0);
	ck_assert_int_eq(bl_rados_write_op_create(op, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), -EEXIST);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(bl_rados_omap_get(R, o, keys, 4, note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 3);
	seen_reset(&s);

	/* clear beside a setxattr, aio, the op released at once */
	c = bl_rados_completion_create();
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_omap_clear(op), 0);
	ck_assert_int_eq(bl_rados_write_op_setxattr(op, "x", &x), 0);
	ck_assert_int_eq(bl_rados_aio_write_op_operate(op, R, o,
						       bl_rados_completion_cb,
						       c), 0);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_int_eq(res, 0);
	bl_rados_completion_release(c);
	ck_assert_int_eq(bl_rados_omap_get_range(R, o, NULL, NULL, 100, &more,
						 note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(bl_rados_getxattr(R, o, "x", &s.vals), 5);
	seen_reset(&s);

	/* errors: NULL op, callback, keys, a NULL key; n 0 is a step */
	op = bl_rados_create_write_op();
	rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_write_op_omap_rm_keys(NULL, rm, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_omap_rm_keys(op, NULL, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_omap_rm_keys(op, bad, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_omap_clear(NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(NULL, ask, 1,
							   note_pair, &s,
							   NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, ask, 1, NULL,
							   &s, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, NULL, 1,
							   note_pair, &s,
							   NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, bad, 1,
							   note_pair, &s,
							   NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_omap_rm_keys(op, NULL, 0), 0);
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, NULL, 0,
							   note_pair, &s,
							   &pr), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, o), 0);
	ck_assert_int_eq(pr, 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, ask, 1,
							   note_pair, &s,
							   NULL), -EINVAL);
	bl_rados_release_write_op(op);
	bl_rados_release_read_op(rop);

	/* a missing object fails the read op's step with -ENOENT */
	rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, ask, 1,
							   note_pair, &s,
							   &pr), 0);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, oid("none")),
			 -ENOENT);
	bl_rados_release_read_op(rop);
	ck_assert_uint_eq(s.n, 0);

	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	for (int i = 0; i < 4; i++) {
		tu_assert_list_eq(&v[i], want[i], lens[i]);
		bl_list_clear(&v[i]);
		free(want[i]);
	}
	seen_reset(&s);
	bl_list_clear(&x);
}
END_TEST

/* ---- write and read operations ------------------------------------------ */

START_TEST(test_write_op_applies_every_step_in_one_go_without_copies)
{
	const char *o = oid("wop");
	struct bl_rados_write_op *op = bl_rados_create_write_op();
	struct bl_rados_read_op *rop;
	struct bl_list data, tail, attr, val, got, gotattr, cmp;
	const char *key = "k";
	const struct bl_list *vals[] = { &val };
	unsigned char *want;
	char buf[5000];
	struct seen s;
	uint64_t size = 0;
	int64_t mtime = 0;
	int pr[5] = { 1, 1, 1, 1, 1 }, more = -1;

	ck_assert_ptr_nonnull(op);
	bl_list_init(&data);
	bl_list_init(&tail);
	bl_list_init(&attr);
	bl_list_init(&val);
	bl_list_init(&got);
	bl_list_init(&gotattr);
	bl_list_init(&cmp);
	seen_init(&s);
	want = make_list(&data, 4000, 61);
	put_str(&tail, "TAIL");
	put_str(&attr, "attr-value");
	put_str(&val, "omap-value");
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_write_op_create(op, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_write_full(op, &data), 0);
	ck_assert_int_eq(bl_rados_write_op_zero(op, 100, 50), 0);
	ck_assert_int_eq(bl_rados_write_op_truncate(op, 3000), 0);
	ck_assert_int_eq(bl_rados_write_op_append(op, &tail), 0);
	ck_assert_int_eq(bl_rados_write_op_write(op, &tail, 10), 0);
	ck_assert_int_eq(bl_rados_write_op_setxattr(op, "user.a", &attr), 0);
	ck_assert_int_eq(bl_rados_write_op_omap_set(op, &key, vals, 1), 0);
	/* the lists may go once added: the op holds their bytes */
	bl_list_clear(&tail);
	bl_list_clear(&attr);
	bl_list_clear(&val);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	ck_assert_uint_eq(copied(), 0);
	/* spent: no more steps, no second submission */
	ck_assert_int_eq(bl_rados_write_op_truncate(op, 0), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), -EINVAL);
	ck_assert_int_eq(bl_rados_aio_write_op_operate(op, R, o, NULL, NULL),
			 -EINVAL);
	bl_rados_release_write_op(op);

	memcpy(buf, want, 3000);
	memset(buf + 100, 0, 50);
	memcpy(buf + 3000, "TAIL", 4);
	memcpy(buf + 10, "TAIL", 4);
	assert_data(o, buf, 3004);

	/* one read op gives it all back */
	rop = bl_rados_create_read_op();
	ck_assert_ptr_nonnull(rop);
	put_str(&cmp, "TAIL");
	ck_assert_int_eq(bl_rados_read_op_cmpext(rop, &cmp, 3000, &pr[0]), 0);
	ck_assert_int_eq(bl_rados_read_op_read(rop, 0, 10000, &got, &pr[1]), 0);
	ck_assert_int_eq(bl_rados_read_op_stat(rop, &size, &mtime, &pr[2]), 0);
	ck_assert_int_eq(bl_rados_read_op_getxattr(rop, "user.a", &gotattr,
						   &pr[3]), 0);
	ck_assert_int_eq(bl_rados_read_op_omap_get(rop, NULL, NULL, 10, &more,
						   note_pair, &s, &pr[4]), 0);
	bl_stats_reset();	/* put_str and assert_data copied */
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, o), 0);
	ck_assert_uint_eq(copied(), 0);
	for (int i = 0; i < 5; i++)
		ck_assert_int_eq(pr[i], 0);
	tu_assert_list_eq(&got, buf, 3004);
	ck_assert_uint_eq(size, 3004);
	ck_assert_int_ge(mtime, (int64_t)time(NULL) - 600);
	tu_assert_list_eq(&gotattr, "attr-value", 10);
	ck_assert_uint_eq(s.n, 1);
	ck_assert_str_eq(s.keys[0], "k");
	tu_assert_list_eq(&s.vals, "omap-value", 10);
	ck_assert_int_eq(more, 0);
	ck_assert_int_eq(bl_rados_read_op_stat(rop, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, o), -EINVAL);
	bl_rados_release_read_op(rop);

	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	seen_reset(&s);
	bl_list_clear(&got);
	bl_list_clear(&gotattr);
	bl_list_clear(&cmp);
	bl_list_clear(&data);
	free(want);
}
END_TEST

START_TEST(test_a_failing_step_fails_the_whole_op_and_changes_nothing)
{
	const char *o = oid("wop_fail");
	struct bl_rados_write_op *op;
	struct bl_rados_read_op *rop;
	struct bl_list a, b, out, x;
	struct seen s;
	uint64_t size = 77;
	int pr = 1, pr2 = 1, e;

	bl_list_init(&a);
	bl_list_init(&b);
	bl_list_init(&out);
	bl_list_init(&x);
	seen_init(&s);
	put_str(&a, "0123456789");
	put_str(&b, "XXXX");
	put_str(&x, "keep");
	ck_assert_int_eq(bl_rados_write_full(R, o, &a), 0);

	/* an exclusive create of an existing object: -EEXIST, no write */
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_create(op, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_write(op, &b, 0), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), -EEXIST);
	bl_rados_release_write_op(op);
	assert_data(o, "0123456789", 10);
	/* non-exclusive create of an existing object is fine */
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_create(op, 0), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	bl_rados_release_write_op(op);

	/* cmpext mismatch: librados' -MAX_ERRNO - offset, the write undone */
	bl_list_clear(&b);
	put_str(&b, "234x");	/* differs at its byte 3 */
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_cmpext(op, &b, 2, &pr), 0);
	ck_assert_int_eq(bl_rados_write_op_write(op, &b, 0), 0);
	e = bl_rados_write_op_operate(op, R, o);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(e, -BL_RADOS_MAX_ERRNO - 3);
	ck_assert(BL_RADOS_CMPEXT_MISMATCH(e));
	ck_assert_uint_eq(BL_RADOS_CMPEXT_OFFSET(e), 3);
	ck_assert_int_eq(pr, e);
	assert_data(o, "0123456789", 10);
	/* matching bytes let the write through */
	bl_list_clear(&b);
	put_str(&b, "2345");
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_cmpext(op, &b, 2, &pr), 0);
	ck_assert_int_eq(bl_rados_write_op_write(op, &b, 0), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(pr, 0);
	assert_data(o, "2345456789", 10);
	/* past the object's end its bytes compare as zeros */
	bl_list_clear(&b);
	ck_assert_int_eq(bl_list_append(&b, "89\0\0", 4), 0);
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_cmpext(op, &b, 8, &pr), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(pr, 0);

	/* a read op's mismatch: outputs untouched, every prval written */
	rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_read_op_read(rop, 0, 10, &out, &pr2), 0);
	ck_assert_int_eq(bl_rados_read_op_stat(rop, &size, NULL, NULL), 0);
	ck_assert_int_eq(bl_rados_read_op_cmpext(rop, &x, 0, &pr), 0);
	e = bl_rados_read_op_operate(rop, R, o);
	bl_rados_release_read_op(rop);
	ck_assert(BL_RADOS_CMPEXT_MISMATCH(e));
	ck_assert_uint_eq(BL_RADOS_CMPEXT_OFFSET(e), 0);
	ck_assert_int_eq(pr, e);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	ck_assert_uint_eq(size, 77);

	/* a missing attribute: -ENODATA, nothing filled */
	rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_read_op_read(rop, 0, 10, &out, NULL), 0);
	ck_assert_int_eq(bl_rados_read_op_getxattr(rop, "user.none", &x, &pr),
			 0);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, o), -ENODATA);
	bl_rados_release_read_op(rop);
	ck_assert_int_eq(pr, -ENODATA);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	tu_assert_list_eq(&x, "keep", 4);

	/* a missing object: -ENOENT for both kinds */
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_read_op_stat(rop, &size, NULL, NULL), 0);
	ck_assert_int_eq(bl_rados_read_op_omap_get(rop, NULL, NULL, 5, NULL,
						   note_pair, &s, &pr), 0);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, o), -ENOENT);
	bl_rados_release_read_op(rop);
	ck_assert_uint_eq(size, 77);
	ck_assert_uint_eq(s.n, 0);
	op = bl_rados_create_write_op();
	/* (with a write step beside it, the object would compare as zeros) */
	ck_assert_int_eq(bl_rados_write_op_cmpext(op, &x, 0, NULL), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), -ENOENT);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), -ENOENT);

	seen_reset(&s);
	bl_list_clear(&a);
	bl_list_clear(&b);
	bl_list_clear(&out);
	bl_list_clear(&x);
}
END_TEST

static uint64_t version_of(const char *o)
{
	uint64_t size;

	/* librados remembers the version of the last object a call saw */
	ck_assert_int_eq(bl_rados_stat(R, o, &size, NULL), 0);
	return rados_get_last_version(bl_rados_ioctx(R));
}

START_TEST(test_assert_version_gives_erange_for_newer_and_eoverflow_for_older)
{
	const char *o = oid("ver");
	struct bl_rados_write_op *op;
	struct bl_list a;
	uint64_t v;

	bl_list_init(&a);
	put_str(&a, "v1");
	ck_assert_int_eq(bl_rados_write_full(R, o, &a), 0);
	ck_assert_int_eq(bl_rados_write_full(R, o, &a), 0);
	v = version_of(o);
	ck_assert_uint_gt(v, 1);

	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_assert_version(op, v - 1), 0);
	ck_assert_int_eq(bl_rados_write_op_append(op, &a), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), -ERANGE);
	bl_rados_release_write_op(op);

	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_assert_version(op, v + 1), 0);
	ck_assert_int_eq(bl_rados_write_op_append(op, &a), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), -EOVERFLOW);
	bl_rados_release_write_op(op);
	assert_data(o, "v1", 2);

	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_assert_version(op, v), 0);
	ck_assert_int_eq(bl_rados_write_op_append(op, &a), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	bl_rados_release_write_op(op);
	assert_data(o, "v1v1", 4);
	ck_assert_uint_gt(version_of(o), v);

	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	bl_list_clear(&a);
}
END_TEST

START_TEST(test_op_arguments_are_checked_and_a_failed_step_changes_nothing)
{
	const char *o = oid("args");
	struct bl_rados_write_op *op = bl_rados_create_write_op();
	struct bl_rados_read_op *rop = bl_rados_create_read_op();
	struct bl_list l;
	const char *keys[] = { NULL };
	const struct bl_list *vals[] = { &l };

	bl_list_init(&l);
	put_str(&l, "x");
	ck_assert_int_eq(bl_rados_write_op_create(NULL, 0), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_write(op, NULL, 0), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_write_full(NULL, &l), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_append(op, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_truncate(NULL, 0), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_zero(NULL, 0, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_setxattr(op, NULL, &l), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_setxattr(op, "n", NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_omap_set(op, keys, vals, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_omap_set(op, NULL, vals, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_cmpext(op, NULL, 0, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_assert_version(NULL, 1), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_operate(NULL, R, "o"), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_operate(op, NULL, "o"), -EINVAL);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_aio_write_op_operate(op, NULL, "o", NULL,
						       NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_read(rop, 0, 1, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_read(rop, 0, 0, &l, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_read(NULL, 0, 1, &l, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_stat(NULL, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_getxattr(rop, NULL, &l, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_getxattr(rop, "n", NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_omap_get(rop, NULL, NULL, 1, NULL,
						   NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_omap_get(rop, NULL, NULL, 0, NULL,
						   note_pair, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_cmpext(rop, NULL, 0, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_operate(NULL, R, "o"), -EINVAL);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, R, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_aio_read_op_operate(rop, R, NULL, NULL, NULL),
			 -EINVAL);
	/* -EINVAL spent nothing: the op still takes steps and runs */
	ck_assert_int_eq(bl_rados_write_op_create(op, 0), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, R, o), 0);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	bl_rados_release_write_op(op);
	bl_rados_release_write_op(NULL);
	bl_rados_release_read_op(rop);
	bl_rados_release_read_op(NULL);
	tu_assert_list_eq(&l, "x", 1);
	bl_list_clear(&l);
}
END_TEST

/* ---- aio and completions ------------------------------------------------- */

START_TEST(test_aio_ops_complete_on_a_completion_after_the_op_is_released)
{
	const char *o = oid("aio_op");
	struct bl_rados_completion *c = bl_rados_completion_create();
	struct bl_rados_write_op *op = bl_rados_create_write_op();
	struct bl_rados_read_op *rop;
	struct bl_list data, got, cmp;
	unsigned char *want;
	uint64_t size = 0;
	int64_t res = -1;
	int pr = 1;

	ck_assert_ptr_nonnull(c);
	bl_list_init(&data);
	bl_list_init(&got);
	bl_list_init(&cmp);
	want = make_list(&data, 1 << 20, 65536);
	/* nothing in flight: only looks */
	ck_assert_int_eq(bl_rados_completion_wait(c, 0, &res), -ETIMEDOUT);
	ck_assert_int_eq(res, -1);
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_write_op_create(op, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_write_full(op, &data), 0);
	ck_assert_int_eq(bl_rados_aio_write_op_operate(op, R, o,
						       bl_rados_completion_cb,
						       c), 0);
	/* the op and the list may go at once */
	bl_rados_release_write_op(op);
	bl_list_clear(&data);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_int_eq(res, 0);
	/* complete stays complete */
	ck_assert_int_eq(bl_rados_completion_wait(c, 0, NULL), 0);
	bl_rados_completion_release(c);

	c = bl_rados_completion_create();
	rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_aio_read_op_operate(NULL, R, o, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_list_append(&cmp, want + 5, 100), 0);
	ck_assert_int_eq(bl_rados_read_op_cmpext(rop, &cmp, 5, NULL), 0);
	ck_assert_int_eq(bl_rados_read_op_read(rop, 0, 2 << 20, &got, &pr), 0);
	ck_assert_int_eq(bl_rados_read_op_stat(rop, &size, NULL, NULL), 0);
	bl_stats_reset();	/* the cmp bytes were copied in */
	ck_assert_int_eq(bl_rados_aio_read_op_operate(rop, R, o,
						      bl_rados_completion_cb,
						      c), 0);
	bl_rados_release_read_op(rop);
	bl_list_clear(&cmp);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_uint_eq(copied(), 0);
	ck_assert_int_eq(res, 0);
	ck_assert_int_eq(pr, 0);
	ck_assert_uint_eq(size, 1 << 20);
	tu_assert_list_eq(&got, want, 1 << 20);
	bl_rados_completion_release(c);
	bl_list_clear(&got);

	/* an aio op's failure reaches the completion */
	c = bl_rados_completion_create();
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_create(op, 1), 0);
	ck_assert_int_eq(bl_rados_aio_write_op_operate(op, R, o,
						       bl_rados_completion_cb,
						       c), 0);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_int_eq(res, -EEXIST);
	bl_rados_completion_release(c);

	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	bl_rados_completion_release(NULL);
	ck_assert_int_eq(bl_rados_completion_wait(NULL, 0, NULL), -EINVAL);
	free(want);
}
END_TEST

START_TEST(test_aio_read2_gives_a_64_bit_result_to_a_completion)
{
	const char *o = oid("read2");
	struct bl_rados_completion *c = bl_rados_completion_create();
	struct bl_list data, got;
	unsigned char *want;
	int64_t res = 0;

	bl_list_init(&data);
	bl_list_init(&got);
	want = make_list(&data, 3 << 20, 1 << 20);
	ck_assert_int_eq(bl_rados_write_full(R, o, &data), 0);
	ck_assert_int_eq(bl_rados_aio_read2(R, o, 1, 4 << 20, &got,
					    bl_rados_completion_cb64, c), 0);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_int_eq(res, (3 << 20) - 1);
	tu_assert_list_eq(&got, want + 1, (3 << 20) - 1);
	bl_rados_completion_release(c);

	/* errors: the call's, then librados' through the callback */
	ck_assert_int_eq(bl_rados_aio_read2(R, o, 0, 1, NULL, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_rados_aio_read2(NULL, o, 0, 1, &got, NULL, NULL),
			 -EINVAL);
	c = bl_rados_completion_create();
	ck_assert_int_eq(bl_rados_aio_read2(R, oid("none"), 0, 10, &got,
					    bl_rados_completion_cb64, c), 0);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_int_eq(res, -ENOENT);
	bl_rados_completion_release(c);
	/* len 0 completes before the call returns */
	c = bl_rados_completion_create();
	ck_assert_int_eq(bl_rados_aio_read2(R, o, 0, 0, &got,
					    bl_rados_completion_cb64, c), 0);
	ck_assert_int_eq(bl_rados_completion_wait(c, 0, &res), 0);
	ck_assert_int_eq(res, 0);
	bl_rados_completion_release(c);
	ck_assert_uint_eq(bl_list_length(&got), (3 << 20) - 1);

	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	bl_list_clear(&got);
	bl_list_clear(&data);
	free(want);
}
END_TEST

START_TEST(test_op_steps_send_thread_local_raws_as_a_copy)
{
	const char *o = oid("op_local");
	struct bl_rados_completion *c = bl_rados_completion_create();
	struct bl_rados_write_op *op = bl_rados_create_write_op();
	struct bl_list_seg_iter it;
	const struct bl_seg *seg;
	struct bl_list l;
	const char *key = "k";
	const struct bl_list *vals[1];
	unsigned char *want;
	size_t len = (1 << 20) + 3;
	uint64_t c0 = bl_rados_copied_bytes();
	int64_t res = 1;

	bl_list_init(&l);
	bl_raw_set_thread_local(true);
	want = make_list(&l, len, 50000);
	vals[0] = &l;
	BL_LIST_FOREACH_SEG(&l, it, seg)
		ck_assert(bl_raw_is_thread_local(seg->raw));
	/* the op keeps no reference to a thread-local raw: the aio
	 * completion drops the op's references on a librados thread */
	ck_assert_int_eq(bl_rados_write_op_write_full(op, &l), 0);
	ck_assert_int_eq(bl_rados_write_op_omap_set(op, &key, vals, 1), 0);
	BL_LIST_FOREACH_SEG(&l, it, seg)
		ck_assert_uint_eq(bl_raw_nref(seg->raw), 1);
	ck_assert_uint_eq(bl_rados_copied_bytes() - c0, 2 * len);
	ck_assert_int_eq(bl_rados_aio_write_op_operate(op, R, o,
						       bl_rados_completion_cb,
						       c), 0);
	bl_rados_release_write_op(op);
	bl_list_clear(&l);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_int_eq(res, 0);
	bl_rados_completion_release(c);
	bl_raw_set_thread_local(false);
	assert_data(o, (const char *)want, len);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	free(want);
}
END_TEST

/* ---- erasure-coded pool ------------------------------------------------ */

/*
 * An erasure-coded pool (BL_CEPH_EC_POOL) has no omap: the omap writes,
 * alone or as op steps, fail with -EOPNOTSUPP, and such a write op
 * changes nothing; the omap reads, alone or as steps, find no key (0, no
 * pair), as ceph.h says.  Whole-object writes, reads (whole and in part),
 * compound ops without omap and aio work there as anywhere, with no byte
 * copied.  Only full writes: a pool without allow_ec_overwrites refuses
 * writes at offsets inside an object.
 */
START_TEST(test_ec_pool_refuses_omap_and_takes_data_and_ops)
{
	const char *o = oid("ec");
	const char *key = "k";
	struct bl_list l, got, x;
	const struct bl_list *vals[1];
	struct bl_rados_write_op *op;
	struct bl_rados_read_op *rop;
	struct bl_rados_completion *c;
	unsigned char *want;
	size_t len = (1 << 20) + 4099;
	struct seen s;
	uint64_t size = 0;
	int pr = 1;
	int64_t res = 1;

	bl_list_init(&l);
	bl_list_init(&got);
	bl_list_init(&x);
	seen_init(&s);
	put_str(&x, "xattr");
	want = make_list(&l, len, 50000);
	vals[0] = &l;

	/* omap alone: refused, the object not created */
	ck_assert_int_eq(bl_rados_omap_set(E, o, &key, vals, 1), -EOPNOTSUPP);
	ck_assert_int_eq(bl_rados_stat(E, o, NULL, NULL), -ENOENT);
	/* an op with an omap step changes nothing, its data step neither */
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_write_full(op, &l), 0);
	ck_assert_int_eq(bl_rados_write_op_omap_set(op, &key, vals, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, E, o), -EOPNOTSUPP);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(bl_rados_stat(E, o, NULL, NULL), -ENOENT);

	/* data: a write op without omap (create, write_full, setxattr) */
	bl_stats_reset();
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_create(op, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_write_full(op, &l), 0);
	ck_assert_int_eq(bl_rados_write_op_setxattr(op, "x", &x), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, E, o), 0);
	bl_rados_release_write_op(op);
	ck_assert_uint_eq(copied(), 0);
	ck_assert_int_eq(bl_rados_read(E, o, 0, 4 << 20, &got), (ssize_t)len);
	tu_assert_list_eq(&got, want, len);
	bl_list_clear(&got);
	ck_assert_int_eq(bl_rados_read(E, o, 4097, 100000, &got), 100000);
	tu_assert_list_eq(&got, want + 4097, 100000);
	bl_list_clear(&got);
	ck_assert_int_eq(bl_rados_getxattr(E, o, "x", &got), 5);
	bl_list_clear(&got);

	/* omap reads find an empty omap; the writes are refused */
	ck_assert_int_eq(bl_rados_omap_get(E, o, &key, 1, note_pair, &s), 0);
	ck_assert_int_eq(bl_rados_omap_get_range(E, o, NULL, NULL, 10, NULL,
						 note_pair, &s), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(bl_rados_omap_rm_keys(E, o, &key, 1), -EOPNOTSUPP);
	ck_assert_int_eq(bl_rados_omap_clear(E, o), -EOPNOTSUPP);
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_setxattr(op, "y", &x), 0);
	ck_assert_int_eq(bl_rados_write_op_omap_rm_keys(op, &key, 1), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, E, o), -EOPNOTSUPP);
	bl_rados_release_write_op(op);
	ck_assert_int_eq(bl_rados_getxattr(E, o, "y", &got), -ENODATA);
	op = bl_rados_create_write_op();
	ck_assert_int_eq(bl_rados_write_op_omap_clear(op), 0);
	ck_assert_int_eq(bl_rados_write_op_operate(op, E, o), -EOPNOTSUPP);
	bl_rados_release_write_op(op);
	rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_read_op_stat(rop, &size, NULL, NULL), 0);
	ck_assert_int_eq(bl_rados_read_op_omap_get_by_keys(rop, &key, 1,
							   note_pair, &s,
							   &pr), 0);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, E, o), 0);
	bl_rados_release_read_op(rop);
	ck_assert_int_eq(pr, 0);
	ck_assert_uint_eq(size, len);
	ck_assert_uint_eq(s.n, 0);
	size = 0;

	/* a read op without omap, then aio write_full and read */
	rop = bl_rados_create_read_op();
	ck_assert_int_eq(bl_rados_read_op_stat(rop, &size, NULL, NULL), 0);
	ck_assert_int_eq(bl_rados_read_op_read(rop, 0, len, &got, &pr), 0);
	ck_assert_int_eq(bl_rados_read_op_operate(rop, E, o), 0);
	bl_rados_release_read_op(rop);
	ck_assert_uint_eq(size, len);
	ck_assert_int_eq(pr, 0);
	tu_assert_list_eq(&got, want, len);
	bl_list_clear(&got);
	c = bl_rados_completion_create();
	ck_assert_int_eq(bl_rados_aio_write_full(E, o, &x,
						 bl_rados_completion_cb, c),
			 0);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_int_eq(res, 0);
	bl_rados_completion_release(c);
	c = bl_rados_completion_create();
	ck_assert_int_eq(bl_rados_aio_read2(E, o, 0, 100, &got,
					    bl_rados_completion_cb64, c), 0);
	ck_assert_int_eq(bl_rados_completion_wait(c, 60000, &res), 0);
	ck_assert_int_eq(res, 5);
	tu_assert_list_eq(&got, "xattr", 5);
	bl_rados_completion_release(c);

	ck_assert_int_eq(bl_rados_remove(E, o), 0);
	seen_reset(&s);
	bl_list_clear(&got);
	bl_list_clear(&x);
	bl_list_clear(&l);
	free(want);
}
END_TEST

/* Sets (@val non-NULL) or removes the OSDs' option @name, as `ceph
 * config set osd NAME VAL` / `ceph config rm osd NAME`. */
static int osd_config(const char *name, const char *val)
{
	char cmd[256];
	const char *cmds[1] = { cmd };

	if (val)
		snprintf(cmd, sizeof(cmd),
			 "{\"prefix\": \"config set\", \"who\": \"osd\", "
			 "\"name\": \"%s\", \"value\": \"%s\"}", name, val);
	else
		snprintf(cmd, sizeof(cmd),
			 "{\"prefix\": \"config rm\", \"who\": \"osd\", "
			 "\"name\": \"%s\"}", name);
	return rados_mon_command(bl_rados_cluster(R), cmds, 1, "", 0, NULL,
				 NULL, NULL, NULL);
}

static void put_at(const char *o, const char *s, uint64_t off)
{
	struct bl_list l;

	bl_list_init(&l);
	put_str(&l, s);
	ck_assert_int_eq(bl_rados_write(R, o, &l, off), 0);
	bl_list_clear(&l);
}

static void assert_bytes_at(const struct bl_list *l, uint64_t off,
			    const char *s)
{
	char buf[32];
	size_t n = strlen(s);

	ck_assert_int_eq(bl_list_copy_out(l, off, n, buf), 0);
	ck_assert_msg(memcmp(buf, s, n) == 0, "bytes at %llu",
		      (unsigned long long)off);
}

/*
 * librados refuses a read over INT_MAX bytes (-EDOM) and aborts on an
 * answer of 2 GiB or more; bl_rados_read() reads such a range in pieces
 * and returns its full length.  The object is sparse (OSD memory and
 * disk stay small): markers at its start, across the 1 GiB piece border
 * and past 2 GiB.  The OSD takes objects over 128 MiB only once its
 * osd_max_object_size allows, set here and removed after.
 */
START_TEST(test_sync_read_of_more_than_2_gib_returns_its_length)
{
	const char *o = oid("2gib");
	const uint64_t gib = 1ull << 30;
	struct bl_list got, one;
	struct bl_rados_completion *c;
	ssize_t n;
	int e = -EFBIG;

	bl_list_init(&got);
	bl_list_init(&one);
	ck_assert_int_eq(osd_config("osd_max_object_size", "3221225472"), 0);
	put_str(&one, "tail");
	/* the OSD hears of the option a moment after the monitor */
	for (int i = 0; i < 100 && e == -EFBIG; i++) {
		e = bl_rados_write(R, o, &one, 2 * gib + 4096);
		if (e == -EFBIG)
			usleep(100000);
	}
	ck_assert_int_eq(e, 0);
	put_at(o, "head", 0);
	put_at(o, "border", gib - 3);

	n = bl_rados_read(R, o, 0, 2 * gib + 8192, &got);
	ck_assert_int_eq(n, 2 * gib + 4100);
	ck_assert_uint_eq(bl_list_length(&got), 2 * gib + 4100);
	assert_bytes_at(&got, 0, "head");
	assert_bytes_at(&got, gib - 3, "border");
	assert_bytes_at(&got, 2 * gib + 4096, "tail");
	assert_bytes_at(&got, 2 * gib, "\0\0\0\0");
	bl_list_clear(&got);

	/* from an offset, and a range the object ends inside */
	n = bl_rados_read(R, o, gib - 3, (size_t)3 * gib, &got);
	ck_assert_int_eq(n, gib + 4103);
	assert_bytes_at(&got, 0, "border");
	assert_bytes_at(&got, gib + 4099, "tail");
	bl_list_clear(&got);

	/* a failure leaves @out as it was */
	ck_assert_int_eq(bl_list_append(&got, "x", 1), 0);
	ck_assert_int_eq(bl_rados_read(R, oid("none"), 0, 3 * gib, &got),
			 -ENOENT);
	ck_assert_uint_eq(bl_list_length(&got), 1);
	/* the aio reads are librados' single read: over INT_MAX, -EDOM */
	ck_assert_int_eq(bl_rados_aio_read(R, o, 0, 2 * gib, &got, NULL,
					   NULL), -EDOM);
	c = bl_rados_completion_create();
	ck_assert_int_eq(bl_rados_aio_read2(R, o, 0, 2 * gib, &got,
					    bl_rados_completion_cb64, c),
			 -EDOM);
	bl_rados_completion_release(c);
	ck_assert_uint_eq(bl_list_length(&got), 1);
	bl_list_clear(&got);
	bl_list_clear(&one);

	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	ck_assert_int_eq(osd_config("osd_max_object_size", NULL), 0);
}
END_TEST

/* The suite, once main found the cluster and said whether the EC pool
 * is there (its cases are left out without it, never passed unseen). */
static int run(bool ec)
{
	const TTest *omap_tests[] = {
		test_omap_set_get_by_keys_and_ranges_without_copies,
		test_omap_errors_bad_arguments_and_missing_objects,
		test_omap_steps_get_by_keys_remove_keys_and_clear_in_ops,
		NULL
	};
	const TTest *ops_tests[] = {
		test_write_op_applies_every_step_in_one_go_without_copies,
		test_a_failing_step_fails_the_whole_op_and_changes_nothing,
		test_assert_version_gives_erange_for_newer_and_eoverflow_for_older,
		test_op_arguments_are_checked_and_a_failed_step_changes_nothing,
		NULL
	};
	const TTest *aio_tests[] = {
		test_aio_ops_complete_on_a_completion_after_the_op_is_released,
		test_aio_read2_gives_a_64_bit_result_to_a_completion,
		NULL
	};
	const TTest *big_tests[] = {
		test_sync_read_of_more_than_2_gib_returns_its_length,
		NULL
	};
	const TTest *thread_local_tests[] = {
		test_op_steps_send_thread_local_raws_as_a_copy,
		NULL
	};
	const TTest *ec_tests[] = {
		test_ec_pool_refuses_omap_and_takes_data_and_ops,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("omap", omap_tests, .timeout = 300, .setup = setup,
			 .teardown = teardown),
		TU_GROUP("ops", ops_tests, .timeout = 300, .setup = setup,
			 .teardown = teardown),
		TU_GROUP("aio", aio_tests, .timeout = 300, .setup = setup,
			 .teardown = teardown),
		TU_GROUP("big", big_tests, .timeout = 900, .setup = setup,
			 .teardown = teardown),
		TU_GROUP("thread_local", thread_local_tests, .timeout = 300,
			 .setup = setup, .teardown = teardown),
		/* the last: without the pool, the end of the table */
		TU_GROUP(ec ? "ec" : NULL, ec_tests, .timeout = 300,
			 .setup = setup_ec, .teardown = teardown_ec),
		TU_GROUP_END
	};

	return tu_run(tu_suite("ceph_ops", groups));
}

int main(void)
{
	g_pool = tu_ceph_pool("test_ceph_ops");
	if (!g_pool)
		return 77;
	g_rng = tu_seed("test_ceph_ops");
	/* only with a pool to run them on: never counted as passed unseen */
	g_ec_pool = getenv("BL_CEPH_EC_POOL");
	if (!g_ec_pool || !*g_ec_pool)
		printf("test_ceph_ops: BL_CEPH_EC_POOL unset: the "
		       "erasure-coded pool cases were not run\n");
	return run(g_ec_pool && *g_ec_pool);
}
