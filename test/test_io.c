/* SPDX-License-Identifier: MIT */
/*
 * test_io.c - the blocking io layer: round trips through files at
 * unaligned offsets with one, many and more than IOV_MAX segments; short
 * writes and reads through pipes and sockets; EINTR; -EAGAIN on
 * non-blocking descriptors with progress reported; errors (-EBADF,
 * -EFBIG, -ENOENT, -EISDIR, -ENOMEM) that leave the list unchanged and
 * leak nothing; reads from procfs and FIFOs whose size is not known.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

static char tdir[64];
static uint64_t seed;

/* ---- fixture: one temporary directory per test case ---------------------- */

static void tdir_setup(void)
{
	tu_tdir_make(tdir, sizeof(tdir), "/tmp/bl-io-XXXXXX");
}

/* Runs in the parent, so it also cleans up after a test that failed. */
static void tdir_teardown(void)
{
	tu_tdir_remove(tdir);
}

/* ---- helpers ------------------------------------------------------------ */

/*
 * @l = @len bytes of @data in segments of 1..@max_seg bytes, each its own
 * raw (so no two merge).  Returns the segment count.
 */
static unsigned make_list(struct bl_list *l, const void *data, size_t len,
			  size_t max_seg, uint64_t *rng)
{
	bl_list_init(l);
	tu_append_segmented(l, data, len, max_seg, 1, rng);
	ck_assert_int_eq(bl__list_validate(l), 0);
	return bl_list_num_buffers(l);
}

static off_t file_size(int fd)
{
	struct stat st;

	ck_assert_int_eq(fstat(fd, &st), 0);
	return st.st_size;
}

/* The lowest free descriptor number: unchanged across a call = no fd leak. */
static int lowest_free_fd(void)
{
	int fd = dup(0);

	ck_assert_int_ge(fd, 0);
	close(fd);
	return fd;
}

/* ---- round trips through files ------------------------------------------- */

START_TEST(test_one_segment_round_trip_at_unaligned_offset)
{
	uint64_t rng = seed;
	const size_t len = 100003;
	const off_t off = 4097;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_list l, in;
	struct bl_ptr p;
	char path[PATH_MAX];
	size_t done = 1;
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	bl_list_init(&l);
	ck_assert_int_eq(bl_ptr_alloc(&p, len), 0);
	memcpy(bl_ptr_data(&p), want, len);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);

	ck_assert_int_eq(bl_list_pwrite(&l, fd, off, &done), 0);
	ck_assert_uint_eq(done, len);
	ck_assert_int_eq(file_size(fd), off + (off_t)len);
	got = tu_file_bytes(fd, off, len);
	ck_assert_mem_eq(got, want, len);
	free(got);

	bl_list_init(&in);
	ck_assert_int_eq(bl_list_pread(&in, fd, len, off), (ssize_t)len);
	tu_assert_list_eq(&in, want, len);

	bl_list_clear(&in);
	bl_list_clear(&l);
	close(fd);
	unlink(path);
	free(want);
}
END_TEST

START_TEST(test_many_segments_round_trip_through_write_fd_and_read_fd)
{
	uint64_t rng = seed + 1;
	const size_t len = 200001;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_list l, in;
	char path[PATH_MAX];
	size_t done = 0;
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	ck_assert_uint_gt(make_list(&l, want, len, 777, &rng), 100);
	/* the write starts where the file offset is, and moves it */
	ck_assert_int_eq(lseek(fd, 13, SEEK_SET), 13);
	ck_assert_int_eq(bl_list_write_fd(&l, fd, &done), 0);
	ck_assert_uint_eq(done, len);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 13 + (off_t)len);
	got = tu_file_bytes(fd, 13, len);
	ck_assert_mem_eq(got, want, len);
	free(got);

	ck_assert_int_eq(lseek(fd, 13, SEEK_SET), 13);
	bl_list_init(&in);
	ck_assert_int_eq(bl_list_read_fd(&in, fd, len), (ssize_t)len);
	tu_assert_list_eq(&in, want, len);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 13 + (off_t)len);

	bl_list_clear(&in);
	bl_list_clear(&l);
	close(fd);
	unlink(path);
	free(want);
}
END_TEST

START_TEST(test_more_than_iov_max_segments_round_trip)
{
	uint64_t rng = seed + 2;
	const size_t len = 3000 * 50;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct bl_list l, in;
	char path[PATH_MAX];
	size_t done = 0;
	unsigned nseg;
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	/* segments of 1..99 bytes: about 3000 of them, three IOV_MAX batches */
	nseg = make_list(&l, want, len, 99, &rng);
	ck_assert_uint_gt(nseg, 2 * IOV_MAX);

	ck_assert_int_eq(bl_list_pwrite(&l, fd, 12345, &done), 0);
	ck_assert_uint_eq(done, len);
	ck_assert_int_eq(file_size(fd), 12345 + (off_t)len);
	got = tu_file_bytes(fd, 12345, len);
	ck_assert_mem_eq(got, want, len);
	free(got);

	bl_list_init(&in);
	ck_assert_int_eq(bl_list_pread(&in, fd, len, 12345), (ssize_t)len);
	tu_assert_list_eq(&in, want, len);
	bl_list_clear(&in);

	/* the same through the file offset, also at an odd place */
	ck_assert_int_eq(lseek(fd, 777, SEEK_SET), 777);
	ck_assert_int_eq(bl_list_write_fd(&l, fd, &done), 0);
	ck_assert_uint_eq(done, len);
	got = tu_file_bytes(fd, 777, len);
	ck_assert_mem_eq(got, want, len);
	free(got);

	/* and through write_file / read_file */
	ck_assert_int_eq(bl_list_write_file(&l, path, 0600), 0);
	ck_assert_int_eq(bl_list_read_file(&in, path), (ssize_t)len);
	tu_assert_list_eq(&in, want, len);
	ck_assert_uint_eq(bl_list_num_buffers(&in), 1);

	bl_list_clear(&in);
	bl_list_clear(&l);
	close(fd);
	unlink(path);
	free(want);
}
END_TEST

