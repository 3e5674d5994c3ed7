/* SPDX-License-Identifier: MIT */
/*
 * blbench_meta.c - the metadata object a write leaves behind so that a
 * later seq, rand or cleanup in another process finds the run: rados
 * bench's fields (object size u64, ops written i32, pid i32, op size u64,
 * little-endian) followed by blbench's own (magic, version, prefix, flags,
 * header size, pattern region size and count, stride, seed; version 3, a
 * run of several clients (--jobs), then their count and each one's ops)
 * and a crc32c.  A run of one is written as version 2, as before --jobs.
 * Encoding, and decoding with every field checked, as a target stores and
 * returns it through its meta_put and meta_get ops.
 *
 * rados bench reads only its four fields, so it reads blbench's runs (and
 * verifies their objects when they were written --rados-bench-compat).
 * rados bench's own metadata is those four fields alone (object size,
 * ops, pid and, since 2015, op size: 24 or 20 bytes, encoded by Ceph's
 * encode() of size_t and int): it decodes here as a --rados-bench-compat
 * run of this host's rados bench process @pid, whose objects are named
 * benchmark_data_<host cut to 29 bytes>_<pid>_object<N>.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "blbench.h"

#define META_MAGIC 0x4d424c42u		/* "BLBM" */
/* 2: pattern regions 1..V-1 are region 0 xor a word (blb_make_pattern) */
#define META_VERSION 2
/* 3: version 2, then u32 clients and u32 ops of each (--jobs) */
#define META_VERSION_JOBS 3

int blb_meta_encode(const struct blb_bench *b, uint32_t num_ops,
		    struct bl_list *m)
{
	bool jobs = b->njobs > 1;
	int r = 0;
	uint32_t crc;

	r |= bl_encode_u64(m, b->object_size);		/* rados bench's four */
	r |= bl_encode_u32(m, num_ops);
	r |= bl_encode_u32(m, (uint32_t)b->pid);
	r |= bl_encode_u64(m, b->op_size);
	r |= bl_encode_u32(m, META_MAGIC);		/* then blbench's */
	r |= bl_encode_u32(m, jobs ? META_VERSION_JOBS : META_VERSION);
	r |= bl_encode_bytes(m, b->prefix, strlen(b->prefix));
	r |= bl_encode_u32(m, b->flags);
	r |= bl_encode_u32(m, (uint32_t)b->hdr);
	r |= bl_encode_u64(m, b->unit);
	r |= bl_encode_u32(m, (uint32_t)b->nvar);
	r |= bl_encode_u64(m, b->stride);
	r |= bl_encode_u64(m, b->seed);
	if (jobs) {
		r |= bl_encode_u32(m, b->njobs);
		for (unsigned k = 0; k < b->njobs; k++)
			r |= bl_encode_u32(m, (uint32_t)b->job_ops[k]);
	}
	if (r)
		return -ENOMEM;
	crc = bl_list_crc32c(m, 0xFFFFFFFF);
	return bl_encode_u32(m, crc);
}

#define RB_META_LEN 24		/* object size u64, ops i32, pid i32, op size u64 */
#define RB_META_LEN_OLD 20	/* without the op size: -b = -O */

static int rb_meta_decode(struct blb_bench *b, const struct bl_list *m)
{
	uint32_t num_ops, pid;
	struct bl_iter it;
	char host[256];
	int r = 0;

	bl_iter_init(&it, m, 0);
	r |= bl_decode_u64(&it, &b->object_size);
	r |= bl_decode_u32(&it, &num_ops);
	r |= bl_decode_u32(&it, &pid);
	if (bl_list_length(m) == RB_META_LEN)
		r |= bl_decode_u64(&it, &b->op_size);
	else
		b->op_size = b->object_size;
	if (r || (int32_t)num_ops < 0 || (int32_t)pid <= 0 ||
	    b->op_size < BLB_HDR_MIN || b->op_size > BLB_MAX_OP_SIZE ||
	    b->object_size < b->op_size ||
	    b->object_size > BLB_MAX_OBJECT_SIZE ||
	    b->object_size % b->op_size)
		return -EBADMSG;
	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	snprintf(b->prefix, sizeof(b->prefix), "%s_%.*s_%d", BLB_PREFIX,
		 BLB_RB_HOST_MAX, host, (int)pid);
	b->num_ops = num_ops;
	b->njobs = 1;
	b->pid = (int)pid;
	b->flags = BLB_FLAG_RBCOMPAT;
	b->hdr = BLB_RB_HDR;
	b->stride = b->op_size;
	b->unit = blb_align_up(b->op_size - BLB_RB_HDR, 4096);
	b->nvar = 1;
	b->seed = 0;
	return 0;
}

