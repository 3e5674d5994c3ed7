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

#include <limits.h>
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

/*
 * --enable-debug (BL_DEBUG): checks of programming errors that would
 * otherwise corrupt memory silently (a raw released twice, a cursor used
 * after its list changed).  A failed check prints what was misused to
 * stderr and calls abort(), as glibc does on a double free: bad input is
 * an error return everywhere, but these are not input.  Without BL_DEBUG
 * the checks compile to nothing.
 */
#ifdef BL_DEBUG
__attribute__((noreturn, cold, format(printf, 1, 2)))
void bl__debug_fail(const char *fmt, ...);
#define BL_DEBUG_CHECK(cond, ...)					\
	do {								\
		if (bl__unlikely(!(cond)))				\
			bl__debug_fail(__VA_ARGS__);			\
	} while (0)
#else
#define BL_DEBUG_CHECK(cond, ...) ((void)0)
#endif

/*
 * AddressSanitizer builds poison memory that the library keeps but nobody
 * may touch (blocks in the pool caches), so that a use or a release after
 * the last release is reported as it would be after free().
 */
#if defined(__SANITIZE_ADDRESS__)
#define BL__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define BL__ASAN 1
#endif
#endif
#ifdef BL__ASAN
#include <sanitizer/asan_interface.h>
#define BL__POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define BL__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define BL__POISON(p, n) ((void)(p), (void)(n))
#define BL__UNPOISON(p, n) ((void)(p), (void)(n))
#endif

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
 * Microseconds and milliseconds on the monotonic clock: what every
 * timeout, deadline and busy-polling window of the library is measured
 * against (wall-clock jumps must not fire or stall them).
 */
static inline uint64_t bl__now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static inline uint64_t bl__now_ms(void)
{
	return bl__now_us() / 1000;
}

#endif /* BUFFERLIST_BASE_INT_H */
