/* SPDX-License-Identifier: MIT */
/*
 * uring.h - asynchronous scatter/gather of lists through io_uring.
 *
 * A struct bl_uring drives operations on lists: file writes and reads
 * (buffered or O_DIRECT), socket sends (plain or zero-copy) and receives
 * (into fresh raws or into a provided-buffer ring).  Every submission takes
 * its own references on the raws it covers, so the caller may clear or
 * reuse its list as soon as the submit call returns; the references are
 * dropped when the kernel is done with the memory (for zero-copy sends:
 * after the notification, not the completion).  Short transfers are resumed
 * by the library; a callback sees the whole result or an error.
 *
 * It can own its ring or attach to an application's struct io_uring so it
 * fits an existing event loop.  Where io_uring cannot be used (ENOSYS,
 * EPERM from seccomp, the io_uring_disabled sysctl; or the environment
 * sets BL_URING_FORCE_BLOCKING=1, e.g. under valgrind) the same API runs
 * on a blocking back end: operations on regular files and block devices
 * run to completion in the submit call; on sockets, pipes and other
 * descriptors they go as far as they can without blocking and then wait
 * for readiness in bl_uring_run() (poll), so a single-threaded
 * request/response loop cannot deadlock.  Callbacks always run from
 * bl_uring_run() (never inside a submit call), so callers see the same
 * order of events on both.  bl_uring_backend() says which one is in use.
 *
 * Writes at the file position (off -1) and sends keep their descriptor's
 * order, as write(2) and send(2) calls one after the other would: such an
 * operation starts only when the one submitted before it on the same
 * descriptor has ended (its short transfers resumed to the end), so the
 * bytes of each land whole and in submission order, and the callbacks run
 * in that order.  A write at the position and a send on one socket share
 * that queue.  Writes at an offset, reads and receives are not ordered:
 * they run at once, as many as are submitted.
 *
 * A pipe or socket whose reader went away fails a write or send with
 * -EPIPE; neither back end raises SIGPIPE (sends carry MSG_NOSIGNAL,
 * io_uring writes at the file position RWF_NOSIGNAL, the blocking back
 * end blocks SIGPIPE around such a write).  One exception: io_uring on
 * a kernel before 6.18 refuses RWF_NOSIGNAL, and a bl_uring_write() at
 * the file position to a pipe or socket whose reader is gone then raises
 * SIGPIPE in the ring's thread (at any of its later system calls).  Ignore
 * SIGPIPE, or send to sockets with bl_uring_send(), where that matters.
 *
 * A struct bl_uring belongs to the thread that created it: submit, run
 * and destroy from it, never from inside one of its callbacks (submitting
 * from a callback is fine).  Raws it handed out (received data) may be
 * released from any thread, unless that thread made its raws thread-local
 * (bl_raw_set_thread_local()): then they stay in it.  While
 * bl_uring_destroy() runs, submissions (from callbacks) fail with
 * -ECANCELED.
 */
#ifndef BUFFERLIST_URING_H
#define BUFFERLIST_URING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <bufferlist/common.h>
#include <bufferlist/list.h>
#include <bufferlist/io.h>	/* bl_fd_dio_align, bl_list_prepare_dio */

BL_BEGIN_DECLS

struct io_uring;
struct io_uring_cqe;
struct bl_uring;

enum bl_uring_backend {
	BL_URING_IO_URING = 1,
	BL_URING_BLOCKING = 2,
};

