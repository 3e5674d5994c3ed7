/* SPDX-License-Identifier: MIT */
/*
 * test_raw.c - the raw layer: constructors of every kind, reference
 * counting (also across threads, and thread-local raws that count without
 * atomics), the free callback of claimed memory and the raws_created /
 * raws_freed counters.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

/* What a claimed raw's free callback saw. */
struct claim_rec {
	unsigned calls;
	void *data;
	size_t len;
	void *opaque;
	pthread_t thread;
};

static void claim_cb(void *data, size_t len, void *opaque)
{
	struct claim_rec *rec = opaque;

	rec->calls++;
	rec->data = data;
	rec->len = len;
	rec->opaque = opaque;
	rec->thread = pthread_self();
}

/* Like claim_cb, but also frees the memory (for malloc'd blocks). */
static void claim_cb_free(void *data, size_t len, void *opaque)
{
	claim_cb(data, len, opaque);
	free(data);
}

/* ---- create ------------------------------------------------------------ */

START_TEST(test_create_data_is_64_byte_aligned_and_sized)
{
	static const size_t lens[] = { 0, 1, 63, 64, 65, 4000, 4096, 100000 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct bl_raw *r = bl_raw_create(lens[i]);

		ck_assert_ptr_nonnull(r);
		ck_assert_ptr_nonnull(bl_raw_data(r));
		ck_assert_uint_eq((uintptr_t)bl_raw_data(r) % 64, 0);
		ck_assert_uint_eq(bl_raw_length(r), lens[i]);
		ck_assert_uint_eq(bl_raw_nref(r), 1);
		ck_assert(!bl_raw_is_static(r));
		ck_assert_uint_ge(bl_raw_alignment(r), 64);
		if (lens[i])
			/* the whole block is writable */
			memset(bl_raw_data(r), 0xa5, lens[i]);
		bl_raw_put(r);
	}
}
END_TEST

START_TEST(test_create_hands_out_whole_block)
{
	struct bl_raw *r = bl_raw_create(100);
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	/* frontier == length: the slice covers everything, no room to grow */
	ck_assert_uint_eq(p.off, 0);
	ck_assert_uint_eq(p.len, 100);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 0);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_create_empty_has_frontier_zero)
{
	struct bl_raw *r = bl_raw_create_empty(256);
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(bl_raw_length(r), 256);
	ck_assert_uint_eq((uintptr_t)bl_raw_data(r) % 64, 0);
	bl_ptr_from_raw(&p, r);
	ck_assert_ptr_eq(p.raw, r);
	ck_assert_uint_eq(p.len, 0);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 256);
	ck_assert_int_eq(bl_ptr_append(&p, "xyz", 3), 0);
	ck_assert_uint_eq(p.len, 3);
	ck_assert_mem_eq(bl_raw_data(r), "xyz", 3);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_create_aligned_honours_alignment)
{
	static const size_t aligns[] = { 8, 64, 512, 4096, 8192, 65536 };

	for (size_t i = 0; i < sizeof(aligns) / sizeof(aligns[0]); i++) {
		struct bl_raw *r = bl_raw_create_aligned(3 * 4096 + 7,
							 aligns[i]);
		size_t want = aligns[i] < 4096 ? aligns[i] : 4096;

		ck_assert_ptr_nonnull(r);
		ck_assert_uint_eq((uintptr_t)bl_raw_data(r) % aligns[i], 0);
		ck_assert_uint_eq(bl_raw_length(r), 3 * 4096 + 7);
		ck_assert_uint_eq(bl_raw_nref(r), 1);
		ck_assert(!bl_raw_is_static(r));
		/* bl_raw_alignment() is capped at 4096 */
		ck_assert_uint_ge(bl_raw_alignment(r), want);
		ck_assert_uint_le(bl_raw_alignment(r), 4096);
		memset(bl_raw_data(r), 1, bl_raw_length(r));
		bl_raw_put(r);
	}
}
END_TEST

START_TEST(test_create_aligned_zero_length)
{
	struct bl_raw *r = bl_raw_create_aligned(0, 4096);

	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(bl_raw_length(r), 0);
	bl_raw_put(r);
}
END_TEST

