/* SPDX-License-Identifier: MIT */
/*
 * msgr_conn.c - a messenger connection's life once it exists: the log,
 * the end of its input, timeouts, closing it and freeing it, and its small
 * accessors.  Creating one is msgr_open.c's; receiving and sending
 * (msgr_recv.c, msgr_send.c) come here to close and to free.
 *
 * A connection is freed only when nothing can call back into it: no
 * receive, read or send in flight and no callback of its own on the
 * stack.  Closing shuts the socket down (both ways), which makes the
 * kernel finish whatever receive or send is pending, and the last
 * completion frees it after on_close.
 *
 * An end the peer caused (a malformed frame, a timeout, an error of the
 * socket) resets the connection instead (reset_socket()); only the
 * application's close and the peer's own clean end are graceful.  Ends
 * of our own making (out of memory, a request the ring refused) stay
 * graceful too: the peer did nothing wrong, and the answers already in
 * the kernel still reach it.
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <limits.h>
#include <linux/sockios.h>
#include <linux/tcp.h>	/* tcp_info's bytes_acked: glibc's lacks it */
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bufferlist/msgr.h>

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
		bl__msgr_rx_release(c);
		/* a descriptor is free: out of them, try accepting now */
		if (s->accept_paused)
			s->next_accept = 0;
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
	bl_ptr_release(&c->ib);
	bl_list_clear(&c->outq);
	bl_list_clear(&c->held);
	bl_ptr_release(&c->d.P);
	bl_list_clear(&c->d.headl);
	bl_list_clear(&c->d.restl);
	if (c->own_br)
		bl_uring_bufring_destroy(c->br);
	if (!c->o.keep_fd)
		close(c->fd);
	if (c->recs)
		bl__free(c->al, c->recs, c->rec_cap * sizeof(*c->recs),
			 _Alignof(struct bl__msgr_send_rec));
	if (c->hrecs)
		bl__free(c->al, c->hrecs, c->hrec_cap * sizeof(*c->hrecs),
			 _Alignof(struct bl__msgr_send_rec));
	bl__free(c->al, c, sizeof(*c), _Alignof(struct bl_msgr_conn));
}

/*
 * Resets the connection on @fd; true when it was reset.  A graceful end
 * queues its FIN behind whatever the kernel still holds for the peer: a
 * peer that does not read keeps that socket and its send buffer alive in
 * FIN_WAIT1 until its window opens or the kernel's retries run out, and a
 * peer cut off for a fault of its own reads a clean end of stream.
 * SO_LINGER {1, 0} alone would make the last close(2) reset, but that
 * close waits for the receive and the send in flight to end, and only a
 * shutdown ends them: shutting down both ways sends a FIN at once when
 * nothing is unsent (the peer then reads 0 even after the RST), and
 * shutting down the reading side alone does not end a send waiting for
 * room.  connect(2) to AF_UNSPEC does it all on TCP: the socket is
 * disconnected now (the RST goes out, both queues are freed) and every
 * operation pending on it fails; the descriptor is left as a fresh,
 * unconnected socket (what a keep_fd owner gets back).  A socket that
 * refuses it (AF_UNIX, EINVAL: there is no reset there) is shut down as on
 * a graceful end, with the linger set first, so that a TCP socket that
 * could not be disconnected still resets at its last close.
 */
static bool reset_socket(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };
	struct sockaddr sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNSPEC;
	if (connect(fd, &sa, sizeof(sa)) == 0)
		return true;
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	shutdown(fd, SHUT_RDWR);
	return false;
}

bool bl__msgr_err_is_peers(int err)
{
	switch (err) {
	case -ECONNRESET:
	case -ECONNABORTED:
	case -ECONNREFUSED:
	case -EPIPE:
	case -ETIMEDOUT:
	case -EHOSTUNREACH:
	case -EHOSTDOWN:
	case -ENETUNREACH:
	case -ENETDOWN:
	case -ENETRESET:
		return true;
	default:
		return false;
	}
}

