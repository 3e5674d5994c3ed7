/* SPDX-License-Identifier: MIT */
/*
 * bench_uring.c - throughput of the io_uring layer.
 *
 *   bench_uring write FILE [-d] [-s SEG] [-t TOTAL] [-q DEPTH] [-b] [-F]
 *	Writes TOTAL bytes (default 1 GiB) to FILE (created, truncated) as
 *	4 MiB lists of SEG-byte segments (default 64 KiB: 64 segments; 4M:
 *	one), DEPTH lists in flight (default 16), like
 *	  fio --ioengine=io_uring --rw=write --bs=4M --iodepth=16 --size=1G
 *	-d opens FILE with O_DIRECT (the lists are prepared with
 *	bl_list_prepare_dio, which copies nothing: the raws are page
 *	aligned).  -b uses the blocking back end.  FILE is allocated with
 *	fallocate before the clock starts, as fio does by default
 *	(fallocate=native); -F skips that.  FILE is left in place.
 *	Prints: RESULT write_<buffered|direct>_<N>x<SEG> GB/s
 *
 *   bench_uring net SIZE SEND RECV [-t TOTAL] [-r RINGBUFS] [-S US]
 *	Loopback TCP: one thread sends messages of SIZE bytes (4 KiB: 4
 *	segments of 1 KiB; 64 KiB: 16 of 4 KiB; 1 MiB: 16 of 64 KiB), 16 in
 *	flight, through bl_uring_send; SEND is "copy" (SENDMSG), "zc" (zero
 *	copy as the library does it by default: SENDMSG_ZC, raws held until
 *	the notification, and by copy on a socket whose notifications say
 *	the kernel copied anyway) or "zcraw" (SENDMSG_ZC for every send).  Another
 *	thread receives: RECV is "ring" (multishot receive into a provided
 *	buffer ring of RINGBUFS (default 64) x 64 KiB raws, each chunk a
 *	slice that is dropped at once) or "read" (read(2) into one malloc'd 1 MiB buffer).
 *	TOTAL defaults to 2 GB.  -S sets both rings' spin window
 *	(bl_uring_params.spin_us; 0: never; default: the library's).
 *	Loopback copies the payload whatever the
 *	sender asks for, so zero copy cannot win here: "zcraw" measures
 *	what it costs, "zc" what the library's adaptation leaves of that.
 *	Prints: RESULT net_<SIZE>_<SEND>_<RECV> GB/s and
 *		RESULT net_<SIZE>_<SEND>_<RECV>_cpu s/GB (user+system CPU of
 *		the whole process per 10^9 bytes)
 *
 * GB is 10^9 bytes everywhere.  perf/run-uring.sh runs both workloads
 * interleaved with fio and prints medians.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bufferlist.h>
#include <bufferlist/uring.h>
#include "uring_int.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void die(const char *what, long rc)
{
	fprintf(stderr, "bench_uring: %s failed (%ld)\n", what, rc);
	exit(2);
}

static size_t parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);

	switch (*end) {
	case 'k': case 'K': v *= 1024; break;
	case 'm': case 'M': v *= 1024 * 1024; break;
	case 'g': case 'G': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (size_t)v;
}

static const char *size_name(size_t n, char *buf, size_t len)
{
	if (n >= (1u << 20) && !(n % (1u << 20)))
		snprintf(buf, len, "%zum", n >> 20);
	else if (n >= 1024 && !(n % 1024))
		snprintf(buf, len, "%zuk", n >> 10);
	else
		snprintf(buf, len, "%zu", n);
	return buf;
}

/* A list of @len bytes in segments of @seg, each a raw aligned to @align. */
static void make_list(struct bl_list *l, size_t len, size_t seg,
		      size_t align, unsigned salt)
{
	bl_list_init(l);
	for (size_t off = 0; off < len; off += seg) {
		size_t n = len - off < seg ? len - off : seg;
		struct bl_ptr p;

		p.raw = bl_raw_create_aligned(n, align);
		if (!p.raw)
			die("bl_raw_create_aligned", -ENOMEM);
		p.off = 0;
		p.len = n;
		for (size_t i = 0; i < n; i++)
			bl_ptr_data(&p)[i] = (char)(i * 131 + salt + off);
		if (bl_list_append_ptr_move(l, &p))
			die("append", -ENOMEM);
	}
}

/* ---- file writes ------------------------------------------------------- */

#define LIST_BYTES ((size_t)4 << 20)
#define MAX_DEPTH 64

