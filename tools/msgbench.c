/* SPDX-License-Identifier: MIT */
/*
 * msgbench - the messenger (bufferlist/msgr.h) against a naive framed
 * protocol, in the same run, over loopback TCP; and frame parsing in memory.
 *
 *   msgbench [--size SIZE] [--conns N] [--seconds S] [--mode pingpong|stream]
 *            [--parse] [--impl ours|base|both] [--zc] [--align] [--blocking]
 *            [--direct-min SIZE] [--no-regpool] [--busy-poll US] [--lz4]
 *            [--ring coop|defer] [--spin US] [--local] [--frames N] [-q]
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
 *   --busy-poll   both sides' connections read their sockets directly for
 *                 up to US microseconds after each receive (busy_poll_us;
 *                 default 0: off)
 *   --lz4         every payload compressed by its sender and decompressed
 *                 by its receiver (below)
 *   --ring        how ours' rings run completion work: coop (the
 *                 library's default: COOP_TASKRUN) or defer
 *                 (bl_uring_params.single_issuer: DEFER_TASKRUN, every
 *                 ring made and used by one thread, which msgbench's are)
 *   --spin        ours' rings watch their completion queue for up to US
 *                 microseconds before a wait sleeps (bl_uring_params.
 *                 spin_us; default: the library's; 0: never)
 *   --local       ours' threads make their raws thread-local
 *                 (bl_raw_set_thread_local(): counts without atomic
 *                 instructions; each side's raws stay in its thread)
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
 *
 * This file: the options, main, one network case and the report; the
 * parse benchmark is msgbench_parse.c, the two sides of a network case
 * msgbench_ours.c and msgbench_base.c, what they share msgbench_util.c
 * (msgbench.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <lz4frame.h>
#include <bufferlist.h>
#include <bufferlist/lz4.h>
#include <bufferlist/msgr.h>
#include <bufferlist/version.h>
#include "blbench_util.h"
#include "msgbench.h"

static void result_line(const char *cas, size_t size, int conns,
			const char *impl, double v, const char *unit)
{
	printf("RESULT msgbench %s size=%zu conns=%d impl=%s %.4g %s\n", cas,
	       size, conns, impl, v, unit);
}

/* ---- one network case ---------------------------------------------------- */

