/* SPDX-License-Identifier: MIT */
/*
 * io.c - blocking scatter/gather between lists and file descriptors.
 *
 * Writes export the list into an iovec array on the stack, IOV_MAX entries
 * at a time, and never allocate.  A short write trims the array in place
 * instead of exporting again, so a list is walked once however the kernel
 * splits the transfer.
 *
 * Reads go straight into new raws (the kernel writes the payload there, so
 * nothing is counted as a copy) collected in a private list that is moved
 * onto the caller's list only when the whole call succeeded.
 *
 * Choices the header leaves open:
 *  - An empty list is written without a system call: 0 with *done = 0,
 *    whatever @fd is.  A read of 0 bytes likewise returns 0 at once.
 *  - A read on a non-blocking descriptor that would block after some
 *    bytes arrived returns those bytes (short) rather than -EAGAIN: the
 *    bytes are gone from the descriptor, and failing would lose them.
 *    -EAGAIN is returned only when nothing was read.  Any other failure
 *    leaves the list unchanged even when bytes were consumed.
 *  - A read's length is clamped to SSIZE_MAX (pass SIZE_MAX to read until
 *    end of file).  Raws are at most BL__IO_CHUNK_MAX bytes, except that
 *    bl_list_read_file() reads a regular file into one raw of its size.
 *  - A write or read at a negative offset is -EINVAL; a write whose end
 *    would overflow off_t is -EOVERFLOW, both before any system call.
 *  - A write at the file position asks fstat what @fd is: a socket is
 *    written with sendmsg(MSG_NOSIGNAL), a pipe or other descriptor that
 *    can raise SIGPIPE with the signal blocked around the call, so a
 *    reader that went away is -EPIPE, not a dead process.
 *
 * The O_DIRECT helpers at the end only ask the kernel for the alignment
 * (and, where it does not say, whether the file takes O_DIRECT at all)
 * and hand the list to the list layer's rebuild; they do no I/O.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <linux/fs.h>

#include "list_int.h"
#include "io_int.h"
#include <bufferlist/io.h>

/* Largest raw a read allocates when it does not know the size. */
#define BL__IO_CHUNK_MAX ((size_t)1 << 20)
/* First raw of a read of unknown size; doubles up to BL__IO_CHUNK_MAX. */
#define BL__IO_CHUNK_MIN ((size_t)4096)

#define BL__OFF_MAX \
	((off_t)(((uint64_t)1 << (sizeof(off_t) * CHAR_BIT - 1)) - 1))

/* ---- SIGPIPE ---------------------------------------------------------- */

void bl__sigpipe_block(struct bl__sigpipe_guard *g)
{
	sigset_t set, pending;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	/* pending means blocked already: a new one would merge with it */
	g->was_pending = !sigpending(&pending) &&
			 sigismember(&pending, SIGPIPE) == 1;
	pthread_sigmask(SIG_BLOCK, &set, &g->old);
}

