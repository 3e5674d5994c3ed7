/* SPDX-License-Identifier: MIT */
/*
 * test_list_inspect.c - the list layer: what a list tells about itself:
 * crc32c (Ceph's values, independent of segmentation, cached by range) and
 * hexdump (as hexdump -C prints), pinned_unused.
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

/* ---- crc32c ------------------------------------------------------------ */

START_TEST(test_crc32c_of_A_is_cephs_value)
{
	struct bl_list l;

	bl_list_init(&l);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), 0);
	ck_assert_uint_eq(bl_list_crc32c(&l, 1234), 1234);
	ck_assert_int_eq(bl_list_append(&l, "A", 1), 0);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), 0xB3109EBF);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), 0xB3109EBF);
	bl_list_clear(&l);
}
END_TEST

START_TEST(test_crc32c_independent_of_segmentation)
{
	static unsigned char data[100000];
	uint64_t rng = 17;
	static const uint32_t seeds[] = { 0, 1, 0xFFFFFFFF, 0xDEADBEEF };

	tu_fill(data, sizeof(data), &rng);
	for (int layout = 0; layout < 4; layout++) {
		struct bl_list l;

		bl_list_init(&l);
		switch (layout) {
		case 0:
			tu_append_fixed(&l, data, sizeof(data), sizeof(data));
			break;
		case 1:
			tu_append_fixed(&l, data, sizeof(data), 1000);
			break;
		case 2:
			tu_append_segmented(&l, data, sizeof(data), 3000, 1,
					    &rng);
			break;
		default:
			tu_append_fixed(&l, data, 3000, 1);
			tu_append_fixed(&l, data + 3000, sizeof(data) - 3000, 4096);
			break;
		}
		for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
			uint32_t want = bl_crc32c(seeds[i], data, sizeof(data));

			ck_assert_uint_eq(bl_list_crc32c(&l, seeds[i]), want);
			/* a repeat (from the caches) is the same */
			ck_assert_uint_eq(bl_list_crc32c(&l, seeds[i]), want);
		}
		bl_list_clear(&l);
	}
}
END_TEST

START_TEST(test_crc32c_cache_keyed_by_range)
{
	static unsigned char data[4096];
	struct bl_list l, sub;
	uint64_t rng = 18;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	bl_list_init(&sub);
	tu_append_fixed(&l, data, sizeof(data), sizeof(data));
	ck_assert_uint_eq(bl_list_crc32c(&l, 0), bl_crc32c(0, data, 4096));
	ck_assert_int_eq(bl_list_substr_of(&sub, &l, 100, 3000), 0);
	ck_assert_uint_eq(bl_list_crc32c(&sub, 0),
			  bl_crc32c(0, data + 100, 3000));
	ck_assert_uint_eq(bl_list_crc32c(&sub, 7),
			  bl_crc32c(7, data + 100, 3000));
	ck_assert_uint_eq(bl_list_crc32c(&l, 9), bl_crc32c(9, data, 4096));
	bl_list_clear(&l);
	bl_list_clear(&sub);
}
END_TEST

START_TEST(test_crc32c_follows_copy_in_through_sharer)
{
	static unsigned char data[8192];
	struct bl_list l, other;
	uint64_t rng = 19;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	bl_list_init(&other);
	tu_append_fixed(&l, data, sizeof(data), 2048);
	ck_assert_int_eq(bl_list_append_list(&other, &l), 0);
	ck_assert_uint_eq(bl_list_crc32c(&other, 0),
			  bl_crc32c(0, data, sizeof(data)));
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	memcpy(data + 3000, "written", 7);
	ck_assert_int_eq(bl_list_copy_in(&l, 3000, 7, "written"), 0);
	ck_assert_uint_eq(bl_list_crc32c(&other, 0),
			  bl_crc32c(0, data, sizeof(data)));
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	memset(data + 5000, 0, 10);
	ck_assert_int_eq(bl_list_zero(&other, 5000, 10), 0);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	bl_list_clear(&l);
	bl_list_clear(&other);
}
END_TEST

START_TEST(test_invalidate_crc_after_direct_write)
{
	static unsigned char data[6000];
	struct bl_list l;
	struct bl_ptr p;
	uint64_t rng = 20;

	tu_fill(data, sizeof(data), &rng);
	bl_list_init(&l);
	tu_append_fixed(&l, data, sizeof(data), 2000);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	p = tu_seg_of(&l, 1);
	bl_ptr_data(&p)[10] ^= 0x55;
	data[2010] ^= 0x55;
	bl_list_invalidate_crc(&l);
	ck_assert_uint_eq(bl_list_crc32c(&l, 0),
			  bl_crc32c(0, data, sizeof(data)));
	ck_assert_uint_eq(bl_list_crc32c(&l, 77),
			  bl_crc32c(77, data, sizeof(data)));
	bl_list_clear(&l);
}
END_TEST

