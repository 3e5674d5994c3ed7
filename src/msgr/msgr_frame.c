/* SPDX-License-Identifier: MIT */
/*
 * msgr_frame.c - the messenger's frame codec: encoding a frame (preamble,
 * payload, trailer) into a list, parsing one off the front of a receive
 * list, and the crcs of both; pure functions over lists, no sockets.
 *
 * Parsing is the hot path of a messenger that receives many small frames,
 * so bl_msgr_parse() has a fast path for the common case: the whole frame
 * lies inside the first segment of the receive list and does not end it.
 * Then the preamble is read in place, both crcs are computed straight over
 * the bytes, the payload becomes one slice written directly into the
 * frame's inline slot (one atomic increment on the raw), and the receive
 * list's first slice is shortened from the front: no allocation, no list
 * walk, no copy.  These moves of a lone or front slice are the list
 * layer's private API (list_int.h), which is why this lives in the
 * library.  Everything else (frames straddling segments, ending one
 * exactly, 1-byte segments) takes the general path through the iterator
 * and bl_list_splice().
 *
 * Small frames are where a messenger spends its CPU, so the crcs of short
 * runs (preambles, small payloads) skip bl_crc32c()'s dispatch and folding
 * for bl__crc32c_short() (crc32c_int.h) where the CPU has SSE4.2.
 */
#include "msgr_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <errno.h>
#include <string.h>
#include <bufferlist/msgr.h>
#include "crc32c_int.h"
#include "endian_int.h"

_Static_assert(BL_MSGR_PREAMBLE == 24 && BL_MSGR_TRAILER == 4,
	       "the wire format is fixed");
/* fill_preamble() writes magic, type and flags as one u64 */
_Static_assert(BL__MSGR_PRE_MAGIC == 0 && BL__MSGR_PRE_TYPE == 4 &&
	       BL__MSGR_PRE_FLAGS == 6 && BL__MSGR_PRE_SEQ == 8,
	       "magic, type and flags fill the preamble's first 8 bytes");

#define ENC_STACK_MAX 1024		/* copied frames built on the stack */

static __thread const char *parse_err = "";

void bl_msgr_frame_init(struct bl_msgr_frame *f)
{
	f->type = 0;
	f->flags = 0;
	f->seq = 0;
	bl_list_init(&f->payload);
}

void bl_msgr_frame_release(struct bl_msgr_frame *f)
{
	struct bl_list *l;
	struct bl_seg one;

	if (!f)
		return;
	l = &f->payload;
	/* what the parser's fast path makes: one inline slice, nothing else */
	if (bl__list_take_one(l, &one)) {
		bl__raw_put(one.raw);
		return;
	}
	bl_list_clear(l);
}

void bl__msgr_gather(const struct bl_list *l, size_t off, size_t n, void *dst)
{
	struct bl_iter it;
	const char *d;
	size_t got;
	char *o = dst;

	if (bl_list_length(l)) {
		const struct bl_seg *s = bl__list_front(l);

		if (off + n <= s->len) {
			memcpy(dst, s->data + off, n);
			return;
		}
	}
	bl_iter_init(&it, l, off);
	while (n && (got = bl_iter_get_ptr_and_advance(&it, n, &d))) {
		memcpy(o, d, got);
		o += got;
		n -= got;
	}
}

/* A crc over a short run: bl__crc32c_short() where the CPU has SSE4.2. */
static uint32_t crc_fast(uint32_t crc, const void *p, size_t n)
{
#if defined(__x86_64__)
	if (bl__likely(__builtin_cpu_supports("sse4.2")))
		return bl__crc32c_short(crc, p, n);
#endif
	return bl_crc32c(crc, p, n);
}

#if defined(__x86_64__)
/*
 * The preamble's crc from the values it holds rather than from the bytes
 * just stored: an 8-byte load that spans several narrower stores cannot
 * be forwarded from them and waits for them to reach the cache, and a crc
 * over the fresh preamble made three such loads, the bulk of a small
 * frame's encoding.  The crc32 instructions take their operand's bytes
 * least significant first, the order they have on the wire.
 */
