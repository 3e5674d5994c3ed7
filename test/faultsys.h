/* SPDX-License-Identifier: MIT */
/*
 * faultsys.h - system call and liburing fault injection for the tests.
 *
 * The test binary is linked with -Wl,--wrap=SYM for every symbol below,
 * so each call the library (linked statically) makes goes through a
 * wrapper in faultsys.c first.  A wrapper counts the call and, when a plan
 * says so, fails it with an errno (without making the real call, so
 * nothing happened), or makes the real call with a shorter count.  A
 * pseudo-symbol, FS_CQE, applies the same plans to the uring layer's
 * completion hook: the io_uring back end does its I/O in the kernel,
 * where no wrapper reaches.
 *
 * Plans and counters apply to the thread that called fs_arm() only, and
 * only while armed, so libcheck's own pipes and the test's set-up are
 * never disturbed.  Never installed; the fault suites only
 * (test_syscall_faults_*.c, test_alloc_failures_io.c).
 */
#ifndef BL_FAULTSYS_H
#define BL_FAULTSYS_H

#include <stdbool.h>
#include <stddef.h>

enum fs_sym {
	FS_WRITEV,
	FS_PWRITEV,
	FS_READV,
	FS_PREADV,
	FS_READ,
	FS_PREAD,
	FS_RECV,
	FS_SENDMSG,
	FS_OPEN,
	FS_FSTAT,
	FS_STATX,
	FS_FSYNC,
	FS_FDATASYNC,
	FS_SYNC_FILE_RANGE,
	FS_PWRITEV2,
	FS_CLOSE,
	FS_POLL,
	FS_URING_SUBMIT,
	FS_URING_SUBMIT_AND_WAIT_TIMEOUT,
	FS_URING_ENTER,
	FS_URING_QUEUE_INIT_PARAMS,
	FS_URING_REGISTER_BUF_RING,
	FS_URING_REGISTER_BUFFERS,
	FS_URING_GET_PROBE_RING,
	FS_CQE,		/* a data request's completion (uring layer hook) */
	FS_NSYM
};

enum fs_action {
	FS_FAIL,	/* -1 / errno (or -errno, NULL: as the symbol reports) */
	FS_SHORT,	/* the real call, moving at most k bytes */
};

/* Forgets every plan and zeroes the counters (armed or not). */
void fs_reset(void);

/*
 * The @nth call of @s (1-based, counted since fs_reset()) and the
 * @times - 1 calls after it (0: every later call) fail with @err
 * (FS_FAIL) or move at most @k bytes (FS_SHORT).  One plan per symbol.
 */
void fs_plan(enum fs_sym s, unsigned long nth, unsigned times,
	     enum fs_action a, int err, size_t k);

/*
 * While armed, a statx that succeeds reports these direct I/O alignments
 * (STATX_DIOALIGN) instead of the file's: a device no machine here has.
 * 0, 0 (and fs_reset) ends it.
 */
void fs_statx_dio(uint32_t mem_align, uint32_t off_align);

/* Starts (true) or stops counting and injecting on the calling thread. */
void fs_arm(bool on);

/* Calls of @s while armed, and how many of them a plan changed. */
unsigned long fs_calls(enum fs_sym s);
unsigned long fs_hits(enum fs_sym s);
/* Sum of fs_hits() over every symbol. */
unsigned long fs_hits_total(void);

const char *fs_name(enum fs_sym s);

/* Installs the FS_CQE hook in the uring layer (NULL removes it). */
void fs_cqe_hook(bool on);

#endif
