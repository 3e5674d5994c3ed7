/* SPDX-License-Identifier: MIT */
/*
 * blbench.h - what the parts of blbench share (never installed).
 *
 * blbench is a rados-bench-like benchmark built on libbufferlist's public
 * API.  blbench.c parses the command line and runs the benchmark loops,
 * blbench_out.c prints what rados bench prints (plain and JSON) and draws
 * the --plot SVG, blbench_target.c stores objects: in a directory, in a raw
 * file or block device, or on a remote `blbench serve` over TCP;
 * blbench_rados.c in a Ceph pool (only when built with the Ceph bridge).
 *
 * Names: blb_ for what these files share; everything else is static.
 */
#ifndef BLBENCH_H
#define BLBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <bufferlist.h>

/* rados bench's names, kept so that scripts and habits carry over */
#define BLB_META_DEFAULT "benchmark_last_metadata"
#define BLB_PREFIX "benchmark_data"
#define BLB_MB (1024.0 * 1024.0)	/* rados bench's MB is 2^20 bytes */

#define BLB_NAME_MAX 256

/* Exit statuses: 0 success, 1 failure at run time, 2 bad usage. */
#define BLB_EXIT_FAIL 1
#define BLB_EXIT_USAGE 2

enum blb_mode {
	BLB_WRITE = 1,
	BLB_SEQ,
	BLB_RAND,
	BLB_CLEANUP,
	BLB_SERVE,
};

/* The command line, parsed. */
struct blb_opts {
	enum blb_mode mode;
	int seconds;			/* 0: no time limit (as rados bench) */
	unsigned concurrent;		/* -t */
	uint64_t op_size;		/* -b */
	uint64_t object_size;		/* -O; 0 until parsed: then op_size */
	uint64_t max_objects;		/* --max-objects; 0: no limit */
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
	const char *pool;		/* -p: accepted, selects nothing */
	const char *listen;		/* serve: HOST:PORT */
	const char *conf;		/* -c: ceph.conf for rados: (NULL: $CEPH_CONF) */
	char cmdline[1024];		/* for the plot's title */
};

/* ---- statistics and output (blbench_out.c) ------------------------------ */

/* One per-second row of the table, kept for --plot. */
struct blb_sample {
	double t;			/* seconds since start */
	double cur_bw, avg_bw;		/* MB/s; cur_bw < 0: no completion */
	double last_lat, avg_lat;	/* seconds; last_lat < 0: '-' */
	int cur_ops, started, finished;
};

/*
 * What rados bench's bench_data holds, with the same meanings.  The loop
 * in blbench.c updates the per-op fields; blb_stats_tick() does the
 * per-second ones.
 */
struct blb_stats {
	uint64_t op_size, object_size;
	bool is_read;
	int in_flight, started, finished;
	double start;			/* monotonic seconds */
	double cur_lat, min_lat, max_lat, avg_lat;
	double total_lat, lat_m2;	/* Welford, as rados bench */
	/* per-second, as rados bench's bench_interval_data */
	int tick;
	int prev_finished, cycles_since_change;
	double min_bw, max_bw, avg_bw, bw_m2;
	int bw_cycles;
	int min_iops, max_iops, iops;
	double avg_iops, iops_m2;
	int iops_cycles;
	/* what the run stored (lz4: compressed), for the summary's footnote */
	uint64_t stored_bytes, logical_bytes;
	/* for --plot */
	struct blb_sample *samples;
	size_t nsamples, samples_cap;
};

struct blb_out {
	FILE *f;
	bool json;
	bool show_time;
	int depth;			/* JSON nesting */
	bool first[8];			/* no comma before the next member */
};

double blb_now(void);

/*
 * blb_fail() - writes the message (and ": strerror(-r)" when r < 0) into
 * @err; returns r when negative, else -EINVAL.  For target set-up errors.
 */
int blb_fail(char *err, size_t len, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void blb_stats_init(struct blb_stats *s, uint64_t op_size,
		    uint64_t object_size, bool is_read);
void blb_stats_free(struct blb_stats *s);
void blb_stats_op_done(struct blb_stats *s, double lat);
/* The per-second status line (rados bench's status_printer). */
void blb_stats_tick(struct blb_stats *s, struct blb_out *o, double now);
/* A last plot point at the end of a run that ended between ticks. */
void blb_stats_final_sample(struct blb_stats *s, double now);

void blb_out_init(struct blb_out *o, FILE *f, bool json, bool show_time);
void blb_out_open(struct blb_out *o);		/* the "bench" object */
void blb_out_close(struct blb_out *o);
void blb_out_write_intro(struct blb_out *o, const struct blb_opts *opt,
			 const char *prefix);
void blb_out_datas_begin(struct blb_out *o);
void blb_out_datas_end(struct blb_out *o);
void blb_out_summary(struct blb_out *o, struct blb_stats *s,
		     double time_run);
void blb_out_kv(struct blb_out *o, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --plot: bandwidth and latency per second as an SVG.  0 or -errno. */
int blb_plot_svg(const char *path, const struct blb_stats *s,
		 const char *title, double time_run);

/* ---- targets (blbench_target.c) ----------------------------------------- */

struct blb_target;
struct blb_op;

/*
 * One operation in flight.  The benchmark owns it; a target fills the
 * scratch fields while the operation runs and calls blb_op_complete()
 * from its poll function when it is over.
 */
struct blb_op {
	struct blb_op *next;		/* completed queue */
	void *bench;			/* the loop's context */
	/* if set, blb_op_complete() calls it instead of queueing (serve) */
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
 * @op->data, and queues the op for the benchmark loop — or calls @op->done.
 */
void blb_op_complete(struct blb_op *op, ssize_t res, struct bl_list *data);

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
	void (*close)(struct blb_target *t);
};

struct blb_target {
	const struct blb_target_ops *ops;
	char desc[4096 + 16];		/* "dir:/var/tmp/blbench-ann" */
	bool direct;
	size_t mem_align;		/* payload memory alignment (>= 1) */
	size_t off_align;		/* offsets and lengths (>= 1) */
	/*
	 * Room: bytes the run may store (free space less a reserve, or a raw
	 * device's object area).  UINT64_MAX: unknown (remote).
	 */
	uint64_t room;
	bool slots;			/* raw: objects are fixed slots */
	uint64_t obj_span;		/* raw: bytes per object slot (set by the bench) */
};

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

/*
 * blb_rados_open() - the rados:POOL target (blbench_rados.c, built with
 * BL_HAVE_CEPH only): connects with @o->conf (NULL: $CEPH_CONF, then
 * Ceph's default places).  -errno and a one-line reason in @err.
 */
int blb_rados_open(struct blb_target **out, const char *pool,
		   const struct blb_opts *o, char *err, size_t errlen);

/* The default directory: $BLBENCH_DIR, else /var/tmp/blbench-$USER. */
int blb_default_dir(char *buf, size_t len);

/* `blbench serve`: runs until SIGINT/SIGTERM.  Exit status. */
int blb_serve(const struct blb_opts *o);

/* Parses "SIZE" with K/M/G/T suffixes (powers of 1024).  0 or -EINVAL. */
int blb_parse_size(const char *s, uint64_t *out);

/* Set by SIGINT / SIGTERM: stop starting new operations. */
extern volatile int blb_stop;

#endif /* BLBENCH_H */
