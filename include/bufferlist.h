/* SPDX-License-Identifier: MIT */
/* bufferlist.h - everything of libbufferlist's C API. */
#ifndef BUFFERLIST_H
#define BUFFERLIST_H

#include <bufferlist/common.h>
#include <bufferlist/pool.h>
#include <bufferlist/raw.h>
#include <bufferlist/ptr.h>
#include <bufferlist/list.h>
#include <bufferlist/iter.h>
#include <bufferlist/codec.h>
#include <bufferlist/denc.h>
#include <bufferlist/crc32c.h>
#include <bufferlist/io.h>
#include <bufferlist/uring.h>
#include <bufferlist/lz4.h>
#include <bufferlist/msgr.h>

#endif /* BUFFERLIST_H */