/* ---- hexdump ----------------------------------------------------------- */

/* Expected texts: the output of util-linux `hexdump -C` for the same bytes. */
static const char hex_ceph32[] =
	"00000000  30 31 33 32 34 35 36 37  38 39 30 31 32 33 34 00  |013245678901234.|\n"
	"00000010  36 37 38 39 30 31 32 33  34 35 36 37 38 39 30 31  |6789012345678901|\n"
	"00000020\n";

static const char hex_hello[] =
	"00000000  68 65 6c 6c 6f                                    |hello|\n"
	"00000005\n";

static const char hex_eight[] =
	"00000000  41 42 43 44 45 46 47 48                           |ABCDEFGH|\n"
	"00000008\n";

static const char hex_nine[] =
	"00000000  41 42 43 44 45 46 47 48  49                       |ABCDEFGHI|\n"
	"00000009\n";

static const char hex_zero64[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000040\n";

static const char hex_mixed[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000030  41 42 43 44 45 46 47 48  49 4a 4b 4c 4d 4e 4f 50  |ABCDEFGHIJKLMNOP|\n"
	"00000040  51 52 53 54 55 56 57 58  59 5a 00 00 00 00 00 00  |QRSTUVWXYZ......|\n"
	"00000050  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000070  00 00                                             |..|\n"
	"00000072\n";

static const char hex_ascii[] =
	"00000000  1e 1f 20 21 22 23 24 25  26 27 28 29 2a 2b 2c 2d  |.. !\"#$%&'()*+,-|\n"
	"00000010  2e 2f 30 31 32 33 34 35  36 37 38 39 3a 3b 3c 3d  |./0123456789:;<=|\n"
	"00000020  3e 3f 40 41 42 43 44 45  46 47 48 49 4a 4b 4c 4d  |>?@ABCDEFGHIJKLM|\n"
	"00000030  4e 4f 50 51 52 53 54 55  56 57 58 59 5a 5b 5c 5d  |NOPQRSTUVWXYZ[\\]|\n"
	"00000040  5e 5f 60 61 62 63 64 65  66 67 68 69 6a 6b 6c 6d  |^_`abcdefghijklm|\n"
	"00000050  6e 6f 70 71 72 73 74 75  76 77 78 79 7a 7b 7c 7d  |nopqrstuvwxyz{|}|\n"
	"00000060  7e 7f 80 81 82 83 84 85  86 87                    |~.........|\n"
	"0000006a\n";

static const char hex_zero40[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000020  00 00 00 00 00 00 00 00                           |........|\n"
	"00000028\n";

static const char hex_zero32[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00000020\n";

static const char hex_big[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"*\n"
	"00010000  78                                                |x|\n"
	"00010001\n";

static const char hex_notrep[] =
	"00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"00000010  78 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |x...............|\n"
	"00000020  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n"
	"00000030\n";

static const char hex_textrep[] =
	"00000000  61 62 63 64 65 66 67 68  69 6a 6b 6c 6d 6e 6f 70  |abcdefghijklmnop|\n"
	"*\n"
	"00000040  61 62 63                                          |abc|\n"
	"00000043\n";

#define HEX_MAX (65536 + 1)

/* Builds the bytes of case @i into @buf; returns its length and text. */
static size_t hex_case(int i, unsigned char *buf, const char **want)
{
	memset(buf, 0, HEX_MAX);
	switch (i) {
	case 0:
		memcpy(buf, "013245678901234\0006789012345678901234", 32);
		*want = hex_ceph32;
		return 32;
	case 1:
		memcpy(buf, "hello", 5);
		*want = hex_hello;
		return 5;
	case 2:
		memcpy(buf, "ABCDEFGHI", 9);
		*want = hex_eight;
		return 8;
	case 3:
		memcpy(buf, "ABCDEFGHI", 9);
		*want = hex_nine;
		return 9;
	case 4:
		*want = hex_zero64;
		return 64;
	case 5:
		for (int c = 0; c < 26; c++)
			buf[48 + c] = (unsigned char)('A' + c);
		*want = hex_mixed;
		return 48 + 26 + 40;
	case 6:
		for (int c = 0x1e; c < 0x88; c++)
			buf[c - 0x1e] = (unsigned char)c;
		*want = hex_ascii;
		return 0x88 - 0x1e;
	case 7:
		*want = hex_zero40;
		return 40;
	case 8:
		*want = hex_zero32;
		return 32;
	case 9:
		buf[65536] = 'x';
		*want = hex_big;
		return 65537;
	case 10:
		buf[16] = 'x';
		*want = hex_notrep;
		return 48;
	default:
		for (int c = 0; c < 67; c++)
			buf[c] = (unsigned char)('a' + c % 16);
		*want = hex_textrep;
		return 67;
	}
}

#define HEX_CASES 12

/* Runs bl_list_hexdump() into memory; returns the text (caller frees). */
static char *hexdump_text(const struct bl_list *l)
{
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(bl_list_hexdump(l, f), 0);
	ck_assert_int_eq(fclose(f), 0);
	return text;
}

START_TEST(test_hexdump_matches_hexdump_C)
{
	static unsigned char buf[HEX_MAX];
	uint64_t rng = 23;

	for (int i = 0; i < HEX_CASES; i++) {
		const char *want;
		size_t len = hex_case(i, buf, &want);

		for (int layout = 0; layout < 3; layout++) {
			struct bl_list l;
			char *text;

			bl_list_init(&l);
			if (layout == 0)
				ck_assert_int_eq(bl_list_append(&l, buf, len),
						 0);
			else if (layout == 1)
				tu_append_fixed(&l, buf, len, len > 1000 ? 999 : 1);
			else
				tu_append_segmented(&l, buf, len, 21, 1, &rng);
			text = hexdump_text(&l);
			ck_assert_msg(strcmp(text, want) == 0,
				      "case %d layout %d:\n--- got\n%s"
				      "--- want\n%s",
				      i, layout, text, want);
			free(text);
			bl_list_clear(&l);
		}
	}
}
END_TEST

START_TEST(test_hexdump_of_empty_list_prints_nothing)
{
	struct bl_list l;
	char *text;

	/* `hexdump -C < /dev/null` prints nothing at all */
	bl_list_init(&l);
	text = hexdump_text(&l);
	ck_assert_str_eq(text, "");
	free(text);
}
END_TEST

START_TEST(test_hexdump_reports_write_failure)
{
	struct bl_list l;
	FILE *f = fopen("/dev/null", "r");

	ck_assert_ptr_nonnull(f);
	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, "hello", 5), 0);
	ck_assert_int_eq(bl_list_hexdump(&l, f), -EIO);
	fclose(f);
	bl_list_clear(&l);
}
END_TEST

/* ---- pinned_unused ----------------------------------------------------- */

START_TEST(test_pinned_unused_counts_each_raw_once)
{
	struct bl_ptr big = BL_PTR_INIT, s1 = BL_PTR_INIT, s2 = BL_PTR_INIT;
	struct bl_ptr full = BL_PTR_INIT;
	struct bl_list l;

	ck_assert_int_eq(bl_ptr_alloc(&big, 65536), 0);
	ck_assert_int_eq(bl_ptr_slice(&s1, &big, 0, 10), 0);
	ck_assert_int_eq(bl_ptr_slice(&s2, &big, 1000, 10), 0);
	ck_assert_int_eq(bl_ptr_alloc(&full, 100), 0);
	bl_list_init(&l);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 0);
	ck_assert_int_eq(bl_list_append_ptr(&l, &s1), 0);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 65536 - 10);
	ck_assert_int_eq(bl_list_append_ptr(&l, &full), 0);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 65536 - 10);
	ck_assert_int_eq(bl_list_append_ptr(&l, &s2), 0);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 65536 - 20);
	ck_assert_int_eq(bl_list_append_ptr(&l, &big), 0);
	ck_assert_uint_eq(bl_list_pinned_unused(&l), 0);
	bl_list_clear(&l);
	bl_ptr_release(&s1);
	bl_ptr_release(&s2);
	bl_ptr_release(&big);
	bl_ptr_release(&full);
}
END_TEST

int main(void)
{
	const TTest *crc32c_tests[] = {
		test_crc32c_of_A_is_cephs_value,
		test_crc32c_independent_of_segmentation,
		test_crc32c_cache_keyed_by_range,
		test_crc32c_follows_copy_in_through_sharer,
		test_invalidate_crc_after_direct_write,
		NULL
	};
	const TTest *hexdump_tests[] = {
		test_hexdump_matches_hexdump_C,
		test_hexdump_of_empty_list_prints_nothing,
		test_hexdump_reports_write_failure,
		test_pinned_unused_counts_each_raw_once,
		NULL
	};
	const struct tu_group groups[] = {
		TU_GROUP("crc32c", crc32c_tests),
		TU_GROUP("hexdump", hexdump_tests),
		TU_GROUP_END
	};

	return tu_run(tu_suite("list_inspect", groups));
}