START_TEST(test_create_aligned_rejects_non_power_of_two)
{
	static const size_t bad[] = { 0, 3, 48, 100, 4095, 4097, 12288 };
	struct bl_stats before = stats_now(), after;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(bl_raw_create_aligned(4096, bad[i]) == NULL,
			      "align %zu accepted", bad[i]);
	after = stats_now();
	ck_assert_uint_eq(after.raws_created, before.raws_created);
}
END_TEST

START_TEST(test_create_in_pool)
{
	struct bl_pool *p = bl_pool_create("test_raw", NULL);
	struct bl_raw *d, *n, *in, *a;

	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_ne(p, bl_pool_default());
	d = bl_raw_create(10);
	n = bl_raw_create_in(NULL, 10);
	in = bl_raw_create_in(p, 1000);
	a = bl_raw_create_aligned_in(p, 8192, 4096);
	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(n);
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_eq(bl_raw_pool(d), bl_pool_default());
	ck_assert_ptr_eq(bl_raw_pool(n), bl_pool_default());
	ck_assert_ptr_eq(bl_raw_pool(in), p);
	ck_assert_ptr_eq(bl_raw_pool(a), p);
	ck_assert_uint_eq(bl_raw_length(in), 1000);
	ck_assert_uint_eq((uintptr_t)bl_raw_data(in) % 64, 0);
	ck_assert_uint_eq(bl_raw_length(a), 8192);
	ck_assert_uint_eq((uintptr_t)bl_raw_data(a) % 4096, 0);
	ck_assert_ptr_null(bl_raw_create_aligned_in(p, 100, 96));
	bl_raw_put(d);
	bl_raw_put(n);
	bl_raw_put(in);
	bl_raw_put(a);
}
END_TEST

/* ---- static ------------------------------------------------------------ */

/* A NULL block with a length is refused: NULL, nothing counted. */
START_TEST(test_static_and_claim_of_null_with_length_fail)
{
	struct bl_stats s0 = stats_now(), s1;
	struct bl_raw *r;

	ck_assert_ptr_null(bl_raw_create_static(NULL, 8));
	ck_assert_ptr_null(bl_raw_claim(NULL, 8, NULL, NULL));
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_created, s0.raws_created);
	/* an empty one is fine */
	r = bl_raw_create_static(NULL, 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(bl_raw_length(r), 0);
	bl_raw_put(r);
}
END_TEST

START_TEST(test_static_wraps_borrowed_memory)
{
	static const char text[] = "borrowed bytes";
	struct bl_raw *r = bl_raw_create_static(text, sizeof(text));

	ck_assert_ptr_nonnull(r);
	ck_assert(bl_raw_is_static(r));
	ck_assert_ptr_eq(bl_raw_data(r), text);
	ck_assert_uint_eq(bl_raw_length(r), sizeof(text));
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	bl_raw_put(r);
	ck_assert_str_eq(text, "borrowed bytes");
}
END_TEST

START_TEST(test_static_memory_is_never_freed)
{
	struct bl_stats before = stats_now(), after;
	char *buf = malloc(64);
	struct bl_raw *r;

	ck_assert_ptr_nonnull(buf);
	memcpy(buf, "still mine", 11);
	r = bl_raw_create_static(buf, 64);
	ck_assert_ptr_nonnull(r);
	bl_raw_get(r);
	bl_raw_put(r);
	bl_raw_put(r);
	after = stats_now();
	ck_assert_uint_eq(after.raws_created - before.raws_created, 1);
	ck_assert_uint_eq(after.raws_freed - before.raws_freed, 1);
	/* the memory is still ours: readable, and ours to free (a double
	 * free here would abort the test) */
	ck_assert_str_eq(buf, "still mine");
	free(buf);
}
END_TEST

START_TEST(test_static_alignment_reports_address)
{
	static _Alignas(64) char buf[128];
	struct bl_raw *r1 = bl_raw_create_static(buf + 1, 16);
	struct bl_raw *r8 = bl_raw_create_static(buf + 8, 16);
	struct bl_raw *r64 = bl_raw_create_static(buf + 64, 16);

	ck_assert_ptr_nonnull(r1);
	ck_assert_ptr_nonnull(r8);
	ck_assert_ptr_nonnull(r64);
	ck_assert_uint_eq(bl_raw_alignment(r1), 1);
	ck_assert_uint_eq(bl_raw_alignment(r8), 8);
	ck_assert_uint_ge(bl_raw_alignment(r64), 64);
	ck_assert_uint_eq((uintptr_t)(buf + 64) % bl_raw_alignment(r64), 0);
	bl_raw_put(r1);
	bl_raw_put(r8);
	bl_raw_put(r64);
}
END_TEST

