/* SPDX-License-Identifier: MIT */
/*
 * blbench.c - a rados-bench-like benchmark built on libbufferlist.
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
 * blbench is built with the bridge (BL_HAVE_CEPH).
 *
 * What an operation carries.  Every op starts with a small header (magic,
 * op number, object number, the run's seed, sizes, flags, the body's
 * crc32c with --crc, and a crc32c of the header itself), padded to the
 * O_DIRECT alignment with --direct.  The body is a slice of ONE pattern
 * raw made at start-up from the run's seed, holding V regions of one body
 * each (V the first prime above -t, the whole under 1 GiB): op n's body is
 * region n % V, so every op in flight sends from memory of its own, as
 * fio's and rados bench's per-slot buffers do — 16 ops DMA-ing the same
 * cache-hot 4 MiB measured a third faster than the disk allows on these
 * VMs, an artifact, not a result.  A write is then a two-segment list
 * [header][pattern slice] that costs no copy at all — the library's
 * zero-copy path as a user would take it.  seq and rand rebuild the
 * pattern from the seed and the layout in the metadata, so they verify
 * without a stored copy; a mismatch is reported with the object's name
 * (rados bench's "NAME is not correct!") and makes the exit status
 * non-zero.
 *
 * With --lz4 the body is compressed per op (bl_lz4_compress, segment by
 * segment) and stored after the header, which records the stored length;
 * reads decompress and verify.  Bandwidth and IOPS always count the op's
 * logical bytes (-b), as rados bench does with compressing pools; the
 * bytes that reached the target are reported after the summary.
 *
 * Layout in an object: op k of an object sits at k * stride, where stride
 * is -b (or, with --lz4, the header plus the worst-case compressed size,
 * rounded to the alignment).  The metadata object is rados bench's
 * (object size u64, ops written i32, pid i32, op size u64, little-endian)
 * followed by blbench's own fields (prefix, flags, header size, pattern
 * region size and count, stride, seed) and a crc32c.
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
#include "blbench.h"

volatile int blb_stop;

#define HDR_MIN 64			/* header bytes without O_DIRECT */
#define HDR_MAGIC "BLBENCH1"
#define META_MAGIC 0x4d424c42u		/* "BLBM" */
/* 2: pattern regions 1..V-1 are region 0 xor a word (make_pattern) */
#define META_VERSION 2
#define PATTERN_MAX (1ull << 30)	/* pattern memory, at most */
#define FLAG_CRC 1u
#define FLAG_LZ4 2u
#define MAX_OP_SIZE (1ull << 30)	/* one io_uring transfer stays < 2 GiB */

/* ---- usage and options ------------------------------------------------------ */

static const char usage_text[] =
	"usage: blbench [options] SECONDS write|seq|rand [--no-cleanup]\n"
	"       blbench [options] cleanup\n"
	"       blbench serve [--listen HOST:PORT] [--target SPEC]\n"
	"\n"
	"options as rados bench's:\n"
	"  -t, --concurrent-ios N   operations in flight (16)\n"
	"  -b, --block-size SIZE    bytes per operation (4M)\n"
	"  -O, --object-size SIZE   bytes per object, a multiple of -b (= -b)\n"
	"      --max-objects N      write at most N objects\n"
	"      --no-cleanup         keep what write made, for seq and rand\n"
	"      --no-verify          seq, rand: do not check what was read\n"
	"      --no-hints           rados: write without allocation hints\n"
	"      --run-name NAME      metadata object (benchmark_last_metadata)\n"
	"      --prefix PREFIX      cleanup: also remove objects named PREFIX*\n"
	"      --format plain|json  output (plain)\n"
	"      --show-time          prefix lines with the time of day\n"
	"  -p, --pool POOL          accepted for compatibility; selects nothing\n"
	"                           (with rados:POOL it must name that pool)\n"
	"blbench's own:\n"
	"      --target SPEC        where the objects live:\n"
	"           dir:PATH          a directory of object files (default:\n"
	"                             $BLBENCH_DIR, else /var/tmp/blbench-$USER)\n"
	"           file:PATH[:SIZE]  a raw file or block device; objects at\n"
	"                             aligned offsets (SIZE creates the file)\n"
	"           tcp:HOST:PORT     a `blbench serve`, through the messenger\n"
	"           rados:POOL        a Ceph pool, through librados (when built\n"
	"                             with the Ceph bridge)\n"
	"  -c, --conf FILE          rados: the ceph.conf (default: $CEPH_CONF, then\n"
	"                           Ceph's usual places)\n"
	"      --direct             open with O_DIRECT\n"
	"      --crc                crc32c of every operation, checked on read\n"
	"      --lz4                store operations lz4-compressed (MB/s count\n"
	"                           the uncompressed bytes)\n"
	"      --plot FILE.svg      draw bandwidth and latency per second\n"
	"      --listen HOST:PORT   serve: address to listen on (127.0.0.1:6800)\n"
	"  -h, --help               this text\n"
	"SIZE takes K, M, G or T (powers of 1024).  MB in the output is 2^20 bytes.\n";

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

