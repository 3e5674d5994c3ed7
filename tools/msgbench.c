/* SPDX-License-Identifier: MIT */
/*
 * msgbench - the messenger (bufferlist/msgr.h) against a naive framed
 * protocol, in the same run, over loopback TCP; and frame parsing in memory.
 *
 *   msgbench [--size SIZE] [--conns N] [--seconds S] [--mode pingpong|stream]
 *            [--parse] [--impl ours|base|both] [--zc] [--align] [--blocking]
 *            [--direct-min SIZE] [--no-regpool] [--lz4] [--frames N] [-q]
 *
 * SIZE as blbench takes it (blb_parse_size of tools/blbench_util.c, linked
 * in): K, M, G.  Every option is checked; a bad one is a reason and the
 * usage on stderr, exit status 2.  A case whose row says "(errors!)"
 * makes the exit status 1.
 *
 * Without --size/--conns/--mode/--parse it runs the whole matrix: parse;
 * stream with 64-byte and 1 MiB payloads over 1 and 4 connections;
 * pingpong with 64-byte and 1 MiB payloads over 1 connection.  Each
 * network case runs "ours" then "base" back to back (perf/run-msgbench.sh
 * runs each in a process of its own, alternating the order).
 *
 *   --zc          zero-copy send at the library's threshold (default off)
 *   --align       the server receives payloads >= 16 KiB 4096-aligned
 *   --blocking    ours on the blocking back end
 *   --direct-min  payloads this big are read straight into a raw of their
 *                 own (0: never: one multishot receive through the ring)
 *   --no-regpool  no registered buffers for those reads
 *   --lz4         every payload compressed by its sender and decompressed
 *                 by its receiver (below)
 *
 * Both sides speak the same wire format (msgr.h: 24-byte preamble with its
 * own crc32c, payload, payload crc32c) and verify both crcs with the same
 * bl_crc32c(), so the difference is the buffer handling alone:
 *
 *  ours: bl_msgr_server on one bl_uring in the server thread (pooled
 *        receives into 64 KiB ring buffers, frames parsed in place,
 *        payloads handed over as shared slices; payloads of 128 KiB and
 *        more read straight into registered buffers of a bl_uring_regpool,
 *        four per connection, unless --no-regpool; --direct-min 0 keeps
 *        them in the ring too, with one multishot receive); the client
 *        thread drives its connections with bl_msgr_send() on its own
 *        bl_uring, one send in flight per connection and the frames
 *        queued meanwhile batched into the next sendmsg.  The payload is one raw shared by every
 *        frame (zero copy); its cached crc is invalidated before each
 *        send, so every frame pays for its crc as the baseline's do.
 *        Payloads under 512 bytes are copied into the frame's bytes
 *        (copy_below), payloads of 1 MiB are not.  Zero-copy send is off
 *        unless --zc: on loopback the kernel copies anyway and SEND_ZC is
 *        slower than a plain send; it pays off only on a real NIC.
 *  base: the server thread poll()s its sockets and read()s into a 64 KiB
 *        malloc'd buffer per connection (grown to hold a larger frame),
 *        then malloc()s and memcpy()s every payload out, as a typical
 *        framed protocol hands messages to its application; the client
 *        memcpy()s small frames into a 64 KiB output buffer and write()s
 *        it when full, and writev()s large frames (header, payload,
 *        trailer) without a copy.
 *
 * stream: the client sends for --seconds, keeping at most 4 MiB (and 4096
 * frames) per connection queued; the server counts frames between the
 * first and the last it receives.  pingpong: one frame in flight per
 * connection, echoed by the server (ours: the received slices are sent
 * back as they are); the client counts round trips.
 *
 * --lz4: the payload is text (words of a 32-word vocabulary picked by a
 * fixed LCG, a space between them, a newline after every 12th), not the
 * i * 131 + 7 bytes used otherwise, whose 256-byte period LZ4 would reduce
 * to almost nothing; the ratio is printed once per size.  Every frame's
 * payload is compressed afresh into one LZ4 frame (fast level, 64 KiB
 * linked blocks, no checksums: LZ4F's defaults on both sides) and sent as
 * frame type 2; the receiver decompresses it, with the payload size as
 * its limit, and checks the length (no side checks the content, with or
 * without --lz4); a pingpong server echoes the compressed payload, and the
 * client decompresses the echo.  msg/s and GB/s count uncompressed bytes.
 *  ours: bl_lz4_compress() of the payload list into a new list, whose
 *        raws the frame shares (no coalescing); bl_lz4_decompress() of
 *        the received slices into new raws.
 *  base: LZ4F_compressFrame() of the contiguous payload into a malloc'd
 *        buffer; LZ4F_decompress() of the copied-out payload, in one call,
 *        into a malloc'd buffer of the payload size.
 *
 * Threads: one server thread and one client thread (the main one); on a
 * two-core machine each side has a core and the kernel's loopback work
 * runs in whichever thread makes the system call.
 *
 * parse: --frames (100,000) frames with 16..64-byte payloads (the lengths
 * perf/bench_core's parse_frames_* uses), already in memory.  ours: the
 * frames lie in 64 KiB raws, as a receive would leave them (frames
 * straddle raw boundaries), and bl_msgr_parse() takes them off one by
 * one, each payload a shared slice, released after counting.  base: the
 * same bytes in one malloc'd buffer, each payload malloc'd, copied, freed.
 * Both check magic, both crcs and the length.  Reported: ns per frame,
 * median of 11 passes, for the two implementations measured here only;
 * perf/run-msgbench.sh runs perf/bench_ceph's parse_frames_list (Ceph's
 * bufferlist iterator over the same frames) in the same rounds where it
 * is built.
 *
 * Output: a plain table, and one line per measurement:
 *   RESULT msgbench <case> size=N conns=N impl=ours|base <value> <unit>
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <lz4frame.h>
#include <bufferlist.h>
#include <bufferlist/lz4.h>
#include <bufferlist/msgr.h>
#include <bufferlist/version.h>
#include "blbench_util.h"

#define MAXCONNS 64
#define WINDOW_BYTES ((size_t)4 << 20)
#define WINDOW_FRAMES 4096u
#define BASE_BUF ((size_t)64 << 10)
#define PARSE_PASSES 11
#define TYPE_PLAIN 1
#define TYPE_LZ4 2		/* the payload is one LZ4 frame */

