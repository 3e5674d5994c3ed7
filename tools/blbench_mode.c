/* SPDX-License-Identifier: MIT */
/*
 * blbench_mode.c - what each mode does around the op loop: write plans
 * the layout and checks the target's room, runs the loop, prints the
 * summary and leaves the metadata object (then cleans up unless
 * --no-cleanup); seq and rand load that metadata, run the loop and report
 * what did not verify; cleanup removes a run's objects, or everything
 * named PREFIX*.  It uses the target only through its ops, and prints
 * rados bench's messages where rados bench has one.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include "blbench.h"

static void make_prefix(struct blb_bench *b)
{
	char host[256];

	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	snprintf(b->prefix, sizeof(b->prefix), "%s_%.100s_%d", BLB_PREFIX,
		 host, b->pid);
}

/* Removes objects 0..@nobj-1 and the metadata; rados bench's messages. */
static int remove_objects(struct blb_bench *b, uint64_t nobj, bool meta)
{
	double t0 = blb_now();
	uint64_t removed = 0, n;
	char name[BLB_NAME_MAX];
	int r, err = 0;

	fprintf(stderr, "Cleaning up (deleting benchmark objects)\n");
	for (n = 0; n < nobj; n++) {
		if (blb_stop > 1) {
			fprintf(stderr, "blbench: cleanup stopped by a signal\n");
			err = -EINTR;
			break;
		}
		blb_op_name(b, n, name, sizeof(name));
		r = b->t->ops->remove(b->t, name, n);
		if (r == 0)
			removed++;
		else if (r != -ENOENT && !err) {
			fprintf(stderr, "blbench: removing %s: %s\n", name,
				strerror(-r));
			err = r;
		}
	}
	fprintf(stderr, "Removed %" PRIu64 " object%s\n", removed,
		removed != 1 ? "s" : "");
	fprintf(stderr, "Clean up completed and total clean up time :%g\n",
		blb_now() - t0);
	if (meta && !err) {
		r = b->t->ops->meta_del(b->t, b->o->run_name);
		if (r < 0 && r != -ENOENT)
			err = r;
	}
	return err;
}

static int write_plot(struct blb_bench *b, double time_run)
{
	int r;

	if (!b->o->plot)
		return 0;
	r = blb_plot_svg(b->o->plot, &b->st, b->o->cmdline, time_run);
	if (r < 0)
		fprintf(stderr, "blbench: cannot write %s: %s\n", b->o->plot,
			strerror(-r));
	return r;
}

static void print_stored(struct blb_bench *b)
{
	double ratio;

	if (!(b->flags & BLB_FLAG_LZ4) || !b->st.finished)
		return;
	ratio = b->st.logical_bytes ? (double)b->st.stored_bytes /
					      b->st.logical_bytes
				    : 0;
	if (b->out.json) {
		blb_out_kv(&b->out, "stored_bytes", "%llu",
			   (unsigned long long)b->st.stored_bytes);
		blb_out_kv(&b->out, "stored_ratio", "%f", ratio);
	} else {
		printf("Stored bytes (lz4):     %llu (%.3f of the logical bytes)\n",
		       (unsigned long long)b->st.stored_bytes, ratio);
	}
}

