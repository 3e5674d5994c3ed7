/* SPDX-License-Identifier: MIT */
/*
 * blbench_file.c - the file:PATH[:SIZE] target: a raw file or block device
 * whose first MiB holds the metadata block, objects following in fixed
 * slots at offsets aligned for O_DIRECT; SIZE creates (and preallocates) a
 * file that does not exist yet.  Its room is the device's object area.
 * The object area starts at 1 MiB, or for a write with -b a multiple of a
 * larger power of two at that (up to 64 MiB), as a storage daemon aligns
 * its data: an op then does not straddle two of the extents a file
 * system preallocates (ext4 makes them a few MiB long and aligned), which
 * ext4 takes as a write it must not run beside others: io_uring then
 * hands it to a worker thread.  The metadata block records where the
 * area starts.
 * I/O runs through one struct bl_uring (blbench_ring.c) and completions
 * only hand ops to their owners.  It reaches the rest of blbench only
 * through blbench_target.h.
 *
 * Objects live at fixed offsets, so two runs writing one file overwrite
 * each other's objects and both "succeed"; the file is therefore
 * flock()ed for as long as the target is open: exclusively by writers
 * (write, cleanup, serve), shared by readers (seq, rand).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include "blbench_target.h"

#define RAW_RESERVED (1u << 20)	/* metadata block, then the object slots */
#define RAW_META_MAGIC "BLBRAW01"	/* objects at RAW_RESERVED */
#define RAW_META_MAGIC2 "BLBRAW02"	/* objects where the block says */
#define RAW_DATA_ALIGN_MAX (64u << 20)
#define RAW_META_BLOCK 4096u

struct file_target {
	struct blb_target t;
	int fd;
	uint64_t size;
	struct bl_uring *u;
	bool shared;			/* u is borrowed */
	size_t meta_block;		/* RAW_META_BLOCK, or the alignment */
	uint64_t data_off;		/* where the object slots start */
	struct blb_durable dur;		/* --fsync, --fdatasync, --sync */
};

/* A completion: the op goes back to its owner. */
static void op_done(void *arg, ssize_t res, struct bl_list *data)
{
	blb_op_complete(arg, res, data);
}

/* Where op @op's bytes go, or -ENOSPC past the device's end. */
static int slot_off(const struct file_target *f, const struct blb_op *op,
		    size_t len, off_t *pos)
{
	uint64_t span = f->t.obj_span, base;

	/* written so that nothing overflows: off, len and objno may come
	 * from a network peer (serve); objno below (size - data_off) / span
	 * keeps objno * span + span within size - data_off, so base + len
	 * cannot wrap */
	if (!span || f->data_off >= f->size || op->off > span ||
	    len > span - op->off ||
	    op->objno >= (f->size - f->data_off) / span)
		return -ENOSPC;
	base = f->data_off + op->objno * span + op->off;
	if (base + len > f->size)
		return -ENOSPC;
	*pos = (off_t)base;
	return 0;
}

static int file_write(struct blb_target *t, struct blb_op *op,
		      const struct bl_list *l)
{
	struct file_target *f = (struct file_target *)t;
	struct bl_uring_opts wo;
	off_t pos;
	int r = slot_off(f, op, bl_list_length(l), &pos);

	if (r < 0)
		return r;
	return blb_ring_write_opts(f->u, f->shared, f->fd, pos, l,
				   blb_durable_next(&f->dur, &wo), op_done, op);
}

static int file_read(struct blb_target *t, struct blb_op *op, size_t len)
{
	struct file_target *f = (struct file_target *)t;
	off_t pos;
	int r = slot_off(f, op, len, &pos);

	if (r < 0)
		return r;
	return blb_ring_read(f->u, f->shared, f->fd, pos, len, t->mem_align,
			     op_done, op);
}

static int file_poll(struct blb_target *t, int timeout_ms)
{
	return blb_ring_poll(((struct file_target *)t)->u, timeout_ms);
}

/* Slots are not removed: dropping the metadata forgets them. */
static int file_remove(struct blb_target *t, const char *name, uint64_t objno)
{
	(void)t;
	(void)name;
	(void)objno;
	return 0;
}

/*
 * The metadata block: "BLBRAW01", u32 name length, u32 metadata length,
 * the run name, the metadata, and a crc32c of the block in its last four
 * bytes; or "BLBRAW02", the same lengths, u64 offset of the object area,
 * then as before.  One run at a time lives on a raw target.
 */
