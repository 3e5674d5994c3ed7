/* SPDX-License-Identifier: MIT */
/*
 * tu_blbench.c - what the blbench suites (test_blbench_*.c) share: a
 * scratch directory per test, blbench run as a user runs it (fork and
 * exec of the built binary, its output read back), the summary's fields,
 * `blbench serve` started and stopped, and request frames for it.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <grp.h>
#include <unistd.h>
#include <bufferlist/msgr.h>
#include "testutil.h"

#ifndef BLBENCH_PATH
#define BLBENCH_PATH "./blbench"
#endif

char tb_scratch[PATH_MAX + 64];	/* one directory per test */
char tb_dio_dir[PATH_MAX + 64];	/* where O_DIRECT works ("" if nowhere) */
pid_t tb_server = -1;		/* a `blbench serve` of this test */
rlim_t tb_server_nofile;		/* its RLIMIT_NOFILE; 0: inherited */

/* ---- running blbench ----------------------------------------------------- */

char *tb_slurp(const char *path)
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

/* snprintf that fails the test instead of truncating */
const char *tb_fmt(char *buf, size_t len, const char *f, ...)
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

/*
 * Starts blbench with @args (NULL-terminated), its output into
 * scratch/.TAG.out and .TAG.err, run as @how says.  Returns the pid.
 */
