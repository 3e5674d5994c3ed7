/* SPDX-License-Identifier: MIT */
/*
 * uring.c - lists through io_uring, and the same API on a blocking back
 * end: creating and destroying a struct bl_uring, the submissions, driving
 * it, and its counters.  The rest of the layer: uring_op.c (the operation
 * engine shared by both back ends), uring_kernel.c (the io_uring back
 * end's ring: setup, waiting, teardown) and uring_request.c (issuing and
 * completing its requests), uring_blocking.c (the blocking back end),
 * bufring.c (provided-buffer rings), regbuf.c (registered buffers),
 * uring_wait.c (the waited calls, above this file); uring_priv.h is what
 * they share.
 */
#include "uring_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>	/* SYNC_FILE_RANGE_* */
#include <sys/socket.h>
#include <sys/stat.h>

#define URING_ENTRIES 256u

/*
 * Default zero-copy threshold: 16 KiB.
 *
 * On loopback the kernel copies the pinned pages anyway, so zero copy only
 * adds cost there (README's zero-copy threshold table, from
 * perf/bench_uring net).  The library therefore asks the kernel
 * (IORING_SEND_ZC_REPORT_USAGE) whether it copied and stops using zero copy
 * on such a socket (ZC_SKIP); with that, "zc" runs at the speed of copy on
 * loopback (run-uring.sh).
 * The threshold thus only decides for sockets where the kernel really
 * sends from user pages (a NIC), which this machine cannot measure; there
 * the kernel documents zero copy as a loss below about 10 KB
 * (Documentation/networking/msg_zerocopy.rst), and 16 KiB is the first
 * power of two above it.
 */
#define ZC_THRESHOLD_DEFAULT ((size_t)16 * 1024)

/*
 * How long a wait watches the CQ before it sleeps (uring_kernel.c,
 * spin_wait()).  Longer than a small request's answer takes when the peer
 * is awake, and also longer than the peer's own wake-up and reply when it
 * was asleep: with a window shorter than that, two sides that both slept
 * once keep missing each other's answers and stay asleep (a 10 us window
 * did so on a virtual machine whose wake-ups take about 20 us).  The
 * back-off bounds what the window costs a thread whose waits are long.
 * docs/BENCHMARKS.md has the figures.
 */
#define SPIN_US_DEFAULT 50u
#define SPIN_US_MAX 1000000u	/* a second: more is a sleep's job */

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
	u->be = &bl__uring_backend_blocking;	/* until a ring is set up */
	u->zc_threshold = p && p->zc_threshold ? p->zc_threshold
					       : default_zc_threshold();
	u->spin_us = !p || !p->spin_us ? SPIN_US_DEFAULT
		     : p->spin_us == UINT_MAX ? 0
		     : p->spin_us > SPIN_US_MAX ? SPIN_US_MAX : p->spin_us;
	for (unsigned i = 0; i < ZC_HINTS; i++)
		u->zc_hint[i].fd = -1;
	u->zc_adapt = true;
	return u;
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

/*
 * How completions reach the ring's thread.  By default io_uring runs a
 * completion's work (a receive's copy, a send's retry) in the thread as
 * task work and interrupts it for that (TWA_SIGNAL): a thread busy with
 * completions takes an inter-processor interrupt per wake-up, and the
 * work runs under a lock the peer's sender may hold.  COOP_TASKRUN (5.19)
 * lets it wait for the thread's next entry into the kernel instead, and
 * TASKRUN_FLAG says in the SQ ring that work waits, so that a run that
 * does not wait still enters for it (kernel_run).  SINGLE_ISSUER |
 * DEFER_TASKRUN (6.1) goes further: the work runs only in the thread's
 * io_uring_enter(), in batches, and wakes a waiter only when it completes
 * what it waits for; but then no other thread may submit to the ring or
 * wait on it, and a poll() of its fd sees nothing, so only a caller that
 * says so (single_issuer) gets it.  A flag the caller chose, SQPOLL (whose
 * thread does the work), or a ring the caller configured itself leaves
 * the choice to the caller.
 */
