/* SPDX-License-Identifier: MIT */
/*
 * blbench_serve_reply.c - a request of `blbench serve` once it was
 * dispatched: the memory it holds, its reply, the READs that wait for
 * their connection's budget or for memory, streamed READs, and the disk
 * ops' completions that send the replies.  Decoding requests, the
 * connections and the server's loop are blbench_serve.c's.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "blbench_serve.h"

static int srv_reply_cb(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
			struct bl_list *data, bl_msgr_send_fn cb, void *arg)
{
	struct bl_list l;
	int r;

	bl_list_init(&l);
	r = bl_encode_u64(&l, tag);
	if (r == 0)
		r = bl_encode_u64(&l, (uint64_t)res);
	if (r == 0 && data)
		r = bl_list_claim_append(&l, data);
	if (r == 0)
		r = bl_msgr_send(c, T_REPLY, &l, cb, arg);
	bl_list_clear(&l);
	return r;
}

void blb_srv_reply(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
		   struct bl_list *data)
{
	srv_reply_cb(c, tag, res, data, NULL, NULL);
}

void blb_srv_reply_text(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
			const char *text)
{
	struct bl_list l;

	bl_list_init(&l);
	if (bl_encode_bytes(&l, text, strlen(text)) == 0)
		blb_srv_reply(c, tag, res, &l);
	bl_list_clear(&l);
}

/* @q takes @n bytes of the budget, or gives them back (@n negative). */
void blb_srv_mem(struct srv_req *q, int64_t n)
{
	struct srv *s = q->s;

	s->mem += (uint64_t)n;
	q->mem += (uint64_t)n;
	if (n < 0 && s->starved)
		s->pump_due = true;	/* the main loop starts what waited */
}

void blb_srv_req_free(struct srv_req *q)
{
	struct srv *s = q->s;

	if (q->prev)
		q->prev->next = q->next;
	else
		s->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
	s->inflight--;
	blb_srv_mem(q, -(int64_t)q->mem);
	bl_list_clear(&q->payload);
	bl_list_clear(&q->op.data);
	free(q);
}

static void srv_read_start(struct srv_req *q);

static bool srv_streamed(const struct srv_req *q)
{
	return q->len > SRV_STREAM_MIN;
}

/* Whether @q, first in its connection's wait queue, may start now. */
static bool srv_may_start(struct srv_conn *sc, const struct srv_req *q)
{
	struct srv *s = sc->s;
	uint64_t need = srv_streamed(q) ? SRV_PIECE : q->len;

	if (sc->stream || (srv_streamed(q) && sc->read_bytes) ||
	    (sc->read_bytes && sc->read_bytes + need > SRV_READ_AHEAD))
		return false;
	if (s->mem + need > s->o.max_memory) {
		s->starved = true;
		return false;
	}
	return true;
}

/* READs of @sc waiting for the budget start while it allows. */
void blb_srv_pump(struct srv_conn *sc)
{
	while (sc->wait && srv_may_start(sc, sc->wait)) {
		struct srv_req *q = sc->wait;

		sc->wait = q->wnext;
		if (!sc->wait)
			sc->wait_tail = NULL;
		srv_read_start(q);
	}
}

/* A READ's reply went to the kernel (or never will): its budget is back. */
static void srv_read_sent(void *arg, int res)
{
	struct srv_req *q = arg;
	struct srv_conn *sc = q->sc;

	(void)res;
	sc->read_bytes -= q->len;
	blb_srv_req_free(q);
	blb_srv_pump(sc);
}

/* ---- streamed READs ---------------------------------------------------- */

static void srv_stream_fill(struct srv_req *q);

/* A streamed READ that cannot go on: the peer sees its reply cut short. */
static void srv_stream_fail(struct srv_req *q, int err, const char *what)
{
	char why[BLB_NAME_MAX + 160];

	if (!q->c || q->failed)
		return;
	q->failed = true;
	snprintf(why, sizeof(why), "a READ of %s failed after its reply "
		 "began (%s): %s", q->op.name, what, strerror(-err));
	bl_msgr_conn_abort(q->c, err, why);
}

/* Drops @q's oldest piece (read, not queued): its memory is back. */
static void srv_piece_drop(struct srv_req *q)
{
	struct srv_piece *d = &q->pc[q->pc_head];

	bl_list_clear(&d->op.data);
	blb_srv_mem(q, -(int64_t)d->len);
	if (q->sc)
		q->sc->read_bytes -= d->len;
	q->pc_head = (q->pc_head + 1) % SRV_STREAM_DEPTH;
	q->pc_n--;
}

