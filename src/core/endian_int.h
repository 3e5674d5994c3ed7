/* SPDX-License-Identifier: MIT */
/*
 * endian_int.h - little-endian loads and stores of 16, 32 and 64-bit
 * integers at any alignment, for the wire and disk formats the library
 * reads and writes (frames, denc, crc words).  memcpy() keeps them free of
 * alignment and aliasing trouble; compilers turn each into one move (and
 * a byte swap on big-endian hosts).  Never installed.
 */
#ifndef BUFFERLIST_ENDIAN_INT_H
#define BUFFERLIST_ENDIAN_INT_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline uint16_t bl__le16_load(const void *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static inline uint32_t bl__le32_load(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t bl__le64_load(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

static inline void bl__le16_store(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void bl__le32_store(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void bl__le64_store(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

#endif /* BUFFERLIST_ENDIAN_INT_H */
