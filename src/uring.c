/* SPDX-License-Identifier: MIT */
/*
 * uring.c - lists through io_uring, and the same API on a blocking back end.
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
 * user_data is the op pointer with bit 0 set (ops are 8-byte aligned), so
 * an application sharing its ring keeps its own requests' bit 0 clear
 * (see TAG_* for the poll that a descriptor answering -EAGAIN gets linked
 * in front of the retry, and for cancel requests).
 *
 * Zero-copy sends hold their raws until the notification CQE; the send's
 * callback runs at its completion, which may come first.  The kernel is
 * asked to report whether it copied anyway, and sockets where it did
 * (loopback) go back to copying: see ZC_THRESHOLD_DEFAULT.
 *
 * Lifecycle: an op is "in flight" until its final callback has run, and
 * "retiring" from then until the kernel has let go of it (a zero-copy send
 * waits for its notification CQE; a cancelled multishot receive for its
 * last CQE).  The references it holds are dropped only when it retires.
 *
 * The blocking back end runs the same ops: regular files are read and
 * written to completion in the submit call; sockets use MSG_DONTWAIT and
 * other descriptors are polled first, and an op that would block waits in
 * bl_uring_run() (poll), so a single-threaded request/response loop does
 * not deadlock on it.  Every callback runs from bl_uring_run().
 *
 * Provided-buffer rings: each buffer, once filled, becomes a claimed raw
 * (bl_raw_claim: one small header allocation per received chunk) whose
 * free callback gives the buffer back.  The ring's own thread puts it
 * straight back into the kernel's ring; any other thread pushes its id on
 * a lock-free stack (one CAS) that the ring's thread empties into the
 * kernel's ring before it reaps completions or arms receives.  The stack
 * is only ever emptied whole (exchange), which makes it ABA-safe.
 *
 * Registered buffers: a regpool's raws are claimed raws too; the raw's
 * free callback and opaque pointer identify the pool, and the buffer index
 * is the data's offset in the pool's mapping, so no side table and no
 * field in struct bl_raw is needed.
 */
#include "internal.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>
#include <liburing.h>
#include "io_int.h"
#include "uring_int.h"

#if defined(__has_include)
#if __has_include(<valgrind/memcheck.h>)
#include <valgrind/memcheck.h>
#define BL_HAVE_VALGRIND 1
#endif
#endif
#ifndef BL_HAVE_VALGRIND
#define VALGRIND_MAKE_MEM_DEFINED(p, n) ((void)(p), (void)(n))
#endif

/* liburing 2.3's header stops at the 6.1 ABI; the kernel may know more. */
#ifndef IORING_CQE_F_NOTIF
#define IORING_CQE_F_NOTIF (1U << 3)
#endif
#ifndef IORING_RECV_MULTISHOT
#define IORING_RECV_MULTISHOT (1U << 1)
#endif
/* 6.2: a zero-copy send's notification says whether the kernel copied */
#ifndef IORING_SEND_ZC_REPORT_USAGE
#define IORING_SEND_ZC_REPORT_USAGE (1U << 3)
#endif
#ifndef IORING_NOTIF_USAGE_ZC_COPIED
#define IORING_NOTIF_USAGE_ZC_COPIED (1U << 31)
#endif

#define URING_ENTRIES 256u

/*
 * Reads allocate raws of at most 1 GiB, so a read of up to 2 GiB (a
 * single transfer's cap) becomes at most two segments, which fit the
 * list's inline slots: building the result never allocates.
 */
#define READ_RAW_MAX ((size_t)1 << 30)

/* Sends by copy after a zero-copy send the kernel had to copy. */
#define ZC_SKIP 1024u

/* -EAGAIN / -EINTR completions retried in a row before giving up. */
#define RETRY_MAX 64u

/*
 * Default zero-copy threshold: 16 KiB.
 *
 * Measured (perf/bench_uring net, loopback TCP, 2 vCPU EPYC, kernel 6.18,
 * medians of 5, GB/s and CPU s/GB, copy vs SENDMSG_ZC on every send):
 *     8 KiB: 1.50 vs 0.23 GB/s, 0.45 vs 4.5 s/GB
 *    16 KiB: 2.74 vs 0.50,      0.32 vs 1.47
 *    64 KiB: 3.02 vs 1.29,      0.31 vs 0.57
 *   256 KiB: 3.51 vs 1.76,      0.27 vs 0.41
 * On loopback the kernel copies the pinned pages anyway, so zero copy only
 * adds cost there: about 17-20 us of CPU per send at 16-64 KiB, more below.
 * The library therefore asks the kernel (IORING_SEND_ZC_REPORT_USAGE)
 * whether it copied and stops using zero copy on such a socket (ZC_SKIP);
 * with that, "zc" runs at the speed of copy on loopback (run-uring.sh).
 * The threshold thus only decides for sockets where the kernel really
 * sends from user pages (a NIC), which this machine cannot measure; there
 * the kernel documents zero copy as a loss below about 10 KB
 * (Documentation/networking/msg_zerocopy.rst), and 16 KiB is the first
 * power of two above it.
 */
#define ZC_THRESHOLD_DEFAULT ((size_t)16 * 1024)

/*
 * user_data: op | TAG_OP for an op's data request, op | TAG_POLL for the
 * readiness poll linked in front of it after -EAGAIN, TAG_INTERNAL alone
 * for a cancel request.  Ops are 8-byte aligned, so the tags never clash.
 */
#define TAG_OP 1ull
#define TAG_POLL 3ull
#define TAG_INTERNAL 1ull
#define TAG_WAKE 5ull		/* alone: the wake-up timer (wait_until) */
#define TAG_MASK 7ull

enum op_kind {
	OP_WRITE,
	OP_READ,
	OP_SEND,
	OP_RECV,
	OP_POOLED,
};

enum step {
	STEP_DONE,	/* op->res is final */
	STEP_NEXT,	/* issue the next request */
	STEP_WAIT,	/* -EAGAIN: wait until the fd is ready, then retry */
};

struct uop {
	struct uop *lnext, *lprev;	/* u->live */
	struct uop *qnext;		/* doneq, backlog or waitq */
	struct bl_uring *u;
	const struct bl__allocator *al;
	size_t asize;
	uint8_t kind;		/* enum op_kind */
	uint8_t queued;		/* on doneq / backlog / waitq */
	uint8_t called;		/* final callback ran */
	uint8_t sqe;		/* a request is in the kernel */
	uint8_t zc;		/* the next send is zero copy */
	uint8_t pollfirst;	/* blocking: poll before each system call */
	uint8_t want_more;	/* pooled: the caller asked for multishot */
	uint8_t multishot;	/* pooled: armed as a kernel multishot */
	uint8_t more;		/* pooled, blocking: more will follow */
	uint8_t got_any;	/* pooled: delivered at least one chunk */
	int fd;
	int msg_flags;
	int bufidx;		/* registered buffer index, or -1 */
	unsigned notifs;	/* zero-copy notifications still due */
	unsigned retries;
	unsigned niov, iov_at;	/* iovecs; the first one not finished */
	unsigned nraws;
	off_t off;		/* -1: the file position */
	size_t total, done;
	ssize_t res;
	void *arg;
	bl_uring_cb cb;
	bl_uring_recv_cb rcb;
	struct bl_uring_bufring *br;
	struct bl_list data;	/* received, about to be handed over */
	struct msghdr msg;
	struct bl_raw **raws;	/* after iov[] */
	struct iovec iov[];
};

