/* SPDX-License-Identifier: MIT */
/*
 * uring_wait.c - one write or read through a struct bl_uring, waited for:
 * the callback, the done flag and the run loop that a program doing one
 * operation at a time would otherwise write around the asynchronous API.
 * Built on that API (submit, then bl_uring_run until this operation's
 * callback ran), so both back ends behave alike; the one private thing
 * it reads is two flags of the ring (destroying, reaping), to refuse
 * before submitting a call that bl_uring_run could not wait for, since a
 * refusal after the submission would leave the operation running.  The
 * waiter lives on the heap: if driving the ring fails, the call returns
 * and the callback, when it comes, finds the waiter orphaned and frees
 * it, so no stack frame is ever written after its function returned.
 */
#include "uring_priv.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>

struct waiter {
	const struct bl__allocator *al;
	bool done;
	bool orphaned;		/* the waiting call returned first */
	ssize_t res;
	struct bl_list data;	/* a read's bytes, until handed over */
};

static void waiter_free(struct waiter *w)
{
	bl_list_clear(&w->data);
	bl__free(w->al, w, sizeof(*w), _Alignof(struct waiter));
}

static void wait_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct waiter *w = arg;

	if (w->orphaned) {
		waiter_free(w);
		return;
	}
	w->res = res;
	if (data)
		bl_list_swap(&w->data, data);	/* w->data was empty */
	w->done = true;
}

/* Checks what a submission from here would run into; allocates a waiter. */
static int waiter_new(struct bl_uring *u, struct waiter **out)
{
	const struct bl__allocator *al = bl__allocator_current();
	struct waiter *w;

	if (u->destroying)
		return -ECANCELED;
	/* from a callback: bl_uring_run could not wait for it */
	if (u->reaping)
		return -EDEADLK;
	w = bl__alloc(al, sizeof(*w), _Alignof(struct waiter));
	if (!w)
		return -ENOMEM;
	w->al = al;
	w->done = false;
	w->orphaned = false;
	w->res = 0;
	bl_list_init(&w->data);
	*out = w;
	return 0;
}

/*
 * Runs @u until the operation that @submitted (0, or its -errno) started
 * called back, then takes its result (and, into @out when not NULL, its
 * bytes).  If running the ring fails, @w is orphaned: the operation still
 * completes later, and its callback frees @w.
 */
static ssize_t waiter_finish(struct bl_uring *u, struct waiter *w,
			     int submitted, struct bl_list *out)
{
	ssize_t res;
	int ret = submitted;

	while (!ret && !w->done) {
		ret = bl_uring_run(u, 1, -1);
		if (ret < 0) {
			w->orphaned = true;
			return ret;
		}
		ret = 0;
	}
	if (ret) {
		waiter_free(w);
		return ret;
	}
	res = w->res;
	if (out && res >= 0 && bl_list_claim_append(out, &w->data))
		res = -ENOMEM;	/* @out unchanged; the bytes are dropped */
	waiter_free(w);
	return res;
}

ssize_t bl_uring_write_wait(struct bl_uring *u, int fd, off_t off,
			    const struct bl_list *l)
{
	struct waiter *w;
	int ret;

	if (!u || !l)
		return -EINVAL;
	ret = waiter_new(u, &w);
	if (ret)
		return ret;
	return waiter_finish(u, w, bl_uring_write(u, fd, off, l, wait_cb, w),
			     NULL);
}

ssize_t bl_uring_read_wait(struct bl_uring *u, int fd, off_t off, size_t len,
			   size_t align, struct bl_list *out)
{
	struct waiter *w;
	int ret;

	if (!u || !out)
		return -EINVAL;
	ret = waiter_new(u, &w);
	if (ret)
		return ret;
	return waiter_finish(u, w,
			     bl_uring_read(u, fd, off, len, align, wait_cb, w),
			     out);
}