enum mode { STREAM, PINGPONG };

struct cfg {
	size_t size;
	int conns;
	double seconds;
	enum mode mode;
	bool zc;
	bool align;		/* the server aligns large payloads */
	bool blocking;		/* ours on the blocking back end */
	size_t direct_min;	/* 0: the library's default */
	bool no_regpool;	/* no registered buffers for large reads */
	bool lz4;		/* payloads compressed on the wire */
	bool quiet;
	int impl;		/* 1 ours, 2 base, 3 both */
	unsigned frames;
};

/*
 * CPU time per message of each side's thread is printed beside the rates:
 * on a shared machine it moves less with other load than wall-clock
 * rates do.
 */
struct result {
	double msgs_s;
	double gb_s;
	double srv_cpu_ns;	/* server thread CPU per message */
	double cli_cpu_ns;	/* client thread CPU per message */
	uint64_t msgs;		/* messages the rates count */
	bool ok;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "msgbench: %s: %s\n", what, strerror(err));
	exit(1);
}

/* The payload's bytes (see --lz4 above for why text). */
static void fill_payload(unsigned char *p, size_t n, bool text)
{
	static const char *const words[32] = {
		"the", "of", "and", "to", "a", "in", "buffer", "list",
		"raw", "ptr", "frame", "payload", "message", "server",
		"client", "send", "receive", "connection", "length", "crc",
		"segment", "shared", "copy", "zero", "ring", "socket",
		"thread", "queue", "error", "bytes", "is", "not",
	};
	uint32_t st = 2463534242u;
	unsigned w = 0;
	size_t i = 0;

	if (!text) {
		for (i = 0; i < n; i++)
			p[i] = (unsigned char)(i * 131 + 7);
		return;
	}
	while (i < n) {
		const char *s;

		st = st * 1664525u + 1013904223u;
		for (s = words[(st >> 16) % 32u]; *s && i < n; s++)
			p[i++] = (unsigned char)*s;
		if (i < n)
			p[i++] = ++w % 12 ? ' ' : '\n';
	}
}

/* ---- the wire format, by hand (for the baseline) ------------------------- */

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void base_preamble(unsigned char *p, uint16_t type, uint64_t seq,
			  uint32_t len)
{
	put_le32(p, BL_MSGR_MAGIC);
	p[4] = (unsigned char)type;
	p[5] = (unsigned char)(type >> 8);
	p[6] = p[7] = 0;
	for (int i = 0; i < 8; i++)
		p[8 + i] = (unsigned char)(seq >> (8 * i));
	put_le32(p + 16, len);
	put_le32(p + 20, bl_crc32c(BL_MSGR_CRC_SEED, p, 20));
}

/*
 * Parses one frame at @p (@n bytes available).  Return: total frame bytes
 * and *@pay a new malloc'd copy of the payload (*@plen bytes), 0 when more
 * bytes are needed (*@need: the frame's size once the preamble is in), or
 * -1 when malformed.
 */
static long base_parse(const unsigned char *p, size_t n, unsigned char **pay,
		       uint32_t *plen, size_t *need)
{
	uint32_t len;
	size_t total;

	*need = BL_MSGR_PREAMBLE;
	if (n < BL_MSGR_PREAMBLE)
		return 0;
	if (get_le32(p) != BL_MSGR_MAGIC ||
	    bl_crc32c(BL_MSGR_CRC_SEED, p, 20) != get_le32(p + 20))
		return -1;
	len = get_le32(p + 16);
	if (len > BL_MSGR_DEFAULT_MAX_PAYLOAD)
		return -1;
	total = BL_MSGR_OVERHEAD + (size_t)len;
	*need = total;
	if (n < total)
		return 0;
	if (bl_crc32c(BL_MSGR_CRC_SEED, p + BL_MSGR_PREAMBLE, len) !=
	    get_le32(p + BL_MSGR_PREAMBLE + len))
		return -1;
	*pay = malloc(len ? len : 1);
	if (!*pay)
		die("malloc", ENOMEM);
	memcpy(*pay, p + BL_MSGR_PREAMBLE, len);
	*plen = len;
	return (long)total;
}

/* ---- parse in memory ----------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void result_line(const char *cas, size_t size, int conns,
			const char *impl, double v, const char *unit)
{
	printf("RESULT msgbench %s size=%zu conns=%d impl=%s %.4g %s\n", cas,
	       size, conns, impl, v, unit);
}

static void bench_parse(const struct cfg *cfg, double *ours_ns,
			double *base_ns)
{
	struct bl_list enc, master;
	uint32_t st = 12345u;
	unsigned char payload[64], *flat;
	size_t n, total_payload = 0;
	double t_ours[PARSE_PASSES], t_base[PARSE_PASSES];
	volatile uint64_t sink = 0;

	for (int i = 0; i < 64; i++)
		payload[i] = (unsigned char)(i * 131 + 7);
	bl_list_init(&enc);
	for (unsigned i = 0; i < cfg->frames; i++) {
		struct bl_list pay;
		uint32_t len;

		st = st * 1664525u + 1013904223u;
		len = 16u + (st >> 16) % 49u;
		bl_list_init(&pay);
		if (bl_list_append(&pay, payload, len) ||
		    bl_msgr_encode(&enc, 1, i, &pay, 0))
			die("encode", ENOMEM);
		bl_list_clear(&pay);
		total_payload += len;
	}
	n = bl_list_length(&enc);
	flat = malloc(n);
	if (!flat || bl_list_copy_out(&enc, 0, n, flat))
		die("copy", ENOMEM);
	bl_list_clear(&enc);

	/* as a receive leaves them: 64 KiB raws */
	bl_list_init(&master);
	for (size_t off = 0; off < n; off += (size_t)64 << 10) {
		size_t k = n - off < ((size_t)64 << 10) ? n - off
							: (size_t)64 << 10;
		struct bl_ptr p;

		if (bl_ptr_alloc(&p, k))
			die("alloc", ENOMEM);
		memcpy(bl_ptr_data(&p), flat + off, k);
		if (bl_list_append_ptr_move(&master, &p))
			die("alloc", ENOMEM);
	}

	for (int pass = 0; pass < PARSE_PASSES; pass++) {
		struct bl_list in;
		struct bl_msgr_frame f;
		uint64_t got = 0, frames = 0;
		double t0, t1;
		size_t off = 0;

		/* ours */
		bl_list_init(&in);
		if (bl_list_append_list(&in, &master))
			die("alloc", ENOMEM);
		t0 = now_s();
		while (bl_msgr_parse(&in, &f, 0) == 1) {
			got += bl_list_length(&f.payload);
			frames++;
			bl_msgr_frame_release(&f);
		}
		t1 = now_s();
		if (frames != cfg->frames || got != total_payload ||
		    bl_list_length(&in))
			die("parse (ours) lost frames", EBADMSG);
		t_ours[pass] = (t1 - t0) * 1e9 / cfg->frames;
		bl_list_clear(&in);

		/* base */
		got = frames = 0;
		t0 = now_s();
		for (;;) {
			unsigned char *p;
			uint32_t plen;
			size_t need;
			long r = base_parse(flat + off, n - off, &p, &plen,
					    &need);

			if (r <= 0)
				break;
			got += plen;
			frames++;
			sink += p[0];
			free(p);
			off += (size_t)r;
		}
		t1 = now_s();
		if (frames != cfg->frames || got != total_payload)
			die("parse (base) lost frames", EBADMSG);
		t_base[pass] = (t1 - t0) * 1e9 / cfg->frames;
	}
	(void)sink;
	*ours_ns = median(t_ours, PARSE_PASSES);
	*base_ns = median(t_base, PARSE_PASSES);
	bl_list_clear(&master);
	free(flat);
}

