/* SPDX-License-Identifier: MIT */
/*
 * test_lz4.c - LZ4 frames from and to lists: round trips over every option
 * and segmentation, the streaming decoder, interoperability with the `lz4`
 * command in both directions, every kind of bad input (and mutated frames
 * decoding alike in every segmentation), allocation failure at every
 * step, and the copy counter proving that input is read in place.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <lz4.h>
#include <lz4hc.h>
#include <lz4frame.h>
#include "testutil.h"
#include "lz4_int.h"
#include "lz4_walk.h"
#include <bufferlist/lz4.h>

#define KiB (1u << 10)
#define MiB (1u << 20)
#define LZ4_CLI "/usr/bin/lz4"

static uint64_t seed;

/*
 * For the hot loops of the helpers: every ck_assert() records its location
 * through a file (Check's mark point), a system call each, which made the
 * suite spend most of its time in write(2).  This checks without that.
 */
#define REQUIRE(x)                                                            \
	do {                                                                  \
		if (!(x))                                                     \
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #x);    \
	} while (0)

/* ---- data and lists ------------------------------------------------------ */

static const char *const words[] = {
	"object", "bucket", "osd", "placement", "group", "monitor", "latency",
	"request", "reply", "client", "server", "message", "payload", "segment",
	"buffer", "list", "the", "of", "and", "lorem", "ipsum", "dolor", "sit",
	"amet", "rados", "pool", "write", "read", "stat", "omap", "xattr",
};

/* JSON-ish lines: compresses about 3:1, like logs or metadata. */
static void fill_text(unsigned char *p, size_t len, uint64_t *rng)
{
	size_t nw = sizeof(words) / sizeof(words[0]), i = 0;
	char line[256];

	while (i < len) {
		uint64_t r = tu_rand(rng);
		int k = snprintf(line, sizeof(line),
				 "{\"id\":%u,\"op\":\"%s\",\"obj\":\"%s.%s\",\"size\":%u}\n",
				 (unsigned)(r % 100000), words[(r >> 20) % nw],
				 words[(r >> 28) % nw], words[(r >> 36) % nw],
				 (unsigned)(r >> 44) % 65536);
		size_t n = (size_t)k < len - i ? (size_t)k : len - i;

		memcpy(p + i, line, n);
		i += n;
	}
}

enum kind { RANDOM, TEXT, ZEROS, MIXED };

static unsigned char *make_data(size_t len, enum kind k, uint64_t *rng)
{
	unsigned char *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	switch (k) {
	case RANDOM:
		tu_fill(p, len, rng);
		break;
	case TEXT:
		fill_text(p, len, rng);
		break;
	case ZEROS:
		memset(p, 0, len);
		break;
	case MIXED:
		for (size_t off = 0; off < len; off += 64 * KiB) {
			size_t n = len - off < 64 * KiB ? len - off : 64 * KiB;

			if ((off / (64 * KiB)) % 4 == 3)
				tu_fill(p + off, n, rng);
			else
				fill_text(p + off, n, rng);
		}
		break;
	}
	return p;
}

/*
 * Appends a copy of @n bytes as one segment over its own malloc'd block
 * of exactly that size (a claimed raw), so that AddressSanitizer sees any
 * read past a segment's end: a combined raw has its header right after
 * the data, where an overrun would go unnoticed.
 */
static void add_seg(struct bl_list *l, const void *data, size_t n)
{
	void *m = malloc(n);
	struct bl_raw *r;
	struct bl_ptr bp;

	REQUIRE(m);
	memcpy(m, data, n);
	r = bl_raw_claim(m, n, NULL, NULL);
	REQUIRE(r);
	bl_ptr_from_raw(&bp, r);
	REQUIRE(bl_list_append_ptr_move(l, &bp) == 0);
}

/* Appends @len bytes as segments of exactly @seg bytes, each its own raw. */
static void add_fixed(struct bl_list *l, const void *data, size_t len,
		      size_t seg)
{
	const char *p = data;

	while (len) {
		size_t n = len < seg ? len : seg;

		add_seg(l, p, n);
		p += n;
		len -= n;
	}
}

/* Segments of log-uniform sizes between 1 byte and @max, own raws. */
static void add_logseg(struct bl_list *l, const void *data, size_t len,
		       size_t max, uint64_t *rng)
{
	const char *p = data;
	unsigned bits = 0;

	while (((size_t)1 << bits) < max)
		bits++;
	while (len) {
		size_t n = 1 + tu_rand(rng) % ((size_t)1 << (tu_rand(rng) %
							     (bits + 1)));

		if (n > max)
			n = max;
		if (n > len)
			n = len;
		add_seg(l, p, n);
		p += n;
		len -= n;
	}
}

/* What a failed call must not change: bytes, segments, references. */
struct snap {
	unsigned char *bytes;
	size_t len;
	unsigned nseg;
	unsigned *nref;
};

static void snap_take(struct snap *s, const struct bl_list *l)
{
	s->len = bl_list_length(l);
	s->nseg = bl_list_num_buffers(l);
	s->bytes = tu_flatten(l);
	s->nref = calloc(s->nseg + 1, sizeof(unsigned));
	ck_assert_ptr_nonnull(s->nref);
	for (unsigned i = 0; i < s->nseg; i++) {
		struct bl_ptr p;

		REQUIRE(bl_list_get_ptr(l, i, &p) == 0);
		s->nref[i] = bl_raw_nref(p.raw) - 1;
		bl_ptr_release(&p);
	}
}

static void snap_check(const struct snap *s, const struct bl_list *l)
{
	ck_assert_uint_eq(bl_list_num_buffers(l), s->nseg);
	tu_assert_list_eq(l, s->bytes, s->len);
	for (unsigned i = 0; i < s->nseg; i++) {
		struct bl_ptr p;

		REQUIRE(bl_list_get_ptr(l, i, &p) == 0);
		REQUIRE(bl_raw_nref(p.raw) - 1 == s->nref[i]);
		bl_ptr_release(&p);
	}
}

static void snap_free(struct snap *s)
{
	free(s->bytes);
	free(s->nref);
}

/* An output list that already holds something, to see it left alone. */
static void out_prefill(struct bl_list *out)
{
	bl_list_init(out);
	ck_assert_int_eq(bl_list_append(out, "prefix", 6), 0);
}

/* Compresses flat bytes into a malloc'd frame; *len receives its length. */
static unsigned char *compress_flat(const void *data, size_t n,
				   const struct bl_lz4_opts *o, size_t *len)
{
	struct bl_list in, out;
	unsigned char *f;
	ssize_t r;

	bl_list_init(&in);
	bl_list_init(&out);
	if (n)
		add_fixed(&in, data, n, n);
	r = bl_lz4_compress(&in, &out, o);
	ck_assert_int_gt(r, 0);
	ck_assert_uint_eq((size_t)r, bl_list_length(&out));
	*len = (size_t)r;
	f = tu_flatten(&out);
	bl_list_clear(&in);
	bl_list_clear(&out);
	return f;
}

/* Decodes a flat frame split as @seg-byte segments; asserts it is @want. */
static void expect_decode(const void *frame, size_t flen, size_t seg,
			  const void *want, size_t wlen)
{
	struct bl_list in, out;
	ssize_t r;

	bl_list_init(&in);
	bl_list_init(&out);
	add_fixed(&in, frame, flen, seg);
	r = bl_lz4_decompress(&in, &out, 0);
	ck_assert_int_eq(r, (ssize_t)wlen);
	tu_assert_list_eq(&out, want, wlen);
	bl_list_clear(&in);
	bl_list_clear(&out);
}

/* Expects @err from both decoders for this flat input; nothing changes. */
static void expect_bad(const void *frame, size_t flen, size_t seg, int err)
{
	struct bl_list in, out;
	struct bl_lz4_decoder *d;
	struct snap si, so;
	ssize_t r;

	bl_list_init(&in);
	out_prefill(&out);
	if (flen)
		add_fixed(&in, frame, flen, seg);
	snap_take(&si, &in);
	snap_take(&so, &out);
	r = bl_lz4_decompress(&in, &out, 0);
	ck_assert_int_eq(r, err);
	snap_check(&si, &in);
	snap_check(&so, &out);

	/*
	 * The streaming decoder hands out every whole block it has seen, so
	 * a truncated stream may give output before end() reports it.
	 */
	d = bl_lz4_decoder_new(0);
	ck_assert_ptr_nonnull(d);
	{
		struct bl_list sout;

		out_prefill(&sout);
		r = bl_lz4_decoder_feed(d, &in, &sout);
		if (r >= 0) {
			ck_assert_int_eq(bl_lz4_decoder_end(d), err);
			ck_assert_int_eq(err, -EBADMSG);
		} else {
			ck_assert_int_eq(r, err);
			snap_check(&so, &sout);	/* a failed feed appends nothing */
			ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &sout),
					 -EINVAL);
		}
		bl_list_clear(&sout);
	}
	bl_lz4_decoder_free(d);
	snap_check(&si, &in);
	snap_check(&so, &out);
	snap_free(&si);
	snap_free(&so);
	bl_list_clear(&in);
	bl_list_clear(&out);
}

/*
 * A truncated stream: bl_lz4_decompress() says -EBADMSG; the streaming
 * decoder takes every piece (the rest may still come) and end() says it.
 */
static void expect_truncated(const void *frame, size_t flen, size_t seg)
{
	struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
	struct bl_list in, out;
	size_t off = 0;

	expect_bad(frame, flen, seg, -EBADMSG);
	bl_list_init(&out);
	REQUIRE(d);
	while (off < flen) {
		size_t n = flen - off < seg ? flen - off : seg;

		bl_list_init(&in);
		add_seg(&in, (const char *)frame + off, n);
		REQUIRE(bl_lz4_decoder_feed(d, &in, &out) >= 0);
		bl_list_clear(&in);
		off += n;
	}
	REQUIRE(bl_lz4_decoder_end(d) == -EBADMSG);
	bl_lz4_decoder_free(d);
	bl_list_clear(&out);
}

/* ---- hand-made frames ---------------------------------------------------- */

struct fb {
	unsigned char *p;
	size_t len, cap;
};

static void fb_put(struct fb *f, const void *d, size_t n)
{
	if (f->len + n > f->cap) {
		f->cap = (f->len + n) * 2 + 64;
		f->p = realloc(f->p, f->cap);
		REQUIRE(f->p);
	}
	memcpy(f->p + f->len, d, n);
	f->len += n;
}

