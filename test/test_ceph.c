/* SPDX-License-Identifier: MIT */
/*
 * test_ceph.c - the Ceph bridge's C API against a running cluster: lists
 * of many odd-sized segments (1 byte to 8 MiB) written with write,
 * write_full, append and their aio forms, read back and compared; the copy
 * counters prove the client side copied nothing; reads come back as
 * claimed raws over Ceph's buffers, released when the list goes; an aio
 * write survives the caller dropping its list at once; errors (missing
 * pool, object, ranges past the end) and close waiting for aio; and a
 * memcpy/memmove interposed for the whole process (librados' threads
 * included) sees no payload copied by a write or a read; the allocation
 * hint reaches the OSD with every kind of write (the OSD's own op history
 * shows it) until it is turned off.
 *
 * Needs CEPH_CONF and BL_CEPH_POOL (`make check-ceph` starts a throw-away
 * cluster and sets both); without them it exits 77 (skipped) at once.
 */
#define _GNU_SOURCE	/* memmem */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rados/librados.h>
#include <bufferlist/ceph.h>
#include "testutil.h"
#include "ceph_int.h"

#define MIB (1024u * 1024u)

static struct bl_rados *R;
static const char *g_pool;
static uint64_t g_rng;

static void setup(void)
{
	int err = 0;

	R = bl_rados_open(NULL, g_pool, &err);	/* NULL: $CEPH_CONF */
	ck_assert_msg(R != NULL, "bl_rados_open(%s): %d", g_pool, err);
}

/* and thread-local raws off, which the thread_local group turns on */
static void teardown(void)
{
	bl_rados_close(R);
	R = NULL;
	tu_thread_local_off();
}

/* A fresh object name per call: tests never see each other's objects. */
static const char *oid(const char *what)
{
	static char buf[8][96];
	static unsigned n;
	char *b = buf[n % 8];

	snprintf(b, sizeof(buf[0]), "bl_test_ceph.%ld.%u.%s", (long)getpid(),
		 n++, what);
	return b;
}

static struct bl_stats stats(void)
{
	struct bl_stats s;

	bl_stats_get(&s);
	return s;
}

/* @len random bytes as segments of [1, max_seg] bytes, each its own raw;
 * returns the bytes (malloc'd, caller frees). */
static unsigned char *make_list(struct bl_list *l, size_t len, size_t max_seg)
{
	unsigned char *want = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(want);
	tu_fill(want, len, &g_rng);
	tu_append_segmented(l, want, len, max_seg, 1, &g_rng);
	ck_assert_uint_eq(bl_list_length(l), len);
	return want;
}

/* Reads all of @o (@len bytes expected) and compares with @want. */
static void assert_object(const char *o, const void *want, size_t len)
{
	struct bl_list got;
	uint64_t size = 0;

	ck_assert_int_eq(bl_rados_stat(R, o, &size, NULL), 0);
	ck_assert_uint_eq(size, len);
	bl_list_init(&got);
	ck_assert_int_eq(bl_rados_read(R, o, 0, len + 4096, &got),
			 (ssize_t)len);
	tu_assert_list_eq(&got, want, len);
	bl_list_clear(&got);
}

/* ---- write, read back ---------------------------------------------------- */

/* Sizes from 1 byte to 8 MiB, segments of odd sizes up to @max_seg each. */
static const struct {
	size_t len, max_seg;
} cases[] = {
	{ 1, 1 },
	{ 2, 1 },
	{ 4095, 7 },
	{ 4097, 4097 },
	{ 65537, 999 },
	{ 1 * MIB + 3, 65537 },
	{ 3 * MIB + 1, 401 },		/* about 15000 segments */
	{ 8 * MIB, 40961 },
	{ 8 * MIB, 7 * MIB },
};

static void write_read_case(size_t i, int full)
{
	struct bl_list l, got;
	struct bl_stats s;
	const char *o = oid(full ? "write_full" : "write");
	unsigned char *want;

	bl_list_init(&l);
	bl_list_init(&got);
	want = make_list(&l, cases[i].len, cases[i].max_seg);
	bl_stats_reset();
	if (full)
		ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	else
		ck_assert_int_eq(bl_rados_write(R, o, &l, 0), 0);
	s = stats();
	ck_assert_uint_eq(s.copied_bytes, 0);
	ck_assert_uint_eq(s.copy_ops, 0);
	ck_assert_uint_eq(bl_rados_copied_bytes(), 0);

	ck_assert_int_eq(bl_rados_read(R, o, 0, cases[i].len, &got),
			 (ssize_t)cases[i].len);
	s = stats();
	ck_assert_uint_eq(s.copied_bytes, 0);
	ck_assert_uint_eq(bl_rados_copied_bytes(), 0);
	ck_assert(bl_list_contents_equal(&got, &l));
	tu_assert_list_eq(&got, want, cases[i].len);
	fprintf(stderr, "test_ceph: %zu bytes: wrote %u segments, read %u\n",
		cases[i].len, bl_list_num_buffers(&l),
		bl_list_num_buffers(&got));
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	bl_list_clear(&got);
	bl_list_clear(&l);
	free(want);
}

START_TEST(test_write_full_of_segmented_lists_reads_back_equal_without_copies)
{
	write_read_case((size_t)_i, 1);
}
END_TEST

START_TEST(test_write_of_segmented_lists_reads_back_equal_without_copies)
{
	write_read_case((size_t)_i, 0);
}
END_TEST

START_TEST(test_write_at_offsets_and_past_the_end)
{
	const char *o = oid("offsets");
	size_t size = 100000, end = 200010;
	unsigned char *model = calloc(1, end);
	unsigned char *a, *b;
	struct bl_list l, got;

	ck_assert_ptr_nonnull(model);
	bl_list_init(&l);
	bl_list_init(&got);
	a = make_list(&l, size, 3001);
	memcpy(model, a, size);
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	bl_list_clear(&l);

	/* overwrite the middle */
	b = make_list(&l, 30001, 333);
	memcpy(model + 50000, b, 30001);
	ck_assert_int_eq(bl_rados_write(R, o, &l, 50000), 0);
	bl_list_clear(&l);
	free(b);
	assert_object(o, model, size);

	/* past the end: a hole that reads as zeros */
	b = make_list(&l, 10, 3);
	memcpy(model + 200000, b, 10);
	ck_assert_int_eq(bl_rados_write(R, o, &l, 200000), 0);
	bl_list_clear(&l);
	free(b);
	assert_object(o, model, end);

	/* a read crossing the end returns what is there */
	ck_assert_int_eq(bl_rados_read(R, o, 199995, 100, &got), 15);
	tu_assert_list_eq(&got, model + 199995, 15);
	bl_list_clear(&got);
	/* at or past the end: nothing, and the list is untouched */
	ck_assert_int_eq(bl_list_append(&got, "abc", 3), 0);
	ck_assert_int_eq(bl_rados_read(R, o, end, 100, &got), 0);
	ck_assert_int_eq(bl_rados_read(R, o, 300000, 100, &got), 0);
	ck_assert_int_eq(bl_rados_read(R, o, 0, 0, &got), 0);
	tu_assert_list_eq(&got, "abc", 3);
	/* appended after what the list had */
	ck_assert_int_eq(bl_rados_read(R, o, 50000, 1000, &got), 1000);
	ck_assert_uint_eq(bl_list_length(&got), 1003);
	{
		unsigned char tmp[1000];

		ck_assert_int_eq(bl_list_copy_out(&got, 3, 1000, tmp), 0);
		ck_assert_mem_eq(tmp, model + 50000, 1000);
	}
	bl_list_clear(&got);

	/* write_full replaces: the object shrinks */
	b = make_list(&l, 777, 77);
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	bl_list_clear(&l);
	assert_object(o, b, 777);
	free(b);

	/* an empty write_full leaves an empty object */
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	assert_object(o, "", 0);

	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	free(a);
	free(model);
}
END_TEST

