/* SPDX-License-Identifier: MIT */
/*
 * crc32c.h - CRC-32C (Castagnoli) in Ceph's convention.
 *
 * Ceph's convention has no pre- or post-inversion: bl_crc32c(0, "A", 1) is
 * 0xB3109EBF.  The standard CRC-32C of a buffer is
 * ~bl_crc32c(0xFFFFFFFF, buf, len).  The implementation is picked at run
 * time: carry-less multiply folding (VPCLMULQDQ / PCLMULQDQ) or SSE4.2 on
 * x86-64, the CRC extension on ARMv8, a table otherwise.  The environment
 * variable BL_CRC32C_IMPL=table|sse42|pclmul|vpclmul|armv8, read on the
 * first call, forces one where this CPU supports it (an unknown or
 * unsupported name leaves the automatic choice).
 */
#ifndef BUFFERLIST_CRC32C_H
#define BUFFERLIST_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <bufferlist/common.h>

BL_BEGIN_DECLS

/**
 * bl_crc32c() - crc of @len bytes at @data, continuing from @crc.  @data
 * NULL stands for @len zero bytes (Ceph's convention), as
 * bl_crc32c_zeros().
 * Return: the crc; it cannot fail.
 */
BL_API uint32_t bl_crc32c(uint32_t crc, const void *data, size_t len);

/**
 * bl_crc32c_zeros() - bl_crc32c(@crc, zeros, @len) in O(log len) without
 * touching memory.  It is what lets a cached crc be reused for another seed:
 * crc(s2, d) = crc(s1, d) ^ bl_crc32c_zeros(s1 ^ s2, len).
 * Return: the crc; it cannot fail.
 */
BL_API uint32_t bl_crc32c_zeros(uint32_t crc, size_t len);

/**
 * bl_crc32c_combine() - the crc of A followed by B, from @crc_a (crc of A,
 * any seed) and @crc_b (crc of B with seed 0) and B's length.
 * Return: the crc of A then B; it cannot fail.
 */
BL_API uint32_t bl_crc32c_combine(uint32_t crc_a, uint32_t crc_b,
				  size_t len_b);

/**
 * bl_crc32c_impl() - the implementation in use.
 * Return: its name ("vpclmul", "pclmul", "sse42", "armv8" or "table"), a
 * static string; it cannot fail.
 */
BL_API const char *bl_crc32c_impl(void);

BL_END_DECLS

#endif /* BUFFERLIST_CRC32C_H */
