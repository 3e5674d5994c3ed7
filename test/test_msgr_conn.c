/* SPDX-License-Identifier: MIT */
/*
 * test_msgr_conn.c - the messenger's connections: thousands of mixed
 * frames both ways in order, aligned payloads (align_data), held payloads
 * that starve the ring, direct reads, send callbacks that send and close,
 * limits, resets on stderr, closing with frames in flight, frames sent in
 * pieces, and allocation failures.
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

/* Both ends send @n frames of mixed sizes to each other, interleaved. */
static void exchange(bool tcp, uint64_t n)
{
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_two_peers(tcp, &fa, &fb, &a, &oa, &b, &ob);
	/* b: a small ring of its own, a: the default */
	ob.nbufs = 16;
	ob.buf_size = 16384;
	/* a: one multishot receive; b: one-shot receives, and payloads of
	 * 128 KiB and more read straight into raws of their own */
	oa.direct_min = SIZE_MAX;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	tm_swap_frames(u, &a, &b, n, 500);
	ck_assert_uint_eq(a.sent_cancel + a.sent_err, 0);
	bl_msgr_conn_close(a.c, 0, "done");
	if (!b.closed)
		bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &a, &b);
	ck_assert_int_eq(a.close_err, 0);
	ck_assert_str_eq(a.reason, "done");
	ck_assert_int_eq(b.close_err, 0);
	ck_assert(a.st.frames_sent == n && a.st.frames_received == n);
	ck_assert(b.st.frames_sent == n && b.st.frames_received == n);
	ck_assert(a.st.bytes_sent == b.st.bytes_received);
	ck_assert(a.st.direct_frames == 0 && b.st.direct_frames > 0);
	ck_assert_uint_eq(a.logs + b.logs, 0);
	bl_uring_destroy(u);
}

START_TEST(conn_socketpair_10k_mixed_frames_in_order)
{
	exchange(false, getenv("BL_TEST_QUICK") ? 1000 : 10000); /* valgrind */
}
END_TEST

START_TEST(conn_tcp_10k_mixed_frames_in_order)
{
	exchange(true, getenv("BL_TEST_QUICK") ? 1000 : 10000);
}
END_TEST

/* -- aligned data -- */

static void aligned(bool tcp)
{
	static const size_t big[] = { 16384, 16385, 20480, 100000,
				      (size_t)1 << 20, 70001, 16384 * 3 };
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	uint64_t nbig = 0, s = 0;
	int fa, fb;

	if (tcp)
		tm_tcp_pair(&fa, &fb);
	else
		tm_unix_pair(&fa, &fb);
	tm_peer_init(&a, "a");
	tm_peer_init(&b, "b");
	a.check_seq = b.check_seq = false;
	tm_opts_for(&oa, &a);
	tm_opts_for(&ob, &b);
	ob.align_data = true;
	b.check_align = true;
	b.align_min = 16384;
	b.keep = true;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
			struct bl_list pay;
			struct bl_ptr p = { tm_pat_raw, i, big[i] };

			/* small frames before, so that a preamble often
			 * arrives behind other bytes */
			for (int k = 0; k < round; k++) {
				struct bl_ptr q = { tm_pat_raw, 0, 100 };

				bl_list_init(&pay);
				bl_list_append_ptr(&pay, &q);
				ck_assert_int_eq(bl_msgr_send(a.c, 1, &pay,
							      NULL, NULL), 0);
				bl_list_clear(&pay);
				s++;
			}
			bl_list_init(&pay);
			bl_list_append_ptr(&pay, &p);
			ck_assert_int_eq(bl_msgr_send(a.c, 2, &pay, NULL, NULL),
					 0);
			bl_list_clear(&pay);
			s++;
			nbig++;
			if (round & 1)
				bl_uring_run(u, 0, 0);
		}
	}
	tm_run_until(u, &b.rx, s, &b.rx, s);
	ck_assert_msg(!b.bad, "%d bad frames, first: %s", b.bad, b.bad_msg);
	ck_assert(b.aligned == nbig);
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &a, &b);
	ck_assert(b.st.aligned_frames == nbig);
	/* each copies at most what one receive brought plus 4 KiB */
	ck_assert(b.st.aligned_copied <= nbig * (64 * 1024 + 4096));
	ck_assert_uint_eq(a.logs + b.logs, 0);
	bl_uring_destroy(u);
}

