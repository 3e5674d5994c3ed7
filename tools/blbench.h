/* SPDX-License-Identifier: MIT */
/*
 * blbench.h - what the parts of blbench above the targets share (never
 * installed): main and the options (blbench.c), the modes (blbench_mode.c),
 * a client's steps before and after its loop (blbench_setup.c), the op
 * loop (blbench_run.c), the metadata object (blbench_meta.c), the output
 * (blbench_out.c, its latency histogram in blbench_hist.c, the --plot SVG
 * in blbench_plot.c), the clients of --jobs (blbench_jobs.c) and `blbench
 * serve` (blbench_serve.c, its requests' replies in blbench_serve_reply.c,
 * both over blbench_serve.h).  Targets never include it: what they share
 * with these files is blbench_target.h.
 * Names: blb_ for what these files share; everything else is static.
 */
#ifndef BLBENCH_H
#define BLBENCH_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <bufferlist.h>
#include "blbench_hist.h"
#include "blbench_target.h"

/* rados bench's names, kept so that scripts and habits carry over */
#define BLB_META_DEFAULT "benchmark_last_metadata"
#define BLB_PREFIX "benchmark_data"
#define BLB_MB (1024.0 * 1024.0)	/* rados bench's MB is 2^20 bytes */

/* Exit statuses: 0 success, 1 failure at run time, 2 bad usage. */
#define BLB_EXIT_FAIL 1
#define BLB_EXIT_USAGE 2

/* What an op stores (blbench_run.c) and the metadata records. */
#define BLB_HDR_MIN 64			/* header bytes without O_DIRECT */
#define BLB_PATTERN_MAX (1ull << 30)	/* pattern memory, at most */
#define BLB_FLAG_CRC 1u
#define BLB_FLAG_LZ4 2u
/*
 * --rados-bench-compat, or a run rados bench wrote: each op is rados
 * bench's "I'm the %16dth op!" with its NUL (BLB_RB_HDR bytes) and 'z' up
 * to -b, and rados bench's metadata fields are all that a reader needs.
 */
#define BLB_FLAG_RBCOMPAT 4u
#define BLB_RB_HDR 31
#define BLB_RB_HOST_MAX 29		/* rados bench's hostname[30] */
/* --jobs: clients in one run, at most */
#define BLB_JOBS_MAX 64
/* one io_uring transfer stays under 2 GiB */
#define BLB_MAX_OP_SIZE (1ull << 30)
/* -O: 16 TiB, so that offsets in an object and slot spans never overflow */
#define BLB_MAX_OBJECT_SIZE (1ull << 44)

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
 * in blbench_run.c updates the per-op fields; blb_stats_tick() does the
 * per-second ones.
 */