#define TASKRUN_MASK (IORING_SETUP_SQPOLL | IORING_SETUP_COOP_TASKRUN | \
		      IORING_SETUP_TASKRUN_FLAG | IORING_SETUP_SINGLE_ISSUER | \
		      IORING_SETUP_DEFER_TASKRUN)
#define TASKRUN_DEFER (IORING_SETUP_SINGLE_ISSUER | \
		       IORING_SETUP_DEFER_TASKRUN | IORING_SETUP_TASKRUN_FLAG)
#define TASKRUN_COOP (IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG)

/*
 * io_uring_setup() with @flags plus the first of @extra that the kernel
 * accepts (a kernel too old for one says EINVAL), then without any.
 * Return: 0 or its -errno.
 */
static int setup_ring(struct bl_uring *u, unsigned entries, unsigned flags,
		      const unsigned *extra, unsigned nextra)
{
	int ret = -EINVAL;

	for (unsigned i = 0; i <= nextra && ret == -EINVAL; i++) {
		struct io_uring_params ip;

		memset(&ip, 0, sizeof(ip));
		ip.flags = flags | (i < nextra ? extra[i] : 0);
		/*
		 * Zero-copy sends complete twice and multishot receives many
		 * times per SQE: a CQ four times the SQ keeps the kernel's
		 * overflow list (slow, and unbounded memory) out of the
		 * common case.
		 */
		if (!(ip.flags & IORING_SETUP_CQSIZE)) {
			ip.flags |= IORING_SETUP_CQSIZE | IORING_SETUP_CLAMP;
			ip.cq_entries = entries * 4;
		}
		ret = io_uring_queue_init_params(entries, &u->own, &ip);
	}
	return ret;
}

struct bl_uring *bl_uring_create(const struct bl_uring_params *p)
{
	struct bl_uring *u = uring_alloc(p);
	const char *env = getenv("BL_URING_FORCE_BLOCKING");
	unsigned extra[2], nextra = 0;
	unsigned entries, flags;
	int ret;

	if (!u) {
		errno = ENOMEM;
		return NULL;
	}
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
	flags = p ? p->flags : 0;
	if (!(flags & TASKRUN_MASK)) {
		if (p && p->single_issuer)
			extra[nextra++] = TASKRUN_DEFER;
		extra[nextra++] = TASKRUN_COOP;
	}
	ret = setup_ring(u, entries, flags, extra, nextra);
	if (ret < 0) {
		set_reason(u, -ret);
		return u;
	}
	bl__uring_kernel_setup(u, &u->own);
	return u;
}

struct bl_uring *bl_uring_attach(struct io_uring *ring,
				 const struct bl_uring_params *p)
{
	struct bl_uring *u;

	if (!ring) {
		errno = EINVAL;
		return NULL;
	}
	u = uring_alloc(p);
	if (!u) {
		errno = ENOMEM;
		return NULL;
	}
	u->attached = true;
	bl__uring_kernel_setup(u, ring);
	return u;
}

void bl_uring_destroy(struct bl_uring *u)
{
	if (!u)
		return;
	BL_ASSERT(!u->reaping && !u->destroying);	/* not from a callback */
	u->destroying = true;
	u->be->drain(u);
	if (u->lost) {		/* kept for good: see uring_kernel.c */
		if (!u->attached)
			io_uring_queue_exit(u->ring);
		return;
	}
	bl__uring_bufrings_destroy(u);
	bl__uring_regpool_destroy(u);
	if (u->ring && !u->attached)
		io_uring_queue_exit(u->ring);
	bl__free(u->al, u, sizeof(*u), _Alignof(struct bl_uring));
}

enum bl_uring_backend bl_uring_backend(const struct bl_uring *u)
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

static void op_link(struct bl_uring *u, struct uop *op)
{
	op->lprev = NULL;
	op->lnext = u->live;
	if (u->live)
		u->live->lprev = op;
	u->live = op;
	u->inflight++;
}

/*
 * Index of @r in @u's registered table, or -1.  A raw whose opaque pointer
 * is @u's pool is one of its buffers: bl_raw_buf_index() checks the free
 * callback, so that regbuf.c keeps it to itself.
 */
