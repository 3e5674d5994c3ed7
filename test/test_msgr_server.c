/* SPDX-License-Identifier: MIT */
/*
 * test_msgr_server.c - the messenger's server helper and hostile peers: a
 * malformed frame closes only its connection, replies never read and
 * requests never answered (backpressure bounds memory, CPU and what is
 * delivered), streams both ways that must not stall, preambles claiming
 * 2 GiB (address space stays small), half-closed peers (still answered),
 * a server out of descriptors (no spinning, a log line a second), and
 * timeouts.
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

/* ---- the server ---------------------------------------------------------- */

enum corrupt {
	C_MAGIC, C_HCRC, C_PCRC, C_TOO_BIG, C_IMPOSSIBLE, C_TRUNCATED, C_N
};

struct srv_ctx {
	uint64_t rx[3];		/* by type: 1 the bad client, 2 the good */
	uint64_t next[3];
	int bad;
	int closes, close_err[4];
	char reason[4][160];
	unsigned logs;
	char log[256];
};

static void srv_frame(void *arg, struct bl_msgr_conn *c,
		      struct bl_msgr_frame *f)
{
	struct srv_ctx *x = arg;

	(void)c;
	if (f->type < 1 || f->type > 2 || f->seq != x->next[f->type] + 1 ||
	    !tm_matches(&f->payload, tm_off_of(f->seq)) ||
	    bl_list_length(&f->payload) != 300) {
		x->bad++;
		return;
	}
	x->next[f->type] = f->seq;
	x->rx[f->type]++;
}

static void srv_close(void *arg, struct bl_msgr_conn *c, int err,
		      const char *reason)
{
	struct srv_ctx *x = arg;

	(void)c;
	if (x->closes < 4) {
		x->close_err[x->closes] = err;
		snprintf(x->reason[x->closes], 160, "%s", reason);
	}
	x->closes++;
}

static void srv_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	struct srv_ctx *x = arg;

	(void)c;
	x->logs++;
	snprintf(x->log, sizeof(x->log), "%s", msg);
}

/* Frames first..first+n-1 of @type with 300-byte payloads, as bytes. */
static uint64_t want_good;

static bool bad_closed_and_good_in(void *arg)
{
	struct srv_ctx *x = arg;

	return x->closes >= 1 && x->rx[2] >= want_good;
}

static bool good_closed(void *arg)
{
	struct srv_ctx *x = arg;

	return x->closes >= 2;
}

