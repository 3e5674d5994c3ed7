/* SPDX-License-Identifier: MIT */
/*
 * test_crc32c.c - CRC-32C: known values, every implementation this CPU
 * runs against the table (itself checked against the bitwise definition),
 * the zeros/combine algebra, the constants recomputed from scratch, and
 * the run-time choice of an implementation.
 */
#include <errno.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"
#include "crc32c_int.h"

extern char **environ;

static uint64_t seed;

#define for_each_impl(i)						\
	for ((i) = bl__crc32c_impls; (i)->name; (i)++)			\
		if (!(i)->supported()) {				\
		} else

/* ---- an independent reference: the definition, one bit at a time ------ */

static uint32_t crc_bitwise(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (crc & 1 ? BL__CRC32C_POLY : 0);
	}
	return crc;
}

/* a * b mod P, reflected (x^0 is bit 31), written as plainly as possible */
static uint32_t gf2_mul(uint32_t a, uint32_t b)
{
	uint32_t p = 0;
	int i;

	for (i = 0; i < 32; i++) {
		if (a & (0x80000000u >> i))
			p ^= b;
		b = (b >> 1) ^ (b & 1 ? BL__CRC32C_POLY : 0);
	}
	return p;
}

/* x^n mod P for any n, negative ones through x^-1 = (POLY << 1) | 1 */
static uint32_t gf2_xpow(long long n)
{
	uint32_t x = 0x40000000u, r = 0x80000000u;
	unsigned long long e = (unsigned long long)n;

	if (n < 0) {
		x = (BL__CRC32C_POLY << 1) | 1;
		e = -e;
	}
	for (; e; e >>= 1) {
		if (e & 1)
			r = gf2_mul(r, x);
		x = gf2_mul(x, x);
	}
	return r;
}

static unsigned char *random_buf(size_t len, uint64_t *rng)
{
	unsigned char *b = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(b);
	tu_fill(b, len, rng);
	return b;
}

/* ---- known values ------------------------------------------------------- */

struct vector {
	const char *data;
	uint32_t seed, crc;
};

/* Printed by ceph::bufferlist::crc32c() from librados 16.2.15 on this box. */
static const struct vector ceph_vectors[] = {
	{ "A", 0, 0xb3109ebf },
	{ "A", 1234, 0x81f80fe7 },
	{ "A", 0xffffffff, 0x1e923211 },
	{ "123456789", 0, 0x58e3fa20 },
	{ "123456789", 0xffffffff, 0x1cf96d7c },
	{ "foo bar baz", 0, 4119623852u },
	{ "foo bar baz", 1234, 881700046u },
	{ "whiz bang boom", 0, 2360230088u },
	{ "whiz bang boom", 5678, 3743019208u },
	{ "", 0x12345678, 0x12345678 },
};

START_TEST(crc_matches_ceph_values_in_every_impl)
{
	const struct bl__crc32c_impl *i;
	size_t v;

	for_each_impl(i) {
		ck_assert_int_eq(bl__crc32c_set_impl(i->name), 0);
		for (v = 0; v < sizeof(ceph_vectors) / sizeof(ceph_vectors[0]);
		     v++) {
			const struct vector *c = &ceph_vectors[v];

			ck_assert_msg(bl_crc32c(c->seed, c->data,
						strlen(c->data)) == c->crc,
				      "%s: \"%s\" seed %u", i->name, c->data,
				      c->seed);
		}
		/* the standard check value, through the inversions */
		ck_assert_uint_eq(~bl_crc32c(0xffffffff, "123456789", 9),
				  0xe3069283);
	}
}
END_TEST