static int fixed_index(const struct bl_uring *u, const struct bl_raw *r)
{
	if (!u->regpool || bl__raw_claim_arg(r) != u->regpool)
		return -1;
	return bl_raw_buf_index(r);
}

/* Zero copy for a send of @len bytes on @fd? */
static bool want_zc(struct bl_uring *u, int fd, size_t len)
{
	unsigned i = bl__uring_zc_slot(fd);

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
		bl__uring_op_release(op);
		return -ECANCELED;
	}
	if (bl__uring_op_ordered(op) && !bl__uring_seq_enter(u, op)) {
		op_link(u, op);
		return 0;	/* starts when the one before it ends */
	}
	if (!op->total && (op->kind == OP_WRITE || op->kind == OP_READ ||
			   op->kind == OP_SEND)) {
		op_link(u, op);
		op->res = 0;
		bl__uring_doneq_push(u, op);
		bl__uring_seq_pop(u, op);	/* alone in its queue */
		return 0;
	}
	if (!u->ring) {
		op_link(u, op);
		if (op->kind == OP_POOLED)
			bl__uring_blk_pooled(u, op);
		else
			bl__uring_blk_perform(u, op);
		return 0;
	}
	sqe = bl__uring_get_sqes(u, bl__uring_op_nsqe(op));
	if (!sqe) {
		bl__uring_seq_pop(u, op);	/* alone in its queue */
		bl__uring_op_release(op);
		return -EBUSY;
	}
	op_link(u, op);
	bl__uring_op_prep(u, op, sqe);
	return 0;
}

/*
 * Blocking back end: descriptors other than files and block devices are
 * polled before each call so that a pipe does not block the caller, and
 * a write at the position to one of them must not raise SIGPIPE.
 */
static void set_pollfirst(struct bl_uring *u, struct uop *op)
{
	struct stat st;
	bool ok;

	if (u->ring)
		return;
	ok = !fstat(op->fd, &st);
	if (ok)
		op->pollfirst = !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode);
	if (op->kind == OP_WRITE && op->off < 0)
		op->nosig = (uint8_t)bl__nosig_of_mode(ok ? (long)st.st_mode
							  : -1);
}

/* ---- per-operation options ---------------------------------------------- */

#define OPTS_RW_FLAGS (RWF_DSYNC | RWF_SYNC | RWF_NOWAIT)

/* What @o asks that an op of this kind cannot do: -EINVAL, else 0. */
static int opts_check(const struct bl_uring_opts *o, bool write, bool timer)
{
	if (!o)
		return 0;
	if ((o->rw_flags & ~OPTS_RW_FLAGS) ||
	    o->sync > BL_URING_SYNC_FDATASYNC)
		return -EINVAL;
	if (!write && (o->rw_flags || o->sync))
		return -EINVAL;
	if (timer && o->timeout_ms)
		return -EINVAL;
	return 0;
}

/* @op takes @o's options and an id (which op_submit hands back). */
static void opts_apply(struct bl_uring *u, struct uop *op,
		       const struct bl_uring_opts *o)
{
	if (!o)
		return;
	op->rw_flags = o->rw_flags;
	op->sync = (uint8_t)o->sync;
	if (o->timeout_ms)
		op->deadline_us = bl__now_us() + (uint64_t)o->timeout_ms * 1000;
	op->id = ++u->next_id;
}

/* op_start(), and @o (if any) gets the op's id when it started. */
static int op_submit(struct bl_uring *u, struct uop *op,
		     struct bl_uring_opts *o)
{
	uint64_t id = op->id;
	int ret = op_start(u, op);

	if (!ret && o)
		o->id = id;
	return ret;
}

int bl_uring_write(struct bl_uring *u, int fd, off_t off,
		   const struct bl_list *l, bl_uring_cb cb, void *arg)
{
	return bl_uring_write_opts(u, fd, off, l, NULL, cb, arg);
}

