/* SPDX-License-Identifier: MIT */
/*
 * test_blbench.c - the blbench program, run as a user runs it (fork and
 * exec of the built binary, its output parsed back):
 *
 *  - bad options give a usage message and exit status 2, getopt's naming
 *    the program, not libtool's path to it; a target that cannot be
 *    opened gives a one-line reason and status 1 (a tcp: host that does
 *    not resolve: the resolver's); a SIZE typo in file:PATH:SIZE is bad
 *    usage, not part of the path; --version;
 *  - msgbench checks every option (a reason naming the value, the usage,
 *    status 2), takes sizes as blbench does, --help on stdout;
 *  - rados:POOL's options (-c, -p, the pool name) without a cluster: a
 *    blbench built without the Ceph bridge says so in one line, status 2;
 *    one with it names the ceph.conf it could not read (-c or $CEPH_CONF);
 *  - 1-second runs of write, seq, rand and cleanup on a directory and on a
 *    raw file with O_DIRECT: the summary, read back, agrees with the run
 *    (writes made = ops in the metadata object = what seq finds, bandwidth
 *    = writes * size / time), and rados bench's labels are all there;
 *  - --format json is one valid JSON object with rados bench's keys;
 *  - the latency histogram (tools/blbench_hist.c, compiled in) gives the
 *    percentiles of known sets within its bucket error; a run prints
 *    them after rados bench's summary and as JSON keys, in order, the
 *    maximum equal to rados bench's;
 *  - --plot writes an SVG with its polylines and the distribution panel;
 *  - a byte flipped in one object makes seq fail naming that object
 *    (pattern check, crc32c check, lz4);
 *  - the default target is a fixed directory a later process finds;
 *  - a raw target too small for one round is refused, one that fills up
 *    stops the run cleanly;
 *  - the TCP target through `blbench serve`, and a server fed malformed
 *    frames that stays up for the next client;
 *  - a server that stops answering (SIGSTOP): --op-timeout fails the run,
 *    SIGTERM or a second SIGINT stops the client at once; a hello asking
 *    for an absurd alignment is refused; a failed server write leaves no
 *    empty object;
 *  - a raw file takes one writer at a time (flock) and is read even where
 *    it may not be written; a truncated one is named as such;
 *  - cleanup removes a run whose metadata is damaged, and in one pass what
 *    a killed write left, keeping other runs; forged metadata never makes
 *    it remove files outside the target;
 *  - a directory that cannot be written is refused before any output;
 *  - hostile clients of the server: READ replies never read (its memory
 *    stays bounded), preambles claiming 1 GiB (its address space does),
 *    a half-closed client (still answered), 100 clients under ulimit -n
 *    64 (no spinning, a log line a second at most).
 *
 * Tests that need a user whom file modes bind run blbench as nobody when
 * the suite runs as root (and skip, saying so, if that is impossible).
 *
 * Runs are kept small (64 KiB ops, a few ops in flight, capped object
 * counts) so the suite writes little and stays well under 30 seconds.
 * Nothing here asserts on timing: waits for a child are bounded only to
 * tell a hang from an exit.
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
#include "blbench_hist.h"

#ifndef BLBENCH_PATH
#define BLBENCH_PATH "./blbench"
#endif
#ifndef MSGBENCH_PATH
#define MSGBENCH_PATH "./msgbench"
#endif

static char scratch[PATH_MAX + 64];	/* one directory per test */
static char dio_dir[PATH_MAX + 64];	/* where O_DIRECT works ("" if nowhere) */
static pid_t server = -1;		/* a `blbench serve` of this test */
static rlim_t server_nofile;		/* its RLIMIT_NOFILE; 0: inherited */

/* ---- running blbench ----------------------------------------------------- */

struct res {
	int status;		/* exit status; 128 + signal if killed */
	char *out, *err;
};

static char *slurp(const char *path)
{
	struct stat st;
	char *buf;
	ssize_t n;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	ck_assert_ptr_nonnull(buf);
	n = read(fd, buf, (size_t)st.st_size);
	ck_assert_int_eq(n, st.st_size);
	buf[n] = 0;
	close(fd);
	return buf;
}

static const char *fmt(char *buf, size_t len, const char *f, ...)
	__attribute__((format(printf, 3, 4)));

/* snprintf that fails the test instead of truncating */
static const char *fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;
	int n;

	va_start(ap, f);
	n = vsnprintf(buf, len, f, ap);
	va_end(ap);
	ck_assert(n >= 0 && (size_t)n < len);
	return buf;
}

/* Runs as nobody from here on (root ignores file modes); false if it cannot. */
static bool become_nobody(void)
{
	if (geteuid() != 0)
		return true;	/* the modes already apply */
	return setgroups(0, NULL) == 0 && setgid(65534) == 0 &&
	       setuid(65534) == 0;
}

/* How a child runs; NULL or zeroes: as the test does. */
struct how {
	const char *env;	/* "NAME=VALUE" */
	bool nobody;		/* as user nobody (exit 125 if it cannot be) */
	long long fsize;	/* > 0: RLIMIT_FSIZE, SIGXFSZ ignored */
	rlim_t nofile;		/* > 0: RLIMIT_NOFILE's soft limit */
	const char *prog;	/* the program (BLBENCH_PATH) */
	const char *argv0;	/* its argv[0] ("blbench") */
};

/*
 * Starts blbench with @args (NULL-terminated), its output into
 * scratch/.TAG.out and .TAG.err, run as @how says.  Returns the pid.
 */
static pid_t spawn(const char *tag, const struct how *how,
		   const char *const *args)
{
	static const struct how plain;
	char outp[PATH_MAX + 64], errp[PATH_MAX + 64];
	const char *argv[64];
	int n = 0;
	pid_t pid;

	fmt(outp, sizeof(outp), "%s/.%s.out", scratch, tag);
	fmt(errp, sizeof(errp), "%s/.%s.err", scratch, tag);
	/* made here, so that polling them never races the child's open */
	close(open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	close(open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644));
	if (!how)
		how = &plain;
	argv[n++] = how->argv0 ? how->argv0 : "blbench";
	while (*args && n < 63)
		argv[n++] = *args++;
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int fo = open(outp, O_WRONLY);
		int fe = open(errp, O_WRONLY);

		if (fo < 0 || fe < 0)
			_exit(126);
		dup2(fo, 1);
		dup2(fe, 2);
		if (how->fsize > 0) {
			struct rlimit rl = { (rlim_t)how->fsize,
					     (rlim_t)how->fsize };

			signal(SIGXFSZ, SIG_IGN);	/* EFBIG instead */
			if (setrlimit(RLIMIT_FSIZE, &rl) < 0)
				_exit(125);
		}
		if (how->nofile) {
			struct rlimit rl;

			getrlimit(RLIMIT_NOFILE, &rl);
			rl.rlim_cur = how->nofile;
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				_exit(125);
		}
		if (how->nobody && !become_nobody())
			_exit(125);
		/* a test that fails half way must not leave a process behind
		 * (after setuid, which clears it) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (how->env)
			putenv((char *)how->env);
		execv(how->prog ? how->prog : BLBENCH_PATH,
		      (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* The exit status (128 + signal if killed) of wait status @st. */
static int status_of(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Waits up to @secs seconds for @pid; its exit status, or -1 if it was
 * still running (it is then killed).  The bound is generous: it only
 * tells a hang from an exit.
 */
static int wait_exit(pid_t pid, int secs)
{
	int st;

	for (int i = 0; i < secs * 100; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG);

		ck_assert_int_ge(w, 0);
		if (w == pid)
			return status_of(st);
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/*
 * Waits up to @secs seconds for @text in scratch/.TAG.out, written by
 * @pid: false if it did not come, or @pid exited first.
 */
static bool wait_for_output(pid_t pid, const char *tag, const char *text,
			    int secs)
{
	char p[PATH_MAX + 64];

	fmt(p, sizeof(p), "%s/.%s.out", scratch, tag);
	for (int i = 0; i < secs * 100; i++) {
		char *out = slurp(p);
		bool found = strstr(out, text) != NULL;

		free(out);
		if (found)
			return true;
		if (waitpid(pid, NULL, WNOHANG) != 0)
			return false;
		usleep(10000);
	}
	return false;
}

static void run_how(struct res *r, const struct how *how,
		    const char *const *args)
{
	char p[PATH_MAX + 64];
	pid_t pid = spawn("run", how, args);
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	r->status = status_of(st);
	r->out = slurp(fmt(p, sizeof(p), "%s/.run.out", scratch));
	r->err = slurp(fmt(p, sizeof(p), "%s/.run.err", scratch));
}

static void run_as(struct res *r, const char *env, bool nobody,
		   const char *const *args)
{
	struct how how = { .env = env, .nobody = nobody };

	run_how(r, &how, args);
}

/* Runs blbench with @args (NULL-terminated) and, if @env, "NAME=VALUE". */
static void run_env(struct res *r, const char *env, const char *const *args)
{
	run_as(r, env, false, args);
}

#define RUN(r, ...) run_env((r), NULL, (const char *const[]){ __VA_ARGS__, NULL })
#define RUN_ENV(r, env, ...) \
	run_env((r), (env), (const char *const[]){ __VA_ARGS__, NULL })
#define RUN_NOBODY(r, ...) \
	run_as((r), NULL, true, (const char *const[]){ __VA_ARGS__, NULL })
/* msgbench, as its own name */
#define RUN_MSGBENCH(r, ...) \
	run_how((r), &(const struct how){ .prog = MSGBENCH_PATH, \
					  .argv0 = "msgbench" }, \
		(const char *const[]){ __VA_ARGS__, NULL })
#define SPAWN(tag, ...) spawn((tag), NULL, (const char *const[]){ __VA_ARGS__, NULL })

static void res_free(struct res *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

static void expect_status(const struct res *r, int want)
{
	ck_assert_msg(r->status == want,
		      "exit status %d, wanted %d\n--- stdout:\n%s--- stderr:\n%s",
		      r->status, want, r->out, r->err);
}

/* The number after @label in @text (the summary's "Label:  value"). */
static double field(const char *text, const char *label)
{
	const char *p = strstr(text, label);

	ck_assert_msg(p != NULL, "no '%s' in:\n%s", label, text);
	return strtod(p + strlen(label), NULL);
}

/* The value of "key":"value" in JSON output. */
static double jfield(const char *text, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(text, pat);
	ck_assert_msg(p != NULL, "no key %s in:\n%s", key, text);
	return strtod(p + strlen(pat), NULL);
}

/* "Object prefix: X" of a write. */
static void prefix_of(const char *out, char *buf, size_t len)
{
	const char *p = strstr(out, "Object prefix: ");
	size_t n;

	ck_assert_ptr_nonnull(p);
	p += strlen("Object prefix: ");
	n = strcspn(p, "\n");
	ck_assert_uint_lt(n, len);
	memcpy(buf, p, n);
	buf[n] = 0;
}

/* The file system block --direct writes keep to in @path's file system. */
static size_t blk_of(const char *path)
{
	long page = sysconf(_SC_PAGESIZE);
	struct stat st;
	size_t a;

	ck_assert_int_eq(stat(path, &st), 0);
	a = (size_t)st.st_blksize;
	if ((long)a < page)
		a = (size_t)page;
	return a;
}

/* The 8 bytes at @off of @path, as a string. */
static void bytes_at(const char *path, off_t off, char out[9])
{
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	memset(out, 0, 9);
	ck_assert_int_eq(pread(fd, out, 8, off), 8);
	close(fd);
}

/* The "stored bytes" field of the op header at @off of @path. */
static uint32_t stored_after_header(const char *path, off_t off)
{
	unsigned char h[64];
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, h, sizeof(h), off), (ssize_t)sizeof(h));
	close(fd);
	ck_assert_int_eq(memcmp(h, "BLBENCH1", 8), 0);
	return (uint32_t)h[48] | (uint32_t)h[49] << 8 |
	       (uint32_t)h[50] << 16 | (uint32_t)h[51] << 24;
}

static const char *path_in(char *buf, size_t len, const char *dir,
			   const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	ck_assert(n > 0 && (size_t)n < len);
	return buf;
}

static const char *spec(char *buf, size_t len, const char *kind,
			const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s:%s/%s", kind, dir, name);

	ck_assert(n > 0 && (size_t)n < len);
	return buf;
}

/* Objects in a directory target (files named benchmark_data*). */
static int count_objects(const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = 0;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		n += !strncmp(de->d_name, "benchmark_data", 14);
	closedir(d);
	return n;
}

/* The path of one object in @dir, into @buf. */
static const char *an_object(const char *dir, char *buf, size_t len)
{
	struct dirent *de;
	DIR *d = opendir(dir);
	int n = -1;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "benchmark_data", 14)) {
			n = snprintf(buf, len, "%s/%s", dir, de->d_name);
			break;
		}
	closedir(d);
	ck_assert_msg(n > 0 && (size_t)n < len, "no object in %s", dir);
	return buf;
}

/* rados bench's metadata: object size u64, ops i32, pid i32, op size u64. */
static void read_meta(const char *path, uint64_t *obj_size, uint32_t *num_ops,
		      uint64_t *op_size)
{
	unsigned char b[24];
	int fd = open(path, O_RDONLY);

	ck_assert_msg(fd >= 0, "no metadata at %s", path);
	ck_assert_int_eq(read(fd, b, 24), 24);
	close(fd);
	*obj_size = *op_size = 0;
	*num_ops = 0;
	for (int i = 7; i >= 0; i--) {
		*obj_size = *obj_size << 8 | b[i];
		*op_size = *op_size << 8 | b[16 + i];
	}
	for (int i = 3; i >= 0; i--)
		*num_ops = *num_ops << 8 | b[8 + i];
}

/* Checks the write summary against the run: labels, arithmetic. */
static int check_write_summary(const char *out, uint64_t op_size,
			       uint64_t obj_size)
{
	static const char *const labels[] = {
		"Total time run:         ", "Total writes made:      ",
		"Write size:             ", "Object size:            ",
		"Bandwidth (MB/sec):     ", "Stddev Bandwidth:       ",
		"Max bandwidth (MB/sec): ", "Min bandwidth (MB/sec): ",
		"Average IOPS:           ", "Stddev IOPS:            ",
		"Max IOPS:               ", "Min IOPS:               ",
		"Average Latency(s):     ", "Stddev Latency(s):      ",
		"Max latency(s):         ", "Min latency(s):         ",
	};
	const char *p = out;
	double t, n, bw;

	ck_assert_ptr_nonnull(strstr(out,
		"  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg lat(s)\n"));
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		p = strstr(p, labels[i]);
		ck_assert_msg(p != NULL, "label '%s' missing or out of order in:\n%s",
			      labels[i], out);
	}
	t = field(out, "Total time run:");
	n = field(out, "Total writes made:");
	bw = field(out, "Bandwidth (MB/sec):");
	ck_assert(t > 0);
	ck_assert(n > 0);
	ck_assert_uint_eq((uint64_t)field(out, "Write size:"), op_size);
	ck_assert_uint_eq((uint64_t)field(out, "Object size:"), obj_size);
	/* six significant digits each way: agree to about 1e-5, allow 1e-4 */
	ck_assert_msg(fabs(bw - n * op_size / t / 1048576.0) <= 1e-4 * bw + 1e-3,
		      "bandwidth %g is not %g writes * %llu / %g s", bw, n,
		      (unsigned long long)op_size, t);
	/* (int)(writes / time), from a time printed to six digits */
	ck_assert(fabs(field(out, "Average IOPS:") - n / t) <= 1.0 + 1e-4 * n / t);
	ck_assert(field(out, "Min latency(s):") <= field(out, "Average Latency(s):"));
	ck_assert(field(out, "Average Latency(s):") <= field(out, "Max latency(s):"));
	return (int)n;
}

