/* SPDX-License-Identifier: MIT */
/*
 * test_list_inputs.c - the list layer: inputs the list does not check for
 * the caller (its own bytes as a source, hand-built slices, counts near
 * their limits, NULL to destructors) and failing allocations, which leave
 * every list as it was.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "testutil.h"

/* ---- unchecked inputs ------------------------------------------------- */

/* copy_in from the list's own bytes, one segment: as memmove would. */
START_TEST(test_copy_in_from_own_bytes_in_one_segment)
{
	enum { N = 4096 };
	unsigned char *want = malloc(N);
	struct bl_list l;
	char *p;

	ck_assert_ptr_nonnull(want);
	for (int i = 0; i < N; i++)
		want[i] = (unsigned char)(i * 7 + i / 256);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, want, N), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	p = bl_list_c_str(&l);	/* the segment's own memory */
	ck_assert_ptr_nonnull(p);
	/* shift right by one, then left by three, over the source itself */
	ck_assert_int_eq(bl_list_copy_in(&l, 1, N - 1, p), 0);
	memmove(want + 1, want, N - 1);
	tu_assert_list_eq(&l, want, N);
	ck_assert_int_eq(bl_list_copy_in(&l, 0, N - 3, p + 3), 0);
	memmove(want, want + 3, N - 3);
	tu_assert_list_eq(&l, want, N);
	bl_list_clear(&l);
	free(want);
}
END_TEST

/* "FGHIJABCDE": the two halves of one raw "ABCDEFGHIJ", swapped. */
struct swapped {
	struct bl_raw *r;
	struct bl_ptr whole, hi, lo;
	struct bl_list l;
};

static void swapped_make(struct swapped *s)
{
	s->r = bl_raw_create(10);
	ck_assert_ptr_nonnull(s->r);
	memcpy(bl_raw_data(s->r), "ABCDEFGHIJ", 10);
	bl_ptr_from_raw(&s->whole, s->r);
	ck_assert_int_eq(bl_ptr_slice(&s->hi, &s->whole, 5, 5), 0);
	ck_assert_int_eq(bl_ptr_slice(&s->lo, &s->whole, 0, 5), 0);
	bl_list_init(&s->l);
	ck_assert_int_eq(bl_list_append_ptr(&s->l, &s->hi), 0);
	ck_assert_int_eq(bl_list_append_ptr(&s->l, &s->lo), 0);
	tu_assert_list_eq(&s->l, "FGHIJABCDE", 10);
}

static void swapped_free(struct swapped *s)
{
	bl_list_clear(&s->l);
	bl_ptr_release(&s->hi);
	bl_ptr_release(&s->lo);
	bl_ptr_release(&s->whole);
}

/*
 * copy_in from the list's own bytes across segments laid out in another
 * order than their raw's: the result is as if the source were copied out
 * first, not what a run written early leaves for a later one to read.
 */
START_TEST(test_copy_in_from_own_bytes_across_segments)
{
	struct swapped s;

	swapped_make(&s);
	/* the source is the raw itself, "ABCDEFGHIJ" at the call */
	ck_assert_int_eq(bl_list_copy_in(&s.l, 0, 10, bl_raw_data(s.r)), 0);
	tu_assert_list_eq(&s.l, "ABCDEFGHIJ", 10);
	ck_assert_mem_eq(bl_raw_data(s.r), "FGHIJABCDE", 10);
	swapped_free(&s);
}
END_TEST

/* The overlapping case that needs a copy of the source fails whole. */
START_TEST(test_copy_in_from_own_bytes_without_memory_changes_nothing)
{
	struct swapped s;

	swapped_make(&s);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_copy_in(&s.l, 0, 10, bl_raw_data(s.r)),
			 -ENOMEM);
	tu_alloc_uninstall();
	tu_assert_list_eq(&s.l, "FGHIJABCDE", 10);
	swapped_free(&s);
}
END_TEST

/*
 * A hand-built slice reaching past its raw's bytes would let the list
 * read and write past the block: refused, whatever the entry point.
 */
