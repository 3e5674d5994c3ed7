/* SPDX-License-Identifier: MIT */
/*
 * msgbench_ours.c - msgbench's "ours" side of a network case: the server
 * thread's bl_msgr_server and the client's bl_msgr_conn's, each on a
 * bl_uring of its own (with a bl_uring_regpool for large payloads), the
 * payload one raw shared by every frame, --lz4 through bl_lz4_compress()
 * and bl_lz4_decompress() (the whole description is in msgbench.c's
 * opening comment).
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bufferlist.h>
#include <bufferlist/lz4.h>
#include <bufferlist/msgr.h>
#include "msgbench.h"

#define WINDOW_BYTES ((size_t)4 << 20)
#define WINDOW_FRAMES 4096u

static struct bl_uring *make_uring(const struct mb_cfg *cfg)
{
	struct bl_uring_params p;
	struct bl_uring *u;

	memset(&p, 0, sizeof(p));
	p.zc_threshold = cfg->zc ? 0 : SIZE_MAX;
	p.force_blocking = cfg->blocking;
	/* made here, in the thread that runs it, and used by it alone */
	p.single_issuer = cfg->ring_defer;
	if (cfg->spin_us >= 0)
		p.spin_us = cfg->spin_us ? (unsigned)cfg->spin_us : UINT_MAX;
	u = bl_uring_create(&p);
	if (!u)
		mb_die("bl_uring_create", ENOMEM);
	if (!cfg->blocking && bl_uring_backend(u) != BL_URING_IO_URING)
		fprintf(stderr, "msgbench: note: io_uring unavailable (%s): "
			"ours runs on the blocking back end\n",
			bl_uring_backend_reason(u));
	return u;
}

/*
 * Payloads of 128 KiB and more (the messenger's direct_min) are read
 * straight into a raw of their own; a ring with registered buffers gives
 * those reads recycled, registered memory (READ_FIXED, the most recently
 * freed buffer first, so it is warm in the cache) instead of a fresh
 * allocation each time.  Four buffers per connection, each a payload and
 * a receive buffer long.  NULL when not wanted or not possible.
 */
static struct bl_uring_regpool *make_regpool(struct bl_uring *u,
					     const struct mb_cfg *cfg)
{
	if (cfg->no_regpool || cfg->size < ((size_t)128 << 10))
		return NULL;
	return bl_uring_regpool_create(u, 4 * (unsigned)cfg->conns,
				       cfg->size + ((size_t)64 << 10));
}

/*
 * --lz4: decompresses a received payload (@f's, borrowed) into new raws,
 * no more than the payload size, and checks that it is all there.
 */
static bool ours_unlz4(const struct mb_cfg *cfg, const struct bl_msgr_frame *f)
{
	struct bl_list out;
	ssize_t n;

	if (f->type != MB_TYPE_LZ4)
		return false;
	bl_list_init(&out);
	/* max_out 0 would mean no limit */
	n = bl_lz4_decompress(&f->payload, &out, cfg->size ? cfg->size : 1);
	bl_list_clear(&out);
	return n == (ssize_t)cfg->size;
}

/*
 * Whether @c is one of the client's connections.  The server accepts
 * whatever connects; a connection is found to be the client's by its far
 * end's port, once, at its first frame (or at its end, if it had none),
 * after which a comparison of pointers says so.
 */
static bool ours_own(struct mb_srv *s, struct bl_msgr_conn *c)
{
	for (int i = 0; i < s->nown; i++)
		if (s->own[i] == c)
			return true;
	if (!mb_srv_take_port(s, mb_peer_port(bl_msgr_conn_fd(c))))
		return false;
	s->own[s->nown++] = c;
	return true;
}

static void ours_srv_frame(void *arg, struct bl_msgr_conn *c,
			   struct bl_msgr_frame *f)
{
	struct mb_srv *s = arg;

	if (!ours_own(s, c)) {
		bl_msgr_conn_abort(c, -EPERM, "not the client's connection");
		return;
	}
	if (s->cfg.lz4) {
		if (!ours_unlz4(&s->cfg, f))
			s->bad++;
		mb_srv_count(s, s->cfg.size);
	} else {
		mb_srv_count(s, bl_list_length(&f->payload));
	}
	/* --lz4: the compressed payload goes back as it came */
	if (s->cfg.mode == MB_PINGPONG &&
	    bl_msgr_send(c, f->type, &f->payload, NULL, NULL))
		s->bad++;
}

