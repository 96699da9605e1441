// SPDX-License-Identifier: GPL-2.0
/*
 * worker.c - one worker's set-up from the run parameters: its op, its
 * region (place.c) and the inputs of its timed loops (engine.c).  The
 * module (run.c) and the runner set up their threads here, and the
 * validator (check.c) builds the same regions, so that what `check` accepts
 * is what `run` sets up.
 */
#include "pl_run.h"

void pl_place_input(const struct pl_params *p, u64 target_size, unsigned int idx,
		    unsigned int n, struct pl_place *in)
{
	int op = p->ops[idx % p->nops];

	memset(in, 0, sizeof(*in));
	in->target_size = target_size;
	in->window_offset = p->window_offset;
	in->working_set = p->working_set;
	in->pattern = p->pattern;
	in->access = p->access_size;
	in->stride = p->stride;
	in->hotspot_size = p->hotspot_size;
	in->passes = p->passes;
	in->pass_offset = p->pass_offset;
	in->seed = p->seed;
	in->per_thread = p->placement == PL_PLACE_THREAD;
	in->ways = p->placement == PL_PLACE_DIMM ? p->interleave_ways : 0;
	in->gran = p->interleave_gran;
	in->dimms = p->dimms_per_thread;
	in->split = op == PL_OP_COPY || op == PL_OP_NTCOPY;
	in->idx = idx;
	in->n = n;
}

int pl_thread_setup(struct pl_thread *t, const struct pl_setup *s, unsigned int idx, int cpu,
		    char *why, size_t len)
{
	const struct pl_params *p = s->p;
	struct pl_eng_cfg *ec = &t->ec;
	struct pl_region reg;
	struct pl_place in;
	int err;

	t->idx = idx;
	t->cpu = cpu;
	t->op = p->ops[idx % p->nops];
	t->probe = p->probe && idx == 0;
	pl_place_input(p, s->target_size, idx, s->n, &in);
	err = pl_place_worker(&in, &reg, why, len);
	if (err)
		return err;
	*ec = (struct pl_eng_cfg) {
		.base = s->target + reg.base,
		.base_len = s->target_size - reg.base,
		.gen = reg.g,
		.copy_delta = reg.copy_delta,
		.op = t->op,
		.width = t->op == PL_OP_CHASE ? 8 : s->width,	/* a probe's chase beside wider load threads */
		.features = s->f->features,
		.mode = t->probe ? PL_MODE_LAT : p->mode,
		.access = p->access_size,
		.fence = p->fence,
		.fence_interval = p->fence_interval,
		.flush = p->flush,
		/* the probe's samples back to back: delay_ticks and read_pct load the others only */
		.read_pct = t->probe ? 0 : p->read_pct,
		.delay_ticks = t->probe ? 0 : p->delay_ticks,
		.prep = p->cold ? PL_PREP_COLD : p->warm ? PL_PREP_WARM : PL_PREP_NONE,
		.count = t->probe ? 0 : p->count,
		.stop = t->probe ? s->probe_stop : s->stop,
		.nsamples_max = p->samples,
		.data_seed = pl_data_seed(p->seed, idx),	/* every thread its own stream */
		.chase_batch = p->chase_batch,
		.chase_page = p->chase_page,
		.chase_write = p->chase_write,
		.chase_seed = p->seed,
		.chase_stream = idx,
	};
	return 0;
}

int pl_thread_engine(struct pl_thread *t, char *why, size_t len)
{
	return pl_eng_init(&t->e, &t->ec, why, len);
}

void pl_thread_calibrate(struct pl_thread *t)
{
	u64 t0 = pl_rdtsc();

	pl_eng_calibrate(&t->e);
	t->cal_end = pl_rdtsc();
	t->cal_ticks = t->cal_end - t0;
}

u64 pl_thread_recal_at(const struct pl_thread *t, u64 go)
{
	return go > 2 * t->cal_ticks ? go - 2 * t->cal_ticks : 0;
}

u64 pl_thread_begin(struct pl_thread *t, const struct pl_params *p, u64 go, u64 tsc_khz)
{
	t->seg_ticks = p->segment_ms * tsc_khz;
	t->warm_until = p->warmup_ms ? go + p->warmup_ms * tsc_khz : 0;
	t->start = go + p->warmup_ms * tsc_khz;
	t->end = p->count ? ~0ULL : go + (p->warmup_ms + p->duration_ms) * tsc_khz;
	/* no count limits the warm-up */
	t->left = t->e.left;
	if (t->warm_until)
		t->e.left = ~0ULL;
	return t->end;
}

/* the warm-up is over: what the timed run counts starts from zero */
static void pl_thread_warm(struct pl_thread *t)
{
	struct pl_eng *e = &t->e;

	memset(&e->st, 0, sizeof(e->st));
	pl_hist_reset(&e->hist);
	e->nsamples = 0;
	e->left = t->left;
	/* a split access the warm-up left half done: the timed run starts a new one */
	e->part = 0;
	e->part_bytes = 0;
	t->warm_until = 0;
}

/*
 * The end of the segment that starts now.  A segment that starts after the
 * warm-up's end while its reset has not happened (the worker was off its
 * CPU across that end, between two segments) resets first: it is the timed
 * run's first segment.
 */
u64 pl_thread_until(struct pl_thread *t, u64 now)
{
	u64 end;

	if (t->warm_until && now >= t->warm_until)
		pl_thread_warm(t);
	end = now < t->warm_until ? t->warm_until : t->end;
	return now + t->seg_ticks < end ? now + t->seg_ticks : end;
}

/* pl_run.h; a late thread's one step may be of a raw chase's untimed write pass, hence ops */
bool pl_thread_more(const struct pl_thread *t, u64 now)
{
	return now < t->end || !t->segments || !t->e.st.ops || t->e.part;
}

/*
 * A segment whose end was set before the warm-up's reset (pl_thread_until)
 * is a warm-up segment and counts for nothing, wherever t0 lies: the one
 * that reaches warm_until resets the counts.  One that started after
 * warm_until without the reset (a worker off its CPU between computing its
 * end and starting it) ran as the warm-up does (no count limit, the
 * warm-up's accesses in its counters): it resets too, and is not timed.
 */
void pl_thread_segment(struct pl_thread *t, u64 t0, u64 t1)
{
	if (t1 > t0 && t1 - t0 > t->irqoff_max)
		t->irqoff_max = t1 - t0;
	if (t->warm_until) {
		if (t1 >= t->warm_until)
			pl_thread_warm(t);
		return;
	}
	t->e.st.ticks += t1 - t0;
	if (t->segments++)
		t->gap_ticks += t0 - t->last_tsc;
	else
		t->first_tsc = t0;
	t->last_tsc = t1;
}

void pl_thread_end(struct pl_thread *t, u64 now)
{
	u64 until = now < t->end ? now : t->end;

	t->end_lag = t->segments && until > t->last_tsc ? until - t->last_tsc : 0;
}
