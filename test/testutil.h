/* SPDX-License-Identifier: MIT */
/* testutil.h - helpers shared by the Check suites (never installed). */
#ifndef BL_TESTUTIL_H
#define BL_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <check.h>
#include "list_int.h"	/* bl__list_validate() and the list internals */
#include <bufferlist.h>

/*
 * A counting allocator that can fail the Nth allocation.  Installed with
 * tu_alloc_install(); every block it hands out is tracked so a test can
 * assert that nothing leaked.
 */
struct tu_alloc_stats {
	uint64_t allocs;	/* successful allocations */
	uint64_t frees;
	uint64_t failed;	/* allocations refused */
	int64_t live_bytes;	/* allocated minus freed */
};

/* Installs the counting allocator; fail_at = 0 never fails, N fails the
 * Nth allocation from now (1-based) and every one after it when sticky. */
void tu_alloc_install(uint64_t fail_at, int sticky);
/* Changes the failure point without resetting the counters. */
void tu_alloc_fail_at(uint64_t fail_at, int sticky);
/* Restores the default allocator (blocks keep their own allocator). */
void tu_alloc_uninstall(void);
void tu_alloc_stats(struct tu_alloc_stats *out);

/* A checked teardown for tests that turn bl_raw_set_thread_local() on: a
 * failed assertion (CK_FORK=no too) cannot leave it on for the next. */
void tu_thread_local_off(void);

/* This thread's copy counters (bl_stats_thread) now; a test compares two
 * readings to prove what one operation copied. */
struct bl_stats stats_now(void);
/* Just the payload bytes copied: stats_now().copied_bytes. */
uint64_t copied_now(void);

/* Flattens @l into a new malloc'd buffer (caller frees); NULL for empty. */
unsigned char *tu_flatten(const struct bl_list *l);

/* Asserts (ck_assert) that @l holds exactly @len bytes equal to @want and
 * passes bl__list_validate(). */
void tu_assert_list_eq(const struct bl_list *l, const void *want, size_t len);

/* Appends @len bytes of @data to @l as segments of random sizes in
 * [1, max_seg] (each its own raw when @own_raws, else through append). */
void tu_append_segmented(struct bl_list *l, const void *data, size_t len,
			 size_t max_seg, int own_raws, uint64_t *rng);

/* Appends @len bytes of @data to @l as segments of @seg bytes (the last
 * shorter), each over its own raw, so that no two merge. */
void tu_append_fixed(struct bl_list *l, const void *data, size_t len,
		     size_t seg);

/* xorshift64*: deterministic test randomness. */
uint64_t tu_rand(uint64_t *state);
/* Fills @buf with pseudo-random bytes. */
void tu_fill(void *buf, size_t len, uint64_t *rng);

/* @len pseudo-random bytes in a new malloc'd buffer (caller frees). */
unsigned char *tu_rand_buf(size_t len, uint64_t *rng);
/* Exactly @len bytes of @fd at @off (plain pread) in a new malloc'd
 * buffer (caller frees); a short file fails the test. */
unsigned char *tu_file_bytes(int fd, off_t off, size_t len);

/* Seed: from BL_TEST_SEED if set, else time-based; printed to stderr. */
uint64_t tu_seed(const char *who);

/* Runs @s (fork mode as CK_FORK says) and returns the exit status. */
int tu_run(Suite *s);

/*
 * Every test case is tagged with its own name (each word of it), so that
 * make check can run one suite in parts side by side: Check's
 * CK_INCLUDE_TAGS="tcp local" runs those cases, CK_EXCLUDE_TAGS="tcp
 * local" every other one (Makefile.am, SPLIT_TESTS).
 */
TCase *tu_tcase_create(const char *name);
#define tcase_create(name) tu_tcase_create(name)

/*
 * A suite as a table: each group is one Check TCase (tagged with its name,
 * as tu_tcase_create() does) with its tests in order.  The tables live in
 * the suite function itself, since START_TEST's names are variables and
 * not constants:
 *
 *	const TTest *alloc_tests[] = { test_a, test_b, NULL };
 *	const struct tu_group groups[] = {
 *		{ "alloc", alloc_tests, NULL, .timeout = 60 },
 *		{ NULL }
 *	};
 *	return tu_suite("ptr", groups);
 */
