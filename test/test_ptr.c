/* SPDX-License-Identifier: MIT */
/*
 * test_ptr.c - the slice layer: alloc and reserve, appending into a raw's
 * unused tail (and only from the slice that ends at the frontier), slice
 * bounds, reference ownership of copy/slice/release/from_raw.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "testutil.h"

static void assert_ptr_is(const struct bl_ptr *p, const struct bl_raw *raw,
			  size_t off, size_t len)
{
	ck_assert_ptr_eq(p->raw, raw);
	ck_assert_uint_eq(p->off, off);
	ck_assert_uint_eq(p->len, len);
}

/* @p is the first @len bytes of a raw of @cap bytes that only it holds. */
static void assert_fresh(const struct bl_ptr *p, size_t len, size_t cap)
{
	ck_assert_ptr_nonnull(p->raw);
	assert_ptr_is(p, p->raw, 0, len);
	ck_assert_uint_eq(bl_raw_length(p->raw), cap);
	ck_assert_uint_eq(bl_raw_nref(p->raw), 1);
	ck_assert_ptr_eq(bl_ptr_data(p), bl_raw_data(p->raw));
	ck_assert_uint_eq(bl_ptr_unused_tail(p), cap - len);
}

/* A 10-byte slice "0123456789" over its own raw. */
static void make10(struct bl_ptr *p)
{
	ck_assert_int_eq(bl_ptr_alloc(p, 10), 0);
	memcpy(bl_ptr_data(p), "0123456789", 10);
}

/* ---- alloc / reserve --------------------------------------------------- */

START_TEST(test_alloc_covers_exactly_len)
{
	static const size_t lens[] = { 1, 7, 64, 4096, 100000 };

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		struct bl_ptr p = BL_PTR_INIT;

		ck_assert_int_eq(bl_ptr_alloc(&p, lens[i]), 0);
		/* the raw is all handed out: nothing to append into */
		assert_fresh(&p, lens[i], lens[i]);
		memset(bl_ptr_data(&p), 0x5a, lens[i]);
		bl_ptr_release(&p);
	}
}
END_TEST

START_TEST(test_alloc_zero_length)
{
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_int_eq(bl_ptr_alloc(&p, 0), 0);
	assert_fresh(&p, 0, 0);
	bl_ptr_release(&p);
	ck_assert_ptr_null(p.raw);
}
END_TEST

START_TEST(test_alloc_does_not_release_previous)
{
	struct bl_ptr a = BL_PTR_INIT, p = BL_PTR_INIT;
	struct bl_raw *old;

	make10(&a);
	old = a.raw;
	bl_ptr_copy(&p, &a);
	ck_assert_uint_eq(bl_raw_nref(old), 2);
	/* @p is output only: its old reference is the caller's business */
	ck_assert_int_eq(bl_ptr_alloc(&p, 4), 0);
	ck_assert_ptr_ne(p.raw, old);
	ck_assert_uint_eq(bl_raw_nref(old), 2);
	bl_ptr_release(&p);
	bl_raw_put(old);
	ck_assert_uint_eq(bl_raw_nref(old), 1);
	bl_ptr_release(&a);
}
END_TEST

START_TEST(test_reserve_makes_empty_growable_slice)
{
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_int_eq(bl_ptr_reserve(&p, 100), 0);
	assert_fresh(&p, 0, 100);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_alloc_and_reserve_fail_leave_ptr_unchanged)
{
	struct bl_ptr keep = BL_PTR_INIT, p = BL_PTR_INIT;
	struct tu_alloc_stats st;

	make10(&keep);
	ck_assert_int_eq(bl_ptr_slice(&p, &keep, 2, 3), 0);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_ptr_alloc(&p, 64), -ENOMEM);
	assert_ptr_is(&p, keep.raw, 2, 3);
	ck_assert_int_eq(bl_ptr_reserve(&p, 64), -ENOMEM);
	assert_ptr_is(&p, keep.raw, 2, 3);
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 2);
	tu_alloc_stats(&st);
	ck_assert_uint_ge(st.failed, 2);
	ck_assert_int_eq(st.live_bytes, 0);
	tu_alloc_uninstall();
	bl_ptr_release(&p);
	bl_ptr_release(&keep);
}
END_TEST

