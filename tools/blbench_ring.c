/* SPDX-License-Identifier: MIT */
/*
 * blbench_ring.c - what the io_uring targets (dir:, file: and the tcp:
 * client) share: the ring they make, submission that makes room once when
 * the ring is full, polling, and the file system's room for a run.  It
 * knows no target's state and calls nothing of blbench's but the
 * utilities.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/statvfs.h>
#include "blbench_target.h"

#define RESERVE_MAX (1ull << 30)

/*
 * Free space less a reserve of 5% of the file system (at most
 * RESERVE_MAX), so that a run never fills it.
 */
int blb_fs_room(int fd, uint64_t *room, uint64_t *avail)
{
	struct statvfs sv;
	uint64_t size, reserve;

	if (fstatvfs(fd, &sv) < 0)
		return -errno;
	size = (uint64_t)sv.f_blocks * sv.f_frsize;
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	reserve = size / 20;
	if (reserve > RESERVE_MAX)
		reserve = RESERVE_MAX;
	*room = *avail > reserve ? *avail - reserve : 0;
	return 0;
}

size_t blb_blk_align(const struct stat *st, size_t off_align)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t a = st->st_blksize > 0 ? (size_t)st->st_blksize : 0;

	if (page > 0 && (size_t)page > a)
		a = (size_t)page;
	/* a power of two, or the O_DIRECT alignment is all there is */
	if (a > BLB_BLK_ALIGN_MAX || (a & (a - 1)))
		a = 0;
	return a > off_align ? a : off_align;
}

struct bl_uring *blb_make_ring(const struct blb_opts *o)
{
	struct bl_uring_params p;
	unsigned entries = o->concurrent * 2;

	memset(&p, 0, sizeof(p));
	if (entries < 64)
		entries = 64;
	if (entries > 32768)
		entries = 32768;
	p.entries = entries;
	return bl_uring_create(&p);
}

unsigned blb_ring_pool(struct bl_uring *u, unsigned nbufs, size_t size)
{
	/* a user's RLIMIT_MEMLOCK (8 MiB by default) counts them */
	while (nbufs) {
		if (bl_uring_regpool_create(u, nbufs, size))
			return nbufs;
		if (errno != ENOMEM && errno != EPERM)
			return 0;
		nbufs /= 2;
	}
	return 0;
}

int blb_ring_write(struct bl_uring *u, bool shared, int fd, off_t off,
		   const struct bl_list *l, bl_uring_cb cb, void *arg)
{
	int r = bl_uring_write(u, fd, off, l, cb, arg);

	/* a shared ring's callbacks belong to its owner's loop: no run here */
	if (r == -EBUSY && !shared) {
		bl_uring_run(u, 1, -1);
		r = bl_uring_write(u, fd, off, l, cb, arg);
	}
	return r;
}

int blb_ring_write_opts(struct bl_uring *u, bool shared, int fd, off_t off,
			const struct bl_list *l, struct bl_uring_opts *wo,
			bl_uring_cb cb, void *arg)
{
	int r = bl_uring_write_opts(u, fd, off, l, wo, cb, arg);

	if (r == -EBUSY && !shared) {
		bl_uring_run(u, 1, -1);
		r = bl_uring_write_opts(u, fd, off, l, wo, cb, arg);
	}
	return r;
}

void blb_durable_init(struct blb_durable *d, const struct blb_opts *o)
{
	d->every = o->fsync_every;
	d->kind = o->fsync_kind;
	d->rw_flags = o->rw_flags;
	d->writes = 0;
}

/*
 * fio's --fsync=N counts the writes issued and syncs after every Nth; here
 * the sync is linked behind that write (one submission), so it covers it
 * and every write that ended before it.
 */
struct bl_uring_opts *blb_durable_next(struct blb_durable *d,
				       struct bl_uring_opts *buf)
{
	bool sync = d->every && ++d->writes % d->every == 0;

	if (!sync && !d->rw_flags)
		return NULL;
	memset(buf, 0, sizeof(*buf));
	buf->rw_flags = d->rw_flags;
	buf->sync = sync ? d->kind : BL_URING_SYNC_NONE;
	return buf;
}

int blb_ring_read(struct bl_uring *u, bool shared, int fd, off_t off,
		  size_t len, size_t align, bl_uring_cb cb, void *arg)
{
	int r = bl_uring_read(u, fd, off, len, align, cb, arg);

	if (r == -EBUSY && !shared) {
		bl_uring_run(u, 1, -1);
		r = bl_uring_read(u, fd, off, len, align, cb, arg);
	}
	return r;
}

int blb_ring_poll(struct bl_uring *u, int timeout_ms)
{
	int r = bl_uring_run(u, 1, timeout_ms);

	return r == -ETIME ? 0 : r;
}
