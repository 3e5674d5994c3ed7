/* SPDX-License-Identifier: MIT */
/*
 * model.h - test_model's engine (model.c: randomness, the model's byte
 * arrays, comparing lists with them, source slices, in-place writes, the
 * step) and its operations (model_ops.c), one program's three files.
 */
#ifndef BL_TEST_MODEL_H
#define BL_TEST_MODEL_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "testutil.h"

#define NLISTS		4
#define NSRC		6
#define LIST_MAX	(1u << 20)	/* a list above this is cleared */
#define SMALL_LIST	(64u << 10)	/* compared in full every step */
#define FULL_EVERY	64		/* big lists: compared this often */
#define ALL_EVERY	1024		/* every list and source */
#define NSTATIC		2
#define STATIC_LEN	(64u << 10)
#define TMP_LEN		(4u << 20)
#define IOV_BATCH	64

enum op {
	OP_APPEND, OP_APPEND_ZERO, OP_APPEND_PTR, OP_APPEND_PTR_MOVE,
	OP_PREPEND_PTR, OP_APPEND_LIST, OP_CLAIM_APPEND, OP_CLAIM_PREPEND,
	OP_SPLICE, OP_SUBSTR, OP_COPY_IN, OP_ZERO, OP_COPY_OUT, OP_REBUILD,
	OP_REBUILD_ALIGNED, OP_REBUILD_ASM, OP_C_STR, OP_CLEAR, OP_SWAP,
	OP_ITER, OP_CRC, OP_INVALIDATE_CRC, OP_TO_IOVEC, OP_ENCODE,
	OP_ENCODE_BYTES, OP_ENCODE_LIST, OP_COMPARE, OP_GET_PTR, OP_SRC_NEW,
	OP_SRC_GROW, OP_COMPACT, NOPS
};


/* The model of one list: its bytes. */
struct mlist {
	unsigned char *b;
	size_t len, cap;
};

/* A source slice the test holds, with a shadow of the bytes it covers. */
struct msrc {
	struct bl_ptr p;
	unsigned char *shadow;
	size_t shadow_cap;
	size_t next;		/* end of the last slice taken */
	int kind;
};

/* One written run: @n bytes at address @a hold src[@so, @so + @n). */
struct wrun {
	uintptr_t a;
	size_t n, so;
};

struct model {
	uint64_t seed, rng;
	unsigned long step;
	const char *op;
	struct bl_list l[NLISTS];
	struct mlist m[NLISTS];
	struct msrc src[NSRC];
	/* the last append_ptr that added bytes, to check continuation */
	int last_list;
	struct bl_raw *last_raw;
	size_t last_end;	/* raw offset where it ended */
	unsigned long last_step;
	unsigned char *tmp;
	struct wrun *runs;
	size_t nruns, runs_cap;
	unsigned long claimed_made, claimed_freed;
	unsigned long nops[NOPS];
	unsigned long nerr;	/* calls that had to fail, and did */
	unsigned weight_total;
	struct bl_pool *pool;	/* lists 1 and 3 append into it */
	int64_t pool_raws_max;
	bool trace;		/* BL_MODEL_TRACE set: print every step */
};

extern struct model *M;
extern unsigned char static_buf[NSTATIC][STATIC_LEN];
extern unsigned char static_pristine[NSTATIC][STATIC_LEN];

/*
 * ck_assert_msg() reports every passing check to the runner (a write per
 * check in fork mode); the model checks millions of things, so it reports
 * only failures, each with the seed, the step and the operation.
 */
#define MA(cond, fmt, ...)						\
	do {								\
		if (!(cond))						\
			ck_abort_msg("seed %" PRIu64 " step %lu op %s: "\
				     "'%s' failed: " fmt, M->seed,	\
				     M->step, M->op, #cond,		\
				     ##__VA_ARGS__);			\
	} while (0)

/* ---- the engine (model.c) ------------------------------------------------ */

uint64_t r64(void);
size_t rnd(size_t n);
bool chance(unsigned pct);
size_t rnd_len(size_t max);
void rnd_range(size_t len, bool allow_bad, size_t *off, size_t *n,
	       bool *bad);
size_t rnd_pow2(unsigned max_shift);
void m_reserve(struct mlist *m, size_t n);
void m_insert(struct mlist *m, size_t at, const void *data, size_t n);
void m_append(struct mlist *m, const void *data, size_t n);
void m_erase(struct mlist *m, size_t at, size_t n);
void put_le(unsigned char *p, uint64_t v, int bytes);
uint64_t get_le(const unsigned char *p, int bytes);
void check_list(int i, bool full);
void propagate_write(int i, size_t off, size_t n,
		     const unsigned char *src);
void check_crc_all(void);
void model_run(uint64_t seed, unsigned long steps);

/* ---- the operations (model_ops.c): each applies to list @i (and @j) and
 * to the model, and checks what it can ---------------------------------- */

int other_list(int i);
void op_append(int i, bool zero);
void op_append_ptr(int i, int how);
void op_append_list(int i, int j);
void op_claim(int i, int j, bool prepend);
void op_splice(int i);
void op_substr(int i, int j);
void op_copy_in(int i, bool zero);
void op_copy_out(int i);
void op_rebuild(int i, int kind);
void op_c_str(int i);
void op_swap(int i, int j);
void op_iter(int i);
void op_crc(int i);
void op_to_iovec(int i);
void op_encode(int i);
void op_encode_bytes(int i);
void op_encode_list(int i, int j);
void op_compare(int i, int j);
void op_get_ptr(int i);
void op_compact(int i);

#endif
