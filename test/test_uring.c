/* SPDX-License-Identifier: MIT */
/*
 * test_uring.c - the io_uring layer, on both back ends.
 *
 * Every file and socket test runs twice: in the "*-uring" cases on the
 * io_uring back end and in the "*-blocking" cases on the blocking one
 * (bl_uring_params.force_blocking).  Where io_uring cannot be set up here
 * the uring cases are replaced by one test that asserts the documented
 * fallback and prints why.
 *
 * Faults the kernel will not produce on demand (short counts, -EIO,
 * -ENOSPC, -EAGAIN) are injected at the completion through the library's
 * CQE hook (uring_int.h).
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
#include "uring_probe.h"
#include "uring_int.h"

static bool blocking;		/* the back end of the running TCase */
static bool uring_ok;		/* io_uring can be set up here */
static char uring_reason[256];
static char tdir[64];
static uint64_t seed;

/* ---- fixtures ------------------------------------------------------------ */

static void tdir_make(void)
{
	tu_tdir_make(tdir, sizeof(tdir), "/tmp/bl-uring-XXXXXX");
}

static void setup_uring(void)
{
	blocking = false;
	tdir_make();
}

static void setup_blocking(void)
{
	blocking = true;
	tdir_make();
}

/* Runs in the parent, so it also cleans up after a test that failed. */
static void tdir_teardown(void)
{
	tu_tdir_remove(tdir);
}

/* ---- helpers ------------------------------------------------------------ */

/* @l = @len bytes of @data in exactly @nseg segments, each its own raw. */
static void make_list(struct bl_list *l, const unsigned char *data,
		      size_t len, unsigned nseg, uint64_t *rng)
{
	size_t off = 0;

	ck_assert_uint_ge(len, nseg);
	bl_list_init(l);
	for (unsigned i = 0; i < nseg; i++) {
		size_t left = len - off, rest = nseg - i - 1, n;
		struct bl_ptr p;

		if (!rest) {
			n = left;
		} else {
			size_t avg = left / (rest + 1);
			size_t max = left - rest;

			n = 1 + tu_rand(rng) % (2 * avg);
			if (n > max)
				n = max;
		}
		ck_assert_int_eq(bl_ptr_alloc(&p, n), 0);
		memcpy(bl_ptr_data(&p), data + off, n);
		ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
		off += n;
	}
	ck_assert_uint_eq(bl_list_num_buffers(l), nseg);
	ck_assert_uint_eq(bl_list_length(l), len);
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	ck_assert_int_ge(fl, 0);
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl | O_NONBLOCK), 0);
}

/*
 * A connected loopback TCP pair: @fds[0] the client, @fds[1] the server.
 * @stalled: the server offers a window of a few KiB and is never read, so
 * what is sent beyond it stays in the client's queue (and a zero-copy
 * send's notification never comes).
 */
static void tcp_pair_how(int fds[2], bool stalled)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ck_assert_int_ge(ls, 0);
	/* on the listener, so that the window is small from the handshake */
	if (stalled)
		ck_assert_int_eq(setsockopt(ls, SOL_SOCKET, SO_RCVBUF, &one,
					    sizeof(one)), 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(ls, 1), 0);
	ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fds[0], 0);
	ck_assert_int_eq(connect(fds[0], (struct sockaddr *)&a, sizeof(a)), 0);
	fds[1] = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(fds[1], 0);
	if (!stalled)
		setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(ls);
}

static void tcp_pair(int fds[2])
{
	tcp_pair_how(fds, false);
}

static uint64_t live_bytes(void)
{
	struct tu_alloc_stats st;

	tu_alloc_stats(&st);
	return (uint64_t)st.live_bytes;
}

static struct bl__uring_counters counters(const struct bl_uring *u)
{
	struct bl__uring_counters c;

	bl__uring_counters(u, &c);
	return c;
}

static void assert_str_list(const struct bl_list *l, const char *s)
{
	tu_assert_list_eq(l, s, strlen(s));
}

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

static void pooled_rec_cb(void *arg, ssize_t res, struct bl_list *data,
			  bool more)
{
	ck_assert(!more);
	tu_rec_cb(arg, res, data);
}

static void write_sync(struct bl_uring *u, int fd, off_t off,
		       const struct bl_list *l, ssize_t want)
{
	struct tu_rec r;

	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, off, l, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, want);
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
	uint64_t rng = seed;
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	for (unsigned k = 0; k < 3; k++) {
		unsigned nseg = nsegs[k];
		size_t len = nseg * 53 + 1001;
		off_t off = 12345 + 7 * (off_t)k;
		unsigned char *want = tu_rand_buf(len, &rng), *got;
		struct bl__uring_counters c0 = counters(u), c1;
		struct bl_list l;
		struct tu_rec r;

		make_list(&l, want, len, nseg, &rng);
		write_sync(u, fd, off, &l, (ssize_t)len);
		c1 = counters(u);
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
	uint64_t rng = seed + 1;
	const size_t len = 200000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_raw *first;
	struct bl_ptr p;
	struct bl_list l;
	struct tu_rec r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	make_list(&l, want, len, 64, &rng);
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
	uint64_t rng = seed + 2;
	const size_t len = 5000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct tu_rec r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

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
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
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
	uint64_t rng = seed + 20;
	const size_t len = 70000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	struct bl_list l;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), sv[2];
	ssize_t n;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_alloc_install(0, 0);
	u = tu_ring_new(blocking, 0, 0);
	br = bl_uring_bufring_create(u, 4, 4096, 7);
	ck_assert_ptr_nonnull(br);
	make_list(&l, want, len, 30, &rng);
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
	ck_assert_uint_eq(live_bytes(), 0);
	tu_alloc_uninstall();
	close(sv[0]);
	close(sv[1]);
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_null_ring_or_list_is_einval_at_submission)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_list l;
	struct tu_rec r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

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
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_bufring *br = NULL;
	char path[PATH_MAX];
	int fd = -1, sv[2][2];
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert(!bl__uring_pending(u));
	if (_i == 0) {
		fd = tu_tmp_open(tdir, path, sizeof(path));
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
	if (!blocking) {
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
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));
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
	if (blocking) {
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

/* A directory on a filesystem that takes O_DIRECT, or NULL. */
static const char *dio_dir(char *buf, size_t size)
{
	static const char *const cand[] = { "/var/tmp", ".", "/tmp" };

	for (unsigned i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
		int fd;

		snprintf(buf, size, "%s/bl-dio-XXXXXX", cand[i]);
		fd = mkstemp(buf);
		if (fd < 0)
			continue;
		close(fd);
		fd = open(buf, O_RDWR | O_DIRECT);
		unlink(buf);
		if (fd >= 0) {
			close(fd);
			return cand[i];
		}
	}
	return NULL;
}

START_TEST(test_o_direct_round_trip_copies_only_misaligned_runs)
{
	uint64_t rng = seed + 3;
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	size_t mem, offa, len;
	unsigned char *want;
	struct bl_list l, aligned;
	struct bl_ptr p;
	struct bl_stats s0, s1;
	struct tu_rec r;
	char path[PATH_MAX];
	const char *dir = dio_dir(path, sizeof(path));
	int fd;

	if (!dir) {
		/*
		 * No filesystem here takes O_DIRECT: what is left to check is
		 * the documented fallback of the alignment query.
		 */
		fprintf(stderr, "test_uring: no filesystem accepts O_DIRECT; "
				"checking the alignment fallback only\n");
		fd = tu_tmp_open(tdir, path, sizeof(path));
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

	write_sync(u, fd, (off_t)(8 * offa), &l, (ssize_t)len);
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

/* bl_fd_dio_align on @fd agrees with what open(@path, O_DIRECT) says. */
static void dio_align_agrees_with_open(int fd, const char *path)
{
	size_t mem = 1, off = 1;
	int d = open(path, O_RDONLY | O_DIRECT), ret;

	ck_assert(d >= 0 || errno == EINVAL);
	ret = bl_fd_dio_align(fd, &mem, &off);
	if (d >= 0) {
		ck_assert_int_eq(ret, 0);
		ck_assert_uint_gt(mem, 0);
		ck_assert_uint_gt(off, 0);
		close(d);
	} else {
		ck_assert_int_eq(ret, -EOPNOTSUPP);
		ck_assert_uint_eq(mem, 1);
		ck_assert_uint_eq(off, 1);
	}
}

/*
 * Where direct I/O cannot be, bl_fd_dio_align says -EOPNOTSUPP (and leaves
 * its outputs), and so does bl_list_prepare_dio, apart from its -EINVAL
 * for a length: pipes, sockets, and files whose filesystem refuses
 * O_DIRECT (procfs; tmpfs before Linux 6.6), also where statx does not
 * report the alignment.
 */
START_TEST(test_dio_align_is_eopnotsupp_where_direct_io_cannot_be)
{
	size_t mem = 1, off = 1;
	char path[PATH_MAX];
	const char *dir;
	struct bl_list l;
	struct stat st;
	int fds[2], fd;

	ck_assert_int_eq(pipe(fds), 0);
	ck_assert_int_eq(bl_fd_dio_align(fds[0], &mem, &off), -EOPNOTSUPP);
	ck_assert_int_eq(bl_fd_dio_align(fds[1], &mem, &off), -EOPNOTSUPP);
	ck_assert_uint_eq(mem, 1);
	ck_assert_uint_eq(off, 1);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	/* the descriptor is refused before the length is looked at */
	ck_assert_int_eq(bl_list_prepare_dio(&l, fds[1]), -EOPNOTSUPP);
	tu_assert_list_eq(&l, "abc", 3);
	bl_list_clear(&l);
	close(fds[0]);
	close(fds[1]);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	ck_assert_int_eq(bl_fd_dio_align(fds[0], &mem, &off), -EOPNOTSUPP);
	ck_assert_uint_eq(mem, 1);
	close(fds[0]);
	close(fds[1]);
	ck_assert_int_eq(bl_fd_dio_align(-1, &mem, &off), -EBADF);

	/* a procfs file: regular, and no direct I/O */
	fd = open("/proc/self/status", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	dio_align_agrees_with_open(fd, "/proc/self/status");
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert_int_eq(bl_list_prepare_dio(&l, fd), -EOPNOTSUPP);
	tu_assert_list_eq(&l, "abc", 3);
	bl_list_clear(&l);
	close(fd);
	/* tmpfs, which statx says nothing about: the probe decides */
	if (!stat("/dev/shm", &st) && S_ISDIR(st.st_mode)) {
		snprintf(path, sizeof(path), "/dev/shm/bl-dio-XXXXXX");
		fd = mkstemp(path);
		if (fd >= 0) {
			dio_align_agrees_with_open(fd, path);
			unlink(path);
			close(fd);
		}
	}
	/* and a file of a filesystem that takes it */
	dir = dio_dir(path, sizeof(path));
	if (dir) {
		snprintf(path, sizeof(path), "%s/bl-dio-XXXXXX", dir);
		fd = mkstemp(path);
		ck_assert_int_ge(fd, 0);
		dio_align_agrees_with_open(fd, path);
		ck_assert_int_eq(bl_fd_dio_align(fd, &mem, &off), 0);
		unlink(path);
		close(fd);
	}
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(test_write_on_read_only_fd_gives_ebadf_in_callback)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_list l;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), ro;

	ro = open(path, O_RDONLY);
	ck_assert_int_ge(ro, 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	write_sync(u, ro, 0, &l, -EBADF);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(ro);
	close(fd);
}
END_TEST

START_TEST(test_rlimit_fsize_gives_efbig_in_callback)
{
	const rlim_t limit = 10007;
	uint64_t rng = seed + 4;
	const size_t len = 50000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), status;
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
		p.force_blocking = blocking;
		u = bl_uring_create(&p);
		if (!u)
			_exit(3);
		make_list(&l, want, len, 50, &rng);
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
	uint64_t rng = seed + 5;
	const size_t len = 300000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl__uring_counters c0 = counters(u), c1;
	struct bl_list l;
	struct tu_rec r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	make_list(&l, want, len, 2500, &rng);
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
	c1 = counters(u);
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
	uint64_t rng = seed + 6;
	const size_t len = 40000;
	unsigned char *want = tu_rand_buf(len, &rng);
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	tu_alloc_install(0, 0);
	for (unsigned k = 0; k < 2; k++) {
		struct bl_uring *u = tu_ring_new(blocking, 0, 0);
		struct bl_list l;
		struct bl_ptr p;
		struct tu_rec r;

		make_list(&l, want, len, 100, &rng);
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
		ck_assert_uint_eq(live_bytes(), 0);
	}
	tu_alloc_uninstall();
	close(fd);
	free(want);
}
END_TEST

START_TEST(test_injected_eagain_is_retried)
{
	uint64_t rng = seed + 7;
	const size_t len = 10000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl__uring_counters c0 = counters(u);
	struct bl_list l;
	struct tu_rec r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	make_list(&l, want, len, 10, &rng);
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
	if (!blocking)
		ck_assert_uint_ge(counters(u).retries - c0.retries, 1);
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
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 2, 4096, 5);
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), wo;
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
	uint64_t rng = seed + 8;
	const size_t len = 30000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_list l;
	struct bl_ptr p;
	struct tu_rec r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	make_list(&l, want, len, 40, &rng);
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
	ck_assert_uint_eq(live_bytes(), 0);
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

/* ---- pipes and sockets ----------------------------------------------------- */

struct drain {
	int fd;
	size_t want;
	unsigned char *got;
	size_t n;
	bool slow;
};

static void *drain_thread(void *arg)
{
	struct drain *d = arg;

	while (d->n < d->want) {
		size_t chunk = d->slow ? (getenv("BL_TEST_QUICK") ? 32768 : 3000)
				       : 1 << 20;
		ssize_t k;

		if (chunk > d->want - d->n)
			chunk = d->want - d->n;
		k = read(d->fd, d->got + d->n, chunk);
		if (k <= 0)
			break;
		d->n += (size_t)k;
		if (d->slow)
			sched_yield();
	}
	return NULL;
}

START_TEST(test_short_writes_through_a_pipe_to_a_slow_reader)
{
	uint64_t rng = seed + 9;
	/* BL_TEST_QUICK (valgrind, where the reader runs only when the
	 * ring's thread returns from io_uring_enter): still short writes */
	const size_t len = getenv("BL_TEST_QUICK") ? 1 << 18 : 1 << 20;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct drain d = { 0, len, malloc(len), 0, true };
	struct bl_list l;
	pthread_t t;
	int pfd[2];

	ck_assert_int_eq(pipe(pfd), 0);
	d.fd = pfd[0];
	make_list(&l, want, len, 1500, &rng);
	ck_assert_int_eq(pthread_create(&t, NULL, drain_thread, &d), 0);
	/* the pipe holds 64 KiB: the writes must come back short */
	write_sync(u, pfd[1], -1, &l, (ssize_t)len);
	pthread_join(t, NULL);
	ck_assert_uint_eq(d.n, len);
	ck_assert_mem_eq(d.got, want, len);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(pfd[0]);
	close(pfd[1]);
	free(d.got);
	free(want);
}
END_TEST

START_TEST(test_write_to_nonblocking_socketpair_resumes_until_done)
{
	uint64_t rng = seed + 10;
	const size_t len = 4 << 20;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct drain d = { 0, len, malloc(len), 0, false };
	struct bl_list l;
	pthread_t t;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	set_nonblock(sv[0]);
	d.fd = sv[1];
	make_list(&l, want, len, 700, &rng);
	ck_assert_int_eq(pthread_create(&t, NULL, drain_thread, &d), 0);
	write_sync(u, sv[0], -1, &l, (ssize_t)len);
	pthread_join(t, NULL);
	ck_assert_uint_eq(d.n, len);
	ck_assert_mem_eq(d.got, want, len);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
	free(d.got);
	free(want);
}
END_TEST

/*
 * Nobody reads yet: the first request fills the pipe or socket buffer and
 * the op must wait (io_uring polls; the blocking back end parks it for
 * poll(2) in bl_uring_run) instead of failing or spinning; a reader that
 * comes later gets every byte.  With MSG_DONTWAIT io_uring answers -EAGAIN
 * instead of waiting, and the library links a readiness poll in front of
 * the retry.
 */
static void full_then_drained(bool sock)
{
	uint64_t rng = seed + 15;
	const size_t len = sock ? 4 << 20 : 300000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(blocking, SIZE_MAX, 0);
	struct drain d = { 0, len, malloc(len), 0, false };
	struct bl_list l;
	struct tu_rec r;
	pthread_t t;
	time_t end = time(NULL) + 20;
	int fds[2];

	if (sock)
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
	else
		ck_assert_int_eq(pipe(fds), 0);
	set_nonblock(fds[1]);
	d.fd = fds[0];
	make_list(&l, want, len, 40, &rng);
	tu_rec_init(&r);
	if (sock)
		ck_assert_int_eq(bl_uring_send(u, fds[1], &l, MSG_DONTWAIT,
					       tu_rec_cb, &r), 0);
	else
		ck_assert_int_eq(bl_uring_write(u, fds[1], -1, &l, tu_rec_cb, &r),
				 0);
	while (sock && !counters(u).retries && time(NULL) < end)
		ck_assert_int_ge(bl_uring_run(u, 0, 10), 0);
	ck_assert_int_ge(bl_uring_run(u, 0, 20), 0);
	ck_assert_int_eq(r.calls, 0);
	if (sock)
		ck_assert_uint_ge(counters(u).retries, 1);
	ck_assert_int_eq(pthread_create(&t, NULL, drain_thread, &d), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, (ssize_t)len);
	pthread_join(t, NULL);
	ck_assert_uint_eq(d.n, len);
	ck_assert_mem_eq(d.got, want, len);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
	free(d.got);
	free(want);
}

START_TEST(test_full_nonblocking_pipe_waits_for_a_reader)
{
	full_then_drained(false);
}
END_TEST

START_TEST(test_send_with_msg_dontwait_on_full_socket_waits_for_readiness)
{
	full_then_drained(true);
}
END_TEST

/* Receives on @fd with bl_uring_recv until @want bytes or EOF. */
struct sink {
	struct bl_uring *u;
	int fd;
	size_t want;
	struct bl_list got;
	int done;
	ssize_t err;
};

static void sink_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct sink *s = arg;

	if (res <= 0) {
		s->err = res;
		s->done = 1;
		return;
	}
	ck_assert_int_eq(bl_list_claim_append(&s->got, data), 0);
	if (bl_list_length(&s->got) >= s->want)
		s->done = 1;
	else
		ck_assert_int_eq(bl_uring_recv(s->u, s->fd, 65536, sink_cb, s),
				 0);
}

/* Sends @len bytes in @nseg segments on fds[0], receives them on fds[1]
 * through the same ring (one thread: neither back end may deadlock). */
static void send_recv(struct bl_uring *u, const int fds[2], size_t len,
		      unsigned nseg, uint64_t *rng)
{
	unsigned char *want = tu_rand_buf(len, rng);
	struct sink s;
	struct bl_list l;
	struct tu_rec r;

	memset(&s, 0, sizeof(s));
	s.u = u;
	s.fd = fds[1];
	s.want = len;
	bl_list_init(&s.got);
	make_list(&l, want, len, nseg, rng);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv(u, fds[1], 65536, sink_cb, &s), 0);
	ck_assert_int_eq(bl_uring_send(u, fds[0], &l, 0, tu_rec_cb, &r), 0);
	bl_list_clear(&l);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, (ssize_t)len);
	tu_run_until(u, &s.done, 1);
	ck_assert_int_eq(s.err, 0);
	tu_assert_list_eq(&s.got, want, len);
	bl_list_clear(&s.got);
	free(want);
}