static void fb_le32(struct fb *f, uint32_t v)
{
	unsigned char b[4] = { (unsigned char)v, (unsigned char)(v >> 8),
			       (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };

	fb_put(f, b, 4);
}

/* Magic, FLG, BD, optional content size, header checksum. */
static void fb_header(struct fb *f, unsigned flg, unsigned bd, uint64_t csize)
{
	unsigned char h[16];
	size_t n = 2;

	fb_le32(f, 0x184D2204u);
	h[0] = (unsigned char)flg;
	h[1] = (unsigned char)bd;
	if (flg & 0x08) {
		for (int i = 0; i < 8; i++)
			h[2 + i] = (unsigned char)(csize >> (8 * i));
		n += 8;
	}
	h[n] = (unsigned char)(bl__xxh32(h, n, 0) >> 8);
	fb_put(f, h, n + 1);
}

/* One block: compressed when it helps (or @force_raw), + checksum when @bchk. */
static void fb_block(struct fb *f, const void *data, size_t n, bool bchk,
		     bool force_raw)
{
	char *c = malloc(LZ4_compressBound((int)n));
	int cs = force_raw ? 0 : LZ4_compress_default(data, c, (int)n,
						      LZ4_compressBound((int)n));
	const void *blk = c;
	uint32_t hdr;

	if (cs <= 0 || (size_t)cs >= n) {
		cs = (int)n;
		blk = data;
		hdr = (uint32_t)n | 0x80000000u;
	} else {
		hdr = (uint32_t)cs;
	}
	fb_le32(f, hdr);
	fb_put(f, blk, (size_t)cs);
	if (bchk)
		fb_le32(f, bl__xxh32(blk, (size_t)cs, 0));
	free(c);
}

/* ---- the lz4 command ----------------------------------------------------- */

static char tmpdir[64];

static void need_cli(void)
{
	ck_assert_msg(access(LZ4_CLI, X_OK) == 0,
		      LZ4_CLI " is missing: install the lz4 package "
		      "(the interoperability tests need it)");
	ck_assert_msg(tmpdir[0], "no temporary directory");
}

static void path_of(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

static void write_file(const char *name, const void *p, size_t n)
{
	char path[128];
	FILE *f;

	path_of(path, sizeof(path), name);
	f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	ck_assert_int_eq(fclose(f), 0);
}

static unsigned char *read_file(const char *name, size_t *n)
{
	char path[128];
	unsigned char *p;
	struct stat st;
	FILE *f;

	path_of(path, sizeof(path), name);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fstat(fileno(f), &st), 0);
	*n = (size_t)st.st_size;
	p = malloc(*n + 1);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(fread(p, 1, *n, f), *n);
	fclose(f);
	return p;
}

static void remove_file(const char *name)
{
	char path[128];

	path_of(path, sizeof(path), name);
	unlink(path);
}

/* Runs `lz4 ARGS... -c IN` with stdout into OUT; returns the exit status. */
static int run_lz4(const char *const *args, const char *in, const char *out)
{
	char ipath[128], opath[128];
	const char *argv[16];
	int n = 0, st, fd;
	pid_t pid;

	path_of(ipath, sizeof(ipath), in);
	path_of(opath, sizeof(opath), out);
	argv[n++] = LZ4_CLI;
	argv[n++] = "-q";
	for (; *args; args++)
		argv[n++] = *args;
	argv[n++] = "-c";
	argv[n++] = ipath;
	argv[n] = NULL;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		fd = open(opath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0 || dup2(fd, 1) < 0)
			_exit(126);
		execv(LZ4_CLI, (char *const *)argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* ---- XXH32 --------------------------------------------------------------- */

/* liblz4 exports no XXH32; its frame's content checksum is one. */
static uint32_t liblz4_xxh32(const void *p, size_t n)
{
	LZ4F_preferences_t prefs;
	size_t cap, len;
	unsigned char *f;
	uint32_t v;

	memset(&prefs, 0, sizeof(prefs));
	prefs.frameInfo.contentChecksumFlag = LZ4F_contentChecksumEnabled;
	cap = LZ4F_compressFrameBound(n, &prefs);
	f = malloc(cap);
	len = LZ4F_compressFrame(f, cap, p, n, &prefs);
	ck_assert(!LZ4F_isError(len));
	v = (uint32_t)f[len - 4] | (uint32_t)f[len - 3] << 8 |
	    (uint32_t)f[len - 2] << 16 | (uint32_t)f[len - 1] << 24;
	free(f);
	return v;
}

START_TEST(test_xxh32_matches_liblz4)
{
	uint64_t rng = seed;
	unsigned char *d = make_data(MiB + 77, RANDOM, &rng);
	static const size_t lens[] = { 0, 1, 3, 4, 15, 16, 17, 31, 32, 33,
				       100, 4096, 65537, MiB + 77 };

	ck_assert_uint_eq(bl__xxh32("", 0, 0), 0x02CC5D05u);
	for (size_t n = 0; n < 64; n++)
		ck_assert_uint_eq(bl__xxh32(d, n, 0), liblz4_xxh32(d, n));
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		ck_assert_uint_eq(bl__xxh32(d + 3, lens[i] - (lens[i] > 3 ? 3 : 0),
					    0),
				  liblz4_xxh32(d + 3,
					       lens[i] - (lens[i] > 3 ? 3 : 0)));
	free(d);
}
END_TEST

START_TEST(test_xxh32_streaming_any_split)
{
	uint64_t rng = seed;
	unsigned char *d = make_data(100000, RANDOM, &rng);
	uint32_t want = bl__xxh32(d, 100000, 0);

	for (int round = 0; round < 200; round++) {
		struct bl__xxh32 s;
		size_t off = 0;

		bl__xxh32_init(&s, 0);
		while (off < 100000) {
			size_t n = tu_rand(&rng) % (round < 100 ? 40 : 9000);

			if (n > 100000 - off)
				n = 100000 - off;
			bl__xxh32_update(&s, d + off, n);
			off += n;
		}
		ck_assert_uint_eq(bl__xxh32_digest(&s), want);
	}
	free(d);
}
END_TEST

/* ---- round trips --------------------------------------------------------- */

static const struct bl_lz4_opts optsets[] = {
	/* level, block size id, independent, content checksum, content size */
	{ 0, 0, false, false, false },
	{ 0, 4, true, true, true },
	{ 1, 5, false, true, false },
	{ 9, 4, false, true, true },
	{ 9, 6, true, false, false },
	{ -5, 7, false, false, true },
	{ 12, 4, true, true, false },
	{ 3, 7, true, false, true },
	{ -1, 6, false, true, true },
	{ 0, 7, false, true, false },
};
#define NOPTS (sizeof(optsets) / sizeof(optsets[0]))

/* Compresses @data as @in, checks the result decodes to it both ways. */
static void roundtrip_list(const struct bl_list *in, const unsigned char *data,
			   size_t len, const struct bl_lz4_opts *o,
			   uint64_t *rng)
{
	struct bl_list out, back, back2;
	struct bl_lz4_decoder *d;
	ssize_t r;
	size_t flen;

	bl_list_init(&out);
	bl_list_init(&back);
	bl_list_init(&back2);
	r = bl_lz4_compress(in, &out, o);
	ck_assert_int_gt(r, 0);
	flen = (size_t)r;
	ck_assert_uint_eq(bl_list_length(&out), flen);
	ck_assert_int_eq(bl__list_validate(&out), 0);
	tu_assert_list_eq(in, data, len);	/* input untouched */

	r = bl_lz4_decompress(&out, &back, len ? len : 1);
	ck_assert_int_eq(r, (ssize_t)len);
	tu_assert_list_eq(&back, data, len);

	/* the streaming decoder, fed random pieces of the frame */
	d = bl_lz4_decoder_new(len);
	ck_assert_ptr_nonnull(d);
	for (size_t off = 0, total = 0; off < flen;) {
		size_t n = 1 + tu_rand(rng) % (flen / 3 + 1);
		struct bl_list piece;

		if (n > flen - off)
			n = flen - off;
		bl_list_init(&piece);
		REQUIRE(bl_list_substr_of(&piece, &out, off, n) == 0);
		r = bl_lz4_decoder_feed(d, &piece, &back2);
		REQUIRE(r >= 0);
		total += (size_t)r;
		REQUIRE(bl_list_length(&back2) == total);
		bl_list_clear(&piece);
		off += n;
	}
	ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
	bl_lz4_decoder_free(d);
	tu_assert_list_eq(&back2, data, len);

	bl_list_clear(&out);
	bl_list_clear(&back);
	bl_list_clear(&back2);
}

START_TEST(test_roundtrip_small_sizes)
{
	static const size_t sizes[] = { 0, 1, 2, 13, 100, 4095, 65535, 65536,
					65537, 131072, 200001 };
	uint64_t rng = seed;

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (int k = RANDOM; k <= MIXED; k++) {
			size_t len = sizes[si];
			unsigned char *data = make_data(len, k, &rng);

			for (size_t o = 0; o < NOPTS; o++) {
				struct bl_list in;

				bl_list_init(&in);
				add_logseg(&in, data, len, 64 * KiB, &rng);
				roundtrip_list(&in, data, len, &optsets[o],
					       &rng);
				bl_list_clear(&in);
			}
			/* NULL options: LZ4F's defaults */
			{
				struct bl_list in;

				bl_list_init(&in);
				add_fixed(&in, data, len, 1000);
				roundtrip_list(&in, data, len, NULL, &rng);
				bl_list_clear(&in);
			}
			free(data);
		}
	}
}
END_TEST

/*
 * In a thread that makes its raws thread-local (bl_raw_set_thread_local),
 * the codec's output is thread-local too, and the round trip holds.
 */
START_TEST(test_output_of_a_thread_local_thread_is_thread_local)
{
	uint64_t rng = seed;
	size_t len = 200001;
	unsigned char *data = make_data(len, MIXED, &rng), *back;
	struct bl_list in, z, out;
	struct bl_list_seg_iter it;
	const struct bl_seg *seg;

	ck_assert(!bl_raw_set_thread_local(true));
	bl_list_init(&in);
	bl_list_init(&z);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&in, data, len), 0);
	ck_assert_int_gt(bl_lz4_compress(&in, &z, NULL), 0);
	ck_assert_int_eq(bl_lz4_decompress(&z, &out, 0), (ssize_t)len);
	ck_assert_uint_gt(bl_list_num_buffers(&z), 0);
	BL_LIST_FOREACH_SEG(&z, it, seg)
		ck_assert(bl_raw_is_thread_local(seg->raw));
	BL_LIST_FOREACH_SEG(&out, it, seg)
		ck_assert(bl_raw_is_thread_local(seg->raw));
	back = malloc(len);
	ck_assert_ptr_nonnull(back);
	ck_assert_int_eq(bl_list_copy_out(&out, 0, len, back), 0);
	ck_assert_mem_eq(back, data, len);
	bl_list_clear(&in);
	bl_list_clear(&z);
	bl_list_clear(&out);
	ck_assert(bl_raw_set_thread_local(false));
	free(back);
	free(data);
}
END_TEST

