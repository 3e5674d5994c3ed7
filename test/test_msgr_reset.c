/* SPDX-License-Identifier: MIT */
/*
 * test_msgr_reset.c - when the messenger resets a connection: a peer the
 * connection gives up on (idle, not reading) reads ECONNRESET, one that
 * reads slowly or owes nothing is kept, one closed normally reads all and
 * then EOF, an aborted one is reset, and only the peer's errors reset.
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

/* ---- resets ------------------------------------------------------------- */

/* Socket buffers (the kernel doubles them) that a 1 MiB reply overfills. */
#define SMALL_SOCKBUF 16384

/* listener() whose accepted sockets have a small send buffer. */
static int small_listener(struct sockaddr_in *sa)
{
	int l = tm_listener(sa), sz = SMALL_SOCKBUF;

	ck_assert_int_eq(setsockopt(l, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)),
			 0);
	return l;
}

/* dial() with a small receive buffer, set before the window is offered. */
static int dial_small(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int sz = SMALL_SOCKBUF;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz,
				    sizeof(sz)), 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)sa,
				 sizeof(*sa)), 0);
	return fd;
}

/*
 * Reads @fd until its stream ends (10 s limit a read), adding the bytes
 * read to *@got.  Return: 0 for the end of the stream (a FIN), else the
 * errno of the recv(2) that failed (ECONNRESET: the peer reset it).
 */
static int read_to_end(int fd, size_t *got)
{
	static unsigned char sink[1 << 16];
	struct timeval tv = { 10, 0 };
	ssize_t r;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((r = recv(fd, sink, sizeof(sink), 0)) > 0)
		*got += (size_t)r;
	return r == 0 ? 0 : errno;
}

static bool bp_closed(void *arg)
{
	return ((struct tm_bp *)arg)->closed > 0;
}

/*
 * A server with idle_timeout_ms 200 whose answer to a request is @reply
 * bytes, and a client, both with small socket buffers, that has sent one
 * request.
 */
struct idle_rig {
	struct bl_uring *u;
	struct bl_msgr_server *s;
	struct bl_msgr_conn_opts o;
	struct tm_bp x;
	int l, fa;
};

static void idle_rig_start(struct idle_rig *r, size_t reply)
{
	struct sockaddr_in sa;
	unsigned char *req;
	size_t len;

	r->u = tm_uring();
	r->l = small_listener(&sa);
	tm_bp_init(&r->x, &r->o, reply);
	r->o.idle_timeout_ms = 200;
	r->o.log = tm_quiet_log;
	r->s = bl_msgr_server_new(r->u, r->l, &r->o);
	ck_assert_ptr_nonnull(r->s);
	r->fa = dial_small(&sa);
	req = tm_requests(1, &len);
	tm_write_all(r->fa, req, len);
	free(req);
}

/* idle_rig_start(), then serving until the idle server has ended the
 * connection, which delivered the one request and closed for the time. */
static void idle_rig_serve(struct idle_rig *r, size_t reply)
{
	idle_rig_start(r, reply);
	tm_serve_until(r->s, bp_closed, &r->x);
	ck_assert_uint_eq(r->x.delivered, 1);
	ck_assert_int_eq(r->x.close_err, -ETIMEDOUT);
}

static void idle_rig_end(struct idle_rig *r)
{
	bl_msgr_server_destroy(r->s);
	close(r->fa);
	close(r->l);
	bl_uring_destroy(r->u);
}

/*
 * A client sends a request whose 1 MiB reply it never reads, with socket
 * buffers far smaller than the reply, so the server's send waits for room
 * when idle_timeout_ms fires.  The connection is reset, not shut down:
 * the client's read ends with ECONNRESET before it got the reply, where a
 * graceful end would leave the unsent rest in the server's kernel (in
 * FIN_WAIT1) and deliver it, then EOF, to the client.  The send waiting
 * in the kernel and the armed receive still end, so the connection
 * closes with -ETIMEDOUT, counted in resets, and the server has none
 * left.
 */
START_TEST(a_peer_that_does_not_read_is_reset_when_idle)
{
	const size_t reply = (size_t)1 << 20;
	struct idle_rig r;
	size_t got = 0;

	idle_rig_serve(&r, reply);
	ck_assert_msg(strstr(r.x.reason, "idle"), "reason: %s", r.x.reason);
	/* it was still waiting */
	ck_assert_uint_eq(r.x.st.frames_sent, 0);
	ck_assert_uint_eq(r.x.st.resets, 1);
	ck_assert_uint_eq(bl_msgr_server_nconns(r.s), 0);
	ck_assert_int_eq(read_to_end(r.fa, &got), ECONNRESET);
	ck_assert_uint_lt(got, reply);
	idle_rig_end(&r);
}
END_TEST

