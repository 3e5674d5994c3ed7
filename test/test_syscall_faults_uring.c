/* SPDX-License-Identifier: MIT */
/*
 * test_syscall_faults_uring.c - what the uring layer and the messenger
 * over it do when the system says no, on both back ends.
 *
 * System calls and liburing entry points are wrapped at link time
 * (faultsys.h); the io_uring back end's own I/O is faulted at its
 * completion hook.  For every operation and every call it makes (found
 * by a clean counting run first), the Nth call is made to fail with
 * EINTR or EAGAIN once (retried, after poll: the result is exact), with
 * EIO, ENOSPC (files) or ECONNRESET (sockets) (the callback gets the
 * -errno, the caller's list is as it was, nothing leaks, the same call
 * then succeeds), or to move only a few bytes (resumed, exact).  Ring
 * setup, registration and enter refusals fall back or fail cleanly; a
 * wait that fails leaves the operation to complete later; a busy polling
 * connection's own recv(2) failing is retried or closes it.
 *
 * Faults at an io_uring completion can only be told apart from reality
 * where repeating the request is harmless: requests at a file offset.
 * A socket's bytes are gone once the kernel completed them, so sockets
 * on the io_uring back end get hard errors only (the blocking back end,
 * whose system calls are wrapped before they happen, gets everything).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <liburing.h>
#include <bufferlist/io.h>
#include <bufferlist/msgr.h>
#include <bufferlist/uring.h>
#include "uring_int.h"
#include "faultsys.h"
#include "faultsuite.h"
#include "uring_probe.h"
#include "testutil.h"

static const struct ucase ucases[] = {
	{ "uring blocking write/pwritev", U_WRITE, true, FS_PWRITEV, K_FILE },
	{ "uring blocking write(pos)/writev", U_WRITE_POS, true, FS_WRITEV,
	  K_FILE },
	{ "uring blocking read/preadv", U_READ, true, FS_PREADV, K_FILE },
	{ "uring blocking send/sendmsg", U_SEND, true, FS_SENDMSG, K_SOCK },
	{ "uring blocking write(pipe)/writev", U_PIPE, true, FS_WRITEV,
	  K_SOCK },
	{ "uring blocking write(pipe)/poll", U_PIPE, true, FS_POLL,
	  KB(K_EINTR) | KB(K_EIO) },
	{ "uring blocking recv/recv", U_RECV, true, FS_RECV, K_SOCK },
	{ "uring blocking recv_pooled/recv", U_POOLED, true, FS_RECV,
	  K_SOCK },
	{ "uring blocking recv_pooled(ms)/recv", U_POOLED_MULTI, true,
	  FS_RECV, K_SOCK },
	{ "uring io_uring write/cqe", U_WRITE, false, FS_CQE, K_FILE },
	{ "uring io_uring read/cqe", U_READ, false, FS_CQE, K_FILE },
	{ "uring io_uring send/cqe", U_SEND, false, FS_CQE, K_HARD },
	{ "uring io_uring write(pipe)/cqe", U_PIPE, false, FS_CQE, K_HARD },
	{ "uring io_uring recv/cqe", U_RECV, false, FS_CQE, K_HARD },
	{ "uring io_uring recv_pooled/cqe", U_POOLED, false, FS_CQE, K_HARD },
	{ "uring io_uring recv_pooled(ms)/cqe", U_POOLED_MULTI, false, FS_CQE,
	  K_HARD },
	{ "uring blocking write+fdatasync/pwritev", U_WRITE_FDSYNC, true,
	  FS_PWRITEV, K_FILE },
	{ "uring blocking write+fdatasync/fdatasync", U_WRITE_FDSYNC, true,
	  FS_FDATASYNC, K_SYNC },
	{ "uring blocking write(dsync)/pwritev2", U_WRITE_DSYNC, true,
	  FS_PWRITEV2, K_FILE },
	{ "uring blocking fsync/fsync", U_FSYNC, true, FS_FSYNC, K_SYNC },
	{ "uring blocking fdatasync/fdatasync", U_FDATASYNC, true,
	  FS_FDATASYNC, K_SYNC },
	{ "uring blocking sync_range/sync_file_range", U_SYNC_RANGE, true,
	  FS_SYNC_FILE_RANGE, K_SYNC },
	{ "uring io_uring write+fdatasync/cqe", U_WRITE_FDSYNC, false, FS_CQE,
	  K_FILE },
	{ "uring io_uring write(dsync)/cqe", U_WRITE_DSYNC, false, FS_CQE,
	  K_FILE },
	{ "uring io_uring fsync/cqe", U_FSYNC, false, FS_CQE, K_SYNC },
	{ "uring io_uring sync_range/cqe", U_SYNC_RANGE, false, FS_CQE,
	  K_SYNC },
	{ "uring io_uring write/submit_and_wait", U_WRITE, false,
	  FS_URING_SUBMIT_AND_WAIT_TIMEOUT,
	  KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) },
	{ "uring io_uring write/submit", U_WRITE, false, FS_URING_SUBMIT,
	  KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) },
	{ "uring io_uring send/submit_and_wait", U_SEND, false,
	  FS_URING_SUBMIT_AND_WAIT_TIMEOUT,
	  KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) },
};

/* The cases that can run here (main leaves out io_uring's without it). */
#define NUCASE (sizeof(ucases) / sizeof(ucases[0]))
static int uidx[NUCASE], nuidx;

