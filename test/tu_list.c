/* SPDX-License-Identifier: MIT */
/*
 * tu_list.c - what the list suites (test_list_*.c) build their lists with
 * and check them by: a list's bytes as a string, a segment over static
 * memory, a segment borrowed by index, the ABC DEF GHI J list, and a
 * snapshot that proves an operation that failed changed nothing.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include "testutil.h"

void tu_assert_str(const struct bl_list *l, const char *s)
{
	tu_assert_list_eq(l, s, strlen(s));
}

/* Appends a segment over static memory. */
struct bl_raw *tu_add_static(struct bl_list *l, const void *data, size_t len)
{
	struct bl_raw *r = bl_raw_create_static(data, len);
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
	return r;
}

/* Segment @i of @l (borrowed: the list keeps its reference). */
struct bl_ptr tu_seg_of(const struct bl_list *l, unsigned i)
{
	struct bl_ptr p = BL_PTR_INIT, ret;

	ck_assert_int_eq(bl_list_get_ptr(l, i, &p), 0);
	ret = p;
	bl_ptr_release(&p);
	return ret;
}

/* "ABCDEFGHIJ" as ABC DEF GHI J, each segment its own raw. */
void tu_make_abc(struct bl_list *l)
{
	bl_list_init(l);
	tu_append_fixed(l, "ABCDEFGHIJ", 10, 3);
	ck_assert_uint_eq(bl_list_num_buffers(l), 4);
}

void tu_snap_take(struct tu_snap *s, const struct bl_list *l)
{
	s->b = tu_flatten(l);
	s->len = bl_list_length(l);
	s->nseg = bl_list_num_buffers(l);
}

void tu_snap_check(struct tu_snap *s, const struct bl_list *l)
{
	tu_assert_list_eq(l, s->b, s->len);
	ck_assert_uint_eq(bl_list_num_buffers(l), s->nseg);
}

void tu_snap_free(struct tu_snap *s)
{
	free(s->b);
	s->b = NULL;
}