static void check_read_summary(const char *out, uint64_t op_size)
{
	static const char *const labels[] = {
		"Total time run:       ", "Total reads made:     ",
		"Read size:            ", "Object size:          ",
		"Bandwidth (MB/sec):   ", "Average IOPS:         ",
		"Stddev IOPS:          ", "Max IOPS:             ",
		"Min IOPS:             ", "Average Latency(s):   ",
		"Max latency(s):       ", "Min latency(s):       ",
	};
	const char *p = out;
	double t, n, bw;

	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		p = strstr(p, labels[i]);
		ck_assert_msg(p != NULL, "label '%s' missing or out of order in:\n%s",
			      labels[i], out);
	}
	t = field(out, "Total time run:");
	n = field(out, "Total reads made:");
	bw = field(out, "Bandwidth (MB/sec):");
	ck_assert(n > 0);
	ck_assert_uint_eq((uint64_t)field(out, "Read size:"), op_size);
	ck_assert_msg(fabs(bw - n * op_size / t / 1048576.0) <= 1e-4 * bw + 1e-3,
		      "bandwidth %g is not %g reads * %llu / %g s", bw, n,
		      (unsigned long long)op_size, t);
}

/* ---- fixtures ---------------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static bool takes_direct(const char *dir)
{
	char p[PATH_MAX + 32];
	int fd;

	snprintf(p, sizeof(p), "%s/.dio-probe-%d", dir, (int)getpid());
	fd = open(p, O_RDWR | O_CREAT | O_DIRECT, 0600);
	if (fd < 0)
		return false;
	close(fd);
	unlink(p);
	return true;
}

static void setup(void)
{
	char cwd[PATH_MAX];

	/* the build directory: a real file system, unlike a tmpfs /tmp */
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	fmt(scratch, sizeof(scratch), "%s/blbench-test.XXXXXX", cwd);
	ck_assert_ptr_nonnull(mkdtemp(scratch));
	dio_dir[0] = 0;
	if (takes_direct(scratch)) {
		fmt(dio_dir, sizeof(dio_dir), "%s", scratch);
		return;
	}
	strcpy(dio_dir, "/var/tmp/blbench-test.XXXXXX");
	if (!mkdtemp(dio_dir)) {
		dio_dir[0] = 0;
	} else if (!takes_direct(dio_dir)) {
		rmdir(dio_dir);
		dio_dir[0] = 0;
	}
}

static void teardown(void)
{
	if (server > 0) {	/* a test that failed half way */
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
		server = -1;
	}
	nftw(scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (dio_dir[0] && strcmp(dio_dir, scratch))
		nftw(dio_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- options ------------------------------------------------------------------ */

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
	struct res r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[8] = { NULL };

		for (int j = 0; j < 6 && cases[i][j]; j++)
			args[j] = cases[i][j];
		run_env(&r, NULL, args);
		ck_assert_msg(r.status == 2, "case %zu (%s ...): status %d\n%s",
			      i, args[0] ? args[0] : "", r.status, r.err);
		ck_assert_msg(strstr(r.err, "usage: blbench") != NULL,
			      "case %zu: no usage on stderr:\n%s", i, r.err);
		ck_assert_str_eq(r.out, "");
		res_free(&r);
	}
}
END_TEST

START_TEST(test_help_prints_usage_on_stdout_and_succeeds)
{
	struct res r;

	RUN(&r, "--help");
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: blbench"));
	ck_assert_ptr_nonnull(strstr(r.out, "--target"));
	ck_assert_ptr_nonnull(strstr(r.out, "--version"));
	/* SECONDS 0 is no time limit: a write fills the target */
	ck_assert_ptr_nonnull(strstr(r.out, "`blbench 0 write` fills it"));
	ck_assert_str_eq(r.err, "");
	res_free(&r);
}
END_TEST

START_TEST(test_version_names_the_library_version)
{
	struct res r;

	RUN(&r, "--version");
	expect_status(&r, 0);
	ck_assert_str_eq(r.out, "blbench (libbufferlist) " BL_VERSION_STRING "\n");
	ck_assert_str_eq(r.err, "");
	res_free(&r);

	RUN_MSGBENCH(&r, "--version");
	expect_status(&r, 0);
	ck_assert_str_eq(r.out, "msgbench (libbufferlist) " BL_VERSION_STRING "\n");
	ck_assert_str_eq(r.err, "");
	res_free(&r);
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
	struct res r;

	for (int i = 0; i < 2; i++) {
		struct how how = { .prog = progs[i][0], .argv0 = progs[i][0] };

		run_how(&r, &how, (const char *const[]){ "--bogus", NULL });
		expect_status(&r, 2);
		fmt(want, sizeof(want), "%s: unrecognized option '--bogus'\n",
		    progs[i][1]);
		ck_assert_msg(!strncmp(r.err, want, strlen(want)),
			      "wanted '%s' first in:\n%s", want, r.err);
		res_free(&r);

		run_how(&r, &how, (const char *const[]){ "-t", NULL });
		expect_status(&r, 2);
		fmt(want, sizeof(want), "%s: option requires an argument -- 't'\n",
		    progs[i][1]);
		ck_assert_msg(!strncmp(r.err, want, strlen(want)),
			      "wanted '%s' first in:\n%s", want, r.err);
		ck_assert_ptr_null(strstr(r.err, ".libs"));
		res_free(&r);
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
	struct res r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[5] = { NULL };
		const char *bad = NULL;

		for (int j = 0; j < 4 && cases[i][j]; j++)
			bad = args[j] = cases[i][j];
		if (!strcmp(args[0], "--parse"))
			bad = args[0];	/* what does not go with the rest */
		run_how(&r, &(const struct how){ .prog = MSGBENCH_PATH,
						  .argv0 = "msgbench" },
			args);
		ck_assert_msg(r.status == 2, "case %zu (%s %s): status %d\n%s",
			      i, args[0], bad, r.status, r.err);
		/* one line of reason naming the value, then the usage */
		ck_assert_msg(!strncmp(r.err, "msgbench: ", 10) &&
				      strstr(r.err, bad) &&
				      strstr(r.err, bad) < strchr(r.err, '\n'),
			      "case %zu: no reason naming '%s':\n%s", i, bad,
			      r.err);
		ck_assert_ptr_nonnull(strstr(r.err, "\nusage: msgbench"));
		ck_assert_str_eq(r.out, "");
		res_free(&r);
	}
}
END_TEST

START_TEST(test_msgbench_help_lists_every_option_on_stdout)
{
	static const char *const opts[] = {
		"--size", "--conns", "--seconds", "--mode", "--parse",
		"--impl", "--zc", "--align", "--blocking", "--direct-min",
		"--no-regpool", "--lz4", "--ring", "--spin", "--local", "--frames",
		"--quiet",
		"--help", "--version",
	};
	struct res r;

	RUN_MSGBENCH(&r, "--help");
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "usage: msgbench"));
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		ck_assert_msg(strstr(r.out, opts[i]) != NULL, "no %s in:\n%s",
			      opts[i], r.out);
	ck_assert_str_eq(r.err, "");
	res_free(&r);
}
END_TEST

START_TEST(test_msgbench_takes_sizes_with_suffixes)
{
	struct res r;

	RUN_MSGBENCH(&r, "--size", "1K", "--direct-min", "0", "--conns", "2",
		     "--seconds", "0.1", "--impl", "ours", "-q");
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"RESULT msgbench stream size=1024 conns=2 impl=ours "));
	ck_assert_ptr_null(strstr(r.out, "impl=base"));
	res_free(&r);

	RUN_MSGBENCH(&r, "--parse", "--frames", "1000", "-q");
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "RESULT msgbench parse size=0 conns=0 impl=ours "));
	res_free(&r);

	/* rings with single_issuer (DEFER_TASKRUN) on both sides */
	RUN_MSGBENCH(&r, "--mode", "pingpong", "--ring", "defer", "--seconds",
		     "0.1", "--impl", "ours", "-q");
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"RESULT msgbench pingpong size=64 conns=1 impl=ours "));
	res_free(&r);

	/* rings that never spin, and rings that spin up to 50 us */
	for (int i = 0; i < 2; i++) {
		RUN_MSGBENCH(&r, "--mode", "pingpong", "--spin", i ? "50" : "0",
			     "--seconds", "0.1", "--impl", "ours", "-q");
		expect_status(&r, 0);
		ck_assert_ptr_nonnull(strstr(r.out,
			"RESULT msgbench pingpong size=64 conns=1 impl=ours "));
		res_free(&r);
	}

	/*
	 * thread-local raws on both sides and in the parse benchmark: an
	 * --enable-debug build aborts if a raw crossed threads
	 */
	RUN_MSGBENCH(&r, "--mode", "pingpong", "--local", "--seconds", "0.1",
		     "--impl", "ours", "-q");
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"RESULT msgbench pingpong size=64 conns=1 impl=ours "));
	res_free(&r);
	RUN_MSGBENCH(&r, "--size", "64K", "--conns", "2", "--local",
		     "--seconds", "0.1", "--impl", "ours", "-q");
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"RESULT msgbench stream size=65536 conns=2 impl=ours "));
	res_free(&r);
	RUN_MSGBENCH(&r, "--parse", "--local", "--frames", "1000", "-q");
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out, "RESULT msgbench parse size=0 conns=0 impl=ours "));
	res_free(&r);
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
	struct res r;

	for (int i = 0; i < 3; i++) {
		RUN_MSGBENCH(&r, "--mode", "pingpong", "--size", "4M",
			     "--seconds", "0.5", "--impl", "ours", "-q");
		expect_status(&r, 0);
		ck_assert_ptr_nonnull(strstr(r.out,
			"RESULT msgbench pingpong size=4194304 conns=1 impl=ours "));
		ck_assert_msg(!strstr(r.err, "errors") &&
			      !strstr(r.err, "Broken pipe"),
			      "stderr:\n%s", r.err);
		res_free(&r);
	}
}
END_TEST

START_TEST(test_pool_and_sizes_with_suffixes_are_accepted)
{
	char t[PATH_MAX + 64];
	struct res r;

	RUN(&r, "-p", "rbd", "--pool=data", "-b", "64K", "-O", "128KiB",
	    "-t", "2", "--max-objects", "3", "1", "write",
	    "--target", spec(t, sizeof(t), "dir", scratch, "d"));
	expect_status(&r, 0);
	/* 3 objects of two 64 KiB ops each */
	ck_assert_int_eq(check_write_summary(r.out, 65536, 131072), 6);
	res_free(&r);
}
END_TEST

START_TEST(test_unopenable_target_gives_one_line_reason)
{
	char t[PATH_MAX + 64];
	struct res r;

	RUN(&r, "1", "write", "--target", "dir:/nonexistent/blbench/x");
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "dir:/nonexistent/blbench/x"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	res_free(&r);

	/* a raw file that does not exist and has no size to be made with */
	RUN(&r, "1", "write", "--target",
	    spec(t, sizeof(t), "file", scratch, "nofile"));
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "nofile"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	res_free(&r);

	/* reading where nothing was written: rados bench's words */
	ck_assert_int_eq(mkdir(path_in(t, sizeof(t), scratch, "empty"), 0755), 0);
	RUN(&r, "1", "seq", "--target", spec(t, sizeof(t), "dir", scratch, "empty"));
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "Must write data before running a read benchmark!"));
	/* and where it looked */
	ck_assert_ptr_nonnull(strstr(r.err, t));
	res_free(&r);
}
END_TEST

START_TEST(test_raw_file_size_that_is_not_a_size_is_a_usage_error)
{
	char t[PATH_MAX + 64], p[PATH_MAX + 64];
	struct res r;
	int fd;

	/* a typo in SIZE is not part of the path */
	RUN(&r, "1", "write", "--target",
	    spec(t, sizeof(t), "file", scratch, "raw:1x"));
	expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "'1x' is not a size"));
	ck_assert_ptr_nonnull(strstr(r.err, "usage: blbench"));
	ck_assert_int_eq(access(path_in(p, sizeof(p), scratch, "raw"), F_OK), -1);
	res_free(&r);

	/* serve checks its target alike */
	RUN(&r, "serve", "--listen", "127.0.0.1:0", "--target",
	    spec(t, sizeof(t), "file", scratch, "raw:10Q"));
	expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "'10Q' is not a size"));
	res_free(&r);

	/* a ':' followed by what no size looks like is the path's */
	RUN(&r, "1", "write", "--target",
	    spec(t, sizeof(t), "file", scratch, "pci-0000:00:1f.2"));
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "pci-0000:00:1f.2"));
	res_free(&r);

	/* and so is the whole spec when that names a file */
	fd = open(path_in(p, sizeof(p), scratch, "dev:1x"),
		  O_WRONLY | O_CREAT | O_EXCL, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, 4 << 20), 0);
	close(fd);
	RUN(&r, "-b", "64K", "-t", "1", "--max-objects", "2", "0", "write",
	    "--target", spec(t, sizeof(t), "file", scratch, "dev:1x"));
	expect_status(&r, 0);
	ck_assert_int_eq(check_write_summary(r.out, 65536, 65536), 2);
	res_free(&r);
}
END_TEST

/* ---- rados:POOL, without a cluster ------------------------------------------- */

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
	struct res r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *args[8] = { NULL };

		for (int j = 0; j < 7 && cases[i][j]; j++)
			args[j] = cases[i][j];
		run_env(&r, NULL, args);
		ck_assert_msg(r.status == 2, "case %zu: status %d\n%s", i,
			      r.status, r.err);
		ck_assert_msg(strstr(r.err, "usage: blbench") != NULL,
			      "case %zu: no usage on stderr:\n%s", i, r.err);
		ck_assert_str_eq(r.out, "");
		res_free(&r);
	}
	/* the same pool twice is fine: it gets as far as the build or the conf */
	RUN(&r, "-p", "p", "-c", "/nonexistent/blbench/ceph.conf", "--target",
	    "rados:p", "1", "write");
	ck_assert_ptr_null(strstr(r.err, "usage: blbench"));
	res_free(&r);
	RUN(&r, "--no-hints", "-c", "/nonexistent/blbench/ceph.conf",
	    "--target", "rados:p", "1", "write");
	ck_assert_ptr_null(strstr(r.err, "usage: blbench"));
	res_free(&r);
	/* rados bench's habit: -p alone is the rados target */
	RUN(&r, "-p", "pp", "-c", "/nonexistent/blbench/ceph.conf", "1",
	    "write");
	ck_assert_ptr_nonnull(strstr(r.err, "rados:pp"));
#ifdef BL_HAVE_CEPH
	expect_status(&r, 1);
#else
	expect_status(&r, 2);
#endif
	res_free(&r);
	RUN(&r, "--rados-bench-compat", "--crc", "-p", "pp", "1", "write");
	expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "--rados-bench-compat"));
	res_free(&r);
}
END_TEST

#ifdef BL_HAVE_CEPH
START_TEST(test_rados_target_without_a_cluster_gives_one_line_reason)
{
	struct res r;

	RUN(&r, "-c", "/nonexistent/blbench/ceph.conf", "--target",
	    "rados:blbench", "1", "write");
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "rados:blbench"));
	ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/blbench/ceph.conf"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	ck_assert_str_eq(r.out, "");
	res_free(&r);

	/* no -c: $CEPH_CONF is the one read */
	RUN_ENV(&r, "CEPH_CONF=/nonexistent/blbench/env.conf", "--target",
		"rados:blbench", "1", "seq");
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "/nonexistent/blbench/env.conf"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	res_free(&r);

	/* O_DIRECT means nothing to a pool */
	RUN(&r, "--direct", "--target", "rados:blbench", "1", "write");
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "--direct"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	res_free(&r);
}
END_TEST
#else
START_TEST(test_rados_target_without_the_bridge_gives_one_line_and_status_2)
{
	struct res r;

	RUN(&r, "--target", "rados:blbench", "1", "write");
	expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "without the Ceph bridge"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	ck_assert_str_eq(r.out, "");
	res_free(&r);
}
END_TEST
#endif