/**
 * struct bl_uring_params - creation options (NULL: all defaults).
 * @entries:        submission queue size (0: 256).
 * @flags:          io_uring_setup flags (IORING_SETUP_*).  With none of
 *                  SQPOLL, COOP_TASKRUN, TASKRUN_FLAG, SINGLE_ISSUER and
 *                  DEFER_TASKRUN among them, bl_uring_create() adds
 *                  COOP_TASKRUN | TASKRUN_FLAG (Linux 5.19; without them
 *                  on a kernel that refuses them): completion work waits
 *                  for the thread's next system call instead of
 *                  interrupting it.  A program that reaps the ring itself
 *                  (bl_uring_ring) enters the kernel when the SQ ring
 *                  flags say IORING_SQ_TASKRUN, as liburing's waits do.
 *                  The work runs on the thread that submitted the
 *                  operation: a ring handed to another thread gets the
 *                  completions of the first thread's operations only once
 *                  that thread enters the kernel or its time slice ends,
 *                  so hand a ring over when nothing it submitted is in
 *                  flight, or pass flags of your own.
 * @force_blocking: use the blocking back end even where io_uring works.
 * @single_issuer:  the ring is used by the creating thread only: every
 *                  submission, bl_uring_run() and bl_uring_destroy() on
 *                  it come from that thread, and no other thread polls
 *                  or waits on its fd.  The ring is then made with
 *                  SINGLE_ISSUER | DEFER_TASKRUN (Linux 6.1; else as
 *                  without), so completion work runs in batches inside
 *                  that thread's waits.  A call from another thread fails
 *                  (-EEXIST), and poll() on bl_uring_ring()'s fd does not
 *                  see completions (bl_msgr_server_poll() allows for it).
 *                  Ignored when @flags chose as above.  (A
 *                  bl_uring_destroy() from another thread cannot reach
 *                  what is in flight on such a ring: it runs the pending
 *                  callbacks with -ECANCELED, closes the ring unless it
 *                  is attached, and keeps the rest allocated for good,
 *                  since the kernel may still use it.)
 * @zc_threshold:   sends of at least this many bytes use zero copy
 *                  (0: the library's measured default, 16 KiB; SIZE_MAX:
 *                  never).  A socket on which the kernel reports that it
 *                  copied anyway (loopback) or refused (AF_UNIX) is sent
 *                  to by copy, with one zero-copy try every 1024 sends.
 * @spin_us:        before a bl_uring_run() sleeps in the kernel, it
 *                  watches the completion queue for up to this many
 *                  microseconds (0: the default, 50; UINT_MAX: never;
 *                  at most 1000000, and never past the run's timeout),
 *                  entering the kernel only when completion work is due.
 *                  A sleep and its wake-up cost more than that on most
 *                  machines, so a request/response exchange whose answer
 *                  comes within the window runs without either.  Only
 *                  while an answer is due: two callbacks for each
 *                  request the ring issued (its own, then the answer),
 *                  one for each bl_uring_expect_answer() (the messenger's
 *                  direct sends), and after a pooled receive filled half
 *                  its buffer or more, the next chunk.  A thread that
 *                  only drains, through a multishot receive, a stream it
 *                  keeps up with sleeps, and takes more per wake-up.
 *                  Adaptive: when those waits keep outlasting the
 *                  window, spinning stops for a growing number of them
 *                  (up to 64) and is tried again after them.  Not on an
 *                  attached ring, not while
 *                  submissions wait in the SQ (the wait submits them), and
 *                  not on a ring that must enter the kernel for every look
 *                  (the caller's DEFER_TASKRUN or COOP_TASKRUN without
 *                  TASKRUN_FLAG).  The spinning counts as the thread's
 *                  CPU time.
 */
struct bl_uring_params {
	unsigned entries;
	unsigned flags;
	bool force_blocking;
	bool single_issuer;
	size_t zc_threshold;
	unsigned spin_us;
};

/**
 * bl_uring_create() - a ring of its own.
 * Return: new, or NULL with errno ENOMEM when memory runs out.  A ring
 * that io_uring refuses falls back to the blocking back end instead of
 * failing (after trying again without the flags the library chose, when
 * the kernel says EINVAL).
 */
BL_API struct bl_uring *bl_uring_create(const struct bl_uring_params *p);

/**
 * bl_uring_attach() - drive operations through the application's @ring
 * (borrowed: it must outlive the bl_uring).  The application reaps its own
 * completions and passes each to bl_uring_handle_cqe(); user_data values
 * of the application's own requests must have bit 0 clear.
 * Return: new, or NULL with errno set: EINVAL (@ring is NULL), ENOMEM.
 */
BL_API struct bl_uring *bl_uring_attach(struct io_uring *ring,
					const struct bl_uring_params *p);

