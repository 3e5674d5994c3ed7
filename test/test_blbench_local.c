/* SPDX-License-Identifier: MIT */
/*
 * test_blbench_local.c - blbench on local targets, a directory and a raw
 * file:
 *
 *  - 1-second runs of write, seq, rand and cleanup (with O_DIRECT, with
 *    lz4): the summary, read back, agrees with the run (writes made = ops
 *    in the metadata object = what seq finds, bandwidth = writes * size /
 *    time), and rados bench's labels are all there;
 *  - the default target is a fixed directory a later process finds;
 *  - a raw target too small for one round is refused, one that fills up
 *    stops the run cleanly, a timed write on a small one wraps; the
 *    durability options; the object area aligned to the op size; a
 *    truncated raw file is named as such; a SIZE typo in file:PATH:SIZE
 *    is bad usage;
 *  - a raw file takes one writer at a time (flock) and is read even where
 *    it may not be written; a directory that cannot be written is refused
 *    before any output;
 *  - cleanup removes a run whose metadata is damaged, and in one pass what
 *    a killed write left, keeping other runs; forged metadata never makes
 *    it remove files outside the target.
 *
 * Tests that need a user whom file modes bind run blbench as nobody when
 * the suite runs as root (and skip, saying so, if that is impossible).
 *
 * blbench runs as a user runs it: fork and exec of the built binary, its
 * output parsed back (tu_blbench.c).  Runs are kept small (64 KiB ops, a
 * few ops in flight, capped object counts).  Nothing here asserts on
 * timing: waits for a child are bounded only to tell a hang from an exit.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <grp.h>
#include <unistd.h>
#include <bufferlist/msgr.h>
#include <bufferlist/version.h>
#include "testutil.h"

/* The 8 bytes at @off of @path, as a string. */
static void bytes_at(const char *path, off_t off, char out[9])
{
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	memset(out, 0, 9);
	ck_assert_int_eq(pread(fd, out, 8, off), 8);
	close(fd);
}

START_TEST(test_raw_file_size_that_is_not_a_size_is_a_usage_error)
{
	char t[PATH_MAX + 64], p[PATH_MAX + 64];
	struct tb_res r;
	int fd;

	/* a typo in SIZE is not part of the path */
	TB_RUN(&r, "1", "write", "--target",
	    tb_spec(t, sizeof(t), "file", tb_scratch, "raw:1x"));
	tb_expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "'1x' is not a size"));
	ck_assert_ptr_nonnull(strstr(r.err, "usage: blbench"));
	ck_assert_int_eq(
		access(tb_path_in(p, sizeof(p), tb_scratch, "raw"), F_OK), -1);
	tb_res_free(&r);

	/* serve checks its target alike */
	TB_RUN(&r, "serve", "--listen", "127.0.0.1:0", "--target",
	    tb_spec(t, sizeof(t), "file", tb_scratch, "raw:10Q"));
	tb_expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "'10Q' is not a size"));
	tb_res_free(&r);

	/* a ':' followed by what no size looks like is the path's */
	TB_RUN(&r, "1", "write", "--target",
	    tb_spec(t, sizeof(t), "file", tb_scratch, "pci-0000:00:1f.2"));
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "pci-0000:00:1f.2"));
	tb_res_free(&r);

	/* and so is the whole spec when that names a file */
	fd = open(tb_path_in(p, sizeof(p), tb_scratch, "dev:1x"),
		  O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	TB_RUN(&r, "-b", "64K", "-t", "1", "--max-objects", "2", "0", "write",
	    "--target", tb_spec(t, sizeof(t), "file", tb_scratch, "dev:1x"));
	tb_expect_status(&r, 0);
	ck_assert_int_eq(tb_check_write_summary(r.out, 65536, 65536), 2);
	tb_res_free(&r);
}
END_TEST

/* ---- runs on each local target ------------------------------------------- */

