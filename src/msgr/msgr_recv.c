/* SPDX-License-Identifier: MIT */
/*
 * msgr_recv.c - a messenger connection's receiving side: arming receives,
 * parsing what arrives into frames and delivering them, reading large
 * payloads straight into raws of their own (aligned on request), and what
 * ends a receive (peer closed, ring dry, errors).
 *
 * Receiving is by one multishot pooled receive: one request armed for the
 * life of the connection, no re-arming per chunk.  A large payload is
 * read straight into a raw of its own instead: its preamble stops the
 * multishot receive (bl__uring_recv_stop(); the kernel hands over every
 * chunk it took before the final completion, the rest stays in the
 * socket), and the read takes the stream over.  While large payloads keep
 * coming, receives are armed one-shot (ONESHOT_AFTER_READ), so that each
 * preamble finds nothing to stop.  Aligning connections (align_data)
 * always use one-shot receives, which bounds what is copied to align a
 * payload to one receive buffer.
 *
 * Busy polling connections (busy_poll_us) use one-shot receives too, and
 * read the socket themselves between them (poll_inline()): a receive is
 * armed in the ring only when the socket is empty and, if an answer is
 * due, stayed empty for busy_poll_us (or other completions wait).
 * At most one receive - the ring's, a direct read, or our own recv(2) -
 * is ever outstanding on a connection, so bytes arrive in order.
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>
#include <sched.h>
#include <sys/socket.h>
#include <bufferlist/msgr.h>
#include <bufferlist/crc32c.h>
#include "endian_int.h"
#include "uring_msgr.h"

#define ONESHOT_AFTER_READ 8	/* see bl__msgr_start_recv() */
/*
 * A direct read's pieces: the first asks for at most PIECE_FIRST bytes,
 * each next one for twice as many, up to PIECE_MAX.  A preamble costs
 * nothing until its payload arrives (a peer that claims the largest
 * payload and stops holds PIECE_FIRST, not the claim), memory never runs
 * more than one piece ahead of the bytes received, and a payload up to
 * PIECE_FIRST (the common large message) is still one read into one raw.
 * All are multiples of 1 MiB, the largest opts.align, so an aligned
 * payload's pieces keep every segment but the last a multiple of it.  A
 * rest that fits a free buffer of the ring's registered pool is read in
 * one piece, into that buffer:
 * its memory exists already, so growing the read bounds nothing, and each
 * further piece would cost a read and hold a buffer of its own.
 */
#define PIECE_FIRST ((size_t)1 << 20)
#define PIECE_MAX ((size_t)64 << 20)

static void arm(struct bl_msgr_conn *c);
static void process(struct bl_msgr_conn *c);
static bool start_direct(struct bl_msgr_conn *c);

static void deliver(struct bl_msgr_conn *c, struct bl_msgr_frame *f,
		    size_t wire)
{
	/* on_frame holds the payload from here on: the budget is free, for
	 * a frame that went direct and one that came whole meanwhile */
	bl__msgr_rx_release(c);
	c->st.frames_received++;
	c->st.bytes_received += wire;
	if (c->o.max_inflight)
		c->unanswered++;	/* until a frame sent answers it */
	if (c->o.detach) {
		/* on failure the frame keeps its ring slices: the ring-dry
		 * path still guarantees progress */
		ssize_t n = bl_list_detach_pooled(&f->payload);

		if (n > 0)
			c->st.detached += (uint64_t)n;
	}
	if (c->o.on_frame)
		c->o.on_frame(c->o.arg, c, f);
	bl_msgr_frame_release(f);
}

