/* SPDX-License-Identifier: MIT */
/*
 * test_msgr.c - the messenger: frame codec, connections, server helper.
 *
 * The codec cases need no socket: round trips of every payload size class
 * through receive lists cut at random (down to 1-byte segments), partial
 * frames, back-to-back frames, proof that parsing shares the received
 * bytes (no copy counted, payload pointing into the receive raws), every
 * kind of malformed frame, and allocation failure at every step.
 *
 * Hostile peers: replies never read and requests never answered
 * (backpressure bounds memory, CPU and what is delivered), streams both
 * ways that must not stall, preambles claiming 2 GiB (address space stays
 * small), half-closed peers (still answered), a server out of descriptors
 * (no spinning, a log line a second), timeouts, and resets: a peer the
 * connection gives up on reads ECONNRESET, one closed normally reads all
 * and then EOF.
 *
 * The connection and server cases run twice, in "*-uring" on the io_uring
 * back end and in "*-blocking" on the blocking one
 * (bl_uring_params.force_blocking).  Both ends of a connection live in the
 * test's thread on one bl_uring, so every wait is a bounded loop of
 * bl_uring_run(); no case asserts anything about time.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <liburing.h>
#include <bufferlist/msgr.h>
#include "msgr_int.h"	/* bl__msgr_err_is_peers */
#include "testutil.h"
#include "uring_int.h"

static bool blocking;		/* the back end of the running TCase */
static bool single_issuer;	/* its rings DEFER_TASKRUN (conn-defer) */
static uint64_t seed;

/* A pattern every payload is a slice of: sender and receiver agree on
 * the bytes of frame seq without sending a description. */
#define PAT_LEN ((size_t)2 << 20)
static unsigned char *pat;
static struct bl_raw *pat_raw;	/* static raw over pat */

/* Upper bound of any wait (a hang guard, not a timing assertion);
 * BL_TEST_WAIT_MS raises it for slow runs (valgrind). */
static int64_t wait_ms = 60000;

/* ---- helpers ------------------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void setup_uring(void)
{
	blocking = false;
	single_issuer = false;
}

/* every ring made with bl_uring_params.single_issuer (DEFER_TASKRUN) */
static void setup_defer(void)
{
	blocking = false;
	single_issuer = true;
}

static void setup_blocking(void)
{
	blocking = true;
	single_issuer = false;
}

static struct bl_uring *mk_uring_flags(unsigned flags)
{
	struct bl_uring_params p;
	struct bl_uring *u;

	memset(&p, 0, sizeof(p));
	p.force_blocking = blocking;
	p.flags = flags;
	p.single_issuer = single_issuer;
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	if (!blocking && bl_uring_backend(u) != BL_URING_IO_URING)
		fprintf(stderr, "note: io_uring unavailable here (%s): the "
			"uring cases run on the blocking back end\n",
			bl_uring_backend_reason(u));
	return u;
}

static struct bl_uring *mk_uring(void)
{
	return mk_uring_flags(0);
}

/* Payload size of frame @seq: mostly small, some page-ish, a few 1 MiB. */
static size_t size_of(uint64_t seq)
{
	uint64_t h = seq * 0x9E3779B97F4A7C15ull;

	h ^= h >> 29;
	if (seq % 97 == 0)
		return ((size_t)1 << 20) - h % 3;
	if (seq % 11 == 0)
		return 4096 + h % 70000;
	return h % 600;
}

static size_t off_of(uint64_t seq)
{
	return (size_t)(seq * 7919 % 256);
}

/* @l = the payload of frame @seq, shared from the pattern (no copy). */
static void payload_of(struct bl_list *l, uint64_t seq)
{
	struct bl_ptr p = { pat_raw, off_of(seq), size_of(seq) };

	bl_list_init(l);
	ck_assert_int_eq(bl_list_append_ptr(l, &p), 0);
}

/* Bytes of @l equal the pattern at @off?  (no copy) */
static bool matches(const struct bl_list *l, size_t off)
{
	struct bl_iter it;
	const char *d;
	size_t n;

	bl_iter_init(&it, l, 0);
	while ((n = bl_iter_get_ptr_and_advance(&it, SIZE_MAX, &d))) {
		if (memcmp(d, pat + off, n))
			return false;
		off += n;
	}
	return true;
}

/* Every segment starts on 4096 and all but the last are 4096 multiples. */
static bool dio_aligned(const struct bl_list *l)
{
	unsigned n = bl_list_num_buffers(l);

	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p;
		bool ok;

		ck_assert_int_eq(bl_list_get_ptr(l, i, &p), 0);
		ok = ((uintptr_t)bl_ptr_data(&p) & 4095) == 0 &&
		     (i + 1 == n || p.len % 4096 == 0);
		bl_ptr_release(&p);
		if (!ok)
			return false;
	}
	return true;
}

static void tcp_pair(int *a, int *b)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int one = 1, l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(l, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(l, 4), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(*a, 0);
	ck_assert_int_eq(connect(*a, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*b = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(*b, 0);
	setsockopt(*a, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(l);
}

static void unix_pair(int *a, int *b)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	*a = sv[0];
	*b = sv[1];
}

static int listener(struct sockaddr_in *sa)
{
	socklen_t sl = sizeof(*sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(l, 0);
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(l, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(listen(l, 16), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)sa, &sl), 0);
	return l;
}

static int dial(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)sa,
				 sizeof(*sa)), 0);
	return fd;
}

/* Frame @seq of @type as bytes in a new malloc'd buffer; *@n its size. */
static unsigned char *frame_bytes(uint16_t type, uint64_t seq, size_t plen,
				  size_t off, size_t *n)
{
	struct bl_list out, pay;
	struct bl_ptr p = { pat_raw, off, plen };
	unsigned char *b;

	bl_list_init(&out);
	bl_list_init(&pay);
	ck_assert_int_eq(bl_list_append_ptr(&pay, &p), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, type, seq, &pay, 0), 0);
	*n = bl_list_length(&out);
	b = tu_flatten(&out);
	bl_list_clear(&out);
	bl_list_clear(&pay);
	return b;
}

static void write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		ck_assert_int_gt(w, 0);
		c += w;
		n -= (size_t)w;
	}
}

/* Writes @n bytes to @fd without blocking, running @u whenever the socket
 * is full: the reader lives on the same thread. */
static void feed(struct bl_uring *u, int fd, const void *p, size_t n)
{
	const char *c = p;
	int64_t end = now_ms() + wait_ms;
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (n && now_ms() < end) {
		ssize_t w = write(fd, c, n);

		if (w < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			bl_uring_run(u, 1, 10);
			continue;
		}
		c += w;
		n -= (size_t)w;
	}
	ck_assert_uint_eq(n, 0);
	fcntl(fd, F_SETFL, fl);
}

/* ---- codec: round trips -------------------------------------------------- */

/* @l = @n bytes of @b cut into random segments of 1..@max_seg bytes. */
static void recv_list(struct bl_list *l, const unsigned char *b, size_t n,
		      size_t max_seg, uint64_t *rng)
{
	bl_list_init(l);
	tu_append_segmented(l, b, n, max_seg, 1, rng);
	ck_assert_int_eq(bl__list_validate(l), 0);
}

START_TEST(roundtrip_sizes_any_segmentation)
{
	static const size_t sizes[] = { 0, 1, 4096, (size_t)1 << 20 };
	static const size_t segs[] = { 1, 3, 24, 29, 1000, 4096, 65536,
				       (size_t)4 << 20 };
	uint64_t rng = seed;

	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
		for (size_t gi = 0; gi < sizeof(segs) / sizeof(segs[0]); gi++) {
			size_t n, plen = sizes[si];
			unsigned char *b;
			struct bl_list in;
			struct bl_msgr_frame f;

			/* 1-byte segments of 1 MiB: 1M raws; keep it to 64 KiB */
			if (plen > 65536 && segs[gi] < 24)
				continue;
			b = frame_bytes(0x1234, 77 + si, plen, si, &n);
			ck_assert_uint_eq(n, plen + BL_MSGR_OVERHEAD);
			recv_list(&in, b, n, segs[gi], &rng);
			bl_msgr_frame_init(&f);
			ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
			ck_assert_uint_eq(f.type, 0x1234);
			ck_assert_uint_eq(f.flags, 0);
			ck_assert(f.seq == 77 + si);
			tu_assert_list_eq(&f.payload, pat + si, plen);
			ck_assert_uint_eq(bl_list_length(&in), 0);
			ck_assert_int_eq(bl__list_validate(&in), 0);
			bl_msgr_frame_release(&f);
			ck_assert_uint_eq(bl_list_length(&f.payload), 0);
			bl_list_clear(&in);
			free(b);
		}
	}
}
END_TEST

START_TEST(flags_and_types_round_trip)
{
	struct bl_list out, pay;
	struct bl_msgr_frame f;

	bl_list_init(&out);
	bl_list_init(&pay);
	ck_assert_int_eq(bl_list_append(&pay, "hello", 5), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 0xffff, UINT64_MAX, &pay,
					0xbeef), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 0, 0, NULL, 0), 0);
	ck_assert_int_eq(bl_msgr_parse(&out, &f, 0), 1);
	ck_assert_uint_eq(f.type, 0xffff);
	ck_assert_uint_eq(f.flags, 0xbeef);
	ck_assert(f.seq == UINT64_MAX);
	tu_assert_list_eq(&f.payload, "hello", 5);
	bl_msgr_frame_release(&f);
	ck_assert_int_eq(bl_msgr_parse(&out, &f, 0), 1);
	ck_assert_uint_eq(f.type, 0);
	ck_assert(f.seq == 0);
	ck_assert_uint_eq(bl_list_length(&f.payload), 0);
	ck_assert_uint_eq(bl_list_length(&out), 0);
	bl_list_clear(&out);
	bl_list_clear(&pay);
}
END_TEST

START_TEST(encode_copy_gives_same_bytes_and_shares_otherwise)
{
	struct bl_list a, b, pay;
	unsigned char *fa, *fb;
	unsigned before;
	uint64_t rng = seed;

	bl_list_init(&a);
	bl_list_init(&b);
	bl_list_init(&pay);
	tu_append_segmented(&pay, pat, 5000, 700, 1, &rng);
	{
		struct bl_ptr p0;

		bl_list_get_ptr(&pay, 0, &p0);
		before = bl_raw_nref(p0.raw);
		ck_assert_int_eq(bl_msgr_encode(&a, 3, 9, &pay, 7), 0);
		/* shared: one more reference on the payload's raws */
		ck_assert_uint_eq(bl_raw_nref(p0.raw), before + 1);
		ck_assert_int_eq(bl_msgr_encode(&b, 3, 9, &pay,
						7 | BL_MSGR_ENC_COPY), 0);
		/* copied: none */
		ck_assert_uint_eq(bl_raw_nref(p0.raw), before + 1);
		bl_ptr_release(&p0);
	}
	ck_assert_uint_eq(bl_list_length(&a), bl_list_length(&b));
	fa = tu_flatten(&a);
	fb = tu_flatten(&b);
	ck_assert(memcmp(fa, fb, bl_list_length(&a)) == 0);
	/* shared: every payload segment is in the frame as it was */
	ck_assert_uint_ge(bl_list_num_buffers(&a), bl_list_num_buffers(&pay));
	/* copied: preamble, payload and trailer in the append buffer */
	ck_assert_uint_lt(bl_list_num_buffers(&b), bl_list_num_buffers(&pay));
	free(fa);
	free(fb);
	bl_list_clear(&a);
	bl_list_clear(&b);
	bl_list_clear(&pay);
}
END_TEST

/* The wire bytes of a frame, built by hand with bl_crc32c(). */
static void ref_frame(unsigned char *b, uint16_t type, uint16_t flags,
		      uint64_t seq, const unsigned char *pl, size_t plen)
{
	uint32_t crc;

	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(BL_MSGR_MAGIC >> (8 * i));
	b[4] = (unsigned char)type;
	b[5] = (unsigned char)(type >> 8);
	b[6] = (unsigned char)flags;
	b[7] = (unsigned char)(flags >> 8);
	for (int i = 0; i < 8; i++)
		b[8 + i] = (unsigned char)(seq >> (8 * i));
	for (int i = 0; i < 4; i++)
		b[16 + i] = (unsigned char)((uint32_t)plen >> (8 * i));
	crc = bl_crc32c(BL_MSGR_CRC_SEED, b, 20);
	for (int i = 0; i < 4; i++)
		b[20 + i] = (unsigned char)(crc >> (8 * i));
	memcpy(b + BL_MSGR_PREAMBLE, pl, plen);
	crc = bl_crc32c(BL_MSGR_CRC_SEED, pl, plen);
	for (int i = 0; i < 4; i++)
		b[BL_MSGR_PREAMBLE + plen + i] = (unsigned char)(crc >> (8 * i));
}

START_TEST(encode_writes_the_reference_bytes_for_every_short_length)
{
	static const struct { uint16_t type, flags; uint64_t seq; } h[] = {
		{ 0, 0, 0 }, { 0xffff, 0xffff, UINT64_MAX },
		{ 0x1234, 0x00a5, 0x0102030405060708ull },
	};
	uint64_t rng = seed;

	for (size_t plen = 0; plen <= 1100; plen += plen < 300 ? 1 : 37) {
		unsigned char *want = malloc(plen + BL_MSGR_OVERHEAD);

		ck_assert_ptr_nonnull(want);
		for (size_t hi = 0; hi < sizeof(h) / sizeof(h[0]); hi++) {
			ref_frame(want, h[hi].type, h[hi].flags, h[hi].seq,
				  pat + hi, plen);
			/* one slice, then several; copied, then shared */
			for (int k = 0; k < 4; k++) {
				struct bl_list out, pay;
				unsigned char *got;

				bl_list_init(&out);
				bl_list_init(&pay);
				if (k & 1) {
					tu_append_segmented(&pay, pat + hi,
							    plen, 7, 1, &rng);
				} else if (plen) {
					struct bl_ptr bp;

					ck_assert_int_eq(bl_ptr_alloc(&bp,
								      plen),
							 0);
					memcpy(bl_ptr_data(&bp), pat + hi,
					       plen);
					ck_assert_int_eq(
						bl_list_append_ptr_move(&pay,
									&bp),
						0);
				}
				/* twice: into an empty list, then behind a
				 * frame, into the append buffer's room */
				for (int r = 0; r < 2; r++)
					ck_assert_int_eq(bl_msgr_encode(&out,
						h[hi].type, h[hi].seq, &pay,
						h[hi].flags |
						(k & 2 ? 0 : BL_MSGR_ENC_COPY)),
						0);
				ck_assert_uint_eq(bl_list_length(&out),
						  2 * (plen + BL_MSGR_OVERHEAD));
				ck_assert_int_eq(bl__list_validate(&out), 0);
				got = tu_flatten(&out);
				ck_assert(memcmp(got, want,
						 plen + BL_MSGR_OVERHEAD) == 0);
				ck_assert(memcmp(got + plen + BL_MSGR_OVERHEAD,
						 want,
						 plen + BL_MSGR_OVERHEAD) == 0);
				free(got);
				bl_list_clear(&out);
				bl_list_clear(&pay);
			}
		}
		free(want);
	}
}
END_TEST

START_TEST(encode_rejects_bad_arguments)
{
	struct bl_list out, big;
	struct bl_raw *r;
	struct bl_ptr p;

	bl_list_init(&out);
	bl_list_init(&big);
	ck_assert_int_eq(bl_list_append(&out, "x", 1), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 1, 1, NULL, 1u << 17), -EINVAL);
	ck_assert_int_eq(bl_msgr_encode(NULL, 1, 1, NULL, 0), -EINVAL);
	/* a borrowed 2 GiB range that is never touched: checked first */
	r = bl_raw_create_static(pat, (size_t)BL_MSGR_PAYLOAD_LIMIT + 1);
	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	ck_assert_int_eq(bl_list_append_ptr_move(&big, &p), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 1, 1, &big, 0), -E2BIG);
	tu_assert_list_eq(&out, "x", 1);
	bl_list_clear(&big);
	bl_list_clear(&out);
}
END_TEST

/* ---- codec: partial, back to back, zero copy ----------------------------- */

START_TEST(partial_frame_returns_0_and_leaves_input)
{
	static const size_t sizes[] = { 0, 1, 300, 4096 };
	uint64_t rng = seed;

	for (size_t si = 0; si < 4; si++) {
		size_t n;
		unsigned char *b = frame_bytes(5, 6, sizes[si], 0, &n);

		for (size_t cut = 0; cut < n; cut++) {
			struct bl_list in;
			struct bl_msgr_frame f;
			unsigned nb;

			if (n > 400 && cut > 40 && cut < n - 40 &&
			    tu_rand(&rng) % 64)
				continue;	/* sample big ones */
			recv_list(&in, b, cut, 1 + tu_rand(&rng) % 40, &rng);
			nb = bl_list_num_buffers(&in);
			memset(&f, 0x5a, sizeof(f));
			ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 0);
			ck_assert_uint_eq(f.type, 0x5a5a);
			ck_assert_uint_eq(bl_list_num_buffers(&in), nb);
			tu_assert_list_eq(&in, b, cut);
			bl_list_clear(&in);
		}
		free(b);
	}
}
END_TEST

START_TEST(back_to_back_frames_parse_in_order)
{
	struct bl_list enc, in;
	struct bl_msgr_frame f;
	uint64_t rng = seed;
	unsigned char *b;
	size_t n;
	int nf = 2000;

	bl_list_init(&enc);
	for (int i = 0; i < nf; i++) {
		struct bl_list pay;
		struct bl_ptr p = { pat_raw, (size_t)i, tu_rand(&rng) % 300 };

		if (i % 100 == 7)
			p.len = 20000;
		bl_list_init(&pay);
		ck_assert_int_eq(bl_list_append_ptr(&pay, &p), 0);
		ck_assert_int_eq(bl_msgr_encode(&enc, (uint16_t)i, (uint64_t)i,
						&pay, 0), 0);
		bl_list_clear(&pay);
	}
	n = bl_list_length(&enc);
	b = tu_flatten(&enc);
	for (int round = 0; round < 3; round++) {
		static const size_t maxseg[] = { 7, 1500, 65536 };

		recv_list(&in, b, n, maxseg[round], &rng);
		for (int i = 0; i < nf; i++) {
			ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
			ck_assert_uint_eq(f.type, (uint16_t)i);
			ck_assert(f.seq == (uint64_t)i);
			ck_assert(matches(&f.payload, (size_t)i));
			bl_msgr_frame_release(&f);
		}
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 0);
		ck_assert_uint_eq(bl_list_length(&in), 0);
		bl_list_clear(&in);
	}
	free(b);
	bl_list_clear(&enc);
}
END_TEST

/* True when every byte of @f's payload lies inside one of @in's raws. */
static bool payload_in_raws(const struct bl_list *pay, struct bl_raw **raws,
			    unsigned nraws)
{
	unsigned n = bl_list_num_buffers(pay);

	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p;
		bool found = false;

		bl_list_get_ptr(pay, i, &p);
		for (unsigned j = 0; j < nraws; j++)
			if (p.raw == raws[j])
				found = true;
		bl_ptr_release(&p);
		if (!found)
			return false;
	}
	return true;
}