START_TEST(test_dir_write_seq_rand_cleanup_agree_with_metadata)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], m[PATH_MAX + 64];
	uint64_t obj, op;
	uint32_t nops;
	struct tb_res r;
	int writes;

	tb_spec(t, sizeof(t), "dir", tb_scratch, "d");
	tb_path_in(d, sizeof(d), tb_scratch, "d");
	TB_RUN(&r, "-b", "64K", "-O", "256K", "-t", "4", "--max-objects", "400",
	    "1", "write", "--no-cleanup", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"Maintaining 4 concurrent writes of 65536 bytes to objects of "
		"size 262144 for up to 1 seconds or 400 objects\n"));
	writes = tb_check_write_summary(r.out, 65536, 262144);
	tb_res_free(&r);

	/* what the summary says is what the metadata and the directory hold */
	tb_read_meta(tb_path_in(m, sizeof(m), d, "benchmark_last_metadata"),
		     &obj, &nops, &op);
	ck_assert_uint_eq(obj, 262144);
	ck_assert_uint_eq(op, 65536);
	ck_assert_int_eq((int)nops, writes);
	ck_assert_int_eq(tb_count_objects(d), (writes + 3) / 4);

	TB_RUN(&r, "-t", "4", "1", "seq", "--target", t);
	tb_expect_status(&r, 0);
	tb_check_read_summary(r.out, 65536);
	ck_assert_int_le((int)tb_field(r.out, "Total reads made:"), writes);
	ck_assert_str_eq(r.err, "");
	tb_res_free(&r);

	TB_RUN(&r, "-t", "3", "1", "rand", "--target", t);
	tb_expect_status(&r, 0);
	tb_check_read_summary(r.out, 65536);
	tb_res_free(&r);

	TB_RUN(&r, "cleanup", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "Removed "));
	ck_assert_int_eq(tb_count_objects(d), 0);
	ck_assert_int_ne(access(m, F_OK), 0);
	tb_res_free(&r);
}
END_TEST

START_TEST(test_raw_file_with_direct_write_seq_rand_cleanup)
{
	char t[PATH_MAX + 64], f[PATH_MAX + 64];
	struct tb_res r;
	int writes;

	if (!tb_dio_dir[0]) {
		fprintf(stderr, "test_blbench_local: no file system here takes "
			"O_DIRECT; raw test skipped\n");
		return;
	}
	tb_path_in(f, sizeof(f), tb_dio_dir, "raw");
	tb_fmt(t, sizeof(t), "file:%s:64M", f);
	TB_RUN(&r, "-b", "64K", "-t", "4", "1", "write", "--no-cleanup",
	    "--direct", "--crc", "--target", t);
	tb_expect_status(&r, 0);
	writes = tb_check_write_summary(r.out, 65536, 65536);
	/* the first MiB is metadata; more ops only after a wrap */
	if (writes > (64 - 1) * 16)
		ck_assert_ptr_nonnull(
			strstr(r.err, "writing on from its start"));
	tb_res_free(&r);
	/* the header fills a file system block: the body starts on one */
	ck_assert_uint_eq(tb_stored_after_header(f, 1 << 20),
			  65536 - tb_blk_of(f));

	/* the file keeps its size; later runs name it without the size */
	tb_fmt(t, sizeof(t), "file:%s", f);
	TB_RUN(&r, "-t", "4", "1", "seq", "--direct", "--target", t);
	tb_expect_status(&r, 0);
	tb_check_read_summary(r.out, 65536);
	ck_assert_int_le((int)tb_field(r.out, "Total reads made:"), writes);
	tb_res_free(&r);

	TB_RUN(&r, "-t", "4", "1", "rand", "--direct", "--target", t);
	tb_expect_status(&r, 0);
	tb_check_read_summary(r.out, 65536);
	tb_res_free(&r);

	TB_RUN_OK("cleanup", "--target", t);
	tb_seq_fails(t, "Must write data");
}
END_TEST

