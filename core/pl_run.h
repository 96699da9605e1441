/* SPDX-License-Identifier: GPL-2.0 */
/*
 * pl_run.h - what the module and the runner do alike with a judged run:
 * set up each worker from the parameters (worker.c) and write the result
 * lines and histogram (resultfmt.c).  Portable: only shim.h and the core.
 */
#ifndef PMEMLAB_RUN_H
#define PMEMLAB_RUN_H

#include "pl_params.h"

/* one worker thread, as the module and the runner both keep it */
struct pl_thread {
	unsigned int idx;
	int cpu, node, op;
	bool probe;			/* thread 0 of probe=1: latency while the others load */
	/*
	 * What pl_thread_setup() judged; the caller puts its buffers in
	 * (hist_buckets, samples, ceil_buf) and frees them from here.
	 */
	struct pl_eng_cfg ec;
	struct pl_eng e;		/* pl_thread_engine() */
	u64 segments, gap_ticks, first_tsc, last_tsc;
	u64 end_lag;			/* pl_thread_end() */
	u64 irqoff_max;			/* the longest segment, warm-up included: pl_thread_segment() */
	u64 seg_ticks, start, end;	/* the time window: pl_thread_begin() */
	u64 warm_until, left;		/* warm-up: its end, the count of the timed run */
	u64 cal_ticks, cal_end;		/* latency: the last calibration's length and end (TSC) */
	bool chain_kept;		/* op chase: the chain a run before laid, kept (the served runner) */
	bool ceil_reused;		/* bandwidth: e.ceil_* came from the ceiling cache (ceil.c) */
};

/* what setting up a worker needs besides its index and CPU */
struct pl_setup {
	const struct pl_params *p;
	const struct pl_facts *f;	/* features, the ops of the backend */
	char *target;			/* byte 0 of the mapped target */
	u64 target_size;
	unsigned int n, width;		/* struct pl_plan */
	const int *stop, *probe_stop;	/* polled by the loops */
};

/* worker idx's region inputs (place.c), as run and check both build them */
void pl_place_input(const struct pl_params *p, u64 target_size, unsigned int idx,
		    unsigned int n, struct pl_place *in);
/*
 * Fill t for worker idx on cpu: its op, region and the engine's inputs
 * (t->ec).  0, or -errno and why.  The caller then gives t->ec its buffers
 * (latency mode: hist_buckets of PL_HIST_NB, samples of nsamples_max;
 * bandwidth mode: ceil_buf of pl_eng_ceiling_len()) and calls
 * pl_thread_engine().
 */
int pl_thread_setup(struct pl_thread *t, const struct pl_setup *s, unsigned int idx, int cpu,
		    char *why, size_t len);
/* the engine of t from t->ec (pl_eng_init: selects the loop, allocates nothing) */
int pl_thread_engine(struct pl_thread *t, char *why, size_t len);

/*
 * A latency thread calibrates its bracket (pl_eng_calibrate, timed) twice:
 * before the start barrier, and again in the barrier's spin from
 * pl_thread_recal_at(t, go), twice its own length before the common start:
 * the spin has brought the core's clock up by then.  Calibrated cold, after
 * an idle wait, a core below its top clock (a governor other than
 * performance) takes longer per bracket, and the overhead subtracted from
 * every sample would be too large (method.md, Latency mode).  The caller
 * keeps interrupts off around each calibration in the module.
 */
void pl_thread_calibrate(struct pl_thread *t);
u64 pl_thread_recal_at(const struct pl_thread *t, u64 go);

/*
 * The time window of a worker that starts at go (the common start of all
 * workers): returns when its run ends (never, for a count run).  Its loop
 * then runs segments while pl_thread_more(t, now): until =
 * pl_thread_until(t, now) (which resets the counts when the warm-up is
 * over), then t0, the loop up to until, t1 and pl_thread_segment(t, t0,
 * t1); those of the warm-up (warmup_ms) count for nothing.
 */
u64 pl_thread_begin(struct pl_thread *t, const struct pl_params *p, u64 go, u64 tsc_khz);
u64 pl_thread_until(struct pl_thread *t, u64 now);
/*
 * Whether the loop runs another segment: before the end, and after it
 * until the timed run has one segment and one access (a worker that got no
 * CPU for the whole window, or whose last warm-up segment ran past it,
 * measures one batch or sample late instead of reporting 0 accesses as a
 * rate of 0 or a run without samples; every loop's call makes one step
 * past its end), and until a split access in flight is done (one piece a
 * segment past the end: an access counts whole, as an unsplit one overran
 * the end by its length).
 */
bool pl_thread_more(const struct pl_thread *t, u64 now);
/*
 * a segment [t0, t1): a timed one's ticks, and the gap since the one before (excluded from
 * them); every segment, warm-up ones too, counts for irqoff_max (interrupts are off in each)
 */
