/* SPDX-License-Identifier: MIT */
/*
 * inline_exported.c - reaches the exported symbols of the headers' inline
 * functions (src/core/api_inline.c), as a caller that cannot inline C would.
 * The headers define static inline functions of the same names; this
 * file never calls those, so none is emitted here, and the assembler
 * names below bind to the library's global symbols.
 */
#include "inline_ops.h"

#define EXPORTED(ret, name, args) \
	extern ret exported_##name args __asm__(#name)

EXPORTED(int, bl_iter_advance, (struct bl_iter *it, size_t n));
EXPORTED(size_t, bl_iter_get_ptr_and_advance,
	 (struct bl_iter *it, size_t want, const char **data));
EXPORTED(int, bl_decode_u8, (struct bl_iter *it, uint8_t *v));
EXPORTED(int, bl_decode_u16, (struct bl_iter *it, uint16_t *v));
EXPORTED(int, bl_decode_u32, (struct bl_iter *it, uint32_t *v));
EXPORTED(int, bl_decode_u64, (struct bl_iter *it, uint64_t *v));
EXPORTED(size_t, bl_iter_offset, (const struct bl_iter *it));
EXPORTED(size_t, bl_iter_remaining, (const struct bl_iter *it));

const struct iter_ops exported_iter_ops = {
	.name = "exported",
	.advance = exported_bl_iter_advance,
	.get_ptr = exported_bl_iter_get_ptr_and_advance,
	.u8 = exported_bl_decode_u8,
	.u16 = exported_bl_decode_u16,
	.u32 = exported_bl_decode_u32,
	.u64 = exported_bl_decode_u64,
	.offset = exported_bl_iter_offset,
	.remaining = exported_bl_iter_remaining,
};

EXPORTED(void, bl_list_init, (struct bl_list *l));
EXPORTED(size_t, bl_list_length, (const struct bl_list *l));
EXPORTED(unsigned, bl_list_num_buffers, (const struct bl_list *l));
EXPORTED(bool, bl_list_is_empty, (const struct bl_list *l));

const struct list_ops exported_list_ops = {
	.name = "exported",
	.init = exported_bl_list_init,
	.length = exported_bl_list_length,
	.num_buffers = exported_bl_list_num_buffers,
	.is_empty = exported_bl_list_is_empty,
};
