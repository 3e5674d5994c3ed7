/* SPDX-License-Identifier: MIT */
/*
 * test_alloc_failures_io.c - every allocation of the uring, msgr and io
 * operations that test_alloc_failures.c does not cover fails in turn
 * (tu_alloc_fail_at), on each back end: the operation reports -ENOMEM
 * (or NULL), the caller's list is as it was, no byte of memory and no
 * descriptor leaks, and the same operation then succeeds.  The suite
 * prints how many fault points it went through.  It shares the fault
 * suites' harness (faultsuite.c), whose uring operations it runs.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <liburing.h>
#include <bufferlist/io.h>
#include <bufferlist/msgr.h>
#include <bufferlist/uring.h>
#include "uring_int.h"
#include "faultsys.h"
#include "faultsuite.h"
#include "uring_probe.h"
#include "testutil.h"

/* ---- allocation failures ------------------------------------------------ */

/*
 * One operation under the failing allocator: @op runs with the Nth
 * allocation failing (N = 1, 2, ...; once, then from N on) until a run
 * hits no failure.  @op returns 0 on success or the -errno it reported,
 * and must itself check that a failure left everything as it was;
 * afterwards everything @op made is released and no byte may be live.
 */
struct actx {
	bool blocking;
	uint64_t n;
	int sticky;
	int fds0;
};

static unsigned long alloc_loop(const char *name, bool blocking,
				int (*op)(struct actx *))
{
	unsigned long pts = 0;

	for (int sticky = 0; sticky < 2; sticky++) {
		for (uint64_t n = 1;; n++) {
			struct tu_alloc_stats st;
			struct actx a = { blocking, n, sticky, (int)nfds() };
			int rc;

			tu_alloc_install(0, 0);
			rc = op(&a);
			tu_alloc_stats(&st);
			ck_assert_msg(st.live_bytes == 0, "%s: allocation %"
				      PRIu64 "%s failing: %" PRId64
				      " bytes leaked", name, n,
				      sticky ? " (sticky)" : "",
				      st.live_bytes);
			ck_assert_msg((int)nfds() == a.fds0, "%s: allocation %"
				      PRIu64 " failing: descriptor leaked",
				      name, n);
			tu_alloc_uninstall();
			if (!st.failed) {
				ck_assert_msg(rc == 0, "%s: %d with no failure",
					      name, rc);
				break;
			}
			ck_assert_msg(rc == 0 || rc == -ENOMEM,
				      "%s: allocation %" PRIu64 " failing: %d",
				      name, n, rc);
			pts++;
			point(P_ENOMEM);
			ck_assert_msg(n < 10000, "%s: no end", name);
		}
	}
	return pts;
}

/* Arms the failing allocator for the operation itself. */
static void afail(struct actx *a)
{
	tu_alloc_fail_at(a->n, a->sticky);
}

static void aok(void)
{
	tu_alloc_fail_at(0, 0);
}

static struct bl_uring *aring(struct actx *a)
{
	struct bl_uring_params p = { .force_blocking = a->blocking };
	struct bl_uring *u = bl_uring_create(&p);

	ck_assert_ptr_nonnull(u);
	return u;
}

static int a_create(struct actx *a)
{
	struct bl_uring_params p = { .force_blocking = a->blocking };
	struct bl_uring *u;

	afail(a);
	u = bl_uring_create(&p);
	aok();
	if (!u)
		return -ENOMEM;
	bl_uring_destroy(u);
	return 0;
}

static int a_attach(struct actx *a)
{
	struct io_uring ring;
	struct bl_uring *u;

	if (io_uring_queue_init(8, &ring, 0))
		return 0;
	afail(a);
	u = bl_uring_attach(&ring, NULL);
	aok();
	bl_uring_destroy(u);
	io_uring_queue_exit(&ring);
	return u ? 0 : -ENOMEM;
}