/* ---- runs on each local target ------------------------------------------------ */

START_TEST(test_dir_write_seq_rand_cleanup_agree_with_metadata)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], m[PATH_MAX + 64];
	uint64_t obj, op;
	uint32_t nops;
	struct res r;
	int writes;

	spec(t, sizeof(t), "dir", scratch, "d");
	path_in(d, sizeof(d), scratch, "d");
	RUN(&r, "-b", "64K", "-O", "256K", "-t", "4", "--max-objects", "400",
	    "1", "write", "--no-cleanup", "--target", t);
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.out,
		"Maintaining 4 concurrent writes of 65536 bytes to objects of size 262144 for up to 1 seconds or 400 objects\n"));
	writes = check_write_summary(r.out, 65536, 262144);
	res_free(&r);

	/* what the summary says is what the metadata and the directory hold */
	read_meta(path_in(m, sizeof(m), d, "benchmark_last_metadata"), &obj,
		  &nops, &op);
	ck_assert_uint_eq(obj, 262144);
	ck_assert_uint_eq(op, 65536);
	ck_assert_int_eq((int)nops, writes);
	ck_assert_int_eq(count_objects(d), (writes + 3) / 4);

	RUN(&r, "-t", "4", "1", "seq", "--target", t);
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	ck_assert_int_le((int)field(r.out, "Total reads made:"), writes);
	ck_assert_str_eq(r.err, "");
	res_free(&r);

	RUN(&r, "-t", "3", "1", "rand", "--target", t);
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	res_free(&r);

	RUN(&r, "cleanup", "--target", t);
	expect_status(&r, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "Removed "));
	ck_assert_int_eq(count_objects(d), 0);
	ck_assert_int_ne(access(m, F_OK), 0);
	res_free(&r);
}
END_TEST

START_TEST(test_raw_file_with_direct_write_seq_rand_cleanup)
{
	char t[PATH_MAX + 64], f[PATH_MAX + 64];
	struct res r;
	int writes;

	if (!dio_dir[0]) {
		fprintf(stderr, "test_blbench: no file system here takes O_DIRECT; raw test skipped\n");
		return;
	}
	path_in(f, sizeof(f), dio_dir, "raw");
	fmt(t, sizeof(t), "file:%s:64M", f);
	RUN(&r, "-b", "64K", "-t", "4", "1", "write", "--no-cleanup",
	    "--direct", "--crc", "--target", t);
	expect_status(&r, 0);
	writes = check_write_summary(r.out, 65536, 65536);
	/* the first MiB is metadata; more ops only after a wrap */
	if (writes > (64 - 1) * 16)
		ck_assert_ptr_nonnull(strstr(r.err, "writing on from its start"));
	res_free(&r);
	/* the header fills a file system block: the body starts on one */
	ck_assert_uint_eq(stored_after_header(f, 1 << 20),
			  65536 - blk_of(f));

	/* the file keeps its size; later runs name it without the size */
	fmt(t, sizeof(t), "file:%s", f);
	RUN(&r, "-t", "4", "1", "seq", "--direct", "--target", t);
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	ck_assert_int_le((int)field(r.out, "Total reads made:"), writes);
	res_free(&r);

	RUN(&r, "-t", "4", "1", "rand", "--direct", "--target", t);
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	res_free(&r);

	RUN(&r, "cleanup", "--target", t);
	expect_status(&r, 0);
	res_free(&r);
	RUN(&r, "1", "seq", "--target", t);
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "Must write data"));
	res_free(&r);
}
END_TEST

START_TEST(test_dir_with_direct_and_lz4_round_trips)
{
	char t[PATH_MAX + 64];
	struct res r;

	if (!dio_dir[0])
		return;
	spec(t, sizeof(t), "dir", dio_dir, "dz");
	RUN(&r, "-b", "64K", "-t", "4", "--max-objects", "200", "1", "write",
	    "--no-cleanup", "--direct", "--lz4", "--crc", "--target", t);
	expect_status(&r, 0);
	check_write_summary(r.out, 65536, 65536);
	/* the pattern compresses: fewer bytes stored than written */
	ck_assert(field(r.out, "Stored bytes (lz4):") > 0);
	res_free(&r);
	RUN(&r, "-t", "4", "1", "seq", "--direct", "--target", t);
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	res_free(&r);
	RUN(&r, "-t", "4", "1", "rand", "--target", t);	/* buffered too */
	expect_status(&r, 0);
	res_free(&r);
}
END_TEST

START_TEST(test_default_target_is_found_by_a_later_process)
{
	char env[PATH_MAX + 32], d[PATH_MAX + 64], m[PATH_MAX + 64];
	uint64_t obj, op;
	uint32_t nops;
	struct res r;
	int writes;

	path_in(d, sizeof(d), scratch, "default");
	fmt(env, sizeof(env), "BLBENCH_DIR=%s", d);
	RUN_ENV(&r, env, "-b", "64K", "-t", "2", "--max-objects", "50", "1",
		"write", "--no-cleanup");
	expect_status(&r, 0);
	writes = check_write_summary(r.out, 65536, 65536);
	res_free(&r);
	read_meta(path_in(m, sizeof(m), d, "benchmark_last_metadata"), &obj,
		  &nops, &op);
	ck_assert_int_eq((int)nops, writes);

	RUN_ENV(&r, env, "1", "seq");
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), writes);
	res_free(&r);

	/* without --no-cleanup a write leaves nothing behind */
	RUN_ENV(&r, env, "-b", "64K", "-t", "2", "--max-objects", "10", "1",
		"write", "--run-name", "other");
	expect_status(&r, 0);
	res_free(&r);
	ck_assert_int_eq(access(path_in(m, sizeof(m), d, "other"), F_OK), -1);
	ck_assert_int_eq(count_objects(d), writes);
}
END_TEST

/* ---- output formats ---------------------------------------------------------- */

/* A small JSON validator: returns the end of the value at @p, or NULL. */
static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\' && !*++p)
			return NULL;
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '"')
		return json_string(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';

		p = json_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				p = json_string(json_ws(p));
				if (!p || *(p = json_ws(p)) != ':')
					return NULL;
				p++;
			}
			p = json_value(p);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		char *end;

		strtod(p, &end);
		return end;
	}
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	return NULL;
}

START_TEST(test_json_output_is_one_object_with_rados_keys)
{
	static const char *const keys[] = {
		"concurrent_ios", "object_size", "op_size", "seconds_to_run",
		"max_objects", "object_prefix", "datas", "sec", "cur_ops",
		"started", "finished", "avg_bw", "cur_bw", "last_lat",
		"avg_lat", "total_time_run", "total_writes_made", "write_size",
		"bandwidth", "stddev_bandwidth", "max_bandwidth",
		"min_bandwidth", "average_iops", "stddev_iops", "max_iops",
		"min_iops", "average_latency", "stddev_latency", "max_latency",
		"min_latency",
	};
	static const char *const read_keys[] = {
		"datas", "total_time_run", "total_reads_made", "read_size",
		"object_size", "bandwidth", "average_iops", "stddev_iops",
		"max_iops", "min_iops", "average_latency", "max_latency",
		"min_latency",
	};
	char t[PATH_MAX + 64], d[PATH_MAX + 64], m[PATH_MAX + 64], k[64];
	uint64_t obj, op;
	uint32_t nops;
	const char *end;
	struct res r;

	spec(t, sizeof(t), "dir", scratch, "j");
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "300", "--format",
	    "json", "1", "write", "--no-cleanup", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq(r.out[0], '{');
	end = json_value(r.out);
	ck_assert_msg(end != NULL, "not JSON:\n%s", r.out);
	ck_assert_str_eq(json_ws(end), "");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(k, sizeof(k), "\"%s\":", keys[i]);
		ck_assert_msg(strstr(r.out, k) != NULL, "no %s in\n%s", k, r.out);
	}
	read_meta(path_in(m, sizeof(m), path_in(d, sizeof(d), scratch, "j"),
			  "benchmark_last_metadata"),
		  &obj, &nops, &op);
	ck_assert_int_eq((int)jfield(r.out, "total_writes_made"), (int)nops);
	ck_assert_int_eq((int)jfield(r.out, "write_size"), 65536);
	res_free(&r);

	RUN(&r, "--format", "json", "1", "seq", "--target", t);
	expect_status(&r, 0);
	end = json_value(r.out);
	ck_assert_msg(end != NULL, "not JSON:\n%s", r.out);
	for (size_t i = 0; i < sizeof(read_keys) / sizeof(read_keys[0]); i++) {
		snprintf(k, sizeof(k), "\"%s\":", read_keys[i]);
		ck_assert_msg(strstr(r.out, k) != NULL, "no %s in\n%s", k, r.out);
	}
	ck_assert_int_eq((int)jfield(r.out, "total_reads_made"), (int)nops);
	res_free(&r);
}
END_TEST

/* ---- latency percentiles --------------------------------------------------------- */

/* |got - want| within the histogram's promise: 1/256 of want, and 1 ns */
static void expect_near(uint64_t got, uint64_t want, const char *what)
{
	double err = fabs((double)got - (double)want);

	ck_assert_msg(err <= (double)want / 256 + 1,
		      "%s: %llu, wanted %llu (error %.3g%%)", what,
		      (unsigned long long)got, (unsigned long long)want,
		      want ? 100 * err / (double)want : 0);
}

START_TEST(test_histogram_buckets_are_contiguous_and_narrow)
{
	uint64_t lower, width, prev_end = 0;

	ck_assert_uint_eq(BLB_HIST_BUCKETS, 4480);
	for (size_t i = 0; i < BLB_HIST_BUCKETS; i++) {
		blb_hist_bucket(i, &lower, &width);
		/* each starts where the last ended, and holds what it says */
		ck_assert_uint_eq(lower, prev_end);
		ck_assert_uint_eq(blb_hist_index(lower), i);
		ck_assert_uint_eq(blb_hist_index(lower + width - 1), i);
		/* under 1% of its values wide (exact below 128 ns) */
		ck_assert(lower < 128 ? width == 1 : width * 128 <= lower);
		prev_end = lower + width;
	}
	/* 1 us .. 1000 s inside; beyond 2^41 ns, the last bucket */
	ck_assert_uint_lt(blb_hist_index(1000000000000ull), BLB_HIST_BUCKETS - 1);
	ck_assert_uint_eq(prev_end, 1ull << 41);
	ck_assert_uint_eq(blb_hist_index(UINT64_MAX), BLB_HIST_BUCKETS - 1);
	ck_assert_uint_eq(blb_hist_ns(-1), 0);
	ck_assert_uint_eq(blb_hist_ns(1e-6), 1000);
	ck_assert_uint_eq(blb_hist_ns(1e30), UINT64_MAX);
}
END_TEST

START_TEST(test_histogram_percentiles_of_known_sets)
{
	static struct blb_hist h;	/* 35 KiB: not on the stack */
	uint64_t v[1000];

	/* empty: zeroes */
	blb_hist_init(&h);
	ck_assert_uint_eq(blb_hist_quantile(&h, 0.5), 0);
	ck_assert_uint_eq(blb_hist_quantile(&h, 1), 0);

	/* 1..100000 us, each once: the k-th smallest is k us */
	for (uint64_t k = 1; k <= 100000; k++)
		blb_hist_add(&h, k * 1000);
	ck_assert_uint_eq(h.count, 100000);
	expect_near(blb_hist_quantile(&h, 0.50), 50000000, "p50");
	expect_near(blb_hist_quantile(&h, 0.90), 90000000, "p90");
	expect_near(blb_hist_quantile(&h, 0.99), 99000000, "p99");
	expect_near(blb_hist_quantile(&h, 0.999), 99900000, "p99.9");
	ck_assert_uint_eq(blb_hist_quantile(&h, 1), 100000000);
	ck_assert_uint_eq(blb_hist_quantile(&h, 0), 1000);

	/*
	 * 1000 values spread over 1 us .. 1000 s (a factor of 10^9,
	 * geometrically), added in a scrambled order: the ranks of the
	 * sorted set.
	 */
	blb_hist_init(&h);
	for (int i = 0; i < 1000; i++)
		v[i] = (uint64_t)llround(1000 * pow(10, 9.0 * i / 999));
	for (int i = 0; i < 1000; i++)
		blb_hist_add(&h, v[(i * 367) % 1000]);
	expect_near(blb_hist_quantile(&h, 0.50), v[499], "p50 wide");
	expect_near(blb_hist_quantile(&h, 0.90), v[899], "p90 wide");
	expect_near(blb_hist_quantile(&h, 0.99), v[989], "p99 wide");
	expect_near(blb_hist_quantile(&h, 0.999), v[998], "p99.9 wide");
	ck_assert_uint_eq(blb_hist_quantile(&h, 1), v[999]);
	ck_assert_uint_eq(v[999], 1000000000000ull);
	ck_assert_uint_eq(h.min_ns, 1000);

	/* one slow op among 999 fast: p99.9 is a fast one, max the slow */
	blb_hist_init(&h);
	for (int i = 0; i < 999; i++)
		blb_hist_add(&h, 2000000);
	blb_hist_add(&h, 3000000000ull);
	expect_near(blb_hist_quantile(&h, 0.999), 2000000, "p99.9 of 999 + 1");
	ck_assert_uint_eq(blb_hist_quantile(&h, 1), 3000000000ull);

	/* never above the maximum, nor below the minimum */
	blb_hist_init(&h);
	blb_hist_add(&h, 1000001);
	ck_assert_uint_eq(blb_hist_quantile(&h, 0.5), 1000001);
	ck_assert_uint_eq(blb_hist_quantile(&h, 0.999), 1000001);
}
END_TEST

/* The plain output's "Latency pNN(s):" lines, after rados bench's. */
static void check_percentile_lines(const char *out, bool is_read)
{
	static const char *const labels[] = {
		"Latency p50(s):", "Latency p90(s):", "Latency p99(s):",
		"Latency p99.9(s):", "Latency max(s):",
	};
	const char *p = strstr(out, "Min latency(s):");
	double prev = 0, v = 0, max;
	char want[64];

	ck_assert_msg(p != NULL, "no summary in:\n%s", out);
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		/* each on its own line, in the summary's column */
		fmt(want, sizeof(want), "\n%-*s", is_read ? 22 : 24, labels[i]);
		p = strstr(p, want);
		ck_assert_msg(p != NULL, "'%s' missing or out of order in:\n%s",
			      labels[i], out);
		v = strtod(p + strlen(want), NULL);
		ck_assert_msg(v > 0 && v >= prev, "%s %g after %g", labels[i],
			      v, prev);
		prev = v;
	}
	/* the maximum is rados bench's, to the printed digits */
	max = field(out, "Max latency(s):");
	ck_assert_msg(fabs(v - max) <= 1e-5 * max, "max %g, Max latency %g",
		      v, max);
	ck_assert(field(out, "Latency p50(s):") >= field(out, "Min latency(s):") * (1 - 1.0 / 256));
}