START_TEST(test_stat_reports_size_and_a_recent_mtime)
{
	const char *o = oid("stat");
	struct bl_list l;
	uint64_t size = 0;
	int64_t mtime = 0;
	unsigned char *w;
	time_t now = time(NULL);

	bl_list_init(&l);
	w = make_list(&l, 12345, 1000);
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	ck_assert_int_eq(bl_rados_stat(R, o, &size, &mtime), 0);
	ck_assert_uint_eq(size, 12345);
	/* the cluster's clock is this machine's */
	ck_assert_int_ge(mtime, (int64_t)now - 60);
	ck_assert_int_le(mtime, (int64_t)now + 60);
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), 0);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	ck_assert_int_eq(bl_rados_stat(R, o, &size, &mtime), -ENOENT);
	bl_list_clear(&l);
	free(w);
}
END_TEST

/* ---- reads return Ceph's buffers ---------------------------------------- */

START_TEST(test_read_returns_claimed_ceph_buffers_released_with_the_list)
{
	const char *o = oid("claimed");
	struct bl_list l, got;
	long live0 = bl__ceph_live_ptrs();
	unsigned char *w;
	unsigned n;

	bl_list_init(&l);
	bl_list_init(&got);
	w = make_list(&l, 2 * MIB + 5, 100003);
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_read(R, o, 0, 2 * MIB + 5, &got),
			 2 * MIB + 5);
	ck_assert_uint_eq(stats().copied_bytes, 0);
	n = bl_list_num_buffers(&got);
	ck_assert_uint_ge(n, 1);
	/* every segment is a raw that claims one Ceph buffer */
	ck_assert_int_eq(bl__ceph_live_ptrs() - live0, (long)n);
	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_list_get_ptr(&got, i, &p), 0);
		ck_assert_int_eq(p.raw->kind, BL__RAW_CLAIMED);
		ck_assert_ptr_nonnull(p.raw->u.claim.fn);
		ck_assert_ptr_nonnull(p.raw->u.claim.opaque);
		bl_ptr_release(&p);
	}
	tu_assert_list_eq(&got, w, 2 * MIB + 5);
	/* dropping the list runs the free callbacks: the Ceph ptrs go */
	bl_list_clear(&got);
	ck_assert_int_eq(bl__ceph_live_ptrs(), live0);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	bl_list_clear(&l);
	free(w);
}
END_TEST

/* ---- aio ----------------------------------------------------------------- */

struct waiter {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned done;
	int res;
	struct bl_list *out;	/* reads: its length when the callback ran */
	size_t out_len;
};

#define WAITER_INIT { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 1, NULL, 0 }

static void on_done(int res, void *arg)
{
	struct waiter *w = arg;

	pthread_mutex_lock(&w->mu);
	w->res = res;
	if (w->out)
		w->out_len = bl_list_length(w->out);
	w->done++;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
}

static int wait_for(struct waiter *w, unsigned n)
{
	int res;

	pthread_mutex_lock(&w->mu);
	while (w->done < n)
		pthread_cond_wait(&w->cv, &w->mu);
	res = w->res;
	pthread_mutex_unlock(&w->mu);
	return res;
}

/* Segments in malloc'd blocks whose free callback poisons them: a write
 * that read them after the list let go would send 0xdd bytes (and ASan
 * would report a use after free). */
static unsigned g_poisoned;

static void poison_free(void *data, size_t len, void *opaque)
{
	memset(data, 0xdd, len);
	free(data);
	__atomic_fetch_add(&g_poisoned, 1, __ATOMIC_RELAXED);
}

static unsigned char *make_poison_list(struct bl_list *l, size_t len,
				       size_t max_seg, unsigned *nseg)
{
	unsigned char *want = malloc(len);
	size_t off = 0;

	ck_assert_ptr_nonnull(want);
	tu_fill(want, len, &g_rng);
	*nseg = 0;
	while (off < len) {
		size_t n = 1 + tu_rand(&g_rng) % max_seg;
		struct bl_ptr p;
		void *m;

		if (n > len - off)
			n = len - off;
		m = malloc(n);
		ck_assert_ptr_nonnull(m);
		memcpy(m, want + off, n);
		bl_ptr_from_raw(&p, bl_raw_claim(m, n, poison_free, NULL));
		ck_assert_ptr_nonnull(p.raw);
		ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
		off += n;
		(*nseg)++;
	}
	return want;
}

START_TEST(test_append_and_aio_append_add_at_the_end_without_copies)
{
	const char *o = oid("append");
	struct waiter w = WAITER_INIT;
	struct bl_list a, b, c;
	unsigned char *want = malloc(700001), *pa, *pb, *pc;

	ck_assert_ptr_nonnull(want);
	bl_list_init(&a);
	bl_list_init(&b);
	bl_list_init(&c);
	pa = make_list(&a, 100000, 999);
	pb = make_list(&b, 300001, 65537);
	pc = make_list(&c, 300000, 4096);
	memcpy(want, pa, 100000);
	memcpy(want + 100000, pb, 300001);
	memcpy(want + 400001, pc, 300000);
	bl_stats_reset();
	/* the first append creates the object */
	ck_assert_int_eq(bl_rados_append(R, o, &a), 0);
	ck_assert_int_eq(bl_rados_aio_append(R, o, &b, on_done, &w), 0);
	bl_list_clear(&b);	/* the bridge holds its own references */
	ck_assert_int_eq(wait_for(&w, 1), 0);
	ck_assert_int_eq(bl_rados_append(R, o, &c), 0);
	ck_assert_uint_eq(stats().copied_bytes, 0);
	ck_assert_uint_eq(bl_rados_copied_bytes(), 0);
	assert_object(o, want, 700001);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	/* bad arguments change nothing and reach no server */
	ck_assert_int_eq(bl_rados_append(NULL, o, &a), -EINVAL);
	ck_assert_int_eq(bl_rados_append(R, NULL, &a), -EINVAL);
	ck_assert_int_eq(bl_rados_append(R, o, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_aio_append(R, o, NULL, on_done, &w), -EINVAL);
	ck_assert_uint_eq(w.done, 1);
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), -ENOENT);
	bl_list_clear(&a);
	bl_list_clear(&c);
	free(pa);
	free(pb);
	free(pc);
	free(want);
}
END_TEST

