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
 * Check's CK_INCLUDE_TAGS="tcp local" runs those cases of a suite, and
 * CK_EXCLUDE_TAGS="tcp local" every other one.
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
 *		TU_GROUP("alloc", alloc_tests, .timeout = 60),
 *		TU_GROUP_END
 *	};
 *	return tu_suite("ptr", groups);
 *
 * TU_GROUP names the fields it sets (the rest are zero), so that -Wextra
 * has no initializer to call missing.
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
#define TU_GROUP(n, t, ...) { .name = (n), .tests = (t), __VA_ARGS__ }
#define TU_GROUP_END { .name = NULL }
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

/* ---- the list suites' lists (tu_list.c) ---------------------------------- */

/* Asserts that @l holds exactly the string @s (tu_assert_list_eq). */
void tu_assert_str(const struct bl_list *l, const char *s);
/* Appends a segment over static memory @data; returns its raw. */
struct bl_raw *tu_add_static(struct bl_list *l, const void *data, size_t len);
/* Segment @i of @l (borrowed: the list keeps its reference). */
struct bl_ptr tu_seg_of(const struct bl_list *l, unsigned i);
/* @l = "ABCDEFGHIJ" as ABC DEF GHI J, each segment its own raw. */
void tu_make_abc(struct bl_list *l);

/* A snapshot of a list's bytes and segment count: tu_snap_check() proves
 * that an operation that failed left the list as it was. */
struct tu_snap {
	unsigned char *b;
	size_t len;
	unsigned nseg;
};
void tu_snap_take(struct tu_snap *s, const struct bl_list *l);
void tu_snap_check(struct tu_snap *s, const struct bl_list *l);
void tu_snap_free(struct tu_snap *s);

/* ---- the suites of test_uring_* (tu_uring.c) ---------------------------- */

/*
 * Each group of a ring suite (tu_ring_main()) runs on both back ends, as
 * NAME-uring and NAME-blocking (tu_blocking says which in a test), each
 * TCase with its own temporary directory tu_tdir.  Where io_uring cannot
 * be set up the -uring groups are replaced by one test that asserts the
 * fallback.  Its table is written with TU_GROUP() and TU_GROUP_END too.
 */
struct tu_ring_group {
	const char *name;	/* NULL ends the table */
	const TTest *const *tests;	/* NULL-terminated; may be NULL */
	const struct tu_loop *loops;	/* may be NULL */
	SFun teardown;		/* checked: each test's process */
	bool needs_pbuf;	/* io_uring: only with provided-buffer rings */
};
extern bool tu_blocking;	/* the back end of the running TCase */
extern char tu_tdir[64];	/* the running TCase's directory */
extern uint64_t tu_ring_seed;	/* tu_seed() of the program */
/* mkdtemp(3)'s template of tu_tdir (default "/tmp/bl-uring-XXXXXX") */
extern const char *tu_ring_tdir_template;
/*
 * The main() of a ring suite: seeds tu_ring_seed, asks the kernel what it
 * offers, and runs the groups of @rg on both back ends, then those of
 * @extra once (of @uring_extra instead where io_uring can be set up and
 * it is not NULL).  Return: the exit status.
 */
int tu_ring_main(const char *name, const struct tu_ring_group *rg,
		 const struct tu_group *extra,
		 const struct tu_group *uring_extra);
/* The fixture of the groups in @extra that want a directory */
void tu_ring_setup_uring(void);
void tu_ring_setup_blocking(void);
void tu_ring_teardown(void);
/* A new empty file in tu_tdir, open read-write (tu_tmp_open()). */
int tu_ring_tmp(void);

/* @l = @len bytes of @data in exactly @nseg segments, each its own raw. */
void tu_make_list(struct bl_list *l, const unsigned char *data, size_t len,
		  unsigned nseg, uint64_t *rng);
/* The counting allocator's live bytes now (tu_alloc_stats()). */
uint64_t tu_live_bytes(void);
struct bl__uring_counters;
/* The ring's counters now (uring_int.h). */
struct bl__uring_counters tu_counters(const struct bl_uring *u);
/* Writes @l to @fd at @off and waits: the callback must get @want. */
void tu_write_sync(struct bl_uring *u, int fd, off_t off,
		   const struct bl_list *l, ssize_t want);