START_TEST(test_runs_print_latency_percentiles_after_the_summary)
{
	static const char *const keys[] = {
		"latency_p50", "latency_p90", "latency_p99", "latency_p999",
		"latency_max",
	};
	char t[PATH_MAX + 64];
	double prev = 0, v = 0;
	struct res r;

	spec(t, sizeof(t), "dir", scratch, "l");
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "200", "1", "write",
	    "--no-cleanup", "--target", t);
	expect_status(&r, 0);
	check_write_summary(r.out, 65536, 65536);
	check_percentile_lines(r.out, false);
	res_free(&r);

	RUN(&r, "1", "seq", "--target", t);
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	check_percentile_lines(r.out, true);
	res_free(&r);

	/* JSON: rados bench's keys, then these */
	RUN(&r, "--format", "json", "1", "rand", "--target", t);
	expect_status(&r, 0);
	ck_assert(strstr(r.out, "\"min_latency\":") <
		  strstr(r.out, "\"latency_p50\":"));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		v = jfield(r.out, keys[i]);
		ck_assert_msg(v >= prev, "%s %g after %g", keys[i], v, prev);
		prev = v;
	}
	/* both printed with 6 decimals, from the same latency kept once in
	 * whole ns and once as a double: they may round one unit apart */
	ck_assert(fabs(v - jfield(r.out, "max_latency")) <= 1.5e-6);
	res_free(&r);

	RUN(&r, "cleanup", "--target", t);
	expect_status(&r, 0);
	res_free(&r);
}
END_TEST

START_TEST(test_plot_writes_an_svg_of_its_three_panels)
{
	char t[PATH_MAX + 64], p[PATH_MAX + 64];
	struct res r;
	char *svg;

	spec(t, sizeof(t), "dir", scratch, "p");
	path_in(p, sizeof(p), scratch, "run.svg");
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "2000", "--plot", p,
	    "1", "write", "--target", t);
	expect_status(&r, 0);
	res_free(&r);
	svg = slurp(p);
	ck_assert_msg(!strncmp(svg, "<svg", 4), "does not start with <svg:\n%.200s", svg);
	ck_assert_ptr_nonnull(strstr(svg, "<polyline"));
	ck_assert_ptr_nonnull(strstr(svg, "bandwidth (MB/s)"));
	ck_assert_ptr_nonnull(strstr(svg, "latency (s)"));
	/* the distribution, with its percentiles marked */
	ck_assert_ptr_nonnull(strstr(svg, "latency distribution ("));
	ck_assert_ptr_nonnull(strstr(svg, "latency (log scale)"));
	ck_assert_ptr_nonnull(strstr(svg, "fill-opacity=\"0.6\""));
	ck_assert_ptr_nonnull(strstr(svg, ">p99.9</text>"));
	ck_assert_ptr_nonnull(strstr(svg, ">max</text>"));
	/* the title is the command line, escaped */
	ck_assert_ptr_nonnull(strstr(svg, "blbench -b 64K -t 2"));
	ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
	free(svg);
}
END_TEST

/* ---- verification --------------------------------------------------------------- */

static void flip_byte(const char *path, off_t off)
{
	unsigned char c;
	int fd = open(path, O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static int count_str(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/*
 * Writes 6 objects of 64 KiB (with option @wopt, may be NULL), corrupts
 * object 3 at byte @off, then runs seq (with @ropt, may be NULL): it must
 * fail and name object 3, and only it.
 */
static void corrupt_and_seq(const char *wopt, const char *ropt, off_t off)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], o[PATH_MAX + 64];
	char prefix[256], want[300];
	const char *args[16];
	struct res r;
	int n = 0;

	spec(t, sizeof(t), "dir", scratch, "c");
	path_in(d, sizeof(d), scratch, "c");
	args[n++] = "-b";
	args[n++] = "64K";
	args[n++] = "-t";
	args[n++] = "2";
	args[n++] = "--max-objects";
	args[n++] = "6";
	args[n++] = "10";
	args[n++] = "write";
	args[n++] = "--no-cleanup";
	args[n++] = "--target";
	args[n++] = t;
	if (wopt)
		args[n++] = wopt;
	args[n] = NULL;
	run_env(&r, NULL, args);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total writes made:"), 6);
	prefix_of(r.out, prefix, sizeof(prefix));
	res_free(&r);

	snprintf(want, sizeof(want), "%s_object3", prefix);
	flip_byte(path_in(o, sizeof(o), d, want), off);

	n = 0;
	args[n++] = "10";
	args[n++] = "seq";
	args[n++] = "--target";
	args[n++] = t;
	if (ropt)
		args[n++] = ropt;
	args[n] = NULL;
	run_env(&r, NULL, args);
	ck_assert_msg(r.status == 1, "status %d\n%s", r.status, r.err);
	snprintf(want, sizeof(want), "%s_object3 is not correct!", prefix);
	ck_assert_msg(strstr(r.err, want) != NULL, "no '%s' in:\n%s", want,
		      r.err);
	ck_assert_msg(count_str(r.err, "is not correct!") == 1,
		      "other objects named too:\n%s", r.err);
	/* the reads still all happened and were counted */
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 6);
	res_free(&r);
}

START_TEST(test_flipped_body_byte_fails_seq_naming_the_object)
{
	corrupt_and_seq(NULL, NULL, 40000);
}
END_TEST

START_TEST(test_flipped_header_byte_fails_seq)
{
	corrupt_and_seq(NULL, "--show-time", 9);
}
END_TEST

START_TEST(test_crc_catches_a_flip_even_without_verify)
{
	corrupt_and_seq("--crc", "--no-verify", 5000);
}
END_TEST

START_TEST(test_flip_in_lz4_data_fails_seq)
{
	corrupt_and_seq("--lz4", NULL, 200);
}
END_TEST

/* ---- cleanup --------------------------------------------------------------------- */

/* A write of @nobj 64 KiB objects to @t kept for later; its prefix. */
static void keep_run(const char *t, const char *nobj, const char *run,
		     char *prefix, size_t len)
{
	struct res r;

	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", nobj, "10", "write",
	    "--no-cleanup", "--run-name", run, "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total writes made:"), atoi(nobj));
	prefix_of(r.out, prefix, len);
	res_free(&r);
}

START_TEST(test_cleanup_removes_a_run_whose_metadata_is_damaged)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], m[PATH_MAX + 64];
	char prefix[256];
	struct res r;

	spec(t, sizeof(t), "dir", scratch, "bad");
	path_in(d, sizeof(d), scratch, "bad");
	path_in(m, sizeof(m), d, "benchmark_last_metadata");

	/* with --prefix */
	keep_run(t, "6", "benchmark_last_metadata", prefix, sizeof(prefix));
	flip_byte(m, 30);
	RUN(&r, "1", "seq", "--target", t);
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "damaged"));
	res_free(&r);
	RUN(&r, "cleanup", "--prefix", prefix, "--target", t);
	expect_status(&r, 0);
	ck_assert_msg(count_objects(d) == 0, "%d objects left:\n%s",
		      count_objects(d), r.err);
	ck_assert_int_ne(access(m, F_OK), 0);
	res_free(&r);

	/* without: this host's objects that no run's metadata names */
	keep_run(t, "4", "benchmark_last_metadata", prefix, sizeof(prefix));
	flip_byte(m, 3);
	RUN(&r, "cleanup", "--target", t);
	expect_status(&r, 0);
	ck_assert_msg(count_objects(d) == 0, "%d objects left:\n%s",
		      count_objects(d), r.err);
	ck_assert_int_ne(access(m, F_OK), 0);
	res_free(&r);
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
	struct res r;
	pid_t pid;
	int st;

	spec(t, sizeof(t), "dir", scratch, "k");
	path_in(d, sizeof(d), scratch, "k");
	path_in(m, sizeof(m), d, "benchmark_last_metadata");
	keep_run(t, "5", "benchmark_last_metadata", older, sizeof(older));
	keep_run(t, "3", "other", other, sizeof(other));

	/* killed once it has written a few objects of its own */
	pid = SPAWN("w", "-b", "64K", "-t", "1", "60", "write", "--target", t);
	ck_assert(wait_for_output(pid, "w", "  sec Cur ops", 30));
	for (int i = 0; i < 3000 && count_objects(d) < 5 + 3 + 4; i++)
		usleep(10000);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	ck_assert_int_ge(count_objects(d), 5 + 3 + 4);

	RUN(&r, "cleanup", "--target", t);
	expect_status(&r, 0);
	ck_assert_msg(count_objects(d) == 3, "%d objects left, not other's 3:\n%s",
		      count_objects(d), r.err);
	ck_assert_int_ne(access(m, F_OK), 0);
	res_free(&r);
	RUN(&r, "1", "seq", "--run-name", "other", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 3);
	res_free(&r);

	/* a write under way keeps its objects */
	pid = SPAWN("w", "-b", "64K", "-t", "1", "60", "write", "--no-cleanup",
		    "--target", t);
	ck_assert(wait_for_output(pid, "w", "  sec Cur ops", 30));
	for (int i = 0; i < 3000 && count_objects(d) < 3 + 4; i++)
		usleep(10000);
	RUN(&r, "cleanup", "--target", t);
	expect_status(&r, 0);
	ck_assert_msg(strstr(r.err, "still under way"), "%s", r.err);
	ck_assert_int_ge(count_objects(d), 3 + 4);
	res_free(&r);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	st = wait_exit(pid, 30);
	ck_assert_int_eq(st, 0);

	/* --prefix: every object under it, and the metadata naming them */
	RUN(&r, "cleanup", "--prefix", "benchmark_data", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq(count_objects(d), 0);
	ck_assert_int_ne(access(path_in(m, sizeof(m), d, "other"), F_OK), 0);
	ck_assert_int_ne(access(path_in(m, sizeof(m), d, "benchmark_last_metadata"),
				F_OK), 0);
	res_free(&r);
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
	old = (unsigned char *)slurp(path);
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
	struct res r;
	int fd;

	spec(t, sizeof(t), "dir", scratch, "esc");
	path_in(d, sizeof(d), scratch, "esc");
	path_in(m, sizeof(m), d, "benchmark_last_metadata");
	keep_run(t, "2", "benchmark_last_metadata", prefix, sizeof(prefix));
	/* a file beside the target that the forged prefix names */
	fd = open(path_in(v, sizeof(v), scratch, "victim_object0"),
		  O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	forge_meta_prefix(m, "../victim");

	RUN(&r, "1", "seq", "--target", t);
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "damaged"));
	res_free(&r);
	RUN(&r, "cleanup", "--target", t);
	expect_status(&r, 0);
	res_free(&r);
	ck_assert_msg(access(v, F_OK) == 0, "cleanup removed a file outside %s", d);
	ck_assert_int_eq(count_objects(d), 0);
}
END_TEST

/* -O so large that the slot arithmetic would wrap (it divided by zero) */
START_TEST(test_object_size_beyond_16t_is_a_usage_error)
{
	char t[PATH_MAX + 64];
	struct res r;

	RUN(&r, "-b", "64", "-O", "18446744073709551552", "1", "write",
	    "--target", fmt(t, sizeof(t), "file:%s/huge:8M", scratch));
	expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "-O wants a size up to 16T"));
	res_free(&r);
}
END_TEST

/* ---- room ------------------------------------------------------------------------ */

START_TEST(test_raw_target_too_small_is_refused_and_a_full_one_stops)
{
	char t[PATH_MAX + 64];
	struct res r;

	fmt(t, sizeof(t), "file:%s/small:2M", scratch);
	RUN(&r, "-b", "1M", "-t", "4", "1", "write", "--target", t);
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "not enough room"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	res_free(&r);

	/* 8 MiB: the metadata MiB and room for 7 objects of 1 MiB */
	fmt(t, sizeof(t), "file:%s/full:8M", scratch);
	RUN(&r, "-b", "1M", "-t", "2", "0", "write", "--no-cleanup",
	    "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total writes made:"), 7);
	ck_assert_ptr_nonnull(strstr(r.err, "no room for more"));
	res_free(&r);
	RUN(&r, "5", "seq", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 7);
	res_free(&r);
}
END_TEST

/*
 * A write for a time on a file smaller than the time fills wraps to the
 * file's start (fio's time_based), says so once, runs the whole time, and
 * the seq pass after it finds every slot holding its op of this run.
 */
START_TEST(test_a_timed_write_on_a_small_file_wraps_and_runs_the_whole_time)
{
	char t[PATH_MAX + 64];
	const char *say = "writing on from its start";
	struct res r;
	char *at;

	fmt(t, sizeof(t), "file:%s/wrap:8M", scratch);
	RUN(&r, "-b", "1M", "-t", "4", "2", "write", "--no-cleanup",
	    "--target", t);
	expect_status(&r, 0);
	ck_assert_double_ge(field(r.out, "Total time run:"), 1.9);
	ck_assert_int_gt((int)field(r.out, "Total writes made:"), 7);
	at = strstr(r.err, say);
	ck_assert_msg(at != NULL, "%s", r.err);
	ck_assert_ptr_null(strstr(at + 1, say));	/* once */
	ck_assert_ptr_null(strstr(r.err, "no room for more"));
	res_free(&r);
	RUN(&r, "10", "seq", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 7);
	ck_assert_ptr_null(strstr(r.out, "not correct"));
	res_free(&r);
	RUN(&r, "1", "rand", "--target", t);
	expect_status(&r, 0);
	res_free(&r);
}
END_TEST

/* --fsync, --fdatasync and --sync on the targets that write files */
START_TEST(test_durability_options_write_and_read_back)
{
	static const char *const opts[][2] = {
		{ "--fsync", "1" }, { "--fdatasync", "3" },
		{ "--sync", "dsync" }, { "--sync", "sync" },
	};
	char t[PATH_MAX + 64];
	struct res r;

	for (unsigned i = 0; i < 4; i++) {
		for (int k = 0; k < 2; k++) {
			if (k)
				fmt(t, sizeof(t), "file:%s/dur%u:16M", scratch, i);
			else
				spec(t, sizeof(t), "dir", scratch, "dur");
			RUN(&r, "-b", "64K", "-t", "4", "--max-objects", "20",
			    opts[i][0], opts[i][1], "1", "write",
			    "--no-cleanup", "--target", t);
			expect_status(&r, 0);
			ck_assert_int_eq((int)field(r.out, "Total writes made:"), 20);
			res_free(&r);
			RUN(&r, "5", "seq", "--target", t);
			expect_status(&r, 0);
			ck_assert_int_eq((int)field(r.out, "Total reads made:"), 20);
			res_free(&r);
			RUN(&r, "cleanup", "--target", t);
			expect_status(&r, 0);
			res_free(&r);
		}
	}
	RUN(&r, "--sync", "osync", "1", "write");
	expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "--sync wants dsync or sync"));
	res_free(&r);
	RUN(&r, "--fsync", "x", "1", "write");
	expect_status(&r, 2);
	res_free(&r);
	RUN(&r, "--fsync", "1", "--fdatasync", "1", "1", "write");
	expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "one or the other"));
	res_free(&r);
	RUN(&r, "--fsync", "1", "--target", "tcp:127.0.0.1:1", "1", "write");
	expect_status(&r, 2);
	ck_assert_ptr_nonnull(strstr(r.err, "file: and dir:"));
	res_free(&r);
}
END_TEST

/* ---- the TCP target ------------------------------------------------------------ */

/*
 * Starts `blbench serve` on an ephemeral port, run as @how says (may be
 * NULL); its "tcp:127.0.0.1:PORT".
 */