/*
 * The same with a 1 KiB reply that the client's socket takes whole: when
 * idle_timeout_ms fires, the peer has acknowledged every byte and may
 * still be reading them, so the end is graceful (a reset would discard
 * what it has not read): the client reads the whole reply, then the end
 * of the stream, and nothing counts in resets.
 */
START_TEST(an_idle_peer_that_took_everything_is_not_reset)
{
	const size_t reply = 1024;
	struct idle_rig r;
	size_t got = 0;

	idle_rig_serve(&r, reply);
	ck_assert_uint_eq(r.x.st.frames_sent, 1);
	ck_assert_uint_eq(r.x.st.resets, 0);
	ck_assert_int_eq(read_to_end(r.fa, &got), 0);
	ck_assert_uint_gt(got, reply);	/* the reply and its framing */
	idle_rig_end(&r);
}
END_TEST

/*
 * A client that reads its 512 KiB reply slowly, 16 KiB every 20 ms
 * through small socket buffers, takes over half a second, while
 * idle_timeout_ms is 200: the server's one send of the reply shows no
 * progress of its own until the kernel took all of it, but the peer
 * acknowledges bytes as it reads, and that is activity.  The client
 * gets the whole reply; once it has, and sits idle owing nothing, the
 * timeout ends the connection gracefully.
 */
