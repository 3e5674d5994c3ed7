/* SPDX-License-Identifier: MIT */
/*
 * blbench_out.c - what blbench prints: the running statistics, rados
 * bench's per-second table and summary (plain), and the same keys through
 * a small JSON writer (--format json).  The --plot SVG is
 * blbench_plot.c's.  It calls only libc and libbufferlist.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "blbench.h"

/*
 * The plain layout copies rados bench column for column: the header
 * "  sec Cur ops   started  finished  avg MB/s  cur MB/s last lat(s)  avg
 * lat(s)" repeated every 20 rows after a "min lat / max lat / avg lat"
 * line, C++ iostream's default formatting of doubles (six significant
 * digits, which is printf's %g), and the summary labels with their
 * spacing (write and read summaries differ, as there).  The JSON copies
 * Ceph's JSONFormatter: one object, every value a quoted string
 * (dump_format quotes), per-second rows in a "datas" array.
 *
 * Two deliberate differences, both where rados bench prints a placeholder:
 * a run too short for a whole second reports its overall bandwidth as Max
 * and Min bandwidth (rados bench prints DBL_MAX / 0; it already does the
 * same for IOPS), and "stddev_iops" of a write is printed with %f (rados
 * bench passes a double to %d, which prints garbage).
 *
 * Added after rados bench's summary, so that what reads its lines reads
 * them unchanged: the p50, p90, p99 and p99.9 latencies and the maximum
 * from a histogram of every operation's latency (blbench_hist.c; within
 * 1% of the exact values), as lines "Latency p50(s):" and so on, and as
 * the JSON keys latency_p50, latency_p90, latency_p99, latency_p999 and
 * latency_max, in seconds like rados bench's latency keys.
 */

/* ---- statistics ------------------------------------------------------------ */

/* Payload bytes the library copied so far, in every thread. */
static uint64_t copied_now(void)
{
	struct bl_stats st;

	bl_stats_get(&st);
	return st.copied_bytes;
}

void blb_stats_init(struct blb_stats *s, uint64_t op_size,
		    uint64_t object_size, bool is_read)
{
	memset(s, 0, sizeof(*s));
	blb_hist_init(&s->lat_hist);
	s->op_size = op_size;
	s->object_size = object_size;
	s->is_read = is_read;
	/* rados bench's starting points, so a run without ops prints the same */
	s->min_lat = 9999.0;
	s->min_bw = DBL_MAX;
	s->min_iops = INT_MAX;
	s->copied0 = copied_now();
}

void blb_stats_free(struct blb_stats *s)
{
	free(s->samples);
	s->samples = NULL;
	s->nsamples = s->samples_cap = 0;
}

void blb_stats_op_done(struct blb_stats *s, double lat)
{
	double delta;

	s->cur_lat = lat;
	blb_hist_add(&s->lat_hist, blb_hist_ns(lat));
	s->total_lat += lat;
	if (lat > s->max_lat)
		s->max_lat = lat;
	if (lat < s->min_lat)
		s->min_lat = lat;
	s->finished++;
	/* Welford's update, as rados bench does for its latency stddev */
	delta = lat - s->avg_lat;
	s->avg_lat = s->total_lat / s->finished;
	s->lat_m2 += delta * (lat - s->avg_lat);
	s->in_flight--;
}

static void add_sample(struct blb_stats *s, const struct blb_sample *x)
{
	if (s->nsamples == s->samples_cap) {
		size_t cap = s->samples_cap ? s->samples_cap * 2 : 64;
		struct blb_sample *n = realloc(s->samples, cap * sizeof(*n));

		if (!n)
			return;	/* the plot loses a point; the run goes on */
		s->samples = n;
		s->samples_cap = cap;
	}
	s->samples[s->nsamples++] = *x;
}

/* utime_t::localtime()'s layout: 2024-05-01T12:00:00.123456+0000 */
static void print_wallclock(FILE *f)
{
	struct timespec ts;
	struct tm tm;
	char buf[64], zone[16];

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	strftime(zone, sizeof(zone), "%z", &tm);
	fprintf(f, "%s.%06ld%s", buf, ts.tv_nsec / 1000, zone);
}