/* A directory on a file system that takes O_DIRECT (@buf its scratch
 * space), or NULL. */
const char *tu_dio_dir(char *buf, size_t size);
/* What tu_chunk_cb(), a pooled receive's callback, was called with. */
struct tu_chunk_rec {
	int calls;
	ssize_t res;	/* of the last call */
	bool more;	/* of the last call */
	struct bl_list data;	/* every chunk, claimed */
};
void tu_chunk_cb(void *arg, ssize_t res, struct bl_list *data, bool more);
/* When the raw of a zero-copy send was freed: tu_zc_free(), its free
 * function, records into the struct tu_zc_watch @opaque. */
struct tu_zc_watch {
	struct bl_uring *u;	/* the ring whose counters it reads */
	int freed;
	int free_seq;		/* tu_seq when freed */
	int send_seq;		/* for the send's callback to fill in */
	int freed_at_send;	/* the same */
	uint64_t notifs_at_free;	/* the ring's notifications by then */
};
void tu_zc_free(void *data, size_t len, void *opaque);

/* ---- descriptors (tu_fd.c) ---------------------------------------------- */

/* Sets (@on) or clears O_NONBLOCK on @fd. */
void tu_set_nonblock(int fd, bool on);
/*
 * A connected loopback TCP pair: @fds[0] the client, @fds[1] the server.
 * @stalled: the server offers a window of a few KiB and is never read, so
 * what is sent beyond it stays in the client's queue (and a zero-copy
 * send's notification never comes).
 */
void tu_tcp_pair_how(int fds[2], bool stalled);
/* tu_tcp_pair_how(fds, false) */
void tu_tcp_pair(int fds[2]);
/* SIGPIPE is pending (sigpending(2)): raised while blocked, and so not
 * yet delivered. */
bool tu_sigpipe_pending(void);
/* CLOCK_MONOTONIC now, in seconds. */
double tu_mono_s(void);

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

/* A number from /proc/PID/status ("VmRSS:", "VmSize:"), in KiB; @pid 0:
 * this process. */
long tm_status_kb(pid_t pid, const char *key);
/* Uninstalls the counting allocator and asserts nothing it gave is
 * still allocated. */
void tm_alloc_off_leak_free(void);
/* Seeds, reads BL_TEST_WAIT_MS and fills the pattern; tm_main() does. */
void tm_init(const char *who);
/* Runs suite @name: @tests and @loops once per back end (conn-uring,
 * conn-defer, conn-blocking); the exit status, as tu_run(). */
int tm_main(const char *name, const TTest *const *tests,
	    const struct tu_loop *loops);
/* Runs suite @name: @tests once, as group @group (no socket in them). */
int tm_main_once(const char *name, const char *group,
		 const TTest *const *tests);
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
/* @sa = 127.0.0.1:@port. */
void tm_loopback(struct sockaddr_in *sa, unsigned port);
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
/* @o: these callbacks (@log's argument @arg too), every other option 0. */
void tm_opts(struct bl_msgr_conn_opts *o, bl_msgr_frame_fn on_frame,
	     bl_msgr_close_fn on_close, bl_msgr_log_fn log, void *arg);
/* @o: @p's callbacks, every other option 0. */
void tm_opts_for(struct bl_msgr_conn_opts *o, struct tm_peer *p);
/* Runs @u until *@a >= @wa and *@b >= @wb (a bounded wait). */
void tm_run_until(struct bl_uring *u, const uint64_t *a, uint64_t wa,
		  const uint64_t *b, uint64_t wb);
/* Runs @u (waits of @wait ms) until *@n is not 0: it must be 1 (a bounded
 * wait, for a callback that must run once). */
void tm_run_until_one(struct bl_uring *u, const int *n, int wait);
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

/* ---- the blbench suites (tu_blbench.c) ---------------------------------- */

#include <sys/resource.h>

/* The test's scratch directory (in the build directory: a real file
 * system), and one where O_DIRECT works ("" if nowhere): tb_setup() makes
 * them, tb_teardown() removes them and kills a server left running. */