START_TEST(test_send_and_recv_over_tcp_by_copy)
{
	uint64_t rng = seed + 11;
	struct bl_uring *u = tu_ring_new(blocking, SIZE_MAX, 0);
	int fds[2];

	tcp_pair(fds);
	send_recv(u, fds, 1000, 3, &rng);
	send_recv(u, fds, 3 << 20, 2000, &rng);
	ck_assert_uint_eq(counters(u).zc, 0);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(test_zero_copy_send_over_tcp_delivers_the_bytes)
{
	uint64_t rng = seed + 12;
	struct bl_uring *u = tu_ring_new(blocking, 1, 0);
	struct bl__uring_features f;
	struct bl__uring_counters c1, c2;
	int fds[2];

	tcp_pair(fds);
	/* more than IOV_MAX segments: several zero-copy requests */
	send_recv(u, fds, 3 << 20, 3000, &rng);
	/* the notifications come after the sends: let them in */
	while (bl__uring_retiring(u))
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	c1 = counters(u);
	send_recv(u, fds, 100000, 1, &rng);
	send_recv(u, fds, 1, 1, &rng);
	while (bl__uring_retiring(u))
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	c2 = counters(u);
	bl__uring_features(u, &f);
	if (blocking || !f.sendmsg_zc) {
		if (!blocking)
			fprintf(stderr, "test_uring: kernel lacks SENDMSG_ZC, "
					"zero-copy sends went by copy\n");
		ck_assert_uint_eq(c2.zc, 0);
	} else {
		ck_assert_uint_ge(c1.zc, 3);
		/* every zero-copy request got its notification */
		ck_assert_uint_eq(c1.notifs, c1.zc);
		ck_assert_uint_eq(c2.notifs, c2.zc);
		ck_assert_uint_eq(c2.zc_fallbacks, 0);
		if (c1.zc_copied)
			/* loopback: the kernel copied, so the socket's next
			 * sends went by copy */
			ck_assert_uint_eq(c2.zc, c1.zc);
		else
			ck_assert_uint_ge(c2.zc, c1.zc + 2);
	}
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(test_zero_copy_the_kernel_copies_anyway_is_retried_every_1024_sends)
{
	struct bl_uring *u = tu_ring_new(blocking, 1, 0);
	struct bl__uring_features f;
	struct bl__uring_counters c;
	char buf[2048];
	struct bl_list l;
	struct tu_rec r;
	int fds[2];
	size_t got = 0;

	bl__uring_features(u, &f);
	tcp_pair(fds);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "z", 1), 0);
	for (int i = 0; i < 1026; i++) {
		tu_rec_init(&r);
		ck_assert_int_eq(bl_uring_send(u, fds[0], &l, 0, tu_rec_cb, &r), 0);
		tu_run_until(u, &r.calls, 1);
		ck_assert_int_eq(r.res, 1);
		while (bl__uring_retiring(u))
			ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	}
	c = counters(u);
	if (blocking || !f.sendmsg_zc) {
		ck_assert_uint_eq(c.zc, 0);
	} else if (!c.zc_copied) {
		fprintf(stderr, "test_uring: loopback zero copy was not "
				"reported as copied (kernel < 6.2?)\n");
		ck_assert_uint_eq(c.zc, 1026);
	} else {
		/* the first, then 1024 by copy, then one more try */
		ck_assert_uint_eq(c.zc, 2);
		ck_assert_uint_eq(c.zc_copied, 2);
	}
	while (got < 1026) {
		ssize_t n = read(fds[1], buf, sizeof(buf));

		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	ck_assert_uint_eq(got, 1026);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(test_zero_copy_on_unix_socket_falls_back_to_copy)
{
	uint64_t rng = seed + 13;
	struct bl_uring *u = tu_ring_new(blocking, 1, 0);
	struct bl__uring_features f;
	struct bl__uring_counters c;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	send_recv(u, sv, 70000, 5, &rng);
	send_recv(u, sv, 5000, 1, &rng);
	while (bl__uring_retiring(u))
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	bl__uring_features(u, &f);
	c = counters(u);
	if (!blocking && f.sendmsg_zc) {
		/* AF_UNIX refuses zero copy: the library sent by copy, and
		 * did not ask again for the same socket */
		ck_assert_uint_eq(c.zc_fallbacks, 1);
		ck_assert_uint_eq(c.zc, 1);
	}
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

struct zc_watch {
	struct bl_uring *u;
	int freed;
	int free_seq;
	int send_seq;
	int freed_at_send;
	uint64_t notifs_at_free;
};

static void zc_free(void *data, size_t len, void *opaque)
{
	struct zc_watch *w = opaque;

	w->freed++;
	w->free_seq = ++tu_seq;
	w->notifs_at_free = counters(w->u).notifs;
	free(data);
}

static void zc_send_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct zc_watch *w = arg;

	ck_assert_int_eq(res, 200000);
	w->send_seq = ++tu_seq;
	w->freed_at_send = w->freed;
}

START_TEST(test_zero_copy_raw_is_freed_only_after_the_notification)
{
	struct bl_uring *u = tu_ring_new(blocking, 1, 0);
	struct bl__uring_features f;
	struct zc_watch w;
	struct bl_list l;
	struct bl_ptr p;
	struct sink s;
	char *mem = malloc(200000);
	int fds[2];

	memset(&w, 0, sizeof(w));
	w.u = u;
	memset(mem, 'z', 200000);
	tcp_pair(fds);
	bl_list_init(&l);
	p.raw = bl_raw_claim(mem, 200000, zc_free, &w);
	ck_assert_ptr_nonnull(p.raw);
	p.off = 0;
	p.len = 200000;
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	memset(&s, 0, sizeof(s));
	s.u = u;
	s.fd = fds[1];
	s.want = 200000;
	bl_list_init(&s.got);
	ck_assert_int_eq(bl_uring_recv(u, fds[1], 65536, sink_cb, &s), 0);
	ck_assert_int_eq(bl_uring_send(u, fds[0], &l, 0, zc_send_cb, &w), 0);
	bl_list_clear(&l);	/* the op holds the only reference now */
	ck_assert_int_eq(w.freed, 0);
	while (!w.freed || !s.done)
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	ck_assert_int_eq(w.freed, 1);
	/* the send's callback saw the memory still held ... */
	ck_assert_int_eq(w.freed_at_send, 0);
	ck_assert_int_gt(w.free_seq, w.send_seq);
	bl__uring_features(u, &f);
	if (!blocking && f.sendmsg_zc) {
		ck_assert_uint_ge(counters(u).zc, 1);
		/* ... and it was freed only once the notification was in */
		ck_assert_uint_ge(w.notifs_at_free, 1);
	}
	ck_assert_uint_eq(bl_list_length(&s.got), 200000);
	bl_list_clear(&s.got);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct stranded {
	int calls;
	ssize_t res;
};

static void stranded_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct stranded *st = arg;

	(void)data;
	st->calls++;
	st->res = res;
}

/*
 * A zero-copy send to a peer that stopped reading: the kernel took every
 * byte, so the send completed, but its notification waits for the peer.
 * bl_uring_destroy() gives up on it after a second instead of hanging for
 * as long as the peer stalls, and leaves its memory allocated (the kernel
 * may still read it): the raw is not freed.
 */
START_TEST(test_destroy_gives_up_a_notification_a_stalled_peer_holds)
{
	const size_t len = 128 << 10;
	struct bl_uring *u = tu_ring_new(blocking, 1, 0);
	struct zc_watch w;
	struct stranded st = { 0, 0 };
	struct bl_list l;
	struct bl_ptr p;
	char *mem = malloc(len);
	unsigned before = bl__uring_abandoned();
	bool stranded_op;
	double t0, end;
	int fds[2];

	ck_assert_ptr_nonnull(mem);
	memset(&w, 0, sizeof(w));
	w.u = u;
	memset(mem, 's', len);
	tcp_pair_how(fds, true);
	bl_list_init(&l);
	p.raw = bl_raw_claim(mem, len, zc_free, &w);
	ck_assert_ptr_nonnull(p.raw);
	p.off = 0;
	p.len = len;
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_int_eq(bl_uring_send(u, fds[0], &l, 0, stranded_cb, &st), 0);
	bl_list_clear(&l);
	/* until the send completed, or for 2 s if the socket took only part */
	end = mono_s() + 2;
	while (!st.calls && mono_s() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	stranded_op = st.calls && bl__uring_retiring(u) > 0;
	if (stranded_op)
		ck_assert_int_eq(st.res, (ssize_t)len);
	else if (!blocking)	/* the blocking back end copies */
		fprintf(stderr, "test_uring: the send did not strand a "
			"notification (%s), destroy cancels it instead\n",
			st.calls ? "no zero copy" : "the socket took part of it");
	t0 = mono_s();
	bl_uring_destroy(u);
	/* two checks a second apart without a notification */
	ck_assert_msg(mono_s() - t0 < 6, "destroy took %.1f s", mono_s() - t0);
	ck_assert_int_eq(st.calls, 1);
	if (stranded_op) {
		ck_assert_uint_eq(bl__uring_abandoned(), before + 1);
		ck_assert_int_eq(w.freed, 0);	/* kept for the kernel */
	} else {
		/*
		 * Not stranded before the destroy: either freed, or given up
		 * then (a part the socket took holds a notification too).
		 */
		ck_assert_uint_eq(bl__uring_abandoned() - before,
				  w.freed ? 0u : 1u);
	}
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(test_recv_sees_zero_when_the_peer_closes)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct tu_rec r;
	int fds[2];

	tcp_pair(fds);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv(u, fds[1], 100, tu_rec_cb, &r), 0);
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	close(fds[0]);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, 0);
	ck_assert_uint_eq(bl_list_length(&r.data), 0);
	bl_uring_destroy(u);
	close(fds[1]);
}
END_TEST

/*
 * A receive holds the socket it was armed on, not its number: after the
 * caller closes the descriptor and a new socket gets the same number, the
 * receive still takes the first socket's bytes and never the new one's,
 * on both back ends (io_uring keeps a reference to the file; the
 * blocking back end holds a duplicate while the receive waits).
 */
START_TEST(test_recv_armed_on_a_closed_descriptor_keeps_its_socket)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	time_t end = time(NULL) + 20;
	struct tu_rec r;
	int a[2], b[2], num;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, a), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, b), 0);
	tu_rec_init(&r);
	num = a[1];
	ck_assert_int_eq(bl_uring_recv(u, num, 100, tu_rec_cb, &r), 0);
	ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(r.calls, 0);
	/* the number now names another socket, with bytes waiting */
	close(num);
	ck_assert_int_eq(dup2(b[1], num), num);
	close(b[1]);
	ck_assert_int_eq(write(b[0], "new!", 4), 4);
	for (int i = 0; i < 20; i++) {
		ck_assert_int_ge(bl_uring_run(u, 0, 10), 0);
		ck_assert_int_eq(r.calls, 0);
	}
	/* what the first socket's peer sends is what it gets */
	ck_assert_int_eq(write(a[0], "old!", 4), 4);
	while (!r.calls && time(NULL) < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, 4);
	ck_assert_uint_eq(bl_list_length(&r.data), 4);
	{
		char got[4];

		bl_list_copy_out(&r.data, 0, 4, got);
		ck_assert_mem_eq(got, "old!", 4);
	}
	/* the new socket's bytes are still there for its own reader */
	{
		char got[4];

		ck_assert_int_eq(recv(num, got, 4, MSG_DONTWAIT), 4);
		ck_assert_mem_eq(got, "new!", 4);
	}
	bl_list_clear(&r.data);
	bl_uring_destroy(u);
	close(a[0]);
	close(b[0]);
	close(num);
}
END_TEST

