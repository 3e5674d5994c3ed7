/* SPDX-License-Identifier: MIT */
/*
 * test_msgr_arriving.c - large payloads arriving at a server.  The receive
 * budget (max_rx_bytes) they share: many peers that each begin one at
 * once hold at most the budget between them, the ones that wait go on in
 * turn as frames are delivered or connections end, and a wait for our
 * budget is not the peer's idling.  The idle timeout while one arrives
 * slowly: bytes coming into a read in flight are activity.
 *
 * The peers are plain sockets that write a frame's bytes in parts, so a
 * test decides how much of each payload has arrived.  What the server
 * holds is read off the counting allocator (every raw a direct read
 * allocates goes through it).
 */
#include "config.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bufferlist.h>
#include <bufferlist/msgr.h>
#include <bufferlist/uring.h>
#include "testutil.h"

#define MIB ((size_t)1 << 20)
#define PEERS 4

struct rig {
	struct bl_uring *u;
	struct bl_msgr_server *s;
	struct bl_msgr_conn_opts o;
	struct sockaddr_in sa;
	int l;
	int fd[PEERS];
	unsigned char *wire;	/* one frame's bytes, every peer sends it */
	size_t wlen, plen;
	int delivered, bad, closed, timed_out;
};

static void on_frame(void *arg, struct bl_msgr_conn *c,
		     struct bl_msgr_frame *f)
{
	struct rig *r = arg;
	unsigned char *got = tu_flatten(&f->payload);

	(void)c;
	/* the payload, byte for byte, as the peers' frame holds it */
	if (bl_list_length(&f->payload) != r->plen ||
	    memcmp(got, r->wire + BL_MSGR_PREAMBLE, r->plen))
		r->bad++;
	free(got);
	r->delivered++;
}

static void on_close(void *arg, struct bl_msgr_conn *c, int err,
		     const char *reason)
{
	struct rig *r = arg;

	(void)c;
	(void)reason;
	r->closed++;
	if (err == -ETIMEDOUT)
		r->timed_out++;
}

static void quiet(void *arg, struct bl_msgr_conn *c, const char *line)
{
	(void)arg;
	(void)c;
	(void)line;
}

/* A server with @budget (0: none) on loopback, and @plen's frame. */
static void rig_start(struct rig *r, size_t budget, size_t plen)
{
	socklen_t sl = sizeof(r->sa);
	struct bl_list pay, out;
	uint64_t rng = 7;
	unsigned char *src;

	memset(r, 0, sizeof(*r));
	r->u = tu_ring_new(false, 0, 0);
	r->l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(r->l, 0);
	r->sa.sin_family = AF_INET;
	r->sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(r->l, (struct sockaddr *)&r->sa,
			      sizeof(r->sa)), 0);
	ck_assert_int_eq(listen(r->l, PEERS), 0);
	ck_assert_int_eq(getsockname(r->l, (struct sockaddr *)&r->sa, &sl), 0);
	r->o.on_frame = on_frame;
	r->o.on_close = on_close;
	r->o.arg = r;
	r->o.log = quiet;
	r->o.max_rx_bytes = budget;
	/* a ring far smaller than a payload: payloads cannot arrive whole
	 * in memory that exists already (which the budget leaves alone) */
	r->o.nbufs = 4;
	r->s = bl_msgr_server_new(r->u, r->l, &r->o);
	ck_assert_ptr_nonnull(r->s);

	r->plen = plen;
	src = tu_rand_buf(plen, &rng);
	bl_list_init(&pay);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&pay, src, plen), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 1, 1, &pay, 0), 0);
	r->wire = tu_flatten(&out);
	r->wlen = bl_list_length(&out);
	bl_list_clear(&pay);
	bl_list_clear(&out);
	free(src);
	for (int i = 0; i < PEERS; i++)
		r->fd[i] = -1;
}

static void rig_end(struct rig *r)
{
	for (int i = 0; i < PEERS; i++)
		if (r->fd[i] >= 0)
			close(r->fd[i]);
	bl_msgr_server_destroy(r->s);
	bl_uring_destroy(r->u);
	close(r->l);
	free(r->wire);
}

