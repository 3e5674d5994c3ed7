/* SPDX-License-Identifier: MIT */
/*
 * test_blbench_output.c - what blbench reports, and what seq verifies:
 *
 *  - --format json is one valid JSON object with rados bench's keys;
 *  - the latency histogram (tools/blbench_hist.c, compiled in) gives the
 *    percentiles of known sets within its bucket error; a run prints
 *    them after rados bench's summary and as JSON keys, in order, the
 *    maximum equal to rados bench's;
 *  - --plot writes an SVG with its polylines and the distribution panel;
 *  - a byte flipped in one object makes seq fail naming that object
 *    (pattern check, crc32c check, lz4).
 *
 * blbench runs as a user runs it: fork and exec of the built binary, its
 * output parsed back (tu_blbench.c).  Runs are kept small (64 KiB ops, a
 * few ops in flight, capped object counts).  Nothing here asserts on
 * timing: waits for a child are bounded only to tell a hang from an exit.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <grp.h>
#include <unistd.h>
#include <bufferlist/msgr.h>
#include <bufferlist/version.h>
#include "testutil.h"
#include "blbench_hist.h"

/* The value of "key":"value" in JSON output. */
static double jfield(const char *text, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	p = strstr(text, pat);
	ck_assert_msg(p != NULL, "no key %s in:\n%s", key, text);
	return strtod(p + strlen(pat), NULL);
}

/* ---- output formats ------------------------------------------------------ */

/* A small JSON validator: returns the end of the value at @p, or NULL. */
static const char *json_value(const char *p);

static const char *json_ws(const char *p)
{
	while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r')
		p++;
	return p;
}

static const char *json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p && *p != '"') {
		if ((unsigned char)*p < 0x20)
			return NULL;
		if (*p == '\\' && !*++p)
			return NULL;
		p++;
	}
	return *p == '"' ? p + 1 : NULL;
}

static const char *json_value(const char *p)
{
	p = json_ws(p);
	if (*p == '"')
		return json_string(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';

		p = json_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				p = json_string(json_ws(p));
				if (!p || *(p = json_ws(p)) != ':')
					return NULL;
				p++;
			}
			p = json_value(p);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		char *end;

		strtod(p, &end);
		return end;
	}
	if (!strncmp(p, "true", 4) || !strncmp(p, "null", 4))
		return p + 4;
	if (!strncmp(p, "false", 5))
		return p + 5;
	return NULL;
}

START_TEST(test_json_output_is_one_object_with_rados_keys)
{
	static const char *const keys[] = {
		"concurrent_ios", "object_size", "op_size", "seconds_to_run",
		"max_objects", "object_prefix", "datas", "sec", "cur_ops",
		"started", "finished", "avg_bw", "cur_bw", "last_lat",
		"avg_lat", "total_time_run", "total_writes_made", "write_size",
		"bandwidth", "stddev_bandwidth", "max_bandwidth",
		"min_bandwidth", "average_iops", "stddev_iops", "max_iops",
		"min_iops", "average_latency", "stddev_latency", "max_latency",
		"min_latency",
	};
	static const char *const read_keys[] = {
		"datas", "total_time_run", "total_reads_made", "read_size",
		"object_size", "bandwidth", "average_iops", "stddev_iops",
		"max_iops", "min_iops", "average_latency", "max_latency",
		"min_latency",
	};
	char t[PATH_MAX + 64], d[PATH_MAX + 64], m[PATH_MAX + 64], k[64];
	uint64_t obj, op;
	uint32_t nops;
	const char *end;
	struct tb_res r;

	tb_spec(t, sizeof(t), "dir", tb_scratch, "j");
	TB_RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "300", "--format",
	    "json", "1", "write", "--no-cleanup", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert_int_eq(r.out[0], '{');
	end = json_value(r.out);
	ck_assert_msg(end != NULL, "not JSON:\n%s", r.out);
	ck_assert_str_eq(json_ws(end), "");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		snprintf(k, sizeof(k), "\"%s\":", keys[i]);
		ck_assert_msg(strstr(r.out, k) != NULL, "no %s in\n%s", k,
			      r.out);
	}
	tb_read_meta(tb_path_in(m, sizeof(m),
				tb_path_in(d, sizeof(d), tb_scratch, "j"),
				"benchmark_last_metadata"),
		     &obj, &nops, &op);
	ck_assert_int_eq((int)jfield(r.out, "total_writes_made"), (int)nops);
	ck_assert_int_eq((int)jfield(r.out, "write_size"), 65536);
	tb_res_free(&r);

	TB_RUN(&r, "--format", "json", "1", "seq", "--target", t);
	tb_expect_status(&r, 0);
	end = json_value(r.out);
	ck_assert_msg(end != NULL, "not JSON:\n%s", r.out);
	for (size_t i = 0; i < sizeof(read_keys) / sizeof(read_keys[0]); i++) {
		snprintf(k, sizeof(k), "\"%s\":", read_keys[i]);
		ck_assert_msg(strstr(r.out, k) != NULL, "no %s in\n%s", k,
			      r.out);
	}
	ck_assert_int_eq((int)jfield(r.out, "total_reads_made"), (int)nops);
	tb_res_free(&r);
}
END_TEST