/* 10 MiB inputs cut at random boundaries from 1 byte to 1 MiB. */
START_TEST(test_roundtrip_10mib)
{
	static const enum kind kinds[] = { RANDOM, TEXT, MIXED };
	uint64_t rng = seed + (uint64_t)_i;
	size_t len = getenv("BL_TEST_QUICK") ? MiB : 10 * MiB; /* valgrind */
	unsigned char *data = make_data(len, kinds[_i % 3], &rng);

	for (size_t o = 0; o < NOPTS; o++) {
		struct bl_list in;

		/* HC at 10 MiB of each kind is slow: one kind per run */
		if (optsets[o].level >= 9 && o % 3 != (size_t)_i % 3)
			continue;
		bl_list_init(&in);
		switch ((o + (size_t)_i) % 3) {
		case 0:
			add_logseg(&in, data, len, MiB, &rng);
			break;
		case 1:
			tu_append_segmented(&in, data, len, MiB, 1, &rng);
			break;
		default:
			add_fixed(&in, data, len, 4 * KiB);
			break;
		}
		roundtrip_list(&in, data, len, &optsets[o], &rng);
		bl_list_clear(&in);
	}
	free(data);
}
END_TEST

START_TEST(test_roundtrip_segments_over_one_raw)
{
	/* slices of one raw: adjacent in memory, as after a big receive */
	uint64_t rng = seed;
	size_t len = 3 * MiB + 123;
	unsigned char *data = make_data(len, MIXED, &rng);
	struct bl_ptr whole;

	ck_assert_int_eq(bl_ptr_alloc(&whole, len), 0);
	memcpy(bl_ptr_data(&whole), data, len);
	for (size_t o = 0; o < NOPTS; o += 2) {
		struct bl_list in;
		size_t off = 0;

		bl_list_init(&in);
		while (off < len) {
			size_t n = 1 + tu_rand(&rng) % (200 * KiB);
			struct bl_ptr s;

			if (n > len - off)
				n = len - off;
			ck_assert_int_eq(bl_ptr_slice(&s, &whole, off, n), 0);
			ck_assert_int_eq(bl_list_append_ptr_move(&in, &s), 0);
			off += n;
		}
		roundtrip_list(&in, data, len, &optsets[o], &rng);
		bl_list_clear(&in);
	}
	bl_ptr_release(&whole);
	free(data);
}
END_TEST

START_TEST(test_bad_options_are_einval)
{
	struct bl_lz4_opts o = { 0, 0, false, false, false };
	struct bl_list in, out;
	struct snap so;

	bl_list_init(&in);
	ck_assert_int_eq(bl_list_append(&in, "abc", 3), 0);
	out_prefill(&out);
	snap_take(&so, &out);
	o.level = 13;
	ck_assert_int_eq(bl_lz4_compress(&in, &out, &o), -EINVAL);
	o.level = 0;
	o.block_size_id = 3;
	ck_assert_int_eq(bl_lz4_compress(&in, &out, &o), -EINVAL);
	o.block_size_id = 8;
	ck_assert_int_eq(bl_lz4_compress(&in, &out, &o), -EINVAL);
	o.block_size_id = -1;
	ck_assert_int_eq(bl_lz4_compress(&in, &out, &o), -EINVAL);
	snap_check(&so, &out);
	snap_free(&so);
	bl_list_clear(&in);
	bl_list_clear(&out);
}
END_TEST

/* ---- segmentation of the compressed input -------------------------------- */

/* Every way to cut a 16-byte frame: all 2^15 segmentations. */
START_TEST(test_decode_every_segmentation_of_tiny_frame)
{
	unsigned char *f;
	size_t flen;

	f = compress_flat("a", 1, NULL, &flen);
	ck_assert_uint_eq(flen, 16);
	for (uint32_t mask = 0; mask < (1u << (flen - 1)); mask++) {
		struct bl_list in, out;
		size_t start = 0;

		bl_list_init(&in);
		bl_list_init(&out);
		for (size_t i = 1; i <= flen; i++) {
			if (i == flen || (mask >> (i - 1) & 1)) {
				add_fixed(&in, f + start, i - start, i - start);
				start = i;
			}
		}
		REQUIRE(bl_lz4_decompress(&in, &out, 0) == 1);
		REQUIRE(bl_list_length(&out) == 1);
		REQUIRE(*bl_list_c_str(&out) == 'a');
		bl_list_clear(&in);
		bl_list_clear(&out);
	}
	free(f);
}
END_TEST

/* Frames of every option set, as 1-byte segments and cut at every byte. */
START_TEST(test_decode_one_byte_segments_and_every_cut)
{
	uint64_t rng = seed;
	size_t len = 150 * KiB;
	unsigned char *data = make_data(len, MIXED, &rng);

	for (size_t o = 0; o < NOPTS; o++) {
		unsigned char *f;
		size_t flen;

		f = compress_flat(data, len, &optsets[o], &flen);
		if (o % 3 == 0)	/* 1-byte segments: slow to build, a few */
			expect_decode(f, flen, 1, data, len);
		expect_decode(f, flen, 7, data, len);
		expect_decode(f, flen, 4093, data, len);
		free(f);
	}
	/* a small multi-block frame cut into two at every byte */
	{
		struct bl_lz4_opts o = { 0, 4, false, true, true };
		size_t small = 70 * KiB, flen;
		unsigned char *f = compress_flat(data, small, &o, &flen);

		for (size_t cut = 1; cut < flen; cut += (cut < 64 || flen - cut < 64) ? 1 : 97) {
			struct bl_list in, out;

			bl_list_init(&in);
			bl_list_init(&out);
			add_fixed(&in, f, cut, cut);
			add_fixed(&in, f + cut, flen - cut, flen - cut);
			ck_assert_int_eq(bl_lz4_decompress(&in, &out, 0),
					 (ssize_t)small);
			tu_assert_list_eq(&out, data, small);
			bl_list_clear(&in);
			bl_list_clear(&out);
		}
		free(f);
	}
	free(data);
}
END_TEST

/* Several frames and skippable frames, fed to the streaming decoder. */
START_TEST(test_stream_random_pieces_many_frames)
{
	uint64_t rng = seed;
	size_t lens[4] = { 0, 5000, 300 * KiB, 1 };
	unsigned char *data[4], *want;
	struct fb all = { NULL, 0, 0 };
	size_t wlen = 0;

	for (int i = 0; i < 4; i++) {
		unsigned char *f;
		size_t flen;

		data[i] = make_data(lens[i], i == 2 ? MIXED : TEXT, &rng);
		f = compress_flat(data[i], lens[i], &optsets[(size_t)i * 3],
				  &flen);
		if (i & 1) {	/* a skippable frame before it */
			fb_le32(&all, 0x184D2A50u + (uint32_t)i * 5);
			fb_le32(&all, 10);
			fb_put(&all, "0123456789", 10);
		}
		fb_put(&all, f, flen);
		wlen += lens[i];
		free(f);
	}
	want = malloc(wlen);
	for (int i = 0, off = 0; i < 4; off += (int)lens[i], i++)
		memcpy(want + off, data[i], lens[i]);

	expect_decode(all.p, all.len, 333, want, wlen);
	for (int round = 0; round < 30; round++) {
		struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
		struct bl_list out;
		size_t off = 0;

		bl_list_init(&out);
		while (off < all.len) {
			size_t n = 1 + tu_rand(&rng) % (round < 10 ? 8 : 70000);
			struct bl_list piece;

			if (n > all.len - off)
				n = all.len - off;
			bl_list_init(&piece);
			add_logseg(&piece, all.p + off, n, 4096, &rng);
			REQUIRE(bl_lz4_decoder_feed(d, &piece, &out) >= 0);
			bl_list_clear(&piece);
			off += n;
			if (off < all.len)	/* end() only looks */
				REQUIRE(bl_lz4_decoder_end(d) == 0 ||
					bl_lz4_decoder_end(d) == -EBADMSG);
		}
		ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
		bl_lz4_decoder_free(d);
		tu_assert_list_eq(&out, want, wlen);
		bl_list_clear(&out);
	}
	for (int i = 0; i < 4; i++)
		free(data[i]);
	free(want);
	free(all.p);
}
END_TEST

START_TEST(test_stream_empty_feeds_and_end)
{
	struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
	struct bl_list empty, out;

	bl_list_init(&empty);
	bl_list_init(&out);
	ck_assert_int_eq(bl_lz4_decoder_end(d), 0);	/* no frame at all */
	ck_assert_int_eq(bl_lz4_decoder_feed(d, &empty, &out), 0);
	ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	bl_lz4_decoder_free(d);
	bl_lz4_decoder_free(NULL);
	ck_assert_int_eq(bl_lz4_decoder_feed(NULL, &empty, &out), -EINVAL);
	ck_assert_int_eq(bl_lz4_decoder_end(NULL), -EINVAL);
	ck_assert_int_eq(bl_lz4_decompress(&empty, &out, 0), 0);
}
END_TEST

/* ---- our block decoder against liblz4's ---------------------------------- */

/* Splits @p into random segments and decodes with bl__lz4_block_decode. */
static ssize_t seg_decode(const void *p, size_t n, char *dst, size_t cap,
			  size_t hist, uint64_t *rng)
{
	struct bl_list l;
	struct bl_iter it;
	ssize_t r;

	bl_list_init(&l);
	add_logseg(&l, p, n, 1 + tu_rand(rng) % 5000, rng);
	REQUIRE(bl_iter_init(&it, &l, 0) == 0);
	r = bl__lz4_block_decode(&it, n, dst, cap, hist);
	if (r >= 0)
		REQUIRE(bl_iter_offset(&it) == n);
	bl_list_clear(&l);
	return r;
}

