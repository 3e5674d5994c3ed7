/* SPDX-License-Identifier: MIT */
/*
 * iter_ops.h - the cursor's inline functions (iter.h, codec.h) as a table,
 * so that test_codec.c runs the same checks through the copies inlined
 * into a caller and through the library's exported symbols.
 */
#ifndef BL_TEST_ITER_OPS_H
#define BL_TEST_ITER_OPS_H

#include <bufferlist.h>

struct iter_ops {
	const char *name;
	int (*advance)(struct bl_iter *it, size_t n);
	size_t (*get_ptr)(struct bl_iter *it, size_t want, const char **data);
	int (*u8)(struct bl_iter *it, uint8_t *v);
	int (*u16)(struct bl_iter *it, uint16_t *v);
	int (*u32)(struct bl_iter *it, uint32_t *v);
	int (*u64)(struct bl_iter *it, uint64_t *v);
};

/* The library's symbols of those names (iter_exported.c). */
extern const struct iter_ops exported_iter_ops;

#endif /* BL_TEST_ITER_OPS_H */
