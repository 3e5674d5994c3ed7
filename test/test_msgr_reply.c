/* SPDX-License-Identifier: MIT */
/*
 * test_msgr_reply.c - replies sent directly from on_frame (in order, the
 * ring left to spin, the ring again when the socket is full), the errno
 * of the constructors, busy polling (busy_poll_us: the connection's own
 * reads mixed with the ring's, a peer closing or resetting right after
 * sending, other connections given way), and payloads that are
 * thread-local exactly when the ring's thread says so.
 *
 * Every case runs three times: in "conn-uring" on the io_uring back end,
 * "conn-defer" with its rings DEFER_TASKRUN and "conn-blocking" on the
 * blocking one (bl_uring_params.force_blocking).  Both ends of a
 * connection live in the test's thread on one bl_uring, so every wait is
 * a bounded loop of bl_uring_run(); no case asserts anything about time.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <bufferlist/msgr.h>
#include "msgr_int.h"	/* bl__msgr_err_is_peers */
#include "testutil.h"
#include "uring_int.h"

/* ---- replies sent directly ----------------------------------------------- */

/* on_frame of a peer that echoes every frame back (type and payload). */
static void echo_frame(void *arg, struct bl_msgr_conn *c,
		       struct bl_msgr_frame *f)
{
	struct tm_peer *p = arg;

	p->rx++;
	p->expect = f->seq;
	if (bl_msgr_send(c, f->type, &f->payload, tm_on_sent, p))
		tm_note_bad(p, "echo of seq %llu refused",
			 (unsigned long long)f->seq);
}

/*
 * A request/response pair: every frame b receives is answered from its
 * on_frame.  The replies go out with direct sendmsg() calls (direct_sends),
 * arrive in order with the right bytes, and each send callback runs once
 * with 0.
 */
START_TEST(replies_from_on_frame_go_out_directly_in_order)
{
	const uint64_t n = 2000;
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_two_peers(true, &fa, &fb, &a, &oa, &b, &ob);
	ob.on_frame = echo_frame;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	/* one request at a time (ping-pong), then bursts of 50 */
	for (uint64_t s = 1; s <= 100; s++) {
		tm_send_frames(&a, s, 1, false);
		tm_run_until(u, &a.rx, s, &b.rx, s);
	}
	for (uint64_t s = 101; s <= n; s += 50) {
		tm_send_frames(&a, s, 50, false);
		tm_run_until(u, &a.rx, s + 49, &b.rx, s + 49);
	}
	ck_assert_msg(!a.bad, "a: %d bad frames, first: %s", a.bad, a.bad_msg);
	ck_assert_msg(!b.bad, "b: %d bad, first: %s", b.bad, b.bad_msg);
	ck_assert(a.expect == n && b.rx == n);
	ck_assert_uint_eq(b.sent_ok, n);
	ck_assert_uint_eq(b.sent_cancel + b.sent_err, 0);
	bl_msgr_conn_close(a.c, 0, NULL);
	tm_run_until_closed(u, &a, &b);
	ck_assert_int_eq(a.close_err, 0);
	ck_assert_int_eq(b.close_err, 0);
	/* every reply batch of the ping-pong went out directly */
	ck_assert_uint_ge(b.st.direct_sends, 100);
	ck_assert_uint_eq(b.st.frames_sent, n);
	ck_assert_uint_eq(b.st.bytes_sent, a.st.bytes_received);
	/* a sent from outside any callback: the ring, never directly */
	ck_assert_uint_eq(a.st.direct_sends, 0);
	ck_assert_uint_eq(a.st.frames_sent, n);
	ck_assert_uint_eq(a.logs + b.logs, 0);
	bl_uring_destroy(u);
}
END_TEST

/*
 * The server's ring spins for the next request after a direct reply: the
 * reply is a sendmsg() of the connection's own, not a request of the
 * ring's (its request count stays put while the multishot receive stays
 * armed), so the connection says so (bl_uring_expect_answer) and the
 * wait for the next request is let spin where it would otherwise sleep
 * at once.  Two rounds first: the receive's arming made two answers due,
 * which the two requests use up.  The blocking back end never spins.
 */
