/* SPDX-License-Identifier: MIT */
/*
 * msgr.h - framed messages over a stream socket.
 *
 * Three layers, each usable without the next:
 *
 *  1. A frame codec: pure functions over lists, no sockets.
 *     bl_msgr_encode() appends a frame whose payload is shared (no copy);
 *     bl_msgr_parse() takes one frame off the front of a receive list and
 *     hands back its payload as shared slices of the received raws.
 *  2. A connection (struct bl_msgr_conn) over a socket, driven by a
 *     struct bl_uring on either of its back ends: sends go out with
 *     SENDMSG (SENDMSG_ZC above the ring's zero-copy threshold), one
 *     send in flight with the frames queued meanwhile batched into the
 *     next; receives land in a provided-buffer ring (pooled receive) and
 *     are parsed in place; large payloads are read straight into a raw of
 *     their own, page-aligned on request so that a storage server can
 *     write them with O_DIRECT without another copy (what Ceph's msgr2
 *     aligns its data segments for).
 *  3. A server helper (struct bl_msgr_server) that accepts connections on
 *     a listening socket and gives each the same callbacks.  A connection
 *     that sends a malformed frame is reset, with the reason logged; the
 *     others keep going.
 *
 * Wire format (all integers little-endian):
 *
 *   offset size  field
 *   0      4     magic        BL_MSGR_MAGIC ("BLM1")
 *   4      2     type         the application's
 *   6      2     flags        the application's (the library defines none)
 *   8      8     seq          sequence number (a connection counts from 1)
 *   16     4     payload_len  at most BL_MSGR_PAYLOAD_LIMIT
 *   20     4     header crc   crc32c of bytes 0..19
 *   24     len   payload
 *   24+len 4     payload crc  crc32c of the payload
 *
 * Both crcs use Ceph's crc32c convention (no inversion, bl_crc32c) with
 * seed BL_MSGR_CRC_SEED, as msgr2 seeds its crcs with -1.  The header
 * carries its own crc so that a corrupt length is rejected as soon as the
 * 24-byte preamble is in, before anyone waits for (or allocates) the
 * payload it claims.
 *
 * Threads: the codec functions touch only their arguments (and a
 * thread-local error string).  A connection
 * and a server belong to the thread that runs their bl_uring; the payloads
 * they hand out (shared slices of received raws) may go to any thread,
 * unless that thread made its raws thread-local (bl_raw_set_thread_local()):
 * then they stay in it, and a copy (bl_list_copy_shared()) goes instead.
 */
#ifndef BUFFERLIST_MSGR_H
#define BUFFERLIST_MSGR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <bufferlist/common.h>
#include <bufferlist/list.h>

BL_BEGIN_DECLS

#define BL_MSGR_MAGIC 0x314d4c42u	/* "BLM1" as stored */
#define BL_MSGR_PREAMBLE 24		/* bytes before the payload */
#define BL_MSGR_TRAILER 4		/* bytes after it */
#define BL_MSGR_OVERHEAD (BL_MSGR_PREAMBLE + BL_MSGR_TRAILER)
#define BL_MSGR_CRC_SEED 0xffffffffu
/* A length above this is impossible (-EBADMSG), whatever the caller allows. */
#define BL_MSGR_PAYLOAD_LIMIT 0x7fffffffu
/* What max_payload 0 means. */
#define BL_MSGR_DEFAULT_MAX_PAYLOAD ((size_t)64 << 20)
/* What max_out_bytes 0 means. */
#define BL_MSGR_DEFAULT_MAX_OUT ((size_t)16 << 20)
/* What header_timeout_ms 0 means. */
#define BL_MSGR_DEFAULT_HEADER_TIMEOUT_MS 10000u

/* Encode options: bits above the 16 wire flags of bl_msgr_encode(). */
#define BL_MSGR_ENC_COPY (1u << 16)	/* copy the payload, not share it */

/* ---- 1. the frame codec ------------------------------------------------- */

/**
 * struct bl_msgr_frame - one parsed frame.
 * @type, @flags, @seq: from the preamble.
 * @payload: the payload bytes as shared slices of the raws they arrived
 *           in (no copy).  Whoever holds the frame owns this list: take
 *           it (bl_list_claim_append, bl_list_swap) or release it with
 *           bl_msgr_frame_release().
 */