START_TEST(test_block_decoder_agrees_with_liblz4)
{
	uint64_t rng = seed;
	size_t len = 64 * KiB;
	char *c = malloc(LZ4_compressBound((int)len));
	char *a = malloc(2 * len + 64), *b = malloc(2 * len + 64);

	for (int round = 0; round < 400; round++) {
		size_t n = 1 + tu_rand(&rng) % len, hist = 0;
		unsigned char *src;
		int cs, ra;
		ssize_t rb;

		/* a history before the block in half the rounds */
		if (round & 1) {
			hist = tu_rand(&rng) % (64 * KiB);
			fill_text((unsigned char *)a, hist, &rng);
			memcpy(b, a, hist);
		}
		src = make_data(n, round % 4, &rng);
		if (round % 8 == 5) {	/* runs: short offsets and long matches */
			for (size_t i = 0; i < n; i++)
				src[i] = (unsigned char)("abcab"[i % (1 + round % 5)]);
		}
		if (round % 3 == 0) {
			LZ4_streamHC_t *s = LZ4_createStreamHC();

			LZ4_resetStreamHC_fast(s, 9);
			if (hist)
				LZ4_loadDictHC(s, a, (int)hist);
			memcpy(a + hist, src, n);
			cs = LZ4_compress_HC_continue(s, a + hist, c, (int)n,
						      LZ4_compressBound((int)n));
			LZ4_freeStreamHC(s);
		} else {
			LZ4_stream_t *s = LZ4_createStream();

			if (hist)
				LZ4_loadDict(s, a, (int)hist);
			memcpy(a + hist, src, n);
			cs = LZ4_compress_fast_continue(s, a + hist, c, (int)n,
							LZ4_compressBound((int)n),
							1 + round % 3);
			LZ4_freeStream(s);
		}
		ck_assert_int_gt(cs, 0);
		/*
		 * Valid block: same bytes, with capacity exact or larger, into
		 * a buffer of exactly history + capacity (ASan sees overruns).
		 */
		for (int t = 0; t < 3; t++) {
			size_t cap = t == 0 ? n : n + tu_rand(&rng) % 100;
			char *x = malloc(hist + cap);

			memcpy(x, a, hist);
			rb = seg_decode(c, (size_t)cs, x + hist, cap, hist, &rng);
			ck_assert_int_eq(rb, (ssize_t)n);
			ck_assert(memcmp(x + hist, src, n) == 0);
			free(x);
		}
		/* corrupted: ours accepts only what liblz4 accepts, alike */
		for (int t = 0; t < 20; t++) {
			size_t pos = tu_rand(&rng) % (size_t)cs, cap = n + 64;

			c[pos] ^= (char)(1 + tu_rand(&rng) % 255);
			ra = hist ? LZ4_decompress_safe_usingDict(c, a + hist, cs,
								  (int)cap, a,
								  (int)hist)
				  : LZ4_decompress_safe(c, a + hist, cs,
							(int)cap);
			{
				char *x = malloc(hist + cap);

				memcpy(x, b, hist);
				rb = seg_decode(c, (size_t)cs, x + hist, cap,
						hist, &rng);
				if (rb >= 0)
					memcpy(b + hist, x + hist, (size_t)rb);
				free(x);
			}
			if (rb >= 0) {
				ck_assert_int_eq(ra, (int)rb);
				ck_assert(memcmp(a + hist, b + hist, (size_t)rb) == 0);
			}
			/* truncated */
			if (cs > 1) {
				rb = seg_decode(c, (size_t)cs - 1 - tu_rand(&rng) %
								   (size_t)(cs - 1),
						b + hist, cap, hist, &rng);
				ck_assert(rb < 0 || (size_t)rb <= cap);
			}
			if (hist)
				memcpy(a, b, hist);
		}
		free(src);
	}
	free(a);
	free(b);
	free(c);
}
END_TEST

/* Decodes the block @c of @cs bytes held as segments cut at @cut1, @cut2. */
static ssize_t cut_decode(const char *c, size_t cs, size_t cut1, size_t cut2,
			  char *dst, size_t cap)
{
	struct bl_list l;
	struct bl_iter it;
	ssize_t r;

	bl_list_init(&l);
	add_seg(&l, c, cut1);
	if (cut2 > cut1)
		add_seg(&l, c + cut1, cut2 - cut1);
	add_seg(&l, c + cut2, cs - cut2);
	REQUIRE(bl_iter_init(&it, &l, 0) == 0);
	r = bl__lz4_block_decode(&it, cs, dst, cap, 0);
	bl_list_clear(&l);
	return r;
}

/*
 * The fast loop stops closer to a seam than to the block's end; wherever
 * the last seams fall in a block's last bytes, valid blocks decode and
 * corrupted ones are accepted only as liblz4 accepts them.
 */
START_TEST(test_block_decoder_seams_near_block_end)
{
	uint64_t rng = seed;
	char *c = malloc(LZ4_compressBound(16 * KiB));
	char *a = malloc(16 * KiB + 64), *b = malloc(16 * KiB + 64);

	for (int round = 0; round < 60; round++) {
		size_t n = KiB + tu_rand(&rng) % (15 * KiB);
		unsigned char *src = make_data(n, round % 2 ? TEXT : MIXED,
					       &rng);
		size_t cs, cap = n + 64;

		cs = (size_t)LZ4_compress_default((const char *)src, c,
						  (int)n,
						  LZ4_compressBound((int)n));
		ck_assert_uint_gt(cs, 72 + 48 + 1);	/* room for both cuts */
		for (size_t k = 1; k <= 72; k++) {
			size_t cut2 = cs - k;
			size_t cut1 = cut2 - 1 - tu_rand(&rng) % 48;

			ck_assert_int_eq(cut_decode(c, cs, cut1, cut2, b, n),
					 (ssize_t)n);
			ck_assert(memcmp(b, src, n) == 0);
			for (int t = 0; t < 6; t++) {
				size_t pos = cs - 1 - tu_rand(&rng) % 80;
				char old = c[pos];
				int ra;
				ssize_t rb;

				c[pos] ^= (char)(1 + tu_rand(&rng) % 255);
				ra = LZ4_decompress_safe(c, a, (int)cs,
							 (int)cap);
				rb = cut_decode(c, cs, cut1, cut2, b, cap);
				if (rb >= 0) {
					ck_assert_int_eq(ra, (int)rb);
					ck_assert(memcmp(a, b, (size_t)rb) == 0);
				}
				c[pos] = old;
			}
		}
		free(src);
	}
	free(a);
	free(b);
	free(c);
}
END_TEST

/* ---- one result for every segmentation, on mutated frames ---------------- */

/* Appends [@p, @p + @n) as one segment over a raw of its own (no copy). */
static void add_static(struct bl_list *l, const unsigned char *p, size_t n)
{
	struct bl_raw *r = bl_raw_create_static(p, n);
	struct bl_ptr bp;

	REQUIRE(r);
	bl_ptr_from_raw(&bp, r);
	REQUIRE(bl_list_append_ptr_move(l, &bp) == 0);
}

/*
 * A frame held in several segmentations, every segment a raw of its own
 * over the frame's bytes, so that a mutation of the frame is seen by
 * every list at once.  The streaming decoder is fed one byte at a time.
 */
enum { SPLIT_ONE, SPLIT_1, SPLIT_5, SPLIT_64, SPLIT_RANDOM, SPLIT_N };
static const char *const split_name[] = {
	"one segment", "1-byte segments", "5-byte segments", "64-byte segments",
	"random segments", "1-byte feeds",
};

struct splits {
	unsigned char *f;
	size_t n;
	struct bl_list l[SPLIT_N];
	unsigned char *got;	/* scratch for an output */
	size_t got_cap;
};

static void splits_init(struct splits *s, unsigned char *f, size_t n,
			size_t out_cap, uint64_t *rng)
{
	static const size_t fixed[] = { 1, 5, 64 };

	s->f = f;
	s->n = n;
	for (int i = 0; i < SPLIT_N; i++)
		bl_list_init(&s->l[i]);
	add_static(&s->l[SPLIT_ONE], f, n);
	for (int k = 0; k < 3; k++)
		for (size_t off = 0; off < n; off += fixed[k])
			add_static(&s->l[SPLIT_1 + k], f + off,
				   n - off < fixed[k] ? n - off : fixed[k]);
	for (size_t off = 0, m; off < n; off += m) {
		m = 1 + tu_rand(rng) % 200;
		m = n - off < m ? n - off : m;
		add_static(&s->l[SPLIT_RANDOM], f + off, m);
	}
	s->got_cap = out_cap;
	s->got = malloc(out_cap);
	REQUIRE(s->got);
}

static void splits_free(struct splits *s)
{
	for (int i = 0; i < SPLIT_N; i++)
		bl_list_clear(&s->l[i]);
	free(s->got);
}

/* The streaming decoder fed @f one byte at a time; output into @out. */
static ssize_t stream_bytewise(const unsigned char *f, size_t n,
			       struct bl_list *out)
{
	struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
	ssize_t r = 0, total = 0;

	REQUIRE(d);
	for (size_t i = 0; i < n; i++) {
		struct bl_list piece;

		bl_list_init(&piece);
		add_static(&piece, f + i, 1);
		r = bl_lz4_decoder_feed(d, &piece, out);
		bl_list_clear(&piece);
		if (r < 0)
			break;
		total += r;
	}
	if (r >= 0) {
		r = bl_lz4_decoder_end(d);
		if (!r)
			r = total;
	}
	bl_lz4_decoder_free(d);
	return r;
}

/*
 * Decodes the frame every way; they must all give the same bytes or the
 * same error.  Returns that result; the bytes are left in s->got.
 */
static ssize_t decode_every_split(struct splits *s, size_t pos)
{
	ssize_t r, r0 = 0;

	for (int i = 0; i < SPLIT_N + 1; i++) {
		struct bl_list out;

		bl_list_init(&out);
		r = i < SPLIT_N ? bl_lz4_decompress(&s->l[i], &out, 0)
				: stream_bytewise(s->f, s->n, &out);
		if (r != -EBADMSG && r < 0)
			ck_abort_msg("byte %zu mutated: %s: %zd", pos,
				     split_name[i], r);
		if (i == 0) {
			r0 = r;
			if (r > 0) {
				REQUIRE((size_t)r <= s->got_cap);
				REQUIRE(bl_list_copy_out(&out, 0, (size_t)r,
							 s->got) == 0);
			}
		} else if (r != r0) {
			ck_abort_msg("byte %zu mutated: %s gives %zd, one "
				     "segment %zd", pos, split_name[i], r, r0);
		} else if (r > 0) {
			unsigned char *b = tu_flatten(&out);

			if (memcmp(b, s->got, (size_t)r))
				ck_abort_msg("byte %zu mutated: %s gives other "
					     "bytes than one segment", pos,
					     split_name[i]);
			free(b);
		}
		if (r >= 0)
			REQUIRE(bl_list_length(&out) == (size_t)r);
		bl_list_clear(&out);
	}
	return r0;
}

/*
 * liblz4's frame decoder on the contiguous frame: the bytes in @out, or
 * -EBADMSG, or -E2BIG when they would not fit in @cap (no verdict).
 */
