/* SPDX-License-Identifier: MIT */
/* test_pool.c - allocator interface, pools, accounting, caches, compact. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "testutil.h"

/* @p holds no raw and no byte. */
static void assert_pool_empty(struct bl_pool *p)
{
	struct bl_pool_stats st;

	bl_pool_get_stats(p, &st);
	ck_assert_int_eq(st.raws, 0);
	ck_assert_int_eq(st.bytes, 0);
	ck_assert_int_eq(st.bytes_used, 0);
}

START_TEST(pool_create_returns_same_pool_for_same_name)
{
	struct bl_pool *a = bl_pool_create("same-name", NULL);
	struct bl_pool *b = bl_pool_create("same-name", NULL);

	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_eq(a, b);
	ck_assert_str_eq(bl_pool_name(a), "same-name");
	errno = 0;
	ck_assert_ptr_null(bl_pool_create("", NULL));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(bl_pool_create(NULL, NULL));
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_ptr_null(bl_pool_create(
		"a-name-that-is-far-too-long-for-a-pool-name", NULL));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_str_eq(bl_pool_name(bl_pool_default()), "default");
}
END_TEST

/*
 * Pools live as long as the process, so the table is filled in a child of
 * its own: the other tests, run in this process when CK_FORK=no, still
 * find room.
 */
START_TEST(pool_create_past_bl_pool_max_is_enospc)
{
	pid_t pid = fork();
	int status;

	ck_assert_int_ge(pid, 0);
	if (!pid) {
		char name[32];
		int made = 0;

		for (int i = 0; i <= BL_POOL_MAX; i++) {
			snprintf(name, sizeof(name), "fill-%d", i);
			errno = 0;
			if (!bl_pool_create(name, NULL))
				_exit(errno == ENOSPC && made > 0 &&
				      made < BL_POOL_MAX ? 0 : 1);
			made++;
		}
		_exit(2);	/* never refused */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

START_TEST(pool_accounting_counts_raws_bytes_and_frontier)
{
	struct bl_pool *p = bl_pool_create("acct", NULL);
	struct bl_pool_stats st;
	struct bl_raw *r1, *r2;
	struct bl_ptr sl;

	assert_pool_empty(p);
	r1 = bl_raw_create_in(p, 1000);
	r2 = bl_raw_create_aligned_in(p, 8192, 4096);
	ck_assert_ptr_eq(bl_raw_pool(r1), p);
	ck_assert_ptr_eq(bl_raw_pool(r2), p);
	bl_pool_get_stats(p, &st);
	ck_assert_int_eq(st.raws, 2);
	ck_assert_int_eq(st.bytes, 1000 + 8192);
	ck_assert_int_eq(st.bytes_used, 1000 + 8192);
	bl_raw_put(r1);
	bl_pool_get_stats(p, &st);
	ck_assert_int_eq(st.raws, 1);
	ck_assert_int_eq(st.bytes, 8192);
	/* a slice shares: no new raw */
	bl_ptr_from_raw(&sl, r2);
	bl_pool_get_stats(p, &st);
	ck_assert_int_eq(st.raws, 1);
	bl_ptr_release(&sl);
	assert_pool_empty(p);
}
END_TEST

START_TEST(pool_list_appends_allocate_in_the_lists_pool)
{
	struct bl_pool *p = bl_pool_create("list-appends", NULL);
	struct bl_pool_stats st;
	struct bl_list l;
	char buf[300];

	memset(buf, 'x', sizeof(buf));
	bl_list_init(&l);
	bl_list_set_pool(&l, p);
	for (int i = 0; i < 50; i++)
		ck_assert_int_eq(bl_list_append(&l, buf, sizeof(buf)), 0);
	bl_pool_get_stats(p, &st);
	ck_assert_int_gt(st.raws, 0);
	/* the frontier is exactly what was appended */
	ck_assert_int_eq(st.bytes_used, 50 * 300);
	ck_assert_int_ge(st.bytes, st.bytes_used);
	bl_list_clear(&l);
	assert_pool_empty(p);
}
END_TEST

START_TEST(pool_rebuild_and_compact_keep_the_pool)
{
	struct bl_pool *p = bl_pool_create("keeps-pool", NULL);
	struct bl_pool_stats st;
	struct bl_list l;

	bl_list_init(&l);
	for (int i = 0; i < 10; i++) {
		struct bl_ptr bp = { bl_raw_create_in(p, 100), 0, 100 };

		memset(bl_ptr_data(&bp), i, 100);
		ck_assert_int_eq(bl_list_append_ptr_move(&l, &bp), 0);
	}
	bl_pool_get_stats(p, &st);
	ck_assert_int_eq(st.raws, 10);
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	bl_pool_get_stats(p, &st);
	ck_assert_int_eq(st.raws, 1);
	ck_assert_int_eq(st.bytes, 1000);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), 1);
	bl_pool_get_stats(p, &st);
	ck_assert_int_eq(st.raws, 1);
	bl_list_clear(&l);
	assert_pool_empty(p);
}
END_TEST