/* ---- network: common ----------------------------------------------------- */

struct srv_shared {
	int lfd;
	struct cfg cfg;
	_Atomic int ready;
	/* results, written by the server thread */
	uint64_t msgs, bytes;
	uint64_t msgs_timed, bytes_timed;	/* at t_last */
	uint64_t bytes_first;
	double t_first, t_last;
	uint64_t detached, ring_dry;
	int closed, bad;
	double cpu_s;
};

static int listen_loopback(struct sockaddr_in *sa)
{
	socklen_t sl = sizeof(*sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		die("socket", errno);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) ||
	    listen(fd, MAXCONNS) ||
	    getsockname(fd, (struct sockaddr *)sa, &sl))
		die("listen", errno);
	return fd;
}

static int dial(const struct sockaddr_in *sa)
{
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		die("connect", errno);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/*
 * Reading the clock costs about as much as handling a small message, so
 * it is read for the first message and then every 64th (and for every
 * large one): the last few messages of a run are not in the rate.
 */
static void srv_count(struct srv_shared *s, size_t len)
{
	if (!s->msgs || !(s->msgs & 63) || len >= 65536) {
		s->t_last = now_s();
		if (!s->msgs)
			s->t_first = s->t_last;
		s->msgs_timed = s->msgs + 1;
		s->bytes_timed = s->bytes + len;
		if (!s->msgs)
			s->bytes_first = len;
	}
	s->msgs++;
	s->bytes += len;
}

static struct bl_uring *make_uring(const struct cfg *cfg)
{
	struct bl_uring_params p;
	struct bl_uring *u;

	memset(&p, 0, sizeof(p));
	p.zc_threshold = cfg->zc ? 0 : SIZE_MAX;
	p.force_blocking = cfg->blocking;
	u = bl_uring_create(&p);
	if (!u)
		die("bl_uring_create", ENOMEM);
	if (!cfg->blocking && bl_uring_backend(u) != BL_URING_IO_URING)
		fprintf(stderr, "msgbench: note: io_uring unavailable (%s): "
			"ours runs on the blocking back end\n",
			bl_uring_backend_reason(u));
	return u;
}

/*
 * Payloads of 128 KiB and more (the messenger's direct_min) are read
 * straight into a raw of their own; a ring with registered buffers gives
 * those reads recycled, registered memory (READ_FIXED, the most recently
 * freed buffer first, so it is warm in the cache) instead of a fresh
 * allocation each time.  Four buffers per connection, each a payload and
 * a receive buffer long.  NULL when not wanted or not possible.
 */
static struct bl_uring_regpool *make_regpool(struct bl_uring *u,
					     const struct cfg *cfg)
{
	if (cfg->no_regpool || cfg->size < ((size_t)128 << 10))
		return NULL;
	return bl_uring_regpool_create(u, 4 * (unsigned)cfg->conns,
				       cfg->size + ((size_t)64 << 10));
}

/* ---- network: ours ------------------------------------------------------- */

/*
 * --lz4: decompresses a received payload (@f's, borrowed) into new raws,
 * no more than the payload size, and checks that it is all there.
 */
static bool ours_unlz4(const struct cfg *cfg, const struct bl_msgr_frame *f)
{
	struct bl_list out;
	ssize_t n;

	if (f->type != TYPE_LZ4)
		return false;
	bl_list_init(&out);
	/* max_out 0 would mean no limit */
	n = bl_lz4_decompress(&f->payload, &out, cfg->size ? cfg->size : 1);
	bl_list_clear(&out);
	return n == (ssize_t)cfg->size;
}

static void ours_srv_frame(void *arg, struct bl_msgr_conn *c,
			   struct bl_msgr_frame *f)
{
	struct srv_shared *s = arg;

	if (s->cfg.lz4) {
		if (!ours_unlz4(&s->cfg, f))
			s->bad++;
		srv_count(s, s->cfg.size);
	} else {
		srv_count(s, bl_list_length(&f->payload));
	}
	/* --lz4: the compressed payload goes back as it came */
	if (s->cfg.mode == PINGPONG &&
	    bl_msgr_send(c, f->type, &f->payload, NULL, NULL))
		s->bad++;
}

static void ours_srv_close(void *arg, struct bl_msgr_conn *c, int err,
			   const char *reason)
{
	struct srv_shared *s = arg;
	struct bl_msgr_conn_stats st;

	bl_msgr_conn_stats(c, &st);
	s->detached += st.detached;
	s->ring_dry += st.ring_dry;
	s->closed++;
	if (err) {
		fprintf(stderr, "msgbench: server connection: %s\n", reason);
		s->bad++;
	}
}

static void *ours_server(void *arg)
{
	struct srv_shared *s = arg;
	struct bl_uring *u = make_uring(&s->cfg);
	struct bl_msgr_conn_opts o;
	struct bl_msgr_server *srv;
	struct bl_uring_regpool *rp;

	memset(&o, 0, sizeof(o));
	o.on_frame = ours_srv_frame;
	o.on_close = ours_srv_close;
	o.arg = s;
	/*
	 * 4 MiB, 8 MiB past one connection: room for a 1 MiB frame being
	 * received on each connection with some to spare, small enough that
	 * the ring's buffers (the kernel uses them in FIFO order) stay warm
	 * in the cache.
	 */
	o.nbufs = s->cfg.conns > 1 ? 128 : 64;
	o.align_data = s->cfg.align;
	o.direct_min = s->cfg.direct_min;
	rp = make_regpool(u, &s->cfg);
	srv = bl_msgr_server_new(u, s->lfd, &o);
	if (!srv)
		die("bl_msgr_server_new", ENOMEM);
	atomic_store(&s->ready, 1);
	s->cpu_s = thread_cpu_s();
	while (s->closed < s->cfg.conns)
		if (bl_msgr_server_poll(srv, 100) < 0)
			die("bl_msgr_server_poll", EIO);
	s->cpu_s = thread_cpu_s() - s->cpu_s;
	bl_msgr_server_destroy(srv);
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
	return NULL;
}

struct cconn {
	struct bl_msgr_conn *c;
	unsigned outstanding;
	bool closed;
	uint64_t replies;
};

struct client {
	const struct cfg *cfg;
	struct bl_list payload;
	struct cconn cc[MAXCONNS];
	bool stop;
	uint64_t replies;
	int closed;
};

static void ours_sent(void *arg, int res)
{
	struct cconn *cc = arg;

	cc->outstanding--;
	if (res)
		fprintf(stderr, "msgbench: send: %s\n", strerror(-res));
}

static int ours_send(struct client *cl, struct cconn *cc)
{
	if (cl->cfg->lz4) {
		struct bl_list z;
		int err;

		/*
		 * Compressed afresh for every frame, as base does; the frame
		 * shares the new raws, and its crc is taken over them.
		 */
		bl_list_init(&z);
		if (bl_lz4_compress(&cl->payload, &z, NULL) < 0)
			die("bl_lz4_compress", ENOMEM);
		cc->outstanding++;
		err = bl_msgr_send(cc->c, TYPE_LZ4, &z, ours_sent, cc);
		bl_list_clear(&z);
		return err;
	}
	/*
	 * A new payload each time, as far as its crc is concerned.  (Small
	 * payloads are copied into the frame, and their crc taken over the
	 * copy: the cache plays no part.)
	 */
	if (cl->cfg->size >= 512)
		bl_list_invalidate_crc(&cl->payload);
	cc->outstanding++;
	return bl_msgr_send(cc->c, TYPE_PLAIN, &cl->payload, ours_sent, cc);
}

static void ours_cli_frame(void *arg, struct bl_msgr_conn *c,
			   struct bl_msgr_frame *f)
{
	struct client *cl = arg;
	struct cconn *cc = NULL;

	if (cl->cfg->lz4 && !ours_unlz4(cl->cfg, f))
		die("lz4 reply", EBADMSG);
	for (int i = 0; i < cl->cfg->conns; i++)
		if (cl->cc[i].c == c)
			cc = &cl->cc[i];
	cl->replies++;
	if (cc && !cl->stop && ours_send(cl, cc))
		die("bl_msgr_send", EIO);
}

static void ours_cli_close(void *arg, struct bl_msgr_conn *c, int err,
			   const char *reason)
{
	struct client *cl = arg;

	for (int i = 0; i < cl->cfg->conns; i++)
		if (cl->cc[i].c == c)
			cl->cc[i].closed = true;
	cl->closed++;
	if (err)
		fprintf(stderr, "msgbench: client connection: %s\n", reason);
}

static void ours_client(const struct cfg *cfg, const struct sockaddr_in *sa,
			struct result *r)
{
	struct bl_uring *u = make_uring(cfg);
	struct bl_msgr_conn_opts o;
	struct client cl;
	struct bl_ptr p;
	struct bl_uring_regpool *rp;
	unsigned maxq;
	double t0, t1, cpu;

	memset(&cl, 0, sizeof(cl));
	cl.cfg = cfg;
	bl_list_init(&cl.payload);
	if (cfg->size) {
		if (bl_ptr_alloc(&p, cfg->size))
			die("alloc", ENOMEM);
		fill_payload((unsigned char *)bl_ptr_data(&p), cfg->size,
			     cfg->lz4);
		if (bl_list_append_ptr_move(&cl.payload, &p))
			die("alloc", ENOMEM);
	}
	memset(&o, 0, sizeof(o));
	o.on_frame = ours_cli_frame;
	o.direct_min = cfg->direct_min;
	rp = make_regpool(u, cfg);
	o.on_close = ours_cli_close;
	o.arg = &cl;
	o.nbufs = 64;
	for (int i = 0; i < cfg->conns; i++) {
		cl.cc[i].c = bl_msgr_conn_new(u, dial(sa), &o);
		if (!cl.cc[i].c)
			die("bl_msgr_conn_new", ENOMEM);
	}
	maxq = (unsigned)(WINDOW_BYTES / (cfg->size + BL_MSGR_OVERHEAD));
	if (maxq > WINDOW_FRAMES)
		maxq = WINDOW_FRAMES;
	if (!maxq)
		maxq = 1;
	cpu = thread_cpu_s();
	t0 = now_s();
	if (cfg->mode == PINGPONG)
		for (int i = 0; i < cfg->conns; i++)
			if (ours_send(&cl, &cl.cc[i]))
				die("bl_msgr_send", EIO);
	for (;;) {
		t1 = now_s();
		if (t1 - t0 >= cfg->seconds)
			break;
		if (cfg->mode == STREAM)
			for (int i = 0; i < cfg->conns; i++)
				while (cl.cc[i].outstanding < maxq)
					if (ours_send(&cl, &cl.cc[i]))
						die("bl_msgr_send", EIO);
		if (bl_uring_run(u, 1, 100) < 0)
			die("bl_uring_run", EIO);
	}
	cl.stop = true;
	if (cfg->mode == PINGPONG) {
		r->msgs_s = (double)cl.replies / (t1 - t0);
		r->gb_s = r->msgs_s * (double)cfg->size * 2 / 1e9;
	}
	/* drain, then close */
	for (;;) {
		unsigned left = 0;

		for (int i = 0; i < cfg->conns; i++)
			left += cl.cc[i].outstanding;
		if (!left)
			break;
		if (bl_uring_run(u, 1, 100) < 0)
			die("bl_uring_run", EIO);
	}
	for (int i = 0; i < cfg->conns; i++)
		bl_msgr_conn_close(cl.cc[i].c, 0, NULL);
	while (cl.closed < cfg->conns)
		if (bl_uring_run(u, 1, 100) < 0)
			die("bl_uring_run", EIO);
	r->cli_cpu_ns = thread_cpu_s() - cpu;
	r->msgs = cl.replies;
	bl_list_clear(&cl.payload);
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
}

/* ---- network: baseline --------------------------------------------------- */

struct bconn {
	int fd;
	unsigned char *buf;
	size_t cap, len;
	bool open;
	LZ4F_dctx *dctx;	/* --lz4, else NULL */
	size_t plain;		/* --lz4: the uncompressed payload size */
};

static void bconn_init(struct bconn *c, int fd, const struct cfg *cfg)
{
	c->fd = fd;
	c->cap = BASE_BUF;
	c->len = 0;
	c->buf = malloc(BASE_BUF);
	if (!c->buf)
		die("malloc", ENOMEM);
	c->open = true;
	c->dctx = NULL;
	c->plain = cfg->size;
	if (cfg->lz4 &&
	    LZ4F_isError(LZ4F_createDecompressionContext(&c->dctx,
							 LZ4F_VERSION)))
		die("LZ4F_createDecompressionContext", ENOMEM);
}

static void bconn_fini(struct bconn *c)
{
	close(c->fd);
	free(c->buf);
	LZ4F_freeDecompressionContext(c->dctx);
	c->open = false;
}

/*
 * --lz4: decompresses a copied-out payload in one call into a buffer of
 * the payload size (which is also the limit) and checks the length.  The
 * output is contiguous and stays put for the call: stableDst.
 */
static void base_unlz4(struct bconn *c, const unsigned char *z, size_t zlen)
{
	LZ4F_decompressOptions_t o = { .stableDst = 1 };
	unsigned char *d = malloc(c->plain ? c->plain : 1);
	size_t dn = c->plain, sn = zlen, r;

	if (!d)
		die("malloc", ENOMEM);
	r = LZ4F_decompress(c->dctx, d, &dn, z, &sn, &o);
	if (LZ4F_isError(r) || r != 0 || sn != zlen || dn != c->plain)
		die("base: LZ4F_decompress", EBADMSG);
	free(d);
}

static void write_full(int fd, const struct iovec *v, int n)
{
	struct iovec iov[3];
	size_t left = 0;

	memcpy(iov, v, sizeof(*v) * (size_t)n);
	for (int i = 0; i < n; i++)
		left += iov[i].iov_len;
	while (left) {
		ssize_t w = writev(fd, iov, n);

		if (w <= 0)
			die("writev", errno);
		left -= (size_t)w;
		for (int i = 0; i < n; i++) {
			size_t k = (size_t)w < iov[i].iov_len ? (size_t)w
							      : iov[i].iov_len;

			iov[i].iov_base = (char *)iov[i].iov_base + k;
			iov[i].iov_len -= k;
			w -= (ssize_t)k;
		}
	}
}

/* Makes room for @need bytes of one frame at the start of c->buf. */
static void bconn_room(struct bconn *c, size_t need)
{
	if (need <= c->cap)
		return;
	c->buf = realloc(c->buf, need);
	if (!c->buf)
		die("realloc", ENOMEM);
	c->cap = need;
}

/*
 * Reads what is there and delivers every whole frame (payload copied
 * out).  @echo: write each payload back as a frame.  Return: false at EOF.
 */
static bool base_pump(struct bconn *c, struct srv_shared *s, bool echo,
		      uint64_t *got)
{
	ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
	size_t off = 0;

	if (n <= 0) {
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return true;
		return false;
	}
	c->len += (size_t)n;
	for (;;) {
		unsigned char *p;
		uint32_t plen;
		size_t need;
		long r = base_parse(c->buf + off, c->len - off, &p, &plen,
				    &need);

		if (r < 0)
			die("base: malformed frame", EBADMSG);
		if (r == 0) {
			/* keep the partial frame at the front */
			memmove(c->buf, c->buf + off, c->len - off);
			c->len -= off;
			bconn_room(c, need);
			return true;
		}
		off += (size_t)r;
		if (c->dctx)
			base_unlz4(c, p, plen);
		if (s)
			srv_count(s, c->dctx ? c->plain : plen);
		if (got)
			(*got)++;
		if (echo) {
			/* --lz4: the compressed payload goes back */
			unsigned char pre[BL_MSGR_PREAMBLE], tr[4];
			struct iovec iov[3] = {
				{ pre, sizeof(pre) }, { p, plen }, { tr, 4 }
			};
			base_preamble(pre, c->dctx ? TYPE_LZ4 : TYPE_PLAIN, 0,
				      plen);
			put_le32(tr, bl_crc32c(BL_MSGR_CRC_SEED, p, plen));
			write_full(c->fd, iov, 3);
		}
		free(p);
	}
}

static void *base_server(void *arg)
{
	struct srv_shared *s = arg;
	struct bconn c[MAXCONNS];
	struct pollfd pfd[MAXCONNS + 1];
	int n = 0;

	atomic_store(&s->ready, 1);
	s->cpu_s = thread_cpu_s();
	while (s->closed < s->cfg.conns) {
		int k = 0;

		pfd[k].fd = s->lfd;
		pfd[k++].events = POLLIN;
		for (int i = 0; i < n; i++) {
			pfd[k].fd = c[i].open ? c[i].fd : -1;
			pfd[k++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)k, 100) < 0 && errno != EINTR)
			die("poll", errno);
		if (pfd[0].revents & POLLIN) {
			int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
			int one = 1;

			if (fd >= 0 && n < MAXCONNS) {
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
					   sizeof(one));
				bconn_init(&c[n++], fd, &s->cfg);
			}
		}
		for (int i = 0; i < n; i++) {
			if (!c[i].open || !pfd[i + 1].revents)
				continue;
			if (!base_pump(&c[i], s, s->cfg.mode == PINGPONG,
				       NULL)) {
				bconn_fini(&c[i]);
				s->closed++;
			}
		}
	}
	s->cpu_s = thread_cpu_s() - s->cpu_s;
	return NULL;
}