static ssize_t lz4f_decode(const unsigned char *f, size_t n,
			   unsigned char *out, size_t cap)
{
	LZ4F_dctx *dctx;
	size_t pos = 0, o = 0, hint = 1;
	ssize_t r = 0;

	REQUIRE(!LZ4F_isError(LZ4F_createDecompressionContext(&dctx,
							     LZ4F_VERSION)));
	while (pos < n && !r) {
		size_t sn = n - pos, dn = cap - o;

		hint = LZ4F_decompress(dctx, out + o, &dn, f + pos, &sn, NULL);
		if (LZ4F_isError(hint))
			r = -EBADMSG;
		else if (o + dn == cap)
			r = -E2BIG;
		else if (!sn && !dn)
			r = -EBADMSG;
		pos += sn;
		o += dn;
	}
	if (!r)
		r = hint ? -EBADMSG : (ssize_t)o;	/* truncated */
	LZ4F_freeDecompressionContext(dctx);
	return r;
}

/* 64 KiB of a repeated text (a small first block), then 3 KiB of text. */
static unsigned char *mutant_content(size_t *len)
{
	uint64_t rng = 0x5EED;
	size_t n = 67 * KiB;
	unsigned char *p = malloc(n), *t = make_data(1500, TEXT, &rng);

	REQUIRE(p);
	for (size_t off = 0; off < 64 * KiB; off += 1500) {
		size_t k = 64 * KiB - off < 1500 ? 64 * KiB - off : 1500;

		memcpy(p + off, t, k);
		p[off] = (unsigned char)(off / 1500);
	}
	fill_text(p + 64 * KiB, 3 * KiB, &rng);
	memcpy(p + 65 * KiB, p + 60 * KiB, 300);	/* refers to block 1 */
	free(t);
	*len = n;
	return p;
}

static unsigned char *lz4f_frame(const void *data, size_t len, bool cchk,
				 bool bchk, bool indep, bool csize,
				 size_t *flen)
{
	LZ4F_preferences_t prefs;
	unsigned char *f;
	size_t cap, n;

	memset(&prefs, 0, sizeof(prefs));
	prefs.frameInfo.blockSizeID = LZ4F_max64KB;
	prefs.frameInfo.blockMode = indep ? LZ4F_blockIndependent
					  : LZ4F_blockLinked;
	prefs.frameInfo.contentChecksumFlag = cchk;
	prefs.frameInfo.blockChecksumFlag = bchk;
	prefs.frameInfo.contentSize = csize ? len : 0;
	cap = LZ4F_compressFrameBound(len, &prefs);
	f = malloc(cap);
	REQUIRE(f);
	n = LZ4F_compressFrame(f, cap, data, len, &prefs);
	REQUIRE(!LZ4F_isError(n));
	*flen = n;
	return f;
}

/*
 * Whether liblz4's LZ4_decompress_safe takes a match of offset 0 (1.9
 * does): a block of 4 literals, then a match of offset 0, then 5.
 */
static bool liblz4_takes_offset0(void)
{
	static const char blk[] = { 0x40, 'a', 'b', 'c', 'd', 0, 0,
				    0x50, 'e', 'f', 'g', 'h', 'i' };
	char out[64];

	return LZ4_decompress_safe(blk, out, sizeof(blk), sizeof(out)) == 13;
}

/*
 * Mutants of frames made by the lz4 command and by LZ4F in every
 * combination of checksums and block modes: one-shot decoding in five
 * segmentations and the streaming decoder fed byte by byte all agree on
 * every one.  Against liblz4 on the contiguous frame: what we accept it
 * accepts, with the same bytes; what it accepts and we refuse holds a
 * match of offset 0, and every frame that holds one is refused.
 */
START_TEST(test_mutants_decode_alike_in_every_split)
{
	static const char *const cli_args[] = { "--no-frame-crc", "-B4", NULL };
	uint64_t rng = 0xF00D;
	size_t len, cap, flen;
	unsigned char *data = mutant_content(&len), *ref;
	unsigned off0 = 0, accepted = 0, total = 0;

	cap = len + 256 * KiB;
	ref = malloc(cap);
	REQUIRE(ref);
	need_cli();
	write_file("mutants", data, len);
	for (int v = -1; v < 8; v++) {
		unsigned char *f;
		struct splits s;
		ssize_t r, rr;

		if (v < 0) {
			ck_assert_int_eq(run_lz4(cli_args, "mutants",
						 "mutants.lz4"), 0);
			f = read_file("mutants.lz4", &flen);
		} else {
			f = lz4f_frame(data, len, v & 1, v & 2, v & 4,
				       v == 3 || v == 4, &flen);
		}
		splits_init(&s, f, flen, cap, &rng);
		ck_assert_int_eq(decode_every_split(&s, flen), (ssize_t)len);
		ck_assert(memcmp(s.got, data, len) == 0);
		for (int m = 0; m < (v < 0 ? 1000 : 300); m++) {
			size_t pos = tu_rand(&rng) % flen;
			unsigned char old = f[pos], val;

			switch (tu_rand(&rng) % 4) {
			case 0:
				val = old ^ (unsigned char)(1u << tu_rand(&rng) %
							   8);
				break;
			case 1:
				val = 0;
				break;
			case 2:
				val = 0xFF;
				break;
			default:
				val = (unsigned char)tu_rand(&rng);
				break;
			}
			if (val == old)
				continue;
			f[pos] = val;
			total++;
			r = decode_every_split(&s, pos);
			rr = lz4f_decode(f, flen, ref, cap);
			if (r >= 0) {
				accepted++;
				REQUIRE(rr == r);
				REQUIRE(memcmp(ref, s.got, (size_t)r) == 0);
				REQUIRE(!lz4w_has_offset0(f, flen));
			} else if (rr >= 0) {
				if (!lz4w_has_offset0(f, flen))
					ck_abort_msg("frame %d, byte %zu: "
						     "liblz4 takes it, we do "
						     "not", v, pos);
				off0++;
			}
			f[pos] = old;
		}
		splits_free(&s);
		free(f);
	}
	fprintf(stderr, "mutants: %u, %u decode, %u refused for offset 0 "
		"only\n", total, accepted, off0);
	/* the mutants reached both the interesting cases */
	ck_assert_uint_gt(accepted, 0);
	if (liblz4_takes_offset0())
		ck_assert_uint_gt(off0, 0);
	remove_file("mutants");
	remove_file("mutants.lz4");
	free(ref);
	free(data);
}
END_TEST

/* Where the offset of the first sequence of the LZ4 block @b lies. */
static size_t first_offset(const unsigned char *b)
{
	size_t i = 1, lit = b[0] >> 4;

	if (lit == 15) {
		do
			lit += b[i];
		while (b[i++] == 255);
	}
	return i + lit;
}

/*
 * A match of offset 0 is -EBADMSG whether its block lies in one segment
 * or spans several, one-shot or streamed, in a linked block (a history
 * before it) or not; the same frame with the offset made valid decodes.
 */
START_TEST(test_offset_zero_is_refused_in_every_split)
{
	uint64_t rng = 0x0FF0;
	size_t len, cap, flen;
	unsigned char *data = mutant_content(&len);

	cap = len + 256 * KiB;
	for (int indep = 0; indep < 2; indep++) {
		unsigned char *f = lz4f_frame(data, len, false, false, indep,
					      false, &flen);
		size_t bpos = 7, first = 4 + lz4w_le32(f + 7), blk, at;
		struct splits s;

		/* a match in the first block, and one in the second */
		for (int b = 0; b < 2; b++) {
			blk = b ? bpos + first : bpos;
			ck_assert_uint_eq(lz4w_le32(f + blk) >> 31, 0);
			splits_init(&s, f, flen, cap, &rng);
			at = blk + 4 + first_offset(f + blk + 4);
			ck_assert(f[at] || f[at + 1]);
			{
				unsigned char o0 = f[at], o1 = f[at + 1];

				f[at] = f[at + 1] = 0;
				ck_assert(lz4w_has_offset0(f, flen));
				ck_assert_int_eq(decode_every_split(&s, at),
						 -EBADMSG);
				f[at] = o0;
				f[at + 1] = o1;
			}
			ck_assert_int_eq(decode_every_split(&s, flen),
					 (ssize_t)len);
			ck_assert(memcmp(s.got, data, len) == 0);
			splits_free(&s);
		}
		free(f);
	}
	free(data);
}
END_TEST

/* ---- interoperability with the lz4 command ------------------------------- */

START_TEST(test_cli_decodes_ours)
{
	uint64_t rng = seed;
	size_t len = 3 * MiB + 17;
	unsigned char *data = make_data(len, MIXED, &rng);
	static const char *const dec[] = { "-d", NULL };

	need_cli();
	for (size_t o = 0; o <= NOPTS; o++) {
		struct bl_list in, out;
		unsigned char *f, *back;
		size_t flen, blen;

		bl_list_init(&in);
		bl_list_init(&out);
		add_logseg(&in, data, len, MiB, &rng);
		ck_assert_int_gt(bl_lz4_compress(&in, &out,
						 o < NOPTS ? &optsets[o] : NULL),
				 0);
		f = tu_flatten(&out);
		flen = bl_list_length(&out);
		write_file("ours.lz4", f, flen);
		ck_assert_msg(run_lz4(dec, "ours.lz4", "ours.out") == 0,
			      "lz4 -d refused our frame (option set %zu)", o);
		back = read_file("ours.out", &blen);
		ck_assert_uint_eq(blen, len);
		ck_assert(memcmp(back, data, len) == 0);
		free(back);
		free(f);
		bl_list_clear(&in);
		bl_list_clear(&out);
	}
	/* empty and one byte */
	for (size_t n = 0; n < 2; n++) {
		struct bl_lz4_opts o = { 0, 0, false, true, true };
		unsigned char *f, *back;
		size_t flen, blen;

		f = compress_flat("x", n, &o, &flen);
		write_file("ours.lz4", f, flen);
		ck_assert_int_eq(run_lz4(dec, "ours.lz4", "ours.out"), 0);
		back = read_file("ours.out", &blen);
		ck_assert_uint_eq(blen, n);
		ck_assert(!n || back[0] == 'x');
		free(back);
		free(f);
	}
	remove_file("ours.lz4");
	remove_file("ours.out");
	free(data);
}
END_TEST

START_TEST(test_we_decode_cli_frames)
{
	static const char *const variants[][4] = {
		{ NULL }, { "-9", NULL }, { "-12", NULL }, { "--fast=5", NULL },
		{ "-BD", NULL }, { "-BD", "-9", NULL }, { "--content-size", NULL },
		{ "--no-frame-crc", NULL }, { "-B4", NULL }, { "-B5", NULL },
		{ "-B6", NULL }, { "-B7", NULL }, { "-BX", NULL },
		{ "-BX", "-BD", "--content-size", NULL },
		{ "--no-frame-crc", "-BD", "-B4", NULL },
	};
	uint64_t rng = seed;
	size_t len = 5 * MiB + 3;
	unsigned char *data = make_data(len, MIXED, &rng);

	need_cli();
	write_file("plain", data, len);
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		unsigned char *f;
		size_t flen;

		ck_assert_int_eq(run_lz4(variants[v], "plain", "cli.lz4"), 0);
		f = read_file("cli.lz4", &flen);
		expect_decode(f, flen, 4096, data, len);
		expect_decode(f, flen, 1 + tu_rand(&rng) % 100000, data, len);
		expect_decode(f, flen, flen, data, len);
		free(f);
	}
	remove_file("plain");
	remove_file("cli.lz4");
	free(data);
}
END_TEST

