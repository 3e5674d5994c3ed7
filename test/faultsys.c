/* SPDX-License-Identifier: MIT */
/*
 * faultsys.c - the --wrap wrappers behind faultsys.h.
 *
 * A failed call is never made for real, so the descriptor, the file and
 * the ring are exactly as if the kernel had refused it.  The exception is
 * close(): Linux releases the descriptor even when close fails, so the
 * wrapper closes it and then reports the error, as the kernel would.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <liburing.h>
#include "uring_int.h"
#include "faultsys.h"

struct plan {
	bool on;
	enum fs_action a;
	unsigned long nth;
	unsigned times;
	int err;
	size_t k;
};

static struct plan plans[FS_NSYM];
static unsigned long calls[FS_NSYM], hits[FS_NSYM];
static uint32_t statx_mem, statx_off;	/* fs_statx_dio */
static __thread bool armed;

static const char *const names[FS_NSYM] = {
	[FS_WRITEV] = "writev",
	[FS_PWRITEV] = "pwritev",
	[FS_READV] = "readv",
	[FS_PREADV] = "preadv",
	[FS_READ] = "read",
	[FS_PREAD] = "pread",
	[FS_RECV] = "recv",
	[FS_SENDMSG] = "sendmsg",
	[FS_OPEN] = "open",
	[FS_FSTAT] = "fstat",
	[FS_STATX] = "statx",
	[FS_FSYNC] = "fsync",
	[FS_FDATASYNC] = "fdatasync",
	[FS_SYNC_FILE_RANGE] = "sync_file_range",
	[FS_PWRITEV2] = "pwritev2",
	[FS_CLOSE] = "close",
	[FS_POLL] = "poll",
	[FS_URING_SUBMIT] = "io_uring_submit",
	[FS_URING_SUBMIT_AND_WAIT_TIMEOUT] = "io_uring_submit_and_wait_timeout",
	[FS_URING_ENTER] = "io_uring_enter",
	[FS_URING_QUEUE_INIT_PARAMS] = "io_uring_queue_init_params",
	[FS_URING_REGISTER_BUF_RING] = "io_uring_register_buf_ring",
	[FS_URING_REGISTER_BUFFERS] = "io_uring_register_buffers",
	[FS_URING_GET_PROBE_RING] = "io_uring_get_probe_ring",
	[FS_CQE] = "cqe",
};

void fs_reset(void)
{
	memset(plans, 0, sizeof(plans));
	memset(calls, 0, sizeof(calls));
	memset(hits, 0, sizeof(hits));
	statx_mem = statx_off = 0;
}

void fs_statx_dio(uint32_t mem_align, uint32_t off_align)
{
	statx_mem = mem_align;
	statx_off = off_align;
}

void fs_plan(enum fs_sym s, unsigned long nth, unsigned times,
	     enum fs_action a, int err, size_t k)
{
	plans[s] = (struct plan){ true, a, nth, times, err, k };
}

void fs_arm(bool on)
{
	armed = on;
}

unsigned long fs_calls(enum fs_sym s)
{
	return calls[s];
}

unsigned long fs_hits(enum fs_sym s)
{
	return hits[s];
}

unsigned long fs_hits_total(void)
{
	unsigned long t = 0;

	for (int i = 0; i < FS_NSYM; i++)
		t += hits[i];
	return t;
}

const char *fs_name(enum fs_sym s)
{
	return names[s];
}

/* Counts a call of @s; the plan that applies to it, or NULL. */
static const struct plan *step(enum fs_sym s)
{
	const struct plan *p = &plans[s];
	unsigned long c;

	if (!armed)
		return NULL;
	c = ++calls[s];
	if (!p->on || c < p->nth || (p->times && c >= p->nth + p->times))
		return NULL;
	hits[s]++;
	return p;
}

/* -1 with errno set, for the libc wrappers. */
static long fail(const struct plan *p)
{
	errno = p->err;
	return -1;
}

/* A copy of @iov holding at most @k bytes; the number of entries used. */
static int clip(const struct iovec *iov, int n, size_t k, struct iovec *out)
{
	int i;

	if (!k)
		k = 1;
	for (i = 0; i < n && i < IOV_MAX && k; i++) {
		out[i] = iov[i];
		if (out[i].iov_len > k)
			out[i].iov_len = k;
		k -= out[i].iov_len;
	}
	return i;
}

