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
#include "uring_int.h"

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
 * Runs the callbacks of the records in flight with @res.  send_busy stays
 * set meanwhile: a frame they send is queued behind the others, and a
 * close they make cancels only the records that were never in flight.
 */
static void pop_records(struct bl_msgr_conn *c, ssize_t res)
{
	c->send_busy = true;
	while (c->rec_inflight) {
		struct bl__msgr_send_rec r = c->recs[c->rec_head];

		c->rec_head = (c->rec_head + 1) & (c->rec_cap - 1);
		c->rec_n--;
		c->rec_inflight--;
		r.cb(r.arg, res < 0 ? (int)res : 0);
	}
	c->send_busy = false;
}

static void send_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct bl_msgr_conn *c = arg;

	(void)data;
	c->depth++;
	if (res >= 0) {
		c->st.frames_sent += c->inflight_frames;
		c->st.bytes_sent += (uint64_t)res + c->inline_bytes;
	}
	c->inflight_frames = 0;
	c->inline_bytes = 0;
	c->out_bytes -= c->inflight_bytes;
	c->inflight_bytes = 0;
	pop_records(c, res);
	if (res < 0) {
		bl__msgr_conn_failed(c, (int)res, "send");
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
	pop_records(c, 0);
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

/* Room for one more callback record.  0 or -ENOMEM. */
static int rec_reserve(struct bl_msgr_conn *c)
{
	struct bl__msgr_send_rec *n;
	unsigned cap;

	if (c->rec_n < c->rec_cap)
		return 0;
	cap = c->rec_cap ? c->rec_cap * 2 : 16;
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
	if (cb) {
		c->recs[(c->rec_head + c->rec_n) & (c->rec_cap - 1)] =
			(struct bl__msgr_send_rec){ cb, arg };
		c->rec_n++;
	}
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