void bl__sigpipe_restore(struct bl__sigpipe_guard *g, bool epipe)
{
	int saved = errno;

	if (epipe && !g->was_pending) {
		static const struct timespec zero = { 0, 0 };
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGPIPE);
		while (sigtimedwait(&set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &g->old, NULL);
	errno = saved;
}

/* ---- writes ----------------------------------------------------------- */

/* At the file position: @how says how SIGPIPE stays away (io_int.h). */
static ssize_t writev_nosig(int fd, const struct iovec *iov, int cnt,
			    enum bl__nosig how)
{
	struct msghdr m;

	if (how != BL__NOSIG_SOCK)
		return writev(fd, iov, cnt);
	memset(&m, 0, sizeof(m));
	m.msg_iov = (struct iovec *)iov;
	m.msg_iovlen = (size_t)cnt;
	return sendmsg(fd, &m, MSG_NOSIGNAL);
}

static int write_all(const struct bl_list *l, int fd, bool positional,
		     off_t off, size_t *done)
{
	struct iovec iov[BL__IOV_MAX];
	struct bl__sigpipe_guard guard;
	enum bl__nosig how = BL__NOSIG_NONE;
	size_t total = bl_list_length(l), pos = 0;
	int cnt = 0, i = 0, ret = 0;

	if (positional) {
		if (off < 0) {
			ret = -EINVAL;
			goto out;
		}
		if (total > (uint64_t)(BL__OFF_MAX - off)) {
			ret = -EOVERFLOW;
			goto out;
		}
	} else if (total) {
		/* a pipe or socket whose reader is gone: -EPIPE, no signal
		 * (pwritev on those is -ESPIPE, so positional writes never
		 * raise it) */
		struct stat st;

		how = bl__nosig_of_mode(fstat(fd, &st) ? -1 : (long)st.st_mode);
		if (how == BL__NOSIG_GUARD)
			bl__sigpipe_block(&guard);
	}

	while (pos < total) {
		ssize_t n;

		if (i == cnt) {
			cnt = bl_list_to_iovec(l, pos, iov, BL__IOV_MAX);
			/* pos < length, so the list owes us an entry */
			if (bl__unlikely(cnt <= 0)) {
				BL_ASSERT(cnt > 0);
				ret = cnt < 0 ? cnt : -EIO;
				break;
			}
			i = 0;
		}
		if (positional)
			n = pwritev(fd, iov + i, cnt - i, off + (off_t)pos);
		else
			n = writev_nosig(fd, iov + i, cnt - i, how);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		/*
		 * Zero bytes for a non-empty request means the descriptor will
		 * not take more; retrying would spin.
		 */
		if (n == 0) {
			ret = -EIO;
			break;
		}
		pos += (size_t)n;
		while (i < cnt && (size_t)n >= iov[i].iov_len) {
			n -= (ssize_t)iov[i].iov_len;
			i++;
		}
		if (n) {
			iov[i].iov_base = (char *)iov[i].iov_base + n;
			iov[i].iov_len -= (size_t)n;
		}
	}
	if (how == BL__NOSIG_GUARD)
		bl__sigpipe_restore(&guard, ret == -EPIPE);
out:
	if (done)
		*done = pos;
	return ret;
}

/* A NULL list: nothing written, and the caller is told so. */
static int bad_list(size_t *done)
{
	if (done)
		*done = 0;
	return -EINVAL;
}

int bl_list_write_fd(const struct bl_list *l, int fd, size_t *done)
{
	if (!l)
		return bad_list(done);
	return write_all(l, fd, false, 0, done);
}

int bl_list_pwrite(const struct bl_list *l, int fd, off_t off, size_t *done)
{
	if (!l)
		return bad_list(done);
	return write_all(l, fd, true, off, done);
}

/* Moves the first @fill bytes of @r (its reference taken) onto @acc. */
static int keep_raw(struct bl_list *acc, struct bl_raw *r, size_t fill)
{
	struct bl_ptr p;
	int ret;

	bl_ptr_from_raw(&p, r);
	ret = bl_ptr_slice(&p, &p, 0, fill);
	if (!ret)
		ret = bl_list_append_ptr_move(acc, &p);
	if (ret)
		bl_ptr_release(&p);
	return ret;
}

/*
 * Reads up to @len bytes into raws: the first of @first bytes, the next
 * of @next bytes doubling up to BL__IO_CHUNK_MAX, none larger than what
 * is left to read.  Appends to @l only on success.
 */
static ssize_t read_all(struct bl_list *l, int fd, size_t len,
			bool positional, off_t off, size_t first, size_t next)
{
	struct bl_list acc;
	struct bl_raw *r = NULL;
	size_t chunk = first, cap = 0, fill = 0, total = 0;
	bool first_done = false;
	ssize_t ret = 0;

	if (positional) {
		if (off < 0)
			return -EINVAL;
		/* past the largest offset there is nothing to read anyway */
		if (len > (uint64_t)(BL__OFF_MAX - off))
			len = (size_t)(BL__OFF_MAX - off);
	}
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	if (!len)
		return 0;

	bl_list_init(&acc);
	while (total < len) {
		ssize_t n;

		if (!r) {
			cap = chunk < len - total ? chunk : len - total;
			r = bl_raw_create(cap);
			if (!r) {
				ret = -ENOMEM;
				goto fail;
			}
			fill = 0;
		}
		if (positional)
			n = pread(fd, bl_raw_data(r) + fill, cap - fill,
				  off + (off_t)total);
		else
			n = read(fd, bl_raw_data(r) + fill, cap - fill);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if ((errno == EAGAIN || errno == EWOULDBLOCK) && total)
				break;
			ret = -errno;
			goto fail;
		}
		if (n == 0)
			break;
		fill += (size_t)n;
		total += (size_t)n;
		if (fill == cap) {
			ret = keep_raw(&acc, r, fill);
			r = NULL;
			if (ret)
				goto fail;
			chunk = first_done ? chunk * 2 : next;
			first_done = true;
			if (chunk > BL__IO_CHUNK_MAX)
				chunk = BL__IO_CHUNK_MAX;
		}
	}
	if (r) {
		if (fill) {
			ret = keep_raw(&acc, r, fill);
			r = NULL;
			if (ret)
				goto fail;
		} else {
			bl_raw_put(r);
			r = NULL;
		}
	}
	ret = bl_list_claim_append(l, &acc);
	if (ret)
		goto fail;
	return (ssize_t)total;

fail:
	bl_raw_put(r);
	bl_list_clear(&acc);
	return ret;
}

ssize_t bl_list_read_fd(struct bl_list *l, int fd, size_t len)
{
	if (!l)
		return -EINVAL;
	return read_all(l, fd, len, false, 0, BL__IO_CHUNK_MAX,
			BL__IO_CHUNK_MAX);
}

ssize_t bl_list_pread(struct bl_list *l, int fd, size_t len, off_t off)
{
	if (!l)
		return -EINVAL;
	return read_all(l, fd, len, true, off, BL__IO_CHUNK_MAX,
			BL__IO_CHUNK_MAX);
}

