/* SPDX-License-Identifier: MIT */
/*
 * msgr.c - framed messages: the codec, connections over a bl_uring, and
 * the server helper.
 *
 * Parsing is the hot path of a messenger that receives many small frames,
 * so bl_msgr_parse() has a fast path for the common case: the whole frame
 * lies inside the first segment of the receive list and does not end it.
 * Then the preamble is read in place, both crcs are computed straight over
 * the bytes, the payload becomes one slice written directly into the
 * frame's inline slot (one atomic increment on the raw), and the receive
 * list's first slice is shortened from the front: no allocation, no list
 * walk, no copy.  This reaches into the list's layout (first chunk inline,
 * heap chunks never empty - see list.c), which is why it lives in the
 * library and keeps to three fields: the first slice's off and len and
 * the list's byte count.  Shortening a slice from the front keeps its end,
 * so the list's append hint (_ext) stays true.  Everything else (frames
 * straddling segments, ending one exactly, 1-byte segments) takes the
 * general path through the iterator and bl_list_splice().
 *
 * A connection keeps at most one send in flight: io_uring gives no order
 * between two sends on one socket once either is short or waits for
 * buffer space, so frames queued meanwhile are encoded into the next batch
 * and go out in one sendmsg when the current one completes.  Frames sent
 * while received frames are delivered (replies) go out together when the
 * delivery ends, with a direct non-blocking sendmsg() when nothing is in
 * flight (send_direct()).
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
 * Small frames are where a messenger spends its CPU, so the crcs of short
 * runs (preambles, small payloads) skip bl_crc32c()'s dispatch and folding
 * for a plain chain of SSE4.2 crc32 instructions where the CPU has them
 * (crc_short()); that is the only x86-specific code here.
 *
 * A connection is freed only when nothing can call back into it: no
 * receive, read or send in flight and no callback of its own on the
 * stack.  Closing shuts the socket down (both ways), which makes the
 * kernel finish whatever receive or send is pending, and the last
 * completion frees it after on_close.
 */
#include "internal.h"	/* first: config.h sets _GNU_SOURCE */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <bufferlist/msgr.h>
#include "uring_int.h"

_Static_assert(BL_MSGR_PREAMBLE == 24 && BL_MSGR_TRAILER == 4,
	       "the wire format is fixed");

#define ALIGN_DIO 4096		/* aligned payloads: page boundaries */
#define ALIGN_MIN_DEFAULT ((size_t)16 << 10)
#define DIRECT_MIN_DEFAULT ((size_t)128 << 10)
#define COPY_BELOW_DEFAULT 512
#define NBUFS_DEFAULT 64u
#define BUF_SIZE_DEFAULT ((size_t)64 << 10)
#define BGID_FIRST 0x4000u		/* automatic buffer group ids */
#define BGID_SPAN 0xc000u
#define REASON_MAX 160
#define ENC_STACK_MAX 1024		/* copied frames built on the stack */
#define DIRECT_SEND_MAX ((size_t)64 << 10) /* sendmsg() from a receive */
#define DIRECT_SEND_IOV 64
#define ONESHOT_AFTER_READ 8	/* see start_recv() */

/* ---- codec -------------------------------------------------------------- */

static __thread const char *parse_err = "";