struct bl_msgr_frame {
	uint16_t type;
	uint16_t flags;
	uint64_t seq;
	struct bl_list payload;
};

/**
 * bl_msgr_frame_init() - an empty frame.  No allocation.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_msgr_frame_init(struct bl_msgr_frame *f);

/**
 * bl_msgr_frame_release() - drops the payload's references; @f is empty.
 * NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_msgr_frame_release(struct bl_msgr_frame *f);

/**
 * bl_msgr_encode() - appends one frame to @out: the preamble and the
 * payload crc are copied into @out's append buffer (28 bytes), the payload
 * is shared (one reference per segment, no copy), unless @flags has
 * BL_MSGR_ENC_COPY, which copies it (worth it for payloads of a few
 * hundred bytes, where an iovec costs more than the bytes it points at).
 * @payload: borrowed; NULL or empty for none.  Its crc is taken with
 *           bl_list_crc32c(), so a payload sent again costs O(segments).
 * @flags:   the frame's 16 wire flags, or'ed with BL_MSGR_ENC_* options.
 * Return: 0; -E2BIG when the payload is longer than BL_MSGR_PAYLOAD_LIMIT;
 * -EINVAL for unknown option bits, a NULL @out or @payload being @out;
 * -ENOMEM.  On failure @out is unchanged, its append buffer included.
 */
BL_API int bl_msgr_encode(struct bl_list *out, uint16_t type, uint64_t seq,
			  const struct bl_list *payload, unsigned flags);

/**
 * bl_msgr_parse() - takes one complete frame off the front of @in.
 * @f:           output only (what it held is not released); filled only
 *               when 1 is returned: its payload list is new and holds
 *               shared slices of @in's raws (no payload byte is copied,
 *               the counters of bl_stats_thread() do not move).
 * @max_payload: longest payload accepted; 0 means
 *               BL_MSGR_DEFAULT_MAX_PAYLOAD.
 *
 * Checks in this order, each as soon as the bytes it needs are in @in:
 * magic, header crc, length (impossible, then over @max_payload), payload
 * crc.  So garbage is rejected from its first 4 bytes and a bad length
 * before its payload arrives.
 *
 * Return: 1 and the frame removed from @in; 0 when @in holds only part of
 * a frame (nothing changed: call again with more bytes appended);
 * -EBADMSG (bad magic, bad crc, length above BL_MSGR_PAYLOAD_LIMIT);
 * -E2BIG (length above @max_payload); -ENOMEM (only when the payload spans
 * more segments than fit a list's inline slots).  On any return but 1,
 * @in and @f are unchanged.
 */
BL_API int bl_msgr_parse(struct bl_list *in, struct bl_msgr_frame *f,
			 size_t max_payload);

/**
 * bl_msgr_parse_error() - the reason behind bl_msgr_parse()'s last
 * failure on this thread.
 * Return: a short static string ("bad magic", "bad header crc", ...),
 * borrowed, never NULL; it cannot fail.
 */
BL_API const char *bl_msgr_parse_error(void);

/* ---- 2. connections ------------------------------------------------------ */

struct bl_uring;
struct bl_uring_bufring;
struct bl_msgr_conn;

/**
 * bl_msgr_frame_fn - a frame arrived.  @f is borrowed for the call: the
 * callback may take @f->payload (bl_list_claim_append, bl_list_swap);
 * whatever it leaves is released when it returns.  It may send, and it
 * may close @c (the close completes after it returns).
 */
typedef void (*bl_msgr_frame_fn)(void *arg, struct bl_msgr_conn *c,
				 struct bl_msgr_frame *f);