START_TEST(server_closes_only_the_connection_with_a_malformed_frame)
{
	static const char *const why[C_N] = {
		"bad magic", "bad header crc", "bad payload crc",
		"over the limit", "impossible payload length",
		"in the middle of a frame",
	};
	static const int err[C_N] = {
		-EBADMSG, -EBADMSG, -EBADMSG, -E2BIG, -EBADMSG, -EPIPE,
	};
	int kind = _i;
	struct bl_msgr_conn_opts o;
	struct srv_ctx x;
	struct sockaddr_in sa;
	struct bl_msgr_server *s;
	struct bl_uring *u = tm_uring();
	unsigned char *ga, *gb1, *gb2, *tail, badf[BL_MSGR_OVERHEAD + 2000];
	size_t na, nb1, nb2, nbad, ntail;
	int l, ca, cb;
	char c;

	memset(&x, 0, sizeof(x));
	memset(badf, 0, sizeof(badf));
	tm_opts(&o, srv_frame, srv_close, srv_log, &x);
	o.max_payload = 1024;
	l = tm_listener(&sa);
	s = bl_msgr_server_new(u, l, &o);
	ck_assert_ptr_nonnull(s);
	ca = tm_dial(&sa);
	cb = tm_dial(&sa);
	{
		struct timeval tv = { 10, 0 };

		setsockopt(ca, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}

	/* the bad client: 3 good frames, a bad one, 2 good ones after it */
	ga = tm_stream(1, 1, 3, &na);
	{
		size_t n;
		unsigned char *g = tm_stream(1, 4, 1, &n);

		ck_assert_uint_le(n, sizeof(badf));
		memcpy(badf, g, n);
		nbad = n;
		free(g);
	}
	switch (kind) {
	case C_MAGIC:
		badf[2] ^= 0x10;
		break;
	case C_HCRC:
		badf[10] ^= 0x10;
		break;
	case C_PCRC:
		badf[100] ^= 0x10;
		break;
	case C_TOO_BIG:
	case C_IMPOSSIBLE: {
		uint32_t len = kind == C_TOO_BIG ? 2000
						 : BL_MSGR_PAYLOAD_LIMIT + 1u;
		uint32_t crc;

		memcpy(badf + 16, &len, 4);
		crc = bl_crc32c(BL_MSGR_CRC_SEED, badf, 20);
		memcpy(badf + 20, &crc, 4);
		if (kind == C_TOO_BIG)
			nbad = BL_MSGR_OVERHEAD + 2000;
		break;
	}
	case C_TRUNCATED:
		nbad = 200;
		break;
	}
	tail = tm_stream(1, 5, 2, &ntail);
	gb1 = tm_stream(2, 1, 50, &nb1);
	gb2 = tm_stream(2, 51, 50, &nb2);

	{
		int64_t end = tm_now_ms() + tm_wait_ms;

		while (bl_msgr_server_nconns(s) < 2 && tm_now_ms() < end)
			ck_assert_int_ge(bl_msgr_server_poll(s, 100), 0);
	}
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 2);
	tm_write_all(cb, gb1, nb1);
	tm_write_all(ca, ga, na);
	tm_write_all(ca, badf, nbad);
	if (kind == C_TRUNCATED)
		shutdown(ca, SHUT_WR);
	else
		tm_write_all(ca, tail, ntail);
	want_good = 50;
	tm_serve_until(s, bad_closed_and_good_in, &x);
	tm_write_all(cb, gb2, nb2);
	want_good = 100;
	tm_serve_until(s, bad_closed_and_good_in, &x);

	ck_assert_int_eq(x.bad, 0);
	ck_assert(x.rx[1] == 3);
	ck_assert(x.rx[2] == 100);
	ck_assert_int_eq(x.closes, 1);
	ck_assert_int_eq(x.close_err[0], err[kind]);
	ck_assert_msg(strstr(x.reason[0], why[kind]), "reason: %s",
		      x.reason[0]);
	ck_assert_uint_eq(x.logs, 1);
	ck_assert_msg(strstr(x.log, "closing") && strstr(x.log, why[kind]),
		      "log: %s", x.log);
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 1);
	/* the bad client's connection is reset: no clean end of stream */
	{
		ssize_t r;

		do
			r = read(ca, &c, 1);
		while (r > 0);
		ck_assert_int_eq(r, -1);
		ck_assert_int_eq(errno, ECONNRESET);
	}
	/* the good one leaves cleanly */
	close(cb);
	tm_serve_until(s, good_closed, &x);
	ck_assert_int_eq(x.close_err[1], 0);
	ck_assert_str_eq(x.reason[1], "peer closed");
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 0);
	bl_msgr_server_destroy(s);
	close(ca);
	close(l);
	free(ga);
	free(gb1);
	free(gb2);
	free(tail);
	bl_uring_destroy(u);
}
END_TEST

/* _i 1: on a ring whose completions are posted only when asked for
 * (IORING_SETUP_DEFER_TASKRUN): the server cannot poll the ring's fd. */
START_TEST(server_destroy_closes_its_connections)
{
	struct bl_msgr_conn_opts o;
	struct srv_ctx x;
	struct sockaddr_in sa;
	struct bl_msgr_server *s;
	struct bl_uring *u = tm_uring_flags(_i ? IORING_SETUP_SINGLE_ISSUER |
						 IORING_SETUP_DEFER_TASKRUN
					       : 0);
	int l, fds[3];
	size_t n;
	unsigned char *g = tm_stream(2, 1, 10, &n);

	memset(&x, 0, sizeof(x));
	tm_opts(&o, srv_frame, srv_close, NULL, &x);
	l = tm_listener(&sa);
	s = bl_msgr_server_new(u, l, &o);
	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < 3; i++)
		fds[i] = tm_dial(&sa);
	tm_write_all(fds[0], g, n);
	{
		int64_t end = tm_now_ms() + tm_wait_ms;

		while ((bl_msgr_server_nconns(s) < 3 || x.rx[2] < 10) &&
		       tm_now_ms() < end)
			bl_msgr_server_poll(s, 50);
	}
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 3);
	ck_assert(x.rx[2] == 10);
	bl_msgr_server_destroy(s);
	ck_assert_int_eq(x.closes, 3);
	for (int i = 0; i < 3; i++) {
		char c;

		ck_assert_int_le(read(fds[i], &c, 1), 0);
		close(fds[i]);
	}
	close(l);
	free(g);
	bl_uring_destroy(u);
}
END_TEST


/* ---- hostile peers ------------------------------------------------------ */

