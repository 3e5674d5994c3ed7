/* SPDX-License-Identifier: MIT */
/*
 * test_uring_pooled.c - receives into the ring's provided buffers:
 * multishot framing, buffers released on other threads, running dry,
 * detaching a list from the ring, and thread-local pooled raws.
 *
 * Each group runs twice (tu_ring_main()): on the io_uring back end and
 * on the blocking one.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <liburing.h>
#include "testutil.h"
#include "uring_int.h"

/* ---- pooled receive ----------------------------------------------------- */

#define NFRAMES 10000

static uint32_t frame_len(uint64_t *rng)
{
	return 16 + (uint32_t)(tu_rand(rng) % 1985);
}

static unsigned char frame_byte(unsigned i, uint32_t j)
{
	return (unsigned char)(i * 7u + j * 13u + 1u);
}

struct sender {
	int fd;
	uint64_t rng;		/* the frame lengths, as the receiver's */
	uint64_t cut;		/* where writes end */
};

static void *frame_sender(void *arg)
{
	struct sender *s = arg;
	unsigned char *buf = malloc(1 << 16);
	size_t n = 0;

	for (unsigned i = 0; i < NFRAMES; i++) {
		uint32_t len = frame_len(&s->rng);

		if (n + 4 + len > (1 << 16)) {
			if (write(s->fd, buf, n) != (ssize_t)n)
				break;
			n = 0;
		}
		memcpy(buf + n, &len, 4);
		for (uint32_t j = 0; j < len; j++)
			buf[n + 4 + j] = frame_byte(i, j);
		n += 4 + len;
		/* vary how frames straddle the receiver's buffers */
		if (tu_rand(&s->cut) % 4 == 0) {
			if (write(s->fd, buf, n) != (ssize_t)n)
				break;
			n = 0;
		}
	}
	if (n && write(s->fd, buf, n) != (ssize_t)n)
		n = 0;
	shutdown(s->fd, SHUT_WR);
	free(buf);
	return NULL;
}

struct framer {
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	int fd;
	struct bl_list acc;
	uint64_t rng;
	unsigned frames;
	int eof;
	int rearms;
	int errors;
};

static void framer_cb(void *arg, ssize_t res, struct bl_list *data,
		      bool more)
{
	struct framer *f = arg;

	if (res > 0) {
		ck_assert_uint_eq(bl_list_length(data), (size_t)res);
		ck_assert_int_eq(bl_list_claim_append(&f->acc, data), 0);
		for (;;) {
			struct bl_list frame;
			uint32_t len, want;
			unsigned char *got;

			if (bl_list_length(&f->acc) < 4)
				break;
			ck_assert_int_eq(bl_list_copy_out(&f->acc, 0, 4, &len), 0);
			if (bl_list_length(&f->acc) < 4 + (size_t)len)
				break;
			want = frame_len(&f->rng);
			ck_assert_uint_eq(len, want);
			bl_list_init(&frame);
			ck_assert_int_eq(bl_list_splice(&f->acc, 0, 4, NULL), 0);
			ck_assert_int_eq(bl_list_splice(&f->acc, 0, len, &frame), 0);
			got = tu_flatten(&frame);
			for (uint32_t j = 0; j < len; j++)
				if (got[j] != frame_byte(f->frames, j))
					ck_abort_msg("frame %u byte %u differs",
						     f->frames, j);
			free(got);
			/* dropping the frame returns its buffers to the ring */
			bl_list_clear(&frame);
			f->frames++;
		}
	} else if (res == 0) {
		f->eof = 1;
	} else if (res == -ENOBUFS) {
		/* the kernel filled buffers faster than we parsed: re-arm */
		f->rearms++;
	} else {
		f->errors++;
	}
	if (!more && !f->eof && !f->errors)
		ck_assert_int_eq(bl_uring_recv_pooled(f->u, f->fd, f->br, true,
						      framer_cb, f), 0);
}

START_TEST(test_pooled_multishot_receives_10000_framed_messages)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_uring_bufring *br;
	struct sender snd;
	struct framer f;
	pthread_t t;
	int fds[2];

	tu_tcp_pair(fds);
	br = bl_uring_bufring_create(u, 64, 4096, 7);
	ck_assert_ptr_nonnull(br);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 64);
	memset(&f, 0, sizeof(f));
	f.u = u;
	f.br = br;
	f.fd = fds[1];
	f.rng = tu_ring_seed;
	bl_list_init(&f.acc);
	snd.fd = fds[0];
	snd.rng = tu_ring_seed;
	snd.cut = tu_ring_seed + 99;
	ck_assert_int_eq(bl_uring_recv_pooled(u, fds[1], br, true, framer_cb,
					      &f), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, frame_sender, &snd), 0);
	tu_run_until(u, &f.eof, 1);
	pthread_join(t, NULL);
	ck_assert_int_eq(f.errors, 0);
	ck_assert_uint_eq(f.frames, NFRAMES);
	ck_assert_uint_eq(bl_list_length(&f.acc), 0);
	bl_list_clear(&f.acc);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 64);
	if (f.rearms)
		fprintf(stderr, "test_uring: pooled receive re-armed %d times "
				"after -ENOBUFS\n", f.rearms);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* One single-shot pooled receive; its chunk stays in c->data. */
