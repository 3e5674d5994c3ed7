/* SPDX-License-Identifier: MIT */
/*
 * faultsuite.h - what the fault suites (test_syscall_faults_*.c,
 * test_alloc_failures_io.c) share, in faultsuite.c: the data and files
 * they write and read, the count of fault points by kind, snapshots of a
 * caller's list, and one uring operation of each kind set up, run,
 * faulted and checked (struct uctx).  Never installed.
 */
#ifndef BL_FAULTSUITE_H
#define BL_FAULTSUITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <check.h>
#include <bufferlist.h>
#include <bufferlist/uring.h>
#include <bufferlist/msgr.h>
#include "faultsys.h"

#define DATA_LEN	((3u << 20) + 4096)
#define FLEN		((2u << 20) + (1u << 19) + 123)	/* the read file */
#define NSEG		1500	/* more than IOV_MAX: two batches */
#define SOCK_LEN	(48u << 10)	/* fits an AF_UNIX socket buffer */

/* fault points, by errno / kind, for the coverage table */
enum kind { K_EINTR, K_EAGAIN, K_EIO, K_ENOSPC, K_ECONNRESET, K_SHORT,
	    K_NKIND };

#define KB(k) (1u << (k))
#define K_FILE (KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) | KB(K_ENOSPC) | \
		KB(K_SHORT))
#define K_SOCK (KB(K_EINTR) | KB(K_EAGAIN) | KB(K_EIO) | \
		KB(K_ECONNRESET) | KB(K_SHORT))
#define K_HARD (KB(K_EIO) | KB(K_ECONNRESET))

/*
 * Counted in shared memory: Check runs each test in a forked child (unless
 * CK_FORK=no), and main prints the sum of them all, by kind of fault.
 */
enum { P_ENOMEM = K_NKIND, P_OTHER, P_NKIND };

struct points {
	_Atomic unsigned long total;
	_Atomic unsigned long by[P_NKIND];
};

/* What a caller's list looked like: bytes, segments, reference counts. */
struct snap {
	size_t len;
	unsigned nb;
	uint32_t crc;
	struct iovec *iov;
	unsigned *nref;
};

struct ures {
	int calls;
	ssize_t res;
	struct bl_list data;
	bool more;
};

enum uop_kind { U_WRITE, U_WRITE_POS, U_READ, U_SEND, U_RECV, U_POOLED,
		U_POOLED_MULTI, U_PIPE, U_WRITE_FDSYNC, U_WRITE_DSYNC, U_FSYNC,
		U_FDATASYNC, U_SYNC_RANGE };

/* the faults a sync can return */
#define K_SYNC (KB(K_EINTR) | KB(K_EIO) | KB(K_ENOSPC))

struct ucase {
	const char *name;
	enum uop_kind op;
	bool blocking;
	enum fs_sym sym;
	unsigned kinds;
};

struct uctx {
	const struct ucase *c;
	struct bl_uring *u;
	struct bl_uring_bufring *br;
	struct bl_list l;	/* what writes and sends take */
	size_t total;
	int fd, peer;		/* file, or socket and its peer */
	unsigned char *want;	/* expected bytes */
	size_t want_len;
};

#define UBUFS 8
#define UBUF_SIZE 4096
#define RECV_LEN 10000

/* An operation's bytes (DATA_LEN of them); the read file (in_path, open as
 * in_fd) holds the first FLEN, out_path is written. */
extern unsigned char DATA[DATA_LEN];
extern char dir_path[4096], in_path[4200], out_path[4200];
extern int in_fd;
/* The io_uring back end works here (else only the blocking one runs). */
extern bool have_uring;
extern const char *const kind_names[K_NKIND];
extern const int kind_err[K_NKIND];	/* 0 for a short count */
extern const char *const pkind_names[P_NKIND];
extern struct points *points_total;

