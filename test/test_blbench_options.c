/* SPDX-License-Identifier: MIT */
/*
 * test_blbench_options.c - blbench's and msgbench's command lines:
 *
 *  - bad options give a usage message and exit status 2, getopt's naming
 *    the program, not libtool's path to it; a target that cannot be
 *    opened gives a one-line reason and status 1; --help, --version;
 *  - msgbench checks every option (a reason naming the value, the usage,
 *    status 2), takes sizes as blbench does, --help on stdout, and a
 *    ping-pong run ends without errors;
 *  - rados:POOL's options (-c, -p, the pool name) without a cluster: a
 *    blbench built without the Ceph bridge says so in one line, status 2;
 *    one with it names the ceph.conf it could not read (-c or $CEPH_CONF).
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

/* ---- options ------------------------------------------------------------- */

START_TEST(test_bad_options_give_usage_and_status_2)
{
	static const char *const cases[][6] = {
		{ NULL },
		{ "10", NULL },
		{ "10", "fly", NULL },
		{ "ten", "write", NULL },
		{ "10", "write", "extra", NULL },
		{ "-t", "0", "10", "write", NULL },
		{ "-b", "4Q", "10", "write", NULL },
		{ "-b", "8", "10", "write", NULL },
		{ "-b", "2M", "-O", "3M", "10", "write" },
		{ "--format", "xml", "10", "write", NULL },
		{ "--target", "ftp:host", "10", "write", NULL },
		{ "--bogus", "10", "write", NULL },
		{ "--listen", "1.2.3.4:5", "10", "write", NULL },
		{ "--max-memory", "8M", "serve", NULL },
		{ "--max-memory", "lots", "serve", NULL },
		{ "--max-memory", "1G", "10", "write", NULL },
		{ "--idle-timeout", "-1", "serve", NULL },
		{ "--idle-timeout", "5", "cleanup", NULL },
		{ "cleanup", "now", NULL },
		/* a dot name is the target's own (its temporary files) */
		{ "--run-name", "..", "cleanup", NULL },
		{ "--prefix", "benchmark_data/../x", "cleanup", NULL },
	};
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	const char *args[N][8] = { { NULL } };
	struct tb_res r[N];

	for (size_t i = 0; i < N; i++)
		for (int j = 0; j < 6 && cases[i][j]; j++)
			args[i][j] = cases[i][j];
	/* all started at once: each is a process of its own either way */
	tb_run_many(NULL, N, args[0], 8, r);
	for (size_t i = 0; i < N; i++) {
		ck_assert_msg(r[i].status == 2,
			      "case %zu (%s ...): status %d\n%s", i,
			      args[i][0] ? args[i][0] : "", r[i].status,
			      r[i].err);
		ck_assert_msg(strstr(r[i].err, "usage: blbench") != NULL,
			      "case %zu: no usage on stderr:\n%s", i,
			      r[i].err);
		ck_assert_str_eq(r[i].out, "");
		tb_res_free(&r[i]);
	}
}
END_TEST

START_TEST(test_help_prints_usage_on_stdout_and_succeeds)
{
	struct tb_res r;

	TB_RUN(&r, "--help");
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: blbench"));
	ck_assert_ptr_nonnull(strstr(r.out, "--target"));
	ck_assert_ptr_nonnull(strstr(r.out, "--version"));
	/* SECONDS 0 is no time limit: a write fills the target */
	ck_assert_ptr_nonnull(strstr(r.out, "`blbench 0 write` fills it"));
	ck_assert_str_eq(r.err, "");
	tb_res_free(&r);
}
END_TEST

START_TEST(test_version_names_the_library_version)
{
	static const struct tb_how progs[] = {
		{ .prog = BLBENCH_PATH, .argv0 = "blbench" },
		{ .prog = MSGBENCH_PATH, .argv0 = "msgbench" },
	};
	char want[128];
	struct tb_res r;

	for (int i = 0; i < 2; i++) {
		tb_run_how(&r, &progs[i],
			   (const char *const[]){ "--version", NULL });
		tb_expect_status(&r, 0);
		tb_fmt(want, sizeof(want), "%s (libbufferlist) %s\n",
		       progs[i].argv0, BL_VERSION_STRING);
		ck_assert_str_eq(r.out, want);
		ck_assert_str_eq(r.err, "");
		tb_res_free(&r);
	}
}
END_TEST

/*
 * getopt names argv[0]: run under the full path (as libtool's wrapper
 * runs the real binary, from .libs), the messages still say "blbench:".
 */