int blb_parse_size(const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	default: break;
	}
	if (shift && *end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
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
static int check_rados(const struct blb_opts *o)
{
	const char *pool;

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
	unsigned long long v;
	bool listen_given = false;
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

	for (i = 0; i < argc && len + 2 < sizeof(o->cmdline); i++) {
		const char *a = i ? argv[i] : "blbench";

		len += snprintf(o->cmdline + len, sizeof(o->cmdline) - len,
				"%s%s", i ? " " : "", a);
	}

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
			    o->op_size < HDR_MIN || o->op_size > MAX_OP_SIZE)
				return usage_error("-b wants a size from %d bytes to 1G, not '%s'",
						   HDR_MIN, optarg);
			break;
		case 'O':
			if (blb_parse_size(optarg, &o->object_size) ||
			    o->object_size == 0)
				return usage_error("-O wants a size, not '%s'", optarg);
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
			if (!*optarg || strchr(optarg, '/') ||
			    strlen(optarg) >= BLB_NAME_MAX / 2)
				return usage_error("--run-name wants a plain name, not '%s'",
						   optarg);
			o->run_name = optarg;
			break;
		case OPT_PREFIX:
			if (!*optarg || strchr(optarg, '/'))
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

/* ---- little-endian helpers ---------------------------------------------------- */

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* ---- the benchmark ------------------------------------------------------------- */

/*
 * The op header, little-endian, at the start of every op:
 *    0  magic "BLBENCH1"       32  op size (logical)
 *    8  op number              40  writer's pid
 *   16  object number          44  flags (FLAG_*)
 *   24  seed of the run        48  stored bytes after the header
 *                              52  crc32c of the body (--crc), seed ~0
 *                              56  zero
 *                              60  crc32c of bytes 0..59, seed ~0
 */
struct op_hdr {
	uint64_t index, objno, seed, op_size;
	uint32_t pid, flags, stored, body_crc;
};

struct bench {
	const struct blb_opts *o;
	struct blb_target *t;
	struct blb_stats st;
	struct blb_out out;
	enum blb_mode mode;
	/* the layout of what write stored (from the metadata for reads) */
	uint64_t op_size, object_size, opo, stride;
	size_t hdr, body_len;
	size_t unit, nvar;		/* pattern: nvar regions, unit apart */
	size_t halign;			/* header raws' alignment */
	uint32_t flags;
	uint64_t seed;
	int pid;
	char prefix[BLB_NAME_MAX - 32];
	uint64_t num_ops;		/* reads: ops the write made */
	uint64_t max_ops;		/* write: stop after this many (0: none) */
	uint64_t cap_ops;		/* write: the target's room */
	struct bl_raw *pattern;
	/* ops in flight and the queue of those that completed */
	struct blb_op *ops;
	unsigned nops;
	struct blb_op *done_head, **done_tail;
	uint64_t rng;
	unsigned bad;			/* verification failures */
	int failed;			/* first I/O error (-errno), 0 if none */
	bool capped;			/* write stopped for want of room */
	double end;
};

static size_t align_up(size_t x, size_t a)
{
	return a > 1 ? (x + a - 1) / a * a : x;
}

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/*
 * The body pattern: 8-byte words, three in four taken from a dictionary of
 * 256 random words and the rest random, so that lz4 finds something to do
 * (about 2:1) while every op still carries bytes that differ from its
 * neighbours'.  Only region 0 is drawn word by word; region k is region 0
 * xor a random word of its own (the same structure for lz4, other bytes
 * on the wire), a loop the compiler vectorises: the whole pattern then
 * costs about what writing its memory does, which counts in the client
 * CPU a benchmark reports (drawing all 17 regions of -t 16 word by word
 * took ~35 ms, 1% of a 10 s rados write's client CPU).
 */
static int make_pattern(struct bench *b)
{
	size_t len = b->body_len + (b->nvar - 1) * b->unit;
	size_t first = len < b->unit ? len : b->unit;
	uint64_t dict[256], s = b->seed | 1;
	unsigned char *p;
	size_t i;

	b->pattern = bl_raw_create_aligned(len ? len : 1, 4096);
	if (!b->pattern)
		return -ENOMEM;
	p = (unsigned char *)bl_raw_data(b->pattern);
	for (i = 0; i < 256; i++)
		dict[i] = xorshift(&s);
	for (i = 0; i + 8 <= first; i += 8) {
		uint64_t r = xorshift(&s);
		uint64_t w = (r & 3) ? dict[(r >> 8) & 255] : xorshift(&s);

		memcpy(p + i, &w, 8);
	}
	for (; i < first; i++)
		p[i] = (unsigned char)xorshift(&s);
	for (size_t at = first; at < len; at += b->unit) {
		size_t n = len - at < b->unit ? len - at : b->unit;
		uint64_t key = xorshift(&s);
		unsigned char *d = p + at;

		for (i = 0; i + 8 <= n; i += 8) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			w ^= key;
			memcpy(d + i, &w, 8);
		}
		for (; i < n; i++)
			d[i] = p[i] ^ (unsigned char)(key >> (8 * (i & 7)));
	}
	return 0;
}

static bool is_prime(size_t n)
{
	if (n < 2)
		return false;
	for (size_t d = 2; d * d <= n; d++)
		if (n % d == 0)
			return false;
	return true;
}