/* ---- claim ------------------------------------------------------------- */

START_TEST(test_claim_calls_free_once_at_last_put)
{
	struct claim_rec rec = { 0 };
	char *data = malloc(333);
	struct bl_raw *r;

	ck_assert_ptr_nonnull(data);
	r = bl_raw_claim(data, 333, claim_cb_free, &rec);
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_eq(bl_raw_data(r), data);
	ck_assert_uint_eq(bl_raw_length(r), 333);
	ck_assert(!bl_raw_is_static(r));
	ck_assert_ptr_eq(bl_raw_get(r), r);
	ck_assert_ptr_eq(bl_raw_get(r), r);
	ck_assert_uint_eq(bl_raw_nref(r), 3);
	bl_raw_put(r);
	bl_raw_put(r);
	ck_assert_uint_eq(rec.calls, 0);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	bl_raw_put(r);
	ck_assert_uint_eq(rec.calls, 1);
	ck_assert_ptr_eq(rec.data, data);
	ck_assert_uint_eq(rec.len, 333);
	ck_assert_ptr_eq(rec.opaque, &rec);
}
END_TEST

START_TEST(test_claim_released_through_slices)
{
	struct claim_rec rec = { 0 };
	static char mem[64];
	struct bl_raw *r = bl_raw_claim(mem, sizeof(mem), claim_cb, &rec);
	struct bl_ptr a = BL_PTR_INIT, b = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&a, r);
	ck_assert_int_eq(bl_ptr_slice(&b, &a, 10, 20), 0);
	bl_ptr_release(&a);
	ck_assert_uint_eq(rec.calls, 0);
	bl_ptr_release(&b);
	ck_assert_uint_eq(rec.calls, 1);
	ck_assert_ptr_eq(rec.data, mem);
	ck_assert_uint_eq(rec.len, sizeof(mem));
}
END_TEST

/*
 * Bytes the C heap has handed out and not taken back, or 0 when this
 * process cannot tell (valgrind replaces malloc and reports nothing; its
 * own leak check covers the test there).
 */
#ifdef __SANITIZE_ADDRESS__
size_t __sanitizer_get_current_allocated_bytes(void);

static size_t heap_in_use(void)
{
	return __sanitizer_get_current_allocated_bytes();
}
#else
static size_t heap_in_use(void)
{
	return mallinfo2().uordblks;
}
#endif

START_TEST(test_claim_null_fn_frees_with_free)
{
	/* Large enough to be visible in malloc's accounting, small enough
	 * to come from the heap rather than mmap. */
	const size_t n = 100000;
	struct bl_stats s0 = stats_now(), s1;
	size_t m0, m1;
	char *data = malloc(n);
	struct bl_raw *r;

	ck_assert_ptr_nonnull(data);
	memset(data, 7, n);
	r = bl_raw_claim(data, n, NULL, NULL);
	ck_assert_ptr_nonnull(r);
	m0 = heap_in_use();
	bl_raw_put(r);
	m1 = heap_in_use();
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 1);
	if (m0 >= n)
		ck_assert_msg(m0 >= m1 + n,
			      "claimed block not freed: in use %zu -> %zu",
			      m0, m1);
}
END_TEST

START_TEST(test_claim_counts_created_and_freed)
{
	struct claim_rec rec = { 0 };
	static char mem[16];
	struct bl_stats s0 = stats_now(), s1, s2;
	struct bl_raw *r = bl_raw_claim(mem, sizeof(mem), claim_cb, &rec);

	ck_assert_ptr_nonnull(r);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_created - s0.raws_created, 1);
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 0);
	bl_raw_put(r);
	s2 = stats_now();
	ck_assert_uint_eq(s2.raws_freed - s0.raws_freed, 1);
	ck_assert_uint_eq(rec.calls, 1);
}
END_TEST

/* ---- get / put / nref -------------------------------------------------- */

