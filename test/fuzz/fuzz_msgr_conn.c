/* SPDX-License-Identifier: MIT */
/*
 * fuzz_msgr_conn.c - a messenger connection (bl_msgr_conn) serving a peer
 * that the input scripts: a request/reply server with small backpressure
 * limits (max_out_bytes, max_inflight), a tiny receive ring, direct and
 * aligned reads of larger payloads, and a peer that writes its stream in
 * input-sized chunks, reads the replies only now and then, and may shut
 * its sending side down part way.  Runs on the blocking back end of
 * bl_uring (deterministic: bl_uring_run with min_complete 0 never waits),
 * over a socketpair with small socket buffers, so that replies pile up.
 *
 * Input layout:
 *   byte 0   max_out_bytes: 256 + b * 32
 *   byte 1   bits 0-1 max_inflight (3: 2); bit 2 align_data; bit 3 detach;
 *            bits 4-5 copy_below (default, 1, 64, 4096); bit 6 replies
 *            deferred (sent by the harness between rounds, max_inflight
 *            at least 1); bit 7 the peer shuts down its sending side
 *   byte 2   max_payload: 16 + b * 16
 *   byte 3   bits 0-1 nbufs (1 << k); bits 2-4 buf_size (32 << k);
 *            bits 5-7 direct_min (never, default, 32 ... 1024)
 *   byte 4   reply length: payload length * (b & 15) / 4 + (b >> 4) * 64,
 *            at most REPLY_CAP; the reply shares the request's payload
 *            when it fits in it
 *   byte 5   where the peer shuts down: b * stream length / 255
 *   byte 6   in which rounds (bit round % 8) the peer reads replies and
 *            (bit (round + 4) % 8) the harness sends deferred replies
 *   byte 7   low 4 bits: number of cut bytes; bit 4: build mode (below)
 *   cuts     each the size of the next write minus 1, in turn
 *   rest     raw mode: the stream itself.  Build mode: frame descriptors
 *            (type 2, flags 2, seq 1, length 1, corruption 1, payload),
 *            encoded with correct crcs as fuzz_msgr.c does.
 *
 * Checks: every frame delivered is the next frame of the stream the peer
 * wrote (bl_msgr_parse over it, with the connection's max_payload), in
 * order, with its payload; a frame is delivered only under the limits
 * (out_bytes below max_out_bytes unless it came by a direct read,
 * unanswered within max_inflight); out_bytes never exceeds max_out_bytes
 * plus the replies that may be owed; the bytes the peer reads are the
 * replies sent, encoded, in order; the connection closes only for a
 * reason the stream gives (a malformed frame at the right place, the
 * peer's shutdown between frames or in one); once the peer wrote all it
 * had and reads everything, the connection delivers every complete frame
 * (and, after a shutdown, closes by itself); the socket is closed when
 * on_close has run, and no raw outlives the input (LeakSanitizer checks
 * the rest).
 *
 * Defines LLVMFuzzerTestOneInput only (see fuzz_list.c).
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bufferlist.h>
#include "msgr_frames.h"
#include "fuzz_util.h"

#define MAXSTREAM (1u << 16)
#define MAXFRAMES (MAXSTREAM / BL_MSGR_OVERHEAD + 1)
#define REPLY_CAP 2048
#define REPLY_MAX (BL_MSGR_OVERHEAD + REPLY_CAP)
#define MAXDEFER 4
#define MAXROUNDS 16384
#define QUIET_ROUNDS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A frame of the stream, as bl_msgr_parse() sees it. */
struct want {
	uint16_t type, flags;
	uint64_t seq;
	size_t off, len;	/* payload bytes in the stream */
	size_t end;		/* the stream offset after the frame */
};

struct deferred {
	struct bl_list payload;
};

struct h {
	const uint8_t *stream;
	size_t n;
	struct want *w;		/* the frames of the whole stream */
	unsigned nw;
	size_t max_payload, max_out;
	unsigned max_inflight;	/* as the connection counts it */
	unsigned owed;		/* replies that may be owed at once */
	unsigned reply_k;
	bool defer;
	struct bl_msgr_conn *c;
	unsigned delivered;
	uint64_t direct_seen;
	/* the replies sent, encoded, and how far the peer read them */
	uint8_t *exp;
	size_t exp_len, exp_cap, rd;
	uint64_t nreplies;
	struct deferred q[MAXDEFER];
	unsigned nq;
	/* on_close */
	bool closed;
	int err;
};

