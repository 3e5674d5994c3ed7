/* SPDX-License-Identifier: MIT */
/*
 * faultsuite.c - what the fault suites (test_syscall_faults_*.c,
 * test_alloc_failures_io.c) share: the data and files they write and
 * read, the count of fault points by kind (in shared memory, since Check
 * forks each test), snapshots of a caller's list that a failure must
 * leave as it was, and one uring operation of each kind set up, run,
 * faulted and checked (struct uctx).  Never installed.
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

unsigned char DATA[DATA_LEN];
char dir_path[4096], in_path[4200], out_path[4200];
int in_fd = -1;
bool have_uring;

const char *const kind_names[K_NKIND] = {
	"EINTR", "EAGAIN", "EIO", "ENOSPC", "ECONNRESET", "short"
};
const int kind_err[K_NKIND] = {
	EINTR, EAGAIN, EIO, ENOSPC, ECONNRESET, 0
};

const char *const pkind_names[P_NKIND] = {
	"EINTR", "EAGAIN", "EIO", "ENOSPC", "ECONNRESET", "short",
	"ENOMEM (allocator)", "other (setup/register/enter errnos, NULL probe)"
};
struct points *points_total;

void point(int kind)
{
	points_total->by[kind]++;
}

void report(const char *what, unsigned long n)
{
	points_total->total += n;
	printf("fault points: %-44s %6lu\n", what, n);
	fflush(stdout);
}

/* ---- helpers ------------------------------------------------------------- */

unsigned nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

int64_t live_bytes(void)
{
	struct tu_alloc_stats st;

	tu_alloc_stats(&st);
	return st.live_bytes;
}

/* NSEG segments of 1..2000 bytes, every one its own raw, from DATA */
void make_list(struct bl_list *l, size_t *total)
{
	uint64_t rng = 42;
	size_t at = 0;

	bl_list_init(l);
	for (unsigned i = 0; i < NSEG; i++) {
		size_t n = 1 + tu_rand(&rng) % 2000;
		struct bl_ptr p;

		TU_REQUIRE(bl_ptr_alloc(&p, n) == 0);
		memcpy(bl_ptr_data(&p), DATA + at, n);
		TU_REQUIRE(bl_list_append_ptr_move(l, &p) == 0);
		at += n;
	}
	*total = at;
}

void snap_take(struct snap *s, const struct bl_list *l)
{
	struct bl_ptr p = BL_PTR_INIT;

	s->len = bl_list_length(l);
	s->nb = bl_list_num_buffers(l);
	s->crc = bl_list_crc32c(l, 0);
	s->iov = calloc(s->nb + 1, sizeof(*s->iov));
	s->nref = calloc(s->nb + 1, sizeof(*s->nref));
	ck_assert(s->iov && s->nref);
	ck_assert_int_eq(bl_list_to_iovec(l, 0, s->iov, (int)s->nb),
			 (int)s->nb);
	for (unsigned i = 0; i < s->nb; i++) {
		TU_REQUIRE(bl_list_get_ptr(l, i, &p) == 0);
		s->nref[i] = bl_raw_nref(p.raw) - 1;
		bl_ptr_release(&p);
	}
}