/* A counting allocator for one pool. */
struct counting {
	pthread_mutex_t lock;
	long allocs, frees;
	long long live;
};

static void *count_alloc(void *o, size_t size, size_t align)
{
	struct counting *c = o;
	void *p = NULL;

	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
			   size))
		return NULL;
	pthread_mutex_lock(&c->lock);
	c->allocs++;
	c->live += (long long)size;
	pthread_mutex_unlock(&c->lock);
	return p;
}

static void count_free(void *o, void *p, size_t size, size_t align)
{
	struct counting *c = o;

	pthread_mutex_lock(&c->lock);
	c->frees++;
	c->live -= (long long)size;
	pthread_mutex_unlock(&c->lock);
	free(p);
}

START_TEST(pool_own_allocator_sees_every_allocation_and_free)
{
	static struct counting cnt = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };
	struct bl_allocator a = { count_alloc, count_free, &cnt };
	struct bl_pool *p = bl_pool_create("counted", &a);
	struct bl_list l;
	char buf[64] = { 0 };

	ck_assert_ptr_nonnull(p);
	bl_list_init(&l);
	bl_list_set_pool(&l, p);
	for (int i = 0; i < 2000; i++) {
		struct bl_raw *r = bl_raw_create_in(p, 32);	/* cacheable size */

		bl_raw_put(r);
		ck_assert_int_eq(bl_list_append(&l, buf, sizeof(buf)), 0);
	}
	/* raws of a pool with its own allocator are never cached */
	ck_assert_int_ge(cnt.allocs, 2000);
	bl_list_clear(&l);
	ck_assert_int_eq(cnt.allocs, cnt.frees);
	ck_assert_int_eq(cnt.live, 0);
}
END_TEST

START_TEST(pool_global_allocator_sees_every_raw_and_chunk)
{
	struct tu_alloc_stats st;
	struct bl_list l;
	char buf[40] = { 0 };

	tu_alloc_install(0, 0);
	bl_list_init(&l);
	for (int i = 0; i < 500; i++) {
		struct bl_ptr bp;

		ck_assert_int_eq(bl_ptr_alloc(&bp, 32), 0);
		ck_assert_int_eq(bl_list_append_ptr_move(&l, &bp), 0);
		ck_assert_int_eq(bl_list_append(&l, buf, sizeof(buf)), 0);
	}
	tu_alloc_stats(&st);
	ck_assert_uint_ge(st.allocs, 500);
	bl_list_clear(&l);
	tu_alloc_stats(&st);
	ck_assert_uint_eq(st.allocs, st.frees);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();
}
END_TEST

/* Every length's size class is the smallest class that holds it: the
 * 16-byte-step table and the bit-scan formula both. */
START_TEST(size_class_is_the_smallest_class_that_fits)
{
	for (size_t len = 0; len <= BL_POOL_CACHE_MAX + 64; len++) {
		unsigned c = bl__size_class(len);

		if (len > BL_POOL_CACHE_MAX) {
			ck_assert_uint_eq(c, BL__NOCLASS);
			continue;
		}
		ck_assert_msg(c < BL__NCLASS, "len %zu: class %u", len, c);
		ck_assert_msg(bl__class_size(c) >= len,
			      "len %zu: class %u holds %zu", len, c,
			      bl__class_size(c));
		ck_assert_msg(c == 0 || bl__class_size(c - 1) < len,
			      "len %zu: class %u, but %u (%zu) holds it", len,
			      c, c - 1, bl__class_size(c - 1));
	}
	ck_assert_uint_eq(bl__class_size(BL__NCLASS - 1), BL_POOL_CACHE_MAX);
}
END_TEST

