/* SPDX-License-Identifier: MIT */
/*
 * test_blbench_jobs.c - blbench --jobs N: N clients in one run.  What it
 * proves, on the dir:, file: and tcp: targets (rados: runs in
 * check-ceph's cluster, test/blbench-rados-check.sh): the summary and the
 * JSON are the run's (every client's ops counted once) with a "jobs"
 * array of each client's; the clients' objects never collide (every
 * object name, every file slot, written once); one metadata object lets
 * seq and rand find and verify every client's objects with as many
 * clients, and refuses another count; cleanup removes every client's
 * objects; a first SIGINT lets the clients' ops in flight finish and the
 * run end with its metadata, SIGTERM stops them at once; bad uses of the
 * option are usage errors.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

#ifndef BLBENCH_PATH
#define BLBENCH_PATH "./blbench"
#endif

static char scratch[PATH_MAX];
static char objdir[PATH_MAX + 16];
static pid_t server = -1;

struct out {
	int status;			/* exit status; 128 + signal if killed */
	char text[1 << 16];		/* stdout */
	char err[1 << 14];		/* stderr */
};

static void slurp_into(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
	}
	buf[n] = 0;
}

/* Starts blbench with @argv (NULL-terminated); its output into files. */
static pid_t start(const char *tag, const char *const *args)
{
	char o[PATH_MAX + 32], e[PATH_MAX + 32];
	const char *argv[40] = { "blbench" };
	int n = 1;
	pid_t pid;

	snprintf(o, sizeof(o), "%s/.%s.out", scratch, tag);
	snprintf(e, sizeof(e), "%s/.%s.err", scratch, tag);
	while (*args && n < 39)
		argv[n++] = *args++;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fo = open(o, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int fe = open(e, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fo < 0 || fe < 0)
			_exit(126);
		dup2(fo, 1);
		dup2(fe, 2);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(BLBENCH_PATH, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Waits (at most 120 s: a hang is a failure) and collects the output. */
static void finish(const char *tag, pid_t pid, struct out *r)
{
	char p[PATH_MAX + 32];
	int st = 0;

	for (int i = 0; i < 12000; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		ck_assert_int_ge(w, 0);
		if (w == pid)
			break;
		if (i == 11999) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
		usleep(10000);
	}
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	snprintf(p, sizeof(p), "%s/.%s.out", scratch, tag);
	slurp_into(p, r->text, sizeof(r->text));
	snprintf(p, sizeof(p), "%s/.%s.err", scratch, tag);
	slurp_into(p, r->err, sizeof(r->err));
}

static struct out *run(const char *const *args)
{
	static struct out r;

	finish("run", start("run", args), &r);
	return &r;
}

#define RUN(...) run((const char *const[]){ __VA_ARGS__, NULL })

static void expect(const struct out *r, int status)
{
	ck_assert_msg(r->status == status, "status %d, not %d; stderr:\n%s",
		      r->status, status, r->err);
}

/* The number after @key in JSON output ("key":"N"), or -1. */
static long jnum(const char *text, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(text, pat);
	return p ? strtol(p + strlen(pat), NULL, 10) : -1;
}

/* Counts of @key's values in the "jobs" array, into @v; how many. */
static int jobs_values(const char *text, const char *key, long *v, int max)
{
	const char *p = strstr(text, "\"jobs\":[");
	char pat[64];
	int n = 0;

	ck_assert_msg(p != NULL, "no jobs array in %s", text);
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	while (n < max && (p = strstr(p, pat))) {
		p += strlen(pat);
		v[n++] = strtol(p, NULL, 10);
	}
	return n;
}

/* Objects named ..._objectN in @dir: how many, and N's bitmap. */
static int objects(const char *dir, unsigned char *seen, size_t max)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d))) {
		const char *p = strstr(e->d_name, "_object");

		if (!p || strncmp(e->d_name, "benchmark_data_", 15))
			continue;
		n++;
		if (seen) {
			unsigned long k = strtoul(p + 7, NULL, 10);

			ck_assert_uint_lt(k, max);
			ck_assert_msg(!seen[k], "object %lu twice", k);
			seen[k] = 1;
		}
	}
	closedir(d);
	return n;
}