pid_t tb_spawn(const char *tag, const struct tb_how *how,
		   const char *const *args)
{
	static const struct tb_how plain;
	char outp[PATH_MAX + 64], errp[PATH_MAX + 64];
	const char *argv[64];
	int n = 0;
	pid_t pid;

	tb_fmt(outp, sizeof(outp), "%s/.%s.out", tb_scratch, tag);
	tb_fmt(errp, sizeof(errp), "%s/.%s.err", tb_scratch, tag);
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
int tb_wait_exit(pid_t pid, int secs)
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
bool tb_wait_for_output(pid_t pid, const char *tag, const char *text,
			    int secs)
{
	char p[PATH_MAX + 64];

	tb_fmt(p, sizeof(p), "%s/.%s.out", tb_scratch, tag);
	for (int i = 0; i < secs * 100; i++) {
		char *out = tb_slurp(p);
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

void tb_run_how(struct tb_res *r, const struct tb_how *how,
		    const char *const *args)
{
	char p[PATH_MAX + 64];
	pid_t pid = tb_spawn("run", how, args);
	int st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	r->status = status_of(st);
	r->out = tb_slurp(tb_fmt(p, sizeof(p), "%s/.run.out", tb_scratch));
	r->err = tb_slurp(tb_fmt(p, sizeof(p), "%s/.run.err", tb_scratch));
}

void tb_run_as(struct tb_res *r, const char *env, bool nobody,
		   const char *const *args)
{
	struct tb_how how = { .env = env, .nobody = nobody };

	tb_run_how(r, &how, args);
}

/* Runs blbench with @args (NULL-terminated) and, if @env, "NAME=VALUE". */
void tb_run_env(struct tb_res *r, const char *env, const char *const *args)
{
	tb_run_as(r, env, false, args);
}

void tb_run_many(const struct tb_how *how, size_t n, const char *const *args,
		 size_t stride, struct tb_res *r)
{
	char tag[16], p[PATH_MAX + 64];
	pid_t *pids = calloc(n, sizeof(*pids));

	ck_assert_ptr_nonnull(pids);
	for (size_t i = 0; i < n; i++)
		pids[i] = tb_spawn(tb_fmt(tag, sizeof(tag), "m%zu", i), how,
				   args + i * stride);
	for (size_t i = 0; i < n; i++) {
		tb_fmt(tag, sizeof(tag), "m%zu", i);
		r[i].status = tb_wait_exit(pids[i], 60);
		r[i].out = tb_slurp(tb_fmt(p, sizeof(p), "%s/.%s.out",
					   tb_scratch, tag));
		r[i].err = tb_slurp(tb_fmt(p, sizeof(p), "%s/.%s.err",
					   tb_scratch, tag));
	}
	free(pids);
}

void tb_run_ok(bool nobody, const char *const *args)
{
	struct tb_res r;

	tb_run_as(&r, NULL, nobody, args);
	tb_expect_status(&r, 0);
	tb_res_free(&r);
}

void tb_res_free(struct tb_res *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
}

void tb_expect_status(const struct tb_res *r, int want)
{
	ck_assert_msg(
		r->status == want,
		"exit status %d, wanted %d\n--- stdout:\n%s--- stderr:\n%s",
		r->status, want, r->out, r->err);
}

/* The number after @label in @text (the summary's "Label:  value"). */
double tb_field(const char *text, const char *label)
{
	const char *p = strstr(text, label);

	ck_assert_msg(p != NULL, "no '%s' in:\n%s", label, text);
	return strtod(p + strlen(label), NULL);
}

/* "Object prefix: X" of a write. */
void tb_prefix_of(const char *out, char *buf, size_t len)
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
size_t tb_blk_of(const char *path)
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

/* The "stored bytes" field of the op header at @off of @path. */
uint32_t tb_stored_after_header(const char *path, off_t off)
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

const char *tb_path_in(char *buf, size_t len, const char *dir,
			   const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	ck_assert(n > 0 && (size_t)n < len);
	return buf;
}

const char *tb_spec(char *buf, size_t len, const char *kind,
			const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s:%s/%s", kind, dir, name);

	ck_assert(n > 0 && (size_t)n < len);
	return buf;
}

/* Objects in a directory target (files named benchmark_data*). */
int tb_count_objects(const char *dir)
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

/* rados bench's metadata: object size u64, ops i32, pid i32, op size u64. */
void tb_read_meta(const char *path, uint64_t *obj_size, uint32_t *num_ops,
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

/* Each of the @n @labels stands in @out, in this order. */
static void labels_in_order(const char *out, const char *const *labels,
			    size_t n)
{
	const char *p = out;

	for (size_t i = 0; i < n; i++) {
		p = strstr(p, labels[i]);
		ck_assert_msg(p != NULL,
			      "label '%s' missing or out of order in:\n%s",
			      labels[i], out);
	}
}

/* Bandwidth @bw (MB/s) is @n ops of @op_size bytes in @t seconds. */
static void bandwidth_agrees(double bw, double n, uint64_t op_size,
			     double t)
{
	/* six significant digits each way: agree to about 1e-5, allow 1e-4 */
	ck_assert_msg(fabs(bw - n * (double)op_size / t / 1048576.0) <=
		      1e-4 * bw + 1e-3,
		      "bandwidth %g is not %g ops * %llu / %g s", bw, n,
		      (unsigned long long)op_size, t);
}

/* Checks the write summary against the run: labels, arithmetic. */
int tb_check_write_summary(const char *out, uint64_t op_size,
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
	double t, n, bw;

	ck_assert_ptr_nonnull(strstr(out,
		"  sec Cur ops   started  finished  avg MB/s  cur MB/s "
		"last lat(s)  avg lat(s)\n"));
	labels_in_order(out, labels, sizeof(labels) / sizeof(labels[0]));
	t = tb_field(out, "Total time run:");
	n = tb_field(out, "Total writes made:");
	bw = tb_field(out, "Bandwidth (MB/sec):");
	ck_assert(t > 0);
	ck_assert(n > 0);
	ck_assert_uint_eq((uint64_t)tb_field(out, "Write size:"), op_size);
	ck_assert_uint_eq((uint64_t)tb_field(out, "Object size:"), obj_size);
	bandwidth_agrees(bw, n, op_size, t);
	/* (int)(writes / time), from a time printed to six digits */
	ck_assert(fabs(tb_field(out, "Average IOPS:") - n / t) <=
		  1.0 + 1e-4 * n / t);
	ck_assert(tb_field(out, "Min latency(s):") <=
		  tb_field(out, "Average Latency(s):"));
	ck_assert(tb_field(out, "Average Latency(s):") <=
		  tb_field(out, "Max latency(s):"));
	return (int)n;
}

void tb_check_read_summary(const char *out, uint64_t op_size)
{
	static const char *const labels[] = {
		"Total time run:       ", "Total reads made:     ",
		"Read size:            ", "Object size:          ",
		"Bandwidth (MB/sec):   ", "Average IOPS:         ",
		"Stddev IOPS:          ", "Max IOPS:             ",
		"Min IOPS:             ", "Average Latency(s):   ",
		"Max latency(s):       ", "Min latency(s):       ",
	};
	double t, n, bw;

	labels_in_order(out, labels, sizeof(labels) / sizeof(labels[0]));
	t = tb_field(out, "Total time run:");
	n = tb_field(out, "Total reads made:");
	bw = tb_field(out, "Bandwidth (MB/sec):");
	ck_assert(n > 0);
	ck_assert_uint_eq((uint64_t)tb_field(out, "Read size:"), op_size);
	bandwidth_agrees(bw, n, op_size, t);
}

/* ---- fixtures ------------------------------------------------------------ */

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

void tb_setup(void)
{
	char cwd[PATH_MAX];

	/* the build directory: a real file system, unlike a tmpfs /tmp */
	ck_assert_ptr_nonnull(getcwd(cwd, sizeof(cwd)));
	tb_fmt(tb_scratch, sizeof(tb_scratch), "%s/blbench-test.XXXXXX", cwd);
	ck_assert_ptr_nonnull(mkdtemp(tb_scratch));
	tb_dio_dir[0] = 0;
	if (takes_direct(tb_scratch)) {
		tb_fmt(tb_dio_dir, sizeof(tb_dio_dir), "%s", tb_scratch);
		return;
	}
	strcpy(tb_dio_dir, "/var/tmp/blbench-test.XXXXXX");
	if (!mkdtemp(tb_dio_dir)) {
		tb_dio_dir[0] = 0;
	} else if (!takes_direct(tb_dio_dir)) {
		rmdir(tb_dio_dir);
		tb_dio_dir[0] = 0;
	}
}

void tb_teardown(void)
{
	if (tb_server > 0) {	/* a test that failed half way */
		kill(tb_server, SIGKILL);
		waitpid(tb_server, NULL, 0);
		tb_server = -1;
	}
	nftw(tb_scratch, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	if (tb_dio_dir[0] && strcmp(tb_dio_dir, tb_scratch))
		nftw(tb_dio_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void tb_seq_reads(const char *target, const char *secs, int want)
{
	struct tb_res r;

	TB_RUN(&r, secs, "seq", "--target", target);
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total reads made:"), want);
	tb_res_free(&r);
}

void tb_seq_fails(const char *target, const char *why)
{
	struct tb_res r;

	TB_RUN(&r, "1", "seq", "--target", target);
	tb_expect_status(&r, 1);
	ck_assert_msg(strstr(r.err, why), "no '%s' in:\n%s", why, r.err);
	tb_res_free(&r);
}

void tb_flip_byte(const char *path, off_t off)
{
	unsigned char c;
	int fd = open(path, O_RDWR);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &c, 1, off), 1);
	c ^= 0x5a;
	ck_assert_int_eq(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

int tb_count_str(const char *hay, const char *needle)
{
	int n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* ---- the TCP target ------------------------------------------------------ */

/*
 * Starts `blbench serve` on an ephemeral port, run as @how says (may be
 * NULL); its "tcp:127.0.0.1:PORT".
 */
/* start_server_how() with @extra (NULL-terminated, or NULL) appended. */
void tb_start_server_extra(const char *target, const struct tb_how *how,
			       const char *const *extra, char *tcp, size_t len)
{
	const char *argv[16] = { "serve", "--listen", "127.0.0.1:0",
				 "--target", target };
	char outp[PATH_MAX + 64];
	const char *p;
	int n = 5;

	tb_fmt(outp, sizeof(outp), "%s/.srv.out", tb_scratch);
	if (tb_server_nofile) {
		static struct tb_how limited;

		limited = how ? *how : (struct tb_how){ 0 };
		limited.nofile = tb_server_nofile;
		how = &limited;
	}
	while (extra && *extra && n < 15)
		argv[n++] = *extra++;
	argv[n] = NULL;
	tb_server = tb_spawn("srv", how, argv);
	if (how && how->nofile) {
		/* again from here: under valgrind the child's own setrlimit()
		 * is only pretended, and the program it runs would not see
		 * it */
		struct rlimit rl;

		ck_assert_int_eq(prlimit(tb_server, RLIMIT_NOFILE, NULL, &rl),
				 0);
		rl.rlim_cur = how->nofile;
		ck_assert_int_eq(prlimit(tb_server, RLIMIT_NOFILE, &rl, NULL),
				 0);
	}
	/* it prints where it listens once it does; wait up to 10 s */
	for (int i = 0; i < 1000; i++) {
		char *out = tb_slurp(outp);

		p = strstr(out, "listening on 127.0.0.1:");
		if (p) {
			tb_fmt(tcp, len, "tcp:127.0.0.1:%d",
			    atoi(p + strlen("listening on 127.0.0.1:")));
			free(out);
			return;
		}
		free(out);
		ck_assert_msg(waitpid(tb_server, NULL, WNOHANG) == 0,
			      "blbench serve exited early");
		usleep(10000);
	}
	ck_abort_msg("blbench serve did not start listening");
}

void tb_start_server_how(const char *target, const struct tb_how *how,
			     char *tcp, size_t len)
{
	tb_start_server_extra(target, how, NULL, tcp, len);
}

void tb_start_server(const char *target, char *tcp, size_t len)
{
	tb_start_server_how(target, NULL, tcp, len);
}

int tb_main(const char *suite, const char *group, const TTest *const *tests)
{
	const struct tu_group groups[] = {
		TU_GROUP(group, tests, .timeout = 60, .setup = tb_setup,
			 .teardown = tb_teardown),
		TU_GROUP_END
	};

	/* a server that hangs up must fail a send, not end the suite */
	signal(SIGPIPE, SIG_IGN);
	return tu_run(tu_suite(suite, groups));
}

void tb_serve_dir(const char *name, char *tcp, size_t len)
{
	char t[PATH_MAX + 64];

	tb_start_server(tb_spec(t, sizeof(t), "dir", tb_scratch, name), tcp,
			len);
}

/* SIGTERM: the server finishes what it does and exits 0. */
void tb_stop_server(void)
{
	int st;

	ck_assert_int_eq(kill(tb_server, SIGTERM), 0);
	ck_assert_int_eq(waitpid(tb_server, &st, 0), tb_server);
	tb_server = -1;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "blbench serve ended with %d", st);
}

int tb_connect_to(const char *tcp)
{
	struct sockaddr_in a;
	struct timeval tv = { 10, 0 };
	int fd;

	tm_loopback(&a, (unsigned)atoi(strrchr(tcp, ':') + 1));
	fd = tm_dial(&a);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

/* A frame of @type with @body as payload, in the messenger's format. */
size_t tb_make_frame(unsigned char *buf, size_t cap, uint16_t type,
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
/* Sends all of @l's bytes on the blocking @fd. */
void tb_send_list(int fd, const struct bl_list *l)
{
	size_t n = bl_list_length(l);
	unsigned char *b = malloc(n);

	ck_assert_ptr_nonnull(b);
	bl_list_copy_out(l, 0, n, b);
	ck_assert_int_eq(send(fd, b, n, MSG_NOSIGNAL), (ssize_t)n);
	free(b);
}

/* A request frame of @type: @body after the tag and flags. */
void tb_request(struct bl_list *out, uint16_t type, uint64_t tag,
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

