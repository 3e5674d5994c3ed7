/* SPDX-License-Identifier: MIT */
/*
 * test_list_rebuild.c - the list layer: the operations that lay a list out
 * anew or write into it: copy_out/copy_in/zero, rebuild (plain, aligned,
 * aligned with a cap), c_str, copy_shared, pad_to and compact.
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

/* ---- helpers ----------------------------------------------------------- */

/* Appends a segment of @len bytes at address offset @skew of a new raw. */
static struct bl_raw *add_skewed(struct bl_list *l, const void *data,
				 size_t len, size_t skew)
{
	struct bl_ptr p = BL_PTR_INIT, s = BL_PTR_INIT;
	struct bl_raw *r;

	ck_assert_int_eq(bl_ptr_alloc(&p, len + skew), 0);
	memcpy(bl_ptr_data(&p) + skew, data, len);
	ck_assert_int_eq(bl_ptr_slice(&s, &p, skew, len), 0);
	bl_ptr_release(&p);
	r = s.raw;
	ck_assert_int_eq(bl_list_append_ptr_move(l, &s), 0);
	return r;
}

/* Appends a segment over an aligned raw. */
static struct bl_raw *add_aligned(struct bl_list *l, const void *data,
				  size_t len, size_t align)
{
	struct bl_raw *r = bl_raw_create_aligned(len, align);
	struct bl_ptr p = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	memcpy(bl_raw_data(r), data, len);
	bl_ptr_from_raw(&p, r);
	ck_assert_int_eq(bl_list_append_ptr_move(l, &p), 0);
	return r;
}

/* Does every segment start on @mem_align, all but the last @size_align long? */
static bool is_aligned(const struct bl_list *l, size_t size_align,
		       size_t mem_align)
{
	unsigned n = bl_list_num_buffers(l);

	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p = tu_seg_of(l, i);

		if ((uintptr_t)bl_ptr_data(&p) % mem_align ||
		    (i + 1 < n && p.len % size_align))
			return false;
	}
	return true;
}

/* Every segment starts on @mem_align, all but the last are @size_align long. */
static void assert_aligned(const struct bl_list *l, size_t size_align,
			   size_t mem_align)
{
	unsigned n = bl_list_num_buffers(l);

	ck_assert_int_eq(bl__list_validate(l), 0);
	for (unsigned i = 0; i < n; i++) {
		struct bl_ptr p = tu_seg_of(l, i);

		ck_assert_msg((uintptr_t)bl_ptr_data(&p) % mem_align == 0,
			      "segment %u of %u at %p not %zu-aligned", i, n,
			      (void *)bl_ptr_data(&p), mem_align);
		if (i + 1 < n)
			ck_assert_msg(p.len % size_align == 0,
				      "segment %u of %u is %zu bytes", i, n,
				      p.len);
	}
}

/* ---- copy_out / copy_in / zero ------------------------------------------ */

START_TEST(test_copy_out_ranges)
{
	unsigned char data[200], out[210];
	struct bl_list l;
	uint64_t rng = 77;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	tu_append_segmented(&l, data, sizeof(data), 7, 1, &rng);
	for (size_t off = 0; off <= 200; off += 13) {
		for (size_t n = 0; off + n <= 200; n += 11) {
			memset(out, 0xEE, sizeof(out));
			ck_assert_int_eq(bl_list_copy_out(&l, off, n, out), 0);
			ck_assert(memcmp(out, data + off, n) == 0);
			ck_assert_uint_eq(out[n], 0xEE);
		}
	}
	ck_assert_int_eq(bl_list_copy_out(&l, 200, 0, out), 0);
	memset(out, 0xEE, sizeof(out));
	ck_assert_int_eq(bl_list_copy_out(&l, 201, 0, out), -ERANGE);
	ck_assert_int_eq(bl_list_copy_out(&l, 100, 101, out), -ERANGE);
	ck_assert_int_eq(bl_list_copy_out(&l, 1, SIZE_MAX, out), -ERANGE);
	ck_assert_int_eq(bl_list_copy_out(&l, SIZE_MAX, 2, out), -ERANGE);
	for (size_t i = 0; i < sizeof(out); i++)
		ck_assert_uint_eq(out[i], 0xEE);
	tu_assert_list_eq(&l, data, sizeof(data));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_copy_in_writes_across_segments_in_place)
{
	struct bl_list l;
	struct bl_raw *r[4];
	uint64_t c0;

	tu_make_abc(&l);
	for (unsigned i = 0; i < 4; i++)
		r[i] = tu_seg_of(&l, i).raw;
	c0 = copied_now();
	ck_assert_int_eq(bl_list_copy_in(&l, 2, 6, "123456"), 0);
	ck_assert_uint_eq(copied_now() - c0, 6);
	tu_assert_str(&l, "AB123456IJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_ptr_eq(tu_seg_of(&l, i).raw, r[i]);
	ck_assert_int_eq(bl_list_copy_in(&l, 9, 1, "z"), 0);
	ck_assert_int_eq(bl_list_copy_in(&l, 0, 1, "a"), 0);
	ck_assert_int_eq(bl_list_copy_in(&l, 10, 0, "?"), 0);
	tu_assert_str(&l, "aB123456Iz");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_copy_in_shared_raw_is_visible_elsewhere)
{
	struct bl_list l, other;

	tu_make_abc(&l);
	bl_list_init(&other);
	ck_assert_int_eq(bl_list_substr_of(&other, &l, 1, 8), 0);
	ck_assert_int_eq(bl_list_copy_in(&l, 3, 3, "xyz"), 0);
	tu_assert_str(&l, "ABCxyzGHIJ");
	/* written in place, as Ceph does: the sharer sees it */
	tu_assert_str(&other, "BCxyzGHI");
	bl_list_clear(&l);
	bl_list_clear(&other);
}
END_TEST

START_TEST(test_copy_in_static_segment_gets_private_copy)
{
	static const char text[] = "static text!";	/* 12 bytes */
	struct bl_list l, other;
	struct bl_raw *sr;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "<<", 2), 0);
	sr = tu_add_static(&l, text, 12);
	ck_assert_int_eq(bl_list_append(&l, ">>", 2), 0);
	bl_list_init(&other);
	ck_assert_int_eq(bl_list_append_list(&other, &l), 0);
	ck_assert_int_eq(bl_list_copy_in(&l, 1, 9, "[STATIC T"), 0);
	tu_assert_str(&l, "<[STATIC Text!>>");
	ck_assert_str_eq(text, "static text!");
	/* the other list shares the append buffer (written in place) but
	 * still reads the untouched static bytes */
	tu_assert_str(&other, "<[static text!>>");
	ck_assert(bl_raw_is_static(sr));
	for (unsigned i = 0; i < bl_list_num_buffers(&l); i++) {
		struct bl_ptr p = tu_seg_of(&l, i);

		/* no written byte lies on the static raw any more */
		if (p.raw == sr)
			ck_assert_msg(bl_ptr_data(&p) >= text + 8,
				      "segment %u still on the static raw", i);
	}
	bl_list_clear(&l);
	bl_list_clear(&other);
}
END_TEST

