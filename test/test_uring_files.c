/* SPDX-License-Identifier: MIT */
/*
 * test_uring_files.c - reading and writing files through a ring: round
 * trips of one, many and more than IOV_MAX segments, O_DIRECT, the
 * callback's contract, the waited-for operations, and the errors a
 * completion can carry (some injected through the CQE hook).
 *
 * Each group runs twice (tu_ring_main()): on the io_uring back end and
 * on the blocking one.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <liburing.h>
#include "testutil.h"
#include "uring_int.h"

/* ---- helpers ------------------------------------------------------------ */

/* @l = "ab" in two segments of their own: its inline slots are full. */
static void add_two_segments(struct bl_list *l)
{
	struct bl_ptr p;

	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(bl_ptr_alloc(&p, 1), 0);
		*bl_ptr_data(&p) = (char)('a' + i);
		ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
	}
}

/* ---- the CQE hook: faults at the completion ----------------------------- */

enum hook_mode { HOOK_SHORT, HOOK_ERR, HOOK_ERR_ONCE };

static enum hook_mode hook_mode;
static int hook_err;
static int hook_hits;
static void *hook_target;

/* hook_target for every operation (the waited-for ones have an arg of
 * the library's) */
#define HOOK_ANY ((void *)&hook_target)

static int test_hook(struct io_uring_cqe *cqe, void *arg)
{
	if (hook_target != HOOK_ANY && arg != hook_target)
		return cqe->res;
	switch (hook_mode) {
	case HOOK_SHORT:
		/* the first two completions claim half of what moved */
		if (hook_hits < 2 && cqe->res > 1) {
			hook_hits++;
			return cqe->res / 2;
		}
		break;
	case HOOK_ERR:
		hook_hits++;
		return hook_err;
	case HOOK_ERR_ONCE:
		if (!hook_hits++)
			return hook_err;
		break;
	}
	return cqe->res;
}

/* ---- files ----------------------------------------------------------------- */

START_TEST(test_write_read_round_trip_one_many_and_over_iov_max_segments)
{
	static const unsigned nsegs[] = { 1, 37, 3000 };
	uint64_t rng = tu_ring_seed;
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	int fd = tu_ring_tmp();

	for (unsigned k = 0; k < 3; k++) {
		unsigned nseg = nsegs[k];
		size_t len = nseg * 53 + 1001;
		off_t off = 12345 + 7 * (off_t)k;
		unsigned char *want = tu_rand_buf(len, &rng), *got;
		struct bl__uring_counters c0 = tu_counters(u), c1;
		struct bl_list l;
		struct tu_rec r;

		tu_make_list(&l, want, len, nseg, &rng);
		tu_write_sync(u, fd, off, &l, (ssize_t)len);
		c1 = tu_counters(u);
		/* one request per IOV_MAX segments, more only if short */
		ck_assert_uint_ge(c1.sqes - c0.sqes, (nseg + 1023) / 1024);
		got = tu_file_bytes(fd, off, len);
		ck_assert_mem_eq(got, want, len);
		free(got);

		tu_rec_init(&r);
		ck_assert_int_eq(bl_uring_read(u, fd, off, len, 0, tu_rec_cb, &r), 0);
		tu_run_until(u, &r.calls, 1);
		ck_assert_int_eq(r.res, (ssize_t)len);
		tu_assert_list_eq(&r.data, want, len);
		bl_list_clear(&r.data);
		bl_list_clear(&l);
		free(want);
	}
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_uring_destroy(u);
	close(fd);
}
END_TEST

