// SPDX-License-Identifier: GPL-2.0
/*
 * pltest.c - the entry points of libpltest.so, the shared core as a library
 * for the host tests alone (ctypes; the controller's libplcore.so leaves
 * them out): the engine on a buffer, the generator, a worker's region, the
 * histogram, the fence rate.
 */
#include <stdlib.h>
#include "pl_core.h"
#include "runner.h"
#include "pl_run.h"
#include "pl_tier.h"

int pl_test_nops(void)
{
	return PL_OP_NR;
}

/* op: an index into the op table (ops.def's order) */
const char *pl_test_op_name(int op)
{
	return op >= 0 && op < PL_OP_NR ? pl_ops[op].name : NULL;
}

/* the engine's inputs, as the host tests give them (ctypes: all u64) */
struct pl_test_eng {
	u64 op, width, features, mode;
	u64 pattern, access, step, span, passes, pass_offset;
	u64 ways, gran, dimms, first_dimm, seed, stream;
	u64 copy_delta, fence, fence_interval, flush, read_pct, delay_ticks, prep;
	u64 count, data_seed;
	u64 base_len, ceil_len;		/* bytes of the buffer at base, of ceil_buf */
};

struct pl_test_res {
	u64 ops, reads, writes, bytes, data, lat_n, ceil_bytes, ceil_ticks, ceil_ops;
	char loop[64], insn[64], ceil_loop[64];
};

/* the engine's configuration from the tests' inputs (the buffer, the stop flag and the histogram are the caller's) */
static void pl_test_cfg(struct pl_eng_cfg *c, char *base, const struct pl_test_eng *t)
{
	*c = (struct pl_eng_cfg) {
		.base = base,
		.base_len = t->base_len,
		.gen = { .pattern = t->pattern, .access = t->access, .step = t->step,
			 .span = t->span, .passes = t->passes, .pass_offset = t->pass_offset,
			 .ways = t->ways, .gran = t->gran, .dimms = t->dimms,
			 .first_dimm = t->first_dimm, .seed = t->seed, .stream = t->stream },
		.copy_delta = t->copy_delta,
		.op = t->op,
		.width = t->width,
		.features = t->features,
		.mode = t->mode,
		.access = t->access,
		.fence = t->fence,
		.fence_interval = t->fence_interval,
		.flush = t->flush,
		.read_pct = t->read_pct,
		.delay_ticks = t->delay_ticks,
		.prep = t->prep,
		.count = t->count,
		.data_seed = t->data_seed,
	};
}

/*
 * The harness of pl_test_engine and pl_test_steps: the engine e set up on
 * t (its configuration in c; ceil_buf, may be NULL, the ceiling's buffer of
 * t->ceil_len bytes) as pl_eng_init sets it up; 0, or -errno and why.
 */
static int pl_test_setup(struct pl_eng *e, struct pl_eng_cfg *c, char *base, const struct pl_test_eng *t,
			 char *ceil_buf, char *why, size_t len)
{
	static u64 hist[PL_HIST_NB];
	static int stop;

	if (!t->count) {
		snprintf(why, len, "count must be > 0");
		return -EINVAL;
	}
	pl_test_cfg(c, base, t);
	c->stop = &stop;
	c->hist_buckets = hist;
	c->ceil_buf = ceil_buf;
	c->ceil_len = t->ceil_len;
	return pl_eng_init(e, c, why, len);
}

/* what the engine e did, as the tests read it */
static void pl_test_result(const struct pl_eng *e, struct pl_test_res *res)
{
	res->ops = e->st.ops;
	res->reads = e->st.reads;
	res->writes = e->st.writes;
	res->bytes = e->st.bytes;
	res->data = e->data;
	res->lat_n = e->hist.n;
	res->ceil_bytes = e->ceil_bytes;
	res->ceil_ticks = e->ceil_ticks;
	res->ceil_ops = e->ceil_ops;
	snprintf(res->loop, sizeof(res->loop), "%s", e->loop_name);
	snprintf(res->insn, sizeof(res->insn), "%s", e->insn);
	snprintf(res->ceil_loop, sizeof(res->ceil_loop), "%s", e->ceil_loop ? e->ceil_loop : "");
}