static void recv_one(struct bl_uring *u, int fd,
		     struct bl_uring_bufring *br, struct tu_chunk_rec *c)
{
	memset(c, 0, sizeof(*c));
	bl_list_init(&c->data);
	ck_assert_int_eq(bl_uring_recv_pooled(u, fd, br, false, tu_chunk_cb,
					      c), 0);
	tu_run_until(u, &c->calls, 1);
	ck_assert_int_eq(c->calls, 1);
	ck_assert(!c->more);
}

static void *release_thread(void *arg)
{
	bl_list_clear(arg);
	return NULL;
}

START_TEST(test_buffer_released_on_another_thread_returns_to_the_ring)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 4096, 3);
	struct tu_chunk_rec c[5];
	unsigned char *buf = calloc(1, 64 * 1024);
	pthread_t t;
	int fds[2];

	ck_assert_ptr_nonnull(br);
	tu_tcp_pair(fds);
	ck_assert_int_eq(write(fds[0], buf, 64 * 1024), 64 * 1024);

	{
		struct bl_stats s0, s1;

		bl_stats_thread(&s0);
		recv_one(u, fds[1], br, &c[0]);
		bl_stats_thread(&s1);
		/* the chunk is the ring's buffer itself: nothing copied */
		ck_assert_uint_eq(s1.copied_bytes, s0.copied_bytes);
	}
	ck_assert_int_eq(c[0].res, 4096);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 3);
	ck_assert_int_eq(pthread_create(&t, NULL, release_thread, &c[0].data), 0);
	pthread_join(t, NULL);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);

	/* all four can be filled again: the released one went back */
	for (int i = 1; i <= 4; i++) {
		recv_one(u, fds[1], br, &c[i]);
		ck_assert_int_eq(c[i].res, 4096);
	}
	ck_assert_uint_eq(bl_uring_bufring_available(br), 0);
	/* and a fifth finds the ring dry */
	recv_one(u, fds[1], br, &c[0]);
	ck_assert_int_eq(c[0].res, -ENOBUFS);
	for (int i = 1; i <= 4; i++)
		bl_list_clear(&c[i].data);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
	free(buf);
}
END_TEST

START_TEST(test_multishot_ends_with_enobufs_when_the_ring_runs_dry)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 2, 1024, 4);
	unsigned char *buf = calloc(1, 16384);
	struct tu_chunk_rec c;
	time_t end = time(NULL) + 20;
	int fds[2];

	ck_assert_ptr_nonnull(br);
	tu_tcp_pair(fds);
	ck_assert_int_eq(write(fds[0], buf, 16384), 16384);
	memset(&c, 0, sizeof(c));
	bl_list_init(&c.data);
	ck_assert_int_eq(bl_uring_recv_pooled(u, fds[1], br, true,
					      tu_chunk_cb, &c), 0);
	while (c.res != -ENOBUFS && time(NULL) < end) {
		ck_assert_int_ge(bl_uring_run(u, 1, 500), 0);
		ck_assert(!c.calls || c.res > 0 || c.res == -ENOBUFS);
	}
	ck_assert_int_eq(c.res, -ENOBUFS);
	ck_assert(!c.more);
	/* the two buffers are ours: 2 KiB held, nothing lost */
	ck_assert_uint_eq(bl_list_length(&c.data), 2048);
	ck_assert_uint_eq(bl_uring_inflight(u), 0);
	bl_list_clear(&c.data);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 2);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
	free(buf);
}
END_TEST

