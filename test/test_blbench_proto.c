/* SPDX-License-Identifier: MIT */
/*
 * test_blbench_proto.c - blbench's request layout (tools/blbench_proto.h)
 * has one encoder and one decoder that agree: every type round-trips
 * field for field; a WRITE's data starts at data_off (its 44-byte header
 * plus the name, rounded up to the server's alignment) and is moved, not
 * copied; what a peer may send wrong is refused with -EBADMSG and leaves
 * the frame as it was; running out of memory gives -ENOMEM and leaves the
 * output list as it was.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bufferlist.h>
#include "blbench_proto.h"
#include "testutil.h"

static const uint16_t all_types[] = {
	T_HELLO, T_WRITE, T_READ, T_REMOVE, T_META_PUT, T_META_GET,
	T_META_DEL, T_LIST,
};

static void fill(struct blb_req *q, uint16_t type)
{
	blb_req_init(q, type);
	q->tag = 0x1122334455667788ull;
	q->flags = TCP_DIRECT;
	q->objno = 12345;
	q->off = 1ull << 40;
	q->span = 1ull << 22;
	q->len = 4096;
	strcpy(q->name, type == T_LIST ? "" : "obj_17");
	if (type == T_WRITE || type == T_META_PUT)
		ck_assert_int_eq(bl_list_append(&q->body, "the op's bytes!",
						15), 0);
}

START_TEST(every_type_round_trips_field_for_field)
{
	for (size_t k = 0; k < sizeof(all_types) / sizeof(all_types[0]); k++) {
		uint16_t type = all_types[k];
		struct blb_req a, b;
		struct bl_list l;

		fill(&a, type);
		bl_list_init(&l);
		ck_assert_int_eq(blb_req_encode(&a, 64, &l), 0);
		ck_assert_int_eq(blb_req_decode(type, &l, &b), 0);
		ck_assert_uint_eq(b.type, type);
		ck_assert_uint_eq(b.tag, a.tag);
		ck_assert_uint_eq(b.flags, a.flags);
		ck_assert_str_eq(b.name, type == T_HELLO ? "" : a.name);
		if (type == T_WRITE || type == T_READ || type == T_REMOVE)
			ck_assert_uint_eq(b.objno, a.objno);
		if (type == T_WRITE || type == T_READ) {
			ck_assert_uint_eq(b.off, a.off);
			ck_assert_uint_eq(b.span, a.span);
		}
		if (type == T_READ)
			ck_assert_uint_eq(b.len, a.len);
		if (type == T_WRITE || type == T_META_PUT)
			tu_assert_list_eq(&b.body, "the op's bytes!", 15);
		else
			ck_assert_uint_eq(bl_list_length(&b.body), 0);
		blb_req_clear(&a);
		blb_req_clear(&b);
		bl_list_clear(&l);
	}
}
END_TEST

/* 8 tag + 4 flags + 4 data_off + 3 x 8 + 4 name length = 44, not 48. */
START_TEST(write_data_starts_at_the_padded_header_and_is_moved)
{
	static const size_t pads[] = { 1, 64, 512, 4096 };

	ck_assert_uint_eq(BLB_REQ_WRITE_HEAD, 44);
	for (size_t k = 0; k < sizeof(pads) / sizeof(pads[0]); k++) {
		size_t pad = pads[k], head = 44 + strlen("obj_17");
		struct blb_req a, b;
		struct bl_list l;

		fill(&a, T_WRITE);
		bl_list_init(&l);
		ck_assert_int_eq(blb_req_encode(&a, pad, &l), 0);
		ck_assert_uint_eq(a.data_off, (head + pad - 1) / pad * pad);
		ck_assert_uint_eq(bl_list_length(&l), a.data_off + 15);
		/* the bytes are shared into the frame, then moved out */
		{
			uint64_t before = copied_now();

			ck_assert_int_eq(blb_req_decode(T_WRITE, &l, &b), 0);
			/* the name is copied out (a C string), the data not */
			ck_assert_uint_eq(copied_now() - before,
					  strlen("obj_17"));
		}
		ck_assert_uint_eq(b.data_off, a.data_off);
		tu_assert_list_eq(&b.body, "the op's bytes!", 15);
		ck_assert_uint_eq(bl_list_length(&l), 0);
		blb_req_clear(&a);
		blb_req_clear(&b);
		bl_list_clear(&l);
	}
}
END_TEST