START_TEST(uring_fault)
{
	/* every system call or completion of every uring operation fails
	 * or falls short in turn, on each back end: retried and exact, or
	 * the callback gets the -errno, the caller's list keeps its
	 * references, nothing leaks, and the same call then succeeds */
	const struct ucase *c = &ucases[uidx[_i]];
	struct uctx x;
	struct bl_list data;
	struct snap s;
	unsigned long ncalls, pts = 0;
	unsigned fds0;
	int64_t live0;
	ssize_t res;

	tu_alloc_install(0, 0);
	fds0 = nfds();
	uctx_open(&x, c);
	bl_list_init(&data);
	snap_take(&s, &x.l);
	live0 = live_bytes();
	if (!c->blocking)
		fs_cqe_hook(true);
	fs_reset();
	res = urun(&x, &data);
	ncalls = fs_calls(c->sym);
	ucheck_ok(&x, res, &data, c->name);
	ck_assert_msg(ncalls >= 1, "%s: never called", c->name);
	for (unsigned long n = 1; n <= ncalls; n++) {
		for (int k = 0; k < K_NKIND; k++) {
			size_t sk = n % 2 ? 1 : 1500;
			bool soft = k == K_EINTR || k == K_SHORT ||
				    (k == K_EAGAIN && c->sym != FS_READ);

			if (!(c->kinds & KB(k)))
				continue;
			plan_kind(c->sym, n, (enum kind)k, sk);
			res = urun(&x, &data);
			if (!fs_hits(c->sym))
				continue;	/* fewer calls this time */
			pts++;
			point(k);
			snap_check(&s, &x.l, c->name);
			if (c->sym == FS_URING_SUBMIT ||
			    c->sym == FS_URING_SUBMIT_AND_WAIT_TIMEOUT ||
			    c->sym == FS_POLL)
				soft = true;	/* bl_uring_run is called again */
			if (soft) {
				ucheck_ok(&x, res, &data, c->name);
			} else {
				ck_assert_msg(res == -kind_err[k],
					      "%s %s at call %lu: %zd", c->name,
					      kind_names[k], n, res);
				/* a multishot receive's earlier chunks stand */
				if (c->op == U_POOLED_MULTI)
					tu_assert_list_eq(&data, x.want,
						bl_list_length(&data));
				else
					ck_assert_uint_eq(bl_list_length(&data),
							  0);
				bl_list_clear(&data);
				if (x.peer >= 0)
					drain_peer(x.peer, NULL, 0);
				if (c->op == U_POOLED_MULTI)
					renew_socket(&x);
				fs_reset();
				res = urun(&x, &data);
				ucheck_ok(&x, res, &data, c->name);
			}
			if (x.br)
				ck_assert_uint_eq(
					bl_uring_bufring_available(x.br),
					UBUFS);
			ck_assert_uint_eq(bl_uring_inflight(x.u), 0);
			ck_assert_int_eq(live_bytes(), live0);
		}
	}
	fs_cqe_hook(false);
	report(c->name, pts);
	snap_free(&s);
	uctx_close(&x);
	ck_assert_uint_eq(nfds(), fds0);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

START_TEST(uring_setup_fault)
{
	/* a ring the kernel refuses (seccomp EPERM, ENOSYS, ENOMEM from
	 * locked-memory limits, EINVAL however asked) falls back to the
	 * blocking back end with a reason, and works; only EINVAL is asked
	 * again (without the flags the library added); a ring without a
	 * probe still sends */
	static const int errs[] = { EPERM, ENOSYS, ENOMEM, EINVAL };
	struct bl_uring *u;
	struct bl_list l;
	struct ures r = { 0 };
	unsigned long pts = 0;
	size_t total;

	ring_start(&l, &total, &r);
	for (unsigned i = 0; i < 5; i++) {
		fs_reset();
		if (i < 4)
			fs_plan(FS_URING_QUEUE_INIT_PARAMS, 1, 0, FS_FAIL,
				errs[i], 0);
		else
			fs_plan(FS_URING_GET_PROBE_RING, 1, 1, FS_FAIL, 0, 0);
		fs_arm(true);
		u = bl_uring_create(NULL);
		fs_arm(false);
		ck_assert_ptr_nonnull(u);
		ck_assert_uint_eq(fs_hits_total(), i == 3 ? 2 : 1);
		if (i < 4)
			ck_assert_uint_eq(fs_calls(FS_URING_QUEUE_INIT_PARAMS),
					  i == 3 ? 2 : 1);
		pts++;
		point(P_OTHER);
		if (i < 4) {
			ck_assert_int_eq(bl_uring_backend(u),
					 BL_URING_BLOCKING);
			ck_assert_ptr_nonnull(strstr(bl_uring_backend_reason(u),
						     strerror(errs[i])));
		} else {
			struct bl__uring_features f;

			ck_assert_int_eq(bl_uring_backend(u),
					 BL_URING_IO_URING);
			bl__uring_features(u, &f);
			ck_assert(!f.send_zc && !f.sendmsg_zc);
		}
		ring_writes(u, &l, &r, total, "write after setup fault");
		bl_uring_destroy(u);
	}
	report("uring create (init/probe refused)", pts);
	bl_list_clear(&l);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

#define TR_COOP (IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG)
#define TR_DEFER (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | \
		  IORING_SETUP_TASKRUN_FLAG)

/*
 * The flags bl_uring_create() adds to a ring of its own, each refused in
 * turn as an old kernel would (EINVAL): the ring is made with the next
 * choice (single_issuer: DEFER_TASKRUN, then COOP_TASKRUN, then neither),
 * and works; refused every time, it is the blocking back end.  Flags the
 * caller chose get nothing added and no second try.
 * _i 0: the defaults; 1: single_issuer; 2: the caller's own flags.
 */
START_TEST(uring_setup_flags_fallback)
{
	const unsigned steps[3][3] = { { TR_COOP, 0 }, { TR_DEFER, TR_COOP, 0 },
				       { IORING_SETUP_COOP_TASKRUN } };
	const unsigned nsteps = _i == 1 ? 3 : _i == 0 ? 2 : 1;
	struct bl_list l;
	struct ures r = { 0 };
	unsigned long pts = 0;
	size_t total;

	ring_start(&l, &total, &r);
	for (unsigned fail = 0; fail <= nsteps; fail++) {
		struct bl_uring_params p = { .single_issuer = _i == 1 };
		struct bl_uring *u;
		unsigned k = fail;

		if (_i == 2)
			p.flags = IORING_SETUP_COOP_TASKRUN;
		/* a step this kernel refuses by itself is passed too */
		while (k < nsteps && !tu_kernel_takes(steps[_i][k]))
			k++;
		fs_reset();
		if (fail)
			fs_plan(FS_URING_QUEUE_INIT_PARAMS, 1, fail, FS_FAIL,
				EINVAL, 0);
		fs_arm(true);
		u = bl_uring_create(&p);
		fs_arm(false);
		ck_assert_ptr_nonnull(u);
		ck_assert_uint_eq(fs_calls(FS_URING_QUEUE_INIT_PARAMS),
				  k < nsteps ? k + 1 : nsteps);
		pts++;
		point(P_OTHER);
		if (k == nsteps) {
			ck_assert_int_eq(bl_uring_backend(u),
					 BL_URING_BLOCKING);
			ck_assert_ptr_nonnull(strstr(bl_uring_backend_reason(u),
						     strerror(EINVAL)));
		} else {
			ck_assert_int_eq(bl_uring_backend(u),
					 BL_URING_IO_URING);
			ck_assert_uint_eq(bl_uring_ring(u)->flags &
					  (TR_COOP | TR_DEFER),
					  steps[_i][k]);
		}
		ring_writes(u, &l, &r, total, "write after flags refused");
		bl_uring_destroy(u);
	}
	report("uring create (setup flags refused)", pts);
	bl_list_clear(&l);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

/*
 * A ring with TASKRUN_FLAG enters the kernel in bl_uring_run(u, 0, 0) only
 * when the SQ ring says that task work waits; a ring that defers task work
 * without the flag (the caller's DEFER_TASKRUN) enters every time.
 * _i 0: single_issuer; 1: the defaults; 2: the caller's DEFER_TASKRUN.
 */
START_TEST(uring_taskrun_enters_only_when_work_waits)
{
	struct bl_uring_params p = { .single_issuer = _i == 0 };
	struct bl_uring *u;
	struct ures r = { 0 };
	int sv[2], spins;
	unsigned fl;

	if (_i == 2)
		p.flags = IORING_SETUP_SINGLE_ISSUER |
			  IORING_SETUP_DEFER_TASKRUN;
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	if (bl_uring_backend(u) != BL_URING_IO_URING) {
		bl_uring_destroy(u);	/* refused by this kernel: no ring */
		return;
	}
	fl = bl_uring_ring(u)->flags;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	bl_list_init(&r.data);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, ucb, &r), 0);
	ck_assert_int_eq(bl_uring_submit(u), 1);
	fs_reset();
	fs_arm(true);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	fs_arm(false);
	if (fl & IORING_SETUP_TASKRUN_FLAG)
		ck_assert_uint_eq(fs_calls(FS_URING_ENTER), 0);
	else
		ck_assert_uint_eq(fs_calls(FS_URING_ENTER), 100);
	/* the data arrives: its task work waits for this thread */
	ck_assert_int_eq(write(sv[0], "abc", 3), 3);
	fs_reset();
	fs_arm(true);
	for (spins = 0; !r.calls && spins < 100000; spins++)
		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	fs_arm(false);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, 3);
	tu_assert_list_eq(&r.data, "abc", 3);
	/* DEFER_TASKRUN runs it only in io_uring_enter(): ours */
	if (fl & IORING_SETUP_DEFER_TASKRUN)
		ck_assert_uint_ge(fs_calls(FS_URING_ENTER), 1);
	bl_list_clear(&r.data);
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
}
END_TEST