static void end_conn(struct bl_msgr_conn *c, int err, bool log, bool reset,
		     const char *fmt, va_list ap)
{
	if (c->closing)
		return;
	c->closing = true;
	c->err = err;
	vsnprintf(c->reason, sizeof(c->reason), fmt, ap);
	/*
	 * An on_close hears the reason as its @reason: the line goes to a
	 * log function the caller set, never to stderr then, where a daemon
	 * that handles its resets would see each one twice.
	 */
	if (log && (c->o.log || !c->o.on_close))
		bl__msgr_log(&c->o, c, "fd %d: closing%s: %s", c->fd,
			     reset ? " (reset)" : "", c->reason);
	c->depth++;
	/* queued frames never reached the kernel: take them back */
	c->out_bytes -= bl_list_length(&c->outq);
	bl_list_clear(&c->outq);
	c->outq_frames = 0;
	for (unsigned i = c->rec_inflight, n = c->rec_n; i < n; i++) {
		struct bl__msgr_send_rec r = c->recs[(c->rec_head + i) &
					    (c->rec_cap - 1)];

		c->rec_n--;	/* a send from the callback gets -EPIPE */
		r.cb(r.arg, -ECANCELED);
	}
	/* a stream left open never completes; what waited behind it neither */
	c->streaming = false;
	c->out_bytes -= bl_list_length(&c->held);
	bl_list_clear(&c->held);
	c->held_frames = 0;
	for (unsigned i = 0, n = c->hrec_n; i < n; i++) {
		c->hrec_n--;
		c->hrecs[i].cb(c->hrecs[i].arg, -ECANCELED);
	}
	if (!reset)
		shutdown(c->fd, SHUT_RDWR);
	else if (reset_socket(c->fd))
		c->st.resets++;
	c->depth--;
	bl__msgr_maybe_finish(c);
}

static void __attribute__((format(printf, 5, 6)))
end_conn_f(struct bl_msgr_conn *c, int err, bool log, bool reset,
	   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	end_conn(c, err, log, reset, fmt, ap);
	va_end(ap);
}

void bl__msgr_conn_end(struct bl_msgr_conn *c, int err, bool log,
		       const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	end_conn(c, err, log, false, fmt, ap);
	va_end(ap);
}

void bl__msgr_conn_abort(struct bl_msgr_conn *c, int err, const char *fmt,
			 ...)
{
	va_list ap;

	va_start(ap, fmt);
	end_conn(c, err, true, true, fmt, ap);
	va_end(ap);
}

void bl__msgr_conn_failed(struct bl_msgr_conn *c, int err, const char *what)
{
	/* -ECANCELED: the ring is being destroyed, nothing worth a line */
	end_conn_f(c, err, err != -ECANCELED, bl__msgr_err_is_peers(err),
		   "%s failed: %s", what, strerror(-err));
}

void bl__msgr_eof_check(struct bl_msgr_conn *c)
{
	size_t pending = bl_list_length(&c->in);

	if (!c->rd_eof || c->closing)
		return;
	if (pending) {
		/* frames that backpressure holds are delivered first */
		if (!c->paused)
			bl__msgr_conn_abort(c, -EPIPE,
					    "peer closed in the middle of a "
					    "frame (%zu bytes pending)",
					    pending);
		return;
	}
	/* a half-closed peer still gets its answers */
	if (c->send_busy || bl_list_length(&c->outq) || c->streaming ||
	    (c->o.max_inflight && c->unanswered))
		return;
	bl__msgr_conn_end(c, 0, false, "peer closed");
}

/*
 * Whether bytes of ours wait for the peer: a send waiting for room, or
 * bytes in the socket it has not acknowledged.  On the idle timeout, a
 * peer that owes nothing is closed gracefully (it may still be reading
 * what it got, which a reset would discard); one that owes and has not
 * acknowledged a byte since the last look is not reading, and is reset.
 */
static bool peer_owes(const struct bl_msgr_conn *c)
{
	int unacked = 0;

	if (c->send_busy)
		return true;
	return ioctl(c->fd, SIOCOUTQ, &unacked) == 0 && unacked > 0;
}

/*
 * The TCP counters of @fd: bytes of ours the peer acknowledged, bytes of
 * the peer's that arrived (both 0 elsewhere, or on a kernel without the
 * counts).  A send of one large reply shows no progress of its own until
 * the kernel took all of it, nor a read of a large payload until all of it
 * came; a peer that reads slowly still acknowledges as it goes, and one
 * that sends slowly is still received as it goes.
 */
