/* SPDX-License-Identifier: MIT */
/*
 * test_blbench_serve.c - `blbench serve` against hostile clients: READ
 * replies never read (its memory stays bounded, large ones streamed),
 * errors of a streamed READ, a memory budget that refuses work and an
 * idle timeout that frees it, preambles claiming 1 GiB (its address space
 * stays small), a half-closed client (still answered), 100 clients under
 * ulimit -n 64 (no spinning, a log line a second at most); a failed
 * server write leaves no empty object; a hello asking for an absurd
 * alignment, or a raw run whose objects start past the end, is refused.
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

/* ---- hostile clients of blbench serve ------------------------------------ */

/* CPU time @pid used so far (user + system), in ms. */
static int64_t cpu_ms_of(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long ut, st;
	int fd;
	ssize_t n;

	tb_fmt(path, sizeof(path), "/proc/%d/stat", (int)pid);
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
	tb_request(&out, TB_WRITE, 1, &body);
	tb_send_list(fd, &out);
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
		tb_request(&out, T_READ_, 100 + (uint64_t)i, &body);
		bl_list_clear(&body);
	}
	tb_send_list(fd, &out);
	bl_list_clear(&out);
}

/*
 * Reads a little of what each of the @n clients @fds got, so that they
 * take bytes: an idle timeout spares them while the test looks.
 */
static void trickle(const int *fds, int n)
{
	char sink[4096];

	for (int i = 0; i < n; i++)
		(void)recv(fds[i], sink, sizeof(sink), MSG_DONTWAIT);
}

/*
 * The highest @key of the server's /proc status ("VmRSS:"), sampled for
 * @ms, less @base (KiB); the @n clients @keep (may be NULL) trickle
 * meanwhile.
 */
static long growth(const char *key, long base, int ms, const int *keep,
		   int n)
{
	int64_t end = tm_now_ms() + ms;
	long peak = 0;

	while (tm_now_ms() < end) {
		long v = tm_status_kb(tb_server, key);

		if (v > peak)
			peak = v;
		trickle(keep, n);
		usleep(20000);
	}
	return peak - base;
}

/* A write of 20 objects through the server at @tcp succeeds. */
static void another_client_is_served(const char *tcp)
{
	TB_RUN_OK("-b", "64K", "-t", "2", "--max-objects", "20", "1", "write",
		  "--target", tcp);
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
	char tcp[64];
	long rss0, grew;
	int64_t t0, c0;
	int fd;

	tb_serve_dir("srv", tcp, sizeof(tcp));
	fd = tb_connect_to(tcp);
	write_object(fd, len);
	rss0 = tm_status_kb(tb_server, "VmRSS:");
	read_requests(fd, 40, len);
	/* what the server takes: reading the page cache, one that did not
	 * stop would pass the bound in a fraction of this */
	grew = growth("VmRSS:", rss0, 1500, NULL, 0);
	ck_assert_msg(grew < 400 * 1024,
		      "the server grew by %ld MiB for replies nobody reads",
		      grew / 1024);
	t0 = tm_now_ms();
	c0 = cpu_ms_of(tb_server);
	usleep(500000);
	ck_assert_msg(cpu_ms_of(tb_server) - c0 <= (tm_now_ms() - t0) / 2,
		      "the server spent %lld ms of CPU in %lld ms waiting",
		      (long long)(cpu_ms_of(tb_server) - c0),
		      (long long)(tm_now_ms() - t0));
	/* others are served meanwhile */
	another_client_is_served(tcp);
	close(fd);
	tb_stop_server();
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
	tm_loopback(&a, (unsigned)atoi(strrchr(tcp, ':') + 1));
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	bl_list_init(&body);
	bl_list_init(&out);
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);		/* objno */
	ck_assert_int_eq(bl_encode_u64(&body, 0), 0);		/* off */
	ck_assert_int_eq(bl_encode_u64(&body, len), 0);	/* span */
	ck_assert_int_eq(bl_encode_u64(&body, len), 0);	/* len */
	ck_assert_int_eq(bl_encode_bytes(&body, name, strlen(name)), 0);
	tb_request(&out, T_READ_, 7, &body);
	tb_send_list(fd, &out);
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
	fd = open(tb_path_in(p, sizeof(p), dir, name), O_WRONLY | O_CREAT,
		  0644);
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
	char d[PATH_MAX + 64], tcp[64];
	long rss0, grew;
	int fds[5];

	tb_path_in(d, sizeof(d), tb_scratch, "srv");
	sparse_object(d, "big", (off_t)1 << 30);
	sparse_object(d, "mid", (off_t)256 << 20);
	tb_serve_dir("srv", tcp, sizeof(tcp));
	rss0 = tm_status_kb(tb_server, "VmRSS:");
	fds[0] = hoarder(tcp, "big", (uint64_t)1 << 30);
	for (int i = 1; i < 5; i++)
		fds[i] = hoarder(tcp, "mid", (uint64_t)256 << 20);
	grew = growth("VmRSS:", rss0, 1500, NULL, 0);
	ck_assert_msg(grew < RSS_ALLOW(64 * 1024),
		      "the server grew by %ld MiB for 1.25 GiB nobody reads",
		      grew / 1024);
	for (int i = 0; i < 5; i++)
		close(fds[i]);
	tb_stop_server();
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
	tb_request(&out, T_READ_, tag, &body);
	tb_send_list(fd, &out);
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
	char d[PATH_MAX + 64], tcp[64];
	const uint64_t ask = (uint64_t)16 << 20;
	unsigned char sink[65536];
	uint64_t tag;
	ssize_t n;
	int fd;

	tb_path_in(d, sizeof(d), tb_scratch, "srv");
	sparse_object(d, "small", (off_t)1 << 20);
	sparse_object(d, "five", (off_t)5 << 20);
	tb_serve_dir("srv", tcp, sizeof(tcp));
	fd = tb_connect_to(tcp);
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
	ck_assert_msg(n == 0 || errno == ECONNRESET, "recv: %s",
		      strerror(errno));
	close(fd);
	/* the others are served */
	fd = tb_connect_to(tcp);
	read_request(fd, 4, "small", 4096);
	ck_assert_int_eq(read_reply(fd, &tag), 4096);
	close(fd);
	tb_stop_server();
}
END_TEST