START_TEST(a_direct_reply_lets_the_ring_spin_for_the_next_request)
{
	struct bl__uring_counters c0, c1;
	struct bl__uring_features f;
	struct bl_msgr_conn_opts ob;
	struct tm_peer b;
	struct bl_uring *u = tm_uring();
	struct pollfd pfd;
	unsigned char buf[256];
	int s0, s1;

	tm_unix_pair(&s0, &s1);
	tm_peer_init(&b, "b");
	tm_opts_for(&ob, &b);
	ob.on_frame = echo_frame;
	b.c = bl_msgr_conn_new(u, s0, &ob);
	ck_assert_ptr_nonnull(b.c);
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	bl__uring_counters(u, &c0);
	for (uint64_t seq = 1; seq <= 2; seq++) {
		size_t n;
		unsigned char *req = tm_frame_bytes(3, seq, 16, 0, &n);

		tm_write_all(s1, req, n);
		free(req);
		tm_run_until(u, &b.rx, seq, &b.rx, seq);
		pfd.fd = s1;
		pfd.events = POLLIN;
		ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
		ck_assert_int_gt(read(s1, buf, sizeof(buf)), 0);
	}
	bl__uring_counters(u, &c1);
	bl__uring_features(u, &f);
	if (tm_blocking || bl_uring_backend(u) != BL_URING_IO_URING) {
		ck_assert_int_eq(bl_uring_run(u, 1, 10), 0);
		bl__uring_counters(u, &c1);
		ck_assert_uint_eq(c1.spins + c1.spin_skips + c1.spin_idle, 0);
	} else if (f.recv_multishot) {
		/* the replies were system calls of the connection's own */
		ck_assert_uint_eq(c1.sqes, c0.sqes);
		c0 = c1;
		ck_assert_int_eq(bl_uring_run(u, 1, 10), 0);
		bl__uring_counters(u, &c1);
		ck_assert_uint_eq(c1.spin_idle, c0.spin_idle);
		ck_assert_uint_ge(c1.spins + c1.spin_skips,
				  c0.spins + c0.spin_skips + 1);
	}
	ck_assert_msg(!b.bad, "b: %d bad, first: %s", b.bad, b.bad_msg);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &b, NULL);
	bl_uring_destroy(u);
	close(s1);
}
END_TEST

/*
 * The replier's socket buffer is tiny and the requester does not read: the
 * direct sendmsg() gets EAGAIN or takes part of a batch, the rest goes
 * through the ring, and later batches queue behind it.  Once the
 * requester reads, every reply is there, in order, whole.
 */
