/* SPDX-License-Identifier: MIT */
/*
 * uring_request.c - the io_uring back end's requests: preparing the SQEs
 * of an op (with its linked poll, sync and link timeout), the queue of
 * ops waiting for an SQE, cancelling an op's requests, and handling their
 * CQEs (also on a ring shared with the application); what a result means
 * is uring_op.c's to say.  The ring itself - setup, reaping and waiting,
 * teardown - is uring_kernel.c's.
 *
 * user_data is the op pointer with bit 0 set (ops are 8-byte aligned), so
 * an application sharing its ring keeps its own requests' bit 0 clear
 * (see TAG_* for the poll that a descriptor answering -EAGAIN gets linked
 * in front of the retry, and for cancel requests).
 *
 * Zero-copy sends hold their raws until the notification CQE; the send's
 * callback runs at its completion, which may come first.  The kernel is
 * asked to report whether it copied anyway, and sockets where it did
 * (loopback) go back to copying: see ZC_THRESHOLD_DEFAULT in uring.c.
 */
#include "uring_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>

/* 6.18: a write that fails with EPIPE raises no SIGPIPE */
#ifndef RWF_NOSIGNAL
#define RWF_NOSIGNAL 0x00000100
#endif

/* A linked sync interrupted (-EINTR, -EAGAIN) is issued again this often. */
#define RETRY_SYNC_MAX 64u

/* The kernel refused RWF_NOSIGNAL (before 6.18): writes go without it. */
static _Atomic bool rwf_nosignal_refused;

/* ---- queue of ops waiting for an SQE ------------------------------------ */

static void backlog_push(struct bl_uring *u, struct uop *op)
{
	op->qnext = NULL;
	op->queued = 1;
	if (u->backlog_tail)
		u->backlog_tail->qnext = op;
	else
		u->backlog = op;
	u->backlog_tail = op;
}

struct uop *bl__uring_backlog_pop(struct bl_uring *u)
{
	struct uop *op = u->backlog;

	if (op) {
		u->backlog = op->qnext;
		if (!u->backlog)
			u->backlog_tail = NULL;
		op->queued = 0;
	}
	return op;
}

/* ---- issuing requests --------------------------------------------------- */

struct io_uring_sqe *bl__uring_get_sqe(struct bl_uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(u->ring);

	if (!sqe) {
		io_uring_submit(u->ring);
		sqe = io_uring_get_sqe(u->ring);
	}
	return sqe;
}

struct io_uring_sqe *bl__uring_get_sqes(struct bl_uring *u, unsigned n)
{
	if (io_uring_sq_space_left(u->ring) < n)
		io_uring_submit(u->ring);
	if (io_uring_sq_space_left(u->ring) < n)
		return NULL;
	return io_uring_get_sqe(u->ring);
}

/* This request of a write with a linked sync reaches its end: sync it. */
static bool op_syncs_now(const struct uop *op)
{
	unsigned n = op->niov - op->iov_at;

	return op->sync && (op->bufidx >= 0 || n <= BL__IOV_MAX);
}

unsigned bl__uring_op_nsqe(const struct uop *op)
{
	return 1u + (op->deadline_us && op->kind != OP_TIMER) +
	       op_syncs_now(op);
}

static void set_ts(struct __kernel_timespec *ts, uint64_t us)
{
	ts->tv_sec = (long long)(us / 1000000);
	ts->tv_nsec = (long long)(us % 1000000) * 1000;
}

/*
 * What follows an op's request in its chain: the link timeout of a timed
 * op (at the op's one absolute deadline, so a resumed request gets what
 * is left of the time), then the sync linked behind the last piece of a
 * write.  A timeout in the middle of a chain bounds the request before
 * it; when that ends first the chain goes on to the sync.  The caller
 * made room (bl__uring_op_nsqe).
 */
static void prep_links(struct bl_uring *u, struct uop *op,
		       struct io_uring_sqe *sqe)
{
	bool sync = op_syncs_now(op);
	struct io_uring_sqe *x;

