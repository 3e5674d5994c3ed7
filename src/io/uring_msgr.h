/* SPDX-License-Identifier: MIT */
/*
 * uring_msgr.h - what the uring layer offers the messenger beyond the
 * public API: stopping a pooled receive, the completions waiting, the
 * room of the registered pool, the zero-copy threshold and how far a
 * failed send got.  The one
 * private header of the uring layer that a higher layer includes
 * (test/layers.txt).  Never installed.
 */
#ifndef BUFFERLIST_URING_MSGR_H
#define BUFFERLIST_URING_MSGR_H

#include <stdbool.h>
#include <stddef.h>
#include <bufferlist/uring.h>

/* The zero-copy threshold in force (after the default was applied). */
size_t bl__uring_zc_threshold(const struct bl_uring *u);

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

/*
 * In the callback of a write or send that failed (@res < 0): how many of
 * its bytes the kernel took before it failed, which the callback's @res
 * cannot say (a messenger tells by it which of the frames one send
 * carried went out whole).  Meaningless anywhere else.
 */
size_t bl__uring_cb_done(const struct bl_uring *u);

#endif /* BUFFERLIST_URING_MSGR_H */
