/* SPDX-License-Identifier: MIT */
/*
 * msgbench_util.c - what msgbench's parse, ours and base parts share and
 * call down into, never back: the exit when it cannot go on, the
 * payload's bytes, the wire format written and parsed by hand (the
 * baseline's; ours goes through bufferlist/msgr.h), the loopback sockets
 * and the server's message count.  The helpers too small to be called on
 * a measured path are inline in msgbench.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <bufferlist.h>
#include <bufferlist/msgr.h>
#include "msgbench.h"

void mb_die(const char *what, int err)
{
	fprintf(stderr, "msgbench: %s: %s\n", what, strerror(err));
	exit(1);
}

/* The payload's bytes (see --lz4 above for why text). */
void mb_fill_payload(unsigned char *p, size_t n, bool text)
{
	static const char *const words[32] = {
		"the", "of", "and", "to", "a", "in", "buffer", "list",
		"raw", "ptr", "frame", "payload", "message", "server",
		"client", "send", "receive", "connection", "length", "crc",
		"segment", "shared", "copy", "zero", "ring", "socket",
		"thread", "queue", "error", "bytes", "is", "not",
	};
	uint32_t st = 2463534242u;
	unsigned w = 0;
	size_t i = 0;

	if (!text) {
		for (i = 0; i < n; i++)
			p[i] = (unsigned char)(i * 131 + 7);
		return;
	}
	while (i < n) {
		const char *s;

		st = st * 1664525u + 1013904223u;
		for (s = words[(st >> 16) % 32u]; *s && i < n; s++)
			p[i++] = (unsigned char)*s;
		if (i < n)
			p[i++] = ++w % 12 ? ' ' : '\n';
	}
}

/* ---- the wire format, by hand (for the baseline) ------------------------- */

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void mb_base_preamble(unsigned char *p, uint16_t type, uint64_t seq,
		      uint32_t len)
{
	mb_put_le32(p, BL_MSGR_MAGIC);
	p[4] = (unsigned char)type;
	p[5] = (unsigned char)(type >> 8);
	p[6] = p[7] = 0;
	for (int i = 0; i < 8; i++)
		p[8 + i] = (unsigned char)(seq >> (8 * i));
	mb_put_le32(p + 16, len);
	mb_put_le32(p + 20, bl_crc32c(BL_MSGR_CRC_SEED, p, 20));
}

/*
 * Parses one frame at @p (@n bytes available).  Return: total frame bytes
 * and *@pay a new malloc'd copy of the payload (*@plen bytes), 0 when more
 * bytes are needed (*@need: the frame's size once the preamble is in), or
 * -1 when malformed.
 */
long mb_base_parse(const unsigned char *p, size_t n, unsigned char **pay,
		   uint32_t *plen, size_t *need)
{
	uint32_t len;
	size_t total;

	*need = BL_MSGR_PREAMBLE;
	if (n < BL_MSGR_PREAMBLE)
		return 0;
	if (get_le32(p) != BL_MSGR_MAGIC ||
	    bl_crc32c(BL_MSGR_CRC_SEED, p, 20) != get_le32(p + 20))
		return -1;
	len = get_le32(p + 16);
	if (len > BL_MSGR_DEFAULT_MAX_PAYLOAD)
		return -1;
	total = BL_MSGR_OVERHEAD + (size_t)len;
	*need = total;
	if (n < total)
		return 0;
	if (bl_crc32c(BL_MSGR_CRC_SEED, p + BL_MSGR_PREAMBLE, len) !=
	    get_le32(p + BL_MSGR_PREAMBLE + len))
		return -1;
	*pay = malloc(len ? len : 1);
	if (!*pay)
		mb_die("malloc", ENOMEM);
	memcpy(*pay, p + BL_MSGR_PREAMBLE, len);
	*plen = len;
	return (long)total;
}

/* ---- network: common ----------------------------------------------------- */

int mb_listen_loopback(struct sockaddr_in *sa)
{
	socklen_t sl = sizeof(*sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		mb_die("socket", errno);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)sa, sizeof(*sa)) ||
	    listen(fd, MB_MAXCONNS) ||
	    getsockname(fd, (struct sockaddr *)sa, &sl))
		mb_die("listen", errno);
	return fd;
}

unsigned short mb_peer_port(int fd)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);

	if (getpeername(fd, (struct sockaddr *)&sa, &sl) ||
	    sa.sin_family != AF_INET)
		return 0;
	return ntohs(sa.sin_port);
}

bool mb_srv_take_port(struct mb_srv *s, unsigned short port)
{
	for (int i = 0; port && i < s->nports; i++) {
		if (s->ports[i] == port) {
			s->ports[i] = 0;	/* one connection each */
			return true;
		}
	}
	return false;
}

int mb_dial(const struct sockaddr_in *sa)
{
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (const struct sockaddr *)sa, sizeof(*sa)))
		mb_die("connect", errno);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/*
 * Reading the clock costs about as much as handling a small message, so
 * it is read for the first message and then every 64th (and for every
 * large one): the last few messages of a run are not in the rate.
 */
void mb_srv_count(struct mb_srv *s, size_t len)
{
	if (!s->msgs || !(s->msgs & 63) || len >= 65536) {
		s->t_last = mb_now_s();
		if (!s->msgs)
			s->t_first = s->t_last;
		s->msgs_timed = s->msgs + 1;
		s->bytes_timed = s->bytes + len;
		if (!s->msgs)
			s->bytes_first = len;
	}
	s->msgs++;
	s->bytes += len;
}
