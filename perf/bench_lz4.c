/* SPDX-License-Identifier: MIT */
/*
 * bench_lz4.c - LZ4 frames of segmented lists against liblz4 on one
 * contiguous buffer, in the same process, on the same bytes.
 *
 * The input is a realistic mix: regions of 16..256 KiB, three in four of
 * them text (JSON-ish lines made of words and numbers, about 3:1), the
 * others random bytes (incompressible), interleaved.  It is held three
 * ways: one contiguous buffer (the baselines), a list of 4 KiB segments
 * (what a socket or a page cache gives) and a list of 1 MiB segments,
 * each segment its own raw.
 *
 * Workloads (MB/s of uncompressed bytes, 10^6 bytes per second):
 *   compress   LZ4_compress_default (one block) and LZ4F_compressFrame
 *              (default preferences: 64 KiB linked blocks) on the buffer;
 *              bl_lz4_compress (NULL options, the same frame options)
 *              on each list; the same with a content checksum against
 *              LZ4F with one;
 *   decompress LZ4_decompress_safe and LZ4F_decompress on the buffer;
 *              bl_lz4_decompress of our frame held as 4 KiB and 1 MiB
 *              segments; the streaming decoder fed 64 KiB lists of 4 KiB
 *              segments; the checksummed frames.
 * Baselines write into a buffer allocated once; our output raws are made
 * in the timed region and freed outside it (run with the heap kept, see
 * perf/run-lz4.sh, so that neither side measures page faults).
 *
 * Every round runs every workload once, in an order that rotates from
 * round to round; the table gives medians (and the min..max spread).
 * Time is the thread's CPU time by default (the machines we share have
 * two vCPUs and other jobs: a descheduled thread is not a slower codec);
 * -w uses the wall clock instead.
 *
 * Usage: bench_lz4 [-r ROUNDS] [-m MiB] [-w]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <lz4.h>
#include <lz4frame.h>
#include <bufferlist.h>
#include <bufferlist/lz4.h>

#define KiB ((size_t)1 << 10)
#define MiB ((size_t)1 << 20)

static clockid_t clk = CLOCK_THREAD_CPUTIME_ID;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, long v)
{
	fprintf(stderr, "bench_lz4: %s (%ld)\n", what, v);
	exit(2);
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

static const char *const words[] = {
	"the", "object", "bucket", "storage", "placement", "group", "osd",
	"monitor", "latency", "throughput", "request", "reply", "error",
	"client", "server", "message", "payload", "segment", "buffer", "list",
	"pointer", "reference", "count", "alpha", "beta", "gamma", "delta",
	"lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing",
	"elit", "sed", "eiusmod", "tempor", "incididunt", "labore", "dolore",
	"magna", "write", "read", "stat", "omap", "xattr", "snapshot",
};

static void gen_text(unsigned char *p, size_t n)
{
	size_t nw = sizeof(words) / sizeof(words[0]), i = 0;
	char line[512];

	while (i < n) {
		int k = snprintf(line, sizeof(line),
				 "{\"id\":%llu,\"name\":\"%s %s\",\"tags\":[\"%s\",\"%s\"],"
				 "\"size\":%u,\"text\":\"%s %s %s %s\"}\n",
				 (unsigned long long)(rnd() % 1000000),
				 words[rnd() % nw], words[rnd() % nw],
				 words[rnd() % nw], words[rnd() % nw],
				 (unsigned)(rnd() % 65536), words[rnd() % nw],
				 words[rnd() % nw], words[rnd() % nw],
				 words[rnd() % nw]);
		size_t c = (size_t)k < n - i ? (size_t)k : n - i;

		memcpy(p + i, line, c);
		i += c;
	}
}

static void gen_mix(unsigned char *p, size_t len)
{
	size_t off = 0;

	while (off < len) {
		size_t n = (16 + rnd() % 241) * KiB;

		if (n > len - off)
			n = len - off;
		if (rnd() % 4 == 0) {
			for (size_t i = 0; i < n; i += 8) {
				uint64_t r = rnd();

				memcpy(p + off + i, &r, n - i < 8 ? n - i : 8);
			}
		} else {
			gen_text(p + off, n);
		}
		off += n;
	}
}

/* A list of @seg-byte segments, each its own raw, holding a copy of @p. */
static void make_list(struct bl_list *l, const void *p, size_t len, size_t seg)
{
	const char *c = p;

	bl_list_init(l);
	while (len) {
		size_t n = len < seg ? len : seg;
		struct bl_ptr bp;

		if (bl_ptr_alloc(&bp, n))
			die("out of memory", 0);
		memcpy(bl_ptr_data(&bp), c, n);
		if (bl_list_append_ptr_move(l, &bp))
			die("out of memory", 0);
		c += n;
		len -= n;
	}
}