int blb_mode_write(struct blb_bench *b)
{
	const struct blb_opts *o = b->o;
	struct blb_target *t = b->t;
	uint64_t per_op, room_ops, need;
	struct bl_list m;
	double time_run;
	int r;

	b->op_size = o->op_size;
	b->object_size = o->object_size;
	b->opo = o->object_size / o->op_size;
	b->flags = (o->crc ? BLB_FLAG_CRC : 0) | (o->lz4 ? BLB_FLAG_LZ4 : 0);
	b->hdr = BLB_HDR_MIN;
	if (t->off_align > b->hdr)
		b->hdr = t->off_align;
	if (t->off_align > 1 && o->op_size % t->off_align) {
		fprintf(stderr, "blbench: with --direct on %s, -b must be a multiple of %zu\n",
			t->desc, t->off_align);
		return BLB_EXIT_FAIL;
	}
	if (b->hdr > o->op_size) {
		fprintf(stderr, "blbench: -b must be at least %zu on %s\n",
			b->hdr, t->desc);
		return BLB_EXIT_FAIL;
	}
	b->body_len = o->op_size - b->hdr;
	b->halign = t->mem_align > 64 ? t->mem_align : 64;
	b->stride = o->op_size;
	/* with lz4: its worst case, with frame overhead */
	if (b->flags & BLB_FLAG_LZ4)
		b->stride = blb_align_up(b->hdr + b->body_len +
					 b->body_len / 255 + 1024,
					 t->off_align > 1 ? t->off_align : 64);
	b->pid = getpid();
	b->seed = ((uint64_t)b->pid << 32) ^
		  (uint64_t)(blb_now() * 1e9) ^ 0x9E3779B97F4A7C15ULL;
	make_prefix(b);

	/* Room: every op costs its stride, in whole 4 KiB blocks on a filesystem. */
	per_op = t->slots ? b->stride : blb_align_up(b->stride, 4096);
	if (t->slots) {
		t->obj_span = blb_align_up(b->opo * b->stride,
					   t->off_align > 4096 ?
					   t->off_align : 4096);
		room_ops = t->room / t->obj_span * b->opo;
	} else {
		room_ops = t->room / per_op;
	}
	b->max_ops = o->max_objects * b->opo;
	need = o->concurrent;
	if (b->max_ops && b->max_ops < need)
		need = b->max_ops;
	if (room_ops < need) {
		fprintf(stderr, "blbench: not enough room on %s: %llu MiB usable, %llu op%s of %llu bytes need %llu MiB\n",
			t->desc, (unsigned long long)(t->room >> 20),
			(unsigned long long)need, need == 1 ? "" : "s",
			(unsigned long long)per_op,
			(unsigned long long)((need * per_op + (1 << 20) - 1) >> 20));
		return BLB_EXIT_FAIL;
	}
	b->cap_ops = room_ops;
	blb_plan_pattern(b, o->concurrent);
	if (blb_make_pattern(b) < 0 || blb_ops_alloc(b, o->concurrent) < 0) {
		fprintf(stderr, "blbench: out of memory\n");
		return BLB_EXIT_FAIL;
	}

	blb_stats_init(&b->st, b->op_size, b->object_size, false);
	blb_out_open(&b->out);
	blb_out_write_intro(&b->out, o, b->prefix);
	time_run = blb_run_loop(b);
	b->st.logical_bytes = (uint64_t)b->st.finished * b->op_size;

	if (b->failed) {
		blb_out_close(&b->out);
		/* no metadata for a failed run: take back what it wrote */
		if (o->cleanup && b->st.in_flight == 0)
			remove_objects(b, ((uint64_t)b->st.started + b->opo - 1) /
						  b->opo,
				       false);
		else if (b->st.started && !t->slots)
			fprintf(stderr, "blbench: what this run wrote is left on %s; `blbench cleanup --prefix %s` removes it\n",
				t->desc, b->prefix);
		return BLB_EXIT_FAIL;
	}
	blb_out_summary(&b->out, &b->st, time_run);
	print_stored(b);
	blb_out_close(&b->out);
	if (b->capped)
		fprintf(stderr, "blbench: stopped after %d ops: %s has no room for more\n",
			b->st.started, t->desc);

	bl_list_init(&m);
	r = blb_meta_encode(b, (uint32_t)b->st.finished, &m);
	if (r == 0)
		r = t->ops->meta_put(t, o->run_name, &m);
	bl_list_clear(&m);
	if (r < 0) {
		fprintf(stderr, "blbench: writing %s to %s: %s\n", o->run_name,
			t->desc, strerror(-r));
		return BLB_EXIT_FAIL;
	}
	if (write_plot(b, time_run) < 0)
		r = -1;
	if (o->cleanup &&
	    remove_objects(b, (b->st.finished + b->opo - 1) / b->opo, true) < 0)
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
		fprintf(stderr, "Must write data before running a read benchmark!\n");
	if (r < 0)
		return BLB_EXIT_FAIL;
	b->opo = b->object_size / b->op_size;
	b->body_len = b->op_size - b->hdr;
	if (t->off_align > 1 &&
	    (b->stride % t->off_align || b->hdr % t->off_align)) {
		fprintf(stderr, "blbench: %s was written without --direct's alignment (%zu); read it without --direct\n",
			o->run_name, t->off_align);
		return BLB_EXIT_FAIL;
	}
	if (t->slots)
		t->obj_span = blb_align_up(b->opo * b->stride,
					   t->off_align > 4096 ?
					   t->off_align : 4096);
	b->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)(blb_now() * 1e9) ^ 1;
	if (blb_make_pattern(b) < 0 || blb_ops_alloc(b, o->concurrent) < 0) {
		fprintf(stderr, "blbench: out of memory\n");
		return BLB_EXIT_FAIL;
	}
	blb_stats_init(&b->st, b->op_size, b->object_size, true);
	blb_out_open(&b->out);
	time_run = blb_run_loop(b);
	if (b->failed) {
		blb_out_close(&b->out);
		return BLB_EXIT_FAIL;
	}
	blb_out_summary(&b->out, &b->st, time_run);
	blb_out_close(&b->out);
	r = write_plot(b, time_run);
	if (b->bad) {
		fprintf(stderr, "blbench: %u read%s did not return what write stored\n",
			b->bad, b->bad != 1 ? "s" : "");
		return BLB_EXIT_FAIL;
	}
	return r < 0 ? BLB_EXIT_FAIL : 0;
}