START_TEST(test_aio_write_survives_the_caller_clearing_its_list_at_once)
{
	const char *o = oid("aio_write");
	struct waiter w = WAITER_INIT;
	struct bl_list l;
	unsigned char *want;
	unsigned nseg;
	size_t len = 5 * MIB + 11;

	bl_list_init(&l);
	g_poisoned = 0;
	want = make_poison_list(&l, len, 60001, &nseg);
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_aio_write(R, o, &l, 0, on_done, &w), 0);
	bl_list_clear(&l);	/* the bridge still holds every segment */
	ck_assert_int_eq(wait_for(&w, 1), 0);
	ck_assert_uint_eq(stats().copied_bytes, 0);
	ck_assert_uint_eq(bl_rados_copied_bytes(), 0);
	/* the holder went before the callback: every block is gone now */
	ck_assert_uint_eq(__atomic_load_n(&g_poisoned, __ATOMIC_RELAXED),
			  nseg);
	assert_object(o, want, len);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	free(want);
}
END_TEST

/*
 * A list of thread-local raws goes as a copy: the bridge's references are
 * dropped on a librados thread, where such a raw may not be touched.  The
 * caller's raws get no reference from the bridge (each stays at 1), so
 * clearing the list frees them at once, and the object still gets the
 * bytes (from the copy, not the poisoned blocks).  Its own tcase, last:
 * the other tests assert that nothing copied, in one process under
 * valgrind.
 */
START_TEST(test_aio_write_of_thread_local_raws_sends_a_copy)
{
	const char *o = oid("aio_local");
	struct waiter w = WAITER_INIT;
	struct bl_list_seg_iter it;
	const struct bl_seg *seg;
	struct bl_list l;
	unsigned char *want;
	unsigned nseg;
	size_t len = MIB + 7;
	uint64_t c0 = bl_rados_copied_bytes();

	bl_list_init(&l);
	bl_raw_set_thread_local(true);
	g_poisoned = 0;
	want = make_poison_list(&l, len, 60001, &nseg);
	BL_LIST_FOREACH_SEG(&l, it, seg)
		ck_assert(bl_raw_is_thread_local(seg->raw));
	ck_assert_int_eq(bl_rados_aio_write(R, o, &l, 0, on_done, &w), 0);
	BL_LIST_FOREACH_SEG(&l, it, seg)
		ck_assert_uint_eq(bl_raw_nref(seg->raw), 1);
	ck_assert_uint_eq(bl_rados_copied_bytes() - c0, len);
	bl_list_clear(&l);
	ck_assert_uint_eq(__atomic_load_n(&g_poisoned, __ATOMIC_RELAXED),
			  nseg);
	ck_assert_int_eq(wait_for(&w, 1), 0);
	bl_raw_set_thread_local(false);
	assert_object(o, want, len);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	free(want);
}
END_TEST

START_TEST(test_aio_write_full_and_aio_read_round_trip)
{
	const char *o = oid("aio_full");
	struct waiter w = WAITER_INIT, r = WAITER_INIT;
	struct bl_list l, got;
	unsigned char *want, *part;
	unsigned nseg;
	size_t len = 8 * MIB;

	bl_list_init(&l);
	bl_list_init(&got);
	want = make_poison_list(&l, len, 1 * MIB, &nseg);
	ck_assert_int_eq(bl_rados_aio_write_full(R, o, &l, on_done, &w), 0);
	bl_list_clear(&l);
	ck_assert_int_eq(wait_for(&w, 1), 0);

	/* overwrite a middle range with aio_write at an offset */
	part = make_poison_list(&l, 100003, 997, &nseg);
	memcpy(want + 3 * MIB + 1, part, 100003);
	ck_assert_int_eq(bl_rados_aio_write(R, o, &l, 3 * MIB + 1, on_done, &w),
			 0);
	bl_list_clear(&l);
	ck_assert_int_eq(wait_for(&w, 2), 0);
	free(part);

	ck_assert_int_eq(bl_list_append(&got, "pre", 3), 0);
	r.out = &got;
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_aio_read(R, o, 0, len, &got, on_done, &r),
			 0);
	ck_assert_int_eq(wait_for(&r, 1), (int)len);
	/* filled before the callback ran */
	ck_assert_uint_eq(r.out_len, 3 + len);
	ck_assert_uint_eq(stats().copied_bytes, 0);
	{
		struct bl_list tail;

		bl_list_init(&tail);
		ck_assert_int_eq(bl_list_splice(&got, 0, 3, &tail), 0);
		tu_assert_list_eq(&tail, "pre", 3);
		bl_list_clear(&tail);
	}
	tu_assert_list_eq(&got, want, len);
	bl_list_clear(&got);

	/* a read of nothing completes at once */
	ck_assert_int_eq(bl_rados_aio_read(R, o, 0, 0, &got, on_done, &r), 0);
	ck_assert_uint_eq(r.done, 2);
	ck_assert_int_eq(r.res, 0);
	ck_assert_uint_eq(bl_list_length(&got), 0);

	ck_assert_int_eq(bl_rados_aio_remove(R, o, on_done, &w), 0);
	ck_assert_int_eq(wait_for(&w, 3), 0);
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), -ENOENT);
	free(want);
}
END_TEST

START_TEST(test_close_waits_for_aio_in_flight)
{
	enum { N = 16 };
	struct waiter w = WAITER_INIT;
	char names[N][96];
	unsigned char *want[N];
	struct bl_list l;
	uint64_t size;
	int err;

	bl_list_init(&l);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "%s", oid("inflight"));
		want[i] = make_list(&l, 65536 + i, 4099);
		ck_assert_int_eq(bl_rados_aio_write_full(R, names[i], &l,
							 on_done, &w),
				 0);
		bl_list_clear(&l);
	}
	bl_rados_close(R);
	R = NULL;
	/* every callback has returned: no waiting needed */
	ck_assert_uint_eq(w.done, N);
	ck_assert_int_eq(w.res, 0);

	R = bl_rados_open(getenv("CEPH_CONF"), g_pool, &err);
	ck_assert_msg(R != NULL, "reopen: %d", err);
	for (int i = 0; i < N; i++) {
		ck_assert_int_eq(bl_rados_stat(R, names[i], &size, NULL), 0);
		ck_assert_uint_eq(size, 65536 + i);
		assert_object(names[i], want[i], 65536 + i);
		ck_assert_int_eq(bl_rados_remove(R, names[i]), 0);
		free(want[i]);
	}
}
END_TEST

START_TEST(test_aio_flush_waits_for_every_callback)
{
	enum { N = 16 };
	struct waiter w = WAITER_INIT;
	char names[N][96];
	struct bl_list l;

	ck_assert_int_eq(bl_rados_aio_flush(NULL, -1), -EINVAL);
	ck_assert_int_eq(bl_rados_aio_flush(R, 0), 0);	/* nothing yet */
	bl_list_init(&l);
	for (int i = 0; i < N; i++) {
		snprintf(names[i], sizeof(names[i]), "%s", oid("flush"));
		free(make_list(&l, 1 * MIB + i, 65537));
		ck_assert_int_eq(bl_rados_aio_write_full(R, names[i], &l,
							 on_done, &w),
				 0);
		bl_list_clear(&l);
	}
	ck_assert_int_eq(bl_rados_aio_flush(R, -1), 0);
	/* every callback has returned, without the waiter's help */
	pthread_mutex_lock(&w.mu);
	ck_assert_uint_eq(w.done, N);
	pthread_mutex_unlock(&w.mu);
	ck_assert_int_eq(w.res, 0);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(bl_rados_aio_remove(R, names[i], on_done, &w),
				 0);
	ck_assert_int_eq(bl_rados_aio_flush(R, 30000), 0);
	ck_assert_uint_eq(w.done, 2 * N);
	ck_assert_int_eq(w.res, 0);
}
END_TEST

