/* SPDX-License-Identifier: MIT */
/*
 * blbench_setup.c - what a client does before its op loop and after it,
 * for the modes and for each client of a --jobs run alike: name the run,
 * plan the write (layout, the target's room, the pattern, the op slots),
 * check a read against the metadata it loaded, remove the objects, write
 * the plot and print the lz4 figures.  It sits below blbench_mode.c and
 * blbench_jobs.c so that both call down into it and neither calls the
 * other back.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "blbench.h"

static void make_prefix(struct blb_bench *b)
{
	char host[256];

	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	/* rados bench's names cut the host name to 29 bytes */
	snprintf(b->prefix, sizeof(b->prefix), "%s_%.*s_%d", BLB_PREFIX,
		 b->flags & BLB_FLAG_RBCOMPAT ? BLB_RB_HOST_MAX : 100, host,
		 b->pid);
}

int blb_remove_objects(struct blb_bench *b, uint64_t nobj, bool meta)
{
	double t0 = blb_now();
	uint64_t removed = 0, n;
	char name[BLB_NAME_MAX];
	int r, err = 0;

	fprintf(stderr, "Cleaning up (deleting benchmark objects)\n");
	for (n = 0; n < nobj; n++) {
		if (blb_stop > 1) {	/* main says so */
			err = -EINTR;
			break;
		}
		blb_op_name(b, blb_objno(b, n), name, sizeof(name));
		r = b->t->ops->remove(b->t, name, blb_objno(b, n));
		if (r == 0)
			removed++;
		else if (r != -ENOENT && !err) {
			fprintf(stderr, "blbench: removing %s: %s\n", name,
				strerror(-r));
			err = r;
		}
		/* a target that stopped answering: each call would wait as long */
		if (r == -ETIMEDOUT || r == -ENOTCONN || r == -EINTR)
			break;
	}
	fprintf(stderr, "Removed %" PRIu64 " object%s\n", removed,
		removed != 1 ? "s" : "");
	fprintf(stderr, "Clean up completed and total clean up time :%g\n",
		blb_now() - t0);
	if (meta && !err) {
		r = b->t->ops->meta_del(b->t, b->o->run_name);
		if (r < 0 && r != -ENOENT) {
			fprintf(stderr, "blbench: removing %s: %s\n",
				b->o->run_name, strerror(-r));
			err = r;
		}
	}
	return err;
}

int blb_write_plot(struct blb_bench *b, const struct blb_stats *s,
		   double time_run)
{
	int r;

	if (!b->o->plot)
		return 0;
	r = blb_plot_svg(b->o->plot, s, b->o->cmdline, time_run);
	if (r < 0)
		fprintf(stderr, "blbench: cannot write %s: %s\n", b->o->plot,
			strerror(-r));
	return r;
}

void blb_print_stored(struct blb_bench *b, const struct blb_stats *s)
{
	double ratio;

	if (!(b->flags & BLB_FLAG_LZ4) || !s->finished)
		return;
	ratio = s->logical_bytes ? (double)s->stored_bytes / s->logical_bytes
				 : 0;
	if (b->out.json) {
		blb_out_kv(&b->out, "stored_bytes", "%llu",
			   (unsigned long long)s->stored_bytes);
		blb_out_kv(&b->out, "stored_ratio", "%f", ratio);
	} else {
		printf("Stored bytes (lz4):     %llu (%.3f of the logical bytes)\n",
		       (unsigned long long)s->stored_bytes, ratio);
	}
}

