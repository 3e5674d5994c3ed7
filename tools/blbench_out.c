/* SPDX-License-Identifier: MIT */
/*
 * blbench_out.c - what blbench prints: the running statistics, rados
 * bench's per-second table and summary (plain), the same keys through a
 * small JSON writer (--format json), and the --plot SVG.  It calls only
 * libc and libbufferlist.
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

/* ---- the SVG plot ------------------------------------------------------------ */

/*
 * Two panels sharing the time axis: MB/s per second (cur and avg) above,
 * latency per second (last and avg) below — the picture people draw by
 * hand from rados bench's table — and a third, the distribution of every
 * operation's latency: the share of operations per latency bin on a
 * logarithmic axis (a run's tail is often decades from its median), with
 * the percentiles of the summary marked.  Plain SVG 1.1, no script, no
 * fonts beyond the generic families, so any browser or rsvg renders it.
 */
#define SVG_W 900
#define SVG_H 960
#define PLOT_L 90
#define PLOT_R 870
#define PANEL1_T 90
#define PANEL1_B 350
#define PANEL2_T 410
#define PANEL2_B 630
#define PANEL3_T 690
#define PANEL3_B 910
#define DIST_BINS_PER_DECADE 20
#define DIST_DECADES_MAX 12	/* 1 ns .. 1000 s */

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '&': fputs("&amp;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20)
				fputc(*s, f);
		}
	}
}

/* A "nice" step (1, 2 or 5 times a power of ten) for about @n ticks. */
static double nice_step(double range, int n)
{
	double raw, mag, f;

	if (!(range > 0))
		return 1;
	raw = range / n;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	if (f <= 1)
		return mag;
	if (f <= 2)
		return 2 * mag;
	if (f <= 5)
		return 5 * mag;
	return 10 * mag;
}

static double axis_max(double v)
{
	double step;

	if (!(v > 0))
		return 1;
	step = nice_step(v, 5);
	return ceil(v * 1.05 / step) * step;
}

struct panel {
	int top, bottom;
	double ymax, xmax;
};

static double px(const struct panel *p, double t)
{
	return PLOT_L + (PLOT_R - PLOT_L) * (t / p->xmax);
}

static double py(const struct panel *p, double v)
{
	if (v < 0)
		v = 0;
	return p->bottom - (p->bottom - p->top) * (v / p->ymax);
}

static void svg_axes(FILE *f, const struct panel *p, const char *ylabel)
{
	double step, v;

	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#333\"/>\n",
		PLOT_L, p->top, PLOT_R - PLOT_L, p->bottom - p->top);
	step = nice_step(p->ymax, 5);
	for (v = 0; v <= p->ymax * 1.0001; v += step) {
		double y = py(p, v);

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			PLOT_L, y, PLOT_R, y);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>\n",
			PLOT_L - 5, y, PLOT_L, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			PLOT_L - 8, y + 4, v);
	}
	step = nice_step(p->xmax, 10);
	if (step < 1)
		step = 1;	/* the table has whole seconds */
	for (v = 0; v <= p->xmax * 1.0001; v += step) {
		double x = px(p, v);

		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>\n",
			x, p->bottom, x, p->bottom + 5);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>\n",
			x, p->bottom + 18, v);
	}
	fprintf(f, "<text x=\"20\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 20 %d)\">",
		(p->top + p->bottom) / 2, (p->top + p->bottom) / 2);
	xml_text(f, ylabel);
	fputs("</text>\n", f);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (s)</text>\n",
		(PLOT_L + PLOT_R) / 2, p->bottom + 36);
}

enum series { S_CUR_BW, S_AVG_BW, S_LAST_LAT, S_AVG_LAT };

static double sample_value(const struct blb_sample *x, enum series which)
{
	switch (which) {
	case S_CUR_BW: return x->cur_bw;
	case S_AVG_BW: return x->avg_bw;
	case S_LAST_LAT: return x->last_lat;
	default: return x->avg_lat;
	}
}

static void svg_series(FILE *f, const struct panel *p,
		       const struct blb_stats *s, enum series which,
		       const char *color, bool dashed)
{
	size_t i;

	fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s points=\"",
		color, dashed ? " stroke-dasharray=\"6,4\"" : "");
	for (i = 0; i < s->nsamples; i++) {
		double v = sample_value(&s->samples[i], which);

		if (v < 0)	/* '-': nothing finished in that second */
			continue;
		fprintf(f, "%.1f,%.1f ", px(p, s->samples[i].t), py(p, v));
	}
	fputs("\"/>\n", f);
	if (dashed || s->nsamples > 120)
		return;
	for (i = 0; i < s->nsamples; i++) {
		double v = sample_value(&s->samples[i], which);

		if (v < 0)
			continue;
		fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
			px(p, s->samples[i].t), py(p, v), color);
	}
}

