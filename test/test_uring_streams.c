/* SPDX-License-Identifier: MIT */
/*
 * test_uring_streams.c - pipes and sockets through a ring: short writes
 * resumed, full descriptors waited on, sends by copy and zero-copy,
 * receives, EPIPE without SIGPIPE, the order of the operations on one
 * descriptor, and the spin before a wait sleeps.
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

/* Joins the drain @t, asserts it read @want whole, closes the pair. */
static void drain_finish(struct drain *d, pthread_t t,
			 const unsigned char *want, int fds[2])
{
	pthread_join(t, NULL);
	ck_assert_uint_eq(d->n, d->want);
	ck_assert_mem_eq(d->got, want, d->want);
	close(fds[0]);
	close(fds[1]);
	free(d->got);
}

/*
 * Writes @len random bytes in @nseg segments to @fds[1] while a thread
 * reads them from @fds[0] (slowly when @slow): they arrive whole.
 */
static void write_to_a_drain(int fds[2], size_t len, unsigned nseg,
			     bool slow, uint64_t rng)
{
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct drain d = { fds[0], len, malloc(len), 0, slow };
	struct bl_list l;
	pthread_t t;

	tu_make_list(&l, want, len, nseg, &rng);
	ck_assert_int_eq(pthread_create(&t, NULL, drain_thread, &d), 0);
	tu_write_sync(u, fds[1], -1, &l, (ssize_t)len);
	drain_finish(&d, t, want, fds);
	bl_list_clear(&l);
	bl_uring_destroy(u);
	free(want);
}

START_TEST(test_short_writes_through_a_pipe_to_a_slow_reader)
{
	/* BL_TEST_QUICK (valgrind, where the reader runs only when the
	 * ring's thread returns from io_uring_enter): still short writes */
	const size_t len = getenv("BL_TEST_QUICK") ? 1 << 18 : 1 << 20;
	int pfd[2];

	ck_assert_int_eq(pipe(pfd), 0);
	/* the pipe holds 64 KiB: the writes must come back short */
	write_to_a_drain(pfd, len, 1500, true, tu_ring_seed + 9);
}
END_TEST