/**
 * bl_uring_destroy() - cancels what is in flight, waits for the kernel to
 * let go of every buffer (including zero-copy notifications), calls the
 * pending callbacks with -ECANCELED (or their real result if they finished
 * first), drops every reference and frees @u, together with the buffer
 * rings and the registered pool of @u that were not destroyed before (it
 * owns them: their handles are invalid afterwards; buffers still lent out
 * as raws stay valid until released).  NULL is a no-op.
 * One wait is bounded: a zero-copy send's notification comes only once the
 * peer has taken the bytes, which a peer that stopped reading never does.
 * When no notification arrives for two seconds (checked once a second),
 * an own ring (not an attached one) stops waiting for the sends whose
 * callbacks already ran:
 * their references are never dropped (the kernel may still read that
 * memory), so each such send keeps its buffers allocated for the life of
 * the process.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_uring_destroy(struct bl_uring *u);

/**
 * bl_uring_backend() - which back end @u runs on.
 * Return: BL_URING_IO_URING or BL_URING_BLOCKING.
 */
BL_API enum bl_uring_backend bl_uring_backend(const struct bl_uring *u);

/**
 * bl_uring_backend_reason() - why the blocking back end is in use.
 * Return: a message (borrowed, valid while @u lives), or "" on io_uring.
 */
BL_API const char *bl_uring_backend_reason(const struct bl_uring *u);

/**
 * bl_uring_ring() - the ring @u submits to.
 * Return: the ring (borrowed), or NULL on the blocking back end.
 */
BL_API struct io_uring *bl_uring_ring(struct bl_uring *u);

/**
 * bl_uring_cb - a completion.  Every submission takes one; NULL makes it
 * fire and forget: the operation runs all the same, and what it would
 * have passed (the result, received data) is dropped when it ends.
 * @arg:  the caller's pointer.
 * @res:  bytes transferred (all that was asked, or fewer only at end of
 *        file / when the peer closed), or -errno.
 * @data: for reads and receives, the bytes received: the callback may take
 *        them (bl_list_claim_append, bl_list_swap); what it leaves is
 *        released after it returns.  An empty list, never NULL, when @res
 *        is 0 or -errno (a read that fails after part of it arrived drops
 *        that part).  NULL for writes and sends.  The same on both back
 *        ends.
 */
typedef void (*bl_uring_cb)(void *arg, ssize_t res, struct bl_list *data);

/**
 * bl_uring_write() - writes all of @l at file offset @off (-1: at the
 * file's position, as write(2)).  Shares @l's segments (one reference per
 * segment, no copy); @l may change right after the call.  Lists of more
 * than IOV_MAX segments go out as several requests.  A single slice of a
 * registered raw uses WRITE_FIXED.  At the file position it waits for
 * the writes and sends submitted before it on @fd (see the top of this
 * file).  A pipe or socket whose reader is gone gives -EPIPE (SIGPIPE:
 * see the top of this file too).
 * @cb: called once from bl_uring_run(); NULL: fire and forget.
 * Return: 0 (the callback will run), or, with nothing submitted: -EINVAL
 * (@u or @l is NULL), -ENOMEM, -EBUSY (queue full even after submitting),
 * -ECANCELED (bl_uring_destroy() is running).
 */
BL_API int bl_uring_write(struct bl_uring *u, int fd, off_t off,
			  const struct bl_list *l, bl_uring_cb cb, void *arg);

/**
 * bl_uring_read() - reads @len bytes at file offset @off (-1: at the
 * file's position, as read(2), which it advances; reads are not ordered
 * against each other, so keep one at the position in flight per
 * descriptor) into new raws whose data is aligned to @align (0: 64; pass
 * the O_DIRECT memory alignment for such files).  The callback gets the
 * list (new: it may take it); short only at end of file.  A read
 * that fits a free buffer of the ring's registered pool reads into it
 * with READ_FIXED.
 * @cb: called once from bl_uring_run(); NULL: fire and forget (the bytes
 * read are released).
 * Return: 0, -ENOMEM, -EBUSY, -ECANCELED (as bl_uring_write()), or
 * -EINVAL (@u is NULL, or @align not a power of two).
 */
BL_API int bl_uring_read(struct bl_uring *u, int fd, off_t off, size_t len,
			 size_t align, bl_uring_cb cb, void *arg);