/* write / read / send / recv: submit and run, under the allocator */
static int a_io(struct actx *a, enum uop_kind k)
{
	static const struct ucase proto = { "alloc", U_WRITE, true, FS_CQE, 0 };
	struct ucase c = proto;
	struct uctx x;
	struct bl_list data;
	struct snap s;
	struct ures r = { 0 };
	int rc = 0, fd = -1;

	c.op = k;
	c.blocking = a->blocking;
	uctx_open(&x, &c);
	bl_list_init(&data);
	bl_list_init(&r.data);
	snap_take(&s, &x.l);
	if (k == U_WRITE) {
		truncate_out();
		fd = open(out_path, O_WRONLY);
		ck_assert_int_ge(fd, 0);
	}
	if (k == U_RECV || k == U_POOLED)
		ck_assert_int_eq(send(x.peer, x.want, x.want_len, 0),
				 (ssize_t)x.want_len);
	afail(a);
	switch (k) {
	case U_WRITE:
		rc = bl_uring_write(x.u, fd, 0, &x.l, ucb, &r);
		break;
	case U_READ:
		rc = bl_uring_read(x.u, x.fd, 0, FLEN, 4096, ucb, &r);
		break;
	case U_SEND:
		rc = bl_uring_send(x.u, x.fd, &x.l, 0, ucb, &r);
		break;
	case U_RECV:
		rc = bl_uring_recv(x.u, x.fd, 65536, ucb, &r);
		break;
	default:
		rc = bl_uring_recv_pooled(x.u, x.fd, x.br, false, upcb, &r);
		break;
	}
	if (!rc) {
		run_until(x.u, &r, 1);
		while (bl__uring_retiring(x.u))
			bl_uring_run(x.u, 0, 100);
	}
	aok();
	snap_check(&s, &x.l, "alloc");
	if (rc) {
		ck_assert_int_eq(rc, -ENOMEM);
		ck_assert_int_eq(r.calls, 0);
	} else if (r.res < 0) {
		/* allocated while completing (a pooled chunk's raw) */
		ck_assert_int_eq(r.res, -ENOMEM);
		ck_assert_uint_eq(bl_list_length(&r.data), 0);
		rc = -ENOMEM;
	} else {
		bl_list_claim_append(&data, &r.data);
		ucheck_ok(&x, r.res, &data, "alloc");
	}
	if (x.br) {
		bl_list_clear(&r.data);
		ck_assert_uint_eq(bl_uring_bufring_available(x.br), UBUFS);
	}
	bl_list_clear(&r.data);
	if (fd >= 0)
		close(fd);
	snap_free(&s);
	uctx_close(&x);
	return rc;
}

static int a_write(struct actx *a) { return a_io(a, U_WRITE); }
static int a_read(struct actx *a) { return a_io(a, U_READ); }
static int a_send(struct actx *a) { return a_io(a, U_SEND); }
static int a_recv(struct actx *a) { return a_io(a, U_RECV); }
static int a_pooled(struct actx *a) { return a_io(a, U_POOLED); }

static int a_bufring(struct actx *a)
{
	struct bl_uring *u = aring(a);
	struct bl_uring_bufring *br;

	afail(a);
	br = bl_uring_bufring_create(u, 16, 4096, 5);
	aok();
	if (br)
		ck_assert_uint_eq(bl_uring_bufring_available(br), 16);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	return br ? 0 : -ENOMEM;
}

static int a_regpool(struct actx *a)
{
	struct bl_uring *u = aring(a);
	struct bl_uring_regpool *p;
	struct bl_raw *r = NULL;

	afail(a);
	p = bl_uring_regpool_create(u, 4, 8192);
	if (p)
		r = bl_uring_regpool_get(p);
	aok();
	if (p && !r) {
		/* the buffer went back: all four are there */
		struct bl_raw *rs[4];

		for (int i = 0; i < 4; i++)
			ck_assert_ptr_nonnull(rs[i] = bl_uring_regpool_get(p));
		ck_assert_ptr_null(bl_uring_regpool_get(p));
		for (int i = 0; i < 4; i++)
			bl_raw_put(rs[i]);
	}
	bl_raw_put(r);
	bl_uring_regpool_destroy(p);
	bl_uring_destroy(u);
	return p && r ? 0 : -ENOMEM;
}

