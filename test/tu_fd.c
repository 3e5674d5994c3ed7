/* SPDX-License-Identifier: MIT */
/*
 * tu_fd.c - descriptors for the suites that move bytes through them
 * (test_io, test_uring_*): O_NONBLOCK on and off, a loopback TCP pair,
 * whether a SIGPIPE is pending, and a monotonic clock to time waits by.
 */
#include "config.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"

void tu_set_nonblock(int fd, bool on)
{
	int fl = fcntl(fd, F_GETFL);

	ck_assert_int_ge(fl, 0);
	fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
	ck_assert_int_eq(fcntl(fd, F_SETFL, fl), 0);
}

void tu_tcp_pair_how(int fds[2], bool stalled)
{
	struct sockaddr_in a;
	socklen_t alen = sizeof(a);
	int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	ck_assert_int_ge(ls, 0);
	/* on the listener, so that the window is small from the handshake */
	if (stalled)
		ck_assert_int_eq(setsockopt(ls, SOL_SOCKET, SO_RCVBUF, &one,
					    sizeof(one)), 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(ls, 1), 0);
	ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&a, &alen), 0);
	fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fds[0], 0);
	ck_assert_int_eq(connect(fds[0], (struct sockaddr *)&a, sizeof(a)), 0);
	fds[1] = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
	ck_assert_int_ge(fds[1], 0);
	if (!stalled)
		setsockopt(fds[0], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	close(ls);
}

void tu_tcp_pair(int fds[2])
{
	tu_tcp_pair_how(fds, false);
}

bool tu_sigpipe_pending(void)
{
	sigset_t set;

	ck_assert_int_eq(sigpending(&set), 0);
	return sigismember(&set, SIGPIPE) == 1;
}

double tu_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
