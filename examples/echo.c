/* SPDX-License-Identifier: MIT */
/*
 * echo.c - a messenger server that echoes every frame and a client that
 * sends N frames and checks each echo, in one process: one struct
 * bl_uring drives both ends.
 * Build: cc echo.c $(pkg-config --cflags --libs bufferlist)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bufferlist.h>

#define N 200

struct client {
	unsigned received;	/* echoes checked */
	bool failed, closed;
};

/* Frame @i's payload: 1 byte to 64 KiB of a pattern, in a raw of its own. */
static int payload(struct bl_list *l, unsigned i)
{
	size_t len = (i * 7919u) % 65536 + 1;
	struct bl_ptr p;
	int ret = bl_ptr_alloc(&p, len);

	if (ret)
		return ret;
	for (size_t k = 0; k < len; k++)
		bl_ptr_data(&p)[k] = (char)(i + k);
	return bl_list_append_ptr_move(l, &p);
}

/* Server: the payload goes back shared (no copy) with the same type. */
static void echo(void *arg, struct bl_msgr_conn *c, struct bl_msgr_frame *f)
{
	int ret = bl_msgr_send(c, f->type, &f->payload, NULL, NULL);

	(void)arg;
	if (ret)
		bl_msgr_conn_close(c, ret, "echo failed");
}

/* Client: echoes arrive in order; each must be what was sent. */
static void check(void *arg, struct bl_msgr_conn *c, struct bl_msgr_frame *f)
{
	struct client *cl = arg;
	struct bl_list want = BL_LIST_INIT(want);

	(void)c;
	if (payload(&want, cl->received) || f->type != cl->received % 100 ||
	    !bl_list_contents_equal(&f->payload, &want))
		cl->failed = true;
	cl->received++;
	bl_list_clear(&want);
}

static void closed(void *arg, struct bl_msgr_conn *c, int err, const char *why)
{
	(void)c;
	if (err)
		fprintf(stderr, "echo: client connection lost: %s\n", why);
	((struct client *)arg)->closed = true;	/* and @c is freed */
}

static int fail(const char *what, int err)
{
	fprintf(stderr, "%s: %s\n", what, strerror(err));
	return 1;
}

int main(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	struct client cl = { 0 };
	struct bl_msgr_conn_opts so = { .on_frame = echo };
	struct bl_msgr_conn_opts co = { .on_frame = check, .on_close = closed,
					.arg = &cl };
	socklen_t slen = sizeof(sa);
	time_t deadline = time(NULL) + 30;
	struct bl_msgr_server *s = NULL;
	struct bl_msgr_conn *c = NULL;
	struct bl_uring *u;
	int lfd, fd = -1, ret = 0;

	/* a listener on a free loopback port; the client connects to it
	 * (the server accepts in its poll below) */
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(lfd, 8) || getsockname(lfd, (struct sockaddr *)&sa, &slen) ||
	    (fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return fail("echo: sockets", errno);
	u = bl_uring_create(NULL);
	if (!u || !(s = bl_msgr_server_new(u, lfd, &so)) ||
	    !(c = bl_msgr_conn_new(u, fd, &co)))	/* takes @fd */
		return fail("echo: messenger set-up", errno);

	/* queue every frame at once: they leave batched, in order */
	for (unsigned i = 0; i < N && !ret; i++) {
		struct bl_list l = BL_LIST_INIT(l);

		ret = payload(&l, i);
		if (!ret)
			ret = bl_msgr_send(c, (uint16_t)(i % 100), &l, NULL, NULL);
		bl_list_clear(&l);	/* the send holds its own references */
	}
	if (ret)
		return fail("echo: send", -ret);
	/* one loop runs the ring, so both ends, and accepts the client */
	while (cl.received < N && !cl.closed && time(NULL) < deadline &&
	       bl_msgr_server_poll(s, 100) >= 0)
		;
	printf("%u of %u echoes back, %s\n", cl.received, N,
	       cl.failed ? "some DIFFERENT" : "all equal");

	if (!cl.closed)
		bl_msgr_conn_close(c, 0, NULL);
	while (!cl.closed && time(NULL) < deadline)
		bl_msgr_server_poll(s, 100);
	bl_msgr_server_destroy(s);	/* closes the server's side */
	bl_uring_destroy(u);
	close(lfd);
	return cl.received == N && !cl.failed && cl.closed ? 0 : 1;
}