/*
 * Run the real engine (pl_eng_init, the selected generated loop through
 * pl_eng_run) for t->count accesses over base[0, t->span) of a buffer of
 * t->base_len bytes: 0, or -errno and why.  ceil_buf (may be NULL): also
 * measure the ceiling on its t->ceil_len bytes for 1e6 ticks.
 */
int pl_test_engine(char *base, const struct pl_test_eng *t, struct pl_test_res *res,
		   char *ceil_buf, char *why, size_t len)
{
	struct pl_eng_cfg c;
	struct pl_eng e;
	int err = pl_test_setup(&e, &c, base, t, ceil_buf, why, len);

	if (err)
		return err;
	if (ceil_buf)
		pl_eng_ceiling(&e, 1000000);
	while (e.left)
		pl_eng_run(&e, ~0ULL);
	pl_test_result(&e, res);
	return 0;
}

/*
 * The engine on t as a worker's segments call it: every call's end is
 * until_ticks after its start (0: already passed, so a call runs its first
 * step only: one batch, or one piece of a split access), until t->count
 * accesses are done.  out: the calls, the most bytes one call issued (the
 * access in flight's included: part_bytes), the
 * bytes, the accesses, the pieces (st.pieces), the most ticks one call
 * took; res as pl_test_engine's.  A deadline of 10^4 calls per access
 * stops an engine that would not end.  0, or -errno and why.
 */
int pl_test_steps(char *base, const struct pl_test_eng *t, u64 until_ticks, u64 *out,
		  struct pl_test_res *res, char *why, size_t len)
{
	u64 calls = 0, most = 0, slow = 0, b0, t0, t1;
	struct pl_eng_cfg c;
	struct pl_eng e;
	int err = pl_test_setup(&e, &c, base, t, NULL, why, len);

	if (err)
		return err;
	while (e.left && calls < 10000 * t->count + 10000) {
		b0 = e.st.bytes + e.part_bytes;
		t0 = pl_rdtsc();
		pl_eng_run(&e, until_ticks ? t0 + until_ticks : 0);
		t1 = pl_rdtsc();
		calls++;
		if (e.st.bytes + e.part_bytes - b0 > most)
			most = e.st.bytes + e.part_bytes - b0;
		if (t1 - t0 > slow)
			slow = t1 - t0;
	}
	out[0] = calls;
	out[1] = most;
	out[2] = e.st.bytes;
	out[3] = e.st.ops;
	out[4] = e.st.pieces;
	out[5] = slow;
	pl_test_result(&e, res);
	return 0;
}

/* bytes of the ceiling buffer for these inputs */
u64 pl_test_ceiling_len(const struct pl_test_eng *t)
{
	struct pl_eng_cfg c;

	pl_test_cfg(&c, NULL, t);
	return pl_eng_ceiling_len(&c);
}

/* n / d by the generators' multiply-and-shift division */
u64 pl_test_divc(u64 n, u64 d)
{
	struct pl_divc c;

	pl_divc_init(&c, d);
	return pl_divc_div(&c, n);
}

/* the op table's names; the loops' names per op x form x family (plain) or full path */
const char *pl_test_bw_name(int op, int form, int fam, int plain)
{
	return pl_eng_bw_name(op, form, fam, plain);
}

const char *pl_test_bwl_name(int op, int form)
{
	return pl_eng_bwl_name(op, form);
}

const char *pl_test_lat_name(int op, int form)
{
	return pl_eng_lat_name(op, form);
}

int pl_test_form(int op, unsigned int width, u32 features)
{
	return pl_op_form(op, width, features);
}

