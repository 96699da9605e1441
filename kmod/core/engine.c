// SPDX-License-Identifier: GPL-2.0
/*
 * engine.c - pmemlab's timed loops, run inside one IRQ-off segment.
 *
 * Bandwidth: accesses back to back (with the configured fences, flushes
 * and delay); the clock is read once per batch of accesses.
 * Latency: one access at a time, bracketed as in FAST'20 section 3.2:
 *	[prep: clflush (cold) or load (warm) each line, mfence]
 *	t0 = rdtscp; lfence        (or lfence; rdtsc; lfence)
 *	access (+ flush for the flushing ops)
 *	mfence
 *	t1 = rdtscp; lfence
 *	sample = t1 - t0 - overhead (clamped at 0)
 * where overhead is the median of an empty bracket, measured every run.
 */
#include "pl_core.h"

/* accesses between two reads of the clock in bandwidth mode */
static u64 pl_batch(u64 access)
{
	u64 b = 16384 / access;

	return b < 1 ? 1 : b > 256 ? 256 : b;
}

static inline void pl_delay(u64 ticks)
{
	u64 t0;

	if (!ticks)
		return;
	t0 = pl_rdtsc();
	while (pl_rdtsc() - t0 < ticks)
		asm volatile("pause");
}

/* decide read or write for the next access (exact ratio, no randomness) */
static inline bool pl_is_read(struct pl_eng *e)
{
	if (e->op_reads)
		return true;
	if (!e->read_pct)
		return false;
	e->rw_acc += e->read_pct;
	if (e->rw_acc >= 100) {
		e->rw_acc -= 100;
		return true;
	}
	return false;
}

static inline void pl_next_data(struct pl_eng *e)
{
	/* never zero: odd, and different for every access */
	e->data = (e->data + 0x9e3779b97f4a7c15ULL) | 1;
}

/* one access plus its fences; returns whether it was a read */
static inline bool pl_access(struct pl_eng *e, char *p)
{
	bool rd = pl_is_read(e);
	pl_kernel_fn fn = rd ? e->rfn : e->wfn;
	u64 fi = e->fence_interval, o;

	pl_next_data(e);
	if (e->fence == PL_FENCE_NONE || !fi) {
		fn(p, e->access, e->data, e->flush);
		pl_fence(e->fence);
	} else if (fi < e->access) {
		/* fence (and flush=access) every fi bytes inside the access */
		for (o = 0; o < e->access; o += fi) {
			fn(p + o, fi, e->data, e->flush);
			pl_fence(e->fence);
		}
	} else {
		fn(p, e->access, e->data, e->flush);
		if (pl_fence_due(&e->fence_acc, e->access, fi))
			pl_fence(e->fence);
	}
	return rd;
}

static inline void pl_count(struct pl_eng *e, bool rd)
{
	e->st.ops++;
	e->st.bytes += e->access;
	if (rd)
		e->st.reads++;
	else
		e->st.writes++;
	if (e->left != ~0ULL)
		e->left--;
}

void pl_eng_bw(struct pl_eng *e, u64 until)
{
	u64 batch = pl_batch(e->access), i;

	if (e->delay_ticks)
		batch = 1;
	while (e->left && !READ_ONCE(*e->stop) && pl_rdtsc() < until) {
		for (i = 0; i < batch && e->left; i++) {
			bool rd = pl_access(e, e->base + pl_gen_next(&e->gen));

			pl_count(e, rd);
			pl_delay(e->delay_ticks);
		}
	}
}

static inline void pl_touch(const char *p)
{
	u32 t;

	asm volatile("movzbl (%1), %0" : "=r"(t) : "r"(p) : "memory");
}

static void pl_prep_lines(struct pl_eng *e, char *p)
{
	u64 o, n = e->access < PL_LINE ? PL_LINE : e->access;
	char *line = (char *)((unsigned long)p & ~(unsigned long)(PL_LINE - 1));

	if (e->prep == PL_PREP_NONE)
		return;
	for (o = 0; o < n; o += PL_LINE) {
		if (e->prep == PL_PREP_COLD)
			pl_clflush(line + o);
		else
			pl_touch(line + o);
	}
	pl_mfence();
}

void pl_eng_lat(struct pl_eng *e, u64 until)
{
	u64 t0, t1, d;
	char *p;
	bool rd;

	while (e->left && !READ_ONCE(*e->stop) && pl_rdtsc() < until) {
		p = e->base + pl_gen_next(&e->gen);
		pl_prep_lines(e, p);
		rd = pl_is_read(e);
		pl_next_data(e);
		pl_mfence();
		t0 = pl_rdtsc_serial(e->rdtscp);
		(rd ? e->rfn : e->wfn)(p, e->access, e->data, e->flush);
		pl_mfence();
		t1 = pl_rdtsc_serial(e->rdtscp);
		d = t1 - t0;
		d = d > e->overhead ? d - e->overhead : 0;
		pl_hist_add(&e->hist, d);
		if (e->nsamples < e->nsamples_max)
			e->samples[e->nsamples++] = d;
		pl_count(e, rd);
		pl_delay(e->delay_ticks);
	}
}

#define PL_CAL_N	101	/* odd; 808 bytes of stack */

u64 pl_eng_calibrate(bool rdtscp)
{
	u64 v[PL_CAL_N], t0, t1, x;
	int i, j;

	for (i = 0; i < PL_CAL_N; i++) {
		pl_mfence();
		t0 = pl_rdtsc_serial(rdtscp);
		pl_mfence();
		t1 = pl_rdtsc_serial(rdtscp);
		x = t1 - t0;
		/* insertion sort: small n, runs once per thread and run */
		for (j = i; j > 0 && v[j - 1] > x; j--)
			v[j] = v[j - 1];
		v[j] = x;
	}
	return v[PL_CAL_N / 2];
}
