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

struct pl_sum {
	u64 ops, reads, writes, bytes, ticks, max_ticks, gap, segments, bw_milli;
	u64 ceil_milli;			/* engine ceilings of the bandwidth threads */
	bool ceil;			/* a bandwidth thread is among them */
};

static u64 pl_bw_milli(u64 bytes, u64 ticks)
{
	/* MB/s (10^6 B/s) x 1000 = bytes * tsc_khz / ticks */
	return ticks ? pl_muldiv(bytes, tsc_khz, ticks) : 0;
}

/* the scalars of one result row, from its sums and (latency) histogram */
static void pl_scalars(struct pl_scalars *sc, const struct pl_sum *s,
		       const struct pl_hist *h, u64 overhead)
{
	static const u32 q[PL_NPCT] = { 500000, 900000, 990000, 999000, 999900 };
	u64 all = s->ticks + s->gap;
	unsigned int i;

	memset(sc, 0, sizeof(*sc));
	sc->ops = s->ops;
	sc->reads = s->reads;
	sc->writes = s->writes;
	sc->bytes = s->bytes;
	sc->ticks = s->max_ticks;
	sc->ns = pl_muldiv(s->max_ticks, 1000000, tsc_khz);
	sc->bw_milli = s->bw_milli;
	sc->segments = s->segments;
	sc->gap_ticks = s->gap;
	sc->irqoff_milli = all ? pl_muldiv(s->ticks, 100000, all) : 0;
	sc->ceil = s->ceil;
	sc->ceil_milli = s->ceil_milli;
	if (!h)
		return;
	sc->lat = true;
	sc->lat_overhead = overhead;
	sc->lat_n = h->n;
	sc->lat_min = h->n ? h->min : 0;
	sc->lat_max = h->max;
	pl_hist_moments(h, &sc->lat_mean_milli, &sc->lat_sd_milli);
	for (i = 0; i < PL_NPCT; i++)
		sc->lat_p[i] = pl_hist_pct(h, q[i]);
}

/* a fixed-point value with three decimals */
static void pl_out_milli(struct pl_buf *b, const char *key, u64 milli)
{
	pl_out(b, " %s=%llu.%03llu", key, milli / 1000, milli % 1000);
}

static void pl_out_scalars(struct pl_buf *b, const struct pl_scalars *sc)
{
	static const char *const qn[PL_NPCT] = { "p50", "p90", "p99", "p999", "p9999" };
	unsigned int i;

	pl_out(b, " ops=%llu reads=%llu writes=%llu bytes=%llu ticks=%llu ns=%llu",
	       sc->ops, sc->reads, sc->writes, sc->bytes, sc->ticks, sc->ns);
	pl_out_milli(b, "bw_mbps", sc->bw_milli);
	if (sc->ceil)
		pl_out_milli(b, "ceiling_mbps", sc->ceil_milli);
	pl_out(b, " segments=%llu gap_ticks=%llu", sc->segments, sc->gap_ticks);
	pl_out_milli(b, "irqoff_pct", sc->irqoff_milli);
	if (!sc->lat) {
		pl_out(b, "\n");
		return;
	}
	pl_out(b, " lat_overhead_ticks=%llu lat_n=%llu lat_min=%llu", sc->lat_overhead,
	       sc->lat_n, sc->lat_min);
	pl_out_milli(b, "lat_mean", sc->lat_mean_milli);
	pl_out_milli(b, "lat_stddev", sc->lat_sd_milli);
	for (i = 0; i < PL_NPCT; i++)
		pl_out(b, " lat_%s=%llu", qn[i], sc->lat_p[i]);
	pl_out(b, " lat_max=%llu\n", sc->lat_max);
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
	if (w->e.mode == PL_MODE_BW) {
		s->ceil = true;
		s->ceil_milli += pl_bw_milli(w->e.ceil_bytes, w->e.ceil_ticks);
	}
}

static const char *pl_mode_name(int mode)
{
	return mode == PL_MODE_LAT ? "latency" : "bandwidth";
}

static void pl_out_worker(struct pl_buf *b, const struct pl_run *r, const struct pl_worker *w)
{
	struct pl_scalars sc;
	struct pl_sum s = { 0 };
	bool lat = w->e.mode == PL_MODE_LAT;

	pl_add_sum(&s, w);
	pl_scalars(&sc, &s, lat ? &w->e.hist : NULL, w->e.overhead);
	pl_out(b, "thread=%u cpu=%u node=%d role=%s op=%s width=%u mode=%s insn=%s loop=%s",
	       w->idx, w->cpu, w->node, w->probe ? "probe" : "load",
	       pl_ops[w->op].name, r->width, pl_mode_name(w->e.mode), w->e.insn,
	       w->e.loop_name);
	pl_out_scalars(b, &sc);
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
	bool lat = false, same_op = true, same_insn = true, same_loop = true;
	unsigned int i;
	int err = -ENOMEM;

	pl_results_free();
	all.b = kvcalloc(PL_HIST_NB, sizeof(u64), GFP_KERNEL);
	if (!all.b)
		return -ENOMEM;
	pl_hist_reset(&all);
	b.cap = (r->n + 1) * 1024;
	b.p = kvmalloc(b.cap, GFP_KERNEL);
	if (!b.p)
		goto out;
	for (i = 0; i < r->n; i++) {
		const struct pl_worker *w = &r->w[i];

		pl_out_worker(&b, r, w);
		pl_add_sum(&s, w);
		same_op &= w->op == r->w[0].op;
		same_insn &= !strcmp(w->e.insn, r->w[0].e.insn);
		same_loop &= w->e.loop_name == r->w[0].e.loop_name;
		if (w->e.mode == PL_MODE_LAT) {
			pl_hist_merge(&all, &w->e.hist);
			overhead = max(overhead, w->e.overhead);
			lat = true;
		}
	}
	pl_scalars(&pl.agg, &s, lat ? &all : NULL, overhead);
	pl.agg_valid = true;
	pl_out(&b, "thread=all cpu=-1 node=-1 role=all op=%s width=%u mode=%s insn=%s loop=%s",
	       same_op ? pl_ops[r->w[0].op].name : "mixed", r->width,
	       pl_mode_name(r->c.mode), same_insn ? r->w[0].e.insn : "mixed",
	       same_loop ? r->w[0].e.loop_name : "mixed");
	pl_out_scalars(&b, &pl.agg);
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
	pl.agg_valid = false;
	memset(&pl.agg, 0, sizeof(pl.agg));
}