START_TEST(test_copy_in_out_of_range_changes_nothing)
{
	struct bl_list l;

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_copy_in(&l, 11, 0, "x"), -ERANGE);
	ck_assert_int_eq(bl_list_copy_in(&l, 8, 3, "xyz"), -ERANGE);
	ck_assert_int_eq(bl_list_copy_in(&l, 2, SIZE_MAX, "xyz"), -ERANGE);
	ck_assert_int_eq(bl_list_copy_in(&l, SIZE_MAX, 1, "x"), -ERANGE);
	tu_assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 4);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_zero_range)
{
	static const char text[] = "STATIC";
	struct bl_list l;

	tu_make_abc(&l);
	tu_add_static(&l, text, 6);
	ck_assert_int_eq(bl_list_zero(&l, 2, 3), 0);
	tu_assert_list_eq(&l, "AB\0\0\0FGHIJSTATIC", 16);
	ck_assert_int_eq(bl_list_zero(&l, 9, 3), 0);
	tu_assert_list_eq(&l, "AB\0\0\0FGHI\0\0\0ATIC", 16);
	ck_assert_str_eq(text, "STATIC");
	ck_assert_int_eq(bl_list_zero(&l, 16, 0), 0);
	ck_assert_int_eq(bl_list_zero(&l, 17, 0), -ERANGE);
	ck_assert_int_eq(bl_list_zero(&l, 10, 7), -ERANGE);
	ck_assert_int_eq(bl_list_zero(&l, 1, SIZE_MAX), -ERANGE);
	tu_assert_list_eq(&l, "AB\0\0\0FGHI\0\0\0ATIC", 16);
	bl_list_clear(&l);
}
END_TEST

/* ---- rebuild ----------------------------------------------------------- */

START_TEST(test_rebuild_makes_one_segment)
{
	struct bl_list l;
	struct bl_ptr held = BL_PTR_INIT, s;
	uint64_t c0;

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_get_ptr(&l, 1, &held), 0);
	ck_assert_uint_eq(bl_raw_nref(held.raw), 2);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	ck_assert_uint_eq(copied_now() - c0, 10);
	tu_assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	s = tu_seg_of(&l, 0);
	ck_assert_uint_eq((uintptr_t)bl_ptr_data(&s) % 64, 0);
	/* the old raws were released */
	ck_assert_uint_eq(bl_raw_nref(held.raw), 1);
	bl_ptr_release(&held);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_leaves_short_lists)
{
	struct bl_list l;
	struct bl_ptr s;
	uint64_t c0;

	bl_list_init(&l);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	tu_assert_str(&l, "");
	add_skewed(&l, "one", 3, 5);
	s = tu_seg_of(&l, 0);
	ck_assert_int_eq(bl_list_rebuild(&l), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_str(&l, "one");
	ck_assert_ptr_eq(tu_seg_of(&l, 0).raw, s.raw);
	ck_assert_uint_eq(tu_seg_of(&l, 0).off, s.off);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_aligned_keeps_aligned_list)
{
	static char page[3][8192];
	struct bl_list l;
	struct bl_raw *r[3];
	uint64_t c0;

	memset(page, 'p', sizeof(page));
	bl_list_init(&l);
	r[0] = add_aligned(&l, page[0], 4096, 4096);
	r[1] = add_aligned(&l, page[1], 8192, 4096);
	r[2] = add_aligned(&l, page[2], 100, 4096);	/* last may be short */
	c0 = copied_now();
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), 0);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 512), 0);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_ptr_eq(tu_seg_of(&l, i).raw, r[i]);
	assert_aligned(&l, 4096, 4096);
	bl_list_clear(&l);
}
END_TEST