static int a_detach(struct actx *a)
{
	struct bl_uring *u = aring(a);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 8, 4096, 6);
	struct bl_list l, held;
	struct ures r = { 0 };
	struct snap s;
	ssize_t rc;
	int sv[2];

	ck_assert_ptr_nonnull(br);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	bl_list_init(&l);
	bl_list_init(&held);
	bl_list_init(&r.data);
	/* own raws, ring slices, own raws: two runs of ring segments */
	ck_assert_int_eq(bl_list_append(&l, DATA, 100), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(send(sv[1], DATA + 1000 * i, 1000, 0), 1000);
		r.calls = 0;
		ck_assert_int_eq(bl_uring_recv_pooled(u, sv[0], br, false, upcb,
						      &r), 0);
		run_until(u, &r, 1);
		ck_assert_int_eq(r.res, 1000);
		ck_assert_int_eq(bl_list_append_list(&l, &r.data), 0);
		bl_list_clear(&r.data);
	}
	{
		struct bl_ptr p;

		ck_assert_int_eq(bl_ptr_alloc(&p, 50), 0);
		memcpy(bl_ptr_data(&p), DATA + 5000, 50);
		ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	}
	snap_take(&s, &l);
	afail(a);
	rc = bl_list_detach_pooled(&l);
	aok();
	if (rc < 0) {
		ck_assert_int_eq(rc, -ENOMEM);
		snap_check(&s, &l, "detach_pooled");
	} else {
		ck_assert_int_eq(rc, 2000);
		ck_assert_uint_eq(bl_list_length(&l), 2150);
	}
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 8);
	snap_free(&s);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
	return rc < 0 ? (int)rc : 0;
}

static int a_prepare_dio(struct actx *a)
{
	struct bl_list l;
	struct snap s;
	int rc, fd = open(out_path, O_WRONLY);
	size_t mem, off;

	(void)a;
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bl_fd_dio_align(fd, &mem, &off), 0);
	bl_list_init(&l);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(bl_list_append(&l, DATA + i, off), 0);
	/* misaligned slices */
	{
		struct bl_list t;

		bl_list_init(&t);
		ck_assert_int_eq(bl_list_substr_of(&t, &l, 3, off * 7), 0);
		ck_assert_int_eq(bl_list_append(&t, DATA, off), 0);
		bl_list_swap(&t, &l);
		bl_list_clear(&t);
	}
	ck_assert_uint_eq(bl_list_length(&l) % off, 0);
	snap_take(&s, &l);
	afail(a);
	rc = bl_list_prepare_dio(&l, fd);
	aok();
	if (rc < 0) {
		ck_assert_int_eq(rc, -ENOMEM);
		snap_check(&s, &l, "prepare_dio");
	} else {
		ck_assert_int_eq(rc, 1);
		ck_assert_uint_eq(bl_list_length(&l), s.len);
		ck_assert_uint_eq(bl_list_crc32c(&l, 0), s.crc);
		rc = 0;
	}
	snap_free(&s);
	bl_list_clear(&l);
	close(fd);
	return rc;
}

static int a_read_fd(struct actx *a)
{
	struct bl_list l;
	struct snap s;
	ssize_t rc;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, DATA, 10), 0);
	snap_take(&s, &l);
	ck_assert_int_eq(lseek(in_fd, 0, SEEK_SET), 0);
	afail(a);
	rc = bl_list_read_fd(&l, in_fd, SIZE_MAX);
	aok();
	if (rc < 0) {
		ck_assert_int_eq(rc, -ENOMEM);
		snap_check(&s, &l, "read_fd");
	} else {
		ck_assert_int_eq(rc, FLEN);
		ck_assert_uint_eq(bl_list_length(&l), 10 + FLEN);
	}
	snap_free(&s);
	bl_list_clear(&l);
	return rc < 0 ? (int)rc : 0;
}

/* msgr: the codec and a connection's calls */
static int a_encode(struct actx *a)
{
	struct bl_list out, pl;
	struct snap s, sp;
	uint64_t rng = 5;
	int rc;

	bl_list_init(&out);
	bl_list_init(&pl);
	tu_append_segmented(&pl, DATA, 70000, 900, 1, &rng);
	/* leaves less room in @out's append buffer than a frame's 28 bytes:
	 * the encode needs a new one as well as slots */
	ck_assert_int_eq(bl_list_append(&out, DATA, 120), 0);
	snap_take(&s, &out);
	snap_take(&sp, &pl);
	/* a failed encode leaves @out whole: bytes, segments, references */
	afail(a);
	rc = bl_msgr_encode(&out, 7, 9, &pl, a->blocking ? BL_MSGR_ENC_COPY
							 : 0);
	aok();
	if (rc) {
		snap_check(&sp, &pl, "encode payload");
		ck_assert_int_eq(rc, -ENOMEM);
		snap_check(&s, &out, "encode out");
	} else {
		ck_assert_uint_eq(bl_list_length(&out),
				  120 + 70000 + BL_MSGR_OVERHEAD);
	}
	snap_free(&s);
	snap_free(&sp);
	bl_list_clear(&out);
	bl_list_clear(&pl);
	return rc;
}