static int meta_block_io(struct file_target *f, unsigned char **buf, bool rd)
{
	void *p;
	ssize_t n;

	if (posix_memalign(&p, f->meta_block, f->meta_block))
		return -ENOMEM;
	*buf = p;
	if (!rd)
		return 0;
	n = pread(f->fd, p, f->meta_block, 0);
	if (n < 0)
		return -errno;
	if ((size_t)n < f->meta_block)
		memset((char *)p + n, 0, f->meta_block - (size_t)n);
	return 0;
}

static int meta_block_write(struct file_target *f, unsigned char *buf)
{
	ssize_t n = pwrite(f->fd, buf, f->meta_block, 0);

	if (n < 0)
		return -errno;
	if ((size_t)n != f->meta_block)
		return -EIO;
	return fdatasync(f->fd) < 0 ? -errno : 0;
}

/* The run stored in @buf: its name and metadata, or -ENOENT. */
static int meta_block_parse(const struct file_target *f,
			    const unsigned char *buf, const char **name,
			    size_t *nlen, const unsigned char **meta,
			    size_t *mlen, uint64_t *data_off)
{
	size_t end = f->meta_block - 4, at = 16;

	if (blb_get_le32(buf + end) != bl_crc32c(0xFFFFFFFF, buf, end))
		return -ENOENT;
	if (!memcmp(buf, RAW_META_MAGIC, 8)) {
		*data_off = RAW_RESERVED;
	} else if (!memcmp(buf, RAW_META_MAGIC2, 8)) {
		*data_off = blb_get_le64(buf + 16);
		at = 24;
		/* past the end there is no slot: a file served smaller than
		 * its run was written, or a forged block */
		if (*data_off < RAW_RESERVED || *data_off > RAW_DATA_ALIGN_MAX ||
		    *data_off % f->meta_block || *data_off >= f->size)
			return -ENOENT;
	} else {
		return -ENOENT;
	}
	*nlen = blb_get_le32(buf + 8);
	*mlen = blb_get_le32(buf + 12);
	if (*nlen > end || *mlen > end || at + *nlen + *mlen > end)
		return -ENOENT;
	*name = (const char *)buf + at;
	*meta = buf + at + *nlen;
	return 0;
}

static int file_meta_put(struct blb_target *t, const char *run,
			 const struct bl_list *m)
{
	struct file_target *f = (struct file_target *)t;
	size_t nlen = strlen(run), mlen = bl_list_length(m);
	size_t end = f->meta_block - 4;
	/* the first format where it still says all */
	bool v2 = f->data_off != RAW_RESERVED;
	size_t at = v2 ? 24 : 16;
	unsigned char *buf;
	int r;

	if (at + nlen + mlen > end)
		return -E2BIG;
	r = meta_block_io(f, &buf, false);
	if (r < 0)
		return r;
	memset(buf, 0, f->meta_block);
	memcpy(buf, v2 ? RAW_META_MAGIC2 : RAW_META_MAGIC, 8);
	blb_put_le32(buf + 8, (uint32_t)nlen);
	blb_put_le32(buf + 12, (uint32_t)mlen);
	if (v2)
		blb_put_le64(buf + 16, f->data_off);
	memcpy(buf + at, run, nlen);
	bl_list_copy_out(m, 0, mlen, buf + at + nlen);
	blb_put_le32(buf + end, bl_crc32c(0xFFFFFFFF, buf, end));
	r = meta_block_write(f, buf);
	free(buf);
	return r;
}

static int file_meta_get(struct blb_target *t, const char *run,
			 struct bl_list *out)
{
	struct file_target *f = (struct file_target *)t;
	const unsigned char *meta;
	const char *name;
	size_t nlen, mlen;
	unsigned char *buf;
	uint64_t data_off;
	int r;

	r = meta_block_io(f, &buf, true);
	if (r == 0)
		r = meta_block_parse(f, buf, &name, &nlen, &meta, &mlen,
				     &data_off);
	if (r == 0 && (nlen != strlen(run) || memcmp(name, run, nlen)))
		r = -ENOENT;
	if (r == 0)
		r = bl_list_append(out, meta, mlen);
	if (r == 0) {
		/* the run's objects are where its writer put them */
		f->data_off = data_off;
		f->t.room = f->size > data_off ? f->size - data_off : 0;
	}
	free(buf);
	return r;
}

