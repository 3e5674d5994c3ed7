/* SPDX-License-Identifier: MIT */
/*
 * blbench_jobs.c - --jobs N: N clients in one run, as fio's numjobs, where
 * rados bench users start N processes with --run-name and add their
 * numbers by hand.  Each client is a struct blb_bench of its own: its own
 * target (a ring, a connection to the server or a cluster handle), its
 * own ops and pattern, its op loop on a thread of its own.  The clients
 * share one object prefix and number their objects apart (blb_objno), so
 * one metadata object describes the run (each client's count of ops in
 * it) and seq, rand and cleanup find every client's objects.  This
 * thread prints what rados bench prints, for the run as a whole: the
 * per-second table from the counts the clients share (struct
 * blb_shared), then the summary from their statistics merged; JSON adds
 * a "jobs" array with each client's own figures.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "blbench.h"

struct jobs;

struct job {
	struct jobs *js;
	struct blb_bench *b;		/* client 0: the caller's */
	struct blb_bench own;		/* clients 1..N-1 */
	struct blb_opts o;		/* their options (lock_held) */
	pthread_t thread;
	bool running;			/* a thread was started */
	double end;			/* when its loop ended */
};

struct jobs {
	struct job *v;
	unsigned n;
	bool release;			/* the clients' threads may end */
	struct blb_shared sh;
	struct blb_stats agg;
};

/*
 * A client's thread.  It outlives its loop until the run is over: the
 * kernel cancels the io_uring requests a thread submitted when it exits
 * (a tcp: client's receive, armed again from its loop), and the metadata
 * and the cleanup still go through client 0's connection.
 */
static void *job_main(void *arg)
{
	struct job *j = arg;
	struct jobs *js = j->js;
	struct blb_shared *sh = &js->sh;

	blb_run_loop(j->b);
	pthread_mutex_lock(&sh->lock);
	j->end = blb_now();
	sh->running--;
	pthread_cond_broadcast(&sh->cond);
	while (!js->release)
		pthread_cond_wait(&sh->cond, &sh->lock);
	pthread_mutex_unlock(&sh->lock);
	return NULL;
}

/* Clients 1..N-1: their options and targets, and a read's layout. */
static int open_clients(struct jobs *js, struct blb_bench *b0)
{
	bool write = b0->mode == BLB_WRITE;
	char err[512];
	int r;

	for (unsigned k = 1; k < js->n; k++) {
		struct job *j = &js->v[k];
		struct blb_bench *b = &j->own;

		j->o = *b0->o;
		/* client 0 holds the file's or the run's lock for the run */
		j->o.lock_held = true;
		memset(b, 0, sizeof(*b));
		b->o = &j->o;
		b->mode = b0->mode;
		blb_out_init(&b->out, stdout, b0->o->json, b0->o->show_time);
		r = blb_target_open(&b->t, j->o.target, &j->o, write, err,
				    sizeof(err));
		if (r < 0) {
			fprintf(stderr, "blbench: client %u: %s\n", k, err);
			return r;
		}
		j->b = b;
		if (!write) {	/* what the metadata said, for each client */
			memcpy(b->prefix, b0->prefix, sizeof(b->prefix));
			b->op_size = b0->op_size;
			b->object_size = b0->object_size;
			b->hdr = b0->hdr;
			b->unit = b0->unit;
			b->nvar = b0->nvar;
			b->stride = b0->stride;
			b->seed = b0->seed;
			b->flags = b0->flags;
			b->pid = b0->pid;
		}
	}
	return 0;
}

static int setup_clients(struct jobs *js, struct blb_bench *b0)
{
	int r = 0;

	for (unsigned k = 0; !r && k < js->n; k++) {
		struct blb_bench *b = js->v[k].b;

		b->job = k;
		b->njobs = js->n;
		b->sh = &js->sh;
		if (b->mode == BLB_WRITE) {
			b->seed = b0->seed;	/* 0 for client 0: made there */
			r = blb_write_setup(b);
		} else {
			b->num_ops = b0->job_ops[k];
			r = blb_read_setup(b);
		}
	}
	return r;
}

/* Waits for the clients, printing the aggregate's line every second. */
static void watch(struct jobs *js, struct blb_out *out)
{
	struct blb_shared *sh = &js->sh;
	struct blb_stats *s = &js->agg;
	double next = s->start + 1, now;
	struct timespec ts;

	pthread_mutex_lock(&sh->lock);
	while (sh->running) {
		now = blb_now();
		if (now < next) {
			double wait = next - now;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += (time_t)wait;
			ts.tv_nsec += (long)((wait - (double)(time_t)wait) * 1e9);
			if (ts.tv_nsec >= 1000000000L) {
				ts.tv_sec++;
				ts.tv_nsec -= 1000000000L;
			}
			pthread_cond_timedwait(&sh->cond, &sh->lock, &ts);
			continue;
		}
		s->started = sh->started;
		s->finished = sh->finished;
		s->in_flight = sh->in_flight;
		s->cur_lat = sh->cur_lat;
		s->avg_lat = sh->finished ? sh->total_lat / sh->finished : 0;
		s->min_lat = sh->min_lat;
		s->max_lat = sh->max_lat;
		pthread_mutex_unlock(&sh->lock);
		/* printing may block on a slow terminal: not under the lock */
		blb_stats_tick(s, out, now);
		next += 1;
		pthread_mutex_lock(&sh->lock);
	}
	pthread_mutex_unlock(&sh->lock);
}