START_TEST(cache_recycles_small_raws)
{
	struct bl_pool_cache_stats cs0, cs1;
	struct bl_raw *r;
	char *first;

	r = bl_raw_create(100);
	first = bl_raw_data(r);
	bl_raw_put(r);
	bl_pool_cache_get_stats(&cs0);
	ck_assert_uint_ge(cs0.cached_raws, 1);
	/* the same class comes back from the cache: no allocator call */
	r = bl_raw_create(120);	/* same class (128) */
	ck_assert_ptr_eq(bl_raw_data(r), first);
	bl_pool_cache_get_stats(&cs1);
	ck_assert_uint_eq(cs1.misses, cs0.misses);
	ck_assert_uint_eq(((uintptr_t)bl_raw_data(r)) % 64, 0);
	bl_raw_put(r);
	bl_pool_cache_flush();
	bl_pool_cache_get_stats(&cs1);
	ck_assert_uint_eq(cs1.cached_raws, 0);
	ck_assert_uint_eq(cs1.cached_bytes, 0);
}
END_TEST

START_TEST(cache_off_sends_raws_to_the_allocator)
{
	struct bl_pool_cache_stats cs;

	bl_pool_cache_enable(false);
	ck_assert(!bl_pool_cache_enabled());
	for (int i = 0; i < 100; i++)
		bl_raw_put(bl_raw_create(64));
	bl_pool_cache_get_stats(&cs);
	ck_assert_uint_eq(cs.cached_raws, 0);
	bl_pool_cache_enable(true);
}
END_TEST

/* Producer/consumer: raws made on one thread, released on another. */
#define XN 20000
struct xfer {
	struct bl_raw *r[XN];
	_Atomic int ready;
};

static void *producer(void *arg)
{
	struct xfer *x = arg;

	for (int i = 0; i < XN; i++) {
		x->r[i] = bl_raw_create((size_t)(16 + i % 5000));
		ck_assert_ptr_nonnull(x->r[i]);
		memset(bl_raw_data(x->r[i]), 0xab, 16);
	}
	atomic_store(&x->ready, 1);
	return NULL;
}

static void *consumer(void *arg)
{
	struct xfer *x = arg;

	while (!atomic_load(&x->ready))
		sched_yield();
	for (int i = 0; i < XN; i++) {
		ck_assert_uint_eq((unsigned char)bl_raw_data(x->r[i])[15], 0xab);
		bl_raw_put(x->r[i]);
	}
	return NULL;
}

START_TEST(cache_cross_thread_release_is_counted_and_reused)
{
	struct xfer *x = calloc(1, sizeof(*x));
	struct bl_pool_stats before, after;
	pthread_t a, b;

	bl_pool_get_stats(bl_pool_default(), &before);
	for (int round = 0; round < 3; round++) {
		atomic_store(&x->ready, 0);
		ck_assert_int_eq(pthread_create(&a, NULL, producer, x), 0);
		ck_assert_int_eq(pthread_create(&b, NULL, consumer, x), 0);
		pthread_join(a, NULL);
		pthread_join(b, NULL);
	}
	bl_pool_get_stats(bl_pool_default(), &after);
	/* every raw came back, whichever thread freed it */
	ck_assert_int_eq(after.raws, before.raws);
	ck_assert_int_eq(after.bytes, before.bytes);
	bl_pool_cache_flush();
	free(x);
}
END_TEST

static void *make_and_free(void *arg)
{
	for (int i = 0; i < 1000; i++)
		bl_raw_put(bl_raw_create((size_t)(32 + i % 200)));
	return arg;
}

START_TEST(cache_thread_exit_hands_its_cache_to_the_depot)
{
	struct bl_pool_cache_stats cs;
	pthread_t t;

	bl_pool_cache_flush();
	ck_assert_int_eq(pthread_create(&t, NULL, make_and_free, NULL), 0);
	pthread_join(t, NULL);
	bl_pool_cache_get_stats(&cs);
	ck_assert_uint_gt(cs.cached_raws, 0);	/* in the depot now */
	bl_pool_cache_flush();
	bl_pool_cache_get_stats(&cs);
	ck_assert_uint_eq(cs.cached_raws, 0);
}
END_TEST

static int freed_big;
static void big_free(void *data, size_t len, void *opaque)
{
	(void)opaque;
	ck_assert_uint_eq(len, 65536);
	freed_big++;
	free(data);
}

