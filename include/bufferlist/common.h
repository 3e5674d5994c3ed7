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

/*
 * BL_API_INLINE marks a hot function that its header defines inline, so
 * that the common case costs the caller no call, and that the library
 * exports as well, under the same name, for callers that cannot compile
 * C (FFI): the library builds the same bodies once more, non-static, in a
 * file that defines BL__EXPORT_INLINES (src/core/api_inline.c).  The inline
 * body calls the library for anything but the common case.
 */
#ifdef BL__EXPORT_INLINES
#define BL_API_INLINE BL_API
#else
#define BL_API_INLINE static inline
#endif

/* Private: the branch hint of the inline fast paths. */
#if defined(__GNUC__)
#define BL__LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define BL__LIKELY(x) (x)
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