/*
 * bl_uring_run(u, 0, 0) in a loop drives both back ends: a receive whose
 * data arrived completes, and a send larger than the socket buffer goes
 * out whole while the same loop drains the peer.  (The loop is bounded by
 * a 20 s deadline only so that a hang fails.)
 */
START_TEST(test_run_with_min_complete_zero_advances_waiting_ops)
{
	uint64_t rng = seed + 21;
	const size_t len = 4 << 20;
	unsigned char *want = tu_rand_buf(len, &rng), *got = malloc(len);
	struct bl_uring *u = tu_ring_new(blocking, SIZE_MAX, 0);
	time_t end = time(NULL) + 20;
	struct bl_list l;
	struct tu_rec r, s;
	size_t have = 0;
	int sv[2];

	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, tu_rec_cb, &r), 0);
	ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(r.calls, 0);
	ck_assert_int_eq(write(sv[0], "ping", 4), 4);
	while (!r.calls && time(NULL) < end)
		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, 4);
	tu_assert_list_eq(&r.data, "ping", 4);
	bl_list_clear(&r.data);

	make_list(&l, want, len, 64, &rng);
	tu_rec_init(&s);
	ck_assert_int_eq(bl_uring_send(u, sv[0], &l, 0, tu_rec_cb, &s), 0);
	bl_list_clear(&l);
	set_nonblock(sv[1]);
	while ((!s.calls || have < len) && time(NULL) < end) {
		ssize_t n;

		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
		if (have == len)
			continue;
		n = read(sv[1], got + have, len - have);
		if (n > 0)
			have += (size_t)n;
		else
			ck_assert(n < 0 && errno == EAGAIN);
	}
	ck_assert_int_eq(s.calls, 1);
	ck_assert_int_eq(s.res, (ssize_t)len);
	ck_assert_uint_eq(have, len);
	ck_assert_mem_eq(got, want, len);
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
	free(got);
	free(want);
}
END_TEST

static bool sigpipe_pending(void)
{
	sigset_t set;

	ck_assert_int_eq(sigpending(&set), 0);
	return sigismember(&set, SIGPIPE) == 1;
}

/* Writes and sends to a pipe / socket whose reader is gone: -EPIPE. */
static void epipe_no_signal(struct bl_uring *u)
{
	struct bl_list l;
	struct tu_rec r;
	int fds[2];

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	for (int k = 0; k < 3; k++) {
		if (k)		/* 1: write to a socket, 2: send */
			ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0,
						    fds), 0);
		else
			ck_assert_int_eq(pipe(fds), 0);
		close(fds[0]);
		tu_rec_init(&r);
		if (k < 2)
			ck_assert_int_eq(bl_uring_write(u, fds[1], -1, &l,
							tu_rec_cb, &r), 0);
		else
			ck_assert_int_eq(bl_uring_send(u, fds[1], &l, 0, tu_rec_cb,
						       &r), 0);
		tu_run_until(u, &r.calls, 1);
		ck_assert_int_eq(r.res, -EPIPE);
		ck_assert_uint_eq(bl_list_length(&r.data), 0);
		/* a signal raised by the kernel's task work comes at a later
		 * system call: make some */
		ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
		usleep(1000);
		ck_assert(!sigpipe_pending());
		close(fds[1]);
	}
	bl_list_clear(&l);
}

/* With SIGPIPE at its default disposition (which kills) the process
 * lives: no write or send of the library raises it. */
START_TEST(test_write_to_a_gone_reader_is_epipe_without_sigpipe)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct sigaction dfl, old;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	ck_assert_int_eq(sigaction(SIGPIPE, &dfl, &old), 0);
	epipe_no_signal(u);
	ck_assert_int_eq(sigaction(SIGPIPE, &old, NULL), 0);
	bl_uring_destroy(u);
}
END_TEST

static int eopnotsupp_once(struct io_uring_cqe *cqe, void *arg)
{
	(void)arg;
	if (!hook_hits++)
		return -EOPNOTSUPP;
	return cqe->res;
}

/*
 * A kernel before 6.18 refuses RWF_NOSIGNAL (-EOPNOTSUPP): the write is
 * issued again without it and later writes leave it off.  SIGPIPE is
 * ignored here, since such a kernel would raise it.
 */
START_TEST(test_write_refused_rwf_nosignal_goes_again_without_it)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct sigaction ign, old;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));
	struct bl_list l;
	struct tu_rec r;
	unsigned char *got;

	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	ck_assert_int_eq(sigaction(SIGPIPE, &ign, &old), 0);
	ck_assert(bl__uring_rwf_nosignal(-1));
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	hook_hits = 0;
	bl__uring_set_cqe_hook(eopnotsupp_once);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, -1, &l, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	bl__uring_set_cqe_hook(NULL);
	ck_assert_int_eq(r.res, 5);
	ck_assert_int_eq(hook_hits, 2);
	ck_assert(!bl__uring_rwf_nosignal(-1));
	got = tu_file_bytes(fd, 0, 5);
	ck_assert_mem_eq(got, "hello", 5);
	free(got);
	/* without it a gone reader is still -EPIPE */
	epipe_no_signal(u);
	ck_assert(bl__uring_rwf_nosignal(1));
	ck_assert_int_eq(sigaction(SIGPIPE, &old, NULL), 0);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fd);
}
END_TEST

/* ---- order on a descriptor ----------------------------------------------- */

#define NLETTERS 10
#define LETTER_SEGS 1100	/* over IOV_MAX: two requests each */
#define LETTER_SEG 100

/* @l = LETTER_SEGS segments of @seg bytes, each its own raw, all @c. */
static void letter_list(struct bl_list *l, char c, size_t seg)
{
	bl_list_init(l);
	for (unsigned i = 0; i < LETTER_SEGS; i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_ptr_alloc(&p, seg), 0);
		memset(bl_ptr_data(&p), c, seg);
		ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
	}
}

/* @buf holds each letter's @each bytes, A first. */
static void assert_letters(const unsigned char *buf, size_t len, size_t each)
{
	ck_assert_uint_eq(len, NLETTERS * each);
	for (size_t i = 0; i < len; i++)
		if (buf[i] != 'A' + i / each)
			ck_abort_msg("byte %zu is %c, not %c", i, buf[i],
				     (int)('A' + i / each));
}

/*
 * Ten lists of 1100 segments (two requests each), one letter each,
 * written back to back at the file position: the file holds them whole
 * and in submission order, as ten write(2) calls would leave it; the
 * callbacks run in that order too.  Then the same through a pipe read by
 * a slow thread, where the writes come back short (with BL_TEST_QUICK,
 * for valgrind, where the reader runs only between the ring thread's
 * waits, smaller segments: still more than the pipe holds).
 */
START_TEST(test_writes_at_the_file_position_land_whole_and_in_order)
{
	const size_t pipe_seg = getenv("BL_TEST_QUICK") ? 8 : LETTER_SEG;
	const size_t most = (size_t)LETTER_SEGS * LETTER_SEG;
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct tu_rec r[NLETTERS];
	struct bl_list l;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), pfd[2];
	struct drain d = { 0, NLETTERS * LETTER_SEGS * pipe_seg,
			   malloc(NLETTERS * most), 0, true };
	unsigned char *got;
	pthread_t t;

	for (int pass = 0; pass < 2; pass++) {
		const size_t seg = pass ? pipe_seg : LETTER_SEG;
		const size_t each = (size_t)LETTER_SEGS * seg;
		int wfd = fd;

		if (pass) {
			ck_assert_int_eq(pipe(pfd), 0);
			d.fd = pfd[0];
			wfd = pfd[1];
			ck_assert_int_eq(pthread_create(&t, NULL, drain_thread,
							&d), 0);
		}
		for (int i = 0; i < NLETTERS; i++) {
			tu_rec_init(&r[i]);
			letter_list(&l, (char)('A' + i), seg);
			ck_assert_int_eq(bl_uring_write(u, wfd, -1, &l, tu_rec_cb,
							&r[i]), 0);
			bl_list_clear(&l);
		}
		tu_run_until(u, &r[NLETTERS - 1].calls, 1);
		for (int i = 0; i < NLETTERS; i++) {
			ck_assert_int_eq(r[i].calls, 1);
			ck_assert_int_eq(r[i].res, (ssize_t)each);
			if (i)
				ck_assert_int_gt(r[i].seq, r[i - 1].seq);
		}
		if (pass) {
			pthread_join(t, NULL);
			assert_letters(d.got, d.n, each);
			close(pfd[0]);
			close(pfd[1]);
		} else {
			ck_assert_int_eq(lseek(fd, 0, SEEK_CUR),
					 (off_t)(NLETTERS * each));
			got = tu_file_bytes(fd, 0, NLETTERS * each);
			assert_letters(got, NLETTERS * each, each);
			free(got);
		}
	}
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_uring_destroy(u);
	close(fd);
	free(d.got);
}
END_TEST

#define NSENDS 20
#define SEND_LEN ((size_t)1 << 20)

static unsigned char send_byte(unsigned i, size_t j)
{
	return (unsigned char)(i * 37u + j * 7u + (j >> 12));
}

/*
 * Twenty 1 MiB sends queued at once on one TCP socket, each of its own
 * pattern, read by a thread: the stream carries them whole and in
 * submission order (by copy, and with zero copy where io_uring has it).
 */