START_TEST(test_aio_stat_reports_size_and_mtime_before_the_callback)
{
	struct waiter w = WAITER_INIT;
	const char *o = oid("aio_stat");
	uint64_t size = 77;
	int64_t mtime = 77;
	struct bl_list l;

	bl_list_init(&l);
	free(make_list(&l, 12345, 999));
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	ck_assert_int_eq(bl_rados_aio_stat(R, o, &size, &mtime, on_done, &w),
			 0);
	ck_assert_int_eq(wait_for(&w, 1), 0);
	ck_assert_uint_eq(size, 12345);
	ck_assert(mtime > time(NULL) - 600 && mtime <= time(NULL) + 600);
	ck_assert_int_eq(bl_rados_aio_stat(R, o, NULL, NULL, on_done, &w), 0);
	ck_assert_int_eq(wait_for(&w, 2), 0);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	/* a missing object: -ENOENT, and the outputs stay as they were */
	size = 77;
	mtime = 77;
	ck_assert_int_eq(bl_rados_aio_stat(R, o, &size, &mtime, on_done, &w),
			 0);
	ck_assert_int_eq(wait_for(&w, 3), -ENOENT);
	ck_assert_uint_eq(size, 77);
	ck_assert_int_eq(mtime, 77);
	ck_assert_int_eq(bl_rados_aio_stat(NULL, o, &size, &mtime, on_done,
					   &w),
			 -EINVAL);
	ck_assert_int_eq(bl_rados_aio_stat(R, NULL, &size, &mtime, on_done,
					   &w),
			 -EINVAL);
	bl_list_clear(&l);
}
END_TEST

struct flush_in_cb {
	struct waiter w;
	int flush_res;
};

static void flush_from_cb(int res, void *arg)
{
	struct flush_in_cb *f = arg;

	f->flush_res = bl_rados_aio_flush(R, 0);
	on_done(res, &f->w);
}

START_TEST(test_aio_flush_from_a_callback_is_edeadlk)
{
	struct flush_in_cb f = { WAITER_INIT, 1 };
	const char *o = oid("flush_cb");
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	ck_assert_int_eq(bl_rados_aio_write_full(R, o, &l, flush_from_cb, &f),
			 0);
	ck_assert_int_eq(wait_for(&f.w, 1), 0);
	ck_assert_int_eq(f.flush_res, -EDEADLK);
	ck_assert_int_eq(bl_rados_aio_flush(R, -1), 0);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	bl_list_clear(&l);
}
END_TEST

/* ---- listing, namespaces, locators, the librados handles ---------------- */

struct seen {
	char names[64][128];
	char ns[64][64];
	unsigned n;
	unsigned stop_after;	/* 0: never stop */
};

static int note_object(const char *o, const char *nspace, const char *loc,
		       void *arg)
{
	struct seen *sn = arg;

	(void)loc;
	if (sn->n < 64) {
		snprintf(sn->names[sn->n], sizeof(sn->names[0]), "%s", o);
		snprintf(sn->ns[sn->n], sizeof(sn->ns[0]), "%s", nspace);
	}
	sn->n++;
	return sn->stop_after && sn->n == sn->stop_after ? 42 : 0;
}

static bool seen_has(const struct seen *sn, const char *o, const char *nspace)
{
	for (unsigned i = 0; i < sn->n && i < 64; i++)
		if (!strcmp(sn->names[i], o) && !strcmp(sn->ns[i], nspace))
			return true;
	return false;
}

START_TEST(test_list_finds_objects_by_prefix_in_the_namespace)
{
	char pfx[64], a[96], b[96], other[96];
	struct seen sn;
	struct bl_list l;

	snprintf(pfx, sizeof(pfx), "bl_test_list.%ld.", (long)getpid());
	snprintf(a, sizeof(a), "%sa", pfx);
	snprintf(b, sizeof(b), "%sb", pfx);
	snprintf(other, sizeof(other), "bl_test_nolist.%ld", (long)getpid());
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	ck_assert_int_eq(bl_rados_write_full(R, a, &l), 0);
	ck_assert_int_eq(bl_rados_write_full(R, other, &l), 0);
	ck_assert_int_eq(bl_rados_set_namespace(R, "bl_test_ns"), 0);
	ck_assert_int_eq(bl_rados_write_full(R, b, &l), 0);

	/* in the namespace: only b */
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(bl_rados_list(R, pfx, note_object, &sn), 0);
	ck_assert_uint_eq(sn.n, 1);
	ck_assert(seen_has(&sn, b, "bl_test_ns"));
	/* every namespace: a and b, not the other name */
	ck_assert_int_eq(bl_rados_set_namespace(R, BL_RADOS_ALL_NAMESPACES), 0);
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(bl_rados_list(R, pfx, note_object, &sn), 0);
	ck_assert_uint_eq(sn.n, 2);
	ck_assert(seen_has(&sn, a, "") && seen_has(&sn, b, "bl_test_ns"));
	/* the callback's nonzero value stops it and comes back */
	memset(&sn, 0, sizeof(sn));
	sn.stop_after = 1;
	ck_assert_int_eq(bl_rados_list(R, pfx, note_object, &sn), 42);
	ck_assert_uint_eq(sn.n, 1);
	/* the default namespace again; NULL prefix lists everything */
	ck_assert_int_eq(bl_rados_set_namespace(R, NULL), 0);
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(bl_rados_list(R, NULL, note_object, &sn), 0);
	ck_assert(sn.n >= 2);
	ck_assert_int_eq(bl_rados_stat(R, b, NULL, NULL), -ENOENT);
	ck_assert_int_eq(bl_rados_remove(R, a), 0);
	ck_assert_int_eq(bl_rados_remove(R, other), 0);
	ck_assert_int_eq(bl_rados_set_namespace(R, "bl_test_ns"), 0);
	ck_assert_int_eq(bl_rados_remove(R, b), 0);
	ck_assert_int_eq(bl_rados_set_namespace(R, ""), 0);

	ck_assert_int_eq(bl_rados_list(NULL, NULL, note_object, &sn), -EINVAL);
	ck_assert_int_eq(bl_rados_list(R, NULL, NULL, &sn), -EINVAL);
	ck_assert_int_eq(bl_rados_set_namespace(NULL, "x"), -EINVAL);
	ck_assert_int_eq(bl_rados_set_locator(NULL, "x"), -EINVAL);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_locator_key_places_and_names_objects)
{
	const char *o = oid("locator");
	struct bl_list l, got;
	struct seen sn;
	char pfx[64];

	snprintf(pfx, sizeof(pfx), "%s", o);
	bl_list_init(&l);
	bl_list_init(&got);
	ck_assert_int_eq(bl_list_append(&l, "loc", 3), 0);
	ck_assert_int_eq(bl_rados_set_locator(R, "bl_test_key"), 0);
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	ck_assert_int_eq(bl_rados_read(R, o, 0, 10, &got), 3);
	memset(&sn, 0, sizeof(sn));
	ck_assert_int_eq(bl_rados_list(R, pfx, note_object, &sn), 0);
	ck_assert_uint_eq(sn.n, 1);
	/* the object is (name, key): without the key it is another one */
	ck_assert_int_eq(bl_rados_set_locator(R, NULL), 0);
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), -ENOENT);
	ck_assert_int_eq(bl_rados_set_locator(R, "bl_test_key"), 0);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	ck_assert_int_eq(bl_rados_set_locator(R, ""), 0);
	bl_list_clear(&got);
	bl_list_clear(&l);
}
END_TEST

