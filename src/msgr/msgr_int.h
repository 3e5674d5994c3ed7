/* SPDX-License-Identifier: MIT */
/*
 * msgr_int.h - what the messenger's files share (msgr_frame.c, msgr_conn.c,
 * msgr_send.c, msgr_recv.c, msgr_open.c, msgr_server.c): the connection
 * and server structs and the bl__msgr_* functions one file calls in
 * another.  Calls go one way, each file using only those below it:
 *	server -> open -> recv -> send -> conn -> frame
 * The one call against that order, sending restarting the reading that
 * backpressure stopped, goes through the connection's rx_resume pointer,
 * which msgr_open.c sets.  Never installed.
 */
#ifndef BUFFERLIST_MSGR_INT_H
#define BUFFERLIST_MSGR_INT_H

#include "iter_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <bufferlist/msgr.h>
#include <bufferlist/uring.h>
#include "endian_int.h"

#define BL__MSGR_REASON_MAX 160

/*
 * The preamble's fields (the table at the top of msgr.h), named once:
 * every read and write of a preamble goes through these.
 */
#define BL__MSGR_PRE_MAGIC 0	/* u32 BL_MSGR_MAGIC */
#define BL__MSGR_PRE_TYPE 4	/* u16 */
#define BL__MSGR_PRE_FLAGS 6	/* u16 */
#define BL__MSGR_PRE_SEQ 8	/* u64 */
#define BL__MSGR_PRE_LEN 16	/* u32 payload bytes */
#define BL__MSGR_PRE_CRC 20	/* u32 crc32c of the bytes before it */
_Static_assert(BL__MSGR_PRE_CRC + 4 == BL_MSGR_PREAMBLE,
	       "the preamble's crc is its last field");

static inline uint32_t bl__msgr_pre_magic(const unsigned char *p)
{
	return bl__le32_load(p + BL__MSGR_PRE_MAGIC);
}

static inline uint16_t bl__msgr_pre_type(const unsigned char *p)
{
	return bl__le16_load(p + BL__MSGR_PRE_TYPE);
}

static inline uint16_t bl__msgr_pre_flags(const unsigned char *p)
{
	return bl__le16_load(p + BL__MSGR_PRE_FLAGS);
}

static inline uint64_t bl__msgr_pre_seq(const unsigned char *p)
{
	return bl__le64_load(p + BL__MSGR_PRE_SEQ);
}

static inline uint32_t bl__msgr_pre_len(const unsigned char *p)
{
	return bl__le32_load(p + BL__MSGR_PRE_LEN);
}

static inline uint32_t bl__msgr_pre_crc(const unsigned char *p)
{
	return bl__le32_load(p + BL__MSGR_PRE_CRC);
}

/*
 * A send callback and where its frame ends in the byte stream (a count of
 * the connection's bytes, as tx_bytes): a send that fails part way tells
 * by it which frames went out whole.
 */
struct bl__msgr_send_rec {
	bl_msgr_send_fn cb;
	void *arg;
	uint64_t end;
};

/*
 * A large payload being received by plain reads.  Aligned: its head is
 * copied into P, an aligned raw filled up to an opts.align boundary, and the
 * rest read after it.  Not aligned: its head stays in the ring slices it
 * arrived in (headl), and the rest is read after them.  The rest (and the
 * trailer) is read in pieces that grow as they fill (restl), so memory
 * follows the bytes that arrived, not the length the preamble claims.
 */
struct bl__msgr_direct {
	uint16_t type, flags;
	uint64_t seq;
	uint32_t len;		/* payload bytes */
	bool aligned;
	size_t head;		/* payload bytes before the read rest */
	size_t have;		/* of which present so far */
	size_t rest;		/* payload bytes read straight after them */
	size_t gap_read;	/* bytes the first read asks for */
	struct bl_ptr P;	/* aligned: the first raw, or empty */
	struct bl_list headl;	/* not aligned: the head's ring slices */
	struct bl_list restl;	/* the rest's pieces read so far */
	size_t got;		/* bytes in restl (trailer included) */
	size_t want;		/* bytes the read in flight asks for */
	size_t piece;		/* what the next piece may ask for */
	uint32_t crc;		/* of the head and restl's payload bytes */
	unsigned char tr[BL_MSGR_TRAILER];
};