int bl_uring_write_opts(struct bl_uring *u, int fd, off_t off,
			const struct bl_list *l, struct bl_uring_opts *o,
			bl_uring_cb cb, void *arg)
{
	struct uop *op;
	int ret;

	if (!u || !l)
		return -EINVAL;
	ret = opts_check(o, true, false);
	if (ret)
		return ret;
	/* nothing to write, but a sync asked for: the sync alone */
	if (o && o->sync && bl_list_is_empty(l)) {
		struct bl_uring_opts so = { .timeout_ms = o->timeout_ms };

		ret = bl_uring_fsync(u, fd,
				     o->sync == BL_URING_SYNC_FDATASYNC ?
				     BL_URING_FSYNC_DATASYNC : 0, &so, cb, arg);
		if (!ret)
			o->id = so.id;
		return ret;
	}
	op = bl__uring_op_new(u, OP_WRITE, bl_list_num_buffers(l));
	if (!op)
		return -ENOMEM;
	bl__uring_op_share_list(op, l);
	op->fd = fd;
	op->off = off < 0 ? -1 : off;
	op->cb = cb;
	op->arg = arg;
	if (u->ring && op->niov == 1)
		op->bufidx = fixed_index(u, op->raws[0]);
	opts_apply(u, op, o);
	set_pollfirst(u, op);
	/* a write that must not wait must not wait for readiness either */
	if (op->rw_flags & RWF_NOWAIT)
		op->pollfirst = 0;
	return op_submit(u, op, o);
}

/* An op of one request and no bytes: a sync or a timer. */
static int op_plain(struct bl_uring *u, int kind, int fd,
		    struct bl_uring_opts *o, bl_uring_cb cb, void *arg,
		    struct uop **out)
{
	struct uop *op;
	int ret = opts_check(o, false, kind == OP_TIMER);

	if (ret)
		return ret;
	op = bl__uring_op_new(u, kind, 0);
	if (!op)
		return -ENOMEM;
	op->fd = fd;
	op->cb = cb;
	op->arg = arg;
	opts_apply(u, op, o);
	*out = op;
	return 0;
}

int bl_uring_fsync(struct bl_uring *u, int fd, unsigned flags,
		   struct bl_uring_opts *o, bl_uring_cb cb, void *arg)
{
	struct uop *op;
	int ret;

	if (!u || (flags & ~BL_URING_FSYNC_DATASYNC))
		return -EINVAL;
	ret = op_plain(u, OP_FSYNC, fd, o, cb, arg, &op);
	if (ret)
		return ret;
	op->fsync_flags = flags & BL_URING_FSYNC_DATASYNC ?
			  IORING_FSYNC_DATASYNC : 0;
	return op_submit(u, op, o);
}

int bl_uring_sync_range(struct bl_uring *u, int fd, off_t off, off_t len,
			unsigned flags, struct bl_uring_opts *o,
			bl_uring_cb cb, void *arg)
{
	struct uop *op;
	int ret;

	if (!u || off < 0 || len < 0 || (uint64_t)len > UINT32_MAX ||
	    (flags & ~(unsigned)(SYNC_FILE_RANGE_WAIT_BEFORE |
				 SYNC_FILE_RANGE_WRITE |
				 SYNC_FILE_RANGE_WAIT_AFTER)))
		return -EINVAL;
	ret = op_plain(u, OP_SYNC_RANGE, fd, o, cb, arg, &op);
	if (ret)
		return ret;
	op->off = off;
	op->range_len = (unsigned)len;
	op->fsync_flags = flags;
	return op_submit(u, op, o);
}

int bl_uring_timer(struct bl_uring *u, unsigned ms, struct bl_uring_opts *o,
		   bl_uring_cb cb, void *arg)
{
	struct uop *op;
	int ret;

	if (!u)
		return -EINVAL;
	ret = op_plain(u, OP_TIMER, -1, o, cb, arg, &op);
	if (ret)
		return ret;
	op->deadline_us = bl__now_us() + (uint64_t)ms * 1000;
	return op_submit(u, op, o);
}

int bl_uring_cancel(struct bl_uring *u, uint64_t id)
{
	struct uop *op;

	if (!u || !id)
		return -EINVAL;
	if (u->destroying)
		return -ECANCELED;
	for (op = u->live; op; op = op->lnext)
		if (op->id == id)
			break;
	if (!op || op->called)
		return -ENOENT;
	if (op->cancel_req)
		return 0;	/* asked already */
	/* waiting its turn on its descriptor: no request anywhere */
	if (op->seq == SEQ_QUEUED) {
		bl__uring_seq_remove(u, op);
		op->cancel_req = 1;
		op->res = -ECANCELED;
		bl__uring_doneq_push(u, op);
		return 0;
	}
	return u->be->cancel(u, op);
}