/* the first n offsets of a generator; returns 0, or -1 with *why */
int pl_test_gen(int pattern, u64 access, u64 step, u64 span, u64 passes, u64 pass_offset,
		u64 seed, u64 stream, u64 *out, u64 n, u64 *extent, u64 *nslots, const char **why)
{
	struct pl_gen_cfg c = { .pattern = pattern, .access = access, .step = step, .span = span,
				.passes = passes, .pass_offset = pass_offset, .seed = seed,
				.stream = stream };
	struct pl_gen g;
	u64 i;

	if (pl_gen_check(&c, extent, why))
		return -1;
	pl_gen_init(&g, &c);
	*nslots = g.nslots;
	for (i = 0; i < n; i++)
		out[i] = pl_gen_next(&g);
	return 0;
}

/*
 * Worker in->idx's region (place.c, as the module and the runner set it up)
 * and the first n target offsets its generator gives; 0, or -errno and why.
 */
int pl_test_place(const struct pl_place *in, u64 *base, u64 *copy_delta, u64 *span, u64 *out,
		  u64 n, char *why, size_t len)
{
	struct pl_region reg;
	struct pl_gen g;
	int err = pl_place_worker(in, &reg, why, len);
	u64 i;

	if (err)
		return err;
	pl_gen_init(&g, &reg.g);
	*base = reg.base;
	*copy_delta = reg.copy_delta;
	*span = reg.g.span;
	for (i = 0; i < n; i++)
		out[i] = reg.base + pl_gen_next(&g);
	return 0;
}

/*
 * The pointer chase (core/chase.c) over worker in->idx's region of target
 * (in->target_size bytes), as both backends lay and start it (page:
 * chase_page): the target offsets of its first n hops, then the chain is
 * taken down again (pl_chase_restore); 0, or -errno and why.
 */
int pl_test_chase_page(char *target, const struct pl_place *in, u64 seed, int page, u64 *out, u64 n,
		       char *why, size_t len)
{
	static u64 hist[PL_HIST_NB];
	static int stop;
	struct pl_region reg;
	struct pl_eng e;
	struct pl_eng_cfg c;
	u64 i, pos = 0, laid, *save;
	char *p;
	int err = pl_place_worker(in, &reg, why, len);

	if (err)
		return err;
	c = (struct pl_eng_cfg) {
		.base = target + reg.base, .base_len = in->target_size - reg.base, .gen = reg.g,
		.op = PL_OP_CHASE, .width = 8, .mode = PL_MODE_LAT, .access = in->access, .count = 1,
		.stop = &stop, .hist_buckets = hist, .chase_batch = 256, .chase_page = page,
		.chase_seed = seed, .chase_stream = in->idx,
	};
	err = pl_eng_init(&e, &c, why, len);
	if (err)
		return err;
	save = malloc(pl_chase_lines(&e) * sizeof(u64));
	if (!save) {
		snprintf(why, len, "chase: no memory");
		return -ENOMEM;
	}
	/* in steps, as the module lays it */
	while (!pl_chase_build(&e, save, &pos, 1000))
		;
	p = e.chase_p;
	for (i = 0; i < n; i++) {
		out[i] = p - target;
		p = *(char **)p;
	}
	laid = pos;
	pos = 0;
	while (!pl_chase_restore(&e, save, laid, &pos, 1000))
		;
	free(save);
	return 0;
}

int pl_test_chase(char *target, const struct pl_place *in, u64 seed, u64 *out, u64 n, char *why,
		  size_t len)
{
	return pl_test_chase_page(target, in, seed, 0, out, n, why, len);
}

/* percentiles (q in ppm) of n samples through the histogram, plus min, max */
void pl_test_hist(const u64 *v, u64 n, const u32 *q, unsigned int nq, u64 *out, u64 *buckets)
{
	struct pl_hist h = { .b = buckets };
	unsigned int i;
	u64 k;

	pl_hist_reset(&h);
	for (k = 0; k < n; k++)
		pl_hist_add(&h, v[k], 0);
	for (i = 0; i < nq; i++)
		out[i] = pl_hist_pct(&h, q[i]);
	out[nq] = h.min;
	out[nq + 1] = h.max;
}

