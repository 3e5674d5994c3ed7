/* SPDX-License-Identifier: MIT */
/*
 * uring_blocking.c - the back end for where io_uring cannot be used.
 *
 * It runs the same ops as io_uring does, with system calls: regular files
 * are read and written to completion in the submit call; sockets use
 * MSG_DONTWAIT and other descriptors are polled first, and an op that
 * would block waits in bl_uring_run() (poll), so a single-threaded
 * request/response loop does not deadlock on it.  Every callback runs
 * from bl_uring_run().  No write raises SIGPIPE: sends and writes to
 * sockets carry MSG_NOSIGNAL, writes to pipes block it around the call
 * (io_int.h).
 */
#include "uring_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

/*
 * The descriptor an op's system calls use.  io_uring resolves an op's
 * number to its file when the op is submitted and holds that file: a
 * caller that closes the number, and a new socket that gets it, leave
 * the op on the first file.  Here an op that has to wait does the same
 * by holding a duplicate of the number from then on (closed when the op
 * is released); an op that never waits ends inside its submit call, with
 * no window to close anything in.  Without a descriptor to spare
 * (EMFILE) it keeps the number, as before.
 */
static int op_fd(const struct uop *op)
{
	return op->held ? op->hfd : op->fd;
}

static void hold_file(struct uop *op)
{
	int d;

	if (op->held)
		return;
	d = fcntl(op->fd, F_DUPFD_CLOEXEC, 0);
	if (d >= 0) {
		op->hfd = d;
		op->held = 1;
	}
}

static void waitq_push(struct bl_uring *u, struct uop *op)
{
	hold_file(op);
	op->qnext = u->waitq;
	op->queued = 1;
	u->waitq = op;
}

static bool fd_ready(const struct uop *op)
{
	struct pollfd p = { .fd = op_fd(op), .events = bl__uring_op_events(op) };

	return poll(&p, 1, 0) != 0;	/* errors: let the I/O call say */
}