/* RFC 3720 (iSCSI) appendix B.4, whose values are pre- and post-inverted */
START_TEST(crc_matches_rfc3720_vectors_in_every_impl)
{
	static const unsigned char pdu[48] = {
		0x01, 0xc0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0x14, 0, 0, 0, 0, 0, 0x04, 0, 0, 0, 0, 0x14, 0, 0, 0, 0x18,
		0x28, 0, 0, 0, 0, 0, 0, 0, 0x02, 0, 0, 0, 0, 0, 0, 0,
	};
	const struct bl__crc32c_impl *i;
	unsigned char zeros[32], ones[32], inc[32], dec[32];
	int k;

	memset(zeros, 0, sizeof(zeros));
	memset(ones, 0xff, sizeof(ones));
	for (k = 0; k < 32; k++) {
		inc[k] = (unsigned char)k;
		dec[k] = (unsigned char)(31 - k);
	}
	for_each_impl(i) {
		ck_assert_int_eq(bl__crc32c_set_impl(i->name), 0);
		ck_assert_uint_eq(~bl_crc32c(~0u, zeros, 32), 0x8a9136aa);
		ck_assert_uint_eq(~bl_crc32c(~0u, ones, 32), 0x62a8ab43);
		ck_assert_uint_eq(~bl_crc32c(~0u, inc, 32), 0x46dd794e);
		ck_assert_uint_eq(~bl_crc32c(~0u, dec, 32), 0x113fdb5c);
		ck_assert_uint_eq(~bl_crc32c(~0u, pdu, 48), 0xd9963a56);
		/* Ceph's convention: zeros with seed 0 stay 0 */
		ck_assert_uint_eq(bl_crc32c(0, zeros, 32), 0);
	}
}
END_TEST

/* ---- the constants ------------------------------------------------------ */

START_TEST(tables_match_bitwise_definition)
{
	uint32_t t0[256], c;
	int b, k;

	for (b = 0; b < 256; b++) {
		unsigned char byte = (unsigned char)b;

		t0[b] = crc_bitwise(0, &byte, 1);
		ck_assert_uint_eq(bl__crc32c_table[0][b], t0[b]);
	}
	for (b = 0; b < 256; b++) {
		/* byte b followed by k zero bytes */
		unsigned char msg[8] = { (unsigned char)b };

		for (k = 1; k < 8; k++) {
			c = crc_bitwise(0, msg, (size_t)k + 1);
			ck_assert_msg(bl__crc32c_table[k][b] == c,
				      "table[%d][%d]", k, b);
		}
	}
	/* and the bitwise reference itself is the standard CRC-32C */
	ck_assert_uint_eq(~crc_bitwise(~0u, "123456789", 9), 0xe3069283);
}
END_TEST

START_TEST(zeros_operators_are_powers_of_x)
{
	uint32_t x2n = gf2_xpow(8), xinv33 = gf2_xpow(-33);
	int k;

	/* x * x^-1 = 1 checks the inverse behind the x^-33 */
	ck_assert_uint_eq(gf2_mul(0x40000000u, gf2_xpow(-1)), 0x80000000u);
	for (k = 0; k < 64; k++) {
		ck_assert_msg(bl__crc32c_x2n33[k] == gf2_mul(x2n, xinv33),
			      "x2n33[%d]", k);
		x2n = gf2_mul(x2n, x2n);
	}
	/* times x^33 it really appends 2^6 zero bytes */
	ck_assert_uint_eq(gf2_mul(gf2_mul(bl__crc32c_x2n33[6], gf2_xpow(33)),
				  0xdeadbeef),
			  crc_bitwise(0xdeadbeef, (const char[64]){ 0 }, 64));
}
END_TEST

#if defined(__x86_64__)
START_TEST(folding_constants_are_powers_of_x)
{
	long long f;
	int k;

	for (k = 1; k <= 16; k++) {
		f = 128LL * k;
		ck_assert_msg(bl__crc32c_fold[k - 1][0] == gf2_xpow(f + 31),
			      "fold[%d].lo", k);
		ck_assert_msg(bl__crc32c_fold[k - 1][1] == gf2_xpow(f - 33),
			      "fold[%d].hi", k);
	}
	ck_assert_uint_eq(BL__CRC32C_SHIFT_LONG,
			  gf2_xpow(8LL * BL__CRC32C_LONG - 33));
	ck_assert_uint_eq(BL__CRC32C_SHIFT_SHORT,
			  gf2_xpow(8LL * BL__CRC32C_SHORT - 33));
}
END_TEST

static void check_fused(const struct bl__crc32c_fused *f, long long step,
			long long steps, long long qwords)
{
	long long c = steps * qwords * 8, bits = 8 * (step + 3 * c);
	int k;

	ck_assert_uint_eq(f->jump[0], gf2_xpow(bits + 31));
	ck_assert_uint_eq(f->jump[1], gf2_xpow(bits - 33));
	for (k = 1; k <= 3; k++)
		ck_assert_uint_eq(f->shift[k - 1], gf2_xpow(8 * k * c - 33));
}