/* Nothing to copy: the chain is left as it is, without an allocation. */
START_TEST(test_rebuild_aligned_of_aligned_list_allocates_nothing)
{
	static char page[5][4096];
	struct tu_alloc_stats st;
	struct bl_raw *r[5];
	struct bl_list l;

	bl_list_init(&l);
	for (unsigned i = 0; i < 5; i++)	/* past the inline slots */
		r[i] = add_aligned(&l, page[i], 4096, 4096);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), 0);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 512, 4096,
								 5), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs + st.failed, 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5);
	for (unsigned i = 0; i < 5; i++) {
		ck_assert_ptr_eq(tu_seg_of(&l, i).raw, r[i]);
		ck_assert_uint_eq(bl_raw_nref(r[i]), 1);
	}
	ck_assert_int_eq(bl__list_validate(&l), 0);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_aligned_copies_misaligned_runs)
{
	static unsigned char data[5000];
	struct bl_list l;
	uint64_t rng = 3;
	int want;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	for (int i = 0; i < 50; i++)
		add_skewed(&l, data + 100 * i, 100, 1);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 512), 1);
	assert_aligned(&l, 512, 512);
	tu_assert_list_eq(&l, data, sizeof(data));
	/* now aligned: nothing more to do */
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 512), 0);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 64), 0);
	want = is_aligned(&l, 4096, 4096) ? 0 : 1;
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), want);
	assert_aligned(&l, 4096, 4096);
	tu_assert_list_eq(&l, data, sizeof(data));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_aligned_keeps_aligned_segments)
{
	static unsigned char data[4 * 4096];
	struct bl_list l;
	struct bl_raw *a, *d;
	uint64_t rng = 11;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	a = add_aligned(&l, data, 4096, 4096);
	add_skewed(&l, data + 4096, 100, 1);
	add_skewed(&l, data + 4196, 3996, 3);
	d = add_aligned(&l, data + 8192, 8192, 4096);
	ck_assert_int_eq(bl_list_rebuild_aligned(&l, 4096), 1);
	assert_aligned(&l, 4096, 4096);
	tu_assert_list_eq(&l, data, sizeof(data));
	ck_assert_ptr_eq(tu_seg_of(&l, 0).raw, a);
	ck_assert_ptr_eq(tu_seg_of(&l, bl_list_num_buffers(&l) - 1).raw, d);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_rebuild_aligned_random_segments)
{
	uint64_t rng = tu_seed("test_rebuild_aligned_random_segments");

	for (int round = 0; round < 60; round++) {
		static unsigned char data[40000];
		size_t len = 0, align = (size_t)1 << (tu_rand(&rng) % 13);
		struct bl_list l;
		bool clean;
		int ret;

		bl_list_init(&l);
		while (len < 30000) {
			size_t n = 1 + tu_rand(&rng) % 3000;

			if (tu_rand(&rng) & 1)
				n = bl__align_up(n, 512);
			if (len + n > sizeof(data))
				break;
			tu_fill(data + len, n, &rng);
			if (tu_rand(&rng) % 3 == 0)
				add_skewed(&l, data + len, n,
					   1 + tu_rand(&rng) % 63);
			else
				add_aligned(&l, data + len, n, 4096);
			len += n;
		}
		clean = is_aligned(&l, align, align);
		ret = bl_list_rebuild_aligned(&l, align);
		ck_assert_int_eq(ret, clean ? 0 : 1);
		assert_aligned(&l, align, align);
		tu_assert_list_eq(&l, data, len);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_rebuild_aligned_rejects_bad_alignment)
{
	static const size_t bad[] = { 0, 3, 100, 4095, 6144 };
	struct bl_list l;

	bl_list_init(&l);
	add_skewed(&l, "abc", 3, 1);
	add_skewed(&l, "def", 3, 1);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(bl_list_rebuild_aligned(&l, bad[i]), -EINVAL);
		ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(
					 &l, bad[i], 512, 0), -EINVAL);
		ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(
					 &l, 512, bad[i], 0), -EINVAL);
		tu_assert_str(&l, "abcdef");
		ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	}
	bl_list_clear(&l);
}
END_TEST

/* Rebuilt aligned on 512 and capped at 1024 segments, @l still holds
 * @data; then cleared. */
static void rebuild_capped_to_1024(struct bl_list *l, const void *data,
				   size_t len)
{
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(l, 512, 512,
								 1024), 1);
	ck_assert_uint_le(bl_list_num_buffers(l), 1024);
	assert_aligned(l, 512, 512);
	tu_assert_list_eq(l, data, len);
	bl_list_clear(l);
}