static void time_prefix(const struct blb_out *o)
{
	if (o->show_time) {
		print_wallclock(o->f);
		fputc(' ', o->f);
	}
}

void blb_stats_tick(struct blb_stats *s, struct blb_out *o, double now)
{
	struct blb_sample x;
	double bw, avg_bw, elapsed;
	int i = s->tick;

	if (i % 20 == 0 && !o->json) {
		if (i > 0) {
			print_wallclock(o->f);
			fprintf(o->f, " min lat: %g max lat: %g avg lat: %g\n",
				s->min_lat, s->max_lat, s->avg_lat);
		}
		time_prefix(o);
		fprintf(o->f, "%5s%8s%10s%10s%10s%10s%12s%12s\n", "sec",
			"Cur ops", "started", "finished", "avg MB/s",
			"cur MB/s", "last lat(s)", "avg lat(s)");
	}

	/*
	 * rados bench's interval arithmetic: the bandwidth of a second is
	 * what finished since the last second in which anything finished,
	 * spread over the seconds since then.
	 */
	if (s->cycles_since_change)
		bw = (double)(s->finished - s->prev_finished) * s->op_size /
		     BLB_MB / s->cycles_since_change;
	else
		bw = -1;
	if (!isnan(bw) && bw > -1) {
		double delta;

		if (bw > s->max_bw)
			s->max_bw = bw;
		if (bw < s->min_bw)
			s->min_bw = bw;
		s->bw_cycles++;
		delta = bw - s->avg_bw;
		s->avg_bw += delta / s->bw_cycles;
		s->bw_m2 += delta * (bw - s->avg_bw);
	}
	if (s->cycles_since_change)
		s->iops = (int)((double)(s->finished - s->prev_finished) /
				s->cycles_since_change);
	else
		s->iops = -1;
	if (s->iops > -1) {
		double delta;

		if (s->iops > s->max_iops)
			s->max_iops = s->iops;
		if (s->iops < s->min_iops)
			s->min_iops = s->iops;
		s->iops_cycles++;
		delta = s->iops - s->avg_iops;
		s->avg_iops += delta / s->iops_cycles;
		s->iops_m2 += delta * (s->iops - s->avg_iops);
	}

	elapsed = now - s->start;
	avg_bw = elapsed > 0 ? (double)s->op_size * s->finished / elapsed /
				       BLB_MB
			     : 0;
	x.t = elapsed;
	x.avg_bw = avg_bw;
	x.avg_lat = s->avg_lat;
	x.cur_ops = s->in_flight;
	x.started = s->started;
	x.finished = s->finished;
	if (s->prev_finished != s->finished) {
		s->prev_finished = s->finished;
		s->cycles_since_change = 0;
		x.cur_bw = bw;
		x.last_lat = s->cur_lat;
		if (!o->json) {
			time_prefix(o);
			fprintf(o->f, "%5d %7d %9d %9d %9g %9g %11g %11g\n", i,
				s->in_flight, s->started, s->finished, avg_bw,
				bw, s->cur_lat, s->avg_lat);
		} else {
			blb_out_open(o);
			blb_out_kv(o, "sec", "%d", i);
			blb_out_kv(o, "cur_ops", "%d", s->in_flight);
			blb_out_kv(o, "started", "%d", s->started);
			blb_out_kv(o, "finished", "%d", s->finished);
			blb_out_kv(o, "avg_bw", "%f", avg_bw);
			blb_out_kv(o, "cur_bw", "%f", bw);
			blb_out_kv(o, "last_lat", "%f", s->cur_lat);
			blb_out_kv(o, "avg_lat", "%f", s->avg_lat);
			blb_out_close(o);
		}
	} else {
		x.cur_bw = 0;
		x.last_lat = -1;
		if (!o->json) {
			time_prefix(o);
			fprintf(o->f, "%5d %7d %9d %9d %9g %9c %11c %11g\n", i,
				s->in_flight, s->started, s->finished, avg_bw,
				'0', '-', s->avg_lat);
		} else {
			blb_out_open(o);
			blb_out_kv(o, "sec", "%d", i);
			blb_out_kv(o, "cur_ops", "%d", s->in_flight);
			blb_out_kv(o, "started", "%d", s->started);
			blb_out_kv(o, "finished", "%d", s->finished);
			blb_out_kv(o, "avg_bw", "%f", avg_bw);
			blb_out_kv(o, "cur_bw", "%f", 0.0);
			blb_out_kv(o, "last_lat", "%f", 0.0);
			blb_out_kv(o, "avg_lat", "%f", s->avg_lat);
			blb_out_close(o);
		}
	}
	fflush(o->f);
	add_sample(s, &x);
	s->tick++;
	s->cycles_since_change++;
}