START_TEST(test_get_put_count_references)
{
	struct bl_raw *r = bl_raw_create(10);
	struct bl_stats s0 = stats_now(), s1;

	ck_assert_ptr_nonnull(r);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	for (unsigned i = 2; i <= 10; i++) {
		ck_assert_ptr_eq(bl_raw_get(r), r);
		ck_assert_uint_eq(bl_raw_nref(r), i);
	}
	for (unsigned i = 9; i >= 1; i--) {
		bl_raw_put(r);
		ck_assert_uint_eq(bl_raw_nref(r), i);
	}
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed, s0.raws_freed);
	bl_raw_put(r);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 1);
}
END_TEST

/*
 * A raw released twice (a caller's bug) whose block went to the pool
 * cache must not be cached twice, or two later creates share one block.
 * ASan and --enable-debug builds report the second release instead
 * (test_doublefree, test_debug); this is what the other builds promise.
 */
START_TEST(test_double_release_does_not_cache_the_block_twice)
{
#if !defined(BL__ASAN) && !defined(BL_DEBUG)
	bool was_on = bl_pool_cache_enabled();
	struct bl_raw *x, *a, *b;

	bl_pool_cache_enable(true);
	x = bl_raw_create(100);
	ck_assert_ptr_nonnull(x);
	bl_raw_put(x);
	bl_raw_put(x);	/* the block is in this thread's cache: no crash */
	a = bl_raw_create(100);
	b = bl_raw_create(100);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_ne(a, b);
	ck_assert_uint_eq(bl_raw_nref(a), 1);
	ck_assert_uint_eq(bl_raw_nref(b), 1);
	bl_raw_put(a);
	bl_raw_put(b);
	bl_pool_cache_enable(was_on);
#endif
}
END_TEST

START_TEST(test_put_null_is_noop)
{
	struct bl_stats s0 = stats_now(), s1;

	bl_raw_put(NULL);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed, s0.raws_freed);
	ck_assert_uint_eq(s1.raws_created, s0.raws_created);
}
END_TEST

START_TEST(test_counters_count_every_kind)
{
	static char mem[32];
	struct claim_rec rec = { 0 };
	struct bl_stats s0 = stats_now(), s1, s2;
	struct bl_raw *r[5];

	r[0] = bl_raw_create(10);
	r[1] = bl_raw_create_empty(10);
	r[2] = bl_raw_create_aligned(10, 4096);
	r[3] = bl_raw_create_static(mem, sizeof(mem));
	r[4] = bl_raw_claim(mem, sizeof(mem), claim_cb, &rec);
	for (int i = 0; i < 5; i++)
		ck_assert_ptr_nonnull(r[i]);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_created - s0.raws_created, 5);
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 0);
	for (int i = 0; i < 5; i++)
		bl_raw_put(r[i]);
	s2 = stats_now();
	ck_assert_uint_eq(s2.raws_freed - s0.raws_freed, 5);
	ck_assert_uint_eq(rec.calls, 1);
	/* bl_stats_get() sums every thread: it saw at least ours */
	{
		struct bl_stats all;

		bl_stats_get(&all);
		ck_assert_uint_ge(all.raws_created, s2.raws_created);
		ck_assert_uint_ge(all.raws_freed, s2.raws_freed);
	}
}
END_TEST

START_TEST(test_invalidate_crc_after_direct_write)
{
	/* large enough for the raw to cache its crc */
	const size_t n = 4096;
	struct bl_raw *r = bl_raw_create(n);
	struct bl_ptr p = BL_PTR_INIT;
	struct bl_list l;
	char *d;

	ck_assert_ptr_nonnull(r);
	d = bl_raw_data(r);
	for (size_t i = 0; i < n; i++)
		d[i] = (char)(i * 7);
	bl_list_init(&l);
	bl_ptr_from_raw(&p, bl_raw_get(r));
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), bl_crc32c(0, d, n));
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), bl_crc32c(0, d, n));
	d[17] ^= 0x40;
	bl_raw_invalidate_crc(r);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), bl_crc32c(0, d, n));
	ck_assert_uint_eq(bl_list_crc32c(&l, 5), bl_crc32c(5, d, n));
	bl_list_clear(&l);
	bl_raw_put(r);
}
END_TEST