START_TEST(test_rebuild_asm_caps_misaligned_segments)
{
	static unsigned char data[3000 * 7];
	struct bl_list l;
	uint64_t rng = 8;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	for (int i = 0; i < 3000; i++)
		add_skewed(&l, data + 7 * i, 7, 1 + i % 5);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3000);
	rebuild_capped_to_1024(&l, data, sizeof(data));
}
END_TEST

START_TEST(test_rebuild_asm_coalesces_aligned_when_over_cap)
{
	static unsigned char data[3000 * 512];
	struct bl_list l;
	uint64_t rng = 9;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	for (int i = 0; i < 3000; i++)
		add_aligned(&l, data + 512 * i, 512, 512);
	/* already aligned: without a cap there is nothing to do */
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 512, 512,
								 0), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3000);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 512, 512,
								 3000), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3000);
	/* with a cap the segments must be coalesced */
	rebuild_capped_to_1024(&l, data, sizeof(data));
}
END_TEST

START_TEST(test_rebuild_asm_distinct_size_and_memory_alignment)
{
	static unsigned char data[64 * 512 + 77];
	struct bl_list l;
	uint64_t rng = 10;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	/* memory-aligned to 512, but 512 long where 4096 is required */
	for (int i = 0; i < 64; i++)
		add_aligned(&l, data + 512 * i, 512, 512);
	add_aligned(&l, data + 64 * 512, 77, 512);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 4096, 512,
								 0), 1);
	assert_aligned(&l, 4096, 512);
	tu_assert_list_eq(&l, data, sizeof(data));
	bl_list_clear(&l);
}
END_TEST

/* ---- c_str ------------------------------------------------------------- */

START_TEST(test_c_str_of_empty_is_static_empty_string)
{
	struct tu_alloc_stats st;
	struct bl_list l;
	char *p;

	/* NULL means only ENOMEM: an empty list is "", and allocates nothing */
	tu_alloc_install(1, 1);
	bl_list_init(&l);
	p = bl_list_c_str(&l);
	ck_assert_ptr_nonnull(p);
	ck_assert_str_eq(p, "");
	ck_assert_ptr_eq(bl_list_c_str(&l), p);
	tu_alloc_stats(&st);
	ck_assert_uint_eq(st.allocs, 0);
	ck_assert_uint_eq(st.failed, 0);
	tu_alloc_uninstall();
	tu_assert_str(&l, "");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 0);
	/* emptied by a splice, with an append buffer left: still "" */
	bl_list_append(&l, "xyz", 3);
	bl_list_splice(&l, 0, 3, NULL);
	ck_assert_str_eq(bl_list_c_str(&l), "");
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_c_str_single_segment_is_not_copied)
{
	struct bl_list l;
	struct bl_ptr s;
	uint64_t c0;
	char *p;

	bl_list_init(&l);
	add_skewed(&l, "single", 6, 3);
	s = tu_seg_of(&l, 0);
	c0 = copied_now();
	p = bl_list_c_str(&l);
	ck_assert_uint_eq(copied_now(), c0);
	ck_assert_ptr_eq(p, bl_ptr_data(&s));
	ck_assert_mem_eq(p, "single", 6);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_c_str_multi_segment_becomes_one)
{
	struct bl_list l;
	struct bl_ptr held = BL_PTR_INIT, s;
	uint64_t c0;
	char *p;

	tu_make_abc(&l);
	ck_assert_int_eq(bl_list_get_ptr(&l, 2, &held), 0);
	c0 = copied_now();
	p = bl_list_c_str(&l);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(copied_now() - c0, 10);
	ck_assert_mem_eq(p, "ABCDEFGHIJ", 10);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 1);
	s = tu_seg_of(&l, 0);
	ck_assert_ptr_eq(p, bl_ptr_data(&s));
	tu_assert_str(&l, "ABCDEFGHIJ");
	ck_assert_uint_eq(bl_raw_nref(held.raw), 1);
	bl_ptr_release(&held);
	/* a second call returns the same memory */
	ck_assert_ptr_eq(bl_list_c_str(&l), p);
	bl_list_clear(&l);
}
END_TEST

/*
 * bl_list_copy_shared: a thread-local list's bytes, copied into one new
 * segment of @dst whose raw is shared; @src unchanged; @dst may be @src;
 * an empty @src appends nothing; NULL is -EINVAL; each allocation that
 * fails (the raw, then the chunk for its slot) is -ENOMEM with @dst as
 * it was.
 */