/*
 * n brackets of t[k] ticks less their overhead ov through the latency
 * loops' statistics (pl_hist_add, pl_hist_moments): out[0] the mean x 1000
 * (signed), out[1] the standard deviation x 1000, out[2] the median,
 * out[3] the min, out[4] the max; line gets a latency thread's result line
 * and the `all` line (resultfmt.c) of len bytes.
 */
void pl_test_moments(const u64 *t, u64 n, u64 ov, s64 *out, char *line, size_t len)
{
	static u64 buckets[PL_HIST_NB], all_buckets[PL_HIST_NB];
	struct pl_thread th = { .e.loop_name = "moments", .e.insn = "none", .e.mode = PL_MODE_LAT };
	struct pl_buf b = { .p = line, .cap = len }, h = { .cap = 0 };
	struct pl_scalars all;
	struct pl_report r;
	u64 k, sd;

	th.e.hist.b = buckets;
	th.e.overhead = ov;
	pl_hist_reset(&th.e.hist);
	for (k = 0; k < n; k++)
		pl_hist_add(&th.e.hist, t[k], ov);
	pl_hist_moments(&th.e.hist, &out[0], &sd);
	out[1] = (s64)sd;
	out[2] = (s64)pl_hist_pct(&th.e.hist, 500000);
	out[3] = (s64)th.e.hist.min;
	out[4] = (s64)th.e.hist.max;
	pl_report_begin(&r, all_buckets, 1000000, 8);
	pl_report_thread(&b, &h, &r, &th);
	pl_report_all(&b, &h, &r, PL_MODE_LAT, &all);
}

/*
 * A worker's time window (worker.c) from go = 0, as the loops run it: for
 * segment i, its end pl_thread_until(seg[3i]), then the segment [seg[3i+1],
 * seg[3i+2]), which "runs" one access (st.ops + 1; e.left - 1 unless
 * unlimited); out[i] is pl_thread_more() at its end, then the timed
 * segments, their ticks, the accesses counted and e.left; the loop is left
 * at exit_tsc (pl_thread_end; 0: the last segment's end); line gets the
 * thread's result line and then the `all` line (resultfmt.c) of len bytes.
 */
void pl_test_window(u64 warmup_ms, u64 duration_ms, u64 count, u64 tsc_khz, const u64 *seg,
		    unsigned int nseg, u64 exit_tsc, u64 *out, char *line, size_t len)
{
	struct pl_params p = { .segment_ms = 5, .warmup_ms = warmup_ms, .duration_ms = duration_ms,
			       .count = count };
	static u64 buckets[PL_HIST_NB];
	struct pl_thread t = { .e.loop_name = "window", .e.insn = "none" };
	struct pl_buf b = { .p = line, .cap = len }, h = { .cap = 0 };
	struct pl_scalars all;
	struct pl_report r;
	unsigned int i;

	t.e.left = count ? count : ~0ULL;
	pl_thread_begin(&t, &p, 0, tsc_khz);
	for (i = 0; i < nseg; i++) {
		pl_thread_until(&t, seg[3 * i]);
		t.e.st.ops++;
		if (t.e.left != ~0ULL)
			t.e.left--;
		pl_thread_segment(&t, seg[3 * i + 1], seg[3 * i + 2]);
		out[i] = pl_thread_more(&t, seg[3 * i + 2]);
	}
	out[nseg] = t.segments;
	out[nseg + 1] = t.e.st.ticks;
	out[nseg + 2] = t.e.st.ops;
	out[nseg + 3] = t.e.left;
	pl_thread_end(&t, exit_tsc ? exit_tsc : nseg ? seg[3 * nseg - 1] : 0);
	pl_report_begin(&r, buckets, tsc_khz, 8);
	pl_report_thread(&b, &h, &r, &t);
	pl_report_all(&b, &h, &r, PL_MODE_BW, &all);
}