/**
 * bl_msgr_close_fn - @c is gone: called exactly once per connection, after
 * every operation on it finished; @c is freed when the callback returns.
 * A peer that shuts down only its sending side (shutdown(SHUT_WR)) still
 * gets its answers: the connection closes once every frame that peer sent
 * was delivered, and answered when max_inflight counts answers, and every
 * frame queued went to the kernel.  (Without max_inflight, a reply the
 * application sends only after that, from elsewhere, finds it closed.)
 * @err:    0 when the peer closed cleanly between frames or the
 *          application closed the connection; otherwise a negative errno
 *          (-EBADMSG, -E2BIG for malformed frames, -EPIPE for a peer that
 *          went away mid-frame, -ETIMEDOUT, I/O errors, -ENOMEM).  The
 *          peer's failures (malformed or cut-short frames, timeouts,
 *          errors of the socket) ended the connection with a reset (see
 *          bl_msgr_conn_abort()), the others gracefully.
 * @reason: borrowed for the call: what happened, in words.
 */
typedef void (*bl_msgr_close_fn)(void *arg, struct bl_msgr_conn *c, int err,
				 const char *reason);

/**
 * bl_msgr_send_fn - a frame was handed to the kernel (@res 0) or will not
 * be (-errno; -ECANCELED when the connection closed first).  The payload's
 * references are the library's business; the caller's list was free to
 * change since bl_msgr_send() returned.
 */
typedef void (*bl_msgr_send_fn)(void *arg, int res);

/** bl_msgr_log_fn - one line (no newline) about @c; @msg is borrowed. */
typedef void (*bl_msgr_log_fn)(void *arg, struct bl_msgr_conn *c,
			       const char *msg);