static ssize_t blk_syscall(struct bl_uring *u, struct uop *op)
{
	struct iovec *v = op->iov + op->iov_at;
	int n = (int)(op->niov - op->iov_at);
	off_t off = op->off < 0 ? -1 : op->off + (off_t)op->done;
	ssize_t r = -1;
	int fd = op_fd(op);

	if (n > BL__IOV_MAX)
		n = BL__IOV_MAX;
	u->cnt.sqes++;
	switch (op->kind) {
	case OP_FSYNC:
		r = op->fsync_flags & IORING_FSYNC_DATASYNC ? fdatasync(fd)
							    : fsync(fd);
		break;
	case OP_SYNC_RANGE:
		r = sync_file_range(fd, op->off, (off_t)op->range_len,
				    op->fsync_flags);
		break;
	case OP_TIMER:
		break;		/* never called: timers wait (blk_perform) */
	case OP_WRITE:
		if (op->rw_flags && op->nosig == BL__NOSIG_GUARD) {
			struct bl__sigpipe_guard g;

			bl__sigpipe_block(&g);
			r = pwritev2(fd, v, n, off, op->rw_flags);
			bl__sigpipe_restore(&g, r < 0 && errno == EPIPE);
		} else if (op->rw_flags && op->nosig != BL__NOSIG_SOCK) {
			/* off -1: at the file position, as writev */
			r = pwritev2(fd, v, n, off, op->rw_flags);
		} else if (off >= 0) {
			r = pwritev(fd, v, n, off);
		} else if (op->nosig == BL__NOSIG_SOCK) {
			op->msg.msg_iov = v;
			op->msg.msg_iovlen = (size_t)n;
			r = sendmsg(fd, &op->msg,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
		} else if (op->nosig == BL__NOSIG_GUARD) {
			struct bl__sigpipe_guard g;

			bl__sigpipe_block(&g);
			r = writev(fd, v, n);
			bl__sigpipe_restore(&g, r < 0 && errno == EPIPE);
		} else {
			r = writev(fd, v, n);
		}
		break;
	case OP_READ:
		r = off < 0 ? readv(fd, v, n) : preadv(fd, v, n, off);
		break;
	case OP_SEND:
		op->msg.msg_iov = v;
		op->msg.msg_iovlen = (size_t)n;
		r = sendmsg(fd, &op->msg, op->msg_flags | MSG_DONTWAIT);
		break;
	case OP_RECV:
		r = recv(fd, v->iov_base, v->iov_len,
			 op->msg_flags | MSG_DONTWAIT);
		break;
	}
	if (r < 0 && errno == EOPNOTSUPP && (op->rw_flags & RWF_NOWAIT))
		return -EAGAIN;	/* as io_uring says: it could block */
	return r < 0 ? -errno : r;
}

static ssize_t blk_hook(struct uop *op, ssize_t r)
{
	struct io_uring_cqe c;

	c.user_data = (uint64_t)(uintptr_t)op | TAG_OP;
	c.res = (int32_t)r;
	c.flags = 0;
	return atomic_load_explicit(&bl__uring_cqe_hook, memory_order_relaxed)
		       ? bl__uring_apply_hook(op, &c) : r;
}

/*
 * Runs @op as far as it goes; when it ends, the op queued behind it on
 * its descriptor (bl__uring_seq_next) runs next, in this same loop, so a
 * file's writes at the position still end in the submit call.
 */
/*
 * The sync linked behind a write that ended whole: its error, if any,
 * becomes the op's result (a write that failed is not synced).
 */
static void blk_linked_sync(struct bl_uring *u, struct uop *op)
{
	ssize_t r;

	if (!op->sync || op->kind != OP_WRITE || op->res < 0)
		return;
	for (unsigned tries = 0;; tries++) {
		u->cnt.sqes++;
		r = op->sync == BL_URING_SYNC_FDATASYNC ? fdatasync(op_fd(op))
							: fsync(op_fd(op));
		r = blk_hook(op, r < 0 ? -errno : 0);
		if (r != -EINTR || tries >= 64)
			break;
	}
	if (r < 0)
		op->res = r;
}

void bl__uring_blk_perform(struct bl_uring *u, struct uop *op)
{
	while (op) {
		enum step st;
		ssize_t r;

		/* a timer waits for its deadline only (blk_poll) */
		if (op->kind == OP_TIMER ||
		    (op->pollfirst && !fd_ready(op))) {
			waitq_push(u, op);
			return;
		}
		r = blk_hook(op, blk_syscall(u, op));
		st = bl__uring_op_progress(u, op, r);
		if (st == STEP_NEXT)
			continue;
		if (st == STEP_WAIT) {
			waitq_push(u, op);
			return;
		}
		blk_linked_sync(u, op);
		bl__uring_doneq_push(u, op);
		op = op->seq == SEQ_HEAD ? bl__uring_seq_next(u, op) : NULL;
	}
}

static int br_take(struct bl_uring_bufring *br)
{
	bl__uring_br_drain(br);
	return br->nfree ? (int)br->free_ids[--br->nfree] : -1;
}

void bl__uring_blk_pooled(struct bl_uring *u, struct uop *op)
{
	struct bl_uring_bufring *br = op->br;

	for (;;) {
		int id = br->u ? br_take(br) : -1;
		ssize_t r;

		if (id < 0) {
			op->res = -ENOBUFS;
			op->more = 0;
			break;
		}
		u->cnt.sqes++;
		r = recv(op_fd(op), br->base + (size_t)id * br->buf_size,
			 br->buf_size, op->msg_flags | MSG_DONTWAIT);
		r = blk_hook(op, r < 0 ? -errno : r);
		if (r <= 0)
			bl__uring_br_put_back(br, (unsigned)id);
		if (r == -EINTR)
			continue;
		if (r == -EAGAIN) {
			waitq_push(u, op);
			return;
		}
		if (r > 0) {
			int ret = bl__uring_br_chunk(br, (unsigned)id,
						     (size_t)r, &op->data);

			op->res = ret ? ret : r;
			op->more = !ret && op->want_more;
		} else {
			op->res = r;
			op->more = 0;
		}
		break;
	}
	bl__uring_doneq_push(u, op);
}

#define POLL_BATCH 256

/*
 * @ms shortened to the earliest deadline of a waiting op (a timer, a
 * timed op), so that a wait ends in time for it.
 */
static int blk_wait_ms(const struct bl_uring *u, int ms)
{
	uint64_t now = 0, first = UINT64_MAX;

	for (const struct uop *op = u->waitq; op; op = op->qnext)
		if (op->deadline_us && op->deadline_us < first)
			first = op->deadline_us;
	if (first == UINT64_MAX)
		return ms;
	now = bl__now_us();
	if (first <= now)
		return 0;
	/* rounded up: waking a millisecond early would just wait again */
	first = (first - now + 999) / 1000;
	return ms < 0 || (uint64_t)ms > first ? (int)first : ms;
}

/* A waiting op whose deadline passed: a timer fires, another times out. */
static bool blk_expired(struct bl_uring *u, struct uop *op, uint64_t now)
{
	if (!op->deadline_us || op->deadline_us > now)
		return false;
	op->res = op->kind == OP_TIMER ? 0 : -ETIME;
	op->more = 0;
	bl__uring_doneq_push(u, op);
	return true;
}

/* Polls up to POLL_BATCH waiting ops for @ms and runs the ready ones. */
static int blk_poll(struct bl_uring *u, int ms)
{
	struct pollfd pfd[POLL_BATCH];
	struct uop *ops[POLL_BATCH];
	int n = 0, ready;
	uint64_t now;

	ms = blk_wait_ms(u, ms);
	while (u->waitq && n < POLL_BATCH) {
		struct uop *op = u->waitq;

		u->waitq = op->qnext;
		op->queued = 0;
		ops[n] = op;
		/* a timer has no descriptor: poll() skips a negative one */
		pfd[n].fd = op->kind == OP_TIMER ? -1 : op_fd(op);
		pfd[n].events = bl__uring_op_events(op);
		pfd[n].revents = 0;
		n++;
	}
	ready = poll(pfd, (nfds_t)n, ms);
	if (ready < 0)
		ready = -errno;
	now = bl__now_us();
	for (int i = 0; i < n; i++) {
		struct uop *op = ops[i];

		if (ready <= 0 || !pfd[i].revents) {
			if (!blk_expired(u, op, now))
				waitq_push(u, op);
		} else if (op->kind == OP_POOLED)
			bl__uring_blk_pooled(u, op);
		else
			bl__uring_blk_perform(u, op);
	}
	return ready;
}

static int blk_run(struct bl_uring *u, unsigned min, int timeout_ms)
{
	uint64_t start = u->ncomplete;
	int64_t deadline = timeout_ms > 0 ? (int64_t)bl__now_ms() + timeout_ms : 0;

	/*
	 * Only what is ready, as io_uring reaps what the kernel finished:
	 * the waiting ops whose descriptors are ready now make progress.
	 */
	if (!min) {
		int ret = 0;

		bl__uring_deliver(u);
		if (u->waitq)
			ret = blk_poll(u, 0);
		bl__uring_deliver(u);
		if (ret < 0 && ret != -EINTR)
			return ret;
		return (int)(u->ncomplete - start);
	}
	for (;;) {
		int ms = timeout_ms, ret;

		bl__uring_deliver(u);
		if (u->ncomplete - start >= min)
			break;
		if (!u->waitq) {
			if (u->doneq)
				continue;
			break;
		}
		if (timeout_ms > 0) {
			int64_t left = deadline - (int64_t)bl__now_ms();

			ms = left > 0 ? (int)left : 0;
		}
		ret = blk_poll(u, ms);
		if (ret < 0 && ret != -EINTR)
			return ret;
		if (ret == 0 && !u->doneq && ms >= 0 &&
		    (timeout_ms == 0 || (int64_t)bl__now_ms() >= deadline))
			break;
	}
	return (int)(u->ncomplete - start);
}

static void blk_drain(struct bl_uring *u)
{
	struct uop *op;

	while (u->doneq || u->waitq) {
		bl__uring_deliver(u);
		while ((op = u->waitq)) {
			u->waitq = op->qnext;
			op->queued = 0;
			bl__uring_op_abort(u, op, -ECANCELED);
		}
	}
}

/* bl_uring_cancel(): an op waiting for its descriptor (or a timer) ends. */
static int blk_cancel(struct bl_uring *u, struct uop *op)
{
	for (struct uop **pp = &u->waitq; *pp; pp = &(*pp)->qnext) {
		if (*pp != op)
			continue;
		*pp = op->qnext;
		op->queued = 0;
		op->cancel_req = 1;
		op->res = -ECANCELED;
		op->more = 0;
		bl__uring_doneq_push(u, op);
		return 0;
	}
	return -ENOENT;		/* ended: its callback is due */
}

const struct bl__uring_backend bl__uring_backend_blocking = {
	.cancel = blk_cancel,
	.start = bl__uring_blk_perform,		/* takes the queue along */
	.pooled_again = bl__uring_blk_pooled,
	.run = blk_run,
	.drain = blk_drain,
};