static bool exists(const char *dir, const char *name)
{
	char p[PATH_MAX + 64];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void setup(void)
{
	char cwd[PATH_MAX - 32];

	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	snprintf(scratch, sizeof(scratch), "%s/blbench-jobs.XXXXXX", cwd);
	ck_assert_ptr_nonnull(mkdtemp(scratch));
	snprintf(objdir, sizeof(objdir), "%s/objs", scratch);
	ck_assert_int_eq(mkdir(objdir, 0755), 0);
}

static void teardown(void)
{
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
		server = -1;
	}
	nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *dir_target(void)
{
	static char t[PATH_MAX + 32];

	snprintf(t, sizeof(t), "dir:%s", objdir);
	return t;
}

/*
 * The round every target goes through: 3 clients write 4 objects each
 * (JSON: the run's count, each client's in "jobs"); seq finds all three
 * clients' objects by itself and verifies them; --jobs 2 is refused;
 * rand with --jobs 3 verifies; cleanup leaves nothing.
 */
static void round_trip(const char *target, bool on_disk)
{
	unsigned char seen[64] = { 0 };
	struct out *r;
	long v[8];

	r = RUN("--target", target, "--jobs", "3", "-t", "2", "-b", "64K",
		"--max-objects", "4", "--crc", "--format", "json", "0",
		"write", "--no-cleanup");
	expect(r, 0);
	ck_assert_int_eq(jnum(r->text, "total_writes_made"), 12);
	ck_assert_int_eq(jobs_values(r->text, "total_writes_made", v, 8), 3);
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(v[k], 4);
	ck_assert_int_eq(jobs_values(r->text, "job", v, 8), 3);
	for (int k = 0; k < 3; k++)
		ck_assert_int_eq(v[k], k);
	ck_assert_ptr_nonnull(strstr(r->text, "\"datas\":["));
	if (on_disk) {	/* names 0..11, each once: the clients interleave */
		ck_assert_int_eq(objects(objdir, seen, sizeof(seen)), 12);
		for (int k = 0; k < 12; k++)
			ck_assert(seen[k]);
		ck_assert(exists(objdir, "benchmark_last_metadata"));
	}

	r = RUN("--target", target, "0", "seq");
	expect(r, 0);
	ck_assert_ptr_nonnull(strstr(r->text, "Total reads made:     12\n"));

	r = RUN("--target", target, "--jobs", "2", "0", "seq");
	expect(r, 1);
	ck_assert_ptr_nonnull(strstr(r->err, "written by 3 clients"));

	r = RUN("--target", target, "--jobs", "3", "-t", "2", "1", "rand",
		"--format", "json");
	expect(r, 0);
	ck_assert_int_gt(jnum(r->text, "total_reads_made"), 0);
	ck_assert_int_eq(jobs_values(r->text, "total_reads_made", v, 8), 3);
	ck_assert_int_eq(v[0] + v[1] + v[2],
			 jnum(r->text, "total_reads_made"));

	r = RUN("--target", target, "cleanup");
	expect(r, 0);
	if (on_disk) {
		ck_assert_int_eq(objects(objdir, NULL, 0), 0);
		ck_assert(!exists(objdir, "benchmark_last_metadata"));
	}
}

START_TEST(test_dir_clients_write_apart_and_reads_find_them)
{
	round_trip(dir_target(), true);
}
END_TEST

START_TEST(test_tcp_clients_each_have_a_connection)
{
	char listen[32], target[64], dirspec[PATH_MAX + 32];
	struct out r;
	int port = 20000 + (int)(getpid() % 20000);

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", port);
	snprintf(target, sizeof(target), "tcp:%s", listen);
	snprintf(dirspec, sizeof(dirspec), "%s", dir_target());
	server = start("serve", (const char *const[]){ "serve", "--listen",
						       listen, "--target",
						       dirspec, NULL });
	/* serve says where it listens on stdout, once it does (this waited
	 * for stderr, so each run slept the whole 5 s) */
	for (int i = 0; i < 500; i++) {
		char p[PATH_MAX + 32], buf[256];

		snprintf(p, sizeof(p), "%s/.serve.out", scratch);
		slurp_into(p, buf, sizeof(buf));
		if (strstr(buf, "listening"))
			break;
		ck_assert_msg(i < 499, "blbench serve did not start listening");
		usleep(10000);
	}
	round_trip(target, true);
	kill(server, SIGTERM);
	finish("serve", server, &r);
	server = -1;
	expect(&r, 0);
}
END_TEST

/*
 * A file's slots are shared out: with 2 clients each gets every other
 * slot, a write without a time limit stops at each one's share, and a
 * seq reads every slot back verified.
 */
START_TEST(test_file_clients_share_the_slots)
{
	char target[PATH_MAX + 32];
	struct out *r;

	snprintf(target, sizeof(target), "file:%s/img:16M", scratch);
	r = RUN("--target", target, "--jobs", "2", "-t", "2", "-b", "1M",
		"--crc", "0", "write", "--no-cleanup");
	expect(r, 0);
	/* 15 slots after the metadata MiB: 7 each */
	ck_assert_ptr_nonnull(strstr(r->text, "Total writes made:      14\n"));
	ck_assert_ptr_nonnull(strstr(r->err, "client 1 stopped after 7 ops"));
	snprintf(target, sizeof(target), "file:%s/img", scratch);
	r = RUN("--target", target, "0", "seq");
	expect(r, 0);
	ck_assert_ptr_nonnull(strstr(r->text, "Total reads made:     14\n"));
	/* the run is over: its lock went with it */
	r = RUN("--target", target, "-b", "1M", "--max-objects", "1", "0",
		"write");
	expect(r, 0);
}
END_TEST

/* SIGINT: no more ops, those in flight finish, the run ends whole. */
START_TEST(test_sigint_ends_every_client_with_metadata)
{
	struct out r;
	pid_t pid;

	pid = start("int", (const char *const[]){ "--target", dir_target(),
						  "--jobs", "3", "-t", "2",
						  "-b", "64K", "60", "write",
						  "--no-cleanup", NULL });
	usleep(1500 * 1000);
	kill(pid, SIGINT);
	finish("int", pid, &r);
	expect(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.text, "Total writes made:"));
	ck_assert(exists(objdir, "benchmark_last_metadata"));
	expect(RUN("--target", dir_target(), "0", "seq"), 0);
}
END_TEST