/* ---- latency percentiles ------------------------------------------------- */

/* |got - want| within the histogram's promise: 1/256 of want, and 1 ns */
static void expect_near(uint64_t got, uint64_t want, const char *what)
{
	double err = fabs((double)got - (double)want);

	ck_assert_msg(err <= (double)want / 256 + 1,
		      "%s: %llu, wanted %llu (error %.3g%%)", what,
		      (unsigned long long)got, (unsigned long long)want,
		      want ? 100 * err / (double)want : 0);
}

START_TEST(test_histogram_buckets_are_contiguous_and_narrow)
{
	uint64_t lower, width, prev_end = 0;

	ck_assert_uint_eq(BLB_HIST_BUCKETS, 4480);
	for (size_t i = 0; i < BLB_HIST_BUCKETS; i++) {
		blb_hist_bucket(i, &lower, &width);
		/* each starts where the last ended, and holds what it says */
		ck_assert_uint_eq(lower, prev_end);
		ck_assert_uint_eq(blb_hist_index(lower), i);
		ck_assert_uint_eq(blb_hist_index(lower + width - 1), i);
		/* under 1% of its values wide (exact below 128 ns) */
		ck_assert(lower < 128 ? width == 1 : width * 128 <= lower);
		prev_end = lower + width;
	}
	/* 1 us .. 1000 s inside; beyond 2^41 ns, the last bucket */
	ck_assert_uint_lt(blb_hist_index(1000000000000ull),
			  BLB_HIST_BUCKETS - 1);
	ck_assert_uint_eq(prev_end, 1ull << 41);
	ck_assert_uint_eq(blb_hist_index(UINT64_MAX), BLB_HIST_BUCKETS - 1);
	ck_assert_uint_eq(blb_hist_ns(-1), 0);
	ck_assert_uint_eq(blb_hist_ns(1e-6), 1000);
	ck_assert_uint_eq(blb_hist_ns(1e30), UINT64_MAX);
}
END_TEST

START_TEST(test_histogram_percentiles_of_known_sets)
{
	static struct blb_hist h;	/* 35 KiB: not on the stack */
	uint64_t v[1000];

	/* empty: zeroes */
	blb_hist_init(&h);
	ck_assert_uint_eq(blb_hist_quantile(&h, 0.5), 0);
	ck_assert_uint_eq(blb_hist_quantile(&h, 1), 0);

	/* 1..100000 us, each once: the k-th smallest is k us */
	for (uint64_t k = 1; k <= 100000; k++)
		blb_hist_add(&h, k * 1000);
	ck_assert_uint_eq(h.count, 100000);
	expect_near(blb_hist_quantile(&h, 0.50), 50000000, "p50");
	expect_near(blb_hist_quantile(&h, 0.90), 90000000, "p90");
	expect_near(blb_hist_quantile(&h, 0.99), 99000000, "p99");
	expect_near(blb_hist_quantile(&h, 0.999), 99900000, "p99.9");
	ck_assert_uint_eq(blb_hist_quantile(&h, 1), 100000000);
	ck_assert_uint_eq(blb_hist_quantile(&h, 0), 1000);

	/*
	 * 1000 values spread over 1 us .. 1000 s (a factor of 10^9,
	 * geometrically), added in a scrambled order: the ranks of the
	 * sorted set.
	 */
	blb_hist_init(&h);
	for (int i = 0; i < 1000; i++)
		v[i] = (uint64_t)llround(1000 * pow(10, 9.0 * i / 999));
	for (int i = 0; i < 1000; i++)
		blb_hist_add(&h, v[(i * 367) % 1000]);
	expect_near(blb_hist_quantile(&h, 0.50), v[499], "p50 wide");
	expect_near(blb_hist_quantile(&h, 0.90), v[899], "p90 wide");
	expect_near(blb_hist_quantile(&h, 0.99), v[989], "p99 wide");
	expect_near(blb_hist_quantile(&h, 0.999), v[998], "p99.9 wide");
	ck_assert_uint_eq(blb_hist_quantile(&h, 1), v[999]);
	ck_assert_uint_eq(v[999], 1000000000000ull);
	ck_assert_uint_eq(h.min_ns, 1000);

	/* one slow op among 999 fast: p99.9 is a fast one, max the slow */
	blb_hist_init(&h);
	for (int i = 0; i < 999; i++)
		blb_hist_add(&h, 2000000);
	blb_hist_add(&h, 3000000000ull);
	expect_near(blb_hist_quantile(&h, 0.999), 2000000, "p99.9 of 999 + 1");
	ck_assert_uint_eq(blb_hist_quantile(&h, 1), 3000000000ull);

	/* never above the maximum, nor below the minimum */
	blb_hist_init(&h);
	blb_hist_add(&h, 1000001);
	ck_assert_uint_eq(blb_hist_quantile(&h, 0.5), 1000001);
	ck_assert_uint_eq(blb_hist_quantile(&h, 0.999), 1000001);
}
END_TEST