/*
 * A latency thread's calibration (worker.c), timed: out = its length, its
 * end, the overhead it found, and when the barrier would calibrate again for
 * a start go ticks from now.
 */
int pl_test_calibration(u64 go_in, u64 *out, char *why, size_t len)
{
	static u64 hist[PL_HIST_NB];
	static char buf[4096] __attribute__((aligned(64)));
	static int stop;
	struct pl_thread t = { 0 };
	u64 go;
	int err;

	t.ec = (struct pl_eng_cfg) {
		.base = buf, .base_len = sizeof(buf),
		.gen = { .pattern = PL_PAT_SEQ, .access = 8, .step = 8, .span = sizeof(buf), .passes = 1 },
		.op = PL_OP_LOAD, .width = 8, .mode = PL_MODE_LAT, .access = 8, .count = 1,
		.stop = &stop, .hist_buckets = hist,
	};
	err = pl_thread_engine(&t, why, len);
	if (err)
		return err;
	pl_thread_calibrate(&t);
	go = pl_rdtsc() + go_in;
	out[0] = t.cal_ticks;
	out[1] = t.cal_end;
	out[2] = t.e.overhead;
	out[3] = go - pl_thread_recal_at(&t, go);
	return 0;
}

static void pl_test_spin(u64 until, bool *stall, bool *stalled)
{
	while (pl_rdtsc() < until)
		;
	*stall = false;
	*stalled = true;
}

/*
 * A worker's loop as the runner's (worker_fn) and the module's
 * (pl_worker_loop) run it, with the real engine (8-byte loads, op load, seq
 * over buf[0, span)) and the real clock, whose thread is "descheduled"
 * after its first segment: when that segment ends before the warm-up does,
 * it spins until one millisecond after the warm-up's end (stall), between
 * the two segments (stall_at 0) or between the next segment's
 * pl_thread_until() and its t0 (stall_at 1).  mode: 0 bandwidth, 1 latency;
 * count 0: duration_ms.  A deadline 2 s after the run's end stops a run
 * that would not end.  out: stalled, ended (by itself, not the deadline),
 * ops, bytes, ticks, segments, lat_n, nsamples.  Returns 0, or -errno and why.
 */
int pl_test_warmup(char *buf, u64 span, int mode, u64 count, u64 nsamples, u64 delay_ticks,
		   u64 warmup_ms, u64 segment_ms, u64 duration_ms, u64 tsc_khz, int stall_at, u64 *out,
		   char *why, size_t len)
{
	static u64 hist[PL_HIST_NB], samples[4096];
	static int stop;
	struct pl_params p = { .warmup_ms = warmup_ms, .segment_ms = segment_ms,
			       .duration_ms = duration_ms, .count = count };
	struct pl_thread t = { 0 };
	struct pl_eng *e = &t.e;
	u64 go, t0, t1, until, deadline;
	bool stalled = false, late = false, stall = false;
	int err;

	t.ec = (struct pl_eng_cfg) {
		.base = buf, .base_len = span,
		.gen = { .pattern = PL_PAT_SEQ, .access = 8, .step = 8, .span = span, .passes = 1 },
		.op = PL_OP_LOAD, .width = 8, .mode = mode, .access = 8, .count = count,
		.delay_ticks = delay_ticks, .stop = &stop, .hist_buckets = hist,
		.samples = samples, .nsamples_max = nsamples < 4096 ? nsamples : 4096,
	};
	err = pl_thread_engine(&t, why, len);
	if (err)
		return err;
	go = pl_rdtsc();
	deadline = go + (warmup_ms + duration_ms + 2000) * tsc_khz;
	pl_thread_begin(&t, &p, go, tsc_khz);
	while (e->left && pl_thread_more(&t, pl_rdtsc())) {
		if (pl_rdtsc() > deadline) {
			late = true;
			break;
		}
		if (stall && !stall_at)
			pl_test_spin(go + warmup_ms * tsc_khz + tsc_khz, &stall, &stalled);
		until = pl_thread_until(&t, pl_rdtsc());
		if (stall)
			pl_test_spin(go + warmup_ms * tsc_khz + tsc_khz, &stall, &stalled);
		t0 = pl_rdtsc();
		pl_eng_run(e, until);
		t1 = pl_rdtsc();
		pl_thread_segment(&t, t0, t1);
		/* the first segment ended inside the warm-up: off the CPU across its end */
		stall = !stalled && t.warm_until && t1 < t.warm_until;
	}
	out[0] = stalled;
	out[1] = !late;
	out[2] = e->st.ops;
	out[3] = e->st.bytes;
	out[4] = e->st.ticks;
	out[5] = t.segments;
	out[6] = e->hist.n;
	out[7] = e->nsamples;
	return 0;
}

