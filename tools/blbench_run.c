/* SPDX-License-Identifier: MIT */
/*
 * blbench_run.c - the op loop all of write, seq and rand share, rados
 * bench's on one thread: it keeps -t ops in flight on the target, builds
 * each op's bytes (a header and a slice of one pattern raw) or checks
 * what a read returned against them, and feeds the statistics and the
 * per-second output.  It uses the target only through its ops and gets
 * its ops back through their @done (op_queued); it knows nothing of
 * options, modes or the metadata object.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "blbench.h"

/*
 * What an operation carries.  Every op starts with a small header (magic,
 * op number, object number, the run's seed, sizes, flags, the body's
 * crc32c with --crc, and a crc32c of the header itself), padded with
 * --direct to the target's block (blk_align) when -b leaves room, else to
 * the O_DIRECT alignment.  The body is a slice of ONE pattern
 * raw made at start-up from the run's seed, holding V regions of one body
 * each (V the first prime above -t, the whole under 1 GiB): op n's body is
 * region n % V, so every op in flight sends from memory of its own, as
 * fio's and rados bench's per-slot buffers do — ops DMA-ing the same
 * cache-hot memory measure faster than the disk allows, an artifact, not
 * a result.  A write is then a two-segment list [header][pattern slice]
 * that costs no copy at all — the library's zero-copy path as a user
 * would take it.  seq and rand rebuild the pattern from the seed and the
 * layout in the metadata, so they verify without a stored copy; a
 * mismatch is reported with the object's name (rados bench's "NAME is not
 * correct!") and makes the exit status non-zero.
 *
 * With --lz4 the body is compressed per op (bl_lz4_compress, segment by
 * segment) and stored after the header, which records the stored length;
 * reads decompress and verify.  Bandwidth and IOPS always count the op's
 * logical bytes (-b), as rados bench does with compressing pools; the
 * bytes that reached the target are reported after the summary.
 *
 * Layout in an object: op k of an object sits at k * stride, where stride
 * is -b (or, with --lz4, the header plus the worst-case compressed size,
 * rounded to the alignment).
 */

#define HDR_MAGIC "BLBENCH1"

/*
 * The op header, little-endian, at the start of every op:
 *    0  magic "BLBENCH1"       32  op size (logical)
 *    8  op number              40  writer's pid
 *   16  object number          44  flags (BLB_FLAG_*)
 *   24  seed of the run        48  stored bytes after the header
 *                              52  crc32c of the body (--crc), seed ~0
 *                              56  zero
 *                              60  crc32c of bytes 0..59, seed ~0
 */
struct op_hdr {
	uint64_t index, objno, seed, op_size;
	uint32_t pid, flags, stored, body_crc;
};

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1DULL;
}

/*
 * The body pattern: 8-byte words, three in four taken from a dictionary of
 * 256 random words and the rest random, so that lz4 finds something to do
 * (about 2:1) while every op still carries bytes that differ from its
 * neighbours'.  Only region 0 is drawn word by word; region k is region 0
 * xor a random word of its own (the same structure for lz4, other bytes
 * on the wire), a loop the compiler vectorises: the whole pattern then
 * costs about what writing its memory does, which counts in the client
 * CPU a benchmark reports (drawing every region word by word showed up
 * in it).
 */
#define PATTERN_HUGE ((size_t)2 << 20)	/* a huge page on x86-64 */