/* CPU time this process used (user + system), in ms. */
static int64_t cpu_ms(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* Writes what the socket takes of [*@off, @n) without blocking. */
static void push(int fd, const unsigned char *b, size_t n, size_t *off)
{
	while (*off < n) {
		ssize_t w = send(fd, b + *off, n - *off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			return;
		}
		*off += (size_t)w;
	}
}

/*
 * ThreadSanitizer's shadow memory is resident too: each byte the test
 * touches costs it a few more.  The bound stays well under the 300 MiB
 * that unread replies would take without backpressure.
 */
#ifdef __SANITIZE_THREAD__
#define RSS_SHADOW 3
#else
#define RSS_SHADOW 1
#endif

/*
 * A client pipelines requests whose replies are 1 MiB each and never
 * reads them.  The server connection (default max_out_bytes, 16 MiB)
 * stops reading once its unsent replies pass the limit: it delivers a
 * bounded number of requests, its resident memory grows by about the
 * limit, not by 120 MiB, and it does not spin while it waits.  When the
 * client starts reading, every request is answered.
 */
START_TEST(replies_nobody_reads_stop_the_reading_at_max_out_bytes)
{
	const uint64_t n = 120;	/* unbounded, 120 MiB: twice the bound */
	const size_t reply = (size_t)1 << 20;
	struct bl_msgr_conn_opts o;
	struct bl_msgr_conn_stats st;
	struct tm_bp x;
	struct bl_uring *u = tm_uring();
	unsigned char *req;
	size_t len, off = 0, got = 0;
	int64_t end, t0, c0;
	long rss0;
	int fa, fb;

	tm_unix_pair(&fa, &fb);
	tm_bp_init(&x, &o, reply);
	x.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(x.c);
	req = tm_requests(n, &len);
	rss0 = tm_status_kb(0, "VmRSS:");
	end = tm_now_ms() + tm_wait_ms;
	do {
		push(fa, req, len, &off);
		bl_uring_run(u, 1, 20);
		bl_msgr_conn_stats(x.c, &st);
	} while (!st.throttled && x.delivered < n && tm_now_ms() < end);
	ck_assert_uint_ge(st.throttled, 1);
	/* stopped: nothing more is delivered, and waiting costs no CPU */
	t0 = tm_now_ms();
	c0 = cpu_ms();
	for (int i = 0; i < 25; i++) {
		push(fa, req, len, &off);
		bl_uring_run(u, 1, 20);
	}
	ck_assert_msg(cpu_ms() - c0 <= (tm_now_ms() - t0) / 2 + 100,
		      "spent %lld ms of CPU in %lld ms while throttled",
		      (long long)(cpu_ms() - c0),
		      (long long)(tm_now_ms() - t0));
	ck_assert_msg(x.delivered <= 16 + 4, "%u requests delivered",
		      x.delivered);
	ck_assert_msg(tm_status_kb(0, "VmRSS:") - rss0 < 64 * 1024 * RSS_SHADOW,
		      "RSS grew by %ld KiB", tm_status_kb(0, "VmRSS:") - rss0);
	/* the client reads: everything is answered */
	end = tm_now_ms() + tm_wait_ms;
	while ((x.delivered < n || got < n * (reply + BL_MSGR_OVERHEAD)) &&
	       tm_now_ms() < end) {
		push(fa, req, len, &off);
		bl_uring_run(u, 0, 0);
		got += tm_drain(fa);
		bl_uring_run(u, 1, 1);
	}
	ck_assert_uint_eq(x.delivered, n);
	ck_assert_uint_eq(got, n * (reply + BL_MSGR_OVERHEAD));
	bl_msgr_conn_close(x.c, 0, NULL);
	tm_run_until_one(u, &x.closed, 100);
	ck_assert_uint_eq(x.st.frames_sent, n);
	ck_assert_uint_ge(x.st.throttled, 1);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/*
 * max_inflight: a server that answers later (as a disk server does) gets
 * at most max_inflight requests at a time however many the client
 * pipelines; each answer lets one more in, from the answer's own send
 * completion.
 */
START_TEST(max_inflight_bounds_requests_waiting_for_an_answer)
{
	const uint64_t n = 100;
	struct bl_msgr_conn_opts o;
	struct bl_msgr_conn_stats st;
	struct tm_bp x;
	struct bl_uring *u = tm_uring();
	unsigned char *req;
	size_t len, off = 0, got = 0;
	int64_t end;
	int fa, fb;

	tm_unix_pair(&fa, &fb);
	tm_bp_init(&x, &o, 100);
	x.async = true;
	o.max_inflight = 4;
	x.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(x.c);
	req = tm_requests(n, &len);
	push(fa, req, len, &off);
	ck_assert_uint_eq(off, len);
	end = tm_now_ms() + tm_wait_ms;
	do {
		bl_uring_run(u, 1, 20);
		bl_msgr_conn_stats(x.c, &st);
	} while (!st.throttled && tm_now_ms() < end);
	for (int i = 0; i < 10; i++)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(x.delivered, 4);
	/* two answers, two more requests */
	tm_bp_answer(&x);
	tm_bp_answer(&x);
	x.held -= 2;
	end = tm_now_ms() + tm_wait_ms;
	while (x.delivered < 6 && tm_now_ms() < end)
		bl_uring_run(u, 1, 20);
	for (int i = 0; i < 5; i++)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(x.delivered, 6);
	/* answer everything as it comes */
	end = tm_now_ms() + tm_wait_ms;
	while ((x.delivered < n || x.held) && tm_now_ms() < end) {
		while (x.held) {
			tm_bp_answer(&x);
			x.held--;
		}
		bl_uring_run(u, 1, 10);
		got += tm_drain(fa);
	}
	ck_assert_uint_eq(x.delivered, n);
	ck_assert_uint_eq(x.held_max, 4);
	end = tm_now_ms() + tm_wait_ms;
	while (got < n * (100 + BL_MSGR_OVERHEAD) && tm_now_ms() < end) {
		bl_uring_run(u, 0, 0);
		got += tm_drain(fa);
	}
	ck_assert_uint_eq(got, n * (100 + BL_MSGR_OVERHEAD));
	bl_msgr_conn_close(x.c, 0, NULL);
	tm_run_until_one(u, &x.closed, 100);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Frames a connection sends of its own accord are not replies: two peers
 * streaming more than max_out_bytes at each other both keep reading.
 */
START_TEST(streams_both_ways_beyond_max_out_bytes_do_not_stall)
{
	const uint64_t n = 400;
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_two_peers(false, &fa, &fb, &a, &oa, &b, &ob);
	oa.max_out_bytes = ob.max_out_bytes = (size_t)1 << 20;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	tm_send_frames(&a, 1, n, false);
	tm_send_frames(&b, 1, n, false);
	tm_run_until(u, &a.rx, n, &b.rx, n);
	ck_assert_msg(!a.bad && !b.bad, "bad frames: %s%s", a.bad_msg,
		      b.bad_msg);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &a, &b);
	ck_assert_uint_eq(a.st.throttled + b.st.throttled, 0);
	bl_uring_destroy(u);
}
END_TEST


/* A frame with @plen bytes of @pay, as bytes. */
static unsigned char *big_frame(const unsigned char *pay, size_t plen,
				size_t *n)
{
	struct bl_list l, out;
	unsigned char *b;

	bl_list_init(&l);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&l, pay, plen), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 5, 1, &l, 0), 0);
	*n = bl_list_length(&out);
	b = tu_flatten(&out);
	bl_list_clear(&l);
	bl_list_clear(&out);
	return b;
}