__attribute__((target("sse4.2"))) static uint32_t
preamble_crc_sse42(uint64_t head, uint64_t seq, uint32_t len)
{
	uint64_t crc = _mm_crc32_u64(BL_MSGR_CRC_SEED, head);

	crc = _mm_crc32_u64(crc, seq);
	return _mm_crc32_u32((uint32_t)crc, len);
}
#endif

static void fill_preamble(unsigned char *p, uint16_t type, uint16_t flags,
			  uint64_t seq, uint32_t len)
{
	uint64_t head = BL_MSGR_MAGIC | (uint64_t)type << 32 |
			(uint64_t)flags << 48;

	/* magic, type and flags: one store */
	bl__le64_store(p + BL__MSGR_PRE_MAGIC, head);
	bl__le64_store(p + BL__MSGR_PRE_SEQ, seq);
	bl__le32_store(p + BL__MSGR_PRE_LEN, len);
#if defined(__x86_64__)
	if (bl__likely(__builtin_cpu_supports("sse4.2"))) {
		bl__le32_store(p + BL__MSGR_PRE_CRC,
			       preamble_crc_sse42(head, seq, len));
		return;
	}
#endif
	bl__le32_store(p + BL__MSGR_PRE_CRC,
		       bl_crc32c(BL_MSGR_CRC_SEED, p, BL__MSGR_PRE_CRC));
}

void bl__msgr_preamble(unsigned char *p, uint16_t type, uint64_t seq,
		       uint32_t len)
{
	fill_preamble(p, type, 0, seq, len);
}

/*
 * Copies the @n payload bytes of @l (n > 0) to @dst and returns their crc,
 * taken over the source when it is one slice: the copy's bytes were just
 * stored, and loads of them would wait for the stores (see above).
 */
static uint32_t copy_crc(const struct bl_list *l, size_t n,
			 unsigned char *dst)
{
	const struct bl_seg *s = bl__list_front(l);
	const char *src;
	uint32_t crc;

	if (s->len < n) {
		bl__msgr_gather(l, 0, n, dst);
		return crc_fast(BL_MSGR_CRC_SEED, dst, n);
	}
	src = s->data;
	crc = crc_fast(BL_MSGR_CRC_SEED, src, n);
	memcpy(dst, src, n);
	return crc;
}

int bl_msgr_encode(struct bl_list *out, uint16_t type, uint64_t seq,
		   const struct bl_list *payload, unsigned flags)
{
	size_t plen = payload ? bl_list_length(payload) : 0;
	unsigned char pre[BL_MSGR_PREAMBLE], tr[BL_MSGR_TRAILER];

	if (!out || (flags & ~(0xffffu | BL_MSGR_ENC_COPY)) || payload == out)
		return -EINVAL;
	if (plen > BL_MSGR_PAYLOAD_LIMIT)
		return -E2BIG;
	if ((flags & BL_MSGR_ENC_COPY) && plen <= ENC_STACK_MAX) {
		/*
		 * The whole frame written in place when the append buffer
		 * has room (else built on the stack and appended in one
		 * go): one copy of the payload, and crcs that read no byte
		 * just written.
		 */
		unsigned char buf[BL_MSGR_OVERHEAD + ENC_STACK_MAX];
		unsigned char *f = bl__list_append_room(out,
						BL_MSGR_OVERHEAD + plen);
		unsigned char *w = f ? f : buf;

		fill_preamble(w, type, (uint16_t)flags, seq, (uint32_t)plen);
		bl__le32_store(w + BL_MSGR_PREAMBLE + plen,
			       plen ? copy_crc(payload, plen,
					       w + BL_MSGR_PREAMBLE)
				    : BL_MSGR_CRC_SEED);
		return f ? 0 : bl_list_append(out, buf,
					      BL_MSGR_OVERHEAD + plen);
	}
	fill_preamble(pre, type, (uint16_t)flags, seq, (uint32_t)plen);
	/* bl_list_crc32c caches per raw: a payload sent to many peers, or
	 * again, costs O(segments) the next time */
	bl__le32_store(tr, plen ? bl_list_crc32c(payload, BL_MSGR_CRC_SEED)
		      : BL_MSGR_CRC_SEED);

	if (!plen)
		return bl__list_append2(out, pre, sizeof(pre), tr, sizeof(tr));
	/* all or nothing, allocations first: a failure leaves @out as it was */
	return bl__list_append_frame(out, pre, sizeof(pre), payload,
				     flags & BL_MSGR_ENC_COPY, tr, sizeof(tr));
}

