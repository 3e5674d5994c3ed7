/* SPDX-License-Identifier: MIT */
/*
 * blbench_target.c - where blbench's objects live.
 *
 *   dir:PATH          a directory, one file per object (the default target,
 *                     in a fixed place so a later seq in another process
 *                     finds what `write --no-cleanup` left; the metadata
 *                     object is the file benchmark_last_metadata beside them)
 *   file:PATH[:SIZE]  a raw file or block device: the first MiB holds the
 *                     metadata block, objects follow in fixed slots at
 *                     offsets aligned for O_DIRECT; SIZE creates (and
 *                     preallocates) a file that does not exist yet
 *   tcp:HOST:PORT     a remote `blbench serve` (the last part of this file)
 *   rados:POOL        a Ceph pool, through the bridge (blbench_rados.c)
 *
 * Local targets run their I/O through one struct bl_uring; a completion
 * only queues the op (blb_op_complete), the benchmark loop does the rest
 * after the ring's run returns, so no callback ever starts I/O itself.
 *
 * Free space: a target's room is what the file system has free less a
 * reserve of 5% of its size (at most 1 GiB), or a raw target's object
 * area; blbench stops writing before it runs out and refuses a run that
 * could not even fill its first round of ops.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <linux/fs.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <bufferlist/msgr.h>
#include "blbench.h"

#define RESERVE_MAX (1ull << 30)
#define RAW_RESERVED (1u << 20)	/* metadata block, then the object slots */
#define RAW_META_MAGIC "BLBRAW01"
#define RAW_META_BLOCK 4096u

int blb_fail(char *err, size_t len, int r, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	n = strlen(err);
	if (r < 0 && n < len)
		snprintf(err + n, len - n, ": %s", strerror(-r));
	return r < 0 ? r : -EINVAL;
}

/* Bytes a run may use on the file system holding @fd. */
static int fs_room(int fd, uint64_t *room, uint64_t *avail)
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

static struct bl_uring *make_ring(const struct blb_opts *o)
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

/* A completion: the op goes back to the benchmark loop's queue. */
static void op_done(void *arg, ssize_t res, struct bl_list *data)
{
	blb_op_complete(arg, res, data);
}

/* Same, for a file opened for this op alone. */
static void op_done_close(void *arg, ssize_t res, struct bl_list *data)
{
	struct blb_op *op = arg;

	if (op->fd >= 0) {
		close(op->fd);
		op->fd = -1;
	}
	blb_op_complete(op, res, data);
}

/*
 * Submits through @u, making room once if the queue is full (completions
 * it runs only queue ops, so that is safe here).
 */