START_TEST(uring_register_fault)
{
	/* a buffer ring or a registered pool the kernel refuses: NULL, no
	 * memory kept, and the ring works on; then a clean try succeeds */
	static const int errs[] = { ENOMEM, EINVAL, EEXIST, EFAULT };
	struct bl_uring *u;
	unsigned long pts = 0;

	tu_alloc_install(0, 0);
	u = ring_new(false);
	for (unsigned i = 0; i < 4; i++) {
		int64_t live0 = live_bytes();
		struct bl_uring_bufring *br;
		struct bl_uring_regpool *rp;

		fs_reset();
		fs_plan(FS_URING_REGISTER_BUF_RING, 1, 1, FS_FAIL, errs[i], 0);
		fs_arm(true);
		errno = 0;
		br = bl_uring_bufring_create(u, 8, 4096, 3);
		fs_arm(false);
		ck_assert_ptr_null(br);
		ck_assert_int_eq(errno, errs[i]);	/* the kernel's */
		ck_assert_int_eq(live_bytes(), live0);
		pts++;
		point(P_OTHER);
		fs_reset();
		fs_plan(FS_URING_REGISTER_BUFFERS, 1, 1, FS_FAIL, errs[i], 0);
		fs_arm(true);
		errno = 0;
		rp = bl_uring_regpool_create(u, 4, 8192);
		fs_arm(false);
		ck_assert_ptr_null(rp);
		ck_assert_int_eq(errno, errs[i]);
		ck_assert_int_eq(live_bytes(), live0);
		pts++;
		point(P_OTHER);
		br = bl_uring_bufring_create(u, 8, 4096, 3);
		ck_assert_ptr_nonnull(br);
		rp = bl_uring_regpool_create(u, 4, 8192);
		ck_assert_ptr_nonnull(rp);
		{
			struct bl_raw *r = bl_uring_regpool_get(rp);

			ck_assert_ptr_nonnull(r);
			ck_assert_int_ge(bl_raw_buf_index(r), 0);
			bl_raw_put(r);
		}
		bl_uring_bufring_destroy(br);
		bl_uring_regpool_destroy(rp);
	}
	bl_uring_destroy(u);
	report("uring register (buf ring, buffers)", pts);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

START_TEST(uring_enter_fault)
{
	/* DEFER_TASKRUN rings ask the kernel for events with io_uring_enter
	 * before reaping: a failure there is only a missed early look */
	struct bl_uring_params p = {
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN
	};
	struct bl_uring *u;
	struct bl_list l;
	struct ures r = { 0 };
	unsigned long pts = 0, ncalls;
	size_t total;
	int fd;

	tu_alloc_install(0, 0);
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	/* io_uring works here (main checked): DEFER_TASKRUN needs 6.1 */
	ck_assert_msg(bl_uring_backend(u) == BL_URING_IO_URING,
		      "DEFER_TASKRUN ring refused: %s",
		      bl_uring_backend_reason(u));
	make_list(&l, &total);
	bl_list_init(&r.data);
	fd = open(out_path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	fs_reset();
	fs_arm(true);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, ucb, &r), 0);
	run_until(u, &r, 1);
	fs_arm(false);
	ncalls = fs_calls(FS_URING_ENTER);
	ck_assert_uint_ge(ncalls, 1);
	for (unsigned long n = 1; n <= ncalls; n++) {
		for (int k = 0; k < 3; k++) {
			fs_reset();
			fs_plan(FS_URING_ENTER, n, 1, FS_FAIL,
				k == 0 ? EINTR : k == 1 ? EAGAIN : EBUSY, 0);
			r.calls = 0;
			ck_assert_int_eq(ftruncate(fd, 0), 0);
			fs_arm(true);
			ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, ucb, &r),
					 0);
			run_until(u, &r, 1);
			fs_arm(false);
			if (!fs_hits(FS_URING_ENTER))
				continue;
			pts++;
			point(k == 0 ? K_EINTR : k == 1 ? K_EAGAIN : P_OTHER);
			ck_assert_int_eq(r.res, (ssize_t)total);
			file_is(out_path, DATA, total, "DEFER_TASKRUN write");
		}
	}
	close(fd);
	bl_uring_destroy(u);
	bl_list_clear(&l);
	report("uring run (DEFER_TASKRUN enter)", pts);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

