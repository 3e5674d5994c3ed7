/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE	/* program_invocation_short_name */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>
#include "testutil.h"

static pthread_mutex_t tu_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tu_alloc_stats tu_st;
static uint64_t tu_fail_at;	/* allocation number that fails, 0 = never */
static int tu_sticky;
static uint64_t tu_attempts;

static void *tu_alloc(void *opaque, size_t size, size_t align)
{
	void *p = NULL;
	bool fail;

	pthread_mutex_lock(&tu_lock);
	tu_attempts++;
	fail = tu_fail_at && (tu_attempts == tu_fail_at ||
			      (tu_sticky && tu_attempts > tu_fail_at));
	if (fail)
		tu_st.failed++;
	pthread_mutex_unlock(&tu_lock);
	if (fail)
		return NULL;
	if (align < sizeof(void *))
		align = sizeof(void *);
	if (posix_memalign(&p, align, size ? size : 1))
		return NULL;
	pthread_mutex_lock(&tu_lock);
	tu_st.allocs++;
	tu_st.live_bytes += (int64_t)size;
	pthread_mutex_unlock(&tu_lock);
	return p;
}

static void tu_free(void *opaque, void *p, size_t size, size_t align)
{
	pthread_mutex_lock(&tu_lock);
	tu_st.frees++;
	tu_st.live_bytes -= (int64_t)size;
	pthread_mutex_unlock(&tu_lock);
	free(p);
}

void tu_alloc_install(uint64_t fail_at, int sticky)
{
	struct bl_allocator a = { tu_alloc, tu_free, NULL };

	pthread_mutex_lock(&tu_lock);
	memset(&tu_st, 0, sizeof(tu_st));
	tu_attempts = 0;
	tu_fail_at = fail_at;
	tu_sticky = sticky;
	pthread_mutex_unlock(&tu_lock);
	bl_allocator_set(&a);
}

void tu_alloc_fail_at(uint64_t fail_at, int sticky)
{
	pthread_mutex_lock(&tu_lock);
	tu_attempts = 0;
	tu_fail_at = fail_at;
	tu_sticky = sticky;
	pthread_mutex_unlock(&tu_lock);
}

void tu_alloc_uninstall(void)
{
	bl_allocator_set(NULL);
}

void tu_thread_local_off(void)
{
	bl_raw_set_thread_local(false);
}

void tu_alloc_stats(struct tu_alloc_stats *out)
{
	pthread_mutex_lock(&tu_lock);
	*out = tu_st;
	pthread_mutex_unlock(&tu_lock);
}

struct bl_stats stats_now(void)
{
	struct bl_stats s;

	bl_stats_thread(&s);
	return s;
}

uint64_t copied_now(void)
{
	return stats_now().copied_bytes;
}

unsigned char *tu_flatten(const struct bl_list *l)
{
	size_t n = bl_list_length(l);
	unsigned char *p;

	if (!n)
		return NULL;
	p = malloc(n);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(bl_list_copy_out(l, 0, n, p), 0);
	return p;
}

void tu_assert_list_eq(const struct bl_list *l, const void *want, size_t len)
{
	unsigned char *got;

	ck_assert_int_eq(bl__list_validate(l), 0);
	ck_assert_uint_eq(bl_list_length(l), len);
	got = tu_flatten(l);
	if (len)
		ck_assert_msg(memcmp(got, want, len) == 0,
			      "list bytes differ from the expected bytes");
	free(got);
}

void tu_append_fixed(struct bl_list *l, const void *data, size_t len,
		     size_t seg)
{
	const char *p = data;

	while (len) {
		size_t n = len < seg ? len : seg;
		struct bl_ptr bp = BL_PTR_INIT;

		ck_assert_int_eq(bl_ptr_alloc(&bp, n), 0);
		memcpy(bl_ptr_data(&bp), p, n);
		ck_assert_int_eq(bl_list_append_ptr_move(l, &bp), 0);
		p += n;
		len -= n;
	}
}

unsigned char *tu_rand_buf(size_t len, uint64_t *rng)
{
	unsigned char *p = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(p);
	tu_fill(p, len, rng);
	return p;
}

unsigned char *tu_file_bytes(int fd, off_t off, size_t len)
{
	unsigned char *p = malloc(len ? len : 1);
	size_t got = 0;

	ck_assert_ptr_nonnull(p);
	while (got < len) {
		ssize_t n = pread(fd, p + got, len - got, off + (off_t)got);

		ck_assert_int_gt(n, 0);
		got += (size_t)n;
	}
	return p;
}

