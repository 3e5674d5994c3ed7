/* SPDX-License-Identifier: MIT */
/*
 * test_debug.c - the checks of --enable-debug (BL_DEBUG).
 *
 * Each misuse runs in a child, which must die of abort() with the
 * library's message naming it: a raw released twice (from a pool cache
 * or freed to malloc), a reference taken on a released raw, a reference
 * taken or dropped in another thread on a thread-local raw, a cursor
 * used after its list changed, a list's offset index left stale.  A child
 * that uses the library correctly must exit cleanly.  In an ASan build
 * ASan may report the misuse first: that counts as caught too.  Builds
 * without BL_DEBUG exit 77, which the test driver reports as SKIP.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>
#include "testutil.h"

#ifdef BL_DEBUG

static char err[16384];

static void assert_caught(int status, const char *msg)
{
#ifdef BL__ASAN
	if (strstr(err, "ERROR: AddressSanitizer"))
		return;
#endif
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
		      "not aborted (status %d): %s", status, err);
	ck_assert_msg(strstr(err, "libbufferlist: ") != NULL &&
		      strstr(err, msg) != NULL,
		      "message lacks \"%s\": %s", msg, err);
}

/* Whether the child's double release goes through the pool cache (the
 * child is forked: the parent sets it first). */
static bool cached;

static void double_release(void)
{
	struct bl_raw *x;

	bl_pool_cache_enable(cached);
	x = bl_raw_create(100);
	bl_raw_put(x);
	bl_raw_put(x);
}

START_TEST(double_release_from_the_cache_aborts)
{
	cached = true;
	assert_caught(tu_run_child(double_release, err, sizeof(err)),
		      "released twice");
}
END_TEST

START_TEST(double_release_without_the_cache_aborts)
{
	cached = false;
	assert_caught(tu_run_child(double_release, err, sizeof(err)),
		      "released twice");
}
END_TEST

START_TEST(slice_copied_without_reference_aborts)
{
	assert_caught(tu_run_child(tu_slice_released_twice, err,
				   sizeof(err)),
		      "released twice");
}
END_TEST

static void get_after_release(void)
{
	struct bl_raw *x;

	bl_pool_cache_enable(true);
	x = bl_raw_create(100);
	bl_raw_put(x);
	bl_raw_get(x);
}

START_TEST(reference_taken_after_release_aborts)
{
	assert_caught(tu_run_child(get_after_release, err, sizeof(err)),
		      "used after its last release");
}
END_TEST

static void *get_and_put(void *arg)
{
	bl_raw_put(bl_raw_get(arg));
	return NULL;
}

static void *put_only(void *arg)
{
	bl_raw_put(arg);
	return NULL;
}

/* A thread-local raw handed to another thread, which takes a reference. */
static void local_raw_taken_elsewhere(void)
{
	struct bl_raw *x;
	pthread_t t;

	bl_raw_set_thread_local(true);
	x = bl_raw_create(100);
	if (!x || pthread_create(&t, NULL, get_and_put, x))
		_exit(4);
	pthread_join(t, NULL);
}

START_TEST(thread_local_raw_taken_in_another_thread_aborts)
{
	assert_caught(tu_run_child(local_raw_taken_elsewhere, err, sizeof(err)),
		      "thread-local to another thread");
}
END_TEST

/* The same raw, shared twice, dropped once by another thread. */
static void local_raw_dropped_elsewhere(void)
{
	struct bl_raw *x;
	pthread_t t;

	bl_raw_set_thread_local(true);
	x = bl_raw_create(100);
	if (!x)
		_exit(4);
	bl_raw_get(x);
	if (pthread_create(&t, NULL, put_only, x))
		_exit(5);
	pthread_join(t, NULL);
}

START_TEST(thread_local_raw_dropped_in_another_thread_aborts)
{
	assert_caught(tu_run_child(local_raw_dropped_elsewhere, err,
				   sizeof(err)),
		      "thread-local to another thread");
}
END_TEST

