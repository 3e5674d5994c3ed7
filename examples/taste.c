/* SPDX-License-Identifier: MIT */
/*
 * taste.c - a first taste: a list built from copied, claimed and shared
 * bytes, encoded as a record with a crc32c, written to a file, read back,
 * checked and decoded.  Build: cc taste.c $(pkg-config --cflags --libs bufferlist)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bufferlist.h>

/* Calls return 0 (or a count) or a negative errno; conditions must hold. */
static void die(const char *what, int err)
{
	fprintf(stderr, "taste: %s%s%s\n", what, err ? ": " : "",
		err ? strerror(err) : "");
	exit(1);
}
#define CHECK(call) do {						\
		long rc_ = (long)(call);				\
		if (rc_ < 0)						\
			die(#call, (int)-rc_);				\
	} while (0)
#define REQUIRE(cond) do { if (!(cond)) die("failed: " #cond, 0); } while (0)

#define MAGIC 0x7473616eu	/* "tsan" */

int main(void)
{
	struct bl_list body = BL_LIST_INIT(body), tail = BL_LIST_INIT(tail);
	struct bl_list rec = BL_LIST_INIT(rec), back = BL_LIST_INIT(back);
	struct bl_list got = BL_LIST_INIT(got), word = BL_LIST_INIT(word);
	const char *tmp = getenv("TMPDIR");
	char dir[4096], path[4200], *text;
	struct bl_list_seg_iter si;
	const struct bl_seg *seg;
	struct bl_ptr p = BL_PTR_INIT;
	uint32_t magic, crc, want_crc;
	struct bl_iter it;
	uint64_t nwords;
	char *mine;

	/* 1. build: small appends are copied into the list's append buffer */
	CHECK(bl_list_append(&body, "hello, ", 7));
	/* claim: the library takes malloc'd memory and frees it at the end */
	mine = strdup("wonderful world");
	REQUIRE(mine);
	bl_ptr_from_raw(&p, bl_raw_claim(mine, strlen(mine), NULL, NULL));
	REQUIRE(p.raw);
	CHECK(bl_list_append_ptr_move(&tail, &p));
	CHECK(bl_list_claim_append(&body, &tail));	/* moves, O(1) */
	/* substr: "world" shared out of the claimed raw, no copy */
	CHECK(bl_list_substr_of(&word, &body, 17, 5));
	CHECK(bl_list_append(&body, "!", 1));

	/* 2. encode: magic, a varint, the body shared, then a crc32c */
	CHECK(bl_encode_u32(&rec, MAGIC));
	CHECK(bl_encode_varint(&rec, 3));
	CHECK(bl_encode_list(&rec, &body));
	crc = bl_list_crc32c(&rec, -1u);
	CHECK(bl_encode_u32(&rec, crc));
	printf("record: %zu bytes in %u segments:", bl_list_length(&rec),
	       bl_list_num_buffers(&rec));
	BL_LIST_FOREACH_SEG(&rec, si, seg)
		printf(" %zu", seg->len);
	printf("\n");

	/* 3. to a file and back, in a directory of our own */
	snprintf(dir, sizeof(dir), "%s/bl-taste-XXXXXX", tmp ? tmp : "/tmp");
	REQUIRE(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/record", dir);
	CHECK(bl_list_write_file(&rec, path, 0600));
	CHECK(bl_list_read_file(&back, path));
	REQUIRE(bl_list_contents_equal(&back, &rec));

	/* 4. check the crc of all but the last 4 bytes, then decode */
	CHECK(bl_list_substr_of(&got, &back, 0, bl_list_length(&back) - 4));
	want_crc = bl_list_crc32c(&got, -1u);
	bl_list_clear(&got);
	CHECK(bl_iter_init(&it, &back, 0));
	CHECK(bl_decode_u32(&it, &magic));
	CHECK(bl_decode_varint(&it, &nwords));
	CHECK(bl_decode_bytes(&it, &got));	/* shares the read buffer */
	CHECK(bl_decode_u32(&it, &crc));
	REQUIRE(magic == MAGIC && nwords == 3 && crc == want_crc);
	REQUIRE(bl_iter_remaining(&it) == 0);
	REQUIRE(bl_list_contents_equal(&got, &body));
	text = bl_list_c_str(&got);	/* contiguous (not NUL-terminated) */
	REQUIRE(text);
	printf("decoded: %.*s (crc32c %08x)\n", (int)bl_list_length(&got),
	       text, crc);
	text = bl_list_c_str(&word);
	REQUIRE(text);
	printf("the shared word: %.*s\n", (int)bl_list_length(&word), text);

	unlink(path);
	rmdir(dir);
	bl_list_clear(&body);
	bl_list_clear(&word);
	bl_list_clear(&rec);
	bl_list_clear(&back);
	bl_list_clear(&got);
	return 0;
}
