/* SPDX-License-Identifier: MIT */
/*
 * msgr_send.c - a messenger connection's sending side: queueing frames
 * with their callbacks, handing the queue to the ring as one send, the
 * direct sendmsg() of replies, and the send completions.
 *
 * A connection keeps at most one send in flight: io_uring gives no order
 * between two sends on one socket once either is short or waits for
 * buffer space, so frames queued meanwhile are encoded into the next batch
 * and go out in one sendmsg when the current one completes.  Frames sent
 * while received frames are delivered (replies) go out together when the
 * delivery ends, with a direct non-blocking sendmsg() when nothing is in
 * flight (send_direct()).
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <bufferlist/msgr.h>
#include "uring_msgr.h"

#define DIRECT_SEND_MAX ((size_t)64 << 10) /* sendmsg() from a receive */
#define DIRECT_SEND_IOV 64

static void send_cb(void *arg, ssize_t res, struct bl_list *data);

/* Hands outq to the ring as one send.  0 or -errno (nothing changed). */
static int flush(struct bl_msgr_conn *c)
{
	size_t n = bl_list_length(&c->outq);
	int ret = bl_uring_send(c->u, c->fd, &c->outq, 0, send_cb, c);

	if (ret)
		return ret;
	c->send_busy = true;
	c->inflight_at = c->tx_bytes - c->out_bytes;
	c->inflight_bytes = n;
	c->inflight_frames = c->outq_frames;
	c->outq_frames = 0;
	c->rec_inflight = c->rec_n;
	/*
	 * The send holds its own references.  Splicing everything out keeps
	 * outq's append buffer: the next preambles are written past its
	 * frontier, into bytes the kernel is not reading.  From offset 0
	 * over the whole list, the splice cannot fail.
	 */
	bl_list_splice(&c->outq, 0, n, NULL);
	return 0;
}

/*
 * Runs the callbacks of the records in flight: 0 for the frames that end
 * at or before stream offset @handed (the kernel has them whole), @err
 * for the others.  send_busy stays set meanwhile: a frame they send is
 * queued behind the others, and a close they make cancels only the
 * records that were never in flight.
 */
static void pop_records(struct bl_msgr_conn *c, uint64_t handed, int err)
{
	c->send_busy = true;
	while (c->rec_inflight) {
		struct bl__msgr_send_rec r = c->recs[c->rec_head];

		c->rec_head = (c->rec_head + 1) & (c->rec_cap - 1);
		c->rec_n--;
		c->rec_inflight--;
		r.cb(r.arg, r.end <= handed ? 0 : err);
	}
	c->send_busy = false;
}

/*
 * One send carries a batch of frames; when it fails part way, the frames
 * the kernel took whole before the failure did reach it (and the peer
 * gets them, unless it goes away too): only the others fail, and those
 * with -ECANCELED when the connection was closed first (its shutdown is
 * what ended the send).  The uring layer says how far a failed send got.
 */
static void send_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct bl_msgr_conn *c = arg;
	size_t done = res >= 0 ? (size_t)res : bl__uring_cb_done(c->u);
	/* short without an error: the peer is gone */
	int err = res < 0 ? (int)res : done < c->inflight_bytes ? -EPIPE : 0;

	(void)data;
	c->depth++;
	if (!err) {
		c->st.frames_sent += c->inflight_frames;
		c->st.bytes_sent += (uint64_t)res + c->inline_bytes;
	}
	c->inflight_frames = 0;
	c->inline_bytes = 0;
	c->out_bytes -= c->inflight_bytes;
	c->inflight_bytes = 0;
	pop_records(c, c->inflight_at + done, c->closing ? -ECANCELED : err);
	if (err) {
		bl__msgr_conn_failed(c, err, "send");
	} else if (!c->closing && !c->send_busy && bl_list_length(&c->outq)) {
		int ret = flush(c);

		if (ret)
			bl__msgr_conn_end(c, ret, true,
					  "cannot start a send: %s",
					  strerror(-ret));
	}
	if (c->paused)
		c->rx_resume(c);	/* the queue drained: read again */
	bl__msgr_eof_check(c);
	c->depth--;
	bl__msgr_maybe_finish(c);
}