#define SHORT_IOV(real, fd, iov, n, ...)				\
	do {								\
		struct iovec c_[IOV_MAX];				\
		int m_ = clip(iov, n, p->k, c_);			\
		return real(fd, c_, m_, ##__VA_ARGS__);			\
	} while (0)

static size_t clip_len(size_t len, size_t k)
{
	return len > (k ? k : 1) ? (k ? k : 1) : len;
}

ssize_t __real_writev(int fd, const struct iovec *iov, int n);
ssize_t __wrap_writev(int fd, const struct iovec *iov, int n);
ssize_t __wrap_writev(int fd, const struct iovec *iov, int n)
{
	const struct plan *p = step(FS_WRITEV);

	if (!p)
		return __real_writev(fd, iov, n);
	if (p->a == FS_FAIL)
		return fail(p);
	SHORT_IOV(__real_writev, fd, iov, n);
}

ssize_t __real_pwritev(int fd, const struct iovec *iov, int n, off_t off);
ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int n, off_t off);
ssize_t __wrap_pwritev(int fd, const struct iovec *iov, int n, off_t off)
{
	const struct plan *p = step(FS_PWRITEV);

	if (!p)
		return __real_pwritev(fd, iov, n, off);
	if (p->a == FS_FAIL)
		return fail(p);
	SHORT_IOV(__real_pwritev, fd, iov, n, off);
}

ssize_t __real_readv(int fd, const struct iovec *iov, int n);
ssize_t __wrap_readv(int fd, const struct iovec *iov, int n);
ssize_t __wrap_readv(int fd, const struct iovec *iov, int n)
{
	const struct plan *p = step(FS_READV);

	if (!p)
		return __real_readv(fd, iov, n);
	if (p->a == FS_FAIL)
		return fail(p);
	SHORT_IOV(__real_readv, fd, iov, n);
}

ssize_t __real_preadv(int fd, const struct iovec *iov, int n, off_t off);
ssize_t __wrap_preadv(int fd, const struct iovec *iov, int n, off_t off);
ssize_t __wrap_preadv(int fd, const struct iovec *iov, int n, off_t off)
{
	const struct plan *p = step(FS_PREADV);

	if (!p)
		return __real_preadv(fd, iov, n, off);
	if (p->a == FS_FAIL)
		return fail(p);
	SHORT_IOV(__real_preadv, fd, iov, n, off);
}

ssize_t __real_read(int fd, void *buf, size_t len);
ssize_t __wrap_read(int fd, void *buf, size_t len);
ssize_t __wrap_read(int fd, void *buf, size_t len)
{
	const struct plan *p = step(FS_READ);

	if (!p)
		return __real_read(fd, buf, len);
	if (p->a == FS_FAIL)
		return fail(p);
	return __real_read(fd, buf, clip_len(len, p->k));
}

ssize_t __real_pread(int fd, void *buf, size_t len, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off);
ssize_t __wrap_pread(int fd, void *buf, size_t len, off_t off)
{
	const struct plan *p = step(FS_PREAD);

	if (!p)
		return __real_pread(fd, buf, len, off);
	if (p->a == FS_FAIL)
		return fail(p);
	return __real_pread(fd, buf, clip_len(len, p->k), off);
}

ssize_t __real_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags);
ssize_t __wrap_recv(int fd, void *buf, size_t len, int flags)
{
	const struct plan *p = step(FS_RECV);

	if (!p)
		return __real_recv(fd, buf, len, flags);
	if (p->a == FS_FAIL)
		return fail(p);
	return __real_recv(fd, buf, clip_len(len, p->k), flags);
}

ssize_t __real_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
	const struct plan *p = step(FS_SENDMSG);
	struct iovec c[IOV_MAX];
	struct msghdr s;

	if (!p)
		return __real_sendmsg(fd, m, flags);
	if (p->a == FS_FAIL)
		return fail(p);
	s = *m;
	s.msg_iov = c;
	s.msg_iovlen = (size_t)clip(m->msg_iov, (int)m->msg_iovlen, p->k, c);
	return __real_sendmsg(fd, &s, flags);
}

