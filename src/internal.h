/* SPDX-License-Identifier: MIT */
/*
 * internal.h - transitional: every layer's private header at once, for the
 * files not yet moved to the headers of their own layer (base_int.h,
 * pool_int.h, raw_int.h, list_int.h, iter_int.h).  Never installed.
 */
#ifndef BUFFERLIST_INTERNAL_H
#define BUFFERLIST_INTERNAL_H

#include "iter_int.h"	/* first: config.h sets _GNU_SOURCE */
#include <bufferlist.h>

#endif /* BUFFERLIST_INTERNAL_H */