/* The plain output's "Latency pNN(s):" lines, after rados bench's. */
static void check_percentile_lines(const char *out, bool is_read)
{
	static const char *const labels[] = {
		"Latency p50(s):", "Latency p90(s):", "Latency p99(s):",
		"Latency p99.9(s):", "Latency max(s):",
	};
	const char *p = strstr(out, "Min latency(s):");
	double prev = 0, v = 0, max;
	char want[64];

	ck_assert_msg(p != NULL, "no summary in:\n%s", out);
	for (size_t i = 0; i < sizeof(labels) / sizeof(labels[0]); i++) {
		/* each on its own line, in the summary's column */
		tb_fmt(want, sizeof(want), "\n%-*s", is_read ? 22 : 24,
		       labels[i]);
		p = strstr(p, want);
		ck_assert_msg(p != NULL, "'%s' missing or out of order in:\n%s",
			      labels[i], out);
		v = strtod(p + strlen(want), NULL);
		ck_assert_msg(v > 0 && v >= prev, "%s %g after %g", labels[i],
			      v, prev);
		prev = v;
	}
	/* the maximum is rados bench's, to the printed digits */
	max = tb_field(out, "Max latency(s):");
	ck_assert_msg(fabs(v - max) <= 1e-5 * max, "max %g, Max latency %g",
		      v, max);
	ck_assert(tb_field(out, "Latency p50(s):") >=
		  tb_field(out, "Min latency(s):") * (1 - 1.0 / 256));
}

START_TEST(test_runs_print_latency_percentiles_after_the_summary)
{
	static const char *const keys[] = {
		"latency_p50", "latency_p90", "latency_p99", "latency_p999",
		"latency_max",
	};
	char t[PATH_MAX + 64];
	double prev = 0, v = 0;
	struct tb_res r;

	tb_spec(t, sizeof(t), "dir", tb_scratch, "l");
	TB_RUN(&r, "-b", "64K", "-t", "2", "--max-objects", "200", "1", "write",
	    "--no-cleanup", "--target", t);
	tb_expect_status(&r, 0);
	tb_check_write_summary(r.out, 65536, 65536);
	check_percentile_lines(r.out, false);
	tb_res_free(&r);

	TB_RUN(&r, "1", "seq", "--target", t);
	tb_expect_status(&r, 0);
	tb_check_read_summary(r.out, 65536);
	check_percentile_lines(r.out, true);
	tb_res_free(&r);

	/* JSON: rados bench's keys, then these */
	TB_RUN(&r, "--format", "json", "1", "rand", "--target", t);
	tb_expect_status(&r, 0);
	ck_assert(strstr(r.out, "\"min_latency\":") <
		  strstr(r.out, "\"latency_p50\":"));
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		v = jfield(r.out, keys[i]);
		ck_assert_msg(v >= prev, "%s %g after %g", keys[i], v, prev);
		prev = v;
	}
	/* both printed with 6 decimals, from the same latency kept once in
	 * whole ns and once as a double: they may round one unit apart */
	ck_assert(fabs(v - jfield(r.out, "max_latency")) <= 1.5e-6);
	tb_res_free(&r);

	TB_RUN_OK("cleanup", "--target", t);
}
END_TEST

