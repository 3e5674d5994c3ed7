/* SPDX-License-Identifier: MIT */
/*
 * crc32c.c - the public CRC-32C entry points and the run-time choice of an
 * implementation (crc32c_x86.c, crc32c_sw.c, and the ARMv8 one below).
 *
 * The choice is a pointer to a constant descriptor, resolved on the first
 * call.  Threads that race on that first call each probe the CPU, reach the
 * same answer and store it with a compare-and-swap, so whichever store wins
 * is correct; afterwards a call costs a relaxed load and an indirect call.
 * Relaxed is enough because everything behind the pointer is constant data
 * that existed before the program started.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c_int.h"

/* ---- ARMv8 --------------------------------------------------------------- */

#if defined(__aarch64__)
#include <sys/auxv.h>

#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif

/*
 * The compilers' own builtins rather than <arm_acle.h>, whose intrinsics
 * older clang only declares when the whole file is built with +crc.
 */
#if defined(__clang__)
#define ARMV8_CRC __attribute__((target("crc")))
#define crc32cx __builtin_arm_crc32cd
#define crc32cw __builtin_arm_crc32cw
#define crc32ch __builtin_arm_crc32ch
#define crc32cb __builtin_arm_crc32cb
#else
#define ARMV8_CRC __attribute__((target("+crc")))
#define crc32cx __builtin_aarch64_crc32cx
#define crc32cw __builtin_aarch64_crc32cw
#define crc32ch __builtin_aarch64_crc32ch
#define crc32cb __builtin_aarch64_crc32cb
#endif

bool bl__crc32c_has_armv8(void)
{
	return getauxval(AT_HWCAP) & HWCAP_CRC32;
}

/*
 * One stream of crc32cx.  Compile-checked with clang only (the project's
 * machines are x86-64); three interleaved streams joined with PMULL would
 * be the next step, as on x86.
 */
ARMV8_CRC uint32_t bl__crc32c_armv8(uint32_t crc, const void *data,
				    size_t len)
{
	const unsigned char *p = data;
	uint64_t v;
	uint32_t w;
	uint16_t h;

	for (; len >= 8; len -= 8, p += 8) {
		memcpy(&v, p, 8);
		crc = crc32cx(crc, v);
	}
	if (len & 4) {
		memcpy(&w, p, 4);
		crc = crc32cw(crc, w);
		p += 4;
	}
	if (len & 2) {
		memcpy(&h, p, 2);
		crc = crc32ch(crc, h);
		p += 2;
	}
	if (len & 1)
		crc = crc32cb(crc, *p);
	return crc;
}
#endif

/* ---- dispatch ------------------------------------------------------------ */

static bool crc32c_always(void)
{
	return true;
}

const struct bl__crc32c_impl bl__crc32c_impls[] = {
#if defined(__x86_64__)
	{ "vpclmul", bl__crc32c_vpclmul, bl__crc32c_zeros_pclmul,
	  bl__crc32c_has_vpclmul },
	{ "pclmul", bl__crc32c_pclmul, bl__crc32c_zeros_pclmul,
	  bl__crc32c_has_pclmul },
	{ "sse42", bl__crc32c_sse42, bl__crc32c_zeros_sw,
	  bl__crc32c_has_sse42 },
#endif
#if defined(__aarch64__)
	{ "armv8", bl__crc32c_armv8, bl__crc32c_zeros_sw,
	  bl__crc32c_has_armv8 },
#endif
	{ "table", bl__crc32c_sw, bl__crc32c_zeros_sw, crc32c_always },
	{ NULL, NULL, NULL, NULL },
};

static _Atomic(const struct bl__crc32c_impl *) crc32c_cur;

static const struct bl__crc32c_impl *crc32c_find(const char *name)
{
	const struct bl__crc32c_impl *i;

	for (i = bl__crc32c_impls; i->name; i++)
		if (!strcmp(i->name, name))
			return i;
	return NULL;
}

/*
 * BL_CRC32C_IMPL may only pick among correct implementations, so it is
 * harmless in a set-uid program and plain getenv() will do.  A name that
 * is unknown or unsupported here is ignored rather than fatal: the
 * variable is for tests and benchmarks, not for breaking programs.
 */
static const struct bl__crc32c_impl *crc32c_choose(void)
{
	const struct bl__crc32c_impl *i;
	const char *want = getenv("BL_CRC32C_IMPL");

	if (want && *want) {
		i = crc32c_find(want);
		if (i && i->supported())
			return i;
	}
	for (i = bl__crc32c_impls; !i->supported(); i++)
		;
	return i;
}

static __attribute__((noinline)) const struct bl__crc32c_impl *
crc32c_resolve(void)
{
	const struct bl__crc32c_impl *impl = crc32c_choose(), *old = NULL;

	if (!atomic_compare_exchange_strong_explicit(&crc32c_cur, &old, impl,
						     memory_order_relaxed,
						     memory_order_relaxed))
		impl = old;
	return impl;
}

static inline const struct bl__crc32c_impl *crc32c_get(void)
{
	const struct bl__crc32c_impl *impl =
		atomic_load_explicit(&crc32c_cur, memory_order_relaxed);

	if (__builtin_expect(impl == NULL, 0))
		impl = crc32c_resolve();
	return impl;
}

int bl__crc32c_set_impl(const char *name)
{
	const struct bl__crc32c_impl *impl;

	if (!name) {
		impl = crc32c_choose();
	} else {
		impl = crc32c_find(name);
		if (!impl)
			return -EINVAL;
		if (!impl->supported())
			return -ENOTSUP;
	}
	atomic_store_explicit(&crc32c_cur, impl, memory_order_relaxed);
	return 0;
}

/* ---- public entry points ------------------------------------------------- */

uint32_t bl_crc32c(uint32_t crc, const void *data, size_t len)
{
	if (!data)	/* Ceph's convention: zeros */
		return crc32c_get()->zeros(crc, len);
	return crc32c_get()->crc(crc, data, len);
}

uint32_t bl_crc32c_zeros(uint32_t crc, size_t len)
{
	return crc32c_get()->zeros(crc, len);
}

uint32_t bl_crc32c_combine(uint32_t crc_a, uint32_t crc_b, size_t len_b)
{
	return crc32c_get()->zeros(crc_a, len_b) ^ crc_b;
}

const char *bl_crc32c_impl(void)
{
	return crc32c_get()->name;
}