START_TEST(test_dir_with_direct_and_lz4_round_trips)
{
	char t[PATH_MAX + 64];
	struct tb_res r;

	if (!tb_dio_dir[0])
		return;
	tb_spec(t, sizeof(t), "dir", tb_dio_dir, "dz");
	TB_RUN(&r, "-b", "64K", "-t", "4", "--max-objects", "200", "1", "write",
	    "--no-cleanup", "--direct", "--lz4", "--crc", "--target", t);
	tb_expect_status(&r, 0);
	tb_check_write_summary(r.out, 65536, 65536);
	/* the pattern compresses: fewer bytes stored than written */
	ck_assert(tb_field(r.out, "Stored bytes (lz4):") > 0);
	tb_res_free(&r);
	TB_RUN(&r, "-t", "4", "1", "seq", "--direct", "--target", t);
	tb_expect_status(&r, 0);
	tb_check_read_summary(r.out, 65536);
	tb_res_free(&r);
	TB_RUN(&r, "-t", "4", "1", "rand", "--target", t); /* buffered too */
	tb_expect_status(&r, 0);
	tb_res_free(&r);
}
END_TEST

START_TEST(test_default_target_is_found_by_a_later_process)
{
	char env[PATH_MAX + 32], d[PATH_MAX + 64], m[PATH_MAX + 64];
	uint64_t obj, op;
	uint32_t nops;
	struct tb_res r;
	int writes;

	tb_path_in(d, sizeof(d), tb_scratch, "default");
	tb_fmt(env, sizeof(env), "BLBENCH_DIR=%s", d);
	TB_RUN_ENV(&r, env, "-b", "64K", "-t", "2", "--max-objects", "50", "1",
		"write", "--no-cleanup");
	tb_expect_status(&r, 0);
	writes = tb_check_write_summary(r.out, 65536, 65536);
	tb_res_free(&r);
	tb_read_meta(tb_path_in(m, sizeof(m), d, "benchmark_last_metadata"),
		     &obj, &nops, &op);
	ck_assert_int_eq((int)nops, writes);

	TB_RUN_ENV(&r, env, "1", "seq");
	tb_expect_status(&r, 0);
	tb_check_read_summary(r.out, 65536);
	ck_assert_int_eq((int)tb_field(r.out, "Total reads made:"), writes);
	tb_res_free(&r);

	/* without --no-cleanup a write leaves nothing behind */
	TB_RUN_ENV(&r, env, "-b", "64K", "-t", "2", "--max-objects", "10", "1",
		"write", "--run-name", "other");
	tb_expect_status(&r, 0);
	tb_res_free(&r);
	ck_assert_int_eq(access(tb_path_in(m, sizeof(m), d, "other"), F_OK),
			 -1);
	ck_assert_int_eq(tb_count_objects(d), writes);
}
END_TEST

/* ---- cleanup ------------------------------------------------------------- */

/* A write of @nobj 64 KiB objects to @t kept for later; its prefix. */
static void keep_run(const char *t, const char *nobj, const char *run,
		     char *prefix, size_t len)
{
	struct tb_res r;

	TB_RUN(&r, "-b", "64K", "-t", "2", "--max-objects", nobj, "10", "write",
	    "--no-cleanup", "--run-name", run, "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total writes made:"),
			 atoi(nobj));
	tb_prefix_of(r.out, prefix, len);
	tb_res_free(&r);
}

START_TEST(test_cleanup_removes_a_run_whose_metadata_is_damaged)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], m[PATH_MAX + 64];
	char prefix[256];
	struct tb_res r;

	tb_spec(t, sizeof(t), "dir", tb_scratch, "bad");
	tb_path_in(d, sizeof(d), tb_scratch, "bad");
	tb_path_in(m, sizeof(m), d, "benchmark_last_metadata");

	/* with --prefix */
	keep_run(t, "6", "benchmark_last_metadata", prefix, sizeof(prefix));
	tb_flip_byte(m, 30);
	tb_seq_fails(t, "damaged");
	TB_RUN(&r, "cleanup", "--prefix", prefix, "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_msg(tb_count_objects(d) == 0, "%d objects left:\n%s",
		      tb_count_objects(d), r.err);
	ck_assert_int_ne(access(m, F_OK), 0);
	tb_res_free(&r);

	/* without: this host's objects that no run's metadata names */
	keep_run(t, "4", "benchmark_last_metadata", prefix, sizeof(prefix));
	tb_flip_byte(m, 3);
	TB_RUN(&r, "cleanup", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_msg(tb_count_objects(d) == 0, "%d objects left:\n%s",
		      tb_count_objects(d), r.err);
	ck_assert_int_ne(access(m, F_OK), 0);
	tb_res_free(&r);
}
END_TEST