START_TEST(test_alloc_aligned_starts_on_the_boundary)
{
	static const size_t aligns[] = { 1, 8, 64, 512, 4096, 65536 };
	static const size_t lens[] = { 0, 1, 4096, 17 * 1024 };

	for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			struct bl_ptr p = BL_PTR_INIT;

			ck_assert_int_eq(bl_ptr_alloc_aligned(&p, lens[i],
							      aligns[a]), 0);
			ck_assert_ptr_nonnull(p.raw);
			ck_assert_uint_eq(p.off, 0);
			ck_assert_uint_eq(p.len, lens[i]);
			ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
			ck_assert_uint_eq((uintptr_t)bl_ptr_data(&p) %
					  aligns[a], 0);
			memset(bl_ptr_data(&p), 0x5a, lens[i]);
			bl_ptr_release(&p);
		}
}
END_TEST

START_TEST(test_alloc_aligned_refuses_non_power_of_two)
{
	static const size_t bad[] = { 0, 3, 48, 4097, SIZE_MAX };
	struct bl_ptr keep = BL_PTR_INIT, p = BL_PTR_INIT;

	make10(&keep);
	ck_assert_int_eq(bl_ptr_slice(&p, &keep, 1, 4), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(bl_ptr_alloc_aligned(&p, 64, bad[i]), -EINVAL);
		assert_ptr_is(&p, keep.raw, 1, 4);
	}
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 2);
	bl_ptr_release(&p);
	bl_ptr_release(&keep);
}
END_TEST

START_TEST(test_alloc_aligned_enomem_leaves_ptr_unchanged)
{
	struct bl_ptr keep = BL_PTR_INIT, p = BL_PTR_INIT;
	struct tu_alloc_stats st;

	make10(&keep);
	ck_assert_int_eq(bl_ptr_slice(&p, &keep, 2, 3), 0);
	/* a page-aligned raw is two allocations: fail either */
	for (uint64_t n = 1; n <= 2; n++) {
		tu_alloc_install(n, 0);
		ck_assert_int_eq(bl_ptr_alloc_aligned(&p, 8192, 4096), -ENOMEM);
		assert_ptr_is(&p, keep.raw, 2, 3);
		tu_alloc_stats(&st);
		ck_assert_uint_eq(st.failed, 1);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_alloc_uninstall();
	}
	/* more than any allocator can give */
	ck_assert_int_eq(bl_ptr_alloc_aligned(&p, SIZE_MAX - 4096, 4096),
			 -ENOMEM);
	assert_ptr_is(&p, keep.raw, 2, 3);
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 2);
	bl_ptr_release(&p);
	bl_ptr_release(&keep);
}
END_TEST

/* ---- append / unused tail ---------------------------------------------- */

