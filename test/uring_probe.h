/* SPDX-License-Identifier: MIT */
/*
 * uring_probe.h - what the running kernel's io_uring accepts, for the
 * tests that expect the library to choose ring flags by it
 * (test_uring_ring, test_syscall_faults_uring).
 */
#ifndef TEST_URING_PROBE_H
#define TEST_URING_PROBE_H

#include <stdbool.h>
#include <string.h>
#include <liburing.h>

/*
 * Whether the kernel makes a ring with @flags (in the fault suites the
 * call goes through its wrapper, which passes it on when not armed).
 */
static inline bool tu_kernel_takes(unsigned flags)
{
	struct io_uring ring;
	struct io_uring_params ip;

	memset(&ip, 0, sizeof(ip));
	ip.flags = flags;
	if (io_uring_queue_init_params(8, &ring, &ip))
		return false;
	io_uring_queue_exit(&ring);
	return true;
}

#endif
