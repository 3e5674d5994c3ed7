/* SPDX-License-Identifier: MIT */
/*
 * msgr_open.c - creating a messenger connection: its options and their
 * defaults, its buffer ring, and the first receive.  It sits above the
 * receive side (it arms the first receive and hands the send side the
 * receive side's resume, see struct bl_msgr_conn's rx_resume), so that
 * receiving, sending and the connection's life call one way only.
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>
#include <bufferlist/msgr.h>

#define ALIGN_MIN_DEFAULT ((size_t)16 << 10)
#define ALIGN_DEFAULT 4096		/* page boundaries */
/* the bounds of opts.align; the largest divides every direct read's
 * pieces (msgr_recv.c: PIECE_FIRST) */
#define ALIGN_LEAST 512
#define ALIGN_MOST ((size_t)1 << 20)
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

/* ---- creation ------------------------------------------------------------ */

bool bl__msgr_opts_valid(const struct bl_msgr_conn_opts *o)
{
	return !o || !o->align ||
	       (bl__is_pow2(o->align) && o->align >= ALIGN_LEAST &&
		o->align <= ALIGN_MOST);
}

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
	if (!d->align)
		d->align = ALIGN_DEFAULT;
	if (!d->copy_below)
		d->copy_below = COPY_BELOW_DEFAULT;
	if (!d->direct_min)
		d->direct_min = DIRECT_MIN_DEFAULT;
	if (!d->max_out_bytes)
		d->max_out_bytes = BL_MSGR_DEFAULT_MAX_OUT;
	if (!d->header_timeout_ms)
		d->header_timeout_ms = BL_MSGR_DEFAULT_HEADER_TIMEOUT_MS;
}

struct bl_msgr_conn *bl__msgr_conn_new(struct bl_uring *u, int fd,
				       const struct bl_msgr_conn_opts *o,
				       struct bl_uring_bufring *shared)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_msgr_conn *c;

	int err;

	if (!u || !bl__msgr_opts_valid(o)) {
		errno = EINVAL;
		return NULL;
	}
	c = bl__alloc(al, sizeof(*c), _Alignof(struct bl_msgr_conn));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	memset(c, 0, sizeof(*c));
	c->al = al;
	c->u = u;
	c->fd = fd;
	bl__msgr_opts_fill(&c->o, o);
	bl_list_init(&c->in);
	bl_list_init(&c->outq);
	bl_list_init(&c->held);
	bl_list_init(&c->d.headl);
	bl_list_init(&c->d.restl);
	/*
	 * One-shot receives bound what aligning copies, and leave a busy
	 * polling connection nothing armed when one completes, so that it
	 * may read the socket itself (see msgr_recv.c).
	 */
	c->multishot = !c->o.align_data && !c->o.busy_poll_us;
	c->br = shared ? shared : c->o.bufring;
	if (!c->br) {
		c->br = bl_uring_bufring_create(u, c->o.nbufs, c->o.buf_size,
						c->o.bgid ? c->o.bgid :
						bl__msgr_auto_bgid());
		if (!c->br) {
			err = errno;	/* the ring's */
			bl__free(al, c, sizeof(*c),
				 _Alignof(struct bl_msgr_conn));
			errno = err;
			return NULL;
		}
		c->own_br = true;
	}
	c->rx_resume = bl__msgr_rx_resume;
	err = bl__msgr_start_recv(c);
	if (err) {
		/* nothing is in flight: undo */
		if (c->own_br)
			bl_uring_bufring_destroy(c->br);
		bl__free(al, c, sizeof(*c), _Alignof(struct bl_msgr_conn));
		errno = -err;
		return NULL;
	}
	return c;
}

struct bl_msgr_conn *bl_msgr_conn_new(struct bl_uring *u, int fd,
				      const struct bl_msgr_conn_opts *o)
{
	return bl__msgr_conn_new(u, fd, o, NULL);
}