START_TEST(test_sends_in_flight_on_one_socket_keep_the_stream_in_order)
{
	static const size_t thresholds[2] = { SIZE_MAX, 4096 };
	static const size_t cut[4] = { 0, SEND_LEN / 4, SEND_LEN / 4 * 3,
				       SEND_LEN };

	for (int z = 0; z < 2; z++) {
		struct bl_uring *u = tu_ring_new(blocking, thresholds[z], 0);
		struct drain d = { 0, NSENDS * SEND_LEN,
				   malloc(NSENDS * SEND_LEN), 0, false };
		struct tu_rec r[NSENDS];
		pthread_t t;
		int fds[2];

		tcp_pair(fds);
		d.fd = fds[1];
		for (unsigned i = 0; i < NSENDS; i++) {
			struct bl_list l;
			struct bl_ptr p;

			bl_list_init(&l);
			/* three segments: sendmsg with an iovec array */
			for (int k = 0; k < 3; k++) {
				size_t off = cut[k], n = cut[k + 1] - cut[k];

				ck_assert_int_eq(bl_ptr_alloc(&p, n), 0);
				for (size_t j = 0; j < n; j++)
					bl_ptr_data(&p)[j] = (char)send_byte(i, off + j);
				ck_assert_int_eq(bl_list_append_ptr_move(&l, &p),
						 0);
			}
			tu_rec_init(&r[i]);
			ck_assert_int_eq(bl_uring_send(u, fds[0], &l, 0, tu_rec_cb,
						       &r[i]), 0);
			bl_list_clear(&l);
		}
		ck_assert_int_eq(pthread_create(&t, NULL, drain_thread, &d), 0);
		for (unsigned i = 0; i < NSENDS; i++) {
			tu_run_until(u, &r[i].calls, 1);
			ck_assert_int_eq(r[i].res, (ssize_t)SEND_LEN);
			if (i)
				ck_assert_int_gt(r[i].seq, r[i - 1].seq);
		}
		pthread_join(t, NULL);
		ck_assert_uint_eq(d.n, NSENDS * SEND_LEN);
		for (unsigned i = 0; i < NSENDS; i++)
			for (size_t j = 0; j < SEND_LEN; j++)
				if (d.got[i * SEND_LEN + j] != send_byte(i, j))
					ck_abort_msg("send %u byte %zu differs (zc threshold %zu)",
						     i, j, thresholds[z]);
		bl_uring_destroy(u);
		close(fds[0]);
		close(fds[1]);
		free(d.got);
	}
}
END_TEST

/* ---- pooled receive ----------------------------------------------------- */

#define NFRAMES 10000

static uint32_t frame_len(uint64_t *rng)
{
	return 16 + (uint32_t)(tu_rand(rng) % 1985);
}

static unsigned char frame_byte(unsigned i, uint32_t j)
{
	return (unsigned char)(i * 7u + j * 13u + 1u);
}

struct sender {
	int fd;
	uint64_t rng;		/* the frame lengths, as the receiver's */
	uint64_t cut;		/* where writes end */
};

static void *frame_sender(void *arg)
{
	struct sender *s = arg;
	unsigned char *buf = malloc(1 << 16);
	size_t n = 0;

	for (unsigned i = 0; i < NFRAMES; i++) {
		uint32_t len = frame_len(&s->rng);

		if (n + 4 + len > (1 << 16)) {
			if (write(s->fd, buf, n) != (ssize_t)n)
				break;
			n = 0;
		}
		memcpy(buf + n, &len, 4);
		for (uint32_t j = 0; j < len; j++)
			buf[n + 4 + j] = frame_byte(i, j);
		n += 4 + len;
		/* vary how frames straddle the receiver's buffers */
		if (tu_rand(&s->cut) % 4 == 0) {
			if (write(s->fd, buf, n) != (ssize_t)n)
				break;
			n = 0;
		}
	}
	if (n && write(s->fd, buf, n) != (ssize_t)n)
		n = 0;
	shutdown(s->fd, SHUT_WR);
	free(buf);
	return NULL;
}

struct framer {
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	int fd;
	struct bl_list acc;
	uint64_t rng;
	unsigned frames;
	int eof;
	int rearms;
	int errors;
};

static void framer_cb(void *arg, ssize_t res, struct bl_list *data,
		      bool more)
{
	struct framer *f = arg;

	if (res > 0) {
		ck_assert_uint_eq(bl_list_length(data), (size_t)res);
		ck_assert_int_eq(bl_list_claim_append(&f->acc, data), 0);
		for (;;) {
			struct bl_list frame;
			uint32_t len, want;
			unsigned char *got;

			if (bl_list_length(&f->acc) < 4)
				break;
			ck_assert_int_eq(bl_list_copy_out(&f->acc, 0, 4, &len), 0);
			if (bl_list_length(&f->acc) < 4 + (size_t)len)
				break;
			want = frame_len(&f->rng);
			ck_assert_uint_eq(len, want);
			bl_list_init(&frame);
			ck_assert_int_eq(bl_list_splice(&f->acc, 0, 4, NULL), 0);
			ck_assert_int_eq(bl_list_splice(&f->acc, 0, len, &frame), 0);
			got = tu_flatten(&frame);
			for (uint32_t j = 0; j < len; j++)
				if (got[j] != frame_byte(f->frames, j))
					ck_abort_msg("frame %u byte %u differs",
						     f->frames, j);
			free(got);
			/* dropping the frame returns its buffers to the ring */
			bl_list_clear(&frame);
			f->frames++;
		}
	} else if (res == 0) {
		f->eof = 1;
	} else if (res == -ENOBUFS) {
		/* the kernel filled buffers faster than we parsed: re-arm */
		f->rearms++;
	} else {
		f->errors++;
	}
	if (!more && !f->eof && !f->errors)
		ck_assert_int_eq(bl_uring_recv_pooled(f->u, f->fd, f->br, true,
						      framer_cb, f), 0);
}

START_TEST(test_pooled_multishot_receives_10000_framed_messages)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_bufring *br;
	struct sender snd;
	struct framer f;
	pthread_t t;
	int fds[2];

	tcp_pair(fds);
	br = bl_uring_bufring_create(u, 64, 4096, 7);
	ck_assert_ptr_nonnull(br);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 64);
	memset(&f, 0, sizeof(f));
	f.u = u;
	f.br = br;
	f.fd = fds[1];
	f.rng = seed;
	bl_list_init(&f.acc);
	snd.fd = fds[0];
	snd.rng = seed;
	snd.cut = seed + 99;
	ck_assert_int_eq(bl_uring_recv_pooled(u, fds[1], br, true, framer_cb,
					      &f), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, frame_sender, &snd), 0);
	tu_run_until(u, &f.eof, 1);
	pthread_join(t, NULL);
	ck_assert_int_eq(f.errors, 0);
	ck_assert_uint_eq(f.frames, NFRAMES);
	ck_assert_uint_eq(bl_list_length(&f.acc), 0);
	bl_list_clear(&f.acc);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 64);
	if (f.rearms)
		fprintf(stderr, "test_uring: pooled receive re-armed %d times "
				"after -ENOBUFS\n", f.rearms);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

struct chunk_rec {
	int calls;
	ssize_t res;
	bool more;
	struct bl_list data;
};

static void chunk_cb(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	struct chunk_rec *c = arg;

	c->calls++;
	c->res = res;
	c->more = more;
	ck_assert_int_eq(bl_list_claim_append(&c->data, data), 0);
}

/* One single-shot pooled receive; its chunk stays in c->data. */
static void recv_one(struct bl_uring *u, int fd,
		     struct bl_uring_bufring *br, struct chunk_rec *c)
{
	memset(c, 0, sizeof(*c));
	bl_list_init(&c->data);
	ck_assert_int_eq(bl_uring_recv_pooled(u, fd, br, false, chunk_cb, c), 0);
	tu_run_until(u, &c->calls, 1);
	ck_assert_int_eq(c->calls, 1);
	ck_assert(!c->more);
}

static void *release_thread(void *arg)
{
	bl_list_clear(arg);
	return NULL;
}

START_TEST(test_buffer_released_on_another_thread_returns_to_the_ring)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 4096, 3);
	struct chunk_rec c[5];
	unsigned char *buf = calloc(1, 64 * 1024);
	pthread_t t;
	int fds[2];

	ck_assert_ptr_nonnull(br);
	tcp_pair(fds);
	ck_assert_int_eq(write(fds[0], buf, 64 * 1024), 64 * 1024);

	{
		struct bl_stats s0, s1;

		bl_stats_thread(&s0);
		recv_one(u, fds[1], br, &c[0]);
		bl_stats_thread(&s1);
		/* the chunk is the ring's buffer itself: nothing copied */
		ck_assert_uint_eq(s1.copied_bytes, s0.copied_bytes);
	}
	ck_assert_int_eq(c[0].res, 4096);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 3);
	ck_assert_int_eq(pthread_create(&t, NULL, release_thread, &c[0].data), 0);
	pthread_join(t, NULL);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);

	/* all four can be filled again: the released one went back */
	for (int i = 1; i <= 4; i++) {
		recv_one(u, fds[1], br, &c[i]);
		ck_assert_int_eq(c[i].res, 4096);
	}
	ck_assert_uint_eq(bl_uring_bufring_available(br), 0);
	/* and a fifth finds the ring dry */
	recv_one(u, fds[1], br, &c[0]);
	ck_assert_int_eq(c[0].res, -ENOBUFS);
	for (int i = 1; i <= 4; i++)
		bl_list_clear(&c[i].data);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
	free(buf);
}
END_TEST

START_TEST(test_multishot_ends_with_enobufs_when_the_ring_runs_dry)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 2, 1024, 4);
	unsigned char *buf = calloc(1, 16384);
	struct chunk_rec c;
	time_t end = time(NULL) + 20;
	int fds[2];

	ck_assert_ptr_nonnull(br);
	tcp_pair(fds);
	ck_assert_int_eq(write(fds[0], buf, 16384), 16384);
	memset(&c, 0, sizeof(c));
	bl_list_init(&c.data);
	ck_assert_int_eq(bl_uring_recv_pooled(u, fds[1], br, true, chunk_cb, &c), 0);
	while (c.res != -ENOBUFS && time(NULL) < end) {
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
		ck_assert(!c.calls || c.res > 0 || c.res == -ENOBUFS);
	}
	ck_assert_int_eq(c.res, -ENOBUFS);
	ck_assert(!c.more);
	/* the two buffers are ours: 2 KiB held, nothing lost */
	ck_assert_uint_eq(bl_list_length(&c.data), 2048);
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_list_clear(&c.data);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 2);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
	free(buf);
}
END_TEST

START_TEST(test_detach_pooled_copies_ring_segments_and_frees_buffers)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 1000, 5);
	unsigned char msg[3000];
	struct chunk_rec c[2];
	struct bl_list l;
	struct bl_ptr head, mid, p;
	int fds[2];

	ck_assert_ptr_nonnull(br);
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 31);
	tcp_pair(fds);
	ck_assert_int_eq(write(fds[0], msg, 2000), 2000);
	recv_one(u, fds[1], br, &c[0]);
	recv_one(u, fds[1], br, &c[1]);
	ck_assert_uint_eq(bl_list_length(&c[0].data) + bl_list_length(&c[1].data),
			  2000);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 2);

	/* [own 100][ring][ring][own 50][ring of c0 again, a slice] */
	bl_list_init(&l);
	ck_assert_int_eq(bl_ptr_alloc(&head, 100), 0);
	memset(bl_ptr_data(&head), 'h', 100);
	ck_assert_int_eq(bl_list_append_ptr(&l, &head), 0);
	ck_assert_int_eq(bl_list_append_list(&l, &c[0].data), 0);
	ck_assert_int_eq(bl_list_append_list(&l, &c[1].data), 0);
	ck_assert_int_eq(bl_ptr_alloc(&mid, 50), 0);
	memset(bl_ptr_data(&mid), 'm', 50);
	ck_assert_int_eq(bl_list_append_ptr(&l, &mid), 0);
	ck_assert_int_eq(bl_list_get_ptr(&c[0].data, 0, &p), 0);
	ck_assert_int_eq(bl_ptr_slice(&p, &p, 0, 10), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	bl_ptr_release(&p);
	bl_list_clear(&c[0].data);
	bl_list_clear(&c[1].data);
	{
		size_t len = bl_list_length(&l);
		unsigned char *before = tu_flatten(&l);

		ck_assert_int_eq(bl_list_detach_pooled(&l), 2010);
		tu_assert_list_eq(&l, before, len);
		free(before);
	}
	/* our own raws are still shared, not copied */
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	ck_assert_ptr_eq(p.raw, head.raw);
	bl_ptr_release(&p);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	/* nothing pooled left: nothing to do */
	ck_assert_int_eq(bl_list_detach_pooled(&l), 0);
	bl_list_clear(&l);
	bl_ptr_release(&head);
	bl_ptr_release(&mid);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/*
 * A list with no ring slice has nothing to detach: it is left exactly as
 * it was, without an allocation (five segments, past the inline slots: a
 * rebuild of the chain would need chunks, which the allocator refuses).
 */
START_TEST(test_detach_pooled_leaves_a_list_without_ring_slices_alone)
{
	struct iovec before[5], after[5];
	struct tu_alloc_stats st;
	struct bl_ptr p[5], q;
	struct bl_list l;

	bl_list_init(&l);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(bl_ptr_alloc(&p[i], 100 + i), 0);
		memset(bl_ptr_data(&p[i]), 'a' + i, 100 + i);
		ck_assert_int_eq(bl_list_append_ptr(&l, &p[i]), 0);
	}
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, before, 5), 5);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_detach_pooled(&l), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs + st.failed, 0);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, after, 5), 5);
	for (int i = 0; i < 5; i++) {
		ck_assert_ptr_eq(after[i].iov_base, before[i].iov_base);
		ck_assert_uint_eq(after[i].iov_len, before[i].iov_len);
		ck_assert_int_eq(bl_list_get_ptr(&l, (unsigned)i, &q), 0);
		ck_assert_ptr_eq(q.raw, p[i].raw);
		bl_ptr_release(&q);
		/* ours and the list's: no reference taken or dropped */
		ck_assert_uint_eq(bl_raw_nref(p[i].raw), 2);
	}
	bl_list_clear(&l);
	for (int i = 0; i < 5; i++)
		bl_ptr_release(&p[i]);
}
END_TEST