static void base_client(const struct cfg *cfg, const struct sockaddr_in *sa,
			struct result *r)
{
	unsigned char *payload = malloc(cfg->size ? cfg->size : 1);
	unsigned char *out[MAXCONNS];
	size_t olen[MAXCONNS];
	struct bconn rc[MAXCONNS];
	/* the longest a frame's payload can be on the wire */
	size_t wmax = cfg->lz4 ? LZ4F_compressFrameBound(cfg->size, NULL)
			       : cfg->size;
	bool big = wmax + BL_MSGR_OVERHEAD > BASE_BUF / 2;
	uint64_t seq = 0, replies = 0;
	double t0, t1, cpu;

	fill_payload(payload, cfg->size, cfg->lz4);
	for (int i = 0; i < cfg->conns; i++) {
		bconn_init(&rc[i], dial(sa), cfg);
		out[i] = malloc(BASE_BUF);
		olen[i] = 0;
	}
	cpu = thread_cpu_s();
	t0 = now_s();
	for (;;) {
		t1 = now_s();
		if (t1 - t0 >= cfg->seconds)
			break;
		for (int i = 0; i < cfg->conns; i++) {
			unsigned char pre[BL_MSGR_PREAMBLE], tr[4];
			unsigned char *w = payload, *z = NULL;
			size_t wlen = cfg->size;

			if (cfg->lz4) {
				/* compressed afresh for every frame */
				z = malloc(wmax);
				if (!z)
					die("malloc", ENOMEM);
				wlen = LZ4F_compressFrame(z, wmax, payload,
							  cfg->size, NULL);
				if (LZ4F_isError(wlen))
					die("LZ4F_compressFrame", ENOMEM);
				w = z;
			}
			/* one frame: its crc is computed every time */
			base_preamble(pre, cfg->lz4 ? TYPE_LZ4 : TYPE_PLAIN,
				      ++seq, (uint32_t)wlen);
			put_le32(tr, bl_crc32c(BL_MSGR_CRC_SEED, w, wlen));
			if (big) {
				struct iovec v[3] = {
					{ pre, sizeof(pre) },
					{ w, wlen },
					{ tr, 4 },
				};

				write_full(rc[i].fd, v, 3);
			} else {
				unsigned char *o = out[i] + olen[i];

				memcpy(o, pre, sizeof(pre));
				memcpy(o + sizeof(pre), w, wlen);
				memcpy(o + sizeof(pre) + wlen, tr, 4);
				olen[i] += wlen + BL_MSGR_OVERHEAD;
				if (cfg->mode == PINGPONG ||
				    olen[i] + wmax + BL_MSGR_OVERHEAD >
					    BASE_BUF) {
					struct iovec v = { out[i], olen[i] };

					write_full(rc[i].fd, &v, 1);
					olen[i] = 0;
				}
			}
			free(z);
		}
		if (cfg->mode == PINGPONG) {
			for (int i = 0; i < cfg->conns; i++) {
				uint64_t got = 0;

				while (!got)
					if (!base_pump(&rc[i], NULL, false,
						       &got))
						die("base: server closed", EPIPE);
				replies += got;
			}
		}
	}
	for (int i = 0; i < cfg->conns; i++) {
		if (olen[i]) {
			struct iovec v = { out[i], olen[i] };

			write_full(rc[i].fd, &v, 1);
		}
		bconn_fini(&rc[i]);
		free(out[i]);
	}
	r->cli_cpu_ns = thread_cpu_s() - cpu;
	r->msgs = replies;
	if (cfg->mode == PINGPONG) {
		r->msgs_s = (double)replies / (t1 - t0);
		r->gb_s = r->msgs_s * (double)cfg->size * 2 / 1e9;
	}
	free(payload);
}