static int ring_write(struct bl_uring *u, bool shared, int fd, off_t off,
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

static int ring_read(struct bl_uring *u, bool shared, int fd, off_t off,
		     size_t len, size_t align, bl_uring_cb cb, void *arg)
{
	int r = bl_uring_read(u, fd, off, len, align, cb, arg);

	if (r == -EBUSY && !shared) {
		bl_uring_run(u, 1, -1);
		r = bl_uring_read(u, fd, off, len, align, cb, arg);
	}
	return r;
}

static int ring_poll(struct bl_uring *u, int timeout_ms)
{
	int r = bl_uring_run(u, 1, timeout_ms);

	return r == -ETIME ? 0 : r;
}

/* ==== dir:PATH ================================================================ */

struct dir_target {
	struct blb_target t;
	int dfd;
	struct bl_uring *u;
	bool shared;			/* u is borrowed */
	char path[PATH_MAX];
};

static int dir_write(struct blb_target *t, struct blb_op *op,
		     const struct bl_list *l)
{
	struct dir_target *d = (struct dir_target *)t;
	int fd, r;

	fd = openat(d->dfd, op->name,
		    O_WRONLY | O_CREAT | O_CLOEXEC | (t->direct ? O_DIRECT : 0),
		    0644);
	if (fd < 0)
		return -errno;
	op->fd = fd;
	r = ring_write(d->u, d->shared, fd, (off_t)op->off, l, op_done_close, op);
	if (r < 0) {
		close(fd);
		op->fd = -1;
	}
	return r;
}

static int dir_read(struct blb_target *t, struct blb_op *op, size_t len)
{
	struct dir_target *d = (struct dir_target *)t;
	int fd, r;

	fd = openat(d->dfd, op->name,
		    O_RDONLY | O_CLOEXEC | (t->direct ? O_DIRECT : 0));
	if (fd < 0)
		return -errno;
	op->fd = fd;
	r = ring_read(d->u, d->shared, fd, (off_t)op->off, len, t->mem_align, op_done_close,
		      op);
	if (r < 0) {
		close(fd);
		op->fd = -1;
	}
	return r;
}

static int dir_poll(struct blb_target *t, int timeout_ms)
{
	return ring_poll(((struct dir_target *)t)->u, timeout_ms);
}

static int dir_remove(struct blb_target *t, const char *name, uint64_t objno)
{
	(void)objno;
	if (unlinkat(((struct dir_target *)t)->dfd, name, 0) < 0)
		return -errno;
	return 0;
}

static int dir_meta_put(struct blb_target *t, const char *run,
			const struct bl_list *m)
{
	struct dir_target *d = (struct dir_target *)t;
	char tmp[PATH_MAX + BLB_NAME_MAX], path[PATH_MAX + BLB_NAME_MAX];
	int r;

	/* write then rename: a reader never sees half a metadata object */
	snprintf(path, sizeof(path), "%s/%s", d->path, run);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", d->path, run);
	r = bl_list_write_file(m, tmp, 0644);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

static int dir_meta_get(struct blb_target *t, const char *run,
			struct bl_list *out)
{
	struct dir_target *d = (struct dir_target *)t;
	char path[PATH_MAX + BLB_NAME_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", d->path, run);
	n = bl_list_read_file(out, path);
	if (n < 0)
		return (int)n;
	return n == 0 ? -ENOENT : 0;	/* rados bench: empty = absent */
}

static int dir_meta_del(struct blb_target *t, const char *run)
{
	return dir_remove(t, run, 0);
}

static int dir_list(struct blb_target *t, const char *prefix,
		    int (*fn)(void *arg, const char *name), void *arg)
{
	struct dir_target *d = (struct dir_target *)t;
	size_t plen = strlen(prefix);
	struct dirent *de;
	DIR *dir;
	int fd, r = 0;

	fd = openat(d->dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	dir = fdopendir(fd);
	if (!dir) {
		r = -errno;
		close(fd);
		return r;
	}
	while (r == 0 && (de = readdir(dir)))
		if (!strncmp(de->d_name, prefix, plen))
			r = fn(arg, de->d_name);
	closedir(dir);
	return r;
}

static void dir_close(struct blb_target *t)
{
	struct dir_target *d = (struct dir_target *)t;

	if (!d->shared)
		bl_uring_destroy(d->u);
	close(d->dfd);
	free(d);
}

static const struct blb_target_ops dir_ops = {
	.kind = "dir",
	.write = dir_write,
	.read = dir_read,
	.poll = dir_poll,
	.remove = dir_remove,
	.meta_put = dir_meta_put,
	.meta_get = dir_meta_get,
	.meta_del = dir_meta_del,
	.list = dir_list,
	.close = dir_close,
};

int blb_default_dir(char *buf, size_t len)
{
	const char *env = getenv("BLBENCH_DIR");
	struct passwd *pw;
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else if ((pw = getpwuid(geteuid())) && pw->pw_name[0])
		n = snprintf(buf, len, "/var/tmp/blbench-%s", pw->pw_name);
	else
		n = snprintf(buf, len, "/var/tmp/blbench-%u",
			     (unsigned)geteuid());
	return n > 0 && (size_t)n < len ? 0 : -ENAMETOOLONG;
}

/* O_DIRECT's alignment here, from a probe file (statx answers for files). */
static int dir_dio_align(struct dir_target *d, char *err, size_t len)
{
	char name[64];
	size_t mem, off;
	int fd, r;

	snprintf(name, sizeof(name), ".blbench-probe-%d", (int)getpid());
	fd = openat(d->dfd, name,
		    O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0)
		return blb_fail(err, len, -errno, "%s does not take O_DIRECT",
			    d->t.desc);
	r = bl_fd_dio_align(fd, &mem, &off);
	close(fd);
	unlinkat(d->dfd, name, 0);
	if (r < 0)
		return blb_fail(err, len, r, "%s: O_DIRECT alignment", d->t.desc);
	d->t.mem_align = mem ? mem : 1;
	d->t.off_align = off ? off : 1;
	return 0;
}

static int dir_open(struct blb_target **out, const char *path, bool is_default,
		    const struct blb_opts *o, bool create, struct bl_uring *u,
		    char *err, size_t len)
{
	struct dir_target *d;
	uint64_t avail;
	struct stat st;
	int r;

	d = calloc(1, sizeof(*d));
	if (!d)
		return blb_fail(err, len, -ENOMEM, "dir:%s", path);
	d->t.ops = &dir_ops;
	d->dfd = -1;
	snprintf(d->path, sizeof(d->path), "%s", path);
	snprintf(d->t.desc, sizeof(d->t.desc), "dir:%s", d->path);
	d->t.direct = o->direct;
	d->t.mem_align = d->t.off_align = 1;

	if (create && mkdir(d->path, is_default ? 0700 : 0755) < 0 &&
	    errno != EEXIST) {
		r = blb_fail(err, len, -errno, "cannot make %s", d->t.desc);
		goto out;
	}
	/*
	 * The default lives in a world-writable place: use it only if it is
	 * our own directory, not something planted there for us.
	 */
	if (is_default && lstat(d->path, &st) == 0 &&
	    (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())) {
		r = blb_fail(err, len, -EPERM,
			 "%s is not a directory of this user's", d->t.desc);
		goto out;
	}
	d->dfd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (d->dfd < 0) {
		r = blb_fail(err, len, -errno, "cannot open target %s%s", d->t.desc,
			 is_default && errno == ENOENT && !create
				 ? " (write something first)"
				 : "");
		goto out;
	}
	if (o->direct && (r = dir_dio_align(d, err, len)) < 0)
		goto out;
	r = fs_room(d->dfd, &d->t.room, &avail);
	if (r < 0) {
		r = blb_fail(err, len, r, "%s: statvfs", d->t.desc);
		goto out;
	}
	d->shared = u != NULL;
	d->u = u ? u : make_ring(o);
	if (!d->u) {
		r = blb_fail(err, len, -ENOMEM, "%s: io_uring", d->t.desc);
		goto out;
	}
	*out = &d->t;
	return 0;
out:
	if (d->dfd >= 0)
		close(d->dfd);
	free(d);
	return r;
}

/* ==== file:PATH[:SIZE] — a raw file or block device ========================== */

struct file_target {
	struct blb_target t;
	int fd;
	uint64_t size;
	struct bl_uring *u;
	bool shared;			/* u is borrowed */
	size_t meta_block;		/* RAW_META_BLOCK, or the alignment */
};

/* Where op @op's bytes go, or -ENOSPC past the device's end. */
static int slot_off(const struct file_target *f, const struct blb_op *op,
		    size_t len, off_t *pos)
{
	uint64_t span = f->t.obj_span, base;

	/* written so that nothing overflows: off, len and objno may come
	 * from a network peer (serve) */
	if (!span || op->off > span || len > span - op->off ||
	    op->objno >= (f->size - RAW_RESERVED) / span)
		return -ENOSPC;
	base = RAW_RESERVED + op->objno * span + op->off;
	if (base + len > f->size)
		return -ENOSPC;
	*pos = (off_t)base;
	return 0;
}

static int file_write(struct blb_target *t, struct blb_op *op,
		      const struct bl_list *l)
{
	struct file_target *f = (struct file_target *)t;
	off_t pos;
	int r = slot_off(f, op, bl_list_length(l), &pos);

	if (r < 0)
		return r;
	return ring_write(f->u, f->shared, f->fd, pos, l, op_done, op);
}

static int file_read(struct blb_target *t, struct blb_op *op, size_t len)
{
	struct file_target *f = (struct file_target *)t;
	off_t pos;
	int r = slot_off(f, op, len, &pos);

	if (r < 0)
		return r;
	return ring_read(f->u, f->shared, f->fd, pos, len, t->mem_align, op_done, op);
}

static int file_poll(struct blb_target *t, int timeout_ms)
{
	return ring_poll(((struct file_target *)t)->u, timeout_ms);
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
 * bytes.  One run at a time lives on a raw target.
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

static uint32_t le32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* The run stored in @buf: its name and metadata, or -ENOENT. */
static int meta_block_parse(const struct file_target *f,
			    const unsigned char *buf, const char **name,
			    size_t *nlen, const unsigned char **meta,
			    size_t *mlen)
{
	size_t end = f->meta_block - 4;

	if (memcmp(buf, RAW_META_MAGIC, 8) ||
	    le32(buf + end) != bl_crc32c(0xFFFFFFFF, buf, end))
		return -ENOENT;
	*nlen = le32(buf + 8);
	*mlen = le32(buf + 12);
	if (*nlen > end || *mlen > end || 16 + *nlen + *mlen > end)
		return -ENOENT;
	*name = (const char *)buf + 16;
	*meta = buf + 16 + *nlen;
	return 0;
}

static int file_meta_put(struct blb_target *t, const char *run,
			 const struct bl_list *m)
{
	struct file_target *f = (struct file_target *)t;
	size_t nlen = strlen(run), mlen = bl_list_length(m);
	size_t end = f->meta_block - 4;
	unsigned char *buf;
	int r;

	if (16 + nlen + mlen > end)
		return -E2BIG;
	r = meta_block_io(f, &buf, false);
	if (r < 0)
		return r;
	memset(buf, 0, f->meta_block);
	memcpy(buf, RAW_META_MAGIC, 8);
	put_le32(buf + 8, (uint32_t)nlen);
	put_le32(buf + 12, (uint32_t)mlen);
	memcpy(buf + 16, run, nlen);
	bl_list_copy_out(m, 0, mlen, buf + 16 + nlen);
	put_le32(buf + end, bl_crc32c(0xFFFFFFFF, buf, end));
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
	int r;

	r = meta_block_io(f, &buf, true);
	if (r == 0)
		r = meta_block_parse(f, buf, &name, &nlen, &meta, &mlen);
	if (r == 0 && (nlen != strlen(run) || memcmp(name, run, nlen)))
		r = -ENOENT;
	if (r == 0)
		r = bl_list_append(out, meta, mlen);
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
	int r;

	r = meta_block_io(f, &buf, true);
	if (r == 0)
		r = meta_block_parse(f, buf, &name, &nlen, &meta, &mlen);
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

/* "PATH[:SIZE]": SIZE is what follows the last ':' if it reads as a size. */
static void split_size(const char *spec, char *path, size_t len,
		       uint64_t *size)
{
	const char *colon = strrchr(spec, ':');

	*size = 0;
	if (colon && colon != spec && blb_parse_size(colon + 1, size) == 0) {
		snprintf(path, len, "%.*s", (int)(colon - spec), spec);
		return;
	}
	*size = 0;
	snprintf(path, len, "%s", spec);
}

static int file_open(struct blb_target **out, const char *spec,
		     const struct blb_opts *o, bool create, struct bl_uring *u,
		     char *err, size_t len)
{
	int flags = O_RDWR | O_CLOEXEC | (o->direct ? O_DIRECT : 0);
	char path[PATH_MAX];
	struct file_target *f;
	uint64_t want, room, avail;
	struct stat st;
	bool made = false;
	int r;

	split_size(spec, path, sizeof(path), &want);
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
			r = fs_room(f->fd, &room, &avail);
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
	f->t.room = f->size - RAW_RESERVED;
	f->shared = u != NULL;
	f->u = u ? u : make_ring(o);
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

/* ==== tcp:HOST:PORT — a remote `blbench serve` =============================== */

/*
 * The remote target speaks framed messages (bufferlist/msgr.h) over one TCP
 * connection.  Every request carries a tag the reply echoes, so -t
 * operations are in flight at once; the server answers each when its disk
 * is done.  All integers little-endian (bl_encode_*):
 *
 *   request  = tag u64, flags u32 (TCP_DIRECT), then by type:
 *     HELLO     -                     -> room u64, slots u32, mem_align u32,
 *                                        off_align u32, max_payload u64,
 *                                        desc bytes  (or, res < 0: reason bytes)
 *     WRITE     data_off u32, objno u64, off u64, span u64, name bytes,
 *               zeros up to data_off, then the op's bytes
 *     READ      objno u64, off u64, span u64, len u64, name bytes
 *                                     -> the bytes read
 *     REMOVE    objno u64, name bytes
 *     META_PUT  run bytes, metadata bytes
 *     META_GET  run bytes             -> the metadata
 *     META_DEL  run bytes
 *     LIST      prefix bytes          -> count u32, count x name bytes
 *   reply    = tag u64, res i64 (bytes or -errno), then what the type returns
 *
 * The zero-copy path end to end: a WRITE's payload is the request header
 * followed by the op's own segments, shared (the pattern slice and its
 * header raw; bl_msgr_send uses SENDMSG_ZC for large frames).  The client
 * pads the header to the server's O_DIRECT alignment, and the server's
 * connections receive large payloads into 4096-aligned raws (align_data),
 * so the data after the header lands aligned and goes to bl_uring_write()
 * on an O_DIRECT file without being copied again.
 *
 * A server treats its peers as untrusted: names are plain file names, a
 * frame that does not parse or a request that does not decode closes that
 * connection only (the messenger logs why), and other clients go on.
 */
enum {
	T_HELLO = 1,
	T_WRITE,
	T_READ,
	T_REMOVE,
	T_META_PUT,
	T_META_GET,
	T_META_DEL,
	T_LIST,
	T_REPLY = 100,
};

#define TCP_DIRECT 1u
#define TCP_MAX_PAYLOAD ((size_t)(1u << 30) + (1u << 20))	/* -b up to 1G */
#define TCP_SYNC_TIMEOUT 30.0	/* seconds for metadata and hello */
#define SRV_MAX_OFFSET (1ull << 44)	/* no object offset beyond 16 TiB */

/* "HOST:PORT" or "[V6]:PORT" into its parts. */
static int split_hostport(const char *s, char *host, size_t hlen, char *port,
			  size_t plen)
{
	const char *colon;
	size_t n;

	if (*s == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		n = (size_t)(end - s - 1);
		colon = end + 1;
		s++;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - s);
	}
	if (n == 0 || n >= hlen || !colon[1] || strlen(colon + 1) >= plen)
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = 0;
	strcpy(port, colon + 1);
	return 0;
}

/* A plain object or run name: what a server will make a file of. */
static bool plain_name(const struct bl_list *l, char *out, size_t len)
{
	size_t n = bl_list_length(l);

	if (n == 0 || n >= len || n >= BLB_NAME_MAX)
		return false;
	bl_list_copy_out(l, 0, n, out);
	out[n] = 0;
	if (out[0] == '.' || strlen(out) != n || strchr(out, '/'))
		return false;
	return true;
}

/* ---- the client ---------------------------------------------------------- */

struct tcp_sync {
	bool done;
	int64_t res;
	struct bl_list data;
};

struct tcp_slot {
	uint32_t gen;
	bool used;
	struct blb_op *op;		/* an async op, or ... */
	struct tcp_sync *sync;		/* ... a call someone waits for */
	unsigned next_free;
};

struct tcp_target {
	struct blb_target t;
	struct bl_uring *u;
	struct bl_msgr_conn *c;		/* NULL once closed */
	bool closing;
	uint32_t flags;
	size_t pad;			/* WRITE data offsets: server's alignment */
	uint64_t max_payload;
	struct tcp_slot *slots;
	unsigned nslots, free_head;
	char addr[BLB_NAME_MAX];
};

#define NO_SLOT UINT32_MAX

static int slot_alloc(struct tcp_target *tt, uint64_t *tag)
{
	struct tcp_slot *s;
	unsigned i;

	if (tt->free_head == NO_SLOT) {
		unsigned n = tt->nslots ? tt->nslots * 2 : 64;
		struct tcp_slot *ns = realloc(tt->slots, n * sizeof(*ns));

		if (!ns)
			return -ENOMEM;
		memset(ns + tt->nslots, 0, (n - tt->nslots) * sizeof(*ns));
		for (i = tt->nslots; i < n; i++)
			ns[i].next_free = i + 1 < n ? i + 1 : NO_SLOT;
		tt->free_head = tt->nslots;
		tt->slots = ns;
		tt->nslots = n;
	}
	i = tt->free_head;
	s = &tt->slots[i];
	tt->free_head = s->next_free;
	s->used = true;
	s->gen++;
	s->op = NULL;
	s->sync = NULL;
	*tag = (uint64_t)s->gen << 32 | i;
	return (int)i;
}

static void slot_free(struct tcp_target *tt, unsigned i)
{
	tt->slots[i].used = false;
	tt->slots[i].op = NULL;
	tt->slots[i].sync = NULL;
	tt->slots[i].next_free = tt->free_head;
	tt->free_head = i;
}

/* The slot a reply's tag names, or NULL for a tag we never sent. */
static struct tcp_slot *slot_find(struct tcp_target *tt, uint64_t tag,
				  unsigned *idx)
{
	unsigned i = (unsigned)(tag & 0xffffffffu);

	if (i >= tt->nslots || !tt->slots[i].used ||
	    tt->slots[i].gen != (uint32_t)(tag >> 32))
		return NULL;
	*idx = i;
	return &tt->slots[i];
}

static void slot_finish(struct tcp_target *tt, unsigned i, int64_t res,
			struct bl_list *data)
{
	struct tcp_slot *s = &tt->slots[i];
	struct blb_op *op = s->op;
	struct tcp_sync *sync = s->sync;

	slot_free(tt, i);
	if (op) {
		blb_op_complete(op, (ssize_t)res, res >= 0 ? data : NULL);
	} else if (sync) {
		sync->res = res;
		if (res >= 0 && data)
			bl_list_claim_append(&sync->data, data);
		sync->done = true;
	}
}

static void tcp_on_frame(void *arg, struct bl_msgr_conn *c,
			 struct bl_msgr_frame *f)
{
	struct tcp_target *tt = arg;
	struct bl_iter it;
	uint64_t tag, res;
	unsigned idx;

	if (f->type != T_REPLY || bl_iter_init(&it, &f->payload, 0) < 0 ||
	    bl_decode_u64(&it, &tag) < 0 || bl_decode_u64(&it, &res) < 0 ||
	    !slot_find(tt, tag, &idx)) {
		bl_msgr_conn_close(c, -EBADMSG, "a reply that answers nothing");
		return;
	}
	/* what follows the 16-byte reply header is the data, shared */
	bl_list_splice(&f->payload, 0, 16, NULL);
	slot_finish(tt, idx, (int64_t)res, &f->payload);
}

static void tcp_on_close(void *arg, struct bl_msgr_conn *c, int err,
			 const char *reason)
{
	struct tcp_target *tt = arg;
	unsigned i;

	(void)c;
	tt->c = NULL;
	if (err && !tt->closing)
		fprintf(stderr, "blbench: %s: connection closed: %s\n",
			tt->t.desc, reason);
	/* whatever was waiting for a reply will not get one */
	for (i = 0; i < tt->nslots; i++)
		if (tt->slots[i].used)
			slot_finish(tt, i, err ? err : -ECONNRESET, NULL);
}

/* Request header into @l: tag and flags.  Slot index, or -errno. */
static int tcp_begin(struct tcp_target *tt, struct bl_list *l)
{
	uint64_t tag;
	int i;

	if (!tt->c)
		return -ENOTCONN;
	i = slot_alloc(tt, &tag);
	if (i < 0)
		return i;
	if (bl_encode_u64(l, tag) || bl_encode_u32(l, tt->flags)) {
		slot_free(tt, (unsigned)i);
		return -ENOMEM;
	}
	return i;
}

static int tcp_send(struct tcp_target *tt, int slot, uint16_t type,
		    struct bl_list *l)
{
	int r = bl_msgr_send(tt->c, type, l, NULL, NULL);

	bl_list_clear(l);
	if (r < 0)
		slot_free(tt, (unsigned)slot);
	return r;
}

/* A request whose reply the caller waits for; the reply's data into @out. */
static int tcp_call(struct tcp_target *tt, uint16_t type,
		    const struct bl_list *body, struct bl_list *out)
{
	struct tcp_sync sync = { .done = false };
	double deadline = blb_now() + TCP_SYNC_TIMEOUT;
	struct bl_list l;
	int i, r;

	bl_list_init(&l);
	bl_list_init(&sync.data);
	i = tcp_begin(tt, &l);
	if (i < 0)
		return i;
	if (body && bl_list_append_list(&l, body) < 0) {
		bl_list_clear(&l);
		slot_free(tt, (unsigned)i);
		return -ENOMEM;
	}
	tt->slots[i].sync = &sync;
	r = tcp_send(tt, i, type, &l);
	if (r < 0)
		return r;
	while (!sync.done) {
		r = bl_uring_run(tt->u, 1, 1000);
		if (r < 0 && r != -ETIME && r != -EINTR)
			break;
		if (blb_now() > deadline) {
			r = -ETIMEDOUT;
			break;
		}
	}
	if (!sync.done) {
		/* forget the slot: a late reply then answers nothing we wait for */
		unsigned idx;

		for (idx = 0; idx < tt->nslots; idx++)
			if (tt->slots[idx].sync == &sync)
				slot_free(tt, idx);
		bl_list_clear(&sync.data);
		return r < 0 ? r : -EIO;
	}
	if (out)
		bl_list_claim_append(out, &sync.data);
	bl_list_clear(&sync.data);
	return sync.res < 0 ? (int)sync.res : 0;
}

static int tcp_write(struct blb_target *t, struct blb_op *op,
		     const struct bl_list *data)
{
	struct tcp_target *tt = (struct tcp_target *)t;
	size_t nlen = strlen(op->name), hlen, data_off;
	struct bl_list l;
	int i, r;

	bl_list_init(&l);
	i = tcp_begin(tt, &l);
	if (i < 0)
		return i;
	/* tag, flags, data_off, objno, off, span, name: 48 + name bytes */
	hlen = 12 + 4 + 24 + 4 + nlen;
	data_off = (hlen + tt->pad - 1) / tt->pad * tt->pad;
	r = bl_encode_u32(&l, (uint32_t)data_off);
	r |= bl_encode_u64(&l, op->objno);
	r |= bl_encode_u64(&l, op->off);
	r |= bl_encode_u64(&l, t->obj_span);
	r |= bl_encode_bytes(&l, op->name, nlen);
	r |= bl_list_append_zero(&l, data_off - hlen);
	r |= bl_list_append_list(&l, data);	/* shared, not copied */
	if (r) {
		bl_list_clear(&l);
		slot_free(tt, (unsigned)i);
		return -ENOMEM;
	}
	tt->slots[i].op = op;
	return tcp_send(tt, i, T_WRITE, &l);
}

static int tcp_read(struct blb_target *t, struct blb_op *op, size_t len)
{
	struct tcp_target *tt = (struct tcp_target *)t;
	struct bl_list l;
	int i, r;

	bl_list_init(&l);
	i = tcp_begin(tt, &l);
	if (i < 0)
		return i;
	r = bl_encode_u64(&l, op->objno);
	r |= bl_encode_u64(&l, op->off);
	r |= bl_encode_u64(&l, t->obj_span);
	r |= bl_encode_u64(&l, len);
	r |= bl_encode_bytes(&l, op->name, strlen(op->name));
	if (r) {
		bl_list_clear(&l);
		slot_free(tt, (unsigned)i);
		return -ENOMEM;
	}
	tt->slots[i].op = op;
	return tcp_send(tt, i, T_READ, &l);
}

static int tcp_poll(struct blb_target *t, int timeout_ms)
{
	struct tcp_target *tt = (struct tcp_target *)t;

	return ring_poll(tt->u, timeout_ms);
}

static int tcp_remove(struct blb_target *t, const char *name, uint64_t objno)
{
	struct bl_list b;
	int r;

	bl_list_init(&b);
	r = bl_encode_u64(&b, objno) | bl_encode_bytes(&b, name, strlen(name));
	if (r == 0)
		r = tcp_call((struct tcp_target *)t, T_REMOVE, &b, NULL);
	bl_list_clear(&b);
	return r;
}

static int tcp_meta_put(struct blb_target *t, const char *run,
			const struct bl_list *m)
{
	struct bl_list b;
	int r;

	bl_list_init(&b);
	r = bl_encode_bytes(&b, run, strlen(run)) | bl_encode_list(&b, m);
	if (r == 0)
		r = tcp_call((struct tcp_target *)t, T_META_PUT, &b, NULL);
	bl_list_clear(&b);
	return r;
}

static int tcp_run_call(struct blb_target *t, uint16_t type, const char *s,
			struct bl_list *out)
{
	struct bl_list b;
	int r;

	bl_list_init(&b);
	r = bl_encode_bytes(&b, s, strlen(s));
	if (r == 0)
		r = tcp_call((struct tcp_target *)t, type, &b, out);
	bl_list_clear(&b);
	return r;
}

static int tcp_meta_get(struct blb_target *t, const char *run,
			struct bl_list *out)
{
	return tcp_run_call(t, T_META_GET, run, out);
}

static int tcp_meta_del(struct blb_target *t, const char *run)
{
	return tcp_run_call(t, T_META_DEL, run, NULL);
}

static int tcp_list(struct blb_target *t, const char *prefix,
		    int (*fn)(void *arg, const char *name), void *arg)
{
	char name[BLB_NAME_MAX];
	struct bl_list out, nl;
	struct bl_iter it;
	uint32_t count;
	int r;

	bl_list_init(&out);
	bl_list_init(&nl);
	r = tcp_run_call(t, T_LIST, prefix, &out);
	if (r == 0) {
		bl_iter_init(&it, &out, 0);
		r = bl_decode_u32(&it, &count);
	}
	while (r == 0 && count--) {
		bl_list_clear(&nl);
		r = bl_decode_bytes(&it, &nl);
		if (r == 0 && !plain_name(&nl, name, sizeof(name)))
			r = -EBADMSG;
		if (r == 0)
			r = fn(arg, name);
	}
	bl_list_clear(&nl);
	bl_list_clear(&out);
	return r;
}

static void tcp_close(struct blb_target *t)
{
	struct tcp_target *tt = (struct tcp_target *)t;
	double deadline = blb_now() + 10;

	tt->closing = true;
	if (tt->c)
		bl_msgr_conn_close(tt->c, 0, NULL);
	while (tt->c && blb_now() < deadline)
		bl_uring_run(tt->u, 1, 100);
	bl_uring_destroy(tt->u);
	free(tt->slots);
	free(tt);
}

static const struct blb_target_ops tcp_ops = {
	.kind = "tcp",
	.write = tcp_write,
	.read = tcp_read,
	.poll = tcp_poll,
	.remove = tcp_remove,
	.meta_put = tcp_meta_put,
	.meta_get = tcp_meta_get,
	.meta_del = tcp_meta_del,
	.list = tcp_list,
	.close = tcp_close,
};

static int tcp_connect(const char *host, const char *port, int *fdp)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, r, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	r = getaddrinfo(host, port, &hints, &res);
	if (r)
		return r == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
	r = -ECONNREFUSED;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return r;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	*fdp = fd;
	return 0;
}

static int tcp_open(struct blb_target **out, const char *spec,
		    const struct blb_opts *o, bool create, char *err,
		    size_t len)
{
	struct bl_msgr_conn_opts co;
	char host[BLB_NAME_MAX], port[32], desc[BLB_NAME_MAX];
	struct tcp_target *tt;
	struct bl_list reply, dl;
	uint64_t room, maxp;
	uint32_t slots, mem, off;
	struct bl_iter it;
	int fd = -1, r;

	(void)create;
	if (split_hostport(spec, host, sizeof(host), port, sizeof(port)) < 0)
		return blb_fail(err, len, 0, "cannot open target tcp:%s: not HOST:PORT",
			    spec);
	tt = calloc(1, sizeof(*tt));
	if (!tt)
		return blb_fail(err, len, -ENOMEM, "tcp:%s", spec);
	tt->t.ops = &tcp_ops;
	tt->free_head = NO_SLOT;
	tt->flags = o->direct ? TCP_DIRECT : 0;
	tt->t.direct = o->direct;
	snprintf(tt->addr, sizeof(tt->addr), "tcp:%s", spec);
	snprintf(tt->t.desc, sizeof(tt->t.desc), "%s", tt->addr);
	r = tcp_connect(host, port, &fd);
	if (r < 0) {
		r = blb_fail(err, len, r, "cannot connect to %s", tt->addr);
		free(tt);
		return r;
	}
	tt->u = make_ring(o);
	memset(&co, 0, sizeof(co));
	co.on_frame = tcp_on_frame;
	co.on_close = tcp_on_close;
	co.arg = tt;
	co.max_payload = TCP_MAX_PAYLOAD;
	co.align_data = true;	/* large read replies straight into raws */
	tt->c = tt->u ? bl_msgr_conn_new(tt->u, fd, &co) : NULL;
	if (!tt->c) {
		r = blb_fail(err, len, -ENOMEM, "%s: connection", tt->addr);
		close(fd);
		bl_uring_destroy(tt->u);
		free(tt);
		return r;
	}

	bl_list_init(&reply);
	bl_list_init(&dl);
	r = tcp_call(tt, T_HELLO, NULL, &reply);
	bl_iter_init(&it, &reply, 0);
	if (r < 0) {
		/* the server said why, or the connection did */
		if (bl_decode_bytes(&it, &dl) == 0 &&
		    bl_list_length(&dl) < sizeof(desc)) {
			bl_list_copy_out(&dl, 0, bl_list_length(&dl), desc);
			desc[bl_list_length(&dl)] = 0;
			r = blb_fail(err, len, 0, "cannot open target %s: server: %s",
				 tt->addr, desc);
		} else {
			r = blb_fail(err, len, r, "cannot open target %s", tt->addr);
		}
		goto out;
	}
	r = bl_decode_u64(&it, &room);
	r |= bl_decode_u32(&it, &slots);
	r |= bl_decode_u32(&it, &mem);
	r |= bl_decode_u32(&it, &off);
	r |= bl_decode_u64(&it, &maxp);
	r |= bl_decode_bytes(&it, &dl);
	if (r || bl_list_length(&dl) >= sizeof(desc) || !mem || !off ||
	    (mem & (mem - 1)) || (off & (off - 1)) || off > (1u << 20)) {
		r = blb_fail(err, len, -EBADMSG, "cannot open target %s: its hello",
			 tt->addr);
		goto out;
	}
	bl_list_copy_out(&dl, 0, bl_list_length(&dl), desc);
	desc[bl_list_length(&dl)] = 0;
	tt->t.room = room;
	tt->t.slots = slots != 0;
	tt->t.mem_align = mem;
	tt->t.off_align = off;
	tt->max_payload = maxp;
	tt->pad = off > 64 ? off : 64;
	if (mem > tt->pad)
		tt->pad = mem;
	snprintf(tt->t.desc, sizeof(tt->t.desc), "%s (%s)", tt->addr, desc);
	if (o->op_size + 4096 + tt->pad > maxp) {
		r = blb_fail(err, len, 0, "%s takes ops of at most %llu bytes",
			 tt->t.desc, (unsigned long long)(maxp - 4096 - tt->pad));
		goto out;
	}
	bl_list_clear(&reply);
	bl_list_clear(&dl);
	*out = &tt->t;
	return 0;
out:
	bl_list_clear(&reply);
	bl_list_clear(&dl);
	tcp_close(&tt->t);
	return r;
}

/* ---- the server ----------------------------------------------------------- */

struct srv_req {
	struct blb_op op;		/* first: ops complete through op.done */
	struct srv *s;
	struct bl_msgr_conn *c;		/* NULL once the client went away */
	uint64_t tag;
	uint16_t type;
	struct bl_list payload;		/* WRITE: the data until it is written */
	struct srv_req *prev, *next;
};

struct srv {
	struct bl_uring *u;
	struct blb_opts o;
	struct blb_target *tgt[2];	/* buffered, O_DIRECT (opened on demand) */
	char tgt_err[2][512];
	struct bl_msgr_server *ms;
	struct srv_req *reqs;		/* in flight */
	unsigned inflight;
};

static void srv_reply(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
		      struct bl_list *data)
{
	struct bl_list l;

	bl_list_init(&l);
	if (bl_encode_u64(&l, tag) == 0 && bl_encode_u64(&l, (uint64_t)res) == 0 &&
	    (!data || bl_list_claim_append(&l, data) == 0))
		bl_msgr_send(c, T_REPLY, &l, NULL, NULL);
	bl_list_clear(&l);
}

static void srv_reply_text(struct bl_msgr_conn *c, uint64_t tag, int64_t res,
			   const char *text)
{
	struct bl_list l;

	bl_list_init(&l);
	if (bl_encode_bytes(&l, text, strlen(text)) == 0)
		srv_reply(c, tag, res, &l);
	bl_list_clear(&l);
}

static void srv_req_free(struct srv_req *q)
{
	struct srv *s = q->s;

	if (q->prev)
		q->prev->next = q->next;
	else
		s->reqs = q->next;
	if (q->next)
		q->next->prev = q->prev;
	s->inflight--;
	bl_list_clear(&q->payload);
	bl_list_clear(&q->op.data);
	free(q);
}

/* A disk op is over: answer, unless the client went away meanwhile. */
static void srv_op_done(struct blb_op *op)
{
	struct srv_req *q = (struct srv_req *)op;

	if (q->c)
		srv_reply(q->c, q->tag, op->res,
			  q->type == T_READ && op->res >= 0 ? &op->data : NULL);
	srv_req_free(q);
}

static struct srv_req *srv_req_new(struct srv *s, struct bl_msgr_conn *c,
				   uint64_t tag, uint16_t type)
{
	struct srv_req *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->s = s;
	q->c = c;
	q->tag = tag;
	q->type = type;
	q->op.done = srv_op_done;
	q->op.fd = -1;
	bl_list_init(&q->op.data);
	bl_list_init(&q->payload);
	q->next = s->reqs;
	if (s->reqs)
		s->reqs->prev = q;
	s->reqs = q;
	s->inflight++;
	return q;
}

/* The server's target for @flags, opened the first time it is asked for. */
static struct blb_target *srv_target(struct srv *s, uint32_t flags,
				     const char **why)
{
	int i = (flags & TCP_DIRECT) ? 1 : 0;

	if (!s->tgt[i] && !s->tgt_err[i][0]) {
		struct blb_opts o = s->o;

		o.direct = i == 1;
		if (blb_target_open_ring(&s->tgt[i], s->o.target, &o, true, s->u,
					 s->tgt_err[i],
					 sizeof(s->tgt_err[i])) < 0)
			s->tgt[i] = NULL;
	}
	*why = s->tgt_err[i];
	return s->tgt[i];
}

static void srv_hello(struct srv *s, struct bl_msgr_conn *c, uint64_t tag,
		      struct blb_target *t)
{
	struct bl_list l;
	uint64_t room = t->room, avail;
	int r;

	/* a directory's room shrinks as clients write: ask again */
	if (t->ops == &dir_ops)
		fs_room(((struct dir_target *)t)->dfd, &room, &avail);
	bl_list_init(&l);
	r = bl_encode_u64(&l, room);
	r |= bl_encode_u32(&l, t->slots);
	r |= bl_encode_u32(&l, (uint32_t)t->mem_align);
	r |= bl_encode_u32(&l, (uint32_t)t->off_align);
	r |= bl_encode_u64(&l, TCP_MAX_PAYLOAD);
	r |= bl_encode_bytes(&l, t->desc, strlen(t->desc));
	if (r == 0)
		srv_reply(c, tag, 0, &l);
	bl_list_clear(&l);
	(void)s;
}

static int srv_list_one(void *arg, const char *name)
{
	struct bl_list *l = ((struct bl_list **)arg)[0];
	uint32_t *count = ((void **)arg)[1];

	if (bl_list_length(l) > TCP_MAX_PAYLOAD / 2)
		return -E2BIG;
	(*count)++;
	return bl_encode_bytes(l, name, strlen(name));
}

/* LIST: the names, counted in front. */
static int srv_list(struct blb_target *t, const char *prefix,
		    struct bl_list *out)
{
	struct bl_list names;
	uint32_t count = 0;
	void *arg[2] = { &names, &count };
	int r;

	if (!t->ops->list)
		return -EOPNOTSUPP;
	bl_list_init(&names);
	r = t->ops->list(t, prefix, srv_list_one, arg);
	if (r == 0)
		r = bl_encode_u32(out, count);
	if (r == 0)
		r = bl_list_claim_append(out, &names);
	bl_list_clear(&names);
	return r;
}

static void srv_on_frame(void *arg, struct bl_msgr_conn *c,
			 struct bl_msgr_frame *f)
{
	struct srv *s = arg;
	struct blb_target *t;
	char name[BLB_NAME_MAX];
	uint64_t tag, objno = 0, off = 0, span = 0, len = 0;
	uint32_t flags, data_off = 0;
	struct bl_list nl, out;
	struct srv_req *q;
	struct bl_iter it;
	const char *why;
	int r;

	bl_list_init(&nl);
	bl_list_init(&out);
	if (bl_iter_init(&it, &f->payload, 0) < 0 ||
	    bl_decode_u64(&it, &tag) < 0 || bl_decode_u32(&it, &flags) < 0 ||
	    (flags & ~TCP_DIRECT))
		goto bad;
	switch (f->type) {
	case T_HELLO:
	case T_META_PUT:
	case T_META_GET:
	case T_META_DEL:
	case T_LIST:
		break;
	case T_WRITE:
		if (bl_decode_u32(&it, &data_off) < 0)
			goto bad;
		/* fall through */
	case T_READ:
	case T_REMOVE:
		if (bl_decode_u64(&it, &objno) < 0)
			goto bad;
		if (f->type == T_REMOVE)
			break;
		if (bl_decode_u64(&it, &off) < 0 ||
		    bl_decode_u64(&it, &span) < 0 || off > SRV_MAX_OFFSET ||
		    span > SRV_MAX_OFFSET)
			goto bad;
		if (f->type == T_READ &&
		    (bl_decode_u64(&it, &len) < 0 || len > TCP_MAX_PAYLOAD))
			goto bad;
		break;
	default:
		goto bad;
	}
	if (f->type != T_HELLO &&
	    (bl_decode_bytes(&it, &nl) < 0 || !plain_name(&nl, name, sizeof(name))))
		goto bad;

	t = srv_target(s, flags, &why);
	if (!t) {
		srv_reply_text(c, tag, -EIO, why);
		goto out;
	}
	switch (f->type) {
	case T_HELLO:
		srv_hello(s, c, tag, t);
		break;
	case T_WRITE:
		if (data_off < bl_iter_offset(&it) ||
		    data_off > bl_list_length(&f->payload))
			goto bad;
		q = srv_req_new(s, c, tag, T_WRITE);
		if (!q) {
			srv_reply(c, tag, -ENOMEM, NULL);
			break;
		}
		snprintf(q->op.name, sizeof(q->op.name), "%s", name);
		q->op.objno = objno;
		q->op.off = off;
		/* keep only the data: it starts aligned, as the client padded it */
		bl_list_splice(&f->payload, 0, data_off, NULL);
		bl_list_swap(&q->payload, &f->payload);
		r = 0;
		if (t->off_align > 1)	/* copies only what is misaligned */
			r = bl_list_rebuild_aligned_size_and_memory(
				&q->payload, t->off_align, t->mem_align, 1024);
		t->obj_span = span;
		q->op.t0 = blb_now();
		if (r >= 0)
			r = t->ops->write(t, &q->op, &q->payload);
		if (r < 0) {
			srv_reply(c, tag, r, NULL);
			srv_req_free(q);
		}
		break;
	case T_READ:
		q = srv_req_new(s, c, tag, T_READ);
		if (!q) {
			srv_reply(c, tag, -ENOMEM, NULL);
			break;
		}
		snprintf(q->op.name, sizeof(q->op.name), "%s", name);
		q->op.objno = objno;
		q->op.off = off;
		t->obj_span = span;
		q->op.t0 = blb_now();
		r = t->ops->read(t, &q->op, len);
		if (r < 0) {
			srv_reply(c, tag, r, NULL);
			srv_req_free(q);
		}
		break;
	case T_REMOVE:
		srv_reply(c, tag, t->ops->remove(t, name, objno), NULL);
		break;
	case T_META_PUT:
		/* what follows the run name is the metadata */
		if (bl_decode_bytes(&it, &out) < 0)
			goto bad;
		srv_reply(c, tag, t->ops->meta_put(t, name, &out), NULL);
		break;
	case T_META_GET:
		r = t->ops->meta_get(t, name, &out);
		srv_reply(c, tag, r, r == 0 ? &out : NULL);
		break;
	case T_META_DEL:
		srv_reply(c, tag, t->ops->meta_del(t, name), NULL);
		break;
	case T_LIST:
		r = srv_list(t, name, &out);
		srv_reply(c, tag, r, r == 0 ? &out : NULL);
		break;
	}
out:
	bl_list_clear(&nl);
	bl_list_clear(&out);
	return;
bad:
	/* this client only: the messenger logs the reason, others go on */
	bl_msgr_conn_close(c, -EBADMSG, "a request that does not decode");
	goto out;
}

static void srv_on_close(void *arg, struct bl_msgr_conn *c, int err,
			 const char *reason)
{
	struct srv *s = arg;
	struct srv_req *q;

	/* disk ops of this client finish, but their answers go nowhere */
	for (q = s->reqs; q; q = q->next)
		if (q->c == c)
			q->c = NULL;
	if (err)
		fprintf(stderr, "blbench serve: a client went away: %s\n", reason);
}

static int srv_listen(const char *addr, char *shown, size_t len)
{
	struct addrinfo hints, *res, *ai;
	char host[BLB_NAME_MAX], port[32];
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int fd = -1, r, one = 1;

	if (split_hostport(addr, host, sizeof(host), port, sizeof(port)) < 0)
		return -EINVAL;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	r = getaddrinfo(host, port, &hints, &res);
	if (r)
		return r == EAI_SYSTEM ? -errno : -EADDRNOTAVAIL;
	r = -EADDRNOTAVAIL;
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC,
			    ai->ai_protocol);
		if (fd < 0) {
			r = -errno;
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, 128) == 0)
			break;
		r = -errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return r;
	/* the port actually bound (for :0) */
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		char h[INET6_ADDRSTRLEN];
		unsigned p;

		if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &a->sin6_addr, h, sizeof(h));
			p = ntohs(a->sin6_port);
			snprintf(shown, len, "[%s]:%u", h, p);
		} else {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &a->sin_addr, h, sizeof(h));
			p = ntohs(a->sin_port);
			snprintf(shown, len, "%s:%u", h, p);
		}
	}
	return fd;
}