START_TEST(test_pwrite_writes_at_offsets_and_keeps_file_offset)
{
	uint64_t rng = seed + 3;
	unsigned char *a = tu_rand_buf(5000, &rng), *b = tu_rand_buf(3000, &rng);
	unsigned char *got, zeros[1000] = { 0 };
	struct bl_list la, lb, in;
	char path[PATH_MAX];
	size_t done = 0;
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	make_list(&la, a, 5000, 300, &rng);
	make_list(&lb, b, 3000, 300, &rng);
	ck_assert_int_eq(lseek(fd, 42, SEEK_SET), 42);

	/* b first, past the end, leaving a hole; then a before it */
	ck_assert_int_eq(bl_list_pwrite(&lb, fd, 6000, &done), 0);
	ck_assert_uint_eq(done, 3000);
	ck_assert_int_eq(bl_list_pwrite(&la, fd, 0, &done), 0);
	ck_assert_uint_eq(done, 5000);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 42);
	ck_assert_int_eq(file_size(fd), 9000);

	got = tu_file_bytes(fd, 0, 9000);
	ck_assert_mem_eq(got, a, 5000);
	ck_assert_mem_eq(got + 5000, zeros, 1000);
	ck_assert_mem_eq(got + 6000, b, 3000);
	free(got);

	/* overwrite the middle of a with the first 3000 bytes of b */
	ck_assert_int_eq(bl_list_pwrite(&lb, fd, 1001, NULL), 0);
	bl_list_init(&in);
	ck_assert_int_eq(bl_list_pread(&in, fd, 3000, 1001), 3000);
	tu_assert_list_eq(&in, b, 3000);
	ck_assert_int_eq(bl_list_pread(&in, fd, 1, 1000), 1);
	ck_assert_int_eq(bl_list_pread(&in, fd, 1, 4001), 1);
	ck_assert_uint_eq(bl_list_length(&in), 3002);
	got = tu_flatten(&in);
	ck_assert_uint_eq(got[3000], a[1000]);
	ck_assert_uint_eq(got[3001], a[4001]);
	free(got);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 42);

	bl_list_clear(&in);
	bl_list_clear(&la);
	bl_list_clear(&lb);
	close(fd);
	unlink(path);
	free(a);
	free(b);
}
END_TEST

START_TEST(test_write_file_creates_truncates_and_read_file_uses_one_raw)
{
	uint64_t rng = seed + 4;
	const size_t len = 70000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_list l, small, in;
	char path[PATH_MAX];
	struct stat st;
	mode_t um;
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	close(fd);
	unlink(path);
	um = umask(0);
	umask(um);

	make_list(&l, want, len, 5000, &rng);
	ck_assert_int_eq(bl_list_write_file(&l, path, 0640), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, (off_t)len);
	ck_assert_uint_eq(st.st_mode & 0777, 0640 & ~um);

	/* the file's size is known: one raw, exactly full */
	bl_list_init(&in);
	ck_assert_int_eq(bl_list_read_file(&in, path), (ssize_t)len);
	tu_assert_list_eq(&in, want, len);
	ck_assert_uint_eq(bl_list_num_buffers(&in), 1);
	ck_assert_uint_eq(bl_list_pinned_unused(&in), 0);
	bl_list_clear(&in);

	/* rewriting with less truncates */
	make_list(&small, want, 10, 3, &rng);
	ck_assert_int_eq(bl_list_write_file(&small, path, 0600), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 10);
	ck_assert_int_eq(bl_list_read_file(&in, path), 10);
	tu_assert_list_eq(&in, want, 10);
	bl_list_clear(&in);

	/* an empty list makes an empty file; reading it appends nothing */
	bl_list_clear(&small);
	ck_assert_int_eq(bl_list_write_file(&small, path, 0600), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(bl_list_read_file(&in, path), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&in), 0);

	bl_list_clear(&l);
	unlink(path);
	free(want);
}
END_TEST

START_TEST(test_write_file_errors)
{
	struct bl_list l;
	char path[PATH_MAX];
	int lowfd = lowest_free_fd();

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "data", 4), 0);
	snprintf(path, sizeof(path), "%s/no-such-dir/file", tdir);
	ck_assert_int_eq(bl_list_write_file(&l, path, 0600), -ENOENT);
	ck_assert_int_eq(bl_list_write_file(&l, tdir, 0600), -EISDIR);
	ck_assert_int_eq(lowest_free_fd(), lowfd);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_read_appends_after_existing_content)
{
	uint64_t rng = seed + 5;
	unsigned char *want = tu_rand_buf(5005, &rng);
	struct bl_list l, in;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	make_list(&l, want + 5, 5000, 1000, &rng);
	ck_assert_int_eq(bl_list_write_fd(&l, fd, NULL), 0);

	bl_list_init(&in);
	ck_assert_int_eq(bl_list_append(&in, want, 5), 0);
	ck_assert_int_eq(bl_list_pread(&in, fd, 5000, 0), 5000);
	tu_assert_list_eq(&in, want, 5005);
	bl_list_clear(&in);

	ck_assert_int_eq(bl_list_append(&in, want, 5), 0);
	ck_assert_int_eq(bl_list_read_file(&in, path), 5000);
	tu_assert_list_eq(&in, want, 5005);

	bl_list_clear(&in);
	bl_list_clear(&l);
	close(fd);
	unlink(path);
	free(want);
}
END_TEST

START_TEST(test_read_of_zero_bytes_and_at_eof_return_zero)
{
	struct bl_list l;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	ck_assert_int_eq(write(fd, "0123456789", 10), 10);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);

	/* len 0: nothing read, nothing appended, the offset stays */
	ck_assert_int_eq(lseek(fd, 3, SEEK_SET), 3);
	ck_assert_int_eq(bl_list_read_fd(&l, fd, 0), 0);
	ck_assert_int_eq(bl_list_pread(&l, fd, 0, 3), 0);
	ck_assert_int_eq(lseek(fd, 0, SEEK_CUR), 3);
	tu_assert_list_eq(&l, "x", 1);

	/* at and past end of file */
	ck_assert_int_eq(lseek(fd, 0, SEEK_END), 10);
	ck_assert_int_eq(bl_list_read_fd(&l, fd, 100), 0);
	ck_assert_int_eq(bl_list_pread(&l, fd, 100, 10), 0);
	ck_assert_int_eq(bl_list_pread(&l, fd, 100, 1000), 0);
	tu_assert_list_eq(&l, "x", 1);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);

	/* short only at end of file */
	ck_assert_int_eq(bl_list_pread(&l, fd, 100, 4), 6);
	tu_assert_list_eq(&l, "x456789", 7);

	bl_list_clear(&l);
	close(fd);
	unlink(path);
}
END_TEST

