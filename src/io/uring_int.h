/* SPDX-License-Identifier: MIT */
/*
 * uring_int.h - what the uring layer shows its tests and benchmarks.
 * Never installed.
 */
#ifndef BUFFERLIST_URING_INT_H
#define BUFFERLIST_URING_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <bufferlist/uring.h>

struct io_uring_cqe;

/*
 * What a ring did since it was made.  Plain counters of the owning thread:
 * read them from that thread.
 */
struct bl__uring_counters {
	uint64_t sqes;		/* data requests issued (SQEs or system calls) */
	uint64_t fixed;		/* of which READ_FIXED / WRITE_FIXED */
	uint64_t zc;		/* of which SEND_ZC / SENDMSG_ZC */
	uint64_t zc_fallbacks;	/* zero copy refused, sent again by copy */
	uint64_t notifs;	/* zero-copy notifications handled */
	uint64_t zc_copied;	/* of which said the kernel copied anyway */
	uint64_t resumes;	/* short transfers resumed */
	uint64_t retries;	/* -EAGAIN / -EINTR completions retried */
	uint64_t rearms;	/* pooled receives re-armed by the library */
	uint64_t cancels;	/* cancel requests issued */
	uint64_t spins;		/* waits that spun before sleeping */
	uint64_t spin_hits;	/* of which a completion ended the spin */
	uint64_t spin_skips;	/* waits that slept at once (backing off) */
	uint64_t spin_idle;	/* waits that slept at once (no answer
				 * due: uring_kernel.c spin_wait) */
};

void bl__uring_counters(const struct bl_uring *u,
			struct bl__uring_counters *out);

/* Operations called back but still waiting for the kernel (zero copy). */
unsigned bl__uring_retiring(const struct bl_uring *u);

/* Zero-copy sends destroys gave up waiting for, in this process. */
unsigned bl__uring_abandoned(void);

/* Rings whose destroy could not enter the kernel (-EEXIST): kept. */
unsigned bl__uring_lost_rings(void);

/* Features found by the run-time probe (false on the blocking back end). */
struct bl__uring_features {
	bool send_zc;		/* IORING_OP_SEND_ZC */
	bool sendmsg_zc;	/* IORING_OP_SENDMSG_ZC */
	bool recv_multishot;	/* IORING_RECV_MULTISHOT */
};

void bl__uring_features(const struct bl_uring *u,
			struct bl__uring_features *out);

/* The zero-copy threshold in force (after the default was applied). */
size_t bl__uring_zc_threshold(const struct bl_uring *u);

/*
 * In the callback of a write or send that failed (@res < 0): how many of
 * its bytes the kernel took before it failed, which the callback's @res
 * cannot say (a messenger tells by it which of the frames one send
 * carried went out whole).  Meaningless anywhere else.
 */
size_t bl__uring_cb_done(const struct bl_uring *u);

/*
 * Whether a socket whose zero-copy send the kernel reported as copied (or
 * refused) goes by copy for its next 1024 sends (default: on).  Off, every
 * send at or above the threshold is zero copy: what the benchmark uses to
 * measure zero copy itself.
 */
void bl__uring_zc_adapt(struct bl_uring *u, bool on);

/*
 * Fault injection at the completion (an LD_PRELOAD shim cannot reach I/O
 * that the kernel does for io_uring).  The hook sees every completion of a
 * data request before the library handles it — a CQE on the io_uring back
 * end, a synthesised one (user_data, res, flags 0) for each system call on
 * the blocking back end — and returns the result the library should
 * believe: cqe->res unchanged, a shorter count, or -errno.  Never sees
 * zero-copy notifications.  Process-wide; NULL removes it.  Tests only.
 */
typedef int (*bl__uring_cqe_hook_fn)(struct io_uring_cqe *cqe, void *op_arg);

void bl__uring_set_cqe_hook(bl__uring_cqe_hook_fn fn);

/*
 * Whether io_uring writes at the file position carry RWF_NOSIGNAL: on
 * until a kernel (before 6.18) refuses it with -EOPNOTSUPP, then off for
 * the process.  @set 0 or 1 sets it, -1 only asks.  Return: the state.
 */
bool bl__uring_rwf_nosignal(int set);

/*
 * For the messenger: stops the multishot pooled receive on @fd (no more
 * re-arming; the kernel's request is cancelled).  Every chunk already
 * taken off the socket is still delivered, then the final callback comes
 * (-ECANCELED, or a last chunk with more false); the bytes not taken stay
 * in the socket for a plain read.  Return: 0, or -ENOENT when no such
 * receive is in flight.
 */
int bl__uring_recv_stop(struct bl_uring *u, int fd);

/*
 * For the messenger's busy polling: whether completions of @u wait to be
 * handled (other connections' data, finished sends), which a thread
 * spinning on one socket would hold up.  On a ring whose CQEs the
 * application hands over (bl_uring_handle_cqe), those behind the one
 * being handled count too.
 */
bool bl__uring_pending(const struct bl_uring *u);

/*
 * For the messenger's direct reads: the size of the buffers of @u's
 * registered pool when one is registered and has a buffer free (a read of
 * at most that many bytes then goes into it, READ_FIXED), else 0.
 */
size_t bl__uring_regpool_room(struct bl_uring *u);

#endif /* BUFFERLIST_URING_INT_H */