int blb_serve(const struct blb_opts *o)
{
	struct bl_msgr_conn_opts co;
	struct bl_uring_params p;
	char shown[BLB_NAME_MAX] = "";
	const char *why;
	struct srv s;
	int lfd, r;

	memset(&s, 0, sizeof(s));
	s.o = *o;
	lfd = srv_listen(o->listen, shown, sizeof(shown));
	if (lfd < 0) {
		fprintf(stderr, "blbench serve: cannot listen on %s: %s\n",
			o->listen, strerror(-lfd));
		return BLB_EXIT_FAIL;
	}
	memset(&p, 0, sizeof(p));
	p.entries = 1024;
	s.u = bl_uring_create(&p);
	if (!s.u) {
		fprintf(stderr, "blbench serve: out of memory\n");
		close(lfd);
		return BLB_EXIT_FAIL;
	}
	/* the buffered target now, so that a bad --target fails at once */
	if (!srv_target(&s, 0, &why)) {
		fprintf(stderr, "blbench serve: %s\n", why);
		bl_uring_destroy(s.u);
		close(lfd);
		return BLB_EXIT_FAIL;
	}
	memset(&co, 0, sizeof(co));
	co.on_frame = srv_on_frame;
	co.on_close = srv_on_close;
	co.arg = &s;
	co.max_payload = TCP_MAX_PAYLOAD;
	co.align_data = true;	/* WRITE data lands 4096-aligned for O_DIRECT */
	s.ms = bl_msgr_server_new(s.u, lfd, &co);
	if (!s.ms) {
		fprintf(stderr, "blbench serve: cannot serve on %s\n", shown);
		blb_target_close(s.tgt[0]);
		bl_uring_destroy(s.u);
		close(lfd);
		return BLB_EXIT_FAIL;
	}
	printf("blbench serve: listening on %s, objects in %s\n", shown,
	       s.tgt[0]->desc);
	fflush(stdout);

	r = 0;
	while (!blb_stop) {
		r = bl_msgr_server_poll(s.ms, 250);
		if (r < 0 && r != -EINTR && r != -ETIME && r != -EAGAIN) {
			fprintf(stderr, "blbench serve: %s\n", strerror(-r));
			break;
		}
		r = 0;
	}
	bl_msgr_server_destroy(s.ms);
	/* disk ops still running hold payloads and the targets: let them end */
	while (s.inflight)
		if (bl_uring_run(s.u, 1, 1000) < 0 && blb_stop > 1)
			break;
	blb_target_close(s.tgt[0]);
	blb_target_close(s.tgt[1]);
	bl_uring_destroy(s.u);
	close(lfd);
	return r < 0 ? BLB_EXIT_FAIL : 0;
}