START_TEST(test_large_read_is_split_into_raws_of_at_most_1_mib)
{
	uint64_t rng = seed + 6;
	const size_t len = 3 * (1u << 20) + 5;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct bl_list in;
	struct bl_ptr p;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	ck_assert_int_eq(write(fd, want, len), (ssize_t)len);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	bl_list_init(&in);
	/* SIZE_MAX: read to end of file */
	ck_assert_int_eq(bl_list_read_fd(&in, fd, SIZE_MAX), (ssize_t)len);
	tu_assert_list_eq(&in, want, len);
	ck_assert_uint_eq(bl_list_num_buffers(&in), 4);
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_int_eq(bl_list_get_ptr(&in, i, &p), 0);
		ck_assert_uint_le(p.len, 1u << 20);
		bl_ptr_release(&p);
	}

	bl_list_clear(&in);
	close(fd);
	unlink(path);
	free(want);
}
END_TEST

START_TEST(test_io_copies_nothing_and_writing_allocates_nothing)
{
	uint64_t rng = seed + 7;
	const size_t len = 3000 * 40;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct tu_alloc_stats st;
	struct bl_list l, in;
	char path[PATH_MAX];
	size_t done = 0;
	uint64_t before;
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	make_list(&l, want, len, 79, &rng);
	ck_assert_uint_gt(bl_list_num_buffers(&l), IOV_MAX);

	/* every allocation from now on fails: the write path must not ask */
	before = copied_now();
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_pwrite(&l, fd, 3, &done), 0);
	ck_assert_uint_eq(done, len);
	ck_assert_int_eq(bl_list_write_fd(&l, fd, &done), 0);
	ck_assert_uint_eq(done, len);
	tu_alloc_stats(&st);
	ck_assert_uint_eq(st.allocs, 0);
	ck_assert_uint_eq(st.failed, 0);
	tu_alloc_uninstall();

	/* reading fills new raws: the kernel writes, the library copies nothing */
	bl_list_init(&in);
	ck_assert_int_eq(bl_list_pread(&in, fd, len, 3), (ssize_t)len);
	ck_assert_int_eq(bl_list_read_file(&in, path), (ssize_t)len + 3);
	ck_assert_uint_eq(copied_now(), before);
	ck_assert_uint_eq(bl_list_length(&in), 2 * len + 3);

	bl_list_clear(&in);
	bl_list_clear(&l);
	close(fd);
	unlink(path);
	free(want);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(test_write_to_read_only_fd_is_ebadf_with_nothing_done)
{
	struct bl_list l;
	char path[PATH_MAX];
	size_t done = 99;
	int fd = tu_tmp_open(tdir, path, sizeof(path)), ro;

	close(fd);
	ro = open(path, O_RDONLY);
	ck_assert_int_ge(ro, 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);

	ck_assert_int_eq(bl_list_write_fd(&l, ro, &done), -EBADF);
	ck_assert_uint_eq(done, 0);
	done = 99;
	ck_assert_int_eq(bl_list_pwrite(&l, ro, 100, &done), -EBADF);
	ck_assert_uint_eq(done, 0);
	ck_assert_int_eq(bl_list_write_fd(&l, ro, NULL), -EBADF);
	ck_assert_int_eq(bl_list_write_fd(&l, -1, NULL), -EBADF);
	ck_assert_int_eq(file_size(ro), 0);

	/* an empty list is written without asking the descriptor */
	bl_list_clear(&l);
	done = 99;
	ck_assert_int_eq(bl_list_write_fd(&l, ro, &done), 0);
	ck_assert_uint_eq(done, 0);

	close(ro);
	unlink(path);
}
END_TEST

START_TEST(test_negative_offset_is_einval_before_any_io)
{
	struct bl_list l;
	char path[PATH_MAX];
	size_t done = 99;
	int fd = tu_tmp_open(tdir, path, sizeof(path));

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	ck_assert_int_eq(bl_list_pwrite(&l, fd, -1, &done), -EINVAL);
	ck_assert_uint_eq(done, 0);
	ck_assert_int_eq(bl_list_pread(&l, fd, 5, -1), -EINVAL);
	tu_assert_list_eq(&l, "hello", 5);
	ck_assert_int_eq(file_size(fd), 0);

	bl_list_clear(&l);
	close(fd);
	unlink(path);
}
END_TEST

struct fsize_result {
	int ret_write, ret_pwrite;
	size_t done_write, done_pwrite;
};

START_TEST(test_rlimit_fsize_gives_efbig_with_bytes_done_up_to_limit)
{
	const rlim_t limit = 10007;
	uint64_t rng = seed + 8;
	const size_t len = 50000;
	unsigned char *want = tu_rand_buf(len, &rng), *got;
	struct fsize_result res;
	struct bl_list l;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), pfd[2], status;
	pid_t pid;

	make_list(&l, want, len, 700, &rng);
	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* the child: the limit and the ignored signal stay here */
		struct rlimit rl = { limit, limit };
		int fd2;

		signal(SIGXFSZ, SIG_IGN);
		if (setrlimit(RLIMIT_FSIZE, &rl))
			_exit(2);
		memset(&res, 0, sizeof(res));
		res.ret_write = bl_list_write_fd(&l, fd, &res.done_write);
		fd2 = open(path, O_WRONLY);
		if (fd2 < 0)
			_exit(3);
		res.ret_pwrite = bl_list_pwrite(&l, fd2, 4000,
						&res.done_pwrite);
		if (write(pfd[1], &res, sizeof(res)) != sizeof(res))
			_exit(4);
		_exit(0);
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &res, sizeof(res)), sizeof(res));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(pfd[0]);

	ck_assert_int_eq(res.ret_write, -EFBIG);
	ck_assert_uint_eq(res.done_write, limit);
	ck_assert_int_eq(res.ret_pwrite, -EFBIG);
	ck_assert_uint_eq(res.done_pwrite, limit - 4000);
	ck_assert_int_eq(file_size(fd), (off_t)limit);
	got = tu_file_bytes(fd, 0, limit);
	ck_assert_mem_eq(got, want, 4000);
	ck_assert_mem_eq(got + 4000, want, limit - 4000);
	free(got);

	bl_list_clear(&l);
	close(fd);
	unlink(path);
	free(want);
}
END_TEST