/*
 * A write killed half way leaves objects no metadata names, beside an
 * older run's metadata: one cleanup removes both runs, and keeps a run
 * under another --run-name and a write still under way.
 */
START_TEST(test_one_cleanup_removes_what_a_killed_run_left)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], m[PATH_MAX + 64];
	char older[256], other[256];
	struct tb_res r;
	pid_t pid;
	int st;

	tb_spec(t, sizeof(t), "dir", tb_scratch, "k");
	tb_path_in(d, sizeof(d), tb_scratch, "k");
	tb_path_in(m, sizeof(m), d, "benchmark_last_metadata");
	keep_run(t, "5", "benchmark_last_metadata", older, sizeof(older));
	keep_run(t, "3", "other", other, sizeof(other));

	/* killed once it has written a few objects of its own */
	pid = TB_SPAWN("w", "-b", "64K", "-t", "1", "60", "write", "--target",
		       t);
	ck_assert(tb_wait_for_output(pid, "w", "  sec Cur ops", 30));
	for (int i = 0; i < 3000 && tb_count_objects(d) < 5 + 3 + 4; i++)
		usleep(10000);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	ck_assert_int_ge(tb_count_objects(d), 5 + 3 + 4);

	TB_RUN(&r, "cleanup", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_msg(tb_count_objects(d) == 3,
		      "%d objects left, not other's 3:\n%s",
		      tb_count_objects(d), r.err);
	ck_assert_int_ne(access(m, F_OK), 0);
	tb_res_free(&r);
	TB_RUN(&r, "1", "seq", "--run-name", "other", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total reads made:"), 3);
	tb_res_free(&r);

	/* a write under way keeps its objects */
	pid = TB_SPAWN("w", "-b", "64K", "-t", "1", "60", "write",
		       "--no-cleanup", "--target", t);
	ck_assert(tb_wait_for_output(pid, "w", "  sec Cur ops", 30));
	for (int i = 0; i < 3000 && tb_count_objects(d) < 3 + 4; i++)
		usleep(10000);
	TB_RUN(&r, "cleanup", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_msg(strstr(r.err, "still under way"), "%s", r.err);
	ck_assert_int_ge(tb_count_objects(d), 3 + 4);
	tb_res_free(&r);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	st = tb_wait_exit(pid, 30);
	ck_assert_int_eq(st, 0);

	/* --prefix: every object under it, and the metadata naming them */
	TB_RUN(&r, "cleanup", "--prefix", "benchmark_data", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_int_eq(tb_count_objects(d), 0);
	ck_assert_int_ne(access(tb_path_in(m, sizeof(m), d, "other"), F_OK), 0);
	ck_assert_int_ne(
		access(tb_path_in(m, sizeof(m), d, "benchmark_last_metadata"),
		       F_OK),
		0);
	tb_res_free(&r);
}
END_TEST

/*
 * Rewrites metadata file @path with @prefix as its run's object prefix,
 * with a valid crc32c: what a hostile or buggy writer could leave.
 */
static void forge_meta_prefix(const char *path, const char *prefix)
{
	unsigned char *old, *p;
	struct bl_list m;
	uint32_t plen;
	size_t rest;
	struct stat st;
	int fd;

	ck_assert_int_eq(stat(path, &st), 0);
	old = (unsigned char *)tb_slurp(path);
	/* rados bench's 24 bytes, magic, version, then the prefix's bytes */
	plen = old[32] | old[33] << 8 | old[34] << 16 | (uint32_t)old[35] << 24;
	p = old + 36 + plen;
	rest = (size_t)st.st_size - 36 - plen - 4;	/* less the crc */
	bl_list_init(&m);
	ck_assert_int_eq(bl_list_append(&m, old, 32), 0);
	ck_assert_int_eq(bl_encode_bytes(&m, prefix, strlen(prefix)), 0);
	ck_assert_int_eq(bl_list_append(&m, p, rest), 0);
	ck_assert_int_eq(bl_encode_u32(&m, bl_list_crc32c(&m, 0xFFFFFFFF)), 0);
	fd = open(path, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bl_list_write_fd(&m, fd, NULL), 0);
	close(fd);
	bl_list_clear(&m);
	free(old);
}

START_TEST(test_metadata_naming_files_elsewhere_is_refused)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], m[PATH_MAX + 64];
	char v[PATH_MAX + 64], prefix[256];
	int fd;

	tb_spec(t, sizeof(t), "dir", tb_scratch, "esc");
	tb_path_in(d, sizeof(d), tb_scratch, "esc");
	tb_path_in(m, sizeof(m), d, "benchmark_last_metadata");
	keep_run(t, "2", "benchmark_last_metadata", prefix, sizeof(prefix));
	/* a file beside the target that the forged prefix names */
	fd = open(tb_path_in(v, sizeof(v), tb_scratch, "victim_object0"),
		  O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	forge_meta_prefix(m, "../victim");

	tb_seq_fails(t, "damaged");
	TB_RUN_OK("cleanup", "--target", t);
	ck_assert_msg(access(v, F_OK) == 0, "cleanup removed a file outside %s",
		      d);
	ck_assert_int_eq(tb_count_objects(d), 0);
}
END_TEST

/* -O so large that the slot arithmetic would wrap (it divided by zero) */
START_TEST(test_object_size_beyond_16t_is_a_usage_error)
{
	char t[PATH_MAX + 64];
	struct tb_res r;

	TB_RUN(&r, "-b", "64", "-O", "18446744073709551552", "1", "write",
	    "--target", tb_fmt(t, sizeof(t), "file:%s/huge:8M", tb_scratch));
	tb_expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "-O wants a size up to 16T"));
	tb_res_free(&r);
}
END_TEST

