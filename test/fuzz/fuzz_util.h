/* SPDX-License-Identifier: MIT */
/*
 * fuzz_util.h - what the libFuzzer harnesses share: the check that traps
 * (libFuzzer reports the crash and keeps the input), a segment over a
 * malloc'd block of exactly its size (so that ASan sees any read past its
 * end, which a combined raw's header would hide), and a list compared
 * with the bytes it should hold.  Static inline, as each harness is its
 * own program.
 */
#ifndef BL_FUZZ_UTIL_H
#define BL_FUZZ_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <bufferlist.h>
#include "list_int.h"

#define CHECK(c) do { if (!(c)) __builtin_trap(); } while (0)

/* A claimed raw's free callback: the block is malloc's. */
static inline void free_block(void *p, size_t len, void *opaque)
{
	(void)len;
	(void)opaque;
	free(p);
}

/* Appends a copy of @len bytes of @d to @l as one segment over a claimed
 * malloc'd block of exactly that size. */
static inline void append_exact(struct bl_list *l, const uint8_t *d,
				size_t len)
{
	struct bl_ptr p = BL_PTR_INIT;
	struct bl_raw *r;
	void *mem = malloc(len ? len : 1);

	CHECK(mem);
	memcpy(mem, d, len);
	r = bl_raw_claim(mem, len, free_block, NULL);
	CHECK(r);
	bl_ptr_from_raw(&p, r);
	CHECK(bl_list_append_ptr_move(l, &p) == 0);
	bl_ptr_release(&p);	/* moved: nothing left to release */
}

/* A segment of the kind @kind picks: through the append buffer (one in
 * three: neighbours may coalesce), else append_exact(). */
static inline void append_kind(struct bl_list *l, const uint8_t *d,
			       size_t len, unsigned kind)
{
	if (kind % 3 == 2)
		CHECK(bl_list_append(l, d, len) == 0);
	else
		append_exact(l, d, len);
}

/* @l is valid and holds exactly the @n bytes of @want. */
static inline bool list_is(const struct bl_list *l, const uint8_t *want,
			   size_t n)
{
	struct iovec v[64];
	size_t pos = 0;
	int k;

	if (bl_list_length(l) != n || bl__list_validate(l))
		return false;
	while ((k = bl_list_to_iovec(l, pos, v, 64)) > 0) {
		for (int i = 0; i < k; i++) {
			if (memcmp(v[i].iov_base, want + pos, v[i].iov_len))
				return false;
			pos += v[i].iov_len;
		}
	}
	return k == 0 && pos == n;
}

#endif