START_TEST(test_read_from_write_only_fd_is_ebadf_and_list_unchanged)
{
	struct bl_list l;
	char path[PATH_MAX];
	int fd = tu_tmp_open(tdir, path, sizeof(path)), wo;

	ck_assert_int_eq(write(fd, "0123456789", 10), 10);
	wo = open(path, O_WRONLY);
	ck_assert_int_ge(wo, 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "keep", 4), 0);

	ck_assert_int_eq(bl_list_read_fd(&l, wo, 10), -EBADF);
	ck_assert_int_eq(bl_list_pread(&l, wo, 10, 0), -EBADF);
	ck_assert_int_eq(bl_list_read_fd(&l, -1, 10), -EBADF);
	tu_assert_list_eq(&l, "keep", 4);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);

	bl_list_clear(&l);
	close(wo);
	close(fd);
	unlink(path);
}
END_TEST

START_TEST(test_read_file_of_missing_path_or_directory_fails)
{
	struct bl_list l;
	char path[PATH_MAX];
	int lowfd = lowest_free_fd();

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "keep", 4), 0);
	snprintf(path, sizeof(path), "%s/missing", tdir);
	ck_assert_int_eq(bl_list_read_file(&l, path), -ENOENT);
	ck_assert_int_eq(bl_list_read_file(&l, tdir), -EISDIR);
	tu_assert_list_eq(&l, "keep", 4);
	ck_assert_int_eq(lowest_free_fd(), lowfd);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_read_allocation_failure_is_enomem_list_unchanged_no_leak)
{
	uint64_t rng = seed + 9;
	const size_t len = 3 * (1u << 20) + 10;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct tu_alloc_stats st;
	struct bl_list l;
	char path[PATH_MAX];
	ssize_t r = -1;
	int fd = tu_tmp_open(tdir, path, sizeof(path)), lowfd;
	uint64_t n;

	ck_assert_int_eq(write(fd, want, len), (ssize_t)len);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "head", 4), 0);

	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_pread(&l, fd, len, 0), -ENOMEM);
	ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
	ck_assert_int_eq(bl_list_read_fd(&l, fd, len), -ENOMEM);
	ck_assert_int_eq(bl_list_read_file(&l, path), -ENOMEM);
	tu_alloc_stats(&st);
	ck_assert_uint_gt(st.failed, 0);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();
	tu_assert_list_eq(&l, "head", 4);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);

	/*
	 * Fail the Nth allocation for every N until the read succeeds: four
	 * raws, a chunk for the local list's segments, a chunk in @l for
	 * the claim.  Each failure leaves @l as it was and leaks nothing.
	 */
	for (n = 1; n < 64; n++) {
		tu_alloc_install(n, 1);
		r = bl_list_pread(&l, fd, len, 0);
		tu_alloc_stats(&st);
		if (r >= 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
		tu_assert_list_eq(&l, "head", 4);
	}
	tu_alloc_uninstall();
	ck_assert_int_gt(n, 4);
	ck_assert_int_eq(r, (ssize_t)len);
	ck_assert_uint_eq(bl_list_length(&l), len + 4);
	bl_list_clear(&l);

	/* read_file too, and it closes its descriptor on every path */
	lowfd = lowest_free_fd();
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "head", 4), 0);
	for (n = 1; n < 64; n++) {
		tu_alloc_install(n, 1);
		r = bl_list_read_file(&l, path);
		tu_alloc_stats(&st);
		if (r >= 0)
			break;
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
		tu_assert_list_eq(&l, "head", 4);
		ck_assert_int_eq(lowest_free_fd(), lowfd);
	}
	tu_alloc_uninstall();
	ck_assert_int_eq(r, (ssize_t)len);
	ck_assert_int_eq(lowest_free_fd(), lowfd);
	bl_list_clear(&l);

	close(fd);
	unlink(path);
	free(want);
}
END_TEST

/* ---- files whose size is not known --------------------------------------- */

START_TEST(test_read_file_of_procfs_with_size_zero)
{
	struct bl_list l;
	struct stat st;
	unsigned char *b;
	ssize_t n;

	ck_assert_int_eq(stat("/proc/self/status", &st), 0);
	ck_assert_int_eq(st.st_size, 0);

	bl_list_init(&l);
	n = bl_list_read_file(&l, "/proc/self/status");
	ck_assert_int_gt(n, 0);
	ck_assert_uint_eq(bl_list_length(&l), (size_t)n);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	b = tu_flatten(&l);
	ck_assert_int_eq(memcmp(b, "Name:", 5), 0);
	ck_assert_ptr_nonnull(memmem(b, (size_t)n, "\nPid:", 5));
	ck_assert_uint_eq(b[n - 1], '\n');
	free(b);
	bl_list_clear(&l);

	/* one larger than the first chunk: read in growing raws */
	n = bl_list_read_file(&l, "/proc/self/smaps");
	ck_assert_int_gt(n, 4096);
	ck_assert_uint_gt(bl_list_num_buffers(&l), 1);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	b = tu_flatten(&l);
	ck_assert_uint_eq(b[n - 1], '\n');
	free(b);
	bl_list_clear(&l);
}
END_TEST

struct fifo_writer {
	const char *path;
	const struct bl_list *l;
	int ret;
	size_t done;
};

static void *fifo_writer_fn(void *arg)
{
	struct fifo_writer *w = arg;
	int fd = open(w->path, O_WRONLY);

	if (fd < 0) {
		w->ret = -errno;
		return NULL;
	}
	w->ret = bl_list_write_fd(w->l, fd, &w->done);
	close(fd);
	return NULL;
}