/* A cursor made, the list appended to (a new segment), the cursor used. */
static void cursor_after_append(void)
{
	struct bl_list l;
	struct bl_iter it;
	struct bl_ptr p;
	char buf[4];

	bl_list_init(&l);
	if (bl_list_append(&l, "abcd", 4) || bl_ptr_alloc(&p, 8))
		_exit(4);
	memset(bl_ptr_data(&p), 'p', 8);
	bl_iter_init(&it, &l, 0);
	if (bl_list_append_ptr_move(&l, &p))
		_exit(5);
	bl_iter_copy(&it, 4, buf);
}

START_TEST(cursor_used_after_its_list_changed_aborts)
{
	assert_caught(tu_run_child(cursor_after_append, err, sizeof(err)),
		      "used after its list");
}
END_TEST

/* ... and after a clear, which freed the raws it points into. */
static void cursor_after_clear(void)
{
	struct bl_list l;
	struct bl_iter it;
	const char *d;

	bl_list_init(&l);
	if (bl_list_append(&l, "abcd", 4))
		_exit(4);
	bl_iter_init(&it, &l, 1);
	bl_list_clear(&l);
	bl_iter_get_ptr_and_advance(&it, 2, &d);
}

START_TEST(cursor_used_after_its_list_was_cleared_aborts)
{
	assert_caught(tu_run_child(cursor_after_clear, err, sizeof(err)),
		      "used after its list");
}
END_TEST

/*
 * The inline moves, decoders and bl_iter_remaining (iter.h, codec.h), each
 * on bytes inside the cursor's segment -- where they would not call the
 * library in other builds -- after the list gained a segment: every one
 * must still be caught.
 */
static int inline_kind;
static volatile size_t remaining_sink;	/* the call must not be dropped */

static void inline_after_append(void)
{
	struct bl_list l;
	struct bl_iter it;
	struct bl_ptr p;
	const char *d;
	uint8_t a;
	uint16_t b;
	uint32_t c;
	uint64_t v;

	bl_list_init(&l);
	if (bl_list_append(&l, "abcdefghijklmnop", 16) || bl_ptr_alloc(&p, 8))
		_exit(4);
	memset(bl_ptr_data(&p), 'p', 8);
	bl_iter_init(&it, &l, 0);
	if (bl_decode_u32(&it, &c) || bl_iter_advance(&it, 1))
		_exit(5);	/* fine before the change */
	if (bl_list_append_ptr_move(&l, &p))
		_exit(6);
	switch (inline_kind) {
	case 0:
		bl_iter_advance(&it, 1);
		break;
	case 1:
		bl_iter_get_ptr_and_advance(&it, 2, &d);
		break;
	case 2:
		bl_decode_u8(&it, &a);
		break;
	case 3:
		bl_decode_u16(&it, &b);
		break;
	case 4:
		bl_decode_u32(&it, &c);
		break;
	case 5:
		bl_decode_u64(&it, &v);
		break;
	default:
		remaining_sink = bl_iter_remaining(&it);
		break;
	}
}

START_TEST(cursor_inline_move_after_its_list_changed_aborts)
{
	inline_kind = _i;
	assert_caught(tu_run_child(inline_after_append, err, sizeof(err)),
		      "used after its list");
}
END_TEST

/*
 * An offset index left stale: the list's chain is changed behind the
 * library's back (as a mutation that forgot to drop the index would), so
 * the index names a chunk the chain no longer holds.
 */