uint32_t bl__msgr_crc_range(const struct bl_list *l, size_t off, size_t n,
			    uint32_t crc)
{
	struct bl_iter it;
	const char *d;
	size_t got;

	bl_iter_init(&it, l, off);
	while (n && (got = bl_iter_get_ptr_and_advance(&it, n, &d))) {
		crc = bl_crc32c(crc, d, got);
		n -= got;
	}
	return crc;
}

static inline int bad(const char *why, int err)
{
	parse_err = why;
	return err;
}

/* The crc routine parse_body() is built for. */
typedef uint32_t (*crc_fn)(uint32_t crc, const void *p, size_t n);

/*
 * Checks the preamble at @p (@have bytes of the list, at least 4).
 * Return: 1 when the frame of *@len payload bytes is valid so far, 0 when
 * the preamble is incomplete, or -errno.
 */
static inline __attribute__((always_inline)) int
check_preamble(const unsigned char *p, size_t have, size_t max,
	       uint32_t *len, crc_fn crc)
{
	if (bl__unlikely(bl__msgr_pre_magic(p) != BL_MSGR_MAGIC))
		return bad("bad magic", -EBADMSG);
	if (have < BL_MSGR_PREAMBLE)
		return 0;
	if (bl__unlikely(crc(BL_MSGR_CRC_SEED, p, BL__MSGR_PRE_CRC) !=
			 bl__msgr_pre_crc(p)))
		return bad("bad header crc", -EBADMSG);
	*len = bl__msgr_pre_len(p);
	if (bl__unlikely(*len > BL_MSGR_PAYLOAD_LIMIT))
		return bad("impossible payload length", -EBADMSG);
	if (bl__unlikely(*len > max))
		return bad("payload over the size limit", -E2BIG);
	return 1;
}

/*
 * The frame of @len payload bytes at the front of @in spans slices or
 * ends the first one: the iterator and a splice do the work.
 */
int bl__msgr_parse_general(struct bl_list *in, struct bl_msgr_frame *f,
			   const unsigned char *p, uint32_t len, size_t done,
			   uint32_t crc)
{
	unsigned char tr[BL_MSGR_TRAILER];
	struct bl_iter it;

	bl__msgr_gather(in, BL_MSGR_PREAMBLE + len, sizeof(tr), tr);
	crc = bl__msgr_crc_range(in, BL_MSGR_PREAMBLE + done, len - done, crc);
	if (crc != bl__le32_load(tr))
		return bad("bad payload crc", -EBADMSG);
	f->type = bl__msgr_pre_type(p);
	f->flags = bl__msgr_pre_flags(p);
	f->seq = bl__msgr_pre_seq(p);
	bl_list_init(&f->payload);
	bl_iter_init(&it, in, BL_MSGR_PREAMBLE);
	if (bl_iter_copy_list(&it, len, &f->payload)) {
		bl_list_clear(&f->payload);
		return bad("out of memory", -ENOMEM);
	}
	/* from offset 0 no slice is cut with pieces kept on both sides:
	 * cannot fail */
	bl_list_splice(in, 0, BL_MSGR_OVERHEAD + (size_t)len, NULL);
	return 1;
}

/*
 * A frame whose preamble @p and payload of @len bytes lie in one slice:
 * false when the payload's crc is wrong, else @f's header fields are set.
 */
