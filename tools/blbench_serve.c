/* SPDX-License-Identifier: MIT */
/*
 * blbench_serve.c - `blbench serve`: keeps objects for tcp:HOST:PORT
 * clients in a local dir: or file: target, answering the requests of
 * blbench_proto.h on one ring shared by the messenger server and the
 * target's I/O, a disk op's completion (its @op->done) sending the reply.
 * Peers are untrusted: a request that does not decode closes that
 * connection only.  It uses targets only through blbench_target.h and
 * runs until SIGINT or SIGTERM (blb_stop).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bufferlist/msgr.h>
#include "blbench.h"
#include "blbench_proto.h"


/*
 * What one client may make the server hold.  The messenger delivers at
 * most SRV_MAX_INFLIGHT requests of a connection that are not answered
 * yet, and stops reading a client whose replies it cannot send
 * (max_out_bytes, its default).  READs hold memory from the start of the
 * disk read until the kernel took the reply: SRV_READ_AHEAD bytes per
 * connection, the READs beyond it waiting (decoded, without a buffer)
 * until earlier replies went out.  A READ longer than SRV_STREAM_MIN is
 * streamed (bl_msgr_stream_begin): read SRV_PIECE bytes at a time, at
 * most SRV_STREAM_DEPTH pieces read or queued, the next read only when
 * the socket took a piece, alone on its connection while it lasts.  So
 * a client that asks for a gigabyte and never reads holds a few MiB.
 */
#define SRV_MAX_INFLIGHT 32
#define SRV_READ_AHEAD ((uint64_t)8 << 20)
#define SRV_STREAM_MIN ((uint64_t)4 << 20)
#define SRV_PIECE ((uint64_t)2 << 20)
#define SRV_STREAM_DEPTH 2
/*
 * Registered buffers on the server's ring, recycled: a READ's file data
 * and a WRITE's payload (the messenger's direct reads) go into one of
 * them instead of fresh memory, which costs a page fault per 4 KiB for
 * every op (see blbench_tcp.c).  Sized for blbench's default op (4 MiB
 * and a frame's overhead); larger ops, or ops beyond them, take fresh
 * memory as before (a memlock limit may allow fewer: blb_ring_pool).
 * The pool is pinned from the start, so it counts against --max-memory
 * from the start, as the receive ring does, and takes at most an eighth
 * of it (none under a budget too small for one buffer).
 */
#define SRV_POOL_BUF (((size_t)4 << 20) + ((size_t)64 << 10))
#define SRV_POOL_BUFS 16u
/*
 * And all of them together (--max-memory): the shared receive ring
 * (SRV_RING_BUFS x SRV_RING_BUF, counted from the start), READ data from
 * the disk read until the kernel took it, and WRITE payloads from their
 * arrival until they are written.  READs over the budget wait until
 * memory frees; a WRITE over it is refused with -ENOBUFS (its payload
 * already arrived: holding it would not free anything).  No payload may
 * be longer than half the budget (HELLO's max_payload).
 */
#define SRV_RING_BUFS 64
#define SRV_RING_BUF ((size_t)64 << 10)
/* A client that stops half way through a preamble for 10 s is reset. */
#define SRV_HEADER_MS (10u * 1000)

struct srv_conn;
struct srv_req;

/* One piece of a streamed READ. */
struct srv_piece {
	struct blb_op op;		/* first: completes through op.done */
	struct srv_req *q;
	uint64_t len;
	bool ready;			/* read, waiting for its turn */
};

struct srv_req {
	struct blb_op op;		/* first: ops complete through op.done */
	struct srv *s;
	struct bl_msgr_conn *c;		/* NULL once the client went away */
	struct srv_conn *sc;		/* READ: whose budget it takes */
	struct blb_target *t;		/* READ: where, once it starts */
	uint64_t tag;
	uint64_t len, span;		/* READ */
	uint64_t mem;			/* bytes of s->mem it holds */
	uint16_t type;
	struct bl_list payload;		/* WRITE: the data until it is written */
	struct srv_req *prev, *next;
	struct srv_req *wnext;		/* READ: its connection's wait queue */
	/* a streamed READ */
	struct srv_piece pc[SRV_STREAM_DEPTH];
	unsigned pc_head, pc_n;		/* oldest piece not added; in use */
	uint64_t issued;		/* bytes whose reads started */
	uint64_t taken;			/* bytes the kernel took */
	bool in_cb;			/* a piece's completion is running */
	bool failed;			/* it cannot finish: the client is reset */
	bool begun;			/* its reply frame began */
	bool early;			/* answered before that: ends quietly */
};