START_TEST(test_caller_clears_its_list_right_after_submit)
{
	uint64_t rng = tu_ring_seed + 1;
	const size_t len = 200000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_raw *first;
	struct bl_ptr p;
	struct bl_list l;
	struct tu_rec r;
	int fd = tu_ring_tmp();

	tu_make_list(&l, want, len, 64, &rng);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	first = p.raw;		/* our own reference, through p */
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, 777, &l, tu_rec_cb, &r), 0);
	/* the op holds its own reference: the list may go at once */
	ck_assert_uint_eq(bl_raw_nref(first), 3);
	bl_list_clear(&l);
	/* and its bytes may be reused: the op keeps the raw alive */
	ck_assert_uint_eq(bl_raw_nref(first), 2);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, (ssize_t)len);
	ck_assert_uint_eq(bl_raw_nref(first), 1);
	got = tu_file_bytes(fd, 777, len);
	ck_assert_mem_eq(got, want, len);
	free(got);
	bl_ptr_release(&p);
	bl_uring_destroy(u);
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_read_is_short_only_at_end_of_file)
{
	uint64_t rng = tu_ring_seed + 2;
	const size_t len = 5000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct tu_rec r;
	int fd = tu_ring_tmp();

	ck_assert_int_eq(pwrite(fd, want, len, 0), (ssize_t)len);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_read(u, fd, 1000, 100000, 0, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, (ssize_t)(len - 1000));
	tu_assert_list_eq(&r.data, want + 1000, len - 1000);
	bl_list_clear(&r.data);

	/* at end of file: 0 and an empty list */
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_read(u, fd, (off_t)len, 10, 0, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, 0);
	ck_assert_uint_eq(bl_list_length(&r.data), 0);

	/* nothing asked: 0 without touching the fd */
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_read(u, -1, 0, 0, 0, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, 0);
	bl_uring_destroy(u);
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_write_of_empty_list_completes_with_zero)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_list l;
	struct tu_rec r;

	bl_list_init(&l);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, -1, 0, &l, tu_rec_cb, &r), 0);
	/* callbacks run from bl_uring_run, never inside the submit call */
	ck_assert_int_eq(r.calls, 0);
	ck_assert_int_eq(bl_uring_run(u, 1, -1), 1);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, 0);
	bl_uring_destroy(u);
}
END_TEST

/* Runs @u until nothing is in flight (at most 20 s: a hang fails). */
static void run_idle(struct bl_uring *u)
{
	time_t end = time(NULL) + 20;

	while (bl_uring_inflight(u) && time(NULL) < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
}

START_TEST(test_null_callback_is_fire_and_forget_on_every_submission)
{
	uint64_t rng = tu_ring_seed + 20;
	const size_t len = 70000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	struct bl_list l;
	int fd = tu_ring_tmp(), sv[2];
	ssize_t n;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_alloc_install(0, 0);
	u = tu_ring_new(tu_blocking, 0, 0);
	br = bl_uring_bufring_create(u, 4, 4096, 7);
	ck_assert_ptr_nonnull(br);
	tu_make_list(&l, want, len, 30, &rng);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, NULL, NULL), 0);
	run_idle(u);
	got = tu_file_bytes(fd, 0, len);
	ck_assert_mem_eq(got, want, len);
	free(got);
	/* what a read or receive got is released with nobody to take it */
	ck_assert_int_eq(bl_uring_read(u, fd, 0, len, 0, NULL, NULL), 0);
	ck_assert_int_eq(bl_uring_send(u, sv[0], &l, 0, NULL, NULL), 0);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 1000, NULL, NULL), 0);
	ck_assert_int_eq(bl_uring_recv_pooled(u, sv[1], br, false, NULL, NULL),
			 0);
	bl_list_clear(&l);
	run_idle(u);
	/* the send went out whole: what the receives did not take is there */
	n = recv(sv[1], want, len, MSG_DONTWAIT);
	ck_assert_int_gt(n, 0);
	ck_assert_uint_le(len - (size_t)n, 1000 + 4096);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	ck_assert_uint_eq(tu_live_bytes(), 0);
	tu_alloc_uninstall();
	close(sv[0]);
	close(sv[1]);
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_null_ring_or_list_is_einval_at_submission)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_list l;
	struct tu_rec r;
	int fd = tu_ring_tmp();

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, NULL, tu_rec_cb, &r), -EINVAL);
	ck_assert_int_eq(bl_uring_write(u, fd, -1, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_send(u, fd, NULL, 0, tu_rec_cb, &r), -EINVAL);
	ck_assert_int_eq(bl_uring_write(NULL, fd, 0, &l, tu_rec_cb, &r), -EINVAL);
	ck_assert_int_eq(bl_uring_send(NULL, fd, &l, 0, tu_rec_cb, &r), -EINVAL);
	ck_assert_int_eq(bl_uring_read(NULL, fd, 0, 1, 0, tu_rec_cb, &r), -EINVAL);
	ck_assert_int_eq(bl_uring_recv(NULL, fd, 1, tu_rec_cb, &r), -EINVAL);
	ck_assert_int_eq(bl_uring_recv_pooled(NULL, fd, NULL, false, NULL,
					      NULL), -EINVAL);
	bl_uring_expect_answer(NULL);	/* a no-op */
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(r.calls, 0);
	tu_assert_list_eq(&l, "x", 1);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fd);
}
END_TEST