void pl_thread_segment(struct pl_thread *t, u64 t0, u64 t1);
/*
 * The loop is left at now: the time from the last timed stamp to now, at
 * most to the window's end, is the thread's end lag (off its CPU, or
 * yielding, when the end came; or stopped early).  With the start lag, the
 * ticks and the gaps it covers the window: start_lag + ticks + gap_ticks +
 * end_lag = the window's length for a thread that ran to the end.
 */
void pl_thread_end(struct pl_thread *t, u64 now);

/*
 * ---- ceil.c: the engine's ceilings a target's earlier runs measured ----
 * A bandwidth thread's ceiling (pl_eng_ceiling) depends on what its loop
 * runs on the cache-resident buffer, and on where and beside what it runs:
 * the key.  A run reuses the ceilings of an earlier run only whole: when
 * every one of its bandwidth threads finds its key among the ceilings one
 * earlier run measured together, and that run had as many (the same CPUs,
 * so the same neighbours while they were measured), and only once the set
 * is credible: the best (per thread, the fastest) of PL_CEIL_TRUST
 * measurements of it.  A run that outran a ceiling it reused (pl_ceil_low)
 * proves that ceiling stale: its result says `reused-low`, and the set
 * leaves the cache.  The cache is the owner's (the module: one per target;
 * the served runner: one per process); what the key omits (the target,
 * the prefetchers' state, the module) clears it: pl_ceil_clear().
 */
struct pl_ceil_key {
	int cpu;			/* the thread's */
	unsigned int n;			/* threads of the run */
	u64 prefetch;			/* the run's prefetch parameter (MSR 0x1a4 on the module) */
	u64 others;			/* CPUs other targets' runs held at the start (module) */
	int op, form, fam, cop;		/* the run's op, its form and family; the ceiling's op */
	bool plain, split, avx;
	u64 access, ceil_access, batch;
	int fence, flush;
	u64 fence_interval, delay_ticks;
	u32 read_pct;
	struct pl_gen_cfg gen;		/* the ceiling's generator; seed and stream 0 (below) */
};

#define PL_CEIL_CACHE	64		/* threads' ceilings a cache holds */
/* measurements of a set combined (the fastest kept) before it is reused (docs/method.md) */
#define PL_CEIL_TRUST	3

/* where a result's ceiling came from (pl_scalars.ceil_src; the word: pl_ceil_src_name) */
#define PL_CEIL_MEASURED	0	/* this run measured it */
#define PL_CEIL_REUSED		1	/* an earlier run's, reused */
#define PL_CEIL_REUSED_LOW	2	/* reused, and this run outran it: stale (pl_ceil_low) */

struct pl_ceil_cache {
	u64 sets;			/* the last set number given (0: none) */
	struct pl_ceil_ent {
		u64 set;		/* the run that measured it (renumbered when reused); 0: free */
		struct pl_ceil_key k;
		unsigned int count;	/* measurements combined into the set, at most PL_CEIL_TRUST */
		u64 bytes, ticks, ops;
		const char *loop;
	} e[PL_CEIL_CACHE];
};

/* a run's threads: n of them, the first at first, each stride bytes after the one before */
struct pl_threads {
	char *first;
	size_t stride;
	unsigned int n;
};

static inline struct pl_thread *pl_threads_at(const struct pl_threads *ts, unsigned int i)
{
	return (struct pl_thread *)(ts->first + i * ts->stride);
}

void pl_ceil_clear(struct pl_ceil_cache *c);
/* the key of thread t (engine set up: pl_thread_engine) in a run of n threads */
void pl_ceil_key(struct pl_ceil_key *k, const struct pl_thread *t, unsigned int n, u64 prefetch,
		 u64 others);
/*
 * Before the run: true when every bandwidth thread of ts finds its ceiling
 * in one credible set (PL_CEIL_TRUST measurements; then copied into its
 * engine, ceil_reused set): its workers skip pl_eng_ceiling.  False (and
 * nothing set) otherwise, or with no bandwidth thread.
 */
bool pl_ceil_reuse(struct pl_ceil_cache *c, const struct pl_threads *ts, u64 prefetch, u64 others);
/*
 * After a run that ran to its end.  Measured (none reused): its bandwidth
 * threads' ceilings are combined into the set these keys hold, each
 * thread's fastest kept, while the set has fewer than PL_CEIL_TRUST
 * measurements; else they go into the cache as a new set of one, the
 * oldest sets leaving to make room (a run of more bandwidth threads than
 * the cache holds, or one whose ceiling measured nothing, is not kept).
 * Reused: a thread that outran its ceiling (pl_ceil_low) drops the set, so
 * the next run measures again.
 */
void pl_ceil_store(struct pl_ceil_cache *c, const struct pl_threads *ts, u64 prefetch, u64 others);
/*
 * A bandwidth thread whose reused ceiling its run outran: its bytes over
 * its timed ticks above the ceiling's.  The ceiling is the fastest window
 * of the same loop on a cache-resident buffer, so the ceiling is stale
 * (measured while the thread was starved).  The one rule of ceiling_src's
 * `reused-low` (resultfmt.c) and of dropping the set (pl_ceil_store).
 */