START_TEST(parse_shares_the_received_bytes)
{
	static const size_t maxseg[] = { 100000, 200, 5 };
	uint64_t rng = seed;

	for (int k = 0; k < 3; k++) {
		struct bl_list enc, in;
		struct bl_msgr_frame f;
		struct bl_stats st0, st1;
		struct bl_raw *raws[4096];
		unsigned nr;
		unsigned char *b;
		size_t n;

		bl_list_init(&enc);
		for (int i = 0; i < 50; i++) {
			struct bl_list pay;
			struct bl_ptr p = { pat_raw, (size_t)i, 64 + (size_t)i };

			bl_list_init(&pay);
			bl_list_append_ptr(&pay, &p);
			ck_assert_int_eq(bl_msgr_encode(&enc, 1, (uint64_t)i,
							&pay, 0), 0);
			bl_list_clear(&pay);
		}
		b = tu_flatten(&enc);
		n = bl_list_length(&enc);
		recv_list(&in, b, n, maxseg[k], &rng);
		nr = bl_list_num_buffers(&in);
		ck_assert_uint_le(nr, 4096);
		for (unsigned i = 0; i < nr; i++) {
			struct bl_ptr p;

			bl_list_get_ptr(&in, i, &p);
			raws[i] = p.raw;	/* in keeps them alive */
			bl_ptr_release(&p);
		}
		bl_stats_thread(&st0);
		for (int i = 0; i < 50; i++) {
			ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
			ck_assert(payload_in_raws(&f.payload, raws, nr));
			ck_assert(matches(&f.payload, (size_t)i));
			bl_msgr_frame_release(&f);
		}
		bl_stats_thread(&st1);
		ck_assert(st1.copied_bytes == st0.copied_bytes);
		ck_assert(st1.copy_ops == st0.copy_ops);
		bl_list_clear(&in);
		bl_list_clear(&enc);
		free(b);
	}
}
END_TEST

/* ---- codec: malformed input ---------------------------------------------- */

/*
 * A receive that holds exactly one frame (request/response traffic): the
 * payload takes over the list's reference to the raw, the list is left
 * empty and valid, and it takes the next frame as before.
 */
START_TEST(parse_of_a_lone_frame_moves_the_reference_and_empties_the_list)
{
	static const size_t plens[] = { 0, 1, 64, 300, 5000 };

	for (size_t i = 0; i < sizeof(plens) / sizeof(plens[0]); i++) {
		size_t n, plen = plens[i];
		unsigned char *b = frame_bytes(7, 40 + i, plen, 11, &n);
		struct bl_raw *r = bl_raw_create(n);
		struct bl_ptr p = { r, 0, n };
		struct bl_stats st0, st1;
		struct bl_msgr_frame f;
		struct bl_list in;

		ck_assert_ptr_nonnull(r);
		memcpy(bl_raw_data(r), b, n);
		bl_list_init(&in);
		ck_assert_int_eq(bl_list_append_ptr(&in, &p), 0);
		ck_assert_uint_eq(bl_raw_nref(r), 2);
		bl_stats_thread(&st0);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
		bl_stats_thread(&st1);
		ck_assert_uint_eq(st1.copied_bytes, st0.copied_bytes);
		ck_assert_uint_eq(bl_list_length(&in), 0);
		ck_assert_int_eq(bl__list_validate(&in), 0);
		ck_assert_int_eq(bl__list_validate(&f.payload), 0);
		ck_assert_uint_eq(f.type, 7);
		ck_assert_uint_eq(f.seq, 40 + i);
		ck_assert_uint_eq(bl_list_length(&f.payload), plen);
		ck_assert(matches(&f.payload, 11));
		/* the list's reference moved: none taken, none dropped */
		ck_assert_uint_eq(bl_raw_nref(r), plen ? 2 : 1);
		if (plen) {
			struct bl_ptr q;

			ck_assert_int_eq(bl_list_get_ptr(&f.payload, 0, &q), 0);
			ck_assert_ptr_eq(q.raw, r);
			ck_assert_uint_eq(q.off, BL_MSGR_PREAMBLE);
			bl_ptr_release(&q);
		}
		bl_msgr_frame_release(&f);
		ck_assert_uint_eq(bl_raw_nref(r), 1);
		/* the emptied list takes the next frame */
		p.raw = r;
		ck_assert_int_eq(bl_list_append_ptr(&in, &p), 0);
		ck_assert_int_eq(bl_list_append(&in, b, n), 0);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
		ck_assert(matches(&f.payload, 11));
		bl_msgr_frame_release(&f);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
		ck_assert(matches(&f.payload, 11));
		bl_msgr_frame_release(&f);
		ck_assert_uint_eq(bl_list_length(&in), 0);
		bl_list_clear(&in);
		ck_assert_uint_eq(bl_raw_nref(r), 1);
		bl_raw_put(r);
		free(b);
	}
}
END_TEST

START_TEST(malformed_frames_are_rejected_and_input_kept)
{
	struct bl_msgr_frame f;
	uint64_t rng = seed;
	size_t n;
	unsigned char *good = frame_bytes(1, 2, 1000, 3, &n);
	/* 16 bytes of a next frame behind: the parser's fast path */
	unsigned char *b = calloc(1, n + 16);
	struct {
		size_t at;		/* byte to corrupt, or SIZE_MAX */
		size_t max;
		int want;
		const char *why;
	} cases[] = {
		{ 0, 0, -EBADMSG, "bad magic" },
		{ 3, 0, -EBADMSG, "bad magic" },
		{ 4, 0, -EBADMSG, "bad header crc" },
		{ 9, 0, -EBADMSG, "bad header crc" },
		{ 17, 0, -EBADMSG, "bad header crc" },
		{ 21, 0, -EBADMSG, "bad header crc" },
		{ 24, 0, -EBADMSG, "bad payload crc" },
		{ 500, 0, -EBADMSG, "bad payload crc" },
		{ 1023, 0, -EBADMSG, "bad payload crc" },
		{ 1025, 0, -EBADMSG, "bad payload crc" },
		{ SIZE_MAX, 999, -E2BIG, "payload over the size limit" },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (int seg = 0; seg < 2; seg++) {
			struct bl_list in;

			memcpy(b, good, n);
			if (cases[k].at != SIZE_MAX)
				b[cases[k].at] ^= 0x40;
			recv_list(&in, b, n + 16 * (seg == 1), seg ? n : 7,
				  &rng);
			ck_assert_int_eq(bl_msgr_parse(&in, &f,
						       cases[k].max),
					 cases[k].want);
			ck_assert_str_eq(bl_msgr_parse_error(), cases[k].why);
			tu_assert_list_eq(&in, b, n + 16 * (seg == 1));
			bl_list_clear(&in);
		}
	}
	/* a bad magic is seen in the first 4 bytes, a bad length in the
	 * first 24: nobody waits for a payload that is not coming */
	{
		struct bl_list in;

		memcpy(b, good, n);
		b[1] ^= 1;
		recv_list(&in, b, 4, 4, &rng);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), -EBADMSG);
		bl_list_clear(&in);
		recv_list(&in, good, 24, 24, &rng);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 500), -E2BIG);
		bl_list_clear(&in);
	}
	/* a length that no configuration accepts, with a valid header crc */
	{
		struct bl_list in;
		uint32_t len = BL_MSGR_PAYLOAD_LIMIT + 1u, crc;

		memcpy(b, good, 24);
		memcpy(b + 16, &len, 4);
		crc = bl_crc32c(BL_MSGR_CRC_SEED, b, 20);
		memcpy(b + 20, &crc, 4);
		recv_list(&in, b, 24, 24, &rng);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, SIZE_MAX), -EBADMSG);
		ck_assert_str_eq(bl_msgr_parse_error(),
				 "impossible payload length");
		bl_list_clear(&in);
	}
	free(b);
	free(good);
}
END_TEST

/* ---- codec: allocation failure ------------------------------------------- */

START_TEST(encode_and_parse_fail_cleanly_without_memory)
{
	struct tu_alloc_stats st;
	uint64_t rng = seed;
	int failures = 0;

	tu_alloc_install(0, 0);
	for (uint64_t k = 1;; k++) {
		struct bl_list out, pay;
		unsigned char *before;
		size_t blen;
		int ret;

		bl_list_init(&out);
		bl_list_init(&pay);
		tu_append_segmented(&out, pat, 100, 30, 0, &rng);
		tu_append_segmented(&pay, pat + 7, 3000, 200, 1, &rng);
		blen = bl_list_length(&out);
		before = tu_flatten(&out);
		tu_alloc_fail_at(k, 1);
		ret = bl_msgr_encode(&out, 1, k, &pay, k & 1 ? BL_MSGR_ENC_COPY
							   : 0);
		tu_alloc_fail_at(0, 0);
		if (ret) {
			ck_assert_int_eq(ret, -ENOMEM);
			tu_assert_list_eq(&out, before, blen);
			failures++;
		}
		free(before);
		bl_list_clear(&out);
		bl_list_clear(&pay);
		if (!ret)
			break;
		ck_assert_uint_lt(k, 1000);
	}
	ck_assert_int_gt(failures, 0);
	/* parsing a payload of many segments needs a chunk */
	{
		struct bl_list in;
		struct bl_msgr_frame f;
		size_t n;
		unsigned char *b = frame_bytes(1, 2, 200, 0, &n);

		recv_list(&in, b, n, 10, &rng);
		tu_alloc_fail_at(1, 1);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), -ENOMEM);
		tu_alloc_fail_at(0, 0);
		tu_assert_list_eq(&in, b, n);
		ck_assert_int_eq(bl_msgr_parse(&in, &f, 0), 1);
		bl_msgr_frame_release(&f);
		bl_list_clear(&in);
		free(b);
	}
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_int_eq(st.live_bytes, 0);
}
END_TEST

/* ---- connections --------------------------------------------------------- */

struct peer {
	struct bl_msgr_conn *c;
	const char *name;
	uint64_t rx, expect;
	int bad;
	char bad_msg[160];
	bool check_seq, check_align, keep;
	size_t align_min;
	unsigned aligned;
	struct bl_list kept;
	int closed, close_err;
	char reason[160];
	struct bl_msgr_conn_stats st;	/* at on_close */
	unsigned sent_ok, sent_cancel, sent_err;
	unsigned logs;
	char log[256];
};

static void note_bad(struct peer *p, const char *fmt, unsigned long long a)
{
	if (!p->bad++)
		snprintf(p->bad_msg, sizeof(p->bad_msg), fmt, a);
}

static void on_frame(void *arg, struct bl_msgr_conn *c,
		     struct bl_msgr_frame *f)
{
	struct peer *p = arg;
	size_t len = bl_list_length(&f->payload);

	(void)c;
	if (p->check_seq) {
		if (f->seq != p->expect + 1)
			note_bad(p, "seq %llu out of order",
				 (unsigned long long)f->seq);
		if (f->type != (uint16_t)(f->seq * 3))
			note_bad(p, "wrong type at seq %llu",
				 (unsigned long long)f->seq);
		if (len != size_of(f->seq) ||
		    !matches(&f->payload, off_of(f->seq)))
			note_bad(p, "wrong payload at seq %llu",
				 (unsigned long long)f->seq);
		if (bl__list_validate(&f->payload))
			note_bad(p, "invalid list at seq %llu",
				 (unsigned long long)f->seq);
	}
	if (p->check_align && len >= p->align_min) {
		if (!dio_aligned(&f->payload))
			note_bad(p, "unaligned payload at seq %llu",
				 (unsigned long long)f->seq);
		p->aligned++;
	}
	p->expect = f->seq;
	p->rx++;
	if (p->keep)
		ck_assert_int_eq(bl_list_claim_append(&p->kept, &f->payload),
				 0);
}

static void on_close(void *arg, struct bl_msgr_conn *c, int err,
		     const char *reason)
{
	struct peer *p = arg;

	p->closed++;
	p->close_err = err;
	snprintf(p->reason, sizeof(p->reason), "%s", reason);
	bl_msgr_conn_stats(c, &p->st);
}

static void on_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	struct peer *p = arg;

	(void)c;
	p->logs++;
	snprintf(p->log, sizeof(p->log), "%s", msg);
}

static void on_sent(void *arg, int res)
{
	struct peer *p = arg;

	if (!res)
		p->sent_ok++;
	else if (res == -ECANCELED)
		p->sent_cancel++;
	else
		p->sent_err++;
}

static void peer_init(struct peer *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->check_seq = true;
	bl_list_init(&p->kept);
}

static void opts_for(struct bl_msgr_conn_opts *o, struct peer *p)
{
	memset(o, 0, sizeof(*o));
	o->on_frame = on_frame;
	o->on_close = on_close;
	o->arg = p;
	o->log = on_log;
	o->log_arg = p;
}

/* Runs @u until *@a >= @wa and *@b >= @wb (a bounded wait). */
static void run_until(struct bl_uring *u, const uint64_t *a, uint64_t wa,
		      const uint64_t *b, uint64_t wb)
{
	int64_t end = now_ms() + wait_ms;

	while ((*a < wa || *b < wb) && now_ms() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_msg(*a >= wa && *b >= wb,
		      "waited too long: %llu/%llu and %llu/%llu",
		      (unsigned long long)*a, (unsigned long long)wa,
		      (unsigned long long)*b, (unsigned long long)wb);
}

static void run_until_closed(struct bl_uring *u, struct peer *a,
			     struct peer *b)
{
	int64_t end = now_ms() + wait_ms;

	while ((!a->closed || (b && !b->closed)) && now_ms() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_int_eq(a->closed, 1);
	if (b)
		ck_assert_int_eq(b->closed, 1);
}

static void send_frames(struct peer *p, uint64_t first, uint64_t n, bool cb)
{
	for (uint64_t s = first; s < first + n; s++) {
		struct bl_list pay;

		payload_of(&pay, s);
		ck_assert_int_eq(bl_msgr_send(p->c, (uint16_t)(s * 3), &pay,
					      cb ? on_sent : NULL, p), 0);
		bl_list_clear(&pay);
	}
}

/* A connected pair of sockets (TCP or a socketpair) and two peers "a" and
 * "b" with their default options, for the caller to adjust. */
static void two_peers(bool tcp, int *fa, int *fb, struct peer *a,
		      struct bl_msgr_conn_opts *oa, struct peer *b,
		      struct bl_msgr_conn_opts *ob)
{
	if (tcp)
		tcp_pair(fa, fb);
	else
		unix_pair(fa, fb);
	peer_init(a, "a");
	peer_init(b, "b");
	opts_for(oa, a);
	opts_for(ob, b);
}

/*
 * @a and @b send each other frames 1..@n in batches of @batch (a's with a
 * completion, b's without), and the ring runs until both received all @n
 * intact and in order and every one of a's sends completed.
 */
static void swap_frames(struct bl_uring *u, struct peer *a, struct peer *b,
			uint64_t n, uint64_t batch)
{
	int64_t end;

	for (uint64_t s = 1; s <= n; s += batch) {
		uint64_t k = n - s + 1 < batch ? n - s + 1 : batch;

		send_frames(a, s, k, true);
		send_frames(b, s, k, false);
		bl_uring_run(u, 0, 0);
	}
	run_until(u, &a->rx, n, &b->rx, n);
	ck_assert_msg(!a->bad, "a: %d bad frames, first: %s", a->bad, a->bad_msg);
	ck_assert_msg(!b->bad, "b: %d bad frames, first: %s", b->bad, b->bad_msg);
	ck_assert(a->expect == n && b->expect == n);
	end = now_ms() + wait_ms;
	while (a->sent_ok < n && now_ms() < end)
		bl_uring_run(u, 1, 100);
	ck_assert_uint_eq(a->sent_ok, n);
}

/* Both ends send @n frames of mixed sizes to each other, interleaved. */
static void exchange(bool tcp, uint64_t n)
{
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	two_peers(tcp, &fa, &fb, &a, &oa, &b, &ob);
	/* b: a small ring of its own, a: the default */
	ob.nbufs = 16;
	ob.buf_size = 16384;
	/* a: one multishot receive; b: one-shot receives, and payloads of
	 * 128 KiB and more read straight into raws of their own */
	oa.direct_min = SIZE_MAX;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	swap_frames(u, &a, &b, n, 500);
	ck_assert_uint_eq(a.sent_cancel + a.sent_err, 0);
	bl_msgr_conn_close(a.c, 0, "done");
	if (!b.closed)
		bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &a, &b);
	ck_assert_int_eq(a.close_err, 0);
	ck_assert_str_eq(a.reason, "done");
	ck_assert_int_eq(b.close_err, 0);
	ck_assert(a.st.frames_sent == n && a.st.frames_received == n);
	ck_assert(b.st.frames_sent == n && b.st.frames_received == n);
	ck_assert(a.st.bytes_sent == b.st.bytes_received);
	ck_assert(a.st.direct_frames == 0 && b.st.direct_frames > 0);
	ck_assert_uint_eq(a.logs + b.logs, 0);
	bl_uring_destroy(u);
}

START_TEST(conn_socketpair_10k_mixed_frames_in_order)
{
	exchange(false, getenv("BL_TEST_QUICK") ? 1000 : 10000); /* valgrind */
}
END_TEST

START_TEST(conn_tcp_10k_mixed_frames_in_order)
{
	exchange(true, getenv("BL_TEST_QUICK") ? 1000 : 10000);
}
END_TEST

/* -- aligned data -- */

static void aligned(bool tcp)
{
	static const size_t big[] = { 16384, 16385, 20480, 100000,
				      (size_t)1 << 20, 70001, 16384 * 3 };
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	uint64_t nbig = 0, s = 0;
	int fa, fb;

	if (tcp)
		tcp_pair(&fa, &fb);
	else
		unix_pair(&fa, &fb);
	peer_init(&a, "a");
	peer_init(&b, "b");
	a.check_seq = b.check_seq = false;
	opts_for(&oa, &a);
	opts_for(&ob, &b);
	ob.align_data = true;
	b.check_align = true;
	b.align_min = 16384;
	b.keep = true;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	for (int round = 0; round < 4; round++) {
		for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
			struct bl_list pay;
			struct bl_ptr p = { pat_raw, i, big[i] };

			/* small frames before, so that a preamble often
			 * arrives behind other bytes */
			for (int k = 0; k < round; k++) {
				struct bl_ptr q = { pat_raw, 0, 100 };

				bl_list_init(&pay);
				bl_list_append_ptr(&pay, &q);
				ck_assert_int_eq(bl_msgr_send(a.c, 1, &pay, NULL,
							      NULL), 0);
				bl_list_clear(&pay);
				s++;
			}
			bl_list_init(&pay);
			bl_list_append_ptr(&pay, &p);
			ck_assert_int_eq(bl_msgr_send(a.c, 2, &pay, NULL, NULL),
					 0);
			bl_list_clear(&pay);
			s++;
			nbig++;
			if (round & 1)
				bl_uring_run(u, 0, 0);
		}
	}
	run_until(u, &b.rx, s, &b.rx, s);
	ck_assert_msg(!b.bad, "%d bad frames, first: %s", b.bad, b.bad_msg);
	ck_assert(b.aligned == nbig);
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &a, &b);
	ck_assert(b.st.aligned_frames == nbig);
	/* each copies at most what one receive brought plus 4 KiB */
	ck_assert(b.st.aligned_copied <= nbig * (64 * 1024 + 4096));
	ck_assert_uint_eq(a.logs + b.logs, 0);
	bl_uring_destroy(u);
}

START_TEST(align_data_gives_4096_aligned_payloads_socketpair)
{
	aligned(false);
}
END_TEST

START_TEST(align_data_gives_4096_aligned_payloads_tcp)
{
	aligned(true);
}
END_TEST

/* Payload bytes of a preamble that arrived with 5000 of its payload bytes
 * are copied up to the next 4096 boundary (8192 bytes), then the rest is
 * read straight into an aligned raw, which an O_DIRECT file takes as is. */