static void recv_ended(struct bl_msgr_conn *c, ssize_t res)
{
	if (c->closing)
		return;
	if (res == 0) {
		/* perhaps only its sending side (shutdown(SHUT_WR)) */
		c->rd_eof = true;
		bl__msgr_eof_check(c);
		return;
	}
	if (res == -ENOBUFS) {
		c->st.ring_dry++;
		/*
		 * The kernel found the ring empty.  If buffers came back
		 * since (the application released frames), simply receive
		 * again.  If not, this connection's own incomplete frame may
		 * be what holds them, and nothing would ever give them back:
		 * copy it out, and take the next receive into a fresh raw so
		 * that progress never waits on the ring.
		 */
		if (!bl_uring_bufring_available(c->br)) {
			ssize_t n = bl_list_detach_pooled(&c->in);

			if (n > 0)
				c->st.detached += (uint64_t)n;
			c->dry = true;
		}
		return;
	}
	bl__msgr_conn_failed(c, (int)res, "receive");
}

static void got_data(struct bl_msgr_conn *c, struct bl_list *data)
{
	if (c->closing)
		return;
	if (bl_list_claim_append(&c->in, data)) {
		bl__msgr_conn_end(c, -ENOMEM, true, "out of memory receiving");
		return;
	}
	process(c);
}

static void pooled_cb(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	struct bl_msgr_conn *c = arg;

	c->recv_busy = more;
	c->depth++;
	if (res > 0) {
		c->rx_raw += (uint64_t)res;
		c->in_rx = true;
		got_data(c, data);
		bl__msgr_rx_end(c);
	} else if (!(res == -ECANCELED && c->stopping)) {
		recv_ended(c, res);
	}
	if (!more && c->stopping) {
		/*
		 * The receive is over: a read takes the large frame.  Through
		 * process(), which checks the preamble first: the receive may
		 * have ended without data (-ECANCELED), after chunks that
		 * backpressure left unparsed, and start_direct() trusts the
		 * preamble it is given.
		 */
		c->stopping = false;
		if (!c->closing && !c->read_busy &&
		    bl_list_length(&c->in) >= BL_MSGR_PREAMBLE) {
			c->in_rx = true;
			process(c);
			bl__msgr_rx_end(c);
		}
	}
	c->depth--;
	bl__msgr_rx_resume(c);
	bl__msgr_maybe_finish(c);
}

static void plain_cb(void *arg, ssize_t res, struct bl_list *data)
{
	pooled_cb(arg, res, data, false);
}

int bl__msgr_start_recv(struct bl_msgr_conn *c)
{
	int ret;

	if (c->dry || !bl_uring_bufring_available(c->br)) {
		ret = bl_uring_recv(c->u, c->fd, c->o.buf_size, plain_cb, c);
		if (!ret)
			c->dry = false;
	} else {
		ret = bl_uring_recv_pooled(c->u, c->fd, c->br,
					   c->multishot && !c->oneshot_left,
					   pooled_cb, c);
		if (c->oneshot_left)
			c->oneshot_left--;
	}
	if (!ret)
		c->recv_busy = true;
	return ret;
}

/*
 * Backpressure: no receive is armed and no frame delivered until the
 * connection is under its limits again (bl__msgr_rx_resume).  A multishot
 * receive is stopped; the chunks the kernel already took still arrive and
 * wait in c->in with the rest.
 */
static void pause_rx(struct bl_msgr_conn *c)
{
	if (!c->paused) {
		c->paused = true;
		c->st.throttled++;
	}
	if (c->recv_busy && !c->stopping && !bl__uring_recv_stop(c->u, c->fd))
		c->stopping = true;
}

/*
 * Every caller runs bl__msgr_maybe_finish() after: arm() and the eof check
 * may end the connection (a receive that cannot start, a busy poll's read
 * that fails), and @c must outlive what follows them here.
 */
void bl__msgr_rx_resume(struct bl_msgr_conn *c)
{
	c->depth++;
	while (c->paused && !c->closing && !bl__msgr_throttled(c)) {
		c->paused = false;
		c->in_rx = true;
		process(c);
		bl__msgr_rx_end(c);
	}
	arm(c);
	bl__msgr_eof_check(c);
	c->depth--;
}

/* -- busy polling (busy_poll_us) -- */

/*
 * The raws read into: large enough for a burst of small frames, small
 * enough that a frame held long pins little.  One with less room than
 * INLINE_MIN left is replaced; one no frame holds any more is read into
 * from its start again, while it is warm in the cache.
 */
