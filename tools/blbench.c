/* SPDX-License-Identifier: MIT */
/*
 * blbench.c - a rados-bench-like benchmark built on libbufferlist: its
 * command line and main.
 *
 *   blbench [options] SECONDS write|seq|rand [--no-cleanup]
 *   blbench [options] cleanup
 *   blbench serve [--listen HOST:PORT] [--target SPEC]
 *
 * It does what `rados bench` does — keeps -t operations of -b bytes in
 * flight against objects of -O bytes, prints the same per-second table and
 * summary, leaves a metadata object behind for a later seq/rand in another
 * process — against a local directory, a raw file or block device, or a
 * remote `blbench serve`, with every operation going through io_uring
 * (struct bl_uring) from a struct bl_list — or against a Ceph pool
 * (rados:POOL) through librados' aio calls via libbufferlist_ceph, when
 * blbench is built with the bridge (BL_HAVE_CEPH).  This file parses and
 * checks the options, installs the signal handlers, opens the target and
 * hands the run to its mode (blbench_mode.c) or to the server
 * (blbench_serve.c); what an op carries is in blbench_run.c.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bufferlist/version.h>
#include "blbench.h"

/* ---- usage and options ------------------------------------------------------ */

static const char usage_text[] =
	"usage: blbench [options] SECONDS write|seq|rand [--no-cleanup]\n"
	"       blbench [options] cleanup\n"
	"       blbench serve [--listen HOST:PORT] [--target SPEC]\n"
	"                     [--max-memory SIZE] [--idle-timeout SECONDS]\n"
	"\n"
	"SECONDS 0 means no time limit: write runs until --max-objects objects\n"
	"are written or the target is full (`blbench 0 write` fills it), seq\n"
	"reads everything once, rand runs until interrupted.\n"
	"\n"
	"options as rados bench's:\n"
	"  -t, --concurrent-ios N   operations in flight (16)\n"
	"  -b, --block-size SIZE    bytes per operation (4M)\n"
	"  -O, --object-size SIZE   bytes per object, a multiple of -b (= -b)\n"
	"      --max-objects N      write at most N objects\n"
	"      --op-timeout SECONDS an operation (or a request to a tcp: server)\n"
	"                           not over within SECONDS fails the run (30;\n"
	"                           0: wait as long as it takes)\n"
	"      --no-cleanup         keep what write made, for seq and rand\n"
	"      --no-verify          seq, rand: do not check what was read\n"
	"      --no-hints           rados: write without allocation hints\n"
	"      --run-name NAME      metadata object (benchmark_last_metadata)\n"
	"      --prefix PREFIX      cleanup: remove every object named PREFIX*, and\n"
	"                           the metadata of the runs they belong to\n"
	"      --format plain|json  output (plain)\n"
	"      --show-time          prefix lines with the time of day\n"
	"  -p, --pool POOL          without --target: --target rados:POOL (with\n"
	"                           --target rados:POOL it must name that pool)\n"
	"      --rados-bench-compat write: objects and metadata as rados bench\n"
	"                           writes them (`rados bench seq` reads them);\n"
	"                           seq, rand and cleanup read rados bench's\n"
	"                           runs without it\n"
	"blbench's own:\n"
	"      --target SPEC        where the objects live:\n"
	"           dir:PATH          a directory of object files (default:\n"
	"                             $BLBENCH_DIR, else /var/tmp/blbench-$USER)\n"
	"           file:PATH[:SIZE]  a raw file or block device; objects at\n"
	"                             aligned offsets (SIZE creates the file);\n"
	"                             locked: one writer at a time, or readers\n"
	"           tcp:HOST:PORT     a `blbench serve`, through the messenger\n"
	"           rados:POOL        a Ceph pool, through librados (when built\n"
	"                             with the Ceph bridge)\n"
	"  -c, --conf FILE          rados: the ceph.conf (default: $CEPH_CONF, then\n"
	"                           Ceph's usual places)\n"
	"      --direct             open with O_DIRECT\n"
	"      --fsync N            file:, dir: (and serve): an fsync after every\n"
	"                           Nth write, linked to that write (as fio's)\n"
	"      --fdatasync N        the same with fdatasync\n"
	"      --sync dsync|sync    file:, dir: (and serve): every write with\n"
	"                           RWF_DSYNC or RWF_SYNC (fio's --sync)\n"
	"      --crc                crc32c of every operation, checked on read\n"
	"      --lz4                store operations lz4-compressed (MB/s count\n"
	"                           the uncompressed bytes)\n"
	"      --plot FILE.svg      draw bandwidth and latency per second, and the\n"
	"                           latency distribution\n"
	"      --listen HOST:PORT   serve: address to listen on (127.0.0.1:6800)\n"
	"      --max-memory SIZE    serve: what replies and requests may hold in\n"
	"                           all (1G, at least 16M); beyond it READs wait\n"
	"                           and WRITEs are refused (ENOBUFS); -b at most\n"
	"                           an eighth of it\n"
	"      --idle-timeout SECONDS serve: end a client that sent nothing and\n"
	"                           took nothing for SECONDS (120; 0: never)\n"
	"      --jobs N             write, seq, rand: N clients at once (1..64),\n"
	"                           each with its own -t ops, target connection\n"
	"                           and --max-objects; the table and summary are\n"
	"                           the run's (JSON adds each client's in \"jobs\");\n"
	"                           seq and rand read with as many as wrote\n"
	"  -h, --help               this text\n"
	"      --version            print the version and exit\n"
	"SIZE takes K, M, G or T (powers of 1024).  MB in the output is 2^20 bytes.\n"
	"cleanup removes the run --run-name names, then this host's objects that\n"
	"no run's metadata names (a killed write's), but not those of a write\n"
	"still running.  Damaged metadata is removed too, its objects by name.\n"
	"SIGINT starts no more operations and lets those in flight finish; a\n"
	"second SIGINT, or SIGTERM, stops at once (the run then fails).\n";

