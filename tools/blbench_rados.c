/* SPDX-License-Identifier: MIT */
/*
 * blbench_rados.c - the rados:POOL target: objects in a Ceph pool, through
 * libbufferlist_ceph (include/bufferlist/ceph.h), built only when the
 * bridge is (BL_HAVE_CEPH).  It reaches the rest of blbench only through
 * blbench_target.h (and librados' own C API for the run lock): ops go
 * back to their owner by blb_op_complete() from poll, on the benchmark's
 * thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rados/librados.h>
#include <bufferlist/ceph.h>
#include "blbench_target.h"

/*
 * Names are rados bench's: objects benchmark_data_<host>_<pid>_object<N>,
 * the metadata object benchmark_last_metadata (or --run-name) in the same
 * pool, so a later seq or rand in another process finds what write
 * --no-cleanup left.  rados bench reads blbench's metadata (its first
 * four fields are rados bench's) and blbench reads rados bench's
 * (blbench_meta.c); --rados-bench-compat makes the objects' contents
 * rados bench's too.
 *
 * Writes carry rados bench's allocation hint (object size, op size,
 * sequential write and read, append-only, immutable) unless --no-hints,
 * as rados bench's do.
 *
 * Cleanup lists the pool (bl_rados_list, default namespace).  The lock
 * that keeps two writers of one run apart goes through the librados C
 * API on the bridge's own I/O context (bl_rados_ioctx): the bridge does
 * not wrap locks.
 *
 * Every op is one bridge aio call: the write hands librados the op's list
 * (header raw + a slice of the pattern raw) without a copy, the read
 * appends Ceph's own receive buffers to the op's list without a copy.
 *
 * Threads: completions run on a librados thread, which must not touch the
 * benchmark's state.  The callback only notes the time, appends the op to
 * a queue under a mutex and signals a condition variable; poll(), on the
 * benchmark's thread, takes the whole queue and hands each op to
 * blb_op_complete() — the same shape as the io_uring targets, where a
 * completion only queues and the loop does the rest.  The mutex also
 * orders the bridge's writes into a read's list before the loop reads it.
 */

#define META_READ_MAX (1u << 20)	/* blbench's metadata is ~200 bytes */

/*
 * Every wait here is bounded.  librados itself times an operation out
 * only when asked (rados_osd_op_timeout, set from --op-timeout at open);
 * on top of that no wait of ours lasts longer than the op timeout plus
 * GRACE_S, and each gives up at once when a SIGTERM or a second SIGINT
 * came (blb_stop > 1): the synchronous calls go as aio with a wait in
 * WAIT_SLICE_MS slices that look at the flag, since a librados call
 * blocked on a silent OSD does not return for a signal.  An operation
 * given up on still belongs to librados, so what its callback touches
 * stays allocated (struct sync_call's reference, the target itself when
 * closing gives up).
 */
#define GRACE_S 5
#define WAIT_SLICE_MS 100

struct rados_target {
	struct blb_target t;
	struct bl_rados *r;
	unsigned timeout;		/* --op-timeout, seconds; 0: none */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	pthread_cond_t sync_cond;	/* a struct sync_call finished */
	/* completed by librados, not yet seen by the loop; under lock */
	struct blb_op *head, **tail;
	/* the data writes' allocation hint (all 0: --no-hints) */
	uint64_t hint_obj, hint_op;
	uint32_t hint_flags;
	/* write: the run's lock (see writer_lock), held while non-empty */
	char lock_obj[BLB_NAME_MAX];
	char cookie[BLB_NAME_MAX];
	/* an op timed out or a wait gave up: the cluster is not answering */
	bool stalled;			/* under lock */
};

static void writer_unlock(struct rados_target *rt);

/*
 * On a librados thread.  op->lat carries the completion time to the loop
 * (blb_op_complete() then turns it into the latency), so the time spent
 * waiting in the queue does not count as the cluster's.
 */
static void op_cb(int res, void *arg)
{
	struct blb_op *op = arg;
	struct rados_target *rt = (struct rados_target *)(uintptr_t)op->tag;
	double now = blb_now();

	pthread_mutex_lock(&rt->lock);
	if (res == -ETIMEDOUT)
		rt->stalled = true;
	op->res = res;
	op->lat = now;
	op->next = NULL;
	*rt->tail = op;
	rt->tail = &op->next;
	pthread_cond_signal(&rt->cond);
	pthread_mutex_unlock(&rt->lock);
}