struct writer {
	struct bl_uring *u;
	int fd;
	struct bl_list lists[MAX_DEPTH];
	uint64_t next_off, total;
	unsigned done, issued, nops;
	int err;
};

struct wslot {
	struct writer *w;
	unsigned idx;
};

static void write_one(struct wslot *s);

static void write_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct wslot *s = arg;
	struct writer *w = s->w;

	if (res != (ssize_t)LIST_BYTES && !w->err)
		w->err = res < 0 ? (int)res : -EIO;
	w->done++;
	if (w->issued < w->nops)
		write_one(s);
}

static void write_one(struct wslot *s)
{
	struct writer *w = s->w;
	int ret = bl_uring_write(w->u, w->fd, (off_t)w->next_off,
				 &w->lists[s->idx], write_cb, s);

	if (ret)
		die("bl_uring_write", ret);
	w->next_off += LIST_BYTES;
	w->issued++;
}

static int cmd_write(int argc, char **argv)
{
	struct bl_uring_params p;
	struct wslot slots[MAX_DEPTH];
	struct writer w;
	size_t seg = 64 * 1024, total = (size_t)1 << 30;
	unsigned depth = 16;
	bool direct = false, blk = false, prealloc = true;
	const char *file = NULL;
	uint64_t t0, t1;
	double c0, c1, gbs;
	char sname[32], name[96];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-d"))
			direct = true;
		else if (!strcmp(argv[i], "-b"))
			blk = true;
		else if (!strcmp(argv[i], "-F"))
			prealloc = false;
		else if (!strcmp(argv[i], "-s") && i + 1 < argc)
			seg = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "-t") && i + 1 < argc)
			total = parse_size(argv[++i]);
		else if (!strcmp(argv[i], "-q") && i + 1 < argc)
			depth = (unsigned)atoi(argv[++i]);
		else
			file = argv[i];
	}
	if (!file || !seg || seg > LIST_BYTES || !depth || depth > MAX_DEPTH) {
		fprintf(stderr, "usage: bench_uring write FILE [-d] [-b] [-F] "
				"[-s SEG] [-t TOTAL] [-q DEPTH]\n");
		return 1;
	}
	memset(&w, 0, sizeof(w));
	memset(&p, 0, sizeof(p));
	p.force_blocking = blk;
	w.u = bl_uring_create(&p);
	if (!w.u)
		die("bl_uring_create", -ENOMEM);
	w.fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0),
		    0644);
	if (w.fd < 0)
		die("open", -errno);
	w.nops = (unsigned)(total / LIST_BYTES);
	if (prealloc && fallocate(w.fd, 0, 0, (off_t)w.nops * LIST_BYTES) &&
	    errno != EOPNOTSUPP)
		die("fallocate", -errno);
	for (unsigned i = 0; i < depth; i++) {
		make_list(&w.lists[i], LIST_BYTES, seg, 4096, i);
		if (direct) {
			int r = bl_list_prepare_dio(&w.lists[i], w.fd);

			if (r < 0)
				die("bl_list_prepare_dio", r);
			if (r)
				fprintf(stderr, "note: prepare_dio copied\n");
		}
	}
	t0 = now_ns();
	c0 = cpu_seconds();
	for (unsigned i = 0; i < depth && i < w.nops; i++) {
		slots[i].w = &w;
		slots[i].idx = i;
		write_one(&slots[i]);
	}
	while (w.done < w.nops) {
		int r = bl_uring_run(w.u, 1, -1);

		if (r < 0)
			die("bl_uring_run", r);
	}
	t1 = now_ns();
	c1 = cpu_seconds();
	if (w.err)
		die("write", w.err);
	gbs = (double)w.nops * LIST_BYTES / (double)(t1 - t0);
	snprintf(name, sizeof(name), "write_%s_%ux%s%s",
		 direct ? "direct" : "buffered",
		 (unsigned)(LIST_BYTES / seg), size_name(seg, sname, sizeof(sname)),
		 blk ? "_blocking" : "");
	printf("RESULT %s %.3f GB/s\n", name, gbs);
	printf("RESULT %s_cpu %.3f s/GB\n", name,
	       (c1 - c0) / ((double)w.nops * LIST_BYTES / 1e9));
	for (unsigned i = 0; i < depth; i++)
		bl_list_clear(&w.lists[i]);
	close(w.fd);
	bl_uring_destroy(w.u);
	return 0;
}

/* ---- loopback TCP ------------------------------------------------------ */