/* `cat a.lz4 b.lz4`, with a skippable frame put in front by hand. */
START_TEST(test_we_decode_concatenated_and_skippable)
{
	static const char *const def[] = { NULL };
	static const char *const hc[] = { "-9", "-BD", NULL };
	uint64_t rng = seed;
	size_t la = 700 * KiB, lb = 1234;
	unsigned char *a = make_data(la, TEXT, &rng), *b = make_data(lb, RANDOM, &rng);
	unsigned char *fa, *fb_, *want = malloc(la + lb);
	struct fb all = { NULL, 0, 0 };
	size_t na, nb;

	need_cli();
	write_file("a", a, la);
	write_file("b", b, lb);
	ck_assert_int_eq(run_lz4(def, "a", "a.lz4"), 0);
	ck_assert_int_eq(run_lz4(hc, "b", "b.lz4"), 0);
	fa = read_file("a.lz4", &na);
	fb_ = read_file("b.lz4", &nb);
	fb_le32(&all, 0x184D2A5Fu);
	fb_le32(&all, 5);
	fb_put(&all, "hello", 5);
	fb_put(&all, fa, na);
	fb_put(&all, fb_, nb);
	fb_le32(&all, 0x184D2A50u);	/* an empty skippable frame at the end */
	fb_le32(&all, 0);
	memcpy(want, a, la);
	memcpy(want + la, b, lb);
	expect_decode(all.p, all.len, 1000, want, la + lb);
	expect_decode(all.p, all.len, all.len, want, la + lb);

	/* and lz4 -d agrees on what we decode from the same bytes */
	{
		static const char *const dec[] = { "-d", NULL };
		unsigned char *back;
		size_t blen;

		write_file("all.lz4", all.p, all.len);
		ck_assert_int_eq(run_lz4(dec, "all.lz4", "all.out"), 0);
		back = read_file("all.out", &blen);
		ck_assert_uint_eq(blen, la + lb);
		ck_assert(memcmp(back, want, blen) == 0);
		free(back);
	}
	remove_file("a");
	remove_file("b");
	remove_file("a.lz4");
	remove_file("b.lz4");
	remove_file("all.lz4");
	remove_file("all.out");
	free(a);
	free(b);
	free(fa);
	free(fb_);
	free(want);
	free(all.p);
}
END_TEST

/* ---- bad input ----------------------------------------------------------- */

/* A frame of several linked blocks with both checksums and content size. */
static unsigned char *small_frame(size_t *flen, unsigned char **data,
				  size_t *len)
{
	struct fb f = { NULL, 0, 0 };
	uint64_t rng = 42;
	unsigned char *d;

	*len = 3000;
	d = make_data(*len, TEXT, &rng);
	tu_fill(d + 1000, 500, &rng);
	fb_header(&f, 0x40 | 0x20 | 0x10 | 0x08 | 0x04, 0x40, *len);
	fb_block(&f, d, 1000, true, false);
	fb_block(&f, d + 1000, 1000, true, false);	/* stored: random */
	fb_block(&f, d + 2000, 1000, true, false);
	fb_le32(&f, 0);
	fb_le32(&f, bl__xxh32(d, *len, 0));
	*data = d;
	*flen = f.len;
	return f.p;
}

START_TEST(test_hand_made_frame_decodes)
{
	unsigned char *f, *d;
	size_t flen, len;

	f = small_frame(&flen, &d, &len);
	expect_decode(f, flen, flen, d, len);
	expect_decode(f, flen, 1, d, len);
	free(f);
	free(d);
}
END_TEST

START_TEST(test_truncated_at_every_byte)
{
	unsigned char *f, *d;
	size_t flen, len;

	f = small_frame(&flen, &d, &len);
	for (size_t n = 1; n < flen; n++) {
		expect_truncated(f, n, n);
		expect_truncated(f, n, 1 + n / 3);
	}
	free(f);
	free(d);
	/* and frames of our own making, every option set */
	{
		uint64_t rng = seed;
		unsigned char *data = make_data(100 * KiB, MIXED, &rng);

		for (size_t o = 0; o < NOPTS; o++) {
			unsigned char *g = compress_flat(data, 100 * KiB,
							 &optsets[o], &flen);

			for (size_t n = 1; n < flen; n += 1 + n / 64)
				expect_truncated(g, n, 1 + n / 2);
			expect_truncated(g, flen - 1, 4096);
			free(g);
		}
		free(data);
	}
}
END_TEST

START_TEST(test_bad_magic_and_header)
{
	unsigned char *f, *d, *g;
	size_t flen, len;

	f = small_frame(&flen, &d, &len);
	g = malloc(flen);
	/* magic */
	memcpy(g, f, flen);
	g[0] ^= 1;
	expect_bad(g, flen, 5, -EBADMSG);
	expect_bad("garbage!", 8, 8, -EBADMSG);
	expect_bad("\x02\x21\x4c\x18\0\0\0\0", 8, 8, -EBADMSG);	/* legacy */
	/* version, reserved bits, dictionary id, block size id < 4 */
	{
		static const unsigned flgs[] = { 0x00, 0x80, 0x42, 0x41 };
		static const unsigned bds[] = { 0x40, 0x40, 0x40, 0x40 };

		for (int i = 0; i < 4; i++) {
			struct fb h = { NULL, 0, 0 };

			fb_header(&h, flgs[i], bds[i], 0);
			fb_le32(&h, 0);
			expect_bad(h.p, h.len, 3, -EBADMSG);
			free(h.p);
		}
		for (unsigned bd = 0x00; bd < 0x40; bd += 0x10) {
			struct fb h = { NULL, 0, 0 };

			fb_header(&h, 0x40, bd, 0);
			fb_le32(&h, 0);
			expect_bad(h.p, h.len, 3, -EBADMSG);
			free(h.p);
		}
		{
			struct fb h = { NULL, 0, 0 };

			fb_header(&h, 0x40, 0x41, 0);	/* BD reserved bit */
			fb_le32(&h, 0);
			expect_bad(h.p, h.len, 3, -EBADMSG);
			free(h.p);
		}
	}
	/* header checksum */
	memcpy(g, f, flen);
	g[14] ^= 0x10;	/* inside the content size */
	expect_bad(g, flen, 7, -EBADMSG);
	free(g);
	free(f);
	free(d);
}
END_TEST

START_TEST(test_corrupt_bytes_are_ebadmsg)
{
	uint64_t rng = seed;
	size_t len = 20 * KiB, flen;
	unsigned char *data = make_data(len, MIXED, &rng);
	struct bl_lz4_opts o = { 0, 4, false, true, true };
	unsigned char *f = compress_flat(data, len, &o, &flen);
	unsigned char *f2, *d2;
	size_t flen2, len2;

	/*
	 * With a content checksum every change of the content is caught.
	 * Some bits do not change it (the match-length half of the last
	 * token, which has no match): those decode to the same bytes.
	 */
	for (size_t pos = 0; pos < flen; pos++) {
		for (int bit = 0; bit < 8; bit += (pos < 32 || flen - pos < 16) ? 1 : 3) {
			struct bl_list in, out;
			struct snap si, so;
			ssize_t r;

			f[pos] ^= (unsigned char)(1u << bit);
			bl_list_init(&in);
			out_prefill(&out);
			add_fixed(&in, f, flen, pos % 2 ? 1000 : flen);
			snap_take(&si, &in);
			snap_take(&so, &out);
			r = bl_lz4_decompress(&in, &out, 0);
			if (r >= 0) {
				ck_assert_int_eq(r, (ssize_t)len);
				ck_assert_uint_eq(bl_list_length(&out), len + 6);
				ck_assert_int_eq(bl_list_splice(&out, 0, 6, NULL), 0);
				tu_assert_list_eq(&out, data, len);
			} else {
				ck_assert_int_eq(r, -EBADMSG);
				snap_check(&so, &out);
			}
			snap_check(&si, &in);
			snap_free(&si);
			snap_free(&so);
			bl_list_clear(&in);
			bl_list_clear(&out);
			f[pos] ^= (unsigned char)(1u << bit);
		}
	}
	/* without checksums: never a crash, input and output intact */
	o.content_checksum = false;
	o.content_size = false;
	free(f);
	f = compress_flat(data, len, &o, &flen);
	for (size_t pos = 0; pos < flen; pos++) {
		struct bl_list in, out;
		struct snap si, so;
		ssize_t r;

		f[pos] ^= 0xA5;
		bl_list_init(&in);
		out_prefill(&out);
		add_fixed(&in, f, flen, pos % 3 ? 333 : flen);
		snap_take(&si, &in);
		snap_take(&so, &out);
		r = bl_lz4_decompress(&in, &out, 0);
		ck_assert(r == -EBADMSG || r >= 0);
		snap_check(&si, &in);
		if (r < 0)
			snap_check(&so, &out);
		snap_free(&si);
		snap_free(&so);
		bl_list_clear(&in);
		bl_list_clear(&out);
		f[pos] ^= 0xA5;
	}
	/* the hand-made frame with block checksums: each block's bytes */
	f2 = small_frame(&flen2, &d2, &len2);
	for (size_t pos = 15; pos < flen2; pos++) {
		f2[pos] ^= 0x01;
		expect_bad(f2, flen2, 64, -EBADMSG);
		f2[pos] ^= 0x01;
	}
	free(f2);
	free(d2);
	free(f);
	free(data);
}
END_TEST