struct tu_loop {
	const TTest *test;	/* NULL ends the table */
	int start, end;		/* _i runs over [start, end) */
};
struct tu_group {
	const char *name;	/* NULL ends the table */
	const TTest *const *tests;	/* NULL-terminated; may be NULL */
	const struct tu_loop *loops;	/* added after tests; may be NULL */
	int timeout;		/* seconds; 0 keeps Check's default */
	SFun setup, teardown;	/* checked fixture (each test's process) */
	SFun once_setup, once_teardown;	/* unchecked fixture (the runner's) */
};
Suite *tu_suite(const char *name, const struct tu_group *groups);

/*
 * Runs @fn in a forked child (which then exits 0) with the child's stderr
 * captured into @err (NUL-terminated, cut at @errsz - 1 bytes).
 * Return: the child's wait status (as waitpid gives it).
 */
int tu_run_child(void (*fn)(void), char *err, size_t errsz);

/* ---- temporary directories (tu_fs.c) ------------------------------------ */

/* A new directory from mkdtemp(3)'s template @tmpl, its name in @dir
 * (@size bytes); a relative template puts it on the build's file system. */
void tu_tdir_make(char *dir, size_t size, const char *tmpl);
/* Removes @dir and the files in it; for a teardown that runs in the parent,
 * so that it also cleans up after a test that failed. */
void tu_tdir_remove(const char *dir);
/* A new empty file in @dir, open read-write; its name in @path. */
int tu_tmp_open(const char *dir, char *path, size_t size);

/* ---- a ring and what its callbacks got (tu_uring.c) ---------------------- */

/* A ring on the blocking back end or on io_uring (asserted, so that a ring
 * that fell back does not pass for the other); the two numbers as
 * struct bl_uring_params has them. */
struct bl_uring *tu_ring_new(bool blocking, size_t zc_threshold,
			     unsigned spin_us);

/* What tu_rec_cb() was called with. */
struct tu_rec {
	int calls;
	ssize_t res;		/* of the last call */
	int seq;		/* ++tu_seq at the last call: orders callbacks */
	bool had_data;		/* the last call got a list */
	size_t data_len;	/* its length */
	struct bl_list data;	/* every list the calls got, claimed */
};
/* Counts callbacks (tu_rec_cb and a suite's own) in the order they ran. */
extern int tu_seq;
void tu_rec_init(struct tu_rec *r);
/* A bl_uring_cb: records into the struct tu_rec @arg. */
void tu_rec_cb(void *arg, ssize_t res, struct bl_list *data);
void tu_rec_free(struct tu_rec *r);
/* Runs @u until *@flag reaches @want; at most 20 s: a hang fails. */
void tu_run_until(struct bl_uring *u, const int *flag, int want);

/* ---- the messenger's suites (tu_msgr.c) ---------------------------------- */

#include <bufferlist/msgr.h>
struct sockaddr_in;

/* The running TCase's back end: blocking, or io_uring with its rings
 * DEFER_TASKRUN (single_issuer); the tm_setup_* fixtures set them. */
extern bool tm_blocking, tm_single_issuer;
extern uint64_t tm_seed;		/* tm_init()'s tu_seed() */
/* A pattern every payload is a slice of, so that sender and receiver
 * agree on the bytes of frame seq without sending a description: 2 MiB,
 * and a static raw over them. */
extern unsigned char *tm_pat;
extern struct bl_raw *tm_pat_raw;
/* Upper bound of any wait (a hang guard, not a timing assertion);
 * BL_TEST_WAIT_MS raises it for slow runs (valgrind). */
extern int64_t tm_wait_ms;

/* Seeds, reads BL_TEST_WAIT_MS and fills the pattern; tm_main() does. */
void tm_init(const char *who);
/* Runs suite @name: @tests and @loops once per back end (conn-uring,
 * conn-defer, conn-blocking); the exit status, as tu_run(). */
int tm_main(const char *name, const TTest *const *tests,
	    const struct tu_loop *loops);
void tm_setup_uring(void);
void tm_setup_defer(void);
void tm_setup_blocking(void);

int64_t tm_now_ms(void);
/* A ring on the running back end (@flags: bl_uring_params.flags). */
struct bl_uring *tm_uring_flags(unsigned flags);
struct bl_uring *tm_uring(void);
/* Frame seq's payload size (mostly small, some page-ish, a few 1 MiB) and
 * its offset in the pattern. */
