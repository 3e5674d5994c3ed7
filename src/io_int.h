/* SPDX-License-Identifier: MIT */
/*
 * io_int.h - what the blocking I/O functions (io.c) and the uring layer
 * share: the most iovecs one system call or one io_uring request takes.
 * Never installed.
 */
#ifndef BUFFERLIST_IO_INT_H
#define BUFFERLIST_IO_INT_H

#include <limits.h>

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

#endif /* BUFFERLIST_IO_INT_H */
