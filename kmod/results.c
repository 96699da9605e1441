// SPDX-License-Identifier: GPL-2.0
/*
 * results.c - turn a finished run into the `result`, `histogram` and
 * `samples` files (built once, under pl.lock, read through bin attributes).
 */
#define pr_fmt(fmt) "pmemlab: " fmt

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/mm.h>
#include <asm/tsc.h>
#include "pmemlab.h"

struct pl_buf {
	char *p;
	size_t len, cap;
};

static __printf(2, 3) void pl_out(struct pl_buf *b, const char *fmt, ...)
{
	va_list ap;

	if (b->len >= b->cap)
		return;
	va_start(ap, fmt);
	b->len += vscnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
}

/* a fixed-point value with three decimals */
static void pl_out_milli(struct pl_buf *b, const char *key, u64 milli)
{
	pl_out(b, " %s=%llu.%03llu", key, milli / 1000, milli % 1000);
}

struct pl_sum {
	u64 ops, reads, writes, bytes, ticks, max_ticks, gap, segments, bw_milli;
};

static u64 pl_bw_milli(u64 bytes, u64 ticks)
{
	/* MB/s (10^6 B/s) x 1000 = bytes * tsc_khz / ticks */
	return ticks ? pl_muldiv(bytes, tsc_khz, ticks) : 0;
}

static void pl_out_common(struct pl_buf *b, const struct pl_sum *s)
{
	u64 all = s->ticks + s->gap;

	pl_out(b, " ops=%llu reads=%llu writes=%llu bytes=%llu ticks=%llu ns=%llu",
	       s->ops, s->reads, s->writes, s->bytes, s->max_ticks,
	       pl_muldiv(s->max_ticks, 1000000, tsc_khz));
	pl_out_milli(b, "bw_mbps", s->bw_milli);
	pl_out(b, " segments=%llu gap_ticks=%llu", s->segments, s->gap);
	pl_out_milli(b, "irqoff_pct", all ? pl_muldiv(s->ticks, 100000, all) : 0);
}

static void pl_out_lat(struct pl_buf *b, const struct pl_hist *h, u64 overhead)
{
	static const u32 q[] = { 500000, 900000, 990000, 999000, 999900 };
	static const char *const qn[] = { "p50", "p90", "p99", "p999", "p9999" };
	u64 mean, sd;
	unsigned int i;

	pl_hist_moments(h, &mean, &sd);
	pl_out(b, " lat_overhead_ticks=%llu lat_n=%llu lat_min=%llu", overhead, h->n,
	       h->n ? h->min : 0);
	pl_out_milli(b, "lat_mean", mean);
	pl_out_milli(b, "lat_stddev", sd);
	for (i = 0; i < ARRAY_SIZE(q); i++)
		pl_out(b, " lat_%s=%llu", qn[i], pl_hist_pct(h, q[i]));
	pl_out(b, " lat_max=%llu\n", h->max);
}

static void pl_add_sum(struct pl_sum *s, const struct pl_worker *w)
{
	const struct pl_stats *st = &w->e.st;

	s->ops += st->ops;
	s->reads += st->reads;
	s->writes += st->writes;
	s->bytes += st->bytes;
	s->ticks += st->ticks;
	s->max_ticks = max(s->max_ticks, st->ticks);
	s->gap += w->gap_ticks;
	s->segments += w->segments;
	s->bw_milli += pl_bw_milli(st->bytes, st->ticks);
}

static const char *pl_mode_name(int mode)
{
	return mode == PL_MODE_LAT ? "latency" : "bandwidth";
}

static void pl_out_worker(struct pl_buf *b, const struct pl_run *r, const struct pl_worker *w)
{
	struct pl_sum s = { 0 };

	pl_add_sum(&s, w);
	pl_out(b, "thread=%u cpu=%u node=%d role=%s op=%s width=%u mode=%s",
	       w->idx, w->cpu, w->node, w->probe ? "probe" : "load",
	       pl_ops[w->op].name, r->width, pl_mode_name(w->e.mode));
	pl_out_common(b, &s);
	if (w->e.mode == PL_MODE_LAT)
		pl_out_lat(b, &w->e.hist, w->e.overhead);
	else
		pl_out(b, "\n");
}