static int remove_by_name(void *arg, const char *name)
{
	struct blb_bench *b = arg;
	int r = b->t->ops->remove(b->t, name, UINT64_MAX);

	if (r < 0 && r != -ENOENT) {
		fprintf(stderr, "blbench: removing %s: %s\n", name, strerror(-r));
		return r;
	}
	if (r == 0)
		b->num_ops++;	/* counts removals here */
	return 0;
}

int blb_mode_cleanup(struct blb_bench *b)
{
	const struct blb_opts *o = b->o;
	char prefix[BLB_NAME_MAX];
	int r;

	r = blb_meta_load(b);
	if (r < 0 && r != -ENOENT)
		return BLB_EXIT_FAIL;
	if (r == 0) {
		b->opo = b->object_size / b->op_size;
		r = remove_objects(b, (b->num_ops + b->opo - 1) / b->opo, true);
		if (r < 0)
			return BLB_EXIT_FAIL;
		if (!o->prefix)
			return 0;
	}
	/* rados bench's slow path: everything named PREFIX* */
	if (o->prefix) {
		if (strncmp(o->prefix, BLB_PREFIX, strlen(BLB_PREFIX))) {
			fprintf(stderr, "Specified --prefix invalid, it must begin with \"%s\"\n",
				BLB_PREFIX);
			return BLB_EXIT_FAIL;
		}
		snprintf(prefix, sizeof(prefix), "%s", o->prefix);
	} else {
		char host[256];

		if (gethostname(host, sizeof(host)) < 0)
			strcpy(host, "localhost");
		host[sizeof(host) - 1] = 0;
		snprintf(prefix, sizeof(prefix), "%s_%.100s", BLB_PREFIX, host);
	}
	if (!b->t->ops->list) {
		fprintf(stderr, "blbench: %s has no %s; nothing to clean up\n",
			b->t->desc, o->run_name);
		return 0;
	}
	fprintf(stderr, "Warning: using slow linear search\n");
	b->num_ops = 0;
	r = b->t->ops->list(b->t, prefix, remove_by_name, b);
	fprintf(stderr, "Removed %" PRIu64 " object%s\n", b->num_ops,
		b->num_ops != 1 ? "s" : "");
	if (r < 0) {
		fprintf(stderr, "blbench: listing %s: %s\n", b->t->desc,
			strerror(-r));
		return BLB_EXIT_FAIL;
	}
	return 0;
}