struct claim_rx {
	int frames, closes, epipe;
	bool ok, aligned;
	unsigned segs;
	const unsigned char *want;
	size_t want_len;
};

static void claim_frame(void *arg, struct bl_msgr_conn *c,
			struct bl_msgr_frame *f)
{
	struct claim_rx *x = arg;
	unsigned char *flat = tu_flatten(&f->payload);

	(void)c;
	x->frames++;
	x->segs = bl_list_num_buffers(&f->payload);
	x->ok = bl_list_length(&f->payload) == x->want_len &&
		!memcmp(flat, x->want, x->want_len);
	x->aligned = tm_dio_aligned(&f->payload);
	free(flat);
}


static void claim_close(void *arg, struct bl_msgr_conn *c, int err,
			const char *reason)
{
	struct claim_rx *x = arg;

	(void)c;
	(void)reason;
	x->closes++;
	if (err == -EPIPE)
		x->epipe++;
}

/*
 * A large payload that fits a free buffer of the ring's registered pool
 * is read in one piece, into that buffer, aligned or not: the frame's
 * payload is the head the first receive brought and one segment for the
 * rest (piece by piece it was 1 MiB, then the remainder, each a read and
 * a buffer of its own).  One buffer is enough: an aligning connection's
 * small read up to the page boundary gives its buffer back before the
 * rest is read (a pool of one, as a memlock limit may leave, then still
 * serves).  Without io_uring nothing is registered and the pieces stay as
 * they were.
 */