void snap_check(const struct snap *s, const struct bl_list *l,
		const char *what)
{
	struct iovec *iov = calloc(s->nb + 1, sizeof(*iov));
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_ptr_nonnull(iov);
	ck_assert_msg(bl__list_validate(l) == 0, "%s: list invalid", what);
	ck_assert_msg(bl_list_length(l) == s->len &&
		      bl_list_num_buffers(l) == s->nb,
		      "%s: list changed: %zu bytes in %u -> %zu in %u", what,
		      s->len, s->nb, bl_list_length(l),
		      bl_list_num_buffers(l));
	ck_assert_int_eq(bl_list_to_iovec(l, 0, iov, (int)s->nb), (int)s->nb);
	/* no ck_assert per segment: Check records each passed one with a
	 * write(2), and the lists have NSEG segments */
	for (unsigned i = 0; i < s->nb; i++) {
		if (iov[i].iov_base != s->iov[i].iov_base ||
		    iov[i].iov_len != s->iov[i].iov_len)
			ck_abort_msg("%s: segment %u moved", what, i);
		TU_REQUIRE(bl_list_get_ptr(l, i, &p) == 0);
		if (bl_raw_nref(p.raw) - 1 != s->nref[i])
			ck_abort_msg("%s: segment %u nref %u -> %u", what, i,
				     s->nref[i], bl_raw_nref(p.raw) - 1);
		bl_ptr_release(&p);
	}
	ck_assert_msg(bl_list_crc32c(l, 0) == s->crc, "%s: bytes changed",
		      what);
	free(iov);
}

void snap_free(struct snap *s)
{
	free(s->iov);
	free(s->nref);
}

/* Reads back @path and compares it with @want[0..len). */
void file_is(const char *path, const void *want, size_t len,
	     const char *what)
{
	struct stat st;
	unsigned char *got;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert_msg((size_t)st.st_size == len, "%s: file has %lld bytes, "
		      "expected %zu", what, (long long)st.st_size, len);
	got = malloc(len + 1);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(pread(fd, got, len, 0), (ssize_t)len);
	ck_assert_msg(len == 0 || memcmp(got, want, len) == 0,
		      "%s: file bytes differ", what);
	free(got);
	close(fd);
}