START_TEST(test_read_file_of_fifo_reads_to_eof)
{
	uint64_t rng = seed + 10;
	const size_t len = 300001;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct fifo_writer w;
	struct bl_list l, in;
	char path[PATH_MAX];
	pthread_t th;

	snprintf(path, sizeof(path), "%s/fifo", tdir);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	make_list(&l, want, len, 3000, &rng);
	w = (struct fifo_writer){ path, &l, 1, 0 };
	ck_assert_int_eq(pthread_create(&th, NULL, fifo_writer_fn, &w), 0);

	bl_list_init(&in);
	ck_assert_int_eq(bl_list_read_file(&in, path), (ssize_t)len);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_uint_eq(w.done, len);
	tu_assert_list_eq(&in, want, len);

	bl_list_clear(&in);
	bl_list_clear(&l);
	unlink(path);
	free(want);
}
END_TEST

/* ---- pipes and sockets: short transfers, EAGAIN, EINTR ------------------- */

struct writer {
	const struct bl_list *l;
	int fd;
	bool close_after;
	_Atomic pid_t tid;
	int ret;
	size_t done;
};

static void *writer_fn(void *arg)
{
	struct writer *w = arg;

	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	w->ret = bl_list_write_fd(w->l, w->fd, &w->done);
	if (w->close_after)
		close(w->fd);
	return NULL;
}

/*
 * Drops the pipe's capacity to one page.  A blocking writev on a pipe is
 * not short by itself (it waits for room until all is written); only a
 * signal cuts it short, which the test below uses.
 */
static void small_pipe(int p[2])
{
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
}

/*
 * Reads @fd to its end onto @got at @have (@bite bytes at a time, at most
 * 4096; yielding after each when @yield); more than @len in all fails.
 * Return: the new @have.
 */
static size_t read_to_eof(int fd, unsigned char *got, size_t have,
			  size_t len, size_t bite, bool yield)
{
	unsigned char buf[4096];

	ck_assert_uint_le(bite, sizeof(buf));
	for (;;) {
		ssize_t n = read(fd, buf, bite);

		if (n < 0 && errno == EINTR)
			continue;
		ck_assert_int_ge(n, 0);
		if (n == 0)
			return have;
		ck_assert_uint_le(have + (size_t)n, len);
		memcpy(got + have, buf, (size_t)n);
		have += (size_t)n;
		if (yield)
			sched_yield();
	}
}

/* Joins the writer @th: it wrote all @len bytes of @want, @got has them. */
static void writer_wrote_all(pthread_t th, const struct writer *w,
			     const unsigned char *got, size_t have,
			     const unsigned char *want, size_t len)
{
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(w->ret, 0);
	ck_assert_uint_eq(w->done, len);
	ck_assert_uint_eq(have, len);
	ck_assert_mem_eq(got, want, len);
}

START_TEST(test_list_larger_than_pipe_reaches_a_slow_reader_whole)
{
	uint64_t rng = seed + 11;
	const size_t len = 1u << 20;
	unsigned char *want = tu_rand_buf(len, &rng), *got = malloc(len);
	struct writer w = { .close_after = true, .ret = 1 };
	struct bl_list l;
	size_t have = 0;
	pthread_t th;
	int p[2];

	ck_assert_ptr_nonnull(got);
	make_list(&l, want, len, 700, &rng);
	ck_assert_uint_gt(bl_list_num_buffers(&l), IOV_MAX);
	small_pipe(p);
	w.l = &l;
	w.fd = p[1];
	ck_assert_int_eq(pthread_create(&th, NULL, writer_fn, &w), 0);

	/* drain in small bites, yielding, so the writer keeps finding it full */
	have = read_to_eof(p[0], got, have, len, 1000, true);
	writer_wrote_all(th, &w, got, have, want, len);

	close(p[0]);
	bl_list_clear(&l);
	free(got);
	free(want);
}
END_TEST

struct dribbler {
	const unsigned char *data;
	size_t len;
	int fd;
	uint64_t rng;
};