/**
 * struct bl_msgr_conn_opts - how a connection behaves; all zero: defaults.
 * @on_frame:    called for each frame received; NULL drops frames.
 * @on_close:    called once when the connection is gone; may be NULL.
 * @arg:         first argument of @on_frame and @on_close.
 * @max_payload: longest payload accepted, in bytes (a longer one resets the
 *               connection with -E2BIG); 0: BL_MSGR_DEFAULT_MAX_PAYLOAD;
 *               above BL_MSGR_PAYLOAD_LIMIT: that limit.
 * @bufring:     provided-buffer ring to receive into, borrowed; connections
 *               on the same bl_uring may share one.  NULL: the connection
 *               makes its own from @nbufs, @buf_size and @bgid.
 * @nbufs:       buffers in a ring of its own, a power of two; 0: 64.
 * @buf_size:    bytes per buffer of a ring of its own, and of a plain
 *               receive when the ring has no buffer free; 0: 64 KiB.
 * @bgid:        buffer group id of a ring of its own; 0: the next value of
 *               a process-wide counter starting at 0x4000.
 * @align_data:  receive payloads of at least @align_min bytes into raws
 *               aligned to @align (below); false: no alignment.
 * @align_min:   in bytes; 0: 16 KiB.
 * @align:       the boundary of @align_data, a power of two from 512 to
 *               1 MiB: the O_DIRECT memory alignment of the file the
 *               payloads go to (bl_fd_dio_align()); 0: 4096.
 * @direct_min:  payloads of at least this many bytes are read straight
 *               into a raw of their own, not gathered from ring buffers
 *               (below); 0: 128 KiB; SIZE_MAX: never.
 * @detach:      before on_frame, copy the payload's slices that lie in ring
 *               buffers out of them (bl_list_detach_pooled, counted in
 *               detached), so that frames held long never starve the ring.
 * @copy_below:  sent payloads shorter than this many bytes are copied into
 *               the frame (BL_MSGR_ENC_COPY), not shared; 0: 512; 1: never.
 * @keep_fd:     the connection does not close its fd when it ends.
 * @log:         where the reasons for closing (malformed frames, I/O
 *               errors) go, one line each; NULL: stderr, but only without
 *               @on_close (which gets the same reason); a server's lines
 *               about accepting go to stderr whenever @log is NULL.
 * @log_arg:     first argument of @log.
 * @max_out_bytes: backpressure on replies nobody reads, in bytes: while
 *               this many bytes or more sent on the connection have not
 *               been taken by the kernel (queued, or in the send in
 *               flight) and a reply is among them (a frame sent from
 *               on_frame, or one that answers a request, @max_inflight),
 *               the connection delivers no frame and does not read the
 *               peer (below); 0: BL_MSGR_DEFAULT_MAX_OUT (16 MiB);
 *               SIZE_MAX: no limit.
 * @max_inflight: backpressure on requests, in frames, for request/reply
 *               protocols: a frame delivered to on_frame counts as in
 *               flight until bl_msgr_send() queues a frame on the same
 *               connection (each frame sent answers one request, the
 *               oldest); while this many are, no frame is delivered and
 *               the peer is not read.  0: no limit, and nothing counted
 *               (the default: the messenger cannot know that a protocol
 *               answers its frames).
 * @idle_timeout_ms: a server's connection that neither received a byte
 *               nor got a byte of its own to the kernel for this many
 *               milliseconds is ended with -ETIMEDOUT; bytes the peer
 *               acknowledged (TCP) count as activity, so a peer reading
 *               a large reply slowly is not idle, and so do bytes it sent
 *               into a large payload's read (TCP's count of bytes
 *               received), so a peer sending one slowly is not idle
 *               either.  Reset when the peer
 *               owes acknowledgements and sent none since the last look
 *               (it is not reading), else closed gracefully, since the
 *               peer may still be reading what it got; but kept while
 *               nothing of ours waits for the peer and we owe it an
 *               answer (@max_inflight) or the rest of a stream
 *               (bl_msgr_stream_begin(): a slow disk).  A peer that
 *               took no byte of what waits for it for this long is
 *               reset too, whatever it sends meanwhile (requests whose
 *               answers it never reads).  0: never (the default).
 * @header_timeout_ms: a server's connection on which a frame's preamble
 *               began to arrive and is not complete after this many
 *               milliseconds is reset with -ETIMEDOUT; 0:
 *               BL_MSGR_DEFAULT_HEADER_TIMEOUT_MS (10 s); UINT_MAX: never.
 * @busy_poll_us: after a receive, read the socket directly for up to this
 *               many microseconds before waiting in the ring (below); 0:
 *               never (the default).
 * @max_rx_bytes: a server's connections together hold at most this many
 *               bytes of payloads still arriving by direct reads (below);
 *               0: no limit (the default).  Ignored by a connection of
 *               bl_msgr_conn_new(), which has no server to share it with.
 *
 * Timeouts (@idle_timeout_ms, @header_timeout_ms) are kept by
 * bl_msgr_server_poll() for the server's connections, checked every
 * 100 ms or so (so they fire up to that much late); a connection of
 * bl_msgr_conn_new() has no timer and ignores them.  A connection stopped
 * by backpressure is not waiting for a preamble; if its peer does not
 * read either, it is idle.
 *
 * Backpressure (@max_out_bytes, @max_inflight): a connection over either
 * limit stops delivering frames, leaves the frames it already holds where
 * they are (at most what one receive brought) and arms no receive, so
 * the peer's bytes wait in the kernel's socket buffers and then in the
 * peer; a multishot receive is stopped (what the kernel already took is
 * still kept, undelivered).  Delivery and receiving resume when the
 * connection is under both limits again: when sends complete, or when a
 * frame sent answers a request.  Each stop counts in throttled.  Frames
 * a connection sends of its own accord (not from on_frame) never stop it
 * alone, so two peers streaming at each other do not stall; two that
 * answer each other's frames with more than @max_out_bytes each, while
 * neither reads, would: give them SIZE_MAX.
 *
 * The receive budget (@max_rx_bytes): a server's connection reserves a
 * large payload's whole length from its server's budget when the
 * preamble is in, before it reads or allocates any of the rest, and gives
 * it back when the frame is delivered (on_frame then holds the payload:
 * what the application keeps, it counts itself) or the connection ends.
 * A connection whose payload does not fit stops as backpressure stops it
 * (counted in throttled): no receive, the peer's bytes wait in the
 * kernel and the peer.  Waiting connections are served in the order they
 * began to wait, by bl_msgr_server_poll(), as deliveries free the budget;
 * one payload longer than the whole budget goes when nothing else is
 * held.  A waiting connection is not idle (@idle_timeout_ms): the wait is
 * ours.  Payloads below @direct_min arrive in the receive buffers, whose
 * memory exists already, and are not counted.  So many peers that each
 * send a large payload at once hold at most the budget (plus one payload
 * when that payload alone exceeds it), not the sum of their claims.
 *
 * Direct reads (@direct_min): once the preamble of such a payload is in,
 * the rest of the frame is read with bl_uring_read(fd, -1, ...) into raws
 * of its own, and the payload is the slices already received (no copy)
 * followed by those raws: one raw when the rest is at most 1 MiB, else
 * pieces of 1 MiB, 2 MiB, 4 MiB ... up to 64 MiB, each read once the one
 * before it is full, so that memory follows the bytes received and never
 * the length a preamble claims.  Give @u a regpool
 * (bl_uring_regpool_create) whose buffers hold a piece (for payloads up
 * to 1 MiB: the payload plus a receive buffer): the reads then go into
 * registered buffers (READ_FIXED), the most recently freed first, instead
 * of fresh allocations.  The preamble stops the connection's multishot
 * receive (every byte it took is still delivered); receives are then armed
 * one at a time for as long as large payloads keep coming.
 *
 * Alignment (@align_data): the payload bytes already received are copied
 * into an aligned raw up to the next @align boundary (counted in
 * aligned_copied; at most one receive buffer plus @align), the rest is
 * read straight into aligned raws, and a payload that arrived whole has
 * its misaligned part copied.  Every segment of such a payload then starts
 * on an @align boundary and all but the last are multiples of @align
 * long, so bl_uring_write() can take it to an O_DIRECT file of that
 * alignment as it is.  An aligning connection always receives one-shot.
 *
 * Ring exhaustion: a one-shot receive goes into a fresh raw (bl_uring_recv)
 * when the ring has no buffer free, and the kernel ending a receive with
 * -ENOBUFS (counted in ring_dry) is answered the same way; if the ring is
 * still empty then, the bytes of an incomplete frame held in ring buffers
 * are copied out first (counted in detached), since nothing else would
 * ever give them back.  So frames held by the application, or a frame
 * larger than the whole ring, slow a connection down but never stop it.
 *
 * Large frames that do come through the ring have their payload crc taken
 * piece by piece as the pieces arrive (while the kernel's copy left them
 * in the cache), not in one pass when the last piece is in.
 *
 * Busy polling (@busy_poll_us): for request/response traffic of small
 * frames, where a receive through the ring costs a sleep and a wake-up
 * per message.  Such a connection keeps at most one receive armed, one
 * chunk at a time (never multishot).  When one completes, and whenever
 * receiving would be re-armed from a completion, the connection reads
 * the socket itself with non-blocking recv(2) calls (into raws of its
 * own, 16 KiB each, that frames share as they do ring buffers; counted
 * in inline_recvs), delivering what comes.  When the socket is empty and
 * the last frame the connection queued answered the peer (sent from
 * on_frame, or answering a request), it keeps reading for up to
 * @busy_poll_us, yielding the processor (sched_yield) between empty
 * reads so that a peer waiting for the same core can answer; otherwise,
 * or when the ring has other completions to handle, or after 64 reads
 * with data, it arms a receive in the ring.  Bytes are never taken by two
 * receives at once, so their order is kept; the peer's end, a reset and
 * any other error of these reads close the connection as the same result
 * of a ring receive would.  A connection that only receives or streams
 * never spins; an idle one waits in the ring as any other.  The spinning
 * counts as the thread's CPU time.
 */