START_TEST(test_plot_writes_an_svg_of_its_three_panels)
{
	char t[PATH_MAX + 64], p[PATH_MAX + 64];
	char *svg;

	tb_spec(t, sizeof(t), "dir", tb_scratch, "p");
	tb_path_in(p, sizeof(p), tb_scratch, "run.svg");
	TB_RUN_OK("-b", "64K", "-t", "2", "--max-objects", "2000", "--plot", p,
	    "1", "write", "--target", t);
	svg = tb_slurp(p);
	ck_assert_msg(!strncmp(svg, "<svg", 4),
		      "does not start with <svg:\n%.200s", svg);
	ck_assert_ptr_nonnull(strstr(svg, "<polyline"));
	ck_assert_ptr_nonnull(strstr(svg, "bandwidth (MB/s)"));
	ck_assert_ptr_nonnull(strstr(svg, "latency (s)"));
	/* the distribution, with its percentiles marked */
	ck_assert_ptr_nonnull(strstr(svg, "latency distribution ("));
	ck_assert_ptr_nonnull(strstr(svg, "latency (log scale)"));
	ck_assert_ptr_nonnull(strstr(svg, "fill-opacity=\"0.6\""));
	ck_assert_ptr_nonnull(strstr(svg, ">p99.9</text>"));
	ck_assert_ptr_nonnull(strstr(svg, ">max</text>"));
	/* the title is the command line, escaped */
	ck_assert_ptr_nonnull(strstr(svg, "blbench -b 64K -t 2"));
	ck_assert_ptr_nonnull(strstr(svg, "</svg>\n"));
	free(svg);
}
END_TEST

/* ---- verification -------------------------------------------------------- */

/*
 * Writes 6 objects of 64 KiB (with option @wopt, may be NULL), corrupts
 * object 3 at byte @off, then runs seq (with @ropt, may be NULL): it must
 * fail and name object 3, and only it.
 */
static void corrupt_and_seq(const char *wopt, const char *ropt, off_t off)
{
	char t[PATH_MAX + 64], d[PATH_MAX + 64], o[PATH_MAX + 64];
	char prefix[256], want[300];
	const char *args[16];
	struct tb_res r;
	int n = 0;

	tb_spec(t, sizeof(t), "dir", tb_scratch, "c");
	tb_path_in(d, sizeof(d), tb_scratch, "c");
	args[n++] = "-b";
	args[n++] = "64K";
	args[n++] = "-t";
	args[n++] = "2";
	args[n++] = "--max-objects";
	args[n++] = "6";
	args[n++] = "10";
	args[n++] = "write";
	args[n++] = "--no-cleanup";
	args[n++] = "--target";
	args[n++] = t;
	if (wopt)
		args[n++] = wopt;
	args[n] = NULL;
	tb_run_env(&r, NULL, args);
	tb_expect_status(&r, 0);
	ck_assert_int_eq((int)tb_field(r.out, "Total writes made:"), 6);
	tb_prefix_of(r.out, prefix, sizeof(prefix));
	tb_res_free(&r);

	snprintf(want, sizeof(want), "%s_object3", prefix);
	tb_flip_byte(tb_path_in(o, sizeof(o), d, want), off);

	n = 0;
	args[n++] = "10";
	args[n++] = "seq";
	args[n++] = "--target";
	args[n++] = t;
	if (ropt)
		args[n++] = ropt;
	args[n] = NULL;
	tb_run_env(&r, NULL, args);
	ck_assert_msg(r.status == 1, "status %d\n%s", r.status, r.err);
	snprintf(want, sizeof(want), "%s_object3 is not correct!", prefix);
	ck_assert_msg(strstr(r.err, want) != NULL, "no '%s' in:\n%s", want,
		      r.err);
	ck_assert_msg(tb_count_str(r.err, "is not correct!") == 1,
		      "other objects named too:\n%s", r.err);
	/* the reads still all happened and were counted */
	ck_assert_int_eq((int)tb_field(r.out, "Total reads made:"), 6);
	tb_res_free(&r);
}

START_TEST(test_flipped_body_byte_fails_seq_naming_the_object)
{
	corrupt_and_seq(NULL, NULL, 40000);
}
END_TEST

START_TEST(test_flipped_header_byte_fails_seq)
{
	corrupt_and_seq(NULL, "--show-time", 9);
}
END_TEST

START_TEST(test_crc_catches_a_flip_even_without_verify)
{
	corrupt_and_seq("--crc", "--no-verify", 5000);
}
END_TEST

START_TEST(test_flip_in_lz4_data_fails_seq)
{
	corrupt_and_seq("--lz4", NULL, 200);
}
END_TEST

int main(void)
{
	const TTest *tests[] = {
		test_json_output_is_one_object_with_rados_keys,
		test_histogram_buckets_are_contiguous_and_narrow,
		test_histogram_percentiles_of_known_sets,
		test_runs_print_latency_percentiles_after_the_summary,
		test_plot_writes_an_svg_of_its_three_panels,
		/* verification */
		test_flipped_body_byte_fails_seq_naming_the_object,
		test_flipped_header_byte_fails_seq,
		test_crc_catches_a_flip_even_without_verify,
		test_flip_in_lz4_data_fails_seq,
		NULL
	};

	return tb_main("blbench_output", "output", tests);
}