/* Encodes @type's request and hands back its bytes, flattened. */
static unsigned char *encoded(uint16_t type, size_t *len)
{
	struct blb_req a;
	struct bl_list l;
	unsigned char *p;

	fill(&a, type);
	bl_list_init(&l);
	ck_assert_int_eq(blb_req_encode(&a, 64, &l), 0);
	*len = bl_list_length(&l);
	p = tu_flatten(&l);
	blb_req_clear(&a);
	bl_list_clear(&l);
	return p;
}

/* Decodes @len bytes of @p as @type: its result; the frame unchanged. */
static int decode_bytes(uint16_t type, const unsigned char *p, size_t len)
{
	struct blb_req q;
	struct bl_list l;
	int r;

	bl_list_init(&l);
	ck_assert_int_eq(bl_list_append(&l, p, len), 0);
	r = blb_req_decode(type, &l, &q);
	if (r < 0) {
		tu_assert_list_eq(&l, p, len);
		ck_assert_uint_eq(bl_list_length(&q.body), 0);
	}
	blb_req_clear(&q);
	bl_list_clear(&l);
	return r;
}

START_TEST(every_truncation_is_refused_and_leaves_the_frame)
{
	for (size_t k = 0; k < sizeof(all_types) / sizeof(all_types[0]); k++) {
		size_t len, cut;
		unsigned char *p = encoded(all_types[k], &len);
		/* every byte is needed, but a WRITE's data (at data_off 64:
		 * shorter data decodes) */
		size_t need = all_types[k] == T_WRITE ? 64 : len;

		for (cut = 0; cut < need; cut++)
			ck_assert_msg(decode_bytes(all_types[k], p, cut) ==
				      -EBADMSG, "type %u cut at %zu of %zu",
				      all_types[k], cut, len);
		ck_assert_int_eq(decode_bytes(all_types[k], p, len), 0);
		free(p);
	}
}
END_TEST

START_TEST(bad_fields_are_refused)
{
	size_t len;
	unsigned char *p;

	/* a type the protocol lacks */
	p = encoded(T_REMOVE, &len);
	ck_assert_int_eq(decode_bytes(T_REPLY, p, len), -EBADMSG);
	ck_assert_int_eq(decode_bytes(0, p, len), -EBADMSG);
	/* flags it does not know */
	p[8] |= 2;
	ck_assert_int_eq(decode_bytes(T_REMOVE, p, len), -EBADMSG);
	free(p);

	/* offsets and spans past 16 TiB, a READ over the payload limit */
	{
		static const size_t at[] = { 20, 28, 36 };	/* off, span, len */

		for (int i = 0; i < 3; i++) {
			p = encoded(T_READ, &len);
			p[at[i] + 6] = 0x10;	/* bit 52 */
			ck_assert_int_eq(decode_bytes(T_READ, p, len), -EBADMSG);
			free(p);
		}
	}
	/* names that are not plain: a '/', a leading '.', a NUL, empty */
	{
		static const char *const bad[] = { "a/b", ".hidden", "" };

		for (int i = 0; i < 3; i++) {
			struct blb_req a;
			struct bl_list l;
			unsigned char *f;

			fill(&a, T_META_GET);
			strcpy(a.name, bad[i]);
			bl_list_init(&l);
			ck_assert_int_eq(blb_req_encode(&a, 1, &l), 0);
			len = bl_list_length(&l);
			f = tu_flatten(&l);
			ck_assert_int_eq(decode_bytes(T_META_GET, f, len),
					 -EBADMSG);
			free(f);
			bl_list_clear(&l);
			blb_req_clear(&a);
		}
		p = encoded(T_META_GET, &len);
		p[16 + 2] = 0;	/* "ob\0_17" */
		ck_assert_int_eq(decode_bytes(T_META_GET, p, len), -EBADMSG);
		free(p);
	}
	/* LIST's prefix alone may be empty */
	p = encoded(T_LIST, &len);
	ck_assert_int_eq(decode_bytes(T_LIST, p, len), 0);
	free(p);
}
END_TEST

