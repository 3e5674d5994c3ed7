/* SPDX-License-Identifier: MIT */
/*
 * lz4.h - LZ4 frame compression of lists, without coalescing them.
 *
 * Input is read segment by segment (a segment is never copied into a
 * contiguous staging buffer just to be compressed); output is written into
 * new raws appended to the output list.  The format is the LZ4 frame
 * format that the `lz4` command reads and writes.  On failure the output
 * list is exactly as it was and the input is untouched.
 */
#ifndef BUFFERLIST_LZ4_H
#define BUFFERLIST_LZ4_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <bufferlist/common.h>
#include <bufferlist/list.h>

BL_BEGIN_DECLS

/**
 * struct bl_lz4_opts - frame options (NULL: LZ4F's defaults: fast level,
 * 64 KiB linked blocks, no checksums, no content size).
 * @level:          0 (fast, the default) .. 12; 3 and up use LZ4 HC;
 *                  negative values are LZ4's faster "acceleration" levels.
 * @block_size_id:  4 (64 KiB), 5 (256 KiB), 6 (1 MiB), 7 (4 MiB); 0 = 4.
 * @block_independent: blocks do not refer to earlier blocks.
 * @content_checksum:  XXH32 of the whole content after the last block.
 * @content_size:      the decompressed size in the frame header.
 */
struct bl_lz4_opts {
	int level;
	int block_size_id;
	bool block_independent;
	bool content_checksum;
	bool content_size;
};

/**
 * bl_lz4_compress() - compresses all of @in (borrowed, read in place) into
 * one LZ4 frame appended to @out.
 * Return: bytes appended to @out, or -errno: -EINVAL (@in or @out is
 * NULL, block_size_id not 0 or 4..7, level above 12, @in longer than
 * SSIZE_MAX / 2), -ENOMEM.
 */
BL_API ssize_t bl_lz4_compress(const struct bl_list *in, struct bl_list *out,
			       const struct bl_lz4_opts *opts);

/**
 * bl_lz4_decompress() - decodes every frame of @in (any segmentation, with
 * the same result; skippable frames are skipped) and appends the bytes to
 * @out.
 * @max_out: the most bytes it may produce (0: no limit), against
 *           decompression bombs.
 * Legacy frames (`lz4 -l`) and frames that need a dictionary (a DictID in
 * the header) are refused as -EBADMSG.  An empty @in is zero frames: 0.
 * Return: bytes appended, or -errno: -EBADMSG (corrupt or truncated
 * input, bad magic, checksum mismatch, garbage after a frame, a match
 * offset of 0, a legacy or dictionary frame), -E2BIG (@max_out exceeded),
 * -ENOMEM, -EINVAL (@in or @out is NULL).
 */
BL_API ssize_t bl_lz4_decompress(const struct bl_list *in,
				 struct bl_list *out, size_t max_out);

/* A streaming decoder for data that arrives in pieces. */
struct bl_lz4_decoder;

/**
 * bl_lz4_decoder_new() - a decoder; @max_out counts the whole stream (0: no
 * limit).
 * Return: new, or NULL with errno ENOMEM.
 */
BL_API struct bl_lz4_decoder *bl_lz4_decoder_new(size_t max_out);

/**
 * bl_lz4_decoder_feed() - decodes what it can of @in (borrowed; the decoder
 * keeps references to, or copies of, an incomplete block's bytes) and
 * appends the output to @out.  A failing feed appends nothing; after an
 * error the decoder only accepts bl_lz4_decoder_free().
 * In a frame of linked blocks the next block may refer to the last 64 KiB
 * of output already handed out, which the decoder reads again where it
 * lies: do not write into those bytes (bl_list_copy_in) until the frame
 * has ended.
 * Return: bytes appended (0 when no block was completed), or -errno:
 * -EBADMSG (not LZ4 frames), -E2BIG (@max_out exceeded), -ENOMEM, -EINVAL
 * (@d, @in or @out is NULL, or an earlier call failed).
 */
BL_API ssize_t bl_lz4_decoder_feed(struct bl_lz4_decoder *d,
				   const struct bl_list *in,
				   struct bl_list *out);

/**
 * bl_lz4_decoder_end() - the stream is over; checks that it ended between
 * frames and changes nothing (the decoder may still be fed or freed).
 * Return: 0, or -EBADMSG when a frame is incomplete (or bytes that are
 * not a whole frame are pending), -EINVAL (@d is NULL, or an earlier
 * call failed).
 */
BL_API int bl_lz4_decoder_end(struct bl_lz4_decoder *d);

/**
 * bl_lz4_decoder_free() - drops the decoder's references and frees @d
 * (takes it).  NULL is a no-op.
 * Return: nothing; it cannot fail.
 */
BL_API void bl_lz4_decoder_free(struct bl_lz4_decoder *d);

BL_END_DECLS

#endif /* BUFFERLIST_LZ4_H */
