/* SPDX-License-Identifier: MIT */
/*
 * lz4_int.h - what src/lz4/lz4.c shares with its tests.  Never installed.
 */
#ifndef BUFFERLIST_LZ4_INT_H
#define BUFFERLIST_LZ4_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <bufferlist/codec.h>

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