START_TEST(a_large_payload_is_read_in_one_piece_into_a_registered_buffer)
{
	size_t big = ((size_t)3 << 19) + 12345, n;
	unsigned char *pay = malloc(big), *fr;
	uint64_t rng = 25;

	ck_assert_ptr_nonnull(pay);
	tu_fill(pay, big, &rng);
	fr = big_frame(pay, big, &n);
	for (int i = 0; i < 2; i++) {
		struct bl_uring *u = tm_uring();
		struct bl_uring_regpool *rp =
			bl_uring_regpool_create(u, 1, (size_t)2 << 20);
		struct bl_msgr_conn_opts o;
		struct bl_msgr_conn_stats st;
		struct bl_msgr_conn *c;
		struct claim_rx x;
		int64_t end;
		int fa, fb;

		ck_assert_ptr_nonnull(rp);
		memset(&x, 0, sizeof(x));
		x.want = pay;
		x.want_len = big;
		tm_opts(&o, claim_frame, claim_close, NULL, &x);
		o.align_data = i;
		tm_unix_pair(&fa, &fb);
		c = bl_msgr_conn_new(u, fb, &o);
		ck_assert_ptr_nonnull(c);
		tm_feed(u, fa, fr, 1000);
		bl_uring_run(u, 1, 10);
		tm_feed(u, fa, fr + 1000, n - 1000);
		end = tm_now_ms() + tm_wait_ms;
		while (!x.frames && tm_now_ms() < end)
			bl_uring_run(u, 1, 10);
		ck_assert_int_eq(x.frames, 1);
		ck_assert(x.ok);
		if (i)
			ck_assert(x.aligned);
		bl_msgr_conn_stats(c, &st);
		ck_assert_uint_eq(st.direct_frames, 1);
		if (bl_uring_backend(u) == BL_URING_IO_URING)
			ck_assert_uint_eq(x.segs, 2);
		else
			ck_assert_uint_ge(x.segs, 3);
		bl_msgr_conn_close(c, 0, NULL);
		close(fa);
		tm_run_until_one(u, &x.closes, 10);
		bl_uring_regpool_destroy(rp);
		bl_uring_destroy(u);
	}
	free(fr);
	free(pay);
}
END_TEST

/*
 * Eight peers each send a preamble claiming the largest payload there is
 * (2 GiB) and 8 KiB of it, on connections that accept it, half of
 * them aligning: the receiver's address space and resident memory grow by
 * far less than the 16 GiB claimed, since a direct read's buffer grows
 * with the bytes that arrive.  A 5 MiB payload that does arrive still
 * comes through direct reads, whole and (aligning) 4096-aligned, in a few
 * pieces.
 */
