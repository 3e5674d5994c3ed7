/* SPDX-License-Identifier: MIT */
/*
 * io.h - blocking scatter/gather between lists and file descriptors.
 *
 * Each call resumes short transfers, retries EINTR and splits lists of
 * more than IOV_MAX segments into IOV_MAX batches, with no allocation on
 * the write path (the iovec array lives on the stack).  @done, where
 * given, receives the bytes that reached the descriptor, also on failure,
 * so a caller never loses track of what was written.
 *
 * It also holds what O_DIRECT needs from a list, whichever way it is then
 * written (here or through bl_uring): the descriptor's alignment, and a
 * list reshaped to meet it.
 */
#ifndef BUFFERLIST_IO_H
#define BUFFERLIST_IO_H

#include <stddef.h>
#include <sys/types.h>
#include <bufferlist/common.h>
#include <bufferlist/list.h>

BL_BEGIN_DECLS

/**
 * bl_list_write_fd() - writes all of @l (borrowed) to @fd with writev
 * (sendmsg on a socket).  It never raises SIGPIPE: a socket is written
 * with MSG_NOSIGNAL, and around a write to a pipe or other descriptor
 * the calling thread blocks SIGPIPE and consumes the one the write raised
 * (a SIGPIPE already pending stays pending).
 * Return: 0 or -errno: -EAGAIN (a non-blocking fd that would block),
 * -EIO (the descriptor takes no more bytes), -EPIPE (the reader of a pipe
 * or socket went away), and the other errors of writev(2) and sendmsg(2)
 * (-EBADF, -EFBIG, -ENOSPC, -EDQUOT, -EFAULT, -EPERM, -EINVAL for
 * O_DIRECT misalignment, ...), -EINVAL for a NULL @l.  @done says how far
 * it got.
 */
BL_API int bl_list_write_fd(const struct bl_list *l, int fd, size_t *done);

/**
 * bl_list_pwrite() - as bl_list_write_fd() at file offset @off (pwritev).
 * An empty list makes no system call.
 * Return: 0 or -errno: as bl_list_write_fd() (from pwritev(2); -ESPIPE
 * for a pipe or socket), and -EINVAL for a negative offset, -EOVERFLOW
 * when the end would not fit an off_t (both before any I/O).
 */
BL_API int bl_list_pwrite(const struct bl_list *l, int fd, off_t off,
			  size_t *done);

/**
 * bl_list_read_fd() - reads up to @len bytes from @fd and appends them to
 * @l in new raws of at most 1 MiB (no copy after the read).  Short only at
 * end of file, or on a non-blocking fd that would block after some bytes
 * arrived (those bytes are returned, not lost); -EAGAIN only when nothing
 * was read.  @len is clamped to SSIZE_MAX, so SIZE_MAX reads to the end.
 * Return: bytes read (0 at end of file or for @len 0), or -errno: -EAGAIN
 * (nothing read yet), -ENOMEM, and the other errors of read(2) (-EBADF,
 * -EIO, -EISDIR, -ECONNRESET, -EINVAL, ...); on failure @l is unchanged
 * (bytes already consumed from a pipe or socket are then lost, as with
 * read(2) errors); -EINVAL for a NULL @l.
 */
BL_API ssize_t bl_list_read_fd(struct bl_list *l, int fd, size_t len);

/**
 * bl_list_pread() - as bl_list_read_fd() from file offset @off.
 * Return: as bl_list_read_fd() (from pread(2); -ESPIPE for a pipe or
 * socket), and -EINVAL for a negative offset.
 */
BL_API ssize_t bl_list_pread(struct bl_list *l, int fd, size_t len,
			     off_t off);

/**
 * bl_list_read_file() - appends the whole file at @path.
 * Return: bytes read, or -errno with @l unchanged: -ENOMEM, or an error
 * of open(2) (-ENOENT, -EACCES, -ENOTDIR, -ELOOP, -ENAMETOOLONG, -EMFILE,
 * -EROFS, ...), fstat(2) or read(2) (-EISDIR, -EIO, ...); -EINVAL for a
 * NULL @l or @path.
 */
BL_API ssize_t bl_list_read_file(struct bl_list *l, const char *path);

/**
 * bl_list_write_file() - writes @l to @path (created with @mode, truncated),
 * fsync'd.
 * Return: 0, or -errno: a write error as bl_list_write_fd() gives it
 * (-EPIPE for a FIFO whose reader went away, without SIGPIPE; -ENOSPC,
 * -EDQUOT, -EFBIG, -EIO, ...), or an error of open(2) (-ENOENT, -EACCES,
 * -EISDIR, -ENOTDIR, -ELOOP, -ENAMETOOLONG, -EMFILE, -EROFS, ...),
 * fsync(2) or close(2); -EINVAL for a NULL @l or @path.
 */
BL_API int bl_list_write_file(const struct bl_list *l, const char *path,
			      mode_t mode);

/* ---- O_DIRECT --------------------------------------------------------- */

/**
 * bl_fd_dio_align() - the memory and offset/length alignment O_DIRECT needs
 * on @fd: statx(STATX_DIOALIGN) where the kernel reports it, else the
 * device's logical block size, else 4096.  Where statx does not say, a
 * regular file is opened again with O_DIRECT (through /proc/self/fd) to
 * learn whether its filesystem takes it.  @mem_align and @off_align
 * (borrowed) are written only on success.  The alignments are reported as
 * the kernel gives them, powers of two or not.
 * Return: 0, or -errno: -EOPNOTSUPP when @fd cannot do direct I/O (not a
 * regular file or block device, or its filesystem refuses O_DIRECT),
 * -EINVAL (an output pointer is NULL), -EBADF and the other errors of
 * statx and fstat.
 */
BL_API int bl_fd_dio_align(int fd, size_t *mem_align, size_t *off_align);

/**
 * bl_list_prepare_dio() - makes @l writable with O_DIRECT on @fd: copies
 * only the misaligned runs (bl_list_rebuild_aligned_size_and_memory) and
 * keeps the list within IOV_MAX segments.  The length of @l must already
 * be a multiple of the offset alignment (-EINVAL otherwise): pad it first
 * with bl_list_pad_to(), which keeps aligned segments aligned.
 * Return: 1 if it copied, 0 if not, or -errno, one per cause:
 * -EOPNOTSUPP (@fd cannot do direct I/O: write through the page cache),
 * -EINVAL (the length of @l is not a multiple of the offset alignment, as
 * the kernel answers a misaligned O_DIRECT write; or @l is NULL), -EDOM
 * (@fd reports an alignment that is not a power of two, which this
 * function cannot lay out), -ENOMEM, and the other errors of
 * bl_fd_dio_align() (-EBADF, ...); @l is unchanged on failure.
 */
BL_API int bl_list_prepare_dio(struct bl_list *l, int fd);

BL_END_DECLS

#endif /* BUFFERLIST_IO_H */