/* The copies belong to the list: they are made in the list's pool. */
START_TEST(test_detach_pooled_copies_into_the_lists_pool)
{
	struct bl_pool *pool = bl_pool_create("test_uring_detach", NULL);
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 1000, 6);
	struct bl_pool_stats ps0, ps1;
	unsigned char msg[700];
	struct chunk_rec c;
	struct bl_list l;
	struct bl_ptr head, p;
	int fds[2];

	ck_assert_ptr_nonnull(pool);
	ck_assert_ptr_nonnull(br);
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 7);
	tcp_pair(fds);
	ck_assert_int_eq(write(fds[0], msg, sizeof(msg)), (ssize_t)sizeof(msg));
	recv_one(u, fds[1], br, &c);
	ck_assert_int_eq(c.res, (ssize_t)sizeof(msg));

	/* [own 10, default pool][ring 700] in a list of @pool */
	bl_list_init(&l);
	bl_list_set_pool(&l, pool);
	ck_assert_int_eq(bl_ptr_alloc(&head, 10), 0);
	memset(bl_ptr_data(&head), 'h', 10);
	ck_assert_int_eq(bl_list_append_ptr(&l, &head), 0);
	ck_assert_int_eq(bl_list_append_list(&l, &c.data), 0);
	bl_list_clear(&c.data);
	bl_pool_get_stats(pool, &ps0);
	ck_assert_int_eq(bl_list_detach_pooled(&l), (ssize_t)sizeof(msg));
	bl_pool_get_stats(pool, &ps1);
	/* one raw of 700 bytes, accounted in the list's pool */
	ck_assert_int_eq(ps1.raws - ps0.raws, 1);
	ck_assert_int_ge(ps1.bytes - ps0.bytes, (int64_t)sizeof(msg));
	ck_assert_int_eq(bl_list_get_ptr(&l, 1, &p), 0);
	ck_assert_ptr_eq(bl_raw_pool(p.raw), pool);
	ck_assert_mem_eq(bl_ptr_data(&p), msg, sizeof(msg));
	bl_ptr_release(&p);
	/* the segment that was not copied keeps its own pool */
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	ck_assert_ptr_eq(p.raw, head.raw);
	ck_assert_ptr_eq(bl_raw_pool(p.raw), bl_pool_default());
	bl_ptr_release(&p);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	bl_list_clear(&l);
	bl_ptr_release(&head);
	bl_pool_get_stats(pool, &ps1);
	ck_assert_int_eq(ps1.raws, ps0.raws);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* ---- thread-local raws --------------------------------------------------- */

/* io_uring registers provided-buffer rings here (Linux 5.19 and later). */
static bool pbuf_ok;

/* Checked teardown: runs even after an assertion ended the test early. */
static void local_off(void)
{
	bl_raw_set_thread_local(false);
}

/* Pooled receives into @out until it holds @len bytes. */
static void recv_pooled_bytes(struct bl_uring *u, int fd,
			      struct bl_uring_bufring *br, struct bl_list *out,
			      size_t len)
{
	while (bl_list_length(out) < len) {
		struct chunk_rec c;

		recv_one(u, fd, br, &c);
		ck_assert_int_gt(c.res, 0);
		ck_assert_int_eq(bl_list_claim_append(out, &c.data), 0);
	}
	ck_assert_uint_eq(bl_list_length(out), len);
}

/* How many of @l's segments lie in thread-local raws. */
static unsigned local_segments(const struct bl_list *l)
{
	unsigned n = 0;

	for (unsigned i = 0; i < bl_list_num_buffers(l); i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_list_get_ptr(l, i, &p), 0);
		n += bl_raw_is_thread_local(p.raw);
		bl_ptr_release(&p);
	}
	return n;
}

/*
 * A ring's received buffers are raws the receiving thread makes, so they
 * follow its bl_raw_set_thread_local(): on (_i 1), every segment of what
 * a pooled receive hands over is thread-local; off (_i 0), none is.  The
 * raw is made when the chunk arrives, so a switch turned the other way
 * after the ring was made holds for the next chunk.  Either way the
 * buffers go back to the ring when this thread drops them.  A copy made
 * with bl_list_copy_shared() is never thread-local, and is what another
 * thread may release (the exception bufferlist(7) makes for rings).
 */
START_TEST(test_pooled_receive_raws_follow_the_threads_setting)
{
	const bool on = _i;
	unsigned char msg[3500];
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	struct bl_list got, later, copy;
	struct bl_ptr p;
	unsigned ngot, nlater;
	pthread_t t;
	int fds[2];

	ck_assert(!bl_raw_set_thread_local(on));
	u = tu_ring_new(blocking, 0, 0);
	br = bl_uring_bufring_create(u, 8, 1024, 8);
	ck_assert_ptr_nonnull(br);
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 13);
	tcp_pair(fds);
	bl_list_init(&got);
	bl_list_init(&later);
	bl_list_init(&copy);
	ck_assert_int_eq(write(fds[0], msg, 3000), 3000);
	recv_pooled_bytes(u, fds[1], br, &got, 3000);
	ngot = bl_list_num_buffers(&got);
	ck_assert_uint_ge(ngot, 3);
	ck_assert_uint_eq(local_segments(&got), (on ? ngot : 0));
	tu_assert_list_eq(&got, msg, 3000);

	/* the switch the other way: the next chunk follows it */
	bl_raw_set_thread_local(!on);
	ck_assert_int_eq(write(fds[0], msg + 3000, 500), 500);
	recv_pooled_bytes(u, fds[1], br, &later, 500);
	nlater = bl_list_num_buffers(&later);
	ck_assert_uint_eq(local_segments(&later), (on ? 0 : nlater));
	/* and what came before keeps what it was made as */
	ck_assert_uint_eq(local_segments(&got), (on ? ngot : 0));
	bl_raw_set_thread_local(on);

	/* the hand-over to another thread: a copy in a shared raw */
	ck_assert_int_eq(bl_list_copy_shared(&copy, &got), 0);
	ck_assert_int_eq(bl_list_get_ptr(&copy, 0, &p), 0);
	ck_assert(!bl_raw_is_thread_local(p.raw));
	bl_ptr_release(&p);
	tu_assert_list_eq(&copy, msg, 3000);
	ck_assert_int_eq(pthread_create(&t, NULL, release_thread, &copy), 0);
	pthread_join(t, NULL);
	ck_assert_uint_eq(bl_list_length(&copy), 0);

	/* released here, the ring's buffers go back to it */
	ck_assert_uint_lt(bl_uring_bufring_available(br), 8);
	bl_list_clear(&got);
	bl_list_clear(&later);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 8);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

#ifdef BL_DEBUG
static void got_chunk(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	struct chunk_rec *c = arg;

	c->calls++;
	c->res = res;
	c->more = more;
	if (bl_list_claim_append(&c->data, data))
		_exit(3);
}

/*
 * In a child (the misuse aborts): a chunk received while the switch is on,
 * dropped by another thread.
 */
static void ring_raw_dropped_elsewhere(void)
{
	struct bl_uring_params prm;
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	struct chunk_rec c;
	pthread_t t;
	int sv[2];

	bl_raw_set_thread_local(true);
	memset(&prm, 0, sizeof(prm));
	prm.force_blocking = blocking;
	memset(&c, 0, sizeof(c));
	bl_list_init(&c.data);
	u = bl_uring_create(&prm);
	br = u ? bl_uring_bufring_create(u, 2, 1024, 9) : NULL;
	if (!br || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
	    write(sv[0], "x", 1) != 1 ||
	    bl_uring_recv_pooled(u, sv[1], br, false, got_chunk, &c))
		_exit(4);
	for (int i = 0; i < 100 && !c.calls; i++)
		if (bl_uring_run(u, 1, 100) < 0)
			_exit(5);
	if (c.res != 1 || pthread_create(&t, NULL, release_thread, &c.data))
		_exit(6);
	pthread_join(t, NULL);
}

/*
 * The exception enforced: a thread-local thread's ring buffers may not be
 * released on another thread, and an --enable-debug build aborts when
 * one is, naming the misuse.
 */
START_TEST(test_debug_build_aborts_on_a_local_ring_buffer_dropped_elsewhere)
{
	char err[4096];
	int status = tu_run_child(ring_raw_dropped_elsewhere, err, sizeof(err));

	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "not aborted (status %d): %s", status, err);
	ck_assert_msg(strstr(err, "thread-local to another thread") != NULL,
		      "message lacks the misuse: %s", err);
}
END_TEST
#endif

/* ---- registered buffers ---------------------------------------------------- */

START_TEST(test_registered_raws_know_their_index_and_use_fixed_io)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_regpool *rp = bl_uring_regpool_create(u, 4, 65536);
	struct bl__uring_counters c0, c1;
	struct bl_raw *r[5];
	struct bl_list l;
	struct bl_ptr p;
	struct tu_rec rr;
	unsigned char *got;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), seen = 0;

	ck_assert_ptr_nonnull(rp);
	/* one table per ring */
	ck_assert_ptr_null(bl_uring_regpool_create(u, 1, 4096));
	for (int i = 0; i < 4; i++) {
		int idx;

		r[i] = bl_uring_regpool_get(rp);
		ck_assert_ptr_nonnull(r[i]);
		ck_assert_uint_eq(bl_raw_length(r[i]), 65536);
		ck_assert_uint_eq((uintptr_t)bl_raw_data(r[i]) % 4096, 0);
		idx = bl_raw_buf_index(r[i]);
		if (blocking) {
			ck_assert_int_eq(idx, -1);
		} else {
			ck_assert(idx >= 0 && idx < 4 && !(seen & (1 << idx)));
			seen |= 1 << idx;
		}
	}
	ck_assert_ptr_null(bl_uring_regpool_get(rp));
	errno = 0;
	ck_assert_ptr_null(bl_uring_regpool_get(NULL));
	ck_assert_int_eq(errno, EINVAL);
	bl_raw_put(r[3]);
	r[3] = bl_uring_regpool_get(rp);
	ck_assert_ptr_nonnull(r[3]);

	/* a single slice of a registered raw: WRITE_FIXED */
	memset(bl_raw_data(r[0]), 0, 65536);
	for (int i = 0; i < 5000; i++)
		bl_raw_data(r[0])[100 + i] = (char)(i * 3);
	bl_list_init(&l);
	p.raw = bl_raw_get(r[0]);
	p.off = 100;
	p.len = 5000;
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	c0 = counters(u);
	write_sync(u, fd, 333, &l, 5000);
	c1 = counters(u);
	ck_assert_uint_eq(c1.fixed - c0.fixed, blocking ? 0 : 1);
	got = tu_file_bytes(fd, 333, 5000);
	ck_assert_mem_eq(got, bl_raw_data(r[0]) + 100, 5000);
	free(got);

	/* two segments: an ordinary WRITEV */
	ck_assert_int_eq(bl_list_append(&l, "xy", 2), 0);
	write_sync(u, fd, 10000, &l, 5002);
	ck_assert_uint_eq(counters(u).fixed - c1.fixed, 0);
	bl_list_clear(&l);

	/* a read that fits a free registered buffer: READ_FIXED into it */
	bl_raw_put(r[1]);
	c0 = counters(u);
	tu_rec_init(&rr);
	ck_assert_int_eq(bl_uring_read(u, fd, 333, 5000, 0, tu_rec_cb, &rr), 0);
	tu_run_until(u, &rr.calls, 1);
	ck_assert_int_eq(rr.res, 5000);
	tu_assert_list_eq(&rr.data, bl_raw_data(r[0]) + 100, 5000);
	ck_assert_int_eq(bl_list_get_ptr(&rr.data, 0, &p), 0);
	if (blocking) {
		ck_assert_int_eq(bl_raw_buf_index(p.raw), -1);
	} else {
		ck_assert_uint_eq(counters(u).fixed - c0.fixed, 1);
		ck_assert_int_ge(bl_raw_buf_index(p.raw), 0);
	}
	bl_ptr_release(&p);
	bl_list_clear(&rr.data);

	/* raws outlive the pool; they are no longer registered */
	bl_uring_regpool_destroy(rp);
	ck_assert_int_eq(bl_raw_buf_index(r[0]), -1);
	ck_assert_int_eq(bl_raw_buf_index(NULL), -1);
	bl_raw_data(r[2])[0] = 1;
	bl_raw_put(r[0]);
	bl_raw_put(r[2]);
	bl_raw_put(r[3]);
	bl_uring_destroy(u);
	close(fd);
}
END_TEST

/* ---- back ends ---------------------------------------------------------- */

/*
 * The ring owns its buffer rings and registered pool: destroying it frees
 * those the caller left, while a pooled chunk and a registered raw still
 * held stay valid until released, which frees the rest.
 */
