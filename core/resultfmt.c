// SPDX-License-Identifier: GPL-2.0
/*
 * resultfmt.c - the text of a finished run, one format for the module's
 * `result` and `histogram` files and the runner's output: a line of
 * key=value fields per thread, then the `thread=all` line, and a
 * `who lo hi count` line per non-empty histogram bucket
 * (docs/interface.md, "Results").
 */
#include "pl_run.h"

static u64 pl_bw_milli(u64 bytes, u64 ticks, u64 tsc_khz)
{
	/* MB/s (10^6 B/s) x 1000 = bytes * tsc_khz / ticks */
	return ticks ? pl_muldiv(bytes, tsc_khz, ticks) : 0;
}

static void pl_sum_add(struct pl_sum *s, const struct pl_thread *t, u64 tsc_khz)
{
	const struct pl_stats *st = &t->e.st;

	s->ops += st->ops;
	s->reads += st->reads;
	s->writes += st->writes;
	s->bytes += st->bytes;
	s->ticks += st->ticks;
	s->gap += t->gap_ticks;
	s->segments += t->segments;
	if (t->segments) {
		if (!s->last || t->first_tsc < s->first)
			s->first = t->first_tsc;
		if (t->last_tsc > s->last)
			s->last = t->last_tsc;
		/* a worker that got its CPU late (a busy host, a stalled vCPU) starts late */
		if (t->first_tsc > t->start && t->first_tsc - t->start > s->lag)
			s->lag = t->first_tsc - t->start;
		if (t->end_lag > s->end_lag)
			s->end_lag = t->end_lag;
	}
	if (t->irqoff_max > s->irqoff_max)
		s->irqoff_max = t->irqoff_max;
	if (t->e.mode == PL_MODE_BW) {
		s->ceil = true;
		s->ceil_milli += pl_bw_milli(t->e.ceil_bytes, t->e.ceil_ticks, tsc_khz);
		s->ceil_n++;
		s->ceil_reused += t->ceil_reused;
		s->ceil_low += pl_ceil_low(t);
	}
}

/*
 * The scalars of one result row, from its sums and (latency) histogram.
 * A thread's row: its bytes over its own timed ticks.  The `all` row
 * (window): the threads' bytes over the time window they ran in together,
 * from the first thread's first timed stamp to the last thread's last
 * (gaps included), so threads that ran for different times (count > 0)
 * are not each credited with a rate over their own period.
 */
/* setup, teardown, total (pl_scalars): the stamps clamped into [run, done] */
static void pl_scalars_times(struct pl_scalars *sc, const struct pl_sum *s, const struct pl_report *r)
{
	u64 first, last, tsc_khz = r->tsc_khz;

	if (!r->run_tsc || r->done_tsc < r->run_tsc)
		return;
	sc->timed = true;
	sc->total = r->done_tsc - r->run_tsc;
	if (s->segments) {
		first = s->first < r->run_tsc ? r->run_tsc : s->first > r->done_tsc ? r->done_tsc : s->first;
		last = s->last < first ? first : s->last > r->done_tsc ? r->done_tsc : s->last;
		sc->setup = first - r->run_tsc;
		sc->teardown = r->done_tsc - last;
	} else {
		sc->setup = sc->total;
	}
	sc->setup_ns = pl_muldiv(sc->setup, 1000000, tsc_khz);
	sc->teardown_ns = pl_muldiv(sc->teardown, 1000000, tsc_khz);
	sc->total_ns = pl_muldiv(sc->total, 1000000, tsc_khz);
}