/**
 * bl_uring_send() - sends all of @l on a stream socket (SENDMSG, or
 * SENDMSG_ZC at or above the zero-copy threshold; the raws stay referenced
 * until the kernel's notification; the callback may run before that).
 * Shares @l's segments, as bl_uring_write().  It starts when the sends
 * (and writes at the position) submitted before it on @fd have ended, so
 * the stream carries each whole and in submission order.
 * @flags: MSG_* for sendmsg; MSG_NOSIGNAL is always added.
 * @cb: called once from bl_uring_run(); NULL: fire and forget.
 * Return: 0, or -EINVAL (@u or @l is NULL), -ENOMEM, -EBUSY or -ECANCELED
 * (as bl_uring_write()).
 */
BL_API int bl_uring_send(struct bl_uring *u, int fd, const struct bl_list *l,
			 int flags, bl_uring_cb cb, void *arg);

/**
 * bl_uring_recv() - receives up to @len bytes (one recv; fewer is normal)
 * into a new raw.  res 0 means the peer closed.
 * @cb: called once from bl_uring_run(); NULL: fire and forget (the bytes
 * received are released).
 * Return: 0, or -EINVAL (@u is NULL), -ENOMEM, -EBUSY or -ECANCELED (as
 * bl_uring_write()).
 */
BL_API int bl_uring_recv(struct bl_uring *u, int fd, size_t len,
			 bl_uring_cb cb, void *arg);

/* ---- durability and control: per-operation options, syncs, cancel, timers */

/* bl_uring_opts.sync: a sync linked behind a write (IOSQE_IO_LINK) */
#define BL_URING_SYNC_NONE 0u
#define BL_URING_SYNC_FSYNC 1u		/* fsync(2) of the descriptor */
#define BL_URING_SYNC_FDATASYNC 2u	/* fdatasync(2) of the descriptor */

/* bl_uring_fsync() @flags: fdatasync, not fsync (IORING_FSYNC_DATASYNC) */
#define BL_URING_FSYNC_DATASYNC 1u

/**
 * struct bl_uring_opts - options of one operation (NULL: none), for the
 * _opts submissions, bl_uring_fsync(), bl_uring_sync_range() and
 * bl_uring_timer().  Zeroed, it asks for nothing.
 * @rw_flags:   writes only: RWF_DSYNC, RWF_SYNC, RWF_NOWAIT (pwritev2(2);
 *              io_uring's rw_flags), for every request of the write: with
 *              RWF_DSYNC or RWF_SYNC the write is durable when its callback
 *              runs, with RWF_NOWAIT a write that would block ends with
 *              -EAGAIN instead of waiting (not retried).
 * @sync:       writes only: BL_URING_SYNC_FSYNC or BL_URING_SYNC_FDATASYNC
 *              runs that sync of the descriptor after the write, linked to
 *              it (one submission): the callback gets the write's result
 *              once the sync succeeded, or the sync's -errno, or the
 *              write's own error (the sync then does not run).  A short
 *              write is resumed and its sync issued again behind the
 *              last piece.  On an empty list, only the sync runs.
 * @timeout_ms: the operation ends with -ETIME when it has not ended this
 *              many milliseconds after the submission (io_uring:
 *              IORING_OP_LINK_TIMEOUT behind each request, at one
 *              absolute deadline; blocking back end: checked while the
 *              operation waits for its descriptor, so a file operation,
 *              which ends in the submit call there, never times out).
 *              One waiting its turn on its descriptor is bounded once it
 *              starts, by what is left of its time; with a linked sync
 *              the time bounds the write, not the sync.  What the
 *              operation held is released as on any other end.
 *              0: none.  Not for bl_uring_timer().
 * @id:         set by a submission that returns 0: the operation's id for
 *              bl_uring_cancel(), unique for the life of the ring (never
 *              0).  Input ignored.
 */
struct bl_uring_opts {
	int rw_flags;
	unsigned sync;
	unsigned timeout_ms;
	uint64_t id;
};

/**
 * bl_uring_write_opts() - bl_uring_write() with per-operation options
 * (@o may be NULL: then exactly bl_uring_write()).  Ownership as
 * bl_uring_write() (shares @l's segments); @o is borrowed for the call
 * only (its id is written).
 * Return: 0 (the callback will run), or, with nothing submitted: those of
 * bl_uring_write(), and -EINVAL for options it does not know (rw_flags
 * other than RWF_DSYNC, RWF_SYNC and RWF_NOWAIT, or a sync other than the
 * BL_URING_SYNC_* values).
 */