START_TEST(align_data_gives_4096_aligned_payloads_socketpair)
{
	aligned(false);
}
END_TEST

START_TEST(align_data_gives_4096_aligned_payloads_tcp)
{
	aligned(true);
}
END_TEST

/* Payload bytes of a preamble that arrived with 5000 of its payload bytes
 * are copied up to the next 4096 boundary (8192 bytes), then the rest is
 * read straight into an aligned raw, which an O_DIRECT file takes as is. */
START_TEST(align_data_copies_only_the_head_and_suits_o_direct)
{
	struct bl_msgr_conn_opts ob;
	struct tm_peer b;
	struct bl_uring *u = tm_uring();
	size_t n, plen = (size_t)1 << 20;
	unsigned char *fr = tm_frame_bytes(2, 1, plen, 0, &n);
	int fa, fb, fd;
	char path[] = "msgr-dio-XXXXXX";

	tm_unix_pair(&fa, &fb);
	tm_peer_init(&b, "b");
	b.check_seq = false;
	b.check_align = true;
	b.align_min = 16384;
	b.keep = true;
	tm_opts_for(&ob, &b);
	ob.align_data = true;
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(b.c);
	tm_write_all(fa, fr, BL_MSGR_PREAMBLE + 5000);
	/* let b receive that much and switch to reading */
	for (int i = 0; i < 20; i++)
		bl_uring_run(u, 1, 10);
	ck_assert(b.st.aligned_copied == 0 && b.rx == 0);
	tm_feed(u, fa, fr + BL_MSGR_PREAMBLE + 5000,
		n - BL_MSGR_PREAMBLE - 5000);
	tm_run_until(u, &b.rx, 1, &b.rx, 1);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	ck_assert(tm_matches(&b.kept, 0));
	ck_assert_uint_eq(bl_list_length(&b.kept), plen);
	ck_assert(tm_dio_aligned(&b.kept));
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&b.kept, 4096,
								 4096, 0), 0);
	/* O_DIRECT takes it without a copy (where the filesystem has it) */
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT);
	if (fd >= 0) {
		unsigned char *back = malloc(plen);
		size_t done = 0;

		ck_assert_int_eq(bl_list_prepare_dio(&b.kept, fd), 0);
		ck_assert_int_eq(bl_list_pwrite(&b.kept, fd, 0, &done), 0);
		ck_assert_uint_eq(done, plen);
		close(fd);
		fd = open(path, O_RDONLY);
		ck_assert_int_eq(pread(fd, back, plen, 0), (ssize_t)plen);
		ck_assert(memcmp(back, tm_pat, plen) == 0);
		free(back);
		close(fd);
	} else {
		fprintf(stderr, "note: no O_DIRECT here (%s)\n",
			strerror(errno));
	}
	unlink(path);
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &b, NULL);
	ck_assert(b.st.aligned_frames == 1);
	ck_assert_uint_eq(b.st.aligned_copied, 8192);
	close(fa);
	free(fr);
	bl_uring_destroy(u);
}
END_TEST

/* -- ring exhaustion and long-lived payloads -- */

/*
 * @mode 0: one-shot receives (the default), 1: multishot (no plain reads
 * of large payloads), 2: detach (long-lived payloads copied out).
 */
static void held_frames(int mode)
{
	bool detach = mode == 2;
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 4096, 77);
	uint64_t n = 300;
	int fa, fb;

	ck_assert_ptr_nonnull(br);
	tm_unix_pair(&fa, &fb);
	tm_peer_init(&a, "a");
	tm_peer_init(&b, "b");
	b.keep = true;		/* b holds on to every payload */
	tm_opts_for(&oa, &a);
	tm_opts_for(&ob, &b);
	ob.bufring = br;
	ob.detach = detach;
	if (mode == 1)
		ob.direct_min = SIZE_MAX;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	/* includes a 1 MiB frame (seq 97) */
	tm_send_frames(&a, 1, n, false);
	tm_run_until(u, &b.rx, n, &b.rx, n);
	ck_assert_msg(!b.bad, "%d bad frames, first: %s", b.bad, b.bad_msg);
	if (detach)
		/* nothing held points into the ring */
		ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	else
		/* what is held pins the ring's buffers ... */
		ck_assert_uint_lt(bl_uring_bufring_available(br), 4);
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &a, &b);
	if (detach)
		ck_assert(b.st.detached > 0);
	if (mode == 1)
		/* ... and the kernel found it empty */
		ck_assert(b.st.ring_dry > 0);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
}