static int a_parse(struct actx *a)
{
	struct bl_list in, pl;
	struct bl_msgr_frame f;
	struct snap s;
	uint64_t rng = 6;
	int rc;

	bl_list_init(&in);
	bl_list_init(&pl);
	/* a payload of many segments: the frame's list needs chunks */
	tu_append_segmented(&pl, DATA, 30000, 100, 1, &rng);
	ck_assert_int_eq(bl_msgr_encode(&in, 1, 2, &pl, 0), 0);
	bl_list_clear(&pl);
	snap_take(&s, &in);
	bl_msgr_frame_init(&f);
	afail(a);
	rc = bl_msgr_parse(&in, &f, 0);
	aok();
	if (rc != 1) {
		ck_assert_int_eq(rc, -ENOMEM);
		snap_check(&s, &in, "parse");
		ck_assert_uint_eq(bl_list_length(&f.payload), 0);
	} else {
		ck_assert_uint_eq(bl_list_length(&f.payload), 30000);
		ck_assert_uint_eq(bl_list_length(&in), 0);
		rc = 0;
	}
	bl_msgr_frame_release(&f);
	bl_list_clear(&in);
	snap_free(&s);
	return rc;
}

static int a_conn(struct actx *a, bool send_too)
{
	struct bl_msgr_conn_opts o = { 0 };
	struct bl_uring *u = aring(a);
	struct bl_msgr_conn *c;
	struct mres m = { 0 };
	struct bl_list pl;
	int sv[2], rc = 0;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	o.on_frame = m_frame;
	o.on_close = m_close;
	o.arg = &m;
	o.nbufs = 8;
	o.buf_size = 4096;
	o.log = m_log;
	bl_list_init(&pl);
	ck_assert_int_eq(bl_list_append(&pl, DATA, 3000), 0);
	if (!send_too)
		afail(a);
	c = bl_msgr_conn_new(u, sv[0], &o);
	if (!send_too) {
		aok();
		if (!c) {
			/* the fd is still the caller's */
			ck_assert_int_ge(fcntl(sv[0], F_GETFD), 0);
			rc = -ENOMEM;
			close(sv[0]);
			goto out;
		}
	}
	ck_assert_ptr_nonnull(c);
	if (send_too) {
		afail(a);
		rc = bl_msgr_send(c, 3, &pl, m_sent, &m);
		for (int i = 0; !rc && i < 100 && !m.sent && !m.closed; i++)
			bl_uring_run(u, 1, 100);
		aok();
		if (rc) {
			ck_assert_int_eq(rc, -ENOMEM);
			ck_assert_int_eq(m.sent, 0);
		} else {
			/* sent, or the connection died of -ENOMEM */
			ck_assert_int_eq(m.sent, 1);
			if (m.send_res)
				rc = m.send_res;
			ck_assert(m.send_res == 0 || m.send_res == -ENOMEM ||
				  m.send_res == -ECANCELED);
			if (rc)
				rc = -ENOMEM;
		}
	}
	bl_msgr_conn_close(c, 0, NULL);
	for (int i = 0; i < 100 && !m.closed; i++)
		bl_uring_run(u, 1, 100);
	ck_assert_int_eq(m.closed, 1);
out:
	close(sv[1]);
	bl_list_clear(&pl);
	bl_uring_destroy(u);
	return rc;
}

static int a_conn_new(struct actx *a) { return a_conn(a, false); }
static int a_conn_send(struct actx *a) { return a_conn(a, true); }

static int a_conn_poll(struct actx *a)
{
	struct bl_uring *u = aring(a);
	struct bl_msgr_conn *c;
	struct mpoll p = { 0 };
	unsigned char *buf;
	int sv[2], rc = 0;

	c = poll_conn(u, sv, &p, &buf);
	ck_assert_ptr_nonnull(c);
	afail(a);
	for (int i = 0; i < 100 && !p.m.closed; i++)
		bl_uring_run(u, 1, 100);
	aok();
	/* every frame, then the peer's end; or out of memory */
	ck_assert_int_eq(p.m.closed, 1);
	if (p.m.close_err) {
		ck_assert_int_eq(p.m.close_err, -ENOMEM);
		rc = -ENOMEM;
	} else {
		ck_assert_int_eq(p.m.frames, POLL_FRAMES);
	}
	close(sv[1]);
	free(buf);
	bl_uring_destroy(u);
	return rc;
}