static int file_meta_del(struct blb_target *t, const char *run)
{
	struct file_target *f = (struct file_target *)t;
	const unsigned char *meta;
	const char *name;
	size_t nlen, mlen;
	unsigned char *buf;
	uint64_t data_off;
	int r;

	r = meta_block_io(f, &buf, true);
	if (r == 0)
		r = meta_block_parse(f, buf, &name, &nlen, &meta, &mlen,
				     &data_off);
	if (r == 0 && (nlen != strlen(run) || memcmp(name, run, nlen)))
		r = -ENOENT;
	if (r == 0) {
		memset(buf, 0, f->meta_block);
		r = meta_block_write(f, buf);
	}
	free(buf);
	return r;
}

static void file_close(struct blb_target *t)
{
	struct file_target *f = (struct file_target *)t;

	if (!f->shared)
		bl_uring_destroy(f->u);
	close(f->fd);
	free(f);
}

static const struct blb_target_ops file_ops = {
	.kind = "file",
	.write = file_write,
	.read = file_read,
	.poll = file_poll,
	.remove = file_remove,
	.meta_put = file_meta_put,
	.meta_get = file_meta_get,
	.meta_del = file_meta_del,
	.list = NULL,
	.close = file_close,
};

/*
 * What follows a last ':' reads as a SIZE when it is one; when it starts
 * with a digit and has only letters and digits (4M, 1x, 10Q) it was meant
 * as one, so a typo is refused instead of becoming part of the file name;
 * anything else (a '.', '-' or '/': /dev/disk/by-path/pci-0000:00:1f.2)
 * is part of the path, as is the whole spec when that names a file.
 */
int blb_file_split(const char *spec, char *path, size_t len, uint64_t *size)
{
	const char *colon = strrchr(spec, ':');
	uint64_t v = 0;
	size_t n = strlen(spec);
	struct stat st;

	if (colon && colon != spec && colon[1] >= '0' && colon[1] <= '9' &&
	    !colon[1 + strspn(colon + 1, "0123456789abcdefghijklmnopqrstuvwxyz"
				      "ABCDEFGHIJKLMNOPQRSTUVWXYZ")]) {
		if (blb_parse_size(colon + 1, &v) == 0)
			n = (size_t)(colon - spec);
		else if (stat(spec, &st) < 0)
			return -EINVAL;
	}
	if (n >= len)
		return -ENAMETOOLONG;
	memcpy(path, spec, n);
	path[n] = 0;
	*size = v;
	return 0;
}

