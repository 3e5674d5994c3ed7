/* SPDX-License-Identifier: MIT */
/*
 * blbench_target.h - the one interface between blbench's targets (where
 * objects live: blbench_dir.c, blbench_file.c, blbench_tcp.c,
 * blbench_rados.c) and their users (the benchmark loop and `blbench
 * serve`): the options a target is opened with, one operation in flight
 * (struct blb_op, which carries its owner's completion function), the
 * operations a target implements (struct blb_target_ops), opening
 * (blbench_target.c) and what the io_uring targets share (blbench_ring.c).
 * A target knows nothing else of blbench: it reaches its user only through
 * @op->done, and may call only what this header and blbench_util.h
 * declare.
 */
#ifndef BLBENCH_TARGET_H
#define BLBENCH_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <bufferlist.h>
#include "blbench_util.h"

#define BLB_NAME_MAX 256
/* An op's result below -BLB_ERRNO_MAX is no errno (the kernel's MAX_ERRNO). */
#define BLB_ERRNO_MAX 4095

enum blb_mode {
	BLB_WRITE = 1,
	BLB_SEQ,
	BLB_RAND,
	BLB_CLEANUP,
	BLB_SERVE,
};

/* --op-timeout: its default and largest value, in seconds */
#define BLB_OP_TIMEOUT 30
#define BLB_OP_TIMEOUT_MAX 86400u
/* serve --max-memory: its default and smallest value, in bytes */
#define BLB_SERVE_MEMORY ((uint64_t)1 << 30)
#define BLB_SERVE_MEMORY_MIN ((uint64_t)16 << 20)
/* serve --idle-timeout: its default, in seconds */
#define BLB_SERVE_IDLE 120

/*
 * The command line, parsed.  Targets read mode, direct, concurrent,
 * op_size, object_size, hints, conf and op_timeout; `blbench serve` also
 * target, listen, max_memory and idle_timeout.
 */
struct blb_opts {
	enum blb_mode mode;
	int seconds;			/* 0: no time limit (as rados bench) */
	unsigned concurrent;		/* -t */
	uint64_t op_size;		/* -b */
	uint64_t object_size;		/* -O; 0 until parsed: then op_size */
	uint64_t max_objects;		/* --max-objects; 0: no limit */
	unsigned op_timeout;		/* --op-timeout seconds; 0: none */
	bool direct;			/* --direct: O_DIRECT */
	bool crc;			/* --crc: crc32c per op, checked on read */
	bool lz4;			/* --lz4: ops are stored compressed */
	bool json;			/* --format json */
	bool cleanup;			/* false with --no-cleanup */
	bool verify;			/* false with --no-verify */
	bool hints;			/* false with --no-hints (rados:) */
	bool show_time;			/* --show-time */
	const char *plot;		/* --plot FILE.svg */
	const char *target;		/* --target SPEC; NULL: default directory */
	const char *run_name;		/* metadata object name */
	const char *prefix;		/* --prefix, for cleanup */
	const char *pool;		/* -p: without --target, rados:POOL */
	bool rb_compat;			/* --rados-bench-compat */
	const char *listen;		/* serve: HOST:PORT */
	uint64_t max_memory;		/* serve: --max-memory bytes */
	unsigned idle_timeout;		/* serve: --idle-timeout s; 0: none */
	const char *conf;		/* -c: ceph.conf for rados: (NULL: $CEPH_CONF) */
	/* file: this process holds the file's lock already (serve's O_DIRECT
	 * target, opened beside its buffered one, or a client of --jobs);
	 * rados: a client of --jobs writes under client 0's run lock */
	bool lock_held;
	/* --fsync N / --fdatasync N: a sync linked behind every Nth write
	 * (0: none); --sync dsync|sync: RWF_DSYNC or RWF_SYNC on every write
	 * (0: none).  The file: and dir: targets, also under serve. */
	unsigned fsync_every;
	unsigned fsync_kind;		/* BL_URING_SYNC_FSYNC or _FDATASYNC */
	int rw_flags;
	/* --jobs N: clients in one run (0: not given, as 1 for write) */
	unsigned jobs;
	char cmdline[1024];		/* for the plot's title */
};

struct blb_target;

/*
 * One operation in flight.  Its owner (the benchmark loop, or the server)
 * sets @done and @owner; a target fills the scratch fields while the
 * operation runs and calls blb_op_complete() from its poll function when
 * it is over.
 */