/* ---- one operation, waited for: the ring fails while waiting ----------- */

START_TEST(uring_wait_fault)
{
	/* a write into a full pipe waits in bl_uring_run, whose wait (poll,
	 * or io_uring_submit_and_wait_timeout) fails for good: the waiting
	 * call returns that error, and the operation, still in flight,
	 * completes later and frees what the waiting call left to it */
	static char fill[65536];
	int64_t live0;
	unsigned fds0;

	tu_alloc_install(0, 0);
	fds0 = nfds();
	live0 = live_bytes();
	for (int b = 1; b >= 0; b--) {
		struct bl_uring_params p = { .force_blocking = b };
		enum fs_sym sym = b ? FS_POLL : FS_URING_SUBMIT_AND_WAIT_TIMEOUT;
		struct bl_uring *u;
		struct bl_list l;
		char sink[4096];
		int pfd[2], fl;
		ssize_t n;

		if (!b && !have_uring)
			continue;
		u = bl_uring_create(&p);
		ck_assert_ptr_nonnull(u);
		ck_assert_int_eq(pipe(pfd), 0);
		fl = fcntl(pfd[1], F_GETFL);
		ck_assert_int_eq(fcntl(pfd[1], F_SETFL, fl | O_NONBLOCK), 0);
		while (write(pfd[1], fill, sizeof(fill)) > 0)
			;
		bl_list_init(&l);
		ck_assert_int_eq(bl_list_append(&l, "late", 4), 0);
		fs_reset();
		fs_plan(sym, 1, 0, FS_FAIL, ENOMEM, 0);
		fs_arm(true);
		ck_assert_int_eq(bl_uring_write_wait(u, pfd[1], -1, &l), -ENOMEM);
		fs_arm(false);
		ck_assert_uint_ge(fs_hits(sym), 1);
		ck_assert_uint_eq(bl_uring_inflight(u), 1);
		bl_list_clear(&l);
		/* the reader comes: the orphaned write completes */
		fl = fcntl(pfd[0], F_GETFL);
		ck_assert_int_eq(fcntl(pfd[0], F_SETFL, fl | O_NONBLOCK), 0);
		while (bl_uring_inflight(u)) {
			n = read(pfd[0], sink, sizeof(sink));
			ck_assert(n > 0 || (n < 0 && errno == EAGAIN));
			ck_assert_int_ge(bl_uring_run(u, 1, 10), 0);
		}
		bl_uring_destroy(u);
		close(pfd[0]);
		close(pfd[1]);
		point(P_OTHER);
	}
	report("uring wait (run fails while waiting)", have_uring ? 2 : 1);
	ck_assert_int_eq(live_bytes(), live0);
	ck_assert_uint_eq(nfds(), fds0);
	tu_alloc_uninstall();
}
END_TEST