START_TEST(held_payloads_starve_the_ring_but_frames_still_arrive)
{
	held_frames(0);
}
END_TEST

START_TEST(held_payloads_starve_a_multishot_ring_but_frames_still_arrive)
{
	held_frames(1);
}
END_TEST

START_TEST(detach_keeps_the_ring_free_for_long_lived_payloads)
{
	held_frames(2);
}
END_TEST

/* Large payloads are read straight into a raw of their own; on a ring with
 * registered buffers, into one of those (recycled, READ_FIXED). */
START_TEST(direct_reads_use_the_rings_registered_buffers)
{
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	struct bl_uring_regpool *rp = bl_uring_regpool_create(u, 4, 1 << 20);
	int fa, fb, in_pool = 0;

	ck_assert_ptr_nonnull(rp);
	tm_unix_pair(&fa, &fb);
	tm_peer_init(&a, "a");
	tm_peer_init(&b, "b");
	b.keep = true;
	tm_opts_for(&oa, &a);
	tm_opts_for(&ob, &b);
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	tm_send_frames(&a, 1, 97, false);	/* seq 97: 1 MiB */
	tm_run_until(u, &b.rx, 97, &b.rx, 97);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	for (unsigned i = 0; i < bl_list_num_buffers(&b.kept); i++) {
		struct bl_ptr p;

		bl_list_get_ptr(&b.kept, i, &p);
		in_pool += bl_raw_buf_index(p.raw) >= 0;
		bl_ptr_release(&p);
	}
	if (bl_uring_backend(u) == BL_URING_IO_URING)
		ck_assert_int_eq(in_pool, 1);
	else
		ck_assert_int_eq(in_pool, 0);	/* nothing registered */
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &a, &b);
	ck_assert(b.st.direct_frames == 1);
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
}
END_TEST

/* A large frame whose payload is corrupt is caught whichever way it
 * arrives: through the ring with its crc taken piece by piece, or read
 * straight into a raw of its own, aligned or not. */
START_TEST(large_frame_with_bad_payload_crc_closes_the_receiver)
{
	for (int mode = 0; mode < 3; mode++) {
		struct bl_msgr_conn_opts ob;
		struct tm_peer b;
		struct bl_uring *u = tm_uring();
		size_t n, plen = 300000;
		unsigned char *fr = tm_frame_bytes(2, 1, plen, 0, &n);
		int fa, fb;

		fr[BL_MSGR_PREAMBLE + plen - 10] ^= 1;
		tm_unix_pair(&fa, &fb);
		tm_peer_init(&b, "b");
		tm_opts_for(&ob, &b);
		if (mode == 0)
			ob.direct_min = SIZE_MAX;
		if (mode == 2)
			ob.align_data = true;
		b.c = bl_msgr_conn_new(u, fb, &ob);
		ck_assert_ptr_nonnull(b.c);
		tm_feed(u, fa, fr, n);
		tm_run_until_closed(u, &b, NULL);
		ck_assert_int_eq(b.close_err, -EBADMSG);
		ck_assert_msg(strstr(b.reason, "bad payload crc"), "%s",
			      b.reason);
		ck_assert_uint_eq(b.logs, 1);
		ck_assert(b.rx == 0);
		close(fa);
		free(fr);
		bl_uring_destroy(u);
	}
}
END_TEST

/* -- send callbacks that send and close -- */

struct cbrec {
	struct tm_peer *p;
	int idx;
	int calls;
	int res;
	int order;
};

static struct cbrec cbs[12];
static int cb_order;

static void reentrant_sent(void *arg, int res)
{
	struct cbrec *r = arg;

	r->calls++;
	r->res = res;
	r->order = ++cb_order;
	if (r->idx == 2) {
		/* queued behind the batch in flight */
		struct bl_list pay;

		tm_payload_of(&pay, 11);
		ck_assert_int_eq(bl_msgr_send(r->p->c, 33, &pay,
					      reentrant_sent, &cbs[11]), 0);
		bl_list_clear(&pay);
	}
	if (r->idx == 4)
		bl_msgr_conn_close(r->p->c, 0, "closed from a send callback");
}

