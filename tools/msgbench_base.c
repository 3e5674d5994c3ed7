/* SPDX-License-Identifier: MIT */
/*
 * msgbench_base.c - msgbench's baseline side of a network case, a naive
 * framed protocol on the same wire format: the server thread poll()s and
 * read()s into a malloc'd buffer per connection and copies every payload
 * out; the client copies small frames into an output buffer and writev()s
 * large ones; --lz4 through LZ4F_compressFrame() and LZ4F_decompress()
 * (the whole description is in msgbench.c's opening comment).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include <lz4frame.h>
#include <bufferlist.h>
#include <bufferlist/msgr.h>
#include "msgbench.h"

#define BASE_BUF ((size_t)64 << 10)

struct bconn {
	int fd;
	unsigned char *buf;
	size_t cap, len;
	bool open;
	LZ4F_dctx *dctx;	/* --lz4, else NULL */
	size_t plain;		/* --lz4: the uncompressed payload size */
};

static void bconn_init(struct bconn *c, int fd, const struct mb_cfg *cfg)
{
	c->fd = fd;
	c->cap = BASE_BUF;
	c->len = 0;
	c->buf = malloc(BASE_BUF);
	if (!c->buf)
		mb_die("malloc", ENOMEM);
	c->open = true;
	c->dctx = NULL;
	c->plain = cfg->size;
	if (cfg->lz4 &&
	    LZ4F_isError(LZ4F_createDecompressionContext(&c->dctx,
							 LZ4F_VERSION)))
		mb_die("LZ4F_createDecompressionContext", ENOMEM);
}

static void bconn_fini(struct bconn *c)
{
	close(c->fd);
	free(c->buf);
	LZ4F_freeDecompressionContext(c->dctx);
	c->open = false;
}

/*
 * --lz4: decompresses a copied-out payload in one call into a buffer of
 * the payload size (which is also the limit) and checks the length.  The
 * output is contiguous and stays put for the call: stableDst.
 */
static void base_unlz4(struct bconn *c, const unsigned char *z, size_t zlen)
{
	LZ4F_decompressOptions_t o = { .stableDst = 1 };
	unsigned char *d = malloc(c->plain ? c->plain : 1);
	size_t dn = c->plain, sn = zlen, r;

	if (!d)
		mb_die("malloc", ENOMEM);
	r = LZ4F_decompress(c->dctx, d, &dn, z, &sn, &o);
	if (LZ4F_isError(r) || r != 0 || sn != zlen || dn != c->plain)
		mb_die("base: LZ4F_decompress", EBADMSG);
	free(d);
}

static void write_full(int fd, const struct iovec *v, int n)
{
	struct iovec iov[3];
	size_t left = 0;

	memcpy(iov, v, sizeof(*v) * (size_t)n);
	for (int i = 0; i < n; i++)
		left += iov[i].iov_len;
	while (left) {
		ssize_t w = writev(fd, iov, n);

		if (w <= 0)
			mb_die("writev", errno);
		left -= (size_t)w;
		for (int i = 0; i < n; i++) {
			size_t k = (size_t)w < iov[i].iov_len ? (size_t)w
							      : iov[i].iov_len;

			iov[i].iov_base = (char *)iov[i].iov_base + k;
			iov[i].iov_len -= k;
			w -= (ssize_t)k;
		}
	}
}

/* Makes room for @need bytes of one frame at the start of c->buf. */
static void bconn_room(struct bconn *c, size_t need)
{
	if (need <= c->cap)
		return;
	c->buf = realloc(c->buf, need);
	if (!c->buf)
		mb_die("realloc", ENOMEM);
	c->cap = need;
}

/*
 * Reads what is there and delivers every whole frame (payload copied
 * out).  @echo: write each payload back as a frame.  Return: false at EOF.
 */
static bool base_pump(struct bconn *c, struct mb_srv *s, bool echo,
		      uint64_t *got)
{
	ssize_t n = read(c->fd, c->buf + c->len, c->cap - c->len);
	size_t off = 0;

	if (n <= 0) {
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			return true;
		return false;
	}
	c->len += (size_t)n;
	for (;;) {
		unsigned char *p;
		uint32_t plen;
		size_t need;
		long r = mb_base_parse(c->buf + off, c->len - off, &p,
				       &plen, &need);

		if (r < 0)
			mb_die("base: malformed frame", EBADMSG);
		if (r == 0) {
			/* keep the partial frame at the front */
			memmove(c->buf, c->buf + off, c->len - off);
			c->len -= off;
			bconn_room(c, need);
			return true;
		}
		off += (size_t)r;
		if (c->dctx)
			base_unlz4(c, p, plen);
		if (s)
			mb_srv_count(s, c->dctx ? c->plain : plen);
		if (got)
			(*got)++;
		if (echo) {
			/* --lz4: the compressed payload goes back */
			unsigned char pre[BL_MSGR_PREAMBLE], tr[4];
			struct iovec iov[3] = {
				{ pre, sizeof(pre) }, { p, plen }, { tr, 4 }
			};
			mb_base_preamble(pre,
					 c->dctx ? MB_TYPE_LZ4 : MB_TYPE_PLAIN,
					 0, plen);
			mb_put_le32(tr, bl_crc32c(BL_MSGR_CRC_SEED, p, plen));
			write_full(c->fd, iov, 3);
		}
		free(p);
	}
}

