/* SPDX-License-Identifier: MIT */
/*
 * blbench_mode.c - what each mode does around the op loop: write plans
 * the layout and checks the target's room (blbench_setup.c), runs the
 * loop, prints the summary and leaves the metadata object (then cleans up
 * unless --no-cleanup); seq and rand load that metadata, run the loop and report
 * what did not verify; cleanup removes a run's objects and then what no
 * run's metadata names any more (see blb_mode_cleanup), or everything
 * named PREFIX*.  It uses the target only through its ops, and prints
 * rados bench's messages where rados bench has one.
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
#include <unistd.h>
#include "blbench.h"

int blb_mode_write(struct blb_bench *b)
{
	const struct blb_opts *o = b->o;
	struct blb_target *t = b->t;
	struct bl_list m;
	double time_run;
	int r;

	if (b->njobs > 1)
		return blb_jobs_run(b);
	r = blb_write_setup(b);
	if (r)
		return r;
	blb_out_open(&b->out);
	blb_out_write_intro(&b->out, o, b->prefix);
	time_run = blb_run_loop(b);
	b->st.logical_bytes = (uint64_t)b->st.finished * b->op_size;

	if (b->failed) {
		blb_out_close(&b->out);
		/* no metadata for a failed run: take back what it wrote */
		if (o->cleanup && b->st.in_flight == 0)
			blb_remove_objects(b, ((uint64_t)b->st.started + b->opo - 1) /
						  b->opo,
				       false);
		else if (b->st.started && !t->slots)
			fprintf(stderr, "blbench: what this run wrote is left on %s; `blbench cleanup --prefix %s` removes it\n",
				t->desc, b->prefix);
		return BLB_EXIT_FAIL;
	}
	blb_out_summary(&b->out, &b->st, time_run);
	blb_print_stored(b, &b->st);
	blb_out_close(&b->out);
	if (b->capped)
		fprintf(stderr, "blbench: stopped after %d ops: %s has no room for more\n",
			b->st.started, t->desc);

	bl_list_init(&m);
	/* after a wrap every slot holds its op of this run: all of them */
	r = blb_meta_encode(b, (uint32_t)(b->wrapped ? b->wrap_ops
						     : (uint64_t)b->st.finished),
			    &m);
	if (r == 0)
		r = t->ops->meta_put(t, o->run_name, &m);
	bl_list_clear(&m);
	if (r < 0) {
		fprintf(stderr, "blbench: writing %s to %s: %s\n", o->run_name,
			t->desc, strerror(-r));
		return BLB_EXIT_FAIL;
	}
	if (blb_write_plot(b, &b->st, time_run) < 0)
		r = -1;
	if (o->cleanup &&
	    blb_remove_objects(b, b->wrapped ? b->wrap_ops / b->opo
			   : (b->st.finished + b->opo - 1) / b->opo, true) < 0)
		r = -1;
	return r < 0 ? BLB_EXIT_FAIL : 0;
}

int blb_mode_read(struct blb_bench *b)
{
	const struct blb_opts *o = b->o;
	struct blb_target *t = b->t;
	double time_run;
	int r;

	r = blb_meta_load(b);
	if (r == -ENOENT)
		fprintf(stderr, "Must write data before running a read benchmark! (no %s in %s)\n",
			o->run_name, t->desc);
	if (r < 0)
		return BLB_EXIT_FAIL;
	/* a run of several clients is read by as many */
	if (o->jobs && o->jobs != b->njobs) {
		fprintf(stderr, "blbench: %s was written by %u client%s: read it with --jobs %u, or without --jobs\n",
			o->run_name, b->njobs, b->njobs != 1 ? "s" : "",
			b->njobs);
		return BLB_EXIT_FAIL;
	}
	if (b->njobs > 1)
		return blb_jobs_run(b);
	r = blb_read_setup(b);
	if (r)
		return r;
	blb_out_open(&b->out);
	time_run = blb_run_loop(b);
	if (b->failed) {
		blb_out_close(&b->out);
		return BLB_EXIT_FAIL;
	}
	blb_out_summary(&b->out, &b->st, time_run);
	blb_out_close(&b->out);
	r = blb_write_plot(b, &b->st, time_run);
	if (b->bad) {
		fprintf(stderr, "blbench: %u read%s did not return what write stored\n",
			b->bad, b->bad != 1 ? "s" : "");
		return BLB_EXIT_FAIL;
	}
	return r < 0 ? BLB_EXIT_FAIL : 0;
}

/* ---- cleanup --------------------------------------------------------------- */

/* A growing list of names. */
struct names {
	char **v;
	size_t n, cap;
};