static void *dribbler_fn(void *arg)
{
	struct dribbler *d = arg;
	size_t off = 0;

	while (off < d->len) {
		size_t n = 1 + tu_rand(&d->rng) % 3000;
		ssize_t r;

		if (n > d->len - off)
			n = d->len - off;
		r = write(d->fd, d->data + off, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		off += (size_t)r;
		sched_yield();
	}
	close(d->fd);
	return NULL;
}

START_TEST(test_read_fd_from_a_dribbling_pipe_is_short_only_at_eof)
{
	uint64_t rng = seed + 12;
	const size_t len = 200000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct dribbler d;
	struct bl_list in;
	pthread_t th;
	int p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	d = (struct dribbler){ want, len, p[1], rng };
	ck_assert_int_eq(pthread_create(&th, NULL, dribbler_fn, &d), 0);

	bl_list_init(&in);
	/* many small writes arrive; each call still returns all it asked for */
	ck_assert_int_eq(bl_list_read_fd(&in, p[0], 150000), 150000);
	ck_assert_int_eq(bl_list_read_fd(&in, p[0], 1), 1);
	/* then short at end of file, and 0 after it */
	ck_assert_int_eq(bl_list_read_fd(&in, p[0], len), (ssize_t)len - 150001);
	ck_assert_int_eq(bl_list_read_fd(&in, p[0], len), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	tu_assert_list_eq(&in, want, len);

	bl_list_clear(&in);
	close(p[0]);
	free(want);
}
END_TEST

/* Reads whatever @fd (non-blocking) holds onto @buf at *@have. */
static size_t drain_nonblock(int fd, unsigned char *buf, size_t *have,
			     size_t cap)
{
	size_t got = 0;

	for (;;) {
		ssize_t n = read(fd, buf + *have, cap - *have);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			return got;
		}
		ck_assert_int_gt(n, 0);
		*have += (size_t)n;
		got += (size_t)n;
		ck_assert_uint_le(*have, cap);
		if (*have == cap)
			return got;
	}
}

START_TEST(test_nonblocking_socket_gives_eagain_with_progress_then_resumes)
{
	uint64_t rng = seed + 13;
	const size_t len = 1u << 20;
	unsigned char *want = tu_rand_buf(len, &rng), *got = malloc(len + 1);
	struct bl_list l, rest;
	size_t done = 0, pos, have = 0;
	int sv[2], sndbuf = 4096, r, rounds = 0;

	ck_assert_ptr_nonnull(got);
	make_list(&l, want, len, 3000, &rng);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	ck_assert_int_eq(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sndbuf,
				    sizeof(sndbuf)), 0);
	tu_set_nonblock(sv[0], true);
	tu_set_nonblock(sv[1], true);

	/* the socket takes part of it, then would block */
	ck_assert_int_eq(bl_list_write_fd(&l, sv[0], &done), -EAGAIN);
	ck_assert_uint_gt(done, 0);
	ck_assert_uint_lt(done, len);
	/* done counts exactly what reached the socket */
	ck_assert_uint_eq(drain_nonblock(sv[1], got, &have, len + 1), done);
	ck_assert_mem_eq(got, want, done);

	/* resume from done until all of it went */
	bl_list_init(&rest);
	for (pos = done; pos < len; pos += done) {
		ck_assert_int_eq(bl_list_substr_of(&rest, &l, pos, len - pos), 0);
		r = bl_list_write_fd(&rest, sv[0], &done);
		if (r == -EAGAIN) {
			ck_assert_uint_gt(done, 0);
			drain_nonblock(sv[1], got, &have, len + 1);
		} else {
			ck_assert_int_eq(r, 0);
			ck_assert_uint_eq(done, len - pos);
		}
		rounds++;
	}
	ck_assert_int_gt(rounds, 1);
	drain_nonblock(sv[1], got, &have, len + 1);
	ck_assert_uint_eq(have, len);
	ck_assert_mem_eq(got, want, len);

	bl_list_clear(&rest);
	bl_list_clear(&l);
	close(sv[0]);
	close(sv[1]);
	free(got);
	free(want);
}
END_TEST

/*
 * The reader of a pipe or socket went away: the write fails with -EPIPE
 * and the process lives, with SIGPIPE at its default disposition (which
 * kills).  A SIGPIPE the caller had pending (blocked) stays pending; none
 * is left behind otherwise.
 */
START_TEST(test_write_to_a_gone_reader_is_epipe_without_sigpipe)
{
	struct sigaction dfl, old;
	sigset_t pipe_set, mask0;
	struct bl_list l;
	size_t done = 1;
	int fds[2];

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	ck_assert_int_eq(sigaction(SIGPIPE, &dfl, &old), 0);
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	for (int sock = 0; sock < 2; sock++) {
		if (sock)
			ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0,
						    fds), 0);
		else
			ck_assert_int_eq(pipe(fds), 0);
		close(fds[0]);
		ck_assert_int_eq(bl_list_write_fd(&l, fds[1], &done), -EPIPE);
		ck_assert_uint_eq(done, 0);
		ck_assert(!tu_sigpipe_pending());

		/* blocked and pending already: the caller's stays */
		ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &pipe_set, &mask0),
				 0);
		ck_assert_int_eq(raise(SIGPIPE), 0);
		ck_assert(tu_sigpipe_pending());
		ck_assert_int_eq(bl_list_write_fd(&l, fds[1], NULL), -EPIPE);
		ck_assert(tu_sigpipe_pending());
		{
			static const struct timespec zero = { 0, 0 };

			ck_assert_int_eq(sigtimedwait(&pipe_set, NULL, &zero),
					 SIGPIPE);
		}
		/* blocked, none pending: the write's own is consumed */
		ck_assert_int_eq(bl_list_write_fd(&l, fds[1], NULL), -EPIPE);
		ck_assert(!tu_sigpipe_pending());
		ck_assert_int_eq(pthread_sigmask(SIG_SETMASK, &mask0, NULL), 0);
		close(fds[1]);
	}
	bl_list_clear(&l);
	ck_assert_int_eq(sigaction(SIGPIPE, &old, NULL), 0);
}
END_TEST

START_TEST(test_nonblocking_read_gives_eagain_or_what_arrived)
{
	struct bl_list l;
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
			 0);
	tu_set_nonblock(sv[0], true);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "keep", 4), 0);

	/* nothing there: -EAGAIN, list unchanged */
	ck_assert_int_eq(bl_list_read_fd(&l, sv[0], 100), -EAGAIN);
	tu_assert_list_eq(&l, "keep", 4);

	/* some bytes there: they are returned, not lost */
	ck_assert_int_eq(write(sv[1], "0123456789", 10), 10);
	ck_assert_int_eq(bl_list_read_fd(&l, sv[0], 100), 10);
	tu_assert_list_eq(&l, "keep0123456789", 14);

	/* after the peer closes: end of file */
	close(sv[1]);
	ck_assert_int_eq(bl_list_read_fd(&l, sv[0], 100), 0);
	tu_assert_list_eq(&l, "keep0123456789", 14);

	bl_list_clear(&l);
	close(sv[0]);
}
END_TEST

/*
 * EINTR: a thread blocks in writev on a full pipe (or read on an empty
 * one); the test waits until /proc/self/task/<tid>/syscall shows it inside
 * that system call, then signals it.  The handler is installed without
 * SA_RESTART and nothing else can wake the thread, so the call fails with
 * EINTR having moved no byte; the library must call again.  Done three
 * times, then the pipe is drained (or fed) and everything must arrive.
 */
/* Lock-free atomic: safe in a handler, and ordered for the other thread. */
static atomic_int nsig;

static void on_sigusr1(int sig)
{
	int saved = errno;

	(void)sig;
	atomic_fetch_add(&nsig, 1);
	errno = saved;
}

/* The system call @tid is blocked in, -1 when running, -2 if unknown. */
static long blocked_in(pid_t tid)
{
	char p[64], buf[256];
	long nr;
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(p, O_RDONLY);
	if (fd < 0)
		return -2;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -2;
	buf[n] = '\0';
	if (!strncmp(buf, "running", 7))
		return -1;
	if (sscanf(buf, "%ld", &nr) != 1)
		return -2;
	return nr;
}