static int rt_write(struct blb_target *t, struct blb_op *op,
		       const struct bl_list *l)
{
	struct rados_target *rt = (struct rados_target *)t;

	op->tag = (uint64_t)(uintptr_t)rt;
	/* the bridge holds its own references: @l may go when this returns */
	return bl_rados_aio_write(rt->r, op->name, l, op->off, op_cb, op);
}

static int rt_read(struct blb_target *t, struct blb_op *op, size_t len)
{
	struct rados_target *rt = (struct rados_target *)t;

	op->tag = (uint64_t)(uintptr_t)rt;
	/* op->data was cleared by the loop and is not touched until op_cb */
	return bl_rados_aio_read(rt->r, op->name, op->off, len, &op->data,
				 op_cb, op);
}

/* Takes what completed; waits up to @timeout_ms (-1: forever) for one. */
static int rt_poll(struct blb_target *t, int timeout_ms)
{
	struct rados_target *rt = (struct rados_target *)t;
	struct blb_op *op, *next;
	struct timespec ts;
	int n = 0;

	pthread_mutex_lock(&rt->lock);
	if (!rt->head && timeout_ms != 0) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		/* after a first SIGINT the loop still waits for the ops in
		 * flight: waking at once would spin it; it gives up on 2 */
		while (!rt->head && blb_stop < 2) {
			if (timeout_ms < 0)
				pthread_cond_wait(&rt->cond, &rt->lock);
			else if (pthread_cond_timedwait(&rt->cond, &rt->lock,
							&ts) == ETIMEDOUT)
				break;
		}
	}
	op = rt->head;
	rt->head = NULL;
	rt->tail = &rt->head;
	pthread_mutex_unlock(&rt->lock);

	for (; op; op = next, n++) {
		double done = op->lat;

		next = op->next;
		blb_op_complete(op, op->res, NULL);
		op->lat = done - op->t0;
	}
	return n;
}

/*
 * One synchronous call made as aio: two references, the caller's and the
 * callback's, so that a caller who gave up can leave and the callback
 * still finds the struct (and a read's list) alive.
 */
struct sync_call {
	struct rados_target *rt;
	int refs;			/* under rt->lock */
	bool done;
	int res;
	struct bl_list data;		/* a read's bytes */
};

static void sync_put(struct sync_call *sc)
{
	struct rados_target *rt = sc->rt;
	bool last;

	pthread_mutex_lock(&rt->lock);
	last = --sc->refs == 0;
	pthread_mutex_unlock(&rt->lock);
	if (last) {
		bl_list_clear(&sc->data);
		free(sc);
	}
}

/* On a librados thread. */
static void sync_cb(int res, void *arg)
{
	struct sync_call *sc = arg;
	struct rados_target *rt = sc->rt;

	pthread_mutex_lock(&rt->lock);
	sc->res = res;
	sc->done = true;
	pthread_cond_broadcast(&rt->sync_cond);
	pthread_mutex_unlock(&rt->lock);
	sync_put(sc);
}

static struct sync_call *sync_new(struct rados_target *rt)
{
	struct sync_call *sc = calloc(1, sizeof(*sc));

	if (sc) {
		sc->rt = rt;
		sc->refs = 2;
		bl_list_init(&sc->data);
	}
	return sc;
}

/*
 * Waits for @sc, submitted (@submitted 0) or not (then its result): the
 * call's result, -ETIMEDOUT after the op timeout and the grace, or -EINTR
 * when the run is to stop now.  The caller then drops its reference.
 */
static int sync_wait(struct sync_call *sc, int submitted)
{
	struct rados_target *rt = sc->rt;
	double end = blb_now() + (rt->timeout ? rt->timeout + GRACE_S : 0);
	int r;

	if (submitted < 0) {
		sync_put(sc);	/* the callback's: it never runs */
		return submitted;
	}
	pthread_mutex_lock(&rt->lock);
	while (!sc->done && blb_stop < 2 && (!rt->timeout || blb_now() < end)) {
		struct timespec ts;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += WAIT_SLICE_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&rt->sync_cond, &rt->lock, &ts);
	}
	r = sc->done ? sc->res : blb_stop > 1 ? -EINTR : -ETIMEDOUT;
	if (r == -ETIMEDOUT || r == -EINTR)
		rt->stalled = true;
	pthread_mutex_unlock(&rt->lock);
	return r;
}