int bl_uring_read(struct bl_uring *u, int fd, off_t off, size_t len,
		  size_t align, bl_uring_cb cb, void *arg)
{
	return bl_uring_read_opts(u, fd, off, len, align, NULL, cb, arg);
}

int bl_uring_read_opts(struct bl_uring *u, int fd, off_t off, size_t len,
		       size_t align, struct bl_uring_opts *o, bl_uring_cb cb,
		       void *arg)
{
	struct bl_uring_regpool *rp;
	unsigned n = 0;
	struct uop *op;

	if (!u)
		return -EINVAL;
	rp = u->regpool;
	if (!align)
		align = BL_CACHELINE;
	if (!bl__is_pow2(align) || opts_check(o, false, false))
		return -EINVAL;
	if (len > (size_t)SSIZE_MAX)
		len = (size_t)SSIZE_MAX;
	if (len)
		n = (unsigned)((len - 1) / READ_RAW_MAX + 1);
	op = bl__uring_op_new(u, OP_READ, n);
	if (!op)
		return -ENOMEM;
	/* a read that fits a registered buffer reads into one: READ_FIXED */
	if (n == 1 && u->ring && rp && len <= rp->buf_size && align <= 4096 &&
	    atomic_load_explicit(&rp->registered, memory_order_relaxed)) {
		op->raws[0] = bl_uring_regpool_get(rp);
		if (op->raws[0]) {
			op->bufidx = bl_raw_buf_index(op->raws[0]);
			op->iov[0].iov_base = bl__raw_data(op->raws[0]);
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
			bl__uring_op_release(op);
			return -ENOMEM;
		}
		op->raws[i] = r;
		op->iov[i].iov_base = bl__raw_data(r);
		op->iov[i].iov_len = sz;
		op->nraws = op->niov = i + 1;
	}
	op->total = len;
	op->fd = fd;
	op->off = off < 0 ? -1 : off;
	op->cb = cb;
	op->arg = arg;
	opts_apply(u, op, o);
	set_pollfirst(u, op);
	return op_submit(u, op, o);
}

int bl_uring_send(struct bl_uring *u, int fd, const struct bl_list *l,
		  int flags, bl_uring_cb cb, void *arg)
{
	return bl_uring_send_opts(u, fd, l, flags, NULL, cb, arg);
}

int bl_uring_send_opts(struct bl_uring *u, int fd, const struct bl_list *l,
		       int flags, struct bl_uring_opts *o, bl_uring_cb cb,
		       void *arg)
{
	struct uop *op;

	if (!u || !l || opts_check(o, false, false))
		return -EINVAL;
	op = bl__uring_op_new(u, OP_SEND, bl_list_num_buffers(l));
	if (!op)
		return -ENOMEM;
	bl__uring_op_share_list(op, l);
	op->fd = fd;
	/* a peer that went away must be an error, not a dead process */
	op->msg_flags = flags | MSG_NOSIGNAL;
	op->cb = cb;
	op->arg = arg;
	op->zc = want_zc(u, fd, op->total);
	opts_apply(u, op, o);
	return op_submit(u, op, o);
}

int bl_uring_recv(struct bl_uring *u, int fd, size_t len, bl_uring_cb cb,
		  void *arg)
{
	return bl_uring_recv_opts(u, fd, len, NULL, cb, arg);
}

int bl_uring_recv_opts(struct bl_uring *u, int fd, size_t len,
		       struct bl_uring_opts *o, bl_uring_cb cb, void *arg)
{
	struct uop *op;
	struct bl_raw *r;