/* A client connection's READ budget. */
struct srv_conn {
	struct srv *s;
	struct bl_msgr_conn *c;
	uint64_t read_bytes;		/* READs started, reply not yet sent */
	struct srv_req *wait, *wait_tail;	/* READs over the budget */
	struct srv_req *stream;		/* the READ being streamed */
	struct srv_conn *next;
};

struct srv {
	struct bl_uring *u;
	struct blb_opts o;
	struct blb_target *tgt[2];	/* buffered, O_DIRECT (opened on demand) */
	char tgt_err[2][512];
	struct bl_msgr_server *ms;
	struct srv_req *reqs;		/* in flight */
	unsigned inflight;
	struct srv_conn *conns;		/* that sent a READ */
	uint64_t mem;			/* held, of o.max_memory */
	bool starved;			/* a READ waits for memory */
	bool pump_due;			/* memory freed since: start them */
	double refused_said;		/* when a refusal was last logged */
};

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

static void srv_reply(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
		      struct bl_list *data)
{
	srv_reply_cb(c, tag, res, data, NULL, NULL);
}

static void srv_reply_text(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
			   const char *text)
{
	struct bl_list l;

	bl_list_init(&l);
	if (bl_encode_bytes(&l, text, strlen(text)) == 0)
		srv_reply(c, tag, res, &l);
	bl_list_clear(&l);
}

/* @q takes @n bytes of the budget, or gives them back (@n negative). */
static void srv_mem(struct srv_req *q, int64_t n)
{
	struct srv *s = q->s;

	s->mem += (uint64_t)n;
	q->mem += (uint64_t)n;
	if (n < 0 && s->starved)
		s->pump_due = true;	/* the main loop starts what waited */
}

static void srv_req_free(struct srv_req *q)
{
	struct srv *s = q->s;

	if (q->prev)
		q->prev->next = q->next;
	else
		s->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
	s->inflight--;
	srv_mem(q, -(int64_t)q->mem);
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
static void srv_pump(struct srv_conn *sc)
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
	srv_req_free(q);
	srv_pump(sc);
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
	srv_mem(q, -(int64_t)d->len);
	if (q->sc)
		q->sc->read_bytes -= d->len;
	q->pc_head = (q->pc_head + 1) % SRV_STREAM_DEPTH;
	q->pc_n--;
}

/*
 * A stream whose client is gone or failed: the pieces read drop from the
 * front (those still reading come back through srv_piece_done()); once
 * the client is gone and no piece is left, @q goes.
 */
static void srv_stream_drain(struct srv_req *q)
{
	struct srv_conn *sc = q->sc;

	while (q->pc_n && q->pc[q->pc_head].ready)
		srv_piece_drop(q);
	if (q->pc_n || q->in_cb)
		return;
	if (!q->c) {
		srv_req_free(q);
	} else if (q->early) {
		/* answered plainly: the connection goes on */
		sc->stream = NULL;
		srv_req_free(q);
		srv_pump(sc);
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
	srv_reply(q->c, q->tag, res, data);
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
	srv_mem(q, -(int64_t)n);
	sc->read_bytes -= n;
	if (q->taken == q->len || res < 0) {
		/* all of it in the kernel, or the connection is closing */
		if (q->taken < q->len)
			return;	/* srv_on_close() ends the stream */
		/* the whole reply is in the kernel */
		sc->stream = NULL;
		srv_req_free(q);
		srv_pump(sc);
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
			srv_mem(q, -(int64_t)p->len);
			q->sc->read_bytes -= p->len;
			srv_stream_fail(q, r, "queueing it");
			return;
		}
	}
}

/* A piece's disk read is over. */
static void srv_piece_done(struct blb_op *op)
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
		srv_stream_drain(q);
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
			s->starved = true;	/* srv_pump_all() goes on */
			return;
		}
		memset(&p->op, 0, sizeof(p->op));
		bl_list_init(&p->op.data);
		p->op.done = srv_piece_done;
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
		srv_mem(q, (int64_t)n);
		q->sc->read_bytes += n;
	}
}