/* Counts one fault point of @kind (a K_ or P_ value). */
void point(int kind);
/* Adds @n points to the total and prints them under @what. */
void report(const char *what, unsigned long n);
/* This process's open descriptors. */
unsigned nfds(void);
/* Bytes the counting allocator has live. */
int64_t live_bytes(void);
/* NSEG segments of 1..2000 bytes, every one its own raw, from DATA. */
void make_list(struct bl_list *l, size_t *total);
void snap_take(struct snap *s, const struct bl_list *l);
/* Asserts that @l is as snap_take() saw it; @what names the case. */
void snap_check(const struct snap *s, const struct bl_list *l,
		const char *what);
void snap_free(struct snap *s);
/* Reads back @path and compares it with @want[0..len). */
void file_is(const char *path, const void *want, size_t len,
	     const char *what);
/* Empties out_path. */
void truncate_out(void);
/* Plans fault @k at call @n of @s: once, except the hard errors. */
void plan_kind(enum fs_sym s, unsigned long n, enum kind k, size_t sk);

/* bl_uring_cb and the pooled receive's callback, recording into a
 * struct ures. */
void ucb(void *arg, ssize_t res, struct bl_list *data);
void upcb(void *arg, ssize_t res, struct bl_list *data, bool more);
/* A ring on the blocking back end or on io_uring (asserted). */
struct bl_uring *ring_new(bool blocking);
/* Runs @u until @r's callback ran (with the fault plan still armed). */
void run_until(struct bl_uring *u, struct ures *r, int want_calls);
/* The counting allocator installed, make_list() into @l, @r's list
 * ready: where a uring case starts. */
void ring_start(struct bl_list *l, size_t *total, struct ures *r);
/* @u, whatever back end it got, writes @l (@total bytes) to out_path. */
void ring_writes(struct bl_uring *u, struct bl_list *l, struct ures *r,
		 size_t total, const char *what);
/* Reads everything waiting on the peer socket or pipe (non-blocking). */
size_t drain_peer(int fd, unsigned char *buf, size_t cap);
/* Sets up the files, sockets and ring the case needs (no fault armed). */
void uctx_open(struct uctx *x, const struct ucase *c);
void uctx_close(struct uctx *x);
/* One operation, armed; returns its result (the callback's, or the
 * submit call's error).  For receives, @data gets what arrived. */
ssize_t urun(struct uctx *x, struct bl_list *data);
/* The multishot receive's socket was shut: make a fresh pair. */
void renew_socket(struct uctx *x);
/* Checks a successful run's result; @data: what a read or receive got. */
void ucheck_ok(struct uctx *x, ssize_t res, struct bl_list *data,
	       const char *what);

/* What a connection's callbacks saw. */
struct mres {
	int sent, closed, frames;
	int send_res, close_err;
};
/* on_frame, on_close, on_sent and log callbacks recording into a
 * struct mres (log: discards). */
void m_frame(void *arg, struct bl_msgr_conn *c, struct bl_msgr_frame *f);
void m_close(void *arg, struct bl_msgr_conn *c, int err,
	     const char *reason);
void m_sent(void *arg, int res);
void m_log(void *arg, struct bl_msgr_conn *c, const char *msg);

/*
 * A connection that busy polls: frame 1 comes through the ring, and its
 * delivery makes the peer send the rest and shut its side down, which
 * the connection's own reads then take (into raws of their own).
 */
#define POLL_FRAMES 6

struct mpoll {
	struct mres m;		/* first: m_close's argument */
	int peer;
	unsigned char *rest;
	size_t restn;
	int fault;		/* an errno for the next recv(2), or 0 */
};

/* POLL_FRAMES frames of 100 bytes into a new buffer; *@first: frame 1's
 * length, *@n: all of them. */
unsigned char *poll_stream(size_t *first, size_t *n);
/* A busy polling connection over @sv[0], @sv[1] its raw peer; its first
 * frame's delivery sends the rest and arms @p->fault. */
struct bl_msgr_conn *poll_conn(struct bl_uring *u, int sv[2],
			       struct mpoll *p, unsigned char **buf);

/* A fault suite's main: makes the files, sees whether io_uring works,
 * runs @suite() and prints the fault points by kind. */
int fs_main(const char *name, Suite *(*suite)(void));

#endif