struct blb_op {
	struct blb_op *next;		/* the owner's completed queue */
	void *owner;			/* the owner's context */
	/* the owner's completion: queue the op (loop) or answer it (serve) */
	void (*done)(struct blb_op *op);
	uint64_t index;			/* op number (rados bench's op index) */
	uint64_t objno;
	uint64_t off;			/* byte offset inside the object */
	double t0;			/* when it was started */
	double lat;			/* seconds, set on completion */
	ssize_t res;
	bool busy;
	struct bl_list data;		/* read: the bytes received */
	char name[BLB_NAME_MAX];
	/* target scratch */
	int fd;
	uint64_t tag;
};

/*
 * Called by targets when an op is over, from their poll function (or from
 * closing the target): records the latency, takes @data (may be NULL) into
 * @op->data, and hands the op to its owner's @op->done.
 */
static inline void blb_op_complete(struct blb_op *op, ssize_t res,
				   struct bl_list *data)
{
	op->lat = blb_now() - op->t0;
	op->res = res;
	if (data)
		bl_list_claim_append(&op->data, data);
	op->done(op);
}

struct blb_target_ops {
	const char *kind;
	/* Starts writing @l (shared) at @op->off of @op's object. 0 or -errno. */
	int (*write)(struct blb_target *t, struct blb_op *op,
		     const struct bl_list *l);
	/* Starts reading @len bytes at @op->off of @op's object. */
	int (*read)(struct blb_target *t, struct blb_op *op, size_t len);
	/* Runs completions for up to @timeout_ms (-1: until one).  Count or -errno. */
	int (*poll)(struct blb_target *t, int timeout_ms);
	int (*remove)(struct blb_target *t, const char *name, uint64_t objno);
	int (*meta_put)(struct blb_target *t, const char *run,
			const struct bl_list *m);
	int (*meta_get)(struct blb_target *t, const char *run,
			struct bl_list *out);	/* -ENOENT when there is none */
	int (*meta_del)(struct blb_target *t, const char *run);
	/* Calls @fn for every object whose name starts with @prefix. */
	int (*list)(struct blb_target *t, const char *prefix,
		    int (*fn)(void *arg, const char *name), void *arg);
	/*
	 * The room now, for a target whose room shrinks as others write into
	 * it (a directory).  NULL: @t->room stays true.  0 or -errno.
	 */
	int (*room_now)(struct blb_target *t, uint64_t *room);
	void (*close)(struct blb_target *t);
};

struct blb_target {
	const struct blb_target_ops *ops;
	char desc[4096 + 16];		/* "dir:/var/tmp/blbench-ann" */
	bool direct;
	size_t mem_align;		/* payload memory alignment (>= 1) */
	size_t off_align;		/* offsets and lengths (>= 1) */
	/*
	 * With --direct, the file system's block (st_blksize, at least a
	 * page; 0: not known): an op's header is padded to it and its memory
	 * aligned to it, so that the body stays on block and page boundaries.
	 * The O_DIRECT alignment alone (512 on ext4) leaves the body 512
	 * bytes off every block, and ext4 then takes such a write to
	 * unwritten (preallocated) blocks as unaligned: it serialises it
	 * against every other write in flight.
	 */
	size_t blk_align;
	/*
	 * Room: bytes the run may store (free space less a reserve, or a raw
	 * device's object area).  UINT64_MAX: unknown (remote).
	 */
	uint64_t room;
	bool slots;			/* raw: objects are fixed slots */
	uint64_t obj_span;		/* raw: bytes per object slot (set by the bench) */
};

/* ---- opening (blbench_target.c) ----------------------------------------- */

/*
 * blb_target_open() - @spec is NULL (the default directory), "dir:PATH",
 * "file:PATH[:SIZE]", "tcp:HOST:PORT" or "rados:POOL".  @create: the run
 * will write (make the directory or file).  On failure returns -errno and
 * leaves a one-line reason in @err.
 */
int blb_target_open(struct blb_target **out, const char *spec,
		    const struct blb_opts *o, bool create, char *err,
		    size_t errlen);
/*
 * blb_target_open_ring() - a local target (dir: or file:) whose I/O goes
 * through @u (borrowed; it must outlive the target), for a server whose
 * connections run on the same ring.  Completions then only ever run from
 * the owner's bl_uring_run().
 */
int blb_target_open_ring(struct blb_target **out, const char *spec,
			 const struct blb_opts *o, bool create,
			 struct bl_uring *u, char *err, size_t errlen);
void blb_target_close(struct blb_target *t);

/* ---- the targets, each opened by blb_target_open*() only ----------------- */

