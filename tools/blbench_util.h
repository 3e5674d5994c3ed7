/* SPDX-License-Identifier: MIT */
/*
 * blbench_util.h - the few helpers every part of blbench may call
 * (blbench_util.c): the clock, the stop flag the signal handler sets, size
 * parsing, set-up error messages and little-endian byte access.  They depend
 * on nothing else of blbench, so any file may use them without a loop in
 * the call graph; nothing here may grow a call into another blbench file.
 * msgbench links blbench_util.c too, for the size parser.
 */
#ifndef BLBENCH_UTIL_H
#define BLBENCH_UTIL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

/* Monotonic seconds. */
double blb_now(void);

/*
 * Set by the signal handler: 1 after a first SIGINT (start no more
 * operations, let those in flight finish), 2 after a second SIGINT or a
 * SIGTERM (stop now: whatever waits gives up).  Atomic: the jobs of
 * --jobs, librados' callback threads and serve's threads read it while a
 * handler on another thread writes it (a lock-free atomic int is safe in
 * a signal handler).
 */
extern _Atomic int blb_stop;

/* Parses "SIZE" with K/M/G/T suffixes (powers of 1024).  0 or -EINVAL. */
int blb_parse_size(const char *s, uint64_t *out);

/*
 * blb_fail() - writes the message (and ": strerror(-r)" when r < 0) into
 * @err; returns r when negative, else -EINVAL.  For target set-up errors.
 */
int blb_fail(char *err, size_t len, int r, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Little-endian fields of fixed byte layouts (op header, raw metadata). */
static inline void blb_put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline void blb_put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint32_t blb_get_le32(const unsigned char *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t blb_get_le64(const unsigned char *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#endif /* BLBENCH_UTIL_H */