/*
 * bl_uring_inflight counts an operation until its callback has run, on
 * both back ends: a file write the blocking back end finished in the
 * submit call, or one io_uring finished whose completion waits in the
 * queue, still counts, as does a write waiting its turn on the fd.
 */
/* -- bl__uring_pending (the messenger's busy polling asks it) -- */

static struct bl_uring *pend_u;
static int pend_n;
static bool pend_seen[2];

static void pend_cb(void *arg, ssize_t res, struct bl_list *data)
{
	(void)arg;
	(void)data;
	ck_assert_int_gt(res, 0);
	pend_seen[pend_n++] = bl__uring_pending(pend_u);
}

static void pend_rcb(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	ck_assert(!more);
	pend_cb(arg, res, data);
}

/*
 * Completions ready but not yet handled are pending: before bl_uring_run,
 * and inside the callback of the first of two (a done queue's operation,
 * _i 0, and a pooled receive called back while the CQ ring is reaped,
 * _i 1); in the last callback, and after it, nothing is.
 */
START_TEST(test_pending_sees_completions_not_yet_handled)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_uring_bufring *br = NULL;
	int fd = -1, sv[2][2];
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert(!bl__uring_pending(u));
	if (_i == 0) {
		fd = tu_ring_tmp();
		/* at two offsets: neither waits for the other */
		ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, pend_cb, NULL),
				 0);
		ck_assert_int_eq(bl_uring_write(u, fd, 3, &l, pend_cb, NULL),
				 0);
	} else {
		br = bl_uring_bufring_create(u, 4, 4096, 9);
		ck_assert_ptr_nonnull(br);
		for (int k = 0; k < 2; k++) {
			ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0,
						    sv[k]), 0);
			ck_assert_int_eq(write(sv[k][1], "abc", 3), 3);
			ck_assert_int_eq(bl_uring_recv_pooled(u, sv[k][0], br,
							      false, pend_rcb,
							      NULL), 0);
		}
	}
	if (!tu_blocking) {
		struct io_uring_cqe *cqe;

		ck_assert_int_ge(bl_uring_submit(u), 0);
		ck_assert_int_eq(io_uring_wait_cqe_nr(bl_uring_ring(u), &cqe,
						      2), 0);
		ck_assert(bl__uring_pending(u));
	}
	pend_u = u;
	pend_n = 0;
	tu_run_until(u, &pend_n, 2);
	ck_assert(pend_seen[0]);
	ck_assert(!pend_seen[1]);
	ck_assert(!bl__uring_pending(u));
	bl_list_clear(&l);
	if (br) {
		for (int k = 0; k < 2; k++) {
			close(sv[k][0]);
			close(sv[k][1]);
		}
		bl_uring_bufring_destroy(br);
	} else {
		close(fd);
	}
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_inflight_counts_ops_until_their_callback_ran)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	int fd = tu_ring_tmp();
	struct bl_list l;
	struct tu_rec r[2];
	unsigned char *got;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	tu_rec_init(&r[0]);
	tu_rec_init(&r[1]);
	ck_assert_int_eq(bl_uring_write(u, fd, -1, &l, tu_rec_cb, &r[0]), 0);
	ck_assert_int_eq(bl_uring_write(u, fd, -1, &l, tu_rec_cb, &r[1]), 0);
	ck_assert_uint_eq(bl_uring_inflight(u), 2);
	if (tu_blocking) {
		/* both done already, in the submit calls */
		got = tu_file_bytes(fd, 0, 6);
		ck_assert_mem_eq(got, "abcabc", 6);
		free(got);
	} else {
		/* the first one's completion is in the queue, not reaped */
		struct io_uring_cqe *cqe;

		ck_assert_int_ge(bl_uring_submit(u), 1);
		ck_assert_int_eq(io_uring_wait_cqe(bl_uring_ring(u), &cqe), 0);
		got = tu_file_bytes(fd, 0, 3);
		ck_assert_mem_eq(got, "abc", 3);
		free(got);
	}
	ck_assert_uint_eq(bl_uring_inflight(u), 2);
	ck_assert_int_eq(r[0].calls + r[1].calls, 0);
	tu_run_until(u, &r[1].calls, 1);
	ck_assert_int_eq(r[0].calls, 1);
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fd);
}
END_TEST