static void ours_srv_close(void *arg, struct bl_msgr_conn *c, int err,
			   const char *reason)
{
	struct mb_srv *s = arg;
	struct bl_msgr_conn_stats st;

	/* a stray connection's end (garbage, a close, ours) counts for
	 * nothing */
	if (!ours_own(s, c)) {
		if (!s->cfg.quiet)
			fprintf(stderr, "msgbench: ours: turned away a "
				"connection that is not the client's (%s)\n",
				reason);
		return;
	}
	bl_msgr_conn_stats(c, &st);
	s->detached += st.detached;
	s->ring_dry += st.ring_dry;
	s->closed++;
	if (err) {
		fprintf(stderr, "msgbench: server connection: %s\n", reason);
		s->bad++;
	}
}

void *mb_ours_server(void *arg)
{
	struct mb_srv *s = arg;
	/* before anything is made: no raw of this thread leaves it */
	bool was_local = bl_raw_set_thread_local(s->cfg.local);
	struct bl_uring *u = make_uring(&s->cfg);
	struct bl_msgr_conn_opts o;
	struct bl_msgr_server *srv;
	struct bl_uring_regpool *rp;

	memset(&o, 0, sizeof(o));
	o.on_frame = ours_srv_frame;
	o.on_close = ours_srv_close;
	o.arg = s;
	/*
	 * 4 MiB, 8 MiB past one connection: room for a 1 MiB frame being
	 * received on each connection with some to spare, small enough that
	 * the ring's buffers (the kernel uses them in FIFO order) stay warm
	 * in the cache.
	 */
	o.nbufs = s->cfg.conns > 1 ? 128 : 64;
	o.align_data = s->cfg.align;
	o.direct_min = s->cfg.direct_min;
	o.busy_poll_us = s->cfg.busy_poll_us;
	rp = make_regpool(u, &s->cfg);
	srv = bl_msgr_server_new(u, s->lfd, &o);
	if (!srv)
		mb_die("bl_msgr_server_new", ENOMEM);
	atomic_store(&s->ready, 1);
	s->cpu_s = mb_thread_cpu_s();
	while (s->closed < s->cfg.conns)
		if (bl_msgr_server_poll(srv, 100) < 0)
			mb_die("bl_msgr_server_poll", EIO);
	s->cpu_s = mb_thread_cpu_s() - s->cpu_s;
	bl_msgr_server_destroy(srv);
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
	bl_raw_set_thread_local(was_local);
	return NULL;
}

struct cconn {
	struct bl_msgr_conn *c;
	unsigned outstanding;		/* sends not yet handed to the kernel */
	unsigned awaiting;		/* ping-pong: requests not answered */
	bool closed;
};

struct client {
	const struct mb_cfg *cfg;
	struct bl_list payload;
	struct cconn cc[MB_MAXCONNS];
	bool stop;
	uint64_t replies;
	int closed;
};

static void ours_sent(void *arg, int res)
{
	struct cconn *cc = arg;

	cc->outstanding--;
	if (res)
		fprintf(stderr, "msgbench: send: %s\n", strerror(-res));
}

static int ours_send(struct client *cl, struct cconn *cc)
{
	if (cl->cfg->lz4) {
		struct bl_list z;
		int err;

		/*
		 * Compressed afresh for every frame, as base does; the frame
		 * shares the new raws, and its crc is taken over them.
		 */
		bl_list_init(&z);
		if (bl_lz4_compress(&cl->payload, &z, NULL) < 0)
			mb_die("bl_lz4_compress", ENOMEM);
		cc->outstanding++;
		if (cl->cfg->mode == MB_PINGPONG)
			cc->awaiting++;
		err = bl_msgr_send(cc->c, MB_TYPE_LZ4, &z, ours_sent, cc);
		bl_list_clear(&z);
		return err;
	}
	if (cl->cfg->mode == MB_PINGPONG)
		cc->awaiting++;
	/*
	 * A new payload each time, as far as its crc is concerned.  (Small
	 * payloads are copied into the frame, and their crc taken over the
	 * copy: the cache plays no part.)
	 */
	if (cl->cfg->size >= 512)
		bl_list_invalidate_crc(&cl->payload);
	cc->outstanding++;
	return bl_msgr_send(cc->c, MB_TYPE_PLAIN, &cl->payload, ours_sent, cc);
}

static void ours_cli_frame(void *arg, struct bl_msgr_conn *c,
			   struct bl_msgr_frame *f)
{
	struct client *cl = arg;
	struct cconn *cc = NULL;

