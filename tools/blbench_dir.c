/* SPDX-License-Identifier: MIT */
/*
 * blbench_dir.c - the dir:PATH target: a directory, one file per object
 * (the default target, in a fixed place so a later seq in another process
 * finds what `write --no-cleanup` left; the metadata object is the file
 * benchmark_last_metadata beside them).  Its I/O runs through one struct
 * bl_uring (blbench_ring.c); a completion only hands the op to its owner
 * (blb_op_complete), who does the rest after the ring's run returns, so no
 * callback ever starts I/O itself.  It reaches the rest of blbench only
 * through blbench_target.h.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "blbench_target.h"

#define META_MAX (64u << 10)	/* blbench's metadata is ~200 bytes */

struct dir_target {
	struct blb_target t;
	int dfd;
	struct bl_uring *u;
	bool shared;			/* u is borrowed */
	struct blb_durable dur;		/* --fsync, --fdatasync, --sync */
	char path[PATH_MAX];
};

/* A completion of a file opened for this op alone. */
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
 * A write that failed leaves no empty object behind (the open made it):
 * nothing would ever name it in a metadata object.  Only if the name is
 * still that file, and it is still empty.
 */
static void remove_if_empty(int dfd, int fd, const char *name)
{
	struct stat st, at;

	if (fstat(fd, &st) == 0 && st.st_size == 0 &&
	    fstatat(dfd, name, &at, AT_SYMLINK_NOFOLLOW) == 0 &&
	    at.st_dev == st.st_dev && at.st_ino == st.st_ino)
		unlinkat(dfd, name, 0);
}

/* A write's completion: @op->tag is the directory's fd. */
static void op_write_done(void *arg, ssize_t res, struct bl_list *data)
{
	struct blb_op *op = arg;

	if (res < 0 && op->fd >= 0)
		remove_if_empty((int)op->tag, op->fd, op->name);
	op_done_close(arg, res, data);
}

static int dir_write(struct blb_target *t, struct blb_op *op,
		     const struct bl_list *l)
{
	struct dir_target *d = (struct dir_target *)t;
	struct bl_uring_opts wo;
	int fd, r;

	fd = openat(d->dfd, op->name,
		    O_WRONLY | O_CREAT | O_CLOEXEC | (t->direct ? O_DIRECT : 0),
		    0644);
	if (fd < 0)
		return -errno;
	op->fd = fd;
	op->tag = (uint64_t)d->dfd;
	r = blb_ring_write_opts(d->u, d->shared, fd, (off_t)op->off, l,
				blb_durable_next(&d->dur, &wo), op_write_done,
				op);
	if (r < 0) {
		remove_if_empty(d->dfd, fd, op->name);
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
	r = blb_ring_read(d->u, d->shared, fd, (off_t)op->off, len,
			  t->mem_align, op_done_close, op);
	if (r < 0) {
		close(fd);
		op->fd = -1;
	}
	return r;
}

static int dir_poll(struct blb_target *t, int timeout_ms)
{
	return blb_ring_poll(((struct dir_target *)t)->u, timeout_ms);
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

/*
 * Cleanup tries every file beside the objects as a metadata object, and a
 * directory may hold anything: what is not a small regular file is not
 * blbench's metadata (-EBADMSG), and a FIFO or a symlink is not opened.
 */
static int dir_meta_get(struct blb_target *t, const char *run,
			struct bl_list *out)
{
	struct dir_target *d = (struct dir_target *)t;
	struct stat st;
	ssize_t n;
	int fd;

	fd = openat(d->dfd, run, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ELOOP ? -EBADMSG : -errno;
	if (fstat(fd, &st) < 0) {
		n = -errno;
	} else if (!S_ISREG(st.st_mode) || st.st_size > META_MAX) {
		n = -EBADMSG;
	} else {
		n = bl_list_read_fd(out, fd, (size_t)st.st_size);
		if (n == 0)
			n = -ENOENT;	/* rados bench: empty = absent */
	}
	close(fd);
	return n < 0 ? (int)n : 0;
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
	/* dot files are no objects: ".", "..", and our own temporary files */
	while (r == 0 && (de = readdir(dir)))
		if (de->d_name[0] != '.' && !strncmp(de->d_name, prefix, plen))
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

/* Free space shrinks as others write into the directory: ask again. */
static int dir_room_now(struct blb_target *t, uint64_t *room)
{
	uint64_t avail;

	return blb_fs_room(((struct dir_target *)t)->dfd, room, &avail);
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
	.room_now = dir_room_now,
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

/*
 * A run that will write checks that it can before it prints anything: a
 * directory it may not write in (its mode, a read-only mount) would
 * otherwise fail the first op, after the table's header.
 */
static int dir_check_writable(struct dir_target *d, char *err, size_t len)
{
	char name[64];
	int fd;

	snprintf(name, sizeof(name), ".blbench-probe-%d", (int)getpid());
	fd = openat(d->dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		    0600);
	if (fd < 0)
		return blb_fail(err, len, -errno, "cannot write in %s",
				d->t.desc);
	close(fd);
	unlinkat(d->dfd, name, 0);
	return 0;
}

/* O_DIRECT's alignment here, from a probe file (statx answers for files). */
static int dir_dio_align(struct dir_target *d, char *err, size_t len)
{
	char name[64];
	struct stat st;
	size_t mem, off;
	int fd, r;

	snprintf(name, sizeof(name), ".blbench-probe-%d", (int)getpid());
	fd = openat(d->dfd, name,
		    O_RDWR | O_CREAT | O_EXCL | O_DIRECT | O_CLOEXEC, 0600);
	if (fd < 0)
		return blb_fail(err, len, -errno, "%s does not take O_DIRECT",
			    d->t.desc);
	r = bl_fd_dio_align(fd, &mem, &off);
	if (r == 0 && fstat(fd, &st) < 0)
		r = -errno;
	close(fd);
	unlinkat(d->dfd, name, 0);
	if (r < 0)
		return blb_fail(err, len, r, "%s: O_DIRECT alignment", d->t.desc);
	d->t.mem_align = mem ? mem : 1;
	d->t.off_align = off ? off : 1;
	d->t.blk_align = blb_blk_align(&st, d->t.off_align);
	return 0;
}

int blb_dir_open(struct blb_target **out, const char *path, bool is_default,
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
	if (create && (r = dir_check_writable(d, err, len)) < 0)
		goto out;
	if (o->direct && (r = dir_dio_align(d, err, len)) < 0)
		goto out;
	r = blb_fs_room(d->dfd, &d->t.room, &avail);
	if (r < 0) {
		r = blb_fail(err, len, r, "%s: statvfs", d->t.desc);
		goto out;
	}
	blb_durable_init(&d->dur, o);
	d->shared = u != NULL;
	d->u = u ? u : blb_make_ring(o);
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