START_TEST(test_o_direct_round_trip_copies_only_misaligned_runs)
{
	uint64_t rng = tu_ring_seed + 3;
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	size_t mem, offa, len;
	unsigned char *want;
	struct bl_list l, aligned;
	struct bl_ptr p;
	struct bl_stats s0, s1;
	struct tu_rec r;
	char path[PATH_MAX];
	const char *dir = tu_dio_dir(path, sizeof(path));
	int fd;

	if (!dir) {
		/*
		 * No filesystem here takes O_DIRECT: what is left to check is
		 * the documented fallback of the alignment query.
		 */
		fprintf(stderr, "test_uring: no filesystem accepts O_DIRECT; "
				"checking the alignment fallback only\n");
		fd = tu_tmp_open(tu_tdir, path, sizeof(path));
		ck_assert_int_eq(bl_fd_dio_align(fd, &mem, &offa), 0);
		ck_assert(mem == 4096 || bl__is_pow2(mem));
		close(fd);
		bl_uring_destroy(u);
		return;
	}
	snprintf(path, sizeof(path), "%s/bl-dio-XXXXXX", dir);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT);
	unlink(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bl_fd_dio_align(fd, &mem, &offa), 0);
	ck_assert(bl__is_pow2(mem) && bl__is_pow2(offa));

	/* 1) an aligned page-sized raw, 2) a misaligned run, 3) aligned */
	len = 4 * offa + 3 * 65536;
	want = tu_rand_buf(len, &rng);
	bl_list_init(&l);
	p.raw = bl_raw_create_aligned(65536, 4096);
	p.off = 0;
	p.len = 65536;
	memcpy(bl_ptr_data(&p), want, 65536);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	/* the middle starts one byte past an aligned address */
	ck_assert_int_eq(bl_ptr_alloc(&p, 4 * offa + 65536 + 1), 0);
	ck_assert_int_eq(bl_ptr_slice(&p, &p, 1, 4 * offa + 65536), 0);
	memcpy(bl_ptr_data(&p), want + 65536, 4 * offa + 65536);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	p.raw = bl_raw_create_aligned(65536, 4096);
	p.off = 0;
	p.len = 65536;
	memcpy(bl_ptr_data(&p), want + 4 * offa + 131072, 65536);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);

	bl_stats_thread(&s0);
	ck_assert_int_eq(bl_list_prepare_dio(&l, fd), 1);
	bl_stats_thread(&s1);
	/* the aligned raws at both ends were kept, only the middle copied */
	ck_assert_uint_le(s1.copied_bytes - s0.copied_bytes,
			  4 * offa + 65536 + 2 * mem);
	for (unsigned i = 0; i < bl_list_num_buffers(&l); i++) {
		ck_assert_int_eq(bl_list_get_ptr(&l, i, &p), 0);
		ck_assert_uint_eq((uintptr_t)bl_ptr_data(&p) % mem, 0);
		if (i + 1 < bl_list_num_buffers(&l))
			ck_assert_uint_eq(p.len % offa, 0);
		bl_ptr_release(&p);
	}
	tu_assert_list_eq(&l, want, len);
	/* already prepared: nothing to copy */
	ck_assert_int_eq(bl_list_prepare_dio(&l, fd), 0);

	tu_write_sync(u, fd, (off_t)(8 * offa), &l, (ssize_t)len);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_read(u, fd, (off_t)(8 * offa), len, mem,
				       tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, (ssize_t)len);
	tu_assert_list_eq(&r.data, want, len);
	/* reads land in raws aligned for the device */
	ck_assert_int_eq(bl_list_get_ptr(&r.data, 0, &p), 0);
	ck_assert_uint_eq((uintptr_t)bl_ptr_data(&p) % mem, 0);
	bl_ptr_release(&p);
	bl_list_clear(&r.data);

	/* a length that is not a multiple of the offset alignment: -EINVAL,
	 * as the kernel says of a misaligned O_DIRECT write (not the
	 * -EOPNOTSUPP of a descriptor without direct I/O) */
	bl_list_init(&aligned);
	ck_assert_int_eq(bl_list_append(&aligned, want, offa + 1), 0);
	ck_assert_int_eq(bl_list_prepare_dio(&aligned, fd), -EINVAL);
	tu_assert_list_eq(&aligned, want, offa + 1);
	bl_list_clear(&aligned);
	ck_assert_int_eq(bl_list_prepare_dio(NULL, fd), -EINVAL);

	close(fd);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	free(want);
}
END_TEST