START_TEST(test_hand_built_slice_past_its_raw_is_refused)
{
	struct bl_raw *r = bl_raw_create(16);
	struct bl_ptr bad = { r, 10, 10 }, wrap = { r, SIZE_MAX, 2 };
	struct bl_ptr noraw = { NULL, 0, 4 }, grown = BL_PTR_INIT, ok, d;
	struct bl_list l;

	ck_assert_ptr_nonnull(r);
	memset(bl_raw_data(r), 'r', 16);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &bad), -ERANGE);
	ck_assert_int_eq(bl_list_append_ptr(&l, &wrap), -ERANGE);
	ck_assert_int_eq(bl_list_append_ptr(&l, &noraw), -EINVAL);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &bad), -ERANGE);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &wrap), -ERANGE);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &noraw), -EINVAL);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &bad), -ERANGE);
	ck_assert_ptr_eq(bad.raw, r);	/* still the caller's */
	ck_assert_int_eq(bl_ptr_slice(&d, &bad, 0, 1), -ERANGE);
	ck_assert_int_eq(bl_ptr_slice(&d, &noraw, 0, 1), -EINVAL);
	/* past the frontier of a reserved raw, inside its capacity */
	ck_assert_int_eq(bl_ptr_reserve(&grown, 64), 0);
	ok = grown;
	ok.len = 8;
	ck_assert_int_eq(bl_list_append_ptr(&l, &ok), -ERANGE);
	tu_assert_list_eq(&l, "x", 1);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	/* exactly to the end is fine */
	ok.raw = r;
	ok.off = 10;
	ok.len = 6;
	ck_assert_int_eq(bl_list_append_ptr(&l, &ok), 0);
	tu_assert_list_eq(&l, "xrrrrrr", 7);
	bl_list_clear(&l);
	bl_ptr_release(&grown);
	bl_raw_put(r);
}
END_TEST

/* c_str hands out writable bytes: a static segment is copied first. */
START_TEST(test_c_str_of_static_segment_is_a_writable_copy)
{
	static const char text[] = "read-only text";
	struct bl_raw *r = bl_raw_create_static(text, sizeof(text) - 1);
	struct bl_list l;
	struct bl_ptr p;
	char *s;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	s = bl_list_c_str(&l);
	ck_assert_ptr_nonnull(s);
	ck_assert_ptr_ne(s, text);
	ck_assert_mem_eq(s, text, sizeof(text) - 1);
	s[0] = 'R';
	ck_assert_str_eq(text, "read-only text");
	tu_assert_list_eq(&l, "Read-only text", sizeof(text) - 1);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	/* writable now: a second call hands out the same bytes */
	ck_assert_ptr_eq(bl_list_c_str(&l), s);
	bl_list_clear(&l);
}
END_TEST

/*
 * The segment count is unsigned: an operation that would wrap it fails
 * with -ENOMEM and changes nothing.  No test can hold 4 G segments, so the
 * list is told it has almost that many (its private count).
 */
START_TEST(test_segment_count_never_wraps)
{
	struct bl_raw *r = bl_raw_create(64);
	struct bl_ptr whole, a, b;
	struct bl_list l, src;
	unsigned real;

	ck_assert_ptr_nonnull(r);
	memset(bl_raw_data(r), 'q', 64);
	bl_ptr_from_raw(&whole, r);
	ck_assert_int_eq(bl_ptr_slice(&a, &whole, 0, 8), 0);
	ck_assert_int_eq(bl_ptr_slice(&b, &whole, 32, 8), 0);
	bl_list_init(&l);
	bl_list_init(&src);
	ck_assert_int_eq(bl_list_append_ptr(&l, &a), 0);
	ck_assert_int_eq(bl_list_append_ptr(&src, &a), 0);
	ck_assert_int_eq(bl_list_append_ptr(&src, &b), 0);
	real = l._nseg;
	l._nseg = UINT_MAX;
	ck_assert_int_eq(bl_list_append_ptr(&l, &b), -ENOMEM);
	ck_assert_int_eq(bl_list_prepend_ptr(&l, &b), -ENOMEM);
	ck_assert_int_eq(bl_list_append_list(&l, &src), -ENOMEM);
	ck_assert_int_eq(bl_list_splice(&l, 2, 1, NULL), -ENOMEM);
	ck_assert_uint_eq(bl_list_length(&l), 8);
	l._nseg = UINT_MAX - 1;
	ck_assert_int_eq(bl_list_claim_append(&l, &src), -ENOMEM);
	ck_assert_int_eq(bl_list_claim_prepend(&l, &src), -ENOMEM);
	ck_assert_uint_eq(bl_list_length(&src), 16);
	ck_assert_uint_eq(bl_list_length(&l), 8);
	l._nseg = real;
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_int_eq(bl__list_validate(&src), 0);
	/* and with room, the same calls work */
	ck_assert_int_eq(bl_list_claim_append(&l, &src), 0);
	ck_assert_uint_eq(bl_list_length(&l), 24);
	bl_list_clear(&l);
	bl_list_clear(&src);
	bl_ptr_release(&a);
	bl_ptr_release(&b);
	bl_ptr_release(&whole);
}
END_TEST