#define NET_DEPTH 16
#define RING_BUF_SIZE (64 * 1024)
static unsigned ring_bufs = 64;
static unsigned spin_us;	/* bl_uring_params.spin_us of both rings */

struct sender {
	struct bl_uring *u;
	int fd;
	struct bl_list msg;
	uint64_t total, sent, queued;
	unsigned inflight;
	int err;
};

static void send_cb(void *arg, ssize_t res, struct bl_list *data)
{
	struct sender *s = arg;
	size_t len = bl_list_length(&s->msg);

	s->inflight--;
	if (res != (ssize_t)len) {
		s->err = res < 0 ? (int)res : -EIO;
		return;
	}
	s->sent += len;
	if (s->queued < s->total) {
		int ret = bl_uring_send(s->u, s->fd, &s->msg, 0, send_cb, s);

		if (ret)
			die("bl_uring_send", ret);
		s->queued += len;
		s->inflight++;
	}
}

struct receiver {
	int fd;
	bool ring;
	uint64_t total, got;
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	int err, rearms;
	bool eof;
	struct bl__uring_counters cnt;	/* the ring's, before it went */
};

static void recv_cb(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	struct receiver *r = arg;

	if (res > 0)
		r->got += (uint64_t)res;	/* the slice is dropped on return */
	else if (res == 0)
		r->eof = true;
	else if (res != -ENOBUFS && res != -ECANCELED)
		r->err = (int)res;	/* -ECANCELED: our own teardown */
	if (res == -ENOBUFS)
		r->rearms++;
	if (!more && !r->eof && !r->err && r->got < r->total) {
		int ret = bl_uring_recv_pooled(r->u, r->fd, r->br, true,
					       recv_cb, r);

		if (ret)
			die("bl_uring_recv_pooled", ret);
	}
}

static void *receiver_thread(void *arg)
{
	struct receiver *r = arg;

	if (r->ring) {
		struct bl_uring_params p;

		memset(&p, 0, sizeof(p));
		p.spin_us = spin_us;
		r->u = bl_uring_create(&p);
		if (!r->u || bl_uring_backend(r->u) != BL_URING_IO_URING)
			die("receiver ring", -ENOSYS);
		r->br = bl_uring_bufring_create(r->u, ring_bufs, RING_BUF_SIZE,
						1);
		if (!r->br)
			die("bl_uring_bufring_create", -ENOMEM);
		if (bl_uring_recv_pooled(r->u, r->fd, r->br, true, recv_cb, r))
			die("bl_uring_recv_pooled", -ENOMEM);
		while (r->got < r->total && !r->eof && !r->err)
			if (bl_uring_run(r->u, 1, -1) < 0)
				die("bl_uring_run", -EIO);
		bl__uring_counters(r->u, &r->cnt);
		bl_uring_bufring_destroy(r->br);
		bl_uring_destroy(r->u);
	} else {
		char *buf = malloc(1 << 20);

		while (r->got < r->total) {
			ssize_t n = read(r->fd, buf, 1 << 20);

			if (n <= 0) {
				r->err = n ? -errno : 0;
				break;
			}
			r->got += (uint64_t)n;
		}
		free(buf);
	}
	return NULL;
}

static void tcp_pair(int fds[2])
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(ls, 1) || getsockname(ls, (struct sockaddr *)&a, &alen))
		die("listen", -errno);
	fds[0] = socket(AF_INET, SOCK_STREAM, 0);
	if (fds[0] < 0 || connect(fds[0], (struct sockaddr *)&a, sizeof(a)))
		die("connect", -errno);
	fds[1] = accept(ls, NULL, NULL);
	if (fds[1] < 0)
		die("accept", -errno);
	setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(ls);
}

static void print_spins(const char *name, const char *side,
			const struct bl__uring_counters *c)
{
	printf("# %s: %s waits: %llu spun (%llu ended by a completion), "
	       "%llu slept at once (%llu backing off, %llu after nothing "
	       "new)\n", name, side,
	       (unsigned long long)c->spins, (unsigned long long)c->spin_hits,
	       (unsigned long long)(c->spin_skips + c->spin_idle),
	       (unsigned long long)c->spin_skips,
	       (unsigned long long)c->spin_idle);
}