/*
 * Regions one body long (rounded to 4 KiB, or the memory alignment), the
 * first prime above @inflight of them — so ops n .. n + inflight - 1 never
 * share one — but no more than PATTERN_MAX of memory.
 */
static void plan_pattern(struct bench *b, unsigned inflight)
{
	size_t a = b->t->mem_align > 4096 ? b->t->mem_align : 4096;
	size_t n = (size_t)inflight + 1;

	b->unit = align_up(b->body_len ? b->body_len : 1, a);
	while (!is_prime(n))
		n++;
	if ((n - 1) * b->unit > PATTERN_MAX)
		n = PATTERN_MAX / b->unit + 1;
	b->nvar = n;
}

static size_t pattern_off(const struct bench *b, uint64_t index)
{
	return (size_t)(index % b->nvar) * b->unit;
}

static void op_name(const struct bench *b, uint64_t objno, char *buf,
		    size_t len)
{
	snprintf(buf, len, "%s_object%" PRIu64, b->prefix, objno);
}

static void encode_hdr(unsigned char *p, size_t len, const struct op_hdr *h)
{
	memset(p, 0, len);
	memcpy(p, HDR_MAGIC, 8);
	put64(p + 8, h->index);
	put64(p + 16, h->objno);
	put64(p + 24, h->seed);
	put64(p + 32, h->op_size);
	put32(p + 40, h->pid);
	put32(p + 44, h->flags);
	put32(p + 48, h->stored);
	put32(p + 52, h->body_crc);
	put32(p + 60, bl_crc32c(0xFFFFFFFF, p, 60));
}

static int decode_hdr(const unsigned char *p, struct op_hdr *h)
{
	if (memcmp(p, HDR_MAGIC, 8))
		return -EBADMSG;
	if (get32(p + 60) != bl_crc32c(0xFFFFFFFF, p, 60))
		return -EBADMSG;
	h->index = get64(p + 8);
	h->objno = get64(p + 16);
	h->seed = get64(p + 24);
	h->op_size = get64(p + 32);
	h->pid = get32(p + 40);
	h->flags = get32(p + 44);
	h->stored = get32(p + 48);
	h->body_crc = get32(p + 52);
	return 0;
}

void blb_op_complete(struct blb_op *op, ssize_t res, struct bl_list *data)
{
	struct bench *b = op->bench;

	op->lat = blb_now() - op->t0;
	op->res = res;
	if (data)
		bl_list_claim_append(&op->data, data);
	if (op->done) {
		op->done(op);
		return;
	}
	op->next = NULL;
	*b->done_tail = op;
	b->done_tail = &op->next;
}

static struct blb_op *pop_done(struct bench *b)
{
	struct blb_op *op = b->done_head;

	if (op) {
		b->done_head = op->next;
		if (!b->done_head)
			b->done_tail = &b->done_head;
	}
	return op;
}

/* Builds op @op->index's bytes and starts writing them. */
static int start_write(struct bench *b, struct blb_op *op)
{
	struct bl_list l, body, packed;
	struct bl_ptr hp = BL_PTR_INIT, bp = BL_PTR_INIT, pat;
	struct op_hdr h = { 0 };
	struct bl_raw *hr;
	size_t stored;
	ssize_t n;
	int r;

	op->objno = op->index / b->opo;
	op->off = (op->index % b->opo) * b->stride;
	op_name(b, op->objno, op->name, sizeof(op->name));

	bl_list_init(&l);
	bl_list_init(&body);
	bl_list_init(&packed);
	hr = bl_raw_create_aligned(b->hdr, b->halign);
	if (!hr)
		return -ENOMEM;
	bl_ptr_from_raw(&hp, hr);
	bl_ptr_from_raw(&pat, bl_raw_get(b->pattern));
	r = bl_ptr_slice(&bp, &pat, pattern_off(b, op->index), b->body_len);
	bl_ptr_release(&pat);
	if (r < 0)
		goto out;
	r = bl_list_append_ptr(&body, &bp);
	if (r < 0)
		goto out;
	stored = b->body_len;
	if (b->flags & FLAG_CRC)
		h.body_crc = bl_list_crc32c(&body, 0xFFFFFFFF);
	if (b->flags & FLAG_LZ4) {
		n = bl_lz4_compress(&body, &packed, NULL);
		if (n < 0) {
			r = (int)n;
			goto out;
		}
		stored = (size_t)n;
		if (b->hdr + stored > b->stride) {
			r = -EOVERFLOW;	/* the stride is lz4's worst case */
			goto out;
		}
	} else {
		bl_list_swap(&packed, &body);
	}
	h.index = op->index;
	h.objno = op->objno;
	h.seed = b->seed;
	h.op_size = b->op_size;
	h.pid = (uint32_t)b->pid;
	h.flags = b->flags;
	h.stored = (uint32_t)stored;
	encode_hdr((unsigned char *)bl_ptr_data(&hp), b->hdr, &h);
	bl_raw_invalidate_crc(hr);

	r = bl_list_append_ptr_move(&l, &hp);
	if (r < 0)
		goto out;
	r = bl_list_claim_append(&l, &packed);
	if (r < 0)
		goto out;
	if ((b->flags & FLAG_LZ4) && b->t->off_align > 1) {
		/* O_DIRECT: pad to the alignment and align what lz4 made */
		size_t pad = align_up(bl_list_length(&l), b->t->off_align) -
			     bl_list_length(&l);

		r = pad ? bl_list_append_zero(&l, pad) : 0;
		if (r == 0)
			r = bl_list_rebuild_aligned_size_and_memory(
				&l, b->t->off_align, b->t->mem_align, 1024);
		if (r < 0)
			goto out;
	}
	b->st.stored_bytes += bl_list_length(&l);
	op->t0 = blb_now();
	r = b->t->ops->write(b->t, op, &l);
out:
	bl_ptr_release(&hp);
	bl_ptr_release(&bp);
	bl_list_clear(&body);
	bl_list_clear(&packed);
	bl_list_clear(&l);
	return r;
}