/* Starts streaming READ @q: its first pieces' reads. */
static void srv_stream_start(struct srv_req *q)
{
	q->sc->stream = q;
	srv_stream_fill(q);
	if (q->failed)
		srv_stream_drain(q);
}

/* Memory came back: what waited for it starts (from the main loop). */
static void srv_pump_all(struct srv *s)
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
				srv_stream_drain(q);
			if (gone)
				continue;
		}
		srv_pump(sc);
	}
}

/* A disk op is over: answer, unless the client went away meanwhile. */
static void srv_op_done(struct blb_op *op)
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
		srv_reply(q->c, q->tag, op->res, NULL);
	srv_req_free(q);
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
	srv_mem(q, (int64_t)q->len);
	q->t->obj_span = q->span;
	q->op.t0 = blb_now();
	r = q->t->ops->read(q->t, &q->op, q->len);
	if (r < 0) {
		srv_reply(q->c, q->tag, r, NULL);
		sc->read_bytes -= q->len;
		srv_req_free(q);
	}
}

/* @c's budget, made the first time it is asked for; NULL: no memory. */
static struct srv_conn *srv_conn_of(struct srv *s, struct bl_msgr_conn *c)
{
	struct srv_conn *sc;

	for (sc = s->conns; sc; sc = sc->next)
		if (sc->c == c)
			return sc;
	sc = calloc(1, sizeof(*sc));
	if (!sc)
		return NULL;
	sc->s = s;
	sc->c = c;
	sc->next = s->conns;
	s->conns = sc;
	return sc;
}

static struct srv_req *srv_req_new(struct srv *s, struct bl_msgr_conn *c,
				   uint64_t tag, uint16_t type)
{
	struct srv_req *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->s = s;
	q->c = c;
	q->tag = tag;
	q->type = type;
	q->op.done = srv_op_done;
	q->op.fd = -1;
	bl_list_init(&q->op.data);
	bl_list_init(&q->payload);
	q->next = s->reqs;
	if (s->reqs)
		s->reqs->prev = q;
	s->reqs = q;
	s->inflight++;
	return q;
}

/* The server's target for @flags, opened the first time it is asked for. */
static struct blb_target *srv_target(struct srv *s, uint32_t flags,
				     const char **why)
{
	int i = (flags & TCP_DIRECT) ? 1 : 0;

	if (!s->tgt[i] && !s->tgt_err[i][0]) {
		struct blb_opts o = s->o;

		o.direct = i == 1;
		/* a second open of one file: its flock would conflict with
		 * the first's, which already keeps other writers out */
		o.lock_held = i == 1 && s->tgt[0];
		if (blb_target_open_ring(&s->tgt[i], s->o.target, &o, true, s->u,
					 s->tgt_err[i],
					 sizeof(s->tgt_err[i])) < 0)
			s->tgt[i] = NULL;
	}
	*why = s->tgt_err[i];
	return s->tgt[i];
}

/*
 * The boundary WRITE payloads are received on: the O_DIRECT alignment of
 * the target (opened now, so that its first client does not wait for it;
 * a target that cannot be opened so keeps its error for the clients that
 * ask).  0, the messenger's default (a page), when there is none or it is
 * outside what the messenger takes.
 */
static size_t srv_recv_align(struct srv *s)
{
	struct blb_target *t;
	const char *why;
	size_t a;

	t = srv_target(s, TCP_DIRECT, &why);
	if (!t)
		return 0;
	a = t->mem_align > t->off_align ? t->mem_align : t->off_align;
	return a >= 512 && a <= ((size_t)1 << 20) && !(a & (a - 1)) ? a : 0;
}

/* The longest payload a client may send: half the budget at most. */
static uint64_t srv_max_payload(const struct srv *s)
{
	uint64_t half = s->o.max_memory / 2;

	return half < TCP_MAX_PAYLOAD ? half : TCP_MAX_PAYLOAD;
}

static void srv_hello(struct srv *s, struct bl_msgr_conn *c, uint64_t tag,
		      struct blb_target *t)
{
	struct bl_list l;
	uint64_t room = t->room;
	int r;

