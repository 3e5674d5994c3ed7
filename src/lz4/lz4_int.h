/* SPDX-License-Identifier: MIT */
/*
 * lz4_int.h - what the lz4 layer's files share, and show its tests:
 * the frame format's constants (the compressor lz4_compress.c writes
 * frames, the decoder lz4_decoder.c reads them), XXH32 (lz4_xxh32.c) and
 * the block decoder (lz4_block.c).  Calls go one way: the decoder calls
 * the block decoder and XXH32, the compressor XXH32.  Never installed.
 */
#ifndef BUFFERLIST_LZ4_INT_H
#define BUFFERLIST_LZ4_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <bufferlist/codec.h>

/* The LZ4 frame format (lz4_Frame_format.md of liblz4) */
#define BL__LZ4_FRAME_MAGIC 0x184D2204u
#define BL__LZ4_WINDOW (64u << 10)	/* how far back a match reaches */
#define BL__LZ4_HDR_MAX 19u	/* magic, FLG, BD, content size, HC */
#define BL__LZ4_UNCOMPRESSED 0x80000000u	/* block size: stored raw */
/* FLG, the header's first byte */
#define BL__LZ4_FLG_VERSION 0x40
#define BL__LZ4_FLG_INDEP 0x20
#define BL__LZ4_FLG_BCHK 0x10
#define BL__LZ4_FLG_CSIZE 0x08
#define BL__LZ4_FLG_CCHK 0x04
#define BL__LZ4_FLG_RESERVED 0x02
#define BL__LZ4_FLG_DICTID 0x01

/* Output raws (both ways) hold this much or more. */
#define BL__LZ4_OUT_CHUNK (1u << 20)

static inline size_t bl__lz4_min(size_t a, size_t b)
{
	return a < b ? a : b;
}

static inline size_t bl__lz4_max(size_t a, size_t b)
{
	return a > b ? a : b;
}

/*
 * XXH32, written from the xxHash specification.  liblz4 carries its own
 * copy but exports none of it, and its streaming form is several times
 * slower than this one, which would cap every checksummed frame.
 */
struct bl__xxh32 {
	uint32_t v[4];
	uint64_t total;		/* bytes fed so far */
	uint8_t mem[16];	/* a partial stripe */
	unsigned memsize;
	uint32_t seed;
};

void bl__xxh32_init(struct bl__xxh32 *s, uint32_t seed);
void bl__xxh32_update(struct bl__xxh32 *s, const void *p, size_t len);
uint32_t bl__xxh32_digest(const struct bl__xxh32 *s);
uint32_t bl__xxh32(const void *p, size_t len, uint32_t seed);

/*
 * Decodes one LZ4 block of @n bytes read from @it (any segmentation; the
 * bytes are read where they lie) into [@dst, @dst + @cap).  The @hist
 * bytes before @dst are the history matches may reach (0 for an
 * independent block).  Advances @it by @n on success.
 * Return: bytes written, or -EBADMSG for a malformed block (@it is then
 * somewhere inside the block).  Never reads outside the block's bytes nor
 * writes outside [@dst, @dst + @cap).
 */
ssize_t bl__lz4_block_decode(struct bl_iter *it, size_t n, char *dst,
			     size_t cap, size_t hist);

#endif /* BUFFERLIST_LZ4_INT_H */