/* start_server_how() with @extra (NULL-terminated, or NULL) appended. */
static void start_server_extra(const char *target, const struct how *how,
			       const char *const *extra, char *tcp, size_t len)
{
	const char *argv[16] = { "serve", "--listen", "127.0.0.1:0",
				 "--target", target };
	char outp[PATH_MAX + 64];
	const char *p;
	int n = 5;

	fmt(outp, sizeof(outp), "%s/.srv.out", scratch);
	if (server_nofile) {
		static struct how limited;

		limited = how ? *how : (struct how){ 0 };
		limited.nofile = server_nofile;
		how = &limited;
	}
	while (extra && *extra && n < 15)
		argv[n++] = *extra++;
	argv[n] = NULL;
	server = spawn("srv", how, argv);
	if (how && how->nofile) {
		/* again from here: under valgrind the child's own setrlimit()
		 * is only pretended, and the program it runs would not see it */
		struct rlimit rl;

		ck_assert_int_eq(prlimit(server, RLIMIT_NOFILE, NULL, &rl), 0);
		rl.rlim_cur = how->nofile;
		ck_assert_int_eq(prlimit(server, RLIMIT_NOFILE, &rl, NULL), 0);
	}
	/* it prints where it listens once it does; wait up to 10 s */
	for (int i = 0; i < 1000; i++) {
		char *out = slurp(outp);

		p = strstr(out, "listening on 127.0.0.1:");
		if (p) {
			fmt(tcp, len, "tcp:127.0.0.1:%d",
			    atoi(p + strlen("listening on 127.0.0.1:")));
			free(out);
			return;
		}
		free(out);
		ck_assert_msg(waitpid(server, NULL, WNOHANG) == 0,
			      "blbench serve exited early");
		usleep(10000);
	}
	ck_abort_msg("blbench serve did not start listening");
}

static void start_server_how(const char *target, const struct how *how,
			     char *tcp, size_t len)
{
	start_server_extra(target, how, NULL, tcp, len);
}

static void start_server(const char *target, char *tcp, size_t len)
{
	start_server_how(target, NULL, tcp, len);
}

/* SIGTERM: the server finishes what it does and exits 0. */
static void stop_server(void)
{
	int st;

	ck_assert_int_eq(kill(server, SIGTERM), 0);
	ck_assert_int_eq(waitpid(server, &st, 0), server);
	server = -1;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "blbench serve ended with %d", st);
}

static void tcp_round(const char *tcp, const char *srvdir, const char *direct)
{
	char m[PATH_MAX + 64], o[PATH_MAX + 64];
	uint64_t obj, op;
	uint32_t nops;
	struct res r;
	int writes;

	RUN(&r, "-b", "64K", "-O", "128K", "-t", "4", "--max-objects", "300",
	    "1", "write", "--no-cleanup", "--crc", "--target", tcp, direct);
	expect_status(&r, 0);
	writes = check_write_summary(r.out, 65536, 131072);
	res_free(&r);
	/* the server's directory holds what the client says it wrote */
	read_meta(path_in(m, sizeof(m), srvdir, "benchmark_last_metadata"),
		  &obj, &nops, &op);
	ck_assert_int_eq((int)nops, writes);
	ck_assert_int_eq(count_objects(srvdir), (writes + 1) / 2);
	/* with --direct the header fills the server's block, as on a file */
	if (!strcmp(direct, "--direct")) {
		an_object(srvdir, o, sizeof(o));
		ck_assert_uint_eq(stored_after_header(o, 0),
				  65536 - blk_of(o));
	}

	RUN(&r, "-t", "4", "1", "seq", "--target", tcp, direct);
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	res_free(&r);
	RUN(&r, "-t", "4", "1", "rand", "--target", tcp, direct);
	expect_status(&r, 0);
	check_read_summary(r.out, 65536);
	res_free(&r);
	RUN(&r, "cleanup", "--target", tcp);
	expect_status(&r, 0);
	res_free(&r);
	ck_assert_int_eq(count_objects(srvdir), 0);
	ck_assert_int_ne(access(m, F_OK), 0);
}

START_TEST(test_tcp_target_write_seq_rand_cleanup_through_serve)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], tcp[64];

	path_in(d, sizeof(d), scratch, "srv");
	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));
	tcp_round(tcp, d, "--show-time");
	stop_server();
}
END_TEST

/* Minor page faults a process has taken (/proc/PID/stat, field 10). */
static long long minflt_of(pid_t pid)
{
	char p[64], buf[1024], *s;
	long long v = -1;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	f = fopen(p, "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
	fclose(f);
	s = strrchr(buf, ')');	/* the name may hold spaces */
	ck_assert_ptr_nonnull(s);
	/* state ppid pgrp session tty tpgid flags minflt */
	ck_assert_int_eq(sscanf(s + 2, "%*c %*d %*d %*d %*d %*d %*u %lld", &v),
			 1);
	return v;
}

/* seq of run @name through @tcp: the client's minor faults, and the server's. */
static void seq_faults(const char *tcp, const char *name, long long *cli,
		       long long *srv)
{
	char p[PATH_MAX + 64];
	long long s0 = minflt_of(server);
	struct rusage ru;
	pid_t pid;
	int st;

	pid = spawn("run", NULL, (const char *const[]){ "-t", "4", "0", "seq",
		    "--run-name", name, "--target", tcp, NULL });
	ck_assert_int_eq(wait4(pid, &st, 0, &ru), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "seq: %s",
		      slurp(fmt(p, sizeof(p), "%s/.run.err", scratch)));
	*cli = ru.ru_minflt;
	*srv = minflt_of(server) - s0;
}

/*
 * Large READ replies (and WRITE payloads) go into recycled buffers on both
 * sides, not fresh memory: reading 20 objects of 4 MiB more than another
 * run costs neither process a page fault per 4 KiB page read (1024 per
 * object, as reads into fresh memory took).  Under a quarter of that is
 * allowed, for what the kernel and the allocator do besides.  A first
 * pass maps what stays mapped (the pools, the pattern, the page cache).
 */
/*
 * Under ThreadSanitizer its own allocator and shadow memory fault as well
 * (5,522 over the 20 objects in one CI run against the 5,120 allowed):
 * twice the allowance there, still half of a fault per page read.
 */
#ifdef __SANITIZE_THREAD__
#define FAULTS_ALLOW (2 * 20 * 256)
#else
#define FAULTS_ALLOW (20 * 256)
#endif

START_TEST(test_tcp_reads_of_large_objects_take_no_fault_per_page)
{
	char t[PATH_MAX + 64], tcp[64];
	long long c_small, s_small, c_big, s_big;
	struct res r;

	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));
	RUN(&r, "-t", "4", "--max-objects", "4", "0", "write", "--no-cleanup",
	    "--run-name", "small", "--target", tcp);
	expect_status(&r, 0);
	res_free(&r);
	RUN(&r, "-t", "4", "--max-objects", "24", "0", "write", "--no-cleanup",
	    "--run-name", "big", "--target", tcp);
	expect_status(&r, 0);
	res_free(&r);
	seq_faults(tcp, "big", &c_big, &s_big);
	seq_faults(tcp, "small", &c_small, &s_small);
	seq_faults(tcp, "big", &c_big, &s_big);
	ck_assert_msg(c_big - c_small < FAULTS_ALLOW,
		      "client: %lld faults for 4 objects, %lld for 24",
		      c_small, c_big);
	ck_assert_msg(s_big - s_small < FAULTS_ALLOW,
		      "server: %lld faults for 4 objects, %lld for 24",
		      s_small, s_big);
	RUN(&r, "cleanup", "--run-name", "small", "--target", tcp);
	res_free(&r);
	RUN(&r, "cleanup", "--run-name", "big", "--target", tcp);
	res_free(&r);
	stop_server();
}
END_TEST

START_TEST(test_tcp_target_with_direct_on_the_server)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], tcp[64];

	if (!dio_dir[0])
		return;
	path_in(d, sizeof(d), dio_dir, "srvd");
	start_server(spec(t, sizeof(t), "dir", dio_dir, "srvd"), tcp, sizeof(tcp));
	tcp_round(tcp, d, "--direct");
	stop_server();
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
	struct res r;

	path_in(f, sizeof(f), scratch, "aligned");
	RUN(&r, "-b", "2M", "-t", "2", "0", "write", "--no-cleanup",
	    "--target", fmt(t, sizeof(t), "file:%s:16M", f));
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total writes made:"), 7);
	res_free(&r);
	bytes_at(f, 0, got);
	ck_assert_str_eq(got, "BLBRAW02");
	bytes_at(f, 1 << 20, got);
	ck_assert_str_ne(got, "BLBENCH1");
	bytes_at(f, 2 << 20, got);
	ck_assert_str_eq(got, "BLBENCH1");
	bytes_at(f, 14 << 20, got);
	ck_assert_str_eq(got, "BLBENCH1");
	fmt(t, sizeof(t), "file:%s", f);
	RUN(&r, "5", "seq", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 7);
	res_free(&r);
	RUN(&r, "1", "rand", "--target", t);
	expect_status(&r, 0);
	res_free(&r);

	/* a write with -b 1M over it: the first format again */
	RUN(&r, "-b", "1M", "-t", "2", "0", "write", "--no-cleanup",
	    "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total writes made:"), 15);
	res_free(&r);
	bytes_at(f, 0, got);
	ck_assert_str_eq(got, "BLBRAW01");
	bytes_at(f, 1 << 20, got);
	ck_assert_str_eq(got, "BLBENCH1");
	RUN(&r, "5", "seq", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 15);
	res_free(&r);
}
END_TEST

START_TEST(test_truncated_raw_file_is_said_to_be_shorter_than_its_run)
{
	char t[PATH_MAX + 64], f[PATH_MAX + 64];
	struct res r;

	path_in(f, sizeof(f), scratch, "trunc");
	RUN(&r, "-b", "1M", "-t", "2", "0", "write", "--no-cleanup",
	    "--target", fmt(t, sizeof(t), "file:%s:8M", f));
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total writes made:"), 7);
	res_free(&r);
	/* room for 3 of the 7 objects now */
	ck_assert_int_eq(truncate(f, 4 << 20), 0);
	fmt(t, sizeof(t), "file:%s", f);
	RUN(&r, "1", "seq", "--target", t);
	expect_status(&r, 1);
	ck_assert_msg(strstr(r.err, "is shorter than benchmark_last_metadata says"),
		      "%s", r.err);
	ck_assert_ptr_null(strstr(r.err, "No space left"));
	res_free(&r);
	RUN(&r, "1", "rand", "--target", t);
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "is shorter than"));
	res_free(&r);
}
END_TEST

/* ---- one writer at a time on a raw file --------------------------------------- */

static void expect_refused(const struct res *r, const char *why)
{
	expect_status(r, 1);
	ck_assert_msg(strstr(r->err, why) != NULL, "no '%s' in:\n%s", why,
		      r->err);
	ck_assert_msg(strstr(r->out, "sec Cur ops") == NULL,
		      "it ran before it was refused:\n%s", r->out);
}

START_TEST(test_raw_file_takes_one_writer_at_a_time)
{
	const char *dir = dio_dir[0] ? dio_dir : scratch;
	char f[PATH_MAX + 64], t[PATH_MAX + 64], tcp[64];
	struct res r;
	int fd;

	path_in(f, sizeof(f), dir, "raw");
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "10", "1", "write",
	    "--no-cleanup", "--target", fmt(t, sizeof(t), "file:%s:8M", f));
	expect_status(&r, 0);
	res_free(&r);
	fmt(t, sizeof(t), "file:%s", f);

	/* the test holds the lock as a reader would: readers share it */
	fd = open(f, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(flock(fd, LOCK_SH | LOCK_NB), 0);
	RUN(&r, "-b", "64K", "-t", "2", "1", "write", "--target", t);
	expect_refused(&r, "in use by another blbench");
	res_free(&r);
	RUN(&r, "1", "seq", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 10);
	res_free(&r);

	/* ... then as a writer would: nobody else gets in */
	ck_assert_int_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	RUN(&r, "1", "rand", "--target", t);
	expect_refused(&r, "being written by another blbench");
	res_free(&r);
	RUN(&r, "cleanup", "--target", t);
	expect_refused(&r, "in use by another blbench");
	res_free(&r);
	close(fd);

	/* a `blbench serve` of the file is its writer while it runs */
	start_server(t, tcp, sizeof(tcp));
	RUN(&r, "-b", "64K", "-t", "2", "1", "write", "--target", t);
	expect_refused(&r, "in use by another blbench");
	res_free(&r);
	/* its clients still get in, buffered and (its second open) O_DIRECT */
	RUN(&r, "1", "seq", "--target", tcp);
	expect_status(&r, 0);
	res_free(&r);
	if (dio_dir[0]) {
		RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "10", "1",
		    "write", "--no-cleanup", "--direct", "--target", tcp);
		expect_status(&r, 0);
		res_free(&r);
	}
	stop_server();

	/* nothing was overwritten behind the last writer's back */
	RUN(&r, "1", "seq", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 10);
	res_free(&r);
}
END_TEST

/* ---- targets this user may only read ------------------------------------------- */

/* Lets user nobody reach what the test makes in scratch. */
static void open_scratch_to_all(void)
{
	ck_assert_int_eq(chmod(scratch, 0755), 0);
}

/* A child that could not become nobody: the test cannot be made here. */
static bool cannot_be_nobody(const struct res *r)
{
	if (r->status != 125)
		return false;
	fprintf(stderr, "test_blbench: cannot run as user nobody here; test skipped\n");
	return true;
}

START_TEST(test_raw_file_that_cannot_be_written_is_still_read)
{
	char f[PATH_MAX + 64], t[PATH_MAX + 64];
	struct res r;

	path_in(f, sizeof(f), scratch, "ro");
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "10", "1", "write",
	    "--no-cleanup", "--target", fmt(t, sizeof(t), "file:%s:8M", f));
	expect_status(&r, 0);
	res_free(&r);
	fmt(t, sizeof(t), "file:%s", f);
	ck_assert_int_eq(chmod(f, 0444), 0);
	open_scratch_to_all();

	/* the file really is read-only to nobody (root would ignore 0444) */
	RUN_NOBODY(&r, "-b", "64K", "1", "write", "--target", t);
	if (cannot_be_nobody(&r)) {
		res_free(&r);
		return;
	}
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "Permission denied"));
	res_free(&r);
	/* and seq, rand verify it all the same */
	RUN_NOBODY(&r, "1", "seq", "--target", t);
	expect_status(&r, 0);
	ck_assert_int_eq((int)field(r.out, "Total reads made:"), 10);
	res_free(&r);
	RUN_NOBODY(&r, "1", "rand", "--target", t);
	expect_status(&r, 0);
	res_free(&r);
}
END_TEST

START_TEST(test_unwritable_directory_is_refused_before_the_header)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64];
	struct res r;
	int fd;

	ck_assert_int_eq(mkdir(path_in(d, sizeof(d), scratch, "ro"), 0555), 0);
	open_scratch_to_all();
	RUN_NOBODY(&r, "-b", "64K", "1", "write", "--target",
		   spec(t, sizeof(t), "dir", scratch, "ro"));
	if (!cannot_be_nobody(&r)) {
		expect_status(&r, 1);
		ck_assert_msg(strstr(r.err, "cannot write in dir:"), "%s", r.err);
		ck_assert_msg(r.out[0] == 0, "it printed before it failed:\n%s",
			      r.out);
		ck_assert_int_eq(count_objects(d), 0);
	}
	res_free(&r);

	/* a file where the directory should be, whoever runs it */
	fd = open(path_in(d, sizeof(d), scratch, "plain"), O_WRONLY | O_CREAT,
		  0644);
	ck_assert_int_ge(fd, 0);
	close(fd);
	RUN(&r, "-b", "64K", "1", "write", "--target",
	    spec(t, sizeof(t), "dir", scratch, "plain"));
	expect_status(&r, 1);
	ck_assert_str_eq(r.out, "");
	ck_assert_ptr_nonnull(strstr(r.err, "Not a directory"));
	res_free(&r);
}
END_TEST

