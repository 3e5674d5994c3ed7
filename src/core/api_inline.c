/* SPDX-License-Identifier: MIT */
/*
 * api_inline.c - the exported copies of the public headers' inline
 * functions (list.h's init and counts, iter.h's moves, codec.h's
 * fixed-width decoders).  The headers define them static inline, so that
 * a C caller pays no call in the common case; here, with
 * BL__EXPORT_INLINES, the same bodies become the library's symbols of the
 * same names, for callers that cannot inline C (FFI, a dlsym).  Nothing in
 * the library calls these: its own files get the inline copies too.
 */
#define BL__EXPORT_INLINES	/* before any header: common.h reads it */
#include "base_int.h"	/* first: config.h sets _GNU_SOURCE */

/*
 * The headers' definitions are their own declarations; -Wmissing-
 * prototypes asks for another only because here they are not static.
 */
#pragma GCC diagnostic ignored "-Wmissing-prototypes"

#include <bufferlist/codec.h>
