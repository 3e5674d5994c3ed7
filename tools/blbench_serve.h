/* SPDX-License-Identifier: MIT */
/*
 * blbench_serve.h - what the two files of `blbench serve` share (never
 * installed): the limits on what a client may make the server hold, the
 * server, its connections and its requests, and the functions
 * blbench_serve.c calls in blbench_serve_reply.c (never the other way).
 * The srv_ names have no linkage and are the server's own vocabulary.
 */
#ifndef BLBENCH_SERVE_H
#define BLBENCH_SERVE_H

#include <stdbool.h>
#include <stdint.h>
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
 * (SRV_RING_BUFS x SRV_RING_BUF, counted from the start), payloads still
 * arriving (an eighth of the budget, the messenger's max_rx_bytes,
 * counted from the start: the clients' frames wait for it in the kernel
 * and the clients), READ data from the disk read until the kernel took
 * it, and WRITE payloads from their arrival until they are written.
 * READs over the budget wait until memory frees; a WRITE over it is
 * refused with -ENOBUFS (its payload already arrived: holding it would
 * not free anything).  No payload may be longer than the eighth that
 * arriving payloads share (HELLO's max_payload), so that one alone fits.
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

/* ---- blbench_serve_reply.c --------------------------------------------- */

/* A reply to request @tag of @c: @res, then @data (NULL: none). */
void blb_srv_reply(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
		   struct bl_list *data);
/* The same with @text as the data (an error's explanation). */
void blb_srv_reply_text(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
			const char *text);
/* @q takes @n bytes of the budget, or gives them back (@n negative). */
void blb_srv_mem(struct srv_req *q, int64_t n);
/* @q goes, with what it holds: its memory, its payload, its list link. */
void blb_srv_req_free(struct srv_req *q);
/* READs of @sc waiting for the budget start while it allows. */
void blb_srv_pump(struct srv_conn *sc);
/* Memory came back: what waited for it starts (from the main loop). */
void blb_srv_pump_all(struct srv *s);
/* A stream whose client is gone or failed ends (see the definition). */
void blb_srv_stream_drain(struct srv_req *q);
/* A piece's disk read is over (a streamed READ's op.done). */
void blb_srv_piece_done(struct blb_op *op);
/* A disk op is over: answer, unless the client went away (op.done). */
void blb_srv_op_done(struct blb_op *op);

#endif /* BLBENCH_SERVE_H */