START_TEST(write_data_off_inside_the_header_or_past_the_end_is_refused)
{
	size_t len;
	unsigned char *p = encoded(T_WRITE, &len);
	uint32_t good = (uint32_t)p[12] | (uint32_t)p[13] << 8;
	uint32_t bad[] = { 0, 12, 44 + 5, (uint32_t)len + 1, 0xffffffffu };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		p[12] = (unsigned char)bad[i];
		p[13] = (unsigned char)(bad[i] >> 8);
		p[14] = (unsigned char)(bad[i] >> 16);
		p[15] = (unsigned char)(bad[i] >> 24);
		ck_assert_msg(decode_bytes(T_WRITE, p, len) == -EBADMSG,
			      "data_off %u", bad[i]);
	}
	/* at the very end: a WRITE of nothing, which decodes */
	p[12] = (unsigned char)len;
	p[13] = (unsigned char)(len >> 8);
	p[14] = p[15] = 0;
	ck_assert_int_eq(decode_bytes(T_WRITE, p, len), 0);
	ck_assert_uint_ge(good, 44 + strlen("obj_17"));
	free(p);
}
END_TEST

START_TEST(encode_without_memory_leaves_the_list_as_it_was)
{
	for (size_t k = 0; k < sizeof(all_types) / sizeof(all_types[0]); k++) {
		int r = -ENOMEM;

		for (uint64_t n = 1; r == -ENOMEM && n < 64; n++) {
			struct blb_req a;
			struct bl_list l;

			fill(&a, all_types[k]);
			bl_list_init(&l);
			/* a list with bytes in it already, as a caller's */
			ck_assert_int_eq(bl_list_append(&l, "prefix", 6), 0);
			tu_alloc_install(n, 1);
			r = blb_req_encode(&a, 4096, &l);
			tu_alloc_uninstall();
			if (r)
				tu_assert_list_eq(&l, "prefix", 6);
			ck_assert(r == 0 || r == -ENOMEM);
			blb_req_clear(&a);
			bl_list_clear(&l);
		}
		ck_assert_int_eq(r, 0);
	}
}
END_TEST

START_TEST(decode_without_memory_says_enomem_with_the_tag)
{
	for (size_t k = 0; k < sizeof(all_types) / sizeof(all_types[0]); k++) {
		size_t len;
		unsigned char *p = encoded(all_types[k], &len);
		int r = -ENOMEM;

		for (uint64_t n = 1; r == -ENOMEM && n < 64; n++) {
			struct blb_req q;
			struct bl_list l;

			bl_list_init(&l);
			ck_assert_int_eq(bl_list_append(&l, p, len), 0);
			tu_alloc_install(n, 1);
			r = blb_req_decode(all_types[k], &l, &q);
			tu_alloc_uninstall();
			ck_assert(r == 0 || r == -ENOMEM);
			if (r == -ENOMEM) {
				ck_assert_uint_eq(q.tag,
						  0x1122334455667788ull);
				tu_assert_list_eq(&l, p, len);
			}
			blb_req_clear(&q);
			bl_list_clear(&l);
		}
		ck_assert_int_eq(r, 0);
		free(p);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("blbench_proto");
	TCase *tc = tcase_create("request");

	tcase_add_test(tc, every_type_round_trips_field_for_field);
	tcase_add_test(tc, write_data_starts_at_the_padded_header_and_is_moved);
	tcase_add_test(tc, every_truncation_is_refused_and_leaves_the_frame);
	tcase_add_test(tc, bad_fields_are_refused);
	tcase_add_test(tc,
		write_data_off_inside_the_header_or_past_the_end_is_refused);
	tcase_add_test(tc, encode_without_memory_leaves_the_list_as_it_was);
	tcase_add_test(tc, decode_without_memory_says_enomem_with_the_tag);
	suite_add_tcase(s, tc);
	return tu_run(s);
}