/* ---- threads ----------------------------------------------------------- */

#define XFER_N 64

struct xfer {
	struct bl_raw *r[XFER_N];
	struct bl_stats before, after;
};

static void *put_all(void *arg)
{
	struct xfer *x = arg;

	bl_stats_thread(&x->before);
	for (int i = 0; i < XFER_N; i++)
		bl_raw_put(x->r[i]);
	bl_stats_thread(&x->after);
	return NULL;
}

START_TEST(test_cross_thread_release)
{
	static struct claim_rec recs[XFER_N];
	static char mem[XFER_N][8];
	struct xfer x;
	struct bl_stats s0 = stats_now(), s1, s2;
	pthread_t t;

	memset(recs, 0, sizeof(recs));
	for (int i = 0; i < XFER_N; i++) {
		switch (i % 4) {
		case 0:
			x.r[i] = bl_raw_create(100 + i);
			break;
		case 1:
			x.r[i] = bl_raw_create_aligned(4096, 4096);
			break;
		case 2:
			x.r[i] = bl_raw_claim(mem[i], 8, claim_cb, &recs[i]);
			break;
		default:
			x.r[i] = bl_raw_create_empty(64);
			break;
		}
		ck_assert_ptr_nonnull(x.r[i]);
	}
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_created - s0.raws_created, XFER_N);
	ck_assert_int_eq(pthread_create(&t, NULL, put_all, &x), 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	/* the freeing thread counted the frees, the creating thread none */
	ck_assert_uint_eq(x.after.raws_freed - x.before.raws_freed, XFER_N);
	ck_assert_uint_eq(x.after.raws_created, x.before.raws_created);
	s2 = stats_now();
	ck_assert_uint_eq(s2.raws_freed, s1.raws_freed);
	for (int i = 2; i < XFER_N; i += 4) {
		ck_assert_uint_eq(recs[i].calls, 1);
		ck_assert(pthread_equal(recs[i].thread, t));
		ck_assert_ptr_eq(recs[i].data, mem[i]);
	}
}
END_TEST

#define HAMMER_ROUNDS 200000

static void *hammer(void *arg)
{
	struct bl_raw *r = arg;

	for (int i = 0; i < HAMMER_ROUNDS; i++) {
		bl_raw_get(r);
		if (i & 1) {
			bl_raw_get(r);
			bl_raw_put(r);
		}
		bl_raw_put(r);
	}
	return NULL;
}

START_TEST(test_concurrent_get_put_keeps_count)
{
	static char mem[8];
	struct claim_rec rec = { 0 };
	struct bl_raw *r = bl_raw_claim(mem, sizeof(mem), claim_cb, &rec);
	pthread_t t[4];

	ck_assert_ptr_nonnull(r);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, r), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_join(t[i], NULL), 0);
	ck_assert_uint_eq(rec.calls, 0);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	bl_raw_put(r);
	ck_assert_uint_eq(rec.calls, 1);
}
END_TEST

/* ---- thread-local raws ------------------------------------------------- */

/*
 * The switch is restored by a checked fixture, which Check runs after the
 * test even when an assertion ended it early (CK_FORK=no runs every test
 * in this one thread, so a switch left on would change the next tests).
 */
static void local_on(void)
{
	bl_raw_set_thread_local(true);
}

static void local_off(void)
{
	bl_raw_set_thread_local(false);
}

/*
 * Every constructor makes a thread-local raw while the switch is on, and
 * such a raw counts, frees, calls its claim callback and keeps its
 * counters exactly as a shared one does; raws made before and after keep
 * what they were made as.
 */