static int start_read(struct bench *b, struct blb_op *op)
{
	size_t len = b->stride;

	op->objno = op->index / b->opo;
	op->off = (op->index % b->opo) * b->stride;
	op_name(b, op->objno, op->name, sizeof(op->name));
	bl_list_clear(&op->data);
	op->t0 = blb_now();
	return b->t->ops->read(b->t, op, len);
}

static bool may_start(struct bench *b, double now)
{
	if (blb_stop || b->failed)
		return false;
	if (b->o->seconds && now >= b->end)
		return false;
	switch (b->mode) {
	case BLB_WRITE:
		if (b->max_ops && (uint64_t)b->st.started >= b->max_ops)
			return false;
		if ((uint64_t)b->st.started >= b->cap_ops) {
			b->capped = true;
			return false;
		}
		return b->st.started < INT_MAX;
	case BLB_SEQ:
		return (uint64_t)b->st.started < b->num_ops;
	default:
		return b->num_ops > 0 && b->st.started < INT_MAX;
	}
}

static int start_op(struct bench *b, struct blb_op *op)
{
	int r;

	switch (b->mode) {
	case BLB_WRITE:
		op->index = (uint64_t)b->st.started;
		r = start_write(b, op);
		break;
	case BLB_SEQ:
		op->index = (uint64_t)b->st.started;
		r = start_read(b, op);
		break;
	default:
		op->index = xorshift(&b->rng) % b->num_ops;
		r = start_read(b, op);
		break;
	}
	if (r < 0) {
		fprintf(stderr, "blbench: cannot start %s of %s: %s\n",
			b->mode == BLB_WRITE ? "a write" : "a read", op->name,
			strerror(-r));
		b->failed = r;
		return r;
	}
	op->busy = true;
	b->st.started++;
	b->st.in_flight++;
	return 0;
}

/* First byte of @l from @off on that differs from @want, or -1. */
static long long first_diff(const struct bl_list *l, size_t off,
			    const unsigned char *want, size_t len)
{
	struct bl_iter it;
	size_t pos = 0;

	if (bl_iter_init(&it, l, off) < 0)
		return 0;
	while (pos < len) {
		const char *p;
		size_t n = bl_iter_get_ptr_and_advance(&it, len - pos, &p);

		if (n == 0)
			return (long long)pos;
		if (memcmp(p, want + pos, n)) {
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)p[i] != want[pos + i])
					return (long long)(pos + i);
		}
		pos += n;
	}
	return -1;
}

/*
 * 0 when op @op read back what write stored; else why not in @why.
 * @full: compare the body with the pattern; without it only the header
 * and (--crc) the body's crc32c are checked.
 */
static int verify(struct bench *b, struct blb_op *op, bool full, char *why,
		  size_t len)
{
	const unsigned char *want =
		(const unsigned char *)bl_raw_data(b->pattern) +
		pattern_off(b, op->index);
	struct bl_list body, plain;
	unsigned char raw[HDR_MIN];
	struct op_hdr h;
	size_t got = bl_list_length(&op->data);
	long long d;
	int r = -1;

	if (got < b->hdr) {
		snprintf(why, len, "op %" PRIu64 ": %zu bytes, not %zu", op->index,
			 got, (size_t)b->stride);
		return -1;
	}
	bl_list_copy_out(&op->data, 0, HDR_MIN, raw);
	if (decode_hdr(raw, &h) < 0) {
		snprintf(why, len, "op %" PRIu64 ": the header is damaged",
			 op->index);
		return -1;
	}
	if (h.index != op->index || h.objno != op->objno ||
	    h.seed != b->seed || h.op_size != b->op_size ||
	    h.flags != b->flags) {
		snprintf(why, len,
			 "op %" PRIu64 ": the header is op %" PRIu64 " of object %" PRIu64 " of another layout or run",
			 op->index, h.index, h.objno);
		return -1;
	}
	if (h.stored > got - b->hdr) {
		snprintf(why, len, "op %" PRIu64 ": %zu bytes, the header says %zu",
			 op->index, got, (size_t)(b->hdr + h.stored));
		return -1;
	}
	bl_list_init(&body);
	bl_list_init(&plain);
	if (bl_list_substr_of(&body, &op->data, b->hdr, h.stored) < 0) {
		snprintf(why, len, "out of memory");
		goto out;
	}
	if (b->flags & FLAG_LZ4) {
		ssize_t n = bl_lz4_decompress(&body, &plain, b->body_len);

		if (n != (ssize_t)b->body_len) {
			snprintf(why, len, "op %" PRIu64 ": lz4: %s", op->index,
				 n < 0 ? strerror((int)-n) : "wrong length");
			goto out;
		}
	} else {
		bl_list_swap(&plain, &body);
	}
	if (bl_list_length(&plain) != b->body_len) {
		snprintf(why, len, "op %" PRIu64 ": body of %zu bytes, not %zu",
			 op->index, bl_list_length(&plain), b->body_len);
		goto out;
	}
	d = full ? first_diff(&plain, 0, want, b->body_len) : -1;
	if (d >= 0) {
		snprintf(why, len, "op %" PRIu64 ": byte %llu of the op differs",
			 op->index,
			 (unsigned long long)(d + (long long)b->hdr));
		goto out;
	}
	if ((b->flags & FLAG_CRC) &&
	    bl_list_crc32c(&plain, 0xFFFFFFFF) != h.body_crc) {
		snprintf(why, len, "op %" PRIu64 ": crc32c mismatch", op->index);
		goto out;
	}
	r = 0;
out:
	bl_list_clear(&body);
	bl_list_clear(&plain);
	return r;
}