static int note_locator(const char *o, const char *nspace, const char *loc,
			void *arg)
{
	(void)o;
	(void)nspace;
	snprintf(arg, 64, "%s", loc);
	return 0;
}

START_TEST(test_cluster_and_ioctx_are_librados_handles_of_the_bridge)
{
	const char *o = oid("ioctx");
	rados_ioctx_t io = bl_rados_ioctx(R);
	char buf[8] = { 0 }, loc[64] = "unset";
	struct bl_list l;
	uint64_t size = 0;
	time_t mt;

	ck_assert_ptr_nonnull(bl_rados_cluster(R));
	ck_assert_ptr_nonnull(io);
	ck_assert_ptr_null(bl_rados_cluster(NULL));
	ck_assert_ptr_null(bl_rados_ioctx(NULL));
	ck_assert_int_eq(rados_pool_lookup(bl_rados_cluster(R), g_pool),
			 rados_ioctx_get_id(io));
	/* the namespace set through the bridge is the I/O context's */
	ck_assert_int_eq(bl_rados_set_namespace(R, "bl_test_ns2"), 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "shared", 6), 0);
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	ck_assert_int_eq(rados_stat(io, o, &size, &mt), 0);
	ck_assert_uint_eq(size, 6);
	ck_assert_int_eq(rados_read(io, o, buf, sizeof(buf), 0), 6);
	ck_assert_int_eq(memcmp(buf, "shared", 6), 0);
	ck_assert_int_eq(bl_rados_list(R, o, note_locator, loc), 0);
	ck_assert_str_eq(loc, "");
	ck_assert_int_eq(rados_remove(io, o), 0);
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), -ENOENT);
	ck_assert_int_eq(bl_rados_set_namespace(R, NULL), 0);
	bl_list_clear(&l);
}
END_TEST

/* ---- extended attributes ------------------------------------------------ */

struct xattrs_seen {
	char names[8][32];
	struct bl_list vals;	/* every value, kept without a copy */
	unsigned n;
};

static int note_xattr(const char *name, const struct bl_list *val, void *arg)
{
	struct xattrs_seen *x = arg;

	if (x->n < 8)
		snprintf(x->names[x->n], sizeof(x->names[0]), "%s", name);
	x->n++;
	return bl_list_append_list(&x->vals, val);
}

static int stop_xattrs(const char *name, const struct bl_list *val, void *arg)
{
	(void)name;
	(void)val;
	(void)arg;
	return 7;
}