struct bl_uring {
	struct io_uring *ring;		/* NULL: blocking back end */
	bool attached;
	bool destroying;
	bool reaping;		/* callbacks may run: no nested reap */
	bool need_submit;	/* attached: resubmissions were prepared */
	bool has_send_zc, has_sendmsg_zc, has_recv_multishot;
	bool zc_report;		/* IORING_SEND_ZC_REPORT_USAGE accepted */
	bool zc_adapt;		/* follow the kernel's usage reports */
	size_t zc_threshold;
	/*
	 * Sockets whose zero-copy sends the kernel copied anyway (loopback,
	 * or a device without scatter-gather) or refused (AF_UNIX): of every
	 * ZC_SKIP sends one tries zero copy again, the others go by copy, and
	 * a notification that says "not copied" ends it.  Direct-mapped by
	 * fd; a collision or a reused fd only costs a wrong guess, never
	 * bytes.
	 */
	struct {
		int fd;
		unsigned skip;
	} zc_hint[64];
	const struct bl__allocator *al;
	unsigned inflight;	/* final callback not run yet */
	unsigned retiring;	/* called back, kernel not done yet */
	uint64_t ncomplete;	/* callbacks run */
	struct uop *live;
	struct uop *doneq, *doneq_tail;
	struct uop *backlog, *backlog_tail;
	struct uop *waitq;
	struct bl_uring_bufring *bufrings;
	struct bl_uring_regpool *regpool;
	struct bl__uring_counters cnt;
	int64_t wake_at;		/* ms: a wake-up timer is armed until */
	bool wake_broken;		/* the kernel refused it: no more */
	struct __kernel_timespec wake_ts;
	char reason[192];
	struct io_uring own;
};

struct bl_uring_bufring {
	struct bl_uring *u;		/* NULL once unregistered */
	struct bl_uring_bufring *next;	/* u->bufrings */
	struct io_uring_buf_ring *ring;	/* NULL on the blocking back end */
	char *base;
	size_t buf_size, map_bytes, ring_bytes;
	unsigned nbufs, mask;
	unsigned short bgid;
	bool handle_gone;
	unsigned op_pins;		/* ops using it (owner thread only) */
	uintptr_t owner;		/* token of the ring's thread */
	/*
	 * One for the owner side (the handle, or ops still using it) plus one
	 * per buffer lent out as a raw: the last to drop it frees the memory,
	 * whatever thread that is.
	 */
	_Atomic unsigned refs;
	_Atomic int ret_head;		/* returned ids, -1: none */
	const struct bl__allocator *al;
	size_t asize;
	unsigned nfree;			/* blocking: free_ids in use */
	unsigned *free_ids;		/* blocking: the owner's free stack */
	int ret_next[];			/* per id: the stack's links */
};

struct bl_uring_regpool {
	struct bl_uring *u;		/* NULL once unregistered */
	char *base;
	size_t buf_size, stride, map_bytes;
	unsigned nbufs;
	_Atomic bool registered;
	_Atomic unsigned refs;		/* the handle + raws out */
	pthread_mutex_t lock;		/* free_ids: raws return from any thread */
	unsigned nfree;
	const struct bl__allocator *al;
	size_t asize;
	unsigned free_ids[];
};

static bl__uring_cqe_hook_fn _Atomic cqe_hook;

static __thread char tls_token;

/* Unique per live thread, cheap (a TLS address), comparable from anywhere. */
static inline uintptr_t self_token(void)
{
	return (uintptr_t)&tls_token;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- ops: allocation, queues, release ------------------------------------ */

static struct uop *op_new(struct bl_uring *u, int kind, unsigned n)
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

static void br_op_unpin(struct bl_uring_bufring *br);

/* Drops every reference the op holds and frees it. */
static void op_release(struct uop *op)
{
	for (unsigned i = 0; i < op->nraws; i++)
		if (op->raws[i])
			bl__raw_put(op->raws[i]);
	bl_list_clear(&op->data);
	if (op->br)
		br_op_unpin(op->br);
	bl__free(op->al, op, op->asize, _Alignof(struct uop));
}

static void op_link(struct bl_uring *u, struct uop *op)
{
	op->lprev = NULL;
	op->lnext = u->live;
	if (u->live)
		u->live->lprev = op;
	u->live = op;
	u->inflight++;
}

static void op_maybe_free(struct bl_uring *u, struct uop *op)
{
	if (!op->called || op->sqe || op->notifs || op->queued)
		return;
	if (op->lprev)
		op->lprev->lnext = op->lnext;
	else
		u->live = op->lnext;
	if (op->lnext)
		op->lnext->lprev = op->lprev;
	u->retiring--;
	op_release(op);
}

static void doneq_push(struct bl_uring *u, struct uop *op)
{
	op->qnext = NULL;
	op->queued = 1;
	if (u->doneq_tail)
		u->doneq_tail->qnext = op;
	else
		u->doneq = op;
	u->doneq_tail = op;
}

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

static void waitq_push(struct bl_uring *u, struct uop *op)
{
	op->qnext = u->waitq;
	op->queued = 1;
	u->waitq = op;
}

/* Walks a list's segments once: fills iovecs and takes a reference each. */
static void op_share_list(struct uop *op, const struct bl_list *l)
{
	const struct bl__chunk_hdr *c;
	unsigned k = 0;

	for (c = &l->_inl; c; c = c->next) {
		const struct bl_ptr *s = bl__chunk(c)->seg + c->start;

		for (uint32_t i = 0; i < c->count; i++, s++) {
			op->iov[k].iov_base = s->raw->data + s->off;
			op->iov[k].iov_len = s->len;
			op->raws[k++] = bl__raw_get(s->raw);
		}
	}
	op->niov = op->nraws = k;
	op->total = l->_len;
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

/* ---- buffer ring: lending and returning buffers ------------------------- */

static void br_free(struct bl_uring_bufring *br)
{
	if (br->ring)
		munmap(br->ring, br->ring_bytes);
	munmap(br->base, br->map_bytes);
	bl__free(br->al, br, br->asize, _Alignof(struct bl_uring_bufring));
}

static void br_unref(struct bl_uring_bufring *br)
{
	if (atomic_fetch_sub_explicit(&br->refs, 1, memory_order_acq_rel) == 1)
		br_free(br);
}

static void br_op_unpin(struct bl_uring_bufring *br)
{
	if (!--br->op_pins && br->handle_gone)
		br_unref(br);
}

/* Owner thread: buffer @id is the kernel's (or the free stack's) again. */
static void br_put_back(struct bl_uring_bufring *br, unsigned id)
{
	if (!br->u)
		return;		/* unregistered: nobody will lend it again */
	if (br->ring) {
		io_uring_buf_ring_add(br->ring, br->base + (size_t)id * br->buf_size,
				      (unsigned)br->buf_size, (unsigned short)id,
				      (int)br->mask, 0);
		io_uring_buf_ring_advance(br->ring, 1);
	} else {
		br->free_ids[br->nfree++] = id;
	}
}

/* Owner thread: moves what other threads returned back into the ring. */
static void br_drain(struct bl_uring_bufring *br)
{
	int h, k = 0;

	if (atomic_load_explicit(&br->ret_head, memory_order_relaxed) < 0)
		return;
	h = atomic_exchange_explicit(&br->ret_head, -1, memory_order_acquire);
	if (!br->u)
		return;
	while (h >= 0) {
		int nx = br->ret_next[h];

		if (br->ring)
			io_uring_buf_ring_add(br->ring,
					      br->base + (size_t)h * br->buf_size,
					      (unsigned)br->buf_size,
					      (unsigned short)h, (int)br->mask, k++);
		else
			br->free_ids[br->nfree++] = (unsigned)h;
		h = nx;
	}
	if (k)
		io_uring_buf_ring_advance(br->ring, k);
}

/*
 * A ring buffer's raw lost its last reference, on any thread.  On the
 * ring's thread the buffer goes straight back (no atomic besides the
 * ring's tail store); elsewhere one CAS pushes it on the return stack.
 * Either way one atomic decrement drops the buffer's share of br.
 */
static void br_release(void *data, size_t len, void *opaque)
{
	struct bl_uring_bufring *br = opaque;
	unsigned id = (unsigned)(((char *)data - br->base) / br->buf_size);

	(void)len;
	if (br->owner == self_token() && !br->handle_gone) {
		br_put_back(br, id);
	} else {
		int old = atomic_load_explicit(&br->ret_head,
					       memory_order_relaxed);

		do {
			br->ret_next[id] = old;
		} while (!atomic_compare_exchange_weak_explicit(
				 &br->ret_head, &old, (int)id,
				 memory_order_release, memory_order_relaxed));
	}
	br_unref(br);
}

/*
 * Lends buffer @id holding @n received bytes as a slice appended to @out
 * (empty: no chunk allocation).  Costs one raw header allocation and one
 * atomic increment.  On failure the buffer goes back at once.
 */
static int br_chunk(struct bl_uring_bufring *br, unsigned id, size_t n,
		    struct bl_list *out)
{
	char *data = br->base + (size_t)id * br->buf_size;
	struct bl_raw *r = bl_raw_claim(data, br->buf_size, br_release, br);
	struct bl_ptr p;

	if (!r) {
		br_put_back(br, id);
		return -ENOMEM;
	}
	atomic_fetch_add_explicit(&br->refs, 1, memory_order_relaxed);
	VALGRIND_MAKE_MEM_DEFINED(data, n);
	p.raw = r;
	p.off = 0;
	p.len = n;
	if (bl_list_append_ptr_move(out, &p)) {
		bl_raw_put(r);
		return -ENOMEM;
	}
	return 0;
}

static bool raw_is_pooled(const struct bl_raw *r)
{
	return r->kind == BL__RAW_CLAIMED && r->u.claim.fn == br_release;
}

/* ---- registered buffers ----------------------------------------------- */

static void rp_unref(struct bl_uring_regpool *p)
{
	if (atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) == 1) {
		munmap(p->base, p->map_bytes);
		pthread_mutex_destroy(&p->lock);
		bl__free(p->al, p, p->asize, _Alignof(struct bl_uring_regpool));
	}
}

static void rp_release(void *data, size_t len, void *opaque)
{
	struct bl_uring_regpool *p = opaque;

	(void)len;
	pthread_mutex_lock(&p->lock);
	p->free_ids[p->nfree++] =
		(unsigned)(((char *)data - p->base) / p->stride);
	pthread_mutex_unlock(&p->lock);
	rp_unref(p);
}

int bl_raw_buf_index(const struct bl_raw *r)
{
	struct bl_uring_regpool *p;

	if (!r || r->kind != BL__RAW_CLAIMED || r->u.claim.fn != rp_release)
		return -1;
	p = r->u.claim.opaque;
	if (!atomic_load_explicit(&p->registered, memory_order_acquire))
		return -1;
	return (int)((r->data - p->base) / p->stride);
}

/* Index of @r in @u's registered table, or -1. */
static int fixed_index(const struct bl_uring *u, const struct bl_raw *r)
{
	if (!u->regpool || r->kind != BL__RAW_CLAIMED ||
	    r->u.claim.fn != rp_release || r->u.claim.opaque != u->regpool)
		return -1;
	return bl_raw_buf_index(r);
}

/* ---- issuing requests (io_uring) --------------------------------------- */

static struct io_uring_sqe *get_sqe(struct bl_uring *u)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(u->ring);

	if (!sqe) {
		io_uring_submit(u->ring);
		sqe = io_uring_get_sqe(u->ring);
	}
	return sqe;
}