/*
 * dir:PATH (blbench_dir.c).  @is_default: @path is blb_default_dir()'s,
 * which must be this user's own directory.  @u: as blb_target_open_ring()
 * (NULL: a ring of its own).
 */
int blb_dir_open(struct blb_target **out, const char *path, bool is_default,
		 const struct blb_opts *o, bool create, struct bl_uring *u,
		 char *err, size_t len);
/* The default directory: $BLBENCH_DIR, else /var/tmp/blbench-$USER. */
int blb_default_dir(char *buf, size_t len);

/*
 * file:PATH[:SIZE] (blbench_file.c); @u as blb_dir_open().  The file is
 * flock()ed while the target is open, shared for seq and rand (which
 * open it read-only), exclusive for everything else: a second writer is
 * refused with -EBUSY instead of overwriting the first one's slots.
 */
int blb_file_open(struct blb_target **out, const char *spec,
		  const struct blb_opts *o, bool create, struct bl_uring *u,
		  char *err, size_t len);

/*
 * blb_file_split() - PATH and SIZE (0: none) of the "PATH[:SIZE]" of a
 * file: spec, into @path (@len bytes) and @size.  0, -EINVAL when the
 * part after the last ':' was meant as a SIZE but is not one (1x, 10Q),
 * or -ENAMETOOLONG.
 */
int blb_file_split(const char *spec, char *path, size_t len, uint64_t *size);

/* tcp:HOST:PORT (blbench_tcp.c): a remote `blbench serve`. */
int blb_tcp_open(struct blb_target **out, const char *spec,
		 const struct blb_opts *o, bool create, char *err,
		 size_t len);

/*
 * blb_rados_open() - the rados:POOL target (blbench_rados.c, built with
 * BL_HAVE_CEPH only): connects with @o->conf (NULL: $CEPH_CONF, then
 * Ceph's default places).  -errno and a one-line reason in @err.
 */
int blb_rados_open(struct blb_target **out, const char *pool,
		   const struct blb_opts *o, char *err, size_t errlen);

/* ---- what the io_uring targets share (blbench_ring.c) -------------------- */

/*
 * The block --direct writes keep to on @fd (struct blb_target's
 * blk_align): st_blksize, at least a page and @off_align, at most
 * BLB_BLK_ALIGN_MAX (a file system may say its stripe width).
 */
#define BLB_BLK_ALIGN_MAX (64u << 10)
size_t blb_blk_align(const struct stat *st, size_t off_align);
/* Bytes a run may use on the file system holding @fd. */
int blb_fs_room(int fd, uint64_t *room, uint64_t *avail);
/* A ring sized for @o->concurrent ops in flight; NULL when out of memory. */
struct bl_uring *blb_make_ring(const struct blb_opts *o);
/*
 * Registered buffers for @u's large reads: @nbufs of @size bytes, or as
 * many as the memlock limit allows (halving down to one); none when not
 * even one can be registered (reads then take fresh memory).
 * Returns how many buffers it registered.
 */
unsigned blb_ring_pool(struct bl_uring *u, unsigned nbufs, size_t size);
/*
 * Submit through @u, making room once if the queue is full (completions
 * it runs only hand ops to their owners, so that is safe here) unless
 * @shared: a borrowed ring's callbacks belong to its owner's loop.
 */
/*
 * What the durability options ask of a target's writes: the options of
 * its next write (every one gets --sync's flags, every Nth the linked
 * sync), in @buf; NULL when there is nothing to ask.
 */
struct blb_durable {
	unsigned every, kind;
	int rw_flags;
	uint64_t writes;
};

void blb_durable_init(struct blb_durable *d, const struct blb_opts *o);
struct bl_uring_opts *blb_durable_next(struct blb_durable *d,
				       struct bl_uring_opts *buf);
/* blb_ring_write() with the options @wo (NULL: none) */
int blb_ring_write_opts(struct bl_uring *u, bool shared, int fd, off_t off,
			const struct bl_list *l, struct bl_uring_opts *wo,
			bl_uring_cb cb, void *arg);
int blb_ring_write(struct bl_uring *u, bool shared, int fd, off_t off,
		   const struct bl_list *l, bl_uring_cb cb, void *arg);
int blb_ring_read(struct bl_uring *u, bool shared, int fd, off_t off,
		  size_t len, size_t align, bl_uring_cb cb, void *arg);
/* Runs completions for up to @timeout_ms: a count, 0 on timeout, -errno. */
int blb_ring_poll(struct bl_uring *u, int timeout_ms);

#endif /* BLBENCH_TARGET_H */