static void run_net(const struct mb_cfg *cfg, bool ours, struct mb_result *r)
{
	struct mb_srv s;
	struct sockaddr_in sa;
	int fds[MB_MAXCONNS];
	pthread_t th;

	memset(&s, 0, sizeof(s));
	memset(r, 0, sizeof(*r));
	s.cfg = *cfg;
	s.lfd = mb_listen_loopback(&sa);
	/*
	 * The client's connections are made first (the listen backlog holds
	 * them): the server knows their ports before it accepts anything.
	 */
	for (int i = 0; i < cfg->conns; i++) {
		struct sockaddr_in me;
		socklen_t sl = sizeof(me);

		fds[i] = mb_dial(&sa);
		if (getsockname(fds[i], (struct sockaddr *)&me, &sl))
			mb_die("getsockname", errno);
		s.ports[s.nports++] = ntohs(me.sin_port);
	}
	if (pthread_create(&th, NULL, ours ? mb_ours_server : mb_base_server,
			   &s))
		mb_die("pthread_create", EAGAIN);
	while (!atomic_load(&s.ready))
		usleep(1000);
	if (ours)
		mb_ours_client(cfg, fds, r);
	else
		mb_base_client(cfg, fds, r);
	pthread_join(th, NULL);
	close(s.lfd);
	if (cfg->mode == MB_STREAM && s.t_last > s.t_first) {
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

static const char *mode_name(enum mb_mode m)
{
	return m == MB_STREAM ? "stream" : "pingpong";
}

/* Runs one network case and prints its row.  false: a side saw errors. */
static bool net_case(const struct mb_cfg *cfg, double *ratio)
{
	struct mb_result ro, rb;
	const char *m = mode_name(cfg->mode);

	memset(&ro, 0, sizeof(ro));
	memset(&rb, 0, sizeof(rb));
	ro.ok = rb.ok = true;	/* a side not run has no errors */
	if (cfg->impl & 1)
		run_net(cfg, true, &ro);
	if (cfg->impl & 2)
		run_net(cfg, false, &rb);
	for (int k = 0; k < 2; k++) {
		const struct mb_result *r = k ? &rb : &ro;
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
		mb_die("malloc", ENOMEM);
	mb_fill_payload(flat, size, true);
	bl_list_init(&in);
	bl_list_init(&z);
	if (bl_list_append(&in, flat, size))
		mb_die("alloc", ENOMEM);
	zo = bl_lz4_compress(&in, &z, NULL);
	zb = LZ4F_compressFrame(zbuf, bound, flat, size, NULL);
	if (zo < 0 || LZ4F_isError(zb))
		mb_die("lz4", EINVAL);
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
	"                [--direct-min SIZE] [--no-regpool] [--busy-poll US] [--lz4]\n"
	"                [--ring coop|defer] [--spin US] [--local] [--frames N] [-q]\n"
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
	"  -P, --busy-poll US     ours: connections poll their sockets for up to\n"
	"                         US microseconds after a receive, 0 to 1000000\n"
	"                         (0: off)\n"
	"  -L, --lz4              payloads lz4-compressed on the wire\n"
	"  -r, --ring MODE        ours: coop (the library's default ring) or\n"
	"                         defer (single issuer, DEFER_TASKRUN) (coop)\n"
	"  -S, --spin US          ours: rings watch for completions up to US\n"
	"                         microseconds before sleeping, 0 to 1000000\n"
	"                         (0: never; default: the library's)\n"
	"  -T, --local            ours: each thread's raws thread-local\n"
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
static int parse_opts(struct mb_cfg *cfg, bool *parse, bool *net,
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
		{ "busy-poll", required_argument, NULL, 'P' },
		{ "lz4", no_argument, NULL, 'L' },
		{ "ring", required_argument, NULL, 'r' },
		{ "spin", required_argument, NULL, 'S' },
		{ "local", no_argument, NULL, 'T' },
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
	while ((o = getopt_long(argc, argv, "s:c:t:m:pi:zabd:RP:Lr:S:Tf:qh", lo,
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
			if (parse_count(optarg, 1, MB_MAXCONNS, &n))
				return usage_error("--conns wants a number of connections from 1 to %d, not '%s'",
						   MB_MAXCONNS, optarg);
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
				cfg->mode = MB_STREAM;
			else if (!strcmp(optarg, "pingpong"))
				cfg->mode = MB_PINGPONG;
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
		case 'P':
			if (parse_count(optarg, 0, 1000000, &n))
				return usage_error("--busy-poll wants microseconds from 0 to 1000000, not '%s'",
						   optarg);
			cfg->busy_poll_us = (unsigned)n;
			break;
		case 'L':
			cfg->lz4 = true;
			break;
		case 'T':
			cfg->local = true;
			break;
		case 'S':
			if (parse_count(optarg, 0, 1000000, &n))
				return usage_error("--spin wants microseconds from 0 to 1000000, not '%s'",
						   optarg);
			cfg->spin_us = (long)n;
			break;
		case 'r':
			if (!strcmp(optarg, "coop"))
				cfg->ring_defer = false;
			else if (!strcmp(optarg, "defer"))
				cfg->ring_defer = true;
			else
				return usage_error("--ring wants coop or defer, not '%s'",
						   optarg);
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
	struct mb_cfg cfg = {
		.size = 64, .conns = 1, .seconds = 2.0, .mode = MB_STREAM,
		.impl = 3, .frames = 100000, .spin_us = -1,
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

		mb_bench_parse(&cfg, &ours, &base);
		result_line("parse", 0, 0, "ours", ours, "ns/frame");
		result_line("parse", 0, 0, "base", base, "ns/frame");
		if (!cfg.quiet) {
			printf("\nparse %u frames of 16..64 bytes in memory "
			       "(ns per frame, median of %d)\n", cfg.frames,
			       MB_PARSE_PASSES);
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
			enum mb_mode mode;
		} matrix[] = {
			{ 64, 1, MB_STREAM },
			{ 64, 4, MB_STREAM },
			{ (size_t)1 << 20, 1, MB_STREAM },
			{ (size_t)1 << 20, 4, MB_STREAM },
			{ 64, 1, MB_PINGPONG },
			{ (size_t)1 << 20, 1, MB_PINGPONG },
		};
		int n = net ? 1 : (int)(sizeof(matrix) / sizeof(matrix[0]));
		int wins = 0;

		if (!cfg.quiet)
			printf("\n%-9s %8s %5s %12s %7s %9s %12s %7s %9s "
			       "%7s\n", "mode", "size", "conns", "ours msg/s",
			       "GB/s", "srv ns/m", "base msg/s", "GB/s",
			       "srv ns/m", "o/b");
		for (int i = 0; i < n; i++) {
			struct mb_cfg c = cfg;
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