#ifndef __SANITIZE_THREAD__	/* see blbench_suite() */
/* ---- a server that stops answering ---------------------------------------- */

static char *client_err(void)
{
	char p[PATH_MAX + 64];

	return slurp(fmt(p, sizeof(p), "%s/.cl.err", scratch));
}

/*
 * Starts a server and a client writing to it for a minute (with @timeout
 * as --op-timeout unless NULL), waits until the client runs its ops, then
 * stops the server (SIGSTOP): the client's ops then never complete.  The
 * client's pid.
 */
static pid_t client_of_stalled_server(const char *timeout, char *tcp,
				      size_t len)
{
	char t[PATH_MAX + 64];
	pid_t pid;

	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, len);
	if (timeout)
		pid = SPAWN("cl", "-b", "64K", "-t", "2", "--op-timeout",
			    timeout, "60", "write", "--target", tcp);
	else
		pid = SPAWN("cl", "-b", "64K", "-t", "2", "60", "write",
			    "--target", tcp);
	/* the table's header: it said hello and its ops are under way */
	if (!wait_for_output(pid, "cl", "  sec Cur ops", 30)) {
		char *err = client_err();

		ck_abort_msg("the client did not start:\n%s", err);
	}
	ck_assert_int_eq(kill(server, SIGSTOP), 0);
	return pid;
}

START_TEST(test_op_timeout_fails_a_run_whose_server_stalled)
{
	char tcp[64], *err;
	pid_t pid = client_of_stalled_server("1", tcp, sizeof(tcp));
	int st = wait_exit(pid, 40);

	err = client_err();
	ck_assert_msg(st == 1, "client status %d (-1: still running)\n%s", st,
		      err);
	ck_assert_msg(strstr(err, "--op-timeout") && strstr(err, "no answer from"),
		      "no reason given:\n%s", err);
	/* it says what it leaves behind, and how to remove it */
	ck_assert_ptr_nonnull(strstr(err, "blbench cleanup --prefix benchmark_data_"));
	free(err);
	/* requests outside the op loop (hello, metadata, removals) too */
	{
		struct res r;

		RUN(&r, "--op-timeout", "1", "cleanup", "--target", tcp);
		expect_status(&r, 1);
		ck_assert_msg(strstr(r.err, "timed out"), "%s", r.err);
		res_free(&r);
	}
	kill(server, SIGCONT);
	stop_server();
}
END_TEST

/*
 * Whether @sig is still pending for @pid (/proc/PID/status): two signals
 * sent before the first is delivered would merge into one.
 */
static bool sig_pending(pid_t pid, int sig)
{
	char p[64], line[256];
	bool pending = false;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	f = fopen(p, "r");
	if (!f)
		return false;	/* gone: nothing pending */
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "ShdPnd:", 7) || !strncmp(line, "SigPnd:", 7))
			pending |= (strtoull(line + 7, NULL, 16) >> (sig - 1)) & 1;
	fclose(f);
	return pending;
}

/* with the default --op-timeout, which must not be what ends it */
START_TEST(test_sigterm_stops_a_client_whose_server_stalled)
{
	char tcp[64], *err;
	pid_t pid = client_of_stalled_server(NULL, tcp, sizeof(tcp));
	int st;

	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	st = wait_exit(pid, 20);
	err = client_err();
	ck_assert_msg(st == 1, "client status %d (-1: still running)\n%s", st,
		      err);
	ck_assert_msg(strstr(err, "stopped by a signal"), "no reason given:\n%s",
		      err);
	free(err);
	kill(server, SIGCONT);
	stop_server();
}
END_TEST

START_TEST(test_second_sigint_stops_a_client_whose_server_stalled)
{
	char tcp[64], *err;
	pid_t pid = client_of_stalled_server(NULL, tcp, sizeof(tcp));
	int st;

	/* the first lets the ops in flight finish: they never will */
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	for (int i = 0; i < 1000 && sig_pending(pid, SIGINT); i++)
		usleep(10000);
	ck_assert(!sig_pending(pid, SIGINT));
	ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0);
	ck_assert_int_eq(kill(pid, SIGINT), 0);
	st = wait_exit(pid, 20);
	err = client_err();
	ck_assert_msg(st == 1, "client status %d (-1: still running)\n%s", st,
		      err);
	ck_assert_msg(strstr(err, "stopped by a signal"), "no reason given:\n%s",
		      err);
	free(err);
	kill(server, SIGCONT);
	stop_server();
}
END_TEST
#endif

static int connect_to(const char *tcp)
{
	struct sockaddr_in a;
	struct timeval tv = { 10, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)atoi(strrchr(tcp, ':') + 1));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* Sends @len bytes and expects the server to hang up on us. */
static void expect_hangup(const char *tcp, const void *buf, size_t len)
{
	char c;
	ssize_t n;
	int fd = connect_to(tcp);

	ck_assert_int_eq(send(fd, buf, len, MSG_NOSIGNAL), (ssize_t)len);
	n = recv(fd, &c, 1, 0);
	ck_assert_msg(n == 0 || (n < 0 && errno == ECONNRESET),
		      "the server answered a malformed frame (recv %zd, %s)", n,
		      n < 0 ? strerror(errno) : "data");
	close(fd);
}

/* A frame of @type with @body as payload, in the messenger's format. */
static size_t make_frame(unsigned char *buf, size_t cap, uint16_t type,
			 const void *body, size_t blen)
{
	struct bl_list p, out;
	size_t n;

	bl_list_init(&p);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&p, body, blen), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, type, 1, &p, 0), 0);
	n = bl_list_length(&out);
	ck_assert_uint_le(n, cap);
	bl_list_copy_out(&out, 0, n, buf);
	bl_list_clear(&p);
	bl_list_clear(&out);
	return n;
}

START_TEST(test_server_fed_malformed_frames_stays_up_for_others)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], tcp[64];
	unsigned char frame[256], req[64];
	struct res r;
	size_t n;
	int idle;

	path_in(d, sizeof(d), scratch, "srv");
	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));

	/* a client that stops half way through a preamble stays connected */
	idle = connect_to(tcp);
	ck_assert_int_eq(send(idle, "BLM1\x02\x00", 6, MSG_NOSIGNAL), 6);

	/* not the messenger's format at all */
	expect_hangup(tcp, "GET / HTTP/1.0\r\n\r\n0123456789abcdef", 34);
	/* a well-framed message of a type blbench does not know */
	memset(req, 0, sizeof(req));
	n = make_frame(frame, sizeof(frame), 77, req, 12);
	expect_hangup(tcp, frame, n);
	/* a WRITE whose request stops after the tag */
	n = make_frame(frame, sizeof(frame), 2, req, 8);
	expect_hangup(tcp, frame, n);
	/* a READ of a name that would leave the directory */
	{
		unsigned char rd[12 + 32 + 4 + 5] = { 0 };

		rd[44] = 5;	/* name length, then the name */
		memcpy(rd + 48, "../x", 4);
		n = make_frame(frame, sizeof(frame), 3, rd, sizeof(rd));
		expect_hangup(tcp, frame, n);
	}
	/* a valid frame whose header crc was damaged */
	n = make_frame(frame, sizeof(frame), 1, req, 12);
	frame[21] ^= 1;
	expect_hangup(tcp, frame, n);

	/* the server is still up and serves the next client in full */
	ck_assert_int_eq(waitpid(server, NULL, WNOHANG), 0);
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "50", "1", "write",
	    "--target", tcp);
	expect_status(&r, 0);
	ck_assert_int_eq(check_write_summary(r.out, 65536, 65536), 50);
	res_free(&r);
	ck_assert_int_eq(count_objects(d), 0);	/* and cleaned up */
	close(idle);
	stop_server();
	/* it said why it closed those connections */
	{
		char errp[PATH_MAX + 64];
		char *err;

		err = slurp(fmt(errp, sizeof(errp), "%s/.srv.err", scratch));
		ck_assert_msg(strlen(err) > 0, "nothing logged");
		free(err);
	}
}
END_TEST

/* ---- hostile clients of blbench serve ----------------------------------------- */

/* A number from /proc/PID/status ("VmRSS:"), in KiB. */
static long status_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	fmt(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	fclose(f);
	ck_assert_int_ge(v, 0);
	return v;
}

/* CPU time @pid used so far (user + system), in ms. */
static int64_t cpu_ms_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	int fd;
	ssize_t n;

	fmt(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ck_assert_int_gt(n, 0);
	buf[n] = 0;
	p = strrchr(buf, ')');	/* the command may hold spaces */
	ck_assert_ptr_nonnull(p);
	/* state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime */
	ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u "
				"%*u %*u %llu %llu", &ut, &st), 2);
	return (int64_t)((ut + st) * 1000 /
			 (unsigned long long)sysconf(_SC_CLK_TCK));
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Sends all of @l's bytes on the blocking @fd. */
static void send_list(int fd, const struct bl_list *l)
{
	size_t n = bl_list_length(l);
	unsigned char *b = malloc(n);

	ck_assert_ptr_nonnull(b);
	bl_list_copy_out(l, 0, n, b);
	ck_assert_int_eq(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	free(b);
}

/* A request frame of @type: @body after the tag and flags. */
static void request(struct bl_list *out, uint16_t type, uint64_t tag,
		    struct bl_list *body)
{
	struct bl_list p;

	bl_list_init(&p);
	ck_assert_int_eq(bl_encode_u64(&p, tag), 0);
	ck_assert_int_eq(bl_encode_u32(&p, 0), 0);
	ck_assert_int_eq(bl_list_claim_append(&p, body), 0);
	ck_assert_int_eq(bl_msgr_encode(out, type, tag, &p, 0), 0);
	bl_list_clear(&p);
}

#define T_WRITE_ 2
#define T_READ_ 3

/* WRITE @len bytes to object 0 of "obj" and wait for its reply. */
static void write_object(int fd, size_t len)
{
	struct bl_list body, out;
	unsigned char rep[BL_MSGR_OVERHEAD + 16];
	size_t hdr;
	ssize_t n, got = 0;

	bl_list_init(&body);
	bl_list_init(&out);
	hdr = 8 + 4 + 4 + 8 + 8 + 8 + 4 + 3;	/* up to the name's end */
	ck_assert_int_eq(bl_encode_u32(&body, 4096), 0);	/* data_off */
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);		/* objno */
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);		/* off */
	ck_assert_int_eq(bl_encode_u64(&body, len), 0);		/* span */
	ck_assert_int_eq(bl_encode_bytes(&body, "obj", 3), 0);
	ck_assert_int_eq(bl_list_append_zero(&body, 4096 - hdr), 0);
	ck_assert_int_eq(bl_list_append_zero(&body, len), 0);
	request(&out, T_WRITE_, 1, &body);
	send_list(fd, &out);
	while (got < (ssize_t)sizeof(rep)) {
		n = recv(fd, rep + got, sizeof(rep) - (size_t)got, 0);
		ck_assert_int_gt(n, 0);
		got += n;
	}
	/* res: the bytes written */
	ck_assert_int_eq((int64_t)(rep[BL_MSGR_PREAMBLE + 8] |
				   rep[BL_MSGR_PREAMBLE + 9] << 8 |
				   rep[BL_MSGR_PREAMBLE + 10] << 16 |
				   (uint64_t)rep[BL_MSGR_PREAMBLE + 11] << 24),
			 (int64_t)len);
	bl_list_clear(&body);
	bl_list_clear(&out);
}

/* The next reply on the blocking @fd: its result (its tag into *@tag). */
static int64_t read_reply(int fd, uint64_t *tag)
{
	struct bl_msgr_frame f;
	struct bl_list in;
	uint64_t res = 0;
	int r;

	bl_list_init(&in);
	bl_msgr_frame_init(&f);
	while ((r = bl_msgr_parse(&in, &f, 64 << 20)) == 0) {
		static unsigned char b[65536];
		ssize_t n = recv(fd, b, sizeof(b), 0);

		ck_assert_msg(n > 0, "no reply (recv %zd)", n);
		ck_assert_int_eq(bl_list_append(&in, b, (size_t)n), 0);
	}
	ck_assert_int_eq(r, 1);
	ck_assert_int_eq(bl_list_copy_out(&f.payload, 0, 8, tag), 0);
	ck_assert_int_eq(bl_list_copy_out(&f.payload, 8, 8, &res), 0);
	bl_msgr_frame_release(&f);
	ck_assert_uint_eq(bl_list_length(&in), 0);
	bl_list_clear(&in);
	return (int64_t)res;
}

/* @n READs of @len bytes of object 0 of "obj", pipelined. */
static void read_requests(int fd, int n, size_t len)
{
	struct bl_list out;

	bl_list_init(&out);
	for (int i = 0; i < n; i++) {
		struct bl_list body;

		bl_list_init(&body);
		ck_assert_int_eq(bl_encode_u64(&body, 0), 0);	/* objno */
		ck_assert_int_eq(bl_encode_u64(&body, 0), 0);	/* off */
		ck_assert_int_eq(bl_encode_u64(&body, len), 0);	/* span */
		ck_assert_int_eq(bl_encode_u64(&body, len), 0);	/* len */
		ck_assert_int_eq(bl_encode_bytes(&body, "obj", 3), 0);
		request(&out, T_READ_, 100 + (uint64_t)i, &body);
		bl_list_clear(&body);
	}
	send_list(fd, &out);
	bl_list_clear(&out);
}

/*
 * A client pipelines 40 READs of 32 MiB and never reads a reply.  The
 * server's resident memory stays far below the 1.3 GiB the replies would
 * take, the server does not spin while the client sits there, and it
 * still serves another client in full.
 */
START_TEST(test_serve_bounds_memory_for_replies_nobody_reads)
{
	const size_t len = (size_t)32 << 20;
	char t[PATH_MAX + 64], tcp[64];
	long rss0, peak = 0;
	int64_t end, t0, c0;
	struct res r;
	int fd;

	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));
	fd = connect_to(tcp);
	write_object(fd, len);
	rss0 = status_kb(server, "VmRSS:");
	read_requests(fd, 40, len);
	/* what the server takes, sampled for 3 s */
	end = mono_ms() + 3000;
	while (mono_ms() < end) {
		long v = status_kb(server, "VmRSS:");

		if (v > peak)
			peak = v;
		usleep(20000);
	}
	ck_assert_msg(peak - rss0 < 400 * 1024,
		      "the server grew by %ld MiB for replies nobody reads",
		      (peak - rss0) / 1024);
	t0 = mono_ms();
	c0 = cpu_ms_of(server);
	usleep(1000000);
	ck_assert_msg(cpu_ms_of(server) - c0 <= (mono_ms() - t0) / 2,
		      "the server spent %lld ms of CPU in %lld ms waiting",
		      (long long)(cpu_ms_of(server) - c0),
		      (long long)(mono_ms() - t0));
	/* others are served meanwhile */
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "20", "1", "write",
	    "--target", tcp);
	expect_status(&r, 0);
	res_free(&r);
	close(fd);
	stop_server();
}
END_TEST


/*
 * A client that asks and never reads: a 4 KiB receive buffer (set before
 * connecting, so the window it offers stays small), one READ of @len
 * bytes of object @name (objno 0, at 0), and not a byte read.  Its fd.
 */
