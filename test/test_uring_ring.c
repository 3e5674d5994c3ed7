/* SPDX-License-Identifier: MIT */
/*
 * test_uring_ring.c - the ring itself: registered buffers and fixed I/O,
 * the constructors' errors, destroy with I/O in flight, and how a back end
 * is chosen (forced, seccomp, attached to an application's ring).
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
#include "uring_probe.h"
#include "uring_int.h"

/* ---- helpers ------------------------------------------------------------ */

static void pooled_rec_cb(void *arg, ssize_t res, struct bl_list *data,
			  bool more)
{
	ck_assert(!more);
	tu_rec_cb(arg, res, data);
}

/* ---- registered buffers ---------------------------------------------------- */

START_TEST(test_registered_raws_know_their_index_and_use_fixed_io)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_uring_regpool *rp = bl_uring_regpool_create(u, 4, 65536);
	struct bl__uring_counters c0, c1;
	struct bl_raw *r[5];
	struct bl_list l;
	struct bl_ptr p;
	struct tu_rec rr;
	unsigned char *got;
	int fd = tu_ring_tmp(), seen = 0;

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
		if (tu_blocking) {
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
	c0 = tu_counters(u);
	tu_write_sync(u, fd, 333, &l, 5000);
	c1 = tu_counters(u);
	ck_assert_uint_eq(c1.fixed - c0.fixed, tu_blocking ? 0 : 1);
	got = tu_file_bytes(fd, 333, 5000);
	ck_assert_mem_eq(got, bl_raw_data(r[0]) + 100, 5000);
	free(got);

	/* two segments: an ordinary WRITEV */
	ck_assert_int_eq(bl_list_append(&l, "xy", 2), 0);
	tu_write_sync(u, fd, 10000, &l, 5002);
	ck_assert_uint_eq(tu_counters(u).fixed - c1.fixed, 0);
	bl_list_clear(&l);

	/* a read that fits a free registered buffer: READ_FIXED into it */
	bl_raw_put(r[1]);
	c0 = tu_counters(u);
	tu_rec_init(&rr);
	ck_assert_int_eq(bl_uring_read(u, fd, 333, 5000, 0, tu_rec_cb, &rr), 0);
	tu_run_until(u, &rr.calls, 1);
	ck_assert_int_eq(rr.res, 5000);
	tu_assert_list_eq(&rr.data, bl_raw_data(r[0]) + 100, 5000);
	ck_assert_int_eq(bl_list_get_ptr(&rr.data, 0, &p), 0);
	if (tu_blocking) {
		ck_assert_int_eq(bl_raw_buf_index(p.raw), -1);
	} else {
		ck_assert_uint_eq(tu_counters(u).fixed - c0.fixed, 1);
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
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
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
	if (!tu_blocking)
		ASSERT_NULL_ERRNO(bl_uring_attach(bl_uring_ring(u), NULL),
				  ENOMEM);
	ASSERT_NULL_ERRNO(bl_uring_regpool_create(u, 2, 4096), ENOMEM);
	ck_assert_uint_eq(tu_live_bytes(), 0);
	tu_alloc_uninstall();
	br = bl_uring_bufring_create(u, 8, 4096, 1);
	ck_assert_ptr_nonnull(br);
	if (!tu_blocking)	/* the group id is the kernel's to refuse */
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
	struct in_destroy d = { .u = tu_ring_new(tu_blocking, 0, 0) };
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
	uint64_t rng = tu_ring_seed + 14;
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
	tu_set_nonblock(pfd[1], true);

	tu_alloc_install(0, 0);
	u = tu_ring_new(tu_blocking, 0, 0);
	br = bl_uring_bufring_create(u, 8, 4096, 9);
	ck_assert_ptr_nonnull(br);
	tu_make_list(&l, want, len, 300, &rng);
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
	ck_assert_uint_eq(tu_live_bytes(), 0);
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
	uint64_t rng = tu_ring_seed + 22;
	const size_t len = 8 << 20;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct tu_rec rw[4], rs[4];
	struct bl_uring *u;
	struct bl_list l;
	int sv[2], pfd[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(pipe(pfd), 0);
	/* the blocking back end would block in a write to a blocking pipe */
	tu_set_nonblock(pfd[1], true);
	tu_alloc_install(0, 0);
	u = tu_ring_new(tu_blocking, 0, 0);
	tu_make_list(&l, want, len, 100, &rng);
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
	ck_assert_uint_eq(tu_live_bytes(), 0);
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
	struct tu_zc_watch w;
	struct bl_list l;
	struct bl_ptr p;
	char *mem = malloc(100000);
	unsigned char *sink = malloc(100000);
	size_t got = 0;
	int fds[2];

	memset(mem, 'n', 100000);
	tu_tcp_pair(fds);
	tu_alloc_install(0, 0);
	u = tu_ring_new(tu_blocking, 1, 0);
	memset(&w, 0, sizeof(w));
	w.u = u;
	bl_list_init(&l);
	p.raw = bl_raw_claim(mem, 100000, tu_zc_free, &w);
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
	ck_assert_uint_eq(tu_live_bytes(), 0);
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
	u = tu_ring_new(tu_blocking, 0, 0);
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
	ck_assert_uint_gt(tu_live_bytes(), 0);
	tu_assert_list_eq(&r.data, "chunk", 5);
	memset(bl_raw_data(held), 7, 8192);
	bl_list_clear(&r.data);
	bl_raw_put(held);
	ck_assert_uint_eq(tu_live_bytes(), 0);
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
	int fd = tu_ring_tmp(), status;
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

START_TEST(test_attached_ring_shares_the_application_event_loop)
{
	struct io_uring ring;
	struct io_uring_sqe *sqe;
	struct io_uring_cqe *cqe;
	struct bl_uring *u;
	struct bl_list l;
	struct tu_rec r;
	int fd = tu_ring_tmp(), app = 0;

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
	int fd = tu_tmp_open(tu_tdir, path, sizeof(path)), sv[2], spins;
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

/* ---- O_DIRECT where it cannot be --------------------------------------- */

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
	dir = tu_dio_dir(path, sizeof(path));
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

/* ---- EPIPE, never SIGPIPE ---------------------------------------------- */

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
		ck_assert(!tu_sigpipe_pending());
		close(fds[1]);
	}
	bl_list_clear(&l);
}

/* With SIGPIPE at its default disposition (which kills) the process
 * lives: no write or send of the library raises it. */
START_TEST(test_write_to_a_gone_reader_is_epipe_without_sigpipe)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct sigaction dfl, old;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	ck_assert_int_eq(sigaction(SIGPIPE, &dfl, &old), 0);
	epipe_no_signal(u);
	ck_assert_int_eq(sigaction(SIGPIPE, &old, NULL), 0);
	bl_uring_destroy(u);
}
END_TEST

/* how many completions eopnotsupp_once() saw */
static int hook_hits;

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
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct sigaction ign, old;
	int fd = tu_ring_tmp();
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

int main(void)
{
	const TTest *registered_tests[] = {
		test_registered_raws_know_their_index_and_use_fixed_io,
		test_constructors_return_null_with_errno,
		test_constructors_during_destroy_are_ecanceled,
		NULL
	};
	const TTest *teardown_tests[] = {
		test_destroy_with_io_in_flight_cancels_everything_without_leaks,
		test_destroy_waits_for_zero_copy_notifications,
		test_destroy_cancels_the_ops_waiting_their_turn_on_a_descriptor,
		test_destroy_frees_the_bufrings_and_regpool_left_to_it,
		NULL
	};
	const TTest *backend_tests[] = {
		test_forced_blocking_back_end_says_so,
		test_seccomp_denying_io_uring_setup_selects_blocking_back_end,
		test_dio_align_is_eopnotsupp_where_direct_io_cannot_be,
		NULL
	};
	/* where io_uring can be set up, the same and an application's ring */
	const TTest *attached_tests[] = {
		test_forced_blocking_back_end_says_so,
		test_seccomp_denying_io_uring_setup_selects_blocking_back_end,
		test_dio_align_is_eopnotsupp_where_direct_io_cannot_be,
		test_attached_ring_shares_the_application_event_loop,
		test_destroy_of_attached_ring_leaves_the_application_cqes,
		test_write_refused_rwf_nosignal_goes_again_without_it,
		NULL
	};
	const struct tu_loop attached_loops[] = {
		{ test_taskrun_rings_see_completions_without_waiting, 0, 4 },
		{ NULL, 0, 0 }
	};
	const TTest *epipe_tests[] = {
		test_write_to_a_gone_reader_is_epipe_without_sigpipe,
		NULL
	};
	const struct tu_ring_group groups[] = {
		TU_GROUP("epipe", epipe_tests),
		TU_GROUP("registered", registered_tests),
		TU_GROUP("teardown", teardown_tests),
		TU_GROUP_END
	};
	const struct tu_group backend[] = {
		TU_GROUP("backend", backend_tests, .timeout = 60,
			 .once_setup = tu_ring_setup_uring,
			 .once_teardown = tu_ring_teardown),
		TU_GROUP_END
	}, uring_backend[] = {
		TU_GROUP("backend", attached_tests, .loops = attached_loops,
			 .timeout = 60, .once_setup = tu_ring_setup_uring,
			 .once_teardown = tu_ring_teardown),
		TU_GROUP_END
	};

	return tu_ring_main("uring_ring", groups, backend, uring_backend);
}