START_TEST(send_callbacks_may_send_and_close)
{
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_two_peers(false, &fa, &fb, &a, &oa, &b, &ob);
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	memset(cbs, 0, sizeof(cbs));
	cb_order = 0;
	/* frame 1 goes out alone, 2..10 wait and go out together */
	for (int i = 1; i <= 10; i++) {
		struct bl_list pay;

		cbs[i].p = &a;
		cbs[i].idx = i;
		tm_payload_of(&pay, (uint64_t)i);
		ck_assert_int_eq(bl_msgr_send(a.c, (uint16_t)(i * 3), &pay,
					      reentrant_sent, &cbs[i]), 0);
		bl_list_clear(&pay);
	}
	cbs[11].p = &a;
	cbs[11].idx = 11;
	tm_run_until_closed(u, &a, &b);
	for (int i = 1; i <= 10; i++) {
		ck_assert_int_eq(cbs[i].calls, 1);
		ck_assert_int_eq(cbs[i].res, 0);
		ck_assert_int_eq(cbs[i].order, i + (i > 4));
	}
	/* frame 11 never reached the kernel: cancelled by the close */
	ck_assert_int_eq(cbs[11].calls, 1);
	ck_assert_int_eq(cbs[11].res, -ECANCELED);
	ck_assert_int_eq(cbs[11].order, 5);
	ck_assert_str_eq(a.reason, "closed from a send callback");
	ck_assert(b.rx == 10);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	bl_uring_destroy(u);
}
END_TEST

/* -- limits, teardown, failures -- */

START_TEST(frame_over_max_payload_closes_the_receiver)
{
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_two_peers(true, &fa, &fb, &a, &oa, &b, &ob);
	ob.max_payload = 1000;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	tm_send_frames(&a, 1, 11, true); /* seq 11: a 4 KiB+ payload */
	tm_run_until_closed(u, &b, &a);
	ck_assert_int_eq(b.close_err, -E2BIG);
	ck_assert_ptr_nonnull(strstr(b.reason, "over the limit"));
	ck_assert_uint_eq(b.logs, 1);
	ck_assert_ptr_nonnull(strstr(b.log, "closing"));
	ck_assert(b.rx == 10);
	ck_assert_uint_eq(b.st.resets, 1);
	/* the sender is told that its connection failed (reset) */
	ck_assert_msg(a.close_err == -ECONNRESET || a.close_err == -EPIPE,
		      "sender: %d %s", a.close_err, a.reason);
	ck_assert_uint_eq(a.sent_ok + a.sent_err + a.sent_cancel, 11);
	bl_uring_destroy(u);
}
END_TEST

/* Standard error, redirected to a temporary file between the two calls. */
struct err_capture {
	FILE *f;
	int saved;
};

static void err_capture_start(struct err_capture *cp)
{
	cp->f = tmpfile();
	ck_assert_ptr_nonnull(cp->f);
	fflush(stderr);
	cp->saved = dup(2);
	ck_assert_int_ge(cp->saved, 0);
	ck_assert_int_eq(dup2(fileno(cp->f), 2), 2);
}

/* Ends the capture; @buf gets what was written (cut at @n - 1 bytes). */
static void err_capture_end(struct err_capture *cp, char *buf, size_t n)
{
	size_t got;

	fflush(stderr);
	ck_assert_int_eq(dup2(cp->saved, 2), 2);
	close(cp->saved);
	rewind(cp->f);
	got = fread(buf, 1, n - 1, cp->f);
	buf[got] = 0;
	fclose(cp->f);
}

/*
 * b resets a over a frame longer than its max_payload, with b's on_close
 * and log set as asked; @err gets what went to stderr meanwhile.
 */
static void reset_with(bool tm_on_close, bool log, struct tm_peer *b, char *err,
		       size_t errsz)
{
	struct bl_msgr_conn_opts oa, ob;
	struct err_capture cp;
	struct tm_peer a;
	struct bl_uring *u = tm_uring();
	int fa, fb;

	tm_two_peers(true, &fa, &fb, &a, &oa, b, &ob);
	ob.max_payload = 1000;
	if (!tm_on_close)
		ob.on_close = NULL;
	if (!log)
		ob.log = NULL;
	err_capture_start(&cp);
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b->c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b->c);
	tm_send_frames(&a, 1, 11, true); /* seq 11: a 4 KiB+ payload */
	/* the sender hears of the reset after b has made it */
	tm_run_until_closed(u, &a, NULL);
	bl_uring_destroy(u);
	err_capture_end(&cp, err, errsz);
	ck_assert(b->rx == 10);
}