static inline uint32_t ld32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint16_t ld16(const unsigned char *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static inline uint64_t ld64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static inline void st32(unsigned char *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void st16(unsigned char *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void st64(unsigned char *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

void bl_msgr_frame_init(struct bl_msgr_frame *f)
{
	f->type = 0;
	f->flags = 0;
	f->seq = 0;
	bl_list_init(&f->payload);
}

void bl_msgr_frame_release(struct bl_msgr_frame *f)
{
	struct bl_list *l = &f->payload;

	/* what the parser's fast path makes: one inline slice, nothing else */
	if (l->_nseg == 1 && l->_inl.count == 1 && !l->_inl.next &&
	    !l->_abuf) {
		bl__raw_put(l->_inl_seg[l->_inl.start].raw);
		bl__list_forget(l);
		return;
	}
	bl_list_clear(l);
}

#if defined(__x86_64__)
#include <nmmintrin.h>

/*
 * Frames are mostly small, and for a few dozen bytes the dispatching,
 * folding bl_crc32c() costs more than the crc itself (measured here:
 * 5-20 ns for 20-68 bytes).  A plain chain of crc32 instructions is
 * cheaper, but its usual byte/word tail costs a branch misprediction or
 * two per frame when payload lengths vary.  So the odd head of 1..8 bytes
 * goes through ONE crc32q, branch-free: with no pre- or post-inversion
 * the crc is linear and leading zero bytes leave a zero state unchanged,
 * hence
 *   crc(c, D[0..h)) = (c >> 8h) ^ crc32q(0, (D[0..8) ^ c) << (64 - 8h))
 * (the low h bytes of c act on the message's first bytes, the rest of c
 * is shifted out unchanged).  Then whole words follow.  It reads 8 bytes
 * at the start, so it wants len >= 8; longer inputs go to bl_crc32c().
 */
#define SHORT_CRC_MAX 256

__attribute__((target("sse4.2"))) static inline uint32_t
crc_short(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	unsigned h;
	uint64_t v;

	if (len < 8 || len > SHORT_CRC_MAX)
		return bl_crc32c(crc, data, len);
	h = (unsigned)((len - 1) & 7) + 1;
	memcpy(&v, p, 8);
	v = (v ^ crc) << (64 - 8 * h);
	crc = (uint32_t)((uint64_t)crc >> (8 * h - 1) >> 1) ^
	      (uint32_t)_mm_crc32_u64(0, v);
	for (p += h, len -= h; len; len -= 8, p += 8) {
		memcpy(&v, p, 8);
		crc = (uint32_t)_mm_crc32_u64(crc, v);
	}
	return crc;
}
#endif

/*
 * The parser's fast path builds the payload list in place, and
 * bl_msgr_frame_release() takes it apart in place, instead of calling
 * bl_list_init() / bl_list_clear() (a third of the cost of a small frame
 * went there).  Both write every field bl_list_init() writes; should the
 * list's layout change, this assert makes the change visit this file.
 */
_Static_assert(sizeof(struct bl_list) ==
	       4 * sizeof(void *) + sizeof(size_t) + 2 * sizeof(unsigned) +
	       sizeof(struct bl__chunk_hdr) +
	       BL_LIST_INLINE * sizeof(struct bl_ptr),
	       "struct bl_list changed: check list_one() and frame_release()");

/* @l = one slice {raw (its reference moves in), off, len}, len > 0. */
static inline void list_one(struct bl_list *l, struct bl_raw *raw,
			    size_t off, size_t len)
{
	l->_tail = &l->_inl;
	l->_len = len;
	l->_nseg = 1;
	l->_abuf_next = 0;
	l->_abuf = NULL;
	l->_ext = NULL;
	l->_pool = NULL;
	l->_inl.next = NULL;
	l->_inl.start = 0;
	l->_inl.count = 1;
	l->_inl.cap = BL_LIST_INLINE;
	l->_inl._pad = 0;
	l->_inl_seg[0].raw = raw;
	l->_inl_seg[0].off = off;
	l->_inl_seg[0].len = len;
}

/* The first slice of a non-empty list (only the inline chunk may be empty). */
static inline struct bl_ptr *front_seg(struct bl_list *l)
{
	struct bl__chunk_hdr *c = l->_inl.count ? &l->_inl : l->_inl.next;

	return &bl__chunk(c)->seg[c->start];
}

/* Copies header bytes [off, off + n) of @l to @dst (not payload: not
 * counted as a copy). */
static void gather(const struct bl_list *l, size_t off, size_t n, void *dst)
{
	struct bl_iter it;
	const char *d;
	size_t got;
	char *o = dst;

	if (l->_len) {
		const struct bl_ptr *s = front_seg((struct bl_list *)l);

		if (off + n <= s->len) {
			memcpy(dst, s->raw->data + s->off + off, n);
			return;
		}
	}
	bl_iter_init(&it, l, off);
	while (n && (got = bl_iter_get_ptr_and_advance(&it, n, &d))) {
		memcpy(o, d, got);
		o += got;
		n -= got;
	}
}

/* A crc over a short run: crc_short() where the CPU has SSE4.2. */
static uint32_t crc_fast(uint32_t crc, const void *p, size_t n)
{
#if defined(__x86_64__)
	if (bl__likely(__builtin_cpu_supports("sse4.2")))
		return crc_short(crc, p, n);
#endif
	return bl_crc32c(crc, p, n);
}

static void fill_preamble(unsigned char *p, uint16_t type, uint16_t flags,
			  uint64_t seq, uint32_t len)
{
	st32(p, BL_MSGR_MAGIC);
	st16(p + 4, type);
	st16(p + 6, flags);
	st64(p + 8, seq);
	st32(p + 16, len);
	st32(p + 20, crc_fast(BL_MSGR_CRC_SEED, p, 20));
}

int bl_msgr_encode(struct bl_list *out, uint16_t type, uint64_t seq,
		   const struct bl_list *payload, unsigned flags)
{
	size_t plen = payload ? bl_list_length(payload) : 0;
	unsigned char pre[BL_MSGR_PREAMBLE], tr[BL_MSGR_TRAILER];

	if ((flags & ~(0xffffu | BL_MSGR_ENC_COPY)) || payload == out)
		return -EINVAL;
	if (plen > BL_MSGR_PAYLOAD_LIMIT)
		return -E2BIG;
	if ((flags & BL_MSGR_ENC_COPY) && plen <= ENC_STACK_MAX) {
		/* the whole frame in one append: one check of the append
		 * buffer, one memcpy, and a crc straight over the bytes */
		unsigned char buf[BL_MSGR_OVERHEAD + ENC_STACK_MAX];

		fill_preamble(buf, type, (uint16_t)flags, seq, (uint32_t)plen);
		if (plen)
			gather(payload, 0, plen, buf + BL_MSGR_PREAMBLE);
		st32(buf + BL_MSGR_PREAMBLE + plen,
		     crc_fast(BL_MSGR_CRC_SEED, buf + BL_MSGR_PREAMBLE, plen));
		return bl_list_append(out, buf, BL_MSGR_OVERHEAD + plen);
	}
	fill_preamble(pre, type, (uint16_t)flags, seq, (uint32_t)plen);
	/* bl_list_crc32c caches per raw: a payload sent to many peers, or
	 * again, costs O(segments) the next time */
	st32(tr, plen ? bl_list_crc32c(payload, BL_MSGR_CRC_SEED)
		      : BL_MSGR_CRC_SEED);

	if (!plen)
		return bl__list_append2(out, pre, sizeof(pre), tr, sizeof(tr));
	/* all or nothing, allocations first: a failure leaves @out as it was */
	return bl__list_append_frame(out, pre, sizeof(pre), payload,
				     flags & BL_MSGR_ENC_COPY, tr, sizeof(tr));
}

/* crc32c of [off, off + n) of @l, straight over the bytes (no cache). */
static uint32_t crc_range(const struct bl_list *l, size_t off, size_t n,
			  uint32_t crc)
{
	struct bl_iter it;
	const char *d;
	size_t got;

	bl_iter_init(&it, l, off);
	while (n && (got = bl_iter_get_ptr_and_advance(&it, n, &d))) {
		crc = bl_crc32c(crc, d, got);
		n -= got;
	}
	return crc;
}

static inline int bad(const char *why, int err)
{
	parse_err = why;
	return err;
}

/*
 * Checks the preamble at @p (@have bytes of the list, at least 4).
 * Return: 1 when the frame of *@len payload bytes is valid so far, 0 when
 * the preamble is incomplete, or -errno.
 */
typedef uint32_t (*crc_fn)(uint32_t crc, const void *p, size_t n);

/*
 * Checks the preamble at @p (@have bytes of the list, at least 4).
 * Return: 1 when the frame of *@len payload bytes is valid so far, 0 when
 * the preamble is incomplete, or -errno.
 */
static inline __attribute__((always_inline)) int
check_preamble(const unsigned char *p, size_t have, size_t max,
	       uint32_t *len, crc_fn crc)
{
	if (bl__unlikely(ld32(p) != BL_MSGR_MAGIC))
		return bad("bad magic", -EBADMSG);
	if (have < BL_MSGR_PREAMBLE)
		return 0;
	if (bl__unlikely(crc(BL_MSGR_CRC_SEED, p, 20) != ld32(p + 20)))
		return bad("bad header crc", -EBADMSG);
	*len = ld32(p + 16);
	if (bl__unlikely(*len > BL_MSGR_PAYLOAD_LIMIT))
		return bad("impossible payload length", -EBADMSG);
	if (bl__unlikely(*len > max))
		return bad("payload over the size limit", -E2BIG);
	return 1;
}

/*
 * The frame of @len payload bytes at the front of @in spans slices or
 * ends the first one: the iterator and a splice do the work.  @crc is the
 * crc of the payload's first @done bytes (a connection computes it while
 * they arrive; 0 and the seed otherwise).
 */
static int parse_general(struct bl_list *in, struct bl_msgr_frame *f,
			 const unsigned char *p, uint32_t len, size_t done,
			 uint32_t crc)
{
	unsigned char tr[BL_MSGR_TRAILER];
	struct bl_iter it;

	gather(in, BL_MSGR_PREAMBLE + len, sizeof(tr), tr);
	crc = crc_range(in, BL_MSGR_PREAMBLE + done, len - done, crc);
	if (crc != ld32(tr))
		return bad("bad payload crc", -EBADMSG);
	f->type = ld16(p + 4);
	f->flags = ld16(p + 6);
	f->seq = ld64(p + 8);
	bl_list_init(&f->payload);
	bl_iter_init(&it, in, BL_MSGR_PREAMBLE);
	if (bl_iter_copy_list(&it, len, &f->payload)) {
		bl_list_clear(&f->payload);
		return bad("out of memory", -ENOMEM);
	}
	/* from offset 0 no slice is cut with pieces kept on both sides:
	 * cannot fail */
	bl_list_splice(in, 0, BL_MSGR_OVERHEAD + (size_t)len, NULL);
	return 1;
}

/* Everything but the crc routine, which the callers below pick. */
static inline __attribute__((always_inline)) int
parse_body(struct bl_list *in, struct bl_msgr_frame *f, size_t max_payload,
	   crc_fn crc)
{
	size_t have = in->_len, total;
	unsigned char buf[BL_MSGR_PREAMBLE];
	const unsigned char *p;
	struct bl_ptr *s;
	uint32_t len;
	int ret;

	if (!max_payload)
		max_payload = BL_MSGR_DEFAULT_MAX_PAYLOAD;
	if (have < 4)
		return 0;
	s = front_seg(in);
	if (bl__likely(s->len >= BL_MSGR_PREAMBLE)) {
		p = (const unsigned char *)s->raw->data + s->off;
	} else {
		gather(in, 0, have < sizeof(buf) ? have : sizeof(buf), buf);
		p = buf;
	}
	ret = check_preamble(p, have, max_payload, &len, crc);
	if (ret <= 0)
		return ret;
	total = BL_MSGR_OVERHEAD + (size_t)len;
	if (have < total)
		return 0;
	if (s->len == total && have == total && in->_inl.count == 1 &&
	    !in->_inl.next && !in->_abuf) {
		/*
		 * The frame is all the list holds, in its one inline slice
		 * (a request/response connection receives one frame per
		 * receive): the slice's reference moves into the payload and
		 * the list is left empty, as bl_msgr_frame_release() empties
		 * a payload - no splice, no iterator, no atomic.
		 */
		const unsigned char *pl = p + BL_MSGR_PREAMBLE;
		struct bl_raw *raw = s->raw;

		if (bl__unlikely(crc(BL_MSGR_CRC_SEED, pl, len) !=
				 ld32(pl + len)))
			return bad("bad payload crc", -EBADMSG);
		f->type = ld16(p + 4);
		f->flags = ld16(p + 6);
		f->seq = ld64(p + 8);
		if (bl__likely(len)) {
			list_one(&f->payload, raw, s->off + BL_MSGR_PREAMBLE,
				 len);
		} else {
			bl_list_init(&f->payload);
			bl__raw_put(raw);
		}
		bl__list_forget(in);
		return 1;
	}
	if (bl__unlikely(s->len <= total))
		return parse_general(in, f, p, len, 0, BL_MSGR_CRC_SEED);

	/* fast path: the frame is inside the first slice, which goes on */
	{
		const unsigned char *pl = p + BL_MSGR_PREAMBLE;
		struct bl_list *pay = &f->payload;

		if (bl__unlikely(crc(BL_MSGR_CRC_SEED, pl, len) !=
				 ld32(pl + len)))
			return bad("bad payload crc", -EBADMSG);
		f->type = ld16(p + 4);
		f->flags = ld16(p + 6);
		f->seq = ld64(p + 8);
		if (bl__likely(len))
			list_one(pay, bl__raw_get(s->raw),
				 s->off + BL_MSGR_PREAMBLE, len);
		else
			bl_list_init(pay);
		s->off += total;
		s->len -= total;
		in->_len -= total;
		return 1;
	}
}

static int parse_any(struct bl_list *in, struct bl_msgr_frame *f,
		     size_t max_payload)
{
	return parse_body(in, f, max_payload, bl_crc32c);
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static int
parse_sse42(struct bl_list *in, struct bl_msgr_frame *f, size_t max_payload)
{
	return parse_body(in, f, max_payload, crc_short);
}
#endif

int bl_msgr_parse(struct bl_list *in, struct bl_msgr_frame *f,
		  size_t max_payload)
{
#if defined(__x86_64__)
	if (bl__likely(__builtin_cpu_supports("sse4.2")))
		return parse_sse42(in, f, max_payload);
#endif
	return parse_any(in, f, max_payload);
}

const char *bl_msgr_parse_error(void)
{
	return parse_err;
}

/* ---- connections ------------------------------------------------------- */

struct send_rec {
	bl_msgr_send_fn cb;
	void *arg;
};

/*
 * A large payload being received by plain reads.  Aligned: its head is
 * copied into P, an aligned raw filled up to a 4096 boundary, and the
 * rest read after it.  Not aligned: its head stays in the ring slices it
 * arrived in (headl), and the rest is read after them.
 */
struct direct {
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
	int err;
	/* receiving */
	struct bl_list in;
	size_t pc_done;		/* payload bytes of in's first frame */
	uint32_t pc_crc;	/* whose crc is already known */
	struct direct d;
	/* sending */
	struct bl_list outq;
	uint64_t tx_seq;
	unsigned outq_frames, inflight_frames;
	size_t inline_bytes;	/* of the batch in flight, sent directly */
	struct send_rec *recs;	/* FIFO ring of callbacks */
	unsigned rec_cap, rec_head, rec_n, rec_inflight;
	/* the server's list */
	struct bl_msgr_server *srv;
	struct bl_msgr_conn *snext, *sprev;
	struct bl_msgr_conn_stats st;
	char reason[REASON_MAX];
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
};

static _Atomic unsigned bgid_next;

static unsigned short auto_bgid(void)
{
	unsigned n = atomic_fetch_add_explicit(&bgid_next, 1,
					       memory_order_relaxed);

	return (unsigned short)(BGID_FIRST + n % BGID_SPAN);
}

static void vlog(const struct bl_msgr_conn_opts *o, struct bl_msgr_conn *c,
		 const char *fmt, va_list ap)
{
	char buf[256];

	vsnprintf(buf, sizeof(buf), fmt, ap);
	if (o->log)
		o->log(o->log_arg, c, buf);
	else
		fprintf(stderr, "bl_msgr: %s\n", buf);
}

static void __attribute__((format(printf, 3, 4)))
msgr_log(const struct bl_msgr_conn_opts *o, struct bl_msgr_conn *c,
	 const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(o, c, fmt, ap);
	va_end(ap);
}

static void arm(struct bl_msgr_conn *c);
static void process(struct bl_msgr_conn *c);
static void rx_end(struct bl_msgr_conn *c);
static bool start_direct(struct bl_msgr_conn *c);

/* Frees @c once nothing can call back into it any more. */
static void maybe_finish(struct bl_msgr_conn *c)
{
	struct bl_msgr_server *s = c->srv;

	if (!c->closing || c->finished || c->recv_busy || c->read_busy ||
	    c->send_busy || c->depth)
		return;
	c->finished = true;
	if (s) {
		if (c->sprev)
			c->sprev->snext = c->snext;
		else
			s->conns = c->snext;
		if (c->snext)
			c->snext->sprev = c->sprev;
		s->nconns--;
	}
	if (c->o.on_close)
		c->o.on_close(c->o.arg, c, c->err, c->reason);
	bl_list_clear(&c->in);
	bl_list_clear(&c->outq);
	bl_ptr_release(&c->d.P);
	bl_list_clear(&c->d.headl);
	if (c->own_br)
		bl_uring_bufring_destroy(c->br);
	if (!c->o.keep_fd)
		close(c->fd);
	if (c->recs)
		bl__free(c->al, c->recs, c->rec_cap * sizeof(*c->recs),
			 _Alignof(struct send_rec));
	bl__free(c->al, c, sizeof(*c), _Alignof(struct bl_msgr_conn));
}

/*
 * Starts closing: drops frames not yet handed to the kernel, shuts the
 * socket down so that the kernel finishes what is pending.  @log: the
 * reason is worth a line (a malformed frame, an I/O error).
 */
static void __attribute__((format(printf, 4, 5)))
conn_end(struct bl_msgr_conn *c, int err, bool log, const char *fmt, ...)
{
	va_list ap;

	if (c->closing)
		return;
	c->closing = true;
	c->err = err;
	va_start(ap, fmt);
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	va_end(ap);
	if (log)
		msgr_log(&c->o, c, "fd %d: closing: %s", c->fd, c->reason);
	c->depth++;
	/* queued frames never reached the kernel: take them back */
	bl_list_clear(&c->outq);
	c->outq_frames = 0;
	for (unsigned i = c->rec_inflight, n = c->rec_n; i < n; i++) {
		struct send_rec r = c->recs[(c->rec_head + i) &
					    (c->rec_cap - 1)];

		c->rec_n--;	/* a send from the callback gets -EPIPE */
		r.cb(r.arg, -ECANCELED);
	}
	shutdown(c->fd, SHUT_RDWR);
	c->depth--;
	maybe_finish(c);
}

void bl_msgr_conn_close(struct bl_msgr_conn *c, int err, const char *reason)
{
	conn_end(c, err, false, "%s", reason ? reason : "closed");
}

int bl_msgr_conn_fd(const struct bl_msgr_conn *c)
{
	return c->fd;
}

void bl_msgr_conn_stats(const struct bl_msgr_conn *c,
			struct bl_msgr_conn_stats *out)
{
	*out = c->st;
}

/* ---- receiving ----------------------------------------------------------- */

static void deliver(struct bl_msgr_conn *c, struct bl_msgr_frame *f,
		    size_t wire)
{
	c->st.frames_received++;
	c->st.bytes_received += wire;
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
		if (bl_list_length(&c->in))
			conn_end(c, -EPIPE, true,
				 "peer closed in the middle of a frame "
				 "(%zu bytes pending)", bl_list_length(&c->in));
		else
			conn_end(c, 0, false, "peer closed");
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
	conn_end(c, (int)res, res != -ECANCELED, "receive failed: %s",
		 strerror((int)-res));
}

static void got_data(struct bl_msgr_conn *c, struct bl_list *data)
{
	if (c->closing)
		return;
	if (bl_list_claim_append(&c->in, data)) {
		conn_end(c, -ENOMEM, true, "out of memory receiving");
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
		c->in_rx = true;
		got_data(c, data);
		rx_end(c);
	} else if (!(res == -ECANCELED && c->stopping)) {
		recv_ended(c, res);
	}
	if (!more && c->stopping) {
		/* the receive is over: a read takes the large frame */
		c->stopping = false;
		if (!c->closing && !c->read_busy &&
		    bl_list_length(&c->in) >= BL_MSGR_PREAMBLE)
			start_direct(c);
	}
	c->depth--;
	if (!c->recv_busy)
		arm(c);
	maybe_finish(c);
}

static void plain_cb(void *arg, ssize_t res, struct bl_list *data)
{
	pooled_cb(arg, res, data, false);
}

/* Starts the next receive.  0 or -errno (nothing started). */
static int start_recv(struct bl_msgr_conn *c)
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

static void arm(struct bl_msgr_conn *c)
{
	int ret;

	if (c->closing || c->recv_busy || c->read_busy)
		return;
	ret = start_recv(c);
	if (ret)
		conn_end(c, ret, true, "cannot start a receive: %s",
			 strerror(-ret));
}

/* -- aligned payloads -- */

static void direct_cb(void *arg, ssize_t res, struct bl_list *data);

static int direct_read(struct bl_msgr_conn *c, size_t len)
{
	int ret = bl_uring_read(c->u, c->fd, -1, len,
				c->d.aligned ? ALIGN_DIO : 0, direct_cb, c);

	if (!ret) {
		c->read_busy = true;
		c->oneshot_left = ONESHOT_AFTER_READ;
	}
	return ret;
}

/*
 * The preamble of a large payload is in, and no receive is in flight
 * (one-shot receives), so the rest of the frame can come through plain
 * reads into a raw of its own: one read instead of a receive per ring
 * buffer, into memory the allocator recycles (warm in the cache) instead
 * of a ring that cycles through megabytes.  Unaligned, the head already
 * received stays where it is.  Aligned, it is copied into the first
 * aligned raw, which is then filled up to its 4096 boundary by a small
 * read (copied too, at most 4095 bytes); the rest is read straight into
 * an aligned raw of its own.
 * Return: true if started; false leaves everything as it was (the frame
 * then comes through the ring).
 */
static bool start_direct(struct bl_msgr_conn *c)
{
	unsigned char pre[BL_MSGR_PREAMBLE];
	struct direct *d = &c->d;
	size_t have = bl_list_length(&c->in) - BL_MSGR_PREAMBLE;
	size_t first;
	uint32_t len;
	bool align;

	gather(&c->in, 0, sizeof(pre), pre);
	len = ld32(pre + 16);
	align = c->o.align_data && len >= c->o.align_min;
	if (have >= len || (!align && len < c->o.direct_min))
		return false;
	memset(d, 0, sizeof(*d));
	bl_list_init(&d->headl);
	d->type = ld16(pre + 4);
	d->flags = ld16(pre + 6);
	d->seq = ld64(pre + 8);
	d->len = len;
	d->aligned = align;
	if (!align) {
		d->head = d->have = have;
		d->rest = len - have;
		if (direct_read(c, d->rest + BL_MSGR_TRAILER))
			return false;
		/* from offset 0: cannot fail */
		bl_list_splice(&c->in, 0, BL_MSGR_PREAMBLE, NULL);
		bl_list_swap(&d->headl, &c->in);
		c->pc_done = 0;
		return true;
	}
	d->head = have ? bl__align_up(have, ALIGN_DIO) : 0;
	if (d->head > len)
		d->head = len;
	d->rest = len - d->head;
	d->gap_read = d->head - have + (d->rest ? 0 : BL_MSGR_TRAILER);
	if (d->head) {
		d->P.raw = bl_raw_create_aligned(d->head, ALIGN_DIO);
		if (!d->P.raw)
			return false;
		d->P.len = d->head;
	}
	first = d->gap_read ? d->gap_read : d->rest + BL_MSGR_TRAILER;
	if (direct_read(c, first)) {
		bl_ptr_release(&d->P);
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
	gather(&c->in, 0, sizeof(pre), pre);
	len = ld32(pre + 16);
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

static void direct_done(struct bl_msgr_conn *c, struct bl_list *tail)
{
	struct direct *d = &c->d;
	struct bl_msgr_frame f;
	uint32_t crc = BL_MSGR_CRC_SEED;

	if (d->aligned && d->head)
		crc = bl_crc32c(crc, bl_raw_data(d->P.raw), d->head);
	else if (d->head)
		crc = crc_range(&d->headl, 0, d->head, crc);
	if (tail)
		crc = crc_range(tail, 0, d->rest, crc);
	if (crc != ld32(d->tr)) {
		bl_ptr_release(&d->P);
		bl_list_clear(&d->headl);
		conn_end(c, -EBADMSG, true,
			 "malformed frame: bad payload crc (seq %llu)",
			 (unsigned long long)d->seq);
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
		conn_end(c, -ENOMEM, true, "out of memory receiving");
		return;
	}
	c->st.direct_frames++;
	if (d->aligned)
		c->st.aligned_frames++;
	deliver(c, &f, BL_MSGR_OVERHEAD + (size_t)d->len);
}

static void direct_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct bl_msgr_conn *c = arg;
	struct direct *d = &c->d;
	size_t want = d->have < d->head ? d->gap_read
					: d->rest + BL_MSGR_TRAILER;

	c->read_busy = false;
	c->depth++;
	c->in_rx = true;
	if (c->closing) {
		/* dropped */
	} else if (res < 0 || (size_t)res < want) {
		if (res >= 0)
			conn_end(c, -EPIPE, true,
				 "peer closed in the middle of a frame");
		else
			conn_end(c, (int)res, true, "read failed: %s",
				 strerror((int)-res));
	} else if (d->have < d->head) {
		/* the gap up to P's boundary (and the trailer if P ends it) */
		size_t gap = d->head - d->have;

		bl_list_copy_out(data, 0, gap, bl_raw_data(d->P.raw) + d->have);
		c->st.aligned_copied += gap;
		d->have = d->head;
		if (!d->rest) {
			gather(data, gap, BL_MSGR_TRAILER, d->tr);
			direct_done(c, NULL);
		} else {
			int ret = direct_read(c, d->rest + BL_MSGR_TRAILER);

			if (ret)
				conn_end(c, ret, true,
					 "cannot start a read: %s",
					 strerror(-ret));
		}
	} else {
		gather(data, d->rest, BL_MSGR_TRAILER, d->tr);
		/* a tail range: cannot fail */
		bl_list_splice(data, d->rest, BL_MSGR_TRAILER, NULL);
		direct_done(c, data);
	}
	rx_end(c);
	if (c->closing) {
		bl_ptr_release(&d->P);
		bl_list_clear(&d->headl);
	}
	c->depth--;
	if (!c->read_busy)
		arm(c);
	maybe_finish(c);
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
	if (bl_list_rebuild_aligned_size_and_memory(pay, ALIGN_DIO, ALIGN_DIO,
						    0) < 0)
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

	gather(&c->in, 0, sizeof(pre), pre);
	len = ld32(pre + 16);
	if (len < CRC_AHEAD_MIN)
		return;
	if (have > len)
		have = len;
	if (have <= c->pc_done)
		return;
	c->pc_crc = crc_range(&c->in, BL_MSGR_PREAMBLE + c->pc_done,
			      have - c->pc_done,
			      c->pc_done ? c->pc_crc : BL_MSGR_CRC_SEED);
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
	gather(&c->in, 0, sizeof(pre), pre);
	len = ld32(pre + 16);
	if (bl_list_length(&c->in) < BL_MSGR_OVERHEAD + (size_t)len)
		return 0;
	return parse_general(&c->in, f, pre, len, c->pc_done, c->pc_crc);
}

/* Delivers every complete frame in c->in. */
static void process(struct bl_msgr_conn *c)
{
	while (!c->closing) {
		struct bl_msgr_frame f;
		size_t before = bl_list_length(&c->in);
		int ret = parse_resume(c, &f);

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
			conn_end(c, ret, true, "out of memory receiving");
		} else if (ret < 0) {
			char pre[BL_MSGR_PREAMBLE];
			size_t n = before < sizeof(pre) ? before : sizeof(pre);

			gather(&c->in, 0, n, pre);
			if (ret == -E2BIG)
				conn_end(c, ret, true,
					 "malformed frame: payload of %u bytes "
					 "over the limit of %zu",
					 ld32((unsigned char *)pre + 16),
					 c->o.max_payload);
			else
				conn_end(c, ret, true, "malformed frame: %s",
					 bl_msgr_parse_error());
		} else if (before >= BL_MSGR_PREAMBLE) {
			if (c->recv_busy ? !stop_for_direct(c)
					 : !start_direct(c))
				crc_ahead(c);
		}
		return;
	}
}

/* ---- sending ------------------------------------------------------------- */

static void send_cb(void *arg, ssize_t res, struct bl_list *data);

/* Hands outq to the ring as one send.  0 or -errno (nothing changed). */
static int flush(struct bl_msgr_conn *c)
{
	size_t n = bl_list_length(&c->outq);
	int ret = bl_uring_send(c->u, c->fd, &c->outq, 0, send_cb, c);

	if (ret)
		return ret;
	c->send_busy = true;
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
		struct send_rec r = c->recs[c->rec_head];

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
	pop_records(c, res);
	if (res < 0) {
		conn_end(c, (int)res, res != -ECANCELED, "send failed: %s",
			 strerror((int)-res));
	} else if (!c->closing && !c->send_busy && bl_list_length(&c->outq)) {
		int ret = flush(c);

		if (ret)
			conn_end(c, ret, true, "cannot start a send: %s",
				 strerror(-ret));
	}
	c->depth--;
	maybe_finish(c);
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
	/* from offset 0: cannot fail */
	bl_list_splice(&c->outq, 0, (size_t)r, NULL);
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

/* A delivery ended: what its callbacks sent goes out now. */
static void rx_end(struct bl_msgr_conn *c)
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
		conn_end(c, ret, true, "cannot start a send: %s",
			 strerror(-ret));
}

/* Room for one more callback record.  0 or -ENOMEM. */
static int rec_reserve(struct bl_msgr_conn *c)
{
	struct send_rec *n;
	unsigned cap;

	if (c->rec_n < c->rec_cap)
		return 0;
	cap = c->rec_cap ? c->rec_cap * 2 : 16;
	n = bl__alloc(c->al, cap * sizeof(*n), _Alignof(struct send_rec));
	if (!n)
		return -ENOMEM;
	for (unsigned i = 0; i < c->rec_n; i++)
		n[i] = c->recs[(c->rec_head + i) & (c->rec_cap - 1)];
	if (c->recs)
		bl__free(c->al, c->recs, c->rec_cap * sizeof(*c->recs),
			 _Alignof(struct send_rec));
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
	unsigned flags = 0;
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
	if (cb) {
		c->recs[(c->rec_head + c->rec_n) & (c->rec_cap - 1)] =
			(struct send_rec){ cb, arg };
		c->rec_n++;
	}
	if (c->send_busy)
		return 0;
	if (c->in_rx) {
		c->flush_due = true;	/* rx_end() sends the batch */
		return 0;
	}
	ret = flush(c);
	if (ret) {
		/* nothing was in flight, so outq held only this frame */
		bl_list_splice(&c->outq, mark, bl_list_length(&c->outq) - mark,
			       NULL);
		c->tx_seq--;
		c->outq_frames--;
		if (cb)
			c->rec_n--;
	}
	return ret;
}

/* ---- creation ------------------------------------------------------------ */

static void opts_fill(struct bl_msgr_conn_opts *d,
		      const struct bl_msgr_conn_opts *o)
{
	if (o)
		*d = *o;
	else
		memset(d, 0, sizeof(*d));
	if (!d->max_payload)
		d->max_payload = BL_MSGR_DEFAULT_MAX_PAYLOAD;
	if (d->max_payload > BL_MSGR_PAYLOAD_LIMIT)
		d->max_payload = BL_MSGR_PAYLOAD_LIMIT;
	if (!d->nbufs)
		d->nbufs = NBUFS_DEFAULT;
	if (!d->buf_size)
		d->buf_size = BUF_SIZE_DEFAULT;
	if (!d->align_min)
		d->align_min = ALIGN_MIN_DEFAULT;
	if (!d->copy_below)
		d->copy_below = COPY_BELOW_DEFAULT;
	if (!d->direct_min)
		d->direct_min = DIRECT_MIN_DEFAULT;
}

static struct bl_msgr_conn *conn_new(struct bl_uring *u, int fd,
				     const struct bl_msgr_conn_opts *o,
				     struct bl_uring_bufring *shared)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_msgr_conn *c;

	c = bl__alloc(al, sizeof(*c), _Alignof(struct bl_msgr_conn));
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->al = al;
	c->u = u;
	c->fd = fd;
	opts_fill(&c->o, o);
	bl_list_init(&c->in);
	bl_list_init(&c->outq);
	bl_list_init(&c->d.headl);
	/* one-shot receives bound what aligning copies (top of file) */
	c->multishot = !c->o.align_data;
	c->br = shared ? shared : c->o.bufring;
	if (!c->br) {
		c->br = bl_uring_bufring_create(u, c->o.nbufs, c->o.buf_size,
						c->o.bgid ? c->o.bgid
							  : auto_bgid());
		if (!c->br) {
			bl__free(al, c, sizeof(*c),
				 _Alignof(struct bl_msgr_conn));
			return NULL;
		}
		c->own_br = true;
	}
	if (start_recv(c)) {
		/* nothing is in flight: undo */
		if (c->own_br)
			bl_uring_bufring_destroy(c->br);
		bl__free(al, c, sizeof(*c), _Alignof(struct bl_msgr_conn));
		return NULL;
	}
	return c;
}

struct bl_msgr_conn *bl_msgr_conn_new(struct bl_uring *u, int fd,
				      const struct bl_msgr_conn_opts *o)
{
	return conn_new(u, fd, o, NULL);
}

/* ---- the server helper -------------------------------------------------- */

struct bl_msgr_server *bl_msgr_server_new(struct bl_uring *u, int listen_fd,
					  const struct bl_msgr_conn_opts *o)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_msgr_server *s;
	int fl = fcntl(listen_fd, F_GETFL);

	if (fl < 0)
		return NULL;
	s = bl__alloc(al, sizeof(*s), _Alignof(struct bl_msgr_server));
	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->al = al;
	s->u = u;
	s->lfd = listen_fd;
	opts_fill(&s->o, o);
	s->br = s->o.bufring;
	if (!s->br) {
		s->br = bl_uring_bufring_create(u, s->o.nbufs, s->o.buf_size,
						s->o.bgid ? s->o.bgid
							  : auto_bgid());
		if (!s->br) {
			bl__free(al, s, sizeof(*s),
				 _Alignof(struct bl_msgr_server));
			return NULL;
		}
		s->own_br = true;
	}
	if (!(fl & O_NONBLOCK))
		fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK);
	return s;
}

/* Accepts every pending connection.  Return: how many. */
static int accept_all(struct bl_msgr_server *s)
{
	int n = 0;

	for (;;) {
		struct bl_msgr_conn *c;
		int one = 1;
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK &&
			    errno != ECONNABORTED)
				msgr_log(&s->o, NULL, "accept failed: %s",
					 strerror(errno));
			return n;
		}
		/* a messenger is latency bound: no Nagle (as Ceph's
		 * ms_tcp_nodelay); fails harmlessly on AF_UNIX */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = conn_new(s->u, fd, &s->o, s->br);
		if (!c) {
			msgr_log(&s->o, NULL, "fd %d: cannot set up a "
				 "connection (out of memory?): closed", fd);
			close(fd);
			continue;
		}
		c->srv = s;
		c->snext = s->conns;
		if (s->conns)
			s->conns->sprev = c;
		s->conns = c;
		s->nconns++;
		n++;
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Waiting for two kinds of events at once.  An io_uring's fd is readable
 * when completions wait, so poll() takes it together with the listening
 * socket - except on a ring with IORING_SETUP_DEFER_TASKRUN, whose
 * completions are posted only when the task asks the ring for them.
 * There, and on the blocking back end (which polls its own descriptors
 * inside bl_uring_run()), the wait alternates between the ring and the
 * listening socket in slices of SLICE_MS.  A busy server never sleeps;
 * it looks for new connections every ACCEPT_EVERY_MS (not on every call:
 * an accept4() that says EAGAIN was one system call per message).
 *
 * A pollable ring with traffic is waited on in the ring too (ring_wait):
 * a completion for a thread asleep in poll() comes as task work, which
 * interrupts the poll, runs on the way out and restarts it before poll()
 * sees the ring readable - an extra kernel exit and entry and a second
 * set-up of both wait queues per wake-up, where a wait inside
 * io_uring_enter() runs the task work in place.  A slice that passes
 * with nothing to do returns the server to poll(), so an idle server
 * sleeps without a timer.
 */
#define SLICE_MS 5
#define ACCEPT_EVERY_MS 5

int bl_msgr_server_poll(struct bl_msgr_server *s, int timeout_ms)
{
	int64_t now = now_ms();
	int64_t deadline = now + (timeout_ms > 0 ? timeout_ms : 0);
	struct io_uring *ring = bl_uring_ring(s->u);
	bool pollable = ring && !(ring->flags & IORING_SETUP_DEFER_TASKRUN);
	/* a call that may not wait looks every time; the others when due */
	bool lfd_ready = timeout_ms == 0;
	int n = 0;

	for (;;) {
		struct pollfd p[2];
		int r, ms = timeout_ms;

		if (lfd_ready || now >= s->next_accept) {
			n += accept_all(s);
			s->next_accept = now + ACCEPT_EVERY_MS;
			lfd_ready = false;
		}
		r = bl_uring_run(s->u, 0, 0);
		if (r < 0)
			return r;
		n += r;
		if (n || timeout_ms == 0)
			return n;
		if (timeout_ms > 0) {
			if (deadline <= now)
				return 0;
			ms = (int)(deadline - now);
		}
		p[0].fd = s->lfd;
		p[0].events = POLLIN;
		p[0].revents = 0;
		if (pollable && !s->ring_wait) {
			p[1].fd = ring->ring_fd;
			p[1].events = POLLIN;
			p[1].revents = 0;
			if (poll(p, 2, ms) < 0 && errno != EINTR)
				return -errno;
			lfd_ready = p[0].revents;
			if (p[1].revents)
				s->ring_wait = true;
		} else if (bl_uring_inflight(s->u)) {
			if (ms < 0 || ms > SLICE_MS)
				ms = SLICE_MS;
			r = bl_uring_run(s->u, 1, ms);
			if (r < 0)
				return r;
			n += r;
			if (!r)
				s->ring_wait = false;
		} else {
			if (!pollable && (ms < 0 || ms > SLICE_MS))
				ms = SLICE_MS;
			if (poll(p, 1, ms) < 0 && errno != EINTR)
				return -errno;
			lfd_ready = p[0].revents;
		}
		now = now_ms();
	}
}

unsigned bl_msgr_server_nconns(const struct bl_msgr_server *s)
{
	return s->nconns;
}

void bl_msgr_server_destroy(struct bl_msgr_server *s)
{
	if (!s)
		return;
	for (struct bl_msgr_conn *c = s->conns, *n; c; c = n) {
		n = c->snext;	/* closing may free c at once */
		bl_msgr_conn_close(c, 0, "server shutting down");
	}
	while (s->nconns)
		if (bl_uring_run(s->u, 1, 100) < 0)
			break;
	if (s->own_br)
		bl_uring_bufring_destroy(s->br);
	bl__free(s->al, s, sizeof(*s), _Alignof(struct bl_msgr_server));
}