/* ---- one network case ---------------------------------------------------- */

static void run_net(const struct cfg *cfg, bool ours, struct result *r)
{
	struct srv_shared s;
	struct sockaddr_in sa;
	pthread_t th;

	memset(&s, 0, sizeof(s));
	memset(r, 0, sizeof(*r));
	s.cfg = *cfg;
	s.lfd = listen_loopback(&sa);
	if (pthread_create(&th, NULL, ours ? ours_server : base_server, &s))
		die("pthread_create", EAGAIN);
	while (!atomic_load(&s.ready))
		usleep(1000);
	if (ours)
		ours_client(cfg, &sa, r);
	else
		base_client(cfg, &sa, r);
	pthread_join(th, NULL);
	close(s.lfd);
	if (cfg->mode == STREAM && s.t_last > s.t_first) {
		r->msgs_s = (double)(s.msgs_timed - 1) / (s.t_last - s.t_first);
		r->gb_s = (double)(s.bytes_timed - s.bytes_first) /
			  (s.t_last - s.t_first) / 1e9;
	}
	/* the server saw every message the client sent (and echoed
	 * those of a pingpong) */
	if (s.msgs) {
		r->srv_cpu_ns = s.cpu_s * 1e9 / (double)s.msgs;
		r->cli_cpu_ns = r->cli_cpu_ns * 1e9 / (double)s.msgs;
	}
	r->ok = !s.bad;
	if (!cfg->quiet && ours && (s.detached || s.ring_dry))
		printf("# ours: server copied %llu bytes out of a dry ring "
		       "(%llu times dry)\n", (unsigned long long)s.detached,
		       (unsigned long long)s.ring_dry);
}