/* Waits (up to ~20 s) until @tid sits in system call @nr. */
static bool wait_blocked_in(pid_t tid, long nr)
{
	const struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 20000; i++) {
		long cur = blocked_in(tid);

		if (cur == nr)
			return true;
		if (cur == -2)
			return false;
		nanosleep(&ms, NULL);
	}
	return false;
}

static bool can_see_syscalls(void)
{
	long nr = blocked_in((pid_t)syscall(SYS_gettid));

	/* reading our own file: we are inside read(2), or "running" */
	if (nr == -2) {
		fprintf(stderr, "test_io: /proc/self/task/*/syscall unreadable, "
			"EINTR test skipped\n");
		return false;
	}
	return true;
}

static void install_sigusr1(struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = 0;	/* no SA_RESTART: blocked calls fail with EINTR */
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, old), 0);
	atomic_store(&nsig, 0);
}

/* Interrupts @th three times while it is blocked in system call @nr. */
static void interrupt_thrice(pthread_t th, _Atomic pid_t *tidp, long nr)
{
	const struct timespec ms = { 0, 1000000 };
	pid_t tid;

	while (!(tid = atomic_load(tidp)))
		nanosleep(&ms, NULL);
	for (int k = 1; k <= 3; k++) {
		ck_assert_msg(wait_blocked_in(tid, nr),
			      "thread never blocked in syscall %ld", nr);
		ck_assert_int_eq(pthread_kill(th, SIGUSR1), 0);
		/* the handler runs after the call returned EINTR */
		while (atomic_load(&nsig) < k)
			nanosleep(&ms, NULL);
	}
	/* and the library went back into the same call */
	ck_assert(wait_blocked_in(tid, nr));
}

START_TEST(test_eintr_during_blocked_write_is_retried)
{
	uint64_t rng = seed + 14;
	const size_t len = 64 * 1024;
	unsigned char *want = tu_rand_buf(len, &rng), *got, fill[4096];
	struct sigaction old;
	struct writer w = { .close_after = true, .ret = 1 };
	struct bl_list l;
	size_t prefill = 0, have = 0;
	pthread_t th;
	int p[2];

	if (!can_see_syscalls()) {
		free(want);
		return;
	}
	make_list(&l, want, len, 1000, &rng);
	small_pipe(p);
	/* fill the pipe to the brim so the writer moves no byte until drained */
	memset(fill, 'f', sizeof(fill));
	tu_set_nonblock(p[1], true);
	for (;;) {
		ssize_t n = write(p[1], fill, prefill ? 1 : sizeof(fill));

		if (n < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			break;
		}
		prefill += (size_t)n;
	}
	tu_set_nonblock(p[1], false);
	got = malloc(prefill + len);
	ck_assert_ptr_nonnull(got);

	install_sigusr1(&old);
	w.l = &l;
	w.fd = p[1];
	ck_assert_int_eq(pthread_create(&th, NULL, writer_fn, &w), 0);
	interrupt_thrice(th, &w.tid, SYS_writev);

	for (;;) {
		ssize_t n = read(p[0], got + have, prefill + len - have);

		if (n < 0 && errno == EINTR)
			continue;
		ck_assert_int_ge(n, 0);
		if (n == 0)
			break;
		have += (size_t)n;
	}
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(sigaction(SIGUSR1, &old, NULL), 0);
	ck_assert_int_eq(atomic_load(&nsig), 3);
	ck_assert_int_eq(w.ret, 0);
	ck_assert_uint_eq(w.done, len);
	ck_assert_uint_eq(have, prefill + len);
	ck_assert_mem_eq(got + prefill, want, len);

	close(p[0]);
	bl_list_clear(&l);
	free(got);
	free(want);
}
END_TEST

static int pipe_bytes(int fd)
{
	int n = -1;

	ck_assert_int_eq(ioctl(fd, FIONREAD, &n), 0);
	return n;
}

/*
 * Short writes, made deterministic: the writer fills the one-page pipe and
 * blocks inside writev having moved 4096 bytes; a signal then makes that
 * writev return 4096, which ends 96 bytes into a 1000-byte segment.  The
 * library must go on from the middle of that segment.  The test reads one
 * page, lets the writer refill it, and cuts it short again, three times.
 */
START_TEST(test_short_writes_cut_by_signals_resume_mid_segment)
{
	uint64_t rng = seed + 16;
	const size_t len = 64 * 1024, page = 4096;
	unsigned char *want = tu_rand_buf(len, &rng), *got = malloc(len);
	const struct timespec ms = { 0, 1000000 };
	struct writer w = { .close_after = true, .ret = 1 };
	struct sigaction old;
	struct bl_list l;
	size_t have = 0;
	pthread_t th;
	pid_t tid;
	int p[2];

	ck_assert_ptr_nonnull(got);
	if (!can_see_syscalls()) {
		free(got);
		free(want);
		return;
	}
	bl_list_init(&l);
	tu_append_fixed(&l, want, len, 1000);
	small_pipe(p);
	install_sigusr1(&old);
	w.l = &l;
	w.fd = p[1];
	ck_assert_int_eq(pthread_create(&th, NULL, writer_fn, &w), 0);
	while (!(tid = atomic_load(&w.tid)))
		nanosleep(&ms, NULL);

	for (int k = 1; k <= 3; k++) {
		/* the page is full and the writer waits inside writev */
		for (int i = 0; i < 20000 && pipe_bytes(p[0]) < (int)page; i++)
			nanosleep(&ms, NULL);
		ck_assert_int_eq(pipe_bytes(p[0]), page);
		ck_assert(wait_blocked_in(tid, SYS_writev));
		ck_assert_int_eq(pthread_kill(th, SIGUSR1), 0);
		while (atomic_load(&nsig) < k)
			nanosleep(&ms, NULL);
		/* take exactly that page; the writer goes on with the next */
		ck_assert_int_eq(read(p[0], got + have, page), page);
		have += page;
		ck_assert_uint_ne(have % 1000, 0);
	}
	have = read_to_eof(p[0], got, have, len, page, false);
	writer_wrote_all(th, &w, got, have, want, len);
	ck_assert_int_eq(sigaction(SIGUSR1, &old, NULL), 0);

	close(p[0]);
	bl_list_clear(&l);
	free(got);
	free(want);
}
END_TEST