int blb_make_pattern(struct blb_bench *b)
{
	size_t len = b->body_len + (b->nvar - 1) * b->unit;
	size_t first = len < b->unit ? len : b->unit;
	uint64_t dict[256], s = b->seed | 1;
	unsigned char *p;
	size_t i;

	/*
	 * Tens of MiB at -t 16, made afresh by every run: in huge pages
	 * where the system gives them on request, a fault per 2 MiB instead
	 * of one per 4 KiB (which cost a read run's client more CPU than
	 * its replies did; docs/BENCHMARKS.md, the tcp read path).
	 */
	b->pattern = bl_raw_create_aligned(len ? len : 1,
					   len >= PATTERN_HUGE ? PATTERN_HUGE
							       : 4096);
	if (!b->pattern)
		return -ENOMEM;
	p = (unsigned char *)bl_raw_data(b->pattern);
#ifdef MADV_HUGEPAGE
	if (len >= PATTERN_HUGE)	/* advice: failure changes nothing */
		(void)madvise(p, len / PATTERN_HUGE * PATTERN_HUGE,
			      MADV_HUGEPAGE);
#endif
	if (b->flags & BLB_FLAG_RBCOMPAT) {	/* rados bench's filler */
		memset(p, 'z', len);
		return 0;
	}
	for (i = 0; i < 256; i++)
		dict[i] = xorshift(&s);
	for (i = 0; i + 8 <= first; i += 8) {
		uint64_t r = xorshift(&s);
		uint64_t w = (r & 3) ? dict[(r >> 8) & 255] : xorshift(&s);

		memcpy(p + i, &w, 8);
	}
	for (; i < first; i++)
		p[i] = (unsigned char)xorshift(&s);
	for (size_t at = first; at < len; at += b->unit) {
		size_t n = len - at < b->unit ? len - at : b->unit;
		uint64_t key = xorshift(&s);
		unsigned char *d = p + at;

		for (i = 0; i + 8 <= n; i += 8) {
			uint64_t w;

			memcpy(&w, p + i, 8);
			w ^= key;
			memcpy(d + i, &w, 8);
		}
		for (; i < n; i++)
			d[i] = p[i] ^ (unsigned char)(key >> (8 * (i & 7)));
	}
	return 0;
}

static bool is_prime(size_t n)
{
	if (n < 2)
		return false;
	for (size_t d = 2; d * d <= n; d++)
		if (n % d == 0)
			return false;
	return true;
}

/*
 * Regions one body long (rounded to 4 KiB, or the memory alignment), the
 * first prime above @inflight of them — so ops n .. n + inflight - 1 never
 * share one — but no more than BLB_PATTERN_MAX of memory.
 */
void blb_plan_pattern(struct blb_bench *b, unsigned inflight)
{
	size_t a = b->t->mem_align > 4096 ? b->t->mem_align : 4096;
	size_t n = (size_t)inflight + 1;

	b->unit = blb_align_up(b->body_len ? b->body_len : 1, a);
	if (b->flags & BLB_FLAG_RBCOMPAT)
		n = 1;	/* every op's body is the same 'z's */
	while (n > 1 && !is_prime(n))
		n++;
	if ((n - 1) * b->unit > BLB_PATTERN_MAX)
		n = BLB_PATTERN_MAX / b->unit + 1;
	b->nvar = n;
}

static size_t pattern_off(const struct blb_bench *b, uint64_t index)
{
	return (size_t)(index % b->nvar) * b->unit;
}

void blb_op_name(const struct blb_bench *b, uint64_t objno, char *buf,
		 size_t len)
{
	snprintf(buf, len, "%s_object%" PRIu64, b->prefix, objno);
}

static void encode_hdr(unsigned char *p, size_t len, const struct op_hdr *h)
{
	memset(p, 0, len);
	memcpy(p, HDR_MAGIC, 8);
	blb_put_le64(p + 8, h->index);
	blb_put_le64(p + 16, h->objno);
	blb_put_le64(p + 24, h->seed);
	blb_put_le64(p + 32, h->op_size);
	blb_put_le32(p + 40, h->pid);
	blb_put_le32(p + 44, h->flags);
	blb_put_le32(p + 48, h->stored);
	blb_put_le32(p + 52, h->body_crc);
	blb_put_le32(p + 60, bl_crc32c(0xFFFFFFFF, p, 60));
}

static int decode_hdr(const unsigned char *p, struct op_hdr *h)
{
	if (memcmp(p, HDR_MAGIC, 8))
		return -EBADMSG;
	if (blb_get_le32(p + 60) != bl_crc32c(0xFFFFFFFF, p, 60))
		return -EBADMSG;
	h->index = blb_get_le64(p + 8);
	h->objno = blb_get_le64(p + 16);
	h->seed = blb_get_le64(p + 24);
	h->op_size = blb_get_le64(p + 32);
	h->pid = blb_get_le32(p + 40);
	h->flags = blb_get_le32(p + 44);
	h->stored = blb_get_le32(p + 48);
	h->body_crc = blb_get_le32(p + 52);
	return 0;
}

/* rados bench's op header: its text and NUL, BLB_RB_HDR bytes. */
static void rb_hdr(unsigned char *p, uint64_t index)
{
	char s[BLB_RB_HDR + 8];

	snprintf(s, sizeof(s), "I'm the %16dth op!", (int)index);
	memcpy(p, s, BLB_RB_HDR);
}

/* Each op's @done: back to the loop's queue (finish_op does the rest). */
static void op_queued(struct blb_op *op)
{
	struct blb_bench *b = op->owner;

	op->next = NULL;
	*b->done_tail = op;
	b->done_tail = &op->next;
}