static void exp_add(struct h *h, uint16_t type, const struct bl_list *pl)
{
	struct bl_list enc;
	size_t n;

	bl_list_init(&enc);
	CHECK(bl_msgr_encode(&enc, type, ++h->nreplies, pl, 0) == 0);
	n = bl_list_length(&enc);
	if (h->exp_len + n > h->exp_cap) {
		size_t cap = h->exp_cap ? h->exp_cap : 4096;

		while (cap < h->exp_len + n)
			cap *= 2;
		h->exp = realloc(h->exp, cap);
		CHECK(h->exp);
		h->exp_cap = cap;
	}
	CHECK(bl_list_copy_out(&enc, 0, n, h->exp + h->exp_len) == 0);
	h->exp_len += n;
	bl_list_clear(&enc);
}

static size_t reply_len(const struct h *h, size_t plen)
{
	size_t n = plen * (h->reply_k & 15) / 4 + (size_t)(h->reply_k >> 4) * 64;

	return n < REPLY_CAP ? n : REPLY_CAP;
}

/* The reply to a request with payload @req: shared when it fits in it. */
static void make_reply(const struct h *h, const struct bl_list *req,
		       struct bl_list *out)
{
	size_t plen = bl_list_length(req), n = reply_len(h, plen);

	bl_list_init(out);
	if (n <= plen) {
		CHECK(bl_list_substr_of(out, req, plen - n, n) == 0);
		return;
	}
	{
		uint8_t b[REPLY_CAP];

		for (size_t i = 0; i < n; i++)
			b[i] = (uint8_t)(i * 31 + plen);
		CHECK(bl_list_append(out, b, n) == 0);
	}
}

static void out_bound(const struct h *h, const struct bl_msgr_conn *c)
{
	CHECK(c->out_bytes <= h->max_out - 1 + (size_t)h->owed * REPLY_MAX);
}

static int send_reply(struct h *h, struct bl_msgr_conn *c,
		      const struct bl_list *pl)
{
	uint16_t type = (uint16_t)(0x8000u | (h->nreplies & 0x7fff));
	int ret = bl_msgr_send(c, type, pl, NULL, NULL);

	CHECK(ret == 0 || ret == -EPIPE);
	if (!ret)
		exp_add(h, type, pl);
	return ret;
}

static void on_frame(void *arg, struct bl_msgr_conn *c,
		     struct bl_msgr_frame *f)
{
	struct h *h = arg;
	const struct want *w;
	struct bl_msgr_conn_stats st;
	uint8_t *flat;

	CHECK(c == h->c && !h->closed);
	CHECK(h->delivered < h->nw);
	w = &h->w[h->delivered++];
	CHECK(f->type == w->type && f->flags == w->flags &&
	      f->seq == w->seq);
	CHECK(bl_list_length(&f->payload) == w->len);
	flat = malloc(w->len + 1);
	CHECK(flat);
	CHECK(bl_list_copy_out(&f->payload, 0, w->len, flat) == 0);
	CHECK(!memcmp(flat, h->stream + w->off, w->len));
	free(flat);

	/* delivered under the limits (a direct read ends regardless) */
	bl_msgr_conn_stats(c, &st);
	CHECK(st.frames_received == h->delivered);
	if (st.direct_frames == h->direct_seen)
		CHECK(c->out_bytes < h->max_out);
	h->direct_seen = st.direct_frames;
	if (h->max_inflight)
		CHECK(c->unanswered <= h->max_inflight);

	if (h->defer) {
		struct bl_list r;

		CHECK(h->nq < MAXDEFER);
		make_reply(h, &f->payload, &r);
		bl_list_init(&h->q[h->nq].payload);
		bl_list_swap(&h->q[h->nq].payload, &r);
		h->nq++;
	} else {
		struct bl_list r;

		make_reply(h, &f->payload, &r);
		send_reply(h, c, &r);
		bl_list_clear(&r);
	}
	out_bound(h, c);
}

static void on_close(void *arg, struct bl_msgr_conn *c, int err,
		     const char *reason)
{
	struct h *h = arg;

	CHECK(c == h->c && !h->closed);
	CHECK(reason && *reason);
	h->closed = true;
	h->err = err;
	h->c = NULL;
}

static void quiet_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	(void)arg;
	(void)c;
	(void)msg;
}

static void send_deferred(struct h *h)
{
	unsigned i;

	for (i = 0; i < h->nq && h->c; i++)
		send_reply(h, h->c, &h->q[i].payload);
	for (i = 0; i < h->nq; i++)
		bl_list_clear(&h->q[i].payload);
	h->nq = 0;
}