START_TEST(join_constants_are_powers_of_x)
{
	int w;

	for (w = 1; w <= 2 * BL__CRC32C_3WAY_WORDS; w++)
		ck_assert_msg(bl__crc32c_words33[w - 1] ==
			      gf2_xpow(64LL * w - 33), "words33[%d]", w);
	check_fused(&bl__crc32c_fused_xmm, 128, BL__CRC32C_XMM_STEPS,
		    BL__CRC32C_XMM_QWORDS);
	check_fused(&bl__crc32c_fused_zmm, 256, BL__CRC32C_ZMM_STEPS,
		    BL__CRC32C_ZMM_QWORDS);
}
END_TEST

/* super block sizes of the fused loops, see crc32c_int.h */
#define XMM_SUPER (BL__CRC32C_XMM_STEPS * (128 + 24 * BL__CRC32C_XMM_QWORDS))
#define ZMM_SUPER (BL__CRC32C_ZMM_STEPS * (256 + 24 * BL__CRC32C_ZMM_QWORDS))
#endif

/* ---- implementations against the table ---------------------------------- */

START_TEST(table_matches_bitwise_small_lengths_and_offsets)
{
	uint64_t rng = seed;
	unsigned char *buf = random_buf(600, &rng);
	size_t len, off;
	uint32_t s;

	for (len = 0; len <= 520; len++)
		for (off = 0; off < 8; off++) {
			s = (uint32_t)tu_rand(&rng);
			ck_assert_msg(bl__crc32c_sw(s, buf + off, len) ==
				      crc_bitwise(s, buf + off, len),
				      "len %zu off %zu", len, off);
		}
	free(buf);
}
END_TEST

/* Every length 0..4096 at every offset 0..63, through the dispatcher. */
START_TEST(every_impl_matches_table_all_lengths_offsets)
{
	uint64_t rng = seed;
	unsigned char *buf = random_buf(4096 + 64, &rng);
	const struct bl__crc32c_impl *i;
	size_t len, off;
	uint32_t s, want;

	for (len = 0; len <= 4096; len++)
		for (off = 0; off < 64; off++) {
			s = (uint32_t)tu_rand(&rng);
			want = bl__crc32c_sw(s, buf + off, len);
			for_each_impl(i) {
				bl__crc32c_set_impl(i->name);
				if (bl_crc32c(s, buf + off, len) != want)
					ck_abort_msg("%s: len %zu off %zu",
						     i->name, len, off);
			}
		}
	free(buf);
}
END_TEST

START_TEST(every_impl_matches_table_random_large)
{
	uint64_t rng = seed;
	const size_t max = (3u << 20) + 100;
	unsigned char *buf = random_buf(max + 64, &rng);
	const struct bl__crc32c_impl *i;
	size_t len, off;
	uint32_t s, want;
	int n;

	for (n = 0; n < 32; n++) {
		/* most of them around the block sizes of the big loops */
		size_t unit = 0;

		switch (n % 4) {
#if defined(__x86_64__)
		case 1:
			unit = 3 * BL__CRC32C_LONG;
			break;
		case 2:
			unit = XMM_SUPER;
			break;
		case 3:
			unit = ZMM_SUPER;
			break;
#endif
		}
		if (unit)
			len = unit * (1 + tu_rand(&rng) % 8) +
			      tu_rand(&rng) % 1025 - 512;
		else
			len = 4097 + tu_rand(&rng) % (max - 4097);
		off = tu_rand(&rng) % 64;
		s = (uint32_t)tu_rand(&rng);
		want = bl__crc32c_sw(s, buf + off, len);
		for_each_impl(i)
			ck_assert_msg(i->crc(s, buf + off, len) == want,
				      "%s: len %zu off %zu", i->name, len, off);
	}
	free(buf);
}
END_TEST

/*
 * Data placed flush against an inaccessible page on either side: an
 * implementation that reads a byte too many (a vector load past the end,
 * or an alignment step before the start) dies of SIGSEGV.
 */