/*
 * A worker that got no CPU for its whole window: the worker loop as
 * worker_fn and pl_worker_loop run it, with the real engine and clock, its
 * common start duration_ms + 1 ms in the past.  op PL_OP_LOAD: 8-byte
 * loads over buf[0, span) in order, mode bandwidth (0) or latency (1); op
 * PL_OP_CHASE: a chain over span's lines (place.c's per-thread slice of
 * one worker), chase_write cw, batches of 16 hops, taken down after.  out:
 * ops, segments, lat_n, nsamples; 0, or -errno and why.
 */
int pl_test_late(char *buf, u64 span, int op, int mode, int cw, u64 duration_ms, u64 tsc_khz, u64 *out,
		 char *why, size_t len)
{
	static u64 hist[PL_HIST_NB], samples[64];
	static int stop;
	struct pl_params p = { .segment_ms = 1, .duration_ms = duration_ms };
	struct pl_place in = { .target_size = span, .pattern = PL_PAT_RAND, .access = PL_LINE,
			       .passes = 1, .seed = 3, .per_thread = 1, .n = 1 };
	struct pl_thread t = { 0 };
	struct pl_region reg;
	struct pl_eng *e = &t.e;
	u64 pos = 0, laid, *save = NULL;
	int err;

	t.ec = (struct pl_eng_cfg) {
		.base = buf, .base_len = span,
		.gen = { .pattern = PL_PAT_SEQ, .access = 8, .step = 8, .span = span, .passes = 1 },
		.op = PL_OP_LOAD, .width = 8, .mode = mode, .access = 8, .stop = &stop, .hist_buckets = hist,
		.samples = samples, .nsamples_max = 64,
	};
	if (op == PL_OP_CHASE) {
		err = pl_place_worker(&in, &reg, why, len);
		if (err)
			return err;
		t.ec.gen = reg.g;
		t.ec.op = PL_OP_CHASE;
		t.ec.mode = PL_MODE_LAT;
		t.ec.access = PL_LINE;
		t.ec.chase_batch = 16;
		t.ec.chase_write = cw;
		t.ec.chase_seed = 3;
	}
	err = pl_thread_engine(&t, why, len);
	if (err)
		return err;
	if (op == PL_OP_CHASE) {
		save = malloc(pl_chase_lines(e) * sizeof(u64));
		if (!save) {
			snprintf(why, len, "chase: no memory");
			return -ENOMEM;
		}
		while (!pl_chase_build(e, save, &pos, 1000))
			;
	}
	pl_thread_begin(&t, &p, pl_rdtsc() - (duration_ms + 1) * tsc_khz, tsc_khz);
	while (e->left && pl_thread_more(&t, pl_rdtsc())) {
		u64 until = pl_thread_until(&t, pl_rdtsc()), t0 = pl_rdtsc();

		pl_eng_run(e, until);
		pl_thread_segment(&t, t0, pl_rdtsc());
	}
	out[0] = e->st.ops;
	out[1] = t.segments;
	out[2] = e->hist.n;
	out[3] = e->nsamples;
	if (save) {
		laid = pos;
		pos = 0;
		while (!pl_chase_restore(e, save, laid, &pos, 1000))
			;
		free(save);
	}
	return 0;
}