static void tcp_counts(int fd, uint64_t *acked, uint64_t *received)
{
	struct tcp_info ti;
	socklen_t n = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	*acked = *received = 0;
	if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &n))
		return;
	if (n >= offsetof(struct tcp_info, tcpi_bytes_acked) +
		 sizeof(ti.tcpi_bytes_acked))
		*acked = ti.tcpi_bytes_acked;
	if (n >= offsetof(struct tcp_info, tcpi_bytes_received) +
		 sizeof(ti.tcpi_bytes_received))
		*received = ti.tcpi_bytes_received;
}

/*
 * Whether the peer acknowledged bytes since the last look (it reads), or,
 * with @sent, sent bytes into a direct read in flight (whose bytes count
 * only when it completes: a large payload still arriving): that then
 * counts as activity at @now, and taking ours as taking.  Asked only when
 * the idle time is up: one system call per timeout, not one per sweep.
 */
static bool peer_moved_since(struct bl_msgr_conn *c, int64_t now, bool sent)
{
	uint64_t acked, received;
	bool took, gave;

	tcp_counts(c->fd, &acked, &received);
	took = acked != c->acked_seen;
	gave = sent && c->read_busy && received != c->received_seen;
	c->acked_seen = acked;
	c->received_seen = received;
	if (took || gave)
		c->act_at = now;
	if (took)
		c->take_at = now;
	return took || gave;
}

bool bl__msgr_conn_expire(struct bl_msgr_conn *c, int64_t now)
{
	uint64_t act = c->rx_raw + (c->tx_bytes - c->out_bytes);
	size_t in = bl_list_length(&c->in);

	if (c->closing)
		return false;
	uint64_t taken = c->tx_bytes - c->out_bytes;
	int64_t idle = (int64_t)c->o.idle_timeout_ms;

	if (act != c->act_seen || !c->act_at) {
		c->act_seen = act;
		c->act_at = now;
	}
	if (taken != c->take_seen || !c->out_bytes || !c->take_at) {
		c->take_seen = taken;
		c->take_at = now;
	}
	if (idle && now - c->act_at >= idle) {
		if (!peer_owes(c)) {
			/*
			 * Nothing of ours waits for the peer.  An answer we
			 * owe (a request not answered, a stream not finished:
			 * a slow disk; a frame waiting for our receive budget)
			 * keeps it open; otherwise it is idle, and may still be
			 * reading what it got.
			 */
			if ((c->o.max_inflight && c->unanswered) ||
			    c->streaming || c->rx_wait) {
				c->act_at = now;
			} else if (peer_moved_since(c, now, true)) {
				/* a large payload still arriving */
			} else {
				bl__msgr_conn_end(c, -ETIMEDOUT, true,
						  "idle for %u ms",
						  c->o.idle_timeout_ms);
				return false;
			}
		} else if (!peer_moved_since(c, now, true)) {
			/* not reading */
			bl__msgr_conn_abort(c, -ETIMEDOUT, "idle for %u ms, "
					    "the peer not reading",
					    c->o.idle_timeout_ms);
			return false;
		}
	} else if (idle && now - c->take_at >= idle &&
		   !peer_moved_since(c, now, false)) {
		/* it sends (requests, bytes) but takes none of ours */
		bl__msgr_conn_abort(c, -ETIMEDOUT, "the peer took no byte "
				    "for %u ms", c->o.idle_timeout_ms);
		return false;
	}
	/* a preamble begun and not finished (not our own backpressure) */
	if (!in || in >= BL_MSGR_PREAMBLE || c->read_busy || c->paused ||
	    c->o.header_timeout_ms == UINT_MAX) {
		c->hdr_at = 0;
		return false;
	}
	if (!c->hdr_at || c->hdr_frames != c->st.frames_received) {
		c->hdr_at = now;
		c->hdr_frames = c->st.frames_received;
	} else if (now - c->hdr_at >= (int64_t)c->o.header_timeout_ms) {
		bl__msgr_conn_abort(c, -ETIMEDOUT,
				    "preamble not complete after %u ms "
				    "(%zu of %d bytes)", c->o.header_timeout_ms,
				    in, BL_MSGR_PREAMBLE);
		return false;
	}
	return true;
}

void bl_msgr_conn_close(struct bl_msgr_conn *c, int err, const char *reason)
{
	if (!c)
		return;
	end_conn_f(c, err, false, false, "%s", reason ? reason : "closed");
}

void bl_msgr_conn_abort(struct bl_msgr_conn *c, int err, const char *reason)
{
	if (!c)
		return;
	end_conn_f(c, err, false, true, "%s", reason ? reason : "aborted");
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