size_t tm_size_of(uint64_t seq);
size_t tm_off_of(uint64_t seq);
/* @l = the payload of frame @seq, shared from the pattern (no copy). */
void tm_payload_of(struct bl_list *l, uint64_t seq);
/* Bytes of @l equal the pattern at @off?  (no copy) */
bool tm_matches(const struct bl_list *l, size_t off);
/* Every segment starts on 4096 and all but the last are 4096 multiples. */
bool tm_dio_aligned(const struct bl_list *l);
/* Connected sockets: TCP on the loopback (no Nagle), or a socketpair. */
void tm_tcp_pair(int *a, int *b);
void tm_unix_pair(int *a, int *b);
/* A loopback listener, its address in @sa; a connection to it. */
int tm_listener(struct sockaddr_in *sa);
int tm_dial(const struct sockaddr_in *sa);
/* Frame @seq of @type, @plen bytes of the pattern at @off, as bytes in a
 * new malloc'd buffer; *@n its size. */
unsigned char *tm_frame_bytes(uint16_t type, uint64_t seq, size_t plen,
			      size_t off, size_t *n);
void tm_write_all(int fd, const void *p, size_t n);
/* Writes @n bytes to @fd without blocking, running @u whenever the socket
 * is full: the reader lives on the same thread. */
void tm_feed(struct bl_uring *u, int fd, const void *p, size_t n);

/* A connection's end that checks the frames it gets: in order, types
 * and payloads of the pattern (check_seq), 4096-aligned (check_align). */
struct tm_peer {
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

void tm_note_bad(struct tm_peer *p, const char *fmt, unsigned long long a);
/* Its callbacks (arg: the struct tm_peer). */
void tm_on_frame(void *arg, struct bl_msgr_conn *c,
		 struct bl_msgr_frame *f);
void tm_on_close(void *arg, struct bl_msgr_conn *c, int err,
		 const char *reason);
void tm_on_log(void *arg, struct bl_msgr_conn *c, const char *msg);
void tm_on_sent(void *arg, int res);
/* A log callback that drops the line. */
void tm_quiet_log(void *arg, struct bl_msgr_conn *c, const char *msg);
void tm_peer_init(struct tm_peer *p, const char *name);
/* @o: @p's callbacks, every other option 0. */
void tm_opts_for(struct bl_msgr_conn_opts *o, struct tm_peer *p);
/* Runs @u until *@a >= @wa and *@b >= @wb (a bounded wait). */
void tm_run_until(struct bl_uring *u, const uint64_t *a, uint64_t wa,
		  const uint64_t *b, uint64_t wb);
/* Runs @u until @a (and @b, unless NULL) closed, once each. */
void tm_run_until_closed(struct bl_uring *u, struct tm_peer *a,
			 struct tm_peer *b);
/* @p sends frames first..first+n-1 (with tm_on_sent when @cb). */
void tm_send_frames(struct tm_peer *p, uint64_t first, uint64_t n, bool cb);
/* A connected pair of sockets (TCP or a socketpair) and two peers "a" and
 * "b" with their default options, for the caller to adjust. */
void tm_two_peers(bool tcp, int *fa, int *fb, struct tm_peer *a,
		  struct bl_msgr_conn_opts *oa, struct tm_peer *b,
		  struct bl_msgr_conn_opts *ob);
/* @a and @b send each other frames 1..@n in batches of @batch (a's with a
 * completion, b's without), and the ring runs until both received all @n
 * intact and in order and every one of a's sends completed. */
void tm_swap_frames(struct bl_uring *u, struct tm_peer *a,
		    struct tm_peer *b, uint64_t n, uint64_t batch);

/* Frames first..first+n-1 of @type with 300-byte payloads, as bytes. */
unsigned char *tm_stream(uint16_t type, uint64_t first, int n,
			 size_t *len);
/* @n small request frames, as bytes. */
unsigned char *tm_requests(uint64_t n, size_t *len);
/* Polls @s until @done(@arg) (a bounded wait). */
void tm_serve_until(struct bl_msgr_server *s, bool (*done)(void *),
		    void *arg);
/* Reads what is there without blocking; Return: bytes read. */
size_t tm_drain(int fd);

/* A server connection that answers requests with fresh @reply bytes. */
struct tm_bp {
	struct bl_msgr_conn *c;
	size_t reply;
	bool async;		/* hold requests, answered by bp_answer() */
	unsigned delivered, held, held_max;
	int closed, close_err;
	char reason[160];
	struct bl_msgr_conn_stats st;
};
/* @o: callbacks that answer every request (or hold it, x->async). */
void tm_bp_init(struct tm_bp *x, struct bl_msgr_conn_opts *o, size_t reply);
void tm_bp_answer(struct tm_bp *x);

#endif