static int sync_remove(struct rados_target *rt, const char *name)
{
	struct sync_call *sc = sync_new(rt);
	int r;

	if (!sc)
		return -ENOMEM;
	r = sync_wait(sc, bl_rados_aio_remove(rt->r, name, sync_cb, sc));
	sync_put(sc);
	return r;
}

static int rt_remove(struct blb_target *t, const char *name,
			uint64_t objno)
{
	(void)objno;
	return sync_remove((struct rados_target *)t, name);
}

static int rt_meta_put(struct blb_target *t, const char *run,
			  const struct bl_list *m)
{
	struct rados_target *rt = (struct rados_target *)t;
	int r, e;

	/*
	 * One write_full: a reader sees the old object or the new one.  No
	 * hint on it: rados bench's metadata goes without one too, and this
	 * small object is rewritten, not an immutable 4 MiB one.  Only the
	 * loop's thread writes, and no data write is in flight here.
	 */
	struct sync_call *sc = sync_new(rt);

	if (!sc)
		return -ENOMEM;
	bl_rados_set_alloc_hint(rt->r, 0, 0, 0);
	r = sync_wait(sc, bl_rados_aio_write_full(rt->r, run, m, sync_cb, sc));
	sync_put(sc);
	e = bl_rados_set_alloc_hint(rt->r, rt->hint_obj, rt->hint_op,
				    rt->hint_flags);
	return r < 0 ? r : e;
}

static int rt_meta_get(struct blb_target *t, const char *run,
			  struct bl_list *out)
{
	struct rados_target *rt = (struct rados_target *)t;
	struct sync_call *sc = sync_new(rt);
	int r;

	if (!sc)
		return -ENOMEM;
	/* into @sc's own list: @out may be gone when a late answer comes */
	r = sync_wait(sc, bl_rados_aio_read(rt->r, run, 0, META_READ_MAX,
					    &sc->data, sync_cb, sc));
	if (r == 0)
		r = -ENOENT;	/* rados bench: empty = absent */
	else if (r > 0)
		r = bl_list_claim_append(out, &sc->data);
	sync_put(sc);
	return r;
}

static int rt_meta_del(struct blb_target *t, const char *run)
{
	return sync_remove((struct rados_target *)t, run);
}

static void rt_close(struct blb_target *t)
{
	struct rados_target *rt = (struct rados_target *)t;
	double end = blb_now() + (rt->timeout ? rt->timeout + GRACE_S : 0);
	int r;

	/*
	 * librados times out what is in flight (rados_osd_op_timeout); wait
	 * that long and a little more, but not past a SIGTERM.  If it is not
	 * over by then, the callbacks still to come would write into ops and
	 * lists the loop frees after this, and exit() would run destructors
	 * under librados' threads: the process ends here, at once, with
	 * blbench's failure status (the run failed already: ops still in
	 * flight at the end mean a timeout or a signal).
	 */
	while ((r = bl_rados_aio_flush(rt->r, WAIT_SLICE_MS)) == -ETIMEDOUT &&
	       blb_stop < 2 && (!rt->timeout || blb_now() < end))
		;
	if (r < 0) {
		fprintf(stderr, "blbench: %s: %s; leaving without waiting for librados\n",
			t->desc, blb_stop > 1 ? "stopped by a signal" :
			"operations still in flight past --op-timeout");
		fflush(NULL);
		_exit(1);	/* BLB_EXIT_FAIL */
	}
	writer_unlock(rt);
	/*
	 * Every callback has run; what they queued is handed to the loop,
	 * which drops it (the ops' lists are the loop's to clear).
	 */
	bl_rados_close(rt->r);
	rt_poll(t, 0);
	pthread_cond_destroy(&rt->sync_cond);
	pthread_cond_destroy(&rt->cond);
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}

struct list_arg {
	int (*fn)(void *arg, const char *name);
	void *arg;
};

