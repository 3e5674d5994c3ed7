/* SPDX-License-Identifier: MIT */
/*
 * uring_kernel.c - the io_uring back end: preparing SQEs for the ops,
 * handling their CQEs (also on a ring shared with the application), and
 * waiting; what a result means is uring_op.c's to say.
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

/* The back end's table, defined at the end of the file. */
static const struct bl__uring_backend kernel_backend;

/* ---- setup -------------------------------------------------------------- */

static void probe(struct bl_uring *u)
{
	struct io_uring_probe *pr = io_uring_get_probe_ring(u->ring);

	if (!pr)
		return;
	u->has_send_zc = io_uring_opcode_supported(pr, IORING_OP_SEND_ZC);
	u->has_sendmsg_zc = io_uring_opcode_supported(pr, IORING_OP_SENDMSG_ZC);
	/*
	 * Multishot receive has no opcode of its own; it came with the same
	 * kernel (6.0) as SEND_ZC.  A kernel that refuses it anyway answers
	 * -EINVAL, and the receive is re-armed as single shot.
	 */
	u->has_recv_multishot = u->has_send_zc;
	u->zc_report = u->has_sendmsg_zc;	/* until the kernel says -EINVAL */
	io_uring_free_probe(pr);
}

void bl__uring_kernel_setup(struct bl_uring *u, struct io_uring *ring)
{
	u->ring = ring;
	u->be = &kernel_backend;
	/* a ring that defers task work without saying when it waits */
	u->enter_always = (ring->flags & (IORING_SETUP_DEFER_TASKRUN |
					  IORING_SETUP_COOP_TASKRUN)) &&
			  !(ring->flags & IORING_SETUP_TASKRUN_FLAG);
	probe(u);
}

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

static struct uop *backlog_pop(struct bl_uring *u)
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
static void issue(struct bl_uring *u, struct uop *op)
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
		bl__uring_op_prep(u, backlog_pop(u), sqe);
	}
}

/*
 * Cancels the op's request, the poll that may be linked before it and
 * the sync behind it (a link timeout goes with the request it bounds).
 */