START_TEST(test_detach_pooled_copies_ring_segments_and_frees_buffers)
{
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 1000, 5);
	unsigned char msg[3000];
	struct tu_chunk_rec c[2];
	struct bl_list l;
	struct bl_ptr head, mid, p;
	int fds[2];

	ck_assert_ptr_nonnull(br);
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 31);
	tu_tcp_pair(fds);
	ck_assert_int_eq(write(fds[0], msg, 2000), 2000);
	recv_one(u, fds[1], br, &c[0]);
	recv_one(u, fds[1], br, &c[1]);
	ck_assert_uint_eq(bl_list_length(&c[0].data) + bl_list_length(&c[1].data),
			  2000);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 2);

	/* [own 100][ring][ring][own 50][ring of c0 again, a slice] */
	bl_list_init(&l);
	ck_assert_int_eq(bl_ptr_alloc(&head, 100), 0);
	memset(bl_ptr_data(&head), 'h', 100);
	ck_assert_int_eq(bl_list_append_ptr(&l, &head), 0);
	ck_assert_int_eq(bl_list_append_list(&l, &c[0].data), 0);
	ck_assert_int_eq(bl_list_append_list(&l, &c[1].data), 0);
	ck_assert_int_eq(bl_ptr_alloc(&mid, 50), 0);
	memset(bl_ptr_data(&mid), 'm', 50);
	ck_assert_int_eq(bl_list_append_ptr(&l, &mid), 0);
	ck_assert_int_eq(bl_list_get_ptr(&c[0].data, 0, &p), 0);
	ck_assert_int_eq(bl_ptr_slice(&p, &p, 0, 10), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &p), 0);
	bl_ptr_release(&p);
	bl_list_clear(&c[0].data);
	bl_list_clear(&c[1].data);
	{
		size_t len = bl_list_length(&l);
		unsigned char *before = tu_flatten(&l);

		ck_assert_int_eq(bl_list_detach_pooled(&l), 2010);
		tu_assert_list_eq(&l, before, len);
		free(before);
	}
	/* our own raws are still shared, not copied */
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	ck_assert_ptr_eq(p.raw, head.raw);
	bl_ptr_release(&p);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	/* nothing pooled left: nothing to do */
	ck_assert_int_eq(bl_list_detach_pooled(&l), 0);
	bl_list_clear(&l);
	bl_ptr_release(&head);
	bl_ptr_release(&mid);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/*
 * A list with no ring slice has nothing to detach: it is left exactly as
 * it was, without an allocation (five segments, past the inline slots: a
 * rebuild of the chain would need chunks, which the allocator refuses).
 */
START_TEST(test_detach_pooled_leaves_a_list_without_ring_slices_alone)
{
	struct iovec before[5], after[5];
	struct tu_alloc_stats st;
	struct bl_ptr p[5], q;
	struct bl_list l;

	bl_list_init(&l);
	for (int i = 0; i < 5; i++) {
		ck_assert_int_eq(bl_ptr_alloc(&p[i], 100 + i), 0);
		memset(bl_ptr_data(&p[i]), 'a' + i, 100 + i);
		ck_assert_int_eq(bl_list_append_ptr(&l, &p[i]), 0);
	}
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, before, 5), 5);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_detach_pooled(&l), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs + st.failed, 0);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5);
	ck_assert_int_eq(bl_list_to_iovec(&l, 0, after, 5), 5);
	for (int i = 0; i < 5; i++) {
		ck_assert_ptr_eq(after[i].iov_base, before[i].iov_base);
		ck_assert_uint_eq(after[i].iov_len, before[i].iov_len);
		ck_assert_int_eq(bl_list_get_ptr(&l, (unsigned)i, &q), 0);
		ck_assert_ptr_eq(q.raw, p[i].raw);
		bl_ptr_release(&q);
		/* ours and the list's: no reference taken or dropped */
		ck_assert_uint_eq(bl_raw_nref(p[i].raw), 2);
	}
	bl_list_clear(&l);
	for (int i = 0; i < 5; i++)
		bl_ptr_release(&p[i]);
}
END_TEST