START_TEST(test_sigterm_stops_every_client_at_once)
{
	struct out r;
	pid_t pid;

	pid = start("term", (const char *const[]){ "--target", dir_target(),
						   "--jobs", "4", "-t", "2",
						   "-b", "64K", "60", "write",
						   NULL });
	usleep(1500 * 1000);
	kill(pid, SIGTERM);
	finish("term", pid, &r);
	expect(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "stopped by a signal"));
	/* no metadata for a run that failed; one cleanup finds its objects */
	ck_assert(!exists(objdir, "benchmark_last_metadata"));
	expect(RUN("--target", dir_target(), "cleanup"), 0);
	ck_assert_int_eq(objects(objdir, NULL, 0), 0);
}
END_TEST

START_TEST(test_bad_jobs_are_usage_errors)
{
	static const char *const bad[][8] = {
		{ "--jobs", "0", "1", "write" },
		{ "--jobs", "65", "1", "write" },
		{ "--jobs", "x", "1", "write" },
		{ "--jobs", "-1", "1", "write" },
		{ "--jobs", "2", "cleanup" },
		{ "--jobs", "2", "serve" },
		{ "--jobs", "2", "--rados-bench-compat", "1", "write" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *args[12] = { "--target", dir_target() };
		int n = 2;
		struct out *r;

		for (int k = 0; bad[i][k]; k++)
			args[n++] = bad[i][k];
		r = run(args);
		ck_assert_msg(r->status == 2, "case %zu: status %d", i,
			      r->status);
		ck_assert_ptr_nonnull(strstr(r->err, "usage:"));
	}
	/* nothing was made */
	ck_assert_int_eq(objects(objdir, NULL, 0), 0);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		test_bad_jobs_are_usage_errors,
		test_dir_clients_write_apart_and_reads_find_them,
		test_file_clients_share_the_slots,
		test_tcp_clients_each_have_a_connection,
		test_sigint_ends_every_client_with_metadata,
		test_sigterm_stops_every_client_at_once,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("jobs", tests, .timeout = 300, .setup = setup,
			 .teardown = teardown),
		TU_GROUP_END
	};

	return tu_run(tu_suite("blbench_jobs", groups));
}