/* ---- one operation, waited for ------------------------------------------ */

START_TEST(test_write_wait_and_read_wait_round_trip)
{
	uint64_t rng = tu_ring_seed + 40;
	const size_t len = 37 * 1000 + 11;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_list l, out;
	int fd = tu_ring_tmp();

	tu_make_list(&l, want, len, 37, &rng);
	ck_assert_int_eq(bl_uring_write_wait(u, fd, 4096, &l), (ssize_t)len);
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	got = tu_file_bytes(fd, 4096, len);
	ck_assert_mem_eq(got, want, len);
	free(got);
	/* the bytes are appended after what @out holds */
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&out, "pre", 3), 0);
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 4096, len, 0, &out),
			 (ssize_t)len);
	ck_assert_uint_eq(bl_list_length(&out), 3 + len);
	ck_assert_int_eq(bl_list_substr_of(&l, &out, 3, len), 0);
	tu_assert_list_eq(&l, want, len);
	/* short only at end of file, then 0 with @out as it was */
	bl_list_clear(&out);
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 4096 + 1000, len, 4096,
					    &out), (ssize_t)(len - 1000));
	tu_assert_list_eq(&out, want + 1000, len - 1000);
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 4096 + (off_t)len, 10, 0,
					    &out), 0);
	ck_assert_uint_eq(bl_list_length(&out), len - 1000);
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_list_clear(&out);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_wait_returns_the_operations_error)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_list l, out;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tu_tdir, path, sizeof(path)), ro;

	ro = open(path, O_RDONLY);
	ck_assert_int_ge(ro, 0);
	bl_list_init(&l);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	ck_assert_int_eq(bl_uring_write_wait(u, ro, 0, &l), -EBADF);
	ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, &l), 5);
	/* an error at the completion: @out stays as it was */
	ck_assert_int_eq(bl_list_append(&out, "keep", 4), 0);
	hook_mode = HOOK_ERR;
	hook_err = -EIO;
	hook_hits = 0;
	hook_target = HOOK_ANY;
	bl__uring_set_cqe_hook(test_hook);
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 0, 5, 0, &out), -EIO);
	ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, &l), -EIO);
	bl__uring_set_cqe_hook(NULL);
	ck_assert_int_eq(hook_hits, 2);
	tu_assert_str(&out, "keep");
	/* refused before anything is submitted */
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 0, 5, 3, &out), -EINVAL);
	ck_assert_int_eq(bl_uring_read_wait(NULL, fd, 0, 5, 0, &out), -EINVAL);
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 0, 5, 0, NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_write_wait(NULL, fd, 0, &l), -EINVAL);
	ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, NULL), -EINVAL);
	tu_assert_str(&out, "keep");
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_list_clear(&l);
	bl_list_clear(&out);
	bl_uring_destroy(u);
	close(ro);
	close(fd);
}
END_TEST

/* Another operation's callback runs inside the waiting call. */
START_TEST(test_wait_runs_other_callbacks_meanwhile)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_list l, empty;
	struct tu_rec r;
	int fd = tu_ring_tmp();

	bl_list_init(&l);
	bl_list_init(&empty);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, &empty, tu_rec_cb, &r), 0);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, &l), 3);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, 0);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fd);
}
END_TEST

struct nested {
	struct bl_uring *u;
	int fd;
	ssize_t wret, rret;
	unsigned inflight;
	int calls;
};

static void nested_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct nested *n = arg;
	struct bl_list l, out;

	(void)res;
	(void)data;
	bl_list_init(&l);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	n->inflight = bl_uring_inflight(n->u);
	n->wret = bl_uring_write_wait(n->u, n->fd, 0, &l);
	n->rret = bl_uring_read_wait(n->u, n->fd, 0, 1, 0, &out);
	/* nothing was submitted */
	ck_assert_uint_eq(bl_uring_inflight(n->u), n->inflight);
	ck_assert(bl_list_is_empty(&out));
	bl_list_clear(&l);
	n->calls++;
}

START_TEST(test_wait_from_a_callback_is_edeadlk)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_list l;
	struct nested n = {
		.u = u, .fd = tu_ring_tmp()
	};

	bl_list_init(&l);
	ck_assert_int_eq(bl_uring_write(u, n.fd, 0, &l, nested_cb, &n), 0);
	tu_run_until(u, &n.calls, 1);
	ck_assert_int_eq(n.wret, -EDEADLK);
	ck_assert_int_eq(n.rret, -EDEADLK);
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_uring_destroy(u);
	close(n.fd);
}
END_TEST

