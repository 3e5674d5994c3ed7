/* SPDX-License-Identifier: MIT */
/*
 * common.h - export macro and small shared definitions of libbufferlist.
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

#define BL_VERSION_MAJOR 0
#define BL_VERSION_MINOR 1
#define BL_VERSION_PATCH 0
#define BL_VERSION_STRING "0.1.0"

#endif /* BUFFERLIST_COMMON_H */
