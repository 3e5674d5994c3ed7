/* SPDX-License-Identifier: MIT */
/*
 * blbench_proto.c - the parsers both ends of blbench's TCP protocol share
 * (blbench_proto.h): a HOST:PORT address, and a name a peer sent.  Only
 * libc and libbufferlist are called from here.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <string.h>
#include "blbench_target.h"
#include "blbench_proto.h"

/* "HOST:PORT" or "[V6]:PORT" into its parts. */
int blb_split_hostport(const char *s, char *host, size_t hlen, char *port,
		       size_t plen)
{
	const char *colon;
	size_t n;

	if (*s == '[') {
		const char *end = strchr(s, ']');

		if (!end || end[1] != ':')
			return -EINVAL;
		n = (size_t)(end - s - 1);
		colon = end + 1;
		s++;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -EINVAL;
		n = (size_t)(colon - s);
	}
	if (n == 0 || n >= hlen || !colon[1] || strlen(colon + 1) >= plen)
		return -EINVAL;
	memcpy(host, s, n);
	host[n] = 0;
	strcpy(port, colon + 1);
	return 0;
}

/* A plain object or run name: what a server will make a file of. */
bool blb_plain_name(const struct bl_list *l, char *out, size_t len)
{
	size_t n = bl_list_length(l);

	if (n == 0 || n >= len || n >= BLB_NAME_MAX)
		return false;
	bl_list_copy_out(l, 0, n, out);
	out[n] = 0;
	if (out[0] == '.' || strlen(out) != n || strchr(out, '/'))
		return false;
	return true;
}