extern char tb_scratch[], tb_dio_dir[];
extern pid_t tb_server;		/* a `blbench serve` of this test */
extern rlim_t tb_server_nofile;	/* its RLIMIT_NOFILE; 0: inherited */
void tb_setup(void);
void tb_teardown(void);
/* Runs suite @suite: @tests (NULL-terminated) as group @group, each in a
 * scratch directory of its own (tb_setup(), tb_teardown()). */
int tb_main(const char *suite, const char *group, const TTest *const *tests);

/* What a run of blbench gave. */
struct tb_res {
	int status;		/* exit status; 128 + signal if killed */
	char *out, *err;
};

/* How a child runs; NULL or zeroes: as the test does. */
struct tb_how {
	const char *env;	/* "NAME=VALUE" */
	bool nobody;		/* as user nobody (exit 125 if it cannot be) */
	long long fsize;	/* > 0: RLIMIT_FSIZE, SIGXFSZ ignored */
	rlim_t nofile;		/* > 0: RLIMIT_NOFILE's soft limit */
	const char *prog;	/* the program (BLBENCH_PATH) */
	const char *argv0;	/* its argv[0] ("blbench") */
};

/* A file's bytes in a new malloc'd, NUL-terminated buffer. */
char *tb_slurp(const char *path);
/* snprintf that fails the test instead of truncating */
const char *tb_fmt(char *buf, size_t len, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
/* Starts blbench with @args (NULL-terminated), its output into
 * scratch/.TAG.out and .TAG.err, run as @how says.  Returns the pid. */
pid_t tb_spawn(const char *tag, const struct tb_how *how,
	       const char *const *args);
/* Waits up to @secs seconds for @pid; its exit status, or -1 if it was
 * still running (it is then killed): a bound that tells a hang. */
int tb_wait_exit(pid_t pid, int secs);
/* Waits up to @secs seconds for @text in scratch/.TAG.out, written by
 * @pid: false if it did not come, or @pid exited first. */
bool tb_wait_for_output(pid_t pid, const char *tag, const char *text,
			int secs);
/* Runs blbench to its end: its status and output into @r. */
void tb_run_how(struct tb_res *r, const struct tb_how *how,
		const char *const *args);
void tb_run_as(struct tb_res *r, const char *env, bool nobody,
	       const char *const *args);
/* Runs blbench with @args (NULL-terminated) and, if @env, "NAME=VALUE". */
void tb_run_env(struct tb_res *r, const char *env, const char *const *args);
#define TB_RUN(r, ...) \
	tb_run_env((r), NULL, (const char *const[]){ __VA_ARGS__, NULL })
#define TB_RUN_ENV(r, env, ...) \
	tb_run_env((r), (env), (const char *const[]){ __VA_ARGS__, NULL })
#define TB_RUN_NOBODY(r, ...) \
	tb_run_as((r), NULL, true, (const char *const[]){ __VA_ARGS__, NULL })
/* msgbench, as its own name */
#define TB_RUN_MSGBENCH(r, ...) \
	tb_run_how((r), &(const struct tb_how){ .prog = MSGBENCH_PATH, \
					     .argv0 = "msgbench" }, \
		(const char *const[]){ __VA_ARGS__, NULL })
#define TB_SPAWN(tag, ...) \
	tb_spawn((tag), NULL, (const char *const[]){ __VA_ARGS__, NULL })
void tb_res_free(struct tb_res *r);
/* Starts @n runs at once, as @how says, run i with the NULL-terminated
 * arguments at @args + i * @stride; each one's status and output into
 * @r[i] (a run still going after 60 s is killed: status -1). */
void tb_run_many(const struct tb_how *how, size_t n, const char *const *args,
		 size_t stride, struct tb_res *r);
/* Runs blbench (as nobody if @nobody) with @args: it must exit 0. */
void tb_run_ok(bool nobody, const char *const *args);
#define TB_RUN_OK(...) \
	tb_run_ok(false, (const char *const[]){ __VA_ARGS__, NULL })
#define TB_RUN_NOBODY_OK(...) \
	tb_run_ok(true, (const char *const[]){ __VA_ARGS__, NULL })
/* Fails the test, showing the output, unless @r exited with @want. */
void tb_expect_status(const struct tb_res *r, int want);

/* The number after @label in @text (the summary's "Label:  value"). */
double tb_field(const char *text, const char *label);
/* "Object prefix: X" of a write. */
void tb_prefix_of(const char *out, char *buf, size_t len);
/* The file system block --direct writes keep to in @path's file system. */
size_t tb_blk_of(const char *path);
/* The "stored bytes" field of the op header at @off of @path. */
uint32_t tb_stored_after_header(const char *path, off_t off);
/* "@dir/@name" and "@kind:@dir/@name" into @buf (@len bytes): @buf. */
const char *tb_path_in(char *buf, size_t len, const char *dir,
		       const char *name);
const char *tb_spec(char *buf, size_t len, const char *kind,
		    const char *dir, const char *name);
/* Objects in a directory target (files named benchmark_data*). */
int tb_count_objects(const char *dir);
/* rados bench's metadata: object size u64, ops i32, pid i32, op size
 * u64. */
void tb_read_meta(const char *path, uint64_t *obj_size, uint32_t *num_ops,
		  uint64_t *op_size);
/* Checks a write's summary against the run (labels, arithmetic); the
 * number of writes it made. */
int tb_check_write_summary(const char *out, uint64_t op_size,
			   uint64_t obj_size);
void tb_check_read_summary(const char *out, uint64_t op_size);
/* A seq of @target for at most @secs reads @want objects, exit 0. */
void tb_seq_reads(const char *target, const char *secs, int want);
/* A seq of @target fails (exit 1) saying @why. */
void tb_seq_fails(const char *target, const char *why);
/* Flips the bits of the byte at @off of @path. */
void tb_flip_byte(const char *path, off_t off);
/* How many times @needle stands in @hay. */
int tb_count_str(const char *hay, const char *needle);

/* Starts `blbench serve --target @target` on an ephemeral port, run as
 * @how says (may be NULL), with @extra (NULL-terminated, or NULL)
 * appended; its "tcp:127.0.0.1:PORT" into @tcp. */
void tb_start_server_extra(const char *target, const struct tb_how *how,
			   const char *const *extra, char *tcp, size_t len);
void tb_start_server_how(const char *target, const struct tb_how *how,
			 char *tcp, size_t len);
void tb_start_server(const char *target, char *tcp, size_t len);
/* A server of the directory target scratch/@name. */
void tb_serve_dir(const char *name, char *tcp, size_t len);
/* SIGTERM: the server finishes what it does and must exit 0. */
void tb_stop_server(void);
/* A connection to the server at "tcp:HOST:PORT" (10 s receive limit). */
int tb_connect_to(const char *tcp);
/* A frame of @type with @body as payload, in the messenger's format. */
size_t tb_make_frame(unsigned char *buf, size_t cap, uint16_t type,
		     const void *body, size_t blen);
/* Sends all of @l's bytes on the blocking @fd. */
void tb_send_list(int fd, const struct bl_list *l);
/* A request frame of @type: @body after the tag and flags. */
#define TB_WRITE 2		/* the WRITE request's type */
void tb_request(struct bl_list *out, uint16_t type, uint64_t tag,
		struct bl_list *body);

/* ---- a check for hot loops ---------------------------------------------- */

/*
 * Every ck_assert() that passes records its location through a file
 * (Check's mark point), a system call each: a loop that checks a million
 * things spends its time in write(2).  This checks the same without that,
 * and fails with the file, line and condition.
 */
#define TU_REQUIRE(x)							\
	do {								\
		if (!(x))						\
			ck_abort_msg("%s:%d: %s", __FILE__, __LINE__, #x); \
	} while (0)

/* ---- the lz4 suites' data, lists and frames (tu_lz4.c) ------------------- */

#include <bufferlist/lz4.h>

/* JSON-ish lines: compress about 3:1, like logs or metadata. */
void tu_fill_text(unsigned char *p, size_t len, uint64_t *rng);
enum tu_kind { TU_RANDOM, TU_TEXT, TU_ZEROS, TU_MIXED };
/* @len bytes of @k in a new malloc'd buffer (caller frees): TU_TEXT is
 * JSON-ish lines that compress about 3:1, TU_MIXED text with a random
 * 64 KiB in four. */
unsigned char *tu_data(size_t len, enum tu_kind k, uint64_t *rng);

/* Appends a copy of @n bytes as one segment over a malloc'd block of
 * exactly that size, so that AddressSanitizer sees a read past its end. */
void tu_seg(struct bl_list *l, const void *data, size_t n);
/* Appends @len bytes as tu_seg() segments of @seg bytes (the last
 * shorter). */
void tu_fixed(struct bl_list *l, const void *data, size_t len, size_t seg);
/* Appends @len bytes as tu_seg() segments of log-uniform sizes in
 * [1, @max]. */
void tu_logseg(struct bl_list *l, const void *data, size_t len, size_t max,
	       uint64_t *rng);

/* What a failed call must not change: bytes, segments, references. */
struct tu_lz4_snap {
	unsigned char *bytes;
	size_t len;
	unsigned nseg;
	unsigned *nref;
};
void tu_lz4_snap_take(struct tu_lz4_snap *s, const struct bl_list *l);
/* Asserts that @l is as tu_lz4_snap_take() saw it. */
void tu_lz4_snap_check(const struct tu_lz4_snap *s, const struct bl_list *l);
void tu_lz4_snap_free(struct tu_lz4_snap *s);
/* Initialises @out holding "prefix", to see an output left alone. */
void tu_out_prefill(struct bl_list *out);

/* The option sets a round trip runs over (levels, block sizes, flags). */
#define TU_LZ4_NOPTS 10
extern const struct bl_lz4_opts tu_lz4_opts[TU_LZ4_NOPTS];
/* Compresses flat bytes into a malloc'd frame; its length in *@len. */
unsigned char *tu_lz4_flat(const void *data, size_t n,
			   const struct bl_lz4_opts *o, size_t *len);
/* Asserts that the flat frame, as @seg-byte segments, decodes to @want. */
void tu_lz4_expect(const void *frame, size_t flen, size_t seg,
		   const void *want, size_t wlen);
/* Asserts that both decoders refuse the flat input with @err and that
 * neither changes input or output. */
void tu_lz4_bad(const void *frame, size_t flen, size_t seg, int err);
/* Asserts that the truncated stream is -EBADMSG for bl_lz4_decompress()
 * and for the streaming decoder's end(), which takes every piece. */
void tu_lz4_truncated(const void *frame, size_t flen, size_t seg);

/* A frame built by hand, byte by byte. */
struct tu_fb {
	unsigned char *p;
	size_t len, cap;
};
void tu_fb_put(struct tu_fb *f, const void *d, size_t n);
void tu_fb_le32(struct tu_fb *f, uint32_t v);
/* Magic, FLG, BD, optional content size, header checksum. */
void tu_fb_header(struct tu_fb *f, unsigned flg, unsigned bd, uint64_t csize);
/* One block: compressed when it helps (unless @force_raw), and its
 * checksum when @bchk. */
void tu_fb_block(struct tu_fb *f, const void *data, size_t n, bool bchk,
		 bool force_raw);

/* ---- the codec suites' lists and cursors (tu_codec.c) -------------------- */

/* A new list of @len bytes, one segment (its own raw) per byte. */
void tu_list_bytewise(struct bl_list *l, const void *data, size_t len);
/* Asserts that @it stands at @off with @remaining bytes after it. */
void tu_assert_at(const struct bl_iter *it, size_t off, size_t remaining);

/* ---- a child that must run cleanly (tu_child.c) -------------------------- */

/* Runs @fn as tu_run_child() does and asserts that it exited 0 with
 * nothing in its stderr containing @marker (a checker's report). */
void tu_child_clean(void (*fn)(void), const char *marker);
/* A child's misuse: a slice released, then a copy of it taken without a
 * reference released too (the raw's second release). */
void tu_slice_released_twice(void);

/* ---- the Ceph suites' cluster (tu_ceph.c) -------------------------------- */

/* The pool make check-ceph's cluster gives (BL_CEPH_POOL, with CEPH_CONF
 * set), or NULL, said on stdout as @who's: the suite then exits 77. */
const char *tu_ceph_pool(const char *who);

#endif
