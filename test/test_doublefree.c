/* SPDX-License-Identifier: MIT */
/*
 * test_doublefree.c - AddressSanitizer sees through the pool caches.
 *
 * A raw released into a per-thread cache is not freed, so ASan alone
 * would not report a use or a second release of it, and a second release
 * used to cache the block twice (two later creates got the same raw).  In
 * ASan builds the library poisons cached blocks: each misuse below, done
 * in a child with the caches on (CI's ASan run turns them off for the
 * rest of the suite), must die with ASan's report; a child that uses the
 * caches correctly, through spills to the shared depot and a flush, must
 * exit cleanly.  Other builds have nothing to test: the program exits 77,
 * which the test driver reports as SKIP.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "testutil.h"

#ifdef BL__ASAN

static char err[16384];

/* The child died of ASan's report naming @kind. */
static void assert_asan_report(int status, const char *kind)
{
	ck_assert_msg(!WIFEXITED(status) || WEXITSTATUS(status) != 0,
		      "the misuse went unnoticed (exit %d): %s",
		      WIFEXITED(status) ? WEXITSTATUS(status) : -1, err);
	ck_assert_msg(strstr(err, "ERROR: AddressSanitizer") != NULL,
		      "no ASan report: %s", err);
	ck_assert_msg(strstr(err, kind) != NULL, "not %s: %s", kind, err);
}

static void double_release(void)
{
	struct bl_raw *x, *a, *b;

	bl_pool_cache_enable(true);
	x = bl_raw_create(100);
	bl_raw_put(x);
	bl_raw_put(x);
	/* not reported: show what the second release did */
	a = bl_raw_create(100);
	b = bl_raw_create(100);
	fprintf(stderr, "second release unnoticed; creates %s\n",
		a == b ? "returned the same raw" : "differ");
	_exit(a == b ? 3 : 2);
}

START_TEST(double_release_of_a_cached_raw_is_reported)
{
	assert_asan_report(tu_run_child(double_release, err, sizeof(err)),
			   "use-after-poison");
}
END_TEST

static void write_after_release(void)
{
	struct bl_raw *x;
	char *d;

	bl_pool_cache_enable(true);
	x = bl_raw_create(100);
	d = bl_raw_data(x);
	bl_raw_put(x);
	d[50] = 'x';
}

START_TEST(write_after_release_is_reported)
{
	assert_asan_report(tu_run_child(write_after_release, err, sizeof(err)),
			   "use-after-poison");
}
END_TEST

START_TEST(slice_copied_without_reference_is_reported)
{
	assert_asan_report(tu_run_child(tu_slice_released_twice, err,
					sizeof(err)),
			   "use-after-poison");
}
END_TEST

/* Correct use: every class, spills to the depot, refills, lists, a flush. */
static void *cache_user(void *arg)
{
	static struct bl_raw *held[200];
	struct bl_list l;

	(void)arg;
	for (size_t len = 1; len <= BL_POOL_CACHE_MAX; len = len * 3 / 2 + 1) {
		for (int i = 0; i < 200; i++) {
			held[i] = bl_raw_create(len);
			if (!held[i])
				_exit(5);
			memset(bl_raw_data(held[i]), i, len);
		}
		for (int i = 0; i < 200; i++)
			bl_raw_put(held[i]);
	}
	bl_list_init(&l);
	for (int i = 0; i < 20000; i++)
		if (bl_list_append(&l, "0123456789", 1 + i % 10))
			_exit(6);
	if (bl_list_rebuild(&l))
		_exit(7);
	bl_list_clear(&l);
	return NULL;
}

static void correct_use(void)
{
	pthread_t th;

	bl_pool_cache_enable(true);
	cache_user(NULL);
	/* another thread takes the depot's blocks, and leaves its own */
	if (pthread_create(&th, NULL, cache_user, NULL) ||
	    pthread_join(th, NULL))
		_exit(8);
	cache_user(NULL);
	bl_pool_cache_flush();
}

START_TEST(correct_use_of_the_caches_is_not_reported)
{
	tu_child_clean(correct_use, "AddressSanitizer");
}
END_TEST

int main(void)
{
	const TTest *asan_tests[] = {
		double_release_of_a_cached_raw_is_reported,
		write_after_release_is_reported,
		slice_copied_without_reference_is_reported,
		correct_use_of_the_caches_is_not_reported,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("asan", asan_tests, .timeout = 120),
		TU_GROUP_END
	};


	return tu_run(tu_suite("doublefree", groups));
}

#else

int main(void)
{
	puts("SKIP: not an AddressSanitizer build (configure --enable-sanitizers)");
	return 77;
}

#endif