struct bl_msgr_conn {
	struct bl_uring *u;
	int fd;
	struct bl_msgr_conn_opts o;
	const struct bl__allocator *al;
	struct bl_uring_bufring *br;
	bool own_br;
	bool multishot;
	bool stopping;		/* multishot receive stopped for a read */
	unsigned oneshot_left;	/* receives to arm one-shot after a read */
	/* what may still call back */
	bool recv_busy;		/* a receive (pooled or plain) */
	bool read_busy;		/* a read of a large payload */
	bool send_busy;
	bool in_rx;		/* delivering received frames */
	bool flush_due;		/* frames queued meanwhile, not sent yet */
	unsigned depth;		/* our callbacks on the stack */
	bool closing, finished;
	bool dry;		/* the ring ran dry: next receive is plain */
	bool paused;		/* receiving stopped by backpressure */
	/* the receive side's bl__msgr_rx_resume, set by msgr_open.c: sending
	 * restarts reading when its queue drains without calling up into
	 * msgr_recv.c */
	void (*rx_resume)(struct bl_msgr_conn *c);
	bool rd_eof;		/* the peer sends nothing more */
	int err;
	/* receiving */
	struct bl_list in;
	bool polling;		/* reading the socket itself (busy_poll_us) */
	struct bl_ptr ib;	/* the unused rest of the raw it reads into */
	size_t pc_done;		/* payload bytes of in's first frame */
	uint32_t pc_crc;	/* whose crc is already known */
	struct bl__msgr_direct d;
	/* sending */
	struct bl_list outq;
	uint64_t tx_seq;
	unsigned outq_frames, inflight_frames;
	size_t inline_bytes;	/* of the batch in flight, sent directly */
	uint64_t inflight_at;	/* the stream offset its ring part starts at */
	size_t inflight_bytes;	/* of the batch in flight, in the ring */
	size_t out_bytes;	/* queued or in flight, not taken yet */
	uint64_t tx_bytes;	/* ever queued (taken: tx_bytes - out_bytes) */
	uint64_t reply_end;	/* tx_bytes after the last reply queued */
	unsigned unanswered;	/* frames delivered (max_inflight only) */
	struct bl__msgr_send_rec *recs;	/* FIFO ring of callbacks */
	unsigned rec_cap, rec_head, rec_n, rec_inflight;
	/*
	 * A frame sent in pieces (bl_msgr_stream_begin): while it is open,
	 * frames sent wait in held, encoded, their callbacks in hrecs, and
	 * join outq behind its last piece.
	 */
	bool streaming;
	bool stream_reply;	/* it answers the peer (reply_end) */
	bool held_reply;	/* a held frame does */
	size_t stream_left;	/* payload bytes still to come */
	uint32_t stream_crc;	/* of those that came */
	struct bl_list held;
	unsigned held_frames;
	struct bl__msgr_send_rec *hrecs;
	unsigned hrec_n, hrec_cap;
	/* timeouts (the server's connections) */
	uint64_t rx_raw;	/* bytes that came in, frames or not */
	uint64_t act_seen;	/* rx_raw + bytes sent, at act_at */
	int64_t act_at;		/* ms: when that last moved; 0: not yet */
	uint64_t acked_seen;	/* bytes the peer acknowledged (TCP), then */
	uint64_t received_seen;	/* bytes of the peer's that came (TCP), then */
	uint64_t take_seen;	/* tx_bytes - out_bytes, at take_at */
	int64_t take_at;	/* ms: when the peer last took a byte of
				 * ours, or had none waiting; 0: not yet */
	int64_t hdr_at;		/* ms: a preamble partly in since; 0: none */
	uint64_t hdr_frames;	/* frames_received then */
	/* the server's receive budget (max_rx_bytes) */
	size_t rx_grant;	/* reserved for the direct frame */
	size_t rx_want;		/* waiting: what the next one needs */
	uint64_t rx_ticket;	/* waiting: its place in the queue */
	bool rx_wait;		/* waiting for the budget */
	/* the server's list */
	struct bl_msgr_server *srv;
	struct bl_msgr_conn *snext, *sprev;
	struct bl_msgr_conn_stats st;
	char reason[BL__MSGR_REASON_MAX];
};