static int list_one(const char *oid, const char *nspace, const char *loc,
		    void *arg)
{
	struct list_arg *la = arg;

	(void)nspace;
	(void)loc;
	return la->fn(la->arg, oid);
}

/*
 * In the handle's namespace (the default one: a run's objects and its
 * metadata live there, as rados bench's do).  @fn's error stops it.
 */
static int rt_list(struct blb_target *t, const char *prefix,
		      int (*fn)(void *arg, const char *name), void *arg)
{
	struct list_arg la = { fn, arg };

	return bl_rados_list(((struct rados_target *)t)->r, prefix, list_one,
			     &la);
}

/*
 * Two writers of one --run-name would each write the metadata object,
 * the last one orphaning the other's objects.  A write therefore takes
 * an exclusive RADOS lock (cls_lock, as `rados lock` shows it) named
 * "blbench" on the metadata object, with HOST_PID as its cookie, until
 * the target closes; a second writer is refused while it is held.  A
 * lock left by a writer that died (SIGKILL) on this host is broken, one
 * of another host is reported with the command that breaks it.  The
 * lock creates the metadata object empty if there is none, which reads
 * as no metadata (rados bench's rule as well).
 */
#define LOCK_NAME "blbench"

static bool dead_here(const char *cookie)
{
	char host[256];
	size_t n;
	char *end;
	long pid;

	if (gethostname(host, sizeof(host)) < 0)
		return false;
	host[sizeof(host) - 1] = 0;
	n = strlen(host);
	if (strncmp(cookie, host, n) || cookie[n] != '_')
		return false;
	errno = 0;
	pid = strtol(cookie + n + 1, &end, 10);
	if (errno || *end || pid <= 0 || pid == getpid())
		return false;
	return kill((pid_t)pid, 0) < 0 && errno == ESRCH;
}

static int writer_lock(struct rados_target *rt, const char *run, char *err,
		       size_t errlen)
{
	rados_ioctx_t io = bl_rados_ioctx(rt->r);
	char host[256], tag[64], clients[1024], cookies[1024], addrs[1024];
	size_t tl, cl, kl, al;
	int excl, r;

	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	snprintf(rt->cookie, sizeof(rt->cookie), "%.200s_%d", host,
		 (int)getpid());
	for (int tries = 0; tries < 2; tries++) {
		r = rados_lock_exclusive(io, run, LOCK_NAME, rt->cookie,
					 "blbench write", NULL, 0);
		if (r == 0) {
			snprintf(rt->lock_obj, sizeof(rt->lock_obj), "%s", run);
			return 0;
		}
		if (r != -EBUSY && r != -EEXIST)
			break;
		tl = sizeof(tag);
		cl = sizeof(clients);
		kl = sizeof(cookies);
		al = sizeof(addrs);
		if (rados_list_lockers(io, run, LOCK_NAME, &excl, tag, &tl,
				       clients, &cl, cookies, &kl, addrs,
				       &al) <= 0)
			continue;	/* gone meanwhile: try again */
		if (tries == 0 && dead_here(cookies) &&
		    rados_break_lock(io, run, LOCK_NAME, clients, cookies) == 0)
			continue;
		return blb_fail(err, errlen, -EBUSY,
			    "%s: another blbench (%s, %s) is writing run %s; give this one another --run-name (a lock left by a writer that died: `rados -p POOL lock break %s %s %s --lock-cookie %s`)",
			    rt->t.desc, clients, cookies, run, run, LOCK_NAME,
			    clients, cookies);
	}
	return blb_fail(err, errlen, r, "%s: locking run %s", rt->t.desc,
			run);
}

/*
 * A run that left no metadata (it failed) leaves the empty object the
 * lock made: removed, lock and all, while the lock still keeps other
 * writers out.  -ENOENT: the run's cleanup removed object and lock.
 */