START_TEST(test_destroy_frees_the_bufrings_and_regpool_left_to_it)
{
	struct bl_uring *u;
	struct bl_uring_bufring *br, *br2;
	struct bl_uring_regpool *rp;
	struct bl_raw *held;
	struct tu_rec r;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_alloc_install(0, 0);
	u = tu_ring_new(blocking, 0, 0);
	br = bl_uring_bufring_create(u, 4, 4096, 3);
	br2 = bl_uring_bufring_create(u, 8, 1024, 4);
	rp = bl_uring_regpool_create(u, 2, 8192);
	ck_assert_ptr_nonnull(br);
	ck_assert_ptr_nonnull(br2);
	ck_assert_ptr_nonnull(rp);
	held = bl_uring_regpool_get(rp);
	ck_assert_ptr_nonnull(held);
	tu_rec_init(&r);
	ck_assert_int_eq(write(sv[0], "chunk", 5), 5);
	ck_assert_int_eq(bl_uring_recv_pooled(u, sv[1], br, false, pooled_rec_cb,
					      &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, 5);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 3);

	bl_uring_destroy(u);
	ck_assert_uint_gt(live_bytes(), 0);
	tu_assert_list_eq(&r.data, "chunk", 5);
	memset(bl_raw_data(held), 7, 8192);
	bl_list_clear(&r.data);
	bl_raw_put(held);
	ck_assert_uint_eq(live_bytes(), 0);
	tu_alloc_uninstall();
	close(sv[0]);
	close(sv[1]);
}
END_TEST

START_TEST(test_forced_blocking_back_end_says_so)
{
	struct bl_uring_params p;
	struct bl_uring *u;

	memset(&p, 0, sizeof(p));
	p.force_blocking = true;
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(bl_uring_backend(u), BL_URING_BLOCKING);
	ck_assert_ptr_null(bl_uring_ring(u));
	ck_assert_ptr_nonnull(strstr(bl_uring_backend_reason(u), "force_blocking"));
	bl_uring_destroy(u);
	bl_uring_destroy(NULL);
}
END_TEST

START_TEST(test_seccomp_denying_io_uring_setup_selects_blocking_back_end)
{
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sock_filter filt[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup,
				 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};
		struct sock_fprog prog = { 4, filt };
		struct bl_uring *u;
		struct bl_list l;
		struct tu_rec r;
		char back[6] = "";

		unsetenv("BL_URING_FORCE_BLOCKING");
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog))
			_exit(2);
		u = bl_uring_create(NULL);
		if (!u)
			_exit(3);
		if (bl_uring_backend(u) != BL_URING_BLOCKING)
			_exit(4);
		if (!strstr(bl_uring_backend_reason(u), "not permitted"))
			_exit(5);
		/* and the same API works */
		bl_list_init(&l);
		bl_list_append(&l, "hello", 5);
		tu_rec_init(&r);
		if (bl_uring_write(u, fd, 0, &l, tu_rec_cb, &r) ||
		    bl_uring_run(u, 1, -1) != 1 || r.res != 5)
			_exit(6);
		if (pread(fd, back, 5, 0) != 5 || memcmp(back, "hello", 5))
			_exit(7);
		bl_list_clear(&l);
		bl_uring_destroy(u);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	close(fd);
}
END_TEST

START_TEST(test_io_uring_unavailable_falls_back_with_a_reason)
{
	struct bl_uring *u = bl_uring_create(NULL);

	/* only registered when io_uring cannot be set up on this machine */
	fprintf(stderr, "test_uring: io_uring unavailable (%s); the io_uring "
			"cases were replaced by this check of the fallback\n",
		uring_reason);
	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(bl_uring_backend(u), BL_URING_BLOCKING);
	ck_assert_str_ne(bl_uring_backend_reason(u), "");
	bl_uring_destroy(u);
}
END_TEST

START_TEST(test_attached_ring_shares_the_application_event_loop)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct bl_uring *u;
	struct bl_list l;
	struct tu_rec r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), app = 0;

	ck_assert_int_eq(io_uring_queue_init(64, &ring, 0), 0);
	u = bl_uring_attach(&ring, NULL);
	ck_assert_ptr_nonnull(u);
	ck_assert_ptr_eq(bl_uring_ring(u), &ring);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "attached", 8), 0);

	/* the application's loop reaps and hands the CQEs over */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, 2);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, tu_rec_cb, &r), 0);
	ck_assert_int_eq(io_uring_submit(&ring), 2);
	while (!r.calls || !app) {
		ck_assert_int_eq(io_uring_wait_cqe(&ring, &cqe), 0);
		if (!bl_uring_handle_cqe(u, cqe)) {
			ck_assert_uint_eq(cqe->user_data, 2);
			app++;
		}
		io_uring_cqe_seen(&ring, cqe);
	}
	ck_assert_int_eq(r.res, 8);

	/* bl_uring_run on a shared ring leaves the application's CQEs */
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, 4);
	ck_assert_int_eq(io_uring_submit(&ring), 1);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, 8, &l, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, 8);
	ck_assert_int_eq(io_uring_peek_cqe(&ring, &cqe), 0);
	ck_assert_uint_eq(cqe->user_data, 4);
	io_uring_cqe_seen(&ring, cqe);
	ck_assert_int_eq(io_uring_peek_cqe(&ring, &cqe), -EAGAIN);

	bl_list_clear(&l);
	bl_uring_destroy(u);
	io_uring_queue_exit(&ring);
	close(fd);
}
END_TEST

START_TEST(test_destroy_of_attached_ring_leaves_the_application_cqes)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct bl_uring *u;
	struct tu_rec r;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(io_uring_queue_init(16, &ring, 0), 0);
	u = bl_uring_attach(&ring, NULL);
	ck_assert_ptr_nonnull(u);
	sqe = io_uring_get_sqe(&ring);
	io_uring_prep_nop(sqe);
	io_uring_sqe_set_data64(sqe, 6);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 10, tu_rec_cb, &r), 0);
	ck_assert_int_eq(io_uring_submit(&ring), 2);
	/* the NOP's CQE is in the queue when the library's recv is cancelled */
	bl_uring_destroy(u);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, -ECANCELED);
	ck_assert_int_eq(io_uring_peek_cqe(&ring, &cqe), 0);
	ck_assert_uint_eq(cqe->user_data, 6);
	io_uring_cqe_seen(&ring, cqe);
	ck_assert_int_eq(io_uring_peek_cqe(&ring, &cqe), -EAGAIN);
	io_uring_queue_exit(&ring);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/*
 * Rings whose task work waits for the thread (completions posted only when
 * it enters the kernel): bl_uring_run(u, 0, 0) still sees them.  _i 0: the
 * caller's SINGLE_ISSUER | DEFER_TASKRUN (every run enters); 1:
 * single_issuer (the library adds TASKRUN_FLAG and enters when the SQ
 * ring says so); 2: the default (COOP_TASKRUN | TASKRUN_FLAG); 3: the
 * caller's COOP_TASKRUN alone (every run enters).
 */
START_TEST(test_taskrun_rings_see_completions_without_waiting)
{
	static const unsigned defer = IORING_SETUP_SINGLE_ISSUER |
				      IORING_SETUP_DEFER_TASKRUN;
	static const unsigned coop = IORING_SETUP_COOP_TASKRUN |
				     IORING_SETUP_TASKRUN_FLAG;
	struct bl_uring_params p;
	struct bl_uring *u;
	struct bl_list l;
	struct tu_rec w, r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), sv[2], spins;
	unsigned want = 0, fl;

	memset(&p, 0, sizeof(p));
	if (_i == 0)
		p.flags = defer;
	else if (_i == 1)
		p.single_issuer = true;
	else if (_i == 3)
		p.flags = IORING_SETUP_COOP_TASKRUN;
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	if (_i == 1)
		want = tu_kernel_takes(defer | IORING_SETUP_TASKRUN_FLAG)
		       ? defer | IORING_SETUP_TASKRUN_FLAG
		       : tu_kernel_takes(coop) ? coop : 0;
	else if (_i == 2)
		want = tu_kernel_takes(coop) ? coop : 0;
	else
		want = p.flags;
	if (bl_uring_backend(u) != BL_URING_IO_URING) {
		/* the caller's flags, refused (before 6.1 / 5.19): the
		 * documented fallback */
		ck_assert(_i == 0 || _i == 3);
		fprintf(stderr, "test_uring: flags %#x refused (%s)\n",
			p.flags, bl_uring_backend_reason(u));
		ck_assert_str_ne(bl_uring_backend_reason(u), "");
	} else {
		/* exactly the flags chosen, nothing else of the kind */
		fl = bl_uring_ring(u)->flags;
		ck_assert_uint_eq(fl & (defer | coop), want);
	}
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	tu_rec_init(&w);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, tu_rec_cb, &w), 0);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, tu_rec_cb, &r), 0);
	/* polling with no wait must make progress */
	for (spins = 0; !w.calls && spins < 100000; spins++)
		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(w.res, 5);
	ck_assert_int_eq(write(sv[0], "abc", 3), 3);
	for (spins = 0; !r.calls && spins < 100000; spins++)
		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_int_eq(r.res, 3);
	tu_assert_list_eq(&r.data, "abc", 3);
	bl_list_clear(&r.data);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
	close(fd);
}
END_TEST

/* ---- spinning before a sleep --------------------------------------------- */

struct late_writer {
	int fd;
	unsigned delay_us;
};

static void *write_late(void *arg)
{
	struct late_writer *w = arg;

	usleep(w->delay_us);
	ck_assert_int_eq(write(w->fd, "late", 4), 4);
	return NULL;
}

/*
 * An answer that comes within the window ends the spin (no sleep): a
 * window of 200 ms against a delay of 5 ms.  A machine so loaded that the
 * writer did not run within the window may miss, so the hit is asserted
 * only when the run returned well inside it; one so loaded that this
 * thread reached the wait only after the answer came (nothing to wait
 * for: no spin) tries again with twice the delay, up to 80 ms.  The
 * blocking back end never spins.
 */
static void spin_once(unsigned delay_us, struct bl__uring_counters *c,
		      double *took)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 200000);
	struct late_writer w;
	struct tu_rec r;
	pthread_t t;
	double t0;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, tu_rec_cb, &r), 0);
	/* submitted: a wait with submissions pending does not spin */
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	w.fd = sv[0];
	w.delay_us = delay_us;
	ck_assert_int_eq(pthread_create(&t, NULL, write_late, &w), 0);
	t0 = mono_s();
	ck_assert_int_eq(bl_uring_run(u, 1, 10000), 1);
	*took = mono_s() - t0;
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(r.res, 4);
	tu_assert_list_eq(&r.data, "late", 4);
	*c = counters(u);
	bl_list_clear(&r.data);
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
}

START_TEST(test_a_wait_spins_and_an_answer_in_the_window_ends_it)
{
	struct bl__uring_counters c;
	unsigned delay_us = 5000;
	double took;

	spin_once(delay_us, &c, &took);
	if (blocking) {
		ck_assert_uint_eq(c.spins, 0);
		return;
	}
	while (c.spins == 0 && delay_us < 80000) {
		delay_us *= 2;
		spin_once(delay_us, &c, &took);
	}
	ck_assert_uint_eq(c.spins, 1);
	if (took < 0.15)
		ck_assert_uint_eq(c.spin_hits, 1);
	else
		ck_assert_uint_le(c.spin_hits, 1);
}
END_TEST

/*
 * Waits that outlast the window: after each miss the next 1, 2, 4 ...
 * waits sleep at once, so 20 timed-out runs of one wait each spin 5
 * times (waits 1, 3, 6, 11 and 20), and spin_us UINT_MAX never spins.
 * The receive's answer is due in every one: nothing calls back.
 */
START_TEST(test_waits_that_outlast_the_window_back_off_from_spinning)
{
	for (int never = 0; never < 2; never++) {
		struct bl_uring *u = tu_ring_new(blocking, 0, never ? UINT_MAX : 0);
		struct bl__uring_counters c;
		struct tu_rec r;
		int sv[2];

		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		tu_rec_init(&r);
		ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, tu_rec_cb, &r), 0);
		ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
		for (int i = 0; i < 20; i++)
			ck_assert_int_eq(bl_uring_run(u, 1, 2), 0);
		ck_assert_int_eq(r.calls, 0);
		c = counters(u);
		ck_assert_uint_eq(c.spin_hits, 0);
		if (blocking || never) {
			ck_assert_uint_eq(c.spins, 0);
			ck_assert_uint_eq(c.spin_skips, 0);
			ck_assert_uint_eq(c.spin_idle, 0);
		} else {
			/* an early wake-up would add a wait (up to 36: 5) */
			ck_assert_uint_eq(c.spins, 5);
			ck_assert_uint_ge(c.spin_skips, 15);
		}
		bl_uring_destroy(u);
		ck_assert_int_eq(r.calls, 1);
		ck_assert_int_eq(r.res, -ECANCELED);
		close(sv[0]);
		close(sv[1]);
	}
}
END_TEST

/* Waits of one timed-out run each: how many were let spin, how many not. */
struct spin_tally {
	uint64_t allowed;	/* spun, or would have but for the back-off */
	uint64_t idle;		/* no answer due */
};

static struct spin_tally tally_waits(struct bl_uring *u, int runs)
{
	struct bl__uring_counters c0 = counters(u), c1;
	struct spin_tally t;

	for (int i = 0; i < runs; i++)
		ck_assert_int_eq(bl_uring_run(u, 1, 10), 0);
	c1 = counters(u);
	t.allowed = (c1.spins + c1.spin_skips) - (c0.spins + c0.spin_skips);
	t.idle = c1.spin_idle - c0.spin_idle;
	return t;
}

/*
 * @n bytes from the peer @fd, until the pooled receive @k has them (what
 * it had before is dropped: its buffers go back to the ring).
 */