/*
 * Replies go out directly.  Frames sent while received frames are being
 * delivered (a server's replies, a client's next request) are not handed
 * to the ring one by one: they queue, and when the delivery ends, the
 * batch goes out with one non-blocking sendmsg() - one system call, where
 * a ring send costs a request, a completion to reap and a callback, and
 * on a request/response connection the completion is what the thread
 * would otherwise wait for before it sleeps on the next receive.  What
 * the socket does not take at once (a full send buffer: EAGAIN or a
 * short count), and any error, goes to the ring as before, which reports
 * it.  Nothing else is in flight when this runs, so the order of the
 * bytes on the wire is the order of the sends; and the bytes that
 * sendmsg() took are in the kernel when it returns, so that part holds no
 * references.  Only small batches go this way (below the zero-copy
 * threshold, DIRECT_SEND_MAX): for large ones the system call is the
 * smaller part of the cost, and zero copy needs the ring.
 * Return: true when the whole batch went out (its callbacks have run).
 */
static bool send_direct(struct bl_msgr_conn *c)
{
	struct iovec iov[DIRECT_SEND_IOV];
	size_t n = bl_list_length(&c->outq);
	struct msghdr mh;
	ssize_t r;
	int k;

	if (n > DIRECT_SEND_MAX || n >= bl__uring_zc_threshold(c->u))
		return false;
	k = bl_list_to_iovec(&c->outq, 0, iov, DIRECT_SEND_IOV);
	if (k <= 0)
		return false;
	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)k;
	do {
		r = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
	} while (r < 0 && errno == EINTR);
	c->st.direct_sends++;
	if (r <= 0)
		return false;
	bl_uring_expect_answer(c->u);	/* the peer's next frame */
	/* from offset 0: cannot fail */
	bl_list_splice(&c->outq, 0, (size_t)r, NULL);
	c->out_bytes -= (size_t)r;
	if ((size_t)r < n) {
		c->inline_bytes = (size_t)r;
		return false;
	}
	c->st.frames_sent += c->outq_frames;
	c->st.bytes_sent += n;
	c->outq_frames = 0;
	c->rec_inflight = c->rec_n;
	pop_records(c, UINT64_MAX, 0);
	return true;
}

void bl__msgr_rx_end(struct bl_msgr_conn *c)
{
	int ret;

	c->in_rx = false;
	if (!c->flush_due)
		return;
	c->flush_due = false;
	if (c->closing || c->send_busy || !bl_list_length(&c->outq))
		return;
	if (send_direct(c) &&
	    (c->closing || c->send_busy || !bl_list_length(&c->outq)))
		return;
	ret = flush(c);
	if (ret)
		bl__msgr_conn_end(c, ret, true, "cannot start a send: %s",
				  strerror(-ret));
}

/* Room for @need more callback records.  0 or -ENOMEM. */
static int rec_reserve_n(struct bl_msgr_conn *c, unsigned need)
{
	struct bl__msgr_send_rec *n;
	unsigned cap;

	if (c->rec_cap - c->rec_n >= need)
		return 0;
	cap = c->rec_cap ? c->rec_cap * 2 : 16;
	while (cap - c->rec_n < need)
		cap *= 2;
	n = bl__alloc(c->al, cap * sizeof(*n),
		      _Alignof(struct bl__msgr_send_rec));
	if (!n)
		return -ENOMEM;
	for (unsigned i = 0; i < c->rec_n; i++)
		n[i] = c->recs[(c->rec_head + i) & (c->rec_cap - 1)];
	if (c->recs)
		bl__free(c->al, c->recs, c->rec_cap * sizeof(*c->recs),
			 _Alignof(struct bl__msgr_send_rec));
	c->recs = n;
	c->rec_cap = cap;
	c->rec_head = 0;
	return 0;
}

static int rec_reserve(struct bl_msgr_conn *c)
{
	return rec_reserve_n(c, 1);
}

/* @end: where the frame (or piece) ends in the stream, as rec's end. */
static void rec_push(struct bl_msgr_conn *c, bl_msgr_send_fn cb, void *arg,
		     uint64_t end)
{
	c->recs[(c->rec_head + c->rec_n) & (c->rec_cap - 1)] =
		(struct bl__msgr_send_rec){ cb, arg, end };
	c->rec_n++;
}

/*
 * A frame sent while a stream is open: encoded into held, to follow the
 * stream's last piece.  Its bytes count as queued from now on.
 */