bool pl_ceil_low(const struct pl_thread *t);
/* the word of a ceiling source PL_CEIL_* (`measured`, `reused`, `reused-low`) */
const char *pl_ceil_src_name(u64 src);

/* ---- resultfmt.c: the `result` and `histogram` text ---- */
#define PL_NPCT			5	/* p50 p90 p99 p999 p9999 */
#define PL_LINE_BYTES		1024	/* room for one result line (insn and loop included) */
#define PL_HIST_LINE_BYTES	72	/* room for one histogram line */

/* the scalars of one result row (the `all` row's go to the module's results/) */
struct pl_scalars {
	u64 ops, reads, writes, bytes, ticks, ns, bw_milli, segments, gap_ticks;
	u64 start_lag;			/* first timed stamp - the timed run's start (all: the latest) */
	u64 end_lag;			/* pl_thread_end() (all: the largest) */
	u64 irqoff_milli;
	u64 irqoff_max;			/* the longest segment (all: of every thread, the probe's too) */
	bool ceil;			/* ceil_milli is set (a bandwidth thread ran) */
	u64 ceil_milli;			/* the engine's ceiling, MB/s x 1000 */
	u64 ceil_src;			/* PL_CEIL_*: measured, reused, or reused and outrun (ceil.c) */
	/*
	 * pl_report_times() given: the run's fixed cost.  setup: from `run`
	 * to the first timed stamp; teardown: from the last timed stamp to
	 * done; total: from `run` to done (a run with no timed segment: all
	 * of it setup).  The `all` row: setup + ticks + teardown = total.
	 */
	bool timed;
	u64 setup, teardown, total;	/* TSC ticks */
	u64 setup_ns, teardown_ns, total_ns;
	bool lat;			/* the lat_* fields below are set */
	u64 lat_overhead, lat_n, lat_min, lat_sd_milli;
	s64 lat_mean_milli;		/* of the unclamped differences: may be < 0 */
	u64 lat_p[PL_NPCT], lat_max;
};

struct pl_sum {
	u64 ops, reads, writes, bytes, ticks, gap, segments;
	u64 first, last;		/* TSC of the first timed stamp, and of the last */
	u64 lag, end_lag;		/* the largest start and end lags of the threads */
	u64 irqoff_max;			/* the longest segment of the threads */
	u64 ceil_milli;			/* engine ceilings of the bandwidth threads */
	bool ceil;			/* a bandwidth thread is among them */
	unsigned int ceil_n, ceil_reused;	/* bandwidth threads, and those whose ceiling was reused */
	unsigned int ceil_low;		/* those that outran the ceiling they reused (pl_ceil_low) */
};

/*
 * The text of a run: pl_report_thread for each thread, then pl_report_all,
 * into a result buffer of (threads + 1) * PL_LINE_BYTES and a histogram
 * buffer of the threads' pl_report_hist_room() + 1.
 */
struct pl_report {
	u64 tsc_khz;
	unsigned int width;
	struct pl_sum s;
	struct pl_hist all;		/* all.b: PL_HIST_NB counters of the caller */
	u64 overhead;
	bool lat, same_op, same_insn, same_loop;
	int op;				/* of the first thread */
	const char *insn, *loop;	/* of the first thread: what it executed */
	unsigned int threads;
	unsigned int chases, kept;	/* op chase threads, and those whose chain was kept */
	u64 run_tsc, done_tsc;		/* pl_report_times(); 0: not given */
};

void pl_report_begin(struct pl_report *r, u64 *buckets, u64 tsc_khz, unsigned int width);
/*
 * The run's ends, TSC: when `run` was asked (the module's run write, the
 * runner's run line) and when it is done (its results built); before
 * the first pl_report_thread.  Without it the rows carry no setup_*,
 * teardown_* and total_* fields.
 */
void pl_report_times(struct pl_report *r, u64 run_tsc, u64 done_tsc);
size_t pl_report_hist_room(const struct pl_thread *t);
void pl_report_thread(struct pl_buf *b, struct pl_buf *hist, struct pl_report *r,
		      const struct pl_thread *t);
/*
 * `raw_samples`: each latency thread's first `per` samples, those it took
 * and then PL_SAMPLE_NONE for every slot it did not fill (a run stopped
 * early, a probe outrun by its loaders); a sample taken is at most
 * PL_SAMPLE_NONE - 1, so "not filled" cannot be mistaken for one (a
 * sample clamped to 0 is a real 0).
 */
#define PL_SAMPLE_NONE		(~0ULL)
void pl_report_samples(const struct pl_thread *t, u64 *out, u64 per);
/* the `all` line and the merged histogram; its scalars in *all */
void pl_report_all(struct pl_buf *b, struct pl_buf *hist, struct pl_report *r, int mode,
		   struct pl_scalars *all);

#endif /* PMEMLAB_RUN_H */