/* ---- msgr: a busy polling connection's own recv(2) fails -------------- */

/*
 * Right after frame 1, the connection's next recv(2) (its own read on the
 * io_uring back end; on the blocking back end whichever comes first) fails
 * once: EINTR and EAGAIN are retried and every frame arrives before the
 * peer's end; ECONNRESET and EIO close the connection with that error,
 * logged, as a failed receive of the ring does.  Nothing leaks.
 */
START_TEST(msgr_busy_poll_recv_fault)
{
	static const int kinds[] = { K_EINTR, K_EAGAIN, K_ECONNRESET, K_EIO };
	unsigned long pts = 0;

	tu_alloc_install(0, 0);
	for (int b = 1; b >= 0; b--) {
		if (!b && !have_uring)
			continue;
		for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			struct bl_uring_params pr = { .force_blocking = b };
			unsigned fds0 = nfds();
			int64_t live0 = live_bytes();
			struct bl_uring *u = bl_uring_create(&pr);
			int err = kind_err[kinds[k]];
			struct mpoll p = { 0 };
			struct bl_msgr_conn *c;
			unsigned char *buf;
			int sv[2];

			ck_assert_ptr_nonnull(u);
			p.fault = err;
			c = poll_conn(u, sv, &p, &buf);
			ck_assert_ptr_nonnull(c);
			for (int i = 0; i < 100 && !p.m.closed; i++)
				bl_uring_run(u, 1, 100);
			fs_arm(false);
			ck_assert_uint_eq(fs_hits(FS_RECV), 1);
			ck_assert_int_eq(p.m.closed, 1);
			if (err == EINTR || err == EAGAIN) {
				ck_assert_int_eq(p.m.close_err, 0);
				ck_assert_int_eq(p.m.frames, POLL_FRAMES);
			} else {
				ck_assert_int_eq(p.m.close_err, -err);
				ck_assert_int_eq(p.m.frames, 1);
			}
			fs_reset();
			close(sv[1]);
			free(buf);
			bl_uring_destroy(u);
			ck_assert_int_eq(live_bytes(), live0);
			ck_assert_uint_eq(nfds(), fds0);
			point(kinds[k]);
			pts++;
		}
	}
	report("msgr busy-poll recv", pts);
	tu_alloc_uninstall();
}
END_TEST

