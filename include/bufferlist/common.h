/* SPDX-License-Identifier: MIT */
/*
 * common.h - export macro, version and small shared definitions of
 * libbufferlist.
 *
 * Every public declaration carries BL_API; the library is built with
 * -fvisibility=hidden and a version script, so only these symbols are
 * exported.
 */
#ifndef BUFFERLIST_COMMON_H
#define BUFFERLIST_COMMON_H

#if defined(__GNUC__) && defined(BL_BUILDING_LIBRARY)
#define BL_API __attribute__((visibility("default")))
#else
#define BL_API
#endif

#ifdef __cplusplus
#define BL_BEGIN_DECLS extern "C" {
#define BL_END_DECLS }
#else
#define BL_BEGIN_DECLS
#define BL_END_DECLS
#endif

/* BL_VERSION_MAJOR, _MINOR, _PATCH and _STRING */
#include <bufferlist/version.h>

#endif /* BUFFERLIST_COMMON_H */