START_TEST(test_wait_allocation_failure_is_enomem_and_leaks_nothing)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct tu_alloc_stats st;
	struct bl_list l, out;
	int fd = tu_ring_tmp();
	uint64_t n;

	bl_list_init(&l);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	/* the waiter, then the operation */
	for (n = 1; n <= 2; n++) {
		tu_alloc_install(n, 1);
		ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, &l), -ENOMEM);
		ck_assert_uint_eq(tu_live_bytes(), 0);
		tu_alloc_uninstall();
	}
	ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, &l), 5);
	/* every allocation of a read (the last: @out's chunk for the bytes
	 * when its inline slots are full) */
	add_two_segments(&out);
	tu_alloc_install(0, 0);
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 0, 5, 0, &out), 5);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	bl_list_clear(&out);
	for (n = 1; n <= st.allocs; n++) {
		add_two_segments(&out);
		tu_alloc_install(n, 1);
		ck_assert_int_eq(bl_uring_read_wait(u, fd, 0, 5, 0, &out),
				 -ENOMEM);
		tu_alloc_uninstall();
		tu_assert_str(&out, "ab");
		bl_list_clear(&out);
	}
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fd);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(test_write_on_read_only_fd_gives_ebadf_in_callback)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_list l;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tu_tdir, path, sizeof(path)), ro;

	ro = open(path, O_RDONLY);
	ck_assert_int_ge(ro, 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	tu_write_sync(u, ro, 0, &l, -EBADF);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(ro);
	close(fd);
}
END_TEST

START_TEST(test_rlimit_fsize_gives_efbig_in_callback)
{
	const rlim_t limit = 10007;
	uint64_t rng = tu_ring_seed + 4;
	const size_t len = 50000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	int fd = tu_ring_tmp(), status;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* the child: the limit and the ignored signal stay here */
		struct rlimit rl = { limit, limit };
		struct bl_uring_params p;
		struct bl_uring *u;
		struct bl_list l;
		struct tu_rec r;
		time_t end = time(NULL) + 20;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(2);
		memset(&p, 0, sizeof(p));
		p.force_blocking = tu_blocking;
		u = bl_uring_create(&p);
		if (!u)
			_exit(3);
		tu_make_list(&l, want, len, 50, &rng);
		tu_rec_init(&r);
		if (bl_uring_write(u, fd, 0, &l, tu_rec_cb, &r))
			_exit(4);
		while (!r.calls && time(NULL) < end)
			bl_uring_run(u, 1, 500);
		bl_uring_destroy(u);
		bl_list_clear(&l);
		free(want);
		_exit(r.calls == 1 && r.res == -EFBIG ? 0 : 10);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* the bytes below the limit arrived (resumed after the short write) */
	got = tu_file_bytes(fd, 0, limit);
	ck_assert_mem_eq(got, want, limit);
	free(got);
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_injected_short_counts_are_resumed_to_the_end)
{
	uint64_t rng = tu_ring_seed + 5;
	const size_t len = 300000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl__uring_counters c0 = tu_counters(u), c1;
	struct bl_list l;
	struct tu_rec r;
	int fd = tu_ring_tmp();

	tu_make_list(&l, want, len, 2500, &rng);
	tu_rec_init(&r);
	hook_mode = HOOK_SHORT;
	hook_hits = 0;
	hook_target = &r;
	bl__uring_set_cqe_hook(test_hook);
	ck_assert_int_eq(bl_uring_write(u, fd, 999, &l, tu_rec_cb, &r), 0);
	bl_list_clear(&l);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, (ssize_t)len);
	ck_assert_int_eq(hook_hits, 2);
	c1 = tu_counters(u);
	ck_assert_uint_ge(c1.resumes - c0.resumes, 2);
	got = tu_file_bytes(fd, 999, len);
	ck_assert_mem_eq(got, want, len);
	free(got);

	/* a read told it got half comes back for the rest */
	tu_rec_init(&r);
	hook_hits = 0;
	hook_target = &r;
	ck_assert_int_eq(bl_uring_read(u, fd, 999, len, 0, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, (ssize_t)len);
	ck_assert_int_eq(hook_hits, 2);
	tu_assert_list_eq(&r.data, want, len);
	bl_list_clear(&r.data);
	bl__uring_set_cqe_hook(NULL);
	bl_uring_destroy(u);
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_injected_eio_and_enospc_reach_the_callback_and_release_refs)
{
	static const int errs[] = { -EIO, -ENOSPC };
	uint64_t rng = tu_ring_seed + 6;
	const size_t len = 40000;
	unsigned char *want = tu_rand_buf(len, &rng);
	int fd = tu_ring_tmp();

	tu_alloc_install(0, 0);
	for (unsigned k = 0; k < 2; k++) {
		struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
		struct bl_list l;
		struct bl_ptr p;
		struct tu_rec r;

		tu_make_list(&l, want, len, 100, &rng);
		ck_assert_int_eq(bl_list_get_ptr(&l, 50, &p), 0);
		tu_rec_init(&r);
		hook_mode = HOOK_ERR;
		hook_err = errs[k];
		hook_hits = 0;
		hook_target = &r;
		bl__uring_set_cqe_hook(test_hook);
		ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, tu_rec_cb, &r), 0);
		bl_list_clear(&l);
		ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
		tu_run_until(u, &r.calls, 1);
		bl__uring_set_cqe_hook(NULL);
		ck_assert_int_eq(r.calls, 1);
		ck_assert_int_eq(r.res, errs[k]);
		ck_assert_int_eq(hook_hits, 1);
		/* the op let go of every raw with the error */
		ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
		bl_ptr_release(&p);
		bl_uring_destroy(u);
		ck_assert_uint_eq(tu_live_bytes(), 0);
	}
	tu_alloc_uninstall();
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_injected_eagain_is_retried)
{
	uint64_t rng = tu_ring_seed + 7;
	const size_t len = 10000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl__uring_counters c0 = tu_counters(u);
	struct bl_list l;
	struct tu_rec r;
	int fd = tu_ring_tmp();

	tu_make_list(&l, want, len, 10, &rng);
	tu_rec_init(&r);
	hook_mode = HOOK_ERR_ONCE;
	hook_err = -EAGAIN;
	hook_hits = 0;
	hook_target = &r;
	bl__uring_set_cqe_hook(test_hook);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	bl__uring_set_cqe_hook(NULL);
	ck_assert_int_eq(r.res, (ssize_t)len);
	ck_assert_int_ge(hook_hits, 2);
	if (!tu_blocking)
		ck_assert_uint_ge(tu_counters(u).retries - c0.retries, 1);
	got = tu_file_bytes(fd, 0, len);
	ck_assert_mem_eq(got, want, len);
	free(got);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fd);
	free(want);
}
END_TEST