int blb_write_setup(struct blb_bench *b)
{
	const struct blb_opts *o = b->o;
	struct blb_target *t = b->t;
	uint64_t per_op, room_ops, need;

	b->op_size = o->op_size;
	b->object_size = o->object_size;
	b->opo = o->object_size / o->op_size;
	b->flags = (o->crc ? BLB_FLAG_CRC : 0) | (o->lz4 ? BLB_FLAG_LZ4 : 0);
	b->hdr = BLB_HDR_MIN;
	if (o->rb_compat) {
		b->flags |= BLB_FLAG_RBCOMPAT;
		b->hdr = BLB_RB_HDR;
	}
	if (t->off_align > b->hdr)
		b->hdr = t->off_align;
	/* whole blocks when -b leaves a body of at least one */
	if (t->direct && t->blk_align > b->hdr &&
	    t->blk_align % b->hdr == 0 && o->op_size >= 2 * t->blk_align &&
	    o->op_size % t->blk_align == 0)
		b->hdr = t->blk_align;
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
	if (b->hdr > b->halign && b->hdr == t->blk_align)
		b->halign = b->hdr;
	b->stride = o->op_size;
	/* with lz4: its worst case, with frame overhead */
	if (b->flags & BLB_FLAG_LZ4)
		b->stride = blb_align_up(b->hdr + b->body_len +
					 b->body_len / 255 + 1024,
					 t->off_align > 1 ? t->off_align : 64);
	b->pid = getpid();
	if (!b->seed)
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
	/*
	 * --jobs: each client its share, every njobs-th slot of a file (so
	 * the room is whole slots), or of a directory's free space
	 */
	if (b->njobs > 1 && t->room != UINT64_MAX)
		room_ops = t->slots ? room_ops / b->opo / b->njobs * b->opo
				    : room_ops / b->njobs;
	/* --max-objects up to INT_MAX times up to 2^38 ops an object */
	b->max_ops = o->max_objects > UINT64_MAX / b->opo
			     ? UINT64_MAX
			     : o->max_objects * b->opo;
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
	/* a file's fixed slots: a run for a time writes on from the start */
	if (t->slots && o->seconds && (!b->max_ops || b->max_ops > room_ops))
		b->wrap_ops = room_ops;
	blb_plan_pattern(b, o->concurrent);
	if (blb_make_pattern(b) < 0 || blb_ops_alloc(b, o->concurrent) < 0) {
		fprintf(stderr, "blbench: out of memory\n");
		return BLB_EXIT_FAIL;
	}
	blb_stats_init(&b->st, b->op_size, b->object_size, false);
	return 0;
}

/*
 * Whether a raw target's object space is too short for the ops the
 * metadata lists (the file was truncated since, or is another one):
 * reading there would fail op by op with a misleading -ENOSPC.
 */
static bool slots_short(const struct blb_bench *b)
{
	const struct blb_target *t = b->t;
	uint64_t last, objno, end;

	if (!b->num_ops || t->room == UINT64_MAX)
		return false;
	last = b->num_ops - 1;
	objno = last / b->opo;
	if (!t->obj_span || objno >= t->room / t->obj_span)
		return true;
	/* objno * obj_span < room: no overflow */
	end = objno * t->obj_span + (last % b->opo) * b->stride + b->stride;
	return end > t->room;
}

int blb_read_setup(struct blb_bench *b)
{
	const struct blb_opts *o = b->o;
	struct blb_target *t = b->t;

	b->opo = b->object_size / b->op_size;
	b->body_len = b->op_size - b->hdr;
	if (t->off_align > 1 &&
	    (b->stride % t->off_align || b->hdr % t->off_align)) {
		fprintf(stderr, "blbench: %s was written without --direct's alignment (%zu); read it without --direct\n",
			o->run_name, t->off_align);
		return BLB_EXIT_FAIL;
	}
	if (t->slots) {
		t->obj_span = blb_align_up(b->opo * b->stride,
					   t->off_align > 4096 ?
					   t->off_align : 4096);
		if (slots_short(b)) {
			fprintf(stderr, "blbench: %s is shorter than %s says: its %" PRIu64 " ops need more than the %" PRIu64 " bytes of object space it has (truncated, or not the file written?)\n",
				t->desc, o->run_name, b->num_ops, t->room);
			return BLB_EXIT_FAIL;
		}
	}
	/* each client its own sequence of objects */
	b->rng = ((uint64_t)getpid() << 32) ^ (uint64_t)(blb_now() * 1e9) ^
		 (2 * (uint64_t)b->job + 1);
	if (blb_make_pattern(b) < 0 || blb_ops_alloc(b, o->concurrent) < 0) {
		fprintf(stderr, "blbench: out of memory\n");
		return BLB_EXIT_FAIL;
	}
	blb_stats_init(&b->st, b->op_size, b->object_size, true);
	return 0;
}
