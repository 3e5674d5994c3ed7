/* SPDX-License-Identifier: MIT */
/*
 * blbench_proto.c - what both ends of blbench's TCP protocol share
 * (blbench_proto.h): the request's encoder and decoder, a HOST:PORT
 * address, and a name a peer sent.  Only libc and libbufferlist are
 * called from here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include "blbench_target.h"
#include "blbench_proto.h"

/* "HOST:PORT" or "[V6]:PORT" into its parts. */
int blb_split_hostport(const char *s, char *host, size_t hlen, char *port,
		       size_t plen)
{
	const char *colon;
	size_t n;

	if (*s == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		n = (size_t)(end - s - 1);
		colon = end + 1;
		s++;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - s);
	}
	if (n == 0 || n >= hlen || !colon[1] || strlen(colon + 1) >= plen)
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = 0;
	strcpy(port, colon + 1);
	return 0;
}

/* A plain object or run name: what a server will make a file of. */
bool blb_plain_name(const struct bl_list *l, char *out, size_t len)
{
	size_t n = bl_list_length(l);

	if (n == 0 || n >= len || n >= BLB_NAME_MAX)
		return false;
	bl_list_copy_out(l, 0, n, out);
	out[n] = 0;
	if (out[0] == '.' || strlen(out) != n || strchr(out, '/'))
		return false;
	return true;
}

void blb_req_init(struct blb_req *q, uint16_t type)
{
	memset(q, 0, sizeof(*q));
	q->type = type;
	bl_list_init(&q->body);
}

void blb_req_clear(struct blb_req *q)
{
	bl_list_clear(&q->body);
}

/* Whether @type carries a name (every type but HELLO). */
static bool has_name(uint16_t type)
{
	return type != T_HELLO;
}

/* Encodes @q's fields after tag and flags; stops at the first error. */
static int encode_fields(struct blb_req *q, size_t pad, struct bl_list *l)
{
	size_t nlen = strlen(q->name);
	int r = 0;

	switch (q->type) {
	case T_WRITE: {
		size_t head = BLB_REQ_WRITE_HEAD + nlen;

		q->data_off = (uint32_t)((head + pad - 1) / pad * pad);
		if ((r = bl_encode_u32(l, q->data_off)) ||
		    (r = bl_encode_u64(l, q->objno)) ||
		    (r = bl_encode_u64(l, q->off)) ||
		    (r = bl_encode_u64(l, q->span)) ||
		    (r = bl_encode_bytes(l, q->name, nlen)) ||
		    (r = bl_list_append_zero(l, q->data_off - head)))
			return r;
		return bl_list_append_list(l, &q->body); /* shared */
	}
	case T_READ:
		if ((r = bl_encode_u64(l, q->objno)) ||
		    (r = bl_encode_u64(l, q->off)) ||
		    (r = bl_encode_u64(l, q->span)) ||
		    (r = bl_encode_u64(l, q->len)))
			return r;
		break;
	case T_REMOVE:
		if ((r = bl_encode_u64(l, q->objno)))
			return r;
		break;
	case T_HELLO:
		return 0;
	default:
		break;
	}
	r = bl_encode_bytes(l, q->name, nlen);
	if (r == 0 && q->type == T_META_PUT)
		r = bl_encode_list(l, &q->body);
	return r;
}

int blb_req_encode(struct blb_req *q, size_t pad, struct bl_list *l)
{
	size_t mark = bl_list_length(l);
	int r;

	if ((r = bl_encode_u64(l, q->tag)) ||
	    (r = bl_encode_u32(l, q->flags)) ||
	    (r = encode_fields(q, pad ? pad : 1, l))) {
		/* cut at the end of what was there: cannot fail */
		bl_list_splice(l, mark, bl_list_length(l) - mark, NULL);
		return r;
	}
	return 0;
}

/* The fields after tag and flags; -EBADMSG or -ENOMEM. */
static int decode_fields(struct bl_iter *it, struct blb_req *q)
{
	switch (q->type) {
	case T_WRITE:
		if (bl_decode_u32(it, &q->data_off) < 0)
			return -EBADMSG;
		/* fall through */
	case T_READ:
	case T_REMOVE:
		if (bl_decode_u64(it, &q->objno) < 0)
			return -EBADMSG;
		if (q->type == T_REMOVE)
			break;
		if (bl_decode_u64(it, &q->off) < 0 ||
		    bl_decode_u64(it, &q->span) < 0 ||
		    q->off > TCP_MAX_OFFSET || q->span > TCP_MAX_OFFSET)
			return -EBADMSG;
		if (q->type == T_READ &&
		    (bl_decode_u64(it, &q->len) < 0 ||
		     q->len > TCP_MAX_PAYLOAD))
			return -EBADMSG;
		break;
	case T_HELLO:
	case T_META_PUT:
	case T_META_GET:
	case T_META_DEL:
	case T_LIST:
		break;
	default:
		return -EBADMSG;
	}
	if (has_name(q->type)) {
		struct bl_list nl;
		int r;

		bl_list_init(&nl);
		r = bl_decode_bytes(it, &nl);
		if (r == 0 && !(q->type == T_LIST && !bl_list_length(&nl)) &&
		    !blb_plain_name(&nl, q->name, sizeof(q->name)))
			r = -EBADMSG;	/* LIST's prefix may be empty */
		bl_list_clear(&nl);
		if (r < 0)
			return r == -ENOMEM ? r : -EBADMSG;
	}
	if (q->type == T_META_PUT) {
		int r = bl_decode_bytes(it, &q->body);

		if (r < 0)
			return r == -ENOMEM ? r : -EBADMSG;
	}
	return 0;
}

int blb_req_decode(uint16_t type, struct bl_list *payload,
		   struct blb_req *q)
{
	struct bl_iter it;
	int r;

	blb_req_init(q, type);
	if (bl_iter_init(&it, payload, 0) < 0 ||
	    bl_decode_u64(&it, &q->tag) < 0 ||
	    bl_decode_u32(&it, &q->flags) < 0 || (q->flags & ~TCP_DIRECT))
		return -EBADMSG;
	r = decode_fields(&it, q);
	if (r == 0 && type == T_WRITE &&
	    (q->data_off < bl_iter_offset(&it) ||
	     q->data_off > bl_list_length(payload)))
		r = -EBADMSG;
	if (r < 0) {
		bl_list_clear(&q->body);
		return r;
	}
	if (type == T_WRITE) {
		/* the op's bytes start at data_off, aligned as the client
		 * padded them: moved, not copied (from offset 0 the splice
		 * cannot fail) */
		bl_list_splice(payload, 0, q->data_off, NULL);
		bl_list_swap(&q->body, payload);
	}
	return 0;
}