BL_API int bl_uring_write_opts(struct bl_uring *u, int fd, off_t off,
			       const struct bl_list *l,
			       struct bl_uring_opts *o, bl_uring_cb cb,
			       void *arg);

/**
 * bl_uring_read_opts() - bl_uring_read() with options (@o: NULL or only
 * @timeout_ms; borrowed for the call, its id written).
 * Return: those of bl_uring_read(), and -EINVAL when @o asks for
 * rw_flags or a sync.
 */
BL_API int bl_uring_read_opts(struct bl_uring *u, int fd, off_t off,
			      size_t len, size_t align,
			      struct bl_uring_opts *o, bl_uring_cb cb,
			      void *arg);

/**
 * bl_uring_send_opts() - bl_uring_send() with options (@o: NULL or only
 * @timeout_ms; borrowed for the call, its id written).  The timeout
 * counts from the submission; a send waiting for those before it on @fd
 * is bounded once it starts (struct bl_uring_opts).  A send that timed
 * out or was cancelled part way leaves part of its bytes in the stream.
 * Return: those of bl_uring_send(), and -EINVAL when @o asks for
 * rw_flags or a sync.
 */
BL_API int bl_uring_send_opts(struct bl_uring *u, int fd,
			      const struct bl_list *l, int flags,
			      struct bl_uring_opts *o, bl_uring_cb cb,
			      void *arg);

/**
 * bl_uring_recv_opts() - bl_uring_recv() with options (@o: NULL or only
 * @timeout_ms; borrowed for the call, its id written).  A receive that
 * times out has taken no byte off the socket.
 * Return: those of bl_uring_recv(), and -EINVAL when @o asks for
 * rw_flags or a sync.
 */
BL_API int bl_uring_recv_opts(struct bl_uring *u, int fd, size_t len,
			      struct bl_uring_opts *o, bl_uring_cb cb,
			      void *arg);

/**
 * bl_uring_fsync() - fsync(2) of @fd, or fdatasync(2) with
 * BL_URING_FSYNC_DATASYNC in @flags, as a ring operation (IORING_OP_FSYNC;
 * the blocking back end calls it in the submit call).  It covers the
 * writes whose callbacks ran before it was submitted; to sync behind one
 * write, link it (bl_uring_opts.sync).  The callback gets 0 or -errno
 * (-EINVAL: @fd cannot be synced, such as a pipe or socket; -EBADF, -EIO,
 * -ENOSPC...); its data is NULL.
 * @o: NULL, or options (only @timeout_ms; borrowed, its id written).
 * Return: 0, or, with nothing submitted: -EINVAL (@u NULL, unknown
 * @flags, @o with rw_flags or a sync), -ENOMEM, -EBUSY, -ECANCELED (as
 * bl_uring_write()).
 */
BL_API int bl_uring_fsync(struct bl_uring *u, int fd, unsigned flags,
			  struct bl_uring_opts *o, bl_uring_cb cb, void *arg);

/**
 * bl_uring_sync_range() - sync_file_range(2) of @len bytes of @fd at
 * @off (@len 0: to the end of the file) with its SYNC_FILE_RANGE_* @flags,
 * as a ring operation (IORING_OP_SYNC_FILE_RANGE).  Like the system call
 * it writes data out but is no durability promise (no metadata, no device
 * cache flush): what a daemon uses to start write-back early.  The
 * callback gets 0 or -errno (-ESPIPE: not a file, directory or block
 * device, such as a pipe; -EBADF, -EIO...); its data is NULL.
 * @o: NULL, or options (only @timeout_ms; borrowed, its id written).
 * Return: 0, or, with nothing submitted: -EINVAL (@u NULL, @off or @len
 * negative, @len above 4 GiB - 1 (a request's length is 32 bits), unknown
 * @flags, @o with rw_flags or a sync), -ENOMEM, -EBUSY, -ECANCELED (as
 * bl_uring_write()).
 */
BL_API int bl_uring_sync_range(struct bl_uring *u, int fd, off_t off,
			       off_t len, unsigned flags,
			       struct bl_uring_opts *o, bl_uring_cb cb,
			       void *arg);

