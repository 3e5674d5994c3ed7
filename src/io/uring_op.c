/* SPDX-License-Identifier: MIT */
/*
 * uring_op.c - the operation engine that both back ends run: an op's
 * allocation, its references and release, and what a transfer's result
 * means (resume, retry, wait, done), up to the final callback.  It issues
 * nothing itself: the back ends (uring_kernel.c with uring_request.c,
 * uring_blocking.c) do, and call down into it; when the engine must start
 * an op on the back end (the next op on a descriptor, a pooled receive to
 * re-arm) it asks through u->be.
 *
 * An operation (struct uop) is ONE allocation: its header, an iovec per
 * segment and a raw pointer per segment.  Submitting a write or a send
 * walks the list once, filling both arrays and taking one reference per
 * segment (one atomic increment each) — the caller's list is not touched
 * again, so it may be cleared the moment the call returns.  A request
 * covers at most IOV_MAX iovecs of the array; a short transfer trims the
 * array in place and the next request starts where the kernel stopped, so
 * resuming costs no allocation and no second walk of the list.  Per write:
 * 1 allocation, nseg atomic increments at submit, nseg atomic decrements
 * when the kernel is done (fewer when a segment's count reads 1).
 *
 * Lifecycle: an op is "in flight" until its final callback has run, and
 * "retiring" from then until the kernel has let go of it (a zero-copy send
 * waits for its notification CQE; a cancelled multishot receive for its
 * last CQE).  The references it holds are dropped only when it retires.
 */
#include "uring_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>
#include <unistd.h>

/* -EAGAIN / -EINTR completions retried in a row before giving up. */
#define RETRY_MAX 64u

/* Both back ends apply it (bl__uring_apply_hook), so it lives below them. */
bl__uring_cqe_hook_fn _Atomic bl__uring_cqe_hook;

void bl__uring_set_cqe_hook(bl__uring_cqe_hook_fn fn)
{
	atomic_store_explicit(&bl__uring_cqe_hook, fn, memory_order_relaxed);
}

/* ---- ops: allocation, release ------------------------------------------ */

struct uop *bl__uring_op_new(struct bl_uring *u, int kind, unsigned n)
{
	const struct bl__allocator *al = bl__allocator_current();
	size_t size = sizeof(struct uop) +
		      (size_t)n * (sizeof(struct iovec) + sizeof(struct bl_raw *));
	struct uop *op = bl__alloc(al, size, _Alignof(struct uop));

	if (!op)
		return NULL;
	memset(op, 0, sizeof(*op));
	op->al = al;
	op->asize = size;
	op->u = u;
	op->kind = (uint8_t)kind;
	op->bufidx = -1;
	op->off = -1;
	op->raws = (struct bl_raw **)(op->iov + n);
	bl_list_init(&op->data);
	return op;
}

/* Drops every reference the op holds and frees it. */
void bl__uring_op_release(struct uop *op)
{
	for (unsigned i = 0; i < op->nraws; i++)
		if (op->raws[i])
			bl__raw_put(op->raws[i]);
	bl_list_clear(&op->data);
	if (op->br)
		bl__uring_br_op_unpin(op->br);
	if (op->held)
		close(op->hfd);
	bl__free(op->al, op, op->asize, _Alignof(struct uop));
}

/* Takes a retiring op (called back, the kernel done or given up) off u->live. */
void bl__uring_op_unlink_retired(struct bl_uring *u, struct uop *op)
{
	if (op->lprev)
		op->lprev->lnext = op->lnext;
	else
		u->live = op->lnext;
	if (op->lnext)
		op->lnext->lprev = op->lprev;
	u->retiring--;
}

void bl__uring_op_maybe_free(struct bl_uring *u, struct uop *op)
{
	if (!op->called || op->sqe || op->notifs || op->queued)
		return;
	/*
	 * Only a linked sync or link timeout is still due: the kernel is
	 * done with the buffers, so they go back now; the op itself stays
	 * for those CQEs, which name it.
	 */
	if (op->xsqe) {
		for (unsigned i = 0; i < op->nraws; i++)
			if (op->raws[i])
				bl__raw_put(op->raws[i]);
		op->nraws = 0;
		return;
	}
	bl__uring_op_unlink_retired(u, op);
	bl__uring_op_release(op);
}

/* Walks a list's segments once: fills iovecs and takes a reference each. */
void bl__uring_op_share_list(struct uop *op, const struct bl_list *l)
{
	struct bl__seg_cursor cur;
	const struct bl_seg *s;
	unsigned k = 0;

	BL__LIST_FOREACH_SEG(l, cur, s) {
		op->iov[k].iov_base = s->data;
		op->iov[k].iov_len = s->len;
		op->raws[k++] = bl__raw_get(s->raw);
	}
	op->niov = op->nraws = k;
	op->total = bl_list_length(l);
}

