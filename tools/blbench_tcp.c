/* SPDX-License-Identifier: MIT */
/*
 * blbench_tcp.c - the tcp:HOST:PORT target: the client of a remote
 * `blbench serve`, over one messenger connection (bufferlist/msgr.h) on a
 * ring of its own, speaking the protocol of blbench_proto.h with up to -t
 * requests in flight, each matched to its reply by a tag.  Replies only
 * hand ops to their owners (blb_op_complete), from poll.  It reaches the
 * rest of blbench only through blbench_target.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <bufferlist/msgr.h>
#include "blbench_target.h"
#include "blbench_proto.h"

struct tcp_sync {
	bool done;
	int64_t res;
	struct bl_list data;
};

struct tcp_slot {
	uint32_t gen;
	bool used;
	struct blb_op *op;		/* an async op, or ... */
	struct tcp_sync *sync;		/* ... a call someone waits for */
	uint64_t most;			/* the largest result it may have */
	unsigned next_free;
};

struct tcp_target {
	struct blb_target t;
	struct bl_uring *u;
	struct bl_msgr_conn *c;		/* NULL once closed */
	bool closing;
	uint32_t flags;
	size_t pad;			/* WRITE data offsets: server's alignment */
	uint64_t max_payload;
	unsigned timeout;		/* --op-timeout, for calls too (0: none) */
	struct tcp_slot *slots;
	unsigned nslots, free_head;
	char addr[BLB_NAME_MAX];
};

#define NO_SLOT UINT32_MAX

/*
 * Read replies come in through the messenger's direct reads (align_data),
 * each into memory of its own.  Fresh from malloc, that memory is mapped
 * anew for every reply (glibc maps large blocks and trims the heap top
 * when they are freed), and the kernel's receive copy then takes a page
 * fault per 4 KiB: on the VMs measured that cost more than the copy
 * itself (docs/BENCHMARKS.md, the tcp read path).  Registered buffers
 * recycled from a pool are mapped once, warm, and read with READ_FIXED;
 * a reply's rest fits one (the messenger then reads it in one piece).
 * Four: the reply being read and replies still held by the run's
 * verification (fewer under a memlock limit: one still serves a reply at
 * a time).  Ops above TCP_POOL_OP_MAX get none: the buffers are pinned
 * for the life of the connection.  Without the pool (no io_uring, a
 * limit below one buffer) reads fall back to fresh memory.
 */
#define TCP_POOL_BUFS 4u
#define TCP_POOL_OP_MAX ((uint64_t)16 << 20)
#define TCP_POOL_SLACK ((size_t)64 << 10)	/* reply header, trailer */