static unsigned char *flatten(const struct bl_list *l)
{
	size_t n = bl_list_length(l);
	unsigned char *p = malloc(n);

	if (!p || bl_list_copy_out(l, 0, n, p))
		die("flatten", 0);
	return p;
}

/* ---- the state every workload shares ------------------------------------- */

static size_t len;
static unsigned char *flat;
static struct bl_list seg4k, seg1m;
static char *dst;		/* baselines' output, allocated once */
static size_t dst_cap;
static char *blk;		/* LZ4_compress_default of flat */
static int blk_len;
static unsigned char *frm, *frm_cc;	/* LZ4F frames, plain and checksummed */
static size_t frm_len, frm_cc_len;
static struct bl_list ours4k, ours1m, ours_cc1m;	/* our frames */
static LZ4F_dctx *dctx;
static const struct bl_lz4_opts opts_cc = { 0, 4, false, true, false };

/* Result of one run: nanoseconds and the output size (for the ratio). */
struct run {
	uint64_t ns;
	size_t out;
	size_t in;	/* bytes compressed, when not the whole mix */
};

/*
 * Small messages: SMALL_N messages of SMALL_LEN bytes from the start of
 * the mix, each compressed as a frame of its own, as a messenger that
 * compresses every payload does.  Per call, liblz4's own functions set up
 * a fresh 16 KiB state (LZ4_compress_default through its extState,
 * LZ4F_compressFrame on its stack); ours reuses the thread's.
 */
#define SMALL_LEN 256
#define SMALL_N 65536
static struct bl_list small[SMALL_N];	/* one 256-byte slice each */

static struct run c_block(void)
{
	uint64_t t = now_ns();
	int n = LZ4_compress_default((const char *)flat, dst, (int)len,
				     (int)dst_cap);

	t = now_ns() - t;
	if (n <= 0)
		die("LZ4_compress_default", n);
	return (struct run){ t, (size_t)n, 0 };
}

static struct run c_lz4f_with(bool cc)
{
	LZ4F_preferences_t prefs;
	uint64_t t;
	size_t n;

	memset(&prefs, 0, sizeof(prefs));
	if (cc)
		prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
	t = now_ns();
	n = LZ4F_compressFrame(dst, dst_cap, flat, len, &prefs);
	t = now_ns() - t;
	if (LZ4F_isError(n))
		die("LZ4F_compressFrame", 0);
	return (struct run){ t, n, 0 };
}

static struct run c_lz4f(void)
{
	return c_lz4f_with(false);
}

static struct run c_lz4f_cc(void)
{
	return c_lz4f_with(true);
}

static struct run c_ours(const struct bl_list *in,
			 const struct bl_lz4_opts *o)
{
	struct bl_list out;
	uint64_t t;
	ssize_t n;

	bl_list_init(&out);
	t = now_ns();
	n = bl_lz4_compress(in, &out, o);
	t = now_ns() - t;
	if (n <= 0)
		die("bl_lz4_compress", (long)n);
	bl_list_clear(&out);
	return (struct run){ t, (size_t)n, 0 };
}

static struct run c_ours4k(void)
{
	return c_ours(&seg4k, NULL);
}

static struct run c_ours1m(void)
{
	return c_ours(&seg1m, NULL);
}

static struct run c_ours_cc1m(void)
{
	return c_ours(&seg1m, &opts_cc);
}

static struct run c_ours_cc4k(void)
{
	return c_ours(&seg4k, &opts_cc);
}

static struct run c_block_small(void)
{
	size_t out = 0;
	uint64_t t = now_ns();

	for (size_t i = 0; i < SMALL_N; i++) {
		int n = LZ4_compress_default((const char *)flat + i * SMALL_LEN,
					     dst, SMALL_LEN, (int)dst_cap);

		if (n <= 0)
			die("LZ4_compress_default", n);
		out += (size_t)n;
	}
	t = now_ns() - t;
	return (struct run){ t, out, (size_t)SMALL_N * SMALL_LEN };
}