struct reader {
	struct bl_list *l;
	int fd;
	size_t len;
	_Atomic pid_t tid;
	ssize_t ret;
};

static void *reader_fn(void *arg)
{
	struct reader *r = arg;

	atomic_store(&r->tid, (pid_t)syscall(SYS_gettid));
	r->ret = bl_list_read_fd(r->l, r->fd, r->len);
	return NULL;
}

START_TEST(test_eintr_during_blocked_read_is_retried)
{
	uint64_t rng = seed + 15;
	const size_t len = 10000;
	unsigned char *want = tu_rand_buf(len, &rng);
	struct sigaction old;
	struct reader rd = { .len = len, .ret = 1 };
	struct bl_list in;
	pthread_t th;
	int p[2];

	if (!can_see_syscalls()) {
		free(want);
		return;
	}
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	bl_list_init(&in);
	install_sigusr1(&old);
	rd.l = &in;
	rd.fd = p[0];
	ck_assert_int_eq(pthread_create(&th, NULL, reader_fn, &rd), 0);
	interrupt_thrice(th, &rd.tid, SYS_read);

	ck_assert_int_eq(write(p[1], want, len), (ssize_t)len);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	ck_assert_int_eq(sigaction(SIGUSR1, &old, NULL), 0);
	ck_assert_int_eq(atomic_load(&nsig), 3);
	ck_assert_int_eq(rd.ret, (ssize_t)len);
	tu_assert_list_eq(&in, want, len);

	bl_list_clear(&in);
	close(p[0]);
	close(p[1]);
	free(want);
}
END_TEST

/* NULL where a list, a path or an output belongs is -EINVAL, never a crash. */
START_TEST(test_null_arguments_are_einval)
{
	struct bl_list l;
	size_t done = 99, ma = 7, oa = 7;
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_write_fd(NULL, p[1], &done), -EINVAL);
	ck_assert_uint_eq(done, 0);
	done = 99;
	ck_assert_int_eq(bl_list_pwrite(NULL, p[1], 0, &done), -EINVAL);
	ck_assert_uint_eq(done, 0);
	ck_assert_int_eq(bl_list_read_fd(NULL, p[0], 10), -EINVAL);
	ck_assert_int_eq(bl_list_pread(NULL, p[0], 10, 0), -EINVAL);
	ck_assert_int_eq(bl_list_read_file(NULL, "/dev/null"), -EINVAL);
	ck_assert_int_eq(bl_list_read_file(&l, NULL), -EINVAL);
	ck_assert_int_eq(bl_list_write_file(NULL, "x", 0600), -EINVAL);
	ck_assert_int_eq(bl_list_write_file(&l, NULL, 0600), -EINVAL);
	ck_assert_int_eq(bl_fd_dio_align(p[0], NULL, &oa), -EINVAL);
	ck_assert_int_eq(bl_fd_dio_align(p[0], &ma, NULL), -EINVAL);
	ck_assert_uint_eq(ma, 7);
	ck_assert_uint_eq(oa, 7);
	ck_assert_uint_eq(bl_list_length(&l), 0);
	close(p[0]);
	close(p[1]);
}
END_TEST

int main(void)
{
	const TTest *files_tests[] = {
		test_one_segment_round_trip_at_unaligned_offset,
		test_many_segments_round_trip_through_write_fd_and_read_fd,
		test_more_than_iov_max_segments_round_trip,
		test_pwrite_writes_at_offsets_and_keeps_file_offset,
		test_write_file_creates_truncates_and_read_file_uses_one_raw,
		test_write_file_errors,
		test_read_appends_after_existing_content,
		test_read_of_zero_bytes_and_at_eof_return_zero,
		test_large_read_is_split_into_raws_of_at_most_1_mib,
		test_io_copies_nothing_and_writing_allocates_nothing,
		NULL
	};
	const TTest *errors_tests[] = {
		test_write_to_read_only_fd_is_ebadf_with_nothing_done,
		test_negative_offset_is_einval_before_any_io,
		test_rlimit_fsize_gives_efbig_with_bytes_done_up_to_limit,
		test_read_from_write_only_fd_is_ebadf_and_list_unchanged,
		test_read_file_of_missing_path_or_directory_fails,
		test_read_allocation_failure_is_enomem_list_unchanged_no_leak,
		test_null_arguments_are_einval,
		NULL
	};
	const TTest *unsized_tests[] = {
		test_read_file_of_procfs_with_size_zero,
		test_read_file_of_fifo_reads_to_eof,
		NULL
	};
	const TTest *streams_tests[] = {
		test_list_larger_than_pipe_reaches_a_slow_reader_whole,
		test_read_fd_from_a_dribbling_pipe_is_short_only_at_eof,
		test_nonblocking_socket_gives_eagain_with_progress_then_resumes,
		test_nonblocking_read_gives_eagain_or_what_arrived,
		test_write_to_a_gone_reader_is_epipe_without_sigpipe,
		test_short_writes_cut_by_signals_resume_mid_segment,
		test_eintr_during_blocked_write_is_retried,
		test_eintr_during_blocked_read_is_retried,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("files", files_tests,
			 .timeout = 60, .once_setup = tdir_setup,
			 .once_teardown = tdir_teardown),
		TU_GROUP("errors", errors_tests,
			 .timeout = 60, .once_setup = tdir_setup,
			 .once_teardown = tdir_teardown),
		TU_GROUP("unsized", unsized_tests,
			 .timeout = 60, .once_setup = tdir_setup,
			 .once_teardown = tdir_teardown),
		TU_GROUP("streams", streams_tests, .timeout = 60),
		TU_GROUP_END
	};

	/* a write to a pipe whose reader is gone must fail, not kill the runner */
	signal(SIGPIPE, SIG_IGN);
	seed = tu_seed("test_io");
	return tu_run(tu_suite("io", groups));
}
