/* SPDX-License-Identifier: MIT */
/*
 * uring_priv.h - what the files of the uring layer share: the ring, the
 * operation, the buffer ring and the registered pool, and the functions
 * one file calls in another.  Included only by uring.c, uring_op.c,
 * uring_kernel.c, uring_request.c, uring_blocking.c, uring_wait.c,
 * bufring.c and regbuf.c; never installed (tests see uring_int.h, the messenger uring_msgr.h).
 * The short names (struct uop, OP_*, STEP_*, TAG_*) have no linkage and
 * are the layer's own vocabulary.
 * Helpers that the submission or completion path of two files calls are
 * static inline here, so that the split into files added no call.
 *
 * Calls go one way, down this order, never back up:
 *
 *   uring_wait.c                     the waited calls, over the API
 *   uring.c                          the API: creation, submissions, run
 *   uring_kernel.c, uring_blocking.c the back ends, side by side
 *   uring_request.c                  the io_uring back end's requests
 *   uring_op.c                       the op engine both back ends run
 *   bufring.c, regbuf.c              provided buffers, registered buffers
 *
 * Where the engine must start work on the back end (an op that waited its
 * turn on its descriptor, a pooled receive to re-arm after its callback),
 * it goes through u->be, the back end's struct bl__uring_backend, chosen
 * when the ring is made.  test/check_calls.sh holds the files to this.
 */
#ifndef BUFFERLIST_URING_PRIV_H
#define BUFFERLIST_URING_PRIV_H

#include "list_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <poll.h>
#include <pthread.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
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

/*
 * Reads allocate raws of at most 1 GiB, so a read of up to 2 GiB (a
 * single transfer's cap) becomes at most two segments, which fit the
 * list's inline slots: building the result never allocates.
 */
#define READ_RAW_MAX ((size_t)1 << 30)

/* Sends by copy after a zero-copy send the kernel had to copy. */
#define ZC_SKIP 1024u

/* Slots of the per-ring table of sockets that go by copy (zc_hint). */
#define ZC_HINTS 64u

/* Buckets (by fd) of the ops that keep a descriptor's order (seq). */
#define SEQ_BUCKETS 256u

/*
 * user_data: op | TAG_OP for an op's data request, op | TAG_POLL for the
 * readiness poll linked in front of it after -EAGAIN, TAG_INTERNAL alone
 * for a cancel request.  Ops are 8-byte aligned, so the tags never clash.
 */
#define TAG_OP 1ull
#define TAG_POLL 3ull
#define TAG_INTERNAL 1ull
#define TAG_WAKE 5ull		/* alone: the wake-up timer (wait_until) */
#define TAG_SYNC 5ull		/* op | TAG_SYNC: the sync linked behind a write */
#define TAG_LTO 7ull		/* op | TAG_LTO: a request's link timeout */
#define TAG_MASK 7ull

enum op_kind {
	OP_WRITE,
	OP_READ,
	OP_SEND,
	OP_RECV,
	OP_POOLED,
	OP_FSYNC,	/* fsync / fdatasync (fsync_flags) */
	OP_SYNC_RANGE,	/* sync_file_range of range_len bytes at off */
	OP_TIMER,	/* a callback after a time (ts, deadline_us) */
};

/* uop.seq: where an ordered op (bl__uring_op_ordered) stands */
enum seq_state {
	SEQ_NONE,	/* not ordered, or its transfer is over */
	SEQ_HEAD,	/* running: the first of its descriptor's queue */
	SEQ_QUEUED,	/* waits for the ops before it on its descriptor */
};

enum step {
	STEP_DONE,	/* op->res is final */
	STEP_NEXT,	/* issue the next request */
	STEP_WAIT,	/* -EAGAIN: wait until the fd is ready, then retry */
};

