/* SPDX-License-Identifier: MIT */
/*
 * test_model.c - random operations applied both to a few bufferlists and to
 * plain byte arrays (the model), compared after every step.
 *
 * Four lists, so that claim, append_list, splice's claim_by and substr_of
 * move bytes between lists, and a handful of "source" slices over raws of
 * every kind (combined, aligned, static, claimed, growing) whose slices are
 * appended and prepended.
 *
 * The one thing the model cannot know on its own is aliasing: copy_in and
 * zero write in place into the raws, shared or not (as Ceph does), so bytes
 * another list shares change with them.  After such a write the test asks
 * the list where the written bytes now live (to_iovec) and applies the same
 * bytes to every model position whose segment covers those addresses.  The
 * addresses decide only that propagation; contents are always compared
 * against the model, static memory must never change, and a write must
 * never land in static memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "model.h"

/* ---- test cases ---------------------------------------------------------- */

#define STEPS (getenv("BL_TEST_QUICK") ? 20000ul : 200000ul)	/* valgrind */

START_TEST(model_fixed_seed)
{
	/* the same operations on every run: a regression is repeatable */
	model_run(42, STEPS);
}
END_TEST

START_TEST(model_random_seed)
{
	/* new operations on every run; the seed is printed to repeat them */
	model_run(tu_seed("model"), STEPS);
}
END_TEST

START_TEST(model_no_leak)
{
	/* every block the library allocated during the run is freed again
	 * once the lists and sources are released */
	struct tu_alloc_stats st;

	tu_alloc_install(0, 0);
	model_run(7, STEPS / 5);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_msg(st.allocs > 0, "the counting allocator saw no "
		      "allocation");
	ck_assert_msg(st.live_bytes == 0 && st.allocs == st.frees,
		      "leak: %" PRId64 " bytes in %" PRIu64 " blocks still "
		      "allocated", st.live_bytes, st.allocs - st.frees);
	ck_assert_uint_eq(st.failed, 0);
}
END_TEST

int main(void)
{
	const TTest *random_tests[] = {
		model_fixed_seed,
		model_random_seed,
		model_no_leak,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("random", random_tests, .timeout = 300),
		TU_GROUP_END
	};

	return tu_run(tu_suite("model", groups));
}