	if (op->deadline_us) {
		sqe->flags |= IOSQE_IO_LINK;
		x = io_uring_get_sqe(u->ring);
		set_ts(&op->ts, op->deadline_us);
		io_uring_prep_link_timeout(x, &op->ts, IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(x, (uint64_t)(uintptr_t)op | TAG_LTO);
		op->xsqe++;
		sqe = x;
	}
	if (sync) {
		sqe->flags |= IOSQE_IO_LINK;
		x = io_uring_get_sqe(u->ring);
		io_uring_prep_fsync(x, op->fd,
				    op->sync == BL_URING_SYNC_FDATASYNC ?
				    IORING_FSYNC_DATASYNC : 0);
		io_uring_sqe_set_data64(x, (uint64_t)(uintptr_t)op | TAG_SYNC);
		op->xsqe++;
		op->sync_sqe++;
	}
}

void bl__uring_op_prep(struct bl_uring *u, struct uop *op,
		    struct io_uring_sqe *sqe)
{
	struct iovec *v = op->iov + op->iov_at;
	unsigned n = op->niov - op->iov_at;
	__u64 off = op->off < 0 ? (__u64)-1 : (__u64)op->off + op->done;

	if (n > BL__IOV_MAX)
		n = BL__IOV_MAX;
	switch (op->kind) {
	case OP_FSYNC:
		io_uring_prep_fsync(sqe, op->fd, op->fsync_flags);
		break;
	case OP_SYNC_RANGE:
		io_uring_prep_sync_file_range(sqe, op->fd, op->range_len,
					      (__u64)op->off,
					      (int)op->fsync_flags);
		break;
	case OP_TIMER:
		set_ts(&op->ts, op->deadline_us);
		io_uring_prep_timeout(sqe, &op->ts, 0, IORING_TIMEOUT_ABS);
		break;
	case OP_WRITE:
		if (op->bufidx >= 0) {
			io_uring_prep_write_fixed(sqe, op->fd, v->iov_base,
						  (unsigned)v->iov_len, off,
						  op->bufidx);
			u->cnt.fixed++;
		} else {
			io_uring_prep_writev(sqe, op->fd, v, n, off);
		}
		/*
		 * At the position the file may be a pipe or a socket, and
		 * io_uring would raise SIGPIPE in this thread at any of its
		 * later system calls; RWF_NOSIGNAL (6.18) stops it.
		 */
		op->rwf_nosig = op->off < 0 &&
			!atomic_load_explicit(&rwf_nosignal_refused,
					      memory_order_relaxed);
		if (op->rwf_nosig)
			sqe->rw_flags |= RWF_NOSIGNAL;
		sqe->rw_flags |= op->rw_flags;
		break;
	case OP_READ:
		if (op->bufidx >= 0) {
			io_uring_prep_read_fixed(sqe, op->fd, v->iov_base,
						 (unsigned)v->iov_len, off,
						 op->bufidx);
			u->cnt.fixed++;
		} else {
			io_uring_prep_readv(sqe, op->fd, v, n, off);
		}
		break;
	case OP_SEND:
		/* SEND / SEND_ZC skip the msghdr copy for one iovec */
		if (n == 1 && (!op->zc || u->has_send_zc)) {
			if (op->zc)
				io_uring_prep_send_zc(sqe, op->fd, v->iov_base,
						      v->iov_len, op->msg_flags,
						      u->zc_report ?
						      IORING_SEND_ZC_REPORT_USAGE : 0);
			else
				io_uring_prep_send(sqe, op->fd, v->iov_base,
						   v->iov_len, op->msg_flags);
		} else {
			op->msg.msg_iov = v;
			op->msg.msg_iovlen = n;
			if (op->zc) {
				io_uring_prep_sendmsg_zc(sqe, op->fd, &op->msg,
							 (unsigned)op->msg_flags);
				if (u->zc_report)
					sqe->ioprio |= IORING_SEND_ZC_REPORT_USAGE;
			} else
				io_uring_prep_sendmsg(sqe, op->fd, &op->msg,
						      (unsigned)op->msg_flags);
		}
		if (op->zc)
			u->cnt.zc++;
		break;
	case OP_RECV:
		io_uring_prep_recv(sqe, op->fd, v->iov_base, v->iov_len,
				   op->msg_flags);
		break;
	case OP_POOLED:
		io_uring_prep_recv(sqe, op->fd, NULL, 0, op->msg_flags);
		if (op->multishot)
			sqe->ioprio |= IORING_RECV_MULTISHOT;
		sqe->flags |= IOSQE_BUFFER_SELECT;
		sqe->buf_group = op->br->bgid;
		break;
	}
	io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op | TAG_OP);
	op->sqe = 1;
	u->cnt.sqes++;
	if (op->kind != OP_TIMER)
		prep_links(u, op, sqe);
}

