/* SPDX-License-Identifier: MIT */
/*
 * ceph_int.h - internals of the Ceph bridge that its tests look at.
 * Not installed; not exported by libbufferlist_ceph.so.
 */
#ifndef BUFFERLIST_CEPH_INT_H
#define BUFFERLIST_CEPH_INT_H

#include <stdint.h>
#include <bufferlist/common.h>

BL_BEGIN_DECLS

/*
 * Ceph buffers currently held by claimed raws that from_ceph() made: +1
 * per raw made, -1 when its free callback drops the Ceph buffer.
 */
long bl__ceph_live_ptrs(void);

/*
 * A read's result from librados' int @rv and the length @got of its
 * answer: the bytes read (also 2 GiB and more, which @rv gives negative),
 * or @rv's negative errno.
 */
int64_t bl__ceph_read_result(int rv, uint64_t got);

BL_END_DECLS

#endif /* BUFFERLIST_CEPH_INT_H */