START_TEST(direct_reply_falls_back_to_the_ring_when_the_socket_is_full)
{
	const uint64_t n = 300;
	const size_t plen = 1000;	/* a batch of 10 under 16 KiB (zc) */
	struct bl_msgr_conn_opts ob;
	struct bl_msgr_conn_stats st;
	struct sockaddr_in sa;
	struct tm_peer b;
	struct bl_uring *u = tm_uring();
	struct bl_list in;
	unsigned char *req = NULL;
	size_t reqlen = 0;
	int small = 4096, one = 1, l = tm_listener(&sa), fa, fb, fl;
	uint64_t got = 0;
	int64_t end;

	/* the buffers are set before connect, so the window honours them */
	fa = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fa, 0);
	ck_assert_int_eq(setsockopt(fa, SOL_SOCKET, SO_RCVBUF, &small,
				    sizeof(small)), 0);
	ck_assert_int_eq(connect(fa, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fb = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(fb, 0);
	close(l);
	ck_assert_int_eq(setsockopt(fb, SOL_SOCKET, SO_SNDBUF, &small,
				    sizeof(small)), 0);
	setsockopt(fa, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fb, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	tm_peer_init(&b, "b");
	tm_opts_for(&ob, &b);
	ob.on_frame = echo_frame;
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(b.c);
	/* requests 1..n, fed in bursts of 10 (one receive, one reply batch) */
	for (uint64_t s = 1; s <= n; s++) {
		size_t k;
		unsigned char *fr = tm_frame_bytes((uint16_t)(s * 3), s, plen,
						tm_off_of(s), &k);

		req = realloc(req, reqlen + k);
		ck_assert_ptr_nonnull(req);
		memcpy(req + reqlen, fr, k);
		reqlen += k;
		free(fr);
	}
	for (uint64_t k = 1; k <= n / 10; k++) {
		size_t step = reqlen / (n / 10);

		tm_feed(u, fa, req + (k - 1) * step, step);
		end = tm_now_ms() + tm_wait_ms;
		while (b.rx < k * 10 && tm_now_ms() < end)
			bl_uring_run(u, 1, 10);
		ck_assert_uint_eq(b.rx, k * 10);
	}
	/* nobody read: most replies cannot have left */
	ck_assert_uint_lt(b.sent_ok, n);
	bl_msgr_conn_stats(b.c, &st);
	ck_assert_uint_ge(st.direct_sends, 1);
	/* now read everything, running b so that its sends go on */
	bl_list_init(&in);
	fl = fcntl(fa, F_GETFL);
	fcntl(fa, F_SETFL, fl | O_NONBLOCK);
	end = tm_now_ms() + tm_wait_ms;
	while (got < n && tm_now_ms() < end) {
		char buf[16384];
		ssize_t r = read(fa, buf, sizeof(buf));
		struct bl_msgr_frame f;

		if (r < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			bl_uring_run(u, 1, 10);
			continue;
		}
		ck_assert_int_gt(r, 0);
		ck_assert_int_eq(bl_list_append(&in, buf, (size_t)r), 0);
		while (bl_msgr_parse(&in, &f, 0) == 1) {
			got++;
			ck_assert_uint_eq(f.seq, got);
			ck_assert_uint_eq(f.type, (uint16_t)(got * 3));
			ck_assert_uint_eq(bl_list_length(&f.payload), plen);
			ck_assert(tm_matches(&f.payload, tm_off_of(got)));
			bl_msgr_frame_release(&f);
		}
		bl_uring_run(u, 0, 0);
	}
	ck_assert_uint_eq(got, n);
	ck_assert_uint_eq(bl_list_length(&in), 0);
	end = tm_now_ms() + tm_wait_ms;
	while (b.sent_ok < n && tm_now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(b.sent_ok, n);
	ck_assert_msg(!b.bad, "b: %d bad, first: %s", b.bad, b.bad_msg);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &b, NULL);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_uint_eq(b.st.frames_sent, n);
	ck_assert_uint_eq(b.st.bytes_sent, n * (plen + BL_MSGR_OVERHEAD));
	bl_list_clear(&in);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Default options keep one multishot receive armed; the preamble of a
 * large payload stops it, the rest of the frame is read straight into a
 * raw of its own, and the small frames behind it still arrive, in order.
 */
START_TEST(a_large_payload_stops_the_multishot_receive_for_a_direct_read)
{
	const size_t big = (size_t)1 << 20;
	struct bl_msgr_conn_opts ob;
	struct bl__uring_counters c0, c1;
	struct tm_peer b;
	struct bl_uring *u = tm_uring();
	unsigned char *fr[4];
	size_t len[4];
	int fa, fb;

	tm_tcp_pair(&fa, &fb);
	tm_peer_init(&b, "b");
	b.check_seq = false;
	tm_opts_for(&ob, &b);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(b.c);
	for (int i = 0; i < 4; i++)
		fr[i] = tm_frame_bytes(1, (uint64_t)i + 1, i == 1 ? big : 100,
				    tm_off_of((uint64_t)i + 1), &len[i]);
	tm_feed(u, fa, fr[0], len[0]);
	tm_run_until(u, &b.rx, 1, &b.rx, 1);
	bl__uring_counters(u, &c0);
	/* the preamble and a little of the payload, then the rest */
	tm_feed(u, fa, fr[1], 1000);
	bl_uring_run(u, 0, 0);
	bl_uring_run(u, 1, 50);
	tm_feed(u, fa, fr[1] + 1000, len[1] - 1000);
	tm_feed(u, fa, fr[2], len[2]);
	tm_run_until(u, &b.rx, 3, &b.rx, 3);
	tm_feed(u, fa, fr[3], len[3]);
	tm_run_until(u, &b.rx, 4, &b.rx, 4);
	bl__uring_counters(u, &c1);
	ck_assert_msg(!b.bad, "b: %d bad, first: %s", b.bad, b.bad_msg);
	ck_assert_uint_eq(b.expect, 4);
	/* on io_uring, the stop is a cancel of the armed receive */
	if (bl_uring_backend(u) == BL_URING_IO_URING)
		ck_assert_uint_ge(c1.cancels, c0.cancels + 1);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &b, NULL);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_uint_eq(b.st.frames_received, 4);
	ck_assert_uint_eq(b.st.direct_frames, 1);
	ck_assert_uint_eq(b.st.bytes_received,
			  len[0] + len[1] + len[2] + len[3]);
	for (int i = 0; i < 4; i++)
		free(fr[i]);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/* Every NULL from a constructor says why in errno; the fd stays open. */
START_TEST(conn_and_server_new_set_errno)
{
	struct bl_uring *u = tm_uring(), *other = tm_uring();
	struct bl_msgr_conn_opts o;
	struct bl_uring_bufring *br;
	struct bl_msgr_conn *c;
	struct sockaddr_in sa;
	int fa, fb, lfd;

	tm_unix_pair(&fa, &fb);
	errno = 0;
	ck_assert_ptr_null(bl_msgr_conn_new(NULL, fa, NULL));
	ck_assert_int_eq(errno, EINVAL);
	memset(&o, 0, sizeof(o));
	o.nbufs = 3;		/* not a power of two: the ring's EINVAL */
	errno = 0;
	ck_assert_ptr_null(bl_msgr_conn_new(u, fa, &o));
	ck_assert_int_eq(errno, EINVAL);
	/* a ring of another bl_uring: the first receive is refused */
	br = bl_uring_bufring_create(other, 8, 4096, 0x100);
	ck_assert_ptr_nonnull(br);
	memset(&o, 0, sizeof(o));
	o.bufring = br;
	errno = 0;
	ck_assert_ptr_null(bl_msgr_conn_new(u, fa, &o));
	ck_assert_int_eq(errno, EINVAL);
	if (bl_uring_backend(u) == BL_URING_IO_URING) {
		/* a buffer group id the kernel has already */
		memset(&o, 0, sizeof(o));
		o.bgid = 0x101;
		o.keep_fd = true;
		c = bl_msgr_conn_new(u, fa, &o);
		ck_assert_ptr_nonnull(c);
		errno = 0;
		ck_assert_ptr_null(bl_msgr_conn_new(u, fb, &o));
		ck_assert_int_eq(errno, EEXIST);
		bl_msgr_conn_close(c, 0, NULL);
		while (bl_uring_inflight(u))
			ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	}
	ck_assert_int_ge(fcntl(fa, F_GETFD), 0);
	ck_assert_int_ge(fcntl(fb, F_GETFD), 0);
	/* the server */
	lfd = tm_listener(&sa);
	errno = 0;
	ck_assert_ptr_null(bl_msgr_server_new(NULL, lfd, NULL));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(bl_msgr_server_new(u, -1, NULL));
	ck_assert_int_eq(errno, EBADF);
	memset(&o, 0, sizeof(o));
	o.buf_size = 0;
	o.nbufs = 5;
	errno = 0;
	ck_assert_ptr_null(bl_msgr_server_new(u, lfd, &o));
	ck_assert_int_eq(errno, EINVAL);
	tu_alloc_install(1, 1);
	errno = 0;
	ck_assert_ptr_null(bl_msgr_server_new(u, lfd, NULL));
	ck_assert_int_eq(errno, ENOMEM);
	tu_alloc_uninstall();
	close(lfd);
	close(fa);
	close(fb);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(other);
	bl_uring_destroy(u);
}
END_TEST

/* ---- busy polling (busy_poll_us) ---------------------------------------- */

static unsigned ring_frames, own_frames;

/* on_frame, and whether the payload lies in ring buffers or in raws of the
 * connection's own (its reads, direct reads). */
static void poll_frame(void *arg, struct bl_msgr_conn *c,
		       struct bl_msgr_frame *f)
{
	struct bl_list cl;
	ssize_t n;

	bl_list_init(&cl);
	ck_assert_int_eq(bl_list_append_list(&cl, &f->payload), 0);
	n = bl_list_detach_pooled(&cl);
	ck_assert_int_ge(n, 0);
	if (n > 0)
		ring_frames++;
	else if (bl_list_length(&cl))
		own_frames++;
	bl_list_clear(&cl);
	tm_on_frame(arg, c, f);
}

/*
 * Both ends busy poll and send each other bursts of mostly small frames
 * with some of 4 to 74 KiB and a few of 1 MiB (read directly).  A small
 * ring makes receives through it take a few KiB at a time, so the
 * connections' own reads, the ring's one-shot receives and direct reads
 * take turns on the same stream: every frame arrives once, in order,
 * with its bytes, and both kinds of buffer carried frames.  _i 0: a
 * socketpair, 1: TCP.
 */
START_TEST(busy_poll_mixes_own_reads_with_the_ring_in_order)
{
	const uint64_t n = getenv("BL_TEST_QUICK") ? 1000 : 5000;
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_two_peers(_i, &fa, &fb, &a, &oa, &b, &ob);
	oa.on_frame = ob.on_frame = poll_frame;
	oa.busy_poll_us = ob.busy_poll_us = 200;
	oa.nbufs = ob.nbufs = 16;
	oa.buf_size = ob.buf_size = 4096;
	ring_frames = own_frames = 0;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	tm_swap_frames(u, &a, &b, n, 100);
	bl_msgr_conn_close(a.c, 0, "done");
	tm_run_until_closed(u, &a, &b);
	ck_assert_int_eq(a.close_err, 0);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_str_eq(b.reason, "peer closed");
	ck_assert(a.st.frames_received == n && b.st.frames_received == n);
	ck_assert(a.st.bytes_sent == b.st.bytes_received);
	ck_assert(b.st.bytes_sent == a.st.bytes_received);
	ck_assert_uint_gt(a.st.inline_recvs, 0);
	ck_assert_uint_gt(b.st.inline_recvs, 0);
	ck_assert_uint_gt(a.st.direct_frames + b.st.direct_frames, 0);
	ck_assert_uint_gt(ring_frames, 0);
	ck_assert_uint_gt(own_frames, 0);
	ck_assert_uint_eq(a.logs + b.logs, 0);
	bl_uring_destroy(u);
}
END_TEST

/* A raw peer whose on_frame hook writes more and then ends the stream. */
struct ender {
	struct tm_peer p;		/* first: on_frame's argument */
	int fd;			/* the raw peer's end */
	const unsigned char *rest;
	size_t restn;
	bool reset;		/* end with a reset (SO_LINGER 0), not a FIN */
	uint64_t rx_at_close;
};

/* Frame @seq's payload size here: size_of()'s, kept small so that the
 * whole stream fits the socket's buffer. */
static size_t small_of(uint64_t seq)
{
	return tm_size_of(seq) % 600;
}

static void ender_frame(void *arg, struct bl_msgr_conn *c,
			struct bl_msgr_frame *f)
{
	struct ender *e = arg;

	if (f->seq != e->p.expect + 1 || f->type != (uint16_t)(f->seq * 3) ||
	    bl_list_length(&f->payload) != small_of(f->seq) ||
	    !tm_matches(&f->payload, tm_off_of(f->seq)))
		tm_note_bad(&e->p, "wrong frame at seq %llu",
			 (unsigned long long)f->seq);
	tm_on_frame(&e->p, c, f);
	if (e->fd < 0)
		return;
	/* from inside the delivery: the receiver reads on right after it */
	if (e->restn)
		tm_write_all(e->fd, e->rest, e->restn);
	if (e->reset) {
		struct linger lg = { 1, 0 };

		ck_assert_int_eq(setsockopt(e->fd, SOL_SOCKET, SO_LINGER, &lg,
					    sizeof(lg)), 0);
	}
	close(e->fd);
	e->fd = -1;
}

static void ender_close(void *arg, struct bl_msgr_conn *c, int err,
			const char *reason)
{
	struct ender *e = arg;

	e->rx_at_close = e->p.rx;
	tm_on_close(&e->p, c, err, reason);
}

/* @e as the receiving peer "b", with busy polling when @poll, its other
 * end @fd for the callbacks to write to or reset; @o its options. */
static void ender_setup(struct ender *e, struct bl_msgr_conn_opts *o,
			bool poll, int fd)
{
	memset(e, 0, sizeof(*e));
	tm_peer_init(&e->p, "b");
	e->p.check_seq = false;	/* ender_frame checks */
	tm_opts_for(o, &e->p);
	o->on_frame = ender_frame;
	o->on_close = ender_close;
	o->arg = e;
	o->busy_poll_us = poll ? 100000 : 0;
	e->fd = fd;
}

/*
 * The peer sends frame 1, and when it is delivered sends the other 49
 * (small ones) and closes at once; _i & 2: the last frame is cut short
 * before the close.  With busy polling (_i & 1) the connection's own
 * reads take the rest and the end; without, the ring does.  Either way
 * every whole frame is delivered first, then the end is reported the
 * same way: a clean close (0, "peer closed"), or -EPIPE for the cut
 * frame, logged.
 */
START_TEST(a_peer_closing_right_after_sending_is_read_to_the_end)
{
	const uint64_t n = 50;
	bool poll = _i & 1, cut = _i & 2;
	struct bl_msgr_conn_opts o;
	unsigned char *all;
	size_t len = 0, first = 0;
	struct ender e;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	if (_i & 4)
		tm_tcp_pair(&fa, &fb);
	else
		tm_unix_pair(&fa, &fb);
	all = malloc(n * (600 + BL_MSGR_OVERHEAD));
	for (uint64_t s = 1; s <= n; s++) {
		size_t k;
		unsigned char *b = tm_frame_bytes((uint16_t)(s * 3), s,
					       small_of(s), tm_off_of(s), &k);

		memcpy(all + len, b, k);
		len += k;
		if (s == 1)
			first = len;
		free(b);
	}
	ender_setup(&e, &o, poll, fa);
	e.rest = all + first;
	e.restn = len - first - (cut ? 10 : 0);
	tm_write_all(fa, all, first);
	e.p.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(e.p.c);
	tm_run_until_closed(u, &e.p, NULL);
	ck_assert_msg(!e.p.bad, "%d bad frames, first: %s", e.p.bad,
		      e.p.bad_msg);
	ck_assert_uint_eq(e.p.rx, cut ? n - 1 : n);
	ck_assert_uint_eq(e.rx_at_close, e.p.rx);
	ck_assert_uint_eq(e.p.st.frames_received, e.p.rx);
	if (cut) {
		ck_assert_int_eq(e.p.close_err, -EPIPE);
		ck_assert_uint_eq(e.p.logs, 1);
		ck_assert_msg(strstr(e.p.log, "peer closed in the middle of a "
				     "frame"), "log: %s", e.p.log);
	} else {
		ck_assert_int_eq(e.p.close_err, 0);
		ck_assert_str_eq(e.p.reason, "peer closed");
		ck_assert_uint_eq(e.p.logs, 0);
	}
	if (poll)
		ck_assert_uint_gt(e.p.st.inline_recvs, 0);
	else
		ck_assert_uint_eq(e.p.st.inline_recvs, 0);
	free(all);
	bl_uring_destroy(u);
}
END_TEST

/*
 * The peer resets the connection (TCP, SO_LINGER 0) as soon as its frame
 * is delivered.  With busy polling (_i 1) the connection's own read meets
 * the reset; without (_i 0), the ring's receive: the same close either
 * way, -ECONNRESET with the reason logged, after the frame.
 */
START_TEST(a_peer_resetting_the_connection_is_reported_as_on_the_ring)
{
	struct bl_msgr_conn_opts o;
	unsigned char *b;
	size_t k;
	struct ender e;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_tcp_pair(&fa, &fb);
	b = tm_frame_bytes(3, 1, small_of(1), tm_off_of(1), &k);
	ender_setup(&e, &o, _i, fa);
	e.reset = true;
	tm_write_all(fa, b, k);
	e.p.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(e.p.c);
	tm_run_until_closed(u, &e.p, NULL);
	ck_assert_uint_eq(e.p.rx, 1);
	ck_assert_uint_eq(e.rx_at_close, 1);
	ck_assert_int_eq(e.p.close_err, -ECONNRESET);
	ck_assert_uint_eq(e.p.logs, 1);
	ck_assert_msg(strstr(e.p.log, "receive failed: ") &&
		      strstr(e.p.log, strerror(ECONNRESET)), "log: %s",
		      e.p.log);
	free(b);
	bl_uring_destroy(u);
}
END_TEST

/*
 * A busy polling connection that only receives (it owes no answer) reads
 * what is there and then waits in the ring, whatever its busy_poll_us:
 * with UINT_MAX, frames written one at a time between runs each come
 * back from bl_uring_run() (a spin would time the test out).
 */
START_TEST(busy_poll_waits_only_when_an_answer_is_due)
{
	const uint64_t n = 20;
	struct bl_msgr_conn_opts o;
	struct tm_peer b;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_unix_pair(&fa, &fb);
	tm_peer_init(&b, "b");
	tm_opts_for(&o, &b);
	o.busy_poll_us = UINT_MAX;
	b.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(b.c);
	for (uint64_t s = 1; s <= n; s++) {
		size_t k;
		unsigned char *f = tm_frame_bytes((uint16_t)(s * 3), s,
					       tm_size_of(s), tm_off_of(s), &k);

		tm_write_all(fa, f, k);
		free(f);
		tm_run_until(u, &b.rx, s, &b.rx, s);
	}
	ck_assert_msg(!b.bad, "%d bad frames, first: %s", b.bad, b.bad_msg);
	close(fa);
	tm_run_until_closed(u, &b, NULL);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_uint_eq(b.st.frames_received, n);
	ck_assert_uint_eq(b.st.frames_sent, 0);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Two busy polling connections on one ring.  When a's frame is delivered,
 * a answers it and the test writes b's frame; a then polls for the next
 * request, which never comes, with a busy_poll_us longer than the whole
 * test may take.  b's receive
 * completes meanwhile (its task work runs when a's reads return), and a
 * gives way to it at once: b's frame arrives and the test ends (were a to
 * spin on, the test would time out).  io_uring only: the blocking back
 * end looks at b's socket only inside bl_uring_run().
 */
struct giveway {
	struct tm_peer p;		/* first: on_frame's argument */
	int fd;			/* b's raw peer */
	unsigned char *b;
	size_t n;
};

static void giveway_frame(void *arg, struct bl_msgr_conn *c,
			  struct bl_msgr_frame *f)
{
	struct giveway *g = arg;

	tm_on_frame(&g->p, c, f);
	/* an answer (nobody reads it): a now waits for the next request */
	if (bl_msgr_send(c, 5, NULL, NULL, NULL))
		tm_note_bad(&g->p, "answer %llu refused",
			 (unsigned long long)f->seq);
	tm_write_all(g->fd, g->b, g->n);
}

START_TEST(busy_poll_gives_way_to_other_connections)
{
	struct bl_msgr_conn_opts oa, ob;
	struct giveway ga;
	struct tm_peer b;
	unsigned char *fa_bytes;
	size_t k;
	struct bl_uring *u;
	int a0, a1, b0, b1;

	if (tm_blocking)
		return;
	u = tm_uring();
	if (bl_uring_backend(u) != BL_URING_IO_URING) {
		bl_uring_destroy(u);
		return;
	}
	tm_unix_pair(&a0, &a1);
	tm_unix_pair(&b0, &b1);
	memset(&ga, 0, sizeof(ga));
	tm_peer_init(&ga.p, "a");
	tm_peer_init(&b, "b");
	tm_opts_for(&oa, &ga.p);
	tm_opts_for(&ob, &b);
	oa.on_frame = giveway_frame;
	oa.arg = &ga;
	oa.busy_poll_us = UINT_MAX;
	ob.busy_poll_us = 1000;
	ga.fd = b1;
	ga.b = tm_frame_bytes(3, 1, tm_size_of(1), tm_off_of(1), &ga.n);
	fa_bytes = tm_frame_bytes(3, 1, tm_size_of(1), tm_off_of(1), &k);
	ga.p.c = bl_msgr_conn_new(u, a0, &oa);
	b.c = bl_msgr_conn_new(u, b0, &ob);
	ck_assert_ptr_nonnull(ga.p.c);
	ck_assert_ptr_nonnull(b.c);
	tm_write_all(a1, fa_bytes, k);
	tm_run_until(u, &ga.p.rx, 1, &b.rx, 1);
	ck_assert_msg(!ga.p.bad && !b.bad, "bad frames");
	bl_msgr_conn_close(ga.p.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &ga.p, &b);
	ck_assert_uint_eq(ga.p.logs + b.logs, 0);
	close(a1);
	close(b1);
	free(ga.b);
	free(fa_bytes);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Request/response through a server whose connections busy poll, and a
 * client that does not: the option reaches the server's connections (its
 * own reads carry the requests after the first), and replies come back
 * in order.
 */
START_TEST(busy_poll_reaches_the_servers_connections)
{
	const uint64_t n = 300;
	struct bl_msgr_conn_opts o, oa;
	struct sockaddr_in sa;
	struct bl_msgr_server *srv;
	struct tm_peer a, sp;
	struct bl_uring *u = tm_uring();
	int lfd = tm_listener(&sa);
	int64_t end;

	tm_peer_init(&a, "a");
	tm_peer_init(&sp, "srv");
	tm_opts_for(&oa, &a);
	tm_opts_for(&o, &sp);
	o.on_frame = echo_frame;
	o.busy_poll_us = 1000;
	srv = bl_msgr_server_new(u, lfd, &o);
	ck_assert_ptr_nonnull(srv);
	a.c = bl_msgr_conn_new(u, tm_dial(&sa), &oa);
	ck_assert_ptr_nonnull(a.c);
	for (uint64_t s = 1; s <= n; s++) {
		tm_send_frames(&a, s, 1, false);
		end = tm_now_ms() + tm_wait_ms;
		while (a.rx < s && tm_now_ms() < end)
			ck_assert_int_ge(bl_msgr_server_poll(srv, 100), 0);
		ck_assert_uint_eq(a.rx, s);
	}
	ck_assert_msg(!a.bad, "a: %d bad frames, first: %s", a.bad, a.bad_msg);
	ck_assert_uint_eq(sp.rx, n);
	ck_assert_uint_eq(sp.sent_ok, n);
	bl_msgr_conn_close(a.c, 0, NULL);
	end = tm_now_ms() + tm_wait_ms;
	while ((!a.closed || !sp.closed) && tm_now_ms() < end)
		ck_assert_int_ge(bl_msgr_server_poll(srv, 100), 0);
	ck_assert_int_eq(sp.close_err, 0);
	ck_assert_uint_eq(sp.st.frames_received, n);
	ck_assert_uint_gt(sp.st.inline_recvs, 0);
	ck_assert_uint_eq(a.st.inline_recvs, 0);
	bl_msgr_server_destroy(srv);
	close(lfd);
	bl_uring_destroy(u);
}
END_TEST

static struct {
	bool want;		/* thread-local expected */
	uint64_t segs;		/* payload segments looked at */
	uint64_t wrong;		/* of them, thread-local when not wanted
				 * or the other way round */
	uint64_t fixed;		/* of them, in the ring's registered buffers */
	struct bl_list handed;	/* copies of the payloads, for another thread */
} tl;

/* on_frame, looking at every segment's raw first, in the ring's thread. */
static void local_frame(void *arg, struct bl_msgr_conn *c,
			struct bl_msgr_frame *f)
{
	unsigned n = bl_list_num_buffers(&f->payload);

	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_list_get_ptr(&f->payload, i, &p), 0);
		tl.segs++;
		tl.wrong += bl_raw_is_thread_local(p.raw) != tl.want;
		tl.fixed += bl_raw_buf_index(p.raw) >= 0;
		bl_ptr_release(&p);
	}
	ck_assert_int_eq(bl_list_copy_shared(&tl.handed, &f->payload), 0);
	tm_on_frame(arg, c, f);
}

static void *release_list(void *l)
{
	bl_list_clear(l);
	return NULL;
}

/*
 * The payloads handed to on_frame are slices of raws the thread that
 * runs the ring made, so they are thread-local exactly when that thread
 * has bl_raw_set_thread_local() on (_i odd), whichever way they came
 * (_i / 2): 0 ring buffers and direct reads of large payloads, 1 the
 * connection's own reads (busy_poll_us), 2 aligned raws (align_data),
 * 3 copies out of the ring (detach), 4 direct reads into the ring's
 * registered buffers, 5 plain receives while held payloads keep the ring
 * dry.  All of them are released in this thread; what goes to another
 * one is a bl_list_copy_shared() copy, never thread-local (the exception
 * bufferlist(7) makes for a messenger's payloads).
 */
START_TEST(payloads_are_thread_local_when_the_rings_thread_says_so)
{
	const uint64_t n = 200;	/* seq 97 and 194: 1 MiB */
	const bool on = _i & 1;
	const int mode = _i / 2;
	struct bl_msgr_conn_opts oa, ob;
	struct bl_uring_regpool *rp = NULL;
	struct bl_uring_bufring *br = NULL;
	struct bl_uring *u;
	struct tm_peer a, b;
	uint64_t nonempty = 0;
	pthread_t t;
	int fa, fb;

	ck_assert(!bl_raw_set_thread_local(on));
	memset(&tl, 0, sizeof(tl));
	tl.want = on;
	bl_list_init(&tl.handed);
	u = tm_uring();
	tm_two_peers(false, &fa, &fb, &a, &oa, &b, &ob);
	oa.on_frame = ob.on_frame = local_frame;
	switch (mode) {
	case 1:
		oa.busy_poll_us = ob.busy_poll_us = 200;
		oa.nbufs = ob.nbufs = 16;
		oa.buf_size = ob.buf_size = 4096;
		break;
	case 2:
		oa.align_data = ob.align_data = true;
		break;
	case 3:
		oa.detach = ob.detach = true;
		break;
	case 4:
		rp = bl_uring_regpool_create(u, 4, 1 << 20);
		ck_assert_ptr_nonnull(rp);
		break;
	case 5:
		br = bl_uring_bufring_create(u, 4, 4096, 78);
		ck_assert_ptr_nonnull(br);
		ob.bufring = br;
		ob.direct_min = SIZE_MAX;
		b.keep = true;
		break;
	}
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	tm_swap_frames(u, &a, &b, n, 50);
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &a, &b);
	ck_assert_uint_eq(a.logs + b.logs, 0);

	for (uint64_t s = 1; s <= n; s++)	/* both ways, but empty ones */
		nonempty += 2 * (tm_size_of(s) > 0);
	ck_assert_uint_ge(tl.segs, nonempty);
	ck_assert_msg(tl.wrong == 0, "%llu of %llu payload segments %s",
		      (unsigned long long)tl.wrong,
		      (unsigned long long)tl.segs,
		      on ? "not thread-local" : "thread-local");
	/* each way of receiving carried frames */
	switch (mode) {
	case 0:
		ck_assert_uint_gt(a.st.direct_frames + b.st.direct_frames, 0);
		break;
	case 1:
		ck_assert_uint_gt(a.st.inline_recvs + b.st.inline_recvs, 0);
		break;
	case 2:
		ck_assert_uint_gt(a.st.aligned_frames + b.st.aligned_frames, 0);
		break;
	case 3:
		ck_assert_uint_gt(a.st.detached + b.st.detached, 0);
		break;
	case 4:
		if (bl_uring_backend(u) == BL_URING_IO_URING)
			ck_assert_uint_gt(tl.fixed, 0);
		ck_assert_uint_gt(a.st.direct_frames + b.st.direct_frames, 0);
		break;
	case 5:
		ck_assert_uint_gt(b.st.ring_dry, 0);
		break;
	}

	/* the copies: shared raws, released by another thread */
	for (unsigned i = 0; i < bl_list_num_buffers(&tl.handed); i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_list_get_ptr(&tl.handed, i, &p), 0);
		ck_assert(!bl_raw_is_thread_local(p.raw));
		bl_ptr_release(&p);
	}
	ck_assert_int_eq(pthread_create(&t, NULL, release_list, &tl.handed),
			 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(bl_list_length(&tl.handed), 0);
	if (br) {
		ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
		bl_uring_bufring_destroy(br);
	}
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		replies_from_on_frame_go_out_directly_in_order,
		a_direct_reply_lets_the_ring_spin_for_the_next_request,
		direct_reply_falls_back_to_the_ring_when_the_socket_is_full,
		a_large_payload_stops_the_multishot_receive_for_a_direct_read,
		conn_and_server_new_set_errno,
		busy_poll_waits_only_when_an_answer_is_due,
		busy_poll_gives_way_to_other_connections,
		busy_poll_reaches_the_servers_connections,
		NULL
	};
	const struct tu_loop loops[] = {
		{ busy_poll_mixes_own_reads_with_the_ring_in_order, 0, 2 },
		{ a_peer_closing_right_after_sending_is_read_to_the_end, 0, 8 },
		{ a_peer_resetting_the_connection_is_reported_as_on_the_ring,
		  0, 2 },
		{ payloads_are_thread_local_when_the_rings_thread_says_so,
		  0, 12 },
		{ NULL }
	};

	return tm_main("test_msgr_reply", tests, loops);
}