int __real_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...);
int __wrap_open(const char *path, int flags, ...)
{
	const struct plan *p = step(FS_OPEN);
	mode_t mode = 0;

	if (flags & (O_CREAT | __O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, unsigned);
		va_end(ap);
	}
	if (p)
		return (int)fail(p);
	return __real_open(path, flags, mode);
}

int __real_fstat(int fd, struct stat *st);
int __wrap_fstat(int fd, struct stat *st);
int __wrap_fstat(int fd, struct stat *st)
{
	const struct plan *p = step(FS_FSTAT);

	return p ? (int)fail(p) : __real_fstat(fd, st);
}

int __real_statx(int dfd, const char *path, int flags, unsigned mask,
		 struct statx *st);
int __wrap_statx(int dfd, const char *path, int flags, unsigned mask,
		 struct statx *st);
int __wrap_statx(int dfd, const char *path, int flags, unsigned mask,
		 struct statx *st)
{
	const struct plan *p = step(FS_STATX);
	int ret;

	if (p)
		return (int)fail(p);
	ret = __real_statx(dfd, path, flags, mask, st);
	if (!ret && armed && (statx_mem || statx_off)) {
		st->stx_mask |= STATX_DIOALIGN;
		st->stx_dio_mem_align = statx_mem;
		st->stx_dio_offset_align = statx_off;
	}
	return ret;
}

int __real_fsync(int fd);
int __wrap_fsync(int fd);
int __wrap_fsync(int fd)
{
	const struct plan *p = step(FS_FSYNC);

	return p ? (int)fail(p) : __real_fsync(fd);
}

int __real_fdatasync(int fd);
int __wrap_fdatasync(int fd);
int __wrap_fdatasync(int fd)
{
	const struct plan *p = step(FS_FDATASYNC);

	return p ? (int)fail(p) : __real_fdatasync(fd);
}

int __real_sync_file_range(int fd, off_t off, off_t len, unsigned flags);
int __wrap_sync_file_range(int fd, off_t off, off_t len, unsigned flags);
int __wrap_sync_file_range(int fd, off_t off, off_t len, unsigned flags)
{
	const struct plan *p = step(FS_SYNC_FILE_RANGE);

	return p ? (int)fail(p) : __real_sync_file_range(fd, off, len, flags);
}

ssize_t __real_pwritev2(int fd, const struct iovec *iov, int n, off_t off,
			int flags);
ssize_t __wrap_pwritev2(int fd, const struct iovec *iov, int n, off_t off,
			int flags);
ssize_t __wrap_pwritev2(int fd, const struct iovec *iov, int n, off_t off,
			int flags)
{
	const struct plan *p = step(FS_PWRITEV2);

	if (!p)
		return __real_pwritev2(fd, iov, n, off, flags);
	if (p->a == FS_FAIL)
		return fail(p);
	SHORT_IOV(__real_pwritev2, fd, iov, n, off, flags);
}

int __real_close(int fd);
int __wrap_close(int fd);
int __wrap_close(int fd)
{
	const struct plan *p = step(FS_CLOSE);
	int ret = __real_close(fd);

	return p ? (int)fail(p) : ret;
}

int __real_poll(struct pollfd *fds, nfds_t n, int ms);
int __wrap_poll(struct pollfd *fds, nfds_t n, int ms);
int __wrap_poll(struct pollfd *fds, nfds_t n, int ms)
{
	const struct plan *p = step(FS_POLL);

	return p ? (int)fail(p) : __real_poll(fds, n, ms);
}

/* liburing reports -errno and never sets errno */
int __real_io_uring_submit(struct io_uring *ring);
int __wrap_io_uring_submit(struct io_uring *ring);
int __wrap_io_uring_submit(struct io_uring *ring)
{
	const struct plan *p = step(FS_URING_SUBMIT);

	return p ? -p->err : __real_io_uring_submit(ring);
}

int __real_io_uring_submit_and_wait_timeout(struct io_uring *ring,
					    struct io_uring_cqe **cqe,
					    unsigned wait,
					    struct __kernel_timespec *ts,
					    sigset_t *sigmask);