/* The peer reads what is there; it must be the replies, in order. */
static size_t peer_read(struct h *h, int fd)
{
	uint8_t buf[4096];
	size_t got = 0;
	ssize_t r;

	while ((r = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		CHECK(h->rd + (size_t)r <= h->exp_len);
		CHECK(!memcmp(buf, h->exp + h->rd, (size_t)r));
		h->rd += (size_t)r;
		got += (size_t)r;
	}
	return got;
}

/* bl_msgr_parse() over stream[from, to): its result, and the frame's end. */
static int parse_at(const struct h *h, size_t from, size_t to, size_t *end)
{
	struct bl_list l;
	struct bl_msgr_frame f;
	int ret;

	bl_list_init(&l);
	CHECK(bl_list_append(&l, h->stream + from, to - from) == 0);
	ret = bl_msgr_parse(&l, &f, h->max_payload);
	if (ret == 1) {
		*end = to - bl_list_length(&l);
		bl_msgr_frame_release(&f);
	}
	bl_list_clear(&l);
	return ret;
}

/* The frames of the whole stream, up to the first that is not whole. */
static void parse_all(struct h *h)
{
	struct bl_list l;
	struct bl_msgr_frame f;

	h->w = malloc(MAXFRAMES * sizeof(*h->w));
	CHECK(h->w);
	h->nw = 0;
	bl_list_init(&l);
	CHECK(bl_list_append(&l, h->stream, h->n) == 0);
	while (bl_msgr_parse(&l, &f, h->max_payload) == 1) {
		struct want *w = &h->w[h->nw++];

		w->end = h->n - bl_list_length(&l);
		w->type = f.type;
		w->flags = f.flags;
		w->seq = f.seq;
		w->len = bl_list_length(&f.payload);
		w->off = w->end - BL_MSGR_TRAILER - w->len;
		bl_msgr_frame_release(&f);
	}
	bl_list_clear(&l);
}

/* Frames complete within the first @n bytes. */
static unsigned frames_in(const struct h *h, size_t n)
{
	unsigned k = 0;

	while (k < h->nw && h->w[k].end <= n)
		k++;
	return k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t direct_tab[8] = { SIZE_MAX, 0, 32, 64, 128, 256,
					      512, 1024 };
	static const size_t copy_tab[4] = { 0, 1, 64, 4096 };
	static uint8_t stream[MAXSTREAM];
	struct bl_uring_params up = { .force_blocking = true };
	struct bl_msgr_conn_opts o;
	struct bl_stats s0, s1;
	struct h h;
	const uint8_t *cuts, *d;
	size_t ncut, n, limit, wr = 0, seg = 0;
	bool shut_wanted, shut = false;
	struct bl_uring *u;
	int sv[2], quiet = 0, blocked = 0, cfd;
	size_t scale;
	unsigned round;

	if (size < 8)
		return 0;
	ncut = data[7] & 15;
	if (size < 8 + ncut)
		return 0;
	cuts = data + 8;
	d = cuts + ncut;
	n = size - 8 - ncut;
	n = stream_of(d, n, data[7] & 16, stream, MAXSTREAM);

	memset(&h, 0, sizeof(h));
	h.stream = stream;
	h.n = n;
	h.max_out = 256 + (size_t)data[0] * 32;
	h.max_inflight = data[1] & 3;
	if (h.max_inflight == 3)
		h.max_inflight = 2;
	h.defer = data[1] & 64;
	if (h.defer && !h.max_inflight)
		h.max_inflight = 1;	/* else nothing would count as a reply */
	h.owed = h.defer ? h.max_inflight + 1 : 1;
	h.max_payload = 16 + (size_t)data[2] * 16;
	h.reply_k = data[4];
	shut_wanted = data[1] & 128;
	limit = shut_wanted ? (size_t)data[5] * n / 255 : n;
	parse_all(&h);
	/* a long stream is written in coarser chunks: rounds stay bounded */
	scale = 1 + n / 2048;

	memset(&o, 0, sizeof(o));
	o.on_frame = on_frame;
	o.on_close = on_close;
	o.arg = &h;
	o.max_payload = h.max_payload;
	o.nbufs = 1u << (data[3] & 3);
	o.buf_size = (size_t)32 << ((data[3] >> 2) & 7);
	o.direct_min = direct_tab[data[3] >> 5];
	o.align_data = data[1] & 4;
	o.align_min = 64;
	o.detach = data[1] & 8;
	o.copy_below = copy_tab[(data[1] >> 4) & 3];
	o.log = quiet_log;
	o.max_out_bytes = h.max_out;
	o.max_inflight = h.max_inflight;

	bl_stats_thread(&s0);
	u = bl_uring_create(&up);
	CHECK(u);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	{
		int sz = 4096;

		for (int i = 0; i < 2; i++) {
			setsockopt(sv[i], SOL_SOCKET, SO_SNDBUF, &sz,
				   sizeof(sz));
			setsockopt(sv[i], SOL_SOCKET, SO_RCVBUF, &sz,
				   sizeof(sz));
		}
	}
	CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
	cfd = sv[0];
	h.c = bl_msgr_conn_new(u, cfd, &o);
	CHECK(h.c);

	for (round = 0; round < MAXROUNDS; round++) {
		bool drain = wr == limit;
		unsigned bit = data[6] >> (round & 7) & 1;
		unsigned dbit = data[6] >> ((round + 4) & 7) & 1;
		size_t moved = 0;
		int ran;

		if (wr < limit) {
			size_t sl = ncut ? ((size_t)cuts[seg++ % ncut] + 1) *
					   scale : limit - wr;
			ssize_t r;

			if (sl > limit - wr)
				sl = limit - wr;
			r = send(sv[1], stream + wr, sl,
				 MSG_DONTWAIT | MSG_NOSIGNAL);
			if (r > 0) {
				wr += (size_t)r;
				moved += (size_t)r;
				blocked = 0;
			} else {
				/* full; or the connection is closing */
				CHECK(r < 0);
				CHECK(errno == EAGAIN ||
				      ((errno == EPIPE || errno == ECONNRESET)
				       && h.c && h.c->closing));
				blocked++;
			}
		}
		if (wr == limit && shut_wanted && !shut) {
			CHECK(shutdown(sv[1], SHUT_WR) == 0);
			shut = true;
		}
		/* a peer that cannot write gives in and reads, and the
		 * application answers what it holds */
		if (bit || drain || blocked >= QUIET_ROUNDS)
			moved += peer_read(&h, sv[1]);
		if ((dbit || drain || blocked >= QUIET_ROUNDS) && h.nq) {
			moved++;
			send_deferred(&h);
		}
		ran = bl_uring_run(u, 0, 0);
		CHECK(ran >= 0);
		if (h.c)
			out_bound(&h, h.c);
		if (h.closed)
			break;
		quiet = drain && !ran && !moved ? quiet + 1 : 0;
		if (quiet >= QUIET_ROUNDS)
			break;
	}
	CHECK(round < MAXROUNDS);

	if (h.closed) {
		size_t from = h.delivered ? h.w[h.delivered - 1].end : 0, end;
		int want = parse_at(&h, from, wr, &end);

		/* closed by what the stream says, at the right frame */
		if (h.err == 0) {
			CHECK(shut && wr == limit && from == wr);
		} else if (h.err == -EPIPE) {
			CHECK(shut && wr == limit && from < wr && want == 0);
		} else {
			CHECK(h.err == -EBADMSG || h.err == -E2BIG);
			CHECK(want == h.err);
		}
		/* everything sent before the close is readable */
		while (peer_read(&h, sv[1]))
			;
		if (h.err == 0)
			CHECK(h.rd == h.exp_len);
	} else {
		size_t end;

		/* quiet with all written and read: every whole frame is in */
		CHECK(h.delivered == frames_in(&h, wr));
		CHECK(!shut);
		CHECK(h.rd == h.exp_len);
		if (h.delivered < h.nw || wr < n) {
			size_t from = h.delivered ? h.w[h.delivered - 1].end
						  : 0;

			CHECK(parse_at(&h, from, wr, &end) == 0);
		}
		bl_msgr_conn_close(h.c, 0, NULL);
		for (round = 0; round < MAXROUNDS && !h.closed; round++)
			CHECK(bl_uring_run(u, 0, 0) >= 0);
		CHECK(h.closed && h.err == 0);
	}
	send_deferred(&h);
	/* the connection closed its socket */
	CHECK(fcntl(cfd, F_GETFD) == -1 && errno == EBADF);
	close(sv[1]);
	bl_uring_destroy(u);
	bl_stats_thread(&s1);
	CHECK(s1.raws_created - s0.raws_created ==
	      s1.raws_freed - s0.raws_freed);
	free(h.exp);
	free(h.w);
	return 0;
}