/*
 * One budget for the whole server: with --max-memory 16M, six clients
 * each asking for a 1 GiB READ they never read hold what the budget
 * allows and no more (the server's RSS stays within it and some slack);
 * meanwhile a WRITE, which would need more, is refused with ENOBUFS and
 * the client says so.  The six take a few bytes until then, so that
 * --idle-timeout 1 spares them however slowly the client starts; once
 * they take none it ends them (those whose READ waited for the budget a
 * second after the others), their memory is back, and the same write
 * succeeds.
 */
START_TEST(test_serve_memory_budget_refuses_work_and_idle_timeout_frees_it)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], tcp[64];
	long rss0, grew;
	int64_t end;
	int fds[6], open_n, st;
	char *err, p[PATH_MAX + 64];
	pid_t pid, w;

	tb_path_in(d, sizeof(d), tb_scratch, "srv");
	sparse_object(d, "big", (off_t)1 << 30);
	tb_spec(t, sizeof(t), "dir", tb_scratch, "srv");
	tb_start_server_extra(t, NULL, (const char *const[]){
				      "--max-memory", "16M",
				      "--idle-timeout", "1", NULL },
			      tcp, sizeof(tcp));
	rss0 = tm_status_kb(tb_server, "VmRSS:");
	for (int i = 0; i < 6; i++)
		fds[i] = hoarder(tcp, "big", (uint64_t)1 << 30);
	grew = growth("VmRSS:", rss0, 1000, fds, 6);
	ck_assert_msg(grew < RSS_ALLOW((16 + 24) * 1024),
		      "the server grew by %ld MiB with --max-memory 16M",
		      grew / 1024);
	pid = TB_SPAWN("w", "-b", "1M", "-t", "1", "--max-objects", "4", "1",
		       "write", "--target", tcp);
	end = tm_now_ms() + 60000;	/* a hang guard */
	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && tm_now_ms() < end) {
		trickle(fds, 6);
		usleep(20000);
	}
	ck_assert_msg(w == pid && WIFEXITED(st) && WEXITSTATUS(st) == 1,
		      "the write ended with %d (%d)", st, (int)w);
	err = tb_slurp(tb_fmt(p, sizeof(p), "%s/.w.err", tb_scratch));
	ck_assert_msg(strstr(err, "No buffer space"), "%s", err);
	free(err);

	/* they take nothing: the idle timeout resets each */
	end = tm_now_ms() + 15000;
	do {
		open_n = 0;
		for (int i = 0; i < 6; i++)
			open_n += !reset_by_peer(fds[i]);
		if (open_n)
			usleep(100000);
	} while (open_n && tm_now_ms() < end);
	ck_assert_msg(open_n == 0, "%d of 6 still connected", open_n);
	TB_RUN_OK("-b", "1M", "-t", "1", "--max-objects", "4", "1", "write",
	    "--target", tcp);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
	tb_stop_server();
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
	char tcp[64];
	unsigned char pre[BL_MSGR_PREAMBLE + 8192];
	uint64_t seq = 1;
	uint32_t crc;
	long vm0, grew;
	int fds[40];

	memset(pre, 0, sizeof(pre));
	memcpy(pre, &(uint32_t){ BL_MSGR_MAGIC }, 4);
	memcpy(pre + 4, &(uint16_t){ TB_WRITE }, 2);
	memcpy(pre + 8, &seq, 8);
	memcpy(pre + 16, &claim, 4);
	crc = bl_crc32c(BL_MSGR_CRC_SEED, pre, 20);
	memcpy(pre + 20, &crc, 4);
	tb_serve_dir("srv", tcp, sizeof(tcp));
	vm0 = tm_status_kb(tb_server, "VmSize:");
	for (int i = 0; i < 40; i++) {
		fds[i] = tb_connect_to(tcp);
		ck_assert_int_eq(send(fds[i], pre, sizeof(pre), MSG_NOSIGNAL),
				 (ssize_t)sizeof(pre));
	}
	/* a reservation would follow each preamble at once */
	grew = growth("VmSize:", vm0, 1000, NULL, 0);
	ck_assert_msg(grew < 1024 * 1024,
		      "the server's address space grew by %ld MiB for 40 GiB "
		      "claimed", grew / 1024);
	another_client_is_served(tcp);
	for (int i = 0; i < 40; i++)
		close(fds[i]);
	tb_stop_server();
}
END_TEST