START_TEST(test_xattrs_set_get_list_remove_without_copies)
{
	const char *o = oid("xattr");
	struct bl_list v, got, empty;
	struct xattrs_seen x = { 0 };
	unsigned char *want;

	bl_list_init(&v);
	bl_list_init(&got);
	bl_list_init(&empty);
	bl_list_init(&x.vals);
	want = make_list(&v, 3000, 77);	/* 40-odd segments */
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_setxattr(R, o, "user.b", &v), 0);
	ck_assert_int_eq(bl_rados_setxattr(R, o, "user.a", &empty), 0);
	ck_assert_int_eq(bl_rados_getxattr(R, o, "user.b", &got), 3000);
	ck_assert_uint_eq(stats().copied_bytes, 0);
	tu_assert_list_eq(&got, want, 3000);
	ck_assert_int_eq(bl_rados_getxattr(R, o, "user.a", &got), 0);
	ck_assert_int_eq(bl_rados_getxattr(R, o, "user.none", &got), -ENODATA);
	ck_assert_uint_eq(bl_list_length(&got), 3000);

	ck_assert_int_eq(bl_rados_getxattrs(R, o, note_xattr, &x), 0);
	ck_assert_uint_eq(x.n, 2);
	ck_assert_str_eq(x.names[0], "user.a");	/* name order */
	ck_assert_str_eq(x.names[1], "user.b");
	tu_assert_list_eq(&x.vals, want, 3000);
	ck_assert_int_eq(bl_rados_getxattrs(R, o, stop_xattrs, NULL), 7);

	ck_assert_int_eq(bl_rados_rmxattr(R, o, "user.b"), 0);
	ck_assert_int_eq(bl_rados_getxattr(R, o, "user.b", &got), -ENODATA);
	/* the OSD removes a missing attribute without a word */
	ck_assert_int_eq(bl_rados_rmxattr(R, o, "user.b"), 0);
	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	ck_assert_int_eq(bl_rados_getxattrs(R, o, note_xattr, &x), -ENOENT);
	ck_assert_int_eq(bl_rados_getxattr(R, o, "user.a", &got), -ENOENT);

	ck_assert_int_eq(bl_rados_setxattr(NULL, o, "n", &v), -EINVAL);
	ck_assert_int_eq(bl_rados_setxattr(R, NULL, "n", &v), -EINVAL);
	ck_assert_int_eq(bl_rados_setxattr(R, o, NULL, &v), -EINVAL);
	ck_assert_int_eq(bl_rados_setxattr(R, o, "n", NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_getxattr(R, o, "n", NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_rmxattr(R, o, NULL), -EINVAL);
	ck_assert_int_eq(bl_rados_getxattrs(R, o, NULL, NULL), -EINVAL);
	ck_assert_uint_eq(bl_list_length(&got), 3000);
	bl_list_clear(&x.vals);
	bl_list_clear(&got);
	bl_list_clear(&v);
	free(want);
}
END_TEST

/* ---- what the whole client process copies ----------------------------- */

/*
 * memcpy and memmove defined here take the place of libc's for every
 * caller in the process that goes through the PLT: librados and
 * libceph-common included, on any of their threads.  While counting, calls
 * of 4 KiB or more add up their bytes (smaller ones are headers and
 * metadata).  Copies the compiler inlines and the kernel's socket copies
 * are not seen.  Off under ASan and TSan, whose runtimes own these names.
 */
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define BL_COUNT_MEMCPY 1
#include <dlfcn.h>

typedef void *(*copy_fn)(void *, const void *, size_t);
static copy_fn real_memcpy, real_memmove;
static int counting;
static uint64_t big_copied;

/* only while dlsym itself copies, before the real functions are known */
static void *copy_bytes(void *d, const void *s, size_t n)
{
	volatile unsigned char *dd = d;
	const volatile unsigned char *ss = s;

	if ((uintptr_t)d < (uintptr_t)s)
		for (size_t i = 0; i < n; i++)
			dd[i] = ss[i];
	else
		for (size_t i = n; i--;)
			dd[i] = ss[i];
	return d;
}

static copy_fn find_real(const char *name, copy_fn *slot)
{
	static int looking;
	copy_fn f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (f)
		return f;
	if (__atomic_exchange_n(&looking, 1, __ATOMIC_ACQ_REL))
		return copy_bytes;
	f = (copy_fn)dlsym(RTLD_NEXT, name);
	__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	__atomic_store_n(&looking, 0, __ATOMIC_RELEASE);
	return f ? f : copy_bytes;
}

static void count(size_t n)
{
	if (n >= 4096 && __atomic_load_n(&counting, __ATOMIC_RELAXED))
		__atomic_fetch_add(&big_copied, n, __ATOMIC_RELAXED);
}

void *memcpy(void *restrict d, const void *restrict s, size_t n)
{
	count(n);
	return find_real("memcpy", &real_memcpy)(d, s, n);
}

void *memmove(void *d, const void *s, size_t n)
{
	count(n);
	return find_real("memmove", &real_memmove)(d, s, n);
}

static void count_start(void)
{
	__atomic_store_n(&big_copied, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&counting, 1, __ATOMIC_SEQ_CST);
}

static uint64_t count_stop(void)
{
	__atomic_store_n(&counting, 0, __ATOMIC_SEQ_CST);
	return __atomic_load_n(&big_copied, __ATOMIC_RELAXED);
}

START_TEST(test_the_client_process_copies_no_payload_for_writes_and_reads)
{
	const size_t len = 32 * MIB;
	const char *o = oid("memcpy"), *oc = oid("memcpy_c");
	struct waiter w = WAITER_INIT;
	struct bl_list l, got;
	unsigned char *want;
	uint64_t copied;
	rados_t cl;
	rados_ioctx_t io;

	bl_list_init(&l);
	bl_list_init(&got);
	want = make_list(&l, len, 4 * MIB);

	count_start();
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	copied = count_stop();
	fprintf(stderr, "test_ceph: memcpy'd by the process for a %zu-byte "
		"bl_rados_write_full: %" PRIu64 "\n", len, copied);
	ck_assert_uint_eq(copied, 0);

	count_start();
	ck_assert_int_eq(bl_rados_aio_write(R, o, &l, 0, on_done, &w), 0);
	ck_assert_int_eq(wait_for(&w, 1), 0);
	copied = count_stop();
	ck_assert_uint_eq(copied, 0);

	/* the hinted path (one compound op) shares the bytes too */
	ck_assert_int_eq(bl_rados_set_alloc_hint(R, len, 4 * MIB,
						 BL_RADOS_HINT_IMMUTABLE), 0);
	count_start();
	ck_assert_int_eq(bl_rados_write_full(R, o, &l), 0);
	ck_assert_int_eq(bl_rados_aio_write(R, o, &l, 0, on_done, &w), 0);
	ck_assert_int_eq(wait_for(&w, 2), 0);
	copied = count_stop();
	fprintf(stderr, "test_ceph: memcpy'd by the process for hinted "
		"%zu-byte write_full + aio_write: %" PRIu64 "\n", len, copied);
	ck_assert_uint_eq(copied, 0);
	ck_assert_int_eq(bl_rados_set_alloc_hint(R, 0, 0, 0), 0);

	count_start();
	ck_assert_int_eq(bl_rados_read(R, o, 0, len, &got), (ssize_t)len);
	copied = count_stop();
	fprintf(stderr, "test_ceph: memcpy'd by the process for a %zu-byte "
		"bl_rados_read: %" PRIu64 "\n", len, copied);
	ck_assert_uint_eq(copied, 0);
	tu_assert_list_eq(&got, want, len);
	bl_list_clear(&got);

	/* the control: the same counter sees librados' own C API copy */
	ck_assert_int_eq(rados_create(&cl, NULL), 0);
	ck_assert_int_eq(rados_conf_read_file(cl, NULL), 0);
	ck_assert_int_eq(rados_connect(cl), 0);
	ck_assert_int_eq(rados_ioctx_create(cl, g_pool, &io), 0);
	count_start();
	ck_assert_int_eq(rados_write_full(io, oc, (const char *)want, len), 0);
	copied = count_stop();
	fprintf(stderr, "test_ceph: memcpy'd by the process for a %zu-byte "
		"rados_write_full (C API): %" PRIu64 "\n", len, copied);
	ck_assert_uint_ge(copied, len);
	ck_assert_int_eq(rados_remove(io, oc), 0);
	rados_ioctx_destroy(io);
	rados_shutdown(cl);

	ck_assert_int_eq(bl_rados_remove(R, o), 0);
	bl_list_clear(&l);
	free(want);
}
END_TEST
#endif

/* ---- allocation hints ------------------------------------------------------ */

/*
 * What the OSD received is read back from the OSD itself: its op tracker
 * keeps the description of every recent op ("...:OID:head [set-alloc-hint
 * object_size N write_size M,write 0~L] ..."), dumped by the tell command
 * dump_historic_ops.  The history keeps the slowest osd_op_history_size
 * ops (20 by default), so the test raises that first.  The OSD prints a
 * hint's object and write sizes, not its flags: the flags are checked
 * only as far as librados' values are ours (a static_assert in ceph_priv.h).
 */
/* A monitor command's JSON answer, NUL-terminated (free()). */
static char *mon_json(rados_t c, const char *cmd)
{
	char *outs = NULL, *outbuf = NULL, *r;
	size_t outslen = 0, outlen = 0;

	ck_assert_int_eq(rados_mon_command(c, &cmd, 1, "", 0, &outbuf,
					   &outlen, &outs, &outslen), 0);
	r = malloc(outlen + 1);
	ck_assert_ptr_nonnull(r);
	memcpy(r, outbuf, outlen);
	r[outlen] = '\0';
	rados_buffer_free(outbuf);
	rados_buffer_free(outs);
	return r;
}

static rados_t osd_admin(void)
{
	static const char *cmd[] = {
		"{\"prefix\": \"config set\", \"var\": \"osd_op_history_size\", \"val\": [\"10000\"]}"
	};
	char *outs, *outbuf, *ids, *p, *end;
	size_t outslen, outlen;
	rados_t c;
	int n = 0;

	ck_assert_int_eq(rados_create(&c, NULL), 0);
	ck_assert_int_eq(rados_conf_read_file(c, getenv("CEPH_CONF")), 0);
	ck_assert_int_eq(rados_connect(c), 0);
	/* every OSD: an object's primary is any of them ("[0,1,2]") */
	ids = mon_json(c, "{\"prefix\": \"osd ls\", \"format\": \"json\"}");
	for (p = strchr(ids, '['); p && *p && *p != ']'; p = end) {
		long id = strtol(p + 1, &end, 10);

		if (end == p + 1)
			break;
		outs = outbuf = NULL;
		ck_assert_int_eq(rados_osd_command(c, (int)id, cmd, 1, "", 0,
						   &outbuf, &outlen, &outs,
						   &outslen), 0);
		rados_buffer_free(outbuf);
		rados_buffer_free(outs);
		n++;
	}
	ck_assert_msg(n > 0, "no OSD in 'osd ls': %s", ids);
	free(ids);
	return c;
}

/* The OSD that holds object @o (its acting primary). */
static int primary_of(rados_t c, const char *o)
{
	char cmd[256], *j, *p;
	int id;

	snprintf(cmd, sizeof(cmd),
		 "{\"prefix\": \"osd map\", \"pool\": \"%s\", \"object\": \"%s\", \"format\": \"json\"}",
		 g_pool, o);
	j = mon_json(c, cmd);
	p = strstr(j, "\"acting_primary\":");
	ck_assert_msg(p != NULL, "osd map: %s", j);
	id = atoi(p + strlen("\"acting_primary\":"));
	free(j);
	return id;
}

/*
 * The op list the OSD recorded for object @o, e.g. "set-alloc-hint
 * object_size 8 write_size 4,write 0~4"; fails when there is none.  The
 * OSD files an op in its history only after it sent the reply, so a
 * client can ask before it is there: up to 10 s of asking.
 */
static void osd_ops_of(rados_t c, const char *o, char *ops, size_t n)
{
	static const char *cmd[] = { "{\"prefix\": \"dump_historic_ops\"}" };
	char *outs = NULL, *outbuf = NULL, *p = NULL, *end, key[128];
	size_t outslen = 0, outlen = 0;

	int osd = primary_of(c, o);

	snprintf(key, sizeof(key), ":%s:head [", o);
	for (int tries = 0; tries < 100 && !p; tries++) {
		if (tries) {
			rados_buffer_free(outbuf);
			rados_buffer_free(outs);
			usleep(100 * 1000);
		}
		ck_assert_int_eq(rados_osd_command(c, osd, cmd, 1, "", 0,
						   &outbuf, &outlen, &outs,
						   &outslen), 0);
		p = memmem(outbuf, outlen, key, strlen(key));
	}
	ck_assert_msg(p != NULL, "the OSD recorded no op on %s", o);
	p += strlen(key);
	end = memchr(p, ']', outlen - (size_t)(p - outbuf));
	ck_assert_ptr_nonnull(end);
	ck_assert_uint_lt((size_t)(end - p), n);
	memcpy(ops, p, (size_t)(end - p));
	ops[end - p] = '\0';
	rados_buffer_free(outbuf);
	rados_buffer_free(outs);
}

START_TEST(test_alloc_hint_goes_with_every_kind_of_write_until_turned_off)
{
	static const char *what[] = { "hint_write", "hint_write_full",
				      "hint_aio_write", "hint_aio_write_full",
				      "hint_append", "hint_aio_append",
				      "hint_bad_flags", "hint_off" };
	static const char *want[] = {
		"set-alloc-hint object_size 8388608 write_size 1048576,write 0~300001",
		"set-alloc-hint object_size 8388608 write_size 1048576,writefull 0~300001",
		"set-alloc-hint object_size 8388608 write_size 1048576,write 0~300001",
		"set-alloc-hint object_size 8388608 write_size 1048576,writefull 0~300001",
		"set-alloc-hint object_size 8388608 write_size 1048576,append 0~300001",
		"set-alloc-hint object_size 8388608 write_size 1048576,append 0~300001",
		"set-alloc-hint object_size 8388608 write_size 1048576,write 0~300001",
		"write 0~300001",
	};
	enum { N = sizeof(what) / sizeof(what[0]) };
	struct waiter w = WAITER_INIT;
	const char *names[N];
	struct bl_list l;
	unsigned char *bytes;
	char ops[512];
	rados_t c = osd_admin();

	bl_list_init(&l);
	bytes = make_list(&l, 300001, 70000);	/* 5+ segments */
	for (int i = 0; i < N; i++)
		names[i] = oid(what[i]);
	ck_assert_int_eq(bl_rados_set_alloc_hint(R, 8 * MIB, 1 * MIB,
						 BL_RADOS_HINT_SEQUENTIAL_WRITE |
						 BL_RADOS_HINT_IMMUTABLE), 0);
	bl_stats_reset();
	ck_assert_int_eq(bl_rados_write(R, names[0], &l, 0), 0);
	ck_assert_int_eq(bl_rados_write_full(R, names[1], &l), 0);
	ck_assert_int_eq(bl_rados_aio_write(R, names[2], &l, 0, on_done, &w), 0);
	ck_assert_int_eq(wait_for(&w, 1), 0);
	ck_assert_int_eq(bl_rados_aio_write_full(R, names[3], &l, on_done, &w),
			 0);
	ck_assert_int_eq(wait_for(&w, 2), 0);
	ck_assert_int_eq(bl_rados_append(R, names[4], &l), 0);
	ck_assert_int_eq(bl_rados_aio_append(R, names[5], &l, on_done, &w), 0);
	ck_assert_int_eq(wait_for(&w, 3), 0);
	/* a refused hint leaves the one in force as it was */
	ck_assert_int_eq(bl_rados_set_alloc_hint(R, 1, 1, BL_RADOS_HINT_ALL + 1),
			 -EINVAL);
	ck_assert_int_eq(bl_rados_write(R, names[6], &l, 0), 0);
	ck_assert_int_eq(bl_rados_set_alloc_hint(R, 0, 0, 0), 0);
	ck_assert_int_eq(bl_rados_write(R, names[7], &l, 0), 0);
	/* the hinted path shares the bytes as the plain one does */
	ck_assert_uint_eq(stats().copied_bytes, 0);
	ck_assert_uint_eq(bl_rados_copied_bytes(), 0);

	for (int i = 0; i < N; i++) {
		osd_ops_of(c, names[i], ops, sizeof(ops));
		ck_assert_str_eq(ops, want[i]);
		assert_object(names[i], bytes, 300001);
		ck_assert_int_eq(bl_rados_remove(R, names[i]), 0);
	}
	ck_assert_int_eq(bl_rados_set_alloc_hint(NULL, 0, 0, 0), -EINVAL);
	rados_shutdown(c);
	bl_list_clear(&l);
	free(bytes);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(test_missing_pool_fails_open_with_enoent)
{
	int err = 0;

	ck_assert_ptr_null(bl_rados_open(NULL, "bl-test-no-such-pool", &err));
	ck_assert_int_eq(err, -ENOENT);
}
END_TEST

START_TEST(test_open2_takes_the_client_id_and_options)
{
	const char *timeouts[] = { "rados_osd_op_timeout", "7",
				   "rados_mon_op_timeout", "7", NULL };
	const char *unknown[] = { "bl_no_such_option", "1", NULL };
	const char *odd[] = { "rados_osd_op_timeout", NULL };
	const char *bad[] = { "rados_osd_op_timeout", "soon", NULL };
	const char *o = oid("open2");
	struct bl_rados *r;
	struct bl_list l;
	int err = 1;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "open2", 5), 0);
	/* admin by its id and by its name, and NULL */
	r = bl_rados_open2(NULL, "admin", g_pool, timeouts, &err);
	ck_assert_msg(r != NULL, "open2 admin: %d", err);
	ck_assert_int_eq(err, 0);
	ck_assert_int_eq(bl_rados_write_full(r, o, &l), 0);
	bl_rados_close(r);
	r = bl_rados_open2(NULL, "client.admin", g_pool, NULL, &err);
	ck_assert_msg(r != NULL, "open2 client.admin: %d", err);
	ck_assert_int_eq(bl_rados_remove(r, o), 0);
	bl_rados_close(r);
	r = bl_rados_open2(NULL, NULL, g_pool, NULL, NULL);
	ck_assert_ptr_nonnull(r);
	bl_rados_close(r);

	err = 1;
	ck_assert_ptr_null(bl_rados_open2(NULL, NULL, g_pool, unknown, &err));
	ck_assert_int_eq(err, -ENOENT);
	ck_assert_ptr_null(bl_rados_open2(NULL, NULL, g_pool, odd, &err));
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_ptr_null(bl_rados_open2(NULL, NULL, g_pool, bad, &err));
	ck_assert_int_eq(err, -EINVAL);
	ck_assert_ptr_null(bl_rados_open2(NULL, NULL, NULL, NULL, &err));
	ck_assert_int_eq(err, -EINVAL);
	/* a client with no key in the keyring */
	err = 0;
	ck_assert_ptr_null(bl_rados_open2(NULL, "bl-test-nobody", g_pool,
					  NULL, &err));
	ck_assert_msg(err == -ENOENT || err == -EACCES || err == -EPERM,
		      "unknown client: %d", err);
	bl_list_clear(&l);
}
END_TEST