/**
 * bl_uring_timer() - @cb runs from bl_uring_run() @ms milliseconds from
 * now (IORING_OP_TIMEOUT; on the blocking back end, bl_uring_run()'s
 * waits end in time for it), with res 0; or with -ECANCELED when it was
 * cancelled (bl_uring_cancel(), bl_uring_destroy(): destroy runs every
 * pending timer's callback).  It counts as in flight, so a
 * bl_uring_run(u, 1, -1) waits for it.  Its data is NULL.
 * @o: NULL, or options of which only the id (written) applies.
 * Return: 0, or, with nothing set: -EINVAL (@u NULL, @o with rw_flags, a
 * sync or a timeout), -ENOMEM, -EBUSY, -ECANCELED (as bl_uring_write()).
 */
BL_API int bl_uring_timer(struct bl_uring *u, unsigned ms,
			  struct bl_uring_opts *o, bl_uring_cb cb, void *arg);

/**
 * bl_uring_cancel() - asks the operation whose id a submission wrote in
 * its bl_uring_opts to end: its callback then runs from bl_uring_run()
 * with -ECANCELED, or with its own result if it ended first (a file
 * write the kernel already runs is not stopped); every reference it held
 * is dropped as usual.  One waiting its turn on its descriptor, or not
 * yet issued, ends at once.  A linked write and sync ends as one.
 * Return: 0 (asked), -ENOENT (no such operation in flight: unknown id, or
 * its callback ran or is queued to run), -EINVAL (@u NULL or @id 0),
 * -ECANCELED (bl_uring_destroy() is running), or -EBUSY (no room to ask
 * the kernel even after submitting; try again after bl_uring_run()).
 */
BL_API int bl_uring_cancel(struct bl_uring *u, uint64_t id);

/* ---- pooled receive: a provided-buffer ring whose buffers become raws ---- */

struct bl_uring_bufring;

/**
 * bl_uring_bufring_create() - @nbufs (a power of two) buffers of
 * @buf_size bytes registered as buffer group @bgid.  A received chunk
 * becomes a slice of its buffer's raw; the buffer goes back to the ring
 * when the last reference to it is dropped, from whatever thread (only
 * from the ring's, if that thread made its raws thread-local).
 * Owned by @u: bl_uring_bufring_destroy() frees it early, else
 * bl_uring_destroy() does (never call the former after the latter).
 * Return: new, or NULL with errno set: EINVAL (@u is NULL, @nbufs is not
 * a power of two or above 32768, @buf_size is 0 or above 4 GiB - 1),
 * ECANCELED (@u is being destroyed), ENOMEM, or the kernel's error for
 * the registration (EEXIST: @bgid is taken on this ring; EINVAL: the
 * kernel has no provided-buffer rings).
 */
BL_API struct bl_uring_bufring *
bl_uring_bufring_create(struct bl_uring *u, unsigned nbufs, size_t buf_size,
			unsigned short bgid);

/**
 * bl_uring_bufring_available() - buffers the kernel can fill right now
 * (counting those released on other threads, which the ring's thread puts
 * back before it next arms or reaps).
 * Return: that count, at most nbufs.
 */
BL_API unsigned bl_uring_bufring_available(const struct bl_uring_bufring *br);

/**
 * bl_uring_bufring_destroy() - unregisters the ring and frees @br (takes
 * it); buffers still held by slices stay valid until released.  Call after
 * the receives using it have finished or been cancelled, and before the
 * ring's bl_uring_destroy(), which destroys what is left.  NULL is a
 * no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_uring_bufring_destroy(struct bl_uring_bufring *br);

/**
 * bl_uring_recv_cb - a pooled receive's completion.
 * @res:  bytes in @data, 0 when the peer closed, or -errno (-ENOBUFS when
 *        the ring ran dry, which ends a multishot receive).
 * @data: a slice of a ring buffer (zero copy); take it or leave it.
 * @more: true when further completions of this receive will follow.
 */
typedef void (*bl_uring_recv_cb)(void *arg, ssize_t res,
				 struct bl_list *data, bool more);