static int names_add(struct names *ns, const char *name)
{
	char *copy;

	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 16;
		char **v = realloc(ns->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	copy = strdup(name);
	if (!copy)
		return -ENOMEM;
	ns->v[ns->n++] = copy;
	return 0;
}

static void names_free(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

/* Every name that may be a metadata object: not an object, not a dot file. */
static int collect_candidate(void *arg, const char *name)
{
	if (!strncmp(name, BLB_PREFIX, strlen(BLB_PREFIX)) || name[0] == '.')
		return 0;
	return names_add(arg, name);
}

/*
 * The runs whose metadata objects are on the target: their names into
 * @meta, the object prefix each names into @pfx (same index).  What does
 * not read as metadata (a user's file beside the objects, a damaged
 * object) is no run.  0 or -errno.
 */
static int find_runs(struct blb_bench *b, struct names *meta,
		     struct names *pfx)
{
	struct names cand = { 0 };
	char p[BLB_NAME_MAX];
	int r;

	r = b->t->ops->list(b->t, "", collect_candidate, &cand);
	for (size_t i = 0; r == 0 && i < cand.n; i++) {
		if (blb_stop > 1) {
			r = -EINTR;
			break;
		}
		r = blb_meta_prefix(b->t, cand.v[i], p, sizeof(p));
		if (r == 0) {
			r = names_add(meta, cand.v[i]);
			if (r == 0)
				r = names_add(pfx, p);
		} else if (r == -ENOENT || r == -EBADMSG || r == -EACCES ||
			   r == -EPERM || r == -EISDIR || r == -ELOOP) {
			r = 0;
		}
	}
	names_free(&cand);
	return r;
}

/* Object @name is PREFIX_objectN for one of the prefixes in @pfx. */
static bool claimed(const struct names *pfx, const char *name)
{
	for (size_t i = 0; i < pfx->n; i++) {
		size_t len = strlen(pfx->v[i]);

		if (!strncmp(name, pfx->v[i], len) &&
		    !strncmp(name + len, "_object", 7))
			return true;
	}
	return false;
}

struct sweep {
	struct blb_bench *b;
	const struct names *keep;	/* prefixes of runs to keep; NULL: none */
	size_t host_len;		/* with keep: "benchmark_data_HOST_" */
	uint64_t removed, live;
	bool count_only;		/* count what would go into @left */
	uint64_t left;
};

/*
 * Object @name (benchmark_data_HOST_PID_objectN) of a process of this
 * host that still runs: a write under way, whose metadata is yet to come.
 * A pid reused since only keeps a dead run's objects, the safe mistake.
 */
static bool of_live_process(const struct sweep *sw, const char *name)
{
	const char *p = name + sw->host_len;
	char *end;
	long pid;

	if (*p < '1' || *p > '9')
		return false;
	errno = 0;
	pid = strtol(p, &end, 10);
	if (errno || pid <= 0 || pid > INT_MAX || strncmp(end, "_object", 7))
		return false;
	return pid != getpid() && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

static int sweep_one(void *arg, const char *name)
{
	struct sweep *sw = arg;
	struct blb_target *t = sw->b->t;
	int r;

	if (blb_stop > 1)
		return -EINTR;
	if (sw->keep && claimed(sw->keep, name))
		return 0;
	if (sw->keep && of_live_process(sw, name)) {
		sw->live++;
		return 0;
	}
	if (sw->count_only) {
		sw->left++;
		return 0;
	}
	r = t->ops->remove(t, name, UINT64_MAX);
	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "blbench: removing %s: %s\n", name, strerror(-r));
		return r;
	}
	sw->removed += r == 0;
	return 0;
}

/*
 * cleanup: first the run the metadata object (--run-name) names, as
 * rados bench does: its objects, then the metadata object.  Then, where
 * the target can list its objects, what no run's metadata names any more.
 * Without --prefix: this host's objects (benchmark_data_HOST_*) that
 * belong to no run with a metadata object on the target — a write that
 * was killed, or failed with ops in flight, leaves such objects, and one
 * cleanup removes them too — while a run kept under another --run-name
 * stays readable, and so do the objects of a write still under way on
 * this host (its pid is alive).  With --prefix P: every object named P*,
 * and the metadata object of every run whose objects those were.
 * Metadata that does not read as blbench's is removed (after a warning)
 * and its run's objects are found by name: a damaged metadata object
 * never makes the objects impossible to remove.
 */
int blb_mode_cleanup(struct blb_bench *b)
{
	const struct blb_opts *o = b->o;
	struct blb_target *t = b->t;
	struct names meta = { 0 }, pfx = { 0 };
	struct sweep sw = { .b = b };
	char prefix[BLB_NAME_MAX];
	bool damaged = false, had_run;
	int r, ret = 0;

	/* before anything is removed */
	if (o->prefix && strncmp(o->prefix, BLB_PREFIX, strlen(BLB_PREFIX))) {
		fprintf(stderr, "Specified --prefix invalid, it must begin with \"%s\"\n",
			BLB_PREFIX);
		return BLB_EXIT_FAIL;
	}
	r = blb_meta_load(b);
	if (r == -EBADMSG) {
		damaged = true;
		fprintf(stderr, "blbench: removing it, and objects by name instead\n");
	} else if (r < 0 && r != -ENOENT) {
		return BLB_EXIT_FAIL;
	}
	had_run = r == 0;
	if (had_run) {
		unsigned n = b->njobs;

		b->opo = b->object_size / b->op_size;
		/* each client's objects (a run of one: job_ops[0] = num_ops) */
		for (r = 0, b->job = 0; r == 0 && b->job < n; b->job++) {
			uint64_t ops = n > 1 ? b->job_ops[b->job] : b->num_ops;

			r = blb_remove_objects(b, (ops + b->opo - 1) / b->opo,
					       b->job == n - 1);
		}
		b->job = 0;
		if (r < 0)
			return BLB_EXIT_FAIL;
	}

	if (!t->ops->list) {
		/* objects are slots (file:): dropping the metadata forgets them */
		if (damaged && (r = t->ops->meta_del(t, o->run_name)) < 0 &&
		    r != -ENOENT) {
			fprintf(stderr, "blbench: removing %s: %s\n", o->run_name,
				strerror(-r));
			return BLB_EXIT_FAIL;
		}
		if (!had_run && !damaged)
			fprintf(stderr, "blbench: %s has no %s; nothing to clean up\n",
				t->desc, o->run_name);
		return 0;
	}

	if (o->prefix) {
		snprintf(prefix, sizeof(prefix), "%s", o->prefix);
	} else {
		char host[256];

		if (gethostname(host, sizeof(host)) < 0)
			strcpy(host, "localhost");
		host[sizeof(host) - 1] = 0;
		snprintf(prefix, sizeof(prefix), "%s_%.100s_", BLB_PREFIX, host);
	}
	r = find_runs(b, &meta, &pfx);
	if (r < 0) {
		fprintf(stderr, "blbench: looking for other runs' metadata on %s: %s\n",
			t->desc, strerror(-r));
		ret = BLB_EXIT_FAIL;
		goto out;
	}
	if (!had_run)	/* rados bench's words for its slow path */
		fprintf(stderr, "Warning: using slow linear search\n");
	sw.keep = o->prefix ? NULL : &pfx;
	sw.host_len = strlen(prefix);
	r = t->ops->list(t, prefix, sweep_one, &sw);
	if (!had_run || sw.removed)
		fprintf(stderr, "Removed %" PRIu64 " object%s%s\n", sw.removed,
			sw.removed != 1 ? "s" : "",
			had_run ? " that no run's metadata named" : "");
	if (sw.live)
		fprintf(stderr, "Kept %" PRIu64 " object%s of runs still under way on this host\n",
			sw.live, sw.live != 1 ? "s" : "");
	if (r == 0) {
		/* a cleanup that says it is done has left nothing behind */
		struct sweep chk = sw;

		chk.count_only = true;
		r = t->ops->list(t, prefix, sweep_one, &chk);
		if (r == 0 && chk.left) {
			fprintf(stderr, "blbench: %" PRIu64 " object%s named %s* still on %s after the cleanup\n",
				chk.left, chk.left != 1 ? "s" : "", prefix,
				t->desc);
			ret = BLB_EXIT_FAIL;
		}
	}
	if (r < 0) {
		fprintf(stderr, "blbench: listing %s: %s\n", t->desc,
			strerror(-r));
		ret = BLB_EXIT_FAIL;
		goto out;
	}
	/* --prefix: no metadata may be left naming objects that are gone */
	for (size_t i = 0; o->prefix && i < meta.n; i++) {
		if (strncmp(pfx.v[i], o->prefix, strlen(o->prefix)))
			continue;
		r = t->ops->meta_del(t, meta.v[i]);
		if (r < 0 && r != -ENOENT) {
			fprintf(stderr, "blbench: removing %s: %s\n", meta.v[i],
				strerror(-r));
			ret = BLB_EXIT_FAIL;
		} else {
			fprintf(stderr, "Removed %s, the metadata of %s\n",
				meta.v[i], pfx.v[i]);
		}
	}
	if (damaged) {
		r = t->ops->meta_del(t, o->run_name);
		if (r < 0 && r != -ENOENT) {
			fprintf(stderr, "blbench: removing %s: %s\n", o->run_name,
				strerror(-r));
			ret = BLB_EXIT_FAIL;
		}
	}
out:
	names_free(&meta);
	names_free(&pfx);
	return ret;
}