START_TEST(test_append_grows_into_tail_and_counts_copy)
{
	struct bl_ptr p = BL_PTR_INIT;
	struct bl_stats s0, s1;

	ck_assert_int_eq(bl_ptr_reserve(&p, 32), 0);
	s0 = stats_now();
	ck_assert_int_eq(bl_ptr_append(&p, "hello", 5), 0);
	ck_assert_int_eq(bl_ptr_append(&p, " world", 6), 0);
	s1 = stats_now();
	ck_assert_uint_eq(p.len, 11);
	ck_assert_mem_eq(bl_ptr_data(&p), "hello world", 11);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 21);
	ck_assert_uint_eq(s1.copied_bytes - s0.copied_bytes, 11);
	ck_assert_uint_eq(s1.copy_ops - s0.copy_ops, 2);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_append_enospc_when_full)
{
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_int_eq(bl_ptr_reserve(&p, 8), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "abcde", 5), 0);
	/* more than the 3 bytes left: refused, nothing changes */
	ck_assert_int_eq(bl_ptr_append(&p, "wxyz", 4), -ENOSPC);
	ck_assert_uint_eq(p.len, 5);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 3);
	ck_assert_int_eq(bl_ptr_append(&p, "fgh", 3), 0);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "i", 1), -ENOSPC);
	ck_assert_uint_eq(p.len, 8);
	ck_assert_mem_eq(bl_ptr_data(&p), "abcdefgh", 8);
	/* appending nothing always fits */
	ck_assert_int_eq(bl_ptr_append(&p, "", 0), 0);
	ck_assert_uint_eq(p.len, 8);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_append_only_from_the_frontier)
{
	struct bl_ptr p = BL_PTR_INIT, q = BL_PTR_INIT;

	ck_assert_int_eq(bl_ptr_reserve(&p, 16), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "abc", 3), 0);
	bl_ptr_copy(&q, &p);
	ck_assert_uint_eq(bl_ptr_unused_tail(&q), 13);
	/* q grows past p: p no longer ends at the frontier */
	ck_assert_int_eq(bl_ptr_append(&q, "de", 2), 0);
	ck_assert_uint_eq(q.len, 5);
	ck_assert_uint_eq(bl_ptr_unused_tail(&q), 11);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "X", 1), -ENOSPC);
	ck_assert_uint_eq(p.len, 3);
	/* q's bytes were not overwritten by p */
	ck_assert_mem_eq(bl_ptr_data(&q), "abcde", 5);
	bl_ptr_release(&p);
	bl_ptr_release(&q);
}
END_TEST

START_TEST(test_unused_tail_zero_for_inner_slice)
{
	struct bl_ptr p = BL_PTR_INIT, head = BL_PTR_INIT, tail = BL_PTR_INIT;

	ck_assert_int_eq(bl_ptr_reserve(&p, 16), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "abc", 3), 0);
	ck_assert_int_eq(bl_ptr_slice(&head, &p, 0, 2), 0);
	ck_assert_int_eq(bl_ptr_slice(&tail, &p, 1, 2), 0);
	/* head stops short of the frontier, tail ends on it */
	ck_assert_uint_eq(bl_ptr_unused_tail(&head), 0);
	ck_assert_int_eq(bl_ptr_append(&head, "Z", 1), -ENOSPC);
	ck_assert_uint_eq(bl_ptr_unused_tail(&tail), 13);
	ck_assert_int_eq(bl_ptr_append(&tail, "d", 1), 0);
	ck_assert_mem_eq(bl_ptr_data(&tail), "bcd", 3);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 0);
	ck_assert_mem_eq(bl_ptr_data(&p), "abc", 3);
	bl_ptr_release(&p);
	bl_ptr_release(&head);
	bl_ptr_release(&tail);
}
END_TEST

/*
 * A list's append buffer has one writer, the list, which moves its
 * frontier without atomics: a slice handed out of it must not grow into
 * it, or the slice's bytes and the list's next append would be the same
 * bytes (from two threads, a race no check could close).
 */
START_TEST(test_slice_of_list_append_buffer_does_not_grow)
{
	struct bl_list l;
	struct bl_ptr p = BL_PTR_INIT;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "abc", 3), 0);
	ck_assert_int_eq(bl_list_get_ptr(&l, 0, &p), 0);
	ck_assert_uint_eq(p.len, 3);
	ck_assert_uint_gt(bl__list_abuf_room(&l), 0);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "XYZ", 3), -ENOSPC);
	ck_assert_uint_eq(p.len, 3);
	ck_assert_int_eq(bl_list_append(&l, "def", 3), 0);
	tu_assert_list_eq(&l, "abcdef", 6);
	ck_assert_mem_eq(bl_ptr_data(&p), "abc", 3);
	bl_ptr_release(&p);
	bl_list_clear(&l);
}
END_TEST

/* Two slices ending at the frontier, two references: the first append
 * moves the frontier, the other slice no longer ends there. */