/* The copies belong to the list: they are made in the list's pool. */
START_TEST(test_detach_pooled_copies_into_the_lists_pool)
{
	struct bl_pool *pool = bl_pool_create("test_uring_detach", NULL);
	struct bl_uring *u = tu_ring_new(tu_blocking, 0, 0);
	struct bl_uring_bufring *br = bl_uring_bufring_create(u, 4, 1000, 6);
	struct bl_pool_stats ps0, ps1;
	unsigned char msg[700];
	struct tu_chunk_rec c;
	struct bl_list l;
	struct bl_ptr head, p;
	int fds[2];

	ck_assert_ptr_nonnull(pool);
	ck_assert_ptr_nonnull(br);
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 7);
	tu_tcp_pair(fds);
	ck_assert_int_eq(write(fds[0], msg, sizeof(msg)), (ssize_t)sizeof(msg));
	recv_one(u, fds[1], br, &c);
	ck_assert_int_eq(c.res, (ssize_t)sizeof(msg));

	/* [own 10, default pool][ring 700] in a list of @pool */
	bl_list_init(&l);
	bl_list_set_pool(&l, pool);
	ck_assert_int_eq(bl_ptr_alloc(&head, 10), 0);
	memset(bl_ptr_data(&head), 'h', 10);
	ck_assert_int_eq(bl_list_append_ptr(&l, &head), 0);
	ck_assert_int_eq(bl_list_append_list(&l, &c.data), 0);
	bl_list_clear(&c.data);
	bl_pool_get_stats(pool, &ps0);
	ck_assert_int_eq(bl_list_detach_pooled(&l), (ssize_t)sizeof(msg));
	bl_pool_get_stats(pool, &ps1);
	/* one raw of 700 bytes, accounted in the list's pool */
	ck_assert_int_eq(ps1.raws - ps0.raws, 1);
	ck_assert_int_ge(ps1.bytes - ps0.bytes, (int64_t)sizeof(msg));
	ck_assert_int_eq(bl_list_get_ptr(&l, 1, &p), 0);
	ck_assert_ptr_eq(bl_raw_pool(p.raw), pool);
	ck_assert_mem_eq(bl_ptr_data(&p), msg, sizeof(msg));
	bl_ptr_release(&p);
	/* the segment that was not copied keeps its own pool */
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	ck_assert_ptr_eq(p.raw, head.raw);
	ck_assert_ptr_eq(bl_raw_pool(p.raw), bl_pool_default());
	bl_ptr_release(&p);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 4);
	bl_list_clear(&l);
	bl_ptr_release(&head);
	bl_pool_get_stats(pool, &ps1);
	ck_assert_int_eq(ps1.raws, ps0.raws);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

/* ---- thread-local raws --------------------------------------------------- */

/* Pooled receives into @out until it holds @len bytes. */
static void recv_pooled_bytes(struct bl_uring *u, int fd,
			      struct bl_uring_bufring *br, struct bl_list *out,
			      size_t len)
{
	while (bl_list_length(out) < len) {
		struct tu_chunk_rec c;

		recv_one(u, fd, br, &c);
		ck_assert_int_gt(c.res, 0);
		ck_assert_int_eq(bl_list_claim_append(out, &c.data), 0);
	}
	ck_assert_uint_eq(bl_list_length(out), len);
}

/* How many of @l's segments lie in thread-local raws. */
static unsigned local_segments(const struct bl_list *l)
{
	unsigned n = 0;

	for (unsigned i = 0; i < bl_list_num_buffers(l); i++) {
		struct bl_ptr p;

		ck_assert_int_eq(bl_list_get_ptr(l, i, &p), 0);
		n += bl_raw_is_thread_local(p.raw);
		bl_ptr_release(&p);
	}
	return n;
}

/*
 * A ring's received buffers are raws the receiving thread makes, so they
 * follow its bl_raw_set_thread_local(): on (_i 1), every segment of what
 * a pooled receive hands over is thread-local; off (_i 0), none is.  The
 * raw is made when the chunk arrives, so a switch turned the other way
 * after the ring was made holds for the next chunk.  Either way the
 * buffers go back to the ring when this thread drops them.  A copy made
 * with bl_list_copy_shared() is never thread-local, and is what another
 * thread may release (the exception bufferlist(7) makes for rings).
 */