/*
 * A reset's reason goes to stderr only when the caller gave neither a log
 * function nor an on_close: a daemon that handles its resets in on_close
 * does not also get a line on stderr for each.
 */
START_TEST(a_reset_goes_to_stderr_only_without_log_and_on_close)
{
	char err[1024];
	struct tm_peer b;

	/* on_close, no log: the reason reaches on_close only */
	reset_with(true, false, &b, err, sizeof(err));
	ck_assert_int_eq(b.closed, 1);
	ck_assert_int_eq(b.close_err, -E2BIG);
	ck_assert_ptr_nonnull(strstr(b.reason, "over the limit"));
	ck_assert_msg(!strstr(err, "bl_msgr"), "stderr: %s", err);
	/* a log function: the line goes there, not to stderr */
	reset_with(true, true, &b, err, sizeof(err));
	ck_assert_uint_eq(b.logs, 1);
	ck_assert_ptr_nonnull(strstr(b.log, "closing (reset)"));
	ck_assert_msg(!strstr(err, "bl_msgr"), "stderr: %s", err);
	reset_with(false, true, &b, err, sizeof(err));
	ck_assert_uint_eq(b.logs, 1);
	ck_assert_int_eq(b.closed, 0);
	ck_assert_msg(!strstr(err, "bl_msgr"), "stderr: %s", err);
	/* neither: stderr is the only place the reason can go */
	reset_with(false, false, &b, err, sizeof(err));
	ck_assert_uint_eq(b.logs, 0);
	ck_assert_msg(strstr(err, "bl_msgr: ") &&
		      strstr(err, "closing (reset)") &&
		      strstr(err, "over the limit"), "stderr: %s", err);
}
END_TEST

START_TEST(close_with_frames_in_flight_cancels_and_leaks_nothing)
{

	tu_alloc_install(0, 0);
	for (int who = 0; who < 3; who++) {
		struct bl_msgr_conn_opts oa, ob;
		struct tm_peer a, b;
		struct bl_uring *u = tm_uring();
		int fa, fb;

		if (who == 2)
			tm_tcp_pair(&fa, &fb);
		else
			tm_unix_pair(&fa, &fb);
		tm_peer_init(&a, "a");
		tm_peer_init(&b, "b");
		tm_opts_for(&oa, &a);
		tm_opts_for(&ob, &b);
		a.c = bl_msgr_conn_new(u, fa, &oa);
		b.c = bl_msgr_conn_new(u, fb, &ob);
		ck_assert_ptr_nonnull(a.c);
		ck_assert_ptr_nonnull(b.c);
		tm_send_frames(&a, 1, 400, true);
		if (who == 1) {
			/* the receiver goes away while data streams in */
			tm_run_until(u, &b.rx, 5, &b.rx, 5);
			bl_msgr_conn_close(b.c, 0, "receiver quits");
		} else {
			bl_msgr_conn_close(a.c, 0, "sender quits");
		}
		tm_run_until_closed(u, &a, &b);
		ck_assert_uint_eq(a.sent_ok + a.sent_cancel + a.sent_err, 400);
		if (who != 1) {
			ck_assert_uint_gt(a.sent_cancel, 0);
			ck_assert_int_eq(a.close_err, 0);
		} else {
			ck_assert_str_eq(b.reason, "receiver quits");
		}
		ck_assert(b.rx == a.st.frames_sent || who == 1);
		ck_assert_msg(!b.bad, "%s", b.bad_msg);
		bl_uring_destroy(u);
	}
	tm_alloc_off_leak_free();
}
END_TEST

/* ---- frames sent in pieces ---------------------------------------------- */

/* Bytes [@at, @at + @n) of @l equal the pattern at @off? */
static bool range_matches(const struct bl_list *l, size_t at, size_t n,
			  size_t off)
{
	struct bl_list sub;
	bool ok;

	bl_list_init(&sub);
	ck_assert_int_eq(bl_list_substr_of(&sub, l, at, n), 0);
	ok = tm_matches(&sub, off);
	bl_list_clear(&sub);
	return ok;
}