static const char *mode_name(enum mode m)
{
	return m == STREAM ? "stream" : "pingpong";
}

/* Runs one network case and prints its row.  false: a side saw errors. */
static bool net_case(const struct cfg *cfg, double *ratio)
{
	struct result ro, rb;
	const char *m = mode_name(cfg->mode);

	memset(&ro, 0, sizeof(ro));
	memset(&rb, 0, sizeof(rb));
	ro.ok = rb.ok = true;	/* a side not run has no errors */
	if (cfg->impl & 1)
		run_net(cfg, true, &ro);
	if (cfg->impl & 2)
		run_net(cfg, false, &rb);
	for (int k = 0; k < 2; k++) {
		const struct result *r = k ? &rb : &ro;
		const char *impl = k ? "base" : "ours";

		if (!(cfg->impl & (1 << k)))
			continue;
		result_line(m, cfg->size, cfg->conns, impl, r->msgs_s,
			    "msgs/s");
		result_line(m, cfg->size, cfg->conns, impl, r->gb_s, "GB/s");
		result_line(m, cfg->size, cfg->conns, impl, r->srv_cpu_ns,
			    "srv-cpu-ns/msg");
		result_line(m, cfg->size, cfg->conns, impl, r->cli_cpu_ns,
			    "cli-cpu-ns/msg");
	}
	if (!cfg->quiet)
		printf("%-9s %8zu %5d %12.0f %7.3f %9.0f %12.0f %7.3f %9.0f "
		       "%6.2fx%s\n", m, cfg->size, cfg->conns, ro.msgs_s,
		       ro.gb_s, ro.srv_cpu_ns, rb.msgs_s, rb.gb_s,
		       rb.srv_cpu_ns,
		       rb.msgs_s > 0 ? ro.msgs_s / rb.msgs_s : 0,
		       ro.ok && rb.ok ? "" : "  (errors!)");
	fflush(stdout);
	*ratio = rb.msgs_s > 0 ? ro.msgs_s / rb.msgs_s : 0;
	return ro.ok && rb.ok;
}