static void feed(struct bl_uring *u, int fd, struct chunk_rec *k, size_t n)
{
	static const char bytes[8192];

	ck_assert_uint_le(n, sizeof(bytes));
	bl_list_clear(&k->data);
	ck_assert_int_eq(write(fd, bytes, n), (ssize_t)n);
	while (bl_list_length(&k->data) < n) {
		ck_assert_int_ge(bl_uring_run(u, 0, 100), 0);
		ck_assert_int_ge(k->res, 0);	/* not -ENOBUFS: it goes on */
	}
}

/* (a run that found its time over before it looked adds nothing) */
static void assert_let_spin(struct spin_tally t)
{
	ck_assert_uint_ge(t.allowed, 1);
	ck_assert_uint_eq(t.idle, 0);
}

/* Without multishot receives every chunk re-arms: a request, answers due. */
static void assert_slept(struct bl_uring *u, struct spin_tally t)
{
	struct bl__uring_features f;

	bl__uring_features(u, &f);
	if (!f.recv_multishot)
		return;
	ck_assert_uint_eq(t.allowed, 0);
	ck_assert_uint_ge(t.idle, 1);
}

/*
 * A wait spins only while an answer is due: two callbacks for each
 * request the ring issued (the request's own, then the answer), one for
 * each bl_uring_expect_answer(), and after a pooled chunk of at least
 * half its buffer, the next chunk.  Waits that time out use none of it
 * up, so every wait of a tally is of one kind (an early wake-up only adds
 * a look of the same kind).  A receiver that only drains small chunks of
 * a multishot receive sleeps at once.  The blocking back end never spins.
 */
START_TEST(test_a_wait_spins_only_where_an_answer_is_due)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 1000);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 4096, 11);
	struct spin_tally t;
	struct chunk_rec k;
	struct bl_list l;
	struct tu_rec r;
	char sink[64];
	int sv[2];

	ck_assert_ptr_nonnull(br);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	memset(&k, 0, sizeof(k));
	bl_list_init(&k.data);
	ck_assert_int_eq(bl_uring_recv_pooled(u, sv[1], br, true, chunk_cb, &k),
			 0);
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	/* arming the receive was a request: its answers are due */
	t = tally_waits(u, 3);
	if (blocking) {
		ck_assert_uint_eq(t.allowed + t.idle, 0);
		goto out;
	}
	assert_let_spin(t);

	/* two chunks under half a buffer: answered, nothing more is due */
	feed(u, sv[0], &k, 2047);
	ck_assert_int_eq(k.res, 2047);
	feed(u, sv[0], &k, 2047);
	assert_slept(u, tally_waits(u, 3));

	/* chunks of half a buffer and more: the next one is due */
	feed(u, sv[0], &k, 8192);
	ck_assert_int_eq(k.res, 4096);
	assert_let_spin(tally_waits(u, 3));
	feed(u, sv[0], &k, 100);
	assert_slept(u, tally_waits(u, 2));

	/* two sends the ring issued: their completions ran, two answers due */
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "ping", 4), 0);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_send(u, sv[1], &l, 0, tu_rec_cb, &r), 0);
	ck_assert_int_eq(bl_uring_send(u, sv[1], &l, 0, tu_rec_cb, &r), 0);
	while (r.calls < 2)
		ck_assert_int_ge(bl_uring_run(u, 0, 100), 0);
	ck_assert_int_eq(r.res, 4);
	assert_let_spin(tally_waits(u, 2));
	ck_assert_int_eq(read(sv[0], sink, sizeof(sink)), 8);
	feed(u, sv[0], &k, 4);	/* the first answer */
	assert_let_spin(tally_waits(u, 2));
	feed(u, sv[0], &k, 4);
	assert_slept(u, tally_waits(u, 2));

	/* two requests the caller wrote itself */
	bl_uring_expect_answer(u);
	bl_uring_expect_answer(u);
	assert_let_spin(tally_waits(u, 2));
	feed(u, sv[0], &k, 4);
	assert_let_spin(tally_waits(u, 2));
	feed(u, sv[0], &k, 4);
	assert_slept(u, tally_waits(u, 2));
	bl_list_clear(&l);
out:
	bl_uring_destroy(u);	/* and br, with the receive cancelled */
	bl_list_clear(&k.data);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

static void *destroy_ring(void *arg)
{
	bl_uring_destroy(arg);
	return NULL;
}

/*
 * A single_issuer ring destroyed from a thread that is not its own (which
 * uring.h forbids): the kernel refuses that thread (-EEXIST), so nothing
 * can be cancelled or reaped from it.  The destroy still returns, runs
 * the receive's callback with -ECANCELED, and keeps the ring and what the
 * kernel may still use instead of freeing it.
 */
START_TEST(test_destroy_from_a_thread_a_single_issuer_ring_refuses_returns)
{
	struct bl_uring_params p;
	struct bl_uring *u;
	unsigned before = bl__uring_lost_rings();
	bool refuses;
	struct tu_rec r;
	pthread_t t;
	int sv[2];

	memset(&p, 0, sizeof(p));
	p.single_issuer = true;
	p.force_blocking = blocking;	/* which has no issuer: ordinary */
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	refuses = bl_uring_backend(u) == BL_URING_IO_URING &&
		  (bl_uring_ring(u)->flags & IORING_SETUP_SINGLE_ISSUER);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, tu_rec_cb, &r), 0);
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);	/* in the kernel */
	ck_assert_int_eq(r.calls, 0);
	ck_assert_int_eq(pthread_create(&t, NULL, destroy_ring, u), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, -ECANCELED);
	ck_assert_uint_eq(bl_list_length(&r.data), 0);
	if (refuses)
		ck_assert_uint_eq(bl__uring_lost_rings(), before + 1);
	else	/* blocking, or a kernel without SINGLE_ISSUER: ordinary */
		ck_assert_uint_eq(bl__uring_lost_rings(), before);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* ---- teardown with I/O in flight ---------------------------------------- */

struct counted {
	int calls;
	ssize_t last;
	bool more;
};

static void counted_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct counted *c = arg;

	c->calls++;
	c->last = res;
}

static void counted_rcb(void *arg, ssize_t res, struct bl_list *data,
			bool more)
{
	struct counted *c = arg;

	c->calls++;
	c->last = res;
	c->more = more;
}

START_TEST(test_destroy_with_io_in_flight_cancels_everything_without_leaks)
{
	uint64_t rng = seed + 14;
	const size_t len = 1 << 20;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct counted crecv = { 0 }, cpool = { 0 }, cwrite = { 0 };
	struct bl_uring_bufring *br;
	struct bl_uring *u;
	struct bl_list l;
	int s1[2], s2[2], pfd[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, s1), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, s2), 0);
	ck_assert_int_eq(pipe(pfd), 0);
	set_nonblock(pfd[1]);

	tu_alloc_install(0, 0);
	u = tu_ring_new(blocking, 0, 0);
	br = bl_uring_bufring_create(u, 8, 4096, 9);
	ck_assert_ptr_nonnull(br);
	make_list(&l, want, len, 300, &rng);
	/* a receive nobody will satisfy, a pooled multishot one, and a
	 * write to a pipe nobody reads */
	ck_assert_int_eq(bl_uring_recv(u, s1[1], 4096, counted_cb, &crecv), 0);
	ck_assert_int_eq(bl_uring_recv_pooled(u, s2[1], br, true, counted_rcb,
					      &cpool), 0);
	ck_assert_int_eq(bl_uring_write(u, pfd[1], -1, &l, counted_cb, &cwrite),
			 0);
	bl_list_clear(&l);
	ck_assert_int_ge(bl_uring_run(u, 0, 50), 0);
	ck_assert_uint_eq(bl_uring_inflight(u), 3);
	ck_assert_int_eq(crecv.calls + cpool.calls + cwrite.calls, 0);

	bl_uring_destroy(u);
	ck_assert_int_eq(crecv.calls, 1);
	ck_assert_int_eq(crecv.last, -ECANCELED);
	ck_assert_int_eq(cpool.calls, 1);
	ck_assert_int_eq(cpool.last, -ECANCELED);
	ck_assert(!cpool.more);
	ck_assert_int_eq(cwrite.calls, 1);
	ck_assert_int_eq(cwrite.last, -ECANCELED);
	/* the ring destroyed its buffer ring too */
	ck_assert_uint_eq(live_bytes(), 0);
	tu_alloc_uninstall();
	close(s1[0]);
	close(s1[1]);
	close(s2[0]);
	close(s2[1]);
	close(pfd[0]);
	close(pfd[1]);
	free(want);
}
END_TEST

/*
 * Writes and sends queued behind one that cannot finish (a pipe and a
 * socket nobody reads): destroy ends each of them once, with -ECANCELED,
 * in submission order, and frees everything.
 */
START_TEST(test_destroy_cancels_the_ops_waiting_their_turn_on_a_descriptor)
{
	uint64_t rng = seed + 22;
	const size_t len = 8 << 20;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct tu_rec rw[4], rs[4];
	struct bl_uring *u;
	struct bl_list l;
	int sv[2], pfd[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(pipe(pfd), 0);
	/* the blocking back end would block in a write to a blocking pipe */
	set_nonblock(pfd[1]);
	tu_alloc_install(0, 0);
	u = tu_ring_new(blocking, 0, 0);
	make_list(&l, want, len, 100, &rng);
	for (int i = 0; i < 4; i++) {
		tu_rec_init(&rw[i]);
		tu_rec_init(&rs[i]);
		ck_assert_int_eq(bl_uring_write(u, pfd[1], -1, &l, tu_rec_cb,
						&rw[i]), 0);
		ck_assert_int_eq(bl_uring_send(u, sv[0], &l, 0, tu_rec_cb, &rs[i]),
				 0);
	}
	bl_list_clear(&l);
	ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	ck_assert_uint_eq(bl_uring_inflight(u), 8);
	bl_uring_destroy(u);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(rw[i].calls, 1);
		ck_assert_int_eq(rw[i].res, -ECANCELED);
		ck_assert_int_eq(rs[i].calls, 1);
		ck_assert_int_eq(rs[i].res, -ECANCELED);
		if (i) {
			ck_assert_int_gt(rw[i].seq, rw[i - 1].seq);
			ck_assert_int_gt(rs[i].seq, rs[i - 1].seq);
		}
	}
	ck_assert_uint_eq(live_bytes(), 0);
	tu_alloc_uninstall();
	close(sv[0]);
	close(sv[1]);
	close(pfd[0]);
	close(pfd[1]);
	free(want);
}
END_TEST

START_TEST(test_destroy_waits_for_zero_copy_notifications)
{
	struct counted cs = { 0 };
	struct bl_uring *u;
	struct zc_watch w;
	struct bl_list l;
	struct bl_ptr p;
	char *mem = malloc(100000);
	unsigned char *sink = malloc(100000);
	size_t got = 0;
	int fds[2];

	memset(mem, 'n', 100000);
	tcp_pair(fds);
	tu_alloc_install(0, 0);
	u = tu_ring_new(blocking, 1, 0);
	memset(&w, 0, sizeof(w));
	w.u = u;
	bl_list_init(&l);
	p.raw = bl_raw_claim(mem, 100000, zc_free, &w);
	p.off = 0;
	p.len = 100000;
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_int_eq(bl_uring_send(u, fds[0], &l, 0, counted_cb, &cs), 0);
	bl_list_clear(&l);
	ck_assert_int_eq(bl_uring_submit(u) >= 0, 1);
	/* destroy right away: it must still wait for the kernel */
	w.u = u;
	bl_uring_destroy(u);
	w.u = NULL;
	ck_assert_int_eq(cs.calls, 1);
	ck_assert(cs.last == 100000 || cs.last == -ECANCELED);
	ck_assert_int_eq(w.freed, 1);
	ck_assert_uint_eq(live_bytes(), 0);
	tu_alloc_uninstall();
	while (got < 100000) {
		ssize_t n = read(fds[1], sink, 100000);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fds[0]);
	close(fds[1]);
	free(sink);
}
END_TEST

/* ---- constructors: NULL with errno ---------------------------------------- */

/* errno after a constructor that must return NULL. */
#define ASSERT_NULL_ERRNO(call, want)					\
	do {								\
		errno = 0;						\
		ck_assert_ptr_null(call);				\
		ck_assert_int_eq(errno, (want));			\
	} while (0)