struct bl_msgr_conn_opts {
	bl_msgr_frame_fn on_frame;
	bl_msgr_close_fn on_close;
	void *arg;
	size_t max_payload;
	struct bl_uring_bufring *bufring;
	unsigned nbufs;
	size_t buf_size;
	unsigned short bgid;
	bool align_data;
	size_t align_min;
	size_t direct_min;
	bool detach;
	size_t copy_below;
	bool keep_fd;
	bl_msgr_log_fn log;
	void *log_arg;
	size_t max_out_bytes;
	unsigned max_inflight;
	unsigned idle_timeout_ms;
	unsigned header_timeout_ms;
	unsigned busy_poll_us;
	size_t align;
	size_t max_rx_bytes;
};

/**
 * bl_msgr_conn_new() - a connection over the connected stream socket @fd
 * (taken: closed when the connection ends, unless opts->keep_fd), driven
 * by @u (borrowed: it must outlive the connection; close connections and
 * run @u until their on_close before destroying it).  Receiving starts at
 * once; callbacks run from bl_uring_run().
 * @o: copied; NULL for defaults (frames are then dropped).
 * Return: new, or NULL with errno set (then @fd is left open): EINVAL (@u
 * is NULL, or @o's align is not 0 or a power of two from 512 to 1 MiB),
 * ENOMEM, bl_uring_bufring_create()'s errno when the
 * connection's own buffer ring could not be made (EINVAL for bad nbufs or
 * buf_size, EEXIST for a bgid in use, ...), or the first receive's
 * submission error (ENOMEM, EBUSY, ECANCELED, EINVAL for a bufring of
 * another ring).
 */