enum {
	OPT_DIRECT = 256,
	OPT_CRC,
	OPT_LZ4,
	OPT_FORMAT,
	OPT_PLOT,
	OPT_TARGET,
	OPT_NO_CLEANUP,
	OPT_NO_VERIFY,
	OPT_NO_HINTS,
	OPT_RUN_NAME,
	OPT_PREFIX,
	OPT_MAX_OBJECTS,
	OPT_SHOW_TIME,
	OPT_LISTEN,
	OPT_OP_TIMEOUT,
	OPT_RB_COMPAT,
	OPT_MAX_MEMORY,
	OPT_IDLE_TIMEOUT,
	OPT_VERSION,
	OPT_FSYNC,
	OPT_FDATASYNC,
	OPT_SYNC,
	OPT_JOBS,
};

static const struct option long_opts[] = {
	{ "concurrent-ios", required_argument, NULL, 't' },
	{ "block-size", required_argument, NULL, 'b' },
	{ "object-size", required_argument, NULL, 'O' },
	{ "pool", required_argument, NULL, 'p' },
	{ "conf", required_argument, NULL, 'c' },
	{ "help", no_argument, NULL, 'h' },
	{ "direct", no_argument, NULL, OPT_DIRECT },
	{ "crc", no_argument, NULL, OPT_CRC },
	{ "lz4", no_argument, NULL, OPT_LZ4 },
	{ "format", required_argument, NULL, OPT_FORMAT },
	{ "plot", required_argument, NULL, OPT_PLOT },
	{ "target", required_argument, NULL, OPT_TARGET },
	{ "no-cleanup", no_argument, NULL, OPT_NO_CLEANUP },
	{ "no-verify", no_argument, NULL, OPT_NO_VERIFY },
	{ "no-hints", no_argument, NULL, OPT_NO_HINTS },
	{ "run-name", required_argument, NULL, OPT_RUN_NAME },
	{ "prefix", required_argument, NULL, OPT_PREFIX },
	{ "max-objects", required_argument, NULL, OPT_MAX_OBJECTS },
	{ "show-time", no_argument, NULL, OPT_SHOW_TIME },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "op-timeout", required_argument, NULL, OPT_OP_TIMEOUT },
	{ "fsync", required_argument, NULL, OPT_FSYNC },
	{ "fdatasync", required_argument, NULL, OPT_FDATASYNC },
	{ "sync", required_argument, NULL, OPT_SYNC },
	{ "rados-bench-compat", no_argument, NULL, OPT_RB_COMPAT },
	{ "max-memory", required_argument, NULL, OPT_MAX_MEMORY },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "jobs", required_argument, NULL, OPT_JOBS },
	{ NULL, 0, NULL, 0 },
};