void *mb_base_server(void *arg)
{
	struct mb_srv *s = arg;
	struct bconn c[MB_MAXCONNS];
	struct pollfd pfd[MB_MAXCONNS + 1];
	int n = 0;

	atomic_store(&s->ready, 1);
	s->cpu_s = mb_thread_cpu_s();
	while (s->closed < s->cfg.conns) {
		int k = 0;

		pfd[k].fd = s->lfd;
		pfd[k++].events = POLLIN;
		for (int i = 0; i < n; i++) {
			pfd[k].fd = c[i].open ? c[i].fd : -1;
			pfd[k++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)k, 100) < 0 && errno != EINTR)
			mb_die("poll", errno);
		if (pfd[0].revents & POLLIN) {
			struct sockaddr_in sa;
			socklen_t sl = sizeof(sa);
			int fd = accept4(s->lfd, (struct sockaddr *)&sa, &sl,
					 SOCK_CLOEXEC);
			int one = 1;

			if (fd >= 0 && (n == MB_MAXCONNS ||
					!mb_srv_take_port(s,
							  ntohs(sa.sin_port)))) {
				/* not the client's: turned away unread */
				if (!s->cfg.quiet)
					fprintf(stderr, "msgbench: base: turned "
						"away a connection that is "
						"not the client's\n");
				close(fd);
			} else if (fd >= 0) {
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
					   sizeof(one));
				bconn_init(&c[n++], fd, &s->cfg);
			}
		}
		for (int i = 0; i < n; i++) {
			if (!c[i].open || !pfd[i + 1].revents)
				continue;
			if (!base_pump(&c[i], s, s->cfg.mode == MB_PINGPONG,
				       NULL)) {
				bconn_fini(&c[i]);
				s->closed++;
			}
		}
	}
	s->cpu_s = mb_thread_cpu_s() - s->cpu_s;
	return NULL;
}


void mb_base_client(const struct mb_cfg *cfg, const int *fds,
		    struct mb_result *r)
{
	unsigned char *payload = malloc(cfg->size ? cfg->size : 1);
	unsigned char *out[MB_MAXCONNS];
	size_t olen[MB_MAXCONNS];
	struct bconn rc[MB_MAXCONNS];
	/* the longest a frame's payload can be on the wire */
	size_t wmax = cfg->lz4 ? LZ4F_compressFrameBound(cfg->size, NULL)
			       : cfg->size;
	bool big = wmax + BL_MSGR_OVERHEAD > BASE_BUF / 2;
	uint64_t seq = 0, replies = 0;
	double t0, t1, cpu;

	mb_fill_payload(payload, cfg->size, cfg->lz4);
	for (int i = 0; i < cfg->conns; i++) {
		bconn_init(&rc[i], fds[i], cfg);
		out[i] = malloc(BASE_BUF);
		olen[i] = 0;
	}
	cpu = mb_thread_cpu_s();
	t0 = mb_now_s();
	for (;;) {
		t1 = mb_now_s();
		if (t1 - t0 >= cfg->seconds)
			break;
		for (int i = 0; i < cfg->conns; i++) {
			unsigned char pre[BL_MSGR_PREAMBLE], tr[4];
			unsigned char *w = payload, *z = NULL;
			size_t wlen = cfg->size;

			if (cfg->lz4) {
				/* compressed afresh for every frame */
				z = malloc(wmax);
				if (!z)
					mb_die("malloc", ENOMEM);
				wlen = LZ4F_compressFrame(z, wmax, payload,
							  cfg->size, NULL);
				if (LZ4F_isError(wlen))
					mb_die("LZ4F_compressFrame", ENOMEM);
				w = z;
			}
			/* one frame: its crc is computed every time */
			mb_base_preamble(pre,
					 cfg->lz4 ? MB_TYPE_LZ4 : MB_TYPE_PLAIN,
					 ++seq, (uint32_t)wlen);
			mb_put_le32(tr, bl_crc32c(BL_MSGR_CRC_SEED, w, wlen));
			if (big) {
				struct iovec v[3] = {
					{ pre, sizeof(pre) },
					{ w, wlen },
					{ tr, 4 },
				};

				write_full(rc[i].fd, v, 3);
			} else {
				unsigned char *o = out[i] + olen[i];

				memcpy(o, pre, sizeof(pre));
				memcpy(o + sizeof(pre), w, wlen);
				memcpy(o + sizeof(pre) + wlen, tr, 4);
				olen[i] += wlen + BL_MSGR_OVERHEAD;
				if (cfg->mode == MB_PINGPONG ||
				    olen[i] + wmax + BL_MSGR_OVERHEAD >
					    BASE_BUF) {
					struct iovec v = { out[i], olen[i] };

					write_full(rc[i].fd, &v, 1);
					olen[i] = 0;
				}
			}
			free(z);
		}
		if (cfg->mode == MB_PINGPONG) {
			for (int i = 0; i < cfg->conns; i++) {
				uint64_t got = 0;

				while (!got)
					if (!base_pump(&rc[i], NULL, false,
						       &got))
						mb_die("base: server closed",
						       EPIPE);
				replies += got;
			}
		}
	}
	for (int i = 0; i < cfg->conns; i++) {
		if (olen[i]) {
			struct iovec v = { out[i], olen[i] };

			write_full(rc[i].fd, &v, 1);
		}
		bconn_fini(&rc[i]);
		free(out[i]);
	}
	r->cli_cpu_ns = mb_thread_cpu_s() - cpu;
	r->msgs = replies;
	if (cfg->mode == MB_PINGPONG) {
		r->msgs_s = (double)replies / (t1 - t0);
		r->gb_s = r->msgs_s * (double)cfg->size * 2 / 1e9;
	}
	free(payload);
}