START_TEST(test_copy_shared_copies_a_thread_local_list_into_a_shared_raw)
{
	static unsigned char big[200000];
	struct bl_list l, d, e;
	struct bl_ptr p, last;
	struct tu_snap sl, sd;
	uint64_t c0;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)(i * 7 + 1);
	bl_raw_set_thread_local(true);
	bl_list_init(&l);
	bl_list_init(&d);
	bl_list_init(&e);
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(bl_ptr_alloc(&p, 1000), 0);
		memcpy(bl_ptr_data(&p), big + k * 1000, 1000);
		ck_assert_int_eq(bl_list_append_ptr_move(&l, &p), 0);
	}
	ck_assert_int_eq(bl_list_append(&l, big + 3000, 197000), 0);
	ck_assert_int_eq(bl_list_append(&d, "xy", 2), 0);
	tu_snap_take(&sl, &l);
	c0 = copied_now();
	ck_assert_int_eq(bl_list_copy_shared(&d, &l), 0);
	ck_assert_uint_eq(copied_now() - c0, sizeof(big));
	tu_snap_check(&sl, &l);
	ck_assert_uint_eq(bl_list_length(&d), 2 + sizeof(big));
	ck_assert_uint_eq(bl_list_num_buffers(&d), 2);
	last = tu_seg_of(&d, 1);
	ck_assert(!bl_raw_is_thread_local(last.raw));
	ck_assert(bl_raw_is_thread_local(tu_seg_of(&d, 0).raw));
	ck_assert_uint_eq(bl_raw_nref(last.raw), 1);
	ck_assert_mem_eq(bl_ptr_data(&last), big, sizeof(big));
	ck_assert_uint_eq((uintptr_t)bl_ptr_data(&last) % 64, 0);

	/* into itself: the copy is made before the list changes */
	ck_assert_int_eq(bl_list_copy_shared(&l, &l), 0);
	ck_assert_uint_eq(bl_list_length(&l), 2 * sizeof(big));
	{
		unsigned char *back = malloc(sizeof(big));

		ck_assert_ptr_nonnull(back);
		ck_assert_int_eq(bl_list_copy_out(&l, sizeof(big), sizeof(big),
						  back), 0);
		ck_assert_mem_eq(back, big, sizeof(big));
		free(back);
	}

	/* an empty source, and NULL */
	tu_snap_take(&sd, &d);
	ck_assert_int_eq(bl_list_copy_shared(&d, &e), 0);
	tu_snap_check(&sd, &d);
	ck_assert_int_eq(bl_list_copy_shared(NULL, &l), -EINVAL);
	ck_assert_int_eq(bl_list_copy_shared(&d, NULL), -EINVAL);

	/* no memory for the raw, then none for the chunk of its slot */
	for (uint64_t at = 1; at <= 2; at++) {
		tu_alloc_install(at, 1);
		ck_assert_int_eq(bl_list_copy_shared(&d, &l), -ENOMEM);
		tu_alloc_uninstall();
		tu_snap_check(&sd, &d);
	}
	bl_raw_set_thread_local(false);
	tu_snap_free(&sl);
	tu_snap_free(&sd);
	bl_list_clear(&l);
	bl_list_clear(&d);
}
END_TEST

/* ---- pad_to ------------------------------------------------------------ */

/* @data then @pad zero bytes, flattened, for comparing with a padded list. */
static unsigned char *padded(const void *data, size_t len, size_t pad)
{
	unsigned char *b = calloc(1, len + pad + 1);

	ck_assert_ptr_nonnull(b);
	memcpy(b, data, len);
	return b;
}

/*
 * Four aligned pages and an aligned 1000-byte tail: the tail segment moves
 * whole into the padding raw, the pages stay, and the O_DIRECT reshape
 * that follows has nothing left to copy.
 */
START_TEST(test_pad_to_keeps_aligned_segments_for_dio)
{
	static unsigned char data[4 * 4096 + 1000];
	struct bl_raw *r[4];
	unsigned char *want;
	struct bl_list l;
	uint64_t rng = 11, before;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	for (unsigned i = 0; i < 4; i++)
		r[i] = add_aligned(&l, data + 4096 * i, 4096, 4096);
	add_aligned(&l, data + 4 * 4096, 1000, 4096);
	before = copied_now();
	ck_assert_int_eq(bl_list_pad_to(&l, 4096), 3096);
	ck_assert_uint_eq(copied_now() - before, 1000);
	ck_assert_uint_eq(bl_list_length(&l), 5 * 4096);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 5);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_ptr_eq(tu_seg_of(&l, i).raw, r[i]);
	want = padded(data, sizeof(data), 3096);
	tu_assert_list_eq(&l, want, 5 * 4096);
	assert_aligned(&l, 4096, 4096);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 4096, 4096,
								 0), 0);
	free(want);
	bl_list_clear(&l);
}
END_TEST

/*
 * One aligned 10000-byte segment: it keeps its first two blocks and gives
 * the unfinished third (1808 bytes, the only bytes copied) to the padding.
 */
START_TEST(test_pad_to_splits_a_long_last_segment)
{
	static unsigned char data[10000];
	unsigned char *want;
	struct bl_raw *r;
	struct bl_list l;
	uint64_t rng = 12, before;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	r = add_aligned(&l, data, sizeof(data), 4096);
	before = copied_now();
	ck_assert_int_eq(bl_list_pad_to(&l, 4096), 4096 - 1808);
	ck_assert_uint_eq(copied_now() - before, 1808);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	ck_assert_ptr_eq(tu_seg_of(&l, 0).raw, r);
	ck_assert_uint_eq(tu_seg_of(&l, 0).len, 8192);
	ck_assert_uint_eq(bl_raw_nref(r), 1);
	want = padded(data, sizeof(data), 4096 - 1808);
	tu_assert_list_eq(&l, want, 3 * 4096);
	assert_aligned(&l, 4096, 4096);
	ck_assert_int_eq(bl_list_rebuild_aligned_size_and_memory(&l, 4096, 4096,
								 0), 0);
	free(want);
	bl_list_clear(&l);
}
END_TEST