static struct blb_op *pop_done(struct blb_bench *b)
{
	struct blb_op *op = b->done_head;

	if (op) {
		b->done_head = op->next;
		if (!b->done_head)
			b->done_tail = &b->done_head;
	}
	return op;
}

/* Builds op @op->index's bytes and starts writing them. */
static int start_write(struct blb_bench *b, struct blb_op *op)
{
	struct bl_list l, body, packed;
	struct bl_ptr hp = BL_PTR_INIT, bp = BL_PTR_INIT, pat;
	struct op_hdr h = { 0 };
	struct bl_raw *hr;
	size_t stored;
	ssize_t n;
	int r;

	op->objno = blb_objno(b, op->index / b->opo);
	op->off = (op->index % b->opo) * b->stride;
	blb_op_name(b, op->objno, op->name, sizeof(op->name));

	bl_list_init(&l);
	bl_list_init(&body);
	bl_list_init(&packed);
	hr = bl_raw_create_aligned(b->hdr, b->halign);
	if (!hr)
		return -ENOMEM;
	bl_ptr_from_raw(&hp, hr);
	bl_ptr_from_raw(&pat, bl_raw_get(b->pattern));
	r = bl_ptr_slice(&bp, &pat, pattern_off(b, op->index), b->body_len);
	bl_ptr_release(&pat);
	if (r < 0)
		goto out;
	r = bl_list_append_ptr(&body, &bp);
	if (r < 0)
		goto out;
	stored = b->body_len;
	if (b->flags & BLB_FLAG_CRC)
		h.body_crc = bl_list_crc32c(&body, 0xFFFFFFFF);
	if (b->flags & BLB_FLAG_LZ4) {
		n = bl_lz4_compress(&body, &packed, NULL);
		if (n < 0) {
			r = (int)n;
			goto out;
		}
		stored = (size_t)n;
		if (b->hdr + stored > b->stride) {
			r = -EOVERFLOW;	/* the stride is lz4's worst case */
			goto out;
		}
	} else {
		bl_list_swap(&packed, &body);
	}
	h.index = op->index;
	h.objno = op->objno;
	h.seed = b->seed;
	h.op_size = b->op_size;
	h.pid = (uint32_t)b->pid;
	h.flags = b->flags;
	h.stored = (uint32_t)stored;
	if (b->flags & BLB_FLAG_RBCOMPAT)
		rb_hdr((unsigned char *)bl_ptr_data(&hp), op->index);
	else
		encode_hdr((unsigned char *)bl_ptr_data(&hp), b->hdr, &h);
	bl_raw_invalidate_crc(hr);

	r = bl_list_append_ptr_move(&l, &hp);
	if (r < 0)
		goto out;
	r = bl_list_claim_append(&l, &packed);
	if (r < 0)
		goto out;
	if ((b->flags & BLB_FLAG_LZ4) && b->t->off_align > 1) {
		/* O_DIRECT: pad to the alignment and align what lz4 made */
		size_t pad = blb_align_up(bl_list_length(&l), b->t->off_align) -
			     bl_list_length(&l);

		r = pad ? bl_list_append_zero(&l, pad) : 0;
		if (r == 0)
			r = bl_list_rebuild_aligned_size_and_memory(
				&l, b->t->off_align, b->t->mem_align, 1024);
		if (r < 0)
			goto out;
	}
	b->st.stored_bytes += bl_list_length(&l);
	op->t0 = blb_now();
	r = b->t->ops->write(b->t, op, &l);
out:
	bl_ptr_release(&hp);
	bl_ptr_release(&bp);
	bl_list_clear(&body);
	bl_list_clear(&packed);
	bl_list_clear(&l);
	return r;
}

static int start_read(struct blb_bench *b, struct blb_op *op)
{
	size_t len = b->stride;

	op->objno = blb_objno(b, op->index / b->opo);
	op->off = (op->index % b->opo) * b->stride;
	blb_op_name(b, op->objno, op->name, sizeof(op->name));
	bl_list_clear(&op->data);
	op->t0 = blb_now();
	return b->t->ops->read(b->t, op, len);
}