static void op_cancel(struct bl_uring *u, struct uop *op)
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
		issue(u, op);
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
			issue(u, op);
		}
		bl__uring_pooled_call(u, op, res, more || again);
		bl__uring_op_maybe_free(u, op);
		return;
	}
	if (more)
		op_cancel(u, op);	/* still armed: -ENOMEM above */
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
		issue(u, op);
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
		issue(u, op);
		return;
	}
	switch (bl__uring_op_progress(u, op, c.res)) {
	case STEP_NEXT:
		issue(u, op);
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

/*
 * Handles the library's CQEs that are ready and leaves the others: on a
 * shared ring they are moved, in order, to the end of the ready range (the
 * entries between head and tail belong to user space) and head stops in
 * front of them.  Return: CQEs left for the application.
 */
static unsigned reap(struct bl_uring *u)
{
	struct io_uring *ring = u->ring;
	struct io_uring_cq *cq = &ring->cq;
	unsigned shift = ring->flags & IORING_SETUP_CQE32 ? 1 : 0;
	size_t csz = sizeof(struct io_uring_cqe) << shift;
	unsigned head = *cq->khead, tail, keep = 0, i;

	tail = io_uring_smp_load_acquire(cq->ktail);
	if (head == tail)
		return 0;
	u->reaping = true;
	u->cq_reaping = true;
	for (i = head; i != tail; i++) {
		struct io_uring_cqe *c =
			&cq->cqes[(i & cq->ring_mask) << shift];

		u->reap_at = i + 1;
		if (bl__uring_cqe_ours(c))
			bl__uring_handle(u, c);
		else
			keep++;
	}
	if (keep) {
		unsigned dst = tail;

		for (i = tail; i != head; i--) {
			struct io_uring_cqe *c =
				&cq->cqes[((i - 1) & cq->ring_mask) << shift];

			if (bl__uring_cqe_ours(c))
				continue;
			dst--;
			if (dst != i - 1)
				memcpy(&cq->cqes[(dst & cq->ring_mask) << shift],
				       c, csz);
		}
	}
	io_uring_smp_store_release(cq->khead, tail - keep);
	u->cq_reaping = false;
	u->reaping = false;
	return keep;
}

/* Submits, then waits until more than @keep CQEs are ready or @ms passed. */
static int wait_cqes(struct bl_uring *u, unsigned keep, int ms)
{
	struct __kernel_timespec ts;
	struct io_uring_cqe *cqe;
	int ret;

	if (ms >= 0) {
		ts.tv_sec = ms / 1000;
		ts.tv_nsec = (long long)(ms % 1000) * 1000000;
	}
	ret = io_uring_submit_and_wait_timeout(u->ring, &cqe, keep + 1,
					       ms >= 0 ? &ts : NULL, NULL);
	return ret < 0 ? ret : 0;
}

/*
 * A wait with a time limit.  Handing the limit to io_uring_enter() arms a
 * high-resolution timer for every wait (and takes the extended-argument
 * path), which a request/response loop pays once per message.  Instead an
 * own ring keeps an absolute TIMEOUT request (TAG_WAKE) armed at the
 * earliest deadline asked for and waits without a limit: a wait whose
 * deadline lies at or past the armed timer's reuses it, and a wake-up
 * before the deadline just waits again.  A loop that waits with the same
 * limit thus arms a timer once per limit, not once per wait, which is what
 * msgbench's ping-pong client does (it waits with 100 ms).  Attached rings, whose CQ the
 * application reads too, pass the limit per wait as before.
 */
static int wait_until(struct bl_uring *u, unsigned keep, int64_t deadline,
		      int64_t now)
{
	struct io_uring_sqe *sqe;

	if (u->attached || u->wake_broken)
		return wait_cqes(u, keep, (int)(deadline - now));
	if (u->wake_at <= now || u->wake_at > deadline) {
		sqe = bl__uring_get_sqe(u);
		if (!sqe)
			return wait_cqes(u, keep, (int)(deadline - now));
		u->wake_ts.tv_sec = deadline / 1000;
		u->wake_ts.tv_nsec = (long long)(deadline % 1000) * 1000000;
		io_uring_prep_timeout(sqe, &u->wake_ts, 0,
				      IORING_TIMEOUT_ABS);
		io_uring_sqe_set_data64(sqe, TAG_WAKE);
		u->wake_at = deadline;
	}
	return wait_cqes(u, keep, -1);
}

/*
 * Task work that the kernel keeps for the thread's next entry (COOP_TASKRUN,
 * DEFER_TASKRUN) posts its completions only then: enter for it.  A failed
 * enter only means a later look.
 */
static void get_events(struct bl_uring *u)
{
	bl__uring_flush_backlog(u);
	io_uring_submit(u->ring);
	io_uring_enter(u->ring->ring_fd, 0, 0, IORING_ENTER_GETEVENTS, NULL);
}

/*
 * Before a wait sleeps: a sleep and its wake-up (the scheduler, an
 * interrupt to the idle CPU, the switch back) cost several microseconds,
 * more than a small request's answer takes to come back over loopback or
 * a fast network.  So watch the CQ for up to spin_us first, entering the
 * kernel only when it flags completion work as due (TASKRUN_FLAG: the
 * work that posts a receive's completion runs in this thread's entry).
 * Adaptive, since a wait that outlasts the window wastes it: after a miss
 * the next 1, 2, 4 ... 64 waits that could spin sleep at once, and a hit
 * starts over.
 *
 * And only while an answer is due: for each request the ring issued, two
 * callbacks (the request's own, then the peer's answer); for each send
 * the caller made itself (bl_uring_expect_answer()), one; after a pooled
 * receive filled at least half its buffer, the next chunk.  What has no
 * callback (a zero-copy notification, a linked poll, a wait that timed
 * out) uses none of it up; an answer that never comes leaves the waits
 * to the back-off below, one window in up to 65 waits.
 * A thread that only drains, through a multishot receive, a stream it
 * keeps up with would otherwise spin on every arrival: each spin ends at
 * once, so the back-off never starts, but it takes the stream a few
 * kilobytes at a time, a CQE and a callback each, where after a sleep it
 * takes tens of kilobytes at once (docs/BENCHMARKS.md, io_uring: 4 KiB
 * messages).  Chunks of half a buffer and more gain at most twice as
 * much from a sleep, less than the wake-up that a sleeping receiver
 * costs the sender for every arrival.
 * Return: true when completions beyond @keep are in the CQ.
 */
static bool spin_wait(struct bl_uring *u, unsigned keep, uint64_t deadline_us)
{
	uint64_t end;

	bl__uring_spin_sync(u);
	if (!u->spin_us || u->attached || u->enter_always ||
	    io_uring_sq_ready(u->ring))
		return false;
	if (!u->spin_due) {
		u->cnt.spin_idle++;
		return false;
	}
	if (u->spin_skip) {
		u->spin_skip--;
		u->cnt.spin_skips++;
		return false;
	}
	u->cnt.spins++;
	end = bl__now_us() + u->spin_us;
	if (end > deadline_us)	/* the caller's timeout bounds it */
		end = deadline_us;
	do {
		if (io_uring_cq_ready(u->ring) > keep ||
		    (bl__uring_taskrun_due(u) &&
		     (io_uring_enter(u->ring->ring_fd, 0, 0,
				     IORING_ENTER_GETEVENTS, NULL),
		      io_uring_cq_ready(u->ring) > keep))) {
			u->cnt.spin_hits++;
			u->spin_backoff = 0;
			return true;
		}
		bl__cpu_relax();
	} while (bl__now_us() < end);
	u->spin_backoff = u->spin_backoff ? u->spin_backoff * 2 : 1;
	if (u->spin_backoff > 64)
		u->spin_backoff = 64;
	u->spin_skip = u->spin_backoff;
	return false;
}

static int kernel_run(struct bl_uring *u, unsigned min, int timeout_ms)
{
	uint64_t start = u->ncomplete;
	int64_t deadline = timeout_ms > 0 ? (int64_t)bl__now_ms() + timeout_ms : 0;
	int ret = 0;

	/*
	 * Completion work the kernel keeps for this thread: ask for it once,
	 * so that what is ready is seen even when nothing is waited for.  A
	 * ring with TASKRUN_FLAG says when some waits; one without (the
	 * caller's DEFER_TASKRUN or COOP_TASKRUN alone) is asked every time.
	 * Only here: a wait below runs the work anyway, and asking before
	 * each reap would run it ahead of the CQEs already posted (a
	 * receive's chunk that stops the multishot receive the work would
	 * take further).
	 */
	if (u->enter_always || bl__uring_taskrun_due(u))
		get_events(u);
	for (;;) {
		unsigned keep;
		int ms = timeout_ms;

		bl__uring_flush_backlog(u);
		bl__uring_drain_bufrings(u);
		bl__uring_deliver(u);
		keep = reap(u);
		if (u->ncomplete - start >= min)
			break;
		if (!u->inflight && !u->retiring && !u->doneq)
			break;
		if (u->doneq)
			continue;
		if (timeout_ms == 0)
			break;
		if (timeout_ms > 0) {
			int64_t now = (int64_t)bl__now_ms();

			if (deadline <= now)
				break;
			if (spin_wait(u, keep, (uint64_t)deadline * 1000))
				continue;
			now = (int64_t)bl__now_ms();
			if (deadline <= now)
				break;
			ret = wait_until(u, keep, deadline, now);
		} else {
			if (spin_wait(u, keep, UINT64_MAX))
				continue;
			ret = wait_cqes(u, keep, ms);
		}
		if (ret && ret != -ETIME && ret != -EINTR)
			return ret;
	}
	ret = io_uring_submit(u->ring);
	u->need_submit = false;
	if (ret < 0)
		return ret;
	return (int)(u->ncomplete - start);
}

/* ---- teardown ----------------------------------------------------------- */

static void cancel_all(struct bl_uring *u)
{
	for (struct uop *op = u->live; op; op = op->lnext)
		if (op->sqe || op->sync_sqe)
			op_cancel(u, op);
}

/*
 * bl_uring_cancel(): an op not issued yet (the backlog) ends at once;
 * one in the kernel is asked to end, and its CQE (-ECANCELED, or its
 * result if it ended first) ends it, as at destroy.
 */
static int kernel_cancel(struct bl_uring *u, struct uop *op)
{
	struct uop **pp, *prev = NULL;

	for (pp = &u->backlog; *pp; prev = *pp, pp = &(*pp)->qnext) {
		if (*pp != op)
			continue;
		*pp = op->qnext;
		if (u->backlog_tail == op)
			u->backlog_tail = prev;
		op->queued = 0;
		op->cancel_req = 1;
		op->res = -ECANCELED;
		bl__uring_doneq_push(u, op);
		return 0;
	}
	if (op->queued || (!op->sqe && !op->sync_sqe))
		return -ENOENT;		/* ended: its callback is due */
	if (io_uring_sq_space_left(u->ring) < 3)
		io_uring_submit(u->ring);
	if (io_uring_sq_space_left(u->ring) < 3)
		return -EBUSY;
	op->cancel_req = 1;
	op_cancel(u, op);
	u->need_submit = true;
	return 0;
}

/*
 * Zero-copy sends that bl_uring_destroy() stopped waiting for (see
 * abandon_stranded()).  They are never freed: the kernel may still read
 * their buffers, so those stay allocated, and the list keeps them
 * reachable so that a leak checker counts them as held, not lost.
 */
static _Atomic(struct uop *) abandoned;
static atomic_uint nabandoned;

unsigned bl__uring_abandoned(void)
{
	return atomic_load_explicit(&nabandoned, memory_order_relaxed);
}

/*
 * A zero-copy send's notification comes when the network is done with its
 * pages: when the peer has acknowledged the bytes.  A peer that stopped
 * reading (a stopped process, a full receive window) never does, and a
 * destroy that waited for it would hang for as long as the peer stalls.
 * So a send that only waits for one, seen waiting at two checks a second
 * apart with no notification arriving in between, is given up: their callbacks ran long ago, their buffers
 * stay referenced for good (memory the kernel may read is never reused),
 * and the ring closes without them - the kernel ends them itself when it
 * lets go.  Not on an attached ring: the application's ring would still
 * deliver their notifications, to a bl_uring that is gone.
 */
static void abandon_stranded(struct bl_uring *u)
{
	struct uop *op, *next;

	if (u->attached)
		return;
	for (op = u->live; op; op = next) {
		next = op->lnext;
		if (!op->called || op->sqe || !op->notifs || op->queued)
			continue;
		if (!op->stranded) {	/* seen waiting: given up next time */
			op->stranded = 1;
			continue;
		}
		bl__uring_op_unlink_retired(u, op);
		/*
		 * On a queue now: a notification that still comes while the
		 * drain goes on (the peer reset, or read after all) leaves it
		 * alone (bl__uring_op_maybe_free skips queued ops).
		 */
		op->queued = 1;
		op->qnext = atomic_load_explicit(&abandoned,
						 memory_order_relaxed);
		while (!atomic_compare_exchange_weak_explicit(
			&abandoned, &op->qnext, op, memory_order_release,
			memory_order_relaxed))
			;
		atomic_fetch_add_explicit(&nabandoned, 1, memory_order_relaxed);
	}
}

/*
 * A single_issuer ring refuses every thread but its own (-EEXIST from
 * io_uring_enter): destroyed from another one (uring.h forbids it, but a
 * caller may), nothing in flight can be cancelled or reaped, and the
 * destroy would spin for good.  Instead it gives up on the whole ring:
 * the callbacks that have not run get -ECANCELED, and everything the
 * kernel may still touch - the ops and their buffers, the buffer rings,
 * the registered pool, the bl_uring itself - is kept for the life of the
 * process (reachable from lost_rings); bl_uring_destroy() only closes the
 * ring, which makes the kernel cancel what is left on its own.
 */
static _Atomic(struct bl_uring *) lost_rings;

unsigned bl__uring_lost_rings(void)
{
	unsigned n = 0;

	for (struct bl_uring *r = atomic_load_explicit(&lost_rings,
						       memory_order_acquire);
	     r; r = r->lost_next)
		n++;
	return n;
}

static void lose_ring(struct bl_uring *u)
{
	struct uop *op;

	u->lost = true;
	/*
	 * One callback at a time, the oldest op first (u->live is newest
	 * first): ending the head of a descriptor's queue starts the op after
	 * it, which must not have been called back already, and a callback
	 * may end or start others.  Ops that ended without the kernel (the
	 * done queue) are delivered as usual; each op ended here is marked as
	 * held by the kernel first, so that it is never freed.
	 */
	for (;;) {
		struct uop *oldest = NULL;

		bl__uring_deliver(u);
		for (op = u->live; op; op = op->lnext)
			if (!op->called && !op->queued)
				oldest = op;
		if (!oldest)
			break;
		oldest->sqe = 1;
		bl__uring_op_abort(u, oldest, -ECANCELED);
	}
	for (op = u->live; op; op = op->lnext)
		op->sqe = 1;
	u->lost_next = atomic_load_explicit(&lost_rings, memory_order_relaxed);
	while (!atomic_compare_exchange_weak_explicit(&lost_rings,
						      &u->lost_next, u,
						      memory_order_release,
						      memory_order_relaxed))
		;
}

static void kernel_drain(struct bl_uring *u)
{
	struct uop *op;
	uint64_t notifs = u->cnt.notifs;
	uint64_t check = bl__now_ms() + 1000;

	while ((op = backlog_pop(u)))
		bl__uring_op_abort(u, op, -ECANCELED);
	bl__uring_deliver(u);
	cancel_all(u);
	/*
	 * Wait for the kernel to let go of every op: cancelled requests
	 * complete with -ECANCELED, those it could not cancel (a file write
	 * already running) with their result, zero-copy notifications
	 * whenever the network is done (or never: abandon_stranded()).  A
	 * request that was not cancellable when asked is asked again every
	 * second.
	 */
	while (u->live) {
		unsigned keep;

		bl__uring_drain_bufrings(u);
		bl__uring_deliver(u);
		keep = reap(u);
		while ((op = backlog_pop(u)))
			bl__uring_op_abort(u, op, -ECANCELED);
		if (!u->live)
			break;
		if (u->doneq)
			continue;	/* ops that waited their turn: ended */
		if (wait_cqes(u, keep, 100) == -EEXIST) {
			lose_ring(u);
			return;
		}
		if (bl__now_ms() >= check) {	/* once a second */
			cancel_all(u);
			if (u->cnt.notifs == notifs)
				abandon_stranded(u);
			notifs = u->cnt.notifs;
			check = bl__now_ms() + 1000;
		}
	}
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

static const struct bl__uring_backend kernel_backend = {
	.start = issue,
	/* unused: a pooled receive re-arms from its CQE (pooled_cqe) */
	.pooled_again = issue,
	.run = kernel_run,
	.drain = kernel_drain,
	.cancel = kernel_cancel,
};
