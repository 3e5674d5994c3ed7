/* SPDX-License-Identifier: MIT */
/*
 * inline_ops.h - the headers' inline functions as tables, so that a test
 * runs the same checks through the copies inlined into a caller and
 * through the library's exported symbols of the same names: the cursor's
 * (iter.h, codec.h) in test_codec_iter.c, the list's (list.h) in
 * test_list_append.c.
 */
#ifndef BL_TEST_INLINE_OPS_H
#define BL_TEST_INLINE_OPS_H

#include <bufferlist.h>

struct iter_ops {
	const char *name;
	int (*advance)(struct bl_iter *it, size_t n);
	size_t (*get_ptr)(struct bl_iter *it, size_t want, const char **data);
	int (*u8)(struct bl_iter *it, uint8_t *v);
	int (*u16)(struct bl_iter *it, uint16_t *v);
	int (*u32)(struct bl_iter *it, uint32_t *v);
	int (*u64)(struct bl_iter *it, uint64_t *v);
	size_t (*offset)(const struct bl_iter *it);
	size_t (*remaining)(const struct bl_iter *it);
};

struct list_ops {
	const char *name;
	void (*init)(struct bl_list *l);
	size_t (*length)(const struct bl_list *l);
	unsigned (*num_buffers)(const struct bl_list *l);
	bool (*is_empty)(const struct bl_list *l);
};

/* The library's symbols of those names (inline_exported.c). */
extern const struct iter_ops exported_iter_ops;
extern const struct list_ops exported_list_ops;

#endif /* BL_TEST_INLINE_OPS_H */