/* What a failed read or receive hands its callback. */
struct seen {
	int calls;
	ssize_t res;
	bool data_null;
	size_t data_len;
};

static void seen_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct seen *w = arg;

	w->calls++;
	w->res = res;
	w->data_null = !data;
	w->data_len = data ? bl_list_length(data) : 0;
}

static void seen_rcb(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	ck_assert(!more);
	seen_cb(arg, res, data);
}

static void seen_run(struct bl_uring *u, struct seen *w)
{
	tu_run_until(u, &w->calls, 1);
	ck_assert_int_eq(w->calls, 1);
	ck_assert(!w->data_null);
	ck_assert_uint_eq(w->data_len, 0);
}

/* The first completion moves half, the second fails with -EIO. */
static int short_then_eio(struct io_uring_cqe *cqe, void *arg)
{
	if (arg != hook_target)
		return cqe->res;
	if (!hook_hits++)
		return cqe->res > 1 ? cqe->res / 2 : cqe->res;
	return -EIO;
}

/*
 * A read or receive that fails passes an empty list, not NULL, on both
 * back ends; one that fails after part of it arrived drops that part.
 */
START_TEST(test_failed_read_passes_an_empty_list_not_null)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 2, 4096, 5);
	char path[PATH_MAX];
	int fd = tu_tmp_open(tu_tdir, path, sizeof(path)), wo;
	struct seen w;

	ck_assert_ptr_nonnull(br);
	ck_assert_int_eq(pwrite(fd, "0123456789", 10, 0), 10);
	wo = open(path, O_WRONLY);
	ck_assert_int_ge(wo, 0);

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(bl_uring_read(u, wo, 0, 10, 0, seen_cb, &w), 0);
	seen_run(u, &w);
	ck_assert_int_eq(w.res, -EBADF);

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(bl_uring_recv(u, fd, 10, seen_cb, &w), 0);
	seen_run(u, &w);
	ck_assert_int_eq(w.res, -ENOTSOCK);

	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(bl_uring_recv_pooled(u, fd, br, false, seen_rcb, &w),
			 0);
	seen_run(u, &w);
	ck_assert_int_eq(w.res, -ENOTSOCK);

	memset(&w, 0, sizeof(w));
	hook_hits = 0;
	hook_target = &w;
	bl__uring_set_cqe_hook(short_then_eio);
	ck_assert_int_eq(bl_uring_read(u, fd, 0, 10, 0, seen_cb, &w), 0);
	seen_run(u, &w);
	bl__uring_set_cqe_hook(NULL);
	ck_assert_int_eq(hook_hits, 2);
	ck_assert_int_eq(w.res, -EIO);

	/* at end of file: 0 and an empty list too */
	memset(&w, 0, sizeof(w));
	ck_assert_int_eq(bl_uring_read(u, fd, 10, 10, 0, seen_cb, &w), 0);
	seen_run(u, &w);
	ck_assert_int_eq(w.res, 0);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(wo);
	close(fd);
}
END_TEST

