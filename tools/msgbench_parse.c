/* SPDX-License-Identifier: MIT */
/*
 * msgbench_parse.c - msgbench --parse: frames already in memory, taken
 * off by bl_msgr_parse() from 64 KiB raws (ours) and by the hand-written
 * parser from one malloc'd buffer (base); the median time per frame of
 * each (the whole description is in msgbench.c's opening comment).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bufferlist.h>
#include <bufferlist/msgr.h>
#include "msgbench.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

void mb_bench_parse(const struct mb_cfg *cfg, double *ours_ns,
		    double *base_ns)
{
	struct bl_list enc, master;
	uint32_t st = 12345u;
	unsigned char payload[64], *flat;
	size_t n, total_payload = 0;
	double t_ours[MB_PARSE_PASSES], t_base[MB_PARSE_PASSES];
	volatile uint64_t sink = 0;
	bool was_local = bl_raw_set_thread_local(cfg->local);

	for (int i = 0; i < 64; i++)
		payload[i] = (unsigned char)(i * 131 + 7);
	bl_list_init(&enc);
	for (unsigned i = 0; i < cfg->frames; i++) {
		struct bl_list pay;
		uint32_t len;

		st = st * 1664525u + 1013904223u;
		len = 16u + (st >> 16) % 49u;
		bl_list_init(&pay);
		if (bl_list_append(&pay, payload, len) ||
		    bl_msgr_encode(&enc, 1, i, &pay, 0))
			mb_die("encode", ENOMEM);
		bl_list_clear(&pay);
		total_payload += len;
	}
	n = bl_list_length(&enc);
	flat = malloc(n);
	if (!flat || bl_list_copy_out(&enc, 0, n, flat))
		mb_die("copy", ENOMEM);
	bl_list_clear(&enc);

	/* as a receive leaves them: 64 KiB raws */
	bl_list_init(&master);
	for (size_t off = 0; off < n; off += (size_t)64 << 10) {
		size_t k = n - off < ((size_t)64 << 10) ? n - off
							: (size_t)64 << 10;
		struct bl_ptr p;

		if (bl_ptr_alloc(&p, k))
			mb_die("alloc", ENOMEM);
		memcpy(bl_ptr_data(&p), flat + off, k);
		if (bl_list_append_ptr_move(&master, &p))
			mb_die("alloc", ENOMEM);
	}

	for (int pass = 0; pass < MB_PARSE_PASSES; pass++) {
		struct bl_list in;
		struct bl_msgr_frame f;
		uint64_t got = 0, frames = 0;
		double t0, t1;
		size_t off = 0;

		/* ours */
		bl_list_init(&in);
		if (bl_list_append_list(&in, &master))
			mb_die("alloc", ENOMEM);
		t0 = mb_now_s();
		while (bl_msgr_parse(&in, &f, 0) == 1) {
			got += bl_list_length(&f.payload);
			frames++;
			bl_msgr_frame_release(&f);
		}
		t1 = mb_now_s();
		if (frames != cfg->frames || got != total_payload ||
		    bl_list_length(&in))
			mb_die("parse (ours) lost frames", EBADMSG);
		t_ours[pass] = (t1 - t0) * 1e9 / cfg->frames;
		bl_list_clear(&in);

		/* base */
		got = frames = 0;
		t0 = mb_now_s();
		for (;;) {
			unsigned char *p;
			uint32_t plen;
			size_t need;
			long r = mb_base_parse(flat + off, n - off, &p,
					       &plen, &need);

			if (r <= 0)
				break;
			got += plen;
			frames++;
			sink += p[0];
			free(p);
			off += (size_t)r;
		}
		t1 = mb_now_s();
		if (frames != cfg->frames || got != total_payload)
			mb_die("parse (base) lost frames", EBADMSG);
		t_base[pass] = (t1 - t0) * 1e9 / cfg->frames;
	}
	(void)sink;
	*ours_ns = median(t_ours, MB_PARSE_PASSES);
	*base_ns = median(t_base, MB_PARSE_PASSES);
	bl_list_clear(&master);
	free(flat);
	bl_raw_set_thread_local(was_local);
}
