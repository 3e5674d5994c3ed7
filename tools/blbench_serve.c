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

#define SRV_MAX_OFFSET (1ull << 44)	/* no object offset beyond 16 TiB */

/*
 * What one client may make the server hold.  The messenger delivers at
 * most SRV_MAX_INFLIGHT requests of a connection that are not answered
 * yet, and stops reading a client whose replies it cannot send
 * (max_out_bytes, its default).  READs are held to SRV_READ_BUDGET bytes
 * per connection from the start of the disk read until the kernel took
 * the reply: those beyond it wait (decoded, without a buffer) until
 * earlier replies went out, so a client that pipelines large READs and
 * never reads the replies holds about that much, and one READ larger
 * than the budget still runs alone.
 */
#define SRV_MAX_INFLIGHT 32
#define SRV_READ_BUDGET ((uint64_t)64 << 20)
/*
 * Registered buffers on the server's ring, recycled: a READ's file data
 * and a WRITE's payload (the messenger's direct reads) go into one of
 * them instead of fresh memory, which costs a page fault per 4 KiB for
 * every op (see blbench_tcp.c).  Sized for blbench's default op (4 MiB
 * and a frame's overhead), as many as one connection's READ budget holds;
 * larger ops, or ops beyond them, take fresh memory as before (a memlock
 * limit may allow fewer: blb_ring_pool).
 */
#define SRV_POOL_BUF (((size_t)4 << 20) + ((size_t)64 << 10))
#define SRV_POOL_BUFS ((unsigned)(SRV_READ_BUDGET >> 22))
/*
 * Nobody holds a descriptor for free: a client that sends nothing and
 * reads nothing for 2 minutes, or stops half way through a preamble for
 * 10 s, is closed.
 */
#define SRV_IDLE_MS (120u * 1000)
#define SRV_HEADER_MS (10u * 1000)

struct srv_conn;

struct srv_req {
	struct blb_op op;		/* first: ops complete through op.done */
	struct srv *s;
	struct bl_msgr_conn *c;		/* NULL once the client went away */
	struct srv_conn *sc;		/* READ: whose budget it takes */
	struct blb_target *t;		/* READ: where, once it starts */
	uint64_t tag;
	uint64_t len, span;		/* READ */
	uint16_t type;
	struct bl_list payload;		/* WRITE: the data until it is written */
	struct srv_req *prev, *next;
	struct srv_req *wnext;		/* READ: its connection's wait queue */
};

/* A client connection's READ budget. */
struct srv_conn {
	struct bl_msgr_conn *c;
	uint64_t read_bytes;		/* READs started, reply not yet sent */
	struct srv_req *wait, *wait_tail;	/* READs over the budget */
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
	bl_list_clear(&q->payload);
	bl_list_clear(&q->op.data);
	free(q);
}

static void srv_read_start(struct srv_req *q);