/* The next request of an op already in flight: never fails, may wait. */
void bl__uring_issue(struct bl_uring *u, struct uop *op)
{
	struct io_uring_sqe *sqe = bl__uring_get_sqes(u, bl__uring_op_nsqe(op));

	if (!sqe) {
		backlog_push(u, op);
		return;
	}
	bl__uring_op_prep(u, op, sqe);
	u->need_submit = true;
}

/*
 * After -EAGAIN: a poll for readiness linked in front of the next request,
 * so the kernel waits, not us.  Its CQE is ignored (the linked request
 * reports, with -ECANCELED if the poll failed or was cancelled).
 */
static void op_issue_polled(struct bl_uring *u, struct uop *op)
{
	struct io_uring_sqe *ps;

	/*
	 * A timed op: the link timeout must bound the wait, which a timeout
	 * behind the request would not (it starts with the request, after
	 * the poll), so the poll gets it and its CQE issues the request.
	 */
	if (op->deadline_us) {
		ps = bl__uring_get_sqes(u, 2);
		if (!ps) {
			backlog_push(u, op);
			return;
		}
		io_uring_prep_poll_add(ps, op->fd,
				       (unsigned)bl__uring_op_events(op));
		ps->flags |= IOSQE_IO_LINK;
		io_uring_sqe_set_data64(ps, (uint64_t)(uintptr_t)op | TAG_POLL);
		ps = io_uring_get_sqe(u->ring);
		set_ts(&op->ts, op->deadline_us);
		io_uring_prep_link_timeout(ps, &op->ts, IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(ps, (uint64_t)(uintptr_t)op | TAG_LTO);
		op->xsqe++;
		op->sqe = 1;
		op->poll_wait = 1;
		u->need_submit = true;
		return;
	}
	ps = bl__uring_get_sqes(u, 1 + bl__uring_op_nsqe(op));
	if (!ps) {
		backlog_push(u, op);
		return;
	}
	io_uring_prep_poll_add(ps, op->fd, (unsigned)bl__uring_op_events(op));
	ps->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(ps, (uint64_t)(uintptr_t)op | TAG_POLL);
	bl__uring_op_prep(u, op, io_uring_get_sqe(u->ring));
	u->need_submit = true;
}

void bl__uring_flush_backlog(struct bl_uring *u)
{
	while (u->backlog) {
		struct io_uring_sqe *sqe =
			bl__uring_get_sqes(u, bl__uring_op_nsqe(u->backlog));

		if (!sqe)
			return;
		bl__uring_op_prep(u, bl__uring_backlog_pop(u), sqe);
	}
}

/*
 * Cancels the op's request, the poll that may be linked before it and
 * the sync behind it (a link timeout goes with the request it bounds).
 */
void bl__uring_op_cancel(struct bl_uring *u, struct uop *op)
{
	static const uint64_t tags[3] = { TAG_OP, TAG_POLL, TAG_SYNC };

	for (int i = 0; i < (op->sync_sqe ? 3 : 2); i++) {
		struct io_uring_sqe *sqe = bl__uring_get_sqe(u);

		if (!sqe)
			return;		/* the destroy loop asks again */
		io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)op | tags[i],
				       IORING_ASYNC_CANCEL_ALL);
		io_uring_sqe_set_data64(sqe, TAG_INTERNAL);
		u->cnt.cancels++;
	}
}