static void finish_op(struct bench *b, struct blb_op *op, double now)
{
	char why[256];

	op->busy = false;
	if (op->res < 0) {
		if (!b->failed)
			fprintf(stderr, "blbench: %s %s: %s\n",
				b->mode == BLB_WRITE ? "writing" : "reading",
				op->name, strerror((int)-op->res));
		if (!b->failed)
			b->failed = (int)op->res;
		b->st.in_flight--;
		bl_list_clear(&op->data);
		return;
	}
	blb_stats_op_done(&b->st, op->lat);
	if (b->mode != BLB_WRITE) {
		bool full = b->o->verify;

		/* --no-verify skips the comparison, not a stored crc */
		if ((full || (b->flags & FLAG_CRC)) &&
		    verify(b, op, full, why, sizeof(why)) < 0) {
			/* rados bench's words first, for those who grep them */
			fprintf(stderr, "%s is not correct! (%s)\n", op->name,
				why);
			b->bad++;
		}
		bl_list_clear(&op->data);
	}
	if (may_start(b, now))
		start_op(b, op);
}

/* The loop all three modes share: rados bench's, on one thread. */
static double run_loop(struct bench *b)
{
	struct blb_stats *s = &b->st;
	struct blb_op *op;
	double now, next_tick;
	unsigned i;

	s->start = blb_now();
	b->end = s->start + b->o->seconds;
	blb_out_datas_begin(&b->out);
	blb_stats_tick(s, &b->out, s->start);
	next_tick = s->start + 1;
	for (i = 0; i < b->nops && may_start(b, s->start); i++)
		if (start_op(b, &b->ops[i]) < 0)
			break;
	while (s->in_flight > 0) {
		int r, timeout;

		now = blb_now();
		if (now >= next_tick) {
			blb_stats_tick(s, &b->out, now);
			next_tick += 1;
			continue;
		}
		timeout = (int)((next_tick - now) * 1000) + 1;
		r = b->t->ops->poll(b->t, timeout);
		if (r < 0 && r != -EINTR && r != -ETIME && r != -EAGAIN) {
			fprintf(stderr, "blbench: %s: %s\n", b->t->desc,
				strerror(-r));
			b->failed = r;
			break;	/* the ops stay with the target until it closes */
		}
		now = blb_now();
		while ((op = pop_done(b)))
			finish_op(b, op, now);
	}
	now = blb_now();
	blb_out_datas_end(&b->out);
	blb_stats_final_sample(s, now);
	return now - s->start;
}

/* ---- metadata ------------------------------------------------------------------ */

static int meta_encode(const struct bench *b, uint32_t num_ops,
		       struct bl_list *m)
{
	int r = 0;
	uint32_t crc;

	r |= bl_encode_u64(m, b->object_size);		/* rados bench's four */
	r |= bl_encode_u32(m, num_ops);
	r |= bl_encode_u32(m, (uint32_t)b->pid);
	r |= bl_encode_u64(m, b->op_size);
	r |= bl_encode_u32(m, META_MAGIC);		/* then blbench's */
	r |= bl_encode_u32(m, META_VERSION);
	r |= bl_encode_bytes(m, b->prefix, strlen(b->prefix));
	r |= bl_encode_u32(m, b->flags);
	r |= bl_encode_u32(m, (uint32_t)b->hdr);
	r |= bl_encode_u64(m, b->unit);
	r |= bl_encode_u32(m, (uint32_t)b->nvar);
	r |= bl_encode_u64(m, b->stride);
	r |= bl_encode_u64(m, b->seed);
	if (r)
		return -ENOMEM;
	crc = bl_list_crc32c(m, 0xFFFFFFFF);
	return bl_encode_u32(m, crc);
}