static int usage_error(const char *fmt, ...)
{
	va_list ap;

	if (fmt) {
		fputs("blbench: ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt, ap);
		va_end(ap);
		fputc('\n', stderr);
	}
	fputs(usage_text, stderr);
	return BLB_EXIT_USAGE;
}

static int parse_uint(const char *s, unsigned long long max,
		      unsigned long long *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/* The rados: target's options.  -1 to go on, or the exit status. */
static int check_rados(struct blb_opts *o)
{
	static char spec[6 + BLB_NAME_MAX];
	const char *pool;

	/* rados bench's habit: -p POOL alone names the pool to bench */
	if (o->pool && !o->target && o->mode != BLB_SERVE) {
		if (strlen(o->pool) >= BLB_NAME_MAX)
			return usage_error("-p wants a pool name");
		snprintf(spec, sizeof(spec), "rados:%s", o->pool);
		o->target = spec;
	}
	if (o->rb_compat && (o->crc || o->lz4 || o->direct))
		return usage_error("--rados-bench-compat writes rados bench's objects: no --crc, --lz4 or --direct");
	if (!o->target || strncmp(o->target, "rados:", 6)) {
		if (o->conf)
			return usage_error("-c is for --target rados:POOL");
		if (!o->hints)
			return usage_error("--no-hints is for --target rados:POOL");
		return -1;
	}
	pool = o->target + 6;
	if (!*pool || strlen(pool) >= BLB_NAME_MAX)
		return usage_error("--target rados: wants a pool name");
	if (o->mode == BLB_SERVE)
		return usage_error("serve keeps objects in dir: or file:, not rados:");
	if (o->pool && strcmp(o->pool, pool))
		return usage_error("-p %s and --target rados:%s name different pools",
				   o->pool, pool);
#ifndef BL_HAVE_CEPH
	/* a build question, not a run-time failure: the usage status */
	fprintf(stderr, "blbench: --target %s: this blbench was built without the Ceph bridge (libbufferlist_ceph; configure --with-ceph)\n",
		o->target);
	return BLB_EXIT_USAGE;
#else
	return -1;
#endif
}

/* Returns -1 to go on, or the exit status. */
static int parse_opts(struct blb_opts *o, int argc, char **argv)
{
	char path[PATH_MAX];
	unsigned long long v;
	uint64_t size;
	bool listen_given = false, serve_given = false;
	size_t len = 0;
	int c, i, npos, r;
	char **pos;

	memset(o, 0, sizeof(*o));
	o->concurrent = 16;
	o->op_size = 4u << 20;
	o->cleanup = true;
	o->verify = true;
	o->hints = true;
	o->run_name = BLB_META_DEFAULT;
	o->listen = "127.0.0.1:6800";
	o->op_timeout = BLB_OP_TIMEOUT;
	o->max_memory = BLB_SERVE_MEMORY;
	o->idle_timeout = BLB_SERVE_IDLE;

	for (i = 0; i < argc && len + 2 < sizeof(o->cmdline); i++) {
		const char *a = i ? argv[i] : "blbench";

		len += snprintf(o->cmdline + len, sizeof(o->cmdline) - len,
				"%s%s", i ? " " : "", a);
	}

	/*
	 * getopt names argv[0] in its messages: uninstalled, that is the
	 * path of libtool's real binary (.libs/...), not the command typed.
	 */
	if (argc > 0)
		argv[0] = (char *)"blbench";
	opterr = 1;
	while ((c = getopt_long(argc, argv, "t:b:O:p:c:h", long_opts, NULL)) != -1) {
		switch (c) {
		case 't':
			if (parse_uint(optarg, 65536, &v) || v == 0)
				return usage_error("-t wants a number of operations from 1 to 65536, not '%s'",
						   optarg);
			o->concurrent = (unsigned)v;
			break;
		case 'b':
			if (blb_parse_size(optarg, &o->op_size) ||
			    o->op_size < BLB_HDR_MIN ||
			    o->op_size > BLB_MAX_OP_SIZE)
				return usage_error("-b wants a size from %d bytes to 1G, not '%s'",
						   BLB_HDR_MIN, optarg);
			break;
		case 'O':
			if (blb_parse_size(optarg, &o->object_size) ||
			    o->object_size == 0 ||
			    o->object_size > BLB_MAX_OBJECT_SIZE)
				return usage_error("-O wants a size up to 16T, not '%s'",
						   optarg);
			break;
		case 'p':
			o->pool = optarg;
			break;
		case 'c':
			if (!*optarg)
				return usage_error("-c wants a ceph.conf file name");
			o->conf = optarg;
			break;
		case 'h':
			fputs(usage_text, stdout);
			return 0;
		case OPT_VERSION:
			printf("blbench (libbufferlist) %s\n", BL_VERSION_STRING);
			return 0;
		case OPT_DIRECT:
			o->direct = true;
			break;
		case OPT_CRC:
			o->crc = true;
			break;
		case OPT_LZ4:
			o->lz4 = true;
			break;
		case OPT_FORMAT:
			if (!strcmp(optarg, "plain"))
				o->json = false;
			else if (!strcmp(optarg, "json") ||
				 !strcmp(optarg, "json-pretty"))
				o->json = true;
			else
				return usage_error("--format wants plain or json, not '%s'",
						   optarg);
			break;
		case OPT_PLOT:
			if (!*optarg)
				return usage_error("--plot wants a file name");
			o->plot = optarg;
			break;
		case OPT_TARGET:
			if (strncmp(optarg, "dir:", 4) &&
			    strncmp(optarg, "file:", 5) &&
			    strncmp(optarg, "tcp:", 4) &&
			    strncmp(optarg, "rados:", 6))
				return usage_error("--target wants dir:PATH, file:PATH[:SIZE], tcp:HOST:PORT or rados:POOL, not '%s'",
						   optarg);
			if (!strncmp(optarg, "file:", 5) &&
			    blb_file_split(optarg + 5, path, sizeof(path),
					   &size) == -EINVAL)
				return usage_error("--target %s: '%s' is not a size (K, M, G or T)",
						   optarg, strrchr(optarg, ':') + 1);
			o->target = optarg;
			break;
		case OPT_NO_CLEANUP:
			o->cleanup = false;
			break;
		case OPT_NO_VERIFY:
			o->verify = false;
			break;
		case OPT_NO_HINTS:
			o->hints = false;
			break;
		case OPT_RUN_NAME:
			/* a file name in dir: (dot files are the target's own) */
			if (!*optarg || *optarg == '.' || strchr(optarg, '/') ||
			    strlen(optarg) >= BLB_NAME_MAX / 2)
				return usage_error("--run-name wants a plain name, not '%s'",
						   optarg);
			o->run_name = optarg;
			break;
		case OPT_PREFIX:
			if (!*optarg || strchr(optarg, '/') ||
			    strlen(optarg) >= BLB_NAME_MAX)
				return usage_error("--prefix wants a plain name prefix, not '%s'",
						   optarg);
			o->prefix = optarg;
			break;
		case OPT_MAX_OBJECTS:
			if (parse_uint(optarg, INT_MAX, &v))
				return usage_error("--max-objects wants a number, not '%s'",
						   optarg);
			o->max_objects = v;
			break;
		case OPT_SHOW_TIME:
			o->show_time = true;
			break;
		case OPT_LISTEN:
			o->listen = optarg;
			listen_given = true;
			break;
		case OPT_RB_COMPAT:
			o->rb_compat = true;
			break;
		case OPT_OP_TIMEOUT:
			if (parse_uint(optarg, BLB_OP_TIMEOUT_MAX, &v))
				return usage_error("--op-timeout wants whole seconds from 0 to %u, not '%s'",
						   BLB_OP_TIMEOUT_MAX, optarg);
			o->op_timeout = (unsigned)v;
			break;
		case OPT_FSYNC:
		case OPT_FDATASYNC:
			if (parse_uint(optarg, UINT_MAX, &v))
				return usage_error("--%s wants a number of writes, not '%s'",
						   c == OPT_FSYNC ? "fsync" : "fdatasync",
						   optarg);
			if (o->fsync_every && v)
				return usage_error("--fsync and --fdatasync: one or the other");
			o->fsync_every = (unsigned)v;
			o->fsync_kind = c == OPT_FSYNC ? BL_URING_SYNC_FSYNC
						       : BL_URING_SYNC_FDATASYNC;
			break;
		case OPT_SYNC:
			if (!strcmp(optarg, "dsync"))
				o->rw_flags = RWF_DSYNC;
			else if (!strcmp(optarg, "sync"))
				o->rw_flags = RWF_SYNC;
			else if (!strcmp(optarg, "none"))
				o->rw_flags = 0;
			else
				return usage_error("--sync wants dsync or sync, not '%s'",
						   optarg);
			break;
		case OPT_MAX_MEMORY:
			if (blb_parse_size(optarg, &size) ||
			    size < BLB_SERVE_MEMORY_MIN)
				return usage_error("--max-memory wants a SIZE of at least 16M, not '%s'",
						   optarg);
			o->max_memory = size;
			serve_given = true;
			break;
		case OPT_JOBS:
			if (parse_uint(optarg, BLB_JOBS_MAX, &v) || v == 0)
				return usage_error("--jobs wants a number of clients from 1 to %d, not '%s'",
						   BLB_JOBS_MAX, optarg);
			o->jobs = (unsigned)v;
			break;
		case OPT_IDLE_TIMEOUT:
			if (parse_uint(optarg, BLB_OP_TIMEOUT_MAX, &v))
				return usage_error("--idle-timeout wants whole seconds from 0 to %u, not '%s'",
						   BLB_OP_TIMEOUT_MAX, optarg);
			o->idle_timeout = (unsigned)v;
			serve_given = true;
			break;
		default:	/* getopt said what was wrong */
			return usage_error(NULL);
		}
	}

	pos = argv + optind;
	npos = argc - optind;
	if (npos == 0)
		return usage_error("a mode is needed: SECONDS write|seq|rand, cleanup or serve");
	if (!strcmp(pos[0], "cleanup") || !strcmp(pos[0], "serve")) {
		o->mode = pos[0][0] == 'c' ? BLB_CLEANUP : BLB_SERVE;
		if (npos > 1)
			return usage_error("unexpected '%s' after %s", pos[1], pos[0]);
	} else {
		if (parse_uint(pos[0], INT_MAX, &v))
			return usage_error("SECONDS must be a whole number, not '%s'",
					   pos[0]);
		o->seconds = (int)v;
		if (npos < 2)
			return usage_error("a mode is needed after SECONDS: write, seq or rand");
		if (!strcmp(pos[1], "write"))
			o->mode = BLB_WRITE;
		else if (!strcmp(pos[1], "seq"))
			o->mode = BLB_SEQ;
		else if (!strcmp(pos[1], "rand"))
			o->mode = BLB_RAND;
		else
			return usage_error("unknown mode '%s' (write, seq, rand, cleanup, serve)",
					   pos[1]);
		if (npos > 2)
			return usage_error("unexpected '%s'", pos[2]);
	}
	if (listen_given && o->mode != BLB_SERVE)
		return usage_error("--listen is for serve");
	if ((o->fsync_every || o->rw_flags) && o->target &&
	    (!strncmp(o->target, "tcp:", 4) || !strncmp(o->target, "rados:", 6)))
		return usage_error("--fsync, --fdatasync and --sync are for the file: and dir: targets (and serve's)");
	if (serve_given && o->mode != BLB_SERVE)
		return usage_error("--max-memory and --idle-timeout are for serve");
	if (o->jobs && (o->mode == BLB_SERVE || o->mode == BLB_CLEANUP))
		return usage_error("--jobs is for write, seq and rand (cleanup finds every client's objects)");
	/* rados bench's metadata knows one writer's objects */
	if (o->jobs > 1 && o->rb_compat)
		return usage_error("--rados-bench-compat writes one client's run: not with --jobs");
	r = check_rados(o);
	if (r >= 0)
		return r;
	if (!o->object_size)
		o->object_size = o->op_size;
	if (o->object_size < o->op_size || o->object_size % o->op_size)
		return usage_error("-O (%llu) must be a multiple of -b (%llu)",
				   (unsigned long long)o->object_size,
				   (unsigned long long)o->op_size);
	return -1;
}

/*
 * A first SIGINT lets the operations in flight finish (rados bench's
 * Ctrl-C); a second one, or SIGTERM, must stop even a run whose target
 * no longer answers, so it sets 2, which every wait gives up on.
 */
static void on_signal(int sig)
{
	blb_stop = sig == SIGTERM || blb_stop > 0 ? 2 : 1;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waits return early */
	sigemptyset(&sa.sa_mask);
	/* one handler at a time: its read of blb_stop then stays true */
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* a closed peer is an error, not a death */
}

int main(int argc, char **argv)
{
	struct blb_opts o;
	struct blb_bench b;
	char err[512];
	int r;

	r = parse_opts(&o, argc, argv);
	if (r >= 0)
		return r;
	install_signals();
	if (o.mode == BLB_SERVE)
		return blb_serve(&o);

	memset(&b, 0, sizeof(b));
	b.o = &o;
	b.mode = o.mode;
	/* a read learns it from the metadata */
	b.njobs = o.mode == BLB_WRITE && o.jobs > 1 ? o.jobs : 1;
	blb_out_init(&b.out, stdout, o.json, o.show_time);
	r = blb_target_open(&b.t, o.target, &o, o.mode == BLB_WRITE, err,
			    sizeof(err));
	if (r < 0) {
		fprintf(stderr, "blbench: %s\n", err);
		if (blb_stop > 1)	/* a tcp: hello gave up */
			fprintf(stderr, "blbench: stopped by a signal\n");
		return BLB_EXIT_FAIL;
	}
	/* rados bench's first line, before the table or the JSON alike */
	if (!strncmp(o.target ? o.target : "", "rados:", 6) &&
	    o.mode != BLB_CLEANUP)
		printf("hints = %d\n", o.hints ? 1 : 0);
	switch (o.mode) {
	case BLB_WRITE:
		r = blb_mode_write(&b);
		break;
	case BLB_SEQ:
	case BLB_RAND:
		r = blb_mode_read(&b);
		break;
	default:
		r = blb_mode_cleanup(&b);
		break;
	}
	/* the loop said so itself; a wait elsewhere only gave up (-EINTR) */
	if (r && blb_stop > 1 && b.failed != -EINTR)
		fprintf(stderr, "blbench: stopped by a signal\n");
	/* closing the target completes (or cancels) what is still in flight */
	blb_target_close(b.t);
	blb_bench_free(&b);
	return r;
}