static void iov_advance(struct uop *op, size_t n)
{
	while (n) {
		struct iovec *v = &op->iov[op->iov_at];

		if (n >= v->iov_len) {
			n -= v->iov_len;
			op->iov_at++;
		} else {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= n;
			n = 0;
		}
	}
}

/* ---- completion logic shared by both back ends ------------------------ */

enum step bl__uring_op_progress(struct bl_uring *u, struct uop *op, ssize_t res)
{
	/* no more requests: cancelled by the caller or by destroy */
	bool ending = u->destroying || op->cancel_req;

	if (op->kind == OP_TIMER) {
		/* the kernel's TIMEOUT fires with -ETIME: that is success */
		op->res = res == -ETIME || res >= 0 ? 0 : res;
		return STEP_DONE;
	}
	/*
	 * A link timeout that fired cancels its request: the caller asked
	 * for -ETIME.  A cancel the caller or destroy asked for stays one.
	 */
	if (res == -ECANCELED && op->deadline_us && !ending)
		res = -ETIME;
	if (!bl__uring_op_moves_bytes(op)) {
		if (res == -EINTR && !ending && op->retries < RETRY_MAX) {
			op->retries++;
			u->cnt.retries++;
			return STEP_NEXT;
		}
		op->res = res < 0 ? res : 0;
		return STEP_DONE;
	}
	if (res < 0) {
		/* RWF_NOWAIT: the caller wants to hear that it would block */
		if (res == -EAGAIN && (op->rw_flags & RWF_NOWAIT)) {
			op->res = res;
			return STEP_DONE;
		}
		/*
		 * A non-blocking descriptor says -EAGAIN instead of letting
		 * io_uring wait: wait for readiness (a linked poll, or poll(2)
		 * on the blocking back end) and try again.  A descriptor that
		 * keeps saying it is ready but is not gets RETRY_MAX tries.
		 */
		if ((res == -EAGAIN || res == -EINTR) && !ending &&
		    op->retries < RETRY_MAX) {
			op->retries++;
			u->cnt.retries++;
			return res == -EAGAIN ? STEP_WAIT : STEP_NEXT;
		}
		/* AF_UNIX and friends refuse zero copy: send by copy */
		if (res == -EOPNOTSUPP && op->zc) {
			op->zc = 0;
			u->cnt.zc_fallbacks++;
			bl__uring_zc_avoid(u, op->fd);
			return STEP_NEXT;
		}
		/* a kernel before 6.2 refuses the usage report */
		if (res == -EINVAL && op->zc && u->zc_report) {
			u->zc_report = false;
			return STEP_NEXT;
		}
		op->res = res;
		return STEP_DONE;
	}
	op->retries = 0;
	if (op->kind == OP_RECV) {
		op->done = (size_t)res;
		op->res = res;
		return STEP_DONE;
	}
	if (res == 0) {
		/* read: end of file; send: the peer is gone; a write that
		 * takes nothing would spin */
		op->res = op->kind == OP_WRITE ? -EIO : (ssize_t)op->done;
		return STEP_DONE;
	}
	if ((size_t)res > op->total - op->done)
		res = (ssize_t)(op->total - op->done);
	op->done += (size_t)res;
	iov_advance(op, (size_t)res);
	if (op->done == op->total) {
		op->res = (ssize_t)op->done;
		return STEP_DONE;
	}
	if (ending) {
		op->res = -ECANCELED;
		return STEP_DONE;
	}
	u->cnt.resumes++;
	return STEP_NEXT;
}

/* Reads and receives: the raws' first op->done bytes become op->data. */
static void op_collect(struct uop *op)
{
	size_t left = op->done;

	for (unsigned i = 0; i < op->nraws && left; i++) {
		struct bl_ptr p;
		size_t take = left < READ_RAW_MAX ? left : READ_RAW_MAX;

		p.raw = op->raws[i];
		p.off = 0;
		p.len = take;
		VALGRIND_MAKE_MEM_DEFINED(bl__raw_data(p.raw), take);
		if (bl_list_append_ptr_move(&op->data, &p)) {
			/* only past 2 GiB: the list then needs a chunk */
			bl_list_clear(&op->data);
			op->res = -ENOMEM;
			return;
		}
		op->raws[i] = NULL;
		left -= take;
	}
}

/* The final callback of a write, read, send or receive. */
void bl__uring_op_finish(struct bl_uring *u, struct uop *op)
{
	struct bl_list *data = NULL;

	/* the next on the descriptor goes before this callback runs */
	if (op->seq == SEQ_HEAD) {
		struct uop *next = bl__uring_seq_next(u, op);

		if (next)
			u->be->start(u, next);
	}

	if (op->kind == OP_READ || op->kind == OP_RECV) {
		data = &op->data;
		if (op->res > 0)
			op_collect(op);
	}
	bl__uring_mark_called(u, op);
	bl__uring_count_call(u);
	u->cb_done = op->done;
	if (op->cb)		/* NULL: fire and forget */
		op->cb(op->arg, op->res, data);
	bl_list_clear(&op->data);
	bl__uring_op_maybe_free(u, op);
}