START_TEST(test_append_shared_frontier_one_winner)
{
	struct bl_ptr p = BL_PTR_INIT, q = BL_PTR_INIT;

	ck_assert_int_eq(bl_ptr_reserve(&p, 16), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "ab", 2), 0);	/* one owner */
	bl_ptr_copy(&q, &p);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	ck_assert_int_eq(bl_ptr_append(&q, "cd", 2), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "XY", 2), -ENOSPC);
	ck_assert_uint_eq(p.len, 2);
	ck_assert_uint_eq(bl_ptr_unused_tail(&q), 12);
	ck_assert_int_eq(bl_ptr_append(&q, "ef", 2), 0);
	ck_assert_mem_eq(bl_ptr_data(&q), "abcdef", 6);
	/* back to one reference: q grows alone */
	bl_ptr_release(&p);
	ck_assert_int_eq(bl_ptr_append(&q, "gh", 2), 0);
	ck_assert_mem_eq(bl_ptr_data(&q), "abcdefgh", 8);
	ck_assert_uint_eq(bl_ptr_unused_tail(&q), 8);
	bl_ptr_release(&q);
}
END_TEST

/* NULL source with a length: -EINVAL, the frontier does not move. */
START_TEST(test_append_null_source_is_einval)
{
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_int_eq(bl_ptr_reserve(&p, 16), 0);
	ck_assert_int_eq(bl_ptr_append(&p, NULL, 4), -EINVAL);
	ck_assert_uint_eq(p.len, 0);
	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 16);
	ck_assert_int_eq(bl_ptr_append(&p, NULL, 0), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "ok", 2), 0);
	ck_assert_mem_eq(bl_ptr_data(&p), "ok", 2);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_unused_tail_of_empty_ptr)
{
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_uint_eq(bl_ptr_unused_tail(&p), 0);
	ck_assert_int_eq(bl_ptr_append(&p, "a", 1), -ENOSPC);
	assert_ptr_is(&p, NULL, 0, 0);
}
END_TEST

START_TEST(test_append_to_static_is_erofs)
{
	static const char text[] = "read only";
	struct bl_raw *r = bl_raw_create_static(text, sizeof(text));
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	ck_assert_int_eq(bl_ptr_append(&p, "x", 1), -EROFS);
	assert_ptr_is(&p, r, 0, sizeof(text));
	ck_assert_str_eq(text, "read only");
	bl_ptr_release(&p);
}
END_TEST

/* ---- slice ------------------------------------------------------------- */