static inline __attribute__((always_inline)) bool
frame_head(struct bl_msgr_frame *f, const unsigned char *p, uint32_t len,
	   crc_fn crc)
{
	const unsigned char *pl = p + BL_MSGR_PREAMBLE;

	if (crc(BL_MSGR_CRC_SEED, pl, len) != bl__le32_load(pl + len))
		return false;
	f->type = bl__msgr_pre_type(p);
	f->flags = bl__msgr_pre_flags(p);
	f->seq = bl__msgr_pre_seq(p);
	return true;
}

/* Everything but the crc routine, which the callers below pick. */
static inline __attribute__((always_inline)) int
parse_body(struct bl_list *in, struct bl_msgr_frame *f, size_t max_payload,
	   crc_fn crc)
{
	size_t have = bl_list_length(in), total;
	unsigned char buf[BL_MSGR_PREAMBLE];
	const unsigned char *p;
	const struct bl_seg *s;
	uint32_t len;
	int ret;

	if (!max_payload)
		max_payload = BL_MSGR_DEFAULT_MAX_PAYLOAD;
	if (have < 4)
		return 0;
	s = bl__list_front(in);
	if (bl__likely(s->len >= BL_MSGR_PREAMBLE)) {
		p = (const unsigned char *)s->data;
	} else {
		bl__msgr_gather(in, 0, have < sizeof(buf) ? have : sizeof(buf),
				buf);
		p = buf;
	}
	ret = check_preamble(p, have, max_payload, &len, crc);
	if (ret <= 0)
		return ret;
	total = BL_MSGR_OVERHEAD + (size_t)len;
	if (have < total)
		return 0;
	if (s->len == total && have == total && bl__list_lone(in)) {
		/*
		 * The frame is all the list holds, in its one inline slice
		 * (a request/response connection receives one frame per
		 * receive): the slice's reference moves into the payload and
		 * the list is left empty, as bl_msgr_frame_release() empties
		 * a payload - no splice, no iterator, no atomic.
		 */
		struct bl_seg one = { NULL, NULL, 0 };

		if (bl__unlikely(!frame_head(f, p, len, crc)))
			return bad("bad payload crc", -EBADMSG);
		bl__list_take_one(in, &one);	/* lone: cannot fail */
		if (bl__likely(len)) {
			bl__list_set_one(&f->payload, one.raw,
					 one.data + BL_MSGR_PREAMBLE, len);
		} else {
			bl_list_init(&f->payload);
			bl__raw_put(one.raw);
		}
		return 1;
	}
	if (bl__unlikely(s->len <= total))
		return bl__msgr_parse_general(in, f, p, len, 0,
					      BL_MSGR_CRC_SEED);

	/* fast path: the frame is inside the first slice, which goes on */
	{
		struct bl_list *pay = &f->payload;

		if (bl__unlikely(!frame_head(f, p, len, crc)))
			return bad("bad payload crc", -EBADMSG);
		if (bl__likely(len))
			bl__list_set_one(pay, bl__raw_get(s->raw),
					 s->data + BL_MSGR_PREAMBLE, len);
		else
			bl_list_init(pay);
		bl__list_trim_front(in, s, total);
		return 1;
	}
}

static int parse_any(struct bl_list *in, struct bl_msgr_frame *f,
		     size_t max_payload)
{
	return parse_body(in, f, max_payload, bl_crc32c);
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static int
parse_sse42(struct bl_list *in, struct bl_msgr_frame *f, size_t max_payload)
{
	return parse_body(in, f, max_payload, bl__crc32c_short);
}
#endif

int bl_msgr_parse(struct bl_list *in, struct bl_msgr_frame *f,
		  size_t max_payload)
{
#if defined(__x86_64__)
	if (bl__likely(__builtin_cpu_supports("sse4.2")))
		return parse_sse42(in, f, max_payload);
#endif
	return parse_any(in, f, max_payload);
}

const char *bl_msgr_parse_error(void)
{
	return parse_err;
}