static void svg_legend(FILE *f, int x, int y, const char *color, bool dashed,
		       const char *label)
{
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"%s/>\n",
		x, y, x + 24, y, color,
		dashed ? " stroke-dasharray=\"6,4\"" : "");
	fprintf(f, "<text x=\"%d\" y=\"%d\">", x + 30, y + 4);
	xml_text(f, label);
	fputs("</text>\n", f);
}

/* "10 us", "1 ms", "100 s": a power of ten of seconds, in a unit. */
static void decade_label(char *buf, size_t len, int e)
{
	static const char *const unit[] = { "ns", "us", "ms", "s" };
	int u = e < -9 ? 0 : e >= 0 ? 3 : (e + 9) / 3;
	int rest = e + 9 - 3 * u;

	if (rest < 0)
		snprintf(buf, len, "1e%d s", e);
	else
		snprintf(buf, len, "%.0f %s", pow(10, rest), unit[u]);
}

/*
 * The latency distribution: the histogram's buckets regrouped into
 * DIST_BINS_PER_DECADE bins per decade (a bucket is 1/128 of its value
 * wide, a bin 12%, so no bin falls between two buckets), from the decade
 * of the fastest op to that of the slowest.
 */
static void svg_distribution(FILE *f, const struct blb_stats *s)
{
	static const char *const colors[] = {
		"#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#333",
	};
	static const struct {
		double q;
		const char *name;
	} marks[] = {
		{ 0.50, "p50" }, { 0.90, "p90" }, { 0.99, "p99" },
		{ 0.999, "p99.9" }, { 1.0, "max" },
	};
	const struct blb_hist *h = &s->lat_hist;
	struct panel p = { PANEL3_T, PANEL3_B, 0, 1 };
	uint64_t bins[DIST_DECADES_MAX * DIST_BINS_PER_DECADE];
	double lo, vmax = 0, w, step, v;
	int e0, e1, nb, i, n;
	char label[64], legend[256];

	memset(bins, 0, sizeof(bins));
	if (h->count) {
		e0 = (int)floor(log10(h->min_ns > 1 ? (double)h->min_ns : 1));
		e1 = (int)ceil(log10((double)h->max_ns + 1));
	} else {
		e0 = 3;		/* an empty run: 1 us .. 1 s of nothing */
		e1 = 9;
	}
	if (e1 <= e0)
		e1 = e0 + 1;
	if (e1 - e0 > DIST_DECADES_MAX)
		e0 = e1 - DIST_DECADES_MAX;
	nb = (e1 - e0) * DIST_BINS_PER_DECADE;
	lo = pow(10, e0);
	for (size_t b = 0; b < BLB_HIST_BUCKETS; b++) {
		uint64_t lower, width;
		int k;

		if (!h->b[b])
			continue;
		blb_hist_bucket(b, &lower, &width);
		k = (int)floor(log10((lower + width / 2.0) / lo) *
			       DIST_BINS_PER_DECADE);
		k = k < 0 ? 0 : k >= nb ? nb - 1 : k;
		bins[k] += h->b[b];
	}
	for (i = 0; i < nb; i++)
		vmax = fmax(vmax, h->count ? 100.0 * bins[i] / h->count : 0);
	p.ymax = axis_max(vmax);

	/* the frame, the y axis (% of ops) and the decades */
	fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" stroke=\"#333\"/>\n",
		PLOT_L, p.top, PLOT_R - PLOT_L, p.bottom - p.top);
	step = nice_step(p.ymax, 5);
	for (v = 0; v <= p.ymax * 1.0001; v += step) {
		double y = py(&p, v);

		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			PLOT_L, y, PLOT_R, y);
		fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#333\"/>\n",
			PLOT_L - 5, y, PLOT_L, y);
		fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%g</text>\n",
			PLOT_L - 8, y + 4, v);
	}
	w = (double)(PLOT_R - PLOT_L) / nb;
	for (i = 0; i <= e1 - e0; i++) {
		double x = PLOT_L + i * DIST_BINS_PER_DECADE * w;

		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#333\"/>\n",
			x, p.bottom, x, p.bottom + 5);
		decade_label(label, sizeof(label), e0 + i - 9);
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
			x, p.bottom + 18, label);
	}
	fprintf(f, "<text x=\"20\" y=\"%d\" text-anchor=\"middle\" transform=\"rotate(-90 20 %d)\">ops (%%)</text>\n",
		(p.top + p.bottom) / 2, (p.top + p.bottom) / 2);
	fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">latency (log scale)</text>\n",
		(PLOT_L + PLOT_R) / 2, p.bottom + 36);

	/* the bars */
	for (i = 0; i < nb; i++) {
		double y;

		if (!bins[i])
			continue;
		y = py(&p, 100.0 * bins[i] / h->count);
		fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#1f77b4\" fill-opacity=\"0.6\"/>\n",
			PLOT_L + i * w, y, w, p.bottom - y);
	}

	/* the percentiles: a line each, the names stacked so none overlap */
	n = snprintf(legend, sizeof(legend), "latency distribution (%llu ops):",
		     (unsigned long long)h->count);
	for (i = 0; h->count && i < (int)(sizeof(marks) / sizeof(marks[0])); i++) {
		double t = (double)blb_hist_quantile(h, marks[i].q);
		double x = PLOT_L + log10(fmax(t, 1) / lo) *
				    DIST_BINS_PER_DECADE * w;
		bool right = x > PLOT_R - 60;

		x = fmin(fmax(x, PLOT_L), PLOT_R);
		fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"1.5\" stroke-dasharray=\"4,3\"/>\n",
			x, p.top, x, p.bottom, colors[i]);
		/* a halo of the background, so that a close line behind
		 * does not cross the name out */
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"%s\" fill=\"%s\" stroke=\"#fafafa\" stroke-width=\"3\" paint-order=\"stroke\">%s</text>\n",
			right ? x - 4 : x + 4, p.top + 14 + 14 * i,
			right ? "end" : "start", colors[i], marks[i].name);
		if (n >= 0 && (size_t)n < sizeof(legend))
			n += snprintf(legend + n, sizeof(legend) - (size_t)n,
				      "%s %s %.4g s", i ? "," : "",
				      marks[i].name, t / 1e9);
	}
	fprintf(f, "<text x=\"%d\" y=\"%d\">", PLOT_L + 10, PANEL3_T - 10);
	xml_text(f, legend);
	fputs("</text>\n", f);
}

