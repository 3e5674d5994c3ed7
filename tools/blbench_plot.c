/* SPDX-License-Identifier: MIT */
/*
 * blbench_plot.c - blbench's --plot: the run drawn as an SVG (bandwidth
 * and latency per second, and the distribution of every operation's
 * latency), from the statistics the run kept.  It calls only libc,
 * libbufferlist and the latency histogram (blbench_hist.c).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "blbench.h"

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