BL_API struct bl_msgr_conn *
bl_msgr_conn_new(struct bl_uring *u, int fd,
		 const struct bl_msgr_conn_opts *o);

/**
 * bl_msgr_send() - queues a frame of @type with the next sequence number
 * and @payload (borrowed; shared, not copied, unless shorter than
 * copy_below).  One send is in flight per connection at a time; frames
 * queued meanwhile go out together in the next one, in order.
 *
 * Replies: a frame sent from @c's on_frame callback (or anything it
 * calls) is queued, and the frames queued so go out together when the
 * delivery of what arrived with it ends: with one non-blocking sendmsg()
 * straight from the callback when nothing is in flight and the batch is
 * small (under 64 KiB and the ring's zero-copy threshold; counted in
 * direct_sends), what the socket does not take at once through the ring
 * as any other send.  A request/response connection thus pays one system
 * call per reply and no ring completion.  A failure to hand such a batch
 * to the ring closes the connection (its callbacks get -ECANCELED).
 * A frame is queued whatever the connection's backpressure limits say:
 * its bytes count towards max_out_bytes until the kernel takes them, and
 * with max_inflight it answers one request (see struct
 * bl_msgr_conn_opts).
 * @cb: NULL, or called once with the frame's fate (from bl_uring_run()).
 * Return: 0, or -errno with nothing queued or sent and @cb not to run:
 * -EPIPE (the connection is closing), -E2BIG (the payload is longer than
 * BL_MSGR_PAYLOAD_LIMIT), -ENOMEM, or bl_uring_send()'s -EBUSY or
 * -ECANCELED (the ring is being destroyed) when the frame would have gone
 * out at once.
 */
BL_API int bl_msgr_send(struct bl_msgr_conn *c, uint16_t type,
			const struct bl_list *payload, bl_msgr_send_fn cb,
			void *arg);

/**
 * bl_msgr_stream_begin() - starts a frame of @type whose @len payload
 * bytes follow in pieces (bl_msgr_stream_add()), for a payload too large
 * to hold at once: a server reading a large reply from its disk as the
 * socket drains, with a few pieces in memory instead of the whole.  On
 * the wire it is one frame like any other (the payload crc is taken piece
 * by piece): the peer needs no change.  The preamble is queued now and
 * goes out with the first piece.  Until the last byte is added, frames
 * sent on @c with bl_msgr_send() wait behind this one (their bytes count
 * towards max_out_bytes from now on) and follow it in the order sent.
 * With max_inflight, the stream answers one request, as bl_msgr_send()
 * does.  An application that cannot finish the payload (a read that
 * failed) must end @c with bl_msgr_conn_abort(): the peer sees a frame
 * cut short, never a wrong one.  An open stream keeps @c from closing
 * on the peer's end (it owes the peer) and from the idle timeout while
 * nothing of it waits for the peer.
 * Return: 0, or -errno with nothing queued: -EINVAL (@c NULL, @len 0),
 * -EPIPE (the connection is closing), -EBUSY (a stream is open on @c),
 * -E2BIG (@len above BL_MSGR_PAYLOAD_LIMIT), -ENOMEM.
 */
BL_API int bl_msgr_stream_begin(struct bl_msgr_conn *c, uint16_t type,
				size_t len);