static int meta_decode(struct bench *b, const struct bl_list *m)
{
	struct bl_list pfx, head;
	uint32_t num_ops, pid, magic, ver, hdr, nvar, crc;
	uint64_t unit;
	struct bl_iter it;
	size_t len = bl_list_length(m);
	int r = 0;

	if (len < 4)
		return -EBADMSG;
	bl_list_init(&head);
	if (bl_list_substr_of(&head, m, 0, len - 4) < 0)
		return -ENOMEM;
	crc = bl_list_crc32c(&head, 0xFFFFFFFF);
	bl_list_clear(&head);
	bl_list_init(&pfx);
	bl_iter_init(&it, m, 0);
	r |= bl_decode_u64(&it, &b->object_size);
	r |= bl_decode_u32(&it, &num_ops);
	r |= bl_decode_u32(&it, &pid);
	r |= bl_decode_u64(&it, &b->op_size);
	r |= bl_decode_u32(&it, &magic);
	r |= bl_decode_u32(&it, &ver);
	if (r || magic != META_MAGIC || ver != META_VERSION)
		return -EBADMSG;
	r |= bl_decode_bytes(&it, &pfx);
	r |= bl_decode_u32(&it, &b->flags);
	r |= bl_decode_u32(&it, &hdr);
	r |= bl_decode_u64(&it, &unit);
	r |= bl_decode_u32(&it, &nvar);
	r |= bl_decode_u64(&it, &b->stride);
	r |= bl_decode_u64(&it, &b->seed);
	if (!r) {
		uint32_t want;

		r = bl_decode_u32(&it, &want);
		if (!r && want != crc)
			r = -EBADMSG;
	}
	if (!r && (bl_list_length(&pfx) >= sizeof(b->prefix) ||
		   b->op_size < HDR_MIN || b->op_size > MAX_OP_SIZE ||
		   b->object_size < b->op_size || hdr < HDR_MIN ||
		   hdr > b->op_size || b->stride < b->op_size ||
		   unit < b->op_size - hdr || unit % 64 || nvar == 0 ||
		   unit > 2 * MAX_OP_SIZE ||
		   (nvar - 1) * unit + b->op_size > PATTERN_MAX + MAX_OP_SIZE ||
		   b->stride > 2 * MAX_OP_SIZE))
		r = -EBADMSG;
	if (!r) {
		bl_list_copy_out(&pfx, 0, bl_list_length(&pfx), b->prefix);
		b->prefix[bl_list_length(&pfx)] = 0;
		b->num_ops = num_ops;
		b->pid = (int)pid;
		b->hdr = hdr;
		b->unit = unit;
		b->nvar = nvar;
	}
	bl_list_clear(&pfx);
	return r ? -EBADMSG : 0;
}

/* Reads the metadata of the last write; prints why not. */
static int load_meta(struct bench *b)
{
	struct bl_list m;
	int r;

	bl_list_init(&m);
	r = b->t->ops->meta_get(b->t, b->o->run_name, &m);
	if (r == 0)
		r = meta_decode(b, &m);
	bl_list_clear(&m);
	if (r == -ENOENT)
		return r;
	if (r < 0)
		fprintf(stderr, "blbench: %s in %s: %s\n", b->o->run_name,
			b->t->desc,
			r == -EBADMSG ? "not blbench's metadata, or damaged"
				      : strerror(-r));
	return r;
}

/* ---- modes ---------------------------------------------------------------------- */

static int alloc_ops(struct bench *b, unsigned n)
{
	b->nops = n;
	b->ops = calloc(n, sizeof(*b->ops));
	if (!b->ops)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		b->ops[i].bench = b;
		b->ops[i].fd = -1;
		bl_list_init(&b->ops[i].data);
	}
	b->done_head = NULL;
	b->done_tail = &b->done_head;
	return 0;
}

static void free_ops(struct bench *b)
{
	for (unsigned i = 0; i < b->nops; i++)
		bl_list_clear(&b->ops[i].data);
	free(b->ops);
	b->ops = NULL;
}

static void make_prefix(struct bench *b)
{
	char host[256];

	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	snprintf(b->prefix, sizeof(b->prefix), "%s_%.100s_%d", BLB_PREFIX,
		 host, b->pid);
}

/* Removes objects 0..@nobj-1 and the metadata; rados bench's messages. */
static int remove_objects(struct bench *b, uint64_t nobj, bool meta)
{
	double t0 = blb_now();
	uint64_t removed = 0, n;
	char name[BLB_NAME_MAX];
	int r, err = 0;

	fprintf(stderr, "Cleaning up (deleting benchmark objects)\n");
	for (n = 0; n < nobj; n++) {
		op_name(b, n, name, sizeof(name));
		r = b->t->ops->remove(b->t, name, n);
		if (r == 0)
			removed++;
		else if (r != -ENOENT && !err) {
			fprintf(stderr, "blbench: removing %s: %s\n", name,
				strerror(-r));
			err = r;
		}
	}
	fprintf(stderr, "Removed %" PRIu64 " object%s\n", removed,
		removed != 1 ? "s" : "");
	fprintf(stderr, "Clean up completed and total clean up time :%g\n",
		blb_now() - t0);
	if (meta && !err) {
		r = b->t->ops->meta_del(b->t, b->o->run_name);
		if (r < 0 && r != -ENOENT)
			err = r;
	}
	return err;
}

static int write_plot(struct bench *b, double time_run)
{
	int r;

	if (!b->o->plot)
		return 0;
	r = blb_plot_svg(b->o->plot, &b->st, b->o->cmdline, time_run);
	if (r < 0)
		fprintf(stderr, "blbench: cannot write %s: %s\n", b->o->plot,
			strerror(-r));
	return r;
}

