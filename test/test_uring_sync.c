/* SPDX-License-Identifier: MIT */
/*
 * test_uring_sync.c - durability and control in the io_uring layer, on
 * both back ends: fsync / fdatasync / sync_file_range as ring operations,
 * per-write RWF_* flags, a write and its sync as one linked submission,
 * cancelling one operation, per-operation timeouts and timers.
 *
 * Every case runs in a "*-uring" TCase (io_uring) and a "*-blocking" one
 * (bl_uring_params.force_blocking, tu_ring_main()); where io_uring
 * cannot be set up, the uring cases are replaced by one test of the
 * fallback (the blocking ones still run).  Faults the kernel will not
 * produce on demand (a sync's -EIO, a short write in a linked chain) are
 * injected at the completion through the library's CQE hook (uring_int.h).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include "testutil.h"
#include "uring_int.h"

/* ---- helpers ------------------------------------------------------------ */

/* Runs @u until @r was called back, once. */
static void run_until(struct bl_uring *u, struct tu_rec *r)
{
	tu_run_until(u, &r->calls, 1);
	ck_assert_int_eq(r->calls, 1);
}

/* Runs @u until nothing is in flight or retiring (links' CQEs included). */
static void run_idle(struct bl_uring *u)
{
	for (int i = 0; i < 1000 && (bl_uring_inflight(u) ||
				     bl__uring_retiring(u)); i++)
		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	ck_assert_uint_eq(bl__uring_retiring(u), 0);
}

/* @len bytes of a fresh raw whose only other reference the caller keeps */
static struct bl_raw *list_of_raw(struct bl_list *l, size_t len)
{
	struct bl_raw *r = bl_raw_create(len);
	struct bl_ptr p;

	ck_assert_ptr_nonnull(r);
	tu_fill(bl_raw_data(r), len, &tu_ring_seed);
	p.raw = r;
	p.off = 0;
	p.len = len;
	bl_list_init(l);
	ck_assert_int_eq(bl_list_append_ptr(l, &p), 0);
	return r;	/* two references: ours, the list's */
}

static void check_file(int fd, off_t off, const struct bl_raw *r)
{
	size_t len = bl_raw_length(r);
	char *buf = malloc(len);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(pread(fd, buf, len, off), (ssize_t)len);
	ck_assert_int_eq(memcmp(buf, bl_raw_data(r), len), 0);
	free(buf);
}

/* The completion hook: the @nth completion from now gets @res. */
static _Atomic int hook_left;
static int hook_res;
static bool hook_halves;	/* instead: the nth completion moves half */

static int hook(struct io_uring_cqe *cqe, void *op_arg)
{
	(void)op_arg;
	if (atomic_fetch_sub(&hook_left, 1) != 1)
		return cqe->res;
	if (hook_halves)
		return cqe->res > 1 ? cqe->res / 2 : cqe->res;
	return hook_res;
}

static void hook_on(int nth, int res, bool halves)
{
	atomic_store(&hook_left, nth);
	hook_res = res;
	hook_halves = halves;
	bl__uring_set_cqe_hook(hook);
}

/* ---- syncs as ring operations ------------------------------------------ */