START_TEST(align_data_copies_only_the_head_and_suits_o_direct)
{
	struct bl_msgr_conn_opts ob;
	struct peer b;
	struct bl_uring *u = mk_uring();
	size_t n, plen = (size_t)1 << 20;
	unsigned char *fr = frame_bytes(2, 1, plen, 0, &n);
	int fa, fb, fd;
	char path[] = "msgr-dio-XXXXXX";

	unix_pair(&fa, &fb);
	peer_init(&b, "b");
	b.check_seq = false;
	b.check_align = true;
	b.align_min = 16384;
	b.keep = true;
	opts_for(&ob, &b);
	ob.align_data = true;
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(b.c);
	write_all(fa, fr, BL_MSGR_PREAMBLE + 5000);
	/* let b receive that much and switch to reading */
	for (int i = 0; i < 20; i++)
		bl_uring_run(u, 1, 10);
	ck_assert(b.st.aligned_copied == 0 && b.rx == 0);
	feed(u, fa, fr + BL_MSGR_PREAMBLE + 5000, n - BL_MSGR_PREAMBLE - 5000);
	run_until(u, &b.rx, 1, &b.rx, 1);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	ck_assert(matches(&b.kept, 0));
	ck_assert_uint_eq(bl_list_length(&b.kept), plen);
	ck_assert(dio_aligned(&b.kept));
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&b.kept, 4096,
								 4096, 0), 0);
	/* O_DIRECT takes it without a copy (where the filesystem has it) */
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = open(path, O_RDWR | O_DIRECT);
	if (fd >= 0) {
		unsigned char *back = malloc(plen);
		size_t done = 0;

		ck_assert_int_eq(bl_list_prepare_dio(&b.kept, fd), 0);
		ck_assert_int_eq(bl_list_pwrite(&b.kept, fd, 0, &done), 0);
		ck_assert_uint_eq(done, plen);
		close(fd);
		fd = open(path, O_RDONLY);
		ck_assert_int_eq(pread(fd, back, plen, 0), (ssize_t)plen);
		ck_assert(memcmp(back, pat, plen) == 0);
		free(back);
		close(fd);
	} else {
		fprintf(stderr, "note: no O_DIRECT here (%s)\n",
			strerror(errno));
	}
	unlink(path);
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &b, NULL);
	ck_assert(b.st.aligned_frames == 1);
	ck_assert_uint_eq(b.st.aligned_copied, 8192);
	close(fa);
	free(fr);
	bl_uring_destroy(u);
}
END_TEST

/* -- ring exhaustion and long-lived payloads -- */

/*
 * @mode 0: one-shot receives (the default), 1: multishot (no plain reads
 * of large payloads), 2: detach (long-lived payloads copied out).
 */
static void held_frames(int mode)
{
	bool detach = mode == 2;
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 4096, 77);
	uint64_t n = 300;
	int fa, fb;

	ck_assert_ptr_nonnull(br);
	unix_pair(&fa, &fb);
	peer_init(&a, "a");
	peer_init(&b, "b");
	b.keep = true;		/* b holds on to every payload */
	opts_for(&oa, &a);
	opts_for(&ob, &b);
	ob.bufring = br;
	ob.detach = detach;
	if (mode == 1)
		ob.direct_min = SIZE_MAX;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	send_frames(&a, 1, n, false);	/* includes a 1 MiB frame (seq 97) */
	run_until(u, &b.rx, n, &b.rx, n);
	ck_assert_msg(!b.bad, "%d bad frames, first: %s", b.bad, b.bad_msg);
	if (detach)
		/* nothing held points into the ring */
		ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	else
		/* what is held pins the ring's buffers ... */
		ck_assert_uint_lt(bl_uring_bufring_available(br), 4);
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &a, &b);
	if (detach)
		ck_assert(b.st.detached > 0);
	if (mode == 1)
		/* ... and the kernel found it empty */
		ck_assert(b.st.ring_dry > 0);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
}

START_TEST(held_payloads_starve_the_ring_but_frames_still_arrive)
{
	held_frames(0);
}
END_TEST

START_TEST(held_payloads_starve_a_multishot_ring_but_frames_still_arrive)
{
	held_frames(1);
}
END_TEST

START_TEST(detach_keeps_the_ring_free_for_long_lived_payloads)
{
	held_frames(2);
}
END_TEST

/* Large payloads are read straight into a raw of their own; on a ring with
 * registered buffers, into one of those (recycled, READ_FIXED). */
START_TEST(direct_reads_use_the_rings_registered_buffers)
{
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	struct bl_uring_regpool *rp = bl_uring_regpool_create(u, 4, 1 << 20);
	int fa, fb, in_pool = 0;

	ck_assert_ptr_nonnull(rp);
	unix_pair(&fa, &fb);
	peer_init(&a, "a");
	peer_init(&b, "b");
	b.keep = true;
	opts_for(&oa, &a);
	opts_for(&ob, &b);
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	send_frames(&a, 1, 97, false);	/* seq 97: 1 MiB */
	run_until(u, &b.rx, 97, &b.rx, 97);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	for (unsigned i = 0; i < bl_list_num_buffers(&b.kept); i++) {
		struct bl_ptr p;

		bl_list_get_ptr(&b.kept, i, &p);
		in_pool += bl_raw_buf_index(p.raw) >= 0;
		bl_ptr_release(&p);
	}
	if (bl_uring_backend(u) == BL_URING_IO_URING)
		ck_assert_int_eq(in_pool, 1);
	else
		ck_assert_int_eq(in_pool, 0);	/* nothing registered */
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &a, &b);
	ck_assert(b.st.direct_frames == 1);
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
}
END_TEST

/* A large frame whose payload is corrupt is caught whichever way it
 * arrives: through the ring with its crc taken piece by piece, or read
 * straight into a raw of its own, aligned or not. */
START_TEST(large_frame_with_bad_payload_crc_closes_the_receiver)
{
	for (int mode = 0; mode < 3; mode++) {
		struct bl_msgr_conn_opts ob;
		struct peer b;
		struct bl_uring *u = mk_uring();
		size_t n, plen = 300000;
		unsigned char *fr = frame_bytes(2, 1, plen, 0, &n);
		int fa, fb;

		fr[BL_MSGR_PREAMBLE + plen - 10] ^= 1;
		unix_pair(&fa, &fb);
		peer_init(&b, "b");
		opts_for(&ob, &b);
		if (mode == 0)
			ob.direct_min = SIZE_MAX;
		if (mode == 2)
			ob.align_data = true;
		b.c = bl_msgr_conn_new(u, fb, &ob);
		ck_assert_ptr_nonnull(b.c);
		feed(u, fa, fr, n);
		run_until_closed(u, &b, NULL);
		ck_assert_int_eq(b.close_err, -EBADMSG);
		ck_assert_msg(strstr(b.reason, "bad payload crc"), "%s",
			      b.reason);
		ck_assert_uint_eq(b.logs, 1);
		ck_assert(b.rx == 0);
		close(fa);
		free(fr);
		bl_uring_destroy(u);
	}
}
END_TEST

/* -- send callbacks that send and close -- */

struct cbrec {
	struct peer *p;
	int idx;
	int calls;
	int res;
	int order;
};

static struct cbrec cbs[12];
static int cb_order;

static void reentrant_sent(void *arg, int res)
{
	struct cbrec *r = arg;

	r->calls++;
	r->res = res;
	r->order = ++cb_order;
	if (r->idx == 2) {
		/* queued behind the batch in flight */
		struct bl_list pay;

		payload_of(&pay, 11);
		ck_assert_int_eq(bl_msgr_send(r->p->c, 33, &pay,
					      reentrant_sent, &cbs[11]), 0);
		bl_list_clear(&pay);
	}
	if (r->idx == 4)
		bl_msgr_conn_close(r->p->c, 0, "closed from a send callback");
}

START_TEST(send_callbacks_may_send_and_close)
{
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	unix_pair(&fa, &fb);
	peer_init(&a, "a");
	peer_init(&b, "b");
	opts_for(&oa, &a);
	opts_for(&ob, &b);
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	memset(cbs, 0, sizeof(cbs));
	cb_order = 0;
	/* frame 1 goes out alone, 2..10 wait and go out together */
	for (int i = 1; i <= 10; i++) {
		struct bl_list pay;

		cbs[i].p = &a;
		cbs[i].idx = i;
		payload_of(&pay, (uint64_t)i);
		ck_assert_int_eq(bl_msgr_send(a.c, (uint16_t)(i * 3), &pay,
					      reentrant_sent, &cbs[i]), 0);
		bl_list_clear(&pay);
	}
	cbs[11].p = &a;
	cbs[11].idx = 11;
	run_until_closed(u, &a, &b);
	for (int i = 1; i <= 10; i++) {
		ck_assert_int_eq(cbs[i].calls, 1);
		ck_assert_int_eq(cbs[i].res, 0);
		ck_assert_int_eq(cbs[i].order, i + (i > 4));
	}
	/* frame 11 never reached the kernel: cancelled by the close */
	ck_assert_int_eq(cbs[11].calls, 1);
	ck_assert_int_eq(cbs[11].res, -ECANCELED);
	ck_assert_int_eq(cbs[11].order, 5);
	ck_assert_str_eq(a.reason, "closed from a send callback");
	ck_assert(b.rx == 10);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	bl_uring_destroy(u);
}
END_TEST

/* -- limits, teardown, failures -- */

START_TEST(frame_over_max_payload_closes_the_receiver)
{
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	tcp_pair(&fa, &fb);
	peer_init(&a, "a");
	peer_init(&b, "b");
	opts_for(&oa, &a);
	opts_for(&ob, &b);
	ob.max_payload = 1000;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	send_frames(&a, 1, 11, true);	/* seq 11 has a 4 KiB+ payload */
	run_until_closed(u, &b, &a);
	ck_assert_int_eq(b.close_err, -E2BIG);
	ck_assert_ptr_nonnull(strstr(b.reason, "over the limit"));
	ck_assert_uint_eq(b.logs, 1);
	ck_assert_ptr_nonnull(strstr(b.log, "closing"));
	ck_assert(b.rx == 10);
	ck_assert_uint_eq(b.st.resets, 1);
	/* the sender is told that its connection failed (reset) */
	ck_assert_msg(a.close_err == -ECONNRESET || a.close_err == -EPIPE,
		      "sender: %d %s", a.close_err, a.reason);
	ck_assert_uint_eq(a.sent_ok + a.sent_err + a.sent_cancel, 11);
	bl_uring_destroy(u);
}
END_TEST

/* Standard error, redirected to a temporary file between the two calls. */
struct err_capture {
	FILE *f;
	int saved;
};

static void err_capture_start(struct err_capture *cp)
{
	cp->f = tmpfile();
	ck_assert_ptr_nonnull(cp->f);
	fflush(stderr);
	cp->saved = dup(2);
	ck_assert_int_ge(cp->saved, 0);
	ck_assert_int_eq(dup2(fileno(cp->f), 2), 2);
}

/* Ends the capture; @buf gets what was written (cut at @n - 1 bytes). */
static void err_capture_end(struct err_capture *cp, char *buf, size_t n)
{
	size_t got;

	fflush(stderr);
	ck_assert_int_eq(dup2(cp->saved, 2), 2);
	close(cp->saved);
	rewind(cp->f);
	got = fread(buf, 1, n - 1, cp->f);
	buf[got] = 0;
	fclose(cp->f);
}

/*
 * b resets a over a frame longer than its max_payload, with b's on_close
 * and log set as asked; @err gets what went to stderr meanwhile.
 */
static void reset_with(bool on_close, bool log, struct peer *b, char *err,
		       size_t errsz)
{
	struct bl_msgr_conn_opts oa, ob;
	struct err_capture cp;
	struct peer a;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	two_peers(true, &fa, &fb, &a, &oa, b, &ob);
	ob.max_payload = 1000;
	if (!on_close)
		ob.on_close = NULL;
	if (!log)
		ob.log = NULL;
	err_capture_start(&cp);
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b->c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b->c);
	send_frames(&a, 1, 11, true);	/* seq 11 has a 4 KiB+ payload */
	/* the sender hears of the reset after b has made it */
	run_until_closed(u, &a, NULL);
	bl_uring_destroy(u);
	err_capture_end(&cp, err, errsz);
	ck_assert(b->rx == 10);
}

/*
 * A reset's reason goes to stderr only when the caller gave neither a log
 * function nor an on_close: a daemon that handles its resets in on_close
 * does not also get a line on stderr for each.
 */
START_TEST(a_reset_goes_to_stderr_only_without_log_and_on_close)
{
	char err[1024];
	struct peer b;

	/* on_close, no log: the reason reaches on_close only */
	reset_with(true, false, &b, err, sizeof(err));
	ck_assert_int_eq(b.closed, 1);
	ck_assert_int_eq(b.close_err, -E2BIG);
	ck_assert_ptr_nonnull(strstr(b.reason, "over the limit"));
	ck_assert_msg(!strstr(err, "bl_msgr"), "stderr: %s", err);
	/* a log function: the line goes there, not to stderr */
	reset_with(true, true, &b, err, sizeof(err));
	ck_assert_uint_eq(b.logs, 1);
	ck_assert_ptr_nonnull(strstr(b.log, "closing (reset)"));
	ck_assert_msg(!strstr(err, "bl_msgr"), "stderr: %s", err);
	reset_with(false, true, &b, err, sizeof(err));
	ck_assert_uint_eq(b.logs, 1);
	ck_assert_int_eq(b.closed, 0);
	ck_assert_msg(!strstr(err, "bl_msgr"), "stderr: %s", err);
	/* neither: stderr is the only place the reason can go */
	reset_with(false, false, &b, err, sizeof(err));
	ck_assert_uint_eq(b.logs, 0);
	ck_assert_msg(strstr(err, "bl_msgr: ") &&
		      strstr(err, "closing (reset)") &&
		      strstr(err, "over the limit"), "stderr: %s", err);
}
END_TEST

START_TEST(close_with_frames_in_flight_cancels_and_leaks_nothing)
{
	struct tu_alloc_stats st;

	tu_alloc_install(0, 0);
	for (int who = 0; who < 3; who++) {
		struct bl_msgr_conn_opts oa, ob;
		struct peer a, b;
		struct bl_uring *u = mk_uring();
		int fa, fb;

		if (who == 2)
			tcp_pair(&fa, &fb);
		else
			unix_pair(&fa, &fb);
		peer_init(&a, "a");
		peer_init(&b, "b");
		opts_for(&oa, &a);
		opts_for(&ob, &b);
		a.c = bl_msgr_conn_new(u, fa, &oa);
		b.c = bl_msgr_conn_new(u, fb, &ob);
		ck_assert_ptr_nonnull(a.c);
		ck_assert_ptr_nonnull(b.c);
		send_frames(&a, 1, 400, true);
		if (who == 1) {
			/* the receiver goes away while data streams in */
			run_until(u, &b.rx, 5, &b.rx, 5);
			bl_msgr_conn_close(b.c, 0, "receiver quits");
		} else {
			bl_msgr_conn_close(a.c, 0, "sender quits");
		}
		run_until_closed(u, &a, &b);
		ck_assert_uint_eq(a.sent_ok + a.sent_cancel + a.sent_err, 400);
		if (who != 1) {
			ck_assert_uint_gt(a.sent_cancel, 0);
			ck_assert_int_eq(a.close_err, 0);
		} else {
			ck_assert_str_eq(b.reason, "receiver quits");
		}
		ck_assert(b.rx == a.st.frames_sent || who == 1);
		ck_assert_msg(!b.bad, "%s", b.bad_msg);
		bl_uring_destroy(u);
	}
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_int_eq(st.live_bytes, 0);
}
END_TEST

/* ---- frames sent in pieces ---------------------------------------------- */

static void quiet_log(void *arg, struct bl_msgr_conn *c, const char *msg);

/* Bytes [@at, @at + @n) of @l equal the pattern at @off? */
static bool range_matches(const struct bl_list *l, size_t at, size_t n,
			  size_t off)
{
	struct bl_list sub;
	bool ok;

	bl_list_init(&sub);
	ck_assert_int_eq(bl_list_substr_of(&sub, l, at, n), 0);
	ok = matches(&sub, off);
	bl_list_clear(&sub);
	return ok;
}

/* @l = @n bytes of the pattern from @off, shared. */
static void pat_piece(struct bl_list *l, size_t off, size_t n)
{
	struct bl_ptr p = { pat_raw, off, n };

	bl_list_init(l);
	ck_assert_int_eq(bl_list_append_ptr(l, &p), 0);
}

/*
 * A frame of 1.8 MiB sent in three pieces (a stream) reaches the peer as
 * one frame, its payload whole and its crc right; a frame sent while the
 * stream is open waits behind it and arrives after it, in sequence order;
 * every piece's callback and the held frame's report success.  Each
 * misuse is refused without changing anything: a piece without a stream
 * (-EINVAL), a second stream (-EBUSY), a piece longer than what is left
 * or empty (-EINVAL), an empty or oversized stream (-EINVAL, -E2BIG).
 */
START_TEST(a_frame_sent_in_pieces_arrives_whole_and_frames_sent_meanwhile_follow)
{
	const size_t piece = 600 << 10, total = 3 * piece;
	struct bl_msgr_conn_opts oa, ob;
	struct bl_list l, big;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	size_t s1 = size_of(1), s3 = size_of(3);
	int fa, fb;

	two_peers(_i == 1, &fa, &fb, &a, &oa, &b, &ob);
	b.check_seq = false;
	b.keep = true;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);

	pat_piece(&l, off_of(2), piece);
	pat_piece(&big, 0, piece + 1);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, on_sent, &a), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_begin(NULL, 6, total), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_add(NULL, &l, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, 0), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6,
					      (size_t)BL_MSGR_PAYLOAD_LIMIT + 1),
			 -E2BIG);
	send_frames(&a, 1, 1, true);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, total), 0);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, total), -EBUSY);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, NULL, NULL, NULL), -EINVAL);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, on_sent, &a), 0);
	bl_list_clear(&l);
	/* sent while the stream is open: it must come after it */
	send_frames(&a, 3, 1, true);
	for (int i = 0; i < 20; i++)
		bl_uring_run(u, 0, 5);
	ck_assert_uint_eq(b.rx, 1);
	pat_piece(&l, off_of(2) + piece, piece);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, on_sent, &a), 0);
	bl_list_clear(&l);
	/* one byte more than the stream still expects */
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &big, on_sent, &a), -EINVAL);
	bl_list_clear(&big);
	pat_piece(&l, off_of(2) + 2 * piece, piece);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, on_sent, &a), 0);
	bl_list_clear(&l);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, NULL, NULL), -EINVAL);
	run_until(u, &b.rx, 3, &b.rx, 3);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	ck_assert_uint_eq(b.expect, 3);
	ck_assert_uint_eq(bl_list_length(&b.kept), s1 + total + s3);
	ck_assert(range_matches(&b.kept, 0, s1, off_of(1)));
	ck_assert(range_matches(&b.kept, s1, total, off_of(2)));
	ck_assert(range_matches(&b.kept, s1 + total, s3, off_of(3)));
	while (a.sent_ok < 5)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_uint_eq(a.sent_ok, 5);	/* 2 frames, 3 pieces */
	ck_assert_uint_eq(a.sent_cancel + a.sent_err, 0);
	bl_msgr_conn_close(a.c, 0, "done");
	run_until_closed(u, &a, &b);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_uint_eq(a.st.frames_sent, 3);
	ck_assert_uint_eq(a.st.bytes_sent, b.st.bytes_received);
	bl_list_clear(&b.kept);
	bl_uring_destroy(u);
}
END_TEST

/*
 * A connection closed with a stream open: the frame held behind it gets
 * -ECANCELED, every piece's callback runs once, a piece added afterwards
 * is -EPIPE, the peer gets no frame (a frame cut short, or nothing, never
 * a whole wrong one), and nothing leaks.
 */
START_TEST(closing_with_a_stream_open_cancels_what_waits_behind_it)
{
	struct tu_alloc_stats st;
	struct bl_msgr_conn_opts oa, ob;
	struct bl_list l;
	struct peer a, b;
	struct bl_uring *u;
	int fa, fb;

	tu_alloc_install(0, 0);
	u = mk_uring();
	two_peers(true, &fa, &fb, &a, &oa, &b, &ob);
	b.check_seq = false;
	ob.log = quiet_log;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	ck_assert_int_eq(bl_msgr_stream_begin(a.c, 6, 1 << 20), 0);
	pat_piece(&l, 0, 256 << 10);
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, on_sent, &a), 0);
	send_frames(&a, 2, 1, true);
	ck_assert_uint_eq(a.sent_cancel, 0);
	bl_msgr_conn_close(a.c, 0, "gives up");
	ck_assert_uint_eq(a.sent_cancel, 1);	/* the held frame, at once */
	ck_assert_int_eq(bl_msgr_stream_add(a.c, &l, on_sent, &a), -EPIPE);
	bl_list_clear(&l);
	run_until_closed(u, &a, &b);
	ck_assert_uint_eq(a.sent_ok + a.sent_cancel + a.sent_err, 2);
	ck_assert_uint_eq(b.rx, 0);
	bl_uring_destroy(u);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_int_eq(st.live_bytes, 0);
}
END_TEST