static int a_server(struct actx *a)
{
	struct bl_msgr_conn_opts o = { 0 };
	struct bl_uring *u = aring(a);
	struct bl_msgr_server *s;
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0);

	ck_assert_int_ge(lfd, 0);
	o.nbufs = 8;
	o.buf_size = 4096;
	o.log = m_log;
	afail(a);
	s = bl_msgr_server_new(u, lfd, &o);
	aok();
	bl_msgr_server_destroy(s);
	bl_uring_destroy(u);
	close(lfd);
	return s ? 0 : -ENOMEM;
}

struct acase {
	const char *name;
	int (*op)(struct actx *);
	int backends;	/* 1 blocking, 2 io_uring, 3 both */
};

static const struct acase acases[] = {
	{ "alloc uring_create", a_create, 3 },
	{ "alloc uring_attach", a_attach, 2 },
	{ "alloc uring_write+run", a_write, 3 },
	{ "alloc uring_read+run", a_read, 3 },
	{ "alloc uring_send+run", a_send, 3 },
	{ "alloc uring_recv+run", a_recv, 3 },
	{ "alloc uring_recv_pooled+run", a_pooled, 3 },
	{ "alloc uring_bufring_create", a_bufring, 3 },
	{ "alloc uring_regpool_create+get", a_regpool, 3 },
	{ "alloc list_detach_pooled", a_detach, 3 },
	{ "alloc list_prepare_dio", a_prepare_dio, 1 },
	{ "alloc list_read_fd", a_read_fd, 1 },
	{ "alloc msgr_encode", a_encode, 3 },
	{ "alloc msgr_parse", a_parse, 1 },
	{ "alloc msgr_conn_new", a_conn_new, 3 },
	{ "alloc msgr_send+run", a_conn_send, 3 },
	{ "alloc msgr_server_new", a_server, 3 },
	{ "alloc msgr busy-poll reads", a_conn_poll, 3 },
};

/* What runs here: every case on each back end it has (main fills it). */
#define NACASE (sizeof(acases) / sizeof(acases[0]))
static struct apair {
	const struct acase *c;
	bool blocking;
} apairs[2 * NACASE];
static int napairs;

START_TEST(alloc_fault)
{
	/* every allocation of each operation fails in turn (once, and from
	 * then on): -ENOMEM or NULL with everything as it was, no leak */
	const struct acase *c = apairs[_i].c;
	bool blocking = apairs[_i].blocking;
	char name[128];
	unsigned long pts;

	/* the codec has no back end: the flag picks copied or shared */
	snprintf(name, sizeof(name), "%s%s", c->name,
		 c->op == a_encode ? (blocking ? " (copied)" : " (shared)")
		 : c->backends == 3 ? (blocking ? " (blocking)" : " (io_uring)")
				    : "");
	pts = alloc_loop(name, blocking, c->op);
	ck_assert_msg(pts > 0, "%s never allocated", name);
	report(name, pts);
}
END_TEST

/* Fills apairs: every case on each back end it has, as main found them. */
static int alloc_cases(void)
{
	for (unsigned i = 0; i < NACASE; i++)
		for (int b = 1; b >= 0; b--)
			if ((acases[i].backends & (b ? 1 : 2)) &&
			    (b || have_uring || acases[i].op == a_encode))
				apairs[napairs++] = (struct apair){ &acases[i],
								    b };
	return napairs;
}

static Suite *faults_suite(void)
{
	const struct tu_loop alloc_loops[] = {
		{ alloc_fault, 0, alloc_cases() },
		{ NULL, 0, 0 }
	};
	const struct tu_group groups[] = {
		TU_GROUP("allocations", NULL, .loops = alloc_loops,
			 .timeout = 120),
		TU_GROUP_END
	};

	return tu_suite("alloc_failures_io", groups);
}

int main(void)
{
	return fs_main("test_alloc_failures_io", faults_suite);
}