static void print_stored(struct bench *b)
{
	double ratio;

	if (!(b->flags & FLAG_LZ4) || !b->st.finished)
		return;
	ratio = b->st.logical_bytes ? (double)b->st.stored_bytes /
					      b->st.logical_bytes
				    : 0;
	if (b->out.json) {
		blb_out_kv(&b->out, "stored_bytes", "%llu",
			   (unsigned long long)b->st.stored_bytes);
		blb_out_kv(&b->out, "stored_ratio", "%f", ratio);
	} else {
		printf("Stored bytes (lz4):     %llu (%.3f of the logical bytes)\n",
		       (unsigned long long)b->st.stored_bytes, ratio);
	}
}

static int do_write(struct bench *b)
{
	const struct blb_opts *o = b->o;
	struct blb_target *t = b->t;
	uint64_t per_op, room_ops, need;
	struct bl_list m;
	double time_run;
	int r;

	b->op_size = o->op_size;
	b->object_size = o->object_size;
	b->opo = o->object_size / o->op_size;
	b->flags = (o->crc ? FLAG_CRC : 0) | (o->lz4 ? FLAG_LZ4 : 0);
	b->hdr = HDR_MIN;
	if (t->off_align > b->hdr)
		b->hdr = t->off_align;
	if (t->off_align > 1 && o->op_size % t->off_align) {
		fprintf(stderr, "blbench: with --direct on %s, -b must be a multiple of %zu\n",
			t->desc, t->off_align);
		return BLB_EXIT_FAIL;
	}
	if (b->hdr > o->op_size) {
		fprintf(stderr, "blbench: -b must be at least %zu on %s\n",
			b->hdr, t->desc);
		return BLB_EXIT_FAIL;
	}
	b->body_len = o->op_size - b->hdr;
	b->halign = t->mem_align > 64 ? t->mem_align : 64;
	b->stride = o->op_size;
	if (b->flags & FLAG_LZ4)	/* lz4's worst case, with frame overhead */
		b->stride = align_up(b->hdr + b->body_len + b->body_len / 255 +
					     1024,
				     t->off_align > 1 ? t->off_align : 64);
	b->pid = getpid();
	b->seed = ((uint64_t)b->pid << 32) ^
		  (uint64_t)(blb_now() * 1e9) ^ 0x9E3779B97F4A7C15ULL;
	make_prefix(b);

	/* Room: every op costs its stride, in whole 4 KiB blocks on a filesystem. */
	per_op = t->slots ? b->stride : align_up(b->stride, 4096);
	if (t->slots) {
		t->obj_span = align_up(b->opo * b->stride,
				       t->off_align > 4096 ? t->off_align : 4096);
		room_ops = t->room / t->obj_span * b->opo;
	} else {
		room_ops = t->room / per_op;
	}
	b->max_ops = o->max_objects * b->opo;
	need = o->concurrent;
	if (b->max_ops && b->max_ops < need)
		need = b->max_ops;
	if (room_ops < need) {
		fprintf(stderr, "blbench: not enough room on %s: %llu MiB usable, %llu op%s of %llu bytes need %llu MiB\n",
			t->desc, (unsigned long long)(t->room >> 20),
			(unsigned long long)need, need == 1 ? "" : "s",
			(unsigned long long)per_op,
			(unsigned long long)((need * per_op + (1 << 20) - 1) >> 20));
		return BLB_EXIT_FAIL;
	}
	b->cap_ops = room_ops;
	plan_pattern(b, o->concurrent);
	if (make_pattern(b) < 0 || alloc_ops(b, o->concurrent) < 0) {
		fprintf(stderr, "blbench: out of memory\n");
		return BLB_EXIT_FAIL;
	}

	blb_stats_init(&b->st, b->op_size, b->object_size, false);
	blb_out_open(&b->out);
	blb_out_write_intro(&b->out, o, b->prefix);
	time_run = run_loop(b);
	b->st.logical_bytes = (uint64_t)b->st.finished * b->op_size;

	if (b->failed) {
		blb_out_close(&b->out);
		/* no metadata for a failed run: take back what it wrote */
		if (o->cleanup && b->st.in_flight == 0)
			remove_objects(b, ((uint64_t)b->st.started + b->opo - 1) /
						  b->opo,
				       false);
		return BLB_EXIT_FAIL;
	}
	blb_out_summary(&b->out, &b->st, time_run);
	print_stored(b);
	blb_out_close(&b->out);
	if (b->capped)
		fprintf(stderr, "blbench: stopped after %d ops: %s has no room for more\n",
			b->st.started, t->desc);

	bl_list_init(&m);
	r = meta_encode(b, (uint32_t)b->st.finished, &m);
	if (r == 0)
		r = t->ops->meta_put(t, o->run_name, &m);
	bl_list_clear(&m);
	if (r < 0) {
		fprintf(stderr, "blbench: writing %s to %s: %s\n", o->run_name,
			t->desc, strerror(-r));
		return BLB_EXIT_FAIL;
	}
	if (write_plot(b, time_run) < 0)
		r = -1;
	if (o->cleanup &&
	    remove_objects(b, (b->st.finished + b->opo - 1) / b->opo, true) < 0)
		r = -1;
	return r < 0 ? BLB_EXIT_FAIL : 0;
}