	/* a directory's room shrinks as clients write: ask again */
	if (t->ops->room_now)
		t->ops->room_now(t, &room);
	bl_list_init(&l);
	/* the first error stops it; blk_align last, so that a client that
	 * predates it reads on without it */
	if ((r = bl_encode_u64(&l, room)) ||
	    (r = bl_encode_u32(&l, t->slots)) ||
	    (r = bl_encode_u32(&l, (uint32_t)t->mem_align)) ||
	    (r = bl_encode_u32(&l, (uint32_t)t->off_align)) ||
	    (r = bl_encode_u64(&l, srv_max_payload(s))) ||
	    (r = bl_encode_bytes(&l, t->desc, strlen(t->desc))) ||
	    (r = bl_encode_u32(&l, (uint32_t)t->blk_align)))
		srv_reply(c, tag, r, NULL);
	else
		srv_reply(c, tag, 0, &l);
	bl_list_clear(&l);
}

static int srv_list_one(void *arg, const char *name)
{
	struct bl_list *l = ((struct bl_list **)arg)[0];
	uint32_t *count = ((void **)arg)[1];

	if (bl_list_length(l) > TCP_MAX_PAYLOAD / 2)
		return -E2BIG;
	(*count)++;
	return bl_encode_bytes(l, name, strlen(name));
}

/* LIST: the names, counted in front. */
static int srv_list(struct blb_target *t, const char *prefix,
		    struct bl_list *out)
{
	struct bl_list names;
	uint32_t count = 0;
	void *arg[2] = { &names, &count };
	int r;

	if (!t->ops->list)
		return -EOPNOTSUPP;
	bl_list_init(&names);
	r = t->ops->list(t, prefix, srv_list_one, arg);
	if (r == 0)
		r = bl_encode_u32(out, count);
	if (r == 0)
		r = bl_list_claim_append(out, &names);
	bl_list_clear(&names);
	return r;
}

/* A WRITE refused for the budget: said once a second at most. */
static void srv_refuse(struct srv *s, size_t len)
{
	double now = blb_now();

	if (now - s->refused_said < 1)
		return;
	s->refused_said = now;
	fprintf(stderr, "blbench serve: --max-memory %llu MiB in use (%llu "
		"MiB held): a WRITE of %zu bytes refused (ENOBUFS)\n",
		(unsigned long long)(s->o.max_memory >> 20),
		(unsigned long long)(s->mem >> 20), len);
}

/* WRITE: @q's bytes (moved out of the frame) to @t. */
static void srv_write(struct srv *s, struct bl_msgr_conn *c,
		      struct blb_target *t, struct blb_req *rq)
{
	size_t len = bl_list_length(&rq->body);
	struct srv_req *q;
	int r = 0;

	if (s->mem + len > s->o.max_memory) {
		srv_refuse(s, len);
		srv_reply(c, rq->tag, -ENOBUFS, NULL);
		return;
	}
	q = srv_req_new(s, c, rq->tag, T_WRITE);
	if (!q) {
		srv_reply(c, rq->tag, -ENOMEM, NULL);
		return;
	}
	snprintf(q->op.name, sizeof(q->op.name), "%s", rq->name);
	q->op.objno = rq->objno;
	q->op.off = rq->off;
	/* the data starts aligned, as the client padded it */
	bl_list_swap(&q->payload, &rq->body);
	srv_mem(q, (int64_t)len);
	/* a client that padded its header wrong: copies what is misaligned
	 * (nothing for one that padded as the HELLO said) */
	if (t->off_align > 1)
		r = bl_list_rebuild_aligned_size_and_memory(
			&q->payload, t->off_align, t->mem_align, 1024);
	t->obj_span = rq->span;
	q->op.t0 = blb_now();
	if (r >= 0)
		r = t->ops->write(t, &q->op, &q->payload);
	if (r < 0) {
		srv_reply(c, rq->tag, r, NULL);
		srv_req_free(q);
	}
}

/* READ: queued behind the connection's others, started as budgets allow. */
static void srv_read(struct srv *s, struct bl_msgr_conn *c,
		     struct blb_target *t, const struct blb_req *rq)
{
	struct srv_conn *sc = srv_conn_of(s, c);
	struct srv_req *q = sc ? srv_req_new(s, c, rq->tag, T_READ) : NULL;