/* ---- room ---------------------------------------------------------------- */

START_TEST(test_raw_target_too_small_is_refused_and_a_full_one_stops)
{
	char t[PATH_MAX + 64];
	struct tb_res r;

	tb_fmt(t, sizeof(t), "file:%s/small:2M", tb_scratch);
	TB_RUN(&r, "-b", "1M", "-t", "4", "1", "write", "--target", t);
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "not enough room"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	tb_res_free(&r);

	/* 8 MiB: the metadata MiB and room for 7 objects of 1 MiB */
	tb_fmt(t, sizeof(t), "file:%s/full:8M", tb_scratch);
	TB_RUN(&r, "-b", "1M", "-t", "2", "0", "write", "--no-cleanup",
	    "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total writes made:"), 7);
	ck_assert_ptr_nonnull(strstr(r.err, "no room for more"));
	tb_res_free(&r);
	tb_seq_reads(t, "5", 7);
}
END_TEST

/*
 * A write for a time on a file smaller than the time fills wraps to the
 * file's start (fio's time_based), says so once, runs the whole time, and
 * the seq pass after it finds every slot holding its op of this run.
 */
START_TEST(test_a_timed_write_on_a_small_file_wraps_and_runs_its_time)
{
	char t[PATH_MAX + 64];
	const char *say = "writing on from its start";
	struct tb_res r;
	char *at;

	tb_fmt(t, sizeof(t), "file:%s/wrap:8M", tb_scratch);
	/* 1 s: 8 ops of 1 MiB into the page cache take far less */
	TB_RUN(&r, "-b", "1M", "-t", "4", "1", "write", "--no-cleanup",
	       "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_double_ge(tb_field(r.out, "Total time run:"), 0.95);
	ck_assert_int_gt((int)tb_field(r.out, "Total writes made:"), 7);
	at = strstr(r.err, say);
	ck_assert_msg(at != NULL, "%s", r.err);
	ck_assert_ptr_null(strstr(at + 1, say));	/* once */
	ck_assert_ptr_null(strstr(r.err, "no room for more"));
	tb_res_free(&r);
	TB_RUN(&r, "10", "seq", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total reads made:"), 7);
	ck_assert_ptr_null(strstr(r.out, "not correct"));
	tb_res_free(&r);
	TB_RUN_OK("1", "rand", "--target", t);
}
END_TEST

/*
 * --fsync, --fdatasync and --sync on the targets that write files.  Each
 * write ends at its 8 objects (the 10 s are only a bound): a syncing disk
 * on a loaded machine once made 19 of 20 in a 1 s run.
 */
START_TEST(test_durability_options_write_and_read_back)
{
	static const char *const opts[][2] = {
		{ "--fsync", "1" }, { "--fdatasync", "3" },
		{ "--sync", "dsync" }, { "--sync", "sync" },
	};
	char t[PATH_MAX + 64];
	struct tb_res r;

	for (unsigned i = 0; i < 4; i++) {
		for (int k = 0; k < 2; k++) {
			if (k)
				tb_fmt(t, sizeof(t), "file:%s/dur%u:16M",
				       tb_scratch, i);
			else
				tb_spec(t, sizeof(t), "dir", tb_scratch, "dur");
			TB_RUN(&r, "-b", "64K", "-t", "4", "--max-objects", "8",
			       opts[i][0], opts[i][1], "10", "write",
			       "--no-cleanup", "--target", t);
			tb_expect_status(&r, 0);
			ck_assert_int_eq(
				(int)tb_field(r.out, "Total writes made:"), 8);
			tb_res_free(&r);
			tb_seq_reads(t, "5", 8);
			TB_RUN_OK("cleanup", "--target", t);
		}
	}
	TB_RUN(&r, "--sync", "osync", "1", "write");
	tb_expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "--sync wants dsync or sync"));
	tb_res_free(&r);
	TB_RUN(&r, "--fsync", "x", "1", "write");
	tb_expect_status(&r, 2);
	tb_res_free(&r);
	TB_RUN(&r, "--fsync", "1", "--fdatasync", "1", "1", "write");
	tb_expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "one or the other"));
	tb_res_free(&r);
	TB_RUN(&r, "--fsync", "1", "--target", "tcp:127.0.0.1:1", "1", "write");
	tb_expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "file: and dir:"));
	tb_res_free(&r);
}
END_TEST