/*
 * What the OSD says of writes past its limits, as the man pages promise:
 * past osd_max_object_size (128 MiB) -EFBIG, over osd_max_write_size
 * (90 MiB) in one op -EMSGSIZE.  The 96 MiB list is one static 1 MiB
 * buffer 96 times: nothing is allocated for it.
 */
START_TEST(test_writes_past_the_osd_limits_give_efbig_and_emsgsize)
{
	static char mib[MIB];
	const char *o = oid("limits");
	struct bl_list l, big;
	struct waiter w = WAITER_INIT;

	bl_list_init(&l);
	bl_list_init(&big);
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	ck_assert_int_eq(bl_rados_write(R, o, &l, 200ull * MIB), -EFBIG);
	ck_assert_int_eq(bl_rados_aio_write(R, o, &l, 200ull * MIB, on_done,
					    &w),
			 0);
	ck_assert_int_eq(wait_for(&w, 1), -EFBIG);
	for (int i = 0; i < 96; i++) {
		struct bl_raw *raw = bl_raw_create_static(mib, MIB);
		struct bl_ptr p;

		ck_assert_ptr_nonnull(raw);
		bl_ptr_from_raw(&p, raw);
		ck_assert_int_eq(bl_list_append_ptr_move(&big, &p), 0);
	}
	ck_assert_int_eq(bl_rados_write_full(R, o, &big), -EMSGSIZE);
	/* in pieces under the limits it goes */
	ck_assert_int_eq(bl_rados_stat(R, o, NULL, NULL), -ENOENT);
	bl_list_clear(&big);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_missing_object_read_stat_remove_give_enoent_and_change_nothing)
{
	const char *o = oid("missing");
	struct waiter w = WAITER_INIT;
	struct bl_list got;
	uint64_t size = 77;
	int64_t mtime = 77;

	bl_list_init(&got);
	ck_assert_int_eq(bl_list_append(&got, "keep", 4), 0);
	ck_assert_int_eq(bl_rados_read(R, o, 0, 100, &got), -ENOENT);
	ck_assert_int_eq(bl_rados_stat(R, o, &size, &mtime), -ENOENT);
	ck_assert_uint_eq(size, 77);
	ck_assert_int_eq(mtime, 77);
	ck_assert_int_eq(bl_rados_remove(R, o), -ENOENT);

	w.out = &got;
	ck_assert_int_eq(bl_rados_aio_read(R, o, 0, 100, &got, on_done, &w), 0);
	ck_assert_int_eq(wait_for(&w, 1), -ENOENT);
	ck_assert_int_eq(bl_rados_aio_remove(R, o, on_done, &w), 0);
	ck_assert_int_eq(wait_for(&w, 2), -ENOENT);
	tu_assert_list_eq(&got, "keep", 4);
	bl_list_clear(&got);
}
END_TEST