/* ---- completions -------------------------------------------------------- */

static void pooled_cqe(struct bl_uring *u, struct uop *op,
		       struct io_uring_cqe *c)
{
	struct bl_uring_bufring *br = op->br;
	bool more = c->flags & IORING_CQE_F_MORE;
	bool has_buf = c->flags & IORING_CQE_F_BUFFER;
	unsigned bid = c->flags >> IORING_CQE_BUFFER_SHIFT;
	int res = c->res;

	if (!more)
		op->sqe = 0;
	bl__uring_br_drain(br);
	if (has_buf && (res <= 0 || op->called)) {
		/* taken, but nothing to hand over */
		bl__uring_br_put_back(br, bid);
		has_buf = false;
	}
	if (op->called) {	/* after a final callback: swallow the rest */
		bl__uring_op_maybe_free(u, op);
		return;
	}
	/* a kernel without multishot receive refuses the flag */
	if (res == -EINVAL && op->multishot && !op->got_any &&
	    !u->destroying) {
		u->has_recv_multishot = false;
		op->multishot = 0;
		bl__uring_issue(u, op);
		return;
	}
	if (res > 0) {
		int ret = has_buf ? bl__uring_br_chunk(br, bid, (size_t)res,
						       &op->data)
				  : -EIO;

		if ((size_t)res >= br->buf_size / 2 &&	/* see spin_wait */
		    u->spin_due < SPIN_ANSWERS)
			u->spin_due = SPIN_ANSWERS;
		if (ret)
			res = ret;
	}
	if (res > 0) {
		bool again = op->want_more && !more && !u->destroying;

		op->got_any = 1;
		if (again) {	/* single shot, or the kernel stopped early */
			u->cnt.rearms++;
			bl__uring_issue(u, op);
		}
		bl__uring_pooled_call(u, op, res, more || again);
		bl__uring_op_maybe_free(u, op);
		return;
	}
	if (more)
		bl__uring_op_cancel(u, op);	/* still armed: -ENOMEM above */
	bl__uring_pooled_call(u, op, res, false);
	bl__uring_op_maybe_free(u, op);
}

/*
 * The poll that a timed op waits on (op_issue_polled): ready, it issues
 * the request; cancelled by its link timeout, the op timed out.
 */
static void poll_cqe(struct bl_uring *u, struct uop *op, int res)
{
	op->poll_wait = 0;
	op->sqe = 0;
	if (res >= 0 && !op->cancel_req && !u->destroying) {
		bl__uring_issue(u, op);
		return;
	}
	op->res = op->cancel_req || u->destroying ? -ECANCELED
		  : res == -ECANCELED ? -ETIME : res;
	bl__uring_op_finish(u, op);
}

/*
 * The sync linked behind a write.  One behind a request that came back
 * short or failed was cancelled with it (the chain breaks), and the write
 * already reported or was resumed with a sync of its own: nothing to do.
 * Behind the write's last piece, its result is the op's.
 */
static void sync_cqe(struct bl_uring *u, struct uop *op,
		     struct io_uring_cqe *c)
{
	int res;

	op->xsqe--;
	op->sync_sqe--;
	if (!op->sync_wait || op->sync_sqe) {
		bl__uring_op_maybe_free(u, op);
		return;
	}
	res = bl__uring_apply_hook(op, c);
	/* interrupted: the sync alone again (the write is done) */
	if ((res == -EINTR || res == -EAGAIN) && !op->cancel_req &&
	    !u->destroying && op->retries < RETRY_SYNC_MAX) {
		struct io_uring_sqe *sqe = bl__uring_get_sqes(u, 1);

		if (sqe) {
			op->retries++;
			u->cnt.retries++;
			io_uring_prep_fsync(sqe, op->fd,
					    op->sync == BL_URING_SYNC_FDATASYNC ?
					    IORING_FSYNC_DATASYNC : 0);
			io_uring_sqe_set_data64(sqe, (uint64_t)(uintptr_t)op |
						     TAG_SYNC);
			op->xsqe++;
			op->sync_sqe++;
			u->need_submit = true;
			return;
		}
	}
	op->sync_wait = 0;
	if (res == -ECANCELED && !op->cancel_req && !u->destroying &&
	    op->deadline_us)
		res = -ETIME;
	if (res < 0)
		op->res = res;
	bl__uring_op_finish(u, op);
}