START_TEST(test_fsync_fdatasync_and_sync_range_of_a_file_succeed)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	int fd = tu_ring_tmp();
	struct bl_uring_opts o;
	struct bl_list l;
	struct bl_raw *raw = list_of_raw(&l, 8192);
	struct tu_rec r;

	ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, &l), 8192);
	for (int i = 0; i < 3; i++) {
		tu_rec_init(&r);
		memset(&o, 0, sizeof(o));
		if (i < 2)
			ck_assert_int_eq(bl_uring_fsync(u, fd,
					 i ? BL_URING_FSYNC_DATASYNC : 0, &o,
					 tu_rec_cb, &r), 0);
		else
			ck_assert_int_eq(bl_uring_sync_range(u, fd, 0, 8192,
					 SYNC_FILE_RANGE_WAIT_BEFORE |
					 SYNC_FILE_RANGE_WRITE |
					 SYNC_FILE_RANGE_WAIT_AFTER, &o,
					 tu_rec_cb, &r), 0);
		ck_assert_uint_ne(o.id, 0);
		run_until(u, &r);
		ck_assert_int_eq(r.res, 0);
		ck_assert(!r.had_data);	/* a sync has no data list */
	}
	/* NULL options and a range to the end of the file (0) */
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_sync_range(u, fd, 4096, 0,
					     SYNC_FILE_RANGE_WRITE, NULL,
					     tu_rec_cb, &r), 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, 0);
	check_file(fd, 0, raw);
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_raw_nref(raw), 1);
	bl_raw_put(raw);
	close(fd);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_a_sync_of_a_pipe_fails_in_its_callback)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	int p[2];
	struct tu_rec r;

	ck_assert_int_eq(pipe(p), 0);
	for (int i = 0; i < 3; i++) {
		tu_rec_init(&r);
		if (i < 2)
			ck_assert_int_eq(bl_uring_fsync(u, p[1],
					 i ? BL_URING_FSYNC_DATASYNC : 0,
					 NULL, tu_rec_cb, &r), 0);
		else
			ck_assert_int_eq(bl_uring_sync_range(u, p[1], 0, 0,
					 SYNC_FILE_RANGE_WRITE, NULL,
					 tu_rec_cb, &r), 0);
		run_until(u, &r);
		/* fsync(2): EINVAL; sync_file_range(2): ESPIPE */
		ck_assert_int_eq(r.res, i < 2 ? -EINVAL : -ESPIPE);
	}
	/* a descriptor that is not open */
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_fsync(u, 100000, 0, NULL, tu_rec_cb, &r), 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, -EBADF);
	run_idle(u);
	close(p[0]);
	close(p[1]);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_bad_options_and_arguments_are_einval_with_nothing_submitted)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o;
	struct bl_list l;
	struct bl_raw *raw = list_of_raw(&l, 100);
	int fd = tu_ring_tmp();

	memset(&o, 0, sizeof(o));
	o.rw_flags = RWF_APPEND;	/* not one of the three */
	ck_assert_int_eq(bl_uring_write_opts(u, fd, 0, &l, &o, tu_rec_cb, NULL),
			 -EINVAL);
	o.rw_flags = 0;
	o.sync = 3;
	ck_assert_int_eq(bl_uring_write_opts(u, fd, 0, &l, &o, tu_rec_cb, NULL),
			 -EINVAL);
	/* rw_flags and syncs belong to writes only */
	o.sync = BL_URING_SYNC_FSYNC;
	ck_assert_int_eq(bl_uring_read_opts(u, fd, 0, 10, 0, &o, tu_rec_cb, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_recv_opts(u, fd, 10, &o, tu_rec_cb, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_send_opts(u, fd, &l, 0, &o, tu_rec_cb, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_fsync(u, fd, 0, &o, tu_rec_cb, NULL), -EINVAL);
	o.sync = 0;
	o.rw_flags = RWF_DSYNC;
	ck_assert_int_eq(bl_uring_sync_range(u, fd, 0, 0, 0, &o, tu_rec_cb, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_timer(u, 1, &o, tu_rec_cb, NULL), -EINVAL);
	o.rw_flags = 0;
	o.timeout_ms = 5;	/* a timer is its own timeout */
	ck_assert_int_eq(bl_uring_timer(u, 1, &o, tu_rec_cb, NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_fsync(u, fd, 2, NULL, tu_rec_cb, NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_sync_range(u, fd, -1, 0, 0, NULL, tu_rec_cb,
					     NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_sync_range(u, fd, 0, -1, 0, NULL, tu_rec_cb,
					     NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_sync_range(u, fd, 0, (off_t)1 << 32, 0, NULL,
					     tu_rec_cb, NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_sync_range(u, fd, 0, 0, 8, NULL, tu_rec_cb,
					     NULL), -EINVAL);
	/* NULL ring */
	ck_assert_int_eq(bl_uring_write_opts(NULL, fd, 0, &l, NULL, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_write_opts(u, fd, 0, NULL, NULL, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_read_opts(NULL, fd, 0, 1, 0, NULL, NULL,
					    NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_send_opts(NULL, fd, &l, 0, NULL, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_recv_opts(NULL, fd, 1, NULL, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_fsync(NULL, fd, 0, NULL, NULL, NULL),
			 -EINVAL);
	ck_assert_int_eq(bl_uring_sync_range(NULL, fd, 0, 0, 0, NULL, NULL,
					     NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_timer(NULL, 1, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_cancel(NULL, 1), -EINVAL);
	ck_assert_int_eq(bl_uring_cancel(u, 0), -EINVAL);
	ck_assert_int_eq(bl_uring_cancel(u, 12345), -ENOENT);
	/* nothing was submitted, and the list's raw was not kept */
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	ck_assert_uint_eq(bl_raw_nref(raw), 2);
	bl_list_clear(&l);
	bl_raw_put(raw);
	close(fd);
	bl_uring_destroy(u);
}
END_TEST

/* ---- per-write flags ---------------------------------------------------- */

START_TEST(test_writes_with_rwf_dsync_and_rwf_sync_land)
{
	static const int flags[3] = { RWF_DSYNC, RWF_SYNC, RWF_NOWAIT };
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	int fd = tu_ring_tmp();

	for (int i = 0; i < 3; i++) {
		struct bl_uring_opts o = { .rw_flags = flags[i] };
		struct bl_list l;
		struct bl_raw *raw = list_of_raw(&l, 65536);
		struct tu_rec r;

		tu_rec_init(&r);
		ck_assert_int_eq(bl_uring_write_opts(u, fd, i * 65536, &l, &o,
						     tu_rec_cb, &r), 0);
		bl_list_clear(&l);	/* the op keeps its own reference */
		run_until(u, &r);
		/* a buffered write to a file may still say it would block */
		if (flags[i] == RWF_NOWAIT && r.res == -EAGAIN) {
			bl_raw_put(raw);
			continue;
		}
		ck_assert_int_eq(r.res, 65536);
		check_file(fd, i * 65536, raw);
		run_idle(u);
		ck_assert_uint_eq(bl_raw_nref(raw), 1);
		bl_raw_put(raw);
	}
	close(fd);
	bl_uring_destroy(u);
}
END_TEST

/* A pipe of one page, full. */
static void full_pipe(int p[2])
{
	char page[4096];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	memset(page, 'x', sizeof(page));
	ck_assert_int_eq(fcntl(p[1], F_SETFL, O_NONBLOCK), 0);
	while (write(p[1], page, sizeof(page)) > 0)
		;
	ck_assert_int_eq(fcntl(p[1], F_SETFL, 0), 0);	/* blocking again */
}

START_TEST(test_rwf_nowait_on_a_full_pipe_is_eagain_not_a_wait)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o = { .rw_flags = RWF_NOWAIT };
	struct bl_list l;
	struct bl_raw *raw = list_of_raw(&l, 100);
	struct tu_rec r;
	int p[2];

	full_pipe(p);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write_opts(u, p[1], -1, &l, &o, tu_rec_cb, &r),
			 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, -EAGAIN);
	run_idle(u);
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_raw_nref(raw), 1);
	bl_raw_put(raw);
	close(p[0]);
	close(p[1]);
	bl_uring_destroy(u);
}
END_TEST

/* ---- a write and its sync, linked --------------------------------------- */

START_TEST(test_linked_write_and_sync_report_the_writes_result)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	int fd = tu_ring_tmp();

	for (int i = 0; i < 2; i++) {
		struct bl_uring_opts o;
		struct bl_list l;
		struct bl_raw *raw = list_of_raw(&l, 1 << 20);
		struct tu_rec r;

		memset(&o, 0, sizeof(o));
		o.sync = i ? BL_URING_SYNC_FDATASYNC : BL_URING_SYNC_FSYNC;
		/* the second also bounded in time: write, timeout, sync */
		o.timeout_ms = i ? 10000 : 0;
		tu_rec_init(&r);
		ck_assert_int_eq(bl_uring_write_opts(u, fd, 4096, &l, &o,
						     tu_rec_cb, &r), 0);
		ck_assert_uint_ne(o.id, 0);
		bl_list_clear(&l);
		run_until(u, &r);
		ck_assert_int_eq(r.res, 1 << 20);
		ck_assert(!r.had_data);
		check_file(fd, 4096, raw);
		run_idle(u);
		ck_assert_uint_eq(bl_raw_nref(raw), 1);
		bl_raw_put(raw);
	}
	close(fd);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_linked_sync_over_iov_max_segments_and_short_writes)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o = { .sync = BL_URING_SYNC_FDATASYNC };
	unsigned char *want = malloc(3000 * 64);
	struct bl_list l;
	struct tu_rec r;
	int fd = tu_ring_tmp();
	char *got = malloc(3000 * 64);

	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	tu_fill(want, 3000 * 64, &tu_ring_seed);
	bl_list_init(&l);
	/* 3000 segments: three requests, the sync behind the last */
	tu_append_segmented(&l, want, 3000 * 64, 64, 1, &tu_ring_seed);
	ck_assert_uint_ge(bl_list_num_buffers(&l), 2000);
	/* and the first request comes back short: resumed, not reported */
	hook_on(1, 0, true);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write_opts(u, fd, 0, &l, &o, tu_rec_cb, &r), 0);
	run_until(u, &r);
	bl__uring_set_cqe_hook(NULL);
	ck_assert_int_eq(r.res, 3000 * 64);
	ck_assert_int_eq(pread(fd, got, 3000 * 64, 0), 3000 * 64);
	ck_assert_int_eq(memcmp(got, want, 3000 * 64), 0);
	run_idle(u);
	bl_list_clear(&l);
	free(want);
	free(got);
	close(fd);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_a_linked_syncs_error_reaches_the_callback)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o = { .sync = BL_URING_SYNC_FSYNC };
	struct bl_list l;
	struct bl_raw *raw = list_of_raw(&l, 4096);
	struct tu_rec r;
	int fd = tu_ring_tmp(), p[2];

	/* injected: the write's completion, then the sync's gets -EIO */
	hook_on(2, -EIO, false);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write_opts(u, fd, 0, &l, &o, tu_rec_cb, &r), 0);
	run_until(u, &r);
	bl__uring_set_cqe_hook(NULL);
	ck_assert_int_eq(r.res, -EIO);
	run_idle(u);
	/* for real: a pipe takes the write, and refuses the sync */
	ck_assert_int_eq(pipe(p), 0);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write_opts(u, p[1], -1, &l, &o, tu_rec_cb, &r),
			 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, -EINVAL);
	ck_assert_int_eq(read(p[0], bl_raw_data(raw), 4096), 4096);
	/* a write that fails is not synced: its own error */
	close(p[0]);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write_opts(u, p[1], -1, &l, &o, tu_rec_cb, &r),
			 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, -EPIPE);
	/* an empty write with a sync is the sync alone */
	bl_list_clear(&l);
	tu_rec_init(&r);
	memset(&o, 0, sizeof(o));
	o.sync = BL_URING_SYNC_FDATASYNC;
	ck_assert_int_eq(bl_uring_write_opts(u, fd, 0, &l, &o, tu_rec_cb, &r), 0);
	ck_assert_uint_ne(o.id, 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, 0);
	run_idle(u);
	ck_assert_uint_eq(bl_raw_nref(raw), 1);
	bl_raw_put(raw);
	close(p[1]);
	close(fd);
	bl_uring_destroy(u);
}
END_TEST

/* ---- cancel and timeouts ------------------------------------------------ */

START_TEST(test_cancel_ends_a_receive_with_ecanceled)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o;
	struct tu_rec r;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	memset(&o, 0, sizeof(o));
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv_opts(u, sv[0], 100, &o, tu_rec_cb, &r), 0);
	ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_int_eq(bl_uring_cancel(u, o.id), 0);
	ck_assert_int_eq(bl_uring_cancel(u, o.id), 0);	/* asked already */
	ck_assert_int_eq(r.calls, 0);	/* callbacks only from run */
	run_until(u, &r);
	ck_assert_int_eq(r.res, -ECANCELED);
	ck_assert(r.had_data);
	ck_assert_uint_eq(r.data_len, 0);
	ck_assert_int_eq(bl_uring_cancel(u, o.id), -ENOENT);
	run_idle(u);
	/* the socket lost nothing: a new receive gets what comes */
	ck_assert_int_eq(write(sv[1], "abc", 3), 3);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv_opts(u, sv[0], 100, NULL, tu_rec_cb, &r), 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, 3);
	tu_rec_free(&r);
	close(sv[0]);
	close(sv[1]);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_cancel_of_a_send_waiting_its_turn_keeps_the_stream_whole)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o;
	struct bl_list big, small;
	struct bl_raw *rb = list_of_raw(&big, 4 << 20);
	struct bl_raw *rs = list_of_raw(&small, 1000);
	struct tu_rec r1, r2;
	size_t got = 0;
	char buf[65536];
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_rec_init(&r1);
	tu_rec_init(&r2);
	ck_assert_int_eq(bl_uring_send(u, sv[0], &big, 0, tu_rec_cb, &r1), 0);
	memset(&o, 0, sizeof(o));
	ck_assert_int_eq(bl_uring_send_opts(u, sv[0], &small, 0, &o, tu_rec_cb,
					    &r2), 0);
	ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(bl_uring_cancel(u, o.id), 0);
	run_until(u, &r2);
	ck_assert_int_eq(r2.res, -ECANCELED);
	ck_assert_int_eq(r1.calls, 0);
	/* the first send still goes out whole, and nothing after it */
	ck_assert_int_eq(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	while (!r1.calls || got < (4u << 20)) {
		ssize_t n = read(sv[1], buf, sizeof(buf));

		if (n > 0)
			got += (size_t)n;
		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	}
	ck_assert_int_eq(r1.res, 4 << 20);
	ck_assert_uint_eq(got, 4u << 20);
	ck_assert_int_eq(read(sv[1], buf, sizeof(buf)), -1);
	ck_assert_int_eq(errno, EAGAIN);
	run_idle(u);
	bl_list_clear(&big);
	bl_list_clear(&small);
	ck_assert_uint_eq(bl_raw_nref(rb), 1);
	ck_assert_uint_eq(bl_raw_nref(rs), 1);
	bl_raw_put(rb);
	bl_raw_put(rs);
	close(sv[0]);
	close(sv[1]);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_a_receive_with_no_data_times_out_with_etime)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o = { .timeout_ms = 20 };
	struct tu_rec r;
	double t0, dt;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_rec_init(&r);
	t0 = tu_mono_s();
	ck_assert_int_eq(bl_uring_recv_opts(u, sv[0], 100, &o, tu_rec_cb, &r), 0);
	while (!r.calls)
		ck_assert_int_ge(bl_uring_run(u, 1, -1), 0);
	dt = tu_mono_s() - t0;
	ck_assert_int_eq(r.res, -ETIME);
	ck_assert_uint_eq(r.data_len, 0);
	ck_assert_msg(dt >= 0.015 && dt < 2.0, "timed out after %.3f s", dt);
	run_idle(u);
	/* a timed receive that gets its data in time is a plain one */
	ck_assert_int_eq(write(sv[1], "hello", 5), 5);
	o.timeout_ms = 5000;
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv_opts(u, sv[0], 100, &o, tu_rec_cb, &r), 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, 5);
	tu_assert_list_eq(&r.data, "hello", 5);
	tu_rec_free(&r);
	/* its link timeout is gone with it: nothing left, nothing held */
	run_idle(u);
	close(sv[0]);
	close(sv[1]);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_a_nonblocking_socket_times_out_while_waiting_for_data)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o = { .timeout_ms = 20 };
	struct tu_rec r;
	int sv[2];

	/* -EAGAIN: the op waits for readiness, and the time bounds that */
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0,
				    sv), 0);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv_opts(u, sv[0], 100, &o, tu_rec_cb, &r), 0);
	while (!r.calls)
		ck_assert_int_ge(bl_uring_run(u, 1, -1), 0);
	ck_assert_int_eq(r.res, -ETIME);
	run_idle(u);
	close(sv[0]);
	close(sv[1]);
	bl_uring_destroy(u);
}
END_TEST