/* fences the bandwidth loop issues over n accesses of access bytes, one per fi bytes */
u64 pl_test_fences(u64 access, u64 fi, u64 n)
{
	u64 acc = 0, fences = 0, k;

	for (k = 0; k < n; k++)
		fences += pl_fence_due(&acc, access, fi);
	return fences;
}

/* ---- DRAM over several nodes (tier.c) ---- */

/*
 * The load parameters judged: 0 and "NODES WEIGHTS STRIPE" in out, or
 * -errno and the reason.
 */
int pl_test_tier_parse(const char *nodes, const char *weights, long node, char *out, size_t len)
{
	struct pl_tier t;
	struct pl_buf b = { .p = out, .cap = len };
	int err = pl_tier_parse(&t, nodes, weights, node, out, len);

	if (err)
		return err;
	pl_tier_out_nodes(&b, &t);
	pl_out(&b, " ");
	pl_tier_out_weights(&b, &t);
	pl_out(&b, " %u", t.stripe);
	return 0;
}

/* the node of each of units units (their index in the list) and the units of each node */
int pl_test_tier_layout(const char *nodes, const char *weights, u64 units, unsigned int *idx, u64 *per_node)
{
	char why[PL_WHY_LEN];
	struct pl_tier t;
	unsigned int i;
	u64 u;

	if (pl_tier_parse(&t, nodes, weights, -1, why, sizeof(why)))
		return -EINVAL;
	for (u = 0; u < units; u++)
		idx[u] = pl_tier_index(&t, u);
	for (i = 0; i < t.n; i++)
		per_node[i] = pl_tier_units(&t, i, units);
	return 0;
}

/*
 * A placement found as n ranges (len[i] bytes on node[i], in order from
 * byte 0) judged for the tier at unit bytes: 0 or -ENOMEM and the reason in
 * why; the bytes per node in bytes.
 */
int pl_test_tally(const char *nodes, const char *weights, u64 unit, const u64 *len, const int *node,
		  unsigned int n, char *why, size_t wlen, char *bytes, size_t blen)
{
	struct pl_buf b = { .p = bytes, .cap = blen };
	struct pl_tier_tally y;
	struct pl_tier t;
	unsigned int i;
	int err;

	if (pl_tier_parse(&t, nodes, weights, -1, why, wlen))
		return -EINVAL;
	pl_tally_init(&y, &t, unit);
	for (i = 0; i < n; i++)
		pl_tally_add(&y, len[i], node[i]);
	err = pl_tally_judge(&y, why, wlen);
	pl_tally_out(&b, &y);
	return err;
}

/*
 * The store data of a run's n threads as the module and the runner set them
 * up (pl_thread_setup from the parameters, then the engine): op store,
 * 8-byte accesses, placement per-thread, seq, count accesses each, seed as
 * given, on buf of size bytes (zeroed by the caller).  Thread i's access k
 * writes the 8-byte word at bases[i] + 8 k.  0, or -errno and why.
 */
int pl_test_thread_data(u64 seed, unsigned int n, u64 count, u32 features, char *buf, u64 size,
			u64 *bases, char *why, size_t len)
{
	static int stop;
	struct pl_facts f = { .known = PL_FACT_CPU, .features = features };
	struct pl_setup s = { .f = &f, .target = buf, .target_size = size, .n = n, .width = 8,
			      .stop = &stop, .probe_stop = &stop };
	struct pl_params p;
	struct pl_thread t;
	unsigned int i;
	int err;

	pl_params_defaults(&p);
	p.ops[0] = PL_OP_STORE;
	p.threads = n;
	p.access_size = 8;
	p.pattern = PL_PAT_SEQ;
	p.placement = PL_PLACE_THREAD;
	p.count = count;
	p.seed = seed;
	s.p = &p;
	for (i = 0; i < n; i++) {
		memset(&t, 0, sizeof(t));
		err = pl_thread_setup(&t, &s, i, i, why, len);
		if (!err)
			err = pl_thread_engine(&t, why, len);
		if (err)
			return err;
		bases[i] = t.ec.base - buf;
		while (t.e.left)
			pl_eng_run(&t.e, ~0ULL);
	}
	return 0;
}