/* Fills uidx: without io_uring its cases are not registered, not passed. */
static int uring_cases(void)
{
	for (unsigned i = 0; i < NUCASE; i++)
		if (ucases[i].blocking || have_uring)
			uidx[nuidx++] = (int)i;
	return nuidx;
}

static Suite *faults_suite(void)
{
	const struct tu_loop uring_loops[] = {
		{ uring_fault, 0, uring_cases() },
		{ NULL, 0, 0 }
	};
	const TTest *wait_tests[] = {
		uring_wait_fault,
		msgr_busy_poll_recv_fault,
		NULL
	};
	const TTest *io_uring_tests[] = {
		uring_setup_fault,
		uring_register_fault,
		uring_enter_fault,
		NULL
	};
	const struct tu_loop io_uring_loops[] = {
		{ uring_setup_flags_fallback, 0, 3 },
		{ uring_taskrun_enters_only_when_work_waits, 0, 3 },
		{ NULL, 0, 0 }
	};
	const struct tu_group groups[] = {
		TU_GROUP("syscalls", wait_tests, .loops = uring_loops,
			 .timeout = 120),
		/* the last: without io_uring, the end of the table */
		TU_GROUP(have_uring ? "io_uring" : NULL, io_uring_tests,
			 .loops = io_uring_loops, .timeout = 120),
		TU_GROUP_END
	};

	return tu_suite("syscall_faults_uring", groups);
}

int main(void)
{
	return fs_main("test_syscall_faults_uring", faults_suite);
}