/* ---- timers ------------------------------------------------------------- */

START_TEST(test_a_timer_calls_back_after_its_time)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o;
	struct tu_rec r;
	double t0, dt;

	memset(&o, 0, sizeof(o));
	tu_rec_init(&r);
	t0 = tu_mono_s();
	ck_assert_int_eq(bl_uring_timer(u, 30, &o, tu_rec_cb, &r), 0);
	ck_assert_uint_ne(o.id, 0);
	ck_assert_uint_eq(bl_uring_inflight(u), 1);
	/* a run that waits for one callback waits for the timer */
	ck_assert_int_eq(bl_uring_run(u, 1, -1), 1);
	dt = tu_mono_s() - t0;
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, 0);
	ck_assert(!r.had_data);
	ck_assert_msg(dt >= 0.029 && dt < 2.0, "fired after %.3f s", dt);
	ck_assert_int_eq(bl_uring_cancel(u, o.id), -ENOENT);
	/* 0 ms: at the next run */
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_timer(u, 0, NULL, tu_rec_cb, &r), 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, 0);
	run_idle(u);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_a_cancelled_timer_calls_back_with_ecanceled)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o;
	struct tu_rec r, r2;
	double t0;

	memset(&o, 0, sizeof(o));
	tu_rec_init(&r);
	tu_rec_init(&r2);
	ck_assert_int_eq(bl_uring_timer(u, 10000, &o, tu_rec_cb, &r), 0);
	ck_assert_int_eq(bl_uring_timer(u, 10, NULL, tu_rec_cb, &r2), 0);
	ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	t0 = tu_mono_s();
	ck_assert_int_eq(bl_uring_cancel(u, o.id), 0);
	run_until(u, &r);
	ck_assert_int_eq(r.res, -ECANCELED);
	ck_assert(tu_mono_s() - t0 < 5.0);
	/* the other one still fires */
	run_until(u, &r2);
	ck_assert_int_eq(r2.res, 0);
	run_idle(u);
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_destroy_ends_pending_timers_and_timed_ops_with_ecanceled)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, UINT_MAX);
	struct bl_uring_opts o = { .timeout_ms = 60000 };
	struct tu_rec r, r2;
	double t0;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_rec_init(&r);
	tu_rec_init(&r2);
	ck_assert_int_eq(bl_uring_timer(u, 60000, NULL, tu_rec_cb, &r), 0);
	ck_assert_int_eq(bl_uring_recv_opts(u, sv[0], 10, &o, tu_rec_cb, &r2), 0);
	ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	t0 = tu_mono_s();
	bl_uring_destroy(u);
	ck_assert(tu_mono_s() - t0 < 5.0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, -ECANCELED);
	ck_assert_int_eq(r2.calls, 1);
	ck_assert_int_eq(r2.res, -ECANCELED);
	tu_rec_free(&r2);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

