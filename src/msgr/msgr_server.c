/* SPDX-License-Identifier: MIT */
/*
 * msgr_server.c - the messenger's server helper: accepting connections on
 * a listening socket, giving each a connection (msgr_open.c) that shares
 * the server's buffer ring, and one turn of the server's event loop,
 * which waits on the listening socket and the ring together.
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

	if (!u || !bl__msgr_opts_valid(o)) {
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

#define BACKOFF_FIRST_MS 100	/* out of descriptors: the first pause */
#define BACKOFF_MAX_MS 1600
#define LOG_EVERY_MS 1000	/* accept failures: at most a line a second */
#define SWEEP_MS 100		/* timeouts are checked this often */

/* An accept failure, worth a line at most every LOG_EVERY_MS. */
static void accept_failed(struct bl_msgr_server *s, int64_t now, int err)
{
	if (now < s->log_next) {
		s->log_suppressed++;
		return;
	}
	if (s->log_suppressed)
		bl__msgr_log(&s->o, NULL, "accept failed: %s%s (and %u more "
			     "times since the last line)", strerror(err),
			     s->accept_paused ? ", pausing" : "",
			     s->log_suppressed);
	else
		bl__msgr_log(&s->o, NULL, "accept failed: %s%s", strerror(err),
			     s->accept_paused ? ", pausing" : "");
	s->log_suppressed = 0;
	s->log_next = now + LOG_EVERY_MS;
}

/* Accepts every pending connection.  Return: how many. */
static int accept_all(struct bl_msgr_server *s, int64_t now)
{
	int n = 0;

	for (;;) {
		struct bl_msgr_conn *c;
		int one = 1;
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			int err = errno;

			if (err == EINTR)
				continue;
			if (err == EAGAIN || err == EWOULDBLOCK ||
			    err == ECONNABORTED)
				return n;
			/*
			 * Out of descriptors (or memory), the connection
			 * stays in the backlog and the socket readable:
			 * looking again at once would spin.  Pause, longer
			 * each time in a row; a connection closing ends
			 * the pause (bl__msgr_maybe_finish).
			 */
			if (err == EMFILE || err == ENFILE || err == ENOBUFS ||
			    err == ENOMEM) {
				s->backoff_ms = s->backoff_ms ?
					s->backoff_ms * 2 : BACKOFF_FIRST_MS;
				if (s->backoff_ms > BACKOFF_MAX_MS)
					s->backoff_ms = BACKOFF_MAX_MS;
				s->accept_paused = true;
				s->next_accept = now + s->backoff_ms;
			}
			accept_failed(s, now, err);
			return n;
		}
		s->accept_paused = false;
		s->backoff_ms = 0;
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
 * Closes the connections whose timeouts expired, every SWEEP_MS.  Only
 * idle timeouts need the clock to wake an idle server; a preamble timeout
 * can only start with bytes arriving, which end any wait: a turn that
 * comes too early for a sweep asks for one (sweep_due), and a sweep that
 * finds a preamble pending asks for the next.
 */
static void sweep(struct bl_msgr_server *s, int64_t now)
{
	if (!s->o.idle_timeout_ms && s->o.header_timeout_ms == UINT_MAX)
		return;
	if (now < s->next_sweep) {
		s->sweep_due = true;
		return;
	}
	s->next_sweep = now + SWEEP_MS;
	s->sweep_due = false;
	for (struct bl_msgr_conn *c = s->conns, *n; c; c = n) {
		n = c->snext;	/* closing may free c at once */
		if (bl__msgr_conn_expire(c, now))
			s->sweep_due = true;
	}
}

/* How long poll() may sleep before a pause or a sweep is due (-1: ever). */
static int wake_in(const struct bl_msgr_server *s, int64_t now)
{
	int64_t at = -1;

	if (s->accept_paused)
		at = s->next_accept;
	if (s->conns && (s->o.idle_timeout_ms || s->sweep_due) &&
	    (at < 0 || s->next_sweep < at))
		at = s->next_sweep;
	if (at < 0)
		return -1;
	return at <= now ? 0 : (int)(at - now);
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

/*
 * Serves the queue of connections waiting for the receive budget
 * (max_rx_bytes), oldest first, while the oldest fits: each gets its
 * share reserved and resumes receiving (which runs on_frame, so only from
 * here, never from a completion of another connection).
 * Return: the connections resumed.
 */
static int rx_budget_serve(struct bl_msgr_server *s)
{
	int n = 0;

	while (s->rx_waiting) {
		struct bl_msgr_conn *c, *first = NULL;

		for (c = s->conns; c; c = c->snext)
			if (c->rx_wait &&
			    (!first || c->rx_ticket < first->rx_ticket))
				first = c;
		if (!first || !bl__msgr_rx_fits(s, first->rx_want))
			break;
		bl__msgr_rx_grant(first, first->rx_want);
		first->rx_resume(first);
		bl__msgr_maybe_finish(first);
		n++;
	}
	return n;
}

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
		int r, w, ms = timeout_ms;

		if ((lfd_ready && !s->accept_paused) || now >= s->next_accept) {
			n += accept_all(s, now);
			if (!s->accept_paused)
				s->next_accept = now + ACCEPT_EVERY_MS;
			lfd_ready = false;
		}
		sweep(s, now);
		r = bl_uring_run(s->u, 0, 0);
		if (r < 0)
			return r;
		/* after the run: it refused a call from a callback, which must
		 * not run on_frame either */
		n += r + rx_budget_serve(s);
		if (n || timeout_ms == 0)
			return n;
		if (timeout_ms > 0) {
			if (deadline <= now)
				return 0;
			ms = (int)(deadline - now);
		}
		w = wake_in(s, now);
		if (w >= 0 && (ms < 0 || ms > w))
			ms = w;
		/* paused: the listening socket stays readable; not polled */
		p[0].fd = s->accept_paused ? -1 : s->lfd;
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