struct bl_msgr_server {
	struct bl_uring *u;
	int lfd;
	struct bl_msgr_conn_opts o;
	const struct bl__allocator *al;
	struct bl_uring_bufring *br;
	bool own_br;
	struct bl_msgr_conn *conns;
	unsigned nconns;
	int64_t next_accept;	/* ms: when to look for connections again */
	bool ring_wait;		/* busy: wait in the ring, not in poll() */
	bool accept_paused;	/* out of descriptors: until next_accept */
	int backoff_ms;		/* the last pause; 0: accept4() succeeded */
	int64_t log_next;	/* ms: the next accept failure worth a line */
	unsigned log_suppressed;	/* failures not logged since */
	int64_t next_sweep;	/* ms: when to check timeouts again */
	bool sweep_due;		/* and whether an idle server must wake then */
	/* the receive budget: reserved by direct frames, and the queue of
	 * connections waiting for it (their rx_ticket orders them) */
	size_t rx_held;
	unsigned rx_waiting;
	uint64_t rx_tickets;
};

/* ---- msgr_frame.c ------------------------------------------------------- */

/* Copies header bytes [off, off + n) of @l to @dst (not payload: not
 * counted as a copy). */
void bl__msgr_gather(const struct bl_list *l, size_t off, size_t n,
		     void *dst);

/* The BL_MSGR_PREAMBLE bytes of a frame (no wire flags) into @p. */
void bl__msgr_preamble(unsigned char *p, uint16_t type, uint64_t seq,
		       uint32_t len);

/* crc32c of [off, off + n) of @l, straight over the bytes (no cache). */
uint32_t bl__msgr_crc_range(const struct bl_list *l, size_t off, size_t n,
			    uint32_t crc);

/*
 * bl_msgr_parse() for a frame of @len payload bytes at the front of @in
 * whose preamble @p was checked, by the iterator and a splice.  @crc is
 * the crc of the payload's first @done bytes (a connection computes it
 * while they arrive; 0 and the seed otherwise).
 * Return: 1, or -EBADMSG / -ENOMEM (@in unchanged).
 */
int bl__msgr_parse_general(struct bl_list *in, struct bl_msgr_frame *f,
			   const unsigned char *p, uint32_t len, size_t done,
			   uint32_t crc);

/* ---- msgr_conn.c -------------------------------------------------------- */

/* One line to @o's log (stderr without one). */
void __attribute__((format(printf, 3, 4)))
bl__msgr_log(const struct bl_msgr_conn_opts *o, struct bl_msgr_conn *c,
	     const char *fmt, ...);

/* Frees @c once nothing can call back into it any more. */
void bl__msgr_maybe_finish(struct bl_msgr_conn *c);

/*
 * Starts closing: drops frames not yet handed to the kernel, shuts the
 * socket down so that the kernel finishes what is pending.  For ends the
 * peer did not cause (its clean end, ours: out of memory, an operation
 * the ring refused).  @log: the reason is worth a line.
 */
void __attribute__((format(printf, 4, 5)))
bl__msgr_conn_end(struct bl_msgr_conn *c, int err, bool log,
		  const char *fmt, ...);

/*
 * bl__msgr_conn_end() for an end the peer caused (a malformed frame, a
 * timeout, a frame cut short): resets the connection instead, which
 * drops what the kernel still holds for the peer, and logs the reason.
 */
void __attribute__((format(printf, 3, 4)))
bl__msgr_conn_abort(struct bl_msgr_conn *c, int err, const char *fmt, ...);

/*
 * Whether a failed receive, read or send's @err (negative) comes from the
 * peer or the network (a reset, a broken pipe, a timeout, an unreachable
 * host) rather than from this side (out of memory, no buffer, a request
 * the kernel refused, the ring being destroyed).
 */
bool bl__msgr_err_is_peers(int err);

/*
 * A receive, read or send of @c failed with @err ("@what failed: ..."):
 * the peer's or the network's errors end it as bl__msgr_conn_abort()
 * does, ours gracefully (answers the kernel holds still reach the peer),
 * -ECANCELED (the ring is being destroyed) without a log line.
 */