/*
 * A stream whose client is gone or failed: the pieces read drop from the
 * front (those still reading come back through blb_srv_piece_done()); once
 * the client is gone and no piece is left, @q goes.
 */
void blb_srv_stream_drain(struct srv_req *q)
{
	struct srv_conn *sc = q->sc;

	while (q->pc_n && q->pc[q->pc_head].ready)
		srv_piece_drop(q);
	if (q->pc_n || q->in_cb)
		return;
	if (!q->c) {
		blb_srv_req_free(q);
	} else if (q->early) {
		/* answered plainly: the connection goes on */
		sc->stream = NULL;
		blb_srv_req_free(q);
		blb_srv_pump(sc);
	}
}

/*
 * A streamed READ whose reply has not begun answers as one that is not
 * streamed would: an error, or the bytes of an object shorter than asked
 * (@res of them, in @data).  What is still reading drains quietly.
 */
static void srv_stream_answer(struct srv_req *q, int64_t res,
			      struct bl_list *data)
{
	blb_srv_reply(q->c, q->tag, res, data);
	q->failed = true;
	q->early = true;
}

/*
 * The first piece is read: the reply frame begins now, its length known
 * to be the whole READ's (a later piece that comes short resets the
 * client); or, an error or a short object, a plain answer.
 */
static void srv_stream_head(struct srv_req *q)
{
	struct srv_piece *p = &q->pc[q->pc_head];
	int r;

	if (p->op.res != (ssize_t)p->len) {
		srv_stream_answer(q, p->op.res,
				  p->op.res >= 0 ? &p->op.data : NULL);
		return;
	}
	r = bl_msgr_stream_begin(q->c, T_REPLY, 16 + q->len);
	if (r < 0)
		srv_stream_answer(q, r, NULL);
	else
		q->begun = true;
}

/* The kernel took a piece (or never will): its memory is back. */
static void srv_piece_sent(void *arg, int res)
{
	struct srv_req *q = arg;
	struct srv_conn *sc = q->sc;
	uint64_t n = q->len - q->taken < SRV_PIECE ? q->len - q->taken
						    : SRV_PIECE;

	q->taken += n;
	blb_srv_mem(q, -(int64_t)n);
	sc->read_bytes -= n;
	if (q->taken == q->len || res < 0) {
		/* all of it in the kernel, or the connection is closing */
		if (q->taken < q->len)
			return;	/* srv_on_close() ends the stream */
		/* the whole reply is in the kernel */
		sc->stream = NULL;
		blb_srv_req_free(q);
		blb_srv_pump(sc);
		return;
	}
	srv_stream_fill(q);
}

/* Read pieces go to the messenger in order, as they are ready. */
static void srv_stream_push(struct srv_req *q)
{
	while (q->c && !q->failed && q->pc_n && q->pc[q->pc_head].ready) {
		struct srv_piece *p = &q->pc[q->pc_head];
		struct bl_list l;
		int r = 0;

		if (p->op.res != (ssize_t)p->len) {
			/* an error, or an object shorter than the READ asked */
			srv_stream_fail(q, p->op.res < 0 ? (int)p->op.res : -EIO,
					p->op.res < 0 ? "reading it"
						      : "the object is shorter");
			return;
		}
		bl_list_init(&l);
		if (q->taken == 0 && p->op.off == q->op.off) {
			/* the reply's header rides on the first piece */
			r = bl_encode_u64(&l, q->tag);
			if (r == 0)
				r = bl_encode_u64(&l, q->len);
		}
		if (r == 0)
			r = bl_list_claim_append(&l, &p->op.data);
		if (r == 0)
			r = bl_msgr_stream_add(q->c, &l, srv_piece_sent, q);
		bl_list_clear(&l);
		bl_list_clear(&p->op.data);
		q->pc_head = (q->pc_head + 1) % SRV_STREAM_DEPTH;
		q->pc_n--;
		if (r < 0) {
			/* its callback will not run: the memory is back now */
			blb_srv_mem(q, -(int64_t)p->len);
			q->sc->read_bytes -= p->len;
			srv_stream_fail(q, r, "queueing it");
			return;
		}
	}
}