/* Small appends (the append buffer) and a last segment shorter than the
 * unfinished block: the bytes are right whatever the layout. */
START_TEST(test_pad_to_of_appended_bytes)
{
	static const size_t aligns[] = { 1, 2, 64, 512, 4096 };
	unsigned char data[3000];
	uint64_t rng = 13;

	tu_fill(data, sizeof(data), &rng);
	for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++) {
		size_t al = aligns[a], pad = (al - sizeof(data) % al) % al;
		unsigned char *want = padded(data, sizeof(data), pad);
		struct bl_list l;

		bl_list_init(&l);
		tu_append_fixed(&l, data, 2500, 2500);
		ck_assert_int_eq(bl_list_append(&l, data + 2500, 500), 0);
		ck_assert_int_eq(bl_list_pad_to(&l, al), (ssize_t)pad);
		tu_assert_list_eq(&l, want, sizeof(data) + pad);
		/* appending goes on after the padding */
		ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
		ck_assert_uint_eq(bl_list_length(&l), sizeof(data) + pad + 1);
		ck_assert_int_eq(bl__list_validate(&l), 0);
		free(want);
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_pad_to_whole_blocks_changes_nothing)
{
	static unsigned char page[2][4096];
	struct tu_alloc_stats st;
	struct bl_list l, e;

	bl_list_init(&l);
	bl_list_init(&e);
	add_aligned(&l, page[0], 4096, 4096);
	add_aligned(&l, page[1], 4096, 4096);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_pad_to(&l, 4096), 0);
	ck_assert_int_eq(bl_list_pad_to(&l, 512), 0);
	ck_assert_int_eq(bl_list_pad_to(&e, 4096), 0);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_eq(st.allocs + st.failed, 0);
	ck_assert_uint_eq(bl_list_length(&l), 8192);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	ck_assert(bl_list_is_empty(&e));
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_pad_to_refuses_bad_alignment)
{
	static const size_t bad[] = { 0, 3, 100, 4097 };
	struct bl_list l;
	struct tu_snap sn;

	tu_make_abc(&l);
	tu_snap_take(&sn, &l);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_int_eq(bl_list_pad_to(&l, bad[i]), -EINVAL);
		tu_snap_check(&sn, &l);
	}
	tu_snap_free(&sn);
	bl_list_clear(&l);
}
END_TEST

/* The raw fails (its header or its page-aligned data), or, with the
 * inline slots full, the chunk for the new slot. */
START_TEST(test_pad_to_failure_leaves_list_unchanged)
{
	struct tu_alloc_stats st;
	struct bl_raw *r0, *r1;
	struct bl_list l;
	struct tu_snap sn;
	char data[5000];

	memset(data, 'q', sizeof(data));
	bl_list_init(&l);
	r0 = add_aligned(&l, data, 4096, 4096);
	r1 = add_aligned(&l, data, 5000, 4096);	/* the inline slots are full */
	tu_snap_take(&sn, &l);
	for (uint64_t n = 1; n <= 3; n++) {
		tu_alloc_install(n, 1);
		ck_assert_int_eq(bl_list_pad_to(&l, 4096), -ENOMEM);
		tu_alloc_stats(&st);
		tu_alloc_uninstall();
		ck_assert_uint_eq(st.failed, 1);
		ck_assert_int_eq(st.live_bytes, 0);
		tu_snap_check(&sn, &l);
		ck_assert_ptr_eq(tu_seg_of(&l, 0).raw, r0);
		ck_assert_ptr_eq(tu_seg_of(&l, 1).raw, r1);
		ck_assert_uint_eq(tu_seg_of(&l, 1).len, 5000);
		ck_assert_uint_eq(bl_raw_nref(r1), 1);
	}
	ck_assert_int_eq(bl_list_pad_to(&l, 4096), 3 * 4096 - 9096);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	tu_snap_free(&sn);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_pad_to_allocates_in_the_list_pool)
{
	struct bl_pool *p = bl_pool_create("test_list_pad", NULL);
	struct bl_list l;

	ck_assert_ptr_nonnull(p);
	bl_list_init(&l);
	bl_list_set_pool(&l, p);
	tu_append_fixed(&l, "abc", 3, 3);
	ck_assert_int_eq(bl_list_pad_to(&l, 8), 5);
	ck_assert_ptr_eq(bl_raw_pool(tu_seg_of(&l, 0).raw), p);
	tu_assert_list_eq(&l, "abc\0\0\0\0\0", 8);
	bl_list_clear(&l);
}
END_TEST

/* ---- compact ----------------------------------------------------------- */

/* A @len-byte slice at @off of a new 64 KiB raw (in pool @p), filled. */
static struct bl_ptr big_slice(struct bl_pool *p, size_t off, const char *s)
{
	struct bl_raw *r = bl_raw_create_in(p, 65536);
	struct bl_ptr whole = BL_PTR_INIT, sl = BL_PTR_INIT;