void bl__msgr_conn_failed(struct bl_msgr_conn *c, int err, const char *what);

/*
 * The peer shut its side down (rd_eof): closes @c once every frame it
 * sent was delivered and answered (max_inflight) and every reply went to
 * the kernel; a partial frame left over resets it with -EPIPE.
 */
void bl__msgr_eof_check(struct bl_msgr_conn *c);

/*
 * Closes @c with -ETIMEDOUT if its idle or preamble timeout expired by
 * @now (ms, CLOCK_MONOTONIC): the server calls it every SWEEP_MS.
 * Return: true when a preamble timeout is running (@c stays open).
 */
bool bl__msgr_conn_expire(struct bl_msgr_conn *c, int64_t now);

/* @d = @o (NULL: zero) with every 0 replaced by its default. */
void bl__msgr_opts_fill(struct bl_msgr_conn_opts *d,
			const struct bl_msgr_conn_opts *o);

/* Whether @o (NULL: the defaults) asks for nothing impossible. */
bool bl__msgr_opts_valid(const struct bl_msgr_conn_opts *o);

/* A buffer group id from the process-wide counter. */
unsigned short bl__msgr_auto_bgid(void);

/*
 * A connection over @fd receiving into @shared (NULL: o->bufring, or a
 * ring of its own).  Return: new, or NULL (nothing changed).
 */
struct bl_msgr_conn *bl__msgr_conn_new(struct bl_uring *u, int fd,
				       const struct bl_msgr_conn_opts *o,
				       struct bl_uring_bufring *shared);

/* Whether @len more bytes fit @s's receive budget: one payload over the
 * whole budget fits when nothing is held, so that it goes at all. */
static inline bool bl__msgr_rx_fits(const struct bl_msgr_server *s,
				    size_t len)
{
	return !s->rx_held || s->rx_held + len <= s->o.max_rx_bytes;
}

/* Reserves @len bytes of its server's receive budget for @c's direct
 * frame, taking @c out of the queue if it waited there. */
static inline void bl__msgr_rx_grant(struct bl_msgr_conn *c, size_t len)
{
	if (c->rx_wait) {
		c->rx_wait = false;
		c->srv->rx_waiting--;
	}
	c->srv->rx_held += len;
	c->rx_grant = len;
}

/*
 * Gives back what @c reserved of its server's receive budget and leaves
 * the queue of those waiting for it: its direct frame was delivered or
 * dropped, or it ends.  The server's next poll serves the queue.
 */
static inline void bl__msgr_rx_release(struct bl_msgr_conn *c)
{
	if (c->rx_grant) {
		c->srv->rx_held -= c->rx_grant;
		c->rx_grant = 0;
	}
	if (c->rx_wait) {
		c->rx_wait = false;
		c->srv->rx_waiting--;
	}
}

/* ---- msgr_recv.c -------------------------------------------------------- */

/* Starts the next receive.  0 or -errno (nothing started). */
int bl__msgr_start_recv(struct bl_msgr_conn *c);

/*
 * Whether @c is over a backpressure limit (max_out_bytes, max_inflight)
 * or waits for its server's receive budget (max_rx_bytes): then it
 * delivers no frame and arms no receive.  The bytes count only
 * while a reply is among them: a connection that streams frames of its
 * own accord never stops reading for them (two such peers would stall
 * each other), only one the peer makes answer.
 */
static inline bool bl__msgr_throttled(const struct bl_msgr_conn *c)
{
	return c->rx_wait || (c->out_bytes >= c->o.max_out_bytes &&
		c->reply_end > c->tx_bytes - c->out_bytes) ||
	       (c->o.max_inflight && c->unanswered >= c->o.max_inflight);
}

/*
 * Resumes a connection that backpressure stopped, if it is under its
 * limits again: delivers the frames it holds and arms a receive.  Called
 * from the connection's own completions only (never from an application
 * call), since it runs on_frame.
 */
void bl__msgr_rx_resume(struct bl_msgr_conn *c);

/* ---- msgr_send.c -------------------------------------------------------- */

/* A delivery ended: what its callbacks sent goes out now. */
void bl__msgr_rx_end(struct bl_msgr_conn *c);

#endif /* BUFFERLIST_MSGR_INT_H */