START_TEST(test_slice_shares_a_reference)
{
	struct bl_ptr p = BL_PTR_INIT, s = BL_PTR_INIT, all = BL_PTR_INIT;
	struct bl_stats s0, s1;

	make10(&p);
	s0 = stats_now();
	ck_assert_int_eq(bl_ptr_slice(&s, &p, 3, 4), 0);
	s1 = stats_now();
	assert_ptr_is(&s, p.raw, 3, 4);
	ck_assert_ptr_eq(bl_ptr_data(&s), bl_ptr_data(&p) + 3);
	ck_assert_mem_eq(bl_ptr_data(&s), "3456", 4);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	ck_assert_uint_eq(s1.copied_bytes, s0.copied_bytes);
	ck_assert_int_eq(bl_ptr_slice(&all, &p, 0, 10), 0);
	assert_ptr_is(&all, p.raw, 0, 10);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 3);
	bl_ptr_release(&s);
	bl_ptr_release(&all);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_slice_is_relative_to_source_slice)
{
	struct bl_ptr p = BL_PTR_INIT, mid = BL_PTR_INIT, s = BL_PTR_INIT;

	make10(&p);
	ck_assert_int_eq(bl_ptr_slice(&mid, &p, 2, 6), 0);	/* "234567" */
	ck_assert_int_eq(bl_ptr_slice(&s, &mid, 1, 3), 0);
	assert_ptr_is(&s, p.raw, 3, 3);
	ck_assert_mem_eq(bl_ptr_data(&s), "345", 3);
	bl_ptr_release(&s);
	/* bounds are the source slice's, not the raw's */
	ck_assert_int_eq(bl_ptr_slice(&s, &mid, 0, 7), -ERANGE);
	ck_assert_int_eq(bl_ptr_slice(&s, &mid, 7, 0), -ERANGE);
	ck_assert_int_eq(bl_ptr_slice(&s, &mid, 6, 0), 0);
	assert_ptr_is(&s, p.raw, 8, 0);
	bl_ptr_release(&s);
	bl_ptr_release(&mid);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_slice_out_of_range_leaves_dst)
{
	static const struct { size_t off, len; } bad[] = {
		{ 11, 0 }, { 5, 6 }, { 0, 11 }, { 10, 1 },
		{ 5, SIZE_MAX }, { 1, SIZE_MAX }, { SIZE_MAX, 1 },
		{ SIZE_MAX, 0 }, { SIZE_MAX - 3, 5 },
	};
	struct bl_ptr p = BL_PTR_INIT, other = BL_PTR_INIT;

	make10(&p);
	ck_assert_int_eq(bl_ptr_alloc(&other, 3), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct bl_ptr d = other;

		ck_assert_msg(bl_ptr_slice(&d, &p, bad[i].off, bad[i].len) ==
			      -ERANGE, "slice(%zu, %zu) accepted",
			      bad[i].off, bad[i].len);
		assert_ptr_is(&d, other.raw, 0, 3);
		ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
		ck_assert_uint_eq(bl_raw_nref(other.raw), 1);
	}
	bl_ptr_release(&other);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_empty_slice_at_end_holds_reference)
{
	struct bl_ptr p = BL_PTR_INIT, e = BL_PTR_INIT;
	struct bl_raw *r;
	struct bl_stats s0, s1;

	make10(&p);
	r = p.raw;
	ck_assert_int_eq(bl_ptr_slice(&e, &p, 10, 0), 0);
	assert_ptr_is(&e, r, 10, 0);
	ck_assert_uint_eq(bl_raw_nref(r), 2);
	s0 = stats_now();
	bl_ptr_release(&p);
	/* the empty slice keeps the raw alive */
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed, s0.raws_freed);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	bl_ptr_release(&e);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 1);
}
END_TEST

START_TEST(test_slice_in_place_reuses_reference)
{
	struct bl_ptr p = BL_PTR_INIT, keep = BL_PTR_INIT;

	make10(&p);
	bl_ptr_copy(&keep, &p);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	ck_assert_int_eq(bl_ptr_slice(&p, &p, 2, 5), 0);
	assert_ptr_is(&p, keep.raw, 2, 5);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	ck_assert_int_eq(bl_ptr_slice(&p, &p, 1, 3), 0);
	assert_ptr_is(&p, keep.raw, 3, 3);
	ck_assert_mem_eq(bl_ptr_data(&p), "345", 3);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	/* failure in place leaves it alone too */
	ck_assert_int_eq(bl_ptr_slice(&p, &p, 2, 2), -ERANGE);
	assert_ptr_is(&p, keep.raw, 3, 3);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	bl_ptr_release(&p);
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 1);
	bl_ptr_release(&keep);
}
END_TEST

START_TEST(test_slice_of_empty_ptr)
{
	struct bl_ptr e = BL_PTR_INIT, d = BL_PTR_INIT, other = BL_PTR_INIT;

	ck_assert_int_eq(bl_ptr_slice(&d, &e, 0, 0), 0);
	assert_ptr_is(&d, NULL, 0, 0);
	ck_assert_int_eq(bl_ptr_alloc(&other, 2), 0);
	d = other;
	ck_assert_int_eq(bl_ptr_slice(&d, &e, 0, 1), -ERANGE);
	assert_ptr_is(&d, other.raw, 0, 2);
	ck_assert_int_eq(bl_ptr_slice(&d, &e, 1, 0), -ERANGE);
	assert_ptr_is(&d, other.raw, 0, 2);
	bl_ptr_release(&other);
}
END_TEST

/* ---- copy / release / from_raw / data ---------------------------------- */

