/* SPDX-License-Identifier: MIT */
/*
 * tu_uring.c - the rig of the suites that drive a ring: a ring on the
 * back end a TCase names, a completion callback that records what it got
 * (and in which order), and a loop that runs the ring until a flag is
 * reached or fails the test when it never is; the suites of test_uring_*
 * are built here, each group on both back ends, with the lists, socket
 * pairs and counters their tests share.
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"
#include "uring_int.h"

int tu_seq;
bool tu_blocking;
char tu_tdir[64];
uint64_t tu_ring_seed;
const char *tu_ring_tdir_template = "/tmp/bl-uring-XXXXXX";
static bool uring_ok, pbuf_ok;
static char uring_reason[256];
static char ring_who[64];	/* the program, for the fallback's message */

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

/* ---- the suites of test_uring_* ---------------------------------------- */

static void tdir_make(void)
{
	tu_tdir_make(tu_tdir, sizeof(tu_tdir), tu_ring_tdir_template);
}

void tu_ring_setup_uring(void)
{
	tu_blocking = false;
	tdir_make();
}

void tu_ring_setup_blocking(void)
{
	tu_blocking = true;
	tdir_make();
}

void tu_ring_teardown(void)
{
	tu_tdir_remove(tu_tdir);
}

int tu_ring_tmp(void)
{
	char path[PATH_MAX];

	return tu_tmp_open(tu_tdir, path, sizeof(path));
}

START_TEST(test_io_uring_unavailable_falls_back_with_a_reason)
{
	struct bl_uring *u = bl_uring_create(NULL);

	/* only registered when io_uring cannot be set up on this machine */
	fprintf(stderr, "%s: io_uring unavailable (%s); the io_uring cases "
			"were replaced by this check of the fallback\n",
		ring_who, uring_reason);
	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(bl_uring_backend(u), BL_URING_BLOCKING);
	ck_assert_str_ne(bl_uring_backend_reason(u), "");
	bl_uring_destroy(u);
}
END_TEST

/* What the kernel offers; false: no ring at all. */
static bool ring_probe(void)
{
	struct bl_uring *u = bl_uring_create(NULL);

	if (!u)
		return false;
	uring_ok = bl_uring_backend(u) == BL_URING_IO_URING;
	snprintf(uring_reason, sizeof(uring_reason), "%s",
		 bl_uring_backend_reason(u));
	if (uring_ok) {
		struct bl_uring_bufring *br = bl_uring_bufring_create(u, 1,
								      4096, 1);

		pbuf_ok = br != NULL;
		bl_uring_bufring_destroy(br);
	}
	bl_uring_destroy(u);
	return true;
}

/* "NAME-uring" or "NAME-blocking", for as long as the suite runs */
static char *backend_name(const char *name, bool blocking)
{
	size_t n = strlen(name) + sizeof("-blocking");
	char *s = malloc(n);

	/* no ck_assert: there is no test running yet to fail */
	if (!s)
		abort();
	snprintf(s, n, "%s-%s", name, blocking ? "blocking" : "uring");
	return s;
}

/*
 * The suite's table and the group names made for it: Check keeps the
 * names' pointers (tcase_create copies nothing), so they live until the
 * runner is freed, and then go (ring_suite_free), which a leak checker
 * would otherwise report at exit.
 */
static struct tu_group *ring_groups;
static char **ring_names;
static size_t ring_nnames;

static void ring_suite_free(void)
{
	for (size_t i = 0; i < ring_nnames; i++)
		free(ring_names[i]);
	free(ring_names);
	free(ring_groups);
	ring_names = NULL;
	ring_groups = NULL;
	ring_nnames = 0;
}