START_TEST(allocation_failures_return_enomem_and_leak_nothing)
{
	struct tu_alloc_stats st;
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u;
	uint64_t ok = 0, fails = 0;
	int fa, fb;

	tu_alloc_install(0, 0);
	u = mk_uring();
	unix_pair(&fa, &fb);
	peer_init(&a, "a");
	peer_init(&b, "b");
	opts_for(&oa, &a);
	opts_for(&ob, &b);
	/* creating: every failing allocation gives NULL, fd still open */
	for (uint64_t k = 1;; k++) {
		tu_alloc_fail_at(k, 1);
		errno = 0;
		a.c = bl_msgr_conn_new(u, fa, &oa);
		tu_alloc_fail_at(0, 0);
		if (a.c)
			break;
		ck_assert_int_eq(errno, ENOMEM);
		ck_assert_int_ge(fcntl(fa, F_GETFD), 0);
		ck_assert_uint_lt(k, 100);
	}
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(b.c);
	/* sending: a failed send consumes no sequence number */
	for (uint64_t k = 1; k < 40; k++) {
		struct bl_list pay;
		uint64_t s = ok + 1;
		int ret;

		payload_of(&pay, s);
		tu_alloc_fail_at(k % 6 + 1, 1);
		ret = bl_msgr_send(a.c, (uint16_t)(s * 3), &pay, on_sent, &a);
		tu_alloc_fail_at(0, 0);
		bl_list_clear(&pay);
		if (ret) {
			ck_assert_int_eq(ret, -ENOMEM);
			fails++;
		} else {
			ok++;
		}
		bl_uring_run(u, 0, 0);
	}
	ck_assert(fails > 0 && ok > 0);
	run_until(u, &b.rx, ok, &b.rx, ok);
	ck_assert_msg(!b.bad, "%s", b.bad_msg);
	while (a.sent_ok < ok)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &a, &b);
	ck_assert_uint_eq(a.sent_ok, ok);
	bl_uring_destroy(u);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_int_eq(st.live_bytes, 0);
}
END_TEST

/* ---- the server ---------------------------------------------------------- */

enum corrupt {
	C_MAGIC, C_HCRC, C_PCRC, C_TOO_BIG, C_IMPOSSIBLE, C_TRUNCATED, C_N
};

struct srv_ctx {
	uint64_t rx[3];		/* by type: 1 the bad client, 2 the good */
	uint64_t next[3];
	int bad;
	int closes, close_err[4];
	char reason[4][160];
	unsigned logs;
	char log[256];
};

static void srv_frame(void *arg, struct bl_msgr_conn *c,
		      struct bl_msgr_frame *f)
{
	struct srv_ctx *x = arg;

	(void)c;
	if (f->type < 1 || f->type > 2 || f->seq != x->next[f->type] + 1 ||
	    !matches(&f->payload, off_of(f->seq)) ||
	    bl_list_length(&f->payload) != 300) {
		x->bad++;
		return;
	}
	x->next[f->type] = f->seq;
	x->rx[f->type]++;
}

static void srv_close(void *arg, struct bl_msgr_conn *c, int err,
		      const char *reason)
{
	struct srv_ctx *x = arg;

	(void)c;
	if (x->closes < 4) {
		x->close_err[x->closes] = err;
		snprintf(x->reason[x->closes], 160, "%s", reason);
	}
	x->closes++;
}

static void srv_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	struct srv_ctx *x = arg;

	(void)c;
	x->logs++;
	snprintf(x->log, sizeof(x->log), "%s", msg);
}

/* Frames first..first+n-1 of @type with 300-byte payloads, as bytes. */
static unsigned char *stream(uint16_t type, uint64_t first, int n, size_t *len)
{
	struct bl_list out;
	unsigned char *b;

	bl_list_init(&out);
	for (int i = 0; i < n; i++) {
		struct bl_list pay;
		struct bl_ptr p = { pat_raw, off_of(first + (uint64_t)i), 300 };

		bl_list_init(&pay);
		bl_list_append_ptr(&pay, &p);
		ck_assert_int_eq(bl_msgr_encode(&out, type,
						first + (uint64_t)i, &pay, 0),
				 0);
		bl_list_clear(&pay);
	}
	*len = bl_list_length(&out);
	b = tu_flatten(&out);
	bl_list_clear(&out);
	return b;
}

static void serve_until(struct bl_msgr_server *s, bool (*done)(void *),
			void *arg)
{
	int64_t end = now_ms() + wait_ms;

	while (!done(arg) && now_ms() < end)
		ck_assert_int_ge(bl_msgr_server_poll(s, 50), 0);
	ck_assert_msg(done(arg), "server: waited too long");
}

static uint64_t want_good;

static bool bad_closed_and_good_in(void *arg)
{
	struct srv_ctx *x = arg;

	return x->closes >= 1 && x->rx[2] >= want_good;
}

static bool good_closed(void *arg)
{
	struct srv_ctx *x = arg;

	return x->closes >= 2;
}

START_TEST(server_closes_only_the_connection_with_a_malformed_frame)
{
	static const char *const why[C_N] = {
		"bad magic", "bad header crc", "bad payload crc",
		"over the limit", "impossible payload length",
		"in the middle of a frame",
	};
	static const int err[C_N] = {
		-EBADMSG, -EBADMSG, -EBADMSG, -E2BIG, -EBADMSG, -EPIPE,
	};
	int kind = _i;
	struct bl_msgr_conn_opts o;
	struct srv_ctx x;
	struct sockaddr_in sa;
	struct bl_msgr_server *s;
	struct bl_uring *u = mk_uring();
	unsigned char *ga, *gb1, *gb2, *tail, badf[BL_MSGR_OVERHEAD + 2000];
	size_t na, nb1, nb2, nbad, ntail;
	int l, ca, cb;
	char c;

	memset(&x, 0, sizeof(x));
	memset(badf, 0, sizeof(badf));
	memset(&o, 0, sizeof(o));
	o.on_frame = srv_frame;
	o.on_close = srv_close;
	o.arg = &x;
	o.log = srv_log;
	o.log_arg = &x;
	o.max_payload = 1024;
	l = listener(&sa);
	s = bl_msgr_server_new(u, l, &o);
	ck_assert_ptr_nonnull(s);
	ca = dial(&sa);
	cb = dial(&sa);
	{
		struct timeval tv = { 10, 0 };

		setsockopt(ca, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	}

	/* the bad client: 3 good frames, a bad one, 2 good ones after it */
	ga = stream(1, 1, 3, &na);
	{
		size_t n;
		unsigned char *g = stream(1, 4, 1, &n);

		ck_assert_uint_le(n, sizeof(badf));
		memcpy(badf, g, n);
		nbad = n;
		free(g);
	}
	switch (kind) {
	case C_MAGIC:
		badf[2] ^= 0x10;
		break;
	case C_HCRC:
		badf[10] ^= 0x10;
		break;
	case C_PCRC:
		badf[100] ^= 0x10;
		break;
	case C_TOO_BIG:
	case C_IMPOSSIBLE: {
		uint32_t len = kind == C_TOO_BIG ? 2000
						 : BL_MSGR_PAYLOAD_LIMIT + 1u;
		uint32_t crc;

		memcpy(badf + 16, &len, 4);
		crc = bl_crc32c(BL_MSGR_CRC_SEED, badf, 20);
		memcpy(badf + 20, &crc, 4);
		if (kind == C_TOO_BIG)
			nbad = BL_MSGR_OVERHEAD + 2000;
		break;
	}
	case C_TRUNCATED:
		nbad = 200;
		break;
	}
	tail = stream(1, 5, 2, &ntail);
	gb1 = stream(2, 1, 50, &nb1);
	gb2 = stream(2, 51, 50, &nb2);

	{
		int64_t end = now_ms() + wait_ms;

		while (bl_msgr_server_nconns(s) < 2 && now_ms() < end)
			ck_assert_int_ge(bl_msgr_server_poll(s, 100), 0);
	}
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 2);
	write_all(cb, gb1, nb1);
	write_all(ca, ga, na);
	write_all(ca, badf, nbad);
	if (kind == C_TRUNCATED)
		shutdown(ca, SHUT_WR);
	else
		write_all(ca, tail, ntail);
	want_good = 50;
	serve_until(s, bad_closed_and_good_in, &x);
	write_all(cb, gb2, nb2);
	want_good = 100;
	serve_until(s, bad_closed_and_good_in, &x);

	ck_assert_int_eq(x.bad, 0);
	ck_assert(x.rx[1] == 3);
	ck_assert(x.rx[2] == 100);
	ck_assert_int_eq(x.closes, 1);
	ck_assert_int_eq(x.close_err[0], err[kind]);
	ck_assert_msg(strstr(x.reason[0], why[kind]), "reason: %s",
		      x.reason[0]);
	ck_assert_uint_eq(x.logs, 1);
	ck_assert_msg(strstr(x.log, "closing") && strstr(x.log, why[kind]),
		      "log: %s", x.log);
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 1);
	/* the bad client's connection is reset: no clean end of stream */
	{
		ssize_t r;

		do
			r = read(ca, &c, 1);
		while (r > 0);
		ck_assert_int_eq(r, -1);
		ck_assert_int_eq(errno, ECONNRESET);
	}
	/* the good one leaves cleanly */
	close(cb);
	serve_until(s, good_closed, &x);
	ck_assert_int_eq(x.close_err[1], 0);
	ck_assert_str_eq(x.reason[1], "peer closed");
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 0);
	bl_msgr_server_destroy(s);
	close(ca);
	close(l);
	free(ga);
	free(gb1);
	free(gb2);
	free(tail);
	bl_uring_destroy(u);
}
END_TEST

/* _i 1: on a ring whose completions are posted only when asked for
 * (IORING_SETUP_DEFER_TASKRUN): the server cannot poll the ring's fd. */
START_TEST(server_destroy_closes_its_connections)
{
	struct bl_msgr_conn_opts o;
	struct srv_ctx x;
	struct sockaddr_in sa;
	struct bl_msgr_server *s;
	struct bl_uring *u = mk_uring_flags(_i ? IORING_SETUP_SINGLE_ISSUER |
						 IORING_SETUP_DEFER_TASKRUN
					       : 0);
	int l, fds[3];
	size_t n;
	unsigned char *g = stream(2, 1, 10, &n);

	memset(&x, 0, sizeof(x));
	memset(&o, 0, sizeof(o));
	o.on_frame = srv_frame;
	o.on_close = srv_close;
	o.arg = &x;
	l = listener(&sa);
	s = bl_msgr_server_new(u, l, &o);
	ck_assert_ptr_nonnull(s);
	for (int i = 0; i < 3; i++)
		fds[i] = dial(&sa);
	write_all(fds[0], g, n);
	{
		int64_t end = now_ms() + wait_ms;

		while ((bl_msgr_server_nconns(s) < 3 || x.rx[2] < 10) &&
		       now_ms() < end)
			bl_msgr_server_poll(s, 50);
	}
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 3);
	ck_assert(x.rx[2] == 10);
	bl_msgr_server_destroy(s);
	ck_assert_int_eq(x.closes, 3);
	for (int i = 0; i < 3; i++) {
		char c;

		ck_assert_int_le(read(fds[i], &c, 1), 0);
		close(fds[i]);
	}
	close(l);
	free(g);
	bl_uring_destroy(u);
}
END_TEST


/* ---- hostile peers -------------------------------------------------------- */

/* A number from /proc/self/status ("VmRSS:", "VmSize:"), in KiB. */
static long proc_kb(const char *key)
{
	char line[256];
	long v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	fclose(f);
	ck_assert_int_ge(v, 0);
	return v;
}

