/* SPDX-License-Identifier: MIT */
/*
 * blbench_rados.c - the rados:POOL target: objects in a Ceph pool, through
 * libbufferlist_ceph (include/bufferlist/ceph.h), built only when the
 * bridge is (BL_HAVE_CEPH).  It reaches the rest of blbench only through
 * blbench_target.h: ops go back to their owner by blb_op_complete() from
 * poll, on the benchmark's thread.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bufferlist/ceph.h>
#include "blbench_target.h"

/*
 * Names are rados bench's: objects benchmark_data_<host>_<pid>_object<N>,
 * the metadata object benchmark_last_metadata (or --run-name) in the same
 * pool, so a later seq or rand in another process finds what write
 * --no-cleanup left.  rados bench writes a metadata object of the same
 * name with its own layout: run the two with different --run-name in one
 * pool.
 *
 * Writes carry rados bench's allocation hint (object size, op size,
 * sequential write and read, append-only, immutable) unless --no-hints,
 * as rados bench's do.
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

struct rados_target {
	struct blb_target t;
	struct bl_rados *r;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* completed by librados, not yet seen by the loop; under lock */
	struct blb_op *head, **tail;
	/* the data writes' allocation hint (all 0: --no-hints) */
	uint64_t hint_obj, hint_op;
	uint32_t hint_flags;
};

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
	op->res = res;
	op->lat = now;
	op->next = NULL;
	*rt->tail = op;
	rt->tail = &op->next;
	pthread_cond_signal(&rt->cond);
	pthread_mutex_unlock(&rt->lock);
}

static int rados_write(struct blb_target *t, struct blb_op *op,
		       const struct bl_list *l)
{
	struct rados_target *rt = (struct rados_target *)t;

	op->tag = (uint64_t)(uintptr_t)rt;
	/* the bridge holds its own references: @l may go when this returns */
	return bl_rados_aio_write(rt->r, op->name, l, op->off, op_cb, op);
}

static int rados_read(struct blb_target *t, struct blb_op *op, size_t len)
{
	struct rados_target *rt = (struct rados_target *)t;

	op->tag = (uint64_t)(uintptr_t)rt;
	/* op->data was cleared by the loop and is not touched until op_cb */
	return bl_rados_aio_read(rt->r, op->name, op->off, len, &op->data,
				 op_cb, op);
}

/* Takes what completed; waits up to @timeout_ms (-1: forever) for one. */
static int rados_poll(struct blb_target *t, int timeout_ms)
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

static int rados_remove(struct blb_target *t, const char *name,
			uint64_t objno)
{
	(void)objno;
	return bl_rados_remove(((struct rados_target *)t)->r, name);
}

static int rados_meta_put(struct blb_target *t, const char *run,
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
	bl_rados_set_alloc_hint(rt->r, 0, 0, 0);
	r = bl_rados_write_full(rt->r, run, m);
	e = bl_rados_set_alloc_hint(rt->r, rt->hint_obj, rt->hint_op,
				    rt->hint_flags);
	return r < 0 ? r : e;
}

static int rados_meta_get(struct blb_target *t, const char *run,
			  struct bl_list *out)
{
	ssize_t n = bl_rados_read(((struct rados_target *)t)->r, run, 0,
				  META_READ_MAX, out);

	if (n < 0)
		return (int)n;
	return n == 0 ? -ENOENT : 0;	/* rados bench: empty = absent */
}

static int rados_meta_del(struct blb_target *t, const char *run)
{
	return bl_rados_remove(((struct rados_target *)t)->r, run);
}

static void rados_close(struct blb_target *t)
{
	struct rados_target *rt = (struct rados_target *)t;

	/*
	 * Returns once every callback has run; what they queued is handed to
	 * the loop, which drops it (the ops' lists are the loop's to clear).
	 */
	bl_rados_close(rt->r);
	rados_poll(t, 0);
	pthread_cond_destroy(&rt->cond);
	pthread_mutex_destroy(&rt->lock);
	free(rt);
}

static const struct blb_target_ops rados_ops = {
	.kind = "rados",
	.write = rados_write,
	.read = rados_read,
	.poll = rados_poll,
	.remove = rados_remove,
	.meta_put = rados_meta_put,
	.meta_get = rados_meta_get,
	.meta_del = rados_meta_del,
	.list = NULL,		/* the bridge lists nothing: --prefix has no effect */
	.close = rados_close,
};

int blb_rados_open(struct blb_target **out, const char *pool,
		   const struct blb_opts *o, char *err, size_t errlen)
{
	struct rados_target *rt;
	pthread_condattr_t ca;
	const char *conf = o->conf;
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
	pthread_condattr_destroy(&ca);

	/* NULL: the bridge looks at $CEPH_CONF, then the usual places */
	rt->r = bl_rados_open(conf, pool, &r);
	if (!rt->r) {
		const char *c = conf ? conf : getenv("CEPH_CONF");

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
			rados_close(&rt->t);
			return blb_fail(err, errlen, r, "rados:%s: allocation hint",
				    pool);
		}
	}
	*out = &rt->t;
	return 0;
}