/* A piece's disk read is over. */
void blb_srv_piece_done(struct blb_op *op)
{
	struct srv_piece *p = (struct srv_piece *)op;
	struct srv_req *q = p->q;

	p->ready = true;
	q->in_cb = true;
	if (q->c && !q->failed && !q->begun && q->pc[q->pc_head].ready)
		srv_stream_head(q);
	if (q->c && !q->failed && q->begun) {
		srv_stream_push(q);
		srv_stream_fill(q);
	}
	q->in_cb = false;
	if (!q->c || q->failed)
		blb_srv_stream_drain(q);
}

/* Starts the reads of the next pieces, as far as the budgets allow. */
static void srv_stream_fill(struct srv_req *q)
{
	struct srv *s = q->s;

	while (q->c && !q->failed && q->issued < q->len) {
		uint64_t n = q->len - q->issued < SRV_PIECE ? q->len - q->issued
							     : SRV_PIECE;
		struct srv_piece *p = &q->pc[(q->pc_head + q->pc_n) %
					     SRV_STREAM_DEPTH];
		int r;

		/* read ahead: pieces read or queued, not yet taken */
		if (q->issued - q->taken + n > SRV_STREAM_DEPTH * SRV_PIECE)
			return;
		if (s->mem + n > s->o.max_memory) {
			s->starved = true;	/* blb_srv_pump_all() goes on */
			return;
		}
		memset(&p->op, 0, sizeof(p->op));
		bl_list_init(&p->op.data);
		p->op.done = blb_srv_piece_done;
		p->op.fd = -1;
		p->op.objno = q->op.objno;
		p->op.off = q->op.off + q->issued;
		memcpy(p->op.name, q->op.name, sizeof(p->op.name));
		p->op.t0 = blb_now();
		p->q = q;
		p->len = n;
		p->ready = false;
		q->t->obj_span = q->span;
		r = q->t->ops->read(q->t, &p->op, (size_t)n);
		if (r < 0) {
			if (q->begun)
				srv_stream_fail(q, r, "starting it");
			else if (!q->failed)
				srv_stream_answer(q, r, NULL);
			return;
		}
		q->pc_n++;
		q->issued += n;
		blb_srv_mem(q, (int64_t)n);
		q->sc->read_bytes += n;
	}
}

/* Starts streaming READ @q: its first pieces' reads. */
static void srv_stream_start(struct srv_req *q)
{
	q->sc->stream = q;
	srv_stream_fill(q);
	if (q->failed)
		blb_srv_stream_drain(q);
}

/* Memory came back: what waited for it starts (from the main loop). */
void blb_srv_pump_all(struct srv *s)
{
	struct srv_conn *sc, *next;

	s->pump_due = false;
	s->starved = false;
	for (sc = s->conns; sc; sc = next) {
		struct srv_req *q = sc->stream;

		next = sc->next;
		if (q) {
			/* a failed read start may end the connection at once
			 * (nothing of it in flight): @sc is gone then */
			bool gone;

			q->in_cb = true;
			srv_stream_fill(q);
			q->in_cb = false;
			gone = !q->c;
			if (gone || q->failed)
				blb_srv_stream_drain(q);
			if (gone)
				continue;
		}
		blb_srv_pump(sc);
	}
}

/* A disk op is over: answer, unless the client went away meanwhile. */
void blb_srv_op_done(struct blb_op *op)
{
	struct srv_req *q = (struct srv_req *)op;

	if (q->c && q->type == T_READ) {
		/* the budget comes back when the kernel has the reply */
		if (srv_reply_cb(q->c, q->tag, op->res,
				 op->res >= 0 ? &op->data : NULL,
				 srv_read_sent, q))
			srv_read_sent(q, -ENOMEM);
		return;
	}
	if (q->c)
		blb_srv_reply(q->c, q->tag, op->res, NULL);
	blb_srv_req_free(q);
}

static void srv_read_start(struct srv_req *q)
{
	struct srv_conn *sc = q->sc;
	int r;

	if (srv_streamed(q)) {
		srv_stream_start(q);
		return;
	}
	sc->read_bytes += q->len;
	blb_srv_mem(q, (int64_t)q->len);
	q->t->obj_span = q->span;
	q->op.t0 = blb_now();
	r = q->t->ops->read(q->t, &q->op, q->len);
	if (r < 0) {
		blb_srv_reply(q->c, q->tag, r, NULL);
		sc->read_bytes -= q->len;
		blb_srv_req_free(q);
	}
}