	if (!q) {
		srv_reply(c, rq->tag, -ENOMEM, NULL);
		return;
	}
	snprintf(q->op.name, sizeof(q->op.name), "%s", rq->name);
	q->op.objno = rq->objno;
	q->op.off = rq->off;
	q->sc = sc;
	q->t = t;
	q->len = rq->len;
	q->span = rq->span;
	if (sc->wait_tail)
		sc->wait_tail->wnext = q;
	else
		sc->wait = q;
	sc->wait_tail = q;
	srv_pump(sc);
}

/* Requests whose answer is the target's result, and data with success. */
static void srv_call(struct bl_msgr_conn *c, struct blb_target *t,
		     struct blb_req *rq)
{
	struct bl_list out;
	int r;

	bl_list_init(&out);
	switch (rq->type) {
	case T_REMOVE:
		r = t->ops->remove(t, rq->name, rq->objno);
		break;
	case T_META_PUT:
		r = t->ops->meta_put(t, rq->name, &rq->body);
		break;
	case T_META_GET:
		r = t->ops->meta_get(t, rq->name, &out);
		break;
	case T_META_DEL:
		r = t->ops->meta_del(t, rq->name);
		break;
	default:	/* T_LIST */
		r = srv_list(t, rq->name, &out);
		break;
	}
	srv_reply(c, rq->tag, r, r == 0 && bl_list_length(&out) ? &out : NULL);
	bl_list_clear(&out);
}

/* A request: decoded (blbench_proto.c), then handed to its handler. */
static void srv_on_frame(void *arg, struct bl_msgr_conn *c,
			 struct bl_msgr_frame *f)
{
	struct srv *s = arg;
	struct blb_target *t;
	struct blb_req rq;
	const char *why;
	int r = blb_req_decode(f->type, &f->payload, &rq);

	if (r == -ENOMEM) {
		/* ours, not the client's fault */
		srv_reply(c, rq.tag, -ENOMEM, NULL);
		return;
	}
	if (r < 0) {
		/* this client only: the messenger logs the reason */
		bl_msgr_conn_abort(c, -EBADMSG,
				   "a request that does not decode");
		return;
	}
	t = srv_target(s, rq.flags, &why);
	if (!t)
		srv_reply_text(c, rq.tag, -EIO, why);
	else if (rq.type == T_HELLO)
		srv_hello(s, c, rq.tag, t);
	else if (rq.type == T_WRITE)
		srv_write(s, c, t, &rq);
	else if (rq.type == T_READ)
		srv_read(s, c, t, &rq);
	else
		srv_call(c, t, &rq);
	blb_req_clear(&rq);
}

static void srv_on_close(void *arg, struct bl_msgr_conn *c, int err,
			 const char *reason)
{
	struct srv *s = arg;
	struct srv_conn **pp, *sc = NULL;
	struct srv_req *q, *stream = NULL;

	/* every reply's callback has run: READs still waiting never start */
	for (pp = &s->conns; *pp; pp = &(*pp)->next)
		if ((*pp)->c == c) {
			sc = *pp;
			*pp = sc->next;
			break;
		}
	while (sc && sc->wait) {
		q = sc->wait;
		sc->wait = q->wnext;
		srv_req_free(q);
	}
	if (sc)
		stream = sc->stream;
	free(sc);
	/* disk ops of this client finish, but their answers go nowhere */
	for (q = s->reqs; q; q = q->next)
		if (q->c == c) {
			q->c = NULL;
			q->sc = NULL;
		}
	/* its pieces still reading end it (srv_piece_done) */
	if (stream)
		srv_stream_drain(stream);
	if (err)
		fprintf(stderr, "blbench serve: a client went away: %s\n", reason);
}

/* The socket, or -errno; *@gai: getaddrinfo's EAI_ code when it failed. */
static int srv_listen(const char *addr, char *shown, size_t len, int *gai)
{
	struct addrinfo hints, *res, *ai;
	char host[BLB_NAME_MAX], port[32];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, r, one = 1;

	if (blb_split_hostport(addr, host, sizeof(host), port,
			       sizeof(port)) < 0)
		return -EINVAL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	r = getaddrinfo(host, port, &hints, &res);
	if (r == EAI_SYSTEM)
		return -errno;
	if (r) {
		*gai = r;
		return -EADDRNOTAVAIL;
	}
	r = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, 128) == 0)
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return r;
	/* the port actually bound (for :0) */
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		char h[INET6_ADDRSTRLEN];
		unsigned p;

		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
			p = ntohs(a->sin6_port);
			snprintf(shown, len, "[%s]:%u", h, p);
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
			p = ntohs(a->sin_port);
			snprintf(shown, len, "%s:%u", h, p);
		}
	}
	return fd;
}