/* @l = @n bytes of the pattern from @off, shared. */
static void pat_piece(struct bl_list *l, size_t off, size_t n)
{
	struct bl_ptr p = { tm_pat_raw, off, n };

	bl_list_init(l);
	ck_assert_int_eq(bl_list_append_ptr(l, &p), 0);
}

/*
 * A frame of 1.8 MiB sent in three pieces (a stream) reaches the peer as
 * one frame, its payload whole and its crc right; a frame sent while the
 * stream is open waits behind it and arrives after it, in sequence order;
 * every piece's callback and the held frame's report success.  Each
 * misuse is refused without changing anything: a piece without a stream
 * (-EINVAL), a second stream (-EBUSY), a piece longer than what is left
 * or empty (-EINVAL), an empty or oversized stream (-EINVAL, -E2BIG).
 */
START_TEST(frame_sent_in_pieces_arrives_whole_then_those_sent_meanwhile)
{
	const size_t piece = 600 << 10, total = 3 * piece;
	struct bl_msgr_conn_opts oa, ob;
	struct bl_list l, big;
	struct tm_peer a, b;
	struct bl_uring *u = tm_uring();
	size_t s1 = tm_size_of(1), s3 = tm_size_of(3);
	int fa, fb;

	tm_two_peers(_i == 1, &fa, &fb, &a, &oa, &b, &ob);
	b.check_seq = false;
	b.keep = true;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);

	pat_piece(&l, tm_off_of(2), piece);
	pat_piece(&big, 0, piece + 1);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, tm_on_sent, &a), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_begin(NULL, 6, total), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_add(NULL, &l, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, 0), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, (size_t)
					      BL_MSGR_PAYLOAD_LIMIT + 1),
			 -E2BIG);
	tm_send_frames(&a, 1, 1, true);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, total), 0);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, total), -EBUSY);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, tm_on_sent, &a), 0);
	bl_list_clear(&l);
	/* sent while the stream is open: it must come after it */
	tm_send_frames(&a, 3, 1, true);
	for (int i = 0; i < 20; i++)
		bl_uring_run(u, 0, 5);
	ck_assert_uint_eq(b.rx, 1);
	pat_piece(&l, tm_off_of(2) + piece, piece);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, tm_on_sent, &a), 0);
	bl_list_clear(&l);
	/* one byte more than the stream still expects */
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &big, tm_on_sent, &a),
			 -EINVAL);
	bl_list_clear(&big);
	pat_piece(&l, tm_off_of(2) + 2 * piece, piece);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, tm_on_sent, &a), 0);
	bl_list_clear(&l);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, NULL, NULL), -EINVAL);
	tm_run_until(u, &b.rx, 3, &b.rx, 3);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	ck_assert_uint_eq(b.expect, 3);
	ck_assert_uint_eq(bl_list_length(&b.kept), s1 + total + s3);
	ck_assert(range_matches(&b.kept, 0, s1, tm_off_of(1)));
	ck_assert(range_matches(&b.kept, s1, total, tm_off_of(2)));
	ck_assert(range_matches(&b.kept, s1 + total, s3, tm_off_of(3)));
	while (a.sent_ok < 5)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_uint_eq(a.sent_ok, 5);	/* 2 frames, 3 pieces */
	ck_assert_uint_eq(a.sent_cancel + a.sent_err, 0);
	bl_msgr_conn_close(a.c, 0, "done");
	tm_run_until_closed(u, &a, &b);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_uint_eq(a.st.frames_sent, 3);
	ck_assert_uint_eq(a.st.bytes_sent, b.st.bytes_received);
	bl_list_clear(&b.kept);
	bl_uring_destroy(u);
}
END_TEST

/*
 * A connection closed with a stream open: the frame held behind it gets
 * -ECANCELED, every piece's callback runs once, a piece added afterwards
 * is -EPIPE, the peer gets no frame (a frame cut short, or nothing, never
 * a whole wrong one), and nothing leaks.
 */