/*
 * -b 2M: the object area starts at 2 MiB, so that no op straddles a
 * 2 MiB boundary, and the metadata block says so (BLBRAW02); -b 1M keeps
 * the first format (BLBRAW01, objects from 1 MiB).  seq and rand read both.
 */
START_TEST(test_raw_object_area_is_aligned_to_the_op_size_and_read_back)
{
	char t[PATH_MAX + 64], f[PATH_MAX + 64], got[9];
	struct tb_res r;

	tb_path_in(f, sizeof(f), tb_scratch, "aligned");
	TB_RUN(&r, "-b", "2M", "-t", "2", "0", "write", "--no-cleanup",
	    "--target", tb_fmt(t, sizeof(t), "file:%s:16M", f));
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total writes made:"), 7);
	tb_res_free(&r);
	bytes_at(f, 0, got);
	ck_assert_str_eq(got, "BLBRAW02");
	bytes_at(f, 1 << 20, got);
	ck_assert_str_ne(got, "BLBENCH1");
	bytes_at(f, 2 << 20, got);
	ck_assert_str_eq(got, "BLBENCH1");
	bytes_at(f, 14 << 20, got);
	ck_assert_str_eq(got, "BLBENCH1");
	tb_fmt(t, sizeof(t), "file:%s", f);
	tb_seq_reads(t, "5", 7);
	TB_RUN_OK("1", "rand", "--target", t);

	/* a write with -b 1M over it: the first format again */
	TB_RUN(&r, "-b", "1M", "-t", "2", "0", "write", "--no-cleanup",
	    "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total writes made:"), 15);
	tb_res_free(&r);
	bytes_at(f, 0, got);
	ck_assert_str_eq(got, "BLBRAW01");
	bytes_at(f, 1 << 20, got);
	ck_assert_str_eq(got, "BLBENCH1");
	tb_seq_reads(t, "5", 15);
}
END_TEST

