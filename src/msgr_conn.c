/* SPDX-License-Identifier: MIT */
/*
 * msgr_conn.c - a messenger connection's life: creating it (options and
 * their defaults, its buffer ring, the first receive), the log, closing it
 * and freeing it, and its small accessors.  Receiving and sending live in
 * msgr_recv.c and msgr_send.c, which come back here only to close and to
 * free.
 *
 * A connection is freed only when nothing can call back into it: no
 * receive, read or send in flight and no callback of its own on the
 * stack.  Closing shuts the socket down (both ways), which makes the
 * kernel finish whatever receive or send is pending, and the last
 * completion frees it after on_close.
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bufferlist/msgr.h>

#define ALIGN_MIN_DEFAULT ((size_t)16 << 10)
#define DIRECT_MIN_DEFAULT ((size_t)128 << 10)
#define COPY_BELOW_DEFAULT 512
#define NBUFS_DEFAULT 64u
#define BUF_SIZE_DEFAULT ((size_t)64 << 10)
#define BGID_FIRST 0x4000u		/* automatic buffer group ids */
#define BGID_SPAN 0xc000u

static _Atomic unsigned bgid_next;

unsigned short bl__msgr_auto_bgid(void)
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

void bl__msgr_log(const struct bl_msgr_conn_opts *o, struct bl_msgr_conn *c,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(o, c, fmt, ap);
	va_end(ap);
}

void bl__msgr_maybe_finish(struct bl_msgr_conn *c)
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
			 _Alignof(struct bl__msgr_send_rec));
	bl__free(c->al, c, sizeof(*c), _Alignof(struct bl_msgr_conn));
}

void bl__msgr_conn_end(struct bl_msgr_conn *c, int err, bool log,
		       const char *fmt, ...)
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
		bl__msgr_log(&c->o, c, "fd %d: closing: %s", c->fd, c->reason);
	c->depth++;
	/* queued frames never reached the kernel: take them back */
	bl_list_clear(&c->outq);
	c->outq_frames = 0;
	for (unsigned i = c->rec_inflight, n = c->rec_n; i < n; i++) {
		struct bl__msgr_send_rec r = c->recs[(c->rec_head + i) &
					    (c->rec_cap - 1)];

		c->rec_n--;	/* a send from the callback gets -EPIPE */
		r.cb(r.arg, -ECANCELED);
	}
	shutdown(c->fd, SHUT_RDWR);
	c->depth--;
	bl__msgr_maybe_finish(c);
}

void bl_msgr_conn_close(struct bl_msgr_conn *c, int err, const char *reason)
{
	if (!c)
		return;
	bl__msgr_conn_end(c, err, false, "%s", reason ? reason : "closed");
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

/* ---- creation ------------------------------------------------------------ */

void bl__msgr_opts_fill(struct bl_msgr_conn_opts *d,
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

struct bl_msgr_conn *bl__msgr_conn_new(struct bl_uring *u, int fd,
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
	bl__msgr_opts_fill(&c->o, o);
	bl_list_init(&c->in);
	bl_list_init(&c->outq);
	bl_list_init(&c->d.headl);
	/* one-shot receives bound what aligning copies (see msgr_recv.c) */
	c->multishot = !c->o.align_data;
	c->br = shared ? shared : c->o.bufring;
	if (!c->br) {
		c->br = bl_uring_bufring_create(u, c->o.nbufs, c->o.buf_size,
						c->o.bgid ? c->o.bgid :
						bl__msgr_auto_bgid());
		if (!c->br) {
			bl__free(al, c, sizeof(*c),
				 _Alignof(struct bl_msgr_conn));
			return NULL;
		}
		c->own_br = true;
	}
	if (bl__msgr_start_recv(c)) {
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
	return bl__msgr_conn_new(u, fd, o, NULL);
}