uint64_t tu_rand(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 0x2545F4914F6CDD1Dull;
}

void tu_fill(void *buf, size_t len, uint64_t *rng)
{
	unsigned char *p = buf;

	for (size_t i = 0; i < len; i++)
		p[i] = (unsigned char)(tu_rand(rng) >> 56);
}

void tu_append_segmented(struct bl_list *l, const void *data, size_t len,
			 size_t max_seg, int own_raws, uint64_t *rng)
{
	const char *p = data;

	while (len) {
		size_t n = 1 + tu_rand(rng) % max_seg;

		if (n > len)
			n = len;
		if (own_raws) {
			struct bl_ptr bp;

			ck_assert_int_eq(bl_ptr_alloc(&bp, n), 0);
			memcpy(bl_ptr_data(&bp), p, n);
			ck_assert_int_eq(bl_list_append_ptr_move(l, &bp), 0);
		} else {
			ck_assert_int_eq(bl_list_append(l, p, n), 0);
		}
		p += n;
		len -= n;
	}
}

uint64_t tu_seed(const char *who)
{
	const char *e = getenv("BL_TEST_SEED");
	uint64_t s;

	if (e && *e)
		s = strtoull(e, NULL, 0);
	else
		s = (uint64_t)time(NULL) ^ ((uint64_t)clock() << 32);
	if (!s)
		s = 1;
	fprintf(stderr, "%s: seed %" PRIu64 " (rerun with BL_TEST_SEED=%" PRIu64 ")\n",
		who, s, s);
	return s;
}

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define TU_HAVE_VALGRIND 1
#endif
#endif

/*
 * Under valgrind with CK_FORK=no (make check-valgrind), a test's own
 * forked child inherits the whole heap and leaves with _exit: its leak
 * report is noise, and with --error-exitcode it would fail the test.
 */
static void tu_child_no_leak_check(void)
{
#ifdef TU_HAVE_VALGRIND
	VALGRIND_CLO_CHANGE("--leak-check=no");
#endif
}

TCase *tu_tcase_create(const char *name)
{
	TCase *tc = (tcase_create)(name);

	tcase_set_tags(tc, name);
	return tc;
}

Suite *tu_suite(const char *name, const struct tu_group *groups)
{
	Suite *s = suite_create(name);

	for (const struct tu_group *g = groups; g->name; g++) {
		TCase *tc = tu_tcase_create(g->name);

		if (g->once_setup || g->once_teardown)
			tcase_add_unchecked_fixture(tc, g->once_setup,
						    g->once_teardown);
		if (g->setup || g->teardown)
			tcase_add_checked_fixture(tc, g->setup, g->teardown);
		if (g->timeout)
			tcase_set_timeout(tc, g->timeout);
		for (const TTest *const *t = g->tests; t && *t; t++)
			tcase_add_test(tc, *t);
		for (const struct tu_loop *l = g->loops; l && l->test; l++)
			tcase_add_loop_test(tc, l->test, l->start, l->end);
		suite_add_tcase(s, tc);
	}
	return s;
}

int tu_run(Suite *s)
{
	const char *fork_env = getenv("CK_FORK");
	SRunner *sr;
	int failed;

	sr = srunner_create(s);

	if (fork_env && !strcmp(fork_env, "no"))
		pthread_atfork(NULL, NULL, tu_child_no_leak_check);

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	/* blocks parked in the pool caches are no leak: hand them back, so
	 * that a leak check (valgrind with the caches on) reports none */
	bl_pool_cache_flush();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int tu_run_child(void (*fn)(void), char *err, size_t errsz)
{
	int fds[2], status = 0;
	size_t got = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		close(fds[0]);
		dup2(fds[1], 2);
		close(fds[1]);
		fn();
		_exit(0);
	}
	close(fds[1]);
	for (;;) {
		char sink[256];
		char *dst = got + 1 < errsz ? err + got : sink;
		size_t room = got + 1 < errsz ? errsz - 1 - got : sizeof(sink);
		ssize_t n = read(fds[0], dst, room);

		if (n <= 0)
			break;
		if (dst != sink)
			got += (size_t)n;
	}
	close(fds[0]);
	if (errsz)
		err[got] = 0;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}