START_TEST(test_thread_local_raws_count_and_free_like_shared_ones)
{
	static char mem[16], smem[8];
	struct claim_rec rec = { 0 };
	struct bl_stats s0 = stats_now(), s1;
	struct bl_raw *before = bl_raw_create(10), *r[6], *after;

	ck_assert_ptr_nonnull(before);
	ck_assert(!bl_raw_set_thread_local(true));
	ck_assert(bl_raw_set_thread_local(true));	/* reports it is on */
	r[0] = bl_raw_create(10);
	r[1] = bl_raw_create_empty(64);
	r[2] = bl_raw_create_aligned(4096, 4096);
	r[3] = bl_raw_create_static(smem, sizeof(smem));
	r[4] = bl_raw_claim(mem, sizeof(mem), claim_cb, &rec);
	r[5] = bl_raw_create_in(bl_pool_create("test_local", NULL), 70000);
	ck_assert(bl_raw_set_thread_local(false));
	after = bl_raw_create(10);
	ck_assert_ptr_nonnull(after);
	ck_assert(!bl_raw_is_thread_local(before));
	ck_assert(!bl_raw_is_thread_local(after));
	for (int k = 0; k < 6; k++) {
		ck_assert_ptr_nonnull(r[k]);
		ck_assert_msg(bl_raw_is_thread_local(r[k]), "raw %d", k);
		ck_assert_uint_eq(bl_raw_nref(r[k]), 1);
		for (unsigned i = 2; i <= 5; i++) {
			ck_assert_ptr_eq(bl_raw_get(r[k]), r[k]);
			ck_assert_uint_eq(bl_raw_nref(r[k]), i);
		}
		for (unsigned i = 4; i >= 1; i--) {
			bl_raw_put(r[k]);
			ck_assert_uint_eq(bl_raw_nref(r[k]), i);
		}
	}
	ck_assert(bl_raw_is_static(r[3]));
	ck_assert_uint_eq(rec.calls, 0);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_created - s0.raws_created, 8);
	ck_assert_uint_eq(s1.raws_freed, s0.raws_freed);
	for (int k = 0; k < 6; k++)
		bl_raw_put(r[k]);
	ck_assert_uint_eq(rec.calls, 1);
	ck_assert_ptr_eq(rec.data, mem);
	bl_raw_put(before);
	bl_raw_put(after);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 8);
}
END_TEST

/*
 * The raws the library makes for the thread are thread-local too (a
 * list's append buffer), slices shared out of them count without losing a
 * reference, and a thread-local raw made empty still grows through the
 * slice at its frontier (the flag is not one of the two that forbid it).
 */
START_TEST(test_thread_local_reaches_append_buffers_and_slices)
{
	struct bl_list l, m;
	struct bl_ptr p = BL_PTR_INIT, q = BL_PTR_INIT;
	struct bl_raw *e;
	unsigned n0;
	char out[5];

	bl_list_init(&l);
	bl_list_init(&m);
	ck_assert_int_eq(bl_list_append(&l, "hello world", 11), 0);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	ck_assert(bl_raw_is_thread_local(p.raw));
	n0 = bl_raw_nref(p.raw);	/* the segment, p, the append buffer */
	ck_assert_uint_ge(n0, 2);
	ck_assert_int_eq(bl_list_substr_of(&m, &l, 6, 5), 0);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0 + 1);
	ck_assert_int_eq(bl_list_copy_out(&m, 0, 5, out), 0);
	ck_assert_mem_eq(out, "world", 5);
	bl_list_clear(&m);
	ck_assert_uint_eq(bl_raw_nref(p.raw), n0);
	bl_list_clear(&l);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 1);	/* p's alone */
	bl_ptr_release(&p);

	e = bl_raw_create_empty(32);
	ck_assert_ptr_nonnull(e);
	ck_assert(bl_raw_is_thread_local(e));
	bl_ptr_from_raw(&q, e);
	ck_assert_uint_eq(bl_ptr_unused_tail(&q), 32);
	ck_assert_int_eq(bl_ptr_append(&q, "abc", 3), 0);
	ck_assert_uint_eq(q.len, 3);
	bl_ptr_release(&q);
}
END_TEST

static void *made_in_new_thread(void *arg)
{
	struct bl_raw *r = bl_raw_create(10);
	bool *local = arg;

	*local = r && bl_raw_is_thread_local(r);
	bl_raw_put(r);
	return NULL;
}

/* The switch is the calling thread's: a new thread starts with it off. */
START_TEST(test_thread_local_is_per_thread)
{
	bool local = true;
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, made_in_new_thread, &local),
			 0);
	ck_assert_int_eq(pthread_join(t, NULL), 0);
	ck_assert(!local);
	ck_assert(bl_raw_set_thread_local(true));	/* ours is still on */
}
END_TEST

/* ---- allocation failure ------------------------------------------------ */