static void writer_unlock(struct rados_target *rt)
{
	rados_ioctx_t io = bl_rados_ioctx(rt->r);
	uint64_t size = 1;
	bool stalled;

	pthread_mutex_lock(&rt->lock);
	stalled = rt->stalled;
	pthread_mutex_unlock(&rt->lock);
	/* each call would wait the op timeout: the next writer on this host
	 * breaks the lock of a process that is gone */
	if (!rt->lock_obj[0] || stalled)
		return;
	if (bl_rados_stat(rt->r, rt->lock_obj, &size, NULL) == 0 && size == 0)
		rados_remove(io, rt->lock_obj);
	else
		rados_unlock(io, rt->lock_obj, LOCK_NAME, rt->cookie);
	rt->lock_obj[0] = 0;
}

static const struct blb_target_ops rados_ops = {
	.kind = "rados",
	.write = rt_write,
	.read = rt_read,
	.poll = rt_poll,
	.remove = rt_remove,
	.meta_put = rt_meta_put,
	.meta_get = rt_meta_get,
	.meta_del = rt_meta_del,
	.list = rt_list,
	.close = rt_close,
};

int blb_rados_open(struct blb_target **out, const char *pool,
		   const struct blb_opts *o, char *err, size_t errlen)
{
	struct rados_target *rt;
	pthread_condattr_t ca;
	const char *conf = o->conf;
	char tmo[16];
	const char *const tmo_opts[] = {
		"rados_osd_op_timeout", tmo,
		"rados_mon_op_timeout", tmo,
		"client_mount_timeout", tmo,
		NULL,
	};
	int r = 0;

	if (o->direct)
		return blb_fail(err, errlen, 0, "--direct is for dir: and file: targets, not rados:%s",
			    pool);
	rt = calloc(1, sizeof(*rt));
	if (!rt)
		return blb_fail(err, errlen, -ENOMEM, "rados:%s", pool);
	rt->t.ops = &rados_ops;
	snprintf(rt->t.desc, sizeof(rt->t.desc), "rados:%s", pool);
	rt->t.mem_align = rt->t.off_align = 1;
	rt->t.room = UINT64_MAX;	/* the pool's free space is not asked */
	rt->tail = &rt->head;
	pthread_mutex_init(&rt->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&rt->cond, &ca);
	pthread_cond_init(&rt->sync_cond, &ca);
	pthread_condattr_destroy(&ca);
	rt->timeout = o->op_timeout;

	/*
	 * NULL: the bridge looks at $CEPH_CONF, then the usual places.  The
	 * op timeout goes to librados too: its own operations then end with
	 * -ETIMEDOUT, and closing the handle has nothing left to wait for.
	 */
	snprintf(tmo, sizeof(tmo), "%u", o->op_timeout);
	rt->r = bl_rados_open2(conf, NULL, pool, o->op_timeout ? tmo_opts : NULL,
			       &r);
	if (!rt->r) {
		const char *c = conf ? conf : getenv("CEPH_CONF");

		pthread_cond_destroy(&rt->sync_cond);
		pthread_cond_destroy(&rt->cond);
		pthread_mutex_destroy(&rt->lock);
		free(rt);
		return blb_fail(err, errlen, r < 0 ? r : -EIO,
			    "cannot open target rados:%s (configuration %s)",
			    pool, c && *c ? c : "from the default places");
	}
	/*
	 * rados bench's hint, on every write unless --no-hints: BlueStore
	 * then checksums and allocates in op-sized pieces, which the OSD
	 * spends measurably less CPU on than on 4 KiB ones.
	 */
	if (o->hints) {
		rt->hint_obj = o->object_size;
		rt->hint_op = o->op_size;
		rt->hint_flags = BL_RADOS_HINT_SEQUENTIAL_WRITE |
				 BL_RADOS_HINT_SEQUENTIAL_READ |
				 BL_RADOS_HINT_APPEND_ONLY |
				 BL_RADOS_HINT_IMMUTABLE;
		r = bl_rados_set_alloc_hint(rt->r, rt->hint_obj, rt->hint_op,
					    rt->hint_flags);
		if (r < 0) {
			rt_close(&rt->t);
			return blb_fail(err, errlen, r, "rados:%s: allocation hint",
				    pool);
		}
	}
	/* the clients of --jobs write under client 0's lock */
	if (o->mode == BLB_WRITE && !o->lock_held) {
		r = writer_lock(rt, o->run_name, err, errlen);
		if (r < 0) {
			rt_close(&rt->t);
			return r;
		}
	}
	*out = &rt->t;
	return 0;
}