int __wrap_io_uring_submit_and_wait_timeout(struct io_uring *ring,
					    struct io_uring_cqe **cqe,
					    unsigned wait,
					    struct __kernel_timespec *ts,
					    sigset_t *sigmask);
int __wrap_io_uring_submit_and_wait_timeout(struct io_uring *ring,
					    struct io_uring_cqe **cqe,
					    unsigned wait,
					    struct __kernel_timespec *ts,
					    sigset_t *sigmask)
{
	const struct plan *p = step(FS_URING_SUBMIT_AND_WAIT_TIMEOUT);

	return p ? -p->err
		 : __real_io_uring_submit_and_wait_timeout(ring, cqe, wait,
							   ts, sigmask);
}

int __real_io_uring_enter(unsigned fd, unsigned submit, unsigned wait,
			  unsigned flags, sigset_t *sig);
int __wrap_io_uring_enter(unsigned fd, unsigned submit, unsigned wait,
			  unsigned flags, sigset_t *sig);
int __wrap_io_uring_enter(unsigned fd, unsigned submit, unsigned wait,
			  unsigned flags, sigset_t *sig)
{
	const struct plan *p = step(FS_URING_ENTER);

	return p ? -p->err
		 : __real_io_uring_enter(fd, submit, wait, flags, sig);
}

int __real_io_uring_queue_init_params(unsigned entries, struct io_uring *ring,
				      struct io_uring_params *ip);
int __wrap_io_uring_queue_init_params(unsigned entries, struct io_uring *ring,
				      struct io_uring_params *ip);
int __wrap_io_uring_queue_init_params(unsigned entries, struct io_uring *ring,
				      struct io_uring_params *ip)
{
	const struct plan *p = step(FS_URING_QUEUE_INIT_PARAMS);

	return p ? -p->err
		 : __real_io_uring_queue_init_params(entries, ring, ip);
}

int __real_io_uring_register_buf_ring(struct io_uring *ring,
				      struct io_uring_buf_reg *reg,
				      unsigned flags);
int __wrap_io_uring_register_buf_ring(struct io_uring *ring,
				      struct io_uring_buf_reg *reg,
				      unsigned flags);
int __wrap_io_uring_register_buf_ring(struct io_uring *ring,
				      struct io_uring_buf_reg *reg,
				      unsigned flags)
{
	const struct plan *p = step(FS_URING_REGISTER_BUF_RING);

	return p ? -p->err
		 : __real_io_uring_register_buf_ring(ring, reg, flags);
}

int __real_io_uring_register_buffers(struct io_uring *ring,
				     const struct iovec *iov, unsigned n);
int __wrap_io_uring_register_buffers(struct io_uring *ring,
				     const struct iovec *iov, unsigned n);
int __wrap_io_uring_register_buffers(struct io_uring *ring,
				     const struct iovec *iov, unsigned n)
{
	const struct plan *p = step(FS_URING_REGISTER_BUFFERS);

	return p ? -p->err : __real_io_uring_register_buffers(ring, iov, n);
}

struct io_uring_probe *__real_io_uring_get_probe_ring(struct io_uring *ring);
struct io_uring_probe *__wrap_io_uring_get_probe_ring(struct io_uring *ring);
struct io_uring_probe *__wrap_io_uring_get_probe_ring(struct io_uring *ring)
{
	const struct plan *p = step(FS_URING_GET_PROBE_RING);

	return p ? NULL : __real_io_uring_get_probe_ring(ring);
}

/*
 * The completion: a failure replaces the kernel's result, a short count
 * lowers a positive one (the library then resumes from there, which is
 * only harmless for requests at a file offset: the test's business).
 */
static int cqe_hook(struct io_uring_cqe *cqe, void *op_arg)
{
	const struct plan *p = step(FS_CQE);

	(void)op_arg;
	if (!p)
		return cqe->res;
	if (p->a == FS_FAIL)
		return -p->err;
	if (cqe->res > 0 && (size_t)cqe->res > (p->k ? p->k : 1))
		return (int)(p->k ? p->k : 1);
	return cqe->res;
}

void fs_cqe_hook(bool on)
{
	bl__uring_set_cqe_hook(on ? cqe_hook : NULL);
}