START_TEST(test_constructors_fail_cleanly_without_memory)
{
	struct claim_rec rec = { 0 };
	static char mem[16];
	struct tu_alloc_stats st;
	struct bl_stats s0, s1;
	struct bl_raw *r;

	tu_alloc_install(1, 1);
	s0 = stats_now();
	ck_assert_ptr_null(bl_raw_create(100));
	ck_assert_ptr_null(bl_raw_create_empty(100));
	ck_assert_ptr_null(bl_raw_create_aligned(4096, 4096));
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_created, s0.raws_created);

	/* claim: on failure the callback is not called, the caller keeps
	 * the memory; if the header came from elsewhere, it is a raw */
	r = bl_raw_claim(mem, sizeof(mem), claim_cb, &rec);
	if (r == NULL) {
		ck_assert_uint_eq(rec.calls, 0);
	} else {
		bl_raw_put(r);
		ck_assert_uint_eq(rec.calls, 1);
	}
	tu_alloc_stats(&st);
	ck_assert_uint_ge(st.failed, 3);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();
}
END_TEST

START_TEST(test_raws_use_the_installed_allocator)
{
	struct tu_alloc_stats st;
	struct bl_raw *r, *a;

	tu_alloc_install(0, 0);
	r = bl_raw_create(1000);
	a = bl_raw_create_aligned(8192, 4096);
	ck_assert_ptr_nonnull(r);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq((uintptr_t)bl_raw_data(a) % 4096, 0);
	tu_alloc_stats(&st);
	ck_assert_uint_ge(st.allocs, 2);
	ck_assert_int_ge(st.live_bytes, 1000 + 8192);
	/* a raw is freed through the allocator that made it, even after
	 * another one was installed */
	tu_alloc_uninstall();
	bl_raw_put(r);
	bl_raw_put(a);
	tu_alloc_stats(&st);
	ck_assert_int_eq(st.live_bytes, 0);
	ck_assert_uint_eq(st.frees, st.allocs);
}
END_TEST

int main(void)
{
	const TTest *create_tests[] = {
		test_create_data_is_64_byte_aligned_and_sized,
		test_create_hands_out_whole_block,
		test_create_empty_has_frontier_zero,
		test_create_aligned_honours_alignment,
		test_create_aligned_zero_length,
		test_create_aligned_rejects_non_power_of_two,
		test_create_in_pool,
		NULL
	};
	const TTest *static_tests[] = {
		test_static_wraps_borrowed_memory,
		test_static_and_claim_of_null_with_length_fail,
		test_static_memory_is_never_freed,
		test_static_alignment_reports_address,
		NULL
	};
	const TTest *claim_tests[] = {
		test_claim_calls_free_once_at_last_put,
		test_claim_released_through_slices,
		test_claim_null_fn_frees_with_free,
		test_claim_counts_created_and_freed,
		NULL
	};
	const TTest *refcount_tests[] = {
		test_get_put_count_references,
		test_put_null_is_noop,
		test_double_release_does_not_cache_the_block_twice,
		test_counters_count_every_kind,
		test_invalidate_crc_after_direct_write,
		NULL
	};
	const TTest *threads_tests[] = {
		test_cross_thread_release,
		test_concurrent_get_put_keeps_count,
		NULL
	};
	/* the switch turned on and off is what this one asserts */
	const TTest *thread_local_switch_tests[] = {
		test_thread_local_raws_count_and_free_like_shared_ones,
		NULL
	};
	const TTest *thread_local_tests[] = {
		test_thread_local_reaches_append_buffers_and_slices,
		test_thread_local_is_per_thread,
		NULL
	};
	const TTest *alloc_tests[] = {
		test_constructors_fail_cleanly_without_memory,
		test_raws_use_the_installed_allocator,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("create", create_tests),
		TU_GROUP("static", static_tests),
		TU_GROUP("claim", claim_tests),
		TU_GROUP("refcount", refcount_tests),
		TU_GROUP("threads", threads_tests, .timeout = 60),
		TU_GROUP("thread-local-switch", thread_local_switch_tests,
			 .setup = NULL, .teardown = local_off),
		TU_GROUP("thread-local", thread_local_tests,
			 .setup = local_on, .teardown = local_off),
		TU_GROUP("alloc", alloc_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("raw", groups));
}