/* CPU time this process used (user + system), in ms. */
static int64_t cpu_ms(void)
{
	struct rusage ru;

	ck_assert_int_eq(getrusage(RUSAGE_SELF, &ru), 0);
	return (int64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
}

/* A server connection that answers requests with fresh @reply bytes. */
struct bp {
	struct bl_msgr_conn *c;
	size_t reply;
	bool async;		/* hold requests, answered by bp_answer() */
	unsigned delivered, held, held_max;
	int closed, close_err;
	char reason[160];
	struct bl_msgr_conn_stats st;
};

static void bp_answer(struct bp *x)
{
	struct bl_list l;
	struct bl_ptr p;

	bl_list_init(&l);
	ck_assert_int_eq(bl_ptr_alloc(&p, x->reply), 0);
	memset(bl_ptr_data(&p), 0x5a, x->reply);	/* resident */
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_int_eq(bl_msgr_send(x->c, 9, &l, NULL, NULL), 0);
	bl_list_clear(&l);
}

static void bp_frame(void *arg, struct bl_msgr_conn *c,
		     struct bl_msgr_frame *f)
{
	struct bp *x = arg;

	(void)f;
	x->c = c;
	x->delivered++;
	if (!x->async) {
		bp_answer(x);
		return;
	}
	if (++x->held > x->held_max)
		x->held_max = x->held;
}

static void bp_close(void *arg, struct bl_msgr_conn *c, int err,
		     const char *reason)
{
	struct bp *x = arg;

	x->closed++;
	x->close_err = err;
	snprintf(x->reason, sizeof(x->reason), "%s", reason);
	bl_msgr_conn_stats(c, &x->st);
}

static void bp_init(struct bp *x, struct bl_msgr_conn_opts *o, size_t reply)
{
	memset(x, 0, sizeof(*x));
	x->reply = reply;
	memset(o, 0, sizeof(*o));
	o->on_frame = bp_frame;
	o->on_close = bp_close;
	o->arg = x;
}

/* @n small request frames, as bytes. */
static unsigned char *requests(uint64_t n, size_t *len)
{
	return stream(1, 1, (int)n, len);
}

/* Writes what the socket takes of [*@off, @n) without blocking. */
static void push(int fd, const unsigned char *b, size_t n, size_t *off)
{
	while (*off < n) {
		ssize_t w = send(fd, b + *off, n - *off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			return;
		}
		*off += (size_t)w;
	}
}

/* Reads what is there without blocking; Return: bytes read. */
static size_t drain(int fd)
{
	static unsigned char sink[1 << 16];
	size_t got = 0;
	ssize_t r;

	while ((r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		got += (size_t)r;
	return got;
}

/*
 * ThreadSanitizer's shadow memory is resident too: each byte the test
 * touches costs it a few more.  The bound stays well under the 300 MiB
 * that unread replies would take without backpressure.
 */
#ifdef __SANITIZE_THREAD__
#define RSS_SHADOW 3
#else
#define RSS_SHADOW 1
#endif

/*
 * A client pipelines requests whose replies are 1 MiB each and never
 * reads them.  The server connection (default max_out_bytes, 16 MiB)
 * stops reading once its unsent replies pass the limit: it delivers a
 * bounded number of requests, its resident memory grows by about the
 * limit, not by 300 MiB, and it does not spin while it waits.  When the
 * client starts reading, every request is answered.
 */
START_TEST(replies_nobody_reads_stop_the_reading_at_max_out_bytes)
{
	const uint64_t n = 300;
	const size_t reply = (size_t)1 << 20;
	struct bl_msgr_conn_opts o;
	struct bl_msgr_conn_stats st;
	struct bp x;
	struct bl_uring *u = mk_uring();
	unsigned char *req;
	size_t len, off = 0, got = 0;
	int64_t end, t0, c0;
	long rss0;
	int fa, fb;

	unix_pair(&fa, &fb);
	bp_init(&x, &o, reply);
	x.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(x.c);
	req = requests(n, &len);
	rss0 = proc_kb("VmRSS:");
	end = now_ms() + wait_ms;
	do {
		push(fa, req, len, &off);
		bl_uring_run(u, 1, 20);
		bl_msgr_conn_stats(x.c, &st);
	} while (!st.throttled && x.delivered < n && now_ms() < end);
	ck_assert_uint_ge(st.throttled, 1);
	/* stopped: nothing more is delivered, and waiting costs no CPU */
	t0 = now_ms();
	c0 = cpu_ms();
	for (int i = 0; i < 25; i++) {
		push(fa, req, len, &off);
		bl_uring_run(u, 1, 20);
	}
	ck_assert_msg(cpu_ms() - c0 <= (now_ms() - t0) / 2 + 100,
		      "spent %lld ms of CPU in %lld ms while throttled",
		      (long long)(cpu_ms() - c0), (long long)(now_ms() - t0));
	ck_assert_msg(x.delivered <= 16 + 4, "%u requests delivered",
		      x.delivered);
	ck_assert_msg(proc_kb("VmRSS:") - rss0 < 64 * 1024 * RSS_SHADOW,
		      "RSS grew by %ld KiB", proc_kb("VmRSS:") - rss0);
	/* the client reads: everything is answered */
	end = now_ms() + wait_ms;
	while ((x.delivered < n || got < n * (reply + BL_MSGR_OVERHEAD)) &&
	       now_ms() < end) {
		push(fa, req, len, &off);
		bl_uring_run(u, 0, 0);
		got += drain(fa);
		bl_uring_run(u, 1, 1);
	}
	ck_assert_uint_eq(x.delivered, n);
	ck_assert_uint_eq(got, n * (reply + BL_MSGR_OVERHEAD));
	bl_msgr_conn_close(x.c, 0, NULL);
	end = now_ms() + wait_ms;
	while (!x.closed && now_ms() < end)
		bl_uring_run(u, 1, 100);
	ck_assert_int_eq(x.closed, 1);
	ck_assert_uint_eq(x.st.frames_sent, n);
	ck_assert_uint_ge(x.st.throttled, 1);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/*
 * max_inflight: a server that answers later (as a disk server does) gets
 * at most max_inflight requests at a time however many the client
 * pipelines; each answer lets one more in, from the answer's own send
 * completion.
 */
START_TEST(max_inflight_bounds_requests_waiting_for_an_answer)
{
	const uint64_t n = 100;
	struct bl_msgr_conn_opts o;
	struct bl_msgr_conn_stats st;
	struct bp x;
	struct bl_uring *u = mk_uring();
	unsigned char *req;
	size_t len, off = 0, got = 0;
	int64_t end;
	int fa, fb;

	unix_pair(&fa, &fb);
	bp_init(&x, &o, 100);
	x.async = true;
	o.max_inflight = 4;
	x.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(x.c);
	req = requests(n, &len);
	push(fa, req, len, &off);
	ck_assert_uint_eq(off, len);
	end = now_ms() + wait_ms;
	do {
		bl_uring_run(u, 1, 20);
		bl_msgr_conn_stats(x.c, &st);
	} while (!st.throttled && now_ms() < end);
	for (int i = 0; i < 10; i++)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(x.delivered, 4);
	/* two answers, two more requests */
	bp_answer(&x);
	bp_answer(&x);
	x.held -= 2;
	end = now_ms() + wait_ms;
	while (x.delivered < 6 && now_ms() < end)
		bl_uring_run(u, 1, 20);
	for (int i = 0; i < 5; i++)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(x.delivered, 6);
	/* answer everything as it comes */
	end = now_ms() + wait_ms;
	while ((x.delivered < n || x.held) && now_ms() < end) {
		while (x.held) {
			bp_answer(&x);
			x.held--;
		}
		bl_uring_run(u, 1, 10);
		got += drain(fa);
	}
	ck_assert_uint_eq(x.delivered, n);
	ck_assert_uint_eq(x.held_max, 4);
	end = now_ms() + wait_ms;
	while (got < n * (100 + BL_MSGR_OVERHEAD) && now_ms() < end) {
		bl_uring_run(u, 0, 0);
		got += drain(fa);
	}
	ck_assert_uint_eq(got, n * (100 + BL_MSGR_OVERHEAD));
	bl_msgr_conn_close(x.c, 0, NULL);
	end = now_ms() + wait_ms;
	while (!x.closed && now_ms() < end)
		bl_uring_run(u, 1, 100);
	ck_assert_int_eq(x.closed, 1);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Frames a connection sends of its own accord are not replies: two peers
 * streaming more than max_out_bytes at each other both keep reading.
 */
START_TEST(streams_both_ways_beyond_max_out_bytes_do_not_stall)
{
	const uint64_t n = 400;
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	unix_pair(&fa, &fb);
	peer_init(&a, "a");
	peer_init(&b, "b");
	opts_for(&oa, &a);
	opts_for(&ob, &b);
	oa.max_out_bytes = ob.max_out_bytes = (size_t)1 << 20;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	send_frames(&a, 1, n, false);
	send_frames(&b, 1, n, false);
	run_until(u, &a.rx, n, &b.rx, n);
	ck_assert_msg(!a.bad && !b.bad, "bad frames: %s%s", a.bad_msg,
		      b.bad_msg);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &a, &b);
	ck_assert_uint_eq(a.st.throttled + b.st.throttled, 0);
	bl_uring_destroy(u);
}
END_TEST


/* A frame with @plen bytes of @pay, as bytes. */
static unsigned char *big_frame(const unsigned char *pay, size_t plen,
				size_t *n)
{
	struct bl_list l, out;
	unsigned char *b;

	bl_list_init(&l);
	bl_list_init(&out);
	ck_assert_int_eq(bl_list_append(&l, pay, plen), 0);
	ck_assert_int_eq(bl_msgr_encode(&out, 5, 1, &l, 0), 0);
	*n = bl_list_length(&out);
	b = tu_flatten(&out);
	bl_list_clear(&l);
	bl_list_clear(&out);
	return b;
}

struct claim_rx {
	int frames, closes, epipe;
	bool ok, aligned;
	unsigned segs;
	const unsigned char *want;
	size_t want_len;
};

static void claim_frame(void *arg, struct bl_msgr_conn *c,
			struct bl_msgr_frame *f)
{
	struct claim_rx *x = arg;
	unsigned char *flat = tu_flatten(&f->payload);

	(void)c;
	x->frames++;
	x->segs = bl_list_num_buffers(&f->payload);
	x->ok = bl_list_length(&f->payload) == x->want_len &&
		!memcmp(flat, x->want, x->want_len);
	x->aligned = dio_aligned(&f->payload);
	free(flat);
}

static void quiet_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	(void)arg;
	(void)c;
	(void)msg;
}

static void claim_close(void *arg, struct bl_msgr_conn *c, int err,
			const char *reason)
{
	struct claim_rx *x = arg;

	(void)c;
	(void)reason;
	x->closes++;
	if (err == -EPIPE)
		x->epipe++;
}

/*
 * A large payload that fits a free buffer of the ring's registered pool
 * is read in one piece, into that buffer, aligned or not: the frame's
 * payload is the head the first receive brought and one segment for the
 * rest (piece by piece it was 1 MiB, then the remainder, each a read and
 * a buffer of its own).  One buffer is enough: an aligning connection's
 * small read up to the page boundary gives its buffer back before the
 * rest is read (a pool of one, as a memlock limit may leave, then still
 * serves).  Without io_uring nothing is registered and the pieces stay as
 * they were.
 */
START_TEST(a_large_payload_is_read_in_one_piece_into_a_registered_buffer)
{
	size_t big = ((size_t)3 << 19) + 12345, n;
	unsigned char *pay = malloc(big), *fr;
	uint64_t rng = 25;

	ck_assert_ptr_nonnull(pay);
	tu_fill(pay, big, &rng);
	fr = big_frame(pay, big, &n);
	for (int i = 0; i < 2; i++) {
		struct bl_uring *u = mk_uring();
		struct bl_uring_regpool *rp =
			bl_uring_regpool_create(u, 1, (size_t)2 << 20);
		struct bl_msgr_conn_opts o;
		struct bl_msgr_conn_stats st;
		struct bl_msgr_conn *c;
		struct claim_rx x;
		int64_t end;
		int fa, fb;

		ck_assert_ptr_nonnull(rp);
		memset(&x, 0, sizeof(x));
		x.want = pay;
		x.want_len = big;
		memset(&o, 0, sizeof(o));
		o.on_frame = claim_frame;
		o.on_close = claim_close;
		o.arg = &x;
		o.align_data = i;
		unix_pair(&fa, &fb);
		c = bl_msgr_conn_new(u, fb, &o);
		ck_assert_ptr_nonnull(c);
		feed(u, fa, fr, 1000);
		bl_uring_run(u, 1, 10);
		feed(u, fa, fr + 1000, n - 1000);
		end = now_ms() + wait_ms;
		while (!x.frames && now_ms() < end)
			bl_uring_run(u, 1, 10);
		ck_assert_int_eq(x.frames, 1);
		ck_assert(x.ok);
		if (i)
			ck_assert(x.aligned);
		bl_msgr_conn_stats(c, &st);
		ck_assert_uint_eq(st.direct_frames, 1);
		if (bl_uring_backend(u) == BL_URING_IO_URING)
			ck_assert_uint_eq(x.segs, 2);
		else
			ck_assert_uint_ge(x.segs, 3);
		bl_msgr_conn_close(c, 0, NULL);
		close(fa);
		end = now_ms() + wait_ms;
		while (!x.closes && now_ms() < end)
			bl_uring_run(u, 1, 10);
		ck_assert_int_eq(x.closes, 1);
		bl_uring_regpool_destroy(rp);
		bl_uring_destroy(u);
	}
	free(fr);
	free(pay);
}
END_TEST

/*
 * Eight peers each send a preamble claiming the largest payload there is
 * (2 GiB) and 8 KiB of it, on connections that accept it, half of
 * them aligning: the receiver's address space and resident memory grow by
 * far less than the 16 GiB claimed, since a direct read's buffer grows
 * with the bytes that arrive.  A 5 MiB payload that does arrive still
 * comes through direct reads, whole and (aligning) 4096-aligned, in a few
 * pieces.
 */
START_TEST(a_preamble_claiming_the_largest_payload_reserves_little)
{
	const size_t big = ((size_t)5 << 20) + 3;
	struct bl_msgr_conn_opts o;
	struct claim_rx x, y[2];
	struct bl_msgr_conn *cs[8], *cb[2];
	struct bl_msgr_conn_stats st;
	struct bl_uring *u = mk_uring();
	unsigned char pre[BL_MSGR_PREAMBLE + 8192], *pay, *fr;
	uint32_t len = BL_MSGR_PAYLOAD_LIMIT, crc;
	uint64_t seq = 1, rng = seed;
	long vm0, rss0;
	size_t n;
	int fa[8], fb[8], ga[2], gb[2];
	int64_t end;

	memset(&x, 0, sizeof(x));
	memset(pre, 0x33, sizeof(pre));
	memcpy(pre, &(uint32_t){ BL_MSGR_MAGIC }, 4);
	memcpy(pre + 4, &(uint16_t){ 5 }, 2);
	memcpy(pre + 6, &(uint16_t){ 0 }, 2);
	memcpy(pre + 8, &seq, 8);
	memcpy(pre + 16, &len, 4);
	crc = bl_crc32c(BL_MSGR_CRC_SEED, pre, 20);
	memcpy(pre + 20, &crc, 4);
	memset(&o, 0, sizeof(o));
	o.on_frame = claim_frame;
	o.on_close = claim_close;
	o.log = quiet_log;
	o.arg = &x;
	o.max_payload = BL_MSGR_PAYLOAD_LIMIT;
	for (int i = 0; i < 8; i++) {
		unix_pair(&fa[i], &fb[i]);
		o.align_data = i & 1;
		cs[i] = bl_msgr_conn_new(u, fb[i], &o);
		ck_assert_ptr_nonnull(cs[i]);
	}
	vm0 = proc_kb("VmSize:");
	rss0 = proc_kb("VmRSS:");
	for (int i = 0; i < 8; i++)
		write_all(fa[i], pre, sizeof(pre));
	for (int i = 0; i < 40; i++)
		bl_uring_run(u, 1, 10);
	ck_assert_msg(proc_kb("VmSize:") - vm0 < 256 * 1024,
		      "address space grew by %ld MiB for 16 GiB claimed",
		      (proc_kb("VmSize:") - vm0) / 1024);
	ck_assert_msg(proc_kb("VmRSS:") - rss0 < 64 * 1024,
		      "RSS grew by %ld MiB", (proc_kb("VmRSS:") - rss0) / 1024);
	ck_assert_int_eq(x.frames + x.closes, 0);

	/* payloads that do arrive still come through direct reads */
	pay = malloc(big);
	ck_assert_ptr_nonnull(pay);
	tu_fill(pay, big, &rng);
	fr = big_frame(pay, big, &n);
	for (int i = 0; i < 2; i++) {
		memset(&y[i], 0, sizeof(y[i]));
		y[i].want = pay;
		y[i].want_len = big;
		o.arg = &y[i];
		o.align_data = i;
		unix_pair(&ga[i], &gb[i]);
		cb[i] = bl_msgr_conn_new(u, gb[i], &o);
		ck_assert_ptr_nonnull(cb[i]);
		feed(u, ga[i], fr, 1000);
		bl_uring_run(u, 1, 10);
		feed(u, ga[i], fr + 1000, n - 1000);
		end = now_ms() + wait_ms;
		while (!y[i].frames && now_ms() < end)
			bl_uring_run(u, 1, 10);
		ck_assert_int_eq(y[i].frames, 1);
		ck_assert(y[i].ok);
		ck_assert_uint_ge(y[i].segs, 2);
		if (i)
			ck_assert(y[i].aligned);
		bl_msgr_conn_stats(cb[i], &st);
		ck_assert_uint_eq(st.direct_frames, 1);
		bl_msgr_conn_close(cb[i], 0, NULL);
	}
	/* the claimants leave half way: each connection ends with -EPIPE */
	for (int i = 0; i < 8; i++)
		close(fa[i]);
	end = now_ms() + wait_ms;
	while ((x.closes < 8 || y[0].closes + y[1].closes < 2) &&
	       now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_int_eq(x.closes, 8);
	ck_assert_int_eq(x.epipe, 8);
	ck_assert_int_eq(x.frames, 0);
	for (int i = 0; i < 2; i++)
		close(ga[i]);
	free(fr);
	free(pay);
	bl_uring_destroy(u);
}
END_TEST


/* Reads @fd (blocking, 10 s limit a read) until EOF; Return: bytes. */
static size_t read_to_eof(int fd)
{
	static unsigned char sink[1 << 16];
	struct timeval tv = { 10, 0 };
	size_t got = 0;
	ssize_t r;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((r = recv(fd, sink, sizeof(sink), 0)) > 0)
		got += (size_t)r;
	ck_assert_int_eq(r, 0);
	return got;
}

/*
 * A client sends its requests and shuts its sending side down
 * (shutdown(SHUT_WR)) before it reads.  _i 0: the server answers from
 * on_frame with replies larger than the socket takes at once; _i 1: it
 * answers later, with max_inflight counting.  Either way the client reads
 * every reply in full, then EOF, and the connection ends cleanly.
 */
START_TEST(a_half_closed_peer_still_gets_every_reply)
{
	const uint64_t n = 3;
	const size_t reply = (size_t)300 << 10;
	struct bl_msgr_conn_opts o;
	struct bp x;
	struct bl_uring *u = mk_uring();
	unsigned char *req;
	size_t len, got = 0;
	int64_t end;
	int fa, fb;

	unix_pair(&fa, &fb);
	bp_init(&x, &o, reply);
	x.async = _i == 1;
	if (x.async)
		o.max_inflight = 8;
	x.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(x.c);
	req = requests(n, &len);
	write_all(fa, req, len);
	ck_assert_int_eq(shutdown(fa, SHUT_WR), 0);
	end = now_ms() + wait_ms;
	while (x.delivered < n && now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(x.delivered, n);
	if (x.async) {
		/* the peer's EOF is in, the answers are not: still open */
		for (int i = 0; i < 10; i++)
			bl_uring_run(u, 1, 10);
		ck_assert_int_eq(x.closed, 0);
		while (x.held) {
			bp_answer(&x);
			x.held--;
		}
	}
	/* the client reads while the server sends */
	end = now_ms() + wait_ms;
	while (!x.closed && now_ms() < end) {
		bl_uring_run(u, 1, 10);
		got += drain(fa);
	}
	ck_assert_int_eq(x.closed, 1);
	got += read_to_eof(fa);
	ck_assert_uint_eq(got, n * (reply + BL_MSGR_OVERHEAD));
	ck_assert_int_eq(x.close_err, 0);
	ck_assert_str_eq(x.reason, "peer closed");
	ck_assert_uint_eq(x.st.frames_sent, n);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST


/* ---- out of descriptors, timeouts ----------------------------------------- */

struct fdx {
	unsigned logs, failed_lines;
	char log[256];
	int closes, timeouts;
	char reason[4][160];
	struct bl_msgr_conn *first;
};

static void fdx_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	struct fdx *x = arg;

	(void)c;
	x->logs++;
	if (strstr(msg, "accept failed"))
		x->failed_lines++;
	snprintf(x->log, sizeof(x->log), "%s", msg);
}

static void fdx_frame(void *arg, struct bl_msgr_conn *c,
		      struct bl_msgr_frame *f)
{
	struct fdx *x = arg;

	(void)f;
	if (!x->first)
		x->first = c;
}

static void fdx_close(void *arg, struct bl_msgr_conn *c, int err,
		      const char *reason)
{
	struct fdx *x = arg;

	if (c == x->first)
		x->first = NULL;
	if (x->closes < 4)
		snprintf(x->reason[x->closes], 160, "%s", reason);
	x->closes++;
	if (err == -ETIMEDOUT)
		x->timeouts++;
}

/* What the server process reports to the test. */
struct fd_report {
	unsigned nconns, failed_lines, nconns_after;
	int64_t wall_ms, cpu_ms;
	char log[256];
};

/* The server, in a process of its own with a few descriptors to spare. */
static void fd_server(int l, int ready, int report)
{
	struct bl_msgr_conn_opts o;
	struct fd_report rep;
	struct bl_msgr_server *s;
	struct bl_uring *u = mk_uring();
	struct rlimit rl;
	struct fdx x;
	int64_t t0, c0, end;
	int spare = dup(0);
	char go;

	memset(&x, 0, sizeof(x));
	memset(&rep, 0, sizeof(rep));
	memset(&o, 0, sizeof(o));
	o.on_frame = fdx_frame;
	o.on_close = fdx_close;
	o.arg = &x;
	o.log = fdx_log;
	o.log_arg = &x;
	s = bl_msgr_server_new(u, l, &o);
	if (!s || spare < 0)
		_exit(3);
	close(spare);
	/* room for 3 connections: spare is the lowest free descriptor */
	getrlimit(RLIMIT_NOFILE, &rl);
	rl.rlim_cur = (rlim_t)spare + 3;
	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(4);
	if (write(ready, "r", 1) != 1 || read(ready, &go, 1) != 1)
		_exit(5);
	/* 30 clients wait in the backlog: 1.5 s of serving */
	t0 = now_ms();
	c0 = cpu_ms();
	while (now_ms() - t0 < 1500)
		bl_msgr_server_poll(s, 50);
	rep.wall_ms = now_ms() - t0;
	rep.cpu_ms = cpu_ms() - c0;
	rep.nconns = bl_msgr_server_nconns(s);
	rep.failed_lines = x.failed_lines;
	snprintf(rep.log, sizeof(rep.log), "%s", x.log);
	/* a connection closes: the next one in the backlog comes in */
	if (x.first)
		bl_msgr_conn_close(x.first, 0, NULL);
	end = now_ms() + wait_ms;
	while (x.closes < 1 && now_ms() < end)
		bl_msgr_server_poll(s, 50);
	end = now_ms() + wait_ms;
	while (bl_msgr_server_nconns(s) < rep.nconns && now_ms() < end)
		bl_msgr_server_poll(s, 50);
	rep.nconns_after = bl_msgr_server_nconns(s);
	if (write(report, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
		_exit(6);
	bl_msgr_server_destroy(s);
	bl_uring_destroy(u);
	_exit(0);
}

/*
 * Out of descriptors, the server does not spin on a listening socket
 * that stays readable: 30 clients wait in the backlog of a server that
 * may open 3 more descriptors; over 1.5 s it takes under a quarter of a
 * CPU and logs "accept failed" at most once a second.  When one of its
 * connections closes, the next client is accepted.
 */
START_TEST(out_of_descriptors_the_server_backs_off)
{
	struct fd_report rep;
	struct sockaddr_in sa;
	int l = listener(&sa), sv[2], rp[2], fds[30], st;
	size_t n;
	unsigned char *g = stream(2, 1, 1, &n);
	pid_t pid;
	char c;

	ck_assert_int_eq(listen(l, 64), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ck_assert_int_eq(pipe(rp), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(sv[0]);
		close(rp[0]);
		fd_server(l, sv[1], rp[1]);
	}
	close(sv[1]);
	close(rp[1]);
	ck_assert_int_eq(read(sv[0], &c, 1), 1);
	for (int i = 0; i < 30; i++)
		fds[i] = dial(&sa);
	write_all(fds[0], g, n);	/* the server's first connection */
	ck_assert_int_eq(write(sv[0], "g", 1), 1);
	ck_assert_int_eq(read(rp[0], &rep, sizeof(rep)), (ssize_t)sizeof(rep));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "server: %d", st);
	ck_assert_msg(rep.nconns >= 1 && rep.nconns <= 3, "%u connections",
		      rep.nconns);
	ck_assert_msg(rep.cpu_ms <= rep.wall_ms / 4,
		      "%lld ms of CPU in %lld ms out of descriptors",
		      (long long)rep.cpu_ms, (long long)rep.wall_ms);
	ck_assert_msg(rep.failed_lines >= 1 && rep.failed_lines <= 3,
		      "%u accept failures logged in %lld ms",
		      rep.failed_lines, (long long)rep.wall_ms);
	ck_assert_msg(strstr(rep.log, "Too many open files"), "log: %s",
		      rep.log);
	ck_assert_uint_eq(rep.nconns_after, rep.nconns);
	for (int i = 0; i < 30; i++)
		close(fds[i]);
	close(sv[0]);
	close(rp[0]);
	close(l);
	free(g);
}
END_TEST

static bool fdx_closed(void *arg)
{
	return ((struct fdx *)arg)->closes >= 2;
}

/*
 * _i 0: a preamble begun and not finished closes its connection after
 * header_timeout_ms, also with the idle timeout off; one that was never
 * begun stays.  _i 1: with idle_timeout_ms, connections that send
 * nothing, before or after a frame, are closed.  Both -ETIMEDOUT, with
 * the reason logged.
 */
START_TEST(timeouts_close_stalled_and_idle_connections)
{
	struct bl_msgr_conn_opts o;
	struct sockaddr_in sa;
	struct bl_msgr_server *s;
	struct bl_uring *u = mk_uring();
	struct fdx x;
	int l = listener(&sa), a, b;
	size_t n;
	unsigned char *g = stream(2, 1, 1, &n);

	memset(&x, 0, sizeof(x));
	memset(&o, 0, sizeof(o));
	o.on_frame = fdx_frame;
	o.on_close = fdx_close;
	o.arg = &x;
	o.log = fdx_log;
	o.log_arg = &x;
	if (_i == 0)
		o.header_timeout_ms = 200;
	else
		o.idle_timeout_ms = 300;
	s = bl_msgr_server_new(u, l, &o);
	ck_assert_ptr_nonnull(s);
	a = dial(&sa);
	b = dial(&sa);
	if (_i == 0) {
		write_all(a, g, 10);	/* 10 bytes of a preamble */
		write_all(b, g, n);	/* a whole frame, then nothing */
		write_all(b, g, 12);	/* and a second preamble begun */
	} else {
		write_all(b, g, n);
	}
	serve_until(s, fdx_closed, &x);
	ck_assert_int_eq(x.closes, 2);
	ck_assert_int_eq(x.timeouts, 2);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(strstr(x.reason[i], _i ? "idle" : "preamble"),
			      "reason: %s", x.reason[i]);
	ck_assert_uint_ge(x.logs, 2);
	ck_assert_uint_eq(bl_msgr_server_nconns(s), 0);
	if (_i == 0) {
		/* a client that never began a preamble is not timed */
		int c = dial(&sa);

		for (int i = 0; i < 8; i++)
			bl_msgr_server_poll(s, 50);
		ck_assert_uint_eq(bl_msgr_server_nconns(s), 1);
		ck_assert_int_eq(x.closes, 2);
		close(c);
	}
	bl_msgr_server_destroy(s);
	close(a);
	close(b);
	close(l);
	free(g);
	bl_uring_destroy(u);
}
END_TEST

/* ---- resets --------------------------------------------------------------- */

/* Socket buffers (the kernel doubles them) that a 1 MiB reply overfills. */
#define SMALL_SOCKBUF 16384

/* listener() whose accepted sockets have a small send buffer. */
static int small_listener(struct sockaddr_in *sa)
{
	int l = listener(sa), sz = SMALL_SOCKBUF;

	ck_assert_int_eq(setsockopt(l, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)),
			 0);
	return l;
}

/* dial() with a small receive buffer, set before the window is offered. */
static int dial_small(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int sz = SMALL_SOCKBUF;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz,
				    sizeof(sz)), 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)sa,
				 sizeof(*sa)), 0);
	return fd;
}

/*
 * Reads @fd until its stream ends (10 s limit a read), adding the bytes
 * read to *@got.  Return: 0 for the end of the stream (a FIN), else the
 * errno of the recv(2) that failed (ECONNRESET: the peer reset it).
 */
static int read_to_end(int fd, size_t *got)
{
	static unsigned char sink[1 << 16];
	struct timeval tv = { 10, 0 };
	ssize_t r;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((r = recv(fd, sink, sizeof(sink), 0)) > 0)
		*got += (size_t)r;
	return r == 0 ? 0 : errno;
}

static bool bp_closed(void *arg)
{
	return ((struct bp *)arg)->closed > 0;
}

/*
 * A server with idle_timeout_ms 200 whose answer to a request is @reply
 * bytes, and a client, both with small socket buffers, that has sent one
 * request.
 */
struct idle_rig {
	struct bl_uring *u;
	struct bl_msgr_server *s;
	struct bl_msgr_conn_opts o;
	struct bp x;
	int l, fa;
};

static void idle_rig_start(struct idle_rig *r, size_t reply)
{
	struct sockaddr_in sa;
	unsigned char *req;
	size_t len;

	r->u = mk_uring();
	r->l = small_listener(&sa);
	bp_init(&r->x, &r->o, reply);
	r->o.idle_timeout_ms = 200;
	r->o.log = quiet_log;
	r->s = bl_msgr_server_new(r->u, r->l, &r->o);
	ck_assert_ptr_nonnull(r->s);
	r->fa = dial_small(&sa);
	req = requests(1, &len);
	write_all(r->fa, req, len);
	free(req);
}

/* idle_rig_start(), then serving until the idle server has ended the
 * connection, which delivered the one request and closed for the time. */
static void idle_rig_serve(struct idle_rig *r, size_t reply)
{
	idle_rig_start(r, reply);
	serve_until(r->s, bp_closed, &r->x);
	ck_assert_uint_eq(r->x.delivered, 1);
	ck_assert_int_eq(r->x.close_err, -ETIMEDOUT);
}

static void idle_rig_end(struct idle_rig *r)
{
	bl_msgr_server_destroy(r->s);
	close(r->fa);
	close(r->l);
	bl_uring_destroy(r->u);
}

/*
 * A client sends a request whose 1 MiB reply it never reads, with socket
 * buffers far smaller than the reply, so the server's send waits for room
 * when idle_timeout_ms fires.  The connection is reset, not shut down:
 * the client's read ends with ECONNRESET before it got the reply, where a
 * graceful end would leave the unsent rest in the server's kernel (in
 * FIN_WAIT1) and deliver it, then EOF, to the client.  The send waiting
 * in the kernel and the armed receive still end, so the connection
 * closes with -ETIMEDOUT, counted in resets, and the server has none
 * left.
 */
START_TEST(a_peer_that_does_not_read_is_reset_when_idle)
{
	const size_t reply = (size_t)1 << 20;
	struct idle_rig r;
	size_t got = 0;

	idle_rig_serve(&r, reply);
	ck_assert_msg(strstr(r.x.reason, "idle"), "reason: %s", r.x.reason);
	ck_assert_uint_eq(r.x.st.frames_sent, 0);	/* it was still waiting */
	ck_assert_uint_eq(r.x.st.resets, 1);
	ck_assert_uint_eq(bl_msgr_server_nconns(r.s), 0);
	ck_assert_int_eq(read_to_end(r.fa, &got), ECONNRESET);
	ck_assert_uint_lt(got, reply);
	idle_rig_end(&r);
}
END_TEST

/*
 * The same with a 1 KiB reply that the client's socket takes whole: when
 * idle_timeout_ms fires, the peer has acknowledged every byte and may
 * still be reading them, so the end is graceful (a reset would discard
 * what it has not read): the client reads the whole reply, then the end
 * of the stream, and nothing counts in resets.
 */
START_TEST(an_idle_peer_that_took_everything_is_not_reset)
{
	const size_t reply = 1024;
	struct idle_rig r;
	size_t got = 0;

	idle_rig_serve(&r, reply);
	ck_assert_uint_eq(r.x.st.frames_sent, 1);
	ck_assert_uint_eq(r.x.st.resets, 0);
	ck_assert_int_eq(read_to_end(r.fa, &got), 0);
	ck_assert_uint_gt(got, reply);	/* the reply and its framing */
	idle_rig_end(&r);
}
END_TEST

/*
 * A client that reads its 1 MiB reply slowly, 16 KiB every 20 ms through
 * small socket buffers, takes over a second, while idle_timeout_ms is
 * 200: the server's one send of the reply shows no progress of its own
 * until the kernel took all of it, but the peer acknowledges bytes as it
 * reads, and that is activity.  The client gets the whole reply; once it
 * has, and sits idle owing nothing, the timeout ends the connection
 * gracefully.
 */
START_TEST(a_peer_reading_a_large_reply_slowly_is_not_idle)
{
	static unsigned char buf[16384];
	const size_t reply = (size_t)1 << 20;
	struct idle_rig r;
	size_t got = 0;
	int64_t end, next = 0;

	idle_rig_start(&r, reply);
	end = now_ms() + wait_ms;
	while (got < reply && !r.x.closed && now_ms() < end) {
		ssize_t n;

		ck_assert_int_ge(bl_msgr_server_poll(r.s, 5), 0);
		if (now_ms() < next)
			continue;
		next = now_ms() + 20;
		n = recv(r.fa, buf, sizeof(buf), MSG_DONTWAIT);
		if (n > 0)
			got += (size_t)n;
	}
	ck_assert_msg(!r.x.closed, "closed after %zu bytes: %s", got,
		      r.x.reason);
	ck_assert_uint_ge(got, reply);
	serve_until(r.s, bp_closed, &r.x);	/* now idle, owing nothing */
	ck_assert_int_eq(r.x.close_err, -ETIMEDOUT);
	ck_assert_uint_eq(r.x.st.frames_sent, 1);
	ck_assert_uint_eq(r.x.st.resets, 0);
	ck_assert_int_eq(read_to_end(r.fa, &got), 0);
	idle_rig_end(&r);
}
END_TEST

/*
 * A client that keeps sending requests every 20 ms and never reads the
 * 1 MiB replies (no max_out_bytes, so the server never stops reading it):
 * the bytes it sends are no activity for the idle timeout of 200 ms when
 * it takes none of ours; it is reset long before its requests stop.
 */
START_TEST(a_peer_that_sends_but_never_reads_is_reset)
{
	struct sockaddr_in sa;
	struct idle_rig r;
	unsigned char *req;
	size_t len;
	int64_t t0, end;
	uint64_t seq = 2;

	r.u = mk_uring();
	r.l = small_listener(&sa);
	bp_init(&r.x, &r.o, (size_t)1 << 20);
	r.o.idle_timeout_ms = 200;
	r.o.max_out_bytes = SIZE_MAX;
	r.o.log = quiet_log;
	r.s = bl_msgr_server_new(r.u, r.l, &r.o);
	ck_assert_ptr_nonnull(r.s);
	r.fa = dial_small(&sa);
	t0 = now_ms();
	end = t0 + 4000;
	while (!r.x.closed && now_ms() < end) {
		req = stream(1, seq++, 1, &len);
		if (send(r.fa, req, len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			ck_assert_int_eq(errno, EAGAIN);
		free(req);
		for (int64_t next = now_ms() + 20; now_ms() < next;)
			ck_assert_int_ge(bl_msgr_server_poll(r.s, 5), 0);
	}
	ck_assert_msg(r.x.closed, "still open after 4 s of requests");
	ck_assert_int_eq(r.x.close_err, -ETIMEDOUT);
	ck_assert_msg(strstr(r.x.reason, "took no byte"), "reason: %s",
		      r.x.reason);
	ck_assert_int_lt(now_ms() - t0, 2000);
	ck_assert_uint_eq(r.x.st.resets, 1);
	idle_rig_end(&r);
}
END_TEST

/*
 * With max_inflight, a request not answered yet keeps a connection from
 * idling out (the server owes it; a slow disk).  But a client that sent
 * two requests, got the first answered with 1 MiB it never reads, and
 * waits for the second, is idle all the same: something of ours waits
 * for it and it takes nothing.  Reset by the idle timeout.
 */
START_TEST(an_unanswered_request_does_not_keep_a_peer_that_does_not_read)
{
	struct sockaddr_in sa;
	struct idle_rig r;
	unsigned char *req;
	size_t len;
	int64_t end;

	r.u = mk_uring();
	r.l = small_listener(&sa);
	bp_init(&r.x, &r.o, (size_t)1 << 20);
	r.x.async = true;
	r.o.max_inflight = 4;
	r.o.idle_timeout_ms = 200;
	r.o.log = quiet_log;
	r.s = bl_msgr_server_new(r.u, r.l, &r.o);
	ck_assert_ptr_nonnull(r.s);
	r.fa = dial_small(&sa);
	req = requests(2, &len);
	write_all(r.fa, req, len);
	free(req);
	end = now_ms() + 10000;
	while (r.x.delivered < 2 && now_ms() < end)
		ck_assert_int_ge(bl_msgr_server_poll(r.s, 10), 0);
	ck_assert_uint_eq(r.x.delivered, 2);
	bp_answer(&r.x);	/* the first; the second stays owed */
	serve_until(r.s, bp_closed, &r.x);
	ck_assert_int_eq(r.x.close_err, -ETIMEDOUT);
	ck_assert_uint_eq(r.x.st.resets, 1);
	idle_rig_end(&r);
}
END_TEST

static void bp_close_when_sent(void *arg, int res)
{
	struct bp *x = arg;

	if (res == 0)
		bl_msgr_conn_close(x->c, 0, "answered");
}

/* on_frame: the reply, and a close once the kernel has taken it. */
static void bp_answer_and_close(void *arg, struct bl_msgr_conn *c,
				struct bl_msgr_frame *f)
{
	struct bp *x = arg;
	struct bl_list l;
	struct bl_ptr p;

	(void)f;
	x->c = c;
	x->delivered++;
	bl_list_init(&l);
	ck_assert_int_eq(bl_ptr_alloc(&p, x->reply), 0);
	memset(bl_ptr_data(&p), 0x5a, x->reply);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_int_eq(bl_msgr_send(c, 9, &l, bp_close_when_sent, x), 0);
	bl_list_clear(&l);
}

/*
 * The application closes a healthy connection as soon as its answer went
 * to the kernel (the send's callback), while most of the answer still
 * sits in the socket buffers.  That close is graceful: the client reads
 * the whole answer and then the end of the stream (0), not a reset, and
 * nothing counts in resets.
 */
START_TEST(closing_a_healthy_connection_delivers_its_answer_then_eof)
{
	const size_t reply = (size_t)256 << 10;
	struct bl_msgr_conn_opts o;
	struct sockaddr_in sa;
	struct bl_msgr_server *s;
	struct bl_uring *u = mk_uring();
	struct bp x;
	unsigned char *req;
	size_t len, got = 0;
	int l = small_listener(&sa), fa;
	int64_t end;

	bp_init(&x, &o, reply);
	o.on_frame = bp_answer_and_close;
	s = bl_msgr_server_new(u, l, &o);
	ck_assert_ptr_nonnull(s);
	fa = dial_small(&sa);
	req = requests(1, &len);
	write_all(fa, req, len);
	end = now_ms() + wait_ms;
	while (!x.closed && now_ms() < end) {
		ck_assert_int_ge(bl_msgr_server_poll(s, 10), 0);
		got += drain(fa);
	}
	ck_assert_int_eq(x.closed, 1);
	ck_assert_int_eq(read_to_end(fa, &got), 0);
	ck_assert_uint_eq(got, reply + BL_MSGR_OVERHEAD);
	ck_assert_int_eq(x.close_err, 0);
	ck_assert_str_eq(x.reason, "answered");
	ck_assert_uint_eq(x.st.frames_sent, 1);
	ck_assert_uint_eq(x.st.resets, 0);
	bl_msgr_server_destroy(s);
	free(req);
	close(fa);
	close(l);
	bl_uring_destroy(u);
}
END_TEST

/*
 * bl_msgr_conn_abort() while the connection's 1 MiB answer waits for
 * room in the socket: on_close gets the application's err and reason
 * (a close called after it changes nothing), the send waiting in the
 * kernel ends.  _i 0, TCP: the client's read ends with ECONNRESET, short
 * of the answer, and resets counts it.  _i 1, AF_UNIX, which has no
 * reset: the connection is shut down instead, still ends, and resets
 * stays 0.
 */
START_TEST(an_aborted_connection_is_reset)
{
	const size_t reply = (size_t)1 << 20;
	struct bl_msgr_conn_opts o;
	struct bl_uring *u = mk_uring();
	struct bp x;
	unsigned char *req;
	size_t len, got = 0;
	int64_t end;
	int fa, fb, sz = SMALL_SOCKBUF;
	int want_end = _i == 0 ? ECONNRESET : 0;	/* AF_UNIX: EOF */

	if (_i == 0)
		tcp_pair(&fa, &fb);
	else
		unix_pair(&fa, &fb);
	/* whatever the host's defaults, the answer cannot fit in between,
	 * so the send is still in flight when the abort comes (and on_close
	 * cannot run inside it: the close after it is legal) */
	ck_assert_int_eq(setsockopt(fb, SOL_SOCKET, SO_SNDBUF, &sz,
				    sizeof(sz)), 0);
	ck_assert_int_eq(setsockopt(fa, SOL_SOCKET, SO_RCVBUF, &sz,
				    sizeof(sz)), 0);
	bp_init(&x, &o, reply);
	x.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(x.c);
	req = requests(1, &len);
	write_all(fa, req, len);
	end = now_ms() + wait_ms;
	while (!x.delivered && now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(x.delivered, 1);
	for (int i = 0; i < 5; i++)
		bl_uring_run(u, 0, 0);
	bl_msgr_conn_abort(x.c, -EPROTO, "gave up on the peer");
	bl_msgr_conn_close(x.c, 0, NULL);
	bl_msgr_conn_abort(NULL, -EPROTO, NULL);
	end = now_ms() + wait_ms;
	while (!x.closed && now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_int_eq(x.closed, 1);
	ck_assert_int_eq(x.close_err, -EPROTO);
	ck_assert_str_eq(x.reason, "gave up on the peer");
	ck_assert_uint_eq(x.st.frames_sent, 0);
	ck_assert_uint_eq(x.st.resets, _i == 0);	/* AF_UNIX: none sent */
	ck_assert_int_eq(read_to_end(fa, &got), want_end);
	ck_assert_uint_lt(got, reply);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Which failed receive, read or send resets its connection: the peer's
 * and the network's errors do; ours (out of memory, no buffer, a request
 * the kernel refused, a ring being destroyed) end it gracefully, so that
 * answers the kernel already holds still reach a peer that did nothing
 * wrong.
 */
START_TEST(only_the_peers_errors_reset)
{
	static const int peers[] = { ECONNRESET, ECONNABORTED, EPIPE,
				     ETIMEDOUT, EHOSTUNREACH, ENETUNREACH,
				     ENETDOWN };
	static const int ours[] = { ENOMEM, ENOBUFS, EIO, EAGAIN, EINVAL,
				    EBADF, EFAULT, ECANCELED, EBUSY };

	for (size_t i = 0; i < sizeof(peers) / sizeof(peers[0]); i++)
		ck_assert_msg(bl__msgr_err_is_peers(-peers[i]), "%s",
			      strerror(peers[i]));
	for (size_t i = 0; i < sizeof(ours) / sizeof(ours[0]); i++)
		ck_assert_msg(!bl__msgr_err_is_peers(-ours[i]), "%s",
			      strerror(ours[i]));
}
END_TEST

/* ---- suite --------------------------------------------------------------- */

/* ---- replies sent directly ----------------------------------------------- */

/* on_frame of a peer that echoes every frame back (type and payload). */
static void echo_frame(void *arg, struct bl_msgr_conn *c,
		       struct bl_msgr_frame *f)
{
	struct peer *p = arg;

	p->rx++;
	p->expect = f->seq;
	if (bl_msgr_send(c, f->type, &f->payload, on_sent, p))
		note_bad(p, "echo of seq %llu refused",
			 (unsigned long long)f->seq);
}

/*
 * A request/response pair: every frame b receives is answered from its
 * on_frame.  The replies go out with direct sendmsg() calls (direct_sends),
 * arrive in order with the right bytes, and each send callback runs once
 * with 0.
 */
START_TEST(replies_from_on_frame_go_out_directly_in_order)
{
	const uint64_t n = 2000;
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	tcp_pair(&fa, &fb);
	peer_init(&a, "a");
	peer_init(&b, "b");
	opts_for(&oa, &a);
	opts_for(&ob, &b);
	ob.on_frame = echo_frame;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	/* one request at a time (ping-pong), then bursts of 50 */
	for (uint64_t s = 1; s <= 100; s++) {
		send_frames(&a, s, 1, false);
		run_until(u, &a.rx, s, &b.rx, s);
	}
	for (uint64_t s = 101; s <= n; s += 50) {
		send_frames(&a, s, 50, false);
		run_until(u, &a.rx, s + 49, &b.rx, s + 49);
	}
	ck_assert_msg(!a.bad, "a: %d bad frames, first: %s", a.bad, a.bad_msg);
	ck_assert_msg(!b.bad, "b: %d bad, first: %s", b.bad, b.bad_msg);
	ck_assert(a.expect == n && b.rx == n);
	ck_assert_uint_eq(b.sent_ok, n);
	ck_assert_uint_eq(b.sent_cancel + b.sent_err, 0);
	bl_msgr_conn_close(a.c, 0, NULL);
	run_until_closed(u, &a, &b);
	ck_assert_int_eq(a.close_err, 0);
	ck_assert_int_eq(b.close_err, 0);
	/* every reply batch of the ping-pong went out directly */
	ck_assert_uint_ge(b.st.direct_sends, 100);
	ck_assert_uint_eq(b.st.frames_sent, n);
	ck_assert_uint_eq(b.st.bytes_sent, a.st.bytes_received);
	/* a sent from outside any callback: the ring, never directly */
	ck_assert_uint_eq(a.st.direct_sends, 0);
	ck_assert_uint_eq(a.st.frames_sent, n);
	ck_assert_uint_eq(a.logs + b.logs, 0);
	bl_uring_destroy(u);
}
END_TEST

/*
 * The server's ring spins for the next request after a direct reply: the
 * reply is a sendmsg() of the connection's own, not a request of the
 * ring's (its request count stays put while the multishot receive stays
 * armed), so the connection says so (bl_uring_expect_answer) and the
 * wait for the next request is let spin where it would otherwise sleep
 * at once.  Two rounds first: the receive's arming made two answers due,
 * which the two requests use up.  The blocking back end never spins.
 */
START_TEST(a_direct_reply_lets_the_ring_spin_for_the_next_request)
{
	struct bl__uring_counters c0, c1;
	struct bl__uring_features f;
	struct bl_msgr_conn_opts ob;
	struct peer b;
	struct bl_uring *u = mk_uring();
	struct pollfd pfd;
	unsigned char buf[256];
	int s0, s1;

	unix_pair(&s0, &s1);
	peer_init(&b, "b");
	opts_for(&ob, &b);
	ob.on_frame = echo_frame;
	b.c = bl_msgr_conn_new(u, s0, &ob);
	ck_assert_ptr_nonnull(b.c);
	ck_assert_int_eq(bl_uring_run(u, 0, 0), 0);
	bl__uring_counters(u, &c0);
	for (uint64_t seq = 1; seq <= 2; seq++) {
		size_t n;
		unsigned char *req = frame_bytes(3, seq, 16, 0, &n);

		write_all(s1, req, n);
		free(req);
		run_until(u, &b.rx, seq, &b.rx, seq);
		pfd.fd = s1;
		pfd.events = POLLIN;
		ck_assert_int_eq(poll(&pfd, 1, 5000), 1);
		ck_assert_int_gt(read(s1, buf, sizeof(buf)), 0);
	}
	bl__uring_counters(u, &c1);
	bl__uring_features(u, &f);
	if (blocking || bl_uring_backend(u) != BL_URING_IO_URING) {
		ck_assert_int_eq(bl_uring_run(u, 1, 10), 0);
		bl__uring_counters(u, &c1);
		ck_assert_uint_eq(c1.spins + c1.spin_skips + c1.spin_idle, 0);
	} else if (f.recv_multishot) {
		/* the replies were system calls of the connection's own */
		ck_assert_uint_eq(c1.sqes, c0.sqes);
		c0 = c1;
		ck_assert_int_eq(bl_uring_run(u, 1, 10), 0);
		bl__uring_counters(u, &c1);
		ck_assert_uint_eq(c1.spin_idle, c0.spin_idle);
		ck_assert_uint_ge(c1.spins + c1.spin_skips,
				  c0.spins + c0.spin_skips + 1);
	}
	ck_assert_msg(!b.bad, "b: %d bad, first: %s", b.bad, b.bad_msg);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &b, NULL);
	bl_uring_destroy(u);
	close(s1);
}
END_TEST

/*
 * The replier's socket buffer is tiny and the requester does not read: the
 * direct sendmsg() gets EAGAIN or takes part of a batch, the rest goes
 * through the ring, and later batches queue behind it.  Once the
 * requester reads, every reply is there, in order, whole.
 */
START_TEST(direct_reply_falls_back_to_the_ring_when_the_socket_is_full)
{
	const uint64_t n = 300;
	const size_t plen = 1000;	/* a batch of 10 under 16 KiB (zc) */
	struct bl_msgr_conn_opts ob;
	struct bl_msgr_conn_stats st;
	struct sockaddr_in sa;
	struct peer b;
	struct bl_uring *u = mk_uring();
	struct bl_list in;
	unsigned char *req = NULL;
	size_t reqlen = 0;
	int small = 4096, one = 1, l = listener(&sa), fa, fb, fl;
	uint64_t got = 0;
	int64_t end;

	/* the buffers are set before connect, so the window honours them */
	fa = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fa, 0);
	ck_assert_int_eq(setsockopt(fa, SOL_SOCKET, SO_RCVBUF, &small,
				    sizeof(small)), 0);
	ck_assert_int_eq(connect(fa, (struct sockaddr *)&sa, sizeof(sa)), 0);
	fb = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(fb, 0);
	close(l);
	ck_assert_int_eq(setsockopt(fb, SOL_SOCKET, SO_SNDBUF, &small,
				    sizeof(small)), 0);
	setsockopt(fa, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fb, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	peer_init(&b, "b");
	opts_for(&ob, &b);
	ob.on_frame = echo_frame;
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(b.c);
	/* requests 1..n, fed in bursts of 10 (one receive, one reply batch) */
	for (uint64_t s = 1; s <= n; s++) {
		size_t k;
		unsigned char *fr = frame_bytes((uint16_t)(s * 3), s, plen,
						off_of(s), &k);

		req = realloc(req, reqlen + k);
		ck_assert_ptr_nonnull(req);
		memcpy(req + reqlen, fr, k);
		reqlen += k;
		free(fr);
	}
	for (uint64_t k = 1; k <= n / 10; k++) {
		size_t step = reqlen / (n / 10);

		feed(u, fa, req + (k - 1) * step, step);
		end = now_ms() + wait_ms;
		while (b.rx < k * 10 && now_ms() < end)
			bl_uring_run(u, 1, 10);
		ck_assert_uint_eq(b.rx, k * 10);
	}
	/* nobody read: most replies cannot have left */
	ck_assert_uint_lt(b.sent_ok, n);
	bl_msgr_conn_stats(b.c, &st);
	ck_assert_uint_ge(st.direct_sends, 1);
	/* now read everything, running b so that its sends go on */
	bl_list_init(&in);
	fl = fcntl(fa, F_GETFL);
	fcntl(fa, F_SETFL, fl | O_NONBLOCK);
	end = now_ms() + wait_ms;
	while (got < n && now_ms() < end) {
		char buf[16384];
		ssize_t r = read(fa, buf, sizeof(buf));
		struct bl_msgr_frame f;

		if (r < 0) {
			ck_assert_int_eq(errno, EAGAIN);
			bl_uring_run(u, 1, 10);
			continue;
		}
		ck_assert_int_gt(r, 0);
		ck_assert_int_eq(bl_list_append(&in, buf, (size_t)r), 0);
		while (bl_msgr_parse(&in, &f, 0) == 1) {
			got++;
			ck_assert_uint_eq(f.seq, got);
			ck_assert_uint_eq(f.type, (uint16_t)(got * 3));
			ck_assert_uint_eq(bl_list_length(&f.payload), plen);
			ck_assert(matches(&f.payload, off_of(got)));
			bl_msgr_frame_release(&f);
		}
		bl_uring_run(u, 0, 0);
	}
	ck_assert_uint_eq(got, n);
	ck_assert_uint_eq(bl_list_length(&in), 0);
	end = now_ms() + wait_ms;
	while (b.sent_ok < n && now_ms() < end)
		bl_uring_run(u, 1, 10);
	ck_assert_uint_eq(b.sent_ok, n);
	ck_assert_msg(!b.bad, "b: %d bad, first: %s", b.bad, b.bad_msg);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &b, NULL);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_uint_eq(b.st.frames_sent, n);
	ck_assert_uint_eq(b.st.bytes_sent, n * (plen + BL_MSGR_OVERHEAD));
	bl_list_clear(&in);
	free(req);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Default options keep one multishot receive armed; the preamble of a
 * large payload stops it, the rest of the frame is read straight into a
 * raw of its own, and the small frames behind it still arrive, in order.
 */
START_TEST(a_large_payload_stops_the_multishot_receive_for_a_direct_read)
{
	const size_t big = (size_t)1 << 20;
	struct bl_msgr_conn_opts ob;
	struct bl__uring_counters c0, c1;
	struct peer b;
	struct bl_uring *u = mk_uring();
	unsigned char *fr[4];
	size_t len[4];
	int fa, fb;

	tcp_pair(&fa, &fb);
	peer_init(&b, "b");
	b.check_seq = false;
	opts_for(&ob, &b);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(b.c);
	for (int i = 0; i < 4; i++)
		fr[i] = frame_bytes(1, (uint64_t)i + 1, i == 1 ? big : 100,
				    off_of((uint64_t)i + 1), &len[i]);
	feed(u, fa, fr[0], len[0]);
	run_until(u, &b.rx, 1, &b.rx, 1);
	bl__uring_counters(u, &c0);
	/* the preamble and a little of the payload, then the rest */
	feed(u, fa, fr[1], 1000);
	bl_uring_run(u, 0, 0);
	bl_uring_run(u, 1, 50);
	feed(u, fa, fr[1] + 1000, len[1] - 1000);
	feed(u, fa, fr[2], len[2]);
	run_until(u, &b.rx, 3, &b.rx, 3);
	feed(u, fa, fr[3], len[3]);
	run_until(u, &b.rx, 4, &b.rx, 4);
	bl__uring_counters(u, &c1);
	ck_assert_msg(!b.bad, "b: %d bad, first: %s", b.bad, b.bad_msg);
	ck_assert_uint_eq(b.expect, 4);
	/* on io_uring, the stop is a cancel of the armed receive */
	if (bl_uring_backend(u) == BL_URING_IO_URING)
		ck_assert_uint_ge(c1.cancels, c0.cancels + 1);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &b, NULL);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_uint_eq(b.st.frames_received, 4);
	ck_assert_uint_eq(b.st.direct_frames, 1);
	ck_assert_uint_eq(b.st.bytes_received,
			  len[0] + len[1] + len[2] + len[3]);
	for (int i = 0; i < 4; i++)
		free(fr[i]);
	close(fa);
	bl_uring_destroy(u);
}
END_TEST

/* Every NULL from a constructor says why in errno; the fd stays open. */
START_TEST(conn_and_server_new_set_errno)
{
	struct bl_uring *u = mk_uring(), *other = mk_uring();
	struct bl_msgr_conn_opts o;
	struct bl_uring_bufring *br;
	struct bl_msgr_conn *c;
	struct sockaddr_in sa;
	int fa, fb, lfd;

	unix_pair(&fa, &fb);
	errno = 0;
	ck_assert_ptr_null(bl_msgr_conn_new(NULL, fa, NULL));
	ck_assert_int_eq(errno, EINVAL);
	memset(&o, 0, sizeof(o));
	o.nbufs = 3;		/* not a power of two: the ring's EINVAL */
	errno = 0;
	ck_assert_ptr_null(bl_msgr_conn_new(u, fa, &o));
	ck_assert_int_eq(errno, EINVAL);
	/* a ring of another bl_uring: the first receive is refused */
	br = bl_uring_bufring_create(other, 8, 4096, 0x100);
	ck_assert_ptr_nonnull(br);
	memset(&o, 0, sizeof(o));
	o.bufring = br;
	errno = 0;
	ck_assert_ptr_null(bl_msgr_conn_new(u, fa, &o));
	ck_assert_int_eq(errno, EINVAL);
	if (bl_uring_backend(u) == BL_URING_IO_URING) {
		/* a buffer group id the kernel has already */
		memset(&o, 0, sizeof(o));
		o.bgid = 0x101;
		o.keep_fd = true;
		c = bl_msgr_conn_new(u, fa, &o);
		ck_assert_ptr_nonnull(c);
		errno = 0;
		ck_assert_ptr_null(bl_msgr_conn_new(u, fb, &o));
		ck_assert_int_eq(errno, EEXIST);
		bl_msgr_conn_close(c, 0, NULL);
		while (bl_uring_inflight(u))
			ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	}
	ck_assert_int_ge(fcntl(fa, F_GETFD), 0);
	ck_assert_int_ge(fcntl(fb, F_GETFD), 0);
	/* the server */
	lfd = listener(&sa);
	errno = 0;
	ck_assert_ptr_null(bl_msgr_server_new(NULL, lfd, NULL));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(bl_msgr_server_new(u, -1, NULL));
	ck_assert_int_eq(errno, EBADF);
	memset(&o, 0, sizeof(o));
	o.buf_size = 0;
	o.nbufs = 5;
	errno = 0;
	ck_assert_ptr_null(bl_msgr_server_new(u, lfd, &o));
	ck_assert_int_eq(errno, EINVAL);
	tu_alloc_install(1, 1);
	errno = 0;
	ck_assert_ptr_null(bl_msgr_server_new(u, lfd, NULL));
	ck_assert_int_eq(errno, ENOMEM);
	tu_alloc_uninstall();
	close(lfd);
	close(fa);
	close(fb);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(other);
	bl_uring_destroy(u);
}
END_TEST

/* ---- busy polling (busy_poll_us) ------------------------------------------ */

static unsigned ring_frames, own_frames;

/* on_frame, and whether the payload lies in ring buffers or in raws of the
 * connection's own (its reads, direct reads). */
static void poll_frame(void *arg, struct bl_msgr_conn *c,
		       struct bl_msgr_frame *f)
{
	struct bl_list cl;
	ssize_t n;

	bl_list_init(&cl);
	ck_assert_int_eq(bl_list_append_list(&cl, &f->payload), 0);
	n = bl_list_detach_pooled(&cl);
	ck_assert_int_ge(n, 0);
	if (n > 0)
		ring_frames++;
	else if (bl_list_length(&cl))
		own_frames++;
	bl_list_clear(&cl);
	on_frame(arg, c, f);
}

/*
 * Both ends busy poll and send each other bursts of mostly small frames
 * with some of 4 to 74 KiB and a few of 1 MiB (read directly).  A small
 * ring makes receives through it take a few KiB at a time, so the
 * connections' own reads, the ring's one-shot receives and direct reads
 * take turns on the same stream: every frame arrives once, in order,
 * with its bytes, and both kinds of buffer carried frames.  _i 0: a
 * socketpair, 1: TCP.
 */
START_TEST(busy_poll_mixes_own_reads_with_the_ring_in_order)
{
	const uint64_t n = getenv("BL_TEST_QUICK") ? 1000 : 5000;
	struct bl_msgr_conn_opts oa, ob;
	struct peer a, b;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	two_peers(_i, &fa, &fb, &a, &oa, &b, &ob);
	oa.on_frame = ob.on_frame = poll_frame;
	oa.busy_poll_us = ob.busy_poll_us = 200;
	oa.nbufs = ob.nbufs = 16;
	oa.buf_size = ob.buf_size = 4096;
	ring_frames = own_frames = 0;
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	swap_frames(u, &a, &b, n, 100);
	bl_msgr_conn_close(a.c, 0, "done");
	run_until_closed(u, &a, &b);
	ck_assert_int_eq(a.close_err, 0);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_str_eq(b.reason, "peer closed");
	ck_assert(a.st.frames_received == n && b.st.frames_received == n);
	ck_assert(a.st.bytes_sent == b.st.bytes_received);
	ck_assert(b.st.bytes_sent == a.st.bytes_received);
	ck_assert_uint_gt(a.st.inline_recvs, 0);
	ck_assert_uint_gt(b.st.inline_recvs, 0);
	ck_assert_uint_gt(a.st.direct_frames + b.st.direct_frames, 0);
	ck_assert_uint_gt(ring_frames, 0);
	ck_assert_uint_gt(own_frames, 0);
	ck_assert_uint_eq(a.logs + b.logs, 0);
	bl_uring_destroy(u);
}
END_TEST

/* A raw peer whose on_frame hook writes more and then ends the stream. */
struct ender {
	struct peer p;		/* first: on_frame's argument */
	int fd;			/* the raw peer's end */
	const unsigned char *rest;
	size_t restn;
	bool reset;		/* end with a reset (SO_LINGER 0), not a FIN */
	uint64_t rx_at_close;
};

/* Frame @seq's payload size here: size_of()'s, kept small so that the
 * whole stream fits the socket's buffer. */
static size_t small_of(uint64_t seq)
{
	return size_of(seq) % 600;
}

static void ender_frame(void *arg, struct bl_msgr_conn *c,
			struct bl_msgr_frame *f)
{
	struct ender *e = arg;

	if (f->seq != e->p.expect + 1 || f->type != (uint16_t)(f->seq * 3) ||
	    bl_list_length(&f->payload) != small_of(f->seq) ||
	    !matches(&f->payload, off_of(f->seq)))
		note_bad(&e->p, "wrong frame at seq %llu",
			 (unsigned long long)f->seq);
	on_frame(&e->p, c, f);
	if (e->fd < 0)
		return;
	/* from inside the delivery: the receiver reads on right after it */
	if (e->restn)
		write_all(e->fd, e->rest, e->restn);
	if (e->reset) {
		struct linger lg = { 1, 0 };

		ck_assert_int_eq(setsockopt(e->fd, SOL_SOCKET, SO_LINGER, &lg,
					    sizeof(lg)), 0);
	}
	close(e->fd);
	e->fd = -1;
}

static void ender_close(void *arg, struct bl_msgr_conn *c, int err,
			const char *reason)
{
	struct ender *e = arg;

	e->rx_at_close = e->p.rx;
	on_close(&e->p, c, err, reason);
}

/* @e as the receiving peer "b", with busy polling when @poll, its other
 * end @fd for the callbacks to write to or reset; @o its options. */
static void ender_setup(struct ender *e, struct bl_msgr_conn_opts *o,
			bool poll, int fd)
{
	memset(e, 0, sizeof(*e));
	peer_init(&e->p, "b");
	e->p.check_seq = false;	/* ender_frame checks */
	opts_for(o, &e->p);
	o->on_frame = ender_frame;
	o->on_close = ender_close;
	o->arg = e;
	o->busy_poll_us = poll ? 100000 : 0;
	e->fd = fd;
}

/*
 * The peer sends frame 1, and when it is delivered sends the other 49
 * (small ones) and closes at once; _i & 2: the last frame is cut short
 * before the close.  With busy polling (_i & 1) the connection's own
 * reads take the rest and the end; without, the ring does.  Either way
 * every whole frame is delivered first, then the end is reported the
 * same way: a clean close (0, "peer closed"), or -EPIPE for the cut
 * frame, logged.
 */
START_TEST(a_peer_closing_right_after_sending_is_read_to_the_end)
{
	const uint64_t n = 50;
	bool poll = _i & 1, cut = _i & 2;
	struct bl_msgr_conn_opts o;
	unsigned char *all;
	size_t len = 0, first = 0;
	struct ender e;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	if (_i & 4)
		tcp_pair(&fa, &fb);
	else
		unix_pair(&fa, &fb);
	all = malloc(n * (600 + BL_MSGR_OVERHEAD));
	for (uint64_t s = 1; s <= n; s++) {
		size_t k;
		unsigned char *b = frame_bytes((uint16_t)(s * 3), s,
					       small_of(s), off_of(s), &k);

		memcpy(all + len, b, k);
		len += k;
		if (s == 1)
			first = len;
		free(b);
	}
	ender_setup(&e, &o, poll, fa);
	e.rest = all + first;
	e.restn = len - first - (cut ? 10 : 0);
	write_all(fa, all, first);
	e.p.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(e.p.c);
	run_until_closed(u, &e.p, NULL);
	ck_assert_msg(!e.p.bad, "%d bad frames, first: %s", e.p.bad,
		      e.p.bad_msg);
	ck_assert_uint_eq(e.p.rx, cut ? n - 1 : n);
	ck_assert_uint_eq(e.rx_at_close, e.p.rx);
	ck_assert_uint_eq(e.p.st.frames_received, e.p.rx);
	if (cut) {
		ck_assert_int_eq(e.p.close_err, -EPIPE);
		ck_assert_uint_eq(e.p.logs, 1);
		ck_assert_msg(strstr(e.p.log, "peer closed in the middle of a "
				     "frame"), "log: %s", e.p.log);
	} else {
		ck_assert_int_eq(e.p.close_err, 0);
		ck_assert_str_eq(e.p.reason, "peer closed");
		ck_assert_uint_eq(e.p.logs, 0);
	}
	if (poll)
		ck_assert_uint_gt(e.p.st.inline_recvs, 0);
	else
		ck_assert_uint_eq(e.p.st.inline_recvs, 0);
	free(all);
	bl_uring_destroy(u);
}
END_TEST

/*
 * The peer resets the connection (TCP, SO_LINGER 0) as soon as its frame
 * is delivered.  With busy polling (_i 1) the connection's own read meets
 * the reset; without (_i 0), the ring's receive: the same close either
 * way, -ECONNRESET with the reason logged, after the frame.
 */
START_TEST(a_peer_resetting_the_connection_is_reported_as_on_the_ring)
{
	struct bl_msgr_conn_opts o;
	unsigned char *b;
	size_t k;
	struct ender e;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	tcp_pair(&fa, &fb);
	b = frame_bytes(3, 1, small_of(1), off_of(1), &k);
	ender_setup(&e, &o, _i, fa);
	e.reset = true;
	write_all(fa, b, k);
	e.p.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(e.p.c);
	run_until_closed(u, &e.p, NULL);
	ck_assert_uint_eq(e.p.rx, 1);
	ck_assert_uint_eq(e.rx_at_close, 1);
	ck_assert_int_eq(e.p.close_err, -ECONNRESET);
	ck_assert_uint_eq(e.p.logs, 1);
	ck_assert_msg(strstr(e.p.log, "receive failed: ") &&
		      strstr(e.p.log, strerror(ECONNRESET)), "log: %s",
		      e.p.log);
	free(b);
	bl_uring_destroy(u);
}
END_TEST

/*
 * A busy polling connection that only receives (it owes no answer) reads
 * what is there and then waits in the ring, whatever its busy_poll_us:
 * with UINT_MAX, frames written one at a time between runs each come
 * back from bl_uring_run() (a spin would time the test out).
 */
START_TEST(busy_poll_waits_only_when_an_answer_is_due)
{
	const uint64_t n = 20;
	struct bl_msgr_conn_opts o;
	struct peer b;
	struct bl_uring *u = mk_uring();
	int fa, fb;

	unix_pair(&fa, &fb);
	peer_init(&b, "b");
	opts_for(&o, &b);
	o.busy_poll_us = UINT_MAX;
	b.c = bl_msgr_conn_new(u, fb, &o);
	ck_assert_ptr_nonnull(b.c);
	for (uint64_t s = 1; s <= n; s++) {
		size_t k;
		unsigned char *f = frame_bytes((uint16_t)(s * 3), s,
					       size_of(s), off_of(s), &k);

		write_all(fa, f, k);
		free(f);
		run_until(u, &b.rx, s, &b.rx, s);
	}
	ck_assert_msg(!b.bad, "%d bad frames, first: %s", b.bad, b.bad_msg);
	close(fa);
	run_until_closed(u, &b, NULL);
	ck_assert_int_eq(b.close_err, 0);
	ck_assert_uint_eq(b.st.frames_received, n);
	ck_assert_uint_eq(b.st.frames_sent, 0);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Two busy polling connections on one ring.  When a's frame is delivered,
 * a answers it and the test writes b's frame; a then polls for the next
 * request, which never comes, with a busy_poll_us longer than the whole
 * test may take.  b's receive
 * completes meanwhile (its task work runs when a's reads return), and a
 * gives way to it at once: b's frame arrives and the test ends (were a to
 * spin on, the test would time out).  io_uring only: the blocking back
 * end looks at b's socket only inside bl_uring_run().
 */
struct giveway {
	struct peer p;		/* first: on_frame's argument */
	int fd;			/* b's raw peer */
	unsigned char *b;
	size_t n;
};

static void giveway_frame(void *arg, struct bl_msgr_conn *c,
			  struct bl_msgr_frame *f)
{
	struct giveway *g = arg;

	on_frame(&g->p, c, f);
	/* an answer (nobody reads it): a now waits for the next request */
	if (bl_msgr_send(c, 5, NULL, NULL, NULL))
		note_bad(&g->p, "answer %llu refused",
			 (unsigned long long)f->seq);
	write_all(g->fd, g->b, g->n);
}

START_TEST(busy_poll_gives_way_to_other_connections)
{
	struct bl_msgr_conn_opts oa, ob;
	struct giveway ga;
	struct peer b;
	unsigned char *fa_bytes;
	size_t k;
	struct bl_uring *u;
	int a0, a1, b0, b1;

	if (blocking)
		return;
	u = mk_uring();
	if (bl_uring_backend(u) != BL_URING_IO_URING) {
		bl_uring_destroy(u);
		return;
	}
	unix_pair(&a0, &a1);
	unix_pair(&b0, &b1);
	memset(&ga, 0, sizeof(ga));
	peer_init(&ga.p, "a");
	peer_init(&b, "b");
	opts_for(&oa, &ga.p);
	opts_for(&ob, &b);
	oa.on_frame = giveway_frame;
	oa.arg = &ga;
	oa.busy_poll_us = UINT_MAX;
	ob.busy_poll_us = 1000;
	ga.fd = b1;
	ga.b = frame_bytes(3, 1, size_of(1), off_of(1), &ga.n);
	fa_bytes = frame_bytes(3, 1, size_of(1), off_of(1), &k);
	ga.p.c = bl_msgr_conn_new(u, a0, &oa);
	b.c = bl_msgr_conn_new(u, b0, &ob);
	ck_assert_ptr_nonnull(ga.p.c);
	ck_assert_ptr_nonnull(b.c);
	write_all(a1, fa_bytes, k);
	run_until(u, &ga.p.rx, 1, &b.rx, 1);
	ck_assert_msg(!ga.p.bad && !b.bad, "bad frames");
	bl_msgr_conn_close(ga.p.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &ga.p, &b);
	ck_assert_uint_eq(ga.p.logs + b.logs, 0);
	close(a1);
	close(b1);
	free(ga.b);
	free(fa_bytes);
	bl_uring_destroy(u);
}
END_TEST

/*
 * Request/response through a server whose connections busy poll, and a
 * client that does not: the option reaches the server's connections (its
 * own reads carry the requests after the first), and replies come back
 * in order.
 */
START_TEST(busy_poll_reaches_the_servers_connections)
{
	const uint64_t n = 300;
	struct bl_msgr_conn_opts o, oa;
	struct sockaddr_in sa;
	struct bl_msgr_server *srv;
	struct peer a, sp;
	struct bl_uring *u = mk_uring();
	int lfd = listener(&sa);
	int64_t end;

	peer_init(&a, "a");
	peer_init(&sp, "srv");
	opts_for(&oa, &a);
	opts_for(&o, &sp);
	o.on_frame = echo_frame;
	o.busy_poll_us = 1000;
	srv = bl_msgr_server_new(u, lfd, &o);
	ck_assert_ptr_nonnull(srv);
	a.c = bl_msgr_conn_new(u, dial(&sa), &oa);
	ck_assert_ptr_nonnull(a.c);
	for (uint64_t s = 1; s <= n; s++) {
		send_frames(&a, s, 1, false);
		end = now_ms() + wait_ms;
		while (a.rx < s && now_ms() < end)
			ck_assert_int_ge(bl_msgr_server_poll(srv, 100), 0);
		ck_assert_uint_eq(a.rx, s);
	}
	ck_assert_msg(!a.bad, "a: %d bad frames, first: %s", a.bad, a.bad_msg);
	ck_assert_uint_eq(sp.rx, n);
	ck_assert_uint_eq(sp.sent_ok, n);
	bl_msgr_conn_close(a.c, 0, NULL);
	end = now_ms() + wait_ms;
	while ((!a.closed || !sp.closed) && now_ms() < end)
		ck_assert_int_ge(bl_msgr_server_poll(srv, 100), 0);
	ck_assert_int_eq(sp.close_err, 0);
	ck_assert_uint_eq(sp.st.frames_received, n);
	ck_assert_uint_gt(sp.st.inline_recvs, 0);
	ck_assert_uint_eq(a.st.inline_recvs, 0);
	bl_msgr_server_destroy(srv);
	close(lfd);
	bl_uring_destroy(u);
}
END_TEST

/* ---- thread-local raws ---------------------------------------------------- */

/* Checked teardown: runs even after an assertion ended the test early. */
static void local_off(void)
{
	bl_raw_set_thread_local(false);
}

/* What on_frame found in the payloads' raws (local_frame). */
static struct {
	bool want;		/* thread-local expected */
	uint64_t segs;		/* payload segments looked at */
	uint64_t wrong;		/* of them, thread-local when not wanted
				 * or the other way round */
	uint64_t fixed;		/* of them, in the ring's registered buffers */
	struct bl_list handed;	/* copies of the payloads, for another thread */
} tl;

/* on_frame, looking at every segment's raw first, in the ring's thread. */
static void local_frame(void *arg, struct bl_msgr_conn *c,
			struct bl_msgr_frame *f)
{
	unsigned n = bl_list_num_buffers(&f->payload);

	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_list_get_ptr(&f->payload, i, &p), 0);
		tl.segs++;
		tl.wrong += bl_raw_is_thread_local(p.raw) != tl.want;
		tl.fixed += bl_raw_buf_index(p.raw) >= 0;
		bl_ptr_release(&p);
	}
	ck_assert_int_eq(bl_list_copy_shared(&tl.handed, &f->payload), 0);
	on_frame(arg, c, f);
}

static void *release_list(void *l)
{
	bl_list_clear(l);
	return NULL;
}

/*
 * The payloads handed to on_frame are slices of raws the thread that
 * runs the ring made, so they are thread-local exactly when that thread
 * has bl_raw_set_thread_local() on (_i odd), whichever way they came
 * (_i / 2): 0 ring buffers and direct reads of large payloads, 1 the
 * connection's own reads (busy_poll_us), 2 aligned raws (align_data),
 * 3 copies out of the ring (detach), 4 direct reads into the ring's
 * registered buffers, 5 plain receives while held payloads keep the ring
 * dry.  All of them are released in this thread; what goes to another
 * one is a bl_list_copy_shared() copy, never thread-local (the exception
 * bufferlist(7) makes for a messenger's payloads).
 */
START_TEST(payloads_are_thread_local_when_the_rings_thread_says_so)
{
	const uint64_t n = 200;	/* seq 97 and 194: 1 MiB */
	const bool on = _i & 1;
	const int mode = _i / 2;
	struct bl_msgr_conn_opts oa, ob;
	struct bl_uring_regpool *rp = NULL;
	struct bl_uring_bufring *br = NULL;
	struct bl_uring *u;
	struct peer a, b;
	uint64_t nonempty = 0;
	pthread_t t;
	int fa, fb;

	ck_assert(!bl_raw_set_thread_local(on));
	memset(&tl, 0, sizeof(tl));
	tl.want = on;
	bl_list_init(&tl.handed);
	u = mk_uring();
	two_peers(false, &fa, &fb, &a, &oa, &b, &ob);
	oa.on_frame = ob.on_frame = local_frame;
	switch (mode) {
	case 1:
		oa.busy_poll_us = ob.busy_poll_us = 200;
		oa.nbufs = ob.nbufs = 16;
		oa.buf_size = ob.buf_size = 4096;
		break;
	case 2:
		oa.align_data = ob.align_data = true;
		break;
	case 3:
		oa.detach = ob.detach = true;
		break;
	case 4:
		rp = bl_uring_regpool_create(u, 4, 1 << 20);
		ck_assert_ptr_nonnull(rp);
		break;
	case 5:
		br = bl_uring_bufring_create(u, 4, 4096, 78);
		ck_assert_ptr_nonnull(br);
		ob.bufring = br;
		ob.direct_min = SIZE_MAX;
		b.keep = true;
		break;
	}
	a.c = bl_msgr_conn_new(u, fa, &oa);
	b.c = bl_msgr_conn_new(u, fb, &ob);
	ck_assert_ptr_nonnull(a.c);
	ck_assert_ptr_nonnull(b.c);
	swap_frames(u, &a, &b, n, 50);
	bl_list_clear(&b.kept);
	bl_msgr_conn_close(a.c, 0, NULL);
	bl_msgr_conn_close(b.c, 0, NULL);
	run_until_closed(u, &a, &b);
	ck_assert_uint_eq(a.logs + b.logs, 0);

	for (uint64_t s = 1; s <= n; s++)	/* both ways, but empty ones */
		nonempty += 2 * (size_of(s) > 0);
	ck_assert_uint_ge(tl.segs, nonempty);
	ck_assert_msg(tl.wrong == 0, "%llu of %llu payload segments %s",
		      (unsigned long long)tl.wrong,
		      (unsigned long long)tl.segs,
		      on ? "not thread-local" : "thread-local");
	/* each way of receiving carried frames */
	switch (mode) {
	case 0:
		ck_assert_uint_gt(a.st.direct_frames + b.st.direct_frames, 0);
		break;
	case 1:
		ck_assert_uint_gt(a.st.inline_recvs + b.st.inline_recvs, 0);
		break;
	case 2:
		ck_assert_uint_gt(a.st.aligned_frames + b.st.aligned_frames, 0);
		break;
	case 3:
		ck_assert_uint_gt(a.st.detached + b.st.detached, 0);
		break;
	case 4:
		if (bl_uring_backend(u) == BL_URING_IO_URING)
			ck_assert_uint_gt(tl.fixed, 0);
		ck_assert_uint_gt(a.st.direct_frames + b.st.direct_frames, 0);
		break;
	case 5:
		ck_assert_uint_gt(b.st.ring_dry, 0);
		break;
	}

	/* the copies: shared raws, released by another thread */
	for (unsigned i = 0; i < bl_list_num_buffers(&tl.handed); i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_list_get_ptr(&tl.handed, i, &p), 0);
		ck_assert(!bl_raw_is_thread_local(p.raw));
		bl_ptr_release(&p);
	}
	ck_assert_int_eq(pthread_create(&t, NULL, release_list, &tl.handed),
			 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert_uint_eq(bl_list_length(&tl.handed), 0);
	if (br) {
		ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
		bl_uring_bufring_destroy(br);
	}
	bl_uring_regpool_destroy(rp);
	bl_uring_destroy(u);
}
END_TEST

static void add_conn_cases(Suite *s, const char *name, void (*setup)(void))
{
	TCase *tc = tcase_create(name);

	tcase_add_checked_fixture(tc, setup, local_off);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, conn_socketpair_10k_mixed_frames_in_order);
	tcase_add_test(tc, conn_tcp_10k_mixed_frames_in_order);
	tcase_add_test(tc, align_data_gives_4096_aligned_payloads_socketpair);
	tcase_add_test(tc, align_data_gives_4096_aligned_payloads_tcp);
	tcase_add_test(tc, align_data_copies_only_the_head_and_suits_o_direct);
	tcase_add_test(tc, held_payloads_starve_the_ring_but_frames_still_arrive);
	tcase_add_test(tc,
		held_payloads_starve_a_multishot_ring_but_frames_still_arrive);
	tcase_add_test(tc, detach_keeps_the_ring_free_for_long_lived_payloads);
	tcase_add_test(tc, frame_over_max_payload_closes_the_receiver);
	tcase_add_test(tc, a_reset_goes_to_stderr_only_without_log_and_on_close);
	tcase_add_test(tc, send_callbacks_may_send_and_close);
	tcase_add_test(tc, large_frame_with_bad_payload_crc_closes_the_receiver);
	tcase_add_test(tc, direct_reads_use_the_rings_registered_buffers);
	tcase_add_test(tc, a_large_payload_is_read_in_one_piece_into_a_registered_buffer);
	tcase_add_test(tc, close_with_frames_in_flight_cancels_and_leaks_nothing);
	tcase_add_loop_test(tc,
		a_frame_sent_in_pieces_arrives_whole_and_frames_sent_meanwhile_follow,
		0, 2);
	tcase_add_test(tc,
		closing_with_a_stream_open_cancels_what_waits_behind_it);
	tcase_add_test(tc, allocation_failures_return_enomem_and_leak_nothing);
	tcase_add_test(tc, conn_and_server_new_set_errno);
	tcase_add_test(tc, replies_from_on_frame_go_out_directly_in_order);
	tcase_add_test(tc, a_direct_reply_lets_the_ring_spin_for_the_next_request);
	tcase_add_test(tc,
		direct_reply_falls_back_to_the_ring_when_the_socket_is_full);
	tcase_add_test(tc,
		a_large_payload_stops_the_multishot_receive_for_a_direct_read);
	tcase_add_loop_test(tc,
		server_closes_only_the_connection_with_a_malformed_frame, 0,
		C_N);
	tcase_add_loop_test(tc, server_destroy_closes_its_connections, 0, 2);
	tcase_add_test(tc,
		replies_nobody_reads_stop_the_reading_at_max_out_bytes);
	tcase_add_test(tc, max_inflight_bounds_requests_waiting_for_an_answer);
	tcase_add_test(tc, streams_both_ways_beyond_max_out_bytes_do_not_stall);
	tcase_add_test(tc,
		a_preamble_claiming_the_largest_payload_reserves_little);
	tcase_add_loop_test(tc, a_half_closed_peer_still_gets_every_reply, 0,
			    2);
	tcase_add_test(tc, out_of_descriptors_the_server_backs_off);
	tcase_add_loop_test(tc, timeouts_close_stalled_and_idle_connections, 0,
			    2);
	tcase_add_test(tc, a_peer_that_does_not_read_is_reset_when_idle);
	tcase_add_test(tc, an_idle_peer_that_took_everything_is_not_reset);
	tcase_add_test(tc, a_peer_reading_a_large_reply_slowly_is_not_idle);
	tcase_add_test(tc, a_peer_that_sends_but_never_reads_is_reset);
	tcase_add_test(tc,
		an_unanswered_request_does_not_keep_a_peer_that_does_not_read);
	tcase_add_test(tc, only_the_peers_errors_reset);
	tcase_add_test(tc,
		closing_a_healthy_connection_delivers_its_answer_then_eof);
	tcase_add_loop_test(tc, an_aborted_connection_is_reset, 0, 2);
	tcase_add_loop_test(tc, busy_poll_mixes_own_reads_with_the_ring_in_order,
			    0, 2);
	tcase_add_loop_test(tc,
		a_peer_closing_right_after_sending_is_read_to_the_end, 0, 8);
	tcase_add_loop_test(tc,
		a_peer_resetting_the_connection_is_reported_as_on_the_ring, 0,
		2);
	tcase_add_test(tc, busy_poll_reaches_the_servers_connections);
	tcase_add_test(tc, busy_poll_gives_way_to_other_connections);
	tcase_add_test(tc, busy_poll_waits_only_when_an_answer_is_due);
	tcase_add_loop_test(tc,
		payloads_are_thread_local_when_the_rings_thread_says_so, 0, 12);
	suite_add_tcase(s, tc);
}

int main(void)
{
	Suite *s = suite_create("msgr");
	TCase *tc = tcase_create("codec");
	uint64_t rng;

	seed = tu_seed("test_msgr");
	if (getenv("BL_TEST_WAIT_MS"))
		wait_ms = atoll(getenv("BL_TEST_WAIT_MS"));
	rng = seed;
	pat = malloc(PAT_LEN);
	tu_fill(pat, PAT_LEN, &rng);
	pat_raw = bl_raw_create_static(pat, PAT_LEN);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, roundtrip_sizes_any_segmentation);
	tcase_add_test(tc, flags_and_types_round_trip);
	tcase_add_test(tc, encode_copy_gives_same_bytes_and_shares_otherwise);
	tcase_add_test(tc, encode_writes_the_reference_bytes_for_every_short_length);
	tcase_add_test(tc, encode_rejects_bad_arguments);
	tcase_add_test(tc, partial_frame_returns_0_and_leaves_input);
	tcase_add_test(tc, back_to_back_frames_parse_in_order);
	tcase_add_test(tc, parse_shares_the_received_bytes);
	tcase_add_test(tc,
		parse_of_a_lone_frame_moves_the_reference_and_empties_the_list);
	tcase_add_test(tc, malformed_frames_are_rejected_and_input_kept);
	tcase_add_test(tc, encode_and_parse_fail_cleanly_without_memory);
	suite_add_tcase(s, tc);
	add_conn_cases(s, "conn-uring", setup_uring);
	add_conn_cases(s, "conn-defer", setup_defer);
	add_conn_cases(s, "conn-blocking", setup_blocking);
	return tu_run(s);
}