static struct run c_lz4f_small(void)
{
	LZ4F_preferences_t prefs;
	size_t out = 0;
	uint64_t t;

	memset(&prefs, 0, sizeof(prefs));
	t = now_ns();
	for (size_t i = 0; i < SMALL_N; i++) {
		size_t n = LZ4F_compressFrame(dst, dst_cap,
					      flat + i * SMALL_LEN, SMALL_LEN,
					      &prefs);

		if (LZ4F_isError(n))
			die("LZ4F_compressFrame", 0);
		out += n;
	}
	t = now_ns() - t;
	return (struct run){ t, out, (size_t)SMALL_N * SMALL_LEN };
}

static struct run c_ours_small(void)
{
	struct bl_list o;
	size_t out = 0;
	uint64_t t;

	bl_list_init(&o);
	t = now_ns();
	for (size_t i = 0; i < SMALL_N; i++) {
		ssize_t n = bl_lz4_compress(&small[i], &o, NULL);

		if (n <= 0)
			die("bl_lz4_compress", (long)n);
		out += (size_t)n;
		/* a sender hands each frame on and drops it */
		bl_list_clear(&o);
	}
	t = now_ns() - t;
	return (struct run){ t, out, (size_t)SMALL_N * SMALL_LEN };
}

static struct run d_block(void)
{
	uint64_t t = now_ns();
	int n = LZ4_decompress_safe(blk, dst, blk_len, (int)dst_cap);

	t = now_ns() - t;
	if (n != (int)len || memcmp(dst, flat, 4096))
		die("LZ4_decompress_safe", n);
	return (struct run){ t, (size_t)blk_len, 0 };
}

static struct run d_lz4f_of(const unsigned char *f, size_t flen)
{
	size_t in = flen, out = dst_cap, r;
	uint64_t t;

	LZ4F_resetDecompressionContext(dctx);
	t = now_ns();
	r = LZ4F_decompress(dctx, dst, &out, f, &in, NULL);
	t = now_ns() - t;
	if (r != 0 || out != len || in != flen)
		die("LZ4F_decompress", (long)r);
	return (struct run){ t, flen, 0 };
}

static struct run d_lz4f(void)
{
	return d_lz4f_of(frm, frm_len);
}

static struct run d_lz4f_cc(void)
{
	return d_lz4f_of(frm_cc, frm_cc_len);
}

static struct run d_ours(const struct bl_list *in)
{
	struct bl_list out;
	uint64_t t;
	ssize_t n;

	bl_list_init(&out);
	t = now_ns();
	n = bl_lz4_decompress(in, &out, 0);
	t = now_ns() - t;
	if (n != (ssize_t)len)
		die("bl_lz4_decompress", (long)n);
	bl_list_clear(&out);
	return (struct run){ t, bl_list_length(in), 0 };
}

static struct run d_ours4k(void)
{
	return d_ours(&ours4k);
}

static struct run d_ours1m(void)
{
	return d_ours(&ours1m);
}

static struct run d_ours_cc1m(void)
{
	return d_ours(&ours_cc1m);
}

/* The streaming decoder fed 64 KiB pieces (lists of 16 x 4 KiB). */
static struct run d_stream4k(void)
{
	struct bl_lz4_decoder *d;
	struct bl_list out, piece;
	size_t total = 0, flen = bl_list_length(&ours4k);
	uint64_t t, spent = 0;

	bl_list_init(&out);
	bl_list_init(&piece);
	d = bl_lz4_decoder_new(0);
	if (!d)
		die("bl_lz4_decoder_new", 0);
	for (size_t off = 0; off < flen; off += 64 * KiB) {
		size_t n = flen - off < 64 * KiB ? flen - off : 64 * KiB;
		ssize_t r;

		/* cutting the pieces out is the test's business, not timed */
		if (bl_list_substr_of(&piece, &ours4k, off, n))
			die("substr", 0);
		t = now_ns();
		r = bl_lz4_decoder_feed(d, &piece, &out);
		spent += now_ns() - t;
		if (r < 0)
			die("bl_lz4_decoder_feed", (long)r);
		total += (size_t)r;
		/* a consumer takes the output away as it comes */
		bl_list_clear(&out);
	}
	if (bl_lz4_decoder_end(d) || total != len)
		die("bl_lz4_decoder_end", (long)total);
	bl_lz4_decoder_free(d);
	bl_list_clear(&piece);
	return (struct run){ spent, flen, 0 };
}