static int hoarder(const char *tcp, const char *name, uint64_t len)
{
	struct sockaddr_in a;
	struct bl_list body, out;
	int fd = socket(AF_INET, SOCK_STREAM, 0), sz = 4096;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz)),
			 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)atoi(strrchr(tcp, ':') + 1));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	bl_list_init(&body);
	bl_list_init(&out);
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);		/* objno */
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);		/* off */
	ck_assert_int_eq(bl_encode_u64(&body, len), 0);	/* span */
	ck_assert_int_eq(bl_encode_u64(&body, len), 0);	/* len */
	ck_assert_int_eq(bl_encode_bytes(&body, name, strlen(name)), 0);
	request(&out, T_READ_, 7, &body);
	send_list(fd, &out);
	bl_list_clear(&body);
	bl_list_clear(&out);
	return fd;
}

/* A sparse object of @len bytes in the server's directory @dir. */
static void sparse_object(const char *dir, const char *name, off_t len)
{
	char p[PATH_MAX + 64];
	int fd;

	mkdir(dir, 0755);
	fd = open(path_in(p, sizeof(p), dir, name), O_WRONLY | O_CREAT, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, len), 0);
	close(fd);
}

/*
 * What a server may grow by, for @kib of its own memory.  Under
 * ThreadSanitizer every byte the server touches also gets shadow memory
 * in its own mapping (several times the byte), which VmRSS counts: allow
 * three times as much there, still far below the gigabyte a server that
 * hoards reaches.
 */
#ifdef __SANITIZE_THREAD__
#define RSS_ALLOW(kib) (3 * (long)(kib))
#else
#define RSS_ALLOW(kib) ((long)(kib))
#endif

/* The highest VmRSS of the server, sampled for @ms, less @base (KiB). */
static long rss_growth(long base, int ms)
{
	int64_t end = mono_ms() + ms;
	long peak = 0;

	while (mono_ms() < end) {
		long v = status_kb(server, "VmRSS:");

		if (v > peak)
			peak = v;
		usleep(20000);
	}
	return peak - base;
}

/* Whether the kernel has @fd's connection closed (the server reset it). */
static bool reset_by_peer(int fd)
{
	struct tcp_info ti;
	socklen_t n = sizeof(ti);

	return getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &n) == 0 &&
	       ti.tcpi_state == TCP_CLOSE;
}

/*
 * The hoarding client of issue 25: READs of sparse objects of 1 GiB (one
 * connection) and 256 MiB (four more), each with a 4 KiB receive buffer,
 * nothing ever read.  The server streams each reply a piece at a time as
 * the socket drains, so it grows by a few MiB per connection, not by the
 * 1.25 GiB asked (it grew by 1,050 MB for the first alone before).
 */
START_TEST(test_serve_streams_large_reads_nobody_reads_in_bounded_memory)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], tcp[64];
	long rss0, grew;
	int fds[5];

	path_in(d, sizeof(d), scratch, "srv");
	sparse_object(d, "big", (off_t)1 << 30);
	sparse_object(d, "mid", (off_t)256 << 20);
	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));
	rss0 = status_kb(server, "VmRSS:");
	fds[0] = hoarder(tcp, "big", (uint64_t)1 << 30);
	for (int i = 1; i < 5; i++)
		fds[i] = hoarder(tcp, "mid", (uint64_t)256 << 20);
	grew = rss_growth(rss0, 3000);
	ck_assert_msg(grew < RSS_ALLOW(64 * 1024),
		      "the server grew by %ld MiB for 1.25 GiB nobody reads",
		      grew / 1024);
	for (int i = 0; i < 5; i++)
		close(fds[i]);
	stop_server();
}
END_TEST

/* A READ of @len bytes of object @name (objno 0, at 0) on @fd. */
static void read_request(int fd, uint64_t tag, const char *name, uint64_t len)
{
	struct bl_list body, out;

	bl_list_init(&body);
	bl_list_init(&out);
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);
	ck_assert_int_eq(bl_encode_u64(&body, len), 0);
	ck_assert_int_eq(bl_encode_u64(&body, len), 0);
	ck_assert_int_eq(bl_encode_bytes(&body, name, strlen(name)), 0);
	request(&out, T_READ_, tag, &body);
	send_list(fd, &out);
	bl_list_clear(&body);
	bl_list_clear(&out);
}

/*
 * A streamed READ (over 4 MiB) answers as any READ until its reply
 * begins: a missing object is -ENOENT, an object shorter than the first
 * piece gives its bytes (a short result), and the connection goes on.
 * One that comes short after the reply began (5 MiB asked as 16) cannot
 * be answered honestly: that client is reset, the server stays up.
 */
START_TEST(test_serve_streamed_read_errors_answer_or_reset)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], tcp[64];
	const uint64_t ask = (uint64_t)16 << 20;
	unsigned char sink[65536];
	uint64_t tag;
	ssize_t n;
	int fd;

	path_in(d, sizeof(d), scratch, "srv");
	sparse_object(d, "small", (off_t)1 << 20);
	sparse_object(d, "five", (off_t)5 << 20);
	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));
	fd = connect_to(tcp);
	read_request(fd, 1, "nosuch", ask);
	ck_assert_int_eq(read_reply(fd, &tag), -ENOENT);
	ck_assert_uint_eq(tag, 1);
	read_request(fd, 2, "small", ask);
	ck_assert_int_eq(read_reply(fd, &tag), 1 << 20);
	ck_assert_uint_eq(tag, 2);
	read_request(fd, 3, "five", ask);
	do
		n = recv(fd, sink, sizeof(sink), 0);
	while (n > 0);
	ck_assert_msg(n == 0 || errno == ECONNRESET, "recv: %s", strerror(errno));
	close(fd);
	/* the others are served */
	fd = connect_to(tcp);
	read_request(fd, 4, "small", 4096);
	ck_assert_int_eq(read_reply(fd, &tag), 4096);
	close(fd);
	stop_server();
}
END_TEST

/*
 * One budget for the whole server: with --max-memory 16M, six clients
 * each asking for a 1 GiB READ they never read hold what the budget
 * allows and no more (the server's RSS stays within it and some slack);
 * meanwhile a WRITE, which would need more, is refused with ENOBUFS and
 * the client says so.  --idle-timeout 3 then ends the six (they take no
 * byte), their memory is back, and the same write succeeds.
 */
START_TEST(test_serve_memory_budget_refuses_work_and_idle_timeout_frees_it)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], tcp[64];
	long rss0, grew;
	int64_t end;
	struct res r;
	int fds[6], open_n;

	path_in(d, sizeof(d), scratch, "srv");
	sparse_object(d, "big", (off_t)1 << 30);
	start_server_extra(spec(t, sizeof(t), "dir", scratch, "srv"), NULL,
			   (const char *const[]){ "--max-memory", "16M",
						  "--idle-timeout", "3", NULL },
			   tcp, sizeof(tcp));
	rss0 = status_kb(server, "VmRSS:");
	for (int i = 0; i < 6; i++)
		fds[i] = hoarder(tcp, "big", (uint64_t)1 << 30);
	grew = rss_growth(rss0, 1000);
	ck_assert_msg(grew < RSS_ALLOW((16 + 24) * 1024),
		      "the server grew by %ld MiB with --max-memory 16M",
		      grew / 1024);
	RUN(&r, "-b", "1M", "-t", "1", "--max-objects", "4", "1", "write",
	    "--target", tcp);
	expect_status(&r, 1);
	ck_assert_msg(strstr(r.err, "No buffer space"), "%s", r.err);
	res_free(&r);

	/* they take nothing: the idle timeout resets each */
	end = mono_ms() + 15000;
	do {
		open_n = 0;
		for (int i = 0; i < 6; i++)
			open_n += !reset_by_peer(fds[i]);
		if (open_n)
			usleep(100000);
	} while (open_n && mono_ms() < end);
	ck_assert_msg(open_n == 0, "%d of 6 still connected", open_n);
	RUN(&r, "-b", "1M", "-t", "1", "--max-objects", "4", "1", "write",
	    "--target", tcp);
	expect_status(&r, 0);
	res_free(&r);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	stop_server();
}
END_TEST

/*
 * 40 clients each send a preamble claiming the largest WRITE the server
 * takes (1 GiB + 1 MiB) and 8 KiB of it: the server's address
 * space grows by far less than the 40 GiB claimed, and it still serves
 * another client in full.
 */
START_TEST(test_serve_does_not_reserve_what_preambles_claim)
{
	const uint32_t claim = (1u << 30) + (1u << 20);
	char t[PATH_MAX + 64], tcp[64];
	unsigned char pre[BL_MSGR_PREAMBLE + 8192];
	uint64_t seq = 1;
	uint32_t crc;
	long vm0, peak = 0;
	int64_t end;
	struct res r;
	int fds[40];

	memset(pre, 0, sizeof(pre));
	memcpy(pre, &(uint32_t){ BL_MSGR_MAGIC }, 4);
	memcpy(pre + 4, &(uint16_t){ T_WRITE_ }, 2);
	memcpy(pre + 8, &seq, 8);
	memcpy(pre + 16, &claim, 4);
	crc = bl_crc32c(BL_MSGR_CRC_SEED, pre, 20);
	memcpy(pre + 20, &crc, 4);
	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));
	vm0 = status_kb(server, "VmSize:");
	for (int i = 0; i < 40; i++) {
		fds[i] = connect_to(tcp);
		ck_assert_int_eq(send(fds[i], pre, sizeof(pre), MSG_NOSIGNAL),
				 (ssize_t)sizeof(pre));
	}
	end = mono_ms() + 2000;
	while (mono_ms() < end) {
		long v = status_kb(server, "VmSize:");

		if (v > peak)
			peak = v;
		usleep(20000);
	}
	ck_assert_msg(peak - vm0 < 1024 * 1024,
		      "the server's address space grew by %ld MiB for 40 GiB "
		      "claimed", (peak - vm0) / 1024);
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "20", "1", "write",
	    "--target", tcp);
	expect_status(&r, 0);
	res_free(&r);
	for (int i = 0; i < 40; i++)
		close(fds[i]);
	stop_server();
}
END_TEST


/*
 * A client sends 8 READs and shuts its sending side down before the disk
 * reads are done: it still reads every reply in full, then EOF.
 */
START_TEST(test_serve_answers_a_half_closed_client)
{
	const size_t len = (size_t)4 << 20;
	char t[PATH_MAX + 64], tcp[64];
	static unsigned char buf[1 << 16];
	size_t got = 0;
	ssize_t n;
	int fd;

	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));
	fd = connect_to(tcp);
	write_object(fd, len);
	read_requests(fd, 8, len);
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		got += (size_t)n;
	ck_assert_msg(n == 0, "recv: %s", strerror(errno));
	ck_assert_uint_eq(got, 8 * (BL_MSGR_OVERHEAD + 16 + len));
	close(fd);
	stop_server();
}
END_TEST


/*
 * `ulimit -n 64` and 100 clients: out of descriptors, the server neither
 * spins nor floods its log (at most a line a second), and once the
 * clients are gone it serves the next one in full.
 */
START_TEST(test_serve_out_of_descriptors_backs_off)
{
	char t[PATH_MAX + 64], tcp[64], errp[PATH_MAX + 64];
	int64_t t0, c0, cpu, wall;
	struct res r;
	int fds[100], lines;
	char *err;

	server_nofile = 64;
	start_server(spec(t, sizeof(t), "dir", scratch, "srv"), tcp, sizeof(tcp));
	server_nofile = 0;
	for (int i = 0; i < 100; i++)
		fds[i] = connect_to(tcp);
	usleep(200000);
	t0 = mono_ms();
	c0 = cpu_ms_of(server);
	usleep(2000000);
	cpu = cpu_ms_of(server) - c0;
	wall = mono_ms() - t0;
	ck_assert_msg(cpu <= wall / 4, "the server spent %lld ms of CPU in "
		      "%lld ms out of descriptors", (long long)cpu,
		      (long long)wall);
	err = slurp(fmt(errp, sizeof(errp), "%s/.srv.err", scratch));
	lines = count_str(err, "accept failed");
	ck_assert_msg(lines >= 1 && lines <= 4, "%d accept failures logged in "
		      "about 2 s", lines);
	free(err);
	for (int i = 0; i < 100; i++)
		close(fds[i]);
	RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "20", "1", "write",
	    "--target", tcp);
	expect_status(&r, 0);
	res_free(&r);
	stop_server();
}
END_TEST

/*
 * A write the server's disk refuses (past RLIMIT_FSIZE: EFBIG, nothing
 * written) must not leave the empty object file its open made.
 */
START_TEST(test_failed_server_write_leaves_no_empty_object)
{
	static const char name[] = "benchmark_data_test_1_object0";
	struct how how = { .fsize = 1 << 20 };
	char t[PATH_MAX + 64], d[PATH_MAX + 64], o[PATH_MAX + 64], tcp[64];
	unsigned char frame[8192], body[6144], c;
	struct bl_list l;
	size_t n, hlen;
	int fd;

	path_in(d, sizeof(d), scratch, "srvf");
	start_server_how(spec(t, sizeof(t), "dir", scratch, "srvf"), &how, tcp,
			 sizeof(tcp));
	/* WRITE: tag, flags, data_off, objno, off, span, name, pad, data */
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u64(&l, 1), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 0), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 1024), 0);
	ck_assert_int_eq(bl_encode_u64(&l, 0), 0);
	ck_assert_int_eq(bl_encode_u64(&l, 2 << 20), 0);	/* past the limit */
	ck_assert_int_eq(bl_encode_u64(&l, 4 << 20), 0);
	ck_assert_int_eq(bl_encode_bytes(&l, name, strlen(name)), 0);
	hlen = bl_list_length(&l);
	ck_assert_int_eq(bl_list_append_zero(&l, 1024 - hlen + 4096), 0);
	n = bl_list_length(&l);
	ck_assert_uint_le(n, sizeof(body));
	bl_list_copy_out(&l, 0, n, body);
	bl_list_clear(&l);
	n = make_frame(frame, sizeof(frame), 2, body, n);

	fd = connect_to(tcp);
	ck_assert_int_eq(send(fd, frame, n, MSG_NOSIGNAL), (ssize_t)n);
	/* the reply (an error) comes once the write is over */
	ck_assert_int_eq(recv(fd, &c, 1, 0), 1);
	close(fd);
	path_in(o, sizeof(o), d, name);
	ck_assert_msg(access(o, F_OK) != 0, "%s was left behind", name);
	stop_server();
}
END_TEST

/*
 * A server whose hello asks for a 2 GiB memory alignment: every op would
 * carry that much padding.  The client refuses it instead.
 */