START_TEST(test_wrong_checksums_and_sizes)
{
	uint64_t rng = 7;
	unsigned char *d = make_data(5000, TEXT, &rng);

	/* wrong content checksum */
	{
		struct fb f = { NULL, 0, 0 };

		fb_header(&f, 0x64, 0x40, 0);
		fb_block(&f, d, 5000, false, false);
		fb_le32(&f, 0);
		fb_le32(&f, bl__xxh32(d, 5000, 0) ^ 1);
		expect_bad(f.p, f.len, 100, -EBADMSG);
		free(f.p);
	}
	/* wrong block checksum */
	{
		struct fb f = { NULL, 0, 0 };

		fb_header(&f, 0x70, 0x40, 0);
		fb_block(&f, d, 5000, true, false);
		f.p[f.len - 1] ^= 0x80;
		fb_le32(&f, 0);
		expect_bad(f.p, f.len, 100, -EBADMSG);
		free(f.p);
	}
	/* a block size field above the block maximum (64 KiB) */
	{
		struct fb f = { NULL, 0, 0 };

		fb_header(&f, 0x60, 0x40, 0);
		fb_le32(&f, 64 * KiB + 1);
		expect_bad(f.p, f.len, 3, -EBADMSG);
		fb_le32(&f, 0x80000000u | (64 * KiB + 1));
		expect_bad(f.p, f.len, 3, -EBADMSG);
		free(f.p);
	}
	/* content size larger, then smaller, than the content */
	for (int delta = -1; delta <= 1; delta += 2) {
		struct fb f = { NULL, 0, 0 };

		fb_header(&f, 0x68, 0x40, (uint64_t)(5000 + delta));
		fb_block(&f, d, 5000, false, false);
		fb_le32(&f, 0);
		expect_bad(f.p, f.len, 100, -EBADMSG);
		free(f.p);
	}
	/* a stored block of exactly the maximum is fine */
	{
		unsigned char *big = make_data(64 * KiB, RANDOM, &rng);
		struct fb f = { NULL, 0, 0 };

		fb_header(&f, 0x60, 0x40, 0);
		fb_block(&f, big, 64 * KiB, false, true);
		fb_le32(&f, 0);
		expect_decode(f.p, f.len, 1000, big, 64 * KiB);
		free(f.p);
		free(big);
	}
	free(d);
}
END_TEST

START_TEST(test_garbage_after_frame)
{
	unsigned char *f, *d;
	size_t flen, len;
	struct fb g = { NULL, 0, 0 };

	f = small_frame(&flen, &d, &len);
	for (size_t extra = 1; extra <= 9; extra++) {
		g.len = 0;
		fb_put(&g, f, flen);
		fb_put(&g, "GARBAGE!!", extra);
		expect_bad(g.p, g.len, 50, -EBADMSG);
	}
	/* trailing zeros too */
	g.len = 0;
	fb_put(&g, f, flen);
	fb_le32(&g, 0);
	expect_bad(g.p, g.len, 50, -EBADMSG);
	free(g.p);
	free(f);
	free(d);
}
END_TEST

START_TEST(test_max_out_is_e2big)
{
	uint64_t rng = seed;
	size_t len = 300 * KiB, flen;
	unsigned char *data = make_data(len, TEXT, &rng);
	unsigned char *f = compress_flat(data, len, NULL, &flen);
	struct bl_list in, out;
	struct snap si, so;

	bl_list_init(&in);
	out_prefill(&out);
	add_fixed(&in, f, flen, 4096);
	snap_take(&si, &in);
	snap_take(&so, &out);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, len - 1), -E2BIG);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, 1), -E2BIG);
	snap_check(&si, &in);
	snap_check(&so, &out);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, len), (ssize_t)len);
	ck_assert_uint_eq(bl_list_length(&out), len + 6);

	/* streaming: max_out counts the whole stream, over two feeds */
	{
		struct bl_lz4_decoder *d = bl_lz4_decoder_new(2 * len - 1);
		struct bl_list o2;

		bl_list_init(&o2);
		ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &o2), (ssize_t)len);
		ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &o2), -E2BIG);
		ck_assert_uint_eq(bl_list_length(&o2), len);
		ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &o2), -EINVAL);
		ck_assert_int_eq(bl_lz4_decoder_end(d), -EINVAL);
		bl_lz4_decoder_free(d);
		bl_list_clear(&o2);
	}
	snap_free(&si);
	snap_free(&so);
	bl_list_clear(&in);
	bl_list_clear(&out);
	free(f);
	free(data);
}
END_TEST

/* 64 MiB of zeros in a ~250 KiB frame, 1 MiB allowed: refused early. */
START_TEST(test_decompression_bomb)
{
	size_t len = 64 * MiB, flen;
	unsigned char *zeros = calloc(1, len);
	struct bl_lz4_opts o = { 0, 7, false, false, false };
	unsigned char *f = compress_flat(zeros, len, &o, &flen);
	struct bl_list in, out;
	struct bl_lz4_decoder *d;

	ck_assert_uint_lt(flen * 200, len);
	bl_list_init(&in);
	bl_list_init(&out);
	add_fixed(&in, f, flen, 4096);
	tu_alloc_install(0, 0);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, MiB), -E2BIG);
	{
		struct tu_alloc_stats st;

		/* it stopped after one block: a few MiB at most were ever used */
		tu_alloc_stats(&st);
		ck_assert_int_eq(st.live_bytes, 0);
		ck_assert_uint_lt(st.allocs, 8);
	}
	d = bl_lz4_decoder_new(MiB);
	ck_assert_int_eq(bl_lz4_decoder_feed(d, &in, &out), -E2BIG);
	bl_lz4_decoder_free(d);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	tu_alloc_uninstall();
	free(f);

	/* a content size above the limit is refused before any block */
	o.content_size = true;
	f = compress_flat(zeros, 2 * MiB, &o, &flen);
	bl_list_clear(&in);
	add_fixed(&in, f, 15, 15);	/* the header alone */
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, MiB), -E2BIG);
	free(f);
	bl_list_clear(&in);
	free(zeros);
}
END_TEST

/* ---- allocation failure -------------------------------------------------- */

static void compress_fail_each(const struct bl_list *in,
			       const struct bl_lz4_opts *o)
{
	struct tu_alloc_stats st;
	struct snap si, so;
	struct bl_list out;
	uint64_t n;
	ssize_t r;

	out_prefill(&out);
	snap_take(&si, in);
	snap_take(&so, &out);
	for (n = 1;; n++) {
		tu_alloc_install(n, 0);
		r = bl_lz4_compress(in, &out, o);
		tu_alloc_stats(&st);
		if (r >= 0) {
			ck_assert_uint_eq(st.failed, 0);
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
		snap_check(&si, in);
		snap_check(&so, &out);
	}
	ck_assert_uint_gt(n, 1);
	bl_list_clear(&out);
	tu_alloc_stats(&st);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();
	snap_free(&si);
	snap_free(&so);
}

START_TEST(test_compress_alloc_failure_at_each_step)
{
	uint64_t rng = seed;
	size_t len = 3 * MiB;
	unsigned char *data = make_data(len, MIXED, &rng);
	struct bl_lz4_opts hc = { 9, 4, false, true, true };
	struct bl_lz4_opts fi = { 0, 5, true, false, false };
	struct bl_list in;

	bl_list_init(&in);
	add_fixed(&in, data, 100 * KiB, 4 * KiB);	/* staged */
	add_fixed(&in, data + 100 * KiB, len - 100 * KiB, 700 * KiB);
	compress_fail_each(&in, NULL);
	compress_fail_each(&in, &hc);
	compress_fail_each(&in, &fi);
	bl_list_clear(&in);
	free(data);
}
END_TEST

static void decompress_fail_each(const struct bl_list *in, size_t want)
{
	struct tu_alloc_stats st;
	struct snap si, so;
	struct bl_list out;
	uint64_t n;
	ssize_t r;

	out_prefill(&out);
	snap_take(&si, in);
	snap_take(&so, &out);
	for (n = 1;; n++) {
		tu_alloc_install(n, 0);
		r = bl_lz4_decompress(in, &out, 0);
		tu_alloc_stats(&st);
		if (r >= 0) {
			ck_assert_int_eq(r, (ssize_t)want);
			ck_assert_uint_eq(bl_list_length(&out), 6 + want);
			if (!st.failed)
				break;
			/* only the trim of the last raw may fail quietly */
			ck_assert_int_eq(bl_list_splice(&out, 6, want, NULL), 0);
			tu_alloc_stats(&st);
			ck_assert_int_eq(st.live_bytes, 0);
			tu_alloc_uninstall();
			snap_check(&so, &out);
			continue;
		}
		ck_assert_int_eq(r, -ENOMEM);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
		snap_check(&si, in);
		snap_check(&so, &out);
	}
	bl_list_clear(&out);
	tu_alloc_stats(&st);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();

	/* the streaming decoder: a failed feed appends nothing, then dies */
	for (n = 1;; n++) {
		struct bl_lz4_decoder *d;

		out_prefill(&out);
		tu_alloc_install(n, 0);
		errno = 0;
		d = bl_lz4_decoder_new(0);
		if (!d) {
			ck_assert_int_eq(errno, ENOMEM);
			tu_alloc_uninstall();
			bl_list_clear(&out);
			continue;
		}
		r = bl_lz4_decoder_feed(d, in, &out);
		if (r >= 0) {
			ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
			bl_lz4_decoder_free(d);
			bl_list_clear(&out);
			tu_alloc_stats(&st);
			ck_assert_int_eq(st.live_bytes, 0);
			tu_alloc_uninstall();
			break;
		}
		ck_assert_int_eq(r, -ENOMEM);
		snap_check(&so, &out);
		ck_assert_int_eq(bl_lz4_decoder_feed(d, in, &out), -EINVAL);
		bl_lz4_decoder_free(d);
		bl_list_clear(&out);
		tu_alloc_stats(&st);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
		snap_check(&si, in);
	}
	snap_free(&si);
	snap_free(&so);
}

START_TEST(test_decompress_alloc_failure_at_each_step)
{
	uint64_t rng = seed;
	size_t len = 3 * MiB, flen;
	unsigned char *data = make_data(len, MIXED, &rng);
	struct bl_lz4_opts o = { 0, 4, false, true, false };
	unsigned char *f = compress_flat(data, len, &o, &flen);
	struct bl_list in;

	bl_list_init(&in);
	add_fixed(&in, f, flen, 4 * KiB);
	decompress_fail_each(&in, len);
	bl_list_clear(&in);
	free(f);
	f = compress_flat(data, 5000, NULL, &flen);
	add_fixed(&in, f, flen, 100);
	decompress_fail_each(&in, 5000);
	bl_list_clear(&in);
	free(f);
	free(data);
}
END_TEST

/* ---- zero copy and output shape ------------------------------------------ */

START_TEST(test_compress_reads_large_segments_in_place)
{
	uint64_t rng = seed;
	size_t len = 4 * MiB;
	unsigned char *data = make_data(len, TEXT, &rng);
	static const size_t segs[] = { 64 * KiB, 100 * KiB, MiB, 4 * MiB };

	for (size_t s = 0; s < sizeof(segs) / sizeof(segs[0]); s++) {
		for (size_t o = 0; o < NOPTS; o++) {
			struct bl_list in, out;
			uint64_t before;

			/* HC is slow; each HC option set with one segment size */
			if (optsets[o].level >= 3 && o % 4 != s)
				continue;
			bl_list_init(&in);
			bl_list_init(&out);
			add_fixed(&in, data, len, segs[s]);
			before = copied_now();
			ck_assert_int_gt(bl_lz4_compress(&in, &out, &optsets[o]), 0);
			ck_assert_msg(copied_now() == before,
				      "compress copied %llu bytes of %zu-byte segments",
				      (unsigned long long)(copied_now() - before),
				      segs[s]);
			bl_list_clear(&in);
			bl_list_clear(&out);
		}
	}
	free(data);
}
END_TEST

START_TEST(test_compress_stages_only_small_segments)
{
	uint64_t rng = seed;
	size_t len = 4 * MiB;
	unsigned char *data = make_data(len, TEXT, &rng);
	struct bl_list in, out;
	uint64_t before, copied;

	/* 4 KiB segments are staged: each byte once, plus the dictionary
	 * moved when the 1 MiB ring wraps */
	bl_list_init(&in);
	bl_list_init(&out);
	add_fixed(&in, data, len, 4 * KiB);
	before = copied_now();
	ck_assert_int_gt(bl_lz4_compress(&in, &out, NULL), 0);
	copied = copied_now() - before;
	ck_assert_uint_ge(copied, len);
	ck_assert_uint_le(copied, len + (len / MiB + 1) * 64 * KiB);
	bl_list_clear(&in);
	bl_list_clear(&out);

	/* a mix: only the small segments are copied */
	add_fixed(&in, data, 10000, 10000);
	add_fixed(&in, data + 10000, 2 * MiB, MiB);
	add_fixed(&in, data + 10000 + 2 * MiB, 20000, 20000);
	before = copied_now();
	ck_assert_int_gt(bl_lz4_compress(&in, &out, NULL), 0);
	ck_assert_uint_eq(copied_now() - before, 30000);
	bl_list_clear(&in);
	bl_list_clear(&out);
	free(data);
}
END_TEST

START_TEST(test_decompress_reads_input_in_place)
{
	uint64_t rng = seed;
	size_t len = 3 * MiB, flen;
	unsigned char *data = make_data(len, TEXT, &rng);

	for (int indep = 0; indep < 2; indep++) {
		struct bl_lz4_opts o = { 0, 4, indep, true, false };
		unsigned char *f = compress_flat(data, len, &o, &flen);
		static const size_t segs[] = { 7, 4 * KiB, MiB };

		for (size_t s = 0; s < 3; s++) {
			struct bl_list in, out;
			uint64_t before, copied, bound;

			bl_list_init(&in);
			bl_list_init(&out);
			add_fixed(&in, f, flen, segs[s]);
			before = copied_now();
			ck_assert_int_eq(bl_lz4_decompress(&in, &out, 0),
					 (ssize_t)len);
			copied = copied_now() - before;
			/*
			 * Blocks spanning segments are decoded where they lie:
			 * what is copied is at most the dictionary carried
			 * into each new output raw of a linked frame, and the
			 * trimmed last raw.
			 */
			bound = (indep ? 0 : 64 * KiB *
					  (uint64_t)bl_list_num_buffers(&out)) +
				MiB;
			ck_assert_msg(copied <= bound,
				      "decompress copied %llu (bound %llu)",
				      (unsigned long long)copied,
				      (unsigned long long)bound);
			tu_assert_list_eq(&out, data, len);
			bl_list_clear(&in);
			bl_list_clear(&out);
		}
		free(f);
	}
	free(data);
}
END_TEST

START_TEST(test_small_output_pins_little)
{
	struct bl_list in, out;
	unsigned char *f;
	size_t flen;

	f = compress_flat("hello, hello, hello", 19, NULL, &flen);
	bl_list_init(&in);
	bl_list_init(&out);
	add_fixed(&in, f, flen, 3);
	ck_assert_int_eq(bl_lz4_decompress(&in, &out, 0), 19);
	ck_assert_uint_eq(bl_list_num_buffers(&out), 1);
	ck_assert_uint_lt(bl_list_pinned_unused(&out), 64);
	tu_assert_list_eq(&out, "hello, hello, hello", 19);
	bl_list_clear(&in);
	bl_list_clear(&out);

	/* compressing a small input makes a small raw too */
	add_fixed(&in, "hello, hello, hello", 19, 19);
	ck_assert_int_gt(bl_lz4_compress(&in, &out, NULL), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&out), 1);
	ck_assert_uint_lt(bl_list_pinned_unused(&out), 128);
	bl_list_clear(&in);
	bl_list_clear(&out);
	free(f);
}
END_TEST