struct workload {
	const char *name;
	const char *what;
	struct run (*fn)(void);
	int base;	/* index of the baseline row, -1 for a baseline */
	int base2;	/* the frame-level baseline, -1 if none */
	double mbs[64];
	size_t out, in;
};

#define W(n, w, f, b, b2) { .name = n, .what = w, .fn = f, .base = b, .base2 = b2 }
static struct workload wl[] = {
	W("c_block", "LZ4_compress_default, contiguous", c_block, -1, -1),
	W("c_lz4f", "LZ4F_compressFrame, contiguous", c_lz4f, -1, -1),
	W("c_ours_4k", "bl_lz4_compress, 4 KiB segments", c_ours4k, 0, 1),
	W("c_ours_1m", "bl_lz4_compress, 1 MiB segments", c_ours1m, 0, 1),
	W("c_lz4f_cc", "LZ4F_compressFrame +content checksum", c_lz4f_cc, -1, -1),
	W("c_ours_cc_4k", "bl_lz4_compress +checksum, 4 KiB", c_ours_cc4k, 0, 4),
	W("c_ours_cc_1m", "bl_lz4_compress +checksum, 1 MiB", c_ours_cc1m, 0, 4),
	W("d_block", "LZ4_decompress_safe, contiguous", d_block, -1, -1),
	W("d_lz4f", "LZ4F_decompress, contiguous", d_lz4f, -1, -1),
	W("d_ours_4k", "bl_lz4_decompress, 4 KiB segments", d_ours4k, 7, 8),
	W("d_ours_1m", "bl_lz4_decompress, 1 MiB segments", d_ours1m, 7, 8),
	W("d_stream_4k", "decoder_feed, 64 KiB feeds of 4 KiB", d_stream4k, 7, 8),
	W("d_lz4f_cc", "LZ4F_decompress +content checksum", d_lz4f_cc, -1, -1),
	W("d_ours_cc_1m", "bl_lz4_decompress +checksum, 1 MiB", d_ours_cc1m, 7, 12),
	W("c_block_256", "LZ4_compress_default, 256 B messages", c_block_small, -1, -1),
	W("c_lz4f_256", "LZ4F_compressFrame, 256 B messages", c_lz4f_small, -1, -1),
	W("c_ours_256", "bl_lz4_compress, 256 B messages", c_ours_small, 14, 15),
};
#define NWL (sizeof(wl) / sizeof(wl[0]))

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	double s[64];

	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static double vmin(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] < m ? v[i] : m;
	return m;
}

static double vmax(const double *v, int n)
{
	double m = v[0];

	for (int i = 1; i < n; i++)
		m = v[i] > m ? v[i] : m;
	return m;
}