START_TEST(test_truncated_raw_file_is_said_to_be_shorter_than_its_run)
{
	char t[PATH_MAX + 64], f[PATH_MAX + 64];
	struct tb_res r;

	tb_path_in(f, sizeof(f), tb_scratch, "trunc");
	TB_RUN(&r, "-b", "1M", "-t", "2", "0", "write", "--no-cleanup",
	    "--target", tb_fmt(t, sizeof(t), "file:%s:8M", f));
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total writes made:"), 7);
	tb_res_free(&r);
	/* room for 3 of the 7 objects now */
	ck_assert_int_eq(truncate(f, 4 << 20), 0);
	tb_fmt(t, sizeof(t), "file:%s", f);
	TB_RUN(&r, "1", "seq", "--target", t);
	tb_expect_status(&r, 1);
	ck_assert_msg(
		strstr(r.err, "is shorter than benchmark_last_metadata says"),
		"%s", r.err);
	ck_assert_ptr_null(strstr(r.err, "No space left"));
	tb_res_free(&r);
	TB_RUN(&r, "1", "rand", "--target", t);
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "is shorter than"));
	tb_res_free(&r);
}
END_TEST

/* ---- one writer at a time on a raw file ---------------------------------- */

static void expect_refused(const struct tb_res *r, const char *why)
{
	tb_expect_status(r, 1);
	ck_assert_msg(strstr(r->err, why) != NULL, "no '%s' in:\n%s", why,
		      r->err);
	ck_assert_msg(strstr(r->out, "sec Cur ops") == NULL,
		      "it ran before it was refused:\n%s", r->out);
}

START_TEST(test_raw_file_takes_one_writer_at_a_time)
{
	const char *dir = tb_dio_dir[0] ? tb_dio_dir : tb_scratch;
	char f[PATH_MAX + 64], t[PATH_MAX + 64], tcp[64];
	struct tb_res r;
	int fd;

	tb_path_in(f, sizeof(f), dir, "raw");
	TB_RUN_OK("-b", "64K", "-t", "2", "--max-objects", "10", "1", "write",
	    "--no-cleanup", "--target", tb_fmt(t, sizeof(t), "file:%s:8M", f));
	tb_fmt(t, sizeof(t), "file:%s", f);

	/* the test holds the lock as a reader would: readers share it */
	fd = open(f, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_SH | LOCK_NB), 0);
	TB_RUN(&r, "-b", "64K", "-t", "2", "1", "write", "--target", t);
	expect_refused(&r, "in use by another blbench");
	tb_res_free(&r);
	tb_seq_reads(t, "1", 10);

	/* ... then as a writer would: nobody else gets in */
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	TB_RUN(&r, "1", "rand", "--target", t);
	expect_refused(&r, "being written by another blbench");
	tb_res_free(&r);
	TB_RUN(&r, "cleanup", "--target", t);
	expect_refused(&r, "in use by another blbench");
	tb_res_free(&r);
	close(fd);

	/* a `blbench serve` of the file is its writer while it runs */
	tb_start_server(t, tcp, sizeof(tcp));
	TB_RUN(&r, "-b", "64K", "-t", "2", "1", "write", "--target", t);
	expect_refused(&r, "in use by another blbench");
	tb_res_free(&r);
	/* its clients still get in, buffered and (its second open) O_DIRECT */
	TB_RUN_OK("1", "seq", "--target", tcp);
	if (tb_dio_dir[0]) {
		TB_RUN_OK("-b", "64K", "-t", "2", "--max-objects", "10", "1",
		    "write", "--no-cleanup", "--direct", "--target", tcp);
	}
	tb_stop_server();

	/* nothing was overwritten behind the last writer's back */
	tb_seq_reads(t, "1", 10);
}
END_TEST

/* ---- targets this user may only read ------------------------------------- */

/* Lets user nobody reach what the test makes in scratch. */
static void open_scratch_to_all(void)
{
	ck_assert_int_eq(chmod(tb_scratch, 0755), 0);
}