ssize_t bl_list_read_file(struct bl_list *l, const char *path)
{
	struct stat st;
	size_t first = BL__IO_CHUNK_MIN;
	ssize_t ret;
	int fd;

	if (!l || !path)
		return -EINVAL;
	do
		fd = open(path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	/*
	 * A regular file's size is known: one raw holds it.  Reading goes on
	 * to end of file, so a file that grew meanwhile is read whole (in
	 * further raws) and a procfs or sysfs file whose size is 0 or a
	 * placeholder is read in growing chunks.
	 */
	if (S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (uint64_t)st.st_size <= SSIZE_MAX)
		first = (size_t)st.st_size;
	ret = read_all(l, fd, SIZE_MAX, false, 0, first, BL__IO_CHUNK_MIN);
	close(fd);
	return ret;
}

int bl_list_write_file(const struct bl_list *l, const char *path,
		       mode_t mode)
{
	int fd, ret;

	if (!l || !path)
		return -EINVAL;
	do
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	while (fd < 0 && errno == EINTR);
	if (fd < 0)
		return -errno;
	ret = bl_list_write_fd(l, fd, NULL);
	if (!ret) {
		while (fsync(fd) < 0) {
			if (errno != EINTR) {
				ret = -errno;
				break;
			}
		}
	}
	/*
	 * Linux releases the descriptor even when close fails, so it is not
	 * retried; its error (NFS reports deferred write errors here) still
	 * counts when everything before succeeded.
	 */
	if (close(fd) < 0 && !ret)
		ret = -errno;
	return ret;
}

/* ---- O_DIRECT --------------------------------------------------------- */

#ifndef STATX_DIOALIGN
#define STATX_DIOALIGN 0x00002000U
#endif

/*
 * Whether the regular file open at @fd takes O_DIRECT, where statx did not
 * say: opening it again with O_DIRECT (through /proc/self/fd) is what
 * open(2) checks, and a filesystem without direct I/O (tmpfs before 6.6,
 * procfs, ...) refuses it with EINVAL.  Read access first, so that the
 * probe opens nothing for writing where it need not.  Return: 0 (it does,
 * or the probe could not tell: no /proc, no permission), or -EOPNOTSUPP.
 */
static int dio_probe(int fd)
{
	char path[32];
	int fl = fcntl(fd, F_GETFL), pfd, acc = O_RDONLY;

	if (fl >= 0 && (fl & O_DIRECT))
		return 0;	/* opened so already */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (;;) {
		pfd = open(path, acc | O_DIRECT | O_CLOEXEC | O_NOCTTY);
		if (pfd >= 0) {
			close(pfd);
			return 0;
		}
		if (errno == EINTR)
			continue;
		if (errno == EINVAL)
			return -EOPNOTSUPP;
		if (errno != EACCES || acc != O_RDONLY || fl < 0 ||
		    (fl & O_ACCMODE) == O_RDONLY)
			return 0;
		acc = O_WRONLY;	/* a write-only descriptor of ours */
	}
}

int bl_fd_dio_align(int fd, size_t *mem_align, size_t *off_align)
{
	struct statx stx;
	struct stat st;
	int ss, ret;

	if (!mem_align || !off_align)
		return -EINVAL;
	memset(&stx, 0, sizeof(stx));
	if (!statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &stx) &&
	    (stx.stx_mask & STATX_DIOALIGN)) {
		/* reported as zero: this file cannot do direct I/O at all */
		if (!stx.stx_dio_offset_align || !stx.stx_dio_mem_align)
			return -EOPNOTSUPP;
		*mem_align = stx.stx_dio_mem_align;
		*off_align = stx.stx_dio_offset_align;
		return 0;
	}
	if (fstat(fd, &st))
		return -errno;
	/* pipes, sockets, character devices: no direct I/O */
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return -EOPNOTSUPP;
	if (S_ISBLK(st.st_mode) && !ioctl(fd, BLKSSZGET, &ss) && ss > 0) {
		*mem_align = *off_align = (size_t)ss;
		return 0;
	}
	if (S_ISREG(st.st_mode)) {
		ret = dio_probe(fd);
		if (ret)
			return ret;
	}
	*mem_align = *off_align = 4096;
	return 0;
}

/*
 * Three refusals a caller handles differently, so three errnos (io.h):
 * -EOPNOTSUPP, no direct I/O on @fd at all (write through the page cache
 * instead); -EINVAL, the list's length, as the kernel says of a misaligned
 * O_DIRECT write (the caller pads, bl_list_pad_to); -EDOM, direct I/O with
 * an alignment that is not a power of two, which the rebuild cannot lay
 * out (the caller lays the buffers out itself, or writes buffered).
 */
int bl_list_prepare_dio(struct bl_list *l, int fd)
{
	size_t mem, off;
	int ret;

	if (!l)
		return -EINVAL;
	ret = bl_fd_dio_align(fd, &mem, &off);
	if (ret)
		return ret;
	if (!bl__is_pow2(off) || !bl__is_pow2(mem))
		return -EDOM;
	if (bl_list_length(l) & (off - 1))
		return -EINVAL;
	return bl_list_rebuild_aligned_size_and_memory(l, off, mem,
						       BL__IOV_MAX);
}