static int slot_alloc(struct tcp_target *tt, uint64_t *tag)
{
	struct tcp_slot *s;
	unsigned i;

	if (tt->free_head == NO_SLOT) {
		unsigned n = tt->nslots ? tt->nslots * 2 : 64;
		struct tcp_slot *ns = realloc(tt->slots, n * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		memset(ns + tt->nslots, 0, (n - tt->nslots) * sizeof(*ns));
		for (i = tt->nslots; i < n; i++)
			ns[i].next_free = i + 1 < n ? i + 1 : NO_SLOT;
		tt->free_head = tt->nslots;
		tt->slots = ns;
		tt->nslots = n;
	}
	i = tt->free_head;
	s = &tt->slots[i];
	tt->free_head = s->next_free;
	s->used = true;
	s->gen++;
	s->op = NULL;
	s->sync = NULL;
	s->most = 0;
	*tag = (uint64_t)s->gen << 32 | i;
	return (int)i;
}

static void slot_free(struct tcp_target *tt, unsigned i)
{
	tt->slots[i].used = false;
	tt->slots[i].op = NULL;
	tt->slots[i].sync = NULL;
	tt->slots[i].next_free = tt->free_head;
	tt->free_head = i;
}

/* The slot a reply's tag names, or NULL for a tag we never sent. */
static struct tcp_slot *slot_find(struct tcp_target *tt, uint64_t tag,
				  unsigned *idx)
{
	unsigned i = (unsigned)(tag & 0xffffffffu);

	if (i >= tt->nslots || !tt->slots[i].used ||
	    tt->slots[i].gen != (uint32_t)(tag >> 32))
		return NULL;
	*idx = i;
	return &tt->slots[i];
}

static void slot_finish(struct tcp_target *tt, unsigned i, int64_t res,
			struct bl_list *data)
{
	struct tcp_slot *s = &tt->slots[i];
	struct blb_op *op = s->op;
	struct tcp_sync *sync = s->sync;

	slot_free(tt, i);
	if (op) {
		blb_op_complete(op, (ssize_t)res, res >= 0 ? data : NULL);
	} else if (sync) {
		sync->res = res;
		if (res >= 0 && data)
			bl_list_claim_append(&sync->data, data);
		sync->done = true;
	}
}

static void tcp_on_frame(void *arg, struct bl_msgr_conn *c,
			 struct bl_msgr_frame *f)
{
	struct tcp_target *tt = arg;
	struct bl_iter it;
	uint64_t tag, res;
	unsigned idx;

	struct tcp_slot *s;

	if (f->type != T_REPLY || bl_iter_init(&it, &f->payload, 0) < 0 ||
	    bl_decode_u64(&it, &tag) < 0 || bl_decode_u64(&it, &res) < 0 ||
	    !(s = slot_find(tt, tag, &idx))) {
		bl_msgr_conn_abort(c, -EBADMSG, "a reply that answers nothing");
		return;
	}
	/*
	 * -errno, or at most what was asked (bytes written or read; 0 for a
	 * call): anything else, -(1 << 32) or INT64_MIN included, is not an
	 * answer, and must not pass for one where an int would read it.  The
	 * slot fails with the connection (tcp_on_close).
	 */
	if ((int64_t)res < 0 ? (int64_t)res < -BLB_ERRNO_MAX : res > s->most) {
		bl_msgr_conn_abort(c, -EPROTO, "a reply whose result is out of "
				   "range");
		return;
	}
	/* what follows the 16-byte reply header is the data, shared */
	bl_list_splice(&f->payload, 0, 16, NULL);
	slot_finish(tt, idx, (int64_t)res, &f->payload);
}

static void tcp_on_close(void *arg, struct bl_msgr_conn *c, int err,
			 const char *reason)
{
	struct tcp_target *tt = arg;
	unsigned i;

	(void)c;
	tt->c = NULL;
	if (err && !tt->closing)
		fprintf(stderr, "blbench: %s: connection closed: %s\n",
			tt->t.desc, reason);
	/* whatever was waiting for a reply will not get one */
	for (i = 0; i < tt->nslots; i++)
		if (tt->slots[i].used)
			slot_finish(tt, i, err ? err : -ECONNRESET, NULL);
}

/*
 * @q (its tag and flags filled in here) encoded and sent, under a slot
 * of its own.  Return: the slot's index (the reply will find it), or
 * -errno (no slot taken).
 */
static int tcp_send(struct tcp_target *tt, struct blb_req *q)
{
	struct bl_list l;
	int i, r;

	if (!tt->c)
		return -ENOTCONN;
	i = slot_alloc(tt, &q->tag);
	if (i < 0)
		return i;
	q->flags = tt->flags;
	bl_list_init(&l);
	r = blb_req_encode(q, tt->pad, &l);
	if (r == 0)
		r = bl_msgr_send(tt->c, q->type, &l, NULL, NULL);
	bl_list_clear(&l);
	if (r < 0) {
		slot_free(tt, (unsigned)i);
		return r;
	}
	return i;
}

/* A request whose reply the caller waits for; the reply's data into @out. */
static int tcp_call(struct tcp_target *tt, struct blb_req *q,
		    struct bl_list *out)
{
	struct tcp_sync sync = { .done = false };
	double deadline = blb_now() + tt->timeout;
	int i, r = -EIO;

	bl_list_init(&sync.data);
	i = tcp_send(tt, q);
	if (i < 0)
		return i;
	/* no callback can run before the ring does: set in time */
	tt->slots[i].sync = &sync;
	/* a server that stopped answering must not hang the caller for good */
	while (!sync.done) {
		r = bl_uring_run(tt->u, 1, 1000);
		if (r < 0 && r != -ETIME && r != -EINTR)
			break;
		if (sync.done)
			break;
		if (blb_stop > 1) {
			r = -EINTR;
			break;
		}
		if (tt->timeout && blb_now() > deadline) {
			r = -ETIMEDOUT;
			break;
		}
	}
	if (!sync.done) {
		/* forget the slot: a late reply then answers nothing we wait for */
		unsigned idx;

		for (idx = 0; idx < tt->nslots; idx++)
			if (tt->slots[idx].sync == &sync)
				slot_free(tt, idx);
		bl_list_clear(&sync.data);
		return r < 0 ? r : -EIO;
	}
	if (out)
		bl_list_claim_append(out, &sync.data);
	bl_list_clear(&sync.data);
	return sync.res < 0 ? (int)sync.res : 0;
}

/* @q's name from @name; -ENAMETOOLONG if it does not fit. */
static int req_name(struct blb_req *q, const char *name)
{
	if (strlen(name) >= sizeof(q->name))
		return -ENAMETOOLONG;
	strcpy(q->name, name);
	return 0;
}

static int tcp_write(struct blb_target *t, struct blb_op *op,
		     const struct bl_list *data)
{
	struct tcp_target *tt = (struct tcp_target *)t;
	struct blb_req q;
	int i;

	blb_req_init(&q, T_WRITE);
	q.objno = op->objno;
	q.off = op->off;
	q.span = t->obj_span;
	i = req_name(&q, op->name);
	/* shared, not copied: the encoder shares them again */
	if (i == 0 && bl_list_append_list(&q.body, data))
		i = -ENOMEM;
	if (i == 0)
		i = tcp_send(tt, &q);
	blb_req_clear(&q);
	if (i < 0)
		return i;
	tt->slots[i].op = op;
	tt->slots[i].most = bl_list_length(data);
	return 0;
}

static int tcp_read(struct blb_target *t, struct blb_op *op, size_t len)
{
	struct tcp_target *tt = (struct tcp_target *)t;
	struct blb_req q;
	int i;

	blb_req_init(&q, T_READ);
	q.objno = op->objno;
	q.off = op->off;
	q.span = t->obj_span;
	q.len = len;
	i = req_name(&q, op->name);
	if (i == 0)
		i = tcp_send(tt, &q);
	if (i < 0)
		return i;
	tt->slots[i].op = op;
	tt->slots[i].most = len;
	return 0;
}

static int tcp_poll(struct blb_target *t, int timeout_ms)
{
	struct tcp_target *tt = (struct tcp_target *)t;

	return blb_ring_poll(tt->u, timeout_ms);
}

static int tcp_remove(struct blb_target *t, const char *name, uint64_t objno)
{
	struct blb_req q;
	int r;

	blb_req_init(&q, T_REMOVE);
	q.objno = objno;
	r = req_name(&q, name);
	if (r == 0)
		r = tcp_call((struct tcp_target *)t, &q, NULL);
	return r;
}

static int tcp_meta_put(struct blb_target *t, const char *run,
			const struct bl_list *m)
{
	struct blb_req q;
	int r;

	blb_req_init(&q, T_META_PUT);
	r = req_name(&q, run);
	if (r == 0 && bl_list_append_list(&q.body, m))
		r = -ENOMEM;
	if (r == 0)
		r = tcp_call((struct tcp_target *)t, &q, NULL);
	blb_req_clear(&q);
	return r;
}

/* A request of @type whose one field is the name @s. */
static int tcp_run_call(struct blb_target *t, uint16_t type, const char *s,
			struct bl_list *out)
{
	struct blb_req q;
	int r;

	blb_req_init(&q, type);
	r = req_name(&q, s);
	if (r == 0)
		r = tcp_call((struct tcp_target *)t, &q, out);
	return r;
}

static int tcp_meta_get(struct blb_target *t, const char *run,
			struct bl_list *out)
{
	return tcp_run_call(t, T_META_GET, run, out);
}

static int tcp_meta_del(struct blb_target *t, const char *run)
{
	return tcp_run_call(t, T_META_DEL, run, NULL);
}

static int tcp_list(struct blb_target *t, const char *prefix,
		    int (*fn)(void *arg, const char *name), void *arg)
{
	char name[BLB_NAME_MAX];
	struct bl_list out, nl;
	struct bl_iter it;
	uint32_t count;
	int r;

	bl_list_init(&out);
	bl_list_init(&nl);
	r = tcp_run_call(t, T_LIST, prefix, &out);
	if (r == 0) {
		bl_iter_init(&it, &out, 0);
		r = bl_decode_u32(&it, &count);
	}
	while (r == 0 && count--) {
		bl_list_clear(&nl);
		r = bl_decode_bytes(&it, &nl);
		if (r == 0 && !blb_plain_name(&nl, name, sizeof(name)))
			r = -EBADMSG;
		if (r == 0)
			r = fn(arg, name);
	}
	bl_list_clear(&nl);
	bl_list_clear(&out);
	return r;
}

static void tcp_close(struct blb_target *t)
{
	struct tcp_target *tt = (struct tcp_target *)t;
	double deadline = blb_now() + 10;

	tt->closing = true;
	if (tt->c)
		bl_msgr_conn_close(tt->c, 0, NULL);
	while (tt->c && blb_now() < deadline)
		bl_uring_run(tt->u, 1, 100);
	bl_uring_destroy(tt->u);
	free(tt->slots);
	free(tt);
}

static const struct blb_target_ops tcp_ops = {
	.kind = "tcp",
	.write = tcp_write,
	.read = tcp_read,
	.poll = tcp_poll,
	.remove = tcp_remove,
	.meta_put = tcp_meta_put,
	.meta_get = tcp_meta_get,
	.meta_del = tcp_meta_del,
	.list = tcp_list,
	.close = tcp_close,
};

/*
 * -errno, or 1 when the name did not resolve: then *@gai is getaddrinfo's
 * EAI_ code, whose message (gai_strerror) says more than any errno.
 */
static int tcp_connect(const char *host, const char *port, int *fdp,
		       int *gai)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, r, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = getaddrinfo(host, port, &hints, &res);
	if (r == EAI_SYSTEM)
		return -errno;
	if (r) {
		*gai = r;
		return 1;
	}
	r = -ECONNREFUSED;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return r;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	return 0;
}