/* A child that could not become nobody: the test cannot be made here. */
static bool cannot_be_nobody(const struct tb_res *r)
{
	if (r->status != 125)
		return false;
	fprintf(stderr,
		"test_blbench_local: cannot run as user nobody here; test "
		"skipped\n");
	return true;
}

START_TEST(test_raw_file_that_cannot_be_written_is_still_read)
{
	char f[PATH_MAX + 64], t[PATH_MAX + 64];
	struct tb_res r;

	tb_path_in(f, sizeof(f), tb_scratch, "ro");
	TB_RUN_OK("-b", "64K", "-t", "2", "--max-objects", "10", "1", "write",
	    "--no-cleanup", "--target", tb_fmt(t, sizeof(t), "file:%s:8M", f));
	tb_fmt(t, sizeof(t), "file:%s", f);
	ck_assert_int_eq(chmod(f, 0444), 0);
	open_scratch_to_all();

	/* the file really is read-only to nobody (root would ignore 0444) */
	TB_RUN_NOBODY(&r, "-b", "64K", "1", "write", "--target", t);
	if (cannot_be_nobody(&r)) {
		tb_res_free(&r);
		return;
	}
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "Permission denied"));
	tb_res_free(&r);
	/* and seq, rand verify it all the same */
	TB_RUN_NOBODY(&r, "1", "seq", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total reads made:"), 10);
	tb_res_free(&r);
	TB_RUN_NOBODY_OK("1", "rand", "--target", t);
}
END_TEST

START_TEST(test_unwritable_directory_is_refused_before_the_header)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64];
	struct tb_res r;
	int fd;

	ck_assert_int_eq(
		mkdir(tb_path_in(d, sizeof(d), tb_scratch, "ro"), 0555), 0);
	open_scratch_to_all();
	TB_RUN_NOBODY(&r, "-b", "64K", "1", "write", "--target",
		   tb_spec(t, sizeof(t), "dir", tb_scratch, "ro"));
	if (!cannot_be_nobody(&r)) {
		tb_expect_status(&r, 1);
		ck_assert_msg(strstr(r.err, "cannot write in dir:"), "%s",
			      r.err);
		ck_assert_msg(r.out[0] == 0, "it printed before it failed:\n%s",
			      r.out);
		ck_assert_int_eq(tb_count_objects(d), 0);
	}
	tb_res_free(&r);

	/* a file where the directory should be, whoever runs it */
	fd = open(tb_path_in(d, sizeof(d), tb_scratch, "plain"),
		  O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	TB_RUN(&r, "-b", "64K", "1", "write", "--target",
	    tb_spec(t, sizeof(t), "dir", tb_scratch, "plain"));
	tb_expect_status(&r, 1);
	ck_assert_str_eq(r.out, "");
	ck_assert_ptr_nonnull(strstr(r.err, "Not a directory"));
	tb_res_free(&r);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		test_raw_file_size_that_is_not_a_size_is_a_usage_error,
		test_dir_write_seq_rand_cleanup_agree_with_metadata,
		test_raw_file_with_direct_write_seq_rand_cleanup,
		test_dir_with_direct_and_lz4_round_trips,
		test_default_target_is_found_by_a_later_process,
		test_cleanup_removes_a_run_whose_metadata_is_damaged,
		test_one_cleanup_removes_what_a_killed_run_left,
		test_metadata_naming_files_elsewhere_is_refused,
		test_object_size_beyond_16t_is_a_usage_error,
		test_raw_target_too_small_is_refused_and_a_full_one_stops,
		test_a_timed_write_on_a_small_file_wraps_and_runs_its_time,
		test_durability_options_write_and_read_back,
		test_raw_object_area_is_aligned_to_the_op_size_and_read_back,
		test_truncated_raw_file_is_said_to_be_shorter_than_its_run,
		test_raw_file_takes_one_writer_at_a_time,
		test_raw_file_that_cannot_be_written_is_still_read,
		test_unwritable_directory_is_refused_before_the_header,
		NULL
	};

	return tb_main("blbench_local", "local", tests);
}
