/* SPDX-License-Identifier: MIT */
/*
 * rados_object.c - a list written to a Ceph object without a copy (the
 * OSD gets the list's own segments), appended to, and read back as
 * Ceph's receive buffers (again no copy); then an omap entry beside the
 * data, and a compound write and read, each one atomic round trip.  The
 * cluster comes from
 * $CEPH_CONF (else the ceph tools' search) and the pool from
 * $BL_CEPH_POOL, which `make check-ceph` sets for its throw-away cluster.
 * Build: cc rados_object.c $(pkg-config --cflags --libs bufferlist-ceph)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bufferlist.h>
#include <bufferlist/ceph.h>

#define OID "bl-example-object"

/* Calls return 0 (or a count) or a negative errno; conditions must hold. */
static void die(const char *what, int err)
{
	fprintf(stderr, "rados_object: %s%s%s\n", what, err ? ": " : "",
		err ? strerror(err) : "");
	exit(1);
}
#define CHECK(call) do {						\
		long rc_ = (long)(call);				\
		if (rc_ < 0)						\
			die(#call, (int)-rc_);				\
	} while (0)

/* An omap pair, lent for the call (bl_list_append_list() would keep it). */
static int print_pair(const char *key, const struct bl_list *val, void *arg)
{
	(void)arg;
	printf("omap %s: %zu bytes\n", key, bl_list_length(val));
	return 0;
}

/* The README's omap and compound operation. */
static int omap_and_ops(struct bl_rados *r, const struct bl_list *obj,
			const struct bl_list *more)
{
	struct bl_list hdr = BL_LIST_INIT(hdr), got = BL_LIST_INIT(got);
	const char *keys[] = { "trailer" };
	const struct bl_list *vals[] = { more };
	struct bl_rados_write_op *op;
	struct bl_rados_read_op *rop;
	uint64_t size = 0;
	int e;

	/* omap: values are lists, shared on the way in, Ceph's buffers out */
	CHECK(bl_rados_omap_set(r, OID, keys, vals, 1));
	CHECK(bl_rados_omap_get(r, OID, keys, 1, print_pair, NULL));

	/* one atomic write: only while the object still starts with its
	 * header, replace the data and index it */
	CHECK(bl_list_substr_of(&hdr, obj, 0, 4));
	op = bl_rados_create_write_op();
	if (!op)
		die("bl_rados_create_write_op", ENOMEM);
	CHECK(bl_rados_write_op_cmpext(op, &hdr, 0, NULL));
	CHECK(bl_rados_write_op_write_full(op, more));
	CHECK(bl_rados_write_op_omap_set(op, keys, vals, 1));
	e = bl_rados_write_op_operate(op, r, OID);
	bl_rados_release_write_op(op);
	if (BL_RADOS_CMPEXT_MISMATCH(e))
		die("someone else changed the header", 0);
	CHECK(e);

	/* one round trip reads the data, its size and the omap */
	rop = bl_rados_create_read_op();
	if (!rop)
		die("bl_rados_create_read_op", ENOMEM);
	CHECK(bl_rados_read_op_read(rop, 0, 4096, &got, NULL));
	CHECK(bl_rados_read_op_stat(rop, &size, NULL, NULL));
	CHECK(bl_rados_read_op_omap_get(rop, NULL, NULL, 16, NULL, print_pair,
					NULL, NULL));
	e = bl_rados_read_op_operate(rop, r, OID);
	bl_rados_release_read_op(rop);
	CHECK(e);
	e = size == bl_list_length(more) && bl_list_contents_equal(&got, more);
	printf("compound write and read: %s\n", e ? "equal" : "DIFFERENT");
	bl_list_clear(&hdr);
	bl_list_clear(&got);
	return e ? 0 : 1;
}

int main(void)
{
	struct bl_list obj = BL_LIST_INIT(obj), more = BL_LIST_INIT(more);
	struct bl_list back = BL_LIST_INIT(back);
	const char *pool = getenv("BL_CEPH_POOL");
	struct bl_ptr body;
	struct bl_rados *r;
	uint64_t size;
	int err = 0;

	if (!pool || !*pool) {
		fprintf(stderr, "rados_object: set BL_CEPH_POOL (and CEPH_CONF) "
			"to a pool to write in\n");
		return 2;
	}
	r = bl_rados_open(getenv("CEPH_CONF"), pool, &err);
	if (!r) {
		fprintf(stderr, "rados_object: cannot open pool %s: %s\n", pool,
			strerror(-err));
		return 1;
	}

	/* a header and a 1 MiB body in an aligned raw of its own */
	CHECK(bl_encode_u32(&obj, 0x6a626f6c));		/* "lobj" */
	CHECK(bl_ptr_alloc_aligned(&body, 1 << 20, 4096));
	memset(bl_ptr_data(&body), 'x', 1 << 20);
	CHECK(bl_list_append_ptr_move(&obj, &body));
	CHECK(bl_rados_write_full(r, OID, &obj));
	/* appending: a second list goes after the first */
	CHECK(bl_list_append(&more, "-the end-", 9));
	CHECK(bl_rados_append(r, OID, &more));
	CHECK(bl_list_append_list(&obj, &more));	/* what the object holds */

	CHECK(bl_rados_stat(r, OID, &size, NULL));
	CHECK(bl_rados_read(r, OID, 0, (size_t)size, &back));
	printf("object %s: %llu bytes, read back in %u segments: %s\n", OID,
	       (unsigned long long)size, bl_list_num_buffers(&back),
	       bl_list_contents_equal(&back, &obj) ? "equal" : "DIFFERENT");
	err = bl_list_contents_equal(&back, &obj) ? 0 : 1;
	err |= omap_and_ops(r, &obj, &more);

	CHECK(bl_rados_remove(r, OID));
	bl_rados_close(r);	/* the lists read stay valid */
	bl_list_clear(&obj);
	bl_list_clear(&more);
	bl_list_clear(&back);
	return err;
}
