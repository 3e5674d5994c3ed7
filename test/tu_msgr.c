/* SPDX-License-Identifier: MIT */
/*
 * tu_msgr.c - what the messenger's suites (test_msgr_*.c) share: the back
 * end a case runs on, a pattern every payload is a slice of, sockets, a
 * peer that checks what it receives, a server connection that answers,
 * and the table that runs a suite's cases once per back end.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bufferlist/msgr.h>
#include "testutil.h"

bool tm_blocking;		/* the back end of the running TCase */
bool tm_single_issuer;	/* its rings DEFER_TASKRUN (conn-defer) */
uint64_t tm_seed;

/* A pattern every payload is a slice of: sender and receiver agree on
 * the bytes of frame seq without sending a description. */
#define PAT_LEN ((size_t)2 << 20)
unsigned char *tm_pat;
struct bl_raw *tm_pat_raw;	/* static raw over pat */

/* Upper bound of any wait (a hang guard, not a timing assertion);
 * BL_TEST_WAIT_MS raises it for slow runs (valgrind). */
int64_t tm_wait_ms = 60000;

/* ---- helpers ------------------------------------------------------------- */

int64_t tm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tm_setup_uring(void)
{
	tm_blocking = false;
	tm_single_issuer = false;
}

/* every ring made with bl_uring_params.single_issuer (DEFER_TASKRUN) */
void tm_setup_defer(void)
{
	tm_blocking = false;
	tm_single_issuer = true;
}

void tm_setup_blocking(void)
{
	tm_blocking = true;
	tm_single_issuer = false;
}

struct bl_uring *tm_uring_flags(unsigned flags)
{
	struct bl_uring_params p;
	struct bl_uring *u;

	memset(&p, 0, sizeof(p));
	p.force_blocking = tm_blocking;
	p.flags = flags;
	p.single_issuer = tm_single_issuer;
	u = bl_uring_create(&p);
	ck_assert_ptr_nonnull(u);
	if (!tm_blocking && bl_uring_backend(u) != BL_URING_IO_URING)
		fprintf(stderr, "note: io_uring unavailable here (%s): the "
			"uring cases run on the blocking back end\n",
			bl_uring_backend_reason(u));
	return u;
}

struct bl_uring *tm_uring(void)
{
	return tm_uring_flags(0);
}

/* Payload size of frame @seq: mostly small, some page-ish, a few 1 MiB. */
size_t tm_size_of(uint64_t seq)
{
	uint64_t h = seq * 0x9E3779B97F4A7C15ull;

	h ^= h >> 29;
	if (seq % 97 == 0)
		return ((size_t)1 << 20) - h % 3;
	if (seq % 11 == 0)
		return 4096 + h % 70000;
	return h % 600;
}

size_t tm_off_of(uint64_t seq)
{
	return (size_t)(seq * 7919 % 256);
}

/* @l = the payload of frame @seq, shared from the pattern (no copy). */
void tm_payload_of(struct bl_list *l, uint64_t seq)
{
	struct bl_ptr p = { tm_pat_raw, tm_off_of(seq), tm_size_of(seq) };

	bl_list_init(l);
	ck_assert_int_eq(bl_list_append_ptr(l, &p), 0);
}

/* Bytes of @l equal the pattern at @off?  (no copy) */
bool tm_matches(const struct bl_list *l, size_t off)
{
	struct bl_iter it;
	const char *d;
	size_t n;

	bl_iter_init(&it, l, 0);
	while ((n = bl_iter_get_ptr_and_advance(&it, SIZE_MAX, &d))) {
		if (memcmp(d, tm_pat + off, n))
			return false;
		off += n;
	}
	return true;
}

/* Every segment starts on 4096 and all but the last are 4096 multiples. */
bool tm_dio_aligned(const struct bl_list *l)
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

void tm_loopback(struct sockaddr_in *sa, unsigned port)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa->sin_port = htons((uint16_t)port);
}

void tm_tcp_pair(int *a, int *b)
{
	int fds[2], one = 1;

	tu_tcp_pair(fds);	/* Nagle off on fds[0]; both ends send here */
	*a = fds[0];
	*b = fds[1];
	setsockopt(*b, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void tm_unix_pair(int *a, int *b)
{
	int sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0,
				    sv), 0);
	*a = sv[0];
	*b = sv[1];
}