START_TEST(test_constructors_return_null_with_errno)
{
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_uring_bufring *br;
	struct bl_uring_regpool *rp;
	struct bl_raw *r[2];

	ASSERT_NULL_ERRNO(bl_uring_attach(NULL, NULL), EINVAL);
	/* buffer rings: arguments, memory, the kernel's refusal */
	ASSERT_NULL_ERRNO(bl_uring_bufring_create(NULL, 8, 4096, 1), EINVAL);
	ASSERT_NULL_ERRNO(bl_uring_bufring_create(u, 3, 4096, 1), EINVAL);
	ASSERT_NULL_ERRNO(bl_uring_bufring_create(u, 65536, 4096, 1), EINVAL);
	ASSERT_NULL_ERRNO(bl_uring_bufring_create(u, 8, 0, 1), EINVAL);
	ASSERT_NULL_ERRNO(bl_uring_bufring_create(u, 8, (size_t)UINT32_MAX + 1, 1),
			  EINVAL);
	tu_alloc_install(1, 1);
	ASSERT_NULL_ERRNO(bl_uring_bufring_create(u, 8, 4096, 1), ENOMEM);
	ASSERT_NULL_ERRNO(bl_uring_create(NULL), ENOMEM);
	if (!blocking)
		ASSERT_NULL_ERRNO(bl_uring_attach(bl_uring_ring(u), NULL),
				  ENOMEM);
	ASSERT_NULL_ERRNO(bl_uring_regpool_create(u, 2, 4096), ENOMEM);
	ck_assert_uint_eq(live_bytes(), 0);
	tu_alloc_uninstall();
	br = bl_uring_bufring_create(u, 8, 4096, 1);
	ck_assert_ptr_nonnull(br);
	if (!blocking)	/* the group id is the kernel's to refuse */
		ASSERT_NULL_ERRNO(bl_uring_bufring_create(u, 8, 4096, 1),
				  EEXIST);
	bl_uring_bufring_destroy(br);
	/* registered pools: arguments, one per ring, buffers all out */
	ASSERT_NULL_ERRNO(bl_uring_regpool_create(NULL, 2, 4096), EINVAL);
	ASSERT_NULL_ERRNO(bl_uring_regpool_create(u, 0, 4096), EINVAL);
	ASSERT_NULL_ERRNO(bl_uring_regpool_create(u, 16385, 4096), EINVAL);
	ASSERT_NULL_ERRNO(bl_uring_regpool_create(u, 2, 0), EINVAL);
	ASSERT_NULL_ERRNO(bl_uring_regpool_create(u, 2, ((size_t)1 << 30) + 1),
			  EINVAL);
	rp = bl_uring_regpool_create(u, 2, 4096);
	ck_assert_ptr_nonnull(rp);
	ASSERT_NULL_ERRNO(bl_uring_regpool_create(u, 2, 4096), EEXIST);
	tu_alloc_install(1, 1);
	ASSERT_NULL_ERRNO(bl_uring_regpool_get(rp), ENOMEM);
	tu_alloc_uninstall();
	r[0] = bl_uring_regpool_get(rp);
	r[1] = bl_uring_regpool_get(rp);
	ck_assert_ptr_nonnull(r[0]);
	ck_assert_ptr_nonnull(r[1]);
	ASSERT_NULL_ERRNO(bl_uring_regpool_get(rp), ENOBUFS);
	bl_raw_put(r[0]);
	bl_raw_put(r[1]);
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
}
END_TEST

struct in_destroy {
	struct bl_uring *u;
	int calls;
	int br_errno, rp_errno;
	bool br_null, rp_null;
};

/* Runs while bl_uring_destroy() cancels the receive. */
static void in_destroy_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct in_destroy *d = arg;

	(void)res;
	(void)data;
	errno = 0;
	d->br_null = !bl_uring_bufring_create(d->u, 8, 4096, 2);
	d->br_errno = errno;
	errno = 0;
	d->rp_null = !bl_uring_regpool_create(d->u, 2, 4096);
	d->rp_errno = errno;
	d->calls++;
}

START_TEST(test_constructors_during_destroy_are_ecanceled)
{
	struct in_destroy d = { .u = tu_ring_new(blocking, 0, 0) };
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(bl_uring_recv(d.u, sv[0], 100, in_destroy_cb, &d), 0);
	ck_assert_int_eq(bl_uring_run(d.u, 0, 0), 0);
	bl_uring_destroy(d.u);
	ck_assert_int_eq(d.calls, 1);
	ck_assert(d.br_null);
	ck_assert_int_eq(d.br_errno, ECANCELED);
	ck_assert(d.rp_null);
	ck_assert_int_eq(d.rp_errno, ECANCELED);
	close(sv[0]);
	close(sv[1]);
}
END_TEST

/* ---- one operation, waited for ------------------------------------------ */

START_TEST(test_write_wait_and_read_wait_round_trip)
{
	uint64_t rng = seed + 40;
	const size_t len = 37 * 1000 + 11;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_list l, out;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	make_list(&l, want, len, 37, &rng);
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
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_list l, out;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), ro;

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
	assert_str_list(&out, "keep");
	/* refused before anything is submitted */
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 0, 5, 3, &out), -EINVAL);
	ck_assert_int_eq(bl_uring_read_wait(NULL, fd, 0, 5, 0, &out), -EINVAL);
	ck_assert_int_eq(bl_uring_read_wait(u, fd, 0, 5, 0, NULL), -EINVAL);
	ck_assert_int_eq(bl_uring_write_wait(NULL, fd, 0, &l), -EINVAL);
	ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, NULL), -EINVAL);
	assert_str_list(&out, "keep");
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
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_list l, empty;
	struct tu_rec r;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

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
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct bl_list l;
	char path[PATH_MAX];
	struct nested n = { .u = u, .fd = tu_tmp_open(tdir, path, sizeof(path)) };

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
	struct bl_uring *u = tu_ring_new(blocking, 0, 0);
	struct tu_alloc_stats st;
	struct bl_list l, out;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));
	uint64_t n;

	bl_list_init(&l);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	/* the waiter, then the operation */
	for (n = 1; n <= 2; n++) {
		tu_alloc_install(n, 1);
		ck_assert_int_eq(bl_uring_write_wait(u, fd, 0, &l), -ENOMEM);
		ck_assert_uint_eq(live_bytes(), 0);
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
		assert_str_list(&out, "ab");
		bl_list_clear(&out);
	}
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	close(fd);
}
END_TEST

static Suite *uring_suite(void)
{
	Suite *s = suite_create("uring");
	static const char *const names[2][6] = {
		{ "files-uring", "errors-uring", "streams-uring",
		  "pooled-uring", "registered-uring", "teardown-uring" },
		{ "files-blocking", "errors-blocking", "streams-blocking",
		  "pooled-blocking", "registered-blocking",
		  "teardown-blocking" },
	};
	TCase *tc;

	for (int b = 0; b < 2; b++) {
		void (*setup)(void) = b ? setup_blocking : setup_uring;

		if (!b && !uring_ok) {
			tc = tcase_create("fallback");
			tcase_add_test(tc, test_io_uring_unavailable_falls_back_with_a_reason);
			suite_add_tcase(s, tc);
			continue;
		}
		tc = tcase_create(names[b][0]);
		tcase_add_unchecked_fixture(tc, setup, tdir_teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_write_read_round_trip_one_many_and_over_iov_max_segments);
		tcase_add_test(tc, test_caller_clears_its_list_right_after_submit);
		tcase_add_test(tc, test_read_is_short_only_at_end_of_file);
		tcase_add_test(tc, test_write_of_empty_list_completes_with_zero);
		tcase_add_test(tc, test_null_callback_is_fire_and_forget_on_every_submission);
		tcase_add_test(tc, test_null_ring_or_list_is_einval_at_submission);
		tcase_add_test(tc, test_inflight_counts_ops_until_their_callback_ran);
		tcase_add_loop_test(tc,
			test_pending_sees_completions_not_yet_handled, 0, 2);
		tcase_add_test(tc, test_o_direct_round_trip_copies_only_misaligned_runs);
		tcase_add_test(tc, test_write_wait_and_read_wait_round_trip);
		tcase_add_test(tc, test_wait_returns_the_operations_error);
		tcase_add_test(tc, test_wait_runs_other_callbacks_meanwhile);
		tcase_add_test(tc, test_wait_from_a_callback_is_edeadlk);
		tcase_add_test(tc, test_wait_allocation_failure_is_enomem_and_leaks_nothing);
		suite_add_tcase(s, tc);

		tc = tcase_create(names[b][1]);
		tcase_add_unchecked_fixture(tc, setup, tdir_teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_write_on_read_only_fd_gives_ebadf_in_callback);
		tcase_add_test(tc, test_rlimit_fsize_gives_efbig_in_callback);
		tcase_add_test(tc, test_injected_short_counts_are_resumed_to_the_end);
		tcase_add_test(tc, test_injected_eio_and_enospc_reach_the_callback_and_release_refs);
		tcase_add_test(tc, test_injected_eagain_is_retried);
		tcase_add_test(tc, test_failed_read_passes_an_empty_list_not_null);
		tcase_add_test(tc, test_allocation_failure_at_submit_is_enomem_and_leaks_nothing);
		suite_add_tcase(s, tc);

		tc = tcase_create(names[b][2]);
		tcase_add_unchecked_fixture(tc, setup, tdir_teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_short_writes_through_a_pipe_to_a_slow_reader);
		tcase_add_test(tc, test_write_to_nonblocking_socketpair_resumes_until_done);
		tcase_add_test(tc, test_full_nonblocking_pipe_waits_for_a_reader);
		tcase_add_test(tc, test_send_with_msg_dontwait_on_full_socket_waits_for_readiness);
		tcase_add_test(tc, test_send_and_recv_over_tcp_by_copy);
		tcase_add_test(tc, test_zero_copy_send_over_tcp_delivers_the_bytes);
		tcase_add_test(tc, test_zero_copy_the_kernel_copies_anyway_is_retried_every_1024_sends);
		tcase_add_test(tc, test_zero_copy_on_unix_socket_falls_back_to_copy);
		tcase_add_test(tc, test_zero_copy_raw_is_freed_only_after_the_notification);
		tcase_add_test(tc, test_destroy_gives_up_a_notification_a_stalled_peer_holds);
		tcase_add_test(tc, test_destroy_from_a_thread_a_single_issuer_ring_refuses_returns);
		tcase_add_test(tc, test_a_wait_spins_and_an_answer_in_the_window_ends_it);
		tcase_add_test(tc, test_waits_that_outlast_the_window_back_off_from_spinning);
		tcase_add_test(tc, test_a_wait_spins_only_where_an_answer_is_due);
		tcase_add_test(tc, test_recv_sees_zero_when_the_peer_closes);
		tcase_add_test(tc, test_recv_armed_on_a_closed_descriptor_keeps_its_socket);
		tcase_add_test(tc, test_write_to_a_gone_reader_is_epipe_without_sigpipe);
		tcase_add_test(tc, test_run_with_min_complete_zero_advances_waiting_ops);
		tcase_add_test(tc, test_writes_at_the_file_position_land_whole_and_in_order);
		tcase_add_test(tc, test_sends_in_flight_on_one_socket_keep_the_stream_in_order);
		suite_add_tcase(s, tc);

		tc = tcase_create(names[b][3]);
		tcase_add_unchecked_fixture(tc, setup, tdir_teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_pooled_multishot_receives_10000_framed_messages);
		tcase_add_test(tc, test_buffer_released_on_another_thread_returns_to_the_ring);
		tcase_add_test(tc, test_multishot_ends_with_enobufs_when_the_ring_runs_dry);
		tcase_add_test(tc, test_detach_pooled_copies_ring_segments_and_frees_buffers);
		tcase_add_test(tc, test_detach_pooled_leaves_a_list_without_ring_slices_alone);
		tcase_add_test(tc, test_detach_pooled_copies_into_the_lists_pool);
		suite_add_tcase(s, tc);

		tc = tcase_create(names[b][4]);
		tcase_add_unchecked_fixture(tc, setup, tdir_teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_registered_raws_know_their_index_and_use_fixed_io);
		tcase_add_test(tc, test_constructors_return_null_with_errno);
		tcase_add_test(tc, test_constructors_during_destroy_are_ecanceled);
		suite_add_tcase(s, tc);

		tc = tcase_create(names[b][5]);
		tcase_add_unchecked_fixture(tc, setup, tdir_teardown);
		tcase_set_timeout(tc, 60);
		tcase_add_test(tc, test_destroy_with_io_in_flight_cancels_everything_without_leaks);
		tcase_add_test(tc, test_destroy_waits_for_zero_copy_notifications);
		tcase_add_test(tc, test_destroy_cancels_the_ops_waiting_their_turn_on_a_descriptor);
		tcase_add_test(tc, test_destroy_frees_the_bufrings_and_regpool_left_to_it);
		suite_add_tcase(s, tc);

		/* not run, and so not counted, where nothing can be pooled */
		if (!b && !pbuf_ok) {
			fprintf(stderr, "test_uring: the kernel has no "
				"provided-buffer rings: the thread-local ring "
				"tests run on the blocking back end only\n");
			continue;
		}
		tc = tcase_create(b ? "thread-local-blocking"
				    : "thread-local-uring");
		tcase_add_unchecked_fixture(tc, setup, tdir_teardown);
		tcase_add_checked_fixture(tc, NULL, local_off);
		tcase_set_timeout(tc, 60);
		tcase_add_loop_test(tc,
			test_pooled_receive_raws_follow_the_threads_setting,
			0, 2);
#ifdef BL_DEBUG
		tcase_add_test(tc,
			test_debug_build_aborts_on_a_local_ring_buffer_dropped_elsewhere);
#endif
		suite_add_tcase(s, tc);
	}

	tc = tcase_create("backend");
	tcase_add_unchecked_fixture(tc, setup_uring, tdir_teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_forced_blocking_back_end_says_so);
	tcase_add_test(tc, test_seccomp_denying_io_uring_setup_selects_blocking_back_end);
	tcase_add_test(tc, test_dio_align_is_eopnotsupp_where_direct_io_cannot_be);
	if (uring_ok) {
		tcase_add_test(tc, test_attached_ring_shares_the_application_event_loop);
		tcase_add_test(tc, test_destroy_of_attached_ring_leaves_the_application_cqes);
		tcase_add_loop_test(tc, test_taskrun_rings_see_completions_without_waiting,
				    0, 4);
		tcase_add_test(tc, test_write_refused_rwf_nosignal_goes_again_without_it);
	}
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	struct bl_uring *u;

	seed = tu_seed("test_uring");
	u = bl_uring_create(NULL);
	if (!u)
		return EXIT_FAILURE;
	uring_ok = bl_uring_backend(u) == BL_URING_IO_URING;
	snprintf(uring_reason, sizeof(uring_reason), "%s",
		 bl_uring_backend_reason(u));
	if (uring_ok) {
		struct bl_uring_bufring *br = bl_uring_bufring_create(u, 1,
								      4096, 1);

		pbuf_ok = br != NULL;
		bl_uring_bufring_destroy(br);
	}
	bl_uring_destroy(u);
	return tu_run(uring_suite());
}
