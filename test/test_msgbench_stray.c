/* SPDX-License-Identifier: MIT */
/*
 * test_msgbench_stray.c - msgbench's loopback server serves its own
 * client only: a stray local connection to it (one that connects and
 * closes, or one that sends garbage, or one that stays open and idle) is
 * turned away, and the run ends cleanly with exit status 0 on both
 * implementations.
 *
 * The test starts msgbench, finds its listening port through /proc (the
 * socket's inode among the child's descriptors, in /proc/net/tcp), makes
 * the stray connections while the run goes on, and waits a bounded time
 * for the child.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "testutil.h"

#ifndef MSGBENCH_PATH
#error "MSGBENCH_PATH: the built msgbench"
#endif

/* Whether /proc/PID/fd holds the socket of inode @ino. */
static bool has_socket(pid_t pid, unsigned long ino)
{
	char path[64], link[64], want[64];
	struct dirent *e;
	bool found = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	snprintf(want, sizeof(want), "socket:[%lu]", ino);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		char p[384];
		ssize_t n;

		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		n = readlink(p, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		found = strcmp(link, want) == 0;
	}
	closedir(d);
	return found;
}

/* The port @pid listens on over IPv4 loopback, or 0 (none yet). */
static unsigned listening_port(pid_t pid)
{
	FILE *f = fopen("/proc/net/tcp", "r");
	char line[512];
	unsigned port = 0;

	if (!f)
		return 0;
	while (!port && fgets(line, sizeof(line), f)) {
		unsigned lport, st;
		unsigned long ino;

		/* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
		if (sscanf(line, " %*u: %*x:%x %*x:%*x %x %*x:%*x %*x:%*x %*x "
			   "%*u %*u %lu", &lport, &st, &ino) != 3)
			continue;
		if (st == 0x0A && has_socket(pid, ino))
			port = lport;
	}
	fclose(f);
	return port;
}

static int dial(unsigned port)
{
	struct sockaddr_in sa;

	tm_loopback(&sa, port);
	return tm_dial(&sa);
}

enum stray { CONNECT_CLOSE, GARBAGE, IDLE };

/*
 * Runs msgbench --impl @impl for 1 s with one stray connection of kind
 * @kind made while it runs (as soon as it listens).  Return: its exit
 * status (wait bounded to 60 s: a run that hangs is killed and fails the
 * test).
 */
static int run_with_stray(const char *impl, const char *mode, enum stray kind)
{
	int64_t end;
	unsigned port = 0;
	int status, fd;
	pid_t pid, w;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execl(MSGBENCH_PATH, MSGBENCH_PATH, "--impl", impl, "--mode",
		      mode, "--size", "4K", "--conns", "1", "--seconds", "1",
		      "-q", (char *)NULL);
		_exit(127);
	}
	end = tm_now_ms() + 20000;
	while (!(port = listening_port(pid)) && tm_now_ms() < end)
		usleep(2000);
	if (!port) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ck_abort_msg("msgbench never listened");
	}
	fd = dial(port);
	if (kind == GARBAGE)
		ck_assert_int_eq(write(fd, "GET / HTTP/1.0\r\n\r\n"
				       "0123456789abcdef0123456789abcdef", 50),
				 50);
	if (kind != IDLE)
		close(fd);
	end = tm_now_ms() + 60000;
	while ((w = waitpid(pid, &status, WNOHANG)) == 0 && tm_now_ms() < end)
		usleep(10000);
	if (kind == IDLE)
		close(fd);
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		ck_abort_msg("msgbench --impl %s hung with a stray connection",
			     impl);
	}
	ck_assert_int_eq(w, pid);
	ck_assert_msg(WIFEXITED(status), "msgbench --impl %s died (status %d)",
		      impl, status);
	return WEXITSTATUS(status);
}

/* Every implementation with every kind of stray. */
static const struct {
	const char *impl, *mode;
	enum stray kind;
} strays[] = {
	{ "base", "stream", CONNECT_CLOSE },
	{ "base", "stream", GARBAGE },
	{ "base", "pingpong", IDLE },
	{ "ours", "stream", CONNECT_CLOSE },
	{ "ours", "stream", GARBAGE },
	{ "ours", "pingpong", IDLE },
};

START_TEST(a_stray_connection_is_turned_away_and_the_run_ends_cleanly)
{
	ck_assert_int_eq(run_with_stray(strays[_i].impl, strays[_i].mode,
					strays[_i].kind), 0);
}
END_TEST

int main(void)
{
	const struct tu_loop loops[] = {
		{ a_stray_connection_is_turned_away_and_the_run_ends_cleanly,
		  0, (int)(sizeof(strays) / sizeof(strays[0])) },
		{ NULL }
	};
	const struct tu_group groups[] = {
		TU_GROUP("stray", NULL, .loops = loops, .timeout = 120),
		TU_GROUP_END
	};

	return tu_run(tu_suite("msgbench_stray", groups));
}