/*
 * A client sends 8 READs and shuts its sending side down before the disk
 * reads are done: it still reads every reply in full, then EOF.
 */
START_TEST(test_serve_answers_a_half_closed_client)
{
	const size_t len = (size_t)4 << 20;
	char tcp[64];
	static unsigned char buf[1 << 16];
	size_t got = 0;
	ssize_t n;
	int fd;

	tb_serve_dir("srv", tcp, sizeof(tcp));
	fd = tb_connect_to(tcp);
	write_object(fd, len);
	read_requests(fd, 8, len);
	ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
	while ((n = recv(fd, buf, sizeof(buf), 0)) > 0)
		got += (size_t)n;
	ck_assert_msg(n == 0, "recv: %s", strerror(errno));
	ck_assert_uint_eq(got, 8 * (BL_MSGR_OVERHEAD + 16 + len));
	close(fd);
	tb_stop_server();
}
END_TEST


/*
 * `ulimit -n 64` and 100 clients: out of descriptors, the server neither
 * spins nor floods its log (at most a line a second), and once the
 * clients are gone it serves the next one in full.
 */
START_TEST(test_serve_out_of_descriptors_backs_off)
{
	char tcp[64], errp[PATH_MAX + 64];
	int64_t t0, c0, cpu, wall;
	int fds[100], lines;
	char *err;

	tb_server_nofile = 64;
	tb_serve_dir("srv", tcp, sizeof(tcp));
	tb_server_nofile = 0;
	for (int i = 0; i < 100; i++)
		fds[i] = tb_connect_to(tcp);
	usleep(200000);
	t0 = tm_now_ms();
	c0 = cpu_ms_of(tb_server);
	usleep(2000000);
	cpu = cpu_ms_of(tb_server) - c0;
	wall = tm_now_ms() - t0;
	ck_assert_msg(cpu <= wall / 4, "the server spent %lld ms of CPU in "
		      "%lld ms out of descriptors", (long long)cpu,
		      (long long)wall);
	err = tb_slurp(tb_fmt(errp, sizeof(errp), "%s/.srv.err", tb_scratch));
	lines = tb_count_str(err, "accept failed");
	ck_assert_msg(lines >= 1 && lines <= 4, "%d accept failures logged in "
		      "about 2 s", lines);
	free(err);
	for (int i = 0; i < 100; i++)
		close(fds[i]);
	another_client_is_served(tcp);
	tb_stop_server();
}
END_TEST

/*
 * A write the server's disk refuses (past RLIMIT_FSIZE: EFBIG, nothing
 * written) must not leave the empty object file its open made.
 */