START_TEST(test_getopt_messages_name_the_program_not_its_path)
{
	static const char *const progs[][2] = {
		{ BLBENCH_PATH, "blbench" },
		{ MSGBENCH_PATH, "msgbench" },
	};
	char want[64];
	struct tb_res r;

	for (int i = 0; i < 2; i++) {
		struct tb_how how = { .prog = progs[i][0],
				      .argv0 = progs[i][0] };

		tb_run_how(&r, &how, (const char *const[]){ "--bogus", NULL });
		tb_expect_status(&r, 2);
		tb_fmt(want, sizeof(want),
		       "%s: unrecognized option '--bogus'\n", progs[i][1]);
		ck_assert_msg(!strncmp(r.err, want, strlen(want)),
			      "wanted '%s' first in:\n%s", want, r.err);
		tb_res_free(&r);

		tb_run_how(&r, &how, (const char *const[]){ "-t", NULL });
		tb_expect_status(&r, 2);
		tb_fmt(want, sizeof(want),
		       "%s: option requires an argument -- 't'\n", progs[i][1]);
		ck_assert_msg(!strncmp(r.err, want, strlen(want)),
			      "wanted '%s' first in:\n%s", want, r.err);
		ck_assert_ptr_null(strstr(r.err, ".libs"));
		tb_res_free(&r);
	}
}
END_TEST

START_TEST(test_msgbench_bad_options_give_a_reason_and_status_2)
{
	static const char *const cases[][4] = {
		{ "--size", "0", NULL },
		{ "--size", "1x", NULL },
		{ "--size", "65M", NULL },
		{ "--size", "-1", NULL },
		{ "--conns", "0", NULL },
		{ "--conns", "65", NULL },
		{ "--conns", "2x", NULL },
		{ "--seconds", "0", NULL },
		{ "--seconds", "1s", NULL },
		{ "--seconds", "nan", NULL },
		{ "--mode", "burst", NULL },
		{ "--impl", "theirs", NULL },
		{ "--ring", "sqpoll", NULL },
		{ "--spin", "1000001", NULL },
		{ "--spin", "-1", NULL },
		{ "--direct-min", "1q", NULL },
		{ "--frames", "0", NULL },
		{ "--frames", "1e3", NULL },
		{ "--parse", "--size", "1K", NULL },	/* named: --parse */
		{ "extra", NULL },
	};
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	const struct tb_how how = { .prog = MSGBENCH_PATH,
				    .argv0 = "msgbench" };
	const char *args[N][5] = { { NULL } };
	struct tb_res r[N];

	for (size_t i = 0; i < N; i++)
		for (int j = 0; j < 4 && cases[i][j]; j++)
			args[i][j] = cases[i][j];
	tb_run_many(&how, N, args[0], 5, r);
	for (size_t i = 0; i < N; i++) {
		const char *bad = NULL;

		for (int j = 0; j < 4 && cases[i][j]; j++)
			bad = cases[i][j];
		/* --parse is what does not go with the rest */
		if (!strcmp(args[i][0], "--parse"))
			bad = args[i][0];
		ck_assert_msg(r[i].status == 2,
			      "case %zu (%s %s): status %d\n%s", i,
			      args[i][0], bad, r[i].status, r[i].err);
		/* one line of reason naming the value, then the usage */
		ck_assert_msg(!strncmp(r[i].err, "msgbench: ", 10) &&
			      strstr(r[i].err, bad) &&
			      strstr(r[i].err, bad) < strchr(r[i].err, '\n'),
			      "case %zu: no reason naming '%s':\n%s", i, bad,
			      r[i].err);
		ck_assert_ptr_nonnull(strstr(r[i].err, "\nusage: msgbench"));
		ck_assert_str_eq(r[i].out, "");
		tb_res_free(&r[i]);
	}
}
END_TEST

START_TEST(test_msgbench_help_lists_every_option_on_stdout)
{
	static const char *const opts[] = {
		"--size", "--conns", "--seconds", "--mode", "--parse",
		"--impl", "--zc", "--align", "--blocking", "--direct-min",
		"--no-regpool", "--lz4", "--ring", "--spin", "--local",
		"--frames", "--quiet",
		"--help", "--version",
	};
	struct tb_res r;

	TB_RUN_MSGBENCH(&r, "--help");
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: msgbench"));
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		ck_assert_msg(strstr(r.out, opts[i]) != NULL, "no %s in:\n%s",
			      opts[i], r.out);
	ck_assert_str_eq(r.err, "");
	tb_res_free(&r);
}
END_TEST