	if (cl->cfg->lz4 && !ours_unlz4(cl->cfg, f))
		mb_die("lz4 reply", EBADMSG);
	for (int i = 0; i < cl->cfg->conns; i++)
		if (cl->cc[i].c == c)
			cc = &cl->cc[i];
	cl->replies++;
	if (cc && cc->awaiting)
		cc->awaiting--;
	if (cc && !cl->stop && ours_send(cl, cc))
		mb_die("bl_msgr_send", EIO);
}

static void ours_cli_close(void *arg, struct bl_msgr_conn *c, int err,
			   const char *reason)
{
	struct client *cl = arg;

	for (int i = 0; i < cl->cfg->conns; i++)
		if (cl->cc[i].c == c)
			cl->cc[i].closed = true;
	cl->closed++;
	if (err)
		fprintf(stderr, "msgbench: client connection: %s\n", reason);
}

void mb_ours_client(const struct mb_cfg *cfg, const int *fds,
		    struct mb_result *r)
{
	/* before anything is made: no raw of this thread leaves it */
	bool was_local = bl_raw_set_thread_local(cfg->local);
	struct bl_uring *u = make_uring(cfg);
	struct bl_msgr_conn_opts o;
	struct client cl;
	struct bl_ptr p;
	struct bl_uring_regpool *rp;
	unsigned maxq;
	double t0, t1, cpu;

	memset(&cl, 0, sizeof(cl));
	cl.cfg = cfg;
	bl_list_init(&cl.payload);
	if (cfg->size) {
		if (bl_ptr_alloc(&p, cfg->size))
			mb_die("alloc", ENOMEM);
		mb_fill_payload((unsigned char *)bl_ptr_data(&p),
				cfg->size, cfg->lz4);
		if (bl_list_append_ptr_move(&cl.payload, &p))
			mb_die("alloc", ENOMEM);
	}
	memset(&o, 0, sizeof(o));
	o.on_frame = ours_cli_frame;
	o.direct_min = cfg->direct_min;
	o.busy_poll_us = cfg->busy_poll_us;
	rp = make_regpool(u, cfg);
	o.on_close = ours_cli_close;
	o.arg = &cl;
	o.nbufs = 64;
	for (int i = 0; i < cfg->conns; i++) {
		cl.cc[i].c = bl_msgr_conn_new(u, fds[i], &o);
		if (!cl.cc[i].c)
			mb_die("bl_msgr_conn_new", ENOMEM);
	}
	maxq = (unsigned)(WINDOW_BYTES / (cfg->size + BL_MSGR_OVERHEAD));
	if (maxq > WINDOW_FRAMES)
		maxq = WINDOW_FRAMES;
	if (!maxq)
		maxq = 1;
	cpu = mb_thread_cpu_s();
	t0 = mb_now_s();
	if (cfg->mode == MB_PINGPONG)
		for (int i = 0; i < cfg->conns; i++)
			if (ours_send(&cl, &cl.cc[i]))
				mb_die("bl_msgr_send", EIO);
	for (;;) {
		t1 = mb_now_s();
		if (t1 - t0 >= cfg->seconds)
			break;
		if (cfg->mode == MB_STREAM)
			for (int i = 0; i < cfg->conns; i++)
				while (cl.cc[i].outstanding < maxq)
					if (ours_send(&cl, &cl.cc[i]))
						mb_die("bl_msgr_send", EIO);
		if (bl_uring_run(u, 1, 100) < 0)
			mb_die("bl_uring_run", EIO);
	}
	cl.stop = true;
	if (cfg->mode == MB_PINGPONG) {
		r->msgs_s = (double)cl.replies / (t1 - t0);
		r->gb_s = r->msgs_s * (double)cfg->size * 2 / 1e9;
	}
	/*
	 * Drain, then close.  Ping-pong waits for the answer to every
	 * request too: a request handed to the kernel is not answered yet,
	 * and closing then would make the server's reply fail (EPIPE) at
	 * the normal end of a run.
	 */
	for (;;) {
		unsigned left = 0;

		for (int i = 0; i < cfg->conns; i++)
			if (!cl.cc[i].closed)
				left += cl.cc[i].outstanding +
					cl.cc[i].awaiting;
		if (!left)
			break;
		if (bl_uring_run(u, 1, 100) < 0)
			mb_die("bl_uring_run", EIO);
	}
	for (int i = 0; i < cfg->conns; i++)
		bl_msgr_conn_close(cl.cc[i].c, 0, NULL);
	while (cl.closed < cfg->conns)
		if (bl_uring_run(u, 1, 100) < 0)
			mb_die("bl_uring_run", EIO);
	r->cli_cpu_ns = mb_thread_cpu_s() - cpu;
	r->msgs = cl.replies;
	bl_list_clear(&cl.payload);
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
	bl_raw_set_thread_local(was_local);
}
