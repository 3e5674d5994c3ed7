/* SPDX-License-Identifier: MIT */
/*
 * test_msgr_align.c - the receive alignment comes from the caller
 * (bl_msgr_conn_opts.align): an aligning connection lands every large
 * payload on the boundary asked for (512, 4096, 64 KiB, 1 MiB), through
 * the ring and through direct reads, with the bytes intact; 0 keeps the
 * old 4096; a value that is not a power of two from 512 to 1 MiB makes
 * bl_msgr_conn_new() and bl_msgr_server_new() fail with EINVAL and leave
 * the descriptor open.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bufferlist/msgr.h>
#include "testutil.h"

/* Every segment starts on @a and all but the last are multiples of it. */
static bool aligned_to(const struct bl_list *l, size_t a)
{
	unsigned n = bl_list_num_buffers(l);

	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p;
		bool ok;

		ck_assert_int_eq(bl_list_get_ptr(l, i, &p), 0);
		ok = ((uintptr_t)bl_ptr_data(&p) & (a - 1)) == 0 &&
		     (i + 1 == n || p.len % a == 0);
		bl_ptr_release(&p);
		if (!ok)
			return false;
	}
	return true;
}

#define NSIZES 4
static const size_t sizes[NSIZES] = {
	(20 << 10) + 3,		/* through the ring */
	(100 << 10) + 7,
	(1 << 20) + 5,		/* direct reads */
	(3 << 20) + 11,
};

struct rx {
	size_t align;
	unsigned frames, misaligned, wrong;
	const unsigned char *pat;
};

static void on_frame(void *arg, struct bl_msgr_conn *c,
		     struct bl_msgr_frame *f)
{
	struct rx *rx = arg;
	size_t len = bl_list_length(&f->payload);
	unsigned char *flat;

	(void)c;
	if (!aligned_to(&f->payload, rx->align))
		rx->misaligned++;
	flat = tu_flatten(&f->payload);
	if (len != sizes[f->type] || memcmp(flat, rx->pat, len))
		rx->wrong++;
	free(flat);
	rx->frames++;
}

/* @asked as opts.align, @want the boundary that must come out. */
static void frames_land_on(size_t asked, size_t want)
{
	struct bl_msgr_conn_opts os, orx;
	struct bl_msgr_conn *a, *b;
	struct bl_uring *u = tm_uring();
	unsigned char *pat = malloc(sizes[NSIZES - 1]);
	struct rx rx = { .align = want, .pat = pat };
	uint64_t rng = 42;
	int sv[2];
	int64_t end;

	ck_assert_ptr_nonnull(pat);
	tu_fill(pat, sizes[NSIZES - 1], &rng);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	memset(&os, 0, sizeof(os));
	memset(&orx, 0, sizeof(orx));
	orx.on_frame = on_frame;
	orx.arg = &rx;
	orx.align_data = true;
	orx.align = asked;
	a = bl_msgr_conn_new(u, sv[0], &os);
	b = bl_msgr_conn_new(u, sv[1], &orx);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	for (int round = 0; round < 3; round++) {
		for (uint16_t i = 0; i < NSIZES; i++) {
			struct bl_list l;

			bl_list_init(&l);
			/* unaligned segments on the sending side */
			tu_append_segmented(&l, pat, sizes[i], 4000, 1, &rng);
			ck_assert_int_eq(bl_msgr_send(a, i, &l, NULL, NULL),
					 0);
			bl_list_clear(&l);
		}
	}
	end = tm_now_ms() + 60000;
	while (rx.frames < 3 * NSIZES && tm_now_ms() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_uint_eq(rx.frames, 3 * NSIZES);
	ck_assert_uint_eq(rx.wrong, 0);
	ck_assert_msg(rx.misaligned == 0, "%u of %u payloads not on %zu",
		      rx.misaligned, rx.frames, want);
	bl_msgr_conn_close(a, 0, NULL);
	bl_msgr_conn_close(b, 0, NULL);
	bl_uring_destroy(u);
	free(pat);
}

/* What opts.align asks, and the boundary that must come out (0: 4096). */
static const struct {
	size_t asked, want;
} aligns[] = {
	{ 512, 512 },
	{ (size_t)64 << 10, (size_t)64 << 10 },
	{ (size_t)1 << 20, (size_t)1 << 20 },
	{ 0, 4096 },
};

START_TEST(payloads_land_on_the_alignment_asked)
{
	frames_land_on(aligns[_i].asked, aligns[_i].want);
}
END_TEST

static const size_t bad_aligns[] = {
	3, 256, 511, 513, 4095, 6144, (size_t)2 << 20, SIZE_MAX,
};

START_TEST(a_bad_alignment_is_refused_by_conn_new)
{
	struct bl_uring *u = tm_uring();

	for (size_t i = 0; i < sizeof(bad_aligns) / sizeof(bad_aligns[0]);
	     i++) {
		struct bl_msgr_conn_opts o;
		int sv[2];

		memset(&o, 0, sizeof(o));
		o.align_data = true;
		o.align = bad_aligns[i];
		ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
		errno = 0;
		ck_assert_ptr_null(bl_msgr_conn_new(u, sv[0], &o));
		ck_assert_int_eq(errno, EINVAL);
		/* left open: the caller's still */
		ck_assert_int_ge(fcntl(sv[0], F_GETFD), 0);
		close(sv[0]);
		close(sv[1]);
	}
	bl_uring_destroy(u);
}
END_TEST

START_TEST(a_bad_alignment_is_refused_by_server_new)
{
	struct bl_uring *u = tm_uring();
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(lfd, 0);
	ck_assert_int_eq(listen(lfd, 1), 0);
	for (size_t i = 0; i < sizeof(bad_aligns) / sizeof(bad_aligns[0]);
	     i++) {
		struct bl_msgr_conn_opts o;

		memset(&o, 0, sizeof(o));
		o.align = bad_aligns[i];
		errno = 0;
		ck_assert_ptr_null(bl_msgr_server_new(u, lfd, &o));
		ck_assert_int_eq(errno, EINVAL);
	}
	/* and a good one is taken */
	{
		struct bl_msgr_conn_opts o;
		struct bl_msgr_server *s;

		memset(&o, 0, sizeof(o));
		o.align = 512;
		s = bl_msgr_server_new(u, lfd, &o);
		ck_assert_ptr_nonnull(s);
		bl_msgr_server_destroy(s);
	}
	close(lfd);
	bl_uring_destroy(u);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		a_bad_alignment_is_refused_by_conn_new,
		a_bad_alignment_is_refused_by_server_new,
		NULL
	};
	const struct tu_loop loops[] = {
		{ payloads_land_on_the_alignment_asked, 0,
		  (int)(sizeof(aligns) / sizeof(aligns[0])) },
		{ NULL }
	};

	return tm_main("test_msgr_align", tests, loops);
}