	if (!u || opts_check(o, false, false))
		return -EINVAL;
	if (len > (size_t)INT_MAX)
		len = (size_t)INT_MAX;
	op = bl__uring_op_new(u, OP_RECV, 1);
	if (!op)
		return -ENOMEM;
	r = bl_raw_create(len);
	if (!r) {
		bl__uring_op_release(op);
		return -ENOMEM;
	}
	op->raws[0] = r;
	op->iov[0].iov_base = bl__raw_data(r);
	op->iov[0].iov_len = len;
	op->nraws = op->niov = 1;
	op->total = len;
	op->fd = fd;
	op->cb = cb;
	op->arg = arg;
	opts_apply(u, op, o);
	return op_submit(u, op, o);
}

int bl_uring_recv_pooled(struct bl_uring *u, int fd,
			 struct bl_uring_bufring *br, bool multishot,
			 bl_uring_recv_cb cb, void *arg)
{
	struct uop *op;
	int ret;

	if (!u || !br || br->u != u)
		return -EINVAL;
	op = bl__uring_op_new(u, OP_POOLED, 0);
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
		bl__uring_br_drain(br);
	ret = op_start(u, op);
	return ret;
}

int bl_uring_submit(struct bl_uring *u)
{
	int ret;

	if (!u->ring)
		return 0;
	bl__uring_flush_backlog(u);
	bl__uring_drain_bufrings(u);
	ret = io_uring_submit(u->ring);
	u->need_submit = false;
	return ret;
}

int bl_uring_run(struct bl_uring *u, unsigned min_complete, int timeout_ms)
{
	/* from a callback: the outer call owns the CQ ring's head */
	if (u->reaping || u->destroying)
		return -EDEADLK;
	return u->be->run(u, min_complete, timeout_ms);
}

int bl_uring_handle_cqe(struct bl_uring *u, struct io_uring_cqe *cqe)
{
	bool nested = u->reaping;

	if (!bl__uring_cqe_ours(cqe))
		return 0;
	bl__uring_drain_bufrings(u);
	/* the application iterates the CQ ring: no bl_uring_run inside */
	u->reaping = true;
	/* its loop handles the CQE at the head, as io_uring_peek_cqe gives */
	if (!nested) {
		u->cq_reaping = true;
		u->reap_at = *u->ring->cq.khead + 1;
	}
	bl__uring_handle(u, cqe);
	if (!nested)
		u->cq_reaping = false;
	u->reaping = nested;
	bl__uring_flush_backlog(u);
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

void bl_uring_expect_answer(struct bl_uring *u)
{
	if (u)
		bl__uring_spin_add(u, 1);	/* no completion of its own */
}

/* ---- for the messenger (uring_msgr.h) ----------------------------------- */

size_t bl__uring_zc_threshold(const struct bl_uring *u)
{
	return u->zc_threshold;
}

/*
 * Completions waiting to be handled: on the done queue (or behind the one
 * being delivered), or in the CQ ring past the one being handled now
 * (while reaping) or past its head.  On the blocking back end, operations
 * still waiting for their descriptor are looked at only by
 * bl_uring_run(), and do not count.
 */
bool bl__uring_pending(const struct bl_uring *u)
{
	unsigned head;

	if (u->doneq || u->delivering)
		return true;
	if (!u->ring)
		return false;
	if (bl__uring_taskrun_due(u))
		return true;
	head = u->cq_reaping ? u->reap_at : *u->ring->cq.khead;
	return io_uring_smp_load_acquire(u->ring->cq.ktail) != head;
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
			 * queue becomes the last; in its callback,
			 * bl__uring_deliver() ends it */
			struct uop **pp;

			for (pp = &u->waitq; *pp; pp = &(*pp)->qnext)
				if (*pp == op) {
					*pp = op->qnext;
					op->res = -ECANCELED;
					op->more = 0;
					bl__uring_doneq_push(u, op);
					break;
				}
			op->more = 0;
			continue;
		}
		if (op->sqe) {
			struct io_uring_sqe *sqe = bl__uring_get_sqe(u);

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

size_t bl__uring_cb_done(const struct bl_uring *u)
{
	return u->cb_done;
}

void bl__uring_zc_adapt(struct bl_uring *u, bool on)
{
	u->zc_adapt = on;
	for (unsigned i = 0; i < ZC_HINTS; i++)
		u->zc_hint[i].fd = -1;
}