/* --lz4: what one payload of @size bytes compresses to, on each side. */
static void print_lz4_ratio(size_t size)
{
	unsigned char *flat = malloc(size ? size : 1);
	size_t bound = LZ4F_compressFrameBound(size, NULL), zb;
	unsigned char *zbuf = malloc(bound);
	struct bl_list in, z;
	ssize_t zo;

	if (!flat || !zbuf)
		die("malloc", ENOMEM);
	fill_payload(flat, size, true);
	bl_list_init(&in);
	bl_list_init(&z);
	if (bl_list_append(&in, flat, size))
		die("alloc", ENOMEM);
	zo = bl_lz4_compress(&in, &z, NULL);
	zb = LZ4F_compressFrame(zbuf, bound, flat, size, NULL);
	if (zo < 0 || LZ4F_isError(zb))
		die("lz4", EINVAL);
	printf("# lz4: %zu-byte payload -> %zd bytes (ratio %.2f); "
	       "base's LZ4F_compressFrame: %zu bytes\n", size, zo,
	       zo ? (double)size / (double)zo : 0, zb);
	bl_list_clear(&in);
	bl_list_clear(&z);
	free(zbuf);
	free(flat);
}

static const char usage_text[] =
	"usage: msgbench [--size SIZE] [--conns N] [--seconds S] [--mode stream|pingpong]\n"
	"                [--parse] [--impl ours|base|both] [--zc] [--align] [--blocking]\n"
	"                [--direct-min SIZE] [--no-regpool] [--lz4] [--frames N] [-q]\n"
	"\n"
	"Without --size, --conns, --mode or --parse: the whole matrix (parse; stream\n"
	"64 B and 1 MiB over 1 and 4 connections; pingpong 64 B and 1 MiB).\n"
	"  -s, --size SIZE        payload bytes per frame, 1 to 64M (64)\n"
	"  -c, --conns N          connections, 1 to 64 (1)\n"
	"  -t, --seconds S        seconds per network case, above 0, at most\n"
	"                         86400 (2)\n"
	"  -m, --mode MODE        stream or pingpong (stream)\n"
	"  -p, --parse            only the parse benchmark (not with --size,\n"
	"                         --conns or --mode)\n"
	"  -i, --impl IMPL        ours, base or both (both)\n"
	"  -z, --zc               ours: zero-copy send at the library's threshold\n"
	"  -a, --align            ours: the server aligns payloads >= 16 KiB\n"
	"  -b, --blocking         ours: the blocking back end\n"
	"  -d, --direct-min SIZE  ours: payloads this big are read into a raw of\n"
	"                         their own (0: never; default: the library's)\n"
	"  -R, --no-regpool       ours: no registered buffers for those reads\n"
	"  -L, --lz4              payloads lz4-compressed on the wire\n"
	"  -f, --frames N         frames for the parse benchmark, 1 to 10000000\n"
	"                         (100000)\n"
	"  -q, --quiet            only the RESULT lines\n"
	"  -h, --help             this text\n"
	"      --version          print the version and exit\n"
	"SIZE takes K, M or G (powers of 1024).  Exit status: 0, 1 when a case\n"
	"failed or saw errors, 2 for bad usage.\n";

static int usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

/* The reason (if any) and the usage on stderr; the usage exit status. */
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fputs("msgbench: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fputs(usage_text, stderr);
	return 2;
}