void blb_stats_merge(struct blb_stats *dst, const struct blb_stats *src)
{
	int n = dst->finished + src->finished;
	double mean;

	if (src->finished) {
		/* Chan et al.'s pairwise update of Welford's sums */
		mean = (dst->total_lat + src->total_lat) / n;
		dst->lat_m2 += src->lat_m2 +
			       (double)dst->finished * (dst->avg_lat - mean) *
				       (dst->avg_lat - mean) +
			       (double)src->finished * (src->avg_lat - mean) *
				       (src->avg_lat - mean);
		dst->total_lat += src->total_lat;
		dst->avg_lat = mean;
		dst->finished = n;
		if (src->min_lat < dst->min_lat)
			dst->min_lat = src->min_lat;
		if (src->max_lat > dst->max_lat)
			dst->max_lat = src->max_lat;
		dst->cur_lat = src->cur_lat;
	}
	dst->lat_hist.count += src->lat_hist.count;
	if (src->lat_hist.min_ns < dst->lat_hist.min_ns)
		dst->lat_hist.min_ns = src->lat_hist.min_ns;
	if (src->lat_hist.max_ns > dst->lat_hist.max_ns)
		dst->lat_hist.max_ns = src->lat_hist.max_ns;
	for (size_t i = 0; i < BLB_HIST_BUCKETS; i++)
		dst->lat_hist.b[i] += src->lat_hist.b[i];
	dst->started += src->started;
	dst->stored_bytes += src->stored_bytes;
	dst->logical_bytes += src->logical_bytes;
}

void blb_stats_final_sample(struct blb_stats *s, double now)
{
	struct blb_sample x;
	double last_t = s->nsamples ? s->samples[s->nsamples - 1].t : 0;
	double dt;

	x.t = now - s->start;
	dt = x.t - last_t;
	if (dt < 0.05)
		return;
	x.cur_bw = s->nsamples ? (double)(s->finished -
					  s->samples[s->nsamples - 1].finished) *
					 s->op_size / BLB_MB / dt
			       : 0;
	x.avg_bw = x.t > 0 ? (double)s->op_size * s->finished / x.t / BLB_MB : 0;
	x.last_lat = s->finished ? s->cur_lat : -1;
	x.avg_lat = s->avg_lat;
	x.cur_ops = s->in_flight;
	x.started = s->started;
	x.finished = s->finished;
	add_sample(s, &x);
}

/* ---- the JSON writer -------------------------------------------------------- */

void blb_out_init(struct blb_out *o, FILE *f, bool json, bool show_time)
{
	memset(o, 0, sizeof(*o));
	o->f = f;
	o->json = json;
	o->show_time = show_time;
	o->first[0] = true;
}