/* Destructors take NULL, as free() does: one rule for the whole API. */
START_TEST(test_every_destructor_takes_null)
{
	bl_raw_put(NULL);
	bl_ptr_release(NULL);
	bl_list_clear(NULL);
	bl_lz4_decoder_free(NULL);
	bl_msgr_frame_release(NULL);
	bl_msgr_conn_close(NULL, 0, NULL);
	bl_msgr_server_destroy(NULL);
	bl_uring_destroy(NULL);
	bl_uring_bufring_destroy(NULL);
	bl_uring_regpool_destroy(NULL);
}
END_TEST

/* ---- failing allocations ------------------------------------------------- */

/*
 * Runs @op with the Nth allocation failing, N = 1, 2, ... until it
 * succeeds; every failure must be -ENOMEM and leave @l (and @m) as they
 * were.  Returns the number of failures seen.
 */
typedef int (*list_op)(struct bl_list *l, struct bl_list *m);

static int fail_each_allocation(void (*build)(struct bl_list *,
					      struct bl_list *),
				list_op op)
{
	int failures = 0;

	for (uint64_t n = 1; n < 200; n++) {
		struct bl_list l, m;
		struct tu_snap sl, sm;
		int ret;

		tu_alloc_install(0, 0);
		bl_list_init(&l);
		bl_list_init(&m);
		build(&l, &m);
		tu_snap_take(&sl, &l);
		tu_snap_take(&sm, &m);
		tu_alloc_fail_at(n, 0);
		ret = op(&l, &m);
		tu_alloc_fail_at(0, 0);
		if (ret >= 0) {
			struct tu_alloc_stats st;

			bl_list_clear(&l);
			bl_list_clear(&m);
			tu_snap_free(&sl);
			tu_snap_free(&sm);
			tu_alloc_stats(&st);
			ck_assert_int_eq(st.live_bytes, 0);
			break;
		}
		failures++;
		ck_assert_int_eq(ret, -ENOMEM);
		tu_snap_check(&sl, &l);
		tu_snap_check(&sm, &m);
		tu_snap_free(&sl);
		tu_snap_free(&sm);
		bl_list_clear(&l);
		bl_list_clear(&m);
		{
			struct tu_alloc_stats st;

			tu_alloc_stats(&st);
			ck_assert_int_eq(st.live_bytes, 0);
		}
	}
	tu_alloc_uninstall();
	return failures;
}

/* l: two segments (inline chunk full); m: one segment. */
static void build_two_one(struct bl_list *l, struct bl_list *m)
{
	tu_append_fixed(l, "abcdef", 6, 3);
	tu_append_fixed(m, "XYZ", 3, 3);
}

static void build_static(struct bl_list *l, struct bl_list *m)
{
	static const char text[] = "static!";

	tu_append_fixed(l, "ab", 2, 2);
	tu_add_static(l, text, 7);
	(void)m;
}

static int op_claim_append(struct bl_list *l, struct bl_list *m)
{
	return bl_list_claim_append(l, m);
}