START_TEST(test_msgbench_takes_sizes_with_suffixes)
{
	struct tb_res r;

	TB_RUN_MSGBENCH(&r, "--size", "1K", "--direct-min", "0", "--conns", "2",
		     "--seconds", "0.1", "--impl", "ours", "-q");
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"RESULT msgbench stream size=1024 conns=2 impl=ours "));
	ck_assert_ptr_null(strstr(r.out, "impl=base"));
	tb_res_free(&r);

	TB_RUN_MSGBENCH(&r, "--parse", "--frames", "1000", "-q");
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(
		r.out, "RESULT msgbench parse size=0 conns=0 impl=ours "));
	tb_res_free(&r);

	/* rings with single_issuer (DEFER_TASKRUN) on both sides */
	TB_RUN_MSGBENCH(&r, "--mode", "pingpong", "--ring", "defer",
			"--seconds", "0.1", "--impl", "ours", "-q");
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"RESULT msgbench pingpong size=64 conns=1 impl=ours "));
	tb_res_free(&r);

	/* rings that never spin, and rings that spin up to 50 us */
	for (int i = 0; i < 2; i++) {
		TB_RUN_MSGBENCH(&r, "--mode", "pingpong", "--spin",
				i ? "50" : "0", "--seconds", "0.1", "--impl",
				"ours", "-q");
		tb_expect_status(&r, 0);
		ck_assert_ptr_nonnull(strstr(r.out,
			"RESULT msgbench pingpong size=64 conns=1 impl=ours "));
		tb_res_free(&r);
	}

	/*
	 * thread-local raws on both sides and in the parse benchmark: an
	 * --enable-debug build aborts if a raw crossed threads
	 */
	TB_RUN_MSGBENCH(&r, "--mode", "pingpong", "--local", "--seconds", "0.1",
		     "--impl", "ours", "-q");
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"RESULT msgbench pingpong size=64 conns=1 impl=ours "));
	tb_res_free(&r);
	TB_RUN_MSGBENCH(&r, "--size", "64K", "--conns", "2", "--local",
		     "--seconds", "0.1", "--impl", "ours", "-q");
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"RESULT msgbench stream size=65536 conns=2 impl=ours "));
	tb_res_free(&r);
	TB_RUN_MSGBENCH(&r, "--parse", "--local", "--frames", "1000", "-q");
	tb_expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(
		r.out, "RESULT msgbench parse size=0 conns=0 impl=ours "));
	tb_res_free(&r);
}
END_TEST

/*
 * A ping-pong client waits for the answer to its last request before it
 * closes: closing as soon as the request went to the kernel made the
 * server's reply fail (EPIPE) and the run end with "errors" and status
 * 1.  Large frames keep the reply in flight long enough to hit it; a
 * few runs make the race show.
 */
START_TEST(test_msgbench_pingpong_ends_without_errors)
{
	struct tb_res r;

	for (int i = 0; i < 3; i++) {
		TB_RUN_MSGBENCH(&r, "--mode", "pingpong", "--size", "4M",
			     "--seconds", "0.5", "--impl", "ours", "-q");
		tb_expect_status(&r, 0);
		ck_assert_ptr_nonnull(strstr(r.out,
			"RESULT msgbench pingpong size=4194304 conns=1 "
			"impl=ours "));
		ck_assert_msg(!strstr(r.err, "errors") &&
			      !strstr(r.err, "Broken pipe"),
			      "stderr:\n%s", r.err);
		tb_res_free(&r);
	}
}
END_TEST

START_TEST(test_pool_and_sizes_with_suffixes_are_accepted)
{
	char t[PATH_MAX + 64];
	struct tb_res r;

	TB_RUN(&r, "-p", "rbd", "--pool=data", "-b", "64K", "-O", "128KiB",
	    "-t", "2", "--max-objects", "3", "1", "write",
	    "--target", tb_spec(t, sizeof(t), "dir", tb_scratch, "d"));
	tb_expect_status(&r, 0);
	/* 3 objects of two 64 KiB ops each */
	ck_assert_int_eq(tb_check_write_summary(r.out, 65536, 131072), 6);
	tb_res_free(&r);
}
END_TEST

START_TEST(test_unopenable_target_gives_one_line_reason)
{
	char t[PATH_MAX + 64];
	struct tb_res r;

	TB_RUN(&r, "1", "write", "--target", "dir:/nonexistent/blbench/x");
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "dir:/nonexistent/blbench/x"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	tb_res_free(&r);

	/* a raw file that does not exist and has no size to be made with */
	TB_RUN(&r, "1", "write", "--target",
	    tb_spec(t, sizeof(t), "file", tb_scratch, "nofile"));
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "nofile"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	tb_res_free(&r);

	/* reading where nothing was written: rados bench's words */
	ck_assert_int_eq(
		mkdir(tb_path_in(t, sizeof(t), tb_scratch, "empty"), 0755), 0);
	TB_RUN(&r, "1", "seq", "--target",
	       tb_spec(t, sizeof(t), "dir", tb_scratch, "empty"));
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(
		r.err, "Must write data before running a read benchmark!"));
	/* and where it looked */
	ck_assert_ptr_nonnull(strstr(r.err, t));
	tb_res_free(&r);
}
END_TEST