#define INLINE_BUF ((size_t)16 << 10)
#define INLINE_MIN 512
/* reads that return data before the ring takes over (other connections
 * and the application's loop get their turn) */
#define INLINE_ROUNDS 64

/*
 * Whether an answer is due: the last frame the connection queued was a
 * reply (sent from on_frame, or answering a request), so the peer, if it
 * is a request/response peer, is about to send again.  A connection that
 * only receives, or sends of its own accord (a stream), reads what is
 * there but does not wait for more.
 */
static bool answer_due(const struct bl_msgr_conn *c)
{
	return c->tx_bytes && c->reply_end == c->tx_bytes;
}

/*
 * One non-blocking recv(2) into c->ib, the bytes appended to c->in as a
 * shared slice (no copy; a slice continuing the last one extends it).
 * Return: the bytes read; 0 when the peer shut its side down; -EAGAIN
 * when there is nothing to read; -ENOBUFS when no raw could be had
 * (nothing was read); another -errno of recv(2).  Bytes read that cannot
 * be appended (-ENOMEM) close the connection, as on the ring's path.
 */
static ssize_t inline_recv(struct bl_msgr_conn *c)
{
	struct bl_ptr *b = &c->ib, s;
	ssize_t n;

	if (b->raw && b->off && bl_raw_nref(b->raw) == 1) {
		/* rewritten: a crc cached for its old bytes is stale */
		bl_raw_invalidate_crc(b->raw);
		b->len += b->off;
		b->off = 0;
	}
	if (b->len < INLINE_MIN) {
		struct bl_ptr nb;

		if (bl_ptr_alloc(&nb, INLINE_BUF))
			return -ENOBUFS;
		bl_ptr_release(b);
		*b = nb;
	}
	do {
		n = recv(c->fd, bl_ptr_data(b), b->len, MSG_DONTWAIT);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	if (n == 0)
		return 0;
	c->rx_raw += (uint64_t)n;
	c->st.inline_recvs++;
	/* within b: cannot fail */
	bl_ptr_slice(&s, b, 0, (size_t)n);
	b->off += (size_t)n;
	b->len -= (size_t)n;
	if (bl_list_append_ptr_move(&c->in, &s)) {
		bl_ptr_release(&s);
		bl__msgr_conn_end(c, -ENOMEM, true, "out of memory receiving");
	}
	return n;
}

/*
 * Reads the socket directly while nothing else receives on it, delivering
 * what comes; with nothing to read it waits (spins) only while an answer
 * is due, for up to busy_poll_us, and not while the ring has other
 * completions to handle.  It also stops after INLINE_ROUNDS reads with
 * data, or when the connection must stop (closing, a direct read took
 * over, backpressure, the peer's end).  What ends it is handled
 * as the same result of a ring receive would be.  Between two empty reads
 * the thread yields its processor: on a machine with fewer cores than
 * busy threads, the peer that would answer may be waiting for this very
 * core, and spinning would only delay the answer.  Only from the
 * connection's own completions (it runs on_frame).
 */
static void poll_inline(struct bl_msgr_conn *c)
{
	uint64_t idle_from = bl__now_us();
	unsigned rounds = 0;

	c->polling = true;
	c->depth++;
	while (!c->closing && !c->recv_busy && !c->read_busy &&
	       !c->rd_eof && !c->paused && !bl__msgr_throttled(c)) {
		ssize_t n = inline_recv(c);

		if (n > 0) {
			c->in_rx = true;
			process(c);
			bl__msgr_rx_end(c);
			if (++rounds == INLINE_ROUNDS)
				break;
			idle_from = bl__now_us();
		} else if (n == -EAGAIN) {
			/* other work waits in the ring: no spinning for this
			 * connection's next bytes meanwhile */
			if (!answer_due(c) || bl__uring_pending(c->u) ||
			    bl__now_us() - idle_from >= c->o.busy_poll_us)
				break;
			sched_yield();
		} else {
			if (n != -ENOBUFS)	/* else: the ring's turn */
				recv_ended(c, n);
			break;
		}
	}
	c->depth--;
	c->polling = false;
}

static void arm(struct bl_msgr_conn *c)
{
	int ret;

	if (c->o.busy_poll_us && !c->polling)
		poll_inline(c);
	if (c->closing || c->recv_busy || c->read_busy || c->rd_eof)
		return;
	if (bl__msgr_throttled(c)) {
		pause_rx(c);
		return;
	}
	ret = bl__msgr_start_recv(c);
	if (ret)
		bl__msgr_conn_end(c, ret, true, "cannot start a receive: %s",
				  strerror(-ret));
}

/* -- aligned payloads -- */

static void direct_cb(void *arg, ssize_t res, struct bl_list *data);

static int direct_read(struct bl_msgr_conn *c, size_t len)
{
	int ret = bl_uring_read(c->u, c->fd, -1, len,
				c->d.aligned ? c->o.align : 0, direct_cb, c);

	if (!ret) {
		c->read_busy = true;
		c->oneshot_left = ONESHOT_AFTER_READ;
	}
	return ret;
}

/* Reads the next piece of the rest of the frame (PIECE_FIRST). */
static int read_piece(struct bl_msgr_conn *c)
{
	struct bl__msgr_direct *d = &c->d;
	size_t left = d->rest + BL_MSGR_TRAILER - d->got;
	size_t n = d->piece;
	int ret;

	/* the last piece takes the whole trailer, never a part of it */
	if (left <= n + BL_MSGR_TRAILER || left <= bl__uring_regpool_room(c->u))
		n = left;
	ret = direct_read(c, n);
	if (!ret) {
		d->want = n;
		if (d->piece < PIECE_MAX)
			d->piece *= 2;
	}
	return ret;
}

/*
 * Reserves @len bytes of the server's receive budget for the direct frame
 * about to start, in the queue's order: a connection the server woke has
 * its share already (rx_budget_serve), one that finds others waiting or
 * no room joins the queue (rx_wait: it stops as backpressure stops it).
 * Return: whether the frame may start.
 */
static bool rx_budget_take(struct bl_msgr_conn *c, size_t len)
{
	struct bl_msgr_server *s = c->srv;

	if (!s || !s->o.max_rx_bytes || c->rx_grant >= len)
		return true;
	if (!s->rx_waiting && bl__msgr_rx_fits(s, len)) {
		bl__msgr_rx_grant(c, len);
		return true;
	}
	if (!c->rx_wait) {
		c->rx_wait = true;
		c->rx_ticket = ++s->rx_tickets;
		s->rx_waiting++;
	}
	c->rx_want = len;
	return false;
}

/*
 * The preamble of a large payload is in, and no receive is in flight
 * (one-shot receives), so the rest of the frame can come through plain
 * reads into a raw of its own: one read instead of a receive per ring
 * buffer, into memory the allocator recycles (warm in the cache) instead
 * of a ring that cycles through megabytes.  Unaligned, the head already
 * received stays where it is.  Aligned, it is copied into the first
 * aligned raw, which is then filled up to its opts.align boundary by a
 * small read; the rest is read straight into an aligned raw of its own.
 * Return: true if started; false leaves everything as it was (the frame
 * then comes through the ring).
 */
static bool start_direct(struct bl_msgr_conn *c)
{
	unsigned char pre[BL_MSGR_PREAMBLE];
	struct bl__msgr_direct *d = &c->d;
	size_t have = bl_list_length(&c->in) - BL_MSGR_PREAMBLE;
	uint32_t len;
	bool align;

	if (bl__msgr_throttled(c))
		return false;
	bl__msgr_gather(&c->in, 0, sizeof(pre), pre);
	len = bl__msgr_pre_len(pre);
	align = c->o.align_data && len >= c->o.align_min;
	if (have >= len || (!align && len < c->o.direct_min))
		return false;
	/* waiting for the budget: nothing read, nothing allocated */
	if (!rx_budget_take(c, len))
		return false;
	memset(d, 0, sizeof(*d));
	bl_list_init(&d->headl);
	bl_list_init(&d->restl);
	d->piece = PIECE_FIRST;
	d->type = bl__msgr_pre_type(pre);
	d->flags = bl__msgr_pre_flags(pre);
	d->seq = bl__msgr_pre_seq(pre);
	d->len = len;
	d->aligned = align;
	if (!align) {
		d->head = d->have = have;
		d->rest = len - have;
		if (read_piece(c)) {
			bl__msgr_rx_release(c);
			return false;
		}
		/* from offset 0: cannot fail */
		bl_list_splice(&c->in, 0, BL_MSGR_PREAMBLE, NULL);
		bl_list_swap(&d->headl, &c->in);
		c->pc_done = 0;
		return true;
	}
	d->head = have ? bl__align_up(have, c->o.align) : 0;
	if (d->head > len)
		d->head = len;
	d->rest = len - d->head;
	d->gap_read = d->head - have + (d->rest ? 0 : BL_MSGR_TRAILER);
	if (d->head) {
		d->P.raw = bl_raw_create_aligned(d->head, c->o.align);
		if (!d->P.raw) {
			bl__msgr_rx_release(c);
			return false;
		}
		d->P.len = d->head;
	}
	if (d->gap_read ? direct_read(c, d->gap_read) : read_piece(c)) {
		bl_ptr_release(&d->P);
		bl__msgr_rx_release(c);
		return false;
	}
	if (have) {
		bl_list_copy_out(&c->in, BL_MSGR_PREAMBLE, have,
				 bl_raw_data(d->P.raw));
		c->st.aligned_copied += have;
	}
	d->have = have;
	bl_list_clear(&c->in);
	c->pc_done = 0;
	return true;
}

/*
 * The preamble of a large payload is in while a multishot receive is
 * armed: stop the receive; once its last chunk is in (pooled_cb), a read
 * takes the rest of the frame as start_direct() does.  Return: true if
 * the frame will go that way (or already does).
 */
static bool stop_for_direct(struct bl_msgr_conn *c)
{
	unsigned char pre[BL_MSGR_PREAMBLE];
	uint32_t len;

	if (c->stopping)
		return true;
	bl__msgr_gather(&c->in, 0, sizeof(pre), pre);
	len = bl__msgr_pre_len(pre);
	if (len < c->o.direct_min ||
	    bl_list_length(&c->in) - BL_MSGR_PREAMBLE >= len)
		return false;
	/*
	 * Large payloads come in runs: the next receives are one-shot, so
	 * that the next preamble finds no receive to stop.  (This one may
	 * still arrive through the ring: the kernel's multishot loop can
	 * have taken a whole frame off a loopback socket before the cancel
	 * is even submitted.)
	 */
	c->oneshot_left = ONESHOT_AFTER_READ;
	if (bl__uring_recv_stop(c->u, c->fd))
		return false;
	c->stopping = true;
	return true;
}

/* crc32c of the payload's head (complete once the rest is being read). */
static uint32_t head_crc(const struct bl__msgr_direct *d)
{
	uint32_t crc = BL_MSGR_CRC_SEED;

	if (d->aligned && d->head)
		crc = bl_crc32c(crc, bl_raw_data(d->P.raw), d->head);
	else if (d->head)
		crc = bl__msgr_crc_range(&d->headl, 0, d->head, crc);
	return crc;
}

/* @tail: the rest, whose crc is in d->crc already (read_piece_done). */
static void direct_done(struct bl_msgr_conn *c, struct bl_list *tail)
{
	struct bl__msgr_direct *d = &c->d;
	struct bl_msgr_frame f;
	uint32_t crc = tail ? d->crc : head_crc(d);

	if (crc != bl__le32_load(d->tr)) {
		bl_ptr_release(&d->P);
		bl_list_clear(&d->headl);
		bl_list_clear(&d->restl);
		bl__msgr_conn_abort(c, -EBADMSG,
				    "malformed frame: bad payload crc "
				    "(seq %llu)", (unsigned long long)d->seq);
		return;
	}
	f.type = d->type;
	f.flags = d->flags;
	f.seq = d->seq;
	bl_list_init(&f.payload);
	/* into an empty list: no chunk needed, cannot fail */
	if (d->aligned)
		bl_list_append_ptr_move(&f.payload, &d->P);
	else
		bl_list_swap(&f.payload, &d->headl);
	if (tail && bl_list_claim_append(&f.payload, tail)) {
		bl_msgr_frame_release(&f);
		bl__msgr_conn_end(c, -ENOMEM, true, "out of memory receiving");
		return;
	}
	c->st.direct_frames++;
	if (d->aligned)
		c->st.aligned_frames++;
	deliver(c, &f, BL_MSGR_OVERHEAD + (size_t)d->len);
}

/*
 * A piece of @n bytes went to the end of d->restl: its payload bytes go
 * into the crc now, while the read has just left them in the cache, not
 * in one pass over the whole payload at the end.  Return: d->got.
 */
static size_t read_piece_done(struct bl__msgr_direct *d, size_t n)
{
	size_t pay = d->got < d->rest ? d->rest - d->got : 0;

	if (pay > n)
		pay = n;
	if (!d->got)
		d->crc = head_crc(d);
	d->crc = bl__msgr_crc_range(&d->restl, d->got, pay, d->crc);
	d->got += n;
	return d->got;
}

static void direct_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct bl_msgr_conn *c = arg;
	struct bl__msgr_direct *d = &c->d;
	size_t want = d->have < d->head ? d->gap_read : d->want;

	c->read_busy = false;
	c->depth++;
	c->in_rx = true;
	if (res > 0)
		c->rx_raw += (uint64_t)res;
	if (c->closing) {
		/* dropped */
	} else if (res < 0 || (size_t)res < want) {
		if (res >= 0)
			bl__msgr_conn_abort(c, -EPIPE, "peer closed in "
					    "the middle of a frame");
		else
			bl__msgr_conn_failed(c, (int)res, "read");
	} else if (d->have < d->head) {
		/* the gap up to P's boundary (and the trailer if P ends it) */
		size_t gap = d->head - d->have;

		bl_list_copy_out(data, 0, gap, bl_raw_data(d->P.raw) + d->have);
		c->st.aligned_copied += gap;
		d->have = d->head;
		if (!d->rest) {
			bl__msgr_gather(data, gap, BL_MSGR_TRAILER, d->tr);
			direct_done(c, NULL);
		} else {
			int ret;

			/* copied: its buffer (a registered one?) can take
			 * the rest */
			bl_list_clear(data);
			ret = read_piece(c);

			if (ret)
				bl__msgr_conn_end(c, ret, true,
						  "cannot start a read: %s",
						  strerror(-ret));
		}
	} else if (bl_list_claim_append(&d->restl, data)) {
		bl__msgr_conn_end(c, -ENOMEM, true, "out of memory receiving");
	} else if (read_piece_done(d, (size_t)res) <
		   d->rest + BL_MSGR_TRAILER) {
		int ret = read_piece(c);

		if (ret)
			bl__msgr_conn_end(c, ret, true,
					  "cannot start a read: %s",
					  strerror(-ret));
	} else {
		bl__msgr_gather(&d->restl, d->rest, BL_MSGR_TRAILER, d->tr);
		/* a tail range: cannot fail */
		bl_list_splice(&d->restl, d->rest, BL_MSGR_TRAILER, NULL);
		direct_done(c, &d->restl);
	}
	bl__msgr_rx_end(c);
	if (c->closing) {
		bl_ptr_release(&d->P);
		bl_list_clear(&d->headl);
		bl_list_clear(&d->restl);
	}
	c->depth--;
	bl__msgr_rx_resume(c);
	bl__msgr_maybe_finish(c);
}