START_TEST(a_preamble_claiming_the_largest_payload_reserves_little)
{
	const size_t big = ((size_t)5 << 20) + 3;
	struct bl_msgr_conn_opts o;
	struct claim_rx x, y[2];
	struct bl_msgr_conn *cs[8], *cb[2];
	struct bl_msgr_conn_stats st;
	struct bl_uring *u = tm_uring();
	unsigned char pre[BL_MSGR_PREAMBLE + 8192], *pay, *fr;
	uint32_t len = BL_MSGR_PAYLOAD_LIMIT, crc;
	uint64_t seq = 1, rng = tm_seed;
	long vm0, rss0;
	size_t n;
	int fa[8], fb[8], ga[2], gb[2];
	int64_t end;

	memset(&x, 0, sizeof(x));
	memset(pre, 0x33, sizeof(pre));
	memcpy(pre, &(uint32_t){ BL_MSGR_MAGIC }, 4);
	memcpy(pre + 4, &(uint16_t){ 5 }, 2);
	memcpy(pre + 6, &(uint16_t){ 0 }, 2);
	memcpy(pre + 8, &seq, 8);
	memcpy(pre + 16, &len, 4);
	crc = bl_crc32c(BL_MSGR_CRC_SEED, pre, 20);
	memcpy(pre + 20, &crc, 4);
	memset(&o, 0, sizeof(o));
	o.on_frame = claim_frame;
	o.on_close = claim_close;
	o.log = tm_quiet_log;
	o.arg = &x;
	o.max_payload = BL_MSGR_PAYLOAD_LIMIT;
	for (int i = 0; i < 8; i++) {
		tm_unix_pair(&fa[i], &fb[i]);
		o.align_data = i & 1;
		cs[i] = bl_msgr_conn_new(u, fb[i], &o);
		ck_assert_ptr_nonnull(cs[i]);
	}
	vm0 = tm_status_kb(0, "VmSize:");
	rss0 = tm_status_kb(0, "VmRSS:");
	for (int i = 0; i < 8; i++)
		tm_write_all(fa[i], pre, sizeof(pre));
	for (int i = 0; i < 40; i++)
		bl_uring_run(u, 1, 10);
	ck_assert_msg(tm_status_kb(0, "VmSize:") - vm0 < 256 * 1024,
		      "address space grew by %ld MiB for 16 GiB claimed",
		      (tm_status_kb(0, "VmSize:") - vm0) / 1024);
	ck_assert_msg(tm_status_kb(0, "VmRSS:") - rss0 < 64 * 1024,
		      "RSS grew by %ld MiB",
		      (tm_status_kb(0, "VmRSS:") - rss0) / 1024);
	ck_assert_int_eq(x.frames + x.closes, 0);

	/* payloads that do arrive still come through direct reads */
	pay = malloc(big);
	ck_assert_ptr_nonnull(pay);
	tu_fill(pay, big, &rng);
	fr = big_frame(pay, big, &n);
	for (int i = 0; i < 2; i++) {
		memset(&y[i], 0, sizeof(y[i]));
		y[i].want = pay;
		y[i].want_len = big;
		o.arg = &y[i];
		o.align_data = i;
		tm_unix_pair(&ga[i], &gb[i]);
		cb[i] = bl_msgr_conn_new(u, gb[i], &o);
		ck_assert_ptr_nonnull(cb[i]);
		tm_feed(u, ga[i], fr, 1000);
		bl_uring_run(u, 1, 10);
		tm_feed(u, ga[i], fr + 1000, n - 1000);
		end = tm_now_ms() + tm_wait_ms;
		while (!y[i].frames && tm_now_ms() < end)
			bl_uring_run(u, 1, 10);
		ck_assert_int_eq(y[i].frames, 1);
		ck_assert(y[i].ok);
		ck_assert_uint_ge(y[i].segs, 2);
		if (i)
			ck_assert(y[i].aligned);
		bl_msgr_conn_stats(cb[i], &st);
		ck_assert_uint_eq(st.direct_frames, 1);
		bl_msgr_conn_close(cb[i], 0, NULL);
	}
	/* the claimants leave half way: each connection ends with -EPIPE */
	for (int i = 0; i < 8; i++)
		close(fa[i]);
	end = tm_now_ms() + tm_wait_ms;
	while ((x.closes < 8 || y[0].closes + y[1].closes < 2) &&
	       tm_now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_int_eq(x.closes, 8);
	ck_assert_int_eq(x.epipe, 8);
	ck_assert_int_eq(x.frames, 0);
	for (int i = 0; i < 2; i++)
		close(ga[i]);
	free(fr);
	free(pay);
	bl_uring_destroy(u);
}
END_TEST


/* Reads @fd (blocking, 10 s limit a read) until EOF; Return: bytes. */
static size_t read_to_eof(int fd)
{
	static unsigned char sink[1 << 16];
	struct timeval tv = { 10, 0 };
	size_t got = 0;
	ssize_t r;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((r = recv(fd, sink, sizeof(sink), 0)) > 0)
		got += (size_t)r;
	ck_assert_int_eq(r, 0);
	return got;
}

/*
 * A client sends its requests and shuts its sending side down
 * (shutdown(SHUT_WR)) before it reads.  _i 0: the server answers from
 * on_frame with replies larger than the socket takes at once; _i 1: it
 * answers later, with max_inflight counting.  Either way the client reads
 * every reply in full, then EOF, and the connection ends cleanly.
 */
START_TEST(a_half_closed_peer_still_gets_every_reply)
{
	const uint64_t n = 3;
	const size_t reply = (size_t)300 << 10;
	struct bl_msgr_conn_opts o;
	struct tm_bp x;
	struct bl_uring *u = tm_uring();
	unsigned char *req;
	size_t len, got = 0;
	int64_t end;
	int fa, fb;

	tm_unix_pair(&fa, &fb);
	tm_bp_init(&x, &o, reply);
	x.async = _i == 1;
	if (x.async)
		o.max_inflight = 8;
	x.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(x.c);
	req = tm_requests(n, &len);
	tm_write_all(fa, req, len);
	ck_assert_int_eq(shutdown(fa, SHUT_WR), 0);
	end = tm_now_ms() + tm_wait_ms;
	while (x.delivered < n && tm_now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(x.delivered, n);
	if (x.async) {
		/* the peer's EOF is in, the answers are not: still open */
		for (int i = 0; i < 10; i++)
			bl_uring_run(u, 1, 10);
		ck_assert_int_eq(x.closed, 0);
		while (x.held) {
			tm_bp_answer(&x);
			x.held--;
		}
	}
	/* the client reads while the server sends */
	end = tm_now_ms() + tm_wait_ms;
	while (!x.closed && tm_now_ms() < end) {
		bl_uring_run(u, 1, 10);
		got += tm_drain(fa);
	}
	ck_assert_int_eq(x.closed, 1);
	got += read_to_eof(fa);
	ck_assert_uint_eq(got, n * (reply + BL_MSGR_OVERHEAD));
	ck_assert_int_eq(x.close_err, 0);
	ck_assert_str_eq(x.reason, "peer closed");
	ck_assert_uint_eq(x.st.frames_sent, n);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST


/* ---- out of descriptors, timeouts --------------------------------------- */

struct fdx {
	unsigned logs, failed_lines;
	char log[256];
	int closes, timeouts;
	char reason[4][160];
	struct bl_msgr_conn *first;
};

static void fdx_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	struct fdx *x = arg;

	(void)c;
	x->logs++;
	if (strstr(msg, "accept failed"))
		x->failed_lines++;
	snprintf(x->log, sizeof(x->log), "%s", msg);
}

static void fdx_frame(void *arg, struct bl_msgr_conn *c,
		      struct bl_msgr_frame *f)
{
	struct fdx *x = arg;

	(void)f;
	if (!x->first)
		x->first = c;
}

static void fdx_close(void *arg, struct bl_msgr_conn *c, int err,
		      const char *reason)
{
	struct fdx *x = arg;

	if (c == x->first)
		x->first = NULL;
	if (x->closes < 4)
		snprintf(x->reason[x->closes], 160, "%s", reason);
	x->closes++;
	if (err == -ETIMEDOUT)
		x->timeouts++;
}

/* What the server process reports to the test. */
struct fd_report {
	unsigned nconns, failed_lines, nconns_after;
	int64_t wall_ms, cpu_ms;
	char log[256];
};

/* The server, in a process of its own with a few descriptors to spare. */
static void fd_server(int l, int ready, int report)
{
	struct bl_msgr_conn_opts o;
	struct fd_report rep;
	struct bl_msgr_server *s;
	struct bl_uring *u = tm_uring();
	struct rlimit rl;
	struct fdx x;
	int64_t t0, c0, end;
	int spare = dup(0);
	char go;

	memset(&x, 0, sizeof(x));
	memset(&rep, 0, sizeof(rep));
	tm_opts(&o, fdx_frame, fdx_close, fdx_log, &x);
	s = bl_msgr_server_new(u, l, &o);
	if (!s || spare < 0)
		_exit(3);
	close(spare);
	/* room for 3 connections: spare is the lowest free descriptor */
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = (rlim_t)spare + 3;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(4);
	if (write(ready, "r", 1) != 1 || read(ready, &go, 1) != 1)
		_exit(5);
	/* 30 clients wait in the backlog: 1.5 s of serving */
	t0 = tm_now_ms();
	c0 = cpu_ms();
	while (tm_now_ms() - t0 < 1500)
		bl_msgr_server_poll(s, 50);
	rep.wall_ms = tm_now_ms() - t0;
	rep.cpu_ms = cpu_ms() - c0;
	rep.nconns = bl_msgr_server_nconns(s);
	rep.failed_lines = x.failed_lines;
	snprintf(rep.log, sizeof(rep.log), "%s", x.log);
	/* a connection closes: the next one in the backlog comes in */
	if (x.first)
		bl_msgr_conn_close(x.first, 0, NULL);
	end = tm_now_ms() + tm_wait_ms;
	while (x.closes < 1 && tm_now_ms() < end)
		bl_msgr_server_poll(s, 50);
	end = tm_now_ms() + tm_wait_ms;
	while (bl_msgr_server_nconns(s) < rep.nconns && tm_now_ms() < end)
		bl_msgr_server_poll(s, 50);
	rep.nconns_after = bl_msgr_server_nconns(s);
	if (write(report, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(6);
	bl_msgr_server_destroy(s);
	bl_uring_destroy(u);
	_exit(0);
}

/*
 * Out of descriptors, the server does not spin on a listening socket
 * that stays readable: 30 clients wait in the backlog of a server that
 * may open 3 more descriptors; over 1.5 s it takes under a quarter of a
 * CPU and logs "accept failed" at most once a second.  When one of its
 * connections closes, the next client is accepted.
 */
START_TEST(out_of_descriptors_the_server_backs_off)
{
	struct fd_report rep;
	struct sockaddr_in sa;
	int l = tm_listener(&sa), sv[2], rp[2], fds[30], st;
	size_t n;
	unsigned char *g = tm_stream(2, 1, 1, &n);
	pid_t pid;
	char c;

	ck_assert_int_eq(listen(l, 64), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(pipe(rp), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(sv[0]);
		close(rp[0]);
		fd_server(l, sv[1], rp[1]);
	}
	close(sv[1]);
	close(rp[1]);
	ck_assert_int_eq(read(sv[0], &c, 1), 1);
	for (int i = 0; i < 30; i++)
		fds[i] = tm_dial(&sa);
	tm_write_all(fds[0], g, n);	/* the server's first connection */
	ck_assert_int_eq(write(sv[0], "g", 1), 1);
	ck_assert_int_eq(read(rp[0], &rep, sizeof(rep)), (ssize_t)sizeof(rep));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server: %d", st);
	ck_assert_msg(rep.nconns >= 1 && rep.nconns <= 3, "%u connections",
		      rep.nconns);
	ck_assert_msg(rep.cpu_ms <= rep.wall_ms / 4,
		      "%lld ms of CPU in %lld ms out of descriptors",
		      (long long)rep.cpu_ms, (long long)rep.wall_ms);
	ck_assert_msg(rep.failed_lines >= 1 && rep.failed_lines <= 3,
		      "%u accept failures logged in %lld ms",
		      rep.failed_lines, (long long)rep.wall_ms);
	ck_assert_msg(strstr(rep.log, "Too many open files"), "log: %s",
		      rep.log);
	ck_assert_uint_eq(rep.nconns_after, rep.nconns);
	for (int i = 0; i < 30; i++)
		close(fds[i]);
	close(sv[0]);
	close(rp[0]);
	close(l);
	free(g);
}
END_TEST

static bool fdx_closed(void *arg)
{
	return ((struct fdx *)arg)->closes >= 2;
}

/*
 * _i 0: a preamble begun and not finished closes its connection after
 * header_timeout_ms, also with the idle timeout off; one that was never
 * begun stays.  _i 1: with idle_timeout_ms, connections that send
 * nothing, before or after a frame, are closed.  Both -ETIMEDOUT, with
 * the reason logged.
 */
START_TEST(timeouts_close_stalled_and_idle_connections)
{
	struct bl_msgr_conn_opts o;
	struct sockaddr_in sa;
	struct bl_msgr_server *s;
	struct bl_uring *u = tm_uring();
	struct fdx x;
	int l = tm_listener(&sa), a, b;
	size_t n;
	unsigned char *g = tm_stream(2, 1, 1, &n);

	memset(&x, 0, sizeof(x));
	tm_opts(&o, fdx_frame, fdx_close, fdx_log, &x);
	if (_i == 0)
		o.header_timeout_ms = 200;
	else
		o.idle_timeout_ms = 300;
	s = bl_msgr_server_new(u, l, &o);
	ck_assert_ptr_nonnull(s);
	a = tm_dial(&sa);
	b = tm_dial(&sa);
	if (_i == 0) {
		tm_write_all(a, g, 10);	/* 10 bytes of a preamble */
		tm_write_all(b, g, n);	/* a whole frame, then nothing */
		tm_write_all(b, g, 12);	/* and a second preamble begun */
	} else {
		tm_write_all(b, g, n);
	}
	tm_serve_until(s, fdx_closed, &x);
	ck_assert_int_eq(x.closes, 2);
	ck_assert_int_eq(x.timeouts, 2);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(strstr(x.reason[i], _i ? "idle" : "preamble"),
			      "reason: %s", x.reason[i]);
	ck_assert_uint_ge(x.logs, 2);
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 0);
	if (_i == 0) {
		/* a client that never began a preamble is not timed */
		int c = tm_dial(&sa);

		for (int i = 0; i < 8; i++)
			bl_msgr_server_poll(s, 50);
		ck_assert_uint_eq(bl_msgr_server_nconns(s), 1);
		ck_assert_int_eq(x.closes, 2);
		close(c);
	}
	bl_msgr_server_destroy(s);
	close(a);
	close(b);
	close(l);
	free(g);
	bl_uring_destroy(u);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		replies_nobody_reads_stop_the_reading_at_max_out_bytes,
		max_inflight_bounds_requests_waiting_for_an_answer,
		streams_both_ways_beyond_max_out_bytes_do_not_stall,
		a_large_payload_is_read_in_one_piece_into_a_registered_buffer,
		a_preamble_claiming_the_largest_payload_reserves_little,
		out_of_descriptors_the_server_backs_off,
		NULL
	};
	const struct tu_loop loops[] = {
		{ server_closes_only_the_connection_with_a_malformed_frame,
		  0, C_N },
		{ server_destroy_closes_its_connections, 0, 2 },
		{ a_half_closed_peer_still_gets_every_reply, 0, 2 },
		{ timeouts_close_stalled_and_idle_connections, 0, 2 },
		{ NULL }
	};

	return tm_main("test_msgr_server", tests, loops);
}