/* A whole decimal number from @min to @max, all of @s.  0 or -EINVAL. */
static int parse_count(const char *s, unsigned long long min,
		       unsigned long long max, unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

enum { OPT_VERSION = 256 };

/* Fills @cfg from the command line.  -1 to go on, or the exit status. */
static int parse_opts(struct cfg *cfg, bool *parse, bool *net,
		      bool *parse_only, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "size", required_argument, NULL, 's' },
		{ "conns", required_argument, NULL, 'c' },
		{ "seconds", required_argument, NULL, 't' },
		{ "mode", required_argument, NULL, 'm' },
		{ "parse", no_argument, NULL, 'p' },
		{ "impl", required_argument, NULL, 'i' },
		{ "zc", no_argument, NULL, 'z' },
		{ "align", no_argument, NULL, 'a' },
		{ "blocking", no_argument, NULL, 'b' },
		{ "direct-min", required_argument, NULL, 'd' },
		{ "no-regpool", no_argument, NULL, 'R' },
		{ "lz4", no_argument, NULL, 'L' },
		{ "frames", required_argument, NULL, 'f' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long n;
	uint64_t v;
	double d;
	char *end;
	int o;

	/* getopt's messages name argv[0]: libtool's .libs path, uninstalled */
	if (argc > 0)
		argv[0] = (char *)"msgbench";
	while ((o = getopt_long(argc, argv, "s:c:t:m:pi:zabd:RLf:qh", lo,
				NULL)) != -1) {
		switch (o) {
		case 's':
			if (blb_parse_size(optarg, &v) || v == 0 ||
			    v > BL_MSGR_DEFAULT_MAX_PAYLOAD)
				return usage_error("--size wants a payload size from 1 byte to 64M, not '%s'",
						   optarg);
			cfg->size = (size_t)v;
			*net = true;
			break;
		case 'c':
			if (parse_count(optarg, 1, MAXCONNS, &n))
				return usage_error("--conns wants a number of connections from 1 to %d, not '%s'",
						   MAXCONNS, optarg);
			cfg->conns = (int)n;
			*net = true;
			break;
		case 't':
			errno = 0;
			d = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(d > 0) ||
			    d > 86400)
				return usage_error("--seconds wants a number of seconds above 0, at most 86400, not '%s'",
						   optarg);
			cfg->seconds = d;
			break;
		case 'm':
			if (!strcmp(optarg, "stream"))
				cfg->mode = STREAM;
			else if (!strcmp(optarg, "pingpong"))
				cfg->mode = PINGPONG;
			else
				return usage_error("--mode wants stream or pingpong, not '%s'",
						   optarg);
			*net = true;
			break;
		case 'p':
			*parse = *parse_only = true;
			break;
		case 'i':
			cfg->impl = !strcmp(optarg, "ours") ? 1
				    : !strcmp(optarg, "base") ? 2
				    : !strcmp(optarg, "both") ? 3 : 0;
			if (!cfg->impl)
				return usage_error("--impl wants ours, base or both, not '%s'",
						   optarg);
			break;
		case 'z':
			cfg->zc = true;
			break;
		case 'a':
			cfg->align = true;
			break;
		case 'b':
			cfg->blocking = true;
			break;
		case 'R':
			cfg->no_regpool = true;
			break;
		case 'L':
			cfg->lz4 = true;
			break;
		case 'd':
			if (blb_parse_size(optarg, &v) || v > SIZE_MAX)
				return usage_error("--direct-min wants a size (0: never), not '%s'",
						   optarg);
			cfg->direct_min = v ? (size_t)v : SIZE_MAX;
			break;
		case 'f':
			if (parse_count(optarg, 1, 10000000, &n))
				return usage_error("--frames wants a number of frames from 1 to 10000000, not '%s'",
						   optarg);
			cfg->frames = (unsigned)n;
			break;
		case 'q':
			cfg->quiet = true;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case OPT_VERSION:
			printf("msgbench (libbufferlist) %s\n", BL_VERSION_STRING);
			return 0;
		default:	/* getopt said what was wrong */
			return usage_error(NULL);
		}
	}
	if (optind < argc)
		return usage_error("unexpected '%s'", argv[optind]);
	if (*parse_only && *net)
		return usage_error("--parse runs only the parse benchmark: --size, --conns and --mode are for a network case");
	return -1;
}

int main(int argc, char **argv)
{
	struct cfg cfg = {
		.size = 64, .conns = 1, .seconds = 2.0, .mode = STREAM,
		.impl = 3, .frames = 100000,
	};
	bool parse = false, net = false, want_parse_only = false;
	int errors = 0, r;

	r = parse_opts(&cfg, &parse, &net, &want_parse_only, argc, argv);
	if (r >= 0)
		return r;
	if (!parse && !net)
		parse = true;	/* the whole matrix */

	if (!cfg.quiet) {
		printf("# msgbench: libbufferlist %s, crc32c %s\n",
		       BL_VERSION_STRING, bl_crc32c_impl());
		if (!want_parse_only)
			printf("# network: loopback TCP, %.1f s per case, "
			       "ours on the %s back end, zero-copy send %s%s\n",
			       cfg.seconds,
			       cfg.blocking ? "blocking" : "io_uring",
			       cfg.zc ? "on (library threshold)" : "off",
			       cfg.align ? ", server aligns payloads" : "");
		if (!want_parse_only && cfg.lz4) {
			printf("# lz4: every payload compressed by its sender "
			       "(LZ4 frame, fast level), decompressed by its "
			       "receiver; payload: text; msg/s and GB/s count "
			       "UNCOMPRESSED payload bytes\n");
			if (net) {
				print_lz4_ratio(cfg.size);
			} else {
				print_lz4_ratio(64);
				print_lz4_ratio((size_t)1 << 20);
			}
		}
	}
	if (parse) {
		double ours, base;

		bench_parse(&cfg, &ours, &base);
		result_line("parse", 0, 0, "ours", ours, "ns/frame");
		result_line("parse", 0, 0, "base", base, "ns/frame");
		if (!cfg.quiet) {
			printf("\nparse %u frames of 16..64 bytes in memory "
			       "(ns per frame, median of %d)\n", cfg.frames,
			       PARSE_PASSES);
			printf("  ours (bl_msgr_parse, shared slices)   %7.1f\n",
			       ours);
			printf("  base (malloc + memcpy per payload)    %7.1f\n",
			       base);
			printf("  target: faster than base %s\n",
			       ours < base ? "MET" : "not met");
		}
	}
	if (!want_parse_only) {
		static const struct {
			size_t size;
			int conns;
			enum mode mode;
		} matrix[] = {
			{ 64, 1, STREAM },
			{ 64, 4, STREAM },
			{ (size_t)1 << 20, 1, STREAM },
			{ (size_t)1 << 20, 4, STREAM },
			{ 64, 1, PINGPONG },
			{ (size_t)1 << 20, 1, PINGPONG },
		};
		int n = net ? 1 : (int)(sizeof(matrix) / sizeof(matrix[0]));
		int wins = 0;

		if (!cfg.quiet)
			printf("\n%-9s %8s %5s %12s %7s %9s %12s %7s %9s "
			       "%7s\n", "mode", "size", "conns", "ours msg/s",
			       "GB/s", "srv ns/m", "base msg/s", "GB/s",
			       "srv ns/m", "o/b");
		for (int i = 0; i < n; i++) {
			struct cfg c = cfg;
			double ratio;

			if (!net) {
				c.size = matrix[i].size;
				c.conns = matrix[i].conns;
				c.mode = matrix[i].mode;
			}
			if (!net_case(&c, &ratio)) {
				errors++;
				fprintf(stderr, "msgbench: %s %zu bytes over %d connection(s): errors\n",
					mode_name(c.mode), c.size, c.conns);
			}
			wins += ratio > 1.0;
		}
		if (!cfg.quiet && cfg.impl == 3)
			printf("  target: faster than base in %d of %d cases\n",
			       wins, n);
	}
	return errors ? 1 : 0;
}