void bl__uring_handle(struct bl_uring *u, const struct io_uring_cqe *kc)
{
	struct io_uring_cqe c;
	struct uop *op;

	memcpy(&c, kc, sizeof(c));
	if (c.user_data == TAG_WAKE) {
		/* -ETIME: it fired; anything else: limits per wait again */
		if (c.res != -ETIME)
			u->wake_broken = true;
		u->wake_at = 0;
		return;
	}
	/* cancels and readiness polls: their op (if still alive) reports */
	if (c.user_data == TAG_INTERNAL)
		return;
	op = (struct uop *)(uintptr_t)(c.user_data & ~TAG_MASK);
	switch (c.user_data & TAG_MASK) {
	case TAG_POLL:
		if (op->poll_wait)
			poll_cqe(u, op, c.res);
		return;
	case TAG_LTO:
		op->xsqe--;
		bl__uring_op_maybe_free(u, op);
		return;
	case TAG_SYNC:
		sync_cqe(u, op, &c);
		return;
	}
	if (c.flags & IORING_CQE_F_NOTIF) {
		if (u->zc_report && (c.res & IORING_NOTIF_USAGE_ZC_COPIED)) {
			u->cnt.zc_copied++;
			bl__uring_zc_avoid(u, op->fd);
		} else if (u->zc_report && c.res >= 0 &&
			   u->zc_hint[(unsigned)op->fd % ZC_HINTS].fd ==
			   op->fd) {
			/*
			 * A probe went out from user pages after all.  (A
			 * send that failed also reports "copied": the kernel
			 * sets the bit whenever zero copy was not used.)
			 */
			u->zc_hint[(unsigned)op->fd % ZC_HINTS].fd = -1;
		}
		op->notifs--;
		u->cnt.notifs++;
		bl__uring_op_maybe_free(u, op);
		return;
	}
	c.res = bl__uring_apply_hook(op, &c);
	if (op->kind == OP_POOLED) {
		pooled_cqe(u, op, &c);
		return;
	}
	/* a zero-copy send's CQE with F_MORE promises a notification */
	if (op->zc && (c.flags & IORING_CQE_F_MORE))
		op->notifs++;
	op->sqe = 0;
	/* a kernel before 6.18 refuses RWF_NOSIGNAL: without it */
	if (c.res == -EOPNOTSUPP && op->rwf_nosig) {
		op->rwf_nosig = 0;
		atomic_store_explicit(&rwf_nosignal_refused, true,
				      memory_order_relaxed);
		bl__uring_issue(u, op);
		return;
	}
	switch (bl__uring_op_progress(u, op, c.res)) {
	case STEP_NEXT:
		bl__uring_issue(u, op);
		return;
	case STEP_WAIT:
		op_issue_polled(u, op);
		return;
	case STEP_DONE:
		break;
	}
	/* written whole: the sync linked behind it decides */
	if (op->sync_sqe && op->res >= 0) {
		op->sync_wait = 1;
		return;
	}
	bl__uring_op_finish(u, op);
}

/* ---- for tests (uring_int.h) -------------------------------------------- */

bool bl__uring_rwf_nosignal(int set)
{
	if (set >= 0)
		atomic_store_explicit(&rwf_nosignal_refused, !set,
				      memory_order_relaxed);
	return !atomic_load_explicit(&rwf_nosignal_refused,
				     memory_order_relaxed);
}
