/* SPDX-License-Identifier: MIT */
/*
 * test_syscall_faults_io.c - what the blocking io layer and its file
 * helpers do when a system call says no.
 *
 * The system calls are wrapped at link time (faultsys.h).  For every
 * operation and every call it makes (found by a clean counting run
 * first), the Nth call is made to:
 *   - fail with EINTR once: retried, the result is exact;
 *   - fail with EAGAIN once: reported (bytes done / bytes read so far);
 *   - fail with EIO or ENOSPC: the call returns the -errno (a write
 *     reports the bytes that reached the fd), the caller's list is as it
 *     was, no byte of memory and no descriptor leaks, and the same call
 *     without a fault then succeeds;
 *   - move only a few bytes (a short count): resumed, the result is exact.
 * Direct I/O's alignment, when statx and fstat fail or report nonsense,
 * too.  The suite prints how many fault points it went through.
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

/* ---- 1. the blocking io layer ------------------------------------------- */

/* An operation of the io layer and the call of it that fails. */
struct iocase {
	const char *name;
	int op;			/* 0 write_fd or read_fd, 1 pwrite or pread,
				 * 2 write_file or read_file */
	enum fs_sym sym;
	unsigned kinds;
};

static const struct iocase wcases[] = {
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
static int wrun(const struct iocase *c, const struct bl_list *l, size_t *done)
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
	const struct iocase *c = &wcases[_i];
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

static const struct iocase rcases[] = {
	{ "read_fd/read", 0, FS_READ, K_FILE },
	{ "pread/pread", 1, FS_PREAD, K_FILE },
	{ "read_file/open", 2, FS_OPEN, KB(K_EINTR) | KB(K_EIO) },
	{ "read_file/fstat", 2, FS_FSTAT, KB(K_EIO) },
	{ "read_file/read", 2, FS_READ, K_FILE },
};

#define PREFIX 100

static ssize_t rrun(const struct iocase *c, struct bl_list *l)
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
	const struct iocase *c = &rcases[_i];
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

static Suite *faults_suite(void)
{
	const struct tu_loop io_loops[] = {
		{ io_write, 0, (int)(sizeof(wcases) / sizeof(wcases[0])) },
		{ io_read, 0, (int)(sizeof(rcases) / sizeof(rcases[0])) },
		{ NULL, 0, 0 }
	};
	const TTest *dio_tests[] = {
		dio_align_fault,
		prepare_dio_refuses_an_alignment_not_a_power_of_two,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("syscalls", dio_tests, .loops = io_loops,
			 .timeout = 120),
		TU_GROUP_END
	};

	return tu_suite("syscall_faults_io", groups);
}

int main(void)
{
	return fs_main("test_syscall_faults_io", faults_suite);
}