START_TEST(test_allocation_failure_at_submit_is_enomem_and_leaks_nothing)
{
	uint64_t rng = tu_ring_seed + 8;
	const size_t len = 30000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_list l;
	struct bl_ptr p;
	struct tu_rec r;
	int fd = tu_ring_tmp(), sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_make_list(&l, want, len, 40, &rng);
	ck_assert_int_eq(bl_list_get_ptr(&l, 3, &p), 0);
	tu_rec_init(&r);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, tu_rec_cb, &r), -ENOMEM);
	ck_assert_int_eq(bl_uring_send(u, sv[0], &l, 0, tu_rec_cb, &r), -ENOMEM);
	ck_assert_int_eq(bl_uring_read(u, fd, 0, 100, 0, tu_rec_cb, &r), -ENOMEM);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, tu_rec_cb, &r), -ENOMEM);
	/* the op allocates, then the raw does: fail the second */
	tu_alloc_fail_at(2, 1);
	ck_assert_int_eq(bl_uring_read(u, fd, 0, 100, 0, tu_rec_cb, &r), -ENOMEM);
	tu_alloc_fail_at(2, 1);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, tu_rec_cb, &r), -ENOMEM);
	ck_assert_uint_eq(tu_live_bytes(), 0);
	ck_assert_ptr_null(bl_uring_create(NULL));
	tu_alloc_uninstall();
	/* nothing was submitted, the list is as it was */
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	tu_assert_list_eq(&l, want, len);
	bl_ptr_release(&p);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
	close(fd);
	free(want);
}
END_TEST

int main(void)
{
	const TTest *files_tests[] = {
		test_write_read_round_trip_one_many_and_over_iov_max_segments,
		test_caller_clears_its_list_right_after_submit,
		test_read_is_short_only_at_end_of_file,
		test_write_of_empty_list_completes_with_zero,
		test_null_callback_is_fire_and_forget_on_every_submission,
		test_null_ring_or_list_is_einval_at_submission,
		test_inflight_counts_ops_until_their_callback_ran,
		test_o_direct_round_trip_copies_only_misaligned_runs,
		test_write_wait_and_read_wait_round_trip,
		test_wait_returns_the_operations_error,
		test_wait_runs_other_callbacks_meanwhile,
		test_wait_from_a_callback_is_edeadlk,
		test_wait_allocation_failure_is_enomem_and_leaks_nothing,
		NULL
	};
	const struct tu_loop files_loops[] = {
		{ test_pending_sees_completions_not_yet_handled, 0, 2 },
		{ NULL, 0, 0 }
	};
	const TTest *errors_tests[] = {
		test_write_on_read_only_fd_gives_ebadf_in_callback,
		test_rlimit_fsize_gives_efbig_in_callback,
		test_injected_short_counts_are_resumed_to_the_end,
		test_injected_eio_and_enospc_reach_the_callback_and_release_refs,
		test_injected_eagain_is_retried,
		test_failed_read_passes_an_empty_list_not_null,
		test_allocation_failure_at_submit_is_enomem_and_leaks_nothing,
		NULL
	};
	const struct tu_ring_group groups[] = {
		TU_GROUP("files", files_tests, .loops = files_loops),
		TU_GROUP("errors", errors_tests),
		TU_GROUP_END
	};

	return tu_ring_main("uring_files", groups, NULL, NULL);
}