static bool may_start(struct blb_bench *b, double now)
{
	if (blb_stop || b->failed)
		return false;
	if (b->o->seconds && now >= b->end)
		return false;
	switch (b->mode) {
	case BLB_WRITE:
		if (b->max_ops && (uint64_t)b->st.started >= b->max_ops)
			return false;
		if ((uint64_t)b->st.started >= b->cap_ops && !b->wrap_ops) {
			b->capped = true;
			return false;
		}
		if (b->wrap_ops && !b->wrapped &&
		    (uint64_t)b->st.started >= b->wrap_ops) {
			b->wrapped = true;
			/* the clients of --jobs have equal shares: once */
			if (b->job == 0)
				fprintf(stderr, "blbench: reached the end of %s after %llu ops; writing on from its start for the time asked (as fio's time_based)\n",
					b->t->desc,
					(unsigned long long)b->wrap_ops);
		}
		return b->st.started < INT_MAX;
	case BLB_SEQ:
		return (uint64_t)b->st.started < b->num_ops;
	default:
		return b->num_ops > 0 && b->st.started < INT_MAX;
	}
}

static int start_op(struct blb_bench *b, struct blb_op *op)
{
	int r;

	switch (b->mode) {
	case BLB_WRITE:
		/*
		 * After a wrap, op n rewrites slot n % wrap_ops as the op of
		 * that number: the same bytes as the pass before wrote there,
		 * so the slots always hold ops 0..wrap_ops-1 of this run.
		 */
		op->index = (uint64_t)b->st.started;
		if (b->wrap_ops)
			op->index %= b->wrap_ops;
		r = start_write(b, op);
		break;
	case BLB_SEQ:
		op->index = (uint64_t)b->st.started;
		r = start_read(b, op);
		break;
	default:
		op->index = xorshift(&b->rng) % b->num_ops;
		r = start_read(b, op);
		break;
	}
	if (r < 0) {
		fprintf(stderr, "blbench: cannot start %s of %s: %s\n",
			b->mode == BLB_WRITE ? "a write" : "a read", op->name,
			strerror(-r));
		b->failed = r;
		return r;
	}
	op->busy = true;
	b->st.started++;
	b->st.in_flight++;
	if (b->sh) {
		pthread_mutex_lock(&b->sh->lock);
		b->sh->started++;
		b->sh->in_flight++;
		pthread_mutex_unlock(&b->sh->lock);
	}
	return 0;
}

/*
 * --jobs: the aggregate's share of an op that ended (@ok: with a
 * result).  One lock per op: a client's ops are I/O of at least a block,
 * and the lock is held for a few stores.
 */
static void shared_done(struct blb_bench *b, bool ok, double lat)
{
	struct blb_shared *sh = b->sh;

	pthread_mutex_lock(&sh->lock);
	sh->in_flight--;
	if (ok) {
		sh->finished++;
		sh->cur_lat = lat;
		sh->total_lat += lat;
		if (lat > sh->max_lat)
			sh->max_lat = lat;
		if (lat < sh->min_lat)
			sh->min_lat = lat;
	}
	pthread_mutex_unlock(&sh->lock);
}

/* First byte of @l from @off on that differs from @want, or -1. */
static long long first_diff(const struct bl_list *l, size_t off,
			    const unsigned char *want, size_t len)
{
	struct bl_iter it;
	size_t pos = 0;

	if (bl_iter_init(&it, l, off) < 0)
		return 0;
	while (pos < len) {
		const char *p;
		size_t n = bl_iter_get_ptr_and_advance(&it, len - pos, &p);

		if (n == 0)
			return (long long)pos;
		if (memcmp(p, want + pos, n)) {
			for (size_t i = 0; i < n; i++)
				if ((unsigned char)p[i] != want[pos + i])
					return (long long)(pos + i);
		}
		pos += n;
	}
	return -1;
}

/*
 * 0 when op @op read back what write stored; else why not in @why.
 * @full: compare the body with the pattern; without it only the header
 * and (--crc) the body's crc32c are checked.
 */