int main(int argc, char **argv)
{
	int rounds = 5, opt;
	size_t mib = 256;
	struct bl_list tmp;

	while ((opt = getopt(argc, argv, "r:m:w")) != -1) {
		switch (opt) {
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'm':
			mib = (size_t)atol(optarg);
			break;
		case 'w':
			clk = CLOCK_MONOTONIC;
			break;
		default:
			fprintf(stderr, "usage: %s [-r ROUNDS] [-m MiB] [-w]\n",
				argv[0]);
			return 1;
		}
	}
	if (rounds < 1 || rounds > 64 || !mib || mib > 1024) {
		fprintf(stderr, "%s: 1..64 rounds, 1..1024 MiB\n", argv[0]);
		return 1;
	}
	len = mib * MiB;

	/* inputs */
	flat = malloc(len);
	if (!flat)
		die("out of memory", 0);
	gen_mix(flat, len);
	make_list(&seg4k, flat, len, 4 * KiB);
	make_list(&seg1m, flat, len, MiB);
	dst_cap = (size_t)LZ4F_compressFrameBound(len, NULL) + MiB;
	dst = malloc(dst_cap);
	if (!dst)
		die("out of memory", 0);
	memset(dst, 0, dst_cap);	/* fault it in once */

	/* compressed forms for the decompression workloads */
	blk = malloc((size_t)LZ4_compressBound((int)len));
	blk_len = LZ4_compress_default((const char *)flat, blk, (int)len,
				       LZ4_compressBound((int)len));
	if (blk_len <= 0)
		die("LZ4_compress_default", blk_len);
	{
		LZ4F_preferences_t prefs;

		memset(&prefs, 0, sizeof(prefs));
		frm = malloc(dst_cap);
		frm_len = LZ4F_compressFrame(frm, dst_cap, flat, len, &prefs);
		prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
		frm_cc = malloc(dst_cap);
		frm_cc_len = LZ4F_compressFrame(frm_cc, dst_cap, flat, len,
						&prefs);
		if (LZ4F_isError(frm_len) || LZ4F_isError(frm_cc_len))
			die("LZ4F_compressFrame", 0);
	}
	if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx, LZ4F_VERSION)))
		die("LZ4F_createDecompressionContext", 0);
	bl_list_init(&tmp);
	if (bl_lz4_compress(&seg1m, &tmp, NULL) <= 0)
		die("bl_lz4_compress", 0);
	{
		unsigned char *f = flatten(&tmp);

		make_list(&ours4k, f, bl_list_length(&tmp), 4 * KiB);
		make_list(&ours1m, f, bl_list_length(&tmp), MiB);
		free(f);
	}
	bl_list_clear(&tmp);
	if (bl_lz4_compress(&seg1m, &tmp, &opts_cc) <= 0)
		die("bl_lz4_compress", 0);
	{
		unsigned char *f = flatten(&tmp);

		make_list(&ours_cc1m, f, bl_list_length(&tmp), MiB);
		free(f);
	}
	bl_list_clear(&tmp);
	if (len < (size_t)SMALL_N * SMALL_LEN)
		die("-m too small for the 256 B message workloads", (long)mib);
	for (size_t i = 0; i < SMALL_N; i++) {
		bl_list_init(&small[i]);
		if (bl_list_substr_of(&small[i], &seg1m, i * SMALL_LEN,
				      SMALL_LEN))
			die("substr", 0);
	}

	printf("# bench_lz4: %zu MiB mix (3/4 JSON-ish text, 1/4 random, in 16-256 KiB regions), "
	       "%d rounds, %s time, medians\n",
	       mib, rounds,
	       clk == CLOCK_MONOTONIC ? "wall-clock" : "thread CPU");
	fflush(stdout);
	for (int r = 0; r < rounds; r++) {
		for (size_t k = 0; k < NWL; k++) {
			struct workload *w = &wl[(k + (size_t)r * 3) % NWL];
			struct run res = w->fn();

			w->in = res.in ? res.in : len;
			w->mbs[r] = (double)w->in / ((double)res.ns / 1e9) / 1e6;
			w->out = res.out;
		}
		fprintf(stderr, "round %d/%d done\n", r + 1, rounds);
	}

	printf("\n| workload | MB/s (median) | min..max | vs block API | vs LZ4F | compressed/original |\n");
	printf("|---|---:|---:|---:|---:|---:|\n");
	for (size_t k = 0; k < NWL; k++) {
		struct workload *w = &wl[k];
		double m = median(w->mbs, rounds);
		char vb[32] = "", vf[32] = "";

		if (w->base >= 0)
			snprintf(vb, sizeof(vb), "%.1f%%",
				 100.0 * m / median(wl[w->base].mbs, rounds));
		if (w->base2 >= 0)
			snprintf(vf, sizeof(vf), "%.1f%%",
				 100.0 * m / median(wl[w->base2].mbs, rounds));
		printf("| %s | %.0f | %.0f..%.0f | %s | %s | %.4f |\n", w->what,
		       m, vmin(w->mbs, rounds), vmax(w->mbs, rounds), vb, vf,
		       (double)w->out / (double)w->in);
	}

	bl_list_clear(&seg4k);
	bl_list_clear(&seg1m);
	bl_list_clear(&ours4k);
	bl_list_clear(&ours1m);
	bl_list_clear(&ours_cc1m);
	for (size_t i = 0; i < SMALL_N; i++)
		bl_list_clear(&small[i]);
	LZ4F_freeDecompressionContext(dctx);
	free(flat);
	free(dst);
	free(blk);
	free(frm);
	free(frm_cc);
	return 0;
}