int blb_file_open(struct blb_target **out, const char *spec,
		  const struct blb_opts *o, bool create, struct bl_uring *u,
		  char *err, size_t len)
{
	/* seq and rand only read: a file (or device) they may not write
	 * is verified all the same */
	bool readonly = o->mode == BLB_SEQ || o->mode == BLB_RAND;
	int flags = (readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC |
		    (o->direct ? O_DIRECT : 0);
	char path[PATH_MAX];
	struct file_target *f;
	uint64_t want, room, avail;
	struct stat st;
	bool made = false;
	int r;

	r = blb_file_split(spec, path, sizeof(path), &want);
	if (r == -EINVAL)
		return blb_fail(err, len, 0, "file:%s: '%s' is not a size (K, M, G or T)",
				spec, strrchr(spec, ':') + 1);
	if (r < 0)
		return blb_fail(err, len, r, "file:%.64s...", spec);
	f = calloc(1, sizeof(*f));
	if (!f)
		return blb_fail(err, len, -ENOMEM, "file:%s", path);
	f->t.ops = &file_ops;
	f->t.direct = o->direct;
	f->t.slots = true;
	f->t.mem_align = f->t.off_align = 1;
	f->meta_block = RAW_META_BLOCK;
	snprintf(f->t.desc, sizeof(f->t.desc), "file:%s", path);

	f->fd = open(path, flags);
	if (f->fd < 0 && errno == ENOENT && create && want) {
		f->fd = open(path, flags | O_CREAT | O_EXCL, 0644);
		made = f->fd >= 0;
	}
	if (f->fd >= 0 && !o->lock_held &&
	    flock(f->fd, (readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) < 0) {
		r = -errno;
		made = false;	/* whoever holds the lock may use it already */
		if (r == -EWOULDBLOCK) {
			blb_fail(err, len, 0,
				 readonly ? "%s is being written by another blbench (it holds the file's lock); read it once that is over"
					  : "%s is in use by another blbench (it holds the file's lock): one writer at a time, and none while it is read",
				 f->t.desc);
			r = -EBUSY;
		} else {
			r = blb_fail(err, len, r, "%s: flock", f->t.desc);
		}
		goto out;
	}
	if (f->fd < 0) {
		r = -errno;
		if (r == -ENOENT && create && !want)
			r = blb_fail(err, len, 0,
				 "%s does not exist; give its size to make it: file:%s:SIZE",
				 f->t.desc, path);
		else if (r == -EINVAL && o->direct)
			r = blb_fail(err, len, r, "%s does not take O_DIRECT",
				 f->t.desc);
		else
			r = blb_fail(err, len, r, "cannot open target %s",
				 f->t.desc);
		goto out;
	}
	if (fstat(f->fd, &st) < 0) {
		r = blb_fail(err, len, -errno, "%s: stat", f->t.desc);
		goto out;
	}
	if (S_ISBLK(st.st_mode)) {
		uint64_t dev = 0;

		if (ioctl(f->fd, BLKGETSIZE64, &dev) < 0) {
			r = blb_fail(err, len, -errno, "%s: device size", f->t.desc);
			goto out;
		}
		f->size = want && want < dev ? want : dev;
	} else if (S_ISREG(st.st_mode)) {
		f->size = (uint64_t)st.st_size;
		if (want && want < f->size)
			f->size = want;
		if (want > f->size && create) {
			/* preallocate, so that writes measure the device, not allocation */
			r = blb_fs_room(f->fd, &room, &avail);
			if (r == 0 && want - f->size > room)
				r = blb_fail(err, len, 0,
					 "not enough free space for %s: %llu MiB free, %llu MiB asked (%llu MiB kept in reserve)",
					 f->t.desc,
					 (unsigned long long)(avail >> 20),
					 (unsigned long long)((want - f->size) >> 20),
					 (unsigned long long)((avail - room) >> 20));
			else if (r < 0)
				r = blb_fail(err, len, r, "%s: statvfs", f->t.desc);
			else if ((r = -posix_fallocate(f->fd, 0, (off_t)want)) < 0)
				r = blb_fail(err, len, r, "%s: preallocating %llu bytes",
					 f->t.desc, (unsigned long long)want);
			if (r < 0)
				goto out;
			f->size = want;
		}
	} else {
		r = blb_fail(err, len, 0, "%s is neither a file nor a block device",
			 f->t.desc);
		goto out;
	}
	if (o->direct) {
		size_t mem, off;

		r = bl_fd_dio_align(f->fd, &mem, &off);
		if (r < 0) {
			r = blb_fail(err, len, r, "%s: O_DIRECT alignment", f->t.desc);
			goto out;
		}
		f->t.mem_align = mem ? mem : 1;
		f->t.off_align = off ? off : 1;
		f->t.blk_align = blb_blk_align(&st, f->t.off_align);
		if (f->t.off_align > f->meta_block)
			f->meta_block = f->t.off_align;
		if (f->meta_block > RAW_RESERVED) {
			r = blb_fail(err, len, 0, "%s: O_DIRECT alignment %zu is too large",
				 f->t.desc, f->t.off_align);
			goto out;
		}
	}
	if (f->size < RAW_RESERVED + 4096) {
		r = blb_fail(err, len, 0, "%s is too small (%llu bytes; at least %u)",
			 f->t.desc, (unsigned long long)f->size,
			 RAW_RESERVED + 4096);
		goto out;
	}
	f->data_off = RAW_RESERVED;
	if (o->mode == BLB_WRITE) {
		/* the largest power of two -b is a multiple of */
		uint64_t a = o->op_size & (~o->op_size + 1);

		if (a > RAW_DATA_ALIGN_MAX)
			a = RAW_DATA_ALIGN_MAX;
		if (a > RAW_RESERVED && a % f->meta_block == 0 &&
		    f->size > a && f->size - a >= o->op_size)
			f->data_off = a;
	}
	f->t.room = f->size - f->data_off;
	blb_durable_init(&f->dur, o);
	f->shared = u != NULL;
	f->u = u ? u : blb_make_ring(o);
	if (!f->u) {
		r = blb_fail(err, len, -ENOMEM, "%s: io_uring", f->t.desc);
		goto out;
	}
	*out = &f->t;
	return 0;
out:
	if (f->fd >= 0) {
		close(f->fd);
		if (made)
			unlink(path);
	}
	free(f);
	return r;
}