int main(void)
{
	const struct tu_loop write_read_loops[] = {
		{ test_write_full_of_segmented_lists_reads_back_equal_without_copies,
		  0, (int)(sizeof(cases) / sizeof(cases[0])) },
		{ test_write_of_segmented_lists_reads_back_equal_without_copies,
		  0, (int)(sizeof(cases) / sizeof(cases[0])) },
		{ NULL, 0, 0 }
	};
	const TTest *write_read_tests[] = {
		test_write_at_offsets_and_past_the_end,
		test_stat_reports_size_and_a_recent_mtime,
		test_read_returns_claimed_ceph_buffers_released_with_the_list,
		NULL
	};
	const TTest *aio_tests[] = {
		test_aio_write_survives_the_caller_clearing_its_list_at_once,
		test_append_and_aio_append_add_at_the_end_without_copies,
		test_aio_write_full_and_aio_read_round_trip,
		test_close_waits_for_aio_in_flight,
		test_aio_flush_waits_for_every_callback,
		test_aio_stat_reports_size_and_mtime_before_the_callback,
		test_aio_flush_from_a_callback_is_edeadlk,
		NULL
	};
	const TTest *list_tests[] = {
		test_list_finds_objects_by_prefix_in_the_namespace,
		test_locator_key_places_and_names_objects,
		test_cluster_and_ioctx_are_librados_handles_of_the_bridge,
		test_xattrs_set_get_list_remove_without_copies,
		NULL
	};
	const TTest *alloc_hint_tests[] = {
		test_alloc_hint_goes_with_every_kind_of_write_until_turned_off,
		NULL
	};
#ifdef BL_COUNT_MEMCPY
	const TTest *process_copies_tests[] = {
		test_the_client_process_copies_no_payload_for_writes_and_reads,
		NULL
	};
#endif
	const TTest *errors_tests[] = {
		test_missing_pool_fails_open_with_enoent,
		test_open2_takes_the_client_id_and_options,
		test_writes_past_the_osd_limits_give_efbig_and_emsgsize,
		test_missing_object_read_stat_remove_give_enoent_and_change_nothing,
		NULL
	};
	const TTest *thread_local_tests[] = {
		test_aio_write_of_thread_local_raws_sends_a_copy,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("write_read", write_read_tests,
			 .loops = write_read_loops, .timeout = 300,
			 .setup = setup, .teardown = teardown),
		TU_GROUP("aio", aio_tests, .timeout = 300, .setup = setup,
			 .teardown = teardown),
		TU_GROUP("list", list_tests, .timeout = 300, .setup = setup,
			 .teardown = teardown),
		TU_GROUP("alloc_hint", alloc_hint_tests, .timeout = 300,
			 .setup = setup, .teardown = teardown),
#ifdef BL_COUNT_MEMCPY
		TU_GROUP("process_copies", process_copies_tests, .timeout = 300,
			 .setup = setup, .teardown = teardown),
#endif
		TU_GROUP("errors", errors_tests, .timeout = 300, .setup = setup,
			 .teardown = teardown),
		TU_GROUP("thread_local", thread_local_tests, .timeout = 300,
			 .setup = setup, .teardown = teardown),
		TU_GROUP_END
	};

	g_pool = tu_ceph_pool("test_ceph");
	if (!g_pool)
		return 77;
	g_rng = tu_seed("test_ceph");
	return tu_run(tu_suite("ceph", groups));
}