/* Peer @i connects (once) and sends bytes [from, to) of the frame. */
static void peer_send(struct rig *r, int i, size_t from, size_t to)
{
	int sz = 8 << 20;

	if (r->fd[i] < 0) {
		r->fd[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ck_assert_int_ge(r->fd[i], 0);
		/* room for a whole frame: the peer never blocks on us */
		setsockopt(r->fd[i], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
		ck_assert_int_eq(connect(r->fd[i],
					 (struct sockaddr *)&r->sa,
					 sizeof(r->sa)), 0);
	}
	while (from < to) {
		ssize_t n = send(r->fd[i], r->wire + from, to - from,
				 MSG_NOSIGNAL);

		ck_assert_int_gt(n, 0);
		from += (size_t)n;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Serves for @ms, noting the most the allocator held above @base. */
static int64_t serve_for(struct rig *r, int ms, int64_t base)
{
	int64_t end = now_ms() + ms, most = 0;

	while (now_ms() < end) {
		struct tu_alloc_stats st;

		ck_assert_int_ge(bl_msgr_server_poll(r->s, 10), 0);
		tu_alloc_stats(&st);
		if (st.live_bytes - base > most)
			most = st.live_bytes - base;
	}
	return most;
}

/* Serves until @n frames were delivered (20 s at most: a hang fails). */
static void serve_until_delivered(struct rig *r, int n)
{
	int64_t end = now_ms() + 20000;

	while (r->delivered < n && now_ms() < end)
		ck_assert_int_ge(bl_msgr_server_poll(r->s, 10), 0);
	ck_assert_int_eq(r->delivered, n);
}

static int64_t live_now(void)
{
	struct tu_alloc_stats st;

	tu_alloc_stats(&st);
	return st.live_bytes;
}

/*
 * Four peers each send the preamble and the first MiB of a 2 MiB payload,
 * and stop.  Without a budget (_i 0) each connection reads its payload
 * straight into memory of its own, so the server holds more than 3 MiB
 * between them; with a budget of 3 MiB (_i 1) one payload is reserved
 * (a second does not fit), the others wait without reading, and the
 * server holds no more than the budget.  Then the peers send the rest:
 * all four payloads arrive whole and right, one after another, and the
 * memory is given back.
 */
START_TEST(many_large_payloads_at_once_hold_at_most_the_budget)
{
	const size_t budget = _i ? 3 * MIB : 0, plen = 2 * MIB;
	struct rig r;
	int64_t base, most;

	tu_alloc_install(0, 0);
	rig_start(&r, budget, plen);
	/* the server's ring and buffers are there before any peer sends */
	serve_for(&r, 50, 0);
	base = live_now();
	for (int i = 0; i < PEERS; i++)
		peer_send(&r, i, 0, BL_MSGR_PREAMBLE + MIB);
	most = serve_for(&r, 400, base);
	if (_i)
		ck_assert_msg(most <= (int64_t)budget,
			      "held %lld bytes over a budget of %zu",
			      (long long)most, budget);
	else
		ck_assert_msg(most > (int64_t)(3 * MIB),
			      "held only %lld bytes with no budget: the test "
			      "proves nothing", (long long)most);
	ck_assert_int_eq(r.delivered, 0);
	for (int i = 0; i < PEERS; i++)
		peer_send(&r, i, BL_MSGR_PREAMBLE + MIB, r.wlen);
	serve_until_delivered(&r, PEERS);
	ck_assert_int_eq(r.bad, 0);
	ck_assert_int_eq(r.closed, 0);
	rig_end(&r);
	ck_assert_int_le(live_now(), base);
	tu_alloc_uninstall();
}
END_TEST

/*
 * A payload longer than the whole budget still arrives: it goes when
 * nothing else is held.  Two peers send 3 MiB payloads against a 1 MiB
 * budget; both are delivered, in turn.
 */
START_TEST(a_payload_over_the_whole_budget_goes_when_nothing_is_held)
{
	struct rig r;

	rig_start(&r, MIB, 3 * MIB);
	peer_send(&r, 0, 0, r.wlen);
	peer_send(&r, 1, 0, r.wlen);
	serve_until_delivered(&r, 2);
	ck_assert_int_eq(r.bad, 0);
	ck_assert_int_eq(r.closed, 0);
	rig_end(&r);
}
END_TEST

/*
 * The wait is ours, not the peer's.  With idle_timeout_ms 200: peer A
 * begins a payload (the budget is its), peer B's whole frame queues
 * behind it, then A sends a MiB more (its read completes: A was active
 * after B last was) and stalls.  A is ended for idling, which frees the
 * budget, and B, which by then waited longer than the timeout, is served,
 * not ended: its frame is delivered.
 */
START_TEST(a_connection_waiting_for_the_budget_is_not_idle)
{
	const size_t head = BL_MSGR_PREAMBLE + ((size_t)100 << 10);
	struct rig r;

	rig_start(&r, 2 * MIB, 2 * MIB);
	bl_msgr_server_destroy(r.s);
	r.o.idle_timeout_ms = 200;
	r.s = bl_msgr_server_new(r.u, r.l, &r.o);
	ck_assert_ptr_nonnull(r.s);
	peer_send(&r, 0, 0, head);			/* A */
	serve_for(&r, 50, 0);
	peer_send(&r, 1, 0, r.wlen);			/* B waits */
	serve_for(&r, 150, 0);
	peer_send(&r, 0, head, head + MIB);		/* A, then stalls */
	serve_until_delivered(&r, 1);
	ck_assert_int_eq(r.bad, 0);
	ck_assert_int_eq(r.closed, 1);
	ck_assert_int_eq(r.timed_out, 1);
	ck_assert_uint_eq(bl_msgr_server_nconns(r.s), 1);
	rig_end(&r);
}
END_TEST

/*
 * A waiting peer that goes away leaves the queue: a connection waiting
 * reads nothing, so it learns of the end when its turn comes (the peer
 * closed in the middle of its frame: it ends), and the peer queued
 * behind it is served next.  Nothing stays reserved: a fourth payload
 * afterwards arrives too.
 */
START_TEST(a_waiting_peer_that_goes_away_leaves_the_queue)
{
	struct rig r;

	rig_start(&r, 2 * MIB, 2 * MIB);
	peer_send(&r, 0, 0, BL_MSGR_PREAMBLE + MIB);	/* holds the budget */
	serve_for(&r, 100, 0);
	peer_send(&r, 1, 0, BL_MSGR_PREAMBLE + MIB);	/* waits, then goes */
	serve_for(&r, 50, 0);
	peer_send(&r, 2, 0, r.wlen);			/* waits behind it */
	serve_for(&r, 100, 0);
	close(r.fd[1]);
	r.fd[1] = -1;
	serve_for(&r, 100, 0);
	ck_assert_int_eq(r.delivered, 0);
	peer_send(&r, 0, BL_MSGR_PREAMBLE + MIB, r.wlen);
	serve_until_delivered(&r, 2);
	ck_assert_int_eq(r.closed, 1);
	peer_send(&r, 3, 0, r.wlen);
	serve_until_delivered(&r, 3);
	ck_assert_int_eq(r.bad, 0);
	ck_assert_int_eq(r.closed, 1);
	rig_end(&r);
}
END_TEST

/*
 * A payload that arrives slowly is not idle: with idle_timeout_ms 300, a
 * peer sends a 2 MiB payload 64 KiB every 50 ms (1.6 s in all, the first
 * direct read of 1 MiB completing only after 0.8 s).  The bytes coming
 * into the read in flight count (TCP's count of bytes received), so the
 * frame is delivered and the connection stays; a peer that then stops
 * half way through the next frame is ended for idling.
 */
START_TEST(a_payload_that_arrives_slowly_is_not_idle)
{
	const size_t step = (size_t)64 << 10;
	size_t sent = 0;
	struct rig r;

	rig_start(&r, 0, 2 * MIB);
	bl_msgr_server_destroy(r.s);
	r.o.idle_timeout_ms = 300;
	r.s = bl_msgr_server_new(r.u, r.l, &r.o);
	ck_assert_ptr_nonnull(r.s);
	while (sent < r.wlen) {
		size_t n = r.wlen - sent < step ? r.wlen - sent : step;

		peer_send(&r, 0, sent, sent + n);
		sent += n;
		serve_for(&r, 50, 0);
	}
	serve_until_delivered(&r, 1);
	ck_assert_int_eq(r.bad, 0);
	ck_assert_int_eq(r.closed, 0);
	peer_send(&r, 0, 0, BL_MSGR_PREAMBLE + MIB);	/* and stops */
	for (int k = 0; k < 400 && !r.closed; k++)	/* 20 s: a hang fails */
		serve_for(&r, 50, 0);
	ck_assert_int_eq(r.timed_out, 1);
	rig_end(&r);
}
END_TEST

/*
 * A connection of bl_msgr_conn_new() has no server to share a budget
 * with: max_rx_bytes is ignored, and a payload over it arrives.
 */
START_TEST(a_connection_without_a_server_ignores_the_budget)
{
	struct bl_msgr_conn_opts o;
	struct bl_msgr_conn *c;
	struct rig r;
	int sv[2];

	rig_start(&r, 0, 2 * MIB);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	memset(&o, 0, sizeof(o));
	o.on_frame = on_frame;
	o.arg = &r;
	o.max_rx_bytes = 4096;
	c = bl_msgr_conn_new(r.u, sv[0], &o);
	ck_assert_ptr_nonnull(c);
	for (size_t off = 0; off < r.wlen;) {
		ssize_t n = send(sv[1], r.wire + off, r.wlen - off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n > 0)
			off += (size_t)n;
		ck_assert_int_ge(bl_uring_run(r.u, 0, 0), 0);
	}
	while (r.delivered < 1)
		ck_assert_int_ge(bl_uring_run(r.u, 1, 1000), 0);
	ck_assert_int_eq(r.bad, 0);
	bl_msgr_conn_close(c, 0, "done");
	close(sv[1]);
	while (bl_uring_inflight(r.u))
		ck_assert_int_ge(bl_uring_run(r.u, 1, 1000), 0);
	rig_end(&r);
}
END_TEST

int main(void)
{
	const TTest *budget_tests[] = {
		a_payload_over_the_whole_budget_goes_when_nothing_is_held,
		a_connection_waiting_for_the_budget_is_not_idle,
		a_waiting_peer_that_goes_away_leaves_the_queue,
		a_connection_without_a_server_ignores_the_budget,
		NULL
	};
	const TTest *idle_tests[] = {
		a_payload_that_arrives_slowly_is_not_idle,
		NULL
	};
	const struct tu_loop budget_loops[] = {
		{ many_large_payloads_at_once_hold_at_most_the_budget, 0, 2 },
		{ NULL, 0, 0 }
	};
	const struct tu_group groups[] = {
		TU_GROUP("budget", budget_tests,
			 .loops = budget_loops, .timeout = 60),
		TU_GROUP("idle", idle_tests, .timeout = 60),
		TU_GROUP_END
	};

	return tu_run(tu_suite("msgr_arriving", groups));
}