int blb_tcp_open(struct blb_target **out, const char *spec,
		 const struct blb_opts *o, bool create, char *err,
		 size_t len)
{
	struct bl_msgr_conn_opts co;
	char host[BLB_NAME_MAX], port[32], desc[BLB_NAME_MAX];
	struct tcp_target *tt;
	struct bl_list reply, dl;
	struct blb_req hello;
	uint64_t room, maxp;
	uint32_t slots, mem, off, blk;
	struct bl_iter it;
	int fd = -1, gai = 0, r;

	(void)create;
	if (blb_split_hostport(spec, host, sizeof(host), port,
			       sizeof(port)) < 0)
		return blb_fail(err, len, 0, "cannot open target tcp:%s: not HOST:PORT",
			    spec);
	tt = calloc(1, sizeof(*tt));
	if (!tt)
		return blb_fail(err, len, -ENOMEM, "tcp:%s", spec);
	tt->t.ops = &tcp_ops;
	tt->free_head = NO_SLOT;
	tt->flags = o->direct ? TCP_DIRECT : 0;
	tt->timeout = o->op_timeout;
	tt->t.direct = o->direct;
	snprintf(tt->addr, sizeof(tt->addr), "tcp:%s", spec);
	snprintf(tt->t.desc, sizeof(tt->t.desc), "%s", tt->addr);
	r = tcp_connect(host, port, &fd, &gai);
	if (r > 0) {
		r = blb_fail(err, len, 0, "cannot connect to %s: %s", tt->addr,
			     gai_strerror(gai));
		free(tt);
		return r;
	}
	if (r < 0) {
		r = blb_fail(err, len, r, "cannot connect to %s", tt->addr);
		free(tt);
		return r;
	}
	tt->u = blb_make_ring(o);
	if (tt->u && o->op_size <= TCP_POOL_OP_MAX)
		blb_ring_pool(tt->u, TCP_POOL_BUFS,
			      (size_t)o->op_size + TCP_POOL_SLACK);
	memset(&co, 0, sizeof(co));
	co.on_frame = tcp_on_frame;
	co.on_close = tcp_on_close;
	co.arg = tt;
	co.max_payload = TCP_MAX_PAYLOAD;
	co.align_data = true;	/* large read replies straight into raws */
	tt->c = tt->u ? bl_msgr_conn_new(tt->u, fd, &co) : NULL;
	if (!tt->c) {
		r = blb_fail(err, len, -ENOMEM, "%s: connection", tt->addr);
		close(fd);
		bl_uring_destroy(tt->u);
		free(tt);
		return r;
	}

	bl_list_init(&reply);
	bl_list_init(&dl);
	blb_req_init(&hello, T_HELLO);
	r = tcp_call(tt, &hello, &reply);
	bl_iter_init(&it, &reply, 0);
	if (r < 0) {
		/* the server said why, or the connection did */
		if (bl_decode_bytes(&it, &dl) == 0 &&
		    bl_list_length(&dl) < sizeof(desc)) {
			bl_list_copy_out(&dl, 0, bl_list_length(&dl), desc);
			desc[bl_list_length(&dl)] = 0;
			r = blb_fail(err, len, 0, "cannot open target %s: server: %s",
				 tt->addr, desc);
		} else {
			r = blb_fail(err, len, r, "cannot open target %s", tt->addr);
		}
		goto out;
	}
	/* the first error stops it (errnos are not flags to OR) */
	if ((r = bl_decode_u64(&it, &room)) ||
	    (r = bl_decode_u32(&it, &slots)) ||
	    (r = bl_decode_u32(&it, &mem)) ||
	    (r = bl_decode_u32(&it, &off)) ||
	    (r = bl_decode_u64(&it, &maxp)))
		;
	else
		r = bl_decode_bytes(&it, &dl);
	/* a server that predates blk_align sends none: its DIO alignment */
	blk = off;
	if (r == 0 && bl_iter_remaining(&it) >= 4)
		r = bl_decode_u32(&it, &blk);
	/* the alignments size every op's padding and buffers: bounded */
	if (r || bl_list_length(&dl) >= sizeof(desc) || !mem || !off ||
	    (mem & (mem - 1)) || (off & (off - 1)) || off > (1u << 20) ||
	    mem > (1u << 20) || (blk & (blk - 1)) || blk > BLB_BLK_ALIGN_MAX) {
		r = blb_fail(err, len, -EBADMSG, "cannot open target %s: its hello",
			 tt->addr);
		goto out;
	}
	bl_list_copy_out(&dl, 0, bl_list_length(&dl), desc);
	desc[bl_list_length(&dl)] = 0;
	tt->t.room = room;
	tt->t.slots = slots != 0;
	tt->t.mem_align = mem;
	tt->t.off_align = off;
	/* the server's block: the op header fills one, as on a local file */
	tt->t.blk_align = blk > off ? blk : off;
	tt->max_payload = maxp;
	tt->pad = off > 64 ? off : 64;
	if (mem > tt->pad)
		tt->pad = mem;
	snprintf(tt->t.desc, sizeof(tt->t.desc), "%s (%s)", tt->addr, desc);
	if (o->op_size + 4096 + tt->pad > maxp) {
		uint64_t most = maxp > 4096 + tt->pad ? maxp - 4096 - tt->pad : 0;

		r = blb_fail(err, len, 0, "%s takes ops of at most %llu bytes",
			 tt->t.desc, (unsigned long long)most);
		goto out;
	}
	bl_list_clear(&reply);
	bl_list_clear(&dl);
	*out = &tt->t;
	return 0;
out:
	bl_list_clear(&reply);
	bl_list_clear(&dl);
	tcp_close(&tt->t);
	return r;
}