struct blb_stats {
	uint64_t op_size, object_size;
	bool is_read;
	int in_flight, started, finished;
	double start;			/* monotonic seconds */
	double cur_lat, min_lat, max_lat, avg_lat;
	double total_lat, lat_m2;	/* Welford, as rados bench */
	struct blb_hist lat_hist;	/* every op's, for the percentiles */
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
	/* the library's copied bytes (all threads) when the run began */
	uint64_t copied0;
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

void blb_stats_init(struct blb_stats *s, uint64_t op_size,
		    uint64_t object_size, bool is_read);
void blb_stats_free(struct blb_stats *s);
void blb_stats_op_done(struct blb_stats *s, double lat);
/* The per-second status line (rados bench's status_printer). */
void blb_stats_tick(struct blb_stats *s, struct blb_out *o, double now);
/* A last plot point at the end of a run that ended between ticks. */
void blb_stats_final_sample(struct blb_stats *s, double now);
/*
 * Adds the per-op statistics of @src (ops finished, latencies and their
 * histogram, stored bytes) to @dst, which keeps its own per-second ones:
 * the summary of --jobs from its clients' runs.
 */
void blb_stats_merge(struct blb_stats *dst, const struct blb_stats *src);

void blb_out_init(struct blb_out *o, FILE *f, bool json, bool show_time);
void blb_out_open(struct blb_out *o);		/* the "bench" object */
void blb_out_close(struct blb_out *o);
void blb_out_write_intro(struct blb_out *o, const struct blb_opts *opt,
			 const char *prefix);
void blb_out_datas_begin(struct blb_out *o);
void blb_out_datas_end(struct blb_out *o);
/* JSON: an array member @key ("datas", "jobs"); nothing in plain text. */
void blb_out_array_begin(struct blb_out *o, const char *key);
void blb_out_array_end(struct blb_out *o);
void blb_out_summary(struct blb_out *o, struct blb_stats *s,
		     double time_run);
void blb_out_kv(struct blb_out *o, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* ---- the --plot SVG (blbench_plot.c) ------------------------------------ */

/*
 * --plot: bandwidth and latency per second, and the latency distribution,
 * as an SVG.  0 or -errno.
 */
int blb_plot_svg(const char *path, const struct blb_stats *s,
		 const char *title, double time_run);

/* ---- one run of write, seq, rand or cleanup ---------------------------- */

/*
 * What the clients of --jobs share with the thread that prints the
 * aggregate table: the counts the per-second line needs, under @lock.
 * Each client also keeps its own struct blb_stats, merged at the end.
 */
struct blb_shared {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* a client's loop ended */
	int started, finished, in_flight;
	double cur_lat, total_lat, min_lat, max_lat;
	unsigned running;		/* clients whose loop has not ended */
};

/* A run: its options, its target, and the layout of what write stored. */
struct blb_bench {
	const struct blb_opts *o;
	struct blb_target *t;
	struct blb_stats st;
	struct blb_out out;
	enum blb_mode mode;
	/*
	 * --jobs: this client's number and the run's count of them (1: a
	 * run of one).  Client @job of @njobs owns the objects numbered
	 * job, job + njobs, job + 2 njobs...: its op i goes to object
	 * (i / opo) * njobs + job (blb_objno), so the clients share one
	 * prefix and, on a file:, interleave their slots.
	 */
	unsigned job, njobs;
	uint64_t job_ops[BLB_JOBS_MAX];	/* metadata: ops per client */
	struct blb_shared *sh;		/* NULL: a run of one */
	/* the layout of what write stored (from the metadata for reads) */
	uint64_t op_size, object_size, opo, stride;
	size_t hdr, body_len;
	size_t unit, nvar;		/* pattern: nvar regions, unit apart */
	size_t halign;			/* header raws' alignment */
	uint32_t flags;
	uint64_t seed;
	int pid;
	char prefix[BLB_NAME_MAX - 32];
	uint64_t num_ops;		/* reads: ops the write made */
	uint64_t max_ops;		/* write: stop after this many (0: none) */
	uint64_t cap_ops;		/* write: the target's room */
	/* write: a time-based run on fixed slots (file:) wraps to the
	 * first slot when it reaches the end: ops per pass (0: no wrap) */
	uint64_t wrap_ops;
	bool wrapped;			/* write: it did */
	struct bl_raw *pattern;
	/* ops in flight and the queue of those that completed */
	struct blb_op *ops;
	unsigned nops;
	struct blb_op *done_head, **done_tail;
	uint64_t rng;
	unsigned bad;			/* verification failures */
	int failed;			/* first I/O error (-errno), 0 if none */
	bool capped;			/* write stopped for want of room */
	double end;
};

static inline size_t blb_align_up(size_t x, size_t a)
{
	return a > 1 ? (x + a - 1) / a * a : x;
}

/* The object number of this client's object @local (see struct blb_bench). */
static inline uint64_t blb_objno(const struct blb_bench *b, uint64_t local)
{
	return b->njobs > 1 ? local * b->njobs + b->job : local;
}

/* ---- the op loop (blbench_run.c) ----------------------------------------- */

/* @n ops for the loop, each completing into @b's queue.  0 or -ENOMEM. */
int blb_ops_alloc(struct blb_bench *b, unsigned n);
/*
 * After the target is closed: drops what it completed, frees the ops, the
 * pattern and the statistics.
 */
void blb_bench_free(struct blb_bench *b);
/* The pattern's layout for @inflight ops in flight, then its memory. */
void blb_plan_pattern(struct blb_bench *b, unsigned inflight);
int blb_make_pattern(struct blb_bench *b);
/* Object @objno's name: PREFIX_objectN. */
void blb_op_name(const struct blb_bench *b, uint64_t objno, char *buf,
		 size_t len);
/* The loop all three modes share.  Seconds it ran. */
double blb_run_loop(struct blb_bench *b);

/* ---- the metadata object (blbench_meta.c) -------------------------------- */

/*
 * The metadata of @b's run of @num_ops ops.  A run of several clients
 * (@b->njobs > 1) also records each one's count, from @b->job_ops (its
 * rados bench field of ops is then their sum).  0 or -ENOMEM.
 */
int blb_meta_encode(const struct blb_bench *b, uint32_t num_ops,
		    struct bl_list *m);
/*
 * Reads the metadata of the last write into @b; prints why not.  0,
 * -ENOENT (none: nothing printed), -EBADMSG (not blbench's, or damaged)
 * or another -errno.
 */
int blb_meta_load(struct blb_bench *b);
/*
 * The object prefix of the run metadata object @run of @t describes, into
 * @prefix; errors as blb_meta_load(), printing nothing.
 */
int blb_meta_prefix(struct blb_target *t, const char *run, char *prefix,
		    size_t len);

/* ---- the modes (blbench_mode.c): each returns the exit status ------------ */

int blb_mode_write(struct blb_bench *b);
int blb_mode_read(struct blb_bench *b);		/* seq and rand */
int blb_mode_cleanup(struct blb_bench *b);

/* ---- a client's steps (blbench_setup.c) ---------------------------------- */

/*
 * The steps of a mode that --jobs runs once per client: the layout, the
 * room and the memory of a write (@b->seed, when set, is kept: the
 * clients of one run share it), and of a read after its metadata was
 * loaded.  0, or the exit status after printing why.
 */
int blb_write_setup(struct blb_bench *b);
int blb_read_setup(struct blb_bench *b);
/*
 * Removes this client's objects 0..@nobj-1 (and with @meta the metadata
 * object), printing rados bench's messages.  0 or the first -errno.
 */
int blb_remove_objects(struct blb_bench *b, uint64_t nobj, bool meta);
/* write --lz4: what the ops of @s stored, after the summary. */
void blb_print_stored(struct blb_bench *b, const struct blb_stats *s);
/* --plot, if asked: 0 or -errno (printed). */
int blb_write_plot(struct blb_bench *b, const struct blb_stats *s,
		   double time_run);

/* ---- --jobs (blbench_jobs.c) --------------------------------------------- */

/*
 * A write, seq or rand of @b0->njobs clients: @b0 is client 0 (its
 * target open; for reads its metadata loaded), the others open their own
 * target (a ring, a connection or a cluster handle each) and run the op
 * loop on a thread each while this thread prints the aggregate table and
 * summary.  Returns the exit status.
 */
int blb_jobs_run(struct blb_bench *b0);

/* ---- `blbench serve` (blbench_serve.c) ----------------------------------- */

/* Runs until SIGINT/SIGTERM.  Exit status. */
int blb_serve(const struct blb_opts *o);

#endif /* BLBENCH_H */
