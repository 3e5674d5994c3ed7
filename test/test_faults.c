/* SPDX-License-Identifier: MIT */
/*
 * test_faults.c - what the io, uring, msgr (and io's file helpers) do when
 * the system says no.
 *
 * System calls and liburing entry points are wrapped at link time
 * (faultsys.h); the io_uring back end's own I/O is faulted at its
 * completion hook.  For every public operation and every call it makes
 * (found by a clean counting run first), the Nth call is made to:
 *   - fail with EINTR once: retried, the result is exact;
 *   - fail with EAGAIN once: retried after poll by the uring layer; the
 *     blocking io layer reports it (bytes done / bytes read so far);
 *   - fail with EIO, ENOSPC (files) or ECONNRESET (sockets): the call
 *     returns the -errno (a write reports the bytes that reached the fd),
 *     the caller's list is as it was, no byte of memory and no descriptor
 *     leaks, and the same call without a fault then succeeds;
 *   - move only a few bytes (a short count): resumed, the result is exact.
 * Then every allocation of the uring, msgr and io operations that
 * test_failure.c does not cover fails in turn (tu_alloc_fail_at), each
 * time with the same checks.  The suite prints how many fault points it
 * went through ("fault points: N").
 *
 * Faults at an io_uring completion can only be told apart from reality
 * where repeating the request is harmless: requests at a file offset.
 * A socket's bytes are gone once the kernel completed them, so sockets
 * on the io_uring back end get hard errors only (the blocking back end,
 * whose system calls are wrapped before they happen, gets everything).
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
#include "uring_probe.h"
#include "testutil.h"

#define DATA_LEN	((3u << 20) + 4096)
#define FLEN		((2u << 20) + (1u << 19) + 123)	/* the read file */
#define NSEG		1500	/* more than IOV_MAX: two batches */
#define SOCK_LEN	(48u << 10)	/* fits an AF_UNIX socket buffer */

static unsigned char DATA[DATA_LEN];
static char dir_path[4096], in_path[4200], out_path[4200];
static int in_fd = -1;
static bool have_uring;

/* fault points, by errno / kind, for the coverage table */
enum kind { K_EINTR, K_EAGAIN, K_EIO, K_ENOSPC, K_ECONNRESET, K_SHORT,
	    K_NKIND };
static const char *const kind_names[K_NKIND] = {
	"EINTR", "EAGAIN", "EIO", "ENOSPC", "ECONNRESET", "short"
};
static const int kind_err[K_NKIND] = {
	EINTR, EAGAIN, EIO, ENOSPC, ECONNRESET, 0
};
#define KB(k) (1u << (k))
#define K_FILE (KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) | KB(K_ENOSPC) | \
		KB(K_SHORT))
#define K_SOCK (KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) | \
		KB(K_ECONNRESET) | KB(K_SHORT))
#define K_HARD (KB(K_EIO) | KB(K_ECONNRESET))

/*
 * Counted in shared memory: Check runs each test in a forked child (unless
 * CK_FORK=no), and main prints the sum of them all, by kind of fault.
 */
enum { P_ENOMEM = K_NKIND, P_OTHER, P_NKIND };
static const char *const pkind_names[P_NKIND] = {
	"EINTR", "EAGAIN", "EIO", "ENOSPC", "ECONNRESET", "short",
	"ENOMEM (allocator)", "other (setup/register/enter errnos, NULL probe)"
};
struct points {
	_Atomic unsigned long total;
	_Atomic unsigned long by[P_NKIND];
};
static struct points *points_total;

static void point(int kind)
{
	points_total->by[kind]++;
}

static void report(const char *what, unsigned long n)
{
	points_total->total += n;
	printf("fault points: %-44s %6lu\n", what, n);
	fflush(stdout);
}

/* ---- helpers ------------------------------------------------------------- */

static unsigned nfds(void)
{
	DIR *d = opendir("/proc/self/fd");
	unsigned n = 0;

	ck_assert_ptr_nonnull(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static int64_t live_bytes(void)
{
	struct tu_alloc_stats st;

	tu_alloc_stats(&st);
	return st.live_bytes;
}

/* NSEG segments of 1..2000 bytes, every one its own raw, from DATA */
static void make_list(struct bl_list *l, size_t *total)
{
	uint64_t rng = 42;
	size_t at = 0;

	bl_list_init(l);
	for (unsigned i = 0; i < NSEG; i++) {
		size_t n = 1 + tu_rand(&rng) % 2000;
		struct bl_ptr p;

		ck_assert_int_eq(bl_ptr_alloc(&p, n), 0);
		memcpy(bl_ptr_data(&p), DATA + at, n);
		ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
		at += n;
	}
	*total = at;
}

/* What a caller's list looked like: bytes, segments, reference counts. */
struct snap {
	size_t len;
	unsigned nb;
	uint32_t crc;
	struct iovec *iov;
	unsigned *nref;
};

static void snap_take(struct snap *s, const struct bl_list *l)
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
		ck_assert_int_eq(bl_list_get_ptr(l, i, &p), 0);
		s->nref[i] = bl_raw_nref(p.raw) - 1;
		bl_ptr_release(&p);
	}
}

static void snap_check(const struct snap *s, const struct bl_list *l,
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
	for (unsigned i = 0; i < s->nb; i++) {
		ck_assert_msg(iov[i].iov_base == s->iov[i].iov_base &&
			      iov[i].iov_len == s->iov[i].iov_len,
			      "%s: segment %u moved", what, i);
		ck_assert_int_eq(bl_list_get_ptr(l, i, &p), 0);
		ck_assert_msg(bl_raw_nref(p.raw) - 1 == s->nref[i],
			      "%s: segment %u nref %u -> %u", what, i,
			      s->nref[i], bl_raw_nref(p.raw) - 1);
		bl_ptr_release(&p);
	}
	ck_assert_msg(bl_list_crc32c(l, 0) == s->crc, "%s: bytes changed",
		      what);
	free(iov);
}

static void snap_free(struct snap *s)
{
	free(s->iov);
	free(s->nref);
}