int tm_listener(struct sockaddr_in *sa)
{
	socklen_t sl = sizeof(*sa);
	int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(l, 0);
	tm_loopback(sa, 0);
	ck_assert_int_eq(bind(l, (struct sockaddr *)sa, sizeof(*sa)), 0);
	ck_assert_int_eq(listen(l, 16), 0);
	ck_assert_int_eq(getsockname(l, (struct sockaddr *)sa, &sl), 0);
	return l;
}

int tm_dial(const struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (const struct sockaddr *)sa,
				 sizeof(*sa)), 0);
	return fd;
}

/* Frame @seq of @type as bytes in a new malloc'd buffer; *@n its size. */
unsigned char *tm_frame_bytes(uint16_t type, uint64_t seq, size_t plen,
				  size_t off, size_t *n)
{
	struct bl_list out, pay;
	struct bl_ptr p = { tm_pat_raw, off, plen };
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

void tm_write_all(int fd, const void *p, size_t n)
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
void tm_feed(struct bl_uring *u, int fd, const void *p, size_t n)
{
	const char *c = p;
	int64_t end = tm_now_ms() + tm_wait_ms;
	int fl = fcntl(fd, F_GETFL);

	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	while (n && tm_now_ms() < end) {
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

void tm_note_bad(struct tm_peer *p, const char *fmt, unsigned long long a)
{
	if (!p->bad++)
		snprintf(p->bad_msg, sizeof(p->bad_msg), fmt, a);
}

void tm_on_frame(void *arg, struct bl_msgr_conn *c,
		     struct bl_msgr_frame *f)
{
	struct tm_peer *p = arg;
	size_t len = bl_list_length(&f->payload);

	(void)c;
	if (p->check_seq) {
		if (f->seq != p->expect + 1)
			tm_note_bad(p, "seq %llu out of order",
				 (unsigned long long)f->seq);
		if (f->type != (uint16_t)(f->seq * 3))
			tm_note_bad(p, "wrong type at seq %llu",
				 (unsigned long long)f->seq);
		if (len != tm_size_of(f->seq) ||
		    !tm_matches(&f->payload, tm_off_of(f->seq)))
			tm_note_bad(p, "wrong payload at seq %llu",
				 (unsigned long long)f->seq);
		if (bl__list_validate(&f->payload))
			tm_note_bad(p, "invalid list at seq %llu",
				 (unsigned long long)f->seq);
	}
	if (p->check_align && len >= p->align_min) {
		if (!tm_dio_aligned(&f->payload))
			tm_note_bad(p, "unaligned payload at seq %llu",
				 (unsigned long long)f->seq);
		p->aligned++;
	}
	p->expect = f->seq;
	p->rx++;
	if (p->keep)
		ck_assert_int_eq(bl_list_claim_append(&p->kept, &f->payload),
				 0);
}

void tm_on_close(void *arg, struct bl_msgr_conn *c, int err,
		     const char *reason)
{
	struct tm_peer *p = arg;

	p->closed++;
	p->close_err = err;
	snprintf(p->reason, sizeof(p->reason), "%s", reason);
	bl_msgr_conn_stats(c, &p->st);
}

void tm_on_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	struct tm_peer *p = arg;

	(void)c;
	p->logs++;
	snprintf(p->log, sizeof(p->log), "%s", msg);
}

void tm_on_sent(void *arg, int res)
{
	struct tm_peer *p = arg;

	if (!res)
		p->sent_ok++;
	else if (res == -ECANCELED)
		p->sent_cancel++;
	else
		p->sent_err++;
}

void tm_peer_init(struct tm_peer *p, const char *name)
{
	memset(p, 0, sizeof(*p));
	p->name = name;
	p->check_seq = true;
	bl_list_init(&p->kept);
}

void tm_opts(struct bl_msgr_conn_opts *o, bl_msgr_frame_fn on_frame,
	     bl_msgr_close_fn on_close, bl_msgr_log_fn log, void *arg)
{
	memset(o, 0, sizeof(*o));
	o->on_frame = on_frame;
	o->on_close = on_close;
	o->arg = arg;
	o->log = log;
	o->log_arg = log ? arg : NULL;
}

void tm_opts_for(struct bl_msgr_conn_opts *o, struct tm_peer *p)
{
	tm_opts(o, tm_on_frame, tm_on_close, tm_on_log, p);
}

/* Runs @u until *@a >= @wa and *@b >= @wb (a bounded wait). */
void tm_run_until(struct bl_uring *u, const uint64_t *a, uint64_t wa,
		      const uint64_t *b, uint64_t wb)
{
	int64_t end = tm_now_ms() + tm_wait_ms;

	while ((*a < wa || *b < wb) && tm_now_ms() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_msg(*a >= wa && *b >= wb,
		      "waited too long: %llu/%llu and %llu/%llu",
		      (unsigned long long)*a, (unsigned long long)wa,
		      (unsigned long long)*b, (unsigned long long)wb);
}

void tm_run_until_one(struct bl_uring *u, const int *n, int wait)
{
	int64_t end = tm_now_ms() + tm_wait_ms;

	while (!*n && tm_now_ms() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, wait), 0);
	ck_assert_int_eq(*n, 1);
}

void tm_run_until_closed(struct bl_uring *u, struct tm_peer *a,
			     struct tm_peer *b)
{
	int64_t end = tm_now_ms() + tm_wait_ms;

	while ((!a->closed || (b && !b->closed)) && tm_now_ms() < end)
		ck_assert_int_ge(bl_uring_run(u, 1, 100), 0);
	ck_assert_int_eq(a->closed, 1);
	if (b)
		ck_assert_int_eq(b->closed, 1);
}

void tm_send_frames(struct tm_peer *p, uint64_t first, uint64_t n, bool cb)
{
	for (uint64_t s = first; s < first + n; s++) {
		struct bl_list pay;

		tm_payload_of(&pay, s);
		ck_assert_int_eq(bl_msgr_send(p->c, (uint16_t)(s * 3), &pay,
					      cb ? tm_on_sent : NULL, p), 0);
		bl_list_clear(&pay);
	}
}

/* A connected pair of sockets (TCP or a socketpair) and two peers "a" and
 * "b" with their default options, for the caller to adjust. */
void tm_two_peers(bool tcp, int *fa, int *fb, struct tm_peer *a,
		      struct bl_msgr_conn_opts *oa, struct tm_peer *b,
		      struct bl_msgr_conn_opts *ob)
{
	if (tcp)
		tm_tcp_pair(fa, fb);
	else
		tm_unix_pair(fa, fb);
	tm_peer_init(a, "a");
	tm_peer_init(b, "b");
	tm_opts_for(oa, a);
	tm_opts_for(ob, b);
}

/*
 * @a and @b send each other frames 1..@n in batches of @batch (a's with a
 * completion, b's without), and the ring runs until both received all @n
 * intact and in order and every one of a's sends completed.
 */
void tm_swap_frames(struct bl_uring *u, struct tm_peer *a, struct tm_peer *b,
			uint64_t n, uint64_t batch)
{
	int64_t end;

	for (uint64_t s = 1; s <= n; s += batch) {
		uint64_t k = n - s + 1 < batch ? n - s + 1 : batch;

		tm_send_frames(a, s, k, true);
		tm_send_frames(b, s, k, false);
		bl_uring_run(u, 0, 0);
	}
	tm_run_until(u, &a->rx, n, &b->rx, n);
	ck_assert_msg(!a->bad, "a: %d bad frames, first: %s", a->bad,
		      a->bad_msg);
	ck_assert_msg(!b->bad, "b: %d bad frames, first: %s", b->bad,
		      b->bad_msg);
	ck_assert(a->expect == n && b->expect == n);
	end = tm_now_ms() + tm_wait_ms;
	while (a->sent_ok < n && tm_now_ms() < end)
		bl_uring_run(u, 1, 100);
	ck_assert_uint_eq(a->sent_ok, n);
}

unsigned char *tm_stream(uint16_t type, uint64_t first, int n, size_t *len)
{
	struct bl_list out;
	unsigned char *b;

	bl_list_init(&out);
	for (int i = 0; i < n; i++) {
		struct bl_list pay;
		struct bl_ptr p = { tm_pat_raw,
				     tm_off_of(first + (uint64_t)i), 300 };

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

void tm_serve_until(struct bl_msgr_server *s, bool (*done)(void *),
			void *arg)
{
	int64_t end = tm_now_ms() + tm_wait_ms;

	while (!done(arg) && tm_now_ms() < end)
		ck_assert_int_ge(bl_msgr_server_poll(s, 50), 0);
	ck_assert_msg(done(arg), "server: waited too long");
}

void tm_bp_answer(struct tm_bp *x)
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

static void tm_bp_frame(void *arg, struct bl_msgr_conn *c,
		     struct bl_msgr_frame *f)
{
	struct tm_bp *x = arg;

	(void)f;
	x->c = c;
	x->delivered++;
	if (!x->async) {
		tm_bp_answer(x);
		return;
	}
	if (++x->held > x->held_max)
		x->held_max = x->held;
}

static void tm_bp_close(void *arg, struct bl_msgr_conn *c, int err,
		     const char *reason)
{
	struct tm_bp *x = arg;

	x->closed++;
	x->close_err = err;
	snprintf(x->reason, sizeof(x->reason), "%s", reason);
	bl_msgr_conn_stats(c, &x->st);
}

void tm_bp_init(struct tm_bp *x, struct bl_msgr_conn_opts *o, size_t reply)
{
	memset(x, 0, sizeof(*x));
	x->reply = reply;
	tm_opts(o, tm_bp_frame, tm_bp_close, NULL, x);
}

/* @n small request frames, as bytes. */
unsigned char *tm_requests(uint64_t n, size_t *len)
{
	return tm_stream(1, 1, (int)n, len);
}

/* Reads what is there without blocking; Return: bytes read. */
size_t tm_drain(int fd)
{
	static unsigned char sink[1 << 16];
	size_t got = 0;
	ssize_t r;

	while ((r = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0)
		got += (size_t)r;
	return got;
}

void tm_quiet_log(void *arg, struct bl_msgr_conn *c, const char *msg)
{
	(void)arg;
	(void)c;
	(void)msg;
}

long tm_status_kb(pid_t pid, const char *key)
{
	char path[64], line[256];
	long v = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "re");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)))
			v = atol(line + strlen(key));
	fclose(f);
	ck_assert_int_ge(v, 0);
	return v;
}

void tm_alloc_off_leak_free(void)
{
	struct tu_alloc_stats st;

	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_int_eq(st.live_bytes, 0);
}

void tm_init(const char *who)
{
	uint64_t rng;

	tm_seed = tu_seed(who);
	if (getenv("BL_TEST_WAIT_MS"))
		tm_wait_ms = atoll(getenv("BL_TEST_WAIT_MS"));
	rng = tm_seed;
	tm_pat = malloc(PAT_LEN);
	if (!tm_pat)
		abort();	/* outside any test: no ck_assert here */
	tu_fill(tm_pat, PAT_LEN, &rng);
	tm_pat_raw = bl_raw_create_static(tm_pat, PAT_LEN);
}

int tm_main_once(const char *name, const char *group,
		 const TTest *const *tests)
{
	const struct tu_group groups[] = {
		TU_GROUP(group, tests, .timeout = 120),
		TU_GROUP_END
	};

	tm_init(name);
	return tu_run(tu_suite(name, groups));
}

int tm_main(const char *name, const TTest *const *tests,
	    const struct tu_loop *loops)
{
	const struct tu_group groups[] = {
		TU_GROUP("conn-uring", tests, .loops = loops, .timeout = 120,
			 .setup = tm_setup_uring,
			 .teardown = tu_thread_local_off),
		TU_GROUP("conn-defer", tests, .loops = loops, .timeout = 120,
			 .setup = tm_setup_defer,
			 .teardown = tu_thread_local_off),
		TU_GROUP("conn-blocking", tests, .loops = loops,
			 .timeout = 120, .setup = tm_setup_blocking,
			 .teardown = tu_thread_local_off),
		TU_GROUP_END
	};

	tm_init(name);
	return tu_run(tu_suite(name, groups));
}
