/* SPDX-License-Identifier: MIT */
/*
 * tu_child.c - for the misuse suites (test_debug.c, test_doublefree.c):
 * a child that must run cleanly, and a misuse both must catch.
 */
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "testutil.h"

void tu_child_clean(void (*fn)(void), const char *marker)
{
	static char err[16384];
	int status = tu_run_child(fn, err, sizeof(err));

	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "status %d: %s", status, err);
	ck_assert_msg(!strstr(err, marker), "%s", err);
}

void tu_slice_released_twice(void)
{
	struct bl_ptr p, q;

	bl_pool_cache_enable(true);
	if (bl_ptr_alloc(&p, 300))
		_exit(4);
	q = p;		/* a copy without a reference: a bug */
	bl_ptr_release(&p);
	bl_ptr_release(&q);
}