/*
 * A large payload that arrived whole in ring buffers, on an aligning
 * connection: copy what is misaligned (at most about one receive buffer,
 * since the switch to plain reads happens at the first receive that
 * leaves such a frame incomplete).  Out of memory, it stays as it is.
 */
static void realign(struct bl_msgr_conn *c, struct bl_list *pay)
{
	struct bl_stats a, b;

	bl_stats_thread(&a);
	if (bl_list_rebuild_aligned_size_and_memory(pay, c->o.align,
						    c->o.align, 0) < 0)
		return;
	bl_stats_thread(&b);
	c->st.aligned_copied += b.copied_bytes - a.copied_bytes;
	c->st.aligned_frames++;
}

/*
 * A large frame arrives over many receives.  Its payload crc is taken
 * piece by piece as the pieces come in, while the kernel's copy has just
 * left them in the cache, instead of in one pass over the whole payload
 * (long evicted by then) when the last piece arrives.
 */
#define CRC_AHEAD_MIN ((size_t)32 << 10)

static void crc_ahead(struct bl_msgr_conn *c)
{
	unsigned char pre[BL_MSGR_PREAMBLE];
	size_t have = bl_list_length(&c->in) - BL_MSGR_PREAMBLE;
	uint32_t len;

	bl__msgr_gather(&c->in, 0, sizeof(pre), pre);
	len = bl__msgr_pre_len(pre);
	if (len < CRC_AHEAD_MIN)
		return;
	if (have > len)
		have = len;
	if (have <= c->pc_done)
		return;
	c->pc_crc = bl__msgr_crc_range(&c->in, BL_MSGR_PREAMBLE + c->pc_done,
				       have - c->pc_done,
				       c->pc_done ? c->pc_crc
						  : BL_MSGR_CRC_SEED);
	c->pc_done = have;
}

