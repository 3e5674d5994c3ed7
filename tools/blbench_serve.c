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
#include "blbench_serve.h"

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
	q->op.done = blb_srv_op_done;
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

/* What payloads still arriving may hold together (blbench_serve.h). */
static uint64_t srv_rx_budget(const struct srv *s)
{
	return s->o.max_memory / 8;
}

/* The longest payload a client may send: one that fits that share. */
static uint64_t srv_max_payload(const struct srv *s)
{
	uint64_t rx = srv_rx_budget(s);

	return rx < TCP_MAX_PAYLOAD ? rx : TCP_MAX_PAYLOAD;
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
		blb_srv_reply(c, tag, r, NULL);
	else
		blb_srv_reply(c, tag, 0, &l);
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
		blb_srv_reply(c, rq->tag, -ENOBUFS, NULL);
		return;
	}
	q = srv_req_new(s, c, rq->tag, T_WRITE);
	if (!q) {
		blb_srv_reply(c, rq->tag, -ENOMEM, NULL);
		return;
	}
	snprintf(q->op.name, sizeof(q->op.name), "%s", rq->name);
	q->op.objno = rq->objno;
	q->op.off = rq->off;
	/* the data starts aligned, as the client padded it */
	bl_list_swap(&q->payload, &rq->body);
	blb_srv_mem(q, (int64_t)len);
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
		blb_srv_reply(c, rq->tag, r, NULL);
		blb_srv_req_free(q);
	}
}

/* READ: queued behind the connection's others, started as budgets allow. */
static void srv_read(struct srv *s, struct bl_msgr_conn *c,
		     struct blb_target *t, const struct blb_req *rq)
{
	struct srv_conn *sc = srv_conn_of(s, c);
	struct srv_req *q = sc ? srv_req_new(s, c, rq->tag, T_READ) : NULL;

	if (!q) {
		blb_srv_reply(c, rq->tag, -ENOMEM, NULL);
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
	blb_srv_pump(sc);
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
	blb_srv_reply(c, rq->tag, r,
		      r == 0 && bl_list_length(&out) ? &out : NULL);
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
		blb_srv_reply(c, rq.tag, -ENOMEM, NULL);
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
		blb_srv_reply_text(c, rq.tag, -EIO, why);
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
		blb_srv_req_free(q);
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
	/* its pieces still reading end it (blb_srv_piece_done) */
	if (stream)
		blb_srv_stream_drain(stream);
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
	co.max_rx_bytes = srv_rx_budget(&s);
	s.mem += srv_rx_budget(&s);
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
			blb_srv_pump_all(&s);
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
