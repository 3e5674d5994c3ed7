/* SPDX-License-Identifier: MIT */
/*
 * test_msgr_send_results.c - what a send callback hears (bl_msgr_send_fn):
 * 0 for every frame handed to the kernel whole, a negative result only for
 * frames that were not, -ECANCELED when the connection closed first - also
 * when one batch in flight carries frames of both kinds, and when the
 * connection closes while the kernel still holds part of that batch.
 *
 * The peer is a plain socket the test reads itself, so the bytes that
 * reached it say exactly which frames were handed to the kernel whole: a
 * graceful close (bl_msgr_conn_close) lets the kernel deliver everything
 * it took.
 */
#include "config.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bufferlist/msgr.h>
#include "testutil.h"

#define NFRAMES 64
#define PAYLOAD ((size_t)1 << 20)
#define FRAME_WIRE (BL_MSGR_PREAMBLE + PAYLOAD + BL_MSGR_TRAILER)

struct result {
	int calls;
	int res;
};

static struct result results[NFRAMES];

static void on_sent(void *arg, int res)
{
	struct result *r = arg;

	r->calls++;
	r->res = res;
}

static struct closed {
	int calls;
	int err;
} closed;

static void on_close(void *arg, struct bl_msgr_conn *c, int err,
		     const char *reason)
{
	(void)arg;
	(void)c;
	(void)reason;
	closed.calls++;
	closed.err = err;
}

/*
 * A connection over TCP, its peer's end in *@peer, with NFRAMES frames
 * of @type queued: 1 MiB payloads of byte @fill, each reporting into
 * results[].
 */
static struct bl_msgr_conn *queue_frames(struct bl_uring *u, int *peer,
					 uint16_t type, int fill)
{
	struct bl_msgr_conn_opts o;
	struct bl_msgr_conn *c;
	unsigned char *pay = malloc(PAYLOAD);
	struct bl_list l;
	int fa;

	ck_assert_ptr_nonnull(pay);
	memset(pay, fill, PAYLOAD);
	tm_tcp_pair(&fa, peer);
	memset(&o, 0, sizeof(o));
	o.on_close = on_close;
	memset(results, 0, sizeof(results));
	memset(&closed, 0, sizeof(closed));
	c = bl_msgr_conn_new(u, fa, &o);
	ck_assert_ptr_nonnull(c);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, pay, PAYLOAD), 0);
	for (int i = 0; i < NFRAMES; i++)
		ck_assert_int_eq(bl_msgr_send(c, type, &l, on_sent,
					      &results[i]), 0);
	bl_list_clear(&l);
	free(pay);
	return c;
}

/* Closes @c and runs @u until on_close ran, once. */
static void close_and_wait(struct bl_uring *u, struct bl_msgr_conn *c,
			   const char *reason)
{
	int64_t end = tm_now_ms() + 60000;

	bl_msgr_conn_close(c, 0, reason);
	while (!closed.calls && tm_now_ms() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_int_eq(closed.calls, 1);
}

/* Reads up to @want bytes of @fd (all until its end: SIZE_MAX). */
static size_t drain(int fd, size_t want)
{
	static char buf[1 << 16];
	size_t got = 0;

	while (got < want) {
		size_t ask = want - got < sizeof(buf) ? want - got
						       : sizeof(buf);
		ssize_t r = read(fd, buf, ask);

		if (r < 0 && errno == EINTR)
			continue;
		ck_assert_int_ge(r, 0);
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return got;
}

/*
 * 64 frames of 1 MiB queued to a peer that read two and a half of them
 * and then stopped; the sender closes while the kernel holds what it could
 * take.  Every frame that reached the peer whole was handed to the kernel
 * before the close and hears 0; every other frame hears -ECANCELED, the
 * one cut in the middle included; each callback runs once.
 */
START_TEST(close_reports_each_frame_of_a_batch_by_what_reached_the_kernel)
{
	struct bl_uring *u = tm_uring();
	struct bl_msgr_conn *c;
	size_t got, whole;
	int fb;
	int64_t end;

	c = queue_frames(u, &fb, 7, 0x5a);
	/* the peer takes two and a half frames, reading as the sender runs */
	got = 0;
	end = tm_now_ms() + 60000;
	while (got < 5 * FRAME_WIRE / 2 && tm_now_ms() < end) {
		struct pollfd pfd = { .fd = fb, .events = POLLIN };

		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
		if (poll(&pfd, 1, 10) == 1)
			got += drain(fb, 5 * FRAME_WIRE / 2 - got < 65536 ?
					 5 * FRAME_WIRE / 2 - got : 65536);
	}
	ck_assert_uint_eq(got, 5 * FRAME_WIRE / 2);
	/* then stops: the sender fills the kernel's buffers and waits */
	for (int i = 0; i < 20; i++)
		ck_assert_int_ge(bl_uring_run(u, 0, 10), 0);
	ck_assert_int_eq(results[NFRAMES - 1].calls, 0);
	close_and_wait(u, c, "the test closes");
	/* everything the kernel took reaches the peer, then its end */
	got += drain(fb, SIZE_MAX);
	whole = got / FRAME_WIRE;
	ck_assert_uint_ge(whole, 2);
	ck_assert_uint_lt(whole, NFRAMES);
	for (size_t i = 0; i < NFRAMES; i++) {
		ck_assert_int_eq(results[i].calls, 1);
		if (i < whole)
			ck_assert_msg(results[i].res == 0,
				      "frame %zu of %zu reached the peer whole "
				      "but heard %d", i + 1, whole,
				      results[i].res);
		else
			ck_assert_msg(results[i].res == -ECANCELED,
				      "frame %zu (%zu reached the peer whole) "
				      "heard %d", i + 1, whole,
				      results[i].res);
	}
	close(fb);
	bl_uring_destroy(u);
}
END_TEST

/*
 * The same with a peer that never read at all: the frames the kernel took
 * whole still hear 0, the others -ECANCELED.
 */
START_TEST(close_with_a_peer_that_never_read)
{
	struct bl_uring *u = tm_uring();
	struct bl_msgr_conn *c;
	size_t got, whole;
	int fb;

	c = queue_frames(u, &fb, 9, 0xa5);
	for (int i = 0; i < 30; i++)
		ck_assert_int_ge(bl_uring_run(u, 0, 10), 0);
	close_and_wait(u, c, NULL);
	got = drain(fb, SIZE_MAX);
	whole = got / FRAME_WIRE;
	ck_assert_uint_lt(whole, NFRAMES);
	for (size_t i = 0; i < NFRAMES; i++) {
		ck_assert_int_eq(results[i].calls, 1);
		ck_assert_int_eq(results[i].res, i < whole ? 0 : -ECANCELED);
	}
	close(fb);
	bl_uring_destroy(u);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		close_reports_each_frame_of_a_batch_by_what_reached_the_kernel,
		close_with_a_peer_that_never_read,
		NULL
	};

	return tm_main("test_msgr_send_results", tests, NULL);
}
