/* SPDX-License-Identifier: MIT */
/*
 * uring_kernel.c - the io_uring back end's ring: setting it up (what the
 * kernel offers), reaping its CQ and waiting (spinning first), and
 * cancelling and tearing down what is in flight; the back end's table.
 * The requests of the ops - their SQEs and CQEs - are uring_request.c's.
 */
#include "uring_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>

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
			bl__uring_op_cancel(u, op);
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
	bl__uring_op_cancel(u, op);
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

	while ((op = bl__uring_backlog_pop(u)))
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
		while ((op = bl__uring_backlog_pop(u)))
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

static const struct bl__uring_backend kernel_backend = {
	.start = bl__uring_issue,
	/* unused: a pooled receive re-arms from its CQE (pooled_cqe) */
	.pooled_again = bl__uring_issue,
	.run = kernel_run,
	.drain = kernel_drain,
	.cancel = kernel_cancel,
};