struct uop {
	struct uop *lnext, *lprev;	/* u->live */
	struct uop *qnext;		/* doneq, backlog or waitq */
	struct uop *snext;		/* seq: the next op on the same fd */
	struct uop *sbnext;		/* seq head: the next head in its bucket */
	struct uop *stail;		/* seq head: the last op on its fd */
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
	uint8_t nosig;		/* blocking write at the position: bl__nosig */
	uint8_t rwf_nosig;	/* io_uring: the request carries RWF_NOSIGNAL */
	uint8_t seq;		/* enum seq_state */
	uint8_t stranded;	/* destroy: seen waiting for a notification */
	uint8_t sync;		/* write: BL_URING_SYNC_* linked behind it */
	uint8_t xsqe;		/* io_uring: linked sync / link timeouts
				 * whose CQEs are still due */
	uint8_t sync_sqe;	/* io_uring: of which the sync */
	uint8_t sync_wait;	/* the write ended whole: its sync decides */
	uint8_t cancel_req;	/* bl_uring_cancel() asked: end, not resume */
	uint8_t poll_wait;	/* io_uring, timed op: a poll (with its link
				 * timeout) waits; its CQE issues the op */
	int fd;
	int hfd;		/* blocking: a dup of fd held while waiting */
	uint8_t held;		/* hfd is open (closed on release) */
	int rw_flags;		/* write: RWF_* of every request */
	unsigned fsync_flags;	/* OP_FSYNC: IORING_FSYNC_*; OP_SYNC_RANGE:
				 * SYNC_FILE_RANGE_* */
	unsigned range_len;	/* OP_SYNC_RANGE: bytes (0: to the end) */
	uint64_t id;		/* bl_uring_opts.id */
	uint64_t deadline_us;	/* monotonic: ends with -ETIME (timer: fires)
				 * then; 0: never */
	struct __kernel_timespec ts;	/* the same for the kernel */
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
	const struct bl__uring_backend *be;	/* ring's or blocking's */
	bool attached;
	bool destroying;
	bool lost;		/* destroy gave up on it: kept for good */
	unsigned spin_us;	/* 0: never (uring_kernel.c: spin_wait) */
	unsigned spin_skip;	/* waits left that do not spin */
	unsigned spin_backoff;	/* the next skip after a missed spin */
	uint64_t spin_sqes;	/* cnt.sqes when spin_due last looked */
	unsigned spin_due;	/* answers due: waits may spin until they
				 * come (uring_kernel.c: spin_wait) */
	bool reaping;		/* callbacks may run: no nested reap */
	bool cq_reaping;	/* handling CQEs of the CQ ring (not the done
				 * queue): reap_at is valid */
	unsigned reap_at;	/* then: the CQ index after the one handled */
	struct uop *delivering;	/* deliver: the ops after the one called */
	size_t cb_done;		/* bytes the op being called back moved */
	bool need_submit;	/* attached: resubmissions were prepared */
	bool enter_always;	/* task work deferred, no IORING_SQ_TASKRUN:
				 * every run enters the kernel for it */
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
	} zc_hint[ZC_HINTS];
	const struct bl__allocator *al;
	unsigned inflight;	/* final callback not run yet */
	unsigned retiring;	/* called back, kernel not done yet */
	uint64_t ncomplete;	/* callbacks run */
	uint64_t next_id;	/* the last bl_uring_opts.id given */
	struct uop *live;
	struct uop *doneq, *doneq_tail;
	struct uop *backlog, *backlog_tail;
	struct uop *waitq;
	/*
	 * Writes at the file position and sends keep their descriptor's
	 * order: per bucket (fd % SEQ_BUCKETS) the chain of the ops now
	 * running, one per descriptor, each heading the queue of the ops
	 * submitted after it on that descriptor (uring_op.c).
	 */
	struct uop *seq[SEQ_BUCKETS];
	struct bl_uring_bufring *bufrings;
	struct bl_uring_regpool *regpool;
	struct bl__uring_counters cnt;
	int64_t wake_at;		/* ms: a wake-up timer is armed until */
	bool wake_broken;		/* the kernel refused it: no more */
	struct __kernel_timespec wake_ts;
	char reason[192];
	struct bl_uring *lost_next;	/* rings kept for good (uring_kernel.c) */
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

/*
 * What the engine (uring_op.c) asks of a back end; one const instance per
 * back end, each defined in its file.  run and drain serve uring.c.
 */
struct bl__uring_backend {
	/* @op (a write or send) now heads its descriptor's queue: start it
	 * (never fails: it waits for an SQE or for readiness if it must) */
	void (*start)(struct bl_uring *u, struct uop *op);
	/* a pooled receive's callback asked for more: re-arm it */
	void (*pooled_again)(struct bl_uring *u, struct uop *op);
	/* bl_uring_run() on this back end */
	int (*run)(struct bl_uring *u, unsigned min, int timeout_ms);
	/* bl_uring_destroy(): ends every op and waits until none is left */
	void (*drain)(struct bl_uring *u);
	/* bl_uring_cancel() of @op, in flight and not waiting its turn:
	 * 0, -ENOENT (its callback is queued already) or -EBUSY */
	int (*cancel)(struct bl_uring *u, struct uop *op);
};

extern const struct bl__uring_backend bl__uring_backend_blocking;

/* ---- uring_kernel.c: the io_uring back end's ring ---------------------- */

