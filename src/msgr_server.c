/* SPDX-License-Identifier: MIT */
/*
 * msgr_server.c - the messenger's server helper: accepting connections on
 * a listening socket, giving each a connection (msgr_conn.c) that shares
 * the server's buffer ring, and one turn of the server's event loop,
 * which waits on the listening socket and the ring together.
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <bufferlist/msgr.h>

struct bl_msgr_server *bl_msgr_server_new(struct bl_uring *u, int listen_fd,
					  const struct bl_msgr_conn_opts *o)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_msgr_server *s;
	int fl = fcntl(listen_fd, F_GETFL), err;

	if (!u) {
		errno = EINVAL;
		return NULL;
	}
	if (fl < 0)
		return NULL;	/* errno from fcntl: EBADF */
	s = bl__alloc(al, sizeof(*s), _Alignof(struct bl_msgr_server));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	memset(s, 0, sizeof(*s));
	s->al = al;
	s->u = u;
	s->lfd = listen_fd;
	bl__msgr_opts_fill(&s->o, o);
	s->br = s->o.bufring;
	if (!s->br) {
		s->br = bl_uring_bufring_create(u, s->o.nbufs, s->o.buf_size,
						s->o.bgid ? s->o.bgid :
						bl__msgr_auto_bgid());
		if (!s->br) {
			err = errno;	/* the ring's */
			bl__free(al, s, sizeof(*s),
				 _Alignof(struct bl_msgr_server));
			errno = err;
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
				bl__msgr_log(&s->o, NULL, "accept failed: %s",
					     strerror(errno));
			return n;
		}
		/* a messenger is latency bound: no Nagle (as Ceph's
		 * ms_tcp_nodelay); fails harmlessly on AF_UNIX */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = bl__msgr_conn_new(s->u, fd, &s->o, s->br);
		if (!c) {
			bl__msgr_log(&s->o, NULL, "fd %d: cannot set up a "
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
	int64_t now = (int64_t)bl__now_ms();
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
		now = (int64_t)bl__now_ms();
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