static void pl_out_hist(struct pl_buf *b, const char *who, const struct pl_hist *h)
{
	unsigned int i;
	u64 lo, hi;

	for (i = 0; i < PL_HIST_NB; i++) {
		if (!h->b[i])
			continue;
		pl_hist_bounds(i, &lo, &hi);
		pl_out(b, "%s %llu %llu %llu\n", who, lo, hi, h->b[i]);
	}
}

static size_t pl_hist_nonempty(const struct pl_hist *h)
{
	size_t n = 0;
	unsigned int i;

	for (i = 0; i < PL_HIST_NB; i++)
		n += !!h->b[i];
	return n;
}

static int pl_build_histo(struct pl_run *r, struct pl_hist *all)
{
	struct pl_buf b = { 0 };
	char who[16];
	size_t rows = 0;
	unsigned int i;

	for (i = 0; i < r->n; i++)
		if (r->w[i].e.hist.b)
			rows += pl_hist_nonempty(&r->w[i].e.hist);
	rows += pl_hist_nonempty(all);
	b.cap = rows * 72 + 1;
	b.p = kvmalloc(b.cap, GFP_KERNEL);
	if (!b.p)
		return -ENOMEM;
	for (i = 0; i < r->n; i++) {
		if (!r->w[i].e.hist.b)
			continue;
		snprintf(who, sizeof(who), "%u", i);
		pl_out_hist(&b, who, &r->w[i].e.hist);
	}
	pl_out_hist(&b, "all", all);
	pl.histo = b.p;
	pl.histo_len = b.len;
	return 0;
}

static int pl_build_samples(struct pl_run *r)
{
	size_t nthr = 0, per = r->c.samples, k = 0;
	unsigned int i;

	for (i = 0; i < r->n; i++)
		nthr += !!r->w[i].e.samples;
	if (!nthr || !per)
		return 0;
	pl.samples = kvcalloc(nthr * per, sizeof(u64), GFP_KERNEL);
	if (!pl.samples)
		return -ENOMEM;
	for (i = 0; i < r->n; i++) {
		if (!r->w[i].e.samples)
			continue;
		memcpy(pl.samples + k * per, r->w[i].e.samples, per * sizeof(u64));
		k++;
	}
	pl.samples_len = nthr * per * sizeof(u64);
	return 0;
}

int pl_results_build(struct pl_run *r)
{
	struct pl_hist all = { 0 };
	struct pl_sum s = { 0 };
	struct pl_buf b = { 0 };
	u64 overhead = 0;
	bool lat = false, same_op = true;
	unsigned int i;
	int err = -ENOMEM;

	pl_results_free();
	all.b = kvcalloc(PL_HIST_NB, sizeof(u64), GFP_KERNEL);
	if (!all.b)
		return -ENOMEM;
	pl_hist_reset(&all);
	b.cap = (r->n + 1) * 768;
	b.p = kvmalloc(b.cap, GFP_KERNEL);
	if (!b.p)
		goto out;
	for (i = 0; i < r->n; i++) {
		const struct pl_worker *w = &r->w[i];

		pl_out_worker(&b, r, w);
		pl_add_sum(&s, w);
		same_op &= w->op == r->w[0].op;
		if (w->e.mode == PL_MODE_LAT) {
			pl_hist_merge(&all, &w->e.hist);
			overhead = max(overhead, w->e.overhead);
			lat = true;
		}
	}
	pl_out(&b, "thread=all cpu=-1 node=-1 role=all op=%s width=%u mode=%s",
	       same_op ? pl_ops[r->w[0].op].name : "mixed", r->width,
	       pl_mode_name(r->c.mode));
	pl_out_common(&b, &s);
	if (lat)
		pl_out_lat(&b, &all, overhead);
	else
		pl_out(&b, "\n");
	pl.result = b.p;
	pl.result_len = b.len;
	err = pl_build_histo(r, &all);
	if (!err)
		err = pl_build_samples(r);
out:
	kvfree(all.b);
	return err;
}

void pl_results_free(void)
{
	kvfree(pl.result);
	kvfree(pl.histo);
	kvfree(pl.samples);
	pl.result = NULL;
	pl.histo = NULL;
	pl.samples = NULL;
	pl.result_len = 0;
	pl.histo_len = 0;
	pl.samples_len = 0;
}