/* ---- rados:POOL, without a cluster --------------------------------------- */

START_TEST(test_rados_target_options_are_checked_before_connecting)
{
	static const char *const cases[][7] = {
		{ "--target", "rados:", "10", "write", NULL },
		{ "--target", "rados:p", "10", "write", "-c", NULL },
		{ "--conf", "", "--target", "rados:p", "10", "write", NULL },
		/* -c means nothing to the other targets */
		{ "-c", "/etc/ceph/ceph.conf", "10", "write", NULL },
		/* nor does --no-hints */
		{ "--no-hints", "10", "write", NULL },
		{ "-p", "a", "--target", "rados:b", "10", "seq", NULL },
		{ "serve", "--target", "rados:p", NULL },
	};
	struct tb_res r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[8] = { NULL };

		for (int j = 0; j < 7 && cases[i][j]; j++)
			args[j] = cases[i][j];
		tb_run_env(&r, NULL, args);
		ck_assert_msg(r.status == 2, "case %zu: status %d\n%s", i,
			      r.status, r.err);
		ck_assert_msg(strstr(r.err, "usage: blbench") != NULL,
			      "case %zu: no usage on stderr:\n%s", i, r.err);
		ck_assert_str_eq(r.out, "");
		tb_res_free(&r);
	}
	/* the same pool twice is fine: it gets as far as the build or the
	 * conf */
	TB_RUN(&r, "-p", "p", "-c", "/nonexistent/blbench/ceph.conf",
	       "--target", "rados:p", "1", "write");
	ck_assert_ptr_null(strstr(r.err, "usage: blbench"));
	tb_res_free(&r);
	TB_RUN(&r, "--no-hints", "-c", "/nonexistent/blbench/ceph.conf",
	    "--target", "rados:p", "1", "write");
	ck_assert_ptr_null(strstr(r.err, "usage: blbench"));
	tb_res_free(&r);
	/* rados bench's habit: -p alone is the rados target */
	TB_RUN(&r, "-p", "pp", "-c", "/nonexistent/blbench/ceph.conf", "1",
	    "write");
	ck_assert_ptr_nonnull(strstr(r.err, "rados:pp"));
#ifdef BL_HAVE_CEPH
	tb_expect_status(&r, 1);
#else
	tb_expect_status(&r, 2);
#endif
	tb_res_free(&r);
	TB_RUN(&r, "--rados-bench-compat", "--crc", "-p", "pp", "1", "write");
	tb_expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "--rados-bench-compat"));
	tb_res_free(&r);
}
END_TEST

#ifdef BL_HAVE_CEPH
START_TEST(test_rados_target_without_a_cluster_gives_one_line_reason)
{
	struct tb_res r;

	TB_RUN(&r, "-c", "/nonexistent/blbench/ceph.conf", "--target",
	    "rados:blbench", "1", "write");
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "rados:blbench"));
	ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/blbench/ceph.conf"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	ck_assert_str_eq(r.out, "");
	tb_res_free(&r);

	/* no -c: $CEPH_CONF is the one read */
	TB_RUN_ENV(&r, "CEPH_CONF=/nonexistent/blbench/env.conf", "--target",
		"rados:blbench", "1", "seq");
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/blbench/env.conf"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	tb_res_free(&r);

	/* O_DIRECT means nothing to a pool */
	TB_RUN(&r, "--direct", "--target", "rados:blbench", "1", "write");
	tb_expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "--direct"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	tb_res_free(&r);
}
END_TEST
#else
START_TEST(test_rados_without_the_bridge_gives_one_line_and_status_2)
{
	struct tb_res r;

	TB_RUN(&r, "--target", "rados:blbench", "1", "write");
	tb_expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "without the Ceph bridge"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	ck_assert_str_eq(r.out, "");
	tb_res_free(&r);
}
END_TEST
#endif

int main(void)
{
	const TTest *tests[] = {
		test_bad_options_give_usage_and_status_2,
		test_help_prints_usage_on_stdout_and_succeeds,
		test_version_names_the_library_version,
		test_getopt_messages_name_the_program_not_its_path,
		test_msgbench_bad_options_give_a_reason_and_status_2,
		test_msgbench_help_lists_every_option_on_stdout,
		test_msgbench_takes_sizes_with_suffixes,
		test_msgbench_pingpong_ends_without_errors,
		test_pool_and_sizes_with_suffixes_are_accepted,
		test_unopenable_target_gives_one_line_reason,
		test_rados_target_options_are_checked_before_connecting,
#ifdef BL_HAVE_CEPH
		test_rados_target_without_a_cluster_gives_one_line_reason,
#else
		test_rados_without_the_bridge_gives_one_line_and_status_2,
#endif
		NULL
	};

	return tb_main("blbench_options", "options", tests);
}