START_TEST(a_peer_reading_a_large_reply_slowly_is_not_idle)
{
	static unsigned char buf[16384];
	const size_t reply = (size_t)512 << 10;
	struct idle_rig r;
	size_t got = 0;
	int64_t end, next = 0;

	idle_rig_start(&r, reply);
	end = tm_now_ms() + tm_wait_ms;
	while (got < reply && !r.x.closed && tm_now_ms() < end) {
		ssize_t n;

		ck_assert_int_ge(bl_msgr_server_poll(r.s, 5), 0);
		if (tm_now_ms() < next)
			continue;
		next = tm_now_ms() + 20;
		n = recv(r.fa, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
	}
	ck_assert_msg(!r.x.closed, "closed after %zu bytes: %s", got,
		      r.x.reason);
	ck_assert_uint_ge(got, reply);
	tm_serve_until(r.s, bp_closed, &r.x);	/* now idle, owing nothing */
	ck_assert_int_eq(r.x.close_err, -ETIMEDOUT);
	ck_assert_uint_eq(r.x.st.frames_sent, 1);
	ck_assert_uint_eq(r.x.st.resets, 0);
	ck_assert_int_eq(read_to_end(r.fa, &got), 0);
	idle_rig_end(&r);
}
END_TEST

/*
 * A client that keeps sending requests every 20 ms and never reads the
 * 1 MiB replies (no max_out_bytes, so the server never stops reading it):
 * the bytes it sends are no activity for the idle timeout of 200 ms when
 * it takes none of ours; it is reset long before its requests stop.
 */
START_TEST(a_peer_that_sends_but_never_reads_is_reset)
{
	struct sockaddr_in sa;
	struct idle_rig r;
	unsigned char *req;
	size_t len;
	int64_t t0, end;
	uint64_t seq = 2;

	r.u = tm_uring();
	r.l = small_listener(&sa);
	tm_bp_init(&r.x, &r.o, (size_t)1 << 20);
	r.o.idle_timeout_ms = 200;
	r.o.max_out_bytes = SIZE_MAX;
	r.o.log = tm_quiet_log;
	r.s = bl_msgr_server_new(r.u, r.l, &r.o);
	ck_assert_ptr_nonnull(r.s);
	r.fa = dial_small(&sa);
	t0 = tm_now_ms();
	end = t0 + 4000;
	while (!r.x.closed && tm_now_ms() < end) {
		req = tm_stream(1, seq++, 1, &len);
		if (send(r.fa, req, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			ck_assert_int_eq(errno, EAGAIN);
		free(req);
		for (int64_t next = tm_now_ms() + 20; tm_now_ms() < next;)
			ck_assert_int_ge(bl_msgr_server_poll(r.s, 5), 0);
	}
	ck_assert_msg(r.x.closed, "still open after 4 s of requests");
	ck_assert_int_eq(r.x.close_err, -ETIMEDOUT);
	ck_assert_msg(strstr(r.x.reason, "took no byte"), "reason: %s",
		      r.x.reason);
	ck_assert_int_lt(tm_now_ms() - t0, 2000);
	ck_assert_uint_eq(r.x.st.resets, 1);
	idle_rig_end(&r);
}
END_TEST

/*
 * With max_inflight, a request not answered yet keeps a connection from
 * idling out (the server owes it; a slow disk).  But a client that sent
 * two requests, got the first answered with 1 MiB it never reads, and
 * waits for the second, is idle all the same: something of ours waits
 * for it and it takes nothing.  Reset by the idle timeout.
 */
START_TEST(an_unanswered_request_does_not_keep_a_peer_that_does_not_read)
{
	struct sockaddr_in sa;
	struct idle_rig r;
	unsigned char *req;
	size_t len;
	int64_t end;

	r.u = tm_uring();
	r.l = small_listener(&sa);
	tm_bp_init(&r.x, &r.o, (size_t)1 << 20);
	r.x.async = true;
	r.o.max_inflight = 4;
	r.o.idle_timeout_ms = 200;
	r.o.log = tm_quiet_log;
	r.s = bl_msgr_server_new(r.u, r.l, &r.o);
	ck_assert_ptr_nonnull(r.s);
	r.fa = dial_small(&sa);
	req = tm_requests(2, &len);
	tm_write_all(r.fa, req, len);
	free(req);
	end = tm_now_ms() + 10000;
	while (r.x.delivered < 2 && tm_now_ms() < end)
		ck_assert_int_ge(bl_msgr_server_poll(r.s, 10), 0);
	ck_assert_uint_eq(r.x.delivered, 2);
	tm_bp_answer(&r.x);	/* the first; the second stays owed */
	tm_serve_until(r.s, bp_closed, &r.x);
	ck_assert_int_eq(r.x.close_err, -ETIMEDOUT);
	ck_assert_uint_eq(r.x.st.resets, 1);
	idle_rig_end(&r);
}
END_TEST

static void bp_close_when_sent(void *arg, int res)
{
	struct tm_bp *x = arg;

	if (res == 0)
		bl_msgr_conn_close(x->c, 0, "answered");
}

/* on_frame: the reply, and a close once the kernel has taken it. */
static void bp_answer_and_close(void *arg, struct bl_msgr_conn *c,
				struct bl_msgr_frame *f)
{
	struct tm_bp *x = arg;
	struct bl_list l;
	struct bl_ptr p;

	(void)f;
	x->c = c;
	x->delivered++;
	bl_list_init(&l);
	ck_assert_int_eq(bl_ptr_alloc(&p, x->reply), 0);
	memset(bl_ptr_data(&p), 0x5a, x->reply);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_int_eq(bl_msgr_send(c, 9, &l, bp_close_when_sent, x), 0);
	bl_list_clear(&l);
}

/*
 * The application closes a healthy connection as soon as its answer went
 * to the kernel (the send's callback), while most of the answer still
 * sits in the socket buffers.  That close is graceful: the client reads
 * the whole answer and then the end of the stream (0), not a reset, and
 * nothing counts in resets.
 */
START_TEST(closing_a_healthy_connection_delivers_its_answer_then_eof)
{
	const size_t reply = (size_t)256 << 10;
	struct bl_msgr_conn_opts o;
	struct sockaddr_in sa;
	struct bl_msgr_server *s;
	struct bl_uring *u = tm_uring();
	struct tm_bp x;
	unsigned char *req;
	size_t len, got = 0;
	int l = small_listener(&sa), fa;
	int64_t end;

	tm_bp_init(&x, &o, reply);
	o.on_frame = bp_answer_and_close;
	s = bl_msgr_server_new(u, l, &o);
	ck_assert_ptr_nonnull(s);
	fa = dial_small(&sa);
	req = tm_requests(1, &len);
	tm_write_all(fa, req, len);
	end = tm_now_ms() + tm_wait_ms;
	while (!x.closed && tm_now_ms() < end) {
		ck_assert_int_ge(bl_msgr_server_poll(s, 10), 0);
		got += tm_drain(fa);
	}
	ck_assert_int_eq(x.closed, 1);
	ck_assert_int_eq(read_to_end(fa, &got), 0);
	ck_assert_uint_eq(got, reply + BL_MSGR_OVERHEAD);
	ck_assert_int_eq(x.close_err, 0);
	ck_assert_str_eq(x.reason, "answered");
	ck_assert_uint_eq(x.st.frames_sent, 1);
	ck_assert_uint_eq(x.st.resets, 0);
	bl_msgr_server_destroy(s);
	free(req);
	close(fa);
	close(l);
	bl_uring_destroy(u);
}
END_TEST

/*
 * bl_msgr_conn_abort() while the connection's 1 MiB answer waits for
 * room in the socket: on_close gets the application's err and reason
 * (a close called after it changes nothing), the send waiting in the
 * kernel ends.  _i 0, TCP: the client's read ends with ECONNRESET, short
 * of the answer, and resets counts it.  _i 1, AF_UNIX, which has no
 * reset: the connection is shut down instead, still ends, and resets
 * stays 0.
 */
START_TEST(an_aborted_connection_is_reset)
{
	const size_t reply = (size_t)1 << 20;
	struct bl_msgr_conn_opts o;
	struct bl_uring *u = tm_uring();
	struct tm_bp x;
	unsigned char *req;
	size_t len, got = 0;
	int64_t end;
	int fa, fb, sz = SMALL_SOCKBUF;
	int want_end = _i == 0 ? ECONNRESET : 0;	/* AF_UNIX: EOF */

	if (_i == 0)
		tm_tcp_pair(&fa, &fb);
	else
		tm_unix_pair(&fa, &fb);
	/* whatever the host's defaults, the answer cannot fit in between,
	 * so the send is still in flight when the abort comes (and on_close
	 * cannot run inside it: the close after it is legal) */
	ck_assert_int_eq(setsockopt(fb, SOL_SOCKET, SO_SNDBUF, &sz,
				    sizeof(sz)), 0);
	ck_assert_int_eq(setsockopt(fa, SOL_SOCKET, SO_RCVBUF, &sz,
				    sizeof(sz)), 0);
	tm_bp_init(&x, &o, reply);
	x.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(x.c);
	req = tm_requests(1, &len);
	tm_write_all(fa, req, len);
	end = tm_now_ms() + tm_wait_ms;
	while (!x.delivered && tm_now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(x.delivered, 1);
	for (int i = 0; i < 5; i++)
		bl_uring_run(u, 0, 0);
	bl_msgr_conn_abort(x.c, -EPROTO, "gave up on the peer");
	bl_msgr_conn_close(x.c, 0, NULL);
	bl_msgr_conn_abort(NULL, -EPROTO, NULL);
	tm_run_until_one(u, &x.closed, 10);
	ck_assert_int_eq(x.close_err, -EPROTO);
	ck_assert_str_eq(x.reason, "gave up on the peer");
	ck_assert_uint_eq(x.st.frames_sent, 0);
	ck_assert_uint_eq(x.st.resets, _i == 0);	/* AF_UNIX: none sent */
	ck_assert_int_eq(read_to_end(fa, &got), want_end);
	ck_assert_uint_lt(got, reply);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Which failed receive, read or send resets its connection: the peer's
 * and the network's errors do; ours (out of memory, no buffer, a request
 * the kernel refused, a ring being destroyed) end it gracefully, so that
 * answers the kernel already holds still reach a peer that did nothing
 * wrong.
 */
START_TEST(only_the_peers_errors_reset)
{
	static const int peers[] = { ECONNRESET, ECONNABORTED, EPIPE,
				     ETIMEDOUT, EHOSTUNREACH, ENETUNREACH,
				     ENETDOWN };
	static const int ours[] = { ENOMEM, ENOBUFS, EIO, EAGAIN, EINVAL,
				    EBADF, EFAULT, ECANCELED, EBUSY };

	for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
		ck_assert_msg(bl__msgr_err_is_peers(-peers[i]), "%s",
			      strerror(peers[i]));
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		ck_assert_msg(!bl__msgr_err_is_peers(-ours[i]), "%s",
			      strerror(ours[i]));
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		a_peer_that_does_not_read_is_reset_when_idle,
		an_idle_peer_that_took_everything_is_not_reset,
		a_peer_reading_a_large_reply_slowly_is_not_idle,
		a_peer_that_sends_but_never_reads_is_reset,
		an_unanswered_request_does_not_keep_a_peer_that_does_not_read,
		closing_a_healthy_connection_delivers_its_answer_then_eof,
		only_the_peers_errors_reset,
		NULL
	};
	const struct tu_loop loops[] = {
		{ an_aborted_connection_is_reset, 0, 2 },
		{ NULL }
	};

	return tm_main("test_msgr_reset", tests, loops);
}