int main(void)
{
	const TTest *sync_tests[] = {
		test_fsync_fdatasync_and_sync_range_of_a_file_succeed,
		test_a_sync_of_a_pipe_fails_in_its_callback,
		test_bad_options_and_arguments_are_einval_with_nothing_submitted,
		test_writes_with_rwf_dsync_and_rwf_sync_land,
		test_rwf_nowait_on_a_full_pipe_is_eagain_not_a_wait,
		test_linked_write_and_sync_report_the_writes_result,
		test_linked_sync_over_iov_max_segments_and_short_writes,
		test_a_linked_syncs_error_reaches_the_callback,
		NULL
	};
	const TTest *control_tests[] = {
		test_cancel_ends_a_receive_with_ecanceled,
		test_cancel_of_a_send_waiting_its_turn_keeps_the_stream_whole,
		test_a_receive_with_no_data_times_out_with_etime,
		test_a_nonblocking_socket_times_out_while_waiting_for_data,
		test_a_timer_calls_back_after_its_time,
		test_a_cancelled_timer_calls_back_with_ecanceled,
		test_destroy_ends_pending_timers_and_timed_ops_with_ecanceled,
		NULL
	};
	const struct tu_ring_group groups[] = {
		TU_GROUP("sync", sync_tests),
		TU_GROUP("control", control_tests),
		TU_GROUP_END
	};

	/* on the build's file system */
	tu_ring_tdir_template = "bl-usync-XXXXXX";
	return tu_ring_main("uring_sync", groups, NULL, NULL);
}
