/* SPDX-License-Identifier: MIT */
/*
 * base_int.h - the ground floor every private header stands on: config.h
 * (first, so that _GNU_SOURCE is set before any system header), the
 * assertion and branch-hint macros, and a few helpers of arithmetic and
 * time that no layer owns.  It includes no other private header.  Never
 * installed.
 */
#ifndef BUFFERLIST_BASE_INT_H
#define BUFFERLIST_BASE_INT_H

#ifdef HAVE_CONFIG_H
#include "config.h"	/* _GNU_SOURCE and friends, before any system header */
#endif

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <bufferlist/common.h>

#ifdef NDEBUG
#define BL_ASSERT(x) ((void)0)
#else
#include <assert.h>
#define BL_ASSERT(x) assert(x)
#endif

#define bl__likely(x) __builtin_expect(!!(x), 1)
#define bl__unlikely(x) __builtin_expect(!!(x), 0)
#define BL_CACHELINE 64

static inline void bl__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static inline bool bl__is_pow2(size_t x)
{
	return x && !(x & (x - 1));
}

static inline size_t bl__align_up(size_t x, size_t a)
{
	return (x + a - 1) & ~(a - 1);
}

/*
 * Milliseconds on the monotonic clock: what every timeout and deadline of
 * the library is measured against (wall-clock jumps must not fire or
 * stall them).
 */
static inline uint64_t bl__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

#endif /* BUFFERLIST_BASE_INT_H */