static int verify(struct blb_bench *b, struct blb_op *op, bool full, char *why,
		  size_t len)
{
	const unsigned char *want =
		(const unsigned char *)bl_raw_data(b->pattern) +
		pattern_off(b, op->index);
	struct bl_list body, plain;
	unsigned char raw[BLB_HDR_MIN];
	struct bl_iter it;
	const char *hp;
	struct op_hdr h;
	size_t got = bl_list_length(&op->data);
	long long d;
	int r = -1;

	if (got < b->hdr) {
		snprintf(why, len, "op %" PRIu64 ": %zu bytes, not %zu", op->index,
			 got, (size_t)b->stride);
		return -1;
	}
	if (b->flags & BLB_FLAG_RBCOMPAT) {
		/* rados bench's check: the whole op, byte for byte */
		if (got != b->op_size) {
			snprintf(why, len, "op %" PRIu64 ": %zu bytes, not %zu",
				 op->index, got, (size_t)b->op_size);
			return -1;
		}
		rb_hdr(raw, op->index);
		d = first_diff(&op->data, 0, raw, BLB_RB_HDR);
		if (d < 0 && full) {
			d = first_diff(&op->data, BLB_RB_HDR, want, b->body_len);
			if (d >= 0)
				d += BLB_RB_HDR;
		}
		if (d >= 0) {
			snprintf(why, len, "op %" PRIu64 ": byte %llu of the op differs",
				 op->index, (unsigned long long)d);
			return -1;
		}
		return 0;
	}
	/* the header in place when its segment holds it (no copy) */
	bl_iter_init(&it, &op->data, 0);
	if (bl_iter_get_ptr_and_advance(&it, BLB_HDR_MIN, &hp) < BLB_HDR_MIN) {
		bl_list_copy_out(&op->data, 0, BLB_HDR_MIN, raw);
		hp = (const char *)raw;
	}
	if (decode_hdr((const unsigned char *)hp, &h) < 0) {
		snprintf(why, len, "op %" PRIu64 ": the header is damaged",
			 op->index);
		return -1;
	}
	if (h.index != op->index || h.objno != op->objno ||
	    h.seed != b->seed || h.op_size != b->op_size ||
	    h.flags != b->flags) {
		snprintf(why, len,
			 "op %" PRIu64 ": the header is op %" PRIu64 " of object %" PRIu64 " of another layout or run",
			 op->index, h.index, h.objno);
		return -1;
	}
	if (h.stored > got - b->hdr) {
		snprintf(why, len, "op %" PRIu64 ": %zu bytes, the header says %zu",
			 op->index, got, (size_t)(b->hdr + h.stored));
		return -1;
	}
	bl_list_init(&body);
	bl_list_init(&plain);
	if (bl_list_substr_of(&body, &op->data, b->hdr, h.stored) < 0) {
		snprintf(why, len, "out of memory");
		goto out;
	}
	if (b->flags & BLB_FLAG_LZ4) {
		ssize_t n = bl_lz4_decompress(&body, &plain, b->body_len);

		if (n != (ssize_t)b->body_len) {
			snprintf(why, len, "op %" PRIu64 ": lz4: %s", op->index,
				 n < 0 ? strerror((int)-n) : "wrong length");
			goto out;
		}
	} else {
		bl_list_swap(&plain, &body);
	}
	if (bl_list_length(&plain) != b->body_len) {
		snprintf(why, len, "op %" PRIu64 ": body of %zu bytes, not %zu",
			 op->index, bl_list_length(&plain), b->body_len);
		goto out;
	}
	d = full ? first_diff(&plain, 0, want, b->body_len) : -1;
	if (d >= 0) {
		snprintf(why, len, "op %" PRIu64 ": byte %llu of the op differs",
			 op->index,
			 (unsigned long long)(d + (long long)b->hdr));
		goto out;
	}
	if ((b->flags & BLB_FLAG_CRC) &&
	    bl_list_crc32c(&plain, 0xFFFFFFFF) != h.body_crc) {
		snprintf(why, len, "op %" PRIu64 ": crc32c mismatch", op->index);
		goto out;
	}
	r = 0;
out:
	bl_list_clear(&body);
	bl_list_clear(&plain);
	return r;
}

static void finish_op(struct blb_bench *b, struct blb_op *op, double now)
{
	char why[256];

	op->busy = false;
	if (op->res < 0) {
		/* no target should give one, but an int must not read it as 0 */
		int err = op->res < -BLB_ERRNO_MAX ? -EPROTO : (int)op->res;

		if (!b->failed)
			fprintf(stderr, "blbench: %s %s: %s\n",
				b->mode == BLB_WRITE ? "writing" : "reading",
				op->name, strerror(-err));
		if (!b->failed)
			b->failed = err;
		b->st.in_flight--;
		if (b->sh)
			shared_done(b, false, 0);
		bl_list_clear(&op->data);
		return;
	}
	blb_stats_op_done(&b->st, op->lat);
	if (b->sh)
		shared_done(b, true, op->lat);
	/* a write's reply carries no data; a peer that sends some anyway
	 * must not make it pile up in the op */
	if (b->mode == BLB_WRITE)
		bl_list_clear(&op->data);
	if (b->mode != BLB_WRITE) {
		bool full = b->o->verify;

		/* --no-verify skips the comparison, not a stored crc */
		if ((full || (b->flags & BLB_FLAG_CRC)) &&
		    verify(b, op, full, why, sizeof(why)) < 0) {
			/* rados bench's words first, for those who grep them */
			fprintf(stderr, "%s is not correct! (%s)\n", op->name,
				why);
			b->bad++;
		}
		bl_list_clear(&op->data);
	}
	if (may_start(b, now))
		start_op(b, op);
}

