/* SPDX-License-Identifier: MIT */
/*
 * msgbench.h - what the files of msgbench share (never installed): main,
 * the options, one network case and the report (msgbench.c) call down
 * into the parse benchmark (msgbench_parse.c) and the two sides of a
 * network case (msgbench_ours.c, msgbench_base.c); all of them call down
 * into msgbench_util.c, which calls none of them.
 * Names: mb_ for what these files share; everything else is static.
 */
#ifndef MSGBENCH_H
#define MSGBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct sockaddr_in;
struct bl_msgr_conn;

#define MB_MAXCONNS 64
#define MB_PARSE_PASSES 11
#define MB_TYPE_PLAIN 1
#define MB_TYPE_LZ4 2		/* the payload is one LZ4 frame */

enum mb_mode { MB_STREAM, MB_PINGPONG };

struct mb_cfg {
	size_t size;
	int conns;
	double seconds;
	enum mb_mode mode;
	bool zc;
	bool align;		/* the server aligns large payloads */
	bool blocking;		/* ours on the blocking back end */
	size_t direct_min;	/* 0: the library's default */
	bool no_regpool;	/* no registered buffers for large reads */
	unsigned busy_poll_us;	/* ours: the connections' busy_poll_us */
	bool ring_defer;	/* ours: rings with single_issuer */
	long spin_us;		/* ours: the rings' spin_us (-1: default) */
	bool local;		/* ours: each thread's raws thread-local */
	bool lz4;		/* payloads compressed on the wire */
	bool quiet;
	int impl;		/* 1 ours, 2 base, 3 both */
	unsigned frames;
};

/*
 * CPU time per message of each side's thread is printed beside the rates:
 * on a shared machine it moves less with other load than wall-clock
 * rates do.
 */
struct mb_result {
	double msgs_s;
	double gb_s;
	double srv_cpu_ns;	/* server thread CPU per message */
	double cli_cpu_ns;	/* client thread CPU per message */
	uint64_t msgs;		/* messages the rates count */
	bool ok;
};

/*
 * What run_net() of msgbench.c hands its server thread, and gets back.
 * The loopback port is open to every local process: the server serves
 * only the connections whose far end is one of @ports (the client's,
 * dialled before the server starts), turns the others away and never
 * counts them, so a stray connection neither ends a run early nor makes
 * it fail.
 */
struct mb_srv {
	int lfd;
	struct mb_cfg cfg;
	unsigned short ports[MB_MAXCONNS];	/* the client's, host order */
	int nports;
	/* ours: the server's connections found to be the client's */
	struct bl_msgr_conn *own[MB_MAXCONNS];
	int nown;
	_Atomic int ready;
	/* results, written by the server thread */
	uint64_t msgs, bytes;
	uint64_t msgs_timed, bytes_timed;	/* at t_last */
	uint64_t bytes_first;
	double t_first, t_last;
	uint64_t detached, ring_dry;
	int closed, bad;
	double cpu_s;
};

/*
 * Inline: they sit on the measured paths, where a call apiece would show
 * in the figures.
 */
static inline double mb_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double mb_thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void mb_put_le32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

/* msgbench_util.c */
/* What failed and why on stderr, then exit status 1: no way to go on. */
void mb_die(const char *what, int err) __attribute__((noreturn));
void mb_fill_payload(unsigned char *p, size_t n, bool text);
void mb_base_preamble(unsigned char *p, uint16_t type, uint64_t seq,
		      uint32_t len);
long mb_base_parse(const unsigned char *p, size_t n, unsigned char **pay,
		   uint32_t *plen, size_t *need);
int mb_listen_loopback(struct sockaddr_in *sa);
int mb_dial(const struct sockaddr_in *sa);
/* Whether @port (host order) is one of the client's, not yet served; if
 * so it is marked served. */
bool mb_srv_take_port(struct mb_srv *s, unsigned short port);
/* The far end's port of the connected socket @fd (host order), or 0. */
unsigned short mb_peer_port(int fd);
void mb_srv_count(struct mb_srv *s, size_t len);

/* msgbench_parse.c */
void mb_bench_parse(const struct mb_cfg *cfg, double *ours_ns,
		    double *base_ns);

/*
 * msgbench_ours.c: the server thread (@arg a struct mb_srv) and client,
 * which takes the cfg->conns sockets run_net() dialled (and closes them)
 */
void *mb_ours_server(void *arg);
void mb_ours_client(const struct mb_cfg *cfg, const int *fds,
		    struct mb_result *r);

/* msgbench_base.c: the same for the baseline */
void *mb_base_server(void *arg);
void mb_base_client(const struct mb_cfg *cfg, const int *fds,
		    struct mb_result *r);

#endif