static int send_held(struct bl_msgr_conn *c, uint16_t type,
		     const struct bl_list *payload, unsigned flags,
		     bl_msgr_send_fn cb, void *arg)
{
	size_t mark = bl_list_length(&c->held), n;
	int ret;

	if (cb && c->hrec_n == c->hrec_cap) {
		unsigned cap = c->hrec_cap ? c->hrec_cap * 2 : 8;
		struct bl__msgr_send_rec *r = bl__alloc(c->al, cap * sizeof(*r),
					_Alignof(struct bl__msgr_send_rec));

		if (!r)
			return -ENOMEM;
		if (c->hrec_n)
			memcpy(r, c->hrecs, c->hrec_n * sizeof(*r));
		if (c->hrecs)
			bl__free(c->al, c->hrecs, c->hrec_cap * sizeof(*r),
				 _Alignof(struct bl__msgr_send_rec));
		c->hrecs = r;
		c->hrec_cap = cap;
	}
	ret = bl_msgr_encode(&c->held, type, c->tx_seq + 1, payload, flags);
	if (ret)
		return ret;
	c->tx_seq++;
	c->held_frames++;
	n = bl_list_length(&c->held) - mark;
	c->out_bytes += n;
	c->tx_bytes += n;
	if (c->in_rx || c->unanswered)
		c->held_reply = true;
	/* its end within held, until stream_done() places held */
	if (cb)
		c->hrecs[c->hrec_n++] = (struct bl__msgr_send_rec){
			cb, arg, bl_list_length(&c->held) };
	if (c->unanswered)
		c->unanswered--;
	return 0;
}

/* Hands outq to the ring now, or when the delivery under way ends. */
static int kick(struct bl_msgr_conn *c)
{
	if (c->send_busy || !bl_list_length(&c->outq))
		return 0;
	if (c->in_rx) {
		c->flush_due = true;	/* bl__msgr_rx_end() sends the batch */
		return 0;
	}
	return flush(c);
}

/*
 * The stream's last byte is queued: the frames held behind it join
 * outq, their callbacks the FIFO.  Nothing can be undone by now, so a
 * failure (out of memory) ends the connection.
 */
static void stream_done(struct bl_msgr_conn *c)
{
	uint64_t held_at;
	int ret = 0;

	c->streaming = false;
	if (!c->held_frames)
		return;
	/* held holds the last bytes of the stream, after the stream's */
	held_at = c->tx_bytes - bl_list_length(&c->held);
	ret = rec_reserve_n(c, c->hrec_n);
	if (ret == 0)
		ret = bl_list_claim_append(&c->outq, &c->held);
	if (ret) {
		bl__msgr_conn_end(c, ret, true, "cannot queue the frames held "
				  "behind a stream: %s", strerror(-ret));
		return;
	}
	for (unsigned i = 0; i < c->hrec_n; i++)
		rec_push(c, c->hrecs[i].cb, c->hrecs[i].arg,
			 held_at + c->hrecs[i].end);
	c->hrec_n = 0;
	c->outq_frames += c->held_frames;
	c->held_frames = 0;
	if (c->held_reply)
		c->reply_end = c->tx_bytes;
	c->held_reply = false;
}

int bl_msgr_stream_begin(struct bl_msgr_conn *c, uint16_t type, size_t len)
{
	unsigned char pre[BL_MSGR_PREAMBLE];
	int ret;

	if (!c)
		return -EINVAL;
	if (c->closing)
		return -EPIPE;
	if (c->streaming)
		return -EBUSY;
	if (!len)
		return -EINVAL;
	if (len > BL_MSGR_PAYLOAD_LIMIT)
		return -E2BIG;
	bl__msgr_preamble(pre, type, c->tx_seq + 1, (uint32_t)len);
	/* queued, not sent: it goes out with the first piece */
	ret = bl_list_append(&c->outq, pre, sizeof(pre));
	if (ret)
		return ret;
	c->tx_seq++;
	c->out_bytes += sizeof(pre);
	c->tx_bytes += sizeof(pre);
	c->stream_reply = c->in_rx || c->unanswered;
	if (c->stream_reply)
		c->reply_end = c->tx_bytes;
	c->streaming = true;
	c->stream_left = len;
	c->stream_crc = BL_MSGR_CRC_SEED;
	if (c->unanswered)
		c->unanswered--;
	return 0;
}

