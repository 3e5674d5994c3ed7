/* SPDX-License-Identifier: MIT */
/*
 * tu_codec.c - what the codec suites (test_codec_*.c) share: a list cut
 * at every byte, and a check of where a cursor stands.
 */
#include "testutil.h"

void tu_list_bytewise(struct bl_list *l, const void *data, size_t len)
{
	bl_list_init(l);
	tu_append_fixed(l, data, len, 1);
}

void tu_assert_at(const struct bl_iter *it, size_t off, size_t remaining)
{
	ck_assert_uint_eq(bl_iter_offset(it), off);
	ck_assert_uint_eq(bl_iter_remaining(it), remaining);
}