START_TEST(test_output_segments_are_large_and_valid)
{
	uint64_t rng = seed;
	size_t len = 16 * MiB;
	unsigned char *data = make_data(len, MIXED, &rng);
	struct bl_list in, out, back;

	bl_list_init(&in);
	bl_list_init(&out);
	bl_list_init(&back);
	add_fixed(&in, data, len, 4 * KiB);
	ck_assert_int_gt(bl_lz4_compress(&in, &out, NULL), 0);
	ck_assert_int_eq(bl__list_validate(&out), 0);
	/* whole blocks per raw: far fewer segments than blocks */
	ck_assert_uint_lt(bl_list_num_buffers(&out), len / MiB * 2 + 2);
	ck_assert_uint_lt(bl_list_pinned_unused(&out), bl_list_length(&out) / 4);
	ck_assert_int_eq(bl_lz4_decompress(&out, &back, 0), (ssize_t)len);
	ck_assert_uint_lt(bl_list_num_buffers(&back), len / (512 * KiB));
	ck_assert_uint_lt(bl_list_pinned_unused(&back), len / 8);
	tu_assert_list_eq(&back, data, len);
	bl_list_clear(&in);
	bl_list_clear(&out);
	bl_list_clear(&back);
	free(data);
}
END_TEST

/*
 * The decoder grows its output raw alone (a linked stream reads its
 * history there): the slices it hands out cannot grow into it, and the
 * stream decodes whole.
 */
START_TEST(test_stream_survives_caller_appending_to_output)
{
	uint64_t rng = seed;
	size_t len = 400 * KiB, flen;
	unsigned char *data = make_data(len, TEXT, &rng);
	struct bl_lz4_opts o = { 0, 4, false, true, false };
	unsigned char *f = compress_flat(data, len, &o, &flen);
	struct bl_lz4_decoder *d = bl_lz4_decoder_new(0);
	struct bl_list out, in;
	size_t off = 0, produced = 0;

	bl_list_init(&out);
	while (off < flen) {
		size_t n = flen - off < 9000 ? flen - off : 9000;
		struct bl_list o2;
		struct bl_ptr last;

		bl_list_init(&in);
		bl_list_init(&o2);
		add_fixed(&in, f + off, n, n);
		ck_assert_int_ge(bl_lz4_decoder_feed(d, &in, &o2), 0);
		/* try to write into the raw's tail through the slice we got */
		if (bl_list_num_buffers(&o2)) {
			ck_assert_int_eq(bl_list_get_ptr(&o2, bl_list_num_buffers(&o2) - 1,
							 &last), 0);
			ck_assert_uint_eq(bl_ptr_unused_tail(&last), 0);
			ck_assert_int_eq(bl_ptr_append(&last, "xyz", 3), -ENOSPC);
			bl_ptr_release(&last);
		}
		produced += bl_list_length(&o2);
		ck_assert_int_eq(bl_list_claim_append(&out, &o2), 0);
		bl_list_clear(&in);
		off += n;
	}
	ck_assert_int_eq(bl_lz4_decoder_end(d), 0);
	bl_lz4_decoder_free(d);
	tu_assert_list_eq(&out, data, len);
	bl_list_clear(&out);
	free(f);
	free(data);
}
END_TEST

static Suite *lz4_suite(void)
{
	const TTest *xxh32_tests[] = {
		test_xxh32_matches_liblz4,
		test_xxh32_streaming_any_split,
		NULL
	};
	const TTest *roundtrip_tests[] = {
		test_roundtrip_small_sizes,
		test_output_of_a_thread_local_thread_is_thread_local,
		test_roundtrip_segments_over_one_raw,
		test_bad_options_are_einval,
		NULL
	};
	const struct tu_loop roundtrip_loops[] = {
		{ test_roundtrip_10mib, 0, 3 },
		{ NULL, 0, 0 }
	};
	const TTest *segmentation_tests[] = {
		test_decode_every_segmentation_of_tiny_frame,
		test_decode_one_byte_segments_and_every_cut,
		test_stream_random_pieces_many_frames,
		test_stream_empty_feeds_and_end,
		test_block_decoder_agrees_with_liblz4,
		test_block_decoder_seams_near_block_end,
		test_stream_survives_caller_appending_to_output,
		test_mutants_decode_alike_in_every_split,
		test_offset_zero_is_refused_in_every_split,
		NULL
	};
	const TTest *interop_tests[] = {
		test_cli_decodes_ours,
		test_we_decode_cli_frames,
		test_we_decode_concatenated_and_skippable,
		NULL
	};
	const TTest *bad_input_tests[] = {
		test_hand_made_frame_decodes,
		test_truncated_at_every_byte,
		test_bad_magic_and_header,
		test_corrupt_bytes_are_ebadmsg,
		test_wrong_checksums_and_sizes,
		test_garbage_after_frame,
		test_max_out_is_e2big,
		test_decompression_bomb,
		NULL
	};
	const TTest *failure_tests[] = {
		test_compress_alloc_failure_at_each_step,
		test_decompress_alloc_failure_at_each_step,
		NULL
	};
	const TTest *zero_copy_tests[] = {
		test_compress_reads_large_segments_in_place,
		test_compress_stages_only_small_segments,
		test_decompress_reads_input_in_place,
		test_small_output_pins_little,
		test_output_segments_are_large_and_valid,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("xxh32", xxh32_tests),
		TU_GROUP("roundtrip", roundtrip_tests,
			 .loops = roundtrip_loops, .timeout = 600,
			 .setup = NULL, .teardown = tu_thread_local_off),
		TU_GROUP("segmentation", segmentation_tests, .timeout = 600),
		TU_GROUP("interop", interop_tests, .timeout = 600),
		TU_GROUP("bad_input", bad_input_tests, .timeout = 600),
		TU_GROUP("failure", failure_tests, .timeout = 600),
		TU_GROUP("zero_copy", zero_copy_tests, .timeout = 600),
		TU_GROUP_END
	};

	return tu_suite("lz4", groups);
}

int main(void)
{
	int ret;

	seed = tu_seed("test_lz4");
	/* made here, not in the forked tests, so that main removes it */
	strcpy(tmpdir, "/tmp/bl_lz4_XXXXXX");
	if (!mkdtemp(tmpdir))
		tmpdir[0] = 0;
	ret = tu_run(lz4_suite());
	if (tmpdir[0])
		rmdir(tmpdir);
	return ret;
}