int blb_serve(const struct blb_opts *o)
{
	struct bl_msgr_conn_opts co;
	struct bl_uring_params p;
	char shown[BLB_NAME_MAX] = "";
	const char *why;
	uint64_t pool;
	struct srv s;
	int lfd, gai = 0, r;

	memset(&s, 0, sizeof(s));
	s.o = *o;
	s.mem = (uint64_t)SRV_RING_BUFS * SRV_RING_BUF;	/* the receive ring */
	lfd = srv_listen(o->listen, shown, sizeof(shown), &gai);
	if (lfd < 0) {
		fprintf(stderr, "blbench serve: cannot listen on %s: %s\n",
			o->listen, gai ? gai_strerror(gai) : strerror(-lfd));
		return BLB_EXIT_FAIL;
	}
	memset(&p, 0, sizeof(p));
	p.entries = 1024;
	s.u = bl_uring_create(&p);
	if (!s.u) {
		fprintf(stderr, "blbench serve: out of memory\n");
		close(lfd);
		return BLB_EXIT_FAIL;
	}
	pool = o->max_memory / 8 / SRV_POOL_BUF;
	pool = blb_ring_pool(s.u, pool < SRV_POOL_BUFS ? (unsigned)pool
						      : SRV_POOL_BUFS,
			     SRV_POOL_BUF);
	s.mem += (uint64_t)pool * SRV_POOL_BUF;
	/* the buffered target now, so that a bad --target fails at once */
	if (!srv_target(&s, 0, &why)) {
		fprintf(stderr, "blbench serve: %s\n", why);
		bl_uring_destroy(s.u);
		close(lfd);
		return BLB_EXIT_FAIL;
	}
	memset(&co, 0, sizeof(co));
	co.on_frame = srv_on_frame;
	co.on_close = srv_on_close;
	co.arg = &s;
	co.max_payload = srv_max_payload(&s);
	co.nbufs = SRV_RING_BUFS;
	co.buf_size = SRV_RING_BUF;
	/* WRITE data lands aligned as the O_DIRECT file wants it */
	co.align_data = true;
	co.align = srv_recv_align(&s);
	co.max_inflight = SRV_MAX_INFLIGHT;	/* every request is answered */
	co.idle_timeout_ms = o->idle_timeout * 1000u;
	co.header_timeout_ms = SRV_HEADER_MS;
	s.ms = bl_msgr_server_new(s.u, lfd, &co);
	if (!s.ms) {
		fprintf(stderr, "blbench serve: cannot serve on %s\n", shown);
		blb_target_close(s.tgt[0]);
		bl_uring_destroy(s.u);
		close(lfd);
		return BLB_EXIT_FAIL;
	}
	printf("blbench serve: listening on %s, objects in %s\n", shown,
	       s.tgt[0]->desc);
	fflush(stdout);

	r = 0;
	while (!blb_stop) {
		if (s.pump_due)
			srv_pump_all(&s);
		r = bl_msgr_server_poll(s.ms, 250);
		if (r < 0 && r != -EINTR && r != -ETIME && r != -EAGAIN) {
			fprintf(stderr, "blbench serve: %s\n", strerror(-r));
			break;
		}
		r = 0;
	}
	bl_msgr_server_destroy(s.ms);
	/*
	 * Disk ops still running hold payloads and the targets: let them end,
	 * but after SIGTERM or a second SIGINT not for a disk that stopped
	 * answering (a second without one completing); destroying the ring
	 * then cancels what is left.
	 */
	while (s.inflight) {
		int n = bl_uring_run(s.u, 1, 1000);

		if (n < 0 || (n == 0 && blb_stop > 1))
			break;
	}
	blb_target_close(s.tgt[0]);
	blb_target_close(s.tgt[1]);
	bl_uring_destroy(s.u);
	close(lfd);
	return r < 0 ? BLB_EXIT_FAIL : 0;
}