START_TEST(no_impl_reads_outside_the_buffer)
{
	const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	const size_t span = 13 * pg;	/* past a super block and a bit */
	uint64_t rng = seed;
	unsigned char *map, *lo, *hi;
	const struct bl__crc32c_impl *i;
	size_t len;

	map = mmap(NULL, span + 2 * pg, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(mprotect(map, pg, PROT_NONE), 0);
	ck_assert_int_eq(mprotect(map + pg + span, pg, PROT_NONE), 0);
	lo = map + pg;
	hi = lo + span;
	tu_fill(lo, span, &rng);
	for (len = 0; len <= span; len += len < 1200 ? 1 : 97) {
		uint32_t s = (uint32_t)tu_rand(&rng);
		uint32_t at_lo = bl__crc32c_sw(s, lo, len);
		uint32_t at_hi = bl__crc32c_sw(s, hi - len, len);

		for_each_impl(i) {
			ck_assert_msg(i->crc(s, lo, len) == at_lo, "%s %zu",
				      i->name, len);
			ck_assert_msg(i->crc(s, hi - len, len) == at_hi,
				      "%s %zu", i->name, len);
			/* an odd start, so the head alignment step runs */
			if (len)
				ck_assert_uint_eq(i->crc(s, lo + 1, len - 1),
						  bl__crc32c_sw(s, lo + 1,
								len - 1));
		}
	}
	munmap(map, span + 2 * pg);
}
END_TEST

START_TEST(crc_of_split_input_equals_crc_of_whole)
{
	uint64_t rng = seed;
	const size_t n = 1600;
	unsigned char *buf = random_buf(n, &rng);
	const struct bl__crc32c_impl *i, *j;
	uint32_t s = (uint32_t)tu_rand(&rng), whole, head;
	size_t k;

	whole = bl__crc32c_sw(s, buf, n);
	for_each_impl(i) {
		for (k = 0; k <= n; k++) {
			head = i->crc(s, buf, k);
			ck_assert_msg(i->crc(head, buf + k, n - k) == whole,
				      "%s split at %zu", i->name, k);
		}
		/* a crc started by one implementation is finished by another */
		for_each_impl(j) {
			k = tu_rand(&rng) % (n + 1);
			ck_assert_uint_eq(j->crc(i->crc(s, buf, k), buf + k,
						 n - k), whole);
		}
	}
	free(buf);
}
END_TEST

/* ---- zeros and combine -------------------------------------------------- */

START_TEST(zeros_equals_crc_of_zero_bytes)
{
	uint64_t rng = seed;
	const size_t max = 1u << 20;
	unsigned char *zero = calloc(1, max);
	const struct bl__crc32c_impl *i;
	size_t n;
	uint32_t s;
	int r;

	ck_assert_ptr_nonnull(zero);
	for_each_impl(i) {
		ck_assert_int_eq(bl__crc32c_set_impl(i->name), 0);
		for (n = 0; n <= 4096; n++) {
			s = (uint32_t)tu_rand(&rng);
			ck_assert_msg(bl_crc32c_zeros(s, n) ==
				      bl__crc32c_sw(s, zero, n),
				      "%s: %zu", i->name, n);
		}
		for (r = 0; r < 16; r++) {
			n = tu_rand(&rng) % max;
			s = (uint32_t)tu_rand(&rng);
			ck_assert_uint_eq(bl_crc32c_zeros(s, n),
					  bl__crc32c_sw(s, zero, n));
		}
		ck_assert_uint_eq(bl_crc32c_zeros(0, 12345), 0);
		/* NULL data stands for zeros, as in Ceph's ceph_crc32c() */
		for (n = 0; n <= 300; n += 13) {
			s = (uint32_t)tu_rand(&rng);
			ck_assert_uint_eq(bl_crc32c(s, NULL, n),
					  bl__crc32c_sw(s, zero, n));
		}
	}
	free(zero);
}
END_TEST

/*
 * Lengths too large to check against real zeros: x^(2^31 - 1) = 1 mod P
 * (the order of x divides 2^31 - 1), so 2^31 - 1 zero bytes, or any
 * multiple, leave every crc unchanged; and zeros composes additively.
 */
START_TEST(zeros_handles_huge_lengths)
{
	uint64_t rng = seed;
	const struct bl__crc32c_impl *i;
	const size_t cycle = 0x7fffffff;
	size_t a, b;
	uint32_t s;
	int r;

	ck_assert_uint_eq(gf2_xpow(0x7fffffffLL), 0x80000000u);
	for_each_impl(i) {
		for (r = 0; r < 200; r++) {
			s = (uint32_t)tu_rand(&rng) | 1;
			ck_assert_uint_eq(i->zeros(s, cycle), s);
			a = (size_t)tu_rand(&rng) % (SIZE_MAX / cycle);
			ck_assert_msg(i->zeros(s, cycle * a) == s,
				      "%s: %zu cycles", i->name, a);
			a = (size_t)tu_rand(&rng) >> 1;
			b = (size_t)tu_rand(&rng) >> 1;
			ck_assert_uint_eq(i->zeros(i->zeros(s, a), b),
					  i->zeros(s, a + b));
			ck_assert_uint_eq(i->zeros(s, a),
					  bl__crc32c_zeros_sw(s, a));
		}
		ck_assert_uint_eq(i->zeros(0x80000000u, SIZE_MAX),
				  bl__crc32c_zeros_sw(0x80000000u, SIZE_MAX));
	}
}
END_TEST

START_TEST(seed_change_is_xor_of_zeros)
{
	uint64_t rng = seed;
	unsigned char *buf = random_buf(70000, &rng);
	const struct bl__crc32c_impl *i;
	uint32_t s1, s2;
	size_t n;
	int r;

	for_each_impl(i) {
		ck_assert_int_eq(bl__crc32c_set_impl(i->name), 0);
		for (r = 0; r < 64; r++) {
			n = r < 32 ? (size_t)r * 37 : tu_rand(&rng) % 70000;
			s1 = (uint32_t)tu_rand(&rng);
			s2 = (uint32_t)tu_rand(&rng);
			ck_assert_msg(bl_crc32c(s2, buf, n) ==
				      (bl_crc32c(s1, buf, n) ^
				       bl_crc32c_zeros(s1 ^ s2, n)),
				      "%s: %zu", i->name, n);
		}
	}
	free(buf);
}
END_TEST

START_TEST(combine_joins_two_crcs)
{
	uint64_t rng = seed;
	const size_t n = 100000;
	unsigned char *buf = random_buf(n, &rng);
	const struct bl__crc32c_impl *i;
	uint32_t s, a, b;
	size_t k, len;
	int r;

	for_each_impl(i) {
		ck_assert_int_eq(bl__crc32c_set_impl(i->name), 0);
		for (r = 0; r < 200; r++) {
			len = r < 100 ? (size_t)r * 7 : tu_rand(&rng) % n;
			k = r & 1 ? len : tu_rand(&rng) % (len + 1);
			if (r % 3 == 0)
				k = 0;
			s = (uint32_t)tu_rand(&rng);
			a = bl_crc32c(s, buf, k);
			b = bl_crc32c(0, buf + k, len - k);
			ck_assert_msg(bl_crc32c_combine(a, b, len - k) ==
				      bl_crc32c(s, buf, len),
				      "%s: %zu = %zu + %zu", i->name, len, k,
				      len - k);
		}
	}
	free(buf);
}
END_TEST

/* ---- choosing an implementation ----------------------------------------- */

static const struct bl__crc32c_impl *crc32c_find_impl(const char *name)
{
	const struct bl__crc32c_impl *i;

	for (i = bl__crc32c_impls; i->name; i++)
		if (!strcmp(i->name, name))
			return i;
	return NULL;
}

static const struct bl__crc32c_impl *best_impl(void)
{
	const struct bl__crc32c_impl *i;

	for_each_impl(i)
		return i;
	return NULL;
}

START_TEST(set_impl_forces_and_refuses)
{
	const struct bl__crc32c_impl *i;

	ck_assert_int_eq(bl__crc32c_set_impl("table"), 0);
	ck_assert_str_eq(bl_crc32c_impl(), "table");
	ck_assert_int_eq(bl__crc32c_set_impl("no-such-crc"), -EINVAL);
	ck_assert_str_eq(bl_crc32c_impl(), "table");
	for (i = bl__crc32c_impls; i->name; i++) {
		int ret = bl__crc32c_set_impl(i->name);

		if (i->supported()) {
			ck_assert_int_eq(ret, 0);
			ck_assert_str_eq(bl_crc32c_impl(), i->name);
		} else {
			ck_assert_int_eq(ret, -ENOTSUP);
		}
	}
	/* the table is last and the only one that needs nothing */
	ck_assert_str_eq(i[-1].name, "table");
}
END_TEST

START_TEST(env_var_picks_impl_and_ignores_bad_names)
{
	const struct bl__crc32c_impl *i;

	for_each_impl(i) {
		ck_assert_int_eq(setenv("BL_CRC32C_IMPL", i->name, 1), 0);
		ck_assert_int_eq(bl__crc32c_set_impl(NULL), 0);
		ck_assert_str_eq(bl_crc32c_impl(), i->name);
	}
	ck_assert_int_eq(setenv("BL_CRC32C_IMPL", "bogus", 1), 0);
	ck_assert_int_eq(bl__crc32c_set_impl(NULL), 0);
	ck_assert_str_eq(bl_crc32c_impl(), best_impl()->name);
	ck_assert_int_eq(unsetenv("BL_CRC32C_IMPL"), 0);
	ck_assert_int_eq(bl__crc32c_set_impl(NULL), 0);
	ck_assert_str_eq(bl_crc32c_impl(), best_impl()->name);
}
END_TEST

/*
 * Runs this program afresh with BL_CRC32C_IMPL=@want (unset if NULL) and
 * returns its choice.  The child runs natively even under valgrind, so it
 * may see more of the CPU than this process.
 */
static void impl_of_fresh_process(const char *want, char *out, size_t outlen)
{
	char self[4096], envvar[64];
	char *argv[] = { self, "--print-impl", NULL };
	char *envp[256];
	posix_spawn_file_actions_t fa;
	int fds[2], status;
	ssize_t n, got = 0;
	size_t e, ne = 0;
	pid_t pid;

	/* the rest of the environment, for libtool's or a sanitizer's needs */
	for (e = 0; environ[e] && ne < 254; e++)
		if (strncmp(environ[e], "BL_CRC32C_IMPL=", 15))
			envp[ne++] = environ[e];
	if (want)
		envp[ne++] = envvar;
	envp[ne] = NULL;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	ck_assert_int_gt(n, 0);
	self[n] = '\0';
	snprintf(envvar, sizeof(envvar), "BL_CRC32C_IMPL=%s", want ? want : "");
	ck_assert_int_eq(pipe(fds), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	ck_assert_int_eq(posix_spawn(&pid, self, &fa, NULL, argv, envp), 0);
	posix_spawn_file_actions_destroy(&fa);
	close(fds[1]);
	while ((n = read(fds[0], out + got, outlen - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	out[got] = '\0';
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

START_TEST(env_var_is_read_on_first_call)
{
	const struct bl__crc32c_impl *i;
	char got[64], dflt[64];

	for_each_impl(i) {
		impl_of_fresh_process(i->name, got, sizeof(got));
		ck_assert_str_eq(got, i->name);
	}
	impl_of_fresh_process(NULL, dflt, sizeof(dflt));
	ck_assert_ptr_nonnull(crc32c_find_impl(dflt));
	impl_of_fresh_process("bogus", got, sizeof(got));
	ck_assert_str_eq(got, dflt);
}
END_TEST

#define RACERS 6

struct racer {
	pthread_barrier_t *bar;
	const unsigned char *buf;
	size_t len;
	uint32_t crc;
	const char *name;
};

static void *race_first_call(void *arg)
{
	struct racer *r = arg;

	pthread_barrier_wait(r->bar);
	r->crc = bl_crc32c(7, r->buf, r->len);
	r->name = bl_crc32c_impl();
	return NULL;
}

/*
 * Threads that make their first calls at the same moment all get the
 * right answer and agree on the implementation.  In fork mode the
 * dispatcher is still unresolved here, so they really race to resolve it.
 */
START_TEST(concurrent_first_calls_agree)
{
	uint64_t rng = seed;
	unsigned char *buf = random_buf(100000, &rng);
	struct racer r[RACERS];
	pthread_t th[RACERS];
	pthread_barrier_t bar;
	uint32_t want = bl__crc32c_sw(7, buf, 100000);
	int k;

	unsetenv("BL_CRC32C_IMPL");
	pthread_barrier_init(&bar, NULL, RACERS);
	for (k = 0; k < RACERS; k++) {
		r[k] = (struct racer){ &bar, buf, 100000, 0, NULL };
		ck_assert_int_eq(pthread_create(&th[k], NULL, race_first_call,
						&r[k]), 0);
	}
	for (k = 0; k < RACERS; k++) {
		pthread_join(th[k], NULL);
		ck_assert_uint_eq(r[k].crc, want);
		ck_assert_ptr_nonnull(r[k].name);
		ck_assert_str_eq(r[k].name, r[0].name);
	}
	pthread_barrier_destroy(&bar);
	free(buf);
}
END_TEST

#if defined(__x86_64__) && defined(__linux__)
static bool cpuinfo_has(const char *flags, const char *flag)
{
	size_t n = strlen(flag);
	const char *p;

	for (p = flags; (p = strstr(p, flag)); p += n)
		if (p[-1] == ' ' && (p[n] == ' ' || p[n] == '\n'))
			return true;
	return false;
}

/*
 * cpuid must never claim what the kernel does not show (that would be a
 * SIGILL); and outside valgrind, whose virtual CPU hides AVX-512, a CPU
 * the kernel says can do it must get the fast path.
 */
START_TEST(cpu_detection_agrees_with_kernel)
{
	static char line[8192];
	bool sse42, pclmul, vpclmul, valgrind;
	const char *pre = getenv("LD_PRELOAD");
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "flags", 5))
			break;
	fclose(f);
	sse42 = cpuinfo_has(line, "sse4_2");
	pclmul = sse42 && cpuinfo_has(line, "pclmulqdq");
	vpclmul = pclmul && cpuinfo_has(line, "avx512f") &&
		  cpuinfo_has(line, "avx512bw") &&
		  cpuinfo_has(line, "avx512vl") &&
		  cpuinfo_has(line, "vpclmulqdq");
	ck_assert(!bl__crc32c_has_sse42() || sse42);
	ck_assert(!bl__crc32c_has_pclmul() || pclmul);
	ck_assert(!bl__crc32c_has_vpclmul() || vpclmul);
	valgrind = pre && strstr(pre, "vgpreload");
	if (!valgrind) {
		ck_assert_int_eq(bl__crc32c_has_sse42(), sse42);
		ck_assert_int_eq(bl__crc32c_has_pclmul(), pclmul);
		ck_assert_int_eq(bl__crc32c_has_vpclmul(), vpclmul);
	}
}
END_TEST
#endif

static Suite *crc32c_suite(void)
{
	const TTest *values_tests[] = {
		crc_matches_ceph_values_in_every_impl,
		crc_matches_rfc3720_vectors_in_every_impl,
		tables_match_bitwise_definition,
		zeros_operators_are_powers_of_x,
#if defined(__x86_64__)
		folding_constants_are_powers_of_x,
		join_constants_are_powers_of_x,
#endif
		NULL
	};
	/* generous: these sweep hundreds of MB, slowly under valgrind */
	const TTest *impls_tests[] = {
		table_matches_bitwise_small_lengths_and_offsets,
		every_impl_matches_table_all_lengths_offsets,
		every_impl_matches_table_random_large,
		no_impl_reads_outside_the_buffer,
		crc_of_split_input_equals_crc_of_whole,
		NULL
	};
	const TTest *algebra_tests[] = {
		zeros_equals_crc_of_zero_bytes,
		zeros_handles_huge_lengths,
		seed_change_is_xor_of_zeros,
		combine_joins_two_crcs,
		NULL
	};
	const TTest *dispatch_tests[] = {
		set_impl_forces_and_refuses,
		env_var_picks_impl_and_ignores_bad_names,
		env_var_is_read_on_first_call,
		concurrent_first_calls_agree,
#if defined(__x86_64__) && defined(__linux__)
		cpu_detection_agrees_with_kernel,
#endif
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("values", values_tests),
		TU_GROUP("impls", impls_tests, .timeout = 600),
		TU_GROUP("algebra", algebra_tests, .timeout = 120),
		TU_GROUP("dispatch", dispatch_tests, .timeout = 60),
		TU_GROUP_END
	};

	return tu_suite("crc32c", groups);
}

int main(int argc, char **argv)
{
	const struct bl__crc32c_impl *i;

	/* helper mode for env_var_is_read_on_first_call */
	if (argc == 2 && !strcmp(argv[1], "--print-impl")) {
		fputs(bl_crc32c_impl(), stdout);
		return 0;
	}
	seed = tu_seed("test_crc32c");
	fprintf(stderr, "test_crc32c: implementations on this CPU:");
	for_each_impl(i)
		fprintf(stderr, " %s", i->name);
	fprintf(stderr, "\n");
	return tu_run(crc32c_suite());
}
