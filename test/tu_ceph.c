/* SPDX-License-Identifier: MIT */
/*
 * tu_ceph.c - for the Ceph suites (test_ceph.c, test_ceph_ops.c): the
 * cluster make check-ceph runs them on, or none (SKIP).
 */
#include <stdio.h>
#include <stdlib.h>
#include "testutil.h"

const char *tu_ceph_pool(const char *who)
{
	const char *conf = getenv("CEPH_CONF"), *pool = getenv("BL_CEPH_POOL");

	if (!conf || !*conf || !pool || !*pool) {
		printf("%s: no cluster (CEPH_CONF/BL_CEPH_POOL unset)\n", who);
		return NULL;
	}
	return pool;
}