static void op_prep(struct bl_uring *u, struct uop *op,
		    struct io_uring_sqe *sqe)
{
	struct iovec *v = op->iov + op->iov_at;
	unsigned n = op->niov - op->iov_at;
	__u64 off = op->off < 0 ? (__u64)-1 : (__u64)op->off + op->done;

	if (n > BL__IOV_MAX)
		n = BL__IOV_MAX;
	switch (op->kind) {
	case OP_WRITE:
		if (op->bufidx >= 0) {
			io_uring_prep_write_fixed(sqe, op->fd, v->iov_base,
						  (unsigned)v->iov_len, off,
						  op->bufidx);
			u->cnt.fixed++;
		} else {
			io_uring_prep_writev(sqe, op->fd, v, n, off);
		}
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
}

/* The next request of an op already in flight: never fails, may wait. */
static void op_issue(struct bl_uring *u, struct uop *op)
{
	struct io_uring_sqe *sqe = get_sqe(u);

	if (!sqe) {
		backlog_push(u, op);
		return;
	}
	op_prep(u, op, sqe);
	u->need_submit = true;
}

static short op_events(const struct uop *op)
{
	return op->kind == OP_WRITE || op->kind == OP_SEND ? POLLOUT : POLLIN;
}

/*
 * After -EAGAIN: a poll for readiness linked in front of the next request,
 * so the kernel waits, not us.  Its CQE is ignored (the linked request
 * reports, with -ECANCELED if the poll failed or was cancelled).
 */
static void op_issue_polled(struct bl_uring *u, struct uop *op)
{
	struct io_uring_sqe *ps;

	if (io_uring_sq_space_left(u->ring) < 2)
		io_uring_submit(u->ring);
	if (io_uring_sq_space_left(u->ring) < 2) {
		backlog_push(u, op);
		return;
	}
	ps = io_uring_get_sqe(u->ring);
	io_uring_prep_poll_add(ps, op->fd, (unsigned)op_events(op));
	ps->flags |= IOSQE_IO_LINK;
	io_uring_sqe_set_data64(ps, (uint64_t)(uintptr_t)op | TAG_POLL);
	op_prep(u, op, io_uring_get_sqe(u->ring));
	u->need_submit = true;
}

static void flush_backlog(struct bl_uring *u)
{
	while (u->backlog) {
		struct io_uring_sqe *sqe = get_sqe(u);

		if (!sqe)
			return;
		op_prep(u, backlog_pop(u), sqe);
	}
}

/* Cancels the op's request and the poll that may be linked before it. */
static void op_cancel(struct bl_uring *u, struct uop *op)
{
	static const uint64_t tags[2] = { TAG_OP, TAG_POLL };

	for (int i = 0; i < 2; i++) {
		struct io_uring_sqe *sqe = get_sqe(u);

		if (!sqe)
			return;		/* the destroy loop asks again */
		io_uring_prep_cancel64(sqe, (uint64_t)(uintptr_t)op | tags[i],
				       IORING_ASYNC_CANCEL_ALL);
		io_uring_sqe_set_data64(sqe, TAG_INTERNAL);
		u->cnt.cancels++;
	}
}

/* ---- completion logic shared by both back ends ------------------------ */

static void zc_avoid(struct bl_uring *u, int fd);

static enum step op_progress(struct bl_uring *u, struct uop *op, ssize_t res)
{
	if (res < 0) {
		/*
		 * A non-blocking descriptor says -EAGAIN instead of letting
		 * io_uring wait: wait for readiness (a linked poll, or poll(2)
		 * on the blocking back end) and try again.  A descriptor that
		 * keeps saying it is ready but is not gets RETRY_MAX tries.
		 */
		if ((res == -EAGAIN || res == -EINTR) && !u->destroying &&
		    op->retries < RETRY_MAX) {
			op->retries++;
			u->cnt.retries++;
			return res == -EAGAIN ? STEP_WAIT : STEP_NEXT;
		}
		/* AF_UNIX and friends refuse zero copy: send by copy */
		if (res == -EOPNOTSUPP && op->zc) {
			op->zc = 0;
			u->cnt.zc_fallbacks++;
			zc_avoid(u, op->fd);
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
	if (u->destroying) {
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
		VALGRIND_MAKE_MEM_DEFINED(p.raw->data, take);
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

static void mark_called(struct bl_uring *u, struct uop *op)
{
	op->called = 1;
	u->inflight--;
	u->retiring++;
}

/* The final callback of a write, read, send or receive. */
static void op_finish(struct bl_uring *u, struct uop *op)
{
	struct bl_list *data = NULL;

	if (op->kind == OP_READ || op->kind == OP_RECV) {
		data = &op->data;
		if (op->res > 0)
			op_collect(op);
	}
	mark_called(u, op);
	u->ncomplete++;
	op->cb(op->arg, op->res, data);
	bl_list_clear(&op->data);
	op_maybe_free(u, op);
}

/* A pooled receive's callback; @final: it is the last. */
static void pooled_call(struct bl_uring *u, struct uop *op, ssize_t res,
			bool more)
{
	if (!more)
		mark_called(u, op);
	u->ncomplete++;
	op->rcb(op->arg, res, &op->data, more);
	bl_list_clear(&op->data);
}

/* Ends @op (no request of it in the kernel) with @res. */
static void op_abort(struct bl_uring *u, struct uop *op, ssize_t res)
{
	op->res = res;
	if (op->kind == OP_POOLED) {
		pooled_call(u, op, res, false);
		op_maybe_free(u, op);
	} else {
		op_finish(u, op);
	}
}

static int apply_hook(struct uop *op, struct io_uring_cqe *c)
{
	bl__uring_cqe_hook_fn h =
		atomic_load_explicit(&cqe_hook, memory_order_relaxed);

	return h ? h(c, op->arg) : c->res;
}

/* ---- completions (io_uring) ------------------------------------------- */

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
	br_drain(br);
	if (has_buf && (res <= 0 || op->called)) {
		br_put_back(br, bid);	/* taken, but nothing to hand over */
		has_buf = false;
	}
	if (op->called) {	/* after a final callback: swallow the rest */
		op_maybe_free(u, op);
		return;
	}
	/* a kernel without multishot receive refuses the flag */
	if (res == -EINVAL && op->multishot && !op->got_any &&
	    !u->destroying) {
		u->has_recv_multishot = false;
		op->multishot = 0;
		op_issue(u, op);
		return;
	}
	if (res > 0) {
		int ret = has_buf ? br_chunk(br, bid, (size_t)res, &op->data)
				  : -EIO;

		if (ret)
			res = ret;
	}
	if (res > 0) {
		bool again = op->want_more && !more && !u->destroying;

		op->got_any = 1;
		if (again) {	/* single shot, or the kernel stopped early */
			u->cnt.rearms++;
			op_issue(u, op);
		}
		pooled_call(u, op, res, more || again);
		op_maybe_free(u, op);
		return;
	}
	if (more)
		op_cancel(u, op);	/* still armed: -ENOMEM above */
	pooled_call(u, op, res, false);
	op_maybe_free(u, op);
}

static void zc_avoid(struct bl_uring *u, int fd)
{
	unsigned i = (unsigned)fd % 64;

	if (!u->zc_adapt)
		return;
	u->zc_hint[i].fd = fd;
	u->zc_hint[i].skip = ZC_SKIP;
}

/* Zero copy for a send of @len bytes on @fd? */
static bool want_zc(struct bl_uring *u, int fd, size_t len)
{
	unsigned i = (unsigned)fd % 64;

	if (!u->ring || !u->has_sendmsg_zc || len < u->zc_threshold)
		return false;
	if (u->zc_hint[i].fd != fd)
		return true;
	if (--u->zc_hint[i].skip)
		return false;
	/* the probe: until its notification says otherwise, still copy */
	u->zc_hint[i].skip = ZC_SKIP;
	return true;
}

static void handle(struct bl_uring *u, const struct io_uring_cqe *kc)
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
	if (c.user_data == TAG_INTERNAL ||
	    (c.user_data & TAG_MASK) == TAG_POLL)
		return;
	op = (struct uop *)(uintptr_t)(c.user_data & ~TAG_MASK);
	if (c.flags & IORING_CQE_F_NOTIF) {
		if (u->zc_report && (c.res & IORING_NOTIF_USAGE_ZC_COPIED)) {
			u->cnt.zc_copied++;
			zc_avoid(u, op->fd);
		} else if (u->zc_report && c.res >= 0 &&
			   u->zc_hint[(unsigned)op->fd % 64].fd == op->fd) {
			/*
			 * A probe went out from user pages after all.  (A
			 * send that failed also reports "copied": the kernel
			 * sets the bit whenever zero copy was not used.)
			 */
			u->zc_hint[(unsigned)op->fd % 64].fd = -1;
		}
		op->notifs--;
		u->cnt.notifs++;
		op_maybe_free(u, op);
		return;
	}
	c.res = apply_hook(op, &c);
	if (op->kind == OP_POOLED) {
		pooled_cqe(u, op, &c);
		return;
	}
	/* a zero-copy send's CQE with F_MORE promises a notification */
	if (op->zc && (c.flags & IORING_CQE_F_MORE))
		op->notifs++;
	op->sqe = 0;
	switch (op_progress(u, op, c.res)) {
	case STEP_NEXT:
		op_issue(u, op);
		return;
	case STEP_WAIT:
		op_issue_polled(u, op);
		return;
	case STEP_DONE:
		break;
	}
	op_finish(u, op);
}

static inline bool cqe_ours(const struct io_uring_cqe *c)
{
	return c->user_data & TAG_OP;
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
	for (i = head; i != tail; i++) {
		struct io_uring_cqe *c =
			&cq->cqes[(i & cq->ring_mask) << shift];

		if (cqe_ours(c))
			handle(u, c);
		else
			keep++;
	}
	if (keep) {
		unsigned dst = tail;

		for (i = tail; i != head; i--) {
			struct io_uring_cqe *c =
				&cq->cqes[((i - 1) & cq->ring_mask) << shift];

			if (cqe_ours(c))
				continue;
			dst--;
			if (dst != i - 1)
				memcpy(&cq->cqes[(dst & cq->ring_mask) << shift],
				       c, csz);
		}
	}
	io_uring_smp_store_release(cq->khead, tail - keep);
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

static void drain_bufrings(struct bl_uring *u)
{
	for (struct bl_uring_bufring *br = u->bufrings; br; br = br->next)
		br_drain(br);
}

/* Callbacks of ops that finished without the kernel (or on the blocking
 * back end); only those queued now, so a busy stream cannot starve the
 * caller. */
static void blk_pooled(struct bl_uring *u, struct uop *op);

static void deliver(struct bl_uring *u)
{
	struct uop *q = u->doneq;

	if (!q)
		return;
	u->doneq = u->doneq_tail = NULL;
	u->reaping = true;
	while (q) {
		struct uop *op = q;

		q = q->qnext;
		op->queued = 0;
		if (op->kind != OP_POOLED) {
			op_finish(u, op);
			continue;
		}
		{
			bool more = op->more && !u->destroying;

			pooled_call(u, op, op->res, more);
			if (more && !op->want_more) {
				/* stopped from the callback: end it */
				op->res = -ECANCELED;
				op->more = 0;
				doneq_push(u, op);
			} else if (more) {
				blk_pooled(u, op);
			} else {
				op_maybe_free(u, op);
			}
		}
	}
	u->reaping = false;
}

/*
 * A wait with a time limit.  Handing the limit to io_uring_enter() arms a
 * high-resolution timer for every wait (and takes the extended-argument
 * path), which a request/response loop pays once per message.  Instead an
 * own ring keeps an absolute TIMEOUT request (TAG_WAKE) armed at the
 * earliest deadline asked for and waits without a limit: a wait whose
 * deadline lies at or past the armed timer's reuses it, and a wake-up
 * before the deadline just waits again.  A loop that waits with the same
 * limit thus arms a timer once per limit, not once per wait (msgbench's
 * ping-pong client waits with 100 ms: 8.9 against 9.2 us of its CPU per
 * message, medians of 5 interleaved runs).  Attached rings, whose CQ the
 * application reads too, pass the limit per wait as before.
 */
static int wait_until(struct bl_uring *u, unsigned keep, int64_t deadline,
		      int64_t now)
{
	struct io_uring_sqe *sqe;

	if (u->attached || u->wake_broken)
		return wait_cqes(u, keep, (int)(deadline - now));
	if (u->wake_at <= now || u->wake_at > deadline) {
		sqe = get_sqe(u);
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

static int run_uring(struct bl_uring *u, unsigned min, int timeout_ms)
{
	uint64_t start = u->ncomplete;
	int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
	int ret = 0;

	/*
	 * With IORING_SETUP_DEFER_TASKRUN the kernel posts completions only
	 * when the task asks for events: ask once, so that what is ready is
	 * seen even when nothing is waited for.
	 */
	if (u->ring->flags & IORING_SETUP_DEFER_TASKRUN) {
		flush_backlog(u);
		io_uring_submit(u->ring);
		io_uring_enter(u->ring->ring_fd, 0, 0, IORING_ENTER_GETEVENTS,
			       NULL);
	}
	for (;;) {
		unsigned keep;
		int ms = timeout_ms;

		flush_backlog(u);
		drain_bufrings(u);
		deliver(u);
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
			int64_t now = now_ms();

			if (deadline <= now)
				break;
			ret = wait_until(u, keep, deadline, now);
		} else {
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

/* ---- the blocking back end ------------------------------------------- */

static bool fd_ready(const struct uop *op)
{
	struct pollfd p = { .fd = op->fd, .events = op_events(op) };

	return poll(&p, 1, 0) != 0;	/* errors: let the I/O call say */
}

static ssize_t blk_syscall(struct bl_uring *u, struct uop *op)
{
	struct iovec *v = op->iov + op->iov_at;
	int n = (int)(op->niov - op->iov_at);
	off_t off = op->off < 0 ? -1 : op->off + (off_t)op->done;
	ssize_t r = -1;

	if (n > BL__IOV_MAX)
		n = BL__IOV_MAX;
	u->cnt.sqes++;
	switch (op->kind) {
	case OP_WRITE:
		r = off < 0 ? writev(op->fd, v, n) : pwritev(op->fd, v, n, off);
		break;
	case OP_READ:
		r = off < 0 ? readv(op->fd, v, n) : preadv(op->fd, v, n, off);
		break;
	case OP_SEND:
		op->msg.msg_iov = v;
		op->msg.msg_iovlen = (size_t)n;
		r = sendmsg(op->fd, &op->msg, op->msg_flags | MSG_DONTWAIT);
		break;
	case OP_RECV:
		r = recv(op->fd, v->iov_base, v->iov_len,
			 op->msg_flags | MSG_DONTWAIT);
		break;
	}
	return r < 0 ? -errno : r;
}

static ssize_t blk_hook(struct uop *op, ssize_t r)
{
	struct io_uring_cqe c;

	c.user_data = (uint64_t)(uintptr_t)op | TAG_OP;
	c.res = (int32_t)r;
	c.flags = 0;
	return atomic_load_explicit(&cqe_hook, memory_order_relaxed)
		       ? apply_hook(op, &c) : r;
}

static void blk_perform(struct bl_uring *u, struct uop *op)
{
	for (;;) {
		enum step st;
		ssize_t r;

		if (op->pollfirst && !fd_ready(op)) {
			waitq_push(u, op);
			return;
		}
		r = blk_hook(op, blk_syscall(u, op));
		st = op_progress(u, op, r);
		if (st == STEP_NEXT)
			continue;
		if (st == STEP_WAIT)
			waitq_push(u, op);
		else
			doneq_push(u, op);
		return;
	}
}

static int br_take(struct bl_uring_bufring *br)
{
	br_drain(br);
	return br->nfree ? (int)br->free_ids[--br->nfree] : -1;
}

static void blk_pooled(struct bl_uring *u, struct uop *op)
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
		r = recv(op->fd, br->base + (size_t)id * br->buf_size,
			 br->buf_size, op->msg_flags | MSG_DONTWAIT);
		r = blk_hook(op, r < 0 ? -errno : r);
		if (r <= 0)
			br_put_back(br, (unsigned)id);
		if (r == -EINTR)
			continue;
		if (r == -EAGAIN) {
			waitq_push(u, op);
			return;
		}
		if (r > 0) {
			int ret = br_chunk(br, (unsigned)id, (size_t)r, &op->data);

			op->res = ret ? ret : r;
			op->more = !ret && op->want_more;
		} else {
			op->res = r;
			op->more = 0;
		}
		break;
	}
	doneq_push(u, op);
}

#define POLL_BATCH 256

/* Polls up to POLL_BATCH waiting ops for @ms and runs the ready ones. */
static int blk_poll(struct bl_uring *u, int ms)
{
	struct pollfd pfd[POLL_BATCH];
	struct uop *ops[POLL_BATCH];
	int n = 0, ready;

	while (u->waitq && n < POLL_BATCH) {
		struct uop *op = u->waitq;

		u->waitq = op->qnext;
		op->queued = 0;
		ops[n] = op;
		pfd[n].fd = op->fd;
		pfd[n].events = op_events(op);
		pfd[n].revents = 0;
		n++;
	}
	ready = poll(pfd, (nfds_t)n, ms);
	if (ready < 0)
		ready = -errno;
	for (int i = 0; i < n; i++) {
		struct uop *op = ops[i];

		if (ready <= 0 || !pfd[i].revents)
			waitq_push(u, op);
		else if (op->kind == OP_POOLED)
			blk_pooled(u, op);
		else
			blk_perform(u, op);
	}
	return ready;
}

static int run_blocking(struct bl_uring *u, unsigned min, int timeout_ms)
{
	uint64_t start = u->ncomplete;
	int64_t deadline = timeout_ms > 0 ? now_ms() + timeout_ms : 0;

	for (;;) {
		int ms = timeout_ms, ret;

		deliver(u);
		if (u->ncomplete - start >= min)
			break;
		if (!u->waitq) {
			if (u->doneq)
				continue;
			break;
		}
		if (timeout_ms > 0) {
			int64_t left = deadline - now_ms();

			ms = left > 0 ? (int)left : 0;
		}
		ret = blk_poll(u, ms);
		if (ret < 0 && ret != -EINTR)
			return ret;
		if (ret == 0 && !u->doneq && ms >= 0 &&
		    (timeout_ms == 0 || now_ms() >= deadline))
			break;
	}
	return (int)(u->ncomplete - start);
}

/* ---- creation and teardown -------------------------------------------- */

static size_t default_zc_threshold(void)
{
	return ZC_THRESHOLD_DEFAULT;
}

static struct bl_uring *uring_alloc(const struct bl_uring_params *p)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct bl_uring *u = bl__alloc(al, sizeof(*u), _Alignof(struct bl_uring));

	if (!u)
		return NULL;
	memset(u, 0, sizeof(*u));
	u->al = al;
	u->zc_threshold = p && p->zc_threshold ? p->zc_threshold
					       : default_zc_threshold();
	for (unsigned i = 0; i < 64; i++)
		u->zc_hint[i].fd = -1;
	u->zc_adapt = true;
	return u;
}

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

static void set_reason(struct bl_uring *u, int err)
{
	char sysctl[32] = "";
	FILE *f;

	f = fopen("/proc/sys/kernel/io_uring_disabled", "re");
	if (f) {
		int v = 0;

		if (fscanf(f, "%d", &v) == 1 && v)
			snprintf(sysctl, sizeof(sysctl),
				 ", kernel.io_uring_disabled=%d", v);
		fclose(f);
	}
	snprintf(u->reason, sizeof(u->reason),
		 "io_uring_setup failed: %s (%s%s)", strerror(err),
		 err == ENOSYS ? "kernel without io_uring, or a seccomp filter"
		 : err == EPERM ? "seccomp filter or io_uring_disabled sysctl"
				: "ring refused",
		 sysctl);
}

struct bl_uring *bl_uring_create(const struct bl_uring_params *p)
{
	struct bl_uring *u = uring_alloc(p);
	const char *env = getenv("BL_URING_FORCE_BLOCKING");
	struct io_uring_params ip;
	unsigned entries;
	int ret;

	if (!u)
		return NULL;
	if (p && p->force_blocking) {
		snprintf(u->reason, sizeof(u->reason),
			 "forced by bl_uring_params.force_blocking");
		return u;
	}
	if (env && *env && strcmp(env, "0")) {
		snprintf(u->reason, sizeof(u->reason),
			 "forced by BL_URING_FORCE_BLOCKING");
		return u;
	}
	entries = p && p->entries ? p->entries : URING_ENTRIES;
	memset(&ip, 0, sizeof(ip));
	ip.flags = p ? p->flags : 0;
	/*
	 * Zero-copy sends complete twice and multishot receives many times
	 * per SQE: a CQ four times the SQ keeps the kernel's overflow list
	 * (slow, and unbounded memory) out of the common case.
	 */
	if (!(ip.flags & IORING_SETUP_CQSIZE)) {
		ip.flags |= IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
		ip.cq_entries = entries * 4;
	}
	ret = io_uring_queue_init_params(entries, &u->own, &ip);
	if (ret < 0) {
		set_reason(u, -ret);
		return u;
	}
	u->ring = &u->own;
	probe(u);
	return u;
}

struct bl_uring *bl_uring_attach(struct io_uring *ring,
				 const struct bl_uring_params *p)
{
	struct bl_uring *u;

	if (!ring)
		return NULL;
	u = uring_alloc(p);
	if (!u)
		return NULL;
	u->ring = ring;
	u->attached = true;
	probe(u);
	return u;
}

static void cancel_all(struct bl_uring *u)
{
	for (struct uop *op = u->live; op; op = op->lnext)
		if (op->sqe)
			op_cancel(u, op);
}

static void drain_uring(struct bl_uring *u)
{
	struct uop *op;
	unsigned rounds = 0;

	while ((op = backlog_pop(u)))
		op_abort(u, op, -ECANCELED);
	deliver(u);
	cancel_all(u);
	/*
	 * Wait for the kernel to let go of every op: cancelled requests
	 * complete with -ECANCELED, those it could not cancel (a file write
	 * already running) with their result, zero-copy notifications
	 * whenever the network is done.  A request that was not cancellable
	 * when asked is asked again every second.
	 */
	while (u->live) {
		unsigned keep;

		drain_bufrings(u);
		deliver(u);
		keep = reap(u);
		while ((op = backlog_pop(u)))
			op_abort(u, op, -ECANCELED);
		if (!u->live)
			break;
		wait_cqes(u, keep, 100);
		if (++rounds % 10 == 0)
			cancel_all(u);
	}
}

static void drain_blocking(struct bl_uring *u)
{
	struct uop *op;

	while (u->doneq || u->waitq) {
		deliver(u);
		while ((op = u->waitq)) {
			u->waitq = op->qnext;
			op->queued = 0;
			op_abort(u, op, -ECANCELED);
		}
	}
}

void bl_uring_destroy(struct bl_uring *u)
{
	if (!u)
		return;
	BL_ASSERT(!u->reaping && !u->destroying);	/* not from a callback */
	u->destroying = true;
	if (u->ring)
		drain_uring(u);
	else
		drain_blocking(u);
	while (u->bufrings) {
		struct bl_uring_bufring *br = u->bufrings;

		u->bufrings = br->next;
		if (br->ring)
			io_uring_unregister_buf_ring(u->ring, br->bgid);
		br->u = NULL;
	}
	if (u->regpool) {
		struct bl_uring_regpool *p = u->regpool;

		if (atomic_load(&p->registered))
			io_uring_unregister_buffers(u->ring);
		atomic_store_explicit(&p->registered, false,
				      memory_order_release);
		p->u = NULL;
		u->regpool = NULL;
	}
	if (u->ring && !u->attached)
		io_uring_queue_exit(u->ring);
	bl__free(u->al, u, sizeof(*u), _Alignof(struct bl_uring));
}

int bl_uring_backend(const struct bl_uring *u)
{
	return u->ring ? BL_URING_IO_URING : BL_URING_BLOCKING;
}

const char *bl_uring_backend_reason(const struct bl_uring *u)
{
	return u->ring ? "" : u->reason;
}

struct io_uring *bl_uring_ring(struct bl_uring *u)
{
	return u->ring;
}

/* ---- submissions ------------------------------------------------------- */

/*
 * Starts @op: the blocking back end runs it now; io_uring gets its first
 * request (submitted by the next bl_uring_submit / bl_uring_run, or by the
 * application's loop on a shared ring).  On failure the op is released,
 * so the caller's list keeps exactly the references it had.
 */
static int op_start(struct bl_uring *u, struct uop *op)
{
	struct io_uring_sqe *sqe;

	if (u->destroying) {
		op_release(op);
		return -ECANCELED;
	}
	if (!op->total && op->kind != OP_RECV && op->kind != OP_POOLED) {
		op_link(u, op);
		op->res = 0;
		doneq_push(u, op);
		return 0;
	}
	if (!u->ring) {
		op_link(u, op);
		if (op->kind == OP_POOLED)
			blk_pooled(u, op);
		else
			blk_perform(u, op);
		return 0;
	}
	sqe = get_sqe(u);
	if (!sqe) {
		op_release(op);
		return -EBUSY;
	}
	op_link(u, op);
	op_prep(u, op, sqe);
	return 0;
}

/* Blocking back end: descriptors other than files and block devices are
 * polled before each call so that a pipe does not block the caller. */
static void set_pollfirst(struct bl_uring *u, struct uop *op)
{
	struct stat st;

	if (!u->ring && !fstat(op->fd, &st))
		op->pollfirst = !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
}

int bl_uring_write(struct bl_uring *u, int fd, off_t off,
		   const struct bl_list *l, bl_uring_cb cb, void *arg)
{
	struct uop *op = op_new(u, OP_WRITE, bl_list_num_buffers(l));

	if (!op)
		return -ENOMEM;
	op_share_list(op, l);
	op->fd = fd;
	op->off = off < 0 ? -1 : off;
	op->cb = cb;
	op->arg = arg;
	if (u->ring && op->niov == 1)
		op->bufidx = fixed_index(u, op->raws[0]);
	set_pollfirst(u, op);
	return op_start(u, op);
}

int bl_uring_read(struct bl_uring *u, int fd, off_t off, size_t len,
		  size_t align, bl_uring_cb cb, void *arg)
{
	struct bl_uring_regpool *rp = u->regpool;
	unsigned n = 0;
	struct uop *op;

	if (!align)
		align = BL_CACHELINE;
	if (!bl__is_pow2(align))
		return -EINVAL;
	if (len > (size_t)SSIZE_MAX)
		len = (size_t)SSIZE_MAX;
	if (len)
		n = (unsigned)((len - 1) / READ_RAW_MAX + 1);
	op = op_new(u, OP_READ, n);
	if (!op)
		return -ENOMEM;
	/* a read that fits a registered buffer reads into one: READ_FIXED */
	if (n == 1 && u->ring && rp && len <= rp->buf_size && align <= 4096 &&
	    atomic_load_explicit(&rp->registered, memory_order_relaxed)) {
		op->raws[0] = bl_uring_regpool_get(rp);
		if (op->raws[0]) {
			op->bufidx = bl_raw_buf_index(op->raws[0]);
			op->iov[0].iov_base = op->raws[0]->data;
			op->iov[0].iov_len = len;
			op->nraws = op->niov = 1;
		}
	}
	for (unsigned i = op->nraws; i < n; i++) {
		size_t sz = len - (size_t)i * READ_RAW_MAX;
		struct bl_raw *r;

		if (sz > READ_RAW_MAX)
			sz = READ_RAW_MAX;
		r = bl_raw_create_aligned(sz, align);
		if (!r) {
			op_release(op);
			return -ENOMEM;
		}
		op->raws[i] = r;
		op->iov[i].iov_base = r->data;
		op->iov[i].iov_len = sz;
		op->nraws = op->niov = i + 1;
	}
	op->total = len;
	op->fd = fd;
	op->off = off < 0 ? -1 : off;
	op->cb = cb;
	op->arg = arg;
	set_pollfirst(u, op);
	return op_start(u, op);
}

int bl_uring_send(struct bl_uring *u, int fd, const struct bl_list *l,
		  int flags, bl_uring_cb cb, void *arg)
{
	struct uop *op = op_new(u, OP_SEND, bl_list_num_buffers(l));

	if (!op)
		return -ENOMEM;
	op_share_list(op, l);
	op->fd = fd;
	/* a peer that went away must be an error, not a dead process */
	op->msg_flags = flags | MSG_NOSIGNAL;
	op->cb = cb;
	op->arg = arg;
	op->zc = want_zc(u, fd, op->total);
	return op_start(u, op);
}

int bl_uring_recv(struct bl_uring *u, int fd, size_t len, bl_uring_cb cb,
		  void *arg)
{
	struct uop *op;
	struct bl_raw *r;

	if (len > (size_t)INT_MAX)
		len = (size_t)INT_MAX;
	op = op_new(u, OP_RECV, 1);
	if (!op)
		return -ENOMEM;
	r = bl_raw_create(len);
	if (!r) {
		op_release(op);
		return -ENOMEM;
	}
	op->raws[0] = r;
	op->iov[0].iov_base = r->data;
	op->iov[0].iov_len = len;
	op->nraws = op->niov = 1;
	op->total = len;
	op->fd = fd;
	op->cb = cb;
	op->arg = arg;
	return op_start(u, op);
}

int bl_uring_recv_pooled(struct bl_uring *u, int fd,
			 struct bl_uring_bufring *br, bool multishot,
			 bl_uring_recv_cb cb, void *arg)
{
	struct uop *op;
	int ret;

	if (!br || br->u != u)
		return -EINVAL;
	op = op_new(u, OP_POOLED, 0);
	if (!op)
		return -ENOMEM;
	op->fd = fd;
	op->br = br;
	br->op_pins++;
	op->want_more = multishot;
	op->multishot = multishot && u->has_recv_multishot;
	op->rcb = cb;
	op->arg = arg;
	if (u->ring)
		br_drain(br);
	ret = op_start(u, op);
	return ret;
}

int bl_uring_submit(struct bl_uring *u)
{
	int ret;

	if (!u->ring)
		return 0;
	flush_backlog(u);
	drain_bufrings(u);
	ret = io_uring_submit(u->ring);
	u->need_submit = false;
	return ret;
}

int bl_uring_run(struct bl_uring *u, unsigned min_complete, int timeout_ms)
{
	/* from a callback: the outer call owns the CQ ring's head */
	if (u->reaping || u->destroying)
		return -EDEADLK;
	if (u->ring)
		return run_uring(u, min_complete, timeout_ms);
	return run_blocking(u, min_complete, timeout_ms);
}

int bl_uring_handle_cqe(struct bl_uring *u, struct io_uring_cqe *cqe)
{
	bool nested = u->reaping;

	if (!cqe_ours(cqe))
		return 0;
	drain_bufrings(u);
	/* the application iterates the CQ ring: no bl_uring_run inside */
	u->reaping = true;
	handle(u, cqe);
	u->reaping = nested;
	flush_backlog(u);
	/*
	 * The application's loop may only wait, not submit: a resumed short
	 * transfer must not sit in the SQ until it submits something else.
	 */
	if (u->need_submit) {
		u->need_submit = false;
		io_uring_submit(u->ring);
	}
	return 1;
}

unsigned bl_uring_inflight(const struct bl_uring *u)
{
	return u->inflight;
}

/*
 * Stops a multishot receive so that a plain read can take the stream
 * over: nothing is re-armed any more, and the request still in the kernel
 * is cancelled.  The kernel takes bytes off the socket only together with
 * the CQE that reports them, so every chunk taken is delivered before the
 * final callback (-ECANCELED, or a last chunk); the rest stays in the
 * socket.  On the blocking back end a receive waiting for data ends at
 * the next bl_uring_run().
 */
int bl__uring_recv_stop(struct bl_uring *u, int fd)
{
	int found = -ENOENT;

	for (struct uop *op = u->live; op; op = op->lnext) {
		if (op->kind != OP_POOLED || op->fd != fd || op->called ||
		    !op->want_more)
			continue;
		op->want_more = 0;
		op->multishot = 0;
		found = 0;
		if (!u->ring) {
			/* waiting for data: end it now; a chunk on the done
			 * queue becomes the last; in its callback, deliver()
			 * ends it */
			struct uop **pp;

			for (pp = &u->waitq; *pp; pp = &(*pp)->qnext)
				if (*pp == op) {
					*pp = op->qnext;
					op->res = -ECANCELED;
					op->more = 0;
					doneq_push(u, op);
					break;
				}
			op->more = 0;
			continue;
		}
		if (op->sqe) {
			struct io_uring_sqe *sqe = get_sqe(u);

			if (!sqe)
				continue;	/* ends after its next chunk */
			io_uring_prep_cancel64(sqe,
					       (uint64_t)(uintptr_t)op | TAG_OP,
					       0);
			io_uring_sqe_set_data64(sqe, TAG_INTERNAL);
			u->cnt.cancels++;
			u->need_submit = true;
		}
	}
	return found;
}

/* ---- buffer rings -------------------------------------------------------- */

struct bl_uring_bufring *bl_uring_bufring_create(struct bl_uring *u,
						 unsigned nbufs,
						 size_t buf_size,
						 unsigned short bgid)
{
	const struct bl__allocator *al = bl__allocator_current();
	size_t page = (size_t)sysconf(_SC_PAGESIZE), asize;
	struct bl_uring_bufring *br;

	if (!u || u->destroying || !bl__is_pow2(nbufs) || nbufs > 32768 ||
	    !buf_size || buf_size > UINT32_MAX)
		return NULL;
	asize = sizeof(*br) + nbufs * sizeof(int) +
		(u->ring ? 0 : nbufs * sizeof(unsigned));
	br = bl__alloc(al, asize, _Alignof(struct bl_uring_bufring));
	if (!br)
		return NULL;
	memset(br, 0, sizeof(*br));
	br->al = al;
	br->asize = asize;
	br->nbufs = nbufs;
	br->mask = nbufs - 1;
	br->buf_size = buf_size;
	br->bgid = bgid;
	br->owner = self_token();
	atomic_init(&br->refs, 1);
	atomic_init(&br->ret_head, -1);
	br->map_bytes = bl__align_up(nbufs * buf_size, page);
	br->base = mmap(NULL, br->map_bytes, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (br->base == MAP_FAILED)
		goto fail_struct;
	if (u->ring) {
		struct io_uring_buf_reg reg;

		br->ring_bytes = bl__align_up(nbufs * sizeof(struct io_uring_buf),
					      page);
		br->ring = mmap(NULL, br->ring_bytes, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (br->ring == MAP_FAILED)
			goto fail_base;
		memset(&reg, 0, sizeof(reg));
		reg.ring_addr = (uint64_t)(uintptr_t)br->ring;
		reg.ring_entries = nbufs;
		reg.bgid = bgid;
		if (io_uring_register_buf_ring(u->ring, &reg, 0))
			goto fail_ring;
		io_uring_buf_ring_init(br->ring);
		for (unsigned i = 0; i < nbufs; i++)
			io_uring_buf_ring_add(br->ring,
					      br->base + (size_t)i * buf_size,
					      (unsigned)buf_size,
					      (unsigned short)i, (int)br->mask,
					      (int)i);
		io_uring_buf_ring_advance(br->ring, (int)nbufs);
	} else {
		br->free_ids = (unsigned *)(br->ret_next + nbufs);
		for (unsigned i = 0; i < nbufs; i++)
			br->free_ids[i] = nbufs - 1 - i;
		br->nfree = nbufs;
	}
	br->u = u;
	br->next = u->bufrings;
	u->bufrings = br;
	return br;
fail_ring:
	munmap(br->ring, br->ring_bytes);
fail_base:
	munmap(br->base, br->map_bytes);
fail_struct:
	bl__free(al, br, asize, _Alignof(struct bl_uring_bufring));
	return NULL;
}

unsigned bl_uring_bufring_available(const struct bl_uring_bufring *br)
{
	unsigned out = atomic_load_explicit(
			       &((struct bl_uring_bufring *)br)->refs,
			       memory_order_relaxed) - 1;

	/*
	 * Buffers released on other threads count as available: the ring's
	 * thread puts them back before it arms or reaps anything.
	 */
	return out < br->nbufs ? br->nbufs - out : 0;
}

void bl_uring_bufring_destroy(struct bl_uring_bufring *br)
{
	struct bl_uring *u;

	if (!br)
		return;
	u = br->u;
	if (u) {
		struct bl_uring_bufring **pp = &u->bufrings;

		while (*pp != br)
			pp = &(*pp)->next;
		*pp = br->next;
		if (br->ring)
			io_uring_unregister_buf_ring(u->ring, br->bgid);
		br->u = NULL;
	}
	br->handle_gone = true;
	if (!br->op_pins)
		br_unref(br);
}

/* A position in a list, for walking runs of segments. */
struct seg_pos {
	const struct bl__chunk_hdr *c;
	uint32_t i;		/* index within c's used slots */
};

static const struct bl_ptr *seg_at(const struct seg_pos *p)
{
	return bl__chunk(p->c)->seg + p->c->start + p->i;
}

static void seg_next(struct seg_pos *p)
{
	if (++p->i < p->c->count)
		return;
	p->i = 0;
	for (p->c = p->c->next; p->c && !p->c->count; p->c = p->c->next)
		;
}

static void seg_first(const struct bl_list *l, struct seg_pos *p)
{
	p->i = 0;
	for (p->c = &l->_inl; p->c && !p->c->count; p->c = p->c->next)
		;
}

ssize_t bl_list_detach_pooled(struct bl_list *l)
{
	struct seg_pos p;
	struct bl_list out;
	size_t copied = 0;
	bool any = false;

	for (seg_first(l, &p); p.c; seg_next(&p))
		if (raw_is_pooled(seg_at(&p)->raw)) {
			any = true;
			break;
		}
	if (!any)
		return 0;
	bl_list_init(&out);
	bl_list_set_pool(&out, l->_pool);
	for (seg_first(l, &p); p.c;) {
		const struct bl_ptr *s = seg_at(&p);
		struct seg_pos run = p;
		size_t total = 0;
		struct bl_ptr np;
		char *dst;

		if (!raw_is_pooled(s->raw)) {
			if (bl_list_append_ptr(&out, s))
				goto fail;
			seg_next(&p);
			continue;
		}
		while (p.c && raw_is_pooled(seg_at(&p)->raw)) {
			total += seg_at(&p)->len;
			seg_next(&p);
		}
		/* neighbouring ring segments share one new raw */
		np.raw = bl_raw_create(total);
		if (!np.raw)
			goto fail;
		np.off = 0;
		np.len = total;
		dst = np.raw->data;
		for (; run.c != p.c || run.i != p.i; seg_next(&run)) {
			const struct bl_ptr *r = seg_at(&run);

			memcpy(dst, r->raw->data + r->off, r->len);
			dst += r->len;
		}
		bl__count_copy(total);
		copied += total;
		if (bl_list_append_ptr_move(&out, &np)) {
			bl_raw_put(np.raw);
			goto fail;
		}
	}
	bl_list_clear(l);
	bl_list_claim_append(l, &out);	/* into an empty list: cannot fail */
	bl_list_clear(&out);
	return (ssize_t)copied;
fail:
	bl_list_clear(&out);
	return -ENOMEM;
}

/* ---- registered buffers ------------------------------------------------ */

struct bl_uring_regpool *bl_uring_regpool_create(struct bl_uring *u,
						 unsigned nbufs,
						 size_t buf_size)
{
	const struct bl__allocator *al = bl__allocator_current();
	size_t page = (size_t)sysconf(_SC_PAGESIZE), asize;
	struct bl_uring_regpool *p;

	/* the kernel's limits: 16384 buffers of at most 1 GiB (FACTS) */
	if (!u || u->destroying || u->regpool || !nbufs || nbufs > 16384 ||
	    !buf_size || buf_size > ((size_t)1 << 30))
		return NULL;
	asize = sizeof(*p) + nbufs * sizeof(unsigned);
	p = bl__alloc(al, asize, _Alignof(struct bl_uring_regpool));
	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p));
	p->al = al;
	p->asize = asize;
	p->nbufs = nbufs;
	p->buf_size = buf_size;
	p->stride = bl__align_up(buf_size, page);
	p->map_bytes = p->stride * nbufs;
	atomic_init(&p->refs, 1);
	atomic_init(&p->registered, false);
	/* anonymous memory: the kernel refuses file-backed pages (EFAULT) */
	p->base = mmap(NULL, p->map_bytes, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p->base == MAP_FAILED)
		goto fail;
	if (u->ring) {
		struct iovec *iov = malloc(nbufs * sizeof(*iov));
		int ret;

		if (!iov)
			goto fail_map;
		for (unsigned i = 0; i < nbufs; i++) {
			iov[i].iov_base = p->base + (size_t)i * p->stride;
			iov[i].iov_len = buf_size;
		}
		ret = io_uring_register_buffers(u->ring, iov, nbufs);
		free(iov);
		if (ret)
			goto fail_map;
		atomic_store(&p->registered, true);
	}
	pthread_mutex_init(&p->lock, NULL);
	for (unsigned i = 0; i < nbufs; i++)
		p->free_ids[i] = nbufs - 1 - i;
	p->nfree = nbufs;
	p->u = u;
	u->regpool = p;
	return p;
fail_map:
	munmap(p->base, p->map_bytes);
fail:
	bl__free(al, p, asize, _Alignof(struct bl_uring_regpool));
	return NULL;
}

struct bl_raw *bl_uring_regpool_get(struct bl_uring_regpool *p)
{
	struct bl_raw *r;
	unsigned id;

	pthread_mutex_lock(&p->lock);
	if (!p->nfree) {
		pthread_mutex_unlock(&p->lock);
		return NULL;
	}
	id = p->free_ids[--p->nfree];
	pthread_mutex_unlock(&p->lock);
	r = bl_raw_claim(p->base + (size_t)id * p->stride, p->buf_size,
			 rp_release, p);
	if (!r) {
		pthread_mutex_lock(&p->lock);
		p->free_ids[p->nfree++] = id;
		pthread_mutex_unlock(&p->lock);
		return NULL;
	}
	atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
	return r;
}

void bl_uring_regpool_destroy(struct bl_uring_regpool *p)
{
	if (!p)
		return;
	if (p->u) {
		if (atomic_load(&p->registered))
			io_uring_unregister_buffers(p->u->ring);
		atomic_store_explicit(&p->registered, false,
				      memory_order_release);
		p->u->regpool = NULL;
		p->u = NULL;
	}
	rp_unref(p);
}

/* ---- for tests and benchmarks (uring_int.h) --------------------------- */

void bl__uring_counters(const struct bl_uring *u,
			struct bl__uring_counters *out)
{
	*out = u->cnt;
}

unsigned bl__uring_retiring(const struct bl_uring *u)
{
	return u->retiring;
}

void bl__uring_features(const struct bl_uring *u,
			struct bl__uring_features *out)
{
	out->send_zc = u->has_send_zc;
	out->sendmsg_zc = u->has_sendmsg_zc;
	out->recv_multishot = u->has_recv_multishot;
}

size_t bl__uring_zc_threshold(const struct bl_uring *u)
{
	return u->zc_threshold;
}

void bl__uring_zc_adapt(struct bl_uring *u, bool on)
{
	u->zc_adapt = on;
	for (unsigned i = 0; i < 64; i++)
		u->zc_hint[i].fd = -1;
}

void bl__uring_set_cqe_hook(bl__uring_cqe_hook_fn fn)
{
	atomic_store_explicit(&cqe_hook, fn, memory_order_relaxed);
}