/* ---- the engine's ceilings kept for the runs after (ceil.c) ---- */

#define PL_TEST_CEIL_THREADS	4

/*
 * runs runs of n (at most 4) bandwidth threads, op load, 64-byte seq
 * accesses on CPUs 0..n-1, through one ceiling cache (empty at first) as
 * both backends keep it: pl_ceil_reuse; thread j of run i that reused
 * nothing "measures" its ceiling, ceil[i * n + j] bytes in 10^6 ticks
 * (pl_eng_ceiling's result), and each "runs" bw[i * n + j] bytes in 10^6
 * timed ticks; then the run's result lines (resultfmt.c, 10^6 ticks a
 * millisecond: the bytes in 10^6 ticks are the MB/s x 1000 in the lines)
 * are appended to line, and pl_ceil_store.  0, or -errno and why.
 */
int pl_test_ceil(unsigned int n, unsigned int runs, const u64 *ceil, const u64 *bw, char *line,
		 size_t len, char *why, size_t wlen)
{
	static char buf[PL_TEST_CEIL_THREADS << 16] __attribute__((aligned(4096)));
	static struct pl_thread t[PL_TEST_CEIL_THREADS];
	static struct pl_ceil_cache cache;
	static u64 buckets[PL_HIST_NB];
	static int stop;
	struct pl_facts f = { .known = PL_FACT_CPU };
	struct pl_setup s = { .f = &f, .target = buf, .target_size = sizeof(buf), .n = n, .width = 8,
			      .stop = &stop, .probe_stop = &stop };
	struct pl_threads ts = { (char *)t, sizeof(t[0]), n };
	struct pl_buf b = { .p = line, .cap = len }, h = { .cap = 0 };
	const u64 ticks = 1000000;
	struct pl_scalars all;
	struct pl_report r;
	struct pl_params p;
	unsigned int i, j;
	int err;

	if (!n || n > PL_TEST_CEIL_THREADS) {
		snprintf(why, wlen, "ceil: 1 to %d threads", PL_TEST_CEIL_THREADS);
		return -EINVAL;
	}
	pl_params_defaults(&p);
	p.mode = PL_MODE_BW;
	p.ops[0] = PL_OP_LOAD;
	p.threads = n;
	p.access_size = 64;
	p.pattern = PL_PAT_SEQ;
	p.placement = PL_PLACE_THREAD;
	s.p = &p;
	pl_ceil_clear(&cache);
	line[0] = 0;
	for (i = 0; i < runs; i++) {
		for (j = 0; j < n; j++) {
			memset(&t[j], 0, sizeof(t[j]));
			err = pl_thread_setup(&t[j], &s, j, j, why, wlen);
			if (!err)
				err = pl_thread_engine(&t[j], why, wlen);
			if (err)
				return err;
		}
		pl_ceil_reuse(&cache, &ts, p.prefetch, 0);
		for (j = 0; j < n; j++) {
			struct pl_eng *e = &t[j].e;

			if (!t[j].ceil_reused) {
				e->ceil_bytes = ceil[i * n + j];
				e->ceil_ticks = ticks;
				e->ceil_loop = e->loop_name;
			}
			e->st.bytes = bw[i * n + j];
			e->st.ticks = ticks;
			e->st.ops = bw[i * n + j] / 64;
			t[j].segments = 1;
			t[j].first_tsc = ticks;
			t[j].last_tsc = 2 * ticks;
		}
		pl_report_begin(&r, buckets, ticks, 8);
		for (j = 0; j < n; j++)
			pl_report_thread(&b, &h, &r, &t[j]);
		pl_report_all(&b, &h, &r, PL_MODE_BW, &all);
		pl_ceil_store(&cache, &ts, p.prefetch, 0);
	}
	return 0;
}