int bl_msgr_stream_add(struct bl_msgr_conn *c, const struct bl_list *piece,
		       bl_msgr_send_fn cb, void *arg)
{
	size_t plen = piece ? bl_list_length(piece) : 0;
	uint64_t reply_end;
	size_t mark, n;
	uint32_t crc;
	bool last;
	int ret;

	if (!c)
		return -EINVAL;
	if (c->closing)
		return -EPIPE;
	if (!c->streaming || !plen || plen > c->stream_left)
		return -EINVAL;
	if (cb && rec_reserve(c))
		return -ENOMEM;
	mark = bl_list_length(&c->outq);
	last = plen == c->stream_left;
	/* crc32c without inversion continues from its last value */
	crc = bl_list_crc32c(piece, c->stream_crc);
	ret = bl_list_append_list(&c->outq, piece);	/* shared */
	if (ret == 0 && last) {
		unsigned char tr[BL_MSGR_TRAILER];

		tr[0] = (unsigned char)crc;
		tr[1] = (unsigned char)(crc >> 8);
		tr[2] = (unsigned char)(crc >> 16);
		tr[3] = (unsigned char)(crc >> 24);
		ret = bl_list_append(&c->outq, tr, sizeof(tr));
	}
	if (ret) {
		bl_list_splice(&c->outq, mark, bl_list_length(&c->outq) - mark,
			       NULL);
		return ret;
	}
	n = bl_list_length(&c->outq) - mark;
	reply_end = c->reply_end;
	c->out_bytes += n;
	c->tx_bytes += n;
	if (c->stream_reply)
		c->reply_end = c->tx_bytes;
	/* frames held meanwhile follow it on the wire */
	if (cb)
		rec_push(c, cb, arg, c->tx_bytes - bl_list_length(&c->held));
	if (last)
		c->outq_frames++;
	if (c->in_rx) {
		c->flush_due = true;	/* bl__msgr_rx_end() sends the batch */
	} else if (!c->send_busy && (ret = flush(c))) {
		/* nothing was in flight: back to what it was before @piece */
		c->out_bytes -= n;
		c->tx_bytes -= n;
		c->reply_end = reply_end;
		if (cb)
			c->rec_n--;
		if (last)
			c->outq_frames--;
		bl_list_splice(&c->outq, mark, n, NULL);
		return ret;
	}
	c->stream_left -= plen;
	c->stream_crc = crc;
	if (last) {
		stream_done(c);
		if (!c->closing && (ret = kick(c)))
			bl__msgr_conn_end(c, ret, true, "cannot start a send: %s",
					  strerror(-ret));
	}
	return 0;
}

int bl_msgr_send(struct bl_msgr_conn *c, uint16_t type,
		 const struct bl_list *payload, bl_msgr_send_fn cb, void *arg)
{
	size_t plen = payload ? bl_list_length(payload) : 0;
	size_t mark = bl_list_length(&c->outq);
	uint64_t reply_end = c->reply_end;
	unsigned flags = 0;
	size_t n;
	int ret;

	if (c->closing)
		return -EPIPE;
	if (plen > BL_MSGR_PAYLOAD_LIMIT)
		return -E2BIG;
	if (cb && rec_reserve(c))
		return -ENOMEM;
	if (plen && plen < c->o.copy_below)
		flags |= BL_MSGR_ENC_COPY;
	if (c->streaming)	/* after the stream's last piece */
		return send_held(c, type, payload, flags, cb, arg);
	ret = bl_msgr_encode(&c->outq, type, c->tx_seq + 1, payload, flags);
	if (ret)
		return ret;
	c->tx_seq++;
	c->outq_frames++;
	n = bl_list_length(&c->outq) - mark;
	c->out_bytes += n;
	c->tx_bytes += n;
	/* a reply: sent from on_frame, or answering a request */
	if (c->in_rx || c->unanswered)
		c->reply_end = c->tx_bytes;
	if (cb)
		rec_push(c, cb, arg, c->tx_bytes);
	if (c->send_busy)
		goto answered;
	if (c->in_rx) {
		c->flush_due = true;	/* bl__msgr_rx_end() sends the batch */
		goto answered;
	}
	ret = flush(c);
	if (ret) {
		/* nothing was in flight, so outq held only this frame */
		c->out_bytes -= n;
		c->tx_bytes -= n;
		c->reply_end = reply_end;
		bl_list_splice(&c->outq, mark, bl_list_length(&c->outq) - mark,
			       NULL);
		c->tx_seq--;
		c->outq_frames--;
		if (cb)
			c->rec_n--;
		return ret;
	}
answered:
	/*
	 * A connection this answer brings under max_inflight resumes from a
	 * completion of its own (this frame's send, or the one in flight),
	 * or from the delivery under way: never from inside this call.
	 */
	if (c->unanswered)
		c->unanswered--;
	return 0;
}