/* Reads back @path and compares it with @want[0..len). */
static void file_is(const char *path, const void *want, size_t len,
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

static void truncate_out(void)
{
	int fd = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	close(fd);
}

/* Plans fault @k at call @n of @s: once, except the hard errors. */
static void plan_kind(enum fs_sym s, unsigned long n, enum kind k, size_t sk)
{
	fs_reset();
	if (k == K_SHORT)
		fs_plan(s, n, 1, FS_SHORT, 0, sk);
	else
		fs_plan(s, n, 1, FS_FAIL, kind_err[k], 0);
}

/* ---- 1. the blocking io layer ------------------------------------------- */

struct wcase {
	const char *name;
	int op;			/* 0 write_fd, 1 pwrite, 2 write_file */
	enum fs_sym sym;
	unsigned kinds;
};

static const struct wcase wcases[] = {
	{ "write_fd/writev", 0, FS_WRITEV, K_FILE },
	{ "pwrite/pwritev", 1, FS_PWRITEV, K_FILE },
	{ "write_file/open", 2, FS_OPEN, KB(K_EINTR) | KB(K_EIO) |
					 KB(K_ENOSPC) },
	{ "write_file/writev", 2, FS_WRITEV, KB(K_EINTR) | KB(K_EIO) |
					     KB(K_ENOSPC) | KB(K_SHORT) },
	{ "write_file/fsync", 2, FS_FSYNC, KB(K_EINTR) | KB(K_EIO) |
					   KB(K_ENOSPC) },
	{ "write_file/close", 2, FS_CLOSE, KB(K_EIO) | KB(K_ENOSPC) },
};

#define POFF 4096

/* One armed run; returns the call's result, *done the bytes reported. */
static int wrun(const struct wcase *c, const struct bl_list *l, size_t *done)
{
	int fd = -1, rc;

	truncate_out();
	if (c->op != 2) {
		fd = open(out_path, O_WRONLY);
		ck_assert_int_ge(fd, 0);
	}
	*done = (size_t)-1;
	fs_arm(true);
	if (c->op == 0)
		rc = bl_list_write_fd(l, fd, done);
	else if (c->op == 1)
		rc = bl_list_pwrite(l, fd, POFF, done);
	else
		rc = bl_list_write_file(l, out_path, 0600);
	fs_arm(false);
	if (fd >= 0)
		close(fd);
	return rc;
}

START_TEST(io_write)
{
	/* every write call of every write operation fails or falls short
	 * in turn: retried or reported exactly, the file holds what was
	 * reported, the list is untouched, and a clean retry succeeds */
	const struct wcase *c = &wcases[_i];
	struct bl_list l;
	struct snap s;
	unsigned char *want;
	unsigned long ncalls, pts = 0;
	size_t total, done;
	unsigned fds0;
	int rc;

	tu_alloc_install(0, 0);
	make_list(&l, &total);
	snap_take(&s, &l);
	want = calloc(1, total + POFF);
	ck_assert_ptr_nonnull(want);
	memcpy(want + (c->op == 1 ? POFF : 0), DATA, total);
	fds0 = nfds();
	fs_reset();
	ck_assert_int_eq(wrun(c, &l, &done), 0);
	ncalls = fs_calls(c->sym);
	ck_assert_msg(ncalls >= 1, "%s: never called", c->name);
	for (unsigned long n = 1; n <= ncalls; n++) {
		for (int k = 0; k < K_NKIND; k++) {
			size_t sk = n % 2 ? 1 : 4097;
			bool hard = k != K_EINTR && k != K_SHORT;

			if (!(c->kinds & KB(k)))
				continue;
			plan_kind(c->sym, n, (enum kind)k, sk);
			rc = wrun(c, &l, &done);
			ck_assert_msg(fs_hits(c->sym) == 1, "%s: no fault at %lu",
				      c->name, n);
			pts++;
			point(k);
			snap_check(&s, &l, c->name);
			ck_assert_uint_eq(nfds(), fds0);
			if (!hard) {
				ck_assert_msg(rc == 0, "%s %s at call %lu: %d",
					      c->name, kind_names[k], n, rc);
				if (c->op != 2)
					ck_assert_uint_eq(done, total);
				file_is(out_path, want,
					total + (c->op == 1 ? POFF : 0),
					c->name);
				continue;
			}
			ck_assert_msg(rc == -kind_err[k], "%s %s at call %lu: "
				      "%d", c->name, kind_names[k], n, rc);
			if (c->op != 2) {
				/* what was reported is what is in the file */
				ck_assert_uint_lt(done, total);
				if (n == 1)
					ck_assert_uint_eq(done, 0);
				file_is(out_path, want,
					c->op == 1 ? (done ? POFF + done : 0)
						   : done, c->name);
			}
			/* the same call without a fault */
			fs_reset();
			ck_assert_int_eq(wrun(c, &l, &done), 0);
			file_is(out_path, want, total + (c->op == 1 ? POFF : 0),
				c->name);
		}
	}
	report(c->name, pts);
	snap_free(&s);
	bl_list_clear(&l);
	free(want);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

struct rcase {
	const char *name;
	int op;			/* 0 read_fd, 1 pread, 2 read_file */
	enum fs_sym sym;
	unsigned kinds;
};

static const struct rcase rcases[] = {
	{ "read_fd/read", 0, FS_READ, K_FILE },
	{ "pread/pread", 1, FS_PREAD, K_FILE },
	{ "read_file/open", 2, FS_OPEN, KB(K_EINTR) | KB(K_EIO) },
	{ "read_file/fstat", 2, FS_FSTAT, KB(K_EIO) },
	{ "read_file/read", 2, FS_READ, K_FILE },
};

#define PREFIX 100

static ssize_t rrun(const struct rcase *c, struct bl_list *l)
{
	ssize_t rc;

	if (lseek(in_fd, 0, SEEK_SET) != 0)
		ck_abort_msg("lseek");
	fs_arm(true);
	if (c->op == 0)
		rc = bl_list_read_fd(l, in_fd, SIZE_MAX);
	else if (c->op == 1)
		rc = bl_list_pread(l, in_fd, SIZE_MAX, 0);
	else
		rc = bl_list_read_file(l, in_path);
	fs_arm(false);
	return rc;
}

START_TEST(io_read)
{
	/* every read call fails or falls short in turn: retried, or the
	 * list is exactly as it was (or, for EAGAIN after some bytes, holds
	 * those bytes), nothing leaks, and a clean retry reads it all */
	const struct rcase *c = &rcases[_i];
	unsigned char *want = malloc(PREFIX + FLEN);
	struct bl_list l;
	struct snap s;
	unsigned long ncalls, pts = 0;
	int64_t live0;
	unsigned fds0;
	ssize_t rc;

	ck_assert_ptr_nonnull(want);
	memcpy(want, DATA + 7, PREFIX);
	memcpy(want + PREFIX, DATA, FLEN);
	tu_alloc_install(0, 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, DATA + 7, PREFIX), 0);
	snap_take(&s, &l);
	live0 = live_bytes();
	fds0 = nfds();
	fs_reset();
	ck_assert_int_eq(rrun(c, &l), FLEN);
	ncalls = fs_calls(c->sym);
	ck_assert_msg(ncalls >= 1, "%s: never called", c->name);
	ck_assert_int_eq(bl_list_splice(&l, PREFIX, FLEN, NULL), 0);
	for (unsigned long n = 1; n <= ncalls; n++) {
		for (int k = 0; k < K_NKIND; k++) {
			size_t sk = n % 2 ? 1 : 4097;

			if (!(c->kinds & KB(k)))
				continue;
			plan_kind(c->sym, n, (enum kind)k, sk);
			rc = rrun(c, &l);
			ck_assert_msg(fs_hits(c->sym) == 1, "%s: no fault at %lu",
				      c->name, n);
			pts++;
			point(k);
			ck_assert_uint_eq(nfds(), fds0);
			if (k == K_EINTR || k == K_SHORT ||
			    (k == K_EAGAIN && rc > 0)) {
				/* EAGAIN after bytes: those bytes, short */
				ck_assert_msg(rc > 0 && (k == K_EAGAIN ||
							 rc == FLEN),
					      "%s %s at call %lu: %zd",
					      c->name, kind_names[k], n, rc);
				ck_assert_msg(k != K_EAGAIN || n > 1, "%s: "
					      "EAGAIN first, bytes returned",
					      c->name);
				tu_assert_list_eq(&l, want,
						  PREFIX + (size_t)rc);
				ck_assert_int_eq(bl_list_splice(&l, PREFIX,
						 (size_t)rc, NULL), 0);
			} else {
				ck_assert_msg(rc == -kind_err[k],
					      "%s %s at call %lu: %zd",
					      c->name, kind_names[k], n, rc);
				snap_check(&s, &l, c->name);
				ck_assert_int_eq(live_bytes(), live0);
				fs_reset();
				ck_assert_int_eq(rrun(c, &l), FLEN);
				tu_assert_list_eq(&l, want, PREFIX + FLEN);
				ck_assert_int_eq(bl_list_splice(&l, PREFIX,
						 FLEN, NULL), 0);
			}
			snap_check(&s, &l, c->name);
			ck_assert_int_eq(live_bytes(), live0);
		}
	}
	report(c->name, pts);
	snap_free(&s);
	bl_list_clear(&l);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
	free(want);
}
END_TEST

/* ---- 2. the uring layer, on both back ends ------------------------------- */

struct ures {
	int calls;
	ssize_t res;
	struct bl_list data;
	bool more;
};

static void ucb(void *arg, ssize_t res, struct bl_list *data)
{
	struct ures *r = arg;

	r->calls++;
	r->res = res;
	if (data)
		bl_list_claim_append(&r->data, data);
}

static void upcb(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	struct ures *r = arg;

	r->calls++;
	r->res = res;
	r->more = more;
	bl_list_claim_append(&r->data, data);
}

static struct bl_uring *ring_new(bool blocking)
{
	struct bl_uring_params p = { .force_blocking = blocking };
	struct bl_uring *u = bl_uring_create(&p);

	ck_assert_ptr_nonnull(u);
	ck_assert_int_eq(bl_uring_backend(u),
			 blocking ? BL_URING_BLOCKING : BL_URING_IO_URING);
	return u;
}

/* Runs @u until @r's callback ran (with the fault plan still armed). */
static void run_until(struct bl_uring *u, struct ures *r, int want_calls)
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

/* @u, whatever back end it got, writes @l (@total bytes) to out_path. */
static void ring_writes(struct bl_uring *u, struct bl_list *l,
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

enum uop_kind { U_WRITE, U_WRITE_POS, U_READ, U_SEND, U_RECV, U_POOLED,
		U_POOLED_MULTI, U_PIPE, U_WRITE_FDSYNC, U_WRITE_DSYNC, U_FSYNC,
		U_FDATASYNC, U_SYNC_RANGE };

/* the faults a sync can return */
#define K_SYNC (KB(K_EINTR) | KB(K_EIO) | KB(K_ENOSPC))

struct ucase {
	const char *name;
	enum uop_kind op;
	bool blocking;
	enum fs_sym sym;
	unsigned kinds;
};

static const struct ucase ucases[] = {
	{ "uring blocking write/pwritev", U_WRITE, true, FS_PWRITEV, K_FILE },
	{ "uring blocking write(pos)/writev", U_WRITE_POS, true, FS_WRITEV,
	  K_FILE },
	{ "uring blocking read/preadv", U_READ, true, FS_PREADV, K_FILE },
	{ "uring blocking send/sendmsg", U_SEND, true, FS_SENDMSG, K_SOCK },
	{ "uring blocking write(pipe)/writev", U_PIPE, true, FS_WRITEV,
	  K_SOCK },
	{ "uring blocking write(pipe)/poll", U_PIPE, true, FS_POLL,
	  KB(K_EINTR) | KB(K_EIO) },
	{ "uring blocking recv/recv", U_RECV, true, FS_RECV, K_SOCK },
	{ "uring blocking recv_pooled/recv", U_POOLED, true, FS_RECV,
	  K_SOCK },
	{ "uring blocking recv_pooled(ms)/recv", U_POOLED_MULTI, true,
	  FS_RECV, K_SOCK },
	{ "uring io_uring write/cqe", U_WRITE, false, FS_CQE, K_FILE },
	{ "uring io_uring read/cqe", U_READ, false, FS_CQE, K_FILE },
	{ "uring io_uring send/cqe", U_SEND, false, FS_CQE, K_HARD },
	{ "uring io_uring write(pipe)/cqe", U_PIPE, false, FS_CQE, K_HARD },
	{ "uring io_uring recv/cqe", U_RECV, false, FS_CQE, K_HARD },
	{ "uring io_uring recv_pooled/cqe", U_POOLED, false, FS_CQE, K_HARD },
	{ "uring io_uring recv_pooled(ms)/cqe", U_POOLED_MULTI, false, FS_CQE,
	  K_HARD },
	{ "uring blocking write+fdatasync/pwritev", U_WRITE_FDSYNC, true,
	  FS_PWRITEV, K_FILE },
	{ "uring blocking write+fdatasync/fdatasync", U_WRITE_FDSYNC, true,
	  FS_FDATASYNC, K_SYNC },
	{ "uring blocking write(dsync)/pwritev2", U_WRITE_DSYNC, true,
	  FS_PWRITEV2, K_FILE },
	{ "uring blocking fsync/fsync", U_FSYNC, true, FS_FSYNC, K_SYNC },
	{ "uring blocking fdatasync/fdatasync", U_FDATASYNC, true,
	  FS_FDATASYNC, K_SYNC },
	{ "uring blocking sync_range/sync_file_range", U_SYNC_RANGE, true,
	  FS_SYNC_FILE_RANGE, K_SYNC },
	{ "uring io_uring write+fdatasync/cqe", U_WRITE_FDSYNC, false, FS_CQE,
	  K_FILE },
	{ "uring io_uring write(dsync)/cqe", U_WRITE_DSYNC, false, FS_CQE,
	  K_FILE },
	{ "uring io_uring fsync/cqe", U_FSYNC, false, FS_CQE, K_SYNC },
	{ "uring io_uring sync_range/cqe", U_SYNC_RANGE, false, FS_CQE,
	  K_SYNC },
	{ "uring io_uring write/submit_and_wait", U_WRITE, false,
	  FS_URING_SUBMIT_AND_WAIT_TIMEOUT,
	  KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) },
	{ "uring io_uring write/submit", U_WRITE, false, FS_URING_SUBMIT,
	  KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) },
	{ "uring io_uring send/submit_and_wait", U_SEND, false,
	  FS_URING_SUBMIT_AND_WAIT_TIMEOUT,
	  KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) },
};

