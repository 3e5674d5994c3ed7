/* SPDX-License-Identifier: MIT */
/*
 * io_int.h - what the blocking I/O functions (io.c) and the uring layer
 * share: the most iovecs one system call or one io_uring request takes,
 * and how a write keeps SIGPIPE from killing the process.  Never
 * installed.
 */
#ifndef BUFFERLIST_IO_INT_H
#define BUFFERLIST_IO_INT_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/stat.h>

/*
 * Linux has accepted 1024 iovecs per call (UIO_MAXIOV) for as long as
 * writev exists, and one io_uring SQE takes as many: 1025 is -EINVAL
 * (-EMSGSIZE for sendmsg).  16 KiB of stack is the price of never
 * allocating in io.c.
 */
#if defined(IOV_MAX) && IOV_MAX < 1024
#define BL__IOV_MAX IOV_MAX
#else
#define BL__IOV_MAX 1024
#endif

/*
 * SIGPIPE around a write to a descriptor that can raise it (a pipe, a
 * FIFO, a character device; sockets take MSG_NOSIGNAL instead): block it
 * in the calling thread, write, and on -EPIPE consume the signal the write
 * raised unless one was pending already (that one the caller keeps), then
 * restore the mask.  The write then fails with -EPIPE as io.h promises,
 * whatever the process's disposition of SIGPIPE.
 */
struct bl__sigpipe_guard {
	sigset_t old;
	bool was_pending;
};

void bl__sigpipe_block(struct bl__sigpipe_guard *g);
void bl__sigpipe_restore(struct bl__sigpipe_guard *g, bool epipe);

/* How a write at the file position to @fd avoids SIGPIPE. */
enum bl__nosig {
	BL__NOSIG_NONE,		/* regular file or block device: never raised */
	BL__NOSIG_SOCK,		/* a socket: sendmsg with MSG_NOSIGNAL */
	BL__NOSIG_GUARD,	/* anything else: bl__sigpipe_block() */
};

/* From a stat(2) mode; -1 (fstat failed) is guarded. */
static inline enum bl__nosig bl__nosig_of_mode(long mode)
{
	if (mode < 0)
		return BL__NOSIG_GUARD;
	if (S_ISSOCK((mode_t)mode))
		return BL__NOSIG_SOCK;
	if (S_ISREG((mode_t)mode) || S_ISBLK((mode_t)mode))
		return BL__NOSIG_NONE;
	return BL__NOSIG_GUARD;
}

#endif /* BUFFERLIST_IO_INT_H */