static void stale_offset_index(void)
{
	struct bl_list l = BL_LIST_INIT(l);
	struct bl_ptr big = BL_PTR_INIT;
	struct bl__chunk_hdr *second;
	char c;

	if (bl_ptr_alloc(&big, 2 * 64 * 1000))
		_exit(4);
	for (unsigned i = 0; i < 1000; i++) {
		struct bl_ptr p = big;	/* borrowed: 64-byte slices, apart */

		p.off = 128 * (size_t)i;
		p.len = 64;
		if (bl_list_append_ptr(&l, &p))
			_exit(4);
	}
	if (bl_list_copy_out(&l, bl_list_length(&l) / 2, 1, &c))
		_exit(4);	/* builds the index */
	second = l._inl.next;
	second->next = second->next->next;	/* the third chunk leaves */
	bl_list_copy_out(&l, bl_list_length(&l) / 2, 1, &c);
}

START_TEST(stale_offset_index_aborts)
{
	assert_caught(tu_run_child(stale_offset_index, err, sizeof(err)),
		      "offset index");
}
END_TEST

static void correct_use(void)
{
	struct bl_list l, m;
	struct bl_raw *r;

	bl_pool_cache_enable(true);
	bl_list_init(&l);
	bl_list_init(&m);
	for (int i = 0; i < 5000; i++) {
		r = bl_raw_create(1 + (size_t)i % 3000);
		if (!r)
			_exit(5);
		bl_raw_get(r);
		bl_raw_put(r);
		bl_raw_put(r);
		if (bl_list_append(&l, "abcdefgh", 1 + i % 8))
			_exit(6);
	}
	if (bl_list_append_list(&m, &l) || bl_list_substr_of(&m, &l, 3, 100))
		_exit(7);
	{
		/* cursors over lists that do not change, one copied */
		struct bl_iter it, it2;
		char buf[64];
		uint32_t v;

		if (bl_iter_init(&it, &l, 0))
			_exit(8);
		while (bl_iter_remaining(&it) >= sizeof(buf))
			if (bl_iter_copy(&it, sizeof(buf), buf))
				_exit(9);
		if (bl_iter_init(&it2, &m, 0) || bl_decode_u32(&it2, &v))
			_exit(10);
		it = it2;
		if (bl_iter_advance(&it, 1) || bl_iter_seek(&it, 0))
			_exit(11);
	}
	bl_list_clear(&l);
	bl_list_clear(&m);
	/* thread-local raws used in their own thread pass too */
	bl_raw_set_thread_local(true);
	for (int i = 0; i < 1000; i++)
		if (bl_list_append(&l, "abcdefgh", 1 + i % 8))
			_exit(12);
	if (bl_list_substr_of(&m, &l, 3, 100))
		_exit(13);
	bl_list_clear(&l);
	bl_list_clear(&m);
	bl_raw_set_thread_local(false);
	{
		/* a shared raw made here may be dropped in another thread */
		pthread_t t;

		r = bl_raw_create(100);
		if (!r || pthread_create(&t, NULL, get_and_put, r))
			_exit(14);
		pthread_join(t, NULL);
		bl_raw_put(r);
	}
	bl_pool_cache_flush();
}

START_TEST(correct_use_passes_every_check)
{
	tu_child_clean(correct_use, "libbufferlist: ");
}
END_TEST

int main(void)
{
	const TTest *misuse_tests[] = {
		double_release_from_the_cache_aborts,
		double_release_without_the_cache_aborts,
		slice_copied_without_reference_aborts,
		reference_taken_after_release_aborts,
		thread_local_raw_taken_in_another_thread_aborts,
		thread_local_raw_dropped_in_another_thread_aborts,
		cursor_used_after_its_list_changed_aborts,
		cursor_used_after_its_list_was_cleared_aborts,
		stale_offset_index_aborts,
		correct_use_passes_every_check,
		NULL
	};
	const struct tu_loop misuse_loops[] = {
		{ cursor_inline_move_after_its_list_changed_aborts, 0, 7 },
		{ NULL, 0, 0 }
	};
	const struct tu_group groups[] = {
		TU_GROUP("misuse", misuse_tests, .loops = misuse_loops),
		TU_GROUP_END
	};

	return tu_run(tu_suite("debug", groups));
}

#else

int main(void)
{
	puts("SKIP: not a --enable-debug build");
	return 77;
}

#endif