struct uctx {
	const struct ucase *c;
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	struct bl_list l;	/* what writes and sends take */
	size_t total;
	int fd, peer;		/* file, or socket and its peer */
	unsigned char *want;	/* expected bytes */
	size_t want_len;
};

#define UBUFS 8
#define UBUF_SIZE 4096
#define RECV_LEN 10000

/* Reads everything waiting on the peer socket or pipe (non-blocking). */
static size_t drain_peer(int fd, unsigned char *buf, size_t cap)
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
static void uctx_open(struct uctx *x, const struct ucase *c)
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

static void uctx_close(struct uctx *x)
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
static ssize_t urun(struct uctx *x, struct bl_list *data)
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
static void renew_socket(struct uctx *x)
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
static void ucheck_ok(struct uctx *x, ssize_t res, struct bl_list *data,
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

/* The cases that can run here (main leaves out io_uring's without it). */
#define NUCASE (sizeof(ucases) / sizeof(ucases[0]))
static int uidx[NUCASE], nuidx;

START_TEST(uring_fault)
{
	/* every system call or completion of every uring operation fails
	 * or falls short in turn, on each back end: retried and exact, or
	 * the callback gets the -errno, the caller's list keeps its
	 * references, nothing leaks, and the same call then succeeds */
	const struct ucase *c = &ucases[uidx[_i]];
	struct uctx x;
	struct bl_list data;
	struct snap s;
	unsigned long ncalls, pts = 0;
	unsigned fds0;
	int64_t live0;
	ssize_t res;

	tu_alloc_install(0, 0);
	fds0 = nfds();
	uctx_open(&x, c);
	bl_list_init(&data);
	snap_take(&s, &x.l);
	live0 = live_bytes();
	if (!c->blocking)
		fs_cqe_hook(true);
	fs_reset();
	res = urun(&x, &data);
	ncalls = fs_calls(c->sym);
	ucheck_ok(&x, res, &data, c->name);
	ck_assert_msg(ncalls >= 1, "%s: never called", c->name);
	for (unsigned long n = 1; n <= ncalls; n++) {
		for (int k = 0; k < K_NKIND; k++) {
			size_t sk = n % 2 ? 1 : 1500;
			bool soft = k == K_EINTR || k == K_SHORT ||
				    (k == K_EAGAIN && c->sym != FS_READ);

			if (!(c->kinds & KB(k)))
				continue;
			plan_kind(c->sym, n, (enum kind)k, sk);
			res = urun(&x, &data);
			if (!fs_hits(c->sym))
				continue;	/* fewer calls this time */
			pts++;
			point(k);
			snap_check(&s, &x.l, c->name);
			if (c->sym == FS_URING_SUBMIT ||
			    c->sym == FS_URING_SUBMIT_AND_WAIT_TIMEOUT ||
			    c->sym == FS_POLL)
				soft = true;	/* bl_uring_run is called again */
			if (soft) {
				ucheck_ok(&x, res, &data, c->name);
			} else {
				ck_assert_msg(res == -kind_err[k],
					      "%s %s at call %lu: %zd", c->name,
					      kind_names[k], n, res);
				/* a multishot receive's earlier chunks stand */
				if (c->op == U_POOLED_MULTI)
					tu_assert_list_eq(&data, x.want,
						bl_list_length(&data));
				else
					ck_assert_uint_eq(bl_list_length(&data),
							  0);
				bl_list_clear(&data);
				if (x.peer >= 0)
					drain_peer(x.peer, NULL, 0);
				if (c->op == U_POOLED_MULTI)
					renew_socket(&x);
				fs_reset();
				res = urun(&x, &data);
				ucheck_ok(&x, res, &data, c->name);
			}
			if (x.br)
				ck_assert_uint_eq(
					bl_uring_bufring_available(x.br),
					UBUFS);
			ck_assert_uint_eq(bl_uring_inflight(x.u), 0);
			ck_assert_int_eq(live_bytes(), live0);
		}
	}
	fs_cqe_hook(false);
	report(c->name, pts);
	snap_free(&s);
	uctx_close(&x);
	ck_assert_uint_eq(nfds(), fds0);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

START_TEST(uring_setup_fault)
{
	/* a ring the kernel refuses (seccomp EPERM, ENOSYS, ENOMEM from
	 * locked-memory limits, EINVAL however asked) falls back to the
	 * blocking back end with a reason, and works; only EINVAL is asked
	 * again (without the flags the library added); a ring without a
	 * probe still sends */
	static const int errs[] = { EPERM, ENOSYS, ENOMEM, EINVAL };
	struct bl_uring *u;
	struct bl_list l;
	struct ures r = { 0 };
	unsigned long pts = 0;
	size_t total;

	tu_alloc_install(0, 0);
	make_list(&l, &total);
	bl_list_init(&r.data);
	for (unsigned i = 0; i < 5; i++) {
		fs_reset();
		if (i < 4)
			fs_plan(FS_URING_QUEUE_INIT_PARAMS, 1, 0, FS_FAIL,
				errs[i], 0);
		else
			fs_plan(FS_URING_GET_PROBE_RING, 1, 1, FS_FAIL, 0, 0);
		fs_arm(true);
		u = bl_uring_create(NULL);
		fs_arm(false);
		ck_assert_ptr_nonnull(u);
		ck_assert_uint_eq(fs_hits_total(), i == 3 ? 2 : 1);
		if (i < 4)
			ck_assert_uint_eq(fs_calls(FS_URING_QUEUE_INIT_PARAMS),
					  i == 3 ? 2 : 1);
		pts++;
		point(P_OTHER);
		if (i < 4) {
			ck_assert_int_eq(bl_uring_backend(u),
					 BL_URING_BLOCKING);
			ck_assert_ptr_nonnull(strstr(bl_uring_backend_reason(u),
						     strerror(errs[i])));
		} else {
			struct bl__uring_features f;

			ck_assert_int_eq(bl_uring_backend(u),
					 BL_URING_IO_URING);
			bl__uring_features(u, &f);
			ck_assert(!f.send_zc && !f.sendmsg_zc);
		}
		ring_writes(u, &l, &r, total, "write after setup fault");
		bl_uring_destroy(u);
	}
	report("uring create (init/probe refused)", pts);
	bl_list_clear(&l);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

#define TR_COOP (IORING_SETUP_COOP_TASKRUN | IORING_SETUP_TASKRUN_FLAG)
#define TR_DEFER (IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN | \
		  IORING_SETUP_TASKRUN_FLAG)

/*
 * The flags bl_uring_create() adds to a ring of its own, each refused in
 * turn as an old kernel would (EINVAL): the ring is made with the next
 * choice (single_issuer: DEFER_TASKRUN, then COOP_TASKRUN, then neither),
 * and works; refused every time, it is the blocking back end.  Flags the
 * caller chose get nothing added and no second try.
 * _i 0: the defaults; 1: single_issuer; 2: the caller's own flags.
 */
START_TEST(uring_setup_flags_fallback)
{
	const unsigned steps[3][3] = { { TR_COOP, 0 }, { TR_DEFER, TR_COOP, 0 },
				       { IORING_SETUP_COOP_TASKRUN } };
	const unsigned nsteps = _i == 1 ? 3 : _i == 0 ? 2 : 1;
	struct bl_list l;
	struct ures r = { 0 };
	unsigned long pts = 0;
	size_t total;

	tu_alloc_install(0, 0);
	make_list(&l, &total);
	bl_list_init(&r.data);
	for (unsigned fail = 0; fail <= nsteps; fail++) {
		struct bl_uring_params p = { .single_issuer = _i == 1 };
		struct bl_uring *u;
		unsigned k = fail;

		if (_i == 2)
			p.flags = IORING_SETUP_COOP_TASKRUN;
		/* a step this kernel refuses by itself is passed too */
		while (k < nsteps && !tu_kernel_takes(steps[_i][k]))
			k++;
		fs_reset();
		if (fail)
			fs_plan(FS_URING_QUEUE_INIT_PARAMS, 1, fail, FS_FAIL,
				EINVAL, 0);
		fs_arm(true);
		u = bl_uring_create(&p);
		fs_arm(false);
		ck_assert_ptr_nonnull(u);
		ck_assert_uint_eq(fs_calls(FS_URING_QUEUE_INIT_PARAMS),
				  k < nsteps ? k + 1 : nsteps);
		pts++;
		point(P_OTHER);
		if (k == nsteps) {
			ck_assert_int_eq(bl_uring_backend(u),
					 BL_URING_BLOCKING);
			ck_assert_ptr_nonnull(strstr(bl_uring_backend_reason(u),
						     strerror(EINVAL)));
		} else {
			ck_assert_int_eq(bl_uring_backend(u),
					 BL_URING_IO_URING);
			ck_assert_uint_eq(bl_uring_ring(u)->flags &
					  (TR_COOP | TR_DEFER),
					  steps[_i][k]);
		}
		ring_writes(u, &l, &r, total, "write after flags refused");
		bl_uring_destroy(u);
	}
	report("uring create (setup flags refused)", pts);
	bl_list_clear(&l);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

/*
 * A ring with TASKRUN_FLAG enters the kernel in bl_uring_run(u, 0, 0) only
 * when the SQ ring says that task work waits; a ring that defers task work
 * without the flag (the caller's DEFER_TASKRUN) enters every time.
 * _i 0: single_issuer; 1: the defaults; 2: the caller's DEFER_TASKRUN.
 */
START_TEST(uring_taskrun_enters_only_when_work_waits)
{
	struct bl_uring_params p = { .single_issuer = _i == 0 };
	struct bl_uring *u;
	struct ures r = { 0 };
	int sv[2], spins;
	unsigned fl;

	if (_i == 2)
		p.flags = IORING_SETUP_SINGLE_ISSUER |
			  IORING_SETUP_DEFER_TASKRUN;
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	if (bl_uring_backend(u) != BL_URING_IO_URING) {
		bl_uring_destroy(u);	/* refused by this kernel: no ring */
		return;
	}
	fl = bl_uring_ring(u)->flags;
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	bl_list_init(&r.data);
	ck_assert_int_eq(bl_uring_recv(u, sv[1], 100, ucb, &r), 0);
	ck_assert_int_eq(bl_uring_submit(u), 1);
	fs_reset();
	fs_arm(true);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	fs_arm(false);
	if (fl & IORING_SETUP_TASKRUN_FLAG)
		ck_assert_uint_eq(fs_calls(FS_URING_ENTER), 0);
	else
		ck_assert_uint_eq(fs_calls(FS_URING_ENTER), 100);
	/* the data arrives: its task work waits for this thread */
	ck_assert_int_eq(write(sv[0], "abc", 3), 3);
	fs_reset();
	fs_arm(true);
	for (spins = 0; !r.calls && spins < 100000; spins++)
		ck_assert_int_ge(bl_uring_run(u, 0, 0), 0);
	fs_arm(false);
	ck_assert_int_eq(r.calls, 1);
	ck_assert_int_eq(r.res, 3);
	tu_assert_list_eq(&r.data, "abc", 3);
	/* DEFER_TASKRUN runs it only in io_uring_enter(): ours */
	if (fl & IORING_SETUP_DEFER_TASKRUN)
		ck_assert_uint_ge(fs_calls(FS_URING_ENTER), 1);
	bl_list_clear(&r.data);
	bl_uring_destroy(u);
	close(sv[0]);
	close(sv[1]);
}
END_TEST


START_TEST(uring_register_fault)
{
	/* a buffer ring or a registered pool the kernel refuses: NULL, no
	 * memory kept, and the ring works on; then a clean try succeeds */
	static const int errs[] = { ENOMEM, EINVAL, EEXIST, EFAULT };
	struct bl_uring *u;
	unsigned long pts = 0;

	tu_alloc_install(0, 0);
	u = ring_new(false);
	for (unsigned i = 0; i < 4; i++) {
		int64_t live0 = live_bytes();
		struct bl_uring_bufring *br;
		struct bl_uring_regpool *rp;

		fs_reset();
		fs_plan(FS_URING_REGISTER_BUF_RING, 1, 1, FS_FAIL, errs[i], 0);
		fs_arm(true);
		errno = 0;
		br = bl_uring_bufring_create(u, 8, 4096, 3);
		fs_arm(false);
		ck_assert_ptr_null(br);
		ck_assert_int_eq(errno, errs[i]);	/* the kernel's */
		ck_assert_int_eq(live_bytes(), live0);
		pts++;
		point(P_OTHER);
		fs_reset();
		fs_plan(FS_URING_REGISTER_BUFFERS, 1, 1, FS_FAIL, errs[i], 0);
		fs_arm(true);
		errno = 0;
		rp = bl_uring_regpool_create(u, 4, 8192);
		fs_arm(false);
		ck_assert_ptr_null(rp);
		ck_assert_int_eq(errno, errs[i]);
		ck_assert_int_eq(live_bytes(), live0);
		pts++;
		point(P_OTHER);
		br = bl_uring_bufring_create(u, 8, 4096, 3);
		ck_assert_ptr_nonnull(br);
		rp = bl_uring_regpool_create(u, 4, 8192);
		ck_assert_ptr_nonnull(rp);
		{
			struct bl_raw *r = bl_uring_regpool_get(rp);

			ck_assert_ptr_nonnull(r);
			ck_assert_int_ge(bl_raw_buf_index(r), 0);
			bl_raw_put(r);
		}
		bl_uring_bufring_destroy(br);
		bl_uring_regpool_destroy(rp);
	}
	bl_uring_destroy(u);
	report("uring register (buf ring, buffers)", pts);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

START_TEST(uring_enter_fault)
{
	/* DEFER_TASKRUN rings ask the kernel for events with io_uring_enter
	 * before reaping: a failure there is only a missed early look */
	struct bl_uring_params p = {
		.flags = IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN
	};
	struct bl_uring *u;
	struct bl_list l;
	struct ures r = { 0 };
	unsigned long pts = 0, ncalls;
	size_t total;
	int fd;

	tu_alloc_install(0, 0);
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	/* io_uring works here (main checked): DEFER_TASKRUN needs 6.1 */
	ck_assert_msg(bl_uring_backend(u) == BL_URING_IO_URING,
		      "DEFER_TASKRUN ring refused: %s",
		      bl_uring_backend_reason(u));
	make_list(&l, &total);
	bl_list_init(&r.data);
	fd = open(out_path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	fs_reset();
	fs_arm(true);
	ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, ucb, &r), 0);
	run_until(u, &r, 1);
	fs_arm(false);
	ncalls = fs_calls(FS_URING_ENTER);
	ck_assert_uint_ge(ncalls, 1);
	for (unsigned long n = 1; n <= ncalls; n++) {
		for (int k = 0; k < 3; k++) {
			fs_reset();
			fs_plan(FS_URING_ENTER, n, 1, FS_FAIL,
				k == 0 ? EINTR : k == 1 ? EAGAIN : EBUSY, 0);
			r.calls = 0;
			ck_assert_int_eq(ftruncate(fd, 0), 0);
			fs_arm(true);
			ck_assert_int_eq(bl_uring_write(u, fd, 0, &l, ucb, &r),
					 0);
			run_until(u, &r, 1);
			fs_arm(false);
			if (!fs_hits(FS_URING_ENTER))
				continue;
			pts++;
			point(k == 0 ? K_EINTR : k == 1 ? K_EAGAIN : P_OTHER);
			ck_assert_int_eq(r.res, (ssize_t)total);
			file_is(out_path, DATA, total, "DEFER_TASKRUN write");
		}
	}
	close(fd);
	bl_uring_destroy(u);
	bl_list_clear(&l);
	report("uring run (DEFER_TASKRUN enter)", pts);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

START_TEST(dio_align_fault)
{
	/* statx refused: the alignment comes from fstat (4096 for a file);
	 * both refused: -errno, and bl_list_prepare_dio leaves its list */
	static const int errs[] = { EIO, ENOMEM, EACCES };
	struct bl_list l;
	struct snap s;
	unsigned long pts = 0;
	size_t mem = 0, off = 0;
	int fd = open(out_path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	tu_alloc_install(0, 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, DATA, 3), 0);
	ck_assert_int_eq(bl_list_append(&l, DATA, 8192 - 3), 0);
	snap_take(&s, &l);
	for (unsigned i = 0; i < 3; i++) {
		fs_reset();
		fs_plan(FS_STATX, 1, 1, FS_FAIL, errs[i], 0);
		fs_arm(true);
		ck_assert_int_eq(bl_fd_dio_align(fd, &mem, &off), 0);
		fs_arm(false);
		ck_assert_uint_eq(fs_hits(FS_STATX), 1);
		ck_assert_uint_eq(mem, 4096);
		ck_assert_uint_eq(off, 4096);
		pts++;
		point(errs[i] == EIO ? K_EIO : P_OTHER);
		fs_reset();
		fs_plan(FS_STATX, 1, 1, FS_FAIL, errs[i], 0);
		fs_plan(FS_FSTAT, 1, 1, FS_FAIL, errs[i], 0);
		fs_arm(true);
		ck_assert_int_eq(bl_list_prepare_dio(&l, fd), -errs[i]);
		fs_arm(false);
		ck_assert_uint_eq(fs_hits_total(), 2);
		snap_check(&s, &l, "prepare_dio");
		pts++;
		point(errs[i] == EIO ? K_EIO : P_OTHER);
	}
	report("fd_dio_align / prepare_dio (statx, fstat)", pts);
	snap_free(&s);
	bl_list_clear(&l);
	close(fd);
	ck_assert_int_eq(live_bytes(), 0);
	tu_alloc_uninstall();
}
END_TEST

/*
 * A descriptor reporting an alignment that is not a power of two takes
 * direct I/O, but bl_list_prepare_dio cannot lay the list out for it:
 * -EDOM, its own errno (not the -EOPNOTSUPP of no direct I/O, nor the
 * -EINVAL of a length), and the list stays.  bl_fd_dio_align reports
 * such alignments as they are.
 */
START_TEST(prepare_dio_refuses_an_alignment_not_a_power_of_two)
{
	static const uint32_t al[][2] = {	/* memory, offset */
		{ 512, 768 }, { 768, 4096 }, { 3, 3 },
	};
	struct bl_list l;
	struct snap s;
	size_t mem = 0, off = 0;
	int fd = open(out_path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, DATA, 3), 0);
	ck_assert_int_eq(bl_list_append(&l, DATA, 4608 - 3), 0);
	snap_take(&s, &l);
	for (unsigned i = 0; i < sizeof(al) / sizeof(al[0]); i++) {
		fs_reset();
		fs_statx_dio(al[i][0], al[i][1]);
		fs_arm(true);
		ck_assert_int_eq(bl_fd_dio_align(fd, &mem, &off), 0);
		ck_assert_uint_eq(mem, al[i][0]);
		ck_assert_uint_eq(off, al[i][1]);
		ck_assert_int_eq(bl_list_prepare_dio(&l, fd), -EDOM);
		fs_arm(false);
		snap_check(&s, &l, "prepare_dio");
	}
	/* the same list and a power of two from the same statx: prepared */
	fs_reset();
	fs_statx_dio(512, 512);
	fs_arm(true);
	ck_assert_int_eq(bl_list_prepare_dio(&l, fd), 1);
	fs_arm(false);
	fs_reset();
	ck_assert_uint_eq(bl_list_length(&l), 4608);
	snap_free(&s);
	bl_list_clear(&l);
	close(fd);
}
END_TEST

/* ---- 3. allocation failures not covered by test_failure.c ---------------- */

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

struct mres {
	int sent, closed, frames;
	int send_res, close_err;
};

static void m_frame(void *arg, struct bl_msgr_conn *c, struct bl_msgr_frame *f)
{
	struct mres *m = arg;

	(void)c;
	(void)f;
	m->frames++;
}

static void m_close(void *arg, struct bl_msgr_conn *c, int err,
		    const char *reason)
{
	struct mres *m = arg;

	(void)c;
	(void)reason;
	m->closed++;
	m->close_err = err;
}

static void m_sent(void *arg, int res)
{
	struct mres *m = arg;

	m->sent++;
	m->send_res = res;
}

static void m_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	(void)arg;
	(void)c;
	(void)msg;
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

/*
 * A connection that busy polls: frame 1 comes through the ring, and its
 * delivery makes the peer send the rest and shut its side down, which
 * the connection's own reads then take (into raws of their own).
 */
#define POLL_FRAMES 6

struct mpoll {
	struct mres m;		/* first: m_close's argument */
	int peer;
	unsigned char *rest;
	size_t restn;
	int fault;		/* an errno for the next recv(2), or 0 */
};

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
static unsigned char *poll_stream(size_t *first, size_t *n)
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
static struct bl_msgr_conn *poll_conn(struct bl_uring *u, int sv[2],
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

/* The reads of a busy polling connection, with allocations failing. */
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

/* ---- one operation, waited for: the ring fails while waiting ----------- */

START_TEST(uring_wait_fault)
{
	/* a write into a full pipe waits in bl_uring_run, whose wait (poll,
	 * or io_uring_submit_and_wait_timeout) fails for good: the waiting
	 * call returns that error, and the operation, still in flight,
	 * completes later and frees what the waiting call left to it */
	static char fill[65536];
	int64_t live0;
	unsigned fds0;

	tu_alloc_install(0, 0);
	fds0 = nfds();
	live0 = live_bytes();
	for (int b = 1; b >= 0; b--) {
		struct bl_uring_params p = { .force_blocking = b };
		enum fs_sym sym = b ? FS_POLL : FS_URING_SUBMIT_AND_WAIT_TIMEOUT;
		struct bl_uring *u;
		struct bl_list l;
		char sink[4096];
		int pfd[2], fl;
		ssize_t n;

		if (!b && !have_uring)
			continue;
		u = bl_uring_create(&p);
		ck_assert_ptr_nonnull(u);
		ck_assert_int_eq(pipe(pfd), 0);
		fl = fcntl(pfd[1], F_GETFL);
		ck_assert_int_eq(fcntl(pfd[1], F_SETFL, fl | O_NONBLOCK), 0);
		while (write(pfd[1], fill, sizeof(fill)) > 0)
			;
		bl_list_init(&l);
		ck_assert_int_eq(bl_list_append(&l, "late", 4), 0);
		fs_reset();
		fs_plan(sym, 1, 0, FS_FAIL, ENOMEM, 0);
		fs_arm(true);
		ck_assert_int_eq(bl_uring_write_wait(u, pfd[1], -1, &l), -ENOMEM);
		fs_arm(false);
		ck_assert_uint_ge(fs_hits(sym), 1);
		ck_assert_uint_eq(bl_uring_inflight(u), 1);
		bl_list_clear(&l);
		/* the reader comes: the orphaned write completes */
		fl = fcntl(pfd[0], F_GETFL);
		ck_assert_int_eq(fcntl(pfd[0], F_SETFL, fl | O_NONBLOCK), 0);
		while (bl_uring_inflight(u)) {
			n = read(pfd[0], sink, sizeof(sink));
			ck_assert(n > 0 || (n < 0 && errno == EAGAIN));
			ck_assert_int_ge(bl_uring_run(u, 1, 10), 0);
		}
		bl_uring_destroy(u);
		close(pfd[0]);
		close(pfd[1]);
		point(P_OTHER);
	}
	report("uring wait (run fails while waiting)", have_uring ? 2 : 1);
	ck_assert_int_eq(live_bytes(), live0);
	ck_assert_uint_eq(nfds(), fds0);
	tu_alloc_uninstall();
}
END_TEST

/* ---- msgr: a busy polling connection's own recv(2) fails -------------- */

/*
 * Right after frame 1, the connection's next recv(2) (its own read on the
 * io_uring back end; on the blocking back end whichever comes first) fails
 * once: EINTR and EAGAIN are retried and every frame arrives before the
 * peer's end; ECONNRESET and EIO close the connection with that error,
 * logged, as a failed receive of the ring does.  Nothing leaks.
 */
START_TEST(msgr_busy_poll_recv_fault)
{
	static const int kinds[] = { K_EINTR, K_EAGAIN, K_ECONNRESET, K_EIO };
	unsigned long pts = 0;

	tu_alloc_install(0, 0);
	for (int b = 1; b >= 0; b--) {
		if (!b && !have_uring)
			continue;
		for (unsigned k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
			struct bl_uring_params pr = { .force_blocking = b };
			unsigned fds0 = nfds();
			int64_t live0 = live_bytes();
			struct bl_uring *u = bl_uring_create(&pr);
			int err = kind_err[kinds[k]];
			struct mpoll p = { 0 };
			struct bl_msgr_conn *c;
			unsigned char *buf;
			int sv[2];

			ck_assert_ptr_nonnull(u);
			p.fault = err;
			c = poll_conn(u, sv, &p, &buf);
			ck_assert_ptr_nonnull(c);
			for (int i = 0; i < 100 && !p.m.closed; i++)
				bl_uring_run(u, 1, 100);
			fs_arm(false);
			ck_assert_uint_eq(fs_hits(FS_RECV), 1);
			ck_assert_int_eq(p.m.closed, 1);
			if (err == EINTR || err == EAGAIN) {
				ck_assert_int_eq(p.m.close_err, 0);
				ck_assert_int_eq(p.m.frames, POLL_FRAMES);
			} else {
				ck_assert_int_eq(p.m.close_err, -err);
				ck_assert_int_eq(p.m.frames, 1);
			}
			fs_reset();
			close(sv[1]);
			free(buf);
			bl_uring_destroy(u);
			ck_assert_int_eq(live_bytes(), live0);
			ck_assert_uint_eq(nfds(), fds0);
			point(kinds[k]);
			pts++;
		}
	}
	report("msgr busy-poll recv", pts);
	tu_alloc_uninstall();
}
END_TEST

static Suite *faults_suite(void)
{
	Suite *s = suite_create("faults");
	TCase *tc = tcase_create("syscalls");
	TCase *ta = tcase_create("allocations");

	tcase_set_timeout(tc, 120);
	tcase_set_timeout(ta, 120);
	tcase_add_loop_test(tc, io_write, 0,
			    (int)(sizeof(wcases) / sizeof(wcases[0])));
	tcase_add_loop_test(tc, io_read, 0,
			    (int)(sizeof(rcases) / sizeof(rcases[0])));
	/* without io_uring its cases are not registered, not passed */
	for (unsigned i = 0; i < NUCASE; i++)
		if (ucases[i].blocking || have_uring)
			uidx[nuidx++] = (int)i;
	for (unsigned i = 0; i < NACASE; i++)
		for (int b = 1; b >= 0; b--)
			if ((acases[i].backends & (b ? 1 : 2)) &&
			    (b || have_uring || acases[i].op == a_encode))
				apairs[napairs++] = (struct apair){ &acases[i],
								    b };
	tcase_add_loop_test(tc, uring_fault, 0, nuidx);
	if (have_uring) {
		tcase_add_test(tc, uring_setup_fault);
		tcase_add_loop_test(tc, uring_setup_flags_fallback, 0, 3);
		tcase_add_loop_test(tc, uring_taskrun_enters_only_when_work_waits,
				    0, 3);
		tcase_add_test(tc, uring_register_fault);
		tcase_add_test(tc, uring_enter_fault);
	}
	tcase_add_test(tc, dio_align_fault);
	tcase_add_test(tc, prepare_dio_refuses_an_alignment_not_a_power_of_two);
	tcase_add_test(tc, uring_wait_fault);
	tcase_add_test(tc, msgr_busy_poll_recv_fault);
	tcase_add_loop_test(ta, alloc_fault, 0, napairs);
	suite_add_tcase(s, tc);
	suite_add_tcase(s, ta);
	return s;
}

int main(void)
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
		printf("faults: io_uring back end not available here (%s): "
		       "only the blocking back end is tested\n",
		       u ? bl_uring_backend_reason(u) : "no memory");
	bl_uring_destroy(u);
	ret = tu_run(faults_suite());
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