START_TEST(closing_with_a_stream_open_cancels_what_waits_behind_it)
{
	struct bl_msgr_conn_opts oa, ob;
	struct bl_list l;
	struct tm_peer a, b;
	struct bl_uring *u;
	int fa, fb;

	tu_alloc_install(0, 0);
	u = tm_uring();
	tm_two_peers(true, &fa, &fb, &a, &oa, &b, &ob);
	b.check_seq = false;
	ob.log = tm_quiet_log;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, 1 << 20), 0);
	pat_piece(&l, 0, 256 << 10);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, tm_on_sent, &a), 0);
	tm_send_frames(&a, 2, 1, true);
	ck_assert_uint_eq(a.sent_cancel, 0);
	bl_msgr_conn_close(a.c, 0, "gives up");
	ck_assert_uint_eq(a.sent_cancel, 1);	/* the held frame, at once */
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, tm_on_sent, &a), -EPIPE);
	bl_list_clear(&l);
	tm_run_until_closed(u, &a, &b);
	ck_assert_uint_eq(a.sent_ok + a.sent_cancel + a.sent_err, 2);
	ck_assert_uint_eq(b.rx, 0);
	bl_uring_destroy(u);
	tm_alloc_off_leak_free();
}
END_TEST

START_TEST(allocation_failures_return_enomem_and_leak_nothing)
{
	struct bl_msgr_conn_opts oa, ob;
	struct tm_peer a, b;
	struct bl_uring *u;
	uint64_t ok = 0, fails = 0;
	int fa, fb;

	tu_alloc_install(0, 0);
	u = tm_uring();
	tm_two_peers(false, &fa, &fb, &a, &oa, &b, &ob);
	/* creating: every failing allocation gives NULL, fd still open */
	for (uint64_t k = 1;; k++) {
		tu_alloc_fail_at(k, 1);
		errno = 0;
		a.c = bl_msgr_conn_new(u, fa, &oa);
		tu_alloc_fail_at(0, 0);
		if (a.c)
			break;
		ck_assert_int_eq(errno, ENOMEM);
		ck_assert_int_ge(fcntl(fa, F_GETFD), 0);
		ck_assert_uint_lt(k, 100);
	}
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(b.c);
	/* sending: a failed send consumes no sequence number */
	for (uint64_t k = 1; k < 40; k++) {
		struct bl_list pay;
		uint64_t s = ok + 1;
		int ret;

		tm_payload_of(&pay, s);
		tu_alloc_fail_at(k % 6 + 1, 1);
		ret = bl_msgr_send(a.c, (uint16_t)(s * 3), &pay, tm_on_sent,
				   &a);
		tu_alloc_fail_at(0, 0);
		bl_list_clear(&pay);
		if (ret) {
			ck_assert_int_eq(ret, -ENOMEM);
			fails++;
		} else {
			ok++;
		}
		bl_uring_run(u, 0, 0);
	}
	ck_assert(fails > 0 && ok > 0);
	tm_run_until(u, &b.rx, ok, &b.rx, ok);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	while (a.sent_ok < ok)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	tm_run_until_closed(u, &a, &b);
	ck_assert_uint_eq(a.sent_ok, ok);
	bl_uring_destroy(u);
	tm_alloc_off_leak_free();
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		conn_socketpair_10k_mixed_frames_in_order,
		conn_tcp_10k_mixed_frames_in_order,
		align_data_gives_4096_aligned_payloads_socketpair,
		align_data_gives_4096_aligned_payloads_tcp,
		align_data_copies_only_the_head_and_suits_o_direct,
		held_payloads_starve_the_ring_but_frames_still_arrive,
		held_payloads_starve_a_multishot_ring_but_frames_still_arrive,
		detach_keeps_the_ring_free_for_long_lived_payloads,
		direct_reads_use_the_rings_registered_buffers,
		large_frame_with_bad_payload_crc_closes_the_receiver,
		send_callbacks_may_send_and_close,
		frame_over_max_payload_closes_the_receiver,
		a_reset_goes_to_stderr_only_without_log_and_on_close,
		close_with_frames_in_flight_cancels_and_leaks_nothing,
		closing_with_a_stream_open_cancels_what_waits_behind_it,
		allocation_failures_return_enomem_and_leak_nothing,
		NULL
	};
	const struct tu_loop loops[] = {
		{ frame_sent_in_pieces_arrives_whole_then_those_sent_meanwhile,
		  0, 2 },
		{ NULL }
	};

	return tm_main("test_msgr_conn", tests, loops);
}