/* @u runs on @ring from now on: the back end, and what the kernel knows */
void bl__uring_kernel_setup(struct bl_uring *u, struct io_uring *ring);

/* ---- uring_request.c: issuing and completing on io_uring --------------- */

struct io_uring_sqe *bl__uring_get_sqe(struct bl_uring *u);
/* the first of @n free SQEs (submitting once to make room), or NULL */
struct io_uring_sqe *bl__uring_get_sqes(struct bl_uring *u, unsigned n);
/* SQEs the next request of @op takes: its own, a sync, a link timeout */
unsigned bl__uring_op_nsqe(const struct uop *op);
void bl__uring_op_prep(struct bl_uring *u, struct uop *op,
		       struct io_uring_sqe *sqe);
void bl__uring_flush_backlog(struct bl_uring *u);
void bl__uring_handle(struct bl_uring *u, const struct io_uring_cqe *kc);
/* the next request of an op in flight: never fails, may queue the op */
void bl__uring_issue(struct bl_uring *u, struct uop *op);
/* the first op waiting for an SQE, taken off the queue, or NULL */
struct uop *bl__uring_backlog_pop(struct bl_uring *u);
/* asks the kernel to cancel @op's request, its linked poll and sync */
void bl__uring_op_cancel(struct bl_uring *u, struct uop *op);

/* ---- uring_blocking.c: the blocking back end ---------------------------- */

/* as far as it goes without blocking; then on the done or wait queue */
void bl__uring_blk_perform(struct bl_uring *u, struct uop *op);
void bl__uring_blk_pooled(struct bl_uring *u, struct uop *op);

/* ---- uring_op.c: the operation engine, completion logic of both ends ---- */

/* The completion hook of the tests (uring_int.h); NULL almost always. */
extern bl__uring_cqe_hook_fn _Atomic bl__uring_cqe_hook;

struct uop *bl__uring_op_new(struct bl_uring *u, int kind, unsigned n);
void bl__uring_op_release(struct uop *op);
void bl__uring_op_maybe_free(struct bl_uring *u, struct uop *op);
void bl__uring_op_unlink_retired(struct bl_uring *u, struct uop *op);
void bl__uring_op_share_list(struct uop *op, const struct bl_list *l);
enum step bl__uring_op_progress(struct bl_uring *u, struct uop *op,
				ssize_t res);
void bl__uring_op_finish(struct bl_uring *u, struct uop *op);
void bl__uring_op_abort(struct bl_uring *u, struct uop *op, ssize_t res);
void bl__uring_deliver(struct bl_uring *u);
/* descriptor order: true if @op runs now, false if it waits its turn */
bool bl__uring_seq_enter(struct bl_uring *u, struct uop *op);
/* @op's transfer is over: the next op on its fd, now the head, or NULL */
struct uop *bl__uring_seq_pop(struct bl_uring *u, struct uop *op);
/* a queued (SEQ_QUEUED) @op leaves its descriptor's queue: cancelled */
void bl__uring_seq_remove(struct bl_uring *u, struct uop *op);
/* the same, and the ops after it with nothing to do (or, during destroy,
 * none may start) end on the done queue: the next to start, or NULL */
struct uop *bl__uring_seq_next(struct bl_uring *u, struct uop *op);

/* ---- bufring.c: provided-buffer rings ----------------------------------- */

void bl__uring_br_unref(struct bl_uring_bufring *br);
void bl__uring_br_put_back(struct bl_uring_bufring *br, unsigned id);
void bl__uring_br_drain(struct bl_uring_bufring *br);
int bl__uring_br_chunk(struct bl_uring_bufring *br, unsigned id, size_t n,
		       struct bl_list *out);
/* bl_uring_destroy(): every ring of @u is destroyed (buffers lent out
 * stay valid until released) */
void bl__uring_bufrings_destroy(struct bl_uring *u);

/* ---- regbuf.c: the registered-buffer pool ------------------------------- */

/* bl_uring_destroy(): @u's pool, if any, is destroyed (raws out stay
 * valid until released) */
void bl__uring_regpool_destroy(struct bl_uring *u);

/* ---- inline helpers of more than one file ------------------------------- */

static inline void bl__uring_doneq_push(struct bl_uring *u, struct uop *op)
{
	op->qnext = NULL;
	op->queued = 1;
	if (u->doneq_tail)
		u->doneq_tail->qnext = op;
	else
		u->doneq = op;
	u->doneq_tail = op;
}

/*
 * Ops that must not overlap another such op on their descriptor: their
 * bytes go where the previous one's ended (a write at the file position,
 * a send on a stream), so a second one running at the same time would
 * interleave with the first's pieces.
 */