/**
 * bl_uring_recv_pooled() - receives into @br's buffers (borrowed: the
 * receive pins it until its last callback): one completion (single shot)
 * or one per arriving chunk until error, EOF or cancel (@multishot, where
 * the kernel supports it; else re-armed by the library).  Each chunk is
 * a new slice of a ring buffer that the callback may take.
 * @cb: called from bl_uring_run() for every chunk and the end; NULL: fire
 * and forget (the chunks go back to @br at once).
 * Return: 0, -ENOMEM, -EBUSY, -ECANCELED (as bl_uring_write()), or
 * -EINVAL (@u or @br is NULL, or @br belongs to another ring).
 */
BL_API int bl_uring_recv_pooled(struct bl_uring *u, int fd,
				struct bl_uring_bufring *br, bool multishot,
				bl_uring_recv_cb cb, void *arg);

/**
 * bl_list_detach_pooled() - copies out every segment of @l that lies in a
 * ring buffer, so that data kept for long does not starve the ring.
 * Neighbouring such segments share one new raw, allocated in @l's pool
 * (bl_list_set_pool()); the other segments stay shared.  A list with no
 * ring segment is left exactly as it is (no allocation).
 * Return: bytes copied, or -ENOMEM with @l unchanged.
 */
BL_API ssize_t bl_list_detach_pooled(struct bl_list *l);

/* ---- registered buffers ----------------------------------------------- */

struct bl_uring_regpool;

/**
 * bl_uring_regpool_create() - @nbufs buffers of @buf_size bytes (page
 * aligned) registered with io_uring_register_buffers; raws taken from it
 * know their buffer index, and single-slice reads and writes of them use
 * READ_FIXED / WRITE_FIXED.  One per ring (the kernel keeps one table).
 * Owned by @u: bl_uring_regpool_destroy() frees it early, else
 * bl_uring_destroy() does (never call the former after the latter).
 * Return: new, or NULL with errno set: EINVAL (@u is NULL, @nbufs is 0 or
 * above 16384, @buf_size is 0 or above 1 GiB), EEXIST (@u has one
 * already), ECANCELED (@u is being destroyed), ENOMEM, or the kernel's
 * error for the registration (such as ENOMEM past RLIMIT_MEMLOCK).
 */
BL_API struct bl_uring_regpool *
bl_uring_regpool_create(struct bl_uring *u, unsigned nbufs, size_t buf_size);

/**
 * bl_uring_regpool_get() - a free buffer as a new raw (one reference) of
 * buf_size bytes; it returns to the pool when released.
 * Return: the raw, or NULL with errno set: ENOBUFS (all are in use),
 * ENOMEM, EINVAL (@p is NULL).
 */
BL_API struct bl_raw *bl_uring_regpool_get(struct bl_uring_regpool *p);

/**
 * bl_uring_regpool_destroy() - unregisters and frees @p (takes it); raws
 * still out stay valid until released.  Call before the ring's
 * bl_uring_destroy(), which destroys a pool still there.  NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_uring_regpool_destroy(struct bl_uring_regpool *p);

/**
 * bl_raw_buf_index() - where @r sits in the kernel's registered table.
 * Return: the buffer index, or -1 (@r is NULL, not a registered pool's
 * buffer, or its pool was unregistered).
 */
BL_API int bl_raw_buf_index(const struct bl_raw *r);

/* ---- driving ------------------------------------------------------------ */

/**
 * bl_uring_submit() - submits what is queued.
 * Return: SQEs submitted (0 on the blocking back end), or -errno from
 * io_uring_enter(2) (-EBUSY, -EAGAIN, -EINTR, -EBADR, -EBADF, -EFAULT,
 * -EINVAL, ...).
 */
BL_API int bl_uring_submit(struct bl_uring *u);

