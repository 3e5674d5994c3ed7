/* SPDX-License-Identifier: MIT */
/*
 * blbench_proto.h - the wire protocol between the tcp:HOST:PORT target
 * (blbench_tcp.c) and `blbench serve` (blbench_serve.c): message types,
 * limits, the request (struct blb_req, its one encoder and one decoder)
 * and the two parsers both ends need (blbench_proto.c).  Only those two
 * files include it.
 */
#ifndef BLBENCH_PROTO_H
#define BLBENCH_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <bufferlist.h>
#include "blbench_target.h"	/* BLB_NAME_MAX */

/*
 * The remote target speaks framed messages (bufferlist/msgr.h) over one TCP
 * connection.  Every request carries a tag the reply echoes, so -t
 * operations are in flight at once; the server answers each when its disk
 * is done.  All integers little-endian (bl_encode_*):
 *
 *   request  = tag u64, flags u32 (TCP_DIRECT), then by type:
 *     HELLO     -                     -> room u64, slots u32, mem_align u32,
 *                                        off_align u32, max_payload u64,
 *                                        desc bytes, blk_align u32
 *                                        (or, res < 0: reason bytes)
 *     WRITE     data_off u32, objno u64, off u64, span u64, name bytes,
 *               zeros up to data_off, then the op's bytes (data_off:
 *               BLB_REQ_WRITE_HEAD + the name's length, rounded up to the
 *               server's alignment)
 *     READ      objno u64, off u64, span u64, len u64, name bytes
 *                                     -> the bytes read
 *     REMOVE    objno u64, name bytes
 *     META_PUT  run bytes, metadata bytes
 *     META_GET  run bytes             -> the metadata
 *     META_DEL  run bytes
 *     LIST      prefix bytes (empty:  -> count u32, count x name bytes
 *               every name)
 *   reply    = tag u64, res i64 (bytes or -errno), then what the type returns
 *
 * The zero-copy path end to end: a WRITE's payload is the request header
 * followed by the op's own segments, shared (the pattern slice and its
 * header raw; bl_msgr_send uses SENDMSG_ZC for large frames).  The client
 * pads the request header to the server's O_DIRECT alignment, and the
 * server's connections receive large payloads into raws of that alignment
 * (align_data, align), so the data after the header lands aligned and goes to
 * bl_uring_write() on an O_DIRECT file without being copied again.  With
 * --direct the op's own header fills the server's file system block
 * (blk_align in the HELLO reply), so the op's body starts on a block there
 * as it does on a local file.
 *
 * A server treats its peers as untrusted: names are plain file names, a
 * frame that does not parse or a request that does not decode closes that
 * connection only (the messenger logs why), and other clients go on.
 */
enum {
	T_HELLO = 1,
	T_WRITE,
	T_READ,
	T_REMOVE,
	T_META_PUT,
	T_META_GET,
	T_META_DEL,
	T_LIST,
	T_REPLY = 100,
};

#define TCP_DIRECT 1u
#define TCP_MAX_PAYLOAD ((size_t)(1u << 30) + (1u << 20))	/* -b up to 1G */
#define TCP_MAX_OFFSET (1ull << 44)	/* no object offset beyond 16 TiB */

/* A WRITE's bytes before its name's: tag, flags, data_off, objno, off,
 * span and the name's u32 length. */
#define BLB_REQ_WRITE_HEAD (8 + 4 + 4 + 3 * 8 + 4)

/*
 * A request: what the table above lays out, one field per value, for
 * every type (a type ignores the fields it does not carry).
 * @type:     T_* (the frame's type, not in its payload).
 * @name:     the object name (WRITE, READ, REMOVE), the run name (META_*)
 *            or the prefix (LIST, may be empty); a plain name otherwise.
 * @body:     WRITE: the op's bytes; META_PUT: the metadata.  The encoder
 *            shares them (no copy); the decoder moves them out of the
 *            frame (WRITE, starting at data_off) or shares them
 *            (META_PUT), so blb_req_clear() releases them.
 */
struct blb_req {
	uint16_t type;
	uint64_t tag;
	uint32_t flags;
	uint32_t data_off;	/* WRITE */
	uint64_t objno;		/* WRITE, READ, REMOVE */
	uint64_t off, span;	/* WRITE, READ */
	uint64_t len;		/* READ */
	char name[BLB_NAME_MAX];
	struct bl_list body;
};

/* @q empty (every field 0, @body an empty list) for @type. */
void blb_req_init(struct blb_req *q, uint16_t type);
/* Releases @q's body; @q may be used again after blb_req_init(). */
void blb_req_clear(struct blb_req *q);

/*
 * Appends @q to @l, a WRITE's bytes after zeros up to the next multiple of
 * @pad (> 0) past its header, whose data_off says where they start (also
 * written back to @q).  Shares @q's body.
 * Return: 0, or -ENOMEM (what was appended is taken back: @l as it was).
 */
int blb_req_encode(struct blb_req *q, size_t pad, struct bl_list *l);

/*
 * A request of @type from the frame @payload (a peer's: untrusted).  A
 * WRITE's bytes are moved from @payload into @q->body (no copy).
 * Return: 0; -EBADMSG for anything that does not decode (a type the
 * protocol lacks, unknown flags, a truncated field, an offset or span
 * beyond TCP_MAX_OFFSET, a READ over TCP_MAX_PAYLOAD, a name that is not
 * plain, a WRITE whose data_off is inside its header or past its end);
 * -ENOMEM.  On failure @q holds what decoded before (its tag, when
 * -ENOMEM: what a reply needs) and no body; @payload is unchanged.
 */
int blb_req_decode(uint16_t type, struct bl_list *payload,
		   struct blb_req *q);

/* "HOST:PORT" or "[V6]:PORT" into its parts.  0 or -EINVAL. */
int blb_split_hostport(const char *s, char *host, size_t hlen, char *port,
		       size_t plen);
/*
 * A plain object or run name (what a server will make a file of) from @l
 * into @out, NUL-terminated; false for anything else.
 */
bool blb_plain_name(const struct bl_list *l, char *out, size_t len);

#endif /* BLBENCH_PROTO_H */