/* About 0.6 em per character of a bold sans-serif font. */
static double title_font(const char *title)
{
	size_t n = strlen(title);
	double fit = n ? (SVG_W - 20) / (0.62 * n) : 15;

	return fit < 15 ? (fit < 7 ? 7 : fit) : 15;
}

int blb_plot_svg(const char *path, const struct blb_stats *s,
		 const char *title, double time_run)
{
	struct panel bwp = { PANEL1_T, PANEL1_B, 0, 0 };
	struct panel latp = { PANEL2_T, PANEL2_B, 0, 0 };
	double bmax = 0, lmax = 0, xmax = time_run;
	double bw = time_run > 0 ? (double)s->finished * s->op_size /
					   time_run / BLB_MB
				 : 0;
	char sub[256];
	size_t i;
	FILE *f;
	int err;

	for (i = 0; i < s->nsamples; i++) {
		const struct blb_sample *x = &s->samples[i];

		bmax = fmax(bmax, fmax(x->cur_bw, x->avg_bw));
		lmax = fmax(lmax, fmax(x->last_lat, x->avg_lat));
		xmax = fmax(xmax, x->t);
	}
	bwp.ymax = axis_max(bmax);
	latp.ymax = axis_max(lmax);
	/* time runs to the next whole second, not to a padded "nice" value */
	bwp.xmax = latp.xmax = xmax > 1 ? ceil(xmax - 1e-9) : 1;

	f = fopen(path, "w");
	if (!f)
		return -errno;
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" font-size=\"12\">\n",
		SVG_W, SVG_H, SVG_W, SVG_H);
	fputs("<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n", f);
	/* a long command line gets a smaller font rather than leaving the picture */
	fprintf(f, "<text x=\"%d\" y=\"28\" text-anchor=\"middle\" font-size=\"%.1f\" font-weight=\"bold\">",
		SVG_W / 2, title_font(title));
	xml_text(f, title);
	fputs("</text>\n", f);
	snprintf(sub, sizeof(sub),
		 "%s: %d ops of %llu bytes in %.2f s, %.1f MB/s, avg latency %.4f s (MB = 2^20 bytes)",
		 s->is_read ? "reads" : "writes", s->finished,
		 (unsigned long long)s->op_size, time_run, bw, s->avg_lat);
	fprintf(f, "<text x=\"%d\" y=\"50\" text-anchor=\"middle\" fill=\"#444\">",
		SVG_W / 2);
	xml_text(f, sub);
	fputs("</text>\n", f);

	svg_axes(f, &bwp, "bandwidth (MB/s)");
	svg_series(f, &bwp, s, S_AVG_BW, "#888", true);
	svg_series(f, &bwp, s, S_CUR_BW, "#1f77b4", false);
	svg_legend(f, PLOT_L + 10, PANEL1_T - 14, "#1f77b4", false,
		   "cur MB/s");
	svg_legend(f, PLOT_L + 130, PANEL1_T - 14, "#888", true, "avg MB/s");

	svg_axes(f, &latp, "latency (s)");
	svg_series(f, &latp, s, S_AVG_LAT, "#888", true);
	svg_series(f, &latp, s, S_LAST_LAT, "#d62728", false);
	svg_legend(f, PLOT_L + 10, PANEL2_T - 14, "#d62728", false,
		   "last lat(s)");
	svg_legend(f, PLOT_L + 130, PANEL2_T - 14, "#888", true,
		   "avg lat(s)");

	svg_distribution(f, s);
	fputs("</svg>\n", f);

	err = ferror(f) ? -EIO : 0;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}