static int meta_decode(struct blb_bench *b, const struct bl_list *m)
{
	struct bl_list pfx, head;
	uint32_t num_ops, pid, magic, ver, hdr, nvar, crc, njobs = 1;
	uint64_t unit, job_ops[BLB_JOBS_MAX], sum = 0;
	struct bl_iter it;
	size_t len = bl_list_length(m);
	int r = 0;

	if (len == RB_META_LEN || len == RB_META_LEN_OLD)
		return rb_meta_decode(b, m);
	if (len < 4)
		return -EBADMSG;
	bl_list_init(&head);
	if (bl_list_substr_of(&head, m, 0, len - 4) < 0)
		return -ENOMEM;
	crc = bl_list_crc32c(&head, 0xFFFFFFFF);
	bl_list_clear(&head);
	bl_list_init(&pfx);
	bl_iter_init(&it, m, 0);
	r |= bl_decode_u64(&it, &b->object_size);
	r |= bl_decode_u32(&it, &num_ops);
	r |= bl_decode_u32(&it, &pid);
	r |= bl_decode_u64(&it, &b->op_size);
	r |= bl_decode_u32(&it, &magic);
	r |= bl_decode_u32(&it, &ver);
	if (r || magic != META_MAGIC ||
	    (ver != META_VERSION && ver != META_VERSION_JOBS))
		return -EBADMSG;
	r |= bl_decode_bytes(&it, &pfx);
	r |= bl_decode_u32(&it, &b->flags);
	r |= bl_decode_u32(&it, &hdr);
	r |= bl_decode_u64(&it, &unit);
	r |= bl_decode_u32(&it, &nvar);
	r |= bl_decode_u64(&it, &b->stride);
	r |= bl_decode_u64(&it, &b->seed);
	if (!r && ver == META_VERSION_JOBS) {
		r = bl_decode_u32(&it, &njobs);
		if (!r && (njobs < 2 || njobs > BLB_JOBS_MAX))
			r = -EBADMSG;
		for (uint32_t k = 0; !r && k < njobs; k++) {
			uint32_t v;

			r = bl_decode_u32(&it, &v);
			job_ops[k] = v;
			sum += v;
		}
		/* rados bench's field holds their sum */
		if (!r && sum != num_ops)
			r = -EBADMSG;
	}
	if (!r) {
		uint32_t want;

		r = bl_decode_u32(&it, &want);
		if (!r && want != crc)
			r = -EBADMSG;
	}
	if (!r && (bl_list_length(&pfx) >= sizeof(b->prefix) ||
		   b->op_size < BLB_HDR_MIN || b->op_size > BLB_MAX_OP_SIZE ||
		   b->object_size < b->op_size ||
		   b->object_size > BLB_MAX_OBJECT_SIZE ||
		   b->object_size % b->op_size ||
		   (hdr < BLB_HDR_MIN && !(b->flags & BLB_FLAG_RBCOMPAT)) ||
		   ((b->flags & BLB_FLAG_RBCOMPAT) &&
		    (hdr != BLB_RB_HDR || b->stride != b->op_size ||
		     (b->flags & ~BLB_FLAG_RBCOMPAT))) ||
		   hdr > b->op_size || b->stride < b->op_size ||
		   unit < b->op_size - hdr || unit % 64 || nvar == 0 ||
		   unit > 2 * BLB_MAX_OP_SIZE ||
		   (nvar - 1) * unit + b->op_size >
			   BLB_PATTERN_MAX + BLB_MAX_OP_SIZE ||
		   b->stride > 2 * BLB_MAX_OP_SIZE))
		r = -EBADMSG;
	if (!r) {
		size_t n = bl_list_length(&pfx);

		bl_list_copy_out(&pfx, 0, n, b->prefix);
		b->prefix[n] = 0;
		/*
		 * Object names are made from it, and cleanup removes them: a
		 * prefix that is not one write makes would reach other files
		 * ("../x") or cut names short (a NUL).
		 */
		if (strlen(b->prefix) != n || strchr(b->prefix, '/') ||
		    strncmp(b->prefix, BLB_PREFIX, strlen(BLB_PREFIX)))
			r = -EBADMSG;
	}
	if (!r) {
		b->num_ops = num_ops;
		b->njobs = njobs;
		for (uint32_t k = 0; njobs > 1 && k < njobs; k++)
			b->job_ops[k] = job_ops[k];
		b->pid = (int)pid;
		b->hdr = hdr;
		b->unit = unit;
		b->nvar = nvar;
	}
	bl_list_clear(&pfx);
	return r ? -EBADMSG : 0;
}

/* Metadata object @run of @t into @b: 0, -ENOENT, -EBADMSG or -errno. */
static int meta_read(struct blb_bench *b, struct blb_target *t,
		     const char *run)
{
	struct blb_bench tmp = *b;	/* @b changes only on success */
	struct bl_list m;
	int r;

	bl_list_init(&m);
	r = t->ops->meta_get(t, run, &m);
	if (r == 0)
		r = meta_decode(&tmp, &m);
	bl_list_clear(&m);
	if (r == 0)
		*b = tmp;
	return r;
}

int blb_meta_prefix(struct blb_target *t, const char *run, char *prefix,
		    size_t len)
{
	struct blb_bench tmp;
	int r;

	memset(&tmp, 0, sizeof(tmp));
	r = meta_read(&tmp, t, run);
	if (r == 0)
		snprintf(prefix, len, "%s", tmp.prefix);
	return r;
}

/* Reads the metadata of the last write; prints why not. */
int blb_meta_load(struct blb_bench *b)
{
	int r = meta_read(b, b->t, b->o->run_name);

	if (r == -ENOENT)
		return r;
	if (r < 0)
		fprintf(stderr, "blbench: %s in %s: %s\n", b->o->run_name,
			b->t->desc,
			r == -EBADMSG ? "not blbench's metadata, or damaged"
				      : strerror(-r));
	return r;
}