/* READs of @sc waiting for the budget start while it allows. */
static void srv_pump(struct srv_conn *sc)
{
	while (sc->wait && (!sc->read_bytes ||
			    sc->read_bytes + sc->wait->len <= SRV_READ_BUDGET)) {
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

	sc->read_bytes += q->len;
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
	r = bl_encode_u64(&l, room);
	r |= bl_encode_u32(&l, t->slots);
	r |= bl_encode_u32(&l, (uint32_t)t->mem_align);
	r |= bl_encode_u32(&l, (uint32_t)t->off_align);
	r |= bl_encode_u64(&l, TCP_MAX_PAYLOAD);
	r |= bl_encode_bytes(&l, t->desc, strlen(t->desc));
	/* last, so that a client that predates it reads on without it */
	r |= bl_encode_u32(&l, (uint32_t)t->blk_align);
	if (r == 0)
		srv_reply(c, tag, 0, &l);
	bl_list_clear(&l);
	(void)s;
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

static void srv_on_frame(void *arg, struct bl_msgr_conn *c,
			 struct bl_msgr_frame *f)
{
	struct srv *s = arg;
	struct blb_target *t;
	char name[BLB_NAME_MAX];
	uint64_t tag, objno = 0, off = 0, span = 0, len = 0;
	uint32_t flags, data_off = 0;
	struct bl_list nl, out;
	struct srv_req *q;
	struct bl_iter it;
	const char *why;
	int r;

	bl_list_init(&nl);
	bl_list_init(&out);
	if (bl_iter_init(&it, &f->payload, 0) < 0 ||
	    bl_decode_u64(&it, &tag) < 0 || bl_decode_u32(&it, &flags) < 0 ||
	    (flags & ~TCP_DIRECT))
		goto bad;
	switch (f->type) {
	case T_HELLO:
	case T_META_PUT:
	case T_META_GET:
	case T_META_DEL:
	case T_LIST:
		break;
	case T_WRITE:
		if (bl_decode_u32(&it, &data_off) < 0)
			goto bad;
		/* fall through */
	case T_READ:
	case T_REMOVE:
		if (bl_decode_u64(&it, &objno) < 0)
			goto bad;
		if (f->type == T_REMOVE)
			break;
		if (bl_decode_u64(&it, &off) < 0 ||
		    bl_decode_u64(&it, &span) < 0 || off > SRV_MAX_OFFSET ||
		    span > SRV_MAX_OFFSET)
			goto bad;
		if (f->type == T_READ &&
		    (bl_decode_u64(&it, &len) < 0 || len > TCP_MAX_PAYLOAD))
			goto bad;
		break;
	default:
		goto bad;
	}
	if (f->type != T_HELLO) {
		r = bl_decode_bytes(&it, &nl);
		if (r == -ENOMEM)
			goto nomem;	/* ours, not the client's fault */
		if (r < 0)
			goto bad;
		if (f->type == T_LIST && bl_list_length(&nl) == 0)
			name[0] = 0;	/* LIST's prefix may be empty: every name */
		else if (!blb_plain_name(&nl, name, sizeof(name)))
			goto bad;
	}

	t = srv_target(s, flags, &why);
	if (!t) {
		srv_reply_text(c, tag, -EIO, why);
		goto out;
	}
	switch (f->type) {
	case T_HELLO:
		srv_hello(s, c, tag, t);
		break;
	case T_WRITE:
		if (data_off < bl_iter_offset(&it) ||
		    data_off > bl_list_length(&f->payload))
			goto bad;
		q = srv_req_new(s, c, tag, T_WRITE);
		if (!q) {
			srv_reply(c, tag, -ENOMEM, NULL);
			break;
		}
		snprintf(q->op.name, sizeof(q->op.name), "%s", name);
		q->op.objno = objno;
		q->op.off = off;
		/* keep only the data: it starts aligned, as the client padded it */
		bl_list_splice(&f->payload, 0, data_off, NULL);
		bl_list_swap(&q->payload, &f->payload);
		r = 0;
		if (t->off_align > 1)	/* copies only what is misaligned */
			r = bl_list_rebuild_aligned_size_and_memory(
				&q->payload, t->off_align, t->mem_align, 1024);
		t->obj_span = span;
		q->op.t0 = blb_now();
		if (r >= 0)
			r = t->ops->write(t, &q->op, &q->payload);
		if (r < 0) {
			srv_reply(c, tag, r, NULL);
			srv_req_free(q);
		}
		break;
	case T_READ: {
		struct srv_conn *sc = srv_conn_of(s, c);

		q = sc ? srv_req_new(s, c, tag, T_READ) : NULL;
		if (!q) {
			srv_reply(c, tag, -ENOMEM, NULL);
			break;
		}
		snprintf(q->op.name, sizeof(q->op.name), "%s", name);
		q->op.objno = objno;
		q->op.off = off;
		q->sc = sc;
		q->t = t;
		q->len = len;
		q->span = span;
		if (sc->read_bytes && sc->read_bytes + len > SRV_READ_BUDGET) {
			if (sc->wait_tail)
				sc->wait_tail->wnext = q;
			else
				sc->wait = q;
			sc->wait_tail = q;
		} else {
			srv_read_start(q);
		}
		break;
	}
	case T_REMOVE:
		srv_reply(c, tag, t->ops->remove(t, name, objno), NULL);
		break;
	case T_META_PUT:
		/* what follows the run name is the metadata */
		r = bl_decode_bytes(&it, &out);
		if (r == -ENOMEM)
			goto nomem;
		if (r < 0)
			goto bad;
		srv_reply(c, tag, t->ops->meta_put(t, name, &out), NULL);
		break;
	case T_META_GET:
		r = t->ops->meta_get(t, name, &out);
		srv_reply(c, tag, r, r == 0 ? &out : NULL);
		break;
	case T_META_DEL:
		srv_reply(c, tag, t->ops->meta_del(t, name), NULL);
		break;
	case T_LIST:
		r = srv_list(t, name, &out);
		srv_reply(c, tag, r, r == 0 ? &out : NULL);
		break;
	}
out:
	bl_list_clear(&nl);
	bl_list_clear(&out);
	return;
nomem:
	srv_reply(c, tag, -ENOMEM, NULL);
	goto out;
bad:
	/* this client only: the messenger logs the reason, others go on */
	bl_msgr_conn_abort(c, -EBADMSG, "a request that does not decode");
	goto out;
}

static void srv_on_close(void *arg, struct bl_msgr_conn *c, int err,
			 const char *reason)
{
	struct srv *s = arg;
	struct srv_conn **pp, *sc = NULL;
	struct srv_req *q;

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
	free(sc);
	/* disk ops of this client finish, but their answers go nowhere */
	for (q = s->reqs; q; q = q->next)
		if (q->c == c) {
			q->c = NULL;
			q->sc = NULL;
		}
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
	struct srv s;
	int lfd, gai = 0, r;

	memset(&s, 0, sizeof(s));
	s.o = *o;
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
	blb_ring_pool(s.u, SRV_POOL_BUFS, SRV_POOL_BUF);
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
	co.max_payload = TCP_MAX_PAYLOAD;
	co.align_data = true;	/* WRITE data lands 4096-aligned for O_DIRECT */
	co.max_inflight = SRV_MAX_INFLIGHT;	/* every request is answered */
	co.idle_timeout_ms = SRV_IDLE_MS;
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