	ck_assert_ptr_nonnull(r);
	bl_ptr_from_raw(&whole, r);
	memcpy(bl_ptr_data(&whole) + off, s, strlen(s));
	ck_assert_int_eq(bl_ptr_slice(&sl, &whole, off, strlen(s)), 0);
	bl_ptr_release(&whole);
	return sl;
}

START_TEST(test_compact_copies_wasteful_segments)
{
	struct bl_ptr s1, s2, full = BL_PTR_INIT;
	struct bl_raw *big1;
	struct bl_stats st0, st1;
	struct bl_list l;
	ssize_t ret;

	s1 = big_slice(NULL, 0, "0123456789");
	s2 = big_slice(NULL, 500, "abcdefghijklmnopqrst");
	big1 = s1.raw;
	ck_assert_int_eq(bl_ptr_alloc(&full, 5), 0);
	memcpy(bl_ptr_data(&full), "FULL!", 5);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr(&l, &s1), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &full), 0);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &s2), 0);
	ck_assert_uint_eq(bl_raw_nref(big1), 2);
	ck_assert_uint_ge(bl_list_pinned_unused(&l), 2 * 65536 - 30);
	st0 = stats_now();
	ret = bl_list_compact(&l, 1024);
	st1 = stats_now();
	ck_assert_int_eq(ret, 30);
	ck_assert_uint_eq(st1.copied_bytes - st0.copied_bytes, 30);
	tu_assert_str(&l, "0123456789FULL!abcdefghijklmnopqrst");
	ck_assert_uint_eq(bl_list_num_buffers(&l), 3);
	/* the small, fully used raw is kept */
	ck_assert_ptr_eq(tu_seg_of(&l, 1).raw, full.raw);
	ck_assert_ptr_ne(tu_seg_of(&l, 0).raw, big1);
	/* big1 lost the list's reference; big2 (only the list's) was freed */
	ck_assert_uint_eq(bl_raw_nref(big1), 1);
	ck_assert_uint_ge(st1.raws_freed - st0.raws_freed, 1);
	ck_assert_uint_le(bl_list_pinned_unused(&l), 3 * 1024);
	/* nothing left to do */
	st0 = stats_now();
	ck_assert_int_eq(bl_list_compact(&l, 1024), 0);
	st1 = stats_now();
	ck_assert_uint_eq(st1.copied_bytes, st0.copied_bytes);
	bl_list_clear(&l);
	bl_ptr_release(&s1);
	bl_ptr_release(&full);
}
END_TEST

START_TEST(test_compact_merges_neighbours_into_one_raw)
{
	struct bl_ptr a, b;
	struct bl_list l;

	a = big_slice(NULL, 100, "first-");
	b = big_slice(NULL, 9000, "second");
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &a), 0);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &b), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 2);
	ck_assert_int_eq(bl_list_compact(&l, 4096), 12);
	tu_assert_str(&l, "first-second");
	ck_assert_ptr_eq(tu_seg_of(&l, 0).raw,
			 tu_seg_of(&l, bl_list_num_buffers(&l) - 1).raw);
	ck_assert_uint_le(bl_list_pinned_unused(&l), 4096);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_compact_drops_large_append_buffer)
{
	struct bl_list l;

	bl_list_init(&l);
	/* grow the append buffer, then keep only a small value */
	for (int i = 0; i < 200; i++)
		ck_assert_int_eq(bl_list_append(&l, "0123456789", 10), 0);
	ck_assert_int_eq(bl_list_splice(&l, 10, 1990, NULL), 0);
	tu_assert_str(&l, "0123456789");
	ck_assert_int_ge(bl_list_compact(&l, 64), 0);
	tu_assert_str(&l, "0123456789");
	ck_assert_uint_le(bl_list_pinned_unused(&l), 64);
	/* the list still appends */
	ck_assert_int_eq(bl_list_append(&l, "ab", 2), 0);
	tu_assert_str(&l, "0123456789ab");
	bl_list_clear(&l);
}
END_TEST

/*
 * Every segment kept (the list covers its append buffer's bytes many times
 * over, so that raw wastes nothing) while the buffer's free room is still
 * over the limit: the chain stays, the buffer goes, and the list appends
 * on as before.
 */