/**
 * bl_msgr_stream_add() - queues @piece (borrowed; shared, not copied) as
 * the next bytes of @c's open stream, and goes out as bl_msgr_send()'s
 * frames do.  The piece that completes the payload adds the payload crc,
 * ends the stream and lets the frames sent meanwhile follow.
 * @cb: NULL, or called once with the piece's fate, as for bl_msgr_send():
 *      0 once the kernel took it (the time to read the next piece), or
 *      -errno (-ECANCELED when the connection closed first).
 * Return: 0, or -errno with nothing queued and @cb not to run: -EINVAL
 * (@c NULL, no stream open, @piece NULL or empty, or longer than the
 * bytes the stream still expects), -EPIPE (the connection is closing),
 * -ENOMEM, or bl_uring_send()'s -EBUSY or -ECANCELED when the piece would
 * have gone out at once.
 */
BL_API int bl_msgr_stream_add(struct bl_msgr_conn *c,
			      const struct bl_list *piece, bl_msgr_send_fn cb,
			      void *arg);

/**
 * bl_msgr_conn_close() - ends the connection gracefully: frames queued but
 * not yet handed to the kernel are dropped (their callbacks get
 * -ECANCELED), the socket is shut down so that pending operations finish
 * (the peer still receives every byte the kernel took, then the end of
 * the stream), and on_close runs with @err and @reason (copied; NULL:
 * "closed") once they have.  A second call, or a call on a connection
 * already closing, does nothing; so does a NULL @c.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_msgr_conn_close(struct bl_msgr_conn *c, int err,
			       const char *reason);

/**
 * bl_msgr_conn_abort() - ends the connection as bl_msgr_conn_close()
 * does, but resets it, for a peer the application gives up on (a request
 * that does not decode, a timeout of its own, a peer that does not read
 * its answers).  A TCP connection sends an RST at once: the bytes the
 * kernel still holds for the peer are dropped with the socket's memory
 * (a graceful close would keep them, and the socket, until the peer reads
 * or the kernel gives up), and the peer, once it has read what already
 * reached it, gets ECONNRESET instead of the end of the stream.  on_close
 * runs with @err (any value: a negative errno says why; 0 reads as a
 * clean end to on_close) once no operation is in flight, as after
 * bl_msgr_conn_close(): normally from a later bl_uring_run(), but within
 * this call when nothing is in flight, after which @c is gone.  The
 * messenger resets on its own when the peer fails (malformed frames, a
 * frame cut short, a peer that stops reading, errors of the network).
 * A socket that cannot be reset (AF_UNIX) is shut down as by
 * bl_msgr_conn_close(), and resets stays 0.  With keep_fd, the descriptor
 * stays open as an unconnected socket.  @reason: copied; NULL:
 * "aborted".  A call on a connection already closing (gracefully or not)
 * does nothing; so does a NULL @c.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_msgr_conn_abort(struct bl_msgr_conn *c, int err,
			       const char *reason);

/**
 * bl_msgr_conn_fd() - the socket of @c.
 * Return: the descriptor (borrowed: the connection closes it unless
 * keep_fd); it cannot fail.
 */
BL_API int bl_msgr_conn_fd(const struct bl_msgr_conn *c);

/**
 * struct bl_msgr_conn_stats - what a connection did.
 * @frames_sent / @bytes_sent:  frames handed to the kernel, and their
 *                              bytes on the wire;
 * @frames_received / @bytes_received: frames delivered, and wire bytes;
 * @aligned_copied: payload bytes copied to start aligned payloads;
 * @aligned_frames: payloads received into aligned raws;
 * @direct_frames:  payloads read straight into raws of their own;
 * @detached:       bytes copied out of ring buffers (detach, ring dry);
 * @ring_dry:       receives ended by -ENOBUFS;
 * @direct_sends:   reply batches tried with a direct sendmsg() (see
 *                  bl_msgr_send()), whether or not the socket took all;
 * @throttled:      times receiving stopped for backpressure
 *                  (max_out_bytes, max_inflight);
 * @inline_recvs:   recv(2) calls of busy polling that returned data
 *                  (busy_poll_us);
 * @resets:         1 when the connection ended with a reset sent (the
 *                  peer failed, or bl_msgr_conn_abort()), else 0 (also
 *                  when the socket could not be reset): read it in
 *                  on_close.
 */
struct bl_msgr_conn_stats {
	uint64_t frames_sent;
	uint64_t bytes_sent;
	uint64_t frames_received;
	uint64_t bytes_received;
	uint64_t aligned_copied;
	uint64_t aligned_frames;
	uint64_t direct_frames;
	uint64_t detached;
	uint64_t ring_dry;
	uint64_t direct_sends;
	uint64_t throttled;
	uint64_t inline_recvs;
	uint64_t resets;
};