START_TEST(test_write_to_nonblocking_socketpair_resumes_until_done)
{
	int sv[2], fds[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	tu_set_nonblock(sv[0], true);
	fds[0] = sv[1];
	fds[1] = sv[0];
	write_to_a_drain(fds, 4 << 20, 700, false, tu_ring_seed + 10);
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
	uint64_t rng = tu_ring_seed + 15;
	const size_t len = sock ? 4 << 20 : 300000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_uring *u = tu_ring_new(tu_blocking, SIZE_MAX, 0);
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
	tu_set_nonblock(fds[1], true);
	d.fd = fds[0];
	tu_make_list(&l, want, len, 40, &rng);
	tu_rec_init(&r);
	if (sock)
		ck_assert_int_eq(bl_uring_send(u, fds[1], &l, MSG_DONTWAIT,
					       tu_rec_cb, &r), 0);
	else
		ck_assert_int_eq(bl_uring_write(u, fds[1], -1, &l, tu_rec_cb, &r),
				 0);
	while (sock && !tu_counters(u).retries && time(NULL) < end)
		ck_assert_int_ge(bl_uring_run(u, 0, 10), 0);
	ck_assert_int_ge(bl_uring_run(u, 0, 20), 0);
	ck_assert_int_eq(r.calls, 0);
	if (sock)
		ck_assert_uint_ge(tu_counters(u).retries, 1);
	ck_assert_int_eq(pthread_create(&t, NULL, drain_thread, &d), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.res, (ssize_t)len);
	drain_finish(&d, t, want, fds);
	bl_list_clear(&l);
	bl_uring_destroy(u);
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
	tu_make_list(&l, want, len, nseg, rng);
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
	uint64_t rng = tu_ring_seed + 11;
	struct bl_uring *u = tu_ring_new(tu_blocking, SIZE_MAX, 0);
	int fds[2];

	tu_tcp_pair(fds);
	send_recv(u, fds, 1000, 3, &rng);
	send_recv(u, fds, 3 << 20, 2000, &rng);
	ck_assert_uint_eq(tu_counters(u).zc, 0);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

START_TEST(test_zero_copy_send_over_tcp_delivers_the_bytes)
{
	uint64_t rng = tu_ring_seed + 12;
	struct bl_uring *u = tu_ring_new(tu_blocking, 1, 0);
	struct bl__uring_features f;
	struct bl__uring_counters c1, c2;
	int fds[2];

	tu_tcp_pair(fds);
	/* more than IOV_MAX segments: several zero-copy requests */
	send_recv(u, fds, 3 << 20, 3000, &rng);
	/* the notifications come after the sends: let them in */
	while (bl__uring_retiring(u))
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	c1 = tu_counters(u);
	send_recv(u, fds, 100000, 1, &rng);
	send_recv(u, fds, 1, 1, &rng);
	while (bl__uring_retiring(u))
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	c2 = tu_counters(u);
	bl__uring_features(u, &f);
	if (tu_blocking || !f.sendmsg_zc) {
		if (!tu_blocking)
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
	struct bl_uring *u = tu_ring_new(tu_blocking, 1, 0);
	struct bl__uring_features f;
	struct bl__uring_counters c;
	char buf[2048];
	struct bl_list l;
	struct tu_rec r;
	int fds[2];
	size_t got = 0;

	bl__uring_features(u, &f);
	tu_tcp_pair(fds);
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
	c = tu_counters(u);
	if (tu_blocking || !f.sendmsg_zc) {
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
	uint64_t rng = tu_ring_seed + 13;
	struct bl_uring *u = tu_ring_new(tu_blocking, 1, 0);
	struct bl__uring_features f;
	struct bl__uring_counters c;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	send_recv(u, sv, 70000, 5, &rng);
	send_recv(u, sv, 5000, 1, &rng);
	while (bl__uring_retiring(u))
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	bl__uring_features(u, &f);
	c = tu_counters(u);
	if (!tu_blocking && f.sendmsg_zc) {
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

static void zc_send_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct tu_zc_watch *w = arg;

	ck_assert_int_eq(res, 200000);
	w->send_seq = ++tu_seq;
	w->freed_at_send = w->freed;
}

START_TEST(test_zero_copy_raw_is_freed_only_after_the_notification)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 1, 0);
	struct bl__uring_features f;
	struct tu_zc_watch w;
	struct bl_list l;
	struct bl_ptr p;
	struct sink s;
	char *mem = malloc(200000);
	int fds[2];

	memset(&w, 0, sizeof(w));
	w.u = u;
	memset(mem, 'z', 200000);
	tu_tcp_pair(fds);
	bl_list_init(&l);
	p.raw = bl_raw_claim(mem, 200000, tu_zc_free, &w);
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
	if (!tu_blocking && f.sendmsg_zc) {
		ck_assert_uint_ge(tu_counters(u).zc, 1);
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
	struct bl_uring *u = tu_ring_new(tu_blocking, 1, 0);
	struct tu_zc_watch w;
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
	tu_tcp_pair_how(fds, true);
	bl_list_init(&l);
	p.raw = bl_raw_claim(mem, len, tu_zc_free, &w);
	ck_assert_ptr_nonnull(p.raw);
	p.off = 0;
	p.len = len;
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_int_eq(bl_uring_send(u, fds[0], &l, 0, stranded_cb, &st), 0);
	bl_list_clear(&l);
	/* until the send completed, or for 2 s if the socket took only part */
	end = tu_mono_s() + 2;
	while (!st.calls && tu_mono_s() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	stranded_op = st.calls && bl__uring_retiring(u) > 0;
	if (stranded_op)
		ck_assert_int_eq(st.res, (ssize_t)len);
	else if (!tu_blocking)	/* the blocking back end copies */
		fprintf(stderr, "test_uring: the send did not strand a "
			"notification (%s), destroy cancels it instead\n",
			st.calls ? "no zero copy" : "the socket took part of it");
	t0 = tu_mono_s();
	bl_uring_destroy(u);
	/* two checks a second apart without a notification */
	ck_assert_msg(tu_mono_s() - t0 < 6, "destroy took %.1f s",
		      tu_mono_s() - t0);
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
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct tu_rec r;
	int fds[2];

	tu_tcp_pair(fds);
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
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
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
	uint64_t rng = tu_ring_seed + 21;
	const size_t len = 4 << 20;
	unsigned char *want = tu_rand_buf(len, &rng), *got = malloc(len);
	struct bl_uring *u = tu_ring_new(tu_blocking, SIZE_MAX, 0);
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

	tu_make_list(&l, want, len, 64, &rng);
	tu_rec_init(&s);
	ck_assert_int_eq(bl_uring_send(u, sv[0], &l, 0, tu_rec_cb, &s), 0);
	bl_list_clear(&l);
	tu_set_nonblock(sv[1], true);
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
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct tu_rec r[NLETTERS];
	struct bl_list l;
	int fd = tu_ring_tmp(), pfd[2];
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
		struct bl_uring *u = tu_ring_new(tu_blocking, thresholds[z], 0);
		struct drain d = { 0, NSENDS * SEND_LEN,
				   malloc(NSENDS * SEND_LEN), 0, false };
		struct tu_rec r[NSENDS];
		pthread_t t;
		int fds[2];

		tu_tcp_pair(fds);
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
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 200000);
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
	t0 = tu_mono_s();
	ck_assert_int_eq(bl_uring_run(u, 1, 10000), 1);
	*took = tu_mono_s() - t0;
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_int_eq(r.res, 4);
	tu_assert_list_eq(&r.data, "late", 4);
	*c = tu_counters(u);
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
	if (tu_blocking) {
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
		struct bl_uring *u = tu_ring_new(tu_blocking, 0,
						  never ? UINT_MAX : 0);
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
		c = tu_counters(u);
		ck_assert_uint_eq(c.spin_hits, 0);
		if (tu_blocking || never) {
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
	struct bl__uring_counters c0 = tu_counters(u), c1;
	struct spin_tally t;

	for (int i = 0; i < runs; i++)
		ck_assert_int_eq(bl_uring_run(u, 1, 10), 0);
	c1 = tu_counters(u);
	t.allowed = (c1.spins + c1.spin_skips) - (c0.spins + c0.spin_skips);
	t.idle = c1.spin_idle - c0.spin_idle;
	return t;
}

/*
 * @n bytes from the peer @fd, until the pooled receive @k has them (what
 * it had before is dropped: its buffers go back to the ring).
 */
static void feed(struct bl_uring *u, int fd, struct tu_chunk_rec *k, size_t n)
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
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 1000);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 4096, 11);
	struct spin_tally t;
	struct tu_chunk_rec k;
	struct bl_list l;
	struct tu_rec r;
	char sink[64];
	int sv[2];

	ck_assert_ptr_nonnull(br);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	memset(&k, 0, sizeof(k));
	bl_list_init(&k.data);
	ck_assert_int_eq(bl_uring_recv_pooled(u, sv[1], br, true, tu_chunk_cb,
					      &k), 0);
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	/* arming the receive was a request: its answers are due */
	t = tally_waits(u, 3);
	if (tu_blocking) {
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
	p.force_blocking = tu_blocking;	/* which has no issuer: ordinary */
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

int main(void)
{
	const TTest *streams_tests[] = {
		test_short_writes_through_a_pipe_to_a_slow_reader,
		test_write_to_nonblocking_socketpair_resumes_until_done,
		test_full_nonblocking_pipe_waits_for_a_reader,
		test_send_with_msg_dontwait_on_full_socket_waits_for_readiness,
		test_send_and_recv_over_tcp_by_copy,
		test_zero_copy_send_over_tcp_delivers_the_bytes,
		test_zero_copy_the_kernel_copies_anyway_is_retried_every_1024_sends,
		test_zero_copy_on_unix_socket_falls_back_to_copy,
		test_zero_copy_raw_is_freed_only_after_the_notification,
		test_destroy_gives_up_a_notification_a_stalled_peer_holds,
		test_destroy_from_a_thread_a_single_issuer_ring_refuses_returns,
		test_a_wait_spins_and_an_answer_in_the_window_ends_it,
		test_waits_that_outlast_the_window_back_off_from_spinning,
		test_a_wait_spins_only_where_an_answer_is_due,
		test_recv_sees_zero_when_the_peer_closes,
		test_recv_armed_on_a_closed_descriptor_keeps_its_socket,
		test_run_with_min_complete_zero_advances_waiting_ops,
		test_writes_at_the_file_position_land_whole_and_in_order,
		test_sends_in_flight_on_one_socket_keep_the_stream_in_order,
		NULL
	};
	const struct tu_ring_group groups[] = {
		TU_GROUP("streams", streams_tests),
		TU_GROUP_END
	};

	return tu_ring_main("uring_streams", groups, NULL, NULL);
}