START_TEST(test_copy_takes_a_reference)
{
	struct bl_ptr p = BL_PTR_INIT, c = BL_PTR_INIT, e = BL_PTR_INIT;

	make10(&p);
	ck_assert_int_eq(bl_ptr_slice(&p, &p, 4, 4), 0);
	bl_ptr_copy(&c, &p);
	assert_ptr_is(&c, p.raw, 4, 4);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 2);
	bl_ptr_release(&c);
	ck_assert_uint_eq(bl_raw_nref(p.raw), 1);
	/* copying the empty slice gives the empty slice */
	bl_ptr_copy(&c, &e);
	assert_ptr_is(&c, NULL, 0, 0);
	bl_ptr_release(&p);
}
END_TEST

START_TEST(test_release_twice_is_harmless)
{
	struct bl_ptr p = BL_PTR_INIT, keep = BL_PTR_INIT;

	make10(&p);
	bl_ptr_copy(&keep, &p);
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 2);
	bl_ptr_release(&p);
	assert_ptr_is(&p, NULL, 0, 0);
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 1);
	bl_ptr_release(&p);
	assert_ptr_is(&p, NULL, 0, 0);
	ck_assert_uint_eq(bl_raw_nref(keep.raw), 1);
	ck_assert_mem_eq(bl_ptr_data(&keep), "0123456789", 10);
	bl_ptr_release(&keep);
}
END_TEST

START_TEST(test_from_raw_takes_callers_reference)
{
	struct bl_raw *r = bl_raw_create(20);
	struct bl_ptr p = BL_PTR_INIT;
	struct bl_stats s0, s1;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&p, r);
	assert_ptr_is(&p, r, 0, 20);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	s0 = stats_now();
	bl_ptr_release(&p);
	s1 = stats_now();
	ck_assert_uint_eq(s1.raws_freed - s0.raws_freed, 1);
}
END_TEST

START_TEST(test_data_of_empty_and_offset_slice)
{
	struct bl_ptr p = BL_PTR_INIT, s = BL_PTR_INIT;

	ck_assert_ptr_null(bl_ptr_data(&p));
	make10(&p);
	ck_assert_ptr_eq(bl_ptr_data(&p), bl_raw_data(p.raw));
	ck_assert_int_eq(bl_ptr_slice(&s, &p, 7, 3), 0);
	ck_assert_ptr_eq(bl_ptr_data(&s), bl_raw_data(p.raw) + 7);
	bl_ptr_release(&s);
	bl_ptr_release(&p);
}
END_TEST

int main(void)
{
	const TTest *alloc_tests[] = {
		test_alloc_covers_exactly_len,
		test_alloc_zero_length,
		test_alloc_does_not_release_previous,
		test_reserve_makes_empty_growable_slice,
		test_alloc_and_reserve_fail_leave_ptr_unchanged,
		test_alloc_aligned_starts_on_the_boundary,
		test_alloc_aligned_refuses_non_power_of_two,
		test_alloc_aligned_enomem_leaves_ptr_unchanged,
		NULL
	};
	const TTest *append_tests[] = {
		test_append_grows_into_tail_and_counts_copy,
		test_append_enospc_when_full,
		test_append_only_from_the_frontier,
		test_unused_tail_zero_for_inner_slice,
		test_unused_tail_of_empty_ptr,
		test_append_to_static_is_erofs,
		test_slice_of_list_append_buffer_does_not_grow,
		test_append_shared_frontier_one_winner,
		test_append_null_source_is_einval,
		NULL
	};
	const TTest *slice_tests[] = {
		test_slice_shares_a_reference,
		test_slice_is_relative_to_source_slice,
		test_slice_out_of_range_leaves_dst,
		test_empty_slice_at_end_holds_reference,
		test_slice_in_place_reuses_reference,
		test_slice_of_empty_ptr,
		NULL
	};
	const TTest *ownership_tests[] = {
		test_copy_takes_a_reference,
		test_release_twice_is_harmless,
		test_from_raw_takes_callers_reference,
		test_data_of_empty_and_offset_slice,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("alloc", alloc_tests),
		TU_GROUP("append", append_tests),
		TU_GROUP("slice", slice_tests),
		TU_GROUP("ownership", ownership_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("ptr", groups));
}