/**
 * bl_msgr_conn_stats() - a copy of @c's counters into @out.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_msgr_conn_stats(const struct bl_msgr_conn *c,
			       struct bl_msgr_conn_stats *out);

/* ---- 3. the server helper ----------------------------------------------- */

struct bl_msgr_server;

/**
 * bl_msgr_server_new() - accepts connections on @listen_fd (borrowed; made
 * non-blocking; the caller closes it after bl_msgr_server_destroy()) and
 * gives each a connection with @o (copied).  Unless @o names a bufring,
 * the server makes one ring (nbufs, buf_size, bgid as for a connection)
 * that all its connections share.
 * Return: new, or NULL with errno set: EINVAL (@u is NULL, or @o's align
 * is not 0 or a power of two from 512 to 1 MiB), EBADF (@listen_fd is not
 * open), ENOMEM, or bl_uring_bufring_create()'s errno when the shared
 * buffer ring could not be made.
 */
BL_API struct bl_msgr_server *
bl_msgr_server_new(struct bl_uring *u, int listen_fd,
		   const struct bl_msgr_conn_opts *o);

/**
 * bl_msgr_server_poll() - one turn of a server's event loop: waits up to
 * @timeout_ms (-1: no limit) for a connection to accept or a completion
 * on the ring, accepts every pending connection, ends the connections
 * whose timeouts expired (idle_timeout_ms, header_timeout_ms), and runs
 * the ring's callbacks (bl_uring_run).  It returns as soon as it did
 * something.  A set-up failure is logged and skips that connection;
 * accepted TCP sockets get TCP_NODELAY (a messenger is latency bound).
 *
 * Out of descriptors or memory (accept4() failing with EMFILE, ENFILE,
 * ENOBUFS or ENOMEM), the connection stays in the listen backlog and the
 * listening socket stays readable: the server then stops looking at it
 * for 100 ms, doubling with each failure in a row up to 1.6 s, or until
 * one of its connections closes, instead of waking for it at once.
 * Accept failures are logged at most once a second, the line saying how
 * many went unlogged since the last.
 *
 * An idle server waits in one poll() on the listening socket and the
 * ring's fd.  Once completions come, it waits inside the ring
 * (bl_uring_run) in slices of a few milliseconds instead, which costs
 * less per wake-up than a poll() that the ring's task work interrupts,
 * and goes back to poll() after a slice with nothing to do.  A ring set up
 * with IORING_SETUP_DEFER_TASKRUN posts completions only when asked, and
 * the blocking back end waits inside bl_uring_run(), so there it always
 * waits in the ring's slices.  A server waiting in the ring, or busy,
 * looks for new connections every few milliseconds (a new connection may
 * wait that long); a call with @timeout_ms 0 looks every time.  With
 * idle_timeout_ms set, or a preamble pending, an idle server also wakes
 * every 100 ms or so to check its timeouts.  After each run it serves the
 * connections waiting for its receive budget (max_rx_bytes) that now fit,
 * oldest first: their frames' on_frame may run within this call.
 * Return: completions handled plus connections accepted (0 on timeout),
 * or -errno: an error of bl_uring_run() (-EDEADLK when called from a
 * callback of the ring, or an error of io_uring_enter(2)), or of poll(2)
 * (-ENOMEM, -EFAULT, -EINVAL; EINTR is not an error).  Accept failures
 * are not returned: they are logged.
 */
BL_API int bl_msgr_server_poll(struct bl_msgr_server *s, int timeout_ms);

/**
 * bl_msgr_server_nconns() - connections open (accepted, not yet closed).
 * Return: that count; it cannot fail.
 */
BL_API unsigned bl_msgr_server_nconns(const struct bl_msgr_server *s);

/**
 * bl_msgr_server_destroy() - closes every connection, runs the ring until
 * each on_close has run, then frees @s and its ring.  NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_msgr_server_destroy(struct bl_msgr_server *s);

BL_END_DECLS

#endif /* BUFFERLIST_MSGR_H */
