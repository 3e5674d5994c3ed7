/* SPDX-License-Identifier: MIT */
/*
 * tu_uring.c - the rig of the suites that drive a ring: a ring on the
 * back end a TCase names, a completion callback that records what it got
 * (and in which order), and a loop that runs the ring until a flag is
 * reached or fails the test when it never is.
 */
#include "config.h"

#include <string.h>
#include <time.h>
#include "testutil.h"

int tu_seq;

struct bl_uring *tu_ring_new(bool blocking, size_t zc_threshold,
			     unsigned spin_us)
{
	struct bl_uring_params p;
	struct bl_uring *u;

	memset(&p, 0, sizeof(p));
	p.force_blocking = blocking;
	p.zc_threshold = zc_threshold;
	p.spin_us = spin_us;
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(bl_uring_backend(u),
			 blocking ? BL_URING_BLOCKING : BL_URING_IO_URING);
	return u;
}

void tu_rec_init(struct tu_rec *r)
{
	memset(r, 0, sizeof(*r));
	bl_list_init(&r->data);
}

void tu_rec_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct tu_rec *r = arg;

	r->calls++;
	r->res = res;
	r->seq = ++tu_seq;
	r->had_data = data != NULL;
	if (data) {
		r->data_len = bl_list_length(data);
		ck_assert_int_eq(bl_list_claim_append(&r->data, data), 0);
	}
}

void tu_rec_free(struct tu_rec *r)
{
	bl_list_clear(&r->data);
}

void tu_run_until(struct bl_uring *u, const int *flag, int want)
{
	time_t end = time(NULL) + 20;

	while (*flag < want && time(NULL) < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
	ck_assert_int_ge(*flag, want);
}