static int cmd_net(int argc, char **argv)
{
	struct bl_uring_params p;
	struct receiver r;
	struct sender s;
	size_t size, seg;
	uint64_t total = 2000000000ull, t0, t1;
	double c0, c1, gb;
	pthread_t t;
	bool zc, zcraw, ring;
	char sname[32], name[96];
	int fds[2];

	if (argc < 3)
		goto usage;
	size = parse_size(argv[0]);
	zcraw = !strcmp(argv[1], "zcraw");
	zc = zcraw || !strcmp(argv[1], "zc");
	ring = !strcmp(argv[2], "ring");
	if ((!zc && strcmp(argv[1], "copy")) || (!ring && strcmp(argv[2], "read")))
		goto usage;
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-t"))
			total = parse_size(argv[i + 1]);
		else if (!strcmp(argv[i], "-r"))
			ring_bufs = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-S"))
			spin_us = atoi(argv[i + 1]) > 0 ?
				  (unsigned)atoi(argv[i + 1]) : UINT_MAX;
	}
	if (size < 1024)
		goto usage;
	/* multi-segment messages: 4 KiB as 4 x 1 KiB, bigger as 16 segments */
	seg = size <= 4096 ? 1024 : size / 16;
	total -= total % size;

	tcp_pair(fds);
	memset(&p, 0, sizeof(p));
	p.zc_threshold = zc ? 1 : SIZE_MAX;
	p.spin_us = spin_us;
	memset(&s, 0, sizeof(s));
	s.u = bl_uring_create(&p);
	if (!s.u || bl_uring_backend(s.u) != BL_URING_IO_URING)
		die("bl_uring_create", -ENOSYS);
	if (zcraw)
		bl__uring_zc_adapt(s.u, false);
	s.fd = fds[0];
	s.total = total;
	make_list(&s.msg, size, seg, 64, 7);
	memset(&r, 0, sizeof(r));
	r.fd = fds[1];
	r.ring = ring;
	r.total = total;

	c0 = cpu_seconds();
	t0 = now_ns();
	if (pthread_create(&t, NULL, receiver_thread, &r))
		die("pthread_create", -errno);
	for (unsigned i = 0; i < NET_DEPTH && s.queued < total; i++) {
		int ret = bl_uring_send(s.u, s.fd, &s.msg, 0, send_cb, &s);

		if (ret)
			die("bl_uring_send", ret);
		s.queued += size;
		s.inflight++;
	}
	while ((s.inflight || s.sent < total) && !s.err)
		if (bl_uring_run(s.u, 1, -1) < 0)
			die("bl_uring_run", -EIO);
	pthread_join(t, NULL);
	t1 = now_ns();
	c1 = cpu_seconds();
	if (s.err || r.err || r.got != total)
		die("transfer", s.err ? s.err : r.err ? r.err : -EIO);
	gb = (double)total / 1e9;
	snprintf(name, sizeof(name), "net_%s_%s_%s",
		 size_name(size, sname, sizeof(sname)), argv[1],
		 ring ? "ring" : "read");
	printf("RESULT %s %.3f GB/s\n", name, (double)total / (double)(t1 - t0));
	printf("RESULT %s_cpu %.3f s/GB\n", name, (c1 - c0) / gb);
	if (r.rearms)
		printf("# %s: the ring ran dry %d times (re-armed)\n", name,
		       r.rearms);
	{
		struct bl__uring_counters c;

		bl__uring_counters(s.u, &c);
		print_spins(name, "sender", &c);
		if (ring)
			print_spins(name, "receiver", &r.cnt);
		if (zc)
			printf("# %s: %llu zero-copy requests for %llu sends, "
			       "%llu reported copied by the kernel (loopback "
			       "copies anyway)\n", name,
			       (unsigned long long)c.zc,
			       (unsigned long long)(total / size),
			       (unsigned long long)c.zc_copied);
	}
	bl_list_clear(&s.msg);
	bl_uring_destroy(s.u);
	close(fds[0]);
	close(fds[1]);
	return 0;
usage:
	fprintf(stderr, "usage: bench_uring net SIZE copy|zc|zcraw ring|read "
			"[-t TOTAL] [-r RINGBUFS] [-S US]\n");
	return 1;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "write"))
		return cmd_write(argc - 2, argv + 2);
	if (argc >= 2 && !strcmp(argv[1], "net"))
		return cmd_net(argc - 2, argv + 2);
	fprintf(stderr,
		"usage: bench_uring write FILE [-d] [-b] [-F] [-s SEG] [-t TOTAL] [-q DEPTH]\n"
		"       bench_uring net SIZE copy|zc|zcraw ring|read [-t TOTAL] [-r RINGBUFS] [-S US]\n");
	return 1;
}