static Suite *ring_suite(const char *name, const struct tu_ring_group *rg,
			 const struct tu_group *extra)
{
	const TTest *fallback_tests[] = {
		test_io_uring_unavailable_falls_back_with_a_reason, NULL
	};
	size_t nrg = 0, nextra = 0, n = 0;
	struct tu_group *g;

	while (rg[nrg].name)
		nrg++;
	while (extra && extra[nextra].name)
		nextra++;
	g = calloc(2 * nrg + nextra + 2, sizeof(*g));
	ring_names = calloc(2 * nrg + 1, sizeof(*ring_names));
	if (!g || !ring_names)
		abort();
	ring_groups = g;
	for (int b = 0; b < 2; b++) {
		if (!b && !uring_ok) {
			g[n].name = "fallback";
			g[n++].tests = fallback_tests;
			continue;
		}
		for (size_t i = 0; i < nrg; i++) {
			/* not run, and so not counted, where nothing can be
			 * pooled */
			if (!b && rg[i].needs_pbuf && !pbuf_ok) {
				fprintf(stderr, "%s: the kernel has no "
					"provided-buffer rings: %s runs on the "
					"blocking back end only\n", name,
					rg[i].name);
				continue;
			}
			ring_names[ring_nnames] = backend_name(rg[i].name, b);
			g[n].name = ring_names[ring_nnames++];
			g[n].tests = rg[i].tests;
			g[n].loops = rg[i].loops;
			g[n].timeout = 60;
			g[n].teardown = rg[i].teardown;
			g[n].once_setup = b ? tu_ring_setup_blocking
					    : tu_ring_setup_uring;
			g[n++].once_teardown = tu_ring_teardown;
		}
	}
	for (size_t i = 0; i < nextra; i++)
		g[n++] = extra[i];
	return tu_suite(name, g);
}

int tu_ring_main(const char *name, const struct tu_ring_group *rg,
		 const struct tu_group *extra,
		 const struct tu_group *uring_extra)
{
	int st;

	snprintf(ring_who, sizeof(ring_who), "test_%s", name);
	tu_ring_seed = tu_seed(ring_who);
	if (!ring_probe())
		return EXIT_FAILURE;
	if (uring_ok && uring_extra)
		extra = uring_extra;
	st = tu_run(ring_suite(name, rg, extra));
	ring_suite_free();
	return st;
}

/* ---- what the ring suites' tests share --------------------------------- */

void tu_make_list(struct bl_list *l, const unsigned char *data,
		  size_t len, unsigned nseg, uint64_t *rng)
{
	size_t off = 0;

	ck_assert_uint_ge(len, nseg);
	bl_list_init(l);
	for (unsigned i = 0; i < nseg; i++) {
		size_t left = len - off, rest = nseg - i - 1, n;
		struct bl_ptr p;

		if (!rest) {
			n = left;
		} else {
			size_t avg = left / (rest + 1);
			size_t max = left - rest;

			n = 1 + tu_rand(rng) % (2 * avg);
			if (n > max)
				n = max;
		}
		ck_assert_int_eq(bl_ptr_alloc(&p, n), 0);
		memcpy(bl_ptr_data(&p), data + off, n);
		ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
		off += n;
	}
	ck_assert_uint_eq(bl_list_num_buffers(l), nseg);
	ck_assert_uint_eq(bl_list_length(l), len);
}

uint64_t tu_live_bytes(void)
{
	struct tu_alloc_stats st;

	tu_alloc_stats(&st);
	return (uint64_t)st.live_bytes;
}

struct bl__uring_counters tu_counters(const struct bl_uring *u)
{
	struct bl__uring_counters c;

	bl__uring_counters(u, &c);
	return c;
}

void tu_write_sync(struct bl_uring *u, int fd, off_t off,
		   const struct bl_list *l, ssize_t want)
{
	struct tu_rec r;

	tu_rec_init(&r);
	ck_assert_int_eq(bl_uring_write(u, fd, off, l, tu_rec_cb, &r), 0);
	tu_run_until(u, &r.calls, 1);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, want);
}

const char *tu_dio_dir(char *buf, size_t size)
{
	static const char *const cand[] = { "/var/tmp", ".", "/tmp" };

	for (unsigned i = 0; i < sizeof(cand) / sizeof(cand[0]); i++) {
		int fd;

		snprintf(buf, size, "%s/bl-dio-XXXXXX", cand[i]);
		fd = mkstemp(buf);
		if (fd < 0)
			continue;
		close(fd);
		fd = open(buf, O_RDWR | O_DIRECT);
		unlink(buf);
		if (fd >= 0) {
			close(fd);
			return cand[i];
		}
	}
	return NULL;
}

void tu_chunk_cb(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	struct tu_chunk_rec *c = arg;

	c->calls++;
	c->res = res;
	c->more = more;
	ck_assert_int_eq(bl_list_claim_append(&c->data, data), 0);
}

void tu_zc_free(void *data, size_t len, void *opaque)
{
	struct tu_zc_watch *w = opaque;

	w->freed++;
	w->free_seq = ++tu_seq;
	w->notifs_at_free = tu_counters(w->u).notifs;
	free(data);
}