START_TEST(compact_releases_a_large_raw_and_keeps_the_bytes)
{
	char *mem = malloc(65536);
	struct bl_raw *big;
	struct bl_ptr whole, small;
	struct bl_list l;
	ssize_t n;

	for (int i = 0; i < 65536; i++)
		mem[i] = (char)(i * 7);
	big = bl_raw_claim(mem, 65536, big_free, NULL);
	ck_assert_ptr_nonnull(big);
	bl_ptr_from_raw(&whole, big);
	ck_assert_int_eq(bl_ptr_slice(&small, &whole, 1000, 200), 0);
	bl_ptr_release(&whole);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hdr", 3), 0);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &small), 0);
	ck_assert_uint_ge(bl_list_pinned_unused(&l), 65536 - 200);
	freed_big = 0;
	n = bl_list_compact(&l, 4096);
	ck_assert_int_eq(n, 200);
	ck_assert_int_eq(freed_big, 1);
	ck_assert_uint_lt(bl_list_pinned_unused(&l), 4096);
	{
		unsigned char *got = tu_flatten(&l);

		ck_assert_mem_eq(got, "hdr", 3);
		for (int i = 0; i < 200; i++)
			ck_assert_int_eq((char)got[3 + i], (char)((1000 + i) * 7));
		free(got);
	}
	/* nothing left to compact */
	ck_assert_int_eq(bl_list_compact(&l, 4096), 0);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(compact_failure_leaves_the_list_unchanged)
{
	struct bl_raw *big = bl_raw_create(100000);
	struct bl_ptr whole, small;
	struct bl_list l;
	struct tu_alloc_stats st;
	int ret;

	memset(bl_raw_data(big), 'q', 100000);
	bl_ptr_from_raw(&whole, big);
	bl_ptr_slice(&small, &whole, 10, 50);
	bl_ptr_release(&whole);
	bl_list_init(&l);
	bl_list_append_ptr_move(&l, &small);
	tu_alloc_install(1, 1);
	ret = (int)bl_list_compact(&l, 100);
	ck_assert_int_eq(ret, -ENOMEM);
	tu_alloc_uninstall();
	ck_assert_uint_eq(bl_raw_nref(big), 1);
	ck_assert_uint_eq(bl_list_length(&l), 50);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	tu_alloc_stats(&st);
	ck_assert_int_eq(st.live_bytes, 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(lone_small_list_pins_little)
{
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "12345678", 8), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	/* the first append buffer is small */
	ck_assert_uint_le(bl_list_pinned_unused(&l), 256);
	bl_list_clear(&l);
}
END_TEST

START_TEST(pool_dump_prints_every_pool)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	bl_pool_create("dumped", NULL);
	ck_assert_int_eq(bl_pool_dump(f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "default"));
	ck_assert_ptr_nonnull(strstr(buf, "dumped"));
	ck_assert_ptr_nonnull(strstr(buf, "bytes_used"));
	free(buf);
}
END_TEST

static bool cache_was_on;
static void cache_on(void)
{
	cache_was_on = bl_pool_cache_enabled();
	bl_pool_cache_enable(true);
}

static void cache_restore(void)
{
	bl_pool_cache_enable(cache_was_on);
}

int main(void)
{
	const TTest *pools_tests[] = {
		pool_create_returns_same_pool_for_same_name,
		pool_create_past_bl_pool_max_is_enospc,
		pool_accounting_counts_raws_bytes_and_frontier,
		pool_list_appends_allocate_in_the_lists_pool,
		pool_rebuild_and_compact_keep_the_pool,
		pool_own_allocator_sees_every_allocation_and_free,
		pool_global_allocator_sees_every_raw_and_chunk,
		pool_dump_prints_every_pool,
		NULL
	};
	/* these run with the cache on, whatever BL_POOL_CACHE says */
	const TTest *caches_tests[] = {
		size_class_is_the_smallest_class_that_fits,
		cache_recycles_small_raws,
		cache_off_sends_raws_to_the_allocator,
		cache_cross_thread_release_is_counted_and_reused,
		cache_thread_exit_hands_its_cache_to_the_depot,
		NULL
	};
	const TTest *waste_tests[] = {
		compact_releases_a_large_raw_and_keeps_the_bytes,
		compact_failure_leaves_the_list_unchanged,
		lone_small_list_pins_little,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("pools", pools_tests),
		/* threads, sanitizers, a loaded machine */
		TU_GROUP("caches", caches_tests, .timeout = 60,
			 .setup = cache_on, .teardown = cache_restore),
		TU_GROUP("waste", waste_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("pool", groups));
}