START_TEST(test_compact_keeping_every_segment_drops_the_append_buffer)
{
	struct bl_list l;
	struct bl_raw *ab;
	char want[200];

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "0123456789", 10), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(bl_list_append_list(&l, &l), 0);
	/* extends the last segment, which ends at the buffer's frontier */
	ck_assert_int_eq(bl_list_append(&l, "x", 1), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 16);
	ab = tu_seg_of(&l, 15).raw;
	ck_assert_uint_gt(bl__list_abuf_room(&l), 100);
	ck_assert_int_eq(bl_list_compact(&l, 100), 0);
	ck_assert_int_eq(bl__list_validate(&l), 0);
	ck_assert_uint_eq(bl__list_abuf_room(&l), 0);
	ck_assert_uint_eq(bl_list_num_buffers(&l), 16);
	ck_assert_ptr_eq(tu_seg_of(&l, 15).raw, ab);
	ck_assert_int_eq(bl_list_append(&l, "y", 1), 0);
	for (int i = 0; i < 16; i++)
		memcpy(want + 10 * i, "0123456789", 10);
	memcpy(want + 160, "xy", 2);
	tu_assert_list_eq(&l, want, 162);
	ck_assert_ptr_ne(tu_seg_of(&l, 16).raw, ab);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_compact_without_waste_changes_nothing)
{
	struct bl_list l, e;
	struct bl_raw *r[4];
	uint64_t c0;

	tu_make_abc(&l);
	bl_list_init(&e);
	for (unsigned i = 0; i < 4; i++)
		r[i] = tu_seg_of(&l, i).raw;
	c0 = copied_now();
	ck_assert_int_eq(bl_list_compact(&l, 0), 0);
	ck_assert_int_eq(bl_list_compact(&e, 0), 0);
	ck_assert_uint_eq(copied_now(), c0);
	tu_assert_str(&l, "ABCDEFGHIJ");
	tu_assert_str(&e, "");
	for (unsigned i = 0; i < 4; i++)
		ck_assert_ptr_eq(tu_seg_of(&l, i).raw, r[i]);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_compact_allocates_in_the_replaced_pool)
{
	struct bl_pool *p = bl_pool_create("test_list_compact", NULL);
	struct bl_ptr a;
	struct bl_list l;

	ck_assert_ptr_nonnull(p);
	a = big_slice(p, 7, "pooled");
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr_move(&l, &a), 0);
	ck_assert_int_eq(bl_list_compact(&l, 1024), 6);
	tu_assert_str(&l, "pooled");
	ck_assert_ptr_eq(bl_raw_pool(tu_seg_of(&l, 0).raw), p);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_compact_failure_leaves_list_unchanged)
{
	struct bl_ptr a;
	struct bl_raw *big;
	struct bl_list l;
	struct tu_alloc_stats st;

	a = big_slice(NULL, 0, "keep me");
	big = a.raw;
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append_ptr(&l, &a), 0);
	tu_alloc_install(1, 1);
	ck_assert_int_eq(bl_list_compact(&l, 1024), -ENOMEM);
	tu_alloc_stats(&st);
	tu_alloc_uninstall();
	ck_assert_uint_ge(st.failed, 1);
	tu_assert_str(&l, "keep me");
	ck_assert_ptr_eq(tu_seg_of(&l, 0).raw, big);
	ck_assert_uint_eq(bl_raw_nref(big), 2);
	bl_list_clear(&l);
	bl_ptr_release(&a);
}
END_TEST

int main(void)
{
	const TTest *copy_tests[] = {
		test_copy_out_ranges,
		test_copy_in_writes_across_segments_in_place,
		test_copy_in_shared_raw_is_visible_elsewhere,
		test_copy_in_static_segment_gets_private_copy,
		test_copy_in_out_of_range_changes_nothing,
		test_zero_range,
		NULL
	};
	const TTest *rebuild_tests[] = {
		test_rebuild_makes_one_segment,
		test_rebuild_leaves_short_lists,
		test_rebuild_aligned_keeps_aligned_list,
		test_rebuild_aligned_of_aligned_list_allocates_nothing,
		test_rebuild_aligned_copies_misaligned_runs,
		test_rebuild_aligned_keeps_aligned_segments,
		test_rebuild_aligned_random_segments,
		test_rebuild_aligned_rejects_bad_alignment,
		test_rebuild_asm_caps_misaligned_segments,
		test_rebuild_asm_coalesces_aligned_when_over_cap,
		test_rebuild_asm_distinct_size_and_memory_alignment,
		test_c_str_of_empty_is_static_empty_string,
		test_c_str_single_segment_is_not_copied,
		test_c_str_multi_segment_becomes_one,
		test_copy_shared_copies_a_thread_local_list_into_a_shared_raw,
		NULL
	};
	const TTest *pad_to_tests[] = {
		test_pad_to_keeps_aligned_segments_for_dio,
		test_pad_to_splits_a_long_last_segment,
		test_pad_to_of_appended_bytes,
		test_pad_to_whole_blocks_changes_nothing,
		test_pad_to_refuses_bad_alignment,
		test_pad_to_failure_leaves_list_unchanged,
		test_pad_to_allocates_in_the_list_pool,
		NULL
	};
	const TTest *compact_tests[] = {
		test_compact_copies_wasteful_segments,
		test_compact_merges_neighbours_into_one_raw,
		test_compact_drops_large_append_buffer,
		test_compact_keeping_every_segment_drops_the_append_buffer,
		test_compact_without_waste_changes_nothing,
		test_compact_allocates_in_the_replaced_pool,
		test_compact_failure_leaves_list_unchanged,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("copy", copy_tests),
		TU_GROUP("rebuild", rebuild_tests, .timeout = 60,
			 .setup = NULL, .teardown = tu_thread_local_off),
		TU_GROUP("pad_to", pad_to_tests),
		TU_GROUP("compact", compact_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("list_rebuild", groups));
}