START_TEST(test_failed_server_write_leaves_no_empty_object)
{
	static const char name[] = "benchmark_data_test_1_object0";
	struct tb_how how = { .fsize = 1 << 20 };
	char t[PATH_MAX + 64], d[PATH_MAX + 64], o[PATH_MAX + 64], tcp[64];
	unsigned char frame[8192], body[6144], c;
	struct bl_list l;
	size_t n, hlen;
	int fd;

	tb_path_in(d, sizeof(d), tb_scratch, "srvf");
	tb_start_server_how(tb_spec(t, sizeof(t), "dir", tb_scratch, "srvf"),
			    &how, tcp, sizeof(tcp));
	/* WRITE: tag, flags, data_off, objno, off, span, name, pad, data */
	bl_list_init(&l);
	ck_assert_int_eq(bl_encode_u64(&l, 1), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 0), 0);
	ck_assert_int_eq(bl_encode_u32(&l, 1024), 0);
	ck_assert_int_eq(bl_encode_u64(&l, 0), 0);
	ck_assert_int_eq(bl_encode_u64(&l, 2 << 20), 0); /* past the limit */
	ck_assert_int_eq(bl_encode_u64(&l, 4 << 20), 0);
	ck_assert_int_eq(bl_encode_bytes(&l, name, strlen(name)), 0);
	hlen = bl_list_length(&l);
	ck_assert_int_eq(bl_list_append_zero(&l, 1024 - hlen + 4096), 0);
	n = bl_list_length(&l);
	ck_assert_uint_le(n, sizeof(body));
	bl_list_copy_out(&l, 0, n, body);
	bl_list_clear(&l);
	n = tb_make_frame(frame, sizeof(frame), 2, body, n);

	fd = tb_connect_to(tcp);
	ck_assert_int_eq(send(fd, frame, n, MSG_NOSIGNAL), (ssize_t)n);
	/* the reply (an error) comes once the write is over */
	ck_assert_int_eq(recv(fd, &c, 1, 0), 1);
	close(fd);
	tb_path_in(o, sizeof(o), d, name);
	ck_assert_msg(access(o, F_OK) != 0, "%s was left behind", name);
	tb_stop_server();
}
END_TEST

/*
 * A server whose hello asks for a 2 GiB memory alignment: every op would
 * carry that much padding.  The client refuses it instead.
 */
START_TEST(test_hello_with_absurd_alignment_is_refused)
{
	struct sockaddr_in a;
	struct timeval tv = { 10, 0 };
	struct pollfd pfd;
	unsigned char frame[512], body[256], req[512];
	char tcp[64], p[PATH_MAX + 64], *err;
	struct bl_list l;
	size_t n;
	int lfd, cfd, st;
	pid_t pid;

	lfd = tm_listener(&a);
	tb_fmt(tcp, sizeof(tcp), "tcp:127.0.0.1:%d", ntohs(a.sin_port));
	pid = TB_SPAWN("cl", "-b", "64K", "1", "write", "--target", tcp);

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
	ck_assert_int_eq(bl_encode_u64(&l, 1ull << 31), 0); /* max payload */
	ck_assert_int_eq(bl_encode_bytes(&l, "dir:/x", 6), 0);
	n = bl_list_length(&l);
	bl_list_copy_out(&l, 0, n, body);
	bl_list_clear(&l);
	n = tb_make_frame(frame, sizeof(frame), 100, body, n);
	ck_assert_int_eq(send(cfd, frame, n, MSG_NOSIGNAL), (ssize_t)n);

	st = tb_wait_exit(pid, 20);
	err = tb_slurp(tb_fmt(p, sizeof(p), "%s/.cl.err", tb_scratch));
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
	tb_path_in(f, sizeof(f), tb_scratch, "raw");
	fd = open(f, O_RDWR | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, blk, sizeof(blk), 0), (ssize_t)sizeof(blk));
	ck_assert_int_eq(ftruncate(fd, 2 << 20), 0);
	close(fd);
	tb_start_server(tb_fmt(t, sizeof(t), "file:%s", f), tcp, sizeof(tcp));
	sfd = tb_connect_to(tcp);

	bl_list_init(&body);
	bl_list_init(&out);
	ck_assert_int_eq(bl_encode_bytes(&body, "run", 3), 0);
	tb_request(&out, 6, 1, &body);		/* META_GET */
	tb_send_list(sfd, &out);
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
	tb_request(&out, TB_WRITE, 2, &body);
	tb_send_list(sfd, &out);
	bl_list_clear(&out);
	ck_assert_int_lt(read_reply(sfd, &tag), 0);
	ck_assert_uint_eq(tag, 2);
	bl_list_clear(&body);
	close(sfd);
	tb_stop_server();

	fd = open(f, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, got, sizeof(got), 0), (ssize_t)sizeof(got));
	close(fd);
	ck_assert_msg(!memcmp(got, blk, sizeof(blk)),
		      "the metadata block was overwritten");
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		test_serve_bounds_memory_for_replies_nobody_reads,
		test_serve_streams_large_reads_nobody_reads_in_bounded_memory,
		test_serve_streamed_read_errors_answer_or_reset,
		test_serve_memory_budget_refuses_work_and_idle_timeout_frees_it,
		test_serve_does_not_reserve_what_preambles_claim,
		test_serve_answers_a_half_closed_client,
		test_serve_out_of_descriptors_backs_off,
		test_failed_server_write_leaves_no_empty_object,
		test_hello_with_absurd_alignment_is_refused,
		test_serve_refuses_a_raw_run_whose_objects_start_past_the_end,
		NULL
	};

	return tb_main("blbench_serve", "serve", tests);
}
