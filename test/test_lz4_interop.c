/* SPDX-License-Identifier: MIT */
/*
 * test_lz4_interop.c - LZ4 frames between the library, liblz4 and the
 * `lz4` command: mutated frames decode alike in every segmentation (and
 * as liblz4 decodes them, but for the offset 0 it takes), and the
 * command decodes our frames and we decode its, concatenated and with
 * skippable frames too.
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
/* ---- one result for every segmentation, on mutated frames ---------------- */

/* Appends [@p, @p + @n) as one segment over a raw of its own (no copy). */
static void add_static(struct bl_list *l, const unsigned char *p, size_t n)
{
	struct bl_raw *r = bl_raw_create_static(p, n);
	struct bl_ptr bp;

	TU_REQUIRE(r);
	bl_ptr_from_raw(&bp, r);
	TU_REQUIRE(bl_list_append_ptr_move(l, &bp) == 0);
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
	TU_REQUIRE(s->got);
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

	TU_REQUIRE(d);
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct bl_list piece;

		bl_list_init(&piece);
		add_static(&piece, f + i, 1);
		r = bl_lz4_decoder_feed(d, &piece, out);
		bl_list_clear(&piece);
		total += r > 0 ? r : 0;
	}
	if (r >= 0 && !(r = bl_lz4_decoder_end(d)))
		r = total;
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
				TU_REQUIRE((size_t)r <= s->got_cap);
				TU_REQUIRE(bl_list_copy_out(&out, 0, (size_t)r,
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
			TU_REQUIRE(bl_list_length(&out) == (size_t)r);
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

	TU_REQUIRE(!LZ4F_isError(LZ4F_createDecompressionContext(&dctx,
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
	unsigned char *p = malloc(n), *t = tu_data(1500, TU_TEXT, &rng);

	TU_REQUIRE(p);
	for (size_t off = 0; off < 64 * KiB; off += 1500) {
		size_t k = 64 * KiB - off < 1500 ? 64 * KiB - off : 1500;

		memcpy(p + off, t, k);
		p[off] = (unsigned char)(off / 1500);
	}
	tu_fill_text(p + 64 * KiB, 3 * KiB, &rng);
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
	TU_REQUIRE(f);
	n = LZ4F_compressFrame(f, cap, data, len, &prefs);
	TU_REQUIRE(!LZ4F_isError(n));
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
	TU_REQUIRE(ref);
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
				TU_REQUIRE(rr == r);
				TU_REQUIRE(memcmp(ref, s.got, (size_t)r) == 0);
				TU_REQUIRE(!lz4w_has_offset0(f, flen));
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
	/* make check (BL_TEST_QUICK): 1 MiB, still more than one block
	 * for every block size but 4 MiB, and HC's levels take a third of
	 * the time */
	size_t len = getenv("BL_TEST_QUICK") ? MiB + 17 : 3 * MiB + 17;
	unsigned char *data = tu_data(len, TU_MIXED, &rng);
	static const char *const dec[] = { "-d", NULL };

	need_cli();
	for (size_t o = 0; o <= TU_LZ4_NOPTS; o++) {
		struct bl_list in, out;
		unsigned char *f, *back;
		size_t flen, blen;

		bl_list_init(&in);
		bl_list_init(&out);
		tu_logseg(&in, data, len, MiB, &rng);
		ck_assert_int_gt(bl_lz4_compress(&in, &out, o < TU_LZ4_NOPTS ?
						 &tu_lz4_opts[o] : NULL), 0);
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

		f = tu_lz4_flat("x", n, &o, &flen);
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
	unsigned char *data = tu_data(len, TU_MIXED, &rng);

	need_cli();
	write_file("plain", data, len);
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		unsigned char *f;
		size_t flen;

		ck_assert_int_eq(run_lz4(variants[v], "plain", "cli.lz4"), 0);
		f = read_file("cli.lz4", &flen);
		tu_lz4_expect(f, flen, 4096, data, len);
		tu_lz4_expect(f, flen, 1 + tu_rand(&rng) % 100000, data, len);
		tu_lz4_expect(f, flen, flen, data, len);
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
	unsigned char *a = tu_data(la, TU_TEXT, &rng);
	unsigned char *b = tu_data(lb, TU_RANDOM, &rng);
	unsigned char *fa, *fb_, *want = malloc(la + lb);
	struct tu_fb all = { NULL, 0, 0 };
	size_t na, nb;

	need_cli();
	write_file("a", a, la);
	write_file("b", b, lb);
	ck_assert_int_eq(run_lz4(def, "a", "a.lz4"), 0);
	ck_assert_int_eq(run_lz4(hc, "b", "b.lz4"), 0);
	fa = read_file("a.lz4", &na);
	fb_ = read_file("b.lz4", &nb);
	tu_fb_le32(&all, 0x184D2A5Fu);
	tu_fb_le32(&all, 5);
	tu_fb_put(&all, "hello", 5);
	tu_fb_put(&all, fa, na);
	tu_fb_put(&all, fb_, nb);
	/* an empty skippable frame at the end */
	tu_fb_le32(&all, 0x184D2A50u);
	tu_fb_le32(&all, 0);
	memcpy(want, a, la);
	memcpy(want + la, b, lb);
	tu_lz4_expect(all.p, all.len, 1000, want, la + lb);
	tu_lz4_expect(all.p, all.len, all.len, want, la + lb);

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

int main(void)
{
	const TTest *mutant_tests[] = {
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
	const struct tu_group groups[] = {
		TU_GROUP("mutants", mutant_tests, .timeout = 600),
		TU_GROUP("interop", interop_tests, .timeout = 600),
		TU_GROUP_END
	};
	int ret;

	seed = tu_seed("test_lz4_interop");
	/* made here, not in the forked tests, so that main removes it */
	strcpy(tmpdir, "/tmp/bl_lz4_XXXXXX");
	if (!mkdtemp(tmpdir))
		tmpdir[0] = 0;
	ret = tu_run(tu_suite("lz4_interop", groups));
	if (tmpdir[0])
		rmdir(tmpdir);
	return ret;
}