START_TEST(test_hello_with_absurd_alignment_is_refused)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	struct timeval tv = { 10, 0 };
	struct pollfd pfd;
	unsigned char frame[512], body[256], req[512];
	char tcp[64], p[PATH_MAX + 64], *err;
	struct bl_list l;
	size_t n;
	int lfd, cfd, st;
	pid_t pid;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(lfd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
	fmt(tcp, sizeof(tcp), "tcp:127.0.0.1:%d", ntohs(a.sin_port));
	pid = SPAWN("cl", "-b", "64K", "1", "write", "--target", tcp);

	pfd.fd = lfd;
	pfd.events = POLLIN;
	ck_assert_int_eq(poll(&pfd, 1, 20000), 1);
	cfd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(cfd, 0);
	setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ck_assert_int_gt(recv(cfd, req, sizeof(req), 0), 0);	/* its HELLO */
	/* the reply to its first request (slot 0, generation 1) */
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u64(&l, 1ull << 32), 0);
	ck_assert_int_eq(bl_encode_u64(&l, 0), 0);
	ck_assert_int_eq(bl_encode_u64(&l, 1ull << 30), 0);	/* room */
	ck_assert_int_eq(bl_encode_u32(&l, 0), 0);		/* slots */
	ck_assert_int_eq(bl_encode_u32(&l, 1u << 31), 0);	/* mem_align */
	ck_assert_int_eq(bl_encode_u32(&l, 4096), 0);		/* off_align */
	ck_assert_int_eq(bl_encode_u64(&l, 1ull << 31), 0);	/* max payload */
	ck_assert_int_eq(bl_encode_bytes(&l, "dir:/x", 6), 0);
	n = bl_list_length(&l);
	bl_list_copy_out(&l, 0, n, body);
	bl_list_clear(&l);
	n = make_frame(frame, sizeof(frame), 100, body, n);
	ck_assert_int_eq(send(cfd, frame, n, MSG_NOSIGNAL), (ssize_t)n);

	st = wait_exit(pid, 20);
	err = slurp(fmt(p, sizeof(p), "%s/.cl.err", scratch));
	ck_assert_msg(st == 1 && strstr(err, "its hello"),
		      "status %d (-1: still running):\n%s", st, err);
	free(err);
	close(cfd);
	close(lfd);
}
END_TEST

/*
 * A raw target's metadata block that places the run's objects past the
 * end of the file (a file served smaller than it was written, or forged):
 * the server refuses the run (META_GET fails), and a WRITE whose slot
 * would wrap around 2^64 to offset 0 (objno 2^44 - 64 of 1 MiB objects
 * after 64 MiB) is refused, the metadata block left as it was.
 */
START_TEST(test_serve_refuses_a_raw_run_whose_objects_start_past_the_end)
{
	unsigned char blk[4096], got[4096];
	char f[PATH_MAX + 64], t[PATH_MAX + 64], tcp[64];
	struct bl_list body, out;
	uint64_t tag;
	int fd, sfd;

	memset(blk, 0, sizeof(blk));
	memcpy(blk, "BLBRAW02", 8);
	blk[8] = 3;				/* name length */
	blk[12] = 4;				/* metadata length */
	blk[16 + 3] = 0x04;			/* objects at 64 MiB (LE) */
	memcpy(blk + 24, "run" "meta", 7);
	{
		uint32_t crc = bl_crc32c(0xFFFFFFFF, blk, 4092);

		memcpy(blk + 4092, &crc, 4);
	}
	path_in(f, sizeof(f), scratch, "raw");
	fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	ck_assert_int_eq(ftruncate(fd, 2 << 20), 0);
	close(fd);
	start_server(fmt(t, sizeof(t), "file:%s", f), tcp, sizeof(tcp));
	sfd = connect_to(tcp);

	bl_list_init(&body);
	bl_list_init(&out);
	ck_assert_int_eq(bl_encode_bytes(&body, "run", 3), 0);
	request(&out, 6, 1, &body);		/* META_GET */
	send_list(sfd, &out);
	bl_list_clear(&out);
	ck_assert_int_lt(read_reply(sfd, &tag), 0);
	ck_assert_uint_eq(tag, 1);

	ck_assert_int_eq(bl_encode_u32(&body, 4096), 0);	/* data_off */
	ck_assert_int_eq(bl_encode_u64(&body, (1ull << 44) - 64), 0);
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);		/* off */
	ck_assert_int_eq(bl_encode_u64(&body, 1 << 20), 0);	/* span */
	ck_assert_int_eq(bl_encode_bytes(&body, "run", 3), 0);
	ck_assert_int_eq(bl_list_append_zero(&body, 4096 - 47), 0);
	ck_assert_int_eq(bl_list_append_zero(&body, 4096), 0);
	request(&out, T_WRITE_, 2, &body);
	send_list(sfd, &out);
	bl_list_clear(&out);
	ck_assert_int_lt(read_reply(sfd, &tag), 0);
	ck_assert_uint_eq(tag, 2);
	bl_list_clear(&body);
	close(sfd);
	stop_server();

	fd = open(f, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, got, sizeof(got), 0), (ssize_t)sizeof(got));
	close(fd);
	ck_assert_msg(!memcmp(got, blk, sizeof(blk)),
		      "the metadata block was overwritten");
}
END_TEST

/* A listening socket on loopback, its "tcp:127.0.0.1:PORT" into @tcp. */
static int fake_listen(char *tcp, size_t len)
{
	struct sockaddr_in a;
	socklen_t al = sizeof(a);
	int lfd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(lfd, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&a, &al), 0);
	fmt(tcp, len, "tcp:127.0.0.1:%d", ntohs(a.sin_port));
	return lfd;
}

/* A reply frame: @tag, @res, then @body (may be NULL). */
static void send_reply(int fd, uint64_t tag, int64_t res, struct bl_list *body)
{
	struct bl_list p, out;

	bl_list_init(&p);
	bl_list_init(&out);
	ck_assert_int_eq(bl_encode_u64(&p, tag), 0);
	ck_assert_int_eq(bl_encode_u64(&p, (uint64_t)res), 0);
	if (body)
		ck_assert_int_eq(bl_list_claim_append(&p, body), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 100, tag, &p, 0), 0);
	send_list(fd, &out);
	bl_list_clear(&p);
	bl_list_clear(&out);
}

/*
 * A server that answers a blbench client's HELLO as a directory would,
 * every other request with 0, and its first WRITE with @bad: until the
 * client hangs up (or 20 s pass).
 */
static void fake_server_answering(int lfd, int64_t bad)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	int64_t end = mono_ms() + 20000;
	bool bad_sent = false;
	struct bl_list in;
	int cfd;

	ck_assert_int_eq(poll(&pfd, 1, 20000), 1);
	cfd = accept(lfd, NULL, NULL);
	ck_assert_int_ge(cfd, 0);
	bl_list_init(&in);
	while (mono_ms() < end) {
		struct bl_msgr_frame f;
		unsigned char buf[65536];
		uint64_t tag;
		ssize_t n;
		int r;

		bl_msgr_frame_init(&f);
		r = bl_msgr_parse(&in, &f, (size_t)2 << 30);
		ck_assert_int_ge(r, 0);
		if (r == 0) {
			pfd.fd = cfd;
			if (poll(&pfd, 1, 1000) <= 0)
				continue;
			n = recv(cfd, buf, sizeof(buf), 0);
			if (n <= 0)
				break;
			ck_assert_int_eq(bl_list_append(&in, buf, (size_t)n), 0);
			continue;
		}
		ck_assert_int_eq(bl_list_copy_out(&f.payload, 0, 8, &tag), 0);
		if (f.type == 1) {	/* HELLO: a directory of 1 GiB */
			struct bl_list h;

			bl_list_init(&h);
			ck_assert_int_eq(bl_encode_u64(&h, 1ull << 30), 0);
			ck_assert_int_eq(bl_encode_u32(&h, 0), 0);
			ck_assert_int_eq(bl_encode_u32(&h, 4096), 0);
			ck_assert_int_eq(bl_encode_u32(&h, 1), 0);
			ck_assert_int_eq(bl_encode_u64(&h, 1ull << 30), 0);
			ck_assert_int_eq(bl_encode_bytes(&h, "dir:/x", 6), 0);
			ck_assert_int_eq(bl_encode_u32(&h, 4096), 0);
			send_reply(cfd, tag, 0, &h);
			bl_list_clear(&h);
		} else if (f.type == T_WRITE_ && !bad_sent) {
			send_reply(cfd, tag, bad, NULL);
			bad_sent = true;
		} else {
			send_reply(cfd, tag, f.type == T_WRITE_ ?
				   (int64_t)bl_list_length(&f.payload) : 0,
				   NULL);
		}
		bl_msgr_frame_release(&f);
	}
	ck_assert_msg(bad_sent, "the client sent no WRITE");
	bl_list_clear(&in);
	close(cfd);
}

/*
 * The server's result is 64 bits; a WRITE's can only be -errno or the
 * bytes written.  Results a 32-bit int would read as 0 (-(1 << 32)) or
 * that have no negation (INT64_MIN), or that exceed the request, are a
 * protocol error that fails the run: never "Success", never exit 0.
 */
START_TEST(test_tcp_result_outside_the_request_is_a_protocol_error)
{
	const int64_t bad[] = { -(INT64_C(1) << 32), INT64_MIN,
				INT64_C(1) << 40, -100000 };

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char tcp[64], p[PATH_MAX + 64], *err;
		int lfd = fake_listen(tcp, sizeof(tcp)), st;
		pid_t pid = SPAWN("cl", "-b", "64K", "-t", "1", "1", "write",
				  "--target", tcp);

		fake_server_answering(lfd, bad[i]);
		st = wait_exit(pid, 20);
		err = slurp(fmt(p, sizeof(p), "%s/.cl.err", scratch));
		ck_assert_msg(st == 1 && !strstr(err, "Success") &&
			      strstr(err, "out of range"),
			      "result %lld: status %d (-1: still running):\n%s",
			      (long long)bad[i], st, err);
		free(err);
		close(lfd);
	}
}
END_TEST

START_TEST(test_tcp_target_that_is_not_there_gives_one_line_reason)
{
	struct res r;
	int fd, port;
	struct sockaddr_in a;
	socklen_t al = sizeof(a);

	/* a port that was free a moment ago */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &al), 0);
	port = ntohs(a.sin_port);
	close(fd);
	{
		char tcp[64];

		fmt(tcp, sizeof(tcp), "tcp:127.0.0.1:%d", port);
		RUN(&r, "1", "write", "--target", tcp);
	}
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "cannot connect"));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	res_free(&r);
}
END_TEST

/* RFC 6761: names under .invalid never resolve */
#define NO_HOST "blbench-test.invalid"

START_TEST(test_tcp_host_that_does_not_resolve_gives_the_resolvers_reason)
{
	struct addrinfo hints, *ai = NULL;
	char t[PATH_MAX + 64];
	const char *why;
	struct res r;
	int rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(NO_HOST, "6800", &hints, &ai);
	if (rc == 0)
		freeaddrinfo(ai);
	if (rc == 0 || rc == EAI_SYSTEM) {
		fprintf(stderr, "skipped: this resolver answers for %s\n", NO_HOST);
		return;
	}
	why = gai_strerror(rc);

	RUN(&r, "1", "write", "--target", "tcp:" NO_HOST ":6800");
	expect_status(&r, 1);
	ck_assert_ptr_nonnull(strstr(r.err, "tcp:" NO_HOST ":6800"));
	ck_assert_msg(strstr(r.err, why) != NULL, "no '%s' in:\n%s", why, r.err);
	ck_assert_ptr_null(strstr(r.err, strerror(EHOSTUNREACH)));
	ck_assert_ptr_eq(strchr(r.err, '\n'), r.err + strlen(r.err) - 1);
	res_free(&r);

	/* serve's --listen alike */
	RUN(&r, "serve", "--listen", NO_HOST ":0", "--target",
	    spec(t, sizeof(t), "dir", scratch, "s"));
	expect_status(&r, 1);
	ck_assert_msg(strstr(r.err, why) != NULL, "no '%s' in:\n%s", why, r.err);
	res_free(&r);
}
END_TEST

static Suite *blbench_suite(void)
{
	const TTest *options_tests[] = {
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
		test_rados_target_without_the_bridge_gives_one_line_and_status_2,
#endif
		NULL
	};
	const TTest *local_tests[] = {
		test_dir_write_seq_rand_cleanup_agree_with_metadata,
		test_raw_file_with_direct_write_seq_rand_cleanup,
		test_dir_with_direct_and_lz4_round_trips,
		test_default_target_is_found_by_a_later_process,
		test_raw_target_too_small_is_refused_and_a_full_one_stops,
		test_truncated_raw_file_is_said_to_be_shorter_than_its_run,
		test_a_timed_write_on_a_small_file_wraps_and_runs_the_whole_time,
		test_durability_options_write_and_read_back,
		test_raw_object_area_is_aligned_to_the_op_size_and_read_back,
		test_raw_file_takes_one_writer_at_a_time,
		test_raw_file_that_cannot_be_written_is_still_read,
		test_unwritable_directory_is_refused_before_the_header,
		test_cleanup_removes_a_run_whose_metadata_is_damaged,
		test_one_cleanup_removes_what_a_killed_run_left,
		test_metadata_naming_files_elsewhere_is_refused,
		test_object_size_beyond_16t_is_a_usage_error,
		test_raw_file_size_that_is_not_a_size_is_a_usage_error,
		NULL
	};
	const TTest *output_tests[] = {
		test_json_output_is_one_object_with_rados_keys,
		test_histogram_buckets_are_contiguous_and_narrow,
		test_histogram_percentiles_of_known_sets,
		test_runs_print_latency_percentiles_after_the_summary,
		test_plot_writes_an_svg_of_its_three_panels,
		NULL
	};
	const TTest *verify_tests[] = {
		test_flipped_body_byte_fails_seq_naming_the_object,
		test_flipped_header_byte_fails_seq,
		test_crc_catches_a_flip_even_without_verify,
		test_flip_in_lz4_data_fails_seq,
		NULL
	};
	const TTest *tcp_tests[] = {
		test_tcp_target_write_seq_rand_cleanup_through_serve,
		test_tcp_target_with_direct_on_the_server,
		test_tcp_reads_of_large_objects_take_no_fault_per_page,
		test_server_fed_malformed_frames_stays_up_for_others,
		test_serve_bounds_memory_for_replies_nobody_reads,
		test_serve_does_not_reserve_what_preambles_claim,
		test_serve_streams_large_reads_nobody_reads_in_bounded_memory,
		test_serve_memory_budget_refuses_work_and_idle_timeout_frees_it,
		test_serve_streamed_read_errors_answer_or_reset,
		test_serve_answers_a_half_closed_client,
		test_serve_out_of_descriptors_backs_off,
		test_tcp_target_that_is_not_there_gives_one_line_reason,
		test_tcp_host_that_does_not_resolve_gives_the_resolvers_reason,
		test_failed_server_write_leaves_no_empty_object,
		test_hello_with_absurd_alignment_is_refused,
		test_tcp_result_outside_the_request_is_a_protocol_error,
		test_serve_refuses_a_raw_run_whose_objects_start_past_the_end,
#ifndef __SANITIZE_THREAD__
		/*
		 * Under TSan, on a machine loaded by other jobs, the client
		 * once took over 40 s to exit after its 1 s timeout fired (it
		 * passes in seconds otherwise); until that is understood it
		 * runs in every other build.
		 */
		test_op_timeout_fails_a_run_whose_server_stalled,
#endif
#ifndef __SANITIZE_THREAD__
		/*
		 * ThreadSanitizer runs a signal's handler only at the thread's
		 * next call into a function it intercepts, and a client blocked
		 * in io_uring_enter() makes none: under TSan these two measure
		 * TSan. Every other build runs them.
		 */
		test_sigterm_stops_a_client_whose_server_stalled,
		test_second_sigint_stops_a_client_whose_server_stalled,
#endif
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("options", options_tests,
			 .timeout = 60, .setup = setup, .teardown = teardown),
		TU_GROUP("local", local_tests,
			 .timeout = 60, .setup = setup, .teardown = teardown),
		TU_GROUP("output", output_tests,
			 .timeout = 60, .setup = setup, .teardown = teardown),
		TU_GROUP("verify", verify_tests,
			 .timeout = 60, .setup = setup, .teardown = teardown),
		TU_GROUP("tcp", tcp_tests,
			 .timeout = 60, .setup = setup, .teardown = teardown),
		TU_GROUP_END
	};

	return tu_suite("blbench", groups);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	return tu_run(blbench_suite());
}