/* Starts every client's loop; a client that cannot start fails. */
static void start_clients(struct jobs *js)
{
	sigset_t block, old;

	/* signals go to this thread: the clients read blb_stop */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	js->sh.running = js->n;
	for (unsigned k = 0; k < js->n; k++) {
		struct job *j = &js->v[k];
		int r = pthread_create(&j->thread, NULL, job_main, j);

		if (r) {
			fprintf(stderr, "blbench: client %u: cannot start a thread: %s\n",
				k, strerror(r));
			j->b->failed = -r;
			pthread_mutex_lock(&js->sh.lock);
			js->sh.running--;
			pthread_mutex_unlock(&js->sh.lock);
		} else {
			j->running = true;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* The run's statistics: the table's per-second ones, the clients' ops. */
static void merge(struct jobs *js)
{
	struct blb_stats *s = &js->agg;

	s->started = s->finished = 0;
	s->total_lat = s->avg_lat = s->lat_m2 = 0;
	s->min_lat = 9999.0;
	s->max_lat = 0;
	s->stored_bytes = s->logical_bytes = 0;
	blb_hist_init(&s->lat_hist);
	for (unsigned k = 0; k < js->n; k++) {
		struct blb_bench *b = js->v[k].b;

		b->st.logical_bytes = (uint64_t)b->st.finished * b->op_size;
		blb_stats_merge(s, &b->st);
	}
	s->in_flight = js->sh.in_flight;
}

/* JSON: each client's own figures, after the run's. */
static void print_clients(struct jobs *js, double t0)
{
	struct blb_out *o = &js->v[0].b->out;

	blb_out_array_begin(o, "jobs");
	for (unsigned k = 0; k < js->n; k++) {
		struct job *j = &js->v[k];
		const struct blb_stats *s = &j->b->st;
		double t = j->end - t0;
		double bw = t > 0 ? (double)s->finished * s->op_size / t / BLB_MB
				  : 0;

		blb_out_open(o);
		blb_out_kv(o, "job", "%u", k);
		blb_out_kv(o, "total_time_run", "%f", t);
		blb_out_kv(o, s->is_read ? "total_reads_made"
					 : "total_writes_made",
			   "%d", s->finished);
		blb_out_kv(o, "bandwidth", "%f", bw);
		blb_out_kv(o, "average_iops", "%d",
			   t > 0 ? (int)(s->finished / t) : 0);
		blb_out_kv(o, "average_latency", "%f", s->avg_lat);
		blb_out_kv(o, "max_latency", "%f", s->max_lat);
		blb_out_kv(o, "min_latency", "%f",
			   s->finished ? s->min_lat : 0);
		blb_out_kv(o, "latency_p50", "%f",
			   blb_hist_quantile(&s->lat_hist, 0.5) / 1e9);
		blb_out_kv(o, "latency_p99", "%f",
			   blb_hist_quantile(&s->lat_hist, 0.99) / 1e9);
		blb_out_close(o);
	}
	blb_out_array_end(o);
}

/* After a failed write: what each client wrote goes, if it may. */
static void take_back(struct jobs *js)
{
	struct blb_bench *b0 = js->v[0].b;
	bool idle = js->sh.in_flight == 0;

	for (unsigned k = 0; k < js->n; k++) {
		struct blb_bench *b = js->v[k].b;

		if (b0->o->cleanup && idle)
			blb_remove_objects(b, ((uint64_t)b->st.started +
					       b->opo - 1) / b->opo, false);
	}
	if (!(b0->o->cleanup && idle) && js->sh.started && !b0->t->slots)
		fprintf(stderr, "blbench: what this run wrote is left on %s; `blbench cleanup --prefix %s` removes it\n",
			b0->t->desc, b0->prefix);
}

/* write: the metadata of every client's ops, then --plot and cleanup. */
static int finish_write(struct jobs *js, double time_run)
{
	struct blb_bench *b0 = js->v[0].b;
	const struct blb_opts *o = b0->o;
	uint64_t sum = 0;
	struct bl_list m;
	int r;

	for (unsigned k = 0; k < js->n; k++) {
		struct blb_bench *b = js->v[k].b;

		/* after a wrap every slot holds its op of this run */
		b0->job_ops[k] = b->wrapped ? b->wrap_ops
					    : (uint64_t)b->st.finished;
		sum += b0->job_ops[k];
		if (b->capped)
			fprintf(stderr, "blbench: client %u stopped after %d ops: %s has no room for more\n",
				k, b->st.started, b->t->desc);
	}
	if (sum > INT32_MAX) {
		fprintf(stderr, "blbench: %" PRIu64 " ops are more than the metadata can count\n",
			sum);
		return BLB_EXIT_FAIL;
	}
	bl_list_init(&m);
	r = blb_meta_encode(b0, (uint32_t)sum, &m);
	if (r == 0)
		r = b0->t->ops->meta_put(b0->t, o->run_name, &m);
	bl_list_clear(&m);
	if (r < 0) {
		fprintf(stderr, "blbench: writing %s to %s: %s\n", o->run_name,
			b0->t->desc, strerror(-r));
		return BLB_EXIT_FAIL;
	}
	if (blb_write_plot(b0, &js->agg, time_run) < 0)
		r = -1;
	for (unsigned k = 0; o->cleanup && k < js->n; k++) {
		struct blb_bench *b = js->v[k].b;

		if (blb_remove_objects(b, (b0->job_ops[k] + b->opo - 1) /
						  b->opo,
				       k == js->n - 1) < 0) {
			r = -1;
			break;
		}
	}
	return r < 0 ? BLB_EXIT_FAIL : 0;
}

static int run(struct jobs *js)
{
	struct blb_bench *b0 = js->v[0].b;
	const struct blb_opts *o = b0->o;
	bool write = b0->mode == BLB_WRITE;
	struct blb_out *out = &b0->out;
	unsigned bad = 0;
	int failed = 0, r;
	double t0, time_run = 0;

	blb_stats_init(&js->agg, b0->op_size, b0->object_size, !write);
	blb_out_open(out);
	if (write)
		blb_out_write_intro(out, o, b0->prefix);
	blb_out_datas_begin(out);
	js->agg.start = t0 = blb_now();
	blb_stats_tick(&js->agg, out, t0);
	start_clients(js);
	watch(js, out);
	for (unsigned k = 0; k < js->n; k++) {
		struct job *j = &js->v[k];

		if (j->running && j->end - t0 > time_run)
			time_run = j->end - t0;
		if (!failed)
			failed = j->b->failed;
		bad += j->b->bad;
	}
	blb_out_datas_end(out);
	merge(js);
	blb_stats_final_sample(&js->agg, t0 + time_run);
	if (failed) {
		blb_out_close(out);
		if (write)
			take_back(js);
		return BLB_EXIT_FAIL;
	}
	blb_out_summary(out, &js->agg, time_run);
	if (write)
		blb_print_stored(b0, &js->agg);
	print_clients(js, t0);
	blb_out_close(out);
	if (write)
		return finish_write(js, time_run);
	r = blb_write_plot(b0, &js->agg, time_run);
	if (bad) {
		fprintf(stderr, "blbench: %u read%s did not return what write stored\n",
			bad, bad != 1 ? "s" : "");
		return BLB_EXIT_FAIL;
	}
	return r < 0 ? BLB_EXIT_FAIL : 0;
}

int blb_jobs_run(struct blb_bench *b0)
{
	struct jobs js;
	pthread_condattr_t ca;
	int r;

	memset(&js, 0, sizeof(js));
	js.n = b0->njobs;
	js.v = calloc(js.n, sizeof(*js.v));
	if (!js.v) {
		fprintf(stderr, "blbench: out of memory\n");
		return BLB_EXIT_FAIL;
	}
	js.v[0].b = b0;
	pthread_mutex_init(&js.sh.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&js.sh.cond, &ca);
	pthread_condattr_destroy(&ca);
	js.sh.min_lat = 9999.0;

	for (unsigned k = 0; k < js.n; k++)
		js.v[k].js = &js;
	r = open_clients(&js, b0) < 0 ? BLB_EXIT_FAIL : 0;
	if (!r)
		r = setup_clients(&js, b0);
	if (!r)
		r = run(&js);
	pthread_mutex_lock(&js.sh.lock);
	js.release = true;
	pthread_cond_broadcast(&js.sh.cond);
	pthread_mutex_unlock(&js.sh.lock);
	for (unsigned k = 0; k < js.n; k++)
		if (js.v[k].running)
			pthread_join(js.v[k].thread, NULL);
	/* closing a target completes (or cancels) what it has in flight */
	for (unsigned k = 1; k < js.n; k++) {
		if (!js.v[k].b)
			continue;
		blb_target_close(js.v[k].b->t);
		blb_bench_free(js.v[k].b);
	}
	blb_stats_free(&js.agg);
	pthread_cond_destroy(&js.sh.cond);
	pthread_mutex_destroy(&js.sh.lock);
	free(js.v);
	return r;
}