static void pl_scalars(struct pl_scalars *sc, const struct pl_sum *s, const struct pl_hist *h,
		       u64 overhead, const struct pl_report *r, bool window)
{
	u64 tsc_khz = r->tsc_khz;
	static const u32 q[PL_NPCT] = { 500000, 900000, 990000, 999000, 999900 };
	u64 all = s->ticks + s->gap;
	unsigned int i;

	memset(sc, 0, sizeof(*sc));
	sc->ops = s->ops;
	sc->reads = s->reads;
	sc->writes = s->writes;
	sc->bytes = s->bytes;
	sc->ticks = window ? s->last - s->first : s->ticks;
	sc->ns = pl_muldiv(sc->ticks, 1000000, tsc_khz);
	sc->bw_milli = pl_bw_milli(s->bytes, sc->ticks, tsc_khz);
	sc->segments = s->segments;
	sc->gap_ticks = s->gap;
	sc->start_lag = s->lag;
	sc->end_lag = s->end_lag;
	sc->irqoff_milli = all ? pl_muldiv(s->ticks, 100000, all) : 0;
	sc->irqoff_max = s->irqoff_max;
	sc->ceil = s->ceil;
	sc->ceil_milli = s->ceil_milli;
	/*
	 * ceil.c reuses a run's ceilings whole: reused on every bandwidth
	 * thread, or measured; reused-low when a thread outran its reused
	 * ceiling (the `all` row's sum holds that stale part too)
	 */
	if (!s->ceil_n || s->ceil_reused != s->ceil_n)
		sc->ceil_src = PL_CEIL_MEASURED;
	else
		sc->ceil_src = s->ceil_low ? PL_CEIL_REUSED_LOW : PL_CEIL_REUSED;
	pl_scalars_times(sc, s, r);
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

/* the same, signed ("-0.250") */
static void pl_out_smilli(struct pl_buf *b, const char *key, s64 milli)
{
	u64 m = milli < 0 ? -(u64)milli : (u64)milli;

	pl_out(b, " %s=%s%llu.%03llu", key, milli < 0 ? "-" : "", m / 1000, m % 1000);
}

static void pl_out_scalars(struct pl_buf *b, const struct pl_scalars *sc)
{
	static const char *const qn[PL_NPCT] = { "p50", "p90", "p99", "p999", "p9999" };
	unsigned int i;

	pl_out(b, " ops=%llu reads=%llu writes=%llu bytes=%llu ticks=%llu ns=%llu",
	       sc->ops, sc->reads, sc->writes, sc->bytes, sc->ticks, sc->ns);
	pl_out_milli(b, "bw_mbps", sc->bw_milli);
	if (sc->ceil) {
		pl_out_milli(b, "ceiling_mbps", sc->ceil_milli);
		pl_out(b, " ceiling_src=%s", pl_ceil_src_name(sc->ceil_src));
	}
	pl_out(b, " segments=%llu gap_ticks=%llu start_lag_ticks=%llu end_lag_ticks=%llu", sc->segments,
	       sc->gap_ticks, sc->start_lag, sc->end_lag);
	if (sc->timed)
		pl_out(b, " setup_ticks=%llu setup_ns=%llu teardown_ticks=%llu teardown_ns=%llu total_ticks=%llu total_ns=%llu",
		       sc->setup, sc->setup_ns, sc->teardown, sc->teardown_ns, sc->total, sc->total_ns);
	pl_out_milli(b, "irqoff_pct", sc->irqoff_milli);
	pl_out(b, " irqoff_max_ticks=%llu", sc->irqoff_max);
	if (!sc->lat) {
		pl_out(b, "\n");
		return;
	}
	pl_out(b, " lat_overhead_ticks=%llu lat_n=%llu lat_min=%llu", sc->lat_overhead,
	       sc->lat_n, sc->lat_min);
	pl_out_smilli(b, "lat_mean", sc->lat_mean_milli);
	pl_out_milli(b, "lat_stddev", sc->lat_sd_milli);
	for (i = 0; i < PL_NPCT; i++)
		pl_out(b, " lat_%s=%llu", qn[i], sc->lat_p[i]);
	pl_out(b, " lat_max=%llu\n", sc->lat_max);
}

/*
 * op chase: whether the thread's chain was laid for this run or kept from
 * the run before (the served runner keeps an identical chain; the module
 * and the one-shot runner always lay it).  `all`: kept when every chase
 * thread's was, laid when any was laid; no field without a chase thread.
 */
static void pl_out_chain(struct pl_buf *b, bool chase, bool kept)
{
	if (chase)
		pl_out(b, " chain=%s", kept ? "kept" : "laid");
}

static const char *pl_mode_name(int mode)
{
	return pl_mode_names[mode == PL_MODE_LAT];
}

void pl_report_begin(struct pl_report *r, u64 *buckets, u64 tsc_khz, unsigned int width)
{
	memset(r, 0, sizeof(*r));
	r->tsc_khz = tsc_khz;
	r->width = width;
	r->all.b = buckets;
	r->same_op = true;
	r->same_insn = true;
	r->same_loop = true;
	pl_hist_reset(&r->all);
}

void pl_report_times(struct pl_report *r, u64 run_tsc, u64 done_tsc)
{
	r->run_tsc = run_tsc;
	r->done_tsc = done_tsc;
}

static void pl_report_hist(struct pl_buf *b, const char *who, const struct pl_hist *h)
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

size_t pl_report_hist_room(const struct pl_thread *t)
{
	size_t rows = 0;
	unsigned int i;

	for (i = 0; t->e.hist.b && i < PL_HIST_NB; i++)
		rows += !!t->e.hist.b[i];
	/* its own lines, and as many again for the merged `all` (never more buckets than all threads') */
	return 2 * rows * PL_HIST_LINE_BYTES;
}

void pl_report_thread(struct pl_buf *b, struct pl_buf *hist, struct pl_report *r,
		      const struct pl_thread *t)
{
	const struct pl_eng *e = &t->e;
	bool lat = e->mode == PL_MODE_LAT;
	struct pl_sum s = { 0 };
	struct pl_scalars sc;
	char who[16];

	pl_sum_add(&s, t, r->tsc_khz);
	pl_scalars(&sc, &s, lat ? &e->hist : NULL, e->overhead, r, false);
	pl_out(b, "thread=%u cpu=%d node=%d role=%s op=%s width=%u mode=%s insn=%s loop=%s",
	       t->idx, t->cpu, t->node, t->probe ? "probe" : "load", pl_op_name(t->op),
	       t->op == PL_OP_CHASE ? 8 : r->width,	/* a chase is 8-byte loads at any run width */
	       pl_mode_name(e->mode), e->insn, e->loop_name);
	pl_out_chain(b, t->op == PL_OP_CHASE, t->chain_kept);
	pl_out_scalars(b, &sc);
	if (e->hist.b) {
		snprintf(who, sizeof(who), "%u", t->idx);
		pl_report_hist(hist, who, &e->hist);
	}

	/* a probe's accesses are its own line's: the `all` counts are the loading threads' */
	if (!t->probe)
		pl_sum_add(&r->s, t, r->tsc_khz);
	/* interrupts were off as long on the probe's CPU: the `all` line's longest is every thread's */
	if (t->irqoff_max > r->s.irqoff_max)
		r->s.irqoff_max = t->irqoff_max;
	if (t->op == PL_OP_CHASE) {
		r->chases++;
		r->kept += t->chain_kept;
	}
	if (!r->threads++) {
		r->op = t->op;
		r->insn = e->insn;
		r->loop = e->loop_name;
	}
	r->same_op &= t->op == r->op;
	r->same_insn &= !strcmp(e->insn, r->insn);
	r->same_loop &= !strcmp(e->loop_name, r->loop);
	if (lat) {
		pl_hist_merge(&r->all, &e->hist);
		if (e->overhead > r->overhead)
			r->overhead = e->overhead;
		r->lat = true;
	}
}

void pl_report_samples(const struct pl_thread *t, u64 *out, u64 per)
{
	u64 i, n = t->e.nsamples < per ? t->e.nsamples : per;

	for (i = 0; i < n; i++)
		out[i] = t->e.samples[i] < PL_SAMPLE_NONE ? t->e.samples[i] : PL_SAMPLE_NONE - 1;
	for (; i < per; i++)
		out[i] = PL_SAMPLE_NONE;
}

void pl_report_all(struct pl_buf *b, struct pl_buf *hist, struct pl_report *r, int mode,
		   struct pl_scalars *all)
{
	pl_scalars(all, &r->s, r->lat ? &r->all : NULL, r->overhead, r, true);
	pl_out(b, "thread=all cpu=-1 node=-1 role=all op=%s width=%u mode=%s insn=%s loop=%s",
	       r->same_op ? pl_op_name(r->op) : "mixed", r->width, pl_mode_name(mode),
	       r->same_insn ? r->insn : "mixed", r->same_loop ? r->loop : "mixed");
	pl_out_chain(b, r->chases, r->chases && r->kept == r->chases);
	pl_out_scalars(b, all);
	pl_report_hist(hist, "all", &r->all);
}