static int do_read(struct bench *b)
{
	const struct blb_opts *o = b->o;
	struct blb_target *t = b->t;
	double time_run;
	int r;

	r = load_meta(b);
	if (r == -ENOENT)
		fprintf(stderr, "Must write data before running a read benchmark!\n");
	if (r < 0)
		return BLB_EXIT_FAIL;
	b->opo = b->object_size / b->op_size;
	b->body_len = b->op_size - b->hdr;
	if (t->off_align > 1 &&
	    (b->stride % t->off_align || b->hdr % t->off_align)) {
		fprintf(stderr, "blbench: %s was written without --direct's alignment (%zu); read it without --direct\n",
			o->run_name, t->off_align);
		return BLB_EXIT_FAIL;
	}
	if (t->slots)
		t->obj_span = align_up(b->opo * b->stride,
				       t->off_align > 4096 ? t->off_align : 4096);
	b->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)(blb_now() * 1e9) ^ 1;
	if (make_pattern(b) < 0 || alloc_ops(b, o->concurrent) < 0) {
		fprintf(stderr, "blbench: out of memory\n");
		return BLB_EXIT_FAIL;
	}
	blb_stats_init(&b->st, b->op_size, b->object_size, true);
	blb_out_open(&b->out);
	time_run = run_loop(b);
	if (b->failed) {
		blb_out_close(&b->out);
		return BLB_EXIT_FAIL;
	}
	blb_out_summary(&b->out, &b->st, time_run);
	blb_out_close(&b->out);
	r = write_plot(b, time_run);
	if (b->bad) {
		fprintf(stderr, "blbench: %u read%s did not return what write stored\n",
			b->bad, b->bad != 1 ? "s" : "");
		return BLB_EXIT_FAIL;
	}
	return r < 0 ? BLB_EXIT_FAIL : 0;
}

static int remove_by_name(void *arg, const char *name)
{
	struct bench *b = arg;
	int r = b->t->ops->remove(b->t, name, UINT64_MAX);

	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "blbench: removing %s: %s\n", name, strerror(-r));
		return r;
	}
	if (r == 0)
		b->num_ops++;	/* counts removals here */
	return 0;
}

static int do_cleanup(struct bench *b)
{
	const struct blb_opts *o = b->o;
	char prefix[BLB_NAME_MAX];
	int r;

	r = load_meta(b);
	if (r < 0 && r != -ENOENT)
		return BLB_EXIT_FAIL;
	if (r == 0) {
		b->opo = b->object_size / b->op_size;
		r = remove_objects(b, (b->num_ops + b->opo - 1) / b->opo, true);
		if (r < 0)
			return BLB_EXIT_FAIL;
		if (!o->prefix)
			return 0;
	}
	/* rados bench's slow path: everything named PREFIX* */
	if (o->prefix) {
		if (strncmp(o->prefix, BLB_PREFIX, strlen(BLB_PREFIX))) {
			fprintf(stderr, "Specified --prefix invalid, it must begin with \"%s\"\n",
				BLB_PREFIX);
			return BLB_EXIT_FAIL;
		}
		snprintf(prefix, sizeof(prefix), "%s", o->prefix);
	} else {
		char host[256];

		if (gethostname(host, sizeof(host)) < 0)
			strcpy(host, "localhost");
		host[sizeof(host) - 1] = 0;
		snprintf(prefix, sizeof(prefix), "%s_%.100s", BLB_PREFIX, host);
	}
	if (!b->t->ops->list) {
		fprintf(stderr, "blbench: %s has no %s; nothing to clean up\n",
			b->t->desc, o->run_name);
		return 0;
	}
	fprintf(stderr, "Warning: using slow linear search\n");
	b->num_ops = 0;
	r = b->t->ops->list(b->t, prefix, remove_by_name, b);
	fprintf(stderr, "Removed %" PRIu64 " object%s\n", b->num_ops,
		b->num_ops != 1 ? "s" : "");
	if (r < 0) {
		fprintf(stderr, "blbench: listing %s: %s\n", b->t->desc,
			strerror(-r));
		return BLB_EXIT_FAIL;
	}
	return 0;
}

static void on_signal(int sig)
{
	(void)sig;
	blb_stop = 1;
}

static void install_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;	/* no SA_RESTART: waits return early */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* a closed peer is an error, not a death */
}

int main(int argc, char **argv)
{
	struct blb_opts o;
	struct bench b;
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
	blb_out_init(&b.out, stdout, o.json, o.show_time);
	r = blb_target_open(&b.t, o.target, &o, o.mode == BLB_WRITE, err,
			    sizeof(err));
	if (r < 0) {
		fprintf(stderr, "blbench: %s\n", err);
		return BLB_EXIT_FAIL;
	}
	switch (o.mode) {
	case BLB_WRITE:
		r = do_write(&b);
		break;
	case BLB_SEQ:
	case BLB_RAND:
		r = do_read(&b);
		break;
	default:
		r = do_cleanup(&b);
		break;
	}
	/* closing the target completes (or cancels) what is still in flight */
	blb_target_close(b.t);
	while (pop_done(&b))
		;
	free_ops(&b);
	bl_raw_put(b.pattern);
	blb_stats_free(&b.st);
	return r;
}