START_TEST(test_pooled_receive_raws_follow_the_threads_setting)
{
	const bool on = _i;
	unsigned char msg[3500];
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	struct bl_list got, later, copy;
	struct bl_ptr p;
	unsigned ngot, nlater;
	pthread_t t;
	int fds[2];

	ck_assert(!bl_raw_set_thread_local(on));
	u = tu_ring_new(tu_blocking, 0, 0);
	br = bl_uring_bufring_create(u, 8, 1024, 8);
	ck_assert_ptr_nonnull(br);
	for (unsigned i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 13);
	tu_tcp_pair(fds);
	bl_list_init(&got);
	bl_list_init(&later);
	bl_list_init(&copy);
	ck_assert_int_eq(write(fds[0], msg, 3000), 3000);
	recv_pooled_bytes(u, fds[1], br, &got, 3000);
	ngot = bl_list_num_buffers(&got);
	ck_assert_uint_ge(ngot, 3);
	ck_assert_uint_eq(local_segments(&got), (on ? ngot : 0));
	tu_assert_list_eq(&got, msg, 3000);

	/* the switch the other way: the next chunk follows it */
	bl_raw_set_thread_local(!on);
	ck_assert_int_eq(write(fds[0], msg + 3000, 500), 500);
	recv_pooled_bytes(u, fds[1], br, &later, 500);
	nlater = bl_list_num_buffers(&later);
	ck_assert_uint_eq(local_segments(&later), (on ? 0 : nlater));
	/* and what came before keeps what it was made as */
	ck_assert_uint_eq(local_segments(&got), (on ? ngot : 0));
	bl_raw_set_thread_local(on);

	/* the hand-over to another thread: a copy in a shared raw */
	ck_assert_int_eq(bl_list_copy_shared(&copy, &got), 0);
	ck_assert_int_eq(bl_list_get_ptr(&copy, 0, &p), 0);
	ck_assert(!bl_raw_is_thread_local(p.raw));
	bl_ptr_release(&p);
	tu_assert_list_eq(&copy, msg, 3000);
	ck_assert_int_eq(pthread_create(&t, NULL, release_thread, &copy), 0);
	pthread_join(t, NULL);
	ck_assert_uint_eq(bl_list_length(&copy), 0);

	/* released here, the ring's buffers go back to it */
	ck_assert_uint_lt(bl_uring_bufring_available(br), 8);
	bl_list_clear(&got);
	bl_list_clear(&later);
	ck_assert_uint_eq(bl_uring_bufring_available(br), 8);
	bl_uring_bufring_destroy(br);
	bl_uring_destroy(u);
	close(fds[0]);
	close(fds[1]);
}
END_TEST

#ifdef BL_DEBUG
static void got_chunk(void *arg, ssize_t res, struct bl_list *data, bool more)
{
	struct tu_chunk_rec *c = arg;

	c->calls++;
	c->res = res;
	c->more = more;
	if (bl_list_claim_append(&c->data, data))
		_exit(3);
}

/*
 * In a child (the misuse aborts): a chunk received while the switch is on,
 * dropped by another thread.
 */
static void ring_raw_dropped_elsewhere(void)
{
	struct bl_uring_params prm;
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	struct tu_chunk_rec c;
	pthread_t t;
	int sv[2];

	bl_raw_set_thread_local(true);
	memset(&prm, 0, sizeof(prm));
	prm.force_blocking = tu_blocking;
	memset(&c, 0, sizeof(c));
	bl_list_init(&c.data);
	u = bl_uring_create(&prm);
	br = u ? bl_uring_bufring_create(u, 2, 1024, 9) : NULL;
	if (!br || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
	    write(sv[0], "x", 1) != 1 ||
	    bl_uring_recv_pooled(u, sv[1], br, false, got_chunk, &c))
		_exit(4);
	for (int i = 0; i < 100 && !c.calls; i++)
		if (bl_uring_run(u, 1, 100) < 0)
			_exit(5);
	if (c.res != 1 || pthread_create(&t, NULL, release_thread, &c.data))
		_exit(6);
	pthread_join(t, NULL);
}

/*
 * The exception enforced: a thread-local thread's ring buffers may not be
 * released on another thread, and an --enable-debug build aborts when
 * one is, naming the misuse.
 */
START_TEST(test_debug_build_aborts_on_a_local_ring_buffer_dropped_elsewhere)
{
	char err[4096];
	int status = tu_run_child(ring_raw_dropped_elsewhere, err, sizeof(err));

	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "not aborted (status %d): %s", status, err);
	ck_assert_msg(strstr(err, "thread-local to another thread") != NULL,
		      "message lacks the misuse: %s", err);
}
END_TEST
#endif

int main(void)
{
	const TTest *pooled_tests[] = {
		test_pooled_multishot_receives_10000_framed_messages,
		test_buffer_released_on_another_thread_returns_to_the_ring,
		test_multishot_ends_with_enobufs_when_the_ring_runs_dry,
		test_detach_pooled_copies_ring_segments_and_frees_buffers,
		test_detach_pooled_leaves_a_list_without_ring_slices_alone,
		test_detach_pooled_copies_into_the_lists_pool,
		NULL
	};
	const TTest *local_tests[] = {
#ifdef BL_DEBUG
		test_debug_build_aborts_on_a_local_ring_buffer_dropped_elsewhere,
#endif
		NULL
	};
	const struct tu_loop local_loops[] = {
		{ test_pooled_receive_raws_follow_the_threads_setting, 0, 2 },
		{ NULL, 0, 0 }
	};
	const struct tu_ring_group groups[] = {
		TU_GROUP("pooled", pooled_tests),
		TU_GROUP("thread-local", local_tests, .loops = local_loops,
			 .teardown = tu_thread_local_off, .needs_pbuf = true),
		TU_GROUP_END
	};

	return tu_ring_main("uring_pooled", groups, NULL, NULL);
}
