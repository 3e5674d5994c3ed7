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

#endif