static void json_sep(struct blb_out *o)
{
	if (!o->first[o->depth])
		fputc(',', o->f);
	o->first[o->depth] = false;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* An object: the top-level "bench" section, or a row inside "datas". */
void blb_out_open(struct blb_out *o)
{
	if (!o->json)
		return;
	json_sep(o);
	fputc('{', o->f);
	if (o->depth + 1 < (int)(sizeof(o->first) / sizeof(o->first[0])))
		o->depth++;
	o->first[o->depth] = true;
}

void blb_out_close(struct blb_out *o)
{
	if (!o->json)
		return;
	fputc('}', o->f);
	if (o->depth > 0)
		o->depth--;
	if (o->depth == 0)
		fputc('\n', o->f);	/* Ceph ends its output with endl */
	fflush(o->f);
}

void blb_out_array_begin(struct blb_out *o, const char *key)
{
	if (!o->json)
		return;
	json_sep(o);
	json_string(o->f, key);
	fputs(":[", o->f);
	o->depth++;
	o->first[o->depth] = true;
}

void blb_out_array_end(struct blb_out *o)
{
	if (!o->json)
		return;
	fputc(']', o->f);
	o->depth--;
}

void blb_out_datas_begin(struct blb_out *o)
{
	blb_out_array_begin(o, "datas");
}

void blb_out_datas_end(struct blb_out *o)
{
	blb_out_array_end(o);
}

void blb_out_kv(struct blb_out *o, const char *key, const char *fmt, ...)
{
	char buf[BLB_NAME_MAX * 2];
	va_list ap;

	if (!o->json)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	json_sep(o);
	json_string(o->f, key);
	fputc(':', o->f);
	json_string(o->f, buf);
}

/* ---- intro and summary ------------------------------------------------------ */

void blb_out_write_intro(struct blb_out *o, const struct blb_opts *opt,
			 const char *prefix)
{
	if (!o->json) {
		time_prefix(o);
		fprintf(o->f,
			"Maintaining %u concurrent writes of %llu bytes to objects of size %llu for up to %d seconds or %llu objects\n",
			opt->concurrent, (unsigned long long)opt->op_size,
			(unsigned long long)opt->object_size, opt->seconds,
			(unsigned long long)opt->max_objects);
		time_prefix(o);
		fprintf(o->f, "Object prefix: %s\n", prefix);
		fflush(o->f);
		return;
	}
	blb_out_kv(o, "concurrent_ios", "%u", opt->concurrent);
	blb_out_kv(o, "object_size", "%llu",
		   (unsigned long long)opt->object_size);
	blb_out_kv(o, "op_size", "%llu", (unsigned long long)opt->op_size);
	blb_out_kv(o, "seconds_to_run", "%d", opt->seconds);
	blb_out_kv(o, "max_objects", "%llu",
		   (unsigned long long)opt->max_objects);
	blb_out_kv(o, "object_prefix", "%s", prefix);
}

/* The percentiles after the summary: what they are, and their labels. */
static const struct {
	double q;
	const char *label, *key;
} pcts[] = {
	{ 0.50, "Latency p50(s):", "latency_p50" },
	{ 0.90, "Latency p90(s):", "latency_p90" },
	{ 0.99, "Latency p99(s):", "latency_p99" },
	{ 0.999, "Latency p99.9(s):", "latency_p999" },
	{ 1.0, "Latency max(s):", "latency_max" },
};

static double hist_s(const struct blb_hist *h, double q)
{
	return (double)blb_hist_quantile(h, q) / 1e9;
}

static double stddev(double m2, int n)
{
	return n > 1 ? sqrt(m2 / (n - 1)) : 0;
}

void blb_out_summary(struct blb_out *o, struct blb_stats *s, double time_run)
{
	double bw = time_run > 0 ? (double)s->finished * s->op_size /
					   time_run / BLB_MB
				 : 0;
	int avg_iops = time_run > 0 ? (int)(s->finished / time_run) : 0;
	double sd_bw = stddev(s->bw_m2, s->bw_cycles);
	double sd_iops = stddev(s->iops_m2, s->iops_cycles);
	double sd_lat = stddev(s->lat_m2, s->finished);
	unsigned long long op = s->op_size, obj = s->object_size;

	/* Runs shorter than a second: see the comment at the top. */
	if (s->iops < 0)
		s->min_iops = s->max_iops = avg_iops;
	if (s->bw_cycles == 0)
		s->min_bw = s->max_bw = bw;

	if (!o->json) {
		FILE *f = o->f;

		time_prefix(o);
		if (!s->is_read) {
			fprintf(f, "Total time run:         %g\n", time_run);
			fprintf(f, "Total writes made:      %d\n", s->finished);
			fprintf(f, "Write size:             %llu\n", op);
			fprintf(f, "Object size:            %llu\n", obj);
			fprintf(f, "Bandwidth (MB/sec):     %g\n", bw);
			fprintf(f, "Stddev Bandwidth:       %g\n", sd_bw);
			fprintf(f, "Max bandwidth (MB/sec): %g\n", s->max_bw);
			fprintf(f, "Min bandwidth (MB/sec): %g\n", s->min_bw);
			fprintf(f, "Average IOPS:           %d\n", avg_iops);
			fprintf(f, "Stddev IOPS:            %g\n", sd_iops);
			fprintf(f, "Max IOPS:               %d\n", s->max_iops);
			fprintf(f, "Min IOPS:               %d\n", s->min_iops);
			fprintf(f, "Average Latency(s):     %g\n", s->avg_lat);
			fprintf(f, "Stddev Latency(s):      %g\n", sd_lat);
			fprintf(f, "Max latency(s):         %g\n", s->max_lat);
			fprintf(f, "Min latency(s):         %g\n", s->min_lat);
		} else {
			fprintf(f, "Total time run:       %g\n", time_run);
			fprintf(f, "Total reads made:     %d\n", s->finished);
			fprintf(f, "Read size:            %llu\n", op);
			fprintf(f, "Object size:          %llu\n", obj);
			fprintf(f, "Bandwidth (MB/sec):   %g\n", bw);
			fprintf(f, "Average IOPS:         %d\n", avg_iops);
			fprintf(f, "Stddev IOPS:          %g\n", sd_iops);
			fprintf(f, "Max IOPS:             %d\n", s->max_iops);
			fprintf(f, "Min IOPS:             %d\n", s->min_iops);
			fprintf(f, "Average Latency(s):   %g\n", s->avg_lat);
			fprintf(f, "Max latency(s):       %g\n", s->max_lat);
			fprintf(f, "Min latency(s):       %g\n", s->min_lat);
		}
		/* in the column of the summary above (24, reads 22) */
		for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
			fprintf(f, "%-*s%g\n", s->is_read ? 22 : 24,
				pcts[i].label, hist_s(&s->lat_hist, pcts[i].q));
		fflush(f);
		return;
	}
	blb_out_kv(o, "total_time_run", "%f", time_run);
	if (!s->is_read) {
		blb_out_kv(o, "total_writes_made", "%d", s->finished);
		blb_out_kv(o, "write_size", "%llu", op);
	} else {
		blb_out_kv(o, "total_reads_made", "%d", s->finished);
		blb_out_kv(o, "read_size", "%llu", op);
	}
	blb_out_kv(o, "object_size", "%llu", obj);
	blb_out_kv(o, "bandwidth", "%f", bw);
	if (!s->is_read) {
		blb_out_kv(o, "stddev_bandwidth", "%f", sd_bw);
		blb_out_kv(o, "max_bandwidth", "%f", s->max_bw);
		blb_out_kv(o, "min_bandwidth", "%f", s->min_bw);
	}
	blb_out_kv(o, "average_iops", "%d", avg_iops);
	blb_out_kv(o, "stddev_iops", "%f", sd_iops);
	blb_out_kv(o, "max_iops", "%d", s->max_iops);
	blb_out_kv(o, "min_iops", "%d", s->min_iops);
	blb_out_kv(o, "average_latency", "%f", s->avg_lat);
	if (!s->is_read)
		blb_out_kv(o, "stddev_latency", "%f", sd_lat);
	blb_out_kv(o, "max_latency", "%f", s->max_lat);
	blb_out_kv(o, "min_latency", "%f", s->min_lat);
	for (size_t i = 0; i < sizeof(pcts) / sizeof(pcts[0]); i++)
		blb_out_kv(o, pcts[i].key, "%f",
			   hist_s(&s->lat_hist, pcts[i].q));
	/*
	 * What the library copied while the ops ran (the pattern made
	 * before is not counted): 0 on the zero-copy paths, whatever lz4,
	 * a rebuild for O_DIRECT or a verification copied otherwise
	 */
	blb_out_kv(o, "client_copied_bytes", "%llu",
		   (unsigned long long)(copied_now() - s->copied0));
}