static inline bool bl__uring_op_ordered(const struct uop *op)
{
	return op->kind == OP_SEND || (op->kind == OP_WRITE && op->off < 0);
}

/* Ops that move bytes (total counts them); the others are one request. */
static inline bool bl__uring_op_moves_bytes(const struct uop *op)
{
	return op->kind <= OP_POOLED;
}

static inline short bl__uring_op_events(const struct uop *op)
{
	return op->kind == OP_WRITE || op->kind == OP_SEND ? POLLOUT : POLLIN;
}

/*
 * Answers due (uring_kernel.c: spin_wait): two per request, its own
 * completion and then the peer's, up to SPIN_DUE_MAX, which only bounds
 * how long a burst of requests that go unanswered keeps waits spinning.
 */
#define SPIN_ANSWERS 2
#define SPIN_DUE_MAX 64

static inline void bl__uring_spin_add(struct bl_uring *u, uint64_t n)
{
	u->spin_due = n >= SPIN_DUE_MAX - u->spin_due ?
		      SPIN_DUE_MAX : u->spin_due + (unsigned)n;
}

/* Requests issued since the last look make their answers due. */
static inline void bl__uring_spin_sync(struct bl_uring *u)
{
	if (u->cnt.sqes != u->spin_sqes) {
		bl__uring_spin_add(u, (u->cnt.sqes - u->spin_sqes) *
				      SPIN_ANSWERS);
		u->spin_sqes = u->cnt.sqes;
	}
}

/*
 * A callback is about to run: one completion more, one answer fewer due
 * (a cancellation's or an error's too: a callback is all the ring can
 * tell).  The requests started since the last look, inside the previous
 * callback or before this op's own start, are added first: what is due
 * only adds up, so one look per callback keeps the count exact, while
 * taking one from a count that has not added them yet would be lost at 0.
 */
static inline void bl__uring_count_call(struct bl_uring *u)
{
	u->ncomplete++;
	bl__uring_spin_sync(u);
	if (u->spin_due)
		u->spin_due--;
}

static inline void bl__uring_mark_called(struct bl_uring *u, struct uop *op)
{
	op->called = 1;
	u->inflight--;
	u->retiring++;
}

/* A pooled receive's callback; @more false: it is the last. */
static inline void bl__uring_pooled_call(struct bl_uring *u, struct uop *op,
					 ssize_t res, bool more)
{
	if (!more)
		bl__uring_mark_called(u, op);
	bl__uring_count_call(u);
	if (op->rcb)		/* NULL: fire and forget */
		op->rcb(op->arg, res, &op->data, more);
	bl_list_clear(&op->data);
}

static inline int bl__uring_apply_hook(struct uop *op,
				       struct io_uring_cqe *c)
{
	bl__uring_cqe_hook_fn h =
		atomic_load_explicit(&bl__uring_cqe_hook, memory_order_relaxed);

	return h ? h(c, op->arg) : c->res;
}

/*
 * The kernel holds task work for this thread (IORING_SQ_TASKRUN, on rings
 * with IORING_SETUP_TASKRUN_FLAG): completions are ready but not posted
 * until the thread enters the kernel.
 */
static inline bool bl__uring_taskrun_due(const struct bl_uring *u)
{
	return IO_URING_READ_ONCE(*u->ring->sq.kflags) & IORING_SQ_TASKRUN;
}

static inline bool bl__uring_cqe_ours(const struct io_uring_cqe *c)
{
	return c->user_data & TAG_OP;
}

/* The zero-copy hint slot of @fd (a small table indexed by descriptor). */
static inline unsigned bl__uring_zc_slot(int fd)
{
	return (unsigned)fd % ZC_HINTS;
}

/* @fd's zero-copy send was copied or refused: copy for ZC_SKIP sends. */
static inline void bl__uring_zc_avoid(struct bl_uring *u, int fd)
{
	unsigned i = bl__uring_zc_slot(fd);

	if (!u->zc_adapt)
		return;
	u->zc_hint[i].fd = fd;
	u->zc_hint[i].skip = ZC_SKIP;
}

static inline void bl__uring_br_op_unpin(struct bl_uring_bufring *br)
{
	if (!--br->op_pins && br->handle_gone)
		bl__uring_br_unref(br);
}

static inline void bl__uring_drain_bufrings(struct bl_uring *u)
{
	for (struct bl_uring_bufring *br = u->bufrings; br; br = br->next)
		bl__uring_br_drain(br);
}

#endif /* BUFFERLIST_URING_PRIV_H */