/* ==== opening ================================================================= */

static int open_local(struct blb_target **out, const char *spec,
		      const struct blb_opts *o, bool create, struct bl_uring *u,
		      char *err, size_t errlen)
{
	char dflt[PATH_MAX];

	if (!spec) {
		if (blb_default_dir(dflt, sizeof(dflt)) < 0)
			return blb_fail(err, errlen, -ENAMETOOLONG,
				    "the default directory");
		return dir_open(out, dflt, true, o, create, u, err, errlen);
	}
	if (!strncmp(spec, "dir:", 4) && spec[4])
		return dir_open(out, spec + 4, false, o, create, u, err, errlen);
	if (!strncmp(spec, "file:", 5) && spec[5])
		return file_open(out, spec + 5, o, create, u, err, errlen);
	return blb_fail(err, errlen, 0, "cannot open target %s: not dir:PATH or file:PATH[:SIZE]",
		    spec);
}

int blb_target_open_ring(struct blb_target **out, const char *spec,
			 const struct blb_opts *o, bool create,
			 struct bl_uring *u, char *err, size_t errlen)
{
	return open_local(out, spec, o, create, u, err, errlen);
}

int blb_target_open(struct blb_target **out, const char *spec,
		    const struct blb_opts *o, bool create, char *err,
		    size_t errlen)
{
	if (spec && !strncmp(spec, "tcp:", 4) && spec[4])
		return tcp_open(out, spec + 4, o, create, err, errlen);
	if (spec && !strncmp(spec, "rados:", 6) && spec[6]) {
#ifdef BL_HAVE_CEPH
		return blb_rados_open(out, spec + 6, o, err, errlen);
#else
		return blb_fail(err, errlen, -ENOTSUP,
			    "cannot open target %s: blbench was built without the Ceph bridge",
			    spec);
#endif
	}
	return open_local(out, spec, o, create, NULL, err, errlen);
}

void blb_target_close(struct blb_target *t)
{
	if (t)
		t->ops->close(t);
}