void truncate_out(void)
{
	int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

/* Plans fault @k at call @n of @s: once, except the hard errors. */
void plan_kind(enum fs_sym s, unsigned long n, enum kind k, size_t sk)
{
	fs_reset();
	if (k == K_SHORT)
		fs_plan(s, n, 1, FS_SHORT, 0, sk);
	else
		fs_plan(s, n, 1, FS_FAIL, kind_err[k], 0);
}

/* ---- the uring layer's operations, on both back ends ------------------- */

void ucb(void *arg, ssize_t res, struct bl_list *data)
{
	struct ures *r = arg;

	r->calls++;
	r->res = res;
	if (data)
		bl_list_claim_append(&r->data, data);
}

void upcb(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	struct ures *r = arg;

	r->calls++;
	r->res = res;
	r->more = more;
	bl_list_claim_append(&r->data, data);
}

struct bl_uring *ring_new(bool blocking)
{
	struct bl_uring_params p = { .force_blocking = blocking };
	struct bl_uring *u = bl_uring_create(&p);

	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(bl_uring_backend(u),
			 blocking ? BL_URING_BLOCKING : BL_URING_IO_URING);
	return u;
}

/* Runs @u until @r's callback ran (with the fault plan still armed). */
void run_until(struct bl_uring *u, struct ures *r, int want_calls)
{
	for (int i = 0; i < 1000 && r->calls < want_calls; i++) {
		int rc = bl_uring_run(u, 1, 1000);

		/* a failed submit or wait leaves the requests queued */
		ck_assert_msg(rc >= 0 || rc == -EAGAIN || rc == -EBUSY ||
			      rc == -EIO || rc == -EINTR,
			      "bl_uring_run: %d", rc);
	}
	/* (a multishot receive may deliver several chunks in one run) */
	ck_assert_int_ge(r->calls, want_calls);
}

void ring_start(struct bl_list *l, size_t *total, struct ures *r)
{
	tu_alloc_install(0, 0);
	make_list(l, total);
	bl_list_init(&r->data);
}

/* @u, whatever back end it got, writes @l (@total bytes) to out_path. */
void ring_writes(struct bl_uring *u, struct bl_list *l,
		 struct ures *r, size_t total, const char *what)
{
	int fd;

	truncate_out();
	fd = open(out_path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	r->calls = 0;
	ck_assert_int_eq(bl_uring_write(u, fd, 0, l, ucb, r), 0);
	run_until(u, r, 1);
	ck_assert_int_eq(r->res, (ssize_t)total);
	close(fd);
	file_is(out_path, DATA, total, what);
}

/* Reads everything waiting on the peer socket or pipe (non-blocking). */
size_t drain_peer(int fd, unsigned char *buf, size_t cap)
{
	static unsigned char scratch[65536];
	size_t got = 0;

	for (;;) {
		void *to = buf ? buf + got : scratch;
		size_t len = buf ? cap - got : sizeof(scratch);
		/* the peer pipe is non-blocking; sockets may not be */
		ssize_t n = recv(fd, to, len, MSG_DONTWAIT);

		if (n < 0 && errno == ENOTSOCK)
			n = read(fd, to, len);

		if (n <= 0)
			break;
		if (buf)
			got += (size_t)n;
		if (buf && got == cap)
			break;
	}
	return got;
}

/* Sets up the files, sockets and ring the case needs (no fault armed). */
void uctx_open(struct uctx *x, const struct ucase *c)
{
	memset(x, 0, sizeof(*x));
	x->c = c;
	x->fd = x->peer = -1;
	x->u = ring_new(c->blocking);
	bl_list_init(&x->l);
	switch (c->op) {
	case U_FSYNC:
	case U_FDATASYNC:
	case U_SYNC_RANGE:
		break;
	case U_WRITE:
	case U_WRITE_POS:
	case U_WRITE_FDSYNC:
	case U_WRITE_DSYNC:
		make_list(&x->l, &x->total);
		x->want = DATA;
		x->want_len = x->total;
		break;
	case U_READ:
		x->fd = open(in_path, O_RDONLY);
		ck_assert_int_ge(x->fd, 0);
		x->want = DATA;
		x->want_len = FLEN;
		break;
	case U_SEND: {
		uint64_t rng = 9;
		int sv[2];

		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		x->fd = sv[0];
		x->peer = sv[1];
		tu_append_segmented(&x->l, DATA, SOCK_LEN, 700, 1, &rng);
		x->total = SOCK_LEN;
		x->want = DATA;
		x->want_len = SOCK_LEN;
		break;
	}
	case U_PIPE: {
		uint64_t rng = 10;
		int pv[2];

		/* 48 KiB fit a pipe's 64 KiB */
		ck_assert_int_eq(pipe(pv), 0);
		x->fd = pv[1];
		x->peer = pv[0];
		tu_append_segmented(&x->l, DATA, SOCK_LEN, 700, 1, &rng);
		x->total = SOCK_LEN;
		x->want = DATA;
		x->want_len = SOCK_LEN;
		break;
	}
	case U_RECV:
	case U_POOLED:
	case U_POOLED_MULTI: {
		int sv[2];

		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		x->fd = sv[0];
		x->peer = sv[1];
		x->want = DATA + 333;
		x->want_len = RECV_LEN;
		if (c->op != U_RECV) {
			x->br = bl_uring_bufring_create(x->u, UBUFS, UBUF_SIZE,
							7);
			ck_assert_ptr_nonnull(x->br);
		}
		break;
	}
	}
	if (x->peer >= 0)
		fcntl(x->peer, F_SETFL, O_NONBLOCK);
}

void uctx_close(struct uctx *x)
{
	bl_uring_bufring_destroy(x->br);
	bl_uring_destroy(x->u);
	bl_list_clear(&x->l);
	if (x->fd >= 0)
		close(x->fd);
	if (x->peer >= 0)
		close(x->peer);
}

/*
 * One operation, armed; returns its result (the callback's, or the
 * submit call's error).  For receives, @data gets what arrived.
 */
ssize_t urun(struct uctx *x, struct bl_list *data)
{
	struct ures r = { 0 };
	int rc = 0, fd;

	bl_list_init(&r.data);
	switch (x->c->op) {
	case U_FSYNC:
	case U_FDATASYNC:
	case U_SYNC_RANGE:
		fd = open(out_path, O_WRONLY | O_CREAT, 0600);
		ck_assert_int_ge(fd, 0);
		fs_arm(true);
		rc = x->c->op == U_SYNC_RANGE
		     ? bl_uring_sync_range(x->u, fd, 0, 0,
					   SYNC_FILE_RANGE_WRITE, NULL, ucb,
					   &r)
		     : bl_uring_fsync(x->u, fd, x->c->op == U_FDATASYNC ?
				      BL_URING_FSYNC_DATASYNC : 0, NULL, ucb,
				      &r);
		if (!rc)
			run_until(x->u, &r, 1);
		fs_arm(false);
		close(fd);
		break;
	case U_WRITE_FDSYNC:
	case U_WRITE_DSYNC: {
		struct bl_uring_opts o = { 0 };

		if (x->c->op == U_WRITE_FDSYNC)
			o.sync = BL_URING_SYNC_FDATASYNC;
		else
			o.rw_flags = RWF_DSYNC;
		truncate_out();
		fd = open(out_path, O_WRONLY);
		ck_assert_int_ge(fd, 0);
		fs_arm(true);
		rc = bl_uring_write_opts(x->u, fd, 0, &x->l, &o, ucb, &r);
		if (!rc)
			run_until(x->u, &r, 1);
		fs_arm(false);
		close(fd);
		break;
	}
	case U_WRITE:
	case U_WRITE_POS:
		truncate_out();
		fd = open(out_path, O_WRONLY);
		ck_assert_int_ge(fd, 0);
		fs_arm(true);
		rc = bl_uring_write(x->u, fd, x->c->op == U_WRITE ? 0 : -1,
				    &x->l, ucb, &r);
		if (!rc)
			run_until(x->u, &r, 1);
		fs_arm(false);
		close(fd);
		break;
	case U_READ:
		fs_arm(true);
		rc = bl_uring_read(x->u, x->fd, 0, FLEN, 0, ucb, &r);
		if (!rc)
			run_until(x->u, &r, 1);
		fs_arm(false);
		break;
	case U_PIPE:
		fs_arm(true);
		rc = bl_uring_write(x->u, x->fd, -1, &x->l, ucb, &r);
		if (!rc)
			run_until(x->u, &r, 1);
		fs_arm(false);
		break;
	case U_SEND:
		fs_arm(true);
		rc = bl_uring_send(x->u, x->fd, &x->l, 0, ucb, &r);
		if (!rc)
			run_until(x->u, &r, 1);
		/* zero-copy notifications may still be due */
		while (!rc && bl__uring_retiring(x->u))
			bl_uring_run(x->u, 0, 100);
		fs_arm(false);
		break;
	case U_RECV:
	case U_POOLED:
	case U_POOLED_MULTI:
		drain_peer(x->fd, NULL, 0);
		ck_assert_int_eq(send(x->peer, x->want, x->want_len, 0),
				 (ssize_t)x->want_len);
		fs_arm(true);
		if (x->c->op == U_RECV)
			rc = bl_uring_recv(x->u, x->fd, 65536, ucb, &r);
		else
			rc = bl_uring_recv_pooled(x->u, x->fd, x->br,
						  x->c->op == U_POOLED_MULTI,
						  upcb, &r);
		if (!rc)
			run_until(x->u, &r, 1);
		if (x->c->op == U_POOLED_MULTI) {
			/* the rest of the chunks, then stop it: shut the
			 * peer's writing side so the receive ends (res 0) */
			while (!rc && r.more && r.res > 0 &&
			       bl_list_length(&r.data) < x->want_len)
				run_until(x->u, &r, r.calls + 1);
			if (!rc && r.more) {
				int calls;

				shutdown(x->peer, SHUT_WR);
				do {
					calls = r.calls;
					run_until(x->u, &r, calls + 1);
				} while (r.more);
				ck_assert_int_le(r.res, 0);
				/* the final result: chunks, or the error */
				if (r.res == 0)
					r.res = (ssize_t)bl_list_length(&r.data);
			}
		}
		fs_arm(false);
		break;
	}
	if (rc) {
		bl_list_clear(&r.data);
		return rc;
	}
	/* one callback for a one-shot operation, never a second one */
	if (x->c->op != U_POOLED_MULTI) {
		ck_assert_int_ge(bl_uring_run(x->u, 0, 0), 0);
		ck_assert_int_eq(r.calls, 1);
	}
	ck_assert_msg(r.res >= 0 || bl_list_length(&r.data) == 0 ||
		      x->c->op == U_POOLED_MULTI,
		      "%s: data with an error", x->c->name);
	if (data)
		bl_list_claim_append(data, &r.data);
	bl_list_clear(&r.data);
	return r.res;
}

/* The multishot receive's socket was shut: make a fresh pair. */
void renew_socket(struct uctx *x)
{
	int sv[2];

	close(x->fd);
	close(x->peer);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	x->fd = sv[0];
	x->peer = sv[1];
	fcntl(x->peer, F_SETFL, O_NONBLOCK);
}

/* Checks a successful run's result; @data: what a read or receive got. */
void ucheck_ok(struct uctx *x, ssize_t res, struct bl_list *data,
	       const char *what)
{
	unsigned char *buf;
	size_t got;

	switch (x->c->op) {
	case U_FSYNC:
	case U_FDATASYNC:
	case U_SYNC_RANGE:
		ck_assert_msg(res == 0, "%s: res %zd", what, res);
		ck_assert_uint_eq(bl_list_length(data), 0);
		break;
	case U_WRITE:
	case U_WRITE_POS:
	case U_WRITE_FDSYNC:
	case U_WRITE_DSYNC:
		ck_assert_msg(res == (ssize_t)x->total, "%s: res %zd", what,
			      res);
		file_is(out_path, x->want, x->want_len, what);
		break;
	case U_READ:
		ck_assert_msg(res == FLEN, "%s: res %zd", what, res);
		tu_assert_list_eq(data, x->want, x->want_len);
		break;
	case U_SEND:
	case U_PIPE:
		ck_assert_msg(res == (ssize_t)x->total, "%s: res %zd", what,
			      res);
		buf = malloc(x->want_len + 1);
		ck_assert_ptr_nonnull(buf);
		got = drain_peer(x->peer, buf, x->want_len + 1);
		ck_assert_msg(got == x->want_len &&
			      memcmp(buf, x->want, got) == 0,
			      "%s: peer got %zu bytes", what, got);
		free(buf);
		break;
	case U_RECV:
	case U_POOLED:
	case U_POOLED_MULTI:
		/* one receive may take fewer bytes than were sent */
		ck_assert_msg(res > 0 && (size_t)res <= x->want_len,
			      "%s: res %zd", what, res);
		tu_assert_list_eq(data, x->want, (size_t)res);
		break;
	}
	bl_list_clear(data);
	if (x->c->op == U_POOLED_MULTI)
		renew_socket(x);
}

/* ---- the messenger's callbacks, and a busy polling connection --------- */

void m_frame(void *arg, struct bl_msgr_conn *c, struct bl_msgr_frame *f)
{
	struct mres *m = arg;

	(void)c;
	(void)f;
	m->frames++;
}

void m_close(void *arg, struct bl_msgr_conn *c, int err,
	     const char *reason)
{
	struct mres *m = arg;

	(void)c;
	(void)reason;
	m->closed++;
	m->close_err = err;
}

void m_sent(void *arg, int res)
{
	struct mres *m = arg;

	m->sent++;
	m->send_res = res;
}

void m_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	(void)arg;
	(void)c;
	(void)msg;
}

static void mp_frame(void *arg, struct bl_msgr_conn *c,
		     struct bl_msgr_frame *f)
{
	struct mpoll *p = arg;

	m_frame(&p->m, c, f);
	if (p->peer < 0)
		return;
	ck_assert(write(p->peer, p->rest, p->restn) == (ssize_t)p->restn);
	shutdown(p->peer, SHUT_WR);
	p->peer = -1;
	if (p->fault) {
		fs_reset();
		fs_plan(FS_RECV, 1, 1, FS_FAIL, p->fault, 0);
		fs_arm(true);
	}
}

/* POLL_FRAMES frames of 100 bytes into a new buffer; *@first: frame 1's
 * length, *@n: all of them. */
unsigned char *poll_stream(size_t *first, size_t *n)
{
	struct bl_list out, pl;
	unsigned char *b;

	bl_list_init(&out);
	bl_list_init(&pl);
	ck_assert_int_eq(bl_list_append(&pl, DATA, 100), 0);
	for (uint64_t s = 1; s <= POLL_FRAMES; s++) {
		ck_assert_int_eq(bl_msgr_encode(&out, 1, s, &pl, 0), 0);
		if (s == 1)
			*first = bl_list_length(&out);
	}
	*n = bl_list_length(&out);
	b = tu_flatten(&out);
	bl_list_clear(&out);
	bl_list_clear(&pl);
	return b;
}

/* A busy polling connection over @sv[0], @sv[1] its raw peer. */
struct bl_msgr_conn *poll_conn(struct bl_uring *u, int sv[2],
			       struct mpoll *p, unsigned char **buf)
{
	struct bl_msgr_conn_opts o = { 0 };
	size_t first, n;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	*buf = poll_stream(&first, &n);
	ck_assert(write(sv[1], *buf, first) == (ssize_t)first);
	p->peer = sv[1];
	p->rest = *buf + first;
	p->restn = n - first;
	o.on_frame = mp_frame;
	o.on_close = m_close;
	o.arg = p;
	o.nbufs = 8;
	o.buf_size = 4096;
	o.log = m_log;
	o.busy_poll_us = 100000;
	return bl_msgr_conn_new(u, sv[0], &o);
}


/* ---- main --------------------------------------------------------------- */

int fs_main(const char *name, Suite *(*suite)(void))
{
	const char *tmp = getenv("TMPDIR");
	struct bl_uring *u;
	uint64_t rng = 0xfa17;
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	points_total = mmap(NULL, sizeof(*points_total),
			    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
			    -1, 0);
	if (points_total == MAP_FAILED)
		return EXIT_FAILURE;
	tu_fill(DATA, DATA_LEN, &rng);
	/* files on the build tree's file system (tmpfs would hide
	 * O_DIRECT alignment), else TMPDIR */
	snprintf(dir_path, sizeof(dir_path), "%s/bl_faults.XXXXXX",
		 tmp && *tmp ? tmp : ".");
	if (!mkdtemp(dir_path)) {
		perror(dir_path);
		return EXIT_FAILURE;
	}
	snprintf(in_path, sizeof(in_path), "%s/in", dir_path);
	snprintf(out_path, sizeof(out_path), "%s/out", dir_path);
	in_fd = open(in_path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (in_fd < 0 || write(in_fd, DATA, FLEN) != FLEN) {
		perror(in_path);
		return EXIT_FAILURE;
	}
	close(open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600));
	u = bl_uring_create(NULL);
	have_uring = u && bl_uring_backend(u) == BL_URING_IO_URING;
	if (!have_uring)
		printf("%s: io_uring back end not available here (%s): "
		       "only the blocking back end is tested\n", name,
		       u ? bl_uring_backend_reason(u) : "no memory");
	bl_uring_destroy(u);
	ret = tu_run(suite());
	close(in_fd);
	unlink(in_path);
	unlink(out_path);
	rmdir(dir_path);
	for (int k = 0; k < P_NKIND; k++)
		printf("fault points by kind: %-48s %6lu\n", pkind_names[k],
		       (unsigned long)points_total->by[k]);
	printf("fault points: %lu\n", (unsigned long)points_total->total);
	return ret;
}