/* ---- order on a descriptor --------------------------------------------- */

/*
 * A write at the file position or a send runs only while no other such op
 * runs on its descriptor: it starts when the one submitted before it
 * there has ended (its short transfers resumed to the end), so the bytes
 * of each land whole and in submission order, as with write(2), on both
 * back ends.  An op waiting its turn is in flight (linked, counted) but
 * has no request anywhere.  The queues live in the ops themselves: a
 * bucket chains the heads, one per descriptor, and a head keeps its
 * queue's tail; submitting and ending cost a walk of one (short) bucket
 * and no allocation.
 */
static inline struct uop **seq_bucket(struct bl_uring *u, int fd)
{
	return &u->seq[(unsigned)fd % SEQ_BUCKETS];
}

bool bl__uring_seq_enter(struct bl_uring *u, struct uop *op)
{
	struct uop **b = seq_bucket(u, op->fd);

	op->snext = NULL;
	for (struct uop *h = *b; h; h = h->sbnext) {
		if (h->fd != op->fd)
			continue;
		h->stail->snext = op;
		h->stail = op;
		op->seq = SEQ_QUEUED;
		return false;
	}
	op->seq = SEQ_HEAD;
	op->stail = op;
	op->sbnext = *b;
	*b = op;
	return true;
}

struct uop *bl__uring_seq_pop(struct bl_uring *u, struct uop *op)
{
	struct uop **pp, *next;

	if (op->seq != SEQ_HEAD)
		return NULL;	/* not ordered, or popped already */
	pp = seq_bucket(u, op->fd);
	while (*pp != op)
		pp = &(*pp)->sbnext;
	op->seq = SEQ_NONE;
	next = op->snext;
	if (!next) {
		*pp = op->sbnext;
		return NULL;
	}
	next->seq = SEQ_HEAD;
	next->stail = op->stail;
	next->sbnext = op->sbnext;
	*pp = next;
	return next;
}

void bl__uring_seq_remove(struct bl_uring *u, struct uop *op)
{
	struct uop *h = *seq_bucket(u, op->fd), *prev;

	while (h && h->fd != op->fd)
		h = h->sbnext;
	if (!h || op->seq != SEQ_QUEUED)
		return;
	for (prev = h; prev->snext && prev->snext != op; prev = prev->snext)
		;
	if (prev->snext != op)
		return;
	prev->snext = op->snext;
	if (h->stail == op)
		h->stail = prev;
	op->snext = NULL;
	op->seq = SEQ_NONE;
}

struct uop *bl__uring_seq_next(struct bl_uring *u, struct uop *op)
{
	struct uop *next = bl__uring_seq_pop(u, op);

	/* nothing to send, or no more starts: over at once, next please */
	while (next && (u->destroying || !next->total)) {
		next->res = u->destroying ? -ECANCELED : 0;
		bl__uring_doneq_push(u, next);
		next = bl__uring_seq_pop(u, next);
	}
	return next;
}

/* Ends @op (no request of it in the kernel) with @res. */
void bl__uring_op_abort(struct bl_uring *u, struct uop *op, ssize_t res)
{
	op->res = res;
	if (op->kind == OP_POOLED) {
		bl__uring_pooled_call(u, op, res, false);
		bl__uring_op_maybe_free(u, op);
	} else {
		bl__uring_op_finish(u, op);
	}
}

/* Callbacks of ops that finished without the kernel (or on the blocking
 * back end); only those queued now, so a busy stream cannot starve the
 * caller. */
void bl__uring_deliver(struct bl_uring *u)
{
	struct uop *q = u->doneq;

	if (!q)
		return;
	u->doneq = u->doneq_tail = NULL;
	u->reaping = true;
	while (q) {
		struct uop *op = q;

		q = q->qnext;
		u->delivering = q;
		op->queued = 0;
		if (op->kind != OP_POOLED) {
			bl__uring_op_finish(u, op);
			continue;
		}
		{
			bool more = op->more && !u->destroying;

			bl__uring_pooled_call(u, op, op->res, more);
			if (more && !op->want_more) {
				/* stopped from the callback: end it */
				op->res = -ECANCELED;
				op->more = 0;
				bl__uring_doneq_push(u, op);
			} else if (more) {
				u->be->pooled_again(u, op);
			} else {
				bl__uring_op_maybe_free(u, op);
			}
		}
	}
	u->delivering = NULL;
	u->reaping = false;
}