/*
 * An op older than --op-timeout: the target stopped answering (a server
 * stopped or gone silent, a hung device).  Waiting longer would hang the
 * run for good, so the run fails, naming the op.  Checked once a second.
 */
static bool op_timed_out(struct blb_bench *b, double now)
{
	unsigned limit = b->o->op_timeout;

	if (!limit)
		return false;
	for (unsigned i = 0; i < b->nops; i++) {
		struct blb_op *op = &b->ops[i];

		if (op->busy && now - op->t0 > limit) {
			fprintf(stderr, "blbench: %s %s: no answer from %s within %u s (--op-timeout); giving up\n",
				b->mode == BLB_WRITE ? "writing" : "reading",
				op->name, b->t->desc, limit);
			b->failed = -ETIMEDOUT;
			return true;
		}
	}
	return false;
}

/*
 * The loop all three modes share: rados bench's, on one thread.  A client
 * of --jobs (@b->sh) prints nothing: the thread that started it prints
 * the aggregate from what the clients share.
 */
double blb_run_loop(struct blb_bench *b)
{
	struct blb_stats *s = &b->st;
	struct blb_op *op;
	double now, next_tick;
	unsigned i;

	s->start = blb_now();
	b->end = s->start + b->o->seconds;
	if (!b->sh) {
		blb_out_datas_begin(&b->out);
		blb_stats_tick(s, &b->out, s->start);
	}
	next_tick = s->start + 1;
	for (i = 0; i < b->nops && may_start(b, s->start); i++)
		if (start_op(b, &b->ops[i]) < 0)
			break;
	/* on a break the ops in flight stay with the target until it closes */
	while (s->in_flight > 0) {
		int r, timeout;

		if (blb_stop > 1) {
			fprintf(stderr, "blbench: stopped by a signal with %d operation%s in flight\n",
				s->in_flight, s->in_flight != 1 ? "s" : "");
			if (!b->failed)
				b->failed = -EINTR;
			break;
		}
		now = blb_now();
		if (now >= next_tick) {
			if (!b->sh)
				blb_stats_tick(s, &b->out, now);
			next_tick += 1;
			if (op_timed_out(b, now))
				break;
			continue;
		}
		timeout = (int)((next_tick - now) * 1000) + 1;
		r = b->t->ops->poll(b->t, timeout);
		if (r < 0 && r != -EINTR && r != -ETIME && r != -EAGAIN) {
			fprintf(stderr, "blbench: %s: %s\n", b->t->desc,
				strerror(-r));
			b->failed = r;
			break;
		}
		now = blb_now();
		while ((op = pop_done(b)))
			finish_op(b, op, now);
	}
	/* stopped before an op started (or between two): the run failed */
	if (blb_stop > 1 && !b->failed) {
		if (b->job == 0)
			fprintf(stderr, "blbench: stopped by a signal\n");
		b->failed = -EINTR;
	}
	now = blb_now();
	if (!b->sh) {
		blb_out_datas_end(&b->out);
		blb_stats_final_sample(s, now);
	}
	return now - s->start;
}

int blb_ops_alloc(struct blb_bench *b, unsigned n)
{
	b->nops = n;
	b->ops = calloc(n, sizeof(*b->ops));
	if (!b->ops)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		b->ops[i].owner = b;
		b->ops[i].done = op_queued;
		b->ops[i].fd = -1;
		bl_list_init(&b->ops[i].data);
	}
	b->done_head = NULL;
	b->done_tail = &b->done_head;
	return 0;
}

static void free_ops(struct blb_bench *b)
{
	for (unsigned i = 0; i < b->nops; i++)
		bl_list_clear(&b->ops[i].data);
	free(b->ops);
	b->ops = NULL;
}

void blb_bench_free(struct blb_bench *b)
{
	/* closing the target completed (or cancelled) what was in flight */
	while (pop_done(b))
		;
	free_ops(b);
	bl_raw_put(b->pattern);
	blb_stats_free(&b->st);
}