static int op_claim_prepend(struct bl_list *l, struct bl_list *m)
{
	return bl_list_claim_prepend(l, m);
}

static int op_append_list(struct bl_list *l, struct bl_list *m)
{
	return bl_list_append_list(l, m);
}

static int op_splice_cut(struct bl_list *l, struct bl_list *m)
{
	return bl_list_splice(l, 1, 1, m);
}

static int op_append_big(struct bl_list *l, struct bl_list *m)
{
	static char big[10000];

	return bl_list_append(l, big, sizeof(big));
}

static int op_rebuild(struct bl_list *l, struct bl_list *m)
{
	return bl_list_rebuild(l);
}

static int op_c_str(struct bl_list *l, struct bl_list *m)
{
	return bl_list_c_str(l) ? 0 : -ENOMEM;
}

static int op_copy_in_static(struct bl_list *l, struct bl_list *m)
{
	return bl_list_copy_in(l, 1, 3, "123");
}

static int op_rebuild_aligned(struct bl_list *l, struct bl_list *m)
{
	return bl_list_rebuild_aligned(l, 4096);
}

/*
 * Each of these needs an allocation (a chunk past the full inline one, a
 * raw for the copy), so each fails at least once before it succeeds.
 */
START_TEST(test_failed_allocation_leaves_lists_unchanged)
{
	static const struct {
		const char *name;
		void (*build)(struct bl_list *, struct bl_list *);
		list_op op;
	} ops[] = {
		{ "claim_append", build_two_one, op_claim_append },
		{ "claim_prepend", build_two_one, op_claim_prepend },
		{ "append_list", build_two_one, op_append_list },
		{ "splice (cut)", build_two_one, op_splice_cut },
		{ "append (large)", build_two_one, op_append_big },
		{ "rebuild", build_two_one, op_rebuild },
		{ "c_str", build_two_one, op_c_str },
		{ "copy_in (static)", build_static, op_copy_in_static },
		{ "rebuild_aligned", build_two_one, op_rebuild_aligned },
	};

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		ck_assert_msg(fail_each_allocation(ops[i].build,
						   ops[i].op) >= 1,
			      "%s never allocated", ops[i].name);
}
END_TEST

/* substr_of into a list that may need no allocation: atomic either way. */
START_TEST(test_failed_substr_leaves_dst_unchanged)
{
	struct bl_list l, d;
	int ret;

	for (uint64_t n = 1; n < 50; n++) {
		tu_alloc_install(0, 0);
		bl_list_init(&l);
		bl_list_init(&d);
		tu_append_fixed(&l, "abcdefghij", 10, 2);
		tu_append_fixed(&d, "old", 3, 1);
		tu_alloc_fail_at(n, 1);
		ret = bl_list_substr_of(&d, &l, 1, 8);
		tu_alloc_fail_at(0, 0);
		if (ret == 0) {
			tu_assert_str(&d, "bcdefghi");
		} else {
			ck_assert_int_eq(ret, -ENOMEM);
			tu_assert_str(&d, "old");
			ck_assert_uint_eq(bl_list_num_buffers(&d), 3);
		}
		tu_assert_str(&l, "abcdefghij");
		bl_list_clear(&l);
		bl_list_clear(&d);
		if (ret == 0)
			break;
	}
	tu_alloc_uninstall();
}
END_TEST

int main(void)
{
	const TTest *inputs_tests[] = {
		test_copy_in_from_own_bytes_in_one_segment,
		test_copy_in_from_own_bytes_across_segments,
		test_copy_in_from_own_bytes_without_memory_changes_nothing,
		test_hand_built_slice_past_its_raw_is_refused,
		test_c_str_of_static_segment_is_a_writable_copy,
		test_segment_count_never_wraps,
		test_every_destructor_takes_null,
		NULL
	};
	const TTest *failure_tests[] = {
		test_failed_allocation_leaves_lists_unchanged,
		test_failed_substr_leaves_dst_unchanged,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("inputs", inputs_tests),
		TU_GROUP("failure", failure_tests, .timeout = 60),
		TU_GROUP_END
	};

	return tu_run(tu_suite("list_inputs", groups));
}