/* bl_msgr_parse(), knowing the crc of the first payload bytes. */
static int parse_resume(struct bl_msgr_conn *c, struct bl_msgr_frame *f)
{
	unsigned char pre[BL_MSGR_PREAMBLE];
	uint32_t len;

	if (!c->pc_done)
		return bl_msgr_parse(&c->in, f, c->o.max_payload);
	/* the preamble was checked when pc_done began to grow */
	bl__msgr_gather(&c->in, 0, sizeof(pre), pre);
	len = bl__msgr_pre_len(pre);
	if (bl_list_length(&c->in) < BL_MSGR_OVERHEAD + (size_t)len)
		return 0;
	return bl__msgr_parse_general(&c->in, f, pre, len, c->pc_done,
				      c->pc_crc);
}

/* Delivers every complete frame in c->in. */
static void process(struct bl_msgr_conn *c)
{
	while (!c->closing) {
		struct bl_msgr_frame f;
		size_t before = bl_list_length(&c->in);
		int ret;

		if (bl__msgr_throttled(c)) {
			pause_rx(c);
			return;
		}
		ret = parse_resume(c, &f);

		if (ret != 0)
			c->pc_done = 0;
		if (ret == 1) {
			if (c->o.align_data &&
			    bl_list_length(&f.payload) >= c->o.align_min)
				realign(c, &f.payload);
			deliver(c, &f, before - bl_list_length(&c->in));
			continue;
		}
		if (ret == -ENOMEM) {
			bl__msgr_conn_end(c, ret, true,
					  "out of memory receiving");
		} else if (ret < 0) {
			unsigned char pre[BL_MSGR_PREAMBLE];
			size_t n = before < sizeof(pre) ? before : sizeof(pre);

			bl__msgr_gather(&c->in, 0, n, pre);
			if (ret == -E2BIG)
				bl__msgr_conn_abort(c, ret,
						    "malformed frame: payload "
						    "of %u bytes over the "
						    "limit of %zu",
						    bl__msgr_pre_len(pre),
						    c->o.max_payload);
			else
				bl__msgr_conn_abort(c, ret,
						    "malformed frame: %s",
						    bl_msgr_parse_error());
		} else if (before >= BL_MSGR_PREAMBLE) {
			if (c->recv_busy ? !stop_for_direct(c)
					 : !start_direct(c))
				crc_ahead(c);
		}
		return;
	}
}