/**
 * bl_uring_run() - submits, then reaps completions and runs callbacks
 * until at least @min_complete operations finished or @timeout_ms passed
 * (-1: no limit; 0: only what is ready).  @min_complete 0 never waits,
 * whatever @timeout_ms: it handles what is ready (the blocking back end
 * polls its waiting descriptors without a timeout and advances those that
 * are ready) and returns, so a loop calling it makes progress on both.
 * Callbacks count one each (every chunk of a multishot receive).  With
 * nothing in flight it returns at once, unless zero-copy sends still wait
 * for their notifications (then it waits for those).  On an attached ring
 * it handles only the library's CQEs and leaves the application's in the
 * queue, in order.
 * Return: operations completed, or -errno: -EDEADLK when called from one
 * of @u's callbacks (or while it is destroyed), else an error of
 * io_uring_enter(2) (-EBUSY, -EAGAIN, -EBADR, -EBADF, -EFAULT, -EINVAL,
 * ...) or, on the blocking back end, of poll(2) (-ENOMEM, -EFAULT);
 * EINTR and ETIME are not errors: it returns the count.
 */
BL_API int bl_uring_run(struct bl_uring *u, unsigned min_complete,
			int timeout_ms);

/**
 * bl_uring_handle_cqe() - for attached rings: handles @cqe if it belongs to
 * the library (runs callbacks, resubmits short transfers).  The caller
 * still marks it seen.  Return: 1 if it was ours, 0 if not.
 */
BL_API int bl_uring_handle_cqe(struct bl_uring *u, struct io_uring_cqe *cqe);

/**
 * bl_uring_inflight() - operations submitted whose final callback has not
 * run yet, on both back ends alike: one that ended but whose callback
 * waits for bl_uring_run() counts (the blocking back end ends file
 * operations in the submit call; io_uring's may sit in the completion
 * queue), and so does one waiting its turn on its descriptor.
 * Return: that count (zero-copy sends whose callback ran but whose
 * notification is due excluded).
 */
BL_API unsigned bl_uring_inflight(const struct bl_uring *u);

/**
 * bl_uring_expect_answer() - the caller just started something outside
 * the ring whose answer the ring will bring: a request written to a
 * socket with send(2) or write(2) while a receive on it is armed.  One
 * more callback is then due, and the waits of bl_uring_run() until it
 * runs may spin (bl_uring_params spin_us), as after a request the ring
 * issued itself; otherwise a thread whose receive is a multishot one
 * would sleep at once.  A hint: nothing else changes.  From @u's thread,
 * as bl_uring_run().  NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_uring_expect_answer(struct bl_uring *u);

/* ---- one operation, waited for ------------------------------------------ */

/*
 * For a program that does one operation at a time: each submits through
 * the functions above with a callback of its own and runs @u
 * (bl_uring_run) until that callback ran.  Other operations in flight on
 * @u complete meanwhile as usual: their callbacks run from inside the
 * call.  Not from a callback of @u (-EDEADLK: the ring cannot be run
 * there).  Should running the ring fail, its error is returned and the
 * operation, already submitted, still completes later, unseen.
 */

/**
 * bl_uring_write_wait() - bl_uring_write() of all of @l (borrowed; shared
 * with the kernel, no copy) at file offset @off (-1: the file position),
 * and waits for it.
 * Return: bytes written (the length of @l), or -errno: -EINVAL (@u or @l
 * is NULL), -EDEADLK (called from a callback of @u), those of
 * bl_uring_write() (-ENOMEM, -EBUSY, -ECANCELED), the write's own error
 * (-EBADF, -EIO, -ENOSPC, -EPIPE, -EINVAL for O_DIRECT misalignment,
 * ...), or an error of bl_uring_run().
 */
BL_API ssize_t bl_uring_write_wait(struct bl_uring *u, int fd, off_t off,
				   const struct bl_list *l);

/**
 * bl_uring_read_wait() - bl_uring_read() of @len bytes at @off into new
 * raws aligned to @align (0: 64), waits for it, and appends the bytes to
 * @out (moved in: no copy).
 * Return: bytes read (fewer than @len only at end of file), or -errno:
 * -EINVAL (@u or @out is NULL, @align not a power of two), -EDEADLK (called
 * from a callback of @u), those of bl_uring_read() (-ENOMEM, -EBUSY,
 * -ECANCELED), the read's own error, -ENOMEM when @out could not take the
 * bytes, or an error of bl_uring_run().  On failure @out is unchanged.
 */
BL_API ssize_t bl_uring_read_wait(struct bl_uring *u, int fd, off_t off,
				  size_t len, size_t align,
				  struct bl_list *out);

BL_END_DECLS

#endif /* BUFFERLIST_URING_H */
